"""CPU (MEM_HOST) against CUDA (MEM_DEVICE): the same inputs through both
back ends give the same results within enforced tolerances.

Every row of the pointwise table (test_pointwise.OVERLOADS: groups A, B, C
and the pointwise part of D, image and field overloads, masked forms) runs
on both back ends; so do the reductions. Each kernel family has its own
tolerances, all enforced (max and mean of the absolute and of the relative
difference):

* ``exact``: discrete ops and single IEEE operations (+ - * /, sqrt, 1/x,
  min/max, comparisons, rounding, copies, and the fused ops without an
  add after a multiply, which nvcc cannot contract): bit-identical;
* ``fma``: fused ops of the form a*b + c, which nvcc contracts into an FMA
  (one rounding fewer): a difference of about one ulp of the product;
* ``libm``: transcendental functions (CUDA's are accurate to 1-4 ulp,
  glibc's to about 1): a few ulp.

Everything but the table checks needs a CUDA device (``gpu_only``) and
skips without one.
"""
import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, gpu_only, grid, image_from, to_np
from test_pointwise import FIELD_SHRINK_EPS, OVERLOADS, Call, Case, draw

#: grids above the CPU single-thread limit and with odd sizes (not multiples of 256)
PARITY_GRIDS = {
    "3d": dict(size=(67, 53, 41), sp=(0.7, 1.3, 2.1), org=(1.5, -2.0, 0.25)),
    "2d": dict(size=(257, 131, 1), sp=(1.3, 0.7, 2.1), org=(-0.5, 3.0, 1.0)),
}
PARITY_SEEDS = {"3d": 4242, "2d": 4343}

EXACT_OPS = set("""Abs Neg Ramp Sgn Step Ceil Floor Round Sqr Cube Sqrt Inv
    Add Sub Mul Div Max Min GT GTE EQ NEQ LT LTE
    AbsDiff SqrDiff MulMul AddMul AddDiv SubMul SubDiv AddMulC SubMulC MulMulC AddCMulC
    Copy SetMem Shrink SoftSgn""".split())
FMA_OPS = set("""MulAdd MulSub Add_Mul Sub_Mul Add_AddMulC Add_SubMulC Sub_AddMulC Sub_SubMulC
    Add_MulMulC Sub_MulMulC Add_MulC MulCAdd MulCSub MulCAddC MulC_Add_MulC AddCMulCAddC
    SoftAbs""".split())
LIBM_OPS = set("Exp Log Sin Asin Cos Acos Tan Atan Csc Sec Cot Atan2 PowC".split())
BINARY_B = set("Add Sub Mul Div Max Min Atan2 GT GTE EQ NEQ LT LTE".split())

#: per family: max_abs and mean_abs (times max(1, max|cpu|)), max_rel and
#: mean_rel (|gpu - cpu| / |cpu| over the voxels with |cpu| >= rel_floor)
TOLERANCES = {
    "exact": dict(max_abs=0.0, mean_abs=0.0, max_rel=0.0, mean_rel=0.0, rel_floor=0.0),
    "fma": dict(max_abs=1e-6, mean_abs=5e-8, max_rel=1e-6, mean_rel=1e-7, rel_floor=0.5),
    "libm": dict(max_abs=2e-6, mean_abs=2e-7, max_rel=2e-6, mean_rel=2e-7, rel_floor=1e-30),
}


def base_name(name):
    n = name[:-2] if name.endswith("_I") else name
    if n.endswith("C") and n[:-1] in BINARY_B:
        n = n[:-1]
    return n


def family(row):
    b = base_name(row.name)
    if b in EXACT_OPS:
        return "exact"
    if b in FMA_OPS:
        return "fma"
    if b in LIBM_OPS:
        return "libm"
    raise KeyError("no parity family for %s" % row.name)


def test_every_row_has_a_family():
    for r in OVERLOADS:
        family(r)


def compare(cpu, gpu, fam, what):
    """Enforces the family's tolerances on float32 arrays (or lists of them)."""
    cpu = [cpu] if isinstance(cpu, np.ndarray) else cpu
    gpu = [gpu] if isinstance(gpu, np.ndarray) else gpu
    t = TOLERANCES[fam]
    c = np.concatenate([x.ravel() for x in cpu]).astype(np.float64)
    g = np.concatenate([x.ravel() for x in gpu]).astype(np.float64)
    nan_c, nan_g = np.isnan(c), np.isnan(g)
    assert np.array_equal(nan_c, nan_g), "%s: NaN at different voxels" % what
    inf = np.isinf(c) | np.isinf(g)
    assert np.array_equal(c[inf], g[inf]), "%s: infinities differ" % what
    ok = ~(nan_c | inf)
    c, g = c[ok], g[ok]
    if fam == "exact":
        bad = np.flatnonzero(c != g)
        assert bad.size == 0, "%s: %d of %d values differ, first at %d: cpu %r gpu %r" % (
            what, bad.size, c.size, bad[0], c[bad[0]], g[bad[0]])
        return
    d = np.abs(g - c)
    scale = max(1.0, float(np.abs(c).max()) if c.size else 1.0)
    sel = np.abs(c) >= t["rel_floor"]
    rel = d[sel] / np.abs(c[sel])
    stats = dict(max_abs=d.max() / scale, mean_abs=d.mean() / scale,
                 max_rel=rel.max() if rel.size else 0.0, mean_rel=rel.mean() if rel.size else 0.0)
    over = {k: v for k, v in stats.items() if v > t[k]}
    assert not over, "%s (%s): %s exceed %s (worst voxel cpu %r gpu %r)" % (
        what, fam, over, {k: t[k] for k in over}, c[d.argmax()], g[d.argmax()])


ROWS = [(r, m) for r in OVERLOADS for m in ([False, True] if r.mask else [False])]


@gpu_only
@pytest.mark.parametrize("tag", sorted(PARITY_GRIDS))
@pytest.mark.parametrize("rm", ROWS, ids=lambda rm: rm[0].id + ("-mask" if rm[1] else ""))
def test_pointwise_parity(rm, tag):
    row, masked = rm
    fn = getattr(ca, row.name)
    case = Case(tag, ca.MEM_HOST, params=PARITY_GRIDS[tag], seed=PARITY_SEEDS[tag])
    call = Call(row, case, masked=masked)
    host = call.build(mem=ca.MEM_HOST)
    dev = call.build(mem=ca.MEM_DEVICE)
    assert all(o.memType() == ca.MEM_DEVICE for o in dev if isinstance(o, (ca.Image3D, ca.Field3D)))
    fn(*host)
    fn(*dev)
    ca.CheckCUDAError(__file__, 0)
    compare(to_np(host[0]), to_np(dev[0]), family(row), row.id + (" masked" if masked else ""))
    # inputs on the device are untouched
    for (t, v), o in zip(call.arg_np, dev[1:]):
        if t == "I":
            assert np.array_equal(to_np(o), v)
        elif t == "F":
            assert all(np.array_equal(a, b) for a, b in zip(to_np(o), v))


@gpu_only
@pytest.mark.parametrize("tag", sorted(PARITY_GRIDS))
@pytest.mark.parametrize("inplace", [False, True], ids=["out", "I"])
def test_field_shrink_parity(tag, inplace):
    case = Case(tag, ca.MEM_HOST, params=PARITY_GRIDS[tag], seed=PARITY_SEEDS[tag])
    v = case.array("F", "u")
    outs = []
    for mem in (ca.MEM_HOST, ca.MEM_DEVICE):
        f = field_from(v, case.g, mem)
        if inplace:
            ca.Shrink_I(f, FIELD_SHRINK_EPS)
            outs.append(to_np(f))
        else:
            o = ca.Field3D(case.g, mem)
            ca.Shrink(o, f, FIELD_SHRINK_EPS)
            outs.append(to_np(o))
    compare(outs[0], outs[1], "fma", "field Shrink")


@gpu_only
def test_pinned_runs_like_host():
    """Pinned host memory runs on the CPU back end: bit-identical to MEM_HOST."""
    case = Case("3d", ca.MEM_HOST, params=PARITY_GRIDS["3d"], seed=1)
    for row in OVERLOADS:
        if row.name not in ("Sin", "MulC_Add_MulC", "Add_MulMulC", "GT", "Div"):
            continue
        call = Call(row, case)
        host, pinned = call.build(mem=ca.MEM_HOST), call.build(mem=ca.MEM_HOST_PINNED)
        getattr(ca, row.name)(*host)
        getattr(ca, row.name)(*pinned)
        compare(to_np(host[0]), to_np(pinned[0]), "exact", row.id + " pinned")


# ---------------------------------------------------------------------------
# reductions

RED_GRID = dict(size=(129, 131, 67), sp=(0.7, 1.3, 2.1), org=(0.0, 1.0, -2.0))


@pytest.fixture(scope="module", params=["signed", "positive"])
def red_data(request):
    rng = np.random.default_rng(777 if request.param == "signed" else 778)
    dom = "s" if request.param == "signed" else "p"
    shape = RED_GRID["size"]
    a = draw(rng, dom, shape)
    b = draw(rng, "s", shape)
    fa = [draw(rng, dom, shape) for _ in range(3)]
    fb = [draw(rng, "s", shape) for _ in range(3)]
    return a, b, fa, fb


def _red_objs(data, mem):
    g = grid(*RED_GRID["size"], sp=RED_GRID["sp"], org=RED_GRID["org"])
    a, b, fa, fb = data
    return image_from(a, g, mem), image_from(b, g, mem), field_from(fa, g, mem), field_from(fb, g, mem)


def _close_double(cpu, gpu, mag, what):
    """Both back ends accumulate in double: they differ only by the order of
    summation."""
    assert isinstance(gpu, float) and isinstance(cpu, float), what
    assert abs(gpu - cpu) <= 1e-11 * mag, "%s: cpu %r gpu %r (|diff| %g, scale %g)" % (
        what, cpu, gpu, abs(gpu - cpu), mag)


REDUCTIONS = ["Sum", "Sum2", "L1", "LInf", "Max", "Min", "MinMax", "Dot", "SumComp", "SumVec"]


@gpu_only
@pytest.mark.parametrize("kind", ["image", "field"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_parity(name, kind, red_data):
    if kind == "image" and name in ("SumComp", "SumVec"):
        pytest.skip("field only")
    h = _red_objs(red_data, ca.MEM_HOST)
    d = _red_objs(red_data, ca.MEM_DEVICE)
    x, y = (0, 1) if kind == "image" else (2, 3)
    xs = [red_data[x]] if kind == "image" else red_data[x]
    ys = [red_data[y]] if kind == "image" else red_data[y]
    x64 = np.concatenate([v.ravel() for v in xs]).astype(np.float64)
    y64 = np.concatenate([v.ravel() for v in ys]).astype(np.float64)
    what = "%s(%s)" % (name, kind)
    if name in ("Sum", "Sum2", "L1"):
        fn = getattr(ca, name)
        mag = {"Sum": np.abs(x64).sum(), "Sum2": (x64 ** 2).sum(), "L1": np.abs(x64).sum()}[name]
        _close_double(fn(h[x]), fn(d[x]), mag, what)
        ref = {"Sum": x64.sum(), "Sum2": (x64 ** 2).sum(), "L1": np.abs(x64).sum()}[name]
        assert fn(d[x]) == pytest.approx(ref, rel=1e-9, abs=1e-9 * mag), what
    elif name == "Dot":
        _close_double(ca.Dot(h[x], h[y]), ca.Dot(d[x], d[y]), np.abs(x64 * y64).sum(), what)
        assert ca.Dot(d[x], d[y]) == pytest.approx((x64 * y64).sum(), rel=1e-9,
                                                    abs=1e-9 * np.abs(x64 * y64).sum())
    elif name in ("LInf", "Max", "Min"):
        fn = getattr(ca, name)
        cpu, gpu = fn(h[x]), fn(d[x])
        ref = {"LInf": np.abs(x64).max(), "Max": x64.max(), "Min": x64.min()}[name]
        assert cpu == gpu == ref, (what, cpu, gpu, ref)
    elif name == "MinMax":
        cpu, gpu = ca.MinMax(h[x]), ca.MinMax(d[x])
        assert tuple(cpu) == tuple(gpu) == (x64.min(), x64.max()), (what, cpu, gpu)
    else:  # SumComp / Sum(Vec3Df, field): float per component
        if name == "SumComp":
            cpu, gpu = ca.SumComp(h[x]), ca.SumComp(d[x])
        else:
            cpu, gpu = ca.Vec3Df(), ca.Vec3Df()
            ca.Sum(cpu, h[x])
            ca.Sum(gpu, d[x])
        for k in range(3):
            comp = xs[k].astype(np.float64)
            tol = 1e-6 * np.abs(comp).sum()
            assert abs(cpu.get(k) - gpu.get(k)) <= tol, (what, k, cpu, gpu)
            assert abs(gpu.get(k) - comp.sum()) <= tol, (what, k, gpu, comp.sum())


@gpu_only
def test_reduction_of_2d_and_tiny_images():
    """Sizes below one CUDA block and one-voxel images."""
    rng = np.random.default_rng(5)
    for size in ((1, 1, 1), (3, 1, 1), (17, 15, 1), (255, 1, 1), (257, 1, 1)):
        a = rng.uniform(-1, 1, size).astype(np.float32)
        h, d = image_from(a), image_from(a, mem=ca.MEM_DEVICE)
        a64 = a.astype(np.float64)
        for fn, ref in ((ca.Sum, a64.sum()), (ca.Sum2, (a64 ** 2).sum()), (ca.L1, np.abs(a64).sum()),
                        (ca.Max, a64.max()), (ca.Min, a64.min()), (ca.LInf, np.abs(a64).max())):
            assert fn(d) == pytest.approx(fn(h), rel=1e-12, abs=1e-12), (fn.__name__, size)
            assert fn(d) == pytest.approx(ref, rel=1e-9, abs=1e-12), (fn.__name__, size)
