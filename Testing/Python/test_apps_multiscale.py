"""The multiscale driver and the config schema shared by every registration
method (PyCA.Apps.multiscale, PyCA.Apps.schema; issue 28).

References are written out here: the per-level iteration lists of the one
rule, the level grids of the MultiscaleManager (size // factor), the
resampler's down-sampled images computed through PyCA.Core's own resampler
called directly, and the messages every method shares.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca
from PyCA.Apps import register, ConfigError
from PyCA.Apps import greedy, elastic, lddmm
from PyCA.Apps.schema import per_scale, Schema, Param, multiscale, positive
from PyCA.Apps.multiscale import Method, register_levels, min_spacing, max_voxel_disp
from PyCA.Apps.lddmm import Shooter, Descent, converged, DEFAULTS as LDDMM_DEFAULTS

METHODS = ('lddmm', 'greedy', 'elastic')
MODULES = {'lddmm': lddmm, 'greedy': greedy, 'elastic': elastic}


def _pair(n=24, shift=1.5):
    """Two smooth blobs on an n^3 grid, the moving one shifted (NumPy)."""
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64)] * 3, indexing='ij')
    c = (n - 1) / 2.0

    def blob(dx):
        r2 = (idx[0] - c - dx) ** 2 / 30.0 + (idx[1] - c) ** 2 / 20.0 + (idx[2] - c) ** 2 / 25.0
        return np.exp(-r2).astype(np.float32)
    g = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.0, 1.0), ca.Vec3Df(0.0, 0.0, 0.0))
    F, M = ca.Image3D(g, ca.MEM_HOST), ca.Image3D(g, ca.MEM_HOST)
    F.asnp()[...] = blob(0.0)
    M.asnp()[...] = blob(shift)
    return F, M


# --------------------------------------------------------------------------- the one rule

@pytest.mark.parametrize("values,facs,given,default,expected", [
    (7, [4, 2, 1], [4, 2, 1], None, [7, 7, 7]),                        # one value: every level
    ([7], [2, 1], [2, 1], None, [7, 7]),
    ([5, 6, 7], [4, 2, 1], [4, 2, 1], None, [5, 6, 7]),                # one per level
    ([5, 6], [4, 2, 1], [4, 2], None, [5, 6, 6]),                      # factor 1 added: last repeated
    ([40, 40, 15], [2, 1], [2, 1], [40, 40, 15], [40, 15]),            # the default, fewer levels
    ([40, 40, 15], [8, 4, 2, 1], [8, 4, 2, 1], [40, 40, 15], [40, 40, 40, 15]),   # more levels
    ([60, 40, 30], [1], [1], [60, 40, 30], [30]),
])
def test_per_scale_rule(values, facs, given, default, expected):
    assert per_scale(values, 'iters', facs, given, default) == expected


def test_per_scale_rejects_lists_that_fit_no_rule():
    with pytest.raises(ConfigError, match=r"iters must have one value or one per scale \(2: \[2, 1\]\)"):
        per_scale([1, 2, 3], 'iters', [2, 1], [2, 1], [40, 40, 15])


# --------------------------------------------------------------------------- every method, the same rule

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("scales", [[2, 1], [8, 4, 2, 1], [3]])
def test_scale_lists_shorter_and_longer_than_the_defaults(method, scales):
    """Every method fits its default iteration list to any scale list, by one rule."""
    F, M = _pair()
    default = MODULES[method].DEFAULTS['iters']
    facs = sorted(set(scales) | {1}, reverse=True)
    expected = per_scale(default, 'iters', facs, scales, default)
    assert len(expected) == len(facs)
    r = register(F, M, method=method, scales=scales, quiet=True,
                 **({'fft_pad': False} if method != 'elastic' else {}))
    counts = [r.scale_of_iter.count(f) for f in facs]
    assert sorted(set(r.scale_of_iter), reverse=True) == [f for f, c in zip(facs, counts) if c]
    if method == 'lddmm':      # stops a level early when it converges
        assert all(c <= e for c, e in zip(counts, expected)) and counts[0] > 0
    else:
        assert counts == expected
    assert r.deformed.grid().size() == F.grid().size()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("params,message", [
    (dict(iters=[1, 2, 3], scales=[2, 1]), r"iters must have one value or one per scale \(2: \[2, 1\]\), got \[1, 2, 3\]"),
    (dict(iters=-1), r"iters must be >= 0, got \[-1\]"),
    (dict(max_step=0.0), r"max_step must be > 0, got \[?0.0\]?"),   # greedy: per scale
    (dict(alpha=-1.0), r"alpha must be > 0, got -1.0"),
    (dict(gamma=-1.0), r"gamma must be >= 0, got -1.0"),
    (dict(scales=[0, 1]), r"scale factors must be >= 1, got \[0, 1\]"),
    (dict(metric='bogus'), r"unknown metric 'bogus'"),
    (dict(nosuch=1), r"unknown parameter 'nosuch'"),
])
def test_the_same_messages_for_every_method(method, params, message):
    F, M = _pair(12)
    with pytest.raises(ConfigError, match=message):
        register(F, M, method=method, quiet=True, **params)


def test_schema_fragments_check_once():
    s = Schema(multiscale([2, 1], [3, 2]), {'w': Param(1.0, positive)})
    assert s.defaults() == {'scales': [2, 1], 'iters': [3, 2], 'w': 1.0}
    assert s.merge(None, {'w': '2'})['w'] == 2.0
    with pytest.raises(ConfigError, match="w must be > 0, got 0.0"):
        s.merge({'w': 0})
    assert s.levels(s.merge(None, {'scales': [4, 2, 1]}), [4, 2, 1]) == {'iters': [3, 3, 2]}


# --------------------------------------------------------------------------- Shooter's defaults

def test_shooter_defaults_are_the_configs():
    g = ca.GridInfo(ca.Vec3Di(8, 8, 8))
    K = ca.FluidKernelFFTCPU()
    K.setGrid(g)
    sh = Shooter(g, ca.MEM_HOST, K)
    assert (sh.T, sh.integrator, sh.sigma, sh.ninv, sh.adjoint) == (
        LDDMM_DEFAULTS['nsteps'], LDDMM_DEFAULTS['integrator'], 0.001,     # sigma 0: automatic, SSD's
        LDDMM_DEFAULTS['inverse_iters'], LDDMM_DEFAULTS['adjoint'])
    sh = Shooter.from_config(g, ca.MEM_HOST, K, {'nsteps': 5, 'sigma': 0.5, 'adjoint': 'heun', 'alpha': 3.0})
    assert (sh.T, sh.sigma, sh.adjoint, sh.ninv) == (5, 0.5, 'heun', LDDMM_DEFAULTS['inverse_iters'])
    assert Shooter.from_config(g, ca.MEM_HOST, K, {}, nsteps=3, endpoint=False).T == 3
    with pytest.raises(ConfigError, match="integrator must be 'euler' or 'rk4', got 'rk2'"):
        Shooter.from_config(g, ca.MEM_HOST, K, {'integrator': 'rk2'})
    with pytest.raises(ConfigError, match="nsteps must be >= 1, got 0"):
        Shooter(g, ca.MEM_HOST, K, 0)


# --------------------------------------------------------------------------- the descent's step control

def test_descent_step_control_on_a_quadratic():
    """Descent's accept / retry / stop decisions, driven by hand on E(m) = |m - t|^2
    with a "gradient" m - t supplied through a stand-in shooter."""
    g = ca.GridInfo(ca.Vec3Di(4, 4, 1))
    cfg = dict(LDDMM_DEFAULTS, step=0.5, momentum=0.0)
    m0 = ca.Field3D(g, ca.MEM_HOST)
    ca.SetToZero(m0)
    target = np.zeros((3, 4, 4, 1), np.float32)
    target[0] = 2.0

    def energy(m):
        return float(((np.asarray(m.asnp()) - target) ** 2).sum())

    class Grad:               # sh.gradient(...) fills out with L m_hat so that m0 - out = m0 - t
        def gradient(self, I0, deformed, I1, out, scratch=None):
            for c in range(3):
                out.asnp()[c][...] = target[c]

    d = Descent(m0, g, ca.MEM_HOST, cfg)
    assert d.judge(energy(d.m0)) == d.ACCEPT and d.best == 16 * 4.0
    d.advance(Grad(), None, None, None, None, g)                 # m0 = prev - 0.5 (prev - t)
    np.testing.assert_allclose(np.asarray(d.m0.asnp())[0], 1.0)
    assert d.judge(energy(d.m0)) == d.ACCEPT and d.step == pytest.approx(0.5 * cfg['step_growth'])
    d.advance(Grad(), None, None, None, None, g)
    e_bad = d.best + 1.0                                         # pretend the trial rose
    step = d.step
    assert d.judge(e_bad) == d.RETRY and d.step == pytest.approx(0.5 * step)
    d.step = 1e-9                                                # below min_step: stop at the best
    best = np.asarray(d.prev_m0.asnp()).copy()
    assert d.judge(e_bad) == d.STOP
    np.testing.assert_array_equal(np.asarray(d.m0.asnp()), best)


def test_converged_rule():
    assert not converged([10, 9, 8], 1e-3)
    assert converged([10.0, 5.0, 5.0, 5.0, 5.0], 1e-3)
    assert not converged([10.0, 8.0, 6.0, 4.0, 2.0], 1e-3)
    assert not converged([10.0, 5.0, 5.0, 5.0, 5.0], 0.0)
    # a re-evaluation with more time steps (the energy rose from index 3): not convergence
    # until 4 energies of the new steps, then the usual rule
    e = [10.0, 6.0, 4.0, 3.0, 3.0, 3.0, 3.5]
    assert converged(e, 1e-3)
    assert not converged(e, 1e-3, since=6)
    assert not converged(e + [2.5, 2.0, 1.5], 1e-3, since=6)
    assert converged(e + [3.5, 3.5, 3.5], 1e-3, since=6)


def test_spacing_rules():
    g = ca.GridInfo(ca.Vec3Di(10, 12, 1), ca.Vec3Df(4.0, 3.0, 1.0), ca.Vec3Df(0, 0, 0))
    assert min_spacing(g) == 3.0                 # the axes the grid has
    v = ca.Field3D(g, ca.MEM_HOST)
    ca.SetMem(v, ca.Vec3Df(0.0, -6.0, 0.0))
    assert max_voxel_disp(v, g) == 2.0           # over the same spacing (z, absent, does not count)


# --------------------------------------------------------------------------- a fourth method

class _Shift(Method):
    """A made-up fourth method: records each level's grid and images, and its
    energy is the SSD of the level's images (no update)."""
    name, label = 'shift', 'shift'
    schema = Schema(multiscale([4, 2, 1], [2, 2, 1]), {'device': Param('auto'), 'metric': Param('ssd'),
                                                       'lncc_radius': Param(2), 'mi_bins': Param(32)})
    seen = []

    def start(self, level):
        self.h = self.field(level.grid)
        ca.SetToIdentity(self.h)
        _Shift.seen = [level]

    def upsample(self, level, resampler):
        resampler.updateHField(self.h)
        _Shift.seen.append(level)

    def run(self, level, history):
        for _ in range(level.iters):
            e = float(((np.asarray(level.fixed.asnp()) - np.asarray(level.moving.asnp())) ** 2).sum())
            history.record(e, level.factor, e, 0.0)

    def result(self, fixed, moving):
        d = self.image()
        ca.ApplyH(d, moving, self.h)
        return dict(deformed=d, h=self.h)


def test_a_fourth_method_is_one_class():
    F, M = _pair(24)
    r = register_levels(_Shift, None, F, M, quiet=True, who='shift')
    assert r.method == 'shift' and r.iterations == 5
    assert r.scale_of_iter == [4, 4, 2, 2, 1]
    levels = _Shift.seen
    assert [lv.factor for lv in levels] == [4, 2, 1]
    assert [tuple(lv.grid.size()) for lv in levels] == [(6, 6, 6), (12, 12, 12), (24, 24, 24)]
    assert levels[-1].fixed is F and levels[-1].identity          # the inputs themselves at factor 1
    # the coarse images are the Gaussian resampler's, called directly
    sm = ca.MultiscaleManager(F.grid())
    for f in (4, 2, 1):
        sm.addScaleLevel(f)
    rs = ca.MultiscaleResamplerGaussCPU(F.grid())
    sm.set(0)
    rs.setScaleLevel(sm)
    ref = ca.Image3D(sm.getCurGrid(), ca.MEM_HOST)
    rs.downsampleImage(ref, M)
    np.testing.assert_array_equal(np.asarray(levels[0].moving.asnp()), np.asarray(ref.asnp()))
    # identity H-field carried through two up-samplings: the deformed image is the moving one
    np.testing.assert_allclose(np.asarray(r.deformed.asnp()), np.asarray(M.asnp()), atol=1e-5)


# --------------------------------------------------------------------------- the command line

@pytest.mark.parametrize("method", METHODS)
def test_command_line_scales_2_1_runs_every_method(method, tmp_path):
    sitk = pytest.importorskip("SimpleITK")
    pytest.importorskip("matplotlib")
    F, M = _pair(24)
    paths = []
    for name, im in (('f', F), ('m', M)):
        p = str(tmp_path / (name + '.nii.gz'))
        sitk.WriteImage(sitk.GetImageFromArray(np.ascontiguousarray(np.asarray(im.asnp()).T)), p)
        paths.append(p)
    out = tmp_path / ('out-' + method)
    cmd = [sys.executable, '-m', 'PyCA.Apps.register', '--fixed', paths[0], '--moving', paths[1],
           '--out', str(out), '--method', method, '--scales', '2,1', '--quiet', '--set', 'metric=ssd']
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    for f in ('deformed.nii.gz', 'summary.json', 'summary.png'):
        assert (out / f).is_file(), (f, sorted(os.listdir(out)))
