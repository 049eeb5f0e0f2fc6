// Apply.h -- the operator layer's one-liners: check the arguments, then
// launch one functor per output array.
//
//   apply(o, op, mask, st, in...)       image output: o = op(in...)
//   applyField(o, op, mask, st, in...)  field output, per component d:
//                                       o_d = op_d(in_d...), where in_d is
//                                       component d of a field input or an
//                                       image input itself (broadcast)
// Every input (and the mask) is checked against the output with the legacy
// messages: grids first ("Input grids are not equal"), then memory types
// ("memory types are not compatible").
#ifndef __PYCA_APPLY_H__
#define __PYCA_APPLY_H__

#include "Elementwise.h"
#include "Field3D.h"
#include "Image3D.h"
#include "conditionMacro.h"

namespace PyCA {
namespace detail {

template <class O, class T>
void checkGrid(const O& o, const T& in) {
  MK_CHECK2_SIZE(o, in);
}
template <class O, class T>
void checkMem(const O& o, const T& in) {
  MK_CHECK2_MEM(o, in);
}
template <class O, class... T>
void checkAll(const O& o, const T&... in) {
  (checkGrid(o, in), ...);
  (checkMem(o, in), ...);
}

/// Component d of an operator input: a field's component or the image itself.
inline const float* compOf(const Field3D& f, int d) { return dataOf(f, d); }
inline const float* compOf(const Image3D& im, int) { return dataOf(im); }

/// A functor that differs per component (Vec3Df constants): f(d) gives it.
template <class F>
struct PerComp {
  F f;
};
template <class F>
PerComp<F> perComp(F f) {
  return PerComp<F>{f};
}
template <class Op>
const Op& opAt(const Op& op, int) {
  return op;
}
template <class F>
auto opAt(const PerComp<F>& p, int d) {
  return p.f(d);
}

template <class Op, class... In>
void apply(Image3D& o, const Op& op, const Image3D* mask, StreamT st, const In&... in) {
  checkAll(o, in...);
  if (mask) checkAll(o, *mask);
  constexpr int N = sizeof...(In);
  launch(o.memType(), op, EwArgs<N>{dataOf(o), {dataOf(in)...}, mask ? dataOf(*mask) : nullptr, o.nVox()},
         st);
}

template <class Op, class... In>
void applyField(Field3D& o, const Op& op, const Image3D* mask, StreamT st, const In&... in) {
  checkAll(o, in...);
  if (mask) checkAll(o, *mask);
  constexpr int N = sizeof...(In);
  const float* m = mask ? dataOf(*mask) : nullptr;
  for (int d = 0; d < 3; ++d)
    launch(o.memType(), opAt(op, d), EwArgs<N>{dataOf(o, d), {compOf(in, d)...}, m, o.nVox()}, st);
}

}  // namespace detail
}  // namespace PyCA

#endif
