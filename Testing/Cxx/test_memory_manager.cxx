// test_memory_manager.cxx -- MemoryManager, ThreadMemoryManager and the
// managed containers (spec 3).
//
// The tutorial sequence of the legacy documentation, the pool selection order,
// the error cases, the statistics/limit layer, and the hazards the legacy
// design had (destroying a manager under live images, init twice, swap
// between managed and unmanaged images, concurrent use) which this
// implementation must handle safely.
#define BOOST_TEST_MODULE PyCA memory manager
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define PYCA_TEST_HAVE_MALLINFO2 1
#endif

#include "CudaUtils.h"
#include "Field3D.h"
#include "GridInfo.h"
#include "Image3D.h"
#include "ManagedField3D.h"
#include "ManagedImage3D.h"
#include "MemAlloc.h"
#include "MemoryManager.h"
#include "PyCAException.h"

using namespace PyCA;

namespace {

/// Redirects std::cerr into a string while alive.
class CerrCapture {
 public:
  CerrCapture() : mOld(std::cerr.rdbuf(mBuf.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(mOld); }
  CerrCapture(const CerrCapture&) = delete;
  CerrCapture& operator=(const CerrCapture&) = delete;
  std::string str() const { return mBuf.str(); }
  /// The numbers N of every "Maximum temporary Pools N" line, in order.
  std::vector<long> maxPoolLines() const {
    std::vector<long> out;
    std::istringstream is(mBuf.str());
    std::string line;
    const std::string key = "Maximum temporary Pools ";
    while (std::getline(is, line)) {
      size_t p = line.find(key);
      if (p != std::string::npos) out.push_back(std::stol(line.substr(p + key.size())));
    }
    return out;
  }

 private:
  std::ostringstream mBuf;
  std::streambuf* mOld;
};

/// Every test starts and ends without a thread manager on the main thread,
/// and the "Maximum temporary Pools" lines of its managers stay out of the log.
struct NoThreadManager {
  NoThreadManager() { ThreadMemoryManager::destroy(); }
  ~NoThreadManager() { ThreadMemoryManager::destroy(); }
  CerrCapture quiet;
};

/// Bytes of heap in use (glibc >= 2.33); 0 elsewhere or when an interposed
/// allocator (ASan) hides it.
size_t heapInUse() {
#ifdef PYCA_TEST_HAVE_MALLINFO2
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
#else
  return 0;
#endif
}

void fill(Image3D& im, float v) { std::fill(im.get(), im.get() + im.nVox(), v); }
bool allEqual(const Image3D& im, float v) {
  return std::all_of(im.get(), im.get() + im.nVox(), [v](float a) { return a == v; });
}

const GridInfo kTutorialGrid(Vec3Di(64, 64, 32));

}  // namespace

BOOST_FIXTURE_TEST_SUITE(memory_manager, NoThreadManager)

// ------------------------------------------------------------- tutorial ----

BOOST_AUTO_TEST_CASE(tutorial_sequence) {
  const MemoryType mType = MEM_HOST;
  CerrCapture cap;
  ThreadMemoryManager::init(kTutorialGrid, mType, 4);
  BOOST_REQUIRE(ThreadMemoryManager::isInitialized());
  MemoryManager& mm = ThreadMemoryManager::instance();
  BOOST_TEST(mm.getNumPools() == 4u);
  BOOST_TEST(mm.memType() == MEM_HOST);
  BOOST_TEST((mm.grid() == kTutorialGrid));

  // Python names rebound to new objects; the old object dies after the new one is built.
  auto tempIm1 = std::make_unique<ManagedImage3D>(kTutorialGrid, mType);  // 1/4
  BOOST_TEST(mm.getNumPools() == 4u);
  BOOST_TEST(mm.poolsInUse() == 1u);
  auto tempIm2 = std::make_unique<ManagedImage3D>(kTutorialGrid, mType);  // 2/4
  BOOST_TEST(mm.getNumPools() == 4u);
  BOOST_TEST(mm.poolsInUse() == 2u);
  auto tempVF1 = std::make_unique<ManagedField3D>(kTutorialGrid, mType);  // 5/5
  BOOST_TEST(mm.getNumPools() == 5u);
  BOOST_TEST(mm.poolsInUse() == 5u);
  auto tempVF2 = std::make_unique<ManagedField3D>(kTutorialGrid, mType);  // 8/8
  BOOST_TEST(mm.getNumPools() == 8u);
  BOOST_TEST(mm.poolsInUse() == 8u);
  tempIm1.reset();  // 7/8
  BOOST_TEST(mm.getNumPools() == 8u);
  BOOST_TEST(mm.poolsInUse() == 7u);
  auto tempVF3 = std::make_unique<ManagedField3D>(kTutorialGrid, mType);  // 10/10
  BOOST_TEST(mm.getNumPools() == 10u);
  BOOST_TEST(mm.poolsInUse() == 10u);
  tempVF1.reset();  // 7/10
  BOOST_TEST(mm.getNumPools() == 10u);
  BOOST_TEST(mm.poolsInUse() == 7u);
  auto tempIm3 = std::make_unique<ManagedImage3D>(kTutorialGrid, mType);  // 8/10
  BOOST_TEST(mm.getNumPools() == 10u);
  BOOST_TEST(mm.poolsInUse() == 8u);

  BOOST_TEST(ThreadMemoryManager::instance().getNumPools() == 10u);
  BOOST_TEST(mm.peakInUse() == 10u);
  // Pools taken (highest free index first): 3, 2, {1,0,4}, {5,6,7}, {3,8,9}, 4.
  BOOST_TEST(mm.maxUsed() == 10u);

  // Other grids: only the voxel count matters.
  GridInfo grid1(Vec3Di(32, 64, 64));
  GridInfo grid2(Vec3Di(100, 100, 1));
  GridInfo grid3(Vec3Di(1, 1, 1));
  GridInfo grid4(Vec3Di(64, 64, 64));
  auto n1 = std::make_unique<ManagedImage3D>(grid1, mType);
  tempIm1 = std::move(n1);
  auto n2 = std::make_unique<ManagedImage3D>(grid2, mType);
  tempIm2 = std::move(n2);
  auto n3 = std::make_unique<ManagedImage3D>(grid3, mType);
  tempIm3 = std::move(n3);
  BOOST_TEST((tempIm1->grid() == grid1));
  BOOST_TEST((tempIm2->grid() == grid2));
  BOOST_TEST((tempIm3->grid() == grid3));
  BOOST_TEST(tempIm3->capacity() == 1u);  // the requested nVox, not the pool's size
  CHECK_PYCA_THROW(ManagedImage3D(grid4, mType), PyCAException, "Grid too large");
  BOOST_TEST(mm.getNumPools() == 10u);

  // A second, explicit manager.
  GridInfo newgrid(Vec3Di(50, 50, 1));
  auto memMan2 = std::make_unique<MemoryManager>(kTutorialGrid, mType, 1);
  BOOST_TEST(memMan2->getNumPools() == 1u);
  {
    ManagedImage3D tempIm(newgrid, mType, *memMan2);
    ManagedField3D tempVF(newgrid, mType, *memMan2);
    BOOST_TEST(memMan2->getNumPools() == 4u);
    BOOST_TEST(memMan2->poolsInUse() == 4u);
    BOOST_TEST(ThreadMemoryManager::instance().getNumPools() == 10u);

    BOOST_TEST(cap.maxPoolLines().empty());
    memMan2.reset();  // del(mem_man_2) while its images live
    BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4}));
    tempIm.set(size_t(0), 1.f);
    BOOST_TEST(tempIm.get(size_t(0)) == 1.f);
  }
  tempIm1.reset();
  tempIm2.reset();
  tempIm3.reset();
  tempVF2.reset();
  tempVF3.reset();
  ThreadMemoryManager::destroy();
  BOOST_TEST(!ThreadMemoryManager::isInitialized());
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4, 10}));
}

// ------------------------------------------------------ pool selection ----

BOOST_AUTO_TEST_CASE(highest_free_index) {
  GridInfo g(Vec3Di(8, 8, 8));
  CerrCapture cap;
  {
    MemoryManager mm(g, MEM_HOST, 4);
    BOOST_TEST(mm.maxUsed() == 1u);  // nothing handed out yet: legacy prints 1
    {
      ManagedImage3D a(g, MEM_HOST, mm);
      BOOST_TEST(mm.maxUsed() == 4u);  // index 3, not 0
    }
    {
      ManagedImage3D a(g, MEM_HOST, mm);
      BOOST_TEST(mm.maxUsed() == 4u);
      BOOST_TEST(mm.getNumPools() == 4u);
    }
  }
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4}));

  // Which buffer comes back: the highest free index, not FIFO, not LIFO.
  MemoryManager mm(g, MEM_HOST, 4);
  auto a = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);  // index 3
  auto b = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);  // index 2
  auto c = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);  // index 1
  auto d = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);  // index 0
  std::set<const float*> distinct{a->get(), b->get(), c->get(), d->get()};
  BOOST_TEST(distinct.size() == 4u);
  const float* pb = b->get();
  const float* pd = d->get();

  b.reset();  // frees index 2 first
  d.reset();  // then index 0 (LIFO would now hand out index 0)
  auto e = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);
  BOOST_TEST(e->get() == pb);
  e.reset();
  // Now index 2 was freed last and index 0 first (FIFO would hand out index 0).
  auto f = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);
  BOOST_TEST(f->get() == pb);
  auto h = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);
  BOOST_TEST(h->get() == pd);
  BOOST_TEST(mm.getNumPools() == 4u);
  auto i = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);  // grows by one
  BOOST_TEST(mm.getNumPools() == 5u);
  BOOST_TEST(mm.maxUsed() == 5u);
  BOOST_TEST(distinct.count(i->get()) == 0u);
}

BOOST_AUTO_TEST_CASE(grid_too_large) {
  GridInfo managerGrid(Vec3Di(64, 64, 32));
  MemoryManager mm(managerGrid, MEM_HOST, 1);
  CHECK_PYCA_THROW(ManagedImage3D(GridInfo(Vec3Di(64, 64, 64)), MEM_HOST, mm), PyCAException,
                   "Grid too large");
  CHECK_PYCA_THROW(ManagedField3D(GridInfo(Vec3Di(64, 64, 33)), MEM_HOST, mm), PyCAException,
                   "Grid too large");
  CHECK_PYCA_THROW(mm.getPool(GridInfo(Vec3Di(64, 64, 64))), PyCAException, "Grid too large");
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST(mm.getNumPools() == 1u);

  // Differently shaped, fewer (or as many) voxels: accepted; spacing/origin irrelevant.
  {
    ManagedImage3D a(GridInfo(Vec3Di(100, 100, 1), Vec3Df(7.f, 7.f, 7.f), Vec3Df(-3.f, 0.f, 9.f)),
                     MEM_HOST, mm);
    ManagedImage3D b(GridInfo(Vec3Di(32, 64, 64)), MEM_HOST, mm);
    ManagedImage3D c(GridInfo(Vec3Di(131072, 1, 1)), MEM_HOST, mm);
    BOOST_TEST(mm.poolsInUse() == 3u);
    BOOST_TEST(a.capacity() == 10000u);
    // A managed image cannot grow past the grid it was created with (legacy).
    CHECK_PYCA_THROW(a.setGrid(GridInfo(Vec3Di(101, 100, 1))), PyCAException,
                     "grid too large for current image");
  }
  BOOST_TEST(mm.poolsInUse() == 0u);

  // Negative sizes are a value error, also for managers.
  BOOST_CHECK_THROW(ManagedImage3D(GridInfo(Vec3Di(-1, 4, 4)), MEM_HOST, mm), PyCAValueException);
  CerrCapture quiet;
  BOOST_CHECK_THROW(MemoryManager(GridInfo(Vec3Di(4, -4, 4)), MEM_HOST, 1), PyCAValueException);
}

BOOST_AUTO_TEST_CASE(explicit_manager_memtype_mismatch) {
  GridInfo g(Vec3Di(8, 8, 8));
  MemoryManager mm(g, MEM_HOST, 2);
  CHECK_PYCA_THROW(ManagedImage3D(g, MEM_DEVICE, mm), PyCAException,
                   "MemoryManager memType does not match");
  CHECK_PYCA_THROW(ManagedImage3D(g, MEM_HOST_PINNED, mm), PyCAException,
                   "MemoryManager memType does not match");
  CHECK_PYCA_THROW(ManagedField3D(g, MEM_DEVICE, mm), PyCAException,
                   "MemoryManager memType does not match");
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST(mm.getNumPools() == 2u);
  BOOST_TEST(mm.stats().totalRequests == 0u);
}

BOOST_AUTO_TEST_CASE(thread_manager_other_memtype_falls_back) {
  GridInfo g(Vec3Di(8, 8, 8));
  CerrCapture quiet;
  // A device manager with no pools can exist without CUDA (it allocates nothing).
  ThreadMemoryManager::init(g, MEM_DEVICE, 0);
  MemoryManager& mm = ThreadMemoryManager::instance();
  BOOST_TEST(mm.getNumPools() == 0u);
  {
    ManagedImage3D im(g, MEM_HOST);  // silently private
    ManagedField3D f(g, MEM_HOST);
    BOOST_TEST(im.memType() == MEM_HOST);
    BOOST_TEST(im.get() != nullptr);
    BOOST_TEST(f.x != nullptr);
    fill(im, 3.f);
    BOOST_TEST(allEqual(im, 3.f));
    BOOST_TEST(mm.getNumPools() == 0u);
    BOOST_TEST(mm.poolsInUse() == 0u);
  }

  ThreadMemoryManager::init(g, MEM_HOST, 2);
  MemoryManager& host = ThreadMemoryManager::instance();
  if (CudaCompiled() && GetNumberOfCUDADevices() > 0) {
    ManagedImage3D dev(g, MEM_DEVICE);  // private device buffer
    BOOST_TEST(dev.memType() == MEM_DEVICE);
  } else if (!CudaCompiled()) {
    // The fallback is a private allocation, so it fails like Image3D would.
    CHECK_PYCA_THROW(ManagedImage3D(g, MEM_DEVICE), PyCAException, "CUDA support not compiled");
  }
  BOOST_TEST(host.getNumPools() == 2u);
  BOOST_TEST(host.poolsInUse() == 0u);

  // Without a thread manager a managed image is a plain image.
  ThreadMemoryManager::destroy();
  ManagedImage3D plain(g, MEM_HOST);
  BOOST_TEST(plain.capacity() == g.nVox());
  fill(plain, 1.f);
  BOOST_TEST(allEqual(plain, 1.f));
}

// ----------------------------------------------------------- statistics ----

BOOST_AUTO_TEST_CASE(statistics_limit_report) {
  GridInfo g(Vec3Di(10, 10, 10));  // 1000 voxels -> 1024 floats -> 4096 bytes per pool
  const size_t perPool = 1024 * sizeof(float);
  MemoryManager mm(g, MEM_HOST, 2);
  BOOST_TEST(mm.getNumPools() == 2u);
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST(mm.peakInUse() == 0u);
  BOOST_TEST(mm.bytesHeld() == 2 * perPool);
  BOOST_TEST(mm.limit() == 0u);
  BOOST_TEST(mm.usageReport() == "no pools in use");

  auto a = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);
  auto f = std::make_unique<ManagedField3D>(g, MEM_HOST, mm);
  BOOST_TEST(mm.poolsInUse() == 4u);
  BOOST_TEST(mm.peakInUse() == 4u);
  BOOST_TEST(mm.getNumPools() == 4u);
  BOOST_TEST(mm.bytesHeld() == 4 * perPool);

  MemoryManagerStats s = mm.stats();
  BOOST_TEST(s.numPools == 4u);
  BOOST_TEST(s.poolsInUse == 4u);
  BOOST_TEST(s.peakInUse == 4u);
  BOOST_TEST(s.bytesPerPool == perPool);
  BOOST_TEST(s.bytesHeld == 4 * perPool);
  BOOST_TEST(s.limitBytes == 0u);
  BOOST_TEST(s.totalRequests == 4u);

  std::string report = mm.usageReport();
  BOOST_TEST(contains(report, "pool 0: in use, 4096 bytes"));
  BOOST_TEST(contains(report, "pool 3: in use, 4096 bytes"));
  BOOST_TEST(std::count(report.begin(), report.end(), '\n') == 4);

  f.reset();
  BOOST_TEST(mm.poolsInUse() == 1u);
  BOOST_TEST(mm.peakInUse() == 4u);
  mm.resetPeak();
  BOOST_TEST(mm.peakInUse() == 1u);
  report = mm.usageReport();
  BOOST_TEST(std::count(report.begin(), report.end(), '\n') == 1);

  // releaseUnused frees only free pools; the image in use keeps its data.
  fill(*a, 5.f);
  BOOST_TEST(mm.releaseUnused() == 3u);
  BOOST_TEST(mm.getNumPools() == 1u);
  BOOST_TEST(mm.bytesHeld() == perPool);
  BOOST_TEST(mm.poolsInUse() == 1u);
  BOOST_TEST(allEqual(*a, 5.f));
  BOOST_TEST(mm.releaseUnused() == 0u);

  // Limit: 2.5 pools. One more pool fits, the next does not.
  mm.setLimit(10000);
  BOOST_TEST(mm.limit() == 10000u);
  auto b = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);
  BOOST_TEST(mm.getNumPools() == 2u);
  bool thrown = false;
  try {
    ManagedImage3D c(g, MEM_HOST, mm);
  } catch (const PyCAMemoryException& e) {
    thrown = true;
    std::string w = e.what();
    BOOST_TEST_MESSAGE("limit message: " << w);
    BOOST_TEST(contains(w, "4096 bytes"));          // the request
    BOOST_TEST(contains(w, "1000 voxels"));         // ... and its grid
    BOOST_TEST(contains(w, "2 of 2 pools"));        // the pools in use
    BOOST_TEST(contains(w, "limit 10000 bytes"));   // the limit
  }
  BOOST_TEST(thrown);
  BOOST_TEST(mm.getNumPools() == 2u);
  BOOST_TEST(mm.poolsInUse() == 2u);

  // A field that cannot get all three pools gives back those it got.
  b.reset();
  BOOST_CHECK_THROW(ManagedField3D(g, MEM_HOST, mm), PyCAMemoryException);
  BOOST_TEST(mm.poolsInUse() == 1u);
  BOOST_TEST(mm.getNumPools() == 2u);

  // Requests that got a pool: a, f (3), b, and the field's first component;
  // the refused ones are not counted.
  BOOST_TEST(mm.stats().totalRequests == 6u);

  mm.setLimit(0);
  ManagedField3D ok(g, MEM_HOST, mm);
  BOOST_TEST(mm.getNumPools() == 4u);
  BOOST_TEST(mm.poolsInUse() == 4u);
}

// --------------------------------------------------------------- safety ----

BOOST_AUTO_TEST_CASE(release_is_quiet_now_and_later) {
  // release() (the apps' quiet end) prints no line, neither at once nor when
  // the last shared owner dies; destroy() after it is a no-op.
  GridInfo g(Vec3Di(8, 8, 8));
  CerrCapture cap;
  ThreadMemoryManager::init(g, MEM_HOST, 2);
  auto owner = ThreadMemoryManager::instanceShared();
  auto im = std::make_unique<ManagedImage3D>(g, MEM_HOST);
  fill(*im, 3.f);
  ThreadMemoryManager::release();
  BOOST_TEST(!ThreadMemoryManager::isInitialized());
  BOOST_TEST(allEqual(*im, 3.f));
  im.reset();
  owner.reset();                       // the manager itself dies here
  ThreadMemoryManager::release();      // no manager: a no-op
  ThreadMemoryManager::destroy();
  BOOST_TEST(cap.str().empty());
  // destroy() still reports (legacy)
  ThreadMemoryManager::init(g, MEM_HOST, 1);
  ThreadMemoryManager::destroy();
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{1}));
}

BOOST_AUTO_TEST_CASE(destroy_manager_under_live_images) {
  GridInfo g(Vec3Di(16, 16, 16));
  CerrCapture cap;
  auto mm = std::make_unique<MemoryManager>(g, MEM_HOST, 1);
  auto im = std::make_unique<ManagedImage3D>(g, MEM_HOST, *mm);
  auto f = std::make_unique<ManagedField3D>(g, MEM_HOST, *mm);
  fill(*im, 7.f);
  for (size_t i = 0; i < f->nVox(); ++i) f->set(i, Vec3Df(1.f, 2.f, 3.f));
  mm.reset();
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4}));
  BOOST_TEST(allEqual(*im, 7.f));
  BOOST_TEST((f->get(size_t(4095)) == Vec3Df(1.f, 2.f, 3.f)));
  fill(*im, 8.f);
  BOOST_TEST(allEqual(*im, 8.f));
  im.reset();  // returns its pool to the (orphaned) pool table: no use-after-free
  f.reset();

  // The same through ThreadMemoryManager::destroy().
  ThreadMemoryManager::init(g, MEM_HOST, 2);
  auto tim = std::make_unique<ManagedImage3D>(g, MEM_HOST);
  auto tf = std::make_unique<ManagedField3D>(g, MEM_HOST);
  BOOST_TEST(ThreadMemoryManager::instance().poolsInUse() == 4u);
  fill(*tim, -1.f);
  ThreadMemoryManager::destroy();
  BOOST_TEST(!ThreadMemoryManager::isInitialized());
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4, 4}));
  BOOST_TEST(allEqual(*tim, -1.f));
  ThreadMemoryManager::destroy();  // no-op, prints nothing
  BOOST_TEST(cap.maxPoolLines().size() == 2u);
  tim.reset();
  tf.reset();
  CHECK_PYCA_THROW(ThreadMemoryManager::instance(), PyCAException, "mMemMan");
  CHECK_PYCA_THROW(ThreadMemoryManager::instanceShared(), PyCAException, "mMemMan");
  BOOST_TEST(!ThreadMemoryManager::instancePtr());
}

BOOST_AUTO_TEST_CASE(second_init_does_not_leak) {
  // 4 MiB per pool: the held memory is visible in the heap statistics.
  GridInfo g(Vec3Di(128, 128, 64));
  const size_t poolBytes = g.nVox() * sizeof(float);
  CerrCapture cap;

  const size_t base = heapInUse();
  ThreadMemoryManager::init(g, MEM_HOST, 4);
  const size_t afterFirst = heapInUse();
  const bool heapVisible = afterFirst >= base + 4 * poolBytes;
  if (!heapVisible) BOOST_TEST_MESSAGE("heap statistics unavailable (sanitizer?): checking the printed lines only");

  auto im = std::make_unique<ManagedImage3D>(g, MEM_HOST);  // keeps manager #1's pools alive
  fill(*im, 11.f);
  std::weak_ptr<MemoryManager> first = ThreadMemoryManager::instancePtr();

  ThreadMemoryManager::init(g, MEM_HOST, 4);  // replaces manager #1
  BOOST_TEST(first.expired());                // the manager object is gone ...
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4}));
  BOOST_TEST(ThreadMemoryManager::instance().getNumPools() == 4u);
  BOOST_TEST(ThreadMemoryManager::instance().poolsInUse() == 0u);
  BOOST_TEST(allEqual(*im, 11.f));  // ... but the image's buffer is still valid
  if (heapVisible) BOOST_TEST(heapInUse() >= base + 8 * poolBytes);

  im.reset();  // last user of manager #1's pools: they are freed now
  if (heapVisible) {
    const size_t now = heapInUse();
    // Manager #2's 4 pools stay (each up to 2 MiB more, from the huge-page
    // alignment of large host buffers); a leak of #1's would add 4 more.
    BOOST_TEST(now < base + 8 * poolBytes);
    BOOST_TEST(now >= base + 4 * poolBytes);
  }
  ThreadMemoryManager::destroy();
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{4, 1}));
  if (heapVisible) BOOST_TEST(heapInUse() < base + poolBytes);
}

BOOST_AUTO_TEST_CASE(swap_managed_unmanaged_never_aliases) {
  GridInfo g(Vec3Di(8, 8, 4));
  MemoryManager mm(g, MEM_HOST, 2);

  auto managed = std::make_unique<ManagedImage3D>(g, MEM_HOST, mm);
  auto plain = std::make_unique<Image3D>(g, MEM_HOST);
  const float* poolBuf = managed->get();
  fill(*managed, 1.f);
  fill(*plain, 2.f);
  managed->swap(*plain);  // plain now holds the pool buffer
  BOOST_TEST(plain->get() == poolBuf);
  BOOST_TEST(allEqual(*plain, 1.f));
  BOOST_TEST(allEqual(*managed, 2.f));

  managed.reset();  // frees the private buffer; the pool is still in use by `plain`
  BOOST_TEST(mm.poolsInUse() == 1u);

  std::vector<std::unique_ptr<ManagedImage3D>> more;
  for (int i = 0; i < 4; ++i) {
    more.push_back(std::make_unique<ManagedImage3D>(g, MEM_HOST, mm));
    fill(*more.back(), 100.f + float(i));
  }
  std::set<const float*> live{plain->get()};
  for (auto& m : more) live.insert(m->get());
  BOOST_TEST(live.size() == 5u);  // all distinct, none equals the swapped pool
  BOOST_TEST(allEqual(*plain, 1.f));
  for (int i = 0; i < 4; ++i) BOOST_TEST(allEqual(*more[size_t(i)], 100.f + float(i)));
  BOOST_TEST(mm.poolsInUse() == 5u);

  // Destroying the unmanaged image returns the pool it carried.
  plain.reset();
  BOOST_TEST(mm.poolsInUse() == 4u);
  ManagedImage3D again(g, MEM_HOST, mm);
  BOOST_TEST(again.get() == poolBuf);
  BOOST_TEST(mm.getNumPools() == 5u);

  // Swap between two managed images of one manager: counts stay right.
  more[0]->swap(*more[1]);
  more.clear();
  BOOST_TEST(mm.poolsInUse() == 1u);
}

BOOST_AUTO_TEST_CASE(toType_resize_return_pool) {
  GridInfo g(Vec3Di(8, 8, 8));
  MemoryManager mm(g, MEM_HOST, 1);

  ManagedImage3D im(g, MEM_HOST, mm);
  const float* poolBuf = im.get();
  BOOST_TEST(mm.poolsInUse() == 1u);
  im.toType(MEM_HOST);  // no-op: keeps the pool
  BOOST_TEST(mm.poolsInUse() == 1u);
  BOOST_TEST(im.get() == poolBuf);
  im.resize(GridInfo(Vec3Di(4, 16, 8)));  // same voxel count: keeps the pool
  BOOST_TEST(mm.poolsInUse() == 1u);
  BOOST_TEST(im.get() == poolBuf);

  fill(im, 4.f);
  im.resize(GridInfo(Vec3Di(4, 4, 4)), true);  // detaches: pool back at once
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST(im.get() != poolBuf);
  BOOST_TEST(allEqual(im, 4.f));
  {
    ManagedImage3D next(g, MEM_HOST, mm);  // the freed pool is reusable now
    BOOST_TEST(next.get() == poolBuf);
    BOOST_TEST(mm.getNumPools() == 1u);
  }

  ManagedField3D f(g, MEM_HOST, mm);
  BOOST_TEST(mm.poolsInUse() == 3u);
  f.resize(GridInfo(Vec3Di(9, 9, 9)));
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST((f.x == f.getX() && f.y == f.getY() && f.z == f.getZ()));

  if (CudaCompiled() && GetNumberOfCUDADevices() > 0) {
    ManagedImage3D d(g, MEM_HOST, mm);
    BOOST_TEST(mm.poolsInUse() == 1u);
    d.toType(MEM_DEVICE);
    BOOST_TEST(mm.poolsInUse() == 0u);
    BOOST_TEST(d.memType() == MEM_DEVICE);
  } else if (!CudaCompiled()) {
    ManagedImage3D d(g, MEM_HOST, mm);
    BOOST_CHECK_THROW(d.toType(MEM_DEVICE), PyCAException);
    BOOST_TEST(mm.poolsInUse() == 1u);  // a failed move keeps the pool
    BOOST_TEST(d.memType() == MEM_HOST);
  }
  BOOST_TEST(mm.poolsInUse() == 0u);
}

// ------------------------------------------------------------ threading ----

BOOST_AUTO_TEST_CASE(shared_manager_many_threads) {
  const GridInfo g(Vec3Di(16, 16, 4));  // 1024 voxels
  MemoryManager mm(g, MEM_HOST, 2);
  const int nThreads = 8;
  const int nIter = 3000;

  std::mutex liveMutex;
  std::set<const float*> live;  // buffers currently handed out
  std::atomic<long> doubleHandout{0}, corrupted{0}, requests{0}, errors{0};

  auto claim = [&](const float* p) {
    std::lock_guard<std::mutex> lock(liveMutex);
    if (!live.insert(p).second) ++doubleHandout;
  };
  auto unclaim = [&](const float* p) {
    std::lock_guard<std::mutex> lock(liveMutex);
    live.erase(p);
  };

  auto worker = [&](int tid) {
    try {
      for (int it = 0; it < nIter; ++it) {
        const float tag = float(tid * 100000 + it);
        std::vector<std::unique_ptr<ManagedImage3D>> ims;
        const int k = 1 + (it + tid) % 3;
        for (int j = 0; j < k; ++j) {
          ims.push_back(std::make_unique<ManagedImage3D>(g, MEM_HOST, mm));
          ++requests;
          claim(ims.back()->get());
          fill(*ims.back(), tag + 0.25f * float(j));
        }
        std::unique_ptr<ManagedField3D> f;
        if (it % 7 == 0) {
          f = std::make_unique<ManagedField3D>(g, MEM_HOST, mm);
          requests += 3;
          for (int d = 0; d < 3; ++d) {
            claim(f->getComponent(d));
            std::fill(f->getComponent(d), f->getComponent(d) + f->nVox(), -tag - float(d));
          }
        }
        std::this_thread::yield();
        for (int j = 0; j < k; ++j)
          if (!allEqual(*ims[size_t(j)], tag + 0.25f * float(j))) ++corrupted;
        if (f) {
          for (int d = 0; d < 3; ++d) {
            const float* p = f->getComponent(d);
            if (!std::all_of(p, p + f->nVox(), [&](float v) { return v == -tag - float(d); }))
              ++corrupted;
            unclaim(p);
          }
          f.reset();
        }
        // Unclaim before the pool goes back, then release.
        for (auto& im : ims) {
          unclaim(im->get());
          im.reset();
        }
      }
    } catch (...) {
      ++errors;
    }
  };

  runThreads(nThreads, worker);

  BOOST_TEST(errors.load() == 0);
  BOOST_TEST(doubleHandout.load() == 0);
  BOOST_TEST(corrupted.load() == 0);
  BOOST_TEST(live.empty());
  BOOST_TEST(mm.poolsInUse() == 0u);
  BOOST_TEST(mm.stats().totalRequests == size_t(requests.load()));
  // At most 3 images + 3 field components per thread at once.
  BOOST_TEST(mm.getNumPools() <= size_t(nThreads * 6));
  BOOST_TEST(mm.peakInUse() <= mm.getNumPools());
  BOOST_TEST(mm.peakInUse() >= 4u);
  BOOST_TEST(mm.maxUsed() <= mm.getNumPools());
  BOOST_TEST_MESSAGE("pools after the stress run: " << mm.getNumPools() << ", peak in use "
                                                   << mm.peakInUse());
}

BOOST_AUTO_TEST_CASE(thread_managers_are_per_thread) {
  GridInfo g(Vec3Di(8, 8, 8));
  CerrCapture cap;
  ThreadMemoryManager::init(g, MEM_HOST, 3);
  MemoryManager* mainMM = &ThreadMemoryManager::instance();

  bool otherSawInit = true, instanceThrew = false, ptrNull = false, privateAlloc = false;
  size_t otherPools = 0, otherInUse = 0;
  bool otherDistinct = false, otherDestroyed = false;
  std::thread t([&] {
    otherSawInit = ThreadMemoryManager::isInitialized();
    try {
      ThreadMemoryManager::instance();
    } catch (const PyCAException& e) {
      instanceThrew = contains(e.what(), "mMemMan");
    }
    ptrNull = !ThreadMemoryManager::instancePtr();
    {
      ManagedImage3D im(g, MEM_HOST);  // no manager on this thread: private buffer
      privateAlloc = im.get() != nullptr && im.capacity() == g.nVox();
    }
    ThreadMemoryManager::init(GridInfo(Vec3Di(4, 4, 4)), MEM_HOST, 1);
    otherDistinct = &ThreadMemoryManager::instance() != mainMM;
    {
      ManagedField3D f(GridInfo(Vec3Di(4, 4, 4)), MEM_HOST);
      otherPools = ThreadMemoryManager::instance().getNumPools();
      otherInUse = ThreadMemoryManager::instance().poolsInUse();
    }
    ThreadMemoryManager::destroy();
    otherDestroyed = !ThreadMemoryManager::isInitialized();
  });
  t.join();

  BOOST_TEST(!otherSawInit);
  BOOST_TEST(instanceThrew);
  BOOST_TEST(ptrNull);
  BOOST_TEST(privateAlloc);
  BOOST_TEST(otherDistinct);
  BOOST_TEST(otherPools == 3u);
  BOOST_TEST(otherInUse == 3u);
  BOOST_TEST(otherDestroyed);
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{3}));

  // The main thread's manager was untouched by all of that.
  BOOST_TEST(ThreadMemoryManager::isInitialized());
  BOOST_TEST(&ThreadMemoryManager::instance() == mainMM);
  BOOST_TEST(mainMM->getNumPools() == 3u);
  BOOST_TEST(mainMM->stats().totalRequests == 0u);

  // A thread that never calls destroy() releases its manager when it ends.
  std::thread u([&] {
    ThreadMemoryManager::init(g, MEM_HOST, 2);
    ManagedImage3D a(g, MEM_HOST);
    ManagedImage3D b(g, MEM_HOST);
  });
  u.join();
  BOOST_TEST((cap.maxPoolLines() == std::vector<long>{3, 2}));
  BOOST_TEST(mainMM->getNumPools() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
