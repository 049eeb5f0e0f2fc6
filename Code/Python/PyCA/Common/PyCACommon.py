"""NumPy bridges, slicing, deformation and small utilities around PyCA.Core
(legacy PyCACommon; file IO is in PyCAIO).

Module layers (no import cycle): ``_arrays`` (the NumPy conversions),
``_helpers`` (axis names, frame names, random sources; shared with
PyCA.Display) and ``atomic`` (file safety) are the lowest, ``PyCAIO``
imports ``_arrays`` and ``atomic``, and this module imports them all; the
conversions are re-exported here and by PyCA.Common.

Heavy or optional packages (scipy, matplotlib) are imported only by the
functions that need them.
"""
import errno
import math
import numbers
import os

import numpy as np

import PyCA.Core as core

from . import PyCAIO as _io
from . import _helpers
from ._arrays import (AsNPCopy, CopyDataFromNPArr, FieldFromNPArr, ImFromNPArr,  # noqa: F401
                      IsField3D, IsImage3D, as_vec3f)
from ._helpers import axis_index, check_scratch, frame_name, normal_noise, random_source

_vec3f = as_vec3f  # (the shared helpers under their former names)

__all__ = ['ImFromNPArr', 'FieldFromNPArr', 'AsNPCopy', 'CopyDataFromNPArr',
           'IsImage3D', 'IsField3D', 'ImFromDLPack', 'FieldFromDLPack',
           'DIMMAP', 'ExtractROI', 'ExtractSliceArr', 'ExtractSliceIm', 'ExtractSliceArrIm',
           'ExtractSliceVF', 'ExtractSliceArrVF', 'ComposeDef', 'TukeyWindow', 'TukeyWindow1D',
           'AddWhiteNoise', 'GaussianBlur', 'ReadVolWriteFrames', 'SaveSliceStack',
           'Distribute', 'Mkdir_p', 'ReadPLUNC']


def ImFromDLPack(obj, sp=None, orig=None, copy=None):
    """An Image3D on the memory of a DLPack producer (NumPy array, torch
    tensor, ...): float32 (X, Y) or (X, Y, Z) with x fastest is wrapped
    without a copy (the image keeps the producer alive), anything else is
    copied unless copy=False (then BufferError). See Image3D.FromDLPack.

    Args:
        obj (DLPack producer or list of 3): a NumPy array, torch tensor, ... (``__dlpack__``).
        sp (3 numbers, optional): grid spacing; default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).
        copy (bool, optional): None (default): wrap when possible, else copy; True: always copy;
            False: never (BufferError when wrapping is impossible).

    Returns:
        Image3D.

    Raises:
        BufferError: ``copy=False`` and the data cannot be wrapped.
    """
    im = core.Image3D.FromDLPack(obj, copy=copy)
    im.setSpacing(as_vec3f(sp, (1.0, 1.0, 1.0)))
    im.setOrigin(as_vec3f(orig, (0.0, 0.0, 0.0)))
    return im


def FieldFromDLPack(obj, sp=None, orig=None, copy=None):
    """A Field3D on the memory of a (3, X, Y[, Z]) DLPack producer or of
    three (X, Y[, Z]) producers; see Field3D.FromDLPack.

    Args:
        obj (DLPack producer or list of 3): one (3, X, Y[, Z]) producer, or three (X, Y[, Z])
            producers.
        sp (3 numbers, optional): grid spacing; default None = (1, 1, 1).
        orig (3 numbers, optional): grid origin; default None = (0, 0, 0).
        copy (bool, optional): None (default): wrap when possible, else copy; True: always copy;
            False: never (BufferError when wrapping is impossible).

    Returns:
        Field3D.

    Raises:
        BufferError: ``copy=False`` and the data cannot be wrapped.
    """
    f = core.Field3D.FromDLPack(obj, copy=copy)
    g = core.GridInfo(f.size().copy(), as_vec3f(sp, (1.0, 1.0, 1.0)), as_vec3f(orig, (0.0, 0.0, 0.0)))
    f.setGrid(g)
    return f


# ---------------------------------------------------------------------------
# slicing

#: Axis names and numbers: 0, 1, 2 and 'x', 'y', 'z' (also upper case).
DIMMAP = _helpers.DIMMAP  # (one dict, shared with PyCA.Display through _helpers)
_dim = axis_index


def _slice_index(idx, n, dim):
    if idx is None:
        return n // 2
    if not isinstance(idx, numbers.Integral) or isinstance(idx, bool):
        raise TypeError("slice index must be an integer or None, got %r" % (idx,))
    idx = int(idx)
    if not 0 <= idx < n:
        raise IndexError("slice index %d outside 0..%d along %s" % (idx, n - 1, "xyz"[dim]))
    return idx


def _check_volume(obj, what):
    if not (IsImage3D(obj) or IsField3D(obj)):
        raise TypeError("%s expects an Image3D or Field3D, got %s" % (what, type(obj).__name__))


def _sub_volume(obj, start, size):
    """A new object (same type and memory) holding obj[start : start + size];
    the origin moves to the sub-volume's first voxel."""
    sp = obj.spacing()
    org = obj.origin()
    new_org = core.Vec3Df(org.x + start[0] * sp.x, org.y + start[1] * sp.y, org.z + start[2] * sp.z)
    g = core.GridInfo(core.Vec3Di(*size), sp.copy(), new_org)
    out = type(obj)(g, obj.memType()) if type(obj) in (core.Image3D, core.Field3D) else \
        (core.Image3D if IsImage3D(obj) else core.Field3D)(g, obj.memType())
    core.SubVol(out, obj, core.Vec3Di(*start))
    return out


def ExtractROI(im, extent):
    """The region ``extent`` of an Image3D or Field3D as a new object of the
    same memory type.

    ``extent`` is ((x0, x1), (y0, y1), (z0, z1)) with half-open ranges
    (x0 <= x < x1, like Python slices); two pairs leave z whole. The ROI's
    origin is the physical position of voxel (x0, y0, z0), so world
    coordinates are preserved.

    Args:
        im (Image3D or Field3D): the object.
        extent (2 or 3 pairs of ints): ((x0, x1), (y0, y1)[, (z0, z1)]), half-open voxel ranges.

    Returns:
        Image3D or Field3D: a new object of the same kind and memory type.
    """
    _check_volume(im, "ExtractROI")
    size = tuple(im.size())
    try:
        pairs = [tuple(int(v) for v in p) for p in extent]
    except TypeError:
        raise TypeError("extent must be ((x0, x1), (y0, y1)[, (z0, z1)]), got %r" % (extent,)) from None
    if len(pairs) == 2:
        pairs.append((0, size[2]))
    if len(pairs) != 3 or any(len(p) != 2 for p in pairs):
        raise ValueError("extent must be ((x0, x1), (y0, y1)[, (z0, z1)]), got %r" % (extent,))
    for d, (a, b) in enumerate(pairs):
        if not 0 <= a < b <= size[d]:
            raise ValueError("extent %s along %s is not inside 0..%d (half-open, non-empty)"
                             % ((a, b), "xyz"[d], size[d]))
    return _sub_volume(im, [p[0] for p in pairs], [p[1] - p[0] for p in pairs])


def ExtractSliceArr(arr, sliceIdx=None, dim='z'):
    """Slice ``sliceIdx`` (default: the middle one, n // 2) of a NumPy array
    indexed [x, y, z, ...] along ``dim``: a view of one fewer dimension (an
    (X, Y, Z, 3) field array gives an (A, B, 3) slice).

    Args:
        arr (numpy.ndarray): the array, indexed [x, y, z, ...].
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle one.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.

    Returns:
        numpy.ndarray: a view, one dimension fewer.
    """
    a = np.asarray(arr)
    d = _dim(dim)
    if a.ndim < d + 1 or a.ndim < 2:
        raise ValueError("cannot slice a %d-D array along %s" % (a.ndim, "xyz"[d]))
    idx = _slice_index(sliceIdx, a.shape[d], d)
    return a[(slice(None),) * d + (idx,)]


def _slice_obj(obj, sliceIdx, dim, what):
    _check_volume(obj, what)
    d = _dim(dim)
    size = list(obj.size())
    idx = _slice_index(sliceIdx, size[d], d)
    start = [0, 0, 0]
    start[d] = idx
    size[d] = 1
    return _sub_volume(obj, start, size)


def ExtractSliceIm(im, sliceIdx=None, dim='z'):
    """Slice ``sliceIdx`` (default: the middle one) of an Image3D along
    ``dim`` as an Image3D of extent 1 along that axis (same memory type;
    origin at the slice).

    Args:
        im (Image3D): the image, any memory type.
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle one.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.

    Returns:
        Image3D.
    """
    if not IsImage3D(im):
        raise TypeError("ExtractSliceIm expects an Image3D, got %s" % type(im).__name__)
    return _slice_obj(im, sliceIdx, dim, "ExtractSliceIm")


def ExtractSliceArrIm(im, sliceIdx=None, dim='z'):
    """Slice of an Image3D (any memory type) as a 2-D float32 NumPy array,
    indexed by the two remaining axes in order ((x, y) for dim 'z').

    Args:
        im (Image3D): the image, any memory type.
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle one.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.

    Returns:
        numpy.ndarray: 2-D float32.
    """
    s = ExtractSliceIm(im, sliceIdx, dim)
    return AsNPCopy(s).reshape(_plane_shape(s, dim))


def ExtractSliceVF(vf, sliceIdx=None, dim='z'):
    """Slice of a Field3D along ``dim`` as a Field3D of extent 1 there.

    Args:
        vf (Field3D): the field, any memory type.
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle one.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.

    Returns:
        Field3D.
    """
    if not IsField3D(vf):
        raise TypeError("ExtractSliceVF expects a Field3D, got %s" % type(vf).__name__)
    return _slice_obj(vf, sliceIdx, dim, "ExtractSliceVF")


def ExtractSliceArrVF(vf, sliceIdx=None, dim='z'):
    """Slice of a Field3D as an (A, B, 3) float64 NumPy array (the three
    components; A, B the remaining axes in order).

    Args:
        vf (Field3D): the field, any memory type.
        sliceIdx (int, optional): the slice index along ``dim``; default None = the middle one.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.

    Returns:
        numpy.ndarray: (A, B, 3) float64.
    """
    s = ExtractSliceVF(vf, sliceIdx, dim)
    return AsNPCopy(s).reshape(_plane_shape(s, dim) + (3,))


def _plane_shape(s, dim):
    size = list(s.size())
    del size[_dim(dim)]
    return tuple(size)


# ---------------------------------------------------------------------------
# deformations

_check_scratch = check_scratch


def ComposeDef(V, t, asVField=False, inverse=False, scratchV1=None, scratchV2=None):
    """The deformation at fractional time t of the flow of a list of N
    velocity fields (V-fields, physical units), each applied for one of N
    equal time steps (the field already holds its step's displacement).

    Forward (inverse=False): h_0 = Id, h_{k+1} = (Id + v_k) o h_k
    (``ComposeVH``); inverse=True gives the inverse map
    g_{k+1} = g_k o (Id - v_k) (``ComposeHVInv``). At t*N = K + f
    (0 <= f < 1) the last step uses f * v_K. t = 0 is the identity, t = 1
    the whole series. Returns a new H-field (or the V-field h - Id in
    physical units with asVField=True) on the fields' grid and memory type.
    scratchV1 and scratchV2 (optional Field3Ds of that grid and memory type)
    avoid temporary allocations.

    Args:
        V (list of Field3D): the N velocity fields (V-fields, physical units), one per time step, on
            one grid.
        t (float): the fractional time in [0, 1].
        asVField (bool): return the V-field h - Id (physical units) instead of the H-field; default
            False.
        inverse (bool): the inverse map; default False.
        scratchV1 (Field3D, optional): scratch on the fields' grid and memory type; default None.
        scratchV2 (Field3D, optional): a second scratch field; default None.

    Returns:
        Field3D: the H-field (or V-field).
    """
    V = list(V)
    if not V:
        raise ValueError("ComposeDef needs at least one velocity field")
    for v in V:
        if not IsField3D(v):
            raise TypeError("ComposeDef expects a list of Field3D, got %s" % type(v).__name__)
    g, m = V[0].grid(), V[0].memType()
    for v in V[1:]:
        if v.grid() != g or v.memType() != m:
            raise ValueError("the velocity fields must share one grid and memory type")
    try:
        t = float(t)
    except (TypeError, ValueError):
        raise TypeError("t must be a number, got %r" % (t,)) from None
    if not 0.0 <= t <= 1.0:
        raise ValueError("t must be in [0, 1], got %r" % (t,))
    s1 = _check_scratch(scratchV1, g, m, "scratchV1")
    s2 = _check_scratch(scratchV2, g, m, "scratchV2") if scratchV2 is not None else None
    n = len(V)
    steps = t * n
    whole = min(int(math.floor(steps + 1e-9)), n)
    frac = steps - whole
    if frac < 1e-7:
        frac = 0.0
    h = core.Field3D(g, m)
    core.SetToIdentity(h)
    cur, other = h, s1

    def step(v, k):
        nonlocal cur, other
        if inverse:
            core.ComposeHVInv(other, cur, v, k)
        else:
            core.ComposeVH(other, v, cur, k)
        cur, other = other, cur

    for i in range(whole):
        step(V[i], 1.0)
    if frac > 0.0 and whole < n:
        if s2 is not None:
            core.MulC(s2, V[whole], frac)
            step(s2, 1.0)
        else:
            step(V[whole], frac)
    if cur is not h:
        core.Copy(h, cur)
    if asVField:
        core.HtoV_I(h)
    return h


# ---------------------------------------------------------------------------
# windows, noise, smoothing

def TukeyWindow1D(sz, width):
    """A Tukey (tapered cosine) window of sz samples: 1 in the middle and a
    raised-cosine taper of ``width`` samples at each end,
    w[i] = (1 - cos(pi i / width)) / 2 for i < width (mirrored at the far
    end). Equals scipy.signal.windows.tukey(sz, 2 * width / (sz - 1)).
    width = 0 gives all ones; 0 <= width <= (sz - 1) / 2.

    Args:
        sz (int): the number of samples.
        width (float): the taper width in samples at each end, 0 <= width <= (sz - 1) / 2.

    Returns:
        numpy.ndarray: float64, length sz.
    """
    if not isinstance(sz, numbers.Integral) or sz < 0:
        raise ValueError("sz must be a non-negative integer, got %r" % (sz,))
    width = float(width)
    sz = int(sz)
    if width < 0 or (sz > 1 and width > (sz - 1) / 2.0 + 1e-12) or (sz <= 1 and width > 0):
        raise ValueError("width must be in [0, (sz - 1) / 2] = [0, %g], got %g" % (max(sz - 1, 0) / 2.0, width))
    w = np.ones(sz)
    if width > 0:
        i = np.arange(sz, dtype=np.float64)
        d = np.minimum(i, (sz - 1) - i)
        taper = d < width
        w[taper] = 0.5 * (1.0 - np.cos(np.pi * d[taper] / width))
    return w


def TukeyWindow(sz, width):
    """The separable N-D Tukey window of shape sz (a tuple or Vec3Di):
    the outer product of TukeyWindow1D along every axis (an axis of extent 1
    is 1). ``width`` is one taper width or one per axis. float64 array.

    Args:
        sz (tuple of ints or Vec3Di): the window shape.
        width (int or sequence of int): one taper width, or one per axis.

    Returns:
        numpy.ndarray: float64 of shape sz.
    """
    shape = tuple(int(s) for s in sz)
    widths = list(width) if np.ndim(width) else [width] * len(shape)
    if len(widths) != len(shape):
        raise ValueError("width needs one value per axis (%d), got %d" % (len(shape), len(widths)))
    w = np.ones(shape)
    for d, (n, wd) in enumerate(zip(shape, widths)):
        w1 = TukeyWindow1D(n, wd if n > 1 else 0)
        w = w * w1.reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
    return w


# the random source of a seed argument and its Gaussian samples (_helpers;
# PyCATestData uses them too)
_rng = random_source
_normal = normal_noise


def AddWhiteNoise(im, sigma, seed=None):
    """Adds Gaussian noise of standard deviation sigma to an Image3D or
    Field3D in place (any memory type; every field component). ``seed``: an
    int or numpy Generator for reproducible noise (default: NumPy's global
    state, as in the legacy).

    Args:
        im (Image3D or Field3D): the object, changed in place; any memory type.
        sigma (float): the noise standard deviation.
        seed (int or numpy.random.Generator, optional): random source; default None = NumPy's global
            state.
    """
    _check_volume(im, "AddWhiteNoise")
    sigma = float(sigma)
    if sigma < 0 or not math.isfinite(sigma):
        raise ValueError("sigma must be a finite number >= 0, got %r" % (sigma,))
    rng = _rng(seed)
    a = AsNPCopy(im)
    a = a + _normal(rng, sigma, a.shape)
    CopyDataFromNPArr(im, a)


def GaussianBlur(im, sigma, mode='reflect', truncate=4.0):
    """A new Image3D (or Field3D, per component) smoothed with
    scipy.ndimage.gaussian_filter; sigma in voxels (one value or one per
    axis; an axis of extent 1 is not smoothed). Same grid and memory type.

    Args:
        im (Image3D or Field3D): the input (not changed).
        sigma (float or sequence of float): standard deviation in voxels, one value or one per axis.
        mode (str): the border mode of scipy.ndimage.gaussian_filter; default 'reflect'.
        truncate (float): the kernel radius in standard deviations; default 4.0.

    Returns:
        Image3D or Field3D: same grid and memory type.
    """
    _check_volume(im, "GaussianBlur")
    try:
        from scipy import ndimage
    except ImportError:
        raise ImportError("GaussianBlur needs scipy: pip install scipy") from None
    size = tuple(im.size())
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (3,)).copy()
    if np.any(sig < 0) or not np.all(np.isfinite(sig)):
        raise ValueError("sigma must be finite and >= 0, got %r" % (sigma,))
    sig[[s == 1 for s in size]] = 0.0
    a = AsNPCopy(im)
    if IsField3D(im):
        out = np.stack([ndimage.gaussian_filter(a[..., d], sig, mode=mode, truncate=truncate)
                        for d in range(3)], axis=-1)
    else:
        out = ndimage.gaussian_filter(a.astype(np.float64), sig, mode=mode, truncate=truncate)
    res = type(im)(im.grid(), im.memType()) if type(im) in (core.Image3D, core.Field3D) else \
        (core.Image3D if IsImage3D(im) else core.Field3D)(im.grid(), im.memType())
    CopyDataFromNPArr(res, out)
    return res


# ---------------------------------------------------------------------------
# frames

_frame_name = frame_name


def _save_png(arr2d, fname, rng, cmap):
    """Writes a 2-D array (rows = first axis) as a PNG with PyCAIO.SavePNGImage."""
    _io.SavePNGImage(ImFromNPArr(arr2d), fname, rng=rng, cmap=cmap)


def SaveSliceStack(im, outPattern, dim='z', rng=None, cmap='gray'):
    """Writes every slice of an Image3D (any memory type) along ``dim`` as a
    PNG frame. ``outPattern`` names the frames: 'frame%03d.png' or
    'frame{:03d}.png' (slice index), else '<root>NNNN<ext>'. The grey-level
    range is ``rng`` (min, max), by default the volume's range (the same
    for every frame). Rows of a frame are the first remaining axis (x for
    dim 'z'). Returns the list of file names.

    Args:
        im (Image3D): the volume, any memory type.
        outPattern (str): the frame names: 'frame%03d.png', 'frame{:03d}.png' or a name to number.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.
        rng (tuple of 2 floats, optional): the grey-level (min, max); default None = the volume's
            range.
        cmap (str): the colour map; default 'gray'.

    Returns:
        list of str: the file names.
    """
    if not IsImage3D(im):
        raise TypeError("SaveSliceStack expects an Image3D, got %s" % type(im).__name__)
    if not isinstance(outPattern, (str, os.PathLike)):
        raise TypeError("outPattern must be a file name pattern, got %r" % (outPattern,))
    outPattern = os.fspath(outPattern)
    d = _dim(dim)
    a = AsNPCopy(im)
    if a.size == 0:
        raise ValueError("SaveSliceStack: the image has no voxels")
    if rng is None:
        rng = (float(np.nanmin(a)), float(np.nanmax(a)))
    else:
        rng = tuple(float(v) for v in rng)
        if len(rng) != 2:
            raise ValueError("rng must be (min, max), got %r" % (rng,))
    names = []
    for i in range(a.shape[d]):
        fname = _frame_name(outPattern, i)
        _save_png(np.take(a, i, axis=d), fname, rng, cmap)
        names.append(fname)
    return names


def ReadVolWriteFrames(inFile, outPattern, dim='z', rng=None, cmap='gray'):
    """Reads a volume (a file name, read with PyCAIO.LoadImage or
    LoadITKImage, or an Image3D) and writes its slices along ``dim`` as PNG
    frames (see SaveSliceStack). Returns the list of file names.

    Args:
        inFile (str or Image3D): the volume file (or the image itself).
        outPattern (str): the frame names: 'frame%03d.png', 'frame{:03d}.png' or a name to number.
        dim (str or int): the axis: 'x', 'y', 'z' (or 0, 1, 2); default 'z'.
        rng (tuple of 2 floats, optional): the grey-level (min, max); default None = the volume's
            range.
        cmap (str): the colour map; default 'gray'.

    Returns:
        list of str: the file names.
    """
    im = inFile if IsImage3D(inFile) else _io.LoadImage(inFile)
    return SaveSliceStack(im, outPattern, dim=dim, rng=rng, cmap=cmap)


# ---------------------------------------------------------------------------
# misc

def Distribute(nEl, size, rank):
    """The indices of the elements 0..nEl-1 that MPI rank ``rank`` of
    ``size`` handles: a contiguous, balanced block (the first nEl % size
    ranks take one more), so that the blocks of all ranks cover every
    element exactly once. Returns a list of ints (possibly empty).

    Args:
        nEl (int): the number of elements.
        size (int): the number of ranks.
        rank (int): this rank, 0 <= rank < size.

    Returns:
        list of int: possibly empty.

    Example:
        ``Distribute(10, 3, 0) == [0, 1, 2, 3]``
    """
    for name, v in (("nEl", nEl), ("size", size), ("rank", rank)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError("%s must be an integer, got %r" % (name, v))
    nEl, size, rank = int(nEl), int(size), int(rank)
    if nEl < 0:
        raise ValueError("nEl must be >= 0, got %d" % nEl)
    if size < 1:
        raise ValueError("size must be >= 1, got %d" % size)
    if not 0 <= rank < size:
        raise ValueError("rank must be in 0..%d, got %d" % (size - 1, rank))
    base, extra = divmod(nEl, size)
    start = rank * base + min(rank, extra)
    return list(range(start, start + base + (1 if rank < extra else 0)))


def Mkdir_p(path):
    """Creates a directory and its parents; no error if it exists (mkdir -p).
    Raises OSError if the path exists and is not a directory.

    Args:
        path (str): the directory.
    """
    path = os.fspath(path)
    try:
        os.makedirs(path)
    except OSError as e:
        if e.errno == errno.EEXIST and os.path.isdir(path):
            return
        raise


def ReadPLUNC(fname):
    """The 4x4 homogeneous matrix (float64, column-vector convention:
    [[m00 m01 m02 tx], ..., [0 0 0 1]], as Aff3Dd.tolist()) of a PLUNC
    transform file. The file holds the transpose (rows 'm00 m10 m20 0', ...,
    'tx ty tz 1', as Aff3D.writePLUNCStyle writes). A missing, unreadable or
    malformed file raises IOError (OSError) naming the file.

    Args:
        fname (str): the PLUNC transform file.

    Returns:
        numpy.ndarray: 4x4 float64.
    """
    fname = os.fspath(fname)
    try:
        with open(fname, 'r') as f:
            text = f.read()
    except OSError as e:
        raise IOError(e.errno, "cannot read PLUNC file %r: %s" % (fname, e.strerror), fname) from None
    try:
        vals = [float(v) for v in text.split()]
    except ValueError as e:
        raise IOError("malformed PLUNC file %r: %s" % (fname, e)) from None
    if len(vals) != 16:
        raise IOError("malformed PLUNC file %r: expected 16 numbers, found %d" % (fname, len(vals)))
    m = np.array(vals, dtype=np.float64).reshape(4, 4).T
    if not np.all(np.isfinite(m)):
        raise IOError("malformed PLUNC file %r: non-finite values" % fname)
    if not np.array_equal(m[3], [0.0, 0.0, 0.0, 1.0]):
        raise IOError("malformed PLUNC file %r: the last column must be 0 0 0 1" % fname)
    return m
