// test_fluid_kernel.cxx -- the C++ API of FluidKernelFFT<EXEC_CPU> /
// FluidKernelFFT<EXEC_GPU> (FluidKernelFFT.h) through FluidKernelFFTInterface:
// defaults, L against a real-space periodic stencil (computed here in double,
// no FFT), K L v = v, in-place forms, unaligned buffers, the thread memory
// manager, concurrent kernels on different grids in different threads, a
// change of the OpenMP thread count, the legacy messages, and CPU/GPU parity.
#define BOOST_TEST_MODULE PyCA fluid kernel
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "FOpers.h"
#include "Field3D.h"
#include "FluidKernelFFT.h"
#include "FluidKernelFFTInterface.h"
#include "MemoryManager.h"
#include "PyCAException.h"

using namespace PyCA;

namespace {

struct Params {
  float alpha, beta, gamma;
  int lpow;
};

void configure(FluidKernelFFTInterface& k, const Params& p, const GridInfo& g, bool divFree = false) {
  k.setAlpha(p.alpha);
  k.setBeta(p.beta);
  k.setGamma(p.gamma);
  k.setLPow(p.lpow);
  k.setDivergenceFree(divFree);
  k.setGrid(g);
}

void randomize(Field3D& f, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < f.nVox(); ++i) f.set(i, Vec3Df(r.next(), r.next(), r.next()));
}

typedef std::vector<double> Comp;

/// Periodic differences of component c along axis ax (x fastest layout).
struct Stencil {
  Vec3Di s;
  Vec3Df sp;
  size_t at(int x, int y, int z) const {
    x = (x + s.x) % s.x;
    y = (y + s.y) % s.y;
    z = (z + s.z) % s.z;
    return size_t(x) + size_t(s.x) * (size_t(y) + size_t(s.y) * size_t(z));
  }
  Comp apply(const Comp& a, int ax, bool second) const {
    Comp o(a.size());
    const int dx = ax == 0, dy = ax == 1, dz = ax == 2;
    const double h = ax == 0 ? sp.x : (ax == 1 ? sp.y : sp.z);
    for (int z = 0; z < s.z; ++z)
      for (int y = 0; y < s.y; ++y)
        for (int x = 0; x < s.x; ++x) {
          const double p = a[at(x + dx, y + dy, z + dz)], m = a[at(x - dx, y - dy, z - dz)];
          o[at(x, y, z)] = second ? (p - 2.0 * a[at(x, y, z)] + m) / (h * h) : (p - m) / (2.0 * h);
        }
    return o;
  }
};

/// L^lpow v with the periodic stencils whose symbols FluidKernelFFT.h states.
std::vector<Comp> stencilL(std::vector<Comp> u, const GridInfo& g, const Params& p) {
  const Stencil st{g.size(), g.spacing()};
  for (int r = 0; r < p.lpow; ++r) {
    std::vector<Comp> o(3, Comp(u[0].size(), 0.0));
    for (int d = 0; d < 3; ++d) {
      for (int e = 0; e < 3; ++e) {
        const Comp lap = st.apply(u[d], e, true);
        for (size_t i = 0; i < lap.size(); ++i) o[d][i] -= p.alpha * lap[i];
        const Comp gd = e == d ? st.apply(u[d], d, true) : st.apply(st.apply(u[e], e, false), d, false);
        for (size_t i = 0; i < gd.size(); ++i) o[d][i] -= p.beta * gd[i];
      }
      for (size_t i = 0; i < o[d].size(); ++i) o[d][i] += p.gamma * u[d][i];
    }
    u = o;
  }
  return u;
}

std::vector<Comp> toComps(const Field3D& f) {
  std::vector<Comp> c(3, Comp(f.nVox()));
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < f.nVox(); ++i) c[d][i] = f.getComponent(d)[i];
  return c;
}

void fromComps(Field3D& f, const std::vector<Comp>& c) {
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < f.nVox(); ++i) f.getComponent(d)[i] = float(c[d][i]);
}

/// max |a - b| / max |b|
double relErr(const std::vector<Comp>& a, const std::vector<Comp>& b) {
  double e = 0.0, m = 1e-300;
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < b[d].size(); ++i) {
      e = std::max(e, std::fabs(a[d][i] - b[d][i]));
      m = std::max(m, std::fabs(b[d][i]));
    }
  return e / m;
}

bool sameValues(const Field3D& a, const Field3D& b) {
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < a.nVox(); ++i)
      if (a.getComponent(d)[i] != b.getComponent(d)[i]) return false;
  return true;
}

const GridInfo kGrid3(Vec3Di(14, 11, 9), Vec3Df(1.5f, 2.1f, 0.7f));
const GridInfo kGrid2(Vec3Di(17, 15, 1), Vec3Df(1.25f, 0.8f, 1.f));
const GridInfo kGridLong(Vec3Di(600, 3, 2), Vec3Df(0.5f, 1.f, 2.f));

}  // namespace

BOOST_AUTO_TEST_CASE(defaults_and_interface) {
  std::unique_ptr<FluidKernelFFTInterface> k(new FluidKernelFFT<EXEC_CPU>());
  BOOST_TEST(k->getAlpha() == 1.f);
  BOOST_TEST(k->getBeta() == 0.f);
  BOOST_TEST(k->getGamma() == 0.f);
  BOOST_TEST(k->getLPow() == 1);
  BOOST_TEST(!k->getDivergenceFree());
  BOOST_TEST(k->memType() == MEM_HOST);
  CHECK_PYCA_THROW(k->setLPow(-2), PyCAValueException, "LPow must be >= 0");
  BOOST_TEST(k->getLPow() == 1);
  FluidKernelFFTGPU g;  // the typedefs name the two instantiations
  BOOST_TEST(g.memType() == MEM_DEVICE);
}

BOOST_AUTO_TEST_CASE(operator_matches_periodic_stencil) {
  const Params ps[] = {{0.01f, 0.01f, 0.001f, 1}, {0.5f, 0.2f, 0.f, 2}, {1.f, 1.f, 0.1f, 3},
                       {0.2f, 0.7f, 0.05f, 5}, {0.3f, 0.1f, 2.f, 0}};
  for (const GridInfo& g : {kGrid3, kGrid2, kGridLong})
    for (const Params& p : ps) {
      FluidKernelFFT<EXEC_CPU> k;
      configure(k, p, g);
      Field3D v(g), f(g);
      randomize(v, 7);
      k.applyOperator(f, v);
      BOOST_TEST(relErr(toComps(f), stencilL(toComps(v), g, p)) < 2e-5 * std::max(1, p.lpow));
    }
}

BOOST_AUTO_TEST_CASE(inverse_inverts_and_in_place_forms_agree) {
  const Params ps[] = {{0.01f, 0.01f, 0.001f, 1}, {0.5f, 0.2f, 0.3f, 2}, {0.3f, 0.3f, 1.f, 3}};
  for (const GridInfo& g : {kGrid3, kGrid2, kGridLong})
    for (const Params& p : ps) {
      FluidKernelFFT<EXEC_CPU> k;
      configure(k, p, g);
      Field3D v(g), Lv(g), KLv(g);
      randomize(v, 11);
      fromComps(Lv, stencilL(toComps(v), g, p));
      k.applyInverseOperator(KLv, Lv);
      BOOST_TEST(relErr(toComps(KLv), toComps(v)) < 2e-4);
      k.applyInverseOperator(Lv);  // in place
      BOOST_TEST(sameValues(Lv, KLv));
      Field3D f(g);
      k.applyOperator(f, v);
      k.applyOperator(v);
      BOOST_TEST(sameValues(v, f));
    }
}

BOOST_AUTO_TEST_CASE(gamma_zero_sets_the_mean_to_zero) {
  FluidKernelFFT<EXEC_CPU> k;
  configure(k, {1.f, 0.5f, 0.f, 1}, kGrid3);
  Field3D f(kGrid3), v(kGrid3);
  randomize(f, 3);
  Opers::AddC_I(f, Vec3Df(5.f, -7.f, 2.f));
  k.applyInverseOperator(v, f);
  const std::vector<Comp> c = toComps(v);
  for (int d = 0; d < 3; ++d) {
    double s = 0.0, m = 0.0;
    for (double x : c[d]) {
      BOOST_REQUIRE(std::isfinite(x));
      s += x;
      m = std::max(m, std::fabs(x));
    }
    BOOST_TEST(std::fabs(s / double(c[d].size())) < 1e-5 * m);
  }
}

BOOST_AUTO_TEST_CASE(unaligned_buffers_and_managed_scratch) {
  // components that start one float past an aligned address (not from
  // PyCA's allocator): the kernel copies through aligned scratch
  const GridInfo& g = kGrid3;
  const size_t n = g.nVox();
  MemPool<float> raw[3] = {MemPool<float>(n + 1, MEM_HOST), MemPool<float>(n + 1, MEM_HOST),
                           MemPool<float>(n + 1, MEM_HOST)};
  MemPool<float> in[3], out[3];
  MemPool<float> rawOut[3] = {MemPool<float>(n + 1, MEM_HOST), MemPool<float>(n + 1, MEM_HOST),
                              MemPool<float>(n + 1, MEM_HOST)};
  for (int d = 0; d < 3; ++d) {
    in[d] = MemPool<float>(std::shared_ptr<float>(raw[d].sharedPtr(), raw[d].get() + 1), n, MEM_HOST);
    out[d] = MemPool<float>(std::shared_ptr<float>(rawOut[d].sharedPtr(), rawOut[d].get() + 1), n, MEM_HOST);
  }
  Field3D vu(g, in[0], in[1], in[2]), fu(g, out[0], out[1], out[2]);
  Field3D v(g), f(g);
  randomize(v, 5);
  Opers::Copy(vu, v);
  FluidKernelFFT<EXEC_CPU> k;
  configure(k, {0.2f, 0.3f, 0.1f, 2}, g, true);
  k.applyInverseOperator(f, v);
  k.applyInverseOperator(fu, vu);
  BOOST_TEST(sameValues(fu, f));
  // the same with the thread memory manager providing the scratch
  ThreadMemoryManager::init(g, MEM_HOST, 2);
  Field3D fm(g);
  k.applyInverseOperator(fm, vu);
  BOOST_TEST(sameValues(fm, f));
  k.applyInverseOperator(vu);
  BOOST_TEST(sameValues(vu, f));
  ThreadMemoryManager::destroy();
}

BOOST_AUTO_TEST_CASE(concurrent_kernels_on_different_grids) {
  // reference results, one kernel at a time
  const GridInfo grids[2] = {GridInfo(Vec3Di(40, 36, 30), Vec3Df(1.f, 1.2f, 0.8f)),
                             GridInfo(Vec3Di(33, 17, 1), Vec3Df(0.5f, 2.f, 1.f))};
  const Params ps[2] = {{0.2f, 0.1f, 0.05f, 1}, {1.f, 0.5f, 0.3f, 2}};
  std::unique_ptr<Field3D> in[2], ref[2], out[2];
  for (int t = 0; t < 2; ++t) {
    in[t].reset(new Field3D(grids[t]));
    ref[t].reset(new Field3D(grids[t]));
    out[t].reset(new Field3D(grids[t]));
    randomize(*in[t], 40 + t);
    FluidKernelFFT<EXEC_CPU> k;
    configure(k, ps[t], grids[t], t == 1);
    k.applyInverseOperator(*ref[t], *in[t]);
  }
  // two threads, each planning (the planner is serialised) and applying its
  // own kernel repeatedly on new grids of its own
  bool ok[2] = {true, true};
  std::vector<std::thread> th;
  for (int t = 0; t < 2; ++t)
    th.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        FluidKernelFFT<EXEC_CPU> k;
        const GridInfo other(Vec3Di(20 + 3 * r + t, 9 + r, 7), Vec3Df(1.f, 1.f, 1.f));
        k.setGrid(other);  // a new problem: plans it concurrently with the other thread
        configure(k, ps[t], grids[t], t == 1);
        k.applyInverseOperator(*out[t], *in[t]);
        ok[t] = ok[t] && sameValues(*out[t], *ref[t]);
      }
    });
  for (auto& x : th) x.join();
  BOOST_TEST(ok[0]);
  BOOST_TEST(ok[1]);
}

#ifdef _OPENMP
BOOST_AUTO_TEST_CASE(openmp_thread_count_change) {
  const GridInfo g(Vec3Di(48, 40, 36), Vec3Df(1.f, 0.8f, 1.2f));
  FluidKernelFFT<EXEC_CPU> k;
  configure(k, {0.1f, 0.1f, 0.01f, 1}, g);
  Field3D v(g), a(g), b(g);
  randomize(v, 9);
  k.applyInverseOperator(a, v);
  const int nt = omp_get_max_threads();
  omp_set_num_threads(nt == 1 ? 2 : 1);  // plans for the new count are fetched
  k.applyInverseOperator(b, v);
  omp_set_num_threads(nt);
  BOOST_TEST(relErr(toComps(b), toComps(a)) < 1e-5);
}
#endif

BOOST_AUTO_TEST_CASE(errors_have_legacy_messages) {
  FluidKernelFFT<EXEC_CPU> k;
  Field3D f(kGrid3);
  randomize(f, 1);
  CHECK_PYCA_THROW(k.applyOperator(f), PyCAException, "setGrid has not been called");
  CHECK_PYCA_THROW(k.applyInverseOperator(f, f), PyCAException, "setGrid has not been called");
  k.setGrid(kGrid3);
  Field3D other(kGrid2), otherSp(GridInfo(kGrid3.size(), Vec3Df(1.f, 1.f, 1.f)));
  CHECK_PYCA_THROW(k.applyOperator(other), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(k.applyOperator(f, other), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(k.applyInverseOperator(otherSp, f), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(k.setGrid(GridInfo(Vec3Di(-1, 2, 2))), PyCAValueException, "");
  k.applyOperator(f);  // still usable after the failed setGrid
  if (!CudaCompiled()) {
    FluidKernelFFT<EXEC_GPU> gk;
    CHECK_PYCA_THROW(gk.setGrid(kGrid3), PyCAException, "Error, GPU code not compiled");
    CHECK_PYCA_THROW(gk.applyOperator(f), PyCAException, "setGrid has not been called");
  } else if (pycaHasGpu()) {
    FluidKernelFFT<EXEC_GPU> gk;
    gk.setGrid(kGrid3);
    CHECK_PYCA_THROW(gk.applyOperator(f), PyCAException, "Using EXEC_GPU object on host memory");
    Field3D d(kGrid3, MEM_DEVICE);
    CHECK_PYCA_THROW(k.applyOperator(d), PyCAException, "Using EXEC_CPU object on non-host memory");
    CHECK_PYCA_THROW(k.applyOperator(f, d), PyCAException, "Using EXEC_CPU object on non-host memory");
  }
}

/// setSpectralTolerance (PyCA extension) on single Fourier modes, the
/// analytic case: cos(2 pi k x / N) is an eigenfunction of K with the
/// multiplier (gamma + alpha lambda)^-lpow (beta = 0). A mode inside the band
/// keeps it; a mode outside goes to zero (the exact K leaves a small value).
BOOST_AUTO_TEST_CASE(spectral_tolerance_on_single_modes) {
  const GridInfo g(Vec3Di(32, 24, 20), Vec3Df(2.f, 2.f, 2.f));
  const float alpha = 200.f, gamma = 1.f;
  const double eps = 1e-4;
  FluidKernelFFT<EXEC_CPU> k, exact;
  for (FluidKernelFFT<EXEC_CPU>* q : {&k, &exact}) {
    q->setAlpha(alpha);
    q->setGamma(gamma);
    q->setLPow(2);
    q->setGrid(g);
  }
  BOOST_CHECK_EQUAL(k.getSpectralTolerance(), 0.f);
  k.setSpectralTolerance(float(eps));
  BOOST_CHECK_CLOSE(k.getSpectralTolerance(), float(eps), 1e-4);
  CHECK_PYCA_THROW(k.setSpectralTolerance(-1.f), PyCAValueException, "spectral tolerance");
  CHECK_PYCA_THROW(k.setSpectralTolerance(1.f), PyCAValueException, "spectral tolerance");
  CHECK_PYCA_THROW(k.setSpectralTolerance(std::nanf("")), PyCAValueException, "spectral tolerance");
  BOOST_CHECK_CLOSE(k.getSpectralTolerance(), float(eps), 1e-4);  // unchanged by the failures
  const double pi = 3.14159265358979323846;
  // mode kx along x (lambda = (2 - 2 cos(2 pi kx / 32)) / 4): kx = 3 is kept
  // ((1 + 200 lambda)^2 = 1.6e3 < 1e4), kx = 12 dropped ((1 + 200 lambda)^2 = 1.2e5)
  for (int kx : {3, 12}) {
    const double lam = (2.0 - 2.0 * std::cos(2.0 * pi * kx / 32.0)) / 4.0;
    const double mult = std::pow(gamma + alpha * lam, -2.0);
    const bool kept = std::pow(1.0 + alpha * lam / gamma, 2.0) < 1.0 / eps;
    Field3D f(g), out(g), ref(g);
    for (int z = 0; z < 20; ++z)
      for (int y = 0; y < 24; ++y)
        for (int x = 0; x < 32; ++x) {
          const float c = float(std::cos(2.0 * pi * kx * x / 32.0));
          f.set(x, y, z, Vec3Df(c, 0.5f * c, -c));
        }
    k.applyInverseOperator(out, f);
    exact.applyInverseOperator(ref, f);
    double worst = 0.0, worstExact = 0.0;
    for (int z = 0; z < 20; ++z)
      for (int y = 0; y < 24; ++y)
        for (int x = 0; x < 32; ++x) {
          const Vec3Df a = out.get(x, y, z), e = ref.get(x, y, z), in = f.get(x, y, z);
          const double want[3] = {kept ? mult * in.x : 0.0, kept ? mult * in.y : 0.0, kept ? mult * in.z : 0.0};
          for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(double(a[d]) - want[d]));
          for (int d = 0; d < 3; ++d) worstExact = std::max(worstExact, std::abs(double(e[d]) - mult * in[d]));
        }
    BOOST_CHECK_MESSAGE(worst <= 1e-6 * std::max(mult, 1e-3), "kx " << kx << ": " << worst);
    BOOST_CHECK_MESSAGE(worstExact <= 1e-6 * mult + 1e-9, "exact kx " << kx << ": " << worstExact);
    BOOST_CHECK_EQUAL(kept, kx == 3);
  }
}

BOOST_AUTO_TEST_CASE(gpu_matches_cpu, *boost::unit_test::precondition(GpuAvailable())) {
  const Params ps[] = {{0.01f, 0.01f, 0.001f, 1}, {0.5f, 0.2f, 0.f, 2}, {1.f, 1.f, 0.1f, 3},
                       {0.2f, 0.7f, 0.05f, 5}};
  for (const GridInfo& g : {kGrid3, kGrid2, kGridLong, GridInfo(Vec3Di(1, 1, 1))})
    for (const Params& p : ps)
      for (bool df : {false, true}) {
        FluidKernelFFT<EXEC_CPU> kc;
        FluidKernelFFT<EXEC_GPU> kg;
        configure(kc, p, g, df);
        configure(kg, p, g, df);
        Field3D v(g), fc(g), vd(g, MEM_DEVICE), fd(g, MEM_DEVICE), back(g);
        randomize(v, 17);
        Opers::Copy(vd, v);
        kc.applyInverseOperator(fc, v);
        kg.applyInverseOperator(fd, vd);
        Opers::Copy(back, fd);
        BOOST_TEST(relErr(toComps(back), toComps(fc)) < 1e-4);
        kc.applyOperator(fc, v);
        kg.applyOperator(vd);
        Opers::Copy(back, vd);
        BOOST_TEST(relErr(toComps(back), toComps(fc)) < 1e-4);
      }
}
