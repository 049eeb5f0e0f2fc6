"""The registration command line (``pyca-register``).

    python -m PyCA.Apps.register --fixed F --moving M --out DIR
        [--method lddmm|greedy|elastic] [--device cpu|gpu|auto]
        [--scales 4,2,1] [--iters 30,20,10] [--config file.yaml] [--set KEY=VALUE ...]
        [--affine [--affine-metric mattes|correlation]] [--mask MASK]
        [--no-normalize] [--quiet]

Loads the pair with PyCA.Apps.io.load_pair (the moving image resampled onto
the fixed grid through world coordinates; ``--affine`` pre-aligns it), runs
PyCA.Apps.register and writes PyCA.Apps.outputs.write_outputs' files to the
output folder. Every bad input -- a missing, unreadable or corrupt file, a
4-D image, an empty mask, a GPU asked for where there is none, a bad
configuration key or value, an unwritable output folder -- ends with one line
``pyca-register: error: <message>`` on stderr and exit status 2 (1 when the
registration itself or writing its outputs fails). ``PYCA_DEBUG=1`` shows the
traceback of an unexpected error.
"""
import argparse
import importlib
import inspect
import os
import re
import sys
import tempfile
import time
import types
import warnings

from ._common import ConfigError
_previous = globals().get('_register_function')
from . import register as _register_function  # noqa: E402  the package's function, still bound: see below

if isinstance(_register_function, types.ModuleType):  # a reload: the package holds this module
    _register_function = _previous

PROG = 'pyca-register'

__all__ = ['main', 'main_entry', 'build_parser']


class UsageError(Exception):
    """A bad command line or input (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), as the rest of the CLI."""

    def error(self, message):
        raise UsageError('%s (see %s --help)' % (message, self.prog))


#: the preparation defaults of the command lines (pyca-register, pyca-atlas), by the
#: measurement in the help texts (MNI template at 2 mm, demo.make_phantom_pair)
BIAS_CORRECT_DEFAULT = True
MATCH_HISTOGRAM_DEFAULT = False
BIAS_CORRECT_HELP = ('Default: on: it leaves the clean pair as it was and helps the rescanned one '
                     '(greedy, error in the brain: lncc 0.77 -> 0.78 mm clean, 1.16 -> 0.83 mm rescanned; '
                     'ssd 3.7 -> 1.5 mm rescanned).')
MATCH_HISTOGRAM_HELP = ('Default: off: with lncc it does not help the rescanned pair '
                        '(greedy: 1.16 -> 1.21 mm alone, 0.83 -> 0.79 mm after N4).')


def add_metric_args(p, whose, default="the method's, lncc"):
    """--metric, --lncc-radius, --mi-bins (pyca-register, pyca-atlas).

    Args:
        p (argparse.ArgumentParser): the parser the options are added to.
        whose (str): whose registration the help names (e.g. 'the', 'each subject's').
        default (str): the default the help states; default "the method's, lncc".
    """
    p.add_argument('--metric', default=None, choices=('ssd', 'ncc', 'lncc', 'mi'),
                   help="similarity metric of %s registration (default: %s; see PyCA.Apps.metrics): "
                        "ssd, ncc (global correlation), lncc (local correlation: robust to bias fields "
                        "and scanner changes), mi (mutual information: different contrasts)" % (whose, default))
    p.add_argument('--lncc-radius', default=None, type=str, metavar='R',
                   help='lncc window radius in voxels of each scale (default 2)')
    p.add_argument('--mi-bins', default=None, type=str, metavar='B',
                   help='mi histogram bins per image (default 32)')


def add_preparation_args(p, images, matched, bias_default, match_default):
    """--[no-]bias-correct and --[no-]match-histogram (pyca-register, pyca-atlas).

    Args:
        p (argparse.ArgumentParser): the parser the options are added to.
        images (str): the images the help names for the bias correction (e.g. 'both images').
        matched (str): what the help says is matched (e.g. 'the moving image's histogram to the
            fixed one's').
        bias_default (bool): the default of --bias-correct.
        match_default (bool): the default of --match-histogram.
    """
    g = p.add_mutually_exclusive_group()
    g.add_argument('--bias-correct', dest='bias_correct', action='store_true', default=bias_default,
                   help='N4 bias-field correction (SimpleITK) of %s before the intensity '
                        'normalisation. %s' % (images, BIAS_CORRECT_HELP))
    g.add_argument('--no-bias-correct', dest='bias_correct', action='store_false',
                   help='no bias-field correction')
    g = p.add_mutually_exclusive_group()
    g.add_argument('--match-histogram', dest='match_histogram', action='store_true', default=match_default,
                   help="match %s (SimpleITK), after the bias correction. %s" % (matched, MATCH_HISTOGRAM_HELP))
    g.add_argument('--no-match-histogram', dest='match_histogram', action='store_false',
                   help='no histogram matching')


def build_parser():
    """The ``pyca-register`` command line's parser (its options are listed by ``--help``).

    Returns:
        argparse.ArgumentParser: the parser (usage errors: exit status 2).
    """
    p = _Parser(
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
    p.add_argument('--quiet', action='store_true', help='no progress bar, only the final numbers')
    return p


# --------------------------------------------------------------------------- messages

_INTERNAL_PREFIX = re.compile(r'^(?:\[Errno \d+\]\s*)?(?:LoadITKImage|LoadITKField|ReadGrid|SaveITKImage|'
                              r'SaveITKField|LoadImage|SaveImage)\s*:\s*')


def _message(e):
    """One line saying what is wrong, without our function names."""
    if isinstance(e, OSError) and e.strerror and e.filename:
        text = "%s: '%s'" % (e.strerror, e.filename)
    else:
        text = str(e) or type(e).__name__
        if isinstance(e, KeyError):
            text = 'missing key %s' % text
    text = _INTERNAL_PREFIX.sub('', ' '.join(text.split()))
    text = re.sub(r'[/\\]\.pyca-staging-[^/\\\s\']+', '', text)  # the final name, not the stage's
    text = re.sub(r'^(?:LoadITKImage|LoadITKField|SaveITKImage|SaveITKField)\s*:\s*', '', text)
    return text


def _fail(message, code):
    sys.stderr.write('%s: error: %s\n' % (PROG, ' '.join(str(message).split())))
    sys.stderr.flush()
    return code


def _ints(text, what):
    vals = [v for v in str(text).replace(' ', '').split(',') if v]
    try:
        out = [int(v) for v in vals]
    except ValueError:
        raise UsageError('%s must be comma-separated whole numbers (e.g. 4,2,1), got %r'
                         % (what, text)) from None
    if not out:
        raise UsageError('%s is empty' % what)
    if any(v < 1 for v in out):
        raise UsageError('%s must be positive, got %r' % (what, text))
    return out


def _value(text):
    """A --set value: YAML scalar / list syntax when PyYAML is there, else as is."""
    try:
        import yaml
        return yaml.safe_load(text)
    except Exception:
        return text


# --------------------------------------------------------------------------- steps

def _check_outdir(path):
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError("output folder '%s' exists and is not a folder" % path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageError("cannot create the output folder '%s': %s" % (path, e.strerror or e)) from None
    try:
        fd, probe = tempfile.mkstemp(prefix='.pyca-write-test-', dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError("cannot write into the output folder '%s': %s" % (path, e.strerror or e)) from None


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
        out[k.strip().replace('-', '_')] = _value(v.strip())
    for opt, text, key in (('--metric', args.metric, 'metric'), ('--lncc-radius', args.lncc_radius, 'lncc_radius'),
                           ('--mi-bins', args.mi_bins, 'mi_bins')):
        if text is None:
            continue
        if key not in defaults:
            raise UsageError('%s does not apply to --method %s' % (opt, args.method))
        out[key] = _value(text) if key != 'metric' else text
    for opt, text, keys in (('--scales', args.scales, ('scales', 'scale_factors')),
                            ('--iters', args.iters, ('iters', 'num_iters', 'niters', 'iterations'))):
        if text is None:
            continue
        key = next((k for k in keys if k in defaults), None)
        if key is None:
            raise UsageError('%s does not apply to --method %s' % (opt, args.method))
        out[key] = _ints(text, opt)
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


def _run(args):
    from ._common import merge_config
    # 1. everything that can be checked before any work
    mod = _method_module(args.method)
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
    _check_outdir(args.out)

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


def _register(args, fixed, moving, mask, cfg, device):
    fn = getattr(importlib.import_module('PyCA.Apps.' + args.method), args.method + '_register')
    kw = {}
    if mask is not None:
        try:
            if 'mask' in inspect.signature(fn).parameters:
                kw['mask'] = mask
        except (TypeError, ValueError):
            pass
    _say(args.quiet, '%s: %s registration on the %s (scales %s, iterations %s)'
         % (PROG, args.method, device, cfg.get('scales', '-'), cfg.get('iters', '-')))
    return _register_function(fixed, moving, method=args.method, config=cfg, quiet=args.quiet, **kw)


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
    from ._common import run_cli
    return run_cli(_main, argv)


def _main(argv=None):
    debug = os.environ.get('PYCA_DEBUG', '') not in ('', '0')
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        return _fail(e, 2)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    stage = 'input'
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            try:
                import SimpleITK as sitk
                sitk.ProcessObject.SetGlobalWarningDisplay(False)
            except Exception:
                pass
            fixed, moving, mask, cfg, device, info, load_s = _run(args)
            stage = 'registration'
            result = _register(args, fixed, moving, mask, cfg, device)
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
                    from PyCA.Common.PyCAIO import _atomic_save
                    _atomic_save(outs.path('affine.tfm'),
                                 lambda tmp: sitk.WriteTransform(info['affine_transform'], tmp),
                                 'affine.tfm')
                    extra['affine']['file'] = outs.final('affine.tfm')
                # the original moving file's grid and the affine: warp.nii.gz, transform.json
                moving_space = dict(grid=info.get('moving_grid'), affine=info.get('affine_transform'))
                summary = write_outputs(args.out, result, fixed, moving, extra=extra, mask=mask,
                                        title=title, stage=outs, moving_space=moving_space)
        for w in caught:
            if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning)):
                continue
            sys.stderr.write('%s: warning: %s\n' % (PROG, ' '.join(str(w.message).split())))
    except KeyboardInterrupt:
        sys.stderr.write('%s: interrupted\n' % PROG)
        return 130
    except (UsageError, ConfigError) as e:
        return _fail(_message(e), 2)
    except (OSError, ValueError, RuntimeError, ImportError, TypeError, MemoryError) as e:
        if debug:
            raise
        if stage == 'input':
            return _fail(_message(e), 2)
        return _fail('%s failed: %s' % (stage, _message(e)), 1)
    except Exception as e:  # a bug of ours: still one line, unless PYCA_DEBUG is set
        if debug:
            raise
        return _fail('internal error in the %s step (%s: %s); set PYCA_DEBUG=1 for the traceback'
                     % (stage, type(e).__name__, _message(e)), 1)

    files = summary.get('files', {})
    print('%s: %s (metric %s) done: %d iterations in %.2f s (%.3g s/iteration, %s, %d thread%s)'
          % (PROG, summary['method'], summary.get('metric', 'ssd'), summary['iterations'], summary['total_seconds'],
             summary['seconds_per_iter'], summary['device'], summary['threads'],
             '' if summary['threads'] == 1 else 's'))
    from .outputs import _fmt

    def num(v):   # summary.json holds null where a value is not finite: 'n/a'
        return _fmt(v, 4)
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
    print('  summary: %s' % files.get('summary_json', os.path.join(args.out, 'summary.json')))
    print('  picture: %s' % files.get('summary_png', os.path.join(args.out, 'summary.png')))
    sys.stdout.flush()
    return 0


class _CallableModule(types.ModuleType):
    """Importing a submodule binds it on its package, here over the function
    ``PyCA.Apps.register`` of the same name; so that
    ``PyCA.Apps.register(fixed, moving, ...)`` keeps working after
    ``import PyCA.Apps.register``, this module calls that function."""

    def __call__(self, *args, **kwargs):
        return _register_function(*args, **kwargs)


if __name__ != '__main__':
    sys.modules[__name__].__class__ = _CallableModule


def main_entry():
    """The ``pyca-register`` console script."""
    sys.exit(main())


if __name__ == '__main__':
    sys.exit(main())
