"""Vector-momentum LDDMM by geodesic shooting (the downstream "vectormomentum"
job of spec section 7), written on PyCA.Core.

The moving image I0 is deformed by the endpoint of the geodesic that the
initial momentum m0 generates; m0 is optimised by gradient descent on::

    E(m0) = 1/2 <m0, K m0> + 1/(2 sigma^2) || I0 o phi_1^-1 - I1 ||^2

(both terms integrals over the fixed grid: sums times the voxel volume).
With ``metric`` other than ``ssd`` (PyCA.Apps.metrics) the image term is
``E_metric(I1, I0 o phi_1^-1) / (2 sigma^2)`` and I_hat(1) below is the
metric's force over sigma^2 (every metric's energy is in SSD units).

Forward shooting (EPDiff in Lagrangian form, ``nsteps`` steps of dt = 1/nsteps)::

    m_t = CoAd(phi_t^-1, m0)               (``CoAd``)
    v_t = K m_t                            (``applyInverseOperator``)
    phi_{t+dt} = phi_t + dt v_t o phi_t    (``ComposeVH``; RK4: ``ApplyH`` of the field)
    phi_{t+dt}^-1                          the inverse of phi_t + w: one fixed-point
                                           iteration (the default) is
                                           phi_t^-1 o (Id - dt v_t) (``ComposeHVInv``),
                                           more run ``UpdateInverse``

The deformed image is ``ApplyH(I0, phi_1^-1)``; ``result.h`` is phi_1^-1 (an
H-field on the fixed grid into the moving image) and ``result.hinv`` phi_1.

Backward adjoint (continuous adjoint of the forward system, explicit Euler
from t = 1 to 0, ``m_hat(1) = 0``)::

    I_hat(1) = -(I(1) - I1) / sigma^2,  I_hat(t) = Splat of I_hat(1) through
               phi_t o phi_1^-1            (``ComposeHH``, ``Splat``)
    d m_hat/dt = ad_v m_hat + K(I_hat grad I_t - ad*_{m_hat} m_t)
               (``AdInf``, ``CoAdInf``, ``Gradient``, ``applyInverseOperator``)

The L2 gradient is K m0 - m_hat(0); the step is preconditioned by L = K^-1
(the gradient in the metric of the momenta): ``m0 <- m0 - eps (m0 - L m_hat(0))``
(``applyOperator``), with the step halved (and the iteration redone) when the
energy rises. By default the direction is L-BFGS's in that metric
(:class:`LBFGSDescent`, ``lbfgs`` pairs per scale, the preconditioned
gradient its first direction); ``lbfgs=0`` keeps this preconditioned descent
with heavy-ball momentum (:class:`Descent`).

Descent metric (``descent_lpow`` = q, default 2): where lpow = p is larger, both
descents run in the metric of L^q instead of K's own, L^p: their gradient is
L^(q-p) (m0 - L^p m_hat(0)) (:func:`descent_metric`, :class:`KernelPower`: the
same kernel at another power, no second kernel's buffers); the heavy-ball descent
pays one more FFT operator per iteration for it, L-BFGS none (it works on the L2
gradient K m0 - m_hat(0), which is the same in every metric, with K m0 the
shooter's v_0: 8 FFT operators an iteration with two time steps, against 11 when
it smoothed the gradient first; 26 % fewer on the demo's large pair, 6 to 17 %
less time; 7 where the shooter keeps its path, ``path_max_mb``, two of them L^q
on K's band only; 6 where each trial's K m0 is K prev_m0 - step K q,
``LBFGSDescent.trial_velocity``); both keep K's band (the modes K drops get no momentum: at 1 mm
0.308 / 0.710 mm without that, 0.254 / 0.588 with it; at 2 mm within 0.03 mm).
In K's metric the direction m0 - L^3 m_hat(0) is dominated by the
frequencies that L^3 amplifies most, where the continuous adjoint's gradient
does not match the discrete energy: on the demo pairs the direction raised the
energy for every step size at the finest scale after a coarse one (a finite
difference of the image term along it of -4.3e11 against a predicted +1.1e11),
the scale stopped after 1 to 3 iterations and the error doubled (clean 0.70 mm,
T2-like 2.2 mm, ``--max-disp 24`` 2.5 mm). In the metric of L^2 every scale
descends.

Kernel: K = L^-lpow with L = -alpha lap - beta grad div + gamma
(``FluidKernelFFT`` with ``setLPow``). The default is lpow = 3, alpha = 125 mm^2,
gamma = 1 (until this release lpow = 2, alpha = 200, iterations 40/40/15, which
the atlas builder's subjects keep): the smoother velocities of L^3 fit smooth
anatomical deformations better (2 mm demo pairs, mean / p95 mm: clean 0.379 /
0.774 -> 0.337 / 0.696, rescanned 0.381 / 0.767 -> 0.316 / 0.654, T2-like 1.468 /
3.032 -> 1.394 / 2.777, ``--max-disp 24`` 0.916 / 2.200 -> 0.794 / 1.861; about
1.3x the time; 1 mm clean pair 0.322 / 0.733 in 99 s and 3.4 GB -> 0.254 / 0.588
with 2.5 GB, the descent's operators on K's band), but
only with the descent run in the metric of L^2 (``descent_lpow``, below).
Already with lpow = 2 the Green's function in 3-D is exp(-r/l) with l =
sqrt(alpha/gamma), whose gradient is bounded, so v = K m is Lipschitz
with ``|Dv|`` bounded independently of the grid for any momentum of finite mass,
even one concentrated on edges as image forces are (the time-step and fold
checks below still guard the discretisation). With lpow = 1 (the Green's
function exp(-r/l)/r, gradient ~ 1/r^2) the derivative of the velocity of a
momentum concentrated on a surface diverges at that surface, so ``max |Dv|`` of a
force-like momentum grows with the resolution
(about 3x from scale 4 to scale 2 on the demo pair), the geodesic
self-focuses, and on large deformations the descent ran into folds it
could not leave (the ``--max-disp 24`` demo: 5.1 mm mean error and 64 time
steps at lpow = 1, alpha = 800; 2.5 mm and 4 to 8 steps at the default, 2.1 mm
with nsteps = 8; greedy 2.5 mm).
At least ``nsteps`` = 2 time steps (4 until this release: 2 register the demo
pairs as accurately in 60 % of the time, and every shot is checked and
refined, above); the atlas builder's subjects use 4 (``atlas.ATLAS_LDDMM_NSTEPS``)
and 2 fixed-point iterations of the inverse (``atlas.ATLAS_LDDMM_INVERSE_ITERS``).

Final gain (``gain='auto'``; not with MI): the regulariser shrinks the
recovered displacement by a nearly constant fraction (0.96 of the true one
on the demo pairs), so the result's m0 is scaled by the s that minimises
the image term alone along its geodesic (:func:`search_gain`; the geodesic
from s m0 is the one from m0 run for time s). 2 mm demo pairs: clean 0.388
-> 0.379 mm, 24 mm 0.968 -> 0.916 mm. The atlas builder's subjects run
without it (their momenta stay the energy's minimisers).

Large deformations (``large_disp``, default 1): a prior sized for small
deformations shrinks a large one beyond what the final gain undoes (the
24 mm demo pair: 0.26 mm short along the true displacement). On the finest
level of a multiscale run the coarser levels' result measures the
deformation: D, the 99.9th percentile of ``|K m0|`` (mm), against the
kernel's length l = sqrt(alpha / gamma) (:func:`disp_ratio`). Where D / l
exceeds ``large_disp``, that level takes ``sigma * f`` and ``iters / f`` with
f = max(RELAX_FLOOR, large_disp l / D) (:func:`relax_factor`), an
empirical-Bayes choice of the prior's scale; the result's config records f
(``relax_used``) and D / l (``disp_ratio``). The demo's 8 mm pairs reach D / l
0.46-0.72 over seeds 3, 7 and 11 (untouched); the 24 mm pairs 1.2-1.7: mean /
p95 mm seed 7 0.794 / 1.862 -> 0.601 / 1.321, seed 3 0.837 / 1.928 -> 0.673 /
1.593, seed 11 0.579 / 1.412 -> 0.520 / 1.234, at 1.3-2x the time (seed 3's
finest level needs 8 time steps instead of 4). Relaxing every level, or the
finest one on every pair, cost the small-deformation pairs (user guide,
"Large deformations relax the finest level").

Units: velocities and momenta are physical (V-fields); the operators whose
derivatives are in voxel units (CoAd, AdInf, CoAdInf) are converted with the
grid spacing S = diag(spacing): CoAd_phys(g, m) = S^-1 CoAd(g, S m),
ad_phys(X, Y) = S AdInf(S^-1 X, S^-1 Y), ad*_phys(X, m) = S^-1 CoAdInf(S^-1 X, S m),
so anisotropic grids are handled exactly.
"""
import contextlib
import copy
import math
import warnings

import PyCA.Core as ca

from ._common import (ConfigError, FoldGuard, jacobian_rim, kernel_of, polish_inverse, scratch_field,
                      scratch_image, gain_search, gain_wanted)
from .memory import kept_path_fields, lbfgs_pairs
from .metrics import SSD
from .multiscale import Method, register_levels, min_spacing, used_spacings, check_warm_field
from .schema import (Schema, Param, multiscale, kernel, device, metric, step_control, positive,
                     non_negative, at_least, one_of, final_gain)

__all__ = ['DEFAULTS', 'SCHEMA', 'SIGMA_AUTO', 'RELAX_FLOOR', 'lddmm_register', 'resolve_sigma',
           'relax_factor', 'disp_ratio', 'Shooter', 'Descent', 'LBFGSDescent', 'polish_inverse']

#: ``sigma=0`` (automatic) per metric name (:func:`resolve_sigma`): 0.001 for the
#: SSD-like metrics (``ssd``, ``ncc``, ``lncc``, ``auto``), 0.008 for ``mi``.
#: Every metric's energy is in SSD units, but Mattes MI's force is large where
#: its histogram is noisy: with 0.001 LDDMM over-fitted it (T2-like demo pair,
#: seed 7: 2.42 / 5.81 mm; seeds 3 and 11: 2.56 and 2.53 mm mean), with 0.008
#: 1.47 / 3.03, 1.45 and 1.38 mm, and on same-contrast pairs too (clean: 0.38
#: against 0.53 mm; large deformation: 1.04 against 1.05 mm); 0.016 was better
#: on the smaller T2 deformations and failed on the large ones (16 mm: 2.66
#: against 1.76 mm at 0.008).
SIGMA_AUTO = {'mi': 0.008}
SIGMA_DEFAULT = 0.001


def resolve_sigma(sigma, metric=None):
    """The image-match ``sigma`` a registration uses: ``sigma`` itself, or for
    0 (automatic; or None) :data:`SIGMA_AUTO`'s value for the metric's name
    (:data:`SIGMA_DEFAULT` for every other).

    Args:
        sigma (float or None): the ``sigma`` parameter.
        metric (Metric, str or None): the metric (object or name); None: SSD.

    Returns:
        float.
    """
    if sigma is None or float(sigma) == 0.0:
        name = str(getattr(metric, 'name', metric if metric is not None else 'ssd')).lower()
        return float(SIGMA_AUTO.get(name, SIGMA_DEFAULT))
    return float(sigma)


#: The parameters of :func:`lddmm_register`: the shared fragments
#: (PyCA.Apps.schema) with LDDMM's defaults.
SCHEMA = Schema(
    multiscale(scales=[4, 2, 1],      # down-sampling factors, coarse to fine
               iters=[60, 40, 20]),   # most gradient-descent iterations per scale (one value: every scale)
    {'nsteps': Param(2, at_least(1)),  # least time steps of the geodesic shooting (more where max_cfl or
                                       #   a fold needs them; the atlas builder's subjects take 4)
     'integrator': Param('euler', one_of('euler', 'rk4')),
     'adjoint': Param('euler', one_of('heun', 'euler')),  # backward integration of the adjoint: 'euler'
                                       #   (trapezoid force) or 'heun' (2nd order, one more K per step)
     'sigma': Param(0.0, non_negative),  # image-match weight 1/(2 sigma^2) (intensities in [0, 1]);
                                       #   0 = automatic: SIGMA_AUTO of the metric (0.001; MI 0.008)
     'large_disp': Param(1.0, non_negative)},  # (kernel lengths) a large deformation relaxes the
                                       #   finest level: where the coarser levels' velocity (99.9th
                                       #   percentile of |K m0|, mm) is D > large_disp * l, l =
                                       #   sqrt(alpha/gamma), that level takes sigma * f and its iters / f,
                                       #   f = max(RELAX_FLOOR, large_disp * l / D) (relax_factor; the
                                       #   demo's 8 mm pairs reach D/l 0.6-0.7, the 24 mm pair 1.6); 0: off
    kernel(alpha=125.0, beta=0.0, gamma=1.0,  # L = (-alpha lap - beta grad div + gamma)^lpow (physical
                                       #   units: mm^2); sqrt(alpha/gamma) = 11 mm is the length of
                                       #   K's decay
           lpow=Param(3, non_negative),  # the power of L: from 2 on, |Dv| of v = K m0 is bounded
                                       #   independently of the grid (with 1, K's kernel ~ 1/r, it grows
                                       #   with the resolution and large deformations fold); 3: smoother
                                       #   velocities, closer to smooth anatomy's (module notes)
           kernel_tol=Param(1e-4)),    # K drops the frequencies where its multiplier is below this
                                       #   fraction of its largest (||K - K_tol|| <= tol ||K||), and the
                                       #   CPU skips their FFTs (FluidKernelFFT.setSpectralTolerance;
                                       #   2 mm grid: 1.5x faster K); 0: the exact K
    step_control(
        step=0.0,                      # initial gradient-descent step on the momentum; 0 = automatic:
                                       #   the first step of each scale moves by at most init_disp voxels
        init_disp=Param(0.5, positive),   # (voxels) the automatic first step's largest velocity change
        min_step=Param(1e-3, non_negative),  # stop a scale when the step has been halved below this
                                       #   fraction of its first value
        tol=Param(1e-3, non_negative),  # ... or when its last 3 iterations lowered the energy by less
                                       #   than this fraction of the scale's gain so far (0: never)
        step_growth=Param(1.2, positive),  # the step grows by this factor after each accepted iteration
        max_step=1.0,                  # ... up to this
        momentum=Param(0.65, non_negative)),  # heavy-ball momentum of the descent (0: plain descent)
    {'descent_lpow': Param(2, at_least(1)),  # the descent runs in the metric of L^q, q = min(lpow,
                                       #   descent_lpow): the gradient m0 - L^lpow m_hat(0) smoothed by
                                       #   L^(q - lpow) (descent_metric)
     'lbfgs': Param([5, 5, 5], non_negative, per_scale=True),  # L-BFGS history per scale (pairs of
                                       #   fields; 0: the heavy-ball descent above), LBFGSDescent
     'lbfgs_max_mb': Param(192, non_negative),  # the most memory (MiB) a level's history may hold:
                                       #   fewer pairs where they do not fit (a 2 mm brain holds 5 in
                                       #   138 MiB; a 1 mm brain's finest level none: the heavy-ball
                                       #   descent, so that its peak memory is unchanged)
     'lbfgs_max_disp': Param(1.0, positive)},  # (voxels) the largest velocity change of an L-BFGS step
    {'inverse_iters': Param(1, at_least(1)),  # fixed-point iterations of the inverse per time step: 1
                                       #   is phi^-1 o (Id - dt v) (ComposeHVInv, one gather), more run
                                       #   UpdateInverse (no more accurate on the demo pairs, slower)
     'max_cfl': Param(0.8, positive),  # stability bound of the shooting: dt * max_x |Dv_t(x)|
                                       #   (Frobenius) at every step; nsteps is raised (up to
                                       #   max_nsteps) to keep it. Below 1 each Euler step is
                                       #   invertible (and det J > 0 is checked too); 0.8 keeps
                                       #   2 steps on the 24 mm demo pair (0.5 took 4: 6.3 s,
                                       #   0.99 mm; 0.8: 3.1 s, 0.97 mm)
     'max_nsteps': Param(64, at_least(1)),  # the most time steps the adaptive shooting may take
     'path_max_mb': Param(128, non_negative),  # the most memory (MiB) the shooting may spend to keep
                                       #   its path's momenta m_n and velocities v_n (n = 1..T-1) for
                                       #   the adjoint instead of recomputing them (a CoAd and a K per
                                       #   gradient and time step; a 2 mm brain with 2 time steps: 28
                                       #   MiB; a 1 mm brain does not fit: recomputed); 0: recompute
     'hinv_iters': Param(6, non_negative)},  # iterations that make result.hinv (phi_1) the inverse of
                                       #   result.h at the end (polish_inverse; 0: the shooting's own
                                       #   phi_1, which differs from h's inverse by O(dt))
    final_gain(),                      # 'auto': m0 scaled along its geodesic (search_gain); not with MI
    device(),                          # 'cpu', 'gpu' or 'auto' (the memory type of the fixed image)
    {'smooth_scales': Param(True)},    # Gaussian pre-smoothing when down-sampling
    metric('auto', lncc_radius=0, mi_bins=32),  # 'auto', 'lncc', 'ssd', 'ncc' or 'mi' (PyCA.Apps.metrics);
                                       #   every metric's energy is in SSD units, so sigma keeps its meaning
    {'fft_pad': Param(True)},          # register on a grid padded at the far end (edge replicated) to
                                       #   sizes whose FFT is fast at every scale (fft_size: 99x117x95 ->
                                       #   100x120x96, 3.5x faster transforms), results cropped back;
                                       #   not with init_momentum
)

#: Every parameter of lddmm_register (override with config= or keywords).
DEFAULTS = SCHEMA.defaults()


#: the least factor :func:`relax_factor` gives ``sigma`` (and the most it
#: multiplies the finest level's iterations by: 1 / RELAX_FLOOR)
RELAX_FLOOR = 0.5


def relax_factor(ratio, large_disp, floor=RELAX_FLOOR):
    """The finest level's factor on ``sigma`` for a deformation ``ratio`` kernel
    lengths large (``D / l``, :func:`disp_ratio`): ``min(1, max(floor,
    large_disp / ratio))``; 1 where ``large_disp`` is 0 (off).

    A prior sized for small deformations shrinks a large one (the demo's 24 mm
    pair: 0.26 mm short along the true displacement at the default ``sigma``):
    the data term is strengthened in the deformation's proportion, as an
    empirical-Bayes choice of the prior's scale from the coarse levels' result.

    Args:
        ratio (float): D / l of the coarse levels' velocity.
        large_disp (float): the ratio from which the finest level relaxes (0: never).
        floor (float): the least factor; default RELAX_FLOOR.

    Returns:
        float: the factor, in [floor, 1].
    """
    if not large_disp > 0 or not ratio > large_disp:
        return 1.0
    return min(1.0, max(float(floor), float(large_disp) / float(ratio)))


def disp_ratio(m0, kernel, cfg, scratch, mag, pct=99.9):
    """D / l: the 99.9th percentile of ``|K m0|`` (mm; the velocity of the
    momentum, i.e. about the displacement of its geodesic) over the kernel's
    length ``l = sqrt(alpha / gamma)`` (mm).

    Args:
        m0 (Field3D): the momentum.
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): K of m0's grid.
        cfg (dict): the configuration (``alpha``, ``gamma``).
        scratch (Field3D): scratch of m0's grid and memory type (K m0).
        mag (Image3D): scratch of m0's grid and memory type (``|K m0|``).
        pct (float): the percentile; default 99.9.

    Returns:
        float: D / l (0 for a zero momentum).
    """
    import numpy as np
    from PyCA.Common import AsNPCopy
    kernel.applyInverseOperator(scratch, m0)
    ca.Magnitude(mag, scratch)
    a = AsNPCopy(mag)                    # (from any memory type)
    ell = math.sqrt(float(cfg['alpha']) / float(cfg['gamma']))
    return float(np.percentile(a, pct)) / ell


def _vec(v):
    return ca.Vec3Df(float(v[0]), float(v[1]), float(v[2]))


class Shooter:
    """Geodesic shooting and its adjoint on one grid (one scale).

    ``shoot(m0)`` fills the stored path (g_n, ginv_n, v_n, m_n for n = 0..T);
    ``energy(I0, I1)`` deforms I0 and returns (E_img, E_reg, deformed);
    ``gradient(I0, I1)`` integrates the adjoint and returns L m_hat(0).

    Args:
        grid (GridInfo): the grid of the scale.
        mType (MemoryType): MEM_HOST or MEM_DEVICE.
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): K = L^-1 on ``grid``
            (``make_fluid_kernel``).
        nsteps (int, optional): time steps T of the shooting (dt = 1/T); default None =
            ``DEFAULTS['nsteps']`` (2).
        integrator (str, optional): 'euler' or 'rk4' for the forward flow; default None =
            ``DEFAULTS['integrator']`` ('euler').
        sigma (float, optional): image-match weight 1/(2 sigma^2); default None =
            ``DEFAULTS['sigma']`` (0: :func:`resolve_sigma` of ``metric``).
        inverse_iters (int, optional): fixed-point iterations of the inverse per time step;
            default None = ``DEFAULTS['inverse_iters']`` (1). With the Euler integrator, 1 is the
            first iterate itself, ginv_n o (Id - dt v_n) (ComposeHVInv: one gather); more run
            UpdateInverse (two gathers per iteration).
        adjoint (str, optional): backward integration of the adjoint: 'heun' (2nd order) or
            'euler'; default None = ``DEFAULTS['adjoint']`` ('euler').
        metric (Metric, optional): the similarity metric (PyCA.Apps.metrics); default None = SSD.
        endpoint (bool): also compute m_T and v_T (default True). The steps
            use v_0 .. v_{T-1} and the adjoint m_1 .. m_{T-1} only, so the
            registration passes False and saves a CoAd and a K per shoot;
            ``cfl`` then covers the velocities the steps used.
        lean (bool): hold only what the adjoint needs (default False; the
            registration passes True, which implies ``endpoint=False``):
            the path is g_1 .. g_T and ginv_1 .. ginv_T only (2 T fields;
            the full shooter holds 4 T + 7 fields and three images). The
            identity g_0 = ginv_0 is used implicitly (the first step adds
            dt v_0 to it; an identity field where RK4, more inverse iterations
            or an anisotropic grid need it as an operand); m_n = CoAd(ginv_n,
            m0) and (with the Euler adjoint) v_n = K m_n are recomputed by the
            adjoint (one more K per gradient and time step after the first),
            the adjoint's fourth scratch field is the caller's
            (:meth:`gradient`'s ``scratch``), and with the registration's
            Euler / one inverse iteration / Euler adjoint the scratch (three
            fields, two images) is borrowed from the thread's memory manager
            for each shoot and gradient only (``scratch_field``), so the
            metric's scratch reuses it in between. ``v[0]`` is then None
            after a shoot; ``e_reg`` holds the shoot's 1/2 <m0, K m0>. The
            energy and the gradient are the full path's to rounding
            (Documentation/Architecture.md, "Where the memory goes").
        keep_mb (float): lean only: where the path's m_1 .. m_{T-1} (and, pooled,
            v_1 .. v_{T-1}: :func:`~PyCA.Apps.memory.kept_path_fields`) fit in this many MiB, they are kept
            for the adjoint instead of recomputed (a CoAd and a K less per gradient
            and time step; ``keeps``); decided again at each :meth:`set_steps`.
            Default 0: recomputed (the registration passes ``path_max_mb``).

    Raises:
        ConfigError: an unknown ``integrator`` or ``adjoint``.
    """

    def __init__(self, grid, mType, kernel, nsteps=None, integrator=None, sigma=None,
                 inverse_iters=None, adjoint=None, metric=None, endpoint=True, lean=False, keep_mb=0.0):
        d = DEFAULTS
        nsteps = d['nsteps'] if nsteps is None else nsteps
        integrator = d['integrator'] if integrator is None else integrator
        sigma = d['sigma'] if sigma is None else sigma
        inverse_iters = d['inverse_iters'] if inverse_iters is None else inverse_iters
        adjoint = d['adjoint'] if adjoint is None else adjoint
        SCHEMA.check({'nsteps': nsteps, 'integrator': integrator, 'adjoint': adjoint})
        self.adjoint = adjoint
        self.grid, self.mType, self.K = grid, mType, kernel
        self.metric = metric if metric is not None else SSD()   # prepared by the caller
        self._force_of = None
        self.T, self.integrator, self.sigma = int(nsteps), integrator, resolve_sigma(sigma, self.metric)
        self.ninv = int(inverse_iters)
        self.lean = bool(lean)
        self.keep_mb = float(keep_mb) if self.lean else 0.0
        self.keeps = False                   # m_n (and v_n) of the lean path kept (set_steps)
        self.endpoint = bool(endpoint) and not self.lean
        sp = grid.spacing()
        self.sp = (float(sp[0]), float(sp[1]), float(sp[2]))
        # isotropic over the axes that exist (a 2-D grid's z spacing is irrelevant)
        used = used_spacings(grid)
        self.iso = max(used) - min(used) <= 1e-6 * max(used)
        self.s_iso = used[0]
        self.S = _vec(self.sp)
        self.Sinv = _vec([1.0 / s for s in self.sp])
        self.vv = grid.voxelVol()
        F = lambda: ca.Field3D(grid, mType)  # noqa: E731
        I = lambda: ca.Image3D(grid, mType)  # noqa: E731
        self._F, self._I = F, I
        self.one_gather = integrator == 'euler' and self.ninv == 1
        # pooled (lean, Euler, one inverse iteration, Euler adjoint: the
        # registration's default): the scratch t1, t2, w, i2, i3 is borrowed
        # from the thread's memory manager for each shoot and gradient only
        # (_borrow), so the metric's scratch reuses it in between
        self.pooled = self.lean and self.one_gather and adjoint == 'euler'
        if self.pooled:
            self.t1 = self.t2 = self.w = None
        else:
            self.t1, self.t2, self.w = F(), F(), F()
        # t3: UpdateInverse's scratch, and the adjoint's (the caller's scratch when lean)
        self.t3 = None if self.lean and self.one_gather else F()
        self.t4 = F() if not self.iso else None    # the unit conversions' scratch (anisotropic grids)
        self.t5 = F() if not self.iso else None
        self.mscr = None
        self.g, self.ginv, self.v, self.m = [], [], [], []
        self.set_steps(self.T)
        self.i1 = I()                        # the metric's force, from energy() to gradient()
        self.i2, self.i3 = (None, None) if self.pooled else (I(), I())
        self.e_reg = None                    # the last shoot's regulariser energy
        # a field the caller lends to receive each shoot's v_0 = K m0 (LBFGSDescent's
        # L2 gradient K m0 - m_hat(0) then needs no K of its own), and the m0 it belongs to
        self.v0_out = None
        self.v0_of = None
        self.cfl = 0.0                       # max_n dt * max_x |Dv_n(x)|_F of the last shoot
        self.min_jac = 1.0                   # min det D(phi_1), det D(phi_1^-1) of the last shoot
        # det J is judged off the grid's rim (jacobian_rim, as polish_inverse's; a face's
        # worth of memory): there the H-field's differences are one-sided and its samples
        # clamped, while K's periodic velocity does not vanish at the faces (the 1 mm MNI
        # pair's brainstem, cut by the bottom face: det J -0.04 on that face at T = 2 with
        # dt max|Dv| 0.19 and 0.43 inside, which doubled the finest level's T)
        self.rim = jacobian_rim(grid, mType)
        if adjoint == 'heun':
            self.hb_a, self.hb_p = F(), F()
        if integrator == 'rk4':
            self.rk_kk, self.rk_raw, self.rk_g = F(), F(), F()

    def set_steps(self, nsteps):
        """Sets the number of time steps T, keeping the path's fields that
        are still needed and allocating only the missing ones (the adaptive
        refinement re-shoots with more steps without a second path in memory).
        The path must be shot again before it is read.

        Args:
            nsteps (int): the new T (>= 1).
        """
        T = int(nsteps)
        if T < 1:
            raise ConfigError('nsteps must be >= 1, got %r' % (nsteps,))
        F = self._F
        old = [f for f in self.g[1:] + self.ginv[1:] + self.v[1:] + self.m[1:] if f is not None]
        take = lambda: old.pop() if old else F()   # noqa: E731
        if not self.g:
            if self.lean and self.one_gather and self.iso:
                ident = None                     # the identity, used implicitly
            else:
                ident = F()
                ca.SetToIdentity(ident)          # phi_0 = Id for every shoot: set once
            self.g, self.ginv = [ident], [ident if self.lean else F()]
            if not self.lean:
                ca.SetToIdentity(self.ginv[0])
            # v_0 in scratch unless the adjoint reads it (Heun's ad_v(t_0));
            # pooled: t1, borrowed by each shoot
            self.v = [None if self.pooled else
                      self.t1 if self.lean and self.adjoint != 'heun' else F()]
        # v_0 .. v_{T-1}, and v_T unless lean; pooled: none (v_n in t1 during
        # the shoot, K m_n recomputed by the adjoint)
        # lean, but m_n (and, pooled, v_n) kept where they fit in keep_mb
        self.keeps = self.lean and kept_path_fields(T, self.pooled, self.grid, self.keep_mb) > 0
        nv = T if self.keeps else 1 if self.pooled else T if self.lean else T + 1
        nm = T - 1 if self.keeps else 0 if self.lean else T     # m_1 .. m_T (recomputed when lean)
        self.g = self.g[:1] + [take() for _ in range(T)]
        self.ginv = self.ginv[:1] + [take() for _ in range(T)]
        self.v = self.v[:1] + [take() for _ in range(nv - 1)] + [None] * (T + 1 - nv)
        self.m = [None] + [take() for _ in range(nm)] + [None] * (T - nm)
        if self.lean and (self.integrator == 'rk4' or self.adjoint == 'heun'):
            # the RK4 stages and Heun's second evaluation use w: m_n gets its own scratch
            self.mscr = self.mscr or F()
        else:
            self.mscr = self.w               # free wherever m_n is recomputed (pooled: _borrow)
        self.T = T
        del old

    def kept_fields(self, T):
        """The fields a lean shooter with T time steps adds where it keeps its path's
        momenta (``keep_mb``; :func:`~PyCA.Apps.memory.kept_path_fields` without the
        budget): m_1 .. m_{T-1}, and for a pooled one v_1 .. v_{T-1} too.

        Args:
            T (int): the time steps.

        Returns:
            int: the fields (0 with one time step).
        """
        return kept_path_fields(T, self.pooled, self.grid, math.inf)

    @contextlib.contextmanager
    def _borrow(self, fields, images):
        """Pooled shooters: the named scratch attributes borrowed from the
        thread's memory manager (``scratch_field``, ``scratch_image``) for the
        ``with`` block, then handed back."""
        if not self.pooled:
            yield
            return
        for name in fields:
            setattr(self, name, scratch_field(self.grid, self.mType))
        for name in images:
            setattr(self, name, scratch_image(self.grid, self.mType))
        self.mscr = self.w
        try:
            yield
        finally:
            for name in fields + images:
                setattr(self, name, None)
            self.mscr = None

    def momentum(self, out, n, m0):
        """m_n of the last shoot: the stored field, or (lean) CoAd(ginv_n, m0)
        computed into ``out``.

        Args:
            out (Field3D): scratch the lean path computes into.
            n (int): the time step.
            m0 (Field3D): the shoot's initial momentum.

        Returns:
            Field3D: m_n (``self.m[n]`` or ``out``).
        """
        if self.m[n] is not None:
            return self.m[n]
        self.coad(out, self.ginv[n], m0)
        return out

    @classmethod
    def from_config(cls, grid, mType, kernel, cfg, metric=None, nsteps=None, endpoint=True, lean=False):
        """A Shooter with the time steps, integrator, sigma, inverse iterations
        and adjoint of an LDDMM configuration (``DEFAULTS`` keys; missing keys
        take the defaults).

        Args:
            grid (GridInfo): the grid of the scale.
            mType (MemoryType): MEM_HOST or MEM_DEVICE.
            kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): K on ``grid`` (``kernel_of(grid, mType, cfg)``).
            cfg (dict): the configuration (``lddmm_register``'s merged parameters).
            metric (Metric, optional): the similarity metric; default None = SSD.
            nsteps (int, optional): time steps instead of ``cfg['nsteps']``; default None.
            endpoint (bool): also compute m_T and v_T; default True.
            lean (bool): hold only what the adjoint needs (the class notes); default False.

        Returns:
            Shooter.
        """
        c = dict(DEFAULTS, **{k: v for k, v in cfg.items() if k in DEFAULTS})
        return cls(grid, mType, kernel, c['nsteps'] if nsteps is None else nsteps, c['integrator'],
                   c['sigma'], c['inverse_iters'], c['adjoint'], metric, endpoint=endpoint, lean=lean,
                   keep_mb=c['path_max_mb'])

    # ---- unit conversions of the voxel-unit operators --------------------
    def _converted(self, op, out, a, sa, b, sb, sout):
        """out = sout * op(sa * a, sb * b) for the voxel-unit operator op
        (sa, sb, sout: Vec3Df spacing factors; anisotropic grids only)."""
        ca.MulC(self.t4, a, sa)
        ca.MulC(self.t5, b, sb)
        op(out, self.t4, self.t5)
        ca.MulC_I(out, sout)

    def coad(self, out, g, m):
        """out = CoAd_phys(g, m) = ``|Dg| Dg^T m o g`` (physical m).

        Args:
            out (Field3D): output, on the shooter's grid.
            g (Field3D): an H-field (the deformation).
            m (Field3D): a momentum (physical units).
        """
        if self.iso:
            ca.CoAd(out, g, m)
        else:
            ca.MulC(self.t4, m, self.S)
            ca.CoAd(out, g, self.t4)
            ca.MulC_I(out, self.Sinv)

    def ad(self, out, X, Y):
        """out = ad_X Y = DX Y - DY X (physical X, Y).

        Args:
            out (Field3D): output, on the shooter's grid.
            X (Field3D): a velocity (V-field, physical units).
            Y (Field3D): a velocity (V-field, physical units).
        """
        if self.iso:
            ca.AdInf(out, X, Y)
            ca.MulC_I(out, 1.0 / self.s_iso)
        else:
            self._converted(ca.AdInf, out, X, self.Sinv, Y, self.Sinv, self.S)

    def adstar(self, out, X, m):
        """out = ad*_X m = DX^T m + div(m X^T) (physical X, m).

        Args:
            out (Field3D): output, on the shooter's grid.
            X (Field3D): a velocity (V-field, physical units).
            m (Field3D): a momentum (physical units).
        """
        if self.iso:
            ca.CoAdInf(out, X, m)
            ca.MulC_I(out, 1.0 / self.s_iso)
        else:
            self._converted(ca.CoAdInf, out, X, self.Sinv, m, self.S, self.Sinv)

    # ---- forward ------------------------------------------------------------
    def _velocity(self, v, m, ginv, m0):
        """m = CoAd(ginv, m0), v = K m."""
        self.coad(m, ginv, m0)
        self.K.applyInverseOperator(v, m)

    def _lagrangian(self, out, v, g, scale):
        """out = scale * (v o g) in voxel units (the increment of the H-field g)."""
        ca.ApplyH(out, v, g, ca.BACKGROUND_STRATEGY_PARTIAL_ZERO)
        # to voxel units and scaled, in one pass
        if self.iso:
            ca.MulC_I(out, float(scale) / self.s_iso)
        else:
            ca.MulC_I(out, _vec([float(scale) / s for s in self.sp]))

    def _dv_max(self, v):
        """max_x |Dv(x)|_F (physical derivatives: dimensionless); a forward step
        Id + dt v is invertible where dt |Dv| < 1."""
        ca.JacobianNormSqr(self.i2, v)   # one pass (was Jacobian, 3 SqrMagnitude, 2 Add_I)
        return math.sqrt(max(ca.Max(self.i2), 0.0))

    def _min_jac(self):
        guard = FoldGuard(self.i2, self.rim)
        return min(guard.min_jac(self.g[self.T]), guard.min_jac(self.ginv[self.T]))

    def stable(self, max_cfl):
        """The last shoot is usable: finite, within the stability bound, not folded
        (min det J of phi_1 and phi_1^-1 above 0 two voxels or more inside the grid: ``rim``).

        Args:
            max_cfl (float): the stability bound on ``dt * max_x |Dv(x)|``.

        Returns:
            bool.
        """
        return (math.isfinite(self.cfl) and self.cfl <= max_cfl
                and math.isfinite(self.min_jac) and self.min_jac > 0.0)

    def shoot(self, m0, v0=None):
        """Integrates the geodesic from ``m0``: fills g_n, ginv_n, v_n, m_n for n = 0..T
        (v_T and m_T only with ``endpoint``) and the stability numbers (``cfl``,
        ``min_jac``) that :meth:`stable` reads.
        ``m[0]`` is ``m0`` itself (not a copy): it must not change before
        :meth:`gradient` (which reads it) has run.

        Args:
            m0 (Field3D): the initial momentum (physical units) on the shooter's grid.
            v0 (Field3D, optional): K m0 where the caller knows it (an L-BFGS trial's,
                by linearity: :meth:`LBFGSDescent.trial_velocity`), used instead of
                applying K; it may be ``v0_out`` itself. Default None: K m0 computed.
        """
        with self._borrow(('t1', 'w'), ('i2', 'i3')):
            if self.pooled:
                self.v[0] = self.t1
            try:
                self._shoot(m0, v0)
            finally:
                if self.pooled:
                    self.v[0] = None

    def _shoot(self, m0, v0=None):
        T, dt = self.T, 1.0 / self.T
        # Euler with one inverse iteration: one gather each for g and ginv (below)
        one_gather = self.one_gather
        self.m[0] = m0
        if v0 is None:
            self.K.applyInverseOperator(self.v[0], m0)
        else:
            ca.Copy(self.v[0], v0)               # the caller's K m0 (a copy instead of a K)
        self.e_reg = 0.5 * ca.Dot(m0, self.v[0]) * self.vv     # E_reg = 1/2 <m0, K m0>
        self.v0_of = None
        if self.v0_out is not None:
            if self.v0_out is not v0:
                ca.Copy(self.v0_out, self.v[0])
            self.v0_of = m0
        self.cfl = 0.0
        for n in range(T):
            g, ginv, v = self.g[n], self.ginv[n], self.v[n] if self.v[n] is not None else self.t1
            self.cfl = max(self.cfl, dt * self._dv_max(v))
            if not self.cfl <= 1.0:
                # unstable already: the rest of the path is meaningless
                # (and may overflow); the caller refines or rejects it
                for k in range(n + 1, T + 1):
                    for dst, src in ((self.g[k], g), (self.ginv[k], ginv)):
                        if src is None:
                            ca.SetToIdentity(dst)
                        else:
                            ca.Copy(dst, src)
                    if self.v[k] is not None:
                        ca.Copy(self.v[k], v)
                    if self.m[k] is not None:
                        ca.Copy(self.m[k], self.m[n])
                self.min_jac = float('nan')
                return
            gn, ginvn = self.g[n + 1], self.ginv[n + 1]
            if g is None:
                # from the (implicit) identity: g_1 = Id + dt v_0, ginv_1 = Id - dt v_0
                # (voxel units; what the gathers below give at the identity)
                ca.SetToIdentity(gn)
                ca.Add_MulC_I(gn, v, dt / self.s_iso)
                ca.SetToIdentity(ginvn)
                ca.Add_MulC_I(ginvn, v, -dt / self.s_iso)
            elif one_gather:
                # g_{n+1} = g_n + dt v_n o g_n, and its inverse's first
                # fixed-point iterate ginv_n o (Id - w o ginv_n) with
                # w o ginv_n = dt v_n o (g_n o ginv_n) = dt v_n: one gather each
                # (UpdateInverse would sample w at ginv_n, adding the
                # interpolation error of g_n o ginv_n)
                ca.ComposeVH(gn, v, g, dt, ca.BACKGROUND_STRATEGY_PARTIAL_ZERO)
                ca.ComposeHVInv(ginvn, ginv, v, dt, ca.BACKGROUND_STRATEGY_PARTIAL_ID)
            elif self.integrator == 'euler':
                self._lagrangian(self.w, v, g, dt)
            else:
                # RK4 on dg/dt = v_t o g; each stage's inverse by UpdateInverse,
                # its velocity K CoAd(stage inverse, m0). The n+1 slots hold
                # the stage state until the step is taken.
                acc, kk, kraw, gs = self.w, self.rk_kk, self.rk_raw, self.rk_g
                gis = ginvn
                vs = self.v[n + 1] if self.v[n + 1] is not None else self.t2   # (lean: scratch)
                ms = self.m[n + 1] if self.m[n + 1] is not None else self.mscr
                self._lagrangian(acc, v, g, dt / 6.0)            # dt/6 k1
                self._lagrangian(kk, v, g, 0.5 * dt)             # dt/2 k1
                for wgt, nxt in ((2.0, 0.5), (2.0, 1.0), (1.0, None)):
                    ca.Add(gs, g, kk)
                    ca.UpdateInverse(gis, self.t3, ginv, kk, self.ninv)
                    self._velocity(vs, ms, gis, m0)
                    self._lagrangian(kraw, vs, gs, 1.0)          # k_i
                    ca.Add_MulC_I(acc, kraw, wgt * dt / 6.0)
                    if nxt is not None:
                        ca.Copy(kk, kraw)
                        ca.MulC_I(kk, nxt * dt)
            if not one_gather:
                ca.Add(gn, g, self.w)
                ca.UpdateInverse(ginvn, self.t3, ginv, self.w, self.ninv)
            if n + 1 < T or self.endpoint:
                # (pooled: v_{n+1} replaces v_n in t1, which the step has used)
                self._velocity(self.v[n + 1] if self.v[n + 1] is not None else self.t1,
                               self.m[n + 1] if self.m[n + 1] is not None else self.mscr, ginvn, m0)
        if self.endpoint:
            self.cfl = max(self.cfl, dt * self._dv_max(self.v[T]))
        self.min_jac = self._min_jac()

    def energy(self, m0, I0, I1, deformed):
        """(E_img, E_reg) after shoot(m0); ``deformed`` = I0 o phi_1^-1.
        E_img = E_metric(I1, deformed) / (2 sigma^2) (SSD: the sum of squares
        times the voxel volume); the metric's force is kept for gradient().

        Args:
            m0 (Field3D): the initial momentum (physical units) on the shooter's grid.
            I0 (Image3D): the moving image (of the scale).
            I1 (Image3D): the fixed image (of the scale).
            deformed (Image3D): output of energy(), I0 o phi_1^-1 (input of gradient()).

        Returns:
            tuple: (E_img, E_reg), floats.
        """
        ca.ApplyH(deformed, I0, self.ginv[self.T])
        e_img = 0.5 * self.metric.evaluate(I1, deformed, self.i1) / (self.sigma ** 2)
        self._force_of = deformed
        if self.v[0] is not None:
            e_reg = 0.5 * ca.Dot(m0, self.v[0]) * self.vv
        else:
            e_reg = self.e_reg               # (pooled: the shoot's, of the same m0)
        return e_img, e_reg

    # ---- backward -----------------------------------------------------------
    def _image_force(self, out, n, I0, Ihat1):
        """out = I_hat(t_n) grad I(t_n): I_hat(1) pushed through phi_n o phi_1^-1
        (ComposeHH, Splat), I(t_n) = I0 o phi_n^-1 (ApplyH, Gradient)."""
        T = self.T
        if n == T:
            ca.Gradient(out, self.i_def)                 # (no copies of the two images)
            ca.Mul_I(out, Ihat1)
            return
        if self.g[n] is None:
            # t = 0 with the implicit identity: phi_0 o phi_1^-1 = phi_1^-1, I(0) = I0
            ca.Splat(self.i2, self.ginv[T], Ihat1, False)
            ca.Gradient(out, I0)
        else:
            ca.ComposeHH(self.w, self.g[n], self.ginv[T])
            ca.Splat(self.i2, self.w, Ihat1, False)
            ca.ApplyH(self.i3, I0, self.ginv[n])
            ca.Gradient(out, self.i3)
        ca.Mul_I(out, self.i2)

    def _adjoint_rhs(self, out, F, mh, k, tmp, with_ad):
        """out = K(F - ad*_mh m_k) + ad_{v_k} mh (F is kept)."""
        if with_ad:
            self.adstar(tmp, mh, self.momentum(self.mscr, k, self.m[0]))
            ca.Sub(out, F, tmp)
        else:
            ca.Copy(out, F)
        self.K.applyInverseOperator(out)
        if with_ad:
            self.ad(tmp, self.v[k], mh)
            ca.Add_I(out, tmp)

    def gradient(self, I0, deformed, I1, out, precondition=True, scratch=None):
        """out = L m_hat(0) (after shoot and energy; the descent direction is
        m0 - out), or m_hat(0) itself with precondition=False (the L2 gradient
        of E is then K m0 - m_hat(0), per unit voxel volume).

        Args:
            I0 (Image3D): the moving image (of the scale).
            deformed (Image3D): output of energy(), I0 o phi_1^-1 (input of gradient()).
            I1 (Image3D): the fixed image (of the scale).
            out (Field3D): output, on the shooter's grid.
            precondition (bool): return L m_hat(0) (True, default) or m_hat(0).
            scratch (Field3D, optional): a field the adjoint may overwrite (the
                descent's stale momentum); default None: the shooter's own
                (allocated at the first call where a lean shooter has none).
        """
        with self._borrow(('t1', 't2', 'w'), ('i2', 'i3')):
            return self._gradient(I0, deformed, I1, out, precondition, scratch)

    def _gradient(self, I0, deformed, I1, out, precondition, scratch):
        T, dt = self.T, 1.0 / self.T
        if scratch is None:
            if self.t3 is None:
                self.t3 = self._F()
            scratch = self.t3
        # I_hat(1) = -dE_img/dI(1) / voxelVol = force / sigma^2 (SSD: -(I(1) - I1)/sigma^2),
        # the metric's force of the last energy() on this deformed image
        Ihat1 = self.i1
        if self._force_of is not deformed:
            self.metric.evaluate(I1, deformed, Ihat1)
        self._force_of = None                # consumed: scaled in place below
        ca.MulC_I(Ihat1, 1.0 / self.sigma ** 2)
        self.i_def = deformed
        mhat, tmp, force, prev = out, self.t1, self.t2, scratch
        ca.SetToZero(mhat)
        self._image_force(prev, T, I0, Ihat1)                 # F(1) = (I_hat grad I)(1)
        if self.adjoint == 'heun':
            # Heun (second order) backward from t = 1:
            #   f(t, mh) = K(F(t) - ad*_mh m(t)) + ad_v(t) mh
            a, pred = self.hb_a, self.hb_p
            for n in range(T - 1, -1, -1):
                self._image_force(force, n, I0, Ihat1)        # F(t_n)
                self._adjoint_rhs(a, prev, mhat, n + 1, tmp, n + 1 < T)
                ca.Copy(pred, mhat)
                ca.Add_MulC_I(pred, a, -dt)                   # predictor at t_n
                self._adjoint_rhs(tmp, force, pred, n, self.w, True)
                ca.Add_I(a, tmp)
                ca.Add_MulC_I(mhat, a, -0.5 * dt)             # m_hat(t_n)
                prev, force = force, prev
        else:
            # explicit: the image force by the trapezoid rule, the ad terms
            # (zero at t = 1) at the later node
            for n in range(T - 1, -1, -1):
                self._image_force(force, n, I0, Ihat1)        # F(t_n)
                ca.AddMulC_I(prev, force, 0.5)                # trapezoid of the force
                if n < T - 1:                                 # ad*_{m_hat} m at t_{n+1}
                    mk = self.momentum(self.mscr, n + 1, self.m[0])
                    if self.iso:                              # (the unit scale fused)
                        ca.CoAdInf(tmp, mhat, mk)
                        ca.Add_MulC_I(prev, tmp, -1.0 / self.s_iso)
                    else:
                        self.adstar(tmp, mhat, mk)
                        ca.Sub_I(prev, tmp)
                self.K.applyInverseOperator(prev)             # K(F - ad* m)
                if n < T - 1:                                 # ad_v m_hat at t_{n+1}
                    vk = self.v[n + 1]
                    if vk is None:
                        # pooled: v_{n+1} = K m_{n+1}, in place of m_{n+1} (in mscr)
                        vk = mk
                        self.K.applyInverseOperator(vk)
                    if self.iso:
                        ca.AdInf(tmp, vk, mhat)
                        ca.Add_MulC_I(prev, tmp, 1.0 / self.s_iso)
                    else:
                        self.ad(tmp, vk, mhat)
                        ca.Add_I(prev, tmp)
                ca.Add_MulC_I(mhat, prev, -dt)                # m_hat(t_n)
                prev, force = force, prev
        if precondition:
            self.K.applyOperator(mhat)                        # L m_hat(0)
        return mhat


def search_gain(sh, m0, I0, I1, deformed, max_cfl, step=0.02, lo=0.8, hi=1.25, most=8):
    """Scales ``m0`` in place by the factor s that minimises the image term
    alone, ``E_img(s m0)`` (the geodesic from ``s m0`` is the one from ``m0``
    run for time s), and returns s. Tikhonov-type regularisation shrinks the
    recovered displacement towards zero by a roughly constant fraction
    (MNI 2 mm pairs, seed 7: the displacement found is 0.96 of the true one,
    its error's component along the true displacement -0.13 mm of 0.39 on the
    8 mm pair, -0.54 of 0.97 on the 24 mm pair); one degree of freedom fitted
    to the data undoes that without admitting noise. The search is
    :func:`~PyCA.Apps._common.gain_search` (an unstable or folded shot counts
    as a rise). ``sh`` ends with some shot: the caller shoots ``m0`` again.

    Args:
        sh (Shooter): the last level's shooter (its grid is ``m0``'s).
        m0 (Field3D): the final momentum, scaled in place.
        I0 (Image3D): the moving image (on the grid).
        I1 (Image3D): the fixed image.
        deformed (Image3D): scratch (the deformed image of each shot).
        max_cfl (float): the stability bound of :meth:`Shooter.stable`.
        step (float): the search's step in s.
        lo (float): the smallest s.
        hi (float): the largest s.
        most (int): the most shots.

    Returns:
        float: the factor s applied to ``m0``.
    """
    cur = [1.0]                              # the factor m0 carries now

    def E(x):
        ca.MulC_I(m0, x / cur[0])
        cur[0] = x
        sh.shoot(m0)
        if not sh.stable(max_cfl):
            return math.inf
        return sh.energy(m0, I0, I1, deformed)[0]

    best = gain_search(E, step, lo, hi, most)
    ca.MulC_I(m0, best / cur[0])
    return best


def velocity_change(kernel, direction, scratch, grid):
    """The largest velocity change of a unit step along ``direction``:
    ``max |K direction|`` in voxels of ``grid`` (``scratch`` receives K direction).

    Args:
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K.
        direction (Field3D): the momentum direction.
        scratch (Field3D): overwritten.
        grid (GridInfo): the scale's grid.

    Returns:
        float.
    """
    kernel.applyInverseOperator(scratch, direction)
    return ca.LInf(scratch) / min_spacing(grid)


class KernelPower:
    """``applyOperator`` / ``applyInverseOperator`` of a FluidKernelFFT at another
    power of L (``setLPow`` for the call, restored after; optionally another
    spectral tolerance): L^q and K^(q/p) without a second kernel's buffers.

    Args:
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K (power p).
        lpow (int): the power of L for these calls.
        tol (float, optional): the spectral tolerance for these calls; default None: K's.
    """

    def __init__(self, kernel, lpow, tol=None):
        self.kernel, self.lpow, self.tol = kernel, int(lpow), tol

    @contextlib.contextmanager
    def _power(self):
        k = self.kernel
        p0, t0, b0 = k.getLPow(), k.getSpectralTolerance(), k.getBandedOperator()
        k.setLPow(self.lpow)
        if self.tol is not None:
            k.setSpectralTolerance(self.tol)
            k.setBandedOperator(True)
        try:
            yield k
        finally:
            k.setLPow(p0)
            k.setSpectralTolerance(t0)
            k.setBandedOperator(b0)

    def applyOperator(self, *args):
        """L^lpow: the kernel's ``applyOperator`` at this power.

        Args:
            *args: the kernel's ``applyOperator`` arguments (``(out, in)``, or ``(f,)`` in place).
        """
        with self._power() as k:
            k.applyOperator(*args)

    def applyInverseOperator(self, *args):
        """K at power lpow: the kernel's ``applyInverseOperator`` at this power.

        Args:
            *args: the kernel's ``applyInverseOperator`` arguments (``(out, in)``, or ``(f,)`` in place).
        """
        with self._power() as k:
            k.applyInverseOperator(*args)


def descent_metric(kernel, cfg):
    """The metric of the descent on m0 and the smoothing into it: with
    q = min(lpow, descent_lpow) below lpow = p, ``(KernelPower(kernel, q),
    KernelPower(kernel, p - q))`` -- the gradient in the metric of L^q is
    L^(q - p) (m0 - L^p m_hat(0)) -- else ``(kernel, None)`` (the metric of K itself).
    Both keep K's band (the modes K keeps at its spectral tolerance; every mode where it
    has none): a mode K drops moves no velocity, so the descent puts no momentum there
    (where it would act only through the transport's interpolation), and their
    transforms are pruned as K's are.

    Args:
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K.
        cfg (dict): the LDDMM configuration (``lpow``, ``descent_lpow``).

    Returns:
        tuple: (metric, smooth); smooth None where q = p.
    """
    p = int(cfg.get('lpow', 1))
    q = min(p, int(cfg.get('descent_lpow', p)))
    if 0 < q < p:
        # K's band: a mode K^(r/p) drops at tol^(r/p) is one K drops at tol (spectralBand's
        # test, r log(1 + alpha lambda / gamma) >= -log(tol^(r/p)), is K's divided by p / r)
        t = float(kernel.getSpectralTolerance())

        def power(r):
            return KernelPower(kernel, r, tol=t ** (r / p) if t > 0 else 0.0)
        return power(q), power(p - q)
    return kernel, None


def automatic_step(kernel, direction, scratch, grid, cfg):
    """The automatic first step along ``direction``: its velocity change is at
    most ``init_disp`` voxels, and the step at most ``max_step``.

    Args:
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K.
        direction (Field3D): the momentum direction.
        scratch (Field3D): overwritten.
        grid (GridInfo): the scale's grid.
        cfg (dict): the LDDMM configuration (``init_disp``, ``max_step``).

    Returns:
        float.
    """
    vmax = velocity_change(kernel, direction, scratch, grid)
    step = cfg['init_disp'] / vmax if vmax > 0 else cfg['max_step']
    return min(step, cfg['max_step'])


class Descent:
    """The gradient descent on the initial momentum at one scale: a
    preconditioned gradient step ``m0 <- m0 - step (m0 - L m_hat(0))`` with
    heavy-ball momentum and step control, the state that
    :meth:`LDDMM.run` drives.

    One trial momentum ``m0`` at a time is shot and judged
    (:meth:`judge`): a trial that lowers the energy is accepted (and the step
    grows by ``step_growth`` up to ``max_step``); one that raises it is
    retried from the accepted momentum ``prev_m0`` -- along the plain
    preconditioned gradient with half the step when the direction held a
    heavy-ball term (which need not descend), else with half the step, until
    the step falls below ``min_step`` of the scale's first one, when the scale
    stops at the best momentum. Four fields (three without momentum): ``m0``
    and ``prev_m0`` (swapped, not copied), ``grad`` (the preconditioned
    gradient, then in place the plain direction ``m0 - L m_hat(0)``) and
    ``prev_dir`` (the direction taken, updated in place to ``plain + beta
    prev_dir``: the last direction is the heavy-ball term; without momentum it
    is ``grad`` itself).

    Args:
        m0 (Field3D): the scale's starting momentum (the trial; swapped, not copied).
        grid (GridInfo): the scale's grid.
        mType (MemoryType): where it computes.
        cfg (dict): the LDDMM configuration (``step``, ``init_disp``, ``min_step``,
            ``step_growth``, ``max_step``, ``momentum``).
        smooth (KernelPower, optional): L^(q - p), applied to each gradient to run the
            descent in the metric of L^q (:func:`descent_metric`); default None: K's metric.
    """
    ACCEPT, RETRY, STOP = 'accept', 'retry', 'stop'

    def __init__(self, m0, grid, mType, cfg, smooth=None):
        self.cfg = cfg
        self.smooth = smooth               # L^(q - p): the gradient in the metric of L^q (None: q = p)
        self.m0 = m0
        self.grad = ca.Field3D(grid, mType)
        self.prev_m0 = ca.Field3D(grid, mType)
        self.beta = cfg['momentum']
        self.prev_dir = ca.Field3D(grid, mType) if self.beta > 0 else self.grad
        self.have_mom = False
        self.mom_dir = False               # prev_dir holds a momentum term
        self.step = cfg['step']
        self.step_dir = self.step          # the step first taken along prev_dir
        self.first_step = self.step if self.step > 0 else None
        self.best = None                   # the energy of the accepted momentum

    def _trial(self):
        ca.Add_MulC(self.m0, self.prev_m0, self.prev_dir, -self.step)

    def trial_velocity(self, sh):
        """K m0 of the trial where the descent knows it: never here (the heavy-ball
        direction's K is not at hand), so the shooter applies K (as
        :meth:`LBFGSDescent.trial_velocity` does where it does not know it).

        Args:
            sh (Shooter): the shooter (unused).

        Returns:
            None.
        """
        return None

    def judge(self, e):
        """What to do after a trial of energy ``e`` (inf for an unusable shot).

        Args:
            e (float): the trial's energy.

        Returns:
            str: ``ACCEPT`` (the trial is the new accepted momentum), ``RETRY`` (a
            new trial is in ``m0``) or ``STOP`` (``m0`` is the best momentum again;
            the scale is done).
        """
        if self.best is not None and e > self.best:
            if self.mom_dir:
                # the heavy-ball direction overshot: restart the momentum, along
                # the plain preconditioned gradient with half the step
                self.mom_dir = self.have_mom = False
                ca.Copy(self.prev_dir, self.grad)          # the plain direction
                self.step = 0.5 * self.step_dir
                self._trial()
                return self.RETRY
            if self.step > self.cfg['min_step'] * self.first_step:
                # the step overshot: go back and take half of it
                self.step *= 0.5
                self.have_mom = False
                self._trial()
                return self.RETRY
            # no step along this direction lowers the energy any more
            self.m0, self.prev_m0 = self.prev_m0, self.m0
            return self.STOP
        if self.best is not None:
            self.step = min(self.step * self.cfg['step_growth'], self.cfg['max_step'])
        self.best = e
        return self.ACCEPT

    def advance(self, sh, I0, deformed, I1, kernel, grid):
        """The next trial from the accepted ``m0``: its preconditioned gradient
        (``sh`` shot it and evaluated its energy), the heavy-ball term, the
        automatic first step, and ``m0 = prev_m0 - step * direction``.

        Args:
            sh (Shooter): the shooter that shot the accepted momentum.
            I0 (Image3D): the moving image of the scale.
            deformed (Image3D): I0 deformed by the accepted momentum (``sh.energy``'s).
            I1 (Image3D): the fixed image of the scale.
            kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K.
            grid (GridInfo): the scale's grid.
        """
        # L^p m_hat(0); prev_m0 (the momentum accepted before m0) is free: the adjoint's scratch
        sh.gradient(I0, deformed, I1, self.grad, scratch=self.prev_m0)
        ca.Sub(self.grad, self.m0, self.grad)                   # plain direction m0 - L^p m_hat
        if self.smooth is not None:
            self.smooth.applyInverseOperator(self.grad)         # L^(q - p) (m0 - L^p m_hat)
        self.m0, self.prev_m0 = self.prev_m0, self.m0           # prev_m0: the accepted momentum
        self.mom_dir = False
        if self.prev_dir is not self.grad:
            if self.have_mom:
                # plain + beta * (the last direction), in place
                ca.Add_MulC(self.prev_dir, self.grad, self.prev_dir, self.beta)
                self.mom_dir = True
            else:
                ca.Copy(self.prev_dir, self.grad)
            self.have_mom = True
        if self.step <= 0:
            # automatic first step (scratch: the stale momentum, overwritten below)
            self.step = self.first_step = automatic_step(kernel, self.prev_dir, self.m0, grid, self.cfg)
        self.step_dir = self.step
        self._trial()


class LBFGSDescent:
    """L-BFGS on the initial momentum at one scale, in the metric of the
    momenta (``<a, b>_K = <a, K b>``, in which ``m0 - L m_hat(0)`` is the
    gradient): the drop-in alternative to :class:`Descent` for the levels
    whose ``lbfgs`` history is above zero.

    Written in the L2 form: the L2 gradient ``G = K m0 - m_hat(0)`` (the
    adjoint's m_hat without L: ``G = K^q g`` for ``g`` the gradient in the
    metric of L^q, :func:`descent_metric`), pairs ``s = m0_new - m0_old`` and
    ``Y = G_new - G_old`` (``= K^q y``), the two-loop recursion on ``G`` with
    ``H0 = gamma L^q`` (``gamma = <s, Y> / <Y, y>``, ``y = L^q Y``; Nocedal &
    Wright eq. 7.20 in this metric). Three FFT operators per iteration besides
    the shooting's and the adjoint's: ``K m0``, ``L^q Y`` and ``L^q q`` (the
    earlier form, ``g`` first, took five: ``L^p m_hat``, its smoothing,
    ``K^q y``, ``K^q g``, ``L^q q``), and the velocity change ``K q``; ``K m0``
    is the shooter's own v_0 where the caller lends it the descent's ``v0``
    field (``Shooter.v0_out``, as :meth:`LDDMM.run` does): two operators then.
    The shooter's own K m0 is then spared too: a trial ``prev_m0 - step q``
    has ``K m0 = K prev_m0 - step K q`` (:meth:`trial_velocity`; ``K q`` kept in
    ``G_new`` from the step bound until the next gradient).
    ``2 hist + 6`` fields.
    The first iteration and every restart take the preconditioned gradient
    with the automatic first step (``init_disp`` voxels), later ones the unit
    step (the quasi-Newton step) bounded to ``max_disp`` voxels of velocity
    change; a trial that raises the energy halves the step, and where the
    step falls below ``min_step`` of its first value the history is dropped
    and the gradient retried once before the scale stops. A pair whose
    curvature ``<s, Y>`` is not positive is not stored. The history is
    dropped where the shooting takes more time steps (a new discretisation,
    :meth:`restart`).

    Args:
        m0 (Field3D): the scale's starting momentum (swapped, not copied).
        grid (GridInfo): the scale's grid.
        mType (MemoryType): where it computes.
        cfg (dict): the LDDMM configuration (``init_disp``, ``min_step``, ``max_step``).
        kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K.
        hist (int): the most stored pairs.
        max_disp (float): the largest velocity change of a quasi-Newton step, in voxels.
        metric (KernelPower, optional): K and L of the descent's metric (L^q); default
            None: ``kernel`` (K's own metric). ``kernel`` still measures the velocity change.
            (No smoothing of the gradient is needed: G is the same in every metric.)
    """
    ACCEPT, RETRY, STOP = 'accept', 'retry', 'stop'

    def __init__(self, m0, grid, mType, cfg, kernel, hist, max_disp=1.0, metric=None):
        self.cfg, self.grid, self.mType, self.kernel = cfg, grid, mType, kernel
        self.mk = kernel if metric is None else metric   # the descent's metric (K, L at power q)
        self.hist, self.max_disp = int(hist), float(max_disp)
        self.m0 = m0
        self.prev_m0 = ca.Field3D(grid, mType)
        self.G = ca.Field3D(grid, mType)         # the accepted momentum's L2 gradient K m0 - m_hat(0)
        self.G_new = ca.Field3D(grid, mType)     # the next accepted one's (swapped in)
        self.v0 = ca.Field3D(grid, mType)        # K m0 of the last shot (lent to the shooter)
        self.q = ca.Field3D(grid, mType)         # the direction
        self.pairs = []                          # [(s, Y, rho)], oldest first
        self.spare = []                          # fields of dropped pairs
        self.have_old = False                    # G and prev_m0 belong to an accepted momentum
        self.have_mom = False                    # (Descent's flag, for the level's start shrink)
        self.best = None
        self.step = self.first_step = None
        self.gradient_dir = True                 # the direction is the plain gradient
        self.gamma = 1.0
        # K q of the direction (in G_new, free from the swap in advance until the next
        # gradient), and the step s of the trial whose K m0 = K prev_m0 - s K q v0 holds
        self.Kq = None
        self.v0_step = None

    def _field(self):
        return self.spare.pop() if self.spare else ca.Field3D(self.grid, self.mType)

    def trial_velocity(self, sh):
        """K m0 of the trial ``m0 = prev_m0 - step q`` without a K: ``v0`` held K of the
        momentum ``sh`` shot last, the accepted ``prev_m0`` (``K prev_m0``) or an earlier
        trial along the same ``q`` (``K prev_m0 - s K q``), and ``K q`` is kept from the
        step bound, so ``v0 += (s - step) K q`` (one pass instead of an FFT operator).

        Args:
            sh (Shooter): the shooter, lent ``v0`` as its ``v0_out``.

        Returns:
            Field3D or None: ``v0`` holding K m0, or None where it is not known (the
            first trial of a level, a new direction after a failed one).
        """
        if self.Kq is None or sh.v0_out is not self.v0:
            return None
        if sh.v0_of is self.prev_m0:
            s = 0.0                              # K of the accepted momentum
        elif sh.v0_of is self.m0 and self.v0_step is not None:
            s = self.v0_step                     # K of an earlier trial along q
        else:
            return None
        if s != self.step:
            ca.Add_MulC_I(self.v0, self.Kq, s - self.step)
        self.v0_step = self.step
        return self.v0

    def restart(self):
        """Drops the history (the energy changed: more time steps)."""
        for s, Y, _ in self.pairs:
            self.spare += [s, Y]
        self.pairs = []
        self.have_old = False

    def _trial(self):
        ca.Add_MulC(self.m0, self.prev_m0, self.q, -self.step)

    def judge(self, e):
        """What to do after a trial of energy ``e`` (as :meth:`Descent.judge`).

        Args:
            e (float): the trial's energy (inf for an unusable shot).

        Returns:
            str: ``ACCEPT``, ``RETRY`` (a new trial is in ``m0``) or ``STOP``.
        """
        if self.best is not None and not e < self.best:
            if self.step > self.cfg['min_step'] * self.first_step:
                self.step *= 0.5
                self._trial()
                return self.RETRY
            if not self.gradient_dir:
                # the quasi-Newton direction failed: drop the history, retry the gradient
                self.restart()
                self._gradient_direction()
                self._trial()
                return self.RETRY
            self.m0, self.prev_m0 = self.prev_m0, self.m0
            self.Kq = None
            return self.STOP
        self.best = e
        return self.ACCEPT

    def _gradient_direction(self):
        """q = g = L^q G (the gradient in the descent's metric) with the automatic first
        step (K q into G_new, free after advance's swap)."""
        self.mk.applyOperator(self.q, self.G)
        self.gradient_dir = True
        self.Kq, self.v0_step = self.G_new, None  # (v0: K of a trial along the old q)
        self.step = self.first_step = automatic_step(self.kernel, self.q, self.Kq, self.grid, self.cfg)

    def advance(self, sh, I0, deformed, I1, kernel, grid):
        """The next trial from the accepted ``m0``: its preconditioned gradient,
        the new pair, the two-loop direction and its step (as :meth:`Descent.advance`).

        Args:
            sh (Shooter): the shooter that shot the accepted momentum.
            I0 (Image3D): the moving image of the scale.
            deformed (Image3D): I0 deformed by the accepted momentum.
            I1 (Image3D): the fixed image of the scale.
            kernel (FluidKernelFFTCPU or FluidKernelFFTGPU): the scale's K.
            grid (GridInfo): the scale's grid.
        """
        s_new = None
        self.Kq = self.v0_step = None            # G_new gets the gradient
        if self.have_old and self.hist > 0:
            if len(self.pairs) >= self.hist:                # the oldest pair makes room
                s, Y, _ = self.pairs.pop(0)
                self.spare += [s, Y]
            s_new = self._field()
            ca.Sub(s_new, self.m0, self.prev_m0)            # s = m0 - m0_old
        # the L2 gradient G = K m0 - m_hat(0); prev_m0 (the old accepted momentum) is
        # scratch from here (K^q L^(q-p) (m0 - L^p m_hat) = K m0 - m_hat, K's band: the
        # modes outside it are dropped by L^q below, and meet only banded fields in the
        # dot products)
        G = self.G_new
        sh.gradient(I0, deformed, I1, G, precondition=False, scratch=self.prev_m0)
        scr = self.prev_m0
        if sh.v0_of is self.m0 and sh.v0_out is self.v0:
            ca.Sub(G, self.v0, G)                           # K m0 of the shoot that judged m0
        else:
            self.kernel.applyInverseOperator(scr, self.m0)  # K m0
            ca.Sub(G, scr, G)
        if s_new is not None:
            Y = self._field()
            ca.Sub(Y, G, self.G)                            # Y = K^q y
            self.mk.applyOperator(scr, Y)                   # y = L^q Y
            sY, yY = ca.Dot(s_new, Y), ca.Dot(scr, Y)
            if sY > 0 and yY > 0:
                self.pairs.append((s_new, Y, 1.0 / sY))
                self.gamma = sY / yY
            else:
                self.spare += [s_new, Y]
        self.G, self.G_new = G, self.G                      # G: the accepted momentum's
        self.have_old = True
        if not self.pairs:
            self.m0, self.prev_m0 = self.prev_m0, self.m0   # prev_m0: the accepted momentum
            self._gradient_direction()
            self._trial()
            return
        # two-loop recursion on the L2 gradient G
        q = self.q
        ca.Copy(q, G)
        alphas = []
        for s, Y, rho in reversed(self.pairs):
            a = rho * ca.Dot(s, q)
            ca.Add_MulC_I(q, Y, -a)
            alphas.append(a)
        self.mk.applyOperator(q)
        ca.MulC_I(q, self.gamma)                            # H0 = gamma L^q
        for (s, Y, rho), a in zip(self.pairs, reversed(alphas)):
            b = rho * ca.Dot(Y, q)
            ca.Add_MulC_I(q, s, a - b)
        self.m0, self.prev_m0 = self.prev_m0, self.m0       # prev_m0: the accepted momentum
        self.gradient_dir = False
        # the quasi-Newton (unit) step, bounded to max_disp voxels of velocity change
        # (K q into G_new, kept for the trials' K m0: trial_velocity)
        self.Kq = self.G_new
        vmax = velocity_change(self.kernel, q, self.Kq, self.grid)
        self.step = self.first_step = 1.0 if vmax <= self.max_disp else self.max_disp / vmax
        self._trial()


def converged(energies, tol, since=0):
    """The scale's last 3 iterations gained less than ``tol`` of what the
    scale has gained so far (offset-free: MI's energy is negative and large).
    The last 4 energies must all come from ``since`` on: where the shooting
    took more time steps the energy is re-evaluated with them and may rise
    (a finer discretisation, not a step back), which is no convergence.

    Args:
        energies (list of float): the scale's accepted energies, in order.
        tol (float): the fraction (0: never converged).
        since (int): the index of the first energy with the current time steps; default 0.

    Returns:
        bool.
    """
    return (tol > 0 and len(energies) - since > 3
            and energies[-4] - energies[-1] < tol * (energies[0] - energies[-1]))


class LDDMM(Method):
    """LDDMM's per-level step (module docstring) for the multiscale driver:
    a :class:`Descent` on the initial momentum, each trial shot by a
    :class:`Shooter` whose time steps are refined until the path is stable.

    Args:
        cfg (dict): the merged configuration.
        mType (MemoryType): where it computes.
        metric (Metric): the similarity metric.
        grid0 (GridInfo): the full-resolution grid.
        init_momentum (Field3D, optional): warm start (the m0 to start from).
    """
    name, label, schema, pad_fields = 'lddmm', 'LDDMM', SCHEMA, ('hinv', 'momentum', 'velocity')

    def __init__(self, cfg, mType, metric, grid0, init_momentum=None):
        super().__init__(cfg, mType, metric, grid0)
        # the sigma it uses (config['sigma'] of the result: 0 resolved for the metric)
        self.cfg = dict(self.cfg, sigma=resolve_sigma(self.cfg['sigma'], metric))
        self.gauss = cfg['smooth_scales']
        self.init_momentum = init_momentum
        self.max_cfl = float(cfg['max_cfl'])
        self.max_nsteps = max(int(cfg['max_nsteps']), int(cfg['nsteps']))
        self.nsteps_used = []
        self.deformed = None                 # the last level's deformed-image scratch
        self.gain_used = 1.0                 # the final gain (search_gain)
        self.relax_used = 1.0                # the finest level's sigma factor (relax_factor)
        self.disp_ratio = None               # D / l measured for it (disp_ratio)
        self.m0 = None
        self.last = None

    def warm(self):
        """bool: ``init_momentum`` was given (no padding, a single level)."""
        return self.init_momentum is not None

    def setup(self, facs):
        """Checks a warm start: a single full-resolution level, a momentum of the fixed grid's size.

        Args:
            facs (list of int): the levels' factors.
        """
        check_warm_field('lddmm_register', 'init_momentum', self.init_momentum, self.grid0, facs,
                         self.cfg['scales'])

    def start(self, level):
        """m0 = 0 on the first level, or the warm start.

        Args:
            level (Level): the first level.
        """
        self.m0 = self.field(level.grid)
        if self.init_momentum is not None:
            ca.Copy(self.m0, self.init_momentum)
        else:
            ca.SetToZero(self.m0)

    def upsample(self, level, resampler):
        """m0 up-sampled onto the new level (``updateVField``).

        Args:
            level (Level): the new level.
            resampler (MultiscaleResamplerGauss or MultiscaleResampler): set to the new level.
        """
        resampler.updateVField(self.m0)      # up-sampled onto this scale's grid, in place

    def _shooter(self, grid, kernel, T, cfg):
        """The scale's Shooter with T time steps (no m_T, v_T: endpoint=False) and the
        level's configuration cfg (its sigma: :meth:`_relax`)."""
        return Shooter.from_config(grid, self.mType, kernel, cfg, self.metric, nsteps=T,
                                   endpoint=False, lean=True)

    def _relax(self, level, kernel):
        """The level's sigma factor (:func:`relax_factor`): measured on the finest level of
        a multiscale run from the momentum the coarser levels left (1 elsewhere, and for a
        warm start)."""
        if not (level.identity and level.index > 0 and self.cfg['large_disp'] > 0
                and self.init_momentum is None):
            return 1.0
        scratch, mag = self.field(level.grid), self.image(level.grid)
        self.disp_ratio = disp_ratio(self.m0, kernel, self.cfg, scratch, mag)
        return relax_factor(self.disp_ratio, self.cfg['large_disp'])

    def _refine(self, sh, m, grid, kernel):
        """sh shot m; while its path is unstable, more time steps (up to
        max_nsteps) and shoot again. Returns the shooter (maybe a new one)."""
        while not sh.stable(self.max_cfl) and sh.T < self.max_nsteps:
            c = sh.cfl if math.isfinite(sh.cfl) and sh.cfl > self.max_cfl else 2.0 * self.max_cfl
            T = min(self.max_nsteps, max(2 * sh.T, int(math.ceil(sh.T * c / self.max_cfl))))
            sh.set_steps(T)                  # the same shooter: one path in memory
            sh.shoot(m)
        return sh

    def _shoot_trial(self, sh, d, level, kernel, deformed):
        """Shoots the trial d.m0 stably; returns (shooter, E_img, E_reg, E) with E = inf for an
        unusable shot, and d.best re-evaluated where the time steps changed."""
        I0, I1 = level.moving, level.fixed
        sh.shoot(d.m0, d.trial_velocity(sh))
        T_before = sh.T
        sh = self._refine(sh, d.m0, level.grid, kernel)
        if d.best is None and not sh.stable(self.max_cfl):
            # the scale's start (the up-sampled momentum) cannot be shot
            # stably even with max_nsteps: shrink it towards zero
            for _ in range(30):
                ca.MulC_I(d.m0, 0.5)
                sh.shoot(d.m0)
                if sh.stable(self.max_cfl):
                    break
            d.have_mom = False
        e_img, e_reg = sh.energy(d.m0, I0, I1, deformed)
        e = e_img + e_reg
        if d.best is not None and sh.T != T_before:
            # finer time steps: the energy of the last accepted momentum
            # with them, so that the comparison is between equals
            sh.shoot(d.prev_m0)
            d.best = sum(sh.energy(d.prev_m0, I0, I1, deformed))
            sh.shoot(d.m0, d.trial_velocity(sh))
            e_img, e_reg = sh.energy(d.m0, I0, I1, deformed)
            e = e_img + e_reg
        if not (math.isfinite(e) and sh.stable(self.max_cfl)):
            e = math.inf             # a folded or unstable shot: a failed step
        return sh, e_img, e_reg, e

    def run(self, level, history):
        """The level's descent on m0 (:class:`Descent`), each trial shot stably; a level stops
        early when the step control finds no descent or the energy converges (``tol``).

        Args:
            level (Level): the level.
            history (History): where each accepted iteration's energy is recorded.
        """
        I0, I1, grid, nit = level.moving, level.fixed, level.grid, level.iters
        self.last = None                     # the previous level's path: released before this one's
        kernel = kernel_of(grid, self.mType, self.cfg)
        f = self._relax(level, kernel)
        cfg = self.cfg
        if f < 1.0:                          # a large deformation: a weaker prior, more iterations
            self.relax_used = f
            cfg = dict(self.cfg, sigma=self.cfg['sigma'] * f)
            more = int(math.ceil(nit / f)) - nit
            history.extend(more)
            nit += more
        self.metric.prepare(I1, I0)
        nsteps = max(self.cfg['nsteps'], self.nsteps_used[-1] if self.nsteps_used else 0)
        sh = self._shooter(grid, kernel, nsteps, cfg)
        deformed = self.deformed = ca.Image3D(grid, self.mType)   # (kept for the final gain)
        hist = lbfgs_pairs(level.values['lbfgs'], grid, self.cfg['lbfgs_max_mb'])
        metric, smooth = descent_metric(kernel, self.cfg)
        if hist > 0:
            d = LBFGSDescent(self.m0, grid, self.mType, self.cfg, kernel, hist,
                             self.cfg['lbfgs_max_disp'], metric=metric)
            sh.v0_out = d.v0                 # each shoot's K m0 kept for the gradient
        else:
            d = Descent(self.m0, grid, self.mType, self.cfg, smooth=smooth)
        accepted = []
        since = 0                            # the first accepted energy with the current time steps
        while len(accepted) < nit:
            T_before = sh.T
            sh, e_img, e_reg, e = self._shoot_trial(sh, d, level, kernel, deformed)
            if sh.T != T_before:
                since = len(accepted)        # energies of other time steps are not comparable
                if hist > 0:
                    d.restart()
            verdict = d.judge(e)
            if verdict == d.RETRY:
                continue
            if verdict == d.STOP:
                sh.shoot(d.m0)
                sh.energy(d.m0, I0, I1, deformed)
                history.skip(nit - len(accepted))
                break
            accepted.append(e)
            history.record(e, level.factor, e_img, e_reg)
            if len(accepted) == nit:
                break
            if converged(accepted, self.cfg['tol'], since):
                history.skip(nit - len(accepted))    # converged at this scale
                break
            d.advance(sh, I0, deformed, I1, kernel, grid)
        if nit == 0:
            sh.shoot(d.m0)
            sh = self._refine(sh, d.m0, grid, kernel)
            sh.energy(d.m0, I0, I1, deformed)
        self.m0 = d.m0
        sh.v0_out = sh.v0_of = None          # (the descent's K m0 field released with it)
        self.nsteps_used.append(sh.T)
        self.last = sh

    def result(self, fixed, moving):
        """phi_1^-1 (h), phi_1 (hinv), m0, v0 and the deformed moving image of the last shot;
        a RuntimeWarning where that geodesic is not resolved.

        Args:
            fixed (Image3D): the full-resolution fixed image.
            moving (Image3D): the full-resolution moving image.

        Returns:
            dict: ``deformed``, ``h``, ``hinv``, ``momentum``, ``velocity``, ``config`` (with
            ``nsteps_used``, the time steps of each level).
        """
        sh = self.last
        self.gain_used = 1.0
        if gain_wanted(self.cfg['gain'], self.metric) and sh.stable(self.max_cfl):
            # (an unresolved final geodesic is left as it is: the warning below)
            self.gain_used = search_gain(sh, self.m0, moving, fixed, self.deformed, self.max_cfl)
            sh.shoot(self.m0)
        self.deformed = None
        if not sh.stable(self.max_cfl):
            warnings.warn("lddmm_register: the final geodesic is not resolved (dt*max|Dv| = %.3g, "
                          "min det J = %.3g with %d time steps); raise max_nsteps"
                          % (sh.cfl, sh.min_jac, sh.T), RuntimeWarning)
        # the final deformation on the full-resolution grid: the path's last
        # fields themselves (the shooter is done), then the path released
        # before the outputs are allocated
        h, hinv, K = sh.ginv[sh.T], sh.g[sh.T], sh.K
        self.last = sh = None
        out = self.image()
        ca.ApplyH(out, moving, h)
        velocity = self.field()
        # hinv (phi_1, Lagrangian Euler) and h (phi_1^-1, Eulerian Euler) differ by O(dt):
        # 24 mm demo pair, 2 steps, h o hinv 1.6 mm from x in the brain; polished 0.02 mm
        # (2 iterations kept: the third candidate folded)
        polish_inverse(hinv, h, self.cfg['hinv_iters'], velocity)
        K.applyInverseOperator(velocity, self.m0)     # v_0 = K m0 (the shoot's own v_0 was scratch)
        return dict(deformed=out, h=h, hinv=hinv, momentum=self.m0, velocity=velocity,
                    config=dict(copy.deepcopy(self.cfg), nsteps_used=self.nsteps_used,
                               gain_used=self.gain_used, relax_used=self.relax_used,
                               disp_ratio=self.disp_ratio))


def lddmm_register(fixed, moving, config=None, quiet=False, init_momentum=None, **params):
    """Registers ``moving`` onto ``fixed`` by vector-momentum LDDMM geodesic
    shooting (module docstring). Returns a RegistrationResult with
    ``deformed`` (moving o phi_1^-1), ``h`` = phi_1^-1, ``hinv`` = phi_1,
    ``momentum`` = m0 (on the fixed grid, physical units) and ``velocity`` =
    K m0. Parameters: ``DEFAULTS``.

    Warm start (the atlas builder's): ``init_momentum`` (a Field3D on the
    fixed grid, physical units, any memory type; default None = zero) is the
    m0 the descent starts from; it needs a single full-resolution level
    (``scales=[1]``, ConfigError otherwise). It is copied, never modified.

    Args:
        fixed (Image3D): the fixed (reference) image; any memory type, 2-D (size z == 1) or 3-D.
        moving (Image3D): the moving image, on the fixed image's grid.
        config (dict or str, optional): parameters as a dict or the path of a YAML file; default
            None (``DEFAULTS``).
        quiet (bool): no progress bar; default False.
        init_momentum (Field3D, optional): warm start: the m0 to start from, on the fixed grid,
            physical units; default None = zero.
        **params: keyword overrides of any ``DEFAULTS`` key (applied after ``config``).

    Returns:
        RegistrationResult: with ``method='lddmm'``.

    Raises:
        TypeError: inputs that are not Image3Ds.
        ValueError: images on different grids, or an ``init_momentum`` of the wrong size.
        ConfigError: unknown or bad parameters.

    Example:
        ``r = lddmm_register(fixed, moving, scales=[2, 1], iters=[30, 10], quiet=True)``
    """
    return register_levels(LDDMM, lddmm_register, fixed, moving, config, quiet, params,
                           init_momentum=init_momentum)
