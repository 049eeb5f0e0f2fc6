#!/usr/bin/env bash
# The one script to run on a lent GPU machine (see the device tool's notes):
# builds with CUDA, runs every GPU test (the parity suites and the apps'
# GPU tests, which skip without a device), then the GPU benchmark rows
# (operators, fluid kernel, LDDMM 128^3 iteration and 256^3 registration).
# Output: $OUT/gpu-tests.txt, $OUT/gpu-bench.txt, $OUT/gpu-bench.json.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/pyca-gpu}
mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/device.txt"
PYCA_USE_CUDA=ON ./run build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
export PYTHONPATH=$PWD/build/python
(cd Testing/Python && PYCA_SOURCE_DIR=$PWD/../.. timeout 400 python3 -m pytest -q -p no:cacheprovider \
   test_gpu_parity.py test_gpu_deform_parity.py test_apps_lddmm.py test_apps_greedy_elastic.py \
   test_apps_tv.py test_apps_cli.py test_dlpack.py test_memory_manager.py test_fluid_kernel.py \
   -k "gpu or GPU or device or cuda or parity" 2>&1) | tail -40 | tee "$OUT/gpu-tests.txt"
timeout 150 python3 Benchmarks/run_benchmarks.py --build-dir build --only GPU --json "$OUT/gpu-bench.json" \
  2>&1 | tee "$OUT/gpu-bench.txt" | tail -40
