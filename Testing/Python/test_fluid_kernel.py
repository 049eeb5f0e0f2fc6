"""FluidKernelFFTCPU / FluidKernelFFTGPU: the fluid operator
L = -alpha Lap - beta grad div + gamma Id and its inverse K.

References, all independent of the code under test:

* ``stencil_L``: L in real space with periodic NumPy stencils (np.roll), no
  FFT: the 3-point second difference (f[i+1] - 2 f[i] + f[i-1]) / h^2 for the
  Laplacian and for the diagonal of grad div, the central difference
  (f[i+1] - f[i-1]) / (2 h) composed twice across axes for its off-diagonal
  terms. Its Fourier symbol is the legacy's (FluidKernelFFT.h), so
  applyOperator must equal it to float rounding, and K must invert it.
* the closed-form symbol on one Fourier mode (``mode_matrix``): a field
  whose components are real sinusoids of one wave vector is an eigen-space
  of L, L v = M v pointwise with M the 3x3 symbol matrix.
* the discrete divergence of the divergence-free results: central differences
  with periodic wrap (the stencil whose symbol is the projection's
  i sin(2 pi k / N) / h), computed with NumPy and with our
  Divergence(DIFF_CENTRAL, BC_WRAP), whose stencil is the same.
* the legacy golden outputs: test_golden_fluid.py.

GPU tests (parity with the CPU kernel, per-instance tables, memory-type
errors) skip without a CUDA device.
"""
import os
import time

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import cuda_compiled, field_from, gpu_only, grid, has_gpu, run_python, to_np

RNG_SEED = 8101


def make_kernel(cls=None, alpha=1.0, beta=0.0, gamma=0.0, lpow=1, divfree=False, g=None):
    k = (cls or ca.FluidKernelFFTCPU)()
    k.setAlpha(alpha)
    k.setBeta(beta)
    k.setGamma(gamma)
    k.setLPow(lpow)
    k.setDivergenceFree(divfree)
    if g is not None:
        k.setGrid(g)
    return k


def random_field(size, seed=RNG_SEED):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size).astype(np.float32) for _ in range(3)]


def as64(comps):
    return np.stack([np.asarray(c, np.float64) for c in comps])


# ---------------------------------------------------------------------------
# references

def d2(a, ax, h):
    """Periodic second difference along axis ax."""
    return (np.roll(a, -1, ax) - 2.0 * a + np.roll(a, 1, ax)) / (h * h)


def dc(a, ax, h):
    """Periodic central difference along axis ax."""
    return (np.roll(a, -1, ax) - np.roll(a, 1, ax)) / (2.0 * h)


def stencil_L(v, sp, alpha, beta, gamma, lpow=1):
    """L^lpow v in real space (v: (3, X, Y, Z) float64)."""
    u = np.array(v, np.float64)
    for _ in range(lpow):
        lap = [sum(d2(u[d], e, sp[e]) for e in range(3)) for d in range(3)]
        gd = []
        for d in range(3):
            t = d2(u[d], d, sp[d])
            for e in range(3):
                if e != d:
                    t = t + dc(dc(u[e], e, sp[e]), d, sp[d])
            gd.append(t)
        u = np.stack([-alpha * lap[d] - beta * gd[d] + gamma * u[d] for d in range(3)])
    return u


def central_div(u, sp):
    return sum(dc(u[d], d, sp[d]) for d in range(3))


def mode_matrix(m, size, sp, alpha, beta, gamma):
    """The closed-form symbol matrix of L at wave vector m."""
    th = [2.0 * np.pi * m[d] / size[d] for d in range(3)]
    W = [(2.0 * np.cos(th[d]) - 2.0) / sp[d] ** 2 for d in range(3)]
    S = [np.sin(th[d]) / sp[d] for d in range(3)]
    lam = gamma - alpha * sum(W)
    M = np.empty((3, 3))
    for d in range(3):
        for e in range(3):
            M[d, e] = lam - beta * W[d] if d == e else beta * S[d] * S[e]
    return M, np.array(S)


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(1e-30, np.abs(want).max()))


def apply(k, comps, g, inverse=False, inplace=False, mem=ca.MEM_HOST):
    f = field_from(comps, g, mem)
    meth = k.applyInverseOperator if inverse else k.applyOperator
    if inplace:
        meth(f)
        return as64(to_np(f))
    out = ca.Field3D(g, mem)
    ca.SetMem(out, float("nan"))
    meth(out, f)
    return as64(to_np(out))


PARAMS = [
    dict(alpha=0.01, beta=0.01, gamma=0.001, lpow=1),
    dict(alpha=1.0, beta=0.0, gamma=0.0, lpow=1),
    dict(alpha=0.5, beta=0.2, gamma=0.3, lpow=2),
    dict(alpha=1.0, beta=1.0, gamma=0.1, lpow=3),
    dict(alpha=0.2, beta=0.7, gamma=0.05, lpow=4),   # lpow applied at run time (no compiled power)
    dict(alpha=0.3, beta=0.1, gamma=2.0, lpow=0),    # L^0 = identity
]
GRIDS = [
    ((16, 12, 10), (1.0, 1.0, 1.0)),     # even sizes
    ((13, 11, 7), (1.5, 2.1, 0.7)),      # odd, anisotropic
    ((17, 15, 1), (1.25, 0.8, 1.0)),     # 2-D
    ((9, 1, 6), (0.9, 1.0, 1.3)),        # a unit extent in the middle
    ((1, 8, 5), (1.0, 0.6, 1.7)),        # unit x: the halved axis is y
    ((600, 3, 2), (0.5, 1.0, 2.0)),      # > 512 along an axis (legacy: error)
]


def pid(p):
    return "a%g_b%g_g%g_p%d" % (p["alpha"], p["beta"], p["gamma"], p["lpow"])


def gid(gs):
    return "x".join(map(str, gs[0]))


# ---------------------------------------------------------------------------
# the operator and its inverse against the stencil reference

@pytest.mark.parametrize("gs", GRIDS, ids=gid)
@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_apply_operator_equals_stencil(gs, p):
    size, sp = gs
    g = grid(*size, sp=sp)
    v = random_field(size)
    k = make_kernel(g=g, **p)
    want = stencil_L(as64(v), sp, p["alpha"], p["beta"], p["gamma"], p["lpow"])
    got = apply(k, v, g)
    assert rel_err(got, want) < 2e-5 * max(1, p["lpow"])


#: invertible sets (gamma > 0) whose round trip float32 can resolve (the
#: error grows like cond(L)^lpow)
INV_PARAMS = [
    dict(alpha=0.01, beta=0.01, gamma=0.001, lpow=1),
    dict(alpha=0.5, beta=0.2, gamma=0.3, lpow=2),
    dict(alpha=0.3, beta=0.3, gamma=1.0, lpow=3),
    dict(alpha=0.05, beta=0.1, gamma=0.5, lpow=4),
]


def round_trip_tol(p, sp):
    """float32 error bound of K L v: about 3e-7 cond(L)^lpow relative, with
    cond(L) <= 1 + 4 (alpha + beta) sum(1/h^2) / gamma."""
    cond = 1.0 + 4.0 * (p["alpha"] + p["beta"]) * sum(1.0 / h ** 2 for h in sp) / p["gamma"]
    return 1e-6 + 3e-7 * cond ** p["lpow"]


@pytest.mark.parametrize("gs", GRIDS, ids=gid)
@pytest.mark.parametrize("p", INV_PARAMS, ids=pid)
def test_inverse_inverts(gs, p):
    """K L v = v and L K f = f (gamma > 0: L is invertible at every frequency)."""
    size, sp = gs
    g = grid(*size, sp=sp)
    v = random_field(size, seed=3)
    k = make_kernel(g=g, **p)
    Lv = stencil_L(as64(v), sp, p["alpha"], p["beta"], p["gamma"], p["lpow"]).astype(np.float32)
    tol = round_trip_tol(p, sp)
    assert tol < 2e-3
    assert rel_err(apply(k, list(Lv), g, inverse=True), as64(v)) < tol
    Kv = apply(k, v, g, inverse=True)
    LKv = stencil_L(Kv, sp, p["alpha"], p["beta"], p["gamma"], p["lpow"])
    assert rel_err(LKv, as64(v)) < tol


@pytest.mark.parametrize("gs", GRIDS[:3], ids=gid)
def test_gamma_zero_inverse_has_zero_mean(gs):
    """gamma = 0: the zero frequency of K f is 0 (zero mean), and L K f is f
    less its mean (L annihilates constants)."""
    size, sp = gs
    g = grid(*size, sp=sp)
    rng = np.random.default_rng(11)
    f = [(rng.uniform(-1, 1, size) + 5.0 * (d + 1)).astype(np.float32) for d in range(3)]
    for p in (dict(alpha=1.0, beta=0.0), dict(alpha=0.5, beta=0.2), dict(alpha=0.01, beta=0.01)):
        k = make_kernel(g=g, gamma=0.0, **p)
        Kf = apply(k, f, g, inverse=True)
        assert np.all(np.isfinite(Kf))
        for d in range(3):
            assert abs(Kf[d].mean()) < 1e-5 * np.abs(Kf[d]).max()
        LKf = stencil_L(Kf, sp, p["alpha"], p["beta"], 0.0)
        centred = as64(f) - as64(f).mean(axis=(1, 2, 3), keepdims=True)
        assert rel_err(LKf, centred) < 1e-4
        # the forward operator of a constant is 0
        const = [np.full(size, 3.0 + d, np.float32) for d in range(3)]
        assert np.abs(apply(k, const, g)).max() < 1e-4


@pytest.mark.parametrize("inverse", [False, True], ids=["L", "K"])
@pytest.mark.parametrize("divfree", [False, True], ids=["plain", "divfree"])
def test_single_fourier_mode_closed_form(inverse, divfree):
    """v_d = c_d cos(theta . x + phi_d): L^2 v = M^2 v with the closed-form
    symbol matrix M (anisotropic spacing, beta != 0, lpow = 2), K^2 v = M^-2 v,
    and with divergence-free on, the result's coefficient vectors are then
    projected onto the complement of S."""
    size, sp = (12, 10, 9), (1.3, 0.7, 2.2)
    m = (2, 3, 1)
    alpha, beta, gamma = 0.4, 0.6, 0.25
    x = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in size], indexing="ij")
    phase = sum(2.0 * np.pi * m[d] * x[d] / size[d] for d in range(3))
    c = np.array([0.7, -1.1, 0.4])
    phi = np.array([0.3, 1.9, -0.8])
    v = np.stack([c[d] * np.cos(phase + phi[d]) for d in range(3)])
    M, S = mode_matrix(m, size, sp, alpha, beta, gamma)
    M2 = M @ M
    if inverse:
        M2 = np.linalg.inv(M2)
    # v = A cos(phase) - B sin(phase) with A_d = c_d cos phi_d, B_d = c_d sin phi_d
    A, B = c * np.cos(phi), c * np.sin(phi)
    A2, B2 = M2 @ A, M2 @ B
    if divfree:
        P = np.eye(3) - np.outer(S, S) / (S @ S)
        A2, B2 = P @ A2, P @ B2
    want = np.stack([A2[d] * np.cos(phase) - B2[d] * np.sin(phase) for d in range(3)])
    g = grid(*size, sp=sp)
    k = make_kernel(g=g, alpha=alpha, beta=beta, gamma=gamma, lpow=2, divfree=divfree)
    got = apply(k, list(v.astype(np.float32)), g, inverse=inverse)
    assert rel_err(got, want) < 2e-5


@pytest.mark.parametrize("gs", GRIDS[:4], ids=gid)
@pytest.mark.parametrize("inverse", [False, True], ids=["L", "K"])
def test_divergence_free_projection(gs, inverse):
    """The divergence-free results have zero central-difference divergence
    (periodic): checked with NumPy and with Divergence(DIFF_CENTRAL, BC_WRAP);
    projecting twice changes nothing (applyOperator with alpha = beta = 0,
    gamma = 1 is the projection itself)."""
    size, sp = gs
    g = grid(*size, sp=sp)
    v = random_field(size, seed=5)
    k = make_kernel(g=g, alpha=0.1, beta=0.05, gamma=0.5, divfree=True)
    u = apply(k, v, g, inverse=inverse)
    scale = max(np.abs(central_div(as64(v), sp)).max(), 1e-30)
    assert np.abs(central_div(u, sp)).max() < 1e-5 * scale * (1 + np.abs(u).max())
    div = ca.Image3D(g, ca.MEM_HOST)
    ca.Divergence(div, field_from(list(u.astype(np.float32)), g), ca.DIFF_CENTRAL, ca.BC_WRAP)
    assert np.abs(np.array(div.asnp())).max() < 1e-5 * (1 + np.abs(u).max()) / min(sp)
    # without the projection the divergence is not small (the check can fail)
    plain = apply(make_kernel(g=g, alpha=0.1, beta=0.05, gamma=0.5), v, g, inverse=inverse)
    assert np.abs(central_div(plain, sp)).max() > 1e-2 * np.abs(plain).max()
    proj = make_kernel(g=g, alpha=0.0, beta=0.0, gamma=1.0, divfree=True)
    assert rel_err(apply(proj, list(u.astype(np.float32)), g), u) < 1e-5


# ---------------------------------------------------------------------------
# in place, several kernels, threads

@pytest.mark.parametrize("gs", GRIDS[1:3], ids=gid)
@pytest.mark.parametrize("divfree", [False, True])
@pytest.mark.parametrize("inverse", [False, True], ids=["L", "K"])
def test_in_place_equals_two_argument(gs, divfree, inverse):
    size, sp = gs
    g = grid(*size, sp=sp)
    v = random_field(size, seed=7)
    k = make_kernel(g=g, alpha=0.5, beta=0.2, gamma=0.1, lpow=2, divfree=divfree)
    two = apply(k, v, g, inverse=inverse)
    one = apply(k, v, g, inverse=inverse, inplace=True)
    assert np.array_equal(one, two)


def test_two_argument_leaves_input_unchanged_and_accepts_aliasing():
    size, sp = (14, 9, 6), (1.0, 1.5, 0.5)
    g = grid(*size, sp=sp)
    v = random_field(size, seed=9)
    k = make_kernel(g=g, alpha=0.3, beta=0.3, gamma=0.2)
    f = field_from(v, g)
    out = ca.Field3D(g, ca.MEM_HOST)
    k.applyInverseOperator(out, f)
    assert all(np.array_equal(a, b) for a, b in zip(to_np(f), v))
    k.applyInverseOperator(f, f)  # the same field as both arguments
    assert np.array_equal(as64(to_np(f)), as64(to_np(out)))


def test_kernels_on_different_grids_coexist():
    """Two kernels on different grids, and two on the same grid, used
    interleaved, give what each gives alone (legacy GPU: the last setGrid's
    tables won)."""
    ga, sa = grid(20, 18, 16, sp=(1.0, 1.2, 0.8)), (20, 18, 16)
    gb, sb = grid(17, 9, 1, sp=(0.5, 2.0, 1.0)), (17, 9, 1)
    va, vb = random_field(sa, 1), random_field(sb, 2)
    pa = dict(alpha=0.2, beta=0.1, gamma=0.05, lpow=1)
    pb = dict(alpha=1.0, beta=0.5, gamma=0.3, lpow=2, divfree=True)
    alone_a = apply(make_kernel(g=ga, **pa), va, ga, inverse=True)
    alone_b = apply(make_kernel(g=gb, **pb), vb, gb, inverse=True)
    ka, kb = make_kernel(g=ga, **pa), make_kernel(g=gb, **pb)
    ka2 = make_kernel(g=ga, alpha=0.7, beta=0.0, gamma=1.0)
    alone_a2 = apply(make_kernel(g=ga, alpha=0.7, beta=0.0, gamma=1.0), va, ga)
    for _ in range(3):
        assert np.array_equal(apply(ka, va, ga, inverse=True), alone_a)
        assert np.array_equal(apply(kb, vb, gb, inverse=True), alone_b)
        assert np.array_equal(apply(ka2, va, ga), alone_a2)
    # setGrid again on another grid, then back
    ka.setGrid(gb)
    ka.setGrid(ga)
    assert np.array_equal(apply(ka, va, ga, inverse=True), alone_a)


def test_parameter_changes_apply_without_setgrid():
    size, sp = (10, 8, 6), (1.0, 1.0, 1.0)
    g = grid(*size, sp=sp)
    v = random_field(size, 4)
    k = make_kernel(g=g, alpha=1.0)
    apply(k, v, g)
    k.setAlpha(0.25)
    k.setBeta(0.5)
    k.setGamma(0.75)
    k.setLPow(2)
    assert rel_err(apply(k, v, g), stencil_L(as64(v), sp, 0.25, 0.5, 0.75, 2)) < 2e-5


def test_thread_count_does_not_change_results():
    """One OpenMP thread (a fresh process) gives the multi-threaded result to
    float rounding (FFTW's threaded plans may order sums differently)."""
    size = (48, 40, 36)
    code = r"""
import sys, numpy as np
import PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(48, 40, 36), ca.Vec3Df(1.0, 0.8, 1.2))
rng = np.random.default_rng(17)
f = ca.Field3D(g, ca.MEM_HOST)
for a in f.asnp(): a[...] = rng.uniform(-1, 1, (48, 40, 36))
k = ca.FluidKernelFFTCPU(); k.setAlpha(0.1); k.setBeta(0.1); k.setGamma(0.01); k.setGrid(g)
k.applyInverseOperator(f)
np.save(sys.argv[1], np.stack([np.array(a) for a in f.asnp()]))
"""
    outs = []
    for nt in ("1", "2"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pyca_fluid_thr_%d_%s.npy" % (os.getpid(), nt))
        env_old = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = nt
        try:
            r = run_python(code, path)
        finally:
            if env_old is None:
                del os.environ["OMP_NUM_THREADS"]
            else:
                os.environ["OMP_NUM_THREADS"] = env_old
        assert r.returncode == 0, r.stderr
        outs.append(np.load(path))
        os.remove(path)
    assert outs[0].shape == (3,) + size
    assert rel_err(outs[0], outs[1]) < 1e-5


# ---------------------------------------------------------------------------
# planning

def test_first_setgrid_is_fast_in_a_fresh_process(tmp_path):
    """The first setGrid of 128^3 in a fresh process plans in milliseconds
    (legacy: 1.4 s of FFTW_MEASURE). No wisdom file (an empty cache)."""
    code = r"""
import time
import PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(128, 128, 128))
k = ca.FluidKernelFFTCPU()
t = time.perf_counter(); k.setGrid(g); print(time.perf_counter() - t)
"""
    os.environ["XDG_CACHE_HOME"], old = str(tmp_path), os.environ.get("XDG_CACHE_HOME")
    try:
        r = run_python(code)
    finally:
        if old is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = old
    assert r.returncode == 0, r.stderr
    # target 0.1 s; the bound leaves room for a loaded test machine
    assert float(r.stdout.split()[-1]) < 0.25
    assert not os.listdir(str(tmp_path))  # the default planner writes no wisdom


def _env_run(code, env, *args):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return run_python(code, *args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_PLAN_CODE = r"""
import sys, numpy as np
import PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(24, 20, 18), ca.Vec3Df(1.0, 1.1, 0.9))
f = ca.Field3D(g, ca.MEM_HOST)
rng = np.random.default_rng(5)
for a in f.asnp(): a[...] = rng.uniform(-1, 1, (24, 20, 18))
k = ca.FluidKernelFFTCPU(); k.setAlpha(0.2); k.setBeta(0.1); k.setGamma(0.05); k.setGrid(g)
k.applyInverseOperator(f)
np.save(sys.argv[1], np.stack([np.array(a) for a in f.asnp()]))
"""


@pytest.mark.skipif(ca.GetCPUFFTBackend() != "fftw", reason="FFTW wisdom: this build uses pocketfft")
def test_measured_planner_saves_and_reuses_wisdom(tmp_path):
    """PYCA_FFTW_PLANNER=measure stores wisdom in $XDG_CACHE_HOME/pyca; a
    later default process reads it; all give the same result."""
    cache = tmp_path / "cache"
    res = []
    for i, planner in enumerate(("measure", "estimate")):
        out = str(tmp_path / ("r%d.npy" % i))
        r = _env_run(_PLAN_CODE, {"XDG_CACHE_HOME": str(cache), "PYCA_FFTW_PLANNER": planner}, out)
        assert r.returncode == 0, r.stderr
        res.append(np.load(out))
        if i == 0:
            wisdom = cache / "pyca" / "fftwf-wisdom"
            assert wisdom.is_file() and wisdom.stat().st_size > 0
            assert "fftw" in wisdom.read_text()
    assert rel_err(res[0], res[1]) < 1e-5


def test_unwritable_wisdom_location_is_ignored(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(str(ro), 0o500)
    try:
        for target in (str(ro / "sub" / "wisdom"), "/proc/pyca-no-such-dir/wisdom"):
            out = str(tmp_path / "r.npy")
            r = _env_run(_PLAN_CODE, {"PYCA_FFTW_WISDOM": target, "PYCA_FFTW_PLANNER": "measure"}, out)
            assert r.returncode == 0, r.stderr
            assert r.stderr == ""
            assert np.all(np.isfinite(np.load(out)))
    finally:
        os.chmod(str(ro), 0o700)


# ---------------------------------------------------------------------------
# parameters, edge cases and errors

def test_defaults_and_accessors():
    k = ca.FluidKernelFFTCPU()
    assert (k.getAlpha(), k.getBeta(), k.getGamma(), k.getLPow(), k.getDivergenceFree()) == \
        (1.0, 0.0, 0.0, 1, False)
    assert k.memType() == ca.MEM_HOST
    k.setAlpha(0.5)
    k.setBeta(0.25)
    k.setGamma(2.0)
    k.setLPow(3)
    k.setDivergenceFree(True)
    assert (k.getAlpha(), k.getBeta(), k.getGamma(), k.getLPow(), k.getDivergenceFree()) == \
        (0.5, 0.25, 2.0, 3, True)
    assert isinstance(k, ca.FluidKernelFFTInterface)
    with pytest.raises(ValueError, match="LPow must be >= 0"):
        k.setLPow(-1)
    assert k.getLPow() == 3
    with pytest.raises(TypeError, match="abstract"):
        ca.FluidKernelFFTInterface()


def test_gpu_class_only_in_cuda_builds():
    assert hasattr(ca, "FluidKernelFFTGPU") == cuda_compiled()


def test_one_voxel_grid():
    g = grid(1, 1, 1, sp=(2.0, 1.0, 1.0))
    k = make_kernel(g=g, alpha=1.0, beta=1.0, gamma=0.5)
    v = [np.full((1, 1, 1), x, np.float32) for x in (1.0, -2.0, 4.0)]
    assert np.allclose(apply(k, v, g).ravel(), [0.5, -1.0, 2.0])
    assert np.allclose(apply(k, v, g, inverse=True).ravel(), [2.0, -4.0, 8.0])
    k.setGamma(0.0)
    assert np.array_equal(apply(k, v, g, inverse=True).ravel(), [0.0, 0.0, 0.0])


def test_empty_grid_is_a_no_op():
    g = grid(0, 4, 4)
    k = make_kernel(g=g)
    f = ca.Field3D(g, ca.MEM_HOST)
    k.applyOperator(f)
    k.applyInverseOperator(f, f)


def test_errors_have_legacy_messages_and_never_crash():
    g = grid(8, 6, 4, sp=(1.0, 1.5, 2.0))
    f = ca.Field3D(g, ca.MEM_HOST)
    ca.SetMem(f, 1.0)
    k = ca.FluidKernelFFTCPU()
    with pytest.raises(RuntimeError, match="setGrid has not been called"):
        k.applyOperator(f)
    with pytest.raises(RuntimeError, match="setGrid has not been called"):
        k.applyInverseOperator(f, f)
    k.setGrid(g)
    other_size = ca.Field3D(grid(8, 6, 5, sp=(1.0, 1.5, 2.0)), ca.MEM_HOST)
    other_sp = ca.Field3D(grid(8, 6, 4, sp=(1.0, 1.5, 2.5)), ca.MEM_HOST)
    for bad in (other_size, other_sp):
        with pytest.raises(RuntimeError, match="Input grids are not equal"):
            k.applyOperator(bad)
        with pytest.raises(RuntimeError, match="Input grids are not equal"):
            k.applyOperator(f, bad)
        with pytest.raises(RuntimeError, match="Input grids are not equal"):
            k.applyInverseOperator(bad, f)
    # the message carries the C++ declaration and the legacy location format
    with pytest.raises(RuntimeError) as e:
        k.applyInverseOperator(other_size)
    assert "applyInverseOperator" in str(e.value) and "PyCAException : From" in str(e.value)
    # the origin plays no part
    moved = ca.Field3D(grid(8, 6, 4, sp=(1.0, 1.5, 2.0), org=(3.0, -1.0, 2.0)), ca.MEM_HOST)
    ca.SetMem(moved, 1.0)
    k.applyOperator(moved)
    # (applyOperator(f, None) is the in-place form with the default stream)
    for call in (lambda: k.applyOperator(None), lambda: k.applyInverseOperator(None),
                 lambda: k.applyInverseOperator(None, f), lambda: k.setGrid(None),
                 lambda: k.applyOperator(ca.Image3D(g, ca.MEM_HOST))):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(ValueError):
        k.setGrid(grid(-1, 4, 4))
    # a failed setGrid leaves the kernel as it was
    k.applyOperator(f)
    # a grid mutated past the field's capacity is caught
    big = ca.Field3D(g, ca.MEM_HOST)
    k2 = make_kernel(g=grid(64, 64, 64, sp=(1.0, 1.5, 2.0)))
    big.grid().size().x = 64
    big.grid().size().y = 64
    big.grid().size().z = 64
    with pytest.raises(RuntimeError):
        k2.applyOperator(big)


# ---------------------------------------------------------------------------
# spectral tolerance (PyCA extension): K without its negligible frequencies

def band_mask(size, sp, alpha, gamma, lpow, eps):
    """The modes setSpectralTolerance keeps, from its definition: a mode goes
    when along some axis d alone (1 + alpha lambda_d / gamma)^lpow >= 1 / eps,
    lambda_d = (2 - 2 cos(2 pi k_d / N_d)) / h_d^2 (full FFT grid, [x, y, z])."""
    keep = np.ones(size, bool)
    for d in range(3):
        k = np.arange(size[d])
        lam = (2.0 - 2.0 * np.cos(2.0 * np.pi * k / size[d])) / sp[d] ** 2
        ok = (1.0 + alpha * lam / gamma) ** lpow < 1.0 / eps
        shape = [1, 1, 1]
        shape[d] = size[d]
        keep &= ok.reshape(shape)
    return keep


def band_project(comps, keep):
    """The field with the modes outside `keep` removed (float64 NumPy FFTs)."""
    return np.stack([np.real(np.fft.ifftn(np.fft.fftn(np.asarray(c, np.float64)) * keep)) for c in comps])


def numpy_L_power(comps, size, sp, alpha, gamma, power, keep=None):
    """L^power f for beta = 0 (the multiplier (gamma + alpha lambda)^power), float64;
    keep: the modes kept (the others zero)."""
    lam = 0.0
    for d in range(3):
        k = np.arange(size[d])
        shape = [1, 1, 1]
        shape[d] = size[d]
        lam = lam + ((2.0 - 2.0 * np.cos(2.0 * np.pi * k / size[d])) / sp[d] ** 2).reshape(shape)
    mult = (gamma + alpha * lam) ** float(power)
    if keep is not None:
        mult = mult * keep
    return np.stack([np.real(np.fft.ifftn(np.fft.fftn(np.asarray(c, np.float64)) * mult)) for c in comps])


def numpy_K(comps, size, sp, alpha, gamma, lpow, keep=None):
    """K f = L^-lpow f for beta = 0, float64."""
    return numpy_L_power(comps, size, sp, alpha, gamma, -lpow, keep)


def numpy_L(comps, size, sp, alpha, gamma, lpow, keep=None):
    """L^lpow f for beta = 0, float64."""
    return numpy_L_power(comps, size, sp, alpha, gamma, lpow, keep)


TOL_GRIDS = [
    ((40, 36, 32), (2.0, 2.0, 2.0)),      # even: both y ranges, pruned along x and y
    ((33, 27, 19), (1.0, 1.3, 0.8)),      # odd, anisotropic
    ((24, 50, 9), (1.0, 1.0, 4.0)),       # z keeps every mode (coarse spacing)
    ((50, 8, 30), (1.0, 4.0, 1.0)),       # y keeps every mode, x pruned
]


@pytest.mark.parametrize("gs", TOL_GRIDS, ids=gid)
@pytest.mark.parametrize("eps", [1e-4, 1e-2])
def test_spectral_tolerance_drops_exactly_the_band(gs, eps):
    size, sp = gs
    g = grid(*size, sp=sp)
    p = dict(alpha=200.0, beta=0.0, gamma=1.0, lpow=2)
    v = random_field(size, 31)
    k = make_kernel(g=g, **p)
    k.setSpectralTolerance(eps)
    assert k.getSpectralTolerance() == pytest.approx(eps)
    keep = band_mask(size, sp, p["alpha"], p["gamma"], p["lpow"], eps)
    assert 0 < keep.sum() < keep.size               # the band drops modes here
    want = numpy_K(v, size, sp, p["alpha"], p["gamma"], p["lpow"], keep)
    for inplace in (False, True):
        got = apply(k, v, g, inverse=True, inplace=inplace)
        assert rel_err(got, want) < 2e-5
    # and the truncation is within eps of the exact K in the operator norm
    exact = numpy_K(v, size, sp, p["alpha"], p["gamma"], p["lpow"])
    got = apply(k, v, g, inverse=True)
    assert np.linalg.norm(got - exact) <= eps * np.linalg.norm(as64(v)) * 1.001 + 1e-5 * np.linalg.norm(exact)
    # applyOperator (L) is not truncated (unless setBandedOperator(True))
    assert np.array_equal(apply(k, v, g), apply(make_kernel(g=g, **p), v, g))


@pytest.mark.parametrize("p", [dict(alpha=500.0, beta=30.0, gamma=0.5, lpow=1),
                               dict(alpha=200.0, beta=100.0, gamma=1.0, lpow=2, divfree=True),
                               dict(alpha=80.0, beta=0.0, gamma=2.0, lpow=3)], ids=pid)
def test_spectral_tolerance_is_K_of_the_band_projection(p):
    """With grad div and the projection: K_eps f = K (P f), P the NumPy
    projection onto the kept modes, and ||K_eps f - K f|| <= eps ||K|| ||f||."""
    size, sp = (36, 30, 28), (1.0, 1.2, 1.5)
    g = grid(*size, sp=sp)
    eps = 1e-3
    v = random_field(size, 41)
    exact_k = make_kernel(g=g, **p)
    k = make_kernel(g=g, **p)
    k.setSpectralTolerance(eps)
    keep = band_mask(size, sp, p["alpha"], p["gamma"], p["lpow"], eps)
    assert 0 < keep.sum() < keep.size
    got = apply(k, v, g, inverse=True)
    want = apply(exact_k, list(band_project(v, keep).astype(np.float32)), g, inverse=True)
    assert rel_err(got, want) < 1e-4
    exact = apply(exact_k, v, g, inverse=True)
    norm_K = p["gamma"] ** -p["lpow"]
    assert np.linalg.norm(got - exact) <= eps * norm_K * np.linalg.norm(as64(v)) * 1.001 + 1e-5 * np.linalg.norm(exact)


@pytest.mark.parametrize("case", ["2-D", "gamma 0", "beta < 0", "zero tolerance", "nothing below eps"])
def test_spectral_tolerance_leaves_K_exact_where_it_does_not_apply(case):
    size, sp, p, eps = (20, 18, 16), (1.0, 1.0, 1.0), dict(alpha=200.0, beta=0.0, gamma=1.0, lpow=2), 1e-4
    if case == "2-D":
        size = (20, 18, 1)
    elif case == "gamma 0":
        p["gamma"] = 0.0
    elif case == "beta < 0":
        p["beta"] = -10.0
    elif case == "zero tolerance":
        eps = 0.0
    else:
        p["alpha"] = 0.01
    g = grid(*size, sp=sp)
    v = random_field(size, 51)
    k = make_kernel(g=g, **p)
    k.setSpectralTolerance(eps)
    assert np.array_equal(apply(k, v, g, inverse=True), apply(make_kernel(g=g, **p), v, g, inverse=True))


@pytest.mark.parametrize("gs", TOL_GRIDS[:2], ids=gid)
@pytest.mark.parametrize("lpow,eps", [(2, 1e-4), (3, 1e-3)])
def test_banded_operator_is_L_on_the_band(gs, lpow, eps):
    """setBandedOperator(True): applyOperator is L restricted to the band
    applyInverseOperator keeps (NumPy: the multiplier (gamma + alpha lambda)^lpow
    on the kept modes, zero elsewhere); K and the legacy L are unchanged, and
    L_band K_band is the projection onto the band."""
    size, sp = gs
    g = grid(*size, sp=sp)
    p = dict(alpha=125.0, beta=0.0, gamma=1.0, lpow=lpow)
    v = random_field(size, 61)
    k = make_kernel(g=g, **p)
    k.setSpectralTolerance(eps)
    assert k.getBandedOperator() is False
    full = apply(k, v, g)
    k.setBandedOperator(True)
    assert k.getBandedOperator() is True
    keep = band_mask(size, sp, p["alpha"], p["gamma"], p["lpow"], eps)
    assert 0 < keep.sum() < keep.size
    want = numpy_L(v, size, sp, p["alpha"], p["gamma"], p["lpow"], keep)
    for inplace in (False, True):
        assert rel_err(apply(k, v, g, inplace=inplace), want) < 1e-4
    assert rel_err(full, numpy_L(v, size, sp, p["alpha"], p["gamma"], p["lpow"])) < 1e-4
    assert rel_err(apply(k, v, g, inverse=True),
                   numpy_K(v, size, sp, p["alpha"], p["gamma"], p["lpow"], keep)) < 2e-5
    # L_band (K_band v) = P v
    kv = apply(k, v, g, inverse=True)
    assert rel_err(apply(k, list(kv.astype(np.float32)), g), band_project(v, keep)) < 1e-3
    k.setBandedOperator(False)
    assert np.array_equal(apply(k, v, g), full)


def test_spectral_tolerance_default_and_errors():
    k = ca.FluidKernelFFTCPU()
    assert k.getSpectralTolerance() == 0.0
    for bad in (-1e-3, 1.0, 2.0, float("nan")):
        with pytest.raises(ValueError, match="spectral tolerance must be in"):
            k.setSpectralTolerance(bad)
    assert k.getSpectralTolerance() == 0.0
    with pytest.raises(TypeError):
        k.setSpectralTolerance(None)


def test_spectral_tolerance_same_with_any_thread_count_and_planner():
    size, sp = (40, 36, 32), (2.0, 2.0, 2.0)
    code = """
import sys, numpy as np, PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(40, 36, 32), ca.Vec3Df(2.0, 2.0, 2.0))
f = ca.Field3D(g, ca.MEM_HOST)
rng = np.random.default_rng(7)
for a in f.asnp(): a[...] = rng.uniform(-1, 1, a.shape)
k = ca.FluidKernelFFTCPU(); k.setAlpha(200.0); k.setGamma(1.0); k.setLPow(2); k.setSpectralTolerance(1e-4)
k.setGrid(g)
k.applyInverseOperator(f)
np.save(sys.argv[1], np.array(f.asnp()))
"""
    import tempfile
    outs = []
    with tempfile.TemporaryDirectory() as d:
        for t, planner in (("1", "estimate"), ("2", "measure")):
            path = os.path.join(d, "k%s.npy" % t)
            r = _env_run(code, {"OMP_NUM_THREADS": t, "PYCA_FFTW_PLANNER": planner, "XDG_CACHE_HOME": d}, path)
            assert r.returncode == 0, r.stderr
            outs.append(np.load(path))
    keep = band_mask(size, sp, 200.0, 1.0, 2, 1e-4)
    for o in outs:
        rng = np.random.default_rng(7)
        v = [rng.uniform(-1, 1, size).astype(np.float32) for _ in range(3)]
        assert rel_err(o, numpy_K(v, size, sp, 200.0, 1.0, 2, keep)) < 2e-5


# ---------------------------------------------------------------------------
# GPU (needs a CUDA device)

@gpu_only
@pytest.mark.parametrize("gs", GRIDS + [((128, 96, 64), (1.0, 1.2, 0.9)), ((1, 1, 1), (1, 1, 1))], ids=gid)
@pytest.mark.parametrize("p", PARAMS + [dict(alpha=0.1, beta=0.05, gamma=0.5, lpow=1, divfree=True),
                                        dict(alpha=0.5, beta=0.2, gamma=0.0, lpow=2)], ids=pid)
def test_gpu_matches_cpu(gs, p):
    size, sp = gs
    g = grid(*size, sp=sp)
    v = random_field(size, 21)
    kc = make_kernel(ca.FluidKernelFFTCPU, g=g, **p)
    kg = make_kernel(ca.FluidKernelFFTGPU, g=g, **p)
    assert kg.memType() == ca.MEM_DEVICE
    for inverse in (False, True):
        cpu = apply(kc, v, g, inverse=inverse)
        gpu = apply(kg, v, g, inverse=inverse, mem=ca.MEM_DEVICE)
        assert rel_err(gpu, cpu) < 1e-5 * max(1, p["lpow"]) * 10
        gpu1 = apply(kg, v, g, inverse=inverse, inplace=True, mem=ca.MEM_DEVICE)
        assert np.array_equal(gpu1, gpu)


@gpu_only
@pytest.mark.parametrize("gs", TOL_GRIDS, ids=gid)
def test_gpu_spectral_tolerance_matches_cpu(gs):
    """cuFFT transforms every mode and the spectral step zeroes the dropped
    ones; FFTW skips them: the same K_eps."""
    size, sp = gs
    g = grid(*size, sp=sp)
    v = random_field(size, 61)
    p = dict(alpha=200.0, beta=0.0, gamma=1.0, lpow=2)
    kc, kg = make_kernel(ca.FluidKernelFFTCPU, g=g, **p), make_kernel(ca.FluidKernelFFTGPU, g=g, **p)
    for k in (kc, kg):
        k.setSpectralTolerance(1e-3)
    cpu = apply(kc, v, g, inverse=True)
    assert rel_err(apply(kg, v, g, inverse=True, mem=ca.MEM_DEVICE), cpu) < 1e-4
    keep = band_mask(size, sp, 200.0, 1.0, 2, 1e-3)
    assert rel_err(cpu, numpy_K(v, size, sp, 200.0, 1.0, 2, keep)) < 2e-5


@gpu_only
def test_gpu_inverse_inverts_and_kernels_coexist():
    ga, sa = grid(40, 36, 30, sp=(1.0, 1.2, 0.8)), (40, 36, 30)
    gb, sb = grid(33, 17, 1, sp=(0.5, 2.0, 1.0)), (33, 17, 1)
    va, vb = random_field(sa, 1), random_field(sb, 2)
    pa = dict(alpha=0.2, beta=0.1, gamma=0.05)
    pb = dict(alpha=1.0, beta=0.5, gamma=0.3, lpow=2)
    ka = make_kernel(ca.FluidKernelFFTGPU, g=ga, **pa)
    alone = apply(ka, va, ga, inverse=True, mem=ca.MEM_DEVICE)
    kb = make_kernel(ca.FluidKernelFFTGPU, g=gb, **pb)  # legacy: overwrote ka's tables
    assert np.array_equal(apply(ka, va, ga, inverse=True, mem=ca.MEM_DEVICE), alone)
    Lv = stencil_L(as64(vb), (0.5, 2.0, 1.0), 1.0, 0.5, 0.3, 2).astype(np.float32)
    assert rel_err(apply(kb, list(Lv), gb, inverse=True, mem=ca.MEM_DEVICE), as64(vb)) < 1e-3


@gpu_only
def test_gpu_memory_type_errors():
    g = grid(8, 6, 4)
    kc, kg = make_kernel(ca.FluidKernelFFTCPU, g=g), make_kernel(ca.FluidKernelFFTGPU, g=g)
    host, dev = ca.Field3D(g, ca.MEM_HOST), ca.Field3D(g, ca.MEM_DEVICE)
    pinned = ca.Field3D(g, ca.MEM_HOST_PINNED)
    ca.SetMem(host, 1.0)
    ca.SetMem(pinned, 1.0)
    ca.SetMem(dev, 1.0)
    with pytest.raises(RuntimeError, match="Using EXEC_CPU object on non-host memory"):
        kc.applyOperator(dev)
    with pytest.raises(RuntimeError, match="Using EXEC_CPU object on non-host memory"):
        kc.applyOperator(host, dev)
    with pytest.raises(RuntimeError, match="Using EXEC_GPU object on host memory"):
        kg.applyOperator(host)
    with pytest.raises(RuntimeError, match="Using EXEC_GPU object on host memory"):
        kg.applyInverseOperator(dev, pinned)
    kc.applyOperator(pinned)  # pinned memory is host memory
    kc.applyOperator(pinned, host)


# ---------------------------------------------------------------------------
# the CPU FFT library (FFTW, or pocketfft in builds without it): K against
# NumPy's FFT (float64) with the legacy's discrete Laplacian symbol


@pytest.mark.parametrize("sz", [(12, 10, 9), (16, 15, 1), (7, 1, 1), (33, 20, 17)],
                         ids=["3d-even-odd", "2d", "1d", "3d-prime"])
def test_inverse_operator_matches_numpy_fft(sz):
    """v = K f with beta = 0 is, per component, ifft(fft(f) / (gamma + alpha
    sum_d 2 (1 - cos(2 pi k_d / N_d)) / h_d^2)): the same to float rounding
    whatever CPU FFT this build has (PyCA.Core.GetCPUFFTBackend())."""
    import PyCA.Common as common
    sp = (1.0, 1.25, 0.8)
    g = ca.GridInfo(ca.Vec3Di(*sz), ca.Vec3Df(*sp))
    f = np.random.default_rng(5).normal(size=sz + (3,)).astype(np.float32)
    k = ca.FluidKernelFFTCPU(); k.setAlpha(0.7); k.setBeta(0.0); k.setGamma(1.3); k.setGrid(g)
    v = ca.Field3D(g, ca.MEM_HOST)
    k.applyInverseOperator(v, common.FieldFromNPArr(f, sp=ca.Vec3Df(*sp)))
    got = common.AsNPCopy(v).reshape(sz + (3,))
    lam = np.zeros(sz)
    for d in range(3):
        w = 2 * (1 - np.cos(2 * np.pi * np.arange(sz[d]) / sz[d])) / sp[d] ** 2
        lam = lam + w.reshape([-1 if e == d else 1 for e in range(3)])
    want = np.stack([np.real(np.fft.ifftn(np.fft.fftn(f[..., c].astype(np.float64)) / (1.3 + 0.7 * lam)))
                     for c in range(3)], -1)
    assert np.max(np.abs(got - want)) < 2e-6 * max(1.0, np.max(np.abs(want))), ca.GetCPUFFTBackend()
    assert ca.GetCPUFFTBackend() in ("fftw", "pocketfft")
