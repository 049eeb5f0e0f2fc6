// test_containers.cxx -- Image3D and Field3D (spec 2.4, 2.5).
//
// Construction, capacity, grid changes and their errors, resize/setCap,
// memory types, clone/swap, voxel access, live references and the text form.
// GPU-only checks run when a CUDA device exists; in CPU-only builds the
// device/pinned allocations must fail with "CUDA support not compiled".
#define BOOST_TEST_MODULE PyCA containers
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#include "CudaUtils.h"
#include "Field3D.h"
#include "GridInfo.h"
#include "Image3D.h"
#include "MemAlloc.h"
#include "MemPool.h"
#include "PyCAException.h"

using namespace PyCA;
namespace utf = boost::unit_test;

namespace {

struct NoCuda {
  boost::test_tools::assertion_result operator()(utf::test_unit_id) const {
    boost::test_tools::assertion_result r(!CudaCompiled());
    r.message() << "library built with CUDA";
    return r;
  }
};

void fillRamp(Image3D& im, float offset = 0.f) {
  for (size_t i = 0; i < im.nVox(); ++i) im.set(i, float(i) + offset);
}

void fillRamp(Field3D& f) {
  for (size_t i = 0; i < f.nVox(); ++i) f.set(i, Vec3Df(float(i), -float(i), 0.5f * float(i)));
}

bool fieldPointersInSync(const Field3D& f) {
  return f.x == f.getX() && f.y == f.getY() && f.z == f.getZ();
}

const GridInfo kGrid432(Vec3Di(4, 3, 2));

}  // namespace

// ------------------------------------------------------------- Image3D ----

BOOST_AUTO_TEST_SUITE(image3d)

BOOST_AUTO_TEST_CASE(construction) {
  Image3D empty;
  BOOST_TEST(empty.memType() == MEM_HOST);
  BOOST_TEST(empty.capacity() == 0u);
  BOOST_TEST(empty.nVox() == 0u);
  BOOST_TEST(empty.get() == nullptr);
  BOOST_TEST(empty.onHost());
  BOOST_TEST(!empty.onDev());

  // An empty image of any memory type needs no allocation.
  Image3D emptyDev(MEM_DEVICE);
  BOOST_TEST(emptyDev.memType() == MEM_DEVICE);
  BOOST_TEST(emptyDev.onDev());
  BOOST_TEST(!emptyDev.onHost());
  BOOST_TEST(emptyDev.capacity() == 0u);
  Image3D emptyPinned(MEM_HOST_PINNED);
  BOOST_TEST(emptyPinned.onHost());

  GridInfo g(Vec3Di(17, 19, 23), Vec3Df(0.5f, 1.f, 2.f), Vec3Df(1.f, 2.f, 3.f));
  Image3D im(g, MEM_HOST);
  BOOST_TEST((im.grid() == g));
  BOOST_TEST(im.nVox() == size_t(17 * 19 * 23));
  BOOST_TEST(im.capacity() == im.nVox());
  BOOST_TEST(im.voxelVol() == 1.f);
  BOOST_TEST(im.get() != nullptr);
  BOOST_TEST((im.size() == Vec3Di(17, 19, 23)));
  BOOST_TEST((im.spacing() == Vec3Df(0.5f, 1.f, 2.f)));
  BOOST_TEST((im.origin() == Vec3Df(1.f, 2.f, 3.f)));

  Image3D bySize(4, 3, 2);
  BOOST_TEST(bySize.memType() == MEM_HOST);
  BOOST_TEST((bySize.grid() == kGrid432));
  BOOST_TEST(bySize.capacity() == 24u);

  // Every voxel can be written and read back.
  fillRamp(im);
  for (size_t i = 0; i < im.nVox(); i += 97) BOOST_TEST(im.get(i) == float(i));
}

BOOST_AUTO_TEST_CASE(construction_from_mempool) {
  MemPool<float> pool(100, MEM_HOST);
  BOOST_TEST(pool.capacity() == 100u);
  Image3D im(kGrid432, pool);
  BOOST_TEST(im.get() == pool.get());  // shallow: shares the buffer
  BOOST_TEST(im.capacity() == 100u);
  im.set(3, 7.f);
  BOOST_TEST(pool.get()[3] == 7.f);

  MemPool<float> small(10, MEM_HOST);
  CHECK_PYCA_THROW(Image3D(kGrid432, small), PyCAException, "Data too large for given MemPool");
}

BOOST_AUTO_TEST_CASE(negative_sizes) {
  GridInfo bad(Vec3Di(4, -3, 2));
  BOOST_CHECK_THROW(Image3D(bad, MEM_HOST), PyCAValueException);
  BOOST_CHECK_THROW(Image3D(-1, 2, 3), PyCAValueException);
  BOOST_CHECK_THROW(Image3D(1, 2, -3, MEM_HOST), PyCAValueException);

  Image3D im(kGrid432);
  BOOST_CHECK_THROW(im.setGrid(bad), PyCAValueException);
  BOOST_CHECK_THROW(im.setSize(Vec3Di(-4, 3, 2)), PyCAValueException);
  BOOST_CHECK_THROW(im.resize(bad), PyCAValueException);
  BOOST_CHECK_THROW(im.setCap(Vec3Di(-1, 1, 1)), PyCAValueException);
  BOOST_TEST((im.grid() == kGrid432));
  BOOST_TEST(im.capacity() == 24u);
}

BOOST_AUTO_TEST_CASE(set_grid_and_size_errors) {
  Image3D im(kGrid432);
  fillRamp(im);
  const float* data = im.get();

  // Fewer voxels: fine, no reallocation.
  GridInfo smaller(Vec3Di(2, 3, 4), Vec3Df(2.f, 2.f, 2.f), Vec3Df(1.f, 1.f, 1.f));
  im.setGrid(smaller);
  BOOST_TEST((im.grid() == smaller));
  BOOST_TEST(im.get() == data);
  BOOST_TEST(im.capacity() == 24u);
  GridInfo fewer(Vec3Di(5, 2, 1));
  im.setGrid(fewer);
  BOOST_TEST(im.nVox() == 10u);
  im.setGrid(smaller);

  // Too large: throws and leaves the grid as it was.
  GridInfo big(Vec3Di(5, 5, 1));
  CHECK_PYCA_THROW(im.setGrid(big), PyCAException, "grid too large for current image");
  BOOST_TEST((im.grid() == smaller));

  CHECK_PYCA_THROW(im.setSize(Vec3Di(5, 5, 5)), PyCAException, "size too large for current image");
  BOOST_TEST((im.size() == Vec3Di(2, 3, 4)));
  BOOST_TEST((im.spacing() == Vec3Df(2.f, 2.f, 2.f)));  // untouched by setSize

  im.setSize(Vec3Di(3, 2, 4));
  BOOST_TEST((im.size() == Vec3Di(3, 2, 4)));
  BOOST_TEST((im.spacing() == Vec3Df(2.f, 2.f, 2.f)));
  im.setSpacing(Vec3Df(0.5f, 0.5f, 0.5f));
  im.setOrigin(Vec3Df(-1.f, -2.f, -3.f));
  BOOST_TEST(im.voxelVol() == 0.125f);
  BOOST_TEST((im.origin() == Vec3Df(-1.f, -2.f, -3.f)));
  BOOST_TEST(im.get() == data);
  BOOST_TEST(im.get(23) == 23.f);  // data untouched by grid changes
}

BOOST_AUTO_TEST_CASE(resize_and_preserve) {
  Image3D im(kGrid432);
  fillRamp(im);

  // Same voxel count: no reallocation, only the grid changes.
  const float* before = im.get();
  GridInfo reshaped(Vec3Di(2, 2, 6), Vec3Df(3.f, 3.f, 3.f));
  im.resize(reshaped);
  BOOST_TEST(im.get() == before);
  BOOST_TEST((im.grid() == reshaped));
  BOOST_TEST(im.get(5) == 5.f);

  // Growing with preserveData keeps the first nVox values.
  GridInfo bigger(Vec3Di(5, 5, 5));
  im.resize(bigger, true);
  BOOST_TEST((im.grid() == bigger));
  BOOST_TEST(im.capacity() >= 125u);
  for (size_t i = 0; i < 24; ++i) BOOST_TEST(im.get(i) == float(i));

  // Shrinking with preserveData keeps what fits.
  GridInfo small(Vec3Di(3, 1, 2));
  im.resize(small, true);
  BOOST_TEST(im.nVox() == 6u);
  BOOST_TEST(im.capacity() >= 6u);
  for (size_t i = 0; i < 6; ++i) BOOST_TEST(im.get(i) == float(i));

  // Without preserveData the grid is right; contents are unspecified.
  im.resize(GridInfo(Vec3Di(7, 1, 1)));
  BOOST_TEST(im.nVox() == 7u);
  BOOST_TEST(im.capacity() >= 7u);

  // Resizing an empty image allocates.
  Image3D e;
  e.resize(kGrid432);
  BOOST_TEST(e.get() != nullptr);
  BOOST_TEST(e.capacity() == 24u);
  e.set(23, 1.f);
  BOOST_TEST(e.get(23) == 1.f);
}

BOOST_AUTO_TEST_CASE(set_cap) {
  Image3D im(kGrid432);
  fillRamp(im);
  im.setCap(Vec3Di(10, 10, 1), true);
  BOOST_TEST(im.capacity() == 100u);
  BOOST_TEST((im.grid() == kGrid432));  // the grid is not changed by setCap
  for (size_t i = 0; i < 24; ++i) BOOST_TEST(im.get(i) == float(i));

  // Now the larger grid fits.
  im.setGrid(GridInfo(Vec3Di(10, 10, 1)));
  BOOST_TEST(im.nVox() == 100u);

  // Shrinking below the grid's voxel count leaves no out-of-range grid.
  im.setCap(size_t(10));
  BOOST_TEST(im.capacity() == 10u);
  BOOST_TEST(im.nVox() <= im.capacity());
}

BOOST_AUTO_TEST_CASE(to_type_host_is_noop) {
  Image3D im(kGrid432, MEM_HOST);
  fillRamp(im);
  const float* p = im.get();
  im.toType(MEM_HOST);
  BOOST_TEST(im.get() == p);
  BOOST_TEST(im.memType() == MEM_HOST);
  BOOST_TEST(im.get(17) == 17.f);
}

BOOST_AUTO_TEST_CASE(clone_is_deep) {
  GridInfo g(Vec3Di(5, 4, 3), Vec3Df(1.f, 2.f, 3.f), Vec3Df(4.f, 5.f, 6.f));
  Image3D a(g);
  fillRamp(a);
  Image3D b(GridInfo(Vec3Di(2, 2, 2)));
  b.clone(a);
  BOOST_TEST((b.grid() == a.grid()));
  BOOST_TEST(b.memType() == a.memType());
  BOOST_TEST(b.get() != a.get());
  for (size_t i = 0; i < a.nVox(); ++i) BOOST_TEST(b.get(i) == a.get(i));
  b.set(0, -100.f);
  BOOST_TEST(a.get(0) == 0.f);
  a.set(1, -200.f);
  BOOST_TEST(b.get(1) == 1.f);

  // Into an empty image, and self-clone is harmless.
  Image3D c;
  c.clone(a);
  BOOST_TEST(c.get(1) == -200.f);
  c.clone(c);
  BOOST_TEST(c.get(1) == -200.f);
}

BOOST_AUTO_TEST_CASE(swap_images) {
  Image3D a(kGrid432);
  fillRamp(a, 0.f);
  GridInfo gb(Vec3Di(3, 3, 3), Vec3Df(2.f, 2.f, 2.f));
  Image3D b(gb);
  fillRamp(b, 1000.f);
  float* pa = a.get();
  float* pb = b.get();

  a.swap(b);
  BOOST_TEST(a.get() == pb);
  BOOST_TEST(b.get() == pa);
  BOOST_TEST((a.grid() == gb));
  BOOST_TEST((b.grid() == kGrid432));
  BOOST_TEST(a.capacity() == 27u);
  BOOST_TEST(b.capacity() == 24u);
  BOOST_TEST(a.get(26) == 1026.f);
  BOOST_TEST(b.get(23) == 23.f);

  // Different memory types: refused, nothing changes.
  Image3D dev(MEM_DEVICE);
  CHECK_PYCA_THROW(a.swap(dev), PyCAException, "memory types are not compatible");
  BOOST_TEST(a.get() == pb);
  BOOST_TEST(a.memType() == MEM_HOST);
  BOOST_TEST(dev.memType() == MEM_DEVICE);
  BOOST_TEST(dev.get() == nullptr);
}

BOOST_AUTO_TEST_CASE(voxel_access_and_bounds) {
  Image3D im(kGrid432);
  // x fastest: index = x + sx*(y + sy*z).
  im.set(0, 0, 0, 1.f);
  im.set(1, 0, 0, 2.f);
  im.set(0, 1, 0, 3.f);
  im.set(0, 0, 1, 4.f);
  im.set(3, 2, 1, 5.f);
  BOOST_TEST(im.get(size_t(0)) == 1.f);
  BOOST_TEST(im.get(size_t(1)) == 2.f);
  BOOST_TEST(im.get(size_t(4)) == 3.f);
  BOOST_TEST(im.get(size_t(12)) == 4.f);
  BOOST_TEST(im.get(size_t(23)) == 5.f);
  BOOST_TEST(im(3, 2, 1) == 5.f);
  BOOST_TEST(im(size_t(12)) == 4.f);
  im(2, 1, 1) = 9.f;
  BOOST_TEST(im.get(2, 1, 1) == 9.f);
  BOOST_TEST(im.get(size_t(2 + 4 * (1 + 3 * 1))) == 9.f);
  im(size_t(7)) = 8.f;
  BOOST_TEST(im.get(3, 1, 0) == 8.f);

  BOOST_CHECK_THROW(im.get(size_t(24)), std::out_of_range);
  BOOST_CHECK_THROW(im.set(size_t(24), 0.f), std::out_of_range);
  BOOST_CHECK_THROW(im.get(4, 0, 0), std::out_of_range);
  BOOST_CHECK_THROW(im.get(0, 3, 0), std::out_of_range);
  BOOST_CHECK_THROW(im.get(0, 0, 2), std::out_of_range);
  BOOST_CHECK_THROW(im.get(-1, 0, 0), std::out_of_range);
  BOOST_CHECK_THROW(im.set(0, -1, 0, 0.f), std::out_of_range);
  BOOST_CHECK_THROW(im.set(0, 0, 2, 0.f), std::out_of_range);

  // The bound is the grid, not the capacity.
  im.setGrid(GridInfo(Vec3Di(2, 2, 2)));
  BOOST_CHECK_THROW(im.get(size_t(8)), std::out_of_range);
  BOOST_CHECK_NO_THROW(im.get(size_t(7)));

  // Device memory is not addressable from the host.
  Image3D dev(MEM_DEVICE);
  BOOST_CHECK_THROW(dev.get(size_t(0)), PyCAException);
  BOOST_CHECK_THROW(dev.set(size_t(0), 1.f), PyCAException);
}

BOOST_AUTO_TEST_CASE(live_references) {
  Image3D im(kGrid432);
  im.grid().spacing().z = 2.f;
  BOOST_TEST(im.spacing().z == 2.f);
  BOOST_TEST(im.voxelVol() == 2.f);
  im.spacing().x = 3.f;
  BOOST_TEST(im.grid().spacing().x == 3.f);
  im.origin().y = -7.f;
  BOOST_TEST(im.grid().origin().y == -7.f);
  im.size().z = 1;  // no capacity check through the reference
  BOOST_TEST(im.nVox() == 12u);
  im.grid().setSize(Vec3Di(2, 3, 4));
  BOOST_TEST((im.size() == Vec3Di(2, 3, 4)));

  const Image3D& cim = im;
  BOOST_TEST(&cim.grid() == &im.grid());
  BOOST_TEST(&cim.size() == &im.grid().size());
}

BOOST_AUTO_TEST_CASE(to_string_format) {
  Image3D im(kGrid432);
  BOOST_TEST(im.toString() == "Image3D: size (4, 3, 2) origin (0 0 0) spacing (1 1 1) MemType: MEM_HOST");
  im.setSpacing(Vec3Df(0.5f, 1.f, 2.f));
  im.setOrigin(Vec3Df(-1.f, 2.5f, 0.f));
  BOOST_TEST(im.toString() ==
             "Image3D: size (4, 3, 2) origin (-1 2.5 0) spacing (0.5 1 2) MemType: MEM_HOST");
  std::ostringstream os;
  im._print(os);
  BOOST_TEST(os.str() == im.toString());
  BOOST_TEST(Image3D(MEM_DEVICE).toString() ==
             "Image3D: size (0, 0, 0) origin (0 0 0) spacing (1 1 1) MemType: MEM_DEVICE");
}

BOOST_AUTO_TEST_CASE(cuda_not_compiled, *utf::precondition(NoCuda())) {
  CHECK_PYCA_THROW(Image3D(kGrid432, MEM_DEVICE), PyCAException, "CUDA support not compiled");
  CHECK_PYCA_THROW(Image3D(kGrid432, MEM_HOST_PINNED), PyCAException, "CUDA support not compiled");
  CHECK_PYCA_THROW(Image3D(4, 3, 2, MEM_DEVICE), PyCAException, "CUDA support not compiled");
  Image3D im(kGrid432);
  fillRamp(im);
  const float* p = im.get();
  CHECK_PYCA_THROW(im.toType(MEM_DEVICE), PyCAException, "CUDA support not compiled");
  // A failed move leaves the image as it was.
  BOOST_TEST(im.memType() == MEM_HOST);
  BOOST_TEST(im.get() == p);
  BOOST_TEST(im.get(5) == 5.f);
  BOOST_TEST(GetNumberOfCUDADevices() == 0u);
  CHECK_PYCA_THROW(AllocateMemory(MEM_DEVICE, 16), PyCAException, "CUDA support not compiled");
}

BOOST_AUTO_TEST_CASE(device_round_trip, *utf::precondition(GpuAvailable())) {
  Image3D im(GridInfo(Vec3Di(17, 19, 23)));
  fillRamp(im);
  im.toType(MEM_DEVICE);
  BOOST_TEST(im.memType() == MEM_DEVICE);
  BOOST_TEST(im.onDev());
  BOOST_CHECK_THROW(im.get(size_t(0)), PyCAException);
  BOOST_TEST(im.toString() ==
             "Image3D: size (17, 19, 23) origin (0 0 0) spacing (1 1 1) MemType: MEM_DEVICE");
  Image3D copy;
  copy.clone(im);
  BOOST_TEST(copy.memType() == MEM_DEVICE);
  BOOST_TEST(copy.get() != im.get());
  im.toType(MEM_HOST_PINNED);
  BOOST_TEST(im.memType() == MEM_HOST_PINNED);
  for (size_t i = 0; i < im.nVox(); i += 101) BOOST_TEST(im.get(i) == float(i));
  copy.toType(MEM_HOST);
  for (size_t i = 0; i < copy.nVox(); i += 101) BOOST_TEST(copy.get(i) == float(i));

  Image3D dev(GridInfo(Vec3Di(4, 4, 4)), MEM_DEVICE);
  Image3D host(GridInfo(Vec3Di(4, 4, 4)), MEM_HOST);
  CHECK_PYCA_THROW(dev.swap(host), PyCAException, "memory types are not compatible");
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------- Field3D ----

BOOST_AUTO_TEST_SUITE(field3d)

BOOST_AUTO_TEST_CASE(construction) {
  Field3D empty;
  BOOST_TEST(empty.memType() == MEM_HOST);
  BOOST_TEST(empty.capacity() == 0u);
  BOOST_TEST(empty.x == nullptr);
  BOOST_TEST(fieldPointersInSync(empty));

  GridInfo g(Vec3Di(17, 19, 23), Vec3Df(0.5f, 1.f, 2.f));
  Field3D f(g, MEM_HOST);
  BOOST_TEST((f.grid() == g));
  BOOST_TEST(f.nVox() == size_t(17 * 19 * 23));
  BOOST_TEST(f.capacity() == f.nVox());
  BOOST_TEST(f.voxelVol() == 1.f);
  BOOST_TEST(fieldPointersInSync(f));
  BOOST_TEST(f.x != nullptr);
  BOOST_TEST(f.x != f.y);
  BOOST_TEST(f.y != f.z);
  BOOST_TEST(!f.isContinuous());
  BOOST_TEST(f.getComponent(0) == f.x);
  BOOST_TEST(f.getComponent(1) == f.y);
  BOOST_TEST(f.getComponent(2) == f.z);
  BOOST_TEST(f.getMemPoolX().get() == f.x);
  BOOST_TEST(f.getMemPoolY().get() == f.y);
  BOOST_TEST(f.getMemPoolZ().get() == f.z);
  BOOST_TEST(f.getMemPool(1).get() == f.y);
  fillRamp(f);
  BOOST_TEST((f.get(size_t(100)) == Vec3Df(100.f, -100.f, 50.f)));

  Field3D bySize(4, 3, 2);
  BOOST_TEST((bySize.grid() == kGrid432));
  BOOST_TEST(bySize.memType() == MEM_HOST);

  BOOST_CHECK_THROW(Field3D(GridInfo(Vec3Di(1, 1, -1))), PyCAValueException);
  BOOST_CHECK_THROW(Field3D(-4, 3, 2), PyCAValueException);
}

BOOST_AUTO_TEST_CASE(construction_from_pools) {
  MemPool<float> px(30, MEM_HOST), py(30, MEM_HOST), pz(30, MEM_HOST);
  Field3D f(kGrid432, px, py, pz);
  BOOST_TEST(f.x == px.get());
  BOOST_TEST(f.y == py.get());
  BOOST_TEST(f.z == pz.get());
  BOOST_TEST(f.capacity() == 30u);

  MemPool<float> odd(29, MEM_HOST);
  CHECK_PYCA_THROW(Field3D(kGrid432, px, py, odd), PyCAException, "Provided mempools are different sizes");
  MemPool<float> s1(10, MEM_HOST), s2(10, MEM_HOST), s3(10, MEM_HOST);
  CHECK_PYCA_THROW(Field3D(kGrid432, s1, s2, s3), PyCAException, "Data too large for given MemPool");
}

BOOST_AUTO_TEST_CASE(set_grid_error_leaves_grid) {
  Field3D f(kGrid432);
  GridInfo ok(Vec3Di(2, 2, 2), Vec3Df(2.f, 2.f, 2.f));
  f.setGrid(ok);
  BOOST_TEST((f.grid() == ok));
  CHECK_PYCA_THROW(f.setGrid(GridInfo(Vec3Di(5, 5, 1))), PyCAException,
                   "Grid is larger than pre-allocated memory");
  BOOST_TEST((f.grid() == ok));
  BOOST_CHECK_THROW(f.setGrid(GridInfo(Vec3Di(-1, 2, 2))), PyCAValueException);
  BOOST_TEST((f.grid() == ok));
}

BOOST_AUTO_TEST_CASE(resize_toType_swap_keep_pointers) {
  Field3D a(kGrid432);
  fillRamp(a);
  Field3D b(GridInfo(Vec3Di(3, 3, 3)));
  fillRamp(b);
  float* ax = a.x;
  float* bz = b.z;

  a.swap(b);
  BOOST_TEST(fieldPointersInSync(a));
  BOOST_TEST(fieldPointersInSync(b));
  BOOST_TEST(b.x == ax);
  BOOST_TEST(a.z == bz);
  BOOST_TEST(a.nVox() == 27u);
  BOOST_TEST((b.get(size_t(23)) == Vec3Df(23.f, -23.f, 11.5f)));

  b.resize(GridInfo(Vec3Di(5, 5, 5)), true);
  BOOST_TEST(fieldPointersInSync(b));
  BOOST_TEST(b.capacity() >= 125u);
  for (size_t i = 0; i < 24; ++i) BOOST_TEST((b.get(i) == Vec3Df(float(i), -float(i), 0.5f * float(i))));

  b.toType(MEM_HOST);
  BOOST_TEST(fieldPointersInSync(b));

  b.setCap(size_t(200), true);
  BOOST_TEST(fieldPointersInSync(b));
  BOOST_TEST(b.capacity() == 200u);  // legacy never updated it; fixed here
  BOOST_TEST((b.get(size_t(5)) == Vec3Df(5.f, -5.f, 2.5f)));

  Field3D c;
  c.clone(a);
  BOOST_TEST(fieldPointersInSync(c));
  BOOST_TEST(c.x != a.x);
  BOOST_TEST((c.grid() == a.grid()));
  for (size_t i = 0; i < a.nVox(); ++i) BOOST_TEST((c.get(i) == a.get(i)));
  c.set(size_t(0), Vec3Df(9.f, 9.f, 9.f));
  BOOST_TEST((a.get(size_t(0)) == Vec3Df(0.f, 0.f, 0.f)));

  Field3D dev(MEM_DEVICE);
  CHECK_PYCA_THROW(a.swap(dev), PyCAException, "memory types are not compatible");
  BOOST_TEST(fieldPointersInSync(a));
  BOOST_TEST(a.z == bz);
}

BOOST_AUTO_TEST_CASE(voxel_access_and_bounds) {
  Field3D f(kGrid432);
  f.set(3, 2, 1, Vec3Df(1.f, 2.f, 3.f));
  BOOST_TEST((f.get(size_t(23)) == Vec3Df(1.f, 2.f, 3.f)));
  BOOST_TEST(f.x[23] == 1.f);
  BOOST_TEST(f.y[23] == 2.f);
  BOOST_TEST(f.z[23] == 3.f);
  f.set(size_t(4), Vec3Df(-1.f, -2.f, -3.f));
  BOOST_TEST((f.get(0, 1, 0) == Vec3Df(-1.f, -2.f, -3.f)));

  BOOST_CHECK_THROW(f.get(size_t(24)), std::out_of_range);
  BOOST_CHECK_THROW(f.set(size_t(24), Vec3Df()), std::out_of_range);
  BOOST_CHECK_THROW(f.get(4, 0, 0), std::out_of_range);
  BOOST_CHECK_THROW(f.get(0, 0, -1), std::out_of_range);
  BOOST_CHECK_THROW(f.set(0, 3, 0, Vec3Df()), std::out_of_range);

  Field3D dev(MEM_DEVICE);
  BOOST_CHECK_THROW(dev.get(size_t(0)), PyCAException);
}

BOOST_AUTO_TEST_CASE(live_references_and_text) {
  Field3D f(kGrid432);
  BOOST_TEST(f.toString() == "Field3D: size (4, 3, 2) origin (0 0 0) spacing (1 1 1) MemType: MEM_HOST");
  f.grid().spacing().z = 2.f;
  f.origin().x = 1.5f;
  BOOST_TEST(f.voxelVol() == 2.f);
  BOOST_TEST(f.toString() == "Field3D: size (4, 3, 2) origin (1.5 0 0) spacing (1 1 2) MemType: MEM_HOST");
  std::ostringstream os;
  f._print(os);
  BOOST_TEST(os.str() == f.toString());
}

BOOST_AUTO_TEST_CASE(cuda_not_compiled, *utf::precondition(NoCuda())) {
  CHECK_PYCA_THROW(Field3D(kGrid432, MEM_DEVICE), PyCAException, "CUDA support not compiled");
  CHECK_PYCA_THROW(Field3D(kGrid432, MEM_HOST_PINNED), PyCAException, "CUDA support not compiled");
  Field3D f(kGrid432);
  CHECK_PYCA_THROW(f.toType(MEM_DEVICE), PyCAException, "CUDA support not compiled");
  BOOST_TEST(fieldPointersInSync(f));
}

BOOST_AUTO_TEST_CASE(device_round_trip, *utf::precondition(GpuAvailable())) {
  Field3D f(GridInfo(Vec3Di(17, 19, 23)));
  fillRamp(f);
  f.toType(MEM_DEVICE);
  BOOST_TEST(f.memType() == MEM_DEVICE);
  BOOST_TEST(fieldPointersInSync(f));
  f.toType(MEM_HOST);
  BOOST_TEST(fieldPointersInSync(f));
  for (size_t i = 0; i < f.nVox(); i += 101)
    BOOST_TEST((f.get(i) == Vec3Df(float(i), -float(i), 0.5f * float(i))));
}

BOOST_AUTO_TEST_SUITE_END()
