"""Metrics that work on any image (issue 29): the robust LNCC (LNCC plus the
global NCC term) and the ``auto`` default that picks it for piecewise-
constant images, against independent float64 references (scipy windowed
sums, NumPy least squares) and central finite differences of the energy;
the classic circle -> C pair (dipy's package data) registered with the
defaults; and the "mismatch barely fell" warning in summary.json and on the
command lines."""
import json
import os

import numpy as np
import pytest
from scipy import ndimage

import PyCA.Core as ca
from PyCA.Common import ImFromNPArr
from PyCA.Apps._common import ConfigError
from conftest import run_module
from PyCA.Apps.metrics import (LNCC, Auto, make_metric, flat_fraction, mismatch_warnings, ncc_ratio,
                               AUTO_FLAT_FRACTION, BARELY_FELL_RATIO)


def _im(a, sp=None):
    return ImFromNPArr(np.ascontiguousarray(a, dtype=np.float32), ca.MEM_HOST, sp)


def _smooth(rng, shape, s=1.5):
    return ndimage.gaussian_filter(rng.standard_normal(shape), s)


def _unit(a):
    return ((a - a.min()) / (a.max() - a.min())).astype(np.float32)


def _disk(shape, c, r):
    y, x = np.meshgrid(np.arange(shape[1]), np.arange(shape[0]))
    return ((x - c[0]) ** 2 + (y - c[1]) ** 2 <= r * r).astype(np.float32)


# --------------------------------------------------------------------------- references

def _box(a, r):
    """The windowed sum over (2r+1)^d boxes truncated at the border (scipy)."""
    size = [2 * r + 1 if s > 1 else 1 for s in a.shape]
    return ndimage.uniform_filter(a, size, mode='constant') * np.prod(size)


def _ref_lncc(I, J, r, eps):
    n = _box(np.ones_like(I), r)
    sI, sJ = _box(I, r), _box(J, r)
    A = _box(I * I, r) - sI * sI / n
    B = _box(J * J, r) - sJ * sJ / n
    C = _box(I * J, r) - sI * sJ / n
    return np.sum((A - C * C / (B + eps)) / n)


def _ref_ncc(I, J):
    """The SSD left after the least-squares global linear map J -> I."""
    X = np.stack([J.ravel(), np.ones(J.size)], 1)
    coef = np.linalg.lstsq(X, I.ravel(), rcond=None)[0]
    return np.sum((I.ravel() - X @ coef) ** 2)


def _ref_flat_fraction(I, r, tol=1e-3):
    n = _box(np.ones_like(I), r)
    var = _box(I * I, r) / n - (_box(I, r) / n) ** 2
    fg = I > I.min() + 0.05 * (I.max() - I.min())
    return np.sum((var < tol * I.var()) & fg) / np.sum(fg)


# --------------------------------------------------------------------------- robust LNCC

@pytest.mark.parametrize('shape', [(30, 26), (12, 11, 9)])
def test_robust_lncc_energy_against_references(shape):
    rng = np.random.default_rng(5)
    I = _unit(_smooth(rng, shape))
    J = _unit(_smooth(rng, shape) + 0.5 * I)
    fi, ji = _im(I), _im(J)
    w = 0.7
    m = LNCC(2, global_weight=w).prepare(fi, ji)
    I64, J64 = I.astype(np.float64), J.astype(np.float64)
    ref = _ref_lncc(I64, J64, 2, m._eps) + w * _ref_ncc(I64, J64)
    assert m.energy(fi, ji) == pytest.approx(ref, rel=2e-4)
    assert m.describe() == {'metric': 'lncc', 'lncc_radius': 2, 'global_weight': w}
    assert LNCC(2).describe() == {'metric': 'lncc', 'lncc_radius': 2}


@pytest.mark.parametrize('which', ['robust', 'auto-binary', 'auto-smooth'])
@pytest.mark.parametrize('shape', [(30, 24), (12, 11, 9)])
def test_robust_lncc_and_auto_gradient_against_finite_differences(which, shape):
    """force = -1/2 dE/dJ / voxelVol, by central differences of the energy in
    random smooth directions; anisotropic spacing. 'auto-binary' is a pair
    of binary shapes, where auto picks the robust LNCC."""
    rng = np.random.default_rng(21)
    h = 2e-3
    if which == 'auto-binary':
        # binary images: the energy is smooth in the intensities, but with a
        # curvature ~ 1/eps in the flat windows: a smaller step
        h = 2e-4
        if len(shape) == 2:
            shape = (48, 44)
            I, J = _disk(shape, (22, 21), 14), _disk(shape, (26, 19), 12)
        else:                                            # two half-planes
            I = (np.arange(shape[0])[:, None, None] < 6) + np.zeros(shape, np.float32)
            J = (np.arange(shape[1])[None, :, None] < 5) + np.zeros(shape, np.float32)
        I, J = _unit(I), _unit(J)
    else:
        I = _unit(_smooth(rng, shape))
        J = _unit(_smooth(rng, shape) + 0.5 * I)
    sp = ca.Vec3Df(1.5, 0.75, 2.0)
    fi, ji = _im(I, sp), _im(J, sp)
    m = LNCC(2, global_weight=1.3) if which == 'robust' else Auto(2)
    m.prepare(fi, ji)
    if which == 'auto-binary':
        assert m.chosen == 'robust lncc'
    elif which == 'auto-smooth':
        assert m.chosen == 'lncc'
    force = ca.Image3D(fi.grid(), ca.MEM_HOST)
    e0 = m.evaluate(fi, ji, force)
    F = np.array(force.asnp(), np.float64).reshape(J.shape)
    vol = fi.grid().voxelVol()
    for k in range(3):
        d = _smooth(rng, shape, 2.5)
        d /= np.abs(d).max()
        ep = m.energy(fi, _im(J + h * d, sp))
        em = m.energy(fi, _im(J - h * d, sp))
        fd = (ep - em) / (2 * h)
        an = -2.0 * vol * np.sum(F * d)
        assert an == pytest.approx(fd, rel=2e-2, abs=1e-4 * abs(e0)), (which, k)


def test_robust_lncc_gives_force_where_plain_lncc_is_blind():
    """A small disk inside a large one, their edges 8 voxels apart: every
    LNCC window is flat in one image or the other, so plain LNCC gives no
    force at all; the robust LNCC raises the deformed image at its edge
    (times the image gradient, the methods' update: the small disk grows
    toward the large one's edge)."""
    shape = (48, 40)
    I = _disk(shape, (24, 20), 13)
    J = _disk(shape, (24, 20), 5)
    fi, ji = _im(I), _im(J)
    force = ca.Image3D(fi.grid(), ca.MEM_HOST)
    LNCC(2).prepare(fi, ji).evaluate(fi, ji, force)
    assert np.abs(force.asnp()).max() < 1e-6
    LNCC(2, global_weight=1.0).prepare(fi, ji).evaluate(fi, ji, force)
    F = np.array(force.asnp()).reshape(shape)
    for x, y in ((30, 20), (18, 20), (24, 26), (24, 14)):     # just outside the small disk
        assert F[x, y] > 0.1, (x, y, F[x, y])


def test_positive_ncc_against_numpy_and_finite_differences():
    """The robust LNCC's global term: E = N vol (a - c|c|/b), NCC where c >= 0."""
    from PyCA.Apps.metrics import NCC
    rng = np.random.default_rng(8)
    I = _unit(_smooth(rng, (26, 22)))
    for sign in (1.0, -1.0):
        J = _unit(_smooth(rng, (26, 22)) + sign * 0.8 * I)
        fi, ji = _im(I), _im(J)
        I64, J64 = I.astype(np.float64), J.astype(np.float64)
        a, b = I64.var(), J64.var()
        c = np.mean((I64 - I64.mean()) * (J64 - J64.mean()))
        assert np.sign(c) == sign
        m = NCC(positive=True).prepare(fi, ji)
        assert m.energy(fi, ji) == pytest.approx(I.size * (a - c * abs(c) / b), rel=1e-4)
        if sign > 0:
            assert m.energy(fi, ji) == pytest.approx(NCC().prepare(fi, ji).energy(fi, ji), rel=1e-12)
        force = ca.Image3D(fi.grid(), ca.MEM_HOST)
        e0 = m.evaluate(fi, ji, force)
        F = np.array(force.asnp(), np.float64).reshape(J.shape)
        d = _smooth(rng, (26, 22), 2.5)
        d /= np.abs(d).max()
        h = 2e-3
        fd = (m.energy(fi, _im(J + h * d)) - m.energy(fi, _im(J - h * d))) / (2 * h)
        assert -2.0 * np.sum(F * d) == pytest.approx(fd, rel=2e-2, abs=1e-4 * abs(e0))


def test_global_weight_is_checked():
    for bad in (-1.0, float('nan'), float('inf'), 'x'):
        with pytest.raises(ConfigError, match='global_weight'):
            LNCC(2, global_weight=bad)
        with pytest.raises(ConfigError, match='global_weight'):
            Auto(2, global_weight=bad)
    with pytest.raises(ConfigError, match='lncc_radius'):
        make_metric('auto', lncc_radius=0)


# --------------------------------------------------------------------------- auto

@pytest.mark.parametrize('r', [1, 2, 3])
def test_flat_fraction_against_numpy(r):
    rng = np.random.default_rng(2)
    a = _disk((40, 36), (20, 18), 11) + 0.5 * _disk((40, 36), (8, 8), 4)
    a[:, 30:] += 0.2 * _unit(_smooth(rng, (40, 6)))        # a textured strip
    assert flat_fraction(_im(a), r) == pytest.approx(_ref_flat_fraction(a.astype(np.float64), r), abs=1e-9)
    b = _unit(_smooth(rng, (20, 18, 7)))
    assert flat_fraction(_im(b), r) == pytest.approx(_ref_flat_fraction(b.astype(np.float64), r), abs=1e-9)
    assert flat_fraction(_im(np.full((8, 8), 0.3)), r) == 0.0


def test_auto_chooses_from_the_data_and_matches_lncc_on_natural_images():
    rng = np.random.default_rng(9)
    I = _unit(_smooth(rng, (32, 30)))
    J = _unit(_smooth(rng, (32, 30)) + 0.5 * I)
    fi, ji = _im(I), _im(J)
    a = make_metric('auto', lncc_radius=3).prepare(fi, ji)
    assert a.chosen == 'lncc' and a.flat <= AUTO_FLAT_FRACTION
    assert a.energy(fi, ji) == LNCC(3).prepare(fi, ji).energy(fi, ji)
    assert a.describe()['metric'] == 'auto' and a.describe()['chosen'] == 'lncc'
    # a binary mask against a smooth image: one piecewise-constant image is enough
    B = _disk((32, 30), (16, 15), 9)
    a.prepare(_im(B), ji)
    assert a.chosen == 'robust lncc' and a.flat > AUTO_FLAT_FRACTION
    assert a.energy(_im(B), ji) == pytest.approx(
        LNCC(3, global_weight=1.0).prepare(_im(B), ji).energy(_im(B), ji), rel=1e-12)
    with pytest.raises(ValueError, match='constant'):
        a.prepare(_im(np.full((32, 30), 0.5)), ji)


def test_greedy_field_smoothing_follows_auto():
    """Greedy smooths its displacement on natural images and not where 'auto' chose the
    robust LNCC (piecewise-constant images); another metric keeps the smoothing."""
    from PyCA.Apps import register
    rng = np.random.default_rng(4)
    I = _unit(_smooth(rng, (48, 44)))
    J = _unit(_smooth(rng, (48, 44)) + 2.0 * I)
    A = _disk((48, 44), (24, 22), 12)
    B = _disk((48, 44), (25, 21), 11)
    kw = dict(method='greedy', quiet=True, device='cpu', scales=[2, 1], iters=[3, 2])
    r = register(_im(I), _im(J), **kw)
    assert r.config['metric_used']['chosen'] == 'lncc'
    assert r.config['field_sigma_used'] == [0.75, 0.75]
    kw1 = dict(kw, scales=[1], iters=3)     # (chosen per level: the disks at full resolution)
    r = register(_im(A), _im(B), **kw1)
    assert r.config['metric_used']['chosen'] == 'robust lncc'
    assert r.config['field_sigma_used'] == [0.0]
    assert register(_im(A), _im(B), metric='ssd', **kw1).config['field_sigma_used'] == [0.75]
    assert register(_im(I), _im(J), field_sigma=0.5, **kw).config['field_sigma_used'] == [0.5, 0.5]


def test_defaults_are_auto():
    from PyCA.Apps import lddmm, greedy, elastic
    for mod in (lddmm, greedy, elastic):
        assert mod.DEFAULTS['metric'] == 'auto'


# --------------------------------------------------------------------------- circle -> C

def _circle_c():
    dipy = pytest.importorskip('dipy')
    d = os.path.join(os.path.dirname(dipy.__file__), 'data', 'files')
    c, o = os.path.join(d, 'C.npy'), os.path.join(d, 'circle.npy')
    if not (os.path.isfile(c) and os.path.isfile(o)):
        pytest.skip("dipy's package data lacks C.npy / circle.npy")
    return np.load(c).astype(np.float32), np.load(o).astype(np.float32)


def _register(F, M, method, **kw):
    from PyCA.Apps import register
    r = register(_im(F), _im(M), method=method, quiet=True, device='cpu', **kw)
    D = np.array(r.deformed.asnp()).reshape(F.shape)
    ratio = np.mean((F.astype(np.float64) - D) ** 2) / np.mean((F.astype(np.float64) - M) ** 2)
    jac = ca.Image3D(r.h.grid(), ca.MEM_HOST)
    h = ca.Field3D(r.h.grid(), ca.MEM_HOST)
    ca.Copy(h, r.h)
    ca.JacDetH(jac, h)
    return ratio, int(np.sum(np.array(jac.asnp()) <= 0))


# the measured mismatch ratios left with the defaults (2 CPU cores; 256 x 256):
#   fixed circle, moving C:   lddmm 0.094 (lncc before: 0.83),  greedy 0.016 (lncc before: 0.88)
#   fixed C, moving circle:   lddmm 0.153 (lncc before: 0.99),  greedy 0.0017 (lncc before: 0.98)
# (with the final gain, measured on another day: lddmm 0.088 and 0.135 (0.093 and 0.135 without
# it that day), greedy 0.016 and 0.0016)
# (LDDMM's lpow-3 kernel with its descent in the metric of L^2, 60/40/20 iterations: 0.058 and
# 0.172; with 30/30/20 the circle-moving case stopped at 0.54, its coarsest scale cut short)
# (why LDDMM stops at 9 %: its shooting's checks. At the coarsest scale the geodesic needs
# min det J 0.014 (the slit closed), its time steps reach max_nsteps = 64 there and every
# further trial folds (min det J -0.12 at dt max|Dv| 0.63) or, at the finest scale, exceeds
# max_cfl; with max_nsteps=256: 5.9 % in 36 s, but C fixed 38 %)
# (lddmm with max_cfl 0.8; with 0.5: 0.090 and 0.181)
# (lddmm: with its L-BFGS default; the heavy-ball descent gave 0.076 and 0.188)
# (greedy: 0.016 and 0.0017 since its 2-D coarse steps are max_step voxels of the level, not
# of the absent z axis, and its schedule [100, 80, 20]; its displacement smoothing is off on
# these piecewise-constant images, where 'auto' chose the robust LNCC)
# (L-BFGS on the L2 gradient, the same iteration in exact arithmetic: 0.051 and 0.65. The
# circle-moving case is chaotic near its fold: the geodesic that closes the slit has min det
# J ~ 0.001, where a trial step of 3e-8 changes dt max|Dv| from 0.2 to 4, and the energy of
# one momentum at 16 and 64 time steps differs fourfold. Before that change, alpha 120 and
# 130 instead of 125 gave 0.29 and 0.60 there (0.17 at 125); after it, 0.65 and 0.44. A floor
# on min det J (0.01, 0.03) made both cases worse: 0.09 / 0.64, 0.21 / 0.57. Its bound is
# therefore only that the mismatch falls by a quarter without a fold.)
# dipy's example registers the circle (moving) onto the C (static); the issue's
# numbers are the other way round; both are checked.
@pytest.mark.parametrize('method,fixed_is_c,bound', [
    ('greedy', False, 0.05),
    pytest.param('lddmm', False, 0.05, marks=pytest.mark.xfail(
        strict=False, reason="LDDMM's defaults leave the slit where the C closes: 5-7 % with auto, "
                             "moved by rounding (7.1 % since trials take K m0 by linearity) "
                             "(8 % with the lpow-2 kernel; 7 % with ssd, 7 % with tol=0 and 200 "
                             "iterations: not the metric)")),
    ('lddmm', False, 0.12),
    ('lddmm', True, 0.75),
    ('greedy', True, 0.05),
])
def test_circle_to_c_with_the_defaults(method, fixed_is_c, bound):
    C, O = _circle_c()
    F, M = (C, O) if fixed_is_c else (O, C)
    ratio, folds = _register(F, M, method)
    assert folds == 0
    assert ratio <= bound, ratio


def test_circle_to_c_auto_beats_plain_lncc():
    """The old default (plain LNCC) barely moves the C; auto's choice does."""
    C, O = _circle_c()
    auto, _ = _register(O, C, 'greedy')
    plain, _ = _register(O, C, 'greedy', metric='lncc')
    assert plain > 0.5 and auto < 0.2 * plain, (auto, plain)


# --------------------------------------------------------------------------- "barely fell"

def test_mismatch_warnings_rule():
    assert mismatch_warnings(0.02, 0.01) == []
    assert mismatch_warnings(0.99, 0.6) == []          # a contrast change: MSD stays, NCC falls
    assert mismatch_warnings(0.5, 0.23) == []          # a rescan: noise floor
    w = mismatch_warnings(0.9, 0.88)
    assert len(w) == 1 and 'barely fell' in w[0] and '0.9' in w[0]
    assert mismatch_warnings(BARELY_FELL_RATIO + 0.01, float('nan'))
    assert mismatch_warnings(float('nan'), None) == []


def test_ncc_ratio_against_numpy():
    rng = np.random.default_rng(4)
    I = _unit(_smooth(rng, (26, 22)))
    J = _unit(_smooth(rng, (26, 22)) + 0.3 * I)
    D = _unit(0.5 * J + I)
    ref = _ref_ncc(I.astype(np.float64), D.astype(np.float64)) / _ref_ncc(I.astype(np.float64),
                                                                          J.astype(np.float64))
    assert ncc_ratio(_im(I), _im(J), _im(D)) == pytest.approx(ref, rel=1e-3)
    assert np.isnan(ncc_ratio(_im(I), _im(np.full(I.shape, 0.2)), _im(D)))


def _save_pair(tmp_path, shift):
    from PyCA.Common import SaveITKImage
    shape = (64, 64)
    F = ndimage.gaussian_filter(_disk(shape, (32, 32), 14), 1.0)
    M = ndimage.gaussian_filter(_disk(shape, (32 + shift, 32), 14), 1.0)
    paths = []
    for name, a in (('fixed.nii.gz', F), ('moving.nii.gz', M)):
        p = str(tmp_path / name)
        SaveITKImage(_im(a), p, True)
        paths.append(p)
    return paths


def test_register_command_line_warns_when_the_mismatch_barely_fell(tmp_path):
    f, m = _save_pair(tmp_path, 8)
    common = ['--fixed', f, '--moving', m, '--method', 'greedy', '--no-normalize', '--no-bias-correct',
              '--quiet']
    out = str(tmp_path / 'few')
    r = run_module('PyCA.Apps.register', common + ['--out', out, '--scales', '1', '--iters', '1'])
    assert r.returncode == 0, r.stderr
    s = json.load(open(os.path.join(out, 'summary.json')))
    assert s['mismatch_ratio'] > BARELY_FELL_RATIO and s['warnings'], s
    assert 'barely fell' in s['warnings'][0]
    lines = [ln for ln in r.stderr.splitlines() if 'barely fell' in ln]
    assert len(lines) == 1 and lines[0].startswith('pyca-register: warning: '), r.stderr
    assert 'barely fell' not in r.stdout
    # the same pair with the default schedule: matched, no warning
    out = str(tmp_path / 'full')
    r = run_module('PyCA.Apps.register', common + ['--out', out])
    assert r.returncode == 0, r.stderr
    s = json.load(open(os.path.join(out, 'summary.json')))
    assert s['mismatch_ratio'] < 0.2 and s['warnings'] == [], s
    assert 'barely fell' not in r.stderr


def test_demo_command_line_warns_when_the_mismatch_barely_fell(tmp_path):
    f, m = _save_pair(tmp_path, 8)
    cfg = tmp_path / 'few.yaml'
    cfg.write_text('scales: [1]\niters: [1]\n')
    out = str(tmp_path / 'demo')
    r = run_module('PyCA.Apps.demo', ['--fixed', f, '--moving', m, '--method', 'greedy', '--config', str(cfg),
                                '--out', out, '--quiet'])
    assert r.returncode == 0, r.stderr
    s = json.load(open(os.path.join(out, 'summary.json')))
    assert s['warnings'] and 'barely fell' in s['warnings'][0]
    assert any(ln.startswith('pyca-demo: warning: ') and 'barely fell' in ln for ln in r.stderr.splitlines()), \
        r.stderr


def test_energy_plot_names_the_metric_auto_chose():
    from PyCA.Apps.outputs import energy_metric_label
    assert energy_metric_label({'metric': 'auto', 'metric_used': {'metric': 'auto', 'chosen': 'robust lncc'}}) \
        == 'AUTO: ROBUST LNCC'
    assert energy_metric_label({'metric': 'auto', 'metric_used': {'metric': 'auto', 'chosen': 'lncc'}}) == 'AUTO: LNCC'
    assert energy_metric_label({'metric': 'mi', 'metric_used': {'metric': 'mi', 'mi_bins': 32}}) == 'MI'
    assert energy_metric_label(None) == 'SSD'
