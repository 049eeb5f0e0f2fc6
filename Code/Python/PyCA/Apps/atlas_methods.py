"""The atlas methods of PyCA.Apps.atlas: one object per method does an
atlas iteration (see atlas.py's module notes for the algorithms).

:class:`AtlasMethod` holds what every method shares: this rank's subjects,
their warm starts (``state``: what a checkpoint saves), the per-subject
results of the last iteration (``h``, ``deformed``), the per-iteration
numbers (``energy``, ``seconds_per_iter``, ...), and the iteration itself
(:meth:`AtlasMethod.iterate`: register every local subject to the atlas
with its warm start, sum the energies over the ranks, update the atlas).
A method supplies its registration of one subject, its atlas update and
the deformations reported when no iteration ran:

* :class:`GreedyAtlas`: ``greedy_register(fixed=A_k, moving=I_i)`` warm
  started from h_i; the atlas is the (optionally Jacobian-weighted) mean of
  the deformed subjects.
* :class:`LddmmAtlas`: ``lddmm_register(fixed=I_i, moving=A_k)`` warm started
  from m_i; the least-squares atlas of the image terms by conjugate
  gradients through ``ApplyH``/``Splat``, then centred along the mean
  momentum.

:data:`ATLAS_METHODS` maps the names ``build_atlas`` takes to the classes;
a new method is one class here.
"""
import numpy as np

import PyCA.Core as ca
from PyCA.Parallel import Sum64

from . import greedy, lddmm
from ._common import ConfigError, kernel_of, merge_config
from .checkpoints import copy_to, on_host

__all__ = ['AtlasMethod', 'GreedyAtlas', 'LddmmAtlas', 'ATLAS_METHODS', 'atlas_method',
           'ATLAS_REGISTER_METRIC', 'ATLAS_LDDMM_NSTEPS', 'ATLAS_LDDMM_INVERSE_ITERS']

#: the similarity metric of the subjects' registrations unless ``register``
#: names one: SSD, the metric the atlas update minimises (the mean of the
#: deformed subjects, the least-squares LDDMM atlas), so that the atlas
#: energy falls; ``register={'metric': 'lncc'}`` (``--metric``) for subjects
#: of different scanners
ATLAS_REGISTER_METRIC = 'ssd'

#: LDDMM subjects' time steps unless ``register`` names them: 4, not
#: lddmm_register's 2. The atlas averages the subjects' initial momenta and
#: shoots the mean (the centring), which needs the momenta to be the initial
#: velocities of resolved geodesics; a pairwise registration needs only the
#: end point (2 steps register the demo pairs as well, in 60 % of the time),
#: but with 2 steps the mean momentum of the known-warps test stopped
#: falling monotonically.
ATLAS_LDDMM_NSTEPS = 4

#: LDDMM subjects' fixed-point iterations of the inverse per time step unless
#: ``register`` names them: 2 (UpdateInverse), not lddmm_register's 1 (the
#: one-gather step phi^-1 o (Id - dt v)). The centring deforms the atlas by
#: the inverse of the mean geodesic, so the inverse must follow the forward
#: map closely: on the known-warps test the mean momentum fell to 4.0 % of its
#: first value in 4 iterations with 1, to 1.2 % with 2 (before the one-gather
#: step, UpdateInverse's single iteration: 2.6 %).
ATLAS_LDDMM_INVERSE_ITERS = 2


def _knorm(kernel, m, tmp, vol):
    """||m||_V = sqrt(<m, K m> voxelVol)."""
    kernel.applyInverseOperator(tmp, m)
    return float(np.sqrt(max(ca.Dot(m, tmp) * vol, 0.0)))


class AtlasMethod:
    """One atlas method: the registrations of this rank's subjects to the
    atlas and the atlas update, one atlas iteration per :meth:`iterate`.

    Args:
        ctx (PyCA.Parallel.RankContext): the ranks.
        subjects (dict of int to Image3D): this rank's subjects (compute memory type).
        local (list of int): their indices, in the order they are handled.
        grid (GridInfo): the atlas grid.
        mType (MemoryType): the compute memory type.
        n (int): the number of subjects over all ranks.
        cfg (dict): the atlas's merged parameters (atlas.DEFAULTS).
        reg_cfg (dict): the registrations' parameters of atlas iteration 0
            (:meth:`registration_config`, with the device).
        warm_cfg (dict): the warm-started registrations' parameters.
        state (dict of int to Field3D, optional): warm starts read from a
            checkpoint; default None (none).
        history (dict, optional): a checkpoint's state.json (its per-iteration
            numbers are continued); default None.

    Attributes:
        state (dict of int to Field3D): each local subject's warm start
            (greedy h_i, LDDMM m_i): what a checkpoint saves.
        h (dict of int to Field3D): each local subject's H-field (atlas grid
            -> subject voxels) of the last iteration.
        deformed (dict of int to Image3D): each local subject in atlas space,
            last iteration.
        energy (list of float): per iteration, the sum of the subjects' energies (all ranks).
        seconds_per_iter (list of float): wall time per iteration (appended by the caller).
        mean_momentum_norm (list of float): LDDMM, per iteration (atlas.py's notes).
        momentum_norm (list of float): LDDMM, per iteration.
    """

    #: the name ``build_atlas`` takes
    name = ''
    #: the registration module (its ``DEFAULTS`` and ``<name>_register``)
    module = None
    #: registration parameters the atlas sets unless ``register`` names them
    #: (after ``metric``: :data:`ATLAS_REGISTER_METRIC`)
    register_defaults = {}

    def __init__(self, ctx, subjects, local, grid, mType, n, cfg, reg_cfg, warm_cfg, state=None, history=None):
        self.ctx = ctx
        self.subj = subjects
        self.local = list(local)
        self.grid = grid
        self.mType = mType
        self.n = n
        self.cfg = cfg
        self.reg_cfg = reg_cfg
        self.warm_cfg = warm_cfg
        self.vol = grid.voxelVol()
        self.state = dict(state or {})
        self.h, self.deformed = {}, {}
        js = history or {}
        self.energy = [float(e) for e in js.get('energies', [])]
        self.seconds_per_iter = [float(s) for s in js.get('seconds_per_iter', [])]
        self.mean_momentum_norm = [float(s) for s in js.get('mean_momentum_norm', [])]
        self.momentum_norm = [float(s) for s in js.get('momentum_norm', [])]
        self.tmpi = ca.Image3D(grid, mType)
        self.num = Sum64(ctx, self.tmpi)

    @classmethod
    def registration_config(cls, reg_params):
        """The registrations' parameters: ``reg_params`` over the atlas's
        own defaults (:data:`ATLAS_REGISTER_METRIC`, :attr:`register_defaults`)
        over the method's DEFAULTS.

        Args:
            reg_params (dict or None): the ``register`` parameters given.

        Returns:
            dict: the merged parameters.

        Raises:
            ConfigError: an unknown or bad registration parameter.
        """
        params = dict(reg_params or {})
        params.setdefault('metric', ATLAS_REGISTER_METRIC)
        for k, v in cls.register_defaults.items():
            params.setdefault(k, v)
        return merge_config(cls.module.DEFAULTS, params)

    # ---- one atlas iteration ---------------------------------------------
    def iterate(self, atlas, k):
        """Atlas iteration ``k``: registers every local subject to ``atlas``
        (iteration 0 without warm starts: the full schedule; else warm
        started), then updates ``atlas`` in place and records the energy.

        Args:
            atlas (Image3D): the atlas A_k, replaced by A_{k+1}.
            k (int): the atlas iteration.

        Returns:
            float: the energy of the iteration (summed over all ranks).
        """
        cfg_k = self.reg_cfg if (k == 0 and not self.state) else self.warm_cfg
        e_loc = 0.0
        for i in self.local:
            e_loc += self.register(i, atlas, cfg_k)
        e = self.ctx.sumf(e_loc)
        self.update_atlas(atlas)
        self.energy.append(e)
        return e

    def register(self, i, atlas, cfg):
        """Registers subject ``i`` and the atlas (warm started from
        ``state[i]``), sets ``state[i]``, ``h[i]``, ``deformed[i]``.

        Args:
            i (int): the subject.
            atlas (Image3D): the current atlas.
            cfg (dict): the registration's parameters.

        Returns:
            float: the subject's energy.
        """
        raise NotImplementedError

    def update_atlas(self, atlas):
        """Replaces ``atlas`` by the update of the iteration's registrations
        (collective: every rank calls it).

        Args:
            atlas (Image3D): the atlas, in place.
        """
        raise NotImplementedError

    def deform_subjects(self):
        """Sets ``h`` and ``deformed`` from the warm starts, for a call in
        which no iteration ran (none at all, or resumed at the end): the
        subjects' deformations against the final atlas."""
        raise NotImplementedError

    # ---- what is reported ------------------------------------------------
    def history(self):
        """The per-iteration numbers a checkpoint keeps besides the energy.

        Returns:
            dict: seconds_per_iter, mean_momentum_norm, momentum_norm.
        """
        return dict(seconds_per_iter=self.seconds_per_iter, mean_momentum_norm=self.mean_momentum_norm,
                    momentum_norm=self.momentum_norm)

    def progress(self):
        """The numbers the progress bar shows besides the energy.

        Returns:
            dict: name -> value.
        """
        return {}

    def momentum(self):
        """The local subjects' initial momenta (LDDMM), else empty.

        Returns:
            dict of int to Field3D.
        """
        return {}

    def momentum_ratio(self):
        """Per iteration, ||mean m0|| / mean ||m0|| (LDDMM), else None.

        Returns:
            list of float or None.
        """
        return None

    def summary(self):
        """The method's entries of atlas_summary.json.

        Returns:
            dict.
        """
        return {}


class GreedyAtlas(AtlasMethod):
    """The greedy atlas: each subject registered onto the atlas by
    ``greedy_register(fixed=A_k, moving=I_i)`` warm started from h_i; the
    atlas is the mean of the deformed subjects, weighted by ``|D h_i|``
    with ``jacobian_weighted``; the energy is ``sum_i Sum2(A_k - D_i) *
    voxelVol``. Arguments: :class:`AtlasMethod`.

    Args:
        ctx (PyCA.Parallel.RankContext): the ranks.
        subjects (dict of int to Image3D): this rank's subjects.
        local (list of int): their indices.
        grid (GridInfo): the atlas grid.
        mType (MemoryType): the compute memory type.
        n (int): the number of subjects.
        cfg (dict): the atlas's parameters.
        reg_cfg (dict): the registrations' parameters of iteration 0.
        warm_cfg (dict): the warm-started registrations' parameters.
        state (dict of int to Field3D, optional): warm starts h_i from a checkpoint.
        history (dict, optional): a checkpoint's state.json.
    """

    name = 'greedy'
    module = greedy
    #: the legacy greedy fluid (no displacement smoothing, undone steps, steps of 0.5 voxel):
    #: its warm-started registrations then never raise a subject's mismatch, so the atlas's
    #: energy falls monotonically (the registration's defaults smooth the field and keep
    #: every step)
    register_defaults = {'field_sigma': 0.0, 'max_step': 0.5}

    def __init__(self, ctx, subjects, local, grid, mType, n, cfg, reg_cfg, warm_cfg, state=None, history=None):
        super().__init__(ctx, subjects, local, grid, mType, n, cfg, reg_cfg, warm_cfg, state, history)
        weighted = cfg['jacobian_weighted']
        self.den = Sum64(ctx, self.tmpi) if weighted else None
        self.w = ca.Image3D(grid, mType) if weighted else None

    def register(self, i, atlas, cfg):
        """:meth:`AtlasMethod.register` by greedy_register (h_i: atlas grid
        -> subject voxels).

        Args:
            i (int): the subject.
            atlas (Image3D): the current atlas.
            cfg (dict): the registration's parameters.

        Returns:
            float: ``Sum2(A_k - D_i) * voxelVol``.
        """
        res = self.module.greedy_register(atlas, self.subj[i], config=cfg, quiet=True,
                                          init_h=self.state.get(i), compute_inverse=False)
        ca.Sub(self.tmpi, atlas, res.deformed)
        e = ca.Sum2(self.tmpi) * self.vol
        self.state[i] = res.h
        self.h[i], self.deformed[i] = res.h, res.deformed
        return e

    def update_atlas(self, atlas):
        """A_{k+1} = sum_i w_i D_i / sum_i w_i (w_i = 1, or ``|D h_i|`` with
        ``jacobian_weighted``).

        Args:
            atlas (Image3D): the atlas, in place.
        """
        num, den = self.num, self.den
        num.zero()
        if den is not None:
            den.zero()
        for i in self.local:
            if den is not None:
                ca.JacDetHVoxel(self.w, self.h[i])
                ca.Mul(self.tmpi, self.deformed[i], self.w)
                num.add(self.tmpi)
                den.add(self.w)
            else:
                num.add(self.deformed[i])
        total = num.allreduce()
        if den is not None:
            num.store(atlas, total / np.maximum(den.allreduce(), 1e-6))
        else:
            num.store(atlas, total / self.n)

    def deform_subjects(self):
        """Each subject deformed by its h_i (the identity without one)."""
        for i in self.local:
            hh = self.state.get(i)
            if hh is None:
                hh = ca.Field3D(self.grid, self.mType)
                ca.SetToIdentity(hh)
            dfm = ca.Image3D(self.grid, self.mType)
            ca.ApplyH(dfm, self.subj[i], hh)
            self.h[i], self.deformed[i] = hh, dfm


class LddmmAtlas(AtlasMethod):
    """The LDDMM atlas: the atlas is the source of the geodesics,
    ``lddmm_register(fixed=I_i, moving=A_k)`` warm started from m_i; the
    atlas update solves the least-squares problem of the image terms by
    Jacobi-preconditioned conjugate gradients (``atlas_cg_iters``; 0: the
    one-step splat ratio), then, with ``center``, shoots the mean momentum
    from the new atlas, deforms the atlas by the inverse of its end point
    and subtracts it from every warm start. The energy is the sum of the
    subjects' final LDDMM energies.

    Args:
        ctx (PyCA.Parallel.RankContext): the ranks.
        subjects (dict of int to Image3D): this rank's subjects.
        local (list of int): their indices.
        grid (GridInfo): the atlas grid.
        mType (MemoryType): the compute memory type.
        n (int): the number of subjects.
        cfg (dict): the atlas's parameters.
        reg_cfg (dict): the registrations' parameters of iteration 0.
        warm_cfg (dict): the warm-started registrations' parameters.
        state (dict of int to Field3D, optional): warm starts m_i from a checkpoint.
        history (dict, optional): a checkpoint's state.json.
    """

    name = 'lddmm'
    module = lddmm
    # (gain 'off': the atlas minimises the subjects' summed energy, warm starting and
    # averaging their momenta; lddmm_register's final gain fits the image term alone and
    # would raise each subject's energy between atlas iterations)
    # (the kernel and iterations of lddmm_register before its lpow-3 default: the atlas's
    # warm-started heavy-ball descent was tuned and measured with them)
    register_defaults = {'nsteps': ATLAS_LDDMM_NSTEPS, 'inverse_iters': ATLAS_LDDMM_INVERSE_ITERS,
                         'lbfgs': 0, 'gain': 'off', 'lpow': 2, 'alpha': 200.0, 'iters': [40, 40, 15]}

    def __init__(self, ctx, subjects, local, grid, mType, n, cfg, reg_cfg, warm_cfg, state=None, history=None):
        super().__init__(ctx, subjects, local, grid, mType, n, cfg, reg_cfg, warm_cfg, state, history)
        self.phinv, self.momenta = {}, {}
        self.sden = Sum64(ctx, self.tmpi)
        self.ones = ca.Image3D(grid, mType)
        self.w = ca.Image3D(grid, mType)
        self.mbar = ca.Field3D(grid, mType)
        self.msum = Sum64(ctx, self.mbar)
        self.tmpf = ca.Field3D(grid, mType)
        self.kernel = kernel_of(grid, mType, reg_cfg)

    def _shooter(self):
        return self.module.Shooter.from_config(self.grid, self.mType, self.kernel, self.reg_cfg)

    def register(self, i, atlas, cfg):
        """:meth:`AtlasMethod.register` by lddmm_register from the atlas to
        the subject (h_i = phi_i: atlas grid -> subject voxels; m_i its
        initial momentum).

        Args:
            i (int): the subject.
            atlas (Image3D): the current atlas.
            cfg (dict): the registration's parameters.

        Returns:
            float: the registration's final energy.
        """
        res = self.module.lddmm_register(self.subj[i], atlas, config=cfg, quiet=True,
                                         init_momentum=self.state.get(i))
        h = res.hinv                         # phi_i: atlas grid -> subject voxels
        self.phinv[i] = res.h                # phi_i^-1: subject grid -> atlas voxels
        dfm = ca.Image3D(self.grid, self.mType)
        ca.ApplyH(dfm, self.subj[i], h)
        e = res.energy[-1] if res.energy else 0.0
        self.state[i] = res.momentum
        self.momenta[i] = copy_to(res.momentum, self.mType)
        self.h[i], self.deformed[i] = h, dfm
        return e

    def _apply_normal(self, x):
        """sum_i W_i^T W_i x over all subjects (W_i x = ApplyH(x, phi_i^-1))."""
        num = self.num
        num.store(self.tmpi, x)
        num.zero()
        for i in self.local:
            ca.ApplyH(self.w, self.tmpi, self.phinv[i])
            ca.Splat(self.ones, self.phinv[i], self.w, False)
            num.add(self.ones)
        return num.allreduce().copy()

    def _cg_atlas(self, x0, b, D, reached, iters):
        """Jacobi-preconditioned conjugate gradients on (sum W_i^T W_i) A =
        sum W_i^T I_i from the previous atlas: every iterate lowers the
        image terms (for the momenta of this iteration), so the atlas update
        never raises them."""
        x = x0.copy()
        Dinv = np.where(reached, 1.0 / np.where(reached, D, 1.0), 0.0)
        r = b - self._apply_normal(x)
        r[~reached] = 0.0
        z = Dinv * r
        p = z.copy()
        rz = float(np.vdot(r, z))
        for _ in range(iters):
            if not rz > 0.0:
                break
            q = self._apply_normal(p)
            pq = float(np.vdot(p, q))
            if not pq > 0.0:
                break
            a = rz / pq
            x += a * p
            r -= a * q
            r[~reached] = 0.0
            z = Dinv * r
            rz_new = float(np.vdot(r, z))
            p = z + (rz_new / rz) * p
            rz = rz_new
        return x

    def update_atlas(self, atlas):
        """The least-squares atlas of the image terms, then the centring
        (``center``); records mean_momentum_norm and momentum_norm.

        Args:
            atlas (Image3D): the atlas, in place.
        """
        num, sden = self.num, self.sden
        num.zero()
        # the discrete least-squares atlas of the image terms:
        # sum_i Splat(I_i, phi_i^-1) / sum_i Splat(1, phi_i^-1)
        ca.SetMem(self.ones, 1.0)
        sden.zero()
        for i in self.local:
            ca.Splat(self.tmpi, self.phinv[i], self.subj[i], False)
            num.add(self.tmpi)
            ca.Splat(self.w, self.phinv[i], self.ones, False)
            sden.add(self.w)
        total, wsum = num.allreduce().copy(), sden.allreduce().copy()
        prev = np.array(on_host(atlas).asnp(), np.float64)
        reached = wsum > 1e-3
        cg_iters = int(self.cfg['atlas_cg_iters'])
        if cg_iters <= 0:
            num.store(atlas, np.where(reached, total / np.where(reached, wsum, 1.0), prev))
        else:
            num.store(atlas, self._cg_atlas(prev, total, wsum, reached, cg_iters))
        self._center(atlas)

    def _center(self, atlas):
        """Shoots the mean momentum from ``atlas`` and deforms it by the
        inverse of the end point (``center``); the norms of the iteration."""
        msum, mbar = self.msum, self.mbar
        msum.zero()
        nrm = 0.0
        for i in self.local:
            msum.add(self.state[i])
            nrm += _knorm(self.kernel, self.state[i], self.tmpf, self.vol)
        msum.store(mbar, msum.allreduce() / self.n)
        nrm = self.ctx.sumf(nrm) / self.n
        mb = _knorm(self.kernel, mbar, self.tmpf, self.vol)
        if self.cfg['center'] and mb > 0:
            sh = self._shooter()
            sh.shoot(mbar)
            ca.Copy(self.tmpi, atlas)
            ca.ApplyH(atlas, self.tmpi, sh.ginv[sh.T])
            for i in self.local:
                ca.Sub_I(self.state[i], mbar)
        self.mean_momentum_norm.append(mb)
        self.momentum_norm.append(nrm)

    def deform_subjects(self):
        """Each subject's geodesic from the atlas shot again from m_i (the
        identity and a zero momentum without one)."""
        for i in self.local:
            hh = ca.Field3D(self.grid, self.mType)
            ca.SetToIdentity(hh)
            dfm = ca.Image3D(self.grid, self.mType)
            ca.Copy(dfm, self.subj[i])
            if i in self.state:   # the subject's geodesic from the atlas, shot again
                sh = self._shooter()
                sh.shoot(self.state[i])
                ca.Copy(hh, sh.g[sh.T])
                ca.ApplyH(dfm, self.subj[i], hh)
            else:
                self.state[i] = ca.Field3D(self.grid, self.mType)
                ca.SetToZero(self.state[i])
            self.momenta[i] = self.state[i]
            self.h[i], self.deformed[i] = hh, dfm

    def progress(self):
        """The bar's ``mbar``: ||mean m0|| / mean ||m0|| of the last iteration.

        Returns:
            dict: {'mbar': ratio}, or {} when the mean norm is 0.
        """
        nrm = self.momentum_norm[-1]
        return {'mbar': self.mean_momentum_norm[-1] / nrm} if nrm else {}

    def momentum(self):
        """The local subjects' initial momenta m_i (of the last registrations).

        Returns:
            dict of int to Field3D.
        """
        return {i: self.momenta[i] for i in self.local}

    def momentum_ratio(self):
        """Per iteration, ||mean m0|| / mean ||m0|| (0 where the mean is 0);
        None before any iteration.

        Returns:
            list of float or None.
        """
        if not self.momentum_norm:
            return None
        return [a / b if b > 0 else 0.0 for a, b in zip(self.mean_momentum_norm, self.momentum_norm)]

    def summary(self):
        """The momentum norms and their ratio per iteration.

        Returns:
            dict: mean_momentum_norm, momentum_norm, mean_momentum_ratio.
        """
        return dict(mean_momentum_norm=list(self.mean_momentum_norm), momentum_norm=list(self.momentum_norm),
                    mean_momentum_ratio=self.momentum_ratio())


#: the atlas methods by name
ATLAS_METHODS = {cls.name: cls for cls in (GreedyAtlas, LddmmAtlas)}


def atlas_method(name):
    """The class of the atlas method ``name``.

    Args:
        name (str): 'greedy' or 'lddmm' (any case).

    Returns:
        type: a subclass of :class:`AtlasMethod`.

    Raises:
        ConfigError: an unknown method.
    """
    m = str(name).lower()
    if m not in ATLAS_METHODS:
        raise ConfigError("method must be one of %s, got %r" % (', '.join(ATLAS_METHODS), m))
    return ATLAS_METHODS[m]
