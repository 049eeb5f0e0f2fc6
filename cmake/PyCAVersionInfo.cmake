# Writes the build's version information for PyCA.Common.PyCAVersion:
#   cmake -DSOURCE_DIR=<repo> -DOUTPUT=<file.py> -DVERSION=<x.y.z> [-DCUDA_INFO=<text>]
#         -P PyCAVersionInfo.cmake
# CUDA_INFO (the configure step's PYCA_CUDA_INFO) says whether the CUDA back
# end was built and, when not, why (e.g. "OFF (USE_CUDA=AUTO: nvcc 13.0
# found, cuFFT not)"): PyCA.Common._build_info.CUDA.
# Runs at every build (git describe / rev-parse / branch, when git and a
# checkout are there; "" otherwise) and rewrites OUTPUT only when it changes.
# No network.
set(_describe "")
set(_commit "")
set(_branch "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --tags --always --dirty
    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE _describe
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc1)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse HEAD
    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE _commit
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc2)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --abbrev-ref HEAD
    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE _branch
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc3)
  if(NOT _rc1 EQUAL 0)
    set(_describe "")
  endif()
  if(NOT _rc2 EQUAL 0)
    set(_commit "")
  endif()
  if(NOT _rc3 EQUAL 0)
    set(_branch "")
  endif()
endif()
set(_cuda "${CUDA_INFO}")
foreach(_v _describe _commit _branch _cuda)
  string(REPLACE "\\" "" ${_v} "${${_v}}")
  string(REPLACE "'" "" ${_v} "${${_v}}")
endforeach()
set(_text "# Generated at build time by cmake/PyCAVersionInfo.cmake; do not edit.\n")
string(APPEND _text "VERSION = '${VERSION}'\nDESCRIBE = '${_describe}'\nCOMMIT = '${_commit}'\nBRANCH = '${_branch}'\nCUDA = '${_cuda}'\n")
set(_old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" _old)
endif()
if(NOT _old STREQUAL _text)
  file(WRITE "${OUTPUT}" "${_text}")
endif()
