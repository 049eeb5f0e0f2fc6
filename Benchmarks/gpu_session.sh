#!/usr/bin/env bash
# The one script to run on a lent GPU machine (no network, no apt, no pip
# index, no SWIG): it builds and installs nothing. It uses the prebuilt CUDA
# bundle .gpu-bundle/ that `./run gpu-bundle` makes on the development machine
# (carried with the tree: carry [".gpu-bundle"]), runs every GPU test (the
# import check, the pytest GPU list, the C++ test programs:
# Testing/gpu_bundle_tests.sh), then the GPU benchmark rows (operators with
# ApplyH 256^3, fluid kernel, filters, LDDMM iteration 128^3 and registration
# 256^3). Documentation/UserGuide.md, "Running the GPU tests on a machine
# without network", gives the exact device-tool call.
#
# Outputs under $OUT (7 files): summary.txt (one line per part and the target
# rows), device.txt, gpu-import.txt, gpu-tests.txt, gpu-cxx-tests.txt,
# gpu-bench.txt, gpu-bench.json. Exit status: 0 when every test passed.
# PYCA_GPU_DRY_RUN=1 (./run gpu-bundle-check): no device expected, small bench.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-/tmp/pyca-gpu}
BUNDLE=${PYCA_GPU_BUNDLE:-$ROOT/.gpu-bundle}
DRY=${PYCA_GPU_DRY_RUN:-0}
mkdir -p "$OUT"
t0=$SECONDS
if [ ! -f "$BUNDLE/env.sh" ]; then
  echo "no PyCA GPU bundle at $BUNDLE: make it with ./run gpu-bundle on the development machine and carry it" \
    "(device tool: carry [\".gpu-bundle\"])" | tee "$OUT/summary.txt"
  exit 1
fi
{
  echo "== nvidia-smi"; nvidia-smi -L 2>&1 || echo "(no nvidia-smi)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || true
  echo "== python3: $(command -v python3) $(python3 --version 2>&1)"
  python3 -c 'import numpy, scipy, pytest; print("numpy", numpy.__version__, "scipy", scipy.__version__, "pytest", pytest.__version__)' 2>&1
  echo "== system: $(uname -m), $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), $(ldd --version 2>&1 | head -n1), $(nproc) CPUs"
  echo "== bundle manifest"; cat "$BUNDLE/MANIFEST.txt"
} > "$OUT/device.txt" 2>&1

# The tests (summary lines on stdout and in summary.txt).
bash Testing/gpu_bundle_tests.sh "$BUNDLE" "$OUT" 2>&1 | tee "$OUT/summary.txt"
status=${PIPESTATUS[0]}

# The GPU benchmark rows. In a dry run (no device) they print "skipped" lines:
# this proves the benchmark script runs on the bundle, in seconds.
bench_args=(--only GPU --reps "${PYCA_GPU_BENCH_REPS:-7}")
[ "$DRY" = 1 ] && bench_args=(--only GPU --reps 1 --size 32)
tb=$SECONDS
( . "$BUNDLE/env.sh" && PY=python3 PYTHONUNBUFFERED=1 timeout "${PYCA_GPU_BENCH_TIMEOUT:-150}" \
    python3 Benchmarks/run_benchmarks.py --build-dir "$BUNDLE" "${bench_args[@]}" --json "$OUT/gpu-bench.json" ) \
  > "$OUT/gpu-bench.txt" 2>&1
brc=$?
{
  echo "bench: exit $brc ($((SECONDS - tb)) s), $(grep -c '^GPU\|GPU)' "$OUT/gpu-bench.txt") GPU rows"
  grep -E '^GPU ApplyH|^LDDMM iteration 128\^3|^LDDMM registration 256\^3|GPU FluidKernelFFT|skipped' "$OUT/gpu-bench.txt" || true
  echo "total: $((SECONDS - t0)) s; tests $([ "$status" -eq 0 ] && echo PASS || echo FAIL)"
} | tee -a "$OUT/summary.txt"
[ "$brc" -eq 0 ] || [ "$DRY" = 1 ] || echo "(the benchmark exited $brc: see gpu-bench.txt)" | tee -a "$OUT/summary.txt"
exit "$status"
