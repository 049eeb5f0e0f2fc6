// test_opers.cxx -- the first operators (Copy, SetMem, MulC, Add, Sum, Sum2)
// on images and fields, against references computed here voxel by voxel.
//
// Sizes are odd (17x19x23, and a 31x33x1 slice) so no loop can get away with
// assuming a multiple of a vector width or a block size. Elementwise results
// are compared exactly (each is one IEEE float operation); sums against a long
// double reference.
#define BOOST_TEST_MODULE PyCA opers
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"
#define CHECK_PYCA_THROW_OP(stmt, msg) CHECK_PYCA_THROW(stmt, PyCAException, msg)

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
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
#include "MemAlloc.h"
#include "MemPool.h"
#include "PyCAException.h"
#include "Reduction.h"

using namespace PyCA;
namespace utf = boost::unit_test;
namespace tt = boost::test_tools;

namespace {

const GridInfo kGrids[] = {
    GridInfo(Vec3Di(17, 19, 23), Vec3Df(0.5f, 1.f, 2.f), Vec3Df(-3.f, 1.f, 7.f)),
    GridInfo(Vec3Di(31, 33, 1)),
};

void randomize(Image3D& im, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im.set(i, r.next());
}

void randomize(Field3D& f, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < f.nVox(); ++i) {
    float a = r.next(), b = r.next(), c = r.next();
    f.set(i, Vec3Df(a, b, c));
  }
}

/// A mask with zeros, ones and other non-zero values (only != 0 matters).
void makeMask(Image3D& m) {
  for (size_t i = 0; i < m.nVox(); ++i) {
    float v = 0.f;
    switch (i % 5) {
      case 1: v = 1.f; break;
      case 3: v = -0.5f; break;
      case 4: v = 1e-30f; break;
      default: v = 0.f;
    }
    m.set(i, v);
  }
}

std::vector<float> values(const Image3D& im) { return std::vector<float>(im.get(), im.get() + im.nVox()); }

// Counts voxels where got != want (exact), reporting the first few.
template <class F>
size_t mismatches(const Image3D& got, F want) {
  size_t bad = 0;
  for (size_t i = 0; i < got.nVox(); ++i) {
    float w = want(i);
    if (got.get(i) != w) {
      if (bad < 3) BOOST_TEST_MESSAGE("voxel " << i << ": got " << got.get(i) << ", want " << w);
      ++bad;
    }
  }
  return bad;
}

template <class F>
size_t mismatches(const Field3D& got, F want) {
  size_t bad = 0;
  for (size_t i = 0; i < got.nVox(); ++i) {
    Vec3Df w = want(i);
    if (got.get(i) != w) {
      if (bad < 3) BOOST_TEST_MESSAGE("voxel " << i << ": got " << got.get(i) << ", want " << w);
      ++bad;
    }
  }
  return bad;
}

long double refSum(const Image3D& im, bool squares = false) {
  long double s = 0;
  for (size_t i = 0; i < im.nVox(); ++i) {
    long double v = im.get(i);
    s += squares ? v * v : v;
  }
  return s;
}

long double refSum(const Field3D& f, int d, bool squares = false) {
  const float* p = f.getComponent(d);
  long double s = 0;
  for (size_t i = 0; i < f.nVox(); ++i) {
    long double v = p[i];
    s += squares ? v * v : v;
  }
  return s;
}

bool closeRel(long double got, long double want, long double rel) {
  long double scale = std::fabs(want) > 1 ? std::fabs(want) : 1;
  return std::fabs(got - want) <= rel * scale;
}

/// Grids that must be refused against g: other size, spacing or origin.
std::vector<GridInfo> otherGrids(const GridInfo& g) {
  std::vector<GridInfo> v;
  GridInfo s = g;
  s.size().x += 1;
  v.push_back(s);
  GridInfo t(Vec3Di(g.size().y, g.size().x, g.size().z), g.spacing(), g.origin());  // same nVox
  v.push_back(t);
  GridInfo sp = g;
  sp.spacing().y += 1e-5f;
  v.push_back(sp);
  GridInfo org = g;
  org.origin().z += 1e-5f;
  v.push_back(org);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- Copy ----

BOOST_AUTO_TEST_CASE(copy_image_field_masked_component) {
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D a(g), o(g), mask(g);
      randomize(a, 1);
      randomize(o, 2);
      makeMask(mask);
      const std::vector<float> before = values(o);

      Opers::Copy(o, a, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? a.get(i) : before[i]; }) == 0u);
      Opers::Copy(o, a);
      BOOST_TEST(mismatches(o, [&](size_t i) { return a.get(i); }) == 0u);

      Field3D f(g), fo(g);
      randomize(f, 3);
      randomize(fo, 4);
      Opers::Copy(fo, f);
      BOOST_TEST(mismatches(fo, [&](size_t i) { return f.get(i); }) == 0u);

      // Image <- field component, field component <- image.
      for (int d = 0; d < 3; ++d) {
        Opers::Copy(o, f, d);
        BOOST_TEST(mismatches(o, [&](size_t i) { return f.get(i)[d]; }) == 0u);
      }
      Field3D target(g);
      randomize(target, 5);
      Field3D keep(g);
      Opers::Copy(keep, target);
      Opers::Copy(target, a, 1);
      BOOST_TEST(mismatches(target, [&](size_t i) {
                   Vec3Df v = keep.get(i);
                   v.y = a.get(i);
                   return v;
                 }) == 0u);

      BOOST_CHECK_THROW(Opers::Copy(o, f, 3), PyCAException);
      BOOST_CHECK_THROW(Opers::Copy(target, a, -1), PyCAException);

      for (const GridInfo& h : otherGrids(g)) {
        Image3D b(h);
        Field3D fb(h);
        CHECK_PYCA_THROW_OP(Opers::Copy(o, b), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Copy(o, a, b), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Copy(fo, fb), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Copy(b, f, 0), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Copy(fb, a, 2), "Input grids are not equal");
      }
    }
  }
}

// -------------------------------------------------------------- SetMem ----

BOOST_AUTO_TEST_CASE(set_mem) {
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D o(g), mask(g);
      randomize(o, 10);
      makeMask(mask);
      const std::vector<float> before = values(o);
      Opers::SetMem(o, 2.5f, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? 2.5f : before[i]; }) == 0u);
      Opers::SetMem(o, -1.25f);
      BOOST_TEST(mismatches(o, [](size_t) { return -1.25f; }) == 0u);

      Field3D f(g);
      randomize(f, 11);
      Opers::SetMem(f, 3.f);
      BOOST_TEST(mismatches(f, [](size_t) { return Vec3Df(3.f, 3.f, 3.f); }) == 0u);
      Opers::SetMem(f, Vec3Df(1.f, -2.f, 0.5f));
      BOOST_TEST(mismatches(f, [](size_t) { return Vec3Df(1.f, -2.f, 0.5f); }) == 0u);

      randomize(f, 12);
      Field3D keep(g);
      Opers::Copy(keep, f);
      Opers::SetMem(f, Vec3Df(7.f, 8.f, 9.f), mask);
      BOOST_TEST(mismatches(f, [&](size_t i) {
                   return mask.get(i) != 0.f ? Vec3Df(7.f, 8.f, 9.f) : keep.get(i);
                 }) == 0u);
      Opers::Copy(keep, f);
      Opers::SetMem(f, -4.f, mask);
      BOOST_TEST(mismatches(f, [&](size_t i) {
                   return mask.get(i) != 0.f ? Vec3Df(-4.f, -4.f, -4.f) : keep.get(i);
                 }) == 0u);

      for (const GridInfo& h : otherGrids(g)) {
        Image3D m2(h);
        CHECK_PYCA_THROW_OP(Opers::SetMem(o, 1.f, m2), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::SetMem(f, 1.f, m2), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::SetMem(f, Vec3Df(1.f, 1.f, 1.f), m2), "Input grids are not equal");
      }
    }
  }
}

// ---------------------------------------------------------------- MulC ----

BOOST_AUTO_TEST_CASE(mul_c) {
  const float c = 1.7f;
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D a(g), o(g), mask(g);
      randomize(a, 20);
      randomize(o, 21);
      makeMask(mask);

      Opers::MulC(o, a, c);
      BOOST_TEST(mismatches(o, [&](size_t i) { return a.get(i) * c; }) == 0u);

      randomize(o, 22);
      std::vector<float> before = values(o);
      Opers::MulC(o, a, c, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? a.get(i) * c : before[i]; }) == 0u);

      before = values(a);
      Opers::MulC_I(a, c);
      BOOST_TEST(mismatches(a, [&](size_t i) { return before[i] * c; }) == 0u);
      before = values(a);
      Opers::MulC_I(a, -0.5f, mask);
      BOOST_TEST(mismatches(a, [&](size_t i) { return mask.get(i) != 0.f ? before[i] * -0.5f : before[i]; }) == 0u);

      Field3D f(g), fo(g), keep(g);
      randomize(f, 23);
      Opers::MulC(fo, f, c);
      BOOST_TEST(mismatches(fo, [&](size_t i) { return f.get(i) * c; }) == 0u);
      const Vec3Df cv(2.f, -3.f, 0.25f);
      Opers::MulC(fo, f, cv);
      BOOST_TEST(mismatches(fo, [&](size_t i) { return f.get(i) * cv; }) == 0u);
      Opers::Copy(keep, f);
      Opers::MulC_I(f, c);
      BOOST_TEST(mismatches(f, [&](size_t i) { return keep.get(i) * c; }) == 0u);
      Opers::Copy(keep, f);
      Opers::MulC_I(f, cv);
      BOOST_TEST(mismatches(f, [&](size_t i) { return keep.get(i) * cv; }) == 0u);

      for (const GridInfo& h : otherGrids(g)) {
        Image3D b(h);
        Field3D fb(h);
        CHECK_PYCA_THROW_OP(Opers::MulC(o, b, c), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::MulC(o, a, c, b), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::MulC_I(o, c, b), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::MulC(fo, fb, c), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::MulC(fo, fb, cv), "Input grids are not equal");
      }
    }
  }
}

// ----------------------------------------------------------------- Add ----

BOOST_AUTO_TEST_CASE(add) {
  const float c = -0.375f;
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D a(g), b(g), o(g), mask(g);
      randomize(a, 30);
      randomize(b, 31);
      randomize(o, 32);
      makeMask(mask);

      Opers::Add(o, a, b);
      BOOST_TEST(mismatches(o, [&](size_t i) { return a.get(i) + b.get(i); }) == 0u);

      randomize(o, 33);
      std::vector<float> before = values(o);
      Opers::Add(o, a, b, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? a.get(i) + b.get(i) : before[i]; }) == 0u);

      Opers::Add(o, a, c);
      BOOST_TEST(mismatches(o, [&](size_t i) { return a.get(i) + c; }) == 0u);
      randomize(o, 34);
      before = values(o);
      Opers::Add(o, a, c, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? a.get(i) + c : before[i]; }) == 0u);

      before = values(o);
      Opers::Add_I(o, a);
      BOOST_TEST(mismatches(o, [&](size_t i) { return before[i] + a.get(i); }) == 0u);
      before = values(o);
      Opers::Add_I(o, b, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? before[i] + b.get(i) : before[i]; }) == 0u);
      before = values(o);
      Opers::Add_I(o, c);
      BOOST_TEST(mismatches(o, [&](size_t i) { return before[i] + c; }) == 0u);
      before = values(o);
      Opers::Add_I(o, 2.f, mask);
      BOOST_TEST(mismatches(o, [&](size_t i) { return mask.get(i) != 0.f ? before[i] + 2.f : before[i]; }) == 0u);

      // Fully aliased arguments.
      before = values(a);
      Opers::Add(a, a, a);
      BOOST_TEST(mismatches(a, [&](size_t i) { return before[i] + before[i]; }) == 0u);

      Field3D f(g), h(g), fo(g), keep(g);
      randomize(f, 35);
      randomize(h, 36);
      Opers::Add(fo, f, h);
      BOOST_TEST(mismatches(fo, [&](size_t i) { return f.get(i) + h.get(i); }) == 0u);
      Opers::Add(fo, f, b);  // image broadcast to every component
      BOOST_TEST(mismatches(fo, [&](size_t i) { return f.get(i) + Vec3Df(b.get(i), b.get(i), b.get(i)); }) == 0u);
      Opers::Copy(keep, f);
      Opers::Add_I(f, h);
      BOOST_TEST(mismatches(f, [&](size_t i) { return keep.get(i) + h.get(i); }) == 0u);
      Opers::Copy(keep, f);
      Opers::Add_I(f, b);
      BOOST_TEST(mismatches(f, [&](size_t i) { return keep.get(i) + Vec3Df(b.get(i), b.get(i), b.get(i)); }) == 0u);

      for (const GridInfo& other : otherGrids(g)) {
        Image3D x(other);
        Field3D fx(other);
        CHECK_PYCA_THROW_OP(Opers::Add(o, a, x), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add(o, x, a), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add(x, a, b), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add(o, a, b, x), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add(o, x, c), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add_I(o, x), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add_I(o, c, x), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add(fo, f, fx), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add(fo, f, x), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add_I(fo, fx), "Input grids are not equal");
        CHECK_PYCA_THROW_OP(Opers::Add_I(fo, x), "Input grids are not equal");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(grid_tolerance_accepted) {
  // Spacing/origin within 1e-6 count as the same grid.
  GridInfo g = kGrids[0];
  GridInfo near = g;
  near.spacing().x += 2e-7f;
  near.origin().y -= 5e-7f;
  Image3D a(g), b(near), o(g);
  randomize(a, 40);
  randomize(b, 41);
  BOOST_CHECK_NO_THROW(Opers::Add(o, a, b));
  BOOST_TEST(mismatches(o, [&](size_t i) { return a.get(i) + b.get(i); }) == 0u);
}

BOOST_AUTO_TEST_CASE(empty_images_are_noops) {
  Image3D a, b, o;
  BOOST_CHECK_NO_THROW(Opers::Add(o, a, b));
  BOOST_CHECK_NO_THROW(Opers::SetMem(o, 1.f));
  BOOST_CHECK_NO_THROW(Opers::Copy(o, a));
  BOOST_TEST(Opers::Sum(a) == 0.0);
  Field3D f;
  BOOST_TEST(Opers::Sum2(f) == 0.0);
}

// ----------------------------------------------------------------- Sum ----

BOOST_AUTO_TEST_CASE(sum_and_sum2) {
  const long double rel = 1e-12L;
  for (const GridInfo& g : kGrids) {
    BOOST_TEST_CONTEXT("grid " << g) {
      Image3D a(g);
      randomize(a, 50);
      Opers::Add_I(a, 0.25f);  // a non-zero mean, so relative errors mean something
      const long double s = refSum(a), s2 = refSum(a, true);
      BOOST_TEST(closeRel(Opers::Sum(a), s, rel));
      BOOST_TEST(closeRel(Opers::Sum2(a), s2, rel));
      // update is meaningless for the value-returning forms.
      BOOST_TEST(Opers::Sum(a, true) == Opers::Sum(a));

      // float& out-parameter: overwritten, or added to with update=true.
      float out = 123.f;
      Opers::Sum(out, a);
      BOOST_TEST(closeRel(out, s, 1e-6L));
      out = 10.5f;
      Opers::Sum(out, a, true);
      BOOST_TEST(closeRel(out, 10.5L + s, 1e-6L));
      out = -3.f;
      Opers::Sum2(out, a);
      BOOST_TEST(closeRel(out, s2, 1e-6L));
      out = 1000.f;
      Opers::Sum2(out, a, true);
      BOOST_TEST(closeRel(out, 1000.L + s2, 1e-6L));

      Field3D f(g);
      randomize(f, 51);
      Opers::Add_I(f, a);
      const long double fx = refSum(f, 0), fy = refSum(f, 1), fz = refSum(f, 2);
      const long double fx2 = refSum(f, 0, true), fy2 = refSum(f, 1, true), fz2 = refSum(f, 2, true);
      BOOST_TEST(closeRel(Opers::Sum(f), fx + fy + fz, rel));
      BOOST_TEST(closeRel(Opers::Sum2(f), fx2 + fy2 + fz2, rel));

      Vec3Df comp = Opers::SumComp(f);
      BOOST_TEST(closeRel(comp.x, fx, 1e-6L));
      BOOST_TEST(closeRel(comp.y, fy, 1e-6L));
      BOOST_TEST(closeRel(comp.z, fz, 1e-6L));
      Vec3Df viaRef(0.f, 0.f, 0.f);
      Opers::Sum(viaRef, f);
      BOOST_TEST((viaRef == comp));

      out = 0.f;
      Opers::Sum(out, f);
      BOOST_TEST(closeRel(out, fx + fy + fz, 1e-6L));
      out = 2.f;
      Opers::Sum(out, f, true);
      BOOST_TEST(closeRel(out, 2.L + fx + fy + fz, 1e-6L));
      out = 0.f;
      Opers::Sum2(out, f);
      BOOST_TEST(closeRel(out, fx2 + fy2 + fz2, 1e-6L));
      out = 5.f;
      Opers::Sum2(out, f, true);
      BOOST_TEST(closeRel(out, 5.L + fx2 + fy2 + fz2, 1e-6L));

      // Deterministic: the same input gives the same bits.
      BOOST_TEST(Opers::Sum(a) == Opers::Sum(a));
      BOOST_TEST(Opers::Sum2(f) == Opers::Sum2(f));
    }
  }
}

BOOST_AUTO_TEST_CASE(large_sum_accumulates_in_double) {
  // 256^3 values near 0.1: a float accumulator is off in the third digit.
  const GridInfo g(Vec3Di(256, 256, 256));
  Image3D im(g);
  float* p = im.get();
  const size_t n = im.nVox();
  for (size_t i = 0; i < n; ++i) p[i] = 0.1f + 1e-4f * float(i % 1009) - 5e-5f * float(i % 7);
  long double ref = 0, ref2 = 0;
  float naive = 0.f;
  for (size_t i = 0; i < n; ++i) {
    ref += p[i];
    ref2 += (long double)p[i] * p[i];
    naive += p[i];
  }
  const double s = Opers::Sum(im);
  const double s2 = Opers::Sum2(im);
  BOOST_TEST_MESSAGE("256^3 sum: PyCA " << s << ", long double " << (double)ref
                                        << ", sequential float " << naive);
  BOOST_TEST(std::fabs((long double)s - ref) <= 1e-9L * ref);
  BOOST_TEST(std::fabs((long double)s2 - ref2) <= 1e-9L * ref2);

  float out = 0.f;
  Opers::Sum(out, im);
  BOOST_TEST(out == float(s));
  BOOST_TEST(std::fabs((long double)out - ref) <= 1e-7L * ref);

  // A field of three such components.
  Field3D f(g);
  for (int d = 0; d < 3; ++d) Opers::Copy(f, im, d);
  Opers::MulC_I(f, Vec3Df(1.f, 2.f, 4.f));  // exact scalings
  const double fs = Opers::Sum(f);
  BOOST_TEST(std::fabs((long double)fs - 7 * ref) <= 1e-9L * 7 * ref);
  const Vec3Df comp = Opers::SumComp(f);
  BOOST_TEST(std::fabs((long double)comp.z - 4 * ref) <= 1e-7L * 4 * ref);
}

BOOST_AUTO_TEST_CASE(sum_inside_parallel_region) {
  // A reduction called from inside an OpenMP parallel region gets a team of
  // one thread, whatever it asks for; it must still cover every voxel.
  const GridInfo g(Vec3Di(65, 33, 31));  // above the CPU back end's threading threshold
  Image3D im(g);
  randomize(im, 70);
  Opers::Add_I(im, 1.f);
  Field3D f(g);
  randomize(f, 71);
  const long double ref = refSum(im), ref2 = refSum(im, true);
  const long double fref = refSum(f, 0) + refSum(f, 1) + refSum(f, 2);
  double got[2] = {0, 0}, got2[2] = {0, 0}, fgot[2] = {0, 0};
#ifdef _OPENMP
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    omp_set_num_threads(4);  // what the nested region will ask for
    got[t] = Opers::Sum(im);
    got2[t] = Opers::Sum2(im);
    fgot[t] = Opers::Sum(f);
  }
#endif
  const int nRun = 2;
  for (int t = 0; t < nRun; ++t) {
    if (got[t] == 0 && fgot[t] == 0) continue;  // this thread did not run (team of one)
    BOOST_TEST(closeRel(got[t], ref, 1e-12L));
    BOOST_TEST(closeRel(got2[t], ref2, 1e-12L));
    BOOST_TEST(closeRel(fgot[t], fref, 1e-12L));
  }
  BOOST_TEST(closeRel(Opers::Sum(im), ref, 1e-12L));
}

// --------------------------------------------------------- memory types ----

BOOST_AUTO_TEST_CASE(mismatched_memory_types, *utf::precondition(GpuAvailable())) {
  const GridInfo& g = kGrids[0];
  Image3D h(g, MEM_HOST), h2(g, MEM_HOST), d(g, MEM_DEVICE), mask(g, MEM_HOST);
  Field3D fh(g, MEM_HOST), fd(g, MEM_DEVICE);
  randomize(h, 60);
  makeMask(mask);
  CHECK_PYCA_THROW_OP(Opers::Add(h2, h, d), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Add(d, h, h2), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Add_I(d, h), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::MulC(d, h, 2.f), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::SetMem(d, 2.f, mask), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Copy(d, h, mask), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Add(fd, fh, fh), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Add(fh, fh, d), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::MulC(fd, fh, 2.f), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Copy(fd, h, 0), "memory types are not compatible");

  // Plain copies cross memory types; the GPU arithmetic matches the CPU's.
  Opers::Copy(d, h);
  Image3D d2(g, MEM_DEVICE), back(g, MEM_HOST);
  Opers::MulC(d2, d, 1.7f);
  Opers::Add_I(d2, d);
  Opers::Copy(back, d2);
  BOOST_TEST(mismatches(back, [&](size_t i) { return h.get(i) * 1.7f + h.get(i); }) == 0u);
  BOOST_TEST(closeRel(Opers::Sum(d), refSum(h), 1e-12L));
  BOOST_TEST(closeRel(Opers::Sum2(d), refSum(h, true), 1e-12L));
}

BOOST_AUTO_TEST_CASE(memory_type_checked_after_grid) {
  // Without a GPU a device image cannot be allocated, but a MemPool can claim
  // to be device memory without a buffer. The checks must refuse the call
  // before touching any data: grids first, then memory types.
  const GridInfo& g = kGrids[1];
  MemPool<float> fakeDev(std::shared_ptr<float>(), g.nVox(), MEM_DEVICE);
  Image3D d(g, fakeDev), h(g), o(g);
  BOOST_TEST(d.memType() == MEM_DEVICE);
  CHECK_PYCA_THROW_OP(Opers::Add(o, h, d), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Add_I(o, d), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::MulC(o, d, 2.f), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::Copy(o, h, d), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::SetMem(o, 1.f, d), "memory types are not compatible");
  Field3D fo(g);
  CHECK_PYCA_THROW_OP(Opers::Add(fo, fo, d), "memory types are not compatible");
  CHECK_PYCA_THROW_OP(Opers::SetMem(fo, 1.f, d), "memory types are not compatible");
  Image3D other(GridInfo(Vec3Di(3, 3, 3)));
  CHECK_PYCA_THROW_OP(Opers::Add(other, h, d), "Input grids are not equal");
}
