"""Shared plumbing of the registration apps: configuration, devices, memory,
multiscale set-up, progress bars and the result object.

Every app follows the same pattern, the one PyCA users have always written::

    cfg = merge_config(DEFAULTS, config, overrides)      # dict / YAML / kwargs
    mType = compute_mem_type(cfg['device'], fixed)        # MEM_HOST or MEM_DEVICE
    I0, I1 = on_mem(fixed, mType), on_mem(moving, mType)  # copies when needed
    ensure_thread_memory_manager(I0.grid(), mType)        # scratch for the operators
    for each scale (MultiscaleManager + MultiscaleResamplerGauss*):
        ... per-iteration PyCA.Core calls, energy appended, progress bar updated ...
    return RegistrationResult(...)
"""
import copy
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List, Optional

import PyCA.Core as ca

__all__ = ['RegistrationResult', 'merge_config', 'load_config', 'compute_mem_type',
           'gpu_available', 'same_grid', 'on_mem', 'ensure_thread_memory_manager', 'make_fluid_kernel', 'kernel_of', 'gaussian_filter_of',
           'make_resampler', 'make_multiscale', 'release_thread_memory_manager', 'release_unused_scratch',
           'scratch_field', 'scratch_image', 'polish_inverse', 'FaceSlabs', 'jacobian_rim', 'FoldGuard', 'gain_search', 'gain_wanted',
           'Progress', 'check_pair', 'mem_name', 'ConfigError']


class ConfigError(ValueError):
    """A configuration key or value the app does not accept."""


# --------------------------------------------------------------------------- config

def load_config(config):
    """A plain dict from ``config``: None, a dict, or the path of a YAML file
    (a mapping at top level).

    Args:
        config (None, dict or str): the configuration: None (empty), a dict (copied), or the path of
            a YAML file.

    Returns:
        dict: a new dict.

    Raises:
        ConfigError: a missing or invalid YAML file (not a mapping), PyYAML missing, or a value that
            is not None/dict/str.
    """
    if config is None:
        return {}
    if isinstance(config, dict):
        return copy.deepcopy(config)
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not os.path.isfile(path):
            raise ConfigError("configuration file not found: %s" % path)
        try:
            import yaml
        except ImportError as e:  # pragma: no cover - pyyaml is installed by ./run
            raise ConfigError("reading %s needs PyYAML (pip install pyyaml)" % path) from e
        try:
            with open(path) as f:
                data = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise ConfigError("configuration file %s is not valid YAML: %s" % (path, e)) from None
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ConfigError("configuration file %s must hold a mapping of keys to values" % path)
        return data
    raise ConfigError("config must be None, a dict or a YAML file path, got %s"
                      % type(config).__name__)


def _coerce(key, default, value):
    """``value`` converted to the type of ``default`` (lists of numbers stay lists)."""
    if default is None or value is None:
        return value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ('true', 'yes', '1', 'on', 'false', 'no', '0', 'off'):
            return value.lower() in ('true', 'yes', '1', 'on')
        raise ConfigError("%s must be true or false, got %r" % (key, value))
    if isinstance(value, str) and isinstance(default, numbers.Real) and not isinstance(default, bool):
        try:
            value = float(value.strip())
        except ValueError:
            raise ConfigError("%s must be a number, got %r" % (key, value)) from None
    if isinstance(default, numbers.Integral):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value:
            raise ConfigError("%s must be an integer, got %r" % (key, value))
        return int(value)
    if isinstance(default, numbers.Real):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError("%s must be a number, got %r" % (key, value))
        return float(value)
    if isinstance(default, (list, tuple)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, str):
            value = [v for v in value.replace(' ', '').split(',') if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError("%s must be a list, got %r" % (key, value))
        if default:
            proto = default[0]
            return [_coerce(key, proto, v) for v in value]
        return list(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError("%s must be a string, got %r" % (key, value))
        return value
    return value


def merge_config(defaults, config=None, overrides=None):
    """``defaults`` updated by ``config`` (dict or YAML path) then by
    ``overrides`` (keyword arguments). Unknown keys raise ConfigError (a typo
    never passes silently); values are converted to the default's type.
    Keys may use '-' or '_'.

    Args:
        defaults (dict): the app's ``DEFAULTS``: every known key with its default value (whose type
            the given values are converted to).
        config (None, dict or str, optional): configuration dict or YAML file path; default None.
        overrides (dict, optional): keyword overrides, applied last; default None.

    Returns:
        dict: the merged configuration.

    Raises:
        ConfigError: an unknown key or a value of the wrong type.
    """
    out = copy.deepcopy(defaults)
    for src in (load_config(config), overrides or {}):
        for k, v in src.items():
            key = str(k).replace('-', '_')
            if key not in out:
                raise ConfigError("unknown parameter %r (known: %s)" % (k, ', '.join(sorted(out))))
            out[key] = _coerce(key, defaults[key], v)
    return out


# --------------------------------------------------------------------------- devices, memory

def gpu_available():
    """True where this build has CUDA and a device is present."""
    try:
        return hasattr(ca, 'FluidKernelFFTGPU') and ca.GetNumberOfCUDADevices() > 0
    except Exception:
        return False


def mem_name(mType):
    """The name of a memory type: 'MEM_HOST', 'MEM_DEVICE' (else ``str(mType)``).

    Args:
        mType (MemoryType): the memory type.

    Returns:
        str: its name.
    """
    return {ca.MEM_HOST: 'MEM_HOST', ca.MEM_DEVICE: 'MEM_DEVICE'}.get(mType, str(mType))


def compute_mem_type(device, image=None):
    """The memory type the app computes in: 'cpu' -> MEM_HOST, 'gpu' ->
    MEM_DEVICE (RuntimeError 'no CUDA device ...' where none exists), 'auto' ->
    the memory type of ``image`` (device memory stays on the GPU, anything else
    runs on the CPU).

    Args:
        device (str): 'cpu', 'gpu' or 'auto'.
        image (Image3D, optional): the input whose memory type 'auto' follows; default None (CPU).

    Returns:
        MemoryType: MEM_HOST or MEM_DEVICE.

    Raises:
        RuntimeError: 'gpu' without a CUDA device.
        ConfigError: another ``device`` string.
    """
    device = (device or 'auto').lower()
    if device == 'auto':
        if image is not None and image.memType() == ca.MEM_DEVICE:
            return ca.MEM_DEVICE
        return ca.MEM_HOST
    if device == 'cpu':
        return ca.MEM_HOST
    if device in ('gpu', 'cuda'):
        if not gpu_available():
            raise RuntimeError("a GPU was asked for, but no CUDA device is available "
                               "(this build %s CUDA)" % ('has' if hasattr(ca, 'FluidKernelFFTGPU')
                                                          else 'has no'))
        return ca.MEM_DEVICE
    raise ConfigError("device must be 'cpu', 'gpu' or 'auto', got %r" % device)


def on_mem(obj, mType):
    """``obj`` itself if it lives exactly in ``mType`` memory, else a copy there
    (the caller's object is never moved). Pinned host memory is copied too:
    the operators need all their operands in one memory type.

    Args:
        obj (Image3D or Field3D): the object to place.
        mType (MemoryType): MEM_HOST or MEM_DEVICE (MEM_HOST_PINNED is copied to MEM_HOST by the
            apps).

    Returns:
        Image3D or Field3D: ``obj`` or its copy.
    """
    if obj.memType() == mType:
        return obj
    out = ca.Image3D(obj.grid(), mType) if isinstance(obj, ca.Image3D) else ca.Field3D(obj.grid(), mType)
    ca.Copy(out, obj)
    return out


def ensure_thread_memory_manager(grid, mType, nPools=4):
    """Initialises the ThreadMemoryManager for ``grid``/``mType`` (the pool the
    operators and the multiscale resamplers take scratch from). An existing
    manager of the same memory type whose grid holds ``grid`` is kept.

    Args:
        grid (GridInfo): the grid (size, spacing, origin).
        mType (MemoryType): MEM_HOST or MEM_DEVICE (MEM_HOST_PINNED is copied to MEM_HOST by the
            apps).
        nPools (int): scratch pools allocated up front; default 4 (the operators
            the apps call hold at most 3 at once; more are added on demand, and
            on the GPU every pool is device memory held for the whole run).
    """
    if _pool_fits(grid, mType):
        return
    tmm = ca.ThreadMemoryManager
    if tmm.isInitialized():
        tmm.destroy()
    tmm.init(grid, mType, nPools)


def _pool_fits(grid, mType):
    tmm = ca.ThreadMemoryManager
    if not tmm.isInitialized():
        return False
    mm = tmm.instance()
    return mm.memType() == mType and mm.grid().nVox() >= grid.nVox()


def scratch_field(grid, mType):
    """A Field3D for temporary use: borrowed from the thread's memory
    manager (``ManagedField3D``: three of its pools, handed back when the
    object is released) where the manager holds ``grid`` in ``mType``
    memory, else a new Field3D. Scratch that is borrowed only while an
    operation runs is shared between operations (the LDDMM adjoint's
    temporaries and the metric's), so the peak holds one set, not one per
    user.

    Args:
        grid (GridInfo): the grid.
        mType (MemoryType): the memory type.

    Returns:
        Field3D: uninitialised.
    """
    if _pool_fits(grid, mType):
        return ca.ManagedField3D(grid, mType)
    return ca.Field3D(grid, mType)


def scratch_image(grid, mType):
    """An Image3D for temporary use (one pool; :func:`scratch_field`).

    Args:
        grid (GridInfo): the grid.
        mType (MemoryType): the memory type.

    Returns:
        Image3D: uninitialised.
    """
    if _pool_fits(grid, mType):
        return ca.ManagedImage3D(grid, mType)
    return ca.Image3D(grid, mType)


class FaceSlabs:
    """Sets a volume to a constant on the outer faces of its grid: both faces
    of every axis of at least ``min_len`` voxels, ``width`` voxels deep, by
    ``SetSubVol_I`` of one constant slab per axis (a face's worth of memory,
    not a grid's). Greedy zeroes its steps on the faces with it
    (``greedy.BoundaryFaces``); ``polish_inverse`` masks the rim of its
    det J with it.

    Args:
        grid (GridInfo): the grid of the volumes it sets.
        mType (MemoryType): their memory type.
        width (int): the slabs' depth in voxels.
        value (float): the value set (every component of a field).
        field (bool): the volumes are Field3D (else Image3D).
        min_len (int): axes shorter than this keep their faces.
    """

    def __init__(self, grid, mType, width=1, value=0.0, field=True, min_len=2):
        n = grid.size()
        n = (n.x, n.y, n.z)
        self.slabs = []
        for ax in range(3):
            if n[ax] < min_len:
                continue
            sz = list(n)
            sz[ax] = width
            g = ca.GridInfo(ca.Vec3Di(*sz))
            if field:
                slab = ca.Field3D(g, mType)
                ca.SetMem(slab, ca.Vec3Df(value, value, value))
            else:
                slab = ca.Image3D(g, mType)
                ca.SetMem(slab, float(value))
            for start in (0, n[ax] - width):
                st = [0, 0, 0]
                st[ax] = start
                self.slabs.append((slab, ca.Vec3Di(*st)))

    def fill(self, vol):
        """Sets ``vol`` (on the grid, of the kind given) to the value on the faces.

        Args:
            vol (Field3D or Image3D): changed in place.
        """
        for slab, st in self.slabs:
            ca.SetSubVol_I(vol, slab, st)


def jacobian_rim(grid, mType):
    """The rim a fold check leaves out: the outer 2 voxels of both faces of every
    axis of 5 or more voxels, set to 1 in a det J image (:class:`FaceSlabs`). There
    ``JacDetHVoxel``'s differences are one-sided and the H-field's samples clamped or
    from outside the grid, which a fold check must not read as a fold.
    ``polish_inverse`` and LDDMM's shooter judge their det J off it.

    Args:
        grid (GridInfo): the det J image's grid.
        mType (MemoryType): its memory type.

    Returns:
        FaceSlabs.
    """
    return FaceSlabs(grid, mType, width=2, value=1.0, field=False, min_len=5)


class FoldGuard:
    """Judges candidate H-fields against a start: a candidate folds where
    its min det J (``JacDetHVoxel``; off the faces of ``rim`` where one is
    given) is not above ``min(0, the start's)`` -- it may fold no more than
    the start did (a NaN folds). ``polish_inverse`` and the final gains of
    greedy and elastic use it.

    Args:
        jac (Image3D): the det J scratch (on the fields' grid; overwritten).
        rim (FaceSlabs, optional): faces set in ``jac`` before its minimum
            (to a value that cannot be the minimum); default None.
    """
    def __init__(self, jac, rim=None):
        self.jac, self.rim, self.floor = jac, rim, None

    def min_jac(self, h):
        """The min det J of an H-field (off the rim).

        Args:
            h (Field3D): the H-field (on ``jac``'s grid).

        Returns:
            float.
        """
        ca.JacDetHVoxel(self.jac, h)
        if self.rim is not None:
            self.rim.fill(self.jac)
        return ca.Min(self.jac)

    def start(self, h):
        """Sets the start the candidates are judged against.

        Args:
            h (Field3D): the start's H-field.
        """
        self.floor = min(0.0, self.min_jac(h))

    def folds(self, h):
        """Whether a candidate folds more than the start.

        Args:
            h (Field3D): the candidate H-field.

        Returns:
            bool.
        """
        return not self.min_jac(h) > self.floor


def polish_inverse(hinv, h, iters, scratch, r=None, jac=None):
    """Makes ``hinv`` the inverse of ``h`` (``h o hinv = x``) by at most
    ``iters`` iterations of ``hinv <- hinv o (2x - h o hinv)`` from ``hinv``
    itself. The residual ``r = h o hinv`` is near the identity, so
    ``2x - r`` is its inverse to second order (``InverseZerothOrder``); on an
    affine map this is the Newton-Schulz iteration, whose error squares each
    time whatever ``h``'s stretch (the plain ``hinv <- hinv - (h o hinv - x)``
    diverges where ``h`` stretches more than twofold). Where the residual is
    far from the identity (a disc pulled into a C: ``h`` stretches 300-fold
    at the slit) it diverges locally and folds ``hinv``: a candidate whose
    min det J off the grid's outer 2 voxels (where ``2x - h o hinv`` samples
    ``hinv`` outside the grid) is <= 0 (and lower than at the start) is not
    taken, and the polishing stops there. LDDMM's and greedy's results use
    it (their figures: their module notes).

    Args:
        hinv (Field3D): the H-field to polish, in place.
        h (Field3D): the H-field it inverts (same grid and memory type).
        iters (int): the most iterations (0: none).
        scratch (Field3D): overwritten (each iteration's candidate).
        r (Field3D, optional): overwritten; default None: borrowed while it runs.
        jac (Image3D, optional): overwritten; default None: borrowed while it runs.

    Returns:
        int: the iterations kept.
    """
    if iters <= 0:
        return 0
    g, mt = hinv.grid(), hinv.memType()
    r = scratch_field(g, mt) if r is None else r
    jac = scratch_image(g, mt) if jac is None else jac
    # the outer 2 voxels of each face: ones (there 2x - h o hinv samples hinv outside
    # the grid, its background, which a fold check must not read as a fold)
    guard = FoldGuard(jac, jacobian_rim(g, mt))
    try:
        guard.start(hinv)
        for k in range(int(iters)):
            ca.ComposeHH(r, h, hinv)
            ca.InverseZerothOrder_I(r)               # 2x - h o hinv
            ca.ComposeHH(scratch, hinv, r)           # the candidate
            if guard.folds(scratch):                 # folded (or NaN): not taken
                return k
            ca.Copy(hinv, scratch)
        return int(iters)
    finally:
        del r, jac, guard


def gain_wanted(gain, metric):
    """Whether a registration's final gain runs: ``gain`` 'on', or 'auto'
    with any metric but MI (on the T2-like demo pair every gain above 1 raised
    LDDMM's error although it lowered MI's energy: 1.47 -> 1.50 mm at 1.04).

    Args:
        gain (str): the ``gain`` parameter: 'auto', 'on' or 'off'.
        metric (Metric): the registration's metric (its ``name``).

    Returns:
        bool.
    """
    if gain == 'auto':
        return str(getattr(metric, 'name', 'ssd')).lower() != 'mi'
    return gain == 'on'


def gain_search(E, step=0.02, lo=0.8, hi=1.25, most=8):
    """The factor s near 1 that minimises ``E(s)`` (a registration's image
    term along its deformation scaled by s: LDDMM's geodesic from ``s m0``,
    greedy's ``x + s (h - x)``). It steps by ``step`` from 1 in the direction
    that lowers E (s within [lo, hi], at most ``most`` evaluations) until
    E rises, then takes the vertex of the parabola through the three points
    around the lowest (not evaluated: usually 3 or 4 evaluations in all).
    ``E`` may return inf (an unusable s: a rise). Ties go to the s nearest 1.

    Args:
        E (callable): float -> float, the energy at s (it may change the caller's state).
        step (float): the step in s.
        lo (float): the smallest s.
        hi (float): the largest s.
        most (int): the most evaluations.

    Returns:
        float: the best s (1.0 where no step lowers E); the caller's state is that
        of the last evaluation, not necessarily of s.
    """
    def ev(x):
        e = E(x)
        return e if math.isfinite(e) else math.inf

    seen = {0: ev(1.0)}                      # k -> E(1 + k step)
    d = 1
    seen[1] = ev(1.0 + step)
    if not seen[1] < seen[0]:
        d = -1
        seen[-1] = ev(1.0 - step)
    k = d
    while len(seen) < most and seen[k] < seen[k - d] and lo <= 1.0 + (k + d) * step <= hi:
        k += d
        seen[k] = ev(1.0 + k * step)
    kb = min(seen, key=lambda j: (seen[j], abs(j)))
    best = 1.0 + kb * step
    es = [seen.get(j, math.inf) for j in (kb - 1, kb, kb + 1)]
    curv = es[0] - 2.0 * es[1] + es[2]
    if math.isfinite(curv) and curv > 0:
        # a bracket (the middle is the lowest): its parabola's vertex, within it
        v = best + 0.5 * step * (es[0] - es[2]) / curv
        if lo <= v <= hi:
            best = v
    return best


def release_unused_scratch():
    """Frees the ThreadMemoryManager's pools that no operator holds
    (``MemoryManager.releaseUnused``): the multiscale driver calls it before
    each level's iterations, so that the full-resolution scratch the
    down-sampling used is not resident through the finest level's peak
    (an operator that needs a pool again gets a new one)."""
    tmm = ca.ThreadMemoryManager
    if tmm.isInitialized():
        tmm.instance().releaseUnused()


def release_thread_memory_manager():
    """Releases the ThreadMemoryManager, if any, without its "Maximum
    temporary Pools" report on stderr (``ThreadMemoryManager.release()``, the
    documented quiet end; ``destroy()`` keeps the legacy report). The command
    lines call this before they exit, so that a run ends with their own lines
    only."""
    tmm = ca.ThreadMemoryManager
    if tmm.isInitialized():
        tmm.release()


def make_fluid_kernel(grid, mType, alpha, beta, gamma, lpow=1, tol=0.0):
    """A FluidKernelFFT{CPU,GPU} for ``grid`` with L = -alpha lap - beta grad div + gamma.

    The apps call the kernel hundreds of times, so on the CPU they ask FFTW for
    measured plans (``PYCA_FFTW_PLANNER=measure`` unless the user set it, read
    once per process at the first kernel): about a second per new grid size,
    then free through the wisdom file, and 1.5-4x faster transforms on
    awkward sizes than the library's default estimated plans (99x117x95 with
    2 threads: 24 ms instead of 102 ms).

    Args:
        grid (GridInfo): the grid (size, spacing, origin).
        mType (MemoryType): MEM_HOST or MEM_DEVICE (MEM_HOST_PINNED is copied to MEM_HOST by the
            apps).
        alpha (float): weight of the Laplacian term of L.
        beta (float): weight of the grad-div term of L.
        gamma (float): weight of the identity term of L (> 0 keeps L invertible).
        lpow (int): power of L applied; default 1.
        tol (float): spectral tolerance of K (``setSpectralTolerance``): the frequencies where
            K's multiplier is at most ``tol`` times its largest are dropped; default 0 (exact).

    Returns:
        FluidKernelFFTCPU or FluidKernelFFTGPU (MEM_DEVICE).
    """
    if mType != ca.MEM_DEVICE:
        os.environ.setdefault('PYCA_FFTW_PLANNER', 'measure')
    cls = ca.FluidKernelFFTGPU if mType == ca.MEM_DEVICE else ca.FluidKernelFFTCPU
    k = cls()
    k.setAlpha(float(alpha))
    k.setBeta(float(beta))
    k.setGamma(float(gamma))
    if lpow != 1:
        k.setLPow(int(lpow))
    if tol:
        try:
            k.setSpectralTolerance(float(tol))
        except ValueError as e:
            raise ConfigError("kernel_tol must be in [0, 1), got %r" % (tol,)) from e
    k.setGrid(grid)
    return k


def kernel_of(grid, mType, cfg):
    """:func:`make_fluid_kernel` with the ``alpha``, ``beta``, ``gamma`` and
    ``lpow`` (1 where the method has none) and ``kernel_tol`` (0 where it has none) of an
    app's parameters: one place,
    so that a registration and the code around it (the atlas's centring) use
    the same K.

    Args:
        grid (GridInfo): the grid.
        mType (MemoryType): MEM_HOST or MEM_DEVICE.
        cfg (dict): the method's merged parameters.

    Returns:
        FluidKernelFFTCPU or FluidKernelFFTGPU.
    """
    return make_fluid_kernel(grid, mType, cfg['alpha'], cfg['beta'], cfg['gamma'], cfg.get('lpow', 1),
                             cfg.get('kernel_tol', 0.0))


def gaussian_filter_of(grid, mType, sigma):
    """A Gaussian filter (GaussianFilterCPU / GaussianFilterGPU) for images and
    fields on ``grid``: standard deviation ``sigma`` voxels along every axis
    of more than one voxel (none along a one-voxel axis: 2-D images stay 2-D),
    kernel half-width ceil(4 sigma).

    Args:
        grid (GridInfo): the grid.
        mType (MemoryType): MEM_DEVICE gives the GPU filter, anything else the CPU one.
        sigma (float): the standard deviation in voxels (> 0).

    Returns:
        GaussianFilterCPU or GaussianFilterGPU.
    """
    filt = ca.GaussianFilterGPU() if mType == ca.MEM_DEVICE else ca.GaussianFilterCPU()
    size = grid.size()
    r = max(1, int(math.ceil(4.0 * float(sigma))))
    on = [int(size[i]) > 1 for i in range(3)]
    filt.updateParams(size, ca.Vec3Df(*[float(sigma) if o else 1e-3 for o in on]),
                      ca.Vec3Di(*[r if o else 0 for o in on]))
    return filt


def make_resampler(grid, mType, gauss=True):
    """The multiscale resampler of the apps for ``grid`` in ``mType`` memory.

    Args:
        grid (GridInfo): the finest grid.
        mType (MemoryType): MEM_DEVICE gives the GPU resampler, anything else the CPU one.
        gauss (bool): Gaussian-smoothing resampler (MultiscaleResamplerGauss*, True: default) or
            the plain one (MultiscaleResampler*).

    Returns:
        MultiscaleResamplerGaussCPU/GPU or MultiscaleResamplerCPU/GPU.
    """
    if mType == ca.MEM_DEVICE:
        cls = ca.MultiscaleResamplerGaussGPU if gauss else ca.MultiscaleResamplerGPU
    else:
        cls = ca.MultiscaleResamplerGaussCPU if gauss else ca.MultiscaleResamplerCPU
    return cls(grid)


def make_multiscale(grid, scales):
    """A MultiscaleManager over ``grid`` with the given down-sampling factors
    (coarse to fine; duplicates removed; factor 1 always included). The
    manager's level printing is silent unless verbose (our MultiscaleManager).

    Args:
        grid (GridInfo): the grid (size, spacing, origin).
        scales (iterable of int): down-sampling factors, each >= 1.

    Returns:
        tuple: (MultiscaleManager, list of the factors, coarse to fine).

    Raises:
        ConfigError: a factor below 1.
    """
    facs = sorted({int(s) for s in scales} | {1}, reverse=True)
    for f in facs:
        if f < 1:
            raise ConfigError("scale factors must be >= 1, got %r" % (scales,))
    sm = ca.MultiscaleManager(grid)
    for f in facs:
        sm.addScaleLevel(f)
    return sm, facs


def fft_size(n, facs):
    """The smallest size m >= n whose FFT is fast at every scale: m divisible by
    every factor of ``facs`` and each m / f a product of 2, 3, 5 and 7
    (FFTW's fastest sizes; a prime such as 59 or 109 is several times slower).

    Args:
        n (int): a grid size along one axis (>= 1; 1 stays 1).
        facs (iterable of int): the down-sampling factors of the multiscale schedule.

    Returns:
        int: the padded size.
    """
    n = int(n)
    if n <= 1:
        return n
    facs = sorted({int(f) for f in facs} | {1})
    lcm = 1
    for f in facs:
        lcm = lcm * f // math.gcd(lcm, f)

    def smooth(k):
        for p in (2, 3, 5, 7):
            while k % p == 0:
                k //= p
        return k == 1
    m = -(-n // lcm) * lcm
    while not all(smooth(m // f) for f in facs):
        m += lcm
    return m


def _padded_grid(grid, size):
    return ca.GridInfo(ca.Vec3Di(*size), grid.spacing(), grid.origin())


def pad_image(im, size, mType):
    """``im`` extended at the far end of each axis to ``size`` voxels by
    replicating its last slice (what CLAMP sampling sees beyond the edge);
    spacing and origin are kept, so voxel coordinates are unchanged.

    Args:
        im (Image3D): the image.
        size (sequence of int): the new size, each >= the image's.
        mType (MemoryType): memory type of the result.

    Returns:
        Image3D: the padded copy.
    """
    import numpy as np
    host = on_mem(im, ca.MEM_HOST)
    a = np.asarray(host.asnp())
    pad = [(0, int(size[d]) - a.shape[d]) for d in range(3)]
    out = ca.Image3D(_padded_grid(im.grid(), size), ca.MEM_HOST)
    out.asnp()[...] = np.pad(a, pad, mode='edge')
    return on_mem(out, mType)


def crop_field(f, grid, mType):
    """The sub-block of ``f`` on ``grid`` (the voxels [0, size) of each axis,
    as padded by :func:`pad_image`), in ``mType`` memory.

    Args:
        f (Field3D): a field on a padded grid.
        grid (GridInfo): the original (smaller) grid.
        mType (MemoryType): memory type of the result.

    Returns:
        Field3D: the cropped copy.
    """
    host = on_mem(f, ca.MEM_HOST)
    sx, sy, sz = (int(v) for v in grid.size())
    out = ca.Field3D(grid, ca.MEM_HOST)
    src, dst = host.asnp(), out.asnp()
    for c in range(3):
        dst[c][...] = src[c][:sx, :sy, :sz]
    return on_mem(out, mType)


def padded_run(register, fixed, moving, cfg, quiet, mType, psize, fields):
    """``register`` (greedy_register, lddmm_register) on both images padded
    to ``psize`` by :func:`pad_image` (``fft_pad``), with ``fft_pad=False``;
    then ``h`` and the result's other ``fields`` (those not None) cropped back
    to the fixed grid, ``deformed`` = the moving image at the cropped ``h``,
    and ``config['padded_size']`` the size used. The padding is at the far
    end, so voxel coordinates (the H-fields' values) are the same on both
    grids.

    Args:
        register (callable): the registration function, called as
            ``register(fixed, moving, config=..., quiet=...)``.
        fixed (Image3D): the fixed image.
        moving (Image3D): the moving image, on the fixed image's grid.
        cfg (dict): the merged parameters of ``register``.
        quiet (bool): no progress bar.
        mType (MemoryType): memory type of the computation and the result.
        psize (sequence of int): the padded size (``fft_size`` per axis).
        fields (sequence of str): the result's fields to crop besides ``h``.

    Returns:
        RegistrationResult: on the fixed grid.
    """
    timer = Timer()
    grid0 = fixed.grid()
    fp = pad_image(fixed, psize, mType)
    mp = pad_image(moving, psize, mType)
    r = register(fp, mp, config=dict(cfg, fft_pad=False), quiet=quiet)
    del fp, mp
    r.h = crop_field(r.h, grid0, mType)
    r.deformed = ca.Image3D(grid0, mType)
    ca.ApplyH(r.deformed, on_mem(moving, mType), r.h)
    for name in fields:
        if getattr(r, name) is not None:
            setattr(r, name, crop_field(getattr(r, name), grid0, mType))
    r.config = dict(r.config, fft_pad=True, padded_size=list(psize))
    r.seconds = timer()
    return r


def check_pair(fixed, moving, who):
    """TypeError / ValueError with a clear message for inputs an app can't use.

    Args:
        fixed (Image3D): the fixed (reference) image.
        moving (Image3D): the moving image.
        who (str): the caller's name, used in the messages.

    Raises:
        TypeError: an input is not an Image3D.
        ValueError: an empty image, or the two grids differ.
    """
    for name, im in (('fixed', fixed), ('moving', moving)):
        if not isinstance(im, ca.Image3D):
            raise TypeError("%s: %s must be an Image3D, got %s" % (who, name, type(im).__name__))
        if im.nVox() == 0:
            raise ValueError("%s: %s image is empty" % (who, name))
    if not same_grid(fixed.grid(), moving.grid()):
        raise ValueError("%s: fixed and moving images must share a grid (got %s and %s); "
                         "resample first (the command line does this through world coordinates)"
                         % (who, fixed.grid(), moving.grid()))


def same_grid(a, b, tol=1e-5):
    """Same size, and spacing and origin equal within ``tol`` (relative).

    Args:
        a (Image3D, Field3D or GridInfo): first object (its grid is compared).
        b (Image3D, Field3D or GridInfo): second object.
        tol (float): relative tolerance on spacing and origin; default 1e-5.

    Returns:
        bool.
    """
    if tuple(a.size()) != tuple(b.size()):
        return False
    for u, v in ((a.spacing(), b.spacing()), (a.origin(), b.origin())):
        for x, y in zip(u, v):
            if abs(x - y) > tol * max(1.0, abs(x), abs(y)):
                return False
    return True


# --------------------------------------------------------------------------- progress

class Progress:
    """A tqdm bar over all iterations of all scales, showing the energy; a
    no-op with quiet=True (or without tqdm).

    Args:
        total (int): the number of iterations of the bar.
        desc (str): the label of the bar.
        quiet (bool): no bar at all; default False.
    """

    def __init__(self, total, desc, quiet=False):
        self._bar = None
        if not quiet:
            try:
                from tqdm.auto import tqdm
                self._bar = tqdm(total=int(total), desc=desc, unit='it', file=sys.stderr,
                                 dynamic_ncols=True, leave=True)
            except ImportError:  # pragma: no cover
                self._bar = None

    def update(self, energy=None, **extra):
        """Advances the bar by one iteration and shows ``energy`` and ``extra``.

        Args:
            energy (float, optional): the energy of the iteration; default None (not shown).
            **extra: more values to show (name=value; floats with 4 significant digits).
        """
        if self._bar is None:
            return
        post = {}
        if energy is not None:
            post['E'] = '%.4g' % energy
        for k, v in extra.items():
            post[k] = ('%.4g' % v) if isinstance(v, float) else v
        self._bar.set_postfix(post, refresh=False)
        self._bar.update(1)

    def skip(self, n):
        """Advances the bar by n iterations that will not run (a converged scale).

        Args:
            n (int): the number of iterations to skip.
        """
        if self._bar is not None and n > 0:
            self._bar.update(int(n))

    def extend(self, n):
        """Adds n iterations to the bar's total (a level given more than configured).

        Args:
            n (int): the number of iterations to add.
        """
        if self._bar is not None and n > 0:
            self._bar.total += int(n)
            self._bar.refresh()

    def close(self):
        """Closes the bar (idempotent); also done by ``with Progress(...)``."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# --------------------------------------------------------------------------- result

@dataclass
class RegistrationResult:
    """What every registration app returns.

    Attributes:
        method (str): the method that ran ('lddmm', 'greedy' or 'elastic').
        deformed (Image3D): the moving image deformed onto the fixed grid
            (``ApplyH(deformed, moving, h)``).
        h (Field3D): the H-field (voxel coordinates of the moving image for
            each fixed voxel) -- the "deformation" of the outputs.
        energy (list of float): total energy per iteration (all scales in order).
        energy_terms (dict of str to list of float): its parts ('image', 'reg')
            per iteration.
        hinv (Field3D or None): the inverse of ``h`` where the method has it
            (LDDMM, greedy).
        momentum (Field3D or None): LDDMM's initial momentum m0 on the fixed grid.
        velocity (Field3D or None): LDDMM's initial velocity v0 = K m0 (a
            V-field on the fixed grid, physical units).
        scale_of_iter (list of int): the scale factor of each iteration.
        iterations (int): the number of iterations run.
        seconds (float): wall-clock time of the registration.
        device (str): where it ran, 'cpu' or 'gpu'.
        config (dict): the merged configuration it ran with.
    """
    method: str
    deformed: Any
    h: Any
    energy: List[float]
    energy_terms: Dict[str, List[float]]
    hinv: Any = None
    momentum: Any = None
    velocity: Any = None
    scale_of_iter: List[int] = dc_field(default_factory=list)
    iterations: int = 0
    seconds: float = 0.0
    device: str = 'cpu'
    config: Dict[str, Any] = dc_field(default_factory=dict)

    @property
    def seconds_per_iter(self):
        """float: seconds per iteration (0.0 without iterations)."""
        return self.seconds / self.iterations if self.iterations else 0.0


class Timer:
    """Wall-clock timer: ``t = Timer()`` starts it, ``t()`` returns the seconds since."""
    def __init__(self):
        self.t0 = time.perf_counter()

    def __call__(self):
        return time.perf_counter() - self.t0
