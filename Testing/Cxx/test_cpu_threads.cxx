// test_cpu_threads.cxx -- the CPU back end's adaptive team size
// (CPUThreads.h): the /proc/stat parser, the team rule, the switches, and
// that no result depends on the team a region runs on.
#define BOOST_TEST_MODULE PyCA CPU threads
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "CPUThreads.h"
#include "FOpers.h"
#include "Field3D.h"
#include "FluidKernelFFT.h"
#include "HFOpers.h"
#include "IFOpers.h"
#include "IOpers.h"
#include "Image3D.h"
#include "Reduction.h"

using namespace PyCA;

namespace {

// /proc/stat of a 4-CPU machine (Linux 6.x): user nice system idle iowait
// irq softirq steal guest guest_nice, in ticks.
const char* kStat =
    "cpu  1000 100 300 5000 50 0 20 30 0 0\n"
    "cpu0 100 0 50 1000 10 0 5 5 0 0\n"
    "cpu1 200 10 50 2000 20 0 5 5 7 0\n"
    "cpu2 300 40 100 1000 10 0 5 10 0 0\n"
    "cpu3 400 50 100 1000 10 0 5 10 0 0\n"
    "intr 123456 1 2 3\n"
    "ctxt 999\n"
    "cpu9 is not a cpu line of this file\n";

}  // namespace

BOOST_AUTO_TEST_SUITE(cpu_threads)

BOOST_AUTO_TEST_CASE(proc_stat_every_cpu) {
  detail::CPUTimes t;
  BOOST_TEST(detail::parseProcStat(kStat, {}, 100, t));
  BOOST_TEST(t.cpus == 4);
  // busy: user + nice + system + irq + softirq + steal; idle: idle + iowait
  const double busy = (100 + 0 + 50 + 0 + 5 + 5) + (200 + 10 + 50 + 0 + 5 + 5) + (300 + 40 + 100 + 0 + 5 + 10) +
                      (400 + 50 + 100 + 0 + 5 + 10);
  const double idle = 1010 + 2020 + 1010 + 1010;
  BOOST_TEST(std::fabs(t.busy - busy / 100) < 1e-9);
  BOOST_TEST(std::fabs(t.total - (busy + idle) / 100) < 1e-9);
}

BOOST_AUTO_TEST_CASE(proc_stat_masked_cpus) {
  detail::CPUTimes t;
  const std::vector<bool> use = {false, true, false, true};
  BOOST_TEST(detail::parseProcStat(kStat, use, 100, t));
  BOOST_TEST(t.cpus == 2);
  BOOST_TEST(std::fabs(t.busy - (270 + 565) / 100.0) < 1e-9);
  BOOST_TEST(std::fabs(t.total - (270 + 2020 + 565 + 1010) / 100.0) < 1e-9);
  // CPUs beyond the mask's size do not count
  BOOST_TEST(detail::parseProcStat(kStat, std::vector<bool>{true}, 250, t));
  BOOST_TEST(t.cpus == 1);
  BOOST_TEST(std::fabs(t.busy - 160 / 250.0) < 1e-9);
}

BOOST_AUTO_TEST_CASE(proc_stat_unusable_text) {
  detail::CPUTimes t;
  BOOST_TEST(!detail::parseProcStat("", {}, 100, t));
  BOOST_TEST(!detail::parseProcStat("cpu  1 2 3 4\nintr 5\n", {}, 100, t));  // aggregate only
  BOOST_TEST(!detail::parseProcStat("cpu0 1 2 3 4", {}, 100, t));          // cut: no newline
  BOOST_TEST(!detail::parseProcStat("cpu0 1 2\n", {}, 100, t));            // too few fields
  BOOST_TEST(!detail::parseProcStat(kStat, {}, 0, t));
  BOOST_TEST(!detail::parseProcStat(kStat, std::vector<bool>(4, false), 100, t));
  // an old kernel's four fields still count
  BOOST_TEST(detail::parseProcStat("cpu0 10 0 10 80\n", {}, 100, t));
  BOOST_TEST(std::fabs(t.total - 1.0) < 1e-9);
}

BOOST_AUTO_TEST_CASE(team_is_the_free_cpus_rounded) {
  BOOST_TEST(detail::freeCPUThreads(0.0, 2) == 2);
  BOOST_TEST(detail::freeCPUThreads(0.3, 2) == 2);   // a daemon's noise
  BOOST_TEST(detail::freeCPUThreads(0.7, 2) == 1);   // one busy process
  BOOST_TEST(detail::freeCPUThreads(1.0, 2) == 1);
  BOOST_TEST(detail::freeCPUThreads(2.0, 2) == 1);   // never below one
  BOOST_TEST(detail::freeCPUThreads(5.0, 2) == 1);
  BOOST_TEST(detail::freeCPUThreads(1.2, 16) == 15);
  BOOST_TEST(detail::freeCPUThreads(-0.5, 4) == 4);  // clock skew
  BOOST_TEST(detail::freeCPUThreads(std::nan(""), 4) == 4);
  BOOST_TEST(detail::freeCPUThreads(1.0, 0) == 1);
}

BOOST_AUTO_TEST_CASE(switches) {
  const bool was = GetCPUThreadsAdaptive();
  const int maxT = GetCPUMaxThreads();
  BOOST_TEST(maxT >= 1);
  for (int i = 0; i < 3; ++i) {
    const int t = GetCPUThreads();
    BOOST_TEST(t >= 1);
    BOOST_TEST(t <= maxT);
  }
  SetCPUThreadsAdaptive(false);
  BOOST_TEST(!GetCPUThreadsAdaptive());
  BOOST_TEST(GetCPUThreads() == maxT);
  SetCPUThreadsAdaptive(true);
  BOOST_TEST(GetCPUThreadsAdaptive());
  detail::forceCPUThreads(1);
  BOOST_TEST(GetCPUThreads() == 1);
  detail::forceCPUThreads(maxT + 5);
  BOOST_TEST(GetCPUThreads() == maxT);
  detail::forceCPUThreads(0);
  SetCPUThreadsAdaptive(was);
}

namespace {

void fill(Image3D& im, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im.get()[i] = r.next();
}

void smoothH(Field3D& h) {
  const Vec3Di s = h.size();
  for (int z = 0; z < s.z; ++z)
    for (int y = 0; y < s.y; ++y)
      for (int x = 0; x < s.x; ++x)
        h.set(x, y, z, Vec3Df(x + 1.7f * std::sin(0.3f * y), y + 1.3f * std::cos(0.25f * x + 0.1f * z),
                              z + 1.1f * std::sin(0.2f * x + 0.3f * y)));
}

/// Every kind of parallel region of the CPU back end, on a grid large
/// enough for each to use its team (and FFTW its threaded plans).
struct Work {
  explicit Work(const GridInfo& g)
      : im(g, MEM_HOST), out(g, MEM_HOST), splat(g, MEM_HOST), h(g, MEM_HOST),
        hh(g, MEM_HOST), grad(g, MEM_HOST), v(g, MEM_HOST), lv(g, MEM_HOST), sf(g, MEM_HOST) {}
  Image3D im, out, splat;
  Field3D h, hh, grad, v, lv, sf;
  double sum = 0, sum2 = 0, dot = 0;
  float mx = 0;

  void run() {
    fill(im, 7);
    smoothH(h);
    Opers::ApplyH(out, im, h, BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR);  // voxel launch
    Opers::Splat(splat, h, im);                                           // splat slabs and sums
    Opers::SplatH(sf, h, h, true);                                        // field splat, normalised
    Opers::Gradient(grad, out, DIFF_CENTRAL, BC_CLAMP);
    Opers::ComposeHH(hh, h, h, BACKGROUND_STRATEGY_PARTIAL_ID);
    Opers::MulC_Add_MulC_I(out, 0.5f, splat, 0.25f);  // element-wise
    FluidKernelFFT<EXEC_CPU> k;
    k.setAlpha(0.1f);
    k.setGamma(1.f);
    k.setGrid(im.grid());
    k.applyInverseOperator(v, grad);  // FFTW
    k.applyOperator(lv, v);
    sum = Opers::Sum(out);  // reductions
    sum2 = Opers::Sum2(v);
    dot = Opers::Dot(grad, v);
    mx = Opers::Max(splat);
  }
  bool operator==(const Work& o) const {
    return sameBits(out, o.out) && sameBits(splat, o.splat) && sameBits(sf, o.sf) && sameBits(hh, o.hh) &&
           sameBits(grad, o.grad) && sameBits(v, o.v) && sameBits(lv, o.lv) && sum == o.sum &&
           sum2 == o.sum2 && dot == o.dot && mx == o.mx;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(results_do_not_depend_on_the_team) {
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  omp_set_num_threads(4);
#endif
  const GridInfo g(Vec3Di(48, 40, 36), Vec3Df(1.f, 1.1f, 0.9f), Vec3Df(0.f, 0.f, 0.f));
  Work full(g), one(g), three(g);
  detail::forceCPUThreads(0);
  SetCPUThreadsAdaptive(false);
  full.run();
  detail::forceCPUThreads(1);
  one.run();
  detail::forceCPUThreads(3);
  three.run();
  detail::forceCPUThreads(0);
  SetCPUThreadsAdaptive(true);
#ifdef _OPENMP
  omp_set_num_threads(saved);
#endif
  BOOST_TEST(full.sum != 0.0);
  BOOST_TEST((one == full));
  BOOST_TEST((three == full));
}

BOOST_AUTO_TEST_SUITE_END()
