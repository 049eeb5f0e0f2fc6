// Warp.cxx -- the interpolation-based operators: deforming images and fields
// (ApplyH, ApplyV, ApplyVInv, ComposeTranslation), composing deformations
// (Compose*, UpdateInverse, FixedPointInverse), resampling (Resample*,
// ResampleWorld) and CoAd. Each is: checks, the strategy dispatch, then one
// voxel functor of DeformKernels.h run by forEachVoxel.
#include <type_traits>

#include "FOpers.h"
#include "HFOpers.h"
#include "IFOpers.h"
#include "IOpers.h"
#include "VFOpers.h"

#include "Apply.h"
#include "DeformKernels.h"
#include "MemAlloc.h"
#include "OpDispatch.h"
#include "Scratch.h"
#include "VoxelLaunch.h"
#include "cpu/FieldLerpAvx2.h"
#include "cpu/TriLerpAvx2.h"

namespace PyCA {

#ifdef PYCA_HAVE_TRILERP_AVX2
namespace detail {
/// The CPU rows of the CLAMP-trilinear image warps (ApplyH, ApplyV,
/// ComposeTranslation, Resample, ResampleWorld with the default strategy)
/// use the AVX2 pair-load sampler: the coordinate source fills a chunk of
/// sample points, triLerpClampAvx2 samples them.
template <class At>
struct CpuRow<kern::WarpImage<At, kern::ImageSampler<BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR, int>>> {
  using Fn = kern::WarpImage<At, kern::ImageSampler<BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR, int>>;
  static constexpr bool kAvx2 = true;
  static void avx2(const Fn& fn, int y, int z, size_t base, int nx) {
    if (fn.s.sx < 2) {
      voxelRow(fn, y, z, base, nx);
      return;
    }
    if constexpr (std::is_same<At, kern::AtH>::value) {
      // the H-field holds the sample points: no copy
      triLerpClampAvx2(fn.s.img, fn.s.sx, fn.s.sy, fn.s.sz, fn.at.hx + base, fn.at.hy + base, fn.at.hz + base,
                       fn.out + base, nx);
      return;
    }
    constexpr int kChunk = 256;
    float px[kChunk], py[kChunk], pz[kChunk];
    const At at = fn.at;
    for (int x0 = 0; x0 < nx; x0 += kChunk) {
      const int m = nx - x0 < kChunk ? nx - x0 : kChunk;
#pragma omp simd
      for (int k = 0; k < m; ++k) {
        const kern::P3 p = at(x0 + k, y, z, base + size_t(x0 + k));
        px[k] = p.x;
        py[k] = p.y;
        pz[k] = p.z;
      }
      triLerpClampAvx2(fn.s.img, fn.s.sx, fn.s.sy, fn.s.sz, px, py, pz, fn.out + base + size_t(x0), m);
    }
  }
};
}  // namespace detail
#endif

#ifdef PYCA_HAVE_FIELDLERP_AVX2
namespace detail {

constexpr int kFieldChunk = 256;

template <BackgroundStrategy bg>
PYCA_FORCEINLINE void sampleField(const kern::FieldSampler<bg, int>& s, const float* px, const float* py,
                                  const float* pz, float* ox, float* oy, float* oz, int n) {
  fieldLerpAvx2<bg>(s.fx, s.fy, s.fz, s.sx, s.sy, s.sz, px, py, pz, ox, oy, oz, n);
}

template <class At>
struct IsAtH : std::false_type {};
template <>
struct IsAtH<kern::AtH> : std::true_type {};
template <class At>
struct IsAtIdMinusField : std::false_type {};
template <BackgroundStrategy bw>
struct IsAtIdMinusField<kern::AtIdMinusSampled<kern::FieldSampler<bw, int>>> : std::true_type {};

/// The sample points of voxels x0 .. x0 + m - 1 of row (y, z) (index i0 at
/// x0): pointers into the H-field itself (AtH), or filled into p[3] (the
/// others; UpdateInverse's Id - w(c) with the AVX2 sampler for w).
template <class At>
PYCA_TARGET_AVX2 PYCA_FORCEINLINE void chunkPoints(const At& at, int x0, int y, int z, size_t i0, int m,
                                                   float (*p)[kFieldChunk], const float* q[3]) {
  if constexpr (IsAtH<At>::value) {
    q[0] = at.hx + i0;
    q[1] = at.hy + i0;
    q[2] = at.hz + i0;
    return;
  } else if constexpr (IsAtIdMinusField<At>::value) {
    sampleField(at.w, at.cx + i0, at.cy + i0, at.cz + i0, p[0], p[1], p[2], m);
    const float fy = float(y), fz = float(z);
#pragma omp simd
    for (int k = 0; k < m; ++k) {
      p[0][k] = float(x0 + k) - p[0][k];
      p[1][k] = fy - p[1][k];
      p[2][k] = fz - p[2][k];
    }
  } else {
#pragma omp simd
    for (int k = 0; k < m; ++k) {
      const kern::P3 pt = at(x0 + k, y, z, i0 + size_t(k));
      p[0][k] = pt.x;
      p[1][k] = pt.y;
      p[2][k] = pt.z;
    }
  }
  q[0] = p[0];
  q[1] = p[1];
  q[2] = p[2];
}

/// The CPU rows of every trilinear field warp (ComposeHH/HV/VH/VInvH,
/// ApplyH/ApplyV of fields, Resample of fields, UpdateInverse) use the AVX2
/// field sampler: the coordinate source fills a chunk of sample points,
/// fieldLerpAvx2 samples them, the post step runs on the chunk.
template <class At, BackgroundStrategy bg, class Post>
struct CpuRow<kern::WarpField<At, kern::FieldSampler<bg, int>, Post>> {
  using Fn = kern::WarpField<At, kern::FieldSampler<bg, int>, Post>;
  static constexpr bool kAvx2 = true;
  static PYCA_TARGET_AVX2 void avx2(const Fn& fn, int y, int z, size_t base, int nx) {
    if constexpr (IsAtIdMinusField<At>::value) {
      if (fn.at.w.sx < 2) {
        voxelRowAvx2(fn, y, z, base, nx);
        return;
      }
    }
    if (fn.s.sx < 2) {
      voxelRowAvx2(fn, y, z, base, nx);
      return;
    }
    float p[3][kFieldChunk];
    float v[3][kFieldChunk];
    const float* q[3];
    for (int x0 = 0; x0 < nx; x0 += kFieldChunk) {
      const int m = nx - x0 < kFieldChunk ? nx - x0 : kFieldChunk;
      const size_t i0 = base + size_t(x0);
      chunkPoints(fn.at, x0, y, z, i0, m, p, q);
      if constexpr (std::is_same<Post, kern::PostNone>::value) {
        sampleField(fn.s, q[0], q[1], q[2], fn.ox + i0, fn.oy + i0, fn.oz + i0, m);
      } else {
        sampleField(fn.s, q[0], q[1], q[2], v[0], v[1], v[2], m);
        const Post post = fn.post;
        float *ox = fn.ox + i0, *oy = fn.oy + i0, *oz = fn.oz + i0;
#pragma omp simd
        for (int k = 0; k < m; ++k) {
          float a = v[0][k], b = v[1][k], c = v[2][k];
          post(kern::P3{q[0][k], q[1][k], q[2][k]}, a, b, c);
          ox[k] = a;
          oy[k] = b;
          oz[k] = c;
        }
      }
    }
  }
};

/// CoAd's CPU rows: m sampled at g for a chunk with the AVX2 field sampler,
/// then the Jacobian part of the voxel body (CoAdOp::finish).
template <BackgroundStrategy bg>
struct CpuRow<kern::CoAdOp<kern::FieldSampler<bg, int>>> {
  using Fn = kern::CoAdOp<kern::FieldSampler<bg, int>>;
  static constexpr bool kAvx2 = true;
  static PYCA_TARGET_AVX2 void avx2(const Fn& fn, int y, int z, size_t base, int nx) {
    if (fn.m.sx < 2 || nx <= 2) {
      voxelRowAvx2(fn, y, z, base, nx);
      return;
    }
    float v[3][kFieldChunk];
    const Fn f = fn;
    for (int x0 = 0; x0 < nx; x0 += kFieldChunk) {
      const int m = nx - x0 < kFieldChunk ? nx - x0 : kFieldChunk;
      const size_t i0 = base + size_t(x0);
      sampleField(f.m, f.gx + i0, f.gy + i0, f.gz + i0, v[0], v[1], v[2], m);
      int k0 = 0, k1 = m;  // [k0, k1): interior voxels of the chunk
      if (x0 == 0) {
        f.template finish<false>(0, y, z, base, v[0][0], v[1][0], v[2][0]);
        k0 = 1;
      }
      const bool last = x0 + m == nx;
      if (last) k1 = m - 1;
#pragma omp simd
      for (int k = k0; k < k1; ++k)
        f.template finish<true>(x0 + k, y, z, i0 + size_t(k), v[0][k], v[1][k], v[2][k]);
      if (last) f.template finish<false>(nx - 1, y, z, i0 + size_t(m - 1), v[0][m - 1], v[1][m - 1], v[2][m - 1]);
    }
  }
};

}  // namespace detail
#endif

namespace Opers {

using detail::BG_FIELD;
using detail::BG_HFIELD;
using detail::BG_IMAGE;
using detail::BG_VFIELD;
using detail::checkAll;
using detail::dataOf;
using detail::forEachVoxel;
using detail::Unaliased;

namespace {

const char* const kImageBgMsg = "Unknown/unimplemented background strategy";
const char* const kResampleBgMsg = "Unknown background strategy";
const char* const kFieldBgMsg = "Unknown/unsupported background strategy";

void checkMemTypes(const Image3D& o, const Image3D& i) { MK_CHECK2_MEM(o, i); }
void checkMemTypes(const Field3D& o, const Field3D& i) { MK_CHECK2_MEM(o, i); }

/// Voxel-coordinate step k = s / spacing (V-fields added to voxel coordinates).
kern::AtV atV(const Field3D& v, float s) {
  const Vec3Df& sp = v.spacing();
  return kern::AtV{dataOf(v, 0), dataOf(v, 1), dataOf(v, 2), s / sp.x, s / sp.y, s / sp.z};
}
kern::AtH atH(const Field3D& h) { return kern::AtH{dataOf(h, 0), dataOf(h, 1), dataOf(h, 2)}; }
kern::AtLin atShift(const Vec3Df& t) { return kern::AtLin{1.f, t.x, 1.f, t.y, 1.f, t.z}; }

/// a_o(x) = a_i(at(x)) for images.
template <class At>
void warpImage(Image3D& a_o, const Image3D& a_i, const At& at, BackgroundStrategy bg, InterpT interp,
               const char* bgMsg, StreamT st) {
  detail::dispatchBg<BG_IMAGE>(bg, bgMsg, [&](auto b) {
    detail::dispatchInterp(interp, [&](auto it) {
      Unaliased<Image3D> in(a_i, st, a_o);
      const Image3D& src = in;
      const Vec3Di s = src.size();
      detail::dispatchIndex(src.nVox(), [&](auto ix) {
        using I = typename decltype(ix)::type;
        using Sampler = kern::ImageSampler<decltype(b)::value, decltype(it)::value, I>;
        const kern::WarpImage<At, Sampler> fn{at, Sampler{dataOf(src), s.x, s.y, s.z}, dataOf(a_o)};
        forEachVoxel(a_o.memType(), fn, a_o.size(), st);
      });
    });
  });
}

/// a_o(x) = post(at(x), a_i(at(x))) for fields, bg from the strategy set.
template <detail::BgSet set, class At, class Post>
void warpField(Field3D& a_o, const Field3D& a_i, const At& at, const Post& post, BackgroundStrategy bg,
               const char* bgMsg, StreamT st) {
  detail::dispatchBg<set>(bg, bgMsg, [&](auto b) {
    Unaliased<Field3D> in(a_i, st, a_o);
    const Field3D& src = in;
    const Vec3Di s = src.size();
    detail::dispatchIndex(src.nVox(), [&](auto ix) {
      using I = typename decltype(ix)::type;
      using Sampler = kern::FieldSampler<decltype(b)::value, I>;
      const kern::WarpField<At, Sampler, Post> fn{
          at, Sampler{dataOf(src, 0), dataOf(src, 1), dataOf(src, 2), s.x, s.y, s.z}, post,
          dataOf(a_o, 0), dataOf(a_o, 1), dataOf(a_o, 2)};
      forEachVoxel(a_o.memType(), fn, a_o.size(), st);
    });
  });
}

/// Sampling point and scale of the voxel-grid resampling from size si to so.
kern::AtLin resampleAt(const Vec3Di& si, const Vec3Di& so, bool centred) {
  const float rx = float(si.x) / float(so.x), ry = float(si.y) / float(so.y), rz = float(si.z) / float(so.z);
  return centred ? kern::AtLin{rx, (rx - 1.f) / 2.f, ry, (ry - 1.f) / 2.f, rz, (rz - 1.f) / 2.f}
                 : kern::AtLin{rx, 0.f, ry, 0.f, rz, 0.f};
}

void copyData(Image3D& a_o, const Image3D& a_i, StreamT st) {
  CopyMemory(dataOf(a_o), a_o.memType(), dataOf(a_i), a_i.memType(), a_o.nVox() * sizeof(float), st);
}
void copyData(Field3D& a_o, const Field3D& a_i, StreamT st) {
  for (int d = 0; d < 3; ++d)
    CopyMemory(dataOf(a_o, d), a_o.memType(), dataOf(a_i, d), a_i.memType(), a_o.nVox() * sizeof(float),
               st);
}

void resampleField(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg, bool rescaleVector, StreamT st) {
  checkMemTypes(a_o, a_i);
  PRECONDITION(detail::bgAccepted(BG_FIELD, bg), kFieldBgMsg);
  const Vec3Di si = a_i.size(), so = a_o.size();
  if (si == so) {
    if (!detail::overlaps(a_o, a_i)) copyData(a_o, a_i, st);
    return;
  }
  if (a_i.nVox() == 0) {  // nothing to sample (the samplers need a voxel)
    SetMem(a_o, 0.f, st);
    return;
  }
  const kern::AtLin at = resampleAt(si, so, true);
  if (rescaleVector)
    warpField<BG_FIELD>(a_o, a_i, at, kern::PostScale{1.f / at.ax, 1.f / at.ay, 1.f / at.az}, bg, kFieldBgMsg,
                        st);
  else
    warpField<BG_FIELD>(a_o, a_i, at, kern::PostNone{}, bg, kFieldBgMsg, st);
}

}  // namespace

// ---- images (IFOpers.h, IOpers.h) ------------------------------------------------

void ApplyH(Image3D& a_o, const Image3D& a_i, const Field3D& a_h, BackgroundStrategy bg, InterpT interp,
            StreamT st) {
  checkAll(a_o, a_i, a_h);
  warpImage(a_o, a_i, atH(a_h), bg, interp, kImageBgMsg, st);
}

void ApplyV(Image3D& a_o, const Image3D& a_i, const Field3D& a_u, const float& delta, BackgroundStrategy bg,
            InterpT interp, StreamT st, bool) {
  checkAll(a_o, a_i, a_u);
  warpImage(a_o, a_i, atV(a_u, delta), bg, interp, kImageBgMsg, st);
}

void ApplyVInv(Image3D& a_o, const Image3D& a_i, const Field3D& a_u, const float& delta, BackgroundStrategy bg,
               InterpT interp, StreamT st, bool) {
  checkAll(a_o, a_i, a_u);
  warpImage(a_o, a_i, atV(a_u, -delta), bg, interp, kImageBgMsg, st);
}

void ComposeTranslation(Image3D& a_o, const Image3D& a_i, const Vec3Df& t, BackgroundStrategy bg,
                        InterpT interp, StreamT st, bool) {
  checkAll(a_o, a_i);
  warpImage(a_o, a_i, atShift(t), bg, interp, kImageBgMsg, st);
}

void Resample(Image3D& a_o, const Image3D& a_i, BackgroundStrategy bg, InterpT interp, bool useOriginOffset,
              StreamT st) {
  checkMemTypes(a_o, a_i);
  PRECONDITION(detail::bgAccepted(BG_IMAGE, bg), kResampleBgMsg);
  PRECONDITION(interp == INTERP_NN || interp == INTERP_LINEAR || interp == INTERP_CUBIC,
               "Unknown interpolation strategy");
  const Vec3Di si = a_i.size(), so = a_o.size();
  if (si == so) {
    if (!detail::overlaps(a_o, a_i)) copyData(a_o, a_i, st);
    return;
  }
  if (a_i.nVox() == 0) {  // nothing to sample (the samplers need a voxel)
    SetMem(a_o, 0.f, st);
    return;
  }
  warpImage(a_o, a_i, resampleAt(si, so, useOriginOffset), bg, interp, kResampleBgMsg, st);
}

void ResampleWorld(Image3D& a_o, const Image3D& a_i, BackgroundStrategy bg, InterpT interp, StreamT st) {
  checkMemTypes(a_o, a_i);
  if (a_i.nVox() == 0) {  // nothing to sample (the samplers need a voxel)
    PRECONDITION(detail::bgAccepted(BG_IMAGE, bg), kResampleBgMsg);
    PRECONDITION(interp == INTERP_NN || interp == INTERP_LINEAR || interp == INTERP_CUBIC,
                 "Unknown interpolation strategy");
    SetMem(a_o, 0.f, st);
    return;
  }
  const Vec3Df &so = a_o.spacing(), &oo = a_o.origin(), &si = a_i.spacing(), &oi = a_i.origin();
  const kern::AtLin at{so.x / si.x, (oo.x - oi.x) / si.x, so.y / si.y, (oo.y - oi.y) / si.y,
                       so.z / si.z, (oo.z - oi.z) / si.z};
  warpImage(a_o, a_i, at, bg, interp, kResampleBgMsg, st);
}

// ---- fields (FOpers.h) -----------------------------------------------------------

void ApplyH(Field3D& a_o, const Field3D& a_i, const Field3D& h, BackgroundStrategy bg, StreamT st) {
  checkAll(a_o, a_i, h);
  warpField<BG_FIELD>(a_o, a_i, atH(h), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ApplyV(Field3D& a_o, const Field3D& a_i, const Field3D& u, BackgroundStrategy bg, const float& delta,
            StreamT st, bool) {
  checkAll(a_o, a_i, u);
  warpField<BG_FIELD>(a_o, a_i, atV(u, delta), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ApplyVInv(Field3D& a_o, const Field3D& a_i, const Field3D& u, BackgroundStrategy bg, const float& delta,
               StreamT st, bool) {
  checkAll(a_o, a_i, u);
  warpField<BG_FIELD>(a_o, a_i, atV(u, -delta), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ComposeTranslation(Field3D& a_h, const Field3D& a_f, const Vec3Df& t, BackgroundStrategy bg, StreamT st,
                        bool) {
  checkAll(a_h, a_f);
  warpField<BG_FIELD>(a_h, a_f, atShift(t), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ComposeHH(Field3D& a_f, const Field3D& a_g, const Field3D& a_h, BackgroundStrategy bg, StreamT st) {
  checkAll(a_f, a_g, a_h);
  warpField<BG_HFIELD>(a_f, a_g, atH(a_h), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ComposeVH(Field3D& a_h, const Field3D& a_v, const Field3D& a_g, const float& delta, BackgroundStrategy bg,
               StreamT st, bool) {
  checkAll(a_h, a_v, a_g);
  const Vec3Df& sp = a_h.spacing();
  warpField<BG_VFIELD>(a_h, a_v, atH(a_g), kern::PostAddPoint{delta / sp.x, delta / sp.y, delta / sp.z}, bg,
                       kFieldBgMsg, st);
}

void ComposeVInvH(Field3D& a_h, const Field3D& a_v, const Field3D& a_g, const float& delta,
                  BackgroundStrategy bg, StreamT st, bool) {
  checkAll(a_h, a_v, a_g);
  const Vec3Df& sp = a_h.spacing();
  warpField<BG_VFIELD>(a_h, a_v, atH(a_g), kern::PostAddPoint{-delta / sp.x, -delta / sp.y, -delta / sp.z},
                       bg, kFieldBgMsg, st);
}

void ComposeHV(Field3D& a_h, const Field3D& a_g, const Field3D& a_v, const float& delta, BackgroundStrategy bg,
               StreamT st, bool) {
  checkAll(a_h, a_g, a_v);
  warpField<BG_HFIELD>(a_h, a_g, atV(a_v, delta), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ComposeHVInv(Field3D& a_h, const Field3D& a_g, const Field3D& a_v, const float& delta,
                  BackgroundStrategy bg, StreamT st, bool) {
  checkAll(a_h, a_g, a_v);
  warpField<BG_HFIELD>(a_h, a_g, atV(a_v, -delta), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ComposeHTranslation(Field3D& h, const Field3D& f, const Vec3Df& t, BackgroundStrategy bg, StreamT st,
                         bool) {
  checkAll(h, f);
  warpField<BG_FIELD>(h, f, atShift(t), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void ComposeVTranslation(Field3D& v, const Field3D& g, const Vec3Df& t, BackgroundStrategy bg, StreamT st,
                         bool) {
  checkAll(v, g);
  warpField<BG_FIELD>(v, g, atShift(t), kern::PostNone{}, bg, kFieldBgMsg, st);
}

void Resample(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg, bool rescaleVector, StreamT st) {
  resampleField(a_o, a_i, bg, rescaleVector, st);
}
void ResampleH(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg, bool rescaleVector, StreamT st) {
  resampleField(a_o, a_i, bg, rescaleVector, st);
}
void ResampleV(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg, bool rescaleVector, StreamT st) {
  resampleField(a_o, a_i, bg, rescaleVector, st);
}

void UpdateInverse(Field3D& ginv0t1, Field3D& scratchV, const Field3D& ginv0t, const Field3D& w,
                   unsigned int numIter, StreamT st, bool) {
  checkAll(ginv0t1, scratchV, ginv0t, w);
  // ginv0t and w are sampled at every iteration: copies if the output is one of them.
  Unaliased<Field3D> g0(ginv0t, st, ginv0t1), ws(w, st, ginv0t1);
  const Field3D &G0 = g0, &W = ws;
  if (numIter == 0) {
    copyData(ginv0t1, G0, st);
    return;
  }
  const Vec3Di s = ginv0t1.size();
  // One fused pass per iteration: ginv0t1(x) := ginv0t(x - w(c(x))), with
  // c = ginv0t in the first pass (no copy) and c = ginv0t1 after: each voxel
  // reads c only at itself, so the later passes run in place.
  detail::dispatchIndex(ginv0t1.nVox(), [&](auto ix) {
    using I = typename decltype(ix)::type;
    using WS = kern::FieldSampler<BACKGROUND_STRATEGY_PARTIAL_ZERO, I>;
    using GS = kern::FieldSampler<BACKGROUND_STRATEGY_PARTIAL_ID, I>;
    using At = kern::AtIdMinusSampled<WS>;
    const WS wsamp{dataOf(W, 0), dataOf(W, 1), dataOf(W, 2), s.x, s.y, s.z};
    const GS gsamp{dataOf(G0, 0), dataOf(G0, 1), dataOf(G0, 2), s.x, s.y, s.z};
    const kern::WarpField<At, GS, kern::PostNone> first{
        At{dataOf(G0, 0), dataOf(G0, 1), dataOf(G0, 2), wsamp}, gsamp, kern::PostNone{},
        dataOf(ginv0t1, 0), dataOf(ginv0t1, 1), dataOf(ginv0t1, 2)};
    const kern::WarpField<At, GS, kern::PostNone> next{
        At{dataOf(ginv0t1, 0), dataOf(ginv0t1, 1), dataOf(ginv0t1, 2), wsamp}, gsamp, kern::PostNone{},
        dataOf(ginv0t1, 0), dataOf(ginv0t1, 1), dataOf(ginv0t1, 2)};
    forEachVoxel(ginv0t1.memType(), first, s, st);
    for (unsigned int k = 1; k < numIter; ++k) forEachVoxel(ginv0t1.memType(), next, s, st);
  });
}

void FixedPointInverse(Field3D& ginv, const Field3D& g, unsigned int numIter, StreamT st, bool) {
  checkAll(ginv, g);
  Unaliased<Field3D> gs(g, st, ginv);
  InverseZerothOrder(ginv, gs, st);
  if (numIter == 0) return;
  std::unique_ptr<Field3D> r = detail::scratchField(ginv.grid(), ginv.memType());
  for (unsigned int k = 0; k < numIter; ++k) {
    ComposeHH(*r, gs, ginv, BACKGROUND_STRATEGY_PARTIAL_ID, st);  // r = g o ginv
    const kern::SubAddIdentity fn{dataOf(ginv, 0), dataOf(ginv, 1), dataOf(ginv, 2), dataOf(*r, 0), dataOf(*r, 1),
                                  dataOf(*r, 2), dataOf(ginv, 0), dataOf(ginv, 1), dataOf(ginv, 2)};
    forEachVoxel(ginv.memType(), fn, ginv.size(), st);
  }
}

void CoAd(Field3D& n, const Field3D& g, const Field3D& m, BackgroundStrategy bg, StreamT st, bool) {
  checkAll(n, g, m);
  detail::dispatchBg<BG_VFIELD>(bg, kFieldBgMsg, [&](auto b) {
    Unaliased<Field3D> gs(g, st, n), ms(m, st, n);
    const Field3D &G = gs, &Mf = ms;
    const Vec3Di s = n.size();
    detail::dispatchIndex(n.nVox(), [&](auto ix) {
      using I = typename decltype(ix)::type;
      using Sampler = kern::FieldSampler<decltype(b)::value, I>;
      const kern::CoAdOp<Sampler> fn{dataOf(G, 0),
                                     dataOf(G, 1),
                                     dataOf(G, 2),
                                     Sampler{dataOf(Mf, 0), dataOf(Mf, 1), dataOf(Mf, 2), s.x, s.y, s.z},
                                     detail::VoxelCentral{s.x, s.y, s.z, 1.f, 1.f, 1.f},
                                     dataOf(n, 0),
                                     dataOf(n, 1),
                                     dataOf(n, 2)};
      forEachVoxel(n.memType(), fn, s, st);
    });
  });
}

}  // namespace Opers
}  // namespace PyCA
