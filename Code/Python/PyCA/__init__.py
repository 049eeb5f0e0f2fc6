"""PyCA: Python for Computational Anatomy.

``import PyCA.Core as ca`` gives the C++ library (images, fields, memory
managers, operators); the pure-Python sub-packages are

* ``PyCA.Common``: NumPy and DLPack bridges, slicing, ComposeDef, test
  data, debugging and version helpers (and file IO);
* ``PyCA.Display``: matplotlib plots (never switches to interactive mode);
* ``PyCA.Numpy``: NumPy reference finite differences;
* ``PyCA.Parallel``: MPI reductions (mpi4py, imported on use);
* ``PyCA.VTK``: vtkImageData wrappers (vtk, imported on use).

``import PyCA`` imports none of them (nor matplotlib, vtk or mpi4py);
``from PyCA import *`` imports them all.
"""
__all__ = ['Core', 'Common', 'Display', 'Numpy', 'Parallel', 'VTK']
__version__ = '0.1.0'

# OpenMP defaults of the CPU back end (a short spin at barriers, a thread
# count that respects cgroup quotas and MPI ranks on the node), set before
# PyCA.Core loads the OpenMP runtime; variables the user set are kept.
from ._threads import configure as _configure_threads, threading_info  # noqa: E402

_configure_threads()
del _configure_threads
