// Reduce.h -- reduces a per-voxel map over arrays, on the CPU or the GPU.
//
// A reduction is a map functor (float inputs -> double term, in
// PointwiseKernels.h) and a combiner (sum, max, min, min-and-max, here). Terms
// are accumulated in double on both back ends. The CPU back end cuts the
// voxels into fixed chunks, reduces them on the OpenMP threads (vectorised,
// with an AVX2 build of the loop chosen at run time) and combines the chunk
// results in chunk order, so a result depends only on the data, not on the
// run or the thread count; the CUDA back end (cuda/ReduceCUDA.cu) uses
// cub::DeviceReduce::TransformReduce with the same map and combiner.
//
// A combiner C has
//   using T = ...;                        the accumulator (double, or DRange)
//   static T identity();                  the neutral element
//   T lift(double term) const;            one voxel's term as an accumulator
//   T operator()(T a, T b) const;         associative combination
// all PYCA_HOSTDEVICE so that CUB can call them on the device.
//
// NaN: sums propagate NaN by IEEE arithmetic; MaxComb / MinComb / MinMaxComb
// propagate it explicitly (a NaN term makes the result NaN, as NumPy's
// max/min do), independently of the order in which terms are combined.
#ifndef __PYCA_REDUCE_H__
#define __PYCA_REDUCE_H__

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "CpuFeatures.h"
#include "Elementwise.h"

namespace PyCA {
namespace detail {

template <int N>
struct RedArgs {
  const float* in[N];
  size_t n;
};

/// +infinity as a constant expression usable on host and device.
constexpr double kRedInf = __builtin_huge_val();

/// Combiner: sum of terms.
struct SumComb {
  using T = double;
  static constexpr bool kSelects = false;
  static constexpr T identity() { return 0.0; }
  PYCA_HOSTDEVICE T lift(double t) const { return t; }
  PYCA_HOSTDEVICE T operator()(T a, T b) const { return a + b; }
};

/// Combiner: largest term; a NaN in either argument wins. (Written so that
/// the compiler emits max + blend: the accumulator a only feeds the max.)
struct MaxComb {
  using T = double;
  static constexpr bool kSelects = true;  // the result is one of the terms
  static constexpr T identity() { return -kRedInf; }
  PYCA_HOSTDEVICE T lift(double t) const { return t; }
  template <class V>
  PYCA_HOSTDEVICE V operator()(V a, V b) const {
    const V m = b > a ? b : a;
    return b != b ? b : m;
  }
};

/// Combiner: smallest term; a NaN in either argument wins.
struct MinComb {
  using T = double;
  static constexpr bool kSelects = true;
  static constexpr T identity() { return kRedInf; }
  PYCA_HOSTDEVICE T lift(double t) const { return t; }
  template <class V>
  PYCA_HOSTDEVICE V operator()(V a, V b) const {
    const V m = b < a ? b : a;
    return b != b ? b : m;
  }
};

/// The accumulator of MinMaxComb.
struct DRange {
  double lo, hi;
};

/// Combiner: smallest and largest term in one pass; NaN wins in both.
struct MinMaxComb {
  using T = DRange;
  static constexpr bool kSelects = true;
  static constexpr T identity() { return T{kRedInf, -kRedInf}; }
  PYCA_HOSTDEVICE T lift(double t) const { return T{t, t}; }
  PYCA_HOSTDEVICE T operator()(T a, T b) const {
    return T{MinComb()(a.lo, b.lo), MaxComb()(a.hi, b.hi)};
  }
};

template <class Map, int N, size_t... I>
PYCA_HOSTDEVICE PYCA_FORCEINLINE double redVoxel(const Map& m, const RedArgs<N>& a, size_t i,
                                                 std::index_sequence<I...>) {
  return m(a.in[I][i]...);
}

// ---- CPU back end ------------------------------------------------------------
#ifndef __CUDACC__

/// Map::kFloatTerms, false when the map does not declare it: every term is
/// a float value converted to double (RedIdentity, RedAbs).
template <class Map, class = void>
struct FloatTerms : std::false_type {};
template <class Map>
struct FloatTerms<Map, std::enable_if_t<Map::kFloatTerms>> : std::true_type {};

/// The type the CPU accumulates in: the combiner's double, except that a
/// selecting combiner (max, min) over float terms works on floats. That is
/// exact -- the result is one of the terms, and a float converted to double
/// and back is itself -- and twice as many lanes fit a vector register, with
/// no conversion. The GPU, and the combination of the chunk results, use
/// the combiner's own type.
template <class Map, class Comb>
using CpuLane = std::conditional_t<Comb::kSelects && FloatTerms<Map>::value, float, double>;

/// Independent accumulators per chunk: they remove the loop-carried
/// dependency so the compiler vectorises the combination (omp simd) and the
/// operations pipeline. 128 bytes of lanes = four AVX2 registers (16 doubles
/// or 32 floats). The count fixes the order of the additions, hence the
/// result; it is the same for every instruction set below.
template <class L>
constexpr int kRedLanes = int(128 / sizeof(L));

/// CPU reduction of [lo, hi): the one loop of every combiner over double or
/// float lanes. The pointers arrive as separate arguments (kept in registers).
template <class Map, class Comb, class... P>
PYCA_FORCEINLINE typename Comb::T cpuReduceBody(const Map& m, const Comb& comb, size_t lo, size_t hi,
                                                P... in) {
  using L = CpuLane<Map, Comb>;
  constexpr int K = kRedLanes<L>;
  L acc[K];
  for (L& v : acc) v = L(Comb::identity());
  size_t i = lo;
  for (; i + K <= hi; i += K) {
#pragma omp simd
    for (int k = 0; k < K; ++k) acc[k] = comb(acc[k], L(comb.lift(m(in[i + size_t(k)]...))));
  }
  for (; i < hi; ++i) acc[0] = comb(acc[0], L(comb.lift(m(in[i]...))));
  L r = acc[0];
  for (int k = 1; k < K; ++k) r = comb(r, acc[k]);
  return typename Comb::T(r);
}

/// MinMax keeps its low and high accumulators in separate arrays (structure
/// of arrays) so that they vectorise like Min and Max; the arithmetic is
/// MinComb/MaxComb on the same terms as on the GPU.
template <class Map, class... P>
PYCA_FORCEINLINE DRange cpuReduceBody(const Map& m, const MinMaxComb& comb, size_t lo, size_t hi,
                                      P... in) {
  using L = CpuLane<Map, MinMaxComb>;
  constexpr int K = kRedLanes<L>;
  const MinComb cmin;
  const MaxComb cmax;
  L l[K], h[K];
  for (int k = 0; k < K; ++k) {
    l[k] = L(MinComb::identity());
    h[k] = L(MaxComb::identity());
  }
  size_t i = lo;
  for (; i + K <= hi; i += K) {
#pragma omp simd
    for (int k = 0; k < K; ++k) {
      const L t = L(m(in[i + size_t(k)]...));
      l[k] = cmin(l[k], t);
      h[k] = cmax(h[k], t);
    }
  }
  for (; i < hi; ++i) {
    const L t = L(m(in[i]...));
    l[0] = cmin(l[0], t);
    h[0] = cmax(h[0], t);
  }
  DRange r{double(l[0]), double(h[0])};
  for (int k = 1; k < K; ++k) r = comb(r, DRange{double(l[k]), double(h[k])});
  return r;
}

/// Baseline build (SSE2 on x86-64).
template <class Map, class Comb, class... P>
typename Comb::T cpuReduceRangeBase(const Map m, const Comb comb, size_t lo, size_t hi, P... in) {
  return cpuReduceBody(m, comb, lo, hi, in...);
}

#ifdef PYCA_CPU_AVX2_LOOPS
#define PYCA_RED_AVX2 1
/// The same body compiled for AVX2 (chosen at run time, see cpuHasAvx2):
/// twice the vector width for the float->double conversions and the
/// combination. No FMA is enabled and no operation is reassociated, so the
/// result is bit-identical to the baseline build.
template <class Map, class Comb, class... P>
__attribute__((target("avx2"))) typename Comb::T cpuReduceRangeAvx2(const Map m, const Comb comb,
                                                                    size_t lo, size_t hi, P... in) {
  return cpuReduceBody(m, comb, lo, hi, in...);
}
#endif

template <class Map, class Comb, class... P>
typename Comb::T cpuReduceRange(const Map& m, const Comb& comb, size_t lo, size_t hi, P... in) {
#ifdef PYCA_RED_AVX2
  if (cpuUseAvx2()) return cpuReduceRangeAvx2(m, comb, lo, hi, in...);
#endif
  return cpuReduceRangeBase(m, comb, lo, hi, in...);
}

/// Voxels per partial result. The voxels are cut into chunks of this size
/// (the last one shorter) whatever the number of threads; each chunk is
/// reduced by the loop above and the chunk results are combined in chunk
/// order. The result therefore depends only on the data: not on the thread
/// count (OMP_NUM_THREADS, nested regions) nor on which thread took which
/// chunk.
constexpr size_t kRedChunk = 32768;

template <class Map, class Comb, int N, size_t... I>
typename Comb::T cpuReduceImpl(const Map& m, const Comb& comb, const RedArgs<N>& a,
                               std::index_sequence<I...>) {
  using T = typename Comb::T;
  const size_t n = a.n;
  const size_t nChunks = (n + kRedChunk - 1) / kRedChunk;
  auto chunk = [&](size_t c) {
    const size_t lo = c * kRedChunk, hi = lo + kRedChunk < n ? lo + kRedChunk : n;
    return cpuReduceRange(m, comb, lo, hi, a.in[I]...);
  };
  T r = Comb::identity();
  int nt = 1;
#ifdef _OPENMP
  if (nChunks > 1) nt = GetCPUThreads();
#endif
  if (nt == 1) {
    for (size_t c = 0; c < nChunks; ++c) r = comb(r, chunk(c));
    return r;
  }
  std::vector<T> partial(nChunks);
  const long nc = long(nChunks);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (long c = 0; c < nc; ++c) partial[size_t(c)] = chunk(size_t(c));
  for (const T& p : partial) r = comb(r, p);
  return r;
}

template <class Map, class Comb, int N>
typename Comb::T cpuReduce(const Map& m, const Comb& comb, const RedArgs<N>& a) {
  return cpuReduceImpl(m, comb, a, std::make_index_sequence<N>());
}

#endif  // !__CUDACC__

// ---- dispatch ----------------------------------------------------------------

/// Defined in cuda/ReduceCUDA.cu for every line of ReductionOps.def.
template <class Map, class Comb, int N>
typename Comb::T gpuReduce(const Map& m, const Comb& comb, const RedArgs<N>& a, StreamT st);

#ifndef __CUDACC__
/// Reduces m over the arrays on the back end of memory type mt. Zero voxels
/// give the combiner's identity (0 for sums, -inf for Max, +inf for Min); the
/// operator layer decides what that means for its caller.
template <class Map, class Comb, int N>
typename Comb::T reduce(MemoryType mt, const Map& m, const Comb& comb, const RedArgs<N>& a,
                        StreamT st) {
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
#endif

}  // namespace detail
}  // namespace PyCA

#endif
