"""Applying a saved registration to other images (``pyca-apply``), and the
transform files every registration writes (``warp.nii.gz``, ``transform.json``).

    python -m PyCA.Apps.apply --result DIR --moving FILE --out FILE
        [--interp nearest|linear|cubic] [--inverse]

    img = PyCA.Apps.apply_transform('result_dir', 'labels.nii.gz', out='labels_on_fixed.nii.gz',
                                    interp='nearest')

What a result folder holds about the transform (PyCA.Apps.outputs.write_outputs):

* ``hfield.nii.gz``: the H-field h, for each fixed voxel x the voxel indices
  h(x) in the moving image *as given to the registration*, i.e. after it was
  resampled onto the fixed grid (through world coordinates, and through the
  affine pre-alignment A with ``--affine``); ``hinv.nii.gz`` its inverse
  where the method has one (LDDMM, greedy).
* ``transform.json``: what turns those into a map between the two files: the
  fixed grid and the ORIGINAL moving file's grid (size, spacing, origin,
  direction: physical LPS millimetres, as ITK reads the files) and the
  affine A (matrix, translation, centre; a fixed physical point p goes to
  ``matrix (p - center) + translation + center`` in the moving file's
  physical space; null without ``--affine``).
* ``warp.nii.gz``: the whole transform as an ITK displacement field (float64
  vector image on the fixed grid: the fixed image's origin, spacing and
  direction; components in physical LPS millimetres, as ITK and ANTs read
  NIfTI vector images): a fixed physical point p goes to p + d(p) in the
  original moving image's physical space, where for a fixed voxel x with
  p = P_f(x) (P_f: the fixed grid's index -> physical map)

      d(p) = A(P_f(h(x))) - p.

  SimpleITK ``DisplacementFieldTransform`` and ANTs ``antsApplyTransforms
  -t warp.nii.gz`` take it as it is.

``pyca-apply`` (:func:`apply_transform`) warps any image or label map from
its own grid onto the fixed grid through that map (SimpleITK resampling with
the displacement field; nearest neighbour keeps the voxel type and the label
set, linear and cubic B-spline give float32, float64 for float64 input; 0
outside the image). ``--inverse`` goes the other way, an image in the fixed
image's space onto the original moving file's grid, through
q -> P_f(hinv(P_f^-1(A^-1(q)))) (hinv's displacement continued by its
nearest border value outside the fixed grid). Bad input (a missing result
folder or file, a 4-D or vector image, a 2-D image for a 3-D result or the
reverse, an unknown interpolation, ``--inverse`` without ``hinv.nii.gz``)
ends with one line ``pyca-apply: error: <message>`` and exit status 2; a
failed write with exit status 1. The output file is written atomically
(PyCA.Common.PyCAIO: verified, then renamed over its name).
"""
import json
import os
import sys
import warnings

import numpy as np

PROG = 'pyca-apply'
TRANSFORM_JSON = 'transform.json'
WARP_NAME = 'warp.nii.gz'
INTERPOLATIONS = ('nearest', 'linear', 'cubic')

__all__ = ['apply_transform', 'read_transform', 'displacement_field', 'write_transform_files',
           'main', 'main_entry', 'build_parser', 'TRANSFORM_JSON', 'WARP_NAME', 'INTERPOLATIONS']


def _sitk():
    try:
        import SimpleITK
    except ImportError as e:  # pragma: no cover - SimpleITK is installed with PyCA[apps]
        raise ImportError("PyCA.Apps.apply needs SimpleITK (pip install SimpleITK)", name='SimpleITK') from e
    return SimpleITK


# --------------------------------------------------------------------------- geometry

def _grid_record(size, spacing, origin, direction):
    """The JSON record of a grid: 3-vectors and the 3 x 3 direction (row-major)."""
    d = np.eye(3) if direction is None else np.asarray(direction, np.float64).reshape(3, 3)
    return dict(size=[int(v) for v in size], spacing=[float(v) for v in spacing],
                origin=[float(v) for v in origin], direction=[float(v) for v in d.reshape(-1)])


def _grid_of_image(im):
    """The grid record of a PyCA Image3D / Field3D (its recorded direction)."""
    from PyCA.Common import GetDirection
    return _grid_record(tuple(im.size()), tuple(im.spacing()), tuple(im.origin()), GetDirection(im))


def _grid_arrays(g, dim):
    """(size, spacing, origin, direction) of a grid record, cut to ``dim``."""
    try:
        size = np.array([int(v) for v in g['size']][:dim])
        sp = np.array([float(v) for v in g['spacing']][:dim])
        org = np.array([float(v) for v in g['origin']][:dim])
        d = np.asarray(g.get('direction') or np.eye(3).reshape(-1), np.float64)
        d = d.reshape(3, 3)[:dim, :dim] if d.size == 9 else d.reshape(dim, dim)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError('a grid record needs size, spacing, origin and direction (%s)' % e) from None
    if size.size != dim or sp.size != dim or org.size != dim or (size < 1).any() or not (sp > 0).all():
        raise ValueError('a grid record with a bad size or spacing: %r' % (g,))
    return size, sp, org, d


def _affine_arrays(a, dim):
    """(matrix, translation, center) of an affine record, or None."""
    if a is None:
        return None
    try:
        m = np.asarray(a['matrix'], np.float64).reshape(dim, dim)
        t = np.asarray(a['translation'], np.float64).reshape(dim)
        c = np.asarray(a.get('center') or [0.0] * dim, np.float64).reshape(dim)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError('an affine record needs a %d x %d matrix, a translation and a centre (%s)'
                         % (dim, dim, e)) from None
    if not (np.isfinite(m).all() and np.isfinite(t).all() and np.isfinite(c).all()):
        raise ValueError('the affine record holds non-finite numbers')
    if abs(np.linalg.det(m)) < 1e-12:
        raise ValueError('the affine matrix is singular')
    return m, t, c


def _affine_record(affine, dim):
    """A JSON record (matrix, translation, center; ``dim``) of a SimpleITK
    affine-like transform or of a dict holding those keys (None: None)."""
    if affine is None:
        return None
    if isinstance(affine, dict):
        src = affine
    else:
        sitk = _sitk()
        try:
            tx = sitk.AffineTransform(affine)
        except (RuntimeError, TypeError):
            tx = affine
        try:
            src = dict(matrix=tx.GetMatrix(), translation=tx.GetTranslation(), center=tx.GetCenter())
        except AttributeError:
            raise ValueError('the affine pre-alignment is a %s, not an affine transform'
                             % type(affine).__name__) from None
    m, t, c = _affine_arrays(src, dim)
    return dict(matrix=[float(v) for v in m.reshape(-1)], translation=[float(v) for v in t],
                center=[float(v) for v in c])


def _sitk_geometry_kw(g, dim):
    size, sp, org, d = _grid_arrays(g, dim)
    return dict(size=[int(v) for v in size], spacing=[float(v) for v in sp],
                origin=[float(v) for v in org], direction=[float(v) for v in d.reshape(-1)])


def _vector_image(comps, g, dim):
    """A SimpleITK float64 vector image on grid record ``g`` from ``dim``
    component arrays of shape (x, y[, z])."""
    sitk = _sitk()
    arr = np.stack([np.asarray(c, np.float64).T for c in comps], axis=-1)
    img = sitk.GetImageFromArray(np.ascontiguousarray(arr), isVector=True)
    kw = _sitk_geometry_kw(g, dim)
    img.SetSpacing(kw['spacing'])
    img.SetOrigin(kw['origin'])
    img.SetDirection(kw['direction'])
    return img


def displacement_field(h, fixed_grid, affine=None, dim=3):
    """The physical displacement of an H-field: for each fixed voxel x the
    vector ``A(P_f(h(x))) - P_f(x)`` (millimetres, LPS, the fixed image's
    physical frame). Non-finite entries of h give a zero displacement.

    Args:
        h (Field3D or sequence of 3 arrays): the H-field, voxel indices on
            the fixed grid (PyCA's H-field convention); host or device.
        fixed_grid (dict): size, spacing, origin (3 numbers each) and
            direction (9, row-major): ``transform.json``'s ``fixed_grid``,
            the index -> physical map P_f.
        affine (dict or None): matrix, translation, center: fixed physical
            -> moving physical (mm); default None, the identity.
        dim (int): 2 or 3 (default 3); 2 uses the x, y components of a
            one-plane field.

    Returns:
        list of ``dim`` float64 arrays of the fixed grid's shape (x, y[, z]).

    Raises:
        ValueError: a bad grid or affine record, or sizes that disagree.
    """
    comps = _field_components(h)
    size, sp, org, D = _grid_arrays(fixed_grid, dim)
    shape = tuple(comps[0].shape)
    if tuple(shape[:dim]) != tuple(size) or (dim == 2 and shape[2:] not in ((), (1,))):
        raise ValueError('the H-field has size %s, the fixed grid %s' % (shape, tuple(size)))
    if dim == 2:
        comps = [c.reshape(shape[:2]) for c in comps[:2]]
    M = D * sp[np.newaxis, :]                      # index -> physical (linear part)
    aff = _affine_arrays(affine, dim)
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in size], indexing='ij')
    hh = [np.asarray(c, np.float64) for c in comps[:dim]]
    bad = ~np.logical_and.reduce([np.isfinite(c) for c in hh])
    out = []
    # p = org + M x;  q = A(org + M h)
    ph = [org[i] + sum(M[i, j] * hh[j] for j in range(dim)) for i in range(dim)]
    if aff is not None:
        m, t, c = aff
        ph = [sum(m[i, j] * (ph[j] - c[j]) for j in range(dim)) + t[i] + c[i] for i in range(dim)]
    for i in range(dim):
        p = org[i] + sum(M[i, j] * idx[j] for j in range(dim))
        d = ph[i] - p
        d[bad] = 0.0
        out.append(d)
    return out


def _field_components(h):
    if isinstance(h, (list, tuple)):
        return [np.asarray(c) for c in h]
    import PyCA.Core as ca
    if h.memType() == ca.MEM_DEVICE:
        tmp = ca.Field3D(h.grid(), ca.MEM_HOST)
        ca.Copy(tmp, h)
        h = tmp
    return [np.array(c, np.float64) for c in h.asnp()]


# --------------------------------------------------------------------------- writing (registrations)

def write_transform_files(path_of, h, fixed, moving_space=None, hinv=False, who='write_outputs'):
    """Writes ``warp.nii.gz`` and ``transform.json`` of a registration (the
    output side of every registration: PyCA.Apps.outputs.write_outputs).

    Args:
        path_of (callable): file name -> the path to write that file to (a
            staging folder's: ``OutputStage.path`` or write_outputs' ``out``).
        h (Field3D): the H-field on the fixed grid (voxel indices of the
            moving image as given to the registration).
        fixed (Image3D): the fixed image (its grid and recorded direction: P_f).
        moving_space (dict or None): None (the default: the moving image
            given to the registration already lay on the fixed grid, no
            affine) or a dict with ``grid`` (the ORIGINAL moving file's
            grid: size, spacing, origin, direction as 3 / 9 numbers;
            missing: the fixed grid) and ``affine`` (None, a SimpleITK
            AffineTransform or dict(matrix, translation, center): fixed
            physical -> moving physical, LPS mm).
        hinv (bool): whether the result folder holds ``hinv.nii.gz``
            (default False).
        who (str): the name error messages start with (default 'write_outputs').

    Returns:
        dict: the transform record (also written as ``transform.json``).

    Raises:
        ValueError: a bad grid or affine record.
        OSError: a save failed (the message names the file).
    """
    from PyCA.Common.PyCAIO import _atomic_save, _atomic_json
    sitk = _sitk()
    dim = 2 if fixed.size().z == 1 else 3
    fg = _grid_of_image(fixed)
    ms = moving_space or {}
    mg = ms.get('grid') or fg
    mg = _grid_record(mg['size'], mg['spacing'], mg['origin'], mg.get('direction'))
    record = dict(format='PyCA transform', version=1, dimension=dim, fixed_grid=fg, moving_grid=mg,
                  affine=_affine_record(ms.get('affine'), dim),
                  hfield='hfield.nii.gz', hinv='hinv.nii.gz' if hinv else None, warp=WARP_NAME,
                  meaning='a fixed physical point p (LPS mm) maps to affine(P_f(h(P_f^-1(p)))) in the '
                          'moving file\'s physical space; warp.nii.gz holds that minus p; '
                          'affine(p) = matrix (p - center) + translation + center')
    comps = displacement_field(h, fg, record['affine'], dim)
    img = _vector_image(comps, fg, dim)
    del comps
    _atomic_save(path_of(WARP_NAME), lambda tmp: sitk.WriteImage(img, tmp, True), who)
    _atomic_json(path_of(TRANSFORM_JSON), record, who, indent=2, allow_nan=False)
    return record


# --------------------------------------------------------------------------- reading

def read_transform(result):
    """The transform record (``transform.json``) of a result folder, with
    the paths of its files added (``hfield_path``, ``hinv_path``, ``warp_path``).

    Args:
        result (str or os.PathLike): the result folder.

    Returns:
        dict: the record.

    Raises:
        FileNotFoundError: no such folder, or no transform.json in it.
        ValueError: a file instead of a folder, or a record that is not a
            PyCA transform record.
    """
    result = os.fspath(result)
    if not os.path.exists(result):
        raise FileNotFoundError("result folder not found: '%s'" % result)
    if not os.path.isdir(result):
        raise ValueError("result '%s' is not a folder (give the folder pyca-register wrote)" % result)
    path = os.path.join(result, TRANSFORM_JSON)
    if not os.path.isfile(path):
        raise FileNotFoundError("'%s' holds no %s: not a registration result folder, or one written "
                                "before pyca-apply existed (run the registration again)"
                                % (result, TRANSFORM_JSON))
    try:
        with open(path) as fh:
            rec = json.load(fh)
    except (OSError, ValueError) as e:
        raise ValueError("cannot read '%s': %s" % (path, e)) from None
    if not isinstance(rec, dict) or rec.get('format') != 'PyCA transform':
        raise ValueError("'%s' is not a PyCA transform record" % path)
    dim = rec.get('dimension')
    if dim not in (2, 3):
        raise ValueError("'%s': dimension must be 2 or 3, got %r" % (path, dim))
    for key in ('fixed_grid', 'moving_grid'):
        try:
            _grid_arrays(rec.get(key) or {}, dim)
        except ValueError as e:
            raise ValueError("'%s': %s: %s" % (path, key, e)) from None
    try:
        _affine_arrays(rec.get('affine'), dim)
    except ValueError as e:
        raise ValueError("'%s': %s" % (path, e)) from None
    for key in ('hfield', 'hinv', 'warp'):
        if rec.get(key):
            rec[key + '_path'] = os.path.join(result, os.path.basename(str(rec[key])))
    return rec


def _load_field(path, what, grid, dim):
    from PyCA.Common import LoadITKField
    if not os.path.isfile(path):
        raise FileNotFoundError("%s not found: '%s'" % (what, path))
    f = LoadITKField(path)
    size = tuple(f.size())
    want = tuple(int(v) for v in grid['size'])
    if size[:dim] != want[:dim]:
        raise ValueError("%s '%s' has size %s, the fixed grid %s" % (what, path, size, want))
    return [np.array(c, np.float64) for c in f.asnp()]


def _read_image(path, dim, role):
    """A scalar SimpleITK image of ``dim`` dimensions from ``path`` (its own
    voxel type), after PyCA.Common's file checks."""
    from PyCA.Common import PyCAIO
    sitk = _sitk()
    who = PROG
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("%s not found: '%s'" % (role, path))
    if os.path.isdir(path):
        raise ValueError("%s '%s' is a folder, not a file" % (role, path))
    PyCAIO._check_input(path, who)
    PyCAIO._check_metaimage_header(path, who)
    hdr = PyCAIO._nifti_header(path, who)
    PyCAIO._check_nifti_transform(path, who, hdr)
    reader = sitk.ImageFileReader()
    reader.SetFileName(path)
    try:
        reader.ReadImageInformation()
    except RuntimeError as e:
        raise PyCAIO._bad_file(who, path, PyCAIO._itk_reason(e), e) from None
    fdim, size = reader.GetDimension(), tuple(reader.GetSize())
    if fdim >= 4 and any(s > 1 for s in size[3:]):
        raise ValueError("%s '%s' is %d-D (size %s): extract one volume first"
                         % (role, path, fdim, 'x'.join(map(str, size))))
    if reader.GetNumberOfComponents() != 1:
        raise ValueError("%s '%s' has %d components per voxel; pyca-apply warps scalar images and "
                         "label maps (one value per voxel)" % (role, path, reader.GetNumberOfComponents()))
    pid = sitk.GetPixelIDValueAsString(reader.GetPixelID())
    if 'complex' in pid:
        raise ValueError("%s '%s' has complex voxels (%s)" % (role, path, pid))
    PyCAIO._check_nifti_complete(path, who, hdr)
    try:
        img = reader.Execute()
    except RuntimeError as e:
        raise PyCAIO._bad_file(who, path, PyCAIO._itk_reason(e), e) from None
    return _as_dim(img, dim, "%s '%s'" % (role, path))


def _as_dim(img, dim, what):
    sitk = _sitk()
    if img.GetNumberOfComponentsPerPixel() != 1:
        raise ValueError("%s has %d components per voxel; give a scalar image"
                         % (what, img.GetNumberOfComponentsPerPixel()))
    idim, size = img.GetDimension(), tuple(img.GetSize())
    while idim > dim and size[idim - 1] == 1:       # trailing single planes / volumes
        img = sitk.Extract(img, list(size[:idim - 1]) + [0], [0] * idim)
        idim, size = img.GetDimension(), tuple(img.GetSize())
    if idim != dim:
        raise ValueError("%s is %d-D (size %s) but the registration result is %d-D"
                         % (what, idim, 'x'.join(map(str, size)), dim))
    return img


# --------------------------------------------------------------------------- applying

_SITK_INTERP = {'nearest': 'sitkNearestNeighbor', 'linear': 'sitkLinear', 'cubic': 'sitkBSpline'}


def _inverse_displacement(rec, hinv, dim):
    """The displacement field on the moving file's grid of the inverse map
    q -> P_f(hinv(P_f^-1(A^-1 q))) (list of ``dim`` arrays)."""
    sitk = _sitk()
    fg, mg = rec['fixed_grid'], rec['moving_grid']
    # e(r) = P_f(hinv(P_f^-1 r)) - r on the fixed grid, then at r = A^-1 q
    e = displacement_field(hinv, fg, None, dim)
    e_img = _vector_image(e, fg, dim)
    del e
    aff = _affine_arrays(rec.get('affine'), dim)
    kw = _sitk_geometry_kw(mg, dim)
    f = sitk.ResampleImageFilter()
    f.SetSize(kw['size'])
    f.SetOutputSpacing(kw['spacing'])
    f.SetOutputOrigin(kw['origin'])
    f.SetOutputDirection(kw['direction'])
    f.SetInterpolator(sitk.sitkLinear)
    f.SetUseNearestNeighborExtrapolator(True)
    if aff is not None:
        m, t, c = aff
        tx = sitk.AffineTransform(dim)
        tx.SetMatrix([float(v) for v in m.reshape(-1)])
        tx.SetTranslation([float(v) for v in t])
        tx.SetCenter([float(v) for v in c])
        f.SetTransform(tx.GetInverse())
    E = sitk.GetArrayFromImage(f.Execute(e_img)).T             # (dim, x, y[, z])
    size, sp, org, D = _grid_arrays(mg, dim)
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in size], indexing='ij')
    q = [org[i] + sum(D[i, j] * sp[j] * idx[j] for j in range(dim)) for i in range(dim)]
    r = q
    if aff is not None:
        m, t, c = aff
        mi = np.linalg.inv(m)
        y = [q[i] - t[i] - c[i] for i in range(dim)]
        r = [sum(mi[i, j] * y[j] for j in range(dim)) + c[i] for i in range(dim)]
    return [r[i] + E[i] - q[i] for i in range(dim)]


def apply_transform(result, moving, out=None, interp='linear', inverse=False):
    """Warps an image or label map through a saved registration result.
    Voxels that map outside the image get 0.

    Args:
        result (str or os.PathLike): a result folder written by
            pyca-register / PyCA.Apps.outputs.write_outputs (it reads
            ``transform.json``, ``hfield.nii.gz`` and, with ``inverse``,
            ``hinv.nii.gz``).
        moving (str, os.PathLike or SimpleITK.Image): the image to warp, on
            ITS OWN grid (any size, spacing, origin, direction): an image in
            the moving image's physical space (with ``inverse=True``: in the
            fixed image's).
        out (str, os.PathLike or None): output file (any SimpleITK format by
            its extension; written atomically, verified before the rename);
            default None: not written.
        interp (str): 'nearest' (label maps: the voxel type and the label
            set are kept exactly), 'linear' (the default) or 'cubic' (cubic
            B-spline): float32 output (float64 for float64 input).
        inverse (bool): False (default): onto the fixed grid through the
            registration's map (warp.nii.gz); True: the other way, onto the
            original moving file's grid (needs ``hinv.nii.gz``: LDDMM and
            greedy save it).

    Returns:
        SimpleITK.Image: the warped image, on the fixed image's grid (the
        moving file's with ``inverse``).

    Raises:
        FileNotFoundError: no result folder, transform.json, H-field or
            image file.
        ValueError: an unknown ``interp``, ``inverse`` without hinv, a 4-D,
            vector or complex image, a 2-D image for a 3-D result or the
            reverse, a bad record.
        OSError: an unreadable file, a failed write.
    """
    sitk = _sitk()
    interp = str(interp).lower()
    if interp not in INTERPOLATIONS:
        raise ValueError("interp must be one of %s, got %r" % (', '.join(INTERPOLATIONS), interp))
    rec = read_transform(result)
    dim = int(rec['dimension'])
    if inverse and not rec.get('hinv'):
        raise ValueError("the result '%s' has no inverse (hinv.nii.gz): its method saves none "
                         "(LDDMM and greedy do; elastic does not)" % os.fspath(result))
    if isinstance(moving, sitk.Image):
        src = _as_dim(moving, dim, 'the image')
    else:
        src = _read_image(moving, dim, 'image')
    if out is not None:
        out = os.fspath(out)
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder):
            raise FileNotFoundError("the folder of the output file does not exist: '%s'" % folder)
        if os.path.isdir(out):
            raise ValueError("output '%s' is a folder; give a file name (e.g. out.nii.gz)" % out)
    if inverse:
        hinv = _load_field(rec['hinv_path'], 'inverse H-field', rec['fixed_grid'], dim)
        comps = _inverse_displacement(rec, hinv, dim)
        grid = rec['moving_grid']
    else:
        h = _load_field(rec['hfield_path'], 'H-field', rec['fixed_grid'], dim)
        comps = displacement_field(h, rec['fixed_grid'], rec.get('affine'), dim)
        grid = rec['fixed_grid']
    field = _vector_image(comps, grid, dim)
    del comps
    kw = _sitk_geometry_kw(grid, dim)
    if interp != 'nearest':
        src = sitk.Cast(src, sitk.sitkFloat64 if src.GetPixelID() == sitk.sitkFloat64 else sitk.sitkFloat32)
    f = sitk.ResampleImageFilter()
    f.SetSize(kw['size'])
    f.SetOutputSpacing(kw['spacing'])
    f.SetOutputOrigin(kw['origin'])
    f.SetOutputDirection(kw['direction'])
    f.SetInterpolator(getattr(sitk, _SITK_INTERP[interp]))
    f.SetDefaultPixelValue(0.0)
    f.SetOutputPixelType(src.GetPixelID())
    f.SetTransform(sitk.DisplacementFieldTransform(field))
    img = f.Execute(src)
    if out is not None:
        from PyCA.Common.PyCAIO import _atomic_save
        _atomic_save(out, lambda tmp: sitk.WriteImage(img, tmp, True), PROG)
    return img


# --------------------------------------------------------------------------- command line

def build_parser():
    """The argparse parser of ``pyca-apply`` (one-line errors: UsageError)."""
    from .register import _Parser
    p = _Parser(
        prog=PROG,
        description='Warps an image or label map, on its own grid, through a saved registration '
                    'result (pyca-register --out DIR) onto the fixed image\'s grid; with --inverse, '
                    'an image in the fixed image\'s space onto the moving file\'s grid.',
        epilog='The result folder must hold transform.json and hfield.nii.gz (hinv.nii.gz for '
               '--inverse). Exit status: 0 done, 2 bad input, 1 writing failed.')
    p.add_argument('--result', required=True, metavar='DIR', help='registration result folder')
    p.add_argument('--moving', required=True, metavar='FILE',
                   help="image to warp (any grid): in the moving image's space; with --inverse, in "
                        "the fixed image's space")
    p.add_argument('--out', required=True, metavar='FILE', help='output image file (e.g. out.nii.gz)')
    p.add_argument('--interp', default='linear', choices=INTERPOLATIONS,
                   help='interpolation: nearest (label maps: keeps the labels and the voxel type), '
                        'linear (the default) or cubic (B-spline)')
    p.add_argument('--inverse', action='store_true',
                   help='the other direction: onto the moving file\'s grid (needs hinv.nii.gz: '
                        'lddmm, greedy)')
    return p


def main(argv=None):
    """Runs ``pyca-apply``.

    Args:
        argv (list of str or None): the arguments; default None: ``sys.argv[1:]``.

    Returns:
        int: the exit status (0 done, 2 bad input, 1 writing failed).
    """
    from .register import UsageError, _message
    debug = os.environ.get('PYCA_DEBUG', '') not in ('', '0')

    def fail(e, code):
        sys.stderr.write('%s: error: %s\n' % (PROG, ' '.join(_message(e).split())))
        sys.stderr.flush()
        return code

    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        return fail(e, 2)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    stage = 'input'
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            try:
                _sitk().ProcessObject.SetGlobalWarningDisplay(False)
            except Exception:
                pass
            if os.path.isdir(args.out):
                raise UsageError("output '%s' is a folder; give a file name (e.g. out.nii.gz)" % args.out)
            folder = os.path.dirname(os.path.abspath(args.out))
            if not os.path.isdir(folder):
                raise UsageError("the folder of the output file does not exist: '%s'" % folder)
            img = apply_transform(args.result, args.moving, out=None, interp=args.interp,
                                  inverse=args.inverse)
            stage = 'output'
            from PyCA.Common.PyCAIO import _atomic_save
            sitk = _sitk()
            _atomic_save(args.out, lambda tmp: sitk.WriteImage(img, tmp, True), PROG)
    except KeyboardInterrupt:
        sys.stderr.write('%s: interrupted\n' % PROG)
        return 130
    except UsageError as e:
        return fail(e, 2)
    except (OSError, ValueError, RuntimeError, ImportError, TypeError, MemoryError) as e:
        if debug:
            raise
        return fail(e, 2 if stage == 'input' else 1)
    except Exception as e:  # a bug of ours: still one line
        if debug:
            raise
        return fail('internal error (%s: %s); set PYCA_DEBUG=1 for the traceback'
                    % (type(e).__name__, _message(e)), 1)
    print('%s: wrote %s (%s, %s interpolation%s)'
          % (PROG, args.out, 'x'.join(str(v) for v in img.GetSize()), args.interp,
             ', inverse' if args.inverse else ''))
    return 0


def main_entry():
    """The ``pyca-apply`` console script."""
    sys.exit(main())


if __name__ == '__main__':
    sys.exit(main())
