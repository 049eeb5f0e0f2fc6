#!/usr/bin/env python3
"""PyCA benchmarks: our median time beside a peer's, measured in the same run.

Each row names the operation and size, our median, the peer's median (what a
user would pick instead: NumPy, SciPy, SimpleITK or PyTorch, or plain
allocation for the pool rows) and the ratio peer/ours (> 1 means we are
faster; '-' where no peer exists). Rows that move a known number of bytes also
show our effective bandwidth (GB/s; the bytes per voxel counted are in the
row's note), and rows the original PyCA was measured on show its time (serial,
same machine kind) with our speed-up over it. A few derived lines (marked
"->", e.g. Add's or ApplyH's bandwidth as a share of Copy's, timed
interleaved) are computed from rows of the same run; "#" lines give the setup
shared by the rows below them. Results also go to a JSON file. Timings are
medians over repetitions (slow peers: as many as fit in a few seconds, at
least 3); nothing here asserts a time.

Rows:
  * allocation (Python and C++): ManagedImage3D from a warm pool vs Image3D;
  * elementwise, fused and reduction operators at --size (default 256^3) vs NumPy;
  * deformation: ApplyH (trilinear, CLAMP) at 128^3 and 256^3 vs SimpleITK
    WarpImageFilter, torch grid_sample and scipy map_coordinates; ComposeHH,
    Splat, Gradient, JacDetH, CoAd, UpdateInverse at 128^3 (vs torch
    grid_sample / its autograd adjoint, numpy.gradient where one exists);
  * file IO: LoadITKImage / SaveITKImage of a 256^3 NIfTI vs SimpleITK alone
    plus one copy (our save includes its temporary, fsync and rename);
  * fluid kernel: FluidKernelFFT applyInverseOperator / applyOperator at 128^3
    vs the six scipy.fft transforms the job needs, its first setGrid in a fresh
    process, and the GPU applyInverseOperator; with --fft-build-dir (a
    -DPYCA_FFT=pocketfft build), K with FFTW beside K with pocketfft;
  * filters and multiscale: GaussianFilterCPU 128^3 vs scipy gaussian_filter,
    MultiscaleResampler(Gauss)CPU.downsampleImage 256^3 -> 128^3 vs SciPy;
  * similarity metrics (PyCA.Apps.metrics, two smooth random 128^3 images):
    "metric LNCC energy+gradient 128^3 (r=2)" and "(r=4)", make_metric('lncc')
    .evaluate (energy + force, BoxFilter running sums) vs the same formula in
    float32 NumPy on scipy.ndimage.uniform_filter (5 + 4 box filters; energy
    and force checked to 1e-3), with the r=4 / r=2 time ratio ("->" line);
    "metric MI 128^3 (32 bins)", MutualInformation compute + gradient vs
    numpy.histogram2d + MI (plain histogram, no Parzen window, no gradient),
    and "... compute only" vs histogram2d + a cubic B-spline convolution of
    the table (a binned Parzen histogram);
  * GPU rows (only with a CUDA device): Copy/Add/fused/reductions, ApplyH,
    Gradient, ComposeHH at 256^3, Splat at 128^3 (also with values x 1e4),
    each beside the same call on host memory;
  * registration apps: "LDDMM iteration 128^3 (10 steps)", one iteration of
    PyCA.Apps.lddmm (shoot + energy + adjoint gradient) on the CPU, and its
    profile ("->" lines: the share of the iteration's time in FFTs, in
    interpolation, in splatting and in the rest, from wrappers timing every
    PyCA.Core call and the FluidKernelFFT methods); "peers"
    (Benchmarks/peers.py), the demo's problem (MNI 2 mm + the phantom warp,
    seed 7) in four pairs: clean, rescanned t1 (bias field, gamma, noise),
    T2-like t2 (make_phantom_pair(rescan=...); every tool with its MI
    option) and large deformation (max_disp_mm=24), registered by our LDDMM
    and greedy (defaults) beside ANTs (antsRegistrationSyN[s] stages),
    PICSL Greedy (WNCC 2x2x2 -sv -n 100x50x10), elastix (default bspline
    map) and NiftyReg (reg_f3d defaults), same thread count, each with wall
    time, the error of the recovered H-field against the known one (mean,
    p95 mm), min det J and folded voxels (det J <= 0), all in the brain,
    and a check of the H-field conversion of each tool (peers optional:
    a missing one skips its rows with a note; --peers-pairs or
    PYCA_BENCH_PEERS_PAIRS picks pairs, PYCA_BENCH_PEERS_TOOLS tools; on
    request only, --only peers: about half an hour); "memory" (on request,
    --only memory: Benchmarks/memory_bench.py), the peak resident set, wall
    time and error of LDDMM, greedy and ANTs SyN (antspyx defaults) on the
    demo's pair at 1 mm, each in a process of its own, with PyCA.Apps.memory's
    prediction beside ours; "busy machine: demo 4-mm
    LDDMM", the demo's 4-mm LDDMM in a fresh process while other processes
    keep every allowed CPU busy: the default (the adaptive team) and fixed
    teams (PYCA_ADAPTIVE_THREADS=0) beside OMP_NUM_THREADS=1, and on the
    idle machine the default beside fixed teams.

Before a peer is timed its result is compared with ours (max |diff| over the
range of ours; tolerance 1e-5 unless the note states another); a disagreement
prints a WARNING (also listed at the end and in the JSON). The peers run with
our OpenMP thread count (OMP_NUM_THREADS, else the CPUs we may use): torch's
set_num_threads and SimpleITK's global default thread count; SciPy is serial.
Rows whose operator, or whose peer (torch, SimpleITK, scipy), is missing are
skipped with a note. --only SUBSTR runs the rows whose name contains SUBSTR
(case-insensitive; e.g. ApplyH, Splat, GPU, alloc, Sum, ITKImage, metric, LNCC, MI,
LDDMM, busy; on request only: peers, ANTs, elastix, NiftyReg, memory).

    ./run bench [--reps N] [--size 256] [--json bench-results.json] [--only SUBSTR]
                [--peers-pairs clean,t1,t2,large]
"""
import argparse
import gc
import json
import os
import platform
import subprocess
import sys
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
        self.warnings = []

    def add(self, name, size, ours, peer, peer_name, note='', bytes_per_voxel=None, nvox=None,
            legacy=None, common=''):
        """One row: our (median, min) beside the peer's (None: no peer, ratio '-').
        bytes_per_voxel * nvox / our median gives the effective bandwidth
        column; legacy = (ms, text) is the original PyCA's figure from another
        machine and day: printed as a reference only, never divided into a
        ratio (only figures measured in this run are compared). note is printed under the row; common (the
        setup shared by several rows) is printed once and kept in every row's
        JSON note."""
        if common:
            if common != getattr(self, '_last_common', None):
                print('  # %s' % common, flush=True)
                self._last_common = common
            note = '%s; %s' % (note, common) if note else common
        gbps = (bytes_per_voxel * nvox / ours[0] / 1e9
                if bytes_per_voxel and nvox and ours[0] > 0 else None)
        row = dict(name=name, size=size, ours_median_s=ours[0], ours_min_s=ours[1],
                   peer=peer_name if peer is not None else None,
                   peer_median_s=peer[0] if peer is not None else None,
                   peer_min_s=peer[1] if peer is not None else None,
                   ratio_peer_over_ours=(peer[0] / ours[0] if peer is not None and ours[0] > 0
                                         else None),
                   bytes_per_voxel=bytes_per_voxel, ours_gb_per_s=gbps,
                   legacy_reference_ms_other_machine=legacy[0] if legacy else None,
                   note=note)
        self.rows.append(row)
        peer_txt = ('%-28s %10.3f ms  %6.2fx' % (peer_name, peer[0] * 1e3, row['ratio_peer_over_ours'])
                    if peer is not None else '%-28s %13s  %7s' % ('-', '-', '-'))
        extra = ''
        if gbps is not None:
            extra += '  %6.1f GB/s' % gbps
        if legacy:
            extra += '  [ref. original PyCA, another machine: %s ms]' % legacy[1]
        print('%-46s %-7s %10.3f ms  %s%s' % (name, size, ours[0] * 1e3, peer_txt, extra), flush=True)
        shown = note[:-len(common)].rstrip('; ') if common else note
        if shown:
            print('      note: %s' % shown, flush=True)
        return row

    def derive(self, name, value, unit, text):
        """A figure computed from rows of this run (e.g. a bandwidth ratio)."""
        self.derived.append(dict(name=name, value=value, unit=unit, text=text))
        print('  -> %s' % text, flush=True)

    def warn(self, text):
        """A problem the reader must see (e.g. a peer that disagrees with us)."""
        self.warnings.append(text)
        print('  WARNING: %s' % text, flush=True)


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
            rows.add(label, size, ours, median_time(peer, reps), peer_name,
                     legacy=LEGACY_MS.get((fname, n)))


# ---------------------------------------------------------------------------
# Deformation and differential operators (spec groups E, F, H, V)
# ---------------------------------------------------------------------------

# The original PyCA (serial), measured on this machine kind on another day:
# (ms, as printed). A reference figure of another machine and day, shown beside
# a row but never divided into a ratio: compare only what ran in one run.
LEGACY_MS = {
    ('ApplyH', 128): (15.6, '15.6'), ('ApplyH', 256): (158.0, '158'),
    ('Splat', 128): (27.0, '27'), ('ComposeHH', 128): (38.5, '37-40'),
    ('Gradient', 128): (1.9, '1.9'), ('Sum', 256): (13.9, '13.9'),
}

AGREE_TOL = 1e-5  # max |ours - peer| / (range of ours)


def omp_threads():
    """The OpenMP thread count our CPU back end uses: OMP_NUM_THREADS, or
    (libgomp's default) the CPUs this process may run on."""
    env = os.environ.get('OMP_NUM_THREADS', '').split(',')[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


_PEER_MODULES = {}


def peer_module(name, nthreads):
    """torch / SimpleITK / scipy.ndimage, imported once and set to our thread
    count, or None (with one note) when it is not installed."""
    if name in _PEER_MODULES:
        return _PEER_MODULES[name]
    mod = None
    try:
        if name == 'torch':
            import torch
            torch.set_num_threads(nthreads)
            mod = torch
        elif name == 'SimpleITK':
            import SimpleITK
            SimpleITK.ProcessObject.SetGlobalDefaultNumberOfThreads(nthreads)
            mod = SimpleITK
        elif name == 'scipy.ndimage':
            from scipy import ndimage
            mod = ndimage
    except Exception as e:  # not installed, or broken: only its rows are skipped
        print('(%s rows skipped: cannot import %s: %s)' % (name, name, e), flush=True)
    _PEER_MODULES[name] = mod
    return mod


def time_budget(fn, reps, budget_s=4.0):
    """median_time for a peer that may be slow: one warm-up run measures it,
    then at most budget_s of repetitions (at least 3, at most reps)."""
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter() - t0
    n = max(3, min(reps, int(budget_s / max(t1, 1e-9))))
    return median_time(fn, n, warmup=0 if t1 > 0.1 else 1)


def _axis_shape(d):
    return [(-1 if e == d else 1) for e in range(3)]


def smooth_displacement(n, rng, amp):
    """A smooth random displacement (3 arrays [x, y, z], float64, voxel units):
    u_d = amp * sin(pi x_d / (n-1)) * s_d, where s_d (|s_d| <= 1) is a sum of
    low-frequency sines of the two other coordinates. u_d vanishes on the
    faces normal to d and x_d + u_d is increasing in x_d (amp * pi / (n-1) < 1),
    so x + u stays inside [0, n-1]^3: every sample is inside the grid and the
    peers' border rules play no part in the comparisons."""
    L = n - 1.0
    c = np.arange(n, dtype=np.float64)
    u = []
    for d in range(3):
        o1, o2 = [e for e in range(3) if e != d]
        k1, k2 = rng.integers(1, 3, size=2)
        p1, p2 = rng.uniform(0.0, 2 * np.pi, size=2)
        s = 0.5 * (np.sin(2 * np.pi * k1 * c / L + p1).reshape(_axis_shape(o1))
                   + np.cos(2 * np.pi * k2 * c / L + p2).reshape(_axis_shape(o2)))
        env = np.sin(np.pi * c / L).reshape(_axis_shape(d))
        u.append(np.broadcast_to(amp * env * s, (n, n, n)))
    return u


def smooth_h(n, rng, amp=4.0):
    """identity + smooth_displacement, float32 arrays [x, y, z] inside [0, n-1]."""
    c = np.arange(n, dtype=np.float64)
    return [np.clip(c.reshape(_axis_shape(d)) + u, 0.0, n - 1.0).astype(np.float32)
            for d, u in enumerate(smooth_displacement(n, rng, amp))]


def smooth_image(n, rng, noise=0.05):
    """Low-frequency sines (3 separable terms, range about [-3, 3]) plus a
    little noise, float32 indexed [x, y, z]. Smooth, so that float32 rounding
    of sample coordinates (torch normalises them to [-1, 1]) stays far below
    the agreement tolerance."""
    c = np.arange(n, dtype=np.float32)
    img = np.zeros((n, n, n), np.float32)
    for _ in range(3):
        term = np.ones((1, 1, 1), np.float32)
        for d in range(3):
            k, p = rng.integers(1, 5), rng.uniform(0.0, 2 * np.pi)
            term = term * np.sin(np.float32(2 * np.pi * k / n) * c + np.float32(p)).reshape(_axis_shape(d))
        img += term
    img += np.float32(noise) * rng.standard_normal((n, n, n), dtype=np.float32)
    return img


def new_field(grid, comps, mem=None):
    f = ca.Field3D(grid, ca.MEM_HOST if mem is None else mem)
    for view, c in zip(f.asnp(), comps):
        view[...] = c
    return f


def new_image(grid, arr):
    im = ca.Image3D(grid, ca.MEM_HOST)
    im.asnp()[...] = arr
    return im


def agreement(rows, label, peer_name, ours, peer, where=None, tol=AGREE_TOL):
    """'agrees to X' text for a row note: max |ours - peer| over the range of
    ours (restricted to the boolean mask `where`), with a warning when it is
    above tol."""
    ours = np.asarray(ours, np.float64)
    peer = np.asarray(peer, np.float64)
    if ours.shape != peer.shape:
        rows.warn('%s: %s result has shape %s, ours %s' % (label, peer_name, peer.shape, ours.shape))
        return 'shape mismatch'
    rng_ = float(ours.max() - ours.min()) or 1.0
    diff = np.abs(ours - peer)
    if where is not None:
        diff = diff[where]
    rel = float(diff.max()) / rng_ if diff.size else 0.0
    if not np.isfinite(rel) or rel > tol:
        rows.warn('%s: %s disagrees with ours: max |diff| / range = %.2e > %.0e'
                  % (label, peer_name, rel, tol))
        return 'DISAGREES: max |diff|/range %.1e (tol %.0e)' % (rel, tol)
    return 'agrees: max |diff|/range %.1e (tol %.0e)' % (rel, tol)


# Effective bytes per voxel (float32): each array the operator reads or writes,
# counted once, except ApplyH, counted as the issue does (see the row notes).
BYTES = {
    'ApplyH': 16,         # field h read (12) + output written (4); the sampled image is not counted
    'ComposeHH': 36,      # h read (12), g read (12, sampled at h), f written (12)
    'Splat': 20,          # h read (12), values read (4), output written (4)
    'Gradient': 16,       # image read (4), gradient written (12)
    'JacDetH': 16,        # h read (12), determinant written (4)
    'CoAd': 36,           # g read (12), m read (12, sampled at g), n written (12)
    'UpdateInverse': 144,  # 3 iterations x 48: c read (12), w sampled at c (12), ginv0t sampled (12),
                           # ginv0t1 written (12); the first reads ginv0t as c (no copy)
}

#: The field kernels' memory-traffic floors at 128^3 (bytes per voxel that
#: must move: streamed inputs and outputs, and each sampled field once), for
#: the effective-bandwidth share of Copy's (a field Copy moves 24: 12 read,
#: 12 written). Write-allocate traffic is not counted, for Copy either.
FLOOR_LABEL = 'Field kernels: bandwidth share of Copy'
FLOORS = [
    # (label, bytes/voxel, what)
    ('ApplyH(field, PARTIAL_ZERO)', 36, 'h 12 + m sampled 12 + out 12'),
    ('ComposeHH [PARTIAL_ID]', 36, 'h 12 + g sampled 12 + f 12'),
    ('ComposeHV [PARTIAL_ID]', 36, 'v 12 + g sampled 12 + f 12'),
    ('UpdateInverse (numIter=1)', 48, 'ginv0t 12 + w sampled 12 + ginv0t sampled 12 + out 12'),
    ('CoAd [PARTIAL_ZERO]', 36, 'g 12 + m sampled 12 + n 12'),
    ('Splat (image)', 20, 'h 12 + values 4 + out 4'),
    ('SplatField', 36, 'h 12 + values 12 + out 12'),
    ('Gradient [central]', 16, 'image 4 + gradient 12'),
    ('JacDetH [central]', 16, 'h 12 + det 4'),
    ('JacobianNormSqr', 16, 'v 12 + out 4'),
]


def _torch_volume(torch, arr_xyz):
    """A (1, 1, D, H, W) tensor viewing an [x, y, z] array (W is our x): the
    transposed view of a Fortran-ordered array is C-contiguous (zero copy)."""
    return torch.from_numpy(np.ascontiguousarray(np.asarray(arr_xyz).T))[None, None]


def _torch_grid(torch, h, n, dtype=None):
    """grid_sample's grid for the H-field h (voxel coordinates [x, y, z]):
    (1, D, H, W, 3), last dim (x, y, z) normalised to [-1, 1]
    (align_corners=True: -1 and 1 are the centres of the first and last voxels),
    computed in float64, then float32 unless dtype is torch.float64."""
    g = np.stack([(2.0 / (n - 1)) * c.T.astype(np.float64) - 1.0 for c in h], axis=-1)
    return torch.from_numpy(g if dtype == torch.float64 else g.astype(np.float32))[None]


def bench_deform(rows, reps, only, nthreads):
    """ApplyH at 128^3 and 256^3 beside SimpleITK, torch and SciPy; the other
    deformation and differential operators at 128^3."""
    def want(name):
        return only is None or only.lower() in name.lower()

    thr = '%d threads for ours, torch and SimpleITK' % nthreads
    applyh_label = 'ApplyH(o, i, h) [linear, CLAMP]'
    for n in (128, 256):
        if want(applyh_label):
            bench_applyh(rows, n, reps, nthreads, applyh_label, thr)
    labels = ['ComposeHH(f, g, h) [PARTIAL_ID]', 'Splat(o, h, i) [normalize=False]',
              'Gradient(g, i) [central, BC_CLAMP]', 'JacDetH(j, h) [central, BC_APPROX]',
              'CoAd(n, g, m) [PARTIAL_ZERO]', 'UpdateInverse(..., numIter=3)']
    if any(want(l) for l in labels):
        bench_diff_ops(rows, 128, reps, nthreads, want, labels, thr)
    if want(FLOOR_LABEL):
        bench_field_floors(rows, 128, reps, thr)
    if want('Python call overhead'):
        g4 = ca.GridInfo(ca.Vec3Di(4, 4, 4))
        i4, o4, h4 = ca.Image3D(g4, ca.MEM_HOST), ca.Image3D(g4, ca.MEM_HOST), ca.Field3D(g4, ca.MEM_HOST)
        ca.SetMem(i4, 1.0)
        ca.SetToIdentity(h4)
        t = median_time(lambda: ca.ApplyH(o4, i4, h4, ca.BACKGROUND_STRATEGY_CLAMP), max(reps, 200))
        rows.derive('Python call overhead (ApplyH 4^3)', t[0] * 1e6, 'us',
                    'Python call overhead: ApplyH on a 4^3 grid takes %.1f us (SWIG dispatch, checks, '
                    '64 voxels): negligible beside the 128^3 rows' % (t[0] * 1e6))


def bench_field_floors(rows, n, reps, thr):
    """Each field kernel timed in alternation with a field Copy at n^3 (the
    same machine conditions): its effective bandwidth (FLOORS' bytes per
    voxel / its median) as a share of Copy's (24 B/voxel / Copy's median)."""
    rng = np.random.default_rng(31)
    grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.0, 1.0))
    g, h = new_field(grid, smooth_h(n, rng)), new_field(grid, smooth_h(n, rng))
    v = new_field(grid, [0.5 * u for u in smooth_displacement(n, rng, 2.0)])
    m = new_field(grid, [smooth_image(n, rng) for _ in range(3)])
    im = new_image(grid, smooth_image(n, rng))
    of, cp, sv = ca.Field3D(grid, ca.MEM_HOST), ca.Field3D(grid, ca.MEM_HOST), ca.Field3D(grid, ca.MEM_HOST)
    oi = ca.Image3D(grid, ca.MEM_HOST)
    pz, pid = ca.BACKGROUND_STRATEGY_PARTIAL_ZERO, ca.BACKGROUND_STRATEGY_PARTIAL_ID
    ops = {
        'ApplyH(field, PARTIAL_ZERO)': lambda: ca.ApplyH(of, m, h, pz),
        'ComposeHH [PARTIAL_ID]': lambda: ca.ComposeHH(of, g, h, pid),
        'ComposeHV [PARTIAL_ID]': lambda: ca.ComposeHV(of, g, v, 1.0, pid),
        'UpdateInverse (numIter=1)': lambda: ca.UpdateInverse(of, sv, h, v, 1),
        'CoAd [PARTIAL_ZERO]': lambda: ca.CoAd(of, g, m, pz),
        'Splat (image)': lambda: ca.Splat(oi, h, im, False),
        'SplatField': lambda: ca.SplatField(of, m, h),
        'Gradient [central]': lambda: ca.Gradient(of, im),
        'JacDetH [central]': lambda: ca.JacDetH(oi, h),
        'JacobianNormSqr': lambda: ca.JacobianNormSqr(oi, v),
    }
    nvox = n ** 3
    common = 'inputs: smooth H-fields (<= 4 voxels), smooth images; %s' % thr
    for label, nbytes, what in FLOORS:
        fn = ops[label]
        (t, tmin), (tc, _) = median_times_interleaved([fn, lambda: ca.Copy(cp, g)], reps)
        bw, bwc = nbytes * nvox / t / 1e9, 24 * nvox / tc / 1e9
        rows.add('%s %s' % (FLOOR_LABEL, label), '%d^3' % n, (t, tmin), None, '-',
                 'floor %d B/voxel (%s): %.1f GB/s = %.0f%% of a field Copy\'s %.1f GB/s '
                 '(Copy %.3f ms, same run)' % (nbytes, what, bw, 100.0 * bw / bwc, bwc, tc * 1e3),
                 nbytes, nvox, common=common)
        rows.derive('%s share of Copy' % label, 100.0 * bw / bwc, '%',
                    '%s: %.1f GB/s at its %d B/voxel floor = %.0f%% of Copy\'s %.1f GB/s'
                    % (label, bw, nbytes, 100.0 * bw / bwc, bwc))


def bench_applyh(rows, n, reps, nthreads, label, thr):
    size = '%d^3' % n
    nvox = n ** 3
    rng = np.random.default_rng(10 + n)
    sp = (1.0, 1.25, 0.8)  # anisotropic: checks the axis order of the SimpleITK displacement
    grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(*sp))
    img_np = smooth_image(n, rng)
    h_np = smooth_h(n, rng)
    im, h = new_image(grid, img_np), new_field(grid, h_np)
    o, cp = ca.Image3D(grid, ca.MEM_HOST), ca.Image3D(grid, ca.MEM_HOST)
    del img_np
    bg = ca.BACKGROUND_STRATEGY_CLAMP
    ca.ApplyH(o, im, h, bg, ca.INTERP_LINEAR)
    ours_out = np.array(o.asnp())
    if n >= 256:
        # Copy timed in alternation with ApplyH: the bandwidth share below sees the
        # same machine conditions. (At 128^3 a copy's 16 MB can sit in the L3
        # cache, so it is no DRAM reference: no share there.)
        ours, copy_t = median_times_interleaved(
            [lambda: ca.ApplyH(o, im, h, bg, ca.INTERP_LINEAR), lambda: ca.Copy(cp, im)], reps)
    else:
        ours, copy_t = median_time(lambda: ca.ApplyH(o, im, h, bg, ca.INTERP_LINEAR), reps), None
    legacy = LEGACY_MS.get(('ApplyH', n))
    bpv = BYTES['ApplyH']
    base = ('%d B/voxel as the issue counts it (h 12 + output 4; the sampled image, +4, not counted); '
            'h = identity + low-frequency sines (<= 4 voxels), all samples inside the grid; spacing '
            '(1, 1.25, 0.8); smooth image; %s' % (bpv, thr))
    peers = []  # (name, fn returning an [x, y, z] array or None, timed fn, note)

    sitk = peer_module('SimpleITK', nthreads)
    if sitk is not None:
        s_img = sitk.GetImageFromArray(np.ascontiguousarray(im.asnp().T))  # SimpleITK arrays are [z, y, x]
        s_img.SetSpacing(sp)
        idx = [np.arange(n, dtype=np.float32).reshape(_axis_shape(d)) for d in range(3)]
        disp = np.stack([((h_np[d] - idx[d]) * np.float32(sp[d])).T for d in range(3)], axis=-1)
        s_disp = sitk.GetImageFromArray(disp, isVector=True)  # (z, y, x, [dx, dy, dz]) physical units
        s_disp.SetSpacing(sp)
        del disp
        warp = sitk.WarpImageFilter()
        warp.SetInterpolator(sitk.sitkLinear)
        warp.SetOutputParameteresFromImage(s_img)
        warp.SetEdgePaddingValue(0.0)
        peers.append(('SimpleITK WarpImageFilter',
                      lambda: sitk.GetArrayFromImage(warp.Execute(s_img, s_disp)).T,  # a copy: the image is temporary
                      lambda: warp.Execute(s_img, s_disp),
                      'linear, displacement (h - x) * spacing; returns a new image'))
    torch = peer_module('torch', nthreads)
    if torch is not None:
        t_img = _torch_volume(torch, im.asnp())
        t_grid = _torch_grid(torch, h_np, n)
        F = torch.nn.functional

        def t_apply():
            with torch.inference_mode():
                return F.grid_sample(t_img, t_grid, mode='bilinear', padding_mode='border',
                                     align_corners=True)
        peers.append(('torch grid_sample (3-D)', lambda: t_apply()[0, 0].numpy().T, t_apply,
                      "mode='bilinear' (trilinear), padding_mode='border', align_corners=True; "
                      'returns a new tensor'))
    ndi = peer_module('scipy.ndimage', nthreads)
    if ndi is not None:
        # SciPy in its natural C order: input [z, y, x], coordinates (z, y, x), output [z, y, x].
        s_in = np.ascontiguousarray(im.asnp().T)
        s_coords = np.stack([h_np[2].T, h_np[1].T, h_np[0].T])
        s_out = np.empty_like(s_in)

        def s_apply():
            ndi.map_coordinates(s_in, s_coords, output=s_out, order=1, mode='nearest')
            return s_out
        peers.append(('scipy map_coordinates', lambda: s_apply().T, s_apply,
                      "order=1, mode='nearest', output= preallocated; serial (SciPy has no threads)"))
    del h_np

    ratios = []
    if not peers:
        rows.add(label, size, ours, None, '', '', bpv, nvox, legacy, common=base)
    for name, result, timed, pnote in peers:
        agree = agreement(rows, '%s %s' % (label, size), name, ours_out, result())
        pt = time_budget(timed, reps)
        rows.add(label, size, ours, pt, name, '%s; %s' % (agree, pnote), bpv, nvox, legacy, common=base)
        ratios.append('%s %.2fx' % (name, pt[0] / ours[0]))
    if copy_t is not None:
        # Copy moves 8 B/voxel (read + write), ApplyH 16 as counted above.
        bw, copy_bw = bpv * nvox / ours[0], 2 * 4 * nvox / copy_t[0]
        rows.derive('ApplyH %s GB/s share of Copy' % size, 100.0 * bw / copy_bw, '%',
                    'ApplyH %s: %.1f GB/s = %.0f%% of Copy (%.1f GB/s; %.3f ms vs Copy %.3f ms, '
                    'interleaved, same run)' % (size, bw / 1e9, 100.0 * bw / copy_bw, copy_bw / 1e9,
                                                ours[0] * 1e3, copy_t[0] * 1e3))
    if ratios:
        rows.derive('ApplyH %s peer/ours' % size, None, 'x',
                    'ApplyH %s peer/ours: %s' % (size, ', '.join(ratios)))


def bench_diff_ops(rows, n, reps, nthreads, want, labels, thr):
    size = '%d^3' % n
    nvox = n ** 3
    rng = np.random.default_rng(20 + n)
    sp = (1.0, 1.25, 0.8)
    grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(*sp))
    g_np, h_np = smooth_h(n, rng), smooth_h(n, rng)
    img_np = smooth_image(n, rng)
    im = new_image(grid, img_np)
    g, h = new_field(grid, g_np), new_field(grid, h_np)
    out_f = ca.Field3D(grid, ca.MEM_HOST)
    out_i = ca.Image3D(grid, ca.MEM_HOST)
    l_compose, l_splat, l_grad, l_jac, l_coad, l_upd = labels
    torch = peer_module('torch', nthreads) if want(l_compose) or want(l_splat) else None
    F = torch.nn.functional if torch is not None else None
    common = ('g, h = identity + low-frequency sines (<= 4 voxels), all samples inside the grid; '
              'spacing (1, 1.25, 0.8); smooth image; %s' % thr)

    def field_np(f):
        return np.stack([np.array(c) for c in f.asnp()])

    def add(label, ours, peer, peer_name, note, op):
        rows.add(label, size, ours, peer, peer_name, note, BYTES[op], nvox, LEGACY_MS.get((op, n)),
                 common=common)

    if want(l_compose):
        pid = ca.BACKGROUND_STRATEGY_PARTIAL_ID
        fn = lambda: ca.ComposeHH(out_f, g, h, pid)
        fn()
        ours_out = field_np(out_f)
        ours = median_time(fn, reps)
        note = '%d B/voxel (h 12, g 12 sampled at h, f 12)' % BYTES['ComposeHH']
        if torch is not None:
            t_g = torch.from_numpy(np.stack([np.ascontiguousarray(c.T) for c in g_np]))[None]  # (1, 3, D, H, W)
            t_grid = _torch_grid(torch, h_np, n)

            def t_compose():
                with torch.inference_mode():
                    return F.grid_sample(t_g, t_grid, mode='bilinear', padding_mode='border',
                                         align_corners=True)
            res = t_compose()[0].numpy()
            agree = agreement(rows, '%s %s' % (l_compose, size), 'torch grid_sample', ours_out,
                              np.stack([res[d].T for d in range(3)]))
            add(l_compose, ours, time_budget(t_compose, reps), 'torch grid_sample (3 chan)',
                '%s; g\'s 3 components as channels sampled at h (border; all samples inside, so '
                'PARTIAL_ID plays no part); returns a new tensor; %s' % (agree, note), 'ComposeHH')
        else:
            add(l_compose, ours, None, '', note, 'ComposeHH')

    if want(l_splat):
        fn = lambda: ca.Splat(out_i, h, im, False)
        fn()
        ours_out = np.array(out_i.asnp())
        ours = median_time(fn, reps)
        note = '%d B/voxel (h 12, values 4, output 4)' % BYTES['Splat']
        if torch is not None:
            # The adjoint of trilinear sampling: what a torch user gets from autograd
            # (grid_sample's backward w.r.t. its input; zeros padding drops mass
            # outside the grid, as Splat does). Only the backward pass is timed.
            def torch_splat(dtype):
                x = torch.zeros((1, 1, n, n, n), requires_grad=True, dtype=dtype)
                y = F.grid_sample(x, _torch_grid(torch, h_np, n, dtype), mode='bilinear',
                                  padding_mode='zeros', align_corners=True)
                vals = _torch_volume(torch, im.asnp()).to(dtype)
                return lambda: torch.autograd.grad(y, x, grad_outputs=vals, retain_graph=True)[0]
            # Same computation in float64 first (is it the same operator?), then the
            # timed float32 run, whose normalised grid rounds sample coordinates by
            # up to ~(n-1) * 2^-24 voxels near the far faces, summed over 8 corners.
            agree64 = agreement(rows, '%s %s' % (l_splat, size), 'torch autograd (float64)', ours_out,
                                torch_splat(torch.float64)()[0, 0].numpy().T)
            t_splat = torch_splat(torch.float32)
            agree32 = agreement(rows, '%s %s' % (l_splat, size), 'torch autograd (float32)', ours_out,
                                t_splat()[0, 0].numpy().T, tol=1e-4)
            add(l_splat, ours, time_budget(t_splat, reps), 'torch grid_sample backward',
                'float64 run %s; timed float32 run %s (its float32 grid in [-1, 1] rounds coordinates); '
                'torch.autograd.grad(grid_sample(x, grid), x, grad_outputs=values): the adjoint of '
                'trilinear sampling (padding zeros), backward pass only; %s'
                % (agree64, agree32, note),
                'Splat')
            del t_splat
        else:
            add(l_splat, ours, None, '', note, 'Splat')

    if want(l_grad):
        fn = lambda: ca.Gradient(out_f, im, ca.DIFF_CENTRAL, ca.BC_CLAMP)
        fn()
        ours_out = field_np(out_f)
        ours = median_time(fn, reps)
        a_c = np.ascontiguousarray(img_np.T)  # NumPy's natural C order: [z, y, x]
        npg = lambda: np.gradient(a_c, sp[2], sp[1], sp[0])  # returns [d/dz, d/dy, d/dx]
        ref = np.stack([r.T for r in npg()[::-1]])
        interior = np.zeros((3, n, n, n), bool)
        interior[:, 1:-1, 1:-1, 1:-1] = True
        agree = agreement(rows, '%s %s' % (l_grad, size), 'numpy.gradient', ours_out, ref, interior)
        # BC_APPROX is np.gradient's edge rule (one-sided / sp): compare everywhere.
        ca.Gradient(out_f, im, ca.DIFF_CENTRAL, ca.BC_APPROX)
        agree_all = agreement(rows, 'Gradient(g, i) [central, BC_APPROX] %s' % size, 'numpy.gradient',
                              field_np(out_f), ref)
        add(l_grad, ours, time_budget(npg, reps), 'numpy.gradient(a, *sp)',
            'interior voxels %s (on the faces BC_CLAMP gives half of NumPy\'s one-sided difference, by '
            'design); BC_APPROX vs numpy.gradient on all voxels %s; NumPy allocates its 3 outputs; '
            '%d B/voxel (image 4, gradient 12)'
            % (agree.replace('agrees: ', 'agree: '), agree_all,
               BYTES['Gradient']), 'Gradient')

    if want(l_jac):
        fn = lambda: ca.JacDetH(out_i, h, ca.DIFF_CENTRAL, ca.BC_APPROX)
        fn()
        ours_out = np.array(out_i.asnp())
        ours = median_time(fn, reps)
        h_c = [np.ascontiguousarray(c.T) for c in h_np]  # [z, y, x]

        def np_jacdet():
            # J[i][j] = d h_i / d x_j, x physical as the legacy JacDetH (np.gradient
            # gives d/dz, d/dy, d/dx)
            J = [np.gradient(c, sp[2], sp[1], sp[0])[::-1] for c in h_c]
            return (J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1])
                    - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0])
                    + J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]))
        agree = agreement(rows, '%s %s' % (l_jac, size), 'numpy', ours_out, np_jacdet().T)
        add(l_jac, ours, time_budget(np_jacdet, reps), 'numpy.gradient x3 + det',
            '%s; np.gradient (edge_order=1, = BC_APPROX) of each component / spacing, 3x3 determinant '
            'in NumPy; %d B/voxel (h 12, det 4)' % (agree, BYTES['JacDetH']), 'JacDetH')

    if want(l_coad):
        m = new_field(grid, [smooth_image(n, rng) for _ in range(3)])
        pz = ca.BACKGROUND_STRATEGY_PARTIAL_ZERO
        add(l_coad, median_time(lambda: ca.CoAd(out_f, g, m, pz), reps), None, '',
            'no peer; %d B/voxel (g 12, m 12 sampled at g, n 12); m = smooth field' % BYTES['CoAd'], 'CoAd')
        del m

    if want(l_upd):
        w = new_field(grid, [0.5 * u for u in smooth_displacement(n, rng, 2.0)])
        ginv1, scratch = ca.Field3D(grid, ca.MEM_HOST), ca.Field3D(grid, ca.MEM_HOST)
        add(l_upd, median_time(lambda: ca.UpdateInverse(ginv1, scratch, h, w, 3), reps), None, '',
            'no peer; %d B/voxel (3 fused iterations x 48: c read, w and ginv0t sampled, the output '
            'written); ginv0t = h, w = low-frequency sines <= 1 voxel' % BYTES['UpdateInverse'],
            'UpdateInverse')


def bench_gpu_deform(rows, reps, want):
    """Device rows of the deformation operators: MEM_DEVICE data, synchronised
    (CheckCUDAError waits for the device) before the clock stops, beside the
    same op on host memory (our CPU back end)."""
    def synced(fn):
        def run():
            fn()
            ca.CheckCUDAError(__file__, 0)
        return run

    def on_device(obj, grid):
        d = (ca.Field3D if isinstance(obj, ca.Field3D) else ca.Image3D)(grid, ca.MEM_DEVICE)
        ca.Copy(d, obj)
        return d

    host_note = 'peer: the same call on MEM_HOST (our CPU back end, %d threads)' % omp_threads()
    for n, labels in ((256, ['GPU ApplyH(o, i, h) [linear, CLAMP]', 'GPU Gradient(g, i) [central, BC_CLAMP]',
                             'GPU ComposeHH(f, g, h) [PARTIAL_ID]']),
                      (128, ['GPU Splat(o, h, i) [normalize=False]', 'GPU Splat(o, h, 1e4 * i)'])):
        if not any(want(l) for l in labels):
            continue
        size, nvox = '%d^3' % n, n ** 3
        rng = np.random.default_rng(30 + n)
        grid = ca.GridInfo(ca.Vec3Di(n, n, n))
        im, g, h = new_image(grid, smooth_image(n, rng)), new_field(grid, smooth_h(n, rng)), \
            new_field(grid, smooth_h(n, rng))
        d_im, d_g, d_h = on_device(im, grid), on_device(g, grid), on_device(h, grid)
        o_i, d_oi = ca.Image3D(grid, ca.MEM_HOST), ca.Image3D(grid, ca.MEM_DEVICE)
        o_f, d_of = ca.Field3D(grid, ca.MEM_HOST), ca.Field3D(grid, ca.MEM_DEVICE)
        clamp, pid = ca.BACKGROUND_STRATEGY_CLAMP, ca.BACKGROUND_STRATEGY_PARTIAL_ID
        if n == 256:
            cases = [
                (labels[0], 'ApplyH', lambda: ca.ApplyH(d_oi, d_im, d_h, clamp, ca.INTERP_LINEAR),
                 lambda: ca.ApplyH(o_i, im, h, clamp, ca.INTERP_LINEAR), d_oi, o_i),
                (labels[1], 'Gradient', lambda: ca.Gradient(d_of, d_im, ca.DIFF_CENTRAL, ca.BC_CLAMP),
                 lambda: ca.Gradient(o_f, im, ca.DIFF_CENTRAL, ca.BC_CLAMP), d_of, o_f),
                (labels[2], 'ComposeHH', lambda: ca.ComposeHH(d_of, d_g, d_h, pid),
                 lambda: ca.ComposeHH(o_f, g, h, pid), d_of, o_f)]
            for label, op, dfn, hfn, d_out, h_out in cases:
                if want(label):
                    ours, peer = median_time(synced(dfn), reps), median_time(hfn, reps)
                    agree = agreement(rows, '%s %s' % (label, size), 'the host result',
                                      ca._host_array(d_out), ca._host_array(h_out))
                    rows.add(label, size, ours, peer, 'same op on host (CPU)',
                             'device vs host result %s; %d B/voxel as the CPU row' % (agree, BYTES[op]),
                             BYTES[op], nvox, common=host_note)
        else:
            # Float atomics: values 1e4 times larger must not be slower.
            im_big = ca.Image3D(grid, ca.MEM_HOST)
            ca.MulC(im_big, im, 1e4)
            d_big = on_device(im_big, grid)
            normal, big = median_times_interleaved(
                [synced(lambda: ca.Splat(d_oi, d_h, d_im, False)),
                 synced(lambda: ca.Splat(d_oi, d_h, d_big, False))], reps)
            for label, d_vals, h_vals, t, what in ((labels[0], d_im, im, normal, 'float atomics'),
                                                   (labels[1], d_big, im_big, big, 'values scaled by 1e4')):
                if not want(label):
                    continue
                peer = median_time(lambda: ca.Splat(o_i, h, h_vals, False), reps)
                ca.Splat(d_oi, d_h, d_vals, False)
                agree = agreement(rows, '%s %s' % (label, size), 'the host result',
                                  ca._host_array(d_oi), ca._host_array(o_i))
                rows.add(label, size, t, peer, 'same op on host (CPU)',
                         '%s; device vs host result %s (atomics add in another order); %d B/voxel'
                         % (what, agree, BYTES['Splat']), BYTES['Splat'], nvox, common=host_note)
            rows.derive('GPU Splat 1e4-scaled / normal', big[0] / normal[0], 'x',
                        'GPU Splat %s with values x 1e4: %.2fx the time of normal values (interleaved; '
                        'float atomics, no slowdown expected)' % (size, big[0] / normal[0]))


def bench_gpu(rows, n, reps, only):
    """Device rows (only with a CUDA device): each op on MEM_DEVICE data,
    synchronised (CheckCUDAError waits for the device), beside the same op
    on host memory (our CPU back end, what a user without a GPU runs)."""
    if ca.GetNumberOfCUDADevices() == 0:
        print('(GPU rows skipped: no CUDA device)', flush=True)
        return
    bench_gpu_deform(rows, reps, lambda name: only is None or only.lower() in name.lower())
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


# ---------------------------------------------------------------------------
# File IO (PyCA.Common.PyCAIO through SimpleITK) -- section of the io issue
# ---------------------------------------------------------------------------

def bench_io(rows, reps, only):
    """LoadITKImage / SaveITKImage of a 256^3 float32 NIfTI beside SimpleITK
    alone plus one copy, timed in alternation (same conditions). Files live in
    a temporary folder (the page cache serves the reads); our save includes
    what makes it atomic and durable: a temporary, fsync, rename."""
    if only is not None and only.lower() not in 'loaditkimage(.nii) saveitkimage(.nii) nifti':
        return  # e.g. --only ITKImage
    sitk = peer_module('SimpleITK', omp_threads())
    if sitk is None:
        return
    import shutil
    import tempfile
    try:
        import PyCA.Common as common
        import PyCA.Common.PyCAIO as pio
    except ImportError as e:
        print('(skipped file IO rows: %s)' % e, flush=True)
        return
    n = 256
    size, nbytes = '%d^3' % n, n ** 3 * 4
    folder = tempfile.mkdtemp(prefix='pyca-bench-io-')
    try:
        a = np.random.default_rng(0).standard_normal((n, n, n), dtype=np.float32)
        im = common.ImFromNPArr(a, sp=ca.Vec3Df(1.0, 1.25, 0.8), orig=ca.Vec3Df(-10, 0, 5))
        ours_fn, peer_fn = os.path.join(folder, 'ours.nii'), os.path.join(folder, 'peer.nii')
        common.SaveITKImage(im, ours_fn)
        common.SaveITKImage(im, peer_fn)
        target = np.empty((n, n, n), np.float32, order='F')

        def peer_load():  # SimpleITK alone (ReadImage + GetArrayFromImage) plus one copy
            np.copyto(target, sitk.GetArrayFromImage(sitk.ReadImage(peer_fn)).T)

        loaded = common.LoadITKImage(ours_fn)
        peer_load()
        if not (np.array_equal(loaded.asnp(), a) and np.array_equal(target, a)):
            rows.warn('LoadITKImage and SimpleITK disagree on the NIfTI voxels')
        del loaded
        r = max(3, min(reps, 9))
        ours_t, peer_t = median_times_interleaved([lambda: common.LoadITKImage(ours_fn), peer_load], r)
        common_note = '256^3 float32 NIfTI (.nii, %.0f MB), page cache' % (nbytes / 1e6)
        rows.add('LoadITKImage(.nii)', size, ours_t, peer_t,
                 'sitk.ReadImage+GetArray+copy', 'ours: ReadImage + one copy into the Image3D',
                 bytes_per_voxel=4, nvox=n ** 3, common=common_note)

        zyx = np.ascontiguousarray(im.asnp().T)  # the voxels in SimpleITK's (z, y, x) C order

        def peer_save():
            sitk.WriteImage(sitk.GetImageFromArray(zyx), peer_fn)  # GetImageFromArray: one copy

        def ours_save():
            common.SaveITKImage(im, ours_fn)

        r = max(3, min(reps, 7))
        ours_t, peer_t = median_times_interleaved([ours_save, peer_save], r)
        rows.add('SaveITKImage(.nii) [atomic, fsync]', size, ours_t, peer_t,
                 'sitk.WriteImage(GetImageFromArray)', 'ours: GetImageFromArray + WriteImage to a '
                 'temporary, fsync, rename', bytes_per_voxel=4, nvox=n ** 3, common=common_note)
        real_fsync = pio._fsync_path
        pio._fsync_path = lambda *args, **kw: None
        try:
            nosync_t, peer2_t = median_times_interleaved([ours_save, peer_save], r)
        finally:
            pio._fsync_path = real_fsync
        rows.derive('WriteImage / SaveITKImage without fsync', peer2_t[0] / nosync_t[0], 'x',
                    'SaveITKImage without its fsync: %.1f ms vs WriteImage %.1f ms (peer/ours %.2fx); '
                    'the fsync (flushing %.0f MB to disk) is the rest of the save row'
                    % (nosync_t[0] * 1e3, peer2_t[0] * 1e3, peer2_t[0] / nosync_t[0], nbytes / 1e6))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

# ---------------------------------------------------------------------------
# end of the file IO section
# ---------------------------------------------------------------------------
# FluidKernelFFT (spec 2.8): the fluid operator L and its inverse K at 128^3
# ---------------------------------------------------------------------------

#: The original PyCA at 128^3 (FFTW_MEASURE, one thread), same machine kind.
LEGACY_FLUID_MS = {'applyInverseOperator': (69.0, '69'), 'first setGrid': (1400.0, '1400')}
#: Target: applyInverseOperator at most this multiple of the six scipy.fft transforms.
FLUID_SCIPY_TARGET = 1.3

_FLUID_SETGRID_CODE = r"""
import time
import PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(%d, %d, %d))
k = ca.FluidKernelFFTCPU()
t = time.perf_counter(); k.setGrid(g); print(time.perf_counter() - t)
"""


_FLUID_BACKEND_CODE = r"""
import sys, time, json
import numpy as np
import PyCA.Core as ca
n, reps = int(sys.argv[1]), int(sys.argv[2])
g = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.25, 0.8))
k = ca.FluidKernelFFTCPU(); k.setAlpha(0.01); k.setBeta(0.01); k.setGamma(0.001); k.setGrid(g)
f = ca.Field3D(g, ca.MEM_HOST); v = ca.Field3D(g, ca.MEM_HOST)
rng = np.random.default_rng(81)
for c in f.asnp():
    c[...] = rng.standard_normal(c.shape, dtype=np.float32)
k.applyInverseOperator(v, f); k.applyInverseOperator(v, f)
ts = []
for _ in range(reps):
    t = time.perf_counter(); k.applyInverseOperator(v, f); ts.append(time.perf_counter() - t)
ts.sort()
print(json.dumps({"backend": ca.GetCPUFFTBackend(), "median": ts[len(ts) // 2], "min": ts[0],
                  "sum": float(sum(np.abs(c).sum() for c in v.asnp()))}))
"""


def bench_fluid_backends(rows, reps, only, nthreads, other_build):
    """applyInverseOperator at 128^3 with this build's CPU FFT beside another
    build's (PYCA_BENCH_FFT_BUILD or --fft-build-dir: e.g. one configured
    with -DPYCA_FFT=pocketfft), each in its own interpreter, alternately."""
    label = 'FluidKernelFFT K: FFTW vs pocketfft'
    if only is not None and only.lower() not in label.lower():
        return
    if not other_build:
        print('(%s row skipped: no --fft-build-dir / PYCA_BENCH_FFT_BUILD)' % label, flush=True)
        return
    paths = [os.path.dirname(os.path.dirname(ca.__file__)), os.path.join(other_build, 'python')]
    res = [[], []]
    for _ in range(3):  # alternate the two interpreters
        for i, path in enumerate(paths):
            env = dict(os.environ, PYTHONPATH=path)
            r = subprocess.run([sys.executable, '-c', _FLUID_BACKEND_CODE, '128', str(max(5, reps // 3))],
                               capture_output=True, text=True, env=env)
            if r.returncode != 0:
                rows.warn('%s: %s failed: %s' % (label, path, r.stderr.strip().splitlines()[-1:]))
                return
            res[i].append(json.loads(r.stdout.strip().splitlines()[-1]))
    names = [x[0]['backend'] for x in res]
    by = dict(zip(names, res))
    if set(names) != {'fftw', 'pocketfft'}:
        rows.warn('%s: the two builds have %s and %s' % (label, names[0], names[1]))
        return
    def med(xs):
        m = sorted(x['median'] for x in xs)
        return m[len(m) // 2], min(x['min'] for x in xs)
    a, b = by['fftw'][0]['sum'], by['pocketfft'][0]['sum']
    rows.add(label, '128^3', med(by['fftw']), med(by['pocketfft']), 'pocketfft build (PYCA_FFT=pocketfft)',
             'ours = the FFTW build; each in its own interpreter, alternately; results agree to %.1e '
             '(relative sum |v|)' % (abs(a - b) / max(abs(a), 1e-30)),
             common='alpha 0.01, beta 0.01, gamma 0.001, lpow 1; %d threads' % nthreads)


def fluid_reference(comps, sp, alpha, beta, gamma, fft):
    """K f in float64 with scipy.fft and the legacy's discrete symbols
    (FluidKernelFFT.h), for the agreement check of the rows below."""
    n = comps[0].shape
    F = [fft.rfftn(np.asarray(c, np.float64)) for c in comps]
    ks = [np.arange(n[d] if d < 2 else n[d] // 2 + 1).reshape([-1 if e == d else 1 for e in range(3)])
          for d in range(3)]
    th = [2 * np.pi * ks[d] / n[d] for d in range(3)]
    W = [(2 * np.cos(th[d]) - 2) / sp[d] ** 2 for d in range(3)]
    S = [np.sin(th[d]) / sp[d] for d in range(3)]
    lam = gamma - alpha * (W[0] + W[1] + W[2])
    L = np.empty(F[0].shape + (3, 3))
    for d in range(3):
        for e in range(3):
            L[..., d, e] = lam - beta * W[d] if d == e else beta * S[d] * S[e]
    B = np.stack(F, axis=-1)[..., None]
    X = np.linalg.solve(L, B)[..., 0]
    return [fft.irfftn(X[..., d], s=n) for d in range(3)]


def bench_fluid(rows, reps, only, nthreads):
    """applyInverseOperator / applyOperator at 128^3 beside the six real FFTs
    scipy.fft does for the same job (3 rfftn + 3 irfftn, workers = our thread
    count), the first setGrid in a fresh process, and the GPU row."""
    def want(name):
        return only is None or only.lower() in name.lower()

    labels = ['FluidKernelFFT applyInverseOperator(v, f)', 'FluidKernelFFT applyOperator(f, v)',
              'FluidKernelFFT first setGrid (fresh process)', 'GPU FluidKernelFFT applyInverseOperator(v, f)']
    if not any(want(l) for l in labels):
        return
    if not hasattr(ca, 'FluidKernelFFTCPU'):
        print('(FluidKernelFFT rows skipped: PyCA.Core has no FluidKernelFFTCPU)', flush=True)
        return
    n = 128
    size = '%d^3' % n
    sp = (1.0, 1.25, 0.8)
    alpha, beta, gamma = 0.01, 0.01, 0.001
    grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(*sp))
    rng = np.random.default_rng(81)
    comps = [rng.standard_normal((n, n, n), dtype=np.float32) for _ in range(3)]
    f = new_field(grid, comps)
    v = ca.Field3D(grid, ca.MEM_HOST)
    k = ca.FluidKernelFFTCPU()
    k.setAlpha(alpha)
    k.setBeta(beta)
    k.setGamma(gamma)
    k.setGrid(grid)
    common = ('alpha %g, beta %g, gamma %g, lpow 1, spacing (1, 1.25, 0.8); FFTW planner %s; %d threads'
              % (alpha, beta, gamma, os.environ.get('PYCA_FFTW_PLANNER', 'estimate (default)'), nthreads))
    try:
        import scipy.fft as sfft
    except Exception as e:  # not installed: rows without a peer
        print('(scipy.fft peer skipped: %s)' % e, flush=True)
        sfft = None
    peer = None
    if sfft is not None:
        arrs = [np.array(c) for c in comps]

        def six_ffts():
            spec = [sfft.rfftn(a, workers=nthreads) for a in arrs]
            return [sfft.irfftn(x, s=a.shape, workers=nthreads) for x, a in zip(spec, arrs)]
    for label, inverse in ((labels[0], True), (labels[1], False)):
        if not want(label):
            continue
        fn = (lambda: k.applyInverseOperator(v, f)) if inverse else (lambda: k.applyOperator(v, f))
        fn()
        agree = ''
        if inverse and sfft is not None:
            want_v = fluid_reference(comps, sp, alpha, beta, gamma, sfft)
            agree = agreement(rows, '%s %s' % (label, size), 'scipy.fft float64 reference',
                              np.stack([np.array(c) for c in v.asnp()]), np.stack(want_v), tol=1e-4) + '; '
        if sfft is not None:
            ours, peer = median_times_interleaved([fn, six_ffts], reps)
        else:
            ours, peer = median_time(fn, reps), None
        op = 'applyInverseOperator' if inverse else 'applyOperator'
        row = rows.add(label, size, ours, peer, 'scipy.fft 3 rfftn + 3 irfftn',
                       '%speer: the six transforms alone (float32, workers=%d), timed interleaved' % (agree, nthreads),
                       legacy=LEGACY_FLUID_MS.get(op), common=common)
        if peer is not None and inverse:
            r = ours[0] / peer[0]
            rows.derive('FluidKernelFFT K / six scipy FFTs', r, 'x',
                        'applyInverseOperator %s takes %.2fx the time of the six scipy.fft transforms '
                        '(target <= %.1fx): %s' % (size, r, FLUID_SCIPY_TARGET,
                                                   'met' if r <= FLUID_SCIPY_TARGET else 'NOT MET'))
    if want(labels[2]):
        code = _FLUID_SETGRID_CODE % (n, n, n)
        times = []
        for _ in range(max(3, min(reps, 7))):
            r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
            if r.returncode != 0:
                rows.warn('first setGrid subprocess failed: %s' % r.stderr.strip().splitlines()[-1:])
                break
            times.append(float(r.stdout.split()[-1]))
        if times:
            times.sort()
            rows.add(labels[2], size, (times[len(times) // 2], times[0]), None, '-',
                     'median of %d fresh interpreters; target < 100 ms; legacy: FFTW_MEASURE in every process'
                     % len(times), legacy=LEGACY_FLUID_MS['first setGrid'])
    if want(labels[3]):
        if ca.GetNumberOfCUDADevices() == 0 or not hasattr(ca, 'FluidKernelFFTGPU'):
            print('(GPU FluidKernelFFT row skipped: no CUDA device)', flush=True)
            return
        kg = ca.FluidKernelFFTGPU()
        kg.setAlpha(alpha)
        kg.setBeta(beta)
        kg.setGamma(gamma)
        kg.setGrid(grid)
        fd, vd = ca.Field3D(grid, ca.MEM_DEVICE), ca.Field3D(grid, ca.MEM_DEVICE)
        ca.Copy(fd, f)

        def gpu():
            kg.applyInverseOperator(vd, fd)
            ca.CheckCUDAError(__file__, 0)
        gpu()
        k.applyInverseOperator(v, f)
        agree = agreement(rows, '%s %s' % (labels[3], size), 'the host result', ca._host_array(vd),
                          np.stack([np.array(c) for c in v.asnp()]), tol=1e-4)
        rows.add(labels[3], size, median_time(gpu, reps), median_time(lambda: k.applyInverseOperator(v, f), reps),
                 'same op on host (CPU)', 'device vs host result %s; target < 1 ms on an H100/H200' % agree,
                 common=common)
# Filters and multiscale (branch filters): GaussianFilterCPU, the multiscale
# resamplers; GPU rows only with a CUDA device.
# ---------------------------------------------------------------------------

def bench_filters(rows, reps, only, nthreads):
    """GaussianFilterCPU.filter at 128^3 beside scipy.ndimage.gaussian_filter
    (same sigma, truncate = radius / sigma, i.e. the same kernel radius;
    compared in the interior, where the border rules play no part), and
    downsampleImage 256^3 -> 128^3 (factor 2) of MultiscaleResamplerGaussCPU
    (sigma sqrt(2/2) = 1, radius 2) and MultiscaleResamplerCPU beside SciPy
    gaussian_filter + map_coordinates (order 1, centred samples)."""
    def want(name):
        return only is None or only.lower() in name.lower()

    gauss_label = 'GaussianFilterCPU.filter [sigma 2, radius 8]'
    rs_label = 'MultiscaleResamplerGaussCPU.downsampleImage'
    plain_label = 'MultiscaleResamplerCPU.downsampleImage'
    if not any(want(l) for l in (gauss_label, rs_label, plain_label, 'GPU Gaussian', 'GPU Multiscale')):
        return
    if getattr(ca, 'GaussianFilterCPU', None) is None:
        print('(filter rows skipped: PyCA.Core has no GaussianFilterCPU)', flush=True)
        return
    ndi = peer_module('scipy.ndimage', nthreads)
    rng = np.random.default_rng(8)
    thr = '%d threads for ours; SciPy is serial' % nthreads
    if want(gauss_label):
        n, sig, rad = 128, 2.0, 8
        g = ca.GridInfo(ca.Vec3Di(n, n, n))
        arr = smooth_image(n, rng)
        im, out, tmp = new_image(g, arr), ca.Image3D(g, ca.MEM_HOST), ca.Image3D(g, ca.MEM_HOST)
        f = ca.GaussianFilterCPU()
        f.updateParams(g.size(), ca.Vec3Df(sig, sig, sig), ca.Vec3Di(rad, rad, rad))
        ours = median_time(lambda: f.filter(out, im, tmp), reps)
        peer, note = None, 'no scipy'
        if ndi is not None:
            a64 = np.asfortranarray(arr)
            ref = ndi.gaussian_filter(a64, sig, truncate=rad / sig)
            inner = np.zeros((n, n, n), bool)
            inner[rad:-rad, rad:-rad, rad:-rad] = True
            note = agreement(rows, gauss_label, 'scipy', out.asnp(), ref, where=inner)
            note += ' (interior; at the borders ours renormalises the truncated kernel, legacy)'
            peer = time_budget(lambda: ndi.gaussian_filter(a64, sig, truncate=rad / sig), reps)
        rows.add(gauss_label, '%d^3' % n, ours, peer, 'scipy.ndimage.gaussian_filter', note,
                 bytes_per_voxel=24, nvox=n ** 3, common=thr)
    for label, cls in ((rs_label, 'MultiscaleResamplerGaussCPU'), (plain_label, 'MultiscaleResamplerCPU')):
        if not want(label):
            continue
        n = 256
        g = ca.GridInfo(ca.Vec3Di(n, n, n))
        ca.ThreadMemoryManager.init(g, ca.MEM_HOST, 4)
        try:
            mm = ca.MultiscaleManager(g)
            mm.addScaleLevel(2)
            mm.addScaleLevel(1)
            mm.start()
            rs = getattr(ca, cls)(g)
            rs.setScaleLevel(mm)
            arr = smooth_image(n, rng)
            orig = new_image(g, arr)
            out = ca.Image3D(mm.getCurGrid(), ca.MEM_HOST)
            ours = median_time(lambda: rs.downsampleImage(out, orig), reps)
            peer, note = None, 'no scipy'
            if ndi is not None:
                m = n // 2
                c = np.arange(m, dtype=np.float64) * 2.0 + 0.5
                pts = np.stack(np.meshgrid(c, c, c, indexing='ij'))
                a32 = np.asfortranarray(arr)

                def peer_fn():
                    src = ndi.gaussian_filter(a32, 1.0, radius=2, mode='nearest') if 'Gauss' in cls else a32
                    return ndi.map_coordinates(src, pts, order=1, mode='nearest')
                ref = peer_fn()
                inner = np.zeros((m, m, m), bool)
                inner[2:-2, 2:-2, 2:-2] = True
                note = agreement(rows, label, 'scipy', out.asnp(), ref, where=inner) + ' (interior)'
                peer = time_budget(peer_fn, reps)
            rows.add(label, '256^3->128^3', ours, peer,
                     'scipy gaussian_filter+map_coordinates' if 'Gauss' in cls else 'scipy map_coordinates',
                     note, common=thr)
        finally:
            ca.ThreadMemoryManager.destroy()
    if ca.GetNumberOfCUDADevices() == 0 or getattr(ca, 'GaussianFilterGPU', None) is None:
        print('(GPU filter rows skipped: no CUDA device)', flush=True)
        return

    def synced(fn):
        def run():
            fn()
            ca.CheckCUDAError(__file__, 0)
        return run

    if want('GPU GaussianFilter'):
        n = 128
        g = ca.GridInfo(ca.Vec3Di(n, n, n))
        h = [ca.Image3D(g, ca.MEM_HOST) for _ in range(3)]
        h[0].asnp()[...] = smooth_image(n, rng)
        d = [ca.Image3D(g, ca.MEM_DEVICE) for _ in range(3)]
        ca.Copy(d[0], h[0])
        fg, fc = ca.GaussianFilterGPU(), ca.GaussianFilterCPU()
        for f in (fg, fc):
            f.updateParams(g.size(), ca.Vec3Df(2, 2, 2), ca.Vec3Di(8, 8, 8))
        rows.add('GPU GaussianFilter.filter [sigma 2, radius 8]', '%d^3' % n,
                 median_time(synced(lambda: fg.filter(d[1], d[0], d[2])), reps),
                 median_time(lambda: fc.filter(h[1], h[0], h[2]), reps), 'GaussianFilterCPU (host)')
    if want('GPU MultiscaleResamplerGauss'):
        n = 256
        g = ca.GridInfo(ca.Vec3Di(n, n, n))
        mm = ca.MultiscaleManager(g)
        mm.addScaleLevel(2)
        mm.addScaleLevel(1)
        mm.start()
        rg, rc = ca.MultiscaleResamplerGaussGPU(g), ca.MultiscaleResamplerGaussCPU(g)
        rg.setScaleLevel(mm)
        rc.setScaleLevel(mm)
        oh = ca.Image3D(g, ca.MEM_HOST)
        oh.asnp()[...] = smooth_image(n, rng)
        od = ca.Image3D(g, ca.MEM_DEVICE)
        ca.Copy(od, oh)
        sd, sh = ca.Image3D(mm.getCurGrid(), ca.MEM_DEVICE), ca.Image3D(mm.getCurGrid(), ca.MEM_HOST)
        rows.add('GPU MultiscaleResamplerGauss.downsampleImage', '256^3->128^3',
                 median_time(synced(lambda: rg.downsampleImage(sd, od)), reps),
                 median_time(lambda: rc.downsampleImage(sh, oh), reps), 'MultiscaleResamplerGaussCPU (host)',
                 'no thread memory manager: scratch allocated per call')

# ---- end of the filters and multiscale section ------------------------------


# ---------------------------------------------------------------------------
# Similarity metrics (PyCA.Apps.metrics): LNCC energy + gradient beside the
# same formula in float32 NumPy on scipy.ndimage.uniform_filter, and mutual
# information beside numpy.histogram2d.
# ---------------------------------------------------------------------------

METRIC_LNCC_LABEL = 'metric LNCC energy+gradient %d^3 (r=%d)'
METRIC_MI_LABEL = 'metric MI %d^3 (%d bins)'
METRIC_TOL = 1e-3


def _lncc_numpy(ndi, I, J, r, eps, n_w, vol=1.0):
    """LNCC energy and force (PyCA.Apps.metrics.LNCC's formula) in float32
    NumPy: Box = uniform_filter(mode='constant') x window size (a windowed
    sum truncated at the border), n_w = Box(1) given. 5 box filters for the
    local sums, 4 for the gradient terms."""
    size = 2 * r + 1
    w = np.float32(size ** 3)

    def box(a):
        return ndi.uniform_filter(a, size=size, mode='constant') * w

    sI, sJ = box(I), box(J)
    A, B, C = box(I * I), box(J * J), box(I * J)
    Ibar, Jbar = sI / n_w, sJ / n_w
    A -= Ibar * sI
    B -= Jbar * sJ
    C -= Ibar * sJ
    D = B + np.float32(eps)
    e = vol * float(np.sum((A - C * C / D) / n_w, dtype=np.float64))
    cd = C / D
    g = cd / n_w
    g2 = cd * g
    force = I * box(g) - box(g * Ibar) - J * box(g2) + box(g2 * Jbar)
    return e, force


def _mi_from_table(p):
    """MI (natural log) of a joint table (any scale)."""
    p = np.asarray(p, np.float64)
    p = p / p.sum()
    pf, pm = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] / (pf * pm)[nz])))


def bench_metrics(rows, reps, only, nthreads):
    """LNCC (radius 2 and 4) and MI (32 bins) at 128^3: ours (PyCA.Apps.metrics
    / PyCA.Core.MutualInformation) beside NumPy / SciPy written the way a user
    would (see the row notes)."""
    def want(name):
        return only is None or only.lower() in name.lower()

    n = 128
    lncc_labels = [(r, METRIC_LNCC_LABEL % (n, r)) for r in (2, 4)]
    mi_label = METRIC_MI_LABEL % (n, 32)
    mi_c_label = mi_label + ' compute only'
    if not any(want(l) for _, l in lncc_labels) and not want(mi_label) and not want(mi_c_label):
        return
    if getattr(ca, 'BoxFilter', None) is None or getattr(ca, 'MutualInformation', None) is None:
        print('(metric rows skipped: PyCA.Core has no BoxFilter / MutualInformation)', flush=True)
        return
    try:
        from PyCA.Apps.metrics import make_metric
    except ImportError as e:
        print('(metric rows skipped: %s)' % e, flush=True)
        return
    ndi = peer_module('scipy.ndimage', nthreads)
    rng = np.random.default_rng(11)
    g = ca.GridInfo(ca.Vec3Di(n, n, n))
    # two smooth random images, correlated (J = 0.7 I + 0.3 other + noise)
    a_fixed = smooth_image(n, rng, noise=0.2)
    a_mov = (0.7 * a_fixed + 0.3 * smooth_image(n, rng, noise=0.0)
             + np.float32(0.2) * rng.standard_normal((n, n, n), dtype=np.float32)).astype(np.float32)
    fixed, moving = new_image(g, a_fixed), new_image(g, a_mov)
    force = ca.Image3D(g, ca.MEM_HOST)
    thr = ('%d threads for ours; SciPy / NumPy serial; two smooth random images (sines + noise), '
           'correlated' % nthreads)
    times = {}
    for r, label in lncc_labels:
        if not want(label):
            continue
        m = make_metric('lncc', lncc_radius=r)
        m.prepare(fixed, moving)
        ours = median_time(lambda: m.evaluate(fixed, moving, force), reps)
        e_ours = m.evaluate(fixed, moving, force)
        f_ours = np.array(force.asnp())
        times[r] = [ours[0], None]
        peer, note = None, 'no scipy'
        if ndi is not None:
            I, J = np.array(a_fixed, np.float32), np.array(a_mov, np.float32)
            size = 2 * r + 1
            n_w = ndi.uniform_filter(np.ones_like(I), size=size, mode='constant') * np.float32(size ** 3)
            # eps as PyCA.Apps.metrics.LNCC.prepare: 1e-5 of a window's sum of
            # squares at the fixed image's variance
            eps = 1e-5 * float(np.var(I, dtype=np.float64)) * float(size ** 3)
            e_peer, f_peer = _lncc_numpy(ndi, I, J, r, eps, n_w)
            rel_e = abs(e_ours - e_peer) / max(abs(e_peer), 1e-30)
            if not rel_e <= METRIC_TOL:
                rows.warn('%s: energy differs from the NumPy/SciPy one: |diff|/|E| = %.2e > %.0e'
                          % (label, rel_e, METRIC_TOL))
            note = ('energy %.6g vs %.6g (|diff|/|E| %.1e%s); force %s; peer: the same formula in '
                    'float32 NumPy, 5 + 4 uniform_filter(mode=constant) x window size (n_w = Box(1) '
                    'precomputed, as ours)'
                    % (e_ours, e_peer, rel_e, ' DISAGREES' if not rel_e <= METRIC_TOL else '',
                       agreement(rows, label, 'NumPy/SciPy', f_ours, f_peer, tol=METRIC_TOL)))
            peer = time_budget(lambda: _lncc_numpy(ndi, I, J, r, eps, n_w), reps)
            times[r][1] = peer[0]
        rows.add(label, '%d^3' % n, ours, peer, 'scipy uniform_filter (f32)', note, common=thr)
    if 2 in times and 4 in times:
        t2, t4 = times[2], times[4]
        text = 'LNCC r=4 / r=2 time: ours %.2f' % (t4[0] / t2[0])
        if t2[1] and t4[1]:
            text += ', scipy %.2f' % (t4[1] / t2[1])
        rows.derive('LNCC r=4 / r=2 time (ours)', t4[0] / t2[0], 'x',
                    text + ' (window 729 vs 125 voxels; both running sums)')

    if not (want(mi_label) or want(mi_c_label)):
        return
    bins = 32
    flo, fhi = float(a_fixed.min()), float(a_fixed.max())
    mlo, mhi = float(a_mov.min()), float(a_mov.max())
    # the ranges PyCA.Apps.metrics.MI.prepare uses: 2 % of room on each side
    pf_, pm_ = 0.02 * (fhi - flo), 0.02 * (mhi - mlo)
    flo, fhi, mlo, mhi = flo - pf_, fhi + pf_, mlo - pm_, mhi + pm_
    mi = ca.MutualInformation(bins, flo, fhi, mlo, mhi)
    grad = ca.Image3D(g, ca.MEM_HOST)

    def ours_full():
        mi.compute(fixed, moving)
        mi.gradient(grad, fixed, moving)
    t_full = median_time(ours_full, reps)
    t_comp = median_time(lambda: mi.compute(fixed, moving), reps)
    v_ours = mi.compute(fixed, moving)
    table = np.asarray(mi.jointHistogram(), np.float64)
    nb = bins + 4
    table = table.reshape(nb, nb)
    xf, xm = np.ravel(a_fixed), np.ravel(a_mov)

    def plain():
        h, _, _ = np.histogram2d(xf, xm, bins=bins, range=[[flo, fhi], [mlo, mhi]])
        return _mi_from_table(h)

    # Parzen by a binned histogram: bins centred on lo + k delta (delta =
    # (hi - lo) / (bins - 1), as ours), then the table convolved with the
    # cubic B-spline sampled at the bin centres (1/6, 2/3, 1/6) along each
    # axis, padded to (bins + 4)^2 like ours.
    df, dm = (fhi - flo) / (bins - 1), (mhi - mlo) / (bins - 1)
    ef = flo + (np.arange(bins + 1) - 0.5) * df
    em = mlo + (np.arange(bins + 1) - 0.5) * dm
    kern3 = np.array([1.0, 4.0, 1.0]) / 6.0

    def parzen_table():
        h, _, _ = np.histogram2d(xf, xm, bins=[ef, em])
        t = np.zeros((nb, nb))
        t[2:-2, 2:-2] = h
        t = np.apply_along_axis(lambda v: np.convolve(v, kern3, mode='same'), 0, t)
        t = np.apply_along_axis(lambda v: np.convolve(v, kern3, mode='same'), 1, t)
        return t

    def parzen():
        return _mi_from_table(parzen_table())

    mi_common = ('ranges: each image\'s min..max + 2 %% (as PyCA.Apps.metrics.MI); %d threads for ours; '
                 'NumPy serial' % nthreads)
    if want(mi_label):
        v_plain = plain()
        peer = time_budget(plain, reps)
        rows.add(mi_label, '%d^3' % n, t_full, peer, 'numpy histogram2d + MI',
                 'ours: compute + gradient (Parzen cubic B-spline, %dx%d table; compute alone %.1f ms), '
                 'MI %.4f; peer: plain histogram2d (%d bins, no Parzen window, no gradient: NumPy has '
                 'none) + MI from it, MI %.4f (a different estimator: values not compared)'
                 % (nb, nb, t_comp[0] * 1e3, v_ours, bins, v_plain), common=mi_common)
    if want(mi_c_label):
        t = parzen_table()
        t /= t.sum()
        v_parzen = _mi_from_table(t)
        tdiff = float(np.abs(t - table).max() / table.max())
        peer = time_budget(parzen, reps)
        rows.add(mi_c_label, '%d^3' % n, t_comp, peer, 'histogram2d + B-spline conv',
                 'ours: compute (exact Parzen windows), MI %.4f; peer: histogram2d at %d bins centred as '
                 'ours, table convolved with the cubic B-spline (1/6, 2/3, 1/6) per axis + MI, MI %.4f '
                 '(binned approximation of the Parzen histogram: table max |diff| / max %.1e, '
                 'not a check)' % (v_ours, bins, v_parzen, tdiff), common=mi_common)

# ---- end of the similarity metrics section ----------------------------------


# ---------------------------------------------------------------------------
# Registration apps (PyCA.Apps): one LDDMM iteration at 128^3 with its
# operator profile, and the demo pair (MNI 2 mm + phantom) beside ANTs SyN.
# ---------------------------------------------------------------------------

LDDMM_ITER_LABEL = 'LDDMM iteration 128^3 (10 steps)'
MEMORY_LABEL = 'memory'

#: Profile groups of the operators an LDDMM iteration calls (by PyCA.Core name;
#: FluidKernelFFT methods are named 'FluidKernelFFT.<method>').
PROFILE_GROUPS = (
    ('FFT (fluid kernel K / L)', lambda n: n.startswith('FluidKernelFFT.')),
    ('interpolation (ApplyH/V, Compose*, CoAd, Ad, UpdateInverse)',
     lambda n: n in ('ApplyH', 'ApplyV', 'ApplyVInv', 'ComposeHH', 'ComposeHV', 'ComposeVH',
                     'ComposeHVInv', 'ComposeVInvH', 'CoAd', 'Ad', 'UpdateInverse',
                     'FixedPointInverse', 'Resample', 'ResampleH', 'ResampleV', 'ResampleWorld')),
    ('splatting (Splat*)', lambda n: n.startswith('Splat')),
    ('rest (pointwise, reductions, differences: AdInf, CoAdInf, Gradient, ...)', lambda n: True),
)


def _app_shooter_kw(shooter_cls):
    """The keywords lddmm_register gives its Shooter (endpoint=False: no m_T,
    v_T), where the class takes them (an older build, for an A/B run, does not)."""
    import inspect
    try:
        params = inspect.signature(shooter_cls).parameters
    except (TypeError, ValueError):
        return {}
    return {'endpoint': False} if 'endpoint' in params else {}


def _set_kernel_tol(kernel, cfg):
    """The DEFAULTS' kernel_tol on a kernel built by make_fluid_kernel (an older
    build, for an A/B run, has neither)."""
    if cfg.get('kernel_tol') and hasattr(kernel, 'setSpectralTolerance'):
        kernel.setSpectralTolerance(float(cfg['kernel_tol']))


class OpProfiler:
    """Wraps every public function of the PyCA.Core module object and the
    applyOperator / applyInverseOperator methods of the FluidKernelFFT classes
    while active (a ``with`` block), timing each call with perf_counter. The
    time of a call minus that of the wrapped calls it makes is its own time
    (``own``), so the sums never count a nested call twice. The apps look the
    operators up as ``ca.<name>`` at each call, so they see the wrappers."""

    KERNEL_METHODS = ('applyInverseOperator', 'applyOperator')

    def __init__(self):
        self.own, self.calls, self._stack, self._saved = {}, {}, [], []

    def _wrap(self, name, fn):
        prof = self

        def timed(*a, **k):
            prof._stack.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                dt = time.perf_counter() - t0
                child = prof._stack.pop()
                prof.own[name] = prof.own.get(name, 0.0) + dt - child
                prof.calls[name] = prof.calls.get(name, 0) + 1
                if prof._stack:
                    prof._stack[-1] += dt
        timed.__wrapped__ = fn
        return timed

    def __enter__(self):
        import types
        for name in dir(ca):
            obj = getattr(ca, name)
            if name.startswith('_') or not isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
                continue
            self._saved.append((ca, name, obj))
            setattr(ca, name, self._wrap(name, obj))
        for cls_name in ('FluidKernelFFTCPU', 'FluidKernelFFTGPU'):
            cls = getattr(ca, cls_name, None)
            if cls is None:
                continue
            for meth in self.KERNEL_METHODS:
                fn = getattr(cls, meth, None)
                if fn is None:
                    continue
                # None: inherited, so the wrapper is deleted again afterwards
                self._saved.append((cls, meth, cls.__dict__.get(meth)))
                setattr(cls, meth, self._wrap('FluidKernelFFT.' + meth, fn))
        return self

    def __exit__(self, *exc):
        for owner, name, obj in reversed(self._saved):
            if obj is None:
                delattr(owner, name)
            else:
                setattr(owner, name, obj)
        self._saved = []
        return False

    def groups(self):
        """[(group, seconds, calls, [(op, seconds, calls), ...])] in PROFILE_GROUPS order."""
        out = [[g, 0.0, 0, []] for g, _ in PROFILE_GROUPS]
        for name in sorted(self.own, key=lambda n: -self.own[n]):
            for i, (_, test) in enumerate(PROFILE_GROUPS):
                if test(name):
                    out[i][1] += self.own[name]
                    out[i][2] += self.calls[name]
                    out[i][3].append((name, self.own[name], self.calls[name]))
                    break
        return [tuple(o) for o in out]


def _unit_image(arr):
    a = np.asarray(arr, np.float64)
    return ((a - a.min()) / (a.max() - a.min())).astype(np.float32)


def bench_lddmm_iteration(rows, reps, nthreads, n=128):
    """One LDDMM iteration (the geodesic shooting forward, its energy, the
    adjoint backward: PyCA.Apps.lddmm.Shooter shoot + energy + gradient, 10
    time steps, Euler, the DEFAULTS' kernel) at 128^3 on the CPU: the median
    over a few iterations, then one profiled iteration (OpProfiler)."""
    try:
        from PyCA.Apps import lddmm
        from PyCA.Apps import phantom
        from PyCA.Apps._common import make_fluid_kernel, ensure_thread_memory_manager
    except ImportError as e:
        print('(%s skipped: %s)' % (LDDMM_ITER_LABEL, e), flush=True)
        return
    T = 10
    cfg = dict(lddmm.DEFAULTS)
    grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.0, 1.0))
    rng = np.random.default_rng(12)
    fixed = new_image(grid, _unit_image(smooth_image(n, rng, noise=0.0)))
    psi, _ = phantom.random_deformation(grid, max_disp_mm=4.0, smoothness_mm=12.0, seed=3)
    moving = ca.Image3D(grid, ca.MEM_HOST)
    ca.ApplyH(moving, fixed, psi)
    del psi
    ensure_thread_memory_manager(grid, ca.MEM_HOST)
    try:
        shooter_cls = getattr(lddmm, 'Shooter', None)
        if shooter_cls is not None:
            kernel = make_fluid_kernel(grid, ca.MEM_HOST, cfg['alpha'], cfg['beta'], cfg['gamma'],
                                        cfg.get('lpow', 1))
            _set_kernel_tol(kernel, cfg)
            sh = shooter_cls(grid, ca.MEM_HOST, kernel, T, cfg.get('integrator', 'euler'),
                             cfg['sigma'], cfg.get('inverse_iters', 3), cfg.get('adjoint', 'euler'),
                             **_app_shooter_kw(shooter_cls))
            I0, I1 = moving, fixed          # lddmm_register: I0 = moving, I1 = fixed
            m0, grad = ca.Field3D(grid, ca.MEM_HOST), ca.Field3D(grid, ca.MEM_HOST)
            deformed = ca.Image3D(grid, ca.MEM_HOST)
            ca.SetToZero(m0)

            def iteration():
                sh.shoot(m0)
                sh.energy(m0, I0, I1, deformed)
                sh.gradient(I0, deformed, I1, grad)
            iteration()
            # a non-zero momentum: one gradient step from 0, scaled so that
            # the velocity K m0 moves by 2 voxels at most
            ca.Copy(m0, grad)
            kernel.applyInverseOperator(grad, m0)
            vmax = ca.LInf(grad)
            ca.MulC_I(m0, 2.0 / vmax if vmax > 0 else 1.0)
            what = 'Shooter.shoot + energy + gradient'
        else:
            def iteration():
                lddmm.lddmm_register(fixed, moving, scales=[1], iters=[1], nsteps=T, quiet=True,
                                     device='cpu')
            what = 'lddmm_register(scales=[1], iters=[1]) (set-up included: no Shooter)'
        k = max(3, min(reps, 5))
        ours = median_time(iteration, k, warmup=1)
        with OpProfiler() as prof:
            t0 = time.perf_counter()
            iteration()
            t_prof = time.perf_counter() - t0
    finally:
        ca.ThreadMemoryManager.destroy()
    groups = prof.groups()
    total_own = sum(g[1] for g in groups)
    row = rows.add(LDDMM_ITER_LABEL, '%d^3' % n, ours, None, '-',
                   '%s, median of %d; alpha %g, beta %g, gamma %g, lpow %d, kernel_tol %g, sigma %g, '
                   'Euler, %s adjoint, inverse_iters %d'
                   % (what, k, cfg['alpha'], cfg['beta'], cfg['gamma'], cfg.get('lpow', 1),
                      cfg.get('kernel_tol', 0.0), cfg['sigma'],
                      cfg.get('adjoint', 'euler'), cfg.get('inverse_iters', 3)),
                   common='%d threads (CPU)' % nthreads)
    prof_rows = []
    for gname, secs, calls, ops in groups:
        share = 100.0 * secs / t_prof if t_prof > 0 else 0.0
        top = ', '.join('%s %.0f ms/%d' % (o, s * 1e3, c) for o, s, c in ops[:6])
        rows.derive('LDDMM profile: %s' % gname.split(' (')[0], share, '%',
                    'LDDMM iteration profile: %-12s %5.1f%% (%7.1f ms, %4d calls)%s'
                    % (gname.split(' (')[0], share, secs * 1e3, calls, ': ' + top if top else ''))
        prof_rows.append(dict(group=gname, seconds=secs, share_pct=share, calls=calls,
                              ops=[dict(op=o, seconds=s, calls=c) for o, s, c in ops]))
    rows.derive('LDDMM profile: operator time / iteration time', 100.0 * total_own / t_prof, '%',
                'LDDMM iteration profile: the operators\' own times sum to %.1f ms of the profiled '
                'iteration\'s %.1f ms (%.1f%%; the rest is Python between the calls and allocation); '
                'unprofiled median %.1f ms' % (total_own * 1e3, t_prof * 1e3, 100.0 * total_own / t_prof,
                                               ours[0] * 1e3))
    row['profile'] = dict(profiled_iteration_s=t_prof, operators_own_s=total_own, groups=prof_rows)


def bench_lddmm_gpu(rows, reps):
    """GPU rows (only with a CUDA device): one LDDMM iteration at 128^3 (10
    steps; target < 50 ms on an H100/H200-class device) and a default
    multiscale LDDMM registration at 256^3 (target < 5 s), both on
    MEM_DEVICE images; each timing ends with a reduction (a device-to-host
    copy), so queued kernels are counted."""
    if ca.GetNumberOfCUDADevices() == 0:
        print('(LDDMM GPU rows skipped: no CUDA device)', flush=True)
        return
    from PyCA.Apps import lddmm, phantom
    from PyCA.Apps._common import make_fluid_kernel, ensure_thread_memory_manager, on_mem
    dev = ca.MEM_DEVICE

    def sync(img):
        return float(ca.Sum(img))   # a reduction: waits for the queued kernels

    for n, what in ((128, 'iteration'), (256, 'registration')):
        grid = ca.GridInfo(ca.Vec3Di(n, n, n), ca.Vec3Df(1.0, 1.0, 1.0))
        rng = np.random.default_rng(12)
        fixed_h = new_image(grid, _unit_image(smooth_image(n, rng, noise=0.0)))
        psi, _ = phantom.random_deformation(grid, max_disp_mm=n / 32.0, smoothness_mm=n / 10.0, seed=3)
        moving_h = ca.Image3D(grid, ca.MEM_HOST)
        ca.ApplyH(moving_h, fixed_h, psi)
        fixed, moving = on_mem(fixed_h, dev), on_mem(moving_h, dev)
        ensure_thread_memory_manager(grid, dev)
        try:
            if what == 'iteration':
                cfg = dict(lddmm.DEFAULTS)
                kernel = make_fluid_kernel(grid, dev, cfg['alpha'], cfg['beta'], cfg['gamma'],
                                           cfg.get('lpow', 1))
                _set_kernel_tol(kernel, cfg)
                sh = lddmm.Shooter(grid, dev, kernel, 10, 'euler', cfg['sigma'], cfg['inverse_iters'],
                                   cfg['adjoint'], **_app_shooter_kw(lddmm.Shooter))
                m0, grad = ca.Field3D(grid, dev), ca.Field3D(grid, dev)
                deformed = ca.Image3D(grid, dev)
                ca.SetToZero(m0)

                def run():
                    sh.shoot(m0)
                    sh.energy(m0, moving, fixed, deformed)
                    sh.gradient(moving, deformed, fixed, grad)
                    sync(deformed)
                run()
                ca.Copy(m0, grad)
                kernel.applyInverseOperator(grad, m0)
                vmax = ca.LInf(grad)
                ca.MulC_I(m0, 2.0 / vmax if vmax > 0 else 1.0)
                t = median_time(run, max(3, min(reps, 10)), warmup=1)
                rows.add('LDDMM iteration 128^3 (10 steps, GPU)', '128^3', t, None, '-',
                         'Shooter.shoot + energy + gradient on MEM_DEVICE; target < 50 ms')
            else:
                def run():
                    r = lddmm.lddmm_register(fixed, moving, quiet=True, device='gpu')
                    sync(r.deformed)
                    run.iters = r.iterations
                t = median_time(run, 3, warmup=1)
                rows.add('LDDMM registration 256^3 (defaults, GPU)', '256^3', t, None, '-',
                         'lddmm_register defaults (%d iterations, scales 4,2,1); target < 5 s'
                         % getattr(run, 'iters', 0))
        finally:
            ca.ThreadMemoryManager.destroy()


PEERS_LABEL = 'peers'

#: --only texts that select the peers group besides 'peers' itself (a tool's
#: name selects that tool's rows: e.g. --only ANTs, --only elastix)
PEERS_ONLY_TOOLS = {'ants': 'ants', 'picsl': 'picsl', 'elastix': 'elastix', 'niftyreg': 'niftyreg'}


def bench_peers(rows, nthreads, only, pairs=None):
    """The demo's four pairs (2 mm, seed 7: clean, rescanned t1, T2-like t2,
    large deformation) registered by PyCA LDDMM and greedy (defaults) beside
    ANTs (antsRegistrationSyN[s]), PICSL Greedy, elastix (bspline) and
    NiftyReg (reg_f3d): error in the brain, min det J, folds, wall time
    (Benchmarks/peers.py; it replaces the former "demo pair vs ANTs SyN"
    rows). pairs: --peers-pairs (None: PYCA_BENCH_PEERS_PAIRS, else all)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import peers
    finally:
        sys.path.pop(0)
    tools = None
    key = (only or '').lower()
    if key and key not in PEERS_LABEL:
        tools = ','.join(t for k, t in PEERS_ONLY_TOOLS.items() if key in k)
    peers.bench_peers(rows, nthreads, pairs=pairs, tools=tools)


def _want_peers(only):
    # on request only (--only peers, or a tool's name): at the tools' recommended settings
    # the group takes about half an hour on two cores (ANTs: minutes a pair)
    if only is None:
        return False
    key = only.lower()
    return key in PEERS_LABEL or any(key in k for k in PEERS_ONLY_TOOLS)


BUSY_LABEL = 'busy machine: demo 4-mm LDDMM'

#: one registration in a fresh process (its own OpenMP runtime and
#: environment): the demo pair at 4 mm, LDDMM with defaults; prints the wall time
_BUSY_SCRIPT = """
import time
from PyCA.Apps import register
from PyCA.Apps.demo import make_phantom_pair
fixed, moving = make_phantom_pair(4.0)[:2]
t0 = time.perf_counter()
register(fixed, moving, method='lddmm', quiet=True, device='cpu')
print('WALL', time.perf_counter() - t0)
"""


def bench_busy_machine(rows, nthreads, rounds=3):
    """The demo's 4-mm LDDMM (defaults) in a fresh process, with every allowed
    CPU kept busy by another process (python -c 'while True: pass'), at the
    default thread count (the adaptive team) beside OMP_NUM_THREADS=1 and
    beside fixed teams (PYCA_ADAPTIVE_THREADS=0); then on the idle machine,
    the default beside fixed teams. Configurations interleaved, `rounds`
    rounds, medians."""
    from PyCA._threads import _affinity_cpus
    cpus = _affinity_cpus()
    if nthreads < 2:
        print('(%s skipped: one thread)' % BUSY_LABEL, flush=True)
        return
    base = {k: v for k, v in os.environ.items() if k != 'PYCA_ADAPTIVE_THREADS'}
    configs = {'default': {}, 'one thread': {'OMP_NUM_THREADS': '1'},
               'fixed team': {'PYCA_ADAPTIVE_THREADS': '0'}}

    def once(extra):
        out = subprocess.run([sys.executable, '-c', _BUSY_SCRIPT], env=dict(base, **extra),
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else 'failed')
        return float([l for l in out.stdout.splitlines() if l.startswith('WALL')][-1].split()[1])

    def med(ts):
        return (float(np.median(ts)), float(np.min(ts)))

    try:
        once({})  # warm the file cache and FFTW's wisdom
        busy = {k: [] for k in configs}
        hogs = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(cpus)]
        try:
            time.sleep(0.5)
            for _ in range(rounds):
                for k, extra in configs.items():
                    busy[k].append(once(extra))
        finally:
            for p in hogs:
                p.kill()
            for p in hogs:
                p.wait()
        idle = {'default': [], 'fixed team': []}
        time.sleep(0.5)
        for _ in range(rounds):
            for k in idle:
                idle[k].append(once(configs[k]))
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        rows.warn('%s: %s' % (BUSY_LABEL, e))
        return
    common = ('%d other processes keep the %d allowed CPUs busy; a fresh process per run, %d rounds '
              'interleaved, medians; %d threads by default' % (cpus, cpus, rounds, nthreads))
    one = med(busy['one thread'])
    for k in ('default', 'fixed team'):
        ours = med(busy[k])
        rows.add('%s, every CPU busy, %s' % (BUSY_LABEL, k), '4mm', ours, one, 'OMP_NUM_THREADS=1',
                 'runs %s s; one thread %s s' % (', '.join('%.2f' % t for t in busy[k]),
                                                ', '.join('%.2f' % t for t in busy['one thread'])),
                 common=common)
    d = med(busy['default'])
    rows.derive('busy machine: default / one thread', d[0] / one[0], 'x',
                'busy machine: the default costs %.2fx the one-thread time (target at most 1.5x)'
                % (d[0] / one[0]))
    rows.add('%s, idle, default' % BUSY_LABEL, '4mm', med(idle['default']), med(idle['fixed team']),
             'fixed team (adaptive off)',
             'runs %s s; fixed %s s' % (', '.join('%.2f' % t for t in idle['default']),
                                        ', '.join('%.2f' % t for t in idle['fixed team'])),
             common='the idle machine; a fresh process per run, %d rounds interleaved, medians' % rounds)


def bench_apps(rows, reps, only, nthreads, peers_pairs=None):
    def want(name):
        return only is None or only.lower() in name.lower()
    if want(LDDMM_ITER_LABEL):
        bench_lddmm_iteration(rows, reps, nthreads)
    if _want_peers(only):
        bench_peers(rows, nthreads, only, peers_pairs)
    if only is not None and only.lower() == MEMORY_LABEL:
        # peak memory at 1 mm (on request: about 6 minutes): Benchmarks/memory_bench.py
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        try:
            import memory_bench
        finally:
            sys.path.pop(0)
        memory_bench.bench_memory(rows, nthreads)
    if want(BUSY_LABEL):
        bench_busy_machine(rows, nthreads)
    if want('LDDMM GPU'):
        bench_lddmm_gpu(rows, reps)

# ---- end of the registration apps section -----------------------------------


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
    ap.add_argument('--fft-build-dir', default=os.environ.get('PYCA_BENCH_FFT_BUILD'),
                    help='a second build (e.g. -DPYCA_FFT=pocketfft) for the FFTW vs pocketfft row')
    ap.add_argument('--peers-pairs', default=os.environ.get('PYCA_BENCH_PEERS_PAIRS'),
                    help='peers group: the pairs to run, a comma list of clean,t1,t2,large (default all; '
                         'env PYCA_BENCH_PEERS_PAIRS); PYCA_BENCH_PEERS_TOOLS picks tools '
                         '(lddmm,greedy,ants,picsl,elastix,niftyreg)')
    args = ap.parse_args()

    nthreads = omp_threads()
    print('PyCA benchmarks on %s, %d CPUs (OMP_NUM_THREADS=%s: %d threads; torch and SimpleITK set to '
          'the same), numpy %s' % (platform.processor() or platform.machine(), os.cpu_count(),
                                   os.environ.get('OMP_NUM_THREADS', 'default'), nthreads, np.__version__))
    print('%-46s %-7s %13s  %-28s %13s  %7s  %s' % ('operation', 'size', 'ours (median)', 'peer',
                                                     'peer (median)', 'peer/ours',
                                                     '[ours GB/s]  [ref. original PyCA, another machine]'))
    rows = Rows()
    t0 = time.perf_counter()
    bench_cxx(rows, args.build_dir, args.reps, args.only)
    bench_python(rows, args.size, args.reps, args.only)
    bench_deform(rows, args.reps, args.only, nthreads)
    bench_fluid(rows, args.reps, args.only, nthreads)
    bench_fluid_backends(rows, args.reps, args.only, nthreads, args.fft_build_dir)
    bench_gpu(rows, args.size, args.reps, args.only)
    bench_io(rows, args.reps, args.only)
    bench_filters(rows, args.reps, args.only, nthreads)  # filters section
    bench_metrics(rows, args.reps, args.only, nthreads)  # similarity metrics section
    bench_apps(rows, args.reps, args.only, nthreads, args.peers_pairs)  # registration apps section
    if rows.warnings:
        print('%d WARNING(S):' % len(rows.warnings))
        for w in rows.warnings:
            print('  WARNING: %s' % w)
    with open(args.json, 'w') as f:
        json.dump(dict(machine=platform.platform(), cpus=os.cpu_count(), threads=nthreads,
                       numpy=np.__version__, cuda_devices=ca.GetNumberOfCUDADevices(),
                       peers={k: getattr(m, '__version__', 'scipy') if m is not None else None
                              for k, m in _PEER_MODULES.items()},
                       legacy_reference_ms_other_machine={'%s %d^3' % k: v[0] for k, v in LEGACY_MS.items()},
                       rows=rows.rows, derived=rows.derived, warnings=rows.warnings), f, indent=2)
    print('results written to %s (%.0f s)' % (args.json, time.perf_counter() - t0))


if __name__ == '__main__':
    main()
