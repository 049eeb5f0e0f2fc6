"""NumPy finite differences with the conventions of PyCA.Core (legacy
``PyCA.Numpy.FiniteDiff``, extended to 3-D).

Arrays are indexed ``arr[x, y]`` or ``arr[x, y, z]`` (as ``Image3D.asnp()``);
a 2-D array is a grid with one z plane, and along an axis of extent 1 every
difference is 0. Results are float64. The layouts are the legacy's:
``FiniteDiff`` and ``FiniteDiffMask`` return an array of the input's shape;
``Grad`` and ``GradMask`` return ONE array with the components on the LAST
axis, (X, Y, 2) for a 2-D image and (X, Y, Z, 3) for a 3-D one; ``JacDet``
reads the field's components from the last axis ((X, Y, 2|3) or
(X, Y, Z, 3), as ``Grad`` returns and ``PyCA.Common.AsNPCopy`` of a Field3D
gives). Spacing: every difference along axis d is divided by the spacing of
axis d (``sp``: one number for all axes, or one per axis, e.g. a Vec3Df),
so ``Grad`` matches ``Gradient`` and ``JacDet`` matches ``JacDetH`` of a
Field3D on that grid.

Schemes (``diffType``) and boundary conditions (``bc``), spec 2.2:

* forward ``(f[i+1] - f[i]) / sp``, backward ``(f[i] - f[i-1]) / sp``,
  central ``(f[i+1] - f[i-1]) / (2 sp)``;
* ``BC_WRAP``: neighbours wrap around;
* ``BC_CLAMP``: neighbours are clamped (forward/backward give 0 at the far
  edge, central the one-sided difference divided by ``2 sp``);
* ``BC_APPROX``: central uses the one-sided difference divided by ``sp`` at
  the edges; forward/backward behave as ``BC_CLAMP``.

The masked forms follow ``GradientMask``: a neighbour outside the mask
(``mask == 0``) is replaced by the centre value (zero flux across the mask
border; with ``BC_APPROX`` a central difference becomes one-sided there and
is 0 when both neighbours are missing), the result is 0 where the centre is
outside the mask, and ``BC_WRAP`` is not supported.

``dim``, ``diffType`` and ``bc`` accept the PyCA.Core enumerators (integers:
``DIM_X`` 0 ... ``DIFF_CENTRAL`` 2 ... ``BC_CLAMP`` 2) or their names, with
or without the prefix and in any case (``'x'``, ``'DIM_Y'``, ``'central'``,
``'BC_WRAP'``).
"""
import numpy as np

__all__ = ["DIM_X", "DIM_Y", "DIM_Z", "DIFF_FORWARD", "DIFF_BACKWARD", "DIFF_CENTRAL",
           "BC_APPROX", "BC_WRAP", "BC_CLAMP",
           "FiniteDiff", "Grad", "JacDet", "FiniteDiffMask", "GradMask"]

# The integer values of PyCA.Core (spec 2.1).
DIM_X, DIM_Y, DIM_Z = 0, 1, 2
DIFF_FORWARD, DIFF_BACKWARD, DIFF_CENTRAL = 0, 1, 2
BC_APPROX, BC_WRAP, BC_CLAMP = 0, 1, 2

_DIMS = {"X": DIM_X, "Y": DIM_Y, "Z": DIM_Z}
_DIFFS = {"FORWARD": DIFF_FORWARD, "BACKWARD": DIFF_BACKWARD, "CENTRAL": DIFF_CENTRAL}
_BCS = {"APPROX": BC_APPROX, "WRAP": BC_WRAP, "CLAMP": BC_CLAMP}


def _enum(value, names, prefix, what):
    """The integer of an enumerator given as an int (or NumPy integer) or a name."""
    if isinstance(value, str):
        key = value.strip().upper()
        if key.startswith(prefix):
            key = key[len(prefix):]
        if key not in names:
            raise ValueError("unknown %s %r" % (what, value))
        return names[key]
    try:
        i = int(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be an integer or a name, not %r" % (what, value)) from None
    if i != value or i not in names.values():
        raise ValueError("unknown %s %r" % (what, value))
    return i


def _dim(dim):
    return _enum(dim, _DIMS, "DIM_", "DimT")


def _diff(diffType):
    return _enum(diffType, _DIFFS, "DIFF_", "DiffT")


def _bc(bc):
    return _enum(bc, _BCS, "BC_", "BoundaryCondT")


def _array(arr):
    a = np.asarray(arr, dtype=np.float64)
    if a.ndim < 1 or a.ndim > 3:
        raise ValueError("expected a 1-, 2- or 3-D array, got shape %s" % (a.shape,))
    return a


def _spacing(sp, n):
    """Per-axis spacing (length n) from a number or a sequence (a Vec3Df too)."""
    if hasattr(sp, "tolist") and not isinstance(sp, np.ndarray):
        sp = sp.tolist()
    s = np.atleast_1d(np.asarray(sp, dtype=np.float64))
    if s.size == 1:
        s = np.repeat(s, n)
    if s.size < n:
        raise ValueError("spacing %r has fewer than %d values" % (sp, n))
    return [float(v) for v in s[:n]]


def _neighbours(a, d, bc):
    """(f[i+1], f[i-1]) along axis d with the boundary rule bc (wrap or clamp)."""
    if bc == BC_WRAP:
        return np.roll(a, -1, axis=d), np.roll(a, 1, axis=d)
    n = a.shape[d]
    up = np.take(a, np.minimum(np.arange(n) + 1, n - 1), axis=d)
    dn = np.take(a, np.maximum(np.arange(n) - 1, 0), axis=d)
    return up, dn


def FiniteDiff(arr, dim, diffType=DIFF_CENTRAL, bc=BC_CLAMP, sp=1.0):
    """Difference of arr along dim with the scheme diffType and the boundary
    condition bc, divided by the spacing.

    Args:
        arr: the image, indexed [x, y] or [x, y, z] (a 2-D array is one z
            plane: its DIM_Z difference is 0).
        dim: DIM_X, DIM_Y or DIM_Z (or a name).
        diffType: DIFF_FORWARD, DIFF_BACKWARD or DIFF_CENTRAL (or a name).
        bc: BC_APPROX, BC_WRAP or BC_CLAMP (or a name).
        sp: the spacing along dim (a number, as the legacy), or the per-axis
            spacing (a sequence or a Vec3Df), of which dim's is used.

    Returns:
        numpy.ndarray: float64, arr's shape.
    """
    a = _array(arr)
    d, diff, b = _dim(dim), _diff(diffType), _bc(bc)
    s = _spacing(sp, 3)[d] if np.ndim(sp) > 0 or hasattr(sp, "tolist") else float(sp)
    if d >= a.ndim or a.shape[d] <= 1:
        return np.zeros_like(a)
    up, dn = _neighbours(a, d, b)
    if diff == DIFF_FORWARD:
        return (up - a) / s
    if diff == DIFF_BACKWARD:
        return (a - dn) / s
    r = (up - dn) / (2.0 * s)
    if b == BC_APPROX:
        r = np.moveaxis(r, d, 0)
        v = np.moveaxis(a, d, 0)
        r[0] = (v[1] - v[0]) / s
        r[-1] = (v[-1] - v[-2]) / s
        r = np.moveaxis(r, 0, d)
    return r


def _planar(a):
    """An (X, Y, 1) array as (X, Y): a 2-D image's gradient has two
    components (the legacy's Grad and GradMask)."""
    return a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a


def _stack_last(parts):
    """The components stacked on a new last axis (the legacy layout)."""
    return np.stack(parts, axis=-1)


def Grad(arr, diffType=DIFF_CENTRAL, bc=BC_CLAMP, sp=1.0):
    """The gradient of arr as ONE array with the components on the last axis
    (legacy layout): (X, Y, 2) for a 2-D (X, Y) array, (X, Y, Z, 3) for a
    3-D one with Z > 1. An (X, Y, 1) array (``Image3D.asnp()`` of a 2-D
    image) gives (X, Y, 2), the x and y derivatives, as the legacy's
    ``np.concatenate((np.atleast_3d(dx), np.atleast_3d(dy)), axis=2)``.
    Component d is ``FiniteDiff`` along axis d divided by the spacing of
    axis d.

    Args:
        arr: the image, indexed [x, y] or [x, y, z].
        diffType: DIFF_FORWARD, DIFF_BACKWARD or DIFF_CENTRAL (or a name).
        bc: BC_APPROX, BC_WRAP or BC_CLAMP (or a name).
        sp: the spacing: one number for every axis, or one per axis
            (a sequence or a Vec3Df).

    Returns:
        numpy.ndarray: float64, (X, Y, 2) for an (X, Y) or (X, Y, 1) array,
        ``arr.shape + (arr.ndim,)`` otherwise.
    """
    a = _planar(_array(arr))
    s = _spacing(sp, a.ndim)
    return _stack_last([FiniteDiff(a, d, diffType, bc, s[d]) for d in range(a.ndim)])


def _field(h):
    """(components, spatial ndim) of a field array with the components on
    its last axis: (X, Y, 2|3) is 2-D; (X, Y, Z, 2|3) is 3-D."""
    if isinstance(h, (list, tuple)) and h and all(isinstance(c, np.ndarray) for c in h):
        raise TypeError("JacDet expects one array with the components on the last axis "
                        "(legacy layout), e.g. numpy.stack(components, axis=-1)")
    a = np.asarray(h, dtype=np.float64)
    if a.ndim not in (3, 4) or a.shape[-1] not in (2, 3):
        raise ValueError("JacDet expects an (X, Y, 2|3) or (X, Y, Z, 2|3) array (components on "
                         "the last axis), got shape %s" % (a.shape,))
    flat = a.ndim == 3 or a.shape[2] == 1
    if not flat and a.shape[-1] != 3:
        raise ValueError("a 3-D field (Z > 1) needs 3 components, got shape %s" % (a.shape,))
    return a, flat


def JacDet(h, diffType=DIFF_CENTRAL, bc=BC_APPROX, sp=1.0):
    """Determinant of the Jacobian of the field h, whose components are on
    the LAST axis (legacy layout, as ``Grad`` returns and ``AsNPCopy`` of a
    Field3D gives): (X, Y, 2) or (X, Y, 3) is a 2-D field and gives the 2x2
    determinant of the x, y parts, shape (X, Y); (X, Y, Z, 3) gives the 3x3
    one, shape (X, Y, Z) (the 2x2 one when Z == 1, as ``JacDetH`` with
    sz == 1). Derivative d F_r / d x_c is ``FiniteDiff`` of component r
    along axis c divided by the spacing of axis c, as ``JacDetH``: the
    identity H-field gives 1 / voxel volume (1 with the default sp = 1).

    Args:
        h: the field, (X, Y, 2|3) or (X, Y, Z, 3) (or (X, Y, 1, 2)).
        diffType: DIFF_FORWARD, DIFF_BACKWARD or DIFF_CENTRAL (or a name).
        bc: BC_APPROX (default, as JacDetH), BC_WRAP or BC_CLAMP (or a name).
        sp: the spacing: one number for every axis, or one per axis
            (a sequence or a Vec3Df).

    Returns:
        numpy.ndarray: float64, the spatial shape of h.

    Raises:
        TypeError: for a list of component arrays (the layout is one array).
        ValueError: for any other shape.
    """
    a, flat = _field(h)
    n = 2 if flat else 3
    s = _spacing(sp, 3)
    J = [[FiniteDiff(a[..., r], c, diffType, bc, s[c]) for c in range(n)] for r in range(n)]
    if n == 2:
        return J[0][0] * J[1][1] - J[0][1] * J[1][0]
    return (J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1])
            - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0])
            + J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]))


def _mask_for(mask, a):
    """The mask as a boolean array of a's shape. As the legacy, a mask may
    differ from the array by trailing axes of extent 1 (a 2-D (X, Y) mask
    for an (X, Y, 1) array, or the reverse)."""
    m = np.asarray(mask)

    def core_shape(shape):
        shape = list(shape)
        while shape and shape[-1] == 1:
            shape.pop()
        return tuple(shape)

    if m.shape != a.shape:
        if core_shape(m.shape) != core_shape(a.shape):
            raise ValueError("mask shape %s differs from the array's %s" % (m.shape, a.shape))
        m = m.reshape(a.shape)
    return m != 0


def FiniteDiffMask(arr, mask, dim, diffType=DIFF_CENTRAL, bc=BC_CLAMP, sp=1.0):
    """Difference of arr along dim inside mask (mask != 0), GradientMask's
    rule: neighbours outside the mask are replaced by the centre value; 0
    where the centre is outside the mask.

    Args:
        arr: the image, indexed [x, y] or [x, y, z].
        mask: the mask, of arr's shape up to trailing axes of extent 1
            (a 2-D mask for an (X, Y, 1) array, as the legacy accepted).
        dim: DIM_X, DIM_Y or DIM_Z (or a name).
        diffType: DIFF_FORWARD, DIFF_BACKWARD or DIFF_CENTRAL (or a name).
        bc: BC_APPROX or BC_CLAMP (or a name); BC_WRAP raises ValueError.
        sp: the spacing along dim (a number), or one per axis (a sequence
            or a Vec3Df).

    Returns:
        numpy.ndarray: float64, arr's shape.
    """
    a = _array(arr)
    inside = _mask_for(mask, a)
    d, diff, b = _dim(dim), _diff(diffType), _bc(bc)
    if b == BC_WRAP:
        raise ValueError("BC_WRAP boundary condition unimplemented for masked gradient")
    s = _spacing(sp, 3)[d] if np.ndim(sp) > 0 or hasattr(sp, "tolist") else float(sp)
    if d >= a.ndim or a.shape[d] <= 1:
        return np.zeros_like(a)
    up, dn = _neighbours(a, d, BC_CLAMP)
    mup, mdn = _neighbours(inside, d, BC_CLAMP)
    if b == BC_APPROX:
        # a neighbour beyond the edge is missing (not the clamped centre)
        n = a.shape[d]
        pos = np.arange(n).reshape([-1 if k == d else 1 for k in range(a.ndim)])
        mup = mup & (pos < n - 1)
        mdn = mdn & (pos > 0)
    fp = np.where(mup, up, a)
    fm = np.where(mdn, dn, a)
    if diff == DIFF_FORWARD:
        r = (fp - a) / s
    elif diff == DIFF_BACKWARD:
        r = (a - fm) / s
    elif b == BC_APPROX:
        r = np.where(mup & mdn, (fp - fm) / (2.0 * s),
                     np.where(mup, (fp - a) / s, np.where(mdn, (a - fm) / s, 0.0)))
    else:
        r = (fp - fm) / (2.0 * s)
    return np.where(inside, r, 0.0)


def GradMask(arr, mask, diffType=DIFF_CENTRAL, bc=BC_CLAMP, sp=1.0):
    """The masked gradient: one ``FiniteDiffMask`` per axis of arr, stacked
    on the last axis as ``Grad`` ((X, Y, 2) for an (X, Y) or (X, Y, 1)
    array, (X, Y, Z, 3) for a 3-D one).

    Args:
        arr: the image, indexed [x, y] or [x, y, z].
        mask: the mask (see FiniteDiffMask).
        diffType: DIFF_FORWARD, DIFF_BACKWARD or DIFF_CENTRAL (or a name).
        bc: BC_APPROX or BC_CLAMP (or a name); BC_WRAP raises ValueError.
        sp: the spacing: one number for every axis, or one per axis.

    Returns:
        numpy.ndarray: float64, (X, Y, 2) for an (X, Y) or (X, Y, 1) array,
        ``arr.shape + (arr.ndim,)`` otherwise.
    """
    a = _planar(_array(arr))
    s = _spacing(sp, a.ndim)
    return _stack_last([FiniteDiffMask(a, mask, d, diffType, bc, s[d]) for d in range(a.ndim)])
