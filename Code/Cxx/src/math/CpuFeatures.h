// CpuFeatures.h -- run-time CPU feature checks for the loops compiled twice
// (baseline and AVX2) by the CPU back end.
#ifndef __PYCA_CPU_FEATURES_H__
#define __PYCA_CPU_FEATURES_H__

/// Defined where the CPU back end builds AVX2 copies of its loops (the
/// reductions of Reduce.h; -DPYCA_NO_AVX2_DISPATCH turns them off).
#if defined(__GNUC__) && defined(__x86_64__) && !defined(PYCA_NO_AVX2_DISPATCH)
#define PYCA_CPU_AVX2_LOOPS 1
#endif

namespace PyCA {
namespace detail {

/// True if the CPU runs AVX2 (checked once; false off x86).
inline bool cpuHasAvx2() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

/// The loops chosen at run time: 0 auto, 1 baseline, 2 AVX2 (see
/// SetCPUDispatch in MemAlloc.h). One instance across the library.
int cpuDispatchMode();

/// True if the AVX2 loops are to run: the CPU has AVX2 and the baseline
/// loops are not forced.
inline bool cpuUseAvx2() { return cpuDispatchMode() != 1 && cpuHasAvx2(); }

}  // namespace detail
}  // namespace PyCA

#endif
