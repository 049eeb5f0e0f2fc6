// A downstream program: legacy header names, images, the thread memory
// manager, a few operators, the affine types and the raw-array MemOpers.
// Exit code 0 on success.
#include <Aff3D.h>
#include <FOpers.h>
#include <HFOpers.h>
#include <IFOpers.h>
#include <Field3D.h>
#include <IOpers.h>
#include <Image3D.h>
#include <ManagedImage3D.h>
#include <Mat3D.h>
#include <MemOpers.h>
#include <MemoryManager.h>
#include <Reduction.h>
#include <VFOpers.h>
#include <Vec2D.h>
#include <interp.h>

#include <cmath>
#include <exception>
#include <iostream>
#include <string>

namespace {
int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "pyca_consumer: FAILED: " << what << std::endl;
    ++failures;
  }
}
}  // namespace

int main() {
  try {
    const PyCA::GridInfo grid(PyCA::Vec3Di(17, 19, 23), PyCA::Vec3Df(1.f, 1.f, 2.f));
    const double n = double(grid.nVox());

    PyCA::Image3D a(grid, PyCA::MEM_HOST);
    PyCA::Opers::SetMem(a, 1.5f);
    check(a.get(16, 18, 22) == 1.5f, "SetMem wrote every voxel");

    PyCA::ThreadMemoryManager::init(grid, PyCA::MEM_HOST, 2);
    {
      PyCA::ManagedImage3D b(grid, PyCA::MEM_HOST);
      PyCA::ManagedImage3D sum(grid, PyCA::MEM_HOST);
      check(PyCA::ThreadMemoryManager::instance().poolsInUse() == 2, "two pools in use");
      PyCA::Opers::SetMem(b, 0.25f);
      PyCA::Opers::Add(sum, a, b);
      const double s = PyCA::Opers::Sum(sum);
      check(std::fabs(s - 1.75 * n) < 1e-9 * n, "Sum(a + b) == 1.75 * nVox");

      PyCA::Field3D f(grid, PyCA::MEM_HOST);
      PyCA::Opers::SetMem(f, PyCA::Vec3Df(1.f, 2.f, 3.f));
      check(std::fabs(PyCA::Opers::Sum(f) - 6.0 * n) < 1e-9 * n, "Sum(field) == 6 * nVox");
    }
    check(PyCA::ThreadMemoryManager::instance().poolsInUse() == 0, "pools returned");
    check(PyCA::ThreadMemoryManager::instance().getNumPools() == 2, "no extra pools");
    PyCA::ThreadMemoryManager::destroy();

    // Vec2D + MaxMin: x = max, y = min
    PyCA::Image3D ramp(grid, PyCA::MEM_HOST);
    PyCA::MemOpers<EXEC_CPU, float>::SetLinearDown(ramp.get(), grid.nVox());
    PyCA::Opers::AddC_I<EXEC_CPU>(ramp.get(), -10.f, grid.nVox());
    PyCA::Vec2Df mm;
    PyCA::Opers::MaxMin(mm, ramp);
    check(mm.x == float(grid.nVox() - 1) - 10.f && mm.y == -10.f, "MaxMin of a MemOpers ramp");

    // Mat3D / Aff3D: compose with the inverse
    const PyCA::Aff3Dd t(PyCA::Mat3Dd(2, 1, 0, 0, 1, 0, 0, 0, 4), PyCA::Vec3Dd(1, 2, 3));
    PyCA::Aff3Dd inv = t;
    check(inv.invert(), "Aff3Dd invert");
    const PyCA::Vec3Dd p = (inv * t) * PyCA::Vec3Dd(5, -6, 7);
    check(std::fabs(p.x - 5) < 1e-12 && std::fabs(p.y + 6) < 1e-12 && std::fabs(p.z - 7) < 1e-12,
          "inverse * transform == identity");
    check(t.determinant() == 8.0, "Aff3D determinant");
    // IFOpers.h / HFOpers.h / VFOpers.h / interp.h: deformations and differences
    {
      const PyCA::GridInfo dg(PyCA::Vec3Di(13, 11, 7), PyCA::Vec3Df(1.5f, 2.f, 0.5f));
      const size_t nd = dg.nVox();
      PyCA::Image3D src(dg, PyCA::MEM_HOST), out(dg, PyCA::MEM_HOST);
      PyCA::Field3D h(dg, PyCA::MEM_HOST), v(dg, PyCA::MEM_HOST), g(dg, PyCA::MEM_HOST), grad(dg, PyCA::MEM_HOST);
      PyCA::MemOpers<EXEC_CPU, float>::SetLinear(src.get(), nd);  // src(x, y, z) = x + 13 (y + 11 z)
      PyCA::Opers::SetToIdentity(h);
      PyCA::Opers::ApplyH(out, src, h, BackgroundStrategy(4), InterpT(1));
      check(out.get(17) == 17.f, "ApplyH with the identity");
      PyCA::Opers::ComposeTranslation(out, src, PyCA::Vec3Df(1.f, 0.f, 0.f));
      check(out.get(0) == 1.f && out.get(12) == 12.f, "ComposeTranslation by one voxel (clamped)");
      const float mid = PyCA::triLerp<BACKGROUND_STRATEGY_CLAMP>(src.get(), 0.5f, 0.f, 0.f, 13, 11, 7);
      check(std::fabs(mid - 0.5f) < 1e-6f, "interp.h triLerp");
      PyCA::Opers::SetMem(v, PyCA::Vec3Df(0.75f, -0.5f, 0.25f));
      PyCA::Opers::VtoH(g, v);
      PyCA::Opers::HtoV(h, g);
      check(std::fabs(h.get(100).x - 0.75f) < 1e-5f && std::fabs(h.get(100).z - 0.25f) < 1e-5f, "HtoV(VtoH(v)) == v");
      PyCA::Opers::Gradient(grad, src, PyCA::DiffT(2), PyCA::BoundaryCondT(2));
      check(std::fabs(grad.get(5, 5, 3).x - 1.f / 1.5f) < 1e-4f, "Gradient of a ramp");
      PyCA::Opers::SetToIdentity(h);
      PyCA::Opers::JacDetH(out, h);  // legacy units: 1 / (1.5 * 2 * 0.5)
      check(std::fabs(out.get(100) - 1.f / 1.5f) < 1e-6f, "JacDetH of the identity is 1 / voxelVol");
      PyCA::Opers::JacDetHVoxel(out, h);
      check(std::fabs(out.get(100) - 1.f) < 1e-6f, "JacDetHVoxel of the identity is 1");
      PyCA::Opers::Splat(out, h, src);
      check(out.get(33) == 33.f, "Splat through the identity");
      PyCA::Opers::SetToZero(v);
      PyCA::Opers::ComposeHV(g, h, v);
      check(g.get(7).y == h.get(7).y, "ComposeHV with a zero velocity");
    }
  } catch (const std::exception& e) {
    std::cerr << "pyca_consumer: exception: " << e.what() << std::endl;
    return 2;
  }
  if (failures) return 1;
  std::cout << "pyca_consumer: OK" << std::endl;
  return 0;
}
