// DiffOpers.cxx -- finite differences and the operators built on them
// (gradients, divergences, Jacobians and their determinants, the
// Lie-algebra operators) and the pointwise field -> image operators. Each is:
// checks, dispatch of the scheme, one voxel functor of DiffKernels.h.
#include "FOpers.h"
#include "IFOpers.h"

#include "Apply.h"
#include "DiffKernels.h"
#include "OpDispatch.h"
#include "Scratch.h"
#include "VoxelLaunch.h"

namespace PyCA {
namespace Opers {

using detail::checkAll;
using detail::dataOf;
using detail::forEachVoxel;
using detail::Unaliased;

namespace {

template <DiffT diff, BoundaryCondT bc>
detail::Diff3<diff, bc> diffOn(const GridInfo& g, bool voxelUnits = false) {
  const Vec3Di& s = g.size();
  const Vec3Df& sp = g.spacing();
  if (voxelUnits) return detail::Diff3<diff, bc>{s.x, s.y, s.z, 1.f, 1.f, 1.f};
  return detail::Diff3<diff, bc>{s.x, s.y, s.z, 1.f / sp.x, 1.f / sp.y, 1.f / sp.z};
}

void checkDim(DimT dim) { PRECONDITION(dim == DIM_X || dim == DIM_Y || dim == DIM_Z, "unknown DimT"); }

/// a_o = grad of the array a (nVox of a_o's grid), a read at neighbours.
void gradientOf(Field3D& a_o, const float* a, MemoryType mt, DiffT diff, BoundaryCondT bc, StreamT st) {
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    const kern::GradientOp<D, B> fn{diffOn<D, B>(a_o.grid()), a, dataOf(a_o, 0), dataOf(a_o, 1), dataOf(a_o, 2)};
    forEachVoxel(mt, fn, a_o.size(), st);
  });
}

/// The Lie-algebra operators (kind: see kern::LieOp).
template <int kind>
void lieOpK(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st) {
  checkAll(Z, X, Y);
  Unaliased<Field3D> xs(X, st, Z), ys(Y, st, Z);
  const Field3D &Xf = xs, &Yf = ys;
  const Vec3Di s = Z.size();
  const kern::LieOp<kind> fn{detail::VoxelCentral{s.x, s.y, s.z, 1.f, 1.f, 1.f},
                             {dataOf(Xf, 0), dataOf(Xf, 1), dataOf(Xf, 2)},
                             {dataOf(Yf, 0), dataOf(Yf, 1), dataOf(Yf, 2)},
                             {dataOf(Z, 0), dataOf(Z, 1), dataOf(Z, 2)}};
  forEachVoxel(Z.memType(), fn, s, st);
}

void lieOp(Field3D& Z, const Field3D& X, const Field3D& Y, int kind, StreamT st) {
  switch (kind) {
    case 0: lieOpK<0>(Z, X, Y, st); break;
    case 1: lieOpK<1>(Z, X, Y, st); break;
    case 2: lieOpK<2>(Z, X, Y, st); break;
    case 3: lieOpK<3>(Z, X, Y, st); break;
    default: lieOpK<4>(Z, X, Y, st); break;
  }
}

/// mode: see kern::JacDetGradsOp; scale multiplies the mode-0 determinant.
void jacDetGrads(Image3D& out, const Field3D& X, const Field3D& Y, const Field3D& Zg, int mode, StreamT st,
                 float scale = 1.f) {
  checkAll(out, X, Y, Zg);
  auto run = [&](auto fn) {
    fn.X[0] = dataOf(X, 0), fn.X[1] = dataOf(X, 1), fn.X[2] = dataOf(X, 2);
    fn.Y[0] = dataOf(Y, 0), fn.Y[1] = dataOf(Y, 1), fn.Y[2] = dataOf(Y, 2);
    fn.Z[0] = dataOf(Zg, 0), fn.Z[1] = dataOf(Zg, 1), fn.Z[2] = dataOf(Zg, 2);
    fn.out = dataOf(out);
    fn.scale = scale;
    forEachVoxel(out.memType(), fn, out.size(), st);
  };
  if (mode == 1)
    run(kern::JacDetGradsOp<1, false>{});
  else if (mode == 2)
    run(kern::JacDetGradsOp<2, false>{});
  else if (out.size().z == 1)
    run(kern::JacDetGradsOp<0, true>{});
  else
    run(kern::JacDetGradsOp<0, false>{});
}

void fieldNorm(Image3D& out, const Field3D& f, const Field3D* g, int kind, StreamT st) {
  if (g)
    checkAll(out, f, *g);
  else
    checkAll(out, f);
  const kern::FieldNormOp fn{dataOf(f, 0),
                             dataOf(f, 1),
                             dataOf(f, 2),
                             g ? dataOf(*g, 0) : nullptr,
                             g ? dataOf(*g, 1) : nullptr,
                             g ? dataOf(*g, 2) : nullptr,
                             dataOf(out),
                             kind};
  forEachVoxel(out.memType(), fn, out.size(), st);
}

void normalize(Field3D& a_o, const Field3D& a_i, float limit, bool unit, StreamT st) {
  checkAll(a_o, a_i);
  const kern::NormalizeOp fn{dataOf(a_i, 0), dataOf(a_i, 1), dataOf(a_i, 2), dataOf(a_o, 0),
                             dataOf(a_o, 1), dataOf(a_o, 2), limit,          unit};
  forEachVoxel(a_o.memType(), fn, a_o.size(), st);
}

}  // namespace

// ---- finite differences (IFOpers.h) -----------------------------------------------

void FiniteDiff(Image3D& a_o, const Image3D& a_i, DimT dim, DiffT diff, BoundaryCondT bc, bool accum, OpT op,
                StreamT st) {
  checkAll(a_o, a_i);
  checkDim(dim);
  PRECONDITION(op == OP_VAL || op == OP_SQR, "Unimplemented math operation for specified type");
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    Unaliased<Image3D> in(a_i, st, a_o);
    const kern::FiniteDiffOp<D, B> fn{diffOn<D, B>(a_o.grid()), dataOf(in.get()), dataOf(a_o), int(dim),
                                      op == OP_SQR, accum};
    forEachVoxel(a_o.memType(), fn, a_o.size(), st);
  });
}

void Gradient(Field3D& a_o, const Image3D& a_i, DiffT diff, BoundaryCondT bc, StreamT st) {
  checkAll(a_o, a_i);
  Unaliased<Image3D> in(a_i, st, a_o);
  gradientOf(a_o, dataOf(in.get()), a_o.memType(), diff, bc, st);
}

void Gradient(Field3D& a_o, const float* a_i, DiffT diff, BoundaryCondT bc, StreamT st) {
  PRECONDITION(a_i != nullptr || a_o.nVox() == 0, "Gradient: null input array");
  PRECONDITION(a_i != dataOf(a_o, 0) && a_i != dataOf(a_o, 1) && a_i != dataOf(a_o, 2),
               "Gradient: the input array is a component of the output");
  gradientOf(a_o, a_i, a_o.memType(), diff, bc, st);
}

void Gradient2(Field3D& a_o, const Image3D& a_i, DiffT diff, BoundaryCondT bc, StreamT st) {
  Gradient(a_o, a_i, diff, bc, st);
}

void GradientMask(Field3D& a_o, const Image3D& a_i, const Image3D& a_mask, DiffT diff, BoundaryCondT bc,
                  StreamT st) {
  checkAll(a_o, a_i, a_mask);
  PRECONDITION(bc != BC_WRAP, "BC_WRAP boundary condition unimplemented for masked gradient");
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    if constexpr (B != BC_WRAP) {
      Unaliased<Image3D> in(a_i, st, a_o), ms(a_mask, st, a_o);
      const Vec3Di s = a_o.size();
      const Vec3Df sp = a_o.spacing();
      const kern::GradientMaskOp<D, B> fn{dataOf(in.get()), dataOf(ms.get()), s.x,           s.y,
                                          s.z,              1.f / sp.x,       1.f / sp.y,    1.f / sp.z,
                                          dataOf(a_o, 0),   dataOf(a_o, 1),   dataOf(a_o, 2)};
      forEachVoxel(a_o.memType(), fn, s, st);
    }
  });
}

void GradFor(Field3D& a_o, const Image3D& a_i, BoundaryCondT bc, StreamT st) {
  Gradient(a_o, a_i, DIFF_FORWARD, bc, st);
}

void GradientMag(Image3D& a_o, const Image3D& a_i, DiffT diff, BoundaryCondT bc, StreamT st) {
  checkAll(a_o, a_i);
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    Unaliased<Image3D> in(a_i, st, a_o);
    const kern::GradMagOp<D, B> fn{diffOn<D, B>(a_o.grid()), dataOf(in.get()), dataOf(a_o)};
    forEachVoxel(a_o.memType(), fn, a_o.size(), st);
  });
}

void GradForMag(Image3D& a_o, const Image3D& a_i, StreamT st) { GradientMag(a_o, a_i, DIFF_FORWARD, BC_CLAMP, st); }

void UpwindDiff(Image3D& a_o, const Image3D& a_i, const Image3D& a_speed, DimT dim, StreamT st) {
  checkAll(a_o, a_i, a_speed);
  checkDim(dim);
  Unaliased<Image3D> in(a_i, st, a_o);
  const kern::UpwindDiffOp fn{diffOn<DIFF_FORWARD, BC_CLAMP>(a_o.grid()), diffOn<DIFF_BACKWARD, BC_CLAMP>(a_o.grid()),
                              dataOf(in.get()), dataOf(a_speed), dataOf(a_o), int(dim)};
  forEachVoxel(a_o.memType(), fn, a_o.size(), st);
}

void UpwindGradMag(Image3D& a_o, const Image3D& a_i, const Image3D& a_speed, StreamT st) {
  checkAll(a_o, a_i, a_speed);
  Unaliased<Image3D> in(a_i, st, a_o);
  const Vec3Di s = a_o.size();
  const Vec3Df sp = a_o.spacing();
  const kern::UpwindGradMagOp fn{dataOf(in.get()), dataOf(a_speed), s.x,        s.y,       s.z,
                                 1.f / sp.x,       1.f / sp.y,      1.f / sp.z, dataOf(a_o)};
  forEachVoxel(a_o.memType(), fn, s, st);
}

namespace {
/// a_o = Op(a_i) for a field-to-image stencil functor Op<diff, bc>{d, fx, fy, fz, out}
/// (Divergence, JacobianNormSqr).
template <template <DiffT, BoundaryCondT> class Op>
void fieldStencilToImage(Image3D& a_o, const Field3D& a_i, DiffT diff, BoundaryCondT bc, StreamT st) {
  checkAll(a_o, a_i);
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    Unaliased<Field3D> in(a_i, st, a_o);
    const Field3D& F = in;
    const Op<D, B> fn{diffOn<D, B>(a_o.grid()), dataOf(F, 0), dataOf(F, 1), dataOf(F, 2), dataOf(a_o)};
    forEachVoxel(a_o.memType(), fn, a_o.size(), st);
  });
}
}  // namespace

void Divergence(Image3D& a_o, const Field3D& a_i, DiffT diff, BoundaryCondT bc, StreamT st) {
  fieldStencilToImage<kern::DivergenceOp>(a_o, a_i, diff, bc, st);
}

void DivBack(Image3D& a_o, const Field3D& a_i, BoundaryCondT bc, StreamT st) {
  Divergence(a_o, a_i, DIFF_BACKWARD, bc, st);
}

// ---- pointwise field -> image -----------------------------------------------------

void Magnitude(Image3D& a_o, const Field3D& a_i, StreamT st) { fieldNorm(a_o, a_i, nullptr, 0, st); }
void SqrMagnitude(Image3D& a_o, const Field3D& a_i, StreamT st) { fieldNorm(a_o, a_i, nullptr, 1, st); }
void ComponentDotProd(Image3D& d_o, const Field3D& d_i, const Field3D& d_i1, StreamT st) {
  fieldNorm(d_o, d_i, &d_i1, 2, st);
}

// ---- Jacobians ----------------------------------------------------------------------

namespace {
/// det Dh with the derivatives divided by the spacing (voxelUnits false: the
/// legacy JacDetH) or in voxel units (JacDetHVoxel).
void jacDetHField(Image3D& a_jdet, const Field3D& a_h, DiffT diff, BoundaryCondT bc, StreamT st, bool voxelUnits) {
  checkAll(a_jdet, a_h);
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    Unaliased<Field3D> hs(a_h, st, a_jdet);
    const Field3D& H = hs;
    if (a_jdet.size().z == 1) {
      const kern::JacDetHOp<D, B, true> fn{diffOn<D, B>(a_jdet.grid(), voxelUnits), dataOf(H, 0), dataOf(H, 1),
                                           dataOf(H, 2), dataOf(a_jdet)};
      forEachVoxel(a_jdet.memType(), fn, a_jdet.size(), st);
    } else {
      const kern::JacDetHOp<D, B, false> fn{diffOn<D, B>(a_jdet.grid(), voxelUnits), dataOf(H, 0), dataOf(H, 1),
                                            dataOf(H, 2), dataOf(a_jdet)};
      forEachVoxel(a_jdet.memType(), fn, a_jdet.size(), st);
    }
  });
}
}  // namespace

void JacDetH(Image3D& a_jdet, const Field3D& a_h, DiffT diff, BoundaryCondT bc, StreamT st) {
  jacDetHField(a_jdet, a_h, diff, bc, st, false);
}
void JacDetHVoxel(Image3D& a_jdet, const Field3D& a_h, DiffT diff, BoundaryCondT bc, StreamT st) {
  jacDetHField(a_jdet, a_h, diff, bc, st, true);
}

void JacDetH(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg, StreamT st) {
  jacDetGrads(a_detJ, a_Xg, a_Yg, a_Zg, 0, st);
}
void JacDetHVoxel(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg, StreamT st) {
  // rows of physical derivatives: det times the voxel volume (area in 2-D)
  const Vec3Df& sp = a_detJ.grid().spacing();
  const float vol = a_detJ.size().z == 1 ? sp.x * sp.y : sp.x * sp.y * sp.z;
  jacDetGrads(a_detJ, a_Xg, a_Yg, a_Zg, 0, st, vol);
}
void JacDetV(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg, StreamT st) {
  jacDetGrads(a_detJ, a_Xg, a_Yg, a_Zg, 1, st);
}
void JacDetVInv(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg, StreamT st) {
  jacDetGrads(a_detJ, a_Xg, a_Yg, a_Zg, 2, st);
}

void Jacobian(Field3D& a_Xg, Field3D& a_Yg, Field3D& a_Zg, const Field3D& a_h, DiffT diff, BoundaryCondT bc,
              StreamT st) {
  checkAll(a_Xg, a_Yg, a_Zg, a_h);
  detail::dispatchDiffBc(diff, bc, [&](auto d, auto b) {
    constexpr DiffT D = decltype(d)::value;
    constexpr BoundaryCondT B = decltype(b)::value;
    Unaliased<Field3D> hs(a_h, st, a_Xg, a_Yg, a_Zg);
    const Field3D& H = hs;
    const kern::JacobianOp<D, B> fn{diffOn<D, B>(a_Xg.grid()),
                                    dataOf(H, 0),
                                    dataOf(H, 1),
                                    dataOf(H, 2),
                                    {dataOf(a_Xg, 0), dataOf(a_Xg, 1), dataOf(a_Xg, 2)},
                                    {dataOf(a_Yg, 0), dataOf(a_Yg, 1), dataOf(a_Yg, 2)},
                                    {dataOf(a_Zg, 0), dataOf(a_Zg, 1), dataOf(a_Zg, 2)}};
    forEachVoxel(a_Xg.memType(), fn, a_Xg.size(), st);
  });
}

void JacobianNormSqr(Image3D& a_o, const Field3D& a_v, DiffT diff, BoundaryCondT bc, StreamT st) {
  fieldStencilToImage<kern::JacNormSqrOp>(a_o, a_v, diff, bc, st);
}

// ---- field utilities (FOpers.h) ---------------------------------------------------

void NormalizeSafe(Field3D& a_o, const Field3D& a_i, const float& eps, StreamT st) {
  normalize(a_o, a_i, eps, true, st);
}
void NormalizeSafe_I(Field3D& a_o, const float& eps, StreamT st) { normalize(a_o, a_o, eps, true, st); }
void ReprojectToUnitVec(Field3D& a_o, StreamT st) { normalize(a_o, a_o, 1.f, false, st); }

void JacobianXY(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st, bool) { lieOp(Z, X, Y, 0, st); }
void JacobianXtY(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st, bool) { lieOp(Z, X, Y, 1, st); }
void AdInf(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st, bool) { lieOp(Z, X, Y, 2, st); }
void DivergenceTensor(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st, bool) {
  lieOp(Z, X, Y, 3, st);
}
void CoAdInf(Field3D& n, const Field3D& X, const Field3D& m, StreamT st, bool) { lieOp(n, X, m, 4, st); }

}  // namespace Opers
}  // namespace PyCA
