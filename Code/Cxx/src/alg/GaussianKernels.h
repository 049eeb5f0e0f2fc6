// GaussianKernels.h -- the per-voxel body of one pass of the separable
// Gaussian filter (GaussianFilter.cxx runs it with forEachVoxel on the CPU
// and the GPU), plus the CPU row loop it uses on AVX2 machines.
#ifndef __PYCA_GAUSSIAN_KERNELS_H__
#define __PYCA_GAUSSIAN_KERNELS_H__

#include <cstddef>

#include "pycaKernel.h"

namespace PyCA {
namespace kern {

/// One 1-D normalised convolution along `axis` (0 = x, 1 = y, 2 = z):
///   out(p) = inv[p_a] * sum_{k = lo..hi} w[k] in(p + k e_a),
/// lo = max(-r, -p_a), hi = min(r, n - 1 - p_a): the taps inside the grid,
/// added from lo to hi; inv[p_a] = 1 / (sum of those weights).
template <int axis>
struct GaussPass {
  const float* in;
  float* out;
  const float* w;    // the centre weight: w[-r] .. w[r]
  const float* inv;  // n factors, one per position along the axis
  int r, n;          // radius, extent along the axis
  ptrdiff_t stride;  // elements between neighbours along the axis

  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const int p = axis == 0 ? x : (axis == 1 ? y : z);
    const int lo = p < r ? -p : -r;
    const int hi = n - 1 - p < r ? n - 1 - p : r;
    const float* src = in + i;
    float s = 0.f;
    for (int k = lo; k <= hi; ++k) s += w[k] * src[ptrdiff_t(k) * stride];
    out[i] = s * inv[p];
  }
};

/// CPU form of the same sum for m consecutive voxels along x whose taps
/// lo..hi are all inside the grid (every voxel of a y or z row, the
/// interior of an x row): taps outermost, x innermost (contiguous vector
/// loads and stores), the same additions in the same order as the body.
PYCA_FORCEINLINE void gaussTapsRow(const float* src, ptrdiff_t stride, const float* w, int lo, int hi,
                                   float scale, float* o, int m) {
  constexpr int kChunk = 512;
  float acc[kChunk];
  for (int x0 = 0; x0 < m; x0 += kChunk) {
    const int c = m - x0 < kChunk ? m - x0 : kChunk;
    const float* s0 = src + x0;
    {
      const float wk = w[lo];
      const float* sk = s0 + ptrdiff_t(lo) * stride;
#pragma omp simd
      for (int j = 0; j < c; ++j) acc[j] = wk * sk[j];
    }
    for (int k = lo + 1; k <= hi; ++k) {
      const float wk = w[k];
      const float* sk = s0 + ptrdiff_t(k) * stride;
#pragma omp simd
      for (int j = 0; j < c; ++j) acc[j] += wk * sk[j];
    }
    float* ox = o + x0;
#pragma omp simd
    for (int j = 0; j < c; ++j) ox[j] = acc[j] * scale;
  }
}

}  // namespace kern
}  // namespace PyCA

#endif
