"""Registration peers on the demo's problem (``./run bench --only peers``).

The demo pair (PyCA.Apps.demo.make_phantom_pair: the MNI template at 2 mm,
moving = the template warped by the phantom, seed 7) in four versions:
clean; rescanned (rescan='t1': bias field, gamma, noise); T2-like
(rescan='t2', every tool with its mutual-information option); large
deformation (max_disp_mm=24). Each is registered by

  * PyCA LDDMM and PyCA greedy, their defaults (T2-like: metric='mi');
  * ANTs (antspyx) with antsRegistrationSyN.sh's ``-t s`` stages as antspyx
    0.6.x recreates them (ants.registration(type_of_transform=
    'antsRegistrationSyN[s]')): rigid + affine (MI 32 bins, Regular 0.25,
    1000x500x250x100, shrink 8x4x2x1, smoothing 3x2x1x0 vox) then
    SyN[0.2,3,0] with CC radius 2, 100x70x50x20, shrink 8x4x2x1, smoothing
    3x2x1x0 vox (T2-like: the SyN metric MI[...,1,32], the SyN metric of
    antsRegistrationSyNQuick.sh);
  * PICSL Greedy (picsl_greedy.Greedy3D), the deformable call of its
    documentation's quick start: ``-m WNCC 2x2x2 -sv -n 100x50x10``
    (T2-like: ``-m NMI``);
  * elastix (itk-elastix), the default 'bspline' parameter map (4
    resolutions, AdvancedMattesMutualInformation + TransformBendingEnergyPenalty,
    final grid spacing 10 mm), as elastix's documentation recommends; the
    deformation from transformix (itk.transformix_deformation_field);
  * NiftyReg reg_f3d with its defaults (NMI, 3 levels, 5-voxel control
    point spacing, bending energy 0.001), the deformation from
    ``reg_transform -def``.

Each tool's transform is converted to a PyCA H-field on the fixed grid
(h(x) = the voxel index in the moving image that fixed voxel x maps to), and
the conversion is checked: ApplyH(moving, h) against the tool's own warped
moving image (linear interpolation), relative RMS in the brain over the
moving image's range (a WARNING above 1e-2). Reported per registration: wall
time of the registration call alone, the error |h - h_true| in the brain
(mean, p95 mm; PyCA.Apps.phantom.deformation_error), min det J of h in the
brain and the folded voxels there (det J <= 0).

Peers are optional: a missing one only skips its rows with a note. The peers
run with ``nthreads`` threads (ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS,
OMP_NUM_THREADS, Greedy's -threads, elastix's number_of_threads, NiftyReg's
-omp). PYCA_BENCH_PEERS_PAIRS (or --peers-pairs: clean,t1,t2,large) picks
pairs; PYCA_BENCH_PEERS_TOOLS (lddmm,greedy,ants,picsl,elastix,niftyreg)
picks tools.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import PyCA.Core as ca

LABEL = 'peers'
SPACING_MM = 2.0
SEED = 7

#: (key, label, make_phantom_pair's rescan, max_disp_mm)
PAIRS = (('clean', 'clean', None, 8.0),
         ('t1', 'rescanned t1', 't1', 8.0),
         ('t2', 'T2-like t2', 't2', 8.0),
         ('large', 'large deformation (max 24 mm)', None, 24.0))

#: tool key -> the row's tool name
TOOLS = (('lddmm', 'PyCA LDDMM'), ('greedy', 'PyCA greedy'), ('ants', 'ANTs SyN'),
         ('picsl', 'PICSL Greedy'), ('elastix', 'elastix'), ('niftyreg', 'NiftyReg f3d'))

#: the peers' settings and their sources (printed in each row's note)
ANTS_SOURCE = ("antsRegistrationSyN.sh -t s as antspyx recreates it (ants/registration/registration.py, "
               "type_of_transform='antsRegistrationSyN[s]'; the script itself: SyN[0.1,3,0], CC radius 4)")
GREEDY_SOURCE = 'Greedy documentation, quick start: deformable registration'
ELASTIX_SOURCE = ("elastix default 'bspline' parameter map (itk.ParameterObject.GetDefaultParameterMap), "
                  "as the elastix / itk-elastix documentation recommends")
NIFTYREG_SOURCE = 'reg_f3d defaults (NiftyReg documentation, reg_f3d -h)'


def selected(env_value, keys):
    """The keys named in a comma list (None or '': all), in ``keys`` order."""
    if not env_value:
        return list(keys)
    want = [w.strip().lower() for w in env_value.split(',') if w.strip()]
    bad = [w for w in want if w not in keys]
    if bad:
        raise SystemExit('unknown peers selection %s (choose from %s)' % (', '.join(bad), ', '.join(keys)))
    return [k for k in keys if k in want]


# ---------------------------------------------------------------------------
# geometry: a tool's physical-space transform -> a PyCA H-field
# ---------------------------------------------------------------------------

def index_to_physical(img):
    """(A, origin): ITK physical point (LPS mm) of voxel index i = A i + origin,
    A = direction * diag(spacing), from a PyCA image (GetDirection: None =
    identity)."""
    from PyCA.Common import GetDirection
    g = img.grid()
    d = GetDirection(img)
    D = np.eye(3) if d is None else np.asarray(d, np.float64).reshape(3, 3)
    sp = np.array([g.spacing()[k] for k in range(3)], np.float64)
    org = np.array([g.origin()[k] for k in range(3)], np.float64)
    return D.dot(np.diag(sp)), org


def hfield_from_displacement(fixed, u_xyz3):
    """The H-field of a displacement field u (ITK physical, LPS mm, the fixed
    grid, array (X, Y, Z, 3)): fixed voxel i at p = A i + o maps to the moving
    point p + u(p), whose index on the moving grid (= the fixed grid here) is
    i + A^-1 u. Returns [hx, hy, hz] float64 arrays."""
    A, _ = index_to_physical(fixed)
    Ainv = np.linalg.inv(A)
    size = tuple(int(v) for v in fixed.grid().size())
    if tuple(u_xyz3.shape[:3]) != size:
        raise RuntimeError('displacement field of size %s on a %s grid' % (u_xyz3.shape[:3], size))
    idx = np.indices(size, dtype=np.float64)
    du = np.einsum('ij,xyzj->ixyz', Ainv, np.asarray(u_xyz3, np.float64))
    return [idx[k] + du[k] for k in range(3)]


def hfield_from_world_positions(pos_xyz3, moving_affine):
    """The H-field of a deformation field of absolute world positions (NIfTI
    world, e.g. NiftyReg's RAS), array (X, Y, Z, 3), given the moving image's
    NIfTI voxel-to-world affine (4 x 4)."""
    M = np.asarray(moving_affine, np.float64)
    Minv = np.linalg.inv(M[:3, :3])
    q = np.asarray(pos_xyz3, np.float64) - M[:3, 3]
    j = np.einsum('ij,xyzj->ixyz', Minv, q)
    return [j[k] for k in range(3)]


def sitk_xyz(path, vector=False):
    """A NIfTI file as an (X, Y, Z[, C]) float64 array (SimpleITK)."""
    import SimpleITK as sitk
    a = sitk.GetArrayFromImage(sitk.ReadImage(path))
    a = np.asarray(a, np.float64)
    return a.transpose(2, 1, 0, 3) if vector else a.transpose(2, 1, 0)


def to_field(grid, comps):
    h = ca.Field3D(grid, ca.MEM_HOST)
    for v, c in zip(h.asnp(), comps):
        v[...] = c
    return h


# ---------------------------------------------------------------------------
# ANTs (antspyx): H-field by applying its transforms to index images
# ---------------------------------------------------------------------------

def ants_hfield(ants, fixed_ants, transforms, size, pad=32):
    """The H-field (voxel indices of the moving image at each fixed voxel) of
    an ANTs forward transform list: apply_transforms of the three index images
    (value = voxel index along x, y or z of the moving grid, which is the
    fixed grid here) onto the fixed grid. Linear interpolation reproduces a
    linear function exactly, so no LPS/RAS or physical-coordinate conversion
    enters: ANTs maps the points in its own conventions. The index images
    extend ``pad`` voxels beyond the grid on every side (indices -pad ..
    n - 1 + pad), so points the transform maps just outside the image still
    get their coordinates; a point mapped farther out gets a value below
    -pad - 1 (the default value -1e6 blended in)."""
    D = np.asarray(fixed_ants.direction, np.float64).reshape(3, 3)
    sp = np.asarray(fixed_ants.spacing, np.float64)
    org = np.asarray(fixed_ants.origin, np.float64) - D.dot(pad * sp)
    idx = np.indices(tuple(s + 2 * pad for s in size), dtype=np.float32) - np.float32(pad)
    out = []
    for d in range(3):
        src = ants.from_numpy(np.ascontiguousarray(idx[d]), origin=tuple(org), spacing=tuple(sp),
                              direction=D)
        w = ants.apply_transforms(fixed_ants, src, transformlist=transforms, interpolator='linear',
                                  defaultvalue=-1e6)
        out.append(np.asarray(w.numpy(), np.float64))
    return out


def ants_check_translation(ants, fixed_ants, size, spacing):
    """Verifies ants_hfield on a known transform: a translation t (mm, ITK
    physical space) maps fixed voxel i to moving voxel i + D^T t / spacing
    (D: the direction matrix). Returns the max error in voxels."""
    t = np.array([3.0, -5.0, 2.5])
    tx = ants.create_ants_transform(transform_type='AffineTransform', dimension=3,
                                    matrix=np.eye(3), translation=list(t))
    with tempfile.TemporaryDirectory() as td:
        p = os.path.join(td, 'shift.mat')
        ants.write_transform(tx, p)
        h = ants_hfield(ants, fixed_ants, [p], size)
    D = np.asarray(fixed_ants.direction, np.float64).reshape(3, 3)
    want = D.T.dot(t) / np.asarray(spacing, np.float64)
    idx = np.indices(tuple(size), dtype=np.float64)
    sl = tuple(slice(4, s - 4) for s in size)
    return max(float(np.abs(h[d][sl] - idx[d][sl] - want[d]).max()) for d in range(3))


def ants_args(pf, pm, prefix, mi):
    """antsRegistration arguments of antspyx's antsRegistrationSyN[s]
    (rigid, affine, SyN; files instead of in-memory pointers); mi: the SyN
    metric MI[f,m,1,32] instead of CC[f,m,1,2]."""
    lin = 'MI[%s,%s,1,32,Regular,0.25]' % (pf, pm)
    syn_metric = ('MI[%s,%s,1,32]' if mi else 'CC[%s,%s,1,2]') % (pf, pm)
    stages = []
    for tx in ('Rigid[0.1]', 'Affine[0.1]'):
        stages += ['--transform', tx, '--metric', lin, '--convergence', '[1000x500x250x100,1e-6,10]',
                   '--shrink-factors', '8x4x2x1', '--smoothing-sigmas', '3x2x1x0vox']
    stages += ['--transform', 'SyN[0.2,3,0]', '--metric', syn_metric,
               '--convergence', '[100x70x50x20,1e-6,10]', '--shrink-factors', '8x4x2x1',
               '--smoothing-sigmas', '3x2x1x0vox']
    return (['--dimensionality', '3', '-r', '[%s,%s,1]' % (pf, pm),
             '--output', '[%s,%sWarped.nii.gz]' % (prefix, prefix)] + stages
            + ['--random-seed', '1', '--float', '1', '--write-composite-transform', '0'])


# ---------------------------------------------------------------------------
# the runners: each returns dict(wall, comps, warped, settings, source, extra)
# or raises; comps = the H-field components, warped = the tool's own warped
# moving image on the fixed grid (X, Y, Z) for the conversion check
# ---------------------------------------------------------------------------

class quiet_fds:
    """Sends what native code writes to file descriptors 1 and 2 (C++
    std::cout, printf) to a log file for the duration of the block."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.log = open(self.path, 'ab')
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.log.fileno(), 1)
        os.dup2(self.log.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.log.close()
        return False


class Skip(Exception):
    """The tool is not available here: its rows are skipped with this note."""


def run_pyca(method, ctx):
    from PyCA.Apps import register
    kw = {'metric': 'mi'} if ctx['t2'] else {}
    t0 = time.perf_counter()
    r = register(ctx['fixed'], ctx['moving'], method=method, quiet=True, device='cpu', **kw)
    wall = time.perf_counter() - t0
    used = (r.config or {}).get('metric', '?')
    comps = [np.array(c, np.float64) for c in r.h.asnp()]
    out = dict(wall=wall, comps=comps, warped=None,
               settings='PyCA.Apps.register(method=%r%s): %d iterations, metric %s'
               % (method, ", metric='mi'" if kw else ' defaults', r.iterations, used),
               source='PyCA defaults')
    del r
    if ca.ThreadMemoryManager.isInitialized():
        ca.ThreadMemoryManager.destroy()
    return out


def run_ants(ctx):
    try:
        import ants
        from ants.internal import get_lib_fn, process_arguments
    except Exception as e:
        raise Skip('cannot import ants (pip install antspyx): %s' % str(e).splitlines()[0])
    td = ctx['tmp']
    pf, pm = ctx['fixed_path'], ctx['moving_path']
    fa = ants.image_read(pf)
    size = ctx['size']
    if tuple(fa.shape) != tuple(size):
        raise RuntimeError('ANTs reads the image as %s, ours is %s' % (fa.shape, size))
    extra = {}
    if not ctx['shared'].get('ants_checked'):
        chk = ants_check_translation(ants, fa, size, ctx['spacing'])
        ctx['shared']['ants_checked'] = True
        extra['translation_check_vox'] = chk
        if chk > 1e-3:
            ctx['rows'].warn('peers: the ANTs H-field extraction is off by %.3g voxel on a known '
                             'translation' % chk)
    prefix = os.path.join(td, 'ants_')
    args = ants_args(pf, pm, prefix, ctx['t2'])
    libfn = get_lib_fn('antsRegistration')
    t0 = time.perf_counter()
    rc = libfn(process_arguments(args))
    wall = time.perf_counter() - t0
    if rc != 0:
        raise RuntimeError('antsRegistration exit status %s' % rc)
    tx = [prefix + '1Warp.nii.gz', prefix + '0GenericAffine.mat']
    comps = ants_hfield(ants, fa, tx, size)
    far = int(sum(np.count_nonzero(c < -33.0) for c in comps))
    if far:
        ctx['rows'].warn('peers: the ANTs transform maps %d voxel coordinates more than 32 voxels '
                         'outside the image (%s)' % (far, ctx['pair_label']))
    warped = sitk_xyz(prefix + 'Warped.nii.gz')
    syn = 'MI[f,m,1,32] (antsRegistrationSyNQuick.sh\'s SyN metric)' if ctx['t2'] else 'CC[f,m,1,2]'
    settings = ('antspyx %s antsRegistration: init [f,m,1]; Rigid[0.1], Affine[0.1] MI[f,m,1,32,Regular,0.25] '
                '1000x500x250x100, shrink 8x4x2x1, smooth 3x2x1x0vox; SyN[0.2,3,0] %s 100x70x50x20, '
                'shrink 8x4x2x1, smooth 3x2x1x0vox; float, seed 1'
                % (ants.__version__, syn))
    return dict(wall=wall, comps=comps, warped=warped, settings=settings, source=ANTS_SOURCE, extra=extra,
                version=ants.__version__)


def run_picsl_greedy(ctx):
    try:
        from picsl_greedy import Greedy3D
    except Exception as e:
        raise Skip('cannot import picsl_greedy (pip install picsl-greedy): %s' % str(e).splitlines()[0])
    td = ctx['tmp']
    pf, pm = ctx['fixed_path'], ctx['moving_path']
    warp, res = os.path.join(td, 'greedy_warp.nii.gz'), os.path.join(td, 'greedy_warped.nii.gz')
    metric = '-m NMI' if ctx['t2'] else '-m WNCC 2x2x2'
    cmd = '-d 3 -i %s %s %s -sv -n 100x50x10 -o %s -threads %d' % (pf, pm, metric, warp, ctx['nthreads'])
    with quiet_fds(os.path.join(td, 'greedy.log')):
        g = Greedy3D()
        t0 = time.perf_counter()
        g.execute(cmd)
        wall = time.perf_counter() - t0
        Greedy3D().execute('-d 3 -rf %s -rm %s %s -r %s -threads %d' % (pf, pm, res, warp, ctx['nthreads']))
    comps = hfield_from_displacement(ctx['fixed'], sitk_xyz(warp, vector=True))
    return dict(wall=wall, comps=comps, warped=sitk_xyz(res),
                settings='greedy %s -sv -n 100x50x10 (deformable only, no affine stage)' % metric,
                source=GREEDY_SOURCE)


#: run in a fresh interpreter (itk-elastix crashes (SIGSEGV) when loaded
#: beside PyCA and SimpleITK, with log_to_console=False or number_of_threads); argv: fixed,
#: moving, output folder, threads, metric (unused: the default map's MI)
_ELASTIX_CHILD = r"""
import json, sys, time
import numpy as np
import itk
fp, mp, out, nthreads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
f = itk.imread(fp, itk.F)
m = itk.imread(mp, itk.F)
po = itk.ParameterObject.New()
po.AddParameterMap(po.GetDefaultParameterMap('bspline'))
t0 = time.perf_counter()
# threads: ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS (its number_of_threads argument crashes, SIGSEGV)
_, rtp = itk.elastix_registration_method(f, m, parameter_object=po, log_to_console=True)
wall = time.perf_counter() - t0
u = np.asarray(itk.array_from_image(itk.transformix_deformation_field(m, rtp)), np.float32)
np.save(out + '/u_zyx.npy', u)
for i in range(rtp.GetNumberOfParameterMaps()):
    rtp.SetParameter(i, 'FinalBSplineInterpolationOrder', '1')
w = itk.transformix_filter(m, rtp, log_to_console=True)
np.save(out + '/warped_zyx.npy', np.asarray(itk.array_from_image(w), np.float32))
pm = po.GetParameterMap(0)
json.dump(dict(wall=wall, version=getattr(itk, '__version__', '?'),
               resolutions=pm['NumberOfResolutions'][0], metric=list(pm['Metric']),
               iterations=pm['MaximumNumberOfIterations'][0],
               grid_mm=pm['FinalGridSpacingInPhysicalUnits'][0]), open(out + '/meta.json', 'w'))
"""


def run_elastix(ctx):
    import importlib.metadata
    import json
    try:
        elx_version = importlib.metadata.version('itk-elastix')
    except importlib.metadata.PackageNotFoundError:
        raise Skip('itk-elastix is not installed (pip install itk-elastix)')
    td = ctx['tmp']
    out = os.path.join(td, 'elastix')
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS=str(ctx['nthreads']))
    env.pop('PYTHONPATH', None)   # the child imports itk only
    # in its output folder: transformix writes deformationField.nii into the working directory
    p = subprocess.run([sys.executable, '-c', _ELASTIX_CHILD, ctx['fixed_path'], ctx['moving_path'], out,
                        str(ctx['nthreads'])], capture_output=True, text=True, env=env, cwd=out)
    if p.returncode != 0:
        tail = (p.stderr.strip() or p.stdout.strip() or 'exit status %d' % p.returncode).splitlines()[-1]
        raise RuntimeError('elastix (child process, exit status %d): %s' % (p.returncode, tail))
    meta = json.load(open(os.path.join(out, 'meta.json')))
    u = np.load(os.path.join(out, 'u_zyx.npy')).astype(np.float64)
    # the transform maps fixed points to moving points: u(x) on the fixed grid
    comps = hfield_from_displacement(ctx['fixed'], u.transpose(2, 1, 0, 3))
    warped = np.load(os.path.join(out, 'warped_zyx.npy')).astype(np.float64).transpose(2, 1, 0)
    settings = ("itk-elastix %s (ITK %s), default 'bspline' map: %s resolutions, %s, %s iterations, grid %s mm; "
                "transformix deformation field; check image: transformix, FinalBSplineInterpolationOrder 1; "
                "run in a child process, its registration call timed there"
                % (elx_version, meta['version'], meta['resolutions'], ' + '.join(meta['metric']), meta['iterations'],
                   meta['grid_mm']))
    return dict(wall=meta['wall'], comps=comps, warped=warped, settings=settings, source=ELASTIX_SOURCE)


def niftyreg_exe(name):
    """The path of a NiftyReg executable: the niftyreg wheel's ``niftyreg.bin_path``, else PATH."""
    try:
        import niftyreg
        p = os.path.join(str(niftyreg.bin_path), name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    except (ImportError, AttributeError):
        pass
    return shutil.which(name)


def run_niftyreg(ctx):
    exes = {n: niftyreg_exe(n) for n in ('reg_f3d', 'reg_transform', 'reg_resample')}
    missing = [n for n, p in exes.items() if p is None]
    if missing:
        raise Skip('NiftyReg not installable / not found here (pip install niftyreg): no %s'
                   % ', '.join(missing))
    import nibabel
    td = ctx['tmp']
    pf, pm = ctx['fixed_path'], ctx['moving_path']
    cpp, res = os.path.join(td, 'nr_cpp.nii.gz'), os.path.join(td, 'nr_res.nii.gz')
    dfield, lin = os.path.join(td, 'nr_def.nii.gz'), os.path.join(td, 'nr_lin.nii.gz')
    omp = ['-omp', str(ctx['nthreads'])]

    def call(args):
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            tail = (out.stderr.strip() or out.stdout.strip()).splitlines()[-1:] or ['failed']
            raise RuntimeError('%s: %s' % (os.path.basename(args[0]), tail[0]))
    t0 = time.perf_counter()
    call([exes['reg_f3d'], '-ref', pf, '-flo', pm, '-cpp', cpp, '-res', res] + omp)
    wall = time.perf_counter() - t0
    call([exes['reg_transform'], '-ref', pf, '-def', cpp, dfield] + omp)
    call([exes['reg_resample'], '-ref', pf, '-flo', pm, '-trans', cpp, '-res', lin, '-inter', '1'] + omp)
    d = nibabel.load(dfield)
    arr = np.asarray(d.get_fdata(dtype=np.float64))
    arr = arr.reshape(arr.shape[:3] + (arr.shape[-1],))  # (X, Y, Z, 1, 3) -> (X, Y, Z, 3)
    comps = hfield_from_world_positions(arr, nibabel.load(pm).affine)
    warped = np.asarray(nibabel.load(lin).get_fdata(dtype=np.float64)).reshape(ctx['size'])
    return dict(wall=wall, comps=comps, warped=warped,
                settings='reg_f3d -ref f -flo m (defaults: NMI 64 bins, 3 levels, CP spacing 5 vox, '
                         'BE 0.001, 150 iterations); reg_transform -def; check: reg_resample -inter 1',
                source=NIFTYREG_SOURCE)


RUNNERS = {'lddmm': lambda ctx: run_pyca('lddmm', ctx), 'greedy': lambda ctx: run_pyca('greedy', ctx),
           'ants': run_ants, 'picsl': run_picsl_greedy, 'elastix': run_elastix, 'niftyreg': run_niftyreg}


# ---------------------------------------------------------------------------
# the group
# ---------------------------------------------------------------------------

def bench_peers(rows, nthreads, pairs=None, tools=None):
    """The peers rows (module notes). pairs / tools: comma lists (None: the
    PYCA_BENCH_PEERS_PAIRS / PYCA_BENCH_PEERS_TOOLS variables, else all)."""
    try:
        from PyCA.Apps.demo import make_phantom_pair
        from PyCA.Apps.phantom import deformation_error
        from PyCA.Common import SaveITKImage
    except ImportError as e:
        print('(%s skipped: %s)' % (LABEL, e), flush=True)
        return []
    for k in ('ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS', 'OMP_NUM_THREADS'):
        os.environ[k] = str(nthreads)   # before the peers' libraries start their thread pools
    pair_keys = selected(pairs if pairs is not None else os.environ.get('PYCA_BENCH_PEERS_PAIRS'),
                         [p[0] for p in PAIRS])
    tool_keys = selected(tools if tools is not None else os.environ.get('PYCA_BENCH_PEERS_TOOLS'),
                         [t[0] for t in TOOLS])
    names = dict(TOOLS)
    skipped = {}
    table = []
    shared = {}
    for key, pair_label, rescan, max_disp in PAIRS:
        if key not in pair_keys:
            continue
        try:
            fixed, moving, mask, h_true, pinfo = make_phantom_pair(SPACING_MM, max_disp_mm=max_disp, seed=SEED,
                                                                   rescan=rescan)
        except ImportError as e:  # nilearn
            print('(%s skipped: %s)' % (LABEL, e), flush=True)
            return table
        g = fixed.grid()
        size = [int(v) for v in g.size()]
        inside = np.array(mask.asnp()) > 0.5
        mov = np.array(moving.asnp(), np.float64)
        mrange = float(mov.max() - mov.min()) or 1.0
        ri = pinfo.get('rescan') or {}
        what = ('moving = the warped template' if rescan is None else
                'moving = the warped %s, rescanned (bias +-%.0f %%, gamma %.2f, noise sd %.2f)'
                % ('template' if rescan == 't1' else 'T2-like image', 100 * ri.get('bias', 0.0),
                   ri.get('gamma', 0.0), ri.get('noise_sd', 0.0)))
        common = ('%s pair: MNI %g mm %s, phantom seed %d (max %.1f mm, mean %.1f mm in the brain), %s; '
                  '%d threads; error, det J in the brain mask; time = the registration call alone'
                  % (pair_label, SPACING_MM, 'x'.join(map(str, size)), SEED, pinfo['disp_brain_max_mm'],
                     pinfo['disp_brain_mean_mm'], what, nthreads))
        td = tempfile.mkdtemp(prefix='pyca-peers-')
        try:
            pf, pm = os.path.join(td, 'fixed.nii.gz'), os.path.join(td, 'moving.nii.gz')
            SaveITKImage(fixed, pf)
            SaveITKImage(moving, pm)
            ctx = dict(rows=rows, fixed=fixed, moving=moving, fixed_path=pf, moving_path=pm, size=size,
                       spacing=[float(s) for s in g.spacing()], t2=(rescan == 't2'), tmp=td,
                       nthreads=nthreads, shared=shared, pair_label=pair_label)
            for tk in tool_keys:
                if tk in skipped:
                    continue
                name = names[tk]
                try:
                    res = RUNNERS[tk](ctx)
                except Skip as e:
                    skipped[tk] = str(e)
                    # a note in the JSON too ("derived", value None)
                    rows.derive('%s: %s skipped' % (LABEL, name), None, '',
                                '(%s: %s rows skipped: %s)' % (LABEL, name, e))
                    continue
                except Exception as e:  # a broken peer only loses its row
                    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
                    rows.warn('%s: %s on the %s pair failed: %s' % (LABEL, name, pair_label, msg))
                    table.append(dict(tool=name, pair=key, failed=msg))
                    continue
                h = to_field(g, res['comps'])
                err = deformation_error(h, h_true, mask)
                jac = ca.Image3D(g, ca.MEM_HOST)
                ca.JacDetHVoxel(jac, h)
                j = np.array(jac.asnp())
                q = dict(err_mean_mm=err['mean_mm'], err_p95_mm=err['p95_mm'], err_max_mm=err['max_mm'],
                         jacdet_min_brain=float(j[inside].min()),
                         folded_voxels_brain=int(np.count_nonzero(j[inside] <= 0)),
                         jacdet_min=float(j.min()), folded_voxels=int(np.count_nonzero(j <= 0)),
                         wall_s=res['wall'])
                check = ''
                if res.get('warped') is not None:
                    mine = ca.Image3D(g, ca.MEM_HOST)
                    ca.ApplyH(mine, moving, h, ca.BACKGROUND_STRATEGY_PARTIAL_ZERO)
                    diff = np.asarray(mine.asnp(), np.float64) - np.asarray(res['warped'], np.float64)
                    rel = float(np.sqrt(np.mean(diff[inside] ** 2))) / mrange
                    rel_all = float(np.sqrt(np.mean(diff ** 2))) / mrange
                    q['hfield_check_rel_rms_brain'] = rel
                    q['hfield_check_rel_rms_image'] = rel_all
                    check = ('; H-field check: ApplyH(moving, h) vs its own warped image, rel. RMS %.1e in '
                             'the brain (%.1e whole image)' % (rel, rel_all))
                    if rel > 1e-2:
                        rows.warn('%s: %s on the %s pair: the converted H-field reproduces the tool\'s '
                                  'warped image only to %.2g of the range (rel. RMS in the brain)'
                                  % (LABEL, name, pair_label, rel))
                for k, v in (res.get('extra') or {}).items():
                    q[k] = v
                    if k == 'translation_check_vox':
                        check += '; H-field extraction exact on a known translation (%.1e voxel)' % v
                note = ('error mean %.2f / p95 %.2f mm, min det J %.3f, %d folded voxels; %s [settings from: %s]%s'
                        % (q['err_mean_mm'], q['err_p95_mm'], q['jacdet_min_brain'], q['folded_voxels_brain'],
                           res['settings'], res['source'], check))
                row = rows.add('%s: %s, %s' % (LABEL, pair_label, name), '%gmm' % SPACING_MM,
                               (res['wall'], res['wall']), None, '-', note, common=common)
                row.update(quality=q, pair=key, tool=name, settings=res['settings'],
                           settings_source=res['source'])
                table.append(dict(tool=name, pair=key, **q))
        finally:
            shutil.rmtree(td, ignore_errors=True)
    print_table(table, skipped)
    return table


def print_table(table, skipped):
    if not table and not skipped:
        return
    print('  # %s summary (error in the brain, mm; min det J and folds in the brain; check = rel. RMS of '
          'ApplyH(moving, h) vs the tool\'s warped image)' % LABEL, flush=True)
    print('  %-14s %-6s %7s %7s %8s %6s %8s %9s' % ('method', 'pair', 'mean', 'p95', 'minJ', 'folds',
                                                  'seconds', 'check'), flush=True)
    for t in table:
        if 'failed' in t:
            print('  %-14s %-6s failed: %s' % (t['tool'], t['pair'], t['failed']), flush=True)
            continue
        chk = t.get('hfield_check_rel_rms_brain')
        print('  %-14s %-6s %7.2f %7.2f %8.3f %6d %8.1f %9s'
              % (t['tool'], t['pair'], t['err_mean_mm'], t['err_p95_mm'], t['jacdet_min_brain'],
                 t['folded_voxels_brain'], t['wall_s'], '%.1e' % chk if chk is not None else '-'), flush=True)
    for k, why in skipped.items():
        print('  %-14s skipped: %s' % (dict(TOOLS)[k], why), flush=True)
