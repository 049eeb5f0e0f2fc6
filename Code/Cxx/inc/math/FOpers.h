// FOpers.h -- free operators on fields (namespace PyCA::Opers).
#ifndef __PYCA_FOPERS_H__
#define __PYCA_FOPERS_H__

#include "Field3D.h"
#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"

namespace PyCA {
namespace Opers {

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

/// a_o = a_i * c, per component for a Vec3Df.
void MulC(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st = nullptr, bool onDev = false);
void MulC(Field3D& a_o, const Field3D& a_i, const Vec3Df& c, StreamT st = nullptr, bool onDev = false);
void MulC_I(Field3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
void MulC_I(Field3D& a_o, const Vec3Df& c, StreamT st = nullptr, bool onDev = false);

/// a_o = a_i + a_i1 (field + field, or field + image broadcast to each component).
void Add(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st = nullptr);
void Add(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st = nullptr);
void Add_I(Field3D& a_o, const Field3D& a_i1, StreamT st = nullptr);
void Add_I(Field3D& a_o, const Image3D& a_i, StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
