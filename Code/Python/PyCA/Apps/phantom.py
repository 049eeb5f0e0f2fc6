"""The demo's registration phantom: the MNI brain template and a known,
large, smooth, invertible random deformation of it.

Template
--------
``load_mni(spacing_mm=2.0)`` reads the ICBM 2009a nonlinear symmetric T1
template (197 x 233 x 189 voxels, 1 mm) that nilearn ships in its package
data (``nilearn/datasets/data/mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz``;
no download), and its brain mask: grey + white matter probability
(``..._gm_...`` + ``..._wm_...``) > 0.5. Both are brought to ``spacing_mm``
with PyCA.Core itself: a Gaussian pre-smoothing (``GaussianFilterCPU``,
sigma = f/2 voxels of the 1 mm grid on each axis where f = spacing_mm / 1 mm
is the down-sampling factor, radius ceil(3 sigma); nothing when f <= 1)
followed by trilinear resampling through world coordinates
(``ResampleWorld``, CLAMP) onto a grid of the same origin (the first voxel
centre) covering the same extent: size floor((n - 1) / f) + 1 per axis, so
99 x 117 x 95 at 2 mm and 50 x 59 x 48 at 4 mm. The mask is the resampled
grey + white probability thresholded at 0.5; the T1 image is normalised to
[0, 1] (min / max over the grid). The direction cosines of the file are kept
on both (PyCA.Common.SetDirection), so saved outputs sit where the template
does.

Deformation
-----------
``random_deformation(grid, max_disp_mm=8.0, smoothness_mm=20.0, seed=0)``
returns ``(psi, h_true)``, two H-fields (voxel coordinates) that are inverse
of each other:

1. white noise (``numpy.random.default_rng(seed)``, standard normal, one
   array per component) is smoothed by a Gaussian of standard deviation
   ``smoothness_mm`` (in mm on each axis, applied in Fourier space, periodic),
   which gives a stationary velocity field v (physical units, mm);
2. v is multiplied by a taper that is 1 inside and falls smoothly (sin^2) to
   0 over the outer ``min(smoothness_mm, extent / 4)`` of each axis, so the
   deformation is the identity on the image border and maps the grid onto
   itself;
3. h_true = exp(+v) and psi = exp(-v), each by scaling and squaring: the
   field x + v / (2^K spacing) (``VtoH``, max step <= 1/64 voxel) composed with
   itself K times (``ComposeHH``);
4. v is rescaled (a few secant steps) until the largest displacement
   ``|h_true(x) - x| * spacing`` inside ``mask`` (the whole grid without one)
   equals ``max_disp_mm`` (to 0.5 %).

Then ``JacDetHVoxel(psi) > 0`` and ``JacDetHVoxel(h_true) > 0`` are checked
everywhere (a RuntimeError otherwise). The demo deforms the fixed image with
psi, ``moving = ApplyH(fixed, psi)``, so the H-field a registration returns
(``deformed = ApplyH(moving, h)``) should be ``h = psi^-1 = h_true``, and
``deformation_error(h, h_true, mask, spacing)`` measures how close it is (in
mm, inside the brain).

Measured with the defaults (seed 0, 8 mm, 20 mm): at 2 mm (99 x 117 x 95,
218135 brain voxels) the displacement is 8.0 mm at its largest in the brain
and 3.7 mm on average, JacDetHVoxel(psi) lies in [0.61, 1.75] and JacDetHVoxel(h_true)
in [0.57, 1.64], and psi o h_true is the identity to 0.052 voxel at worst
(0.041 in the brain, 0.004 on average); at 4 mm (50 x 59 x 48, 27496 brain
voxels): mean 3.4 mm, JacDetHVoxel(psi) in [0.63, 1.47], psi o h_true within
0.058 voxel (0.034 in the brain, 0.006 on average). The residual is the
trilinear interpolation of the check's own ComposeHH. Generating it takes
well under a second at 2 mm.
"""
import math
import os

import numpy as np

import PyCA.Core as ca

__all__ = ['mni_template_path', 'mni_brain_mask_path', 'mni_tissue_paths', 'load_mni',
           'random_deformation', 'deformation_error', 'displacement_mm', 'resample_to_spacing',
           'MNI_FILES']

MNI_FILES = {
    't1': 'mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz',
    'gm': 'mni_icbm152_gm_tal_nlin_sym_09a_converted.nii.gz',
    'wm': 'mni_icbm152_wm_tal_nlin_sym_09a_converted.nii.gz',
}


# --------------------------------------------------------------------------- files

def _nilearn_data_dir():
    try:
        import importlib.util
        spec = importlib.util.find_spec('nilearn')
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the MNI template comes with the nilearn package, which is not "
                          "installed (pip install nilearn; ./run installs it)", name='nilearn')
    for base in spec.submodule_search_locations:
        d = os.path.join(base, 'datasets', 'data')
        if os.path.isdir(d):
            return d
    raise FileNotFoundError("nilearn is installed but has no datasets/data folder "
                            "(under %s)" % ', '.join(spec.submodule_search_locations))


def _data_file(key):
    d = _nilearn_data_dir()
    p = os.path.join(d, MNI_FILES[key])
    if not os.path.isfile(p):
        raise FileNotFoundError("nilearn's package data has no %s (in %s); reinstall nilearn"
                                % (MNI_FILES[key], d))
    return p


def mni_template_path():
    """The path of the ICBM 2009a symmetric T1 template (1 mm) in nilearn's
    package data (ImportError naming nilearn when it is not installed)."""
    return _data_file('t1')


def mni_tissue_paths():
    """(grey matter, white matter) probability maps of the same template."""
    return _data_file('gm'), _data_file('wm')


def mni_brain_mask_path():
    """The file the brain mask is made from: the grey matter probability map
    (the mask is gm + wm > 0.5; ``mni_tissue_paths`` gives both files)."""
    return _data_file('gm')


# --------------------------------------------------------------------------- template

def resample_to_spacing(im, spacing_mm):
    """``im`` (host) smoothed and resampled to ``spacing_mm`` (module notes).

    Args:
        im (Image3D): the image, host memory.
        spacing_mm (float): the new spacing in mm (every axis).

    Returns:
        Image3D: host memory, on the new grid.
    """
    g = im.grid()
    size, sp, org = g.size(), g.spacing(), g.origin()
    fac = [float(spacing_mm) / sp[d] for d in range(3)]
    src = im
    if max(fac) > 1.0 + 1e-6:
        sig = [max(f, 1.0) / 2.0 if f > 1.0 + 1e-6 else 0.0 for f in fac]
        rad = [int(math.ceil(3 * s)) if s > 0 else 0 for s in sig]
        filt = ca.GaussianFilterCPU()
        filt.updateParams(g.size(), ca.Vec3Df(*[max(s, 1e-3) for s in sig]), ca.Vec3Di(*rad))
        src = ca.Image3D(g, ca.MEM_HOST)
        tmp = ca.Image3D(g, ca.MEM_HOST)
        filt.filter(src, im, tmp)
    new_size = [int(math.floor((size[d] - 1) / fac[d] + 1e-6)) + 1 if size[d] > 1 else 1 for d in range(3)]
    ng = ca.GridInfo(ca.Vec3Di(*new_size), ca.Vec3Df(*[float(spacing_mm)] * 3),
                     ca.Vec3Df(org[0], org[1], org[2]))
    out = ca.Image3D(ng, ca.MEM_HOST)
    ca.ResampleWorld(out, src, ca.BACKGROUND_STRATEGY_CLAMP)
    return out


def load_mni(spacing_mm=2.0, mType=ca.MEM_HOST):
    """(T1 template normalised to [0, 1], brain mask 0/1) on a ``spacing_mm``
    grid (module notes: Gaussian pre-smoothing, then ResampleWorld), both
    Image3D in ``mType`` memory.

    Args:
        spacing_mm (float): the grid spacing in mm (isotropic); default 2.0.
        mType (MemoryType): memory type of the results; default MEM_HOST.

    Returns:
        tuple: (template Image3D, mask Image3D).

    Raises:
        ValueError: ``spacing_mm`` is not a positive number.
        ImportError: nilearn is not installed.
        FileNotFoundError: nilearn lacks the MNI template data.
    """
    from PyCA.Common import LoadITKImage, GetDirection, SetDirection
    spacing_mm = float(spacing_mm)
    if not (spacing_mm > 0 and math.isfinite(spacing_mm)):
        raise ValueError("spacing_mm must be a positive number, got %r" % spacing_mm)
    t1 = LoadITKImage(mni_template_path(), ca.MEM_HOST)
    direction = GetDirection(t1)
    gm_p, wm_p = mni_tissue_paths()
    gm = LoadITKImage(gm_p, ca.MEM_HOST)
    wm = LoadITKImage(wm_p, ca.MEM_HOST)
    ca.Add_I(gm, wm)
    # the maps are stored as 0..255 (uint8) in nilearn's files: to probabilities
    pmax = float(gm.asnp().max())
    if pmax > 1.5:
        ca.MulC_I(gm, 1.0 / 255.0)
    t1 = resample_to_spacing(t1, spacing_mm)
    brain = resample_to_spacing(gm, spacing_mm)
    a = t1.asnp()
    lo, hi = float(a.min()), float(a.max())
    a -= lo
    a *= 1.0 / (hi - lo if hi > lo else 1.0)
    np.clip(a, 0.0, 1.0, out=a)
    b = brain.asnp()
    b[...] = (b > 0.5).astype(np.float32)
    out = []
    for im in (t1, brain):
        if mType != ca.MEM_HOST:
            d = ca.Image3D(im.grid(), mType)
            ca.Copy(d, im)
            im = d
        if direction is not None:
            SetDirection(im, direction)
        out.append(im)
    return out[0], out[1]


#: The re-acquisition of ``rescan`` (the defaults of the demo's ``--rescan``):
#: a smooth multiplicative bias field of about +-``bias`` (Gaussian-smoothed
#: noise of ``bias_smoothness_mm``, scaled so its largest deviation inside
#: the image is ``bias``), a gamma contrast change ``I ** gamma`` and
#: Gaussian noise of standard deviation ``noise_sd`` (intensities in [0, 1]).
RESCAN = dict(bias=0.2, bias_smoothness_mm=40.0, gamma=0.75, noise_sd=0.03, seed=1)


def load_mni_tissues(spacing_mm=2.0):
    """(grey matter, white matter) probabilities (0..1, host Image3Ds) on the
    grid of ``load_mni(spacing_mm)``.

    Args:
        spacing_mm (float): the grid spacing in mm (isotropic); default 2.0.

    Returns:
        tuple: (grey matter Image3D, white matter Image3D).
    """
    from PyCA.Common import LoadITKImage
    out = []
    for p in mni_tissue_paths():
        im = LoadITKImage(p, ca.MEM_HOST)
        if float(im.asnp().max()) > 1.5:
            ca.MulC_I(im, 1.0 / 255.0)
        out.append(resample_to_spacing(im, spacing_mm))
    return out[0], out[1]


def t2_like(t1, spacing_mm=2.0):
    """A T2-like image of the template on ``t1``'s grid (``t1``: the
    ``load_mni`` image of the same spacing), made from its tissue maps:
    background dark, CSF bright (0.95), grey matter mid (0.55), white matter
    dark (0.25), other head tissue 0.35. CSF is what the brain's envelope
    (the grey + white mask, closed by a 6 mm Gaussian) holds besides grey and
    white matter: the ventricles and sulci. Intensities are not a monotone
    function of the T1's: only a metric like ``mi`` relates the two.

    Args:
        t1 (Image3D): the ``load_mni`` image of the same spacing (its grid is used).
        spacing_mm (float): the grid spacing in mm (isotropic); default 2.0.

    Returns:
        Image3D: the T2-like image, host memory.
    """
    from scipy import ndimage
    gm, wm = (np.array(im.asnp(), np.float64) for im in load_mni_tissues(spacing_mm))
    T1 = np.array(t1.asnp(), np.float64) if t1.memType() != ca.MEM_DEVICE else None
    if T1 is None:
        h = ca.Image3D(t1.grid(), ca.MEM_HOST)
        ca.Copy(h, t1)
        T1 = np.array(h.asnp(), np.float64)
    sp = [t1.grid().spacing()[d] for d in range(3)]
    brain = ((gm + wm) > 0.5).astype(np.float64)
    envelope = ndimage.gaussian_filter(brain, [6.0 / s for s in sp]) > 0.3
    envelope = ndimage.binary_fill_holes(envelope)
    csf = np.clip(envelope - gm - wm, 0.0, 1.0)
    head = ndimage.binary_fill_holes(T1 > 0.12) & ~envelope
    t2 = 0.95 * csf + 0.55 * gm + 0.25 * wm + 0.35 * head
    t2 = ndimage.gaussian_filter(t2, [0.5] * 3)
    out = ca.Image3D(t1.grid(), ca.MEM_HOST)
    out.asnp()[...] = np.clip(t2, 0.0, 1.0).astype(np.float32)
    from PyCA.Common import GetDirection, SetDirection
    if GetDirection(t1) is not None:
        SetDirection(out, GetDirection(t1))
    return out


def rescan(im, bias=RESCAN['bias'], bias_smoothness_mm=RESCAN['bias_smoothness_mm'],
           gamma=RESCAN['gamma'], noise_sd=RESCAN['noise_sd'], seed=RESCAN['seed']):
    """(image, info): ``im`` (intensities in [0, 1], host) as another scanner
    session would give it: ``(clip(im, 0, 1) ** gamma) * b + noise``, b a smooth
    bias field of +-``bias`` and Gaussian noise of ``noise_sd``; seeded.

    Args:
        im (Image3D): the image, intensities in [0, 1], host memory.
        bias (float): amplitude of the multiplicative bias field (+-bias); default 0.2.
        bias_smoothness_mm (float): Gaussian smoothing of the bias field, mm; default 40.
        gamma (float): intensity exponent; default 0.75.
        noise_sd (float): standard deviation of the Gaussian noise; default 0.03.
        seed (int): the random seed; default 1 for rescan, 0 for random_deformation.

    Returns:
        tuple: (Image3D, dict of the parameters used).
    """
    rng = np.random.default_rng(seed)
    g = im.grid()
    shape = tuple(int(v) for v in g.size())
    sp = [g.spacing()[d] for d in range(3)]
    b = _smooth_noise(shape, sp, bias_smoothness_mm, rng)[0]
    b *= float(bias) / max(np.abs(b).max(), 1e-12)
    field = 1.0 + b
    a = np.clip(np.array(im.asnp(), np.float64), 0.0, 1.0) ** float(gamma)
    a = a * field + rng.normal(0.0, float(noise_sd), shape)
    out = ca.Image3D(g, ca.MEM_HOST)
    out.asnp()[...] = a.astype(np.float32)
    from PyCA.Common import GetDirection, SetDirection
    if GetDirection(im) is not None:
        SetDirection(out, GetDirection(im))
    info = dict(bias=float(bias), bias_smoothness_mm=float(bias_smoothness_mm), gamma=float(gamma),
                noise_sd=float(noise_sd), seed=int(seed),
                bias_range=[float(field.min()), float(field.max())])
    return out, info


# --------------------------------------------------------------------------- deformation

def _host_comps(f):
    """(x, y, z) float64 NumPy copies of a Field3D's components."""
    if f.memType() == ca.MEM_DEVICE:
        h = ca.Field3D(f.grid(), ca.MEM_HOST)
        ca.Copy(h, f)
        f = h
    return [np.array(c, dtype=np.float64) for c in f.asnp()]


def _identity_comps(size):
    return [np.arange(size[d], dtype=np.float64).reshape([-1 if e == d else 1 for e in range(3)])
            for d in range(3)]


def displacement_mm(h, spacing=None):
    """``|h(x) - x| * spacing`` (mm) as an (X, Y, Z) float64 array.

    Args:
        h (Field3D): an H-field (voxel coordinates).
        spacing (Vec3Df or 3 numbers, optional): the spacing in mm; default None = the field's grid
            spacing.

    Returns:
        numpy.ndarray: float64 array of shape (X, Y, Z).
    """
    g = h.grid()
    sp = [g.spacing()[d] for d in range(3)] if spacing is None else [float(s) for s in spacing]
    comps = _host_comps(h)
    ident = _identity_comps([g.size()[d] for d in range(3)])
    return np.sqrt(sum(((c - i) * s) ** 2 for c, i, s in zip(comps, ident, sp)))


def _smooth_noise(shape, spacing, sigma_mm, rng):
    """Three standard normal arrays, each convolved (periodically, in Fourier
    space) with a Gaussian of std sigma_mm (mm)."""
    freqs = []
    for d, n in enumerate(shape):
        f = np.fft.rfftfreq(n, d=spacing[d]) if d == 2 else np.fft.fftfreq(n, d=spacing[d])
        freqs.append(f.reshape([-1 if e == d else 1 for e in range(3)]))
    gain = np.exp(-2.0 * (np.pi * sigma_mm) ** 2 * sum(f ** 2 for f in freqs))
    out = []
    for _ in range(3):
        w = rng.standard_normal(shape)
        out.append(np.fft.irfftn(np.fft.rfftn(w) * gain, s=shape, axes=(0, 1, 2)))
    return out


def _taper(shape, spacing, width_mm):
    """Product over the axes of a ramp 0 -> 1 (sin^2) over width_mm at each end."""
    t = np.ones(shape)
    for d, n in enumerate(shape):
        if n <= 1:
            continue
        ext = (n - 1) * spacing[d]
        w = min(width_mm, ext / 4.0)
        x = np.arange(n) * spacing[d]
        dist = np.minimum(x, ext - x)
        r = np.where(dist >= w, 1.0, np.sin(0.5 * np.pi * np.clip(dist / w, 0.0, 1.0)) ** 2)
        t = t * r.reshape([-1 if e == d else 1 for e in range(3)])
    return t


def _exp_field(v, sign, spacing, scratch):
    """exp(sign * v) as an H-field by scaling and squaring (module notes)."""
    vmax_vox = max(float(np.abs(c).max()) / s for c, s in zip(v.asnp(), spacing))
    K = max(6, int(math.ceil(math.log2(max(vmax_vox, 1e-12) * 64.0))))
    h = ca.Field3D(v.grid(), ca.MEM_HOST)
    ca.VtoH(h, v, float(sign) / 2.0 ** K)
    a, b = h, scratch
    for _ in range(K):
        ca.ComposeHH(b, a, a)
        a, b = b, a
    if a is not h:
        ca.Copy(h, a)
    return h


def random_deformation(grid, max_disp_mm=8.0, smoothness_mm=20.0, seed=0, mask=None,
                       mType=ca.MEM_HOST):
    """(psi, h_true): a smooth invertible random deformation of ``grid`` and
    its inverse, H-fields in voxel coordinates (module notes).

    psi = exp(-v), h_true = exp(+v) for a Gaussian-smoothed random stationary
    velocity field v, scaled so that the largest displacement of h_true inside
    ``mask`` (an Image3D, > 0.5 = inside; None = the whole grid) is
    ``max_disp_mm``. Deterministic for a given ``seed``. Use it as
    ``moving = ApplyH(fixed, psi)``: a registration of moving onto fixed
    should return h ~ h_true. RuntimeError if a Jacobian determinant is not
    positive everywhere (does not happen for smoothness_mm >~ 2 max_disp_mm).

    Args:
        grid (GridInfo): the grid of the deformation.
        max_disp_mm (float): the largest displacement of h_true inside ``mask``, mm; default 8.
        smoothness_mm (float): standard deviation of the velocity's Gaussian smoothing, mm; default
            20.
        seed (int): the random seed; default 1 for rescan, 0 for random_deformation.
        mask (Image3D, optional): the voxels that count (> 0.5), on the field's grid; default None
            (all).
        mType (MemoryType): memory type of the results; default MEM_HOST.

    Returns:
        tuple: (psi Field3D, h_true Field3D), H-fields in voxel coordinates.

    Raises:
        ValueError: ``max_disp_mm`` < 0, ``smoothness_mm`` <= 0, or an empty mask.
        RuntimeError: a Jacobian determinant <= 0 (not invertible).
    """
    if not (max_disp_mm >= 0 and smoothness_mm > 0):
        raise ValueError("max_disp_mm must be >= 0 and smoothness_mm > 0, got %r, %r"
                         % (max_disp_mm, smoothness_mm))
    size = [grid.size()[d] for d in range(3)]
    sp = [float(grid.spacing()[d]) for d in range(3)]
    g = ca.GridInfo(ca.Vec3Di(*size), ca.Vec3Df(*sp), grid.origin())
    rng = np.random.default_rng(seed)
    noise = _smooth_noise(tuple(size), sp, float(smoothness_mm), rng)
    if size[2] == 1:  # 2-D: no z motion
        noise[2][...] = 0.0
    taper = _taper(tuple(size), sp, float(smoothness_mm))
    base = [n * taper for n in noise]
    inside = None
    if mask is not None:
        m = mask
        if m.memType() == ca.MEM_DEVICE:
            mh = ca.Image3D(m.grid(), ca.MEM_HOST)
            ca.Copy(mh, m)
            m = mh
        inside = np.array(m.asnp()) > 0.5
        if not inside.any():
            raise ValueError("random_deformation: the mask is empty")
    mag = np.sqrt(sum(b ** 2 for b in base))
    peak = float(mag[inside].max() if inside is not None else mag.max())
    base = [b / peak for b in base]  # |v| peaks at 1 mm (in the mask) for scale 1
    v = ca.Field3D(g, ca.MEM_HOST)
    scratch = ca.Field3D(g, ca.MEM_HOST)

    def disp_peak(scale):
        for view, b in zip(v.asnp(), base):
            view[...] = b * scale
        h = _exp_field(v, +1, sp, scratch)
        d = displacement_mm(h)
        return float(d[inside].max() if inside is not None else d.max()), h

    target = float(max_disp_mm)
    if target == 0:
        scale = 0.0
        got, h_true = disp_peak(0.0)
    else:
        s0, (d0, h_true) = target, disp_peak(target)
        scale, got = s0, d0
        s1 = s0 * target / d0
        for _ in range(8):
            if abs(got - target) <= 0.005 * target:
                break
            d1, h1 = disp_peak(s1)
            scale, got, h_true = s1, d1, h1
            if abs(d1 - d0) < 1e-9:
                break
            s0, d0, s1 = s1, d1, s1 + (target - d1) * (s1 - s0) / (d1 - d0)
    for view, b in zip(v.asnp(), base):
        view[...] = b * scale
    psi = _exp_field(v, -1, sp, scratch)
    jac = ca.Image3D(g, ca.MEM_HOST)
    for name, f in (('psi', psi), ('h_true', h_true)):
        ca.JacDetHVoxel(jac, f)
        jmin = float(jac.asnp().min())
        if not jmin > 0:
            raise RuntimeError("random_deformation: %s folds (min Jacobian determinant %.3g); use a "
                               "larger smoothness_mm or a smaller max_disp_mm" % (name, jmin))
    random_deformation.last_info = dict(scale=scale, peak_disp_mm=got)
    out = []
    for f in (psi, h_true):
        if mType != ca.MEM_HOST:
            d = ca.Field3D(g, mType)
            ca.Copy(d, f)
            f = d
        out.append(f)
    return out[0], out[1]


def deformation_error(h, h_true, mask=None, spacing=None):
    """dict(mean_mm, p95_mm, max_mm, n_voxels) of ``|h - h_true| * spacing`` (mm)
    over the voxels where ``mask`` > 0.5 (None: all). ``spacing`` defaults to
    h's grid spacing (a Vec3Df or 3 numbers).

    Args:
        h (Field3D): an H-field (voxel coordinates).
        h_true (Field3D): the true H-field, same grid as ``h``.
        mask (Image3D, optional): the voxels that count (> 0.5), on the field's grid; default None
            (all).
        spacing (Vec3Df or 3 numbers, optional): the spacing in mm; default None = the field's grid
            spacing.

    Returns:
        dict: mean_mm, p95_mm, max_mm (floats) and n_voxels (int).

    Raises:
        ValueError: fields of different sizes, or an empty mask.
    """
    g = h.grid()
    if tuple(g.size()) != tuple(h_true.grid().size()):
        raise ValueError("deformation_error: h and h_true have different sizes (%s, %s)"
                         % (tuple(g.size()), tuple(h_true.grid().size())))
    sp = ([g.spacing()[d] for d in range(3)] if spacing is None
          else [float(spacing[d]) for d in range(3)])
    a, b = _host_comps(h), _host_comps(h_true)
    err = np.sqrt(sum(((x - y) * s) ** 2 for x, y, s in zip(a, b, sp)))
    if mask is not None:
        m = mask
        if not isinstance(m, np.ndarray):
            if m.memType() == ca.MEM_DEVICE:
                mh = ca.Image3D(m.grid(), ca.MEM_HOST)
                ca.Copy(mh, m)
                m = mh
            m = np.array(m.asnp())
        sel = err[m > 0.5]
    else:
        sel = err.ravel()
    if sel.size == 0:
        raise ValueError("deformation_error: the mask is empty")
    return dict(mean_mm=float(sel.mean()), p95_mm=float(np.percentile(sel, 95)),
                max_mm=float(sel.max()), n_voxels=int(sel.size))
