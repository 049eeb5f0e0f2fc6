// CUDA launchers of the raw-array index functors (MemOpersKernels.h): one
// grid-stride kernel, the same shape as detail::gpuForEach's.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "../MemOpersKernels.h"
#include "PyCAException.h"

namespace PyCA {
namespace detail {

namespace {
template <class Fn>
__global__ void memIndexKernel(Fn fn, size_t n) {
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) fn(i);
}

template <class Fn>
void memIndexLaunch(const Fn& fn, size_t n, StreamT st) {
  constexpr int kBlock = 256;
  const int grid = int(std::min<size_t>((n + kBlock - 1) / kBlock, size_t(65535) * 8));
  memIndexKernel<<<grid, kBlock, 0, reinterpret_cast<cudaStream_t>(st)>>>(fn, n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw PyCAException(__FILE__, __LINE__, std::string("CUDA kernel launch failed: ") + cudaGetErrorString(e));
}
}  // namespace

template <>
void gpuForEach<kern::MemLinear>(const kern::MemLinear& fn, size_t n, StreamT st) {
  memIndexLaunch(fn, n, st);
}
template <>
void gpuForEach<kern::MemReverse>(const kern::MemReverse& fn, size_t n, StreamT st) {
  memIndexLaunch(fn, n, st);
}
template <>
void gpuForEach<kern::MemShiftCoordinate>(const kern::MemShiftCoordinate& fn, size_t n, StreamT st) {
  memIndexLaunch(fn, n, st);
}
template <>
void gpuForEach<kern::MemPow>(const kern::MemPow& fn, size_t n, StreamT st) {
  memIndexLaunch(fn, n, st);
}

}  // namespace detail
}  // namespace PyCA
