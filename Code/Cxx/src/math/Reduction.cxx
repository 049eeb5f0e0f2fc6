// Reductions: argument checks, then one double-accumulating reduction per
// array (a field reduces its three components and combines the results in
// x, y, z order). The map functors are in PointwiseKernels.h, the combiners
// and the launchers in Reduce.h.
#include "Reduction.h"

#include <string>

#include "PointwiseKernels.h"
#include "Reduce.h"

namespace PyCA {
namespace Opers {

using detail::DRange;
using detail::MaxComb;
using detail::MinComb;
using detail::MinMaxComb;
using detail::RedArgs;
using detail::SumComb;

namespace {

template <class Comb, class Map>
typename Comb::T reduceImage(const Image3D& a, const Map& m, StreamT st) {
  return detail::reduce(a.memType(), m, Comb{}, RedArgs<1>{{detail::dataOf(a)}, a.nVox()}, st);
}
template <class Comb, class Map>
typename Comb::T reduceComponent(const Field3D& a, int d, const Map& m, StreamT st) {
  return detail::reduce(a.memType(), m, Comb{}, RedArgs<1>{{detail::dataOf(a, d)}, a.nVox()}, st);
}
/// All three components, combined in x, y, z order.
template <class Comb, class Map>
typename Comb::T reduceField(const Field3D& a, const Map& m, StreamT st) {
  const Comb comb;
  typename Comb::T r = reduceComponent<Comb>(a, 0, m, st);
  for (int d = 1; d < 3; ++d) r = comb(r, reduceComponent<Comb>(a, d, m, st));
  return r;
}

/// Max, Min and MinMax of no voxels have no value.
template <class T>
void requireVoxels(const T& a, const char* op) {
  if (a.nVox() == 0)
    throw PyCAValueException(__FILE__, __LINE__, std::string(op) + " of an empty image or field (no voxels)");
}

// Legacy out-parameter forms: a_o = r, or a_o = comb(prior, r) with update.
template <class Comb>
void store(float& a_o, double r, bool update) {
  a_o = float(update ? Comb()(double(a_o), r) : r);
}

}  // namespace

// ---- sums ------------------------------------------------------------------------

double Sum(const Image3D& a_i, bool, StreamT st, bool) {
  return reduceImage<SumComb>(a_i, kern::RedIdentity{}, st);
}
double Sum(const Field3D& a_i, bool, StreamT st, bool) {
  return reduceField<SumComb>(a_i, kern::RedIdentity{}, st);
}
double Sum2(const Image3D& a_i, bool, StreamT st, bool) {
  return reduceImage<SumComb>(a_i, kern::RedSquare{}, st);
}
double Sum2(const Field3D& a_i, bool, StreamT st, bool) {
  return reduceField<SumComb>(a_i, kern::RedSquare{}, st);
}
double L1(const Image3D& a_i, bool, StreamT st, bool) {
  return reduceImage<SumComb>(a_i, kern::RedAbs{}, st);
}
double L1(const Field3D& a_i, bool, StreamT st, bool) {
  return reduceField<SumComb>(a_i, kern::RedAbs{}, st);
}

double Dot(const Image3D& a_i, const Image3D& a_i1, bool, StreamT st, bool) {
  MK_CHECK2_ALL(a_i, a_i1);
  return detail::reduce(a_i.memType(), kern::RedProduct{}, SumComb{},
                        RedArgs<2>{{detail::dataOf(a_i), detail::dataOf(a_i1)}, a_i.nVox()}, st);
}
double Dot(const Field3D& a_i, const Field3D& a_i1, bool, StreamT st, bool) {
  MK_CHECK2_ALL(a_i, a_i1);
  double r = 0;
  for (int d = 0; d < 3; ++d)
    r += detail::reduce(a_i.memType(), kern::RedProduct{}, SumComb{},
                        RedArgs<2>{{detail::dataOf(a_i, d), detail::dataOf(a_i1, d)}, a_i.nVox()}, st);
  return r;
}

Vec3Df SumComp(const Field3D& a_i, StreamT st) {
  Vec3Dd r;
  for (int d = 0; d < 3; ++d) r[d] = reduceComponent<SumComb>(a_i, d, kern::RedIdentity{}, st);
  return Vec3Df(r);
}

void Sum(Vec3Df& a_o, const Field3D& a_i, StreamT st) { a_o = SumComp(a_i, st); }

// ---- extrema -------------------------------------------------------------------

double LInf(const Image3D& a_i, bool, StreamT st, bool) {
  return a_i.nVox() == 0 ? 0.0 : reduceImage<MaxComb>(a_i, kern::RedAbs{}, st);
}
double LInf(const Field3D& a_i, bool, StreamT st, bool) {
  return a_i.nVox() == 0 ? 0.0 : reduceField<MaxComb>(a_i, kern::RedAbs{}, st);
}
double Max(const Image3D& a_i, bool, StreamT st, bool) {
  requireVoxels(a_i, "Max");
  return reduceImage<MaxComb>(a_i, kern::RedIdentity{}, st);
}
double Max(const Field3D& a_i, bool, StreamT st, bool) {
  requireVoxels(a_i, "Max");
  return reduceField<MaxComb>(a_i, kern::RedIdentity{}, st);
}
double Min(const Image3D& a_i, bool, StreamT st, bool) {
  requireVoxels(a_i, "Min");
  return reduceImage<MinComb>(a_i, kern::RedIdentity{}, st);
}
double Min(const Field3D& a_i, bool, StreamT st, bool) {
  requireVoxels(a_i, "Min");
  return reduceField<MinComb>(a_i, kern::RedIdentity{}, st);
}

// The terms are floats converted to double, so lo and hi convert back exactly.
std::pair<float, float> MinMax(const Image3D& a_i, bool, StreamT st, bool) {
  requireVoxels(a_i, "MinMax");
  const DRange r = reduceImage<MinMaxComb>(a_i, kern::RedIdentity{}, st);
  return {float(r.lo), float(r.hi)};
}
std::pair<float, float> MinMax(const Field3D& a_i, bool, StreamT st, bool) {
  requireVoxels(a_i, "MinMax");
  const DRange r = reduceField<MinMaxComb>(a_i, kern::RedIdentity{}, st);
  return {float(r.lo), float(r.hi)};
}

// ---- legacy out-parameter forms ------------------------------------------------

void Sum(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store<SumComb>(a_o, Sum(a_i, false, st), update);
}
void Sum(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store<SumComb>(a_o, Sum(a_i, false, st), update);
}
void Sum2(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store<SumComb>(a_o, Sum2(a_i, false, st), update);
}
void Sum2(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store<SumComb>(a_o, Sum2(a_i, false, st), update);
}
void L1(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store<SumComb>(a_o, L1(a_i, false, st), update);
}
void L1(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store<SumComb>(a_o, L1(a_i, false, st), update);
}
void LInf(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store<MaxComb>(a_o, LInf(a_i, false, st), update);
}
void LInf(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store<MaxComb>(a_o, LInf(a_i, false, st), update);
}
void Max(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store<MaxComb>(a_o, Max(a_i, false, st), update);
}
void Max(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store<MaxComb>(a_o, Max(a_i, false, st), update);
}
void Min(float& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  store<MinComb>(a_o, Min(a_i, false, st), update);
}
void Min(float& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  store<MinComb>(a_o, Min(a_i, false, st), update);
}
void Dot(float& a_o, const Image3D& a_i, const Image3D& a_i1, bool update, StreamT st, bool) {
  store<SumComb>(a_o, Dot(a_i, a_i1, false, st), update);
}
void Dot(float& a_o, const Field3D& a_i, const Field3D& a_i1, bool update, StreamT st, bool) {
  store<SumComb>(a_o, Dot(a_i, a_i1, false, st), update);
}

void MaxMin(Vec2Df& a_o, const Image3D& a_i, bool update, StreamT st, bool) {
  const std::pair<float, float> r = MinMax(a_i, false, st);
  store<MaxComb>(a_o.x, r.second, update);
  store<MinComb>(a_o.y, r.first, update);
}
void MaxMin(Vec2Df& a_o, const Field3D& a_i, bool update, StreamT st, bool) {
  const std::pair<float, float> r = MinMax(a_i, false, st);
  store<MaxComb>(a_o.x, r.second, update);
  store<MinComb>(a_o.y, r.first, update);
}

}  // namespace Opers
}  // namespace PyCA
