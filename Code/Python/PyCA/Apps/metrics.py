"""Similarity metrics: one object per metric, taken by every registration
method (greedy, LDDMM, elastic, the atlas builder)::

    metric = make_metric('lncc', lncc_radius=2)
    metric.prepare(fixed, moving)          # per level: constants, checks
    e = metric.evaluate(fixed, deformed, force)   # energy; force filled in

``evaluate`` returns the metric's energy E (to be minimised, an integral
over the fixed grid: sums times the voxel volume) and writes into ``force``
(an Image3D on the same grid, any memory type)::

    force(x) = -1/2 dE / d deformed(x) / voxelVol,

the exact gradient of E with respect to the deformed image, scaled so that
for SSD it is ``fixed - deformed``: every method multiplies it by the
gradient of the deformed image (the greedy force, the LDDMM adjoint's image
term, the elastic update, the atlas update), so SSD keeps its arithmetic
exactly. All four energies are in the units of SSD (intensity^2 x volume),
so a method's weights (LDDMM's ``sigma``) keep their meaning:

* ``ssd``: ``E = sum (fixed - deformed)^2 vol``.
* ``ncc``: global normalised cross-correlation; ``E = N vol (a - c^2 / b)``
  with a, b the variances of the fixed and deformed images and c their
  covariance: the SSD left after the best linear intensity map
  ``fixed ~ alpha deformed + beta``, i.e. ``N vol a (1 - cc^2)``. Unchanged
  by ``deformed -> alpha deformed + beta``.
* ``lncc``: local NCC over boxes of ``radius`` voxels (a (2r+1)^d window,
  truncated at the border): ``E = vol sum_w (A_w - C_w^2 / (B_w + eps)) /
  n_w`` with A, B, C the centred sums of the window -- the SSD left after
  the best *local* linear intensity map, so a slowly varying gain or bias
  of the moving image (a scanner's bias field) costs nothing. The local
  sums are box filters (``PyCA.Core.BoxFilter``: running sums, the cost
  does not grow with the radius); the gradient needs four more. The fixed
  image's two (its window mean and centred sum of squares) are kept between
  evaluations, keyed on the image and its sums, so an evaluation runs seven.
  Memory: three images held between evaluations (the window counts and
  those two), five borrowed for each evaluation from the thread's memory
  manager (``_common.scratch_image``), whose pools the LDDMM adjoint's
  scratch reuses (Architecture.md, "Where the memory goes").
* ``lncc`` with ``global_weight`` w > 0 (the robust LNCC that ``auto``
  picks for piecewise-constant images): ``E = E_lncc + w E_ncc``. LNCC alone
  is blind on piecewise-constant images (binary masks, label maps, the
  circle -> C pair): a window where either image is flat has C = 0, so its
  energy ``A - C^2/(B + eps)`` has a zero derivative (dE/dJ is a sum of
  terms in C and C^2) and gives no force -- whatever eps, since the
  derivative vanishes with C, not with B: an eps relative to the global
  variance does not help -- and inside a flat region of both images a
  constant difference (fixed 1, deformed 0) costs nothing at all (the local
  offset absorbs it). Only windows that hold edges of both images pull, so
  the C barely moves toward the circle (83 % / 88 % of the mismatch left,
  LDDMM / greedy; a radius of 8 voxels: 17 % / 39 %). dipy's CCMetric has
  the same dead zone (it skips windows with a zero variance), and dipy's
  circle -> C example registers with SSD. The global NCC term (the SSD left
  after the best *global* linear intensity map) gives the SSD-like force at
  every edge of the deformed image; the LNCC term keeps the normalised,
  edge-aligned force near the edges (LDDMM leaves 8 % with both, 10 % with
  NCC alone, 7 % with SSD; on the circle -> C pair of dipy's orientation 15
  % with both, 68 % with NCC, 46 % with SSD). Both are in SSD units, so the
  sum is too. The global term penalises anticorrelation (``a - c|c|/b`` for
  ``a - c^2/b``; the same where c >= 0): shapes that do not overlap at all
  (c < 0) are pulled together, not toward the inverted image.
* ``auto`` (the default of every method): chooses from the data, at each
  level's ``prepare``: ``flat_fraction`` of each image is the fraction of
  its foreground (voxels above min + 5 % of the range) lying in flat LNCC
  windows (window variance below 1e-3 of the image's variance). Natural
  images (MRI, CT: texture and noise everywhere) have almost none (the MNI
  T1 template at 2 mm: 0.008, its rescans and T2-like version: 0), and
  ``auto`` is exactly ``lncc``; where either image is piecewise constant
  (fraction above ``AUTO_FLAT_FRACTION`` = 0.25; the circle: 0.94, the C:
  0.82) it is the robust LNCC with w = 1. ``describe()`` reports the choice.
  On the MNI demo pairs ``auto`` is therefore ``lncc`` (the same numbers).
* ``mi``: Mattes mutual information (``PyCA.Core.MutualInformation``:
  cubic B-spline Parzen windows, ``bins`` bins over each image's range,
  deterministic on the CPU); ``E = -N vol a MI`` (a: the fixed image's
  variance, for SSD-like units). For images of different contrasts (T1
  against T2): unchanged by any invertible intensity remap of either image.

``mismatch_warnings`` says when a registration's mismatch barely fell (the
summary's ``warnings``, a warning line of pyca-register and pyca-demo).

Every metric runs on MEM_HOST and MEM_DEVICE through PyCA.Core operators
(no NumPy in the hot path; ``auto``'s ``flat_fraction``, once per level, on a
host copy). Bad parameters raise ConfigError; a constant
image (NCC, LNCC, MI undefined) raises ValueError from ``prepare``.
"""
import math

import PyCA.Core as ca

from ._common import ConfigError, scratch_image

__all__ = ['METRICS', 'Metric', 'SSD', 'NCC', 'LNCC', 'MI', 'Auto', 'make_metric', 'flat_fraction',
           'AUTO_FLAT_FRACTION', 'AUTO_GLOBAL_WEIGHT', 'BARELY_FELL_RATIO', 'ncc_ratio',
           'mismatch_warnings', 'resolve_lncc_radius', 'LNCC_RADIUS_COARSE_SPACING']

#: the metric names ``metric=`` accepts
METRICS = ('auto', 'ssd', 'ncc', 'lncc', 'mi')

#: ``auto`` uses the robust LNCC when either image has more than this fraction
#: of its foreground in flat windows (``flat_fraction``), plain LNCC otherwise
AUTO_FLAT_FRACTION = 0.25
#: the weight of the global NCC term in ``auto``'s robust LNCC
AUTO_GLOBAL_WEIGHT = 1.0

#: ``lncc_radius=0`` (the default of every method, :func:`resolve_lncc_radius`): a
#: window radius of 1 voxel (3 voxels wide at each level) where the fixed image's finest
#: spacing is at least this (mm), 2 voxels below it
LNCC_RADIUS_COARSE_SPACING = 1.5


def resolve_lncc_radius(radius, spacing):
    """The LNCC window radius (voxels of each level) a registration uses: ``radius``
    itself, or for 0 (automatic; or None) 1 where ``spacing``, the fixed grid's finest
    (``multiscale.min_spacing``: over its axes of more than one voxel), is at least
    :data:`LNCC_RADIUS_COARSE_SPACING` (1.5 mm), else 2. The window then spans about
    5 to 6 mm of the full-resolution image, and twice that at each coarser level.

    Measured (MNI demo pairs, seed 7 unless named; LDDMM / greedy mean error in mm,
    radius 2 against 1): at 2 mm, clean 0.42 / 0.39 and 0.46 / 0.44, rescanned 0.46
    / 0.39 and 0.44 / 0.40, 24 mm deformation 1.04 / 0.99 and 1.31 / 1.14, seeds 3
    and 11 and a rougher (10 mm) deformation no worse but seed 3's 24 mm pair
    (LDDMM 1.51 / 1.58), a noisier rescan (noise 0.08: LDDMM 1.52 / 1.11, greedy 1.95
    / 2.08), 2-D slices at 2 mm better (greedy 0.55 / 0.49 at 16 mm); at 1 mm (LDDMM,
    seed 0) radius 2 is better (0.27 / 0.31 mm) and radius 1 at the coarse levels
    needs more time steps (peak 1.86 / 2.31 GB).

    Args:
        radius (int or None): the ``lncc_radius`` parameter (0 or None: automatic).
        spacing (float): the full-resolution fixed grid's finest spacing (mm).

    Returns:
        the radius (anything but 0 or None unchanged: :func:`make_metric` checks it).
    """
    if radius is None or (isinstance(radius, (int, float)) and not isinstance(radius, bool) and radius == 0):
        return 1 if float(spacing) >= LNCC_RADIUS_COARSE_SPACING else 2
    return radius


class _Scratch(object):
    """Scratch images of one grid and memory type, made on first use."""

    def __init__(self):
        self._key, self._ims = None, {}

    def get(self, grid, mType, name):
        key = (tuple(grid.size()), tuple(grid.spacing()), tuple(grid.origin()), int(mType))
        if key != self._key:
            self._key, self._ims = key, {}
        im = self._ims.get(name)
        if im is None:
            im = self._ims[name] = ca.Image3D(grid, mType)
        return im


def _stats(im):
    """(mean, variance, min, max) of an image, in float64 from the reductions."""
    n = float(im.nVox())
    s, s2 = ca.Sum(im), ca.Sum2(im)
    mean = s / n
    return mean, max(s2 / n - mean * mean, 0.0), float(ca.Min(im)), float(ca.Max(im))


class Metric(object):
    """The interface (module notes): ``prepare``, ``evaluate``, ``energy``."""
    name = None

    def __init__(self):
        self._scratch = _Scratch()

    def prepare(self, fixed, moving):
        """Per-level set-up for this fixed / moving pair (constants; checks).
        Returns self.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            moving (Image3D): the moving image (of the current level).

        Returns:
            the metric itself.

        Raises:
            ValueError: a constant image, for the metrics undefined on one.
        """
        return self

    def evaluate(self, fixed, deformed, force):
        """The energy, and ``force`` = -1/2 dE/d deformed / voxelVol.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.
            force (Image3D): output, on the fixed grid: -1/2 dE/d deformed / voxelVol.

        Returns:
            float: the energy E.
        """
        raise NotImplementedError

    def energy(self, fixed, deformed):
        """The energy alone.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.

        Returns:
            float: the energy E.
        """
        force = self._scratch.get(deformed.grid(), deformed.memType(), 'energy_force')
        return self.evaluate(fixed, deformed, force)

    def describe(self):
        """The metric and its parameters, for summaries.

        Returns:
            dict: ``{'metric': name, ...}``.
        """
        return {'metric': self.name}

    @staticmethod
    def _borrow(like, k=1):
        """``k`` scratch images like ``like`` for one evaluation: borrowed from
        the thread's memory manager where it holds the grid (``scratch_image``;
        shared with the other operations' scratch, e.g. the LDDMM adjoint's),
        else new ones."""
        return [scratch_image(like.grid(), like.memType()) for _ in range(k)]

    def _tmp(self, like, name):
        return self._scratch.get(like.grid(), like.memType(), name)


class SSD(Metric):
    """Sum of squared differences (the legacy and default-free metric)."""
    name = 'ssd'

    def evaluate(self, fixed, deformed, force):
        """``E = sum (fixed - deformed)^2 vol``; ``force = fixed - deformed``.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.
            force (Image3D): output, on the fixed grid: -1/2 dE/d deformed / voxelVol.

        Returns:
            float: the energy E (SSD units: intensity^2 x volume).
        """
        ca.Sub(force, fixed, deformed)
        return ca.Sum2(force) * fixed.grid().voxelVol()


def _whole(value, lo, hi, what):
    """int(value) when it is a whole number in lo..hi, else ConfigError(what)."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ConfigError("%s, got %r" % (what, value)) from None
    if v != value or not lo <= v <= hi:
        raise ConfigError("%s, got %r" % (what, value))
    return v


def _check_not_constant(im, who, role):
    mean, var, lo, hi = _stats(im)
    if not (hi > lo) or not var > 0.0 or not math.isfinite(var):
        raise ValueError("%s: the %s image is constant (every voxel %g): the metric is undefined for it"
                         % (who, role, lo))
    return mean, var, lo, hi


class NCC(Metric):
    """Global normalised cross-correlation (module notes).

    Args:
        positive (bool): penalise anticorrelation: ``E = N vol (a - c |c| / b)``,
            the same as NCC where the covariance c >= 0 and above ``N vol a``
            where c < 0 (the robust LNCC's global term: two shapes that do not
            overlap, c < 0, are pulled together instead of toward the inverted
            image, which NCC's c^2 rewards as much); default False (NCC).
    """
    name = 'ncc'

    def __init__(self, positive=False):
        Metric.__init__(self)
        self.positive = bool(positive)

    def prepare(self, fixed, moving):
        """Checks that neither image is constant.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            moving (Image3D): the moving image (of the current level).

        Returns:
            the metric itself.

        Raises:
            ValueError: a constant image (the metric is undefined for it).
        """
        _check_not_constant(fixed, 'ncc', 'fixed')
        _check_not_constant(moving, 'ncc', 'moving')
        return self

    def evaluate(self, fixed, deformed, force):
        """The global NCC energy ``N vol (a - c^2 / b)`` and its force.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.
            force (Image3D): output, on the fixed grid: -1/2 dE/d deformed / voxelVol.

        Returns:
            float: the energy E (SSD units: intensity^2 x volume).
        """
        n = float(fixed.nVox())
        vol = fixed.grid().voxelVol()
        mI, mJ = ca.Sum(fixed) / n, ca.Sum(deformed) / n
        a = max(ca.Sum2(fixed) / n - mI * mI, 0.0)
        b = max(ca.Sum2(deformed) / n - mJ * mJ, 0.0)
        c = ca.Dot(fixed, deformed) / n - mI * mJ
        if not b > 1e-12 * max(a, 1e-30):
            # the deformed image became constant: no correlation to follow
            ca.SetMem(force, 0.0)
            return n * vol * a
        r = c / b
        q = abs(r) if self.positive else r           # the positive variant: c|c| for c^2
        # force = q (I - mI) - q r (J - mJ)  (NCC: q = r = c/b)
        tmp, = self._borrow(fixed)
        ca.MulC(force, fixed, q)
        ca.MulC(tmp, deformed, -q * r)
        ca.Add_I(force, tmp)
        ca.AddC_I(force, -q * mI + q * r * mJ)
        return n * vol * (a - q * c)


class LNCC(Metric):
    """Local normalised cross-correlation over boxes of ``radius`` voxels
    (module notes).

    With ``global_weight`` w > 0 it is the robust LNCC, ``E_lncc + w E_ncc``
    (module notes: LNCC alone gives no force where either image's window is
    flat; the global NCC term does, at every edge of the deformed image).

    Args:
        radius (int): half-width of the boxes in voxels (a (2r+1)^d window); default 2; 1 to 2^20.
        global_weight (float): weight w of the global NCC term; default 0 (plain LNCC); >= 0.

    Raises:
        ConfigError: ``radius`` is not a whole number from 1 to 2^20, or ``global_weight``
            is negative or not finite.
    """
    name = 'lncc'

    def __init__(self, radius=2, global_weight=0.0):
        Metric.__init__(self)
        self.radius = _whole(radius, 1, 1 << 20, "lncc_radius must be a whole number of voxels >= 1")
        try:
            w = float(global_weight)
        except (TypeError, ValueError):
            w = float('nan')
        if not (math.isfinite(w) and w >= 0.0):
            raise ConfigError("global_weight must be a finite number >= 0, got %r" % (global_weight,))
        self.global_weight = w
        self._ncc = NCC(positive=True) if w > 0.0 else None
        self._eps = None

    def describe(self):
        """The metric and its parameters, for summaries.

        Returns:
            dict: ``{'metric': 'lncc', 'lncc_radius': radius}`` (and ``'global_weight'`` when
            it is not 0).
        """
        d = {'metric': self.name, 'lncc_radius': self.radius}
        if self.global_weight:
            d['global_weight'] = self.global_weight
        return d

    def _box(self, out, im, tmp):
        s = im.size()
        r = self.radius
        ca.BoxFilter(out, im, ca.Vec3Di(r if s.x > 1 else 0, r if s.y > 1 else 0, r if s.z > 1 else 0),
                     ca.BC_APPROX, tmp)

    def prepare(self, fixed, moving):
        """Checks that neither image is constant; sets the regularising epsilon of the level.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            moving (Image3D): the moving image (of the current level).

        Returns:
            the metric itself.

        Raises:
            ValueError: a constant image (the metric is undefined for it).
        """
        _, var, _, _ = _check_not_constant(fixed, 'lncc', 'fixed')
        _check_not_constant(moving, 'lncc', 'moving')
        self._count(fixed)
        # eps: 1e-5 of a window's sum of squares at the fixed image's variance
        self._eps = 1e-5 * var * float(ca.Max(self._n))
        if self._ncc is not None:
            self._ncc.prepare(fixed, moving)
        return self

    def _count(self, like):
        """n(x): the voxels in the (truncated) window of x, once per grid."""
        cnt = self._tmp(like, 'lncc_n')
        if getattr(self, '_n', None) is not cnt:
            ca.SetMem(cnt, 1.0)
            self._box(cnt, cnt, self._borrow(like)[0])
            self._n = cnt
        return cnt

    def evaluate(self, fixed, deformed, force):
        """The local NCC energy over the boxes and its force (box filters).

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.
            force (Image3D): output, on the fixed grid: -1/2 dE/d deformed / voxelVol.

        Returns:
            float: the energy E (SSD units: intensity^2 x volume).
        """
        if self._eps is None:
            self.prepare(fixed, deformed)
        n = self._count(fixed)
        Ibar, Ac = self._fixed_stats(fixed)                # the fixed image's: mean, centred A
        # four scratch images and the box filters' (borrowed for this call);
        # ``force`` is scratch too until its final value is written
        X1, X2, X3, X4, bt = self._borrow(fixed, 5)
        box = lambda im: self._box(im, im, bt)            # noqa: E731  (in place)
        vol = fixed.grid().voxelVol()
        self._box(X1, deformed, bt)                    # X1 = sJ = Box(J)
        ca.Sqr(force, deformed)
        self._box(X2, force, bt)                       # X2 = B = Box(J^2)
        ca.Mul(force, fixed, deformed)
        self._box(X3, force, bt)                       # X3 = C = Box(I J)
        # centred sums: B -= sJ^2/n, C -= sI sJ/n = Ibar sJ  (X4 = sJ/n = J mean);
        # fused operators (Sub_Mul_I: a -= b c, ...): one pass each
        ca.Div(X4, X1, n)
        ca.Sub_Mul_I(X2, X4, X1)
        ca.Sub_Mul_I(X3, Ibar, X1)
        ca.AddC_I(X2, self._eps)                       # X2 = D = B + eps
        # energy: sum_w (A - C^2/D) / n
        ca.Div(X1, X3, X2)                             # X1 = C/D
        ca.Mul(X2, X1, X3)                             # X2 = C^2/D
        ca.SubDiv(X2, Ac, X2, n)                       # X2 = (A - C^2/D) / n
        e = ca.Sum(X2) * vol
        # force(x) = I Box(g) - Box(g Ibar) - J Box(g2) + Box(g2 Jbar),
        # g = C / (D n), g2 = C^2 / (D^2 n)
        ca.Div(X2, X1, n)                              # X2 = g
        ca.Mul(X3, X1, X2)                             # X3 = g2 = (C/D) g
        ca.Mul(X1, Ibar, X2)                           # X1 = g Ibar
        ca.Mul_I(X4, X3)                               # X4 = g2 Jbar
        for im in (X2, X3, X1, X4):
            box(im)
        ca.MulSub(force, fixed, X2, X1)                # I Box(g) - Box(g Ibar)
        ca.Sub_Mul_I(force, deformed, X3)              # - J Box(g2)
        ca.Add_I(force, X4)                            # + Box(g2 Jbar)
        if self._ncc is not None:                      # robust LNCC: + w E_ncc, + w its force
            e += self.global_weight * self._ncc.evaluate(fixed, deformed, X1)
            ca.Add_MulC_I(force, X1, self.global_weight)
        return e

    def _fixed_stats(self, fixed):
        """The fixed image's window mean Ibar = Box(I)/n and centred sum of
        squares A = Box(I^2) - Box(I)^2/n: computed once per fixed image and
        reused by every evaluation (two of the nine box filters). The cache is
        keyed on the image object and its sum and sum of squares, so a fixed
        image changed in place is recomputed."""
        key = (id(fixed), fixed.memType(), str(fixed.grid()), ca.Sum(fixed), ca.Sum2(fixed))
        Ibar, Ac = self._tmp(fixed, 'lncc_fixed_mean'), self._tmp(fixed, 'lncc_fixed_A')
        bufs = getattr(self, '_fixed_bufs', (None, None))
        if getattr(self, '_fixed_key', None) == key and bufs[0] is Ibar and bufs[1] is Ac:
            return Ibar, Ac
        n = self._n
        w, bt = self._borrow(fixed, 2)
        self._box(Ibar, fixed, bt)                      # Box(I)
        ca.Sqr(w, fixed)
        self._box(Ac, w, bt)                            # Box(I^2)
        ca.Div(w, Ibar, n)                              # the mean, Box(I)/n
        ca.Mul_I(Ibar, w)
        ca.Sub_I(Ac, Ibar)                              # A = Box(I^2) - mean Box(I)
        ca.Copy(Ibar, w)
        self._fixed_key, self._fixed_bufs = key, (Ibar, Ac)
        return Ibar, Ac


class MI(Metric):
    """Mattes mutual information with ``bins`` bins per image (module notes).

    Args:
        bins (int): histogram bins per image; default 32; 2 to 4096.

    Raises:
        ConfigError: ``bins`` is not a whole number from 2 to 4096.
    """
    name = 'mi'

    def __init__(self, bins=32):
        Metric.__init__(self)
        self.bins = _whole(bins, 2, 4096, "mi_bins must be a whole number from 2 to 4096")
        self._mi = None

    def describe(self):
        """The metric and its parameters, for summaries.

        Returns:
            dict: ``{'metric': 'mi', 'mi_bins': bins}``.
        """
        return {'metric': self.name, 'mi_bins': self.bins}

    def prepare(self, fixed, moving):
        """Sets the histogram ranges (each image's range with 2 % of room) for this pair.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            moving (Image3D): the moving image (of the current level).

        Returns:
            the metric itself.

        Raises:
            ValueError: a constant image (the metric is undefined for it).
        """
        _, var, flo, fhi = _check_not_constant(fixed, 'mi', 'fixed')
        _, _, mlo, mhi = _check_not_constant(moving, 'mi', 'moving')
        # the deformed image's values stay within the moving image's range
        # (linear interpolation); 2 % of room on each side, so that the
        # extreme voxels are not clamped (where the derivative would be
        # one-sided)
        pad_f, pad_m = 0.02 * (fhi - flo), 0.02 * (mhi - mlo)
        self._mi = ca.MutualInformation(self.bins, flo - pad_f, fhi + pad_f, mlo - pad_m, mhi + pad_m)
        self._scale = float(fixed.nVox()) * var
        self._key = tuple(fixed.size())
        return self

    def evaluate(self, fixed, deformed, force):
        """The Mattes MI energy ``-N vol a MI`` and its force (prepares itself when the level changed).

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.
            force (Image3D): output, on the fixed grid: -1/2 dE/d deformed / voxelVol.

        Returns:
            float: the energy E (SSD units: intensity^2 x volume).
        """
        if self._mi is None or self._key != tuple(fixed.size()):
            self.prepare(fixed, deformed)
        vol = fixed.grid().voxelVol()
        mi = self._mi.compute(fixed, deformed)
        self._mi.gradient(force, fixed, deformed)      # d MI / d J
        ca.MulC_I(force, 0.5 * self._scale)            # -1/2 dE/dJ / vol, E = -scale vol MI
        self.value = mi
        return -self._scale * vol * mi


def flat_fraction(im, radius=2, tol=1e-3, scratch=None):
    """The fraction of an image's foreground that lies in flat windows: what
    ``auto`` measures (module notes). A voxel is foreground above the
    image's minimum plus 5 % of its range (the background of a scan, a mask
    or a label map is its minimum), and flat where the variance of its
    (2r+1)^d window (``PyCA.Core.BoxFilter``, truncated at the border) is
    below ``tol`` times the image's variance. LNCC gives no force in such a
    window (module notes). Computed once per level on a host copy (not in
    the registration's iterations).

    Args:
        im (Image3D): the image, any memory type.
        radius (int): the window's half-width in voxels; default 2.
        tol (float): the flatness threshold, relative to the image's variance; default 1e-3.
        scratch (sequence of Image3D, optional): five host images of the image's grid to
            overwrite (an LNCC's buffers: no new memory); default None (made here).

    Returns:
        float: in [0, 1]; 0 for a constant image.
    """
    grid = im.grid()
    if im.memType() != ca.MEM_HOST:
        h = ca.Image3D(grid, ca.MEM_HOST)
        ca.Copy(h, im)
        im = h
    mean, var, lo, hi = _stats(im)
    if not (hi > lo and var > 0.0):
        return 0.0
    s = grid.size()
    rad = ca.Vec3Di(radius if s.x > 1 else 0, radius if s.y > 1 else 0, radius if s.z > 1 else 0)
    if scratch is None:
        scratch = [ca.Image3D(grid, ca.MEM_HOST) for _ in range(5)]
    tmp, sq, n, m1, m2 = scratch
    ca.SetMem(sq, 1.0)
    ca.BoxFilter(n, sq, rad, ca.BC_APPROX, tmp)        # the window's voxel count
    ca.BoxFilter(m1, im, rad, ca.BC_APPROX, tmp)
    ca.Sqr(sq, im)
    ca.BoxFilter(m2, sq, rad, ca.BC_APPROX, tmp)
    ca.Div(sq, m1, n)                                  # the window mean
    ca.Div(m1, m2, n)                                  # the window mean of squares
    ca.Sqr_I(sq)
    ca.Sub(m2, m1, sq)                                 # the window variance
    a = im.asnp().ravel()
    v = m2.asnp().ravel()
    fg = a > lo + 0.05 * (hi - lo)
    nfg = int(fg.sum())
    if nfg == 0:
        return 0.0
    return float(((v < tol * var) & fg).sum()) / nfg


class Auto(Metric):
    """The default metric: LNCC, or the robust LNCC where the data are
    piecewise constant, chosen from the data at each level (module notes).

    Args:
        radius (int): the LNCC boxes' half-width in voxels; default 2; 1 to 2^20.
        global_weight (float): the robust LNCC's global NCC weight; default
            ``AUTO_GLOBAL_WEIGHT`` (1).
        threshold (float): the ``flat_fraction`` above which the robust LNCC is chosen; default
            ``AUTO_FLAT_FRACTION`` (0.25).

    Attributes:
        chosen (str or None): 'lncc' or 'robust lncc' (after ``prepare``).
        flat (float or None): the larger ``flat_fraction`` of the two images (after ``prepare``).

    Raises:
        ConfigError: ``radius`` is not a whole number from 1 to 2^20, or ``global_weight`` is
            negative or not finite.
    """
    name = 'auto'

    def __init__(self, radius=2, global_weight=AUTO_GLOBAL_WEIGHT, threshold=AUTO_FLAT_FRACTION):
        Metric.__init__(self)
        # one LNCC (one set of buffers) whose global term is switched on or off per level
        self.global_weight = LNCC(radius, global_weight).global_weight     # checks both
        self._lncc = LNCC(radius, self.global_weight if self.global_weight > 0 else 1.0)
        self._global = self._lncc._ncc
        self.radius, self.threshold = self._lncc.radius, float(threshold)
        self._ready, self.chosen, self.flat = False, None, None

    def describe(self):
        """The metric, its parameters and its choice, for summaries.

        Returns:
            dict: ``{'metric': 'auto', 'lncc_radius': radius, 'chosen': ..., 'flat_fraction': ...}``.
        """
        d = {'metric': self.name, 'lncc_radius': self.radius}
        if self.chosen is not None:
            d['chosen'] = self.chosen
            d['flat_fraction'] = round(self.flat, 4)
            if self.chosen == 'robust lncc':
                d['global_weight'] = self.global_weight
        return d

    def prepare(self, fixed, moving):
        """Measures ``flat_fraction`` of both images, chooses LNCC or the robust LNCC, prepares it.

        Args:
            fixed (Image3D): the fixed image (of the current level).
            moving (Image3D): the moving image (of the current level).

        Returns:
            the metric itself.

        Raises:
            ValueError: a constant image (the metric is undefined for it).
        """
        _check_not_constant(fixed, 'auto', 'fixed')
        _check_not_constant(moving, 'auto', 'moving')
        r = self.radius
        scratch = None
        if fixed.memType() == ca.MEM_HOST and moving.memType() == ca.MEM_HOST:
            # scratch for this call (borrowed: the LNCC's evaluations use the same pools)
            scratch = self._borrow(fixed, 5)
        self.flat = max(flat_fraction(fixed, r, scratch=scratch), flat_fraction(moving, r, scratch=scratch))
        robust = self.flat > self.threshold and self.global_weight > 0
        self._lncc._ncc = self._global if robust else None
        self._lncc.global_weight = self.global_weight if robust else 0.0
        self.chosen = 'robust lncc' if robust else 'lncc'
        self._lncc.prepare(fixed, moving)
        self._ready = True
        return self

    def evaluate(self, fixed, deformed, force):
        """The chosen metric's energy and force (prepares itself on first use).

        Args:
            fixed (Image3D): the fixed image (of the current level).
            deformed (Image3D): the moving image deformed onto the fixed grid.
            force (Image3D): output, on the fixed grid: -1/2 dE/d deformed / voxelVol.

        Returns:
            float: the energy E (SSD units: intensity^2 x volume).
        """
        if not self._ready:
            self.prepare(fixed, deformed)
        return self._lncc.evaluate(fixed, deformed, force)


#: a run "barely fell" (``mismatch_warnings``) when both its mismatch ratio and its
#: global-NCC ratio stay above this
BARELY_FELL_RATIO = 0.75


def ncc_ratio(fixed, moving, deformed):
    """The global NCC energy (the SSD left after the best global linear
    intensity map, module notes) of (fixed, deformed) over that of (fixed,
    moving): the mismatch ratio with global gain and offset differences
    removed; NaN where it is undefined (a constant image, a zero initial
    energy).

    Args:
        fixed (Image3D): the fixed image.
        moving (Image3D): the moving image on the fixed grid (before the registration).
        deformed (Image3D): the moving image deformed onto the fixed grid.

    Returns:
        float: final / initial global NCC energy.
    """
    m = NCC()
    try:
        m.prepare(fixed, moving)
    except ValueError:
        return float('nan')
    e0 = m.energy(fixed, moving)
    e1 = m.energy(fixed, deformed)
    return e1 / e0 if e0 > 0 else float('nan')


def mismatch_warnings(mismatch_ratio, ncc_ratio_value=None, threshold=BARELY_FELL_RATIO):
    """The warnings of a registration whose mismatch barely fell (none when it fell).

    A run barely fell when the mismatch ratio (final / initial mean squared
    difference, PyCA.Apps.outputs) AND the global-NCC ratio (``ncc_ratio``:
    the same after the best global linear intensity map, which discounts a
    global gain or offset and much of a contrast change) both stay above
    ``threshold`` (0.75: fell by less than a quarter). Either alone would
    mislead: a T2-like moving image on a T1 fixed one keeps an MSD ratio of
    0.99 when the registration works (its NCC ratio falls to 0.6), and LNCC's
    own energy falls by half on the circle -> C pair while the images stay
    apart (MSD ratio 0.83 - 0.88, NCC ratio 0.86 - 0.90). Measured on the
    MNI demo pairs at 2 mm, the successful runs: MSD ratio 0.015 - 0.50
    (T1, rescanned T1), NCC ratio 0.6 (T2-like, MI).

    Args:
        mismatch_ratio (float): final / initial mean squared difference.
        ncc_ratio_value (float, optional): ``ncc_ratio`` of the run; default None (not used).
        threshold (float): default ``BARELY_FELL_RATIO`` (0.75).

    Returns:
        list of str: empty, or one sentence.
    """
    ratios = [r for r in (mismatch_ratio, ncc_ratio_value)
              if r is not None and isinstance(r, (int, float)) and not math.isnan(r)]
    if not ratios or min(ratios) <= threshold:
        return []
    return ['the mismatch barely fell: final / initial mean squared difference %.3g%s (above %g): '
            'the registration has not matched the images; check the pair, the metric and the '
            'schedule (more iterations, a coarser first scale)'
            % (mismatch_ratio, '' if ncc_ratio_value is None or math.isnan(ncc_ratio_value)
               else ', after the best global linear intensity map %.3g' % ncc_ratio_value, threshold)]


def make_metric(metric='ssd', lncc_radius=2, mi_bins=32):
    """The Metric object for a name (``METRICS``) or a Metric itself.

    Args:
        metric (str or Metric): 'ssd' (default), 'ncc', 'lncc', 'mi' or 'auto' (``METRICS``), or a
            Metric object (returned as is).
        lncc_radius (int): the box radius of 'lncc' and 'auto' in voxels; default 2 (the
            registrations' 0 is resolved before: :func:`resolve_lncc_radius`).
        mi_bins (int): the bins of 'mi'; default 32.

    Returns:
        Metric: a new SSD, NCC, LNCC, MI or Auto object (or ``metric`` itself).

    Raises:
        ConfigError: an unknown name, or a radius/bins out of range.

    Example:
        ``m = make_metric('lncc', lncc_radius=3)``
    """
    if isinstance(metric, Metric):
        return metric
    name = str(metric).lower() if isinstance(metric, str) else None
    if name == 'auto':
        return Auto(lncc_radius)
    if name == 'ssd':
        return SSD()
    if name == 'ncc':
        return NCC()
    if name == 'lncc':
        return LNCC(lncc_radius)
    if name == 'mi':
        return MI(mi_bins)
    raise ConfigError("unknown metric %r: choose one of %s" % (metric, ', '.join(METRICS)))
