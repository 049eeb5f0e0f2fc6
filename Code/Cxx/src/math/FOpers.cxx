// Field operators: argument checks, then one elementwise launch per
// component (see Apply.h). The per-voxel bodies are in PointwiseKernels.h.
#include "FOpers.h"

#include "Apply.h"
#include "MemAlloc.h"
#include "PointwiseKernels.h"

namespace PyCA {
namespace Opers {

using detail::applyField;
using detail::dataOf;
using detail::perComp;
using kern::WithC;

// ---- copies and fills ------------------------------------------------------------

void Copy(Field3D& a_o, const Field3D& a_i, StreamT st) {
  MK_CHECK2_SIZE(a_o, a_i);
  const size_t bytes = a_o.nVox() * sizeof(float);
  for (int d = 0; d < 3; ++d)
    CopyMemory(dataOf(a_o, d), a_o.memType(), dataOf(a_i, d), a_i.memType(), bytes, st);
}

void Copy(Field3D& a_o, const Image3D& a_i, int dim, StreamT st) {
  MK_CHECK2_ALL(a_o, a_i);
  PRECONDITION(dim >= 0 && dim <= 2, "unknown DimT");
  CopyMemory(dataOf(a_o, dim), a_o.memType(), dataOf(a_i), a_i.memType(),
             a_o.nVox() * sizeof(float), st);
}

void SetMem(Field3D& a_o, const float& c, StreamT st, bool) {
  applyField(a_o, kern::SetC{c}, nullptr, st);
}
void SetMem(Field3D& a_o, const float& c, const Image3D& mask, StreamT st, bool) {
  applyField(a_o, kern::SetC{c}, &mask, st);
}
void SetMem(Field3D& a_o, const Vec3Df& v, StreamT st, bool) {
  applyField(a_o, perComp([v](int d) { return kern::SetC{v[d]}; }), nullptr, st);
}
void SetMem(Field3D& a_o, const Vec3Df& v, const Image3D& mask, StreamT st, bool) {
  applyField(a_o, perComp([v](int d) { return kern::SetC{v[d]}; }), &mask, st);
}

// ---- group B ---------------------------------------------------------------------

#define PYCA_DEFINE_FIELD_BINARY(OP)                                                    \
  void OP(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st) {          \
    applyField(a_o, kern::OP{}, nullptr, st, a_i, a_i1);                                \
  }                                                                                     \
  void OP(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st) {          \
    applyField(a_o, kern::OP{}, nullptr, st, a_i, a_i1);                                \
  }                                                                                     \
  void OP##_I(Field3D& a_o, const Image3D& a_i, StreamT st) { OP(a_o, a_o, a_i, st); }  \
  void OP##_I(Field3D& a_o, const Field3D& a_i1, StreamT st) { OP(a_o, a_o, a_i1, st); }
PYCA_DEFINE_FIELD_BINARY(Add)
PYCA_DEFINE_FIELD_BINARY(Sub)
PYCA_DEFINE_FIELD_BINARY(Mul)
PYCA_DEFINE_FIELD_BINARY(Div)
#undef PYCA_DEFINE_FIELD_BINARY

void Max(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st) {
  applyField(a_o, kern::Max{}, nullptr, st, a_i, a_i1);
}
void Max_I(Field3D& a_o, const Field3D& a_i1, StreamT st) { Max(a_o, a_o, a_i1, st); }
void Min(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st) {
  applyField(a_o, kern::Min{}, nullptr, st, a_i, a_i1);
}
void Min_I(Field3D& a_o, const Field3D& a_i1, StreamT st) { Min(a_o, a_o, a_i1, st); }

#define PYCA_DEFINE_FIELD_BINARY_C(OP)                                                       \
  void OP##C(Field3D& a_o, const Field3D& a_i, const Vec3Df& c, StreamT st, bool) {          \
    applyField(a_o, perComp([c](int d) { return WithC<kern::OP>{{}, c[d]}; }), nullptr, st,  \
               a_i);                                                                         \
  }                                                                                          \
  void OP##C(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st, bool) {           \
    applyField(a_o, WithC<kern::OP>{{}, c}, nullptr, st, a_i);                               \
  }                                                                                          \
  void OP##C_I(Field3D& a_o, const Vec3Df& c, StreamT st, bool onDev) {                      \
    OP##C(a_o, a_o, c, st, onDev);                                                           \
  }                                                                                          \
  void OP##C_I(Field3D& a_o, const float& c, StreamT st, bool onDev) {                       \
    OP##C(a_o, a_o, c, st, onDev);                                                           \
  }
PYCA_DEFINE_FIELD_BINARY_C(Add)
PYCA_DEFINE_FIELD_BINARY_C(Sub)
PYCA_DEFINE_FIELD_BINARY_C(Mul)
PYCA_DEFINE_FIELD_BINARY_C(Div)
PYCA_DEFINE_FIELD_BINARY_C(Max)
PYCA_DEFINE_FIELD_BINARY_C(Min)
#undef PYCA_DEFINE_FIELD_BINARY_C

// ---- group C ---------------------------------------------------------------------

void MulCAdd(Field3D& a_o, const Field3D& a_i, const float& c, const Field3D& a_i1, StreamT st,
             bool) {
  applyField(a_o, kern::MulCAdd{c}, nullptr, st, a_i, a_i1);
}
void MulCAdd_I(Field3D& a_o, const float& c, const Field3D& a_i, StreamT st, bool onDev) {
  MulCAdd(a_o, a_o, c, a_i, st, onDev);
}
void MulCSub(Field3D& a_o, const Field3D& a_i, const float& c, const Field3D& a_i1, StreamT st,
             bool) {
  applyField(a_o, kern::MulCSub{c}, nullptr, st, a_i, a_i1);
}
void MulCSub_I(Field3D& a_o, const float& c, const Field3D& a_i, StreamT st, bool onDev) {
  MulCSub(a_o, a_o, c, a_i, st, onDev);
}

void MulCAddC(Field3D& a_o, const Field3D& a_i, const Vec3Df& a, const Vec3Df& b, StreamT st,
              bool) {
  applyField(a_o, perComp([a, b](int d) { return kern::MulCAddC{a[d], b[d]}; }), nullptr, st, a_i);
}
void MulCAddC_I(Field3D& a_o, const Vec3Df& a, const Vec3Df& b, StreamT st, bool onDev) {
  MulCAddC(a_o, a_o, a, b, st, onDev);
}
void AddCMulC(Field3D& a_o, const Field3D& a_i, const Vec3Df& a, const Vec3Df& b, StreamT st,
              bool) {
  applyField(a_o, perComp([a, b](int d) { return kern::AddCMulC{a[d], b[d]}; }), nullptr, st, a_i);
}
void AddCMulC_I(Field3D& a_o, const Vec3Df& a, const Vec3Df& b, StreamT st, bool onDev) {
  AddCMulC(a_o, a_o, a, b, st, onDev);
}

void AddMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c, StreamT st,
             bool) {
  applyField(a_o, kern::AddMulC{c}, nullptr, st, a_i, a_i1);
}
void AddMulC_I(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st, bool onDev) {
  AddMulC(a_o, a_o, a_i, c, st, onDev);
}
void SubMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c, StreamT st,
             bool) {
  applyField(a_o, kern::SubMulC{c}, nullptr, st, a_i, a_i1);
}
void SubMulC_I(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st, bool onDev) {
  SubMulC(a_o, a_o, a_i, c, st, onDev);
}

void MulMulC(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, const float& c, StreamT st,
             bool) {
  applyField(a_o, kern::MulMulC{c}, nullptr, st, a_i, a_i1);
}
void MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c, StreamT st,
             bool) {
  applyField(a_o, kern::MulMulC{c}, nullptr, st, a_i, a_i1);
}
void MulMulC_I(Field3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool onDev) {
  MulMulC(a_o, a_o, a_i, c, st, onDev);
}
void MulMulC_I(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st, bool onDev) {
  MulMulC(a_o, a_o, a_i, c, st, onDev);
}

void Add_MulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c, StreamT st,
              bool) {
  applyField(a_o, kern::Add_MulC{c}, nullptr, st, a_i, a_i1);
}
void Add_MulC_I(Field3D& a_o, const Field3D& a_i1, const float& c, StreamT st, bool onDev) {
  Add_MulC(a_o, a_o, a_i1, c, st, onDev);
}

void MulC_Add_MulC(Field3D& a_o, const Field3D& a_i, const float& ca, const Field3D& a_i1,
                   const float& cb, StreamT st, bool) {
  applyField(a_o, kern::MulC_Add_MulC{ca, cb}, nullptr, st, a_i, a_i1);
}
void MulC_Add_MulC_I(Field3D& a_o, const float& co, const Field3D& a_i1, const float& cb,
                     StreamT st, bool onDev) {
  MulC_Add_MulC(a_o, a_o, co, a_i1, cb, st, onDev);
}

void AddCMulCAddC(Field3D& a_o, const Field3D& a_i, const float& a, const float& b, const float& c,
                  StreamT st, bool) {
  applyField(a_o, kern::AddCMulCAddC{a, b, c}, nullptr, st, a_i);
}
void AddCMulCAddC(Field3D& a_o, const Field3D& a_i, const Vec3Df& a, const Vec3Df& b,
                  const Vec3Df& c, StreamT st, bool) {
  applyField(a_o, perComp([a, b, c](int d) { return kern::AddCMulCAddC{a[d], b[d], c[d]}; }),
             nullptr, st, a_i);
}
void AddCMulCAddC_I(Field3D& a_o, const float& a, const float& b, const float& c, StreamT st,
                    bool onDev) {
  AddCMulCAddC(a_o, a_o, a, b, c, st, onDev);
}
void AddCMulCAddC_I(Field3D& a_o, const Vec3Df& a, const Vec3Df& b, const Vec3Df& c, StreamT st,
                    bool onDev) {
  AddCMulCAddC(a_o, a_o, a, b, c, st, onDev);
}

void Add_MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Image3D& a_i2,
                 const float& c, StreamT st, bool) {
  applyField(a_o, kern::Add_MulMulC{c}, nullptr, st, a_i, a_i1, a_i2);
}
void Add_MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Field3D& a_i2,
                 const float& c, StreamT st, bool) {
  applyField(a_o, kern::Add_MulMulC{c}, nullptr, st, a_i, a_i1, a_i2);
}
void Add_MulMulC_I(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, const float& c,
                   StreamT st, bool onDev) {
  Add_MulMulC(a_o, a_o, a_i, a_i1, c, st, onDev);
}
void Add_MulMulC_I(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
                   StreamT st, bool onDev) {
  Add_MulMulC(a_o, a_o, a_i, a_i1, c, st, onDev);
}
void Sub_MulMulC(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Field3D& a_i2,
                 const float& c, StreamT st, bool) {
  applyField(a_o, kern::Sub_MulMulC{c}, nullptr, st, a_i, a_i1, a_i2);
}
void Sub_MulMulC_I(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const float& c,
                   StreamT st, bool onDev) {
  Sub_MulMulC(a_o, a_o, a_i, a_i1, c, st, onDev);
}

void Add_Mul(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Image3D& a_i2,
             StreamT st) {
  applyField(a_o, kern::Add_Mul{}, nullptr, st, a_i, a_i1, a_i2);
}
void Add_Mul_I(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st) {
  Add_Mul(a_o, a_o, a_i, a_i1, st);
}
void Sub_Mul(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, const Image3D& a_i2,
             StreamT st) {
  applyField(a_o, kern::Sub_Mul{}, nullptr, st, a_i, a_i1, a_i2);
}
void Sub_Mul_I(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st) {
  Sub_Mul(a_o, a_o, a_i, a_i1, st);
}

// ---- group D ---------------------------------------------------------------------

void Shrink(Field3D& a_o, const Field3D& a_i, const float& eps, StreamT st) {
  detail::checkAll(a_o, a_i);
  kern::ShrinkVec fn{eps, dataOf(a_o, 0), dataOf(a_o, 1), dataOf(a_o, 2),
                     dataOf(a_i, 0), dataOf(a_i, 1), dataOf(a_i, 2)};
  detail::forEach(a_o.memType(), fn, a_o.nVox(), st);
}
void Shrink_I(Field3D& a_o, const float& eps, StreamT st) { Shrink(a_o, a_o, eps, st); }

// ---- utilities -------------------------------------------------------------------

bool Is1D(const Field3D& d_i, size_t n) {
  return d_i.y == d_i.x + n && d_i.z == d_i.y + n;
}
bool Is1D(const Field3D& d_i, const Field3D& d_i1, size_t n) {
  return Is1D(d_i, n) && Is1D(d_i1, n);
}
bool Is1D(const Field3D& d_i, const Field3D& d_i1, const Field3D& d_i2, size_t n) {
  return Is1D(d_i, d_i1, n) && Is1D(d_i2, n);
}
bool Is1D(const Field3D& d_i, const Field3D& d_i1, const Field3D& d_i2, const Field3D& d_i3,
          size_t n) {
  return Is1D(d_i, d_i1, d_i2, n) && Is1D(d_i3, n);
}

}  // namespace Opers
}  // namespace PyCA
