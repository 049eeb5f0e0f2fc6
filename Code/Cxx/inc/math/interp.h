// interp.h -- point sampling of images and fields: nearest neighbour,
// trilinear and cubic interpolation with the legacy background strategies.
//
// One body per sampler, PYCA_HOSTDEVICE: the CPU back end calls these from
// its OpenMP loops, the CUDA back end from its kernels, and downstream code
// may call them on its own arrays (the legacy library shipped a header of
// this name that downstream projects included).
//
// Conventions (spec 2.2):
//  * arrays are x fastest: index = x + sx * (y + sy * z);
//  * a sample point (x, y, z) is in voxel coordinates of the sampled array;
//  * trilinear interpolation uses the 8 corners floor(p) + {0, 1}^3;
//  * nearest neighbour rounds half away from zero;
//  * cubic is separable cubic convolution with a = -1 over the 4x4x4
//    neighbourhood floor(p) + {-1, 0, 1, 2}^3;
//  * non-finite and huge coordinates (|p| > 2^24) are taken as lying far
//    outside the grid (NaN as -2^24), so no input makes an index overflow.
//
// Background strategies. For images, per corner (or per cubic tap):
//   CLAMP              index clamped to the grid;
//   WRAP               index taken modulo the size;
//   ZERO, PARTIAL_ZERO a corner outside the grid contributes 0;
//   VAL                a corner outside contributes bgVal.
// For fields (three components, trilinear):
//   CLAMP, WRAP        as for images;
//   PARTIAL_ZERO       a corner outside contributes the zero vector;
//   PARTIAL_ID         a corner outside contributes its own coordinates
//                      (the identity H-field's value there);
//   ZERO               the zero vector if any corner the sample uses lies
//                      outside;
//   ID                 the sample point itself if any such corner lies
//                      outside.
// A corner whose weight is exactly zero is not "used": a sample on the last
// grid plane, or any sample of a 2-D (sz == 1) field at z == 0, stays
// inside. (The legacy library counted those corners, so in 2-D its ZERO and
// ID field samplers returned zero / the identity everywhere; see
// Documentation/LegacyDifferences.md.)
#ifndef __PYCA_INTERP_H__
#define __PYCA_INTERP_H__

#include "pycaConst.h"
#include "pycaKernel.h"

namespace PyCA {

/// Coordinates beyond +-kInterpCoordLimit voxels are clamped to it.
constexpr float kInterpCoordLimit = 16777216.f;  // 2^24

/// x limited to [-kInterpCoordLimit, kInterpCoordLimit]; NaN gives the lower
/// limit. Written with comparisons (not fminf) so that loops vectorise.
PYCA_HOSTDEVICE PYCA_FORCEINLINE float interpSanitize(float x) {
  x = (x >= -kInterpCoordLimit) ? x : -kInterpCoordLimit;
  return (x <= kInterpCoordLimit) ? x : kInterpCoordLimit;
}

/// floor(x) as an int for |x| <= 2^24 (truncate, then step down for
/// negatives); vectorises on every x86 level and matches floorf exactly.
PYCA_HOSTDEVICE PYCA_FORCEINLINE int floorToInt(float x) {
  const int i = static_cast<int>(x);
  return i - (x < static_cast<float>(i) ? 1 : 0);
}

PYCA_HOSTDEVICE PYCA_FORCEINLINE int clampIndex(int i, int n) {
  i = i < 0 ? 0 : i;
  return i > n - 1 ? n - 1 : i;
}
PYCA_HOSTDEVICE PYCA_FORCEINLINE int wrapIndex(int i, int n) {
  const int r = i % n;
  return r < 0 ? r + n : r;
}
PYCA_HOSTDEVICE PYCA_FORCEINLINE bool inRange(int i, int n) { return i >= 0 && i < n; }

/// True if (x, y, z) is a voxel of a sx * sy * sz grid.
PYCA_HOSTDEVICE PYCA_FORCEINLINE bool isInside3D(int x, int y, int z, int sx, int sy, int sz) {
  return inRange(x, sx) && inRange(y, sy) && inRange(z, sz);
}
/// The same for 64-bit coordinates (a voxel index plus any int offset).
PYCA_HOSTDEVICE PYCA_FORCEINLINE bool isInside3D(long long x, long long y, long long z, int sx, int sy,
                                                 int sz) {
  return x >= 0 && y >= 0 && z >= 0 && x < sx && y < sy && z < sz;
}

/// Compile-time properties of a background strategy.
template <BackgroundStrategy bg>
struct BgTraits {
  /// Out-of-range indices are remapped (clamped or wrapped), never dropped.
  static constexpr bool kRemaps = bg == BACKGROUND_STRATEGY_CLAMP || bg == BACKGROUND_STRATEGY_WRAP;
  /// Fields: the whole sample falls back (to zero or to the identity).
  static constexpr bool kAllOrNothing = bg == BACKGROUND_STRATEGY_ZERO || bg == BACKGROUND_STRATEGY_ID;
  /// Fields: the fallback is the identity (sample point / corner coordinates).
  static constexpr bool kIdentity = bg == BACKGROUND_STRATEGY_ID || bg == BACKGROUND_STRATEGY_PARTIAL_ID;
};

/// Index i along an axis of n voxels under bg (only for remapping strategies).
template <BackgroundStrategy bg>
PYCA_HOSTDEVICE PYCA_FORCEINLINE int remapIndex(int i, int n) {
  return bg == BACKGROUND_STRATEGY_WRAP ? wrapIndex(i, n) : clampIndex(i, n);
}

/// Linear index of voxel (x, y, z); Index is int for grids below 2^31
/// voxels (faster, vectorises with 32-bit gathers) or long long.
template <class Index = long long>
PYCA_HOSTDEVICE PYCA_FORCEINLINE Index voxelIndex(int x, int y, int z, int sx, int sy) {
  return Index(x) + Index(sx) * (Index(y) + Index(sy) * Index(z));
}

// ---- images ------------------------------------------------------------------------

/// Trilinear sample of img at (x, y, z).
template <BackgroundStrategy bg, class Index = long long>
PYCA_HOSTDEVICE PYCA_FORCEINLINE float triLerp(const float* img, float x, float y, float z, int sx,
                                               int sy, int sz, float bgVal = 0.f) {
  x = interpSanitize(x);
  y = interpSanitize(y);
  z = interpSanitize(z);
  int x0 = floorToInt(x), y0 = floorToInt(y), z0 = floorToInt(z);
  const float tx = x - float(x0), ty = y - float(y0), tz = z - float(z0);
  int x1 = x0 + 1, y1 = y0 + 1, z1 = z0 + 1;
  float v000, v100, v010, v110, v001, v101, v011, v111;
  if (BgTraits<bg>::kRemaps) {
    x0 = remapIndex<bg>(x0, sx);
    x1 = remapIndex<bg>(x1, sx);
    y0 = remapIndex<bg>(y0, sy);
    y1 = remapIndex<bg>(y1, sy);
    z0 = remapIndex<bg>(z0, sz);
    z1 = remapIndex<bg>(z1, sz);
    const Index r00 = Index(sx) * (Index(y0) + Index(sy) * z0);
    const Index r10 = Index(sx) * (Index(y1) + Index(sy) * z0);
    const Index r01 = Index(sx) * (Index(y0) + Index(sy) * z1);
    const Index r11 = Index(sx) * (Index(y1) + Index(sy) * z1);
    v000 = img[r00 + x0];
    v100 = img[r00 + x1];
    v010 = img[r10 + x0];
    v110 = img[r10 + x1];
    v001 = img[r01 + x0];
    v101 = img[r01 + x1];
    v011 = img[r11 + x0];
    v111 = img[r11 + x1];
  } else {
    // ZERO, PARTIAL_ZERO, VAL: read clamped (always valid) addresses and
    // replace the corners outside by the background value.
    // int (not bool) flags combined with &: GCC vectorises selects on them
    const int ix0 = inRange(x0, sx), ix1 = inRange(x1, sx);
    const int iy0 = inRange(y0, sy), iy1 = inRange(y1, sy);
    const int iz0 = inRange(z0, sz), iz1 = inRange(z1, sz);
    x0 = clampIndex(x0, sx);
    x1 = clampIndex(x1, sx);
    y0 = clampIndex(y0, sy);
    y1 = clampIndex(y1, sy);
    z0 = clampIndex(z0, sz);
    z1 = clampIndex(z1, sz);
    const float b = bg == BACKGROUND_STRATEGY_VAL ? bgVal : 0.f;
    const Index r00 = Index(sx) * (Index(y0) + Index(sy) * z0);
    const Index r10 = Index(sx) * (Index(y1) + Index(sy) * z0);
    const Index r01 = Index(sx) * (Index(y0) + Index(sy) * z1);
    const Index r11 = Index(sx) * (Index(y1) + Index(sy) * z1);
    // Unconditional loads (the clamped addresses are valid), then selects:
    // no control flow, so the CPU loop vectorises.
    v000 = img[r00 + x0];
    v100 = img[r00 + x1];
    v010 = img[r10 + x0];
    v110 = img[r10 + x1];
    v001 = img[r01 + x0];
    v101 = img[r01 + x1];
    v011 = img[r11 + x0];
    v111 = img[r11 + x1];
    v000 = (ix0 & iy0 & iz0) ? v000 : b;
    v100 = (ix1 & iy0 & iz0) ? v100 : b;
    v010 = (ix0 & iy1 & iz0) ? v010 : b;
    v110 = (ix1 & iy1 & iz0) ? v110 : b;
    v001 = (ix0 & iy0 & iz1) ? v001 : b;
    v101 = (ix1 & iy0 & iz1) ? v101 : b;
    v011 = (ix0 & iy1 & iz1) ? v011 : b;
    v111 = (ix1 & iy1 & iz1) ? v111 : b;
  }
  const float a = v000 + tx * (v100 - v000);
  const float bb = v010 + tx * (v110 - v010);
  const float c = v001 + tx * (v101 - v001);
  const float d = v011 + tx * (v111 - v011);
  const float e = a + ty * (bb - a);
  const float f = c + ty * (d - c);
  return e + tz * (f - e);
}

/// round half away from zero, as an int, for |x| <= 2^24.
PYCA_HOSTDEVICE PYCA_FORCEINLINE int roundToInt(float x) {
  return x >= 0.f ? floorToInt(x + 0.5f) : -floorToInt(-x + 0.5f);
}

/// Nearest-neighbour sample of img at (x, y, z).
template <BackgroundStrategy bg, class Index = long long>
PYCA_HOSTDEVICE PYCA_FORCEINLINE float nearestNeighbor(const float* img, float x, float y, float z,
                                                       int sx, int sy, int sz, float bgVal = 0.f) {
  int ix = roundToInt(interpSanitize(x));
  int iy = roundToInt(interpSanitize(y));
  int iz = roundToInt(interpSanitize(z));
  if (BgTraits<bg>::kRemaps) {
    ix = remapIndex<bg>(ix, sx);
    iy = remapIndex<bg>(iy, sy);
    iz = remapIndex<bg>(iz, sz);
    return img[voxelIndex<Index>(ix, iy, iz, sx, sy)];
  }
  const int in = int(inRange(ix, sx)) & int(inRange(iy, sy)) & int(inRange(iz, sz));
  const float v = img[voxelIndex<Index>(clampIndex(ix, sx), clampIndex(iy, sy), clampIndex(iz, sz), sx, sy)];
  return in ? v : (bg == BACKGROUND_STRATEGY_VAL ? bgVal : 0.f);
}

/// Weights of cubic convolution (a = -1) for the taps at offsets -1, 0, 1, 2
/// from floor(p), where t = p - floor(p) in [0, 1).
PYCA_HOSTDEVICE PYCA_FORCEINLINE void cubicWeights(float t, float w[4]) {
  // k(s) = (a+2)|s|^3 - (a+3)|s|^2 + 1 for |s| <= 1,
  //        a|s|^3 - 5a|s|^2 + 8a|s| - 4a for 1 < |s| < 2, with a = -1.
  const float s0 = 1.f + t, s1 = t, s2 = 1.f - t, s3 = 2.f - t;
  w[0] = -s0 * s0 * s0 + 5.f * s0 * s0 - 8.f * s0 + 4.f;
  w[1] = s1 * s1 * s1 - 2.f * s1 * s1 + 1.f;
  w[2] = s2 * s2 * s2 - 2.f * s2 * s2 + 1.f;
  w[3] = -s3 * s3 * s3 + 5.f * s3 * s3 - 8.f * s3 + 4.f;
}

/// Cubic-convolution sample of img at (x, y, z) (separable 4x4x4, a = -1).
template <BackgroundStrategy bg, class Index = long long>
PYCA_HOSTDEVICE inline float cubicInterp(const float* img, float x, float y, float z, int sx, int sy,
                                         int sz, float bgVal = 0.f) {
  x = interpSanitize(x);
  y = interpSanitize(y);
  z = interpSanitize(z);
  const int x0 = floorToInt(x), y0 = floorToInt(y), z0 = floorToInt(z);
  float wx[4], wy[4], wz[4];
  cubicWeights(x - float(x0), wx);
  cubicWeights(y - float(y0), wy);
  cubicWeights(z - float(z0), wz);
  const float b = bg == BACKGROUND_STRATEGY_VAL ? bgVal : 0.f;
  float sum = 0.f;
  for (int k = 0; k < 4; ++k) {
    int zk = z0 - 1 + k;
    const bool inz = inRange(zk, sz);
    zk = BgTraits<bg>::kRemaps ? remapIndex<bg>(zk, sz) : clampIndex(zk, sz);
    float sy_ = 0.f;
    for (int j = 0; j < 4; ++j) {
      int yj = y0 - 1 + j;
      const bool iny = inRange(yj, sy);
      yj = BgTraits<bg>::kRemaps ? remapIndex<bg>(yj, sy) : clampIndex(yj, sy);
      const Index row = Index(sx) * (Index(yj) + Index(sy) * zk);
      float sx_ = 0.f;
      for (int i = 0; i < 4; ++i) {
        int xi = x0 - 1 + i;
        const bool inx = inRange(xi, sx);
        xi = BgTraits<bg>::kRemaps ? remapIndex<bg>(xi, sx) : clampIndex(xi, sx);
        float v = img[row + xi];
        if (!BgTraits<bg>::kRemaps && !(inx && iny && inz)) v = b;
        sx_ += wx[i] * v;
      }
      sy_ += wy[j] * sx_;
    }
    sum += wz[k] * sy_;
  }
  return sum;
}

/// Sample of img at (x, y, z) with interpolation interp and strategy bg.
template <BackgroundStrategy bg, InterpT interp, class Index = long long>
PYCA_HOSTDEVICE PYCA_FORCEINLINE float point_interp(const float* img, float x, float y, float z, int sx,
                                                    int sy, int sz, float bgVal = 0.f) {
  if (interp == INTERP_NN) return nearestNeighbor<bg, Index>(img, x, y, z, sx, sy, sz, bgVal);
  if (interp == INTERP_CUBIC) return cubicInterp<bg, Index>(img, x, y, z, sx, sy, sz, bgVal);
  return triLerp<bg, Index>(img, x, y, z, sx, sy, sz, bgVal);
}

// ---- fields ------------------------------------------------------------------------

/// The 8 trilinear corners of a field sample: valid addresses, weights and
/// in-range flags of the unmapped corner coordinates.
template <class Index>
struct FieldCorners {
  Index i000, i100, i010, i110, i001, i101, i011, i111;
  float w000, w100, w010, w110, w001, w101, w011, w111;
  int ix0, ix1, iy0, iy1, iz0, iz1;  // in-range flags, 0 / 1 (ints vectorise better than bools)
  int x0, y0, z0;
};

/// One component of a field sample: the corners blended; with a partial
/// strategy a corner outside contributes 0 (PARTIAL_ZERO) or its own
/// coordinate along this component's axis (PARTIAL_ID).
template <BackgroundStrategy bg, class Index>
PYCA_HOSTDEVICE PYCA_FORCEINLINE float fieldBlend(const float* f, int axis, const FieldCorners<Index>& k) {
  float v000 = f[k.i000], v100 = f[k.i100], v010 = f[k.i010], v110 = f[k.i110];
  float v001 = f[k.i001], v101 = f[k.i101], v011 = f[k.i011], v111 = f[k.i111];
  if (!BgTraits<bg>::kRemaps && !BgTraits<bg>::kAllOrNothing) {
    float c0 = 0.f, c1 = 0.f;  // identity values at the two corner planes of this axis
    if (BgTraits<bg>::kIdentity) {
      c0 = float(axis == 0 ? k.x0 : (axis == 1 ? k.y0 : k.z0));
      c1 = c0 + 1.f;
    }
    const float a0 = axis == 0 ? c0 : 0.f, a1 = axis == 0 ? c1 : 0.f;  // along x
    const float b0 = axis == 1 ? c0 : 0.f, b1 = axis == 1 ? c1 : 0.f;  // along y
    const float d0 = axis == 2 ? c0 : 0.f, d1 = axis == 2 ? c1 : 0.f;  // along z
    v000 = (k.ix0 & k.iy0 & k.iz0) ? v000 : a0 + b0 + d0;
    v100 = (k.ix1 & k.iy0 & k.iz0) ? v100 : a1 + b0 + d0;
    v010 = (k.ix0 & k.iy1 & k.iz0) ? v010 : a0 + b1 + d0;
    v110 = (k.ix1 & k.iy1 & k.iz0) ? v110 : a1 + b1 + d0;
    v001 = (k.ix0 & k.iy0 & k.iz1) ? v001 : a0 + b0 + d1;
    v101 = (k.ix1 & k.iy0 & k.iz1) ? v101 : a1 + b0 + d1;
    v011 = (k.ix0 & k.iy1 & k.iz1) ? v011 : a0 + b1 + d1;
    v111 = (k.ix1 & k.iy1 & k.iz1) ? v111 : a1 + b1 + d1;
  }
  return k.w000 * v000 + k.w100 * v100 + k.w010 * v010 + k.w110 * v110 + k.w001 * v001 + k.w101 * v101 +
         k.w011 * v011 + k.w111 * v111;
}

/// Trilinear sample (ox, oy, oz) of the field (fx, fy, fz) at (x, y, z)
/// with the field strategies above. Branch-free (selects only), so the CPU
/// loops vectorise.
template <BackgroundStrategy bg, class Index = long long>
PYCA_HOSTDEVICE PYCA_FORCEINLINE void triLerp(float& ox, float& oy, float& oz, const float* fx,
                                              const float* fy, const float* fz, float x, float y, float z,
                                              int sx, int sy, int sz) {
  x = interpSanitize(x);
  y = interpSanitize(y);
  z = interpSanitize(z);
  FieldCorners<Index> k;
  const int x0 = floorToInt(x), y0 = floorToInt(y), z0 = floorToInt(z);
  const int x1 = x0 + 1, y1 = y0 + 1, z1 = z0 + 1;
  const float tx = x - float(x0), ty = y - float(y0), tz = z - float(z0);
  k.x0 = x0;
  k.y0 = y0;
  k.z0 = z0;
  k.ix0 = inRange(x0, sx);
  k.ix1 = inRange(x1, sx);
  k.iy0 = inRange(y0, sy);
  k.iy1 = inRange(y1, sy);
  k.iz0 = inRange(z0, sz);
  k.iz1 = inRange(z1, sz);
  // valid addresses: remapped (CLAMP, WRAP) or clamped (the others)
  const int mx0 = BgTraits<bg>::kRemaps ? remapIndex<bg>(x0, sx) : clampIndex(x0, sx);
  const int mx1 = BgTraits<bg>::kRemaps ? remapIndex<bg>(x1, sx) : clampIndex(x1, sx);
  const int my0 = BgTraits<bg>::kRemaps ? remapIndex<bg>(y0, sy) : clampIndex(y0, sy);
  const int my1 = BgTraits<bg>::kRemaps ? remapIndex<bg>(y1, sy) : clampIndex(y1, sy);
  const int mz0 = BgTraits<bg>::kRemaps ? remapIndex<bg>(z0, sz) : clampIndex(z0, sz);
  const int mz1 = BgTraits<bg>::kRemaps ? remapIndex<bg>(z1, sz) : clampIndex(z1, sz);
  const Index r00 = Index(sx) * (Index(my0) + Index(sy) * mz0);
  const Index r10 = Index(sx) * (Index(my1) + Index(sy) * mz0);
  const Index r01 = Index(sx) * (Index(my0) + Index(sy) * mz1);
  const Index r11 = Index(sx) * (Index(my1) + Index(sy) * mz1);
  k.i000 = r00 + mx0;
  k.i100 = r00 + mx1;
  k.i010 = r10 + mx0;
  k.i110 = r10 + mx1;
  k.i001 = r01 + mx0;
  k.i101 = r01 + mx1;
  k.i011 = r11 + mx0;
  k.i111 = r11 + mx1;
  const float ux = 1.f - tx, uy = 1.f - ty, uz = 1.f - tz;
  k.w000 = ux * uy * uz;
  k.w100 = tx * uy * uz;
  k.w010 = ux * ty * uz;
  k.w110 = tx * ty * uz;
  k.w001 = ux * uy * tz;
  k.w101 = tx * uy * tz;
  k.w011 = ux * ty * tz;
  k.w111 = tx * ty * tz;
  float a = fieldBlend<bg>(fx, 0, k), b = fieldBlend<bg>(fy, 1, k), c = fieldBlend<bg>(fz, 2, k);
  if (BgTraits<bg>::kAllOrNothing) {
    // A +1 corner with zero weight along its axis is not used.
    const int inside = k.ix0 & k.iy0 & k.iz0 & (int(tx == 0.f) | k.ix1) & (int(ty == 0.f) | k.iy1) &
                       (int(tz == 0.f) | k.iz1);
    const bool id = BgTraits<bg>::kIdentity;
    a = inside ? a : (id ? x : 0.f);
    b = inside ? b : (id ? y : 0.f);
    c = inside ? c : (id ? z : 0.f);
  }
  ox = a;
  oy = b;
  oz = c;
}

}  // namespace PyCA

#endif
