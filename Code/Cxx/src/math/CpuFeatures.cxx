// CpuFeatures.cxx -- the run-time choice between the baseline and the AVX2
// builds of the CPU loops (SetCPUDispatch / GetCPUDispatch, MemAlloc.h).
#include "CpuFeatures.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "MemAlloc.h"
#include "PyCAException.h"

namespace PyCA {
namespace detail {

namespace {
/// -1: not read from PYCA_CPU_DISPATCH yet.
std::atomic<int> gMode{-1};

int parseMode(const char* s) {
  if (!s || std::strcmp(s, "auto") == 0) return 0;
  if (!*s) return -2;
  if (std::strcmp(s, "baseline") == 0) return 1;
  if (std::strcmp(s, "avx2") == 0) return 2;
  return -2;
}

bool avx2Compiled() {
#ifdef PYCA_CPU_AVX2_LOOPS
  return true;
#else
  return false;
#endif
}
}  // namespace

int cpuDispatchMode() {
  int m = gMode.load(std::memory_order_relaxed);
  if (m >= 0) return m;
  const char* env = std::getenv("PYCA_CPU_DISPATCH");
  m = env && *env ? parseMode(env) : 0;
  if (m < 0) m = 0;  // an unknown value means auto (an environment variable never throws)
  if (m == 2 && !(cpuHasAvx2() && avx2Compiled())) m = 1;
  int expected = -1;
  gMode.compare_exchange_strong(expected, m);
  return gMode.load(std::memory_order_relaxed);
}

}  // namespace detail

void SetCPUDispatch(const std::string& path) {
  const int m = detail::parseMode(path.c_str());
  if (m < 0)
    throw PyCAValueException(__FILE__, __LINE__,
                             "SetCPUDispatch: unknown path '" + path +
                                 "' (expected 'auto', 'baseline' or 'avx2')");
  if (m == 2 && !(detail::cpuHasAvx2() && detail::avx2Compiled()))
    throw PyCAException(__FILE__, __LINE__,
                        detail::avx2Compiled() ? "SetCPUDispatch: this CPU does not run AVX2"
                                               : "SetCPUDispatch: this build has no AVX2 loops");
  detail::gMode.store(m, std::memory_order_relaxed);
}

const char* GetCPUDispatch() { return detail::cpuUseAvx2() && detail::avx2Compiled() ? "avx2" : "baseline"; }

}  // namespace PyCA
