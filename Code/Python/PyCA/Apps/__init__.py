"""PyCA.Apps: registration and denoising written on PyCA.Core.

Functions (each takes Image3Ds on any memory type, computes on the CPU or
the GPU -- ``device='cpu'|'gpu'|'auto'`` -- in 2-D (size z == 1) or 3-D, takes
scratch from the ThreadMemoryManager, shows a tqdm bar with the energy unless
``quiet=True``, and accepts ``config=`` (a dict or a YAML file path) and
keyword overrides of every parameter; ``DEFAULTS`` of each module lists them)::

    greedy_register(fixed, moving, config=None, quiet=False, **params)  -> RegistrationResult
    elastic_register(fixed, moving, config=None, quiet=False, **params) -> RegistrationResult
    lddmm_register(fixed, moving, config=None, quiet=False, **params)   -> RegistrationResult
    register(fixed, moving, method='lddmm', ...)                        -> RegistrationResult
    tv_denoise(image, method='primal_dual'|'rof', config=None, quiet=False, **params) -> TVResult
    build_atlas(images, method='greedy'|'lddmm', config=None, quiet=False, comm=None, out=None,
                checkpoint_every=0, resume=False, **params)                  -> AtlasResult
    apply_transform(result_dir, image, out=None, interp='linear', inverse=False) -> SimpleITK image
    predict_peak(method, grid, config=None, device='cpu')              -> Prediction (memory.py)

Every registration is refused before any work, with MemoryLimitError (a
ValueError), when its predicted peak memory is above ``max_memory`` (default:
the memory available; ``python -m PyCA.Apps.memory`` prints a prediction).

The command lines are ``python -m PyCA.Apps.register`` (``pyca-register``; its
module is ``PyCA.Apps.register_cli``, ``PyCA.Apps.register`` stays this function),
``python -m PyCA.Apps.apply`` (``pyca-apply``: a saved result applied to other
images) and
``[mpiexec -n K] python -m PyCA.Apps.atlas`` (``pyca-atlas``); the demos
``python -m PyCA.Apps.demo`` and ``python -m PyCA.Apps.atlas_demo``.
"""
import importlib as _importlib

from ._common import RegistrationResult, ConfigError, gpu_available  # noqa: F401

_LAZY = {
    'greedy_register': 'greedy', 'elastic_register': 'elastic',
    'lddmm_register': 'lddmm', 'tv_denoise': 'tv', 'TVResult': 'tv',
    'build_atlas': 'atlas', 'AtlasResult': 'atlas',
    'apply_transform': 'apply',
    'predict_peak': 'memory', 'MemoryLimitError': 'memory',
}

__all__ = ['register', 'RegistrationResult', 'ConfigError', 'gpu_available'] + sorted(_LAZY)

METHODS = ('lddmm', 'greedy', 'elastic')


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    return getattr(_importlib.import_module('.' + mod, __name__), name)


def register(fixed, moving, method='lddmm', config=None, quiet=False, **params):
    """Registers ``moving`` onto ``fixed`` with ``method`` ('lddmm', 'greedy' or
    'elastic'); see the method's function for its parameters.

    Args:
        fixed (Image3D): the fixed (reference) image; any memory type, 2-D (size z == 1) or 3-D.
        moving (Image3D): the moving image, on the fixed image's grid.
        method (str): 'lddmm' (default), 'greedy' or 'elastic'.
        config (dict or str, optional): parameters as a dict or the path of a YAML file; default
            None (``DEFAULTS``).
        quiet (bool): no progress bar; default False.
        **params: keyword overrides of the method's ``DEFAULTS`` (e.g. ``scales``, ``iters``,
            ``metric``).

    Returns:
        RegistrationResult: the method's result.

    Raises:
        ConfigError: an unknown method or parameter.
        TypeError, ValueError: inputs the method cannot use (see the method).

    Example:
        ``r = register(fixed, moving, method='greedy', quiet=True); warped = r.deformed``
    """
    m = str(method).lower()
    if m not in METHODS:
        raise ConfigError("method must be one of %s, got %r" % (', '.join(METHODS), method))
    fn = __getattr__(m + '_register')
    return fn(fixed, moving, config=config, quiet=quiet, **params)
