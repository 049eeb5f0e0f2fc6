// SplatOpers.cxx -- the splatting operators (Splat, SplatField, SplatH,
// SplatV, SplatWorld, Ad): a splat source per operator (the point and the
// values each source voxel pushes), run by the shared engine of Splat.h.
#include "FOpers.h"
#include "HFOpers.h"
#include "IFOpers.h"
#include "IOpers.h"
#include "VFOpers.h"

#include "Apply.h"
#include "DeformKernels.h"
#include "OpDispatch.h"
#include "Scratch.h"
#include "Splat.h"
#include "Stencil.h"
#include "VoxelLaunch.h"

namespace PyCA {
namespace kern {

/// Image values pushed to the points of an H-field.
/// Points of an H-field.
struct AtHPoint {
  const float *hx, *hy, *hz;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void point(int, int, int, size_t i, float& px, float& py, float& pz) const {
    px = hx[i];
    py = hy[i];
    pz = hz[i];
  }
  const float* coords(int axis) const { return axis == 2 ? hz : (axis == 1 ? hy : hx); }
};

struct SplatImageSrc : AtHPoint {
  static constexpr int K = 1;
  const float* v;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i, float& px, float& py, float& pz,
                                                   float* out) const {
    px = hx[i];
    py = hy[i];
    pz = hz[i];
    out[0] = v[i];
  }
};

/// Field values (or, with disp = 1, the displacement v - x of an H-field).
struct SplatFieldSrc : AtHPoint {
  static constexpr int K = 3;
  const float *vx, *vy, *vz;
  float disp;  // 1 or 0: v - disp * x (a product, not a select: the CPU loop vectorises; v - 0 is v)
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i, float& px, float& py, float& pz,
                                                   float* out) const {
    px = hx[i];
    py = hy[i];
    pz = hz[i];
    out[0] = vx[i] - disp * float(x);
    out[1] = vy[i] - disp * float(y);
    out[2] = vz[i] - disp * float(z);
  }
};

/// Image values pushed to their world points on the target grid.
struct SplatWorldSrc {
  static constexpr int K = 1;
  AtLin at;
  const float* v;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void point(int x, int y, int z, size_t i, float& px, float& py,
                                              float& pz) const {
    const P3 p = at(x, y, z, i);
    px = p.x;
    py = p.y;
    pz = p.z;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i, float& px, float& py, float& pz,
                                                   float* out) const {
    const P3 p = at(x, y, z, i);
    px = p.x;
    py = p.y;
    pz = p.z;
    out[0] = v[i];
  }
};

/// Ad: |Dg| Dg X pushed to g(x).
struct SplatAdSrc {
  static constexpr int K = 3;
  const float *gx, *gy, *gz, *X0, *X1, *X2;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void point(int, int, int, size_t i, float& px, float& py, float& pz) const {
    px = gx[i];
    py = gy[i];
    pz = gz[i];
  }
  const float* coords(int axis) const { return axis == 2 ? gz : (axis == 1 ? gy : gx); }
  detail::VoxelCentral d;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i, float& px, float& py, float& pz,
                                  float* out) const {
    float J[3][3];
    detail::jacobianAt(d, gx, gy, gz, x, y, z, i, J);
    detail::identityOnFlatAxes(d, J);
    const float det = detail::det3(J);
    const float a = X0[i], b = X1[i], c = X2[i];
    for (int r = 0; r < 3; ++r) out[r] = det * (J[r][0] * a + J[r][1] * b + J[r][2] * c);
    px = gx[i];
    py = gy[i];
    pz = gz[i];
  }
};

}  // namespace kern

namespace Opers {

using detail::checkAll;
using detail::dataOf;
using detail::Unaliased;

namespace {

/// Runs a splat of src (source grid size ss) into the target arrays.
template <class Src>
void runSplat(MemoryType mt, const Src& src, const Vec3Di& ss, const GridInfo& target, float* const* out,
              float* weights, detail::SplatMode mode, StreamT st) {
  detail::SplatTarget t{{out[0], Src::K > 1 ? out[1] : nullptr, Src::K > 2 ? out[2] : nullptr},
                        weights,
                        target.size().x,
                        target.size().y,
                        target.size().z};
  std::unique_ptr<Image3D> w;
  if (mt == MEM_DEVICE && mode == detail::SPLAT_NORMALIZE) w = detail::scratchImage(target, mt);
  detail::dispatchIndex(target.nVox(), [&](auto ix) {
    using I = typename decltype(ix)::type;
    detail::splat<I>(mt, src, ss, t, mode, w ? w->get() : nullptr, st);
  });
}

detail::SplatMode modeOf(bool normalize) {
  return normalize ? detail::SPLAT_NORMALIZE : detail::SPLAT_OVERWRITE;
}

/// Field splat through h; disp: splat the displacement and add x back (SplatH).
void splatField(Field3D& a_o, const Field3D& h, const Field3D& a_i, bool normalize, bool disp, StreamT st) {
  checkAll(a_o, h, a_i);
  Unaliased<Field3D> hs(h, st, a_o), is(a_i, st, a_o);
  const Field3D &H = hs, &In = is;
  const kern::SplatFieldSrc src{{dataOf(H, 0), dataOf(H, 1), dataOf(H, 2)}, dataOf(In, 0), dataOf(In, 1),
                                dataOf(In, 2), disp ? 1.f : 0.f};
  float* out[3] = {dataOf(a_o, 0), dataOf(a_o, 1), dataOf(a_o, 2)};
  runSplat(a_o.memType(), src, In.size(), a_o.grid(), out, nullptr, modeOf(normalize), st);
  if (disp) {
    const kern::AddIdentityScaled fn{out[0], out[1], out[2], 1.f, 1.f, 1.f, out[0], out[1], out[2], 1.f};
    detail::forEachVoxel(a_o.memType(), fn, a_o.size(), st);
  }
}

void splatWorld(Image3D& a_o, const Image3D& a_i, Image3D* a_w, BackgroundStrategy bg, StreamT st) {
  MK_CHECK2_MEM(a_o, a_i);
  if (a_w) {
    MK_CHECK2_SIZE(a_o, *a_w);
    MK_CHECK2_MEM(a_o, *a_w);
  }
  PRECONDITION(detail::bgAccepted(detail::BG_IMAGE, bg), "Unknown background strategy");
  Unaliased<Image3D> is(a_i, st, a_o);
  const Image3D& In = is;
  const Vec3Df &so = a_o.spacing(), &oo = a_o.origin(), &si = In.spacing(), &oi = In.origin();
  const kern::AtLin at{si.x / so.x, (oi.x - oo.x) / so.x, si.y / so.y, (oi.y - oo.y) / so.y,
                       si.z / so.z, (oi.z - oo.z) / so.z};
  const kern::SplatWorldSrc src{at, dataOf(In)};
  float* out[1] = {dataOf(a_o)};
  runSplat(a_o.memType(), src, In.size(), a_o.grid(), out, a_w ? dataOf(*a_w) : nullptr,
           detail::SPLAT_ACCUMULATE, st);
}

}  // namespace

void Splat(Image3D& a_o, const Field3D& a_h, const Image3D& a_i, bool normalize, StreamT st) {
  checkAll(a_o, a_h, a_i);
  Unaliased<Field3D> hs(a_h, st, a_o);
  Unaliased<Image3D> is(a_i, st, a_o);
  const Field3D& H = hs;
  const kern::SplatImageSrc src{{dataOf(H, 0), dataOf(H, 1), dataOf(H, 2)}, dataOf(is.get())};
  float* out[1] = {dataOf(a_o)};
  runSplat(a_o.memType(), src, a_i.size(), a_o.grid(), out, nullptr, modeOf(normalize), st);
}

void SplatField(Field3D& a_o, const Field3D& a_i, const Field3D& h, StreamT st) {
  splatField(a_o, h, a_i, false, false, st);
}

void SplatV(Field3D& a_o, const Field3D& a_h, const Field3D& a_i, bool normalize, StreamT st) {
  splatField(a_o, a_h, a_i, normalize, false, st);
}

void SplatH(Field3D& d_vo, const Field3D& d_h, const Field3D& d_vi, bool normalize, StreamT st) {
  splatField(d_vo, d_h, d_vi, normalize, true, st);
}

void SplatWorld(Image3D& a_o, const Image3D& a_i, BackgroundStrategy bg, StreamT st) {
  splatWorld(a_o, a_i, nullptr, bg, st);
}
void SplatWorld(Image3D& a_o, const Image3D& a_i, Image3D& a_w, BackgroundStrategy bg, StreamT st) {
  splatWorld(a_o, a_i, &a_w, bg, st);
}

void Ad(Field3D& Z, const Field3D& g, const Field3D& X, BackgroundStrategy bg, StreamT st, bool) {
  checkAll(Z, g, X);
  PRECONDITION(detail::bgAccepted(detail::BG_VFIELD, bg), "Unknown/unsupported background strategy");
  Unaliased<Field3D> gs(g, st, Z), xs(X, st, Z);
  const Field3D &G = gs, &Xf = xs;
  const Vec3Di s = Z.size();
  const kern::SplatAdSrc src{dataOf(G, 0),  dataOf(G, 1),  dataOf(G, 2),
                             dataOf(Xf, 0), dataOf(Xf, 1), dataOf(Xf, 2),
                             detail::VoxelCentral{s.x, s.y, s.z, 1.f, 1.f, 1.f}};
  float* out[3] = {dataOf(Z, 0), dataOf(Z, 1), dataOf(Z, 2)};
  runSplat(Z.memType(), src, s, Z.grid(), out, nullptr, detail::SPLAT_OVERWRITE, st);
}

}  // namespace Opers
}  // namespace PyCA
