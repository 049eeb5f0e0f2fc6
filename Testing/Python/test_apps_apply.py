"""pyca-apply (PyCA.Apps.apply) and the transform files of a registration
(warp.nii.gz, transform.json).

The phantom is a sum of Gaussian blobs defined in physical millimetres: the
fixed image samples it on a 2 mm grid (rotated direction), the moving image
samples a smoothly displaced copy on a 1.5 mm grid whose axes are permuted
and flipped (direction matrix), so the two files share no voxel grid. The
references are independent of PyCA.Apps: SimpleITK's own resampling with a
DisplacementFieldTransform, the deformed image the registration wrote
(moving file -> world resampling -> ApplyH), NumPy label sets, and an
analytic H-field.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca

sitk = pytest.importorskip("SimpleITK")
pytest.importorskip("matplotlib")
pytest.importorskip("yaml")

import PyCA.Apps.register_cli as cli  # noqa: E402
import PyCA.Apps.apply as app  # noqa: E402


# --------------------------------------------------------------------------- data

CENTRES = [(0.0, 0.0, 0.0), (-12.0, 8.0, 4.0), (10.0, -9.0, -6.0), (6.0, 12.0, 10.0)]
WIDTHS = [14.0, 5.0, 6.0, 4.5]
AMPS = [1.0, 0.7, 0.8, 0.6]


def _phantom(p):
    """The blobs at physical points p (3, ...), mm."""
    out = np.zeros(p.shape[1:])
    for c, w, a in zip(CENTRES, WIDTHS, AMPS):
        r2 = sum((p[i] - c[i]) ** 2 for i in range(3)) / w ** 2
        out += a * np.exp(-r2)
    return out


def _points(size, spacing, origin, direction):
    idx = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float64) for n in size], indexing='ij'))
    M = np.asarray(direction, np.float64).reshape(3, 3) * np.asarray(spacing)[None, :]
    return np.asarray(origin)[:, None, None, None] + np.einsum('ij,j...->i...', M, idx)


def _image(arr, spacing, origin, direction, dtype=np.float32):
    img = sitk.GetImageFromArray(np.ascontiguousarray(np.asarray(arr).astype(dtype).T))
    img.SetSpacing([float(v) for v in spacing])
    img.SetOrigin([float(v) for v in origin])
    img.SetDirection([float(v) for v in np.asarray(direction, np.float64).ravel()])
    return img


def _rot(deg, axis=2):
    t = np.deg2rad(deg)
    c, s = np.cos(t), np.sin(t)
    R = np.eye(3)
    i, j = [k for k in range(3) if k != axis]
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


#: the moving grid's axes: x along -z, y along +x, z along -y (permuted, flipped)
D_MOVING = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, -1.0], [-1.0, 0.0, 0.0]])
D_FIXED = _rot(10.0)


def _grid_centered(n, sp, D, centre=(0.0, 0.0, 0.0)):
    D = np.asarray(D).reshape(3, 3)
    return np.asarray(centre) - D @ (np.asarray(sp) * (np.asarray(n) - 1) / 2.0)


def _moving_point(q, affine=False):
    """The phantom point a moving image's physical point q (3, ...) shows:
    q + u(q) (u smooth, ~2.5 mm); with ``affine``, A q + t + u(q) (A: 6 degrees
    about x, t = (3, -2, 1) mm)."""
    u = np.stack([2.5 * np.sin(q[1] / 11.0), -2.0 * np.cos(q[2] / 13.0), 1.5 * np.sin(q[0] / 9.0)])
    if affine:
        q = np.einsum('ij,j...->i...', _rot(6.0, axis=0), q) + np.array([3.0, -2.0, 1.0]).reshape((3,) + (1,) * (q.ndim - 1))
    return q + u


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('apps_apply')
    out = {'dir': d}
    # fixed: 32^3 at 2 mm, rotated 10 degrees about z
    nf, spf = (32, 32, 32), (2.0, 2.0, 2.0)
    of = _grid_centered(nf, spf, D_FIXED)
    Pf = _points(nf, spf, of, D_FIXED)
    out['fixed_img'] = _image(_phantom(Pf), spf, of, D_FIXED)
    out['fixed'] = str(d / 'fixed.nii.gz')
    sitk.WriteImage(out['fixed_img'], out['fixed'])
    # moving: 1.5 mm, 40 x 42 x 44 voxels, permuted and flipped axes; the
    # phantom at p + u(p) for a smooth displacement u of ~2.5 mm
    nm, spm = (40, 42, 44), (1.5, 1.5, 1.5)
    om = _grid_centered(nm, spm, D_MOVING, (1.0, -0.5, 0.5))
    Pm = _points(nm, spm, om, D_MOVING)
    mov = _phantom(_moving_point(Pm))
    out['moving'] = str(d / 'moving.nii.gz')
    sitk.WriteImage(_image(mov, spm, om, D_MOVING), out['moving'])
    out['moving_grid'] = (nm, spm, om)
    # a label map on the moving grid: integer labels of a wide type
    lab = np.zeros(nm, np.int16)
    lab[mov > 0.25] = 3
    lab[mov > 0.55] = 1200
    lab[mov > 0.8] = -7
    out['labels_arr'] = lab
    out['labels'] = str(d / 'labels.nii.gz')
    sitk.WriteImage(_image(lab, spm, om, D_MOVING, dtype=np.int16), out['labels'])
    # for --affine: the moving image also rotated by 6 degrees and shifted 3 mm
    out['moving_aff'] = str(d / 'moving_aff.nii.gz')
    sitk.WriteImage(_image(_phantom(_moving_point(Pm, affine=True)), spm, om, D_MOVING), out['moving_aff'])
    # 2-D pair (48 x 48) for the elastic run (no hinv) and the dimension errors
    p2 = _points((48, 48, 1), (1.0, 1.0, 1.0), (-24.0, -24.0, 0.0), np.eye(3))
    f2 = _phantom(p2 * 0.8)[:, :, 0]
    m2 = _phantom(p2 * 0.8 + np.stack([np.sin(p2[1] / 7.0), np.cos(p2[0] / 9.0), 0 * p2[0]]))[:, :, 0]
    for name, a in (('f2', f2), ('m2', m2)):
        img = sitk.GetImageFromArray(np.ascontiguousarray(a.T.astype(np.float32)))
        img.SetOrigin((-24.0, -24.0))
        out[name] = str(d / (name + '.nii.gz'))
        sitk.WriteImage(img, out[name])
    # a 4-D file and a vector image
    vol = sitk.GetImageFromArray(np.zeros((4, 5, 6), np.float32))
    out['f4d'] = str(d / 'f4d.nii.gz')
    sitk.WriteImage(sitk.JoinSeries([vol, vol]), out['f4d'])
    out['vec'] = str(d / 'vec.nii.gz')
    sitk.WriteImage(sitk.GetImageFromArray(np.zeros((4, 5, 6, 3), np.float32), isVector=True), out['vec'])
    return out


def _env():
    env = dict(os.environ)
    env.setdefault('OMP_NUM_THREADS', '1')
    env['PYTHONUNBUFFERED'] = '1'
    return env


def _register(out, fixed, moving, *extra, method='greedy'):
    rc = cli.main(['--fixed', fixed, '--moving', moving, '--method', method, '--scales', '2,1',
                   '--iters', '6,4', '--no-bias-correct', '--no-normalize', '--quiet',
                   '--out', str(out)] + list(extra))
    assert rc == 0
    return str(out)


@pytest.fixture(scope='module')
def runs(data, tmp_path_factory):
    d = tmp_path_factory.mktemp('apply_runs')
    return {
        'plain': _register(d / 'plain', data['fixed'], data['moving']),
        'affine': _register(d / 'affine', data['fixed'], data['moving_aff'], '--affine',
                            '--affine-metric', 'correlation'),
        'elastic2d': _register(d / 'el2', data['f2'], data['m2'], method='elastic'),
    }


def _arr(img):
    return sitk.GetArrayFromImage(img).T.astype(np.float64)


def _inside(ref_img, src_path, warp_img, margin=3):
    """Fixed voxels whose warped point lies inside the source image, at
    least ``margin`` voxels from its border (SimpleITK, nearest neighbour)."""
    src = sitk.ReadImage(src_path)
    a = np.zeros(src.GetSize()[::-1], np.uint8)
    a[margin:-margin, margin:-margin, margin:-margin] = 1
    ind = sitk.GetImageFromArray(a)
    ind.CopyInformation(src)
    tx = sitk.DisplacementFieldTransform(sitk.Cast(warp_img, sitk.sitkVectorFloat64))
    return _arr(sitk.Resample(ind, ref_img, tx, sitk.sitkNearestNeighbor, 0)) > 0


# --------------------------------------------------------------------------- warp.nii.gz

@pytest.mark.parametrize('run,moving', [('plain', 'moving'), ('affine', 'moving_aff')])
def test_warp_with_simpleitk_reproduces_deformed(data, runs, run, moving):
    """SimpleITK, alone: Resample(original moving file, DisplacementFieldTransform(warp.nii.gz))
    onto the fixed grid is deformed.nii.gz (one interpolation instead of two)."""
    out = runs[run]
    warp = sitk.ReadImage(os.path.join(out, 'warp.nii.gz'), sitk.sitkVectorFloat64)
    fixed = sitk.ReadImage(data['fixed'])
    # an ITK displacement field on the fixed grid
    assert warp.GetNumberOfComponentsPerPixel() == 3 and warp.GetSize() == fixed.GetSize()
    np.testing.assert_allclose(warp.GetSpacing(), fixed.GetSpacing(), rtol=1e-6)
    np.testing.assert_allclose(warp.GetOrigin(), fixed.GetOrigin(), atol=1e-4)
    np.testing.assert_allclose(warp.GetDirection(), fixed.GetDirection(), atol=1e-6)
    raw = sitk.ReadImage(os.path.join(out, 'warp.nii.gz'))
    assert raw.GetPixelID() == sitk.sitkVectorFloat64   # DisplacementFieldTransform takes it as is
    tx = sitk.DisplacementFieldTransform(raw)
    res = _arr(sitk.Resample(sitk.ReadImage(data[moving]), fixed, tx, sitk.sitkLinear, 0.0))
    dfm = _arr(sitk.ReadImage(os.path.join(out, 'deformed.nii.gz')))
    inside = _inside(fixed, data[moving], warp)
    assert inside.mean() > 0.5
    diff = np.abs(res - dfm)[inside]
    assert diff.max() < 0.1 and diff.mean() < 0.005, (diff.max(), diff.mean())
    # the deformation is not the identity, so this is a real check of it
    ident = _arr(sitk.Resample(sitk.ReadImage(data[moving]), fixed, sitk.Transform(), sitk.sitkLinear, 0.0))
    assert np.abs(ident - dfm)[inside].mean() > 5 * diff.mean()
    s = json.load(open(os.path.join(out, 'summary.json')))
    assert s['files']['warp'] == os.path.join(out, 'warp.nii.gz')
    rec = json.load(open(os.path.join(out, 'transform.json')))
    assert (rec['affine'] is not None) == (run == 'affine')
    np.testing.assert_allclose(np.reshape(rec['moving_grid']['direction'], (3, 3)), D_MOVING, atol=1e-6)
    assert rec['moving_grid']['size'] == list(data['moving_grid'][0])


def test_warp_of_an_analytic_h_field(tmp_path):
    """write_outputs with a known H-field: a shift of (1.5, -1, 0.5) voxels
    of a 2 mm grid with a rotated direction is the displacement
    D (3, -2, 1) mm everywhere; without moving_space the affine is the identity."""
    from PyCA.Common import SetDirection
    from PyCA.Apps import RegistrationResult
    from PyCA.Apps.outputs import write_outputs
    g = ca.GridInfo(ca.Vec3Di(12, 10, 8), ca.Vec3Df(2.0, 2.0, 2.0), ca.Vec3Df(-3.0, 4.0, 1.0))
    D = _rot(25.0)
    fixed = ca.Image3D(g, ca.MEM_HOST)
    fixed.asnp()[...] = np.random.default_rng(0).random((12, 10, 8))
    SetDirection(fixed, D)
    h = ca.Field3D(g, ca.MEM_HOST)
    ca.SetToIdentity(h)
    for c, s in zip(h.asnp(), (1.5, -1.0, 0.5)):
        c += s
    res = RegistrationResult(method='greedy', deformed=None, h=h, energy=[1.0, 0.5],
                             energy_terms={}, iterations=2, seconds=0.1)
    write_outputs(str(tmp_path), res, fixed, fixed, title='analytic')
    w = sitk.ReadImage(str(tmp_path / 'warp.nii.gz'))
    v = sitk.GetArrayFromImage(w).reshape(-1, 3)
    np.testing.assert_allclose(v, np.tile(D @ [3.0, -2.0, 1.0], (v.shape[0], 1)), atol=1e-9)
    np.testing.assert_allclose(np.reshape(w.GetDirection(), (3, 3)), D, atol=1e-12)
    rec = json.load(open(tmp_path / 'transform.json'))
    assert rec['affine'] is None and rec['hinv'] is None and rec['dimension'] == 3
    assert rec['moving_grid'] == rec['fixed_grid']


# --------------------------------------------------------------------------- pyca-apply

@pytest.mark.parametrize('run,moving', [('plain', 'moving'), ('affine', 'moving_aff')])
def test_apply_reproduces_deformed(data, runs, run, moving, tmp_path, capsys):
    out = runs[run]
    dst = str(tmp_path / 'applied.nii.gz')
    assert app.main(['--result', out, '--moving', data[moving], '--out', dst]) == 0
    assert 'pyca-apply: wrote' in capsys.readouterr().out
    img = sitk.ReadImage(dst)
    fixed = sitk.ReadImage(data['fixed'])
    assert img.GetSize() == fixed.GetSize() and img.GetPixelID() == sitk.sitkFloat32
    np.testing.assert_allclose(img.GetOrigin(), fixed.GetOrigin(), atol=1e-4)
    np.testing.assert_allclose(img.GetDirection(), fixed.GetDirection(), atol=1e-6)
    warp = sitk.ReadImage(os.path.join(out, 'warp.nii.gz'))
    inside = _inside(fixed, data[moving], warp)
    # deformed.nii.gz is the moving file through warp.nii.gz: pyca-apply's output
    dfm = _arr(sitk.ReadImage(os.path.join(out, 'deformed.nii.gz')))
    assert np.abs(_arr(img) - dfm).max() < 1e-6
    # the registration's own deformed image (no N4, no normalisation here:
    # the same values) samples twice, on the way onto the fixed grid and by h
    pre = _arr(sitk.ReadImage(os.path.join(out, 'deformed_preprocessed.nii.gz')))
    diff = np.abs(_arr(img) - pre)[inside]
    assert diff.max() < 0.1 and diff.mean() < 0.005, (diff.max(), diff.mean())
    # cubic B-spline: the moving image is the analytic phantom at q + u(q)
    # (after the 6 degree rotation and shift for 'affine'): at the points the
    # warp maps the fixed voxels to, the warped image is that to 1e-2
    cub = _arr(app.apply_transform(out, data[moving], interp='cubic'))
    W = sitk.GetArrayFromImage(warp).T
    q = _points(fixed.GetSize(), fixed.GetSpacing(), fixed.GetOrigin(), fixed.GetDirection()) + W
    truth = _phantom(_moving_point(q, affine=(run == 'affine')))
    err3 = np.abs(cub - truth)[inside]
    assert err3.max() < 1e-2 and err3.mean() < 2e-4, (err3.max(), err3.mean())
    assert err3.mean() < 0.2 * diff.mean()      # one cubic sampling beats two linear ones


def test_apply_nearest_keeps_labels_and_dtype(data, runs, tmp_path):
    dst = str(tmp_path / 'labels_on_fixed.nii.gz')
    assert app.main(['--result', runs['plain'], '--moving', data['labels'], '--out', dst,
                     '--interp', 'nearest']) == 0
    img = sitk.ReadImage(dst)
    assert img.GetPixelID() == sitk.sitkInt16
    got = sitk.GetArrayFromImage(img)
    src = set(np.unique(data['labels_arr']).tolist())
    assert set(np.unique(got).tolist()) <= src and len(set(np.unique(got).tolist())) == len(src)
    # the warped labels agree with the thresholds of the deformed image
    dfm = _arr(sitk.ReadImage(os.path.join(runs['plain'], 'deformed.nii.gz')))
    lab = got.T
    fixed = sitk.ReadImage(data['fixed'])
    inside = _inside(fixed, data['moving'], sitk.ReadImage(os.path.join(runs['plain'], 'warp.nii.gz')))
    want = np.zeros(dfm.shape, np.int16)
    want[dfm > 0.25], want[dfm > 0.55] = 3, 1200
    want[dfm > 0.8] = -7
    assert (lab == want)[inside].mean() > 0.97
    # unsigned 8-bit labels from a SimpleITK image in Python
    u8 = sitk.Cast(sitk.ReadImage(data['labels']) == 1200, sitk.sitkUInt8) * 200
    w = app.apply_transform(runs['plain'], u8, interp='nearest')
    assert w.GetPixelID() == sitk.sitkUInt8
    assert set(np.unique(sitk.GetArrayFromImage(w)).tolist()) == {0, 200}


def test_apply_inverse_maps_fixed_back_to_moving(data, runs, tmp_path):
    """--inverse: the fixed image onto the moving file's grid is close to the
    moving image (much closer than the fixed image taken there unchanged)."""
    for run, moving in (('plain', 'moving'), ('affine', 'moving_aff')):
        dst = str(tmp_path / ('inv_%s.nii.gz' % run))
        assert app.main(['--result', runs[run], '--moving', data['fixed'], '--out', dst, '--inverse']) == 0
        img = sitk.ReadImage(dst)
        mov = sitk.ReadImage(data[moving])
        assert img.GetSize() == mov.GetSize()
        np.testing.assert_allclose(img.GetDirection(), mov.GetDirection(), atol=1e-6)
        np.testing.assert_allclose(img.GetOrigin(), mov.GetOrigin(), atol=1e-4)
        M, W = _arr(mov), _arr(img)
        ident = _arr(sitk.Resample(sitk.ReadImage(data['fixed']), mov, sitk.Transform(), sitk.sitkLinear, 0.0))
        core = np.zeros(M.shape, bool)
        core[6:-6, 6:-6, 6:-6] = True
        e_inv = np.mean((W - M)[core] ** 2)
        e_id = np.mean((ident - M)[core] ** 2)
        assert e_inv < 0.35 * e_id, (run, e_inv, e_id)


def test_apply_subprocess_and_console_script(data, runs, tmp_path):
    dst = str(tmp_path / 'sub.nii.gz')
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.apply', '--result', runs['plain'], '--moving',
                        data['labels'], '--interp', 'nearest', '--out', dst],
                       capture_output=True, text=True, timeout=240, env=_env())
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == '' and os.path.isfile(dst)
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.apply', '--help'], capture_output=True,
                       text=True, timeout=120, env=_env())
    assert r.returncode == 0 and 'usage: pyca-apply' in r.stdout and '--inverse' in r.stdout
    import PyCA.Apps as apps
    assert apps.apply_transform is app.apply_transform and callable(app.main_entry)
    src = os.path.join(os.environ.get('PYCA_SOURCE_DIR', os.path.join(os.path.dirname(__file__), '..', '..')),
                       'pyproject.toml')
    if os.path.isfile(src):
        assert 'pyca-apply = "PyCA.Apps.apply:main_entry"' in open(src).read()


def test_apply_2d(data, runs, tmp_path):
    """A 2-D result (elastic): apply works, the output is 2-D on the fixed grid."""
    dst = str(tmp_path / 'a2.nii.gz')
    assert app.main(['--result', runs['elastic2d'], '--moving', data['m2'], '--out', dst]) == 0
    img = sitk.ReadImage(dst)
    assert img.GetDimension() == 2 and img.GetSize() == (48, 48)
    dfm = _arr(sitk.ReadImage(os.path.join(runs['elastic2d'], 'deformed.nii.gz')))[..., 0]
    a = _arr(img)
    assert np.abs(a - dfm)[3:-3, 3:-3].max() < 1e-3


# --------------------------------------------------------------------------- bad input

def _bad_cases(data, runs, tmp):
    d = data
    ok_out = ['--out', str(tmp / 'o.nii.gz')]
    empty = tmp / 'empty_result'
    empty.mkdir(exist_ok=True)
    return {
        'missing result': ['--result', str(tmp / 'nope'), '--moving', d['moving']] + ok_out,
        'result without transform': ['--result', str(empty), '--moving', d['moving']] + ok_out,
        'result is a file': ['--result', d['moving'], '--moving', d['moving']] + ok_out,
        'missing moving': ['--result', runs['plain'], '--moving', str(tmp / 'no.nii.gz')] + ok_out,
        '2-D for 3-D': ['--result', runs['plain'], '--moving', d['f2']] + ok_out,
        '3-D for 2-D': ['--result', runs['elastic2d'], '--moving', d['moving']] + ok_out,
        '4-D': ['--result', runs['plain'], '--moving', d['f4d']] + ok_out,
        'vector image': ['--result', runs['plain'], '--moving', d['vec']] + ok_out,
        'unknown interp': ['--result', runs['plain'], '--moving', d['moving'], '--interp', 'sinc'] + ok_out,
        'inverse without hinv': ['--result', runs['elastic2d'], '--moving', d['f2'], '--inverse'] + ok_out,
        'out folder missing': ['--result', runs['plain'], '--moving', d['moving'],
                               '--out', str(tmp / 'no' / 'o.nii.gz')],
        'no --out': ['--result', runs['plain'], '--moving', d['moving']],
    }


_CASES = ['missing result', 'result without transform', 'result is a file', 'missing moving', '2-D for 3-D',
          '3-D for 2-D', '4-D', 'vector image', 'unknown interp', 'inverse without hinv',
          'out folder missing', 'no --out']


@pytest.mark.parametrize('case', _CASES)
def test_apply_bad_input_one_line(data, runs, tmp_path, case, capfd):
    argv = _bad_cases(data, runs, tmp_path)[case]
    rc = app.main(argv)
    cap = capfd.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert rc == 2, cap.err
    assert len(lines) == 1 and lines[0].startswith('pyca-apply: error: '), cap.err
    assert 'Traceback' not in cap.err and len(lines[0]) < 400
    assert not os.path.exists(tmp_path / 'o.nii.gz')
    if case in ('missing result', 'inverse without hinv', '2-D for 3-D'):
        r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.apply'] + argv, capture_output=True,
                           text=True, timeout=120, env=_env())
        assert r.returncode == 2 and r.stderr.strip() == lines[0]


def test_summary_of_a_folded_and_a_non_finite_inverse(tmp_path):
    """write_outputs checks hinv's det J as h's: an inverse that swaps two
    columns (x -> 7 - x: det J = -1 everywhere) counts every voxel as folded;
    one that is all NaN counts every voxel too, and its minimum is null in
    summary.json (strict JSON, no NaN)."""
    from PyCA.Apps import RegistrationResult
    from PyCA.Apps.outputs import write_outputs
    g = ca.GridInfo(ca.Vec3Di(8, 6, 5))
    fixed = ca.Image3D(g, ca.MEM_HOST)
    fixed.asnp()[...] = np.random.default_rng(1).random((8, 6, 5))
    h = ca.Field3D(g, ca.MEM_HOST)
    ca.SetToIdentity(h)
    for case in ('mirror', 'nan'):
        hinv = ca.Field3D(g, ca.MEM_HOST)
        ca.SetToIdentity(hinv)
        if case == 'mirror':
            x = hinv.asnp()[0]
            x[...] = 7.0 - x
        else:
            for c in hinv.asnp():
                c[...] = np.nan
        res = RegistrationResult(method='greedy', deformed=None, h=h, hinv=hinv, energy=[1.0],
                                 energy_terms={}, iterations=1, seconds=0.1)
        out = tmp_path / case
        s = write_outputs(str(out), res, fixed, fixed, title=case)
        rec = json.loads((out / 'summary.json').read_text())
        assert s['folded_voxels'] == 0 and rec['hinv_folded_voxels'] == 8 * 6 * 5, (case, rec)
        if case == 'mirror':
            assert rec['hinv_jacdet_min'] == pytest.approx(-1.0)
        else:
            assert rec['hinv_jacdet_min'] is None
