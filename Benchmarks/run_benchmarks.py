#!/usr/bin/env python3
"""PyCA benchmarks: our median time beside a peer's, measured in the same run.

Each row names the operation and size, our median, the peer's median (what a
user would pick instead: NumPy, or plain allocation for the pool rows) and
the ratio peer/ours (> 1 means we are faster). A few derived lines (marked
"->", e.g. Add's bandwidth as a share of Copy's) are computed from rows of the
same run. Results also go to a JSON file. Timings are medians over
repetitions; nothing here asserts a time. Rows whose operator does not exist
in this build are skipped with a note.

    ./run bench [--reps N] [--size 256] [--json bench-results.json] [--only SUBSTR]
"""
import argparse
import gc
import json
import os
import platform
import subprocess
import time

import numpy as np

import PyCA.Core as ca


def median_time(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        gc.disable()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        gc.enable()
    times.sort()
    return times[len(times) // 2], times[0]


def median_times_interleaved(fns, reps, warmup=2):
    """Medians of several functions timed in alternation (f0, f1, f0, f1, ...),
    so that a ratio between them sees the same machine conditions."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, t in zip(fns, times):
            gc.disable()
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
            gc.enable()
    out = []
    for t in times:
        t.sort()
        out.append((t[len(t) // 2], t[0]))
    return out


class Rows:
    def __init__(self):
        self.rows = []
        self.derived = []

    def add(self, name, size, ours, peer, peer_name, note=''):
        row = dict(name=name, size=size, ours_median_s=ours[0], ours_min_s=ours[1],
                   peer=peer_name, peer_median_s=peer[0], peer_min_s=peer[1],
                   ratio_peer_over_ours=peer[0] / ours[0] if ours[0] > 0 else float('nan'),
                   note=note)
        self.rows.append(row)
        print('%-46s %-7s %10.3f ms  %-28s %10.3f ms  %6.2fx' % (
            name, size, ours[0] * 1e3, peer_name, peer[0] * 1e3, row['ratio_peer_over_ours']),
            flush=True)
        return row

    def derive(self, name, value, unit, text):
        """A figure computed from rows of this run (e.g. a bandwidth ratio)."""
        self.derived.append(dict(name=name, value=value, unit=unit, text=text))
        print('  -> %s' % text, flush=True)


def optional(name):
    """ca.<name>, or None (with a note) when this build does not have it yet."""
    fn = getattr(ca, name, None)
    if fn is None:
        print('(skipped: PyCA.Core has no %s)' % name, flush=True)
    return fn


def try_time(fn, reps, what):
    """median_time(fn), or None (with a note) when fn raises TypeError
    (the overload does not exist in this build)."""
    try:
        fn()
    except TypeError as e:
        print('(skipped %s: %s)' % (what, str(e).splitlines()[0]), flush=True)
        return None
    return median_time(fn, reps)


def bench_python(rows, n, reps, only):
    size = '%d^3' % n
    grid = ca.GridInfo(ca.Vec3Di(n, n, n))
    rng = np.random.default_rng(0)
    nbytes = n ** 3 * 4

    def want(name):
        return only is None or only.lower() in name.lower()

    # --- allocation: Image3D vs ManagedImage3D from a warm pool (Python) ---
    if want('alloc'):
        def create_plain():
            im = ca.Image3D(grid, ca.MEM_HOST)
            ca.SetMem(im, 1.0)  # first write of every voxel
            del im

        ca.ThreadMemoryManager.init(grid, ca.MEM_HOST, 2)
        try:
            def create_managed():
                im = ca.ManagedImage3D(grid, ca.MEM_HOST)
                ca.SetMem(im, 1.0)
                del im

            def create_numpy():
                a = np.empty((n, n, n), dtype=np.float32, order='F')
                a.fill(1.0)
                del a

            rows.add('Python: ManagedImage3D create+write+free', size,
                     median_time(create_managed, reps), median_time(create_plain, reps),
                     'Image3D (unmanaged)', 'warm pool; first write = SetMem')
            rows.add('Python: Image3D create+write+free', size,
                     median_time(create_plain, reps), median_time(create_numpy, reps),
                     'numpy.empty + fill')
        finally:
            ca.ThreadMemoryManager.destroy()

    a_np = rng.standard_normal((n, n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n, n), dtype=np.float32)
    a = ca.Image3D(grid, ca.MEM_HOST)
    b = ca.Image3D(grid, ca.MEM_HOST)
    o = ca.Image3D(grid, ca.MEM_HOST)
    a.asnp()[...] = a_np
    b.asnp()[...] = b_np
    o_np = np.empty_like(a_np)

    copy_t = add_t = None
    if want('copy') or want('Add(out, a, b)'):
        # Copy and Add timed in alternation: the bandwidth ratio below compares
        # them under the same machine conditions.
        copy_t, add_t = median_times_interleaved([lambda: ca.Copy(o, a), lambda: ca.Add(o, a, b)], reps)
    if want('copy'):
        rows.add('Copy(out, a) [%.0f MB]' % (nbytes / 1e6), size, copy_t,
                 median_time(lambda: np.copyto(o_np, a_np), reps), 'numpy.copyto')
    if want('Add(out, a, b)'):
        rows.add('Add(out, a, b)', size, add_t,
                 median_time(lambda: np.add(a_np, b_np, out=o_np), reps), 'numpy.add(a, b, out=o)')
        # Add moves three arrays (two reads, one write), Copy two: compare bytes/s.
        add_bw, copy_bw = 3 * nbytes / add_t[0], 2 * nbytes / copy_t[0]
        rows.derive('Add bandwidth / Copy bandwidth', 100.0 * add_bw / copy_bw, '%',
                    'Add moves %.1f GB/s = %.0f%% of Copy\'s %.1f GB/s (medians, same run)'
                    % (add_bw / 1e9, 100.0 * add_bw / copy_bw, copy_bw / 1e9))
    if want('MulC_I(a, 1.0)'):
        rows.add('MulC_I(a, 1.0)', size, median_time(lambda: ca.MulC_I(a, 1.0), reps),
                 median_time(lambda: np.multiply(a_np, 1.0, out=a_np), reps), 'numpy.multiply(a, c, out=a)')

    # --- fused elementwise ops vs the NumPy expression (with its temporaries) ---
    c1, c2, c3 = 0.75, -1.25, 0.5
    fused = [
        ('Add_MulC', 'Add_MulC(o, a, b, c) [a + b*c]', lambda f: f(o, a, b, c1),
         lambda: o_np.__setitem__(Ellipsis, a_np + b_np * np.float32(c1)), 'o[...] = a + b*c'),
        ('MulC_Add_MulC', 'MulC_Add_MulC(o, a, ca, b, cb) [a*ca + b*cb]', lambda f: f(o, a, c1, b, c2),
         lambda: o_np.__setitem__(Ellipsis, a_np * np.float32(c1) + b_np * np.float32(c2)),
         'o[...] = a*ca + b*cb'),
        ('AddCMulCAddC', 'AddCMulCAddC(o, a, p, q, r) [(a+p)*q + r]', lambda f: f(o, a, c1, c2, c3),
         lambda: o_np.__setitem__(Ellipsis, (a_np + np.float32(c1)) * np.float32(c2) + np.float32(c3)),
         'o[...] = (a+p)*q + r'),
    ]
    # --- reductions (accumulated in double; NumPy's float32 peers) ---
    reductions = [
        ('Sum', 'Sum(a) [double accumulation]', lambda f: f(a), lambda: np.sum(a_np),
         'numpy.sum(a) [float32]'),
        ('Sum2', 'Sum2(a) [double accumulation]', lambda f: f(a), lambda: np.vdot(a_np, a_np),
         'numpy.vdot(a, a) [float32]'),
        ('Dot', 'Dot(a, b) [double accumulation]', lambda f: f(a, b), lambda: np.vdot(a_np, b_np),
         'numpy.vdot(a, b) [float32]'),
        ('MinMax', 'MinMax(a) [one pass]', lambda f: f(a), lambda: (a_np.min(), a_np.max()),
         '(a.min(), a.max())'),
        ('Max', 'Max(a) [reduction]', lambda f: f(a), lambda: a_np.max(), 'a.max()'),
        ('L1', 'L1(a) [|a|, double accumulation]', lambda f: f(a), lambda: np.abs(a_np).sum(),
         'numpy.abs(a).sum()'),
        ('LInf', 'LInf(a) [max |a|]', lambda f: f(a), lambda: max(a_np.max(), -a_np.min()),
         'max(a.max(), -a.min())'),
    ]
    for fname, label, call, peer, peer_name in fused + reductions:
        if not want(label):
            continue
        fn = optional(fname)
        if fn is None:
            continue
        ours = try_time(lambda: call(fn), reps, label)
        if ours is not None:
            rows.add(label, size, ours, median_time(peer, reps), peer_name)


def bench_gpu(rows, n, reps, only):
    """Device rows (only with a CUDA device): each op on MEM_DEVICE data,
    synchronised (CheckCUDAError waits for the device), beside the same op
    on host memory (our CPU back end, what a user without a GPU runs)."""
    if ca.GetNumberOfCUDADevices() == 0:
        print('(GPU rows skipped: no CUDA device)', flush=True)
        return
    grid = ca.GridInfo(ca.Vec3Di(n, n, n))
    size = '%d^3' % n
    nbytes = n ** 3 * 4
    rng = np.random.default_rng(2)
    host = [ca.Image3D(grid, ca.MEM_HOST) for _ in range(3)]
    for h in host:
        h.asnp()[...] = rng.standard_normal((n, n, n), dtype=np.float32)
    dev = [ca.Image3D(grid, ca.MEM_DEVICE) for _ in range(3)]
    for d, h in zip(dev, host):
        ca.Copy(d, h)

    def synced(fn):
        def run():
            fn()
            ca.CheckCUDAError(__file__, 0)
        return run

    (da, db, do), (ha, hb, ho) = dev, host
    if only is None or 'gpu' in only.lower():
        copy_t, add_t = median_times_interleaved(
            [synced(lambda: ca.Copy(do, da)), synced(lambda: ca.Add(do, da, db))], reps)
        rows.add('GPU Copy(out, a) device->device', size, copy_t,
                 median_time(lambda: ca.Copy(ho, ha), reps), 'Copy on host (CPU)')
        rows.add('GPU Add(out, a, b)', size, add_t,
                 median_time(lambda: ca.Add(ho, ha, hb), reps), 'Add on host (CPU)')
        add_bw, copy_bw = 3 * nbytes / add_t[0], 2 * nbytes / copy_t[0]
        rows.derive('GPU Add bandwidth / GPU Copy bandwidth', 100.0 * add_bw / copy_bw, '%',
                    'GPU Add moves %.0f GB/s = %.0f%% of device copy\'s %.0f GB/s (medians, same run)'
                    % (add_bw / 1e9, 100.0 * add_bw / copy_bw, copy_bw / 1e9))
        for label, fn, hfn in [
                ('GPU Add_MulC(o, a, b, c)', lambda: ca.Add_MulC(do, da, db, 0.5),
                 lambda: ca.Add_MulC(ho, ha, hb, 0.5)),
                ('GPU Sum(a)', lambda: ca.Sum(da), lambda: ca.Sum(ha)),
                ('GPU Dot(a, b)', lambda: ca.Dot(da, db), lambda: ca.Dot(ha, hb)),
                ('GPU MinMax(a)', lambda: ca.MinMax(da), lambda: ca.MinMax(ha))]:
            rows.add(label, size, median_time(synced(fn), reps), median_time(hfn, reps),
                     'same op on host (CPU)')


def bench_cxx(rows, build_dir, reps, only):
    if only is not None and 'alloc' not in only.lower() and 'c++' not in only.lower():
        return
    exe = os.path.join(build_dir, 'bin', 'pyca_bench_alloc')
    if not os.path.exists(exe):
        print('(C++ allocation benchmark not built: %s)' % exe)
        return
    out = subprocess.run([exe, str(reps)], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith('{'):
            r = json.loads(line)
            res[r['name']] = r
    names = sorted(res)
    managed = [k for k in names if 'anaged' in k]
    plain = [k for k in names if 'anaged' not in k]
    if managed and plain:
        m, p = res[managed[0]], res[plain[0]]
        rows.add('C++: ManagedImage3D create+write+free', m.get('size', '256^3'),
                 (m['median_s'], m['min_s']), (p['median_s'], p['min_s']), 'Image3D (unmanaged)',
                 'warm pool')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build-dir', default='build')
    ap.add_argument('--reps', type=int, default=15)
    ap.add_argument('--size', type=int, default=256)
    ap.add_argument('--json', default='bench-results.json')
    ap.add_argument('--only', default=None, help='run rows whose name contains this text')
    args = ap.parse_args()

    print('PyCA benchmarks on %s, %d CPUs (OMP_NUM_THREADS=%s), numpy %s' % (
        platform.processor() or platform.machine(), os.cpu_count(),
        os.environ.get('OMP_NUM_THREADS', 'default'), np.__version__))
    print('%-46s %-7s %13s  %-28s %13s  %7s' % ('operation', 'size', 'ours (median)', 'peer',
                                                 'peer (median)', 'peer/ours'))
    rows = Rows()
    bench_cxx(rows, args.build_dir, args.reps, args.only)
    bench_python(rows, args.size, args.reps, args.only)
    bench_gpu(rows, args.size, args.reps, args.only)
    with open(args.json, 'w') as f:
        json.dump(dict(machine=platform.platform(), cpus=os.cpu_count(), numpy=np.__version__,
                       cuda_devices=ca.GetNumberOfCUDADevices(), rows=rows.rows,
                       derived=rows.derived), f, indent=2)
    print('results written to %s' % args.json)


if __name__ == '__main__':
    main()
