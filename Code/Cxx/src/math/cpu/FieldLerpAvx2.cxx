// FieldLerpAvx2.cxx -- the CPU back end's AVX2 build of the field sampler
// (trilinear, three components) that ComposeHH/HV/VH, ApplyH/ApplyV of
// fields, UpdateInverse and CoAd run at every voxel.
//
// Eight sample points at a time. For the points whose eight corners all lie
// inside the grid (every point of a registration but those near the border),
// no background strategy changes anything, and each pair of x-neighbours is
// one 64-bit load: 12 pair loads per point (4 rows of corners, 3
// components) instead of 24 scalar gathers. The weights and the blend are
// interp.h's, operation for operation (no FMA, the same order), so the
// result is bit for bit that of triLerp<bg, int>. The other points (near or
// outside the border, NaN) are recomputed by triLerp<bg, int> itself.
//
// The points are taken in blocks of 64: first the corners and weights of all
// eight groups of a block, then the groups' gathers and blends (kLerpBlock,
// PairGatherAvx2.h).
//
// Compiled by the host compiler only (also in CUDA builds), chosen at run
// time when the CPU runs AVX2; the GPU and every other case use interp.h.
#include "FieldLerpAvx2.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#include "PairGatherAvx2.h"
#include "interp.h"

namespace PyCA {
namespace detail {

namespace {

/// One component: w000 v000 + w100 v100 + w010 v010 + ... + w111 v111, left
/// to right as in interp.h's fieldBlend. Rows with zrow[k] (the missing
/// plane of an axis of extent 1 under a partial strategy) contribute zeros,
/// as interp.h's substituted corners do (with weight +0: +0).
__attribute__((target("avx2"))) inline __m256 blend8(const float* f, const int* idx, const long long* off,
                                                     const bool* zrow, const __m256* w) {
  __m256 lo, hi;
  pairs8(f + off[0], idx, lo, hi);
  __m256 s = _mm256_add_ps(_mm256_mul_ps(w[0], lo), _mm256_mul_ps(w[1], hi));
  for (int k = 1; k < 4; ++k) {
    if (zrow[k]) {
      lo = hi = _mm256_setzero_ps();
    } else {
      pairs8(f + off[k], idx, lo, hi);
    }
    s = _mm256_add_ps(s, _mm256_mul_ps(w[2 * k], lo));
    s = _mm256_add_ps(s, _mm256_mul_ps(w[2 * k + 1], hi));
  }
  return s;
}

/// kFloatIdx: the corner index computed in float (cornerIndexF).
template <BackgroundStrategy bg, bool kFloatIdx>
__attribute__((target("avx2"))) void fieldLerp8(const float* fx, const float* fy, const float* fz, int sx,
                                                   int sy, int sz, const float* px, const float* py,
                                                   const float* pz, float* ox, float* oy, float* oz, int n) {
  const __m256 one = _mm256_set1_ps(1.f), zero = _mm256_setzero_ps();
  // interior: 0 <= floor(p) <= s - 2 (all 8 corners inside); an axis of
  // extent 1 counts as interior for points exactly on its plane (weight 0 on
  // the missing corner, which then reads the same plane).
  const __m256 hx = _mm256_set1_ps(float(sx - 2)), hy = _mm256_set1_ps(float(sy - 2)),
               hz = _mm256_set1_ps(float(sz - 2));
  const __m256i lx = _mm256_set1_epi32(sx - 2), ly = _mm256_set1_epi32(sy > 1 ? sy - 2 : 0),
                lz = _mm256_set1_epi32(sz > 1 ? sz - 2 : 0), izero = _mm256_setzero_si256();
  const __m256i vsx = _mm256_set1_epi32(sx), vsy = _mm256_set1_epi32(sy);
  // float lower-corner limits (hx is x's), as lx, ly, lz
  const __m256 fly = _mm256_set1_ps(float(sy > 1 ? sy - 2 : 0)), flz = _mm256_set1_ps(float(sz > 1 ? sz - 2 : 0)),
               fsx = _mm256_set1_ps(float(sx)), fsy = _mm256_set1_ps(float(sy));
  const long long dy = sy > 1 ? sx : 0, dz = sz > 1 ? (long long)sx * sy : 0;
  const long long off[4] = {0, dy, dz, dy + dz};
  // partial strategies substitute the corners of a missing plane (ZERO and
  // ID read the clamped plane, as CLAMP and WRAP do)
  const bool partial = bg == BACKGROUND_STRATEGY_PARTIAL_ZERO || bg == BACKGROUND_STRATEGY_PARTIAL_ID;
  const bool fy1 = partial && sy == 1, fz1 = partial && sz == 1;
  const bool zrow[4] = {false, fy1, fz1, fy1 || fz1};
  alignas(32) int idxs[kLerpBlock];
  alignas(32) float ws[kLerpBlock / 8][8][8];
  int masks[kLerpBlock / 8];
  int i = 0;
  while (i + 8 <= n) {
    const int ng = (n - i) / 8 < kLerpBlock / 8 ? (n - i) / 8 : kLerpBlock / 8;
    // phase 1: the lower corners, interior masks and weights of ng groups
    for (int q = 0; q < ng; ++q) {
      const int b = i + 8 * q;
      const __m256 x = _mm256_loadu_ps(px + b), y = _mm256_loadu_ps(py + b), z = _mm256_loadu_ps(pz + b);
      const __m256 fxf = _mm256_floor_ps(x), fyf = _mm256_floor_ps(y), fzf = _mm256_floor_ps(z);
      // ordered comparisons: NaN lanes are not interior
      __m256 in = _mm256_and_ps(_mm256_cmp_ps(fxf, zero, _CMP_GE_OQ), _mm256_cmp_ps(fxf, hx, _CMP_LE_OQ));
      const __m256 iny = sy > 1
                             ? _mm256_and_ps(_mm256_cmp_ps(fyf, zero, _CMP_GE_OQ), _mm256_cmp_ps(fyf, hy, _CMP_LE_OQ))
                             : _mm256_cmp_ps(y, zero, _CMP_EQ_OQ);
      const __m256 inz = sz > 1
                             ? _mm256_and_ps(_mm256_cmp_ps(fzf, zero, _CMP_GE_OQ), _mm256_cmp_ps(fzf, hz, _CMP_LE_OQ))
                             : _mm256_cmp_ps(z, zero, _CMP_EQ_OQ);
      in = _mm256_and_ps(in, _mm256_and_ps(iny, inz));
      masks[q] = _mm256_movemask_ps(in);
      // valid addresses for every lane (lanes not interior are redone below;
      // max/min of a NaN lane give one of the bounds)
      __m256i r;
      if constexpr (kFloatIdx) {
        r = cornerIndexF(_mm256_min_ps(_mm256_max_ps(fxf, zero), hx), _mm256_min_ps(_mm256_max_ps(fyf, zero), fly),
                         _mm256_min_ps(_mm256_max_ps(fzf, zero), flz), fsx, fsy);
      } else {
        const __m256i ix = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(fxf), izero), lx);
        const __m256i iy = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(fyf), izero), ly);
        const __m256i iz = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(fzf), izero), lz);
        r = cornerIndexI(ix, iy, iz, vsx, vsy);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(idxs + 8 * q), r);
      // interp.h: t = p - floor(p), u = 1 - t, w_abc = (wx_a * wy_b) * wz_c
      const __m256 tx = _mm256_sub_ps(x, fxf), ty = _mm256_sub_ps(y, fyf), tz = _mm256_sub_ps(z, fzf);
      const __m256 ux = _mm256_sub_ps(one, tx), uy = _mm256_sub_ps(one, ty), uz = _mm256_sub_ps(one, tz);
      const __m256 a00 = _mm256_mul_ps(ux, uy), a10 = _mm256_mul_ps(tx, uy), a01 = _mm256_mul_ps(ux, ty),
                   a11 = _mm256_mul_ps(tx, ty);
      // order of the corners: (y0 z0), (y1 z0), (y0 z1), (y1 z1), lower x then upper x
      _mm256_store_ps(ws[q][0], _mm256_mul_ps(a00, uz));
      _mm256_store_ps(ws[q][1], _mm256_mul_ps(a10, uz));
      _mm256_store_ps(ws[q][2], _mm256_mul_ps(a01, uz));
      _mm256_store_ps(ws[q][3], _mm256_mul_ps(a11, uz));
      _mm256_store_ps(ws[q][4], _mm256_mul_ps(a00, tz));
      _mm256_store_ps(ws[q][5], _mm256_mul_ps(a10, tz));
      _mm256_store_ps(ws[q][6], _mm256_mul_ps(a01, tz));
      _mm256_store_ps(ws[q][7], _mm256_mul_ps(a11, tz));
    }
    // phase 2: the pair gathers and blends of each group
    for (int q = 0; q < ng; ++q) {
      const int b = i + 8 * q;
      const int* idx = idxs + 8 * q;
      __m256 w[8];
      for (int k = 0; k < 8; ++k) w[k] = _mm256_load_ps(ws[q][k]);
      const __m256 ra = blend8(fx, idx, off, zrow, w), rb = blend8(fy, idx, off, zrow, w),
                   rc = blend8(fz, idx, off, zrow, w);
      const int mask = masks[q];
      if (mask == 0xFF) {
        _mm256_storeu_ps(ox + b, ra);
        _mm256_storeu_ps(oy + b, rb);
        _mm256_storeu_ps(oz + b, rc);
        continue;
      }
      // (the points of this group are intact: outputs of earlier groups only
      // were stored, and the outputs may alias the points)
      alignas(32) float xs[8], ys[8], zs[8];
      _mm256_store_ps(xs, _mm256_loadu_ps(px + b));
      _mm256_store_ps(ys, _mm256_loadu_ps(py + b));
      _mm256_store_ps(zs, _mm256_loadu_ps(pz + b));
      _mm256_storeu_ps(ox + b, ra);
      _mm256_storeu_ps(oy + b, rb);
      _mm256_storeu_ps(oz + b, rc);
      for (int l = 0; l < 8; ++l)
        if (!(mask >> l & 1))
          triLerp<bg, int>(ox[b + l], oy[b + l], oz[b + l], fx, fy, fz, xs[l], ys[l], zs[l], sx, sy, sz);
    }
    i += 8 * ng;
  }
  for (; i < n; ++i) {
    const float x = px[i], y = py[i], z = pz[i];
    triLerp<bg, int>(ox[i], oy[i], oz[i], fx, fy, fz, x, y, z, sx, sy, sz);
  }
}

}  // namespace

// (the AVX2 body is a separate function: GCC would take a target attribute
// on a redeclared template for a multiversioned function)
template <BackgroundStrategy bg>
void fieldLerpAvx2(const float* fx, const float* fy, const float* fz, int sx, int sy, int sz, const float* px,
                   const float* py, const float* pz, float* ox, float* oy, float* oz, int n) {
  if (cornerIndexExactInFloat(sx, sy, sz))
    fieldLerp8<bg, true>(fx, fy, fz, sx, sy, sz, px, py, pz, ox, oy, oz, n);
  else
    fieldLerp8<bg, false>(fx, fy, fz, sx, sy, sz, px, py, pz, ox, oy, oz, n);
}

#define PYCA_FIELDLERP_INST(bg)                                                                          \
  template void fieldLerpAvx2<bg>(const float*, const float*, const float*, int, int, int, const float*, \
                                  const float*, const float*, float*, float*, float*, int);
PYCA_FIELDLERP_INST(BACKGROUND_STRATEGY_CLAMP)
PYCA_FIELDLERP_INST(BACKGROUND_STRATEGY_WRAP)
PYCA_FIELDLERP_INST(BACKGROUND_STRATEGY_ZERO)
PYCA_FIELDLERP_INST(BACKGROUND_STRATEGY_PARTIAL_ZERO)
PYCA_FIELDLERP_INST(BACKGROUND_STRATEGY_ID)
PYCA_FIELDLERP_INST(BACKGROUND_STRATEGY_PARTIAL_ID)
#undef PYCA_FIELDLERP_INST

}  // namespace detail
}  // namespace PyCA
#endif
