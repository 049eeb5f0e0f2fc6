"""Small-deformation elastic registration (the legacy ``Examples/ElastReg.py``
and, with ``scales=[1]``, ``ElastRegSingleScale.py``) on PyCA.Core.

The moving image ``I1`` is deformed by a displacement V-field ``u``
(physical units) on the fixed grid, ``Idef(x) = I1(x + u(x)/spacing)``, and
``u`` minimises

    E(u) = 1/2 <L u, u> + 1/(2 sigma^2) || mask (Idef - I0) ||^2

(both terms integrals: sums times the voxel volume), ``L = -alpha lap -
beta grad div + gamma`` (FluidKernelFFT). One iteration is a gradient step in
the metric of ``L`` (the legacy update ``u = (1 - s) u - s/sigma^2 K gI``):

    Idef = I1(x + u)                     ApplyV(Idef, I1, u)
    diff = mask (Idef - I0)              Sub(diff, Idef, I0); Mul_I(diff, mask)
    gI   = diff * (grad I1)(x + u)       ApplyV(gI, grad(I1), u, CLAMP); Mul_I(gI, diff)
    G    = u + K gI / sigma^2            applyInverseOperator(G, gI); MulC_Add_MulC_I(G, 1/sigma^2, u, 1)
    u    = u - s G                       MulC_Add_MulC(...)
    reg  = 1/2 <L u, u>                  applyOperator(Lu, u); Dot(Lu, u)

coarse to fine over ``scales`` (``downsampleImage`` of the images and the
mask, ``updateVField(u)`` between levels). With ``metric`` other than
``ssd`` (PyCA.Apps.metrics; no mask) the image term is ``E_metric(I0,
Idef) / (2 sigma^2)`` and ``diff`` is minus the metric's force.

Step. ``s = min(step, max_step / |G|_max)``: ``step`` is the fraction of the
metric gradient (< 1; the legacy constant step), and no update moves a voxel
by more than ``max_step`` voxels of the level. An update that raises the
energy is undone and both halved, so the energy never increases within a
level. The result's ``h`` is ``x + u/spacing`` (``VtoH``).

Final gain (``gain='auto'``; not with MI): at the end ``u`` is scaled by
the s that minimises the image term alone (the masked SSD, or the metric's
energy; ``_common.gain_search``, as LDDMM and greedy; a candidate that
folds ``x + s u`` counts as a rise), which undoes part of the regulariser's
shrinkage of the displacement; ``config['gain_used']`` holds s, and
``gain='off'`` is the legacy.

Energies are recorded at each iteration before its update (the first one of
the first level has ``reg == 0``). ``sigma`` is in intensity units: the
default 0.02 suits intensities normalised to [0, 1]; scale it with the
intensity range. On the MNI T1 template at 2 mm warped by smooth
deformations of up to 8-16 mm the defaults reach a final mismatch of 1-2 %
of the initial one in 90 iterations (about 5 s on one core).
"""
import copy
import math
from typing import Any, Dict, Optional, Union

import PyCA.Core as ca

from ._common import (RegistrationResult, FoldGuard, kernel_of, check_pair, same_grid, ConfigError,
                      gain_search, gain_wanted)
from .multiscale import Method, register_levels, max_voxel_disp
from .schema import (Schema, Param, multiscale, step_control, kernel, device, metric, positive,
                     final_gain)

__all__ = ['DEFAULTS', 'SCHEMA', 'elastic_register']

#: The parameters of :func:`elastic_register`: the shared fragments
#: (PyCA.Apps.schema) with elastic's defaults.
SCHEMA = Schema(
    multiscale(scales=[4, 2, 1],     # down-sampling factors, coarse to fine
               iters=[40, 30, 20]),  # iterations per scale (one int is used for every scale)
    step_control(step=0.5,           # fraction s of the metric gradient per iteration (0 < s <= 1)
                 max_step=0.5,       # largest displacement of one update, in voxels of the level
                 step_check=positive,
                 sigma=Param(0.02, positive)),   # image noise: weight 1/sigma^2 of the image term
    kernel(alpha=1.0, beta=0.0,      # L = -alpha lap - beta grad div + gamma
           gamma=0.01),              # smoothing length sqrt(alpha/gamma) = 10 physical units (mm)
    final_gain(),                    # 'auto': u scaled by s at the end (Elastic._gain); not with MI
    device(),                        # 'auto' (memory type of fixed), 'cpu' or 'gpu'
    metric('auto', lncc_radius=0, mi_bins=32),   # 'auto', 'lncc', 'ssd', 'ncc' or 'mi' (PyCA.Apps.metrics)
)

#: Parameters of :func:`elastic_register` and their defaults (also the keys a
#: config dict / YAML file may hold).
DEFAULTS = SCHEMA.defaults()


class Elastic(Method):
    """Elastic registration's per-level step (module docstring) for the
    multiscale driver.

    Args:
        cfg (dict): the merged configuration.
        mType (MemoryType): where it computes.
        metric (Metric): the similarity metric.
        grid0 (GridInfo): the full-resolution grid.
    """
    name, label, schema = 'elastic', 'elastic', SCHEMA

    def __init__(self, cfg, mType, metric, grid0):
        super().__init__(cfg, mType, metric, grid0)
        I, F = self.image, self.field
        self.Idef, self.diff = I(), I()
        self.u, self.uprev, self.gI0, self.gI, self.gU, self.Lu = F(), F(), F(), F(), F(), F()
        self.scratch_objs = [self.Idef, self.diff, self.uprev, self.gI0, self.gI, self.gU, self.Lu]
        self.inv_s2 = 1.0 / float(cfg['sigma']) ** 2
        self.mask = None                     # the last level's mask (the final gain's SSD)
        self.gain_used = 1.0                 # the final gain (_gain)

    @staticmethod
    def adjust(cfg, params, extra):
        """A mask weights the legacy SSD term: the metric is 'ssd' unless this call named another
        (ConfigError then).

        Args:
            cfg (dict): the merged configuration (changed in place).
            params (dict): the keyword overrides of this call.
            extra (dict of str to Image3D): the extra images (``mask``).

        Returns:
            dict: ``cfg``.
        """
        if extra.get('mask') is not None and cfg['metric'] != 'ssd':
            if 'metric' in params:    # a keyword of this call (a config holds every default)
                raise ConfigError("a mask is supported with metric 'ssd' only (got metric %r)"
                                  % cfg['metric'])
            cfg['metric'] = 'ssd'
        return cfg

    def start(self, level):
        """u = 0 on the first level.

        Args:
            level (Level): the first level.
        """
        for o in self.scratch_objs:
            o.setGrid(level.grid)
        self.u.setGrid(level.grid)
        ca.SetToZero(self.u)

    def upsample(self, level, resampler):
        """u up-sampled onto the new level (``updateVField``).

        Args:
            level (Level): the new level.
            resampler (MultiscaleResamplerGauss): set to the new level.
        """
        for o in self.scratch_objs:
            o.setGrid(level.grid)
        resampler.updateVField(self.u)       # resizes u from the previous level

    def _evaluate(self, kernel, I0, I1, M, vol):
        """(total, image, reg) energy at u; diff = 1/2 dE/dIdef / vol (the SSD residual)."""
        u, diff, inv_s2 = self.u, self.diff, self.inv_s2
        ca.ApplyV(self.Idef, I1, u)
        if self.metric.name == 'ssd':
            ca.Sub(diff, self.Idef, I0)
            if M is not None:
                ca.Mul_I(diff, M)
            ei = 0.5 * inv_s2 * ca.Sum2(diff) * vol
        else:   # diff = 1/2 dE/dIdef / vol = -(the metric's force)
            ei = 0.5 * inv_s2 * self.metric.evaluate(I0, self.Idef, diff)
            ca.MulC_I(diff, -1.0)
        kernel.applyOperator(self.Lu, u)
        er = 0.5 * ca.Dot(self.Lu, u) * vol
        return ei + er, ei, er

    def run(self, level, history):
        """The level's gradient steps on u (module docstring), undone and halved when the energy rises.

        Args:
            level (Level): the level (its ``extra['mask']``, if any, weights the SSD term).
            history (History): where each iteration's energy is recorded.
        """
        I0, I1, M, g = level.fixed, level.moving, level.extra.get('mask'), level.grid
        self.mask = M
        u, uprev, gI, gU = self.u, self.uprev, self.gI, self.gU
        kernel = kernel_of(g, self.mType, self.cfg)
        ca.Gradient(self.gI0, I1)
        vol = g.voxelVol()
        cap, step = float(self.cfg['max_step']), float(self.cfg['step'])
        if self.metric.name != 'ssd':
            self.metric.prepare(I0, I1)
        e_prev, pending = None, False   # pending: the last update is not yet checked
        for _ in range(level.iters):
            e, ei, er = self._evaluate(kernel, I0, I1, M, vol)
            if pending and e > e_prev:
                u.swap(uprev)           # the update raised the energy: undo it
                cap *= 0.5
                step *= 0.5
                e, ei, er = self._evaluate(kernel, I0, I1, M, vol)
            pending = False
            e_prev = e
            history.record(e, level.factor, ei, er)
            ca.ApplyV(gI, self.gI0, u, ca.BACKGROUND_STRATEGY_CLAMP)
            ca.Mul_I(gI, self.diff)
            kernel.applyInverseOperator(gU, gI)
            ca.MulC_Add_MulC_I(gU, self.inv_s2, u, 1.0)   # G = K gI / sigma^2 + u
            m = max_voxel_disp(gU, g)
            if not m > 0.0:
                continue
            s = min(step, cap / m)
            ca.MulC_Add_MulC(uprev, u, 1.0, gU, -s)
            u.swap(uprev)               # u: new, uprev: old
            pending = True
        if pending and self._evaluate(kernel, I0, I1, M, vol)[0] > e_prev:
            u.swap(uprev)

    def _gain(self, fixed, moving):
        """u = s u with the s of ``gain_search`` on the image term alone (the masked
        SSD, or the metric's energy; a candidate that folds x + s u/spacing where
        x + u/spacing did not fold counts as a rise); returns s. In the method's own
        buffers (uprev: s u, gI: its H-field, Idef, diff). The metric is as the
        last level (the full-resolution pair) prepared it."""
        u, us, hs, M = self.u, self.uprev, self.gI, self.mask
        guard = FoldGuard(self.Idef)
        ca.VtoH(hs, u)
        guard.start(hs)

        def E(x):
            ca.MulC(us, u, x)
            ca.VtoH(hs, us)
            if x != 1.0 and guard.folds(hs):
                return math.inf
            ca.ApplyV(self.Idef, moving, us)
            if self.metric.name != 'ssd':
                return self.metric.evaluate(fixed, self.Idef, self.diff)
            ca.Sub(self.diff, self.Idef, fixed)
            if M is not None:
                ca.Mul_I(self.diff, M)
            return ca.Sum2(self.diff)

        s = gain_search(E)
        ca.MulC_I(u, s)
        return s

    def result(self, fixed, moving):
        """u scaled by the final gain, h = x + u/spacing and the deformed moving image.

        Args:
            fixed (Image3D): the full-resolution fixed image.
            moving (Image3D): the full-resolution moving image.

        Returns:
            dict: ``deformed``, ``h``, ``hinv`` (None), ``config`` (with ``gain_used``).
        """
        self.gain_used = self._gain(fixed, moving) if gain_wanted(self.cfg['gain'], self.metric) else 1.0
        self.mask = None
        h = self.field()
        ca.VtoH(h, self.u)
        deformed = self.image()
        ca.ApplyH(deformed, moving, h)
        return dict(deformed=deformed, h=h, hinv=None,
                    config=dict(copy.deepcopy(self.cfg), gain_used=self.gain_used))


def elastic_register(fixed: ca.Image3D, moving: ca.Image3D,
                     config: Optional[Union[Dict[str, Any], str]] = None, quiet: bool = False,
                     mask: Optional[ca.Image3D] = None, **params: Any) -> RegistrationResult:
    """Elastic (small-deformation) registration of ``moving`` onto ``fixed``.

    Parameters (``DEFAULTS``; from ``config`` -- a dict or a YAML file -- then
    keyword overrides): ``scales`` (coarse to fine; factor 1 is always added;
    ``[1]`` is the single-scale legacy example), ``iters`` (per scale, or one
    int), ``step`` (fraction of the metric gradient), ``max_step`` (voxels),
    ``sigma`` (image term weight 1/sigma^2), ``alpha``, ``beta``, ``gamma``
    (the operator L), ``device`` ('auto', 'cpu', 'gpu'). ``mask``: an
    optional Image3D on the fixed grid weighting the image term (0 = ignore).

    Returns a :class:`RegistrationResult` with ``method='elastic'``,
    ``deformed`` (= ApplyH(moving, h), in the compute memory type), ``h``
    (``x + u/spacing``: an H-field on the fixed grid), ``hinv`` None,
    ``energy`` (total per iteration, at that iteration's level, before its
    update) and ``energy_terms`` {'image': 1/(2 sigma^2) ||diff||^2,
    'reg': 1/2 <Lu, u>}, ``scale_of_iter``.

    Raises TypeError for inputs that are not Image3Ds, ValueError for images
    (or a mask) on different grids, ConfigError for unknown or bad parameters.

    Args:
        fixed (Image3D): the fixed (reference) image; any memory type, 2-D (size z == 1) or 3-D.
        moving (Image3D): the moving image, on the fixed image's grid.
        config (dict or str, optional): parameters as a dict or the path of a YAML file; default
            None (``DEFAULTS``).
        quiet (bool): no progress bar; default False.
        mask (Image3D, optional): weights of the image term on the fixed grid (0 = ignore the
            voxel); default None.
        **params: keyword overrides of any ``DEFAULTS`` key (applied after ``config``).
    """
    who = 'elastic_register'
    check_pair(fixed, moving, who)
    if mask is not None:
        if not isinstance(mask, ca.Image3D):
            raise TypeError("%s: mask must be an Image3D or None, got %s" % (who, type(mask).__name__))
        if not same_grid(mask.grid(), fixed.grid()):
            raise ValueError("%s: mask must be on the fixed grid (got %s and %s)"
                             % (who, mask.grid(), fixed.grid()))
    return register_levels(Elastic, elastic_register, fixed, moving, config, quiet, params,
                           extra={'mask': mask} if mask is not None else None)
