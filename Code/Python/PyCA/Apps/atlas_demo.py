"""The PyCA atlas demo: ``python -m PyCA.Apps.atlas_demo`` (``./run atlas-demo``).

It builds an atlas of subjects whose true anatomy is known, with no download:

1. the MNI ICBM 2009a T1 template that nilearn ships in its package data
   (PyCA.Apps.phantom.load_mni), on a ``--spacing`` mm grid: 4 mm by
   default (50 x 59 x 48 voxels) so that the whole demo takes seconds on two
   cores; ``--spacing 2`` gives the 99 x 117 x 95 grid of the registration
   demo. The brain mask is load_mni's at that spacing.
2. ``--subjects`` subjects (8 by default). Subject i (i = 1..N) is the
   template deformed by its own smooth invertible random deformation,
   ``ApplyH(template, psi_i)`` with ``psi_i`` from
   ``phantom.random_deformation(seed=i, max_disp_mm=8, smoothness_mm=20)``
   (the registration demo's size), plus Gaussian intensity noise of standard
   deviation 0.02 (the template is in [0, 1]; NumPy ``default_rng(1000 +
   i)``), written as NIfTI to ``OUT/subjects/subject_NN.nii.gz``. The
   deformation is applied on a grid of half the spacing (2 mm for the 4 mm
   demo; not finer than 2 mm) and the result brought to the demo grid by
   load_mni's own Gaussian + ResampleWorld step; the reference template is
   the 2 mm template brought down the same way. (Warping directly on the
   4 mm grid blurs each subject by the trilinear interpolation about as much
   as misalignment blurs the plain mean, which hides what the atlas gains.)
3. The atlas command line on those files, ``python -m PyCA.Apps.atlas
   --images OUT/subjects/subject_NN.nii.gz ... --out OUT --method M
   --no-normalize`` (the subjects are already in [0, 1]), under ``mpiexec
   -n K`` (K = ``--ranks``, default 2) when an ``mpiexec`` and mpi4py are
   present, else (or with ``--ranks 1``) in one process; each rank gets
   OMP_NUM_THREADS = cores / K unless the variable is set. Its outputs
   (atlas.nii.gz, atlas_summary.png/json, per-subject files in
   OUT/subjects) are the atlas command's.
4. How far the atlas is from the template it came from: the mean absolute
   and RMS intensity difference inside the brain mask, beside the same for
   the plain voxel-wise mean of the subjects (what one gets without
   registration; the atlas should beat it), and beside the distance of each
   to the template deformed by the subjects' mean deformation
   ``mean_i(psi_i)``: to first order the shape an unbiased atlas converges
   to, since the mean of N random deformations is not the identity (its own
   distance from the template, reported too, is the floor of the first
   comparison). These numbers are added to ``OUT/atlas_summary.json`` under
   the key ``"demo"`` and printed, with the path of the picture
   ``OUT/atlas_summary.png``.

``--quick`` is the reduced configuration of the tests and CI (QUICK below:
the 4 mm grid, 8 subjects, 2 atlas iterations instead of the atlas
command's default). Errors are one line, ``pyca-atlas-demo: error: ...``,
exit status 1 (the atlas command's own status when it fails).
"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

import PyCA.Core as ca
from PyCA import threading_info
from PyCA._threads import default_threads

from ._cli import Parser, fail, interrupted

PROG = 'pyca-atlas-demo'

#: The subjects: phantom.random_deformation arguments (seed = subject number)
#: and the intensity noise.
SUBJECTS = dict(max_disp_mm=8.0, smoothness_mm=20.0, noise_sd=0.02, noise_seed0=1000)
DEFAULT_SPACING_MM = 4.0
DEFAULT_SUBJECTS = 8
DEFAULT_RANKS = 2

#: ``--quick``: the reduced configuration (CI).
QUICK = dict(spacing_mm=4.0, subjects=8, atlas_iters=2)


class DemoError(Exception):
    """A problem reported as one line, exit status 1.

    Args:
        msg (str): the message.
        status (int): the exit status; default 1.
    """

    def __init__(self, msg, status=1):
        Exception.__init__(self, msg)
        self.status = status


def build_parser():
    """The command line's parser (its options are listed by ``--help``).

    Returns:
        argparse.ArgumentParser: the parser; errors raise DemoError (one line, status 1).
    """
    p = Parser(prog=PROG, error_class=DemoError, see_help=False, description=(
        'The PyCA atlas demo (./run atlas-demo): subjects made from the MNI template by known smooth '
        'random deformations and noise, an atlas of them by python -m PyCA.Apps.atlas (on 2 MPI ranks '
        'where MPI exists), and how close it comes to the template, beside the plain mean.'))
    p.add_argument('--out', default='out-atlas', metavar='DIR',
                   help='output folder (default: out-atlas); subjects go to DIR/subjects')
    p.add_argument('--quick', action='store_true',
                   help='reduced configuration for CI: %g mm grid, %d subjects, %d atlas iterations'
                   % (QUICK['spacing_mm'], QUICK['subjects'], QUICK['atlas_iters']))
    p.add_argument('--method', default='greedy', help='greedy (default) or lddmm')
    p.add_argument('--subjects', type=int, default=None, metavar='N',
                   help='number of subjects (default %d; %d with --quick)'
                   % (DEFAULT_SUBJECTS, QUICK['subjects']))
    p.add_argument('--ranks', type=int, default=None, metavar='K',
                   help='MPI ranks (default %d where mpiexec and mpi4py exist, else 1; '
                        '1 = one process, no mpiexec)' % DEFAULT_RANKS)
    p.add_argument('--spacing', type=float, default=None, metavar='MM',
                   help='grid spacing of the template in mm (default %g; %g with --quick)'
                   % (DEFAULT_SPACING_MM, QUICK['spacing_mm']))
    p.add_argument('--iters', type=int, default=None, metavar='N',
                   help="atlas iterations (default: the atlas command's; %d with --quick)"
                   % QUICK['atlas_iters'])
    p.add_argument('--device', default=None, choices=('cpu', 'gpu'),
                   help="passed to the atlas command (default: its own)")
    p.add_argument('--quiet', action='store_true', help='no progress output from the atlas command')
    return p


def _say(quiet, *a):
    if not quiet:
        print(*a, flush=True)


# --------------------------------------------------------------------------- subjects

def _np(im):
    if im.memType() == ca.MEM_DEVICE:
        h = ca.Image3D(im.grid(), ca.MEM_HOST)
        ca.Copy(h, im)
        im = h
    return np.array(im.asnp(), dtype=np.float64)


def generation_spacing(spacing_mm):
    """The grid the subjects are deformed on: half the demo's spacing, but not
    finer than 2 mm (so a 4 mm demo deforms on the 2 mm grid).

    Args:
        spacing_mm (float): the demo's grid spacing in mm.

    Returns:
        float: the spacing in mm.
    """
    return max(float(spacing_mm) / 2.0, min(float(spacing_mm), 2.0))


def make_subjects(spacing_mm, n, outdir, quiet=True):
    """Writes the ``n`` subjects (module notes) to ``outdir`` and returns
    (template, mask, paths, reference, info): ``template`` is the reference
    template on the demo grid, ``reference`` the template deformed by the
    mean of the subjects' deformations psi_i, on the same grid.

    Args:
        spacing_mm (float): the demo's grid spacing in mm.
        n (int): the number of subjects.
        outdir (str): the output folder (subjects go to ``outdir/subjects``).
        quiet (bool): no progress lines; default True.

    Returns:
        tuple: (template Image3D, mask Image3D, list of paths, reference Image3D, info dict).
    """
    from . import phantom
    from PyCA.Common import GetDirection, SetDirection, SaveITKImage
    t0 = time.perf_counter()
    spacing_mm = float(spacing_mm)
    gen = generation_spacing(spacing_mm)
    fine, fine_mask = phantom.load_mni(gen)
    _, mask = phantom.load_mni(spacing_mm)
    gf = fine.grid()
    direction = GetDirection(fine)

    def to_demo_grid(im):
        if gen == spacing_mm:
            return im
        out = phantom.resample_to_spacing(im, spacing_mm)
        if tuple(out.grid().size()) != tuple(mask.grid().size()):  # pragma: no cover
            raise RuntimeError("atlas_demo: the %g mm subjects do not fall on the %g mm grid"
                               % (gen, spacing_mm))
        return out

    def finish(im):
        if direction is not None:
            SetDirection(im, direction)
        return im

    template = finish(to_demo_grid(fine))
    g = template.grid()
    os.makedirs(outdir, exist_ok=True)
    for i in range(1, 1000):   # a previous run with more subjects must not leave its files
        old = os.path.join(outdir, 'subject_%02d.nii.gz' % i)
        if os.path.exists(old):
            os.remove(old)
    psi_sum = None
    paths = []
    inside_f = _np(fine_mask) > 0.5
    disp_max = []
    for i in range(1, n + 1):
        psi, h_true = phantom.random_deformation(gf, max_disp_mm=SUBJECTS['max_disp_mm'],
                                                 smoothness_mm=SUBJECTS['smoothness_mm'],
                                                 seed=i, mask=fine_mask)
        disp_max.append(float(phantom.displacement_mm(h_true)[inside_f].max()))
        comps = [np.array(c, dtype=np.float64) for c in psi.asnp()]
        psi_sum = comps if psi_sum is None else [a + b for a, b in zip(psi_sum, comps)]
        warped = ca.Image3D(gf, ca.MEM_HOST)
        ca.ApplyH(warped, fine, psi, ca.BACKGROUND_STRATEGY_CLAMP)
        subj = to_demo_grid(warped)
        rng = np.random.default_rng(SUBJECTS['noise_seed0'] + i)
        a = subj.asnp()
        a += rng.normal(0.0, SUBJECTS['noise_sd'], a.shape).astype(np.float32)
        finish(subj)
        p = os.path.join(outdir, 'subject_%02d.nii.gz' % i)
        SaveITKImage(subj, p, useCompression=True)
        paths.append(p)
    # the template at the subjects' mean shape: ApplyH(template, mean_i psi_i)
    psi_mean = ca.Field3D(gf, ca.MEM_HOST)
    for view, s in zip(psi_mean.asnp(), psi_sum):
        view[...] = s / n
    ref = ca.Image3D(gf, ca.MEM_HOST)
    ca.ApplyH(ref, fine, psi_mean, ca.BACKGROUND_STRATEGY_CLAMP)
    reference = finish(to_demo_grid(ref))
    mean_disp = phantom.displacement_mm(psi_mean)
    info = dict(template=os.path.basename(phantom.mni_template_path()), spacing_mm=spacing_mm,
                generation_spacing_mm=gen, grid=[int(v) for v in g.size()],
                brain_voxels=int((_np(mask) > 0.5).sum()), subjects=int(n),
                deformation=dict(generator='PyCA.Apps.phantom.random_deformation', seeds=list(range(1, n + 1)),
                                 max_disp_mm=SUBJECTS['max_disp_mm'], smoothness_mm=SUBJECTS['smoothness_mm']),
                subject_disp_brain_max_mm=disp_max,
                noise=dict(sd=SUBJECTS['noise_sd'], seeds=[SUBJECTS['noise_seed0'] + i for i in range(1, n + 1)],
                           generator='numpy.random.default_rng(seed).normal'),
                mean_deformation_disp_brain_mm=dict(mean=float(mean_disp[inside_f].mean()),
                                                    max=float(mean_disp[inside_f].max())),
                seconds=time.perf_counter() - t0)
    return template, mask, paths, reference, info


def intensity_distance(a, b, inside):
    """dict(mean_abs, rms) of a - b over the voxels ``inside`` (NumPy arrays).

    Args:
        a (numpy.ndarray): first image.
        b (numpy.ndarray): second image, same shape.
        inside (numpy.ndarray of bool): the voxels compared (the brain mask).

    Returns:
        dict: ``{'mean_abs': float, 'rms': float}``.
    """
    d = (a - b)[inside]
    return dict(mean_abs=float(np.mean(np.abs(d))), rms=float(np.sqrt(np.mean(d * d))))


# --------------------------------------------------------------------------- the atlas command

def find_mpiexec():
    """The mpiexec (or mpirun) beside this Python first (the mpich wheel puts
    it there), else on PATH; None if there is none or mpi4py is missing."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    here = os.path.dirname(sys.executable)
    for name in ('mpiexec', 'mpirun'):
        p = os.path.join(here, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    for name in ('mpiexec', 'mpirun'):
        p = shutil.which(name)
        if p:
            return p
    return None


def _mpi_launch(mpiexec, ranks, env):
    """The launcher's argument list (OpenMPI needs --oversubscribe for more
    ranks than cores, and permission to run as root)."""
    cmd = [mpiexec, '-n', str(ranks)]
    try:
        ver = subprocess.run([mpiexec, '--version'], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        ver = ''
    if 'Open MPI' in ver or 'OpenRTE' in ver:
        cmd.append('--oversubscribe')
        env.setdefault('OMPI_ALLOW_RUN_AS_ROOT', '1')
        env.setdefault('OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1')
    return cmd


def atlas_command(paths, out, method, ranks, iters=None, device=None, quiet=False):
    """(argv, env, ranks): the atlas command line (module notes). ``ranks``
    None: 2 where MPI is present, else 1.

    Args:
        paths (list of str): the subject image files.
        out (str): the atlas's output folder.
        method (str): 'greedy' or 'lddmm'.
        ranks (int or None): MPI ranks; None: 2 where MPI is present, else 1.
        iters (int, optional): atlas iterations (``--iters``); default None (the atlas command's).
        device (str, optional): 'cpu', 'gpu' or 'auto' (``--device``); default None (the atlas
            command's).
        quiet (bool): pass ``--quiet``; default False.

    Returns:
        tuple: (argv list, environment dict, ranks int).

    Raises:
        DemoError: ``ranks`` > 1 without mpiexec and mpi4py.
    """
    env = dict(os.environ)
    mpiexec = find_mpiexec()
    if ranks is None:
        ranks = DEFAULT_RANKS if mpiexec else 1
    elif ranks > 1 and mpiexec is None:
        raise DemoError("--ranks %d needs mpiexec and mpi4py (pip install mpi4py mpich), "
                        "or --ranks 1 for one process" % ranks)
    # the subjects are already in [0, 1] like the template: no re-normalisation,
    # so the atlas is directly comparable with the template
    argv = [sys.executable, '-m', 'PyCA.Apps.atlas', '--images'] + list(paths) + [
        '--out', out, '--method', method, '--no-normalize',
        '--no-bias-correct']   # the phantom subjects have no bias field: compared to the template as they are
    if iters is not None:
        argv += ['--iters', str(int(iters))]
    if device is not None:
        argv += ['--device', device]
    if quiet:
        argv.append('--quiet')
    if ranks > 1:
        argv = _mpi_launch(mpiexec, ranks, env) + argv
        # cores / ranks unless the user set OMP_NUM_THREADS (a value import
        # PyCA chose for this process is not the user's)
        if 'OMP_NUM_THREADS' not in env or threading_info().get('threads') is not None:
            env['OMP_NUM_THREADS'] = str(default_threads({'MPI_LOCALNRANKS': str(ranks)}))
    return argv, env, ranks


def _describe(argv, n, folder):
    """The atlas command as one readable line (the subject files abbreviated)."""
    words, skipping = [], False
    for a in argv:
        if a == '--images':
            words += [a, '<%d files in %s>' % (n, folder)]
            skipping = True
            continue
        if skipping and a.endswith('.nii.gz'):
            continue
        skipping = False
        words.append(os.path.basename(a) if a == sys.executable else a)
    return ' '.join(words)


def _write_json_atomic(path, data):
    """Temporary file beside path, fsync, os.replace, fsync of the folder."""
    from PyCA.Common.atomic import atomic_json
    atomic_json(path, data, 'atlas_demo', indent=2, sort_keys=True)


# --------------------------------------------------------------------------- run

def run(args):
    """Runs the demo (module notes) for parsed arguments.

    Args:
        args (argparse.Namespace): the parsed command line (``build_parser()``).

    Returns:
        int: the exit status (0 on success).

    Raises:
        DemoError: a bad option, a missing dependency or a failed step (one line).
    """
    import importlib.util
    method = str(args.method).lower()
    if method not in ('greedy', 'lddmm'):
        raise DemoError("--method must be greedy or lddmm, got %r" % args.method)
    if importlib.util.find_spec('PyCA.Apps.atlas') is None:
        raise DemoError("PyCA.Apps.atlas is missing from this installation")
    spacing = args.spacing if args.spacing is not None else (
        QUICK['spacing_mm'] if args.quick else DEFAULT_SPACING_MM)
    n = args.subjects if args.subjects is not None else (
        QUICK['subjects'] if args.quick else DEFAULT_SUBJECTS)
    iters = args.iters if args.iters is not None else (QUICK['atlas_iters'] if args.quick else None)
    if not spacing > 0:
        raise DemoError("--spacing must be positive, got %g" % spacing)
    if n < 2:
        raise DemoError("--subjects must be at least 2, got %d" % n)
    if args.ranks is not None and args.ranks < 1:
        raise DemoError("--ranks must be at least 1, got %d" % args.ranks)
    if iters is not None and iters < 1:
        raise DemoError("--iters must be at least 1, got %d" % iters)
    out = args.out
    os.makedirs(out, exist_ok=True)
    q = args.quiet
    _say(q, 'MNI template at %g mm; %d subjects: random deformations (seeds 1..%d, up to %g mm, '
            'smoothness %g mm) + noise (sd %g)' % (spacing, n, n, SUBJECTS['max_disp_mm'],
                                                  SUBJECTS['smoothness_mm'], SUBJECTS['noise_sd']))
    template, mask, paths, reference, info = make_subjects(spacing, n, os.path.join(out, 'subjects'))
    _say(q, 'subjects written to %s (%.1f s)' % (os.path.join(out, 'subjects'), info['seconds']))

    argv, env, ranks = atlas_command(paths, out, method, args.ranks, iters=iters,
                                     device=args.device, quiet=q)
    _say(q, 'atlas: %s' % ('mpiexec -n %d (%d ranks)' % (ranks, ranks) if ranks > 1 else 'one process'))
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise DemoError("the atlas command failed (exit status %d): %s"
                        % (proc.returncode, ' '.join(argv)), status=proc.returncode or 1)
    atlas_path = os.path.join(out, 'atlas.nii.gz')
    summary_path = os.path.join(out, 'atlas_summary.json')
    for p in (atlas_path, summary_path):
        if not os.path.isfile(p):
            raise DemoError("the atlas command wrote no %s" % p)

    from PyCA.Common import LoadITKImage
    atlas = LoadITKImage(atlas_path, ca.MEM_HOST)
    if tuple(atlas.grid().size()) != tuple(template.grid().size()):
        raise DemoError("the atlas grid %s differs from the subjects' %s"
                        % (tuple(atlas.grid().size()), tuple(template.grid().size())))
    inside = _np(mask) > 0.5
    A, T, R = _np(atlas), _np(template), _np(reference)
    subj = [_np(LoadITKImage(p, ca.MEM_HOST)) for p in paths]
    M = sum(subj) / len(subj)
    demo = dict(
        method=method, ranks=int(ranks), quick=bool(args.quick),
        command=_describe(argv, len(paths), os.path.join(out, 'subjects')),
        atlas_wall_seconds=wall, phantom=info, region='brain mask (%d voxels)' % int(inside.sum()),
        atlas_vs_template=intensity_distance(A, T, inside),
        mean_vs_template=intensity_distance(M, T, inside),
        atlas_vs_mean_shape_template=intensity_distance(A, R, inside),
        mean_vs_mean_shape_template=intensity_distance(M, R, inside),
        mean_shape_template_vs_template=intensity_distance(R, T, inside),
    )
    a_t, m_t = demo['atlas_vs_template'], demo['mean_vs_template']
    demo['atlas_beats_mean'] = bool(a_t['mean_abs'] < m_t['mean_abs'] and a_t['rms'] < m_t['rms'])
    demo['improvement_mean_abs'] = m_t['mean_abs'] / a_t['mean_abs'] if a_t['mean_abs'] > 0 else None
    with open(summary_path) as f:
        summary = json.load(f)
    if not isinstance(summary, dict):
        summary = {'atlas': summary}
    demo['atlas_iters'] = summary.get('iterations', iters)
    summary['demo'] = demo
    _write_json_atomic(summary_path, summary)

    print('picture: %s' % os.path.join(out, 'atlas_summary.png'))
    print('atlas: %s (%s, %d subjects, %s, %.1f s)'
          % (atlas_path, method, n, '%d MPI ranks' % ranks if ranks > 1 else 'one process', wall))
    print('distance to the template inside the brain (mean abs / RMS intensity, template in [0, 1]):')
    print('  atlas       %.4f / %.4f' % (a_t['mean_abs'], a_t['rms']))
    print('  plain mean  %.4f / %.4f' % (m_t['mean_abs'], m_t['rms']))
    r_a, r_m = demo['atlas_vs_mean_shape_template'], demo['mean_vs_mean_shape_template']
    print('to the template at the subjects\' mean shape: atlas %.4f / %.4f, plain mean %.4f / %.4f'
          % (r_a['mean_abs'], r_a['rms'], r_m['mean_abs'], r_m['rms']))
    print('the atlas %s the plain mean (%.2fx lower mean abs difference)'
          % ('beats' if demo['atlas_beats_mean'] else 'does NOT beat', demo['improvement_mean_abs'] or 0))
    print('summary: %s (key "demo")' % summary_path)
    return 0


def main(argv=None):
    """The command line entry point: parses ``argv``, runs the demo, and reports
    an error as one line ``PROG: error: ...`` on stderr.

    Args:
        argv (list of str, optional): the arguments without the program name;
            default None = ``sys.argv[1:]``.

    Returns:
        int: the exit status (0 on success, 1 on an error, 130 when interrupted).
    """
    try:
        args = build_parser().parse_args(argv)
        return run(args)
    except DemoError as e:
        msg, status = str(e), e.status
    except KeyboardInterrupt:
        return interrupted(PROG)
    except (ValueError, TypeError, OSError, ImportError, RuntimeError, KeyError) as e:
        msg, status = str(e) or type(e).__name__, 1
        if isinstance(e, ImportError) and getattr(e, 'name', None) and e.name not in msg:
            msg = '%s (module %s)' % (msg, e.name)
    return fail(PROG, msg, status)


if __name__ == '__main__':
    sys.exit(main())
