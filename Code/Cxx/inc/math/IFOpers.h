// IFOpers.h -- operators between images and fields (namespace PyCA::Opers):
// deforming images, splatting, finite differences, gradients, divergences,
// Jacobian determinants (spec group E). The field-image arithmetic overloads
// (Add(Field3D&, const Field3D&, const Image3D&), Add_Mul, MulMulC, ...) that
// the legacy header also declared are in FOpers.h, included here.
//
// Conventions (spec 2.2): H-fields h hold voxel coordinates of the sampled
// image; V-fields u are in physical units, so ApplyV samples at
// x + delta * u(x) / spacing. Images accept the background strategies CLAMP,
// WRAP, ZERO and PARTIAL_ZERO ("Unknown/unimplemented background strategy"
// otherwise); interpolation NN, LINEAR or CUBIC ("Unknown interpolation
// strategy"). Finite differences divide by the grid spacing and follow the
// edge rules of Stencil.h (BC_APPROX, BC_WRAP, BC_CLAMP); along an axis of
// extent 1 (2-D images) every difference is 0. All arguments must have equal
// grids ("Input grids are not equal") and memory types ("memory types are not
// compatible"); the operator runs on the back end of the output's memory.
// Outputs may alias inputs: an input read at other voxels is then copied to
// scratch first.
#ifndef __PYCA_IFOPERS_H__
#define __PYCA_IFOPERS_H__

#include "FOpers.h"
#include "Field3D.h"
#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {
namespace Opers {

// ---- deforming images ---------------------------------------------------------------

/// a_o(x) = a_i(a_h(x)).
void ApplyH(Image3D& a_o, const Image3D& a_i, const Field3D& a_h,
            BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP, InterpT interp = INTERP_LINEAR,
            StreamT st = nullptr);
/// a_o(x) = a_i(x + delta * a_u(x) / spacing).
void ApplyV(Image3D& a_o, const Image3D& a_i, const Field3D& a_u, const float& delta = 1.f,
            BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP, InterpT interp = INTERP_LINEAR,
            StreamT st = nullptr, bool onDev = false);
/// a_o(x) = a_i(x - delta * a_u(x) / spacing).
void ApplyVInv(Image3D& a_o, const Image3D& a_i, const Field3D& a_u, const float& delta = 1.f,
               BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP, InterpT interp = INTERP_LINEAR,
               StreamT st = nullptr, bool onDev = false);
/// a_o(x) = a_i(x + t), t in voxels.
void ComposeTranslation(Image3D& a_o, const Image3D& a_i, const Vec3Df& t,
                        BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP, InterpT interp = INTERP_LINEAR,
                        StreamT st = nullptr, bool onDev = false);
/// Adjoint of ApplyH (linear): a_o = sum over voxels x of a_i(x) pushed to
/// a_h(x) with the trilinear weights (mass landing outside the grid is
/// dropped). normalize = true divides by the splatted weights (0 where none).
void Splat(Image3D& a_o, const Field3D& a_h, const Image3D& a_i, bool normalize = false,
           StreamT st = nullptr);

// ---- finite differences -------------------------------------------------------------

/// a_o = difference of a_i along dim; op = OP_SQR squares it; accum adds it to a_o.
void FiniteDiff(Image3D& a_o, const Image3D& a_i, DimT dim, DiffT diff = DIFF_CENTRAL,
                BoundaryCondT bc = BC_CLAMP, bool accum = false, OpT op = OP_VAL, StreamT st = nullptr);
/// a_o = grad a_i.
void Gradient(Field3D& a_o, const Image3D& a_i, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_CLAMP,
              StreamT st = nullptr);
/// a_o = grad of the array a_i on a_o's grid and in a_o's memory (legacy
/// raw-pointer form, e.g. Gradient(g, field.x)).
void Gradient(Field3D& a_o, const float* a_i, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_CLAMP,
              StreamT st = nullptr);
/// Same as Gradient, on the CPU and the GPU (the legacy GPU lacked it).
void Gradient2(Field3D& a_o, const Image3D& a_i, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_CLAMP,
               StreamT st = nullptr);
/// Gradient inside a mask: a neighbour outside the mask (mask == 0) is
/// replaced by the centre value (zero flux across the mask border; with
/// BC_APPROX the central difference becomes one-sided there); 0 where the
/// centre is outside the mask. BC_WRAP throws "BC_WRAP boundary condition
/// unimplemented for masked gradient".
void GradientMask(Field3D& a_o, const Image3D& a_i, const Image3D& a_mask, DiffT diff = DIFF_CENTRAL,
                  BoundaryCondT bc = BC_CLAMP, StreamT st = nullptr);
/// Forward-difference gradient.
void GradFor(Field3D& a_o, const Image3D& a_i, BoundaryCondT bc = BC_CLAMP, StreamT st = nullptr);
/// |forward-difference gradient| (BC_CLAMP).
void GradForMag(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);
/// |grad a_i|.
void GradientMag(Image3D& a_o, const Image3D& a_i, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_CLAMP,
                 StreamT st = nullptr);
/// Upwind difference along dim: backward where a_speed > 0, forward elsewhere (BC_CLAMP).
void UpwindDiff(Image3D& a_o, const Image3D& a_i, const Image3D& a_speed, DimT dim, StreamT st = nullptr);
/// a_speed * |grad a_i| with Osher-Sethian upwinding (one-sided at the edges).
void UpwindGradMag(Image3D& a_o, const Image3D& a_i, const Image3D& a_speed, StreamT st = nullptr);
/// a_o = div a_i.
void Divergence(Image3D& a_o, const Field3D& a_i, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_CLAMP,
                StreamT st = nullptr);
/// Backward-difference divergence (with BC_WRAP exactly minus the adjoint of GradFor).
void DivBack(Image3D& a_o, const Field3D& a_i, BoundaryCondT bc = BC_CLAMP, StreamT st = nullptr);

// ---- pointwise field -> image -------------------------------------------------------

/// |a_i| per voxel.
void Magnitude(Image3D& a_o, const Field3D& a_i, StreamT st = nullptr);
/// |a_i|^2 per voxel.
void SqrMagnitude(Image3D& a_o, const Field3D& a_i, StreamT st = nullptr);
/// d_i . d_i1 per voxel.
void ComponentDotProd(Image3D& d_o, const Field3D& d_i, const Field3D& d_i1, StreamT st = nullptr);

// ---- Jacobian determinants ----------------------------------------------------------

/// det of the Jacobian of the H-field a_h as the legacy defines it: h in
/// voxel coordinates, the derivatives divided by the spacing (as Gradient and
/// Jacobian), so the identity gives 1 / voxelVol (1 / (sx sy) in 2-D); 2x2
/// when sz == 1.
void JacDetH(Image3D& a_jdet, const Field3D& a_h, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_APPROX,
             StreamT st = nullptr);
/// det of the matrix with rows a_Xg, a_Yg, a_Zg (2x2 of the x, y parts when
/// sz == 1), as the legacy; with the rows from Jacobian(h) it equals JacDetH(h).
void JacDetH(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg,
             StreamT st = nullptr);
/// Extension (not in the legacy): det of the Jacobian of the H-field a_h in
/// voxel units, i.e. JacDetH times the voxel volume: the identity gives 1 and
/// an affine map its determinant on any spacing (the local volume ratio).
void JacDetHVoxel(Image3D& a_jdet, const Field3D& a_h, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_APPROX,
                  StreamT st = nullptr);
/// Extension: JacDetH(a_detJ, a_Xg, a_Yg, a_Zg) times the voxel volume of
/// a_detJ's grid (sx sy when sz == 1): the voxel-unit determinant from the
/// physical gradients that Jacobian returns.
void JacDetHVoxel(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg,
                  StreamT st = nullptr);
/// Extension: |D a_v|_F^2 per voxel, the sum of the squares of the nine
/// entries of the Jacobian of the field a_v (derivatives divided by the
/// spacing, as Jacobian): one pass where Jacobian, three SqrMagnitude and two
/// Add_I take six (LDDMM's time-step stability check, max_x |Dv(x)|).
void JacobianNormSqr(Image3D& a_o, const Field3D& a_v, DiffT diff = DIFF_CENTRAL, BoundaryCondT bc = BC_APPROX,
                     StreamT st = nullptr);
/// det(I + J), J with rows a_Xg, a_Yg, a_Zg (3x3, as the legacy).
void JacDetV(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg,
             StreamT st = nullptr);
/// det(I - J) (the legacy negated only J's diagonal).
void JacDetVInv(Image3D& a_detJ, const Field3D& a_Xg, const Field3D& a_Yg, const Field3D& a_Zg,
                StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
