// test_memopers.cxx -- the legacy raw-array operators (MemOpers.h):
// MemOpers<EXEC_CPU, float> and the Opers:: raw-pointer templates against
// plain loops computed here in double, in and out of place, on arrays below
// and above the OpenMP threshold; the index operators (SetLinear,
// ReverseOrder, ShiftCoordinate, Pow); argument errors; and, with a GPU,
// EXEC_GPU / EXEC_GPU_PARAM against the CPU results.
#define BOOST_TEST_MODULE PyCA MemOpers
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "MemAlloc.h"
#include "MemOpers.h"
#include "PyCAException.h"
#include "pycaConst.h"

using namespace PyCA;
namespace utf = boost::unit_test;

namespace {

typedef MemOpers<EXEC_CPU, float> CM;
typedef MemOpers<EXEC_GPU, float> GM;

/// Below and above the 32768-element OpenMP threshold, odd sizes.
const size_t kSizes[] = {37, 40001};

std::vector<float> randomVec(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = r.next(lo, hi);
  return v;
}

/// Elements where |got - want| > tol * max(1, |want|).
template <class F>
size_t mismatches(const std::vector<float>& got, F want, double tol = 2e-6) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want(i), g = got[i];
    const bool ok = std::isfinite(w) ? std::fabs(g - w) <= tol * std::fmax(1.0, std::fabs(w))
                                     : (std::isnan(w) ? std::isnan(g) : g == w);
    if (!ok) {
      if (bad < 3) BOOST_TEST_MESSAGE("element " << i << ": got " << g << ", want " << w);
      ++bad;
    }
  }
  return bad;
}

struct UnaryCase {
  const char* name;
  void (*op)(float*, const float*, size_t, StreamT);
  void (*opI)(float*, size_t, StreamT);
  void (*gop)(float*, const float*, size_t, StreamT);  // the EXEC_GPU twin
  std::function<double(double)> ref;
  float lo, hi;
};
#define UNARY_CASE(OP, REF, LO, HI) \
  UnaryCase { #OP, &CM::OP, &CM::OP##_I, &GM::OP, [](double x) { return REF; }, LO, HI }

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

struct BinaryCase {
  const char* name;
  void (*op)(float*, const float*, const float*, size_t, StreamT);
  void (*opI)(float*, const float*, size_t, StreamT);
  void (*opC)(float*, const float*, const float&, size_t, StreamT, bool);
  void (*opCI)(float*, const float&, size_t, StreamT, bool);
  void (*opPlainC)(float*, const float*, const float&, size_t, StreamT, bool);
  void (*opPlainCI)(float*, const float&, size_t, StreamT, bool);
  void (*gop)(float*, const float*, const float*, size_t, StreamT);  // the EXEC_GPU twins
  void (*gopC)(float*, const float*, const float&, size_t, StreamT, bool);
  std::function<double(double, double)> ref;
  float lo, hi;
};
#define BINARY_CASE(OP, REF, LO, HI)                                                       \
  BinaryCase {                                                                             \
    #OP, &CM::OP, &CM::OP##_I, &CM::OP##C, &CM::OP##C_I, &CM::OP, &CM::OP##_I, &GM::OP,    \
        &GM::OP##C, [](double a, double b) { return REF; }, LO, HI                         \
  }

const std::vector<BinaryCase>& binaryCases() {
  static const std::vector<BinaryCase> cases = {
      BINARY_CASE(Add, a + b, -2, 2),
      BINARY_CASE(Sub, a - b, -2, 2),
      BINARY_CASE(Mul, a * b, -2, 2),
      BINARY_CASE(Div, a / b, 0.5f, 2),
      BINARY_CASE(Max, a > b ? a : b, -2, 2),
      BINARY_CASE(Min, a < b ? a : b, -2, 2),
      BINARY_CASE(Pow, std::pow(a, b), 0.2f, 2),
      BINARY_CASE(Atan2, std::atan2(a, b), -2, 2),
      BINARY_CASE(GT, a > b ? 1 : 0, -1, 1),
      BINARY_CASE(GTE, a >= b ? 1 : 0, -1, 1),
      BINARY_CASE(EQ, a == b ? 1 : 0, -1, 1),
      BINARY_CASE(NEQ, a != b ? 1 : 0, -1, 1),
      BINARY_CASE(LT, a < b ? 1 : 0, -1, 1),
      BINARY_CASE(LTE, a <= b ? 1 : 0, -1, 1),
  };
  return cases;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cpu)

BOOST_AUTO_TEST_CASE(legacy_names) {
  BOOST_TEST(int(CM::exec_mode) == EXEC_CPU);
  BOOST_TEST(int(MemOpers<EXEC_GPU, float>::exec_mode) == EXEC_GPU);
  BOOST_TEST((std::is_same<CM::MemOpersExec, CM>::value));
}

BOOST_AUTO_TEST_CASE(copy_setmem_linear) {
  for (size_t n : kSizes) {
    const std::vector<float> a = randomVec(n, 1);
    std::vector<float> o(n, 7.f);
    CM::Copy(o.data(), a.data(), n);
    BOOST_TEST(o == a);
    CM::SetMem(o.data(), 2.5f, n);
    BOOST_TEST(mismatches(o, [](size_t) { return 2.5; }, 0) == 0u);
    CM::SetLinear(o.data(), n);
    BOOST_TEST(mismatches(o, [](size_t i) { return double(i); }, 0) == 0u);
    CM::SetLinearDown(o.data(), n);
    BOOST_TEST(mismatches(o, [n](size_t i) { return double(n - 1 - i); }, 0) == 0u);
    // Opers:: forms
    Opers::SetMem<EXEC_CPU>(o.data(), -1.f, n);
    BOOST_TEST(mismatches(o, [](size_t) { return -1.0; }, 0) == 0u);
    Opers::Copy<EXEC_CPU>(o.data(), a.data(), n);
    BOOST_TEST(o == a);
    Opers::SetLinear<EXEC_CPU>(o.data(), n);
    BOOST_TEST(o[n - 1] == float(n - 1));
  }
}

BOOST_AUTO_TEST_CASE(reverse_order) {
  for (size_t n : {size_t(1), size_t(2), size_t(36), size_t(37), size_t(40001)}) {
    const std::vector<float> a = randomVec(n, 2);
    std::vector<float> o(n, 0.f);
    CM::ReverseOrder(o.data(), a.data(), n);
    BOOST_TEST(mismatches(o, [&](size_t i) { return a[n - 1 - i]; }, 0) == 0u);
    std::vector<float> inPlace = a;
    Opers::ReverseOrder<EXEC_CPU>(inPlace.data(), inPlace.data(), n);
    BOOST_TEST(inPlace == o);
  }
}

BOOST_AUTO_TEST_CASE(shift_coordinate) {
  const size_t sx = 5, sy = 4, sz = 3, n = sx * sy * sz;
  std::vector<float> in(n), outT(n, -1.f), outF(n, -1.f);
  for (size_t i = 0; i < n; ++i) in[i] = float(i);
  CM::ShiftCoordinate(outT.data(), in.data(), sx, sy, sz, true);
  Opers::ShiftCoordinate<EXEC_CPU>(outF.data(), in.data(), sx, sy, sz, false);
  for (size_t z = 0; z < sz; ++z)
    for (size_t y = 0; y < sy; ++y)
      for (size_t x = 0; x < sx; ++x) {
        const float v = in[x + sx * (y + sy * z)];
        BOOST_TEST(outT[z + sz * (x + sx * y)] == v);  // output grid (sz, sx, sy)
        BOOST_TEST(outF[y + sy * (z + sz * x)] == v);  // output grid (sy, sz, sx)
      }
  // the two directions are inverse cycles: true on (sz, sx, sy) data, then
  // false, gives the input back
  std::vector<float> back(n);
  CM::ShiftCoordinate(back.data(), outT.data(), sz, sx, sy, false);
  BOOST_TEST(back == in);
  CHECK_PYCA_THROW(CM::ShiftCoordinate(in.data(), in.data(), sx, sy, sz, true), PyCAException,
                   "in place");
  CHECK_PYCA_THROW(CM::ShiftCoordinate(outT.data(), in.data(), size_t(1) << 40, size_t(1) << 40, 2, true),
                   PyCAException, "overflows");
}

BOOST_AUTO_TEST_CASE(unary_all) {
  for (const UnaryCase& c : unaryCases()) {
    BOOST_TEST_CONTEXT(c.name) {
      for (size_t n : kSizes) {
        const std::vector<float> a = randomVec(n, 3, c.lo, c.hi);
        std::vector<float> o(n, 9.f);
        c.op(o.data(), a.data(), n, nullptr);
        BOOST_TEST(mismatches(o, [&](size_t i) { return c.ref(a[i]); }) == 0u);
        std::vector<float> io = a;
        c.opI(io.data(), n, nullptr);
        BOOST_TEST(io == o);
      }
    }
  }
  // the Opers:: template forwards
  const std::vector<float> a = randomVec(100, 4, 0.f, 4.f);
  std::vector<float> o(100);
  Opers::Sqrt<EXEC_CPU>(o.data(), a.data(), o.size());
  BOOST_TEST(mismatches(o, [&](size_t i) { return std::sqrt(double(a[i])); }) == 0u);
  Opers::Neg_I<EXEC_CPU>(o.data(), o.size());
  BOOST_TEST(mismatches(o, [&](size_t i) { return -std::sqrt(double(a[i])); }) == 0u);
}

BOOST_AUTO_TEST_CASE(binary_all_forms) {
  const float c = 0.75f;
  for (const BinaryCase& bc : binaryCases()) {
    BOOST_TEST_CONTEXT(bc.name) {
      for (size_t n : kSizes) {
        const std::vector<float> a = randomVec(n, 5, bc.lo, bc.hi);
        std::vector<float> b = randomVec(n, 6, bc.lo, bc.hi);
        for (size_t i = 0; i < n; i += 7) b[i] = a[i];  // exercise the equal case
        std::vector<float> o(n, 9.f);
        bc.op(o.data(), a.data(), b.data(), n, nullptr);
        BOOST_TEST(mismatches(o, [&](size_t i) { return bc.ref(a[i], b[i]); }) == 0u);
        std::vector<float> io = a;
        bc.opI(io.data(), b.data(), n, nullptr);
        BOOST_TEST(io == o);
        bc.opC(o.data(), a.data(), c, n, nullptr, false);
        BOOST_TEST(mismatches(o, [&](size_t i) { return bc.ref(a[i], c); }) == 0u);
        std::vector<float> o2(n, 9.f);
        bc.opPlainC(o2.data(), a.data(), c, n, nullptr, false);
        BOOST_TEST(o2 == o);
        io = a;
        bc.opCI(io.data(), c, n, nullptr, false);
        BOOST_TEST(io == o);
        io = a;
        bc.opPlainCI(io.data(), c, n, nullptr, false);
        BOOST_TEST(io == o);
      }
    }
  }
  std::vector<float> a = randomVec(50, 7), b = randomVec(50, 8), o(50);
  Opers::Add<EXEC_CPU>(o.data(), a.data(), b.data(), o.size());
  BOOST_TEST(mismatches(o, [&](size_t i) { return double(a[i]) + b[i]; }) == 0u);
  Opers::MulC<EXEC_CPU>(o.data(), a.data(), 3.f, o.size());
  BOOST_TEST(mismatches(o, [&](size_t i) { return 3.0 * a[i]; }) == 0u);
  Opers::Sub_I<EXEC_CPU>(o.data(), 1.f, o.size());
  BOOST_TEST(mismatches(o, [&](size_t i) { return 3.0 * a[i] - 1; }) == 0u);
  const std::vector<float> b0 = b;
  Opers::PowC_I<EXEC_CPU>(b.data(), 2.f, b.size());
  BOOST_TEST(mismatches(b, [&](size_t i) { return double(b0[i]) * b0[i]; }) == 0u);
}

BOOST_AUTO_TEST_CASE(fused) {
  const size_t n = 40001;
  const std::vector<float> a = randomVec(n, 11), b = randomVec(n, 12), c = randomVec(n, 13, 0.5f, 2.f);
  const float k = -1.5f, p = 0.25f, q = 3.f;
  std::vector<float> o(n), io;
  auto A = [&](size_t i) { return double(a[i]); };
  auto B = [&](size_t i) { return double(b[i]); };
  auto C = [&](size_t i) { return double(c[i]); };

  CM::AbsDiff(o.data(), a.data(), b.data(), n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return std::fabs(A(i) - B(i)); }) == 0u);
  CM::SqrDiff(o.data(), a.data(), b.data(), n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return (A(i) - B(i)) * (A(i) - B(i)); }) == 0u);
  CM::MulAdd(o.data(), a.data(), b.data(), c.data(), n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) * B(i) + C(i); }) == 0u);
  io = a;
  Opers::MulAdd_I<EXEC_CPU>(io.data(), b.data(), c.data(), n);
  BOOST_TEST(io == o);
  CM::SubDiv(o.data(), a.data(), b.data(), c.data(), n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return (A(i) - B(i)) / C(i); }) == 0u);
  CM::Sub_Mul(o.data(), a.data(), b.data(), c.data(), n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) - B(i) * C(i); }) == 0u);
  CM::Add_MulMulC(o.data(), a.data(), b.data(), c.data(), k, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) + B(i) * C(i) * k; }) == 0u);
  io = a;
  CM::Add_MulMulC_I(io.data(), b.data(), c.data(), k, n);
  BOOST_TEST(io == o);
  CM::Sub_SubMulC(o.data(), a.data(), b.data(), c.data(), k, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) - (B(i) - C(i)) * k; }) == 0u);
  CM::AddMulC(o.data(), a.data(), b.data(), k, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return (A(i) + B(i)) * k; }) == 0u);
  CM::Add_MulC_I(io.data(), b.data(), k, n);  // io = a + b*c*k + b*k
  BOOST_TEST(mismatches(io, [&](size_t i) { return A(i) + B(i) * C(i) * k + B(i) * k; }, 1e-5) == 0u);
  CM::MulCAdd(o.data(), a.data(), k, b.data(), n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) * k + B(i); }) == 0u);
  io = a;
  CM::MulCSub_I(io.data(), k, b.data(), n);
  BOOST_TEST(mismatches(io, [&](size_t i) { return A(i) * k - B(i); }) == 0u);
  CM::MulCAddC(o.data(), a.data(), p, q, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) * p + q; }) == 0u);
  CM::AddCMulC(o.data(), a.data(), p, q, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return (A(i) + p) * q; }) == 0u);
  CM::AddCMulCAddC(o.data(), a.data(), p, q, k, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return (A(i) + p) * q + k; }) == 0u);
  io = a;
  Opers::AddCMulCAddC_I<EXEC_CPU>(io.data(), p, q, k, n);
  BOOST_TEST(io == o);
  CM::MulC_Add_MulC(o.data(), a.data(), p, b.data(), q, n);
  BOOST_TEST(mismatches(o, [&](size_t i) { return A(i) * p + B(i) * q; }) == 0u);
  io = a;
  Opers::MulC_Add_MulC_I<EXEC_CPU>(io.data(), p, b.data(), q, n);
  BOOST_TEST(io == o);
}

BOOST_AUTO_TEST_CASE(empty_and_null) {
  float x = 1.f;
  CM::Add(nullptr, nullptr, nullptr, 0);  // n == 0: nothing to do
  CM::SetLinear(nullptr, 0);
  CM::ReverseOrder(nullptr, nullptr, 0);
  CM::ShiftCoordinate(nullptr, nullptr, 0, 4, 4, true);
  CHECK_PYCA_THROW(CM::Add(&x, nullptr, &x, 1), PyCAException, "null array pointer");
  CHECK_PYCA_THROW(CM::SetMem(nullptr, 1.f, 1), PyCAException, "null array pointer");
  CHECK_PYCA_THROW(CM::SetLinear(nullptr, 3), PyCAException, "null array pointer");
  CHECK_PYCA_THROW(CM::Pow(&x, &x, nullptr, 1), PyCAException, "null array pointer");
  CHECK_PYCA_THROW(CM::ReverseOrder(&x, nullptr, 1), PyCAException, "null array pointer");
  CHECK_PYCA_THROW(CM::ShiftCoordinate(&x, nullptr, 1, 1, 1, true), PyCAException, "null array pointer");
  BOOST_TEST(x == 1.f);
}

BOOST_AUTO_TEST_CASE(gpu_modes_without_cuda_throw, *utf::precondition([](utf::test_unit_id) {
                       return !CudaCompiled();
                     })) {
  float x[4] = {1, 2, 3, 4};
  CHECK_PYCA_THROW((MemOpers<EXEC_GPU, float>::Add(x, x, x, 4)), PyCAException, "GPU code not compiled");
  CHECK_PYCA_THROW((MemOpers<EXEC_GPU, float>::SetLinear(x, 4)), PyCAException, "GPU code not compiled");
  CHECK_PYCA_THROW((MemOpers<EXEC_GPU_PARAM, float>::AddC(x, x, x[0], 4)), PyCAException,
                   "GPU code not compiled");
  CHECK_PYCA_THROW((Opers::MulC_I<EXEC_GPU>(x, 2.f, 4)), PyCAException, "GPU code not compiled");
  BOOST_TEST(x[3] == 4.f);
}

BOOST_AUTO_TEST_CASE(gpu_modes_without_a_device_throw, *utf::precondition([](utf::test_unit_id) {
                       return CudaCompiled() && GetNumberOfCUDADevices() == 0;
                     })) {
  // a CUDA build on a machine without a GPU: an exception, not a crash
  float x[4] = {1, 2, 3, 4};
  BOOST_CHECK_THROW((MemOpers<EXEC_GPU, float>::Add(x, x, x, 4)), PyCAException);
  BOOST_CHECK_THROW((MemOpers<EXEC_GPU, float>::ReverseOrder(x, x, 4)), PyCAException);
  BOOST_CHECK_THROW((MemOpers<EXEC_GPU_PARAM, float>::MulC(x, x, x[0], 4)), PyCAException);
  BOOST_TEST(x[3] == 4.f);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- GPU: the same operators on device arrays, compared with the CPU ------------

namespace {

/// A device array of n floats (freed at scope end).
struct DevArray {
  float* p;
  size_t n;
  explicit DevArray(size_t n_) : p(static_cast<float*>(AllocateMemory(MEM_DEVICE, n_ * sizeof(float)))), n(n_) {}
  DevArray(const std::vector<float>& h) : DevArray(h.size()) { upload(h); }
  ~DevArray() { FreeMemory(MEM_DEVICE, p); }
  DevArray(const DevArray&) = delete;
  DevArray& operator=(const DevArray&) = delete;
  void upload(const std::vector<float>& h) { CopyMemory(p, MEM_DEVICE, h.data(), MEM_HOST, n * sizeof(float)); }
  std::vector<float> download() const {
    std::vector<float> h(n);
    CopyMemory(h.data(), MEM_HOST, p, MEM_DEVICE, n * sizeof(float));
    return h;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu, *utf::precondition(GpuAvailable()))

BOOST_AUTO_TEST_CASE(elementwise_match_cpu) {
  // CPU and GPU run the same functors; transcendental functions may differ by
  // an ulp or two (CUDA's sinf vs glibc's), everything else is exact.
  const size_t n = 100003;
  std::vector<float> want(n);
  DevArray dout(n);
  for (const UnaryCase& c : unaryCases()) {
    BOOST_TEST_CONTEXT(c.name) {
      const std::vector<float> a = randomVec(n, 21, c.lo, c.hi);
      DevArray da(a);
      c.gop(dout.p, da.p, n, nullptr);
      c.op(want.data(), a.data(), n, nullptr);
      BOOST_TEST(mismatches(dout.download(), [&](size_t i) { return want[i]; }, 1e-6) == 0u);
    }
  }
  for (const BinaryCase& c : binaryCases()) {
    BOOST_TEST_CONTEXT(c.name) {
      const std::vector<float> a = randomVec(n, 22, c.lo, c.hi), b = randomVec(n, 23, c.lo, c.hi);
      DevArray da(a), db(b);
      c.gop(dout.p, da.p, db.p, n, nullptr);
      c.op(want.data(), a.data(), b.data(), n, nullptr);
      BOOST_TEST(mismatches(dout.download(), [&](size_t i) { return want[i]; }, 1e-6) == 0u);
      c.gopC(dout.p, da.p, 0.75f, n, nullptr, false);
      c.opC(want.data(), a.data(), 0.75f, n, nullptr, false);
      BOOST_TEST(mismatches(dout.download(), [&](size_t i) { return want[i]; }, 1e-6) == 0u);
    }
  }
  const std::vector<float> a = randomVec(n, 24), b = randomVec(n, 25);
  DevArray da(a), db(b);
  GM::MulC_Add_MulC(dout.p, da.p, 0.5f, db.p, -2.f, n);
  CM::MulC_Add_MulC(want.data(), a.data(), 0.5f, b.data(), -2.f, n);
  BOOST_TEST(dout.download() == want);
  Opers::Add_MulMulC_I<EXEC_GPU>(dout.p, da.p, db.p, 3.f, n);
  Opers::Add_MulMulC_I<EXEC_CPU>(want.data(), a.data(), b.data(), 3.f, n);
  BOOST_TEST(mismatches(dout.download(), [&](size_t i) { return want[i]; }, 1e-6) == 0u);
}

BOOST_AUTO_TEST_CASE(constants_in_device_memory) {
  const size_t n = 1000;
  const std::vector<float> a = randomVec(n, 31);
  DevArray da(a), dout(n), dc(std::vector<float>{2.5f, -1.f});
  std::vector<float> want(n);
  CM::AddC(want.data(), a.data(), 2.5f, n);
  GM::AddC(dout.p, da.p, dc.p[0], n, nullptr, true);  // onDev: &c is a device address
  BOOST_TEST(dout.download() == want);
  MemOpers<EXEC_GPU_PARAM, float>::AddC(dout.p, da.p, dc.p[0], n);
  BOOST_TEST(dout.download() == want);
  CM::MulCAddC(want.data(), a.data(), 2.5f, -1.f, n);
  MemOpers<EXEC_GPU_PARAM, float>::MulCAddC(dout.p, da.p, dc.p[0], dc.p[1], n);
  BOOST_TEST(dout.download() == want);
  GM::SetMem(dout.p, 4.f, n);  // a host constant
  BOOST_TEST(mismatches(dout.download(), [](size_t) { return 4.0; }, 0) == 0u);
}

BOOST_AUTO_TEST_CASE(index_operators_match_cpu) {
  const size_t sx = 33, sy = 17, sz = 9, n = sx * sy * sz;
  const std::vector<float> a = randomVec(n, 41);
  DevArray da(a), dout(n);
  std::vector<float> want(n);
  GM::SetLinear(dout.p, n);
  CM::SetLinear(want.data(), n);
  BOOST_TEST(dout.download() == want);
  GM::SetLinearDown(dout.p, n);
  CM::SetLinearDown(want.data(), n);
  BOOST_TEST(dout.download() == want);
  GM::ReverseOrder(dout.p, da.p, n);
  CM::ReverseOrder(want.data(), a.data(), n);
  BOOST_TEST(dout.download() == want);
  GM::ReverseOrder(da.p, da.p, n);  // in place
  BOOST_TEST(da.download() == want);
  da.upload(a);
  for (bool dir : {true, false}) {
    GM::ShiftCoordinate(dout.p, da.p, sx, sy, sz, dir);
    CM::ShiftCoordinate(want.data(), a.data(), sx, sy, sz, dir);
    BOOST_TEST(dout.download() == want);
  }
}

BOOST_AUTO_TEST_SUITE_END()
