// HFOpers.h -- helpers for H-fields (deformations in voxel coordinates of
// the grid: the identity is h(x) = x) (namespace PyCA::Opers, spec group H).
#ifndef __PYCA_HFOPERS_H__
#define __PYCA_HFOPERS_H__

#include "Aff3D.h"
#include "Field3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {
namespace Opers {

/// h(x) = x (voxel coordinates).
void SetToIdentity(Field3D& h, StreamT st = nullptr);
/// a_v = (a_h - x) * spacing (H-field to displacement in physical units).
void HtoV(Field3D& a_v, const Field3D& a_h, StreamT st = nullptr);
void HtoV_I(Field3D& a_v, StreamT st = nullptr);
/// h(x) = f(x + t), t in voxels.
void ComposeHTranslation(Field3D& h, const Field3D& f, const Vec3Df& t,
                         BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ID, StreamT st = nullptr,
                         bool onDev = false);
/// Field resampling of the H-field onto a_o's size, as Resample(Field3D&...):
/// the values are resampled as they are, not converted to the new grid's
/// voxel coordinates (legacy; to carry a deformation to another grid, resample
/// its displacement: HtoV, ResampleV, VtoH, or MultiscaleResampler).
void ResampleH(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ID,
               bool rescaleVector = false, StreamT st = nullptr);
/// First-order inverse 2x - h(x).
void InverseZerothOrder(Field3D& a_hInv, const Field3D& a_h, StreamT st = nullptr);
void InverseZerothOrder_I(Field3D& a_hInv, StreamT st = nullptr);
/// Splat of the H-field d_vi through d_h: its displacement d_vi - x is
/// splatted (optionally normalised by the weights) and x added back.
void SplatH(Field3D& d_vo, const Field3D& d_h, const Field3D& d_vi, bool normalize, StreamT st = nullptr);
/// h(x) = voxel coordinates (on a_h's grid) of aff_in applied to the world
/// point of voxel x: h = (A (x * sp + org) + t - org) / sp. With invertAff
/// the inverse transform is used (computed correctly, in double precision;
/// the legacy inverted in place and got it wrong); a singular matrix throws
/// "Error, could not invert affine transform".
void InitializeHFromAffine(Field3D& a_h, const Aff3Df& aff_in, bool invertAff, StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
