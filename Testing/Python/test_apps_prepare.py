"""Intensity preparation of the command lines' inputs (PyCA.Apps.io):
N4 bias-field correction (``bias_correct``), histogram matching
(``match_histogram``), their ``load_pair`` keywords and the
``--[no-]bias-correct`` / ``--[no-]match-histogram`` options of pyca-register
and pyca-atlas.

Images are small synthetic blobs written here with SimpleITK; the
references are the known bias field and the known intensity remapping.
"""
import json
import os

import numpy as np
import pytest

import PyCA.Core as ca

sitk = pytest.importorskip("SimpleITK")
ndimage = pytest.importorskip("scipy.ndimage")
pytest.importorskip("matplotlib")
pytest.importorskip("yaml")

from PyCA.Apps import io  # noqa: E402
import PyCA.Apps.register_cli as reg_cli  # noqa: E402
import PyCA.Apps.atlas as atlas_cli  # noqa: E402


# --------------------------------------------------------------------------- data

def _object(n=48, seed=0):
    """(image, inside): a head-like object on an n^3 grid made of tissue
    classes, as N4 expects: a ball of 0.5 holding blobs of 0.85 and 0.25
    (slightly smoothed: partial volume), 0 outside."""
    rng = np.random.default_rng(seed)
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64) for _ in range(3)], indexing='ij')
    c = (n - 1) / 2.0
    r = np.sqrt(sum((i - c) ** 2 for i in idx))
    inside = r < 0.4 * n
    a = np.where(inside, 0.5, 0.0)
    for k in range(12):
        p = c + rng.uniform(-0.22 * n, 0.22 * n, 3)
        w = rng.uniform(0.06 * n, 0.12 * n)
        blob = np.sqrt(sum((i - pi) ** 2 for i, pi in zip(idx, p))) < w
        a[blob & inside] = 0.85 if k % 2 else 0.25
    a = ndimage.gaussian_filter(a, 0.7)
    a[~inside] = 0.0
    return a, inside


def _smooth_field(shape, seed=1):
    """A smooth field in [-1, 1] (a low-frequency random mix of sines)."""
    rng = np.random.default_rng(seed)
    idx = np.meshgrid(*[np.linspace(0.0, 1.0, s) for s in shape], indexing='ij')
    f = np.zeros(shape)
    for _ in range(4):
        k = rng.uniform(0.3, 1.0, 3) * np.pi
        ph = rng.uniform(0, 2 * np.pi)
        f += rng.uniform(0.5, 1.0) * np.sin(sum(ki * i for ki, i in zip(k, idx)) + ph)
    return f / np.abs(f).max()


def _image(a, spacing=1.0):
    a = np.asarray(a, np.float32)
    if a.ndim == 2:
        a = a[:, :, np.newaxis]
    g = ca.GridInfo(ca.Vec3Di(*a.shape), ca.Vec3Df(spacing, spacing, spacing), ca.Vec3Df(0, 0, 0))
    im = ca.Image3D(g, ca.MEM_HOST)
    np.copyto(im.asnp(), a)
    return im


def _write(arr, path, spacing=1.0):
    arr = np.asarray(arr, np.float32)
    img = sitk.GetImageFromArray(np.ascontiguousarray(arr.T))
    img.SetSpacing((float(spacing),) * arr.ndim)
    sitk.WriteImage(img, str(path))
    return str(path)


from test_apps_cli import _warp  # noqa: E402  (a(x + u(x)), a smooth random u)


# --------------------------------------------------------------------------- N4

def test_bias_correct_removes_most_of_a_smooth_bias():
    true, inside = _object(48)
    f = _smooth_field(true.shape)
    biased = true * np.exp(0.3 * f)
    details = {}
    out = io.bias_correct(_image(biased), info=details)
    assert tuple(out.size()) == (48, 48, 48)
    corrected = np.array(out.asnp())
    sel = inside & (true > 0.2)
    before = np.log(biased[sel] / true[sel])
    after = np.log(np.maximum(corrected[sel], 1e-6) / true[sel])
    s0 = float(np.std(before - before.mean()))
    s1 = float(np.std(after - after.mean()))
    assert s0 > 0.1
    assert s1 <= 0.5 * s0, (s0, s1)
    assert details['applied'] and details['shrink_factor'] == 2
    assert details['mask_voxels'] > 0.5 * np.count_nonzero(inside)
    assert np.all(np.isfinite(corrected)) and not np.any(corrected[~inside])


def test_bias_correct_2d_and_tiny_images():
    true, _ = _object(48)
    sl = true[:, :, 24]
    biased = sl * np.exp(0.3 * _smooth_field(sl.shape + (1,))[:, :, 0])
    out = io.bias_correct(_image(biased))
    assert tuple(out.size()) == (48, 48, 1)
    assert np.all(np.isfinite(out.asnp()))
    # nothing to estimate from: the image comes back as it is
    d = {}
    tiny = np.zeros((6, 6, 6)); tiny[2:4, 2:4, 2:4] = 1.0
    out = io.bias_correct(_image(tiny), info=d)
    assert not d['applied']
    np.testing.assert_array_equal(out.asnp(), tiny)


# --------------------------------------------------------------------------- histograms

def test_match_histogram_undoes_a_monotone_remap():
    ref, inside = _object(32, seed=3)
    rng = np.random.default_rng(5)
    ref = ref + np.where(inside, rng.normal(0, 0.01, ref.shape), 0.0)
    remapped = np.where(inside, 1.6 * np.clip(ref, 0, None) ** 0.6 + 0.2, 0.0)
    out = io.match_histogram(_image(remapped), _image(ref))
    m = np.array(out.asnp())
    d0 = float(np.abs(remapped - ref)[inside].mean())
    d1 = float(np.abs(m - ref)[inside].mean())
    assert d1 <= 0.5 * d0, (d0, d1)
    assert d1 < 0.05


# --------------------------------------------------------------------------- load_pair

@pytest.fixture(scope='module')
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp('prepare')
    f, inside = _object(32, seed=2)
    m = _warp(f, 1.5, seed=4)
    m = m * np.exp(0.3 * _smooth_field(m.shape, seed=7))          # a bias field
    m = np.where(m > 0, np.clip(m, 0, None) ** 0.75, 0.0)         # and a gamma
    out = dict(dir=d, fixed=_write(f, d / 'fixed.nii.gz', 2.0), moving=_write(m, d / 'moving.nii.gz', 2.0))
    for k in range(3):
        s = _warp(f, 1.5, seed=10 + k) * np.exp(0.25 * _smooth_field(f.shape, seed=20 + k))
        out['s%d' % k] = _write(s, d / ('s%d.nii.gz' % k), 2.0)
    return out


def test_load_pair_keywords_and_info(pair):
    info = {}
    fixed, moving, mask = io.load_pair(pair['fixed'], pair['moving'], info=info)
    assert info['bias_correct'] is False and info['match_histogram'] is False
    assert 'bias_field' not in info and 'histogram_matching' not in info
    info = {}
    f2, m2, _ = io.load_pair(pair['fixed'], pair['moving'], info=info, bias_correct=True,
                             match_histogram=True)
    assert info['bias_correct'] is True and info['match_histogram'] is True
    assert set(info['bias_field']) == {'fixed', 'moving'}
    assert info['bias_field']['moving']['applied']
    assert 'seconds' in info['histogram_matching']
    for im in (f2, m2):
        a = np.asarray(im.asnp())
        assert a.min() >= 0.0 and a.max() <= 1.0 and np.all(np.isfinite(a))
    assert tuple(m2.size()) == tuple(fixed.size())


# --------------------------------------------------------------------------- command lines

def _one_error_line(stderr, prog):
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(prog + ': error: '), stderr
    assert 'Traceback' not in stderr
    return lines[0]


@pytest.mark.parametrize('flags, bc, mh', [
    (['--bias-correct', '--match-histogram'], True, True),
    (['--no-bias-correct', '--no-match-histogram'], False, False),
])
def test_register_cli_flags_end_to_end(pair, tmp_path, capsys, flags, bc, mh):
    out = tmp_path / 'o'
    rc = reg_cli.main(['--fixed', pair['fixed'], '--moving', pair['moving'], '--out', str(out),
                       '--method', 'greedy', '--scales', '2,1', '--iters', '5', '--quiet'] + flags)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    with open(out / 'summary.json') as fh:
        s = json.load(fh)
    assert s['inputs']['bias_correct'] is bc
    assert s['inputs']['match_histogram'] is mh
    assert os.path.exists(out / 'hfield.nii.gz')


def test_register_cli_defaults_recorded(pair, tmp_path, capsys):
    out = tmp_path / 'd'
    rc = reg_cli.main(['--fixed', pair['fixed'], '--moving', pair['moving'], '--out', str(out),
                       '--method', 'greedy', '--scales', '1', '--iters', '3', '--quiet'])
    assert rc == 0, capsys.readouterr().err
    with open(out / 'summary.json') as fh:
        s = json.load(fh)
    assert s['inputs']['bias_correct'] is reg_cli.BIAS_CORRECT_DEFAULT
    assert s['inputs']['match_histogram'] is reg_cli.MATCH_HISTOGRAM_DEFAULT
    h = reg_cli.build_parser().format_help()
    assert '--no-bias-correct' in h and '--no-match-histogram' in h


def test_atlas_cli_flags_end_to_end(pair, tmp_path, capsys):
    out = tmp_path / 'a'
    rc = atlas_cli.main(['--images', pair['s0'], pair['s1'], pair['s2'], '--out', str(out),
                         '--method', 'greedy', '--iters', '1', '--device', 'cpu', '--quiet',
                         '--set', 'register.scales=[1]', '--set', 'register.iters=[3]',
                         '--set', 'warm_iters=2', '--bias-correct', '--match-histogram'])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    with open(out / 'atlas_summary.json') as fh:
        s = json.load(fh)
    assert s['config']['bias_correct'] is True and s['config']['match_histogram'] is True
    assert os.path.exists(out / 'atlas.nii.gz')


def test_atlas_setup_flag_precedence(pair, tmp_path):
    files = [pair['s0'], pair['s1']]
    base = ['--images'] + files + ['--out', str(tmp_path / 'p'), '--device', 'cpu']
    parse = atlas_cli.build_parser().parse_args
    _, cfg, _ = atlas_cli._setup(parse(base))
    assert cfg['bias_correct'] is reg_cli.BIAS_CORRECT_DEFAULT
    assert cfg['match_histogram'] is reg_cli.MATCH_HISTOGRAM_DEFAULT
    _, cfg, _ = atlas_cli._setup(parse(base + ['--set', 'bias_correct=%s' % (not reg_cli.BIAS_CORRECT_DEFAULT)]))
    assert cfg['bias_correct'] is (not reg_cli.BIAS_CORRECT_DEFAULT)
    _, cfg, _ = atlas_cli._setup(parse(base + ['--set', 'bias_correct=true', '--no-bias-correct',
                                               '--match-histogram']))
    assert cfg['bias_correct'] is False and cfg['match_histogram'] is True


@pytest.mark.parametrize('flags', [
    ['--bias-correct', '--no-bias-correct'],
    ['--match-histogram', '--no-match-histogram'],
    ['--no-match-histogram', '--match-histogram'],
])
def test_bad_combinations_one_line(pair, tmp_path, capfd, flags):
    rc = reg_cli.main(['--fixed', pair['fixed'], '--moving', pair['moving'], '--out', str(tmp_path / 'r'),
                       '--method', 'greedy', '--iters', '5', '--quiet'] + flags)
    cap = capfd.readouterr()
    assert rc == 2
    line = _one_error_line(cap.err, 'pyca-register')
    assert 'not allowed with' in line
    rc = atlas_cli.main(['--images', pair['s0'], pair['s1'], '--out', str(tmp_path / 'a'),
                         '--quiet'] + flags)
    cap = capfd.readouterr()
    assert rc == 2
    _one_error_line(cap.err, 'pyca-atlas')
    assert not os.path.exists(tmp_path / 'r' / 'summary.json')
    assert not os.path.exists(tmp_path / 'a')
