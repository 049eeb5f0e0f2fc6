// Elementwise.h -- launches a per-voxel functor on the CPU or the GPU.
//
// The operator layer fills an EwArgs (output, inputs, optional mask, count)
// and calls launch(memType, functor, args, stream). The CPU back end runs the
// functor in an OpenMP loop here; the CUDA back end (cuda/ElementwiseCUDA.cu)
// runs the same functor in a grid-stride kernel.
#ifndef __PYCA_ELEMENTWISE_H__
#define __PYCA_ELEMENTWISE_H__

#include <cstddef>
#include <utility>

#include "conditionMacro.h"
#include "estream.h"
#include "mem.h"
#include "pycaKernel.h"

namespace PyCA {
namespace detail {

/// Arrays of one elementwise call. mask == nullptr means every voxel.
template <int N>
struct EwArgs {
  float* out;
  const float* in[N > 0 ? N : 1];
  const float* mask;
  size_t n;
};

/// One voxel: out[i] = op(in[0][i], ..., in[N-1][i]).
template <class Op, int N, size_t... I>
PYCA_HOSTDEVICE PYCA_FORCEINLINE void ewVoxel(const Op& op, const EwArgs<N>& a, size_t i,
                                              std::index_sequence<I...>) {
  a.out[i] = op(a.in[I][i]...);
}

/// Below this many voxels the CPU loop stays on one thread.
constexpr size_t kOmpMinVoxels = 32768;

template <class Op, int N>
void cpuLaunch(const Op& op, const EwArgs<N>& a) {
  const long n = static_cast<long>(a.n);
  const bool par = a.n >= kOmpMinVoxels;
  constexpr auto seq = std::make_index_sequence<N>();
  if (a.mask) {
    const float* mask = a.mask;
#pragma omp parallel for schedule(static) if (par)
    for (long i = 0; i < n; ++i)
      if (mask[i] != 0.f) ewVoxel(op, a, size_t(i), seq);
  } else {
#pragma omp parallel for simd schedule(static) if (par)
    for (long i = 0; i < n; ++i) ewVoxel(op, a, size_t(i), seq);
  }
}

/// Defined in cuda/ElementwiseCUDA.cu for every line of ElementwiseOps.def.
template <class Op, int N>
void gpuLaunch(const Op& op, const EwArgs<N>& a, StreamT st);

[[noreturn]] void throwGpuNotCompiled(const char* file, int line);

/// Runs op over the arrays on the back end of memory type mt.
template <class Op, int N>
void launch(MemoryType mt, const Op& op, const EwArgs<N>& a, StreamT st) {
  if (a.n == 0) return;
  if (mt == MEM_DEVICE) {
#ifdef CUDA_ENABLED
    gpuLaunch(op, a, st);
#else
    throwGpuNotCompiled(__FILE__, __LINE__);
#endif
  } else {
    (void)st;
    cpuLaunch(op, a);
  }
}

}  // namespace detail
}  // namespace PyCA

#endif
