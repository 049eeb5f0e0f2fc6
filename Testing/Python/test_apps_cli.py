"""PyCA.Apps command line (``python -m PyCA.Apps.register``), its input side
(PyCA.Apps.io.load_pair, normalize_intensity, the affine pre-alignment) and
its output side (PyCA.Apps.outputs.write_outputs).

Inputs are small NIfTI files written here with SimpleITK (2-D 48 x 48 and 3-D
24^3 smooth blobs, the moving image a smoothly warped copy); references are
NumPy / SciPy. Registrations use a handful of iterations: the tests check the
plumbing (files, geometry, keys, errors), not registration quality.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca

sitk = pytest.importorskip("SimpleITK")
ndimage = pytest.importorskip("scipy.ndimage")
pytest.importorskip("matplotlib")
pytest.importorskip("yaml")

from conftest import has_gpu  # noqa: E402

from PyCA.Common import GetDirection  # noqa: E402
import PyCA.Common as common  # noqa: E402
from PyCA.Apps.io import load_pair, normalize_intensity  # noqa: E402
from PyCA.Apps.outputs import SUMMARY_KEYS, mismatch  # noqa: E402
import PyCA.Apps.register_cli as cli  # noqa: E402


# --------------------------------------------------------------------------- data

def _blobs(shape, centres, widths, amps):
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing='ij')
    out = np.zeros(shape)
    for c, w, a in zip(centres, widths, amps):
        r2 = sum((i - ci) ** 2 / wi ** 2 for i, ci, wi in zip(idx, c, w))
        out += a * np.exp(-r2)
    return out


def _warp(a, amp, seed=0):
    """a(x + u(x)) for a smooth random u of about ``amp`` voxels (SciPy)."""
    rng = np.random.default_rng(seed)
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in a.shape], indexing='ij')
    coords = []
    for i in idx:
        u = ndimage.gaussian_filter(rng.standard_normal(a.shape), 4.0, mode='wrap')
        u *= amp / (np.abs(u).max() + 1e-12)
        coords.append(i + u)
    return ndimage.map_coordinates(a, coords, order=1, mode='nearest')


def _write(arr, path, spacing=None, origin=None, direction=None):
    """Writes an (x, y[, z]) array with SimpleITK (independent of PyCA.Common)."""
    arr = np.asarray(arr, np.float32)
    img = sitk.GetImageFromArray(np.ascontiguousarray(arr.T))
    dim = arr.ndim
    img.SetSpacing(spacing or (1.0,) * dim)
    img.SetOrigin(origin or (0.0,) * dim)
    if direction is not None:
        img.SetDirection(tuple(float(v) for v in np.asarray(direction).ravel()))
    sitk.WriteImage(img, str(path))
    return str(path)


def _rot3(deg):
    t = np.deg2rad(deg)
    return np.array([[np.cos(t), -np.sin(t), 0.0], [np.sin(t), np.cos(t), 0.0], [0.0, 0.0, 1.0]])


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('apps_cli')
    out = {'dir': d}
    # 2-D pair, 48 x 48, spacing 1.2, a warped copy
    f2 = _blobs((48, 48), [(24, 22), (14, 33), (33, 12)], [(8, 6), (3, 3), (3, 4)], [1.0, 0.6, 0.8])
    m2 = _warp(f2, 2.0, seed=1)
    out['f2'] = _write(f2, d / 'f2.nii.gz', (1.2, 1.2), (5.0, -3.0))
    out['m2'] = _write(m2, d / 'm2.nii.gz', (1.2, 1.2), (5.0, -3.0))
    mk = np.zeros((48, 48))
    mk[6:42, 5:43] = 1
    out['mask2'] = _write(mk, d / 'mask2.nii.gz', (1.2, 1.2), (5.0, -3.0))
    out['empty_mask2'] = _write(np.zeros((48, 48)), d / 'empty2.nii.gz', (1.2, 1.2), (5.0, -3.0))
    # the moving image somewhere else in world space (no overlap with f2)
    out['far2'] = _write(m2, d / 'far2.nii.gz', (1.2, 1.2), (500.0, -3.0))
    # 3-D pair, 24^3, spacing 1.5, rotated direction (kept on the outputs)
    f3 = _blobs((24, 24, 24), [(12, 12, 12), (7, 15, 10)], [(6, 5, 5), (2.5, 2.5, 2.5)], [1.0, 0.7])
    m3 = _warp(f3, 1.5, seed=2)
    D = _rot3(20.0)
    out['D3'] = D
    out['f3'] = _write(f3, d / 'f3.nii.gz', (1.5, 1.5, 1.5), (-10.0, 4.0, 2.0), D)
    out['m3'] = _write(m3, d / 'm3.nii.gz', (1.5, 1.5, 1.5), (-10.0, 4.0, 2.0), D)
    # a 4-D file (two volumes)
    vols = [sitk.GetImageFromArray(np.ascontiguousarray(f3.T.astype(np.float32))) for _ in range(2)]
    four = sitk.JoinSeries(vols)
    out['f4d'] = str(d / 'f4d.nii.gz')
    sitk.WriteImage(four, out['f4d'])
    # broken files
    out['corrupt'] = str(d / 'corrupt.nii.gz')
    with open(out['corrupt'], 'wb') as fh:
        fh.write(b'this is not an image file at all\n' * 40)
    blob = open(out['f3'], 'rb').read()
    out['truncated'] = str(d / 'truncated.nii.gz')
    with open(out['truncated'], 'wb') as fh:
        fh.write(blob[:len(blob) // 2])
    # configurations
    out['cfg_ok'] = str(d / 'ok.yaml')
    with open(out['cfg_ok'], 'w') as fh:
        fh.write('alpha: 1.0\ngamma: 0.05\n')
    out['cfg_key'] = str(d / 'badkey.yaml')
    with open(out['cfg_key'], 'w') as fh:
        fh.write('alpah: 1.0\n')
    out['cfg_value'] = str(d / 'badvalue.yaml')
    with open(out['cfg_value'], 'w') as fh:
        fh.write('alpha: [1, 2\n')
    out['cfg_type'] = str(d / 'badtype.yaml')
    with open(out['cfg_type'], 'w') as fh:
        fh.write('alpha: soft\n')
    out['a_file'] = str(d / 'plain_file.txt')
    with open(out['a_file'], 'w') as fh:
        fh.write('x\n')
    return out


def _env():
    env = dict(os.environ)
    env.setdefault('OMP_NUM_THREADS', '1')
    env['PYTHONUNBUFFERED'] = '1'
    return env


def _cli(*args, timeout=240):
    return subprocess.run([sys.executable, '-m', 'PyCA.Apps.register'] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout, env=_env())


def _read(path):
    img = sitk.ReadImage(str(path))
    return img


def _check_geometry(path, ref_path, ncomp=1):
    img, ref = _read(path), _read(ref_path)
    dim = ref.GetDimension()
    assert img.GetSize()[:dim] == ref.GetSize()
    assert img.GetNumberOfComponentsPerPixel() == ncomp
    np.testing.assert_allclose(img.GetSpacing()[:dim], ref.GetSpacing(), rtol=1e-6)
    np.testing.assert_allclose(img.GetOrigin()[:dim], ref.GetOrigin(), atol=1e-5)
    dd = np.asarray(img.GetDirection()).reshape(img.GetDimension(), -1)[:dim, :dim]
    np.testing.assert_allclose(dd, np.asarray(ref.GetDirection()).reshape(dim, dim), atol=1e-5)
    return img


def _check_summary(outdir, method, fixed_path, iterations):
    s = json.load(open(os.path.join(outdir, 'summary.json')))
    for k in SUMMARY_KEYS:
        assert k in s, k
    assert s['method'] == method
    if method == 'lddmm':
        # LDDMM ends a scale early once no step lowers the energy
        assert 1 <= s['iterations'] <= iterations
    else:
        assert s['iterations'] == iterations
    assert s['initial_mismatch'] > 0
    assert 0 <= s['mismatch_ratio'] < 1
    assert s['final_mismatch'] == pytest.approx(s['mismatch_ratio'] * s['initial_mismatch'], rel=1e-6)
    assert 0 < s['jacdet_min'] <= 1 <= s['jacdet_max'] < 10
    assert s['folded_voxels'] == 0
    if method in ('greedy', 'lddmm'):     # they write hinv.nii.gz, checked as h is
        assert s['hinv_folded_voxels'] == 0 and s['hinv_jacdet_min'] > 0
    assert s['seconds_per_iter'] > 0 and s['total_seconds'] >= s['seconds_per_iter']
    assert s['device'] in ('cpu', 'gpu')
    assert isinstance(s['threads'], int) and s['threads'] >= 1
    ref = _read(fixed_path)
    dim = ref.GetDimension()
    assert s['grid']['size'][:dim] == list(ref.GetSize())
    np.testing.assert_allclose(s['grid']['spacing'][:dim], ref.GetSpacing(), rtol=1e-6)
    np.testing.assert_allclose(s['grid']['origin'][:dim], ref.GetOrigin(), atol=1e-5)
    assert isinstance(s['config'], dict) and 'scales' in s['config']
    return s


def _check_png(path):
    with open(path, 'rb') as fh:
        head = fh.read(24)
    assert head[:8] == b'\x89PNG\r\n\x1a\n'
    w, h = int.from_bytes(head[16:20], 'big'), int.from_bytes(head[20:24], 'big')
    assert (w, h) == (1600, 1000)
    assert 30_000 < os.path.getsize(path) < 5_000_000


# --------------------------------------------------------------------------- io

def test_load_pair_world_resampling_matches_scipy(data, tmp_path):
    """Moving on another grid (spacing, origin, a rotated direction): the
    returned moving image is the moving file sampled at the fixed voxel
    centres' world positions (trilinear), as scipy.ndimage.map_coordinates."""
    d = tmp_path
    f = _blobs((20, 18, 16), [(10, 9, 8)], [(5, 4, 4)], [1.0])
    m = _blobs((22, 20, 14), [(9, 11, 6)], [(5, 4, 3)], [2.0]) + 0.5
    Df, Dm = _rot3(10.0), _rot3(-25.0)
    sf, of = np.array([1.0, 1.1, 1.2]), np.array([0.0, 1.0, -2.0])
    sm, om = np.array([1.3, 0.9, 1.5]), np.array([-3.0, 2.0, -1.0])
    fp = _write(f, d / 'f.nii.gz', tuple(sf), tuple(of), Df)
    mp = _write(m, d / 'm.nii.gz', tuple(sm), tuple(om), Dm)
    info = {}
    F, M, mask = load_pair(fp, mp, normalize=False, info=info)
    assert mask is None and info['resampled']
    assert tuple(M.size()) == tuple(F.size()) == (20, 18, 16)
    np.testing.assert_allclose(tuple(M.spacing()), sf, rtol=1e-6)
    np.testing.assert_allclose(tuple(M.origin()), of, atol=1e-6)
    np.testing.assert_allclose(np.reshape(GetDirection(M), (3, 3)), Df, atol=1e-6)
    np.testing.assert_allclose(F.asnp(), f, atol=1e-6)
    idx = np.stack(np.meshgrid(*[np.arange(n) for n in f.shape], indexing='ij'), -1).reshape(-1, 3)
    world = of + (Df @ (idx * sf).T).T
    q = (np.linalg.inv(Dm) @ (world - om).T).T / sm
    ref = ndimage.map_coordinates(m, q.T, order=1, mode='constant', cval=0.0).reshape(f.shape)
    inside = np.all((q >= 0) & (q <= np.array(m.shape) - 1), axis=1).reshape(f.shape)
    outside = np.all((q < -0.6) | (q > np.array(m.shape) - 0.4), axis=1).reshape(f.shape)
    assert inside.mean() > 0.4
    np.testing.assert_allclose(M.asnp()[inside], ref[inside], atol=1e-5)
    assert np.all(M.asnp()[outside] == 0)


def test_load_pair_same_grid_and_normalisation(data):
    info = {}
    F, M, mask = load_pair(data['f2'], data['m2'], info=info)
    assert not info['resampled'] and mask is None
    assert F.size().z == 1 and tuple(F.size()) == (48, 48, 1)
    for im in (F, M):
        a = im.asnp()
        assert a.min() >= 0 and a.max() <= 1 and a.max() == pytest.approx(1.0)
    raw = sitk.GetArrayFromImage(sitk.ReadImage(data['m2'])).T
    lo, hi = info['moving_range']
    np.testing.assert_allclose(M.asnp()[:, :, 0], np.clip((raw - lo) / (hi - lo), 0, 1), atol=1e-6)


def test_normalize_intensity():
    rng = np.random.default_rng(3)
    a = rng.uniform(10, 20, (30, 20, 5))
    a[0, 0, 0], a[1, 0, 0] = 1e6, -1e6  # outliers do not set the range
    im = ca.Image3D(ca.GridInfo(ca.Vec3Di(30, 20, 5)), ca.MEM_HOST)
    im.asnp()[...] = a
    lo, hi = normalize_intensity(im)
    plo, phi = np.percentile(a, [0.5, 99.5])
    assert (lo, hi) == pytest.approx((plo, phi), rel=1e-6)
    np.testing.assert_allclose(im.asnp(), np.clip((a - plo) / (phi - plo), 0, 1), atol=1e-5)
    im.asnp()[...] = a
    lo, hi = normalize_intensity(im, robust=False)
    assert (lo, hi) == (-1e6, 1e6)
    assert im.asnp().min() == 0 and im.asnp().max() == 1
    im.asnp()[...] = 7.0
    normalize_intensity(im)
    assert np.all(im.asnp() == 0)


def test_load_pair_mask_and_refusals(data):
    F, M, mask = load_pair(data['f2'], data['m2'], mask_path=data['mask2'])
    mk = mask.asnp()
    assert set(np.unique(mk)) == {0.0, 1.0} and int(mk.sum()) == 36 * 38
    with pytest.raises(ValueError, match='empty') as e:
        load_pair(data['f2'], data['m2'], mask_path=data['empty_mask2'])
    assert '\n' not in str(e.value)
    with pytest.raises(ValueError, match='4-D') as e:
        load_pair(data['f4d'], data['m3'])
    assert '\n' not in str(e.value)
    with pytest.raises(ValueError, match='2-D'):
        load_pair(data['f2'], data['m3'])
    with pytest.raises(FileNotFoundError):
        load_pair(str(data['dir'] / 'nothing.nii.gz'), data['m2'])
    with pytest.raises(OSError):
        load_pair(data['corrupt'], data['m2'])


@pytest.mark.parametrize('metric', ['mattes', 'correlation'])
def test_affine_prealignment_reduces_mismatch(tmp_path, metric):
    f = ndimage.gaussian_filter(
        _blobs((48, 48), [(24, 24), (18, 21), (30, 29)], [(15, 12), (3, 3), (2.5, 2.5)], [0.5, 0.5, 0.3])
        + 0.5 * (_blobs((48, 48), [(24, 24)], [(16, 13)], [1.0]) > 0.35), 1.0)
    A = np.array([[1.06, 0.08], [-0.05, 0.95]])
    c = np.array(f.shape) / 2 - 0.5
    m = ndimage.affine_transform(f, A, offset=c - A @ c + np.array([2.5, -1.5]), order=1)
    fp, mp = _write(f, tmp_path / 'f.nii.gz'), _write(m, tmp_path / 'm.nii.gz')
    F, M0, _ = load_pair(fp, mp)
    info = {}
    F, M1, _ = load_pair(fp, mp, affine=True, affine_metric=metric, info=info)
    assert info['affine']['metric'] == metric and len(info['affine']['matrix']) == 4
    assert mismatch(F, M1) < 0.1 * mismatch(F, M0)


# --------------------------------------------------------------------------- the command line

def test_cli_subprocess_3d_lddmm(data, tmp_path):
    out = tmp_path / 'out3'
    # the moving image is rebuilt below from the recorded intensity range: no N4
    r = _cli('--fixed', data['f3'], '--moving', data['m3'], '--method', 'lddmm', '--device', 'cpu',
             '--scales', '2,1', '--iters', '4,4', '--quiet', '--no-bias-correct', '--out', out)
    assert r.returncode == 0, r.stderr
    assert 'Traceback' not in r.stderr
    assert os.path.join(str(out), 'summary.json') in r.stdout
    for name in ('deformed', 'jacdet'):
        _check_geometry(out / (name + '.nii.gz'), data['f3'])
    for name in ('hfield', 'momentum', 'hinv'):
        _check_geometry(out / (name + '.nii.gz'), data['f3'], ncomp=3)
    s = _check_summary(str(out), 'lddmm', data['f3'], 8)
    assert s['config']['iters'] == [4, 4] and s['config']['scales'] == [2, 1]
    np.testing.assert_allclose(np.reshape(s['direction'], (3, 3)), data['D3'], atol=1e-5)
    _check_png(out / 'summary.png')
    # the H-field written is the one that gives the deformed image
    h = sitk.GetArrayFromImage(_read(out / 'hfield.nii.gz'))  # (z, y, x, 3), voxel coordinates
    mov = sitk.GetArrayFromImage(_read(data['m3'])).T.astype(np.float64)
    lo, hi = s['inputs']['moving_range']
    mov = np.clip((mov - lo) / (hi - lo), 0, 1)
    coords = [h[..., c].T for c in range(3)]
    ref = ndimage.map_coordinates(mov, coords, order=1, mode='nearest')
    # (the registration's own deformed image: normalised; deformed.nii.gz is the file's values)
    dfm = sitk.GetArrayFromImage(_read(out / 'deformed_preprocessed.nii.gz')).T
    assert np.abs(dfm - ref).max() < 2e-3


@pytest.mark.parametrize('method', ['greedy', 'elastic', 'lddmm'])
def test_cli_in_process_2d(data, tmp_path, method, capsys):
    out = tmp_path / ('out2_' + method)
    rc = cli.main(['--fixed', data['f2'], '--moving', data['m2'], '--method', method, '--scales', '2,1',
                   '--iters', '5', '--config', data['cfg_ok'],
                   '--mask', data['mask2'], '--quiet', '--out', str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert 'mismatch' in cap.out and 'summary.json' in cap.out
    for name in ('deformed', 'jacdet'):
        _check_geometry(out / (name + '.nii.gz'), data['f2'])
    _check_geometry(out / 'hfield.nii.gz', data['f2'], ncomp=3)
    assert os.path.exists(out / 'momentum.nii.gz') == (method == 'lddmm')
    s = _check_summary(str(out), method, data['f2'], 10)
    assert s['mask_voxels'] == 36 * 38
    assert s['config']['alpha'] == 1.0
    _check_png(out / 'summary.png')


def test_cli_affine_and_the_package_function(data, tmp_path, capsys):
    out = tmp_path / 'aff'
    rc = cli.main(['--fixed', data['f2'], '--moving', data['m2'], '--method', 'greedy', '--affine',
                   '--affine-metric', 'correlation', '--iters', '3', '--scales', '1',
                   '--set', 'max_step=0.4', '--out', str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    s = json.load(open(out / 'summary.json'))
    assert s['inputs']['affine'] and os.path.isfile(out / 'affine.tfm')
    assert s['config']['max_step'] in (0.4, [0.4]) and s['iterations'] == 3
    # importing the CLI module must not hide the function PyCA.Apps.register
    import PyCA.Apps as apps
    F, M, _ = load_pair(data['f2'], data['m2'])
    res = apps.register(F, M, method='greedy', quiet=True, scales=[1], iters=[2])
    assert res.iterations == 2 and res.method == 'greedy'


def test_register_is_the_function_not_a_module():
    """The command line's module is PyCA.Apps.register_cli; PyCA.Apps.register
    stays the function (no module in its place): importing a module of that
    name fails, ``python -m PyCA.Apps.register`` runs the command line (_cli)."""
    import types
    import PyCA.Apps as apps
    from PyCA.Apps import register
    assert callable(register) and not isinstance(register, types.ModuleType)
    with pytest.raises(ImportError, match='register_cli'):
        import PyCA.Apps.register  # noqa: F401
    assert apps.register is register and 'PyCA.Apps.register' not in sys.modules
    assert cli.__name__ == 'PyCA.Apps.register_cli' and apps.register is register


def test_cli_moving_on_another_grid(data, tmp_path, capsys):
    """A moving file on another grid is resampled onto the fixed one (world
    coordinates); every output is on the fixed grid."""
    m = sitk.GetArrayFromImage(sitk.ReadImage(data['m2'])).T
    mp = _write(m[4:44, 2:46], tmp_path / 'm_other.nii.gz', (1.3, 1.25), (5.0 + 4 * 1.2 - 0.3, -3.0 + 2 * 1.2))
    out = tmp_path / 'other'
    rc = cli.main(['--fixed', data['f2'], '--moving', mp, '--method', 'greedy', '--scales', '1',
                   '--iters', '3', '--quiet', '--out', str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    s = json.load(open(out / 'summary.json'))
    assert s['inputs']['moving_resampled'] and s['inputs']['moving_grid']['size'][:2] == [40, 44]
    for name in ('deformed', 'jacdet'):
        _check_geometry(out / (name + '.nii.gz'), data['f2'])
    _check_geometry(out / 'hfield.nii.gz', data['f2'], ncomp=3)
    assert s['mismatch_ratio'] < 1



@pytest.mark.parametrize("affine", [False, True])
def test_deformed_is_the_moving_image_through_warp(data, tmp_path, capsys, affine):
    """deformed.nii.gz is the ORIGINAL moving image (its own grid and
    intensities, scaled here by 50 + 7 so that normalisation and N4 show)
    warped by the result's own warp.nii.gz, as SimpleITK resamples it;
    the registration's preprocessed one is deformed_preprocessed.nii.gz."""
    m = sitk.GetArrayFromImage(sitk.ReadImage(data['m2'])).T * 50.0 + 7.0
    mp = _write(m[4:44, 2:46], tmp_path / 'm_other.nii.gz', (1.3, 1.25), (5.0 + 4 * 1.2 - 0.3, -3.0 + 2 * 1.2))
    out = tmp_path / 'warp'
    rc = cli.main(['--fixed', data['f2'], '--moving', mp, '--method', 'lddmm', '--scales', '1',
                   '--iters', '3', '--quiet', '--bias-correct', '--out', str(out)]
                  + (['--affine'] if affine else []))
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    fixed = sitk.ReadImage(data['f2'])
    moving = sitk.Cast(sitk.ReadImage(mp), sitk.sitkFloat32)
    warp = sitk.ReadImage(str(out / 'warp.nii.gz'), sitk.sitkVectorFloat64)
    ref = sitk.Resample(moving, fixed, sitk.DisplacementFieldTransform(warp), sitk.sitkLinear, 0.0,
                        sitk.sitkFloat32)
    got = sitk.ReadImage(str(out / 'deformed.nii.gz'))
    _check_geometry(out / 'deformed.nii.gz', data['f2'])
    b = sitk.GetArrayFromImage(ref)
    a = sitk.GetArrayFromImage(got).reshape(b.shape)     # saved as the other volumes (one slice)
    np.testing.assert_allclose(a, b, atol=1e-4 * np.abs(b).max())
    assert a.max() > 20.0                                  # the moving image's own intensities
    pre = sitk.GetArrayFromImage(sitk.ReadImage(str(out / 'deformed_preprocessed.nii.gz')))
    assert pre.max() < 2.0                                  # normalised to about [0, 1]
    s = json.load(open(out / 'summary.json'))
    assert 'deformed_preprocessed' in s['files'] and 'preprocessed' in s['mismatch_images']

def _bad_cases(data, tmp):
    d = data
    base = ['--method', 'greedy', '--iters', '2', '--scales', '1', '--quiet']
    ok = ['--fixed', d['f2'], '--moving', d['m2']]
    out = ['--out', str(tmp / 'o')]
    cases = {
        'missing fixed': ['--fixed', str(d['dir'] / 'nope.nii.gz'), '--moving', d['m2']] + base + out,
        'missing moving': ['--fixed', d['f2'], '--moving', str(d['dir'] / 'nope.nii.gz')] + base + out,
        'corrupt': ['--fixed', d['corrupt'], '--moving', d['m2']] + base + out,
        'truncated': ['--fixed', d['truncated'], '--moving', d['m3']] + base + out,
        'folder as image': ['--fixed', str(d['dir']), '--moving', d['m2']] + base + out,
        '4-D': ['--fixed', d['f4d'], '--moving', d['m3']] + base + out,
        '2-D with 3-D': ['--fixed', d['f2'], '--moving', d['m3']] + base + out,
        'empty mask': ok + ['--mask', d['empty_mask2']] + base + out,
        'no overlap': ['--fixed', d['f2'], '--moving', d['far2']] + base + out,
        'missing mask': ok + ['--mask', str(d['dir'] / 'nomask.nii.gz')] + base + out,
        'config key': ok + ['--config', d['cfg_key']] + base + out,
        'config yaml': ok + ['--config', d['cfg_value']] + base + out,
        'config value': ok + ['--config', d['cfg_type']] + base + out,
        'missing config': ok + ['--config', str(d['dir'] / 'none.yaml')] + base + out,
        'bad --set': ok + ['--set', 'gamma=-x', '--set', 'nokey=1'] + base + out,
        'bad --scales': ok + ['--scales', 'a,b', '--method', 'greedy'] + out,
        'bad --iters': ok + ['--iters', '0', '--method', 'greedy'] + out,
        'bad --method': ok + ['--method', 'demons'] + out,
        'no --out': ok + base,
        'out is a file': ok + base + ['--out', d['a_file']],
        'out under a file': ok + base + ['--out', os.path.join(d['a_file'], 'sub')],
    }
    if not has_gpu:
        cases['gpu without one'] = ok + base + ['--device', 'gpu'] + out
    return cases


_CASE_NAMES = ['missing fixed', 'missing moving', 'corrupt', 'truncated', 'folder as image', '4-D',
               '2-D with 3-D', 'empty mask', 'no overlap', 'missing mask', 'config key', 'config yaml', 'config value',
               'missing config', 'bad --set', 'bad --scales', 'bad --iters', 'bad --method', 'no --out',
               'out is a file', 'out under a file', 'gpu without one']

# a few run in a subprocess (the real command line: nothing else reaches stderr);
# all run in-process
_SUBPROCESS = ('corrupt', '4-D', 'empty mask', 'config key', 'gpu without one', 'out under a file',
               'bad --scales')


def _one_error_line(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith('pyca-register: error: '), stderr
    assert 'Traceback' not in stderr
    return lines[0]


@pytest.mark.parametrize('case', _CASE_NAMES)
def test_cli_bad_input_one_line(data, tmp_path, case, capfd):
    cases = _bad_cases(data, tmp_path)
    if case not in cases:
        pytest.skip('a GPU is present')
    argv = cases[case]
    rc = cli.main(argv)
    cap = capfd.readouterr()
    assert rc in (1, 2)
    line = _one_error_line(cap.err)
    assert len(line) < 400
    if case in _SUBPROCESS:
        r = _cli(*argv)
        assert r.returncode in (1, 2)
        assert _one_error_line(r.stderr) == line
    assert not os.path.exists(tmp_path / 'o' / 'summary.json')


def test_cli_help_and_console_script_entry():
    r = _cli('--help')
    assert r.returncode == 0 and 'usage: pyca-register' in r.stdout and '--fixed' in r.stdout
    assert callable(cli.main_entry)
    src = os.path.join(os.environ.get('PYCA_SOURCE_DIR', os.path.join(os.path.dirname(__file__), '..', '..')),
                       'pyproject.toml')
    if os.path.isfile(src):
        text = open(src).read()
        assert 'pyca-register = "PyCA.Apps.register_cli:main_entry"' in text


def test_cli_reports_a_folded_inverse(tmp_path, capfd):
    """Greedy on the disc against the C (256^2): h has no fold, but its inverse,
    built by composition, folds where h compresses the ring's gap. The command
    line says so in one warning line and in summary.json (counted here with
    NumPy central differences of the written hinv.nii.gz), not silently."""
    from test_apps_lddmm import _disc_and_c
    fixed, moving = _disc_and_c()
    fp, mp = str(tmp_path / 'disc.nii.gz'), str(tmp_path / 'c.nii.gz')
    common.SaveImage(fixed, fp)
    common.SaveImage(moving, mp)
    out = str(tmp_path / 'out')
    rc = cli.main(['--fixed', fp, '--moving', mp, '--method', 'greedy', '--metric', 'ssd', '--quiet',
                   '--out', out])
    err = capfd.readouterr().err
    assert rc == 0, err
    s = json.load(open(os.path.join(out, 'summary.json')))
    assert s['folded_voxels'] == 0 and s['hinv_folded_voxels'] > 0 and s['hinv_jacdet_min'] <= 0, s
    lines = [l for l in err.splitlines() if 'inverse (hinv.nii.gz) folds' in l]
    assert len(lines) == 1 and ('%d voxels' % s['hinv_folded_voxels']) in lines[0], err
    hv = np.squeeze(sitk.GetArrayFromImage(_read(os.path.join(out, 'hinv.nii.gz'))).astype(np.float64))
    assert hv.shape[:2] == (256, 256), hv.shape      # (y, x, components)
    hx, hy = hv[..., 0], hv[..., 1]
    dxx, dxy = np.gradient(hx, axis=1), np.gradient(hx, axis=0)
    dyx, dyy = np.gradient(hy, axis=1), np.gradient(hy, axis=0)
    det = dxx * dyy - dxy * dyx
    assert (det <= 0).sum() > 0
