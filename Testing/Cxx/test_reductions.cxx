// test_reductions.cxx -- the C++ reduction API (Reduction.h): value-returning
// forms, the legacy out-parameter forms with and without update, MinMax,
// argument checks, NaN, empty images, determinism, and CPU/GPU parity.
//
// References are computed here voxel by voxel in long double; extrema are
// compared exactly. Grids are odd (17x19x23 anisotropic, 31x33x1).
#define BOOST_TEST_MODULE PyCA reductions
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "CudaUtils.h"
#include "FOpers.h"
#include "Field3D.h"
#include "GridInfo.h"
#include "IOpers.h"
#include "Image3D.h"
#include "PyCAException.h"
#include "Reduction.h"

using namespace PyCA;
namespace utf = boost::unit_test;
namespace tt = boost::test_tools;

namespace {

const GridInfo kGrids[] = {
    GridInfo(Vec3Di(17, 19, 23), Vec3Df(0.5f, 1.f, 2.f), Vec3Df(-3.f, 1.f, 7.f)),
    GridInfo(Vec3Di(31, 33, 1), Vec3Df(1.25f, 0.8f, 1.f), Vec3Df(0.f, 0.f, 0.f)),
};

void randomize(float* p, size_t n, uint32_t seed, float lo, float hi) {
  Rng r(seed);
  for (size_t i = 0; i < n; ++i) p[i] = r.next(lo, hi);
}
void randomize(Image3D& im, uint32_t seed, float lo = -2.f, float hi = 3.f) {
  randomize(im.get(), im.nVox(), seed, lo, hi);
}
void randomize(Field3D& f, uint32_t seed, float lo = -4.f, float hi = 2.f) {
  for (int d = 0; d < 3; ++d) randomize(f.getComponent(d), f.nVox(), seed + 97u * uint32_t(d), lo, hi);
}

/// Reference reductions over a list of arrays.
struct Ref {
  long double sum = 0, sum2 = 0, l1 = 0, absSum = 0;
  float mx = -std::numeric_limits<float>::infinity();
  float mn = std::numeric_limits<float>::infinity();
  float linf = 0;
  void add(const float* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const long double v = p[i];
      sum += v;
      sum2 += v * v;
      l1 += std::fabs(v);
      mx = std::max(mx, p[i]);
      mn = std::min(mn, p[i]);
      linf = std::max(linf, std::fabs(p[i]));
    }
  }
};
Ref ref(const Image3D& im) {
  Ref r;
  r.add(im.get(), im.nVox());
  return r;
}
Ref ref(const Field3D& f) {
  Ref r;
  for (int d = 0; d < 3; ++d) r.add(f.getComponent(d), f.nVox());
  return r;
}
long double refDot(const float* a, const float* b, size_t n) {
  long double s = 0;
  for (size_t i = 0; i < n; ++i) s += (long double)a[i] * b[i];
  return s;
}

bool closeRel(long double got, long double want, long double rel) {
  long double scale = std::fabs(want) > 1 ? std::fabs(want) : 1;
  return std::fabs(got - want) <= rel * scale;
}

}  // namespace

// ------------------------------------------------------- value forms ----

BOOST_AUTO_TEST_CASE(image_value_forms) {
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D a(g), b(g);
      randomize(a, 1);
      randomize(b, 2, -1.f, 1.f);
      const Ref r = ref(a);
      BOOST_TEST(closeRel(Opers::Sum(a), r.sum, 1e-12L));
      BOOST_TEST(closeRel(Opers::Sum2(a), r.sum2, 1e-12L));
      BOOST_TEST(closeRel(Opers::L1(a), r.l1, 1e-12L));
      BOOST_TEST(Opers::Max(a) == double(r.mx));
      BOOST_TEST(Opers::Min(a) == double(r.mn));
      BOOST_TEST(Opers::LInf(a) == double(r.linf));
      const std::pair<float, float> mm = Opers::MinMax(a);
      BOOST_TEST(mm.first == r.mn);
      BOOST_TEST(mm.second == r.mx);
      BOOST_TEST(closeRel(Opers::Dot(a, b), refDot(a.get(), b.get(), a.nVox()), 1e-12L));
      // trailing arguments: update (no prior value here), stream, onDev
      BOOST_TEST(Opers::Max(a, true, nullptr, true) == Opers::Max(a));
      BOOST_TEST(Opers::L1(a, true) == Opers::L1(a));
      BOOST_TEST(Opers::Dot(a, b, true, nullptr, false) == Opers::Dot(a, b));
      BOOST_TEST((Opers::MinMax(a, true, nullptr, true) == mm));
    }
  }
}

BOOST_AUTO_TEST_CASE(field_value_forms_cover_all_components) {
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Field3D f(g), h(g);
      randomize(f, 3);
      randomize(h, 4, -1.f, 1.f);
      // put the extrema in the y and z components
      f.getComponent(1)[f.nVox() / 2] = 9.5f;
      f.getComponent(2)[f.nVox() - 1] = -11.25f;
      const Ref r = ref(f);
      BOOST_TEST(closeRel(Opers::Sum(f), r.sum, 1e-12L));
      BOOST_TEST(closeRel(Opers::Sum2(f), r.sum2, 1e-12L));
      BOOST_TEST(closeRel(Opers::L1(f), r.l1, 1e-12L));
      BOOST_TEST(Opers::Max(f) == 9.5);
      BOOST_TEST(Opers::Min(f) == -11.25);
      BOOST_TEST(Opers::LInf(f) == 11.25);
      BOOST_TEST((Opers::MinMax(f) == std::make_pair(-11.25f, 9.5f)));
      long double dot = 0;
      for (int d = 0; d < 3; ++d) dot += refDot(f.getComponent(d), h.getComponent(d), f.nVox());
      BOOST_TEST(closeRel(Opers::Dot(f, h), dot, 1e-12L));
      const Vec3Df comp = Opers::SumComp(f);
      Vec3Df viaRef;
      Opers::Sum(viaRef, f);
      BOOST_TEST((viaRef == comp));
      Ref rx;
      rx.add(f.getComponent(0), f.nVox());
      BOOST_TEST(closeRel(comp.x, rx.sum, 1e-6L));
    }
  }
}

// ------------------------------------------- legacy out-parameter forms ----

BOOST_AUTO_TEST_CASE(out_parameter_forms_and_update) {
  const GridInfo& g = kGrids[0];
  Image3D a(g), b(g);
  randomize(a, 5, -0.5f, 1.5f);  // max 1.5-ish, min -0.5-ish
  randomize(b, 6, -1.f, 1.f);
  const Ref r = ref(a);
  const long double dot = refDot(a.get(), b.get(), a.nVox());
  float out = 123.f;

  // without update: overwritten
  Opers::Sum(out, a);
  BOOST_TEST(closeRel(out, r.sum, 1e-6L));
  Opers::Sum2(out, a);
  BOOST_TEST(closeRel(out, r.sum2, 1e-6L));
  Opers::L1(out, a);
  BOOST_TEST(closeRel(out, r.l1, 1e-6L));
  Opers::Dot(out, a, b);
  BOOST_TEST(closeRel(out, dot, 1e-6L));
  out = 100.f;
  Opers::Max(out, a);
  BOOST_TEST(out == r.mx);
  out = -100.f;
  Opers::Min(out, a);
  BOOST_TEST(out == r.mn);
  out = 100.f;
  Opers::LInf(out, a);
  BOOST_TEST(out == r.linf);

  // with update: sums add to the prior value ...
  out = 10.f;
  Opers::Sum(out, a, true);
  BOOST_TEST(closeRel(out, 10.L + r.sum, 1e-6L));
  out = 10.f;
  Opers::Sum2(out, a, true, nullptr, false);
  BOOST_TEST(closeRel(out, 10.L + r.sum2, 1e-6L));
  out = -1.f;
  Opers::L1(out, a, true);
  BOOST_TEST(closeRel(out, -1.L + r.l1, 1e-6L));
  out = 2.f;
  Opers::Dot(out, a, b, true);
  BOOST_TEST(closeRel(out, 2.L + dot, 1e-6L));
  // ... Max and LInf keep the larger, Min the smaller
  out = 5.f;
  Opers::Max(out, a, true);
  BOOST_TEST(out == 5.f);
  out = -5.f;
  Opers::Max(out, a, true);
  BOOST_TEST(out == r.mx);
  out = -5.f;
  Opers::Min(out, a, true);
  BOOST_TEST(out == -5.f);
  out = 5.f;
  Opers::Min(out, a, true, nullptr, true);
  BOOST_TEST(out == r.mn);
  out = 7.f;
  Opers::LInf(out, a, true);
  BOOST_TEST(out == 7.f);
  out = 0.f;
  Opers::LInf(out, a, true);
  BOOST_TEST(out == r.linf);

  // fields
  Field3D f(g), h(g);
  randomize(f, 7);
  randomize(h, 8);
  const Ref rf = ref(f);
  out = 1.f;
  Opers::Sum(out, f, true);
  BOOST_TEST(closeRel(out, 1.L + rf.sum, 1e-6L));
  Opers::Sum2(out, f);
  BOOST_TEST(closeRel(out, rf.sum2, 1e-6L));
  Opers::L1(out, f);
  BOOST_TEST(closeRel(out, rf.l1, 1e-6L));
  Opers::Max(out, f);
  BOOST_TEST(out == rf.mx);
  Opers::Min(out, f);
  BOOST_TEST(out == rf.mn);
  Opers::LInf(out, f);
  BOOST_TEST(out == rf.linf);
  out = 1e6f;
  Opers::Max(out, f, true);
  BOOST_TEST(out == 1e6f);
  out = 1e6f;
  Opers::Min(out, f, true);
  BOOST_TEST(out == rf.mn);
  out = 1e6f;
  Opers::LInf(out, f, true);
  BOOST_TEST(out == 1e6f);
  long double fdot = 0;
  for (int d = 0; d < 3; ++d) fdot += refDot(f.getComponent(d), h.getComponent(d), f.nVox());
  out = 3.f;
  Opers::Dot(out, f, h, true);
  BOOST_TEST(closeRel(out, 3.L + fdot, 1e-6L));
}

// ------------------------------------------------------------- checks ----

BOOST_AUTO_TEST_CASE(dot_checks_grids_and_memory_types) {
  const GridInfo& g = kGrids[0];
  Image3D a(g);
  randomize(a, 9);
  GridInfo other = g;
  other.size().x += 1;
  GridInfo sp = g;
  sp.spacing().z += 1e-3f;
  for (const GridInfo& bad : {other, sp}) {
    Image3D b(bad);
    randomize(b, 10);
    CHECK_PYCA_THROW(Opers::Dot(a, b), PyCAException, "Input grids are not equal");
    float out = 0.f;
    CHECK_PYCA_THROW(Opers::Dot(out, a, b), PyCAException, "Input grids are not equal");
    Field3D f(g), h(bad);
    CHECK_PYCA_THROW(Opers::Dot(f, h), PyCAException, "Input grids are not equal");
  }
  // empty containers need no allocation, so device-typed ones exist in any build
  Image3D hostEmpty(MEM_HOST), devEmpty(MEM_DEVICE);
  CHECK_PYCA_THROW(Opers::Dot(hostEmpty, devEmpty), PyCAException, "memory types are not compatible");
  Field3D fh(MEM_HOST), fd(MEM_DEVICE);
  CHECK_PYCA_THROW(Opers::Dot(fh, fd), PyCAException, "memory types are not compatible");
}

BOOST_AUTO_TEST_CASE(empty_and_single_voxel) {
  Image3D e;
  Field3D fe;
  BOOST_TEST(Opers::Sum(e) == 0.0);
  BOOST_TEST(Opers::Sum2(fe) == 0.0);
  BOOST_TEST(Opers::L1(e) == 0.0);
  BOOST_TEST(Opers::LInf(fe) == 0.0);
  BOOST_TEST(Opers::Dot(e, e) == 0.0);
  CHECK_PYCA_THROW(Opers::Max(e), PyCAValueException, "no voxels");
  CHECK_PYCA_THROW(Opers::Min(fe), PyCAValueException, "no voxels");
  CHECK_PYCA_THROW(Opers::MinMax(e), PyCAValueException, "no voxels");
  float out = 4.f;
  CHECK_PYCA_THROW(Opers::Max(out, e, true), PyCAValueException, "no voxels");
  BOOST_TEST(out == 4.f);
  Opers::Sum(out, e, true);
  BOOST_TEST(out == 4.f);

  Image3D one(GridInfo(Vec3Di(1, 1, 1)));
  one.set(0, -2.5f);
  BOOST_TEST(Opers::Sum(one) == -2.5);
  BOOST_TEST(Opers::Max(one) == -2.5);
  BOOST_TEST(Opers::LInf(one) == 2.5);
  BOOST_TEST((Opers::MinMax(one) == std::make_pair(-2.5f, -2.5f)));
}

BOOST_AUTO_TEST_CASE(nan_propagates_everywhere) {
  // sizes on both sides of the parallel threshold; NaN at the ends and inside
  for (int n : {37, 70001}) {
    for (int pos : {0, n / 3, n - 1}) {
      BOOST_TEST_CONTEXT("n " << n << " NaN at " << pos) {
        Image3D a(GridInfo(Vec3Di(n, 1, 1)));
        randomize(a, 11);
        a.set(size_t(pos), std::numeric_limits<float>::quiet_NaN());
        BOOST_TEST(std::isnan(Opers::Sum(a)));
        BOOST_TEST(std::isnan(Opers::L1(a)));
        BOOST_TEST(std::isnan(Opers::Max(a)));
        BOOST_TEST(std::isnan(Opers::Min(a)));
        BOOST_TEST(std::isnan(Opers::LInf(a)));
        const std::pair<float, float> mm = Opers::MinMax(a);
        BOOST_TEST(std::isnan(mm.first));
        BOOST_TEST(std::isnan(mm.second));
        float out = 1.f;
        Opers::Max(out, a, true);
        BOOST_TEST(std::isnan(out));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_tail_length_and_thread_split) {
  std::vector<int> sizes;
  for (int n = 1; n <= 80; ++n) sizes.push_back(n);
  for (int n : {32767, 32768, 32769, 65537, 100003}) sizes.push_back(n);
  for (int n : sizes) {
    BOOST_TEST_CONTEXT("n " << n) {
      Image3D a(GridInfo(Vec3Di(n, 1, 1)));
      randomize(a, uint32_t(n));
      const Ref r = ref(a);
      BOOST_TEST(closeRel(Opers::Sum(a), r.sum, 1e-12L));
      BOOST_TEST(closeRel(Opers::Sum2(a), r.sum2, 1e-12L));
      BOOST_TEST(Opers::Max(a) == double(r.mx));
      BOOST_TEST(Opers::Min(a) == double(r.mn));
      BOOST_TEST(Opers::LInf(a) == double(r.linf));
      BOOST_TEST((Opers::MinMax(a) == std::make_pair(r.mn, r.mx)));
    }
  }
}

BOOST_AUTO_TEST_CASE(deterministic_results) {
  Image3D a(GridInfo(Vec3Di(67, 61, 59)));
  randomize(a, 12, -1e3f, 1e3f);
  const double s = Opers::Sum(a), s2 = Opers::Sum2(a), d = Opers::Dot(a, a), l1 = Opers::L1(a);
  for (int k = 0; k < 5; ++k) {
    BOOST_TEST(Opers::Sum(a) == s);
    BOOST_TEST(Opers::Sum2(a) == s2);
    BOOST_TEST(Opers::Dot(a, a) == d);
    BOOST_TEST(Opers::L1(a) == l1);
  }
  BOOST_TEST(d == s2);  // the same terms in the same order
}

BOOST_AUTO_TEST_CASE(results_do_not_depend_on_the_thread_count) {
  // The CPU back end reduces fixed chunks and combines them in chunk order.
  Image3D a(GridInfo(Vec3Di(101, 97, 13)));
  randomize(a, 17, -1e3f, 1e3f);
  Field3D f(GridInfo(Vec3Di(101, 97, 13)));
  randomize(f, 18);
  auto all = [&] {
    return std::vector<double>{Opers::Sum(a), Opers::Sum2(a), Opers::L1(a), Opers::Dot(a, a),
                               Opers::Max(a), Opers::Min(a), Opers::LInf(a), Opers::Sum(f),
                               Opers::Sum2(f), Opers::Dot(f, f), Opers::LInf(f)};
  };
  const std::vector<double> ref = all();
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  for (int nt : {1, 2, 3, 5}) {
    omp_set_num_threads(nt);
    const std::vector<double> got = all();
    BOOST_TEST_CONTEXT("threads " << nt) { BOOST_TEST(got == ref, tt::per_element()); }
  }
  omp_set_num_threads(saved);
#endif
}

// ------------------------------------------------------------- GPU ----

BOOST_AUTO_TEST_CASE(gpu_matches_cpu, *utf::precondition(GpuAvailable())) {
  for (const GridInfo& g : {kGrids[0], kGrids[1], GridInfo(Vec3Di(129, 67, 65))}) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D a(g), b(g), da(g, MEM_DEVICE), db(g, MEM_DEVICE);
      randomize(a, 13);
      randomize(b, 14, -1.f, 1.f);
      Opers::Copy(da, a);
      Opers::Copy(db, b);
      const Ref r = ref(a);
      const long double tol = 1e-12L * (r.sum2 + r.l1 + 1);
      BOOST_TEST(std::fabs(Opers::Sum(da) - Opers::Sum(a)) <= tol);
      BOOST_TEST(std::fabs(Opers::Sum2(da) - Opers::Sum2(a)) <= tol);
      BOOST_TEST(std::fabs(Opers::L1(da) - Opers::L1(a)) <= tol);
      BOOST_TEST(std::fabs(Opers::Dot(da, db) - Opers::Dot(a, b)) <= tol);
      BOOST_TEST(Opers::Max(da) == Opers::Max(a));
      BOOST_TEST(Opers::Min(da) == Opers::Min(a));
      BOOST_TEST(Opers::LInf(da) == Opers::LInf(a));
      BOOST_TEST((Opers::MinMax(da) == Opers::MinMax(a)));
      BOOST_TEST(Opers::Sum(da) == Opers::Sum(da));  // deterministic on the device too
      float out = 5.f;
      Opers::Max(out, da, true);
      BOOST_TEST(out == std::max(5.f, r.mx));
      CHECK_PYCA_THROW(Opers::Dot(a, db), PyCAException, "memory types are not compatible");

      Field3D f(g), df(g, MEM_DEVICE);
      randomize(f, 15);
      Opers::Copy(df, f);
      const Ref rf = ref(f);
      const long double ftol = 1e-12L * (rf.sum2 + rf.l1 + 1);
      BOOST_TEST(std::fabs(Opers::Sum(df) - Opers::Sum(f)) <= ftol);
      BOOST_TEST(std::fabs(Opers::Dot(df, df) - Opers::Dot(f, f)) <= ftol);
      BOOST_TEST(Opers::Max(df) == Opers::Max(f));
      BOOST_TEST(Opers::LInf(df) == Opers::LInf(f));
      BOOST_TEST((Opers::MinMax(df) == Opers::MinMax(f)));
    }
  }
}

BOOST_AUTO_TEST_CASE(gpu_nan, *utf::precondition(GpuAvailable())) {
  Image3D a(GridInfo(Vec3Di(1001, 3, 1))), da(a.grid(), MEM_DEVICE);
  randomize(a, 16);
  a.set(1500, std::numeric_limits<float>::quiet_NaN());
  Opers::Copy(da, a);
  BOOST_TEST(std::isnan(Opers::Sum(da)));
  BOOST_TEST(std::isnan(Opers::Max(da)));
  BOOST_TEST(std::isnan(Opers::Min(da)));
  BOOST_TEST(std::isnan(Opers::LInf(da)));
  BOOST_TEST(std::isnan(Opers::MinMax(da).first));
  BOOST_TEST(std::isnan(Opers::MinMax(da).second));
}
