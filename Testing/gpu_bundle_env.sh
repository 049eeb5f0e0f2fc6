# Sourced (bash) to use a PyCA GPU bundle: `. .gpu-bundle/env.sh` (copied
# there from Testing/gpu_bundle_env.sh by Testing/gpu_bundle.sh). Puts the
# bundle's PyCA first on PYTHONPATH and its lib/ (libPyCA, FFTW, libgomp,
# Boost.Test) plus the folder of NVIDIA's cuFFT wheel in the site-packages of
# $PY (default python3; else the CUDA toolkit's lib64) first on LD_LIBRARY_PATH. Needs no network, pip or build.
_pyca_b=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_pyca_cufft=$("${PY:-python3}" - <<'PYEOF' 2>/dev/null
import glob, site, sys, sysconfig
paths = site.getsitepackages() + [site.getusersitepackages(), sysconfig.get_paths()["platlib"]]
for p in paths:
    for sub in ("nvidia/cu13/lib", "nvidia/cufft/lib", "nvidia/cu12/lib"):
        if glob.glob(p + "/" + sub + "/libcufft.so.1*"):
            print(p + "/" + sub)
            sys.exit()
PYEOF
) || true
# else the CUDA toolkit's own cuFFT (nvcc's installation), where there is one
if [ -z "$_pyca_cufft" ]; then
  for _pyca_d in "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../lib64" \
                 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    if compgen -G "$_pyca_d/libcufft.so.1*" >/dev/null; then _pyca_cufft=$(cd "$_pyca_d" && pwd); break; fi
  done
  unset _pyca_d
fi
export PYCA_GPU_BUNDLE_DIR=$_pyca_b
export PYTHONPATH=$_pyca_b/python${PYTHONPATH:+:$PYTHONPATH}
export LD_LIBRARY_PATH=$_pyca_b/lib${_pyca_cufft:+:$_pyca_cufft}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -n "$_pyca_cufft" ] || echo "[gpu-bundle] warning: no libcufft.so.1x in ${PY:-python3}'s site-packages (nvidia/cu13/lib) nor the CUDA toolkit: PyCA.Core will not load" >&2
unset _pyca_b _pyca_cufft
