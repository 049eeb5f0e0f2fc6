// CUDA back end of the elementwise operators: one grid-stride kernel template
// that runs the same per-voxel functors as the CPU loop.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "../Elementwise.h"
#include "../PointwiseKernels.h"

namespace PyCA {
namespace detail {

template <class Op, int N, bool Masked>
__global__ void ewKernel(Op op, EwArgs<N> a) {
  constexpr auto seq = std::make_index_sequence<N>();
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += stride) {
    if (Masked && a.mask[i] == 0.f) continue;
    ewVoxel(op, a, i, seq);
  }
}

namespace {
int maxResidentBlocks() {
  static int blocks = [] {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
      sms = 80;
    return sms * 8;  // 8 blocks of 256 threads per SM: full occupancy for these kernels
  }();
  return blocks;
}
}  // namespace

template <class Op, int N>
void gpuLaunch(const Op& op, const EwArgs<N>& a, StreamT st) {
  constexpr int kBlock = 256;
  const size_t want = (a.n + kBlock - 1) / kBlock;
  const int grid = int(std::min<size_t>(want, size_t(maxResidentBlocks())));
  cudaStream_t s = reinterpret_cast<cudaStream_t>(st);
  if (a.mask)
    ewKernel<Op, N, true><<<grid, kBlock, 0, s>>>(op, a);
  else
    ewKernel<Op, N, false><<<grid, kBlock, 0, s>>>(op, a);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw PyCAException(__FILE__, __LINE__, std::string("CUDA kernel launch failed: ") + cudaGetErrorString(e));
}

#define PYCA_EW_OP(OP, N) \
  template void gpuLaunch<kern::OP, N>(const kern::OP&, const EwArgs<N>&, StreamT);
#include "../ElementwiseOps.def"
#undef PYCA_EW_OP

template <class Fn>
__global__ void forEachKernel(Fn fn, size_t n) {
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) fn(i);
}

template <class Fn>
void gpuForEach(const Fn& fn, size_t n, StreamT st) {
  constexpr int kBlock = 256;
  const int grid = int(std::min<size_t>((n + kBlock - 1) / kBlock, size_t(maxResidentBlocks())));
  forEachKernel<<<grid, kBlock, 0, reinterpret_cast<cudaStream_t>(st)>>>(fn, n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw PyCAException(__FILE__, __LINE__, std::string("CUDA kernel launch failed: ") + cudaGetErrorString(e));
}

#define PYCA_INDEX_OP(FN) template void gpuForEach<kern::FN>(const kern::FN&, size_t, StreamT);
#include "../IndexOps.def"
#undef PYCA_INDEX_OP

}  // namespace detail
}  // namespace PyCA
