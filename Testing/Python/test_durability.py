"""Durability of every save in the library under ``kill -9``.

For each kind of save (PyCA.Common images and fields in every ITK format,
.mhd + .raw/.zraw pairs, .npy/.npz, PNG; PyCA.Display pictures;
PyCA.Apps.outputs.write_outputs; PyCA.Apps.atlas runs with checkpoints; the
FFTW wisdom file of the CPU fluid kernel) an "old" file A is written at the
target path, then a child process writes content B to the same path (over
and over) and is killed with SIGKILL after a seeded random delay spread over
a few write durations (measured first). After each kill the target must
exist and read back as exactly A or exactly B -- never a partial file.
Leftover temporaries are allowed, but only under the documented names
(``name.tmp-<pid>-<n>.<ext>``; the C++ whole-file saves' ``name.tmp-<pid>-<n>``), and
they never disturb a load of the target. A .mhd header and its data file
are two renames (PyCAIO module notes): each file must be one save's, whole;
a kill between the renames (new data, old header) must make the load refuse
the pair (sizes differ) or read the new voxels (same raw size), never
garbage. Beside the kills, a timing-free structural check: a save over an
open file leaves that file untouched and puts a new inode in place.

The children are forked from one "zygote" interpreter (this file run with
``--zygote``) that has imported PyCA, SimpleITK and matplotlib but never
runs anything multi-threaded itself, so a kill point costs a fork rather
than an interpreter start-up. No timing is asserted: a kill that lands
before the first write or after a write is as good as one in the middle.

PYCA_DURABILITY_KILLS raises the number of kill points per file kind
(default KILLS; the atlas and write_outputs kinds get a third / a half).
"""
import ctypes
import ctypes.util
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from types import SimpleNamespace

import numpy as np
import pytest

SEED = 20261201
KILLS = 24                 # kill points per file kind (PYCA_DURABILITY_KILLS overrides)
SPAN = 2.5                 # kill delays are uniform in [0, SPAN * one write's duration]
N3 = 32                    # cube side of the test volumes
CHILD_TIMEOUT = 120.0      # seconds to wait for a child's report (a hang, not a timing test)


def _kills():
    try:
        return max(1, int(os.environ.get('PYCA_DURABILITY_KILLS', KILLS)))
    except ValueError:
        return KILLS


TMP_RE = re.compile(r'\.tmp-\d+-\d+(\.|$)')        # PyCA.Common.PyCAIO._atomic_save
WISDOM_TMP_RE = re.compile(r'\.tmp-\d+-\d+$')       # AtomicFile.cxx (exportWisdom, writePLUNCStyle)
STAGE_RE = re.compile(r'\.tmp-\d+-\d+(\.|$)|^\.pyca-staging-')   # ... and PyCA.Apps.staging's folders


# --------------------------------------------------------------------------- data (both sides)

def _ca():
    import PyCA.Core as ca
    return ca


def _image(variant, n=N3, twod=False):
    ca = _ca()
    from PyCA.Common import ImFromNPArr
    rng = np.random.RandomState(1000 + variant)
    shape = (n, n) if twod else (n, n, n)
    a = rng.standard_normal(shape).astype(np.float32)
    return ImFromNPArr(a, ca.MEM_HOST, ca.Vec3Df(1.5, 1.25, 2.0), ca.Vec3Df(-3.0, 4.0, 5.5))


def _field(variant, n=N3):
    ca = _ca()
    from PyCA.Common import FieldFromNPArr
    rng = np.random.RandomState(2000 + variant)
    a = rng.standard_normal((n, n, n, 3)).astype(np.float32)
    return FieldFromNPArr(a, ca.MEM_HOST, ca.Vec3Df(1.5, 1.25, 2.0), ca.Vec3Df(-3.0, 4.0, 5.5))


def _save(kind, path, variant):
    """Writes content ``variant`` of ``kind`` to ``path`` (the save under test)."""
    import PyCA.Common as common
    if kind in ('nii', 'mha', 'nrrd', 'mhd', 'nii.gz', 'mhd.zraw'):
        common.SaveITKImage(_image(variant), path, kind in ('nii.gz', 'mhd.zraw'))
    elif kind in ('field.nii.gz', 'field.nrrd'):
        common.SaveITKField(_field(variant), path, kind.endswith('.gz'))
    elif kind == 'cxx.nii.gz':        # the C++ writer (ITKFileIO.cxx atomicWrite)
        _ca()._ITKFileIO.SaveImage(_image(variant), path, True)
    elif kind == 'cxx.field.nrrd':
        _ca()._ITKFileIO.SaveField(_field(variant), path, False)
    elif kind == 'npy':
        common.SaveImageNPY(_image(variant), path)
    elif kind == 'field.npz':
        common.SaveFieldNPZ(_field(variant), path)
    elif kind == 'png':
        common.SavePNGImage(_image(variant, 96, twod=True), path, bitDepth=16)
    elif kind == 'slice.png':
        from PyCA.Display import SaveSlice
        SaveSlice(path, _image(variant, 64, twod=True))
    elif kind == 'threepane.png':
        import matplotlib.pyplot as plt
        from PyCA.Display import SaveThreePaneArr
        fig, _ = SaveThreePaneArr(_image(variant, 16), path)
        plt.close(fig)
    elif kind == 'outputs':
        from PyCA.Apps.outputs import write_outputs
        fixed, moving, result = _registration(variant)
        write_outputs(path, result, fixed, moving, extra={'variant': variant}, title='durability')
    else:
        raise ValueError(kind)


def _registration(variant, n=24):
    """A fake 2-D registration result (write_outputs needs only these fields)."""
    from PyCA.Common import ImFromNPArr, FieldFromNPArr
    rng = np.random.RandomState(3000 + variant)
    fixed = ImFromNPArr(rng.random_sample((n, n)).astype(np.float32))
    moving = ImFromNPArr(rng.random_sample((n, n)).astype(np.float32))
    x, y = np.meshgrid(np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32), indexing='ij')
    d = rng.uniform(-0.8, 0.8, (2, n, n)).astype(np.float32)
    h = FieldFromNPArr(np.stack([x + d[0], y + d[1]], axis=-1))
    hinv = FieldFromNPArr(np.stack([x - d[0], y - d[1]], axis=-1))
    m = FieldFromNPArr(rng.standard_normal((n, n, 2)).astype(np.float32))
    result = SimpleNamespace(h=h, hinv=hinv, momentum=m, deformed=None, method='lddmm',
                             iterations=3, seconds_per_iter=0.5, seconds=1.5, device='cpu',
                             config={'variant': variant}, energy=[3.0 + variant, 2.0, 1.0],
                             energy_terms=None, scale_of_iter=None)
    return fixed, moving, result


# --------------------------------------------------------------------------- the zygote (child side)

def _zygote():
    """Reads one JSON command a line on stdin; forks a child for each, which
    prints ``GO <pid>`` when about to start and then does the work; prints
    ``DONE <pid> <wait status>`` once the child is gone."""
    import PyCA.Core  # noqa: F401
    import PyCA.Common  # noqa: F401
    import PyCA.Display  # noqa: F401
    import PyCA.Apps.outputs  # noqa: F401
    import PyCA.Apps.atlas  # noqa: F401
    import SimpleITK  # noqa: F401
    import PIL.Image  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import matplotlib.backends.backend_agg  # noqa: F401
    sys.stdout.write('READY\n')
    sys.stdout.flush()
    for line in sys.stdin:
        cmd = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _child(cmd)
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 3
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write('DONE %d %d\n' % (pid, status))
        sys.stdout.flush()


def _say(text):
    os.write(1, (text + '\n').encode())


def _child(cmd):
    for k, v in (cmd.get('env') or {}).items():
        os.environ[k] = v
    op, kind, path = cmd['op'], cmd.get('kind'), cmd.get('path')
    if op == 'save':               # loop: B, B, B, ... until killed (or `count` times)
        count = cmd.get('count')
        _say('GO %d' % os.getpid())
        t0, i = time.perf_counter(), 0
        while count is None or i < count:
            _save(kind, path, cmd['variant'])
            i += 1
        _say('TIME %.9f' % ((time.perf_counter() - t0) / max(i, 1)))
    elif op == 'wisdom':           # measure plans of new sizes, each saving the wisdom
        import PyCA.Core as ca
        _say('GO %d' % os.getpid())
        t0 = time.perf_counter()
        sizes = cmd['sizes']
        for n in sizes:
            k = ca.FluidKernelFFTCPU()
            k.setGrid(ca.GridInfo(ca.Vec3Di(n, n + 1, 1)))
        _say('TIME %.9f' % ((time.perf_counter() - t0) / max(len(sizes), 1)))
    elif op == 'wisdom_check':     # exit 0 when FFTW imports the file
        # the library PyCA.Core links (threaded wisdom needs the threads set up)
        lib = ctypes.CDLL(ctypes.util.find_library('fftw3f') or 'libfftw3f.so.3', mode=ctypes.RTLD_GLOBAL)
        for name in ('fftw3f_omp', 'fftw3f_threads'):
            try:
                ctypes.CDLL(ctypes.util.find_library(name) or 'lib%s.so.3' % name,
                            mode=ctypes.RTLD_GLOBAL).fftwf_init_threads()
                break
            except (OSError, AttributeError):
                pass
        lib.fftwf_import_wisdom_from_filename.argtypes = [ctypes.c_char_p]
        ok = lib.fftwf_import_wisdom_from_filename(path.encode())
        _say('GO %d' % os.getpid())
        _say('WISDOM %d' % ok)
    elif op == 'atlas':
        import PyCA.Apps.checkpoints as checkpoints
        from PyCA.Apps.atlas import build_atlas
        from PyCA.Parallel import SerialComm
        if cmd.get('trace'):           # when the checkpoints are written (to aim kills at them)
            real = checkpoints.write_checkpoint

            def traced(*a, **k):
                _say('CKPT %d %.9f' % (a[2], time.perf_counter() - t0))
                return real(*a, **k)
            checkpoints.write_checkpoint = traced
        _say('GO %d' % os.getpid())
        t0 = time.perf_counter()
        # one process, no MPI start-up in a forked child
        build_atlas(cmd['images'], out=path, resume=cmd['resume'], comm=SerialComm(), **ATLAS_KW)
        _say('TIME %.9f' % (time.perf_counter() - t0))
    else:
        raise ValueError(op)


# --------------------------------------------------------------------------- the parent side

class Zygote:
    def __init__(self, log):
        env = dict(os.environ, OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', MKL_NUM_THREADS='1',
                   MPLBACKEND='Agg', PYCA_FFTW_PLANNER='estimate', PYCA_FFTW_WISDOM='')
        self.log = log
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--zygote'],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(log, 'w'), env=env)
        self.buf = b''
        assert self._line() == 'READY', self._log()

    def _log(self):
        try:
            with open(self.log) as f:
                return f.read()[-4000:]
        except OSError:
            return ''

    def _line(self):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + CHILD_TIMEOUT
        while b'\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError('no answer from the zygote in %g s\n%s' % (CHILD_TIMEOUT, self._log()))
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError('the zygote died\n%s' % self._log())
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line.decode()

    def run(self, cmd, kill_after=None):
        """Runs cmd in a fresh child; with kill_after (seconds after its GO)
        SIGKILLs it. Returns (killed, the child's other output lines)."""
        self.proc.stdin.write((json.dumps(cmd) + '\n').encode())
        self.proc.stdin.flush()
        lines = []
        line = self._line()
        if line.startswith('GO '):
            pid = int(line.split()[1])
            if kill_after is not None:
                time.sleep(kill_after)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            line = self._line()
        while not line.startswith('DONE '):
            lines.append(line)
            line = self._line()
        status = int(line.split()[2])
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        ok = killed or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
        assert ok, 'child failed (status %d) on %r\n%s' % (status, cmd, self._log())
        return killed, lines

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def _time_of(lines):
    return [float(l.split()[1]) for l in lines if l.startswith('TIME ')][-1]


# --------------------------------------------------------------------------- readers (parent side)

def _read_image(path):
    from PyCA.Common import LoadITKImage
    im = LoadITKImage(path)
    return ('image', np.array(im.asnp()), tuple(im.spacing()), tuple(im.origin()))


def _read_field(path):
    from PyCA.Common import LoadITKField
    f = LoadITKField(path)
    return ('field', np.stack([np.array(c) for c in f.asnp()]), tuple(f.spacing()), tuple(f.origin()))


def _read_png(path):
    from PIL import Image
    with Image.open(path) as im:
        im.load()                 # decodes every row: a truncated PNG raises
        return ('png', np.asarray(im).copy(), im.mode)


#: summary.json's measurements of the process that wrote it (PyCA.Apps.memory):
#: they differ between two runs of the same variant
PROCESS_MEASURED = ('peak_rss_bytes', 'device_peak_bytes')


def _read_json(path, *bases):
    with open(path) as f:
        js = json.load(f)
    if isinstance(js, dict) and isinstance(js.get('memory'), dict):
        js['memory'] = {k: v for k, v in js['memory'].items() if k not in PROCESS_MEASURED}
    text = json.dumps(js, sort_keys=True)
    for base in bases:                          # the folder names in it
        text = text.replace(base, '<out>')
    return ('json', text)


def _reader(kind):
    from PyCA.Common import LoadImageNPY, LoadFieldNPZ, LoadPNGImage
    if kind in ('nii', 'mha', 'nrrd', 'mhd', 'nii.gz', 'mhd.zraw', 'cxx.nii.gz'):
        return _read_image
    if kind in ('field.nii.gz', 'field.nrrd', 'cxx.field.nrrd'):
        return _read_field
    if kind == 'npy':
        return lambda p: ('npy', np.array(LoadImageNPY(p).asnp()))
    if kind == 'field.npz':
        def rd(p):
            f = LoadFieldNPZ(p)
            return ('npz', np.stack([np.array(c) for c in f.asnp()]), tuple(f.spacing()), tuple(f.origin()))
        return rd
    if kind == 'png':
        return lambda p: ('pyca-png', np.array(LoadPNGImage(p).asnp())) + _read_png(p)
    return _read_png


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == 'f'))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _target_name(kind):
    return {'nii': 'im.nii', 'mha': 'im.mha', 'nrrd': 'im.nrrd', 'mhd': 'im.mhd', 'nii.gz': 'im.nii.gz',
            'mhd.zraw': 'im.mhd', 'field.nii.gz': 'f.nii.gz', 'field.nrrd': 'f.nrrd', 'npy': 'im.npy',
            'field.npz': 'f.npz', 'png': 'im.png', 'slice.png': 'slice.png',
            'threepane.png': 'three.png', 'cxx.nii.gz': 'c.nii.gz', 'cxx.field.nrrd': 'cf.nrrd'}[kind]


def _companions(kind):
    return {'mhd': ['im.raw'], 'mhd.zraw': ['im.zraw']}.get(kind, [])


def _delays(tag, count, duration):
    rng = random.Random('%d-%s' % (SEED, tag))
    d = [rng.uniform(0.0, SPAN * duration) for _ in range(count)]
    d[0] = 0.0                   # right away: before (or in) the first write
    return d


def _leftovers(folder, expected, pattern=TMP_RE):
    """Names in folder other than the expected ones; all must be temporaries."""
    extra = sorted(set(os.listdir(folder)) - set(expected))
    bad = [n for n in extra if not pattern.search(n)]
    assert not bad, 'unexpected files in %s: %s' % (folder, bad)
    return extra


REPORT = {}


# --------------------------------------------------------------------------- tests


FILE_KINDS = ['nii', 'nii.gz', 'mha', 'nrrd', 'field.nii.gz', 'field.nrrd', 'npy', 'field.npz',
              'png', 'slice.png', 'threepane.png', 'mhd', 'mhd.zraw', 'cxx.nii.gz', 'cxx.field.nrrd']


@pytest.fixture(scope='module')
def zygote(tmp_path_factory):
    z = Zygote(str(tmp_path_factory.mktemp('zygote') / 'zygote.log'))
    yield z
    z.close()


@pytest.fixture(scope='module', autouse=True)
def _print_report():
    yield
    if REPORT:
        lines = ['durability: kind, kills (landed while running), one write (s), leftover temporaries']
        for k, v in REPORT.items():
            lines.append('  %-14s %3d (%3d)  %.4f  %s' % (k, v['kills'], v['killed'], v['t'], v['left']))
        text = '\n'.join(lines)
        sys.stderr.write('\n' + text + '\n')
        out = os.environ.get('PYCA_DURABILITY_REPORT')
        if out:
            with open(out, 'a') as f:
                f.write(text + '\n')


def _skip_without_itk(kind):
    if kind.startswith('cxx.') and not hasattr(_ca(), '_ITKFileIO'):
        pytest.skip('PyCA built without ITK (USE_ITK=OFF): no _ITKFileIO')


@pytest.mark.parametrize('kind', FILE_KINDS)
def test_killed_save_leaves_old_or_new_file(zygote, tmp_path, kind):
    _skip_without_itk(kind)
    name = _target_name(kind)
    ref_a, ref_b, work = (tmp_path / d for d in ('a', 'b', 'work'))
    for d in (ref_a, ref_b, work):
        d.mkdir()
    _save(kind, str(ref_a / name), 0)          # the references, written in this process
    _save(kind, str(ref_b / name), 1)
    read = _reader(kind)
    A, B = read(str(ref_a / name)), read(str(ref_b / name))
    assert not _same(A, B)
    raw = {}
    for c in _companions(kind):                 # .mhd pairs: the bytes of each file
        for which, d in (('A', ref_a), ('B', ref_b)):
            raw[which, name] = (d / name).read_bytes()
            raw[which, c] = (d / c).read_bytes()

    target = str(work / name)
    _, lines = zygote.run(dict(op='save', kind=kind, path=target, variant=1, count=3))
    duration = _time_of(lines)
    count = _kills()
    killed = mixed = 0
    for i, delay in enumerate(_delays(kind, count, duration)):
        _save(kind, target, 0)                  # the old file, A
        was_killed, _ = zygote.run(dict(op='save', kind=kind, path=target, variant=1), kill_after=delay)
        killed += was_killed
        assert was_killed, 'a looping writer ended by itself'
        state = None
        if raw:                                 # each file of the pair is one save's, whole
            state = []
            for n in [name] + _companions(kind):
                got = (work / n).read_bytes()
                which = [w for w in 'AB' if raw[w, n] == got]
                assert which, 'kill %d (%.4f s): %s is neither the old nor the new file' % (i, delay, n)
                state.append(which[0] if len(which) == 1 else 'AB')
            hdr, dat = state
            if hdr != dat and 'AB' not in state:
                # header of one save, data of the other: the window between the two
                # renames that PyCAIO documents (the pair is not atomic); the header
                # then names another data size, and the load must refuse the mix
                mixed += 1
                from PyCA.Common import LoadITKImage
                with pytest.raises(OSError, match='interrupted save'):
                    LoadITKImage(target)
                continue
        got = read(target)
        assert _same(got, A) or _same(got, B), \
            'kill %d after %.4f s: %s reads back as neither the old nor the new content' % (i, delay, name)
    left = _leftovers(str(work), [name] + _companions(kind))
    for n in left:                              # a temporary is never mistaken for the target
        assert n != name and not n.startswith(name)
    _save(kind, target, 1)                      # a complete save repairs whatever a kill left
    assert _same(read(target), B)
    REPORT[kind] = dict(kills=count, killed=killed, t=duration, left='%d%s' % (
        len(left), (', mixed pair %d' % mixed) if raw else ''))


def _plunc(path, variant):
    a = _ca().Aff3Df()
    a.vector = _ca().Vec3Df(1.0 + variant, 2.0, 3.0)
    a.writePLUNCStyle(path)


@pytest.mark.parametrize('kind', FILE_KINDS + ['plunc'])
def test_save_replaces_the_file_never_rewrites_it(tmp_path, kind):
    """The structural half of atomicity, without any timing: a save over an
    existing file puts a new file in place (rename) and leaves the old one
    -- still open here -- untouched, so no moment shows a partial target."""
    _skip_without_itk(kind)
    name = 'm.txt' if kind == 'plunc' else _target_name(kind)
    target = str(tmp_path / name)
    save = _plunc if kind == 'plunc' else (lambda p, v: _save(kind, p, v))
    save(target, 0)
    names = [name] + _companions(kind)
    fds = {n: os.open(str(tmp_path / n), os.O_RDONLY) for n in names}
    try:
        before = {n: os.read(fds[n], 1 << 30) for n in names}
        save(target, 1)
        for n in names:
            os.lseek(fds[n], 0, os.SEEK_SET)
            assert os.read(fds[n], 1 << 30) == before[n], '%s was rewritten in place' % n
            assert os.fstat(fds[n]).st_ino != os.stat(str(tmp_path / n)).st_ino, '%s was not replaced' % n
    finally:
        for fd in fds.values():
            os.close(fd)


@pytest.mark.parametrize('compress', [False, True])
def test_mixed_mhd_pair_is_refused(tmp_path, compress):
    """The state a kill between the two renames of a .mhd save leaves (new
    data file, old header) is refused by the loader when the sizes differ,
    never read as garbage; with the same raw size it reads the new voxels."""
    import shutil
    from PyCA.Common import ImFromNPArr, LoadITKImage, SaveITKImage
    data = 'p.zraw' if compress else 'p.raw'
    for d, n in (('a', 8), ('b', 9), ('c', 8)):
        (tmp_path / d).mkdir()
        a = np.random.RandomState(n + len(d)).standard_normal((n, 7, 6)).astype(np.float32)
        SaveITKImage(ImFromNPArr(a), str(tmp_path / d / 'p.mhd'), compress)
    shutil.copy(str(tmp_path / 'b' / data), str(tmp_path / 'a' / data))      # other grid
    with pytest.raises(OSError, match=r"p\.mhd.*interrupted save"):
        LoadITKImage(str(tmp_path / 'a' / 'p.mhd'))
    shutil.copy(str(tmp_path / 'c' / 'p.mhd'), str(tmp_path / 'b' / 'p.mhd'))
    with pytest.raises(OSError, match=r"p\.mhd.*interrupted save"):
        LoadITKImage(str(tmp_path / 'b' / 'p.mhd'))
    if not compress:                            # same grid, raw: the header is the same file
        (tmp_path / 'd').mkdir()
        a = np.random.RandomState(99).standard_normal((8, 7, 6)).astype(np.float32)
        SaveITKImage(ImFromNPArr(a), str(tmp_path / 'd' / 'p.mhd'))
        shutil.copy(str(tmp_path / 'd' / data), str(tmp_path / 'c' / data))
        assert np.array_equal(np.array(LoadITKImage(str(tmp_path / 'c' / 'p.mhd')).asnp()), a)


OUTPUT_FILES = {'deformed.nii.gz': _read_image, 'hfield.nii.gz': _read_field, 'hinv.nii.gz': _read_field,
                'momentum.nii.gz': _read_field, 'jacdet.nii.gz': _read_image,
                'summary.png': _read_png, 'summary.json': None,
                'warp.nii.gz': _read_field, 'transform.json': None}
#: the same in both variants (same grids, no affine): still whole, old or new
SAME_IN_BOTH = ('transform.json',)


def test_killed_write_outputs_leaves_old_or_new_files(zygote, tmp_path):
    """write_outputs: every one of its files is the old run's or the new one's."""
    ref_a, ref_b, work = (str(tmp_path / d) for d in ('a', 'b', 'work'))
    _, lines = zygote.run(dict(op='save', kind='outputs', path=ref_a, variant=0, count=1))
    _, lines = zygote.run(dict(op='save', kind='outputs', path=ref_b, variant=1, count=1))
    duration = _time_of(lines)

    def read_all(d):
        out = {}
        for n, rd in OUTPUT_FILES.items():
            p = os.path.join(d, n)
            out[n] = _read_json(p, d, ref_a) if rd is None else rd(p)
        return out
    A, B = read_all(ref_a), read_all(ref_b)
    for n in OUTPUT_FILES:
        assert _same(A[n], B[n]) if n in SAME_IN_BOTH else not _same(A[n], B[n]), n
    count = max(4, _kills() // 2)
    killed = 0
    for i, delay in enumerate(_delays('outputs', count, duration)):
        os.makedirs(work, exist_ok=True)
        for n in OUTPUT_FILES:                  # A everywhere (summary.json names ref_a: fine)
            shutil.copyfile(os.path.join(ref_a, n), os.path.join(work, n))
        was_killed, _ = zygote.run(dict(op='save', kind='outputs', path=work, variant=1), kill_after=delay)
        killed += was_killed
        got = read_all(work)
        for n in OUTPUT_FILES:
            assert _same(got[n], A[n]) or _same(got[n], B[n]), \
                'kill %d after %.3f s: %s is neither the old nor the new file' % (i, delay, n)
    # a killed run leaves its staging folder (PyCA.Apps.staging); the next
    # run on this host removes those of processes that are gone
    left = _leftovers(work, list(OUTPUT_FILES), pattern=STAGE_RE)
    assert len([n for n in left if n.startswith('.pyca-staging-')]) <= 1, left
    REPORT['outputs'] = dict(kills=count, killed=killed, t=duration, left=len(left))


def test_write_outputs_replaces_its_files(tmp_path):
    """write_outputs over an earlier run's files: each is replaced (new
    inode), none rewritten in place (see test_save_replaces_the_file_never_rewrites_it)."""
    out = str(tmp_path / 'out')
    _save('outputs', out, 0)
    fds = {n: os.open(os.path.join(out, n), os.O_RDONLY) for n in OUTPUT_FILES}
    try:
        before = {n: os.read(fd, 1 << 30) for n, fd in fds.items()}
        _save('outputs', out, 1)
        for n, fd in fds.items():
            os.lseek(fd, 0, os.SEEK_SET)
            assert os.read(fd, 1 << 30) == before[n], '%s was rewritten in place' % n
            assert os.fstat(fd).st_ino != os.stat(os.path.join(out, n)).st_ino, '%s was not replaced' % n
    finally:
        for fd in fds.values():
            os.close(fd)
    assert sorted(os.listdir(out)) == sorted(OUTPUT_FILES)      # no temporaries left by a clean save


def _balanced(text):
    depth = 0
    for ch in text:
        depth += ch == '('
        depth -= ch == ')'
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.skipif(__import__("PyCA.Core", fromlist=["x"]).GetCPUFFTBackend() != "fftw", reason="FFTW wisdom: this build uses pocketfft")
def test_killed_wisdom_export_leaves_old_or_new_file(zygote, tmp_path):
    """PYCA_FFTW_PLANNER=measure saves FFTW wisdom ($PYCA_FFTW_WISDOM) after
    each new plan (FluidKernelFFTCPU.cxx exportWisdom): a kill leaves the old
    wisdom or a complete new one that FFTW imports."""
    path = str(tmp_path / 'wisdom' / 'fftwf-wisdom')
    env = dict(PYCA_FFTW_WISDOM=path, PYCA_FFTW_PLANNER='measure')
    _, lines = zygote.run(dict(op='wisdom', sizes=[6, 10, 14, 18], env=env))
    assert os.path.isfile(path)
    old = open(path, 'rb').read()
    duration = _time_of(lines)               # one plan measured and saved
    count = _kills()
    killed = 0
    for i, delay in enumerate(_delays('wisdom', count, duration)):
        with open(path, 'wb') as f:          # restore A
            f.write(old)
        sizes = [20 + 2 * ((i * 37 + j) % 120) for j in range(200)]   # new sizes: every plan saves
        was_killed, _ = zygote.run(dict(op='wisdom', sizes=sizes, env=env), kill_after=delay)
        killed += was_killed
        got = open(path, 'rb').read()
        if got != old:
            text = got.decode('ascii', 'replace')
            assert text.startswith('(fftw-') and text.rstrip().endswith(')') and _balanced(text), \
                'kill %d after %.4f s: the wisdom file is cut short' % (i, delay)
        _, lines = zygote.run(dict(op='wisdom_check', path=path))
        assert 'WISDOM 1' in lines, 'kill %d after %.4f s: FFTW cannot import the wisdom file' % (i, delay)
    left = _leftovers(os.path.dirname(path), ['fftwf-wisdom'], WISDOM_TMP_RE)
    REPORT['fftw wisdom'] = dict(kills=count, killed=killed, t=duration, left=len(left))


# --------------------------------------------------------------------------- atlas checkpoints

ATLAS_KW = dict(method='greedy', iters=3, quiet=True, checkpoint_every=1, warm_iters=4,
                register={'scales': [1], 'iters': [8]})
ATLAS_N = 3


def _atlas_subjects(folder, n=20):
    from PyCA.Common import ImFromNPArr, SaveITKImage
    x, y = np.meshgrid(np.arange(n, dtype=np.float64), np.arange(n, dtype=np.float64), indexing='ij')
    paths = []
    for i in range(ATLAS_N):
        cx, cy = n / 2 + (i - 1) * 1.5, n / 2 - (i - 1)
        a = np.exp(-((x - cx) ** 2 / 18.0 + (y - cy) ** 2 / 10.0)).astype(np.float32)
        p = os.path.join(folder, 'subject_%d.nii.gz' % i)
        SaveITKImage(ImFromNPArr(a), p, True)
        paths.append(p)
    return paths


def _check_atlas_dir(out, where):
    """state.json absent or valid, the checkpoint it names whole, every
    output present readable; returns the checkpointed iteration (0: none)."""
    from PyCA.Common import LoadITKImage, LoadITKField
    ck = os.path.join(out, 'checkpoint')
    state = os.path.join(ck, 'state.json')
    it = 0
    if os.path.exists(state):
        with open(state) as f:
            js = json.load(f)                       # a partial file would not parse
        it = int(js['iteration'])
        assert 1 <= it <= ATLAS_KW['iters'] and js['method'] == 'greedy' and js['n_subjects'] == ATLAS_N, where
        assert len(js['energies']) == it, where
        d = os.path.join(ck, js['folder'])
        a = LoadITKImage(os.path.join(d, 'atlas.nii.gz'))
        assert tuple(a.size()) == (20, 20, 1), where
        for i in range(ATLAS_N):
            f = LoadITKField(os.path.join(d, 'subject_%05d_state.nii.gz' % i))
            assert tuple(f.size()) == (20, 20, 1), where
        if os.path.isdir(ck):
            _leftovers(ck, ['state.json'] + [n for n in os.listdir(ck) if n.startswith('iter_')])
    if not os.path.isdir(out):
        return it
    for root, _, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            if TMP_RE.search(n):
                continue
            if n.endswith('_hfield.nii.gz') or n.endswith('_state.nii.gz'):
                LoadITKField(p)
            elif n.endswith('.nii.gz'):
                LoadITKImage(p)
            elif n.endswith('.png'):
                _read_png(p)
            elif n.endswith('.json'):
                with open(p) as f:
                    json.load(f)
            else:
                raise AssertionError('%s: unexpected file %s' % (where, p))
    return it


def test_atlas_cli_glob_skips_leftover_temporaries(tmp_path):
    """A leftover of a killed save beside the subjects (``name.tmp-<pid>-<n>.nii.gz``)
    is not taken for a subject by ``--images DIR/*.nii.gz``."""
    from PyCA.Apps.atlas import _expand
    for n in ('s0.nii.gz', 's1.nii.gz', 's1.tmp-123-0.nii.gz', 'state.tmp-9-12.json'):
        (tmp_path / n).write_bytes(b'x')
    got = [os.path.basename(p) for p in _expand([str(tmp_path / '*.nii.gz')])]
    assert got == ['s0.nii.gz', 's1.nii.gz']


def test_killed_atlas_run_resumes(zygote, tmp_path):
    """An atlas run (greedy, a checkpoint every iteration) killed at random
    moments (some of them aimed at the checkpoints), sometimes its resumed
    run killed too: after every kill state.json is absent or valid and names
    a whole checkpoint and every file present reads; resuming (resume=True,
    as --resume) then ends with the atlas of an uninterrupted run."""
    from PyCA.Common import LoadITKImage
    subj = tmp_path / 'subjects'
    subj.mkdir()
    images = _atlas_subjects(str(subj))
    ref = str(tmp_path / 'ref')
    _, lines = zygote.run(dict(op='atlas', images=images, path=ref, resume=False, trace=True))
    duration = _time_of(lines)
    ref_atlas = np.array(LoadITKImage(os.path.join(ref, 'atlas.nii.gz')).asnp())
    assert _check_atlas_dir(ref, 'reference') == ATLAS_KW['iters']

    def finished(out, where):
        a = np.array(LoadITKImage(os.path.join(out, 'atlas.nii.gz')).asnp())
        assert np.max(np.abs(a - ref_atlas)) <= 1e-6 * np.max(np.abs(ref_atlas)), where
        for k in range(ATLAS_KW['iters'] + 1):
            LoadITKImage(os.path.join(out, 'atlas_iter_%d.nii.gz' % k))
        for n in ('atlas_summary.png', 'atlas_summary.json'):
            assert os.path.isfile(os.path.join(out, n)), where

    ckpt = [float(l.split()[2]) for l in lines if l.startswith('CKPT ')]
    assert len(ckpt) == ATLAS_KW['iters']
    count = max(4, _kills() // 3)
    rng = random.Random('%d-atlas' % SEED)
    killed, seen, resumed_kills = 0, set(), 0
    for i in range(count):
        out = str(tmp_path / ('run%d' % i))
        # every other kill is aimed at the checkpoint phase (a few ms: the
        # registrations of these small subjects converge at once), the others
        # anywhere in the run (start-up, iteration 0, outputs)
        if i == 0:
            delay = 0.0
        elif i % 2:
            delay = rng.uniform(max(0.0, ckpt[0] - 0.01), ckpt[-1] + 0.02)
        else:
            delay = rng.uniform(0.0, 1.1 * duration)
        was_killed, _ = zygote.run(dict(op='atlas', images=images, path=out, resume=True),
                                   kill_after=delay)
        where = 'kill %d after %.4f s' % (i, delay)
        killed += was_killed
        seen.add(_check_atlas_dir(out, where))
        if was_killed and i % 3 == 2:      # the resumed run killed too
            delay2 = rng.uniform(0.0, duration)
            w2, _ = zygote.run(dict(op='atlas', images=images, path=out, resume=True), kill_after=delay2)
            resumed_kills += w2
            where += ', resumed and killed after %.4f s' % delay2
            seen.add(_check_atlas_dir(out, where))
        zygote.run(dict(op='atlas', images=images, path=out, resume=True))     # to the end
        assert _check_atlas_dir(out, where + ', resumed') == ATLAS_KW['iters'], where
        finished(out, where + ', resumed')
    REPORT['atlas'] = dict(kills=count, killed=killed, t=duration,
                           left='+%d kills of resumed runs; checkpoints seen %s' % (resumed_kills, sorted(seen)))


if __name__ == '__main__' and sys.argv[1:] == ['--zygote']:
    _zygote()
