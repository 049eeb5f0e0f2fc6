"""Peak memory of a registration, measured in a process of its own.

Each measurement is a fresh Python process that loads a saved pair, records
its resident set, registers the pair and reports its peak resident set
(``VmHWM``: the high-water mark of that process image, unlike ``ru_maxrss``,
which a child keeps from a larger parent across the exec), the wall time of
the registration call and the deformation error in the brain. PyCA's
methods and ANTs SyN (antspyx, its defaults; optional) run in the same
harness, so their peaks compare.

Used by ``./run bench --only memory`` (``bench_memory``: LDDMM, greedy and
ANTs SyN on the 1 mm MNI pair) and, from the command line, to calibrate the
table of ``PyCA.Apps.memory`` (measured peak beside the prediction)::

    python3 Benchmarks/memory_bench.py calibrate [--spacings 2,1] [--methods lddmm,greedy,elastic] [k=json ...]
    python3 Benchmarks/memory_bench.py make SPACING DIR        # the pair, as .npy files
    python3 Benchmarks/memory_bench.py run METHOD DIR [k=json ...]   # one measurement (JSON line)
    python3 Benchmarks/memory_bench.py ants DIR                # ANTs SyN's

The pair is the demo's (``PyCA.Apps.demo.make_phantom_pair``: the MNI
template at SPACING mm and the phantom deformation of seed 0).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


def vm_hwm():
    """The process's peak resident set in bytes (PyCA.Apps.memory.peak_rss: VmHWM)."""
    from PyCA.Apps.memory import peak_rss
    return peak_rss()


def vm_rss():
    """The process's resident set in bytes (VmRSS), 0 where unknown."""
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def make_pair(spacing, d):
    """Writes the demo's pair at ``spacing`` mm into folder ``d`` (fixed, moving, mask, the
    true h as .npy; the grid as grid.json)."""
    import numpy as np
    from PyCA.Apps.demo import make_phantom_pair
    os.makedirs(d, exist_ok=True)
    fixed, moving, mask, h_true, _ = make_phantom_pair(float(spacing), seed=0)
    for name, obj in (('fixed', fixed), ('moving', moving), ('mask', mask)):
        np.save(os.path.join(d, name + '.npy'), np.array(obj.asnp(), copy=True))
    np.save(os.path.join(d, 'htrue.npy'), np.array(h_true.asnp(), copy=True))
    g = fixed.grid()
    with open(os.path.join(d, 'grid.json'), 'w') as f:
        json.dump(dict(size=[int(v) for v in g.size()], spacing=[float(v) for v in g.spacing()],
                       origin=[float(v) for v in g.origin()]), f)


def _error(h, d, spacing):
    """Mean and 95th percentile of |h - h_true| in mm inside the brain mask."""
    import numpy as np
    ht = np.load(os.path.join(d, 'htrue.npy'))
    mask = np.load(os.path.join(d, 'mask.npy')) > 0.5
    sp = np.asarray(spacing, np.float64).reshape(3, 1, 1, 1)
    err = np.sqrt((((h - ht) * sp) ** 2).sum(axis=0))[mask]
    return float(err.mean()), float(np.percentile(err, 95))


def run_pyca(method, d, params):
    """One PyCA registration of the pair in ``d`` (in this process); returns the record."""
    import numpy as np
    import PyCA.Core as ca
    from PyCA.Apps import register
    with open(os.path.join(d, 'grid.json')) as f:
        gi = json.load(f)
    grid = ca.GridInfo(ca.Vec3Di(*gi['size']), ca.Vec3Df(*gi['spacing']), ca.Vec3Df(*gi['origin']))
    ims = []
    for name in ('fixed', 'moving'):
        im = ca.Image3D(grid, ca.MEM_HOST)
        im.asnp()[...] = np.load(os.path.join(d, name + '.npy'))
        ims.append(im)
    before = vm_rss()
    t0 = time.perf_counter()
    r = register(ims[0], ims[1], method=method, quiet=True, **params)
    seconds = time.perf_counter() - t0
    peak = vm_hwm()
    h = np.array(r.h.asnp(), copy=True)
    iters = int(r.iterations)
    del r
    mean, p95 = _error(h, d, gi['spacing'])
    return dict(method=method, params=params, peak_bytes=peak, rss_before_bytes=before, seconds=seconds,
                iterations=iters, error_mean_mm=mean, error_p95_mm=p95, size=gi['size'])


def run_ants(d):
    """ANTs SyN (antspyx, ``type_of_transform='SyN'``, its defaults) on the pair in ``d``."""
    import numpy as np
    import ants
    with open(os.path.join(d, 'grid.json')) as f:
        gi = json.load(f)
    sp = tuple(gi['spacing'])
    fixed, moving = (ants.from_numpy(np.load(os.path.join(d, n + '.npy')).astype(np.float32), spacing=sp)
                     for n in ('fixed', 'moving'))
    before = vm_rss()
    t0 = time.perf_counter()
    reg = ants.registration(fixed, moving, type_of_transform='SyN')
    seconds = time.perf_counter() - t0
    peak = vm_hwm()
    # the error of ANTs' forward transform: its H-field by the peers' validated conversion
    # (Benchmarks/peers.py: ants_hfield, index images through apply_transforms)
    sys.path.insert(0, os.path.dirname(HERE))
    from peers import ants_hfield
    h = np.stack(ants_hfield(ants, fixed, reg['fwdtransforms'], tuple(gi['size'])))
    mean, p95 = _error(h, d, sp)
    return dict(method='ants-SyN', params={'type_of_transform': 'SyN'}, peak_bytes=peak,
                rss_before_bytes=before, seconds=seconds, error_mean_mm=mean, error_p95_mm=p95,
                size=gi['size'])


def measure(kind, d, params=None, nthreads=2, timeout=1800):
    """One measurement in a fresh process: ``kind`` is a PyCA method or 'ants'. Returns the
    record (a dict) or raises RuntimeError with the child's last error lines."""
    env = dict(os.environ, OMP_NUM_THREADS=str(nthreads), ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS=str(nthreads))
    cmd = [sys.executable, HERE] + (['ants', d] if kind == 'ants' else
                                    ['run', kind, d] + ['%s=%s' % (k, json.dumps(v))
                                                        for k, v in (params or {}).items()])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith('{')]
    if p.returncode != 0 or not lines:
        raise RuntimeError('%s: %s' % (kind, (p.stderr or p.stdout)[-600:]))
    return json.loads(lines[-1])


def calibrate(spacings=(2.0, 1.0), methods=('lddmm', 'greedy', 'elastic'), params=None, work=None):
    """Measured peak beside ``PyCA.Apps.memory.predict_peak`` for each method and spacing;
    prints a table and returns the rows."""
    import PyCA.Core as ca
    from PyCA.Apps.memory import predict_peak, format_bytes
    params = dict(params or {})
    work = work or tempfile.mkdtemp(prefix='pyca-memory-')
    rows = []
    print('%-8s %-14s %11s %11s %8s' % ('method', 'grid', 'measured', 'predicted', 'error'), flush=True)
    for sp in spacings:
        d = os.path.join(work, 'pair%g' % sp)
        if not os.path.exists(os.path.join(d, 'grid.json')):
            make_pair(sp, d)
        with open(os.path.join(d, 'grid.json')) as f:
            gi = json.load(f)
        grid = ca.GridInfo(ca.Vec3Di(*gi['size']), ca.Vec3Df(*gi['spacing']), ca.Vec3Df(*gi['origin']))
        for m in methods:
            r = measure(m, d, params)
            pr = predict_peak(m, grid, params, 'cpu')
            err = (pr.host_bytes - r['peak_bytes']) / r['peak_bytes']
            print('%-8s %-14s %11s %11s %+7.1f%%' % (m, 'x'.join(map(str, gi['size'])),
                                                     format_bytes(r['peak_bytes']), format_bytes(pr.host_bytes),
                                                     100 * err), flush=True)
            rows.append(dict(r, predicted_bytes=pr.host_bytes, error=err))
    return rows


def bench_memory(rows, nthreads, spacing_mm=1.0):
    """``./run bench`` group ``memory``: the peak resident set, wall time and error of LDDMM,
    greedy (defaults) and ANTs SyN (antspyx defaults; skipped without antspyx) on the demo's
    pair at ``spacing_mm`` (1 mm: 197x233x189), each in a process of its own, with PyCA's
    predicted peak beside PyCA's."""
    import PyCA.Core as ca
    from PyCA.Apps.memory import predict_peak
    work = tempfile.mkdtemp(prefix='pyca-memory-bench-')
    d = os.path.join(work, 'pair')
    make_pair(spacing_mm, d)
    with open(os.path.join(d, 'grid.json')) as f:
        gi = json.load(f)
    grid = ca.GridInfo(ca.Vec3Di(*gi['size']), ca.Vec3Df(*gi['spacing']), ca.Vec3Df(*gi['origin']))
    size = 'x'.join(map(str, gi['size']))
    results = {}
    for kind in ('lddmm', 'greedy', 'ants'):
        if kind == 'ants':
            try:
                import ants  # noqa: F401
            except ImportError:
                print('  # memory: antspyx is not installed: no ANTs SyN row', flush=True)
                continue
        try:
            results[kind] = measure(kind, d, nthreads=nthreads)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            rows.warn('memory: %s failed: %s' % (kind, e))
    ants_r = results.get('ants')
    for kind, r in results.items():
        label = {'lddmm': 'memory: PyCA LDDMM (defaults)', 'greedy': 'memory: PyCA greedy (defaults)',
                 'ants': 'memory: ANTs SyN (antspyx defaults)'}[kind]
        pred = ''
        if kind != 'ants':
            p = predict_peak(kind, grid, {}, 'cpu').host_bytes
            pred = ', predicted %.2f GB (%+.1f %%)' % (p / 1e9, 100.0 * (p - r['peak_bytes']) / r['peak_bytes'])
        note = ('peak RSS %.2f GB%s, error %.2f / %.2f mm (mean / p95), %s'
                % (r['peak_bytes'] / 1e9, pred, r['error_mean_mm'], r['error_p95_mm'],
                   'ANTs SyN peak %.2f GB' % (ants_r['peak_bytes'] / 1e9) if ants_r and kind != 'ants' else
                   'one run, a process of its own'))
        peer = (ants_r['seconds'], ants_r['seconds']) if ants_r and kind != 'ants' else None
        row = rows.add(label, size, (r['seconds'], r['seconds']), peer, 'ANTs SyN (antspyx defaults)', note=note)
        row.update(peak_rss_bytes=r['peak_bytes'], error_mean_mm=r['error_mean_mm'],
                   error_p95_mm=r['error_p95_mm'],
                   peer_peak_rss_bytes=ants_r['peak_bytes'] if ants_r and kind != 'ants' else None)
    return results


def _kv(args):
    return {a.split('=', 1)[0]: json.loads(a.split('=', 1)[1]) for a in args}


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    cmd = argv[0]
    if cmd == 'make':
        make_pair(float(argv[1]), argv[2])
    elif cmd == 'run':
        print(json.dumps(run_pyca(argv[1], argv[2], _kv(argv[3:]))))
    elif cmd == 'ants':
        print(json.dumps(run_ants(argv[1])))
    elif cmd == 'calibrate':
        spacings, methods, rest = (2.0, 1.0), ('lddmm', 'greedy', 'elastic'), []
        i = 1
        while i < len(argv):
            if argv[i] == '--spacings':
                spacings = tuple(float(v) for v in argv[i + 1].split(','))
                i += 2
            elif argv[i] == '--methods':
                methods = tuple(argv[i + 1].split(','))
                i += 2
            else:
                rest.append(argv[i])
                i += 1
        calibrate(spacings, methods, _kv(rest))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
