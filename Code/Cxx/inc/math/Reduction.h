// Reduction.h -- reductions over images and fields (namespace PyCA::Opers).
// Accumulation is in double on both back ends, so results do not drift with
// the image size the way the legacy float32 accumulation did.
#ifndef __PYCA_REDUCTION_H__
#define __PYCA_REDUCTION_H__

#include "Field3D.h"
#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"

namespace PyCA {
namespace Opers {

/// Legacy form: a_o = sum (or a_o += sum with update). onDev is accepted for
/// compatibility; the result is always written to host memory.
void Sum(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Sum(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Per-component sums of a field.
void Sum(Vec3Df& a_o, const Field3D& a_i, StreamT st = nullptr);
/// a_o = sum of squares (+= with update).
void Sum2(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Sum2(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);

/// Value-returning forms in double precision (what Python's Sum(im) returns).
/// There is no prior value to combine with: update is accepted for legacy
/// call compatibility and ignored.
double Sum(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Sum(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Sum2(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Sum2(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Per-component sums of a field.
Vec3Df SumComp(const Field3D& a_i, StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
