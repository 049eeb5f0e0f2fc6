"""OpenMP defaults of the CPU back end, set when ``PyCA`` is imported, before
``PyCA.Core`` loads the OpenMP runtime (libgomp reads its environment once,
when it is loaded). Only variables the user has not set are touched.

* **Wait policy.** libgomp's default spins about 300,000 times (a few
  milliseconds) at every barrier before a waiting thread sleeps. On an idle
  machine that makes the next parallel region start at once; on a shared
  one the thread being waited for is often descheduled, and each of the
  thousands of small regions of a registration then burns a scheduler slice
  spinning (the demo's 4-mm LDDMM with both cores busy elsewhere: 1.7x
  the one-thread time here, up to 45x in other builds and runs). PyCA sets ``GOMP_SPINCOUNT`` (:data:`SPIN_COUNT`) unless
  ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is set: a short spin that still
  covers the gap between back-to-back regions, then sleep.
* **Thread count.** libgomp starts one thread per CPU of the affinity mask
  (``os.sched_getaffinity``: taskset, Slurm and MPI bindings). PyCA also
  honours a CPU quota of the cgroup (``cpu.max``: containers, Slurm's
  cgroup plugin) and divides by the number of ranks of an MPI job on this
  node (``OMPI_COMM_WORLD_LOCAL_SIZE``, ``MPI_LOCALNRANKS``,
  ``SLURM_NTASKS_PER_NODE``), so that ranks do not oversubscribe the cores.
  It sets ``OMP_NUM_THREADS`` only when that count is below the affinity
  mask's, and never when ``OMP_NUM_THREADS`` is set.
* **At run time** (``PyCA.Core``, not this module) each parallel region runs
  on ``GetCPUThreads()`` threads: that count, lowered while other processes
  keep the allowed CPUs busy (measured from ``/proc/stat`` every 100 ms).
  A thread on a core another process holds makes every barrier wait a
  scheduler slice: the demo's 4-mm LDDMM with both cores busy took 3x its
  one-thread time with a fixed team, 1.1x with the adaptive one.
  ``PYCA_ADAPTIVE_THREADS=0`` or ``SetCPUThreadsAdaptive(False)`` turns it off.

:func:`configure` returns what it decided; ``PyCA.threading_info()`` reports it.
"""
import math
import os

#: GOMP_SPINCOUNT set by default: about a millisecond of spinning (x86 PAUSE)
#: before a waiting thread sleeps. Measured on the 2-core CI machine kind:
#: 10000 made the 4-mm greedy 10-20 % slower on an idle machine, 300000 (the
#: libgomp default) the 4-mm LDDMM 1.7x slower with both cores busy.
SPIN_COUNT = 30000

_info = {}


def _affinity_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cgroup_cpu_quota(root='/sys/fs/cgroup'):
    """CPUs allowed by the cgroup's CPU quota, or None without a quota.

    Reads cgroup v2 ``cpu.max`` ("max 100000" or "<quota> <period>") of this
    process's cgroup, else cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``.

    Args:
        root (str): the cgroup file-system mount point; default '/sys/fs/cgroup'.

    Returns:
        int or None: ceil(quota / period), at least 1; None when unlimited or unreadable.
    """
    rel = ''
    try:
        with open('/proc/self/cgroup') as f:
            for line in f:
                parts = line.strip().split(':', 2)
                if len(parts) == 3 and parts[0] == '0':
                    rel = parts[2].lstrip('/')
    except OSError:
        pass
    for d in ([os.path.join(root, rel)] if rel else []) + [root]:
        try:
            with open(os.path.join(d, 'cpu.max')) as f:
                q, p = f.read().split()[:2]
            if q == 'max':
                return None
            return max(1, math.ceil(int(q) / int(p)))
        except (OSError, ValueError):
            continue
    try:
        with open(os.path.join(root, 'cpu', 'cpu.cfs_quota_us')) as f:
            q = int(f.read())
        with open(os.path.join(root, 'cpu', 'cpu.cfs_period_us')) as f:
            p = int(f.read())
        if q > 0 and p > 0:
            return max(1, math.ceil(q / p))
    except (OSError, ValueError):
        pass
    return None


def local_ranks(env=None):
    """The number of MPI ranks (or Slurm tasks) on this node; 1 outside a job.

    Args:
        env (dict, optional): the environment; default ``os.environ``.

    Returns:
        int: at least 1.
    """
    env = os.environ if env is None else env
    for k in ('OMPI_COMM_WORLD_LOCAL_SIZE', 'MPI_LOCALNRANKS', 'MV2_COMM_WORLD_LOCAL_SIZE',
              'PMI_LOCAL_SIZE', 'SLURM_NTASKS_PER_NODE'):
        v = env.get(k, '').split('(')[0].split(',')[0].strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    return 1


def default_threads(env=None, root='/sys/fs/cgroup'):
    """The thread count PyCA's CPU back end should use by default: the CPUs of
    the affinity mask, capped by the cgroup quota, divided among the ranks on
    this node (at least 1).

    Args:
        env (dict, optional): the environment; default ``os.environ``.
        root (str): the cgroup mount point; default '/sys/fs/cgroup'.

    Returns:
        int: the thread count.
    """
    n = _affinity_cpus()
    q = cgroup_cpu_quota(root)
    if q is not None:
        n = min(n, q)
    return max(1, n // local_ranks(env))


def _gomp_loaded():
    try:
        with open('/proc/self/maps') as f:
            return any('libgomp' in line for line in f)
    except OSError:
        return False


def configure(env=None):
    """Sets the OpenMP defaults described in the module docstring (once, at
    ``import PyCA``).

    Args:
        env (dict, optional): the environment to update; default ``os.environ``.

    Returns:
        dict: ``threads`` (the count chosen, or None when OMP_NUM_THREADS was
        set), ``spin_count`` (set, or None when the user chose a policy),
        ``runtime_loaded`` (libgomp was already loaded: the wait policy could not
        take effect).
    """
    env = os.environ if env is None else env
    loaded = _gomp_loaded()
    info = {'threads': None, 'spin_count': None, 'runtime_loaded': loaded}
    if 'GOMP_SPINCOUNT' not in env and 'OMP_WAIT_POLICY' not in env:
        env['GOMP_SPINCOUNT'] = str(SPIN_COUNT)
        info['spin_count'] = SPIN_COUNT
    if not env.get('OMP_NUM_THREADS', '').strip():
        n = default_threads(env)
        info['threads'] = n
        if n < _affinity_cpus():
            env['OMP_NUM_THREADS'] = str(n)
            if loaded:
                try:
                    import ctypes
                    ctypes.CDLL('libgomp.so.1').omp_set_num_threads(n)
                except OSError:
                    pass
    _info.clear()
    _info.update(info)
    return info


def threading_info():
    """What :func:`configure` decided at ``import PyCA`` (a copy), and the
    CPU back end's team now.

    Returns:
        dict: the keys of :func:`configure`, plus ``max_threads``
        (``GetCPUMaxThreads()``), ``threads_now`` (``GetCPUThreads()``: fewer
        while other processes keep the CPUs busy) and ``adaptive``
        (``GetCPUThreadsAdaptive()``) and ``fft_backend`` (``GetCPUFFTBackend()``:
        'fftw', or 'pocketfft' in a build without FFTW); those are None when
        ``PyCA.Core`` cannot be imported.
    """
    info = dict(_info)
    try:
        from . import Core
        info.update(max_threads=Core.GetCPUMaxThreads(), threads_now=Core.GetCPUThreads(),
                    adaptive=Core.GetCPUThreadsAdaptive(), fft_backend=Core.GetCPUFFTBackend())
    except ImportError:
        info.update(max_threads=None, threads_now=None, adaptive=None, fft_backend=None)
    return info
