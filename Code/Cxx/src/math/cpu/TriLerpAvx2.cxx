// TriLerpAvx2.cxx -- the CPU back end's AVX2 build of the hottest sampler:
// trilinear interpolation of an image with BACKGROUND_STRATEGY_CLAMP (ApplyH,
// ApplyV, ComposeTranslation, Resample with the default strategy).
//
// Same arithmetic as interp.h's triLerp<CLAMP> up to rounding, reformulated
// so that each pair of x-neighbours is one 64-bit load: with CLAMP, clamping
// the corner indices equals clamping the sample point to [0, s - 1]; the
// lower corner is then min(floor(p), s - 2) and its neighbour always exists.
// Four pair loads per sample instead of eight scalar gathers: about twice
// the speed of the compiler-vectorised generic body. Points go in blocks of
// 64: first all corners and weights, then the gathers. Compiled by the host
// compiler only (also in CUDA builds), chosen at run time when the CPU runs
// AVX2; the GPU and every other case use interp.h.
#include "TriLerpAvx2.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#include "PairGatherAvx2.h"

namespace PyCA {
namespace detail {

namespace {

/// kFloatIdx: the corner index computed in float (cornerIndexF).
template <bool kFloatIdx>
__attribute__((target("avx2"))) void triLerpClamp8(const float* img, int sx, int sy, int sz, const float* px,
                                                  const float* py, const float* pz, float* out, int n) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.f);
  const __m256 mx = _mm256_set1_ps(float(sx - 1)), my = _mm256_set1_ps(float(sy - 1)),
               mz = _mm256_set1_ps(float(sz - 1));
  // lower corner limits (axes of extent 1 keep index 0 and weight 0)
  const __m256i lx = _mm256_set1_epi32(sx - 2), ly = _mm256_set1_epi32(sy > 1 ? sy - 2 : 0),
                lz = _mm256_set1_epi32(sz > 1 ? sz - 2 : 0);
  const __m256i vsx = _mm256_set1_epi32(sx), vsy = _mm256_set1_epi32(sy);
  const __m256 fsx = _mm256_set1_ps(float(sx)), fsy = _mm256_set1_ps(float(sy));
  const long long dy = sy > 1 ? sx : 0, dz = sz > 1 ? (long long)sx * sy : 0;
  const long long off[4] = {0, dy, dz, dy + dz};
  alignas(32) int idxs[kLerpBlock];
  alignas(32) float ts[kLerpBlock / 8][3][8];
  int i = 0;
  while (i + 8 <= n) {
    const int ng = (n - i) / 8 < kLerpBlock / 8 ? (n - i) / 8 : kLerpBlock / 8;
    for (int q = 0; q < ng; ++q) {
      const int b = i + 8 * q;
      // max(NaN, 0) is 0: a NaN coordinate samples the border, as in interp.h
      const __m256 x = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(px + b), zero), mx);
      const __m256 y = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(py + b), zero), my);
      const __m256 z = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(pz + b), zero), mz);
      const __m256i ix = _mm256_min_epi32(_mm256_cvttps_epi32(x), lx);
      const __m256i iy = _mm256_min_epi32(_mm256_cvttps_epi32(y), ly);
      const __m256i iz = _mm256_min_epi32(_mm256_cvttps_epi32(z), lz);
      const __m256 fx = _mm256_cvtepi32_ps(ix), fy = _mm256_cvtepi32_ps(iy), fz = _mm256_cvtepi32_ps(iz);
      _mm256_store_ps(ts[q][0], _mm256_sub_ps(x, fx));
      _mm256_store_ps(ts[q][1], _mm256_sub_ps(y, fy));
      _mm256_store_ps(ts[q][2], _mm256_sub_ps(z, fz));
      __m256i r;
      if constexpr (kFloatIdx)
        r = cornerIndexF(fx, fy, fz, fsx, fsy);
      else
        r = cornerIndexI(ix, iy, iz, vsx, vsy);
      _mm256_store_si256(reinterpret_cast<__m256i*>(idxs + 8 * q), r);
    }
    for (int q = 0; q < ng; ++q) {
      const int* idx = idxs + 8 * q;
      const __m256 tx = _mm256_load_ps(ts[q][0]), ty = _mm256_load_ps(ts[q][1]), tz = _mm256_load_ps(ts[q][2]);
      const __m256 ux = _mm256_sub_ps(one, tx);
      __m256 l[4];
      for (int k = 0; k < 4; ++k) {
        __m256 v0, v1;  // lower and upper x corners, voxels 0..7
        pairs8(img + off[k], idx, v0, v1);
        // (1 - t) v0 + t v1 (here and along y, z): exact at t = 0 and t = 1,
        // so samples on grid points (the last plane has t = 1) are exact
        l[k] = _mm256_add_ps(_mm256_mul_ps(ux, v0), _mm256_mul_ps(tx, v1));
      }
      const __m256 uy = _mm256_sub_ps(one, ty), uz = _mm256_sub_ps(one, tz);
      const __m256 e = _mm256_add_ps(_mm256_mul_ps(uy, l[0]), _mm256_mul_ps(ty, l[1]));
      const __m256 f = _mm256_add_ps(_mm256_mul_ps(uy, l[2]), _mm256_mul_ps(ty, l[3]));
      _mm256_storeu_ps(out + i + 8 * q, _mm256_add_ps(_mm256_mul_ps(uz, e), _mm256_mul_ps(tz, f)));
    }
    i += 8 * ng;
  }
  // the last < 8 samples: the same arithmetic, one at a time
  for (; i < n; ++i) {
    auto clampf = [](float v, float hi) { return v >= 0.f ? (v <= hi ? v : hi) : 0.f; };
    const float x = clampf(px[i], float(sx - 1)), y = clampf(py[i], float(sy - 1)), z = clampf(pz[i], float(sz - 1));
    int x0 = int(x), y0 = int(y), z0 = int(z);
    x0 = x0 < sx - 2 ? x0 : sx - 2;
    y0 = y0 < (sy > 1 ? sy - 2 : 0) ? y0 : (sy > 1 ? sy - 2 : 0);
    z0 = z0 < (sz > 1 ? sz - 2 : 0) ? z0 : (sz > 1 ? sz - 2 : 0);
    const float tx = x - float(x0), ty = y - float(y0), tz = z - float(z0);
    const float* b = img + (long long)sx * ((long long)y0 + (long long)sy * z0) + x0;
    float l[4];
    for (int k = 0; k < 4; ++k) l[k] = (1.f - tx) * b[off[k]] + tx * b[off[k] + 1];
    const float e = (1.f - ty) * l[0] + ty * l[1], f = (1.f - ty) * l[2] + ty * l[3];
    out[i] = (1.f - tz) * e + tz * f;
  }
}

}  // namespace

__attribute__((target("avx2"))) void triLerpClampAvx2(const float* img, int sx, int sy, int sz, const float* px,
                                                      const float* py, const float* pz, float* out, int n) {
  if (cornerIndexExactInFloat(sx, sy, sz))
    triLerpClamp8<true>(img, sx, sy, sz, px, py, pz, out, n);
  else
    triLerpClamp8<false>(img, sx, sy, sz, px, py, pz, out, n);
}

}  // namespace detail
}  // namespace PyCA
#endif
