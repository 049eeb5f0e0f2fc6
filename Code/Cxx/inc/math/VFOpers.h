// VFOpers.h -- helpers for V-fields (velocities and displacements in
// physical units) (namespace PyCA::Opers, spec group V).
#ifndef __PYCA_VFOPERS_H__
#define __PYCA_VFOPERS_H__

#include "Field3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {
namespace Opers {

/// v = 0.
void SetToZero(Field3D& v, StreamT st = nullptr);
/// h = x + delta * v / spacing (displacement to H-field).
void VtoH(Field3D& h, const Field3D& v, const float& delta = 1.f, StreamT st = nullptr, bool onDev = false);
void VtoH_I(Field3D& h, const float& delta = 1.f, StreamT st = nullptr, bool onDev = false);
/// v(x) = g(x + t), t in voxels.
void ComposeVTranslation(Field3D& v, const Field3D& g, const Vec3Df& t,
                         BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ZERO, StreamT st = nullptr,
                         bool onDev = false);
/// Splat of each component of a_i through a_h (optionally normalised by the
/// weights; the legacy wrote the x component's splat into z).
void SplatV(Field3D& a_o, const Field3D& a_h, const Field3D& a_i, bool normalize, StreamT st = nullptr);
/// Field resampling onto a_o's size (see Resample(Field3D&, ...)).
void ResampleV(Field3D& a_o, const Field3D& a_i, BackgroundStrategy bg = BACKGROUND_STRATEGY_PARTIAL_ZERO,
               bool rescaleVector = false, StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
