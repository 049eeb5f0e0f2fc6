"""NumPy conversions of PyCA.Core images and fields, shared by PyCACommon
and PyCAIO (private; every name is re-exported by PyCACommon and PyCA.Common).

This is the lowest module of PyCA.Common: it imports only NumPy and
PyCA.Core, so PyCAIO (file IO) uses it without importing PyCACommon, and
PyCACommon (which uses PyCAIO for PNG frames and loading) sits above both.
"""
import numpy as np

import PyCA.Core as core

__all__ = ['ImFromNPArr', 'FieldFromNPArr', 'AsNPCopy', 'CopyDataFromNPArr',
           'IsImage3D', 'IsField3D']


def IsImage3D(obj):
    """True for an Image3D (managed or not).

    Args:
        obj: any object.
    """
    return isinstance(obj, core.Image3D)


def IsField3D(obj):
    """True for a Field3D (managed or not).

    Args:
        obj: any object.
    """
    return isinstance(obj, core.Field3D)


def as_vec3f(v, default):
    """A new Vec3Df from a Vec3Df or 3 numbers (shared by the modules of
    PyCA.Common; not in ``__all__``).

    Args:
        v (Vec3Df, 3 numbers or None): the value; None: ``default``.
        default (Vec3Df or 3 numbers): the value for None.

    Returns:
        Vec3Df: a new vector (a copy of a given Vec3Df).
    """
    if v is None:
        v = default
    if isinstance(v, core.Vec3Df):
        return v.copy()
    x, y, z = v
    return core.Vec3Df(float(x), float(y), float(z))


def _grid(shape, sp, orig):
    size = core.Vec3Di(*[int(s) for s in shape])
    return core.GridInfo(size, as_vec3f(sp, (1.0, 1.0, 1.0)), as_vec3f(orig, (0.0, 0.0, 0.0)))


def ImFromNPArr(arr, mType=core.MEM_HOST, sp=None, orig=None):
    """A new Image3D holding a copy of ``arr``.

    A 2-D (X, Y) array becomes X x Y x 1 (``np.atleast_3d``, as in the
    legacy; a 1-D array of n values therefore becomes 1 x n x 1).

    Args:
        arr: the values, indexed [x, y(, z)].
        mType: the memory type of the new image (MEM_HOST by default).
        sp: the spacing (a Vec3Df or 3 numbers; default 1, 1, 1).
        orig: the origin (a Vec3Df or 3 numbers; default 0, 0, 0).
    """
    a = np.atleast_3d(np.asarray(arr, dtype=np.float32))
    if a.ndim != 3:
        raise ValueError("ImFromNPArr expects a 1-, 2- or 3-D array, got shape %s" % (a.shape,))
    im = core.Image3D(_grid(a.shape, sp, orig), core.MEM_HOST)
    im.asnp()[...] = a
    im.toType(mType)
    return im


def FieldFromNPArr(arr, mType=core.MEM_HOST, sp=None, orig=None):
    """A new Field3D from an X x Y x Z x 3, X x Y x 3 or X x Y x 2 array
    (in the last case the z component is 0).

    Args:
        arr: the values, components on the last axis.
        mType: the memory type of the new field (MEM_HOST by default).
        sp: the spacing (a Vec3Df or 3 numbers; default 1, 1, 1).
        orig: the origin (a Vec3Df or 3 numbers; default 0, 0, 0).
    """
    a = np.asarray(arr, dtype=np.float32)
    if a.ndim == 3 and a.shape[2] in (2, 3):
        a = a[:, :, np.newaxis, :]
    if a.ndim != 4 or a.shape[3] not in (2, 3):
        raise ValueError("FieldFromNPArr expects X x Y x Z x 3, X x Y x 3 or X x Y x 2, got %s" % (a.shape,))
    f = core.Field3D(_grid(a.shape[:3], sp, orig), core.MEM_HOST)
    views = f.asnp()
    for d in range(3):
        views[d][...] = a[..., d] if d < a.shape[3] else 0.0
    f.toType(mType)
    return f


def AsNPCopy(obj):
    """A NumPy copy of an Image3D (float32, X x Y x Z) or Field3D (float64,
    X x Y x Z x 3, as in the legacy), from any memory type. The object is
    left in its memory type.

    Args:
        obj: an Image3D or Field3D (any memory type).
    """
    if IsImage3D(obj):
        return core._host_array(obj)
    if IsField3D(obj):
        return core._host_array(obj).astype(np.float64)
    raise TypeError("AsNPCopy expects an Image3D or Field3D, got %s" % type(obj).__name__)


def CopyDataFromNPArr(out, arr):
    """Copies ``arr`` into an existing Image3D or Field3D of the same size
    (any memory type); raises ValueError if the sizes differ.

    Args:
        out: the Image3D or Field3D to fill.
        arr: the values (X x Y x Z, or X x Y x Z x 2|3 for a field).
    """
    a = np.asarray(arr, dtype=np.float32)
    size = tuple(out.size())
    if IsImage3D(out):
        a = np.atleast_3d(a)
        if a.shape != size:
            raise ValueError("array shape %s does not match image size %s" % (a.shape, size))
    elif IsField3D(out):
        if a.ndim == 3 and a.shape[2] in (2, 3) and size[2] == 1:
            a = a[:, :, np.newaxis, :]
        if a.shape[:3] != size or a.ndim != 4 or a.shape[3] not in (2, 3):
            raise ValueError("array shape %s does not match field size %s x 3" % (a.shape, size))
        if a.shape[3] == 2:
            a = np.concatenate([a, np.zeros(a.shape[:3] + (1,), np.float32)], axis=3)
    else:
        raise TypeError("CopyDataFromNPArr expects an Image3D or Field3D, got %s" % type(out).__name__)
    core._fill_from_array(out, a)
