// test_pointwise.cxx -- groups A (unary), B (binary), C (fused) and the D
// thresholds through the C++ API, on images and fields, against references
// computed here in double precision voxel by voxel.
//
// Grids are odd-sized (17x19x23 with anisotropic spacing, and a 31x33x1
// slice). Masked forms must leave unmasked voxels untouched; in-place forms
// must equal out-of-place ones.
#define BOOST_TEST_MODULE PyCA pointwise
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "CudaUtils.h"
#include "FOpers.h"
#include "Field3D.h"
#include "GridInfo.h"
#include "IOpers.h"
#include "Image3D.h"
#include "MemAlloc.h"
#include "PyCAException.h"

using namespace PyCA;
namespace utf = boost::unit_test;
namespace tt = boost::test_tools;

namespace {

const GridInfo kGrids[] = {
    GridInfo(Vec3Di(17, 19, 23), Vec3Df(0.7f, 1.3f, 2.1f), Vec3Df(-3.f, 1.f, 7.f)),
    GridInfo(Vec3Di(31, 33, 1), Vec3Df(1.25f, 0.8f, 1.f)),
};

void fill(Image3D& im, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im.set(i, r.next(lo, hi));
}
void fill(Field3D& f, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Rng r(seed);
  for (size_t i = 0; i < f.nVox(); ++i) {
    float a = r.next(lo, hi), b = r.next(lo, hi), c = r.next(lo, hi);
    f.set(i, Vec3Df(a, b, c));
  }
}
void makeMask(Image3D& m) {
  for (size_t i = 0; i < m.nVox(); ++i) m.set(i, i % 3 == 0 ? 0.f : (i % 3 == 1 ? 1.f : -2.f));
}

/// |got - want| <= tol * max(1, |want|) everywhere (NaN/inf must match).
template <class F>
size_t mismatches(const Image3D& got, F want, double tol) {
  size_t bad = 0;
  for (size_t i = 0; i < got.nVox(); ++i) {
    const double w = want(i), g = got.get(i);
    const bool ok = std::isfinite(w) ? std::fabs(g - w) <= tol * std::fmax(1.0, std::fabs(w))
                                     : (std::isnan(w) ? std::isnan(g) : g == w);
    if (!ok) {
      if (bad < 3) BOOST_TEST_MESSAGE("voxel " << i << ": got " << g << ", want " << w);
      ++bad;
    }
  }
  return bad;
}

using Unary = std::function<double(double)>;
struct UnaryCase {
  const char* name;
  void (*op)(Image3D&, const Image3D&, StreamT);
  void (*opM)(Image3D&, const Image3D&, const Image3D&, StreamT);
  void (*opI)(Image3D&, StreamT);
  void (*opIM)(Image3D&, const Image3D&, StreamT);
  Unary ref;
  float lo, hi;
};

#define UNARY_CASE(OP, REF, LO, HI)                                                       \
  UnaryCase {                                                                             \
    #OP, &Opers::OP, &Opers::OP, &Opers::OP##_I, &Opers::OP##_I, [](double x) { return REF; }, LO, HI \
  }

const std::vector<UnaryCase>& unaryCases() {
  static const std::vector<UnaryCase> cases = {
      UNARY_CASE(Abs, std::fabs(x), -2, 2),
      UNARY_CASE(Cube, x * x * x, -2, 2),
      UNARY_CASE(Exp, std::exp(x), -2, 2),
      UNARY_CASE(Log, std::log(x), 0.1f, 3),
      UNARY_CASE(Neg, -x, -2, 2),
      UNARY_CASE(Ramp, x > 0 ? x : 0, -2, 2),
      UNARY_CASE(Sgn, x > 0 ? 1 : (x < 0 ? -1 : 0), -2, 2),
      UNARY_CASE(Step, x > 0 ? 1 : (x < 0 ? 0 : 0.5), -2, 2),
      UNARY_CASE(Sqr, x * x, -2, 2),
      UNARY_CASE(Sqrt, std::sqrt(x), 0, 3),
      UNARY_CASE(Inv, 1 / x, 0.2f, 3),
      UNARY_CASE(Ceil, std::ceil(x), -3, 3),
      UNARY_CASE(Floor, std::floor(x), -3, 3),
      UNARY_CASE(Round, std::round(x), -3, 3),
      UNARY_CASE(Sin, std::sin(x), -3, 3),
      UNARY_CASE(Asin, std::asin(x), -0.99f, 0.99f),
      UNARY_CASE(Cos, std::cos(x), -3, 3),
      UNARY_CASE(Acos, std::acos(x), -0.99f, 0.99f),
      UNARY_CASE(Tan, std::tan(x), -1.2f, 1.2f),
      UNARY_CASE(Atan, std::atan(x), -3, 3),
      UNARY_CASE(Csc, 1 / std::sin(x), 0.2f, 2.9f),
      UNARY_CASE(Sec, 1 / std::cos(x), -1.2f, 1.2f),
      UNARY_CASE(Cot, 1 / std::tan(x), 0.2f, 1.4f),
  };
  return cases;
}

using Binary = std::function<double(double, double)>;
struct BinaryCase {
  const char* name;
  void (*op)(Image3D&, const Image3D&, const Image3D&, StreamT);
  void (*opC)(Image3D&, const Image3D&, const float&, StreamT, bool);
  void (*opCM)(Image3D&, const Image3D&, const float&, const Image3D&, StreamT, bool);
  void (*opI)(Image3D&, const Image3D&, const Image3D&, StreamT);  // masked _I
  void (*opCI)(Image3D&, const float&, StreamT, bool);
  Binary ref;
};

#define BINARY_CASE(OP, REF)                                                                    \
  BinaryCase {                                                                                  \
    #OP, &Opers::OP, &Opers::OP##C, &Opers::OP##C, &Opers::OP##_I, &Opers::OP##C_I,             \
        [](double a, double b) { return REF; }                                                  \
  }

const std::vector<BinaryCase>& binaryCases() {
  static const std::vector<BinaryCase> cases = {
      BINARY_CASE(Add, a + b),  BINARY_CASE(Sub, a - b),
      BINARY_CASE(Mul, a * b),  BINARY_CASE(Div, a / b),
      BINARY_CASE(Max, a > b ? a : b), BINARY_CASE(Min, a < b ? a : b),
      BINARY_CASE(Atan2, std::atan2(a, b)),
      BINARY_CASE(GT, a > b),   BINARY_CASE(GTE, a >= b),
      BINARY_CASE(EQ, a == b),  BINARY_CASE(NEQ, a != b),
      BINARY_CASE(LT, a < b),   BINARY_CASE(LTE, a <= b),
  };
  return cases;
}

}  // namespace

BOOST_AUTO_TEST_CASE(unary_all_forms) {
  for (const GridInfo& g : kGrids) {
    Image3D a(g, MEM_HOST), o(g, MEM_HOST), m(g, MEM_HOST), ref(g, MEM_HOST);
    makeMask(m);
    for (const UnaryCase& c : unaryCases()) {
      BOOST_TEST_CONTEXT(c.name << " on " << g.size()) {
        fill(a, 11, c.lo, c.hi);
        const float* pa = a.get();
        auto want = [&](size_t i) { return c.ref(pa[i]); };
        c.op(o, a, nullptr);
        BOOST_TEST(mismatches(o, want, 2e-6) == 0u);
        // masked: the sentinel survives where mask == 0
        Opers::SetMem(o, 42.f);
        c.opM(o, a, m, nullptr);
        BOOST_TEST(mismatches(o, [&](size_t i) { return m.get(i) != 0.f ? want(i) : 42.0; }, 2e-6) == 0u);
        // in place equals out of place, exactly
        Opers::Copy(ref, a);
        c.op(o, a, nullptr);
        c.opI(ref, nullptr);
        BOOST_TEST(mismatches(ref, [&](size_t i) { return double(o.get(i)); }, 0.0) == 0u);
        Opers::Copy(ref, a);
        c.opIM(ref, m, nullptr);
        BOOST_TEST(mismatches(ref, [&](size_t i) { return m.get(i) != 0.f ? double(o.get(i)) : double(pa[i]); }, 0.0) == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(unary_special_values) {
  Image3D a(GridInfo(Vec3Di(6, 1, 1)), MEM_HOST), o(a.grid(), MEM_HOST);
  const float in[6] = {-2.5f, -0.5f, -0.f, 0.f, 0.5f, 2.5f};
  for (size_t i = 0; i < 6; ++i) a.set(i, in[i]);
  Opers::Round(o, a);  // half away from zero
  const float round[6] = {-3.f, -1.f, 0.f, 0.f, 1.f, 3.f};
  for (size_t i = 0; i < 6; ++i) BOOST_TEST(o.get(i) == round[i]);
  Opers::Step(o, a);
  const float step[6] = {0.f, 0.f, 0.5f, 0.5f, 1.f, 1.f};
  for (size_t i = 0; i < 6; ++i) BOOST_TEST(o.get(i) == step[i]);
  Opers::Sgn(o, a);
  const float sgn[6] = {-1.f, -1.f, 0.f, 0.f, 1.f, 1.f};
  for (size_t i = 0; i < 6; ++i) BOOST_TEST(o.get(i) == sgn[i]);
}

BOOST_AUTO_TEST_CASE(binary_all_forms) {
  for (const GridInfo& g : kGrids) {
    Image3D a(g, MEM_HOST), b(g, MEM_HOST), o(g, MEM_HOST), m(g, MEM_HOST), r(g, MEM_HOST);
    fill(a, 3, -2.f, 2.f);
    fill(b, 5, 0.25f, 2.f);
    for (size_t i = 0; i < a.nVox(); i += 7) b.set(i, a.get(i));  // ties for the comparisons
    makeMask(m);
    const float c = 0.75f;
    const float *pa = a.get(), *pb = b.get();
    for (const BinaryCase& k : binaryCases()) {
      BOOST_TEST_CONTEXT(k.name << " on " << g.size()) {
        k.op(o, a, b, nullptr);
        BOOST_TEST(mismatches(o, [&](size_t i) { return k.ref(pa[i], pb[i]); }, 2e-6) == 0u);
        k.opC(o, a, c, nullptr, false);
        BOOST_TEST(mismatches(o, [&](size_t i) { return k.ref(pa[i], c); }, 2e-6) == 0u);
        Opers::SetMem(o, -7.f);
        k.opCM(o, a, c, m, nullptr, false);
        BOOST_TEST(mismatches(o, [&](size_t i) { return m.get(i) != 0.f ? k.ref(pa[i], c) : -7.0; }, 2e-6) == 0u);
        Opers::Copy(r, a);
        k.opI(r, b, m, nullptr);
        BOOST_TEST(mismatches(r, [&](size_t i) { return m.get(i) != 0.f ? k.ref(pa[i], pb[i]) : pa[i]; }, 2e-6) == 0u);
        Opers::Copy(r, a);
        k.opCI(r, c, nullptr, false);
        BOOST_TEST(mismatches(r, [&](size_t i) { return k.ref(pa[i], c); }, 2e-6) == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(comparisons_are_exactly_one_or_zero) {
  Image3D a(kGrids[1], MEM_HOST), o(kGrids[1], MEM_HOST);
  fill(a, 9);
  Opers::GTC(o, a, 0.f);
  for (size_t i = 0; i < o.nVox(); ++i) BOOST_TEST((o.get(i) == 1.f || o.get(i) == 0.f));
}

BOOST_AUTO_TEST_CASE(fused_image_ops) {
  const GridInfo& g = kGrids[0];
  Image3D a(g, MEM_HOST), b(g, MEM_HOST), c(g, MEM_HOST), o(g, MEM_HOST), r(g, MEM_HOST);
  fill(a, 21);
  fill(b, 22);
  fill(c, 23, 0.5f, 2.f);
  const float k = -1.5f, p = 0.25f, q = 3.f, s = -0.5f;
  const float *A = a.get(), *B = b.get(), *C = c.get();
  struct Case {
    const char* name;
    std::function<void()> run, runI;  // runI works on r = copy of a
    std::function<double(size_t)> ref;
  };
  using namespace Opers;
  const std::vector<Case> cases = {
      {"PowC", [&] { PowC(o, c, k); }, nullptr, [&](size_t i) { return std::pow(double(C[i]), k); }},
      {"AbsDiff", [&] { AbsDiff(o, a, b); }, [&] { AbsDiff_I(r, b); }, [&](size_t i) { return std::fabs(A[i] - double(B[i])); }},
      {"SqrDiff", [&] { SqrDiff(o, a, b); }, [&] { SqrDiff_I(r, b); }, [&](size_t i) { double d = A[i] - double(B[i]); return d * d; }},
      {"MulMul", [&] { MulMul(o, a, b, c); }, [&] { MulMul_I(r, b, c); }, [&](size_t i) { return double(A[i]) * B[i] * C[i]; }},
      {"MulAdd", [&] { MulAdd(o, a, b, c); }, [&] { MulAdd_I(r, b, c); }, [&](size_t i) { return double(A[i]) * B[i] + C[i]; }},
      {"MulSub", [&] { MulSub(o, a, b, c); }, [&] { MulSub_I(r, b, c); }, [&](size_t i) { return double(A[i]) * B[i] - C[i]; }},
      {"AddMul", [&] { AddMul(o, a, b, c); }, [&] { AddMul_I(r, b, c); }, [&](size_t i) { return (double(A[i]) + B[i]) * C[i]; }},
      {"AddDiv", [&] { AddDiv(o, a, b, c); }, [&] { AddDiv_I(r, b, c); }, [&](size_t i) { return (double(A[i]) + B[i]) / C[i]; }},
      {"SubMul", [&] { SubMul(o, a, b, c); }, [&] { SubMul_I(r, b, c); }, [&](size_t i) { return (double(A[i]) - B[i]) * C[i]; }},
      {"SubDiv", [&] { SubDiv(o, a, b, c); }, [&] { SubDiv_I(r, b, c); }, [&](size_t i) { return (double(A[i]) - B[i]) / C[i]; }},
      {"Add_Mul", [&] { Add_Mul(o, a, b, c); }, [&] { Add_Mul_I(r, b, c); }, [&](size_t i) { return A[i] + double(B[i]) * C[i]; }},
      {"Sub_Mul", [&] { Sub_Mul(o, a, b, c); }, [&] { Sub_Mul_I(r, b, c); }, [&](size_t i) { return A[i] - double(B[i]) * C[i]; }},
      {"Add_AddMulC", [&] { Add_AddMulC(o, a, b, c, k); }, [&] { Add_AddMulC_I(r, b, c, k); }, [&](size_t i) { return A[i] + (double(B[i]) + C[i]) * k; }},
      {"Add_SubMulC", [&] { Add_SubMulC(o, a, b, c, k); }, [&] { Add_SubMulC_I(r, b, c, k); }, [&](size_t i) { return A[i] + (double(B[i]) - C[i]) * k; }},
      {"Add_MulMulC", [&] { Add_MulMulC(o, a, b, c, k); }, [&] { Add_MulMulC_I(r, b, c, k); }, [&](size_t i) { return A[i] + double(B[i]) * C[i] * k; }},
      {"Sub_AddMulC", [&] { Sub_AddMulC(o, a, b, c, k); }, [&] { Sub_AddMulC_I(r, b, c, k); }, [&](size_t i) { return A[i] - (double(B[i]) + C[i]) * k; }},
      {"Sub_SubMulC", [&] { Sub_SubMulC(o, a, b, c, k); }, [&] { Sub_SubMulC_I(r, b, c, k); }, [&](size_t i) { return A[i] - (double(B[i]) - C[i]) * k; }},
      {"Sub_MulMulC", [&] { Sub_MulMulC(o, a, b, c, k); }, [&] { Sub_MulMulC_I(r, b, c, k); }, [&](size_t i) { return A[i] - double(B[i]) * C[i] * k; }},
      {"AddMulC", [&] { AddMulC(o, a, b, k); }, [&] { AddMulC_I(r, b, k); }, [&](size_t i) { return (double(A[i]) + B[i]) * k; }},
      {"SubMulC", [&] { SubMulC(o, a, b, k); }, [&] { SubMulC_I(r, b, k); }, [&](size_t i) { return (double(A[i]) - B[i]) * k; }},
      {"MulMulC", [&] { MulMulC(o, a, b, k); }, [&] { MulMulC_I(r, b, k); }, [&](size_t i) { return double(A[i]) * B[i] * k; }},
      {"Add_MulC", [&] { Add_MulC(o, a, b, k); }, [&] { Add_MulC_I(r, b, k); }, [&](size_t i) { return A[i] + double(B[i]) * k; }},
      {"MulCAdd", [&] { MulCAdd(o, a, k, b); }, [&] { MulCAdd_I(r, k, b); }, [&](size_t i) { return double(A[i]) * k + B[i]; }},
      {"MulCSub", [&] { MulCSub(o, a, k, b); }, [&] { MulCSub_I(r, k, b); }, [&](size_t i) { return double(A[i]) * k - B[i]; }},
      {"MulCAddC", [&] { MulCAddC(o, a, p, q); }, [&] { MulCAddC_I(r, p, q); }, [&](size_t i) { return double(A[i]) * p + q; }},
      {"AddCMulC", [&] { AddCMulC(o, a, p, q); }, [&] { AddCMulC_I(r, p, q); }, [&](size_t i) { return (double(A[i]) + p) * q; }},
      {"MulC_Add_MulC", [&] { MulC_Add_MulC(o, a, p, b, q); }, [&] { MulC_Add_MulC_I(r, p, b, q); }, [&](size_t i) { return double(A[i]) * p + double(B[i]) * q; }},
      {"AddCMulCAddC", [&] { AddCMulCAddC(o, a, p, q, s); }, [&] { AddCMulCAddC_I(r, p, q, s); }, [&](size_t i) { return (double(A[i]) + p) * q + s; }},
      {"Shrink", [&] { Shrink(o, a, p); }, [&] { Shrink_I(r, p); }, [&](size_t i) { double x = A[i]; return std::fmax(x - p, 0.0) + std::fmin(x + p, 0.0); }},
      {"SoftAbs", [&] { SoftAbs(o, a, p); }, [&] { SoftAbs_I(r, p); }, [&](size_t i) { double x = std::fabs(A[i]); return x > p ? x - p / 2.0 : x * x / (2.0 * p); }},
      {"SoftSgn", [&] { SoftSgn(o, a, p); }, [&] { SoftSgn_I(r, p); }, [&](size_t i) { return std::fmax(-1.0, std::fmin(1.0, A[i] / double(p))); }},
  };
  for (const Case& t : cases) {
    BOOST_TEST_CONTEXT(t.name) {
      t.run();
      BOOST_TEST(mismatches(o, t.ref, 4e-6) == 0u);
      if (t.runI) {
        Copy(r, a);
        t.runI();
        BOOST_TEST(mismatches(r, [&](size_t i) { return double(o.get(i)); }, 0.0) == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(field_ops_broadcast_and_vector_constants) {
  for (const GridInfo& g : kGrids) {
    Field3D f(g, MEM_HOST), h(g, MEM_HOST), o(g, MEM_HOST);
    Image3D im(g, MEM_HOST);
    fill(f, 31);
    fill(h, 32, 0.5f, 2.f);
    fill(im, 33, 0.5f, 2.f);
    const Vec3Df v(0.5f, -2.f, 3.f), w(1.f, 0.25f, -1.f);
    auto check = [&](const char* what, auto ref) {
      size_t bad = 0;
      for (size_t i = 0; i < o.nVox(); ++i) {
        const Vec3Df got = o.get(i);
        for (int d = 0; d < 3; ++d) {
          const double want = ref(i, d);
          if (std::fabs(got[d] - want) > 4e-6 * std::fmax(1.0, std::fabs(want))) ++bad;
        }
      }
      BOOST_TEST(bad == 0u, what << " on " << g.size() << ": " << bad << " values off");
    };
    auto F = [&](size_t i, int d) { return double(f.getComponent(d)[i]); };
    auto H = [&](size_t i, int d) { return double(h.getComponent(d)[i]); };
    auto I = [&](size_t i) { return double(im.get(i)); };
    Opers::Mul(o, f, im);
    check("Mul(Fld, Fld, Im)", [&](size_t i, int d) { return F(i, d) * I(i); });
    Opers::Div(o, f, h);
    check("Div(Fld, Fld, Fld)", [&](size_t i, int d) { return F(i, d) / H(i, d); });
    Opers::Copy(o, f);
    Opers::Sub_I(o, im);
    check("Sub_I(Fld, Im)", [&](size_t i, int d) { return F(i, d) - I(i); });
    Opers::AddC(o, f, v);
    check("AddC(Fld, Fld, Vec3Df)", [&](size_t i, int d) { return F(i, d) + v[d]; });
    Opers::Copy(o, f);
    Opers::MaxC_I(o, 0.1f);
    check("MaxC_I(Fld, float)", [&](size_t i, int d) { return std::fmax(F(i, d), 0.1); });
    Opers::Min(o, f, h);
    check("Min(Fld, Fld, Fld)", [&](size_t i, int d) { return std::fmin(F(i, d), H(i, d)); });
    Opers::MulCAddC(o, f, v, w);
    check("MulCAddC(Fld, Vec3Df, Vec3Df)", [&](size_t i, int d) { return F(i, d) * v[d] + w[d]; });
    Opers::AddCMulCAddC(o, f, v, w, v);
    check("AddCMulCAddC(Fld, Vec3Df x3)", [&](size_t i, int d) { return (F(i, d) + v[d]) * w[d] + v[d]; });
    Opers::Add_MulMulC(o, f, h, im, 0.5f);
    check("Add_MulMulC(Fld, Fld, Fld, Im)", [&](size_t i, int d) { return F(i, d) + H(i, d) * I(i) * 0.5; });
    Opers::Sub_Mul(o, f, h, im);
    check("Sub_Mul(Fld, Fld, Fld, Im)", [&](size_t i, int d) { return F(i, d) - H(i, d) * I(i); });
    Opers::MulC_Add_MulC(o, f, 2.f, h, -1.f);
    check("MulC_Add_MulC(Fld)", [&](size_t i, int d) { return 2.0 * F(i, d) - H(i, d); });
    Opers::Copy(o, f);
    Opers::Shrink_I(o, 0.75f);
    check("Shrink_I(Fld)", [&](size_t i, int d) {
      const double len = std::sqrt(F(i, 0) * F(i, 0) + F(i, 1) * F(i, 1) + F(i, 2) * F(i, 2));
      return len > 0.75 ? F(i, d) * (len - 0.75) / len : 0.0;
    });
    // masked SetMem with a vector leaves unmasked voxels untouched
    Image3D m(g, MEM_HOST);
    makeMask(m);
    Opers::Copy(o, f);
    Opers::SetMem(o, v, m);
    check("SetMem(Fld, Vec3Df, mask)", [&](size_t i, int d) { return m.get(i) != 0.f ? double(v[d]) : F(i, d); });
  }
}

BOOST_AUTO_TEST_CASE(is1d) {
  // Is1D(f, n): the components lie back to back with stride n, i.e. the
  // field is continuous and n is its capacity.
  Field3D f(GridInfo(Vec3Di(8, 16, 1)), MEM_HOST), g(GridInfo(Vec3Di(3, 5, 7)), MEM_HOST);
  for (const Field3D* h : {&f, &g}) {
    BOOST_TEST(Opers::Is1D(*h, h->capacity()) == h->isContinuous());
    BOOST_TEST(!Opers::Is1D(*h, h->capacity() + 1));
    BOOST_TEST(!Opers::Is1D(*h, h->nVox() - 1));
  }
  BOOST_TEST(Opers::Is1D(f, g, f.capacity()) == (f.isContinuous() && g.isContinuous() && f.capacity() == g.capacity()));
  BOOST_TEST(!Opers::Is1D(f, f, f, f, f.capacity() + 1));
}

BOOST_AUTO_TEST_CASE(checks_and_messages) {
  Image3D a(kGrids[0], MEM_HOST), b(kGrids[1], MEM_HOST), o(kGrids[0], MEM_HOST);
  Field3D f(kGrids[0], MEM_HOST), h(kGrids[1], MEM_HOST);
  fill(a, 1);
  CHECK_PYCA_THROW(Opers::Sub(o, a, b), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(Opers::Atan2C(o, b, 1.f), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(Opers::Exp(o, a, b), PyCAException, "Input grids are not equal");  // mask grid
  CHECK_PYCA_THROW(Opers::MulMul(o, a, a, b), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(Opers::Mul(f, f, b), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(Opers::Add_MulC(f, f, h, 1.f), PyCAException, "Input grids are not equal");
  // spacing alone differs
  GridInfo g2 = kGrids[0];
  g2.setSpacing(Vec3Df(1.f, 1.f, 1.f));
  Image3D c(g2, MEM_HOST);
  CHECK_PYCA_THROW(Opers::Add(o, a, c), PyCAException, "Input grids are not equal");
  // nothing written when the check fails
  Opers::SetMem(o, 3.f);
  BOOST_CHECK_THROW(Opers::Add(o, a, c), PyCAException);
  for (size_t i = 0; i < o.nVox(); ++i) BOOST_REQUIRE(o.get(i) == 3.f);
}

BOOST_AUTO_TEST_CASE(gpu_parity, *utf::precondition(GpuAvailable())) {
  const GridInfo& g = kGrids[0];
  Image3D a(g, MEM_HOST), b(g, MEM_HOST), o(g, MEM_HOST), back(g, MEM_HOST);
  Image3D da(g, MEM_DEVICE), db(g, MEM_DEVICE), dout(g, MEM_DEVICE), dm(g, MEM_DEVICE);
  Image3D m(g, MEM_HOST);
  fill(a, 1, 0.1f, 2.f);
  fill(b, 2, 0.1f, 2.f);
  makeMask(m);
  Opers::Copy(da, a);
  Opers::Copy(db, b);
  Opers::Copy(dm, m);
  struct P {
    const char* name;
    std::function<void(Image3D&, const Image3D&, const Image3D&, const Image3D&)> run;
  };
  const std::vector<P> ops = {
      {"Exp", [](Image3D& o, const Image3D& a, const Image3D&, const Image3D&) { Opers::Exp(o, a); }},
      {"Sqrt masked", [](Image3D& o, const Image3D& a, const Image3D&, const Image3D& m) { Opers::Sqrt(o, a, m); }},
      {"Atan2", [](Image3D& o, const Image3D& a, const Image3D& b, const Image3D&) { Opers::Atan2(o, a, b); }},
      {"GTEC", [](Image3D& o, const Image3D& a, const Image3D&, const Image3D&) { Opers::GTEC(o, a, 1.f); }},
      {"MulC_Add_MulC", [](Image3D& o, const Image3D& a, const Image3D& b, const Image3D&) { Opers::MulC_Add_MulC(o, a, 2.f, b, -3.f); }},
      {"PowC", [](Image3D& o, const Image3D& a, const Image3D&, const Image3D&) { Opers::PowC(o, a, 1.7f); }},
  };
  for (const P& p : ops) {
    BOOST_TEST_CONTEXT(p.name) {
      Opers::SetMem(o, 5.f);
      Opers::SetMem(dout, 5.f);
      p.run(o, a, b, m);
      p.run(dout, da, db, dm);
      Opers::Copy(back, dout);
      double maxErr = 0, sumErr = 0;
      for (size_t i = 0; i < o.nVox(); ++i) {
        const double e = std::fabs(double(back.get(i)) - o.get(i)) / std::fmax(1.0, std::fabs(o.get(i)));
        maxErr = std::fmax(maxErr, e);
        sumErr += e;
      }
      BOOST_TEST(maxErr <= 2e-6);
      BOOST_TEST(sumErr / o.nVox() <= 2e-7);
    }
  }
}
