// Splat.h -- splatting (the adjoint of trilinear interpolation): every source
// voxel pushes its value(s) to the 8 grid corners around its point with the
// trilinear weights; corners outside the grid are dropped (mass leaves the
// grid there, as in the legacy library).
//
// A splat source is a functor
//   static constexpr int K;                        values per voxel (1 or 3)
//   PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i,
//                                   float& px, float& py, float& pz,
//                                   float v[K]) const;
// giving, for source voxel (x, y, z) of index i, the point (in voxel
// coordinates of the target grid) and the values to push there. Splat,
// SplatField, SplatH, SplatV, SplatWorld and Ad are such sources; splatPoint
// below is the one corner loop all of them run.
//
// Back ends:
//  * CPU: deterministic for a fixed thread count. The source rows are cut
//    into one block per OpenMP thread; each block accumulates into a private
//    slab covering the target planes its points reach (found in a first
//    pass), and the slabs are then summed plane by plane in block order
//    (an overwrite splat's block 0 accumulates into the target itself).
//    The slabs are private allocations freed before returning; their total
//    size is bounded (a block whose points spread over the whole grid makes
//    the splat run as a single block).
//  * GPU: floating-point atomicAdd into the zeroed target (no fixed-point
//    scaling, hence no overflow for large values; the order of additions,
//    and so the last bits, may vary from run to run).
#ifndef __PYCA_SPLAT_H__
#define __PYCA_SPLAT_H__

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "Scratch.h"
#include "VoxelLaunch.h"
#include "interp.h"

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#define PYCA_SPLAT_SSE2 1
#endif

namespace PyCA {
namespace detail {

/// Calls add(index, weight, cx, cy, cz) for every in-range corner (cx, cy, cz)
/// of point (x, y, z) of a sx * sy * sz grid.
template <class Index, class Add>
PYCA_HOSTDEVICE PYCA_FORCEINLINE void splatPoint(float x, float y, float z, int sx, int sy, int sz,
                                                 const Add& add) {
  x = interpSanitize(x);
  y = interpSanitize(y);
  z = interpSanitize(z);
  const int x0 = floorToInt(x), y0 = floorToInt(y), z0 = floorToInt(z);
  const float tx = x - float(x0), ty = y - float(y0), tz = z - float(z0);
  const float wx[2] = {1.f - tx, tx}, wy[2] = {1.f - ty, ty}, wz[2] = {1.f - tz, tz};
  if (x0 >= 0 && y0 >= 0 && z0 >= 0 && x0 + 1 < sx && y0 + 1 < sy && z0 + 1 < sz) {
    // all 8 corners inside (the common case): no per-corner checks
    const Index base = voxelIndex<Index>(x0, y0, z0, sx, sy);
    const Index dy = Index(sx), dz = Index(sx) * Index(sy);
    for (int c = 0; c < 8; ++c) {
      const int a = c & 1, b = (c >> 1) & 1, d = c >> 2;
      add(base + Index(a) + Index(b) * dy + Index(d) * dz, wx[a] * wy[b] * wz[d], x0 + a, y0 + b, z0 + d);
    }
    return;
  }
  for (int c = 0; c < 8; ++c) {
    const int a = c & 1, b = (c >> 1) & 1, d = c >> 2;
    const int cx = x0 + a, cy = y0 + b, cz = z0 + d;
    if (!isInside3D(cx, cy, cz, sx, sy, sz)) continue;
    add(voxelIndex<Index>(cx, cy, cz, sx, sy), wx[a] * wy[b] * wz[d], cx, cy, cz);
  }
}

/// What happens to the target: overwritten with the splat, accumulated into
/// (SplatWorld), or overwritten with the splat divided by the splatted
/// weights (normalize=true; 0 where no weight arrived).
enum SplatMode { SPLAT_OVERWRITE, SPLAT_ACCUMULATE, SPLAT_NORMALIZE };

/// The target arrays: out[0..K-1] on a grid of size (sx, sy, sz); weights,
/// if non-null, accumulates the splatted weights (SPLAT_ACCUMULATE only).
struct SplatTarget {
  float* out[3];
  float* weights;
  int sx, sy, sz;
};

// ---- CPU -------------------------------------------------------------------------

/// The target is cut into planes along its last axis of extent > 1.
struct SplatPlanes {
  size_t planeSize;
  int nPlanes;
  int axis;  // 2: z planes, 1: y rows, 0: single voxels
};
inline SplatPlanes splatPlanes(int sx, int sy, int sz) {
  if (sz > 1) return {size_t(sx) * size_t(sy), sz, 2};
  if (sy > 1) return {size_t(sx), sy, 1};
  return {size_t(1), sx, 0};
}

/// One block of source rows and the slab of target planes it accumulates into.
struct SplatBlock {
  long long rowLo = 0, rowHi = 0;  // source rows [rowLo, rowHi)
  int pLo = 0, pHi = -1;           // target planes [pLo, pHi]; empty if pHi < pLo
  size_t len = 0;                  // floats per channel
  /// Channel c of the slab (len floats): scratch images, from the thread
  /// memory manager's pools when it has host pools large enough (no page
  /// faults on reuse), else private allocations freed before returning.
  std::unique_ptr<Image3D> mem[4];
  float* ch[4] = {nullptr, nullptr, nullptr, nullptr};
  bool empty() const { return ch[0] == nullptr; }
};

/// Sources whose points are stored arrays (an H-field) name them:
/// const float* coords(int axis) const.
template <class Src, class = void>
struct HasCoordArrays : std::false_type {};
template <class Src>
struct HasCoordArrays<Src, decltype(void(std::declval<const Src&>().coords(0)))> : std::true_type {};

/// The range [lo, hi] of the coordinate along axis (0, 1, 2) of the source
/// points of rows [rowLo, rowHi) (Src::point), for the first pass;
/// vectorised min/max. Sources with stored points: that one array only
/// (contiguous over the rows), not the three Src::point loads.
template <class Src>
void sourceCoordRange(const Src& src, int ssx, int ssy, long long rowLo, long long rowHi, int axis, float& lo,
                      float& hi) {
  float l = 3.0e38f, h = -3.0e38f;
  if constexpr (HasCoordArrays<Src>::value) {
    const float* c = src.coords(axis);
    const size_t b = size_t(rowLo) * size_t(ssx), e = size_t(rowHi) * size_t(ssx);
#pragma omp simd reduction(min : l) reduction(max : h)
    for (size_t i = b; i < e; ++i) {
      const float v = interpSanitize(c[i]);
      l = v < l ? v : l;
      h = v > h ? v : h;
    }
  } else {
    for (long long r = rowLo; r < rowHi; ++r) {
      const int y = int(r % ssy), z = int(r / ssy);
      const size_t base = size_t(r) * size_t(ssx);
#pragma omp simd reduction(min : l) reduction(max : h)
      for (int x = 0; x < ssx; ++x) {
        float px, py, pz;
        src.point(x, y, z, base + size_t(x), px, py, pz);
        const float c = interpSanitize(axis == 2 ? pz : (axis == 1 ? py : px));
        l = c < l ? c : l;
        h = c > h ? c : h;
      }
    }
  }
  lo = l;
  hi = h;
}

/// Adds the trilinear shares of values v[0..K-1] (and, with withW, of the
/// weight 1) of point (x, y, z) to the slab channels ch[c] (indexed by the
/// voxel index minus off), corner by corner, dropping the corners outside the
/// grid: the points whose 8 corners are not all inside (splatChunkAdd does
/// the others).
template <class Index, int K>
PYCA_FORCEINLINE void accumulateBorderCorners(float* const* ch, Index off, bool withW, float x, float y, float z,
                                              const float* v, int sx, int sy, int sz) {
  splatPoint<Index>(x, y, z, sx, sy, sz, [&](Index idx, float w, int, int, int) {
    const size_t j = size_t(idx - off);
    for (int c = 0; c < K; ++c) ch[c][j] += w * v[c];
    if (withW) ch[K][j] += w;
  });
}

constexpr int kSplatChunk = 512;

/// Per-voxel splat data of a run of source voxels (splatChunkPrep); slab
/// indices of type J (the grid's Index: 32 bits below 2^31 voxels).
template <int K, class J>
struct SplatChunk {
  float v[K][kSplatChunk];  // the values
  float tx[kSplatChunk];    // x weight of the upper corner
  float w00[kSplatChunk], w10[kSplatChunk], w01[kSplatChunk], w11[kSplatChunk];  // (y, z) weights
  J j[kSplatChunk];  // slab index of the lower corner; -1: not all 8 corners inside
  /// One channel without weights (the image splat, K = 1): the shares
  /// themselves, ab[r][2k .. 2k + 1] = ((1 - tx) s, tx s) w_r of voxel k for
  /// the rows of corners r = (y0 z0), (y1 z0), (y0 z1), (y1 z1), so that a
  /// read-modify-write adds a loaded pair (splatChunkPrep with kPairs).
  float ab[K == 1 ? 4 : 1][K == 1 ? 2 * kSplatChunk : 1];
};

/// Fills the chunk for source voxels x0 .. x0 + m - 1 of row (y, z)
/// (vectorised: contiguous loads, no stores into the slab); with kPairs
/// (K = 1, no weights) the shares ab and the indices j only.
template <class Index, bool kPairs, class Src>
PYCA_FORCEINLINE void splatChunkPrepBody(const Src sr, SplatChunk<Src::K, Index>& c, int x0, int y, int z, size_t base,
                                         int m, Index off, int sx, int sy, int sz) {
  // sr by value and restrict-qualified outputs, so that the compiler keeps
  // the source's pointers in registers and vectorises the loop
  constexpr int K = Src::K;
  float* __restrict v0 = c.v[0];
  float* __restrict v1 = c.v[K > 1 ? 1 : 0];
  float* __restrict v2 = c.v[K > 2 ? 2 : 0];
  float* __restrict ctx = c.tx;
  float* __restrict c00 = c.w00;
  float* __restrict c10 = c.w10;
  float* __restrict c01 = c.w01;
  float* __restrict c11 = c.w11;
  Index* __restrict cj = c.j;
  float* __restrict ab0 = c.ab[0];
  float* __restrict ab1 = c.ab[K == 1 ? 1 : 0];
  float* __restrict ab2 = c.ab[K == 1 ? 2 : 0];
  float* __restrict ab3 = c.ab[K == 1 ? 3 : 0];
  const size_t ib = base + size_t(x0), mm = size_t(m);
#pragma GCC ivdep
  for (size_t k = 0; k < mm; ++k) {
    float px, py, pz, v[K];
    sr(x0 + int(k), y, z, ib + k, px, py, pz, v);
    if constexpr (!kPairs) {
      v0[k] = v[0];
      if constexpr (K > 1) v1[k] = v[1];
      if constexpr (K > 2) v2[k] = v[2];
    }
    px = interpSanitize(px);
    py = interpSanitize(py);
    pz = interpSanitize(pz);
    const int ix = floorToInt(px), iy = floorToInt(py), iz = floorToInt(pz);
    const float tx = px - float(ix), ty = py - float(iy), tz = pz - float(iz);
    const float uy = 1.f - ty, uz = 1.f - tz;
    if constexpr (kPairs) {
      // the products of splatChunkAdd's general form, in its order
      const float a = (1.f - tx) * v[0], b = tx * v[0];
      const float w0 = uy * uz, w1 = ty * uz, w2 = uy * tz, w3 = ty * tz;
      ab0[2 * k] = a * w0;
      ab0[2 * k + 1] = b * w0;
      ab1[2 * k] = a * w1;
      ab1[2 * k + 1] = b * w1;
      ab2[2 * k] = a * w2;
      ab2[2 * k + 1] = b * w2;
      ab3[2 * k] = a * w3;
      ab3[2 * k + 1] = b * w3;
    } else {
      ctx[k] = tx;
      c00[k] = uy * uz;
      c10[k] = ty * uz;
      c01[k] = uy * tz;
      c11[k] = ty * tz;
    }
    const int in =
        int(ix >= 0) & int(iy >= 0) & int(iz >= 0) & int(ix < sx - 1) & int(iy < sy - 1) & int(iz < sz - 1);
    // the index of the clamped corner (for every voxel: no branch; only the
    // interior ones use it, and clamping keeps the int arithmetic in range)
    const int qx = ix < 0 ? 0 : (ix > sx - 1 ? sx - 1 : ix);
    const int qy = iy < 0 ? 0 : (iy > sy - 1 ? sy - 1 : iy);
    const int qz = iz < 0 ? 0 : (iz > sz - 1 ? sz - 1 : iz);
    const Index j = voxelIndex<Index>(qx, qy, qz, sx, sy) - off;
    cj[k] = in ? j : Index(-1);
  }
}

template <class Index, bool kPairs, class Src>
__attribute__((noinline)) void splatChunkPrepBase(const Src sr, SplatChunk<Src::K, Index>& c, int x0, int y, int z,
                                                  size_t base, int m, Index off, int sx, int sy, int sz) {
  splatChunkPrepBody<Index, kPairs>(sr, c, x0, y, z, base, m, off, sx, sy, sz);
}
#ifdef PYCA_X86_DISPATCH
template <class Index, bool kPairs, class Src>
__attribute__((noinline)) PYCA_TARGET_AVX2 void splatChunkPrepAvx2(const Src sr, SplatChunk<Src::K, Index>& c, int x0,
                                                                   int y, int z, size_t base, int m, Index off,
                                                                   int sx, int sy, int sz) {
  splatChunkPrepBody<Index, kPairs>(sr, c, x0, y, z, base, m, off, sx, sy, sz);
}
#endif
template <class Index, bool kPairs, class Src>
PYCA_FORCEINLINE void splatChunkPrep(bool avx2, const Src& sr, SplatChunk<Src::K, Index>& c, int x0, int y, int z,
                                     size_t base, int m, Index off, int sx, int sy, int sz) {
#ifdef PYCA_X86_DISPATCH
  if (avx2) {
    splatChunkPrepAvx2<Index, kPairs>(sr, c, x0, y, z, base, m, off, sx, sy, sz);
    return;
  }
#endif
  (void)avx2;
  splatChunkPrepBase<Index, kPairs>(sr, c, x0, y, z, base, m, off, sx, sy, sz);
}

/// The read-modify-writes of a run: its even voxels, then its odd ones, each
/// in order (so the sums into every slab voxel keep a fixed order); the
/// interior voxels use the precomputed corners and weights, the others
/// accumulateBorderCorners (their point and values fetched again).
template <class Index, bool withW, bool kPairs, class Src>
PYCA_FORCEINLINE void splatChunkAdd(const Src& src, const SplatChunk<Src::K, Index>& c, float* const* ch, Index off,
                                    int x0, int y, int z, size_t base, int m, int sx, int sy, int sz) {
  constexpr int K = Src::K;
  constexpr int nc = withW ? K + 1 : K;
  const size_t dy = size_t(sx), dz = size_t(sx) * size_t(sy);
  const size_t o[8] = {0, 1, dy, dy + 1, dz, dz + 1, dz + dy, dz + dy + 1};
  for (int parity = 0; parity < 2; ++parity)
    for (int k = parity; k < m; k += 2) {
      if (c.j[k] < 0) {
        float px, py, pz, v[K];
        src(x0 + k, y, z, base + size_t(x0 + k), px, py, pz, v);
        accumulateBorderCorners<Index, K>(ch, off, withW, px, py, pz, v, sx, sy, sz);
        continue;
      }
      const size_t j = size_t(c.j[k]);
      if constexpr (kPairs) {
        // the shares precomputed (the same products): loads, adds, stores
        float* p = ch[0] + j;
#ifdef PYCA_SPLAT_SSE2
        __m128 cur[4];
        for (int r = 0; r < 4; ++r)
          cur[r] = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + o[2 * r])));
        for (int r = 0; r < 4; ++r) {
          const __m128 s = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c.ab[r] + 2 * k)));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(p + o[2 * r]), _mm_castps_si128(_mm_add_ps(cur[r], s)));
        }
#else
        float cur[8];
        for (int e = 0; e < 8; ++e) cur[e] = p[o[e]];
        for (int e = 0; e < 8; ++e) p[o[e]] = cur[e] + c.ab[e >> 1][2 * k + (e & 1)];
#endif
        continue;
      }
      const float tx = c.tx[k], ux = 1.f - tx;
      const float wyz[8] = {c.w00[k], c.w00[k], c.w10[k], c.w10[k], c.w01[k], c.w01[k], c.w11[k], c.w11[k]};
      // every corner of every channel is loaded before any is stored: the
      // planes lie a multiple of 4 KiB apart on many grids (128^2 floats), and
      // a load after a store to an address with the same low 12 bits stalls
      // (4K aliasing)
#ifdef PYCA_SPLAT_SSE2
      // each x pair of corners is one 64-bit load and store (movq: unaligned,
      // may-alias); per lane the same product and sum as the scalar form
      // below (no FMA): same bits
      __m128 cur[nc][4];
      for (int q = 0; q < nc; ++q) {
        const float* p = ch[q] + j;
        for (int r = 0; r < 4; ++r)
          cur[q][r] = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + o[2 * r])));
      }
      for (int q = 0; q < nc; ++q) {
        const float s = q < K ? c.v[q][k] : 1.f;
        const __m128 ab = _mm_setr_ps(ux * s, tx * s, 0.f, 0.f);
        float* p = ch[q] + j;
        for (int r = 0; r < 4; ++r)
          _mm_storel_epi64(reinterpret_cast<__m128i*>(p + o[2 * r]),
                           _mm_castps_si128(_mm_add_ps(cur[q][r], _mm_mul_ps(ab, _mm_set1_ps(wyz[2 * r])))));
      }
#else
      float cur[nc][8];
      for (int q = 0; q < nc; ++q) {
        const float* p = ch[q] + j;
        for (int e = 0; e < 8; ++e) cur[q][e] = p[o[e]];
      }
      for (int q = 0; q < nc; ++q) {
        const float s = q < K ? c.v[q][k] : 1.f;
        const float a = ux * s, b = tx * s;
        float* p = ch[q] + j;
        for (int e = 0; e < 8; ++e) p[o[e]] = cur[q][e] + (e & 1 ? b : a) * wyz[e];
      }
#endif
    }
}

/// One term of pass 3's sum over the blocks: dst = 0 + src for the first
/// (the +0 a zeroed slab starts from) or dst += src.
PYCA_FORCEINLINE void sumRun(float* __restrict dst, const float* __restrict src, size_t n, bool first) {
  if (first) {
#pragma omp simd
    for (size_t k = 0; k < n; ++k) dst[k] = 0.f + src[k];
  } else {
#pragma omp simd
    for (size_t k = 0; k < n; ++k) dst[k] += src[k];
  }
}

template <class Index, class Src>
void cpuSplat(const Src& src, const Vec3Di& ss, const SplatTarget& t, SplatMode mode) {
  constexpr int K = Src::K;
  const bool withW = mode == SPLAT_NORMALIZE || t.weights != nullptr;
  const int C = K + (withW ? 1 : 0);
  const SplatPlanes pl = splatPlanes(t.sx, t.sy, t.sz);
  const size_t nOut = size_t(t.sx) * size_t(t.sy) * size_t(t.sz);
  const long long rows = (long long)ss.y * ss.z;
  const size_t nSrc = size_t(rows) * size_t(ss.x);

  int nb = 1;
#ifdef _OPENMP
  if (nSrc >= kOmpMinVoxels) nb = GetCPUMaxThreads();  // not GetCPUThreads(): the bits depend on nb
#endif
  if (nb > rows) nb = int(rows > 0 ? rows : 1);
  std::vector<SplatBlock> blocks(static_cast<size_t>(nb));
  for (int b = 0; b < nb; ++b) {
    blocks[b].rowLo = rows * b / nb;
    blocks[b].rowHi = rows * (b + 1) / nb;
  }

  // Pass 1: the planes each block reaches.
  if (nb > 1) {
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(static, 1)
    for (int b = 0; b < nb; ++b) {
      // The planes floor(p) and floor(p) + 1 of every point along the
      // plane axis, clipped to the grid (a superset of those reached).
      float lo, hi;
      sourceCoordRange(src, ss.x, ss.y, blocks[b].rowLo, blocks[b].rowHi, pl.axis, lo, hi);
      if (hi >= lo) {
        const int l = floorToInt(interpSanitize(lo)), h = floorToInt(interpSanitize(hi)) + 1;
        blocks[b].pLo = l < 0 ? 0 : l;
        blocks[b].pHi = h > pl.nPlanes - 1 ? pl.nPlanes - 1 : h;
        if (blocks[b].pLo > blocks[b].pHi) {  // every point outside
          blocks[b].pLo = 0;
          blocks[b].pHi = -1;
        }
      } else {
        blocks[b].pLo = 0;
        blocks[b].pHi = -1;
      }
    }
    size_t total = 0;
    for (const SplatBlock& bl : blocks)
      if (bl.pHi >= bl.pLo) total += size_t(bl.pHi - bl.pLo + 1) * pl.planeSize;
    if (total > 2 * nOut + size_t(nb) * pl.planeSize * 4) {
      // The points spread too far for per-block slabs: one block.
      blocks.resize(1);
      blocks[0].rowLo = 0;
      blocks[0].rowHi = rows;
      nb = 1;
    }
  }
  if (nb == 1) {
    blocks[0].pLo = 0;
    blocks[0].pHi = pl.nPlanes - 1;
  }
  // An overwrite splat without weights lets block 0 accumulate straight into
  // the target (zeroed over its planes in pass 2): the target then holds
  // 0 + s_0 exactly as the slab would, and pass 3 adds the other blocks'
  // slabs in block order, so the sums (and bits) are those of the slab
  // path. (The callers pass sources that do not alias the target.)
  const bool direct = mode == SPLAT_OVERWRITE && !withW;
  for (size_t b = 0; b < blocks.size(); ++b) {
    SplatBlock& bl = blocks[b];
    if (bl.pHi < bl.pLo) continue;
    bl.len = size_t(bl.pHi - bl.pLo + 1) * pl.planeSize;
    for (int c = 0; c < C; ++c) {
      if (direct && b == 0) {
        bl.ch[c] = t.out[c] + size_t(bl.pLo) * pl.planeSize;
        continue;
      }
      bl.mem[c] = scratchImage(GridInfo(Vec3Di(int(bl.len), 1, 1)), MEM_HOST);
      bl.ch[c] = bl.mem[c]->get();
    }
  }

  // Pass 2: each block splats its rows into its slab.
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(static, 1) if (nb > 1)
  for (int b = 0; b < nb; ++b) {
    SplatBlock& bl = blocks[b];
    if (bl.empty()) continue;
    for (int c = 0; c < C; ++c) std::fill(bl.ch[c], bl.ch[c] + bl.len, 0.f);
    const Index off = Index(bl.pLo) * Index(pl.planeSize);
    float* const ch[4] = {bl.ch[0], bl.ch[1], bl.ch[2], bl.ch[3]};
    const int sx = t.sx, sy = t.sy, sz = t.sz;
    // Row by row, in runs of up to kSplatChunk voxels (a whole row on most
    // grids); within a run the even voxels, then the odd ones (neighbours of
    // a smooth deformation push to the same corners: interleaving keeps
    // consecutive read-modify-writes apart). Each run is done in two loops:
    // a vectorised one over contiguous voxels computing the corners and
    // weights (splatChunkPrep), then the scalar read-modify-writes
    // (splatChunkAdd).
    SplatChunk<K, Index> chunk;
    const bool avx2 = cpuUseAvx2();
    for (long long r = bl.rowLo; r < bl.rowHi; ++r) {
      const int y = int(r % ss.y), z = int(r / ss.y);
      const size_t base = size_t(r) * size_t(ss.x);
      for (int x0 = 0; x0 < ss.x; x0 += kSplatChunk) {
        const int m = ss.x - x0 < kSplatChunk ? ss.x - x0 : kSplatChunk;
        if (withW) {
          splatChunkPrep<Index, false>(avx2, src, chunk, x0, y, z, base, m, off, sx, sy, sz);
          splatChunkAdd<Index, true, false>(src, chunk, ch, off, x0, y, z, base, m, sx, sy, sz);
        } else if constexpr (K == 1) {
          splatChunkPrep<Index, true>(avx2, src, chunk, x0, y, z, base, m, off, sx, sy, sz);
          splatChunkAdd<Index, false, true>(src, chunk, ch, off, x0, y, z, base, m, sx, sy, sz);
        } else {
          splatChunkPrep<Index, false>(avx2, src, chunk, x0, y, z, base, m, off, sx, sy, sz);
          splatChunkAdd<Index, false, false>(src, chunk, ch, off, x0, y, z, base, m, sx, sy, sz);
        }
      }
    }
  }

  // Pass 3: sum the slabs plane by plane, in block order: for every target
  // voxel (0 + s_0) + s_1 + ... over the blocks whose slab holds its plane.
  // (Plain loops over L1-sized runs: the compiler made the former 64-float
  // runs' copies memcpy calls, which dominated the whole splat.)
  const int np = pl.nPlanes;
  if (direct) {
    // block 0 wrote its planes; the others' slabs are added to the target
    // (the first one reaching a plane that block 0 does not: 0 + s_b), and
    // planes no block reaches are zeroed
    const SplatBlock& b0 = blocks[0];
    if (nb == 1 && !b0.empty() && b0.pLo == 0 && b0.pHi == np - 1) return;
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(static) if (nOut >= kOmpMinVoxels)
    for (int p = 0; p < np; ++p) {
      const size_t j0 = size_t(p) * pl.planeSize, n = pl.planeSize;
      bool first = b0.empty() || p < b0.pLo || p > b0.pHi;
      for (size_t b = 1; b < blocks.size(); ++b) {
        const SplatBlock& bl = blocks[b];
        if (bl.empty() || p < bl.pLo || p > bl.pHi) continue;
        const size_t o = j0 - size_t(bl.pLo) * pl.planeSize;
        for (int c = 0; c < K; ++c) sumRun(t.out[c] + j0, bl.ch[c] + o, n, first);
        first = false;
      }
      if (first)  // no block reaches this plane
        for (int c = 0; c < K; ++c) std::fill(t.out[c] + j0, t.out[c] + j0 + n, 0.f);
    }
    return;
  }
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(static) if (nOut >= kOmpMinVoxels)
  for (int p = 0; p < np; ++p) {
    constexpr size_t kRun = 512;
    const size_t j0 = size_t(p) * pl.planeSize, n = pl.planeSize;
    alignas(64) float acc[4][kRun];
    for (size_t s0 = 0; s0 < n; s0 += kRun) {
      const size_t m = n - s0 < kRun ? n - s0 : kRun;
      bool first = true;
      for (const SplatBlock& bl : blocks) {
        if (bl.empty() || p < bl.pLo || p > bl.pHi) continue;
        const size_t o = j0 + s0 - size_t(bl.pLo) * pl.planeSize;
        for (int c = 0; c < C; ++c) sumRun(acc[c], bl.ch[c] + o, m, first);
        first = false;
      }
      if (first)  // no block reaches this plane
        for (int c = 0; c < C; ++c)
          for (size_t k = 0; k < m; ++k) acc[c][k] = 0.f;
      for (int c = 0; c < K; ++c) {
        float* o = t.out[c] + j0 + s0;
        const float* ac = acc[c];
        if (mode == SPLAT_ACCUMULATE) {
#pragma omp simd
          for (size_t k = 0; k < m; ++k) o[k] += ac[k];
        } else if (mode == SPLAT_NORMALIZE) {
          const float* aw = acc[K];
#pragma omp simd
          for (size_t k = 0; k < m; ++k) o[k] = aw[k] > 0.f ? ac[k] / aw[k] : 0.f;
        } else {
#pragma omp simd
          for (size_t k = 0; k < m; ++k) o[k] = ac[k];
        }
      }
      if (t.weights) {
        float* o = t.weights + j0 + s0;
        const float* aw = acc[K];
#pragma omp simd
        for (size_t k = 0; k < m; ++k) o[k] += aw[k];
      }
    }
  }
}

// ---- GPU -------------------------------------------------------------------------

#ifdef __CUDACC__
template <class Index, class Src>
__global__ void splatKernel(const Src src, int ssx, int ssy, int ssz, SplatTarget t, float* w) {
  constexpr int K = Src::K;
  const int x = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (x >= ssx) return;
  const long long rows = (long long)ssy * ssz;
  for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
       r += (long long)gridDim.y * blockDim.y) {
    float px, py, pz, v[K];
    src(x, int(r % ssy), int(r / ssy), size_t(r) * size_t(ssx) + size_t(x), px, py, pz, v);
    splatPoint<Index>(px, py, pz, t.sx, t.sy, t.sz, [&](Index idx, float wt, int, int, int) {
      for (int c = 0; c < K; ++c) atomicAdd(t.out[c] + idx, wt * v[c]);
      if (w) atomicAdd(w + idx, wt);
    });
  }
}

/// out[c] = w > 0 ? out[c] / w : 0.
struct SplatNormalize {
  float* out[3];
  const float* w;
  int k;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i) const {
    const float wi = w[i];
    for (int c = 0; c < k; ++c) out[c][i] = wi > 0.f ? out[c][i] / wi : 0.f;
  }
};

/// GPU splat; weightScratch (nOut floats) is needed for SPLAT_NORMALIZE.
template <class Index, class Src>
void gpuSplat(const Src& src, const Vec3Di& ss, const SplatTarget& t, SplatMode mode, float* weightScratch,
              StreamT st) {
  constexpr int K = Src::K;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(st);
  const size_t nOut = size_t(t.sx) * size_t(t.sy) * size_t(t.sz);
  if (mode != SPLAT_ACCUMULATE)
    for (int c = 0; c < K; ++c) cudaMemsetAsync(t.out[c], 0, nOut * sizeof(float), s);
  float* w = t.weights;
  if (mode == SPLAT_NORMALIZE) {
    w = weightScratch;
    cudaMemsetAsync(w, 0, nOut * sizeof(float), s);
  }
  const long long rows = (long long)ss.y * ss.z;
  long long gy = (rows + 7) / 8;
  if (gy > 65535) gy = 65535;
  splatKernel<Index><<<dim3(unsigned((ss.x + 31) / 32), unsigned(gy)), dim3(32, 8), 0, s>>>(src, ss.x, ss.y,
                                                                                          ss.z, t, w);
  checkLaunch(__FILE__, __LINE__);
  if (mode == SPLAT_NORMALIZE) {
    SplatNormalize nf{{t.out[0], t.out[1], t.out[2]}, w, K};
    gpuForEachVoxel(nf, t.sx, t.sy, t.sz, st);
  }
}
#endif

/// Splats src (a source grid of size ss) into t on the back end of mt.
/// The caller makes sure no target array aliases an array src reads.
template <class Index, class Src>
void splat(MemoryType mt, const Src& src, const Vec3Di& ss, const SplatTarget& t, SplatMode mode,
           float* gpuWeightScratch, StreamT st) {
  if (t.sx <= 0 || t.sy <= 0 || t.sz <= 0) return;
  if (mt == MEM_DEVICE) {
#ifdef __CUDACC__
    if (ss.x > 0 && ss.y > 0 && ss.z > 0) {
      gpuSplat<Index>(src, ss, t, mode, gpuWeightScratch, st);
    } else if (mode != SPLAT_ACCUMULATE) {
      const size_t nOut = size_t(t.sx) * size_t(t.sy) * size_t(t.sz);
      for (int c = 0; c < Src::K; ++c)
        cudaMemsetAsync(t.out[c], 0, nOut * sizeof(float), reinterpret_cast<cudaStream_t>(st));
    }
#else
    (void)gpuWeightScratch;
    throwGpuNotCompiled(__FILE__, __LINE__);
#endif
  } else {
    (void)gpuWeightScratch;
    (void)st;
    cpuSplat<Index>(src, ss, t, mode);
  }
}

}  // namespace detail
}  // namespace PyCA

#endif
