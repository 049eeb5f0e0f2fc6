"""DLPack export/import and __cuda_array_interface__ (interop.i).

Convention: an Image3D (and a Field3D component) is a float32 (X, Y, Z)
tensor with element strides (1, X, X*Y), x fastest like asnp(); import
wraps x-fastest float32 (X, Y[, Z]) memory without a copy. References:
NumPy and torch (when installed) as consumers and producers."""
import gc

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Common as common
from conftest import grid, has_gpu, image_from, field_from, to_np

RNG = np.random.default_rng(13)

try:
    import torch
except Exception:  # pragma: no cover - torch is optional
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install torch==2.13.0)")


def capsule_name(cap):
    import ctypes
    f = ctypes.pythonapi.PyCapsule_GetName
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return f(cap).decode()


# ---------------------------------------------------------------------------
# export

def test_image_export_numpy_shares_memory_both_ways():
    a = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    im = image_from(a)
    assert im.__dlpack_device__() == (1, 0)
    x = np.from_dlpack(im)
    assert x.shape == (5, 4, 3) and x.dtype == np.float32
    assert x.strides == (4, 20, 80)  # element strides (1, X, X*Y)
    assert np.array_equal(x, a) and np.shares_memory(x, im.asnp())
    x[1, 2, 0] = 99.0
    assert im.get(1, 2, 0) == 99.0
    im.set(4, 3, 2, -7.0)
    assert x[4, 3, 2] == -7.0


def test_image_export_keeps_buffer_alive():
    a = RNG.standard_normal((40, 30, 20)).astype(np.float32)
    im = image_from(a)
    x = np.from_dlpack(im)
    del im
    gc.collect()
    junk = [np.full(a.shape, 1e9, np.float32) for _ in range(3)]  # reuse freed memory
    assert np.array_equal(x, a) and junk
    im2 = image_from(a)
    im2.resize(grid(2, 2, 2))  # a new buffer: the old one stays with its tensor
    y = np.from_dlpack(image_from(a))
    assert np.array_equal(y, a)


def test_capsules_legacy_and_versioned_and_unconsumed():
    im = image_from(np.zeros((2, 3, 4)))
    assert capsule_name(im.__dlpack__()) == "dltensor"
    assert capsule_name(im.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(im.__dlpack__(max_version=(0, 8))) == "dltensor"
    for _ in range(100):  # unconsumed capsules free their tensors
        im.__dlpack__()
        im.__dlpack__(max_version=(1, 2))
    gc.collect()


def test_export_arguments():
    im = image_from(RNG.standard_normal((3, 3, 2)))
    x = np.from_dlpack(im, copy=True)
    assert not np.shares_memory(x, im.asnp()) and np.array_equal(x, to_np(im))
    with pytest.raises(BufferError):
        im.__dlpack__(stream=1)  # host data takes no stream
    with pytest.raises(BufferError):
        im.__dlpack__(dl_device=(2, 0))
    im.__dlpack__(dl_device=(1, 0))
    with pytest.raises(TypeError):
        im.__dlpack__(copy="yes")
    assert np.from_dlpack(im, device="cpu").shape == (3, 3, 2)


def test_managed_image_export_keeps_pool_in_use():
    g = grid(4, 4, 4)
    mm = ca.MemoryManager(g, ca.MEM_HOST, 2)
    mim = ca.ManagedImage3D(g, ca.MEM_HOST, mm)
    ca.SetMem(mim, 3.0)
    x = np.from_dlpack(mim)
    del mim
    gc.collect()
    assert mm.stats().poolsInUse == 1  # the tensor holds the pool
    assert np.all(x == 3.0)
    del x
    gc.collect()
    assert mm.stats().poolsInUse == 0


def test_empty_image_export():
    im = ca.Image3D(grid(0, 4, 1), ca.MEM_HOST)
    x = np.from_dlpack(im)
    assert x.shape == (0, 4, 1)


def test_field_components_and_whole_field():
    comps = [RNG.standard_normal((4, 3, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(comps)
    for d, (exp, view) in enumerate(zip(f.dlpack(), f.asnp())):
        x = np.from_dlpack(exp)
        assert x.shape == (4, 3, 2) and x.strides == (4, 16, 48)
        assert np.array_equal(x, comps[d]) and np.shares_memory(x, view)
    x = np.from_dlpack(f.y_dlpack())
    del f
    gc.collect()
    assert np.array_equal(x, comps[1])
    f = field_from(comps)
    assert not f._dlpack_whole()
    with pytest.raises(BufferError):
        np.from_dlpack(f)
    assert f.__dlpack_device__() == (1, 0)
    with pytest.raises(IndexError):
        ca.FieldComponent(f, 3)


def test_cuda_array_interface_absent_on_host():
    im = image_from(np.zeros((2, 2, 2)))
    assert not hasattr(im, "__cuda_array_interface__")
    assert not hasattr(field_from([np.zeros((2, 2, 2))] * 3).x_dlpack(), "__cuda_array_interface__")


@needs_torch
def test_torch_consumes_and_shares():
    a = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    im = image_from(a)
    t = torch.from_dlpack(im)
    assert tuple(t.shape) == (6, 5, 4) and t.stride() == (1, 6, 30) and t.dtype == torch.float32
    assert np.array_equal(t.numpy(), a)
    t[2, 1, 3] = 5.5
    assert im.get(2, 1, 3) == 5.5
    del im
    gc.collect()
    assert t[5, 4, 3].item() == pytest.approx(float(a[5, 4, 3]))
    f = field_from([a, 2 * a, 3 * a])
    tz = torch.from_dlpack(f.z_dlpack())
    assert torch.allclose(tz, torch.from_numpy(3 * a))


# ---------------------------------------------------------------------------
# import

def test_import_fortran_numpy_zero_copy():
    b = np.asfortranarray(RNG.standard_normal((5, 4, 3)).astype(np.float32))
    im = ca.Image3D.FromDLPack(b)
    assert isinstance(im, ca.Image3D) and tuple(im.size()) == (5, 4, 3)
    assert im.memType() == ca.MEM_HOST and np.shares_memory(im.asnp(), b)
    im.set(1, 1, 1, 42.0)
    assert b[1, 1, 1] == 42.0
    b[0, 3, 2] = -1.0
    assert im.get(0, 3, 2) == -1.0
    ref = b.copy()
    del b
    gc.collect()
    junk = [np.full((5, 4, 3), 7.0, np.float32, order='F') for _ in range(3)]
    assert np.array_equal(im.asnp(), ref) and junk  # the image keeps the producer alive
    ca.MulC_I(im, 2.0)  # operators run on foreign memory
    assert np.allclose(im.asnp(), 2 * ref)


def test_import_2d_and_grid_metadata():
    b = np.asfortranarray(RNG.standard_normal((7, 6)).astype(np.float32))
    im = common.ImFromDLPack(b, sp=(2, 3, 4), orig=(1, 1, 1))
    assert tuple(im.size()) == (7, 6, 1) and np.shares_memory(im.asnp(), b)
    assert im.spacing() == ca.Vec3Df(2, 3, 4) and im.origin() == ca.Vec3Df(1, 1, 1)
    c = RNG.standard_normal((5, 1)).astype(np.float32)  # extent 1: any stride is x-fastest
    assert np.shares_memory(ca.Image3D.FromDLPack(c).asnp(), c)


def test_import_copy_rules():
    c = RNG.standard_normal((5, 4, 3)).astype(np.float32)  # C order: x slowest
    with pytest.raises(BufferError) as e:
        ca.Image3D.FromDLPack(c, copy=False)
    assert "x-fastest" in str(e.value)
    im = ca.Image3D.FromDLPack(c)  # copy=None: a documented copy
    assert np.array_equal(im.asnp(), c) and not np.shares_memory(im.asnp(), c)
    d = RNG.standard_normal((4, 3, 2))  # float64
    with pytest.raises(BufferError):
        ca.Image3D.FromDLPack(np.asfortranarray(d), copy=False)
    assert np.allclose(ca.Image3D.FromDLPack(d).asnp(), d.astype(np.float32))
    f = np.asfortranarray(c)
    cp = ca.Image3D.FromDLPack(f, copy=True)
    assert not np.shares_memory(cp.asnp(), f) and np.array_equal(cp.asnp(), f)
    ro = np.asfortranarray(c)
    ro.flags.writeable = False  # exported read-only (DLPack 1.x flag): never shared
    with pytest.raises(BufferError):
        ca.Image3D.FromDLPack(ro, copy=False)
    assert np.array_equal(ca.Image3D.FromDLPack(ro).asnp(), ro)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4, 5)])
def test_import_bad_dimensions(shape):
    a = np.zeros(shape, np.float32, order='F')
    with pytest.raises(ValueError):
        ca.Image3D.FromDLPack(a)
    with pytest.raises(ValueError):
        ca.Image3D.FromDLPack(a, copy=False)


def test_import_bad_objects():
    for obj in (None, [1.0, 2.0], "abc", 3.0):
        with pytest.raises(TypeError):
            ca.Image3D.FromDLPack(obj)
    with pytest.raises(TypeError):
        ca.Image3D.FromDLPack(np.zeros((2, 2), np.float32), copy=1)
    cap = image_from(np.zeros((2, 2, 2))).__dlpack__()
    ca.Image3D.FromDLPack(cap)  # a bare capsule is accepted once ...
    with pytest.raises(ValueError):
        ca.Image3D.FromDLPack(cap)  # ... and is then used up


def test_roundtrip_pyca_to_pyca():
    a = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    im = image_from(a)
    im2 = ca.Image3D.FromDLPack(im)
    assert im2.rawptr() == im.rawptr()
    del im
    gc.collect()
    assert np.array_equal(im2.asnp(), a)


@needs_torch
def test_import_torch_zero_copy():
    t = torch.rand(4, 5, 6)  # (Z, Y, X) contiguous
    im = ca.Image3D.FromDLPack(t.permute(2, 1, 0))
    assert tuple(im.size()) == (6, 5, 4) and im.rawptr() == t.data_ptr()
    im.set(5, 4, 3, 2.5)
    assert t[3, 4, 5].item() == 2.5
    del t
    gc.collect()
    assert im.get(5, 4, 3) == 2.5
    with pytest.raises(BufferError):
        ca.Image3D.FromDLPack(torch.rand(3, 4, 5), copy=False)
    im3 = ca.Image3D.FromDLPack(torch.arange(24, dtype=torch.float64).reshape(2, 3, 4))
    assert np.array_equal(im3.asnp(), np.arange(24).reshape(2, 3, 4))


def test_field_import_one_tensor_and_three():
    a = RNG.standard_normal((3, 5, 4, 2)).astype(np.float32)
    b = np.empty((5, 4, 2, 3), np.float32, order='F')  # (X, Y, Z, 3) Fortran: components last
    b[...] = np.moveaxis(a, 0, -1)
    f = ca.Field3D.FromDLPack(np.moveaxis(b, -1, 0), copy=False)  # (3, X, Y, Z) view
    assert tuple(f.size()) == (5, 4, 2)
    for d, v in enumerate(f.asnp()):
        assert np.array_equal(v, a[d]) and np.shares_memory(v, b)
    f.set(1, 2, 1, ca.Vec3Df(7, 8, 9))
    assert tuple(b[1, 2, 1]) == (7, 8, 9)
    assert f._dlpack_whole()
    w = np.from_dlpack(f)  # one buffer: the whole field exports as (3, X, Y, Z)
    assert w.shape == (3, 5, 4, 2) and np.shares_memory(w, b) and np.array_equal(w, np.moveaxis(b, -1, 0))
    comps = [np.asfortranarray(a[d]) for d in range(3)]
    g = common.FieldFromDLPack(comps, sp=(2, 2, 2))
    assert g.spacing() == ca.Vec3Df(2, 2, 2)
    for c, v in zip(comps, g.asnp()):
        assert np.shares_memory(v, c)
    cc = ca.Field3D.FromDLPack(a)  # C order (3, X, Y, Z): copied
    for d, v in enumerate(cc.asnp()):
        assert np.array_equal(v, a[d]) and not np.shares_memory(v, a)
    with pytest.raises(BufferError):
        ca.Field3D.FromDLPack(a, copy=False)
    with pytest.raises(ValueError):
        ca.Field3D.FromDLPack(np.zeros((2, 4, 4), np.float32))
    with pytest.raises(ValueError):
        ca.Field3D.FromDLPack([comps[0], comps[1]])
    with pytest.raises(ValueError):
        ca.Field3D.FromDLPack([comps[0], comps[1], np.zeros((2, 2), np.float32, order='F')])


@needs_torch
def test_field_import_torch():
    t = torch.rand(3, 2, 4, 5)  # (3, Z, Y, X)
    f = ca.Field3D.FromDLPack(t.permute(0, 3, 2, 1))
    assert tuple(f.size()) == (5, 4, 2) and f.rawptr_x() == t.data_ptr()
    assert torch.equal(torch.from_dlpack(f).permute(0, 3, 2, 1), t)
    assert f.get(4, 3, 1).y == pytest.approx(t[1, 1, 3, 4].item())


# ---------------------------------------------------------------------------
# device (CUDA builds with a GPU)

@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_device_export_and_cuda_array_interface():
    a = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    im = image_from(a, mem=ca.MEM_DEVICE)
    dev = im.__dlpack_device__()
    assert dev[0] == 2
    cai = im.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (6, 5, 4) and cai["typestr"] == "<f4"
    assert cai["strides"] == (4, 24, 120) and cai["data"] == (im.rawptr(), False)
    f = field_from([a, a, a], mem=ca.MEM_DEVICE)
    assert f.y_dlpack().__cuda_array_interface__["data"][0] == f.rawptr_y()
    with pytest.raises(BufferError):
        np.from_dlpack(im)  # NumPy reads host memory only
    if torch is not None and torch.cuda.is_available():
        t = torch.from_dlpack(im)
        assert t.is_cuda and t.stride() == (1, 6, 30)
        assert np.array_equal(t.cpu().numpy(), a)
        back = ca.Image3D.FromDLPack(t)
        assert back.memType() == ca.MEM_DEVICE and back.rawptr() == im.rawptr()


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_pinned_export():
    a = RNG.standard_normal((3, 3, 3)).astype(np.float32)
    im = image_from(a, mem=ca.MEM_HOST_PINNED)
    assert im.__dlpack_device__() == (3, 0)
    x = np.from_dlpack(im)
    assert np.array_equal(x, a)
    back = ca.Image3D.FromDLPack(im)
    assert back.memType() == ca.MEM_HOST_PINNED


def test_field_from_field_shares_components_and_type_errors():
    comps = [RNG.standard_normal((3, 2, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(comps)
    g = ca.Field3D.FromDLPack(f)
    assert (g.rawptr_x(), g.rawptr_y(), g.rawptr_z()) == (f.rawptr_x(), f.rawptr_y(), f.rawptr_z())
    with pytest.raises(TypeError):
        ca.Image3D.FromDLPack(f)
    with pytest.raises(TypeError):
        ca.FieldComponent(image_from(np.zeros((2, 2, 2))), 0)
    with pytest.raises(TypeError):
        ca.FieldComponent(f, "x")


def test_producer_released_without_the_gil():
    """C++ calls run without the GIL (SWIG -threads): dropping an imported
    NumPy buffer there (resize) runs NumPy's deleter, which takes the GIL."""
    import threading

    def work():
        for _ in range(50):
            b = np.asfortranarray(RNG.random((10, 10, 10)).astype(np.float32))
            im = ca.Image3D.FromDLPack(b)
            del b
            ca.MulC_I(im, 2.0)
            im.resize(grid(2, 2, 2))
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
