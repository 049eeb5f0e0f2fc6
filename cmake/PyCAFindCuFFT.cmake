# Finds cuFFT for the GPU fluid kernel (FluidKernelFFT<EXEC_GPU>), after
# find_package(CUDAToolkit). Looks in the toolkit (CUDA::cufft) and in
# NVIDIA's PyPI wheel installed in the site-packages of the Python that
# builds PyCA (nvidia-cufft: <site>/nvidia/cu<major>; older wheels:
# <site>/nvidia/cufft). Sets
#   PYCA_CUFFT_FOUND        TRUE / FALSE
#   PYCA_CUFFT_INCLUDE_DIR  the folder holding cufft.h (cache)
#   PYCA_CUFFT_LINK         CUDA::cufft, or the library's full path
# Never fails: the caller decides (USE_CUDA=ON: error; AUTO: CPU-only build).
set(PYCA_CUFFT_FOUND FALSE)
set(PYCA_CUFFT_LINK "")
set(_pyca_cufft_hints)
# The interpreter of the build: scikit-build-core passes Python3_EXECUTABLE
# (the target environment's python, also under pip's build isolation).
set(_pyca_py "")
foreach(_v Python3_EXECUTABLE Python_EXECUTABLE PYTHON_EXECUTABLE)
  if(NOT _pyca_py AND ${_v})
    set(_pyca_py ${${_v}})
  endif()
endforeach()
if(NOT _pyca_py)
  find_program(PYCA_CUFFT_PYTHON NAMES python3 python)
  set(_pyca_py ${PYCA_CUFFT_PYTHON})
endif()
if(_pyca_py)
  execute_process(COMMAND ${_pyca_py} -c "import site, sysconfig; print(';'.join([sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']] + site.getsitepackages() + [site.getusersitepackages()]))"
    OUTPUT_VARIABLE _pyca_sites OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(_s ${_pyca_sites})
    list(APPEND _pyca_cufft_hints ${_s}/nvidia/cu${CUDAToolkit_VERSION_MAJOR} ${_s}/nvidia/cufft)
  endforeach()
endif()
find_path(PYCA_CUFFT_INCLUDE_DIR cufft.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_pyca_cufft_hints}
  PATH_SUFFIXES include)
if(PYCA_CUFFT_INCLUDE_DIR)
  if(TARGET CUDA::cufft)
    set(PYCA_CUFFT_LINK CUDA::cufft)
    set(PYCA_CUFFT_FOUND TRUE)
  else()
    find_library(PYCA_CUFFT_LIBRARY NAMES cufft libcufft.so.12 libcufft.so.11 libcufft.so.13
      HINTS ${_pyca_cufft_hints} PATH_SUFFIXES lib lib64)
    if(PYCA_CUFFT_LIBRARY)
      set(PYCA_CUFFT_LINK ${PYCA_CUFFT_LIBRARY})
      set(PYCA_CUFFT_FOUND TRUE)
    endif()
  endif()
endif()
if(CUDAToolkit_VERSION_MAJOR GREATER_EQUAL 13)
  math(EXPR _pyca_cufft_wheel "${CUDAToolkit_VERSION_MAJOR} - 1")
  set(PYCA_CUFFT_PIP "'nvidia-cufft==${_pyca_cufft_wheel}.*'")
else()
  set(PYCA_CUFFT_PIP "nvidia-cufft-cu${CUDAToolkit_VERSION_MAJOR}")
endif()
string(CONCAT PYCA_CUFFT_NOT_FOUND_MESSAGE
  "cuFFT was not found (CUDA ${CUDAToolkit_VERSION}; Python '${_pyca_py}'): the GPU fluid kernel "
  "needs it. Install the toolkit's cuFFT or NVIDIA's wheel into that Python's environment "
  "(python3 -m pip install ${PYCA_CUFFT_PIP}; ./run build installs it), set "
  "PYCA_CUFFT_INCLUDE_DIR and PYCA_CUFFT_LIBRARY, or configure with USE_CUDA=OFF.")
