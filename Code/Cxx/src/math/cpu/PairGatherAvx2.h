// PairGatherAvx2.h -- the gather both AVX2 trilinear samplers use
// (TriLerpAvx2.cxx, FieldLerpAvx2.cxx): for 8 sample points, the lower-x
// and upper-x corners of one row of corners, each pair of x-neighbours by one
// 64-bit load. Included by those host-compiled sources only (x86-64 GCC).
#ifndef __PYCA_PAIR_GATHER_AVX2_H__
#define __PYCA_PAIR_GATHER_AVX2_H__

#include <immintrin.h>

namespace PyCA {
namespace detail {

/// Points per block of both samplers: first the lower corners and weights
/// of the block's groups of 8 (no loads that depend on them), then each
/// group's pair gathers and blend. Split so, the out-of-order window overlaps
/// consecutive groups' gathers instead of waiting on each group's chain
/// floor -> index -> pair loads -> blend.
constexpr int kLerpBlock = 64;

/// True when every corner index of a sx * sy * sz grid (below sx sy sz) is
/// exact in float, so cornerIndexF may compute it.
inline bool cornerIndexExactInFloat(int sx, int sy, int sz) { return (long long)sx * sy * sz <= (1LL << 24); }

/// (z sy + y) sx + x of 8 corners given as whole floats (exact below 2^24:
/// shorter latency than the two vpmulld of cornerIndexI).
__attribute__((target("avx2"))) inline __m256i cornerIndexF(__m256 x, __m256 y, __m256 z, __m256 fsx, __m256 fsy) {
  return _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(z, fsy), y), fsx), x));
}
/// The same in 32-bit integers (any grid below 2^31 voxels).
__attribute__((target("avx2"))) inline __m256i cornerIndexI(__m256i x, __m256i y, __m256i z, __m256i vsx,
                                                             __m256i vsy) {
  return _mm256_add_epi32(_mm256_mullo_epi32(_mm256_add_epi32(_mm256_mullo_epi32(z, vsy), y), vsx), x);
}

/// The pair (p[0], p[1]) in the low half of a vector, by movq: an unaligned,
/// may-alias 64-bit load (_mm_load_sd would dereference a misaligned double).
__attribute__((target("avx2"))) inline __m256d loadPair(const float* p) {
  return _mm256_castpd128_pd256(_mm_castsi128_pd(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

/// lo[l], hi[l] = b[idx[l]], b[idx[l] + 1] for the 8 points l. Broadcasts and
/// blends (load ports and any vector ALU) rather than movhpd / vinsertf128
/// (the shuffle port, which the two shufps need).
__attribute__((target("avx2"))) inline void pairs8(const float* b, const int* idx, __m256& lo, __m256& hi) {
  auto pair = [b](int i) { return reinterpret_cast<const double*>(b + i); };
  __m256d a = loadPair(b + idx[0]);
  a = _mm256_blend_pd(a, _mm256_broadcast_sd(pair(idx[1])), 0x2);
  a = _mm256_blend_pd(a, _mm256_broadcast_sd(pair(idx[4])), 0x4);
  a = _mm256_blend_pd(a, _mm256_broadcast_sd(pair(idx[5])), 0x8);  // points 0, 1, 4, 5
  __m256d c = loadPair(b + idx[2]);
  c = _mm256_blend_pd(c, _mm256_broadcast_sd(pair(idx[3])), 0x2);
  c = _mm256_blend_pd(c, _mm256_broadcast_sd(pair(idx[6])), 0x4);
  c = _mm256_blend_pd(c, _mm256_broadcast_sd(pair(idx[7])), 0x8);  // points 2, 3, 6, 7
  lo = _mm256_shuffle_ps(_mm256_castpd_ps(a), _mm256_castpd_ps(c), _MM_SHUFFLE(2, 0, 2, 0));  // lower x corner
  hi = _mm256_shuffle_ps(_mm256_castpd_ps(a), _mm256_castpd_ps(c), _MM_SHUFFLE(3, 1, 3, 1));  // upper x corner
}

}  // namespace detail
}  // namespace PyCA

#endif
