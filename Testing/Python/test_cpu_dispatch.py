"""The CPU back end's two builds of its hot loops (baseline and AVX2, chosen
at run time) give identical bits (issue 11, item 6): each path is forced in
one process with SetCPUDispatch and the results compared bit for bit, and
against a float64 NumPy reference, so neither path can drift unnoticed."""
import os
import struct

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import field_from, grid, image_from, run_python, to_np


def _has_avx2():
    try:
        ca.SetCPUDispatch("avx2")
    except RuntimeError:
        return False
    finally:
        ca.SetCPUDispatch("auto")
    return True


HAS_AVX2 = _has_avx2()
needs_avx2 = pytest.mark.skipif(not HAS_AVX2, reason="this CPU (or build) has no AVX2 loops")


@pytest.fixture(autouse=True)
def _restore_auto():
    yield
    ca.SetCPUDispatch("auto")


def _bits(x):
    if isinstance(x, (tuple, list)):
        return tuple(_bits(v) for v in x)
    if hasattr(x, "x") and hasattr(x, "z"):
        return _bits((x.x, x.y, x.z))
    return struct.pack("<d", float(x))


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    # a wide dynamic range, negative values and a few exact ties for max/min
    a = rng.standard_normal(shape).astype(np.float32) * np.float32(1e3) ** rng.integers(-2, 3, shape)
    a.flat[:: max(1, a.size // 7)] = a.max()
    return a.astype(np.float32)


SHAPES = [(1, 1, 1), (7, 5, 3), (37, 29, 13), (131, 67, 41)]  # the last crosses the OpenMP chunking

REDUCTIONS = {
    "Sum": (lambda x: ca.Sum(x), lambda a: a.astype(np.float64).sum()),
    "Sum2": (lambda x: ca.Sum2(x), lambda a: (a.astype(np.float64) ** 2).sum()),
    "L1": (lambda x: ca.L1(x), lambda a: np.abs(a.astype(np.float64)).sum()),
    "LInf": (lambda x: ca.LInf(x), lambda a: np.abs(a).max()),
    "Max": (lambda x: ca.Max(x), lambda a: a.max()),
    "Min": (lambda x: ca.Min(x), lambda a: a.min()),
    "MinMax": (lambda x: tuple(ca.MinMax(x)), lambda a: (a.min(), a.max())),
}


def _run_both(fn):
    ca.SetCPUDispatch("baseline")
    assert ca.GetCPUDispatch() == "baseline"
    base = fn()
    ca.SetCPUDispatch("avx2")
    assert ca.GetCPUDispatch() == "avx2"
    fast = fn()
    return base, fast


@needs_avx2
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_image_reductions_identical_bits(name, shape):
    ours, ref = REDUCTIONS[name]
    a = _data(shape, 1)
    im = image_from(a)
    base, fast = _run_both(lambda: ours(im))
    assert _bits(base) == _bits(fast), (name, base, fast)
    np.testing.assert_allclose(np.asarray(base, dtype=np.float64), np.asarray(ref(a), dtype=np.float64),
                               rtol=1e-9, atol=0)


@needs_avx2
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_field_and_binary_reductions_identical_bits(shape):
    comps = [_data(shape, 10 + d) for d in range(3)]
    other = [_data(shape, 20 + d) for d in range(3)]
    f, g = field_from(comps), field_from(other)
    ia, ib = image_from(comps[0]), image_from(other[0])
    calls = {
        "Sum": lambda: ca.Sum(f), "Sum2": lambda: ca.Sum2(f), "L1": lambda: ca.L1(f),
        "LInf": lambda: ca.LInf(f), "Max": lambda: ca.Max(f), "Min": lambda: ca.Min(f),
        "MinMax": lambda: tuple(ca.MinMax(f)), "DotF": lambda: ca.Dot(f, g), "DotI": lambda: ca.Dot(ia, ib),
        "SumComp": lambda: ca.SumComp(f),
    }
    stack = np.stack(comps).astype(np.float64)
    refs = {
        "Sum": stack.sum(), "Sum2": (stack ** 2).sum(), "L1": np.abs(stack).sum(),
        "LInf": np.abs(stack).max(), "Max": stack.max(), "Min": stack.min(),
        "MinMax": (stack.min(), stack.max()),
        "DotF": (stack * np.stack(other).astype(np.float64)).sum(),
        "DotI": (comps[0].astype(np.float64) * other[0]).sum(),
        "SumComp": tuple(c.astype(np.float64).sum() for c in comps),
    }
    for name, call in calls.items():
        base, fast = _run_both(call)
        assert _bits(base) == _bits(fast), (name, base, fast)
        got = np.asarray([base.x, base.y, base.z] if name == "SumComp" else base, dtype=np.float64)
        rtol = 1e-7 if name == "SumComp" else 1e-9  # SumComp returns a Vec3Df (float32)
        np.testing.assert_allclose(got, np.asarray(refs[name], dtype=np.float64), rtol=rtol, atol=1e-6,
                                   err_msg=name)


@needs_avx2
def test_gaussian_rows_identical_bits():
    """The Gaussian filter's AVX2 rows give the baseline's bits."""
    shape = (45, 38, 23)
    im = image_from(_data(shape, 3) * np.float32(1e-3))
    g = im.grid()

    def gauss():
        filt = ca.GaussianFilterCPU()
        filt.updateParams(g.size(), ca.Vec3Df(1.5, 2.0, 1.2), ca.Vec3Di(4, 5, 3))
        o = ca.Image3D(g, ca.MEM_HOST)
        tmp = ca.Image3D(g, ca.MEM_HOST)
        filt.filter(o, im, tmp)
        return to_np(o).copy()

    base, fast = _run_both(gauss)
    assert base.tobytes() == fast.tobytes()


@needs_avx2
def test_trilinear_sampling_paths_agree():
    """The AVX2 CLAMP-trilinear sampler (TriLerpAvx2.cxx) reformulates the
    corner clamping for pair loads, so it rounds differently from interp.h:
    not bit-identical (documented there), but within a few float32 ulps of
    the baseline, and both within float32 rounding of a float64 NumPy
    trilinear reference; on grid points both are exact."""
    from scipy import ndimage
    shape = (45, 38, 23)
    a = _data(shape, 3) * np.float32(1e-3)
    im = image_from(a)
    g = im.grid()
    rng = np.random.default_rng(4)
    ident = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float32) for n in shape], indexing="ij"))
    pts = ident + rng.uniform(-3, 3, ident.shape).astype(np.float32)
    hp = field_from(list(pts))
    out = ca.Image3D(g, ca.MEM_HOST)

    def apply_h(h):
        ca.ApplyH(out, im, h, ca.BACKGROUND_STRATEGY_CLAMP, ca.INTERP_LINEAR)
        return to_np(out).copy()

    base, fast = _run_both(lambda: apply_h(hp))
    scale = float(np.abs(a).max())
    ulp = np.spacing(np.float32(scale))
    assert np.max(np.abs(base.astype(np.float64) - fast)) <= 8 * ulp
    clamped = [np.clip(pts[d], 0, shape[d] - 1).astype(np.float64) for d in range(3)]
    ref = ndimage.map_coordinates(a.astype(np.float64), clamped, order=1, mode="nearest")
    for got in (base, fast):
        assert np.max(np.abs(got - ref)) <= 16 * ulp
    # on the grid points: exact on both paths
    hid = field_from(list(ident))
    base, fast = _run_both(lambda: apply_h(hid))
    assert base.tobytes() == fast.tobytes() == a.tobytes()


def test_dispatch_names_and_errors():
    assert ca.GetCPUDispatch() in ("avx2", "baseline")
    ca.SetCPUDispatch("baseline")
    assert ca.GetCPUDispatch() == "baseline"
    ca.SetCPUDispatch("auto")
    assert ca.GetCPUDispatch() == ("avx2" if HAS_AVX2 else "baseline")
    with pytest.raises(ValueError, match="unknown path 'sse9'"):
        ca.SetCPUDispatch("sse9")
    with pytest.raises(ValueError, match="unknown path ''"):
        ca.SetCPUDispatch("")
    with pytest.raises(TypeError):
        ca.SetCPUDispatch(None)
    with pytest.raises(TypeError):
        ca.SetCPUDispatch(3)
    # a refused call leaves the choice as it was
    assert ca.GetCPUDispatch() == ("avx2" if HAS_AVX2 else "baseline")


def test_environment_variable_sets_the_start():
    code = "import PyCA.Core as ca; print(ca.GetCPUDispatch())"
    import os
    env_old = os.environ.get("PYCA_CPU_DISPATCH")
    try:
        os.environ["PYCA_CPU_DISPATCH"] = "baseline"
        r = run_python(code, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[-1] == "baseline"
        os.environ["PYCA_CPU_DISPATCH"] = "nonsense"  # ignored: auto
        r = run_python(code, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[-1] == ("avx2" if HAS_AVX2 else "baseline")
    finally:
        if env_old is None:
            os.environ.pop("PYCA_CPU_DISPATCH", None)
        else:
            os.environ["PYCA_CPU_DISPATCH"] = env_old


# ---- the AVX2 field sampler (cpu/FieldLerpAvx2.cxx) and splat rows ------------------

FIELD_BGS = ["CLAMP", "WRAP", "ZERO", "PARTIAL_ZERO", "ID", "PARTIAL_ID"]
# (2, 3, 4): every sample near a border; (45, 38, 1): a 2-D field (flat z);
# (300, 7, 5): rows longer than a chunk of the row loop, lengths not a multiple of 8
FIELD_SHAPES = [(45, 38, 23), (45, 38, 1), (300, 7, 5), (2, 3, 4)]


def _fields(shape, seed, amp):
    rng = np.random.default_rng(seed)
    ident = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float32) for n in shape], indexing="ij"))
    pts = ident + rng.uniform(-amp, amp, ident.shape).astype(np.float32)
    if shape[2] == 1:
        pts[2] = 0.0  # 2-D: points on the plane
    pts[0].flat[::97] = np.nan  # a few non-finite sample points
    pts[1].flat[5::89] = 1e30
    h = field_from(list(pts))
    m = field_from(list(rng.standard_normal(ident.shape).astype(np.float32)))
    v = field_from(list(rng.uniform(-amp, amp, ident.shape).astype(np.float32)))
    return h, m, v


def _field_np(f):
    return np.stack([np.array(c) for c in f.asnp()])


@needs_avx2
@pytest.mark.parametrize("shape", FIELD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_field_sampling_paths_identical_bits(shape):
    """The AVX2 field sampler computes interp.h's weights and blend operation
    for operation (and falls back to interp.h near the border and for
    non-finite points), so every trilinear field warp, CoAd and UpdateInverse
    give the same bits on both paths, under every field strategy."""
    h, m, v = _fields(shape, 7, 3.0)
    o, sv = ca.Field3D(h.grid(), ca.MEM_HOST), ca.Field3D(h.grid(), ca.MEM_HOST)
    ran = 0
    for name in FIELD_BGS:
        bg = getattr(ca, "BACKGROUND_STRATEGY_" + name)
        ops = {
            "ComposeHH": lambda: ca.ComposeHH(o, m, h, bg),
            "ComposeHV": lambda: ca.ComposeHV(o, m, v, 0.7, bg),
            "ComposeVH": lambda: ca.ComposeVH(o, v, h, 0.7, bg),
            "ApplyH": lambda: ca.ApplyH(o, m, h, bg),
            "ApplyV": lambda: ca.ApplyV(o, m, v, bg, 0.7),
            "CoAd": lambda: ca.CoAd(o, h, m, bg),
        }
        for op, fn in ops.items():
            try:
                fn()
            except RuntimeError:
                continue  # a strategy this operator does not accept (on both paths)

            def run(fn=fn):
                fn()
                return _field_np(o).copy()
            base, fast = _run_both(run)
            assert base.tobytes() == fast.tobytes(), (op, name)
            ran += 1
    for iters in (1, 2):
        def upd(iters=iters):
            ca.UpdateInverse(o, sv, h, v, iters)
            return _field_np(o).copy()
        base, fast = _run_both(upd)
        assert base.tobytes() == fast.tobytes(), ("UpdateInverse", iters)
    assert ran >= 24


@needs_avx2
@pytest.mark.skipif(bool(os.environ.get("PYCA_SANITIZED")), reason="about 1 GB of arrays")
def test_sampling_beyond_float_exact_indices():
    """Up to 2^24 voxels the AVX2 samplers compute the corner index in float
    (exact there); beyond, in integers. On a grid of 256 x 256 x 260 voxels,
    whose last planes' corner indices exceed 2^24 (odd ones are not floats
    there), the field sampler still gives the baseline's bits and the image
    sampler agrees with it to float32 rounding."""
    shape = (256, 256, 260)
    assert (shape[2] - 2) * shape[0] * shape[1] > 1 << 24
    g = ca.GridInfo(ca.Vec3Di(*shape), ca.Vec3Df(1, 1, 1))
    rng = np.random.default_rng(11)
    h, m = ca.Field3D(g, ca.MEM_HOST), ca.Field3D(g, ca.MEM_HOST)
    for d, (hv, mv) in enumerate(zip(h.asnp(), m.asnp())):
        c = np.arange(shape[d], dtype=np.float32).reshape([shape[d] if e == d else 1 for e in range(3)])
        hv[...] = c + rng.uniform(-2, 2, shape).astype(np.float32)
        mv[...] = rng.standard_normal(shape).astype(np.float32)
    o = ca.Field3D(g, ca.MEM_HOST)

    def compose():
        ca.ComposeHH(o, m, h, ca.BACKGROUND_STRATEGY_PARTIAL_ID)
        return _field_np(o)
    base, fast = _run_both(compose)
    assert base.tobytes() == fast.tobytes()
    del base, fast
    im, out = ca.Image3D(g, ca.MEM_HOST), ca.Image3D(g, ca.MEM_HOST)
    im.asnp()[...] = rng.standard_normal(shape).astype(np.float32)

    def apply_h():
        ca.ApplyH(out, im, h, ca.BACKGROUND_STRATEGY_CLAMP, ca.INTERP_LINEAR)
        return to_np(out).copy()
    base, fast = _run_both(apply_h)
    ca.SetCPUDispatch("auto")
    assert np.max(np.abs(base - fast)) <= 8 * np.spacing(np.float32(8))


@needs_avx2
def test_field_sampling_against_float64_reference():
    """Both paths within float32 rounding of a float64 SciPy trilinear
    reference (ComposeHH, CLAMP: map_coordinates with mode 'nearest' on the
    clamped points)."""
    from scipy import ndimage
    shape = (37, 29, 21)
    rng = np.random.default_rng(3)
    ident = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float32) for n in shape], indexing="ij"))
    pts = ident + rng.uniform(-4, 4, ident.shape).astype(np.float32)
    g = rng.standard_normal((3,) + shape).astype(np.float32)
    h, gf = field_from(list(pts)), field_from(list(g))
    o = ca.Field3D(h.grid(), ca.MEM_HOST)

    def run():
        ca.ComposeHH(o, gf, h, ca.BACKGROUND_STRATEGY_CLAMP)
        return _field_np(o).copy()
    base, fast = _run_both(run)
    clamped = [np.clip(pts[d], 0, shape[d] - 1).astype(np.float64) for d in range(3)]
    for c in range(3):
        ref = ndimage.map_coordinates(g[c].astype(np.float64), clamped, order=1, mode="nearest")
        tol = 8 * np.spacing(np.float32(np.abs(g[c]).max()))
        assert np.max(np.abs(base[c] - ref)) <= tol
        assert np.max(np.abs(fast[c] - ref)) <= tol


@needs_avx2
def test_splat_paths_identical_bits_and_deterministic():
    """The splat's vectorised row preparation (AVX2 or baseline) feeds the same
    read-modify-writes in the same order: the same bits on both paths, run
    after run, at a fixed thread count; and the mass agrees with a float64
    np.add.at reference."""
    shape = (53, 41, 29)
    rng = np.random.default_rng(11)
    ident = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float32) for n in shape], indexing="ij"))
    pts = ident + rng.uniform(-2.5, 2.5, ident.shape).astype(np.float32)
    h = field_from(list(pts))
    a = rng.standard_normal(shape).astype(np.float32)
    im, m = image_from(a), field_from(list(rng.standard_normal((3,) + shape).astype(np.float32)))
    oi, of = ca.Image3D(h.grid(), ca.MEM_HOST), ca.Field3D(h.grid(), ca.MEM_HOST)

    def run():
        ca.Splat(oi, h, im, False)
        s = np.array(oi.asnp()).copy()
        ca.SplatField(of, m, h)
        return s, _field_np(of).copy()
    (b1, bf1), (f1, ff1) = _run_both(run)
    (b2, bf2), (f2, ff2) = _run_both(run)
    assert b1.tobytes() == f1.tobytes() == b2.tobytes() == f2.tobytes()
    assert bf1.tobytes() == ff1.tobytes() == bf2.tobytes() == ff2.tobytes()
    # float64 reference: every in-range corner of every point gets its weight
    ref = np.zeros(shape)
    p = pts.reshape(3, -1).astype(np.float64)
    f0 = np.floor(p)
    t = p - f0
    for c in range(8):
        off = np.array([c & 1, (c >> 1) & 1, c >> 2])[:, None]
        idx = (f0 + off).astype(np.int64)
        w = np.prod(np.where(off == 1, t, 1 - t), axis=0)
        ok = np.all((idx >= 0) & (idx < np.array(shape)[:, None]), axis=0)
        np.add.at(ref, tuple(idx[:, ok]), w[ok] * a.reshape(-1)[ok])
    assert np.max(np.abs(b1 - ref)) <= 1e-4 * np.abs(a).max() * 8


def test_jacobian_norm_sqr_matches_numpy():
    """JacobianNormSqr = the sum of the squares of Jacobian's nine derivatives
    (one pass): against np.gradient-style central differences (divided by the
    spacing) in the interior, and against Jacobian + a float64 sum of squares
    everywhere (the borders' one-sided differences)."""
    shape = (23, 19, 11)
    sp = (1.0, 1.25, 0.8)
    rng = np.random.default_rng(5)
    comps = rng.standard_normal((3,) + shape).astype(np.float32)
    g = grid(*shape, sp=sp)
    v = field_from(list(comps), g)
    out = ca.Image3D(g, ca.MEM_HOST)
    ca.JacobianNormSqr(out, v)
    got = np.array(out.asnp(), np.float64)
    c64 = comps.astype(np.float64)
    ref = np.zeros(shape)
    for comp in range(3):
        for ax in range(3):
            d = np.zeros(shape)
            sl_c = [slice(1, -1)] * 3
            sl_p, sl_m = list(sl_c), list(sl_c)
            sl_p[ax], sl_m[ax] = slice(2, None), slice(None, -2)
            d[tuple(sl_c)] = (c64[comp][tuple(sl_p)] - c64[comp][tuple(sl_m)]) / (2 * sp[ax])
            ref += d ** 2
    inner = (slice(1, -1),) * 3
    np.testing.assert_allclose(got[inner], ref[inner], rtol=1e-5, atol=1e-5)
    X, Y, Z = (ca.Field3D(g, ca.MEM_HOST) for _ in range(3))
    ca.Jacobian(X, Y, Z, v)
    full = sum((_field_np(f).astype(np.float64) ** 2).sum(0) for f in (X, Y, Z))
    np.testing.assert_allclose(got, full, rtol=1e-5, atol=1e-5)
    # 2-D: the flat axis contributes nothing
    g2 = grid(17, 13, 1)
    v2 = field_from([c[:, :, :1] for c in comps[:, :17, :13]], g2)
    o2 = ca.Image3D(g2, ca.MEM_HOST)
    ca.JacobianNormSqr(o2, v2)
    assert np.all(np.isfinite(np.array(o2.asnp())))
    with pytest.raises(RuntimeError):
        ca.JacobianNormSqr(ca.Image3D(grid(3, 3, 3), ca.MEM_HOST), v)
