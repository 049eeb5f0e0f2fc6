"""PyCA.Parallel (spec 5.4): in-place Allreduce of images and fields, and
the ranks' context (GetWorld, SerialComm, RankContext, Sum64).

Without MPI: import works, calls say what to install, and a fake
communicator checks that the reduction runs in place on the voxel views.
With mpi4py (``./run`` installs mpi4py and the mpich wheel when it can):
COMM_SELF reductions, and a real two-rank run under mpiexec."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Parallel as par
from conftest import field_from, grid, has_gpu, image_from, run_python, to_np

RNG = np.random.default_rng(5)


def _mpi():
    try:
        from mpi4py import MPI
        return MPI
    except Exception:
        return None


MPI = _mpi()
needs_mpi = pytest.mark.skipif(MPI is None, reason="mpi4py with an MPI library is not installed "
                                                    "(pip install mpi4py mpich)")


def _mpiexec():
    for cand in (os.path.join(os.path.dirname(sys.executable), "mpiexec"), shutil.which("mpiexec")):
        if cand and os.path.exists(cand):
            return cand
    return None


class FakeComm(object):
    """A communicator of n identical ranks: a SUM Allreduce multiplies by n."""

    def __init__(self, n):
        self.n = n
        self.calls = []

    def Allreduce(self, sendbuf, recvbuf, op=None):
        assert isinstance(recvbuf, np.ndarray) and recvbuf.ndim == 1 and recvbuf.flags.c_contiguous
        self.calls.append((op, recvbuf.size))
        recvbuf *= self.n


def test_import_without_mpi4py_and_message():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import PyCA.Core as ca, PyCA.Parallel as p\n"
            "im = ca.Image3D(ca.GridInfo(ca.Vec3Di(2, 2, 1)), ca.MEM_HOST)\n"
            "for f, a in ((p.Reduce, im), (p.ReduceFloat, 1.0)):\n"
            "    try:\n"
            "        f(a)\n"
            "    except ImportError as e:\n"
            "        print('ImportError:', e)\n"
            "try:\n"
            "    p.MPI\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("ImportError:")]
    assert len(lines) == 3
    for l in lines:
        assert "mpi4py" in l and "pip install mpi4py" in l and "libopenmpi-dev openmpi-bin" in l


def test_fake_comm_reduces_in_place():
    a = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    im = image_from(a)
    view = im.asnp()
    comm = FakeComm(3)
    assert par.Reduce(im, op="SUM", comm=comm) is im
    assert np.allclose(to_np(im), 3 * a) and np.shares_memory(view, im.asnp())
    assert comm.calls == [("SUM", 60)]
    comps = [RNG.standard_normal((3, 3, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(comps)
    par.Reduce(f, op="SUM", comm=FakeComm(2))
    for c, v in zip(comps, to_np(f)):
        assert np.allclose(v, 2 * c)
    assert par.ReduceFloat(2.5, op="SUM", comm=FakeComm(4)) == 10.0


def test_reduce_errors():
    comm = FakeComm(1)
    with pytest.raises(TypeError):
        par.Reduce(np.zeros(3), op="SUM", comm=comm)
    with pytest.raises(TypeError):
        par.ReduceFloat("x", op="SUM", comm=comm)


@needs_mpi
def test_reduce_comm_self_equals_input():
    a = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    im = image_from(a)
    par.Reduce(im, comm=MPI.COMM_SELF)
    assert np.array_equal(to_np(im), a)
    par.Reduce(im, op=MPI.MAX, comm=MPI.COMM_SELF)
    assert np.array_equal(to_np(im), a)
    comps = [RNG.standard_normal((4, 3, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(comps)
    par.Reduce(f, comm=MPI.COMM_SELF)
    for c, v in zip(comps, to_np(f)):
        assert np.array_equal(v, c)
    assert par.ReduceFloat(1.25, comm=MPI.COMM_SELF) == 1.25
    assert par.MPI is MPI
    empty = ca.Image3D(grid(0, 3, 1), ca.MEM_HOST)
    par.Reduce(empty, comm=MPI.COMM_SELF)


@needs_mpi
def test_reduce_default_world_single_process():
    a = RNG.standard_normal((3, 3, 3)).astype(np.float32)
    im = image_from(a)
    par.Reduce(im)  # COMM_WORLD of a singleton run: one rank
    assert np.array_equal(to_np(im), a * MPI.COMM_WORLD.Get_size())


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_device_staging_through_host_buffer():
    a = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    im = image_from(a, mem=ca.MEM_DEVICE)
    hA = ca.Image3D(im.grid(), ca.MEM_HOST_PINNED)
    par.Reduce(im, hA, op="SUM", comm=FakeComm(2))
    assert im.memType() == ca.MEM_DEVICE and np.allclose(to_np(im), 2 * a)
    assert np.allclose(to_np(hA), 2 * a)
    par.Reduce(im, op="SUM", comm=FakeComm(2))  # a temporary host buffer
    assert np.allclose(to_np(im), 4 * a)
    f = field_from([a, a, a], mem=ca.MEM_DEVICE)
    par.Reduce(f, ca.Field3D(f.grid(), ca.MEM_HOST), op="SUM", comm=FakeComm(3))
    assert np.allclose(to_np(f)[2], 3 * a)
    with pytest.raises(ValueError):
        par.Reduce(im, ca.Image3D(grid(2, 2, 2), ca.MEM_HOST), op="SUM", comm=FakeComm(1))
    with pytest.raises(TypeError):
        par.Reduce(im, ca.Field3D(im.grid(), ca.MEM_HOST), op="SUM", comm=FakeComm(1))
    with pytest.raises(ValueError):
        par.Reduce(im, ca.Image3D(im.grid(), ca.MEM_DEVICE), op="SUM", comm=FakeComm(1))


def test_serial_comm_and_rank_context_without_mpi4py():
    """GetWorld is a SerialComm without mpi4py; a RankContext of one rank
    communicates nothing; Sum64 sums in float64 and rounds once."""
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import numpy as np, PyCA.Core as ca, PyCA.Parallel as p\n"
            "w = p.GetWorld()\n"
            "assert isinstance(w, p.SerialComm) and (w.Get_rank(), w.Get_size()) == (0, 1)\n"
            "assert w.bcast('x') == 'x' and w.allgather(3) == [3] and w.Barrier() is None\n"
            "c = p.RankContext(w)\n"
            "assert (c.rank, c.size) == (0, 1) and c.sumf(2) == 2.0 and type(c.sumf(2)) is float\n"
            "assert c.bcast([1]) == [1] and c.all_ok(1) is True and c.all_ok(0) is False\n"
            "assert c.first_failure(None) is None\n"
            "assert c.first_failure(OSError('bad\\n  file')) == (0, 'OSError: bad file')\n"
            "assert c.first_failure(ValueError()) == (0, 'ValueError: ValueError')\n"
            "c.barrier()\n"
            "im = ca.Image3D(ca.GridInfo(ca.Vec3Di(3, 2, 1)), ca.MEM_HOST)\n"
            "s = p.Sum64(c, im)\n"
            "for v in (1e8, 1.0, -1e8):\n"
            "    im.asnp()[...] = v\n"
            "    s.add(im)\n"
            "s.store(im, s.allreduce())\n"
            "assert np.all(im.asnp() == 1.0)  # float32 sums would give 0\n"
            "print('ok')\n")
    r = run_python(code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_sum64_fields_and_zero():
    ctx = par.RankContext(par.SerialComm())
    comps = [RNG.standard_normal((4, 3, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(comps)
    s = par.Sum64(ctx, f)
    assert s.acc.shape == (3, 4, 3, 2) and s.acc.dtype == np.float64
    s.add(f)
    s.add(f)
    out = ca.Field3D(f.grid(), ca.MEM_HOST)
    s.store(out, s.allreduce() / 2)
    for c, v in zip(comps, to_np(out)):
        assert np.array_equal(v, c)
    s.zero()
    assert not s.acc.any()


SCRIPT = r"""
import numpy as np
from mpi4py import MPI
import PyCA.Core as ca, PyCA.Common as common, PyCA.Parallel as par
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
im = ca.Image3D(ca.GridInfo(ca.Vec3Di(7, 5, 3)), ca.MEM_HOST)
a = np.arange(105, dtype=np.float32).reshape(7, 5, 3, order='F')
im.asnp()[...] = a * (rank + 1)
par.Reduce(im)
assert np.array_equal(im.asnp(), a * sum(range(1, size + 1))), rank
f = ca.Field3D(ca.GridInfo(ca.Vec3Di(4, 3, 2)), ca.MEM_HOST)
for v in f.asnp():
    v[...] = rank
par.Reduce(f, op=MPI.MAX)
assert all(np.all(v == size - 1) for v in f.asnp())
# a field of odd size: the SUM equals NumPy's sum of every rank's values
g = ca.Field3D(ca.GridInfo(ca.Vec3Di(5, 3, 7)), ca.MEM_HOST)
vals = [np.random.RandomState(r).randint(-50, 50, (3, 5, 3, 7)).astype(np.float32) for r in range(size)]
for d, v in enumerate(g.asnp()):
    v[...] = vals[rank][d]
par.Reduce(g)
ref = np.sum(vals, axis=0)
assert all(np.array_equal(v, ref[d]) for d, v in enumerate(g.asnp())), rank
assert par.ReduceFloat(rank + 0.5) == sum(r + 0.5 for r in range(size))
# the ranks' context and float64 sums (PyCA.Parallel.comm)
ctx = par.RankContext(comm)
assert (ctx.rank, ctx.size) == (rank, size) and ctx.sumf(rank) == sum(range(size))
assert ctx.bcast(rank) == 0 and ctx.all_ok(True) and not ctx.all_ok(rank != size - 1)
# the lowest failed rank, the same on every rank; None when none failed
assert ctx.first_failure(None) is None
bad = (lambda r: OSError('rank %d failed' % r) if r >= size // 2 else None)
assert ctx.first_failure(bad(rank)) == (size // 2, 'OSError: rank %d failed' % (size // 2)), rank
ctx.barrier()
acc = par.Sum64(ctx, im)
im.asnp()[...] = rank + 0.25
acc.add(im)
acc.store(im, acc.allreduce())
assert np.all(im.asnp() == np.float32(sum(r + 0.25 for r in range(size)))), rank
mine = common.Distribute(10, size, rank)
assert sorted(sum(comm.allgather(mine), [])) == list(range(10))
done = comm.gather(rank)  # one line from rank 0 (the ranks' output may interleave)
if rank == 0:
    print('ranks %s ok' % sorted(done))
"""


@needs_mpi
@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_ranks_under_mpiexec(tmp_path, nranks):
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    script = tmp_path / "reduce.py"
    script.write_text(SCRIPT)
    try:
        r = subprocess.run([mpiexec, "-n", str(nranks), sys.executable, str(script)], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        pytest.fail("mpiexec -n %d did not finish in 120 s" % nranks)
    if r.returncode != 0 and ("not found" in r.stderr.lower() or "cannot" in r.stderr.lower()) \
            and "ok" not in r.stdout:
        pytest.skip("mpiexec could not start %d ranks here: %s" % (nranks, r.stderr.strip()[:300]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ranks %s ok" % list(range(nranks)) in r.stdout
