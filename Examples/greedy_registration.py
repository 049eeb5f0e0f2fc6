"""Greedy fluid registration written by hand, the way PyCA scripts always were.

This is the legacy ``GreedyReg.py`` loop in Python 3: a multiscale gradient
descent on the H-field h that deforms the moving image I0 onto the fixed
image I1,

    E(h) = || I0 o h - I1 ||^2,        h <- h o (Id + step * K[(I1 - I0 o h) grad(I0 o h)])

where K = L^-1 is the fluid kernel (``FluidKernelFFTCPU/GPU``). It shows the
pieces of every PyCA registration loop: the ThreadMemoryManager (scratch of
the resamplers and operators), ``MultiscaleManager`` and
``MultiscaleResamplerGauss*`` for the scales, and the per-iteration
operators ``ApplyH``, ``Sub``, ``Gradient``, ``Mul``,
``applyInverseOperator`` and ``ComposeHV``.

    python Examples/greedy_registration.py [--size 64] [--iters 30] [--scales 4,2,1] [--gpu] [--out DIR]

The data are synthetic: a disk (moving) and an ellipse (fixed).
It prints the energy at the start and end of each scale and, at the end,
``energy decreased: <first> -> <last>``.
"""
import argparse
import os
import sys

import numpy as np

import PyCA.Core as ca


def smooth_ellipse(n, rx, ry, width=1.5):
    """An n x n image: 1 inside the ellipse, 0 outside, with a soft edge."""
    x, y = np.meshgrid(np.arange(n) - (n - 1) / 2.0, np.arange(n) - (n - 1) / 2.0, indexing='ij')
    r = np.sqrt((x / rx) ** 2 + (y / ry) ** 2)
    return 0.5 * (1.0 - np.tanh((r - 1.0) * min(rx, ry) / width))


def image_from_array(arr, mType):
    """A 2-D array (X, Y) as an X x Y x 1 Image3D in memory ``mType``."""
    im = ca.Image3D(ca.GridInfo(ca.Vec3Di(arr.shape[0], arr.shape[1], 1)), ca.MEM_HOST)
    im.asnp()[:, :, 0] = arr
    im.toType(mType)   # no-op for MEM_HOST, a copy to the GPU for MEM_DEVICE
    return im


def greedy_reg(I0Orig, I1Orig, scales, nIters, step, fluidParams, verbose=True):
    """Registers I0Orig (moving) onto I1Orig (fixed); returns (h, Idef, energies)."""
    mType = I0Orig.memType()
    origGrid = I0Orig.grid()

    # Scratch for the resamplers and operators: a few pools of the full grid.
    ca.ThreadMemoryManager.init(origGrid, mType, 8)

    # Working variables, allocated once at full size; each scale only
    # changes their grid (setGrid keeps the memory).
    I0 = ca.Image3D(origGrid, mType)
    I1 = ca.Image3D(origGrid, mType)
    Idef = ca.Image3D(origGrid, mType)
    diff = ca.Image3D(origGrid, mType)
    h = ca.Field3D(origGrid, mType)
    gI = ca.Field3D(origGrid, mType)
    gU = ca.Field3D(origGrid, mType)
    scratchV = ca.Field3D(origGrid, mType)

    # The same code runs on the CPU and the GPU: only these classes differ.
    if mType == ca.MEM_DEVICE:
        diffOp = ca.FluidKernelFFTGPU()
        resampler = ca.MultiscaleResamplerGaussGPU(origGrid)
    else:
        diffOp = ca.FluidKernelFFTCPU()
        resampler = ca.MultiscaleResamplerGaussCPU(origGrid)
    diffOp.setAlpha(fluidParams[0])
    diffOp.setBeta(fluidParams[1])
    diffOp.setGamma(fluidParams[2])

    scaleManager = ca.MultiscaleManager(origGrid)
    for s in scales:
        scaleManager.addScaleLevel(s)   # kept sorted coarse to fine

    energies = []
    for level in range(scaleManager.nScale()):
        scaleManager.set(level)
        curGrid = scaleManager.getCurGrid()
        resampler.setScaleLevel(scaleManager)
        diffOp.setGrid(curGrid)
        for v in (I0, I1, Idef, diff, gI, gU, scratchV):
            v.setGrid(curGrid)
        # smoothed, downsampled images (a plain copy at the finest scale)
        resampler.downsampleImage(I0, I0Orig)
        resampler.downsampleImage(I1, I1Orig)
        if scaleManager.isFirstScale():
            h.setGrid(curGrid)
            ca.SetToIdentity(h)
        else:
            resampler.updateHField(h)   # upsample h to the new grid (voxel units)

        for it in range(nIters):
            ca.ApplyH(Idef, I0, h)          # Idef = I0 o h
            ca.Sub(diff, I1, Idef)          # diff = I1 - Idef
            ca.Gradient(gI, Idef)           # gI = grad Idef
            ca.Mul_I(gI, diff)              # gI *= diff (field times image)
            diffOp.applyInverseOperator(gU, gI)   # gU = K gI
            ca.MulC_I(gU, step)
            ca.ComposeHV(scratchV, h, gU)   # h <- h o (Id + gU / spacing)
            h.swap(scratchV)
            energies.append(ca.Sum2(diff) * curGrid.voxelVol() / origGrid.voxelVol())
            if verbose and it in (0, nIters - 1):
                print("scale %d (factor %d, %s) iter %3d  energy %.4f"
                      % (level, scaleManager.getScaleFactor(level),
                         'x'.join(str(c) for c in curGrid.size().tolist()), it, energies[-1]))
    ca.ApplyH(Idef, I0Orig, h)
    return h, Idef, energies


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--size', type=int, default=64, help='image size (default 64)')
    p.add_argument('--iters', type=int, default=30, help='iterations per scale (default 30)')
    p.add_argument('--scales', default='4,2,1', help='downsampling factors (default 4,2,1)')
    p.add_argument('--step', type=float, default=0.5, help='gradient step (default 0.5)')
    p.add_argument('--gpu', action='store_true', help='run on the GPU (MEM_DEVICE)')
    p.add_argument('--out', help='folder for greedy_registration.png')
    a = p.parse_args(argv)

    if a.gpu and ca.GetNumberOfCUDADevices() == 0:
        print("no CUDA device available (this build %s CUDA): use the CPU"
              % ('has' if ca.CudaCompiled() else 'has no'))
        return 1
    mType = ca.MEM_DEVICE if a.gpu else ca.MEM_HOST
    n = a.size
    moving = image_from_array(smooth_ellipse(n, 0.25 * n, 0.25 * n), mType)   # a disk
    fixed = image_from_array(smooth_ellipse(n, 0.34 * n, 0.18 * n), mType)    # an ellipse
    scales = [int(s) for s in a.scales.split(',')]

    print("greedy registration on %s, %dx%d, scales %s, %d iterations each"
          % (ca.MemTypeStr(mType), n, n, scales, a.iters))
    h, Idef, E = greedy_reg(moving, fixed, scales, a.iters, a.step, (1.0, 0.0, 0.01))

    jac = ca.Image3D(h.grid(), mType)
    ca.JacDetH(jac, h)
    print("min Jacobian determinant %.3f" % ca.Min(jac))
    print("energy decreased: %.4f -> %.4f" % (E[0], E[-1]) if E[-1] < E[0] else
          "energy did NOT decrease: %.4f -> %.4f" % (E[0], E[-1]))

    if a.out:
        import PyCA.Display as display
        import matplotlib.pyplot as plt
        os.makedirs(a.out, exist_ok=True)
        fig, axs = plt.subplots(1, 4, figsize=(13, 3.4))
        for ax, im, t in zip(axs, (moving, fixed, Idef), ('moving', 'fixed', 'deformed moving')):
            display.DispImage(im, title=t, newFig=False, ax=ax)
        display.GridPlot(h, every=max(n // 16, 1), isVF=False, ax=axs[2])
        axs[3].semilogy(E)
        axs[3].set_title('energy per iteration')
        fname = os.path.join(a.out, 'greedy_registration.png')
        fig.savefig(fname, dpi=80, bbox_inches='tight')
        plt.close(fig)
        print("wrote", fname)
    ca.ThreadMemoryManager.destroy()
    return 0 if E[-1] < E[0] else 1


if __name__ == '__main__':
    sys.exit(main())
