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

#ifdef _OPENMP
#include <omp.h>
#endif

#include "CPUThreads.h"
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

/// The calling OpenMP thread's share [lo, hi) of n items: one contiguous
/// block per thread of the team actually running (which may be smaller than
/// requested: nested regions, OMP_DYNAMIC, OMP_THREAD_LIMIT). Inner
/// boundaries are multiples of align.
struct ThreadBlock {
  size_t lo, hi;
  int thread;
};
inline ThreadBlock threadBlock(size_t n, size_t align = 1) {
  size_t t = 0, nt = 1;
#ifdef _OPENMP
  t = size_t(omp_get_thread_num());
  nt = size_t(omp_get_num_threads());
#endif
  const size_t lo = t == 0 ? 0 : n * t / nt / align * align;
  const size_t hi = t + 1 == nt ? n : n * (t + 1) / nt / align * align;
  return ThreadBlock{lo, hi, int(t)};
}

/// CPU inner loop over [lo, hi). The pointers arrive as separate arguments so
/// the compiler keeps them in registers and vectorises; `omp simd` is valid
/// for in-place calls too (each index is read before it is written).
template <class Op, class... P>
inline void cpuRange(const Op op, float* out, const float* mask, size_t lo, size_t hi, P... in) {
  if (mask) {
    for (size_t i = lo; i < hi; ++i)
      if (mask[i] != 0.f) out[i] = op(in[i]...);
  } else {
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) out[i] = op(in[i]...);
  }
}

template <class Op, int N, size_t... I>
void cpuLaunchImpl(const Op& op, const EwArgs<N>& a, std::index_sequence<I...>) {
  const size_t n = a.n;
  if (n < kOmpMinVoxels) {
    cpuRange(op, a.out, a.mask, 0, n, a.in[I]...);
    return;
  }
#pragma omp parallel num_threads(GetCPUThreads())
  {
    // Block boundaries on multiples of 16 floats (64-byte cache lines).
    const ThreadBlock b = threadBlock(n, 16);
    cpuRange(op, a.out, a.mask, b.lo, b.hi, a.in[I]...);
  }
}

template <class Op, int N>
void cpuLaunch(const Op& op, const EwArgs<N>& a) {
  cpuLaunchImpl(op, a, std::make_index_sequence<N>());
}

/// Defined in cuda/ElementwiseCUDA.cu for every line of ElementwiseOps.def.
template <class Op, int N>
void gpuLaunch(const Op& op, const EwArgs<N>& a, StreamT st);

/// Index kernels: fn(i) for i in [0, n), for operators that read or write
/// several arrays per voxel (e.g. field-vector operations). fn carries its
/// own pointers.
template <class Fn>
void cpuForEach(const Fn& fn, size_t n) {
  if (n < kOmpMinVoxels) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
#pragma omp parallel num_threads(GetCPUThreads())
  {
    const ThreadBlock b = threadBlock(n, 16);
    for (size_t i = b.lo; i < b.hi; ++i) fn(i);
  }
}

/// Defined in cuda/ElementwiseCUDA.cu for every line of IndexOps.def.
template <class Fn>
void gpuForEach(const Fn& fn, size_t n, StreamT st);

[[noreturn]] void throwGpuNotCompiled(const char* file, int line);

/// The data of an operator argument, after checking that its grid fits its
/// buffer (a grid mutated through a live reference, e.g. im.size().x = 1000,
/// must not make a kernel run past the allocation).
template <class T>
auto dataOf(T& obj) -> decltype(obj.get()) {
  PRECONDITION(obj.nVox() <= obj.capacity(), "grid too large for current image");
  return obj.get();
}
template <class T>
auto dataOf(T& field, int d) -> decltype(field.getComponent(d)) {
  PRECONDITION(field.nVox() <= field.capacity(), "Grid is larger than pre-allocated memory");
  return field.getComponent(d);
}

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

/// Runs fn(i), i in [0, n), on the back end of memory type mt.
template <class Fn>
void forEach(MemoryType mt, const Fn& fn, size_t n, StreamT st) {
  if (n == 0) return;
  if (mt == MEM_DEVICE) {
#ifdef CUDA_ENABLED
    gpuForEach(fn, n, st);
#else
    throwGpuNotCompiled(__FILE__, __LINE__);
#endif
  } else {
    (void)st;
    cpuForEach(fn, n);
  }
}

}  // namespace detail
}  // namespace PyCA

#endif
