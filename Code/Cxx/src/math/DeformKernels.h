// DeformKernels.h -- per-voxel bodies of the interpolation-based operators
// (ApplyH/V/VInv, ComposeTranslation, Compose*, Resample*, UpdateInverse,
// FixedPointInverse, CoAd), built from three small parts:
//
//   a coordinate source  where output voxel (x, y, z, i) samples:
//       AtH   h(i)                        (H-field, voxel coordinates)
//       AtV   (x, y, z) + k * v(i)        (k = +-delta / spacing, or +-1)
//       AtLin (ax x + bx, ay y + by, az z + bz)   (translations, resampling)
//   a sampler            the interpolated value there (interp.h):
//       ImageSampler<bg, interp, Index>, FieldSampler<bg, Index>
//   a post step          for fields: none, p + k * value (ComposeVH), or a
//                        per-component scale (Resample rescaleVector)
//
// WarpImage and WarpField combine them into the voxel functors that
// VoxelLaunch.h runs on the CPU and the GPU.
#ifndef __PYCA_DEFORM_KERNELS_H__
#define __PYCA_DEFORM_KERNELS_H__

#include <cstddef>

#include "Stencil.h"
#include "interp.h"
#include "pycaKernel.h"

namespace PyCA {
namespace kern {

struct P3 {
  float x, y, z;
};

// ---- coordinate sources -------------------------------------------------------------

struct AtH {
  const float *hx, *hy, *hz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE P3 operator()(int, int, int, size_t i) const {
    return P3{hx[i], hy[i], hz[i]};
  }
};

struct AtV {
  const float *vx, *vy, *vz;
  float kx, ky, kz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE P3 operator()(int x, int y, int z, size_t i) const {
    return P3{float(x) + kx * vx[i], float(y) + ky * vy[i], float(z) + kz * vz[i]};
  }
};

struct AtLin {
  float ax, bx, ay, by, az, bz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE P3 operator()(int x, int y, int z, size_t) const {
    return P3{ax * float(x) + bx, ay * float(y) + by, az * float(z) + bz};
  }
};

/// (x, y, z) - w(c(i)): the point Id - w o c, w sampled by S (UpdateInverse).
template <class S>
struct AtIdMinusSampled {
  const float *cx, *cy, *cz;
  S w;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE P3 operator()(int x, int y, int z, size_t i) const;
};

// ---- samplers -----------------------------------------------------------------------

template <BackgroundStrategy bg, InterpT interp, class Index>
struct ImageSampler {
  const float* img;
  int sx, sy, sz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float operator()(P3 p) const {
    return point_interp<bg, interp, Index>(img, p.x, p.y, p.z, sx, sy, sz);
  }
};

template <BackgroundStrategy bg, class Index>
struct FieldSampler {
  const float *fx, *fy, *fz;
  int sx, sy, sz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(P3 p, float& a, float& b, float& c) const {
    triLerp<bg, Index>(a, b, c, fx, fy, fz, p.x, p.y, p.z, sx, sy, sz);
  }
};

template <class S>
PYCA_HOSTDEVICE PYCA_FORCEINLINE P3 AtIdMinusSampled<S>::operator()(int x, int y, int z, size_t i) const {
  float a, b, c;
  w(P3{cx[i], cy[i], cz[i]}, a, b, c);
  return P3{float(x) - a, float(y) - b, float(z) - c};
}

// ---- post steps (fields) ------------------------------------------------------------

struct PostNone {
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(P3, float&, float&, float&) const {}
};
/// value := p + k * value (ComposeVH: g(x) + delta v(g(x)) / sp).
struct PostAddPoint {
  float kx, ky, kz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(P3 p, float& a, float& b, float& c) const {
    a = p.x + kx * a;
    b = p.y + ky * b;
    c = p.z + kz * c;
  }
};
/// value := value * k (Resample with rescaleVector).
struct PostScale {
  float kx, ky, kz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(P3, float& a, float& b, float& c) const {
    a *= kx;
    b *= ky;
    c *= kz;
  }
};

// ---- voxel functors -----------------------------------------------------------------

/// out(x) = sample(at(x)).
template <class At, class Sampler>
struct WarpImage {
  At at;
  Sampler s;
  float* out;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    out[i] = s(at(x, y, z, i));
  }
};

/// out(x) = post(at(x), sample(at(x))).
template <class At, class Sampler, class Post>
struct WarpField {
  At at;
  Sampler s;
  Post post;
  float *ox, *oy, *oz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const P3 p = at(x, y, z, i);
    float a, b, c;
    s(p, a, b, c);
    post(p, a, b, c);
    ox[i] = a;
    oy[i] = b;
    oz[i] = c;
  }
};

/// CoAd: n = |Dg| (Dg)^T (m o g), Dg by central/clamp differences of the
/// H-field g in voxel units.
template <class Sampler>
struct CoAdOp {
  const float *gx, *gy, *gz;
  Sampler m;  // samples the field m
  detail::VoxelCentral d;
  float *nx, *ny, *nz;
  static constexpr bool kSplitX = true;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const { at<false>(x, y, z, i); }
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void at(int x, int y, int z, size_t i) const {
    float a, b, c;
    m(P3{gx[i], gy[i], gz[i]}, a, b, c);
    finish<in>(x, y, z, i, a, b, c);
  }
  /// The rest of the voxel, given (a, b, c) = m(g(i)) (the CPU's AVX2 rows
  /// sample m for a chunk of voxels first).
  template <bool in>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void finish(int x, int y, int z, size_t i, float a, float b, float c) const {
    float J[3][3];
    detail::jacobianAt<in>(d, gx, gy, gz, x, y, z, i, J);
    detail::identityOnFlatAxes(d, J);
    const float det = detail::det3(J);
    nx[i] = det * (J[0][0] * a + J[1][0] * b + J[2][0] * c);
    ny[i] = det * (J[0][1] * a + J[1][1] * b + J[2][1] * c);
    nz[i] = det * (J[0][2] * a + J[1][2] * b + J[2][2] * c);
  }
};

/// o := c (x, y, z) + k f(i) (VtoH: c = 1, k = delta / sp; 2 Id - h: c = 2, k = -1).
struct AddIdentityScaled {
  const float *fx, *fy, *fz;
  float kx, ky, kz;
  float *ox, *oy, *oz;
  float c = 1.f;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const float a = fx[i], b = fy[i], d = fz[i];
    ox[i] = c * float(x) + kx * a;
    oy[i] = c * float(y) + ky * b;
    oz[i] = c * float(z) + kz * d;
  }
};

/// v := (h - (x, y, z)) * k (HtoV with k = spacing).
struct SubIdentityScaled {
  const float *hx, *hy, *hz;
  float kx, ky, kz;
  float *ox, *oy, *oz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const float a = hx[i], b = hy[i], c = hz[i];
    ox[i] = (a - float(x)) * kx;
    oy[i] = (b - float(y)) * ky;
    oz[i] = (c - float(z)) * kz;
  }
};

/// out := a - b + (x, y, z) (one FixedPointInverse step: ginv - (g o ginv - Id)).
struct SubAddIdentity {
  const float *ax, *ay, *az, *bx, *by, *bz;
  float *ox, *oy, *oz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const float a0 = ax[i], a1 = ay[i], a2 = az[i];
    const float b0 = bx[i], b1 = by[i], b2 = bz[i];
    ox[i] = a0 - b0 + float(x);
    oy[i] = a1 - b1 + float(y);
    oz[i] = a2 - b2 + float(z);
  }
};

/// out := a*x + b per component of the voxel coordinates (SetToIdentity,
/// InitializeHFromAffine): out_r = sum_c M[r][c] * (x, y, z)_c + t_r.
struct AffineCoords {
  float M[3][3];
  float t[3];
  float *ox, *oy, *oz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const float p[3] = {float(x), float(y), float(z)};
    ox[i] = M[0][0] * p[0] + M[0][1] * p[1] + M[0][2] * p[2] + t[0];
    oy[i] = M[1][0] * p[0] + M[1][1] * p[1] + M[1][2] * p[2] + t[1];
    oz[i] = M[2][0] * p[0] + M[2][1] * p[1] + M[2][2] * p[2] + t[2];
  }
};

}  // namespace kern
}  // namespace PyCA

#endif
