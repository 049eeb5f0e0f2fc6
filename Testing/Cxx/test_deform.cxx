// test_deform.cxx -- the C++ API of the deformation, splatting and
// differential operators (IFOpers.h, FOpers.h, HFOpers.h, VFOpers.h,
// IOpers.h, interp.h): exact properties (identity, integer shifts, linear
// functions, affine Jacobians), adjoint identities, in-place calls, the
// legacy messages, splat determinism, and CPU/GPU parity.
//
// References are computed here from the definitions (long double sums,
// closed forms), never from another PyCA operator.
#define BOOST_TEST_MODULE PyCA deformation operators
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "Aff3D.h"
#include "FOpers.h"
#include "Field3D.h"
#include "HFOpers.h"
#include "IFOpers.h"
#include "IOpers.h"
#include "Image3D.h"
#include "MemoryManager.h"
#include "PyCAException.h"
#include "Reduction.h"
#include "VFOpers.h"
#include "interp.h"

using namespace PyCA;

namespace {

const GridInfo kGrid3(Vec3Di(17, 13, 11), Vec3Df(0.7f, 1.3f, 2.1f), Vec3Df(-3.f, 1.f, 7.f));
const GridInfo kGrid2(Vec3Di(23, 19, 1), Vec3Df(1.25f, 0.8f, 1.f), Vec3Df(0.f, 0.f, 0.f));

void randomize(Image3D& im, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im.get()[i] = r.next(lo, hi);
}
void randomize(Field3D& f, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Rng r(seed);
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < f.nVox(); ++i) f.getComponent(d)[i] = r.next(lo, hi);
}

/// A smooth invertible H-field: identity + sines of amplitude amp voxels (0 in z for 2-D).
void smoothH(Field3D& h, float amp) {
  const Vec3Di s = h.size();
  for (int z = 0; z < s.z; ++z)
    for (int y = 0; y < s.y; ++y)
      for (int x = 0; x < s.x; ++x) {
        const float u = amp * std::sin(0.3f * y + 0.2f * z);
        const float v = amp * std::cos(0.25f * x + 0.1f * z);
        const float w = s.z > 1 ? amp * std::sin(0.2f * x + 0.3f * y) : 0.f;
        h.set(x, y, z, Vec3Df(x + u, y + v, z + w));
      }
}

long double dot(const Image3D& a, const Image3D& b) {
  long double s = 0;
  for (size_t i = 0; i < a.nVox(); ++i) s += (long double)a.get()[i] * b.get()[i];
  return s;
}
long double dot(const Field3D& a, const Field3D& b) {
  long double s = 0;
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < a.nVox(); ++i) s += (long double)a.getComponent(d)[i] * b.getComponent(d)[i];
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(identity_reproduces_images_and_fields) {
  for (const GridInfo& g : {kGrid3, kGrid2}) {
    Image3D im(g, MEM_HOST), out(g, MEM_HOST);
    Field3D h(g, MEM_HOST), f(g, MEM_HOST), fo(g, MEM_HOST);
    randomize(im, 1);
    randomize(f, 2);
    Opers::SetToIdentity(h);
    for (BackgroundStrategy bg : {BACKGROUND_STRATEGY_CLAMP, BACKGROUND_STRATEGY_WRAP, BACKGROUND_STRATEGY_ZERO,
                                  BACKGROUND_STRATEGY_PARTIAL_ZERO})
      for (InterpT it : {INTERP_NN, INTERP_LINEAR, INTERP_CUBIC}) {
        Opers::ApplyH(out, im, h, bg, it);
        for (size_t i = 0; i < g.nVox(); ++i) BOOST_REQUIRE_EQUAL(out.get()[i], im.get()[i]);
      }
    for (BackgroundStrategy bg : {BACKGROUND_STRATEGY_CLAMP, BACKGROUND_STRATEGY_WRAP, BACKGROUND_STRATEGY_ZERO,
                                  BACKGROUND_STRATEGY_PARTIAL_ZERO, BACKGROUND_STRATEGY_ID,
                                  BACKGROUND_STRATEGY_PARTIAL_ID}) {
      Opers::ApplyH(fo, f, h, bg);
      for (int d = 0; d < 3; ++d)
        for (size_t i = 0; i < g.nVox(); ++i) BOOST_REQUIRE_EQUAL(fo.getComponent(d)[i], f.getComponent(d)[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(integer_translation_shifts_exactly) {
  Image3D im(kGrid3, MEM_HOST), out(kGrid3, MEM_HOST);
  randomize(im, 3);
  Opers::ComposeTranslation(out, im, Vec3Df(2.f, -1.f, 3.f), BACKGROUND_STRATEGY_ZERO, INTERP_LINEAR);
  const Vec3Di s = kGrid3.size();
  for (int z = 0; z < s.z; ++z)
    for (int y = 0; y < s.y; ++y)
      for (int x = 0; x < s.x; ++x) {
        const int sx = x + 2, sy = y - 1, sz = z + 3;
        const bool in = sx < s.x && sy >= 0 && sz < s.z;
        BOOST_REQUIRE_EQUAL(out(x, y, z), in ? im(sx, sy, sz) : 0.f);
      }
}

BOOST_AUTO_TEST_CASE(interp_h_point_samplers) {
  // a linear function is reproduced exactly by trilinear interpolation; cubic
  // convolution (a = -1) reproduces constants (its weights sum to 1)
  const int sx = 9, sy = 8, sz = 7;
  std::vector<float> a(size_t(sx) * sy * sz);
  for (int z = 0; z < sz; ++z)
    for (int y = 0; y < sy; ++y)
      for (int x = 0; x < sx; ++x) a[size_t(x) + sx * (size_t(y) + sy * size_t(z))] = 1.f + 2.f * x - y + 0.5f * z;
  const float px = 3.3f, py = 4.6f, pz = 2.25f;
  const float want = 1.f + 2.f * px - py + 0.5f * pz;
  BOOST_TEST(triLerp<BACKGROUND_STRATEGY_CLAMP>(a.data(), px, py, pz, sx, sy, sz) == want, boost::test_tools::tolerance(1e-5f));
  const std::vector<float> c(a.size(), 2.5f);
  BOOST_TEST(cubicInterp<BACKGROUND_STRATEGY_CLAMP>(c.data(), px, py, pz, sx, sy, sz) == 2.5f,
             boost::test_tools::tolerance(1e-5f));
  // cubic convolution interpolates: exact on grid points
  BOOST_TEST(cubicInterp<BACKGROUND_STRATEGY_CLAMP>(a.data(), 3.f, 4.f, 2.f, sx, sy, sz) == a[3 + sx * (4 + sy * 2)]);
  BOOST_TEST(nearestNeighbor<BACKGROUND_STRATEGY_CLAMP>(a.data(), px, py, pz, sx, sy, sz) ==
             a[3 + sx * (5 + sy * 2)]);
  // background strategies outside the grid
  BOOST_TEST(triLerp<BACKGROUND_STRATEGY_ZERO>(a.data(), -3.f, 1.f, 1.f, sx, sy, sz) == 0.f);
  BOOST_TEST(triLerp<BACKGROUND_STRATEGY_VAL>(a.data(), -3.f, 1.f, 1.f, sx, sy, sz, 7.f) == 7.f);
  BOOST_TEST(triLerp<BACKGROUND_STRATEGY_CLAMP>(a.data(), -3.f, 1.f, 1.f, sx, sy, sz) == a[sx * (1 + sy)]);
  BOOST_TEST(triLerp<BACKGROUND_STRATEGY_WRAP>(a.data(), float(sx), 1.f, 1.f, sx, sy, sz) == a[sx * (1 + sy)]);
  // NaN coordinates do not crash and take the background (far outside)
  BOOST_TEST(triLerp<BACKGROUND_STRATEGY_ZERO>(a.data(), NAN, 1.f, 1.f, sx, sy, sz) == 0.f);
  float ox, oy, oz;
  triLerp<BACKGROUND_STRATEGY_ID>(ox, oy, oz, a.data(), a.data(), a.data(), -0.5f, 2.f, 3.f, sx, sy, sz);
  BOOST_TEST((ox == -0.5f && oy == 2.f && oz == 3.f));
}

BOOST_AUTO_TEST_CASE(splat_is_the_adjoint_of_applyh) {
  for (const GridInfo& g : {kGrid3, kGrid2}) {
    Image3D I(g, MEM_HOST), J(g, MEM_HOST), AI(g, MEM_HOST), SJ(g, MEM_HOST);
    Field3D h(g, MEM_HOST);
    randomize(I, 4);
    randomize(J, 5);
    smoothH(h, 2.5f);
    Opers::ApplyH(AI, I, h, BACKGROUND_STRATEGY_ZERO, INTERP_LINEAR);
    Opers::Splat(SJ, h, J);
    const long double l = dot(AI, J), r = dot(I, SJ);
    BOOST_TEST(std::fabs(double(l - r)) <= 1e-5 * std::fabs(double(l)) + 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(ad_and_coad_are_adjoint) {
  Field3D g(kGrid3, MEM_HOST), X(kGrid3, MEM_HOST), m(kGrid3, MEM_HOST), AdX(kGrid3, MEM_HOST),
      CoAdm(kGrid3, MEM_HOST);
  smoothH(g, 1.5f);
  randomize(X, 6);
  randomize(m, 7);
  Opers::Ad(AdX, g, X);
  // the splat drops corners outside the grid: the adjoint sampling is PARTIAL_ZERO
  Opers::CoAd(CoAdm, g, m, BACKGROUND_STRATEGY_PARTIAL_ZERO);
  const long double l = dot(AdX, m), r = dot(X, CoAdm);
  BOOST_TEST(std::fabs(double(l - r)) <= 1e-5 * std::fabs(double(l)) + 1e-5);
}

BOOST_AUTO_TEST_CASE(gradient_of_a_linear_function_is_exact) {
  Image3D im(kGrid3, MEM_HOST);
  Field3D g(kGrid3, MEM_HOST);
  const Vec3Di s = kGrid3.size();
  for (int z = 0; z < s.z; ++z)
    for (int y = 0; y < s.y; ++y)
      for (int x = 0; x < s.x; ++x) im(x, y, z) = 3.f * x - 2.f * y + 0.5f * z;
  const Vec3Df sp = kGrid3.spacing();
  for (DiffT diff : {DIFF_FORWARD, DIFF_BACKWARD, DIFF_CENTRAL}) {
    Opers::Gradient(g, im, diff, BC_APPROX);
    // interior (forward/backward are exact away from the far edge, central everywhere with BC_APPROX)
    for (int z = 1; z < s.z - 1; ++z)
      for (int y = 1; y < s.y - 1; ++y)
        for (int x = 1; x < s.x - 1; ++x) {
          const Vec3Df v = g.get(x, y, z);
          BOOST_REQUIRE(std::fabs(v.x - 3.f / sp.x) < 1e-4f);
          BOOST_REQUIRE(std::fabs(v.y + 2.f / sp.y) < 1e-4f);
          BOOST_REQUIRE(std::fabs(v.z - 0.5f / sp.z) < 1e-4f);
        }
  }
  Opers::Gradient(g, im, DIFF_CENTRAL, BC_APPROX);
  const Vec3Df c = g.get(0, 0, 0), e = g.get(s.x - 1, s.y - 1, s.z - 1);
  BOOST_TEST(std::fabs(c.x - 3.f / sp.x) < 1e-4f);
  BOOST_TEST(std::fabs(e.z - 0.5f / sp.z) < 1e-4f);
  Opers::Gradient(g, im, DIFF_CENTRAL, BC_CLAMP);  // half the one-sided difference at the edges
  BOOST_TEST(std::fabs(g.get(0, 5, 5).x - 1.5f / sp.x) < 1e-4f);
}

BOOST_AUTO_TEST_CASE(jacdeth_of_an_affine_field_is_its_determinant) {
  for (const GridInfo& gr : {kGrid3, kGrid2}) {
    Field3D h(gr, MEM_HOST);
    Image3D j(gr, MEM_HOST);
    const bool flat = gr.size().z == 1;
    const float M[3][3] = {{1.1f, 0.2f, flat ? 0.f : 0.1f}, {-0.3f, 0.9f, flat ? 0.f : 0.05f},
                           {flat ? 0.f : 0.02f, flat ? 0.f : -0.1f, 1.05f}};
    const Vec3Di s = gr.size();
    for (int z = 0; z < s.z; ++z)
      for (int y = 0; y < s.y; ++y)
        for (int x = 0; x < s.x; ++x)
          h.set(x, y, z, Vec3Df(M[0][0] * x + M[0][1] * y + M[0][2] * z + 2.f, M[1][0] * x + M[1][1] * y + M[1][2] * z,
                                flat ? 0.f : M[2][0] * x + M[2][1] * y + M[2][2] * z - 1.f));
    const double det = flat ? double(M[0][0]) * M[1][1] - double(M[0][1]) * M[1][0]
                            : M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) -
                                  M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
                                  M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]);
    // the legacy units: derivatives per unit of spacing, det / voxel volume
    // (sx sy in 2-D); the extension JacDetHVoxel: det itself
    const Vec3Df sp = gr.spacing();
    const double vol = flat ? double(sp.x) * sp.y : double(sp.x) * sp.y * sp.z;
    Opers::JacDetH(j, h);
    for (size_t i = 0; i < gr.nVox(); ++i) BOOST_REQUIRE(std::fabs(j.get()[i] - det / vol) < 1e-4);
    Opers::JacDetHVoxel(j, h);
    for (size_t i = 0; i < gr.nVox(); ++i) BOOST_REQUIRE(std::fabs(j.get()[i] - det) < 1e-4);
  }
}

BOOST_AUTO_TEST_CASE(jacdeth_of_the_identity_is_one_over_the_voxel_volume) {
  // 3-D: 1 / (0.7 * 1.3 * 2.1); 2-D (sz = 1): 1 / (sx * sy), z spacing unused
  const GridInfo flat(Vec3Di(9, 7, 1), Vec3Df(1.5f, 0.6f, 3.f));
  for (const GridInfo& gr : {kGrid3, flat}) {
    Field3D h(gr, MEM_HOST), X(gr, MEM_HOST), Y(gr, MEM_HOST), Z(gr, MEM_HOST);
    Image3D j(gr, MEM_HOST);
    Opers::SetToIdentity(h);
    const Vec3Df sp = gr.spacing();
    const double vol = gr.size().z == 1 ? double(sp.x) * sp.y : double(sp.x) * sp.y * sp.z;
    Opers::JacDetH(j, h);
    for (size_t i = 0; i < gr.nVox(); ++i) BOOST_REQUIRE(std::fabs(j.get()[i] * vol - 1.0) < 1e-5);
    Opers::JacDetHVoxel(j, h);
    for (size_t i = 0; i < gr.nVox(); ++i) BOOST_REQUIRE(std::fabs(j.get()[i] - 1.0) < 1e-5);
    // the three-gradient forms on Jacobian(h) (physical rows): the same values
    Opers::Jacobian(X, Y, Z, h, DIFF_CENTRAL, BC_APPROX);
    Opers::JacDetH(j, X, Y, Z);
    for (size_t i = 0; i < gr.nVox(); ++i) BOOST_REQUIRE(std::fabs(j.get()[i] * vol - 1.0) < 1e-5);
    Opers::JacDetHVoxel(j, X, Y, Z);
    for (size_t i = 0; i < gr.nVox(); ++i) BOOST_REQUIRE(std::fabs(j.get()[i] - 1.0) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(htov_vtoh_round_trip_with_anisotropic_spacing) {
  Field3D v(kGrid3, MEM_HOST), h(kGrid3, MEM_HOST), v2(kGrid3, MEM_HOST);
  randomize(v, 8, -3.f, 3.f);
  Opers::VtoH(h, v, 0.5f);
  Opers::HtoV(v2, h);
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < v.nVox(); ++i)
      BOOST_REQUIRE(std::fabs(v2.getComponent(d)[i] - 0.5f * v.getComponent(d)[i]) < 2e-5f);
}

BOOST_AUTO_TEST_CASE(fixed_point_inverse_converges_on_a_smooth_deformation) {
  Field3D g(kGrid3, MEM_HOST), ginv(kGrid3, MEM_HOST), c(kGrid3, MEM_HOST);
  smoothH(g, 0.8f);
  Opers::FixedPointInverse(ginv, g, 30);
  Opers::ComposeHH(c, g, ginv, BACKGROUND_STRATEGY_PARTIAL_ID);
  const Vec3Di s = kGrid3.size();
  double worst = 0;
  for (int z = 2; z < s.z - 2; ++z)
    for (int y = 2; y < s.y - 2; ++y)
      for (int x = 2; x < s.x - 2; ++x) {
        const Vec3Df p = c.get(x, y, z);
        worst = std::fmax(worst, std::fabs(p.x - x) + std::fabs(p.y - y) + std::fabs(p.z - z));
      }
  BOOST_TEST(worst < 1e-3);
}

BOOST_AUTO_TEST_CASE(in_place_calls_match_out_of_place) {
  Image3D im(kGrid3, MEM_HOST), ref(kGrid3, MEM_HOST), cp(kGrid3, MEM_HOST);
  Field3D h(kGrid3, MEM_HOST), f(kGrid3, MEM_HOST), fref(kGrid3, MEM_HOST);
  randomize(im, 9);
  smoothH(h, 2.f);
  Opers::ApplyH(ref, im, h);
  Opers::Copy(cp, im);
  Opers::ApplyH(cp, cp, h);
  for (size_t i = 0; i < im.nVox(); ++i) BOOST_REQUIRE_EQUAL(cp.get()[i], ref.get()[i]);
  Opers::Splat(ref, h, im);
  Opers::Copy(cp, im);
  Opers::Splat(cp, h, cp);
  for (size_t i = 0; i < im.nVox(); ++i) BOOST_REQUIRE_EQUAL(cp.get()[i], ref.get()[i]);
  Opers::Copy(f, h);
  Opers::ComposeHH(fref, h, h);
  Opers::ComposeHH(f, f, h);
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < f.nVox(); ++i) BOOST_REQUIRE_EQUAL(f.getComponent(d)[i], fref.getComponent(d)[i]);
}

BOOST_AUTO_TEST_CASE(splat_is_deterministic_and_loses_nothing) {
  Image3D I(kGrid3, MEM_HOST), a(kGrid3, MEM_HOST), b(kGrid3, MEM_HOST);
  Field3D h(kGrid3, MEM_HOST);
  smoothH(h, 1.f);
  // far from the border nothing leaves the grid: a huge constant is conserved
  Opers::SetMem(I, 0.f);
  const Vec3Di s = kGrid3.size();
  for (int z = 3; z < s.z - 3; ++z)
    for (int y = 3; y < s.y - 3; ++y)
      for (int x = 3; x < s.x - 3; ++x) I(x, y, z) = 1e6f;
  Opers::Splat(a, h, I);
  Opers::Splat(b, h, I);
  for (size_t i = 0; i < I.nVox(); ++i) BOOST_REQUIRE_EQUAL(a.get()[i], b.get()[i]);
  BOOST_TEST(std::fabs(Opers::Sum(a) - Opers::Sum(I)) <= 1e-6 * Opers::Sum(I));
}

BOOST_AUTO_TEST_CASE(legacy_messages) {
  Image3D a(kGrid3, MEM_HOST), b(kGrid2, MEM_HOST);
  Field3D h(kGrid3, MEM_HOST), h2(kGrid2, MEM_HOST);
  Opers::SetToIdentity(h);
  CHECK_PYCA_THROW(Opers::ApplyH(a, a, h2), PyCAException, "Input grids are not equal");
  CHECK_PYCA_THROW(Opers::ApplyH(a, a, h, BACKGROUND_STRATEGY_ID), PyCAException,
                   "Unknown/unimplemented background strategy");
  CHECK_PYCA_THROW(Opers::ApplyH(a, a, h, BACKGROUND_STRATEGY_CLAMP, InterpT(7)), PyCAException,
                   "Unknown interpolation strategy");
  CHECK_PYCA_THROW(Opers::Resample(a, b, BACKGROUND_STRATEGY_PARTIAL_ID), PyCAException,
                   "Unknown background strategy");
  CHECK_PYCA_THROW(Opers::ComposeHH(h, h, h, BACKGROUND_STRATEGY_ZERO), PyCAException,
                   "Unknown/unsupported background strategy");
  CHECK_PYCA_THROW(Opers::CoAd(h, h, h, BACKGROUND_STRATEGY_ID), PyCAException,
                   "Unknown/unsupported background strategy");
  Field3D g(kGrid3, MEM_HOST);
  CHECK_PYCA_THROW(Opers::GradientMask(g, a, a, DIFF_CENTRAL, BC_WRAP), PyCAException,
                   "BC_WRAP boundary condition unimplemented for masked gradient");
  CHECK_PYCA_THROW(Opers::FiniteDiff(a, a, DimT(5)), PyCAException, "unknown DimT");
  CHECK_PYCA_THROW(Opers::Gradient(g, a, DiffT(9)), PyCAException, "unknown DiffT");
  Image3D k(GridInfo(Vec3Di(2, 3, 3)), MEM_HOST);
  CHECK_PYCA_THROW(Opers::Convolve(a, a, k), PyCAException, "Only odd-sized kernels allowed in convolution");
  Aff3Df singular(Mat3Df(0, 0, 0, 0, 0, 0, 0, 0, 0), Vec3Df(1.f, 2.f, 3.f));
  CHECK_PYCA_THROW(Opers::InitializeHFromAffine(h, singular, true), PyCAException,
                   "Error, could not invert affine transform");
}

BOOST_AUTO_TEST_CASE(scratch_comes_from_the_memory_manager) {
  ThreadMemoryManager::init(kGrid3, MEM_HOST, 4);
  {
    Image3D im(kGrid3, MEM_HOST);
    Field3D h(kGrid3, MEM_HOST), gi(kGrid3, MEM_HOST);
    randomize(im, 10);
    smoothH(h, 1.f);
    Opers::ApplyH(im, im, h);  // aliased: a scratch copy
    Opers::Splat(im, h, im, true);
    Opers::FixedPointInverse(gi, h, 3);
    BOOST_TEST(ThreadMemoryManager::instance().poolsInUse() == 0u);
    BOOST_TEST(ThreadMemoryManager::instance().peakInUse() > 0u);
  }
  ThreadMemoryManager::destroy();
}

BOOST_AUTO_TEST_CASE(gpu_parity, *boost::unit_test::precondition(GpuAvailable())) {
  const GridInfo g(Vec3Di(33, 29, 17), Vec3Df(1.f, 1.5f, 0.8f));
  Image3D I(g, MEM_HOST), outH(g, MEM_HOST), outD(g, MEM_DEVICE), ID(g, MEM_DEVICE), back(g, MEM_HOST);
  Field3D h(g, MEM_HOST), hD(g, MEM_DEVICE), fH(g, MEM_HOST), fD(g, MEM_DEVICE), fback(g, MEM_HOST);
  randomize(I, 11);
  smoothH(h, 2.f);
  Opers::Copy(ID, I);
  Opers::Copy(hD, h);
  auto maxDiff = [&](const Image3D& a, const Image3D& b) {
    double m = 0;
    for (size_t i = 0; i < a.nVox(); ++i) m = std::fmax(m, std::fabs(double(a.get()[i]) - b.get()[i]));
    return m;
  };
  for (InterpT it : {INTERP_NN, INTERP_LINEAR, INTERP_CUBIC}) {
    Opers::ApplyH(outH, I, h, BACKGROUND_STRATEGY_CLAMP, it);
    Opers::ApplyH(outD, ID, hD, BACKGROUND_STRATEGY_CLAMP, it);
    Opers::Copy(back, outD);
    BOOST_TEST(maxDiff(outH, back) < (it == INTERP_NN ? 2.0 : 1e-5));
  }
  Opers::Splat(outH, h, I);
  Opers::Splat(outD, hD, ID);
  Opers::Copy(back, outD);
  BOOST_TEST(maxDiff(outH, back) < 1e-4);
  Opers::Gradient(fH, I);
  Opers::Gradient(fD, ID);
  Opers::Copy(fback, fD);
  double m = 0;
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < g.nVox(); ++i)
      m = std::fmax(m, std::fabs(double(fH.getComponent(d)[i]) - fback.getComponent(d)[i]));
  BOOST_TEST(m < 1e-5);
}
