#!/usr/bin/env bash
# Installed-wheel check (./run install-check; .ci/run calls it): builds and
# installs PyCA with `pip install "<repo>[apps]"` into a fresh virtual
# environment in a temporary folder, then, from a folder outside the source
# tree and with no PYTHONPATH, checks that
#   - PyCA, PyCA.Core (_Core) and the pure-Python packages come from the venv,
#     the console scripts are installed, the build information
#     (PyCA.Common._build_info.CUDA) agrees with PyCA.Core.CudaCompiled();
#   - pyca-register registers a synthetic 32^3 NIfTI pair (a shifted blob,
#     --method greedy, few iterations) and writes its outputs, which are
#     closer to the fixed image than the moving image was;
# and prints one "PASS" line (exit status 0), else the reason (status 1).
# Needs a C++ compiler, FFTW (libfftw3-dev) and PyPI (or a mirror pip is
# configured for): the build requirements (scikit-build-core, numpy, swig)
# and the [apps] extras come from there; nothing else is downloaded.
#
# Environment:
#   PYCA_INSTALL_USE_CUDA   USE_CUDA of the build: OFF (default: the CPU-only
#                           build, minutes), AUTO (CUDA where nvcc and cuFFT
#                           are found, else CPU-only with a warning) or ON
#   PYCA_INSTALL_CHECK_DIR  the work folder (default: a new mktemp folder,
#                           removed afterwards unless PYCA_INSTALL_KEEP=1)
#   PYCA_INSTALL_PIP_ARGS   extra arguments for pip install (e.g.
#                           --no-build-isolation, with the build
#                           requirements preinstalled by PYCA_INSTALL_PREINSTALL)
#   PYCA_INSTALL_PREINSTALL packages installed into the fresh venv first
#                           (e.g. "nvidia-cufft==12.*" for a CUDA build)
#   PYCA_INSTALL_FFT        PYCA_FFT of the build: auto (default: FFTW where
#                           found, else the bundled pocketfft), fftw, or
#                           pocketfft (a machine without libfftw3-dev: the
#                           FFTW search is skipped); the installed
#                           PyCA.Core.GetCPUFFTBackend() is checked against it
#   PYTHON (default python3), PYCA_JOBS (default: nproc)
# ccache, where present, is the compiler launcher, so that reruns are cheap.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
USE_CUDA=${PYCA_INSTALL_USE_CUDA:-OFF}
JOBS=${PYCA_JOBS:-$(nproc 2>/dev/null || echo 2)}
t0=$(date +%s)

fail() { echo "install-check: FAIL: $*" >&2; exit 1; }

if [ -n "${PYCA_INSTALL_CHECK_DIR:-}" ]; then
  WORK=$PYCA_INSTALL_CHECK_DIR
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/pyca-install-check.XXXXXX")
  if [ "${PYCA_INSTALL_KEEP:-0}" != 1 ]; then
    trap 'rm -rf "$WORK"' EXIT
  fi
fi
case "$WORK" in
  "$ROOT"|"$ROOT"/*) fail "the work folder $WORK is inside the source tree $ROOT" ;;
esac
echo "install-check: work folder $WORK, USE_CUDA=$USE_CUDA"

# 1. a fresh virtual environment
rm -rf "$WORK/venv"
"$PY" -m venv "$WORK/venv" || fail "python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)"
VPY=$WORK/venv/bin/python
if [ -n "${PYCA_INSTALL_PREINSTALL:-}" ]; then
  # shellcheck disable=SC2086
  "$VPY" -m pip install -q $PYCA_INSTALL_PREINSTALL || fail "pip install $PYCA_INSTALL_PREINSTALL failed"
fi

# 2. pip install "<repo>[apps]" (the build in $WORK/build, not in the repo)
FFT=${PYCA_INSTALL_FFT:-auto}
cfg=(-Cbuild-dir="$WORK/build" -Ccmake.define.USE_CUDA="$USE_CUDA" -Ccmake.define.PYCA_FFT="$FFT")
if command -v ccache >/dev/null 2>&1; then
  cfg+=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
        -Ccmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
t1=$(date +%s)
# shellcheck disable=SC2086
if ! CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$VPY" -m pip install -v "${cfg[@]}" \
     ${PYCA_INSTALL_PIP_ARGS:-} "$ROOT[apps]" > "$WORK/pip.log" 2>&1; then
  tail -n 60 "$WORK/pip.log" >&2
  fail "pip install \"$ROOT[apps]\" failed (log: $WORK/pip.log)"
fi
echo "install-check: pip install took $(( $(date +%s) - t1 )) s"
grep -E "back ends:|CPU FFT:|^ *CMake Warning at" "$WORK/pip.log" | sed 's/^/install-check: configure: /' || true

# 3. from a folder outside the source tree, with nothing on PYTHONPATH
mkdir -p "$WORK/run"
cd "$WORK/run"
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP
export PYTHONNOUSERSITE=1
"$VPY" - "$WORK/venv" "$ROOT" "$USE_CUDA" "$FFT" <<'EOF' || fail "the installed package is not complete (see above)"
import glob, os, sys
venv, root = [os.path.realpath(a) for a in sys.argv[1:3]]
use_cuda, fft = sys.argv[3], sys.argv[4]
import PyCA
import PyCA.Core as ca
pkg = os.path.dirname(os.path.realpath(PyCA.__file__))
problems = []
if fft != 'auto' and ca.GetCPUFFTBackend() != fft:
    problems.append('PYCA_FFT=%s, but the CPU FFT is %s' % (fft, ca.GetCPUFFTBackend()))
print('install-check: CPU FFT: %s' % ca.GetCPUFFTBackend())
if not pkg.startswith(venv + os.sep):
    problems.append('PyCA imported from %s, not from the venv %s' % (pkg, venv))
for mod in (PyCA, ca):
    f = os.path.realpath(mod.__file__)
    if f.startswith(root + os.sep):
        problems.append('%s imported from the source/build tree: %s' % (mod.__name__, f))
core_ext = os.path.realpath(ca._Core.__file__)
if os.path.dirname(core_ext) != pkg:
    problems.append('_Core is %s, not in %s' % (core_ext, pkg))
# the installed files: every pure-Python module of the source tree, Core.py,
# the build information, and the stubs / py.typed the source tree has
src = os.path.join(root, 'Code', 'Python', 'PyCA')
for f in glob.glob(os.path.join(src, '**', '*'), recursive=True):
    rel = os.path.relpath(f, src)
    if (f.endswith(('.py', '.pyi')) or os.path.basename(f) == 'py.typed') \
            and '__pycache__' not in rel and not os.path.isfile(os.path.join(pkg, rel)):
        problems.append('missing from the installed package: PyCA/' + rel)
for rel in ('Core.py', os.path.join('Common', '_build_info.py')):
    if not os.path.isfile(os.path.join(pkg, rel)):
        problems.append('missing from the installed package: PyCA/' + rel)
# the console scripts
bindir = os.path.join(venv, 'bin')
for script in ('pyca-register', 'pyca-atlas', 'pyca-apply'):
    present = os.access(os.path.join(bindir, script), os.X_OK)
    if not present and script != 'pyca-apply':  # pyca-apply: once it is declared
        problems.append('console script %s is not installed' % script)
    elif not present:
        with open(os.path.join(root, 'pyproject.toml')) as fh:
            if 'pyca-apply' in fh.read():
                problems.append('console script pyca-apply is declared but not installed')
# CUDA: the build information says what was built, and why
from PyCA.Common import _build_info
info = getattr(_build_info, 'CUDA', '')
compiled = bool(ca.CudaCompiled())
if info.startswith('ON') != compiled:
    problems.append('build info CUDA=%r disagrees with CudaCompiled()=%s' % (info, compiled))
if use_cuda.upper() == 'OFF' and compiled:
    problems.append('USE_CUDA=OFF but the module has CUDA')
if use_cuda.upper() == 'ON' and not compiled:
    problems.append('USE_CUDA=ON but the module has no CUDA')
# a small computation through the extension
g = ca.GridInfo(ca.Vec3Di(4, 5, 6))
im = ca.Image3D(g, ca.MEM_HOST)
ca.SetMem(im, 2.0)
if abs(ca.Sum(im) - 2.0 * 4 * 5 * 6) > 1e-3:
    problems.append('Sum of a constant image is %r, not %r' % (ca.Sum(im), 240.0))
if problems:
    print('\n'.join('install-check: ' + p for p in problems), file=sys.stderr)
    sys.exit(1)
print('install-check: PyCA %s from %s, CUDA: %s' % (getattr(PyCA, '__version__', '?'), pkg, info))
EOF

# 4. a small registration through the installed console script
"$VPY" - <<'EOF' || fail "could not write the synthetic image pair"
import numpy as np, SimpleITK as sitk
z, y, x = np.mgrid[0:32, 0:32, 0:32].astype(np.float32)
def blob(cz, cy, cx):
    return np.exp(-((z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2) / (2 * 5.0 ** 2)).astype(np.float32)
for name, c in (('fixed', (16, 16, 16)), ('moving', (16, 18, 14))):
    im = sitk.GetImageFromArray(blob(*c))
    im.SetSpacing((1.0, 1.0, 1.0))
    sitk.WriteImage(im, name + '.nii.gz')
EOF
t1=$(date +%s)
"$WORK/venv/bin/pyca-register" --fixed fixed.nii.gz --moving moving.nii.gz --out out \
  --method greedy --scales 2,1 --iters 10 --device cpu --no-bias-correct --no-normalize --quiet \
  > register.log 2>&1 || { cat register.log >&2; fail "pyca-register failed"; }
for f in deformed.nii.gz hfield.nii.gz jacdet.nii.gz summary.json; do
  [ -s "out/$f" ] || { cat register.log >&2; fail "pyca-register wrote no out/$f"; }
done
"$VPY" - <<'EOF' || { cat register.log >&2; fail "the registration did not bring the moving image closer"; }
import numpy as np, SimpleITK as sitk
a = lambda f: sitk.GetArrayFromImage(sitk.ReadImage(f)).astype(np.float64)
fixed, moving, deformed = a('fixed.nii.gz'), a('moving.nii.gz'), a('out/deformed.nii.gz')
before, after = np.sum((moving - fixed) ** 2), np.sum((deformed - fixed) ** 2)
print('install-check: pyca-register (greedy, 32^3): SSD %.4g -> %.4g' % (before, after))
assert deformed.shape == fixed.shape and after < 0.5 * before
EOF
echo "install-check: registration took $(( $(date +%s) - t1 )) s"
echo "install-check: PASS (pip install \"$ROOT[apps]\" into a fresh venv, USE_CUDA=$USE_CUDA, PYCA_FFT=$FFT; $(( $(date +%s) - t0 )) s)"
