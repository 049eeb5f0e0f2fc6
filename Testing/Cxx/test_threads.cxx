// test_threads.cxx -- thread stress of the memory managers and the operators,
// written for ThreadSanitizer (the PYCA_TSAN build runs it; every build runs
// it as an ordinary test too):
//
//  * one MemoryManager shared by 8 threads doing 100,000 getPool/release
//    each: no pool is handed out twice (each holder writes its tag into the
//    buffer and reads it back; a double hand-out is a data race TSan reports
//    and a tag mismatch this test counts), and the statistics are exact;
//  * a ThreadMemoryManager per thread, each on its own grid;
//  * operators (pointwise, ApplyH, Splat, Gradient, ComposeHH, the FFTW fluid
//    kernel, reductions) called from several threads at once on independent
//    data give the serial results bit for bit.
//
// No locks of the test's own sit between the threads' pool traffic, so the
// manager's own synchronisation is what TSan checks.
#define BOOST_TEST_MODULE PyCA thread stress
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "FOpers.h"
#include "Field3D.h"
#include "FluidKernelFFT.h"
#include "HFOpers.h"
#include "IFOpers.h"
#include "IOpers.h"
#include "Image3D.h"
#include "ManagedField3D.h"
#include "ManagedImage3D.h"
#include "MemoryManager.h"
#include "PyCAException.h"
#include "Reduction.h"
#include "VFOpers.h"

using namespace PyCA;

namespace {

/// Iterations per thread; PYCA_THREAD_STRESS_ITERS overrides (the
/// sanitizer runs keep the default).
int stressIters() {
  const char* s = std::getenv("PYCA_THREAD_STRESS_ITERS");
  return s && std::atoi(s) > 0 ? std::atoi(s) : 100000;
}

void randomize(Image3D& im, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im.get()[i] = r.next();
}

void smoothH(Field3D& h, float amp, float phase) {
  const Vec3Di s = h.size();
  for (int z = 0; z < s.z; ++z)
    for (int y = 0; y < s.y; ++y)
      for (int x = 0; x < s.x; ++x)
        h.set(x, y, z,
              Vec3Df(x + amp * std::sin(0.3f * y + phase), y + amp * std::cos(0.25f * x + 0.1f * z),
                     z + amp * std::sin(0.2f * x + 0.3f * y - phase)));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(thread_stress)

BOOST_AUTO_TEST_CASE(shared_manager_8_threads_100k_each) {
  const GridInfo g(Vec3Di(8, 8, 2));  // 128 voxels
  MemoryManager mm(g, MEM_HOST, 4);
  const int nThreads = 8;
  const int nIter = stressIters();
  std::atomic<long> doubleHandout{0}, errors{0}, requests{0};

  auto worker = [&](int tid) {
    try {
      for (int it = 0; it < nIter; ++it) {
        // One or two pools at once, alternately.
        const int k = 1 + (it & 1);
        std::shared_ptr<float> p[2];
        const float tag = float(tid * 1000003 + it);
        for (int j = 0; j < k; ++j) {
          p[j] = mm.getPool(g);
          ++requests;
          p[j].get()[0] = tag + float(j);
          p[j].get()[g.nVox() - 1] = tag - float(j);
        }
        if ((it & 255) == 0) std::this_thread::yield();
        for (int j = 0; j < k; ++j)
          if (p[j].get()[0] != tag + float(j) || p[j].get()[g.nVox() - 1] != tag - float(j))
            ++doubleHandout;
      }
    } catch (...) {
      ++errors;
    }
  };
  runThreads(nThreads, worker);
  BOOST_TEST(errors.load() == 0);
  BOOST_TEST(doubleHandout.load() == 0);
  BOOST_TEST(requests.load() == long(nThreads) * (nIter / 2 * 3 + (nIter & 1)));
  BOOST_TEST(mm.stats().totalRequests == size_t(requests.load()));
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST(mm.getNumPools() <= size_t(2 * nThreads));
  BOOST_TEST(mm.peakInUse() <= mm.getNumPools());
  BOOST_TEST(mm.maxUsed() <= mm.getNumPools());
  BOOST_TEST_MESSAGE(nThreads << " threads x " << nIter << " iterations: " << requests.load()
                              << " requests, " << mm.getNumPools() << " pools, peak "
                              << mm.peakInUse());
}

BOOST_AUTO_TEST_CASE(thread_memory_manager_per_thread) {
  const int nThreads = 8;
  std::atomic<int> bad{0}, arrived{0};
  std::vector<const MemoryManager*> seen(size_t(nThreads), nullptr);
  auto worker = [&](int tid) {
    bool counted = false;
    try {
      const GridInfo g(Vec3Di(4 + tid, 5, 3));
      ThreadMemoryManager::init(g, MEM_HOST, 2);
      seen[size_t(tid)] = &ThreadMemoryManager::instance();
      for (int it = 0; it < 2000; ++it) {
        ManagedImage3D a(g, MEM_HOST), b(g, MEM_HOST);
        ManagedField3D f(g, MEM_HOST);
        Opers::SetMem(a, float(tid));
        Opers::SetMem(b, float(it));
        Opers::Add(a, a, b);
        if (a.get()[g.nVox() - 1] != float(tid + it)) ++bad;
      }
      if (ThreadMemoryManager::instance().poolsInUse() != 0u) ++bad;
      if (ThreadMemoryManager::instance().getNumPools() != 5u) ++bad;  // 2 images + 3 components
      // Every manager stays alive until all are recorded (a destroyed one's
      // address may be reused by the next thread's).
      counted = true;
      ++arrived;
      while (arrived.load() < nThreads) std::this_thread::yield();
      ThreadMemoryManager::destroy();
      if (ThreadMemoryManager::isInitialized()) ++bad;
    } catch (...) {
      ++bad;
      if (!counted) ++arrived;  // never leave the others waiting
    }
  };
  runThreads(nThreads, worker);
  BOOST_TEST(bad.load() == 0);
  for (int i = 0; i < nThreads; ++i)
    for (int j = 0; j < i; ++j) BOOST_TEST(seen[size_t(i)] != seen[size_t(j)]);
}

namespace {

/// One thread's work: a chain of operators on its own inputs. Everything it
/// writes is in r; a pure function of seed.
struct Chain {
  explicit Chain(const GridInfo& g)
      : im(g, MEM_HOST), out(g, MEM_HOST), splat(g, MEM_HOST), h(g, MEM_HOST), hh(g, MEM_HOST),
        grad(g, MEM_HOST), v(g, MEM_HOST) {}
  Image3D im, out, splat;
  Field3D h, hh, grad, v;
  double sum = 0, sum2 = 0, dot = 0;
  float mx = 0;

  void run(uint32_t seed) {
    randomize(im, seed);
    smoothH(h, 1.5f, 0.1f * float(seed % 17));
    Opers::ApplyH(out, im, h, BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR);
    Opers::Splat(splat, h, im);
    Opers::Gradient(grad, out, DIFF_CENTRAL, BC_CLAMP);
    Opers::ComposeHH(hh, h, h, BACKGROUND_STRATEGY_PARTIAL_ID);
    Opers::MulC_Add_MulC_I(out, 0.5f, splat, 0.25f);
    FluidKernelFFT<EXEC_CPU> k;
    k.setAlpha(0.1f);
    k.setGamma(1.f);
    k.setGrid(im.grid());
    k.applyInverseOperator(v, grad);
    sum = Opers::Sum(out);
    sum2 = Opers::Sum2(v);
    dot = Opers::Dot(grad, v);
    mx = Opers::Max(splat);
  }
  bool same(const Chain& o) const {
    return sameBits(out, o.out) && sameBits(splat, o.splat) && sameBits(hh, o.hh) &&
           sameBits(grad, o.grad) && sameBits(v, o.v) && sum == o.sum && sum2 == o.sum2 &&
           dot == o.dot && mx == o.mx;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(operators_from_threads_equal_serial) {
  // Sizes that differ per thread: each thread plans its own FFT sizes too.
  const int nThreads = 4;
  std::vector<GridInfo> grids;
  for (int t = 0; t < nThreads; ++t)
    grids.emplace_back(Vec3Di(17 + 2 * t, 13 + t, 9 + (t % 2)), Vec3Df(1.f, 1.1f, 0.9f),
                       Vec3Df(0.f, 0.f, 0.f));
  std::vector<std::unique_ptr<Chain>> serial, parallel;
  for (int t = 0; t < nThreads; ++t) {
    serial.push_back(std::make_unique<Chain>(grids[size_t(t)]));
    parallel.push_back(std::make_unique<Chain>(grids[size_t(t)]));
  }
  for (int t = 0; t < nThreads; ++t) serial[size_t(t)]->run(uint32_t(100 + t));
  std::atomic<int> errors{0};
  for (int rep = 0; rep < 3; ++rep) {
    runThreads(nThreads, [&](int t) {
      try {
        parallel[size_t(t)]->run(uint32_t(100 + t));
      } catch (...) {
        ++errors;
      }
    });
    BOOST_TEST(errors.load() == 0);
    for (int t = 0; t < nThreads; ++t) BOOST_TEST(parallel[size_t(t)]->same(*serial[size_t(t)]));
  }
}

BOOST_AUTO_TEST_CASE(concurrent_exceptions_keep_their_messages) {
  // Each thread's pool-limit error names its own grid and limit.
  const int nThreads = 8;
  std::atomic<int> bad{0};
  auto worker = [&](int tid) {
    const GridInfo g(Vec3Di(8, 8, 4 + tid));
    MemoryManager mm(g, MEM_HOST, 0);
    mm.setLimit(size_t(10 + tid));
    const std::string vox = "grid of " + std::to_string(8 * 8 * (4 + tid)) + " voxels";
    const std::string lim = "limit " + std::to_string(10 + tid) + " bytes";
    for (int it = 0; it < 500; ++it) {
      try {
        ManagedImage3D im(g, MEM_HOST, mm);
        ++bad;
      } catch (const PyCAMemoryException& e) {
        if (!contains(e.what(), vox) || !contains(e.what(), lim)) ++bad;
      } catch (...) {
        ++bad;
      }
    }
  };
  runThreads(nThreads, worker);
  BOOST_TEST(bad.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
