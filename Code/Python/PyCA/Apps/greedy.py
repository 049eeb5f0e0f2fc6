"""Greedy fluid registration (the legacy ``Examples/GreedyReg.py``) on PyCA.Core.

The moving image ``I1`` is pulled onto the fixed image ``I0`` by an H-field
``h`` on the fixed grid, built as a composition of small smooth steps::

    Idef = I1 o h                        ApplyH(Idef, I1, h)
    diff = I0 - Idef                     Sub(diff, I0, Idef)
    gI   = diff * grad(Idef)             Gradient(gI, Idef); Mul_I(gI, diff)
    gU   = K gI,  K = L^-1               kernel.applyInverseOperator(gU, gI)
    gU  *= s                             MulC_I(gU, s)            (step, see below)
    h    = h o (x + gU/spacing)          ComposeHV(scratch, h, gU); h.swap(scratch)
    hinv = (x - gU/spacing) o hinv       ComposeVInvH(scratch, gU, hinv); hinv.swap(scratch)

with ``L = -alpha lap - beta grad div + gamma`` (FluidKernelFFT), coarse to
fine over ``scales`` (MultiscaleManager, MultiscaleResamplerGauss:
``downsampleImage`` of both images, ``updateHField`` of h and hinv between
levels).

Step. The legacy example multiplied the update by a fixed ``ustep``, whose good
value depends on the intensity range, the spacing and the kernel. Here the
update is scaled so that its largest component is ``max_step`` voxels of the
current level (``step = 0``, the default: a normalised gradient step, which
depends only on the shape of the kernel), or multiplied by ``step`` and then
clipped to ``max_step`` voxels (``step > 0``, the legacy behaviour with a
safeguard). An update that raises the energy is undone and the step halved
(both modes), so the energy never increases within a level.

Inverse. ``hinv`` (an H-field on the moving grid, ``hinv(h(x)) = x``)
follows each accepted step to first order (ComposeVInvH) and is polished at
the end by ``inverse_iters`` fixed-point iterations ``hinv <- hinv -
(h o hinv - x)`` (ComposeHH), which bring ``hinv o h`` to the identity within
the interpolation error (a few hundredths of a voxel).

Energy. The similarity metric's (``metric``: PyCA.Apps.metrics; ``ssd``,
the legacy's, ``E = Sum2(I0 - I1 o h) * voxelVol``) at the current level (an
integral, so levels are comparable), recorded at each iteration before its
update, as the legacy example did; greedy has no regulariser energy, so
``energy_terms['reg']`` holds zeros. Other metrics replace ``diff`` above by
their force ``-1/2 dE/dIdef / voxelVol`` (``I0 - Idef`` for SSD) and are
evaluated once per level on that level's images (``prepare``).

Defaults were chosen on the MNI T1 template at 2 mm (99x117x95, intensities
in [0, 1]) warped by smooth deformations of up to 8-16 mm: the final mismatch
is 1-3 % of the initial one after the 90 iterations (about 3 s on one core).
"""
from typing import Any, Dict, Optional, Union

import PyCA.Core as ca

from ._common import (RegistrationResult, merge_config, compute_mem_type,
                      ensure_thread_memory_manager, kernel_of, make_resampler,
                      make_multiscale, Progress, check_pair, Timer, ConfigError, fft_size,
                      padded_run)
from .metrics import make_metric

__all__ = ['DEFAULTS', 'greedy_register']

#: Parameters of :func:`greedy_register` and their defaults (also the keys a
#: config dict / YAML file may hold).
DEFAULTS = {
    'scales': [4, 2, 1],      # down-sampling factors, coarse to fine
    'iters': [60, 40, 30],    # iterations per scale (one int is used for every scale)
    'step': 0.0,              # 0: normalised step of max_step voxels; > 0: legacy multiplier
    'max_step': 0.5,          # largest displacement of one update, in voxels of the level
    'alpha': 1.0,             # L = -alpha lap - beta grad div + gamma
    'beta': 0.0,
    'gamma': 0.001,           # smoothing length sqrt(alpha/gamma) = 32 physical units (mm)
    'device': 'auto',         # 'auto' (memory type of fixed), 'cpu' or 'gpu'
    'compute_inverse': True,  # maintain hinv (one extra composition per iteration)
    'inverse_iters': 5,       # final fixed-point polishing iterations of hinv
    'metric': 'lncc',         # similarity metric: 'lncc', 'ssd', 'ncc' or 'mi' (PyCA.Apps.metrics)
    'lncc_radius': 2,         # lncc: window radius in voxels of each level
    'mi_bins': 32,            # mi: histogram bins per image
    'fft_pad': True,          # register on a grid padded at the far end to FFT-friendly sizes
                              # (the fluid kernel's transforms), h and hinv cropped back
}


def per_scale(cfg, key, facs, given, default=None):
    """``cfg[key]`` as one value per level of ``facs``: one value is broadcast;
    a list as long as the given ``scales`` is used as is (when factor 1 was
    added to them, the last value is repeated for it); the unchanged
    ``default`` list is fitted to the number of levels (its finest values
    kept, the coarsest repeated).

    Args:
        cfg (dict): the merged configuration.
        key (str): the per-scale parameter (e.g. 'iters').
        facs (list of int): the scale factors of the levels, coarse to fine (factor 1 included).
        given (list of int): the ``scales`` the user gave (before factor 1 was added).
        default (list, optional): the parameter's value in ``DEFAULTS``; default None.

    Returns:
        list: one value per level of ``facs``.

    Raises:
        ConfigError: a list whose length fits neither rule.
    """
    vals = cfg[key]
    if not isinstance(vals, (list, tuple)):
        vals = [vals]
    vals = list(vals)
    n = len(facs)
    if len(vals) == 1:
        return vals * n
    if default is not None and vals == list(default) and len(vals) != n:
        return ([vals[0]] * n + vals)[-n:]
    if len(vals) == len(given) and len(given) == n - 1 and 1 not in [int(s) for s in given]:
        return vals + vals[-1:]
    if len(vals) != n:
        raise ConfigError("%s must have one value or one per scale (%d: %s), got %r"
                          % (key, n, facs, cfg[key]))
    return vals


def own_copy(im, mType):
    """``im`` if it lives exactly in ``mType`` memory, else a copy there (pinned
    host images are copied, so that all operands share one memory type).

    Args:
        im (Image3D or Field3D): the object.
        mType (MemoryType): the memory type, MEM_HOST or MEM_DEVICE.

    Returns:
        Image3D or Field3D: ``im`` or its copy.
    """
    if im.memType() == mType:
        return im
    out = ca.Image3D(im.grid(), mType)
    ca.Copy(out, im)
    return out


def max_voxel_disp(v, spacing):
    """Largest component of the V-field ``v`` in voxels (the smallest spacing
    is used for every axis: conservative for anisotropic grids).

    Args:
        v (Field3D): a V-field (displacement, physical units).
        spacing (Vec3Df): the grid spacing.

    Returns:
        float: the largest displacement component, in voxels.
    """
    return ca.LInf(v) / min(spacing.x, spacing.y, spacing.z)


def greedy_register(fixed: ca.Image3D, moving: ca.Image3D,
                    config: Optional[Union[Dict[str, Any], str]] = None, quiet: bool = False,
                    init_h: Optional[ca.Field3D] = None, init_hinv: Optional[ca.Field3D] = None,
                    **params: Any) -> RegistrationResult:
    """Greedy fluid registration of ``moving`` onto ``fixed``.

    Warm start (the atlas builder's): ``init_h`` (a Field3D on the fixed
    grid, any memory type; default None = identity) is the H-field the
    registration starts from; it needs a single full-resolution level
    (``scales=[1]``, ConfigError otherwise). ``init_hinv`` is its inverse;
    when it is not given and ``compute_inverse`` is on, the inverse starts
    from the fixed-point iterations of the final polishing (from the
    identity). The caller's fields are copied, never modified.

    Parameters (``DEFAULTS``; from ``config`` -- a dict or a YAML file -- then
    keyword overrides): ``scales`` (down-sampling factors, coarse to fine;
    factor 1 is always added), ``iters`` (per scale, or one int), ``step``
    (0 = normalised steps of ``max_step`` voxels; > 0 = fixed multiplier of the
    update, clipped to ``max_step`` voxels), ``max_step``, ``alpha``,
    ``beta``, ``gamma`` (the fluid operator), ``device`` ('auto', 'cpu',
    'gpu'), ``compute_inverse``, ``inverse_iters``, ``metric``, ``fft_pad``
    (register on a grid padded at the far end to FFT-friendly sizes, as
    ``lddmm_register`` does; h and hinv are cropped back).

    Returns a :class:`RegistrationResult` with ``method='greedy'``,
    ``deformed`` (= ApplyH(moving, h), in the compute memory type), ``h``
    (H-field on the fixed grid, voxel coordinates of the moving image),
    ``hinv`` (its inverse on the moving grid; None if ``compute_inverse`` is
    false), ``energy`` (``Sum2(fixed - deformed) * voxelVol`` per iteration,
    at that iteration's level, before its update), ``energy_terms``
    {'image', 'reg' (zeros)}, ``scale_of_iter``.

    Raises TypeError for inputs that are not Image3Ds, ValueError for images
    on different grids, ConfigError for unknown or bad parameters.

    Args:
        fixed (Image3D): the fixed (reference) image; any memory type, 2-D (size z == 1) or 3-D.
        moving (Image3D): the moving image, on the fixed image's grid.
        config (dict or str, optional): parameters as a dict or the path of a YAML file; default
            None (``DEFAULTS``).
        quiet (bool): no progress bar; default False.
        init_h (Field3D, optional): warm start: the H-field to start from, on the fixed grid (voxel
            coordinates of the moving image); default None = identity.
        init_hinv (Field3D, optional): the inverse of ``init_h`` (H-field on the moving grid);
            default None.
        **params: keyword overrides of any ``DEFAULTS`` key (applied after ``config``).
    """
    who = 'greedy_register'
    check_pair(fixed, moving, who)
    cfg = merge_config(DEFAULTS, config, params)
    if cfg['max_step'] <= 0:
        raise ConfigError("max_step must be > 0, got %r" % cfg['max_step'])
    if cfg['step'] < 0:
        raise ConfigError("step must be >= 0 (0 = normalised step), got %r" % cfg['step'])
    mType = compute_mem_type(cfg['device'], fixed)
    metric = make_metric(cfg['metric'], cfg['lncc_radius'], cfg['mi_bins'])
    timer = Timer()
    if cfg['fft_pad'] and init_h is None and init_hinv is None:
        size0 = [int(v) for v in fixed.grid().size()]
        _, facs0 = make_multiscale(fixed.grid(), cfg['scales'])
        psize = [fft_size(n, facs0) for n in size0]
        if psize != size0:
            return padded_run(greedy_register, fixed, moving, cfg, quiet, mType, psize, ('hinv',))

    I0orig, I1orig = own_copy(fixed, mType), own_copy(moving, mType)
    origGrid = I0orig.grid().copy()
    ensure_thread_memory_manager(origGrid, mType)
    sm, facs = make_multiscale(origGrid, cfg['scales'])
    iters = per_scale(cfg, 'iters', facs, cfg['scales'], DEFAULTS['iters'])
    if any(n < 0 for n in iters):
        raise ConfigError("iters must be >= 0, got %r" % cfg['iters'])
    if init_h is not None or init_hinv is not None:
        if facs != [1]:
            raise ConfigError("init_h (a warm start) needs a single full-resolution level "
                              "(scales=[1]), got scales %r" % (cfg['scales'],))
        for name, f in (('init_h', init_h), ('init_hinv', init_hinv)):
            if f is not None and (not isinstance(f, ca.Field3D) or tuple(f.size()) != tuple(origGrid.size())):
                raise ValueError("%s: %s must be a Field3D of the fixed image's size %s"
                                 % (who, name, tuple(origGrid.size())))
    resampler = make_resampler(origGrid, mType)

    def img():
        return ca.Image3D(origGrid, mType)

    def fld():
        return ca.Field3D(origGrid, mType)

    want_inv = bool(cfg['compute_inverse'])
    I0, I1, Idef, diff = img(), img(), img(), img()
    h, hprev, gI, gU = fld(), fld(), fld(), fld()
    hinv = fld() if want_inv else None
    scratch = fld() if want_inv else None
    objs = [I0, I1, Idef, diff, h, hprev, gI, gU] + ([hinv, scratch] if want_inv else [])

    energy, scale_of_iter = [], []
    with Progress(sum(iters), 'greedy', quiet) as bar:
        sm.start()
        for lev, fac in enumerate(facs):
            sm.set(lev)
            resampler.setScaleLevel(sm)
            g = sm.getCurGrid()
            for o in objs:
                if o is not h and o is not hinv:   # updateHField resizes those itself
                    o.setGrid(g)
            if sm.isIdentityScale():
                ca.Copy(I0, I0orig)
                ca.Copy(I1, I1orig)
            else:
                resampler.downsampleImage(I0, I0orig)
                resampler.downsampleImage(I1, I1orig)
            if lev == 0:
                for o in (h, hinv) if want_inv else (h,):
                    o.setGrid(g)
                    ca.SetToIdentity(o)
                if init_h is not None:
                    ca.Copy(h, init_h)
                    if want_inv and init_hinv is not None:
                        ca.Copy(hinv, init_hinv)
                    elif want_inv:   # hinv from the identity by fixed-point iterations
                        ca.SetToIdentity(gI)
                        for _ in range(4 * max(1, int(cfg['inverse_iters']))):
                            ca.ComposeHH(scratch, h, hinv)
                            ca.Sub_I(hinv, scratch)
                            ca.Add_I(hinv, gI)
            else:
                resampler.updateHField(h)
                if want_inv:
                    resampler.updateHField(hinv)
            kernel = kernel_of(g, mType, cfg)
            sp = g.spacing()
            cap, step = float(cfg['max_step']), float(cfg['step'])
            metric.prepare(I0, I1)

            def evaluate():
                # the energy, and diff = -1/2 dE/dIdef / voxelVol (SSD: I0 - Idef)
                ca.ApplyH(Idef, I1, h)
                return metric.evaluate(I0, Idef, diff)

            def accept():
                if want_inv:
                    ca.ComposeVInvH(scratch, gU, hinv)
                    hinv.swap(scratch)

            e_prev, pending = None, False   # pending: gU is in h but not yet checked
            for _ in range(iters[lev]):
                e = evaluate()
                if pending and e > e_prev:
                    h.swap(hprev)           # the update raised the energy: undo it
                    cap *= 0.5
                    step *= 0.5
                    e = evaluate()
                elif pending:
                    accept()
                pending = False
                e_prev = e
                energy.append(e)
                scale_of_iter.append(fac)
                bar.update(e, scale=fac)
                ca.Gradient(gI, Idef)
                ca.Mul_I(gI, diff)
                kernel.applyInverseOperator(gU, gI)
                m = max_voxel_disp(gU, sp)
                if not m > 0.0:
                    continue                # zero gradient: nothing to do
                ca.MulC_I(gU, cap / m if step == 0.0 else min(step, cap / m))
                ca.ComposeHV(hprev, h, gU)
                h.swap(hprev)               # h: new, hprev: old
                pending = True
            if pending:                     # check the level's last update
                if evaluate() > e_prev:
                    h.swap(hprev)
                else:
                    accept()

    if want_inv:
        # polish the inverse: fixed-point iterations hinv <- hinv - (h o hinv - x)
        ident = gI
        ca.SetToIdentity(ident)
        for _ in range(int(cfg['inverse_iters'])):
            ca.ComposeHH(scratch, h, hinv)
            ca.Sub_I(hinv, scratch)
            ca.Add_I(hinv, ident)
    deformed = ca.Image3D(origGrid, mType)
    ca.ApplyH(deformed, I1orig, h)
    return RegistrationResult(
        method='greedy', deformed=deformed, h=h, hinv=hinv, energy=energy,
        energy_terms={'image': list(energy), 'reg': [0.0] * len(energy)},
        scale_of_iter=scale_of_iter, iterations=len(energy), seconds=timer(),
        device='gpu' if mType == ca.MEM_DEVICE else 'cpu', config=cfg)

