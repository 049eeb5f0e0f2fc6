// A downstream program: legacy header names, images, the thread memory
// manager and a few operators. Exit code 0 on success.
#include <FOpers.h>
#include <Field3D.h>
#include <IOpers.h>
#include <Image3D.h>
#include <ManagedImage3D.h>
#include <MemoryManager.h>
#include <Reduction.h>

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
  } catch (const std::exception& e) {
    std::cerr << "pyca_consumer: exception: " << e.what() << std::endl;
    return 2;
  }
  if (failures) return 1;
  std::cout << "pyca_consumer: OK" << std::endl;
  return 0;
}
