"""Communicators for code that runs in one process or over MPI ranks.

``GetWorld()`` is mpi4py's COMM_WORLD when mpi4py and an MPI library load,
else a :class:`SerialComm` (one process, no MPI needed); :class:`RankContext`
wraps either with the few collective steps a program needs (sums of
numbers, barriers, broadcasts, an all-ranks-agree flag), each a no-op on
one rank; :class:`Sum64` sums Image3Ds or Field3Ds over the ranks in
float64, so that the result does not depend on the number of ranks.
PyCA.Apps.atlas builds on them. Importing this module needs no MPI.
"""
import os

import numpy as np

import PyCA.Core as core

from .PyCAParallel import GetMPI, ReduceFloat

__all__ = ['SerialComm', 'GetWorld', 'RankContext', 'Sum64']


class SerialComm:
    """The one-process stand-in for an mpi4py communicator (rank 0 of 1):
    collective calls return at once (``bcast`` and ``allgather`` return
    this rank's object)."""

    def Get_rank(self):
        """This process's rank.

        Returns:
            int: 0.
        """
        return 0

    def Get_size(self):
        """The number of ranks.

        Returns:
            int: 1.
        """
        return 1

    def Barrier(self):
        """A barrier of one rank (returns at once)."""
        pass

    def bcast(self, obj, root=0):
        """The broadcast of one rank.

        Args:
            obj (object): the object to broadcast.
            root (int): the broadcasting rank; default 0.

        Returns:
            object: ``obj``.
        """
        return obj

    def allgather(self, obj):
        """The gather of one rank.

        Args:
            obj (object): this rank's object.

        Returns:
            list: ``[obj]``.
        """
        return [obj]

    def Abort(self, code=1):  # pragma: no cover
        """Ends the process at once (``os._exit``), as MPI_Abort ends a job.

        Args:
            code (int): the exit status; default 1.
        """
        os._exit(code)


def GetWorld():
    """mpi4py's COMM_WORLD when mpi4py and an MPI library load, else a
    :class:`SerialComm` (one process).

    Returns:
        mpi4py.MPI.Comm or SerialComm: the communicator of all ranks.
    """
    try:
        from mpi4py import MPI
        return MPI.COMM_WORLD
    except Exception:
        return SerialComm()


def exception_line(exc):
    """An exception as one line, ``'Type: message'`` (its whitespace runs
    folded to one space; the type's name where the message is empty).

    Args:
        exc (BaseException): the exception.

    Returns:
        str: the line.
    """
    return '%s: %s' % (type(exc).__name__, ' '.join(str(exc).split()) or type(exc).__name__)


class RankContext:
    """A communicator with its rank and size, and the collective steps of a
    program that runs on one or several ranks; on one rank none of them
    communicates (nor needs mpi4py).

    Args:
        comm (mpi4py.MPI.Comm or SerialComm): the communicator.

    Attributes:
        comm (mpi4py.MPI.Comm or SerialComm): the communicator.
        rank (int): this rank.
        size (int): the number of ranks.
    """

    def __init__(self, comm):
        self.comm = comm
        self.rank = int(comm.Get_rank())
        self.size = int(comm.Get_size())

    def sumf(self, x):
        """The sum of a number over the ranks (:func:`ReduceFloat`).

        Args:
            x (float): this rank's number.

        Returns:
            float: the sum over all ranks.
        """
        if self.size > 1:
            return ReduceFloat(x, comm=self.comm)
        return float(x)

    def barrier(self):
        """Waits until every rank got here (nothing on one rank)."""
        if self.size > 1:
            self.comm.Barrier()

    def bcast(self, obj, root=0):
        """``obj`` of rank ``root`` on every rank.

        Args:
            obj (object): the object (used on ``root`` only).
            root (int): the broadcasting rank; default 0.

        Returns:
            object: rank ``root``'s object.
        """
        return self.comm.bcast(obj, root=root) if self.size > 1 else obj

    def all_ok(self, ok):
        """True on every rank when ``ok`` is true on every rank.

        Args:
            ok (bool): this rank's flag.

        Returns:
            bool: whether every rank's flag is true.
        """
        if self.size == 1:
            return bool(ok)
        return all(self.comm.allgather(bool(ok)))

    def first_failure(self, exc):
        """The lowest rank whose step failed and its exception's line, the
        same on every rank (one allgather), or None when no rank failed. A
        step that only reads (a rank's own subjects, its checkpoint state)
        then ends alike on every rank, without ``Abort``.

        Args:
            exc (BaseException or None): this rank's exception, None if its step succeeded.

        Returns:
            tuple of (int, str) or None: (rank, ``'Type: message'``) of the lowest failed rank.
        """
        line = None if exc is None else exception_line(exc)
        lines = self.comm.allgather(line) if self.size > 1 else [line]
        for r, ln in enumerate(lines):
            if ln is not None:
                return r, ln
        return None


class Sum64:
    """A float64 host accumulator of Image3Ds or Field3Ds, summed over the
    ranks by an Allreduce of its float64 buffer. Float64 sums rounded once to
    float32 do not depend on the order of the additions (in practice: bitwise
    the same atlas for any number of ranks); float32 sums would, and a
    last-bit difference can flip a step acceptance of a later registration
    (4e-3 relative after 3 iterations on a 40x40 test). Device data is staged
    through one pinned host Image3D/Field3D.

    Args:
        ctx (RankContext): the ranks to sum over.
        like (Image3D or Field3D): the kind and grid of what is summed.

    Attributes:
        acc (numpy.ndarray): the float64 sum, (x, y, z) for images and
            (3, x, y, z) for fields.
    """

    def __init__(self, ctx, like):
        self.ctx = ctx
        self.field = isinstance(like, core.Field3D)
        self.grid = like.grid()
        self.cls = core.Field3D if self.field else core.Image3D
        size = tuple(like.size())
        self.acc = np.zeros(((3,) if self.field else ()) + size, np.float64)
        self.stage = None

    def _host(self, obj):
        if obj.memType() != core.MEM_DEVICE:
            return obj
        if self.stage is None:
            self.stage = self.cls(self.grid, core.MEM_HOST_PINNED)
        core.Copy(self.stage, obj)
        return self.stage

    def zero(self):
        """Sets the sum to zero."""
        self.acc[...] = 0.0

    def add(self, obj):
        """Adds an image or field (any memory type) to this rank's sum.

        Args:
            obj (Image3D or Field3D): what to add, on the accumulator's grid.
        """
        h = self._host(obj)
        if self.field:
            for d, c in enumerate(h.asnp()):
                self.acc[d] += c
        else:
            self.acc += h.asnp()

    def allreduce(self):
        """Sums the accumulators of all ranks, in place (one Allreduce; nothing
        on one rank).

        Returns:
            numpy.ndarray: the accumulator (the sum over all ranks).
        """
        if self.ctx.size > 1:
            MPI = GetMPI()
            self.ctx.comm.Allreduce(MPI.IN_PLACE, self.acc, op=MPI.SUM)
        return self.acc

    def store(self, out, values):
        """out (any memory type) = values (float64 array), rounded to float32.

        Args:
            out (Image3D or Field3D): the destination, of the accumulator's kind and grid.
            values (numpy.ndarray): float64 values shaped like :attr:`acc`.
        """
        h = out if out.memType() != core.MEM_DEVICE else None
        if h is None:
            if self.stage is None:
                self.stage = self.cls(self.grid, core.MEM_HOST_PINNED)
            h = self.stage
        if self.field:
            for d, c in enumerate(h.asnp()):
                np.copyto(c, values[d], casting='unsafe')
        else:
            np.copyto(h.asnp(), values, casting='unsafe')
        if h is not out:
            core.Copy(out, h)
