// VoxelLaunch.h -- runs a per-voxel functor fn(x, y, z, i) over a grid, on
// the CPU (OpenMP over rows, a vectorised loop along x, an AVX2 build chosen
// at run time) or on the GPU (a 2-D grid-stride kernel), with the same
// functor: the kernel body of every deformation and differential operator is
// written once.
//
// A voxel functor is a small struct of pointers and scalars with
//   PYCA_HOSTDEVICE void operator()(int x, int y, int z, size_t i) const;
// where i = x + sx * (y + sy * z). It must not depend on the order in which
// voxels are visited (voxels run concurrently).
//
// The sources that launch voxel functors are compiled by nvcc in CUDA builds
// (CMake marks them LANGUAGE CUDA), so the GPU kernel below is instantiated
// for exactly the functors they use; g++ compiles them in CPU-only builds.
#ifndef __PYCA_VOXEL_LAUNCH_H__
#define __PYCA_VOXEL_LAUNCH_H__

#include <cstddef>
#include <string>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "CpuFeatures.h"
#include "Elementwise.h"
#include "Vec3D.h"
#include "conditionMacro.h"
#include "estream.h"
#include "mem.h"
#include "pycaKernel.h"

#if defined(CUDA_ENABLED) && !defined(__CUDACC__)
#error "sources that include VoxelLaunch.h must be compiled as CUDA in CUDA builds (see Code/Cxx/CMakeLists.txt)"
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define PYCA_X86_DISPATCH 1
#define PYCA_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define PYCA_TARGET_AVX2
#endif

namespace PyCA {
namespace detail {

/// A functor with `static constexpr bool kSplitX = true` also provides
///   template <bool interiorX> void at(int x, int y, int z, size_t i) const;
/// and the CPU rows run at<false> on the two edge voxels and at<true> on the
/// interior ones (0 < x < sx - 1): stencils along x then have constant
/// offsets and the interior loop vectorises with contiguous loads.
template <class Fn, class = void>
struct SplitsX : std::false_type {};
template <class Fn>
struct SplitsX<Fn, std::void_t<decltype(Fn::kSplitX)>> : std::integral_constant<bool, Fn::kSplitX> {};

/// One row (y, z) of voxels: x in [0, nx), i = base + x. The functor is taken
/// by value so that its pointers live in registers and the loop vectorises.
template <class Fn>
PYCA_FORCEINLINE void voxelRowBody(const Fn& fn, int y, int z, size_t base, int nx) {
  if constexpr (SplitsX<Fn>::value) {
    if (nx <= 2) {
      for (int x = 0; x < nx; ++x) fn.template at<false>(x, y, z, base + size_t(x));
      return;
    }
    fn.template at<false>(0, y, z, base);
#pragma omp simd
    for (int x = 1; x < nx - 1; ++x) fn.template at<true>(x, y, z, base + size_t(x));
    fn.template at<false>(nx - 1, y, z, base + size_t(nx - 1));
  } else {
#pragma omp simd
    for (int x = 0; x < nx; ++x) fn(x, y, z, base + size_t(x));
  }
}
template <class Fn>
void voxelRow(const Fn fn, int y, int z, size_t base, int nx) {
  voxelRowBody(fn, y, z, base, nx);
}
#ifdef PYCA_X86_DISPATCH
template <class Fn>
PYCA_TARGET_AVX2 void voxelRowAvx2(const Fn fn, int y, int z, size_t base, int nx) {
  voxelRowBody(fn, y, z, base, nx);
}
#endif

/// Hook for a hand-vectorised CPU row of a particular functor (see
/// cpu/TriLerpAvx2.h): a specialisation with kAvx2 = true provides
/// static void avx2(const Fn&, int y, int z, size_t base, int nx).
template <class Fn>
struct CpuRow {
  static constexpr bool kAvx2 = false;
};

template <class Fn>
inline void voxelRowDispatch(const Fn& fn, bool avx2, int y, int z, size_t base, int nx) {
#ifdef PYCA_X86_DISPATCH
  if constexpr (CpuRow<Fn>::kAvx2) {
    if (avx2) {
      CpuRow<Fn>::avx2(fn, y, z, base, nx);
      return;
    }
  }
  if (avx2) {
    voxelRowAvx2(fn, y, z, base, nx);
    return;
  }
#endif
  (void)avx2;
  voxelRow(fn, y, z, base, nx);
}

/// CPU back end: rows split statically over the OpenMP team.
template <class Fn>
void cpuForEachVoxel(const Fn& fn, int sx, int sy, int sz) {
  const long long rows = (long long)sy * sz;
  const size_t n = size_t(rows) * size_t(sx);
  const bool avx2 = cpuUseAvx2();
  if (n < kOmpMinVoxels) {
    for (long long r = 0; r < rows; ++r)
      voxelRowDispatch(fn, avx2, int(r % sy), int(r / sy), size_t(r) * size_t(sx), sx);
    return;
  }
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(static)
  for (long long r = 0; r < rows; ++r)
    voxelRowDispatch(fn, avx2, int(r % sy), int(r / sy), size_t(r) * size_t(sx), sx);
}

#ifdef __CUDACC__
/// GPU back end: threads along x (blocks of 32 x 8), a grid-stride loop over
/// the rows (y, z).
template <class Fn>
__global__ void voxelKernel(const Fn fn, int sx, int sy, int sz) {
  const int x = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (x >= sx) return;
  const long long rows = (long long)sy * sz;
  for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
       r += (long long)gridDim.y * blockDim.y) {
    const int y = int(r % sy), z = int(r / sy);
    fn(x, y, z, size_t(r) * size_t(sx) + size_t(x));
  }
}

inline void checkLaunch(const char* file, int line) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw PyCAException(file, line, std::string("CUDA kernel launch failed: ") + cudaGetErrorString(e));
}

template <class Fn>
void gpuForEachVoxel(const Fn& fn, int sx, int sy, int sz, StreamT st) {
  const dim3 block(32, 8);
  const long long rows = (long long)sy * sz;
  const unsigned gx = unsigned((sx + 31) / 32);
  long long gy = (rows + 7) / 8;
  if (gy > 65535) gy = 65535;
  voxelKernel<<<dim3(gx, unsigned(gy)), block, 0, reinterpret_cast<cudaStream_t>(st)>>>(fn, sx, sy, sz);
  checkLaunch(__FILE__, __LINE__);
}
#endif

/// Runs fn over every voxel of a grid of the given size, on the back end of
/// memory type mt.
template <class Fn>
void forEachVoxel(MemoryType mt, const Fn& fn, const Vec3Di& size, StreamT st) {
  if (size.x <= 0 || size.y <= 0 || size.z <= 0) return;
  if (mt == MEM_DEVICE) {
#ifdef __CUDACC__
    gpuForEachVoxel(fn, size.x, size.y, size.z, st);
#else
    throwGpuNotCompiled(__FILE__, __LINE__);
#endif
  } else {
    (void)st;
    cpuForEachVoxel(fn, size.x, size.y, size.z);
  }
}

}  // namespace detail
}  // namespace PyCA

#endif
