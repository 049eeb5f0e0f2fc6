// test_memory_manager_header.cxx -- legacy include contract: MemoryManager.h
// alone declares MemoryManager, ThreadMemoryManager, ManagedImage3D and
// ManagedField3D (and, through them, Image3D, Field3D and GridInfo). This
// translation unit includes no other PyCA header, so it stops compiling if
// that contract breaks.
#define BOOST_TEST_MODULE PyCA MemoryManager.h include contract
#include <boost/test/unit_test.hpp>

#include <MemoryManager.h>

using namespace PyCA;

BOOST_AUTO_TEST_CASE(managed_types_from_memory_manager_header) {
  const GridInfo grid(Vec3Di(8, 6, 4));
  ThreadMemoryManager::init(grid, MEM_HOST, 2);
  {
    ManagedImage3D im(grid, MEM_HOST);
    ManagedField3D f(grid, MEM_HOST);  // three pools: one more than init made
    BOOST_TEST(ThreadMemoryManager::instance().poolsInUse() == 4u);
    im.set(3, 2.5f);
    f.set(5, Vec3Df(1.f, 2.f, 3.f));
    BOOST_TEST(im.get(3) == 2.5f);
    BOOST_TEST((f.get(5) == Vec3Df(1.f, 2.f, 3.f)));
    Image3D& base = im;  // a ManagedImage3D is an Image3D
    BOOST_TEST(base.nVox() == grid.nVox());
  }
  BOOST_TEST(ThreadMemoryManager::instance().poolsInUse() == 0u);
  MemoryManager mm(grid, MEM_HOST, 1);
  {
    ManagedImage3D im(grid, MEM_HOST, mm);
    BOOST_TEST(mm.poolsInUse() == 1u);
  }
  ThreadMemoryManager::destroy();
}
