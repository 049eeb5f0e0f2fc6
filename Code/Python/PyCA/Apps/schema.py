"""One configuration schema for every registration method.

A method's parameters are built from shared *fragments* -- the multiscale
schedule, the similarity metric, the fluid kernel, the step control, the
device, the final gain -- each a set of :class:`Param` (default value and check). A method
writes only its own defaults and extra keys::

    SCHEMA = Schema(multiscale(scales=[4, 2, 1], iters=[60, 40, 30]),
                    kernel(alpha=1.0, beta=0.0, gamma=0.001),
                    metric(), device(),
                    step_control(step=0.0, max_step=0.5, step_min=0.0),
                    compute_inverse=Param(True), ...)
    DEFAULTS = SCHEMA.defaults()
    cfg = SCHEMA.merge(config, params)        # merge_config + every check, once

Every check raises :class:`~PyCA.Apps._common.ConfigError` with the same
message for every method. Parameters marked ``per_scale`` (``iters``) take
one value for every level or one per level, by one rule
(:func:`per_scale`); :meth:`Schema.levels` gives their per-level lists.
"""
import copy
import numbers

from ._common import ConfigError, merge_config

__all__ = ['Param', 'Schema', 'per_scale', 'multiscale', 'metric', 'kernel', 'device',
           'final_gain', 'step_control', 'positive', 'non_negative', 'one_of', 'at_least']


class Param:
    """One parameter of a method: its default, its check and whether it takes
    one value per level.

    Args:
        default: the default value (its type is the type given values are converted to,
            :func:`~PyCA.Apps._common.merge_config`).
        check (callable, optional): ``check(key, value)`` raising ConfigError for a bad value;
            default None (any value of the right type).
        per_scale (bool): the value is one per level of the multiscale schedule (or one for
            all); default False.
    """

    def __init__(self, default, check=None, per_scale=False):
        self.default = default
        self.check = check
        self.per_scale = bool(per_scale)


# --------------------------------------------------------------------------- checks

def _every(key, value, ok, text):
    """ConfigError ``"<key> must be <text>, got <value>"`` unless ``ok`` holds for
    the value, or for each value of a list."""
    vals = value if isinstance(value, (list, tuple)) else [value]
    if not all(ok(v) for v in vals):
        raise ConfigError("%s must be %s, got %r" % (key, text, value))


def positive(key, value):
    """ConfigError unless every value is > 0 (NaN included).

    Args:
        key (str): the parameter's name, for the message.
        value (number or list of numbers): its value.

    Raises:
        ConfigError: ``"<key> must be > 0, got <value>"``.
    """
    _every(key, value, lambda v: v > 0, '> 0')


def non_negative(key, value):
    """ConfigError unless every value is >= 0 (NaN included).

    Args:
        key (str): the parameter's name, for the message.
        value (number or list of numbers): its value.

    Raises:
        ConfigError: ``"<key> must be >= 0, got <value>"``.
    """
    _every(key, value, lambda v: v >= 0, '>= 0')


def at_least(lo):
    """A check: every value is >= ``lo``.

    Args:
        lo (int): the smallest value allowed.

    Returns:
        callable: ``check(key, value)`` raising ConfigError ``"<key> must be >= lo, got ..."``.
    """
    def check(key, value):
        _every(key, value, lambda v: v >= lo, '>= %s' % lo)
    return check


def one_of(*choices):
    """A check: the value is one of ``choices`` (strings, case-sensitive).

    Args:
        *choices (str): the values allowed.

    Returns:
        callable: ``check(key, value)`` raising ConfigError ``"<key> must be 'a' or 'b', got ..."``.
    """
    names = ', '.join(repr(c) for c in choices[:-1])
    text = ("%s or %r" % (names, choices[-1])) if len(choices) > 1 else repr(choices[0])

    def check(key, value):
        if value not in choices:
            raise ConfigError("%s must be %s, got %r" % (key, text, value))
    return check


def _scales(key, value):
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError("%s must be a non-empty list of factors, got %r" % (key, value))
    if not all(isinstance(v, numbers.Integral) and v >= 1 for v in value):
        raise ConfigError("scale factors must be >= 1, got %r" % (value,))


# --------------------------------------------------------------------------- fragments

def multiscale(scales, iters):
    """The multiscale schedule: ``scales`` (down-sampling factors, coarse to
    fine; factor 1 is always added) and ``iters`` (iterations per level: one
    value, or one per level by :func:`per_scale`).

    Args:
        scales (list of int): the default factors.
        iters (list of int): the default iterations per level.

    Returns:
        dict of str to Param.
    """
    return {'scales': Param(list(scales), _scales),
            'iters': Param(list(iters), non_negative, per_scale=True)}


def metric(name='auto', lncc_radius=0, mi_bins=32):
    """The similarity metric (PyCA.Apps.metrics): ``metric`` ('auto', 'lncc',
    'ssd', 'ncc' or 'mi'; 'auto' is LNCC, or LNCC plus global NCC where
    either image is piecewise constant -- chosen from the data), ``lncc_radius``
    (window radius in voxels of each level, of 'lncc' and 'auto'; 0: automatic from the
    fixed image's spacing, :func:`~PyCA.Apps.metrics.resolve_lncc_radius`), ``mi_bins``
    (histogram bins); checked by :func:`~PyCA.Apps.metrics.make_metric` (one
    place, the driver's).

    Args:
        name (str): the default metric; default 'auto'.
        lncc_radius (int): default window radius; default 0 (automatic).
        mi_bins (int): default bins; default 32.

    Returns:
        dict of str to Param.
    """
    return {'metric': Param(name), 'lncc_radius': Param(lncc_radius), 'mi_bins': Param(mi_bins)}


def kernel(alpha, beta, gamma, **extra):
    """The fluid operator ``L = -alpha lap - beta grad div + gamma`` of the
    method's kernel K = L^-1 (physical units), and extra kernel keys
    (``lpow``, ``kernel_tol``) given as Params.

    Args:
        alpha (float): default weight of the Laplacian.
        beta (float): default weight of grad div.
        gamma (float): default weight of the identity.
        **extra (Param): more kernel parameters.

    Returns:
        dict of str to Param.
    """
    out = {'alpha': Param(float(alpha), positive), 'beta': Param(float(beta), non_negative),
           'gamma': Param(float(gamma), non_negative)}
    out.update(extra)
    return out


def _max_memory(key, value):
    from .memory import parse_bytes
    parse_bytes(value, key)


def device(default='auto'):
    """Where the method computes: ``device`` ('auto', 'cpu' or 'gpu';
    checked by :func:`~PyCA.Apps._common.compute_mem_type`), and
    ``max_memory``, the most memory the job may need (PyCA.Apps.memory: None =
    what the machine or the GPU has available, a size in bytes or '8G', 0 =
    no check; a job predicted above it is refused before any work).

    Args:
        default (str): default 'auto'.

    Returns:
        dict of str to Param.
    """
    return {'device': Param(default), 'max_memory': Param(None, _max_memory)}


def final_gain(default='auto'):
    """The final gain of LDDMM, greedy and elastic: ``gain`` ('auto', 'on' or 'off'),
    the deformation scaled at the end by the factor that minimises the image
    term alone (:func:`~PyCA.Apps._common.gain_search`; it undoes the
    regulariser's shrinkage of the recovered displacement); 'auto' is on
    except with MI (:func:`~PyCA.Apps._common.gain_wanted`), 'off' the legacy.

    Args:
        default (str): default 'auto'.

    Returns:
        dict of str to Param.
    """
    return {'gain': Param(default, one_of('auto', 'on', 'off'))}


def step_control(step_check=non_negative, **params):
    """The step control of the descent, in the order given: ``step`` (the
    method's first step or multiplier; 0 = automatic where the method has
    that), ``max_step`` (the largest step, > 0), and the method's other step
    keys as Params.

    Args:
        step_check (callable): the check of ``step`` (default: >= 0).
        **params (float or Param): ``step`` and ``max_step`` (numbers: their defaults), and more
            step parameters (Params).

    Returns:
        dict of str to Param.
    """
    checks = {'step': step_check, 'max_step': positive}
    return {k: v if isinstance(v, Param) else Param(float(v), checks.get(k)) for k, v in params.items()}


# --------------------------------------------------------------------------- per scale

def per_scale(values, key, facs, given, default=None):
    """``values`` as one value per level of ``facs``, the one rule of every
    method: one value is used at every level; a list as long as the given
    ``scales`` is used as is (where factor 1 was added to them, its last value
    is repeated for it); a list equal to the method's ``default`` is fitted to
    the number of levels (its finest values kept, its coarsest repeated), so
    that ``scales=[2, 1]`` or ``[8, 4, 2, 1]`` run with the default iterations.

    Args:
        values (value or list): the parameter's value.
        key (str): its name, for the message.
        facs (list of int): the levels' factors, coarse to fine (factor 1 included).
        given (list of int): the ``scales`` the user gave (before factor 1 was added).
        default (list, optional): the parameter's default; default None.

    Returns:
        list: one value per level.

    Raises:
        ConfigError: a list whose length fits no rule.
    """
    vals = list(values) if isinstance(values, (list, tuple)) else [values]
    n = len(facs)
    if len(vals) == 1:
        return vals * n
    if default is not None and vals == list(default) and len(vals) != n:
        return ([vals[0]] * n + vals)[-n:]
    if len(vals) == len(given) and len(given) == n - 1 and 1 not in [int(s) for s in given]:
        return vals + vals[-1:]
    if len(vals) != n:
        raise ConfigError("%s must have one value or one per scale (%d: %s), got %r"
                          % (key, n, facs, values))
    return vals


# --------------------------------------------------------------------------- schema

class Schema:
    """A method's parameters: fragments (dicts of :class:`Param`) and extra
    keyword Params, in order.

    Args:
        *fragments (dict of str to Param): shared fragments (:func:`multiscale`, :func:`metric`, ...).
        **params (Param): the method's own parameters.
    """

    def __init__(self, *fragments, **params):
        self.params = {}
        for frag in fragments + (params,):
            self.params.update(frag)

    def defaults(self):
        """dict: every key with its default (a new dict: the method's ``DEFAULTS``)."""
        return {k: copy.deepcopy(p.default) for k, p in self.params.items()}

    def check(self, cfg):
        """Runs every parameter's check on a merged configuration.

        Args:
            cfg (dict): the merged configuration.

        Raises:
            ConfigError: the first bad value.
        """
        for k, p in self.params.items():
            if p.check is not None and k in cfg:
                p.check(k, cfg[k])

    def merge(self, config=None, overrides=None):
        """The defaults updated by ``config`` then ``overrides``
        (:func:`~PyCA.Apps._common.merge_config`), then checked.

        Args:
            config (None, dict or str): a dict or the path of a YAML file; default None.
            overrides (dict, optional): keyword overrides; default None.

        Returns:
            dict: the merged configuration.

        Raises:
            ConfigError: an unknown key, a value of the wrong type, or a bad value.
        """
        cfg = merge_config(self.defaults(), config, overrides)
        self.check(cfg)
        return cfg

    def levels(self, cfg, facs):
        """The per-level lists of every ``per_scale`` parameter.

        Args:
            cfg (dict): the merged configuration.
            facs (list of int): the levels' factors, coarse to fine.

        Returns:
            dict of str to list: one value per level for each per-scale parameter.
        """
        return {k: per_scale(cfg[k], k, facs, cfg['scales'], p.default)
                for k, p in self.params.items() if p.per_scale}
