"""MPI helpers (legacy ``PyCA.Parallel``), built on mpi4py.

Importing works without mpi4py (nothing MPI-related is loaded at import);
the functions import it when called and raise ImportError saying what to
install when it is missing. ``PyCAParallel``: the reductions of Image3D,
Field3D and numbers; ``comm``: communicators for code that runs in one
process or over ranks (``GetWorld``, ``SerialComm``, ``RankContext``,
``Sum64``).
"""
from .PyCAParallel import *  # noqa: F401,F403
from .PyCAParallel import __getattr__  # noqa: F401
from .PyCAParallel import __all__ as _reductions
from .comm import *  # noqa: F401,F403
from .comm import __all__ as _comm

__all__ = list(_reductions) + list(_comm)
del _reductions, _comm
