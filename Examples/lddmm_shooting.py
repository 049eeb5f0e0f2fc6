"""LDDMM by geodesic shooting on a 2-D pair, with PyCA.Apps.lddmm_register.

    python Examples/lddmm_shooting.py [--size 64] [--iters 20] [--scales 2,1] [--gpu] [--out DIR]

The moving image is a disk, the fixed one the same disk pushed through a
known smooth deformation (a sinusoidal wave plus a shear). LDDMM finds the
initial momentum m0 whose geodesic deforms the moving image onto the fixed
one; the deformation is a diffeomorphism, so its Jacobian determinant stays
positive. The script prints the energy per scale, the minimum Jacobian
determinant and ``energy decreased: <first> -> <last>``.
"""
import argparse
import os
import sys

import numpy as np

import PyCA.Core as ca
import PyCA.Common as common
import PyCA.Apps as apps


def make_pair(n, mType):
    """(fixed, moving): a soft disk and the disk deformed by a known map."""
    x, y = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float), indexing='ij')
    c, r = (n - 1) / 2.0, 0.28 * n

    def disk(px, py):
        return 0.5 * (1.0 - np.tanh((np.hypot(px - c, py - c) - r) / 1.5))

    moving = disk(x, y)
    # fixed(x) = moving(phi(x)) with phi(x) = x + a smooth displacement (voxels)
    dx = 0.06 * n * np.sin(2 * np.pi * y / n)
    dy = 0.04 * n * np.sin(2 * np.pi * x / n)
    fixed = disk(x + dx, y + dy)
    return common.ImFromNPArr(fixed, mType), common.ImFromNPArr(moving, mType)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--size', type=int, default=64, help='image size (default 64)')
    p.add_argument('--iters', default='20', help='iterations per scale, e.g. 20 or 30,20 (default 20)')
    p.add_argument('--scales', default='2,1', help='downsampling factors (default 2,1)')
    p.add_argument('--gpu', action='store_true', help="compute on the GPU (device='gpu')")
    p.add_argument('--out', help='folder for lddmm_shooting.png')
    a = p.parse_args(argv)

    if a.gpu and not apps.gpu_available():
        print("no CUDA device available: run without --gpu")
        return 1
    fixed, moving = make_pair(a.size, ca.MEM_HOST)
    scales = [int(v) for v in a.scales.split(',')]
    iters = [int(v) for v in a.iters.split(',')]
    # parameters: the defaults of PyCA.Apps.lddmm.DEFAULTS, overridden by keywords
    r = apps.lddmm_register(fixed, moving, scales=scales, iters=iters, nsteps=8,
                            alpha=1.0, gamma=0.5, sigma=0.05,
                            device='gpu' if a.gpu else 'cpu', quiet=True)

    print("LDDMM on %s, %dx%d: %d iterations in %.2f s (%.1f ms each)"
          % (r.device, a.size, a.size, r.iterations, r.seconds, 1e3 * r.seconds_per_iter))
    for s in sorted(set(r.scale_of_iter), reverse=True):
        E = [e for e, f in zip(r.energy, r.scale_of_iter) if f == s]
        print("scale factor %d: energy %.4f -> %.4f (%d iterations)" % (s, E[0], E[-1], len(E)))
    print("final image term %.4f, regularisation term %.4f"
          % (r.energy_terms['image'][-1], r.energy_terms['reg'][-1]))
    deformed = ca.Image3D(fixed.grid(), ca.MEM_HOST)
    ca.Copy(deformed, r.deformed)                   # works from device memory too
    print("mismatch Sum2(fixed - image): %.3f before, %.3f after"
          % (ca.Sum2(fixed - moving), ca.Sum2(fixed - deformed)))

    h = r.h                                         # phi_1^-1: fixed grid -> moving voxels
    jac = ca.Image3D(h.grid(), h.memType())
    ca.JacDetH(jac, h)
    jmin, jmax = ca.MinMax(jac)
    print("min Jacobian determinant %.3f (max %.3f)" % (jmin, jmax))
    m = r.momentum
    print("initial momentum |m0|_max = %.4f" % ca.LInf(m))
    ok = r.energy[-1] < r.energy[0] and jmin > 0
    print(("energy decreased: %.4f -> %.4f" if r.energy[-1] < r.energy[0] else
           "energy did NOT decrease: %.4f -> %.4f") % (r.energy[0], r.energy[-1]))

    if a.out:
        import matplotlib.pyplot as plt
        import PyCA.Display as display
        os.makedirs(a.out, exist_ok=True)
        fig, axs = plt.subplots(1, 5, figsize=(18, 3.4))
        for ax, im, t in zip(axs, (moving, fixed, deformed), ('moving', 'fixed', 'deformed moving')):
            display.DispImage(im, title=t, newFig=False, ax=ax)
        display.GridPlot(h, every=max(a.size // 16, 1), isVF=False, ax=axs[2])
        display.JacDetPlot(h, title='Jacobian determinant', isVF=False, ax=axs[3])
        axs[4].semilogy(r.energy)
        axs[4].set_title('energy per iteration')
        fname = os.path.join(a.out, 'lddmm_shooting.png')
        fig.savefig(fname, dpi=80, bbox_inches='tight')
        plt.close(fig)
        print("wrote", fname)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
