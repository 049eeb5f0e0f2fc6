"""PyCA.Apps.atlas: atlas building in one process and over MPI ranks.

Independent references: the subjects are known smooth warps (SciPy
map_coordinates) of one image, in antithetic pairs (displacements +d and -d),
so the mean deformation is close to the identity and the atlas should come
close to the image they were made from -- closer than the plain mean, which
is blurred. The MPI runs are compared with the single-process atlas; the
checkpoint runs with an uninterrupted one.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter, map_coordinates

import PyCA.Core as ca
from PyCA.Common import SaveITKImage, LoadITKImage
from PyCA.Apps import ConfigError
from PyCA.Apps import atlas as atlas_mod
from PyCA.Apps.atlas import build_atlas, DEFAULTS, AtlasResult

N2 = 40
GREEDY_REG = {'scales': [2, 1], 'iters': [40, 40]}
# K = L^-2 (lddmm's default lpow) with a smoothing length of 1 pixel
LDDMM_REG = {'scales': [2, 1], 'iters': [15, 15], 'alpha': 1.0, 'gamma': 1.0, 'sigma': 0.05}


def _base2d(n=N2):
    y, x = np.mgrid[0:n, 0:n].astype(float)
    c = n / 2.0
    a = ((x - c) ** 2 / (0.33 * n) ** 2 + (y - c) ** 2 / (0.25 * n) ** 2 < 1).astype(float)
    a += 0.6 * (((x - 0.8 * c) ** 2 + (y - 1.1 * c) ** 2) < (0.1 * n) ** 2)
    return gaussian_filter(a, 0.7)


def _warps2d(B, count, amp=3.0):
    """``count`` subjects B(x + s d_k(x)), s = +-1 in pairs (arrays (y, x))."""
    n = B.shape[0]
    y, x = np.mgrid[0:n, 0:n].astype(float)
    out = []
    for i in range(count):
        r = np.random.RandomState(i // 2)
        d = [gaussian_filter(r.randn(n, n), 6) for _ in range(2)]
        sgn = 1.0 if i % 2 else -1.0
        d = [sgn * amp * di / np.abs(di).max() for di in d]
        out.append(map_coordinates(B, [y + d[0], x + d[1]], order=1, mode='nearest'))
    return out


def _im(a2d_or_3d):
    a = np.asarray(a2d_or_3d, np.float32)
    if a.ndim == 2:    # (y, x) -> PyCA (x, y, 1)
        im = ca.Image3D(ca.GridInfo(ca.Vec3Di(a.shape[1], a.shape[0], 1)), ca.MEM_HOST)
        im.asnp()[:, :, 0] = a.T
    else:              # (z, y, x)
        im = ca.Image3D(ca.GridInfo(ca.Vec3Di(a.shape[2], a.shape[1], a.shape[0])), ca.MEM_HOST)
        im.asnp()[...] = a.transpose(2, 1, 0)
    return im


def _arr2d(im):
    return np.array(im.asnp()[:, :, 0]).T


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope='module')
def subjects2d():
    B = _base2d()
    return B, _warps2d(B, 6)


@pytest.fixture(autouse=True)
def _estimate_plans(monkeypatch):
    # FFTW plans chosen by measurement may differ between processes (and
    # with them the last bits); estimated plans are the same everywhere
    monkeypatch.setenv('PYCA_FFTW_PLANNER', 'estimate')


# --------------------------------------------------------------------------- algorithm

def test_greedy_atlas_of_known_warps(subjects2d):
    B, subs = subjects2d
    r = build_atlas([_im(s) for s in subs], method='greedy', iters=5, quiet=True,
                    register=GREEDY_REG, warm_iters=15)
    assert isinstance(r, AtlasResult) and r.method == 'greedy' and r.iterations == 5
    A, M = _arr2d(r.atlas), _arr2d(r.mean)
    np.testing.assert_allclose(M, np.mean(subs, axis=0), atol=1e-5)   # atlas_0 = the mean
    e_atlas, e_mean = _rel(A, B), _rel(M, B)
    assert e_atlas < 0.07, (e_atlas, e_mean)
    assert e_atlas < 0.75 * e_mean, (e_atlas, e_mean)
    # the energy (sum of the subjects' mismatches to the atlas) never rises and falls a lot
    E = r.energy
    assert len(E) == 5 and all(b <= a * (1 + 1e-6) for a, b in zip(E, E[1:])), E
    assert E[-1] < 0.2 * E[0], E
    # the reported energy is the mismatch of the deformed subjects to the last atlas used
    assert sorted(r.h) == sorted(r.deformed) == r.subjects == list(range(6))
    for i in r.subjects:
        ref = ca.Image3D(r.atlas.grid(), ca.MEM_HOST)
        ca.ApplyH(ref, _im(subs[i]), r.h[i])
        np.testing.assert_allclose(_arr2d(ref), _arr2d(r.deformed[i]), atol=1e-5)
    assert len(r.seconds_per_iter) == 5 and r.ranks == 1 and r.device == 'cpu'


def test_lddmm_atlas_of_known_warps(subjects2d):
    B, subs = subjects2d
    r = build_atlas([_im(s) for s in subs], method='lddmm', iters=4, quiet=True,
                    register=LDDMM_REG, warm_iters=15)
    A, M = _arr2d(r.atlas), _arr2d(r.mean)
    assert _rel(A, B) < 0.05 and _rel(A, B) < 0.5 * _rel(M, B), (_rel(A, B), _rel(M, B))
    assert sorted(r.momentum) == list(range(6))
    # the mean initial momentum tends to zero (relative to the subjects' momenta)
    ratio = [a / b for a, b in zip(r.mean_momentum_norm, r.momentum_norm)]
    assert len(ratio) == 4 and ratio[0] > 0.3, ratio
    assert all(b < a for a, b in zip(ratio, ratio[1:])) and ratio[-1] < 0.05 * ratio[0], ratio
    E = r.energy
    assert all(b <= a * (1 + 1e-6) for a, b in zip(E, E[1:])) and E[-1] < 0.7 * E[0], E
    # without the centring the energy still decreases monotonically (the CG
    # update only lowers the image terms) but the mean momentum stays larger;
    # the one-step splat update (atlas_cg_iters=0) gives a worse atlas
    r2 = build_atlas([_im(s) for s in subs], method='lddmm', iters=3, quiet=True,
                     register=LDDMM_REG, warm_iters=15, center=False)
    ratio2 = [a / b for a, b in zip(r2.mean_momentum_norm, r2.momentum_norm)]
    assert ratio2[-1] > 2 * ratio[-1], (ratio, ratio2)
    E = r2.energy
    assert all(b <= a * (1 + 1e-6) for a, b in zip(E, E[1:])), E
    r3 = build_atlas([_im(s) for s in subs], method='lddmm', iters=3, quiet=True,
                     register=LDDMM_REG, warm_iters=15, center=False, atlas_cg_iters=0)
    assert _rel(_arr2d(r3.atlas), B) > _rel(_arr2d(r2.atlas), B)


def test_3d_small_case_runs_jacobian_weighted():
    n = 12
    z, y, x = np.mgrid[0:n, 0:n, 0:n].astype(float)
    B = gaussian_filter(((x - 6) ** 2 / 16 + (y - 6) ** 2 / 9 + (z - 6) ** 2 / 7 < 1).astype(float), 0.7)
    subs = []
    for s in range(3):
        r = np.random.RandomState(s)
        d = [gaussian_filter(r.randn(n, n, n), 3) for _ in range(3)]
        d = [1.2 * q / np.abs(q).max() for q in d]
        subs.append(_im(map_coordinates(B, [z + d[0], y + d[1], x + d[2]], order=1, mode='nearest')))
    for method, reg in (('greedy', {'scales': [1], 'iters': 15}),
                        ('lddmm', {'scales': [1], 'iters': 8, 'alpha': 4.0, 'sigma': 0.05})):
        r = build_atlas(subs, method=method, iters=2, quiet=True, register=reg, warm_iters=5,
                        jacobian_weighted=True)
        A = np.array(r.atlas.asnp())
        assert A.shape == (n, n, n) and np.all(np.isfinite(A))
        assert len(r.energy) == 2 and all(np.isfinite(r.energy))
        if method == 'greedy':   # a weighted mean of [0, 1] images
            assert 0.0 <= A.min() and A.max() <= 1.0 + 1e-4
        else:                    # a least-squares solution: may over/undershoot a little
            assert -0.02 <= A.min() and A.max() <= 1.02
        assert tuple(r.h[0].size()) == (n, n, n)


def test_parameter_errors(subjects2d):
    _, subs = subjects2d
    ims = [_im(s) for s in subs[:2]]
    with pytest.raises(ConfigError, match='unknown parameter'):
        build_atlas(ims, quiet=True, no_such_key=1)
    with pytest.raises(ConfigError, match='unknown parameter'):
        build_atlas(ims, quiet=True, register={'alhpa': 1.0})
    with pytest.raises(ConfigError, match='method'):
        build_atlas(ims, method='elastic', quiet=True)
    with pytest.raises(ConfigError, match='output folder'):
        build_atlas(ims, quiet=True, checkpoint_every=1)
    other = ca.Image3D(ca.GridInfo(ca.Vec3Di(8, 8, 1)), ca.MEM_HOST)
    with pytest.raises(ValueError, match='grid'):
        build_atlas(ims + [other], quiet=True)
    with pytest.raises(TypeError):
        build_atlas(ims + [3.0], quiet=True)
    assert set(DEFAULTS) >= {'iters', 'jacobian_weighted', 'register', 'warm_iters', 'center', 'device',
                            'atlas_cg_iters'}


def test_warm_start_parameters():
    """init_h / init_momentum: the registration continues from the given state."""
    from PyCA.Apps import greedy_register, lddmm_register
    B = _base2d(24)
    f, m = _im(B), _im(_warps2d(B, 1)[0])
    r1 = greedy_register(f, m, scales=[1], iters=10, quiet=True)
    r2 = greedy_register(f, m, scales=[1], iters=1, quiet=True, init_h=r1.h)
    assert r2.energy[0] <= r1.energy[-1] * (1 + 1e-5)
    assert r2.hinv is not None
    with pytest.raises(ConfigError, match='scales'):
        greedy_register(f, m, scales=[2, 1], quiet=True, init_h=r1.h)
    # (gain 'off': the final gain scales the momentum off the energy's minimiser; the warm
    # start continues from what it is given)
    q1 = lddmm_register(f, m, scales=[1], iters=5, quiet=True, alpha=4.0, sigma=0.05, gain='off')
    q2 = lddmm_register(f, m, scales=[1], iters=1, quiet=True, alpha=4.0, sigma=0.05,
                        init_momentum=q1.momentum)
    assert abs(q2.energy[0] - q1.energy[-1]) <= 1e-6 * abs(q1.energy[-1])
    with pytest.raises(ConfigError, match='scales'):
        lddmm_register(f, m, quiet=True, init_momentum=q1.momentum)


# --------------------------------------------------------------------------- checkpoints

class _Killed(Exception):
    pass


@pytest.mark.parametrize('method', ['greedy', 'lddmm'])
def test_killed_run_resumes_to_the_same_atlas(subjects2d, tmp_path, monkeypatch, method):
    _, subs = subjects2d
    ims = [_im(s) for s in subs[:4]]
    reg = GREEDY_REG if method == 'greedy' else LDDMM_REG
    kw = dict(method=method, iters=4, quiet=True, register=reg, warm_iters=8)
    ref = build_atlas(ims, **kw)

    # killed during atlas iteration 4 (after the checkpoint of iteration 2)
    import PyCA.Apps.greedy as gmod
    import PyCA.Apps.lddmm as lmod
    mod = gmod if method == 'greedy' else lmod
    fn_name = method + '_register'
    real = getattr(mod, fn_name)
    calls = {'n': 0}

    def dying(*a, **k):
        calls['n'] += 1
        if calls['n'] > 3 * len(ims) + 1:
            raise _Killed('killed')
        return real(*a, **k)

    out = tmp_path / 'run'
    monkeypatch.setattr(mod, fn_name, dying)
    with pytest.raises(_Killed):
        build_atlas(ims, out=str(out), checkpoint_every=2, **kw)
    monkeypatch.setattr(mod, fn_name, real)
    js = json.loads((out / 'checkpoint' / 'state.json').read_text())
    assert js['iteration'] == 2 and js['method'] == method and js['n_subjects'] == 4
    assert len(js['energies']) == 2
    assert [p.name for p in (out / 'checkpoint').iterdir() if p.is_dir()] == ['iter_0002']

    res = build_atlas(ims, out=str(out), checkpoint_every=2, resume=True, **kw)
    assert res.resumed_from == 2 and res.iterations == 4
    a, b = np.array(res.atlas.asnp()), np.array(ref.atlas.asnp())
    assert np.max(np.abs(a - b)) <= 1e-6 * np.max(np.abs(b)), np.max(np.abs(a - b))
    np.testing.assert_allclose(res.energy, ref.energy, rtol=1e-6)
    # the written atlas is the returned one; every iteration's atlas is there
    np.testing.assert_array_equal(np.array(LoadITKImage(str(out / 'atlas.nii.gz')).asnp()), a)
    for k in range(5):
        assert (out / ('atlas_iter_%d.nii.gz' % k)).is_file()
    # resuming with other registration parameters is refused
    with pytest.raises(ConfigError, match='same parameters'):
        build_atlas(ims, out=str(out), resume=True, **dict(kw, warm_iters=3))


# --------------------------------------------------------------------------- command line

def _env():
    env = dict(os.environ)
    env['OMP_NUM_THREADS'] = '1'
    env['PYCA_FFTW_PLANNER'] = 'estimate'
    env['PYTHONUNBUFFERED'] = '1'
    return env


@pytest.fixture(scope='module')
def files2d(subjects2d, tmp_path_factory):
    _, subs = subjects2d
    d = tmp_path_factory.mktemp('atlas_subjects')
    paths = []
    for i, s in enumerate(subs):
        p = str(d / ('subj%d.nii.gz' % i))
        im = _im(s)
        im.setSpacing(ca.Vec3Df(2.0, 2.0, 1.0))
        SaveITKImage(im, p)
        paths.append(p)
    return d, paths


CLI_REG = ['--set', 'register.scales=2,1', '--set', 'register.iters=20', '--set', 'warm_iters=8']


def test_cli_writes_all_outputs(files2d, tmp_path, capsys):
    d, paths = files2d
    out = tmp_path / 'out'
    rc = atlas_mod.main(['--images', str(d / 'subj*.nii.gz'), '--out', str(out), '--iters', '3',
                         '--method', 'lddmm', '--quiet', '--set', 'register.alpha=4',
                         '--set', 'register.sigma=0.05'] + CLI_REG)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert 'atlas done' in cap.out
    for k in range(4):
        assert (out / ('atlas_iter_%d.nii.gz' % k)).is_file()
    atlas = LoadITKImage(str(out / 'atlas.nii.gz'))
    assert tuple(atlas.size()) == (N2, N2, 1) and abs(atlas.spacing().x - 2.0) < 1e-6
    for i in range(6):
        for kind in ('hfield', 'deformed', 'momentum'):
            assert (out / 'deformations' / ('%03d_subj%d_%s.nii.gz' % (i, i, kind))).is_file()
    s = json.loads((out / 'atlas_summary.json').read_text())
    assert s['method'] == 'lddmm' and s['iterations'] == 3 and len(s['energies']) == 3
    assert s['n_subjects'] == 6 and len(s['subjects']) == 6 and s['ranks'] == 1
    assert len(s['seconds_per_iter']) == 3 and s['device'] == 'cpu'
    assert len(s['mean_momentum_norm']) == 3 and len(s['images']) == 6
    png = out / 'atlas_summary.png'
    assert png.is_file() and png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and png.stat().st_size > 20000
    assert not [p for p in out.rglob('*tmp*')]      # atomic writes leave no temporaries


def test_cli_refuses_bad_input_with_one_line(files2d, tmp_path, capsys):
    d, paths = files2d
    odd = str(tmp_path / 'odd.nii.gz')
    SaveITKImage(ca.Image3D(ca.GridInfo(ca.Vec3Di(9, 9, 1)), ca.MEM_HOST), odd)
    out = str(tmp_path / 'o')
    cases = [
        (['--images', str(tmp_path / 'none*.nii.gz'), '--out', out], 'no file matches'),
        (['--images', str(tmp_path / 'missing.nii.gz'), paths[0], '--out', out], 'not found'),
        (['--images', paths[0], '--out', out], 'at least 2'),
        (['--images', paths[0], odd, '--out', out], 'grid'),
        (['--images'] + paths[:2] + ['--out', out, '--iters', 'x'], '--iters'),
        (['--images'] + paths[:2] + ['--out', out, '--set', 'bogus=1'], 'unknown parameter'),
        (['--images'] + paths[:2] + ['--out', out, '--set', 'register.bogus=1'], 'unknown parameter'),
        (['--images'] + paths[:2] + ['--out', out, '--method', 'tv'], 'invalid choice'),
        (['--images'] + paths[:2] + ['--out', paths[0]], 'not a folder'),
        (['--images'] + paths[:2] + ['--out', out, '--checkpoint-every', '-1'], '--checkpoint-every'),
    ]
    from PyCA.Apps import gpu_available
    if not gpu_available():
        cases.append((['--images'] + paths[:2] + ['--out', out, '--device', 'gpu'], 'GPU'))
    for argv, what in cases:
        rc = atlas_mod.main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2, (argv, err)
        assert len(err) == 1 and err[0].startswith('pyca-atlas: error: ') and what in err[0], (argv, err)


def test_cli_subprocess_without_mpi(files2d, tmp_path):
    d, paths = files2d
    out = tmp_path / 'o'
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.atlas', '--images'] + paths[:3] +
                       ['--out', str(out), '--iters', '2', '--quiet'] + CLI_REG,
                       capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    assert (out / 'atlas.nii.gz').is_file() and (out / 'atlas_summary.png').is_file()


# --------------------------------------------------------------------------- MPI

def _mpiexec():
    for cand in (os.path.join(os.path.dirname(sys.executable), 'mpiexec'), shutil.which('mpiexec')):
        if cand and os.path.exists(cand):
            return cand
    return None


def _has_mpi4py():
    try:
        from mpi4py import MPI  # noqa: F401
        return True
    except Exception:
        return False


def _launch(n, args, timeout=120, script=None):
    """`mpiexec -n n` of the atlas command (or of `script`, a Python file) with `args`."""
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip('mpiexec not found (pip install mpich, or apt-get install openmpi-bin)')
    if not _has_mpi4py():
        pytest.skip('mpi4py with an MPI library is not installed (pip install mpi4py mpich)')
    cmd = [mpiexec, '-n', str(n)]
    if n > 1 and _accepts_oversubscribe(mpiexec):
        cmd.append('--oversubscribe')
    cmd += [sys.executable] + ([str(script)] if script else ['-m', 'PyCA.Apps.atlas']) + [str(a) for a in args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    except subprocess.TimeoutExpired:
        pytest.fail('%s did not finish in %d s (a hang)' % (' '.join(cmd[:3]), timeout))


_OVERSUB = {}


def _accepts_oversubscribe(mpiexec):
    """Open MPI needs --oversubscribe for more ranks than cores; MPICH's
    mpiexec runs them anyway (and would refuse the option)."""
    if mpiexec not in _OVERSUB:
        try:
            r = subprocess.run([mpiexec, '--version'], capture_output=True, text=True, timeout=30)
            _OVERSUB[mpiexec] = 'open mpi' in (r.stdout + r.stderr).lower() or \
                'open-rte' in (r.stdout + r.stderr).lower()
        except Exception:
            _OVERSUB[mpiexec] = False
    return _OVERSUB[mpiexec]


def test_mpi_ranks_give_the_single_process_atlas(files2d, tmp_path):
    d, paths = files2d
    args = ['--images'] + paths + ['--iters', '3', '--quiet'] + CLI_REG
    ref_out = tmp_path / 'single'
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.atlas'] + args + ['--out', str(ref_out)],
                       capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    ref = np.array(LoadITKImage(str(ref_out / 'atlas.nii.gz')).asnp())
    for n in (1, 2, 4):
        out = tmp_path / ('ranks%d' % n)
        r = _launch(n, args + ['--out', out])
        assert r.returncode == 0, r.stdout + r.stderr
        a = np.array(LoadITKImage(str(out / 'atlas.nii.gz')).asnp())
        rel = np.max(np.abs(a - ref)) / np.max(np.abs(ref))
        assert rel <= 1e-5, (n, rel)
        s = json.loads((out / 'atlas_summary.json').read_text())
        assert s['ranks'] == n
        # every rank wrote its own subjects' files
        assert len(list((out / 'deformations').glob('*_hfield.nii.gz'))) == 6
        assert r.stdout.count('atlas done') == 1          # rank 0 alone reports
    # LDDMM (splat update, centring) on 2 ranks
    largs = ['--images'] + paths[:4] + ['--iters', '2', '--quiet', '--method', 'lddmm',
                                        '--set', 'register.alpha=4', '--set', 'register.sigma=0.05'] + CLI_REG
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.atlas'] + largs + ['--out', str(tmp_path / 'l1')],
                       capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    r = _launch(2, largs + ['--out', tmp_path / 'l2'])
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = (np.array(LoadITKImage(str(tmp_path / d / 'atlas.nii.gz')).asnp()) for d in ('l2', 'l1'))
    assert np.max(np.abs(a - b)) <= 1e-5 * np.max(np.abs(b))


def test_mpi_rank_failure_stops_the_job(files2d, tmp_path):
    """A subject only rank 1 loads is corrupt (its header reads, its voxels
    do not): the job ends with one clear line instead of hanging."""
    d, paths = files2d
    bad = tmp_path / 'bad.nii.gz'
    data = open(paths[0], 'rb').read()
    import gzip
    raw = gzip.decompress(data)
    bad.write_bytes(gzip.compress(raw[:len(raw) // 2]))
    r = _launch(2, ['--images', paths[0], paths[1], paths[2], str(bad), '--out', tmp_path / 'o',
                    '--iters', '2', '--quiet'] + CLI_REG, timeout=90)
    # the ranks agree on the failed read (no Abort): every rank exits with
    # status 1 and the failed rank alone prints its line
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith('pyca-atlas: error:')]
    assert len(lines) == 1 and 'rank 1' in lines[0] and 'stopping all 2 ranks' in lines[0], r.stderr
    assert 'Abort' not in r.stdout + r.stderr
    assert not (tmp_path / 'o' / 'atlas.nii.gz').exists()


def test_mpi_failure_in_an_iteration_aborts_with_its_line(files2d, tmp_path):
    """A failure past the reads (rank 1's registration raises in atlas
    iteration 1) ends the job by Abort, and the failing rank's line still
    reaches the launcher's stderr (it waits ABORT_DRAIN_SECONDS first)."""
    d, paths = files2d
    script = tmp_path / 'fail_in_iteration.py'
    script.write_text(
        "import sys\n"
        "from mpi4py import MPI\n"
        "import PyCA.Apps.atlas as atlas, PyCA.Apps.atlas_methods as am\n"
        "for cls in am.ATLAS_METHODS.values():\n"
        "    orig = cls.iterate\n"
        "    def iterate(self, a, k, orig=orig):\n"
        "        if k == 1 and MPI.COMM_WORLD.Get_rank() == 1:\n"
        "            raise MemoryError('injected failure in iteration 1')\n"
        "        return orig(self, a, k)\n"
        "    cls.iterate = iterate\n"
        "sys.exit(atlas.main(sys.argv[1:]))\n")
    r = _launch(2, ['--images'] + paths[:4] + ['--out', tmp_path / 'o', '--iters', '3', '--quiet'] + CLI_REG,
                script=script)
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith('pyca-atlas: error:')]
    assert len(lines) == 1, r.stdout + r.stderr
    assert 'rank 1: MemoryError: injected failure in iteration 1 (stopping all 2 ranks)' in lines[0]
    assert not (tmp_path / 'o' / 'atlas.nii.gz').exists()


def test_mpi_3d_atlas_equals_single_process(tmp_path):
    """A small 3-D problem (4 subjects, 16^3, over 2, 3 (an odd split) and 4
    ranks) gives the single-process atlas under mpiexec."""
    rng = np.random.RandomState(7)
    z, y, x = np.mgrid[0:16, 0:16, 0:16].astype(float)
    B = np.exp(-((x - 8) ** 2 + (y - 7) ** 2 + (z - 8) ** 2) / 18.0) + \
        0.5 * np.exp(-((x - 5) ** 2 + (y - 10) ** 2 + (z - 6) ** 2) / 6.0)
    paths = []
    for i in range(4):
        d = [gaussian_filter(rng.randn(16, 16, 16), 4) for _ in range(3)]
        d = [1.5 * di / np.abs(di).max() for di in d]
        s = map_coordinates(B, [z + d[0], y + d[1], x + d[2]], order=1, mode='nearest')
        p = str(tmp_path / ('s3d_%d.nii.gz' % i))
        SaveITKImage(_im(s), p)
        paths.append(p)
    args = ['--images'] + paths + ['--iters', '2', '--quiet', '--set', 'register.scales=1',
                                   '--set', 'register.iters=10', '--set', 'warm_iters=5',
                                   '--set', 'register.gamma=0.01']
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.atlas'] + args + ['--out', str(tmp_path / 'one')],
                       capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    ref = np.array(LoadITKImage(str(tmp_path / 'one' / 'atlas.nii.gz')).asnp())
    for n in (2, 3, 4):
        r = _launch(n, args + ['--out', tmp_path / ('r%d' % n)])
        assert r.returncode == 0, r.stdout + r.stderr
        a = np.array(LoadITKImage(str(tmp_path / ('r%d' % n) / 'atlas.nii.gz')).asnp())
        assert np.max(np.abs(a - ref)) <= 1e-5 * np.max(np.abs(ref)), n


def test_lddmm_subjects_take_resolved_geodesics_unless_told():
    """The atlas's LDDMM subjects shoot with ATLAS_LDDMM_NSTEPS (4) time
    steps and ATLAS_LDDMM_INVERSE_ITERS (2) fixed-point iterations of the
    inverse, not lddmm_register's 2 and 1, unless ``register`` names them;
    greedy has neither (its inverse_iters is its own)."""
    from PyCA.Apps import atlas as atlas_mod, lddmm, greedy
    assert lddmm.DEFAULTS['nsteps'] == 2 and atlas_mod.ATLAS_LDDMM_NSTEPS == 4
    assert lddmm.DEFAULTS['inverse_iters'] == 1 and atlas_mod.ATLAS_LDDMM_INVERSE_ITERS == 2
    _, cfg = atlas_mod._method_cfg('lddmm', {})
    assert cfg['nsteps'] == 4 and cfg['metric'] == 'ssd' and cfg['inverse_iters'] == 2
    _, cfg = atlas_mod._method_cfg('lddmm', {'nsteps': 3, 'inverse_iters': 1})
    assert cfg['nsteps'] == 3 and cfg['inverse_iters'] == 1
    _, cfg = atlas_mod._method_cfg('greedy', {})
    assert 'nsteps' not in cfg and cfg['inverse_iters'] == greedy.DEFAULTS['inverse_iters']


# --------------------------------------------------------------------------- method objects

def test_methods_are_objects_and_a_new_one_is_one_class(subjects2d, monkeypatch, tmp_path):
    """build_atlas picks its method object by name (atlas_methods.ATLAS_METHODS):
    a method that only supplies the registration of one subject, the atlas
    update and the deformations without an iteration runs through the same
    loop, checkpoints and outputs."""
    from PyCA.Apps import atlas_methods as am, checkpoints
    assert sorted(am.ATLAS_METHODS) == ['greedy', 'lddmm'] == sorted(atlas_mod.METHODS)
    assert am.atlas_method('LDDMM') is am.LddmmAtlas and issubclass(am.GreedyAtlas, am.AtlasMethod)
    with pytest.raises(ConfigError, match='method must be one of greedy, lddmm'):
        am.atlas_method('elastic')

    class IdentityAtlas(am.AtlasMethod):
        """No deformation: the atlas stays the mean."""
        name = 'identity'
        module = am.GreedyAtlas.module

        def register(self, i, atlas, cfg):
            h = ca.Field3D(self.grid, self.mType)
            ca.SetToIdentity(h)
            self.state[i] = self.h[i] = h
            self.deformed[i] = self.subj[i]
            ca.Sub(self.tmpi, atlas, self.subj[i])
            return ca.Sum2(self.tmpi) * self.vol

        def update_atlas(self, atlas):
            self.num.zero()
            for i in self.local:
                self.num.add(self.deformed[i])
            self.num.store(atlas, self.num.allreduce() / self.n)

        def deform_subjects(self):
            for i in self.local:
                self.register(i, self.subj[i], None)

    monkeypatch.setitem(am.ATLAS_METHODS, 'identity', IdentityAtlas)
    _, subs = subjects2d
    ims = [_im(s) for s in subs[:3]]
    out = tmp_path / 'identity'
    r = build_atlas(ims, method='identity', iters=2, quiet=True, out=str(out), checkpoint_every=1)
    np.testing.assert_allclose(_arr2d(r.atlas), np.mean(subs[:3], axis=0), atol=1e-5)
    assert len(r.energy) == 2 and r.energy[0] == pytest.approx(r.energy[1], rel=1e-5) and r.momentum == {}
    js = json.loads((out / 'checkpoint' / 'state.json').read_text())
    assert js['method'] == 'identity' and js['iteration'] == 2
    assert checkpoints.committed_folder(checkpoints.checkpoint_dir(out)) == 'iter_0002'
    assert (out / 'checkpoint' / 'iter_0002' / checkpoints.state_name(2)).is_file()
    assert 'mean_momentum_norm' not in json.loads((out / 'atlas_summary.json').read_text())
    r2 = build_atlas(ims, method='identity', iters=2, quiet=True, out=str(out), checkpoint_every=1,
                     resume=True)
    assert r2.resumed_from == 2 and r2.energy == r.energy and sorted(r2.deformed) == [0, 1, 2]
