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

Energies are recorded at each iteration before its update (the first one of
the first level has ``reg == 0``). ``sigma`` is in intensity units: the
default 0.02 suits intensities normalised to [0, 1]; scale it with the
intensity range. On the MNI T1 template at 2 mm warped by smooth
deformations of up to 8-16 mm the defaults reach a final mismatch of 1-2 %
of the initial one in 90 iterations (about 5 s on one core).
"""
from typing import Any, Dict, Optional, Union

import PyCA.Core as ca

from ._common import (RegistrationResult, merge_config, compute_mem_type,
                      ensure_thread_memory_manager, kernel_of, make_resampler,
                      make_multiscale, Progress, check_pair, same_grid, Timer, ConfigError)
from .greedy import per_scale, own_copy, max_voxel_disp
from .metrics import make_metric

__all__ = ['DEFAULTS', 'elastic_register']

#: Parameters of :func:`elastic_register` and their defaults (also the keys a
#: config dict / YAML file may hold).
DEFAULTS = {
    'scales': [4, 2, 1],      # down-sampling factors, coarse to fine
    'iters': [40, 30, 20],    # iterations per scale (one int is used for every scale)
    'step': 0.5,              # fraction s of the metric gradient per iteration (0 < s <= 1)
    'max_step': 0.5,          # largest displacement of one update, in voxels of the level
    'sigma': 0.02,            # image noise: weight 1/sigma^2 of the image term
    'alpha': 1.0,             # L = -alpha lap - beta grad div + gamma
    'beta': 0.0,
    'gamma': 0.01,            # smoothing length sqrt(alpha/gamma) = 10 physical units (mm)
    'device': 'auto',         # 'auto' (memory type of fixed), 'cpu' or 'gpu'
    'metric': 'lncc',         # similarity metric: 'lncc', 'ssd', 'ncc' or 'mi' (PyCA.Apps.metrics)
    'lncc_radius': 2,         # lncc: window radius in voxels of each level
    'mi_bins': 32,            # mi: histogram bins per image
}


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
    cfg = merge_config(DEFAULTS, config, params)
    if mask is not None and cfg['metric'] != 'ssd':
        # the masked image term is the legacy SSD one; another metric only when asked for
        explicit = 'metric' in params     # a keyword of this call (a config holds every default)
        if explicit:
            raise ConfigError("a mask is supported with metric 'ssd' only (got metric %r)" % cfg['metric'])
        cfg['metric'] = 'ssd'
    metric = make_metric(cfg['metric'], cfg['lncc_radius'], cfg['mi_bins'])
    ssd = metric.name == 'ssd'
    for key in ('max_step', 'sigma', 'step'):
        if not cfg[key] > 0:
            raise ConfigError("%s must be > 0, got %r" % (key, cfg[key]))
    mType = compute_mem_type(cfg['device'], fixed)
    timer = Timer()

    I0orig, I1orig = own_copy(fixed, mType), own_copy(moving, mType)
    Morig = own_copy(mask, mType) if mask is not None else None
    origGrid = I0orig.grid().copy()
    ensure_thread_memory_manager(origGrid, mType)
    sm, facs = make_multiscale(origGrid, cfg['scales'])
    iters = per_scale(cfg, 'iters', facs, cfg['scales'], DEFAULTS['iters'])
    if any(n < 0 for n in iters):
        raise ConfigError("iters must be >= 0, got %r" % cfg['iters'])
    resampler = make_resampler(origGrid, mType)

    def img():
        return ca.Image3D(origGrid, mType)

    def fld():
        return ca.Field3D(origGrid, mType)

    I0, I1, Idef, diff = img(), img(), img(), img()
    M = img() if mask is not None else None
    u, uprev, gI0, gI, gU, Lu = fld(), fld(), fld(), fld(), fld(), fld()
    objs = [I0, I1, Idef, diff, uprev, gI0, gI, gU, Lu] + ([M] if M is not None else [])
    inv_s2 = 1.0 / float(cfg['sigma']) ** 2

    energy, e_img, e_reg, scale_of_iter = [], [], [], []
    with Progress(sum(iters), 'elastic', quiet) as bar:
        sm.start()
        for lev, fac in enumerate(facs):
            sm.set(lev)
            resampler.setScaleLevel(sm)
            g = sm.getCurGrid()
            for o in objs:
                o.setGrid(g)
            pairs = [(I0, I0orig), (I1, I1orig)] + ([(M, Morig)] if M is not None else [])
            for dst, src in pairs:
                if sm.isIdentityScale():
                    ca.Copy(dst, src)
                else:
                    resampler.downsampleImage(dst, src)
            if lev == 0:
                u.setGrid(g)
                ca.SetToZero(u)
            else:
                resampler.updateVField(u)       # resizes u from the previous level
            kernel = kernel_of(g, mType, cfg)
            ca.Gradient(gI0, I1)
            sp, vol = g.spacing(), g.voxelVol()
            cap, step = float(cfg['max_step']), float(cfg['step'])

            if not ssd:
                metric.prepare(I0, I1)

            def evaluate():
                ca.ApplyV(Idef, I1, u)
                if ssd:
                    ca.Sub(diff, Idef, I0)
                    if M is not None:
                        ca.Mul_I(diff, M)
                    ei = 0.5 * inv_s2 * ca.Sum2(diff) * vol
                else:   # diff = 1/2 dE/dIdef / vol = -(the metric's force)
                    ei = 0.5 * inv_s2 * metric.evaluate(I0, Idef, diff)
                    ca.MulC_I(diff, -1.0)
                kernel.applyOperator(Lu, u)
                er = 0.5 * ca.Dot(Lu, u) * vol
                return ei + er, ei, er

            e_prev, pending = None, False   # pending: the last update is not yet checked
            for _ in range(iters[lev]):
                e, ei, er = evaluate()
                if pending and e > e_prev:
                    u.swap(uprev)           # the update raised the energy: undo it
                    cap *= 0.5
                    step *= 0.5
                    e, ei, er = evaluate()
                pending = False
                e_prev = e
                energy.append(e)
                e_img.append(ei)
                e_reg.append(er)
                scale_of_iter.append(fac)
                bar.update(e, scale=fac)
                ca.ApplyV(gI, gI0, u, ca.BACKGROUND_STRATEGY_CLAMP)
                ca.Mul_I(gI, diff)
                kernel.applyInverseOperator(gU, gI)
                ca.MulC_Add_MulC_I(gU, inv_s2, u, 1.0)   # G = K gI / sigma^2 + u
                m = max_voxel_disp(gU, sp)
                if not m > 0.0:
                    continue
                s = min(step, cap / m)
                ca.MulC_Add_MulC(uprev, u, 1.0, gU, -s)
                u.swap(uprev)               # u: new, uprev: old
                pending = True
            if pending and evaluate()[0] > e_prev:
                u.swap(uprev)

    h = ca.Field3D(origGrid, mType)
    ca.VtoH(h, u)
    deformed = ca.Image3D(origGrid, mType)
    ca.ApplyH(deformed, I1orig, h)
    return RegistrationResult(
        method='elastic', deformed=deformed, h=h, hinv=None, energy=energy,
        energy_terms={'image': e_img, 'reg': e_reg},
        scale_of_iter=scale_of_iter, iterations=len(energy), seconds=timer(),
        device='gpu' if mType == ca.MEM_DEVICE else 'cpu', config=cfg)
