// pyca_test_utils.h -- helpers shared by the Boost.Test suites.
#ifndef PYCA_TEST_UTILS_H
#define PYCA_TEST_UTILS_H

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "CudaUtils.h"
#include "Field3D.h"
#include "Image3D.h"
#include "MemAlloc.h"

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Checks that stmt throws ExcT whose what() contains msg.
#define CHECK_PYCA_THROW(stmt, ExcT, msg)                                        \
  BOOST_CHECK_EXCEPTION(stmt, ExcT, [&](const ExcT& e) {                          \
    bool ok = contains(e.what(), msg);                                            \
    if (!ok) BOOST_TEST_MESSAGE("unexpected message: " << e.what());              \
    return ok;                                                                    \
  })

/// True when GPU tests can run: a CUDA build and a device.
inline bool pycaHasGpu() { return PyCA::CudaCompiled() && PyCA::GetNumberOfCUDADevices() > 0; }

/// Boost.Test precondition for GPU-only cases:
/// BOOST_AUTO_TEST_CASE(name, *boost::unit_test::precondition(GpuAvailable())).
struct GpuAvailable {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(pycaHasGpu());
    r.message() << "no CUDA device (CudaCompiled=" << PyCA::CudaCompiled() << ")";
    return r;
  }
};

/// Runs worker(0) ... worker(n - 1) in n threads at once and joins them.
template <class F>
void runThreads(int n, F worker) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
}

/// Deterministic values in [lo, hi) (a 32-bit LCG), the same on every platform.
class Rng {
 public:
  explicit Rng(uint32_t seed) : mState(seed) {}
  float next(float lo = -1.f, float hi = 1.f) {
    mState = mState * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float(mState >> 8) / float(1u << 24));
  }

 private:
  uint32_t mState;
};

/// Bit-for-bit equality of n floats, of two images, of two fields (host memory).
inline bool sameBits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }
inline bool sameBits(const PyCA::Image3D& a, const PyCA::Image3D& b) { return sameBits(a.get(), b.get(), a.nVox()); }
inline bool sameBits(const PyCA::Field3D& a, const PyCA::Field3D& b) {
  for (int d = 0; d < 3; ++d)
    if (!sameBits(a.getComponent(d), b.getComponent(d), a.nVox())) return false;
  return true;
}

#endif
