"""PyCA.VTK (spec 5.4): vtkImageData wrappers with x, y, z metadata in that
order (the legacy swapped x and y), zero copy where possible. The VTK
tests skip when the vtk wheel is not installed (it is large: ``pip install
vtk``); the missing-VTK message is tested always."""
import gc

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.VTK as pvtk
from conftest import grid, has_gpu, image_from, field_from, run_python

RNG = np.random.default_rng(11)


def _vtk_available():
    try:
        import vtkmodules.vtkCommonDataModel  # noqa: F401
        return True
    except Exception:
        return False


needs_vtk = pytest.mark.skipif(not _vtk_available(), reason="the vtk wheel is not installed (pip install vtk)")


def test_missing_vtk_message():
    code = ("import sys; sys.modules['vtkmodules'] = None; sys.modules['vtk'] = None\n"
            "import numpy as np, PyCA.VTK as v\n"
            "try:\n"
            "    v.WrapNPAsVTKImageData(np.zeros((2, 2, 2), np.float32, order='F'))\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert "ImportError:" in r.stdout and "pip install vtk" in r.stdout


def point(img, i, j, k, c=0):
    return img.GetScalarComponentAsDouble(i, j, k, c)


@needs_vtk
def test_wrap_np_axis_order_and_zero_copy():
    a = np.asfortranarray(RNG.standard_normal((5, 4, 3)).astype(np.float32))
    img = pvtk.WrapNPAsVTKImageData(a, (0.5, 2.0, 3.0), (1.0, -1.0, 7.0))
    assert img.GetDimensions() == (5, 4, 3)
    assert img.GetSpacing() == (0.5, 2.0, 3.0) and img.GetOrigin() == (1.0, -1.0, 7.0)
    for (i, j, k) in ((0, 0, 0), (4, 0, 0), (1, 3, 2), (4, 3, 2)):
        assert point(img, i, j, k) == pytest.approx(float(a[i, j, k]))
    # the physical position of point (i, j, k) is origin + (i, j, k) * spacing
    assert img.GetPoint(img.ComputePointId((4, 1, 2))) == pytest.approx((3.0, 1.0, 13.0))
    a[2, 1, 0] = 42.0  # shared memory
    img.Modified()
    assert point(img, 2, 1, 0) == 42.0
    del a
    gc.collect()
    assert img.GetPointData().GetScalars().GetNumberOfTuples() == 60
    assert point(img, 2, 1, 0) == 42.0  # the VTK data keeps the array alive


@needs_vtk
def test_wrap_np_2d_copy_rules():
    c = RNG.standard_normal((6, 5)).astype(np.float32)  # C order: needs a copy
    with pytest.raises(ValueError):
        pvtk.WrapNPAsVTKImageData(c)
    img = pvtk.WrapNPAsVTKImageData(c, AutoCopy=True)
    assert img.GetDimensions() == (6, 5, 1)
    assert point(img, 5, 1, 0) == pytest.approx(float(c[5, 1]))
    f = np.asfortranarray(c)
    img2 = pvtk.WrapNPAsVTKImageData(f)  # Fortran 2-D: shared
    f[0, 4] = -9
    assert point(img2, 0, 4, 0) == -9
    v = RNG.standard_normal((3, 2, 2, 3))
    with pytest.raises(ValueError):
        pvtk.WrapNPAsVTKImageData(v)
    imv = pvtk.WrapNPAsVTKImageData(v, AutoCopy=True)
    assert imv.GetPointData().GetScalars().GetNumberOfComponents() == 3
    assert point(imv, 2, 1, 0, 2) == pytest.approx(v[2, 1, 0, 2])
    for bad in (np.zeros(4), np.zeros((2, 2, 2, 2, 2)), np.array([["a"]])):
        with pytest.raises(ValueError):
            pvtk.WrapNPAsVTKImageData(bad, AutoCopy=True)
    with pytest.raises(ValueError):
        pvtk.WrapNPAsVTKImageData(np.zeros((2, 2, 2), order='F'), spacing=(1, 2))


@needs_vtk
def test_wrap_pyca_image_zero_copy_and_lifetime():
    a = RNG.standard_normal((7, 6, 5)).astype(np.float32)
    im = image_from(a, grid(7, 6, 5, sp=(1.5, 2.5, 3.5), org=(-1, -2, -3)))
    img = pvtk.WrapPyCAAsVTKImageData(im)
    assert img.GetDimensions() == (7, 6, 5)
    assert img.GetSpacing() == (1.5, 2.5, 3.5) and img.GetOrigin() == (-1.0, -2.0, -3.0)
    assert point(img, 6, 1, 4) == pytest.approx(float(a[6, 1, 4]))
    im.set(3, 2, 1, 17.0)
    img.Modified()
    assert point(img, 3, 2, 1) == 17.0
    del im
    gc.collect()
    assert point(img, 3, 2, 1) == 17.0 and point(img, 6, 1, 4) == pytest.approx(float(a[6, 1, 4]))


@needs_vtk
def test_wrap_pyca_field_and_errors():
    comps = [RNG.standard_normal((4, 3, 2)).astype(np.float32) for _ in range(3)]
    f = field_from(comps, grid(4, 3, 2, sp=(2, 3, 4)))
    with pytest.raises(ValueError):
        pvtk.WrapPyCAAsVTKImageData(f)
    img = pvtk.WrapPyCAAsVTKImageData(f, AutoCopy=True)
    assert img.GetDimensions() == (4, 3, 2) and img.GetSpacing() == (2.0, 3.0, 4.0)
    vec = img.GetPointData().GetVectors()
    assert vec is not None and vec.GetNumberOfComponents() == 3
    assert vec.GetTuple3(img.ComputePointId((3, 2, 1))) == pytest.approx(
        tuple(float(c[3, 2, 1]) for c in comps))
    with pytest.raises(TypeError):
        pvtk.WrapPyCAAsVTKImageData(np.zeros((2, 2, 2)))


@needs_vtk
@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_wrap_device_image_needs_copy():
    a = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    im = image_from(a, mem=ca.MEM_DEVICE)
    with pytest.raises(ValueError):
        pvtk.WrapPyCAAsVTKImageData(im)
    img = pvtk.WrapPyCAAsVTKImageData(im, AutoCopy=True)
    assert point(img, 3, 2, 1) == pytest.approx(float(a[3, 2, 1]))


@needs_vtk
def test_lifetime_when_only_vtk_holds_the_data():
    from vtkmodules.vtkCommonCore import vtkCollection
    a = RNG.standard_normal((20, 10, 5)).astype(np.float32)
    im = image_from(a)
    col = vtkCollection()
    col.AddItem(pvtk.WrapPyCAAsVTKImageData(im))  # the Python wrapper is dropped at once
    del im
    gc.collect()
    junk = [np.full((20, 10, 5), 1e6, np.float32) for _ in range(4)]  # reuse freed memory
    img = col.GetItemAsObject(0)
    assert point(img, 19, 9, 4) == pytest.approx(float(a[19, 9, 4])) and junk
