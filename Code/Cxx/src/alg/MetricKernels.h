// MetricKernels.h -- the kernel bodies of ImageMetrics.cxx, written once for
// the CPU and the GPU (PYCA_HOSTDEVICE): one line of a box filter pass, one
// voxel's share of the mutual-information histogram, one voxel of its
// gradient.
#ifndef __PYCA_METRIC_KERNELS_H__
#define __PYCA_METRIC_KERNELS_H__

#include <cmath>
#include <cstddef>

#include "pycaConst.h"
#include "pycaKernel.h"

namespace PyCA {
namespace kern {

/// One line of a box-filter pass along `axis`, run by forEachVoxel over the
/// grid with extent 1 along that axis (one call per line):
///   out[k] = sum_{j = k - r .. k + r} val(j),
/// val(j) = in[j] inside, and outside: 0 (BC_APPROX: truncated window), the
/// nearest end (BC_CLAMP) or in[j mod n] (BC_WRAP). A running sum in double:
/// O(n + r) per line whatever the radius.
template <int axis, BoundaryCondT bc>
struct BoxLine {
  const float* in;
  float* out;
  int sx, sy;        // the full grid's x and y extents
  int n, r;          // extent along the axis, radius
  ptrdiff_t stride;  // elements between neighbours along the axis

  PYCA_HOSTDEVICE PYCA_FORCEINLINE double val(const float* src, int j) const {
    if (bc == BC_APPROX) return (j < 0 || j >= n) ? 0.0 : double(src[ptrdiff_t(j) * stride]);
    if (bc == BC_CLAMP) {
      const int c = j < 0 ? 0 : (j >= n ? n - 1 : j);
      return double(src[ptrdiff_t(c) * stride]);
    }
    int w = j % n;  // BC_WRAP
    if (w < 0) w += n;
    return double(src[ptrdiff_t(w) * stride]);
  }

  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t) const {
    const size_t base = size_t(x) + size_t(sx) * (size_t(y) + size_t(sy) * size_t(z));
    const float* src = in + base;
    float* dst = out + base;
    double s = 0.0;
    for (int j = -r; j <= r; ++j) s += val(src, j);
    dst[0] = float(s);
    for (int k = 1; k < n; ++k) {
      const int hi = k + r, lo = k - 1 - r;
      if (lo >= 0 && hi < n)  // both taps inside: no boundary rule (the same value as val)
        s += double(src[ptrdiff_t(hi) * stride]) - double(src[ptrdiff_t(lo) * stride]);
      else
        s += val(src, hi) - val(src, lo);
      dst[ptrdiff_t(k) * stride] = float(s);
    }
  }
};

/// The cubic B-spline B (support |x| < 2, a partition of unity: (4 - 6x^2 +
/// 3|x|^3) / 6 for |x| < 1, (2 - |x|)^3 / 6 for 1 <= |x| < 2) at the four taps
/// of a sample at fraction u in [0, 1) past its bin (the taps floor(t) - 1 ..
/// floor(t) + 2): w[k] = B(k - 1 - u), each piece's polynomial in u.
PYCA_HOSTDEVICE PYCA_FORCEINLINE void bspline3Taps(float u, float* w) {
  const float u2 = u * u, u3 = u2 * u, v = 1.f - u;
  w[0] = v * v * v * (1.f / 6.f);
  w[1] = (4.f - 6.f * u2 + 3.f * u3) * (1.f / 6.f);
  w[2] = (1.f + 3.f * u + 3.f * u2 - 3.f * u3) * (1.f / 6.f);
  w[3] = u3 * (1.f / 6.f);
}
/// The derivatives d[k] = B'(k - 1 - u), k = 0..3, at the same taps.
PYCA_HOSTDEVICE PYCA_FORCEINLINE void bspline3DerivTaps(float u, float* d) {
  const float v = 1.f - u;
  d[0] = 0.5f * v * v;
  d[1] = u * (2.f - 1.5f * u);
  d[2] = v * (1.5f * v - 2.f);
  d[3] = -0.5f * u * u;
}

/// The continuous bin index of a value: t = 2 + (clamp(v, lo, hi) - lo) /
/// delta (NaN maps to lo). inside(v): v in [lo, hi] (the map's derivative
/// is 1 / delta there, 0 outside).
struct ParzenMap {
  float lo, hi, invDelta;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float index(float v) const {
    const float c = fminf(fmaxf(v, lo), hi);
    return 2.f + (c - lo) * invDelta;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE bool inside(float v) const { return v >= lo && v <= hi; }
};

/// Voxel i's contributions B(a - tf) B(b - tm) to the joint histogram
/// (nb = bins + 4 per side), given to add(bin, weight) (a plain sum on the
/// CPU, an atomic one on the GPU). Masked-out voxels add nothing.
template <class Add>
PYCA_HOSTDEVICE PYCA_FORCEINLINE void miHistogramVoxel(const float* f, const float* m, const float* mask,
                                                       const ParzenMap& pf, const ParzenMap& pm, int nb,
                                                       size_t i, Add& add) {
  if (mask && !(mask[i] > 0.5f)) return;
  const float tf = pf.index(f[i]), tm = pm.index(m[i]);
  const float fa = floorf(tf), fb = floorf(tm);
  const int a0 = int(fa) - 1, b0 = int(fb) - 1;
  float wa[4], wb[4];
  bspline3Taps(tf - fa, wa);
  bspline3Taps(tm - fb, wb);
  for (int ka = 0; ka < 4; ++ka) {
    if (wa[ka] == 0.f) continue;
    const int row = (a0 + ka) * nb + b0;
    for (int kb = 0; kb < 4; ++kb)
      if (wb[kb] != 0.f) add(row + kb, double(wa[ka]) * double(wb[kb]));
  }
}

/// d MI / d m(x) = (1/N) sum_{a,b} B(a - tf) (-B'(b - tm)) / delta_m * L(a, b),
/// L = log p / (pF pM): `scale` = -invDelta_m / N.
struct MIGradientOp {
  const float* f;
  const float* m;
  const float* mask;
  const float* logRatio;  // nb x nb
  float* out;
  ParzenMap pf, pm;
  int nb;
  float scale;

  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i) const {
    const float v = m[i];
    if ((mask && !(mask[i] > 0.5f)) || !pm.inside(v)) {
      out[i] = 0.f;
      return;
    }
    const float tf = pf.index(f[i]), tm = pm.index(v);
    const float fa = floorf(tf), fb = floorf(tm);
    const int a0 = int(fa) - 1, b0 = int(fb) - 1;
    float wa[4], db[4];
    bspline3Taps(tf - fa, wa);
    bspline3DerivTaps(tm - fb, db);
    float s = 0.f;
    for (int ka = 0; ka < 4; ++ka) {
      const float* row = logRatio + (a0 + ka) * nb + b0;
      const float t = db[0] * row[0] + db[1] * row[1] + db[2] * row[2] + db[3] * row[3];
      s += wa[ka] * t;
    }
    out[i] = s * scale;
  }
};

}  // namespace kern
}  // namespace PyCA

#endif
