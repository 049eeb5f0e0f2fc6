"""PyCA.Common helpers beyond the NumPy bridges (spec 5.2): slicing,
ComposeDef, windows, noise, smoothing, PNG frames, Distribute, Mkdir_p,
ReadPLUNC, PyCADebug, PyCAVersion, and the import hygiene of the package.
References: NumPy/SciPy and hand computations."""
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA
import PyCA.Core as ca
import PyCA.Common as common
from conftest import grid, has_gpu, image_from, field_from, run_python, to_np, usable_mem_types

RNG = np.random.default_rng(7)


# ---------------------------------------------------------------------------
# import hygiene

def test_package_all():
    assert PyCA.__all__ == ['Core', 'Common', 'Display', 'Numpy', 'Parallel', 'VTK']


def test_imports_do_not_pull_optional_packages():
    code = r"""
import sys
import PyCA, PyCA.Core
bad = [m for m in ('matplotlib', 'vtk', 'vtkmodules', 'mpi4py') if m in sys.modules]
assert not bad, ('PyCA/PyCA.Core', bad)
import PyCA.Numpy, PyCA.Parallel, PyCA.VTK
bad = [m for m in ('matplotlib', 'vtk', 'vtkmodules', 'mpi4py') if m in sys.modules]
assert not bad, ('Numpy/Parallel/VTK', bad)
import PyCA.Common
bad = [m for m in ('vtk', 'vtkmodules', 'mpi4py') if m in sys.modules]
assert not bad, ('Common', bad)
print('ok')
"""
    r = run_python(code)
    assert r.returncode == 0 and 'ok' in r.stdout, r.stderr


def test_exports():
    for name in ("DIMMAP", "ExtractROI", "ExtractSliceArr", "ExtractSliceIm", "ExtractSliceArrIm",
                 "ExtractSliceVF", "ExtractSliceArrVF", "ComposeDef", "TukeyWindow", "TukeyWindow1D",
                 "AddWhiteNoise", "GaussianBlur", "ReadVolWriteFrames", "SaveSliceStack",
                 "Distribute", "Mkdir_p", "ReadPLUNC", "DebugHere", "GetOuterFrame",
                 "CheckCUDAError", "PyCAVersion", "PyCAVersionMajor", "PyCAVersionMinor",
                 "PyCACommit", "PyCABranch", "ImFromDLPack", "FieldFromDLPack"):
        assert hasattr(common, name), name


# ---------------------------------------------------------------------------
# slicing

def test_dimmap():
    assert common.DIMMAP[0] == 0 and common.DIMMAP['x'] == 0
    assert common.DIMMAP[1] == 1 and common.DIMMAP['y'] == 1
    assert common.DIMMAP[2] == 2 and common.DIMMAP['z'] == 2


@pytest.mark.parametrize("dim", [0, 1, 2, 'x', 'y', 'z'])
def test_extract_slice_arr(dim):
    a = RNG.standard_normal((5, 6, 7))
    d = common.DIMMAP[dim]
    s = common.ExtractSliceArr(a, dim=dim)
    ref = np.take(a, a.shape[d] // 2, axis=d)
    assert np.array_equal(s, ref)
    assert np.array_equal(common.ExtractSliceArr(a, 1, dim), np.take(a, 1, axis=d))
    f = RNG.standard_normal((5, 6, 7, 3))  # field arrays slice the same way
    assert common.ExtractSliceArr(f, 2, dim).shape == np.take(f, 2, axis=d).shape


def test_extract_slice_arr_errors():
    a = np.zeros((4, 5, 6))
    with pytest.raises(ValueError):
        common.ExtractSliceArr(a, dim='w')
    with pytest.raises(ValueError):
        common.ExtractSliceArr(a, dim=3)
    with pytest.raises(IndexError):
        common.ExtractSliceArr(a, 6, 'z')
    with pytest.raises(IndexError):
        common.ExtractSliceArr(a, -1, 'z')
    with pytest.raises(TypeError):
        common.ExtractSliceArr(a, 1.5, 'z')
    with pytest.raises(ValueError):
        common.ExtractSliceArr(np.zeros((4, 5)), dim='z')


@pytest.mark.parametrize("dim", ['x', 'y', 'z'])
def test_extract_slice_im(dim):
    a = RNG.standard_normal((5, 6, 7)).astype(np.float32)
    g = grid(5, 6, 7, sp=(0.5, 2.0, 3.0), org=(1.0, -2.0, 4.0))
    im = image_from(a, g)
    d = common.DIMMAP[dim]
    s = common.ExtractSliceIm(im, 2, dim)
    size = [5, 6, 7]
    size[d] = 1
    assert tuple(s.size()) == tuple(size)
    assert np.array_equal(to_np(s), np.take(a, [2], axis=d))
    org = [1.0, -2.0, 4.0]
    org[d] += 2 * [0.5, 2.0, 3.0][d]
    assert s.origin() == ca.Vec3Df(*org) and s.spacing() == im.spacing()
    arr = common.ExtractSliceArrIm(im, None, dim)
    assert arr.dtype == np.float32
    assert np.array_equal(arr, np.take(a, a.shape[d] // 2, axis=d))


def test_extract_slice_arr_im_keeps_unit_axes():
    a = RNG.standard_normal((5, 1, 3)).astype(np.float32)
    arr = common.ExtractSliceArrIm(image_from(a), 0, 'z')
    assert arr.shape == (5, 1)  # not squeezed to (5,)


@pytest.mark.parametrize("dim", ['x', 'y', 'z'])
def test_extract_slice_vf(dim):
    comps = [RNG.standard_normal((4, 5, 6)).astype(np.float32) for _ in range(3)]
    f = field_from(comps)
    d = common.DIMMAP[dim]
    s = common.ExtractSliceVF(f, 1, dim)
    assert isinstance(s, ca.Field3D) and s.size()[d] == 1
    for c, v in zip(comps, to_np(s)):
        assert np.array_equal(v, np.take(c, [1], axis=d))
    arr = common.ExtractSliceArrVF(f, 1, dim)
    assert arr.shape == np.take(comps[0], 1, axis=d).shape + (3,)
    for k in range(3):
        assert np.array_equal(arr[..., k], np.take(comps[k], 1, axis=d))


def test_extract_slice_type_errors():
    im = ca.Image3D(grid(3, 3, 3), ca.MEM_HOST)
    f = ca.Field3D(grid(3, 3, 3), ca.MEM_HOST)
    with pytest.raises(TypeError):
        common.ExtractSliceIm(f)
    with pytest.raises(TypeError):
        common.ExtractSliceVF(im)
    with pytest.raises(TypeError):
        common.ExtractSliceIm(np.zeros((3, 3, 3)))
    with pytest.raises(IndexError):
        common.ExtractSliceIm(im, 3, 'x')


def test_extract_roi():
    a = RNG.standard_normal((8, 7, 6)).astype(np.float32)
    im = image_from(a, grid(8, 7, 6, sp=(2, 3, 4), org=(10, 20, 30)))
    r = common.ExtractROI(im, ((1, 5), (2, 7), (0, 3)))
    assert np.array_equal(to_np(r), a[1:5, 2:7, 0:3])
    assert r.origin() == ca.Vec3Df(12, 26, 30) and r.spacing() == ca.Vec3Df(2, 3, 4)
    r2 = common.ExtractROI(im, ((0, 8), (3, 4)))  # z whole
    assert np.array_equal(to_np(r2), a[:, 3:4, :])
    comps = [RNG.standard_normal((8, 7, 6)).astype(np.float32) for _ in range(3)]
    fr = common.ExtractROI(field_from(comps), ((2, 4), (0, 7), (5, 6)))
    for c, v in zip(comps, to_np(fr)):
        assert np.array_equal(v, c[2:4, :, 5:6])


@pytest.mark.parametrize("extent", [((0, 9), (0, 7), (0, 6)), ((3, 3), (0, 7), (0, 6)),
                                    ((-1, 2), (0, 7), (0, 6)), ((0, 1),), ((0, 1, 2), (0, 1), (0, 1))])
def test_extract_roi_bad_extent(extent):
    im = ca.Image3D(grid(8, 7, 6), ca.MEM_HOST)
    with pytest.raises(ValueError):
        common.ExtractROI(im, extent)


def test_extract_roi_type_errors():
    with pytest.raises(TypeError):
        common.ExtractROI(np.zeros((4, 4, 4)), ((0, 1), (0, 1), (0, 1)))
    with pytest.raises(TypeError):
        common.ExtractROI(ca.Image3D(grid(4, 4, 4), ca.MEM_HOST), 5)


# ---------------------------------------------------------------------------
# ComposeDef

def smooth_v(shape, amp, sp=(1.0, 1.0, 1.0), seed=0):
    """A smooth random V-field (physical units) as a Field3D."""
    from scipy import ndimage
    rng = np.random.default_rng(seed)
    comps = []
    for d in range(3):
        if d == 2 and shape[2] == 1:
            comps.append(np.zeros(shape, np.float32))
            continue
        n = ndimage.gaussian_filter(rng.standard_normal(shape), 2.0)
        comps.append((amp * n / np.abs(n).max()).astype(np.float32))
    return field_from(comps, grid(*shape, sp=sp))


def identity(shape):
    return np.stack(np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing='ij'))


def by_hand_forward(V, steps, sp):
    """h_{k+1} = h_k + v_k(h_k) / sp, with ApplyH (PARTIAL_ZERO) sampling v at h."""
    g = V[0].grid()
    h = ca.Field3D(g, ca.MEM_HOST)
    ca.SetToIdentity(h)
    tmp = ca.Field3D(g, ca.MEM_HOST)
    for v, c in steps:
        ca.ApplyH(tmp, v, h, ca.BACKGROUND_STRATEGY_PARTIAL_ZERO)
        hn = np.array(to_np(h), dtype=np.float64)
        vs = np.array(to_np(tmp), dtype=np.float64)
        new = [hn[d] + c * vs[d] / sp[d] for d in range(3)]
        h = field_from(new, g)
    return np.array(to_np(h))


def by_hand_inverse(V, steps, sp):
    """g_{k+1} = g_k o (Id - c v_k / sp), with ApplyH (PARTIAL_ID) sampling g."""
    gi = V[0].grid()
    shape = tuple(gi.size())
    g = ca.Field3D(gi, ca.MEM_HOST)
    ca.SetToIdentity(g)
    out = ca.Field3D(gi, ca.MEM_HOST)
    ident = identity(shape)
    for v, c in steps:
        vv = np.array(to_np(v), dtype=np.float64)
        k = field_from([ident[d] - c * vv[d] / sp[d] for d in range(3)], gi)
        ca.ApplyH(out, g, k, ca.BACKGROUND_STRATEGY_PARTIAL_ID)
        g = field_from(to_np(out), gi)
    return np.array(to_np(g))


@pytest.mark.parametrize("shape,sp", [((12, 10, 1), (1.0, 1.0, 1.0)), ((9, 8, 7), (1.5, 0.8, 1.2))])
def test_composedef_forward_by_hand(shape, sp):
    V = [smooth_v(shape, 1.5, sp, seed=s) for s in range(3)]
    for t, steps in ((1.0, [(V[0], 1), (V[1], 1), (V[2], 1)]),
                     (0.5, [(V[0], 1), (V[1], 0.5)]),
                     (1.0 / 3, [(V[0], 1)])):
        h = common.ComposeDef(V, t)
        assert isinstance(h, ca.Field3D) and h.grid() == V[0].grid()
        assert np.allclose(to_np(h), by_hand_forward(V, steps, sp), atol=2e-4)


@pytest.mark.parametrize("shape,sp", [((12, 10, 1), (1.0, 1.0, 1.0)), ((9, 8, 7), (1.5, 0.8, 1.2))])
def test_composedef_inverse_by_hand(shape, sp):
    V = [smooth_v(shape, 1.5, sp, seed=10 + s) for s in range(2)]
    for t, steps in ((1.0, [(V[0], 1), (V[1], 1)]), (0.75, [(V[0], 1), (V[1], 0.5)])):
        g = common.ComposeDef(V, t, inverse=True)
        assert np.allclose(to_np(g), by_hand_inverse(V, steps, sp), atol=2e-4)


def test_composedef_translation_numpy():
    """Constant velocities: h = x + sum(c_k) / sp away from the border."""
    shape, sp = (20, 18, 1), (2.0, 0.5, 1.0)
    cs = [(1.0, 0.25, 0.0), (2.0, -0.5, 0.0)]
    V = [field_from([np.full(shape, c[d], np.float32) for d in range(3)], grid(*shape, sp=sp))
         for c in cs]
    ident = identity(shape)
    h = np.array(to_np(common.ComposeDef(V, 1.0)))
    want = [ident[d] + (cs[0][d] + cs[1][d]) / sp[d] for d in range(3)]
    inner = (slice(0, 15), slice(0, 15), slice(None))
    for d in range(3):
        assert np.allclose(h[d][inner], want[d][inner], atol=1e-5)
    g = np.array(to_np(common.ComposeDef(V, 1.0, inverse=True)))
    inner = (slice(5, 20), slice(3, 16), slice(None))  # g is sampled at y + 1 by step 2
    for d in range(3):
        assert np.allclose(g[d][inner], (ident[d] - (cs[0][d] + cs[1][d]) / sp[d])[inner], atol=1e-5)
    # half time: the first step only
    h = np.array(to_np(common.ComposeDef(V, 0.5)))
    assert np.allclose(h[0][:15, :15], (ident[0] + 0.5)[:15, :15], atol=1e-5)


def test_composedef_identity_asvfield_and_scratch():
    shape, sp = (8, 7, 6), (1.5, 1.0, 0.5)
    V = [smooth_v(shape, 1.0, sp, seed=s) for s in range(3)]
    h0 = common.ComposeDef(V, 0.0)
    assert np.allclose(to_np(h0), identity(shape))
    h = common.ComposeDef(V, 0.8)
    v = common.ComposeDef(V, 0.8, asVField=True)
    hv = np.array(to_np(h), dtype=np.float64)
    want = [(hv[d] - identity(shape)[d]) * sp[d] for d in range(3)]
    assert np.allclose(to_np(v), want, atol=1e-5)
    s1, s2 = ca.Field3D(V[0].grid(), ca.MEM_HOST), ca.Field3D(V[0].grid(), ca.MEM_HOST)
    hs = common.ComposeDef(V, 0.8, scratchV1=s1, scratchV2=s2)
    assert np.allclose(to_np(hs), to_np(h), atol=1e-6)
    assert hs is not s1 and hs is not s2
    for k in (0, 1, 2):
        assert np.array_equal(to_np(common.ComposeDef(V, k / 3.0, scratchV1=s1)),
                              to_np(common.ComposeDef(V, k / 3.0)))


def test_composedef_errors():
    V = [smooth_v((6, 6, 1), 1.0)]
    with pytest.raises(ValueError):
        common.ComposeDef([], 0.5)
    with pytest.raises(ValueError):
        common.ComposeDef(V, 1.5)
    with pytest.raises(ValueError):
        common.ComposeDef(V, -0.1)
    with pytest.raises(TypeError):
        common.ComposeDef(V, "half")
    with pytest.raises(TypeError):
        common.ComposeDef([ca.Image3D(grid(6, 6, 1), ca.MEM_HOST)], 0.5)
    with pytest.raises(ValueError):
        common.ComposeDef(V + [smooth_v((7, 6, 1), 1.0)], 0.5)
    with pytest.raises(ValueError):
        common.ComposeDef(V, 0.5, scratchV1=ca.Field3D(grid(5, 6, 1), ca.MEM_HOST))
    with pytest.raises(TypeError):
        common.ComposeDef(V, 0.5, scratchV1=ca.Image3D(grid(6, 6, 1), ca.MEM_HOST))


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_composedef_device_matches_host():
    V = [smooth_v((10, 9, 8), 1.0, seed=s) for s in range(2)]
    Vd = []
    for v in V:
        c = v.copy()
        c.toType(ca.MEM_DEVICE)
        Vd.append(c)
    hd = common.ComposeDef(Vd, 0.7, inverse=True)
    assert hd.memType() == ca.MEM_DEVICE
    assert np.allclose(to_np(hd), to_np(common.ComposeDef(V, 0.7, inverse=True)), atol=1e-4)


# ---------------------------------------------------------------------------
# windows, noise, smoothing

@pytest.mark.parametrize("n,w", [(32, 4), (33, 5), (16, 7.5), (10, 0), (2, 0.5), (100, 49.5)])
def test_tukey1d_vs_scipy(n, w):
    from scipy.signal import windows
    ref = windows.tukey(n, 2.0 * w / (n - 1)) if w > 0 else np.ones(n)
    assert np.allclose(common.TukeyWindow1D(n, w), ref, atol=1e-12)


def test_tukey1d_errors():
    for n, w in ((10, -1), (10, 5), (1, 1), (-3, 0)):
        with pytest.raises(ValueError):
            common.TukeyWindow1D(n, w)
    assert np.array_equal(common.TukeyWindow1D(1, 0), [1.0])
    assert common.TukeyWindow1D(0, 0).shape == (0,)


def test_tukey_nd():
    w = common.TukeyWindow((16, 12, 1), 3)
    assert w.shape == (16, 12, 1)
    ref = np.outer(common.TukeyWindow1D(16, 3), common.TukeyWindow1D(12, 3))[:, :, None]
    assert np.allclose(w, ref)
    w2 = common.TukeyWindow(ca.Vec3Di(10, 8, 6), (2, 3, 1))
    ref2 = (common.TukeyWindow1D(10, 2)[:, None, None] * common.TukeyWindow1D(8, 3)[None, :, None]
            * common.TukeyWindow1D(6, 1)[None, None, :])
    assert np.allclose(w2, ref2)
    with pytest.raises(ValueError):
        common.TukeyWindow((10, 8), (1, 2, 3))


@pytest.mark.parametrize("mem", usable_mem_types)
def test_add_white_noise(mem):
    a = np.full((40, 30, 20), 5.0, np.float32)
    im = image_from(a, mem=mem)
    common.AddWhiteNoise(im, 0.5, seed=3)
    assert im.memType() == mem
    n = to_np(im) - 5.0
    assert abs(n.mean()) < 0.01 and abs(n.std() - 0.5) < 0.01
    im2 = image_from(a, mem=mem)
    common.AddWhiteNoise(im2, 0.5, seed=3)
    assert np.array_equal(to_np(im), to_np(im2))  # reproducible
    ref = a + np.random.default_rng(3).normal(0.0, 0.5, a.shape)
    assert np.allclose(to_np(im), ref, atol=1e-5)


def test_add_white_noise_field_and_legacy_state():
    f = field_from([np.zeros((10, 10, 10), np.float32)] * 3)
    common.AddWhiteNoise(f, 1.0, seed=np.random.default_rng(1))
    x, y, z = to_np(f)
    assert x.std() > 0.8 and y.std() > 0.8 and z.std() > 0.8 and not np.array_equal(x, y)
    im1, im2 = image_from(np.zeros((5, 5, 5))), image_from(np.zeros((5, 5, 5)))
    np.random.seed(11)
    common.AddWhiteNoise(im1, 1.0)
    np.random.seed(11)
    common.AddWhiteNoise(im2, 1.0)
    assert np.array_equal(to_np(im1), to_np(im2))
    with pytest.raises(ValueError):
        common.AddWhiteNoise(im1, -1.0)
    with pytest.raises(TypeError):
        common.AddWhiteNoise(np.zeros(3), 1.0)


def test_gaussian_blur_vs_scipy():
    from scipy import ndimage
    a = RNG.standard_normal((16, 14, 12)).astype(np.float32)
    im = image_from(a, grid(16, 14, 12, sp=(2, 2, 2)))
    b = common.GaussianBlur(im, 1.5)
    assert b.grid() == im.grid() and b.memType() == im.memType() and b is not im
    assert np.allclose(to_np(b), ndimage.gaussian_filter(a.astype(np.float64), 1.5), atol=1e-5)
    assert np.array_equal(to_np(common.GaussianBlur(im, 0)), a)
    b2 = common.GaussianBlur(im, (1.0, 0, 2.0))
    assert np.allclose(to_np(b2), ndimage.gaussian_filter(a.astype(np.float64), (1.0, 0, 2.0)), atol=1e-5)
    s = RNG.standard_normal((16, 14, 1)).astype(np.float32)  # 2-D: z is not smoothed
    b3 = common.GaussianBlur(image_from(s), 2.0)
    assert np.allclose(to_np(b3)[:, :, 0], ndimage.gaussian_filter(s[:, :, 0].astype(np.float64), 2.0),
                       atol=1e-5)
    f = field_from([a, 2 * a, -a])
    bf = to_np(common.GaussianBlur(f, 1.0))
    assert np.allclose(bf[1], 2 * ndimage.gaussian_filter(a.astype(np.float64), 1.0), atol=1e-4)
    with pytest.raises(ValueError):
        common.GaussianBlur(im, -1)


# ---------------------------------------------------------------------------
# PNG frames

def _read_png(fname):
    from matplotlib import image as mimage
    return mimage.imread(fname)


def test_save_slice_stack_values(tmp_path):
    """The frames are written by PyCAIO.SavePNGImage (PyCACommon imports
    PyCAIO; there is no import cycle and no fallback writer any more)."""
    pytest.importorskip("matplotlib")
    a = np.zeros((6, 5, 4), np.float32)
    for k in range(4):
        a[:, :, k] = np.arange(6)[:, None] + 10 * k  # rows = x
    im = image_from(a)
    names = common.SaveSliceStack(im, str(tmp_path / "f%02d.png"))
    assert names == [str(tmp_path / ("f%02d.png" % k)) for k in range(4)]
    lo, hi = a.min(), a.max()
    for k, n in enumerate(names):
        p = _read_png(n)
        assert p.shape[:2] == (6, 5)  # X rows, Y columns
        grey = p if p.ndim == 2 else p[..., 0]  # SavePNGImage writes 8-bit grey
        assert np.allclose(grey, (a[:, :, k] - lo) / (hi - lo), atol=1.5 / 255)
    names = common.SaveSliceStack(im, str(tmp_path / "x{:d}.png"), dim='x', rng=(0, 100))
    assert len(names) == 6 and _read_png(names[0]).shape[:2] == (5, 4)
    names = common.SaveSliceStack(im, str(tmp_path / "plain.png"), dim='y')
    assert names[0].endswith("plain0000.png") and len(names) == 5


def test_save_slice_stack_default_writer(tmp_path):
    pytest.importorskip("matplotlib")
    a = RNG.random((7, 6, 3)).astype(np.float32)
    names = common.SaveSliceStack(image_from(a), str(tmp_path / "s%d.png"))
    for n in names:
        p = _read_png(n)
        assert p.shape[:2] in ((7, 6), (6, 7)) and np.std(p) > 0


def test_read_vol_write_frames(tmp_path):
    pytest.importorskip("matplotlib")
    im = image_from(RNG.random((4, 5, 3)).astype(np.float32))
    names = common.ReadVolWriteFrames(im, str(tmp_path / "r%d.png"))
    assert len(names) == 3 and all(os.path.getsize(n) > 0 for n in names)
    with pytest.raises(OSError, match="missing.mha"):
        common.ReadVolWriteFrames(str(tmp_path / "missing.mha"), str(tmp_path / "r%d.png"))
    # a file name is read with PyCAIO.LoadImage
    npy = str(tmp_path / "vol.npy")
    common.SaveImage(im, npy)
    names = common.ReadVolWriteFrames(npy, str(tmp_path / "n%d.png"), dim='x')
    assert len(names) == 4 and _read_png(names[0]).shape[:2] == (5, 3)


def test_save_slice_stack_errors(tmp_path):
    with pytest.raises(TypeError):
        common.SaveSliceStack(np.zeros((3, 3, 3)), str(tmp_path / "a%d.png"))
    im = image_from(np.zeros((3, 3, 3)))
    with pytest.raises(TypeError):
        common.SaveSliceStack(im, 5)
    with pytest.raises(ValueError):
        common.SaveSliceStack(im, str(tmp_path / "a%d.png"), rng=(0, 1, 2))


# ---------------------------------------------------------------------------
# Distribute, Mkdir_p, ReadPLUNC

def test_distribute_covers_once_balanced():
    for nEl in range(0, 23):
        for size in range(1, 8):
            parts = [common.Distribute(nEl, size, r) for r in range(size)]
            flat = [i for p in parts for i in p]
            assert flat == list(range(nEl))  # contiguous, in rank order, each once
            lens = [len(p) for p in parts]
            assert max(lens) - min(lens) <= 1
            assert lens == sorted(lens, reverse=True)


def test_distribute_examples_and_errors():
    assert common.Distribute(10, 3, 0) == [0, 1, 2, 3]
    assert common.Distribute(10, 3, 1) == [4, 5, 6]
    assert common.Distribute(10, 3, 2) == [7, 8, 9]
    assert common.Distribute(2, 4, 3) == []
    assert common.Distribute(np.int64(4), 2, np.int32(1)) == [2, 3]
    for args in ((-1, 2, 0), (5, 0, 0), (5, 2, 2), (5, 2, -1)):
        with pytest.raises(ValueError):
            common.Distribute(*args)
    for args in ((5.0, 2, 0), (5, "2", 0), (5, 2, None), (True, 2, 0)):
        with pytest.raises(TypeError):
            common.Distribute(*args)


def test_mkdir_p(tmp_path):
    d = tmp_path / "a" / "b" / "c"
    common.Mkdir_p(str(d))
    assert d.is_dir()
    common.Mkdir_p(d)  # exists: fine (PathLike too)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(OSError):
        common.Mkdir_p(str(f))
    with pytest.raises(OSError):
        common.Mkdir_p(str(f / "sub"))


def test_read_plunc(tmp_path):
    m = np.array([[1.0, 0.5, 0.0, 10.0], [0.25, 2.0, 0.1, -3.0], [0.0, 0.3, 0.9, 7.5], [0, 0, 0, 1]])
    p = tmp_path / "t.plunc"
    p.write_text("\n".join(" ".join(repr(float(v)) for v in row) for row in m.T) + "\n")  # transposed
    r = common.ReadPLUNC(str(p))
    assert r.shape == (4, 4) and r.dtype == np.float64
    assert np.array_equal(r, m)
    a = ca.Aff3Dd()
    a.readPLUNCStyle(str(p))
    assert np.allclose(r, np.array(a.tolist()))
    # written by PyCA itself
    w = ca.Aff3Dd()
    w.fromlist(m.tolist())
    q = tmp_path / "w.plunc"
    w.writePLUNCStyle(str(q))
    assert np.allclose(common.ReadPLUNC(q), m)


@pytest.mark.parametrize("content", ["1 2 3", "a b c d " * 4, "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 2",
                                     "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1 5", "nan " * 16])
def test_read_plunc_malformed(tmp_path, content):
    p = tmp_path / "bad.plunc"
    p.write_text(content)
    with pytest.raises(OSError) as e:
        common.ReadPLUNC(str(p))
    assert "bad.plunc" in str(e.value)


def test_read_plunc_missing(tmp_path):
    p = str(tmp_path / "none.plunc")
    with pytest.raises(IOError) as e:
        common.ReadPLUNC(p)
    assert "none.plunc" in str(e.value)


# ---------------------------------------------------------------------------
# PyCADebug

def test_debug_here_non_interactive_does_not_hang():
    code = ("import warnings, PyCA.Common as c\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    c.DebugHere()\n"
            "print('returned', len(w), w[0].category.__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=60, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "returned 1 RuntimeWarning" in r.stdout


def test_debug_here_in_pytest_warns():
    with pytest.warns(RuntimeWarning):
        common.DebugHere()


def _outer_helper():
    return common.GetOuterFrame()


def test_get_outer_frame():
    fi = _outer_helper()
    line = sys._getframe().f_lineno - 1
    assert fi.filename == __file__ and fi.lineno == line
    assert fi.function == "test_get_outer_frame"
    assert common.GetOuterFrame(0).function == "test_get_outer_frame"
    with pytest.raises(ValueError):
        common.GetOuterFrame(-1)
    with pytest.raises(ValueError):
        common.GetOuterFrame(10000)


def test_check_cuda_error():
    common.CheckCUDAError()
    common.CheckCUDAError("after setup")  # no error pending: returns


# ---------------------------------------------------------------------------
# PyCAVersion

def test_version():
    v = common.PyCAVersion()
    assert isinstance(v, str) and v.startswith("v" + PyCA.__version__)
    major, minor = (int(x) for x in PyCA.__version__.split(".")[:2])
    assert common.PyCAVersionMajor() == major and common.PyCAVersionMinor() == minor
    assert isinstance(common.PyCACommit(), str) and common.PyCACommit()
    assert isinstance(common.PyCABranch(), str) and common.PyCABranch()
    c = common.PyCACommit()
    assert c == "unknown" or all(ch in "0123456789abcdef" for ch in c)


def test_version_without_build_info():
    code = ("import sys; sys.modules['PyCA.Common._build_info'] = None\n"
            "import PyCA, PyCA.Common as c\n"
            "print(c.PyCAVersion(), c.PyCAVersionMajor(), c.PyCAVersionMinor(), c.PyCACommit(), "
            "c.PyCABranch())\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    import PyCA as P
    major, minor = P.__version__.split(".")[:2]
    assert r.stdout.split() == ["v" + P.__version__, major, minor, "unknown", "unknown"]
