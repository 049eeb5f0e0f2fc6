"""File IO for PyCA.Core images and fields (legacy PyCAIO, with the ITK and
PNG loaders the legacy kept in PyCACommon). Star-imported by PyCA.Common.

Formats, chosen by extension in LoadImage / SaveImage / LoadField / SaveField:

========================  ===================================================
ITK formats               SimpleITK (LoadITKImage, SaveITKImage, LoadITKField,
                          SaveITKField, ReadGrid) for ``.nii .nii.gz .mha .mhd
                          .nrrd`` and any other extension: size, spacing and
                          origin exact (float32), direction cosines kept (below)
``.npy``                  NumPy array (X, Y, Z) [or (X, Y, Z, 3) for fields];
                          no geometry (spacing 1, origin 0 unless given)
``.npz``                  NumPy archive: ``data``, ``spacing``, ``origin``
                          (and ``direction`` when the object has one)
``.png``                  2-D images only, 8- or 16-bit grey (or a matplotlib
                          colour map), no geometry
``.dcm``                  DICOM through pydicom (load only; a file or a
                          series folder)
========================  ===================================================

Conventions
-----------
* Axis order: ``Image3D.asnp()`` is indexed (x, y, z); SimpleITK arrays are
  (z, y, x) with x fastest in memory, the same layout, so a load or save is
  one straight copy.
* Pixel types on load: any real scalar type becomes float32 as by a C cast
  (integers exactly up to 2^24, then the nearest float32; float64 rounded to
  nearest, beyond the float32 range to +-inf); NIfTI scl_slope/scl_inter and
  DICOM RescaleSlope/RescaleIntercept are applied. Complex data is refused;
  an image file with several components per pixel is refused by the image
  loaders (use the field loaders for 2- or 3-vectors). Saves write float32.
* 2-D files load as X x Y x 1 (spacing.z 1, origin.z 0). Images and fields
  are always saved 3-D, so a 2-D image (sz == 1) keeps its z spacing and
  origin.
* Direction cosines: Image3D/Field3D have no direction. A load records the
  file's 3x3 direction matrix (row-major, ITK/LPS convention) in a side
  table keyed by the object (weak references: it goes with the object), and
  a save writes it back, so load -> save keeps it where the format stores
  one (NIfTI to about 1e-8: quaternion form; MetaImage, NRRD, NPZ exactly).
  GetDirection(obj) reads it (None: no direction, i.e. identity),
  SetDirection(obj, d) sets or clears it, and the ``direction`` argument of
  the ITK savers overrides it. Operators never look at it: results of
  operators or copies have none.
* Errors: a missing file raises FileNotFoundError, a directory
  IsADirectoryError, an empty, truncated, malformed or unreadable file an
  OSError (IOError), each naming the file and what is wrong. A failed load
  changes nothing. The checks of a file before SimpleITK reads it are
  PyCA.Common.atomic.check_readable (pyca-apply uses the same).
* Saves are atomic (PyCA.Common.atomic.atomic_save): the data go to a
  temporary file beside the target (``name.tmp-<pid>-<n>.<ext>``: same
  folder, same extension, so the writer picks the format), which is
  verified (the size its header implies, a
  compressed stream inflated to its end: a short write that a library only
  printed, as ITK's NIfTI writer does on a full disk, raises OSError naming
  the file and the cause, errno ENOSPC or EFBIG), flushed to disk (fsync)
  and then renamed over the target (os.replace). A failing save removes its
  temporaries and leaves
  an earlier file intact; a process killed mid-save can leave a
  ``*.tmp-<pid>-<n>.*`` file, never a half-written target. Formats with a
  separate data file (``.mhd`` + ``.raw``/``.zraw``, ``.nhdr``) write both
  as temporaries, point the header at the final data name, then rename the
  data file and then the header: each rename is atomic, the pair is not
  (use ``.mha`` or ``.nrrd`` for a single file). A kill between the two
  renames leaves the new data file beside the old header; a load refuses
  such a mix when the data file's size is not the one the header names
  (compressed pairs, other sizes) and otherwise (same grid, raw data) reads
  the new voxels with the old header's (equal) geometry.

Nothing here touches the network; SimpleITK, matplotlib and pydicom are
imported when first needed.
"""
import errno
import os
import weakref
import zipfile
import zlib

import numpy as np

import PyCA.Core as core
from ._arrays import AsNPCopy, FieldFromNPArr, ImFromNPArr, IsField3D, IsImage3D
from .atomic import (atomic_json, atomic_save, check_complete, check_file, check_readable, itk_reason,
                     nifti_geometry, read_error, require_simpleitk, split_ext)

__all__ = ['LoadITKImage', 'SaveITKImage', 'LoadITKField', 'SaveITKField', 'ReadGrid',
           'LoadPNGImage', 'SavePNGImage',
           'SaveImageNPY', 'LoadImageNPY', 'SaveFieldNPY', 'LoadFieldNPY',
           'SaveImageNPZ', 'LoadImageNPZ', 'SaveFieldNPZ', 'LoadFieldNPZ',
           'LoadImageDCM',
           'LoadImage', 'SaveImage', 'LoadField', 'SaveField',
           'GetDirection', 'SetDirection']

# The staged write under its former private names (Testing/Python/test_disk_full.py
# calls PyCAIO._atomic_json); new code imports PyCA.Common.atomic.
_atomic_save = atomic_save
_atomic_json = atomic_json


# ---------------------------------------------------------------------------
# Direction side table

_DIRECTIONS = weakref.WeakKeyDictionary()


def _as_direction(d):
    a = np.asarray(d, dtype=np.float64)
    if a.size != 9 or not np.all(np.isfinite(a)):
        raise ValueError("a direction is 9 finite numbers (a 3 x 3 matrix, row-major), got %r" % (d,))
    return tuple(float(v) for v in a.reshape(9))


def GetDirection(obj):
    """The direction cosines recorded for an Image3D or Field3D (a 9-tuple,
    the 3 x 3 matrix row-major, columns = the x, y, z axes in physical
    space), or None when it has none (identity).

    Args:
        obj (Image3D or Field3D): the object.

    Returns:
        tuple of 9 floats or None.
    """
    return _DIRECTIONS.get(obj)


def SetDirection(obj, direction):
    """Records (or, with None, clears) the direction cosines that the ITK
    savers write for obj: 9 numbers or a 3 x 3 matrix, row-major.

    Args:
        obj (Image3D or Field3D): the object.
        direction (9 numbers, 3x3 matrix or None): direction cosines, row-major (columns: the x, y,
            z axes in physical space).
    """
    if not (IsImage3D(obj) or IsField3D(obj)):
        raise TypeError("SetDirection expects an Image3D or Field3D, got %s" % type(obj).__name__)
    if direction is None:
        _DIRECTIONS.pop(obj, None)
    else:
        _DIRECTIONS[obj] = _as_direction(direction)


def _direction_3x3(d, dim):
    """ITK's dim x dim direction (flat) as a flat 3 x 3 (identity padded)."""
    m = np.eye(3)
    m[:dim, :dim] = np.asarray(d, dtype=np.float64).reshape(dim, dim)[:3, :3]
    return tuple(float(v) for v in m.reshape(9))


# ---------------------------------------------------------------------------
# Errors and input checks

def _fspath(fname, who):
    try:
        return os.fspath(fname)
    except TypeError:
        raise TypeError("%s: a file name (str or os.PathLike) is needed, got %s"
                        % (who, type(fname).__name__)) from None


# ---------------------------------------------------------------------------
# SimpleITK images and fields

def _read_sitk(fname, who, vector):
    """(sitk image of float32 [vector] pixels, number of components), after
    every check; raises OSError naming the file."""
    fname = _fspath(fname, who)
    sitk = require_simpleitk(who)
    reader, hdr = check_readable(fname, who)
    dim, size = reader.GetDimension(), reader.GetSize()
    ncomp = reader.GetNumberOfComponents()
    if dim == 4 and size[3] == 1:
        dim = 3
    if not 2 <= dim <= 3:
        raise read_error(who, fname, 'a %d-D image (PyCA images are 2-D or 3-D)' % reader.GetDimension())
    pid = reader.GetPixelID()
    if 'complex' in sitk.GetPixelIDValueAsString(pid):
        raise read_error(who, fname, 'complex pixels (%s) cannot be converted to float32'
                        % sitk.GetPixelIDValueAsString(pid))
    if vector and ncomp not in (2, 3):
        raise read_error(who, fname, '%d component(s) per pixel; a field file holds 2- or 3-vectors '
                        '(use LoadITKImage for scalar images)' % ncomp)
    if not vector and ncomp != 1:
        raise read_error(who, fname, '%d components per pixel; an image file holds scalars '
                        '(use LoadITKField for vector fields)' % ncomp)
    check_complete(fname, who, hdr)
    reader.SetOutputPixelType(sitk.sitkVectorFloat32 if vector else sitk.sitkFloat32)
    try:
        img = reader.Execute()
    except RuntimeError as e:
        raise read_error(who, fname, itk_reason(e), e) from None
    return sitk, img, ncomp, hdr


def _nifti_z(hdr):
    """(dim[0], z spacing, z origin) of a NIfTI-1/2 header, or None. ITK
    reads a vector NIfTI with one z plane as 2-D; these restore its z."""
    g = nifti_geometry(hdr)
    if g is None:
        return None
    dz = g['pixdim'][3]
    oz = g['srow'][11] if g['scode'] > 0 else (g['quat'][5] if g['qcode'] > 0 else 0.0)
    return g['dim0'], abs(dz) if dz else 1.0, oz


def _geometry_lists(obj, hdr):
    """size, spacing, origin (3 each) of a sitk image or reader."""
    dim = min(obj.GetDimension(), 3)
    size = list(obj.GetSize()[:dim]) + [1] * (3 - dim)
    sp = list(obj.GetSpacing()[:dim]) + [1.0] * (3 - dim)
    org = list(obj.GetOrigin()[:dim]) + [0.0] * (3 - dim)
    z = _nifti_z(hdr) if (dim == 2 and hdr is not None) else None
    if z is not None and z[0] >= 3:
        sp[2], org[2] = z[1], z[2]
    return size, sp, org


def _sitk_geometry(img, hdr=None):
    """(GridInfo, direction 9-tuple) of a 2-, 3- or 4-D (t = 1) sitk image."""
    dim = min(img.GetDimension(), 3)
    size, sp, org = _geometry_lists(img, hdr)
    d = np.asarray(img.GetDirection(), dtype=np.float64).reshape(img.GetDimension(), -1)[:dim, :dim]
    grid = core.GridInfo(core.Vec3Di(*[int(s) for s in size]), core.Vec3Df(*[float(v) for v in sp]),
                         core.Vec3Df(*[float(v) for v in org]))
    return grid, _direction_3x3(d.reshape(-1), dim)


def _xyz(view, grid, vector=False):
    """The (x, y, z[, c]) transpose of a SimpleITK array view, 3-D."""
    s = tuple(grid.size())
    v = view.reshape(s[::-1] + ((view.shape[-1],) if vector else ()))
    return v.T  # (z, y, x) -> (x, y, z); vector (z, y, x, c) -> (c, x, y, z)


def LoadITKImage(fname, mType=core.MEM_HOST):
    """A new Image3D from an image file SimpleITK reads (NIfTI, MetaImage,
    NRRD, ...): size, spacing and origin from the file, voxels converted to
    float32 (module notes), the direction recorded (GetDirection).

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Image3D: a new image.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    sitk, img, _, hdr = _read_sitk(fname, 'LoadITKImage', vector=False)
    grid, direction = _sitk_geometry(img, hdr)
    im = core.Image3D(grid, core.MEM_HOST)
    np.copyto(im.asnp(), _xyz(sitk.GetArrayViewFromImage(img), grid))
    del img
    im.toType(mType)
    _DIRECTIONS[im] = direction
    return im


def LoadITKField(fname, mType=core.MEM_HOST):
    """A new Field3D from a 3-vector (or 2-vector: z = 0) image file, with
    size, spacing, origin and direction as LoadITKImage.

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Field3D: a new field.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    sitk, img, ncomp, hdr = _read_sitk(fname, 'LoadITKField', vector=True)
    grid, direction = _sitk_geometry(img, hdr)
    f = core.Field3D(grid, core.MEM_HOST)
    comps = _xyz(sitk.GetArrayViewFromImage(img), grid, vector=True)
    for d, v in enumerate(f.asnp()):
        if d < ncomp:
            np.copyto(v, comps[d])
        else:
            v[...] = 0.0
    del img, comps
    f.toType(mType)
    _DIRECTIONS[f] = direction
    return f


def ReadGrid(fname):
    """The GridInfo (size, spacing, origin) of an image or field file,
    without reading its voxels: any SimpleITK format, .npy (shape only) or .npz.

    Args:
        fname (str): the file name; the extension selects the format (module notes).

    Returns:
        GridInfo: the size, spacing and origin.
    """
    who = 'ReadGrid'
    fname = _fspath(fname, who)
    low = fname.lower()
    if low.endswith('.npy') or low.endswith('.npz'):
        check_file(fname, who)
        if low.endswith('.npz'):
            d = _load_npz(fname, who, 3, 4)
            return d['grid']
        try:
            with open(fname, 'rb') as f:
                shape = _npy_shape(f)
        except Exception as e:
            raise read_error(who, fname, 'not a NumPy .npy file (%s)' % e, e) from None
        shape = tuple(shape[:3]) + (1,) * (3 - min(len(shape), 3))
        return core.GridInfo(core.Vec3Di(*[int(s) for s in shape]))
    reader, hdr = check_readable(fname, who)
    size, sp, org = _geometry_lists(reader, hdr)
    return core.GridInfo(core.Vec3Di(*[int(s) for s in size]), core.Vec3Df(*sp), core.Vec3Df(*org))


def _set_geometry(img, obj, direction):
    img.SetSpacing([float(v) for v in obj.spacing()])
    img.SetOrigin([float(v) for v in obj.origin()])
    d = direction if direction is not None else _DIRECTIONS.get(obj)
    if d is not None:
        img.SetDirection(_as_direction(d))


def _host_view(obj):
    """Host NumPy data of an image (X, Y, Z) without a copy where possible."""
    if obj.memType() == core.MEM_DEVICE:
        return AsNPCopy(obj)
    return obj.asnp()


def SaveITKImage(im, fname, useCompression=False, direction=None):
    """Writes an Image3D (float32) in the format of fname's extension, with
    its size, spacing, origin and direction (the ``direction`` argument, else
    the recorded one, else identity). Atomic (module notes).

    Args:
        im (Image3D): the image, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        useCompression (bool): compress the file where the format can (.nii.gz is always
            compressed); default False.
        direction (9 numbers or 3x3 matrix, optional): direction cosines to write; default None =
            the recorded ones, else identity.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    who = 'SaveITKImage'
    if not IsImage3D(im):
        raise TypeError("%s expects an Image3D, got %s" % (who, type(im).__name__))
    fname = _fspath(fname, who)
    sitk = require_simpleitk(who)

    def write(tmp):
        img = sitk.GetImageFromArray(_host_view(im).T)  # (z, y, x): the same memory order
        _set_geometry(img, im, direction)
        sitk.WriteImage(img, tmp, bool(useCompression))
    atomic_save(fname, write, who)


def SaveITKField(f, fname, useCompression=False, direction=None):
    """Writes a Field3D as a 3-vector float32 image (see SaveITKImage).

    Args:
        f (Field3D): the field, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        useCompression (bool): compress the file where the format can (.nii.gz is always
            compressed); default False.
        direction (9 numbers or 3x3 matrix, optional): direction cosines to write; default None =
            the recorded ones, else identity.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    who = 'SaveITKField'
    if not IsField3D(f):
        raise TypeError("%s expects a Field3D, got %s" % (who, type(f).__name__))
    fname = _fspath(fname, who)
    sitk = require_simpleitk(who)

    def write(tmp):
        if f.memType() == core.MEM_DEVICE:
            a = AsNPCopy(f).astype(np.float32)
            comps = [a[..., d] for d in range(3)]
        else:
            comps = f.asnp()
        zyx3 = np.stack([c.T for c in comps], axis=-1)
        img = sitk.GetImageFromArray(zyx3, isVector=True)
        del zyx3
        _set_geometry(img, f, direction)
        sitk.WriteImage(img, tmp, bool(useCompression))
    atomic_save(fname, write, who)


# ---------------------------------------------------------------------------
# PNG (matplotlib to read and for colour maps; no pyplot, no figure, so no
# backend is involved and the caller's matplotlib state is untouched)

def LoadPNGImage(fname, mType=core.MEM_HOST, sp=None, orig=None):
    """A 2-D Image3D (X x Y x 1) from a PNG file: PNG rows are x, columns y
    (the legacy convention; Display.DispImage shows it upright); values are
    v / 255 (8-bit) or v / 65535 (16-bit), in [0, 1]. Colour images become
    grey: channel 0 when the colour channels are equal, else the luminance
    0.299 R + 0.587 G + 0.114 B; alpha is ignored. PNG keeps no geometry:
    spacing and origin are sp and orig (default 1 and 0).

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.
        sp (3 numbers, optional): grid spacing; default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).

    Returns:
        Image3D: a new image.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    who = 'LoadPNGImage'
    fname = _fspath(fname, who)
    check_file(fname, who)
    try:
        import matplotlib.image as mimage
    except ImportError as e:
        raise ImportError("%s needs matplotlib, which is not installed (pip install matplotlib)"
                          % who, name='matplotlib') from e
    try:
        with open(fname, 'rb') as fh:
            if fh.read(8) != b'\x89PNG\r\n\x1a\n':
                raise ValueError('no PNG signature')
        arr = mimage.imread(fname, format='png')
    except Exception as e:
        raise read_error(who, fname, 'not a readable PNG file (%s)' % (str(e) or type(e).__name__), e) \
            from None
    arr = np.asarray(arr, dtype=np.float32)
    if arr.ndim == 3:
        if arr.shape[2] in (1, 2):
            arr = arr[:, :, 0]
        else:
            rgb = arr[:, :, :3]
            if np.array_equal(rgb[:, :, 0], rgb[:, :, 1]) and np.array_equal(rgb[:, :, 0], rgb[:, :, 2]):
                arr = rgb[:, :, 0]
            else:
                arr = (rgb @ np.array([0.299, 0.587, 0.114], dtype=np.float32)).astype(np.float32)
    if arr.ndim != 2:
        raise read_error(who, fname, 'unexpected PNG array shape %s' % (arr.shape,))
    return ImFromNPArr(arr, mType, sp, orig)


def SavePNGImage(im, fname, rng=None, cmap='gray', bitDepth=8):
    """Writes a 2-D Image3D (sz == 1) as PNG, rows = x. Values map linearly
    from rng = (lo, hi) (default: the image's min and max, as the legacy's
    imsave) to [0, 1], clipped, NaN to 0. cmap 'gray' writes a grey PNG of
    bitDepth 8 or 16 bits, rounded to nearest, so LoadPNGImage gives back
    lo..hi = 0..1 within 0.5 / 255 (or 0.5 / 65535); any other matplotlib
    colour map writes 8-bit RGBA (not a value round trip). No geometry is
    stored. Atomic (module notes).

    Args:
        im (Image3D): the image, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        rng (tuple of 2 floats, optional): the (lo, hi) mapped to 0..1; default None = the image's
            min and max.
        cmap (str): 'gray' (default) for a grey PNG, or a matplotlib colour map name (8-bit RGBA).
        bitDepth (int): 8 (default) or 16, for grey PNGs.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    who = 'SavePNGImage'
    if not IsImage3D(im):
        raise TypeError("%s expects an Image3D, got %s" % (who, type(im).__name__))
    fname = _fspath(fname, who)
    if im.size().z != 1:
        raise ValueError("%s: PNG holds 2-D images; this image is %s (take a slice first)"
                         % (who, tuple(im.size())))
    if bitDepth not in (8, 16):
        raise ValueError("%s: bitDepth must be 8 or 16, got %r" % (who, bitDepth))
    grey = cmap is None or cmap in ('gray', 'grey', 'Greys_r')
    if not grey and bitDepth != 8:
        raise ValueError("%s: colour maps are written with 8 bits" % who)
    a = np.array(_host_view(im)[:, :, 0], dtype=np.float64)
    if rng is None:
        finite = a[np.isfinite(a)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    else:
        lo, hi = (float(v) for v in rng)
    t = (a - lo) / (hi - lo) if hi > lo else np.zeros_like(a)
    t = np.nan_to_num(np.clip(t, 0.0, 1.0), nan=0.0)
    from PIL import Image as PILImage  # matplotlib's own image dependency
    if grey:
        top = 255 if bitDepth == 8 else 65535
        q = np.rint(t * top).astype(np.uint8 if bitDepth == 8 else np.uint16)
        pic = PILImage.fromarray(q)
    else:
        import matplotlib
        cm = matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap
        pic = PILImage.fromarray(cm(t, bytes=True), 'RGBA')

    def write(tmp):
        pic.save(tmp, format='PNG')
    atomic_save(fname, write, who)


# ---------------------------------------------------------------------------
# NumPy formats (the legacy LoadImageNPY and uncompressed SaveImageNPZ work)

def _save_numpy(fname, who, dump):
    def write(tmp):
        with open(tmp, 'wb') as fh:
            dump(fh)
    atomic_save(fname, write, who)


def _field_array(f):
    if f.memType() == core.MEM_DEVICE:
        return AsNPCopy(f).astype(np.float32)
    return np.stack(f.asnp(), axis=-1)


def SaveImageNPY(im, fname):
    """Writes the voxels of an Image3D as a float32 (X, Y, Z) .npy array
    (no geometry).

    Args:
        im (Image3D): the image, any memory type.
        fname (str): the file name; the extension selects the format (module notes).

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    if not IsImage3D(im):
        raise TypeError("SaveImageNPY expects an Image3D, got %s" % type(im).__name__)
    a = _host_view(im)
    _save_numpy(_fspath(fname, 'SaveImageNPY'), 'SaveImageNPY', lambda fh: np.save(fh, a))


def SaveFieldNPY(f, fname):
    """Writes a Field3D as a float32 (X, Y, Z, 3) .npy array (no geometry).

    Args:
        f (Field3D): the field, any memory type.
        fname (str): the file name; the extension selects the format (module notes).

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    if not IsField3D(f):
        raise TypeError("SaveFieldNPY expects a Field3D, got %s" % type(f).__name__)
    a = _field_array(f)
    _save_numpy(_fspath(fname, 'SaveFieldNPY'), 'SaveFieldNPY', lambda fh: np.save(fh, a))


def _load_npy(fname, who):
    fname = _fspath(fname, who)
    check_file(fname, who)
    try:
        a = np.load(fname, allow_pickle=False)
    except Exception as e:
        raise read_error(who, fname, 'not a readable NumPy .npy file (%s)' % (str(e) or type(e).__name__),
                        e) from None
    if not isinstance(a, np.ndarray):
        raise read_error(who, fname, 'holds an .npz archive, not an .npy array')
    if a.dtype.kind not in 'biuf':
        raise read_error(who, fname, 'holds %s values, not real numbers' % a.dtype)
    return fname, a


def LoadImageNPY(fname, mType=core.MEM_HOST, sp=None, orig=None):
    """A new Image3D from a 1-, 2- or 3-D .npy array (ImFromNPArr's rules:
    (X, Y) becomes X x Y x 1); spacing and origin are sp and orig.

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.
        sp (3 numbers, optional): grid spacing; default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).

    Returns:
        Image3D: a new image.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    fname, a = _load_npy(fname, 'LoadImageNPY')
    if not 1 <= a.ndim <= 3:
        raise read_error('LoadImageNPY', fname, 'a %d-D array %s; an image is 1- to 3-D' % (a.ndim, a.shape))
    return ImFromNPArr(a, mType, sp, orig)


def LoadFieldNPY(fname, mType=core.MEM_HOST, sp=None, orig=None):
    """A new Field3D from an (X, Y, Z, 3), (X, Y, 3) or (X, Y, 2) .npy array.

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.
        sp (3 numbers, optional): grid spacing; default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).

    Returns:
        Field3D: a new field.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    fname, a = _load_npy(fname, 'LoadFieldNPY')
    try:
        return FieldFromNPArr(a, mType, sp, orig)
    except ValueError as e:
        raise read_error('LoadFieldNPY', fname, str(e), e) from None


def _npz_dict(obj, data):
    d = dict(data=data, spacing=np.array(tuple(obj.spacing()), np.float32),
             origin=np.array(tuple(obj.origin()), np.float32))
    direction = _DIRECTIONS.get(obj)
    if direction is not None:
        d['direction'] = np.array(direction, np.float64).reshape(3, 3)
    return d


def SaveImageNPZ(im, fname, useCompression=True):
    """Writes an Image3D as .npz: ``data`` (float32 X x Y x Z), ``spacing``,
    ``origin`` (float32 3-vectors) and ``direction`` (3 x 3, when recorded);
    deflate-compressed unless useCompression is False.

    Args:
        im (Image3D): the image, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        useCompression (bool): ``numpy.savez_compressed`` (True, default) or ``numpy.savez``.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    if not IsImage3D(im):
        raise TypeError("SaveImageNPZ expects an Image3D, got %s" % type(im).__name__)
    d = _npz_dict(im, _host_view(im))
    save = np.savez_compressed if useCompression else np.savez
    _save_numpy(_fspath(fname, 'SaveImageNPZ'), 'SaveImageNPZ', lambda fh: save(fh, **d))


def SaveFieldNPZ(f, fname, useCompression=True):
    """Writes a Field3D as .npz: ``data`` (float32 X x Y x Z x 3) with
    spacing, origin and direction as SaveImageNPZ.

    Args:
        f (Field3D): the field, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        useCompression (bool): ``numpy.savez_compressed`` (True, default) or ``numpy.savez``.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    if not IsField3D(f):
        raise TypeError("SaveFieldNPZ expects a Field3D, got %s" % type(f).__name__)
    d = _npz_dict(f, _field_array(f))
    save = np.savez_compressed if useCompression else np.savez
    _save_numpy(_fspath(fname, 'SaveFieldNPZ'), 'SaveFieldNPZ', lambda fh: save(fh, **d))


def _load_npz(fname, who, *ndims):
    """{'data', 'grid', 'direction'} of a PyCA .npz file, checked."""
    try:
        z = np.load(fname, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError('an .npy array, not an .npz archive')
        with z:
            keys = set(z.files)
            if 'data' not in keys:
                raise ValueError('no "data" array (has: %s)' % ', '.join(sorted(keys)))
            want_data = who != 'ReadGrid'
            data = z['data'] if want_data else None
            shape = data.shape if want_data else _npz_shape(fname)
            sp = z['spacing'] if 'spacing' in keys else (z['sp'] if 'sp' in keys else np.ones(3))
            org = z['origin'] if 'origin' in keys else (z['orig'] if 'orig' in keys else np.zeros(3))
            direction = z['direction'] if 'direction' in keys else None
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise read_error(who, fname, 'not a readable PyCA .npz file (%s)' % (str(e) or type(e).__name__),
                        e) from None
    if len(shape) not in ndims:
        what = 'a field (X, Y, Z, 3)' if len(shape) == 4 else 'an image (X, Y, Z)'
        raise read_error(who, fname, '"data" has shape %s; expected %s' % (shape, what))
    if len(shape) == 4 and shape[3] != 3:
        raise read_error(who, fname, '"data" has shape %s; a field is X x Y x Z x 3' % (shape,))
    if data is not None and data.dtype.kind not in 'biuf':
        raise read_error(who, fname, '"data" holds %s values, not real numbers' % data.dtype)
    sp, org = np.asarray(sp, np.float64).reshape(-1), np.asarray(org, np.float64).reshape(-1)
    if sp.size != 3 or org.size != 3:
        raise read_error(who, fname, 'spacing and origin must be 3-vectors')
    if direction is not None:
        try:
            direction = _as_direction(direction)
        except ValueError as e:
            raise read_error(who, fname, str(e)) from None
    grid = core.GridInfo(core.Vec3Di(*[int(s) for s in shape[:3]]), core.Vec3Df(*sp.tolist()),
                         core.Vec3Df(*org.tolist()))
    return dict(data=data, grid=grid, direction=direction)


def _npy_shape(fh):
    """The array shape from an .npy header (the voxels are not read)."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)[0]
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(fh)[0]
    raise ValueError('unsupported .npy format version %s' % (version,))


def _npz_shape(fname):
    with zipfile.ZipFile(fname) as zf, zf.open('data.npy') as fh:
        return _npy_shape(fh)


def LoadImageNPZ(fname, mType=core.MEM_HOST):
    """A new Image3D from an .npz file of SaveImageNPZ (spacing, origin and
    direction restored).

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Image3D: a new image.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    who = 'LoadImageNPZ'
    fname = _fspath(fname, who)
    check_file(fname, who)
    d = _load_npz(fname, who, 3)
    im = core.Image3D(d['grid'], core.MEM_HOST)
    np.copyto(im.asnp(), d['data'], casting='unsafe')
    im.toType(mType)
    if d['direction'] is not None:
        _DIRECTIONS[im] = d['direction']
    return im


def LoadFieldNPZ(fname, mType=core.MEM_HOST):
    """A new Field3D from an .npz file of SaveFieldNPZ.

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Field3D: a new field.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    who = 'LoadFieldNPZ'
    fname = _fspath(fname, who)
    check_file(fname, who)
    d = _load_npz(fname, who, 4)
    f = core.Field3D(d['grid'], core.MEM_HOST)
    for c, v in enumerate(f.asnp()):
        np.copyto(v, d['data'][..., c], casting='unsafe')
    f.toType(mType)
    if d['direction'] is not None:
        _DIRECTIONS[f] = d['direction']
    return f


# ---------------------------------------------------------------------------
# DICOM (pydicom)

def _pydicom(who):
    try:
        import pydicom
    except ImportError as e:
        raise ImportError("%s needs the pydicom package to read DICOM, and pydicom is not "
                          "installed: pip install pydicom" % who, name='pydicom') from e
    return pydicom


def LoadImageDCM(fname, mType=core.MEM_HOST):
    """A new Image3D from a DICOM file (one slice, or a multi-frame file) or
    a folder holding one series (its slices sorted along the slice normal).
    x is the column index, y the row index (as ITK); spacing from
    PixelSpacing and the slice positions (else SpacingBetweenSlices,
    SliceThickness, 1), origin from ImagePositionPatient of the first slice,
    direction from ImageOrientationPatient (recorded, see GetDirection);
    RescaleSlope/RescaleIntercept applied. Needs pydicom (ImportError
    saying so when it is missing).

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Image3D: a new image.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
        ImportError: pydicom is not installed.
    """
    who = 'LoadImageDCM'
    fname = _fspath(fname, who)
    pydicom = _pydicom(who)
    if not os.path.lexists(fname):
        raise FileNotFoundError(errno.ENOENT, "%s: no such file or folder" % who, fname)
    if os.path.isdir(fname):
        files = sorted(os.path.join(fname, n) for n in os.listdir(fname))
        files = [p for p in files if os.path.isfile(p)]
        slices = []
        for p in files:
            try:
                ds = pydicom.dcmread(p)
            except Exception:
                continue  # not DICOM (DICOMDIR-less folders hold other files too)
            if 'PixelData' in ds:
                slices.append((p, ds))
        if not slices:
            raise read_error(who, fname, 'the folder holds no DICOM image files')
        series = {getattr(ds, 'SeriesInstanceUID', None) for _, ds in slices}
        if len(series) > 1:
            raise read_error(who, fname, 'the folder holds %d series; load one folder per series'
                            % len(series))
    else:
        check_file(fname, who)
        try:
            ds = pydicom.dcmread(fname)
        except Exception as e:
            raise read_error(who, fname, 'not a readable DICOM file (%s)' % (str(e) or type(e).__name__),
                            e) from None
        if 'PixelData' not in ds:
            raise read_error(who, fname, 'a DICOM file without pixel data')
        slices = [(fname, ds)]
    return _dicom_volume(fname, slices, mType, who)


def _dicom_pixels(path, ds, who):
    try:
        a = ds.pixel_array
    except Exception as e:
        raise read_error(who, path, 'cannot decode the pixel data (%s)' % (str(e) or type(e).__name__),
                        e) from None
    if a.ndim == 3 and int(getattr(ds, 'SamplesPerPixel', 1)) > 1 and a.shape[-1] in (3, 4):
        raise read_error(who, path, 'colour DICOM (%d samples per pixel); PyCA images are scalar'
                        % int(ds.SamplesPerPixel))
    a = a.astype(np.float64)
    slope = float(getattr(ds, 'RescaleSlope', 1) or 1)
    inter = float(getattr(ds, 'RescaleIntercept', 0) or 0)
    if slope != 1 or inter != 0:
        a = a * slope + inter
    return a if a.ndim == 3 else a[np.newaxis]  # (frames, rows, cols)


def _dicom_volume(name, slices, mType, who):
    ds0 = slices[0][1]
    iop = np.asarray(getattr(ds0, 'ImageOrientationPatient', [1, 0, 0, 0, 1, 0]), np.float64)
    rowdir, coldir = iop[:3], iop[3:6]
    normal = np.cross(rowdir, coldir)

    def position(ds):
        p = getattr(ds, 'ImagePositionPatient', None)
        return np.asarray(p, np.float64) if p is not None else None

    if len(slices) > 1:
        if all(position(ds) is not None for _, ds in slices):
            slices.sort(key=lambda s: float(np.dot(position(s[1]), normal)))
        else:
            slices.sort(key=lambda s: int(getattr(s[1], 'InstanceNumber', 0) or 0))
    frames = [_dicom_pixels(p, ds, who) for p, ds in slices]
    shapes = {f.shape[1:] for f in frames}
    if len(shapes) != 1:
        raise read_error(who, name, 'slices of different sizes %s' % sorted(shapes))
    vol = np.concatenate(frames, axis=0)  # (z, rows, cols)
    ds0 = slices[0][1]
    ps = getattr(ds0, 'PixelSpacing', None) or getattr(ds0, 'ImagerPixelSpacing', None) or [1, 1]
    row_sp, col_sp = float(ps[0]), float(ps[1])
    zs = None
    if len(slices) > 1 and all(position(ds) is not None for _, ds in slices):
        d = np.diff([float(np.dot(position(ds), normal)) for _, ds in slices])
        zs = float(np.median(d)) if d.size else None
    if not zs:
        for key in ('SpacingBetweenSlices', 'SliceThickness'):
            v = getattr(ds0, key, None)
            if v not in (None, ''):
                zs = abs(float(v))
                break
    zs = zs or 1.0
    org = position(ds0)
    org = org if org is not None else np.zeros(3)
    grid = core.GridInfo(core.Vec3Di(vol.shape[2], vol.shape[1], vol.shape[0]),
                         core.Vec3Df(col_sp, row_sp, zs), core.Vec3Df(*[float(v) for v in org]))
    im = core.Image3D(grid, core.MEM_HOST)
    np.copyto(im.asnp(), vol.T, casting='unsafe')  # (cols, rows, z) = (x, y, z)
    im.toType(mType)
    _DIRECTIONS[im] = _as_direction(np.stack([rowdir, coldir, normal], axis=1))
    return im


# ---------------------------------------------------------------------------
# Dispatchers (by extension)

def _ext(fname):
    return split_ext(os.path.basename(os.fspath(fname)))[1].lower()


def LoadImage(fname, mType=core.MEM_HOST):
    """Loads an Image3D by extension: .npy, .npz, .png, .dcm, anything else
    through SimpleITK (LoadITKImage).

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Image3D: a new image.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    ext = _ext(fname)
    if ext == '.npy':
        return LoadImageNPY(fname, mType)
    if ext == '.npz':
        return LoadImageNPZ(fname, mType)
    if ext == '.png':
        return LoadPNGImage(fname, mType)
    if ext == '.dcm':
        return LoadImageDCM(fname, mType)
    return LoadITKImage(fname, mType)


def SaveImage(im, fname, useCompression=False):
    """Saves an Image3D by extension: .npy, .npz (compressed if
    useCompression), .png (8-bit grey of the image's range), anything else
    through SimpleITK (SaveITKImage). .dcm cannot be written.

    Args:
        im (Image3D): the image, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        useCompression (bool): compress the file where the format can (.nii.gz is always
            compressed); default False.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    ext = _ext(fname)
    if ext == '.npy':
        return SaveImageNPY(im, fname)
    if ext == '.npz':
        return SaveImageNPZ(im, fname, useCompression)
    if ext == '.png':
        return SavePNGImage(im, fname)
    if ext == '.dcm':
        raise ValueError("SaveImage: writing DICOM is not supported (save .nii, .mha, .nrrd, ...)")
    return SaveITKImage(im, fname, useCompression)


def LoadField(fname, mType=core.MEM_HOST):
    """Loads a Field3D by extension: .npy, .npz, anything else through
    SimpleITK (LoadITKField).

    Args:
        fname (str): the file name; the extension selects the format (module notes).
        mType (MemoryType): memory type of the result; default MEM_HOST.

    Returns:
        Field3D: a new field.

    Raises:
        OSError: a missing, unreadable or empty file (FileNotFoundError, IsADirectoryError, ...).
        ValueError: contents that are not such an image/field (e.g. the wrong number of dimensions
            or components).
    """
    ext = _ext(fname)
    if ext == '.npy':
        return LoadFieldNPY(fname, mType)
    if ext == '.npz':
        return LoadFieldNPZ(fname, mType)
    if ext in ('.png', '.dcm'):
        raise ValueError("LoadField: %s files hold images, not vector fields" % ext)
    return LoadITKField(fname, mType)


def SaveField(f, fname, useCompression=False):
    """Saves a Field3D by extension: .npy, .npz, anything else through
    SimpleITK (SaveITKField).

    Args:
        f (Field3D): the field, any memory type.
        fname (str): the file name; the extension selects the format (module notes).
        useCompression (bool): compress the file where the format can (.nii.gz is always
            compressed); default False.

    Raises:
        OSError: the file cannot be written in full (nothing is left at ``fname``).
    """
    ext = _ext(fname)
    if ext == '.npy':
        return SaveFieldNPY(f, fname)
    if ext == '.npz':
        return SaveFieldNPZ(f, fname, useCompression)
    if ext in ('.png', '.dcm'):
        raise ValueError("SaveField: %s files hold images, not vector fields" % ext)
    return SaveITKField(f, fname, useCompression)
