"""The shared layer of the command lines: ``pyca-register``
(PyCA.Apps.register_cli), ``pyca-apply`` (PyCA.Apps.apply), ``pyca-atlas``
(PyCA.Apps.atlas) and the demos (PyCA.Apps.demo, PyCA.Apps.atlas_demo).

* One error line: ``PROG: error: <message>`` on stderr (:func:`fail`), the
  message on one line and without PyCA's internal function names
  (:func:`message`); ``PROG: interrupted`` on Ctrl-C (:func:`interrupted`).
* Exit statuses: ``EXIT_OK`` 0 done, ``EXIT_USAGE`` 2 a bad command line or
  input (:class:`UsageError`, ConfigError, or an error while the inputs
  are checked), ``EXIT_FAILED`` 1 the run itself or writing its outputs
  failed (the demos: 1 for every error), ``EXIT_INTERRUPTED`` 130.
  :func:`error_status` maps an exception to its line and status;
  ``PYCA_DEBUG=1`` lets an unexpected one through with its traceback.
* :class:`Parser`: argparse with one-line errors (no usage block).
* Values of options: :func:`parse_ints` (``4,2,1``), :func:`parse_int`,
  :func:`parse_value` (``--set KEY=VALUE``), :func:`check_outdir`.
* The options ``pyca-register`` and ``pyca-atlas`` share
  (:func:`add_metric_args`, :func:`add_preparation_args` and their defaults).
* :func:`run_cli`: a command's ``main(argv)``, then the ThreadMemoryManager
  released quietly, so that a run ends with the command's own lines.
"""
import argparse
import os
import re
import sys
import tempfile

from ._common import ConfigError

__all__ = ['UsageError', 'Parser', 'message', 'fail', 'interrupted', 'debug_enabled', 'parse_args',
           'error_status', 'parse_ints', 'parse_int', 'parse_value', 'check_outdir', 'run_cli',
           'add_metric_args', 'add_preparation_args', 'BIAS_CORRECT_DEFAULT', 'MATCH_HISTOGRAM_DEFAULT',
           'EXIT_OK', 'EXIT_FAILED', 'EXIT_USAGE', 'EXIT_INTERRUPTED']

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: the errors a command reports as one line without PYCA_DEBUG (anything else
#: is "internal error", a bug of ours)
EXPECTED_ERRORS = (OSError, ValueError, RuntimeError, ImportError, TypeError, MemoryError)


class UsageError(Exception):
    """A bad command line or input (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): a bad command line
    raises ``error_class`` with argparse's message, followed by
    ``(see PROG --help)`` when ``see_help``.

    Args:
        *args: argparse.ArgumentParser's.
        error_class (type): the exception raised; default :class:`UsageError`.
        see_help (bool): add ``(see PROG --help)`` to the message; default True.
        **kwargs: argparse.ArgumentParser's.
    """

    def __init__(self, *args, error_class=UsageError, see_help=True, **kwargs):
        argparse.ArgumentParser.__init__(self, *args, **kwargs)
        self.error_class = error_class
        self.see_help = see_help

    def error(self, message):
        """Raises ``error_class`` (argparse calls this on a bad command line).

        Args:
            message (str): argparse's message.
        """
        if self.see_help:
            message = '%s (see %s --help)' % (message, self.prog)
        raise self.error_class(message)


# --------------------------------------------------------------------------- messages

_INTERNAL_PREFIX = re.compile(r'^(?:\[Errno \d+\]\s*)?(?:LoadITKImage|LoadITKField|ReadGrid|SaveITKImage|'
                              r'SaveITKField|LoadImage|SaveImage)\s*:\s*')


def message(e):
    """One line saying what is wrong, without PyCA's function names or
    staging folders.

    Args:
        e (BaseException or str): the error.

    Returns:
        str: the line.
    """
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


def fail(prog, text, status):
    """Writes ``PROG: error: <text>`` (one line) to stderr.

    Args:
        prog (str): the command's name.
        text (object): the message (its whitespace collapsed to single spaces).
        status (int): the exit status returned.

    Returns:
        int: ``status``.
    """
    sys.stderr.write('%s: error: %s\n' % (prog, ' '.join(str(text).split())))
    sys.stderr.flush()
    return status


def interrupted(prog):
    """Writes ``PROG: interrupted`` to stderr.

    Args:
        prog (str): the command's name.

    Returns:
        int: EXIT_INTERRUPTED (130).
    """
    sys.stderr.write('%s: interrupted\n' % prog)
    sys.stderr.flush()
    return EXIT_INTERRUPTED


def debug_enabled():
    """Whether ``PYCA_DEBUG`` asks for tracebacks (set and not '0').

    Returns:
        bool: True to let unexpected errors through.
    """
    return os.environ.get('PYCA_DEBUG', '') not in ('', '0')


def parse_args(prog, parser, argv):
    """Parses ``argv``: a usage error gives its line and status 2,
    ``--help`` its exit status.

    Args:
        prog (str): the command's name.
        parser (Parser): the command's parser.
        argv (list of str or None): the arguments; None = ``sys.argv[1:]``.

    Returns:
        tuple: (args, None), or (None, exit status) when the command ends here.
    """
    try:
        return parser.parse_args(argv), None
    except UsageError as e:
        return None, fail(prog, message(e), EXIT_USAGE)
    except SystemExit as e:  # --help
        return None, (e.code if isinstance(e.code, int) else 0)


def error_status(prog, e, step='input', name_step=True):
    """The exit status of the exception ``e`` that ended a command, after its
    line on stderr; call it in the ``except`` block that caught ``e``.

    KeyboardInterrupt: 130. UsageError, ConfigError: 2. OSError, ValueError,
    RuntimeError, ImportError, TypeError, MemoryError: 2 while ``step`` is
    'input', else 1 (``STEP failed: ...`` with ``name_step``). Anything else
    is an internal error (1). With PYCA_DEBUG set, the last two kinds are
    raised again (the traceback).

    Args:
        prog (str): the command's name.
        e (BaseException): the exception.
        step (str): the step that was running ('input': reading and checking the inputs).
        name_step (bool): name the step in the line; default True.

    Returns:
        int: the exit status.
    """
    if isinstance(e, KeyboardInterrupt):
        return interrupted(prog)
    if isinstance(e, (UsageError, ConfigError)):
        return fail(prog, message(e), EXIT_USAGE)
    if debug_enabled():
        raise  # noqa: PLE0704  the exception being handled, with its traceback
    from .memory import MemoryLimitError
    if isinstance(e, MemoryLimitError):    # refused before any work: the line says why
        return fail(prog, message(e), EXIT_FAILED)
    if isinstance(e, EXPECTED_ERRORS):
        if step == 'input':
            return fail(prog, message(e), EXIT_USAGE)
        return fail(prog, ('%s failed: %s' % (step, message(e))) if name_step else message(e), EXIT_FAILED)
    where = (' in the %s step' % step) if name_step else ''
    return fail(prog, 'internal error%s (%s: %s); set PYCA_DEBUG=1 for the traceback'
                % (where, type(e).__name__, message(e)), EXIT_FAILED)


def run_cli(main, argv=None):
    """``main(argv)``, then the ThreadMemoryManager released quietly: the
    command lines' wrapper, so that a run ends with their own lines only.

    Args:
        main (callable): the command's ``main(argv)``.
        argv (list of str, optional): the command line arguments without the program name; default
            None = ``sys.argv[1:]``.

    Returns:
        whatever ``main`` returns (the exit status).
    """
    from ._common import release_thread_memory_manager
    try:
        return main(argv)
    finally:
        release_thread_memory_manager()


# --------------------------------------------------------------------------- values

def parse_ints(text, what):
    """A list of positive whole numbers from ``4,2,1``.

    Args:
        text (str): the option's value.
        what (str): the option, for messages (e.g. '--scales').

    Returns:
        list of int: the numbers.

    Raises:
        UsageError: not whole numbers, none, or one below 1.
    """
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


def parse_int(text, what, lo):
    """A whole number of at least ``lo``.

    Args:
        text (str): the option's value.
        what (str): the option, for messages (e.g. '--iters').
        lo (int): the smallest value allowed.

    Returns:
        int: the number.

    Raises:
        UsageError: not a whole number, or below ``lo``.
    """
    try:
        v = int(str(text).strip())
    except ValueError:
        raise UsageError('%s must be a whole number, got %r' % (what, text)) from None
    if v < lo:
        raise UsageError('%s must be >= %d, got %d' % (what, lo, v))
    return v


def parse_value(text):
    """A ``--set`` value: YAML scalar / list syntax when PyYAML is there, else as is.

    Args:
        text (str): the value as typed.

    Returns:
        object: the value (a number, a list, a string, ...).
    """
    try:
        import yaml
        return yaml.safe_load(text)
    except Exception:
        return text


def check_outdir(path):
    """Makes the output folder ``path`` if needed and checks that a file can be
    written into it.

    Args:
        path (str): the folder.

    Raises:
        UsageError: a file of that name, a folder that cannot be made or written into.
    """
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


# --------------------------------------------------------------------------- shared options

#: the preparation defaults of the command lines (pyca-register, pyca-atlas), by the
#: measurement in the help texts (MNI template at 2 mm, demo.make_phantom_pair)
BIAS_CORRECT_DEFAULT = True
MATCH_HISTOGRAM_DEFAULT = False
BIAS_CORRECT_HELP = ('Default: on: it leaves the clean pair as it was and helps the rescanned one '
                     '(greedy, error in the brain: lncc 0.77 -> 0.78 mm clean, 1.16 -> 0.83 mm rescanned; '
                     'ssd 3.7 -> 1.5 mm rescanned).')
MATCH_HISTOGRAM_HELP = ('Default: off: with lncc it does not help the rescanned pair '
                        '(greedy: 1.16 -> 1.21 mm alone, 0.83 -> 0.79 mm after N4).')


def add_metric_args(p, whose, default="the method's, auto"):
    """--metric, --lncc-radius, --mi-bins (pyca-register, pyca-atlas).

    Args:
        p (argparse.ArgumentParser): the parser the options are added to.
        whose (str): whose registration the help names (e.g. 'the', 'each subject's').
        default (str): the default the help states; default "the method's, auto".
    """
    p.add_argument('--metric', default=None, choices=('auto', 'ssd', 'ncc', 'lncc', 'mi'),
                   help="similarity metric of %s registration (default: %s; see PyCA.Apps.metrics): "
                        "auto (lncc, or lncc plus global ncc where the images are piecewise constant), "
                        "ssd, ncc (global correlation), lncc (local correlation: robust to bias fields "
                        "and scanner changes), mi (mutual information: different contrasts)" % (whose, default))
    p.add_argument('--lncc-radius', default=None, type=str, metavar='R',
                   help='lncc window radius in voxels of each scale (default 0: automatic, 1 where the fixed '
                        'image\'s finest spacing is 1.5 mm or more, else 2)')
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
