"""The PyCA registration demo: ``python -m PyCA.Apps.demo`` (``./run demo``).

Without image files it registers a known problem: the fixed image is the MNI
ICBM 2009a T1 template from nilearn's package data at ``--spacing`` mm (2 by
default; PyCA.Apps.phantom.load_mni) and the moving image is that template
deformed by the phantom's smooth invertible random deformation psi (seed 0,
displacement up to 8 mm in the brain; phantom.random_deformation):
``moving = ApplyH(fixed, psi)``. The registration (LDDMM with its defaults,
``--method`` to choose another) should find h = psi^-1, and the demo reports
how close it came: the deformation error ``|h - h_true|`` in mm inside the brain
mask (mean, 95th percentile, max), beside the mismatch ratio (final / initial
mean squared difference) and the Jacobian determinant of h (its minimum and
the number of folded voxels, det <= 0).

With ``--fixed A --moving B`` it registers your own pair instead (loaded by
PyCA.Apps.io.load_pair: the moving image resampled onto the fixed grid through
world coordinates, ``--affine`` pre-alignment, ``--mask`` on the fixed image),
without a deformation error (no ground truth).

Outputs (PyCA.Apps.outputs.write_outputs) go to ``--out`` (default ``out``):
deformed.nii.gz, hfield.nii.gz, momentum.nii.gz (LDDMM), summary.png (the
picture) and summary.json (the numbers; for the phantom also
``deformation_error_mm`` and ``phantom``).

``--quick`` is the reduced configuration used by the tests and CI: a 4 mm
grid (50 x 59 x 48) and a short schedule (QUICK below), well under a minute on
two cores. ``--gpu`` computes on the GPU (a one-line error where there is
none). Errors are one line, ``pyca-demo: error: ...``, exit status 1.
"""
import os
import sys
import time

import numpy as np

import PyCA.Core as ca

from ._cli import EXIT_FAILED, Parser, fail, interrupted, run_cli

PROG = 'pyca-demo'

#: The reduced schedules of ``--quick`` (per method; anything not listed keeps
#: the method's default).
QUICK = {
    'lddmm': dict(scales=[2, 1], iters=[30, 20]),
    'greedy': dict(scales=[2, 1], iters=[30, 20]),
    'elastic': dict(scales=[2, 1], iters=[30, 20]),
}
QUICK_SPACING_MM = 4.0

#: The phantom of the demo (PyCA.Apps.phantom.random_deformation arguments).
PHANTOM = dict(max_disp_mm=8.0, smoothness_mm=20.0, seed=0)


class DemoError(Exception):
    """A problem reported as one line, exit status 1."""


def build_parser():
    """The command line's parser (its options are listed by ``--help``).

    Returns:
        argparse.ArgumentParser: the parser; errors raise DemoError (one line, status 1).
    """
    p = Parser(prog=PROG, description=__doc__.split('\n\n')[0], error_class=DemoError, see_help=False,
                epilog='Without --fixed/--moving: the MNI template and a known random deformation.')
    p.add_argument('--fixed', metavar='FILE', help='fixed image (with --moving)')
    p.add_argument('--moving', metavar='FILE', help='moving image (with --fixed)')
    p.add_argument('--mask', metavar='FILE', help='mask on the fixed image (user files only)')
    p.add_argument('--affine', action='store_true', help='affine pre-alignment of user files')
    p.add_argument('--method', default='lddmm', help="lddmm (default), greedy or elastic")
    p.add_argument('--config', metavar='YAML', help='registration parameters (a YAML file)')
    p.add_argument('--out', default='out', metavar='DIR', help='output folder (default: out)')
    p.add_argument('--quick', action='store_true',
                   help='reduced configuration for CI: 4 mm grid, short schedule')
    p.add_argument('--spacing', type=float, default=None, metavar='MM',
                   help='grid spacing of the template in mm (default 2; 4 with --quick)')
    p.add_argument('--seed', type=int, default=PHANTOM['seed'], help='phantom seed (default 0)')
    p.add_argument('--max-disp', type=float, default=PHANTOM['max_disp_mm'], metavar='MM',
                   help='phantom: largest displacement in the brain, mm (default 8)')
    p.add_argument('--smoothness', type=float, default=PHANTOM['smoothness_mm'], metavar='MM',
                   help='phantom: Gaussian smoothing of the velocity, mm (default 20)')
    p.add_argument('--rescan', nargs='?', const='t1', default=None, choices=('t1', 't2'),
                   help="re-acquire the phantom's moving image as another scanner session would: a smooth "
                        "bias field (+-20 %%), gamma 0.75 and noise (sd 0.03); 't2' gives it a T2-like "
                        "contrast first (CSF bright, white matter dark; use --metric mi)")
    p.add_argument('--metric', default=None, choices=('auto', 'ssd', 'ncc', 'lncc', 'mi'),
                   help="similarity metric (default: the method's; PyCA.Apps.metrics)")
    p.add_argument('--gpu', action='store_true', help="compute on the GPU (device='gpu')")
    p.add_argument('--max-memory', default=None, metavar='SIZE',
                   help="refuse a registration whose predicted peak memory is above SIZE (8G, 512M; "
                        "0: no check; default: the memory available)")
    p.add_argument('--quiet', action='store_true', help='no progress bar or progress lines')
    return p


def _host_np(obj):
    """Float64 NumPy copy of an Image3D ((X, Y, Z)) or Field3D (list of 3)."""
    if obj.memType() == ca.MEM_DEVICE:
        h = (ca.Image3D if isinstance(obj, ca.Image3D) else ca.Field3D)(obj.grid(), ca.MEM_HOST)
        ca.Copy(h, obj)
        obj = h
    a = obj.asnp()
    if isinstance(obj, ca.Image3D):
        return np.array(a, dtype=np.float64)
    return [np.array(c, dtype=np.float64) for c in a]


def brain_metrics(result, fixed, moving, mask=None):
    """mismatch (MSD, inside ``mask`` or everywhere) before and after, their
    ratio, and min Jacobian determinant / folded voxels of result.h.

    Args:
        result (RegistrationResult): the registration.
        fixed (Image3D): the fixed image.
        moving (Image3D): the moving image.
        mask (Image3D, optional): the brain mask on the fixed grid; default None (every voxel).

    Returns:
        dict: the numbers, by name.
    """
    f, m, d = _host_np(fixed), _host_np(moving), _host_np(result.deformed)
    sel = (_host_np(mask) > 0.5) if mask is not None else np.ones(f.shape, bool)
    before = float(np.mean((m[sel] - f[sel]) ** 2))
    after = float(np.mean((d[sel] - f[sel]) ** 2))
    h = result.h
    if h.memType() == ca.MEM_DEVICE:
        hh = ca.Field3D(h.grid(), ca.MEM_HOST)
        ca.Copy(hh, h)
        h = hh
    jac = ca.Image3D(h.grid(), ca.MEM_HOST)
    ca.JacDetHVoxel(jac, h)
    j = np.array(jac.asnp())
    return dict(msd_before=before, msd_after=after,
                mismatch_ratio=after / before if before > 0 else float('nan'),
                jacdet_min=float(j.min()), jacdet_max=float(j.max()),
                folded_voxels=int(np.count_nonzero(j <= 0)),
                region='brain mask' if mask is not None else 'whole image')


def _say(quiet, *a):
    if not quiet:
        print(*a, flush=True)


def make_phantom_pair(spacing_mm, max_disp_mm=8.0, smoothness_mm=20.0, seed=0, quiet=True, rescan=None):
    """(fixed, moving, mask, h_true, info): the demo's problem (module
    notes). ``rescan`` 't1' re-acquires the moving image (phantom.rescan:
    bias field, gamma, noise), 't2' gives it a T2-like contrast first
    (phantom.t2_like), None (the default) leaves it the warped template.

    Args:
        spacing_mm (float): the demo's grid spacing in mm.
        max_disp_mm (float): largest displacement of the true deformation, mm; default 8.
        smoothness_mm (float): Gaussian smoothing of the random velocity, mm; default 20.
        seed (int): the random seed of the deformation; default 0.
        quiet (bool): no progress lines; default True.
        rescan (str, optional): 't1', 't2' or None (default), see above.

    Returns:
        tuple: (fixed Image3D, moving Image3D, mask Image3D, h_true Field3D, info dict).
    """
    from . import phantom
    t0 = time.perf_counter()
    fixed, mask = phantom.load_mni(spacing_mm)
    psi, h_true = phantom.random_deformation(fixed.grid(), max_disp_mm=max_disp_mm,
                                             smoothness_mm=smoothness_mm, seed=seed, mask=mask)
    moving = ca.Image3D(fixed.grid(), ca.MEM_HOST)
    source = fixed
    if rescan == 't2':
        source = phantom.t2_like(fixed, spacing_mm)
    elif rescan not in (None, 't1'):
        raise ValueError("rescan must be None, 't1' or 't2', got %r" % (rescan,))
    ca.ApplyH(moving, source, psi, ca.BACKGROUND_STRATEGY_CLAMP)
    from PyCA.Common import GetDirection, SetDirection
    SetDirection(moving, GetDirection(fixed))
    rescan_info = None
    if rescan is not None:
        moving, rescan_info = phantom.rescan(moving)
        rescan_info['contrast'] = 'T2-like (phantom.t2_like)' if rescan == 't2' else 'T1'
        SetDirection(moving, GetDirection(fixed))
    inside = _host_np(mask) > 0.5
    disp = phantom.displacement_mm(h_true)
    comp = ca.Field3D(fixed.grid(), ca.MEM_HOST)
    ca.ComposeHH(comp, psi, h_true)
    inv = phantom.displacement_mm(comp, (1.0, 1.0, 1.0))
    jac = ca.Image3D(fixed.grid(), ca.MEM_HOST)
    ca.JacDetHVoxel(jac, psi)
    g = fixed.grid()
    info = dict(template=os.path.basename(phantom.mni_template_path()),
                spacing_mm=float(spacing_mm), grid=[int(v) for v in g.size()],
                brain_voxels=int(inside.sum()),
                max_disp_mm=float(max_disp_mm), smoothness_mm=float(smoothness_mm), seed=int(seed),
                generator='stationary velocity: Gaussian-smoothed white noise, tapered at the border; '
                          'psi = exp(-v), h_true = exp(+v) by scaling and squaring; moving = ApplyH(fixed, psi)',
                disp_brain_mean_mm=float(disp[inside].mean()), disp_brain_max_mm=float(disp[inside].max()),
                jacdet_psi_min=float(jac.asnp().min()), jacdet_psi_max=float(jac.asnp().max()),
                inverse_consistency_max_vox=float(inv.max()),
                rescan=rescan_info,
                seconds=time.perf_counter() - t0)
    return fixed, moving, mask, h_true, info


def run(args):
    """Runs the demo (module notes) for parsed arguments.

    Args:
        args (argparse.Namespace): the parsed command line (``build_parser()``).

    Returns:
        int: the exit status (0 on success).

    Raises:
        DemoError: a bad option, a missing dependency or a failed step (one line).
    """
    from . import register, gpu_available, METHODS
    method = str(args.method).lower()
    if method not in METHODS:
        raise DemoError("--method must be one of %s, got %r" % (', '.join(METHODS), args.method))
    if (args.fixed is None) != (args.moving is None):
        raise DemoError("--fixed and --moving go together (give both, or neither for the MNI demo)")
    if args.gpu and not gpu_available():
        raise DemoError("--gpu: no CUDA device is available (this build %s CUDA)"
                        % ('has' if hasattr(ca, 'FluidKernelFFTGPU') else 'has no'))
    if args.config is not None and not os.path.isfile(args.config):
        raise DemoError("configuration file not found: %s" % args.config)
    device = 'gpu' if args.gpu else 'cpu'
    params = dict(QUICK.get(method, {})) if args.quick else {}
    if args.rescan is not None and args.fixed is not None:
        raise DemoError("--rescan applies to the MNI phantom, not to --fixed/--moving files")
    if args.config is not None:
        # a config file's keys win over the quick schedule
        from ._common import load_config
        for k in load_config(args.config):
            params.pop(str(k).replace('-', '_'), None)
    if args.metric is not None:
        params['metric'] = args.metric          # the command line wins
    if getattr(args, 'max_memory', None) is not None:
        params['max_memory'] = args.max_memory
    q = args.quiet
    h_true = None
    extra = {}
    if args.fixed is not None:
        from .io import load_pair
        for role, path in (('fixed', args.fixed), ('moving', args.moving), ('mask', args.mask)):
            if path is not None and not os.path.exists(path):
                raise DemoError("%s image not found: %s" % (role, path))
        _say(q, 'loading %s and %s' % (args.fixed, args.moving))
        fixed, moving, mask = load_pair(args.fixed, args.moving, affine=args.affine,
                                        mask_path=args.mask)
        title = 'PyCA %s: %s -> %s' % (method, os.path.basename(args.moving), os.path.basename(args.fixed))
    else:
        if args.mask is not None or args.affine:
            raise DemoError("--mask and --affine apply to --fixed/--moving files only")
        spacing = args.spacing if args.spacing is not None else (QUICK_SPACING_MM if args.quick else 2.0)
        if not spacing > 0:
            raise DemoError("--spacing must be positive, got %g" % spacing)
        _say(q, 'MNI template at %g mm + phantom deformation (seed %d, up to %g mm, smoothness %g mm)'
             % (spacing, args.seed, args.max_disp, args.smoothness))
        fixed, moving, mask, h_true, pinfo = make_phantom_pair(
            spacing, max_disp_mm=args.max_disp, smoothness_mm=args.smoothness, seed=args.seed,
            rescan=args.rescan)
        extra['phantom'] = pinfo
        title = 'PyCA %s: MNI %g mm, phantom seed %d%s' % (
            method, spacing, args.seed, {None: '', 't1': ', rescanned', 't2': ', rescanned T2-like'}[args.rescan])
    _say(q, 'grid %s, spacing %s mm; registering with %s on the %s%s'
         % ('x'.join(str(v) for v in fixed.grid().size()),
            ', '.join('%g' % v for v in fixed.grid().spacing()), method, device,
            ' (quick: %s)' % params if params else ''))
    result = register(fixed, moving, method=method, config=args.config, quiet=q, device=device, **params)
    metrics = brain_metrics(result, fixed, moving, mask)
    extra['demo'] = dict(method=method, device=device, quick=bool(args.quick),
                         seconds=float(result.seconds), iterations=int(result.iterations),
                         seconds_per_iter=float(result.seconds_per_iter), metrics=metrics)
    if h_true is not None:
        from .phantom import deformation_error
        extra['deformation_error_mm'] = deformation_error(result.h, h_true, mask)
    from .outputs import write_outputs
    os.makedirs(args.out, exist_ok=True)
    summary = write_outputs(args.out, result, fixed, moving, extra=extra, mask=mask, title=title)
    summary = summary if isinstance(summary, dict) else {}
    ratio = summary.get('mismatch_ratio', metrics['mismatch_ratio'])
    jmin = summary.get('jacdet_min', metrics['jacdet_min'])
    folds = summary.get('folded_voxels', metrics['folded_voxels'])
    png = os.path.join(args.out, 'summary.png')
    print('picture: %s' % png)
    print('%s: %d iterations in %.1f s (%.3f s/iteration, %s)'
          % (method, result.iterations, result.seconds, result.seconds_per_iter, device))
    print('mismatch ratio (final / initial MSD%s): %.4f'
          % (', brain mask' if mask is not None else '', ratio))
    print('jacobian determinant: min %.4f, folded voxels %d' % (jmin, folds))
    for w in summary.get('warnings') or ():   # e.g. the mismatch barely fell (PyCA.Apps.metrics)
        sys.stderr.write('%s: warning: %s\n' % (PROG, w))
    if h_true is not None:
        e = extra['deformation_error_mm']
        p = extra['phantom']
        print('deformation error in the brain: mean %.3f mm, p95 %.3f mm, max %.3f mm '
              '(phantom displacement: mean %.2f mm, max %.2f mm)'
              % (e['mean_mm'], e['p95_mm'], e['max_mm'], p['disp_brain_mean_mm'], p['disp_brain_max_mm']))
    print('summary: %s' % os.path.join(args.out, 'summary.json'))
    return 0


def main(argv=None):
    """The command line entry point: parses ``argv``, runs the demo, and reports
    an error as one line ``PROG: error: ...`` on stderr.

    Args:
        argv (list of str, optional): the arguments without the program name;
            default None = ``sys.argv[1:]``.

    Returns:
        int: the exit status (0 on success, 1 on an error, 130 when interrupted).
    """
    return run_cli(_main, argv)


def _main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        return run(args)
    except DemoError as e:
        msg = str(e)
    except KeyboardInterrupt:
        return interrupted(PROG)
    except (ValueError, TypeError, OSError, ImportError, RuntimeError, KeyError) as e:
        msg = str(e) or type(e).__name__
        if isinstance(e, ImportError) and getattr(e, 'name', None) and e.name not in msg:
            msg = '%s (module %s)' % (msg, e.name)
    return fail(PROG, msg, EXIT_FAILED)


if __name__ == '__main__':
    sys.exit(main())
