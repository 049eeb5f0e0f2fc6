// Reduce.h -- reduces a per-voxel map over arrays, on the CPU or the GPU.
//
// A reduction is a map functor (float inputs -> double term, in
// PointwiseKernels.h) and a combiner (sum, max, min). Terms are accumulated in
// double on both back ends. The CPU back end splits the voxels into one block
// per thread and combines the partial results in thread order, so a result
// does not change from run to run; the CUDA back end (cuda/ReduceCUDA.cu) uses
// cub::DeviceReduce::TransformReduce.
#ifndef __PYCA_REDUCE_H__
#define __PYCA_REDUCE_H__

#include <cstddef>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "Elementwise.h"

namespace PyCA {
namespace detail {

template <int N>
struct RedArgs {
  const float* in[N];
  size_t n;
};

/// Combiner: sum of terms.
struct SumComb {
  static constexpr double identity() { return 0.0; }
  PYCA_HOSTDEVICE double operator()(double a, double b) const { return a + b; }
};

template <class Map, int N, size_t... I>
PYCA_HOSTDEVICE PYCA_FORCEINLINE double redVoxel(const Map& m, const RedArgs<N>& a, size_t i,
                                                 std::index_sequence<I...>) {
  return m(a.in[I][i]...);
}

/// CPU reduction of [lo, hi). The pointers arrive as separate arguments (kept
/// in registers); eight independent accumulators remove the loop-carried
/// dependency so the compiler vectorises and the adds pipeline.
template <class Map, class Comb, class... P>
double cpuReduceRange(const Map m, const Comb comb, size_t lo, size_t hi, P... in) {
  double acc[8];
  for (double& v : acc) v = Comb::identity();
  size_t i = lo;
  for (; i + 8 <= hi; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] = comb(acc[k], m(in[i + size_t(k)]...));
  for (; i < hi; ++i) acc[0] = comb(acc[0], m(in[i]...));
  double r = acc[0];
  for (int k = 1; k < 8; ++k) r = comb(r, acc[k]);
  return r;
}

template <class Map, class Comb, int N, size_t... I>
double cpuReduceImpl(const Map& m, const Comb& comb, const RedArgs<N>& a, std::index_sequence<I...>) {
  const size_t n = a.n;
  int nt = 1;
#ifdef _OPENMP
  if (n >= kOmpMinVoxels) nt = omp_get_max_threads();
#endif
  std::vector<double> partial(size_t(nt), Comb::identity());
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const ThreadBlock b = threadBlock(n);
    partial[size_t(b.thread)] = cpuReduceRange(m, comb, b.lo, b.hi, a.in[I]...);
  }
  // Combined in thread order: the result does not change from run to run.
  double r = Comb::identity();
  for (double p : partial) r = comb(r, p);
  return r;
}

template <class Map, class Comb, int N>
double cpuReduce(const Map& m, const Comb& comb, const RedArgs<N>& a) {
  return cpuReduceImpl(m, comb, a, std::make_index_sequence<N>());
}

/// Defined in cuda/ReduceCUDA.cu for every line of ReductionOps.def.
template <class Map, class Comb, int N>
double gpuReduce(const Map& m, const Comb& comb, const RedArgs<N>& a, StreamT st);

/// Reduces m over the arrays on the back end of memory type mt.
template <class Map, class Comb, int N>
double reduce(MemoryType mt, const Map& m, const Comb& comb, const RedArgs<N>& a, StreamT st) {
  if (a.n == 0) return Comb::identity();
  if (mt == MEM_DEVICE) {
#ifdef CUDA_ENABLED
    return gpuReduce(m, comb, a, st);
#else
    throwGpuNotCompiled(__FILE__, __LINE__);
#endif
  }
  (void)st;
  return cpuReduce(m, comb, a);
}

}  // namespace detail
}  // namespace PyCA

#endif
