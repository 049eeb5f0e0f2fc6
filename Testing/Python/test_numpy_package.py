"""PyCA.Numpy.FiniteDiff (legacy spec 5.4, extended to 3-D): hand-computed
values of every scheme and boundary condition, numpy.gradient where the
two coincide (central differences with one-sided edges = BC_APPROX), the
masked rule of GradientMask (IFOpers.h), the Jacobian determinant, the
enumerator arguments, and agreement with the independent numpy_ref.fdiff.
"""
import itertools
import sys

import numpy as np
import pytest

import PyCA.Common as common
import PyCA.Core as ca
import PyCA.Numpy as pn
import numpy_ref as ref

F = np.array([1.0, 4.0, 9.0, 16.0, 25.0])
SP = 2.0

#: (diff, bc) -> the difference of F with spacing SP, computed by hand
HAND = {
    ("FORWARD", "CLAMP"): [1.5, 2.5, 3.5, 4.5, 0.0],
    ("FORWARD", "APPROX"): [1.5, 2.5, 3.5, 4.5, 0.0],
    ("FORWARD", "WRAP"): [1.5, 2.5, 3.5, 4.5, -12.0],
    ("BACKWARD", "CLAMP"): [0.0, 1.5, 2.5, 3.5, 4.5],
    ("BACKWARD", "APPROX"): [0.0, 1.5, 2.5, 3.5, 4.5],
    ("BACKWARD", "WRAP"): [-12.0, 1.5, 2.5, 3.5, 4.5],
    ("CENTRAL", "CLAMP"): [0.75, 2.0, 3.0, 4.0, 2.25],
    ("CENTRAL", "APPROX"): [1.5, 2.0, 3.0, 4.0, 4.5],
    ("CENTRAL", "WRAP"): [-5.25, 2.0, 3.0, 4.0, -3.75],
}

#: the same with mask [1, 1, 0, 1, 1] (neighbours outside -> centre value)
MASK = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
HAND_MASK = {
    ("FORWARD", "CLAMP"): [1.5, 0.0, 0.0, 4.5, 0.0],
    ("FORWARD", "APPROX"): [1.5, 0.0, 0.0, 4.5, 0.0],
    ("BACKWARD", "CLAMP"): [0.0, 1.5, 0.0, 0.0, 4.5],
    ("BACKWARD", "APPROX"): [0.0, 1.5, 0.0, 0.0, 4.5],
    ("CENTRAL", "CLAMP"): [0.75, 0.75, 0.0, 2.25, 2.25],
    ("CENTRAL", "APPROX"): [1.5, 1.5, 0.0, 4.5, 4.5],
}

DIFFS = {"FORWARD": ca.DIFF_FORWARD, "BACKWARD": ca.DIFF_BACKWARD, "CENTRAL": ca.DIFF_CENTRAL}
BCS = {"APPROX": ca.BC_APPROX, "WRAP": ca.BC_WRAP, "CLAMP": ca.BC_CLAMP}


def _along(v, d):
    """The 1-D profile v laid along axis d of a 3-D array (other extents 2, 3)."""
    shape = [2, 3, 4]
    shape[d] = len(v)
    s = [1, 1, 1]
    s[d] = len(v)
    return np.broadcast_to(np.reshape(v, s), shape).copy()


def test_constants_match_core():
    for name in ("DIM_X", "DIM_Y", "DIM_Z", "DIFF_FORWARD", "DIFF_BACKWARD", "DIFF_CENTRAL",
                 "BC_APPROX", "BC_WRAP", "BC_CLAMP"):
        assert getattr(pn, name) == getattr(ca, name), name
    # the legacy import forms: the module is shadowed in the package by the
    # function of the same name, but `from PyCA.Numpy.FiniteDiff import ...` works
    from PyCA.Numpy.FiniteDiff import FiniteDiff, FiniteDiffMask, Grad, GradMask, JacDet
    mod = sys.modules["PyCA.Numpy.FiniteDiff"]
    for fn in (FiniteDiff, Grad, JacDet, FiniteDiffMask, GradMask):
        assert getattr(pn, fn.__name__) is fn is getattr(mod, fn.__name__)
    assert sorted(mod.__all__) == sorted(n for n in mod.__all__ if hasattr(pn, n))


@pytest.mark.parametrize("key", sorted(HAND), ids=lambda k: "-".join(k))
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_hand_values(key, dim):
    diff, bc = key
    a = _along(F, dim)
    got = pn.FiniteDiff(a, dim, DIFFS[diff], BCS[bc], SP)
    want = _along(np.array(HAND[key]), dim)
    assert got.dtype == np.float64 and got.shape == a.shape
    assert np.allclose(got, want, rtol=0, atol=1e-12), (got, want)
    # the per-axis spacing form picks the spacing of dim
    sp3 = [7.0, 7.0, 7.0]
    sp3[dim] = SP
    assert np.array_equal(pn.FiniteDiff(a, dim, DIFFS[diff], BCS[bc], sp3), got)
    # differences along the other (constant) axes are 0
    for e in range(3):
        if e != dim:
            assert not pn.FiniteDiff(a, e, DIFFS[diff], BCS[bc], SP).any()


@pytest.mark.parametrize("key", sorted(HAND), ids=lambda k: "-".join(k))
def test_hand_values_2d_array(key):
    diff, bc = key
    a = np.stack([F, 2 * F, 3 * F], axis=1)  # (5, 3): x, y
    got = pn.FiniteDiff(a, pn.DIM_X, diff, bc, SP)
    want = np.stack([np.array(HAND[key]) * k for k in (1, 2, 3)], axis=1)
    assert np.allclose(got, want, atol=1e-12)
    # a 2-D array is a single z plane: its z difference is 0 (the legacy raised)
    assert np.array_equal(pn.FiniteDiff(a, pn.DIM_Z, diff, bc, SP), np.zeros_like(a))
    a3 = a[:, :, None]
    assert np.array_equal(pn.FiniteDiff(a3, 2, diff, bc, SP), np.zeros_like(a3))
    assert np.array_equal(pn.FiniteDiff(a3, 0, diff, bc, SP)[:, :, 0], got)


def test_extent_one_and_two():
    a = np.array([[[3.0]], [[5.0]]])  # (2, 1, 1)
    for diff, bc in itertools.product(DIFFS.values(), BCS.values()):
        assert not pn.FiniteDiff(a, 1, diff, bc).any()
    assert np.allclose(pn.FiniteDiff(a, 0, ca.DIFF_CENTRAL, ca.BC_APPROX)[:, 0, 0], [2.0, 2.0])
    assert np.allclose(pn.FiniteDiff(a, 0, ca.DIFF_CENTRAL, ca.BC_CLAMP)[:, 0, 0], [1.0, 1.0])
    assert np.allclose(pn.FiniteDiff(a, 0, ca.DIFF_CENTRAL, ca.BC_WRAP)[:, 0, 0], [0.0, 0.0])


@pytest.mark.parametrize("shape", [(11, 9, 7), (13, 10, 1), (12, 8)])
def test_numpy_gradient(shape):
    """Central differences with one-sided edges (BC_APPROX) are numpy.gradient
    (edge_order=1); with BC_CLAMP / BC_WRAP the interior still is."""
    rng = np.random.default_rng(17)
    a = rng.normal(size=shape)
    sp = (0.7, 1.3, 2.1)[:len(shape)]
    want = np.gradient(a, *sp, edge_order=1) if all(s > 1 for s in shape) else None
    got = pn.Grad(a, ca.DIFF_CENTRAL, ca.BC_APPROX, sp)
    planar = len(shape) == 3 and shape[2] == 1  # (X, Y, 1): the legacy's (X, Y, 2)
    assert got.shape == (shape[:2] + (2,) if planar else shape + (len(shape),))
    if planar:
        got = got[:, :, None, :]  # compare on the (X, Y, 1) grid
    for d in range(len(shape)):
        if shape[d] == 1:
            continue
        w = np.gradient(a, sp[d], axis=d, edge_order=1)
        assert np.allclose(got[..., d], w, rtol=1e-13, atol=1e-13), d
        inner = tuple(slice(1, -1) if e == d else slice(None) for e in range(len(shape)))
        for bc in (ca.BC_CLAMP, ca.BC_WRAP):
            assert np.allclose(pn.FiniteDiff(a, d, ca.DIFF_CENTRAL, bc, sp[d])[inner], w[inner],
                               rtol=1e-13, atol=1e-13)
    if want is not None:
        assert np.allclose(got, np.stack(want, axis=-1), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("shape", [(9, 8, 7), (10, 6, 1)])
def test_agrees_with_numpy_ref(shape):
    rng = np.random.default_rng(3)
    a = rng.normal(size=shape)
    sp = (0.7, 1.3, 2.1)
    for d, diff, bc in itertools.product(range(3), DIFFS, BCS):
        got = pn.FiniteDiff(a, d, DIFFS[diff], BCS[bc], sp[d])
        assert np.allclose(got, ref.fdiff(a, d, diff, bc, sp[d]), rtol=1e-13, atol=1e-13), (d, diff, bc)
    for diff, bc in itertools.product(DIFFS, BCS):
        got = pn.Grad(a, diff, bc, sp)
        want = np.moveaxis(ref.gradient(a, diff, bc, sp), 0, -1)
        if shape[2] == 1:  # (X, Y, 1): the x and y derivatives, (X, Y, 2), as the legacy
            assert got.shape == shape[:2] + (2,)
            want = want[:, :, 0, :2]
        else:
            assert got.shape == shape + (3,)
        assert np.allclose(got, want, atol=1e-13)


def test_enum_forms():
    a = np.random.default_rng(1).normal(size=(6, 5, 4))
    base = pn.FiniteDiff(a, ca.DIM_Y, ca.DIFF_BACKWARD, ca.BC_WRAP, 1.5)
    for dim in (1, "y", "Y", "DIM_Y", "dim_y", np.int64(1)):
        for diff in (1, "backward", "DIFF_BACKWARD", ca.DIFF_BACKWARD):
            for bc in (1, "wrap", "BC_WRAP", ca.BC_WRAP):
                assert np.array_equal(pn.FiniteDiff(a, dim, diff, bc, 1.5), base), (dim, diff, bc)
    # defaults: central, clamp, spacing 1
    assert np.array_equal(pn.FiniteDiff(a, 0), ref.fdiff(a, 0, "CENTRAL", "CLAMP", 1.0))
    # a Vec3Df spacing
    v = pn.FiniteDiff(a, 2, sp=ca.Vec3Df(1.0, 2.0, 0.5))
    assert np.allclose(v, ref.fdiff(a, 2, "CENTRAL", "CLAMP", 0.5))
    for bad in (3, -1, "w", "DIM_W", 1.5):
        with pytest.raises(ValueError):
            pn.FiniteDiff(a, bad)
    for kw in (dict(diffType=3), dict(diffType="sideways"), dict(bc=7), dict(bc="BC_MIRROR")):
        with pytest.raises(ValueError):
            pn.FiniteDiff(a, 0, **kw)
    for bad in (None, [0], object()):
        with pytest.raises(TypeError):
            pn.FiniteDiff(a, bad)
    with pytest.raises(ValueError):
        pn.FiniteDiff(np.zeros((2, 2, 2, 2)), 0)


def test_grad_shapes_and_spacing():
    a = np.random.default_rng(2).normal(size=(7, 6, 5))
    g = pn.Grad(a, sp=(0.5, 2.0, 4.0))
    assert g.shape == (7, 6, 5, 3)
    gx, gy, gz = g[..., 0], g[..., 1], g[..., 2]
    assert np.allclose(gx, ref.fdiff(a, 0, sp=0.5)) and np.allclose(gz, ref.fdiff(a, 2, sp=4.0))
    assert np.allclose(gy, ref.fdiff(a, 1, sp=2.0))
    assert pn.Grad(a[:, :, 0]).shape == (7, 6, 2)
    # (X, Y, 1): the x and y derivatives, as the legacy (np.atleast_3d + concatenate)
    assert pn.Grad(a[:, :, :1]).shape == (7, 6, 2)
    assert np.array_equal(pn.Grad(a[:, :, :1]), pn.Grad(a[:, :, 0]))
    g = pn.Grad(a, sp=2.0)
    assert all(np.allclose(g[..., d], ref.fdiff(a, d, sp=2.0)) for d in range(3))
    assert np.allclose(pn.Grad(a, sp=ca.Vec3Df(0.5, 2.0, 4.0)), pn.Grad(a, sp=[0.5, 2.0, 4.0]))


# ---------------------------------------------------------------------------
# masked differences

@pytest.mark.parametrize("key", sorted(HAND_MASK), ids=lambda k: "-".join(k))
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_mask_hand_values(key, dim):
    diff, bc = key
    a, m = _along(F, dim), _along(MASK, dim)
    got = pn.FiniteDiffMask(a, m, dim, DIFFS[diff], BCS[bc], SP)
    assert np.allclose(got, _along(np.array(HAND_MASK[key]), dim), atol=1e-12), got
    assert np.array_equal(pn.GradMask(a, m, DIFFS[diff], BCS[bc], SP)[..., dim], got)


def test_mask_all_inside_is_unmasked():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(8, 7, 6))
    ones = np.ones_like(a)
    for d, diff, bc in itertools.product(range(3), DIFFS, ("APPROX", "CLAMP")):
        assert np.allclose(pn.FiniteDiffMask(a, ones, d, diff, bc, 0.7),
                           ref.fdiff(a, d, diff, bc, 0.7), atol=1e-13), (d, diff, bc)


def test_mask_rule_on_random_mask():
    """Outside the mask 0; inside, a difference only sees masked neighbours:
    values outside the mask never matter."""
    rng = np.random.default_rng(5)
    a = rng.normal(size=(9, 8, 7))
    m = (rng.uniform(size=a.shape) > 0.3).astype(np.float32)
    b = np.where(m != 0, a, rng.normal(size=a.shape) * 100)
    for d, diff, bc in itertools.product(range(3), DIFFS, ("APPROX", "CLAMP")):
        ga = pn.FiniteDiffMask(a, m, d, diff, bc)
        assert np.array_equal(ga, pn.FiniteDiffMask(b, m, d, diff, bc)), (d, diff, bc)
        assert not ga[m == 0].any()


def test_mask_errors():
    a = np.zeros((4, 4, 4))
    with pytest.raises(ValueError, match="BC_WRAP boundary condition unimplemented for masked gradient"):
        pn.FiniteDiffMask(a, a, 0, ca.DIFF_CENTRAL, ca.BC_WRAP)
    with pytest.raises(ValueError, match="BC_WRAP"):
        pn.GradMask(a, a, bc="wrap")
    with pytest.raises(ValueError):
        pn.FiniteDiffMask(a, np.zeros((4, 4, 3)), 0)


# ---------------------------------------------------------------------------
# Jacobian determinant

def test_jacdet_affine():
    shape = (9, 8, 7)
    I = ref.identity(shape)
    A = np.array([[1.2, 0.3, -0.1], [0.05, 0.9, 0.2], [-0.3, 0.1, 1.1]])
    h = np.einsum("ij,j...->...i", A, I) + np.array([2.0, -1.0, 0.5])  # (X, Y, Z, 3)
    # BC_APPROX (default): exact everywhere for an affine map
    assert np.allclose(pn.JacDet(h), np.linalg.det(A), atol=1e-12)
    # other boundary conditions: exact in the interior
    for bc in ("CLAMP", "WRAP"):
        assert np.allclose(pn.JacDet(h, bc=bc)[1:-1, 1:-1, 1:-1], np.linalg.det(A), atol=1e-12)
    # 2-D: (X, Y, 2) or (X, Y, 3), or a single z plane, give the 2x2 determinant
    h2 = h[:, :, 0, :2]
    d2 = np.linalg.det(A[:2, :2])
    assert pn.JacDet(h2).shape == (9, 8)
    assert np.allclose(pn.JacDet(h2), d2, atol=1e-12)
    assert np.allclose(pn.JacDet(h[:, :, 0, :]), d2, atol=1e-12)
    assert pn.JacDet(h[:, :, :1, :]).shape == (9, 8, 1)
    assert np.allclose(pn.JacDet(h[:, :, :1, :]), d2, atol=1e-12)
    assert np.allclose(pn.JacDet(h[:, :, :1, :2]), d2, atol=1e-12)


def test_jacdet_identity_and_reference():
    shape = (8, 9, 10)
    I = np.moveaxis(ref.identity(shape), 0, -1)
    assert np.allclose(pn.JacDet(I), 1.0)
    # with a physical spacing the identity's voxel coordinates give 1/voxel volume
    assert np.allclose(pn.JacDet(I, sp=(0.5, 2.0, 4.0)), 1.0 / 4.0)
    assert np.allclose(pn.JacDet(I[:, :, 0, :2], sp=(0.5, 4.0, 3.0)), 1.0 / 2.0)
    rng = np.random.default_rng(6)
    h = I + rng.normal(scale=0.2, size=I.shape)
    for diff, bc in itertools.product(DIFFS, BCS):
        want = ref.det3(ref.jacobian(np.moveaxis(h, -1, 0), diff, bc))
        assert np.allclose(pn.JacDet(h, diff, bc), want, atol=1e-12), (diff, bc)
    # the components are on the last axis: a list of component arrays (the
    # old first-axis form) is refused instead of being misread
    with pytest.raises(TypeError, match="last axis"):
        pn.JacDet([I[..., 0], I[..., 1]])
    for bad in (I[..., :1], I[:, :, 0, 0], np.zeros((4, 4, 4, 2)), np.zeros((2, 3, 4, 5, 3))):
        with pytest.raises(ValueError):
            pn.JacDet(bad)


# ---------------------------------------------------------------------------
# legacy layouts and the legacy unit-test patterns (issue 17, item 1): the
# legacy formulas of spec 2.2 written out voxel by voxel here (independent of
# PyCA.Numpy and numpy_ref), anisotropic spacing, 2-D and 3-D, every scheme
# and boundary condition; PyCA.Core compared with PyCA.Numpy as the legacy
# unit tests did (AsNPCopy, squeeze to 2-D, the first two components).

LEG_SP = (0.5, 1.75, 3.0)  # anisotropic


def _legacy_1d(f, diff, bc, sp):
    """The legacy difference of the 1-D profile f (a Python loop)."""
    n = len(f)
    out = np.zeros(n)
    if n == 1:
        return out

    def at(j):
        return f[j % n] if bc == "WRAP" else f[min(max(j, 0), n - 1)]
    for i in range(n):
        if diff == "FORWARD":
            out[i] = (at(i + 1) - f[i]) / sp
        elif diff == "BACKWARD":
            out[i] = (f[i] - at(i - 1)) / sp
        elif bc == "APPROX" and i == 0:
            out[i] = (f[1] - f[0]) / sp
        elif bc == "APPROX" and i == n - 1:
            out[i] = (f[n - 1] - f[n - 2]) / sp
        else:
            out[i] = (at(i + 1) - at(i - 1)) / (2.0 * sp)
    return out


def _legacy_mask_1d(f, m, diff, bc, sp):
    """The masked legacy difference of profile f with mask m: a neighbour
    outside the mask (or beyond the edge) counts as the centre value; with
    BC_APPROX a central difference is one-sided where one is missing."""
    n = len(f)
    out = np.zeros(n)
    for i in range(n):
        if m[i] == 0:
            continue
        up = i + 1 < n and m[i + 1] != 0
        dn = i >= 1 and m[i - 1] != 0
        fu = f[i + 1] if up else f[i]
        fd = f[i - 1] if dn else f[i]
        if diff == "FORWARD":
            out[i] = (fu - f[i]) / sp
        elif diff == "BACKWARD":
            out[i] = (f[i] - fd) / sp
        elif bc == "APPROX" and not (up and dn):
            out[i] = (fu - f[i]) / sp if up else ((f[i] - fd) / sp if dn else 0.0)
        else:
            out[i] = (fu - fd) / (2.0 * sp)
    return out


def _legacy_along(a, d, fn):
    """fn applied to every 1-D profile of a along axis d."""
    a = np.moveaxis(np.asarray(a, np.float64), d, -1)
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape[:-1]):
        out[idx] = fn(a[idx])
    return np.moveaxis(out, -1, d)


def _legacy_grad(a, diff, bc, sp):
    return np.stack([_legacy_along(a, d, lambda f: _legacy_1d(f, diff, bc, sp[d]))
                     for d in range(a.ndim)], axis=-1)


def _legacy_grad_mask(a, m, diff, bc, sp):
    am = np.stack([a, m], axis=-1)
    outs = []
    for d in range(a.ndim):
        prof = np.moveaxis(am, d, -2)
        out = np.zeros(prof.shape[:-1])
        for idx in np.ndindex(prof.shape[:-2]):
            out[idx] = _legacy_mask_1d(prof[idx][:, 0], prof[idx][:, 1], diff, bc, sp[d])
        outs.append(np.moveaxis(out, -1, d))
    return np.stack(outs, axis=-1)


def _legacy_jacdet(h, diff, bc, sp):
    """det of d h_r / d x_c (divided by the spacing), components on h's last
    axis; 2x2 for a 2-D field (or one z plane), else 3x3."""
    spatial = h.shape[:-1]
    flat = len(spatial) == 2 or spatial[2] == 1
    n = 2 if flat else 3
    J = np.empty(spatial + (n, n))
    for r in range(n):
        g = _legacy_grad(h[..., r], diff, bc, sp)
        J[..., r, :] = g[..., :n]
    return np.linalg.det(J)


def _core_grid(shape, sp=LEG_SP):
    size = tuple(shape) + (1,) * (3 - len(shape))
    return ca.GridInfo(ca.Vec3Di(*size), ca.Vec3Df(*sp), ca.Vec3Df(0.0, 0.0, 0.0))


LEG_CASES = [(d, b) for d in DIFFS for b in BCS]


@pytest.mark.parametrize("diff,bc", LEG_CASES, ids=["%s-%s" % c for c in LEG_CASES])
@pytest.mark.parametrize("shape", [(7, 6), (6, 5, 4)], ids=["2d", "3d"])
def test_legacy_layout_finite_diff_and_grad(shape, diff, bc):
    rng = np.random.default_rng(21)
    a = rng.normal(size=shape)
    sp = LEG_SP[:len(shape)]
    want = _legacy_grad(a, diff, bc, sp)
    for d in range(len(shape)):
        got = pn.FiniteDiff(a, d, DIFFS[diff], BCS[bc], sp[d])  # the legacy: a scalar spacing
        assert got.shape == shape
        assert np.allclose(got, want[..., d], rtol=1e-13, atol=1e-13), d
    g = pn.Grad(a, DIFFS[diff], BCS[bc], sp)
    assert g.shape == shape + (len(shape),)  # (X, Y, 2) / (X, Y, Z, 3)
    assert np.allclose(g, want, rtol=1e-13, atol=1e-13)
    assert np.allclose(pn.Grad(a, DIFFS[diff], BCS[bc], ca.Vec3Df(*LEG_SP)), want, atol=1e-13)


@pytest.mark.parametrize("diff,bc", LEG_CASES, ids=["%s-%s" % c for c in LEG_CASES])
@pytest.mark.parametrize("shape", [(7, 6), (6, 5, 4)], ids=["2d", "3d"])
def test_legacy_core_gradient(shape, diff, bc):
    """ca.Gradient against PyCA.Numpy.Grad as the legacy test compared them."""
    rng = np.random.default_rng(22)
    a = rng.normal(size=shape).astype(np.float32)
    g = _core_grid(shape)
    hIm = common.ImFromNPArr(a, sp=g.spacing())
    hG = ca.Field3D(g, ca.MEM_HOST)
    ca.Gradient(hG, hIm, DIFFS[diff], BCS[bc])
    imArr = common.AsNPCopy(hIm)
    gArr = common.AsNPCopy(hG)  # (X, Y, Z, 3)
    if len(shape) == 2:
        npG = pn.Grad(np.squeeze(imArr), DIFFS[diff], BCS[bc], LEG_SP)
        assert npG.shape == shape + (2,)
        diffArr = npG - np.squeeze(gArr)[:, :, 0:2]
    else:
        npG = pn.Grad(imArr, DIFFS[diff], BCS[bc], LEG_SP)
        diffArr = npG - gArr
    assert np.max(np.abs(diffArr)) < 1e-5 * max(1.0, np.max(np.abs(npG)))
    # and both are the legacy formula
    assert np.allclose(gArr[..., :len(shape)].reshape(npG.shape), _legacy_grad(a, diff, bc, LEG_SP[:len(shape)]),
                       rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("diff,bc", [c for c in LEG_CASES if c[1] != "WRAP"],
                         ids=["%s-%s" % c for c in LEG_CASES if c[1] != "WRAP"])
@pytest.mark.parametrize("shape", [(7, 6), (6, 5, 4)], ids=["2d", "3d"])
def test_legacy_mask_and_core_gradient_mask(shape, diff, bc):
    rng = np.random.default_rng(23)
    a = rng.normal(size=shape)
    m = (rng.uniform(size=shape) > 0.3).astype(np.float64)
    sp = LEG_SP[:len(shape)]
    want = _legacy_grad_mask(a, m, diff, bc, sp)
    got = pn.GradMask(a, m, DIFFS[diff], BCS[bc], sp)
    assert got.shape == shape + (len(shape),)
    assert np.allclose(got, want, rtol=1e-13, atol=1e-13)
    for d in range(len(shape)):
        assert np.allclose(pn.FiniteDiffMask(a, m, d, DIFFS[diff], BCS[bc], sp[d]), want[..., d], atol=1e-13)
    g = _core_grid(shape)
    hIm = common.ImFromNPArr(a, sp=g.spacing())
    hMask = common.ImFromNPArr(m, sp=g.spacing())
    hG = ca.Field3D(g, ca.MEM_HOST)
    ca.GradientMask(hG, hIm, hMask, DIFFS[diff], BCS[bc])
    gArr = common.AsNPCopy(hG)
    imArr = common.AsNPCopy(hIm)  # (X, Y, 1) in 2-D
    if len(shape) == 2:
        # the legacy pattern: the (X, Y, 1) image array with the 2-D mask
        for d in range(2):
            fd = pn.FiniteDiffMask(imArr, m, d, DIFFS[diff], BCS[bc], sp[d])
            assert fd.shape == imArr.shape
            assert np.allclose(fd[:, :, 0], want[..., d], rtol=1e-5, atol=1e-5)
            assert np.allclose(np.squeeze(gArr)[:, :, d], fd[:, :, 0], rtol=1e-5, atol=1e-5)
        npG = pn.GradMask(imArr, m, DIFFS[diff], BCS[bc], LEG_SP)
        assert npG.shape == shape + (2,)  # the legacy's (X, Y, 2)
        assert np.allclose(npG, np.squeeze(gArr)[:, :, :2], rtol=1e-5, atol=1e-5)
        # and the reverse: an (X, Y, 1) mask for a 2-D array
        assert np.allclose(pn.GradMask(a, m[:, :, None], DIFFS[diff], BCS[bc], sp), want, atol=1e-13)
    else:
        assert np.allclose(pn.GradMask(imArr, m, DIFFS[diff], BCS[bc], LEG_SP), gArr, rtol=1e-5, atol=1e-5)


def test_mask_shape_mismatch():
    a = np.zeros((5, 4, 1))
    for bad in (np.zeros((4, 5)), np.zeros((5, 4, 2)), np.zeros(5), np.zeros((5, 4, 1, 1, 2))):
        with pytest.raises(ValueError, match="mask shape"):
            pn.FiniteDiffMask(a, bad, 0)
    assert pn.FiniteDiffMask(a, np.ones((5, 4, 1, 1)), 0).shape == a.shape


def _smooth_hfield(shape, sp, seed):
    """An H-field (voxel coordinates, components last) near the identity."""
    rng = np.random.default_rng(seed)
    I = np.moveaxis(ref.identity(shape + (1,) * (3 - len(shape))), 0, -1)
    x = [np.arange(n) for n in I.shape[:3]]
    X = np.meshgrid(*x, indexing="ij")
    bump = np.sin(2 * np.pi * X[0] / I.shape[0]) * np.cos(2 * np.pi * X[1] / I.shape[1])
    h = I.copy()
    for c in range(3):
        if I.shape[c] > 1:
            h[..., c] += rng.uniform(0.2, 0.6) * bump + rng.normal(scale=0.05, size=bump.shape)
    return h


@pytest.mark.parametrize("diff,bc", LEG_CASES, ids=["%s-%s" % c for c in LEG_CASES])
@pytest.mark.parametrize("shape", [(8, 7), (7, 6, 5)], ids=["2d", "3d"])
def test_legacy_jacdet_and_core_jacdeth(shape, diff, bc):
    """JacDet reads the components from the last axis and divides the
    derivatives by the spacing (legacy definition); ca.JacDetH against it,
    compared the legacy way (AsNPCopy of the field, squeezed in 2-D)."""
    h = _smooth_hfield(shape, LEG_SP, 24)  # (X, Y, Z, 3) with Z = 1 in 2-D
    want = _legacy_jacdet(h[:, :, 0, :] if len(shape) == 2 else h, diff, bc, LEG_SP)
    if len(shape) == 2:
        got = pn.JacDet(h[:, :, 0, :2], DIFFS[diff], BCS[bc], LEG_SP)  # (X, Y, 2)
        assert got.shape == shape
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    got = pn.JacDet(h, DIFFS[diff], BCS[bc], LEG_SP)
    assert got.shape == h.shape[:3]
    assert np.allclose(got.reshape(want.shape), want, rtol=1e-12, atol=1e-12)
    g = _core_grid(shape)
    hF = common.FieldFromNPArr(h, sp=g.spacing())
    jd = ca.Image3D(g, ca.MEM_HOST)
    ca.JacDetH(jd, hF, DIFFS[diff], BCS[bc])
    hArr = common.AsNPCopy(hF)
    jdArr = common.AsNPCopy(jd)
    if len(shape) == 2:
        npJd = pn.JacDet(np.squeeze(hArr), DIFFS[diff], BCS[bc], LEG_SP)
        core = np.squeeze(jdArr)
    else:
        npJd = pn.JacDet(hArr, DIFFS[diff], BCS[bc], LEG_SP)
        core = jdArr
    # JacDetH divides by the spacing (legacy): 1 / voxel volume for the identity
    assert np.allclose(core, npJd, rtol=1e-4, atol=1e-4 * np.max(np.abs(npJd)))


# ---------------------------------------------------------------------------
# an (X, Y, 1) array (Image3D.asnp() of a 2-D image): (X, Y, 2), as the legacy


def _hand_central_clamp(a, sx, sy):
    """Central differences with BC_CLAMP written out: at an edge the missing
    neighbour is the edge value."""
    X, Y = a.shape
    dx = np.zeros_like(a)
    dy = np.zeros_like(a)
    for i in range(X):
        for j in range(Y):
            dx[i, j] = (a[min(i + 1, X - 1), j] - a[max(i - 1, 0), j]) / (2 * sx)
            dy[i, j] = (a[i, min(j + 1, Y - 1)] - a[i, max(j - 1, 0)]) / (2 * sy)
    return dx, dy


def test_grad_of_x_y_1_array_is_x_y_2():
    a = np.random.default_rng(31).normal(size=(31, 33))
    dx, dy = _hand_central_clamp(a, 1.5, 2.1)
    for arr in (a, a[:, :, None]):
        g = pn.Grad(arr, ca.DIFF_CENTRAL, ca.BC_CLAMP, ca.Vec3Df(1.5, 2.1, 1.0))
        assert g.shape == (31, 33, 2)
        assert np.allclose(g[..., 0], dx, atol=1e-12) and np.allclose(g[..., 1], dy, atol=1e-12)
    # the forward scheme too
    g = pn.Grad(a[:, :, None], ca.DIFF_FORWARD, ca.BC_CLAMP, 1.0)
    fx = np.concatenate([a[1:] - a[:-1], np.zeros((1, 33))], axis=0)
    fy = np.concatenate([a[:, 1:] - a[:, :-1], np.zeros((31, 1))], axis=1)
    assert np.allclose(g[..., 0], fx) and np.allclose(g[..., 1], fy)
    # a real 3-D array keeps (X, Y, Z, 3)
    assert pn.Grad(np.zeros((4, 5, 2))).shape == (4, 5, 2, 3)


def test_gradmask_of_x_y_1_array_is_x_y_2():
    rng = np.random.default_rng(32)
    a = rng.normal(size=(9, 8))
    m = (rng.uniform(size=(9, 8)) > 0.3).astype(float)
    # GradientMask's rule written out (central, BC_CLAMP): a neighbour outside
    # the mask (or beyond the edge) counts as the centre value; 0 outside
    want = np.zeros((9, 8, 2))
    for i in range(9):
        for j in range(8):
            if not m[i, j]:
                continue
            for d, (di, dj) in enumerate(((1, 0), (0, 1))):
                def at(k):
                    ii, jj = min(max(i + k * di, 0), 8), min(max(j + k * dj, 0), 7)
                    return a[ii, jj] if m[ii, jj] else a[i, j]
                want[i, j, d] = (at(1) - at(-1)) / 2.0
    for arr, mask in ((a, m), (a[:, :, None], m), (a[:, :, None], m[:, :, None])):
        g = pn.GradMask(arr, mask, ca.DIFF_CENTRAL, ca.BC_CLAMP, 1.0)
        assert g.shape == (9, 8, 2)
        assert np.allclose(g, want, atol=1e-12)
    assert pn.GradMask(np.zeros((4, 5, 2)), np.ones((4, 5, 2))).shape == (4, 5, 2, 3)
