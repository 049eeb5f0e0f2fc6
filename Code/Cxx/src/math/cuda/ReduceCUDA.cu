// CUDA back end of the reductions: cub::DeviceReduce::TransformReduce over the
// voxel indices, with the same map functors and combiners as the CPU loop
// (Reduce.h) and double accumulation. The single result is copied back to the
// host.
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <string>

#include "../PointwiseKernels.h"
#include "../Reduce.h"

namespace PyCA {
namespace detail {

namespace {
/// Voxel index -> the combiner's accumulator for that voxel's term.
template <class Map, class Comb, int N>
struct IndexMap {
  Map m;
  Comb comb;
  RedArgs<N> a;
  __device__ typename Comb::T operator()(size_t i) const {
    return comb.lift(redVoxel(m, a, i, std::make_index_sequence<N>()));
  }
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw PyCAException(__FILE__, __LINE__, std::string(what) + ": " + cudaGetErrorString(e));
  }
}
}  // namespace

template <class Map, class Comb, int N>
typename Comb::T gpuReduce(const Map& m, const Comb& comb, const RedArgs<N>& a, StreamT st) {
  using T = typename Comb::T;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(st);
  thrust::counting_iterator<size_t> first(0);
  IndexMap<Map, Comb, N> xf{m, comb, a};
  T* dOut = nullptr;
  void* dTemp = nullptr;
  size_t tempBytes = 0;
  check(cub::DeviceReduce::TransformReduce(nullptr, tempBytes, first, dOut, a.n, comb, xf,
                                           Comb::identity(), s),
        "cub reduce (size query)");
  const size_t outOffset = (tempBytes + 15) / 16 * 16;
  check(cudaMallocAsync(&dTemp, outOffset + sizeof(T), s), "cudaMallocAsync");
  dOut = reinterpret_cast<T*>(static_cast<char*>(dTemp) + outOffset);
  cudaError_t e = cub::DeviceReduce::TransformReduce(static_cast<char*>(dTemp), tempBytes, first, dOut,
                                                     a.n, comb, xf, Comb::identity(), s);
  T result = Comb::identity();
  if (e == cudaSuccess) e = cudaMemcpyAsync(&result, dOut, sizeof(T), cudaMemcpyDeviceToHost, s);
  cudaFreeAsync(dTemp, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  check(e, "cub reduce");
  return result;
}

#define PYCA_RED_OP(MAP, COMB, N)                                                              \
  template COMB::T gpuReduce<kern::MAP, COMB, N>(const kern::MAP&, const COMB&, const RedArgs<N>&, \
                                                 StreamT);
#include "../ReductionOps.def"
#undef PYCA_RED_OP

}  // namespace detail
}  // namespace PyCA
