"""PyCA.Apps.tv_denoise ('primal_dual' and 'rof').

The reference is an independent NumPy implementation (float64) of the same
iterations with textbook operators: forward differences (zero across the far
border, divided by the spacing) and the divergence defined as their exact
negative adjoint. Denoising quality is checked on a piecewise-constant
phantom (PSNR up, energy down), and the two methods must approximately agree.
"""
import numpy as np
import pytest

import PyCA.Core as ca
from PyCA.Apps import tv_denoise, TVResult, ConfigError

from conftest import gpu_only, grid, image_from, to_np


# --------------------------------------------------------------------------- NumPy reference

def np_grad(u, sp):
    """Forward differences along each axis, 0 at the far border (3 arrays)."""
    out = []
    for ax in range(3):
        g = np.zeros_like(u)
        if u.shape[ax] > 1:
            d = np.diff(u, axis=ax) / sp[ax]
            sl = [slice(None)] * 3
            sl[ax] = slice(0, u.shape[ax] - 1)
            g[tuple(sl)] = d
        out.append(g)
    return out


def np_div(p, sp):
    """-grad^T p (exact negative adjoint of np_grad)."""
    d = np.zeros_like(p[0])
    for ax in range(3):
        n = p[ax].shape[ax]
        if n == 1:
            continue
        q = np.moveaxis(p[ax], ax, 0)
        r = np.zeros_like(q)
        r[0] = q[0]
        r[1:n - 1] = q[1:n - 1] - q[0:n - 2]
        r[n - 1] = -q[n - 2]
        d += np.moveaxis(r, 0, ax) / sp[ax]
    return d


def grad_norm2(shape, sp):
    return sum(4.0 / (h * h) for n, h in zip(shape, sp) if n > 1)


def np_energy(u, f, lam, sp, eps=0.0):
    g = np_grad(u, sp)
    tv = np.sqrt(sum(x ** 2 for x in g) + eps ** 2).sum()
    return (tv + 0.5 * lam * ((u - f) ** 2).sum()) * np.prod(sp)


def np_primal_dual(f, lam, iters, sp, theta=1.0):
    f = f.astype(np.float64)
    L = np.sqrt(grad_norm2(f.shape, sp))
    tau = sig = 1.0 / L
    u, ubar = f.copy(), f.copy()
    p = [np.zeros_like(f) for _ in range(3)]
    for _ in range(iters):
        g = np_grad(ubar, sp)
        p = [a + sig * b for a, b in zip(p, g)]
        nrm = np.maximum(1.0, np.sqrt(sum(a ** 2 for a in p)))
        p = [a / nrm for a in p]
        uold = u
        u = (u + tau * np_div(p, sp) + tau * lam * f) / (1.0 + tau * lam)
        ubar = u + theta * (u - uold)
    return u


def np_rof(f, lam, iters, sp, eps):
    """Gradient descent on the smoothed ROF energy with dt = 1/Lipschitz."""
    f = f.astype(np.float64)
    dt = 1.0 / (grad_norm2(f.shape, sp) / eps + lam)
    u = f.copy()
    for _ in range(iters):
        g = np_grad(u, sp)
        m = np.sqrt(sum(x ** 2 for x in g) + eps ** 2)
        u = u + dt * (np_div([x / m for x in g], sp) - lam * (u - f))
    return u


# --------------------------------------------------------------------------- phantoms

def phantom(dim, n=48, noise=0.15, seed=0):
    sh = (n, n, 1) if dim == 2 else (n, n, n)
    clean = np.zeros(sh, np.float32)
    a, b = n // 4, 3 * n // 4
    if dim == 2:
        clean[a:b, a:b] = 1.0
        clean[n // 3:2 * n // 3, n // 8:n // 2] = 0.5
    else:
        clean[a:b, a:b, a:b] = 1.0
        clean[n // 3:2 * n // 3, n // 8:n // 2, n // 3:2 * n // 3] = 0.5
    rng = np.random.RandomState(seed)
    noisy = (clean + noise * rng.randn(*sh)).astype(np.float32)
    return clean, noisy


def psnr(a, clean):
    return 10 * np.log10(1.0 / np.mean((a - clean) ** 2))


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize('dim,n,sp', [(2, 48, (1.0, 1.0, 1.0)), (3, 20, (1.0, 1.0, 2.0))])
def test_primal_dual_matches_numpy(dim, n, sp):
    clean, noisy = phantom(dim, n)
    r = tv_denoise(image_from(noisy, grid(*noisy.shape, sp=sp)), 'primal_dual',
                   quiet=True, iters=60, lam=8.0)
    assert isinstance(r, TVResult) and r.method == 'primal_dual' and r.iterations == 60
    ref = np_primal_dual(noisy, 8.0, 60, sp)
    out = to_np(r.image)
    np.testing.assert_allclose(out, ref, atol=2e-4)
    assert r.energy[-1] == pytest.approx(np_energy(ref, noisy, 8.0, sp), rel=1e-4)


@pytest.mark.parametrize('dim,n,sp', [(2, 48, (1.0, 1.0, 1.0)), (3, 20, (1.0, 2.0, 1.0))])
def test_rof_matches_numpy(dim, n, sp):
    clean, noisy = phantom(dim, n)
    r = tv_denoise(image_from(noisy, grid(*noisy.shape, sp=sp)), 'rof',
                   quiet=True, iters=80, lam=8.0, eps=0.05)
    ref = np_rof(noisy, 8.0, 80, sp, 0.05)
    np.testing.assert_allclose(to_np(r.image), ref, atol=2e-4)
    assert r.energy[-1] == pytest.approx(np_energy(ref, noisy, 8.0, sp, eps=0.05), rel=1e-4)


@pytest.mark.parametrize('method', ['primal_dual', 'rof'])
@pytest.mark.parametrize('dim', [2, 3])
def test_denoises(method, dim):
    clean, noisy = phantom(dim, 48 if dim == 2 else 24)
    r = tv_denoise(image_from(noisy), method, quiet=True)
    out = to_np(r.image)
    assert psnr(out, clean) > psnr(noisy, clean) + 8.0
    e = np.asarray(r.energy)
    e0 = np_energy(noisy, noisy, r.config['lam'], (1, 1, 1))
    assert e[-1] < 0.7 * e0
    if method == 'rof':
        assert np.all(np.diff(e) <= 1e-7 * e[0])     # undone steps: never up
    else:
        assert e[-1] <= e.min() * (1 + 1e-4)           # converged to the lowest
    # the true TV energy of the result is below that of the noisy and of the clean image
    true_e = np_energy(out.astype(np.float64), noisy, r.config['lam'], (1, 1, 1))
    assert true_e < e0 and true_e < np_energy(clean, noisy, r.config['lam'], (1, 1, 1))


def test_methods_agree():
    clean, noisy = phantom(2, 48)
    im = image_from(noisy)
    pd = to_np(tv_denoise(im, 'primal_dual', quiet=True, iters=600).image)
    rof = to_np(tv_denoise(im, 'rof', quiet=True, iters=1500, eps=0.005).image)
    assert np.abs(pd - rof).mean() < 0.006
    assert abs(psnr(pd, clean) - psnr(rof, clean)) < 0.6
    # plateaus are recovered: the mean over each piece's interior
    for lo, hi, val in ((26, 34, 1.0), (2, 10, 0.0)):
        assert np.mean(pd[lo:hi, lo:hi]) == pytest.approx(val, abs=0.06)


def test_config_and_errors(tmp_path, capfd):
    clean, noisy = phantom(2, 32)
    im = image_from(noisy)
    r = tv_denoise(im, config={'iters': 7, 'lam': 4.0}, quiet=True)
    assert r.iterations == 7 and r.config['lam'] == 4.0
    y = tmp_path / 'tv.yaml'
    y.write_text("iters: 5\neps: 0.02\n")
    r = tv_denoise(im, 'rof', config=str(y), quiet=True, iters=3)
    assert r.iterations == 3 and r.config['eps'] == 0.02
    with pytest.raises(ConfigError):
        tv_denoise(im, quiet=True, itres=3)
    with pytest.raises(ConfigError):
        tv_denoise(im, 'median', quiet=True)
    with pytest.raises(ConfigError):
        tv_denoise(im, quiet=True, lam=0)
    with pytest.raises(TypeError):
        tv_denoise(noisy, quiet=True)
    capfd.readouterr()
    tv_denoise(im, quiet=True, iters=3)
    tv_denoise(im, 'rof', quiet=True, iters=3)
    out, err = capfd.readouterr()
    assert out == '' and err == ''
    tv_denoise(im, quiet=False, iters=3)
    assert 'tv' in capfd.readouterr().err
    np.testing.assert_array_equal(to_np(im), noisy)        # input untouched


@gpu_only
@pytest.mark.parametrize('method', ['primal_dual', 'rof'])
def test_gpu_and_pinned(method):
    clean, noisy = phantom(3, 24)
    c = to_np(tv_denoise(image_from(noisy), method, quiet=True, iters=50).image)
    p = tv_denoise(image_from(noisy, mem=ca.MEM_HOST_PINNED), method, quiet=True, iters=50)
    assert p.device == 'cpu'
    np.testing.assert_array_equal(to_np(p.image), c)
    g = tv_denoise(image_from(noisy, mem=ca.MEM_DEVICE), method, quiet=True, iters=50)
    assert g.device == 'gpu' and g.image.memType() == ca.MEM_DEVICE
    np.testing.assert_allclose(to_np(g.image), c, atol=1e-3)
