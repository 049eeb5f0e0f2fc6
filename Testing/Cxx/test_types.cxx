// test_types.cxx -- value types, enumerations and the exception of PyCA.
//
// Pins down the legacy behaviour of Vec3D, GridInfo, the enum integer values
// (spec 2.1), MemTypeStr and the PyCAException text (spec 4).
#define BOOST_TEST_MODULE PyCA types
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "GridInfo.h"
#include "PyCAException.h"
#include "Vec3D.h"
#include "conditionMacro.h"
#include "mem.h"
#include "pycaConst.h"

using namespace PyCA;

namespace {
template <typename T>
std::string str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

// ---------------------------------------------------------------- Vec3D ----

BOOST_AUTO_TEST_SUITE(vec3d)

BOOST_AUTO_TEST_CASE(constructors) {
  Vec3Di a;
  BOOST_TEST(a.x == 0);
  BOOST_TEST(a.y == 0);
  BOOST_TEST(a.z == 0);

  Vec3Df b(1.5f, -2.f, 3.25f);
  BOOST_TEST(b.x == 1.5f);
  BOOST_TEST(b.y == -2.f);
  BOOST_TEST(b.z == 3.25f);

  Vec3Dd fill(7.0);
  BOOST_TEST(fill.x == 7.0);
  BOOST_TEST(fill.y == 7.0);
  BOOST_TEST(fill.z == 7.0);

  Vec3Df copy(b);
  BOOST_TEST((copy == b));

  // Converting constructor between element types.
  Vec3Df fromInt(Vec3Di(1, 2, 3));
  BOOST_TEST((fromInt == Vec3Df(1.f, 2.f, 3.f)));
  Vec3Di truncated(Vec3Df(1.9f, -2.9f, 3.1f));
  BOOST_TEST((truncated == Vec3Di(1, -2, 3)));

  Vec3Du u(1u, 2u, 3u);
  BOOST_TEST(u.sum() == 6u);
}

BOOST_AUTO_TEST_CASE(get_set) {
  Vec3Di v(4, 5, 6);
  BOOST_TEST(v.get(0) == 4);
  BOOST_TEST(v.get(1) == 5);
  BOOST_TEST(v.get(2) == 6);
  BOOST_TEST(v[0] == 4);
  BOOST_TEST(v[2] == 6);

  v.set(1, 50);
  BOOST_TEST(v.y == 50);
  v.set(7, 8, 9);
  BOOST_TEST((v == Vec3Di(7, 8, 9)));
  v[0] = -1;
  BOOST_TEST(v.x == -1);

  BOOST_CHECK_THROW(v.get(3), std::out_of_range);
  BOOST_CHECK_THROW(v.set(3, 1), std::out_of_range);
  BOOST_CHECK_THROW(v.get(static_cast<unsigned int>(-1)), std::out_of_range);
  BOOST_TEST((v == Vec3Di(-1, 8, 9)));  // failed set left it untouched
}

BOOST_AUTO_TEST_CASE(norms_and_products) {
  Vec3Df v(3.f, -4.f, 12.f);
  BOOST_TEST(v.lengthSquared() == 169.0);
  BOOST_TEST(v.length() == 13.0);
  BOOST_TEST(v.normL2() == 13.0);
  BOOST_TEST(v.normL1() == 19.0);
  BOOST_TEST(v.prod() == -144.f);
  BOOST_TEST(v.sum() == 11.f);
  BOOST_TEST(v.maxElement() == 12.f);
  BOOST_TEST(v.minElement() == -4.f);

  Vec3Di s(2, 3, 4);
  BOOST_TEST(s.prod() == 24);
  BOOST_TEST(s.sum() == 9);
  BOOST_TEST(Vec3Di(5, 1, 3).maxElement() == 5);
  BOOST_TEST(Vec3Di(5, 1, 3).minElement() == 1);
  BOOST_TEST(Vec3Di(1, 5, 3).maxElement() == 5);
  BOOST_TEST(Vec3Di(1, 3, 5).maxElement() == 5);
  BOOST_TEST(Vec3Di(3, 1, 5).minElement() == 1);
  BOOST_TEST(Vec3Di(3, 5, 1).minElement() == 1);

  Vec3Df a(1.f, 2.f, 3.f), b(4.f, 6.f, 3.f);
  BOOST_TEST(a.distanceSquared(b) == 25.0);
  BOOST_TEST(a.distance(b) == 5.0);
}

BOOST_AUTO_TEST_CASE(cross_and_dot) {
  Vec3Df ex(1.f, 0.f, 0.f), ey(0.f, 1.f, 0.f), ez(0.f, 0.f, 1.f);
  BOOST_TEST((ex.cross(ey) == ez));
  BOOST_TEST((ey.cross(ez) == ex));
  BOOST_TEST((ez.cross(ex) == ey));
  BOOST_TEST((ey.cross(ex) == -ez));

  Vec3Di a(1, 2, 3), b(4, 5, 6);
  BOOST_TEST((a.cross(b) == Vec3Di(-3, 6, -3)));
  BOOST_TEST(a.dot(b) == 32.0);
  BOOST_TEST(a.cross(b).dot(a) == 0.0);
  BOOST_TEST(a.cross(b).dot(b) == 0.0);
}

BOOST_AUTO_TEST_CASE(invert_inverse_normalize) {
  Vec3Df v(2.f, 4.f, -0.5f);
  Vec3Df inv = v.inverse();
  BOOST_TEST((inv == Vec3Df(0.5f, 0.25f, -2.f)));
  BOOST_TEST((v == Vec3Df(2.f, 4.f, -0.5f)));  // inverse() does not modify
  v.invert();
  BOOST_TEST((v == Vec3Df(0.5f, 0.25f, -2.f)));

  Vec3Dd n(3.0, 0.0, 4.0);
  n.normalize();
  BOOST_TEST(n.x == 0.6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(n.z == 0.8, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(n.length() == 1.0, boost::test_tools::tolerance(1e-12));
  Vec3Dd zero;
  zero.normalize();  // no-op, no NaN
  BOOST_TEST((zero == Vec3Dd(0.0, 0.0, 0.0)));

  Vec3Df w(1.f, 2.f, 3.f);
  w.scale(2.f, 3.f, 4.f);
  BOOST_TEST((w == Vec3Df(2.f, 6.f, 12.f)));
  w.translate(1.f, -1.f, 0.f);
  BOOST_TEST((w == Vec3Df(3.f, 5.f, 12.f)));
  w.negate();
  BOOST_TEST((w == Vec3Df(-3.f, -5.f, -12.f)));
}

BOOST_AUTO_TEST_CASE(arithmetic) {
  Vec3Df a(1.f, 2.f, 3.f), b(4.f, 8.f, 12.f);
  BOOST_TEST((a + b == Vec3Df(5.f, 10.f, 15.f)));
  BOOST_TEST((b - a == Vec3Df(3.f, 6.f, 9.f)));
  BOOST_TEST((a * b == Vec3Df(4.f, 16.f, 36.f)));
  BOOST_TEST((b / a == Vec3Df(4.f, 4.f, 4.f)));
  BOOST_TEST((a + 1.f == Vec3Df(2.f, 3.f, 4.f)));
  BOOST_TEST((a - 1.f == Vec3Df(0.f, 1.f, 2.f)));
  BOOST_TEST((a * 2.f == Vec3Df(2.f, 4.f, 6.f)));
  BOOST_TEST((b / 4.f == Vec3Df(1.f, 2.f, 3.f)));
  BOOST_TEST((2.f * a == Vec3Df(2.f, 4.f, 6.f)));
  BOOST_TEST((1.f + a == Vec3Df(2.f, 3.f, 4.f)));
  BOOST_TEST((-a == Vec3Df(-1.f, -2.f, -3.f)));

  Vec3Df c = a;
  c += b;
  BOOST_TEST((c == Vec3Df(5.f, 10.f, 15.f)));
  c -= a;
  BOOST_TEST((c == b));
  c *= a;
  BOOST_TEST((c == Vec3Df(4.f, 16.f, 36.f)));
  c /= a;
  BOOST_TEST((c == b));
  c += 1.f;
  c -= 2.f;
  c *= 2.f;
  c /= 2.f;
  BOOST_TEST((c == Vec3Df(3.f, 7.f, 11.f)));

  // Vec3Di: integer division.
  Vec3Di i(7, -7, 9);
  BOOST_TEST((i / 2 == Vec3Di(3, -3, 4)));
  BOOST_TEST((i / Vec3Di(2, 2, 3) == Vec3Di(3, -3, 3)));

  // Exact comparison.
  BOOST_TEST((Vec3Df(1.f, 2.f, 3.f) != Vec3Df(1.f, 2.f, 3.0001f)));
  BOOST_TEST(!(Vec3Df(1.f, 2.f, 3.f) != Vec3Df(1.f, 2.f, 3.f)));
  // Ordering is componentwise, all components.
  BOOST_TEST((Vec3Di(1, 1, 1) < Vec3Di(2, 2, 2)));
  BOOST_TEST(!(Vec3Di(1, 3, 1) < Vec3Di(2, 2, 2)));
  BOOST_TEST((Vec3Di(2, 2, 2) <= Vec3Di(2, 2, 2)));
}

BOOST_AUTO_TEST_CASE(stream_text) {
  BOOST_TEST(str(Vec3Di(1, -2, 3)) == "Vec3D(1,-2,3)");
  BOOST_TEST(str(Vec3Df(1.5f, 0.f, -0.25f)) == "Vec3D(1.5,0,-0.25)");
  BOOST_TEST(str(Vec3Dd(2.0, 3.0, 4.5)) == "Vec3D(2,3,4.5)");
  BOOST_TEST(str(Vec3Du(7u, 8u, 9u)) == "Vec3D(7,8,9)");

  // ASCII round trip.
  std::stringstream ss;
  Vec3Df(1.5f, -2.f, 3.f).writeASCII(ss);
  BOOST_TEST(ss.str() == "(1.5, -2, 3)");
  Vec3Df r;
  r.readASCII(ss);
  BOOST_TEST((r == Vec3Df(1.5f, -2.f, 3.f)));

  // Binary round trip.
  std::stringstream bs;
  Vec3Dd(1.25, -3.5, 1e10).writeBinary(bs);
  Vec3Dd rb;
  rb.readBinary(bs);
  BOOST_TEST((rb == Vec3Dd(1.25, -3.5, 1e10)));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------- GridInfo ----

BOOST_AUTO_TEST_SUITE(gridinfo)

BOOST_AUTO_TEST_CASE(defaults) {
  GridInfo g;
  BOOST_TEST((g.size() == Vec3Di(0, 0, 0)));
  BOOST_TEST((g.spacing() == Vec3Df(1.f, 1.f, 1.f)));
  BOOST_TEST((g.origin() == Vec3Df(0.f, 0.f, 0.f)));
  BOOST_TEST(g.nVox() == 0u);
  BOOST_TEST(g.voxelVol() == 1.f);

  GridInfo h(Vec3Di(4, 5, 6));
  BOOST_TEST((h.spacing() == Vec3Df(1.f, 1.f, 1.f)));
  BOOST_TEST((h.origin() == Vec3Df(0.f, 0.f, 0.f)));
}

BOOST_AUTO_TEST_CASE(nvox_voxelvol) {
  GridInfo g(Vec3Di(17, 19, 23), Vec3Df(0.5f, 2.f, 3.f), Vec3Df(1.f, -1.f, 10.f));
  BOOST_TEST(g.nVox() == size_t(17 * 19 * 23));
  BOOST_TEST(g.voxelVol() == 3.f);
  BOOST_TEST((g.size() == Vec3Di(17, 19, 23)));
  BOOST_TEST((g.spacing() == Vec3Df(0.5f, 2.f, 3.f)));
  BOOST_TEST((g.origin() == Vec3Df(1.f, -1.f, 10.f)));

  // Slice mode and degenerate grids.
  BOOST_TEST(GridInfo(Vec3Di(31, 33, 1)).nVox() == size_t(31 * 33));
  BOOST_TEST(GridInfo(Vec3Di(31, 0, 1)).nVox() == 0u);
  BOOST_TEST(GridInfo(Vec3Di(-2, 3, 1)).nVox() == 0u);

  // No int overflow for large grids.
  GridInfo big(Vec3Di(2048, 2048, 2048));
  BOOST_TEST(big.nVox() == size_t(2048) * 2048 * 2048);
}

BOOST_AUTO_TEST_CASE(setters_and_live_references) {
  GridInfo g;
  g.set(Vec3Di(2, 3, 4), Vec3Df(1.f, 2.f, 3.f), Vec3Df(-1.f, 0.f, 1.f));
  BOOST_TEST(g.nVox() == 24u);
  BOOST_TEST(g.voxelVol() == 6.f);
  g.set(Vec3Di(5, 5, 5));  // spacing/origin return to the defaults
  BOOST_TEST((g.spacing() == Vec3Df(1.f, 1.f, 1.f)));
  BOOST_TEST((g.origin() == Vec3Df(0.f, 0.f, 0.f)));

  g.setSize(Vec3Di(1, 2, 3));
  g.setSpacing(Vec3Df(2.f, 2.f, 2.f));
  g.setOrigin(Vec3Df(9.f, 8.f, 7.f));
  BOOST_TEST((g.size() == Vec3Di(1, 2, 3)));
  BOOST_TEST(g.voxelVol() == 8.f);
  BOOST_TEST((g.origin() == Vec3Df(9.f, 8.f, 7.f)));

  g.size().z = 10;
  g.spacing().x = 0.5f;
  g.origin().y = -3.f;
  BOOST_TEST(g.nVox() == 20u);
  BOOST_TEST(g.voxelVol() == 2.f);
  BOOST_TEST(g.origin().y == -3.f);
}

BOOST_AUTO_TEST_CASE(equality_tolerance) {
  GridInfo a(Vec3Di(4, 5, 6), Vec3Df(1.f, 1.f, 1.f), Vec3Df(0.f, 0.f, 0.f));
  GridInfo b = a;
  BOOST_TEST((a == b));
  BOOST_TEST(!(a != b));

  // Spacing: equal at 5e-7 difference, unequal at 1e-5.
  b.setSpacing(Vec3Df(1.f + 5e-7f, 1.f, 1.f));
  BOOST_TEST((a.spacing() != b.spacing()));  // really different floats
  BOOST_TEST((a == b));
  b.setSpacing(Vec3Df(1.f, 1.f, 1.f + 1e-5f));
  BOOST_TEST((a != b));
  BOOST_TEST(!(a == b));

  // Origin: same rule.
  b = a;
  b.setOrigin(Vec3Df(5e-7f, 0.f, 0.f));
  BOOST_TEST((a == b));
  b.setOrigin(Vec3Df(0.f, -5e-7f, 0.f));
  BOOST_TEST((a == b));
  b.setOrigin(Vec3Df(0.f, 1e-5f, 0.f));
  BOOST_TEST((a != b));

  // The tolerance is Euclidean: 7e-7 in two components is 9.9e-7 < 1e-6 ...
  b.setOrigin(Vec3Df(7e-7f, 7e-7f, 0.f));
  BOOST_TEST((a == b));
  // ... but 7e-7 in all three is 1.2e-6 > 1e-6.
  b.setOrigin(Vec3Df(7e-7f, 7e-7f, 7e-7f));
  BOOST_TEST((a != b));

  // Sizes must match exactly; the same voxel count in another shape differs.
  GridInfo c(Vec3Di(5, 4, 6));
  BOOST_TEST(c.nVox() == a.nVox());
  BOOST_TEST((a != c));
  BOOST_TEST((a != GridInfo(Vec3Di(4, 5, 7))));
}

BOOST_AUTO_TEST_CASE(to_string_legacy_format) {
  GridInfo g(Vec3Di(4, 3, 2));
  BOOST_TEST(g.toString() == "Grid: size (4, 3, 2) origin (0 0 0) spacing (1 1 1)");
  GridInfo h(Vec3Di(64, 64, 32), Vec3Df(0.5f, 1.25f, 2.f), Vec3Df(-10.f, 3.5f, 0.f));
  BOOST_TEST(h.toString() == "Grid: size (64, 64, 32) origin (-10 3.5 0) spacing (0.5 1.25 2)");
  BOOST_TEST(str(h) == h.toString());
  std::ostringstream os;
  h._print(os);
  BOOST_TEST(os.str() == h.toString());
  BOOST_TEST(GridInfo().toString() == "Grid: size (0, 0, 0) origin (0 0 0) spacing (1 1 1)");
}

BOOST_AUTO_TEST_CASE(read_round_trip) {
  std::istringstream is("4 5 6  1.5 2.5 3.5  0.5 0.25 2");
  GridInfo g;
  is >> g;
  BOOST_TEST((g.size() == Vec3Di(4, 5, 6)));
  BOOST_TEST((g.origin() == Vec3Df(1.5f, 2.5f, 3.5f)));
  BOOST_TEST((g.spacing() == Vec3Df(0.5f, 0.25f, 2.f)));
}

BOOST_AUTO_TEST_CASE(check_grid_size) {
  BOOST_CHECK_NO_THROW(CheckGridSize(GridInfo(Vec3Di(0, 0, 0))));
  BOOST_CHECK_NO_THROW(CheckGridSize(GridInfo(Vec3Di(3, 1, 1))));
  BOOST_CHECK_THROW(CheckGridSize(GridInfo(Vec3Di(3, -1, 1))), PyCAValueException);
  // A PyCAValueException is a PyCAException.
  BOOST_CHECK_THROW(CheckGridSize(GridInfo(Vec3Di(-3, 1, 1))), PyCAException);
}

BOOST_AUTO_TEST_SUITE_END()

// --------------------------------------------------------- enumerations ----

BOOST_AUTO_TEST_SUITE(enums)

BOOST_AUTO_TEST_CASE(legacy_integer_values) {
  BOOST_TEST(int(MEM_UNINITIALIZED) == 0);
  BOOST_TEST(int(MEM_HOST) == 1);
  BOOST_TEST(int(MEM_HOST_PINNED) == 2);
  BOOST_TEST(int(MEM_DEVICE) == 3);

  // Global namespace (legacy).
  BOOST_TEST(int(::BACKGROUND_STRATEGY_PARTIAL_ID) == 0);
  BOOST_TEST(int(::BACKGROUND_STRATEGY_ID) == 1);
  BOOST_TEST(int(::BACKGROUND_STRATEGY_PARTIAL_ZERO) == 2);
  BOOST_TEST(int(::BACKGROUND_STRATEGY_ZERO) == 3);
  BOOST_TEST(int(::BACKGROUND_STRATEGY_CLAMP) == 4);
  BOOST_TEST(int(::BACKGROUND_STRATEGY_WRAP) == 5);
  BOOST_TEST(int(::BACKGROUND_STRATEGY_VAL) == 6);

  BOOST_TEST(int(::INTERP_NN) == 0);
  BOOST_TEST(int(::INTERP_LINEAR) == 1);
  BOOST_TEST(int(::INTERP_CUBIC) == 2);
  BOOST_TEST(int(DEFAULT_INTERP_METHOD) == int(::INTERP_LINEAR));

  BOOST_TEST(int(PyCA::DIM_X) == 0);
  BOOST_TEST(int(PyCA::DIM_Y) == 1);
  BOOST_TEST(int(PyCA::DIM_Z) == 2);

  BOOST_TEST(int(PyCA::DIFF_FORWARD) == 0);
  BOOST_TEST(int(PyCA::DIFF_BACKWARD) == 1);
  BOOST_TEST(int(PyCA::DIFF_CENTRAL) == 2);

  BOOST_TEST(int(PyCA::BC_APPROX) == 0);
  BOOST_TEST(int(PyCA::BC_WRAP) == 1);
  BOOST_TEST(int(PyCA::BC_CLAMP) == 2);

  BOOST_TEST(int(PyCA::OP_VAL) == 0);
  BOOST_TEST(int(PyCA::OP_SQR) == 1);
}

BOOST_AUTO_TEST_CASE(namespaces) {
  // MemoryType, DimT, DiffT, BoundaryCondT, OpT live in PyCA; InterpT and
  // BackgroundStrategy in the global namespace.
  BOOST_TEST((std::is_enum<PyCA::MemoryType>::value));
  BOOST_TEST((std::is_enum<PyCA::DimT>::value));
  BOOST_TEST((std::is_enum<PyCA::DiffT>::value));
  BOOST_TEST((std::is_enum<PyCA::BoundaryCondT>::value));
  BOOST_TEST((std::is_enum<PyCA::OpT>::value));
  BOOST_TEST((std::is_enum<::InterpT>::value));
  BOOST_TEST((std::is_enum<::BackgroundStrategy>::value));
}

BOOST_AUTO_TEST_CASE(defined_constants) {
  BOOST_TEST(EXEC_CPU == 0);
  BOOST_TEST(EXEC_GPU == 1);
  BOOST_TEST(EXEC_GPU_PARAM == 2);
  BOOST_TEST(CTA_SIZE == 256);
  BOOST_TEST(CUDA_DATA_BLOCK_ALIGN == 128);
  BOOST_TEST(BLOCK_ALIGN == 128);
  BOOST_TEST(REG_BLOCK_SIZE == 256);
  BOOST_TEST(MAX_NUMBER_DEVICES == 256);
  BOOST_TEST(MAX_FFT_TABLE_LENGTH == 512);
  BOOST_TEST(FIX_SCALE_20 == 1048576.0f);
  BOOST_TEST(GRIDINFO_EPS == 1e-6);
  BOOST_TEST(WRAP_TRUE == 1);
  BOOST_TEST(WRAP_FALSE == 0);
  BOOST_TEST(ACCUM_TRUE == 1);
  BOOST_TEST(ACCUM_FALSE == 0);
  BOOST_TEST(SLICE_TRUE == 1);
  BOOST_TEST(SLICE_FALSE == 0);
  BOOST_TEST(PyCA::MIN_VAL == std::numeric_limits<float>::min());
  BOOST_TEST(PyCA::MAX_VAL == std::numeric_limits<float>::max());
}

BOOST_AUTO_TEST_CASE(mem_type_str) {
  BOOST_TEST(std::string(MemTypeStr(MEM_HOST)) == "host memory");
  BOOST_TEST(std::string(MemTypeStr(MEM_HOST_PINNED)) == "pinned host memory");
  BOOST_TEST(std::string(MemTypeStr(MEM_DEVICE)) == "gpu_device_memory");
  BOOST_TEST(std::string(MemTypeStr(MEM_UNINITIALIZED)) == "uninitialized memory");

  BOOST_TEST(std::string(MemTypeName(MEM_HOST)) == "MEM_HOST");
  BOOST_TEST(std::string(MemTypeName(MEM_HOST_PINNED)) == "MEM_HOST_PINNED");
  BOOST_TEST(std::string(MemTypeName(MEM_DEVICE)) == "MEM_DEVICE");
  BOOST_TEST(std::string(MemTypeName(MEM_UNINITIALIZED)) == "MEM_UNINITIALIZED");

  BOOST_TEST(isHostAccessible(MEM_HOST));
  BOOST_TEST(isHostAccessible(MEM_HOST_PINNED));
  BOOST_TEST(!isHostAccessible(MEM_DEVICE));
  BOOST_TEST(!isHostAccessible(MEM_UNINITIALIZED));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------ exception ----

BOOST_AUTO_TEST_SUITE(exception)

BOOST_AUTO_TEST_CASE(what_format) {
  PyCAException e("some/file.cxx", 42, "Something failed");
  BOOST_TEST(std::string(e.what()) == "PyCAException : From some/file.cxx:42 : Something failed");
  BOOST_TEST(e.Text() == "Something failed");
  BOOST_TEST(e.Location() == "some/file.cxx:42");
  BOOST_TEST(e.TypeDescription() == "PyCAException");

  PyCAException d;
  BOOST_TEST(std::string(d.what()) == "PyCAException : From unknown file:0 : undefined exception");

  // Derives from std::exception.
  const std::exception& base = e;
  BOOST_TEST(std::string(base.what()) == e.what());
}

BOOST_AUTO_TEST_CASE(cause_chaining) {
  std::runtime_error root("disk on fire");
  PyCAException mid("io.cxx", 7, "Read failed", &root);
  BOOST_TEST(mid.Text() == "Read failed\n   Caused by:\ndisk on fire");
  BOOST_TEST(std::string(mid.what()) ==
             "PyCAException : From io.cxx:7 : Read failed\n   Caused by:\ndisk on fire");

  PyCAException top("main.cxx", 99, "Load failed", &mid);
  BOOST_TEST(std::string(top.what()) ==
             "PyCAException : From main.cxx:99 : Load failed\n   Caused by:\n"
             "PyCAException : From io.cxx:7 : Read failed\n   Caused by:\ndisk on fire");
}

BOOST_AUTO_TEST_CASE(subclasses) {
  PyCAMemoryException m("a.cxx", 1, "out of memory");
  PyCAValueException v("b.cxx", 2, "bad value");
  BOOST_TEST(std::string(m.what()) == "PyCAException : From a.cxx:1 : out of memory");
  BOOST_TEST(std::string(v.what()) == "PyCAException : From b.cxx:2 : bad value");
  BOOST_CHECK_THROW(throw m, PyCAException);
  BOOST_CHECK_THROW(throw v, PyCAException);
  BOOST_CHECK_THROW(throw v, std::exception);
}

BOOST_AUTO_TEST_CASE(macros) {
  int line = 0;
  try {
    line = __LINE__; PRECONDITION(1 + 1 == 3, "arithmetic is broken");
    BOOST_FAIL("PRECONDITION did not throw");
  } catch (const PyCAException& e) {
    BOOST_TEST(e.Text() == "arithmetic is broken");
    BOOST_TEST(e.Location() == std::string(__FILE__) + ":" + std::to_string(line));
  }
  BOOST_CHECK_NO_THROW(PRECONDITION(true, "never"));

  const void* mMemMan = nullptr;
  try {
    PYCA_ASSERT(mMemMan);
    BOOST_FAIL("PYCA_ASSERT did not throw");
  } catch (const PyCAException& e) {
    BOOST_TEST(e.Text() == "mMemMan");
  }

  try {
    throw_exception("plain throw");
  } catch (const PyCAException& e) {
    BOOST_TEST(e.Text() == "plain throw");
  }
}

BOOST_AUTO_TEST_SUITE_END()
