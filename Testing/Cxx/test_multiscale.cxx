// test_multiscale.cxx -- the C++ API of the filters and multiscale classes
// (GaussianFilter.h, IdentityFilter.h, MultiscaleManager.h,
// MultiscaleResampler.h): the Gaussian against a long-double evaluation of
// its definition (normalised convolution, every axis), the raw-array forms,
// the level grids of spec 2.8, the resamplers' level changes, scratch
// returned to the thread memory manager, the legacy messages, and CPU/GPU
// parity (skipped without a device).
#define BOOST_TEST_MODULE PyCA filters and multiscale
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "FOpers.h"
#include "Field3D.h"
#include "GaussianFilter.h"
#include "HFOpers.h"
#include "IOpers.h"
#include "Image3D.h"
#include "MemoryManager.h"
#include "MultiscaleManager.h"
#include "MultiscaleResampler.h"
#include "PyCAException.h"

using namespace PyCA;

namespace {

const GridInfo kGrid(Vec3Di(15, 12, 9), Vec3Df(1.5f, 0.8f, 2.5f), Vec3Df(1.f, -2.f, 0.5f));

void randomize(Image3D& im, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im.get()[i] = r.next();
}

/// The definition, in long double: per axis d with radius r_d (already
/// clipped) out(p) = sum_k w_k in(p + k e_d) / sum_k w_k over in-grid taps.
std::vector<double> gaussRef(const std::vector<double>& in, Vec3Di s, Vec3Df sigma, Vec3Di r) {
  std::vector<double> a = in, b(in.size());
  for (int d = 0; d < 3; ++d) {
    if (r[d] == 0 || sigma[d] <= 0.f) continue;
    for (int z = 0; z < s.z; ++z)
      for (int y = 0; y < s.y; ++y)
        for (int x = 0; x < s.x; ++x) {
          const int p[3] = {x, y, z};
          long double num = 0, den = 0;
          for (int k = -r[d]; k <= r[d]; ++k) {
            int q[3] = {x, y, z};
            q[d] += k;
            if (q[d] < 0 || q[d] >= s[d]) continue;
            const long double w = std::exp(-(long double)(k * k) / (2.0L * sigma[d] * sigma[d]));
            num += w * a[size_t(q[0]) + size_t(s.x) * (size_t(q[1]) + size_t(s.y) * size_t(q[2]))];
            den += w;
          }
          b[size_t(p[0]) + size_t(s.x) * (size_t(p[1]) + size_t(s.y) * size_t(p[2]))] = double(num / den);
        }
    a.swap(b);
  }
  return a;
}

std::vector<double> values(const Image3D& im) { return std::vector<double>(im.get(), im.get() + im.nVox()); }

double maxDiff(const float* a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

// ---- GaussianFilter ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(gaussian_matches_definition) {
  const Vec3Df sigma(1.3f, 0.7f, 2.0f);
  const Vec3Di radius(4, 9, 5);  // y and z get clipped (5 and 3)
  GaussianFilterCPU f;
  f.updateParams(kGrid.size(), sigma, radius);
  BOOST_CHECK(f.getKernelRadius() == Vec3Di(4, 5, 3));
  Image3D in(kGrid, MEM_HOST), out(kGrid, MEM_HOST), tmp(kGrid, MEM_HOST);
  randomize(in, 1);
  f.filter(out, in, tmp);
  BOOST_CHECK_LT(maxDiff(out.get(), gaussRef(values(in), kGrid.size(), sigma, f.getKernelRadius())), 2e-6);
}

BOOST_AUTO_TEST_CASE(gaussian_every_axis_and_raw_forms) {
  Image3D in(kGrid, MEM_HOST), out(kGrid, MEM_HOST), tmp(kGrid, MEM_HOST);
  randomize(in, 2);
  for (int d = 0; d < 3; ++d) {
    Vec3Df sigma(0.f, 0.f, 0.f);
    Vec3Di radius(0, 0, 0);
    sigma[d] = 1.1f;
    radius[d] = 3;
    GaussianFilterCPU f;
    f.updateParams(kGrid.size(), sigma, radius);
    const std::vector<double> want = gaussRef(values(in), kGrid.size(), sigma, radius);
    f.filter(out, in, tmp);
    BOOST_CHECK_LT(maxDiff(out.get(), want), 2e-6);
    // raw arrays, and the single pass along d with a filter of all three axes
    f.filter(out.get(), in.get(), tmp.get());
    BOOST_CHECK_LT(maxDiff(out.get(), want), 2e-6);
    f.filter(out.get(), in.get(), nullptr);
    BOOST_CHECK_LT(maxDiff(out.get(), want), 2e-6);
    GaussianFilterCPU all;
    all.updateParams(kGrid.size(), Vec3Df(1.1f, 1.1f, 1.1f), Vec3Di(3, 3, 3));
    all.convolutionSingleAxis(out.get(), in.get(), d);
    BOOST_CHECK_LT(maxDiff(out.get(), want), 2e-6);
  }
  GaussianFilterCPU f;
  f.updateParams(kGrid.size(), Vec3Df(1.f, 1.f, 1.f), Vec3Di(2, 2, 2));
  CHECK_PYCA_THROW(f.convolutionSingleAxis(out.get(), in.get(), 3), PyCAException, "unknown DimT");
  CHECK_PYCA_THROW(f.convolutionSingleAxis(in.get(), in.get(), 0), PyCAException, "must not overlap");
}

BOOST_AUTO_TEST_CASE(gaussian_in_place_field_and_interface) {
  const Vec3Df sigma(1.f, 1.5f, 0.8f);
  const Vec3Di radius(3, 4, 2);
  GaussianFilterCPU f;
  GaussianFilterInterface& gi = f;
  gi.updateParams(kGrid.size(), sigma, radius);
  Image3D im(kGrid, MEM_HOST), tmp(kGrid, MEM_HOST);
  randomize(im, 3);
  const std::vector<double> want = gaussRef(values(im), kGrid.size(), sigma, radius);
  gi.filter(im, im, tmp);
  BOOST_CHECK_LT(maxDiff(im.get(), want), 2e-6);
  Field3D fi(kGrid, MEM_HOST), fo(kGrid, MEM_HOST);
  Image3D c(kGrid, MEM_HOST);
  randomize(c, 4);
  for (int d = 0; d < 3; ++d) Opers::Copy(fo, c, d);
  Opers::Copy(fi, fo);
  const std::vector<double> wc = gaussRef(values(c), kGrid.size(), sigma, radius);
  gi.filter(fo, fi, tmp);
  for (int d = 0; d < 3; ++d) BOOST_CHECK_LT(maxDiff(fo.getComponent(d), wc), 2e-6);
}

BOOST_AUTO_TEST_CASE(gaussian_rebuilds_and_errors) {
  GaussianFilterCPU f;
  f.updateParams(Vec3Di(10, 10, 10), Vec3Df(1.f, 1.f, 1.f), Vec3Di(2, 2, 2));
  f.updateParams(Vec3Di(10, 10, 10), Vec3Df(1.f, 1.f, 1.f), Vec3Di(2, 2, 2));
  BOOST_CHECK_EQUAL(f.kernelBuilds(), 1u);
  f.updateParams(Vec3Di(10, 10, 10), Vec3Df(1.f, 2.f, 1.f), Vec3Di(2, 2, 2));
  BOOST_CHECK_EQUAL(f.kernelBuilds(), 2u);
  CHECK_PYCA_THROW(f.updateParams(Vec3Di(10, 10, 10), Vec3Df(INFINITY, 1.f, 1.f), Vec3Di(2, 2, 2)),
                   PyCAValueException, "sigma must be finite");
  BOOST_CHECK(f.getSigma() == Vec3Df(1.f, 2.f, 1.f));
  const GridInfo g(Vec3Di(10, 10, 10)), h(Vec3Di(10, 10, 9));
  Image3D a(g, MEM_HOST), o(g, MEM_HOST), t(g, MEM_HOST), b(h, MEM_HOST);
  CHECK_PYCA_THROW(f.filter(o, b, t), PyCAException, "Inputs have different Size");
  GaussianFilterGPU gpu;
  gpu.updateParams(g.size(), Vec3Df(1.f, 1.f, 1.f), Vec3Di(2, 2, 2));
  CHECK_PYCA_THROW(gpu.filter(o, a, t), PyCAException, "Using EXEC_GPU object on host memory");
}

// ---- Multiscale, MultiscaleManager -----------------------------------------------

BOOST_AUTO_TEST_CASE(downscale_rule) {
  const GridInfo g = Multiscale::downScale(kGrid, 4);
  BOOST_CHECK(g.size() == Vec3Di(3, 3, 2));
  BOOST_CHECK_CLOSE(g.spacing().x, 1.5f * 15 / 3, 1e-4);
  BOOST_CHECK_CLOSE(g.spacing().z, 2.5f * 9 / 2, 1e-4);
  BOOST_CHECK(g.origin() == kGrid.origin());
  BOOST_CHECK(Multiscale::downScale(kGrid, 100).size() == Vec3Di(1, 1, 1));
  BOOST_CHECK(Multiscale::downScale(kGrid, 1) == kGrid);
  CHECK_PYCA_THROW(Multiscale::downScale(kGrid, 0), PyCAException, "downsample factor must be positive");
}

BOOST_AUTO_TEST_CASE(manager_levels_and_messages) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  MultiscaleManager mm(kGrid);
  mm.addScaleLevel(1);
  mm.addScaleLevel(4);
  mm.addScaleLevel(2);
  mm.start();
  mm.next();
  BOOST_CHECK(captured.str().empty());  // silent by default
  mm.setVerbose(true);
  mm.next();
  std::cout.rdbuf(old);
  BOOST_CHECK(contains(captured.str(), "level is 2"));
  BOOST_CHECK_EQUAL(mm.nScale(), 3u);
  BOOST_CHECK_EQUAL(mm.getScaleFactor(0), 4u);
  BOOST_CHECK_EQUAL(mm.getScaleFactor(2), 1u);
  BOOST_CHECK(mm.isLastScale() && mm.isIdentityScale() && !mm.isFirstScale());
  BOOST_CHECK(mm.getCurGrid() == kGrid);
  BOOST_CHECK(mm.getPreGrid() == Multiscale::downScale(kGrid, 2));
  BOOST_CHECK_CLOSE(mm.getCurFactor().x, 7.f / 15.f, 1e-4);
  mm.setVerbose(false);
  mm.set(0);
  BOOST_CHECK(mm.getPreGrid() == kGrid);
  BOOST_CHECK_CLOSE(mm.getCurFactor().y, 12.f / 3.f, 1e-4);
  CHECK_PYCA_THROW(mm.addScaleLevel(2), PyCAException,
                   "Error, cannot add multiple scale levels with the same downsample factor");
  BOOST_CHECK_THROW(mm.getScaleFactor(3), std::out_of_range);
  MultiscaleManager empty(kGrid);
  CHECK_PYCA_THROW(empty.next(), PyCAException, "no scale levels");
}

// ---- MultiscaleResampler ------------------------------------------------------

BOOST_AUTO_TEST_CASE(resampler_level_changes_and_scratch) {
  ThreadMemoryManager::init(kGrid, MEM_HOST, 8);
  MemoryManager& pools = ThreadMemoryManager::instance();
  MultiscaleManager mm(kGrid);
  mm.addScaleLevel(3);
  mm.addScaleLevel(1);
  mm.start();
  MultiscaleResamplerGaussCPU rs(kGrid);
  Image3D unused(kGrid, MEM_HOST);
  CHECK_PYCA_THROW(rs.upsampleImage(unused), PyCAException, "setScaleLevel has not been called");
  rs.setScaleLevel(mm);
  BOOST_CHECK_CLOSE(rs.getSigma().x, std::sqrt(15.f / 5.f / 2.f), 1e-4);
  // a constant image stays constant through smoothing and resampling
  Image3D orig(kGrid, MEM_HOST), a(kGrid, MEM_HOST), b(kGrid, MEM_HOST);
  Opers::SetMem(orig, 2.5f);
  rs.downsampleImage(a, orig);
  BOOST_CHECK(a.grid() == mm.getCurGrid());
  for (size_t i = 0; i < a.nVox(); ++i) BOOST_CHECK_CLOSE(a.get()[i], 2.5f, 1e-4);
  // updateImage: downsample into the scratch buffer, then swap the pointers
  Image3D* cur = &a;
  Image3D* spare = &b;
  rs.updateImage(cur, orig, spare);
  BOOST_CHECK(cur == &b && spare == &a);
  BOOST_CHECK(b.grid() == mm.getCurGrid());
  // the identity H-field stays the identity across a level change
  Field3D h(mm.getCurGrid(), MEM_HOST);
  Opers::SetToIdentity(h);
  mm.next();
  rs.setScaleLevel(mm);
  rs.updateHField(h);
  BOOST_CHECK(h.grid() == kGrid);
  Field3D id(kGrid, MEM_HOST);
  Opers::SetToIdentity(id);
  double m = 0;
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < h.nVox(); ++i)
      m = std::max(m, std::fabs(double(h.getComponent(d)[i]) - double(id.getComponent(d)[i])));
  BOOST_CHECK_LT(m, 1e-4);
  BOOST_CHECK_EQUAL(pools.poolsInUse(), 0u);
  BOOST_CHECK_GE(pools.peakInUse(), 2u);
  ThreadMemoryManager::destroy();
}

BOOST_AUTO_TEST_CASE(resampler_errors) {
  MultiscaleManager mm(kGrid);
  mm.start();
  MultiscaleResamplerCPU rs(kGrid);
  MultiscaleResamplerInterface& ri = rs;
  MultiscaleManager other(GridInfo(Vec3Di(4, 4, 4)));
  other.start();
  CHECK_PYCA_THROW(ri.setScaleLevel(other), PyCAException, "Input grids are not equal");
  ri.setScaleLevel(mm);
  BOOST_CHECK(ri.getScaleManager().getCurGrid() == kGrid);
  Image3D a(kGrid, MEM_HOST), small(GridInfo(Vec3Di(4, 4, 4)), MEM_HOST);
  CHECK_PYCA_THROW(ri.downsampleImage(a, small), PyCAException, "Inputs have different Size");
  Image3D* nul = nullptr;
  Image3D* pa = &a;
  CHECK_PYCA_THROW(ri.updateImage(pa, a, nul), PyCAException, "null image");
  MultiscaleResamplerGaussGPU gpu(kGrid);
  gpu.setScaleLevel(mm);
  CHECK_PYCA_THROW(gpu.downsampleImage(a, a), PyCAException, "Using EXEC_GPU object on host memory");
}

// ---- GPU ----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(gpu_gaussian_parity, *boost::unit_test::precondition(GpuAvailable())) {
  const Vec3Df sigma(1.2f, 2.f, 0.9f);
  const Vec3Di radius(3, 5, 2);
  GaussianFilterCPU fc;
  GaussianFilterGPU fg;
  fc.updateParams(kGrid.size(), sigma, radius);
  fg.updateParams(kGrid.size(), sigma, radius);
  Image3D in(kGrid, MEM_HOST), oc(kGrid, MEM_HOST), t(kGrid, MEM_HOST);
  randomize(in, 9);
  fc.filter(oc, in, t);
  Image3D din(kGrid, MEM_DEVICE), dout(kGrid, MEM_DEVICE), dt(kGrid, MEM_DEVICE), back(kGrid, MEM_HOST);
  Opers::Copy(din, in);
  fg.filter(dout, din, dt);
  Opers::Copy(back, dout);
  BOOST_CHECK_LT(maxDiff(back.get(), values(oc)), 1e-5);
  CHECK_PYCA_THROW(fc.filter(dout, din, dt), PyCAException, "Using EXEC_CPU object on non-host memory");
}
