"""In-place MPI reductions of Image3D/Field3D (legacy PyCAParallel).

mpi4py is imported on first use, so ``import PyCA.Parallel`` needs no MPI
(``PyCA.Parallel.MPI`` is mpi4py's module, loaded on access). Install:
``pip install mpi4py mpich`` (or, on Debian/Ubuntu,
``apt-get install libopenmpi-dev openmpi-bin`` then ``pip install mpi4py``).
"""
from typing import Any, Union

import numpy as np

import PyCA.Core as core

__all__ = ['Reduce', 'ReduceFloat', 'GetMPI']

_HINT = ("pip install mpi4py mpich (mpi4py plus an MPI library), or on Debian/Ubuntu: "
         "apt-get install libopenmpi-dev openmpi-bin && pip install mpi4py")


def GetMPI():
    """mpi4py's MPI module; ImportError naming what to install if it cannot
    be loaded (mpi4py missing, or no MPI library for it).

    Returns:
        types.ModuleType: ``mpi4py.MPI``.

    Raises:
        ImportError: mpi4py is not installed, or it cannot load an MPI library (the message says
            what to install).
    """
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("PyCA.Parallel needs mpi4py and an MPI library (%s): %s" % (e, _HINT)) from e
    except RuntimeError as e:  # mpi4py present, MPI library missing or broken
        raise ImportError("PyCA.Parallel could not load MPI (%s): %s" % (e, _HINT)) from e
    return MPI


def __getattr__(name):
    if name == 'MPI':
        return GetMPI()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _defaults(op, comm):
    if op is None or comm is None:
        MPI = GetMPI()
        op = MPI.SUM if op is None else op
        comm = MPI.COMM_WORLD if comm is None else comm
    return op, comm


def _in_place():
    try:
        from mpi4py import MPI
        return MPI.IN_PLACE
    except Exception:
        return None


def _flat_views(obj):
    """1-D contiguous host views of the voxels of an Image3D or the three
    components of a Field3D (no copies)."""
    views = [obj.asnp()] if isinstance(obj, core.Image3D) else list(obj.asnp())
    return [v.reshape(-1, order='F') for v in views]


def _allreduce(comm, op, views):
    inplace = _in_place()
    for v in views:
        if v.size == 0:
            continue
        if inplace is not None:
            comm.Allreduce(inplace, v, op=op)
        else:  # a communicator object without mpi4py (tests, wrappers)
            comm.Allreduce(None, v, op=op)


def Reduce(A: Union[core.Image3D, core.Field3D], hA: Union[core.Image3D, core.Field3D, None] = None,
           op: Any = None, comm: Any = None) -> Union[core.Image3D, core.Field3D]:
    """In-place Allreduce of an Image3D or Field3D over the ranks of
    ``comm`` (default MPI.COMM_WORLD) with ``op`` (default MPI.SUM): after
    the call every rank holds the reduction of all ranks' A. Host and pinned
    data are reduced through zero-copy NumPy views; device data is staged
    through the host buffer ``hA`` (an Image3D/Field3D like A in MEM_HOST or
    MEM_HOST_PINNED with at least A's voxels; a temporary one when None).
    Returns A.

    Args:
        A (Image3D or Field3D): the data to reduce, in place; any memory type.
        hA (Image3D or Field3D, optional): host staging buffer for device data: the same kind as
            ``A``, in MEM_HOST or MEM_HOST_PINNED, with a capacity of at least ``A.nVox()`` voxels
            (its grid is set to A's). Default None: a temporary one. Unused for host data.
        op (mpi4py.MPI.Op, optional): the reduction; default None = ``MPI.SUM``.
        comm (mpi4py.MPI.Comm, optional): the communicator; default None = ``MPI.COMM_WORLD``.

    Returns:
        A (reduced in place).

    Raises:
        TypeError: ``A`` is not an Image3D/Field3D, or ``hA`` is not the same kind.
        ValueError: ``hA`` is in device memory or holds fewer voxels than ``A``.
        ImportError: mpi4py or its MPI library is missing.

    Example:
        ``Reduce(grad)  # every rank now holds the sum of all ranks' gradients``
    """
    if not isinstance(A, (core.Image3D, core.Field3D)):
        raise TypeError("Reduce expects an Image3D or Field3D, got %s" % type(A).__name__)
    op, comm = _defaults(op, comm)
    if A.memType() != core.MEM_DEVICE:
        _allreduce(comm, op, _flat_views(A))
        return A
    if hA is None:
        hA = type(A)(A.grid(), core.MEM_HOST) if type(A) in (core.Image3D, core.Field3D) else \
            (core.Image3D if isinstance(A, core.Image3D) else core.Field3D)(A.grid(), core.MEM_HOST)
    else:
        if isinstance(A, core.Image3D) != isinstance(hA, core.Image3D) or \
                not isinstance(hA, (core.Image3D, core.Field3D)):
            raise TypeError("hA must be the same kind of object as A (Image3D or Field3D)")
        if hA.memType() == core.MEM_DEVICE:
            raise ValueError("hA must be in host memory (MEM_HOST or MEM_HOST_PINNED)")
        if hA.capacity() < A.nVox():
            raise ValueError("hA holds %d voxels, A needs %d" % (hA.capacity(), A.nVox()))
        if hA.grid() != A.grid():
            hA.setGrid(A.grid())
    core.Copy(hA, A)
    _allreduce(comm, op, _flat_views(hA))
    core.Copy(A, hA)
    return A


def ReduceFloat(f: float, op: Any = None, comm: Any = None) -> float:
    """The Allreduce of the number f over the ranks of ``comm`` (default
    MPI.COMM_WORLD) with ``op`` (default MPI.SUM), as a float.

    Args:
        f (float): this rank's number.
        op (mpi4py.MPI.Op, optional): the reduction; default None = ``MPI.SUM``.
        comm (mpi4py.MPI.Comm, optional): the communicator; default None = ``MPI.COMM_WORLD``.

    Returns:
        float: the reduction over all ranks.

    Raises:
        TypeError: ``f`` is not a number.
        ImportError: mpi4py or its MPI library is missing.
    """
    try:
        buf = np.array([float(f)], dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("ReduceFloat expects a number, got %r" % (f,)) from None
    op, comm = _defaults(op, comm)
    inplace = _in_place()
    comm.Allreduce(inplace, buf, op=op)
    return float(buf[0])
