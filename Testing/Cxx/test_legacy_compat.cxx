// test_legacy_compat.cxx -- small legacy value types and helpers: Vec2D,
// pycaUtils.h, pycaConst.h in its legacy folder, and Opers::MaxMin
// (Vec2D<float>: x = max, y = min, update combining with the prior value).
// References are computed here voxel by voxel.
#define BOOST_TEST_MODULE PyCA legacy compatibility
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "Field3D.h"
#include "Image3D.h"
#include "PyCAException.h"
#include "Reduction.h"
#include "Vec2D.h"
#include "pycaConst.h"
#include "pycaUtils.h"

using namespace PyCA;

// ---------------------------------------------------------------- Vec2D ----

BOOST_AUTO_TEST_SUITE(vec2d)

BOOST_AUTO_TEST_CASE(typedefs_and_constructors) {
  BOOST_TEST((std::is_same<Vec2Di::value_type, int>::value));
  BOOST_TEST((std::is_same<Vec2Df::value_type, float>::value));
  BOOST_TEST((std::is_same<Vec2Dd::value_type, double>::value));
  BOOST_TEST((std::is_same<Vec2Du::value_type, unsigned int>::value));
  const Vec2Df z;
  BOOST_TEST(z.x == 0.f);
  BOOST_TEST(z.y == 0.f);
  const Vec2Di fill(7);
  BOOST_TEST(fill.x == 7);
  BOOST_TEST(fill.y == 7);
  Vec2Dd v(1.5, -2.0);
  BOOST_TEST(v.x == 1.5);
  BOOST_TEST(v.y == -2.0);
  BOOST_TEST((Vec2Di(Vec2Df(1.9f, -2.9f)) == Vec2Di(1, -2)));
  BOOST_TEST(v.get(1) == -2.0);
  v[0] = 4.0;
  BOOST_TEST(v.x == 4.0);
  v.set(3.0, 5.0);
  BOOST_TEST((v == Vec2Dd(3, 5)));
  BOOST_CHECK_THROW(v.get(2), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(arithmetic_and_text) {
  const Vec2Df a(1.f, 2.f), b(0.5f, -4.f);
  BOOST_TEST((a + b == Vec2Df(1.5f, -2.f)));
  BOOST_TEST((a - b == Vec2Df(0.5f, 6.f)));
  BOOST_TEST((a * b == Vec2Df(0.5f, -8.f)));
  BOOST_TEST((a / b == Vec2Df(2.f, -0.5f)));
  BOOST_TEST((a * 3.f == Vec2Df(3.f, 6.f)));
  BOOST_TEST((3.f * a == Vec2Df(3.f, 6.f)));
  BOOST_TEST((a + 1.f == Vec2Df(2.f, 3.f)));
  BOOST_TEST((-a == Vec2Df(-1.f, -2.f)));
  Vec2Df c = a;
  c += b;
  c *= 2.f;
  BOOST_TEST((c == Vec2Df(3.f, -4.f)));
  BOOST_TEST((a != b));
  BOOST_TEST(Vec2Df(3.f, 4.f).length() == 5.0);
  BOOST_TEST(a.dot(b) == -7.5);
  BOOST_TEST(Vec2Di(3, -4).prod() == -12);
  BOOST_TEST(Vec2Di(3, -4).sum() == -1);
  BOOST_TEST(Vec2Di(3, -4).maxElement() == 3);
  BOOST_TEST(Vec2Di(3, -4).minElement() == -4);
  std::ostringstream os;
  os << Vec2Df(1.5f, -2.f);
  BOOST_TEST(os.str() == "Vec2D(1.5,-2)");
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------ pycaUtils ----

BOOST_AUTO_TEST_CASE(pyca_utils) {
  BOOST_TEST((std::is_same<uint, unsigned int>::value));
  static_assert(iDivUp(10, 3) == 4, "constexpr");
  BOOST_TEST(iDivUp(9, 3) == 3u);
  BOOST_TEST(iDivUp(0, 256) == 0u);
  BOOST_TEST(iDivUp(257, 256) == 2u);
  BOOST_TEST(iAlignUp(129, 128) == 256u);
  BOOST_TEST(iAlignUp(128, 128) == 128u);
  BOOST_TEST(iAlignDown(255, 128) == 128u);
  BOOST_TEST(!isPow2(0));
  BOOST_TEST(isPow2(1));
  BOOST_TEST(isPow2(1024));
  BOOST_TEST(!isPow2(1023));
  BOOST_TEST(nextPowerOf2(0) == 1u);
  BOOST_TEST(nextPowerOf2(5) == 8u);
  BOOST_TEST(nextPowerOf2(64) == 64u);
  BOOST_TEST(nextPowerOf2(std::numeric_limits<size_t>::max()) == 0u);
  BOOST_TEST(log2i(1) == 0u);
  BOOST_TEST(log2i(1023) == 9u);
  BOOST_TEST(log2i(1024) == 10u);
  // pycaConst.h (now in inc/base, as in the legacy tree) still gives the constants
  BOOST_TEST(EXEC_CPU == 0);
  BOOST_TEST(int(BACKGROUND_STRATEGY_CLAMP) == 4);
  BOOST_TEST(int(BC_CLAMP) == 2);
}

// --------------------------------------------------------------- MaxMin ----

BOOST_AUTO_TEST_SUITE(maxmin)

namespace {
const GridInfo kGrid(Vec3Di(17, 19, 23), Vec3Df(0.5f, 1.f, 2.f));

void fill(float* p, size_t n, uint32_t seed, float lo, float hi) {
  Rng r(seed);
  for (size_t i = 0; i < n; ++i) p[i] = r.next(lo, hi);
}
}  // namespace

BOOST_AUTO_TEST_CASE(image) {
  Image3D im(kGrid, MEM_HOST);
  fill(im.get(), im.nVox(), 1, -3.f, 5.f);
  const float mx = *std::max_element(im.get(), im.get() + im.nVox());
  const float mn = *std::min_element(im.get(), im.get() + im.nVox());
  Vec2Df r(123.f, 456.f);
  Opers::MaxMin(r, im);
  BOOST_TEST(r.x == mx);  // exact voxel values
  BOOST_TEST(r.y == mn);
  // update: combines with the prior content
  Vec2Df u(100.f, 0.f);  // prior max above, prior min inside the range
  Opers::MaxMin(u, im, true);
  BOOST_TEST(u.x == 100.f);
  BOOST_TEST(u.y == mn);
  Vec2Df w(0.f, -100.f);
  Opers::MaxMin(w, im, true);
  BOOST_TEST(w.x == mx);
  BOOST_TEST(w.y == -100.f);
  // the same as MinMax's pair (min, max)
  const std::pair<float, float> p = Opers::MinMax(im);
  BOOST_TEST(p.first == mn);
  BOOST_TEST(p.second == mx);
}

BOOST_AUTO_TEST_CASE(field_all_components) {
  Field3D f(kGrid, MEM_HOST);
  for (int d = 0; d < 3; ++d) fill(f.getComponent(d), f.nVox(), 10 + d, -1.f + d, 1.f + 2 * d);
  float mx = -std::numeric_limits<float>::infinity(), mn = std::numeric_limits<float>::infinity();
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < f.nVox(); ++i) {
      mx = std::max(mx, f.getComponent(d)[i]);
      mn = std::min(mn, f.getComponent(d)[i]);
    }
  Vec2Df r;
  Opers::MaxMin(r, f);
  BOOST_TEST(r.x == mx);
  BOOST_TEST(r.y == mn);
  Vec2Df u(mx + 1.f, mn - 1.f);
  Opers::MaxMin(u, f, true, nullptr, false);
  BOOST_TEST(u.x == mx + 1.f);
  BOOST_TEST(u.y == mn - 1.f);
}

BOOST_AUTO_TEST_CASE(empty_and_nan) {
  Image3D empty(GridInfo(Vec3Di(0, 4, 4)), MEM_HOST);
  Vec2Df r(1.f, 2.f);
  CHECK_PYCA_THROW(Opers::MaxMin(r, empty), PyCAValueException, "no voxels");
  BOOST_TEST((r == Vec2Df(1.f, 2.f)));
  Image3D im(GridInfo(Vec3Di(5, 1, 1)), MEM_HOST);
  for (size_t i = 0; i < 5; ++i) im.set(i, float(i));
  im.set(2, std::numeric_limits<float>::quiet_NaN());
  Opers::MaxMin(r, im);
  BOOST_TEST(std::isnan(r.x));
  BOOST_TEST(std::isnan(r.y));
}

BOOST_AUTO_TEST_SUITE_END()
