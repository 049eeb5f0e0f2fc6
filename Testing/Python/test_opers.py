"""The operators implemented so far (Copy, SetMem, MulC/MulC_I, Add/Add_I,
Sum/Sum2/SumComp) against NumPy, on a 3-D and a 2-D grid with anisotropic
spacing, for every usable memory type."""
import re

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, gpu_only, grid, image_from, to_np, usable_mem_types

GRIDS = {
    "3d": dict(size=(17, 19, 23), sp=(1.5, 2.1, 0.7), org=(1.0, -2.0, 0.5)),
    "2d": dict(size=(31, 33, 1), sp=(0.8, 1.25, 1.0), org=(0.0, 0.0, 0.0)),
}
SEEDS = {"3d": 11, "2d": 12}


def mem_id(m):
    return {ca.MEM_HOST: "host", ca.MEM_HOST_PINNED: "pinned", ca.MEM_DEVICE: "device"}[m]


class Case:
    """Random inputs for one grid and one memory type, with their NumPy
    counterparts (float32)."""

    def __init__(self, tag, mem):
        p = GRIDS[tag]
        self.shape = p["size"]
        self.g = grid(*p["size"], sp=p["sp"], org=p["org"])
        self.mem = mem
        rng = np.random.default_rng(SEEDS[tag])
        self.rng = rng
        self.a = rng.uniform(-1, 1, self.shape).astype(np.float32)
        self.b = rng.uniform(-1, 1, self.shape).astype(np.float32)
        m = (rng.uniform(size=self.shape) < 0.55).astype(np.float32)
        # nonzero mask values other than 1 count as "in the mask" too
        m[m == 1] = rng.choice(np.float32([1, 1, 1, 0.5, -2]), size=int(m.sum()))
        self.mask = m
        self.sel = m != 0
        self.fa = [rng.uniform(-1, 1, self.shape).astype(np.float32) for _ in range(3)]
        self.fb = [rng.uniform(-1, 1, self.shape).astype(np.float32) for _ in range(3)]
        self.sentinel = rng.uniform(5, 6, self.shape).astype(np.float32)

    def im(self, arr):
        return image_from(arr, self.g, self.mem)

    def fld(self, arrs):
        return field_from(arrs, self.g, self.mem)


@pytest.fixture(params=[(t, m) for t in GRIDS for m in usable_mem_types],
                ids=lambda p: "%s-%s" % (p[0], mem_id(p[1])))
def case(request):
    return Case(*request.param)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def close_field(f, wants):
    for got, want in zip(to_np(f), wants):
        close(got, want)


# ---------------------------------------------------------------------------
# Copy

def test_copy_image(case):
    src = case.im(case.a)
    out = case.im(case.sentinel)
    ca.Copy(out, src)
    assert np.array_equal(to_np(out), case.a)
    assert out.grid() == case.g


def test_copy_masked(case):
    out = case.im(case.sentinel)
    ca.Copy(out, case.im(case.a), case.im(case.mask))
    want = np.where(case.sel, case.a, case.sentinel)
    assert np.array_equal(to_np(out), want)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_copy_field_component_to_image(case, dim):
    out = case.im(case.sentinel)
    ca.Copy(out, case.fld(case.fa), dim)
    assert np.array_equal(to_np(out), case.fa[dim])


@pytest.mark.parametrize("dim", [ca.DIM_X, ca.DIM_Y, ca.DIM_Z])
def test_copy_image_to_field_component(case, dim):
    f = case.fld(case.fa)
    ca.Copy(f, case.im(case.a), dim)
    want = [case.a if d == dim else case.fa[d] for d in range(3)]
    for got, w in zip(to_np(f), want):
        assert np.array_equal(got, w)


def test_copy_field(case):
    out = case.fld([case.sentinel] * 3)
    ca.Copy(out, case.fld(case.fa))
    for got, w in zip(to_np(out), case.fa):
        assert np.array_equal(got, w)


def test_copy_bad_dim(case):
    with pytest.raises(RuntimeError) as ei:
        ca.Copy(case.im(case.a), case.fld(case.fa), 3)
    assert str(ei.value).endswith(": unknown DimT")
    with pytest.raises(RuntimeError) as ei:
        ca.Copy(case.fld(case.fa), case.im(case.a), -1)
    assert str(ei.value).endswith(": unknown DimT")


# ---------------------------------------------------------------------------
# SetMem

@pytest.mark.parametrize("c", [0.0, 2.75, -1e-3, 3e38])
def test_setmem_image(case, c):
    out = case.im(case.sentinel)
    ca.SetMem(out, c)
    assert np.array_equal(to_np(out), np.full(case.shape, c, np.float32))


def test_setmem_image_masked(case):
    out = case.im(case.sentinel)
    ca.SetMem(out, -4.5, case.im(case.mask))
    assert np.array_equal(to_np(out), np.where(case.sel, np.float32(-4.5), case.sentinel))


def test_setmem_field_float(case):
    f = case.fld(case.fa)
    ca.SetMem(f, 1.25)
    for got in to_np(f):
        assert np.all(got == 1.25)


def test_setmem_field_vec(case):
    f = case.fld(case.fa)
    ca.SetMem(f, ca.Vec3Df(1.5, -2.0, 0.25))
    for got, c in zip(to_np(f), (1.5, -2.0, 0.25)):
        assert np.all(got == np.float32(c))


def test_setmem_field_masked(case):
    f = case.fld(case.fa)
    ca.SetMem(f, ca.Vec3Df(1.5, -2.0, 0.25), case.im(case.mask))
    for got, c, orig in zip(to_np(f), (1.5, -2.0, 0.25), case.fa):
        assert np.array_equal(got, np.where(case.sel, np.float32(c), orig))
    f = case.fld(case.fa)
    ca.SetMem(f, 3.0, case.im(case.mask))
    for got, orig in zip(to_np(f), case.fa):
        assert np.array_equal(got, np.where(case.sel, np.float32(3), orig))


# ---------------------------------------------------------------------------
# MulC / MulC_I

@pytest.mark.parametrize("c", [2.5, -0.3, 0.0])
def test_mulc_image(case, c):
    src = case.im(case.a)
    out = case.im(case.sentinel)
    ca.MulC(out, src, c)
    close(to_np(out), case.a * np.float32(c))
    assert np.array_equal(to_np(src), case.a)  # input untouched
    ca.MulC_I(src, c)
    close(to_np(src), case.a * np.float32(c))


def test_mulc_image_masked(case):
    out = case.im(case.sentinel)
    ca.MulC(out, case.im(case.a), 3.0, case.im(case.mask))
    close(to_np(out), np.where(case.sel, case.a * np.float32(3), case.sentinel))
    io = case.im(case.a)
    ca.MulC_I(io, -2.0, case.im(case.mask))
    close(to_np(io), np.where(case.sel, case.a * np.float32(-2), case.a))


def test_mulc_field(case):
    src = case.fld(case.fa)
    out = case.fld([case.sentinel] * 3)
    ca.MulC(out, src, 1.5)
    close_field(out, [x * np.float32(1.5) for x in case.fa])
    c = (2.0, -0.5, 0.125)
    ca.MulC(out, src, ca.Vec3Df(*c))
    close_field(out, [x * np.float32(k) for x, k in zip(case.fa, c)])
    ca.MulC_I(src, ca.Vec3Df(*c))
    close_field(src, [x * np.float32(k) for x, k in zip(case.fa, c)])
    ca.MulC_I(src, -1.0)
    close_field(src, [-x * np.float32(k) for x, k in zip(case.fa, c)])


def test_mulc_inplace_equals_out_of_place(case):
    a1, a2 = case.im(case.a), case.im(case.a)
    out = case.im(case.sentinel)
    ca.MulC(out, a1, 0.7)
    ca.MulC_I(a2, 0.7)
    assert np.array_equal(to_np(out), to_np(a2))
    ca.MulC(a1, a1, 0.7)  # output aliasing the input
    assert np.array_equal(to_np(a1), to_np(a2))


# ---------------------------------------------------------------------------
# Add / Add_I

def test_add_images(case):
    a, b = case.im(case.a), case.im(case.b)
    out = case.im(case.sentinel)
    ca.Add(out, a, b)
    close(to_np(out), case.a + case.b)
    assert np.array_equal(to_np(a), case.a) and np.array_equal(to_np(b), case.b)
    ca.Add_I(a, b)
    assert np.array_equal(to_np(a), to_np(out))


def test_add_masked(case):
    out = case.im(case.sentinel)
    ca.Add(out, case.im(case.a), case.im(case.b), case.im(case.mask))
    close(to_np(out), np.where(case.sel, case.a + case.b, case.sentinel))
    io = case.im(case.a)
    ca.Add_I(io, case.im(case.b), case.im(case.mask))
    close(to_np(io), np.where(case.sel, case.a + case.b, case.a))


def test_add_constant(case):
    out = case.im(case.sentinel)
    ca.Add(out, case.im(case.a), 0.75)
    close(to_np(out), case.a + np.float32(0.75))
    io = case.im(case.a)
    ca.Add_I(io, -1.5)
    close(to_np(io), case.a - np.float32(1.5))
    out = case.im(case.sentinel)
    ca.Add(out, case.im(case.a), 2.0, case.im(case.mask))
    close(to_np(out), np.where(case.sel, case.a + np.float32(2), case.sentinel))
    io = case.im(case.a)
    ca.Add_I(io, 2.0, case.im(case.mask))
    close(to_np(io), np.where(case.sel, case.a + np.float32(2), case.a))


def test_add_aliasing(case):
    a = case.im(case.a)
    ca.Add(a, a, a)
    close(to_np(a), case.a * 2)
    b = case.im(case.b)
    ca.Add_I(b, b)
    close(to_np(b), case.b * 2)


def test_add_fields(case):
    fa, fb = case.fld(case.fa), case.fld(case.fb)
    out = case.fld([case.sentinel] * 3)
    ca.Add(out, fa, fb)
    close_field(out, [x + y for x, y in zip(case.fa, case.fb)])
    ca.Add_I(fa, fb)
    close_field(fa, [x + y for x, y in zip(case.fa, case.fb)])


def test_add_field_image_broadcast(case):
    fa, im = case.fld(case.fa), case.im(case.a)
    out = case.fld([case.sentinel] * 3)
    ca.Add(out, fa, im)
    close_field(out, [x + case.a for x in case.fa])
    ca.Add_I(fa, im)
    close_field(fa, [x + case.a for x in case.fa])
    assert np.array_equal(to_np(im), case.a)


# ---------------------------------------------------------------------------
# reductions

def test_sum_sum2_image(case):
    im = case.im(case.a)
    s, s2 = ca.Sum(im), ca.Sum2(im)
    assert isinstance(s, float) and isinstance(s2, float)
    a64 = case.a.astype(np.float64)
    assert s == pytest.approx(a64.sum(), rel=1e-9, abs=1e-9)
    assert s2 == pytest.approx((a64 ** 2).sum(), rel=1e-9)
    assert ca.Sum(im, False) == s
    assert ca.Sum(im, True) == s  # update has no prior value in Python


def test_sum_sum2_field(case):
    f = case.fld(case.fa)
    f64 = [x.astype(np.float64) for x in case.fa]
    assert ca.Sum(f) == pytest.approx(sum(x.sum() for x in f64), rel=1e-9, abs=1e-9)
    assert ca.Sum2(f) == pytest.approx(sum((x ** 2).sum() for x in f64), rel=1e-9)
    comp = ca.SumComp(f)
    assert isinstance(comp, ca.Vec3Df)
    want = [x.sum() for x in f64]
    assert comp.tolist() == pytest.approx(want, rel=1e-6, abs=1e-5)
    out = ca.Vec3Df()
    ca.Sum(out, f)
    assert out == comp


def test_sum_large_image_double_accumulation():
    n = 256
    rng = np.random.default_rng(2024)
    arr = rng.uniform(0, 1, (n, n, n)).astype(np.float32)
    im = image_from(arr)
    ref = arr.sum(dtype=np.float64)
    assert ca.Sum(im) == pytest.approx(ref, rel=1e-6)
    ref2 = np.square(arr, dtype=np.float64).sum()
    assert ca.Sum2(im) == pytest.approx(ref2, rel=1e-6)
    signed = (arr - np.float32(0.5))
    im.asnp()[...] = signed
    ref_s = signed.sum(dtype=np.float64)
    assert abs(ca.Sum(im) - ref_s) <= 1e-6 * np.abs(signed).sum(dtype=np.float64)


@gpu_only
def test_sum_large_image_device():
    n = 256
    rng = np.random.default_rng(2025)
    arr = rng.uniform(0, 1, (n, n, n)).astype(np.float32)
    im = image_from(arr, mem=ca.MEM_DEVICE)
    assert ca.Sum(im) == pytest.approx(arr.sum(dtype=np.float64), rel=1e-6)
    assert ca.Sum2(im) == pytest.approx(np.square(arr, dtype=np.float64).sum(), rel=1e-6)


# ---------------------------------------------------------------------------
# numbers from NumPy

def test_numpy_scalars_as_arguments():
    g = grid(4, 3, 2)
    im = ca.Image3D(g, ca.MEM_HOST)
    ca.SetMem(im, np.float32(2.0))
    ca.MulC_I(im, np.float64(1.5))
    ca.Add_I(im, np.int64(1))
    assert np.all(im.asnp() == 4.0)
    arr = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    ca.MulC_I(im, arr.max())  # np.float32
    assert np.all(im.asnp() == 92.0)
    f = ca.Field3D(g, ca.MEM_HOST)
    ca.SetMem(f, ca.Vec3Df(np.float32(1), np.float32(2), np.float32(3)))
    assert ca.SumComp(f) == ca.Vec3Df(24, 48, 72)
    assert im.get(np.int64(1), np.int32(2), np.intp(1)) == 92.0
    ca.Copy(im, f, np.int64(2))
    assert np.all(im.asnp() == 3.0)


# ---------------------------------------------------------------------------
# argument checks

SIG_PREFIX = {
    "Add": "PyCA::Opers::Add(PyCA::Image3D &,PyCA::Image3D const &,PyCA::Image3D const &):\n",
    "Add_mask": "PyCA::Opers::Add(PyCA::Image3D &,PyCA::Image3D const &,PyCA::Image3D const &,"
                "PyCA::Image3D const &):\n",
    "AddC": "PyCA::Opers::Add(PyCA::Image3D &,PyCA::Image3D const &,float const &):\n",
    "Add_I": "PyCA::Opers::Add_I(PyCA::Image3D &,PyCA::Image3D const &):\n",
    "MulC": "PyCA::Opers::MulC(PyCA::Image3D &,PyCA::Image3D const &,float const &):\n",
    "MulC_I_mask": "PyCA::Opers::MulC_I(PyCA::Image3D &,float const &,PyCA::Image3D const &):\n",
    "Copy": "PyCA::Opers::Copy(PyCA::Image3D &,PyCA::Image3D const &):\n",
    "Copy_mask": "PyCA::Opers::Copy(PyCA::Image3D &,PyCA::Image3D const &,PyCA::Image3D const &):\n",
    "Copy_from_field": "PyCA::Opers::Copy(PyCA::Image3D &,PyCA::Field3D const &,int):\n",
    "Copy_to_field": "PyCA::Opers::Copy(PyCA::Field3D &,PyCA::Image3D const &,int):\n",
    "SetMem_mask": "PyCA::Opers::SetMem(PyCA::Image3D &,float const &,PyCA::Image3D const &):\n",
    "SetMem_fld_mask": "PyCA::Opers::SetMem(PyCA::Field3D &,PyCA::Vec3Df const &,PyCA::Image3D const &):\n",
    "Add_fld": "PyCA::Opers::Add(PyCA::Field3D &,PyCA::Field3D const &,PyCA::Field3D const &):\n",
    "Add_fld_im": "PyCA::Opers::Add(PyCA::Field3D &,PyCA::Field3D const &,PyCA::Image3D const &):\n",
    "Add_I_fld_im": "PyCA::Opers::Add_I(PyCA::Field3D &,PyCA::Image3D const &):\n",
    "MulC_fld_vec": "PyCA::Opers::MulC(PyCA::Field3D &,PyCA::Field3D const &,PyCA::Vec3Df const &):\n",
    "Copy_fld": "PyCA::Opers::Copy(PyCA::Field3D &,PyCA::Field3D const &):\n",
}

MISMATCHED = {
    "size": grid(17, 19, 22, sp=(1.5, 2.1, 0.7), org=(1, -2, 0.5)),
    "spacing": grid(17, 19, 23, sp=(1.5, 2.1, 0.71), org=(1, -2, 0.5)),
    "origin": grid(17, 19, 23, sp=(1.5, 2.1, 0.7), org=(1, -2, 0.6)),
}


def calls(a, b, fa, fb):
    """name -> call with a's / fa's grid differing from b's / fb's."""
    v = ca.Vec3Df(1, 2, 3)
    return {
        "Add": lambda: ca.Add(a, a, b),
        "Add_mask": lambda: ca.Add(a, a, a, b),
        "AddC": lambda: ca.Add(a, b, 1.0),
        "Add_I": lambda: ca.Add_I(a, b),
        "MulC": lambda: ca.MulC(a, b, 2.0),
        "MulC_I_mask": lambda: ca.MulC_I(a, 2.0, b),
        "Copy": lambda: ca.Copy(a, b),
        "Copy_mask": lambda: ca.Copy(a, a, b),
        "Copy_from_field": lambda: ca.Copy(a, fb, 0),
        "Copy_to_field": lambda: ca.Copy(fa, b, 1),
        "SetMem_mask": lambda: ca.SetMem(a, 1.0, b),
        "SetMem_fld_mask": lambda: ca.SetMem(fa, v, b),
        "Add_fld": lambda: ca.Add(fa, fa, fb),
        "Add_fld_im": lambda: ca.Add(fa, fa, b),
        "Add_I_fld_im": lambda: ca.Add_I(fa, b),
        "MulC_fld_vec": lambda: ca.MulC(fa, fb, v),
        "Copy_fld": lambda: ca.Copy(fa, fb),
    }


@pytest.mark.parametrize("how", sorted(MISMATCHED))
@pytest.mark.parametrize("name", sorted(SIG_PREFIX))
def test_grid_mismatch(name, how):
    g = grid(*GRIDS["3d"]["size"], sp=GRIDS["3d"]["sp"], org=GRIDS["3d"]["org"])
    other = MISMATCHED[how]
    a, fa = ca.Image3D(g, ca.MEM_HOST), ca.Field3D(g, ca.MEM_HOST)
    b, fb = ca.Image3D(other, ca.MEM_HOST), ca.Field3D(other, ca.MEM_HOST)
    ca.SetMem(a, 1.0)
    ca.SetMem(fa, 1.0)
    with pytest.raises(RuntimeError) as ei:
        calls(a, b, fa, fb)[name]()
    msg = str(ei.value)
    assert msg.startswith(SIG_PREFIX[name] + "PyCAException : From "), msg
    assert re.search(r"\.(cxx|h):\d+ : Input grids are not equal$", msg), msg
    # nothing was written
    assert np.all(a.asnp() == 1.0)
    assert all(np.all(v == 1.0) for v in fa.asnp())


def test_grids_within_tolerance_are_equal():
    g1 = grid(5, 4, 3, sp=(1.5, 2.1, 0.7))
    g2 = grid(5, 4, 3, sp=(1.5, 2.1, 0.7 + 2e-7), org=(1e-7, 0, 0))
    a = image_from(np.ones((5, 4, 3)), g1)
    b = image_from(np.full((5, 4, 3), 2.0), g2)
    out = ca.Image3D(g1, ca.MEM_HOST)
    ca.Add(out, a, b)
    assert np.all(out.asnp() == 3.0)


def _check_add_mulc_refuse(h, d):
    with pytest.raises(RuntimeError) as ei:
        ca.Add(h, h, d)
    assert str(ei.value).endswith(": memory types are not compatible")
    with pytest.raises(RuntimeError) as ei:
        ca.MulC(d, h, 2.0)
    assert str(ei.value).endswith(": memory types are not compatible")


@gpu_only
def test_memtype_mismatch():
    g = grid(4, 3, 2)
    h, d = ca.Image3D(g, ca.MEM_HOST), ca.Image3D(g, ca.MEM_DEVICE)
    ca.SetMem(h, 1.0)
    _check_add_mulc_refuse(h, d)
    # plain Copy moves data between memory types
    ca.Copy(d, h)
    assert ca.Sum(d) == 24.0
    back = ca.Image3D(g, ca.MEM_HOST)
    ca.Copy(back, d)
    assert np.all(back.asnp() == 1.0)


def test_memtype_mismatch_empty_operands():
    """The same refusals on every machine: empty images need no allocation."""
    h, d = ca.Image3D(ca.MEM_HOST), ca.Image3D(ca.MEM_DEVICE)
    _check_add_mulc_refuse(h, d)
    ca.Copy(d, h)  # plain Copy moves data between memory types (nothing to move here)
    ca.Add(h, h, h)


def test_wrong_argument_types():
    im = ca.Image3D(4, 3, 2)
    f = ca.Field3D(4, 3, 2)
    for call in (lambda: ca.Add(im, im, None), lambda: ca.Add(im, None, im),
                 lambda: ca.Add(f, im, im), lambda: ca.Add_I(im, f),
                 lambda: ca.MulC(im, im, "2"), lambda: ca.MulC_I(im, None),
                 lambda: ca.MulC_I(im, ca.Vec3Df(1, 2, 3)), lambda: ca.SetMem(None, 1.0),
                 lambda: ca.SetMem(im, ca.Vec3Df(1, 1, 1)), lambda: ca.Copy(im, None),
                 lambda: ca.Copy(im, f), lambda: ca.Copy(im, f, None),
                 lambda: ca.Sum(None), lambda: ca.Sum2("im"), lambda: ca.SumComp(im),
                 lambda: ca.Sum(ca.Vec3Df(), im), lambda: ca.Add(), lambda: ca.Copy(im)):
        with pytest.raises(TypeError):
            call()
