// Field operators: argument checks, then one elementwise launch per component.
#include "FOpers.h"

#include "Elementwise.h"
#include "MemAlloc.h"
#include "PointwiseKernels.h"
#include "conditionMacro.h"

namespace PyCA {
namespace Opers {

using detail::EwArgs;
using detail::dataOf;
using detail::launch;

namespace {
// For each component d: out_d = op_d(inputs_d...). `in` gives component d of
// each input (a field's component, or the same image for every d).
template <class OpFor, class... In>
void forComponents(Field3D& o, const float* mask, StreamT st, OpFor opFor, In... in) {
  constexpr int N = sizeof...(In);
  for (int d = 0; d < 3; ++d)
    launch(o.memType(), opFor(d), EwArgs<N>{dataOf(o, d), {in(d)...}, mask, o.nVox()}, st);
}

template <class Op>
auto same(const Op& op) { return [op](int) { return op; }; }

auto comp(const Field3D& f) { return [&f](int d) { return dataOf(f, d); }; }
auto comp(const Image3D& im) { return [&im](int) { return dataOf(im); }; }
}  // namespace

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

void SetMem(Field3D& a_o, const float& c, StreamT st, bool onDev) {
  SetMem(a_o, Vec3Df(c, c, c), st, onDev);
}

void SetMem(Field3D& a_o, const float& c, const Image3D& mask, StreamT st, bool onDev) {
  SetMem(a_o, Vec3Df(c, c, c), mask, st, onDev);
}

void SetMem(Field3D& a_o, const Vec3Df& v, StreamT st, bool) {
  forComponents(a_o, nullptr, st, [v](int d) { return kern::SetC{v[d]}; });
}

void SetMem(Field3D& a_o, const Vec3Df& v, const Image3D& mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, mask);
  forComponents(a_o, dataOf(mask), st, [v](int d) { return kern::SetC{v[d]}; });
}

void MulC(Field3D& a_o, const Field3D& a_i, const float& c, StreamT st, bool onDev) {
  MulC(a_o, a_i, Vec3Df(c, c, c), st, onDev);
}

void MulC(Field3D& a_o, const Field3D& a_i, const Vec3Df& c, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_i);
  forComponents(a_o, nullptr, st, [c](int d) { return kern::MulC{c[d]}; }, comp(a_i));
}

void MulC_I(Field3D& a_o, const float& c, StreamT st, bool onDev) { MulC(a_o, a_o, c, st, onDev); }

void MulC_I(Field3D& a_o, const Vec3Df& c, StreamT st, bool onDev) { MulC(a_o, a_o, c, st, onDev); }

void Add(Field3D& a_o, const Field3D& a_i, const Field3D& a_i1, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_i1);
  forComponents(a_o, nullptr, st, same(kern::Add{}), comp(a_i), comp(a_i1));
}

void Add(Field3D& a_o, const Field3D& a_i, const Image3D& a_i1, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_i1);
  forComponents(a_o, nullptr, st, same(kern::Add{}), comp(a_i), comp(a_i1));
}

void Add_I(Field3D& a_o, const Field3D& a_i1, StreamT st) { Add(a_o, a_o, a_i1, st); }

void Add_I(Field3D& a_o, const Image3D& a_i, StreamT st) { Add(a_o, a_o, a_i, st); }

}  // namespace Opers
}  // namespace PyCA
