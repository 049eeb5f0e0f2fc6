"""Every writer on a full disk: an exception (or, on the command line, exit
status 1 and one ``error:`` line) naming the file and the cause, the earlier
file byte-identical, and no temporary file left behind.

Two ways to make the disk full, each a row of its own:

* ``tmpfs``: a small tmpfs mounted for the test (where the process may mount
  one: root in CI), filled with a filler file until only a few KiB are free;
* ``fsize``: ``RLIMIT_FSIZE`` with ``SIGXFSZ`` ignored, so that writes past
  the limit fail with EFBIG; needs no mount and runs everywhere.

ITK's NIfTI writer reports such a short write only on stderr and returns
normally; before the savers verified their temporary files, the truncated
file was renamed over the good one (issue: "a full disk destroys NIfTI
files"). See Documentation/Reliability.md, "Full disk".
"""
import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import uuid

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Common as common
from PyCA.Common import PyCAIO

MECHANISMS = ('tmpfs', 'fsize')
ROOM = 24 << 10              # bytes left free on the full tmpfs
LIMIT = 48 << 10             # RLIMIT_FSIZE of the fsize rows


# --------------------------------------------------------------------------- the full disk

def _plain_env():
    """The environment without the sanitizer run-times preloaded (./run
    sanitize preloads them into Python; mount and umount need none)."""
    return {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS')}


def _can_mount():
    if os.geteuid() != 0 or not os.path.isdir('/proc'):
        return False
    probe = '/tmp/pyca-mount-probe-%s' % uuid.uuid4().hex[:8]
    os.makedirs(probe)
    try:
        ok = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], env=_plain_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if ok:
            subprocess.run(['umount', probe], check=False, env=_plain_env())
        return ok
    except OSError:
        return False
    finally:
        os.rmdir(probe)


_MOUNTABLE = None


class FullDisk:
    """A folder ``dir`` and a context ``full(room, limit)`` inside which
    writes there fail: the tmpfs filled to ``room`` free bytes, or
    RLIMIT_FSIZE set to ``limit`` bytes (this process; ``preexec`` does the
    same for a child)."""

    def __init__(self, kind, base):
        self.kind, self.base = kind, base
        self.dir = os.path.join(base, 'disk')
        os.makedirs(self.dir)
        self.mounted = False
        self._limit = None
        if kind == 'tmpfs':
            subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', self.dir], check=True,
                           env=_plain_env())
            self.mounted = True

    def close(self):
        if self.mounted:
            subprocess.run(['umount', '-l', self.dir], check=False, env=_plain_env())

    def _fill(self, room):
        st = os.statvfs(self.dir)
        free = st.f_bavail * st.f_frsize
        filler = os.path.join(self.dir, '.filler')
        with open(filler, 'wb') as f:
            left = max(free - room, 0)
            while left > 0:
                n = f.write(b'\0' * min(left, 1 << 20))
                left -= n
        return filler

    @contextlib.contextmanager
    def full(self, room=ROOM, limit=LIMIT):
        if self.kind == 'tmpfs':
            filler = self._fill(room)
            try:
                yield
            finally:
                os.unlink(filler)
        else:
            old_sig = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            old = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old[1]))
            try:
                yield
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, old)
                signal.signal(signal.SIGXFSZ, old_sig)

    def preexec(self, limit=LIMIT):
        def setup():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # stays ignored across exec
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        return setup if self.kind == 'fsize' else None


@pytest.fixture(params=MECHANISMS)
def disk(request, tmp_path):
    global _MOUNTABLE
    if request.param == 'tmpfs':
        if _MOUNTABLE is None:
            _MOUNTABLE = _can_mount()
        if not _MOUNTABLE:
            pytest.skip('cannot mount a tmpfs here (not root, or no mount permission): the fsize rows cover it')
    d = FullDisk(request.param, str(tmp_path))
    yield d
    d.close()


# --------------------------------------------------------------------------- helpers

def _snapshot(folder):
    """{relative path: sha1} of every file below folder (the filler aside)."""
    out = {}
    for root, _dirs, names in os.walk(folder):
        for n in names:
            if n == '.filler':
                continue
            p = os.path.join(root, n)
            with open(p, 'rb') as f:
                out[os.path.relpath(p, folder)] = hashlib.sha1(f.read()).hexdigest()
    return out


def _image(n, seed, twod=False):
    rng = np.random.RandomState(seed)
    a = rng.random_sample((n, n) if twod else (n, n, n)).astype(np.float32)
    return common.ImFromNPArr(a, ca.MEM_HOST, ca.Vec3Df(1.5, 1.25, 2.0), ca.Vec3Df(-3.0, 4.0, 5.5))


def _field(n, seed):
    rng = np.random.RandomState(seed)
    return common.FieldFromNPArr(rng.random_sample((n, n, n, 3)).astype(np.float32), ca.MEM_HOST)


def _check_failed_save(disk, name, old_state, exc):
    """The exception names the file and the cause; the folder is as it was."""
    text = str(exc)
    assert name in text, 'the error does not name the file: %s' % text
    causes = ('No space left on device', 'File too large')
    assert any(c in text for c in causes), 'the error does not say why: %s' % text
    assert exc.errno in (28, 27), 'errno %r (ENOSPC or EFBIG expected): %s' % (exc.errno, text)
    assert _snapshot(disk.dir) == old_state, 'the earlier file changed, or a stray file was left'


# --------------------------------------------------------------------------- the image savers

PY_ROWS = {
    # row: (save(obj, path), make old content, make new content)
    'nii': (lambda o, p: common.SaveITKImage(o, p), lambda: _image(12, 1), lambda: _image(48, 2)),
    'nii.gz': (lambda o, p: common.SaveITKImage(o, p, True), lambda: _image(12, 1), lambda: _image(48, 2)),
    'field.nii.gz': (lambda o, p: common.SaveITKField(o, p, True), lambda: _field(8, 1), lambda: _field(32, 2)),
    'mha': (lambda o, p: common.SaveITKImage(o, p), lambda: _image(12, 1), lambda: _image(48, 2)),
    'mha.compressed': (lambda o, p: common.SaveITKImage(o, p, True), lambda: _image(12, 1), lambda: _image(48, 2)),
    'mhd': (lambda o, p: common.SaveITKImage(o, p), lambda: _image(12, 1), lambda: _image(48, 2)),
    'nrrd': (lambda o, p: common.SaveITKImage(o, p), lambda: _image(12, 1), lambda: _image(48, 2)),
    'nrrd.gz': (lambda o, p: common.SaveITKImage(o, p, True), lambda: _image(12, 1), lambda: _image(48, 2)),
    'npy': (lambda o, p: common.SaveImageNPY(o, p), lambda: _image(12, 1), lambda: _image(48, 2)),
    'npz': (lambda o, p: common.SaveFieldNPZ(o, p, False), lambda: _field(8, 1), lambda: _field(32, 2)),
    'png': (lambda o, p: common.SavePNGImage(o, p, bitDepth=16), lambda: _image(16, 1, True),
            lambda: _image(256, 2, True)),
}
EXT = {'mha.compressed': '.mha', 'nrrd.gz': '.nrrd', 'field.nii.gz': '.nii.gz'}


@pytest.mark.parametrize('row', sorted(PY_ROWS))
def test_python_saver_on_full_disk(disk, row):
    save, old, new = PY_ROWS[row]
    name = 'x' + EXT.get(row, '.' + row)
    path = os.path.join(disk.dir, name)
    save(old(), path)
    before = _snapshot(disk.dir)
    obj = new()
    with disk.full():
        with pytest.raises(OSError) as ei:
            save(obj, path)
    _check_failed_save(disk, name, before, ei.value)
    save(obj, path)          # with room again the same save works (and verifies)
    assert _snapshot(disk.dir) != before


CXX_ROWS = {'nii': ('SaveImage', False), 'nii.gz': ('SaveImage', True), 'mha': ('SaveImage', False),
            'mhd': ('SaveImage', False), 'nrrd': ('SaveImage', False),
            'field.nii.gz': ('SaveField', True), 'field.nrrd': ('SaveField', False)}


@pytest.mark.parametrize('row', sorted(CXX_ROWS))
def test_cxx_itkfileio_on_full_disk(disk, row):
    """The C++ writer (ITKFileIO.cxx atomicWrite, through _ITKFileIO)."""
    if not hasattr(ca, '_ITKFileIO'):
        pytest.skip('PyCA built without ITK (USE_ITK=OFF): no _ITKFileIO')
    fn, compress = CXX_ROWS[row]
    field = fn == 'SaveField'
    name = 'x.' + row.replace('field.', '')
    path = os.path.join(disk.dir, name)
    getattr(ca._ITKFileIO, fn)(_field(8, 1) if field else _image(12, 1), path, compress)
    before = _snapshot(disk.dir)
    obj = _field(32, 2) if field else _image(48, 2)
    with disk.full():
        with pytest.raises((OSError, RuntimeError)) as ei:   # PyCAException
            getattr(ca._ITKFileIO, fn)(obj, path, compress)
    text = str(ei.value)
    assert name in text and ('No space left on device' in text or 'File too large' in text), text
    assert _snapshot(disk.dir) == before


def test_plunc_affine_on_full_disk(disk):
    """Aff3D.writePLUNCStyle (AtomicFile.cxx): a whole-buffer write."""
    path = os.path.join(disk.dir, 'a.txt')
    a = ca.Aff3Df()
    a.writePLUNCStyle(path)
    before = _snapshot(disk.dir)
    b = ca.Aff3Df()
    b.vector = ca.Vec3Df(1.0 / 3.0, 2.0 / 7.0, 5.0 / 11.0)
    with disk.full(room=0, limit=8):
        with pytest.raises((OSError, RuntimeError)) as ei:
            b.writePLUNCStyle(path)
    assert 'a.txt' in str(ei.value)
    assert _snapshot(disk.dir) == before


def test_json_summary_on_full_disk(disk):
    path = os.path.join(disk.dir, 'summary.json')
    PyCAIO._atomic_json(path, {'old': 1}, 'test')
    before = _snapshot(disk.dir)
    big = {'values': list(np.linspace(0.0, 1.0, 20000))}
    with disk.full():
        with pytest.raises(OSError) as ei:
            PyCAIO._atomic_json(path, big, 'test')
    _check_failed_save(disk, 'summary.json', before, ei.value)


def test_display_picture_on_full_disk(disk):
    from PyCA.Display import SaveSlice
    path = os.path.join(disk.dir, 'slice.png')
    SaveSlice(path, _image(8, 1, True))
    before = _snapshot(disk.dir)
    with disk.full():
        with pytest.raises(OSError) as ei:
            SaveSlice(path, _image(400, 2, True))
    _check_failed_save(disk, 'slice.png', before, ei.value)


# --------------------------------------------------------------------------- staged outputs

def _registration(n, seed):
    from types import SimpleNamespace
    rng = np.random.RandomState(seed)
    fixed = common.ImFromNPArr(rng.random_sample((n, n)).astype(np.float32))
    moving = common.ImFromNPArr(rng.random_sample((n, n)).astype(np.float32))
    x, y = np.meshgrid(np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32), indexing='ij')
    d = rng.uniform(-0.8, 0.8, (2, n, n)).astype(np.float32)
    h = common.FieldFromNPArr(np.stack([x + d[0], y + d[1]], axis=-1))
    result = SimpleNamespace(h=h, hinv=None, momentum=None, deformed=None, method='greedy',
                             iterations=3, seconds_per_iter=0.5, seconds=1.5, device='cpu',
                             config={}, energy=[3.0, 2.0, 1.0], energy_terms=None,
                             scale_of_iter=None)
    return fixed, moving, result


def test_write_outputs_on_full_disk_keeps_earlier_outputs(disk):
    """write_outputs stages its files: a failure leaves the earlier run's
    outputs exactly as they were and nothing of the failed run."""
    from PyCA.Apps.outputs import write_outputs
    out = os.path.join(disk.dir, 'out')
    fixed, moving, result = _registration(16, 1)
    write_outputs(out, result, fixed, moving, title='old')
    before = _snapshot(disk.dir)
    fixed, moving, result = _registration(96, 2)
    with disk.full():
        with pytest.raises(OSError) as ei:
            write_outputs(out, result, fixed, moving, title='new')
    assert 'No space left on device' in str(ei.value) or 'File too large' in str(ei.value)
    assert _snapshot(disk.dir) == before
    assert not [n for n in os.listdir(out) if n.startswith('.pyca-staging-')]


def test_staging_commit_moves_everything(tmp_path):
    from PyCA.Apps.staging import OutputStage
    out = str(tmp_path / 'o')
    with OutputStage(out) as st:
        for rel in ('a.txt', os.path.join('sub', 'b.txt')):
            with open(st.path(rel), 'w') as f:
                f.write(rel)
        assert not os.path.exists(st.final('a.txt'))      # nothing in place before the commit
    assert sorted(_snapshot(out)) == ['a.txt', os.path.join('sub', 'b.txt')]
    with pytest.raises(ZeroDivisionError):
        with OutputStage(out) as st:
            with open(st.path('c.txt'), 'w') as f:
                f.write('c')
            1 / 0
    assert sorted(os.listdir(out)) == ['a.txt', 'sub']


# --------------------------------------------------------------------------- FFTW wisdom

WISDOM_CHILD = r'''
import sys, PyCA.Core as ca
for n in [int(v) for v in sys.argv[1:]]:
    k = ca.FluidKernelFFTCPU()
    k.setGrid(ca.GridInfo(ca.Vec3Di(n, n + 1, 1)))
print('OK')
'''


@pytest.mark.skipif(ca.GetCPUFFTBackend() != "fftw", reason="FFTW wisdom: this build uses pocketfft")
def test_fftw_wisdom_on_full_disk(disk):
    """The wisdom file is a cache: a failed save keeps the earlier file,
    leaves no temporary, and warns once on stderr without failing the
    computation (Reliability.md)."""
    path = os.path.join(disk.dir, 'wisdom')
    env = dict(os.environ, PYCA_FFTW_WISDOM=path, PYCA_FFTW_PLANNER='measure', OMP_NUM_THREADS='1')

    def child(sizes, preexec=None):
        return subprocess.run([sys.executable, '-c', WISDOM_CHILD] + [str(s) for s in sizes], env=env,
                              preexec_fn=preexec, capture_output=True, text=True, timeout=300)
    r = child([6])
    assert r.returncode == 0 and os.path.isfile(path), r.stderr
    size = os.path.getsize(path)
    before = _snapshot(disk.dir)
    with disk.full(room=0) if disk.kind == 'tmpfs' else contextlib.nullcontext():
        r = child([10, 14, 18, 22], disk.preexec(limit=size + 8))
    assert r.returncode == 0 and 'OK' in r.stdout, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if 'wisdom' in ln.lower()]
    assert len(lines) == 1 and 'not saved' in lines[0] and 'earlier file is kept' in lines[0], r.stderr
    assert _snapshot(disk.dir) == before


# --------------------------------------------------------------------------- atlas checkpoints

ATLAS_KW = dict(method='greedy', quiet=True, checkpoint_every=1, warm_iters=2,
                register={'scales': [1], 'iters': [4]})


def _subjects(n, size):
    out = []
    yy, xx = np.meshgrid(np.arange(size), np.arange(size))
    for i in range(n):
        r = size / 4.0 + i
        a = ((xx - size / 2.0) ** 2 + (yy - size / 2.0 - i) ** 2 < r * r).astype(np.float32)
        out.append(common.ImFromNPArr(a))
    return out


def test_atlas_checkpoint_on_full_disk(disk):
    """A checkpoint that cannot be written raises, leaves state.json and the
    files it names as they were (each loads), and no stray files."""
    from PyCA.Apps.atlas import build_atlas
    from PyCA.Parallel import SerialComm
    out = os.path.join(disk.dir, 'atlas')
    subj = _subjects(3, 48)
    build_atlas(subj, out=out, iters=1, comm=SerialComm(), **ATLAS_KW)
    before = _snapshot(disk.dir)
    state = os.path.join(out, 'checkpoint', 'state.json')
    with disk.full(room=4 << 10, limit=4 << 10):
        with pytest.raises(OSError) as ei:
            build_atlas(subj, out=out, iters=3, resume=True, comm=SerialComm(), **ATLAS_KW)
    assert 'No space left on device' in str(ei.value) or 'File too large' in str(ei.value)
    after = _snapshot(disk.dir)
    assert {k: v for k, v in after.items() if k.startswith('atlas/checkpoint')} == \
        {k: v for k, v in before.items() if k.startswith('atlas/checkpoint')}
    # no temporary file; the run's stage stays for the resume (its iteration atlases)
    assert not [k for k in after if '.tmp-' in k], after
    assert not [k for k in after if k.startswith('atlas/') and '/' not in k[6:] and k not in before], after
    with open(state) as f:
        js = json.load(f)
    folder = os.path.join(out, 'checkpoint', js['folder'])
    for n in os.listdir(folder):
        (common.LoadITKField if 'state' in n else common.LoadITKImage)(os.path.join(folder, n))
    # with room again, the run resumes from that checkpoint and finishes
    res = build_atlas(subj, out=out, iters=3, resume=True, comm=SerialComm(), **ATLAS_KW)
    assert res.resumed_from == 1 and res.iterations == 3
    for k in range(4):
        common.LoadITKImage(os.path.join(out, 'atlas_iter_%d.nii.gz' % k))
    assert not [n for n in os.listdir(out) if n.startswith('.pyca-staging-')]


# --------------------------------------------------------------------------- the command lines

def _cli_pair(folder, n=40):
    yy, xx = np.meshgrid(np.arange(n), np.arange(n))
    f = np.exp(-((xx - n / 2.0) ** 2 + (yy - n / 2.0) ** 2) / (2 * (n / 6.0) ** 2)).astype(np.float32)
    m = np.exp(-((xx - n / 2.0 - 2) ** 2 + (yy - n / 2.0 + 1) ** 2) / (2 * (n / 5.0) ** 2)).astype(np.float32)
    paths = []
    for name, a in (('fixed.nii.gz', f), ('moving.nii.gz', m)):
        p = os.path.join(folder, name)
        common.SaveITKImage(common.ImFromNPArr(a), p, True)
        paths.append(p)
    return paths


# The command under RLIMIT_FSIZE: the limit is set once MPI is up (MPI's own
# start-up writes shared-memory files, which the limit would refuse), as a
# disk that fills during a run.
CLI_CHILD = r'''
import resource, runpy, signal, sys
limit = int(sys.argv[1])
if limit:
    try:
        from mpi4py import MPI  # noqa: F401
    except Exception:
        pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
sys.argv = [sys.argv[2]] + sys.argv[3:]
runpy.run_module(sys.argv[0], run_name='__main__')
'''


def _cli(disk, module, args, limit=0):
    env = dict(os.environ, MPLBACKEND='Agg', OMP_NUM_THREADS='1', PYCA_FFTW_WISDOM='')
    return subprocess.run([sys.executable, '-c', CLI_CHILD, str(limit if disk.kind == 'fsize' else 0),
                           module] + args, env=env, capture_output=True, text=True, timeout=600)


def _one_error_line(r, prog):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert len(lines) == 1 and lines[0].startswith(prog + ': error:'), r.stderr
    assert 'No space left on device' in lines[0] or 'File too large' in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize('earlier', [False, True], ids=['new-folder', 'over-earlier-run'])
def test_pyca_register_on_full_disk(disk, tmp_path, earlier):
    inputs = str(tmp_path / 'in')
    os.makedirs(inputs)
    fixed, moving = _cli_pair(inputs)
    out = os.path.join(disk.dir, 'result')
    args = ['--fixed', fixed, '--moving', moving, '--out', out, '--method', 'greedy', '--iters', '5',
            '--quiet']
    if earlier:
        r = _cli(disk, 'PyCA.Apps.register', args)
        assert r.returncode == 0, r.stderr
        assert os.path.isfile(os.path.join(out, 'hfield.nii.gz'))
    before = _snapshot(disk.dir)
    with disk.full(room=20 << 10, limit=20 << 10) if disk.kind == 'tmpfs' else contextlib.nullcontext():
        r = _cli(disk, 'PyCA.Apps.register', args, limit=20 << 10)
    line = _one_error_line(r, 'pyca-register')
    assert out in line or 'result' in line, line
    after = _snapshot(disk.dir)
    assert after == before, 'partial or changed outputs: %s' % sorted(set(after) ^ set(before))


def test_pyca_atlas_on_full_disk(disk, tmp_path):
    inputs = str(tmp_path / 'in')
    os.makedirs(inputs)
    paths = []
    for i, im in enumerate(_subjects(3, 40)):
        p = os.path.join(inputs, 's%d.nii.gz' % i)
        common.SaveITKImage(im, p, True)
        paths.append(p)
    out = os.path.join(disk.dir, 'atlas')
    args = ['--images'] + paths + ['--out', out, '--iters', '1', '--quiet', '--set', 'register.iters=[3]',
                                   '--set', 'register.scales=[1]']
    r = _cli(disk, 'PyCA.Apps.atlas', args)
    if r.returncode == 2 and 'register.' in r.stderr:
        args = ['--images'] + paths + ['--out', out, '--iters', '1', '--quiet']
        r = _cli(disk, 'PyCA.Apps.atlas', args)
    assert r.returncode == 0, r.stderr
    before = _snapshot(disk.dir)
    with disk.full(room=12 << 10, limit=12 << 10) if disk.kind == 'tmpfs' else contextlib.nullcontext():
        r = _cli(disk, 'PyCA.Apps.atlas', args, limit=12 << 10)
    _one_error_line(r, 'pyca-atlas')
    after = _snapshot(disk.dir)
    changed = sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))
    assert not changed, 'changed or partial outputs: %s' % changed


@pytest.mark.parametrize('fmt', ['nii', 'nii.gz'])
def test_pyca_apply_on_full_disk(disk, tmp_path, fmt):
    """pyca-apply writes its one output atomically: on a full disk it ends with
    one error line (exit 1), an earlier output stays byte-identical and no
    temporary file is left."""
    inputs = str(tmp_path / 'in')
    os.makedirs(inputs)
    fixed, moving = _cli_pair(inputs, n=48)
    result = str(tmp_path / 'result')
    r = _cli(disk, 'PyCA.Apps.register', ['--fixed', fixed, '--moving', moving, '--out', result,
                                          '--method', 'greedy', '--iters', '3', '--quiet'])
    assert r.returncode == 0, r.stderr
    out = os.path.join(disk.dir, 'warped.' + fmt)
    args = ['--result', result, '--moving', moving, '--out', out]
    r = _cli(disk, 'PyCA.Apps.apply', args)
    assert r.returncode == 0, r.stderr
    assert os.path.isfile(out)
    before = _snapshot(disk.dir)
    with disk.full(room=2 << 10, limit=2 << 10) if disk.kind == 'tmpfs' else contextlib.nullcontext():
        r = _cli(disk, 'PyCA.Apps.apply', args, limit=2 << 10)
    line = _one_error_line(r, 'pyca-apply')
    assert 'warped' in line, line
    assert _snapshot(disk.dir) == before, 'the earlier output changed, or a stray file was left'
