#!/usr/bin/env bash
# Runs every GPU test on a PyCA GPU bundle (Testing/gpu_bundle.sh): the
# import check, the pytest GPU list and the C++ test programs. Called by
# Benchmarks/gpu_session.sh on the GPU machine and by `./run gpu-bundle-check`
# (the dry run here, where the GPU tests skip and their CPU side runs).
#
#   Testing/gpu_bundle_tests.sh BUNDLE OUTDIR
#
# Writes OUTDIR/gpu-import.txt, gpu-tests.txt, gpu-cxx-tests.txt; one summary
# line per part on stdout. Exit status 0 when every part passed. python3 is the
# first on PATH (PY overrides). PYCA_GPU_DRY_RUN=1: no device is expected.
set -uo pipefail
BUNDLE=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PY=${PY:-python3}
DRY=${PYCA_GPU_DRY_RUN:-0}
# shellcheck source=/dev/null
. "$BUNDLE/env.sh"
export PYTHONUNBUFFERED=1 PYCA_SOURCE_DIR=$ROOT

# The GPU test list: whole files for the parity suites, the fluid kernel, the
# memory tests and the files parametrized over conftest.usable_mem_types with
# numeric ids (MEM_DEVICE is [3] there: test_common, test_common_helpers,
# test_io, test_testdata, test_jacdeth_units), and every test of the other
# files whose name (or class, or parameter id) says gpu / device / cuda /
# pinned. pytest's -k is case-insensitive and matches module names too.
GPU_TEST_FILES=(test_gpu_parity.py test_gpu_deform_parity.py test_fluid_kernel.py
  test_memory_limits.py test_memory_manager.py test_common.py test_io.py test_testdata.py
  test_jacdeth_units.py test_metrics.py test_gaussian_multiscale.py
  test_containers.py test_reductions.py test_pointwise.py test_opers.py test_python_operators.py
  test_dlpack.py test_deform_errors.py test_types.py test_common_helpers.py
  test_apps_lddmm.py test_apps_greedy_elastic.py test_apps_tv.py test_apps_cli.py)
GPU_TEST_K="gpu or device or cuda or pinned or parity or fluid_kernel or memory_limits or memory_manager or test_common or test_io or testdata or jacdeth"

status=0

# 1. PyCA.Core comes from the bundle, with its libraries from the bundle.
"$PY" - "$BUNDLE" "$DRY" > "$OUT/gpu-import.txt" 2>&1 <<'EOF'
import os, sys, platform
bundle, dry = os.path.realpath(sys.argv[1]), sys.argv[2] == "1"
import numpy
import PyCA.Core as ca
print("python", platform.python_version(), sys.executable)
print("numpy", numpy.__version__)
print("PyCA.Core", os.path.realpath(ca.__file__))
ok = os.path.realpath(ca.__file__).startswith(bundle + os.sep)
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if ".so" in l.split()[-1]})
for want in ("libPyCA.so", "libfftw3f.so", "libcufft.so"):
    got = [m for m in maps if os.path.basename(m).startswith(want)]
    print(want, "->", got)
    if want != "libcufft.so" and not all(os.path.realpath(g).startswith(bundle + os.sep) for g in got):
        ok = False
        print("  NOT from the bundle")
print("CudaCompiled", ca.CudaCompiled())
n = ca.GetNumberOfCUDADevices()
print("CUDA devices", n)
if not ca.CudaCompiled():
    ok = False
    print("the bundle is not a CUDA build")
if not dry and n < 1:
    ok = False
    print("no CUDA device seen: the GPU tests would all skip")
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
EOF
rc=$?
echo "import: $(tail -n1 "$OUT/gpu-import.txt") ($(grep -E '^(PyCA.Core|CUDA devices)' "$OUT/gpu-import.txt" | tr '\n' ' '))"
[ $rc -eq 0 ] || { status=1; cat "$OUT/gpu-import.txt"; }

# 2. pytest on the GPU list (golden-data tests skip where the data is absent).
t0=$SECONDS
(cd Testing/Python && timeout "${PYCA_GPU_PYTEST_TIMEOUT:-300}" "$PY" -m pytest -q -p no:cacheprovider \
   -rfEs --durations=10 -k "$GPU_TEST_K" "${GPU_TEST_FILES[@]}") > "$OUT/gpu-tests.txt" 2>&1
rc=$?
line=$(grep -E '^[=]* *[0-9]+ (passed|failed|error)|(passed|failed|skipped|deselected).* in [0-9.]+s' "$OUT/gpu-tests.txt" | tail -n1)
# tests skipped for want of a device (0 expected on the GPU machine)
gpu_skips=$(grep -E '^SKIPPED \[[0-9]+\] [^ ]+: (needs a CUDA device|no GPU)' "$OUT/gpu-tests.txt" \
  | sed 's/^SKIPPED \[\([0-9]*\)\].*/\1/' | awk '{s += $1} END {print s + 0}')
echo "pytest: exit $rc, ${line:-no summary line} ($((SECONDS - t0)) s; skipped for want of a device: $gpu_skips)"
if [ "$DRY" != 1 ] && [ "$gpu_skips" -gt 0 ]; then
  echo "  the device was not used by $gpu_skips tests: see the SKIPPED lines in gpu-tests.txt"; status=1
fi
if [ $rc -ne 0 ]; then status=1; grep -E '^(FAILED|ERROR)' "$OUT/gpu-tests.txt" | head -20; fi

# 3. The C++ test programs (Boost.Test), each under a time limit.
t0=$SECONDS
: > "$OUT/gpu-cxx-tests.txt"
pass=0 fail=0 failed=()
for t in "$BUNDLE"/bin/test_*; do
  [ -x "$t" ] || continue
  log=$(timeout "${PYCA_GPU_CXX_TIMEOUT:-60}" "$t" --log_level=test_suite 2>&1); rc=$?
  { echo "=== $(basename "$t"): exit $rc"; printf '%s\n' "$log" | tail -n 15; } >> "$OUT/gpu-cxx-tests.txt"
  if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$(basename "$t")"); fi
done
echo "c++ tests: $pass passed, $fail failed${failed:+ (${failed[*]})} ($((SECONDS - t0)) s)"
[ $fail -eq 0 ] && [ $pass -gt 0 ] || status=1
exit $status
