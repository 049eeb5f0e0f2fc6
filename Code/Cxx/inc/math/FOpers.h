// FOpers.h -- free operators on fields (namespace PyCA::Opers).
//
// Same conventions as IOpers.h. A field operator runs per component; an
// Image3D operand is broadcast over the three components, a Vec3Df constant
// applies component-wise and a float constant to all three.
#ifndef __PYCA_FOPERS_H__
#define __PYCA_FOPERS_H__

#include <cstddef>

#include "Field3D.h"
#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {
namespace Opers {

// ---- copies and fills ------------------------------------------------------------

/// a_o = a_i across host, pinned and device memory.
void Copy(Field3D& a_o, const Field3D& a_i, StreamT st = nullptr);
/// Component dim (0, 1, 2) of a_o = a_i; the other components are untouched.
void Copy(Field3D& a_o, const Image3D& a_i, int dim, StreamT st = nullptr);

/// Every component = c (optionally only where mask != 0).
void SetMem(Field3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
void SetMem(Field3D& a_o, const float& c, const Image3D& mask, StreamT st = nullptr,
            bool onDev = false);
/// a_o = v (optionally only where mask != 0).
void SetMem(Field3D& a_o, const Vec3Df& v, StreamT st = nullptr, bool onDev = false);
void SetMem(Field3D& a_o, const Vec3Df& v, const Image3D& mask, StreamT st = nullptr,
            bool onDev = false);

// ---- group B ---------------------------------------------------------------------

// OP(a_o, a_i, a_i1): field op field, or field op image (broadcast);
// OP_I(a_o, a_i1): a_o = a_o op a_i1.
#define PYCA_DECLARE_FIELD_BINARY(OP)                                                     \
  void OP(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st = nullptr);  \
  void OP(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st = nullptr);  \
  void OP##_I(Field3D& a_o, const Image3D& a_i, StreamT st = nullptr);                   \
  void OP##_I(Field3D& a_o, const Field3D& a_i1, StreamT st = nullptr);
PYCA_DECLARE_FIELD_BINARY(Add)
PYCA_DECLARE_FIELD_BINARY(Sub)
PYCA_DECLARE_FIELD_BINARY(Mul)
PYCA_DECLARE_FIELD_BINARY(Div)
#undef PYCA_DECLARE_FIELD_BINARY

/// Component-wise max / min of two fields.
void Max(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st = nullptr);
void Max_I(Field3D& a_o, const Field3D& a_i1, StreamT st = nullptr);
void Min(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st = nullptr);
void Min_I(Field3D& a_o, const Field3D& a_i1, StreamT st = nullptr);

// OPC(a_o, a_i, c): a_o = a_i op c, c a Vec3Df (per component) or a float;
// OPC_I(a_o, c): a_o = a_o op c.
#define PYCA_DECLARE_FIELD_BINARY_C(OP)                                                   \
  void OP##C(Field3D& a_o, const Field3D& a_i, const Vec3Df& c, StreamT st = nullptr,    \
             bool onDev = false);                                                         \
  void OP##C(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st = nullptr,     \
             bool onDev = false);                                                         \
  void OP##C_I(Field3D& a_o, const Vec3Df& c, StreamT st = nullptr, bool onDev = false); \
  void OP##C_I(Field3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
PYCA_DECLARE_FIELD_BINARY_C(Add)
PYCA_DECLARE_FIELD_BINARY_C(Sub)
PYCA_DECLARE_FIELD_BINARY_C(Mul)
PYCA_DECLARE_FIELD_BINARY_C(Div)
PYCA_DECLARE_FIELD_BINARY_C(Max)
PYCA_DECLARE_FIELD_BINARY_C(Min)
#undef PYCA_DECLARE_FIELD_BINARY_C

// ---- group C ---------------------------------------------------------------------

/// a_i * c + a_i1 (MulCAdd), a_i * c - a_i1 (MulCSub); _I: a_o * c +- a_i.
void MulCAdd(Field3D& a_o, const Field3D& a_i, const float& c, const Field3D& a_i1,
             StreamT st = nullptr, bool onDev = false);
void MulCAdd_I(Field3D& a_o, const float& c, const Field3D& a_i, StreamT st = nullptr,
               bool onDev = false);
void MulCSub(Field3D& a_o, const Field3D& a_i, const float& c, const Field3D& a_i1,
             StreamT st = nullptr, bool onDev = false);
void MulCSub_I(Field3D& a_o, const float& c, const Field3D& a_i, StreamT st = nullptr,
               bool onDev = false);
/// a_i * a + b, per component.
void MulCAddC(Field3D& a_o, const Field3D& a_i, const Vec3Df& a, const Vec3Df& b,
              StreamT st = nullptr, bool onDev = false);
void MulCAddC_I(Field3D& a_o, const Vec3Df& a, const Vec3Df& b, StreamT st = nullptr,
                bool onDev = false);
/// (a_i + a) * b, per component.
void AddCMulC(Field3D& a_o, const Field3D& a_i, const Vec3Df& a, const Vec3Df& b,
              StreamT st = nullptr, bool onDev = false);
void AddCMulC_I(Field3D& a_o, const Vec3Df& a, const Vec3Df& b, StreamT st = nullptr,
                bool onDev = false);
/// (a_i + a_i1) * c
void AddMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
             StreamT st = nullptr, bool onDev = false);
void AddMulC_I(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st = nullptr,
               bool onDev = false);
/// (a_i - a_i1) * c
void SubMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
             StreamT st = nullptr, bool onDev = false);
void SubMulC_I(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st = nullptr,
               bool onDev = false);
/// a_i * a_i1 * c (a_i1 an image, broadcast, or a field)
void MulMulC(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, const float& c,
             StreamT st = nullptr, bool onDev = false);
void MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
             StreamT st = nullptr, bool onDev = false);
void MulMulC_I(Field3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr,
               bool onDev = false);
void MulMulC_I(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st = nullptr,
               bool onDev = false);
/// a_i + a_i1 * c
void Add_MulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
              StreamT st = nullptr, bool onDev = false);
void Add_MulC_I(Field3D& a_o, const Field3D& a_i1, const float& c, StreamT st = nullptr,
                bool onDev = false);
/// a_i * ca + a_i1 * cb
void MulC_Add_MulC(Field3D& a_o, const Field3D& a_i, const float& ca, const Field3D& a_i1,
                   const float& cb, StreamT st = nullptr, bool onDev = false);
void MulC_Add_MulC_I(Field3D& a_o, const float& co, const Field3D& a_i1, const float& cb,
                     StreamT st = nullptr, bool onDev = false);
/// (a_i + a) * b + c (floats, or Vec3Df per component)
void AddCMulCAddC(Field3D& a_o, const Field3D& a_i, const float& a, const float& b,
                  const float& c, StreamT st = nullptr, bool onDev = false);
void AddCMulCAddC(Field3D& a_o, const Field3D& a_i, const Vec3Df& a, const Vec3Df& b,
                  const Vec3Df& c, StreamT st = nullptr, bool onDev = false);
void AddCMulCAddC_I(Field3D& a_o, const float& a, const float& b, const float& c,
                    StreamT st = nullptr, bool onDev = false);
void AddCMulCAddC_I(Field3D& a_o, const Vec3Df& a, const Vec3Df& b, const Vec3Df& c,
                    StreamT st = nullptr, bool onDev = false);
/// a_i + a_i1 * a_i2 * c (a_i2 an image, broadcast, or a field)
void Add_MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Image3D& a_i2,
                 const float& c, StreamT st = nullptr, bool onDev = false);
void Add_MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Field3D& a_i2,
                 const float& c, StreamT st = nullptr, bool onDev = false);
void Add_MulMulC_I(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, const float& c,
                   StreamT st = nullptr, bool onDev = false);
void Add_MulMulC_I(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
                   StreamT st = nullptr, bool onDev = false);
/// a_i - a_i1 * a_i2 * c
void Sub_MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Field3D& a_i2,
                 const float& c, StreamT st = nullptr, bool onDev = false);
void Sub_MulMulC_I(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
                   StreamT st = nullptr, bool onDev = false);
/// a_i + a_i1 * a_i2 (Add_Mul), a_i - a_i1 * a_i2 (Sub_Mul); a_i2 an image.
void Add_Mul(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Image3D& a_i2,
             StreamT st = nullptr);
void Add_Mul_I(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st = nullptr);
void Sub_Mul(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Image3D& a_i2,
             StreamT st = nullptr);
void Sub_Mul_I(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st = nullptr);

// ---- group D ---------------------------------------------------------------------

/// Shrinks the length of every vector by eps (zero where it is below eps).
void Shrink(Field3D& a_o, const Field3D& a_i, const float& eps, StreamT st = nullptr);
void Shrink_I(Field3D& a_o, const float& eps, StreamT st = nullptr);

// ---- deformation (spec group F and the field forms of group E) ---------------------
// Field interpolation is trilinear; bg selects what samples outside the grid
// see (interp.h): CLAMP, WRAP, ZERO, PARTIAL_ZERO, ID, PARTIAL_ID for the
// generic operators; H-field compositions take CLAMP, ID, PARTIAL_ID and
// V-field compositions, Ad and CoAd CLAMP, WRAP, ZERO, PARTIAL_ZERO
// ("Unknown/unsupported background strategy" otherwise). H-fields are in
// voxel coordinates, V-fields in physical units (divided by the spacing when
// added to voxel coordinates). Outputs may alias inputs.

/// a_o(x) = a_i(h(x)).
void ApplyH(Field3D& a_o, const Field3D& a_i, const Field3D& h, BackgroundStrategy bg,
            StreamT st = nullptr);
/// a_o(x) = a_i(x + delta * u(x) / spacing).
void ApplyV(Field3D& a_o, const Field3D& a_i, const Field3D& u, BackgroundStrategy bg,
            const float& delta = 1.f, StreamT st = nullptr, bool onDev = false);
/// a_o(x) = a_i(x - delta * u(x) / spacing).
void ApplyVInv(Field3D& a_o, const Field3D& a_i, const Field3D& u, BackgroundStrategy bg,
               const float& delta = 1.f, StreamT st = nullptr, bool onDev = false);
/// a_h(x) = a_f(x + t), t in voxels.
void ComposeTranslation(Field3D& a_h, const Field3D& a_f, const Vec3Df& t,
                        BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP, StreamT st = nullptr,
                        bool onDev = false);
/// a_f = a_g o a_h (H-fields).
void ComposeHH(Field3D& a_f, const Field3D& a_g, const Field3D& a_h,
               BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ID, StreamT st = nullptr);
/// a_h(x) = a_g(x) + delta * a_v(a_g(x)) / spacing.
void ComposeVH(Field3D& a_h, const Field3D& a_v, const Field3D& a_g, const float& delta = 1.f,
               BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ZERO, StreamT st = nullptr,
               bool onDev = false);
/// a_h(x) = a_g(x) - delta * a_v(a_g(x)) / spacing.
void ComposeVInvH(Field3D& a_h, const Field3D& a_v, const Field3D& a_g, const float& delta = 1.f,
                  BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ZERO, StreamT st = nullptr,
                  bool onDev = false);
/// a_h(x) = a_g(x + delta * a_v(x) / spacing).
void ComposeHV(Field3D& a_h, const Field3D& a_g, const Field3D& a_v, const float& delta = 1.f,
               BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ID, StreamT st = nullptr,
               bool onDev = false);
/// a_h(x) = a_g(x - delta * a_v(x) / spacing).
void ComposeHVInv(Field3D& a_h, const Field3D& a_g, const Field3D& a_v, const float& delta = 1.f,
                  BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ID, StreamT st = nullptr,
                  bool onDev = false);
/// The gradients of the components of a_h: a_Xg = grad a_h.x, a_Yg = grad
/// a_h.y, a_Zg = grad a_h.z (divided by the spacing, as Gradient).
void Jacobian(Field3D& a_Xg, Field3D& a_Yg, Field3D& a_Zg, const Field3D& a_h,
              DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_APPROX, StreamT st = nullptr);
/// Splat of each component of a_i through h (adjoint of ApplyH, linear).
void SplatField(Field3D& a_o, const Field3D& a_i, const Field3D& h, StreamT st = nullptr);
/// a_i / |a_i|, the zero vector where |a_i| <= eps.
void NormalizeSafe(Field3D& a_o, const Field3D& a_i, const float& eps, StreamT st = nullptr);
void NormalizeSafe_I(Field3D& a_o, const float& eps, StreamT st = nullptr);
/// Projects onto the unit ball: vectors longer than 1 become unit vectors.
void ReprojectToUnitVec(Field3D& a_o, StreamT st = nullptr);
/// ginv ~ g^{-1} by fixed-point iteration: ginv_0 = 2 Id - g, then
/// ginv_{k+1} = ginv_k - (g o ginv_k - Id), numIter times (PARTIAL_ID
/// background). Each iteration shrinks the error by about max |D(g - Id)|,
/// so it converges for smooth deformations (|D(g - Id)| < 1); see
/// Documentation/LegacyDifferences.md for the accuracy (the legacy threw
/// "Inverse not yet implemented/tested").
void FixedPointInverse(Field3D& ginv, const Field3D& g, unsigned int numIter = 2, StreamT st = nullptr,
                       bool onDev = false);
/// Inverse update after a step: iterates ginv0t1 := ginv0t o (Id - w o
/// ginv0t1) numIter times from ginv0t1 = ginv0t (w o . with PARTIAL_ZERO,
/// ginv0t o . with PARTIAL_ID), the legacy iteration. Its fixed point is the
/// inverse of g_{t+1} = g_t + w, i.e. w is the step's displacement on the
/// domain of g_t (for a step g_{t+1} = (Id + v) o g_t, w = v o g_t; passing
/// v itself is correct only to first order). w is in voxel units here
/// (legacy: it is not divided by the spacing). scratchV is checked and
/// otherwise unused (the two samplings of an iteration run as one fused pass).
void UpdateInverse(Field3D& ginv0t1, Field3D& scratchV, const Field3D& ginv0t, const Field3D& w,
                   unsigned int numIter = 3, StreamT st = nullptr, bool onDev = false);
/// Adjoint action Z = Ad_g X = (Dg X) o g^{-1}, computed as the splat of
/// |Dg| Dg X through g (Dg: central differences, BC_CLAMP, voxel units).
void Ad(Field3D& Z, const Field3D& g, const Field3D& X,
        BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ZERO, StreamT st = nullptr, bool onDev = false);
/// Z = ad_X Y = DX Y - DY X.
void AdInf(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st = nullptr, bool onDev = false);
/// Coadjoint action n = Ad*_g m = |Dg| (Dg)^T (m o g); <Ad_g X, m> = <X, CoAd_g m>.
void CoAd(Field3D& n, const Field3D& g, const Field3D& m,
          BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ZERO, StreamT st = nullptr, bool onDev = false);
/// n = ad*_X m = (DX)^T m + div(m X^T), i.e. n_i = sum_j d_i X_j m_j + d_j (m_i X_j).
void CoAdInf(Field3D& n, const Field3D& X, const Field3D& m, StreamT st = nullptr, bool onDev = false);
/// Z_i = sum_j d_j (X_i Y_j) (divergence of the tensor X Y^T).
void DivergenceTensor(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st = nullptr,
                      bool onDev = false);
/// Z = DX Y, i.e. Z_i = sum_j d_j X_i Y_j.
void JacobianXY(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st = nullptr, bool onDev = false);
/// Z = (DX)^T Y, i.e. Z_i = sum_j d_i X_j Y_j.
void JacobianXtY(Field3D& Z, const Field3D& X, const Field3D& Y, StreamT st = nullptr, bool onDev = false);
// (The differences of AdInf, CoAdInf, DivergenceTensor, JacobianXY, JacobianXtY
// and CoAd are central, BC_CLAMP, in voxel units, as in the legacy library.)

// ---- group D, field forms ----------------------------------------------------------

/// Voxel-grid resampling of every component onto a_o's size, centred (as
/// Resample for images with useOriginOffset); rescaleVector divides the
/// components by the size ratio r = size_i / size_o. An empty a_i gives 0.
void Resample(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP,
              bool rescaleVector = false, StreamT st = nullptr);
/// a_o(x) = a_i(x + start) (zero outside a_i).
void SubVol(Field3D& a_o, const Field3D& a_i, const Vec3Di& start, StreamT st = nullptr);
/// a_o(x + start) = a_i(x) inside a_o.
void SetSubVol_I(Field3D& a_o, const Field3D& a_i, const Vec3Di& start, StreamT st = nullptr);

// ---- utilities -------------------------------------------------------------------

/// True when every field's three components lie back to back with a stride
/// of exactly n floats (y == x + n, z == y + n), i.e. the field can be
/// treated as one array of 3n floats.
bool Is1D(const Field3D& d_i, size_t n);
bool Is1D(const Field3D& d_i, const Field3D& d_i1, size_t n);
bool Is1D(const Field3D& d_i, const Field3D& d_i1, const Field3D& d_i2, size_t n);
bool Is1D(const Field3D& d_i, const Field3D& d_i1, const Field3D& d_i2, const Field3D& d_i3,
          size_t n);

}  // namespace Opers
}  // namespace PyCA

#endif
