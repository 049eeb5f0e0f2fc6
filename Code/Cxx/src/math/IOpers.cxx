// Image operators, groups A, B and D: argument checks, then one elementwise
// launch each (see Apply.h). The per-voxel bodies are in PointwiseKernels.h.
#include "IOpers.h"

#include "Apply.h"
#include "Field3D.h"
#include "MemAlloc.h"
#include "PointwiseKernels.h"

namespace PyCA {
namespace detail {
[[noreturn]] void throwGpuNotCompiled(const char* file, int line) {
  throw PyCAException(file, line, "Error, GPU code not compiled");
}
}  // namespace detail

namespace Opers {

using detail::apply;
using detail::dataOf;
using kern::WithC;

// ---- copies and fills ------------------------------------------------------------

void Copy(Image3D& a_o, const Image3D& a_i, StreamT st) {
  MK_CHECK2_SIZE(a_o, a_i);
  CopyMemory(dataOf(a_o), a_o.memType(), dataOf(a_i), a_i.memType(), a_o.nVox() * sizeof(float), st);
}

void Copy(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {
  apply(a_o, kern::Identity{}, &a_mask, st, a_i);
}

void Copy(Image3D& a_o, const Field3D& a_i, int dim, StreamT st) {
  MK_CHECK2_ALL(a_o, a_i);
  PRECONDITION(dim >= 0 && dim <= 2, "unknown DimT");
  CopyMemory(dataOf(a_o), a_o.memType(), dataOf(a_i, dim), a_i.memType(),
             a_o.nVox() * sizeof(float), st);
}

void SetMem(Image3D& a_o, const float& c, StreamT st, bool) {
  apply(a_o, kern::SetC{c}, nullptr, st);
}

void SetMem(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  apply(a_o, kern::SetC{c}, &a_mask, st);
}

// ---- group A ---------------------------------------------------------------------

#define PYCA_DEFINE_IMAGE_UNARY(OP)                                                     \
  void OP(Image3D& a_o, const Image3D& a_i, StreamT st) {                               \
    apply(a_o, kern::OP{}, nullptr, st, a_i);                                           \
  }                                                                                     \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {        \
    apply(a_o, kern::OP{}, &a_mask, st, a_i);                                           \
  }                                                                                     \
  void OP##_I(Image3D& a_o, StreamT st) { apply(a_o, kern::OP{}, nullptr, st, a_o); }   \
  void OP##_I(Image3D& a_o, const Image3D& a_mask, StreamT st) {                        \
    apply(a_o, kern::OP{}, &a_mask, st, a_o);                                           \
  }

PYCA_DEFINE_IMAGE_UNARY(Abs)
PYCA_DEFINE_IMAGE_UNARY(Cube)
PYCA_DEFINE_IMAGE_UNARY(Exp)
PYCA_DEFINE_IMAGE_UNARY(Log)
PYCA_DEFINE_IMAGE_UNARY(Neg)
PYCA_DEFINE_IMAGE_UNARY(Ramp)
PYCA_DEFINE_IMAGE_UNARY(Sgn)
PYCA_DEFINE_IMAGE_UNARY(Step)
PYCA_DEFINE_IMAGE_UNARY(Sqr)
PYCA_DEFINE_IMAGE_UNARY(Sqrt)
PYCA_DEFINE_IMAGE_UNARY(Inv)
PYCA_DEFINE_IMAGE_UNARY(Ceil)
PYCA_DEFINE_IMAGE_UNARY(Floor)
PYCA_DEFINE_IMAGE_UNARY(Round)
PYCA_DEFINE_IMAGE_UNARY(Sin)
PYCA_DEFINE_IMAGE_UNARY(Asin)
PYCA_DEFINE_IMAGE_UNARY(Cos)
PYCA_DEFINE_IMAGE_UNARY(Acos)
PYCA_DEFINE_IMAGE_UNARY(Tan)
PYCA_DEFINE_IMAGE_UNARY(Atan)
PYCA_DEFINE_IMAGE_UNARY(Csc)
PYCA_DEFINE_IMAGE_UNARY(Sec)
PYCA_DEFINE_IMAGE_UNARY(Cot)
#undef PYCA_DEFINE_IMAGE_UNARY

// ---- group B ---------------------------------------------------------------------

#define PYCA_DEFINE_IMAGE_BINARY(OP)                                                              \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st) {                    \
    apply(a_o, kern::OP{}, nullptr, st, a_i, a_i1);                                               \
  }                                                                                               \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_mask,           \
          StreamT st) {                                                                           \
    apply(a_o, kern::OP{}, &a_mask, st, a_i, a_i1);                                               \
  }                                                                                               \
  void OP##C(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool) {                \
    apply(a_o, WithC<kern::OP>{{}, c}, nullptr, st, a_i);                                         \
  }                                                                                               \
  void OP##C(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask,             \
             StreamT st, bool) {                                                                  \
    apply(a_o, WithC<kern::OP>{{}, c}, &a_mask, st, a_i);                                         \
  }                                                                                               \
  void OP(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool onDev) {             \
    OP##C(a_o, a_i, c, st, onDev);                                                                \
  }                                                                                               \
  void OP(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask, StreamT st,    \
          bool onDev) {                                                                           \
    OP##C(a_o, a_i, c, a_mask, st, onDev);                                                        \
  }                                                                                               \
  void OP##_I(Image3D& a_o, const Image3D& a_i, StreamT st) { OP(a_o, a_o, a_i, st); }            \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {              \
    OP(a_o, a_o, a_i, a_mask, st);                                                                \
  }                                                                                               \
  void OP##C_I(Image3D& a_o, const float& c, StreamT st, bool onDev) {                            \
    OP##C(a_o, a_o, c, st, onDev);                                                                \
  }                                                                                               \
  void OP##C_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool onDev) {     \
    OP##C(a_o, a_o, c, a_mask, st, onDev);                                                        \
  }                                                                                               \
  void OP##_I(Image3D& a_o, const float& c, StreamT st, bool onDev) {                             \
    OP##C(a_o, a_o, c, st, onDev);                                                                \
  }                                                                                               \
  void OP##_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool onDev) {      \
    OP##C(a_o, a_o, c, a_mask, st, onDev);                                                        \
  }

PYCA_DEFINE_IMAGE_BINARY(Add)
PYCA_DEFINE_IMAGE_BINARY(Sub)
PYCA_DEFINE_IMAGE_BINARY(Mul)
PYCA_DEFINE_IMAGE_BINARY(Div)
PYCA_DEFINE_IMAGE_BINARY(Max)
PYCA_DEFINE_IMAGE_BINARY(Min)
PYCA_DEFINE_IMAGE_BINARY(Atan2)
PYCA_DEFINE_IMAGE_BINARY(GT)
PYCA_DEFINE_IMAGE_BINARY(GTE)
PYCA_DEFINE_IMAGE_BINARY(EQ)
PYCA_DEFINE_IMAGE_BINARY(NEQ)
PYCA_DEFINE_IMAGE_BINARY(LT)
PYCA_DEFINE_IMAGE_BINARY(LTE)
#undef PYCA_DEFINE_IMAGE_BINARY

// ---- group D: thresholds -------------------------------------------------------

void Shrink(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st) {
  apply(a_o, kern::Shrink{c}, nullptr, st, a_i);
}
void Shrink_I(Image3D& a_o, const float& c, StreamT st) { Shrink(a_o, a_o, c, st); }
void SoftAbs(Image3D& a_o, const Image3D& a_i, const float& eps, StreamT st) {
  apply(a_o, kern::SoftAbs{eps}, nullptr, st, a_i);
}
void SoftAbs_I(Image3D& a_o, const float& eps, StreamT st) { SoftAbs(a_o, a_o, eps, st); }
void SoftSgn(Image3D& a_o, const Image3D& a_i, const float& eps, StreamT st) {
  apply(a_o, kern::SoftSgn{eps}, nullptr, st, a_i);
}
void SoftSgn_I(Image3D& a_o, const float& eps, StreamT st) { SoftSgn(a_o, a_o, eps, st); }

}  // namespace Opers
}  // namespace PyCA
