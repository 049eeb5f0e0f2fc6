"""The memory a registration needs: a model, a guard and the measured peak.

A registration's peak memory is set by its finest level: the method's
full-resolution buffers on the grid it computes on (the ``fft_pad`` grid
where the method pads), the kernel's spectrum, the metric's scratch images,
the ThreadMemoryManager's pools, the input images and their padded copies,
plus the interpreter and its libraries. :func:`predict_peak` counts those
from the grid, the method and its configuration -- the same counts for the
host (``device='cpu'``) and the GPU (``device='gpu'``: the buffers in device
memory, and the pools the manager allocates up front) -- and
:func:`check_fits` refuses a job whose prediction is above the memory it may
use, with one line, before any work (the driver,
:func:`~PyCA.Apps.multiscale.register_levels`, calls :func:`check_memory`
right after merging the configuration)::

    p = predict_peak('lddmm', (256, 256, 256), device='gpu')
    p.device_bytes, p.breakdown                   # bytes, {item: bytes}
    check_fits(p, '16G')                          # MemoryLimitError if above

The configuration key ``max_memory`` (every method, the ``device`` fragment)
sets the limit: None (default) = what is available (host: MemAvailable or the
cgroup's limit, whichever is smaller, plus what this process already holds;
GPU: the device's free memory), a number of bytes or a size such as '8G'
(K, M, G, T: powers of 1024), 0 or False = no check. The command lines take
``--max-memory``. summary.json's ``memory`` (:func:`memory_summary`) puts the
prediction beside the measured peaks.

The counts are a table (:data:`METHOD_BUFFERS`, :data:`METRIC_IMAGES` and
the constants beside them), measured: each method in a fresh process at two
grid sizes (the demo phantom at 2 mm and 1 mm; ``python3
Benchmarks/memory_bench.py calibrate``), the peak resident set fitted
as a constant plus bytes per voxel, with metric 'ssd' (the method's own
buffers), 'lncc' and 'auto' (the metric's part); update the table when a
method's buffers change. The model is within 5 % of the measured peak at
2 mm and 1 mm for every method (``Testing/Python/test_apps_memory.py``
checks 97^3 and 128^3 grids against 15 %). Limits: LDDMM's adaptive shooting
may take more time steps than ``nsteps`` (each adds ``fields_per_step``
fields); ``auto``'s memory depends a little on the choice it makes from the
data; the GPU's numbers are the same counts, not measured here.

``python -m PyCA.Apps.memory --method lddmm --size 256 256 256 --device gpu``
prints a prediction and its items.
"""
import argparse
import math
import os
import re
import resource
import sys
import threading

__all__ = ['Prediction', 'MemoryLimitError', 'predict_peak', 'lbfgs_pairs', 'kept_path_fields', 'available_memory', 'parse_bytes',
           'check_fits', 'check_memory', 'last_prediction', 'measured_peak', 'peak_rss', 'memory_summary',
           'format_bytes', 'METHOD_BUFFERS', 'METRIC_IMAGES']

FIELD_BYTES = 12        # a Field3D: 3 float32 per voxel
IMAGE_BYTES = 4         # an Image3D: 1 float32 per voxel

# --------------------------------------------------------------------------- the table
#: Full-resolution buffers each method holds at its peak (its finest level),
#: in Field3D (``fields``) and Image3D (``images``) of the grid it computes
#: on. LDDMM's path adds ``fields_per_step`` fields per time step (``nsteps``:
#: the least; the adaptive shooting may take more), and its options add the
#: fields of ``options`` where they hold; ``metric_shared_images``: images of
#: the method the metric's scratch reuses; ``fixed_bytes``: what the method
#: holds whatever the grid (LDDMM: its FFTW plans). Measured by
#: ``python3 Benchmarks/memory_bench.py calibrate`` (each method's peak in a
#: process of its own at 2 mm and 1 mm beside the prediction): re-run it and
#: update these numbers when a method's buffers change.
METHOD_BUFFERS = {
    # the path: g_1..g_T and ginv_1..ginv_T (2 per step; phi_0 = Id implicit, v_n and m_n
    # in scratch, recomputed by the adjoint); the shooter's scratch fields, the descent's
    # m0, gradient, previous m0 and direction (``fields``: the measured effective count);
    # images: the shooter's three and the deformed image
    'lddmm': {'fields': 7.3, 'fields_per_step': 2.0, 'images': 4.0, 'metric_shared_images': 6.1,
              'fixed_bytes': 11e6,
              # measured, but 'anisotropic' (t4, t5 and phi_0 = Id held: structural)
              'options': {'adjoint=heun': 5.0, 'integrator=rk4': 6.0, 'anisotropic': 3.0,
                          'momentum=0': -1.0}},
    # h, hprev (also the inverse's scratch), gI (= gU, K in place); hinv; Idef, diff
    # (made by ``start``, on the grid it computes on). ``init_alloc``: a method that
    # allocates its buffers when it is made, before the driver pads the grid, so that a
    # padded run also holds them on the input grid (untouched: not resident on the host,
    # allocated on the GPU); elastic does not pad
    'greedy': {'fields': 3.0, 'images': 2.0, 'init_alloc': False,
               'options': {'compute_inverse': 1.0}},
    # u, uprev, gI0, gI, gU, Lu; Idef, diff and (measured) one more image (no padding)
    'elastic': {'fields': 6.0, 'images': 3.0, 'init_alloc': True, 'options': {}},
}

#: Scratch images of each similarity metric (PyCA.Apps.metrics) at the finest
#: level, with the ThreadMemoryManager pools it borrows (LNCC: its window
#: count and the fixed image's two statistics, 5 pools and the box filters';
#: ``auto``: LNCC and its data check), and what it holds whatever the grid
#: (bytes). A method's own scratch may be shared with the metric's
#: (``metric_shared_images``: LDDMM's adjoint borrows the same pools).
METRIC_IMAGES = {'auto': 10.3, 'lncc': 9.0, 'ncc': 1.0, 'ssd': 0.0, 'mi': 0.0}
METRIC_FIXED_BYTES = {'auto': 8e6}

#: The fluid kernel's spectrum (FluidKernelFFT: 3 complex half-spectra), in fields.
KERNEL_FIELDS = 1.0
#: ThreadMemoryManager pools (images of the finest grid) resident on the host
#: besides the metric's (the methods' operators hand theirs back at once); on
#: the GPU the pools the manager allocates up front (``ensure_thread_memory_manager``'s
#: ``nPools``, :func:`_pools_allocated`).
POOLS_TOUCHED = 0.0
#: The result's fields where they are made beside the method's buffers, in
#: fields of the input grid (none: the peak is the finest level's run).
RESULT_FIELDS = 0.0
#: The interpreter, numpy and PyCA imported (host), bytes.
BASELINE_BYTES = 45e6
#: Libraries and plans loaded by the first registration (FFTW, the apps), bytes.
LIBRARY_BYTES = 8e6
#: A CUDA context's device memory, bytes (GPU runs), and its host memory.
CUDA_CONTEXT_DEVICE_BYTES = 512 * 2 ** 20
CUDA_CONTEXT_HOST_BYTES = 300e6

_UNITS = {'': 1, 'b': 1, 'k': 2 ** 10, 'm': 2 ** 20, 'g': 2 ** 30, 't': 2 ** 40}


class MemoryLimitError(ValueError):
    """A job whose predicted peak memory is above the memory it may use."""


class Prediction(object):
    """A job's predicted peak memory.

    Args:
        method (str): the method.
        size (sequence of int): the grid's size.
        padded_size (sequence of int): the size it computes on (``fft_pad``).
        device (str): 'cpu' or 'gpu'.
        host_bytes (int): predicted peak resident host memory of the process (ru_maxrss).
        device_bytes (int): predicted peak GPU memory (0 on the CPU).
        breakdown (dict of str to int): the items of the peak where the buffers live
            (host on the CPU, device on the GPU), bytes.

    Attributes:
        method, size, padded_size, device, host_bytes, device_bytes, breakdown: the arguments.
    """

    def __init__(self, method, size, padded_size, device, host_bytes, device_bytes, breakdown):
        self.method, self.size, self.padded_size, self.device = method, tuple(size), tuple(padded_size), device
        self.host_bytes, self.device_bytes = int(host_bytes), int(device_bytes)
        self.breakdown = {k: int(v) for k, v in breakdown.items()}

    @property
    def bytes(self):
        """int: the prediction that limits the job: device bytes on the GPU, else host bytes."""
        return self.device_bytes if self.device == 'gpu' else self.host_bytes

    def as_dict(self):
        """dict: the prediction for summary.json."""
        return {'method': self.method, 'size': list(self.size), 'padded_size': list(self.padded_size),
                'device': self.device, 'predicted_host_bytes': self.host_bytes,
                'predicted_device_bytes': self.device_bytes if self.device == 'gpu' else None,
                'breakdown': dict(self.breakdown)}

    def __repr__(self):
        return ('Prediction(%s %s on %s: host %s, device %s)'
                % (self.method, 'x'.join(str(n) for n in self.padded_size), self.device,
                   format_bytes(self.host_bytes), format_bytes(self.device_bytes)))


def format_bytes(n):
    """``n`` bytes as text ('7.9 GiB', '310 MiB').

    Args:
        n (number): bytes.

    Returns:
        str.
    """
    n = float(n)
    for unit, f in (('TiB', 2 ** 40), ('GiB', 2 ** 30), ('MiB', 2 ** 20), ('KiB', 2 ** 10)):
        if n >= f:
            v = n / f
            return ('%.1f %s' % (v, unit)) if v < 100 else ('%.0f %s' % (v, unit))
    return '%d B' % n


def parse_bytes(value, key='max_memory'):
    """A memory size in bytes: None (None: automatic), 0/False (0: no limit),
    a number of bytes, or a string '8G', '512M', '1.5GiB', '2e9' (K, M, G, T:
    powers of 1024).

    Args:
        value: the size.
        key (str): the parameter's name, for the message.

    Returns:
        int or None.

    Raises:
        ValueError (ConfigError): a value that is no size.
    """
    from ._common import ConfigError
    if value is None:
        return None
    if value is False:
        return 0
    if value is True:
        raise ConfigError("%s must be a size in bytes such as '8G', 0 (no check) or None (automatic), "
                          "got %r" % (key, value))
    if isinstance(value, (int, float)):
        if not value >= 0 or math.isinf(value):
            raise ConfigError("%s must be >= 0, got %r" % (key, value))
        return int(value)
    text = str(value).strip().lower().replace(' ', '')
    if text in ('', 'none', 'auto'):
        return None
    if text in ('off', 'false', 'no'):
        return 0
    m = re.match(r'^([0-9.]+(?:e[+-]?[0-9]+)?)([kmgt]?)(?:i?b)?$', text)
    if not m:
        raise ConfigError("%s must be a size in bytes such as '8G' or '512M', 0 (no check) or 'auto', "
                          "got %r" % (key, value))
    try:
        num = float(m.group(1))
    except ValueError:
        raise ConfigError("%s must be a size such as '8G', got %r" % (key, value)) from None
    return int(num * _UNITS[m.group(2)])


def lbfgs_pairs(hist, grid, max_mb):
    """The L-BFGS pairs a level keeps: ``hist``, fewer where its two fields
    per pair would hold more than ``max_mb`` MiB (:class:`~PyCA.Apps.lddmm.LBFGSDescent`).

    Args:
        hist (int): the level's ``lbfgs`` value.
        grid (GridInfo or sequence of int): the level's grid or its size.
        max_mb (float): ``lbfgs_max_mb``.

    Returns:
        int: the pairs (0: the heavy-ball :class:`~PyCA.Apps.lddmm.Descent`).
    """
    pair = 2 * FIELD_BYTES * _voxels(grid)   # two Field3D
    return int(max(0, min(int(hist), (float(max_mb) * 2 ** 20) // pair)))


def kept_path_fields(nsteps, pooled, grid, max_mb):
    """The fields LDDMM's lean shooter keeps for its adjoint instead of
    recomputing them (:class:`~PyCA.Apps.lddmm.Shooter`'s ``keep_mb``):
    m_1 .. m_{T-1}, and for a pooled shooter v_1 .. v_{T-1} too; 0 where they
    would hold more than ``max_mb`` MiB.

    Args:
        nsteps (int): the time steps T.
        pooled (bool): the shooter borrows its scratch (Euler, one inverse
            iteration, Euler adjoint: its v_n are not held otherwise).
        grid (GridInfo or sequence of int): the grid or its size.
        max_mb (float): ``path_max_mb``.

    Returns:
        int: the kept fields (0: recomputed).
    """
    kept = (2 if pooled else 1) * max(0, int(nsteps) - 1)
    return kept if kept * FIELD_BYTES * _voxels(grid) <= float(max_mb) * 2 ** 20 else 0


def _voxels(grid):
    """The voxels of a grid (GridInfo) or of a size (sequence of int)."""
    size = grid.size() if hasattr(grid, 'size') and callable(grid.size) else grid
    n = 1
    for v in size:
        n *= int(v)
    return n


def _count(method, cfg, aniso):
    """(fields, images) of the method's buffers (:data:`METHOD_BUFFERS`) and the metric's images."""
    t = METHOD_BUFFERS[method]
    opts = t.get('options', {})
    fields = t['fields']
    if method == 'lddmm':
        fields += t['fields_per_step'] * max(1, int(cfg.get('nsteps', 2)))
        if cfg.get('adjoint') == 'heun':
            fields += opts.get('adjoint=heun', 0.0)
        if cfg.get('integrator') == 'rk4':
            fields += opts.get('integrator=rk4', 0.0)
        if aniso:
            fields += opts.get('anisotropic', 0.0)
        if not cfg.get('momentum', 0.65):
            fields += opts.get('momentum=0', 0.0)
    elif method == 'greedy':
        if cfg.get('compute_inverse', True):
            fields += opts.get('compute_inverse', 0.0)
    metric = _metric_name(cfg)
    return fields, t['images'] + max(0.0, METRIC_IMAGES.get(metric, 1.0) - t.get('metric_shared_images', 0.0))


def _metric_name(cfg):
    m = cfg.get('metric', 'auto')
    return str(getattr(m, 'name', m)).lower()


def _pools_allocated():
    """The pools the ThreadMemoryManager allocates up front (the driver's ``nPools``)."""
    try:
        import inspect
        from ._common import ensure_thread_memory_manager
        return int(inspect.signature(ensure_thread_memory_manager).parameters['nPools'].default)
    except Exception:
        return 16


def _defaults(method):
    from importlib import import_module
    return dict(import_module('.' + method, __package__).DEFAULTS)


def predict_peak(method, grid, config=None, device='cpu', inputs_resident=True):
    """The predicted peak memory of a registration.

    Args:
        method (str): 'lddmm', 'greedy' or 'elastic'.
        grid (GridInfo, Image3D or sequence of int): the fixed image's grid or its size
            (a 2-D grid: size z = 1); its spacing, where given, tells an anisotropic grid.
        config (dict, optional): the method's parameters (missing keys: its ``DEFAULTS``).
        device (str): 'cpu' or 'gpu' ('auto' is 'cpu').
        inputs_resident (bool): the two input images are in the process (counted on the host);
            default True.

    Returns:
        Prediction.
    """
    from ._common import fft_size
    method = str(method).lower()
    if method not in METHOD_BUFFERS:
        raise ValueError("method must be one of %s, got %r" % (', '.join(METHOD_BUFFERS), method))
    cfg = _defaults(method)
    cfg.update(config or {})
    if hasattr(grid, 'grid') and callable(grid.grid):
        grid = grid.grid()
    if hasattr(grid, 'size') and callable(grid.size):
        size = [int(v) for v in grid.size()]
        sp = [float(v) for v in grid.spacing()]
    else:
        size = [int(v) for v in grid]
        sp = [1.0, 1.0, 1.0]
    size = (size + [1, 1, 1])[:3]
    used = [s for s, n in zip(sp, size) if n > 1] or sp[:1]
    aniso = max(used) - min(used) > 1e-6 * max(used)
    facs = sorted({int(s) for s in cfg.get('scales', [1])} | {1}, reverse=True)
    pads = method in ('lddmm', 'greedy') and bool(cfg.get('fft_pad', True))
    psize = [fft_size(n, facs) for n in size] if pads else list(size)
    n0 = size[0] * size[1] * size[2]
    n = psize[0] * psize[1] * psize[2]
    fields, images = _count(method, cfg, aniso)
    if method == 'lddmm':
        # the finest level's L-BFGS descent: its history (two fields a pair) and its fifth
        # and sixth fields (the heavy-ball descent's four are counted; three without momentum)
        hist = cfg.get('lbfgs', 0)
        hist = hist[-1] if isinstance(hist, (list, tuple)) else hist
        its = cfg.get('iters', 1)
        its = its[-1] if isinstance(its, (list, tuple)) else its
        allowed = lbfgs_pairs(hist, psize, cfg.get('lbfgs_max_mb', 192))
        # a pair is stored from the second direction on: at most iters - 2
        pairs = min(allowed, max(0, int(its) - 2))
        if allowed:
            fields += 2 * pairs + 2 + (1.0 if not cfg.get('momentum', 0.65) else 0.0)
        # the path's m_n (and, pooled, v_n) kept where they fit in path_max_mb
        pooled = (cfg.get('integrator', 'euler') == 'euler' and int(cfg.get('inverse_iters', 1)) == 1
                  and cfg.get('adjoint', 'euler') == 'euler')
        fields += kept_path_fields(cfg.get('nsteps', 2), pooled, psize, cfg.get('path_max_mb', 0))
    gpu = str(device).lower() in ('gpu', 'cuda')
    where = {
        'method_fields': fields * FIELD_BYTES * n,
        'method_and_metric_images': images * IMAGE_BYTES * n,
        'kernel_spectrum': KERNEL_FIELDS * FIELD_BYTES * n,
        'scratch_pools': (max(POOLS_TOUCHED, _pools_allocated()) if gpu else POOLS_TOUCHED) * IMAGE_BYTES * n,
        'padded_inputs': (2 * IMAGE_BYTES * n) if psize != size else 0,
        'results': RESULT_FIELDS * FIELD_BYTES * n0,
        'method_fixed': METHOD_BUFFERS[method].get('fixed_bytes', 0.0),
        'metric_fixed': METRIC_FIXED_BYTES.get(_metric_name(cfg), 0.0),
    }
    host = {'inputs': 2 * IMAGE_BYTES * n0 if inputs_resident else 0,
            'python_baseline': BASELINE_BYTES, 'libraries': LIBRARY_BYTES}
    if gpu:
        if psize != size and METHOD_BUFFERS[method].get('init_alloc'):
            where['unpadded_method_buffers'] = (fields * FIELD_BYTES + METHOD_BUFFERS[method]['images']
                                                * IMAGE_BYTES) * n0
        where['cuda_context'] = CUDA_CONTEXT_DEVICE_BYTES
        where['cufft_workspace'] = IMAGE_BYTES * n        # one complex half-spectrum
        host['fftw_and_plans'] = where.pop('method_fixed')  # the CPU's plans: not on the GPU
        host['metric_fixed'] = where.pop('metric_fixed')
        where['inputs_on_device'] = 2 * IMAGE_BYTES * n0
        host['cuda_runtime'] = CUDA_CONTEXT_HOST_BYTES
        host['results_on_host'] = (FIELD_BYTES + IMAGE_BYTES) * n0
        dev_bytes = sum(where.values())
        host_bytes = sum(host.values())
        breakdown = dict(where)
    else:
        dev_bytes = 0
        breakdown = dict(where, **host)
        host_bytes = sum(breakdown.values())
    return Prediction(method, size, psize, 'gpu' if gpu else 'cpu', host_bytes, dev_bytes, breakdown)


# --------------------------------------------------------------------------- available memory

def _read_int(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    if not text or text == 'max':
        return None
    try:
        return int(text.split()[0])
    except ValueError:
        return None


def _rss_bytes():
    try:
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return 0


def _host_available():
    """MemAvailable (or the cgroup's room, whichever is smaller) plus this process's RSS."""
    avail = None
    try:
        with open('/proc/meminfo') as f:
            for line in f:
                if line.startswith('MemAvailable:'):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
        except (ValueError, OSError, AttributeError):
            return None
    for lim, cur in (('/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory.current'),
                     ('/sys/fs/cgroup/memory/memory.limit_in_bytes',
                      '/sys/fs/cgroup/memory/memory.usage_in_bytes')):
        limit, used = _read_int(lim), _read_int(cur)
        if limit is not None and used is not None and limit < 2 ** 60:
            avail = min(avail, max(0, limit - used))
            break
    return avail + _rss_bytes()


def _gpu_memory():
    """(used, total) bytes of the current CUDA device, or None (PyCA.Core.GetCUDAMemUsage)."""
    try:
        import PyCA.Core as ca
        text = ca.GetCUDAMemUsage()
    except Exception:
        return None
    m = re.search(r'used\s+(\d+)\s*MB\s+of\s+(\d+)\s*MB', text)
    if not m:
        return None
    return int(m.group(1)) * 2 ** 20, int(m.group(2)) * 2 ** 20


def available_memory(device='cpu'):
    """The memory a job may use: on the host MemAvailable or the cgroup's room,
    whichever is smaller, plus what this process holds already; on the GPU
    the device's free memory.

    Args:
        device (str): 'cpu' or 'gpu'.

    Returns:
        int or None: bytes (None: unknown).
    """
    if str(device).lower() in ('gpu', 'cuda'):
        g = _gpu_memory()
        return None if g is None else g[1] - g[0]
    return _host_available()


def check_fits(prediction, max_memory=None, who=None):
    """Refuses a job whose prediction is above ``max_memory``.

    Args:
        prediction (Prediction): the job's prediction.
        max_memory: None (available memory, :func:`available_memory`), a size (:func:`parse_bytes`),
            or 0/False (no check).
        who (str, optional): unused (the message names the method).

    Returns:
        int or None: the limit used (None: no check).

    Raises:
        MemoryLimitError: the prediction is above the limit.
    """
    limit = parse_bytes(max_memory)
    auto = limit is None
    if auto:
        limit = available_memory(prediction.device)
        if limit is None:
            return None
    elif limit == 0:
        return None
    need = prediction.bytes
    if need > limit:
        where = 'GPU memory' if prediction.device == 'gpu' else 'memory'
        src = ('available' if auto else 'allowed (max_memory / --max-memory)')
        raise MemoryLimitError(
            "this %s job on a %s grid needs about %s of %s (predicted peak) but %s is %s; "
            "resample the images to a coarser grid%s, or change the limit with max_memory "
            "(--max-memory SIZE; 0: no check)"
            % (prediction.method, 'x'.join(str(v) for v in prediction.padded_size), format_bytes(need),
               where, format_bytes(limit), src,
               ', use fewer time steps (nsteps)' if prediction.method == 'lddmm' else ''))
    return limit


# --------------------------------------------------------------------------- the driver's hook

_state = threading.local()


def check_memory(cls, cfg, grid0, mType):
    """The driver's guard (:func:`~PyCA.Apps.multiscale.register_levels`,
    after the configuration is merged, before any work): predicts the job's
    peak, records it (:func:`last_prediction`), starts sampling the GPU's
    memory on a device run, and raises MemoryLimitError when the prediction is
    above ``cfg['max_memory']``. The inner run of a padded job (``fft_pad``)
    keeps the outer run's prediction.

    Args:
        cls (type): the method's class (its ``name``).
        cfg (dict): the merged configuration.
        grid0 (GridInfo): the full-resolution grid.
        mType (MemoryType): where the method computes.

    Returns:
        Prediction, or None for a method :data:`METHOD_BUFFERS` does not list (not checked).

    Raises:
        MemoryLimitError: the prediction is above the limit.
    """
    import PyCA.Core as ca
    if getattr(cls, 'name', None) not in METHOD_BUFFERS:
        _state.pred = None            # a method the table does not know: no prediction, no check
        return None
    device = 'gpu' if mType == ca.MEM_DEVICE else 'cpu'
    size = tuple(int(v) for v in grid0.size())
    prev = getattr(_state, 'pred', None)
    if (prev is not None and getattr(_state, 'outer', False) and not cfg.get('fft_pad', True)
            and prev.method == cls.name and prev.padded_size == size and prev.device == device):
        _state.outer = False          # the padded run of the job just checked
        return prev
    pred = predict_peak(cls.name, grid0, cfg, device)
    _state.pred, _state.outer = pred, pred.padded_size != pred.size
    if device == 'gpu':
        _DevicePeak.start()
    check_fits(pred, cfg.get('max_memory'))
    return pred


def last_prediction():
    """Prediction or None: the last one :func:`check_memory` made in this thread."""
    return getattr(_state, 'pred', None)


class _DevicePeak(object):
    """The most GPU memory in use, sampled every 20 ms from the first device
    run of the process (PyCA.Core has no peak counter)."""
    peak = None
    _thread = None

    @classmethod
    def start(cls):
        if cls._thread is not None or _gpu_memory() is None:
            return

        def loop():
            import time
            while True:
                g = _gpu_memory()
                if g is not None:
                    cls.peak = max(cls.peak or 0, g[0])
                time.sleep(0.02)
        cls._thread = threading.Thread(target=loop, name='pyca-device-peak', daemon=True)
        cls._thread.start()


def peak_rss():
    """This process's peak resident set in bytes: ``VmHWM`` of
    /proc/self/status (the high-water mark of this process image), else
    ``ru_maxrss`` (which, on Linux, a process started by a larger parent
    inherits: it keeps the parent's size at the fork across the exec).

    Returns:
        int.
    """
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(ru if sys.platform == 'darwin' else ru * 1024)


def measured_peak():
    """The measured peaks so far: ``peak_rss_bytes`` (:func:`peak_rss`: the
    process's peak resident set) and ``device_peak_bytes`` (the most GPU
    memory in use while a device run went, sampled; None without one).

    Returns:
        dict.
    """
    return {'peak_rss_bytes': peak_rss(), 'device_peak_bytes': _DevicePeak.peak}


def memory_summary(result=None):
    """summary.json's ``memory`` object: the prediction of the last job
    checked in this thread (where it is ``result``'s method) beside the
    measured peaks.

    Args:
        result (RegistrationResult, optional): the result written.

    Returns:
        dict: ``predicted_host_bytes``, ``predicted_device_bytes``, ``peak_rss_bytes``,
        ``device_peak_bytes``, ``padded_size``, ``breakdown`` (None where unknown).
    """
    pred = last_prediction()
    if pred is not None and result is not None and getattr(result, 'method', pred.method) != pred.method:
        pred = None
    out = {'predicted_host_bytes': None, 'predicted_device_bytes': None}
    if pred is not None:
        out.update(pred.as_dict())
        for k in ('method', 'device', 'size'):
            out.pop(k, None)
    out.update(measured_peak())
    return out


# --------------------------------------------------------------------------- command line

def main(argv=None):
    """``python -m PyCA.Apps.memory --method M --size X Y Z [--device gpu] [--set KEY=VALUE]``:
    prints the prediction and its items.

    Args:
        argv (list of str, optional): the arguments; default None = ``sys.argv[1:]``.

    Returns:
        int: 0.
    """
    p = argparse.ArgumentParser(prog='python -m PyCA.Apps.memory',
                                description='Predicted peak memory of a registration.')
    p.add_argument('--method', default='lddmm', choices=sorted(METHOD_BUFFERS))
    p.add_argument('--size', type=int, nargs='+', required=True, metavar='N',
                   help='grid size (1 to 3 values; one value: a cube)')
    p.add_argument('--spacing', type=float, nargs=3, default=(1.0, 1.0, 1.0))
    p.add_argument('--device', default='cpu', choices=('cpu', 'gpu'))
    p.add_argument('--set', action='append', default=[], metavar='KEY=VALUE',
                   help='a parameter of the method (JSON value), e.g. nsteps=4, metric="ssd"')
    a = p.parse_args(argv)
    import json
    size = list(a.size) * 3 if len(a.size) == 1 else (list(a.size) + [1, 1])[:3]
    cfg = {}
    for kv in a.set:
        k, _, v = kv.partition('=')
        try:
            cfg[k.replace('-', '_')] = json.loads(v)
        except ValueError:
            cfg[k.replace('-', '_')] = v
    import PyCA.Core as ca
    grid = ca.GridInfo(ca.Vec3Di(*size), ca.Vec3Df(*a.spacing), ca.Vec3Df(0.0, 0.0, 0.0))
    pr = predict_peak(a.method, grid, cfg, a.device)
    print('%s %s (computed on %s) on the %s:' % (a.method, 'x'.join(map(str, pr.size)),
                                                 'x'.join(map(str, pr.padded_size)), a.device.upper()))
    if pr.device == 'gpu':
        print('  predicted peak device memory: %s (%d bytes)' % (format_bytes(pr.device_bytes), pr.device_bytes))
    print('  predicted peak host memory:   %s (%d bytes)' % (format_bytes(pr.host_bytes), pr.host_bytes))
    for k, v in sorted(pr.breakdown.items(), key=lambda kv: -kv[1]):
        if v:
            print('    %-26s %10s' % (k, format_bytes(v)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
