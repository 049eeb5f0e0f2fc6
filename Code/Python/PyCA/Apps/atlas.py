"""Atlas (population template) building, in one process or over MPI ranks::

    result = build_atlas(images, method='greedy'|'lddmm', config=None, quiet=False,
                         comm=None, out=None, checkpoint_every=0, resume=False, **params)

    python -m PyCA.Apps.atlas --images <files or a glob> --out DIR [--method lddmm|greedy]
        [--iters N] [--device cpu|gpu|auto] [--checkpoint-every N] [--resume] [--quiet]
    mpiexec -n K python -m PyCA.Apps.atlas ...                (also ``pyca-atlas``)

Distribution. Every rank is given the full list of subjects and handles
``PyCA.Common.Distribute(n, size, rank)`` of them (it loads only those). The
image sums over subjects are accumulated per rank in float64 host buffers
(device data staged through a pinned host Image3D/Field3D) and summed over
the ranks by one Allreduce of that buffer (mpi4py, as PyCA.Parallel.Reduce
does for float32 objects); the numbers by ``PyCA.Parallel.ReduceFloat``.
Float64 sums rounded once to float32 make the atlas independent of the
number of ranks (float32 Reduce sums would not be: their order changes the
last bits, and one flipped step acceptance of a greedy registration later
gives a visibly different atlas). Every rank then holds the same atlas. On a GPU build with
several devices each rank takes ``SetCUDADevice(rank % n)``. Without MPI (no
mpi4py, or a single rank) the same code runs in one process.

Algorithm (``A_k`` the atlas of iteration k, ``I_i`` the subjects):

* ``A_0`` = the voxel-wise mean of the subjects.
* greedy: each subject is registered onto the atlas (``greedy_register(
  fixed=A_k, moving=I_i)``), giving ``h_i`` (atlas grid -> subject voxels)
  and ``D_i = I_i o h_i``; then ``A_{k+1} = sum_i w_i D_i / sum_i w_i`` with
  ``w_i = 1`` or, with ``jacobian_weighted``, ``w_i = |D h_i|`` (JacDetHVoxel: the
  volume ratio in voxel units, 1 for the identity on any spacing).
  The energy of iteration k is ``sum_i Sum2(A_k - D_i) * voxelVol`` after
  the registrations; with w_i = 1 it never increases from one iteration to the
  next (the mean minimises it for fixed h_i and each warm-started
  registration only accepts steps that lower it).
* lddmm: the atlas is the source of the geodesics: ``lddmm_register(
  fixed=I_i, moving=A_k)`` gives the initial momentum ``m_i`` at the atlas,
  ``phi_i`` (= result.hinv, atlas grid -> subject voxels) and ``phi_i^-1``
  (= result.h, subject grid -> atlas voxels), with ``A_k o phi_i^-1 ~ I_i``.
  The atlas update minimises the image terms ``sum_i ||W_i A - I_i||^2``
  over the atlas image A for the momenta just found, W_i A = ApplyH(A,
  phi_i^-1) = A o phi_i^-1 (trilinear interpolation) and W_i^T its adjoint,
  ``ca.Splat`` through phi_i^-1: ``atlas_cg_iters`` (default 10) iterations
  of conjugate gradients on the normal equations ``(sum_i W_i^T W_i) A =
  sum_i W_i^T I_i``, preconditioned by its row sums ``D = sum_i Splat(1,
  phi_i^-1)`` (the discrete Jacobian determinants of phi_i) and started from
  the previous atlas, so that every iterate lowers the image terms: the
  energy never rises from one atlas iteration to the next without the
  centring. ``atlas_cg_iters = 0`` takes the one-step ratio ``sum_i
  Splat(I_i, phi_i^-1) / D`` instead (the Jacobian-weighted mean of the
  subjects pulled back to the atlas, Joshi et al. 2004, through the adjoint;
  it blurs by interpolating twice and converges to a worse atlas). Atlas
  voxels no subject reaches keep their value; ``jacobian_weighted`` does not
  apply (the update is always weighted). Each CG iteration costs one
  ApplyH and one Splat per subject and one Allreduce of the image.
  Then, with ``center`` (default true), the atlas is centred: the mean
  momentum ``m_bar = sum_i m_i / N`` is shot from the new atlas
  (lddmm.Shooter, the registrations' kernel and time steps) and ``A_{k+1} =
  A o psi^-1`` with psi the end point of that geodesic (the Frechet-mean
  step), and each subject's warm start becomes ``m_i - m_bar`` (first-order
  transport to the moved atlas). ``mean_momentum_norm[k] = ||m_bar||_V =
  sqrt(<m_bar, K m_bar> voxelVol)`` of iteration k (the momenta of that
  iteration's registrations, before the centring), ``momentum_norm[k]`` the
  mean of the subjects' ``||m_i||_V``; their ratio tends to zero. Measured
  on the 2-D test (six antithetic smooth warps of one 40x40 image, 5
  iterations): ratio 0.63, 0.13, 0.023, 0.006, 0.005, energy 3052, 1636,
  1596, 1594, 1593, atlas 2.8 % from the true image (the plain mean 9.1 %);
  without the centring ratio 0.63 -> 0.19 and 3.0 %. On 8 warps of the MNI
  template at 4 mm with the LDDMM defaults: ratio 0.66, 0.29, 0.12, energy
  2.25e9, 7.9e8, 5.5e8, atlas 3.7 % from the template (the mean 5.9 %).
  The energy of iteration k is the sum of the subjects' final LDDMM
  energies.
* Warm starts: atlas iteration 0 runs the method's full multiscale schedule
  (``register`` parameters over the method's DEFAULTS); later iterations
  start every subject from its previous h_i / m_i (``init_h`` /
  ``init_momentum``) and run ``warm_iters`` iterations at full resolution.

Checkpoint and restart. With ``out`` and ``checkpoint_every=N``, after every
N-th atlas iteration (and after the last) rank 0 writes the atlas and every
rank its subjects' state (greedy h_i, lddmm m_i: float32 NIfTI, so a reload
is bitwise) in ``out/checkpoint/iter_K/``; after a barrier rank 0 replaces
``out/checkpoint/state.json`` (iteration, method, config, subjects, energies,
...), the commit point, and removes older ``iter_*`` folders. Every file is
written to a temporary name and moved into place (os.replace). ``resume=True``
reloads the state named by state.json and continues: the arithmetic is the
same as an uninterrupted run's, so the final atlas is the same (bitwise in
one process with the same thread count and FFT plans).

Failure. In a run over several ranks, an exception on any rank prints one
line ``pyca-atlas: error: rank R: ...`` on stderr and calls
``comm.Abort(1)``, so the job ends instead of the other ranks waiting in the
next Allreduce forever.

Outputs (``out``; rank 0 writes shared files, every rank its subjects'):
``atlas.nii.gz``, ``atlas_iter_K.nii.gz`` (K = 0 is the initial mean, K = k+1
the atlas after iteration k), ``deformations/<name>_hfield.nii.gz`` (the
H-field h_i: atlas grid -> subject voxel coordinates; LDDMM: phi_i^-1),
``deformations/<name>_deformed.nii.gz`` (the subject in atlas space),
``deformations/<name>_momentum.nii.gz`` (LDDMM m_i), ``atlas_summary.png`` and
``atlas_summary.json``. All or nothing (PyCA.Apps.staging): they are written
into ``out/.pyca-staging-*`` during the run (the per-iteration atlases
appear there as they are made) and moved into ``out`` when the run has
written them all; a run that fails (a full disk: OSError naming the file)
leaves ``out`` as it was, an earlier run's outputs included. The checkpoints
(``out/checkpoint``) are outside the stage: ``state.json`` is written only
after the files it names were written and verified.
"""
import argparse
import copy
import glob
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List

import numpy as np

import PyCA.Core as ca

from ._common import (ConfigError, Progress, compute_mem_type, ensure_thread_memory_manager,
                      gpu_available, kernel_of, merge_config, same_grid)

__all__ = ['DEFAULTS', 'AtlasResult', 'build_atlas', 'main', 'main_entry']

PROG = 'pyca-atlas'
METHODS = ('greedy', 'lddmm')

#: Parameters of :func:`build_atlas` (config dict / YAML keys; keyword overrides).
DEFAULTS = {
    'iters': 5,                 # atlas iterations
    'jacobian_weighted': False, # greedy: weight each deformed subject by |D h_i| (lddmm: always)
    'device': 'auto',           # 'cpu', 'gpu' or 'auto' (GPU memory in -> GPU, else CPU)
    'register': {},             # parameters of the registration method (its DEFAULTS' keys)
                                #   for atlas iteration 0 (the full multiscale schedule)
    'warm_iters': 10,           # iterations of each warm-started registration (later atlas
                                #   iterations, full resolution only)
    'center': True,             # lddmm: centre the atlas by shooting the mean momentum
    'atlas_cg_iters': 10,       # lddmm: conjugate-gradient iterations of the least-squares
                                #   atlas update (0: the one-step splat ratio)
    'normalize': True,          # subjects given as paths: intensities to [0, 1] (io.normalize_intensity)
    'bias_correct': False,      # subjects given as paths: N4 bias-field correction first (io.bias_correct)
    'match_histogram': False,   # subjects given as paths: histogram matched to subject 0's, after the
                                #   bias correction (io.match_histogram)
}


@dataclass
class AtlasResult:
    """What build_atlas returns (identical ``atlas`` on every rank).

    Attributes:
        method (str): 'greedy' or 'lddmm'.
        atlas (Image3D): the final atlas (compute memory type).
        mean (Image3D): the initial atlas (the plain mean of the subjects).
        energy (list of float): per atlas iteration, the sum over subjects of
            their final registration energies (all ranks).
        iterations (int): atlas iterations done (including resumed ones).
        seconds (float): wall time of this call.
        subjects (list of int): the subject indices this rank handled (Distribute).
        h (dict of int to Field3D): per local subject, the H-field (atlas grid
            -> subject voxels) of its registration in the last iteration
            (against the atlas that iteration started from).
        deformed (dict of int to Image3D): per local subject, the subject in
            atlas space, same iteration.
        momentum (dict of int to Field3D): per local subject, its initial
            momentum m_i for LDDMM (else empty), same iteration.
        seconds_per_iter (list of float): wall time per iteration (resumed
            iterations: as recorded in the checkpoint).
        mean_momentum_norm (list of float): LDDMM, per iteration (module notes).
        momentum_norm (list of float): LDDMM, per iteration (module notes).
        names (list of str): the subjects' names (file names or indices).
        ranks (int): the number of MPI ranks.
        rank (int): this rank.
        device (str): 'cpu' or 'gpu'.
        resumed_from (int): the checkpoint's iteration count the run resumed
            from (0: started afresh).
        config (dict): the merged configuration, with the registration's
            (``register``) and the warm-started iterations' (``warm``).
        files (dict): the paths of the outputs written to ``out`` (atlas,
            deformations, atlas_summary_png, atlas_summary_json, ...).
    """
    method: str
    atlas: Any
    mean: Any
    energy: List[float]
    iterations: int
    seconds: float
    subjects: List[int]
    h: Dict[int, Any] = dc_field(default_factory=dict)
    deformed: Dict[int, Any] = dc_field(default_factory=dict)
    momentum: Dict[int, Any] = dc_field(default_factory=dict)
    seconds_per_iter: List[float] = dc_field(default_factory=list)
    mean_momentum_norm: List[float] = dc_field(default_factory=list)
    momentum_norm: List[float] = dc_field(default_factory=list)
    names: List[str] = dc_field(default_factory=list)
    ranks: int = 1
    rank: int = 0
    device: str = 'cpu'
    resumed_from: int = 0
    config: Dict[str, Any] = dc_field(default_factory=dict)
    files: Dict[str, Any] = dc_field(default_factory=dict)


# --------------------------------------------------------------------------- communication

class _SerialComm:
    """The one-process stand-in for an mpi4py communicator."""

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def Barrier(self):
        pass

    def bcast(self, obj, root=0):
        return obj

    def allgather(self, obj):
        return [obj]

    def Abort(self, code=1):  # pragma: no cover
        os._exit(code)


def _world():
    """mpi4py's COMM_WORLD when mpi4py and an MPI library load, else a serial stand-in."""
    try:
        from mpi4py import MPI
        return MPI.COMM_WORLD
    except Exception:
        return _SerialComm()


class _Ctx:
    def __init__(self, comm):
        self.comm = comm
        self.rank = int(comm.Get_rank())
        self.size = int(comm.Get_size())

    def sumf(self, x):
        if self.size > 1:
            from PyCA.Parallel import ReduceFloat
            return ReduceFloat(x, comm=self.comm)
        return float(x)

    def barrier(self):
        if self.size > 1:
            self.comm.Barrier()

    def bcast(self, obj, root=0):
        return self.comm.bcast(obj, root=root) if self.size > 1 else obj

    def all_ok(self, ok):
        """True on every rank when ``ok`` is true on every rank."""
        if self.size == 1:
            return bool(ok)
        return all(self.comm.allgather(bool(ok)))


class _Sum64:
    """A float64 host accumulator of Image3Ds or Field3Ds, summed over the
    ranks by an Allreduce of its float64 buffer. Float64 sums rounded once to
    float32 do not depend on the order of the additions (in practice: bitwise
    the same atlas for any number of ranks); float32 sums would, and a
    last-bit difference can flip a step acceptance of a later registration
    (4e-3 relative after 3 iterations on a 40x40 test)."""

    def __init__(self, ctx, like):
        self.ctx = ctx
        self.field = isinstance(like, ca.Field3D)
        self.grid = like.grid()
        self.cls = ca.Field3D if self.field else ca.Image3D
        size = tuple(like.size())
        self.acc = np.zeros(((3,) if self.field else ()) + size, np.float64)
        self.stage = None

    def _host(self, obj):
        if obj.memType() != ca.MEM_DEVICE:
            return obj
        if self.stage is None:
            self.stage = self.cls(self.grid, ca.MEM_HOST_PINNED)
        ca.Copy(self.stage, obj)
        return self.stage

    def zero(self):
        self.acc[...] = 0.0

    def add(self, obj):
        h = self._host(obj)
        if self.field:
            for d, c in enumerate(h.asnp()):
                self.acc[d] += c
        else:
            self.acc += h.asnp()

    def allreduce(self):
        if self.ctx.size > 1:
            from PyCA.Parallel import GetMPI
            MPI = GetMPI()
            self.ctx.comm.Allreduce(MPI.IN_PLACE, self.acc, op=MPI.SUM)
        return self.acc

    def store(self, out, values):
        """out (any memory type) = values (float64 array), rounded to float32."""
        h = out if out.memType() != ca.MEM_DEVICE else None
        if h is None:
            if self.stage is None:
                self.stage = self.cls(self.grid, ca.MEM_HOST_PINNED)
            h = self.stage
        if self.field:
            for d, c in enumerate(h.asnp()):
                np.copyto(c, values[d], casting='unsafe')
        else:
            np.copyto(h.asnp(), values, casting='unsafe')
        if h is not out:
            ca.Copy(out, h)


def _abort_line(ctx, e):
    msg = ' '.join(str(e).split()) or type(e).__name__
    sys.stderr.write('%s: error: rank %d: %s: %s (stopping all %d ranks)\n'
                     % (PROG, ctx.rank, type(e).__name__, msg, ctx.size))
    sys.stderr.flush()


# --------------------------------------------------------------------------- helpers

def _new_like(obj, mType):
    return type(obj)(obj.grid(), mType) if type(obj) in (ca.Image3D, ca.Field3D) else \
        (ca.Image3D if isinstance(obj, ca.Image3D) else ca.Field3D)(obj.grid(), mType)


def _copy_to(obj, mType):
    out = (ca.Image3D if isinstance(obj, ca.Image3D) else ca.Field3D)(obj.grid(), mType)
    ca.Copy(out, obj)
    return out


def _host(obj):
    if obj.memType() == ca.MEM_DEVICE:
        return _copy_to(obj, ca.MEM_HOST)
    return obj


def _subject_name(item, i):
    if isinstance(item, (str, os.PathLike)):
        b = os.path.basename(os.fspath(item))
        for ext in ('.nii.gz', '.nii', '.mha', '.mhd', '.nrrd', '.nhdr', '.img', '.hdr', '.vtk'):
            if b.lower().endswith(ext):
                b = b[:-len(ext)]
                break
        return '%03d_%s' % (i, ''.join(c if c.isalnum() or c in '-_.' else '_' for c in b))
    return 'subject_%03d' % i


def _prepared_subject(item, i, bias_correct, reference=None):
    """Subject ``i`` read from the path ``item`` (host Image3D), N4
    bias-corrected with ``bias_correct``, its histogram matched to
    ``reference`` (an Image3D) when given; not normalised."""
    from .io import load_image, bias_correct as n4, match_histogram
    im = load_image(item, role='subject %d' % i)
    if bias_correct:
        im = n4(im)
    if reference is not None:
        im = match_histogram(im, reference)
    return im


def _load_subject(item, i, mType, normalize, bias_correct=False, reference=None):
    """Subject ``i`` in ``mType`` memory: an Image3D as given; a path read,
    prepared (``_prepared_subject``: ``bias_correct``, histogram matched to
    ``reference``) and normalised with ``normalize``."""
    if isinstance(item, ca.Image3D):
        return _copy_to(item, mType) if item.memType() != mType else item
    if isinstance(item, (str, os.PathLike)):
        from .io import normalize_intensity
        im = _prepared_subject(item, i, bias_correct, reference)
        if normalize:
            normalize_intensity(im)
        if mType == ca.MEM_HOST:
            return im
        from PyCA.Common import GetDirection, SetDirection
        out = _copy_to(im, mType)
        if GetDirection(im) is not None:
            SetDirection(out, GetDirection(im))
        return out
    raise TypeError("build_atlas: images must be Image3Ds or file paths, got %s for subject %d"
                    % (type(item).__name__, i))


def _grid_of(item):
    if isinstance(item, ca.Image3D):
        return item.grid()
    from PyCA.Common import ReadGrid
    return ReadGrid(os.fspath(item))


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


def _method_cfg(method, reg_params):
    mod = __import__('PyCA.Apps.' + method, fromlist=['DEFAULTS'])
    params = dict(reg_params or {})
    params.setdefault('metric', ATLAS_REGISTER_METRIC)
    if method == 'lddmm':
        params.setdefault('nsteps', ATLAS_LDDMM_NSTEPS)
        params.setdefault('inverse_iters', ATLAS_LDDMM_INVERSE_ITERS)
    return mod, merge_config(mod.DEFAULTS, params)


def _knorm(kernel, m, tmp, vol):
    kernel.applyInverseOperator(tmp, m)
    return float(np.sqrt(max(ca.Dot(m, tmp) * vol, 0.0)))


# --------------------------------------------------------------------------- checkpoints

def _ckpt_dir(out):
    return os.path.join(os.fspath(out), 'checkpoint')


def _state_name(idx):
    return 'subject_%05d_state.nii.gz' % idx


def _committed_folder(base):
    """The checkpoint folder state.json names (None: no valid state.json)."""
    try:
        with open(os.path.join(base, 'state.json')) as f:
            return json.load(f).get('folder')
    except (OSError, ValueError, AttributeError):
        return None


def _write_checkpoint(ctx, out, k_done, atlas, state, method, cfg, n, energy, extra, direction=None):
    from PyCA.Common import SaveITKImage, SaveITKField
    base = _ckpt_dir(out)
    d = os.path.join(base, 'iter_%04d' % k_done)
    if ctx.rank == 0:
        os.makedirs(d, exist_ok=True)
    ctx.barrier()
    os.makedirs(d, exist_ok=True)
    # Each save is verified before it is renamed into place (a short write
    # raises OSError), so state.json below -- the commit point -- names only
    # files that are complete. A failed checkpoint removes its own folder and
    # leaves the previous one, and the state.json naming it, as they were.
    try:
        for idx, f in state.items():
            SaveITKField(_host(f), os.path.join(d, _state_name(idx)), True, direction=direction)
        if ctx.rank == 0:
            SaveITKImage(_host(atlas), os.path.join(d, 'atlas.nii.gz'), True, direction=direction)
    except BaseException:
        if ctx.size == 1 and os.path.basename(d) != _committed_folder(base):
            shutil.rmtree(d, ignore_errors=True)
        raise
    ctx.barrier()                        # every rank's files are in place
    if ctx.rank == 0:
        js = dict(iteration=k_done, method=method, n_subjects=n, ranks=ctx.size, folder=os.path.basename(d),
                  energies=list(energy), config=_jsonable(cfg), **extra)
        _write_json(os.path.join(base, 'state.json'), js)
        for old in glob.glob(os.path.join(base, 'iter_*')):
            if os.path.abspath(old) != os.path.abspath(d):
                shutil.rmtree(old, ignore_errors=True)
    ctx.barrier()


def _read_checkpoint(out, method, n, cfg):
    p = os.path.join(_ckpt_dir(out), 'state.json')
    if not os.path.isfile(p):
        return None
    with open(p) as f:
        js = json.load(f)
    if js.get('method') != method or int(js.get('n_subjects', -1)) != n:
        raise ConfigError("the checkpoint in %s is of a %s atlas of %s subjects, not %s of %d"
                          % (_ckpt_dir(out), js.get('method'), js.get('n_subjects'), method, n))
    old = dict(js.get('config') or {})
    new = _jsonable(cfg)
    for k in ('register', 'warm_iters', 'jacobian_weighted', 'center', 'atlas_cg_iters'):
        if old.get(k) != new.get(k):
            raise ConfigError("the checkpoint in %s was made with %s=%r, this run has %r: "
                              "resume with the same parameters" % (_ckpt_dir(out), k, old.get(k), new.get(k)))
    js['_dir'] = os.path.join(_ckpt_dir(out), js['folder'])
    return js


# --------------------------------------------------------------------------- json / png

def _jsonable(v):
    from .outputs import _jsonable as j
    return j(v)


def _write_json(path, data):
    from PyCA.Common.PyCAIO import _atomic_json
    _atomic_json(path, _jsonable(data), 'build_atlas', indent=2, allow_nan=False)   # fsync + os.replace


def _draw_atlas_summary(path, atlas, mean, shown, energy, title, mnorm=None):
    """atlas (three planes) and the initial mean, a few subjects beside their
    deformed versions, and the energy curve."""
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from .outputs import _planes, _slice, _extent

    g = atlas.grid()
    planes = _planes(tuple(g.size()))
    A = np.array(_host(atlas).asnp(), np.float64)
    M = np.array(_host(mean).asnp(), np.float64)
    rows = [('atlas', A), ('initial mean', M)]
    for name, subj, dfm in shown:
        rows.append((name, np.array(_host(subj).asnp(), np.float64)))
        rows.append((name + ' deformed', np.array(_host(dfm).asnp(), np.float64)))
    vmin, vmax = float(np.percentile(A, 0.5)), float(np.percentile(A, 99.5))
    if not vmax > vmin:
        vmin, vmax = float(A.min()), float(A.max()) + 1e-6
    # columns: the images; rows: the planes (three in 3-D), then the energy curve
    ncol, nrow = len(rows), len(planes) + 1
    fig = Figure(figsize=(max(2.3 * ncol, 7.0), 2.4 * len(planes) + 2.6))
    FigureCanvasAgg(fig)
    gs = fig.add_gridspec(nrow, ncol, height_ratios=[1.0] * len(planes) + [1.1])
    for c, (name, a) in enumerate(rows):
        for r, (pname, axis, kk) in enumerate(planes):
            ax = fig.add_subplot(gs[r, c])
            ax.imshow(_slice(a, axis, kk), cmap='gray', origin='lower', vmin=vmin, vmax=vmax,
                      extent=_extent(g, axis), interpolation='nearest')
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(name, fontsize=9)
            if c == 0:
                ax.set_ylabel(pname, fontsize=9)
    ax = fig.add_subplot(gs[len(planes), :])
    if energy:
        it = np.arange(1, len(energy) + 1)
        ax.plot(it, energy, 'o-', color='C0', label='energy (sum over subjects)')
        ax.set_xlabel('atlas iteration')
        ax.set_ylabel('energy')
        ax.set_xticks(it)
        if mnorm:
            ax2 = ax.twinx()
            ax2.plot(it, mnorm, 's--', color='C1', label='|mean m0| / mean |m0|')
            ax2.set_ylabel('|mean m0| / mean |m0|', color='C1')
            if all(v > 0 for v in mnorm):
                ax2.set_yscale('log')
        ax.legend(loc='upper center', fontsize=8)
    ax.set_title('energy per atlas iteration', fontsize=9)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    from PyCA.Common.PyCAIO import _atomic_save
    _atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=80, format='png'), 'build_atlas',
                 itk_errors=False)   # temporary beside it, fsync, os.replace


def _make_stage(ctx, outdir, adopt=()):
    """The run's OutputStage: made by rank 0, its path broadcast to the others."""
    from .staging import OutputStage
    stage = OutputStage(outdir, adopt=adopt) if ctx.rank == 0 else None
    path = ctx.bcast(stage.dir if stage is not None else None)
    return stage if stage is not None else OutputStage(outdir, path=path, owner=False)


def _write_outputs(ctx, stage, res, subjects_local, extra, direction=None):
    """The final outputs (module notes) into ``stage``, committed by rank 0;
    returns the summary dict (rank 0) or {}."""
    # All or nothing (PyCA.Apps.staging): every rank writes into the stage
    # rank 0 made; rank 0 moves the files into place once all were written.
    try:
        summary = _write_staged_outputs(ctx, stage, res, subjects_local, extra, direction)
        if ctx.rank == 0:
            stage.commit()
    except BaseException:
        stage.abort()
        raise
    return summary


def _write_staged_outputs(ctx, stage, res, subjects_local, extra, direction):
    from PyCA.Common import SaveITKImage, SaveITKField
    files = {}
    for idx in res.subjects:
        nm = res.names[idx]
        sub = lambda kind: stage.path(os.path.join('deformations', nm + kind))   # noqa: E731
        SaveITKField(_host(res.h[idx]), sub('_hfield.nii.gz'), True, direction=direction)
        SaveITKImage(_host(res.deformed[idx]), sub('_deformed.nii.gz'), True, direction=direction)
        if idx in res.momentum:
            SaveITKField(_host(res.momentum[idx]), sub('_momentum.nii.gz'), True, direction=direction)
    ctx.barrier()
    if ctx.rank != 0:
        return {}
    files['atlas'] = stage.final('atlas.nii.gz')
    SaveITKImage(_host(res.atlas), stage.path('atlas.nii.gz'), True, direction=direction)
    files['deformations'] = stage.final('deformations')
    files['atlas_summary_png'] = stage.final('atlas_summary.png')
    files['atlas_summary_json'] = stage.final('atlas_summary.json')
    nshow = 3 if res.atlas.size().z == 1 else 2
    shown = [(res.names[i], subjects_local[i], res.deformed[i]) for i in res.subjects[:nshow]]
    ratio = None
    if res.method == 'lddmm' and res.momentum_norm:
        ratio = [a / b if b > 0 else 0.0 for a, b in zip(res.mean_momentum_norm, res.momentum_norm)]
    title = 'PyCA %s atlas: %d subjects, %d iterations, %d rank%s' % (
        res.method, len(res.names), res.iterations, res.ranks, '' if res.ranks == 1 else 's')
    _draw_atlas_summary(stage.path('atlas_summary.png'), res.atlas, res.mean, shown, res.energy, title, ratio)
    from .outputs import thread_count, _grid_dict
    summary = dict(method=res.method, subjects=list(res.names), n_subjects=len(res.names),
                   iterations=res.iterations, energies=list(res.energy),
                   seconds_per_iter=list(res.seconds_per_iter), total_seconds=res.seconds,
                   ranks=res.ranks, device=res.device, threads=thread_count(),
                   grid=_grid_dict(res.atlas.grid()), resumed_from=res.resumed_from,
                   config=res.config, files=files)
    if res.method == 'lddmm':
        summary['mean_momentum_norm'] = list(res.mean_momentum_norm)
        summary['momentum_norm'] = list(res.momentum_norm)
        summary['mean_momentum_ratio'] = ratio
    summary.update(extra or {})
    _write_json(stage.path('atlas_summary.json'), summary)
    return _jsonable(summary)


# --------------------------------------------------------------------------- the builder

def build_atlas(images, method='greedy', config=None, quiet=False, comm=None, out=None,
                checkpoint_every=0, resume=False, extra=None, **params):
    """Builds an atlas of ``images`` (a list of Image3Ds or file paths, all on
    one grid; every rank passes the full list and loads only its own
    subjects) by ``method`` ('greedy' or 'lddmm'); see the module notes for
    the algorithm, the checkpoints and the files written to ``out``.

    Parameters: ``DEFAULTS`` (``config`` -- dict or YAML path -- then keyword
    overrides); ``register`` holds the registration method's own parameters
    (its DEFAULTS; used as given for atlas iteration 0, and with
    ``scales=[1]``, ``iters=warm_iters`` for the warm-started ones). ``comm``:
    an mpi4py communicator (default COMM_WORLD when mpi4py loads, else one
    process). ``checkpoint_every`` N > 0 with ``out``: checkpoint every N
    iterations and after the last; ``resume``: continue from
    ``out/checkpoint`` (ConfigError if it was made by another method, number
    of subjects or registration parameters; no checkpoint: start afresh).
    ``extra``: entries added to atlas_summary.json.

    With several ranks an exception on any rank prints one line and calls
    ``comm.Abort(1)`` (the whole job stops rather than hangs); in one
    process it propagates. Returns an :class:`AtlasResult`.

    Args:
        images (list of Image3D or str): the subjects, all on one grid, or their file paths; every
            rank passes the full list.
        method (str): 'greedy' (default) or 'lddmm'.
        config (dict or str, optional): parameters as a dict or the path of a YAML file; default
            None (``DEFAULTS``).
        quiet (bool): no progress bar; default False.
        comm (mpi4py.MPI.Comm, optional): the communicator; default None = COMM_WORLD when mpi4py
            loads, else one process.
        out (str, optional): the output folder (module notes); default None writes nothing.
        checkpoint_every (int): with ``out``: checkpoint every N iterations and after the last;
            default 0 (none).
        resume (bool): continue from ``out/checkpoint`` when there is one; default False.
        extra (dict, optional): entries added to atlas_summary.json; default None.
        **params: keyword overrides of any ``DEFAULTS`` key (applied after ``config``).

    Returns:
        AtlasResult: the atlas and the per-iteration numbers.

    Raises:
        ConfigError: unknown or bad parameters, or a checkpoint of another run.
        TypeError or ValueError: images that are not Image3Ds or paths, or on different grids.
        OSError: an output that cannot be written.
    """
    t_start = time.perf_counter()
    method = str(method).lower()
    if method not in METHODS:
        raise ConfigError("method must be one of %s, got %r" % (', '.join(METHODS), method))
    cfg = merge_config(DEFAULTS, config, params)
    if cfg['iters'] < 0:
        raise ConfigError("iters must be >= 0, got %r" % cfg['iters'])
    if cfg['warm_iters'] < 1:
        raise ConfigError("warm_iters must be >= 1, got %r" % cfg['warm_iters'])
    if not isinstance(cfg['register'], dict):
        raise ConfigError("register must be a mapping of the %s parameters, got %r" % (method, cfg['register']))
    checkpoint_every = int(checkpoint_every or 0)
    if checkpoint_every < 0:
        raise ConfigError("checkpoint_every must be >= 0, got %r" % checkpoint_every)
    if (checkpoint_every or resume) and out is None:
        raise ConfigError("checkpoints need an output folder (out=)")
    images = list(images)
    n = len(images)
    if n < 1:
        raise ValueError("build_atlas: no images")
    reg_params = {k: v for k, v in cfg['register'].items() if str(k).replace('-', '_') != 'device'}
    mod, reg_cfg = _method_cfg(method, reg_params)          # ConfigError: a bad registration key
    warm_cfg = dict(reg_cfg, scales=[1], iters=[int(cfg['warm_iters'])])

    ctx = _Ctx(comm if comm is not None else _world())
    # the device (before any allocation): one GPU per rank where several exist
    first = images[0]
    mType = compute_mem_type(cfg['device'], first if isinstance(first, ca.Image3D) else None)
    if mType == ca.MEM_DEVICE:
        ndev = ca.GetNumberOfCUDADevices()
        if ndev > 1:
            ca.SetCUDADevice(ctx.rank % ndev)
    device = 'gpu' if mType == ca.MEM_DEVICE else 'cpu'
    reg_cfg['device'] = warm_cfg['device'] = device

    grid0 = _grid_of(first).copy()
    for i, item in enumerate(images[1:], 1):
        if not same_grid(grid0, _grid_of(item)):
            raise ValueError("build_atlas: subject %d is not on the grid of subject 0 (%s vs %s); "
                             "resample the subjects onto one grid first" % (i, _grid_of(item), grid0))
    names = [_subject_name(item, i) for i, item in enumerate(images)]
    from PyCA.Common import Distribute
    local = Distribute(n, ctx.size, ctx.rank)

    stage = None   # the outputs' staging folder (PyCA.Apps.staging), once there is one

    def fail(e):
        if stage is not None:
            # a failed run leaves no output; a resumable one (checkpoints)
            # leaves its stage for the resume to take its iteration atlases from
            stage.release() if checkpoint_every else stage.abort()
        if ctx.size > 1:
            _abort_line(ctx, e)
            ctx.comm.Abort(1)
        raise e

    try:
        # the histogram reference: subject 0 as read (and bias-corrected); every rank makes it
        ref = None
        if cfg['match_histogram'] and isinstance(images[0], (str, os.PathLike)):
            ref = _prepared_subject(images[0], 0, cfg['bias_correct'])
        subj = {i: _load_subject(images[i], i, mType, cfg['normalize'], cfg['bias_correct'],
                                 ref if i != 0 else None) for i in local}
        for i, im in subj.items():
            if tuple(im.size()) != tuple(grid0.size()):
                raise ValueError("build_atlas: subject %d has size %s, subject 0 %s"
                                 % (i, tuple(im.size()), tuple(grid0.size())))
        from PyCA.Common import GetDirection
        # the direction cosines of the outputs: those of the (first) subject
        direction = None
        for i in local:
            direction = GetDirection(images[i]) if isinstance(images[i], ca.Image3D) else GetDirection(subj[i])
            break
        ensure_thread_memory_manager(grid0, mType)
        grid = grid0
        vol = grid.voxelVol()
        # the initial atlas: the plain mean
        mean = ca.Image3D(grid, mType)
        num = _Sum64(ctx, mean)
        for i in local:
            num.add(subj[i])
        num.store(mean, num.allreduce() / n)
        atlas = ca.Image3D(grid, mType)
        ca.Copy(atlas, mean)

        state = {}                       # greedy: h_i; lddmm: m_i (the warm starts)
        energy, spi, mnorm, mrel = [], [], [], []
        k0 = 0
        if resume:
            js = _read_checkpoint(out, method, n, cfg)
            if js is not None:
                from PyCA.Common import LoadITKImage, LoadITKField
                k0 = int(js['iteration'])
                a = LoadITKImage(os.path.join(js['_dir'], 'atlas.nii.gz'))
                ca.Copy(atlas, a)
                for i in local:
                    f = LoadITKField(os.path.join(js['_dir'], _state_name(i)))
                    state[i] = _copy_to(f, mType)
                    state[i].setGrid(grid)
                energy = [float(e) for e in js.get('energies', [])]
                spi = [float(s) for s in js.get('seconds_per_iter', [])]
                mnorm = [float(s) for s in js.get('mean_momentum_norm', [])]
                mrel = [float(s) for s in js.get('momentum_norm', [])]
        resumed_from = k0
    except Exception as e:  # noqa: BLE001
        fail(e)

    outdir = os.fspath(out) if out is not None else None
    if outdir is not None:
        # every output of the run (the per-iteration atlases too) goes into a
        # staging folder, moved into place when all were written; the
        # checkpoints are outside it (they are what a resume reads)
        try:
            stage = _make_stage(ctx, outdir, ['atlas_iter_%d.nii.gz' % k for k in range(k0 + 1)])
            if k0 == 0 and ctx.rank == 0:
                from PyCA.Common import SaveITKImage
                SaveITKImage(_host(atlas), stage.path('atlas_iter_0.nii.gz'), True, direction=direction)
        except Exception as e:  # noqa: BLE001
            fail(e)

    iters = int(cfg['iters'])
    deformed, hfields, momenta, phinv = {}, {}, {}, {}
    den = _Sum64(ctx, atlas) if cfg['jacobian_weighted'] and method != 'lddmm' else None
    sden = _Sum64(ctx, atlas) if method == 'lddmm' else None
    ones = ca.Image3D(grid, mType) if method == 'lddmm' else None
    w = ca.Image3D(grid, mType) if cfg['jacobian_weighted'] or method == 'lddmm' else None
    tmpi = ca.Image3D(grid, mType)
    mbar = ca.Field3D(grid, mType) if method == 'lddmm' else None
    msum = _Sum64(ctx, mbar) if method == 'lddmm' else None
    tmpf = ca.Field3D(grid, mType) if method == 'lddmm' else None
    kernel = None
    if method == 'lddmm':
        kernel = kernel_of(grid, mType, reg_cfg)

    def register_all(k):
        """Registers the local subjects to ``atlas``; the local energy sum."""
        cfg_k = reg_cfg if (k == 0 and not state) else warm_cfg
        e_loc = 0.0
        for i in local:
            if method == 'greedy':
                res = mod.greedy_register(atlas, subj[i], config=cfg_k, quiet=True,
                                          init_h=state.get(i), compute_inverse=False)
                h = res.h
                dfm = res.deformed
                ca.Sub(tmpi, atlas, dfm)
                e_loc += ca.Sum2(tmpi) * vol
                state[i] = h
            else:
                res = mod.lddmm_register(subj[i], atlas, config=cfg_k, quiet=True,
                                         init_momentum=state.get(i))
                h = res.hinv                         # phi_i: atlas grid -> subject voxels
                phinv[i] = res.h                     # phi_i^-1: subject grid -> atlas voxels
                dfm = ca.Image3D(grid, mType)
                ca.ApplyH(dfm, subj[i], h)
                e_loc += res.energy[-1] if res.energy else 0.0
                state[i] = res.momentum
                momenta[i] = _copy_to(res.momentum, mType)
            hfields[i], deformed[i] = h, dfm
        return e_loc

    def apply_normal(x):
        """sum_i W_i^T W_i x over all subjects (W_i x = ApplyH(x, phi_i^-1))."""
        num.store(tmpi, x)
        num.zero()
        for i in local:
            ca.ApplyH(w, tmpi, phinv[i])
            ca.Splat(ones, phinv[i], w, False)
            num.add(ones)
        return num.allreduce().copy()

    def _cg_atlas(x0, b, D, reached, iters):
        """Jacobi-preconditioned conjugate gradients on (sum W_i^T W_i) A =
        sum W_i^T I_i from the previous atlas: every iterate lowers the
        image terms (for the momenta of this iteration), so the atlas update
        never raises them."""
        x = x0.copy()
        Dinv = np.where(reached, 1.0 / np.where(reached, D, 1.0), 0.0)
        r = b - apply_normal(x)
        r[~reached] = 0.0
        z = Dinv * r
        p = z.copy()
        rz = float(np.vdot(r, z))
        for _ in range(iters):
            if not rz > 0.0:
                break
            q = apply_normal(p)
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

    def update_atlas():
        num.zero()
        if den is not None:
            den.zero()
        if method == 'lddmm':
            # the discrete least-squares atlas of the image terms:
            # sum_i Splat(I_i, phi_i^-1) / sum_i Splat(1, phi_i^-1)
            ca.SetMem(ones, 1.0)
            sden.zero()
            for i in local:
                ca.Splat(tmpi, phinv[i], subj[i], False)
                num.add(tmpi)
                ca.Splat(w, phinv[i], ones, False)
                sden.add(w)
            total, wsum = num.allreduce().copy(), sden.allreduce().copy()
            prev = np.array(_host(atlas).asnp(), np.float64)
            reached = wsum > 1e-3
            if int(cfg['atlas_cg_iters']) <= 0:
                num.store(atlas, np.where(reached, total / np.where(reached, wsum, 1.0), prev))
            else:
                num.store(atlas, _cg_atlas(prev, total, wsum, reached, int(cfg['atlas_cg_iters'])))
        for i in (local if method != 'lddmm' else ()):
            if den is not None:
                ca.JacDetHVoxel(w, hfields[i])
                ca.Mul(tmpi, deformed[i], w)
                num.add(tmpi)
                den.add(w)
            else:
                num.add(deformed[i])
        if method != 'lddmm':
            total = num.allreduce()
            if den is not None:
                num.store(atlas, total / np.maximum(den.allreduce(), 1e-6))
            else:
                num.store(atlas, total / n)
            return None, None
        msum.zero()
        nrm = 0.0
        for i in local:
            msum.add(state[i])
            nrm += _knorm(kernel, state[i], tmpf, vol)
        msum.store(mbar, msum.allreduce() / n)
        nrm = ctx.sumf(nrm) / n
        mb = _knorm(kernel, mbar, tmpf, vol)
        if cfg['center'] and mb > 0:
            from .lddmm import Shooter
            sh = Shooter(grid, mType, kernel, reg_cfg['nsteps'], reg_cfg['integrator'], reg_cfg['sigma'],
                         reg_cfg['inverse_iters'], reg_cfg['adjoint'])
            sh.shoot(mbar)
            ca.Copy(tmpi, atlas)
            ca.ApplyH(atlas, tmpi, sh.ginv[sh.T])
            for i in local:
                ca.Sub_I(state[i], mbar)
        return mb, nrm

    with Progress(max(iters - k0, 0), '%s atlas' % method, quiet or ctx.rank != 0) as bar:
        for k in range(k0, iters):
            t0 = time.perf_counter()
            try:
                e = ctx.sumf(register_all(k))
                mb, nrm = update_atlas()
                energy.append(e)
                if mb is not None:
                    mnorm.append(mb)
                    mrel.append(nrm)
                spi.append(time.perf_counter() - t0)
                if outdir is not None and ctx.rank == 0:
                    from PyCA.Common import SaveITKImage
                    SaveITKImage(_host(atlas), stage.path('atlas_iter_%d.nii.gz' % (k + 1)), True, direction=direction)
                if outdir is not None and checkpoint_every and ((k + 1) % checkpoint_every == 0 or k + 1 == iters):
                    _write_checkpoint(ctx, outdir, k + 1, atlas, state, method, cfg, n, energy,
                                      dict(seconds_per_iter=spi, mean_momentum_norm=mnorm,
                                           momentum_norm=mrel), direction)
            except Exception as ex:  # noqa: BLE001
                bar.close()
                fail(ex)
            post = {}
            if mb is not None and nrm:
                post['mbar'] = mb / nrm
            bar.update(e, **post)

    # iterations resumed at the end (nothing left to do) or none at all: the
    # subjects' deformations against the final atlas are still reported
    try:
        if not deformed:
            for i in local:
                if method == 'greedy':
                    hh = state.get(i)
                    if hh is None:
                        hh = ca.Field3D(grid, mType)
                        ca.SetToIdentity(hh)
                    dfm = ca.Image3D(grid, mType)
                    ca.ApplyH(dfm, subj[i], hh)
                    hfields[i], deformed[i] = hh, dfm
                else:
                    hh = ca.Field3D(grid, mType)
                    ca.SetToIdentity(hh)
                    dfm = ca.Image3D(grid, mType)
                    ca.Copy(dfm, subj[i])
                    if i in state:   # the subject's geodesic from the atlas, shot again
                        from .lddmm import Shooter
                        sh = Shooter(grid, mType, kernel, reg_cfg['nsteps'], reg_cfg['integrator'],
                                     reg_cfg['sigma'], reg_cfg['inverse_iters'], reg_cfg['adjoint'])
                        sh.shoot(state[i])
                        ca.Copy(hh, sh.g[sh.T])
                        ca.ApplyH(dfm, subj[i], hh)
                    else:
                        state[i] = ca.Field3D(grid, mType)
                        ca.SetToZero(state[i])
                    momenta[i] = state[i]
                    hfields[i], deformed[i] = hh, dfm
        result = AtlasResult(
            method=method, atlas=atlas, mean=mean, energy=energy, iterations=len(energy),
            seconds=time.perf_counter() - t_start, subjects=list(local), h=hfields, deformed=deformed,
            momentum={i: momenta[i] for i in local} if method == 'lddmm' else {},
            seconds_per_iter=spi, mean_momentum_norm=mnorm, momentum_norm=mrel, names=names,
            ranks=ctx.size, rank=ctx.rank, device=device, resumed_from=resumed_from,
            config=dict(copy.deepcopy(cfg), register=_jsonable(reg_cfg), warm=_jsonable(warm_cfg)))
        if outdir is not None:
            result.files = _write_outputs(ctx, stage, result, subj, extra, direction).get('files', {})
    except Exception as e:  # noqa: BLE001
        fail(e)
    return result


# --------------------------------------------------------------------------- command line

class UsageError(Exception):
    """A bad command line or input (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError('%s (see %s --help)' % (message, self.prog))


def build_parser():
    """The ``pyca-atlas`` command line's parser (its options are listed by ``--help``).

    Returns:
        argparse.ArgumentParser: the parser (usage errors: exit status 2).
    """
    p = _Parser(prog=PROG,
                description='Builds an atlas (population template) of images on one grid with PyCA '
                            '(greedy fluid or LDDMM registrations to the current atlas, then averaging), '
                            'in one process or over MPI ranks (mpiexec -n K python -m PyCA.Apps.atlas ...).',
                epilog='Outputs in --out: atlas.nii.gz, atlas_iter_K.nii.gz, deformations/*_hfield.nii.gz, '
                       '*_deformed.nii.gz (and *_momentum.nii.gz for LDDMM), atlas_summary.png, '
                       'atlas_summary.json, checkpoint/ (with --checkpoint-every). '
                       'Exit status: 0 done, 2 bad input, 1 the atlas building or writing failed.')
    p.add_argument('--images', required=True, nargs='+', metavar='FILE',
                   help='subject images (files, or quoted glob patterns), all on one grid')
    p.add_argument('--out', required=True, metavar='DIR', help='output folder (created if needed)')
    p.add_argument('--method', default='greedy', choices=METHODS, help='registration method (default: greedy)')
    p.add_argument('--iters', default=None, type=str, metavar='N', help='atlas iterations (default 5)')
    p.add_argument('--device', default=None, choices=('cpu', 'gpu', 'auto'),
                   help="where every rank computes; 'auto' uses a GPU when one is available")
    p.add_argument('--config', default=None, metavar='FILE.yaml', help='YAML file of build_atlas parameters')
    p.add_argument('--set', dest='params', action='append', default=[], metavar='KEY=VALUE',
                   help='an atlas parameter (iters, warm_iters, jacobian_weighted, center) or a '
                        'registration parameter as register.KEY=VALUE (repeatable)')
    from .register import add_metric_args, add_preparation_args
    add_metric_args(p, "every subject's", "ssd, the metric of the atlas update (register.metric)")
    p.add_argument('--checkpoint-every', default=0, type=str, metavar='N',
                   help='checkpoint every N atlas iterations (0: never)')
    p.add_argument('--resume', action='store_true', help='continue from the checkpoint in --out')
    p.add_argument('--no-normalize', dest='normalize', action='store_false',
                   help='keep the intensities (default: the 0.5..99.5th percentiles to [0, 1])')
    add_preparation_args(p, 'every subject', "every subject's histogram to the first subject's", None, None)
    p.add_argument('--quiet', action='store_true', help='no progress bar, only the final lines')
    return p


def _fail(message, code):
    sys.stderr.write('%s: error: %s\n' % (PROG, ' '.join(str(message).split())))
    sys.stderr.flush()
    return code


def _int_arg(text, what, lo):
    try:
        v = int(str(text).strip())
    except ValueError:
        raise UsageError('%s must be a whole number, got %r' % (what, text)) from None
    if v < lo:
        raise UsageError('%s must be >= %d, got %d' % (what, lo, v))
    return v


_TMP_NAME = re.compile(r'\.tmp-\d+-\d+(\.|$)')


def _expand(patterns):
    files = []
    for p in patterns:
        if any(c in p for c in '*?['):
            # leftovers of a killed atomic save (``name.tmp-<pid>-<n>.nii.gz``,
            # PyCA.Common.PyCAIO) are not subjects
            hits = sorted(h for h in glob.glob(p) if not _TMP_NAME.search(os.path.basename(h)))
            if not hits:
                raise UsageError("no file matches '%s'" % p)
            files.extend(hits)
        else:
            if not os.path.exists(p):
                raise UsageError("image not found: '%s'" % p)
            if os.path.isdir(p):
                raise UsageError("image '%s' is a folder, not a file" % p)
            files.append(p)
    return files


def _setup(args):
    from .register import _value, _check_outdir
    files = _expand(args.images)
    if len(files) < 2:
        raise UsageError('an atlas needs at least 2 images, got %d' % len(files))
    params, reg = {}, {}
    for item in args.params:
        if '=' not in item:
            raise UsageError('--set takes KEY=VALUE, got %r' % item)
        k, v = item.split('=', 1)
        k = k.strip().replace('-', '_')
        if k.startswith('register.'):
            reg[k[len('register.'):]] = _value(v.strip())
        else:
            params[k] = _value(v.strip())
    if args.iters is not None:
        params['iters'] = _int_arg(args.iters, '--iters', 0)
    if args.metric is not None:
        reg['metric'] = args.metric
    if args.lncc_radius is not None:
        reg['lncc_radius'] = _value(args.lncc_radius)
    if args.mi_bins is not None:
        reg['mi_bins'] = _value(args.mi_bins)
    every = _int_arg(args.checkpoint_every, '--checkpoint-every', 0)
    if args.config is not None and not os.path.isfile(args.config):
        raise UsageError("configuration file not found: '%s'" % args.config)
    cfg = merge_config(DEFAULTS, args.config, params)
    if reg:
        cfg['register'] = dict(cfg['register'], **reg)
    _method_cfg(args.method, {k: v for k, v in cfg['register'].items() if k != 'device'})
    dev = (args.device or cfg['device'] or 'auto').lower()
    if dev == 'auto':
        dev = 'gpu' if gpu_available() else 'cpu'
    compute_mem_type(dev)                               # RuntimeError: no GPU
    cfg['device'] = dev
    cfg['normalize'] = bool(args.normalize) and cfg['normalize']
    # --[no-]bias-correct / --[no-]match-histogram win; else the config file's or --set's
    # value; else the command line's default (register.BIAS_CORRECT_DEFAULT, ...)
    from ._common import load_config
    from .register import BIAS_CORRECT_DEFAULT, MATCH_HISTOGRAM_DEFAULT
    given = set(str(k).replace('-', '_') for k in list(load_config(args.config)) + list(params))
    for key, flag, default in (('bias_correct', args.bias_correct, BIAS_CORRECT_DEFAULT),
                               ('match_histogram', args.match_histogram, MATCH_HISTOGRAM_DEFAULT)):
        cfg[key] = bool(flag) if flag is not None else (bool(cfg[key]) if key in given else bool(default))
    # every image readable, 2-D/3-D, on one grid (header reads only)
    from PyCA.Common import ReadGrid
    from .io import _check_not_4d
    g0 = None
    for f in files:
        _check_not_4d(f, 'image')
        g = ReadGrid(f)
        if g0 is None:
            g0 = g
        elif not same_grid(g0, g):
            raise UsageError("'%s' is not on the grid of '%s' (%s vs %s): resample the images onto "
                             "one grid first" % (f, files[0], g, g0))
    _check_outdir(args.out)
    return files, cfg, every


def main(argv=None):
    """Runs the command line; returns the exit status (0, 1 or 2).

    Args:
        argv (list of str, optional): the arguments without the program name; default None =
            ``sys.argv[1:]``.

    Returns:
        int: the exit status.
    """
    from ._common import run_cli
    return run_cli(_main, argv)


def _main(argv=None):
    from .register import _message, UsageError as _RegisterUsageError
    debug = os.environ.get('PYCA_DEBUG', '') not in ('', '0')
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        return _fail(e, 2)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    comm = _world()
    rank, size = int(comm.Get_rank()), int(comm.Get_size())
    quiet = args.quiet or rank != 0
    stage = 'input'
    try:
        # every rank checks the same inputs, so every rank fails alike (no hang)
        files, cfg, every = _setup(args)
        if not quiet:
            print('%s: %s atlas of %d images on %d rank%s (%s), %d iterations'
                  % (PROG, args.method, len(files), size, '' if size == 1 else 's', cfg['device'],
                     cfg['iters']), flush=True)
        stage = 'atlas'
        res = build_atlas(files, method=args.method, config=cfg, quiet=quiet, comm=comm, out=args.out,
                          checkpoint_every=every, resume=args.resume,
                          extra=dict(images=[os.path.abspath(f) for f in files]))
    except KeyboardInterrupt:
        sys.stderr.write('%s: interrupted\n' % PROG)
        return 130
    except (UsageError, _RegisterUsageError, ConfigError) as e:
        return _fail(_message(e), 2)
    except (OSError, ValueError, RuntimeError, ImportError, TypeError, MemoryError) as e:
        if debug:
            raise
        return _fail(_message(e) if stage == 'input' else '%s failed: %s' % (stage, _message(e)),
                     2 if stage == 'input' else 1)
    except Exception as e:  # noqa: BLE001
        if debug:
            raise
        return _fail('internal error in the %s step (%s: %s); set PYCA_DEBUG=1 for the traceback'
                     % (stage, type(e).__name__, _message(e)), 1)
    if rank == 0:
        print('%s: %s atlas done: %d iterations in %.2f s (%.3g s/iteration), energy %s'
              % (PROG, res.method, res.iterations, res.seconds,
                 (sum(res.seconds_per_iter) / len(res.seconds_per_iter)) if res.seconds_per_iter else 0.0,
                 ' -> '.join('%.4g' % e for e in (res.energy[:1] + res.energy[-1:])) or '-'))
        print('  atlas: %s' % os.path.join(args.out, 'atlas.nii.gz'))
        print('  summary: %s' % os.path.join(args.out, 'atlas_summary.json'))
        sys.stdout.flush()
    return 0


def main_entry():
    """The ``pyca-atlas`` console script."""
    sys.exit(main())


if __name__ == '__main__':
    sys.exit(main())
