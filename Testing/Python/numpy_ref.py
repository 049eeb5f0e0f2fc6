"""NumPy/SciPy reference implementations of the sampling, splatting and
differential conventions of spec 2.2, written independently of the C++
kernels, for the tests. Arrays are indexed arr[x, y, z] (Image3D.asnp());
fields are arrays of shape (3, X, Y, Z). Computations are in float64.

Background strategies are named as in the library ('CLAMP', 'WRAP', 'ZERO',
'PARTIAL_ZERO', 'ID', 'PARTIAL_ID'). For fields the all-or-nothing
strategies (ZERO, ID) count only the corners a sample uses with a non-zero
weight (the fixed 2-D behaviour, see Documentation/LegacyDifferences.md).
"""
import itertools

import numpy as np
from scipy import ndimage

BG_NAMES = {0: "PARTIAL_ID", 1: "ID", 2: "PARTIAL_ZERO", 3: "ZERO", 4: "CLAMP", 5: "WRAP"}


def bg_name(bg):
    """'CLAMP' etc. from a name, 'BACKGROUND_STRATEGY_CLAMP' or the integer."""
    if isinstance(bg, str):
        return bg.replace("BACKGROUND_STRATEGY_", "")
    return BG_NAMES[int(bg)]


def identity(shape):
    """The identity H-field on a grid of the given size: (3, X, Y, Z)."""
    return np.array(np.meshgrid(*[np.arange(s, dtype=np.float64) for s in shape], indexing="ij"))


def _corners(p, shape):
    """For points p (3, ...): yields (indices list, weight, in-range mask,
    unclamped indices) of the 8 trilinear corners."""
    f = np.floor(p).astype(np.int64)
    t = p - f
    for c in itertools.product((0, 1), repeat=3):
        idx = [f[d] + c[d] for d in range(3)]
        w = np.prod([np.where(c[d], t[d], 1 - t[d]) for d in range(3)], axis=0)
        ok = np.ones(p.shape[1:], bool)
        for i, s in zip(idx, shape):
            ok &= (i >= 0) & (i < s)
        yield idx, w, ok, c, t


def interp_image(img, p, order=1, bg="CLAMP"):
    """Image sample at points p (3, ...): order 0 (nearest, half away from
    zero), 1 (trilinear, scipy) or 3 (cubic convolution a = -1)."""
    bg = bg_name(bg)
    img = np.asarray(img, np.float64)
    p = np.asarray(p, np.float64)
    if order == 1:
        mode = {"CLAMP": "nearest", "WRAP": "grid-wrap", "ZERO": "grid-constant",
                "PARTIAL_ZERO": "grid-constant"}[bg]
        return ndimage.map_coordinates(img, p, order=1, mode=mode, cval=0.0)
    if order == 0:
        idx = [np.where(q >= 0, np.floor(q + 0.5), -np.floor(-q + 0.5)).astype(np.int64) for q in p]
        return _gather(img, idx, bg)
    if order == 3:
        out = np.zeros(p.shape[1:])
        f = np.floor(p).astype(np.int64)
        for o in itertools.product(range(-1, 3), repeat=3):
            idx = [f[d] + o[d] for d in range(3)]
            w = np.prod([_cubic_kernel(p[d] - idx[d]) for d in range(3)], axis=0)
            out += w * _gather(img, idx, bg)
        return out
    raise ValueError(order)


def _cubic_kernel(s, a=-1.0):
    s = np.abs(s)
    return np.where(s <= 1, (a + 2) * s ** 3 - (a + 3) * s ** 2 + 1,
                    np.where(s < 2, a * s ** 3 - 5 * a * s ** 2 + 8 * a * s - 4 * a, 0.0))


def _gather(img, idx, bg):
    shape = img.shape
    if bg == "CLAMP":
        return img[tuple(np.clip(i, 0, s - 1) for i, s in zip(idx, shape))]
    if bg == "WRAP":
        return img[tuple(np.mod(i, s) for i, s in zip(idx, shape))]
    ok = np.ones(np.shape(idx[0]), bool)
    for i, s in zip(idx, shape):
        ok &= (i >= 0) & (i < s)
    v = img[tuple(np.clip(i, 0, s - 1) for i, s in zip(idx, shape))]
    return np.where(ok, v, 0.0)


def interp_field(F, p, bg="PARTIAL_ID"):
    """Trilinear sample of the field F (3, X, Y, Z) at points p (3, ...)."""
    bg = bg_name(bg)
    F = np.asarray(F, np.float64)
    p = np.asarray(p, np.float64)
    shape = F.shape[1:]
    out = np.zeros((3,) + p.shape[1:])
    used_outside = np.zeros(p.shape[1:], bool)
    for idx, w, ok, c, t in _corners(p, shape):
        # a corner with zero weight (t == 0 along an axis where c == 1) is not used
        used = np.ones(p.shape[1:], bool)
        for d in range(3):
            if c[d]:
                used &= t[d] != 0
        used_outside |= used & ~ok
        if bg == "WRAP":
            j = tuple(np.mod(i, s) for i, s in zip(idx, shape))
        else:
            j = tuple(np.clip(i, 0, s - 1) for i, s in zip(idx, shape))
        for d in range(3):
            v = F[d][j]
            if bg in ("ZERO", "PARTIAL_ZERO"):
                v = np.where(ok, v, 0.0)
            elif bg in ("ID", "PARTIAL_ID"):
                v = np.where(ok, v, idx[d])
            out[d] += w * v
    if bg == "ZERO":
        out = np.where(used_outside, 0.0, out)
    elif bg == "ID":
        out = np.where(used_outside, p, out)
    return out


def splat(values, p, shape, weights=False):
    """Adjoint of trilinear interpolation: values (...) pushed to points p
    (3, ...) of a grid of the given shape; corners outside are dropped."""
    values = np.asarray(values, np.float64)
    out = np.zeros(shape)
    W = np.zeros(shape)
    for idx, w, ok, _, _ in _corners(np.asarray(p, np.float64), shape):
        np.add.at(out, tuple(i[ok] for i in idx), (w * values)[ok])
        np.add.at(W, tuple(i[ok] for i in idx), w[ok])
    return (out, W) if weights else out


def splat_normalized(values, p, shape):
    o, W = splat(values, p, shape, weights=True)
    return np.where(W > 0, o / np.where(W > 0, W, 1), 0.0)


# ---- finite differences (spec 2.2) ----------------------------------------------

def _shift(a, d, k, bc):
    n = a.shape[d]
    idx = np.arange(n) + k
    idx = np.mod(idx, n) if bc == "WRAP" else np.clip(idx, 0, n - 1)
    return np.take(a, idx, axis=d)


def fdiff(a, d, diff="CENTRAL", bc="CLAMP", sp=1.0):
    """Finite difference of a along axis d: diff FORWARD/BACKWARD/CENTRAL,
    bc APPROX/WRAP/CLAMP (names with or without the DIFF_/BC_ prefix)."""
    diff = diff.replace("DIFF_", "")
    bc = bc.replace("BC_", "")
    a = np.asarray(a, np.float64)
    n = a.shape[d]
    if n == 1:
        return np.zeros_like(a)
    if diff == "FORWARD":
        return (_shift(a, d, 1, bc) - a) / sp
    if diff == "BACKWARD":
        return (a - _shift(a, d, -1, bc)) / sp
    r = (_shift(a, d, 1, bc) - _shift(a, d, -1, bc)) / (2 * sp)
    if bc == "APPROX":
        r = np.moveaxis(r.copy(), d, 0)
        b = np.moveaxis(a, d, 0)
        r[0] = (b[1] - b[0]) / sp
        r[-1] = (b[-1] - b[-2]) / sp
        r = np.moveaxis(r, 0, d)
    return r


def gradient(a, diff="CENTRAL", bc="CLAMP", sp=(1.0, 1.0, 1.0)):
    return np.stack([fdiff(a, d, diff, bc, sp[d]) for d in range(3)])


def jacobian(F, diff="CENTRAL", bc="CLAMP", sp=(1.0, 1.0, 1.0)):
    """J[r, c] = d F_r / d x_c, shape (3, 3, X, Y, Z)."""
    return np.array([[fdiff(F[r], c, diff, bc, sp[c]) for c in range(3)] for r in range(3)])


def det3(J):
    return (J[0, 0] * (J[1, 1] * J[2, 2] - J[1, 2] * J[2, 1])
            - J[0, 1] * (J[1, 0] * J[2, 2] - J[1, 2] * J[2, 0])
            + J[0, 2] * (J[1, 0] * J[2, 1] - J[1, 1] * J[2, 0]))


def hfield_jacobian(g):
    """Central/clamp voxel Jacobian of an H-field, identity along flat axes."""
    J = jacobian(g)
    for d in range(3):
        if g.shape[1 + d] == 1:
            J[d, d] = 1.0
    return J


def coad(g, m, bg="PARTIAL_ZERO"):
    """|Dg| Dg^T (m o g)."""
    J = hfield_jacobian(g)
    mg = interp_field(m, g, bg)
    return np.einsum("ji...,j...->i...", J, mg) * det3(J)


def ad(g, X):
    """Splat of |Dg| Dg X through g."""
    J = hfield_jacobian(g)
    v = np.einsum("ij...,j...->i...", J, X) * det3(J)
    return np.stack([splat(c, g, g.shape[1:]) for c in v])
