"""PyCA.Common.PyCATestData (spec 5.2): the Draw* generators against hand
computations, the random generators' statistics and reproducibility, and
WavyDef against its closed form."""
import math

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Common as common
from conftest import to_np, usable_mem_types

DRAW = ["DrawCircle", "DrawEllipse", "DrawRect", "DrawRectFromCenter", "DrawSin", "DrawLine",
        "DrawChecker", "DrawSlantyDiamonds", "DrawDiamonds", "DrawSlantStripes", "DrawWavyStripes",
        "DrawWavySinStripes", "DrawSinSlantStripes"]


def test_exports():
    for n in DRAW + ["RandImage", "RandUnifImage", "RandField", "WavyDef"]:
        assert callable(getattr(common, n)), n


def test_circle_counts_by_hand():
    c = common.DrawCircle((9, 9), (4, 4), 2)
    assert c.shape == (9, 9) and c.dtype == np.float32
    # lattice points with dx^2 + dy^2 <= 4: 13
    assert c.sum() == 13
    assert c[4, 4] == 1 and c[6, 4] == 1 and c[4, 2] == 1 and c[6, 5] == 0 and c[5, 6] == 0
    d = common.DrawCircle((32, 24))  # default: centre (15.5, 11.5), radius 6
    assert d[15, 11] == 1 and d[15, 4] == 0 and d[15, 6] == 1
    ball = common.DrawCircle((9, 9, 9), (4, 4, 4), 1.0, val=3.0)
    assert ball.sum() == 3.0 * 7  # centre + 6 neighbours
    ext = common.DrawCircle((9, 9, 4), (4, 4), 2)
    assert ext.shape == (9, 9, 4) and all(np.array_equal(ext[:, :, k], c) for k in range(4))


def test_ellipse_rect_line_by_hand():
    e = common.DrawEllipse((11, 11), (5, 5), 4, 1)
    assert e[1, 5] == 1 and e[9, 5] == 1 and e[0, 5] == 0 and e[5, 6] == 1 and e[5, 7] == 0
    assert e.sum() == 9 + 2  # row y=5: x = 1..9; rows y = 4, 6: x = 5 only
    ys, xs = np.nonzero(e.T)
    for x, y in zip(xs, ys):
        assert ((x - 5) / 4.0) ** 2 + ((y - 5) / 1.0) ** 2 <= 1.0
    r = common.DrawRect((10, 8), (2, 1), (5, 3), val=2.0)
    assert r.sum() == 2.0 * 4 * 3 and r[2, 1] == 2 and r[5, 3] == 2 and r[6, 3] == 0
    rc = common.DrawRectFromCenter((10, 8), (4, 3), 4, 2)
    assert np.array_equal(rc, common.DrawRect((10, 8), (2, 2), (6, 4)))
    ln = common.DrawLine((10, 10), (1, 3), (8, 3), width=1.0)
    assert np.array_equal(np.nonzero(ln)[1], [3] * 8) and ln[1:9, 3].all()
    dot = common.DrawLine((5, 5), (2, 2), (2, 2), width=2.0)
    assert dot.sum() == 5  # a disk of radius 1


def test_checker_sin_by_hand():
    c = common.DrawChecker((8, 8), 2)
    assert c[0, 0] == 0 and c[2, 0] == 1 and c[2, 2] == 0 and c[1, 3] == 1 and c.sum() == 32
    s = common.DrawSin((16, 4), nPeriods=2, dim=0, amp=3.0)
    x = np.arange(16)
    assert np.allclose(s[:, 1], 3.0 * np.sin(2 * np.pi * 2 * x / 16), atol=1e-6)
    assert np.allclose(s[:, 0], s[:, 3])
    sy = common.DrawSin((4, 10), nPeriods=1, dim='y', phase=0.5)
    assert np.allclose(sy[2], np.sin(2 * np.pi * np.arange(10) / 10 + 0.5), atol=1e-6)


def test_stripes_and_diamonds():
    p = 8
    st = common.DrawSlantStripes((32, 16), period=p, angle=0.0)
    x = np.arange(32)
    assert np.array_equal(st[:, 5], (np.floor(2 * x / p) % 2 == 1).astype(np.float32))
    assert np.array_equal(st[:, 0], st[:, 15])
    wavy0 = common.DrawWavyStripes((32, 16), period=p, waveAmp=0.0)
    assert np.array_equal(wavy0, st)
    assert np.allclose(common.DrawWavySinStripes((32, 16), period=p, waveAmp=0.0),
                       common.DrawSinSlantStripes((32, 16), period=p, angle=0.0), atol=1e-6)
    sm = common.DrawSinSlantStripes((32, 16), period=p, angle=90.0, amp=2.0)
    y = np.arange(16)
    assert np.allclose(sm[3], 2.0 * 0.5 * (1 + np.sin(2 * np.pi * y / p)), atol=1e-5)
    wavy = common.DrawWavyStripes((32, 16), period=p, waveAmp=3.0, wavePeriod=8)
    assert not np.array_equal(wavy[:, 2], wavy[:, 0]) and np.array_equal(wavy[:, 0], st[:, 0])
    dm = common.DrawDiamonds((32, 32), period=8)
    assert set(np.unique(dm)) <= {0.0, 1.0} and abs(dm.mean() - 0.5) < 0.1
    assert dm[0, 0] == 0
    for xx, yy in ((3, 9), (17, 2), (25, 30)):
        assert dm[xx, yy] == float((math.floor((xx + yy) / 8) + math.floor((xx - yy) / 8)) % 2 == 1)
    sd = common.DrawSlantyDiamonds((32, 32), period=8, angle=0.0)
    assert np.array_equal(sd, common.DrawChecker((32, 32), 4))


@pytest.mark.parametrize("name", DRAW)
def test_draw_3d_repeats_along_z(name):
    args = {"DrawEllipse": ((None, 4, 3)), "DrawRect": ((2, 2), (6, 5)),
            "DrawRectFromCenter": (None, 4, 3), "DrawLine": ((1, 1), (10, 8))}.get(name, ())
    f = getattr(common, name)
    a2 = f((12, 10), *args)
    a3 = f((12, 10, 3), *args)
    assert a2.shape == (12, 10) and a3.shape == (12, 10, 3)
    assert a2.dtype == np.float32 and np.all(np.isfinite(a2)) and a2.std() > 0
    for k in range(3):
        assert np.array_equal(a3[:, :, k], a2)
    im = common.ImFromNPArr(a2)
    assert tuple(im.size()) == (12, 10, 1)


def test_draw_errors():
    with pytest.raises(ValueError):
        common.DrawCircle((4,))
    with pytest.raises(TypeError):
        common.DrawCircle(5)
    with pytest.raises(TypeError):
        common.DrawChecker((4.5, 4))
    with pytest.raises(ValueError):
        common.DrawChecker((4, 4), 0)
    with pytest.raises(ValueError):
        common.DrawEllipse((8, 8), None, 0, 2)
    with pytest.raises(ValueError):
        common.DrawSin((8, 8), dim=2)
    with pytest.raises(ValueError):
        common.DrawCircle((8, 8), (4, 4, 4))  # 3-D centre on a 2-D size
    with pytest.raises(ValueError):
        common.DrawCircle((8, 8), rad=-1)
    with pytest.raises(ValueError):
        common.DrawSlantStripes((8, 8), period=-2)


# ---------------------------------------------------------------------------
# random data

@pytest.mark.parametrize("mem", usable_mem_types)
def test_rand_image(mem):
    sp, org = ca.Vec3Df(2, 3, 4), ca.Vec3Df(1, 2, 3)
    im = common.RandImage((30, 20, 10), nSig=2.0, mType=mem, sp=sp, orig=org, seed=5)
    assert im.memType() == mem and im.spacing() == sp and im.origin() == org
    a = to_np(im)
    assert a.shape == (30, 20, 10) and abs(a.mean()) < 0.1 and abs(a.std() - 2.0) < 0.05
    assert np.allclose(a, np.random.default_rng(5).normal(0, 2.0, (30, 20, 10)), atol=1e-6)
    assert np.array_equal(a, to_np(common.RandImage((30, 20, 10), 2.0, seed=5)))
    assert not np.array_equal(a, to_np(common.RandImage((30, 20, 10), 2.0, seed=6)))


def test_rand_image_smooth_nonneg_2d():
    from scipy import ndimage
    im = common.RandImage((24, 20), nSig=1.0, gSig=2.0, NonNeg=True, seed=1)
    assert tuple(im.size()) == (24, 20, 1)
    raw = np.random.default_rng(1).normal(0, 1.0, (24, 20, 1))
    ref = np.abs(ndimage.gaussian_filter(raw, (2.0, 2.0, 0.0)))
    assert np.allclose(to_np(im), ref, atol=1e-6) and to_np(im).min() >= 0
    np.random.seed(4)
    a = to_np(common.RandImage((5, 5, 5)))
    np.random.seed(4)
    assert np.array_equal(a, to_np(common.RandImage((5, 5, 5))))  # legacy global state
    with pytest.raises(ValueError):
        common.RandImage((5, 5), nSig=-1)
    with pytest.raises(ValueError):
        common.RandImage((5, 5), gSig=-1)


def test_rand_unif_image():
    im = common.RandUnifImage((20, 20, 20), -2.0, 3.0, seed=2)
    a = to_np(im)
    assert a.min() >= -2.0 and a.max() < 3.0 and abs(a.mean() - 0.5) < 0.1
    assert np.array_equal(a, to_np(common.RandUnifImage((20, 20, 20), -2.0, 3.0, seed=2)))
    with pytest.raises(ValueError):
        common.RandUnifImage((4, 4), 2.0, 1.0)


def test_rand_field_is_3d_noise():
    f = common.RandField((16, 14, 12), nSig=1.5, seed=9)
    x, y, z = [np.asarray(c, dtype=np.float64) for c in to_np(f)]
    for c in (x, y, z):
        assert abs(c.std() - 1.5) < 0.05
    # not replicated along z (the legacy defect): slices are uncorrelated
    assert not np.array_equal(x[:, :, 0], x[:, :, 1])
    assert abs(np.corrcoef(x[:, :, 0].ravel(), x[:, :, 1].ravel())[0, 1]) < 0.2
    assert abs(np.corrcoef(x.ravel(), y.ravel())[0, 1]) < 0.1  # independent components
    assert np.array_equal(to_np(common.RandField((16, 14, 12), 1.5, seed=9))[0], to_np(f)[0])


def test_rand_field_2d_smooth_nonneg():
    f = common.RandField((20, 18), nSig=1.0, gSig=1.5, NonNeg=True, sp=(2, 2, 2), seed=3)
    assert tuple(f.size()) == (20, 18, 1) and f.spacing() == ca.Vec3Df(2, 2, 2)
    x, y, z = to_np(f)
    assert x.min() >= 0 and y.min() >= 0 and np.all(z == 0)
    assert x.std() < 0.5  # smoothed


@pytest.mark.parametrize("waveDim", [0, 1, 2])
def test_wavydef(waveDim):
    shape, sp = (16, 12, 6), (2.0, 1.0, 0.5)
    v = common.WavyDef(shape, nWaves=3, waveAmp=1.5, waveDim=waveDim, deformation=False,
                       sp=ca.Vec3Df(*sp))
    h = common.WavyDef(shape, nWaves=3, waveAmp=1.5, waveDim=waveDim, sp=ca.Vec3Df(*sp))
    ax = 1 if waveDim == 0 else 0
    q = np.arange(shape[ax], dtype=np.float64)
    prof = 1.5 * np.sin(2 * np.pi * 3 * q / shape[ax])
    vv = to_np(v)
    for d in range(3):
        if d == waveDim:
            want = np.broadcast_to(prof.reshape([-1 if i == ax else 1 for i in range(3)]), shape)
        else:
            want = np.zeros(shape)
        assert np.allclose(vv[d], want, atol=1e-6)
    ident = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing='ij')
    for d, c in enumerate(to_np(h)):
        assert np.allclose(c, ident[d] + vv[d] / sp[d], atol=1e-5)


def test_wavydef_errors_and_memtype():
    with pytest.raises(ValueError):
        common.WavyDef((8, 8), waveDim=3)
    f = common.WavyDef((8, 8))
    assert tuple(f.size()) == (8, 8, 1) and f.memType() == ca.MEM_HOST
