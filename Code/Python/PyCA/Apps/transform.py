"""The transform files of a registration result (``warp.nii.gz``,
``transform.json``) and the grid and affine records they hold.

Written by every registration (:func:`write_transform_files`, called by
PyCA.Apps.outputs.write_outputs), read by ``pyca-apply``
(:func:`read_transform`, PyCA.Apps.apply); what the files mean is told in
PyCA.Apps.apply's notes.

* A grid record (:func:`grid_record`) is a dict of 3-vectors ``size``,
  ``spacing``, ``origin`` (physical LPS mm, as ITK reads the files) and the
  3 x 3 ``direction`` (9 numbers, row-major; left out of summary.json's
  ``grid``, which gives the direction beside it).
* An affine record (:func:`affine_record`) is a dict of ``matrix`` (9 or 4
  numbers), ``translation`` and ``center``: a fixed physical point p goes to
  ``matrix (p - center) + translation + center`` in the moving file's
  physical space.
* :func:`displacement_field` and :func:`inverse_displacement_field` turn an
  H-field (and its inverse) into physical displacements through those
  records; :func:`vector_image` makes a SimpleITK displacement image of
  them.
"""
import json
import os

import numpy as np

TRANSFORM_JSON = 'transform.json'
WARP_NAME = 'warp.nii.gz'

__all__ = ['write_transform_files', 'read_transform', 'displacement_field', 'inverse_displacement_field',
           'grid_record', 'grid_arrays', 'affine_arrays', 'affine_record', 'sitk_grid', 'vector_image',
           'TRANSFORM_JSON', 'WARP_NAME']


def _sitk():
    try:
        import SimpleITK
    except ImportError as e:  # pragma: no cover - SimpleITK is installed with PyCA[apps]
        raise ImportError("PyCA.Apps.apply needs SimpleITK (pip install SimpleITK)", name='SimpleITK') from e
    return SimpleITK


# --------------------------------------------------------------------------- records

def grid_record(grid, direction=True):
    """The JSON record of a grid: ``size``, ``spacing``, ``origin`` (3 numbers
    each) and the 3 x 3 ``direction`` (9 numbers, row-major).

    Args:
        grid (GridInfo, Image3D, Field3D or dict): the grid; an Image3D or
            Field3D gives its recorded direction (PyCA.Common.GetDirection), a
            dict its ``size``, ``spacing``, ``origin`` and ``direction`` keys.
        direction (bool or sequence): True (the default): the grid's direction
            (the identity where none is recorded, and for a GridInfo); False:
            no ``direction`` key; 9 numbers or a 3 x 3 matrix: that direction.

    Returns:
        dict: the record (ints for the size, floats elsewhere).
    """
    if isinstance(grid, dict):
        size, spacing, origin = grid['size'], grid['spacing'], grid['origin']
        d = grid.get('direction')
    else:
        size, spacing, origin = tuple(grid.size()), tuple(grid.spacing()), tuple(grid.origin())
        d = None
        if hasattr(grid, 'grid') and direction is True:   # an Image3D / Field3D
            from PyCA.Common import GetDirection
            d = GetDirection(grid)
    rec = dict(size=[int(v) for v in size], spacing=[float(v) for v in spacing],
               origin=[float(v) for v in origin])
    if direction is False:
        return rec
    if direction is not True:
        d = direction
    m = np.eye(3) if d is None else np.asarray(d, np.float64).reshape(3, 3)
    rec['direction'] = [float(v) for v in m.reshape(-1)]
    return rec


def grid_arrays(g, dim):
    """(size, spacing, origin, direction) NumPy arrays of a grid record, cut to ``dim``.

    Args:
        g (dict): the grid record.
        dim (int): 2 or 3.

    Returns:
        tuple: size (dim,), spacing (dim,), origin (dim,), direction (dim, dim).

    Raises:
        ValueError: a record without those keys, or with a bad size or spacing.
    """
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


def affine_arrays(a, dim):
    """(matrix, translation, center) NumPy arrays of an affine record, or None.

    Args:
        a (dict or None): the affine record (None: no affine).
        dim (int): 2 or 3.

    Returns:
        tuple or None: matrix (dim, dim), translation (dim,), center (dim,).

    Raises:
        ValueError: a record without those keys, non-finite numbers, a singular matrix.
    """
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


def affine_record(affine, dim):
    """A JSON record (matrix, translation, center) of an affine transform.

    Args:
        affine (SimpleITK transform, dict or None): a SimpleITK affine-like
            transform or a dict holding those keys; None: none.
        dim (int): 2 or 3.

    Returns:
        dict or None: the record.

    Raises:
        ValueError: not an affine transform, or a bad record.
    """
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
    m, t, c = affine_arrays(src, dim)
    return dict(matrix=[float(v) for v in m.reshape(-1)], translation=[float(v) for v in t],
                center=[float(v) for v in c])


def sitk_grid(g, dim):
    """A grid record cut to ``dim`` as the lists SimpleITK takes.

    Args:
        g (dict): the grid record.
        dim (int): 2 or 3.

    Returns:
        dict: ``size``, ``spacing``, ``origin`` and ``direction`` (dim * dim numbers) lists.
    """
    size, sp, org, d = grid_arrays(g, dim)
    return dict(size=[int(v) for v in size], spacing=[float(v) for v in sp],
                origin=[float(v) for v in org], direction=[float(v) for v in d.reshape(-1)])


def vector_image(comps, g, dim):
    """A SimpleITK float64 vector image on a grid.

    Args:
        comps (sequence of arrays): ``dim`` component arrays of shape (x, y[, z]).
        g (dict): the grid record.
        dim (int): 2 or 3.

    Returns:
        SimpleITK.Image: the vector image, with the grid's spacing, origin and direction.
    """
    sitk = _sitk()
    arr = np.stack([np.asarray(c, np.float64).T for c in comps], axis=-1)
    img = sitk.GetImageFromArray(np.ascontiguousarray(arr), isVector=True)
    kw = sitk_grid(g, dim)
    img.SetSpacing(kw['spacing'])
    img.SetOrigin(kw['origin'])
    img.SetDirection(kw['direction'])
    return img


# --------------------------------------------------------------------------- displacements

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
    size, sp, org, D = grid_arrays(fixed_grid, dim)
    shape = tuple(comps[0].shape)
    if tuple(shape[:dim]) != tuple(size) or (dim == 2 and shape[2:] not in ((), (1,))):
        raise ValueError('the H-field has size %s, the fixed grid %s' % (shape, tuple(size)))
    if dim == 2:
        comps = [c.reshape(shape[:2]) for c in comps[:2]]
    M = D * sp[np.newaxis, :]                      # index -> physical (linear part)
    aff = affine_arrays(affine, dim)
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


def inverse_displacement_field(rec, hinv, dim):
    """The displacement field, on the moving file's grid, of the inverse map
    q -> P_f(hinv(P_f^-1(A^-1 q))) (hinv's displacement continued by its
    nearest border value outside the fixed grid).

    Args:
        rec (dict): the transform record (:func:`read_transform`).
        hinv (Field3D or sequence of 3 arrays): the inverse H-field on the fixed grid.
        dim (int): 2 or 3.

    Returns:
        list of ``dim`` float64 arrays of the moving grid's shape (x, y[, z]).
    """
    sitk = _sitk()
    fg, mg = rec['fixed_grid'], rec['moving_grid']
    # e(r) = P_f(hinv(P_f^-1 r)) - r on the fixed grid, then at r = A^-1 q
    e = displacement_field(hinv, fg, None, dim)
    e_img = vector_image(e, fg, dim)
    del e
    aff = affine_arrays(rec.get('affine'), dim)
    kw = sitk_grid(mg, dim)
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
    size, sp, org, D = grid_arrays(mg, dim)
    idx = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in size], indexing='ij')
    q = [org[i] + sum(D[i, j] * sp[j] * idx[j] for j in range(dim)) for i in range(dim)]
    r = q
    if aff is not None:
        m, t, c = aff
        mi = np.linalg.inv(m)
        y = [q[i] - t[i] - c[i] for i in range(dim)]
        r = [sum(mi[i, j] * y[j] for j in range(dim)) + c[i] for i in range(dim)]
    return [r[i] + E[i] - q[i] for i in range(dim)]


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
    from PyCA.Common.atomic import atomic_json, atomic_save
    sitk = _sitk()
    dim = 2 if fixed.size().z == 1 else 3
    fg = grid_record(fixed)
    ms = moving_space or {}
    mg = grid_record(ms.get('grid') or fg)
    record = dict(format='PyCA transform', version=1, dimension=dim, fixed_grid=fg, moving_grid=mg,
                  affine=affine_record(ms.get('affine'), dim),
                  hfield='hfield.nii.gz', hinv='hinv.nii.gz' if hinv else None, warp=WARP_NAME,
                  meaning='a fixed physical point p (LPS mm) maps to affine(P_f(h(P_f^-1(p)))) in the '
                          'moving file\'s physical space; warp.nii.gz holds that minus p; '
                          'affine(p) = matrix (p - center) + translation + center')
    comps = displacement_field(h, fg, record['affine'], dim)
    img = vector_image(comps, fg, dim)
    del comps
    atomic_save(path_of(WARP_NAME), lambda tmp: sitk.WriteImage(img, tmp, True), who)
    atomic_json(path_of(TRANSFORM_JSON), record, who, indent=2, allow_nan=False)
    return record


#: SimpleITK interpolators by name (apply_transform's ``interp``)
SITK_INTERP = {'nearest': 'sitkNearestNeighbor', 'linear': 'sitkLinear', 'cubic': 'sitkBSpline'}


def resample_through(src, comps, grid, dim, interp='linear'):
    """``src`` (a SimpleITK image on its own grid) resampled onto ``grid``
    through the displacement ``comps`` (:func:`displacement_field`'s: x ->
    x + d(x), physical LPS mm) by SimpleITK's DisplacementFieldTransform;
    0 outside the image. What ``pyca-apply`` and ``deformed.nii.gz`` do.

    Args:
        src (SimpleITK.Image): the image (scalar).
        comps (list of numpy.ndarray): the displacement's components on ``grid``.
        grid (dict): the output grid record (:func:`grid_record`).
        dim (int): 2 or 3.
        interp (str): 'nearest' (keeps the voxel type), 'linear' (default) or 'cubic'
            (float32 output, float64 for float64 input).

    Returns:
        SimpleITK.Image: on ``grid``.
    """
    sitk = _sitk()
    field = vector_image(comps, grid, dim)
    kw = sitk_grid(grid, dim)
    if interp != 'nearest':
        src = sitk.Cast(src, sitk.sitkFloat64 if src.GetPixelID() == sitk.sitkFloat64 else sitk.sitkFloat32)
    f = sitk.ResampleImageFilter()
    f.SetSize(kw['size'])
    f.SetOutputSpacing(kw['spacing'])
    f.SetOutputOrigin(kw['origin'])
    f.SetOutputDirection(kw['direction'])
    f.SetInterpolator(getattr(sitk, SITK_INTERP[interp]))
    f.SetDefaultPixelValue(0.0)
    f.SetOutputPixelType(src.GetPixelID())
    f.SetTransform(sitk.DisplacementFieldTransform(field))
    return f.Execute(src)


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
            grid_arrays(rec.get(key) or {}, dim)
        except ValueError as e:
            raise ValueError("'%s': %s: %s" % (path, key, e)) from None
    try:
        affine_arrays(rec.get('affine'), dim)
    except ValueError as e:
        raise ValueError("'%s': %s" % (path, e)) from None
    for key in ('hfield', 'hinv', 'warp'):
        if rec.get(key):
            rec[key + '_path'] = os.path.join(result, os.path.basename(str(rec[key])))
    return rec
