"""MPI helpers (legacy ``PyCA.Parallel``), built on mpi4py.

Importing works without mpi4py (nothing MPI-related is loaded at import);
the functions import it when called and raise ImportError saying what to
install when it is missing.
"""
from .PyCAParallel import *  # noqa: F401,F403
from .PyCAParallel import __all__, __getattr__  # noqa: F401
