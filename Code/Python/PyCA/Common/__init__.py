"""Pure-Python helpers around PyCA.Core (legacy ``PyCA.Common``)."""
from .PyCACommon import *  # noqa: F401,F403
