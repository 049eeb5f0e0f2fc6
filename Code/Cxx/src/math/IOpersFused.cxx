// Image operators, group C (fused arithmetic): argument checks, then one
// elementwise launch each (see Apply.h). The per-voxel bodies are in
// PointwiseKernels.h.
#include "Apply.h"
#include "IOpers.h"
#include "PointwiseKernels.h"

namespace PyCA {
namespace Opers {

using detail::apply;

void PowC(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool) {
  apply(a_o, kern::PowC{c}, nullptr, st, a_i);
}
void PowC_I(Image3D& a_o, const float& c, StreamT st, bool onDev) { PowC(a_o, a_o, c, st, onDev); }

void AbsDiff(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st) {
  apply(a_o, kern::AbsDiff{}, nullptr, st, a_i, a_i1);
}
void AbsDiff_I(Image3D& a_o, const Image3D& a_i, StreamT st) { AbsDiff(a_o, a_o, a_i, st); }
void SqrDiff(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st) {
  apply(a_o, kern::SqrDiff{}, nullptr, st, a_i, a_i1);
}
void SqrDiff_I(Image3D& a_o, const Image3D& a_i, StreamT st) { SqrDiff(a_o, a_o, a_i, st); }

#define PYCA_DEFINE_IMAGE_TERNARY(OP)                                                          \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_i2,          \
          StreamT st) {                                                                        \
    apply(a_o, kern::OP{}, nullptr, st, a_i, a_i1, a_i2);                                      \
  }                                                                                            \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st) {             \
    OP(a_o, a_o, a_i, a_i1, st);                                                               \
  }
PYCA_DEFINE_IMAGE_TERNARY(MulMul)
PYCA_DEFINE_IMAGE_TERNARY(MulAdd)
PYCA_DEFINE_IMAGE_TERNARY(MulSub)
PYCA_DEFINE_IMAGE_TERNARY(AddMul)
PYCA_DEFINE_IMAGE_TERNARY(AddDiv)
PYCA_DEFINE_IMAGE_TERNARY(SubMul)
PYCA_DEFINE_IMAGE_TERNARY(SubDiv)
PYCA_DEFINE_IMAGE_TERNARY(Add_Mul)
PYCA_DEFINE_IMAGE_TERNARY(Sub_Mul)
#undef PYCA_DEFINE_IMAGE_TERNARY

#define PYCA_DEFINE_IMAGE_TERNARY_C(OP)                                                        \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_i2,          \
          const float& c, StreamT st, bool) {                                                  \
    apply(a_o, kern::OP{c}, nullptr, st, a_i, a_i1, a_i2);                                     \
  }                                                                                            \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const float& c,           \
              StreamT st, bool onDev) {                                                        \
    OP(a_o, a_o, a_i, a_i1, c, st, onDev);                                                     \
  }
PYCA_DEFINE_IMAGE_TERNARY_C(Add_AddMulC)
PYCA_DEFINE_IMAGE_TERNARY_C(Add_SubMulC)
PYCA_DEFINE_IMAGE_TERNARY_C(Add_MulMulC)
PYCA_DEFINE_IMAGE_TERNARY_C(Sub_AddMulC)
PYCA_DEFINE_IMAGE_TERNARY_C(Sub_SubMulC)
PYCA_DEFINE_IMAGE_TERNARY_C(Sub_MulMulC)
#undef PYCA_DEFINE_IMAGE_TERNARY_C

#define PYCA_DEFINE_IMAGE_BINARY_C(OP)                                                         \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const float& c, StreamT st,   \
          bool) {                                                                              \
    apply(a_o, kern::OP{c}, nullptr, st, a_i, a_i1);                                           \
  }                                                                                            \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool onDev) {      \
    OP(a_o, a_o, a_i, c, st, onDev);                                                           \
  }
PYCA_DEFINE_IMAGE_BINARY_C(AddMulC)
PYCA_DEFINE_IMAGE_BINARY_C(SubMulC)
PYCA_DEFINE_IMAGE_BINARY_C(MulMulC)
PYCA_DEFINE_IMAGE_BINARY_C(Add_MulC)
#undef PYCA_DEFINE_IMAGE_BINARY_C

void MulCAdd(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_i1, StreamT st,
             bool) {
  apply(a_o, kern::MulCAdd{c}, nullptr, st, a_i, a_i1);
}
void MulCAdd_I(Image3D& a_o, const float& c, const Image3D& a_i, StreamT st, bool onDev) {
  MulCAdd(a_o, a_o, c, a_i, st, onDev);
}
void MulCSub(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_i1, StreamT st,
             bool) {
  apply(a_o, kern::MulCSub{c}, nullptr, st, a_i, a_i1);
}
void MulCSub_I(Image3D& a_o, const float& c, const Image3D& a_i, StreamT st, bool onDev) {
  MulCSub(a_o, a_o, c, a_i, st, onDev);
}

void MulCAddC(Image3D& a_o, const Image3D& a_i, const float& a, const float& b, StreamT st, bool) {
  apply(a_o, kern::MulCAddC{a, b}, nullptr, st, a_i);
}
void MulCAddC_I(Image3D& a_o, const float& a, const float& b, StreamT st, bool onDev) {
  MulCAddC(a_o, a_o, a, b, st, onDev);
}
void AddCMulC(Image3D& a_o, const Image3D& a_i, const float& a, const float& b, StreamT st, bool) {
  apply(a_o, kern::AddCMulC{a, b}, nullptr, st, a_i);
}
void AddCMulC_I(Image3D& a_o, const float& a, const float& b, StreamT st, bool onDev) {
  AddCMulC(a_o, a_o, a, b, st, onDev);
}

void MulC_Add_MulC(Image3D& a_o, const Image3D& a_i, const float& a, const Image3D& a_i1,
                   const float& b, StreamT st, bool) {
  apply(a_o, kern::MulC_Add_MulC{a, b}, nullptr, st, a_i, a_i1);
}
void MulC_Add_MulC_I(Image3D& a_o, const float& a, const Image3D& a_i, const float& b, StreamT st,
                     bool onDev) {
  MulC_Add_MulC(a_o, a_o, a, a_i, b, st, onDev);
}

void AddCMulCAddC(Image3D& a_o, const Image3D& a_i, const float& a, const float& b,
                  const float& c, StreamT st, bool) {
  apply(a_o, kern::AddCMulCAddC{a, b, c}, nullptr, st, a_i);
}
void AddCMulCAddC_I(Image3D& a_o, const float& a, const float& b, const float& c, StreamT st,
                    bool onDev) {
  AddCMulCAddC(a_o, a_o, a, b, c, st, onDev);
}

}  // namespace Opers
}  // namespace PyCA
