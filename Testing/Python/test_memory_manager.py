"""MemoryManager, ThreadMemoryManager, ManagedImage3D/ManagedField3D
(spec sections 2.7 and 3; the tutorial in shared/seeds)."""
import gc
import re
import threading

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import grid, has_gpu, run_python, to_np

G = grid(64, 64, 32)
SMALL = grid(8, 8, 4)


def pool_bytes(g):
    """Bytes of one pool for grid g (capacity rounded up to 128 floats)."""
    n = g.nVox()
    return ((n + 127) // 128 * 128) * 4


def in_use_indices(mm):
    rep = mm.usageReport()
    return sorted(int(i) for i in re.findall(r"pool (\d+): in use", rep))


# ---------------------------------------------------------------------------
# MemoryManager basics

def test_memory_manager_construction():
    mm = ca.MemoryManager(G, ca.MEM_HOST, 4)
    assert mm.getNumPools() == 4
    assert mm.memType() == ca.MEM_HOST
    assert mm.grid() == G
    assert mm.poolsInUse() == 0
    assert mm.peakInUse() == 0
    assert mm.bytesHeld() == 4 * pool_bytes(G)
    mm0 = ca.MemoryManager(SMALL, ca.MEM_HOST, 0)
    assert mm0.getNumPools() == 0 and mm0.bytesHeld() == 0


def test_memory_manager_grid_is_kept_alive():
    gr = ca.MemoryManager(grid(4, 5, 6, sp=(2, 2, 2)), ca.MEM_HOST, 1).grid()
    gc.collect()
    assert gr.size() == ca.Vec3Di(4, 5, 6) and gr.spacing() == ca.Vec3Df(2, 2, 2)


def test_managed_image_takes_one_pool_field_three():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 10)
    im = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert mm.poolsInUse() == 1
    f = ca.ManagedField3D(SMALL, ca.MEM_HOST, mm)
    assert mm.poolsInUse() == 4
    ims = [ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm) for _ in range(2)]
    assert mm.poolsInUse() == 6  # 3 * nFields + nImages
    assert mm.getNumPools() == 10
    assert isinstance(im, ca.Image3D) and isinstance(f, ca.Field3D)
    assert im.memType() == ca.MEM_HOST and f.memType() == ca.MEM_HOST
    assert im.grid() == SMALL and f.grid() == SMALL
    del im, f, ims
    gc.collect()
    assert mm.poolsInUse() == 0
    assert mm.getNumPools() == 10  # never shrinks by itself


def test_growth_by_one():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 0)
    keep = []
    for k in range(1, 6):
        keep.append(ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm))
        assert mm.getNumPools() == k
    keep.append(ca.ManagedField3D(SMALL, ca.MEM_HOST, mm))
    assert mm.getNumPools() == 8
    keep.pop(0)
    gc.collect()
    keep.append(ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm))  # reuses the free pool
    assert mm.getNumPools() == 8


def test_tutorial_counts_thread_manager():
    ca.ThreadMemoryManager.init(G, ca.MEM_HOST, 4)
    mm = ca.ThreadMemoryManager.instance()
    t1 = ca.ManagedImage3D(G, ca.MEM_HOST)   # 1/4
    t2 = ca.ManagedImage3D(G, ca.MEM_HOST)   # 2/4
    v1 = ca.ManagedField3D(G, ca.MEM_HOST)   # 5/5
    assert (mm.poolsInUse(), mm.getNumPools()) == (5, 5)
    v2 = ca.ManagedField3D(G, ca.MEM_HOST)   # 8/8
    assert (mm.poolsInUse(), mm.getNumPools()) == (8, 8)
    del t1                                   # 7/8
    assert (mm.poolsInUse(), mm.getNumPools()) == (7, 8)
    v3 = ca.ManagedField3D(G, ca.MEM_HOST)   # 10/10
    assert (mm.poolsInUse(), mm.getNumPools()) == (10, 10)
    del v1                                   # 7/10
    assert (mm.poolsInUse(), mm.getNumPools()) == (7, 10)
    t3 = ca.ManagedImage3D(G, ca.MEM_HOST)   # 8/10
    assert (mm.poolsInUse(), mm.getNumPools()) == (8, 10)
    assert mm.maxUsed() == 10
    assert mm.peakInUse() == 10
    del t2, v2, v3, t3


def test_highest_free_index():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 4)
    a = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert in_use_indices(mm) == [3]
    assert mm.maxUsed() == 4
    b = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert in_use_indices(mm) == [2, 3]
    pa = a.rawptr()
    del a
    gc.collect()
    assert in_use_indices(mm) == [2]
    c = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)  # highest free is 3 again
    assert in_use_indices(mm) == [2, 3]
    assert c.rawptr() == pa
    f = ca.ManagedField3D(SMALL, ca.MEM_HOST, mm)  # takes 1, 0, then grows to 4
    assert in_use_indices(mm) == [0, 1, 2, 3, 4]
    assert mm.getNumPools() == 5 and mm.maxUsed() == 5
    del b, c, f


def test_managed_buffers_are_distinct_and_usable():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 2)
    objs = [ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm) for _ in range(3)]
    objs += [ca.ManagedField3D(SMALL, ca.MEM_HOST, mm) for _ in range(2)]
    ptrs = []
    for o in objs:
        if isinstance(o, ca.Field3D):
            ptrs += [o.rawptr_x(), o.rawptr_y(), o.rawptr_z()]
        else:
            ptrs.append(o.rawptr())
    assert len(set(ptrs)) == len(ptrs) == 9
    for k, o in enumerate(objs):
        ca.SetMem(o, float(k))
    for k, o in enumerate(objs):
        vals = to_np(o)
        vals = vals if isinstance(vals, np.ndarray) else np.stack(vals)
        assert np.all(vals == k)


def test_smaller_and_differently_shaped_grids_allowed():
    mm = ca.MemoryManager(G, ca.MEM_HOST, 1)
    for g in (grid(32, 64, 64), grid(100, 100, 1), grid(1, 1, 1), grid(64, 64, 32, sp=(3, 3, 3))):
        im = ca.ManagedImage3D(g, ca.MEM_HOST, mm)
        assert im.grid() == g
        assert im.capacity() == g.nVox()  # the requested size, not the pool size
        del im
    small = ca.ManagedImage3D(grid(4, 4, 4), ca.MEM_HOST, mm)
    with pytest.raises(RuntimeError):
        small.setGrid(grid(5, 5, 5))


def test_grid_too_large_message():
    ca.ThreadMemoryManager.init(G, ca.MEM_HOST, 4)
    with pytest.raises(RuntimeError) as ei:
        ca.ManagedImage3D(grid(64, 64, 64), ca.MEM_HOST)
    msg = str(ei.value)
    assert msg.startswith("PyCA::ManagedImage3D::ManagedImage3D(PyCA::GridInfo const &,"
                          "PyCA::MemoryType):\nPyCAException : From ")
    assert msg.endswith(": Grid too large")
    with pytest.raises(RuntimeError) as ei:
        ca.ManagedField3D(grid(65, 64, 32), ca.MEM_HOST)
    assert str(ei.value).endswith(": Grid too large")
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 1)
    with pytest.raises(RuntimeError) as ei:
        ca.ManagedImage3D(grid(9, 8, 4), ca.MEM_HOST, mm)
    assert str(ei.value).endswith(": Grid too large")
    # nothing leaked by the failed requests
    assert ca.ThreadMemoryManager.instance().poolsInUse() == 0
    assert mm.poolsInUse() == 0


def test_field_partial_failure_returns_pools():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 2)
    mm.setLimit(2 * pool_bytes(SMALL))
    with pytest.raises(MemoryError):
        ca.ManagedField3D(SMALL, ca.MEM_HOST, mm)  # needs a third pool
    gc.collect()
    assert mm.poolsInUse() == 0


# ---------------------------------------------------------------------------
# ThreadMemoryManager

def test_thread_manager_lifecycle():
    assert ca.ThreadMemoryManager.isInitialized() is False
    with pytest.raises(RuntimeError) as ei:
        ca.ThreadMemoryManager.instance()
    assert str(ei.value).endswith(": mMemMan")
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 3)
    assert ca.ThreadMemoryManager.isInitialized() is True
    mm = ca.ThreadMemoryManager.instance()
    assert isinstance(mm, ca.MemoryManager)
    assert mm.getNumPools() == 3 and mm.memType() == ca.MEM_HOST and mm.grid() == SMALL
    im = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    assert ca.ThreadMemoryManager.instance().poolsInUse() == 1
    del im
    ca.ThreadMemoryManager.destroy()
    assert ca.ThreadMemoryManager.isInitialized() is False
    ca.ThreadMemoryManager.destroy()  # no-op when not initialised
    # the handle from instance() stays usable after destroy()
    assert mm.getNumPools() == 3
    # without a thread manager, managed objects are plain allocations
    im = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    ca.SetMem(im, 2.0)
    assert ca.Sum(im) == 2.0 * SMALL.nVox()


def test_init_twice_replaces():
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 2)
    a = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    ca.SetMem(a, 7.0)
    first = ca.ThreadMemoryManager.instance()
    ca.ThreadMemoryManager.init(grid(4, 4, 4), ca.MEM_HOST, 5)
    second = ca.ThreadMemoryManager.instance()
    assert second.getNumPools() == 5 and second.grid() == grid(4, 4, 4)
    assert first.getNumPools() == 2 and first.poolsInUse() == 1
    assert np.all(to_np(a) == 7.0)
    b = ca.ManagedImage3D(grid(4, 4, 4), ca.MEM_HOST)
    assert second.poolsInUse() == 1
    del a
    gc.collect()
    assert first.poolsInUse() == 0
    del b


def test_thread_manager_memtype_mismatch_falls_back_silently():
    # A manager of another memory type with 0 pools allocates nothing, so
    # this also runs without a GPU.
    other = ca.MEM_DEVICE if not has_gpu else ca.MEM_HOST
    mine = ca.MEM_HOST if not has_gpu else ca.MEM_DEVICE
    ca.ThreadMemoryManager.init(SMALL, other, 0)
    mm = ca.ThreadMemoryManager.instance()
    im = ca.ManagedImage3D(SMALL, mine)
    f = ca.ManagedField3D(SMALL, mine)
    assert im.memType() == mine and f.memType() == mine
    assert mm.poolsInUse() == 0 and mm.getNumPools() == 0
    ca.SetMem(im, 1.5)
    ca.SetMem(f, 2.0)
    assert ca.Sum(im) == pytest.approx(1.5 * SMALL.nVox())
    assert ca.Sum(f) == pytest.approx(6.0 * SMALL.nVox())
    # a grid larger than the manager's is fine too: the manager is not used
    big = ca.ManagedImage3D(grid(16, 16, 16), mine)
    assert big.nVox() == 4096


def test_explicit_manager_memtype_mismatch_raises():
    other = ca.MEM_DEVICE if not has_gpu else ca.MEM_HOST
    mine = ca.MEM_HOST if not has_gpu else ca.MEM_DEVICE
    mm = ca.MemoryManager(SMALL, other, 0)
    with pytest.raises(RuntimeError) as ei:
        ca.ManagedImage3D(SMALL, mine, mm)
    msg = str(ei.value)
    assert msg.startswith("PyCA::ManagedImage3D::ManagedImage3D(PyCA::GridInfo const &,"
                          "PyCA::MemoryType,PyCA::MemoryManager &):\nPyCAException : From ")
    assert msg.endswith(": MemoryManager memType does not match")
    with pytest.raises(RuntimeError) as ei:
        ca.ManagedField3D(SMALL, mine, mm)
    assert str(ei.value).endswith(": MemoryManager memType does not match")


def test_thread_manager_is_per_python_thread():
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 2)
    seen = {}

    def worker():
        try:
            seen["initialized"] = ca.ThreadMemoryManager.isInitialized()
            ca.ThreadMemoryManager.init(grid(2, 2, 2), ca.MEM_HOST, 7)
            seen["pools"] = ca.ThreadMemoryManager.instance().getNumPools()
            im = ca.ManagedImage3D(grid(2, 2, 2), ca.MEM_HOST)
            seen["in_use"] = ca.ThreadMemoryManager.instance().poolsInUse()
            del im
            ca.ThreadMemoryManager.destroy()
            seen["after"] = ca.ThreadMemoryManager.isInitialized()
        except Exception as e:  # pragma: no cover - reported below
            seen["error"] = repr(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "error" not in seen, seen.get("error")
    assert seen == {"initialized": False, "pools": 7, "in_use": 1, "after": False}
    # the main thread's manager is untouched
    assert ca.ThreadMemoryManager.isInitialized()
    mm = ca.ThreadMemoryManager.instance()
    assert mm.getNumPools() == 2 and mm.grid() == SMALL and mm.poolsInUse() == 0


# ---------------------------------------------------------------------------
# extensions: statistics, limits, release

def test_statistics_and_reset_peak():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 2)
    a = ca.ManagedField3D(SMALL, ca.MEM_HOST, mm)
    b = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert mm.poolsInUse() == 4 and mm.peakInUse() == 4
    assert mm.bytesHeld() == 4 * pool_bytes(SMALL)
    del a
    gc.collect()
    assert mm.poolsInUse() == 1 and mm.peakInUse() == 4
    mm.resetPeak()
    assert mm.peakInUse() == 1
    c = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert mm.peakInUse() == 2
    rep = mm.usageReport()
    assert len(in_use_indices(mm)) == 2
    assert str(pool_bytes(SMALL)) in rep
    del b, c
    gc.collect()
    assert mm.usageReport() == "no pools in use"
    s = str(mm)
    assert "MEM_HOST" in s and "4 pools" in s


def test_release_unused():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 5)
    keep = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    ca.SetMem(keep, 3.0)
    assert mm.releaseUnused() == 4
    assert mm.getNumPools() == 1 and mm.bytesHeld() == pool_bytes(SMALL)
    assert np.all(to_np(keep) == 3.0)  # the pool in use survives
    again = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert mm.getNumPools() == 2
    assert again.rawptr() != keep.rawptr()
    del keep
    gc.collect()
    assert mm.releaseUnused() == 1
    del again
    gc.collect()
    assert mm.releaseUnused() == 1
    assert mm.getNumPools() == 0 and mm.bytesHeld() == 0


def test_set_limit():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 2)
    limit = 3 * pool_bytes(SMALL)
    mm.setLimit(limit)
    assert mm.limit() == limit
    a = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    b = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    c = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)  # third pool: exactly at the limit
    assert mm.getNumPools() == 3
    with pytest.raises(MemoryError) as ei:
        ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    msg = str(ei.value)
    assert "request" in msg and "in use" in msg and "limit" in msg
    assert str(limit) in msg                 # the limit
    assert str(pool_bytes(SMALL)) in msg     # the request
    assert "3 of 3 pools" in msg             # in use
    assert mm.getNumPools() == 3 and mm.poolsInUse() == 3
    del c
    gc.collect()
    d = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)  # a free pool needs no growth
    mm.setLimit(0)                                  # no cap
    assert mm.limit() == 0
    e = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert mm.getNumPools() == 4
    del a, b, d, e


# ---------------------------------------------------------------------------
# lifetime safety

def test_destroy_while_managed_objects_live():
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 2)
    im = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    f = ca.ManagedField3D(SMALL, ca.MEM_HOST)
    ca.SetMem(im, 4.0)
    ca.SetMem(f, ca.Vec3Df(1, 2, 3))
    ca.ThreadMemoryManager.destroy()
    gc.collect()
    # still usable
    assert np.all(to_np(im) == 4.0)
    ca.MulC_I(im, 2.0)
    assert ca.Sum(im) == pytest.approx(8.0 * SMALL.nVox())
    n = SMALL.nVox()
    assert ca.SumComp(f) == ca.Vec3Df(1 * n, 2 * n, 3 * n)
    im.resize(grid(3, 3, 3))
    # new managed objects now come from plain allocations
    g = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    ca.Copy(g, to_np_image(4.0))
    del im, f, g
    gc.collect()


def to_np_image(v):
    im = ca.Image3D(SMALL, ca.MEM_HOST)
    ca.SetMem(im, v)
    return im


def test_destroy_then_delete_in_fresh_process():
    code = r'''
import gc, PyCA.Core as ca
g = ca.GridInfo(ca.Vec3Di(16, 16, 16))
ca.ThreadMemoryManager.init(g, ca.MEM_HOST, 2)
objs = [ca.ManagedImage3D(g, ca.MEM_HOST) for _ in range(3)] + [ca.ManagedField3D(g, ca.MEM_HOST)]
for o in objs:
    ca.SetMem(o, 1.0)
mm = ca.MemoryManager(g, ca.MEM_HOST, 1)
local = [ca.ManagedImage3D(g, ca.MEM_HOST, mm) for _ in range(3)]
ca.ThreadMemoryManager.destroy()
del mm
gc.collect()
tot = sum(ca.Sum(o) for o in objs)
for o in local:
    ca.SetMem(o, 2.0)
tot2 = sum(ca.Sum(o) for o in local)
del objs
gc.collect()
del local
gc.collect()
ca.ThreadMemoryManager.init(g, ca.MEM_HOST, 1)
x = ca.ManagedImage3D(g, ca.MEM_HOST)
ca.ThreadMemoryManager.destroy()
print("OK", tot, tot2)
'''
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["OK", str(6.0 * 4096), str(6.0 * 4096)]


def test_view_keeps_pool_in_use():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 1)
    im = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    ca.SetMem(im, 5.0)
    v = im.asnp()
    ptr = im.rawptr()
    del im
    gc.collect()
    assert mm.poolsInUse() == 1  # the view still uses the pool
    other = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert other.rawptr() != ptr and mm.getNumPools() == 2
    ca.SetMem(other, -1.0)
    assert np.all(v == 5.0)
    del v
    gc.collect()
    assert mm.poolsInUse() == 1
    again = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert again.rawptr() == ptr  # the pool came back
    f = ca.ManagedField3D(SMALL, ca.MEM_HOST, mm)
    vy = f.y_asnp()
    del f
    gc.collect()
    assert mm.poolsInUse() == 3  # again + the y pool held by the view
    del vy
    gc.collect()
    assert mm.poolsInUse() == 2


def test_resize_and_totype_release_the_pool():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 1)
    im = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    ca.SetMem(im, 1.0)
    im.resize(grid(9, 9, 9))
    gc.collect()
    assert mm.poolsInUse() == 0
    ca.SetMem(im, 2.0)
    assert ca.Sum(im) == 2.0 * 729
    b = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    assert b.rawptr() != im.rawptr()


def all_ptrs(objs):
    out = []
    for o in objs:
        if isinstance(o, ca.Field3D):
            out += [o.rawptr_x(), o.rawptr_y(), o.rawptr_z()]
        elif o.nVox() > 0:
            out.append(o.rawptr())
    return out


def test_swap_managed_unmanaged_never_aliases():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 1)
    m = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    u = ca.Image3D(SMALL, ca.MEM_HOST)
    ca.SetMem(m, 1.0)
    ca.SetMem(u, 2.0)
    pool_ptr = m.rawptr()
    m.swap(u)
    assert u.rawptr() == pool_ptr
    del m  # the managed object now holds the private buffer
    gc.collect()
    assert mm.poolsInUse() == 1  # the pool is still used by u
    live = [u]
    for _ in range(4):
        live.append(ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm))
        ptrs = all_ptrs(live)
        assert len(set(ptrs)) == len(ptrs)
    for k, o in enumerate(live[1:]):
        ca.SetMem(o, 10.0 + k)
    del o
    assert np.all(to_np(u) == 1.0)
    del live[1:]
    gc.collect()
    assert mm.poolsInUse() == 1
    del u, live
    gc.collect()
    assert mm.poolsInUse() == 0


def test_swap_managed_fields_never_aliases():
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 3)
    m = ca.ManagedField3D(SMALL, ca.MEM_HOST, mm)
    u = ca.Field3D(SMALL, ca.MEM_HOST)
    m2 = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)
    u2 = ca.Image3D(SMALL, ca.MEM_HOST)
    m.swap(u)
    m2.swap(u2)
    del m, m2
    gc.collect()
    live = [u, u2]
    for _ in range(3):
        live.append(ca.ManagedField3D(SMALL, ca.MEM_HOST, mm))
        live.append(ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm))
        ptrs = all_ptrs(live)
        assert len(set(ptrs)) == len(ptrs)
    # swapping two managed objects keeps every pool accounted for
    a, b = live[2], live[3]
    a_before = all_ptrs([a])
    live[2].swap(ca.ManagedField3D(SMALL, ca.MEM_HOST, mm))
    gc.collect()
    ptrs = all_ptrs(live)
    assert len(set(ptrs)) == len(ptrs)
    assert set(a_before).isdisjoint(all_ptrs([a]))
    del a, b, live, u, u2
    gc.collect()
    assert mm.poolsInUse() == 0


# ---------------------------------------------------------------------------
# the "Maximum temporary Pools" line

def test_destructor_prints_max_pools(capfd):
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 2)
    a = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)   # pool 1
    b = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)   # pool 0
    c = ca.ManagedImage3D(SMALL, ca.MEM_HOST, mm)   # pool 2 (new)
    del a, b, c
    gc.collect()
    capfd.readouterr()
    del mm
    gc.collect()
    err = capfd.readouterr().err
    assert err.count("Maximum temporary Pools") == 1
    assert "Maximum temporary Pools 3\n" in err


def test_destructor_prints_one_when_unused(capfd):
    gc.collect()
    mm = ca.MemoryManager(SMALL, ca.MEM_HOST, 3)
    capfd.readouterr()
    del mm
    gc.collect()
    assert capfd.readouterr().err == "Maximum temporary Pools 1\n"


def test_thread_destroy_prints_once(capfd):
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 4)
    a = ca.ManagedImage3D(SMALL, ca.MEM_HOST)  # pool 3
    b = ca.ManagedImage3D(SMALL, ca.MEM_HOST)  # pool 2
    handle = ca.ThreadMemoryManager.instance()
    gc.collect()
    capfd.readouterr()
    ca.ThreadMemoryManager.destroy()
    err = capfd.readouterr().err
    assert err == "Maximum temporary Pools 4\n"
    del a, b, handle
    gc.collect()
    assert "Maximum temporary Pools" not in capfd.readouterr().err


def test_thread_release_is_quiet(capfd):
    """release() (the apps' documented quiet end) deletes the manager without
    the line, now and when the buffers and handle Python still holds die."""
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 4)
    a = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    handle = ca.ThreadMemoryManager.instance()
    gc.collect()
    capfd.readouterr()
    ca.ThreadMemoryManager.release()
    assert not ca.ThreadMemoryManager.isInitialized()
    ca.SetMem(a, 1.0)                                   # the buffer stays usable
    del a, handle
    gc.collect()
    ca.ThreadMemoryManager.release()                   # no manager: a no-op
    assert capfd.readouterr().err == ""


def test_apps_end_quietly_without_touching_fd2(capfd):
    """The apps' release_thread_memory_manager prints nothing and leaves file
    descriptor 2 alone (no /dev/null redirection around it)."""
    import os
    from PyCA.Apps._common import release_thread_memory_manager
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 2)
    before = os.fstat(2)
    release_thread_memory_manager()
    after = os.fstat(2)
    assert (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    assert not ca.ThreadMemoryManager.isInitialized()
    assert capfd.readouterr().err == ""


def test_init_twice_reports_previous(capfd):
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 2)
    x = ca.ManagedImage3D(SMALL, ca.MEM_HOST)
    del x
    gc.collect()
    capfd.readouterr()
    ca.ThreadMemoryManager.init(SMALL, ca.MEM_HOST, 2)
    gc.collect()
    assert "Maximum temporary Pools 2\n" in capfd.readouterr().err


# ---------------------------------------------------------------------------
# GPU

@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_device_memory_manager():
    ca.ThreadMemoryManager.init(G, ca.MEM_DEVICE, 4)
    mm = ca.ThreadMemoryManager.instance()
    ims = [ca.ManagedImage3D(G, ca.MEM_DEVICE) for _ in range(2)]
    fs = [ca.ManagedField3D(G, ca.MEM_DEVICE) for _ in range(2)]
    assert mm.getNumPools() == 8 and mm.poolsInUse() == 8
    for k, o in enumerate(ims + fs):
        ca.SetMem(o, float(k + 1))
    assert ca.Sum(ims[1]) == pytest.approx(2.0 * G.nVox())
    assert ca.Sum(fs[1]) == pytest.approx(3 * 4.0 * G.nVox())
    host = ca.ManagedImage3D(G, ca.MEM_HOST)  # other memType: private allocation
    assert host.memType() == ca.MEM_HOST and mm.poolsInUse() == 8
    with pytest.raises(RuntimeError) as ei:
        ca.ManagedImage3D(grid(64, 64, 64), ca.MEM_DEVICE)
    assert str(ei.value).endswith(": Grid too large")
