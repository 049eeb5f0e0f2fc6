"""PyCA.Common file IO (PyCAIO): SimpleITK formats, NumPy, PNG, DICOM, the
dispatchers, error handling, atomic saves, and _ITKFileIO in ITK builds."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import PyCA.Core as ca
import PyCA.Common as common
import PyCA.Common.PyCAIO as pio
from conftest import grid, usable_mem_types

sitk = pytest.importorskip("SimpleITK", reason="SimpleITK is not installed (./run installs it)")

RNG = np.random.default_rng(7)
ITK_EXTS = [".nii", ".nii.gz", ".mha", ".mhd", ".nrrd"]
# anisotropic spacing and negative origins that are not short decimals
SP = (np.float32(1.25), np.float32(0.7), np.float32(2.3456789))
ORG = (np.float32(-101.5), np.float32(-0.3), np.float32(37.123456))


def rand_image(shape, sp=SP, org=ORG):
    a = RNG.standard_normal(shape).astype(np.float32)
    a.flat[0] = np.float32(1e-30)  # a denormal-free tiny value and
    a.flat[-1] = np.float32(3.4e38)  # a huge one survive exactly
    return common.ImFromNPArr(a, ca.MEM_HOST, ca.Vec3Df(*map(float, sp)), ca.Vec3Df(*map(float, org))), a


def rand_field(shape, sp=SP, org=ORG):
    a = RNG.standard_normal(tuple(shape) + (3,)).astype(np.float32)
    return common.FieldFromNPArr(a, ca.MEM_HOST, ca.Vec3Df(*map(float, sp)), ca.Vec3Df(*map(float, org))), a


def geometry(obj):
    """Exact (size, spacing, origin) as tuples of Python numbers."""
    return (tuple(obj.size()), tuple(float(v) for v in obj.spacing()), tuple(float(v) for v in obj.origin()))


def field_array(f):
    return np.stack([np.array(v) for v in f.asnp()], axis=-1)


def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp-" in n)


def test_exports():
    for name in ("LoadITKImage", "SaveITKImage", "LoadITKField", "SaveITKField", "ReadGrid",
                 "LoadPNGImage", "SavePNGImage", "SaveImageNPY", "LoadImageNPY", "SaveImageNPZ",
                 "LoadImageNPZ", "SaveFieldNPZ", "LoadFieldNPZ", "LoadImageDCM", "SaveImage",
                 "LoadImage", "SaveField", "LoadField", "GetDirection", "SetDirection"):
        assert callable(getattr(common, name)), name


# ---------------------------------------------------------------------------
# Round trips: values, spacing and origin exact

@pytest.mark.parametrize("ext", ITK_EXTS)
@pytest.mark.parametrize("shape", [(7, 5, 4), (9, 6, 1)], ids=["3d", "2d"])
def test_itk_image_round_trip(tmp_path, ext, shape):
    im, a = rand_image(shape)
    fn = str(tmp_path / ("im" + ext))
    common.SaveITKImage(im, fn)
    back = common.LoadITKImage(fn)
    assert isinstance(back, ca.Image3D) and back.memType() == ca.MEM_HOST
    assert geometry(back) == geometry(im)
    assert np.array_equal(back.asnp(), a)
    assert common.ReadGrid(fn) == im.grid()
    assert geometry(common.ReadGrid(fn)) == geometry(im)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("ext", ITK_EXTS)
@pytest.mark.parametrize("shape", [(6, 5, 4), (8, 7, 1)], ids=["3d", "2d"])
def test_itk_field_round_trip(tmp_path, ext, shape):
    f, a = rand_field(shape)
    fn = str(tmp_path / ("f" + ext))
    common.SaveITKField(f, fn)
    back = common.LoadITKField(fn)
    assert isinstance(back, ca.Field3D)
    assert geometry(back) == geometry(f)
    assert np.array_equal(field_array(back), a)
    # the file is a 3-vector image in SimpleITK's (z, y, x, c) order
    s = sitk.ReadImage(fn)
    assert s.GetNumberOfComponentsPerPixel() == 3
    assert s.GetSize() + (1,) * (3 - s.GetDimension()) == shape  # a 2-D vector NIfTI reads as 2-D
    assert np.array_equal(sitk.GetArrayFromImage(s).reshape(shape[::-1] + (3,)), np.transpose(a, (2, 1, 0, 3)))
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("ext", [".nii.gz", ".mha", ".nrrd"])
def test_itk_compression(tmp_path, ext):
    a = np.zeros((40, 30, 20), np.float32)
    a[5:9, 3:4, :] = 2.5
    im = common.ImFromNPArr(a, sp=ca.Vec3Df(0.5, 0.5, 3))
    plain, packed = str(tmp_path / ("p" + ext)), str(tmp_path / ("c" + ext))
    common.SaveITKImage(im, plain, useCompression=False)
    common.SaveITKImage(im, packed, useCompression=True)
    assert os.path.getsize(packed) < a.nbytes / 4
    assert np.array_equal(common.LoadITKImage(packed).asnp(), a)


def test_itk_layout_matches_simpleitk(tmp_path):
    """asnp() is (x, y, z); SimpleITK's array is (z, y, x): voxel (x, y, z)
    of ours is arr[z, y, x] of SimpleITK, and x is the file's first axis."""
    im, a = rand_image((5, 4, 3))
    fn = str(tmp_path / "o.nii")
    common.SaveITKImage(im, fn)
    s = sitk.ReadImage(fn)
    assert s.GetSize() == (5, 4, 3)
    assert s.GetPixel(4, 1, 2) == a[4, 1, 2]
    arr = np.transpose(RNG.standard_normal((3, 4, 5)).astype(np.float32))  # (x, y, z)
    s2 = sitk.GetImageFromArray(np.ascontiguousarray(arr.T))
    s2.SetSpacing((2.0, 3.0, 4.0))
    sitk.WriteImage(s2, str(tmp_path / "s.mha"))
    back = common.LoadITKImage(str(tmp_path / "s.mha"))
    assert tuple(back.size()) == (5, 4, 3) and tuple(back.spacing()) == (2.0, 3.0, 4.0)
    assert np.array_equal(back.asnp(), arr)


def test_2d_file_loads_as_slice(tmp_path):
    a = RNG.standard_normal((6, 9)).astype(np.float32)  # (y, x)
    s = sitk.GetImageFromArray(a)
    s.SetSpacing((0.5, 2.0))
    s.SetOrigin((-3.0, 4.0))
    fn = str(tmp_path / "two.nii")
    sitk.WriteImage(s, fn)
    im = common.LoadITKImage(fn)
    assert geometry(im) == ((9, 6, 1), (0.5, 2.0, 1.0), (-3.0, 4.0, 0.0))
    assert np.array_equal(im.asnp()[:, :, 0], a.T)
    assert common.ReadGrid(fn) == im.grid()
    v = RNG.standard_normal((6, 9, 2)).astype(np.float32)
    sitk.WriteImage(sitk.GetImageFromArray(v, isVector=True), str(tmp_path / "v2.mha"))
    f = common.LoadITKField(str(tmp_path / "v2.mha"))  # 2-vectors: z component 0
    assert tuple(f.size()) == (9, 6, 1)
    assert np.array_equal(f.x_asnp()[:, :, 0], v[..., 0].T)
    assert np.array_equal(f.y_asnp()[:, :, 0], v[..., 1].T)
    assert not f.z_asnp().any()


@pytest.mark.parametrize("mem", usable_mem_types)
def test_memory_types(tmp_path, mem):
    im, a = rand_image((6, 5, 4))
    im.toType(mem)
    fn = str(tmp_path / "m.mha")
    common.SaveITKImage(im, fn)
    back = common.LoadITKImage(fn, mem)
    assert back.memType() == mem
    assert np.array_equal(common.AsNPCopy(back), a)
    f, fa = rand_field((4, 3, 2))
    f.toType(mem)
    common.SaveField(f, str(tmp_path / "f.nrrd"))
    fb = common.LoadField(str(tmp_path / "f.nrrd"), mem)
    assert fb.memType() == mem and np.array_equal(common.AsNPCopy(fb), fa)


def test_managed_image_saves(tmp_path):
    g = grid(5, 4, 3, sp=(1.5, 1, 1), org=(-1, -2, -3))
    ca.ThreadMemoryManager.init(g, ca.MEM_HOST, 1)
    im = ca.ManagedImage3D(g, ca.MEM_HOST)
    ca.SetMem(im, 4.5)
    common.SaveImage(im, str(tmp_path / "m.nii.gz"))
    back = common.LoadImage(str(tmp_path / "m.nii.gz"))
    assert geometry(back) == geometry(im) and np.all(back.asnp() == 4.5)


# ---------------------------------------------------------------------------
# Pixel types

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32, np.float64])
def test_pixel_types_convert_to_float32(tmp_path, dtype):
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    if info is not None:
        a = RNG.integers(info.min, info.max, (5, 4, 3), endpoint=True).astype(dtype)
        a.flat[0], a.flat[1] = info.min, info.max
    else:
        a = RNG.standard_normal((5, 4, 3)) * 1e3
        a.flat[0] = 1e300  # beyond float32: inf
    fn = str(tmp_path / "t.nrrd")
    sitk.WriteImage(sitk.GetImageFromArray(a), fn)
    im = common.LoadITKImage(fn)
    with np.errstate(over="ignore"):
        want = a.astype(np.float32)
    assert np.array_equal(im.asnp(), want.T)


def test_complex_and_wrong_kind_refused(tmp_path):
    c = sitk.GetImageFromArray((RNG.standard_normal((3, 4, 5)) + 1j).astype(np.complex64))
    sitk.WriteImage(c, str(tmp_path / "c.mha"))
    with pytest.raises(OSError, match="complex"):
        common.LoadITKImage(str(tmp_path / "c.mha"))
    f, _ = rand_field((4, 3, 2))
    common.SaveITKField(f, str(tmp_path / "f.nii"))
    with pytest.raises(OSError, match=r"f\.nii.*3 components per pixel"):
        common.LoadITKImage(str(tmp_path / "f.nii"))
    im, _ = rand_image((4, 3, 2))
    common.SaveITKImage(im, str(tmp_path / "i.nii"))
    with pytest.raises(OSError, match=r"i\.nii.*1 component"):
        common.LoadITKField(str(tmp_path / "i.nii"))


def test_nifti_scaling_applied(tmp_path):
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    s = sitk.GetImageFromArray(a)
    fn = str(tmp_path / "s.nii")
    sitk.WriteImage(s, fn)
    raw = bytearray(open(fn, "rb").read())
    raw[112:120] = np.array([0.5, 10.0], "<f4").tobytes()  # scl_slope, scl_inter
    open(fn, "wb").write(bytes(raw))
    im = common.LoadITKImage(fn)
    assert np.array_equal(im.asnp(), (a * 0.5 + 10).astype(np.float32).T)


# ---------------------------------------------------------------------------
# Direction cosines

def rotation(th=0.3):
    c, s = np.cos(th), np.sin(th)
    return (c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("ext,tol", [(".mha", 0), (".mhd", 0), (".nrrd", 1e-15), (".nii", 1e-7),
                                     (".nii.gz", 1e-7)])
def test_direction_kept_on_round_trip(tmp_path, ext, tol):
    a = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    s = sitk.GetImageFromArray(a)
    s.SetDirection(rotation())
    s.SetSpacing((1.5, 0.5, 2.0))
    s.SetOrigin((-10.0, 20.0, -30.0))
    src = str(tmp_path / ("src" + ext))
    sitk.WriteImage(s, src)
    file_dir = sitk.ReadImage(src).GetDirection()
    im = common.LoadITKImage(src)
    assert np.allclose(common.GetDirection(im), file_dir, atol=0, rtol=0)
    dst = str(tmp_path / ("dst" + ext))
    common.SaveITKImage(im, dst)
    assert np.allclose(sitk.ReadImage(dst).GetDirection(), rotation(), atol=tol, rtol=0)
    again = common.LoadITKImage(dst)
    assert np.allclose(common.GetDirection(again), rotation(), atol=tol, rtol=0)
    assert geometry(again) == geometry(im) and np.array_equal(again.asnp(), im.asnp())


def test_direction_side_table(tmp_path):
    im, _ = rand_image((4, 3, 2))
    assert common.GetDirection(im) is None  # made in memory: identity
    common.SetDirection(im, np.array(rotation()).reshape(3, 3))
    assert common.GetDirection(im) == pytest.approx(rotation())
    fn = str(tmp_path / "d.mha")
    common.SaveITKImage(im, fn)
    assert sitk.ReadImage(fn).GetDirection() == pytest.approx(rotation(), abs=0)
    # an explicit direction overrides the recorded one
    common.SaveITKImage(im, fn, direction=rotation(0.1))
    assert sitk.ReadImage(fn).GetDirection() == pytest.approx(rotation(0.1), abs=0)
    # copies and operator results carry none; clearing writes identity
    assert common.GetDirection(im.copy()) is None
    common.SetDirection(im, None)
    common.SaveITKImage(im, fn)
    assert sitk.ReadImage(fn).GetDirection() == (1, 0, 0, 0, 1, 0, 0, 0, 1)
    with pytest.raises(ValueError):
        common.SetDirection(im, (1, 2, 3))
    with pytest.raises(TypeError):
        common.SetDirection("not an image", rotation())
    # fields too; the table forgets objects that die
    f = common.LoadITKField(str(_saved_field(tmp_path, rotation(0.2))))
    assert common.GetDirection(f) == pytest.approx(rotation(0.2))
    n = len(pio._DIRECTIONS)
    del f
    assert len(pio._DIRECTIONS) == n - 1


def _saved_field(tmp_path, direction):
    s = sitk.GetImageFromArray(RNG.standard_normal((2, 3, 4, 3)).astype(np.float32), isVector=True)
    s.SetDirection(direction)
    fn = tmp_path / "fd.mha"
    sitk.WriteImage(s, str(fn))
    return fn


def test_direction_in_npz(tmp_path):
    im, a = rand_image((4, 3, 2))
    common.SetDirection(im, rotation())
    fn = str(tmp_path / "d.npz")
    common.SaveImageNPZ(im, fn)
    back = common.LoadImageNPZ(fn)
    assert common.GetDirection(back) == rotation()
    plain, _ = rand_image((4, 3, 2))
    common.SaveImageNPZ(plain, fn)
    assert "direction" not in np.load(fn).files
    assert common.GetDirection(common.LoadImageNPZ(fn)) is None


# ---------------------------------------------------------------------------
# NumPy formats (legacy defects fixed)

def test_npy_image(tmp_path):
    im, a = rand_image((5, 4, 3))
    fn = str(tmp_path / "a.npy")
    common.SaveImageNPY(im, fn)
    raw = np.load(fn)
    assert raw.dtype == np.float32 and raw.shape == (5, 4, 3) and np.array_equal(raw, a)
    back = common.LoadImageNPY(fn)  # the legacy returned nothing
    assert isinstance(back, ca.Image3D) and np.array_equal(back.asnp(), a)
    assert geometry(back) == ((5, 4, 3), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    back = common.LoadImageNPY(fn, ca.MEM_HOST, ca.Vec3Df(2, 3, 4), ca.Vec3Df(-1, -2, -3))
    assert geometry(back)[1:] == ((2.0, 3.0, 4.0), (-1.0, -2.0, -3.0))
    np.save(str(tmp_path / "b.npy"), np.arange(12, dtype=np.int64).reshape(3, 4))
    two = common.LoadImage(str(tmp_path / "b.npy"))
    assert tuple(two.size()) == (3, 4, 1) and two.get(2, 3, 0) == 11.0


@pytest.mark.parametrize("compress", [True, False])
def test_npz_image(tmp_path, compress):
    im, a = rand_image((6, 5, 1))
    fn = str(tmp_path / "a.npz")
    common.SaveImageNPZ(im, fn, useCompression=compress)  # False was broken in the legacy
    z = np.load(fn)
    assert set(z.files) == {"data", "spacing", "origin"}
    assert z["data"].dtype == np.float32
    back = common.LoadImageNPZ(fn)
    assert geometry(back) == geometry(im) and np.array_equal(back.asnp(), a)
    assert common.ReadGrid(fn) == im.grid()


@pytest.mark.parametrize("compress", [True, False])
def test_npz_npy_field(tmp_path, compress):
    f, a = rand_field((5, 4, 3))
    fn = str(tmp_path / "f.npz")
    common.SaveFieldNPZ(f, fn, useCompression=compress)
    assert np.load(fn)["data"].shape == (5, 4, 3, 3)
    back = common.LoadFieldNPZ(fn)
    assert geometry(back) == geometry(f) and np.array_equal(field_array(back), a)
    common.SaveField(f, str(tmp_path / "f.npy"))
    back = common.LoadField(str(tmp_path / "f.npy"))
    assert np.array_equal(field_array(back), a)
    with pytest.raises(OSError, match=r"f\.npz.*field"):
        common.LoadImageNPZ(fn)
    common.SaveImageNPZ(rand_image((2, 2, 2))[0], str(tmp_path / "i.npz"))
    with pytest.raises(OSError, match=r"i\.npz.*image"):
        common.LoadFieldNPZ(str(tmp_path / "i.npz"))


def test_npz_without_geometry_and_legacy_keys(tmp_path):
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    np.savez(str(tmp_path / "d.npz"), data=a)
    im = common.LoadImageNPZ(str(tmp_path / "d.npz"))
    assert geometry(im) == ((3, 4, 5), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    np.savez(str(tmp_path / "l.npz"), data=a, sp=[2, 2, 2], orig=[1, 2, 3])
    im = common.LoadImageNPZ(str(tmp_path / "l.npz"))
    assert geometry(im)[1:] == ((2.0, 2.0, 2.0), (1.0, 2.0, 3.0))


# ---------------------------------------------------------------------------
# PNG

def test_png_8bit_round_trip(tmp_path):
    a = RNG.uniform(0, 1, (13, 17, 1)).astype(np.float32)
    a[0, 0, 0], a[1, 0, 0] = 0.0, 1.0
    im = common.ImFromNPArr(a)
    fn = str(tmp_path / "g.png")
    common.SavePNGImage(im, fn, rng=(0, 1))
    back = common.LoadPNGImage(fn)
    assert tuple(back.size()) == (13, 17, 1)
    assert np.max(np.abs(back.asnp() - a)) <= 0.5 / 255 + 1e-7
    # exactly the rounded 8-bit levels / 255
    assert np.array_equal(back.asnp(), (np.rint(a * 255) / 255).astype(np.float32))


def test_png_16bit_round_trip(tmp_path):
    a = RNG.uniform(-5, 7, (9, 11, 1)).astype(np.float32)
    im = common.ImFromNPArr(a)
    fn = str(tmp_path / "g16.png")
    common.SavePNGImage(im, fn, rng=(-5, 7), bitDepth=16)
    back = common.LoadPNGImage(fn, ca.MEM_HOST, ca.Vec3Df(0.5, 0.25, 1), ca.Vec3Df(-1, 2, 0))
    assert geometry(back)[1:] == ((0.5, 0.25, 1.0), (-1.0, 2.0, 0.0))
    assert np.max(np.abs(back.asnp() * 12 - 5 - a)) <= 12 * (0.5 / 65535) + 1e-5


def test_png_orientation_and_range(tmp_path):
    from PIL import Image
    rows = np.zeros((4, 6), np.uint8)
    rows[1, 5] = 255  # PNG row 1, column 5
    Image.fromarray(rows).save(str(tmp_path / "o.png"))
    im = common.LoadImage(str(tmp_path / "o.png"))
    assert tuple(im.size()) == (4, 6, 1) and im.get(1, 5, 0) == 1.0  # rows are x
    # default range: the image's min..max; values outside rng clip
    a = np.array([[[-2.0], [0.0]], [[2.0], [6.0]]], np.float32)
    common.SavePNGImage(common.ImFromNPArr(a), str(tmp_path / "r.png"))
    assert np.allclose(common.LoadPNGImage(str(tmp_path / "r.png")).asnp()[:, :, 0],
                       [[0, 0.25], [0.5, 1]], atol=0.5 / 255)
    common.SavePNGImage(common.ImFromNPArr(a), str(tmp_path / "c.png"), rng=(0, 2))
    assert np.array_equal(common.LoadPNGImage(str(tmp_path / "c.png")).asnp()[:, :, 0], [[0, 0], [1, 1]])


def test_png_colour(tmp_path):
    a = np.linspace(0, 1, 20, dtype=np.float32).reshape(4, 5, 1)
    fn = str(tmp_path / "v.png")
    common.SavePNGImage(common.ImFromNPArr(a), fn, cmap="viridis")
    from PIL import Image
    assert Image.open(fn).mode == "RGBA"
    back = common.LoadPNGImage(fn)  # luminance of the colours
    import matplotlib
    rgb = matplotlib.colormaps["viridis"](a[:, :, 0], bytes=True)[..., :3] / 255.0
    assert np.allclose(back.asnp()[:, :, 0], rgb @ [0.299, 0.587, 0.114], atol=1e-6)
    with pytest.raises(ValueError, match="2-D"):
        common.SavePNGImage(rand_image((3, 3, 2))[0], str(tmp_path / "x.png"))
    with pytest.raises(ValueError, match="bitDepth"):
        common.SavePNGImage(common.ImFromNPArr(a), fn, bitDepth=12)


def test_png_does_not_touch_pyplot(tmp_path):
    code = ("import sys, numpy as np, PyCA.Common as c\n"
            "im = c.ImFromNPArr(np.ones((3, 4), np.float32))\n"
            "c.SavePNGImage(im, sys.argv[1]); c.SavePNGImage(im, sys.argv[1], cmap='jet')\n"
            "c.LoadPNGImage(sys.argv[1])\n"
            "print('matplotlib.pyplot' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "p.png")], capture_output=True,
                       text=True, env=dict(os.environ, MPLBACKEND="", DISPLAY=""), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


# ---------------------------------------------------------------------------
# DICOM

def write_dicom(path, pixels, position, spacing=(0.8, 0.6), thickness=2.5, slope=1.0, intercept=0.0,
                instance=1, series="1.2.3.4.5", orientation=(1, 0, 0, 0, 1, 0)):
    pydicom = pytest.importorskip("pydicom")
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.SeriesInstanceUID = series
    ds.Modality = "CT"
    ds.InstanceNumber = instance
    ds.Rows, ds.Columns = pixels.shape
    ds.PixelSpacing = list(spacing)
    ds.SliceThickness = thickness
    ds.ImagePositionPatient = list(position)
    ds.ImageOrientationPatient = list(orientation)
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated = ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 0
    ds.RescaleSlope = slope
    ds.RescaleIntercept = intercept
    ds.PixelData = pixels.astype("<u2").tobytes()
    pydicom.dcmwrite(str(path), ds, enforce_file_format=True) if _pydicom3() else ds.save_as(str(path))


def _pydicom3():
    import pydicom
    return int(pydicom.__version__.split(".")[0]) >= 3


def test_dicom_single_slice(tmp_path):
    pytest.importorskip("pydicom", reason="pydicom is not installed (optional)")
    px = RNG.integers(0, 4000, (6, 9)).astype(np.uint16)  # (rows, cols)
    fn = tmp_path / "s.dcm"
    write_dicom(fn, px, (-120.5, 30.25, 7.0), slope=0.5, intercept=-1024)
    im = common.LoadImage(str(fn))
    assert geometry(im) == ((9, 6, 1), (0.6000000238418579, 0.800000011920929, 2.5), (-120.5, 30.25, 7.0))
    assert np.array_equal(im.asnp()[:, :, 0], (px * 0.5 - 1024).astype(np.float32).T)
    assert common.GetDirection(im) == (1, 0, 0, 0, 1, 0, 0, 0, 1)


def test_dicom_series_folder(tmp_path):
    pytest.importorskip("pydicom", reason="pydicom is not installed (optional)")
    vol = RNG.integers(0, 1000, (4, 5, 7)).astype(np.uint16)  # (z, rows, cols)
    folder = tmp_path / "series"
    folder.mkdir()
    order = [2, 0, 3, 1]  # files not in slice order
    for k, z in enumerate(order):
        write_dicom(folder / ("img%02d.dcm" % k), vol[z], (10.0, -20.0, -50.0 + 1.75 * z), instance=k + 1)
    (folder / "notes.txt").write_text("not DICOM")
    im = common.LoadImageDCM(str(folder))
    assert geometry(im) == ((7, 5, 4), (0.6000000238418579, 0.800000011920929, 1.75), (10.0, -20.0, -50.0))
    assert np.array_equal(im.asnp(), vol.astype(np.float32).T)
    write_dicom(folder / "other.dcm", vol[0], (0, 0, 0), series="9.9.9")
    with pytest.raises(OSError, match="2 series"):
        common.LoadImageDCM(str(folder))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OSError, match="no DICOM"):
        common.LoadImageDCM(str(empty))


def test_dicom_errors(tmp_path):
    pytest.importorskip("pydicom", reason="pydicom is not installed (optional)")
    bad = tmp_path / "bad.dcm"
    bad.write_bytes(b"garbage" * 100)
    with pytest.raises(OSError, match=r"bad\.dcm"):
        common.LoadImageDCM(str(bad))
    with pytest.raises(FileNotFoundError, match=r"nope\.dcm"):
        common.LoadImageDCM(str(tmp_path / "nope.dcm"))
    with pytest.raises(ValueError, match="DICOM"):
        common.SaveImage(rand_image((2, 2, 1))[0], str(tmp_path / "x.dcm"))


def test_missing_pydicom_message(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pydicom", None)  # import pydicom -> ImportError
    with pytest.raises(ImportError, match="pydicom.*not installed.*pip install pydicom") as e:
        common.LoadImageDCM(str(tmp_path / "x.dcm"))
    assert e.value.name == "pydicom"


def test_missing_simpleitk_message(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "SimpleITK", None)
    with pytest.raises(ImportError, match="SimpleITK.*not installed"):
        common.LoadITKImage(str(tmp_path / "x.nii"))
    im, a = rand_image((3, 3, 3))  # the NumPy formats need no SimpleITK
    common.SaveImage(im, str(tmp_path / "x.npz"))
    assert np.array_equal(common.LoadImage(str(tmp_path / "x.npz")).asnp(), a)


# ---------------------------------------------------------------------------
# Bad input: OSError naming the file and saying what is wrong

LOADERS = {
    ".nii": common.LoadITKImage, ".nii.gz": common.LoadITKImage, ".mha": common.LoadITKImage,
    ".nrrd": common.LoadITKField, ".npy": common.LoadImageNPY, ".npz": common.LoadImageNPZ,
    ".png": common.LoadPNGImage,
}


@pytest.mark.parametrize("ext", sorted(LOADERS))
def test_missing_empty_directory(tmp_path, ext):
    load = LOADERS[ext]
    missing = str(tmp_path / ("missing" + ext))
    with pytest.raises(FileNotFoundError, match="missing" + ext.replace(".", r"\.")) as e:
        load(missing)
    assert e.value.filename == missing
    empty = tmp_path / ("empty" + ext)
    empty.write_bytes(b"")
    with pytest.raises(OSError, match=r"empty.*0 bytes"):
        load(str(empty))
    d = tmp_path / ("dir" + ext)
    d.mkdir()
    with pytest.raises(IsADirectoryError, match="directory"):
        load(str(d))
    for fn in (missing, str(empty), str(d)):
        with pytest.raises(OSError):
            common.LoadImage(fn) if load is not common.LoadITKField else common.LoadField(fn)


@pytest.mark.parametrize("ext", sorted(LOADERS))
def test_garbage_refused(tmp_path, ext):
    fn = tmp_path / ("garbage" + ext)
    fn.write_bytes(np.random.default_rng(3).bytes(4000))
    with pytest.raises(OSError, match="garbage" + ext.replace(".", r"\.")):
        LOADERS[ext](str(fn))
    fn.write_text("hello world\n" * 50)
    with pytest.raises(OSError, match="garbage"):
        LOADERS[ext](str(fn))


def _truncate(fn, keep):
    b = open(fn, "rb").read()
    open(fn, "wb").write(b[:keep(len(b))])


@pytest.mark.parametrize("ext", ITK_EXTS + [".npy", ".npz", ".png"])
@pytest.mark.parametrize("frac", [0.5, 0.98])
def test_truncated_refused(tmp_path, ext, frac):
    a = RNG.standard_normal((30, 20, 10)).astype(np.float32)
    if ext == ".png":
        im = common.ImFromNPArr(RNG.uniform(0, 1, (60, 50)).astype(np.float32))
    else:
        im = common.ImFromNPArr(a)
    fn = str(tmp_path / ("t" + ext))
    common.SaveImage(im, fn, useCompression=True)
    data = fn[:-4] + ".zraw" if ext == ".mhd" else fn  # truncate the data file of a .mhd
    _truncate(data, lambda n: int(n * frac))
    with pytest.raises(OSError, match=r"t\.(nii|mha|mhd|nrrd|npy|npz|png|zraw)"):
        common.LoadImage(fn)


def test_truncated_nifti_messages(tmp_path):
    im, _ = rand_image((20, 10, 5))
    fn = str(tmp_path / "t.nii")
    common.SaveITKImage(im, fn)
    _truncate(fn, lambda n: n - 4)
    with pytest.raises(OSError, match=r"t\.nii.*truncated NIfTI file: 4352 bytes .* 4348 present"):
        common.LoadITKImage(fn)
    with pytest.raises(OSError, match=r"t\.nii.*truncated"):
        common.LoadITKImage(fn)  # the check does not depend on ITK's cache or state
    fz = str(tmp_path / "t.nii.gz")
    common.SaveITKImage(im, fz)
    _truncate(fz, lambda n: n - 10)
    with pytest.raises(OSError, match=r"t\.nii\.gz.*truncated gzip stream"):
        common.LoadITKImage(fz)
    # a multi-member gzip (concatenated streams) is complete: loads
    import gzip
    common.SaveITKImage(im, fn)
    body = open(fn, "rb").read()
    with open(str(tmp_path / "m.nii.gz"), "wb") as f:
        f.write(gzip.compress(body[:1000]) + gzip.compress(body[1000:]))
    assert np.array_equal(common.LoadITKImage(str(tmp_path / "m.nii.gz")).asnp(), im.asnp())


@pytest.mark.parametrize("what", ["sform", "qform", "pixdim"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("ext", [".nii", ".nii.gz"])
def test_nonfinite_nifti_transform_refused(tmp_path, what, value, ext):
    """ITK's NIfTI reader spins without end on a header with an infinite
    sform entry (found by the fuzzer); such headers are refused first, by
    LoadITKImage, LoadITKField, ReadGrid and the C++ reader."""
    import gzip
    import struct
    im, _ = rand_image((6, 5, 4))
    fn = str(tmp_path / "t.nii")
    common.SaveITKImage(im, fn)
    b = bytearray(open(fn, "rb").read())
    if what == "sform":
        b[254:256] = struct.pack("<h", 1)
        b[300:304] = struct.pack("<f", value)   # srow_y[1]
    elif what == "qform":
        b[252:254] = struct.pack("<h", 1)
        b[272:276] = struct.pack("<f", value)   # qoffset_y
    else:
        b[80:84] = struct.pack("<f", value)     # pixdim[1]
    out = str(tmp_path / ("bad" + ext))
    with (gzip.open(out, "wb") if ext.endswith(".gz") else open(out, "wb")) as f:
        f.write(bytes(b))
    for load in (common.LoadITKImage, common.ReadGrid):
        with pytest.raises(OSError, match=r"bad\.nii.*holds %s in its %s" % (re.escape(repr(value)), what)):
            load(out)
    if hasattr(ca, "_ITKFileIO"):
        io = ca._ITKFileIO
        with pytest.raises(OSError, match="non-finite value in its %s" % what):
            io.LoadImage(ca.Image3D(ca.MEM_HOST), out)
        with pytest.raises(OSError, match="non-finite value in its %s" % what):
            io.ReadHeader(ca.GridInfo(), out)


def test_wrong_extension_content(tmp_path):
    im, _ = rand_image((8, 8, 1))
    png = str(tmp_path / "a.png")
    common.SavePNGImage(im, png)
    os.rename(png, str(tmp_path / "a.nii"))
    with pytest.raises(OSError, match=r"a\.nii.*not what the extension says \(read by PNGImageIO"):
        common.LoadImage(str(tmp_path / "a.nii"))
    common.SaveITKImage(im, str(tmp_path / "b.nii"))
    os.rename(str(tmp_path / "b.nii"), str(tmp_path / "b.png"))
    with pytest.raises(OSError, match=r"b\.png.*not a readable PNG"):
        common.LoadImage(str(tmp_path / "b.png"))
    common.SaveImageNPZ(im, str(tmp_path / "c.npz"))
    os.rename(str(tmp_path / "c.npz"), str(tmp_path / "c.npy"))
    with pytest.raises(OSError, match=r"c\.npy"):
        common.LoadImage(str(tmp_path / "c.npy"))
    common.SaveImageNPY(im, str(tmp_path / "d.npy"))
    os.rename(str(tmp_path / "d.npy"), str(tmp_path / "d.npz"))
    with pytest.raises(OSError, match=r"d\.npz"):
        common.LoadImage(str(tmp_path / "d.npz"))
    np.save(str(tmp_path / "o.npy"), np.array(["a", "b"]))
    with pytest.raises(OSError, match=r"o\.npy.*not real numbers"):
        common.LoadImageNPY(str(tmp_path / "o.npy"))
    with pytest.raises(OSError, match=r"4-D array"):
        np.save(str(tmp_path / "f.npy"), np.zeros((2, 2, 2, 3), np.float32))
        common.LoadImageNPY(str(tmp_path / "f.npy"))
    with pytest.raises(ValueError, match="images, not vector fields"):
        common.LoadField(str(tmp_path / "a.png"))


def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    im, _ = rand_image((2, 2, 2))
    fn = str(tmp_path / "p.mha")
    common.SaveImage(im, fn)
    os.chmod(fn, 0)
    with pytest.raises(PermissionError, match=r"p\.mha"):
        common.LoadImage(fn)


def test_missing_data_file_of_mhd(tmp_path):
    im, _ = rand_image((4, 3, 2))
    fn = str(tmp_path / "h.mhd")
    common.SaveImage(im, fn)
    os.remove(str(tmp_path / "h.raw"))
    with pytest.raises(OSError, match=r"h\.mhd"):
        common.LoadImage(fn)


# ---------------------------------------------------------------------------
# Atomic saves

@pytest.mark.parametrize("ext", ITK_EXTS + [".npy", ".npz", ".png"])
def test_failed_save_keeps_earlier_file(tmp_path, ext, monkeypatch):
    old, a = rand_image((6, 5, 1))
    fn = str(tmp_path / ("keep" + ext))
    common.SaveImage(old, fn)
    before = open(fn, "rb").read()
    new, _ = rand_image((9, 9, 1))
    real_replace = os.replace

    def failing_replace(src, dst):  # the temporary is complete; the rename fails
        assert ".tmp-%d-" % os.getpid() in src and os.path.getsize(src) > 0
        raise OSError(28, "injected failure")
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="injected"):
        common.SaveImage(new, fn)
    monkeypatch.setattr(os, "replace", real_replace)
    assert open(fn, "rb").read() == before
    assert leftovers(tmp_path) == []
    back = common.LoadImage(fn)
    assert tuple(back.size()) == (6, 5, 1)


def test_failed_writer_leaves_nothing(tmp_path, monkeypatch):
    old, a = rand_image((5, 4, 3))
    fn = str(tmp_path / "w.mhd")
    common.SaveImage(old, fn)
    real = sitk.WriteImage

    def half_write(img, name, *args):
        real(img, name, *args)  # both temporaries (header and .raw) exist...
        raise RuntimeError("sitk::ERROR: injected writer failure")
    monkeypatch.setattr(sitk, "WriteImage", half_write)
    with pytest.raises(OSError, match=r"SaveITKImage: cannot write '.*w\.mhd': injected writer failure"):
        common.SaveITKImage(rand_image((7, 7, 7))[0], fn)
    monkeypatch.setattr(sitk, "WriteImage", real)
    assert leftovers(tmp_path) == []
    assert np.array_equal(common.LoadImage(fn).asnp(), a)


def test_mhd_pair(tmp_path):
    im, a = rand_image((6, 5, 4))
    for compress, data in ((False, "h.raw"), (True, "h.zraw")):
        fn = str(tmp_path / "h.mhd")
        common.SaveITKImage(im, fn, useCompression=compress)
        header = open(fn).read()
        assert "ElementDataFile = %s" % data in header and ".tmp-" not in header
        assert os.path.exists(str(tmp_path / data))
        assert np.array_equal(common.LoadITKImage(fn).asnp(), a)
    assert leftovers(tmp_path) == []


def test_save_errors(tmp_path):
    im, _ = rand_image((2, 2, 2))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        common.SaveImage(im, str(tmp_path / "nofolder" / "x.nii"))
    (tmp_path / "d.nii").mkdir()
    with pytest.raises(IsADirectoryError):
        common.SaveImage(im, str(tmp_path / "d.nii"))
    with pytest.raises(OSError, match=r"x\.unknownext"):
        common.SaveImage(im, str(tmp_path / "x.unknownext"))
    assert leftovers(tmp_path) == []
    with pytest.raises(TypeError):
        common.SaveITKImage(rand_field((2, 2, 2))[0], str(tmp_path / "y.nii"))
    with pytest.raises(TypeError):
        common.SaveITKField(im, str(tmp_path / "y.nii"))


def test_odd_shapes_and_names(tmp_path):
    im, a = rand_image((3, 2, 2))
    common.SaveImageNPY(im, str(tmp_path / "noext"))  # no extension: written as named
    assert np.array_equal(np.load(str(tmp_path / "noext")), a)
    with pytest.raises(OSError, match=r"empty\.nii"):  # nothing to write
        common.SaveITKImage(ca.Image3D(ca.GridInfo(ca.Vec3Di(0, 0, 0)), ca.MEM_HOST), str(tmp_path / "empty.nii"))
    assert not os.path.exists(str(tmp_path / "empty.nii"))
    four = sitk.GetImageFromArray(np.zeros((2, 3, 4, 5), np.float32), isVector=False)  # (t, z, y, x)
    sitk.WriteImage(four, str(tmp_path / "t.nii"))
    with pytest.raises(OSError, match=r"t\.nii.*4-D image"):
        common.LoadITKImage(str(tmp_path / "t.nii"))
    one = sitk.JoinSeries([sitk.GetImageFromArray(a.T)])  # 4-D with one time point: 3-D
    sitk.WriteImage(one, str(tmp_path / "one.nii"))
    assert np.array_equal(common.LoadITKImage(str(tmp_path / "one.nii")).asnp(), a)
    assert leftovers(tmp_path) == []


def test_save_keeps_mode_and_symlink(tmp_path):
    im, a = rand_image((3, 3, 3))
    fn = str(tmp_path / "m.nii")
    common.SaveImage(im, fn)
    os.chmod(fn, 0o640)
    common.SaveImage(im, fn)
    assert os.stat(fn).st_mode & 0o777 == 0o640
    os.symlink("m.nii", str(tmp_path / "link.nii"))
    im2, a2 = rand_image((3, 3, 3))
    common.SaveImage(im2, str(tmp_path / "link.nii"))
    assert os.path.islink(str(tmp_path / "link.nii"))
    assert np.array_equal(common.LoadImage(fn).asnp(), a2)


def test_concurrent_saves(tmp_path):
    ims = [rand_image((20, 20, 20))[0] for _ in range(4)]
    fn = str(tmp_path / "c.nii.gz")
    errors = []

    def run(im):
        try:
            for _ in range(3):
                common.SaveImage(im, fn)
        except Exception as e:  # pragma: no cover
            errors.append(e)
    threads = [threading.Thread(target=run, args=(im,)) for im in ims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    back = common.LoadImage(fn).asnp()
    assert any(np.array_equal(back, im.asnp()) for im in ims)
    assert leftovers(tmp_path) == []


KILL_WRITER = r"""
import sys, numpy as np, PyCA.Common as c
im = c.ImFromNPArr(np.random.default_rng(0).standard_normal((224, 224, 224)).astype(np.float32))
print('ready', flush=True)
while True:
    c.SaveImage(im, sys.argv[1], useCompression=True)
"""


def _earlier_file(tmp_path, name):
    old, a = rand_image((7, 6, 5))
    fn = str(tmp_path / name)
    common.SaveImage(old, fn)
    data = {n: open(str(tmp_path / n), "rb").read() for n in os.listdir(tmp_path)}
    return old, a, fn, data


def _check_earlier_file(tmp_path, old, a, fn, data, pid):
    for n, b in data.items():
        assert open(str(tmp_path / n), "rb").read() == b, n
    back = common.LoadImage(fn)
    assert geometry(back) == geometry(old) and np.array_equal(back.asnp(), a)
    left = leftovers(tmp_path)
    stem = os.path.basename(fn).split(".")[0]
    assert all(n.startswith("%s.tmp-%d-" % (stem, pid)) for n in left), left  # the documented leftover
    common.SaveImage(old, fn)  # a later save works beside it
    assert np.array_equal(common.LoadImage(fn).asnp(), a)


def test_killed_mid_write_leaves_earlier_file(tmp_path):
    """SIGKILL while a large .nii.gz is being compressed into its temporary
    (a few seconds): the target is still the earlier file, complete and
    loadable; only the temporary can be left."""
    old, a, fn, data = _earlier_file(tmp_path, "big.nii.gz")
    p = subprocess.Popen([sys.executable, "-c", KILL_WRITER, fn], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        deadline = time.time() + 120
        while time.time() < deadline:
            tmps = leftovers(tmp_path)
            try:
                if tmps and os.path.getsize(str(tmp_path / tmps[0])) > 1 << 16:
                    break  # the temporary is being written
            except OSError:
                pass
            time.sleep(0.002)
        else:
            pytest.fail("the writer never started")
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert leftovers(tmp_path), "killed after its save finished: no temporary"
    _check_earlier_file(tmp_path, old, a, fn, data, p.pid)


HANG_BEFORE_RENAME = r"""
import os, sys, time, numpy as np, PyCA.Common as c
def hang(*args):  # every temporary is written and flushed: block where the rename would be
    print('renaming', flush=True)
    time.sleep(600)
os.replace = hang
im = c.ImFromNPArr(np.random.default_rng(0).standard_normal((64, 64, 64)).astype(np.float32))
c.SaveImage(im, sys.argv[1])
"""


@pytest.mark.parametrize("ext", [".mha", ".mhd", ".nrrd", ".npz"])
def test_killed_before_rename_leaves_earlier_file(tmp_path, ext):
    """SIGKILL after the temporary (for .mhd both temporaries) is complete,
    before the rename: the earlier file (pair) is intact."""
    old, a, fn, data = _earlier_file(tmp_path, "pair" + ext)
    p = subprocess.Popen([sys.executable, "-c", HANG_BEFORE_RENAME, fn], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "renaming"
        made = leftovers(tmp_path)
        assert made and all(os.path.getsize(str(tmp_path / n)) > 0 for n in made)
        if ext == ".mhd":  # header and data; the header already names the final data file
            header = [n for n in made if n.endswith(".mhd")]
            assert len(made) == 2 and len(header) == 1
            assert "ElementDataFile = pair.raw" in open(str(tmp_path / header[0])).read()
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    _check_earlier_file(tmp_path, old, a, fn, data, p.pid)


# ---------------------------------------------------------------------------
# Dispatchers and ReadGrid

def test_dispatchers(tmp_path):
    im, a = rand_image((5, 4, 1), sp=(1.0, 2.0, 3.0), org=(-1.0, -2.0, -3.0))
    for ext in ITK_EXTS + [".npz", ".vtk"]:
        fn = str(tmp_path / ("d" + ext))
        if ext == ".vtk":  # VTK stores one z plane as 2-D: z spacing/origin are lost (documented)
            im, a = rand_image((5, 4, 2), sp=(1.0, 2.0, 3.0), org=(-1.0, -2.0, -3.0))
        common.SaveImage(im, fn)
        back = common.LoadImage(fn)
        assert geometry(back) == geometry(im), ext
        assert np.array_equal(back.asnp(), a), ext
        assert common.ReadGrid(fn) == im.grid()
    common.SaveImage(im, str(tmp_path / "d.npy"))
    assert tuple(common.ReadGrid(str(tmp_path / "d.npy")).size()) == tuple(im.size())
    with pytest.raises(OSError, match="ReadGrid"):
        common.ReadGrid(str(tmp_path / "none.nii"))
    f, fa = rand_field((3, 4, 5))
    for ext in (".nii.gz", ".mha", ".npz", ".npy"):
        common.SaveField(f, str(tmp_path / ("f" + ext)))
        assert np.array_equal(field_array(common.LoadField(str(tmp_path / ("f" + ext)))), fa)
    with pytest.raises(ValueError):
        common.SaveField(f, str(tmp_path / "f.png"))
    common.SaveImage(im, tmp_path / "pathlike.nii")  # os.PathLike names
    assert np.array_equal(common.LoadImage(tmp_path / "pathlike.nii").asnp(), a)


# ---------------------------------------------------------------------------
# _ITKFileIO (ITK builds only)

itk_only = pytest.mark.skipif(not hasattr(ca, "_ITKFileIO"),
                              reason="PyCA built without ITK (USE_ITK=OFF): no _ITKFileIO")


@itk_only
def test_itkfileio_round_trips(tmp_path):
    io = ca._ITKFileIO
    im, a = rand_image((7, 6, 5))
    for ext in ITK_EXTS:
        fn = str(tmp_path / ("c" + ext))
        io.SaveImage(im, fn)
        back = ca.Image3D(ca.MEM_HOST)
        io.LoadImage(back, fn)
        assert geometry(back) == geometry(im) and np.array_equal(back.asnp(), a)
        g = ca.GridInfo()
        assert io.ReadHeader(g, fn) == io.FLOAT == 11
        assert geometry(g) == geometry(im)
        # interoperable with the SimpleITK path
        assert np.array_equal(common.LoadITKImage(fn).asnp(), a)
    f, fa = rand_field((4, 5, 6))
    io.SaveField(f, str(tmp_path / "f.nii.gz"), True)
    fb = ca.Field3D(ca.MEM_HOST)
    io.LoadField(fb, str(tmp_path / "f.nii.gz"))
    assert geometry(fb) == geometry(f) and np.array_equal(field_array(fb), fa)
    io.SaveFieldComponents(f, str(tmp_path / "comp"))
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("comp")) == \
        ["comp_x.mha", "comp_y.mha", "comp_z.mha"]
    fc = ca.Field3D(ca.MEM_HOST)
    io.LoadFieldComponents(fc, str(tmp_path / "comp"))
    assert np.array_equal(field_array(fc), fa)
    common.SaveITKImage(im, str(tmp_path / "s.mhd"))
    sb = ca.Image3D(ca.MEM_HOST)
    io.LoadImage(sb, str(tmp_path / "s.mhd"))
    assert np.array_equal(sb.asnp(), a)
    u8 = sitk.GetImageFromArray(np.arange(24, dtype=np.uint8).reshape(2, 3, 4))
    sitk.WriteImage(u8, str(tmp_path / "u8.nrrd"))
    assert io.ReadHeader(ca.GridInfo(), str(tmp_path / "u8.nrrd")) == io.UCHAR
    assert leftovers(tmp_path) == []


@itk_only
def test_itkfileio_errors_leave_target(tmp_path):
    io = ca._ITKFileIO
    im, a = rand_image((3, 4, 5))
    target = common.ImFromNPArr(np.ones((2, 2, 2), np.float32))
    bad = tmp_path / "bad.nii"
    bad.write_bytes(b"\0" * 100)
    trunc = str(tmp_path / "t.nii")
    io.SaveImage(im, trunc)
    _truncate(trunc, lambda n: n - 8)
    for fn, what in ((str(tmp_path / "missing.nii"), "no such file"), (str(bad), "ITK File Reader Exception"),
                     (trunc, "truncated NIfTI"), (str(tmp_path), "directory")):
        with pytest.raises(OSError, match=what) as e:
            io.LoadImage(target, fn)
        assert str(e.value).startswith("PyCAException : From ")  # the bare what() text
        assert tuple(target.size()) == (2, 2, 2) and np.all(target.asnp() == 1)
    f, _ = rand_field((2, 2, 2))
    io.SaveField(f, str(tmp_path / "v.mha"))
    with pytest.raises(OSError, match="3 components"):
        io.LoadImage(target, str(tmp_path / "v.mha"))
    with pytest.raises(OSError, match="ITK File Writer Exception"):
        io.SaveImage(im, str(tmp_path / "x.unknownext"))
    with pytest.raises(OSError, match="folder does not exist"):
        io.SaveImage(im, str(tmp_path / "no" / "x.nii"))
    assert leftovers(tmp_path) == []
