"""Reductions (spec group R: Sum, Sum2, L1, LInf, Max, Min, Dot, MinMax,
SumComp, plus the reduction overloads of Max and Min) against NumPy float64
references, on a 3-D and a 2-D odd grid with anisotropic spacing, for images
and fields and every usable memory type (the legacy golden cases: test_golden.py);
argument handling, errors, NaN, empty images, determinism, and CPU/GPU
parity (GPU tests skip without a device)."""

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, gpu_only, grid, image_from, run_python, usable_mem_types

GRIDS = {
    "3d": dict(size=(17, 19, 23), sp=(0.5, 1.0, 2.0), org=(-3.0, 1.0, 7.0)),
    "2d": dict(size=(31, 33, 1), sp=(1.25, 0.8, 1.0), org=(0.5, 0.0, 0.0)),
}

SUMS = ("Sum", "Sum2", "L1")
EXTREMA = ("Max", "Min", "LInf")


def mem_id(m):
    return {ca.MEM_HOST: "host", ca.MEM_HOST_PINNED: "pinned", ca.MEM_DEVICE: "device"}[m]


def ref_image(op, a):
    """NumPy float64 reference of reduction op over the arrays in a (list)."""
    x = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in a])
    return {"Sum": x.sum(), "Sum2": (x * x).sum(), "L1": np.abs(x).sum(),
            "LInf": np.abs(x).max(), "Max": x.max(), "Min": x.min()}[op]


def sum_tol(a):
    """Tolerance for a double-accumulated sum: relative to the sum of |terms|."""
    x = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in a])
    return 1e-12 * max(1.0, (x * x).sum() + np.abs(x).sum())


class Case:
    def __init__(self, tag, mem):
        p = GRIDS[tag]
        self.shape = p["size"]
        self.g = grid(*p["size"], sp=p["sp"], org=p["org"])
        self.mem = mem
        rng = np.random.default_rng({"3d": 21, "2d": 22}[tag])
        self.a = rng.uniform(-2, 3, self.shape).astype(np.float32)
        self.b = rng.uniform(-1, 1, self.shape).astype(np.float32)
        self.fa = [rng.uniform(-4, 2, self.shape).astype(np.float32) for _ in range(3)]
        self.fb = [rng.uniform(-1, 1, self.shape).astype(np.float32) for _ in range(3)]

    def im(self, arr):
        return image_from(arr, self.g, self.mem)

    def fld(self, arrs):
        return field_from(arrs, self.g, self.mem)


@pytest.fixture(params=[(t, m) for t in GRIDS for m in usable_mem_types],
                ids=lambda p: "%s-%s" % (p[0], mem_id(p[1])))
def case(request):
    return Case(*request.param)


# ---------------------------------------------------------------------------
# every overload against NumPy

@pytest.mark.parametrize("op", SUMS)
def test_sum_like_image(case, op):
    got = getattr(ca, op)(case.im(case.a))
    assert type(got) is float
    assert abs(got - ref_image(op, [case.a])) <= sum_tol([case.a])


@pytest.mark.parametrize("op", SUMS)
def test_sum_like_field(case, op):
    got = getattr(ca, op)(case.fld(case.fa))
    assert type(got) is float
    assert abs(got - ref_image(op, case.fa)) <= sum_tol(case.fa)


@pytest.mark.parametrize("op", EXTREMA)
def test_extrema_image_exact(case, op):
    got = getattr(ca, op)(case.im(case.a))
    assert type(got) is float
    want = ref_image(op, [case.a])
    assert got == want
    assert np.float32(got) == got  # an exact voxel value


@pytest.mark.parametrize("op", EXTREMA)
def test_extrema_field_exact(case, op):
    got = getattr(ca, op)(case.fld(case.fa))
    assert type(got) is float
    assert got == ref_image(op, case.fa)  # over all three components


def test_minmax_image(case):
    r = ca.MinMax(case.im(case.a))
    assert type(r) is tuple and len(r) == 2
    assert all(type(v) is float for v in r)
    assert r == (float(case.a.min()), float(case.a.max()))


def test_minmax_field(case):
    r = ca.MinMax(case.fld(case.fa))
    assert type(r) is tuple and len(r) == 2
    assert r == (min(float(v.min()) for v in case.fa), max(float(v.max()) for v in case.fa))


def test_dot_image(case):
    got = ca.Dot(case.im(case.a), case.im(case.b))
    assert type(got) is float
    want = (case.a.astype(np.float64) * case.b).sum()
    assert abs(got - want) <= sum_tol([case.a, case.b])
    # Dot(a, a) is Sum2(a)
    a = case.im(case.a)
    assert ca.Dot(a, a) == pytest.approx(ca.Sum2(a), rel=1e-14)


def test_dot_field(case):
    got = ca.Dot(case.fld(case.fa), case.fld(case.fb))
    assert type(got) is float
    want = sum((x.astype(np.float64) * y).sum() for x, y in zip(case.fa, case.fb))
    assert abs(got - want) <= sum_tol(case.fa + case.fb)


def test_sumcomp_and_sum_vec3df(case):
    f = case.fld(case.fa)
    comp = ca.SumComp(f)
    assert isinstance(comp, ca.Vec3Df)
    want = [v.astype(np.float64).sum() for v in case.fa]
    assert comp.tolist() == pytest.approx(want, rel=1e-6, abs=1e-4)
    out = ca.Vec3Df()
    ca.Sum(out, f)
    assert out == comp
    assert ca.Sum(f) == pytest.approx(sum(want), rel=1e-12, abs=1e-9)


# ---------------------------------------------------------------------------
# optional trailing arguments: update, st, onDev

@pytest.mark.parametrize("op", SUMS + EXTREMA)
def test_optional_trailing_args(case, op):
    fn = getattr(ca, op)
    for obj in (case.im(case.a), case.fld(case.fa)):
        base = fn(obj)
        # update has no prior value in Python: it is accepted and ignored
        assert fn(obj, False) == base
        assert fn(obj, True) == base
        assert fn(obj, False, None) == base
        assert fn(obj, True, None, False) == base
        assert fn(obj, False, None, True) == base


def test_optional_trailing_args_dot_minmax(case):
    a, b = case.im(case.a), case.im(case.b)
    base = ca.Dot(a, b)
    assert ca.Dot(a, b, False) == base
    assert ca.Dot(a, b, True, None) == base
    assert ca.Dot(a, b, False, None, False) == base
    fa, fb = case.fld(case.fa), case.fld(case.fb)
    fbase = ca.Dot(fa, fb)
    assert ca.Dot(fa, fb, True, None, True) == fbase
    r = ca.MinMax(a)
    assert ca.MinMax(a, False) == r
    assert ca.MinMax(a, True, None) == r
    assert ca.MinMax(a, False, None, False) == r
    assert ca.MinMax(fa, True, None, False) == ca.MinMax(fa)
    f = case.fld(case.fa)
    assert ca.SumComp(f, None) == ca.SumComp(f)


# ---------------------------------------------------------------------------
# Max/Min: reduction and pointwise overloads under one name

def test_max_min_dispatch_with_pointwise_overloads():
    g = grid(5, 4, 3)
    rng = np.random.default_rng(3)
    a_np, b_np = rng.standard_normal((2, 5, 4, 3)).astype(np.float32)
    a, b = image_from(a_np, g), image_from(b_np, g)
    o = ca.Image3D(g, ca.MEM_HOST)
    assert ca.Max(a) == float(a_np.max())
    assert ca.Min(a) == float(a_np.min())
    ca.Max(o, a, b)
    assert np.array_equal(o.asnp(), np.maximum(a_np, b_np))
    ca.Min(o, a, b)
    assert np.array_equal(o.asnp(), np.minimum(a_np, b_np))
    try:
        ca.Max(o, a, 0.25)
    except TypeError:
        pass  # constant overload not present in this build
    else:
        assert np.array_equal(o.asnp(), np.maximum(a_np, np.float32(0.25)))
    fa = field_from([a_np, b_np, -a_np], g)
    fb = field_from([b_np, a_np, -b_np], g)
    fo = ca.Field3D(g, ca.MEM_HOST)
    try:
        ca.Max(fo, fa, fb)
    except TypeError:
        pass  # field overload not present in this build
    else:
        assert np.array_equal(fo.asnp()[2], np.maximum(-a_np, -b_np))
    assert ca.Max(fa) == float(max(a_np.max(), b_np.max(), (-a_np).max()))
    assert ca.Min(fa, False, None, False) == float(min(a_np.min(), b_np.min(), (-a_np).min()))


# ---------------------------------------------------------------------------
# errors and argument types

def test_dot_grid_mismatch():
    a = image_from(np.ones((4, 3, 2), np.float32))
    for g in (grid(4, 3, 3), grid(4, 3, 2, sp=(1.0, 2.0, 1.0)), grid(4, 3, 2, org=(0.0, 0.5, 0.0))):
        b = ca.Image3D(g, ca.MEM_HOST)
        ca.SetMem(b, 1.0)
        with pytest.raises(RuntimeError) as ei:
            ca.Dot(a, b)
        assert "Input grids are not equal" in str(ei.value)
        assert str(ei.value).startswith("PyCA::Opers::Dot(")
    fa = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    fb = ca.Field3D(grid(4, 3, 3), ca.MEM_HOST)
    with pytest.raises(RuntimeError) as ei:
        ca.Dot(fa, fb)
    assert "Input grids are not equal" in str(ei.value)


def test_dot_memory_type_mismatch():
    # empty images need no allocation, so a device-typed one exists in any build
    for cls in (ca.Image3D, ca.Field3D):
        h, d = cls(ca.MEM_HOST), cls(ca.MEM_DEVICE)
        with pytest.raises(RuntimeError) as ei:
            ca.Dot(h, d)
        assert "memory types are not compatible" in str(ei.value)
        with pytest.raises(RuntimeError) as ei:
            ca.Dot(d, h, False)
        assert "memory types are not compatible" in str(ei.value)


def test_wrong_argument_types():
    im = ca.Image3D(4, 3, 2)
    f = ca.Field3D(4, 3, 2)
    ca.SetMem(im, 1.0)
    calls = [lambda: ca.Max(None), lambda: ca.Min("im"), lambda: ca.LInf(1.0),
             lambda: ca.L1(None), lambda: ca.Sum2([1.0]), lambda: ca.MinMax(None),
             lambda: ca.MinMax(ca.Vec3Df(1, 2, 3)), lambda: ca.Dot(im, None),
             lambda: ca.Dot(None, im), lambda: ca.Dot(im, f), lambda: ca.Dot(f, im),
             lambda: ca.Dot(im), lambda: ca.Max(), lambda: ca.MinMax(),
             lambda: ca.Max(im, "yes"), lambda: ca.Max(im, None), lambda: ca.L1(im, 1.5),
             lambda: ca.Min(im, False, 3), lambda: ca.MinMax(im, False, None, "x"),
             lambda: ca.Dot(im, im, None), lambda: ca.SumComp(im),
             lambda: ca.Max(im, False, None, False, 1)]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    assert ca.Max(im) == 1.0  # still usable afterwards


# ---------------------------------------------------------------------------
# NaN, infinities, empty and single-voxel images

def test_nan_propagates():
    g = grid(7, 5, 3)
    for pos in ((0, 0, 0), (3, 2, 1), (6, 4, 2)):
        arr = np.linspace(-3, 4, 105, dtype=np.float32).reshape(7, 5, 3)
        arr[pos] = np.nan
        im = image_from(arr, g)
        for op in SUMS + EXTREMA:
            assert np.isnan(getattr(ca, op)(im)), (op, pos)
        lo, hi = ca.MinMax(im)
        assert np.isnan(lo) and np.isnan(hi)
        assert np.isnan(ca.Dot(im, im))
        f = field_from([np.zeros_like(arr), arr, np.ones_like(arr)], g)
        assert np.isnan(ca.Max(f)) and np.isnan(ca.Min(f)) and np.isnan(ca.Sum(f))


def test_nan_in_large_image_every_block():
    # many voxels: the parallel CPU path and several lane positions
    n = 70
    im = image_from(np.ones((n, n, n), np.float32))
    a = im.asnp()
    for idx in (0, 17, n ** 3 // 2 + 5, n ** 3 - 1):
        pos = np.unravel_index(idx, a.shape, order="F")  # memory order
        a[pos] = np.nan
        assert np.isnan(ca.Max(im)) and np.isnan(ca.Min(im)) and np.isnan(ca.LInf(im))
        assert all(np.isnan(v) for v in ca.MinMax(im))
        a[pos] = 1.0
        assert ca.MinMax(im) == (1.0, 1.0)


def test_infinities():
    arr = np.array([1, -np.inf, 2, np.inf, 0.5], np.float32).reshape(5, 1, 1)
    im = image_from(arr)
    assert ca.Max(im) == np.inf and ca.Min(im) == -np.inf
    assert ca.MinMax(im) == (-np.inf, np.inf)
    assert ca.LInf(im) == np.inf and ca.L1(im) == np.inf
    assert np.isnan(ca.Sum(im))  # inf - inf


def test_empty_images():
    for obj in (ca.Image3D(grid(0, 0, 0), ca.MEM_HOST), ca.Image3D(grid(0, 3, 2), ca.MEM_HOST),
                ca.Field3D(grid(4, 0, 1), ca.MEM_HOST)):
        assert obj.nVox() == 0
        for op in ("Sum", "Sum2", "L1", "LInf"):
            assert getattr(ca, op)(obj) == 0.0
        assert ca.Dot(obj, obj) == 0.0
        for op in ("Max", "Min", "MinMax"):
            with pytest.raises(ValueError) as ei:
                getattr(ca, op)(obj)
            assert "no voxels" in str(ei.value)
    assert ca.SumComp(ca.Field3D(grid(0, 0, 0), ca.MEM_HOST)) == ca.Vec3Df(0, 0, 0)


def test_single_voxel():
    im = image_from(np.full((1, 1, 1), -2.5, np.float32))
    assert ca.Sum(im) == -2.5 and ca.Sum2(im) == 6.25 and ca.L1(im) == 2.5
    assert ca.Max(im) == -2.5 and ca.Min(im) == -2.5 and ca.LInf(im) == 2.5
    assert ca.MinMax(im) == (-2.5, -2.5) and ca.Dot(im, im) == 6.25


def test_extreme_magnitudes_exact():
    # values whose squares overflow float32: double accumulation keeps them
    arr = np.array([3e38, -3e38, 1e-45, 2e30], np.float32).reshape(2, 2, 1)
    im = image_from(arr)
    assert ca.Max(im) == float(np.float32(3e38))
    assert ca.Min(im) == float(np.float32(-3e38))
    assert ca.LInf(im) == float(np.float32(3e38))
    assert np.isfinite(ca.Sum2(im))
    assert ca.Sum2(im) == pytest.approx((arr.astype(np.float64) ** 2).sum(), rel=1e-15)


# ---------------------------------------------------------------------------
# accuracy and determinism

def test_sum_256_cubed_accuracy():
    n = 256
    rng = np.random.default_rng(31)
    arr = rng.uniform(0, 1, (n, n, n)).astype(np.float32)
    im = image_from(arr)
    ref = np.sum(arr, dtype=np.float64)
    assert abs(ca.Sum(im) - ref) <= 1e-6 * abs(ref)
    ref2 = np.sum(np.square(arr, dtype=np.float64))
    assert abs(ca.Sum2(im) - ref2) <= 1e-6 * ref2
    assert abs(ca.L1(im) - ref) <= 1e-6 * abs(ref)
    assert abs(ca.Dot(im, im) - ref2) <= 1e-6 * ref2
    assert ca.MinMax(im) == (float(arr.min()), float(arr.max()))
    # with cancellation: relative to the sum of magnitudes
    im.asnp()[...] -= np.float32(0.5)
    signed = arr - np.float32(0.5)
    assert abs(ca.Sum(im) - signed.sum(dtype=np.float64)) <= 1e-6 * np.abs(signed).sum(dtype=np.float64)


def test_deterministic():
    # a size with ragged thread blocks and lane tails
    shape = (67, 61, 59)
    rng = np.random.default_rng(5)
    arr = (rng.standard_normal(shape) * 1e3).astype(np.float32)
    im = image_from(arr)
    f = field_from([arr, -arr * 0.5, arr[::-1].copy()])
    for op in SUMS + EXTREMA + ("MinMax",):
        fn = getattr(ca, op)
        assert repr(fn(im)) == repr(fn(im)) == repr(fn(im)), op
        assert repr(fn(f)) == repr(fn(f)), op
    assert repr(ca.Dot(im, im)) == repr(ca.Dot(im, im))
    ref = arr.astype(np.float64).sum()
    assert ca.Sum(im) == pytest.approx(ref, rel=1e-12, abs=1e-6 * np.abs(arr).sum())


def test_thread_count_does_not_change_results(monkeypatch):
    # fixed chunks combined in chunk order: 1 thread gives the same bits
    code = (
        "import numpy as np, PyCA.Core as ca\n"
        "rng = np.random.default_rng(4)\n"
        "arr = (rng.standard_normal((71, 67, 29)) * 100).astype(np.float32)\n"
        "im = ca.Image3D(ca.GridInfo(ca.Vec3Di(71, 67, 29)), ca.MEM_HOST)\n"
        "im.asnp()[...] = arr\n"
        "print(repr([ca.Sum(im), ca.Sum2(im), ca.L1(im), ca.Dot(im, im), ca.Max(im), ca.LInf(im),"
        " ca.MinMax(im)]))\n")
    outs = []
    for nt in ("1", "2", "3"):
        monkeypatch.setenv("OMP_NUM_THREADS", nt)
        r = run_python(code)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.strip())
    assert outs[0] == outs[1] == outs[2]


def test_sizes_around_block_boundaries():
    # every tail length of the 16/32-lane loops, single- and multi-threaded
    rng = np.random.default_rng(9)
    for n in list(range(1, 70)) + [32767, 32768, 32769, 40001]:
        arr = rng.uniform(-1, 1, (n, 1, 1)).astype(np.float32)
        im = image_from(arr)
        a64 = arr.astype(np.float64)
        assert ca.Sum(im) == pytest.approx(a64.sum(), rel=1e-12, abs=1e-12 * n)
        assert ca.Sum2(im) == pytest.approx((a64 ** 2).sum(), rel=1e-12)
        assert ca.Max(im) == float(arr.max()) and ca.Min(im) == float(arr.min())
        assert ca.LInf(im) == float(np.abs(arr).max())
        assert ca.MinMax(im) == (float(arr.min()), float(arr.max()))


def test_reduction_respects_grid_not_capacity():
    # a smaller grid over a larger allocation reduces only the grid's voxels
    im = ca.Image3D(grid(10, 10, 10), ca.MEM_HOST)
    ca.SetMem(im, 7.0)
    im.setGrid(grid(5, 4, 3))
    arr = np.arange(60, dtype=np.float32).reshape(5, 4, 3)
    im.asnp()[...] = arr
    assert ca.Sum(im) == arr.sum()
    assert ca.Max(im) == 59.0


# The legacy golden reduction cases are replayed by test_golden.py.


# ---------------------------------------------------------------------------
# GPU: the same results from device memory (enforced tolerances)

def _device_pair(arr):
    return image_from(arr), image_from(arr, mem=ca.MEM_DEVICE)


@gpu_only
@pytest.mark.parametrize("shape", [(17, 19, 23), (31, 33, 1), (129, 67, 65)])
def test_gpu_parity_images(shape):
    rng = np.random.default_rng(77)
    arr = rng.uniform(-3, 2, shape).astype(np.float32)
    brr = rng.uniform(-1, 1, shape).astype(np.float32)
    h, d = _device_pair(arr)
    hb, db = _device_pair(brr)
    tol = sum_tol([arr, brr])
    for op in SUMS:
        assert abs(getattr(ca, op)(d) - getattr(ca, op)(h)) <= tol, op
    for op in EXTREMA:
        assert getattr(ca, op)(d) == getattr(ca, op)(h), op  # exact
    assert ca.MinMax(d) == ca.MinMax(h)
    assert abs(ca.Dot(d, db) - ca.Dot(h, hb)) <= tol
    assert d.memType() == ca.MEM_DEVICE


@gpu_only
def test_gpu_parity_fields():
    shape = (33, 17, 9)
    rng = np.random.default_rng(78)
    fa = [rng.uniform(-4, 2, shape).astype(np.float32) for _ in range(3)]
    fb = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(3)]
    h, d = field_from(fa), field_from(fa, mem=ca.MEM_DEVICE)
    hb, db = field_from(fb), field_from(fb, mem=ca.MEM_DEVICE)
    tol = sum_tol(fa + fb)
    for op in SUMS:
        assert abs(getattr(ca, op)(d) - getattr(ca, op)(h)) <= tol, op
    for op in EXTREMA:
        assert getattr(ca, op)(d) == getattr(ca, op)(h), op
    assert ca.MinMax(d) == ca.MinMax(h)
    assert abs(ca.Dot(d, db) - ca.Dot(h, hb)) <= tol
    for x, y in zip(ca.SumComp(d).tolist(), ca.SumComp(h).tolist()):
        assert x == pytest.approx(y, rel=1e-6, abs=1e-4)


@gpu_only
def test_gpu_nan_empty_and_mixed_memory():
    arr = np.linspace(-1, 1, 60, dtype=np.float32).reshape(5, 4, 3)
    arr[2, 1, 1] = np.nan
    _, d = _device_pair(arr)
    for op in SUMS + EXTREMA:
        assert np.isnan(getattr(ca, op)(d)), op
    assert all(np.isnan(v) for v in ca.MinMax(d))
    e = ca.Image3D(grid(0, 0, 0), ca.MEM_DEVICE)
    assert ca.Sum(e) == 0.0 and ca.LInf(e) == 0.0
    with pytest.raises(ValueError):
        ca.Max(e)
    h = image_from(np.ones((5, 4, 3), np.float32))
    with pytest.raises(RuntimeError) as ei:
        ca.Dot(h, d)
    assert "memory types are not compatible" in str(ei.value)


@gpu_only
def test_gpu_large_accuracy_and_determinism():
    n = 256
    rng = np.random.default_rng(79)
    arr = rng.uniform(0, 1, (n, n, n)).astype(np.float32)
    d = image_from(arr, mem=ca.MEM_DEVICE)
    ref = np.sum(arr, dtype=np.float64)
    s = ca.Sum(d)
    assert abs(s - ref) <= 1e-6 * ref
    assert repr(ca.Sum(d)) == repr(s)
    assert repr(ca.Sum2(d)) == repr(ca.Sum2(d))
    assert ca.MinMax(d) == (float(arr.min()), float(arr.max()))
