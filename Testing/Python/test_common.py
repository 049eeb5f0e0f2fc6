"""PyCA.Common NumPy bridges (spec section 5.2, PyCACommon)."""
import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Common as common
from conftest import grid, has_gpu, usable_mem_types

RNG = np.random.default_rng(42)


def test_exports():
    for name in ("ImFromNPArr", "FieldFromNPArr", "AsNPCopy", "CopyDataFromNPArr",
                 "IsImage3D", "IsField3D"):
        assert callable(getattr(common, name))


# ---------------------------------------------------------------------------
# ImFromNPArr

def test_im_from_3d_array():
    a = RNG.standard_normal((5, 6, 7))
    im = common.ImFromNPArr(a)
    assert isinstance(im, ca.Image3D)
    assert im.memType() == ca.MEM_HOST
    assert im.size() == ca.Vec3Di(5, 6, 7)
    assert im.spacing() == ca.Vec3Df(1, 1, 1) and im.origin() == ca.Vec3Df(0, 0, 0)
    assert np.array_equal(im.asnp(), a.astype(np.float32))
    assert im.get(4, 5, 6) == np.float32(a[4, 5, 6])
    assert im.get(1 + 5 * (2 + 6 * 3)) == np.float32(a[1, 2, 3])
    a[0, 0, 0] = 1e6  # a copy, not a view
    assert im.get(0, 0, 0) != np.float32(1e6)


def test_im_from_2d_array_is_slice():
    a = RNG.standard_normal((31, 33)).astype(np.float32)
    im = common.ImFromNPArr(a)
    assert im.size() == ca.Vec3Di(31, 33, 1)
    assert np.array_equal(im.asnp()[:, :, 0], a)
    assert im.get(30, 32, 0) == a[30, 32]


def test_im_from_1d_array():
    a = np.arange(5, dtype=np.float32)
    im = common.ImFromNPArr(a)
    assert im.size() == ca.Vec3Di(1, 5, 1)  # np.atleast_3d, as in the legacy
    assert np.array_equal(im.asnp()[0, :, 0], a)


def test_im_from_array_spacing_origin():
    a = RNG.standard_normal((4, 3, 2))
    sp, org = ca.Vec3Df(1.5, 2.1, 0.7), ca.Vec3Df(-1, 0.5, 3)
    im = common.ImFromNPArr(a, ca.MEM_HOST, sp, org)
    assert im.spacing() == sp and im.origin() == org
    im2 = common.ImFromNPArr(a, sp=sp, orig=org)
    assert im2.grid() == im.grid()
    im3 = common.ImFromNPArr(a[:, :, 0], ca.MEM_HOST, sp=ca.Vec3Df(0.5, 0.25, 1))
    assert im3.grid() == grid(4, 3, 1, sp=(0.5, 0.25, 1))
    # the caller's vectors are not aliased
    sp.x = 100
    assert im.spacing().x == pytest.approx(1.5)


def test_im_from_noncontiguous_and_int_arrays():
    c = np.arange(60, dtype=np.int64).reshape(3, 4, 5)  # C order, integer
    im = common.ImFromNPArr(c)
    assert np.array_equal(im.asnp(), c.astype(np.float32))
    t = RNG.standard_normal((6, 5, 4)).transpose(2, 0, 1)  # strided view
    im = common.ImFromNPArr(t)
    assert im.size() == ca.Vec3Di(4, 6, 5)
    assert np.array_equal(im.asnp(), t.astype(np.float32))
    s = RNG.standard_normal((8, 8, 8))[::2, 1::3, :]
    assert np.array_equal(common.ImFromNPArr(s).asnp(), s.astype(np.float32))


@pytest.mark.parametrize("mem", usable_mem_types)
def test_im_from_array_memtype(mem):
    a = RNG.standard_normal((4, 3, 2))
    im = common.ImFromNPArr(a, mem)
    assert im.memType() == mem
    assert np.array_equal(common.AsNPCopy(im), a.astype(np.float32))


# ---------------------------------------------------------------------------
# FieldFromNPArr

def test_field_from_xyz3():
    a = RNG.standard_normal((5, 4, 3, 3))
    f = common.FieldFromNPArr(a)
    assert isinstance(f, ca.Field3D)
    assert f.size() == ca.Vec3Di(5, 4, 3) and f.memType() == ca.MEM_HOST
    for d, v in enumerate(f.asnp()):
        assert np.array_equal(v, a[..., d].astype(np.float32))
    assert f.get(4, 3, 2) == ca.Vec3Df(*[float(np.float32(x)) for x in a[4, 3, 2]])


def test_field_from_xy3():
    a = RNG.standard_normal((6, 7, 3))
    f = common.FieldFromNPArr(a)
    assert f.size() == ca.Vec3Di(6, 7, 1)
    for d, v in enumerate(f.asnp()):
        assert np.array_equal(v[:, :, 0], a[..., d].astype(np.float32))


def test_field_from_xy2_zero_z():
    a = RNG.standard_normal((6, 7, 2))
    f = common.FieldFromNPArr(a)
    assert f.size() == ca.Vec3Di(6, 7, 1)
    x, y, z = f.asnp()
    assert np.array_equal(x[:, :, 0], a[..., 0].astype(np.float32))
    assert np.array_equal(y[:, :, 0], a[..., 1].astype(np.float32))
    assert np.all(z == 0)


def test_field_from_array_spacing_origin():
    a = RNG.standard_normal((3, 3, 3, 3))
    f = common.FieldFromNPArr(a, ca.MEM_HOST, ca.Vec3Df(2, 3, 4), ca.Vec3Df(1, 1, 1))
    assert f.grid() == grid(3, 3, 3, sp=(2, 3, 4), org=(1, 1, 1))


@pytest.mark.parametrize("shape", [(4, 4), (4, 4, 4), (4, 4, 4, 4), (4, 4, 4, 2, 1)])
def test_field_from_bad_shapes(shape):
    with pytest.raises(Exception):
        common.FieldFromNPArr(np.zeros(shape))


@pytest.mark.parametrize("mem", usable_mem_types)
def test_field_from_array_memtype(mem):
    a = RNG.standard_normal((4, 3, 2, 3))
    f = common.FieldFromNPArr(a, mem)
    assert f.memType() == mem
    assert np.array_equal(common.AsNPCopy(f), a.astype(np.float32).astype(np.float64))


# ---------------------------------------------------------------------------
# AsNPCopy

def test_asnpcopy_image():
    a = RNG.standard_normal((5, 6, 7)).astype(np.float32)
    im = common.ImFromNPArr(a)
    c = common.AsNPCopy(im)
    assert c.dtype == np.float32 and c.shape == (5, 6, 7)
    assert np.array_equal(c, a)
    c[0, 0, 0] = 99  # a copy
    assert im.get(0, 0, 0) == a[0, 0, 0]
    assert im.memType() == ca.MEM_HOST


def test_asnpcopy_field():
    a = RNG.standard_normal((5, 6, 7, 3)).astype(np.float32)
    f = common.FieldFromNPArr(a)
    c = common.AsNPCopy(f)
    assert c.dtype == np.float64 and c.shape == (5, 6, 7, 3)
    assert np.array_equal(c, a.astype(np.float64))
    c[1, 1, 1, 1] = 99
    assert f.get(1, 1, 1).y == a[1, 1, 1, 1]


def test_asnpcopy_rejects_other_objects():
    with pytest.raises(Exception):
        common.AsNPCopy(np.zeros((2, 2, 2)))
    with pytest.raises(Exception):
        common.AsNPCopy(None)


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_asnpcopy_keeps_device_memtype():
    a = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    im = common.ImFromNPArr(a, ca.MEM_DEVICE)
    assert np.array_equal(common.AsNPCopy(im), a)
    assert im.memType() == ca.MEM_DEVICE
    f = common.FieldFromNPArr(RNG.standard_normal((4, 3, 2, 3)), ca.MEM_DEVICE)
    common.AsNPCopy(f)
    assert f.memType() == ca.MEM_DEVICE


# ---------------------------------------------------------------------------
# CopyDataFromNPArr

def test_copy_data_into_image():
    im = ca.Image3D(grid(4, 3, 2, sp=(2, 2, 2)), ca.MEM_HOST)
    ptr = im.rawptr()
    a = RNG.standard_normal((4, 3, 2))
    common.CopyDataFromNPArr(im, a)
    assert np.array_equal(im.asnp(), a.astype(np.float32))
    assert im.rawptr() == ptr and im.grid() == grid(4, 3, 2, sp=(2, 2, 2))
    im2 = ca.Image3D(grid(4, 3, 1), ca.MEM_HOST)
    b = RNG.standard_normal((4, 3))
    common.CopyDataFromNPArr(im2, b)  # 2-D array into a slice
    assert np.array_equal(im2.asnp()[:, :, 0], b.astype(np.float32))


def test_copy_data_into_field():
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    a = RNG.standard_normal((4, 3, 2, 3))
    common.CopyDataFromNPArr(f, a)
    for d, v in enumerate(f.asnp()):
        assert np.array_equal(v, a[..., d].astype(np.float32))


@pytest.mark.parametrize("shape", [(4, 3, 3), (3, 4, 2), (4, 3), (4, 3, 2, 3), (24,)])
def test_copy_data_size_mismatch_image(shape):
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_HOST)
    ca.SetMem(im, 7.0)
    with pytest.raises(Exception):
        common.CopyDataFromNPArr(im, np.zeros(shape))
    assert im.size() == ca.Vec3Di(4, 3, 2)
    assert np.all(im.asnp() == 7.0)


@pytest.mark.parametrize("shape", [(4, 3, 2), (4, 3, 3, 3), (5, 3, 2, 3), (4, 3, 2, 4)])
def test_copy_data_size_mismatch_field(shape):
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    with pytest.raises(Exception):
        common.CopyDataFromNPArr(f, np.zeros(shape))
    assert f.size() == ca.Vec3Di(4, 3, 2)


@pytest.mark.parametrize("mem", usable_mem_types)
def test_copy_data_keeps_memtype(mem):
    im = ca.Image3D(grid(4, 3, 2), mem)
    a = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    common.CopyDataFromNPArr(im, a)
    assert im.memType() == mem
    assert np.array_equal(common.AsNPCopy(im), a)


# ---------------------------------------------------------------------------
# IsImage3D / IsField3D

def test_type_predicates():
    g = grid(2, 2, 2)
    mm = ca.MemoryManager(g, ca.MEM_HOST, 4)
    im, f = ca.Image3D(g, ca.MEM_HOST), ca.Field3D(g, ca.MEM_HOST)
    mim, mf = ca.ManagedImage3D(g, ca.MEM_HOST, mm), ca.ManagedField3D(g, ca.MEM_HOST, mm)
    tmim = ca.ManagedImage3D(g, ca.MEM_HOST)  # no thread manager: plain allocation
    for o in (im, mim, tmim):
        assert common.IsImage3D(o) and not common.IsField3D(o)
    for o in (f, mf):
        assert common.IsField3D(o) and not common.IsImage3D(o)
    for o in (None, 1.0, g, ca.Vec3Df(), np.zeros((2, 2, 2)), mm, [im]):
        assert not common.IsImage3D(o) and not common.IsField3D(o)
