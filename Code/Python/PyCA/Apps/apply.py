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
import os
import sys
import warnings

import numpy as np

from ._cli import Parser, UsageError, error_status, parse_args
from .transform import (TRANSFORM_JSON, WARP_NAME, displacement_field,  # noqa: F401  (re-exported)
                        inverse_displacement_field, read_transform, resample_through,
                        sitk_grid, vector_image, write_transform_files)

PROG = 'pyca-apply'
INTERPOLATIONS = ('nearest', 'linear', 'cubic')

__all__ = ['apply_transform', 'read_transform', 'displacement_field', 'write_transform_files',
           'main', 'main_entry', 'build_parser', 'TRANSFORM_JSON', 'WARP_NAME', 'INTERPOLATIONS']


def _sitk():
    try:
        import SimpleITK
    except ImportError as e:  # pragma: no cover - SimpleITK is installed with PyCA[apps]
        raise ImportError("PyCA.Apps.apply needs SimpleITK (pip install SimpleITK)", name='SimpleITK') from e
    return SimpleITK


# --------------------------------------------------------------------------- reading

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


def read_image(path, dim, role):
    """A scalar SimpleITK image of ``dim`` dimensions from ``path`` (its own
    voxel type), after the file checks of PyCA.Common.LoadImage
    (PyCA.Common.atomic.check_readable, check_complete): a file LoadImage
    refuses is refused here, for the same reason.

    Args:
        path (str or os.PathLike): the image file.
        dim (int): 2 or 3: the dimension the result must have (a 3-D file of one slice is
            read as 2-D).
        role (str): the image's name in error messages ('image', 'moving').

    Returns:
        SimpleITK.Image: the scalar image on its own grid.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file LoadImage refuses, a vector, complex or 4-D image, or the wrong
            dimension.
        OSError: an unreadable file.
    """
    from PyCA.Common.atomic import check_complete, check_readable, itk_reason, read_error
    sitk = _sitk()
    who = PROG
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("%s not found: '%s'" % (role, path))
    if os.path.isdir(path):
        raise ValueError("%s '%s' is a folder, not a file" % (role, path))
    reader, hdr = check_readable(path, who)
    fdim, size = reader.GetDimension(), tuple(reader.GetSize())
    if fdim > 4 or (fdim == 4 and size[3] > 1):     # LoadImage: 2-D, 3-D or 4-D with one volume
        raise ValueError("%s '%s' is %d-D (size %s): extract one volume first"
                         % (role, path, fdim, 'x'.join(map(str, size))))
    pid = sitk.GetPixelIDValueAsString(reader.GetPixelID())
    if 'complex' in pid:        # (before the components: SimpleITK counts 2 for complex voxels)
        raise ValueError("%s '%s' has complex voxels (%s)" % (role, path, pid))
    if reader.GetNumberOfComponents() != 1:
        raise ValueError("%s '%s' has %d components per voxel; pyca-apply warps scalar images and "
                         "label maps (one value per voxel)" % (role, path, reader.GetNumberOfComponents()))
    check_complete(path, who, hdr)
    try:
        img = reader.Execute()
    except RuntimeError as e:
        raise read_error(who, path, itk_reason(e), e) from None
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
        src = read_image(moving, dim, 'image')
    if out is not None:
        out = os.fspath(out)
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder):
            raise FileNotFoundError("the folder of the output file does not exist: '%s'" % folder)
        if os.path.isdir(out):
            raise ValueError("output '%s' is a folder; give a file name (e.g. out.nii.gz)" % out)
    if inverse:
        hinv = _load_field(rec['hinv_path'], 'inverse H-field', rec['fixed_grid'], dim)
        comps = inverse_displacement_field(rec, hinv, dim)
        grid = rec['moving_grid']
    else:
        h = _load_field(rec['hfield_path'], 'H-field', rec['fixed_grid'], dim)
        comps = displacement_field(h, rec['fixed_grid'], rec.get('affine'), dim)
        grid = rec['fixed_grid']
    img = resample_through(src, comps, grid, dim, interp)
    del comps
    if out is not None:
        from PyCA.Common.atomic import atomic_save
        atomic_save(out, lambda tmp: sitk.WriteImage(img, tmp, True), PROG)
    return img


# --------------------------------------------------------------------------- command line

def build_parser():
    """The argparse parser of ``pyca-apply`` (one-line errors: UsageError)."""
    p = Parser(
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
    args, status = parse_args(PROG, build_parser(), argv)
    if args is None:
        return status
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
            from PyCA.Common.atomic import atomic_save
            sitk = _sitk()
            atomic_save(args.out, lambda tmp: sitk.WriteImage(img, tmp, True), PROG)
    except (KeyboardInterrupt, Exception) as e:  # one line (a bug of ours too)
        return error_status(PROG, e, stage, name_step=False)
    print('%s: wrote %s (%s, %s interpolation%s)'
          % (PROG, args.out, 'x'.join(str(v) for v in img.GetSize()), args.interp,
             ', inverse' if args.inverse else ''))
    return 0


def main_entry():
    """The ``pyca-apply`` console script."""
    sys.exit(main())


if __name__ == '__main__':
    sys.exit(main())
