"""PyCA and PyTorch exchange images without copies, through DLPack.

    python Examples/torch_zero_copy.py [--gpu]

Without PyTorch the script says so and exits 0 (pip install torch). An
Image3D exports a float32 tensor of shape (X, Y, Z) with strides
(1, X, X*Y) (x fastest); a tensor with that layout is wrapped by
``Image3D.FromDLPack`` and the image keeps the tensor alive. With ``--gpu``
the same is done in GPU memory (MEM_DEVICE <-> a CUDA tensor). Ends with
``torch zero-copy: all checks passed``.
"""
import argparse
import sys

import PyCA.Core as ca


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--gpu', action='store_true', help='exchange GPU memory (needs CUDA in both)')
    a = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed (pip install torch): nothing to show; exiting.")
        return 0
    if a.gpu and not (ca.GetNumberOfCUDADevices() > 0 and torch.cuda.is_available()):
        print("--gpu needs a CUDA device in both PyCA and PyTorch; exiting.")
        return 0
    mType, dev = (ca.MEM_DEVICE, 'cuda') if a.gpu else (ca.MEM_HOST, 'cpu')
    print("torch", torch.__version__, "on", dev)

    # PyCA -> torch: the tensor is a view of the image.
    grid = ca.GridInfo(ca.Vec3Di(32, 24, 8))
    im = ca.Image3D(grid, mType)
    ca.SetMem(im, 1.0)
    t = torch.from_dlpack(im)
    print("torch.from_dlpack(im):", tuple(t.shape), "strides", t.stride(), t.dtype, t.device)
    t[0, 0, 0] = 10.0                       # torch writes into the image ...
    assert abs(ca.Sum(im) - (grid.nVox() + 9.0)) < 1e-3
    ca.MulC_I(im, 2.0)                      # ... and PyCA writes into the tensor
    assert float(t[0, 0, 0]) == 20.0
    print("shared memory: Sum(im) = %g, t.sum() = %g" % (ca.Sum(im), float(t.sum())))

    # torch -> PyCA: a tensor laid out x fastest (a permuted contiguous one).
    X, Y, Z = 40, 30, 1
    u = torch.rand(Z, Y, X, device=dev).permute(2, 1, 0)       # shape (X, Y, Z), strides (1, X, X*Y)
    im2 = ca.Image3D.FromDLPack(u)
    u.mul_(0.0).add_(3.0)                   # no copy was made: PyCA sees the change
    print("Image3D.FromDLPack(tensor):", im2.size().tolist(), ca.MemTypeStr(im2.memType()),
          "Sum = %g" % ca.Sum(im2))
    assert abs(ca.Sum(im2) - 3.0 * X * Y * Z) < 1e-2

    # A tensor of another layout or dtype is copied (copy=False would raise BufferError).
    if dev == 'cpu':
        im3 = ca.Image3D.FromDLPack(torch.ones(X, Y, dtype=torch.float64))
        assert ca.Sum(im3) == X * Y
        print("a float64 C-ordered tensor is copied:", im3.size().tolist())

    # Fields: one component at a time (components are separate buffers).
    f = ca.Field3D(grid, mType)
    ca.SetToIdentity(f)
    fy = torch.from_dlpack(f.y_dlpack())
    assert float(fy[0, 5, 0]) == 5.0
    print("field component y as a tensor:", tuple(fy.shape))

    print("torch zero-copy: all checks passed")
    return 0


if __name__ == '__main__':
    sys.exit(main())
