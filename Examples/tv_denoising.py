"""Total-variation denoising with PyCA.Apps.tv_denoise, both methods.

    python Examples/tv_denoising.py [--size 96] [--noise 0.15] [--iters 150] [--gpu] [--out DIR]

A piecewise-constant 2-D image (rectangles and a disk) gets Gaussian noise;
``tv_denoise`` removes it by minimising TV(u) + lam/2 ||u - f||^2, with the
primal-dual algorithm (Chambolle-Pock, the legacy ``PrimalDualTV.py``) and
with gradient descent on the smoothed energy (the legacy ``ROFTV.py``). The
script prints the PSNR of the noisy and the denoised images and, per method,
``PSNR increased: <noisy> -> <denoised> dB``.
"""
import argparse
import os
import sys

import numpy as np

import PyCA.Common as common
import PyCA.Apps as apps


def phantom(n):
    """A piecewise-constant n x n image with values in [0, 1]."""
    x, y = np.meshgrid(np.arange(n), np.arange(n), indexing='ij')
    a = np.zeros((n, n), np.float32)
    a[n // 8:n // 2, n // 8:7 * n // 8] = 0.5
    a[5 * n // 8:7 * n // 8, n // 4:n // 2] = 1.0
    a[np.hypot(x - 0.7 * n, y - 0.7 * n) < 0.15 * n] = 0.8
    return a


def psnr(clean, im):
    """Peak signal-to-noise ratio in dB (peak 1) of the Image3D ``im``."""
    mse = float(np.mean((common.AsNPCopy(im)[..., 0] - clean) ** 2))
    return 10.0 * np.log10(1.0 / mse)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--size', type=int, default=96, help='image size (default 96)')
    p.add_argument('--noise', type=float, default=0.15, help='noise standard deviation (default 0.15)')
    p.add_argument('--iters', type=int, default=150, help='iterations (default 150)')
    p.add_argument('--gpu', action='store_true', help="compute on the GPU (device='gpu')")
    p.add_argument('--out', help='folder for tv_denoising.png')
    a = p.parse_args(argv)

    if a.gpu and not apps.gpu_available():
        print("no CUDA device available: run without --gpu")
        return 1
    clean = phantom(a.size)
    noisy = common.ImFromNPArr(clean)
    common.AddWhiteNoise(noisy, a.noise, seed=0)      # in place, reproducible
    p0 = psnr(clean, noisy)
    print("noisy image: PSNR %.2f dB (noise sigma %.2f)" % (p0, a.noise))

    ok, results = True, {}
    for method in ('primal_dual', 'rof'):
        r = apps.tv_denoise(noisy, method=method, iters=a.iters, lam=8.0,
                            device='gpu' if a.gpu else 'cpu', quiet=True)
        p1 = psnr(clean, r.image)
        results[method] = r
        print("%-11s %d iterations in %.3f s, energy %.3f -> %.3f, PSNR %.2f dB"
              % (method, r.iterations, r.seconds, r.energy[0], r.energy[-1], p1))
        print(("PSNR increased: %.2f -> %.2f dB (%s)" if p1 > p0 else
               "PSNR did NOT increase: %.2f -> %.2f dB (%s)") % (p0, p1, method))
        ok = ok and p1 > p0

    if a.out:
        import matplotlib.pyplot as plt
        import PyCA.Display as display
        os.makedirs(a.out, exist_ok=True)
        fig, axs = plt.subplots(1, 4, figsize=(13, 3.4))
        panels = [(clean, 'clean'), (noisy, 'noisy'), (results['primal_dual'].image, 'primal-dual'),
                  (results['rof'].image, 'ROF')]
        for ax, (im, t) in zip(axs, panels):
            display.DispImage(im, title=t, newFig=False, ax=ax, rng=(0.0, 1.0))
        fname = os.path.join(a.out, 'tv_denoising.png')
        fig.savefig(fname, dpi=80, bbox_inches='tight')
        plt.close(fig)
        print("wrote", fname)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
