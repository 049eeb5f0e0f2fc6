"""Small-deformation elastic registration with PyCA.Apps.elastic_register.

    python Examples/elastic_registration.py [--size 64] [--iters 30] [--gpu] [--out DIR]

Elastic registration optimises a displacement u (a V-field, physical units)
so that moving(x + u(x)) matches fixed(x), regularised by 1/2 <Lu, u> with
L = -alpha lap - beta grad div + gamma: the legacy ``ElastReg.py`` and, with
``scales=[1]``, ``ElastRegSingleScale.py``. The pair is synthetic: an
ellipse and the same ellipse shifted and slightly rotated. The script runs
the single-scale and the multiscale variants and prints the energy (image
and regularisation terms), then ``energy decreased: <first> -> <last>``.
"""
import argparse
import os
import sys

import numpy as np

import PyCA.Core as ca
import PyCA.Common as common
import PyCA.Apps as apps


def ellipse(n, cx, cy, rx, ry, angle=0.0):
    x, y = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float), indexing='ij')
    c, s = np.cos(angle), np.sin(angle)
    u, v = c * (x - cx) + s * (y - cy), -s * (x - cx) + c * (y - cy)
    return 0.5 * (1.0 - np.tanh((np.hypot(u / rx, v / ry) - 1.0) * min(rx, ry) / 2.0))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--size', type=int, default=64, help='image size (default 64)')
    p.add_argument('--iters', type=int, default=30, help='iterations per scale (default 30)')
    p.add_argument('--gpu', action='store_true', help="compute on the GPU (device='gpu')")
    p.add_argument('--out', help='folder for elastic_registration.png')
    a = p.parse_args(argv)

    if a.gpu and not apps.gpu_available():
        print("no CUDA device available: run without --gpu")
        return 1
    n = a.size
    c = (n - 1) / 2.0
    fixed = common.ImFromNPArr(ellipse(n, c, c, 0.30 * n, 0.20 * n))
    moving = common.ImFromNPArr(ellipse(n, c + 0.05 * n, c - 0.03 * n, 0.30 * n, 0.20 * n, 0.2))
    device = 'gpu' if a.gpu else 'cpu'

    ok = True
    for scales in ([1], [4, 2, 1]):
        r = apps.elastic_register(fixed, moving, scales=scales, iters=a.iters, device=device,
                                  quiet=True)
        print("elastic, scales %s: %d iterations, %.3f s; energy %.4f -> %.4f "
              "(image %.4f, reg %.4f)"
              % (scales, r.iterations, r.seconds, r.energy[0], r.energy[-1],
                 r.energy_terms['image'][-1], r.energy_terms['reg'][-1]))
        ok = ok and r.energy[-1] < r.energy[0]

    # r.h = x + u / spacing is an H-field; the displacement itself:
    u = ca.Field3D(r.h.grid(), r.h.memType())
    ca.HtoV(u, r.h)
    jac = ca.Image3D(r.h.grid(), r.h.memType())
    ca.JacDetH(jac, r.h)
    print("largest displacement component %.2f mm, min Jacobian determinant %.3f"
          % (ca.LInf(u), ca.Min(jac)))
    print(("energy decreased: %.4f -> %.4f" if ok else "energy did NOT decrease: %.4f -> %.4f")
          % (r.energy[0], r.energy[-1]))

    if a.out:
        import matplotlib.pyplot as plt
        import PyCA.Display as display
        os.makedirs(a.out, exist_ok=True)
        deformed = ca.Image3D(fixed.grid(), ca.MEM_HOST)
        ca.Copy(deformed, r.deformed)
        fig, axs = plt.subplots(1, 4, figsize=(13, 3.4))
        for ax, im, t in zip(axs, (moving, fixed, deformed), ('moving', 'fixed', 'deformed moving')):
            display.DispImage(im, title=t, newFig=False, ax=ax)
        display.GridPlot(r.h, every=max(n // 16, 1), isVF=False, ax=axs[2])
        axs[3].semilogy(r.energy)
        axs[3].set_title('energy per iteration')
        fname = os.path.join(a.out, 'elastic_registration.png')
        fig.savefig(fname, dpi=80, bbox_inches='tight')
        plt.close(fig)
        print("wrote", fname)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
