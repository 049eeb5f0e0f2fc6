"""GaussianFilterCPU/GPU, Multiscale, MultiscaleManager and the multiscale
resamplers (spec 2.8), against references independent of the C++ code:
scipy.ndimage for the Gaussian (mode and truncation matched), the spec's
formulas for the level grids, and NumPy trilinear resampling (numpy_ref)
for the resamplers.

The legacy Gaussian is a normalised convolution: at the borders the taps
outside the grid are dropped and the weights renormalised over the rest.
With separable passes that equals, in closed form,
gaussian_filter(f, mode='constant') / gaussian_filter(ones, mode='constant').
"""
import math

import numpy as np
import pytest
from scipy import ndimage as ndi

import PyCA.Core as ca
import numpy_ref as ref
from conftest import field_from, gpu_only, grid, has_gpu, image_from, to_np

RNG = np.random.default_rng(20260801)

G3 = grid(23, 17, 12, sp=(1.5, 0.8, 2.5), org=(1.0, -2.0, 0.5))
G2 = grid(29, 21, 1, sp=(1.25, 0.8, 1.0))


# ---------------------------------------------------------------------------
# references

def clip_radius(r, n):
    """updateParams' radius: min(r, n/2 - 1), at least 0."""
    return max(0, min(int(r), int(n) // 2 - 1))


def gauss_ref(a, sigma, radius):
    """The legacy Gaussian (float64): per axis a unit-sum Gaussian of radius
    clip_radius(radius) (scipy's radius / truncate), renormalised at the
    borders over the taps inside the grid: scipy.ndimage.gaussian_filter
    with mode='constant' divided by the same filter of ones."""
    a = np.asarray(a, np.float64)
    sig, rad = [], []
    for d in range(3):
        r, s = clip_radius(radius[d], a.shape[d]), float(sigma[d])
        ok = r > 0 and s > 0
        sig.append(s if ok else 0.0)
        rad.append(r if ok else 0)
    kw = dict(mode="constant", cval=0.0, radius=rad)
    return ndi.gaussian_filter(a, sig, **kw) / ndi.gaussian_filter(np.ones_like(a), sig, **kw)


def resample_ref(img, so):
    """Centred trilinear CLAMP resampling to size so (Resample semantics)."""
    img = np.asarray(img, np.float64)
    si = np.array(img.shape, np.float64)
    r = (si / np.array(so, np.float64)).reshape(3, 1, 1, 1)
    p = ref.identity(tuple(so)) * r + (r - 1) / 2
    return ref.interp_image(img, p, 1, "CLAMP")


def level_sigma(orig_size, cur_size):
    """The (fixed) pre-smoothing of a level: sigma = sqrt(r / 2), r = original
    / current size per axis, radius 2 ceil(sigma)."""
    sig = [math.sqrt(o / c / 2.0) for o, c in zip(orig_size, cur_size)]
    return sig, [2 * math.ceil(s) for s in sig]


def check(got, want, rtol=2e-5, what=""):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    atol = rtol * max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    err = np.abs(got - want)
    assert np.all(err <= atol + rtol * np.abs(want)), "%s: max err %g" % (what, err.max())


def size_of(g):
    return tuple(g.size().tolist())


def new_image(g, mem=ca.MEM_HOST):
    return ca.Image3D(g, mem)


def gfilter(size, sigma, radius, cls=ca.GaussianFilterCPU):
    f = cls()
    f.updateParams(ca.Vec3Di(*size), ca.Vec3Df(*sigma), ca.Vec3Di(*radius))
    return f


def run_filter(a, sigma, radius, g=None):
    im = image_from(a, g)
    out, tmp = new_image(im.grid()), new_image(im.grid())
    f = gfilter(a.shape, sigma, radius)
    f.filter(out, im, tmp)
    return to_np(out), f


# ---------------------------------------------------------------------------
# Gaussian filter vs scipy

CASES_3D = [((1.0, 1.0, 1.0), (2, 2, 2)), ((0.7, 1.5, 2.0), (3, 3, 3)),
            ((2.5, 0.5, 1.2), (6, 1, 2)), ((3.0, 2.0, 1.0), (12, 8, 4)),
            ((1.3, 1.3, 1.3), (0, 4, 4))]


@pytest.mark.parametrize("sigma,radius", CASES_3D)
def test_gaussian_3d_matches_scipy(sigma, radius):
    a = RNG.uniform(-1, 1, size_of(G3)).astype(np.float32)
    got, f = run_filter(a, sigma, radius, G3)
    check(got, gauss_ref(a, sigma, radius), what="3d %s %s" % (sigma, radius))
    assert f.getKernelRadius().tolist() == [clip_radius(r, n) for r, n in zip(radius, a.shape)]


@pytest.mark.parametrize("sigma,radius", [((1.0, 1.0, 1.0), (2, 2, 2)), ((2.5, 0.6, 3.0), (7, 2, 3)),
                                          ((0.8, 3.5, 0.0), (2, 9, 0))])
def test_gaussian_2d_matches_scipy(sigma, radius):
    a = RNG.uniform(-1, 1, size_of(G2)).astype(np.float32)
    got, f = run_filter(a, sigma, radius, G2)
    check(got, gauss_ref(a, sigma, radius), what="2d")
    assert f.getKernelRadius().z == 0  # a 1-voxel axis is never filtered


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gaussian_smooths_along_each_axis(axis):
    # sigma on one axis only: the result is the 1-D filter along that axis
    # (the legacy CPU convolutionSingleAxis filtered along x for every axis).
    a = RNG.uniform(-1, 1, (19, 18, 17)).astype(np.float32)
    sigma, radius = [0.0] * 3, [0] * 3
    sigma[axis], radius[axis] = 1.7, 5
    got, _ = run_filter(a, sigma, radius)
    want = gauss_ref(a, sigma, radius)
    check(got, want, what="axis %d" % axis)
    # and matches scipy's own 1-D filter away from the borders
    peer = ndi.gaussian_filter1d(a.astype(np.float64), 1.7, axis=axis, truncate=5 / 1.7, mode="nearest")
    inner = [slice(None)] * 3
    inner[axis] = slice(5, -5)
    check(got[tuple(inner)], peer[tuple(inner)], what="interior axis %d" % axis)
    for other in range(3):
        if other != axis:
            s2 = [0.0] * 3
            s2[other] = 1.7
            r2 = [0] * 3
            r2[other] = 5
            assert np.abs(gauss_ref(a, s2, r2) - got).max() > 0.05


def test_gaussian_interior_is_scipy_gaussian_filter():
    # Away from the borders the renormalisation plays no part: scipy's
    # gaussian_filter with the same sigma and truncate, any mode.
    a = RNG.standard_normal((40, 36, 32)).astype(np.float32)
    sigma, radius = (2.0, 1.5, 1.0), (8, 6, 4)
    got, _ = run_filter(a, sigma, radius)
    peer = ndi.gaussian_filter(a.astype(np.float64), sigma, radius=list(radius))  # mode 'reflect'
    inner = tuple(slice(r, n - r) for r, n in zip(radius, a.shape))
    check(got[inner], peer[inner], what="interior")


def test_gaussian_radius_clipped():
    f = gfilter((13, 11, 7), (1, 1, 1), (9, 3, 9))
    assert f.getKernelRadius().tolist() == [5, 3, 2]
    f = gfilter((3, 2, 1), (1, 1, 1), (4, 4, 4))
    assert f.getKernelRadius().tolist() == [0, 0, 0]
    f = gfilter((20, 20, 20), (1, 0, -1), (4, 4, 4))  # sigma <= 0: axis unfiltered
    assert f.getKernelRadius().tolist() == [4, 0, 0]
    f = gfilter((20, 20, 20), (1, 1, 1), (-3, 2, 2))
    assert f.getKernelRadius().tolist() == [0, 2, 2]
    assert f.getSize().tolist() == [20, 20, 20]
    assert f.getSigma().tolist() == [1.0, 1.0, 1.0]


def test_gaussian_constant_image_preserved():
    a = np.full((17, 12, 9), 3.25, np.float32)
    got, _ = run_filter(a, (2.0, 3.0, 1.5), (8, 5, 4))
    assert np.abs(got - 3.25).max() < 1e-5


def test_gaussian_no_smoothing_copies():
    a = RNG.uniform(-1, 1, (9, 8, 7)).astype(np.float32)
    for sigma, radius in [((0, 0, 0), (3, 3, 3)), ((1, 1, 1), (0, 0, 0))]:
        got, _ = run_filter(a, sigma, radius)
        assert np.array_equal(got, a)


def test_gaussian_in_place_and_aliased_scratch():
    a = RNG.uniform(-1, 1, (21, 14, 9)).astype(np.float32)
    for sigma, radius in [((1.2, 0.9, 1.1), (3, 2, 2)), ((1.2, 0.9, 0), (3, 2, 0))]:  # 3 and 2 passes
        want = gauss_ref(a, sigma, radius)
        f = gfilter(a.shape, sigma, radius)
        im, tmp = image_from(a), new_image(grid(*a.shape))
        f.filter(im, im, tmp)                       # in place
        check(to_np(im), want, what="in place")
        im, out = image_from(a), new_image(grid(*a.shape))
        f.filter(out, im, im)                       # tmp is the input
        check(to_np(out), want, what="tmp = input")
        check(to_np(im), a, what="input kept")
        im = image_from(a)
        f.filter(im, im, im)                        # everything the same image
        check(to_np(im), want, what="all aliased")


def test_gaussian_scratch_is_any_large_enough_image():
    a = RNG.uniform(-1, 1, (10, 9, 8)).astype(np.float32)
    f = gfilter(a.shape, (1, 1, 1), (2, 2, 2))
    out = new_image(grid(*a.shape))
    big = new_image(grid(30, 30, 30))
    f.filter(out, image_from(a), big)
    check(to_np(out), gauss_ref(a, (1, 1, 1), (2, 2, 2)))
    assert big.grid().size().tolist() == [30, 30, 30]


def test_gaussian_field():
    comps = [RNG.uniform(-1, 1, size_of(G3)).astype(np.float32) for _ in range(3)]
    sigma, radius = (1.1, 2.0, 0.9), (3, 5, 2)
    fin = field_from(comps, G3)
    fout = ca.Field3D(G3, ca.MEM_HOST)
    f = gfilter(size_of(G3), sigma, radius)
    f.filter(fout, fin, new_image(G3))
    for got, c in zip(to_np(fout), comps):
        check(got, gauss_ref(c, sigma, radius), what="field")
    f.filter(fin, fin, new_image(G3))  # in place
    for got, c in zip(to_np(fin), comps):
        check(got, gauss_ref(c, sigma, radius), what="field in place")


def test_gaussian_kernels_rebuilt_only_on_change():
    f = ca.GaussianFilterCPU()
    s, sig, rad = ca.Vec3Di(16, 16, 16), ca.Vec3Df(1, 2, 3), ca.Vec3Di(3, 4, 5)
    f.updateParams(s, sig, rad)
    assert f.kernelBuilds() == 1
    f.updateParams(s, sig, rad)
    assert f.kernelBuilds() == 1
    f.updateParams(s, ca.Vec3Df(1, 2, 3.5), rad)
    assert f.kernelBuilds() == 2
    f.updateParams(s, ca.Vec3Df(1, 2, 3.5), ca.Vec3Di(3, 4, 6))
    assert f.kernelBuilds() == 3
    f.updateParams(ca.Vec3Di(16, 16, 17), ca.Vec3Df(1, 2, 3.5), ca.Vec3Di(3, 4, 6))
    assert f.kernelBuilds() == 4


def test_gaussian_interface_and_names():
    f = ca.GaussianFilterCPU()
    assert isinstance(f, ca.GaussianFilterInterface)
    with pytest.raises(TypeError, match="abstract"):
        ca.GaussianFilterInterface()
    with pytest.raises(TypeError, match="abstract"):
        ca.MultiscaleResamplerInterface()
    assert not hasattr(ca, "GaussianFilter")  # a class, not a free function (legacy)
    assert hasattr(ca, "GaussianFilterGPU") == bool(ca.CudaCompiled())


def test_gaussian_errors():
    f = gfilter((8, 8, 8), (1, 1, 1), (2, 2, 2))
    g8, g9 = grid(8, 8, 8), grid(9, 8, 8)
    a, o, t = new_image(g8), new_image(g8), new_image(g8)
    ca.SetMem(a, 1.0)
    with pytest.raises(RuntimeError, match="Inputs have different Size"):
        f.filter(new_image(g9), a, t)
    with pytest.raises(RuntimeError, match="Inputs have different Size"):
        f.filter(o, new_image(g9), t)
    with pytest.raises(RuntimeError, match="fewer voxels"):
        f.filter(o, a, new_image(grid(4, 4, 4)))
    with pytest.raises(RuntimeError) as ei:
        ca.GaussianFilterCPU().filter(o, a, t)  # never configured: size 0
    assert "Inputs have different Size" in str(ei.value)
    assert "GaussianFilter" in str(ei.value).splitlines()[0]  # legacy "<declaration>:\n..." format
    with pytest.raises(ValueError, match="sigma must be finite"):
        f.updateParams(ca.Vec3Di(8, 8, 8), ca.Vec3Df(float("nan"), 1, 1), ca.Vec3Di(2, 2, 2))
    with pytest.raises(ValueError, match="negative size"):
        f.updateParams(ca.Vec3Di(-1, 8, 8), ca.Vec3Df(1, 1, 1), ca.Vec3Di(2, 2, 2))
    assert f.getSize().tolist() == [8, 8, 8]  # a failed update changes nothing
    with pytest.raises(TypeError):
        f.filter(o, None, t)
    with pytest.raises(TypeError):
        f.filter(o, a)
    with pytest.raises(TypeError):
        f.updateParams((8, 8, 8), (1, 1, 1), (2, 2, 2))
    f.filter(o, a, t)
    assert np.allclose(to_np(o), 1.0)


def test_gaussian_scratch_from_thread_manager():
    g = grid(16, 12, 10)
    ca.ThreadMemoryManager.init(g, ca.MEM_HOST, 2)
    mm = ca.ThreadMemoryManager.instance()
    a = RNG.uniform(-1, 1, size_of(g)).astype(np.float32)
    im = image_from(a, g)
    f = gfilter(size_of(g), (1, 1, 1), (2, 2, 2))
    f.filter(im, im, im)  # needs private scratch: from the pool
    assert mm.peakInUse() >= 1
    assert mm.poolsInUse() == 0
    check(to_np(im), gauss_ref(a, (1, 1, 1), (2, 2, 2)))


# ---------------------------------------------------------------------------
# Multiscale.downScale and MultiscaleManager (spec 2.8)

def downscale_ref(g, f):
    s = g.size().tolist()
    sp = g.spacing().tolist()
    ns = [max(n // f, 1) for n in s]
    return ns, [p * n / m for p, n, m in zip(sp, s, ns)], g.origin().tolist()


@pytest.mark.parametrize("g", [G3, G2, grid(256, 256, 160, sp=(0.9, 0.9, 1.2)), grid(5, 3, 1)])
@pytest.mark.parametrize("f", [1, 2, 3, 4, 7, 16])
def test_downscale_rule(g, f):
    d = ca.Multiscale.downScale(g, f)
    ns, nsp, org = downscale_ref(g, f)
    assert d.size().tolist() == ns
    assert np.allclose(d.spacing().tolist(), nsp, rtol=1e-6)
    assert d.origin().tolist() == org
    # the physical extent size * spacing is kept
    assert np.allclose(np.array(ns) * np.array(d.spacing().tolist()),
                       np.array(g.size().tolist()) * np.array(g.spacing().tolist()), rtol=1e-6)


def test_downscale_bad_factor():
    for f in (0, -2):
        with pytest.raises(RuntimeError, match="downsample factor must be positive"):
            ca.Multiscale.downScale(G3, f)


def make_manager(g, factors, start=True):
    mm = ca.MultiscaleManager(g)
    for f in factors:
        mm.addScaleLevel(f)
    if start:
        mm.start()
    return mm


def test_manager_levels():
    mm = make_manager(G3, [2, 1, 4])
    assert mm.nScale() == 3
    assert [mm.getScaleFactor(i) for i in range(3)] == [4, 2, 1]  # sorted, coarsest first
    expect = [ca.Multiscale.downScale(G3, f) for f in (4, 2, 1)]
    for lvl in range(3):
        assert mm.getCurLevel() == lvl
        assert mm.getScaleFactor() == [4, 2, 1][lvl]
        assert mm.getCurGrid() == expect[lvl]
        assert mm.getPreGrid() == (G3 if lvl == 0 else expect[lvl - 1])
        assert mm.isFirstScale() == (lvl == 0)
        assert mm.isLastScale() == (lvl == 2)
        assert mm.isIdentityScale() == (lvl == 2)
        pre = np.array(mm.getPreGrid().size().tolist(), float)
        cur = np.array(mm.getCurGrid().size().tolist(), float)
        assert np.allclose(mm.getCurFactor().tolist(), pre / cur)
        assert mm.getCurSize() == expect[lvl].size()
        assert np.allclose(mm.getCurSpace().tolist(), expect[lvl].spacing().tolist())
        assert mm.curNVox() == expect[lvl].nVox()
        assert mm.curVoxelVol() == pytest.approx(float(np.prod(expect[lvl].spacing().tolist())), rel=1e-6)
        mm.next()
    assert mm.getCurLevel() == 2  # next() stays on the last level
    assert mm.getOrgGrid() == G3 and mm.getOrgSize() == G3.size()
    assert mm.getOrgSpace() == G3.spacing()
    assert mm.origNVox() == G3.nVox()
    assert mm.origVoxelVol() == pytest.approx(1.5 * 0.8 * 2.5, rel=1e-6)


def test_manager_set_clamps():
    mm = make_manager(G3, [8, 4, 2, 1])
    mm.set(2)
    assert mm.getCurLevel() == 2 and mm.getScaleFactor() == 2
    mm.set(17)
    assert mm.getCurLevel() == 3
    mm.set(-5)
    assert mm.getCurLevel() == 0


def test_manager_duplicate_and_bad_factors():
    mm = make_manager(G3, [4, 2], start=False)
    with pytest.raises(RuntimeError) as ei:
        mm.addScaleLevel(2)
    assert "Error, cannot add multiple scale levels with the same downsample factor" in str(ei.value)
    assert "MultiscaleManager::addScaleLevel" in str(ei.value).splitlines()[0]
    with pytest.raises(RuntimeError, match="downsample factor must be positive"):
        mm.addScaleLevel(0)
    assert mm.nScale() == 2
    with pytest.raises(IndexError):
        mm.getScaleFactor(2)
    with pytest.raises((OverflowError, TypeError)):
        mm.getScaleFactor(-1)


def test_manager_start_without_levels():
    mm = ca.MultiscaleManager(G2)
    assert mm.nScale() == 0
    assert mm.getCurGrid() == G2 and mm.getPreGrid() == G2 and mm.getScaleFactor() == 1
    with pytest.raises(RuntimeError, match="no scale levels"):
        mm.set(0)
    with pytest.raises(RuntimeError, match="no scale levels"):
        mm.next()
    mm.start()
    assert mm.nScale() == 1 and mm.getScaleFactor(0) == 1
    assert mm.isFirstScale() and mm.isLastScale() and mm.isIdentityScale()
    assert mm.getCurGrid() == G2


def test_manager_add_after_start_keeps_level():
    mm = make_manager(G3, [4, 1])
    mm.next()
    assert mm.getScaleFactor() == 1
    mm.addScaleLevel(2)  # now [4, 2, 1]: level 1 is factor 2
    assert mm.getCurLevel() == 1 and mm.getCurGrid() == ca.Multiscale.downScale(G3, 2)


def test_manager_prints_nothing_unless_verbose(capfd):
    capfd.readouterr()
    mm = make_manager(G3, [4, 2, 1])
    mm.next()
    mm.set(0)
    out = capfd.readouterr()
    assert out.out == "" and out.err == ""
    assert not mm.getVerbose()
    mm.setVerbose(True)
    mm.next()
    mm.addScaleLevel(8)
    out = capfd.readouterr().out
    assert "level is 1" in out
    assert "8 4 2 1" in out


def test_manager_live_references_keep_it_alive():
    g = make_manager(G3, [2, 1]).getCurGrid()
    assert g.size().tolist() == [11, 8, 6]
    s = make_manager(G3, [2, 1]).getCurSize()
    assert s.tolist() == [11, 8, 6]


# ---------------------------------------------------------------------------
# Multiscale resamplers vs NumPy references

RESAMPLERS = {"plain": ca.MultiscaleResamplerCPU, "gauss": ca.MultiscaleResamplerGaussCPU}
FACTORS = [4, 2, 1]


def make_resampler(kind, g, level, factors=FACTORS, cls=None):
    mm = make_manager(g, factors)
    for _ in range(level):
        mm.next()
    rs = (cls or RESAMPLERS[kind])(g)
    rs.setScaleLevel(mm)
    return mm, rs


def expected_down(kind, a, mm):
    """NumPy downsampleImage: smoothing (gauss, fixed sigma rule), then resampling."""
    orig, cur = mm.getOrgSize().tolist(), mm.getCurSize().tolist()
    if mm.isIdentityScale():
        return np.asarray(a, np.float64)
    if kind == "gauss":
        sig, rad = level_sigma(orig, cur)
        a = gauss_ref(a, sig, rad)
    return resample_ref(a, cur)


@pytest.fixture
def thread_pools():
    """ThreadMemoryManager on the original 3-D grid (as the examples do)."""
    ca.ThreadMemoryManager.init(G3, ca.MEM_HOST, 8)
    return ca.ThreadMemoryManager.instance()


@pytest.mark.parametrize("kind", ["plain", "gauss"])
@pytest.mark.parametrize("g", [G3, G2], ids=["3d", "2d"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_downsample_image(kind, g, level, thread_pools):
    mm, rs = make_resampler(kind, g, level)
    a = RNG.uniform(-1, 1, size_of(g)).astype(np.float32)
    out = ca.Image3D(g, ca.MEM_HOST)  # original capacity; takes the level grid
    rs.downsampleImage(out, image_from(a, g))
    assert out.grid() == mm.getCurGrid()
    check(to_np(out), expected_down(kind, a, mm), what="%s level %d" % (kind, level))
    assert thread_pools.poolsInUse() == 0
    if kind == "gauss" and level < 2:
        assert thread_pools.peakInUse() >= 2  # smoothed image and filter scratch came from the pools


@pytest.mark.parametrize("kind", ["plain", "gauss"])
@pytest.mark.parametrize("g", [G3, G2], ids=["3d", "2d"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_downsample_field(kind, g, level, thread_pools):
    mm, rs = make_resampler(kind, g, level)
    comps = [RNG.uniform(-2, 2, size_of(g)).astype(np.float32) for _ in range(3)]
    out = ca.Field3D(g, ca.MEM_HOST)
    rs.downsampleField(out, field_from(comps, g))
    assert out.grid() == mm.getCurGrid()
    r = np.array(mm.getOrgSize().tolist(), float) / np.array(mm.getCurSize().tolist(), float)
    for d, (got, c) in enumerate(zip(to_np(out), comps)):
        want = expected_down(kind, c, mm)
        if not mm.isIdentityScale():
            want = want / r[d]  # rescaleVector: voxel-unit displacement
        check(got, want, what="field %s level %d [%d]" % (kind, level, d))
    assert thread_pools.poolsInUse() == 0


@pytest.mark.parametrize("kind", ["plain", "gauss"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_upsample_image(kind, level, thread_pools):
    mm, rs = make_resampler(kind, G3, level)
    prev = mm.getPreGrid() if level > 0 else mm.getCurGrid()
    a = RNG.uniform(0, 1, size_of(prev)).astype(np.float32)
    im = ca.Image3D(G3, ca.MEM_HOST)
    im.setGrid(prev)
    im.asnp()[...] = a
    rs.upsampleImage(im)
    assert im.grid() == mm.getCurGrid()
    want = np.zeros(size_of(mm.getCurGrid())) if level == 0 else resample_ref(a, size_of(mm.getCurGrid()))
    check(to_np(im), want, what="upsample level %d" % level)
    assert thread_pools.poolsInUse() == 0


@pytest.mark.parametrize("kind", ["plain", "gauss"])
@pytest.mark.parametrize("g", [G3, G2], ids=["3d", "2d"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_update_hfield(kind, g, level, thread_pools):
    mm, rs = make_resampler(kind, g, level)
    prev = mm.getPreGrid() if level > 0 else mm.getCurGrid()
    ps = size_of(prev)
    disp = RNG.uniform(-0.7, 0.7, (3,) + ps)
    if ps[2] == 1:
        disp[2] = 0
    h = ref.identity(ps) + disp
    hf = field_from(list(h), prev)
    rs.updateHField(hf)
    cs = size_of(mm.getCurGrid())
    assert hf.grid() == mm.getCurGrid()
    if level == 0:
        want = ref.identity(cs)
    else:
        r = (np.array(ps, float) / np.array(cs, float)).reshape(3, 1, 1, 1)
        want = ref.identity(cs) + np.stack([resample_ref(disp[d], cs) for d in range(3)]) / r
    for d, got in enumerate(to_np(hf)):
        check(got, want[d], what="h level %d [%d]" % (level, d))
    # physically: the same displacement in world units (H->V, resample, V->H)
    if level > 0:
        v_prev = disp * np.array(prev.spacing().tolist()).reshape(3, 1, 1, 1)
        v_cur = np.stack([resample_ref(v_prev[d], cs) for d in range(3)])
        hw = ref.identity(cs) + v_cur / np.array(mm.getCurSpace().tolist()).reshape(3, 1, 1, 1)
        for d, got in enumerate(to_np(hf)):
            check(got, hw[d], rtol=1e-4, what="h physical [%d]" % d)
    assert thread_pools.poolsInUse() == 0


@pytest.mark.parametrize("kind", ["plain", "gauss"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_update_vfield(kind, level, thread_pools):
    mm, rs = make_resampler(kind, G3, level)
    prev = mm.getPreGrid() if level > 0 else mm.getCurGrid()
    comps = [RNG.uniform(-1, 1, size_of(prev)).astype(np.float32) for _ in range(3)]
    vf = ca.Field3D(G3, ca.MEM_HOST)
    vf.setGrid(prev)
    for v, c in zip(vf.asnp(), comps):
        v[...] = c
    rs.updateVField(vf)
    cs = size_of(mm.getCurGrid())
    assert vf.grid() == mm.getCurGrid()
    for d, got in enumerate(to_np(vf)):
        want = np.zeros(cs) if level == 0 else resample_ref(comps[d], cs)
        check(got, want, what="v level %d [%d]" % (level, d))
    assert thread_pools.poolsInUse() == 0


def test_gauss_sigma_rule_original_to_current():
    # five levels: the sigma of every level follows the original -> current
    # ratio (the legacy's previous -> current ratio gave sigma < 1 after level 0)
    g = grid(64, 48, 40)
    mm = make_manager(g, [8, 4, 2, 1])
    rs = ca.MultiscaleResamplerGaussCPU(g)
    for lvl in range(4):
        rs.setScaleLevel(mm)
        cur = size_of(mm.getCurGrid())
        if mm.isIdentityScale():
            assert rs.getSigma().tolist() == [0, 0, 0]
        else:
            sig, rad = level_sigma(size_of(g), cur)
            assert np.allclose(rs.getSigma().tolist(), sig, rtol=1e-6)
            assert rs.getKernelRadius().tolist() == [clip_radius(r, n) for r, n in zip(rad, size_of(g))]
        mm.next()
    assert ca.MultiscaleResamplerCPU(g).getSigma().tolist() == [0, 0, 0]


def test_resampler_without_thread_manager():
    mm, rs = make_resampler("gauss", G3, 1)
    a = RNG.uniform(-1, 1, size_of(G3)).astype(np.float32)
    out = ca.Image3D(mm.getCurGrid(), ca.MEM_HOST)
    rs.downsampleImage(out, image_from(a, G3))
    check(to_np(out), expected_down("gauss", a, mm))


def test_resampler_small_output_is_reallocated():
    mm, rs = make_resampler("plain", G3, 1)
    a = RNG.uniform(-1, 1, size_of(G3)).astype(np.float32)
    out = ca.Image3D(grid(2, 2, 2), ca.MEM_HOST)
    rs.downsampleImage(out, image_from(a, G3))
    assert out.grid() == mm.getCurGrid()
    check(to_np(out), expected_down("plain", a, mm))
    mm.next()
    rs.setScaleLevel(mm)
    rs.upsampleImage(out)  # level 1 -> 2: grows to the original grid
    assert out.grid() == G3


def test_resampler_in_place_downsample(thread_pools):
    mm, rs = make_resampler("gauss", G3, 0)
    a = RNG.uniform(-1, 1, size_of(G3)).astype(np.float32)
    im = image_from(a, G3)
    rs.downsampleImage(im, im)
    check(to_np(im), expected_down("gauss", a, mm))
    assert thread_pools.poolsInUse() == 0


def test_resampler_scale_manager_is_a_copy():
    mm, rs = make_resampler("plain", G3, 0)
    mm.next()
    assert rs.getScaleManager().getCurLevel() == 0  # until setScaleLevel again
    rs.setScaleLevel(mm)
    assert rs.getScaleManager().getCurLevel() == 1
    held = make_resampler("plain", G3, 2)[1].getScaleManager()  # keeps its resampler alive
    assert held.getCurGrid() == G3
    assert isinstance(rs, ca.MultiscaleResamplerInterface)


def test_resampler_errors():
    rs = ca.MultiscaleResamplerGaussCPU(G3)
    im = ca.Image3D(G3, ca.MEM_HOST)
    with pytest.raises(RuntimeError, match="setScaleLevel has not been called"):
        rs.downsampleImage(ca.Image3D(G3, ca.MEM_HOST), im)
    with pytest.raises(RuntimeError, match="Input grids are not equal"):
        rs.setScaleLevel(make_manager(G2, [2, 1]))
    rs.setScaleLevel(make_manager(G3, [2, 1]))
    with pytest.raises(RuntimeError, match="Inputs have different Size"):
        rs.downsampleImage(ca.Image3D(G3, ca.MEM_HOST), ca.Image3D(grid(5, 5, 5), ca.MEM_HOST))
    with pytest.raises(RuntimeError, match="Inputs have different Size"):
        rs.downsampleField(ca.Field3D(G3, ca.MEM_HOST), ca.Field3D(grid(5, 5, 5), ca.MEM_HOST))
    with pytest.raises(TypeError):
        rs.downsampleImage(None, im)
    with pytest.raises(TypeError):
        rs.updateHField(im)
    with pytest.raises(TypeError):
        rs.setScaleLevel(None)
    assert not hasattr(rs, "updateImage")  # pointer references: C++ only


def test_bad_argument_types_raise_typeerror():
    """Every method of the filter and multiscale classes, called with None, a
    string or an arbitrary object in any position, raises TypeError (or
    accepts it where any value is valid, e.g. None for a stream) and never
    crashes."""
    g = grid(6, 6, 6)

    def instances():
        mm = make_manager(g, [2, 1])
        rs, rp = ca.MultiscaleResamplerGaussCPU(g), ca.MultiscaleResamplerCPU(g)
        rs.setScaleLevel(mm)
        rp.setScaleLevel(mm)
        return [gfilter((6, 6, 6), (1, 1, 1), (2, 2, 2)), mm, rs, rp]

    good = [lambda: ca.Image3D(g, ca.MEM_HOST), lambda: ca.Field3D(g, ca.MEM_HOST),
            lambda: ca.Vec3Di(6, 6, 6), lambda: ca.Vec3Df(1, 1, 1), lambda: g, lambda: 1]
    problems = []
    targets = [(type(o).__name__ + "." + m, getattr(o, m)) for o in instances() for m in dir(o)
               if not m.startswith("_") and callable(getattr(o, m))]
    targets += [("Multiscale.downScale", ca.Multiscale.downScale), ("MultiscaleManager", ca.MultiscaleManager)]
    targets += [(n, getattr(ca, n)) for n in ("GaussianFilterCPU", "MultiscaleResamplerCPU",
                                              "MultiscaleResamplerGaussCPU")]
    for name, fn in targets:
        for n in range(1, 5):
            for pos in range(n):
                for bad in (None, "abc", object()):
                    for mk in good:
                        args = [mk() for _ in range(n)]
                        args[pos] = bad
                        try:
                            fn(*args)
                        except (TypeError, NotImplementedError):
                            pass
                        except Exception as e:
                            problems.append("%s%r: %s %s" % (name, tuple(type(a).__name__ for a in args),
                                                             type(e).__name__, str(e).splitlines()[0]))
    assert not problems, "\n".join(sorted(set(problems))[:30])


# ---------------------------------------------------------------------------
# GPU (skipped without a device)

@gpu_only
def test_gpu_gaussian_parity():
    a = RNG.uniform(-1, 1, size_of(G3)).astype(np.float32)
    sigma, radius = (1.3, 0.8, 2.0), (4, 2, 4)
    cpu, _ = run_filter(a, sigma, radius, G3)
    f = gfilter(size_of(G3), sigma, radius, ca.GaussianFilterGPU)
    i, o, t = (image_from(a, G3, ca.MEM_DEVICE), ca.Image3D(G3, ca.MEM_DEVICE),
               ca.Image3D(G3, ca.MEM_DEVICE))
    f.filter(o, i, t)
    check(to_np(o), cpu, rtol=1e-5)
    check(to_np(o), gauss_ref(a, sigma, radius))
    f.filter(i, i, t)
    check(to_np(i), cpu, rtol=1e-5)


@gpu_only
def test_gpu_mode_errors():
    g = grid(8, 8, 8)
    fc = gfilter((8, 8, 8), (1, 1, 1), (2, 2, 2))
    fg = gfilter((8, 8, 8), (1, 1, 1), (2, 2, 2), ca.GaussianFilterGPU)
    d = [ca.Image3D(g, ca.MEM_DEVICE) for _ in range(3)]
    h = [ca.Image3D(g, ca.MEM_HOST) for _ in range(3)]
    with pytest.raises(RuntimeError, match="Using EXEC_CPU object on non-host memory"):
        fc.filter(*d)
    with pytest.raises(RuntimeError, match="Using EXEC_GPU object on host memory"):
        fg.filter(*h)
    mm = make_manager(g, [2, 1])
    rs = ca.MultiscaleResamplerGaussGPU(g)
    rs.setScaleLevel(mm)
    with pytest.raises(RuntimeError, match="Using EXEC_GPU object on host memory"):
        rs.downsampleImage(h[0], h[1])
    rc = ca.MultiscaleResamplerCPU(g)
    rc.setScaleLevel(mm)
    with pytest.raises(RuntimeError, match="Using EXEC_CPU object on non-host memory"):
        rc.downsampleImage(d[0], d[1])


@gpu_only
@pytest.mark.parametrize("kind", ["plain", "gauss"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_gpu_resampler_parity(kind, level):
    ca.ThreadMemoryManager.init(G3, ca.MEM_DEVICE, 8)
    mm = ca.ThreadMemoryManager.instance()
    cls = {"plain": ca.MultiscaleResamplerGPU, "gauss": ca.MultiscaleResamplerGaussGPU}[kind]
    m, rc = make_resampler(kind, G3, level)
    _, rg = make_resampler(kind, G3, level, cls=cls)
    a = RNG.uniform(-1, 1, size_of(G3)).astype(np.float32)
    oc, og = ca.Image3D(G3, ca.MEM_HOST), ca.Image3D(G3, ca.MEM_DEVICE)
    rc.downsampleImage(oc, image_from(a, G3))
    rg.downsampleImage(og, image_from(a, G3, ca.MEM_DEVICE))
    check(to_np(og), to_np(oc), rtol=1e-5)
    comps = [RNG.uniform(-1, 1, size_of(m.getPreGrid())).astype(np.float32) for _ in range(3)]
    hc = field_from(comps, m.getPreGrid())
    hg = field_from(comps, m.getPreGrid(), ca.MEM_DEVICE)
    rc.updateHField(hc)
    rg.updateHField(hg)
    for x, y in zip(to_np(hg), to_np(hc)):
        check(x, y, rtol=1e-5)
    assert mm.poolsInUse() == 0
