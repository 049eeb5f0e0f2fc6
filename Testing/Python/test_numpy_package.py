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
    assert len(got) == len(shape)
    for d in range(len(shape)):
        if shape[d] == 1:
            assert not got[d].any()
            continue
        w = np.gradient(a, sp[d], axis=d, edge_order=1)
        assert np.allclose(got[d], w, rtol=1e-13, atol=1e-13), d
        inner = tuple(slice(1, -1) if e == d else slice(None) for e in range(len(shape)))
        for bc in (ca.BC_CLAMP, ca.BC_WRAP):
            assert np.allclose(pn.FiniteDiff(a, d, ca.DIFF_CENTRAL, bc, sp[d])[inner], w[inner],
                               rtol=1e-13, atol=1e-13)
    if want is not None:
        for g, w in zip(got, want):
            assert np.allclose(g, w, rtol=1e-13, atol=1e-13)


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
        want = ref.gradient(a, diff, bc, sp)
        assert all(np.allclose(g, w, atol=1e-13) for g, w in zip(got, want))


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
    gx, gy, gz = pn.Grad(a, sp=(0.5, 2.0, 4.0))
    assert np.allclose(gx, ref.fdiff(a, 0, sp=0.5)) and np.allclose(gz, ref.fdiff(a, 2, sp=4.0))
    assert np.allclose(gy, ref.fdiff(a, 1, sp=2.0))
    assert len(pn.Grad(a[:, :, 0])) == 2
    g = pn.Grad(a, sp=2.0)
    assert all(np.allclose(x, ref.fdiff(a, d, sp=2.0)) for d, x in enumerate(g))


# ---------------------------------------------------------------------------
# masked differences

@pytest.mark.parametrize("key", sorted(HAND_MASK), ids=lambda k: "-".join(k))
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_mask_hand_values(key, dim):
    diff, bc = key
    a, m = _along(F, dim), _along(MASK, dim)
    got = pn.FiniteDiffMask(a, m, dim, DIFFS[diff], BCS[bc], SP)
    assert np.allclose(got, _along(np.array(HAND_MASK[key]), dim), atol=1e-12), got
    assert np.array_equal(pn.GradMask(a, m, DIFFS[diff], BCS[bc], SP)[dim], got)


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
    h = np.einsum("ij,j...->i...", A, I) + np.array([2.0, -1.0, 0.5]).reshape(3, 1, 1, 1)
    # BC_APPROX (default): exact everywhere for an affine map
    assert np.allclose(pn.JacDet(h), np.linalg.det(A), atol=1e-12)
    assert np.allclose(pn.JacDet(list(h)), np.linalg.det(A), atol=1e-12)
    # other boundary conditions: exact in the interior
    for bc in ("CLAMP", "WRAP"):
        assert np.allclose(pn.JacDet(h, bc=bc)[1:-1, 1:-1, 1:-1], np.linalg.det(A), atol=1e-12)
    # 2-D: two components, or a single z plane, give the 2x2 determinant
    h2 = h[:2, :, :, :1]
    assert np.allclose(pn.JacDet(h2), np.linalg.det(A[:2, :2]), atol=1e-12)
    h3 = np.concatenate([h2, np.zeros_like(h2[:1])])
    assert np.allclose(pn.JacDet(h3), np.linalg.det(A[:2, :2]), atol=1e-12)
    assert np.allclose(pn.JacDet(h2[:, :, :, 0]), np.linalg.det(A[:2, :2]), atol=1e-12)


def test_jacdet_identity_and_reference():
    shape = (8, 9, 10)
    I = ref.identity(shape)
    assert np.allclose(pn.JacDet(I), 1.0)
    # with a physical spacing the identity's voxel coordinates give 1/voxel volume
    assert np.allclose(pn.JacDet(I, sp=(0.5, 2.0, 4.0)), 1.0 / 4.0)
    rng = np.random.default_rng(6)
    h = I + rng.normal(scale=0.2, size=I.shape)
    for diff, bc in itertools.product(DIFFS, BCS):
        want = ref.det3(ref.jacobian(h, diff, bc))
        assert np.allclose(pn.JacDet(h, diff, bc), want, atol=1e-12), (diff, bc)
    with pytest.raises(ValueError):
        pn.JacDet([I[0]])
    with pytest.raises(ValueError):
        pn.JacDet([I[0], I[1][:-1]])
