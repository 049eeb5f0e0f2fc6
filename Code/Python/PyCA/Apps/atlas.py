"""Atlas (population template) building, in one process or over MPI ranks::

    result = build_atlas(images, method='greedy'|'lddmm', config=None, quiet=False,
                         comm=None, out=None, checkpoint_every=0, resume=False, **params)

    python -m PyCA.Apps.atlas --images <files or a glob> --out DIR [--method lddmm|greedy]
        [--iters N] [--device cpu|gpu|auto] [--checkpoint-every N] [--resume] [--quiet]
    mpiexec -n K python -m PyCA.Apps.atlas ...                (also ``pyca-atlas``)

Layout: this module is the loop (inputs, the initial mean, the iterations,
the outputs) and the command line; each method is one class of
``PyCA.Apps.atlas_methods`` (``GreedyAtlas``, ``LddmmAtlas``: the
registration of one subject with its warm start, the atlas update, the
centring), picked once by name; the checkpoints are
``PyCA.Apps.checkpoints``; the ranks' context and the float64 sums are
``PyCA.Parallel`` (``RankContext``, ``Sum64``, ``GetWorld``).

Distribution. Every rank is given the full list of subjects and handles
``PyCA.Common.Distribute(n, size, rank)`` of them (it loads only those). The
image sums over subjects are accumulated per rank in float64 host buffers
(``PyCA.Parallel.Sum64``; device data staged through a pinned host
Image3D/Field3D) and summed over
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
line ``pyca-atlas: error: rank R: ...`` on stderr and the job ends instead of
the other ranks waiting in the next Allreduce forever. Where each rank only
reads (its subjects, its checkpoint state) the ranks agree on the outcome
(one allgather): every rank raises :class:`RankFailure` and exits normally
(status 1). Elsewhere the failing rank calls ``comm.Abort(1)``, one second
(``ABORT_DRAIN_SECONDS``) after its line so that the launcher forwards it.

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
import copy
import glob
import os
import re
import sys
import time
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List

import numpy as np

import PyCA.Core as ca

from ._cli import (BIAS_CORRECT_DEFAULT, EXIT_FAILED, MATCH_HISTOGRAM_DEFAULT, Parser, UsageError,
                   add_metric_args, add_preparation_args, check_outdir, error_status, parse_args, parse_int,
                   parse_value, run_cli)
from PyCA.Parallel import GetWorld, RankContext, Sum64
from PyCA.Parallel.comm import exception_line

from . import checkpoints
from ._common import (ConfigError, Progress, compute_mem_type, ensure_thread_memory_manager,
                      gpu_available, merge_config, same_grid)
from .atlas_methods import (ATLAS_LDDMM_INVERSE_ITERS, ATLAS_LDDMM_NSTEPS, ATLAS_METHODS,  # noqa: F401
                            ATLAS_REGISTER_METRIC, atlas_method)
from .checkpoints import copy_to, on_host
from .outputs import jsonable

__all__ = ['DEFAULTS', 'AtlasResult', 'RankFailure', 'build_atlas', 'main', 'main_entry']

PROG = 'pyca-atlas'
METHODS = tuple(ATLAS_METHODS)   # 'greedy', 'lddmm' (atlas_methods)

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

#: Seconds a failing rank waits between its error line and ``Abort``: the
#: launcher's proxy forwards a rank's stderr through a pipe, and an abort that
#: kills the job first can lose the line (seen once under a loaded CI machine).
ABORT_DRAIN_SECONDS = 1.0


class RankFailure(RuntimeError):
    """Raised on every rank when a per-rank step (loading its subjects, its
    checkpoint state) failed on one of them; that rank printed the line.

    Attributes:
        rank (int): the lowest rank that failed.
        line (str): its exception, ``'Type: message'``.
    """

    def __init__(self, rank, line):
        super().__init__('rank %d: %s' % (rank, line))
        self.rank, self.line = rank, line


def _rank_line(rank, size, line):
    sys.stderr.write('%s: error: rank %d: %s (stopping all %d ranks)\n' % (PROG, rank, line, size))
    sys.stderr.flush()


# --------------------------------------------------------------------------- helpers

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
        return copy_to(item, mType) if item.memType() != mType else item
    if isinstance(item, (str, os.PathLike)):
        from .io import normalize_intensity
        im = _prepared_subject(item, i, bias_correct, reference)
        if normalize:
            normalize_intensity(im)
        if mType == ca.MEM_HOST:
            return im
        from PyCA.Common import GetDirection, SetDirection
        out = copy_to(im, mType)
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


def _method_cfg(method, reg_params):
    """The registration module of ``method`` and its merged parameters
    (atlas_methods.AtlasMethod.registration_config)."""
    cls = atlas_method(method)
    return cls.module, cls.registration_config(reg_params)


# --------------------------------------------------------------------------- outputs

def _draw_atlas_summary(path, atlas, mean, shown, energy, title, mnorm=None):
    """atlas (three planes) and the initial mean, a few subjects beside their
    deformed versions, and the energy curve."""
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from .figures import planes as _planes, plane_slice as _slice, plane_extent as _extent

    g = atlas.grid()
    planes = _planes(tuple(g.size()))
    A = np.array(on_host(atlas).asnp(), np.float64)
    M = np.array(on_host(mean).asnp(), np.float64)
    rows = [('atlas', A), ('initial mean', M)]
    for name, subj, dfm in shown:
        rows.append((name, np.array(on_host(subj).asnp(), np.float64)))
        rows.append((name + ' deformed', np.array(on_host(dfm).asnp(), np.float64)))
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
    from PyCA.Common.atomic import atomic_save
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=80, format='png'), 'build_atlas',
                 itk_errors=False)   # temporary beside it, fsync, os.replace


def _make_stage(ctx, outdir, adopt=()):
    """The run's OutputStage: made by rank 0, its path broadcast to the others."""
    from .staging import OutputStage
    stage = OutputStage(outdir, adopt=adopt) if ctx.rank == 0 else None
    path = ctx.bcast(stage.dir if stage is not None else None)
    return stage if stage is not None else OutputStage(outdir, path=path, owner=False)


def _write_outputs(ctx, stage, res, subjects_local, extra, updater, direction=None):
    """The final outputs (module notes) into ``stage``, committed by rank 0;
    returns the summary dict (rank 0) or {}."""
    # All or nothing (PyCA.Apps.staging): every rank writes into the stage
    # rank 0 made; rank 0 moves the files into place once all were written.
    try:
        summary = _write_staged_outputs(ctx, stage, res, subjects_local, extra, updater, direction)
        if ctx.rank == 0:
            stage.commit()
    except BaseException:
        stage.abort()
        raise
    return summary


def _write_staged_outputs(ctx, stage, res, subjects_local, extra, updater, direction):
    from PyCA.Common import SaveITKImage, SaveITKField
    files = {}
    for idx in res.subjects:
        nm = res.names[idx]
        sub = lambda kind: stage.path(os.path.join('deformations', nm + kind))   # noqa: E731
        SaveITKField(on_host(res.h[idx]), sub('_hfield.nii.gz'), True, direction=direction)
        SaveITKImage(on_host(res.deformed[idx]), sub('_deformed.nii.gz'), True, direction=direction)
        if idx in res.momentum:
            SaveITKField(on_host(res.momentum[idx]), sub('_momentum.nii.gz'), True, direction=direction)
    ctx.barrier()
    if ctx.rank != 0:
        return {}
    files['atlas'] = stage.final('atlas.nii.gz')
    SaveITKImage(on_host(res.atlas), stage.path('atlas.nii.gz'), True, direction=direction)
    files['deformations'] = stage.final('deformations')
    files['atlas_summary_png'] = stage.final('atlas_summary.png')
    files['atlas_summary_json'] = stage.final('atlas_summary.json')
    nshow = 3 if res.atlas.size().z == 1 else 2
    shown = [(res.names[i], subjects_local[i], res.deformed[i]) for i in res.subjects[:nshow]]
    ratio = updater.momentum_ratio()
    title = 'PyCA %s atlas: %d subjects, %d iterations, %d rank%s' % (
        res.method, len(res.names), res.iterations, res.ranks, '' if res.ranks == 1 else 's')
    _draw_atlas_summary(stage.path('atlas_summary.png'), res.atlas, res.mean, shown, res.energy, title, ratio)
    from .outputs import thread_count
    from .transform import grid_record
    summary = dict(method=res.method, subjects=list(res.names), n_subjects=len(res.names),
                   iterations=res.iterations, energies=list(res.energy),
                   seconds_per_iter=list(res.seconds_per_iter), total_seconds=res.seconds,
                   ranks=res.ranks, device=res.device, threads=thread_count(),
                   grid=grid_record(res.atlas.grid(), direction=False), resumed_from=res.resumed_from,
                   config=res.config, files=files)
    summary.update(updater.summary())
    summary.update(extra or {})
    checkpoints.write_json(stage.path('atlas_summary.json'), summary)
    return jsonable(summary)


# --------------------------------------------------------------------------- the builder

def _checked_config(method, config, params, checkpoint_every, resume, out):
    """The merged parameters and the checkpoint interval, checked (ConfigError)."""
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
    return cfg, checkpoint_every


def _device(ctx, cfg, first):
    """The compute memory type and its name ('cpu' or 'gpu'); chosen before
    any allocation: one GPU per rank where several exist."""
    mType = compute_mem_type(cfg['device'], first if isinstance(first, ca.Image3D) else None)
    if mType == ca.MEM_DEVICE:
        ndev = ca.GetNumberOfCUDADevices()
        if ndev > 1:
            ca.SetCUDADevice(ctx.rank % ndev)
    return mType, 'gpu' if mType == ca.MEM_DEVICE else 'cpu'


def _common_grid(images):
    """The grid of subject 0; ValueError if another subject is on another grid."""
    grid0 = _grid_of(images[0]).copy()
    for i, item in enumerate(images[1:], 1):
        if not same_grid(grid0, _grid_of(item)):
            raise ValueError("build_atlas: subject %d is not on the grid of subject 0 (%s vs %s); "
                             "resample the subjects onto one grid first" % (i, _grid_of(item), grid0))
    return grid0


def _load_local(images, local, cfg, grid0, mType):
    """This rank's subjects (``mType`` memory) and the direction cosines of
    the outputs (those of the first of them)."""
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
    direction = None
    for i in local:
        direction = GetDirection(images[i]) if isinstance(images[i], ca.Image3D) else GetDirection(subj[i])
        break
    return subj, direction


def _mean_of(ctx, subj, local, grid, mType, n):
    """The initial atlas: the voxel-wise mean of the n subjects (all ranks)."""
    mean = ca.Image3D(grid, mType)
    num = Sum64(ctx, mean)
    for i in local:
        num.add(subj[i])
    num.store(mean, num.allreduce() / n)
    return mean


class _Run:
    """What build_atlas does besides the iterations: the outputs' stage, the
    per-iteration atlases and checkpoints, and the failure (``fail``)."""

    def __init__(self, ctx, out, checkpoint_every, method, cfg, n):
        self.ctx = ctx
        self.outdir = os.fspath(out) if out is not None else None
        self.checkpoint_every = checkpoint_every
        self.method, self.cfg, self.n = method, cfg, n
        self.stage = None        # the outputs' staging folder (PyCA.Apps.staging), once there is one
        self.direction = None    # the direction cosines of the outputs

    def fail(self, e):
        """Ends the run with the exception ``e`` (on several ranks: one line,
        then Abort; a RankFailure, which every rank raises alike, without)."""
        if self.stage is not None:
            # a failed run leaves no output; a resumable one (checkpoints)
            # leaves its stage for the resume to take its iteration atlases from
            self.stage.release() if self.checkpoint_every else self.stage.abort()
        if self.ctx.size > 1 and not isinstance(e, RankFailure):
            _rank_line(self.ctx.rank, self.ctx.size, exception_line(e))
            time.sleep(ABORT_DRAIN_SECONDS)
            self.ctx.comm.Abort(1)
            os._exit(1)   # an Abort that returned (MPICH's can): no second line from this rank
        raise e

    def agreed(self, step):
        """``step()`` on every rank, then one allgather: when it failed on any
        rank, the lowest such rank prints the line and every rank raises
        :class:`RankFailure` (all ranks end normally, no Abort); in one
        process its exception propagates."""
        try:
            return_value, err = step(), None
        except Exception as e:  # noqa: BLE001
            if self.ctx.size == 1:
                raise
            return_value, err = None, e
        failed = self.ctx.first_failure(err)
        if failed is None:
            return return_value
        rank, line = failed
        if rank == self.ctx.rank:
            _rank_line(rank, self.ctx.size, line)
        raise RankFailure(rank, line) from err

    def open_stage(self, atlas, k0):
        """The staging folder of every output of the run (the per-iteration
        atlases too; the checkpoints are outside it: they are what a resume
        reads); the initial atlas in it when starting afresh."""
        self.stage = _make_stage(self.ctx, self.outdir, ['atlas_iter_%d.nii.gz' % k for k in range(k0 + 1)])
        if k0 == 0 and self.ctx.rank == 0:
            from PyCA.Common import SaveITKImage
            SaveITKImage(on_host(atlas), self.stage.path('atlas_iter_0.nii.gz'), True, direction=self.direction)

    def iteration_done(self, atlas, k_done, iters, updater):
        """The atlas after ``k_done`` iterations into the stage; a checkpoint when one is due."""
        if self.outdir is not None and self.ctx.rank == 0:
            from PyCA.Common import SaveITKImage
            SaveITKImage(on_host(atlas), self.stage.path('atlas_iter_%d.nii.gz' % k_done), True,
                         direction=self.direction)
        every = self.checkpoint_every
        if self.outdir is not None and every and (k_done % every == 0 or k_done == iters):
            checkpoints.write_checkpoint(self.ctx, self.outdir, k_done, atlas, updater.state, self.method,
                                         self.cfg, self.n, updater.energy, updater.history(), self.direction)


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
    ``extra``: entries added to atlas_summary.json. The method's work (the
    registrations, the atlas update) is its ``atlas_methods`` class.

    With several ranks an exception on any rank prints one line and the
    whole job stops rather than hangs: a failure to read a rank's subjects or
    checkpoint state raises :class:`RankFailure` on every rank, any other
    calls ``comm.Abort(1)``; in one process it propagates. Returns an
    :class:`AtlasResult`.

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
        RankFailure: (several ranks) a rank's subjects or checkpoint state could not be read.
    """
    t_start = time.perf_counter()
    method = str(method).lower()
    cls = atlas_method(method)
    cfg, checkpoint_every = _checked_config(method, config, params, checkpoint_every, resume, out)
    images = list(images)
    n = len(images)
    if n < 1:
        raise ValueError("build_atlas: no images")
    reg_params = {k: v for k, v in cfg['register'].items() if str(k).replace('-', '_') != 'device'}
    reg_cfg = cls.registration_config(reg_params)          # ConfigError: a bad registration key
    warm_cfg = dict(reg_cfg, scales=[1], iters=[int(cfg['warm_iters'])])

    ctx = RankContext(comm if comm is not None else GetWorld())
    mType, device = _device(ctx, cfg, images[0])
    reg_cfg['device'] = warm_cfg['device'] = device
    grid = _common_grid(images)
    names = [_subject_name(item, i) for i, item in enumerate(images)]
    from PyCA.Common import Distribute
    local = Distribute(n, ctx.size, ctx.rank)
    run = _Run(ctx, out, checkpoint_every, method, cfg, n)
    try:
        subj, run.direction = run.agreed(lambda: _load_local(images, local, cfg, grid, mType))
        ensure_thread_memory_manager(grid, mType)
        mean = _mean_of(ctx, subj, local, grid, mType, n)
        atlas = ca.Image3D(grid, mType)
        ca.Copy(atlas, mean)
        js = checkpoints.read_checkpoint(out, method, n, cfg) if resume else None
        k0, state = 0, {}
        if js is not None:
            k0 = int(js['iteration'])
            state = run.agreed(lambda: checkpoints.load_checkpoint(js, atlas, local, grid, mType))
        updater = cls(ctx, subj, local, grid, mType, n, cfg, reg_cfg, warm_cfg, state=state, history=js)
    except Exception as e:  # noqa: BLE001
        run.fail(e)
    if run.outdir is not None:
        try:
            run.open_stage(atlas, k0)
        except Exception as e:  # noqa: BLE001
            run.fail(e)

    iters = int(cfg['iters'])
    with Progress(max(iters - k0, 0), '%s atlas' % method, quiet or ctx.rank != 0) as bar:
        for k in range(k0, iters):
            t0 = time.perf_counter()
            try:
                e = updater.iterate(atlas, k)
                updater.seconds_per_iter.append(time.perf_counter() - t0)
                run.iteration_done(atlas, k + 1, iters, updater)
            except Exception as ex:  # noqa: BLE001
                bar.close()
                run.fail(ex)
            bar.update(e, **updater.progress())

    # iterations resumed at the end (nothing left to do) or none at all: the
    # subjects' deformations against the final atlas are still reported
    try:
        if not updater.deformed:
            updater.deform_subjects()
        result = AtlasResult(
            method=method, atlas=atlas, mean=mean, energy=updater.energy, iterations=len(updater.energy),
            seconds=time.perf_counter() - t_start, subjects=list(local), h=updater.h,
            deformed=updater.deformed, momentum=updater.momentum(), seconds_per_iter=updater.seconds_per_iter,
            mean_momentum_norm=updater.mean_momentum_norm, momentum_norm=updater.momentum_norm, names=names,
            ranks=ctx.size, rank=ctx.rank, device=device, resumed_from=k0,
            config=dict(copy.deepcopy(cfg), register=jsonable(reg_cfg), warm=jsonable(warm_cfg)))
        if run.outdir is not None:
            result.files = _write_outputs(ctx, run.stage, result, subj, extra, updater,
                                          run.direction).get('files', {})
    except Exception as e:  # noqa: BLE001
        run.fail(e)
    return result


# --------------------------------------------------------------------------- command line

def build_parser():
    """The ``pyca-atlas`` command line's parser (its options are listed by ``--help``).

    Returns:
        argparse.ArgumentParser: the parser (usage errors: exit status 2).
    """
    p = Parser(prog=PROG,
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
    add_metric_args(p, "every subject's", "ssd, the metric of the atlas update (register.metric)")
    p.add_argument('--checkpoint-every', default=0, type=str, metavar='N',
                   help='checkpoint every N atlas iterations (0: never)')
    p.add_argument('--resume', action='store_true', help='continue from the checkpoint in --out')
    p.add_argument('--no-normalize', dest='normalize', action='store_false',
                   help='keep the intensities (default: the 0.5..99.5th percentiles to [0, 1])')
    add_preparation_args(p, 'every subject', "every subject's histogram to the first subject's", None, None)
    p.add_argument('--quiet', action='store_true', help='no progress bar, only the final lines')
    return p


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
            reg[k[len('register.'):]] = parse_value(v.strip())
        else:
            params[k] = parse_value(v.strip())
    if args.iters is not None:
        params['iters'] = parse_int(args.iters, '--iters', 0)
    if args.metric is not None:
        reg['metric'] = args.metric
    if args.lncc_radius is not None:
        reg['lncc_radius'] = parse_value(args.lncc_radius)
    if args.mi_bins is not None:
        reg['mi_bins'] = parse_value(args.mi_bins)
    every = parse_int(args.checkpoint_every, '--checkpoint-every', 0)
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
    # value; else the command line's default (_cli.BIAS_CORRECT_DEFAULT, ...)
    from ._common import load_config
    given = set(str(k).replace('-', '_') for k in list(load_config(args.config)) + list(params))
    for key, flag, default in (('bias_correct', args.bias_correct, BIAS_CORRECT_DEFAULT),
                               ('match_histogram', args.match_histogram, MATCH_HISTOGRAM_DEFAULT)):
        cfg[key] = bool(flag) if flag is not None else (bool(cfg[key]) if key in given else bool(default))
    # every image readable, 2-D/3-D, on one grid (header reads only)
    from PyCA.Common import ReadGrid
    from .io import check_not_4d
    g0 = None
    for f in files:
        check_not_4d(f, 'image')
        g = ReadGrid(f)
        if g0 is None:
            g0 = g
        elif not same_grid(g0, g):
            raise UsageError("'%s' is not on the grid of '%s' (%s vs %s): resample the images onto "
                             "one grid first" % (f, files[0], g, g0))
    check_outdir(args.out)
    return files, cfg, every


def main(argv=None):
    """Runs the command line; returns the exit status (0, 1 or 2).

    Args:
        argv (list of str, optional): the arguments without the program name; default None =
            ``sys.argv[1:]``.

    Returns:
        int: the exit status.
    """
    return run_cli(_main, argv)


def _main(argv=None):
    args, status = parse_args(PROG, build_parser(), argv)
    if args is None:
        return status
    comm = GetWorld()
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
    except RankFailure:
        return EXIT_FAILED       # the rank that failed printed the line
    except (KeyboardInterrupt, Exception) as e:  # noqa: BLE001  one line (a bug of ours too)
        return error_status(PROG, e, stage)
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
