// test_affine.cxx -- Mat3D and Aff3D (spec 2.3): accessors, determinant,
// inverse (in place too: the legacy computed cofactors from overwritten
// entries), singular matrices, composition order, transformVector and the
// PLUNC text files. References are hand-computed or computed here in double.
#define BOOST_TEST_MODULE PyCA affine
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <unistd.h>

#include "Aff3D.h"
#include "Mat3D.h"
#include "PyCAException.h"
#include "Vec3D.h"

using namespace PyCA;
namespace tt = boost::test_tools;

namespace {

template <typename T>
std::string str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Row-major product of two 3x3 arrays in double.
void mul3(const double* a, const double* b, double* out) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a[3 * r + k] * b[3 * k + c];
      out[3 * r + c] = s;
    }
}

template <typename T>
Mat3D<T> randomWellConditioned(Rng& r) {
  // identity plus a perturbation of norm < 1: invertible, condition < 10
  Mat3D<T> m;
  for (int i = 0; i < 9; ++i) m.a[i] += T(r.next(-0.3f, 0.3f));
  return m;
}

/// A unique file in the temporary folder, removed at the end of the scope.
struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& name) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("pyca_test_affine_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + name);
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  void write(const std::string& text) const { std::ofstream(path) << text; }
};

}  // namespace

// ---------------------------------------------------------------- Mat3D ----

BOOST_AUTO_TEST_SUITE(mat3d)

BOOST_AUTO_TEST_CASE(legacy_typedefs) {
  BOOST_TEST((std::is_same<Mat3Df, Mat3D<float>>::value));
  BOOST_TEST((std::is_same<Mat3Dd, Mat3D<double>>::value));
  BOOST_TEST((std::is_same<doublereal, double>::value));
  BOOST_TEST((std::is_same<real, float>::value));
  BOOST_TEST((std::is_same<integer, long int>::value));
  BOOST_TEST((std::is_same<longint, long long>::value));
  BOOST_TEST(sizeof(Mat3Df) == 9 * sizeof(float));
}

BOOST_AUTO_TEST_CASE(identity_and_accessors) {
  Mat3Df m;
  for (unsigned r = 0; r < 3; ++r)
    for (unsigned c = 0; c < 3; ++c) BOOST_TEST(m(r, c) == (r == c ? 1.f : 0.f));
  m.set(0, 2, 5.f);
  m(2, 1) = -1.5f;
  BOOST_TEST(m.a[2] == 5.f);          // row-major
  BOOST_TEST(m(7) == -1.5f);
  BOOST_TEST(m.get(2, 1) == -1.5f);
  BOOST_CHECK_THROW(m.get(3, 0), std::out_of_range);
  BOOST_CHECK_THROW(m.set(0, 3, 1.f), std::out_of_range);
  m.eye();
  BOOST_TEST((m == Mat3Df()));
  const Mat3Dd n(1, 2, 3, 4, 5, 6, 7, 8, 9);
  BOOST_TEST(n(1, 0) == 4.0);
  BOOST_TEST((Mat3Dd(n.a) == n));
  BOOST_TEST((Mat3Df(n) == Mat3Df(1, 2, 3, 4, 5, 6, 7, 8, 9)));
}

BOOST_AUTO_TEST_CASE(transpose_det_product) {
  const Mat3Dd m(1, 2, 3, 4, 5, 6, 7, 8, 10);
  const Mat3Dd t = m.Transpose();
  BOOST_TEST((t == Mat3Dd(1, 4, 7, 2, 5, 8, 3, 6, 10)));
  BOOST_TEST((m == Mat3Dd(1, 2, 3, 4, 5, 6, 7, 8, 10)));  // unchanged
  BOOST_TEST(m.det() == -3.0);
  BOOST_TEST(Mat3Df(2, 0, 0, 0, 3, 0, 0, 0, 4).det() == 24.f);
  // m * t by hand: rows of m dotted with rows of m
  BOOST_TEST(((m * t) == Mat3Dd(14, 32, 53, 32, 77, 128, 53, 128, 213)));
  const Vec3Dd v = m * Vec3Dd(1, -1, 2);
  BOOST_TEST((v == Vec3Dd(5, 11, 19)));
  Mat3Dd p = m;
  p *= t;
  BOOST_TEST((p == m * t));
}

BOOST_AUTO_TEST_CASE(inverse_hand_computed_in_and_out_of_place) {
  const Mat3Dd m(1, 2, 3, 0, 1, 4, 5, 6, 0);
  const Mat3Dd want(-24, 18, 5, 20, -15, -4, -5, 4, 1);
  Mat3Dd out;
  BOOST_TEST(Mat3Dd::computeInverse(m.a, out.a));
  BOOST_TEST((out == want));
  // in == out: the legacy gave a wrong result here
  Mat3Dd inPlace = m;
  BOOST_TEST(Mat3Dd::computeInverse(inPlace.a, inPlace.a));
  BOOST_TEST((inPlace == want));
  Mat3Dd inv = m;
  BOOST_TEST(inv.invert());
  BOOST_TEST((inv == want));
}

BOOST_AUTO_TEST_CASE(inverse_random_times_matrix_is_identity) {
  Rng r(11);
  for (int k = 0; k < 50; ++k) {
    const Mat3Df m = randomWellConditioned<float>(r);
    Mat3Df inv = m;
    BOOST_TEST_REQUIRE(inv.invert());
    double a[9], b[9], p[9];
    for (int i = 0; i < 9; ++i) { a[i] = m.a[i]; b[i] = inv.a[i]; }
    mul3(a, b, p);
    for (int i = 0; i < 9; ++i) BOOST_TEST(p[i] == (i % 4 == 0 ? 1.0 : 0.0), tt::tolerance(1e-5));
    const Mat3Dd md(m);
    Mat3Dd invd = md;
    BOOST_TEST_REQUIRE(invd.invert());
    for (int i = 0; i < 9; ++i) a[i] = md.a[i], b[i] = invd.a[i];
    mul3(a, b, p);
    for (int i = 0; i < 9; ++i) BOOST_TEST(std::fabs(p[i] - (i % 4 == 0 ? 1.0 : 0.0)) < 1e-14);
  }
}

BOOST_AUTO_TEST_CASE(singular_matrices_are_refused_and_kept) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Mat3Df cases[] = {
      Mat3Df(1, 2, 3, 4, 5, 6, 7, 8, 9),   // rank 2 (det exactly 0)
      Mat3Df(1, 2, 3, 2, 4, 6, 0, 0, 1),   // parallel rows
      Mat3Df(0, 0, 0, 0, 1, 0, 0, 0, 1),   // zero row
      Mat3Df(0, 0, 0, 0, 0, 0, 0, 0, 0),
      Mat3Df(1, 0, 0, 0, 1, 0, 1, 1, 1e-9f),  // numerically singular: det 1e-9, rows of length ~1
      Mat3Df(nan, 0, 0, 0, 1, 0, 0, 0, 1),
  };
  for (const Mat3Df& c : cases) {
    Mat3Df m = c;
    BOOST_TEST(!m.invert());
    for (int i = 0; i < 9; ++i)
      BOOST_TEST((m.a[i] == c.a[i] || (std::isnan(m.a[i]) && std::isnan(c.a[i]))));
    float out[9] = {7, 7, 7, 7, 7, 7, 7, 7, 7};
    BOOST_TEST(!Mat3Df::computeInverse(c.a, out));
    for (float v : out) BOOST_TEST(v == 7.f);
  }
  // scaled rows are not singular: the test is relative to the row lengths
  Mat3Df small(1e-20f, 0, 0, 0, 1e-20f, 0, 0, 0, 1e-20f);
  BOOST_TEST(small.invert());
  BOOST_TEST(small(0, 0) == 1e20f, tt::tolerance(1e-6f));
  // an inverse that does not fit in float is refused
  Mat3Df tiny(1e-39f, 0, 0, 0, 1, 0, 0, 0, 1);
  BOOST_TEST(!tiny.invert());
}

BOOST_AUTO_TEST_CASE(text_forms) {
  BOOST_TEST(str(Mat3Df()) == "Mat3D((1,0,0),(0,1,0),(0,0,1))");
  std::ostringstream os;
  Mat3Dd(1, 2, 3, 4, 5, 6, 7, 8, 9.5).writeASCII(os);
  BOOST_TEST(os.str() == "1 2 3\n4 5 6\n7 8 9.5\n");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------- Aff3D ----

BOOST_AUTO_TEST_SUITE(aff3d)

BOOST_AUTO_TEST_CASE(typedefs_and_constructors) {
  BOOST_TEST((std::is_same<Aff3Df::CoordinateType, float>::value));
  BOOST_TEST((std::is_same<Aff3Dd::MatrixType, Mat3Dd>::value));
  BOOST_TEST((std::is_same<Aff3Dd::VectorType, Vec3Dd>::value));
  BOOST_TEST((std::is_same<Aff3Df::Self, Aff3Df>::value));
  const Aff3Df id;
  BOOST_TEST((id.matrix == Mat3Df()));
  BOOST_TEST((id.vector == Vec3Df(0, 0, 0)));
  const Mat3Df m(1, 2, 3, 4, 5, 6, 7, 8, 10);
  const Vec3Df v(1, -2, 3);
  BOOST_TEST((Aff3Df(m, v).matrix == m));
  BOOST_TEST((Aff3Df(m, v).vector == v));
  BOOST_TEST((Aff3Df(m).vector == Vec3Df(0, 0, 0)));
  BOOST_TEST((Aff3Df(v).matrix == Mat3Df()));
  Aff3Df a(m, v);
  a.eye();
  BOOST_TEST((a == id));
  BOOST_TEST(id.determinant() == 1.f);
  BOOST_TEST(Aff3Dd(Mat3Dd(1, 2, 3, 4, 5, 6, 7, 8, 10)).determinant() == -3.0);
}

BOOST_AUTO_TEST_CASE(apply_compose_transform_vector) {
  // a: scale x by 2, translate (1, 2, 3); b: swap x and y, translate (0, 0, -1)
  const Aff3Dd a(Mat3Dd(2, 0, 0, 0, 1, 0, 0, 0, 1), Vec3Dd(1, 2, 3));
  const Aff3Dd b(Mat3Dd(0, 1, 0, 1, 0, 0, 0, 0, 1), Vec3Dd(0, 0, -1));
  const Vec3Dd p(5, 7, 11);
  BOOST_TEST((a * p == Vec3Dd(11, 9, 14)));
  BOOST_TEST((b * p == Vec3Dd(7, 5, 10)));
  // (a * b)(p) = a(b(p)) = a(7, 5, 10)
  BOOST_TEST(((a * b) * p == Vec3Dd(15, 7, 13)));
  BOOST_TEST(((b * a) * p == Vec3Dd(9, 11, 13)));
  Aff3Dd c = a;
  c *= b;
  BOOST_TEST((c == a * b));
  Vec3Dd out;
  a.transformVector(p, out);
  BOOST_TEST((out == Vec3Dd(11, 9, 14)));
  Vec3Dd q = p;
  a.transformVector(q, q);  // aliasing is fine
  BOOST_TEST((q == Vec3Dd(11, 9, 14)));
  q = p;
  b.transformVector(q);
  BOOST_TEST((q == Vec3Dd(7, 5, 10)));
}

BOOST_AUTO_TEST_CASE(invert_is_the_true_inverse) {
  Rng r(5);
  for (int k = 0; k < 50; ++k) {
    const Aff3Df a(randomWellConditioned<float>(r), Vec3Df(r.next(-10, 10), r.next(-10, 10), r.next(-10, 10)));
    Aff3Df inv = a;
    BOOST_TEST_REQUIRE(inv.invert());
    const Vec3Df p(r.next(-5, 5), r.next(-5, 5), r.next(-5, 5));
    const Vec3Df back = inv * (a * p);
    BOOST_TEST(std::fabs(back.x - p.x) < 1e-4f);
    BOOST_TEST(std::fabs(back.y - p.y) < 1e-4f);
    BOOST_TEST(std::fabs(back.z - p.z) < 1e-4f);
  }
  // hand-computed: x -> 2x + 1 (y, z identity, translated by 2 and 3)
  Aff3Dd a(Mat3Dd(2, 0, 0, 0, 1, 0, 0, 0, 1), Vec3Dd(1, 2, 3));
  BOOST_TEST(a.invert());
  BOOST_TEST((a.matrix == Mat3Dd(0.5, 0, 0, 0, 1, 0, 0, 0, 1)));
  BOOST_TEST((a.vector == Vec3Dd(-0.5, -2, -3)));
}

BOOST_AUTO_TEST_CASE(invert_singular_reports_failure) {
  const Aff3Df s(Mat3Df(1, 2, 3, 4, 5, 6, 7, 8, 9), Vec3Df(1, 2, 3));
  Aff3Df a = s;
  BOOST_TEST(!a.invert());
  BOOST_TEST((a == s));
}

BOOST_AUTO_TEST_CASE(text_form) {
  BOOST_TEST(str(Aff3Df(Vec3Df(1, 2, 3))) == "Aff3D(Mat3D((1,0,0),(0,1,0),(0,0,1)),Vec3D(1,2,3))");
}

BOOST_AUTO_TEST_CASE(plunc_round_trip_and_layout) {
  Rng r(3);
  Aff3Df a(randomWellConditioned<float>(r), Vec3Df(r.next(-50, 50), r.next(-50, 50), r.next(-50, 50)));
  TempFile f("roundtrip.txt");
  a.writePLUNCStyle(f.path.string());
  Aff3Df b;
  b.readPLUNCStyle(f.path.string());
  BOOST_TEST((b == a));  // max_digits10: exact
  // layout: the transpose of the homogeneous matrix
  f.write("1 4 7 0\n2 5 8 0\n3 6 9 0\n10 20 30 1\n");
  Aff3Dd c;
  c.readPLUNCStyle(f.path.string());
  BOOST_TEST((c.matrix == Mat3Dd(1, 2, 3, 4, 5, 6, 7, 8, 9)));
  BOOST_TEST((c.vector == Vec3Dd(10, 20, 30)));
  Aff3Dd d(Mat3Dd(1, 2, 3, 4, 5, 6, 7, 8, 9), Vec3Dd(10, 20, 30));
  d.writePLUNCStyle(f.path.string());
  std::ifstream in(f.path);
  double v[16];
  for (double& x : v) in >> x;
  const double want[16] = {1, 4, 7, 0, 2, 5, 8, 0, 3, 6, 9, 0, 10, 20, 30, 1};
  for (int i = 0; i < 16; ++i) BOOST_TEST(v[i] == want[i]);
}

BOOST_AUTO_TEST_CASE(plunc_errors_throw_and_keep_the_transform) {
  const Aff3Df orig(Vec3Df(1, 2, 3));
  const char* bad[] = {
      "",
      "1 0 0 0 0 1 0 0 0 0 1 0",
      "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1 7",
      "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 one",
      "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1x",
      "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 inf",
      "1 0 0 0.5 0 1 0 0 0 0 1 0 0 0 0 1",
      "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 3",
  };
  TempFile f("bad.txt");
  for (const char* text : bad) {
    f.write(text);
    Aff3Df a = orig;
    CHECK_PYCA_THROW(a.readPLUNCStyle(f.path.string()), PyCAException, "PLUNC");
    BOOST_TEST((a == orig));
  }
  Aff3Df a = orig;
  CHECK_PYCA_THROW(a.readPLUNCStyle((f.path.parent_path() / "pyca_no_such_file.txt").string()),
                   PyCAException, "cannot open");
  CHECK_PYCA_THROW(a.writePLUNCStyle((f.path.parent_path() / "pyca_no_dir" / "x.txt").string()),
                   PyCAException, "cannot open");
  BOOST_TEST((a == orig));
}

// writePLUNCStyle writes through the library's atomic writer (AtomicFile.h):
// an earlier file's permissions are kept, a folder is not replaced, and no
// temporary is left beside the file.
BOOST_AUTO_TEST_CASE(plunc_write_is_atomic) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pyca_test_affine_atomic_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Aff3Df a(Vec3Df(1, 2, 3)), b(Vec3Df(4, 5, 6));
  const std::string file = (dir / "t.txt").string();
  a.writePLUNCStyle(file);
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  b.writePLUNCStyle(file);
  Aff3Df c;
  c.readPLUNCStyle(file);
  BOOST_TEST((c == b));
  BOOST_TEST(((fs::status(file).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write)));
  fs::create_directories(dir / "sub.txt");
  CHECK_PYCA_THROW(a.writePLUNCStyle((dir / "sub.txt").string()), PyCAException, "Is a directory");
  BOOST_TEST(fs::is_directory(dir / "sub.txt"));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++entries;
    BOOST_TEST(e.path().filename().string().find(".tmp-") == std::string::npos);
  }
  BOOST_TEST(entries == 2);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
