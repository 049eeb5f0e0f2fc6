"""Total-variation denoising (the legacy ``Examples/PrimalDualTV.py`` and
``Examples/ROFTV.py``) on PyCA.Core, in 2-D (size z == 1) or 3-D.

Both methods minimise the ROF energy of the image ``u`` given the noisy ``f``::

    E(u) = TV(u) + lam/2 ||u - f||^2,     TV(u) = sum |grad u|

(sums times the voxel volume), with ``grad`` the forward differences of
``GradFor`` (zero across the far border, physical units) and ``div`` its exact
negative adjoint (``DivBack`` with BC_WRAP: the dual field's component normal to
the far border is always zero, so the wrap adds nothing there).

'primal_dual' (Chambolle-Pock, the legacy PrimalDualTV)::

    p    = P(p + sigma grad ubar)         GradFor; Add_MulC_I; ReprojectToUnitVec
    u'   = (u + tau div p + tau lam f) / (1 + tau lam)
                                          DivBack; Add_MulC_I; MulC_I
    ubar = u' + theta (u' - u)            MulC_Add_MulC

with ``tau = sigma = 1/||grad||`` by default (``||grad||^2 <= 4 sum 1/sp^2``).

'rof' (gradient descent on the smoothed energy, the legacy ROFTV)::

    E_eps(u) = sum sqrt(|grad u|^2 + eps^2) + lam/2 ||u - f||^2
    u' = u + dt (div(grad u / |grad u|_eps) - lam (u - f))

with ``dt = 1 / (||grad||^2/eps + lam)`` by default (the Lipschitz bound); a
step that raises E_eps is undone and ``dt`` halved. Its energy list is
E_eps (for eps -> 0 it is E).
"""
import math
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List, Optional, Union

import PyCA.Core as ca

from ._common import merge_config, compute_mem_type, Progress, Timer, ConfigError

__all__ = ['DEFAULTS', 'TVResult', 'tv_denoise', 'METHODS']

METHODS = ('primal_dual', 'rof')

#: Parameters of :func:`tv_denoise` and their defaults (also the keys a
#: config dict / YAML file may hold). ``tau``, ``sigma`` are used by
#: 'primal_dual', ``eps``, ``step`` by 'rof'; 0 means automatic.
DEFAULTS = {
    'lam': 8.0,         # data weight lambda (larger: closer to the input)
    'iters': 300,       # iterations
    'tau': 0.0,         # primal step (0: 1/||grad||)
    'sigma': 0.0,       # dual step (0: 1/||grad||)
    'theta': 1.0,       # over-relaxation
    'eps': 0.01,        # 'rof': smoothing of |grad u| (intensity / length units)
    'step': 0.0,        # 'rof': time step (0: 1/(||grad||^2/eps + lam))
    'device': 'auto',   # 'auto' (memory type of the image), 'cpu' or 'gpu'
}


@dataclass
class TVResult:
    """What :func:`tv_denoise` returns.

    Attributes:
        image (Image3D): the denoised image (compute memory type).
        energy (list of float): the energy per iteration (after that
            iteration's update): E for 'primal_dual', E_eps for 'rof'.
        iterations (int): the number of iterations run.
        seconds (float): wall-clock time.
        method (str): 'primal_dual' or 'rof'.
        device (str): where it ran, 'cpu' or 'gpu'.
        config (dict): the merged configuration it ran with.
    """
    image: Any
    energy: List[float]
    iterations: int = 0
    seconds: float = 0.0
    method: str = 'primal_dual'
    device: str = 'cpu'
    config: Dict[str, Any] = dc_field(default_factory=dict)

    @property
    def seconds_per_iter(self):
        """float: seconds per iteration (0.0 without iterations)."""
        return self.seconds / self.iterations if self.iterations else 0.0


def grad_norm2(grid):
    """An upper bound of ||grad||^2 for forward differences on ``grid``.

    Args:
        grid (GridInfo): the grid (size, spacing, origin).

    Returns:
        float: the sum over the axes of size > 1 of 4 / spacing^2.
    """
    s = 0.0
    for n, h in zip(grid.size().tolist(), grid.spacing().tolist()):
        if n > 1:
            s += 4.0 / (h * h)
    return s


def tv_denoise(image: ca.Image3D, method: str = 'primal_dual',
               config: Optional[Union[Dict[str, Any], str]] = None, quiet: bool = False,
               **params: Any) -> TVResult:
    """TV denoising of ``image`` (an Image3D on any memory type, 2-D or 3-D).

    ``method``: 'primal_dual' (Chambolle-Pock) or 'rof' (gradient descent on
    the smoothed energy). Parameters (``DEFAULTS``; from ``config`` -- a dict
    or a YAML file -- then keyword overrides): ``lam``, ``iters``, ``tau``,
    ``sigma``, ``theta`` ('primal_dual'), ``eps``, ``step`` ('rof'),
    ``device``. Returns a :class:`TVResult`.

    Raises TypeError if ``image`` is not an Image3D, ConfigError for an unknown
    method or parameter.

    Args:
        image (Image3D): the noisy image; any memory type, 2-D or 3-D.
        method (str): 'primal_dual' (Chambolle-Pock, default) or 'rof' (gradient descent on the
            smoothed energy).
        config (dict or str, optional): parameters as a dict or the path of a YAML file; default
            None (``DEFAULTS``).
        quiet (bool): no progress bar; default False.
        **params: keyword overrides of any ``DEFAULTS`` key (applied after ``config``).
    """
    if not isinstance(image, ca.Image3D):
        raise TypeError("tv_denoise: image must be an Image3D, got %s" % type(image).__name__)
    if image.nVox() == 0:
        raise ValueError("tv_denoise: image is empty")
    m = str(method).lower().replace('-', '_')
    if m in ('pd', 'primaldual'):
        m = 'primal_dual'
    if m not in METHODS:
        raise ConfigError("method must be one of %s, got %r" % (', '.join(METHODS), method))
    cfg = merge_config(DEFAULTS, config, params)
    if not cfg['lam'] > 0:
        raise ConfigError("lam must be > 0, got %r" % cfg['lam'])
    if cfg['iters'] < 0:
        raise ConfigError("iters must be >= 0, got %r" % cfg['iters'])
    for key in ('tau', 'sigma', 'step'):
        if cfg[key] < 0:
            raise ConfigError("%s must be >= 0 (0 = automatic), got %r" % (key, cfg[key]))
    if m == 'rof' and not cfg['eps'] > 0:
        raise ConfigError("eps must be > 0, got %r" % cfg['eps'])
    mType = compute_mem_type(cfg['device'], image)
    timer = Timer()
    grid = image.grid().copy()
    f = ca.Image3D(grid, mType)
    ca.Copy(f, image)
    run = _primal_dual if m == 'primal_dual' else _rof
    with Progress(cfg['iters'], 'tv ' + m, quiet) as bar:
        u, energy = run(f, cfg, mType, bar)
    return TVResult(image=u, energy=energy, iterations=len(energy), seconds=timer(), method=m,
                    device='gpu' if mType == ca.MEM_DEVICE else 'cpu', config=cfg)


def _energy(u, f, lam, g, mag, r, vol):
    """E(u) = (sum |grad u| + lam/2 ||u - f||^2) * vol, using ``g``, ``mag``,
    ``r`` as scratch."""
    ca.GradFor(g, u, ca.BC_CLAMP)
    ca.Magnitude(mag, g)
    ca.Sub(r, u, f)
    return (ca.Sum(mag) + 0.5 * lam * ca.Sum2(r)) * vol


def _primal_dual(f, cfg, mType, bar):
    grid = f.grid()
    lam, theta = float(cfg['lam']), float(cfg['theta'])
    L = math.sqrt(grad_norm2(grid)) or 1.0
    tau = float(cfg['tau']) or 1.0 / L
    sig = float(cfg['sigma']) or 1.0 / L
    vol = grid.voxelVol()
    u, uold, ubar, d, mag = (ca.Image3D(grid, mType) for _ in range(5))
    p, g = ca.Field3D(grid, mType), ca.Field3D(grid, mType)
    ca.Copy(u, f)
    ca.Copy(ubar, f)
    ca.SetMem(p, 0.0)
    energy = []
    for _ in range(cfg['iters']):
        ca.GradFor(g, ubar, ca.BC_CLAMP)
        ca.Add_MulC_I(p, g, sig)
        ca.ReprojectToUnitVec(p)
        ca.DivBack(d, p, ca.BC_WRAP)
        ca.Copy(uold, u)
        ca.Add_MulC_I(u, d, tau)
        ca.Add_MulC_I(u, f, tau * lam)
        ca.MulC_I(u, 1.0 / (1.0 + tau * lam))
        ca.MulC_Add_MulC(ubar, u, 1.0 + theta, uold, -theta)
        e = _energy(u, f, lam, g, mag, d, vol)
        energy.append(e)
        bar.update(e)
    return u, energy


def _rof(f, cfg, mType, bar):
    grid = f.grid()
    lam, eps = float(cfg['lam']), float(cfg['eps'])
    dt = float(cfg['step']) or 1.0 / (grad_norm2(grid) / eps + lam)
    vol = grid.voxelVol()
    u, uprev, d, mag, r = (ca.Image3D(grid, mType) for _ in range(5))
    g = ca.Field3D(grid, mType)
    ca.Copy(u, f)

    def evaluate():
        """E_eps(u); leaves grad u / |grad u|_eps in g and u - f in r."""
        ca.GradFor(g, u, ca.BC_CLAMP)
        ca.SqrMagnitude(mag, g)
        ca.AddC_I(mag, eps * eps)
        ca.Sqrt_I(mag)
        ca.Sub(r, u, f)
        e = (ca.Sum(mag) + 0.5 * lam * ca.Sum2(r)) * vol
        ca.Div_I(g, mag)
        return e

    energy = []
    e_prev = evaluate()
    for _ in range(cfg['iters']):
        ca.DivBack(d, g, ca.BC_WRAP)
        ca.Copy(uprev, u)
        ca.Add_MulC_I(u, d, dt)
        ca.Add_MulC_I(u, r, -dt * lam)
        e = evaluate()
        if e > e_prev:                  # too long a step: undo it, halve dt
            u.swap(uprev)
            dt *= 0.5
            e = evaluate()
        e_prev = e
        energy.append(e)
        bar.update(e)
    return u, energy
