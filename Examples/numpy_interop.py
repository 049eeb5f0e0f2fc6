"""PyCA and NumPy: zero-copy views, copies, and DLPack.

    python Examples/numpy_interop.py

Images are stored x fastest (index x + X*(y + Y*z)); NumPy sees them as
float32 arrays of shape (X, Y, Z) in Fortran order, so ``arr[x, y, z]`` is
voxel (x, y, z). Each step below checks itself and prints one line; the
script ends with ``numpy interop: all checks passed``.
"""
import sys

import numpy as np

import PyCA.Core as ca
import PyCA.Common as common


def main():
    grid = ca.GridInfo(ca.Vec3Di(6, 5, 4), ca.Vec3Df(1.0, 1.0, 2.0), ca.Vec3Df(0.0, 0.0, 0.0))
    im = ca.Image3D(grid, ca.MEM_HOST)

    # 1. asnp(): a view of the image's memory, no copy. Writes go both ways.
    a = im.asnp()
    print("asnp view:", a.shape, a.dtype, "Fortran order" if a.flags.f_contiguous else "C order")
    a[...] = np.arange(a.size, dtype=np.float32).reshape(a.shape, order='F')
    assert im.get(1, 0, 0) == 1.0 and im.get(0, 1, 0) == 6.0   # x is fastest
    ca.MulC_I(im, 2.0)                                           # a PyCA operator ...
    assert a[1, 0, 0] == 2.0                                     # ... seen through the view
    print("asnp view shares memory: Sum(im) = %g = a.sum() = %g" % (ca.Sum(im), a.sum()))

    # The view keeps the buffer alive, even after the image is gone.
    del im
    assert a[1, 0, 0] == 2.0

    # 2. Copies: ImFromNPArr (array -> new image), AsNPCopy (image -> new array).
    arr2d = np.random.default_rng(0).random((32, 24)).astype(np.float32)
    im2 = common.ImFromNPArr(arr2d, sp=(0.5, 0.5, 1.0))      # a 2-D array becomes 32 x 24 x 1
    print("ImFromNPArr:", im2.size().tolist(), "spacing", im2.spacing().tolist())
    c = common.AsNPCopy(im2)
    c[0, 0, 0] = -1.0                                         # a copy: the image is unchanged
    assert im2.get(0, 0, 0) == arr2d[0, 0]
    print("AsNPCopy is a copy:", c.shape)

    # Fields: three components, each its own (X, Y, Z) view.
    f = ca.Field3D(im2.grid(), ca.MEM_HOST)
    ca.SetToIdentity(f)                       # an H-field: h(x) = x in voxel coordinates
    fx, fy, fz = f.asnp()
    assert fx[3, 7, 0] == 3.0 and fy[3, 7, 0] == 7.0
    F = common.AsNPCopy(f)                    # X x Y x Z x 3 (float64, as in the legacy)
    print("field views:", fx.shape, "; AsNPCopy(field):", F.shape, F.dtype)
    g = common.FieldFromNPArr(F[..., :2])     # X x Y x 2 -> z component 0
    assert not g.z_asnp().any() and g.x_asnp()[3, 7, 0] == 3.0

    # 3. DLPack: the standard exchange protocol; NumPy consumes and produces it.
    v = np.from_dlpack(im2)                   # same memory as im2.asnp()
    assert np.shares_memory(v, im2.asnp())
    src = np.asfortranarray(np.ones((16, 8, 2), dtype=np.float32))   # x fastest
    im3 = ca.Image3D.FromDLPack(src)          # wraps src: no copy
    src[0, 0, 0] = 5.0
    assert im3.get(0, 0, 0) == 5.0
    print("FromDLPack wraps without a copy:", im3.size().tolist(), "Sum", ca.Sum(im3))
    im4 = common.ImFromDLPack(np.ones((16, 8), np.float64), sp=(2.0, 2.0, 1.0))  # float64 -> copied
    print("ImFromDLPack of a float64 C array copies:", im4.size().tolist(), im4.spacing().tolist())
    try:
        ca.Image3D.FromDLPack(np.ones((4, 4), np.float64), copy=False)
    except BufferError:
        print("copy=False refuses a layout it would have to copy (BufferError)")
    else:
        raise SystemExit("copy=False should have raised BufferError")

    print("numpy interop: all checks passed")
    return 0


if __name__ == '__main__':
    sys.exit(main())
