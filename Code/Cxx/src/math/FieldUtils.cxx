// FieldUtils.cxx -- H-field and V-field helpers (identity, H <-> V,
// zeroth-order inverse) and the grid utilities (ShiftCoordinate, SubVol,
// SetSubVol_I, Convolve): voxel functors of DeformKernels.h / DiffKernels.h.
#include "FOpers.h"
#include "HFOpers.h"
#include "IOpers.h"
#include "VFOpers.h"

#include "Apply.h"
#include "DeformKernels.h"
#include "DiffKernels.h"
#include "Scratch.h"
#include "VoxelLaunch.h"

namespace PyCA {
namespace Opers {

using detail::checkAll;
using detail::dataOf;
using detail::forEachVoxel;
using detail::Unaliased;

namespace {

/// o = c x + k f (per component).
void addIdentity(Field3D& o, const Field3D& f, const Vec3Df& k, StreamT st, float c = 1.f) {
  const kern::AddIdentityScaled fn{dataOf(f, 0), dataOf(f, 1), dataOf(f, 2), k.x,         k.y,
                                   k.z,          dataOf(o, 0), dataOf(o, 1), dataOf(o, 2), c};
  forEachVoxel(o.memType(), fn, o.size(), st);
}

template <class T>
int components(const T&);
template <>
int components(const Image3D&) {
  return 1;
}
template <>
int components(const Field3D&) {
  return 3;
}
const float* comp(const Image3D& a, int) { return dataOf(a); }
float* comp(Image3D& a, int) { return dataOf(a); }
const float* comp(const Field3D& a, int d) { return dataOf(a, d); }
float* comp(Field3D& a, int d) { return dataOf(a, d); }

template <class T>
void offsetCopy(T& a_o, const T& a_i, const Vec3Di& start, bool scatter, StreamT st) {
  MK_CHECK2_MEM(a_o, a_i);
  Unaliased<T> in(a_i, st, a_o);
  const T& src = in;
  const int k = components(a_o);
  kern::OffsetCopyOp fn{};
  for (int c = 0; c < 3; ++c) {
    fn.in[c] = c < k ? comp(src, c) : nullptr;
    fn.out[c] = c < k ? comp(a_o, c) : nullptr;
  }
  const Vec3Di si = src.size(), so = a_o.size();
  fn.isx = si.x;
  fn.isy = si.y;
  fn.isz = si.z;
  fn.osx = so.x;
  fn.osy = so.y;
  fn.osz = so.z;
  fn.ox = start.x;
  fn.oy = start.y;
  fn.oz = start.z;
  fn.k = k;
  fn.scatter = scatter;
  forEachVoxel(a_o.memType(), fn, scatter ? si : so, st);
}

}  // namespace

// ---- H-fields and V-fields ----------------------------------------------------------

void SetToIdentity(Field3D& h, StreamT st) {
  const kern::AffineCoords fn{{{1.f, 0.f, 0.f}, {0.f, 1.f, 0.f}, {0.f, 0.f, 1.f}},
                              {0.f, 0.f, 0.f},
                              dataOf(h, 0),
                              dataOf(h, 1),
                              dataOf(h, 2)};
  forEachVoxel(h.memType(), fn, h.size(), st);
}

void SetToZero(Field3D& v, StreamT st) { SetMem(v, 0.f, st); }

void InitializeHFromAffine(Field3D& a_h, const Aff3Df& aff_in, bool invertAff, StreamT st) {
  Aff3Dd aff(Mat3Dd(), Vec3Dd(aff_in.vector.x, aff_in.vector.y, aff_in.vector.z));
  for (unsigned int k = 0; k < 9; ++k) aff.matrix(k) = aff_in.matrix(k);
  if (invertAff) PRECONDITION(aff.invert(), "Error, could not invert affine transform");
  // In voxel coordinates: h = M x + c, M = S^-1 A S, c = S^-1 (A o + t - o).
  const double sp[3] = {a_h.spacing().x, a_h.spacing().y, a_h.spacing().z};
  const double org[3] = {a_h.origin().x, a_h.origin().y, a_h.origin().z};
  const double t[3] = {aff.vector.x, aff.vector.y, aff.vector.z};
  kern::AffineCoords fn{};
  for (int r = 0; r < 3; ++r) {
    double c = t[r] - org[r];
    for (int k = 0; k < 3; ++k) {
      fn.M[r][k] = float(aff.matrix(r, k) * sp[k] / sp[r]);
      c += aff.matrix(r, k) * org[k];
    }
    fn.t[r] = float(c / sp[r]);
  }
  fn.ox = dataOf(a_h, 0);
  fn.oy = dataOf(a_h, 1);
  fn.oz = dataOf(a_h, 2);
  forEachVoxel(a_h.memType(), fn, a_h.size(), st);
}

void HtoV(Field3D& a_v, const Field3D& a_h, StreamT st) {
  checkAll(a_v, a_h);
  const Vec3Df sp = a_v.spacing();
  const kern::SubIdentityScaled fn{dataOf(a_h, 0), dataOf(a_h, 1), dataOf(a_h, 2), sp.x, sp.y, sp.z,
                                   dataOf(a_v, 0), dataOf(a_v, 1), dataOf(a_v, 2)};
  forEachVoxel(a_v.memType(), fn, a_v.size(), st);
}
void HtoV_I(Field3D& a_v, StreamT st) { HtoV(a_v, a_v, st); }

void VtoH(Field3D& h, const Field3D& v, const float& delta, StreamT st, bool) {
  checkAll(h, v);
  const Vec3Df sp = h.spacing();
  addIdentity(h, v, Vec3Df(delta / sp.x, delta / sp.y, delta / sp.z), st);
}
void VtoH_I(Field3D& h, const float& delta, StreamT st, bool onDev) { VtoH(h, h, delta, st, onDev); }

void InverseZerothOrder(Field3D& a_hInv, const Field3D& a_h, StreamT st) {
  checkAll(a_hInv, a_h);
  addIdentity(a_hInv, a_h, Vec3Df(-1.f, -1.f, -1.f), st, 2.f);  // 2x - h
}
void InverseZerothOrder_I(Field3D& a_hInv, StreamT st) { InverseZerothOrder(a_hInv, a_hInv, st); }

// ---- grid utilities (IOpers.h, FOpers.h) ---------------------------------------------

void ShiftCoordinate(Image3D& a_o, const Image3D& a_i, bool dir, StreamT st) {
  MK_CHECK2_MEM(a_o, a_i);
  const Vec3Di s = a_i.size();
  const Vec3Di want = dir ? Vec3Di(s.z, s.x, s.y) : Vec3Di(s.y, s.z, s.x);
  PRECONDITION(a_o.size() == want, "Inputs have different Size");
  Unaliased<Image3D> in(a_i, st, a_o);
  const kern::ShiftCoordOp fn{dataOf(in.get()), dataOf(a_o), s.x, s.y, s.z, dir};
  forEachVoxel(a_o.memType(), fn, s, st);
}

void SubVol(Image3D& a_o, const Image3D& a_i, const Vec3Di& start, StreamT st) {
  offsetCopy(a_o, a_i, start, false, st);
}
void SubVol(Field3D& a_o, const Field3D& a_i, const Vec3Di& start, StreamT st) {
  offsetCopy(a_o, a_i, start, false, st);
}
void SetSubVol_I(Image3D& a_o, const Image3D& a_i, const Vec3Di& start, StreamT st) {
  offsetCopy(a_o, a_i, start, true, st);
}
void SetSubVol_I(Field3D& a_o, const Field3D& a_i, const Vec3Di& start, StreamT st) {
  offsetCopy(a_o, a_i, start, true, st);
}

void Convolve(Image3D& a_o, const Image3D& a_i, const Image3D& kernel, StreamT st) {
  checkAll(a_o, a_i);
  MK_CHECK2_MEM(a_o, kernel);
  const Vec3Di k = kernel.size();
  PRECONDITION(k.x % 2 == 1 && k.y % 2 == 1 && k.z % 2 == 1, "Only odd-sized kernels allowed in convolution");
  Unaliased<Image3D> in(a_i, st, a_o), ks(kernel, st, a_o);
  const Vec3Di s = a_o.size();
  const kern::ConvolveOp fn{dataOf(in.get()), dataOf(ks.get()), s.x, s.y, s.z, k.x, k.y, k.z, dataOf(a_o)};
  forEachVoxel(a_o.memType(), fn, s, st);
}

}  // namespace Opers
}  // namespace PyCA
