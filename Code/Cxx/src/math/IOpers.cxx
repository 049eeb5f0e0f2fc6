// Image operators: argument checks, then one elementwise launch each.
#include "IOpers.h"

#include "Elementwise.h"
#include "Field3D.h"
#include "MemAlloc.h"
#include "PointwiseKernels.h"
#include "conditionMacro.h"

namespace PyCA {
namespace detail {
[[noreturn]] void throwGpuNotCompiled(const char* file, int line) {
  throw PyCAException(file, line, "Error, GPU code not compiled");
}
}  // namespace detail

namespace Opers {

using detail::EwArgs;
using detail::dataOf;
using detail::launch;

namespace {
// out = op(inputs...) over the output's voxels, optionally masked.
template <class Op>
void run0(Image3D& o, const Op& op, const float* mask, StreamT st) {
  launch(o.memType(), op, EwArgs<0>{dataOf(o), {nullptr}, mask, o.nVox()}, st);
}
template <class Op>
void run1(Image3D& o, const Op& op, const float* a, const float* mask, StreamT st) {
  launch(o.memType(), op, EwArgs<1>{dataOf(o), {a}, mask, o.nVox()}, st);
}
template <class Op>
void run2(Image3D& o, const Op& op, const float* a, const float* b, const float* mask, StreamT st) {
  launch(o.memType(), op, EwArgs<2>{dataOf(o), {a, b}, mask, o.nVox()}, st);
}
}  // namespace

void Copy(Image3D& a_o, const Image3D& a_i, StreamT st) {
  MK_CHECK2_SIZE(a_o, a_i);
  CopyMemory(dataOf(a_o), a_o.memType(), dataOf(a_i), a_i.memType(), a_o.nVox() * sizeof(float), st);
}

void Copy(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run1(a_o, kern::Identity{}, dataOf(a_i), dataOf(a_mask), st);
}

void Copy(Image3D& a_o, const Field3D& a_i, int dim, StreamT st) {
  MK_CHECK2_ALL(a_o, a_i);
  PRECONDITION(dim >= 0 && dim <= 2, "unknown DimT");
  CopyMemory(dataOf(a_o), a_o.memType(), dataOf(a_i, dim), a_i.memType(),
             a_o.nVox() * sizeof(float), st);
}

void SetMem(Image3D& a_o, const float& c, StreamT st, bool) { run0(a_o, kern::SetC{c}, nullptr, st); }

void SetMem(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_mask);
  run0(a_o, kern::SetC{c}, dataOf(a_mask), st);
}

void MulC(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_i);
  run1(a_o, kern::MulC{c}, dataOf(a_i), nullptr, st);
}

void MulC(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run1(a_o, kern::MulC{c}, dataOf(a_i), dataOf(a_mask), st);
}

void MulC_I(Image3D& a_o, const float& c, StreamT st, bool) {
  run1(a_o, kern::MulC{c}, dataOf(a_o), nullptr, st);
}

void MulC_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_mask);
  run1(a_o, kern::MulC{c}, dataOf(a_o), dataOf(a_mask), st);
}

void Add(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_i1);
  run2(a_o, kern::Add{}, dataOf(a_i), dataOf(a_i1), nullptr, st);
}

void Add(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_mask, StreamT st) {
  MK_CHECK4_ALL(a_o, a_i, a_i1, a_mask);
  run2(a_o, kern::Add{}, dataOf(a_i), dataOf(a_i1), dataOf(a_mask), st);
}

void Add(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_i);
  run1(a_o, kern::AddC{c}, dataOf(a_i), nullptr, st);
}

void Add(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run1(a_o, kern::AddC{c}, dataOf(a_i), dataOf(a_mask), st);
}

void Add_I(Image3D& a_o, const Image3D& a_i, StreamT st) {
  MK_CHECK2_ALL(a_o, a_i);
  run2(a_o, kern::Add{}, dataOf(a_o), dataOf(a_i), nullptr, st);
}

void Add_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run2(a_o, kern::Add{}, dataOf(a_o), dataOf(a_i), dataOf(a_mask), st);
}

void Add_I(Image3D& a_o, const float& c, StreamT st, bool) {
  run1(a_o, kern::AddC{c}, dataOf(a_o), nullptr, st);
}

void Add_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_mask);
  run1(a_o, kern::AddC{c}, dataOf(a_o), dataOf(a_mask), st);
}

}  // namespace Opers
}  // namespace PyCA
