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
safeguard). ``max_step`` may be one value per level (default 0.5, 0.5 and
0.25 voxels: the finest level takes half steps).

Displacement smoothing. After every update the displacement ``h - x`` is
smoothed by a Gaussian of ``field_sigma`` voxels of the level (default 0.75;
truncated at 4 sigma; none along a one-voxel axis), as diffeomorphic demons
and PICSL Greedy (``-s 1.732vox 0.707vox``) do: the fluid kernel K smooths
each update, the Gaussian the accumulated field, an elastic-like regulariser
that keeps the deformation from chasing noise and interpolation differences
(measured on the demo's pairs: 0.73 -> 0.46 mm on the clean pair, 1.10 ->
0.44 mm rescanned, with the schedule below). Its steps are all kept (the
smoothing raises the mismatch by design, so the energy test below does not
apply). Where the 'auto' metric finds the images piecewise constant (drawn
shapes, masks: it chose the robust LNCC) the smoothing is off: such pairs
need the large, unsmoothed deformations of the fluid flow alone (dipy's
circle -> C: 1.6 % of the mismatch left without it, 6.2 % with it).
``field_sigma = 0`` is the legacy greedy: an update that raises the energy is
undone and the step halved (both step modes), so the energy never increases
within a level. ``config['field_sigma_used']`` holds each level's value.

Stationary boundary. Each step, and the smoothed displacement, are set to
zero on the grid's outer faces (``BoundaryFaces``; none along a one-voxel
axis): the fluid kernel spreads the force out to the edge of the grid, and an
edge that moves while ``h`` is the identity outside the grid (the H-fields'
partial-identity background) folds there. Measured on a 1 mm MNI slice under
a 16 mm deformation: 92 folded voxels, all on the first row, before; none
after, with the same error in the brain (0.26 / 0.71 mm before, 0.25 / 0.70
after). Mean error on the 3-D demo pairs, before / after: clean 0.435 /
0.428, rescanned 0.398 / 0.392, T2-like 1.555 / 1.560, 24 mm 1.137 / 1.146.

Inverse. ``hinv`` (an H-field on the moving grid, ``hinv(h(x)) = x``)
follows each accepted step to first order (ComposeVInvH) where the steps
are ``h``'s only change (``field_sigma = 0``, the legacy); with the
displacement smoothing, which moves ``h`` off that composition (16 mm from
the inverse on the clean demo pair), it starts at the end from ``2x - h``
instead (the same polished inverse to 1e-4 mm on the demo pairs, and
greedy 12-18 % faster without a composition per iteration). It is polished at
the end by ``inverse_iters`` fixed-point iterations ``hinv <- hinv -
(h o hinv - x)`` (ComposeHH), then as many Newton-Schulz iterations
``hinv <- hinv o (2x - h o hinv)`` (``polish_inverse``; a candidate that
folds hinv is not taken), which bring ``h o hinv`` to the identity and ``hinv o h`` within
the interpolation error (24 mm demo pair: 0.13 and 0.12 mm mean in the brain
with the first alone, 0.0000 and 0.03 mm with both).

Final gain (``gain='auto'``; not with MI): before the inverse is polished,
``h = x + s (h - x)`` with the s that minimises the image term alone
(``_common.gain_search``; a candidate that folds counts as a rise): the
smoothed, regularised displacement falls short of the true one by a nearly
constant fraction (0.95 on the demo pairs). 2 mm demo pairs: clean 0.428 ->
0.415 mm, 24 mm 1.146 -> 1.118 mm.

Energy. The similarity metric's (``metric``: PyCA.Apps.metrics; ``ssd``,
the legacy's, ``E = Sum2(I0 - I1 o h) * voxelVol``) at the current level (an
integral, so levels are comparable), recorded at each iteration before its
update, as the legacy example did; greedy has no regulariser energy, so
``energy_terms['reg']`` holds zeros. Other metrics replace ``diff`` above by
their force ``-1/2 dE/dIdef / voxelVol`` (``I0 - Idef`` for SSD) and are
evaluated once per level on that level's images (``prepare``).

Defaults were chosen on the MNI T1 template at 2 mm (99x117x95, intensities
in [0, 1]) warped by smooth deformations of up to 8 mm (clean, rescanned and
T2-like) and 24 mm, and checked on dipy's circle -> C shapes (2-D): 100, 80
and 20 iterations (the coarse ones are cheap), about 2 s on two cores.
"""
import copy
import math
from typing import Any, Dict, Optional, Union

import PyCA.Core as ca

from ._common import (RegistrationResult, FaceSlabs, FoldGuard, kernel_of, gaussian_filter_of,
                      polish_inverse, gain_search, gain_wanted)
from .multiscale import Method, register_levels, max_voxel_disp, check_single_level, check_warm_field
from .schema import (Schema, Param, multiscale, step_control, kernel, device, metric, non_negative,
                     positive, final_gain)

__all__ = ['DEFAULTS', 'SCHEMA', 'greedy_register']

#: The parameters of :func:`greedy_register`: the shared fragments
#: (PyCA.Apps.schema) with greedy's defaults.
SCHEMA = Schema(
    multiscale(scales=[4, 2, 1],    # down-sampling factors, coarse to fine
               iters=[100, 80, 20]),  # iterations per scale (one int is used for every scale)
    step_control(step=0.0,           # 0: normalised step of max_step voxels; > 0: legacy multiplier
                 max_step=Param([0.5, 0.5, 0.25], positive, per_scale=True)),
                                     # largest displacement of one update, in voxels of the level
                                     #   (one value, or one per scale)
    {'field_sigma': Param(0.75, non_negative)},  # Gaussian smoothing (voxels of the level) of the
                                     #   displacement h - x after every update (elastic regularisation,
                                     #   as demons and PICSL Greedy); its steps are not undone. Off where
                                     #   the 'auto' metric finds the images piecewise constant; 0: off
    kernel(alpha=1.0, beta=0.0,      # L = -alpha lap - beta grad div + gamma
           gamma=0.001),             # smoothing length sqrt(alpha/gamma) = 32 physical units (mm)
    device(),                        # 'auto' (memory type of fixed), 'cpu' or 'gpu'
    {'compute_inverse': Param(True),              # maintain hinv (one extra composition per iteration)
     'inverse_iters': Param(5, non_negative)},    # final fixed-point polishing iterations of hinv
    final_gain(),                    # 'auto': h = x + s (h - x) at the end (Greedy._gain); not with MI
    metric('auto', lncc_radius=0, mi_bins=32),    # 'auto', 'lncc', 'ssd', 'ncc' or 'mi' (PyCA.Apps.metrics)
    {'fft_pad': Param(True)},   # register on a grid padded at the far end to FFT-friendly sizes
                                # (the fluid kernel's transforms), h and hinv cropped back
)

#: Parameters of :func:`greedy_register` and their defaults (also the keys a
#: config dict / YAML file may hold).
DEFAULTS = SCHEMA.defaults()


class BoundaryFaces(FaceSlabs):
    """Zeroes a field on the outer faces of its grid (both faces of every
    axis of more than one voxel): ``_common.FaceSlabs`` of one-voxel zero
    slabs (a face's worth of memory, not a grid's).

    Args:
        grid (GridInfo): the grid of the fields it zeroes.
        mType (MemoryType): their memory type.
    """

    def __init__(self, grid, mType):
        super().__init__(grid, mType, width=1, value=0.0, field=True, min_len=2)

    def zero(self, field):
        """Sets ``field`` (a displacement or a step, on the grid) to 0 on the faces.

        Args:
            field (Field3D): the field, changed in place.
        """
        self.fill(field)


class Greedy(Method):
    """Greedy fluid registration's per-level step (module docstring) for the
    multiscale driver.

    Args:
        cfg (dict): the merged configuration.
        mType (MemoryType): where it computes.
        metric (Metric): the similarity metric.
        grid0 (GridInfo): the full-resolution grid.
        init_h (Field3D, optional): warm start (the H-field to start from).
        init_hinv (Field3D, optional): its inverse.
    """
    name, label, schema, pad_fields = 'greedy', 'greedy', SCHEMA, ('hinv',)

    def __init__(self, cfg, mType, metric, grid0, init_h=None, init_hinv=None):
        super().__init__(cfg, mType, metric, grid0)
        self.init_h, self.init_hinv = init_h, init_hinv
        self.want_inv = bool(cfg['compute_inverse'])
        self.track_inv = self.want_inv     # hinv follows h step by step (run)
        self.sigmas = []                     # the displacement smoothing of each level
        self.gain_used = 1.0                 # the final gain (_gain)
        self.h = self.hinv = None            # the buffers: made by start (not on a grid the
        #                                      driver then pads away: device memory on a GPU)

    def _allocate(self):
        I, F = self.image, self.field
        self.Idef, self.diff = I(), I()
        # four fields (three without the inverse): gU = K gI is computed in
        # place, and hprev (the undo copy of h) is free whenever the inverse
        # is updated or polished, so it is the inverse's scratch too
        self.h, self.hprev, self.gI = F(), F(), F()
        self.gU = self.gI
        self.hinv = F() if self.want_inv else None
        self.scratch = self.hprev
        # the buffers resized at each level (updateHField resizes h and hinv itself)
        self.scratch_objs = [self.Idef, self.diff, self.hprev, self.gI]

    def warm(self):
        """bool: ``init_h`` or ``init_hinv`` was given (no padding, a single level)."""
        return self.init_h is not None or self.init_hinv is not None

    def setup(self, facs):
        """Checks a warm start: a single full-resolution level, fields of the fixed grid's size.

        Args:
            facs (list of int): the levels' factors.
        """
        if self.warm():
            check_single_level('init_h', facs, self.cfg['scales'])
            for name, f in (('init_h', self.init_h), ('init_hinv', self.init_hinv)):
                check_warm_field('greedy_register', name, f, self.grid0, facs, self.cfg['scales'])

    def start(self, level):
        """h (and hinv) at the identity of the first level, or the warm start.

        Args:
            level (Level): the first level.
        """
        self._allocate()
        for o in self.scratch_objs:
            o.setGrid(level.grid)
        h, hinv = self.h, self.hinv
        for o in (h, hinv) if self.want_inv else (h,):
            o.setGrid(level.grid)
            ca.SetToIdentity(o)
        if self.init_h is None:
            return
        ca.Copy(h, self.init_h)
        if self.want_inv and self.init_hinv is not None:
            ca.Copy(hinv, self.init_hinv)
        elif self.want_inv:   # hinv from the identity by fixed-point iterations
            self._fixed_point_inverse(4 * max(1, int(self.cfg['inverse_iters'])))

    def _fixed_point_inverse(self, iters):
        """``iters`` plain fixed-point iterations ``hinv <- hinv - (h o hinv - x)``
        (ComposeHH; ``gI`` and ``scratch`` overwritten): they converge from a far
        start where h stretches less than twofold."""
        h, hinv, ident = self.h, self.hinv, self.gI
        ca.SetToIdentity(ident)
        for _ in range(int(iters)):
            ca.ComposeHH(self.scratch, h, hinv)
            ca.Sub_I(hinv, self.scratch)
            ca.Add_I(hinv, ident)

    def upsample(self, level, resampler):
        """h and hinv up-sampled onto the new level (``updateHField``).

        Args:
            level (Level): the new level.
            resampler (MultiscaleResamplerGauss): set to the new level.
        """
        for o in self.scratch_objs:
            o.setGrid(level.grid)
        resampler.updateHField(self.h)
        if self.want_inv:
            resampler.updateHField(self.hinv)

    def _evaluate(self, I0, I1):
        """The energy, and diff = -1/2 dE/dIdef / voxelVol (SSD: I0 - Idef)."""
        ca.ApplyH(self.Idef, I1, self.h)
        return self.metric.evaluate(I0, self.Idef, self.diff)

    def _accept(self):
        if self.track_inv:
            # hprev (the old h) is no longer needed once the step is accepted
            ca.ComposeVInvH(self.scratch, self.gU, self.hinv)
            self.hinv.swap(self.scratch)

    def field_sigma(self):
        """The displacement smoothing of the level just prepared: ``field_sigma``, or 0 where
        the 'auto' metric chose its robust form (piecewise-constant images: shapes need the
        large, unsmoothed deformations of the fluid flow alone)."""
        if getattr(self.metric, 'chosen', None) == 'robust lncc':
            return 0.0
        return float(self.cfg['field_sigma'])

    def run(self, level, history):
        """The level's greedy steps (module docstring): without displacement smoothing each
        update that raises the energy is undone and the step halved; with it every update is
        kept and the displacement smoothed.

        Args:
            level (Level): the level.
            history (History): where each iteration's energy is recorded.
        """
        I0, I1, g = level.fixed, level.moving, level.grid
        h, hprev, gI, gU = self.h, self.hprev, self.gI, self.gU
        kernel = kernel_of(g, self.mType, self.cfg)
        cap, step = float(level.values['max_step']), float(self.cfg['step'])
        self.metric.prepare(I0, I1)
        sigma = self.field_sigma()
        self.sigmas.append(sigma)
        filt = gaussian_filter_of(g, self.mType, sigma) if sigma > 0 else None
        # hinv follows h by composition with each accepted step where the steps are h's
        # only change (the legacy fluid); the displacement smoothing moves h off that
        # composition (16 mm from the inverse on the clean demo pair), so there hinv is
        # made at the end instead (result: the same inverse to 1e-4 mm, 12-18 % faster)
        self.track_inv = self.want_inv and filt is None
        undo = filt is None
        faces = BoundaryFaces(g, self.mType)
        e_prev, pending = None, False   # pending: gU is in h but not yet checked
        for _ in range(level.iters):
            e = self._evaluate(I0, I1)
            if pending and undo and e > e_prev:
                h.swap(hprev)           # the update raised the energy: undo it
                cap *= 0.5
                step *= 0.5
                e = self._evaluate(I0, I1)
            elif pending:
                self._accept()
            pending = False
            e_prev = e
            history.record(e, level.factor, e, 0.0)
            ca.Gradient(gI, self.Idef)
            ca.Mul_I(gI, self.diff)
            kernel.applyInverseOperator(gU)      # in place: gU is gI
            m = max_voxel_disp(gU, g)
            if not m > 0.0:
                continue                # zero gradient: nothing to do
            ca.MulC_I(gU, cap / m if step == 0.0 else min(step, cap / m))
            faces.zero(gU)              # the boundary stays in place (module notes)
            ca.ComposeHV(hprev, h, gU)
            if filt is None:
                h.swap(hprev)           # h: new, hprev: old
            else:
                # h = x + G_sigma * (new h - x); Idef is free until the next evaluation
                ca.HtoV_I(hprev)
                filt.filter(h, hprev, self.Idef)
                faces.zero(h)
                ca.VtoH_I(h)
            pending = True
        if pending:                     # check the level's last update
            if undo and self._evaluate(I0, I1) > e_prev:
                h.swap(hprev)
            else:
                self._accept()

    def _gain(self, fixed, moving):
        """h = x + s (h - x) with the s of ``gain_search`` on the image term (a
        candidate that folds h where h did not fold counts as a rise); returns s.
        In the method's own buffers (hprev: h - x, gI: the candidate, Idef, diff)."""
        h, u, hs = self.h, self.hprev, self.gI
        ca.SetToIdentity(hs)
        ca.Sub(u, h, hs)                                 # u = h - x
        guard = FoldGuard(self.Idef)
        guard.start(h)

        def E(x):
            ca.SetToIdentity(hs)
            ca.Add_MulC_I(hs, u, x)
            if x != 1.0 and guard.folds(hs):
                return math.inf
            ca.ApplyH(self.Idef, moving, hs)
            return self.metric.evaluate(fixed, self.Idef, self.diff)

        s = gain_search(E)
        ca.SetToIdentity(h)
        ca.Add_MulC_I(h, u, s)
        return s

    def result(self, fixed, moving):
        """h, the polished hinv and the deformed moving image.

        Args:
            fixed (Image3D): the full-resolution fixed image.
            moving (Image3D): the full-resolution moving image.

        Returns:
            dict: ``deformed``, ``h``, ``hinv``.
        """
        h, hinv = self.h, self.hinv
        self.gain_used = self._gain(fixed, moving) if gain_wanted(self.cfg['gain'], self.metric) else 1.0
        if self.want_inv:
            if any(x > 0 for x in self.sigmas):
                ca.SetToIdentity(hinv)                   # hinv = x - (h - x): the first-order
                ca.MulC_I(hinv, 2.0)                     # inverse, the fixed point's start
                ca.Sub_I(hinv, h)
            # polish the inverse: fixed-point iterations (from a far start), then as
            # many Newton-Schulz iterations (polish_inverse: fast near the inverse)
            self._fixed_point_inverse(self.cfg['inverse_iters'])
            # (in the method's own buffers, free now: no memory beyond the iterations' peak)
            polish_inverse(hinv, h, int(self.cfg['inverse_iters']), self.scratch, r=self.gI,
                           jac=self.Idef)
        deformed = self.image()
        ca.ApplyH(deformed, moving, h)
        return dict(deformed=deformed, h=h, hinv=hinv,
                    config=dict(copy.deepcopy(self.cfg), field_sigma_used=list(self.sigmas),
                                gain_used=self.gain_used))


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
    update, clipped to ``max_step`` voxels), ``max_step`` (per scale, or one value),
    ``field_sigma`` (Gaussian smoothing of the displacement after every update, voxels;
    0: the legacy greedy), ``alpha``, ``beta``, ``gamma`` (the fluid operator), ``device`` ('auto', 'cpu',
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
    return register_levels(Greedy, greedy_register, fixed, moving, config, quiet, params,
                           init_h=init_h, init_hinv=init_hinv)
