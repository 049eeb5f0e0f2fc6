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
using detail::launch;

namespace {
// out = op(inputs...) over the output's voxels, optionally masked.
template <class Op>
void run0(Image3D& o, const Op& op, const float* mask, StreamT st) {
  launch(o.memType(), op, EwArgs<0>{o.get(), {nullptr}, mask, o.nVox()}, st);
}
template <class Op>
void run1(Image3D& o, const Op& op, const float* a, const float* mask, StreamT st) {
  launch(o.memType(), op, EwArgs<1>{o.get(), {a}, mask, o.nVox()}, st);
}
template <class Op>
void run2(Image3D& o, const Op& op, const float* a, const float* b, const float* mask, StreamT st) {
  launch(o.memType(), op, EwArgs<2>{o.get(), {a, b}, mask, o.nVox()}, st);
}
}  // namespace

void Copy(Image3D& a_o, const Image3D& a_i, StreamT st) {
  MK_CHECK2_SIZE(a_o, a_i);
  CopyMemory(a_o.get(), a_o.memType(), a_i.get(), a_i.memType(), a_o.nVox() * sizeof(float), st);
}

void Copy(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run1(a_o, kern::Identity{}, a_i.get(), a_mask.get(), st);
}

void Copy(Image3D& a_o, const Field3D& a_i, int dim, StreamT st) {
  MK_CHECK2_ALL(a_o, a_i);
  PRECONDITION(dim >= 0 && dim <= 2, "unknown DimT");
  CopyMemory(a_o.get(), a_o.memType(), a_i.getComponent(dim), a_i.memType(),
             a_o.nVox() * sizeof(float), st);
}

void SetMem(Image3D& a_o, const float& c, StreamT st, bool) { run0(a_o, kern::SetC{c}, nullptr, st); }

void SetMem(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_mask);
  run0(a_o, kern::SetC{c}, a_mask.get(), st);
}

void MulC(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_i);
  run1(a_o, kern::MulC{c}, a_i.get(), nullptr, st);
}

void MulC(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run1(a_o, kern::MulC{c}, a_i.get(), a_mask.get(), st);
}

void MulC_I(Image3D& a_o, const float& c, StreamT st, bool) {
  run1(a_o, kern::MulC{c}, a_o.get(), nullptr, st);
}

void MulC_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_mask);
  run1(a_o, kern::MulC{c}, a_o.get(), a_mask.get(), st);
}

void Add(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_i1);
  run2(a_o, kern::Add{}, a_i.get(), a_i1.get(), nullptr, st);
}

void Add(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_mask, StreamT st) {
  MK_CHECK4_ALL(a_o, a_i, a_i1, a_mask);
  run2(a_o, kern::Add{}, a_i.get(), a_i1.get(), a_mask.get(), st);
}

void Add(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_i);
  run1(a_o, kern::AddC{c}, a_i.get(), nullptr, st);
}

void Add(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run1(a_o, kern::AddC{c}, a_i.get(), a_mask.get(), st);
}

void Add_I(Image3D& a_o, const Image3D& a_i, StreamT st) {
  MK_CHECK2_ALL(a_o, a_i);
  run2(a_o, kern::Add{}, a_o.get(), a_i.get(), nullptr, st);
}

void Add_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st) {
  MK_CHECK3_ALL(a_o, a_i, a_mask);
  run2(a_o, kern::Add{}, a_o.get(), a_i.get(), a_mask.get(), st);
}

void Add_I(Image3D& a_o, const float& c, StreamT st, bool) {
  run1(a_o, kern::AddC{c}, a_o.get(), nullptr, st);
}

void Add_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st, bool) {
  MK_CHECK2_ALL(a_o, a_mask);
  run1(a_o, kern::AddC{c}, a_o.get(), a_mask.get(), st);
}

}  // namespace Opers
}  // namespace PyCA
