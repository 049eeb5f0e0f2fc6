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
