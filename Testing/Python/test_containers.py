"""Image3D and Field3D (spec sections 2.4, 2.5, 5.1)."""
import gc
import os

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import (cuda_compiled, field_from, gpu_only, grid, has_gpu, image_from,
                      run_python, to_np)

RNG = np.random.default_rng(1234)
SHAPES = [(4, 3, 2), (17, 19, 23), (31, 33, 1), (1, 1, 1), (5, 1, 7)]


# ---------------------------------------------------------------------------
# construction and memory placement

@pytest.mark.parametrize("cls", [ca.Image3D, ca.Field3D])
def test_constructors(cls):
    e = cls(ca.MEM_HOST)
    assert e.memType() == ca.MEM_HOST
    assert e.size() == ca.Vec3Di(0, 0, 0)
    assert e.nVox() == 0 and e.capacity() == 0
    g = grid(4, 3, 2, sp=(1.5, 2, 3), org=(1, 2, 3))
    a = cls(g, ca.MEM_HOST)
    assert a.grid() == g and a.nVox() == 24 and a.capacity() >= 24
    assert a.memType() == ca.MEM_HOST
    b = cls(g)  # memType defaults to MEM_HOST
    assert b.memType() == ca.MEM_HOST and b.grid() == g
    c = cls(4, 3, 2)
    assert c.size() == ca.Vec3Di(4, 3, 2)
    assert c.spacing() == ca.Vec3Df(1, 1, 1) and c.origin() == ca.Vec3Df(0, 0, 0)
    assert c.memType() == ca.MEM_HOST
    d = cls(5, 6, 7, ca.MEM_HOST)
    assert d.size() == ca.Vec3Di(5, 6, 7) and d.nVox() == 210
    assert a.voxelVol() == pytest.approx(9.0)


@pytest.mark.parametrize("cls", [ca.Image3D, ca.Field3D])
def test_memtype_queries_host(cls):
    a = cls(grid(2, 2, 2), ca.MEM_HOST)
    assert a.onHost() is True
    assert a.onDev() is False


@pytest.mark.skipif(has_gpu, reason="checks the no-GPU error path")
@pytest.mark.parametrize("cls", [ca.Image3D, ca.Field3D])
@pytest.mark.parametrize("mem", [ca.MEM_DEVICE, ca.MEM_HOST_PINNED])
def test_gpu_memory_without_cuda_raises(cls, mem):
    with pytest.raises(RuntimeError) as ei:
        cls(grid(4, 3, 2), mem)
    if not cuda_compiled():
        assert "CUDA support not compiled" in str(ei.value)
    with pytest.raises(RuntimeError):
        cls(4, 3, 2, mem)
    a = cls(grid(4, 3, 2), ca.MEM_HOST)
    with pytest.raises(RuntimeError) as ei:
        a.toType(mem)
    if not cuda_compiled():
        assert "CUDA support not compiled" in str(ei.value)
    # the failed move leaves the object usable on the host
    assert a.memType() == ca.MEM_HOST
    ca.SetMem(a, 2.0)
    assert ca.Sum(a) == pytest.approx(48.0 * (3 if cls is ca.Field3D else 1))


def test_gpu_count_is_consistent():
    n = ca.GetNumberOfCUDADevices()
    assert isinstance(n, int) and n >= 0
    if not cuda_compiled():
        assert n == 0


def test_zero_capacity_unallocated_memtype():
    im = ca.Image3D(ca.MEM_DEVICE) if has_gpu else ca.Image3D(ca.MEM_HOST)
    assert im.capacity() == 0


# ---------------------------------------------------------------------------
# grid setters

def test_image_setgrid_and_setsize():
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_HOST)
    small = grid(2, 3, 2, sp=(2, 2, 2))
    im.setGrid(small)
    assert im.grid() == small and im.nVox() == 12
    with pytest.raises(RuntimeError) as ei:
        im.setGrid(grid(5, 5, 5))
    msg = str(ei.value)
    assert msg.startswith("PyCA::Image3D::setGrid(PyCA::GridInfo const &):\nPyCAException : From ")
    assert msg.endswith(": grid too large for current image")
    assert im.grid() == small  # unchanged by the failed call
    im.setSize(ca.Vec3Di(4, 3, 2))  # back to the capacity: allowed
    assert im.size() == ca.Vec3Di(4, 3, 2)
    with pytest.raises(RuntimeError) as ei:
        im.setSize(ca.Vec3Di(4, 3, 3))
    assert str(ei.value).endswith(": size too large for current image")
    assert "PyCA::Image3D::setSize(PyCA::Vec3Di const &):\n" in str(ei.value)
    im.setSpacing(ca.Vec3Df(0.5, 0.25, 2))
    im.setOrigin(ca.Vec3Df(-1, -2, -3))
    assert im.spacing() == ca.Vec3Df(0.5, 0.25, 2) and im.origin() == ca.Vec3Df(-1, -2, -3)


def test_field_setgrid():
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    f.setGrid(grid(3, 3, 2, sp=(2, 1, 1)))
    assert f.size() == ca.Vec3Di(3, 3, 2) and f.spacing().x == 2
    with pytest.raises(RuntimeError) as ei:
        f.setGrid(grid(5, 5, 5))
    msg = str(ei.value)
    assert msg.startswith("PyCA::Field3D::setGrid(PyCA::GridInfo const &):\nPyCAException : From ")
    assert msg.endswith(": Grid is larger than pre-allocated memory")
    assert f.size() == ca.Vec3Di(3, 3, 2)


def test_negative_sizes_raise_valueerror():
    for make in (lambda: ca.Image3D(-1, 2, 3),
                 lambda: ca.Image3D(grid(2, -2, 2), ca.MEM_HOST),
                 lambda: ca.Field3D(2, 2, -5),
                 lambda: ca.Field3D(grid(-2, 2, 2), ca.MEM_HOST),
                 lambda: ca.Image3D(2, 2, 2).resize(grid(2, 2, -1)),
                 lambda: ca.Image3D(2, 2, 2).setGrid(grid(-1, -1, 1)),
                 lambda: ca.Field3D(2, 2, 2).resize(grid(-2, 2, 2)),
                 lambda: ca.ManagedImage3D(grid(-2, 2, 2), ca.MEM_HOST),
                 lambda: ca.MemoryManager(grid(-2, 2, 2), ca.MEM_HOST, 1)):
        with pytest.raises(ValueError):
            make()


# ---------------------------------------------------------------------------
# resize / toType / clone / swap / copy

@pytest.mark.parametrize("cls", [ca.Image3D, ca.Field3D])
def test_resize(cls):
    a = cls(grid(4, 3, 2), ca.MEM_HOST)
    ca.SetMem(a, 3.0)
    g = grid(5, 6, 7, sp=(2, 2, 2), org=(1, 1, 1))
    a.resize(g)
    assert a.grid() == g and a.nVox() == 210 and a.capacity() >= 210
    # same nVox: no reallocation, grid replaced
    ptr = a.rawptr() if cls is ca.Image3D else a.rawptr_x()
    g2 = grid(7, 6, 5)
    a.resize(g2)
    assert a.grid() == g2
    assert ptr == (a.rawptr() if cls is ca.Image3D else a.rawptr_x())
    # preserveData keeps the leading voxels
    b = cls(grid(2, 2, 2), ca.MEM_HOST)
    ca.SetMem(b, 5.0)
    b.resize(grid(3, 3, 3), True)
    first = to_np(b)
    first = first if cls is ca.Image3D else first[0]
    assert np.all(first.ravel(order="F")[:8] == 5.0)


@pytest.mark.parametrize("cls", [ca.Image3D, ca.Field3D])
def test_totype_same_is_noop(cls):
    a = cls(grid(4, 3, 2), ca.MEM_HOST)
    ptr = a.rawptr() if cls is ca.Image3D else a.rawptr_x()
    a.toType(ca.MEM_HOST)
    assert a.memType() == ca.MEM_HOST
    assert ptr == (a.rawptr() if cls is ca.Image3D else a.rawptr_x())


def test_image_clone_swap_copy():
    ref = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    a = image_from(ref, grid(4, 3, 2, sp=(1, 2, 3)))
    b = ca.Image3D(ca.MEM_HOST)
    b.clone(a)
    assert b.grid() == a.grid() and b.memType() == a.memType()
    assert np.array_equal(to_np(b), ref)
    assert b.rawptr() != a.rawptr()
    b.set(0, 0, 0, 99.0)
    assert a.get(0, 0, 0) == ref[0, 0, 0]

    c = a.copy()
    assert isinstance(c, ca.Image3D)
    assert c.grid() == a.grid() and np.array_equal(to_np(c), ref)
    assert c.rawptr() != a.rawptr()
    c.set(1, 1, 1, -5.0)
    assert a.get(1, 1, 1) == ref[1, 1, 1]

    other = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    d = image_from(other, grid(2, 5, 3, org=(9, 9, 9)))
    pa, pd = a.rawptr(), d.rawptr()
    a.swap(d)
    assert a.size() == ca.Vec3Di(2, 5, 3) and d.size() == ca.Vec3Di(4, 3, 2)
    assert a.origin() == ca.Vec3Df(9, 9, 9)
    assert a.rawptr() == pd and d.rawptr() == pa
    assert np.array_equal(to_np(a), other) and np.array_equal(to_np(d), ref)


def test_field_clone_swap_copy():
    ref = [RNG.standard_normal((3, 4, 5)).astype(np.float32) for _ in range(3)]
    a = field_from(ref, grid(3, 4, 5, sp=(0.5, 1, 2)))
    b = ca.Field3D(ca.MEM_HOST)
    b.clone(a)
    assert b.grid() == a.grid()
    for u, v in zip(to_np(b), ref):
        assert np.array_equal(u, v)
    c = a.copy()
    assert isinstance(c, ca.Field3D) and c.grid() == a.grid()
    for u, v in zip(to_np(c), ref):
        assert np.array_equal(u, v)
    assert c.rawptr_x() != a.rawptr_x()
    c.set(0, 0, 0, ca.Vec3Df(9, 9, 9))
    assert a.get(0, 0, 0) == ca.Vec3Df(*(float(r[0, 0, 0]) for r in ref))
    d = field_from([np.zeros((2, 2, 2))] * 3)
    ptrs = (a.rawptr_x(), a.rawptr_y(), a.rawptr_z())
    a.swap(d)
    assert (d.rawptr_x(), d.rawptr_y(), d.rawptr_z()) == ptrs
    assert a.size() == ca.Vec3Di(2, 2, 2) and d.size() == ca.Vec3Di(3, 4, 5)
    assert a.isContinuous() in (True, False)


# ---------------------------------------------------------------------------
# voxel access

def test_image_get_set_call():
    sx, sy, sz = 4, 3, 2
    ref = RNG.standard_normal((sx, sy, sz)).astype(np.float32)
    im = image_from(ref)
    for x in range(sx):
        for y in range(sy):
            for z in range(sz):
                i = x + sx * (y + sy * z)
                assert im.get(x, y, z) == ref[x, y, z]
                assert im(x, y, z) == ref[x, y, z]
                assert im.get(i) == ref[x, y, z]
                assert im(i) == ref[x, y, z]
    im.set(1, 2, 1, 42.5)
    assert im.get(1, 2, 1) == 42.5
    im.set(3, -7.25)
    assert im.get(3, 0, 0) == -7.25
    assert isinstance(im.get(0), float)


@pytest.mark.parametrize("call", [
    lambda im: im.get(24), lambda im: im.get(10 ** 6), lambda im: im.get(4, 0, 0),
    lambda im: im.get(0, 3, 0), lambda im: im.get(0, 0, 2), lambda im: im.get(-1, 0, 0),
    lambda im: im.get(0, 0, -1), lambda im: im(24), lambda im: im(0, 0, 5),
    lambda im: im.set(24, 1.0), lambda im: im.set(0, 3, 0, 1.0), lambda im: im.set(-1, 0, 0, 1.0),
])
def test_image_index_errors(call):
    im = ca.Image3D(4, 3, 2)
    with pytest.raises(IndexError):
        call(im)


def test_image_negative_linear_index():
    im = ca.Image3D(4, 3, 2)
    with pytest.raises((IndexError, TypeError, OverflowError)):
        im.get(-1)


def test_field_get_set_call():
    sx, sy, sz = 3, 4, 2
    ref = [RNG.standard_normal((sx, sy, sz)).astype(np.float32) for _ in range(3)]
    f = field_from(ref)
    for x, y, z in [(0, 0, 0), (2, 3, 1), (1, 2, 0)]:
        i = x + sx * (y + sy * z)
        want = ca.Vec3Df(*(float(r[x, y, z]) for r in ref))
        assert f.get(x, y, z) == want
        assert f(x, y, z) == want
        assert f.get(i) == want
        assert f(i) == want
        assert isinstance(f.get(i), ca.Vec3Df)
    f.set(1, 2, 1, ca.Vec3Df(1, 2, 3))
    assert f.get(1, 2, 1) == ca.Vec3Df(1, 2, 3)
    f.set(0, ca.Vec3Df(-1, -2, -3))
    assert [v[0, 0, 0] for v in f.asnp()] == [-1, -2, -3]
    for bad in (lambda: f.get(24), lambda: f.get(3, 0, 0), lambda: f(0, 0, 2),
                lambda: f.set(24, ca.Vec3Df()), lambda: f.set(0, -1, 0, ca.Vec3Df())):
        with pytest.raises(IndexError):
            bad()
    with pytest.raises(TypeError):
        f.set(0, 1.0)
    with pytest.raises(TypeError):
        f.set(0, None)


# ---------------------------------------------------------------------------
# lists

def test_image_tolist_fromlist():
    ref = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    im = image_from(ref)
    lst = im.tolist()
    assert isinstance(lst, list) and len(lst) == 4 and len(lst[0]) == 3 and len(lst[0][0]) == 2
    assert np.array_equal(np.array(lst, dtype=np.float32), ref)
    assert lst[1][2][1] == pytest.approx(float(ref[1, 2, 1]))
    new = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    ptr = im.rawptr()
    im.fromlist(new.tolist())
    assert im.rawptr() == ptr
    assert np.array_equal(to_np(im), new)
    # a different size resizes
    other = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    im.fromlist(other.tolist())
    assert im.size() == ca.Vec3Di(5, 2, 3)
    assert np.array_equal(to_np(im), other)
    assert im.get(4, 1, 2) == other[4, 1, 2]


def test_field_tolist_fromlist():
    ref = [RNG.standard_normal((3, 2, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(ref)
    lst = f.tolist()
    arr = np.array(lst, dtype=np.float32)
    assert arr.shape == (3, 2, 2, 3)
    for d in range(3):
        assert np.array_equal(arr[..., d], ref[d])
    assert lst[2][1][0] == pytest.approx([float(r[2, 1, 0]) for r in ref])
    new = RNG.standard_normal((4, 1, 2, 3)).astype(np.float32)
    f.fromlist(new.tolist())
    assert f.size() == ca.Vec3Di(4, 1, 2)
    for d, v in enumerate(to_np(f)):
        assert np.array_equal(v, new[..., d])


@pytest.mark.parametrize("bad", [None, "abc", 3.0, [[1, 2], [3, 4]]])
def test_fromlist_bad_input(bad):
    with pytest.raises((TypeError, ValueError)):
        ca.Image3D(2, 2, 2).fromlist(bad)
    with pytest.raises((TypeError, ValueError)):
        ca.Field3D(2, 2, 2).fromlist(bad)


def test_fromlist_none_is_typeerror():
    with pytest.raises(TypeError):
        ca.Image3D(2, 2, 2).fromlist(None)
    with pytest.raises(TypeError):
        ca.Field3D(2, 2, 2).fromlist(None)


# ---------------------------------------------------------------------------
# text

def test_image_str():
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_HOST)
    assert str(im) == "Image3D: size (4, 3, 2) origin (0 0 0) spacing (1 1 1) MemType: MEM_HOST"
    im2 = ca.Image3D(grid(13, 11, 7, sp=(1.5, 2.1, 0.7), org=(-1, 0.5, 3)), ca.MEM_HOST)
    assert str(im2) == ("Image3D: size (13, 11, 7) origin (-1 0.5 3) spacing (1.5 2.1 0.7) "
                        "MemType: MEM_HOST")


def test_field_str():
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    assert str(f) == "Field3D: size (4, 3, 2) origin (0 0 0) spacing (1 1 1) MemType: MEM_HOST"
    f2 = ca.Field3D(grid(2, 2, 1, sp=(0.5, 0.25, 1), org=(1, 2, 3)), ca.MEM_HOST)
    assert str(f2) == ("Field3D: size (2, 2, 1) origin (1 2 3) spacing (0.5 0.25 1) "
                       "MemType: MEM_HOST")


@gpu_only
def test_str_device():
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_DEVICE)
    assert str(im) == "Image3D: size (4, 3, 2) origin (0 0 0) spacing (1 1 1) MemType: MEM_DEVICE"
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST_PINNED)
    assert str(f).endswith("MemType: MEM_HOST_PINNED")


# ---------------------------------------------------------------------------
# NumPy views

@pytest.mark.parametrize("shape", SHAPES)
def test_image_asnp_view(shape):
    im = ca.Image3D(grid(*shape), ca.MEM_HOST)
    a = im.asnp()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.float32 and a.shape == shape
    assert a.flags["F_CONTIGUOUS"] and a.flags["WRITEABLE"]
    assert a.ctypes.data == im.rawptr()
    ref = RNG.standard_normal(shape).astype(np.float32)
    a[...] = ref  # numpy -> image
    sx, sy, _ = shape
    for (x, y, z) in [(0, 0, 0), tuple(s - 1 for s in shape), (shape[0] // 2, shape[1] // 2, shape[2] // 2)]:
        assert im.get(x, y, z) == ref[x, y, z]
        assert im.get(x + sx * (y + sy * z)) == ref[x, y, z]
    im.set(0, 0, 0, 123.0)  # image -> numpy
    assert a[0, 0, 0] == 123.0
    ca.MulC_I(im, 2.0)
    ref[0, 0, 0] = 123.0
    assert np.array_equal(a, ref * 2)
    # memory order is x fastest
    assert np.array_equal(np.frombuffer(a.tobytes(order="A"), np.float32), (ref * 2).ravel(order="F"))


def test_field_asnp_views():
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    views = f.asnp()
    assert isinstance(views, tuple) and len(views) == 3
    for v in views:
        assert v.dtype == np.float32 and v.shape == (4, 3, 2) and v.flags["F_CONTIGUOUS"]
    assert views[0].ctypes.data == f.rawptr_x()
    assert views[1].ctypes.data == f.rawptr_y()
    assert views[2].ctypes.data == f.rawptr_z()
    refs = [RNG.standard_normal((4, 3, 2)).astype(np.float32) for _ in range(3)]
    for v, r in zip(views, refs):
        v[...] = r
    assert f.get(1, 2, 1) == ca.Vec3Df(*(float(r[1, 2, 1]) for r in refs))
    f.set(3, 0, 1, ca.Vec3Df(7, 8, 9))
    assert (views[0][3, 0, 1], views[1][3, 0, 1], views[2][3, 0, 1]) == (7, 8, 9)
    for get, r in zip((f.x_asnp, f.y_asnp, f.z_asnp), views):
        assert get().ctypes.data == r.ctypes.data


def test_view_outlives_image():
    ref = RNG.standard_normal((17, 19, 23)).astype(np.float32)
    im = image_from(ref)
    a = im.asnp()
    del im
    gc.collect()
    others = []
    for k in range(20):  # allocate (and fill) other images meanwhile
        o = ca.Image3D(grid(17, 19, 23), ca.MEM_HOST)
        ca.SetMem(o, float(k))
        others.append(o)
    assert np.array_equal(a, ref)
    a[...] = 1.0  # still writable
    assert np.all(a == 1.0)
    for k, o in enumerate(others):
        assert np.all(to_np(o) == k)


def test_field_views_outlive_field():
    refs = [RNG.standard_normal((5, 6, 7)).astype(np.float32) for _ in range(3)]
    f = field_from(refs)
    vx, vy, vz = f.asnp()
    del f
    gc.collect()
    junk = [ca.Field3D(grid(5, 6, 7), ca.MEM_HOST) for _ in range(10)]
    for j in junk:
        ca.SetMem(j, -1.0)
    for v, r in zip((vx, vy, vz), refs):
        assert np.array_equal(v, r)


def test_view_survives_resize_and_swap():
    ref = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    im = image_from(ref)
    a = im.asnp()
    im.resize(grid(10, 10, 10))
    ca.SetMem(im, 0.0)
    assert np.array_equal(a, ref)  # the view keeps the old buffer
    b = ca.Image3D(4, 3, 2)
    ca.SetMem(b, 5.0)
    v = b.asnp()
    b.swap(im)
    del b, im
    gc.collect()
    assert np.all(v == 5.0)


def test_view_base_references_owner_buffer():
    im = ca.Image3D(grid(3, 3, 3), ca.MEM_HOST)
    a = im.asnp()
    assert a.base is not None


def test_zero_size_grids():
    for shape in [(0, 0, 0), (3, 0, 2), (0, 5, 1)]:
        im = ca.Image3D(grid(*shape), ca.MEM_HOST)
        assert im.nVox() == 0
        assert im.asnp().shape == shape
        assert im.tolist() == np.zeros(shape).tolist()
        assert ca.Sum(im) == 0.0 and ca.Sum2(im) == 0.0
        ca.SetMem(im, 1.0)
        ca.MulC_I(im, 2.0)
        ca.Add_I(im, im)
        ca.Copy(im, im.copy())
        f = ca.Field3D(grid(*shape), ca.MEM_HOST)
        assert [v.shape for v in f.asnp()] == [shape] * 3
        assert ca.Sum(f) == 0.0
        assert ca.SumComp(f) == ca.Vec3Df(0, 0, 0)
        ca.SetMem(f, ca.Vec3Df(1, 2, 3))
        f2 = f.copy()
        assert f2.nVox() == 0
        str(im), str(f)
    # growing from an empty image
    e = ca.Image3D(ca.MEM_HOST)
    e.resize(grid(2, 2, 2))
    ca.SetMem(e, 4.0)
    assert ca.Sum(e) == 32.0


def test_setcap():
    im = ca.Image3D(grid(2, 2, 2), ca.MEM_HOST)
    im.setCap(ca.Vec3Di(10, 10, 10))
    assert im.capacity() >= 1000
    im.setSize(ca.Vec3Di(10, 10, 10))
    assert im.nVox() == 1000
    f = ca.Field3D(grid(2, 2, 2), ca.MEM_HOST)
    f.setCap(ca.Vec3Di(5, 5, 5))
    assert f.capacity() >= 125
    f.setGrid(grid(5, 5, 5))
    assert f.nVox() == 125


# ---------------------------------------------------------------------------
# GPU paths (skipped without a device)

@gpu_only
@pytest.mark.parametrize("mem", [ca.MEM_DEVICE, ca.MEM_HOST_PINNED])
def test_gpu_roundtrip(mem):
    ref = RNG.standard_normal((17, 19, 23)).astype(np.float32)
    im = image_from(ref, mem=mem)
    assert im.memType() == mem
    assert im.onDev() == (mem == ca.MEM_DEVICE)
    assert im.onHost() == (mem != ca.MEM_DEVICE)
    assert np.array_equal(np.array(im.tolist(), np.float32), ref)
    c = im.copy()
    assert c.memType() == mem
    im.toType(ca.MEM_HOST)
    assert np.array_equal(im.asnp(), ref)
    assert np.array_equal(to_np(c), ref)
    refs = [RNG.standard_normal((5, 6, 7)).astype(np.float32) for _ in range(3)]
    f = field_from(refs, mem=mem)
    assert f.memType() == mem
    arr = np.array(f.tolist(), np.float32)
    for d in range(3):
        assert np.array_equal(arr[..., d], refs[d])
    f.toType(ca.MEM_HOST)
    for v, r in zip(f.asnp(), refs):
        assert np.array_equal(v, r)


@gpu_only
def test_device_voxel_access_and_asnp_raise():
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_DEVICE)
    with pytest.raises(Exception):
        im.asnp()
    with pytest.raises(RuntimeError):
        im.get(0)
    with pytest.raises(RuntimeError):
        im.set(0, 0, 0, 1.0)
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_DEVICE)
    with pytest.raises(Exception):
        f.asnp()
    with pytest.raises(RuntimeError):
        f.get(0)


@gpu_only
def test_pinned_voxel_access_and_view():
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_HOST_PINNED)
    a = im.asnp()
    a[...] = 3.0
    assert im.get(1, 1, 1) == 3.0
    im.set(0, 1.5)
    assert a[0, 0, 0] == 1.5


@gpu_only
def test_swap_different_memtypes_raises():
    a = ca.Image3D(grid(2, 2, 2), ca.MEM_HOST)
    b = ca.Image3D(grid(2, 2, 2), ca.MEM_DEVICE)
    with pytest.raises(RuntimeError) as ei:
        a.swap(b)
    assert "memory types are not compatible" in str(ei.value)


def test_swap_different_memtypes_raises_empty():
    """The same refusal without a GPU: empty images need no allocation."""
    a, b = ca.Image3D(ca.MEM_HOST), ca.Image3D(ca.MEM_DEVICE)
    with pytest.raises(RuntimeError) as ei:
        a.swap(b)
    assert "memory types are not compatible" in str(ei.value)
    assert a.memType() == ca.MEM_HOST and b.memType() == ca.MEM_DEVICE


@gpu_only
def test_fromlist_on_device():
    im = ca.Image3D(grid(2, 2, 2), ca.MEM_DEVICE)
    ref = np.arange(27, dtype=np.float32).reshape(3, 3, 3)
    im.fromlist(ref.tolist())
    assert im.memType() == ca.MEM_DEVICE and im.size() == ca.Vec3Di(3, 3, 3)
    assert np.array_equal(to_np(im), ref)


# ---------------------------------------------------------------------------
# wrong argument types never crash

def test_wrong_types_in_containers():
    im = ca.Image3D(2, 2, 2)
    f = ca.Field3D(2, 2, 2)
    for call in (lambda: ca.Image3D(None), lambda: ca.Image3D(None, ca.MEM_HOST),
                 lambda: ca.Image3D("a", 2, 3), lambda: ca.Image3D(grid(2, 2, 2), "MEM_HOST"),
                 lambda: ca.Field3D(None), lambda: ca.Field3D(grid(2, 2, 2), None),
                 lambda: im.setGrid(None), lambda: im.setSize(None), lambda: im.swap(None),
                 lambda: im.swap(f), lambda: im.clone(None), lambda: im.clone(f),
                 lambda: im.resize(None), lambda: im.toType(None), lambda: im.get(None),
                 lambda: im.set(0, None), lambda: im.set(None, 1.0), lambda: im.get("a"),
                 lambda: im(None), lambda: f.setGrid(None), lambda: f.swap(im), lambda: f.swap(None),
                 lambda: f.clone(None), lambda: f.get(None), lambda: f.set(0, 0, 0, None),
                 lambda: f.set(0, 0, 0, 1.0)):
        with pytest.raises(TypeError):
            call()


FUZZ = r'''
import collections, inspect
import PyCA.Core as ca

# odd sizes, so that an image is also a valid (odd-sized) Convolve kernel
g = ca.GridInfo(ca.Vec3Di(3, 3, 3))
SKIP = {"SHARED_PTR_DISOWN", "cvar"}
BAD = (None, "abc", object())
#: functions taking a name (a str): "abc" is the right type, a wrong value
NAME_PARAMS = {"SetCPUDispatch"}


def fresh(kind):
    return {
        "im": lambda: ca.Image3D(g, ca.MEM_HOST),
        "fld": lambda: ca.Field3D(g, ca.MEM_HOST),
        "grid": lambda: ca.GridInfo(ca.Vec3Di(3, 3, 3)),
        "vf": lambda: ca.Vec3Df(1, 1, 1),
        "num": lambda: 1.0,
    }[kind]()


def instance(cls):
    return {
        "Image3D": lambda: ca.Image3D(g, ca.MEM_HOST),
        "Field3D": lambda: ca.Field3D(g, ca.MEM_HOST),
        "ManagedImage3D": lambda: ca.ManagedImage3D(g, ca.MEM_HOST),
        "ManagedField3D": lambda: ca.ManagedField3D(g, ca.MEM_HOST),
        "GridInfo": lambda: ca.GridInfo(ca.Vec3Di(3, 3, 3)),
        "Vec3Di": lambda: ca.Vec3Di(1, 1, 1), "Vec3Df": lambda: ca.Vec3Df(1, 1, 1),
        "Vec3Dd": lambda: ca.Vec3Dd(1, 1, 1), "Vec3Du": lambda: ca.Vec3Du(1, 1, 1),
        "MemoryManager": lambda: ca.MemoryManager(g, ca.MEM_HOST, 1),
    }.get(cls, lambda: None)()


targets = []
for name in sorted(dir(ca)):
    if name.startswith("_") or name in SKIP:
        continue
    obj = getattr(ca, name)
    if inspect.isclass(obj):
        targets.append((name, lambda obj=obj: obj))
        for m in sorted(dir(obj)):
            if m.startswith("_") and m not in ("__call__",):
                continue
            if not callable(getattr(obj, m, None)):
                continue
            targets.append((name + "." + m, lambda name=name, m=m: getattr(instance(name), m, None)))
    elif callable(obj):
        targets.append((name, lambda obj=obj: obj))

stats = collections.Counter()
problems = []
for tname, get in targets:
    for kind in ("im", "fld", "grid", "vf", "num"):
        for n in range(1, 5):
            for pos in range(n):
                for bad in BAD:
                    f = get()
                    if f is None:
                        continue
                    args = [fresh(kind) for _ in range(n)]
                    args[pos] = bad
                    try:
                        f(*args)
                        stats["ok"] += 1
                    except (TypeError, NotImplementedError):
                        stats["TypeError"] += 1
                    except ValueError as e:
                        # a string of the wrong value where a name is expected
                        if tname in NAME_PARAMS and isinstance(bad, str):
                            stats["ValueError"] += 1
                        else:
                            problems.append("%s%r -> %s: %s" % (tname, tuple(type(a).__name__ for a in args),
                                                               type(e).__name__, str(e).splitlines()[0][:100]))
                    except Exception as e:
                        problems.append("%s%r -> %s: %s" % (tname, tuple(type(a).__name__ for a in args),
                                                           type(e).__name__, str(e).splitlines()[0][:100]))
print("STATS", dict(stats))
for p in sorted(set(problems)):
    print("PROBLEM", p)
'''


def test_fuzz_wrong_argument_types_raise_typeerror():
    """Every public function and method, called with None / a string / an
    arbitrary object in any argument position, raises TypeError (or accepts
    it, e.g. None for a stream) and never crashes the interpreter."""
    r = run_python(FUZZ, timeout=600)
    assert r.returncode == 0, "interpreter died (rc=%d)\n%s\n%s" % (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    problems = [l for l in r.stdout.splitlines() if l.startswith("PROBLEM")]
    assert "STATS" in r.stdout
    assert not problems, "\n".join(problems[:50])


def test_equality_is_identity():
    a, b = ca.Image3D(2, 2, 2), ca.Image3D(2, 2, 2)
    assert a == a and not (a == b) and a != b
    f, h = ca.Field3D(2, 2, 2), ca.Field3D(2, 2, 2)
    assert f == f and f != h


def test_raw_memory_functions_not_exposed():
    # raw allocation would let Python free arbitrary pointers
    for name in ("AllocateMemory", "FreeMemory", "CopyMemory"):
        assert not hasattr(ca, name)


def _address(a):
    return a.__array_interface__["data"][0]


def test_large_host_buffers_start_at_distinct_page_offsets():
    """Host buffers of 64 KiB and more are coloured (MemAlloc.cxx): 31
    consecutive ones start at 31 distinct offsets modulo 4 KiB, each still
    128-byte aligned, so voxel i of different images does not share its low
    12 address bits (4 KiB aliasing in the gathers). Small buffers keep their
    64-byte alignment; every buffer is freed through the pointer it was
    allocated at (a wrong one would crash or, under the sanitizers, fail)."""
    g = grid(64, 64, 16)  # 256 KiB
    ims = [ca.Image3D(g, ca.MEM_HOST) for _ in range(31)]
    addr = [_address(im.asnp()) for im in ims]
    assert all(a % 128 == 0 for a in addr)
    assert len({a % 4096 for a in addr}) == 31
    big = [ca.Image3D(grid(128, 128, 64), ca.MEM_HOST) for _ in range(2)]  # 4 MiB: huge-page aligned
    assert len({_address(b.asnp()) % 4096 for b in big}) == 2
    small = ca.Image3D(grid(16, 16, 16), ca.MEM_HOST)  # 16 KiB
    assert _address(small.asnp()) % 64 == 0
    for im in ims:  # the data survive (each buffer is its own)
        im.asnp()[...] = 1.0
    assert all(float(im.asnp().sum()) == g.nVox() for im in ims)
    del ims, big, small
    gc.collect()


@pytest.mark.skipif(bool(os.environ.get("PYCA_SANITIZED")),
                    reason="ASan keeps freed memory in quarantine (and reports leaks and bad frees itself)")
def test_coloured_buffers_are_freed():
    """Allocating and freeing coloured buffers does not grow the process:
    300 images of 8 MiB in turn leave the resident size within 64 MiB."""
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    g = grid(128, 128, 128)
    for _ in range(10):
        ca.Image3D(g, ca.MEM_HOST).asnp()[...] = 1.0
    before = rss()
    for _ in range(300):
        im = ca.Image3D(g, ca.MEM_HOST)
        im.asnp()[...] = 1.0
        del im
    assert rss() - before < 64 << 20
