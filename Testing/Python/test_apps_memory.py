"""PyCA.Apps.memory: the predicted peak memory of a registration against the
measured one, and the guard (``max_memory``, ``--max-memory``).

Each measured registration runs in a fresh Python process (so that its
``ru_maxrss`` belongs to that registration alone) on a smooth synthetic pair
of N^3 voxels, large enough that the method's fields dominate, with a short
schedule (scales [2, 1], 2 iterations each: the peak is the finest level's
buffers, reached at its first iteration). The check is on the *increase*
of the process's peak over its resident memory just before the registration
(the interpreter, PyCA and the two input images), the part the model
predicts from the grid and the method: ``predicted - python_baseline -
inputs`` within 15 % of ``ru_maxrss - rss_before``; with the default metric
('auto') at 97^3 (padded to 98^3) and 128^3, and 'ssd' (no metric scratch)
at 128^3. No timing assertions.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca
from PyCA.Apps import memory
from PyCA.Apps.memory import MemoryLimitError, parse_bytes, predict_peak

#: the registration of one synthetic pair in a fresh process; prints JSON
CHILD = r'''
import json, os, resource, sys
import numpy as np
import PyCA.Core as ca
from PyCA.Apps import register, memory
method, n, metric = sys.argv[1], int(sys.argv[2]), sys.argv[3]
grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.0, 1.0), ca.Vec3Df(0.0, 0.0, 0.0))
x = np.arange(n, dtype=np.float32) * np.float32(2 * np.pi / n)
def smooth_random(seed, shift=0.0):
    """A sum of 8 random low-frequency separable waves in [0, 1] (texture everywhere)."""
    rng = np.random.default_rng(seed)
    a = np.zeros((n, n, n), np.float32)
    for _ in range(8):
        f = rng.integers(1, 5, size=3).astype(np.float32)
        p = rng.uniform(0, 2 * np.pi, size=3).astype(np.float32)
        a += (np.sin(f[0] * (x - shift) + p[0])[:, None, None] * np.sin(f[1] * x + p[1])[None, :, None]
              * np.sin(f[2] * x + p[2])[None, None, :])
    return (a - a.min()) / (a.max() - a.min())
ims = []
for shift in (0.0, 0.05):
    im = ca.Image3D(grid, ca.MEM_HOST); im.asnp()[...] = smooth_random(0, shift); ims.append(im)
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
before = rss()
r = register(ims[0], ims[1], method=method, quiet=True, scales=[2, 1], iters=[2, 2], device='cpu',
             metric=metric)
peak = memory.peak_rss()    # VmHWM: ru_maxrss would carry pytest's size across the exec
p = memory.last_prediction()
print(json.dumps(dict(before=before, peak=peak, predicted=p.host_bytes, breakdown=p.breakdown,
                      padded=list(p.padded_size))))
'''


def _measure(method, n, metric='auto'):
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get('OMP_NUM_THREADS', '2'))
    out = subprocess.run([sys.executable, '-c', CHILD, method, str(n), metric], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads([ln for ln in out.stdout.splitlines() if ln.startswith('{')][-1])


@pytest.mark.skipif(bool(os.environ.get('PYCA_SANITIZED')),
                    reason="the sanitizers' shadow memory and quarantine are not PyCA's peak")
@pytest.mark.parametrize('method', ['lddmm', 'greedy', 'elastic'])
@pytest.mark.parametrize('n,metric', [(97, 'auto'), (128, 'auto'), (128, 'ssd')])
def test_prediction_within_15_percent_of_measured_peak(method, n, metric):
    r = _measure(method, n, metric)
    b = r['breakdown']
    predicted = r['predicted'] - b['python_baseline'] - b['inputs']
    measured = r['peak'] - r['before']
    assert abs(predicted - measured) <= 0.15 * measured, (
        '%s %d^3 %s (computed on %s): predicted increase %.1f MB, measured %.1f MB (%+.1f %%); items %s'
        % (method, n, metric, r['padded'], predicted / 1e6, measured / 1e6,
           100.0 * (predicted - measured) / measured, b))


def test_prediction_structure():
    g = predict_peak('lddmm', (256, 256, 256), device='gpu')
    assert g.device == 'gpu' and g.device_bytes > 0 and g.bytes == g.device_bytes
    c = predict_peak('lddmm', (256, 256, 256), device='cpu')
    assert c.device_bytes == 0 and c.bytes == c.host_bytes
    # more time steps, more fields; the padded grid is the one counted
    assert predict_peak('lddmm', (64, 64, 64), {'nsteps': 4}).host_bytes > \
        predict_peak('lddmm', (64, 64, 64), {'nsteps': 2}).host_bytes
    p = predict_peak('greedy', (197, 233, 189))
    assert p.padded_size == (200, 240, 192) and p.breakdown['padded_inputs'] > 0
    assert predict_peak('elastic', (197, 233, 189)).padded_size == (197, 233, 189)
    assert predict_peak('greedy', (64, 64, 64), {'metric': 'ssd'}).host_bytes < \
        predict_peak('greedy', (64, 64, 64), {'metric': 'lncc'}).host_bytes
    assert 'GiB' in memory.format_bytes(8 * 2 ** 30)


def test_prediction_counts_the_kept_path():
    """path_max_mb: LDDMM's kept m_n, v_n (2 (nsteps - 1) fields of the padded
    grid) are counted where they fit, and not where they do not (a 1 mm brain)."""
    def fields(size, **cfg):
        p = predict_peak('lddmm', size, cfg)
        n = p.padded_size[0] * p.padded_size[1] * p.padded_size[2]
        return p.breakdown['method_fields'] / (memory.FIELD_BYTES * n)
    assert fields((97, 115, 97)) - fields((97, 115, 97), path_max_mb=0) == pytest.approx(2.0)
    assert fields((97, 115, 97), nsteps=4) - fields((97, 115, 97), nsteps=4, path_max_mb=0) == pytest.approx(6.0)
    assert fields((97, 115, 97), nsteps=6) == fields((97, 115, 97), nsteps=6, path_max_mb=0)  # 10 > 128 MiB
    assert fields((197, 233, 189)) == fields((197, 233, 189), path_max_mb=0)
    # the heun adjoint keeps only m_n (its v_n are already held)
    assert fields((97, 115, 97), adjoint='heun') - fields((97, 115, 97), adjoint='heun', path_max_mb=0) \
        == pytest.approx(1.0)


def test_parse_bytes():
    assert parse_bytes(None) is None and parse_bytes('auto') is None
    assert parse_bytes(0) == 0 and parse_bytes(False) == 0 and parse_bytes('0') == 0
    assert parse_bytes('8G') == 8 * 2 ** 30 and parse_bytes('512M') == 512 * 2 ** 20
    assert parse_bytes('1.5GiB') == int(1.5 * 2 ** 30) and parse_bytes(12345) == 12345
    for bad in ('lots', '-1G', True, -5):
        with pytest.raises(ValueError):
            parse_bytes(bad)


def _pair(n=24):
    grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.0, 1.0), ca.Vec3Df(0.0, 0.0, 0.0))
    ims = []
    for s in (0.0, 0.5):
        im = ca.Image3D(grid, ca.MEM_HOST)
        idx = np.indices((n, n, n), dtype=np.float32)
        im.asnp()[...] = np.exp(-((idx - n / 2.0 - s) ** 2).sum(axis=0) / (n * n / 16.0))
        ims.append(im)
    return ims


@pytest.mark.parametrize('method', ['lddmm', 'greedy', 'elastic'])
def test_guard_refuses_before_any_work(method, monkeypatch):
    from PyCA.Apps import register, multiscale
    fixed, moving = _pair()

    def no_work(*a, **k):
        raise AssertionError('the schedule was built: the guard came too late')
    monkeypatch.setattr(multiscale, 'make_multiscale', no_work)
    with pytest.raises(MemoryLimitError) as e:
        register(fixed, moving, method=method, quiet=True, max_memory='1M')
    text = str(e.value)
    assert '\n' not in text and 'this %s job' % method in text and '1.0 MiB' in text
    # a bad value is a configuration error, and 0 switches the check off
    with pytest.raises(ValueError, match='max_memory'):
        register(fixed, moving, method=method, quiet=True, max_memory='lots')


def test_guard_off_and_generous_limit_run():
    from PyCA.Apps import register
    fixed, moving = _pair(16)
    for mm in (0, '64G', None):
        r = register(fixed, moving, method='greedy', quiet=True, scales=[1], iters=[1], max_memory=mm)
        assert r.h is not None


def test_available_memory():
    a = memory.available_memory('cpu')
    assert a is None or a > 0
    if ca.GetNumberOfCUDADevices() == 0:
        assert memory.available_memory('gpu') is None


def test_cli_refuses_with_one_line(tmp_path):
    sitk = pytest.importorskip('SimpleITK')
    pytest.importorskip('matplotlib')
    fixed, moving = _pair(20)
    paths = []
    for name, im in (('f', fixed), ('m', moving)):
        img = sitk.GetImageFromArray(np.ascontiguousarray(np.asarray(im.asnp()).T))
        paths.append(str(tmp_path / (name + '.nii.gz')))
        sitk.WriteImage(img, paths[-1])
    out = subprocess.run([sys.executable, '-m', 'PyCA.Apps.register', '--fixed', paths[0], '--moving', paths[1],
                          '--out', str(tmp_path / 'out'), '--method', 'greedy', '--max-memory', '1M', '--quiet'],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith('pyca-register: error: this greedy job') and '--max-memory' in lines[0]
    assert not os.path.exists(str(tmp_path / 'out' / 'summary.json'))


def test_memory_cli_prints_prediction():
    out = subprocess.run([sys.executable, '-m', 'PyCA.Apps.memory', '--method', 'lddmm', '--size', '64', '64', '64',
                          '--device', 'gpu'], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert 'predicted peak device memory' in out.stdout and 'method_fields' in out.stdout


def test_summary_json_has_memory(tmp_path):
    pytest.importorskip('matplotlib')
    pytest.importorskip('SimpleITK')
    from PyCA.Apps import register
    from PyCA.Apps.outputs import write_outputs
    fixed, moving = _pair(16)
    r = register(fixed, moving, method='greedy', quiet=True, scales=[1], iters=[2])
    s = write_outputs(str(tmp_path / 'out'), r, fixed, moving)
    with open(os.path.join(str(tmp_path / 'out'), 'summary.json')) as f:
        mem = json.load(f)['memory']
    assert mem == s['memory']
    assert mem['predicted_host_bytes'] > 0 and mem['peak_rss_bytes'] > 0
    assert mem['predicted_device_bytes'] is None and mem['device_peak_bytes'] is None
    assert mem['padded_size'] == [16, 16, 16] and mem['breakdown']['method_fields'] > 0
