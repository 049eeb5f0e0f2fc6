"""Loading an image pair for registration (the command line's input side).

    fixed, moving, mask = load_pair('fixed.nii.gz', 'moving.nii.gz',
                                    affine=False, mType=ca.MEM_HOST, mask_path=None,
                                    bias_correct=False, match_histogram=False)

* Both files are read with PyCA.Common.LoadITKImage (its clear errors for
  missing, unreadable or corrupt files pass through); 2-D images (size z == 1)
  and 3-D images are accepted, 4-D images (more than one volume) are refused
  with a ValueError, as is a 2-D / 3-D pair.
* The moving image is brought onto the fixed grid through world coordinates:
  origin, spacing and direction cosines of both files (SimpleITK
  ResampleImageFilter, linear interpolation, 0 outside the moving image).
  The returned moving image therefore shares the fixed image's grid (and
  direction, see PyCA.Common.GetDirection): the H-field of a registration
  of the pair is in voxel coordinates of the fixed grid.
* ``affine=True`` first aligns the moving image to the fixed one with
  SimpleITK's ImageRegistrationMethod (an AffineTransform started by
  CenteredTransformInitializer, Mattes mutual information or correlation,
  three resolution levels at about 2 mm), and resamples it with that
  transform.
* ``bias_correct=True`` first removes a smooth multiplicative bias field
  from each image (``bias_correct``: SimpleITK's N4 on a copy shrunk 1 to 4
  times, inside the Otsu foreground, the log field then evaluated on the
  full grid); ``match_histogram=True`` then maps the moving image's
  intensities onto the fixed image's histogram (``match_histogram``:
  SimpleITK HistogramMatchingImageFilter). Both are off here; the command
  lines (pyca-register, pyca-atlas) turn the bias correction on by default
  (PyCA.Apps._cli.BIAS_CORRECT_DEFAULT, measured in pyca-register's help).
* Both images are intensity-normalised (``normalize_intensity``: the 0.5th to
  99.5th percentile mapped to [0, 1], clipped) unless ``normalize=False``.
* ``mask_path``: a mask on the fixed image's space (any grid: it is resampled
  to the fixed grid by nearest neighbour); non-zero voxels are inside. The
  returned mask is a 0/1 Image3D on the fixed grid. An empty mask is a
  ValueError.

``info`` (a dict, optional) receives details: the original grids, whether
the moving image was resampled, the affine transform (matrix, translation,
centre, metric values, seconds), the intensity ranges used, ``bias_correct``
and ``match_histogram`` (the flags), ``bias_field`` (per image: N4's shrink
factor, mask voxels, field range, seconds) and ``histogram_matching``.
"""
import os
import time

import numpy as np

import PyCA.Core as ca
from PyCA.Common import LoadITKImage, GetDirection, SetDirection

from .transform import grid_record

__all__ = ['load_pair', 'normalize_intensity', 'load_image', 'check_not_4d', 'to_sitk', 'from_sitk',
           'resample_to', 'affine_align', 'bias_correct', 'match_histogram', 'foreground_mask']


def _sitk():
    try:
        import SimpleITK
    except ImportError as e:  # pragma: no cover - SimpleITK is installed with PyCA[apps]
        raise ImportError("PyCA.Apps.io needs SimpleITK (pip install SimpleITK)",
                          name='SimpleITK') from e
    return SimpleITK


# --------------------------------------------------------------------------- files

def check_not_4d(path, role):
    """ValueError for a file holding more than one volume (4-D and up).
    Unreadable files are left to LoadITKImage, which explains them.

    Args:
        path (str): the image file.
        role (str): the image's role in messages ('fixed', 'moving', ...).

    Raises:
        ValueError: a 4-D (or higher) image of more than one volume.
    """
    sitk = _sitk()
    if not os.path.isfile(path):
        return
    reader = sitk.ImageFileReader()
    reader.SetFileName(path)
    try:
        reader.ReadImageInformation()
    except Exception:
        return
    dim, size = reader.GetDimension(), reader.GetSize()
    if dim >= 4 and any(s > 1 for s in size[3:]):
        raise ValueError("%s image '%s' is %d-D (size %s); registration takes a 2-D or 3-D "
                         "image: extract one volume first"
                         % (role, path, dim, 'x'.join(str(s) for s in size)))


def load_image(path, role='image', mType=ca.MEM_HOST):
    """An Image3D from ``path`` (LoadITKImage, which reads the header once);
    the direction is recorded as LoadITKImage does. A file it refuses is
    then checked for more than one volume (:func:`check_not_4d`), which
    gets its own message.

    Args:
        path (str): the image file (NIfTI, MetaImage, NRRD, ... through SimpleITK).
        role (str): the image's role in messages ('fixed', 'moving', ...); default 'image'.
        mType (MemoryType): memory type of the result(s); default MEM_HOST.

    Returns:
        Image3D.

    Raises:
        ValueError: a 4-D (or higher) image, or one without voxels.
        ImportError: SimpleITK is missing.
    """
    path = os.fspath(path)
    try:
        im = LoadITKImage(path, ca.MEM_HOST)
    except Exception:
        check_not_4d(path, role)   # a 4-D file: say so
        raise
    if im.nVox() == 0:
        raise ValueError("%s image '%s' has no voxels" % (role, path))
    if mType != ca.MEM_HOST:
        im.toType(mType)
    return im


def _is2d(im):
    return im.size().z == 1


def _direction(im, dim):
    d = GetDirection(im)
    m = np.eye(3) if d is None else np.asarray(d, np.float64).reshape(3, 3)
    return m[:dim, :dim]


def _host_array(im):
    if im.memType() == ca.MEM_DEVICE:
        tmp = ca.Image3D(im.grid(), ca.MEM_HOST)
        ca.Copy(tmp, im)
        return np.array(tmp.asnp())
    return np.array(im.asnp())


# --------------------------------------------------------------------------- SimpleITK bridges

def to_sitk(im, dim=None, array=None):
    """A SimpleITK float32 image with the voxels (or ``array``, (x, y, z)),
    spacing, origin and direction of ``im``; 2-D when ``dim == 2`` (or z == 1).

    Args:
        im (Image3D): the image.
        dim (int, optional): 2 for a 2-D SimpleITK image; default None = 2 when z == 1, else 3.
        array (numpy.ndarray, optional): voxels (x, y, z) to use instead of ``im``'s; default None.

    Returns:
        SimpleITK.Image: float32.
    """
    sitk = _sitk()
    if dim is None:
        dim = 2 if _is2d(im) else 3
    a = _host_array(im) if array is None else np.asarray(array)
    a = np.ascontiguousarray(a.astype(np.float32, copy=False))
    if dim == 2:
        img = sitk.GetImageFromArray(np.ascontiguousarray(a[:, :, 0].T))
    else:
        img = sitk.GetImageFromArray(np.ascontiguousarray(a.T))
    img.SetSpacing([float(v) for v in tuple(im.spacing())[:dim]])
    img.SetOrigin([float(v) for v in tuple(im.origin())[:dim]])
    img.SetDirection([float(v) for v in _direction(im, dim).reshape(-1)])
    return img


def from_sitk(img, like):
    """An Image3D on ``like``'s grid (host memory) holding the voxels of the
    SimpleITK image ``img`` (which must have that size); ``like``'s
    direction is recorded on it.

    Args:
        img (SimpleITK.Image): the image, of ``like``'s size.
        like (Image3D): the image whose grid (and direction) the result takes.

    Returns:
        Image3D: host memory.
    """
    sitk = _sitk()
    a = sitk.GetArrayFromImage(img).T
    if a.ndim == 2:
        a = a[:, :, np.newaxis]
    out = ca.Image3D(like.grid(), ca.MEM_HOST)
    np.copyto(out.asnp(), a, casting='unsafe')
    d = GetDirection(like)
    if d is not None:
        SetDirection(out, d)
    return out


def resample_to(moving, fixed, transform=None, interp='linear', default=0.0):
    """``moving`` resampled onto ``fixed``'s grid through world coordinates
    (origin, spacing, direction; optional SimpleITK ``transform`` mapping
    fixed physical points to moving physical points). Host Image3D.

    Args:
        moving (Image3D): the image to resample.
        fixed (Image3D): the image whose grid (origin, spacing, direction) is the target.
        transform (SimpleITK.Transform, optional): fixed physical -> moving physical points; default
            None (identity).
        interp (str): 'linear' (default) or 'nearest'.
        default (float): value outside the moving image; default 0.0.

    Returns:
        Image3D: host memory, on ``fixed``'s grid.
    """
    sitk = _sitk()
    dim = 2 if (_is2d(fixed) and _is2d(moving)) else 3
    ref = to_sitk(fixed, dim, array=np.zeros(tuple(fixed.size()), np.float32))
    src = to_sitk(moving, dim)
    f = sitk.ResampleImageFilter()
    f.SetReferenceImage(ref)
    f.SetInterpolator({'linear': sitk.sitkLinear, 'nearest': sitk.sitkNearestNeighbor}[interp])
    f.SetDefaultPixelValue(float(default))
    f.SetOutputPixelType(sitk.sitkFloat32)
    if transform is not None:
        f.SetTransform(transform)
    return from_sitk(f.Execute(src), fixed)


def _same_geometry(a, b, tol=1e-5):
    if tuple(a.size()) != tuple(b.size()):
        return False
    for u, v in ((a.spacing(), b.spacing()), (a.origin(), b.origin())):
        if any(abs(x - y) > tol * max(1.0, abs(x), abs(y)) for x, y in zip(u, v)):
            return False
    dim = 2 if _is2d(a) else 3
    return np.allclose(_direction(a, dim), _direction(b, dim), atol=1e-6)


# --------------------------------------------------------------------------- intensities

def normalize_intensity(im, lo_pct=0.5, hi_pct=99.5, robust=True, mask=None):
    """Maps the intensities of ``im`` in place to [0, 1]: the ``lo_pct``-th
    percentile to 0 and the ``hi_pct``-th to 1, clipped (``robust=False``:
    the minimum and the maximum). Percentiles are taken inside ``mask``
    (an Image3D, non-zero = inside) when given. A constant image becomes 0.
    Returns ``(lo, hi)``, the values mapped to 0 and 1.

    Args:
        im (Image3D): the image.
        lo_pct (float): the percentile mapped to 0; default 0.5.
        hi_pct (float): the percentile mapped to 1; default 99.5.
        robust (bool): percentiles (True, default) or the minimum and maximum (False).
        mask (Image3D, optional): non-zero = the voxels the percentiles are taken over; default None
            (all).

    Returns:
        tuple: (lo, hi), the values mapped to 0 and 1.
    """
    a = _host_array(im).astype(np.float64)
    finite = np.isfinite(a)
    sel = finite
    if mask is not None:
        sel = finite & (_host_array(mask) != 0)
        if not sel.any():
            sel = finite
    vals = a[sel]
    if vals.size == 0:
        lo = hi = 0.0
    elif robust:
        lo, hi = (float(v) for v in np.percentile(vals, [lo_pct, hi_pct]))
        if not hi > lo:  # a mostly constant image: fall back to the full range
            lo, hi = float(vals.min()), float(vals.max())
    else:
        lo, hi = float(vals.min()), float(vals.max())
    if hi > lo:
        out = np.clip((a - lo) / (hi - lo), 0.0, 1.0)
    else:
        out = np.zeros_like(a)
    out[~finite] = 0.0
    if im.memType() == ca.MEM_DEVICE:
        tmp = ca.Image3D(im.grid(), ca.MEM_HOST)
        np.copyto(tmp.asnp(), out, casting='unsafe')
        ca.Copy(im, tmp)
    else:
        np.copyto(im.asnp(), out, casting='unsafe')
    return lo, hi


# --------------------------------------------------------------------------- preparation

def _shrink_for_n4(im, target=40, max_factor=4, min_size=8):
    """The N4 shrink factor: at most ``target`` voxels along a typical axis
    (the geometric mean of the sizes) after shrinking, between 1 and
    ``max_factor`` (48^3: 2, the MNI template at 2 mm: 3, at 1 mm: 4),
    keeping at least ``min_size`` voxels along the smallest axis (in-plane
    for 2-D)."""
    dim = 2 if _is2d(im) else 3
    size = tuple(int(v) for v in im.size())[:dim]
    typical = float(np.prod(size)) ** (1.0 / dim)
    f = int(np.clip(np.ceil(typical / float(target) - 1e-9), 1, max_factor))
    return max(1, min(f, min(size) // min_size))


def foreground_mask(im, dim=None):
    """The 0/1 SimpleITK UInt8 foreground of ``im`` (an Image3D): the Otsu
    threshold's bright class among the positive voxels (the positive voxels
    when Otsu leaves fewer than 1 % of them, e.g. a skull-stripped image).

    Args:
        im (Image3D): the image.
        dim (int, optional): 2 for a 2-D image; default None = 2 when z == 1, else 3.

    Returns:
        SimpleITK.Image: UInt8, 0/1.
    """
    sitk = _sitk()
    a = _host_array(im).astype(np.float64)
    pos = np.isfinite(a) & (a > 0)
    fg = pos
    vals = a[pos]
    if vals.size > 16 and vals.max() > vals.min():
        try:
            t = sitk.OtsuThresholdImageFilter()
            t.SetInsideValue(0)
            t.SetOutsideValue(1)
            t.SetNumberOfHistogramBins(128)
            t.Execute(to_sitk(im, dim))
            thr = float(t.GetThreshold())
            otsu = pos & (a > thr)
            if np.count_nonzero(otsu) >= 0.01 * np.count_nonzero(pos):
                fg = otsu
        except RuntimeError:
            pass
    img = sitk.Cast(to_sitk(im, dim, array=fg.astype(np.float32)), sitk.sitkUInt8)
    return img, int(np.count_nonzero(fg))


def bias_correct(im, mask=None, shrink=None, iterations=(50, 50, 50), info=None):
    """N4 bias-field correction (SimpleITK N4BiasFieldCorrectionImageFilter)
    of the Image3D ``im``; returns a new host Image3D on its grid.

    The field is estimated on a copy shrunk by ``shrink`` (default: 1 to 4,
    about 32 voxels along a typical axis) inside ``mask`` (an Image3D on
    ``im``'s grid, non-zero = inside; default :func:`foreground_mask`), with
    ``len(iterations)`` B-spline fitting levels (3: the finest mesh has 4
    elements per axis, about 50 mm on a head; a 4th level, SimpleITK's
    default, starts fitting anatomy: on the MNI template at 2 mm it doubles
    the field N4 puts on an unbiased image, and on the blobs of
    test_apps_prepare it leaves 0.10 of a 0.10 log-bias spread against 0.012
    with 3); the log bias field is then
    evaluated on the full-resolution grid (GetLogBiasFieldAsImage) and the
    image divided by its exponential. Negative values are set to 0 first (N4
    works on the logarithm of the intensities); an image with fewer than 32
    foreground voxels is returned as it is. ``info`` (a dict) receives the
    shrink factor, the mask size, the field's range and the seconds.

    Args:
        im (Image3D): the image.
        mask (Image3D, optional): on ``im``'s grid, non-zero = inside; default None =
            :func:`foreground_mask`.
        shrink (int, optional): the shrink factor of the estimate; default None = automatic (1 to
            4).
        iterations (sequence of int): N4 iterations per B-spline fitting level; default (50, 50,
            50).
        info (dict, optional): receives details of what was done; default None.

    Returns:
        Image3D: host memory, on ``im``'s grid.

    Raises:
        RuntimeError: N4 failed.
    """
    sitk = _sitk()
    t0 = time.perf_counter()
    dim = 2 if _is2d(im) else 3
    a = np.nan_to_num(_host_array(im).astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    np.maximum(a, 0.0, out=a)
    img = to_sitk(im, dim, array=a)
    if mask is not None:
        m = (_host_array(mask) != 0) & (a > 0)
        msk = sitk.Cast(to_sitk(im, dim, array=m.astype(np.float32)), sitk.sitkUInt8)
        nfg = int(np.count_nonzero(m))
    else:
        msk, nfg = foreground_mask(im, dim)
    f = _shrink_for_n4(im) if shrink is None else max(1, int(shrink))
    details = dict(shrink_factor=f, mask_voxels=nfg, iterations=[int(v) for v in iterations])
    out = ca.Image3D(im.grid(), ca.MEM_HOST)
    if nfg < 32:
        np.copyto(out.asnp(), a)
        details.update(applied=False, reason='fewer than 32 foreground voxels')
    else:
        small, small_mask = img, msk
        if f > 1:
            small = sitk.Shrink(img, [f] * dim)
            small_mask = sitk.Shrink(msk, [f] * dim)
            if not sitk.GetArrayViewFromImage(small_mask).any():
                small_mask = sitk.Cast(sitk.Shrink(img, [f] * dim) > 0, sitk.sitkUInt8)
        n4 = sitk.N4BiasFieldCorrectionImageFilter()
        n4.SetMaximumNumberOfIterations([int(v) for v in iterations])
        try:
            n4.Execute(small, small_mask)
            log_bias = n4.GetLogBiasFieldAsImage(img)
        except RuntimeError as e:
            msg = ' '.join(str(e).split())
            raise RuntimeError("the N4 bias-field correction failed: %s" % msg[-300:]) from None
        lb = sitk.GetArrayFromImage(log_bias).astype(np.float64).T
        if lb.ndim == 2:
            lb = lb[:, :, np.newaxis]
        fg = sitk.GetArrayFromImage(msk).T.reshape(a.shape) != 0
        if fg.any():
            lb = lb - lb[fg].mean()   # keep the foreground's mean intensity scale
        np.copyto(out.asnp(), (a / np.exp(lb)).astype(np.float32))
        field = np.exp(lb[fg]) if fg.any() else np.exp(lb.ravel())
        details.update(applied=True, field_min=float(field.min()), field_max=float(field.max()),
                       levels=len(iterations))
    d = GetDirection(im)
    if d is not None:
        SetDirection(out, d)
    details['seconds'] = time.perf_counter() - t0
    if info is not None:
        info.update(details)
    return out


def match_histogram(moving, reference, levels=256, match_points=15, info=None):
    """The Image3D ``moving`` with its intensity histogram matched to that
    of ``reference`` (any grid): SimpleITK HistogramMatchingImageFilter,
    ``levels`` histogram bins, ``match_points`` quantiles, the voxels below
    each image's mean (the background) left out of the histograms. Returns
    a new host Image3D on ``moving``'s grid.

    Args:
        moving (Image3D): the image whose histogram is changed.
        reference (Image3D): the image whose histogram is matched (any grid).
        levels (int): histogram bins; default 256.
        match_points (int): matched quantiles; default 15.
        info (dict, optional): receives details of what was done; default None.

    Returns:
        Image3D: host memory, on ``moving``'s grid.

    Raises:
        RuntimeError: the SimpleITK filter failed.
    """
    sitk = _sitk()
    t0 = time.perf_counter()
    src = to_sitk(moving, 2 if _is2d(moving) else 3)
    ref = to_sitk(reference, 2 if _is2d(reference) else 3)
    h = sitk.HistogramMatchingImageFilter()
    h.SetNumberOfHistogramLevels(int(levels))
    h.SetNumberOfMatchPoints(int(match_points))
    h.ThresholdAtMeanIntensityOn()
    try:
        res = h.Execute(src, ref)
    except RuntimeError as e:
        msg = ' '.join(str(e).split())
        raise RuntimeError("the histogram matching failed: %s" % msg[-300:]) from None
    out = from_sitk(res, moving)
    if info is not None:
        info.update(levels=int(levels), match_points=int(match_points),
                    seconds=time.perf_counter() - t0)
    return out


# --------------------------------------------------------------------------- affine

def _shrink_factors(im, target_mm=2.0, min_size=8, fine_min_size=32):
    """Three pyramid shrink factors (coarse to fine): the finest level about
    ``target_mm`` but keeping ``fine_min_size`` voxels along the smallest
    axis, the coarsest keeping ``min_size`` (in-plane for 2-D)."""
    dim = 2 if _is2d(im) else 3
    sp = min(tuple(im.spacing())[:dim])
    small = min(tuple(im.size())[:dim])
    fine = max(1, int(round(target_mm / sp))) if sp > 0 else 1
    fine = max(1, min(fine, small // fine_min_size))
    cap = max(1, small // min_size)
    facs = []
    for f in (4 * fine, 2 * fine, fine):
        f = min(f, cap)
        if not facs or f < facs[-1]:
            facs.append(f)
    return facs


def _mi_bins(nvox):
    """Histogram bins of Mattes MI: about nvox^(1/3) / 1.6, in [8, 50]
    (8 for 48 x 48, 20 for 32^3, 50 from about 2 * 10^6 voxels)."""
    return int(np.clip(round(float(nvox) ** (1.0 / 3.0) / 1.6), 8, 50))


def affine_align(fixed, moving, metric='mattes', mask=None, iterations=100, seed=1):
    """The SimpleITK AffineTransform (fixed physical -> moving physical)
    aligning ``moving`` to ``fixed`` (both Image3D, any grids), and a dict of
    details. Multi-resolution (three levels, finest about 2 mm), regular
    gradient descent with scales from physical shifts, Mattes mutual
    information (``metric='mattes'``; 8 to 50 bins, growing with the number
    of voxels: small images need few) or correlation
    (``metric='correlation'``), started from CenteredTransformInitializer
    (moments). ``mask`` (on the fixed grid) restricts the metric.

    Args:
        fixed (Image3D): the fixed image (any grid).
        moving (Image3D): the moving image (any grid).
        metric (str): 'mattes' (default), 'correlation' or 'mse'.
        mask (Image3D, optional): on the fixed grid: restricts the metric; default None.
        iterations (int): optimiser iterations per level; default 100.
        seed (int): the metric sampling's random seed; default 1.

    Returns:
        tuple: (SimpleITK.AffineTransform, dict of details).

    Raises:
        ValueError: an unknown ``metric``.
        RuntimeError: the registration failed.
    """
    sitk = _sitk()
    dim = 2 if (_is2d(fixed) and _is2d(moving)) else 3
    F, M = to_sitk(fixed, dim), to_sitk(moving, dim)
    t0 = time.perf_counter()
    try:
        init = sitk.CenteredTransformInitializer(F, M, sitk.AffineTransform(dim),
                                                 sitk.CenteredTransformInitializerFilter.MOMENTS)
    except RuntimeError:  # e.g. an all-zero image: no moments
        init = sitk.CenteredTransformInitializer(F, M, sitk.AffineTransform(dim),
                                                 sitk.CenteredTransformInitializerFilter.GEOMETRY)
    R = sitk.ImageRegistrationMethod()
    metric = str(metric).lower()
    if metric in ('mattes', 'mi', 'mutual_information'):
        R.SetMetricAsMattesMutualInformation(numberOfHistogramBins=_mi_bins(fixed.nVox()))
    elif metric in ('correlation', 'corr', 'ncc'):
        R.SetMetricAsCorrelation()
    elif metric in ('mse', 'meansquares'):
        R.SetMetricAsMeanSquares()
    else:
        raise ValueError("affine metric must be 'mattes', 'correlation' or 'mse', got %r" % metric)
    nvox = fixed.nVox()
    if nvox > 200000:
        R.SetMetricSamplingStrategy(R.REGULAR)
        R.SetMetricSamplingPercentage(max(0.02, 200000.0 / nvox), seed)
    else:
        R.SetMetricSamplingStrategy(R.NONE)
    if mask is not None:
        R.SetMetricFixedMask(sitk.Cast(to_sitk(mask, dim) > 0.5, sitk.sitkUInt8))
    R.SetInterpolator(sitk.sitkLinear)
    R.SetOptimizerAsRegularStepGradientDescent(learningRate=1.0, minStep=1e-4,
                                               numberOfIterations=int(iterations),
                                               relaxationFactor=0.6,
                                               gradientMagnitudeTolerance=1e-8)
    R.SetOptimizerScalesFromPhysicalShift()
    facs = _shrink_factors(fixed)
    R.SetShrinkFactorsPerLevel(facs)
    R.SetSmoothingSigmasPerLevel([max(0.0, f / 2.0) for f in facs])
    R.SmoothingSigmasAreSpecifiedInPhysicalUnitsOff()
    R.SetInitialTransform(init, inPlace=False)
    try:
        initial_metric = float(R.MetricEvaluate(F, M))
    except RuntimeError:
        initial_metric = float('nan')
    try:
        out = R.Execute(F, M)
    except RuntimeError as e:
        msg = ' '.join(str(e).split())
        raise RuntimeError("the affine pre-alignment failed: %s" % msg[-300:]) from None
    tx = out.GetBackTransform() if hasattr(out, 'GetBackTransform') else out
    try:
        tx = sitk.AffineTransform(tx)
    except (RuntimeError, TypeError):
        pass
    details = dict(metric=metric, shrink_factors=facs, initial_metric=initial_metric,
                   final_metric=float(R.GetMetricValue()),
                   optimizer_iterations=int(R.GetOptimizerIteration()),
                   stop=R.GetOptimizerStopConditionDescription(),
                   seconds=time.perf_counter() - t0)
    try:
        details['matrix'] = [float(v) for v in tx.GetMatrix()]
        details['translation'] = [float(v) for v in tx.GetTranslation()]
        details['center'] = [float(v) for v in tx.GetCenter()]
    except AttributeError:
        details['parameters'] = [float(v) for v in tx.GetParameters()]
    return tx, details


# --------------------------------------------------------------------------- the pair

def load_pair(fixed_path, moving_path, affine=False, mType=ca.MEM_HOST, mask_path=None,
              normalize=True, affine_metric='mattes', info=None, bias_correct=False,
              match_histogram=False):
    """(fixed, moving, mask): the fixed image, the moving image on the fixed
    grid (world coordinates; affinely pre-aligned with ``affine=True``), both
    intensity-normalised to [0, 1], and the 0/1 mask on the fixed grid (or
    None), all Image3D in ``mType`` memory. ``bias_correct``: N4 correction
    of both images first (:func:`bias_correct`); ``match_histogram``: the
    moving image's histogram matched to the fixed one's (after the bias
    correction, before the normalisation; :func:`match_histogram`). See the
    module notes.

    Args:
        fixed_path (str): the fixed image file.
        moving_path (str): the moving image file.
        affine (bool): affine pre-alignment of the moving image (:func:`affine_align`); default
            False.
        mType (MemoryType): memory type of the result(s); default MEM_HOST.
        mask_path (str, optional): a mask file (non-zero = inside), resampled onto the fixed grid;
            default None.
        normalize (bool): normalise both images to [0, 1] (:func:`normalize_intensity`); default
            True.
        affine_metric (str): the metric of the affine pre-alignment; default 'mattes'.
        info (dict, optional): receives details of what was done; default None.
        bias_correct (bool): N4 correction of both images first; default False.
        match_histogram (bool): match the moving image's histogram to the fixed one's; default
            False.

    Returns:
        tuple: (fixed Image3D, moving Image3D, mask Image3D or None).

    Raises:
        ValueError: images of different dimensions, a mask that does not fit or is empty, or images
            that do not overlap in world coordinates.
        RuntimeError: a failed pre-processing step.
    """
    info = {} if info is None else info
    info['bias_correct'] = bool(bias_correct)
    info['match_histogram'] = bool(match_histogram)
    fixed = load_image(fixed_path, 'fixed')
    moving = load_image(moving_path, 'moving')
    if _is2d(fixed) != _is2d(moving):
        raise ValueError("fixed image is %s (size %s) but moving image is %s (size %s); "
                         "give two 2-D or two 3-D images"
                         % ('2-D' if _is2d(fixed) else '3-D', 'x'.join(map(str, fixed.size())),
                            '2-D' if _is2d(moving) else '3-D', 'x'.join(map(str, moving.size()))))
    info['fixed_grid'] = grid_record(fixed)
    info['moving_grid'] = grid_record(moving)

    mask = None
    if mask_path is not None:
        mim = load_image(mask_path, 'mask')
        if _is2d(mim) != _is2d(fixed):
            raise ValueError("mask '%s' is %s but the fixed image is %s"
                             % (mask_path, '2-D' if _is2d(mim) else '3-D', '2-D' if _is2d(fixed) else '3-D'))
        a = _host_array(mim)
        mim.asnp()[...] = (np.isfinite(a) & (a != 0)).astype(np.float32)
        mask = mim if _same_geometry(mim, fixed) else resample_to(mim, fixed, interp='nearest')
        nin = int(np.count_nonzero(mask.asnp()))
        if nin == 0:
            raise ValueError("mask '%s' is empty on the fixed image's grid (no non-zero voxel)"
                             % mask_path)
        info['mask_voxels'] = nin

    if bias_correct:
        info['bias_field'] = {}
        for role in ('fixed', 'moving'):
            d = info['bias_field'][role] = {}
            im = bias_correct_image(fixed if role == 'fixed' else moving, info=d)
            if role == 'fixed':
                fixed = im
            else:
                moving = im
    if match_histogram:
        info['histogram_matching'] = {}
        moving = match_histogram_image(moving, fixed, info=info['histogram_matching'])

    if normalize:
        info['fixed_range'] = normalize_intensity(fixed, mask=mask)
        info['moving_range'] = normalize_intensity(moving)

    tx = None
    if affine:
        tx, info['affine'] = affine_align(fixed, moving, metric=affine_metric, mask=mask)
        info['affine_transform'] = tx
    if tx is not None or not _same_geometry(moving, fixed):
        src = moving
        moving = resample_to(moving, fixed, transform=tx)
        info['resampled'] = True
        a = np.asarray(moving.asnp())
        if np.count_nonzero(np.asarray(src.asnp())) and not np.count_nonzero(a):
            raise ValueError("the moving image does not overlap the fixed image in world "
                             "coordinates (nothing of it lands on the fixed grid): check the "
                             "origins and directions of '%s' and '%s'" % (fixed_path, moving_path))
    else:
        info['resampled'] = False
        d = GetDirection(fixed)
        SetDirection(moving, d)

    out = []
    for im in (fixed, moving, mask):
        if im is not None and mType != ca.MEM_HOST:
            d = GetDirection(im)
            im.toType(mType)
            SetDirection(im, d)
        out.append(im)
    return tuple(out)


bias_correct_image = bias_correct          # the names load_pair's keywords hide
match_histogram_image = match_histogram

