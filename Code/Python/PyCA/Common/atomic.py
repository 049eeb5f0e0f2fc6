"""File safety for PyCA: the staged (atomic) write, the verification of what
was written, and the one check of an image file before it is read.

Used by PyCA.Common.PyCAIO (every save and every SimpleITK load), the apps
(PyCA.Apps: result files, JSON records, summary pictures, ``pyca-apply``)
and PyCA.Display (figures). This module imports only the standard library,
NumPy and (when first needed) SimpleITK, so any PyCA module can use it.

Staged writes (:func:`atomic_save`, :func:`atomic_json`)
    The data go to a temporary file beside the target
    (``name.tmp-<pid>-<n>.<ext>``: same folder, same extension, so a writer
    that picks the format by extension still does), which is verified
    (:func:`verify_written`), flushed to disk (fsync) and renamed over the
    target (``os.replace``); the folder is flushed after the rename. A
    failing save removes its temporaries and leaves an earlier file intact;
    a process killed mid-save can leave a ``*.tmp-<pid>-<n>.*`` file, never
    a half-written target. Formats with a separate data file (``.mhd`` +
    ``.raw``/``.zraw``, ``.nhdr``) write both as temporaries, point the
    header at the final data name, then rename the data file and then the
    header.

Verification (:func:`verify_written`)
    The size a file's header implies (NIfTI, MetaImage, NRRD, ``.npy``), a
    compressed stream inflated to its end (``.nii.gz``, compressed
    MetaImage and NRRD), a zip archive's checksums (``.npz``), a PNG's
    closing chunk, a JSON text that parses; other formats: a file that is
    not empty. It sees a short write that a library reported only on its
    standard error (ITK's NIfTI writer on a full disk) or not at all.

Checks before reading (:func:`check_readable`, :func:`check_complete`)
    The checks PyCA.Common.LoadImage (LoadITKImage, LoadITKField) applies to
    a file before SimpleITK reads it, in that order: a missing, folder,
    unreadable or empty file; a MetaImage header with an absurd NDims; a
    ``.mhd`` whose data file is of another save; a NIfTI header whose voxel
    sizes or spatial transform are not finite; a header SimpleITK cannot
    read; content that is not what the extension says; sizes, spacings and
    origins a grid cannot hold; and (just before the voxels are read) a
    NIfTI file shorter than its header says. Each raises the OSError
    LoadImage raises, naming the file and what is wrong.

Errors name the caller (``who``) and the file: ``"<who>: cannot read
'<file>': <what>"`` and ``"<who>: cannot write '<file>': <cause>"`` (errno
ENOSPC, EFBIG or EIO for a short write).
"""
import errno
import gzip
import itertools
import math
import os
import re
import stat
import struct
import threading
import zipfile
import zlib

import numpy as np

__all__ = ['atomic_save', 'atomic_json', 'verify_written',
           'check_readable', 'check_complete', 'check_file',
           'read_nifti_header', 'nifti_geometry',
           'read_error', 'itk_reason', 'require_simpleitk', 'split_ext']


# ---------------------------------------------------------------------------
# Errors, names and SimpleITK

_COMPRESSED_SUFFIXES = ('.gz', '.bz2', '.xz', '.zst', '.z')
_HEADER_EXTS = ('.mhd', '.nhdr')  # text headers that name a separate data file


def split_ext(base):
    """A file name split into stem and extension, a compression suffix kept
    with the extension before it.

    Args:
        base (str): a file name (no folder needed).

    Returns:
        tuple of 2 str: ``('name', '.nii.gz')`` for ``'name.nii.gz'``,
        ``('name', '.mha')`` for ``'name.mha'``.
    """
    stem, ext = os.path.splitext(base)
    if ext.lower() in _COMPRESSED_SUFFIXES:
        stem2, ext2 = os.path.splitext(stem)
        if ext2:
            return stem2, ext2 + ext
    return stem, ext


def read_error(who, path, what, cause=None):
    """The OSError of a file that cannot be read (returned, not raised).

    Args:
        who (str): the function or program the message starts with.
        path (str): the file.
        what (str): what is wrong with it.
        cause (BaseException, optional): set as the error's ``__cause__``.

    Returns:
        OSError: with the message ``"<who>: cannot read '<path>': <what>"``.
    """
    e = OSError("%s: cannot read '%s': %s" % (who, path, what))
    if cause is not None:
        e.__cause__ = cause
    return e


def itk_reason(exc):
    """The useful part of a SimpleITK/ITK exception text, on one line.

    Args:
        exc (BaseException): the exception SimpleITK raised.

    Returns:
        str: the reason (at most 600 characters).
    """
    text = str(exc)
    m = None
    for m in re.finditer(r'(?:sitk::ERROR|ITK ERROR|itk::ERROR):\s*', text):
        pass
    reason = text[m.end():] if m else text
    reason = re.sub(r'^\w+\(0x[0-9a-fA-F]+\):\s*', '', reason)
    reason = ' '.join(reason.split())
    if 'Unable to determine ImageIO reader' in reason:
        return 'not an image file of a known format (no reader recognises its content)'
    return reason[:600] or type(exc).__name__


def require_simpleitk(who):
    """The SimpleITK module, imported on first use.

    Args:
        who (str): the function or program the message starts with.

    Returns:
        types.ModuleType: SimpleITK.

    Raises:
        ImportError: SimpleITK is not installed (the message says how to
            install it).
    """
    try:
        import SimpleITK
    except ImportError as e:
        raise ImportError("%s needs the SimpleITK package, which is not installed "
                          "(pip install SimpleITK; ./run installs it)" % who, name='SimpleITK') from e
    return SimpleITK


# ---------------------------------------------------------------------------
# Header parsing shared by the write verification and the read checks

_MET_BYTES = {'MET_UCHAR': 1, 'MET_CHAR': 1, 'MET_USHORT': 2, 'MET_SHORT': 2, 'MET_UINT': 4,
              'MET_INT': 4, 'MET_FLOAT': 4, 'MET_DOUBLE': 8, 'MET_ULONG_LONG': 8, 'MET_LONG_LONG': 8}

_NRRD_BYTES = {'float': 4, 'double': 8, 'uchar': 1, 'unsigned char': 1, 'uint8': 1, 'uint8_t': 1,
               'signed char': 1, 'char': 1, 'int8': 1, 'int8_t': 1, 'short': 2, 'ushort': 2,
               'unsigned short': 2, 'int16': 2, 'uint16': 2, 'int16_t': 2, 'uint16_t': 2, 'int': 4,
               'uint': 4, 'unsigned int': 4, 'int32': 4, 'uint32': 4, 'int32_t': 4, 'uint32_t': 4,
               'longlong': 8, 'ulonglong': 8, 'int64': 8, 'uint64': 8, 'int64_t': 8, 'uint64_t': 8}


def _count_bytes(path, offset, decompress=None):
    """(bytes of path from offset, stream complete) read raw, or through a
    zlib ('zlib') or gzip ('gzip') decompressor to the stream's end."""
    if decompress is None:
        return os.path.getsize(path) - offset, True
    d = zlib.decompressobj(zlib.MAX_WBITS | (16 if decompress == 'gzip' else 0))
    total = 0
    with open(path, 'rb') as f:
        f.seek(offset)
        while True:
            chunk = f.read(1 << 22)
            if not chunk:
                break
            try:
                while chunk:
                    total += len(d.decompress(chunk, 1 << 26))
                    chunk = d.unconsumed_tail
                    if d.eof and decompress == 'gzip' and d.unused_data:
                        chunk = d.unused_data  # another gzip member
                        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
            except zlib.error:
                return total, False
    total += len(d.flush())
    return total, d.eof


def _header_fields(path, limit=65536, stop=None, sep=b'='):
    """(fields dict with lower-case keys, byte offset after the header) of a
    MetaImage (sep '=', up to the ElementDataFile line) or NRRD (sep ':',
    up to the first empty line) text header."""
    with open(path, 'rb') as f:
        head = f.read(limit)
    fields, pos = {}, 0
    while pos < len(head):
        nl = head.find(b'\n', pos)
        if nl < 0:
            return fields, None  # the header itself is cut short
        line = head[pos:nl].rstrip(b'\r')
        pos = nl + 1
        if sep == b':' and not line.strip():
            return fields, pos
        key, s, val = line.partition(b':=' if b':=' in line and sep == b':' else sep)
        if s:
            k = key.strip().lower().decode('latin-1')
            fields[k] = val.strip().decode('latin-1')
            if stop is not None and k == stop:
                return fields, pos
    return fields, None


def _product(text):
    n = 1
    for v in text.split():
        n *= int(float(v))
    return n


def _nifti_layout(hdr):
    """(vox_offset + data bytes, single_file) from a NIfTI-1/2 header, or None."""
    for endian in '<>':
        if len(hdr) >= 348 and struct.unpack(endian + 'i', hdr[:4])[0] == 348:
            magic = hdr[344:348]
            if magic not in (b'n+1\0', b'ni1\0'):
                return None
            dims = struct.unpack(endian + '8h', hdr[40:56])
            bitpix = struct.unpack(endian + 'h', hdr[72:74])[0]
            offset = int(struct.unpack(endian + 'f', hdr[108:112])[0])
            single = magic == b'n+1\0'
        elif len(hdr) >= 540 and struct.unpack(endian + 'i', hdr[:4])[0] == 540:
            magic = hdr[4:8]
            if magic not in (b'n+2\0', b'ni2\0'):
                return None
            bitpix = struct.unpack(endian + 'h', hdr[14:16])[0]
            dims = struct.unpack(endian + '8q', hdr[16:80])
            offset = struct.unpack(endian + 'q', hdr[168:176])[0]
            single = magic == b'n+2\0'
        else:
            continue
        nd = dims[0]
        if not 1 <= nd <= 7 or bitpix <= 0 or any(d < 0 for d in dims[1:nd + 1]):
            return None
        n = 1
        for d in dims[1:nd + 1]:
            n *= max(d, 1)
        return (offset if single else 0) + n * bitpix // 8, single
    return None


def _gzip_length(fname):
    """Decompressed length of a gzip file (all members), or None when the
    stream is cut short (_count_bytes)."""
    try:
        total, complete = _count_bytes(fname, 0, 'gzip')
    except OSError:
        return None
    return total if complete else None


def read_nifti_header(path, who):
    """The first 540 bytes of a ``.nii`` / ``.nii.gz`` file (room for a
    NIfTI-1 or NIfTI-2 header), decompressed.

    Args:
        path (str): the file.
        who (str): the function or program the message starts with.

    Returns:
        bytes or None: the header bytes (fewer for a short file), None for a
        file whose name does not end in .nii or .nii.gz.

    Raises:
        OSError: a ``.nii.gz`` whose gzip stream cannot be read to 540 bytes
            ("corrupt compressed NIfTI header").
    """
    low = path.lower()
    if not (low.endswith('.nii.gz') or low.endswith('.nii')):
        return None
    try:
        with (gzip.open(path, 'rb') if low.endswith('.gz') else open(path, 'rb')) as f:
            return f.read(540)
    except (OSError, EOFError, zlib.error) as e:
        raise read_error(who, path, 'corrupt compressed NIfTI header (%s)' % e, e) from None


def nifti_geometry(hdr):
    """The geometry fields of a NIfTI-1 or NIfTI-2 header.

    Args:
        hdr (bytes): the header (:func:`read_nifti_header`).

    Returns:
        dict or None: ``dim0``, ``pixdim`` (8 numbers), ``qcode``,
        ``scode``, ``quat`` (quatern b, c, d, qoffset x, y, z) and ``srow``
        (12 numbers); None for bytes that are not such a header.
    """
    for endian in '<>':
        if len(hdr) >= 348 and struct.unpack(endian + 'i', hdr[:4])[0] == 348:
            f, dim0 = 'f', struct.unpack(endian + 'h', hdr[40:42])[0]
            pix, codes, quat, srow = 76, struct.unpack(endian + '2h', hdr[252:256]), 256, 280
        elif len(hdr) >= 540 and struct.unpack(endian + 'i', hdr[:4])[0] == 540:
            f, dim0 = 'd', struct.unpack(endian + 'q', hdr[16:24])[0]
            pix, codes, quat, srow = 104, struct.unpack(endian + '2i', hdr[344:352]), 352, 400
        else:
            continue
        w = struct.calcsize(f)

        def floats(off, n):
            return struct.unpack(endian + '%d%s' % (n, f), hdr[off:off + n * w])
        return {'dim0': dim0, 'pixdim': floats(pix, 8), 'qcode': codes[0], 'scode': codes[1],
                'quat': floats(quat, 6), 'srow': floats(srow, 12)}
    return None


# ---------------------------------------------------------------------------
# Checks before reading

def check_file(path, who):
    """Raises the OSError a reader should for a missing, folder, unreadable
    or empty file (the first check of every PyCA loader).

    Args:
        path (str): the file.
        who (str): the function or program the message starts with.

    Raises:
        FileNotFoundError: no such file.
        IsADirectoryError: a folder.
        OSError: a file that cannot be opened, or is empty (0 bytes).
    """
    if not os.path.lexists(path):
        raise FileNotFoundError(errno.ENOENT, "%s: no such file" % who, path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "%s: is a directory, not an image file" % who, path)
    try:
        with open(path, 'rb') as f:
            empty = not f.read(1)
    except OSError as e:
        raise type(e)(e.errno, "%s: cannot open: %s" % (who, e.strerror), path) from None
    if empty:
        raise OSError("%s: '%s' is empty (0 bytes)" % (who, path))


def _check_metaimage_header(fname, who):
    """A MetaImage header (.mha/.mhd) whose NDims is not 1..16 is refused
    before SimpleITK reads it (ITK's MetaIO crashes on absurd values)."""
    if not fname.lower().endswith(('.mha', '.mhd')):
        return
    try:
        with open(fname, 'rb') as f:
            head = f.read(8192)
    except OSError:
        return  # the reader reports it
    for line in head.split(b'\n'):
        key, sep, val = line.partition(b'=')
        if sep and key.strip().lower() == b'ndims':
            try:
                n = float(val.strip().split()[0])
            except (ValueError, IndexError):
                raise read_error(who, fname, 'a MetaImage header with NDims = %r'
                                 % val.strip()[:40].decode('latin-1')) from None
            if not (n == int(n) and 1 <= n <= 16):
                raise read_error(who, fname, 'a MetaImage header with NDims = %s (1..16 expected)'
                                 % val.strip()[:40].decode('latin-1'))
            return
        if key.strip().lower() == b'elementdatafile':
            return


def _check_metaimage_pair(fname, who):
    """A .mhd header and its data file must be of one save: the size of the
    data file is the header's CompressedDataSize (compressed) or DimSize x
    components x element size (raw). A save of a pair renames the data file
    and then the header, so a process killed between the two renames leaves
    the new data beside the old header; ITK would read that mix without a
    word (garbage voxels), so it is refused here."""
    if not fname.lower().endswith('.mhd'):
        return
    try:
        with open(fname, 'rb') as f:
            head = f.read(65536)
    except OSError:
        return
    keys = {}
    for line in head.split(b'\n'):
        key, sep, val = line.partition(b'=')
        if sep:
            k = key.strip().lower().decode('latin-1')
            keys[k] = val.strip().decode('latin-1')
            if k == 'elementdatafile':
                break
    data = keys.get('elementdatafile', '')
    if not data or data.upper() in ('LOCAL', 'LIST') or ' ' in data or '%' in data:
        return
    path = data if os.path.isabs(data) else os.path.join(os.path.dirname(os.path.abspath(fname)), data)
    try:
        have = os.path.getsize(path)
    except OSError:
        return  # the reader reports a missing data file
    try:
        if keys.get('compresseddata', 'false').lower() == 'true':
            if 'compresseddatasize' not in keys:
                return
            want = int(keys['compresseddatasize'])
        else:
            if int(float(keys.get('headersize', '0'))) != 0 or keys.get('elementtype') not in _MET_BYTES:
                return
            want = _MET_BYTES[keys['elementtype']] * int(float(keys.get('elementnumberofchannels', '1')))
            for v in keys.get('dimsize', '').split():
                want *= int(float(v))
    except ValueError:
        return  # _check_metaimage_header / the reader report malformed numbers
    if want != have:
        raise read_error(who, fname, "the data file '%s' has %d bytes, the header expects %d (header and "
                         "data of different saves: an interrupted save?)" % (data, have, want))


def _check_nifti_transform(fname, who, hdr):
    """A NIfTI header whose voxel sizes or spatial transform (the qform's
    quaternion and offset when qform_code > 0, the sform's rows when
    sform_code > 0) hold NaN or infinity is refused before ITK reads it:
    ITK's NIfTI reader spins without end on such a header (found by the
    fuzzer: one infinite sform entry)."""
    g = nifti_geometry(hdr) if hdr is not None else None
    if g is None:
        return
    nd = min(max(int(g['dim0']), 0), 7)
    bad = [('pixdim', v) for v in g['pixdim'][:nd + 1] if not math.isfinite(v)]
    if g['qcode'] > 0:
        bad += [('qform', v) for v in g['quat'] if not math.isfinite(v)]
    if g['scode'] > 0:
        bad += [('sform', v) for v in g['srow'] if not math.isfinite(v)]
    if bad:
        raise read_error(who, fname, 'the NIfTI header holds %r in its %s (voxel sizes and the '
                         'spatial transform must be finite)' % (bad[0][1], bad[0][0]))


# The ImageIO a known extension promises: a file whose content another reader
# recognises (a PNG named .nii) is refused rather than read as something else.
_EXPECTED_IO = {'.nii': 'NiftiImageIO', '.nii.gz': 'NiftiImageIO', '.hdr': 'NiftiImageIO',
                '.img': 'NiftiImageIO', '.img.gz': 'NiftiImageIO', '.mha': 'MetaImageIO',
                '.mhd': 'MetaImageIO', '.nrrd': 'NrrdImageIO', '.nhdr': 'NrrdImageIO',
                '.vtk': 'VTKImageIO', '.tif': 'TIFFImageIO', '.tiff': 'TIFFImageIO',
                '.jpg': 'JPEGImageIO', '.jpeg': 'JPEGImageIO', '.bmp': 'BMPImageIO',
                '.gipl': 'GiplImageIO', '.gipl.gz': 'GiplImageIO'}


def _check_io_matches_extension(reader, fname, who):
    want = _EXPECTED_IO.get(split_ext(os.path.basename(fname))[1].lower())
    if not want:
        return
    try:
        got = reader.GetImageIOFromFileName(fname)  # the reader that recognises the content
    except Exception:
        return
    if want and got and got != want:
        raise read_error(who, fname, 'its content is not what the extension says (read by %s, '
                         'expected %s)' % (got, want))


def _check_header_numbers(reader, fname, who):
    """Sizes, spacings and origins a grid can hold (int32 sizes, finite
    float32 spacings and origins), else a clear error naming the file."""
    f32 = float(np.finfo(np.float32).max)
    size = reader.GetSize()
    if any(not (0 <= int(s) < 2 ** 31) for s in size):
        raise read_error(who, fname, 'an image size %s out of range' % (tuple(size),))
    for what, vals in (('a spacing', reader.GetSpacing()), ('an origin', reader.GetOrigin())):
        if any(not (np.isfinite(v) and abs(v) <= f32) for v in vals):
            raise read_error(who, fname, '%s %s that is not a finite float32' % (what, tuple(vals)))


def check_readable(path, who):
    """The checks of an image file before SimpleITK reads it: the very
    checks (same order, same exceptions, same messages) that
    PyCA.Common.LoadImage applies to NIfTI, MetaImage, NRRD and the other
    SimpleITK formats. It reads the header (``ReadImageInformation``), not
    the voxels; call :func:`check_complete` with the returned NIfTI header
    just before reading them (``reader.Execute()``).

    Args:
        path (str): the file.
        who (str): the function or program the messages start with.

    Returns:
        tuple: ``(reader, nifti_header)``: a ``SimpleITK.ImageFileReader``
        for ``path`` with the image information read (size, spacing,
        origin, pixel type, components), and the file's NIfTI header bytes
        (None for other formats).

    Raises:
        ImportError: SimpleITK is not installed.
        FileNotFoundError: no such file.
        IsADirectoryError: a folder.
        OSError: an unreadable or empty file, a MetaImage header with an
            absurd NDims or a data file of another save, a NIfTI header
            with non-finite voxel sizes or transform, a header SimpleITK
            cannot read, content that is not what the extension says, or
            a size, spacing or origin out of range; the message is
            ``"<who>: cannot read '<path>': <what>"``.
    """
    sitk = require_simpleitk(who)
    check_file(path, who)
    _check_metaimage_header(path, who)
    _check_metaimage_pair(path, who)
    _check_nifti_transform(path, who, read_nifti_header(path, who))
    reader = sitk.ImageFileReader()
    reader.SetFileName(path)
    try:
        reader.ReadImageInformation()
    except RuntimeError as e:
        raise read_error(who, path, itk_reason(e), e) from None
    _check_io_matches_extension(reader, path, who)
    _check_header_numbers(reader, path, who)
    return reader, read_nifti_header(path, who)


def check_complete(path, who, header):
    """A single-file NIfTI (``.nii``, ``.nii.gz``) must hold all the data its
    header names: ITK reads a truncated file without a word (the missing
    voxels come out as zeros or garbage).

    Args:
        path (str): the file.
        who (str): the function or program the message starts with.
        header (bytes or None): its NIfTI header (:func:`check_readable`,
            :func:`read_nifti_header`); None: nothing to check.

    Raises:
        OSError: a gzip stream that ends inside the compressed data, or
            fewer data bytes than the header names.
    """
    if header is None:
        return
    gz = path.lower().endswith('.gz')
    layout = _nifti_layout(header)
    if layout is None or not layout[1]:
        return  # ITK judges (or .hdr/.img pairs: ITK checks the .img)
    want = layout[0]
    if not gz:
        have = os.path.getsize(path)
    else:
        with open(path, 'rb') as f:
            f.seek(-4, os.SEEK_END)
            isize = struct.unpack('<I', f.read(4))[0]
        if isize == want % 2 ** 32:
            return  # ISIZE (the length mod 2^32) as expected: a cheap, usual pass
        have = _gzip_length(path)  # cut files, extra bytes, multi-member streams: count
        if have is None:
            raise read_error(who, path, 'truncated gzip stream (the file ends inside the '
                             'compressed data; %d bytes expected)' % want)
    if have < want:
        raise read_error(who, path, 'truncated NIfTI file: %d bytes of data expected, %d present'
                         % (want, have))


# ---------------------------------------------------------------------------
# Verification of what was written

def _write_cause(folder, want=None, have=None):
    """Why a file in folder may have come out short: the file size limit
    (RLIMIT_FSIZE), a full file system, or (neither visible) a short write."""
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and (want is None or want > limit or
                                                (have is not None and have >= limit)):
            return errno.EFBIG, 'File too large (the file size limit, RLIMIT_FSIZE, is %d bytes)' % limit
    except (ImportError, OSError, ValueError):
        pass
    try:
        st = os.statvfs(folder)
        free = st.f_bavail * st.f_frsize
        missing = (want - have) if (want is not None and have is not None) else 0
        if free <= max(missing, 4 * st.f_frsize, 1 << 16):
            return errno.ENOSPC, 'No space left on device (%d bytes free)' % free
    except (AttributeError, OSError):
        pass
    return errno.EIO, 'short write'


def _incomplete(path, ext, folder):
    """None when the file just written at path (of extension ext) is
    complete, else (what is wrong, bytes expected or None, bytes present or
    None); see verify_written."""
    low = ext.lower()
    size = os.path.getsize(path)
    if size == 0:
        return 'the file is empty', None, 0
    try:
        if low in ('.nii', '.nii.gz'):
            gz = low.endswith('.gz')
            try:
                with (gzip.open(path, 'rb') if gz else open(path, 'rb')) as f:
                    hdr = f.read(540)
            except (OSError, EOFError, zlib.error):
                return 'the gzip stream is cut short inside the NIfTI header', None, None
            layout = _nifti_layout(hdr)
            if layout is None:
                return 'no complete NIfTI header', None, len(hdr)
            want = layout[0]
            have, ok = _count_bytes(path, 0, 'gzip' if gz else None)
            if not ok:
                return ('the gzip stream ends before its end (%d of %d bytes decompress)'
                        % (have, want)), want, have
            if have < want:
                return '%d of %d bytes written' % (have, want), want, have
        elif low in ('.mha', '.mhd'):
            fields, start = _header_fields(path, stop='elementdatafile')
            if start is None or 'elementdatafile' not in fields:
                return 'the MetaImage header is cut short', None, size
            data = fields['elementdatafile']
            n = _product(fields.get('dimsize', '')) * int(float(fields.get('elementnumberofchannels', '1')))
            raw = n * _MET_BYTES.get(fields.get('elementtype'), 0)
            if data.upper() == 'LOCAL':
                dpath, off = path, start
            else:
                dpath, off = os.path.join(folder, data), 0
                if not os.path.isfile(dpath):
                    return "the data file '%s' is missing" % data, raw, 0
            compressed = fields.get('compresseddata', 'false').lower() == 'true'
            have, ok = _count_bytes(dpath, off)
            if compressed:
                want = int(fields.get('compresseddatasize', have))
                if have < want:
                    return '%d of %d compressed bytes written' % (have, want), want, have
                have, ok = _count_bytes(dpath, off, 'zlib')
                if not ok or (raw and have != raw):
                    return ('the compressed data end early (%d of %d bytes decompress)'
                            % (have, raw)), raw, have
            elif raw and have < raw:
                return '%d of %d bytes of data written' % (have, raw), raw, have
        elif low in ('.nrrd', '.nhdr'):
            fields, start = _header_fields(path, sep=b':')
            if start is None and low == '.nrrd':
                return 'the NRRD header is cut short', None, size
            typ = fields.get('type', '').lower()
            want = _product(fields.get('sizes', '')) * _NRRD_BYTES.get(typ, 0)
            data = fields.get('data file') or fields.get('datafile')
            if data:
                dpath, off = os.path.join(folder, data), 0
                if not os.path.isfile(dpath):
                    return "the data file '%s' is missing" % data, want, 0
            else:
                dpath, off = path, start
            enc = fields.get('encoding', 'raw').lower()
            if enc in ('gzip', 'gz'):
                have, ok = _count_bytes(dpath, off, 'gzip')
                if not ok:
                    return ('the gzip stream ends before its end (%d of %d bytes decompress)'
                            % (have, want)), want, have
            else:
                have, ok = _count_bytes(dpath, off)
                if enc != 'raw':
                    want = 0
            if want and have < want:
                return '%d of %d bytes of data written' % (have, want), want, have
        elif low == '.npy':
            with open(path, 'rb') as f:
                version = np.lib.format.read_magic(f)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(f)
                want = f.tell() + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if size < want:
                return '%d of %d bytes written' % (size, want), want, size
        elif low == '.npz':
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()
            if bad is not None:
                return "the archive member '%s' fails its checksum" % bad, None, size
        elif low == '.png':
            with open(path, 'rb') as f:
                f.seek(max(size - 12, 0))
                tail = f.read(12)
            if tail[4:8] != b'IEND':
                return 'the PNG file has no closing IEND chunk', None, size
        elif low == '.json':
            import json
            with open(path, 'rb') as f:
                json.loads(f.read().decode('utf-8'))
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, struct.error, zlib.error) as e:
        return 'the written file is not readable back (%s)' % (str(e) or type(e).__name__), None, size
    return None


def _save_error(who, fname, cause, err=None, stderr_text=''):
    """The OSError of a failed save: names the file and the cause; errno set."""
    lib = ' '.join(stderr_text.split())
    e = OSError("%s: cannot write '%s': %s%s" % (who, fname, cause,
                                                  ' (the writer said: %s)' % lib[:300] if lib else ''))
    e.errno = err  # (no strerror / filename: str(e) stays this message)
    return e


def verify_written(path, who, target=None, ext=None, stderr_text=''):
    """Checks that a file just written is complete: the size its header
    implies for NIfTI, MetaImage, NRRD and ``.npy`` (a separate data file
    included); a compressed stream read to its end with the implied length
    (``.nii.gz``, compressed MetaImage and NRRD); the zip directory and
    checksums (``.npz``); the closing chunk of a PNG; a JSON text that
    parses. Other formats: a file that is not empty.

    Args:
        path (str): the file just written.
        who (str): the function or program the message starts with.
        target (str, optional): the name the message gives (the final name
            of a staged write); default None: ``path``.
        ext (str, optional): the format's extension (``'.nii.gz'``, ...);
            default None: ``path``'s (:func:`split_ext`).
        stderr_text (str): what the writer printed on its standard error,
            added to the message; default ''.

    Raises:
        OSError: the file is incomplete: ``"<who>: cannot write '<target>':
            <cause>; the save was incomplete: <what>"``, errno ENOSPC (a
            full file system), EFBIG (the file size limit) or EIO.
    """
    if ext is None:
        ext = split_ext(os.path.basename(path))[1]
    folder = os.path.dirname(os.path.abspath(path))
    bad = _incomplete(path, ext, folder)
    if bad is not None:
        what, want, have = bad
        err, why = _write_cause(folder, want, have)
        raise _save_error(who, path if target is None else target,
                          '%s; the save was incomplete: %s' % (why, what), err, stderr_text)


# ---------------------------------------------------------------------------
# Staged (atomic) writes

_tmp_counter = itertools.count()


def _fsync_path(path, directory=False):
    flags = os.O_RDONLY | (getattr(os, 'O_DIRECTORY', 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if directory:
            return  # some platforms cannot open folders; the rename is still atomic
        raise
    try:
        # file data (and its size) before the rename; a folder's entries after it
        (os.fsync if directory else getattr(os, 'fdatasync', os.fsync))(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def _fix_header_refs(header, tmp_stem, stem):
    """Points a MetaImage/NRRD header written under a temporary name at the
    data file's final name."""
    with open(header, 'rb') as f:
        lines = f.read().split(b'\n')
    old, new = tmp_stem.encode() + b'.', stem.encode() + b'.'
    for i, line in enumerate(lines):
        key = line.split(b'=')[0].split(b':')[0].strip().lower()
        if key in (b'elementdatafile', b'data file', b'datafile') and old in line:
            lines[i] = line.replace(old, new)
    with open(header, 'wb') as f:
        f.write(b'\n'.join(lines))


class _StderrCapture(object):
    """Collects what C libraries print on file descriptor 2 while a writer
    runs (ITK's NIfTI writer reports a short write only there), so that it
    becomes part of the exception instead of a stray line, and is printed
    as usual when the save succeeds. One capture at a time (a lock taken
    without waiting): a save in another thread meanwhile prints as usual."""
    _lock = threading.Lock()

    def __init__(self):
        self.text, self._fd, self._saved = '', None, None

    def __enter__(self):
        self.text, self._fd, self._saved = '', None, None
        if not self._lock.acquire(blocking=False):
            return self
        try:
            import sys
            try:
                sys.stderr.flush()
            except Exception:
                pass
            memfd = getattr(os, 'memfd_create', None)
            # in memory where possible: the disk may be the thing that is full
            if memfd:
                self._fd = memfd('pyca-stderr')
            else:
                self._fd, name = __import__('tempfile').mkstemp()
                os.unlink(name)
            self._saved = os.dup(2)
            os.dup2(self._fd, 2)
        except OSError:
            self._release()
        return self

    def _release(self):
        try:
            if self._saved is not None:
                os.dup2(self._saved, 2)
                os.close(self._saved)
            if self._fd is not None:
                os.lseek(self._fd, 0, os.SEEK_SET)
                chunks = []
                while True:
                    b = os.read(self._fd, 1 << 16)
                    if not b:
                        break
                    chunks.append(b)
                os.close(self._fd)
                self.text = b''.join(chunks).decode('utf-8', 'replace')
        finally:
            self._fd = self._saved = None
            self._lock.release()

    def __exit__(self, *exc):
        if self._saved is not None or self._fd is not None:
            self._release()
        return False

    def replay(self):
        if self.text:
            try:
                os.write(2, self.text.encode('utf-8', 'replace'))
            except OSError:
                pass


class _NoCapture(object):
    text = ''

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_no_capture = _NoCapture()


def atomic_save(path, write, who, itk_errors=True):
    """Writes a file atomically: runs ``write(tmp)`` for a temporary name
    beside ``path`` (same folder and extension), verifies the result
    (:func:`verify_written`), flushes it to disk and renames it over
    ``path`` (module notes). An earlier file at ``path`` is untouched until
    the rename; a failing save leaves no temporary behind. A symbolic link
    at ``path`` is followed (its target is replaced); an existing file's
    permissions are kept.

    Args:
        path (str): the file to write (str or os.PathLike resolved by the
            caller; the extension tells ``write`` the format).
        write (callable): ``write(tmp_path)`` writes the whole file at
            ``tmp_path`` (for ``.mhd``/``.nhdr`` also the data file beside it).
        who (str): the function or program the messages start with.
        itk_errors (bool): True (default): what the writer prints on file
            descriptor 2 while it runs is captured (printed again after a
            good save, added to the message of a failed one) and its
            ``RuntimeError`` (SimpleITK) becomes an OSError; False: the
            writer's other exceptions propagate as they are.

    Raises:
        FileNotFoundError: the folder of ``path`` does not exist.
        IsADirectoryError: ``path`` is a folder.
        OSError: the write failed or came out short: ``"<who>: cannot write
            '<path>': <cause>"`` (errno ENOSPC, EFBIG or EIO for a short
            write; the writer's own errno otherwise).
    """
    fname = path
    target = os.path.realpath(fname) if os.path.islink(fname) else fname
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, "%s: the folder to save into does not exist" % who, fname)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "%s: cannot save over a directory" % who, fname)
    stem, ext = split_ext(os.path.basename(target))
    tmp_stem = '%s.tmp-%d-%d' % (stem, os.getpid(), next(_tmp_counter))
    tmp = os.path.join(folder, tmp_stem + ext)

    def ours():
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        return [n for n in names if n == tmp_stem + ext or n.startswith(tmp_stem + '.')]

    cap = _StderrCapture()
    try:
        try:
            with cap if itk_errors else _no_capture:
                write(tmp)
        except RuntimeError as e:  # SimpleITK
            if not itk_errors:
                raise
            text, err = itk_reason(e), errno.EIO
            if any(k in text for k in ('No space left', 'File too large', 'wrote only', 'only wrote')):
                err, why = _write_cause(folder)
                text = why + ' (' + text[:300] + ')'
            raise _save_error(who, fname, text, err) from e
        except OSError as e:
            if str(e).startswith(who + ':'):
                raise
            if e.errno:
                raise _save_error(who, fname, e.strerror or str(e), e.errno) from e
            err, why = _write_cause(folder)  # numpy's tofile: "N requested and M written"
            raise _save_error(who, fname, '%s (%s)' % (why, e), err) from e
        made = ours()
        if os.path.basename(tmp) not in made:
            raise _save_error(who, fname, 'the writer produced no file', errno.EIO, cap.text)
        verify_written(tmp, who, fname, ext, cap.text)
        cap.replay()
        companions = [n for n in made if n != os.path.basename(tmp)]
        if companions and ext.lower() in _HEADER_EXTS:
            _fix_header_refs(tmp, tmp_stem, stem)
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except OSError:
            mode = None
        try:
            for n in made:
                p = os.path.join(folder, n)
                if mode is not None:
                    os.chmod(p, mode)
                _fsync_path(p)
        except OSError as e:  # a file system that reports the full disk only now
            raise _save_error(who, fname, 'cannot flush it to disk: %s' % (e.strerror or e), e.errno) from e
        for n in companions:  # data first, then the header that names it
            os.replace(os.path.join(folder, n), os.path.join(folder, stem + n[len(tmp_stem):]))
        os.replace(tmp, target)
        _fsync_path(folder, directory=True)
    except BaseException:
        for n in ours():
            try:
                os.unlink(os.path.join(folder, n))
            except OSError:
                pass
        raise


def atomic_json(path, data, who, **dump_kw):
    """Writes ``json.dumps(data, **dump_kw)`` and a newline to ``path``
    atomically (:func:`atomic_save`: temporary file beside it, verified to
    parse, fsync, ``os.replace``, fsync of the folder).

    Args:
        path (str or os.PathLike): the file to write.
        data: what to write (anything ``json.dumps`` takes).
        who (str): the function or program the messages start with.
        **dump_kw: passed to ``json.dumps`` (``indent``, ``allow_nan``,
            ``sort_keys``, ...).

    Raises:
        TypeError, ValueError: ``data`` cannot be written as JSON (raised
            before any file is made).
        OSError: the write failed (see :func:`atomic_save`).
    """
    import json
    text = json.dumps(data, **dump_kw) + '\n'  # errors (NaN, types) before any file is made

    def write(tmp):
        with open(tmp, 'w') as f:
            f.write(text)
    atomic_save(os.fspath(path), write, who, itk_errors=False)
