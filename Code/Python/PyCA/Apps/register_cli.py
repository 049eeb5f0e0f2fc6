"""The registration command line (``pyca-register``).

    pyca-register --fixed F --moving M --out DIR        (or: python -m PyCA.Apps.register ...)
        [--method lddmm|greedy|elastic] [--device cpu|gpu|auto]
        [--scales 4,2,1] [--iters 30,20,10] [--config file.yaml] [--set KEY=VALUE ...]
        [--affine [--affine-metric mattes|correlation]] [--mask MASK]
        [--no-normalize] [--max-memory SIZE] [--quiet]

Loads the pair with PyCA.Apps.io.load_pair (the moving image resampled onto
the fixed grid through world coordinates; ``--affine`` pre-aligns it), runs
the method's registration (PyCA.Apps.register, the function) and writes
PyCA.Apps.outputs.write_outputs' files to the output folder. Every bad input
-- a missing, unreadable or corrupt file, a 4-D image, an empty mask, a GPU
asked for where there is none, a bad configuration key or value, an
unwritable output folder -- ends with one line
``pyca-register: error: <message>`` on stderr and exit status 2 (1 when the
registration itself or writing its outputs fails; PyCA.Apps._cli).
``PYCA_DEBUG=1`` shows the traceback of an unexpected error.

This module is ``PyCA.Apps.register_cli``: ``PyCA.Apps.register`` is the
function; ``python -m PyCA.Apps.register`` runs this command line too.
"""
import importlib
import inspect
import os
import sys
import time
import warnings

from ._cli import (BIAS_CORRECT_DEFAULT, MATCH_HISTOGRAM_DEFAULT,  # noqa: F401  (re-exported)
                   Parser, UsageError, add_metric_args, add_preparation_args, check_outdir,
                   error_status, parse_args, parse_ints, parse_value, run_cli)
from .figures import fmt

PROG = 'pyca-register'

__all__ = ['main', 'main_entry', 'build_parser']


def build_parser():
    """The ``pyca-register`` command line's parser (its options are listed by ``--help``).

    Returns:
        argparse.ArgumentParser: the parser (usage errors: exit status 2).
    """
    p = Parser(
        prog=PROG,
        description='Registers a moving image onto a fixed image with PyCA '
                    '(LDDMM, greedy fluid or elastic) and writes the deformed image, the '
                    'H-field, the Jacobian determinant and a one-page summary.',
        epilog='Outputs in --out: deformed.nii.gz, hfield.nii.gz (voxel coordinates), '
               'hinv.nii.gz (when the method has it), momentum.nii.gz (LDDMM), jacdet.nii.gz, '
               'warp.nii.gz (the whole transform as an ITK displacement field, physical mm: '
               'for SimpleITK, ANTs and pyca-apply), transform.json, '
               'summary.png, summary.json (and affine.tfm with --affine). '
               'Exit status: 0 done, 2 bad input, 1 the registration or writing failed.')
    p.add_argument('--fixed', required=True, metavar='F', help='fixed (target) image file (NIfTI, MetaImage, NRRD, ...)')
    p.add_argument('--moving', required=True, metavar='M', help='moving (source) image file')
    p.add_argument('--out', required=True, metavar='DIR', help='output folder (created if needed)')
    p.add_argument('--method', default='lddmm', choices=('lddmm', 'greedy', 'elastic'),
                   help='registration method (default: lddmm)')
    p.add_argument('--device', default=None, choices=('cpu', 'gpu', 'auto'),
                   help="where to compute: 'auto' (the default) uses a GPU when one is available")
    p.add_argument('--scales', default=None, metavar='S',
                   help='down-sampling factors, coarse to fine, e.g. 4,2,1 (overrides the config)')
    p.add_argument('--iters', default=None, metavar='N',
                   help='iterations per scale, e.g. 30,20,10, or one number (overrides the config)')
    p.add_argument('--config', default=None, metavar='FILE.yaml',
                   help="YAML file of the method's parameters")
    p.add_argument('--set', dest='params', action='append', default=[], metavar='KEY=VALUE',
                   help="one method parameter, e.g. --set alpha=0.5 (repeatable; overrides the config)")
    add_metric_args(p, 'the')
    p.add_argument('--affine', action='store_true',
                   help='affine pre-alignment of the moving image (SimpleITK) before the registration')
    p.add_argument('--affine-metric', default='mattes', choices=('mattes', 'correlation'),
                   help='metric of the affine pre-alignment (default: mattes mutual information)')
    p.add_argument('--mask', default=None, metavar='MASK',
                   help='mask on the fixed image (non-zero = inside): the mismatch is measured in it')
    p.add_argument('--no-normalize', dest='normalize', action='store_false',
                   help='keep the intensities (default: map the 0.5..99.5th percentiles to [0, 1])')
    add_preparation_args(p, 'both images', "the moving image's histogram to the fixed image's",
                         BIAS_CORRECT_DEFAULT, MATCH_HISTOGRAM_DEFAULT)
    p.add_argument('--max-memory', default=None, metavar='SIZE',
                   help="refuse a job whose predicted peak memory is above SIZE (bytes, or 8G, 512M; "
                        "0: no check; default: the memory available, the GPU's on --device gpu)")
    p.add_argument('--quiet', action='store_true', help='no progress bar, only the final numbers')
    return p


# --------------------------------------------------------------------------- steps

def _method_module(method):
    try:
        return importlib.import_module('PyCA.Apps.' + method)
    except ImportError as e:
        raise UsageError("method '%s' is not available in this installation (%s)" % (method, e)) from None


def _overrides(args, defaults):
    """The command-line overrides of the method's parameters."""
    out = {}
    for item in args.params:
        if '=' not in item:
            raise UsageError("--set takes KEY=VALUE, got %r" % item)
        k, v = item.split('=', 1)
        out[k.strip().replace('-', '_')] = parse_value(v.strip())
    for opt, text, key in (('--metric', args.metric, 'metric'), ('--lncc-radius', args.lncc_radius, 'lncc_radius'),
                           ('--mi-bins', args.mi_bins, 'mi_bins')):
        if text is None:
            continue
        if key not in defaults:
            raise UsageError('%s does not apply to --method %s' % (opt, args.method))
        out[key] = parse_value(text) if key != 'metric' else text
    if getattr(args, 'max_memory', None) is not None and 'max_memory' in defaults:
        out['max_memory'] = args.max_memory
    for opt, text, keys in (('--scales', args.scales, ('scales', 'scale_factors')),
                            ('--iters', args.iters, ('iters', 'num_iters', 'niters', 'iterations'))):
        if text is None:
            continue
        key = next((k for k in keys if k in defaults), None)
        if key is None:
            raise UsageError('%s does not apply to --method %s' % (opt, args.method))
        out[key] = parse_ints(text, opt)
    return out


def _resolve_device(requested, cfg_device):
    """'cpu' or 'gpu' from --device (or the config's device); 'auto' takes a
    GPU where one is available. RuntimeError when a GPU is asked for and
    none exists (compute_mem_type)."""
    from ._common import compute_mem_type, gpu_available
    import PyCA.Core as ca
    dev = (requested or cfg_device or 'auto').lower()
    if dev == 'auto':
        dev = 'gpu' if gpu_available() else 'cpu'
    mType = compute_mem_type(dev)
    return dev, mType if mType == ca.MEM_DEVICE else ca.MEM_HOST


def _say(quiet, text):
    if not quiet:
        print(text, flush=True)


def _run(args, mod):
    from ._common import merge_config
    # 1. everything that can be checked before any work
    defaults = getattr(mod, 'DEFAULTS', None)
    if not isinstance(defaults, dict):
        raise UsageError("method '%s' has no DEFAULTS" % args.method)
    for role, path in (('fixed image', args.fixed), ('moving image', args.moving), ('mask', args.mask),
                       ('configuration file', args.config)):
        if path is not None and not os.path.exists(path):
            raise UsageError("%s not found: '%s'" % (role, path))
        if path is not None and os.path.isdir(path):
            raise UsageError("%s '%s' is a folder, not a file" % (role, path))
    overrides = _overrides(args, defaults)
    cfg = merge_config(defaults, args.config, overrides)      # ConfigError: bad key / value
    device, mType = _resolve_device(args.device, cfg.get('device'))  # RuntimeError: no GPU
    if 'device' in cfg:
        cfg['device'] = device
    check_outdir(args.out)

    # 2. the pair
    from .io import load_pair
    t0 = time.perf_counter()
    info = {}
    fixed, moving, mask = load_pair(args.fixed, args.moving, affine=args.affine, mType=mType,
                                    mask_path=args.mask, normalize=args.normalize,
                                    affine_metric=args.affine_metric, info=info,
                                    bias_correct=args.bias_correct, match_histogram=args.match_histogram)
    g = fixed.grid()
    _say(args.quiet, '%s: fixed %s (%s voxels, spacing %s), moving %s%s%s'
         % (PROG, args.fixed, 'x'.join(str(v) for v in g.size()),
            ' '.join('%g' % v for v in g.spacing()), args.moving,
            ' resampled onto the fixed grid' if info.get('resampled') else '',
            (', affine pre-alignment %.1f s' % info['affine']['seconds']) if 'affine' in info else ''))
    if args.bias_correct or args.match_histogram:
        bf = info.get('bias_field') or {}
        _say(args.quiet, '%s: %s' % (PROG, '; '.join(
            ([('N4 bias correction %.1f s (field %s)'
               % (sum(d.get('seconds', 0.0) for d in bf.values()),
                  ', '.join('%s %.3g..%.3g' % (r, d['field_min'], d['field_max'])
                            for r, d in sorted(bf.items()) if d.get('applied')) or 'none'))]
             if args.bias_correct else [])
            + (['histogram of the moving image matched to the fixed one']
               if args.match_histogram else []))))
    return fixed, moving, mask, cfg, device, info, time.perf_counter() - t0


def _register(args, mod, fixed, moving, mask, cfg, device):
    fn = getattr(mod, args.method + '_register')
    kw = {}
    if mask is not None:
        try:
            if 'mask' in inspect.signature(fn).parameters:
                kw['mask'] = mask
        except (TypeError, ValueError):
            pass
    _say(args.quiet, '%s: %s registration on the %s (scales %s, iterations %s)'
         % (PROG, args.method, device, cfg.get('scales', '-'), cfg.get('iters', '-')))
    return fn(fixed, moving, config=cfg, quiet=args.quiet, **kw)


def _inputs_extra(args, info, load_seconds):
    extra = dict(inputs=dict(fixed=os.path.abspath(args.fixed), moving=os.path.abspath(args.moving),
                             mask=os.path.abspath(args.mask) if args.mask else None,
                             affine=bool(args.affine), normalized=bool(args.normalize),
                             bias_correct=bool(info.get('bias_correct')),
                             match_histogram=bool(info.get('match_histogram')),
                             moving_resampled=bool(info.get('resampled')),
                             fixed_grid=info.get('fixed_grid'), moving_grid=info.get('moving_grid'),
                             fixed_range=info.get('fixed_range'), moving_range=info.get('moving_range'),
                             load_seconds=load_seconds))
    if 'affine' in info:
        extra['affine'] = dict(info['affine'])
    return extra


def main(argv=None):
    """Runs the command line; returns the exit status (0, 1 or 2).

    Args:
        argv (list of str, optional): the arguments without the program name; default None =
            ``sys.argv[1:]``.

    Returns:
        int: 0 on success, 1 on an error (one line on stderr), 2 on a usage error.
    """
    return run_cli(_main, argv)


def _main(argv=None):
    args, status = parse_args(PROG, build_parser(), argv)
    if args is None:
        return status
    stage = 'input'
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            try:
                import SimpleITK as sitk
                sitk.ProcessObject.SetGlobalWarningDisplay(False)
            except Exception:
                pass
            mod = _method_module(args.method)       # the method, looked up once
            fixed, moving, mask, cfg, device, info, load_s = _run(args, mod)
            stage = 'registration'
            result = _register(args, mod, fixed, moving, mask, cfg, device)
            stage = 'output'
            from .outputs import write_outputs
            from .staging import OutputStage
            extra = _inputs_extra(args, info, load_s)
            title = 'PyCA %s: %s -> %s' % (args.method, os.path.basename(args.moving),
                                           os.path.basename(args.fixed))
            # every output into a staging folder, moved into place only when all were written
            with OutputStage(args.out) as outs:
                if 'affine_transform' in info:
                    import SimpleITK as sitk
                    from PyCA.Common.atomic import atomic_save
                    atomic_save(outs.path('affine.tfm'),
                                 lambda tmp: sitk.WriteTransform(info['affine_transform'], tmp),
                                 'affine.tfm')
                    extra['affine']['file'] = outs.final('affine.tfm')
                # the original moving file's grid and the affine: warp.nii.gz, transform.json
                # and the original moving image: deformed.nii.gz in its own intensities
                from .apply import read_image
                moving_space = dict(grid=info.get('moving_grid'), affine=info.get('affine_transform'),
                                    image=read_image(args.moving, 2 if fixed.size().z == 1 else 3,
                                                     'moving image'))
                summary = write_outputs(args.out, result, fixed, moving, extra=extra, mask=mask,
                                        title=title, stage=outs, moving_space=moving_space)
        for w in caught:
            if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning)):
                continue
            sys.stderr.write('%s: warning: %s\n' % (PROG, ' '.join(str(w.message).split())))
    except (KeyboardInterrupt, Exception) as e:  # one line (a bug of ours too, unless PYCA_DEBUG is set)
        return error_status(PROG, e, stage)

    files = summary.get('files', {})
    print('%s: %s (metric %s) done: %d iterations in %.2f s (%.3g s/iteration, %s, %d thread%s)'
          % (PROG, summary['method'], summary.get('metric', 'ssd'), summary['iterations'], summary['total_seconds'],
             summary['seconds_per_iter'], summary['device'], summary['threads'],
             '' if summary['threads'] == 1 else 's'))

    def num(v):   # summary.json holds null where a value is not finite: 'n/a'
        return fmt(v, 4)
    print('  mismatch %s -> %s (ratio %s%s); det J in [%s, %s], %d folded voxels'
          % (num(summary['initial_mismatch']), num(summary['final_mismatch']), num(summary['mismatch_ratio']),
             ', inside the mask' if args.mask else '', num(summary['jacdet_min']), num(summary['jacdet_max']),
             summary['folded_voxels']))
    if summary['folded_voxels']:
        sys.stderr.write('%s: warning: the deformation folds at %d voxels (det J <= 0, min %s): it is '
                         'not a diffeomorphism there\n' % (PROG, summary['folded_voxels'], num(summary['jacdet_min'])))
    if summary.get('hinv_folded_voxels'):
        sys.stderr.write('%s: warning: the inverse (hinv.nii.gz) folds at %d voxels (det J <= 0, min %s): '
                         'it is not an accurate inverse there\n'
                         % (PROG, summary['hinv_folded_voxels'], num(summary['hinv_jacdet_min'])))
    for w in summary.get('warnings') or ():   # e.g. the mismatch barely fell (PyCA.Apps.metrics)
        sys.stderr.write('%s: warning: %s\n' % (PROG, w))
    print('  summary: %s' % files.get('summary_json', os.path.join(args.out, 'summary.json')))
    print('  picture: %s' % files.get('summary_png', os.path.join(args.out, 'summary.png')))
    sys.stdout.flush()
    return 0


def main_entry():
    """The ``pyca-register`` console script."""
    sys.exit(main())


if __name__ == '__main__':
    sys.exit(main())
