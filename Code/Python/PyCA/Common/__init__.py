"""Pure-Python helpers around PyCA.Core (legacy ``PyCA.Common``): NumPy
conversion and slicing (PyCACommon), file IO (PyCAIO), synthetic test data
(PyCATestData), debugging (PyCADebug) and version information (PyCAVersion).
Each module is star-imported, as in the legacy package. The file-safety
layer (staged writes, verification of what was written, the checks of a
file before it is read) is the public submodule ``PyCA.Common.atomic``; it
is new, so its names stay in their module (``from PyCA.Common.atomic import
atomic_save``) rather than in the legacy namespace."""
from .PyCACommon import *  # noqa: F401,F403

# The other modules are added by the issues that write them; a missing one is
# skipped so that a partial package still imports.
import importlib as _importlib

for _name in ("PyCAIO", "PyCATestData", "PyCADebug", "PyCAVersion"):
    try:
        _mod = _importlib.import_module("." + _name, __name__)
    except ModuleNotFoundError as _e:
        if _e.name != __name__ + "." + _name:
            raise
        continue
    _names = getattr(_mod, "__all__", [k for k in vars(_mod) if not k.startswith("_")])
    globals().update({k: getattr(_mod, k) for k in _names})
for _k in ("_importlib", "_name", "_mod", "_names", "_e"):
    globals().pop(_k, None)
globals().pop("_k", None)
