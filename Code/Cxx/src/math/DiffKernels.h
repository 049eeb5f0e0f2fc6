// DiffKernels.h -- per-voxel bodies of the differential operators (finite
// differences, gradients, divergences, Jacobians, the Lie-algebra operators)
// and of the small per-voxel field and grid utilities. The differences all
// come from Stencil.h; VoxelLaunch.h runs these on the CPU and the GPU.
#ifndef __PYCA_DIFF_KERNELS_H__
#define __PYCA_DIFF_KERNELS_H__

#include <cmath>
#include <cstddef>

#include "Stencil.h"
#include "interp.h"
#include "pycaKernel.h"

namespace PyCA {
namespace kern {

using detail::Diff3;
using detail::Stencil;
using detail::stencilAt;

/// out = D_dim a (squared with sqr; added to out with accum).
template <DiffT diff, BoundaryCondT bc>
struct FiniteDiffOp {
  Diff3<diff, bc> d;
  const float* a;
  float* out;
  int dim;
  bool sqr, accum;
  static constexpr bool kSplitX = true;
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float r = d.template along<in>(dim, a, x, y, z, i);
    if (sqr) r *= r;
    out[i] = accum ? out[i] + r : r;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
};

/// (ox, oy, oz) = grad a.
template <DiffT diff, BoundaryCondT bc>
struct GradientOp {
  Diff3<diff, bc> d;
  const float* a;
  float *ox, *oy, *oz;
  static constexpr bool kSplitX = true;
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float gx, gy, gz;
    d.template grad<in>(a, x, y, z, i, gx, gy, gz);
    ox[i] = gx;
    oy[i] = gy;
    oz[i] = gz;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
};

/// out = |grad a|.
template <DiffT diff, BoundaryCondT bc>
struct GradMagOp {
  Diff3<diff, bc> d;
  const float* a;
  float* out;
  static constexpr bool kSplitX = true;
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float gx, gy, gz;
    d.template grad<in>(a, x, y, z, i, gx, gy, gz);
    out[i] = sqrtf(gx * gx + gy * gy + gz * gz);
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
};

/// out = sum_d D_d f_d.
template <DiffT diff, BoundaryCondT bc>
struct DivergenceOp {
  Diff3<diff, bc> d;
  const float *fx, *fy, *fz;
  float* out;
  static constexpr bool kSplitX = true;
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    out[i] = d.template dx<in>(fx, x, i) + d.dy(fy, y, i) + d.dz(fz, z, i);
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
};

/// Masked difference along one axis at position p of n (stride in memory):
/// neighbours outside the mask are replaced by the centre value.
template <DiffT diff, BoundaryCondT bc>
PYCA_HOSTDEVICE PYCA_FORCEINLINE float maskedDiff(const float* a, const float* m, size_t i, int p, int n, ptrdiff_t stride,
                                        float invSp) {
  if (n <= 1) return 0.f;
  // neighbour positions (BC_CLAMP / BC_APPROX clamp them)
  const int pp = p + 1 > n - 1 ? n - 1 : p + 1;
  const int pm = p - 1 < 0 ? 0 : p - 1;
  const float c = a[i];
  bool vp = m[i + (pp - p) * stride] != 0.f;
  bool vm = m[i + (pm - p) * stride] != 0.f;
  if (bc == BC_APPROX) {
    vp = vp && p < n - 1;
    vm = vm && p > 0;
  }
  const float fp = vp ? a[i + (pp - p) * stride] : c;
  const float fm = vm ? a[i + (pm - p) * stride] : c;
  if (diff == DIFF_FORWARD) return (fp - c) * invSp;
  if (diff == DIFF_BACKWARD) return (c - fm) * invSp;
  if (bc == BC_APPROX) {
    if (vp && vm) return (fp - fm) * 0.5f * invSp;
    if (vp) return (fp - c) * invSp;
    if (vm) return (c - fm) * invSp;
    return 0.f;
  }
  return (fp - fm) * 0.5f * invSp;
}

template <DiffT diff, BoundaryCondT bc>
struct GradientMaskOp {
  const float *a, *m;
  int sx, sy, sz;
  float ix, iy, iz;
  float *ox, *oy, *oz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    if (m[i] == 0.f) {
      ox[i] = oy[i] = oz[i] = 0.f;
      return;
    }
    ox[i] = maskedDiff<diff, bc>(a, m, i, x, sx, 1, ix);
    oy[i] = maskedDiff<diff, bc>(a, m, i, y, sy, sx, iy);
    oz[i] = maskedDiff<diff, bc>(a, m, i, z, sz, ptrdiff_t(sx) * sy, iz);
  }
};

/// Backward where speed > 0, forward elsewhere (BC_CLAMP), along dim.
struct UpwindDiffOp {
  Diff3<DIFF_FORWARD, BC_CLAMP> fwd;
  Diff3<DIFF_BACKWARD, BC_CLAMP> bwd;
  const float *a, *speed;
  float* out;
  int dim;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    out[i] = speed[i] > 0.f ? bwd.along(dim, a, x, y, z, i) : fwd.along(dim, a, x, y, z, i);
  }
};

/// Forward and backward differences at p of n where the missing one at an
/// edge is replaced by the other (one-sided), 0 along an axis of extent 1.
PYCA_HOSTDEVICE PYCA_FORCEINLINE void fwdBwd(const float* a, size_t i, int p, int n, ptrdiff_t stride, float invSp, float& f,
                                   float& b) {
  if (n <= 1) {
    f = b = 0.f;
    return;
  }
  const float c = a[i];
  const float fw = p < n - 1 ? (a[i + stride] - c) * invSp : 0.f;
  const float bw = p > 0 ? (c - a[i - stride]) * invSp : 0.f;
  f = p < n - 1 ? fw : bw;
  b = p > 0 ? bw : fw;
}

/// speed * |grad a| with Osher-Sethian upwinding.
struct UpwindGradMagOp {
  const float *a, *speed;
  int sx, sy, sz;
  float ix, iy, iz;
  float* out;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const float s = speed[i];
    float f[3], b[3];
    fwdBwd(a, i, x, sx, 1, ix, f[0], b[0]);
    fwdBwd(a, i, y, sy, sx, iy, f[1], b[1]);
    fwdBwd(a, i, z, sz, ptrdiff_t(sx) * sy, iz, f[2], b[2]);
    float sum = 0.f;
    for (int d = 0; d < 3; ++d) {
      const float bp = b[d] > 0.f ? b[d] : 0.f, bn = b[d] < 0.f ? b[d] : 0.f;
      const float fp = f[d] > 0.f ? f[d] : 0.f, fn = f[d] < 0.f ? f[d] : 0.f;
      sum += s < 0.f ? bp * bp + fn * fn : bn * bn + fp * fp;
    }
    out[i] = sqrtf(sum) * s;
  }
};

/// Gradients of the three components of h (Jacobian rows).
template <DiffT diff, BoundaryCondT bc>
struct JacobianOp {
  Diff3<diff, bc> d;
  const float *hx, *hy, *hz;
  float *X[3], *Y[3], *Z[3];  // X[c] = component c of the gradient of h.x
  static constexpr bool kSplitX = true;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float J[3][3];
    detail::jacobianAt<in>(d, hx, hy, hz, x, y, z, i, J);
    for (int c = 0; c < 3; ++c) {
      X[c][i] = J[0][c];
      Y[c][i] = J[1][c];
      Z[c][i] = J[2][c];
    }
  }
};

/// |Dv|_F^2: the sum of the squared entries of the Jacobian of v (the
/// derivatives scaled by d's factors, as JacobianOp), one pass, no rows stored.
template <DiffT diff, BoundaryCondT bc>
struct JacNormSqrOp {
  Diff3<diff, bc> d;
  const float *vx, *vy, *vz;
  float* out;
  static constexpr bool kSplitX = true;
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float J[3][3];
    detail::jacobianAt<in>(d, vx, vy, vz, x, y, z, i, J);
    float s = 0.f;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) s += J[r][c] * J[r][c];
    out[i] = s;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
};

/// det of the Jacobian of h, the derivatives scaled by d's factors (1/spacing:
/// the legacy JacDetH; 1: JacDetHVoxel); 2x2 when the grid is 2-D (kSlice:
/// a compile-time choice, so that the CPU row loop vectorises; a run-time
/// select of det2 and det3 made it 3.8x slower).
template <DiffT diff, BoundaryCondT bc, bool kSlice>
struct JacDetHOp {
  Diff3<diff, bc> d;
  const float *hx, *hy, *hz;
  float* out;
  static constexpr bool kSplitX = true;
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float J[3][3];
    detail::jacobianAt<in>(d, hx, hy, hz, x, y, z, i, J);
    out[i] = kSlice ? detail::det2(J) : detail::det3(J);
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
};

/// Determinants from three gradient fields (rows): kMode 0: scale * det J
/// (2x2 in 2-D; scale 1 for JacDetH, the voxel volume for JacDetHVoxel),
/// 1: det(I + J), 2: det(I - J). kMode and kSlice are compile-time choices,
/// so that the CPU row loop vectorises (run-time ones made it 1.5-3x slower).
template <int kMode, bool kSlice>
struct JacDetGradsOp {
  const float *X[3], *Y[3], *Z[3];
  float* out;
  float scale;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i) const {
    float J[3][3];
    for (int c = 0; c < 3; ++c) {
      J[0][c] = X[c][i];
      J[1][c] = Y[c][i];
      J[2][c] = Z[c][i];
    }
    if (kMode == 0) {
      out[i] = scale * (kSlice ? detail::det2(J) : detail::det3(J));
      return;
    }
    const float s = kMode == 1 ? 1.f : -1.f;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) J[r][c] = (r == c ? 1.f : 0.f) + s * J[r][c];
    out[i] = detail::det3(J);
  }
};

/// The Lie-algebra operators, central/clamp differences in voxel units:
/// kind 0 JacobianXY  Z_i = sum_j d_j X_i Y_j
///      1 JacobianXtY Z_i = sum_j d_i X_j Y_j
///      2 AdInf       Z = DX Y - DY X
///      3 DivTensor   Z_i = sum_j d_j (X_i Y_j)
///      4 CoAdInf     Z_i = sum_j d_i X_j Y_j + d_j (Y_i X_j)   (Y = m)
/// The kind is a template parameter so that each operator's x loop is
/// branch-free (and vectorises on the CPU).
template <int kind>
struct LieOp {
  detail::VoxelCentral d;
  const float *X[3], *Y[3];
  float* Z[3];
  /// d_j of the product p q at the voxel: (p[ip] q[ip] - p[im] q[im]) w.
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float dProd(const float* p, const float* q, int j, int x, int y, int z,
                                               size_t i) const {
    const int pos = j == 0 ? x : (j == 1 ? y : z);
    const int n = j == 0 ? d.sx : (j == 1 ? d.sy : d.sz);
    const ptrdiff_t stride = j == 0 ? 1 : (j == 1 ? ptrdiff_t(d.sx) : ptrdiff_t(d.sx) * d.sy);
    const Stencil s = (in && j == 0) ? detail::stencilInterior<DIFF_CENTRAL>(pos, 1.f)
                                     : stencilAt<DIFF_CENTRAL, BC_CLAMP>(pos, n, 1.f);
    const float* pc = p + i;
    const float* qc = q + i;
    const ptrdiff_t op = (s.ip - pos) * stride, om = (s.im - pos) * stride;
    return (pc[op] * qc[op] - pc[om] * qc[om]) * s.w;
  }
  static constexpr bool kSplitX = true;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float JX[3][3];
    detail::jacobianAt<in>(d, X[0], X[1], X[2], x, y, z, i, JX);
    float r[3];
    if constexpr (kind == 0) {
      for (int a = 0; a < 3; ++a) r[a] = JX[a][0] * Y[0][i] + JX[a][1] * Y[1][i] + JX[a][2] * Y[2][i];
    } else if constexpr (kind == 1 || kind == 4) {
      for (int a = 0; a < 3; ++a) r[a] = JX[0][a] * Y[0][i] + JX[1][a] * Y[1][i] + JX[2][a] * Y[2][i];
      if constexpr (kind == 4)
        for (int a = 0; a < 3; ++a)
          r[a] += dProd<in>(Y[a], X[0], 0, x, y, z, i) + dProd<in>(Y[a], X[1], 1, x, y, z, i) +
                  dProd<in>(Y[a], X[2], 2, x, y, z, i);
    } else if constexpr (kind == 2) {
      float JY[3][3];
      detail::jacobianAt<in>(d, Y[0], Y[1], Y[2], x, y, z, i, JY);
      for (int a = 0; a < 3; ++a)
        r[a] = JX[a][0] * Y[0][i] + JX[a][1] * Y[1][i] + JX[a][2] * Y[2][i] -
               (JY[a][0] * X[0][i] + JY[a][1] * X[1][i] + JY[a][2] * X[2][i]);
    } else {
      for (int a = 0; a < 3; ++a)
        r[a] = dProd<in>(X[a], Y[0], 0, x, y, z, i) + dProd<in>(X[a], Y[1], 1, x, y, z, i) +
               dProd<in>(X[a], Y[2], 2, x, y, z, i);
    }
    Z[0][i] = r[0];
    Z[1][i] = r[1];
    Z[2][i] = r[2];
  }
};

// ---- pointwise field utilities ----------------------------------------------------

/// kind 0: |f|, 1: |f|^2, 2: f . g.
struct FieldNormOp {
  const float *fx, *fy, *fz, *gx, *gy, *gz;
  float* out;
  int kind;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i) const {
    const float a = fx[i], b = fy[i], c = fz[i];
    if (kind == 2) {
      out[i] = a * gx[i] + b * gy[i] + c * gz[i];
      return;
    }
    const float s = a * a + b * b + c * c;
    out[i] = kind == 0 ? sqrtf(s) : s;
  }
};

/// NormalizeSafe (limit = eps, unit = true): f / |f|, 0 where |f| <= eps;
/// ReprojectToUnitVec (limit = 1, unit = false): f / |f| where |f| > 1, else f.
struct NormalizeOp {
  const float *fx, *fy, *fz;
  float *ox, *oy, *oz;
  float limit;
  bool unit;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i) const {
    const float a = fx[i], b = fy[i], c = fz[i];
    const float len = sqrtf(a * a + b * b + c * c);
    const bool big = len > limit;
    const float k = big ? 1.f / len : (unit ? 0.f : 1.f);
    ox[i] = a * k;
    oy[i] = b * k;
    oz[i] = c * k;
  }
};

// ---- grid utilities -----------------------------------------------------------------

/// out(x) = sum_k K(k) in(clamp(x + k - r)) (correlation, CLAMP).
struct ConvolveOp {
  const float *in, *k;
  int sx, sy, sz, kx, ky, kz;
  float* out;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const int rx = kx / 2, ry = ky / 2, rz = kz / 2;
    float s = 0.f;
    for (int c = 0; c < kz; ++c) {
      const int zz = clampIndex(z + c - rz, sz);
      for (int b = 0; b < ky; ++b) {
        const int yy = clampIndex(y + b - ry, sy);
        const size_t row = size_t(sx) * (size_t(yy) + size_t(sy) * size_t(zz));
        const float* kr = k + size_t(kx) * (size_t(b) + size_t(ky) * size_t(c));
        for (int a = 0; a < kx; ++a) s += kr[a] * in[row + size_t(clampIndex(x + a - rx, sx))];
      }
    }
    out[i] = s;
  }
};

/// Copies between two grids with an offset: out(x) = in(x + off) where
/// inside in, else fill (SubVol, fill = 0), or (SetSubVol_I, over the input
/// grid) out(x + off) = in(x) where inside out.
struct OffsetCopyOp {
  const float* in[3];
  float* out[3];
  int isx, isy, isz, osx, osy, osz;
  int ox, oy, oz;
  int k;         // components
  bool scatter;  // SetSubVol_I: iterate the input grid
  // The shifted index in 64 bits: any int offset (the legacy took them
  // unchecked) is defined behaviour and simply lands outside.
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    if (scatter) {
      const long long tx = (long long)x + ox, ty = (long long)y + oy, tz = (long long)z + oz;
      if (!isInside3D(tx, ty, tz, osx, osy, osz)) return;
      const size_t j = size_t(tx) + size_t(osx) * (size_t(ty) + size_t(osy) * size_t(tz));
      for (int c = 0; c < k; ++c) out[c][j] = in[c][i];
      return;
    }
    const long long sx = (long long)x + ox, sy = (long long)y + oy, sz = (long long)z + oz;
    const bool inside = isInside3D(sx, sy, sz, isx, isy, isz);
    const size_t j = inside ? size_t(sx) + size_t(isx) * (size_t(sy) + size_t(isy) * size_t(sz)) : 0;
    for (int c = 0; c < k; ++c) out[c][i] = inside ? in[c][j] : 0.f;
  }
};

/// ShiftCoordinate: over the input grid, dir: out(z, x, y) = in(x, y, z)
/// (out size (sz, sx, sy)), else out(y, z, x) = in(x, y, z).
struct ShiftCoordOp {
  const float* in;
  float* out;
  int sx, sy, sz;
  bool dir;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const size_t j = dir ? size_t(z) + size_t(sz) * (size_t(x) + size_t(sx) * size_t(y))
                         : size_t(y) + size_t(sy) * (size_t(z) + size_t(sz) * size_t(x));
    out[j] = in[i];
  }
};

}  // namespace kern
}  // namespace PyCA

#endif
