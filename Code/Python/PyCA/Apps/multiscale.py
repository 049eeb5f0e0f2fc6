"""The multiscale driver of every registration method.

A method supplies one small object (a :class:`Method`): what it holds at the
first level (:meth:`Method.start`), how that state moves to the next, finer
level (:meth:`Method.upsample`), its iterations at one level
(:meth:`Method.run`) and its result fields (:meth:`Method.result`). The
driver (:func:`register_levels`) does the rest, once for every method:

* the checks of the pair, the configuration (:class:`~PyCA.Apps.schema.Schema`:
  every fragment checked once, the same messages for every method), the
  memory type and the metric;
* the padding to FFT-friendly sizes (``fft_pad``) where the method has it;
* the schedule: the MultiscaleManager, the Gaussian resampler, the images of
  each level (the full-resolution images themselves at factor 1, down-sampled
  copies below), one value per level of every per-scale parameter
  (:func:`~PyCA.Apps.schema.per_scale`);
* the progress bar over all levels' iterations and the energy history
  (:class:`History`);
* the :class:`~PyCA.Apps._common.RegistrationResult`.

A fourth method, or another optimiser, is one more :class:`Method`.
"""
import PyCA.Core as ca

from ._common import (RegistrationResult, ConfigError, Progress, Timer, check_pair, compute_mem_type,
                      ensure_thread_memory_manager, fft_size, make_multiscale, make_resampler,
                      on_mem, padded_run, release_unused_scratch)
from .metrics import make_metric, resolve_lncc_radius
from .memory import check_memory

__all__ = ['Level', 'History', 'Method', 'register_levels', 'used_spacings', 'min_spacing', 'max_voxel_disp',
           'check_warm_field', 'check_single_level']


def used_spacings(grid):
    """The spacings of the axes the grid has (size above 1; a 2-D grid's z
    spacing does not count; a single voxel keeps its x spacing).

    Args:
        grid (GridInfo): the grid.

    Returns:
        list of float: physical units.
    """
    sp, size = grid.spacing(), grid.size()
    return [float(sp[d]) for d in range(3) if size[d] > 1] or [float(sp[0])]


def min_spacing(grid):
    """The smallest spacing over the axes the grid has (:func:`used_spacings`):
    the length of one voxel in LDDMM's first step, conservative on
    anisotropic grids.

    Args:
        grid (GridInfo): the grid.

    Returns:
        float: the smallest spacing, physical units.
    """
    return min(used_spacings(grid))


def max_voxel_disp(v, grid):
    """Largest component of the V-field ``v`` in voxels of ``grid``: over the
    smallest spacing of the axes the grid has (:func:`min_spacing`), taken
    for every axis; greedy's and elastic's step bound. (Before, the smallest
    of all three spacings: on a 2-D grid the unused z spacing, 1, made the
    coarse levels' steps 2 and 4 times smaller than ``max_step`` voxels.)

    Args:
        v (Field3D): a V-field (displacement, physical units).
        grid (GridInfo): the grid of the level.

    Returns:
        float: the largest displacement component, in voxels.
    """
    return ca.LInf(v) / min_spacing(grid)


class Level:
    """One level of the schedule, as the driver hands it to a method.

    Attributes:
        index (int): the level's number, 0 = coarsest.
        factor (int): its down-sampling factor.
        grid (GridInfo): its grid.
        iters (int): its iterations (``iters`` of the configuration, per level).
        values (dict): every per-scale parameter's value at this level.
        fixed (Image3D): the fixed image at this level.
        moving (Image3D): the moving image at this level.
        extra (dict of str to Image3D): the other images at this level (a mask, ...).
        identity (bool): the full-resolution level (factor 1: the images are the inputs).
    """

    def __init__(self, index, factor, grid, values, fixed, moving, extra, identity):
        self.index, self.factor, self.grid = index, factor, grid
        self.values = values
        self.iters = int(values['iters'])
        self.fixed, self.moving, self.extra = fixed, moving, extra
        self.identity = identity


class History:
    """The energy of every iteration of every level, and the progress bar.

    Args:
        bar (Progress): the bar advanced by :meth:`record` and :meth:`skip`.

    Attributes:
        energy (list of float): the total energy per iteration.
        terms (dict of str to list of float): its parts ('image', 'reg') per iteration.
        scale_of_iter (list of int): the level's factor of each iteration.
    """

    def __init__(self, bar):
        self.bar = bar
        self.energy, self.scale_of_iter = [], []
        self.terms = {'image': [], 'reg': []}

    def record(self, e, factor, image, reg):
        """Appends one iteration's energy and its parts, and advances the bar.

        Args:
            e (float): the total energy.
            factor (int): the level's factor.
            image (float): the image term.
            reg (float): the regularity term.
        """
        self.energy.append(e)
        self.terms['image'].append(image)
        self.terms['reg'].append(reg)
        self.scale_of_iter.append(factor)
        self.bar.update(e, scale=factor)

    def skip(self, n):
        """Advances the bar over ``n`` iterations that will not run (a level that stopped early).

        Args:
            n (int): the iterations skipped.
        """
        self.bar.skip(n)

    def extend(self, n):
        """Adds ``n`` iterations to the bar's total (a level given more than configured).

        Args:
            n (int): the iterations added.
        """
        self.bar.extend(n)


class Method:
    """A registration method's per-level step: the base class of the
    methods the driver runs (:func:`register_levels`).

    Class attributes a method sets: ``name`` (the result's ``method``),
    ``label`` (the progress bar's), ``schema`` (its :class:`~PyCA.Apps.schema.Schema`),
    ``gauss`` (Gaussian pre-smoothing of the down-sampled images; a method may
    read it from its configuration in :meth:`setup`), ``pad_fields`` (the
    result's fields cropped back besides ``h`` after ``fft_pad``; None: the
    method does not pad).

    Args:
        cfg (dict): the merged configuration.
        mType (MemoryType): where it computes.
        metric (Metric): the similarity metric (``make_metric`` of the configuration).
        grid0 (GridInfo): the full-resolution grid.
    """
    name = ''
    label = ''
    schema = None
    gauss = True
    pad_fields = None

    def __init__(self, cfg, mType, metric, grid0):
        self.cfg, self.mType, self.metric, self.grid0 = cfg, mType, metric, grid0

    @staticmethod
    def adjust(cfg, params, extra):
        """The merged configuration adjusted to the call's inputs, before any
        work (elastic: a mask implies 'ssd'); the base keeps it as it is.

        Args:
            cfg (dict): the merged configuration.
            params (dict): the keyword overrides of this call.
            extra (dict of str to Image3D): the extra images.

        Returns:
            dict: ``cfg``.
        """
        return cfg

    def field(self, grid=None):
        """A new field in the method's memory type.

        Args:
            grid (GridInfo, optional): its grid; default None = the full-resolution grid.

        Returns:
            Field3D.
        """
        return ca.Field3D(grid if grid is not None else self.grid0, self.mType)

    def image(self, grid=None):
        """A new image in the method's memory type.

        Args:
            grid (GridInfo, optional): its grid; default None = the full-resolution grid.

        Returns:
            Image3D.
        """
        return ca.Image3D(grid if grid is not None else self.grid0, self.mType)

    def warm(self):
        """bool: the run starts from a given state (a warm start): no padding."""
        return False

    def setup(self, facs):
        """Checks that need the levels' factors (a warm start's single level), before any work.

        Args:
            facs (list of int): the levels' factors, coarse to fine.
        """

    def start(self, level):
        """The state at the first level (identity, zero, or a warm start).

        Args:
            level (Level): the first level.
        """
        raise NotImplementedError

    def upsample(self, level, resampler):
        """Carries the state from the previous level onto ``level``'s grid.

        Args:
            level (Level): the new level.
            resampler (MultiscaleResamplerGauss or MultiscaleResampler): set to the new level.
        """
        raise NotImplementedError

    def run(self, level, history):
        """The iterations of one level.

        Args:
            level (Level): the level.
            history (History): where each iteration's energy is recorded.
        """
        raise NotImplementedError

    def result(self, fixed, moving):
        """The result's fields besides the history.

        Args:
            fixed (Image3D): the full-resolution fixed image (in the compute memory type).
            moving (Image3D): the full-resolution moving image (in the compute memory type).

        Returns:
            dict: keyword arguments of :class:`~PyCA.Apps._common.RegistrationResult`
            (``deformed``, ``h``, ``hinv``, ``momentum``, ``velocity``, ``config``).
        """
        raise NotImplementedError


def _level_images(sm, resampler, lev, fixed, moving, extra, mType):
    """The fixed, moving and extra images of level ``lev`` (the inputs at factor 1)."""
    sm.set(lev)
    resampler.setScaleLevel(sm)
    grid = sm.getCurGrid().copy()        # the manager's own changes with the level
    if sm.isIdentityScale():
        return grid, fixed, moving, dict(extra), True
    out = []
    for src in [fixed, moving] + list(extra.values()):
        dst = ca.Image3D(grid, mType)
        resampler.downsampleImage(dst, src)
        out.append(dst)
    return grid, out[0], out[1], dict(zip(extra, out[2:])), False


def register_levels(cls, register, fixed, moving, config=None, quiet=False, params=None,
                    extra=None, who=None, **init):
    """Runs the method ``cls`` (a :class:`Method` subclass) over its
    multiscale schedule and returns its RegistrationResult.

    Args:
        cls (type): the method's class.
        register (callable): the method's public function (``greedy_register``, ...), which
            ``fft_pad`` calls again on the padded pair.
        fixed (Image3D): the fixed image.
        moving (Image3D): the moving image, on the fixed image's grid.
        config (None, dict or str): the configuration (dict or YAML path); default None.
        quiet (bool): no progress bar; default False.
        params (dict, optional): keyword overrides of the configuration; default None.
        extra (dict of str to Image3D, optional): more images on the fixed grid, down-sampled
            with the pair at each level (a mask); default None.
        who (str, optional): the caller's name in error messages; default ``register.__name__``.
        **init: more keyword arguments of ``cls`` (warm starts).

    Returns:
        RegistrationResult: on the fixed grid.

    Raises:
        TypeError, ValueError: inputs the method cannot use.
        ConfigError: unknown or bad parameters.
    """
    who = who or register.__name__
    check_pair(fixed, moving, who)
    cfg = cls.schema.merge(config, params)
    cfg = cls.adjust(cfg, params or {}, extra or {})
    mType = compute_mem_type(cfg['device'], fixed)
    # 0: automatic from the fixed image's spacing; the result's config records the value used
    cfg['lncc_radius'] = resolve_lncc_radius(cfg['lncc_radius'], min_spacing(fixed.grid()))
    metric = make_metric(cfg['metric'], cfg['lncc_radius'], cfg['mi_bins'])
    check_memory(cls, cfg, fixed.grid(), mType)    # predicted peak vs max_memory, before any work
    timer = Timer()
    grid0 = fixed.grid().copy()
    sm, facs = make_multiscale(grid0, cfg['scales'])
    values = cls.schema.levels(cfg, facs)
    method = cls(cfg, mType, metric, grid0, **init)
    method.setup(facs)
    if cls.pad_fields is not None and cfg['fft_pad'] and not method.warm():
        size0 = [int(v) for v in grid0.size()]
        psize = [fft_size(n, facs) for n in size0]
        if psize != size0:
            return padded_run(register, fixed, moving, cfg, quiet, mType, psize, cls.pad_fields)
    fixed_m, moving_m = on_mem(fixed, mType), on_mem(moving, mType)
    extra_m = {k: on_mem(v, mType) for k, v in (extra or {}).items()}
    ensure_thread_memory_manager(grid0, mType)
    resampler = make_resampler(grid0, mType, gauss=method.gauss)
    with Progress(sum(values['iters']), cls.label, quiet) as bar:
        history = History(bar)
        for lev, fac in enumerate(facs):
            grid, f, m, x, ident = _level_images(sm, resampler, lev, fixed_m, moving_m, extra_m, mType)
            level = Level(lev, fac, grid, {k: v[lev] for k, v in values.items()}, f, m, x, ident)
            if lev == 0:
                method.start(level)
            else:
                method.upsample(level, resampler)
            release_unused_scratch()         # the resampler's full-resolution scratch
            method.run(level, history)
    fields = method.result(fixed_m, moving_m)
    fields.setdefault('config', cfg)
    # the metric as it ran (``auto``: its choice at the finest level)
    fields['config'] = dict(fields['config'], metric_used=metric.describe())
    return RegistrationResult(
        method=cls.name, energy=history.energy, energy_terms=history.terms,
        scale_of_iter=history.scale_of_iter, iterations=len(history.energy), seconds=timer(),
        device='gpu' if mType == ca.MEM_DEVICE else 'cpu', **fields)


def check_warm_field(who, name, f, grid, facs, scales):
    """Checks a warm start's field: a Field3D of the full-resolution grid's
    size (the single level is checked by :func:`check_single_level`).

    Args:
        who (str): the caller's name, for the message.
        name (str): the argument's name ('init_h', 'init_momentum').
        f (Field3D or None): the field given (None: nothing to check).
        grid (GridInfo): the full-resolution grid.
        facs (list of int): the levels' factors.
        scales (list of int): the ``scales`` given, for the message.

    Raises:
        ConfigError: more than one level.
        ValueError: not a Field3D of the grid's size.
    """
    if f is None:
        return
    check_single_level(name, facs, scales)
    if not isinstance(f, ca.Field3D) or tuple(f.size()) != tuple(grid.size()):
        raise ValueError("%s: %s must be a Field3D of the fixed image's size %s"
                         % (who, name, tuple(grid.size())))


def check_single_level(name, facs, scales):
    """A warm start needs a single full-resolution level.

    Args:
        name (str): the warm start's argument ('init_h', 'init_momentum').
        facs (list of int): the levels' factors.
        scales (list of int): the ``scales`` given, for the message.

    Raises:
        ConfigError: more than one level.
    """
    if facs != [1]:
        raise ConfigError("%s (a warm start) needs a single full-resolution level "
                          "(scales=[1]), got scales %r" % (name, scales))
