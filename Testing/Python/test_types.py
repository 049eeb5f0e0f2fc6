"""Constants, Vec3D and GridInfo (spec sections 2.1 and 2.3)."""
import gc
import struct

import numpy as np
import pytest

import PyCA.Core as ca
from conftest import grid

# ---------------------------------------------------------------------------
# 2.1 enumerations and constants: the integer values are legacy ABI.

ENUMS = {
    "MEM_UNINITIALIZED": 0, "MEM_HOST": 1, "MEM_HOST_PINNED": 2, "MEM_DEVICE": 3,
    "BACKGROUND_STRATEGY_PARTIAL_ID": 0, "BACKGROUND_STRATEGY_ID": 1,
    "BACKGROUND_STRATEGY_PARTIAL_ZERO": 2, "BACKGROUND_STRATEGY_ZERO": 3,
    "BACKGROUND_STRATEGY_CLAMP": 4, "BACKGROUND_STRATEGY_WRAP": 5, "BACKGROUND_STRATEGY_VAL": 6,
    "INTERP_NN": 0, "INTERP_LINEAR": 1, "INTERP_CUBIC": 2,
    "DIM_X": 0, "DIM_Y": 1, "DIM_Z": 2,
    "DIFF_FORWARD": 0, "DIFF_BACKWARD": 1, "DIFF_CENTRAL": 2,
    "BC_APPROX": 0, "BC_WRAP": 1, "BC_CLAMP": 2,
    "OP_VAL": 0, "OP_SQR": 1,
    "EXEC_CPU": 0, "EXEC_GPU": 1, "EXEC_GPU_PARAM": 2,
    "CTA_SIZE": 256, "CUDA_DATA_BLOCK_ALIGN": 128, "BLOCK_ALIGN": 128, "REG_BLOCK_SIZE": 256,
    "MAX_NUMBER_DEVICES": 256, "MAX_FFT_TABLE_LENGTH": 512,
    "WRAP_TRUE": 1, "WRAP_FALSE": 0, "ACCUM_TRUE": 1, "ACCUM_FALSE": 0,
    "SLICE_TRUE": 1, "SLICE_FALSE": 0,
}


@pytest.mark.parametrize("name,value", sorted(ENUMS.items()))
def test_integer_constants(name, value):
    v = getattr(ca, name)
    assert isinstance(v, int)
    assert v == value


def test_float_constants():
    assert ca.FIX_SCALE_20 == pytest.approx(1048576.0)
    assert ca.GRIDINFO_EPS == pytest.approx(1e-6)


def test_min_max_val():
    flt_min = struct.unpack("f", struct.pack("I", 0x00800000))[0]
    flt_max = float(np.finfo(np.float32).max)
    assert ca.cvar.MIN_VAL == flt_min == float(np.finfo(np.float32).tiny)
    assert ca.cvar.MAX_VAL == flt_max


def test_memtypestr():
    assert ca.MemTypeStr(ca.MEM_HOST) == "host memory"
    assert ca.MemTypeStr(ca.MEM_HOST_PINNED) == "pinned host memory"
    assert ca.MemTypeStr(ca.MEM_DEVICE) == "gpu_device_memory"
    assert ca.MemTypeStr(ca.MEM_UNINITIALIZED) == "uninitialized memory"


def test_enum_arguments_accept_plain_ints():
    im = ca.Image3D(ca.GridInfo(ca.Vec3Di(2, 2, 2)), 1)
    assert im.memType() == ca.MEM_HOST


# ---------------------------------------------------------------------------
# 2.3 Vec3D

VEC_TYPES = [ca.Vec3Di, ca.Vec3Df, ca.Vec3Dd, ca.Vec3Du]


@pytest.mark.parametrize("T", VEC_TYPES)
def test_vec_constructors_and_members(T):
    v = T()
    assert (v.x, v.y, v.z) == (0, 0, 0)
    v = T(1, 2, 3)
    assert (v.x, v.y, v.z) == (1, 2, 3)
    f = T(5)
    assert (f.x, f.y, f.z) == (5, 5, 5)
    v.x = 7
    assert v.x == 7 and v.get(0) == 7 and v.get(1) == 2 and v.get(2) == 3
    v.set(2, 9)
    assert v.z == 9
    v.set(4, 5, 6)
    assert v.tolist() == [4, 5, 6]
    with pytest.raises(IndexError):
        v.get(3)


@pytest.mark.parametrize("T", VEC_TYPES)
def test_vec_copy_constructor(T):
    a = T(1, 2, 3)
    b = T(a)
    assert b == a
    b.x = 5
    assert a.x == 1


@pytest.mark.parametrize("T", VEC_TYPES)
def test_vec_str(T):
    assert str(T(1, 2, 3)) == "Vec3D(1,2,3)"


def test_vec_str_floats():
    assert str(ca.Vec3Df(1.5, -2.25, 0)) == "Vec3D(1.5,-2.25,0)"
    assert str(ca.Vec3Di(-1, 0, 12)) == "Vec3D(-1,0,12)"


@pytest.mark.parametrize("T", VEC_TYPES)
def test_vec_tolist_fromlist_copy_clone(T):
    v = T(1, 2, 3)
    assert v.tolist() == [1, 2, 3]
    w = T()
    w.fromlist([4, 5, 6])
    assert w.tolist() == [4, 5, 6]
    c = v.copy()
    assert c == v and c is not v
    c.x = 9
    assert v.x == 1
    d = T()
    d.clone(v)
    assert d == v
    d.y = 8
    assert v.y == 2


def test_vec_methods_float():
    v = ca.Vec3Df(3, 4, 12)
    assert v.length() == pytest.approx(13.0)
    assert v.lengthSquared() == pytest.approx(169.0)
    assert v.normL2() == pytest.approx(13.0)
    assert ca.Vec3Df(1, -2, 3).normL1() == pytest.approx(6.0)
    assert ca.Vec3Df(2, 3, 4).prod() == pytest.approx(24.0)
    assert ca.Vec3Df(2, 3, 4).sum() == pytest.approx(9.0)
    assert ca.Vec3Df(2, 7, 4).maxElement() == pytest.approx(7.0)
    assert ca.Vec3Df(2, 7, -4).minElement() == pytest.approx(-4.0)
    w = ca.Vec3Df(1, 2, 3)
    w.scale(2, 3, 4)
    assert w.tolist() == [2, 6, 12]
    w.translate(1, 1, -1)
    assert w.tolist() == [3, 7, 11]
    w.negate()
    assert w.tolist() == [-3, -7, -11]
    w = ca.Vec3Df(1, 2, 4)
    inv = w.inverse()
    assert inv.tolist() == [1.0, 0.5, 0.25] and w.tolist() == [1, 2, 4]
    w.invert()
    assert w.tolist() == [1.0, 0.5, 0.25]
    n = ca.Vec3Df(3, 0, 4)
    n.normalize()
    assert np.allclose(n.tolist(), [0.6, 0, 0.8])
    a, b = ca.Vec3Df(1, 2, 3), ca.Vec3Df(4, -5, 6)
    assert a.dot(b) == pytest.approx(np.dot([1, 2, 3], [4, -5, 6]))
    assert np.allclose(a.cross(b).tolist(), np.cross([1, 2, 3], [4, -5, 6]))
    assert a.distance(b) == pytest.approx(np.linalg.norm(np.subtract([1, 2, 3], [4, -5, 6])))
    assert a.distanceSquared(b) == pytest.approx(np.sum(np.subtract([1, 2, 3], [4, -5, 6]) ** 2))


def test_vec_methods_int():
    v = ca.Vec3Di(2, -3, 4)
    assert v.prod() == -24 and isinstance(v.prod(), int)
    assert v.sum() == 3
    assert v.maxElement() == 4 and v.minElement() == -3
    assert v.normL1() == pytest.approx(9.0)
    assert ca.Vec3Di(1, 0, 0).cross(ca.Vec3Di(0, 1, 0)) == ca.Vec3Di(0, 0, 1)


def test_vec_exact_equality():
    assert ca.Vec3Df(1, 2, 3) == ca.Vec3Df(1, 2, 3)
    assert not (ca.Vec3Df(1, 2, 3) != ca.Vec3Df(1, 2, 3))
    assert ca.Vec3Df(1, 2, 3) != ca.Vec3Df(1, 2, 3.0001)
    assert ca.Vec3Df(1, 2, 3) != ca.Vec3Df(1, 2, 3 + 1e-6)  # one float32 ulp at 3 is 2.4e-7
    assert ca.Vec3Di(1, 2, 3) == ca.Vec3Di(1, 2, 3)
    assert ca.Vec3Di(1, 2, 3) != ca.Vec3Di(1, 2, 4)
    assert ca.Vec3Dd(0.1, 0.2, 0.3) == ca.Vec3Dd(0.1, 0.2, 0.3)
    assert ca.Vec3Dd(0.1, 0.2, 0.3) != ca.Vec3Dd(0.1, 0.2, 0.3 + 1e-15)
    assert not (ca.Vec3Df(1, 2, 3) == None)  # noqa: E711


def test_vec3df_arithmetic():
    a, b = ca.Vec3Df(1, 2, 3), ca.Vec3Df(0.5, -1, 4)
    assert (a + b).tolist() == [1.5, 1, 7]
    assert (a - b).tolist() == [0.5, 3, -1]
    assert (a * b).tolist() == [0.5, -2, 12]
    assert np.allclose((a / b).tolist(), [2, -2, 0.75])
    assert (a + 1).tolist() == [2, 3, 4]
    assert (a * 2.5).tolist() == [2.5, 5, 7.5]
    assert (a / 2).tolist() == [0.5, 1, 1.5]
    assert (a - 1.0).tolist() == [0, 1, 2]
    assert (a + ca.Vec3Di(1, 1, 1)).tolist() == [2, 3, 4]
    assert isinstance(a + b, ca.Vec3Df)
    # the operands are not modified
    assert a.tolist() == [1, 2, 3] and b.tolist() == [0.5, -1, 4]


def test_vec_reflected_and_unary():
    v = ca.Vec3Df(1, 2, 3)
    assert (2 * v).tolist() == [2, 4, 6]
    assert (1.0 - v).tolist() == [0, -1, -2]
    assert (1 + v).tolist() == [2, 3, 4]
    assert np.allclose((1.0 / ca.Vec3Df(1, 2, 4)).tolist(), [1, 0.5, 0.25])
    assert (-v).tolist() == [-1, -2, -3]
    assert isinstance(-v, ca.Vec3Df)
    i = ca.Vec3Di(1, 2, 3)
    assert (3 * i) == ca.Vec3Di(3, 6, 9) and isinstance(3 * i, ca.Vec3Di)
    assert (10 - i) == ca.Vec3Di(9, 8, 7)
    assert -i == ca.Vec3Di(-1, -2, -3) and isinstance(-i, ca.Vec3Di)


def test_vec_inplace():
    v = ca.Vec3Df(1, 2, 3)
    vid = id(v)
    v += 1
    v *= ca.Vec3Df(2, 2, 2)
    v -= ca.Vec3Df(1, 1, 1)
    v /= 2
    assert id(v) == vid
    assert v.tolist() == [1.5, 2.5, 3.5]
    i = ca.Vec3Di(7, 8, 9)
    i += ca.Vec3Di(1, 1, 1)
    i /= 2
    assert i == ca.Vec3Di(4, 4, 5)
    assert isinstance(i.x, int)


def test_vec3di_integer_division():
    q = ca.Vec3Di(7, 8, 9) / 2
    assert isinstance(q, ca.Vec3Di)
    assert q == ca.Vec3Di(3, 4, 4)
    # C++ integer division truncates towards zero
    assert ca.Vec3Di(-7, 7, -8) / ca.Vec3Di(2, -2, 3) == ca.Vec3Di(-3, -3, -2)
    assert ca.Vec3Di(6, 9, 12) / ca.Vec3Di(2, 3, 4) == ca.Vec3Di(3, 3, 3)
    assert isinstance(ca.Vec3Di(1, 2, 3) + ca.Vec3Di(1, 1, 1), ca.Vec3Di)
    assert ca.Vec3Di(1, 2, 3) * 2 == ca.Vec3Di(2, 4, 6)


def test_vec_bad_operands():
    with pytest.raises(TypeError):
        ca.Vec3Df(1, 2, 3) + None
    with pytest.raises(TypeError):
        ca.Vec3Df(1, 2, 3) + "a"
    with pytest.raises(TypeError):
        ca.Vec3Df(1, 2, 3).dot(None)
    with pytest.raises(TypeError):
        ca.Vec3Df(None, 1, 2)


# ---------------------------------------------------------------------------
# 2.3 GridInfo

def test_gridinfo_defaults():
    g = ca.GridInfo()
    assert g.size() == ca.Vec3Di(0, 0, 0)
    assert g.spacing() == ca.Vec3Df(1, 1, 1)
    assert g.origin() == ca.Vec3Df(0, 0, 0)
    assert g.nVox() == 0
    g = ca.GridInfo(ca.Vec3Di(4, 5, 6))
    assert g.spacing() == ca.Vec3Df(1, 1, 1) and g.origin() == ca.Vec3Df(0, 0, 0)
    assert g.nVox() == 120
    g = ca.GridInfo(ca.Vec3Di(4, 5, 6), ca.Vec3Df(0.5, 2, 3))
    assert g.origin() == ca.Vec3Df(0, 0, 0)


def test_gridinfo_nvox_voxelvol():
    g = grid(17, 19, 23, sp=(1.5, 2.1, 0.7))
    assert g.nVox() == 17 * 19 * 23
    assert g.voxelVol() == pytest.approx(np.prod(np.float32([1.5, 2.1, 0.7])), rel=1e-6)
    assert grid(3, 0, 2).nVox() == 0


def test_gridinfo_set_and_setters():
    g = ca.GridInfo()
    g.set(ca.Vec3Di(2, 3, 4), ca.Vec3Df(1, 2, 3), ca.Vec3Df(-1, -2, -3))
    assert g.size() == ca.Vec3Di(2, 3, 4)
    assert g.spacing() == ca.Vec3Df(1, 2, 3)
    assert g.origin() == ca.Vec3Df(-1, -2, -3)
    g.set(ca.Vec3Di(5, 5, 5))
    assert g.spacing() == ca.Vec3Df(1, 1, 1) and g.origin() == ca.Vec3Df(0, 0, 0)
    g.setSize(ca.Vec3Di(1, 2, 3))
    g.setSpacing(ca.Vec3Df(0.5, 0.5, 2))
    g.setOrigin(ca.Vec3Df(7, 8, 9))
    assert g.size() == ca.Vec3Di(1, 2, 3)
    assert g.spacing() == ca.Vec3Df(0.5, 0.5, 2)
    assert g.origin() == ca.Vec3Df(7, 8, 9)


def test_gridinfo_equality_tolerance():
    a = grid(4, 3, 2, sp=(1.5, 2.1, 0.7), org=(-1, 0.5, 3))
    b = grid(4, 3, 2, sp=(1.5, 2.1, 0.7), org=(-1, 0.5, 3))
    assert a == b and not (a != b)
    # spacing / origin within 1e-6 (Euclidean) are equal
    c = grid(4, 3, 2, sp=(1.5, 2.1, 0.7 + 2e-7), org=(-1, 0.5, 3))
    assert a == c
    # beyond the tolerance they differ
    d = grid(4, 3, 2, sp=(1.5, 2.1, 0.7 + 1e-5), org=(-1, 0.5, 3))
    assert a != d and not (a == d)
    e = grid(4, 3, 2, sp=(1.5, 2.1, 0.7), org=(-1, 0.5, 3.001))
    assert a != e
    # sizes must match exactly
    assert grid(4, 3, 2) != grid(4, 3, 3)
    assert grid(4, 3, 2) != grid(2, 3, 4)


def test_gridinfo_str():
    assert str(ca.GridInfo()) == "Grid: size (0, 0, 0) origin (0 0 0) spacing (1 1 1)"
    g = grid(4, 3, 2, sp=(1.5, 2.1, 0.7), org=(-1, 0.5, 3))
    assert str(g) == "Grid: size (4, 3, 2) origin (-1 0.5 3) spacing (1.5 2.1 0.7)"


def test_gridinfo_live_references():
    g = grid(4, 3, 2)
    g.spacing().z = 1.0
    g.spacing().x = 2.5
    assert g.spacing() == ca.Vec3Df(2.5, 1, 1)
    g.size().y = 7
    assert g.size() == ca.Vec3Di(4, 7, 2)
    assert g.nVox() == 56
    g.origin().x = -3
    assert g.origin().x == -3
    s = g.spacing()
    g.setSpacing(ca.Vec3Df(9, 9, 9))
    assert s.x == 9  # the proxy reads the live value


def test_image_live_references():
    im = ca.Image3D(grid(4, 3, 2), ca.MEM_HOST)
    im.grid().setSize(ca.Vec3Di(2, 2, 2))
    assert im.size() == ca.Vec3Di(2, 2, 2)
    assert im.nVox() == 8
    assert im.size().z == 2
    im.size().z = 1
    assert im.nVox() == 4
    im.spacing().x = 3.0
    assert im.grid().spacing().x == 3.0
    im.origin().y = -1.0
    assert im.grid().origin() == ca.Vec3Df(0, -1, 0)
    f = ca.Field3D(grid(4, 3, 2), ca.MEM_HOST)
    f.spacing().z = 0.25
    assert f.grid().spacing().z == 0.25
    f.grid().setOrigin(ca.Vec3Df(1, 2, 3))
    assert f.origin() == ca.Vec3Df(1, 2, 3)


def test_live_reference_keeps_owner_alive():
    s = ca.Image3D(grid(4, 3, 2, sp=(1, 2, 3)), ca.MEM_HOST).spacing()
    gc.collect()
    _ = [ca.Image3D(grid(4, 3, 2, sp=(7, 7, 7)), ca.MEM_HOST) for _ in range(20)]
    assert (s.x, s.y, s.z) == (1, 2, 3)
    s.x = 5
    assert s.x == 5
    g = ca.Field3D(grid(2, 2, 2, org=(4, 5, 6)), ca.MEM_HOST).grid()
    gc.collect()
    assert g.origin() == ca.Vec3Df(4, 5, 6)
    sz = grid(6, 7, 8).size()
    gc.collect()
    assert sz == ca.Vec3Di(6, 7, 8)
    o = ca.GridInfo(ca.Vec3Di(1, 2, 3), ca.Vec3Df(1, 1, 1), ca.Vec3Df(3, 2, 1)).origin()
    gc.collect()
    assert o.tolist() == [3, 2, 1]


def test_gridinfo_copy_clone():
    g = grid(4, 3, 2, sp=(1.5, 2, 3), org=(1, 2, 3))
    c = g.copy()
    assert c == g and c is not g
    c.spacing().x = 9
    c.size().x = 1
    assert g.spacing().x == 1.5 and g.size().x == 4
    d = ca.GridInfo()
    d.clone(g)
    assert d == g
    d.origin().z = 100
    assert g.origin().z == 3
    h = ca.GridInfo(g)  # copy constructor
    assert h == g
    h.size().z = 9
    assert g.size().z == 2


def test_gridinfo_bad_arguments():
    with pytest.raises(TypeError):
        ca.GridInfo(None)
    with pytest.raises(TypeError):
        ca.GridInfo(ca.Vec3Df(1, 2, 3))
    g = ca.GridInfo()
    for bad in (None, "abc", 3, ca.Vec3Df(1, 2, 3)):
        with pytest.raises(TypeError):
            g.setSize(bad)
    with pytest.raises(TypeError):
        g.setSpacing(None)
    with pytest.raises(TypeError):
        g.clone(None)
