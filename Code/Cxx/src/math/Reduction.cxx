// Reductions: argument checks, then one double-accumulating reduction each.
#include "Reduction.h"

#include "PointwiseKernels.h"
#include "Reduce.h"

namespace PyCA {
namespace Opers {

using detail::RedArgs;
using detail::SumComb;

namespace {
template <class Map>
double sumImage(const Image3D& a, const Map& m, StreamT st) {
  return detail::reduce(a.memType(), m, SumComb{}, RedArgs<1>{{detail::dataOf(a)}, a.nVox()}, st);
}
template <class Map>
Vec3Dd sumComponents(const Field3D& a, const Map& m, StreamT st) {
  Vec3Dd r;
  for (int d = 0; d < 3; ++d)
    r[d] = detail::reduce(a.memType(), m, SumComb{}, RedArgs<1>{{detail::dataOf(a, d)}, a.nVox()}, st);
  return r;
}
// Legacy out-parameter forms: a_o = r, or a_o += r with update.
void store(float& a_o, double r, bool update) { a_o = float(update ? a_o + r : r); }
}  // namespace

double Sum(const Image3D& a_i, bool, StreamT st, bool) { return sumImage(a_i, kern::RedIdentity{}, st); }
double Sum2(const Image3D& a_i, bool, StreamT st, bool) { return sumImage(a_i, kern::RedSquare{}, st); }
double Sum(const Field3D& a_i, bool, StreamT st, bool) {
  return sumComponents(a_i, kern::RedIdentity{}, st).sum();
}
double Sum2(const Field3D& a_i, bool, StreamT st, bool) {
  return sumComponents(a_i, kern::RedSquare{}, st).sum();
}

Vec3Df SumComp(const Field3D& a_i, StreamT st) {
  return Vec3Df(sumComponents(a_i, kern::RedIdentity{}, st));
}

void Sum(Vec3Df& a_o, const Field3D& a_i, StreamT st) { a_o = SumComp(a_i, st); }

void Sum(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store(a_o, Sum(a_i, false, st), update);
}
void Sum(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store(a_o, Sum(a_i, false, st), update);
}
void Sum2(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store(a_o, Sum2(a_i, false, st), update);
}
void Sum2(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store(a_o, Sum2(a_i, false, st), update);
}

}  // namespace Opers
}  // namespace PyCA
