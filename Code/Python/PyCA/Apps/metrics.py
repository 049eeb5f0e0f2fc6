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
* ``mi``: Mattes mutual information (``PyCA.Core.MutualInformation``:
  cubic B-spline Parzen windows, ``bins`` bins over each image's range,
  deterministic on the CPU); ``E = -N vol a MI`` (a: the fixed image's
  variance, for SSD-like units). For images of different contrasts (T1
  against T2): unchanged by any invertible intensity remap of either image.

Every metric runs on MEM_HOST and MEM_DEVICE through PyCA.Core operators
(no NumPy in the hot path). Bad parameters raise ConfigError; a constant
image (NCC, LNCC, MI undefined) raises ValueError from ``prepare``.
"""
import math

import PyCA.Core as ca

from ._common import ConfigError

__all__ = ['METRICS', 'Metric', 'SSD', 'NCC', 'LNCC', 'MI', 'make_metric']

#: the metric names ``metric=`` accepts
METRICS = ('ssd', 'ncc', 'lncc', 'mi')


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
    """Global normalised cross-correlation (module notes)."""
    name = 'ncc'

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
        # force = (c/b) [(I - mI) - (c/b) (J - mJ)]
        tmp = self._tmp(fixed, 'ncc_t')
        ca.MulC(force, fixed, r)
        ca.MulC(tmp, deformed, -r * r)
        ca.Add_I(force, tmp)
        ca.AddC_I(force, -r * mI + r * r * mJ)
        return n * vol * (a - c * c / b)


class LNCC(Metric):
    """Local normalised cross-correlation over boxes of ``radius`` voxels
    (module notes).

    Args:
        radius (int): half-width of the boxes in voxels (a (2r+1)^d window); default 2; 1 to 2^20.

    Raises:
        ConfigError: ``radius`` is not a whole number from 1 to 2^20.
    """
    name = 'lncc'

    def __init__(self, radius=2):
        Metric.__init__(self)
        self.radius = _whole(radius, 1, 1 << 20, "lncc_radius must be a whole number of voxels >= 1")
        self._eps = None

    def describe(self):
        """The metric and its parameters, for summaries.

        Returns:
            dict: ``{'metric': 'lncc', 'lncc_radius': radius}``.
        """
        return {'metric': self.name, 'lncc_radius': self.radius}

    def _box(self, out, im):
        s = im.size()
        r = self.radius
        ca.BoxFilter(out, im, ca.Vec3Di(r if s.x > 1 else 0, r if s.y > 1 else 0, r if s.z > 1 else 0),
                     ca.BC_APPROX, self._tmp(im, 'lncc_box'))

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
        return self

    def _count(self, like):
        """n(x): the voxels in the (truncated) window of x, once per grid."""
        cnt = self._tmp(like, 'lncc_n')
        if getattr(self, '_n', None) is not cnt:
            ca.SetMem(cnt, 1.0)
            self._box(cnt, cnt)
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
        self._count(fixed)
        t = lambda name: self._tmp(fixed, 'lncc_' + name)   # noqa: E731
        n, sI, sJ, A, B, C, u, v, w = (t(k) for k in ('n', 'sI', 'sJ', 'A', 'B', 'C', 'u', 'v', 'w'))
        Ibar, Ac = self._fixed_stats(fixed)                # the fixed image's: mean, centred A
        vol = fixed.grid().voxelVol()
        self._box(sJ, deformed)
        ca.Sqr(w, deformed)
        self._box(B, w)
        ca.Mul(w, fixed, deformed)
        self._box(C, w)
        # centred sums: B -= sJ^2/n, C -= sI sJ/n = Ibar sJ  (v = sJ/n = J mean);
        # fused operators (Sub_Mul_I: a -= b c, ...): one pass each
        ca.Div(v, sJ, n)
        ca.Sub_Mul_I(B, v, sJ)
        ca.Sub_Mul_I(C, Ibar, sJ)
        ca.AddC_I(B, self._eps)                        # D = B + eps
        # energy: sum_w (A - C^2/D) / n
        ca.Div(A, C, B)                                # A <- C/D
        ca.Mul(w, A, C)                                # w <- C^2/D
        ca.SubDiv(sI, Ac, w, n)                        # sI <- (A - C^2/D) / n
        e = ca.Sum(sI) * vol
        # force(x) = I Box(g) - Box(g Ibar) - J Box(g2) + Box(g2 Jbar),
        # g = C / (D n), g2 = C^2 / (D^2 n)
        ca.Div(sI, A, n)                               # sI <- g
        ca.Mul(sJ, A, sI)                              # sJ <- g2 = (C/D) g
        ca.Mul(u, Ibar, sI)                            # u <- g Ibar
        ca.Mul_I(v, sJ)                                # v <- g2 Jbar
        self._box(sI, sI)
        self._box(sJ, sJ)
        self._box(u, u)
        self._box(v, v)
        ca.MulSub(force, fixed, sI, u)                 # I Box(g) - Box(g Ibar)
        ca.Sub_Mul_I(force, deformed, sJ)              # - J Box(g2)
        ca.Add_I(force, v)                             # + Box(g2 Jbar)
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
        n, w = self._n, self._tmp(fixed, 'lncc_w')
        self._box(Ibar, fixed)                          # Box(I)
        ca.Sqr(w, fixed)
        self._box(Ac, w)                                # Box(I^2)
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


def make_metric(metric='ssd', lncc_radius=2, mi_bins=32):
    """The Metric object for a name (``METRICS``) or a Metric itself.

    Args:
        metric (str or Metric): 'ssd' (default), 'ncc', 'lncc' or 'mi' (``METRICS``), or a Metric
            object (returned as is).
        lncc_radius (int): the box radius of 'lncc' in voxels; default 2.
        mi_bins (int): the bins of 'mi'; default 32.

    Returns:
        Metric: a new SSD, NCC, LNCC or MI object (or ``metric`` itself).

    Raises:
        ConfigError: an unknown name, or a radius/bins out of range.

    Example:
        ``m = make_metric('lncc', lncc_radius=3)``
    """
    if isinstance(metric, Metric):
        return metric
    name = str(metric).lower() if isinstance(metric, str) else None
    if name == 'ssd':
        return SSD()
    if name == 'ncc':
        return NCC()
    if name == 'lncc':
        return LNCC(lncc_radius)
    if name == 'mi':
        return MI(mi_bins)
    raise ConfigError("unknown metric %r: choose one of %s" % (metric, ', '.join(METRICS)))
