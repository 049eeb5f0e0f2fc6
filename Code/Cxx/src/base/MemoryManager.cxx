#include "MemoryManager.h"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <sstream>
#include <vector>

#include "MemAlloc.h"
#include "MemPool.h"
#include "conditionMacro.h"

namespace PyCA {
namespace detail {

/// One pool: a buffer of bytesPerPool bytes and whether it is handed out.
struct PoolEntry {
  std::shared_ptr<float> buffer;
  bool locked = false;
};

/// The state of a MemoryManager. Shared by the manager and by every buffer it
/// has handed out, so it lives until the last of them is released.
/// Invariant: inUse == number of entries with locked == true.
struct PoolTable {
  GridInfo grid;
  MemoryType type;
  size_t poolElems;  // capacity of one pool in floats
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<PoolEntry>> pools;
  size_t inUse = 0, peak = 0, maxUsedIdx = 0, requests = 0, limitBytes = 0;

  size_t bytesPerPool() const {
    size_t e = (poolElems + MEMPOOL_ALIGN_ELEMS - 1) / MEMPOOL_ALIGN_ELEMS * MEMPOOL_ALIGN_ELEMS;
    return e * sizeof(float);
  }

  // Caller holds the mutex.
  PoolEntry& addPool() {
    auto e = std::make_unique<PoolEntry>();
    e->buffer = MemPool<float>(poolElems, type).sharedPtr();
    pools.push_back(std::move(e));
    return *pools.back();
  }

  void release(PoolEntry* e) {
    std::lock_guard<std::mutex> lock(mutex);
    e->locked = false;
    --inUse;
  }
};

}  // namespace detail

using detail::PoolEntry;
using detail::PoolTable;

MemoryManager::MemoryManager(const GridInfo& grid, MemoryType memType, unsigned int nPools)
    : mTable(std::make_shared<PoolTable>()) {
  CheckGridSize(grid);
  mTable->grid = grid;
  mTable->type = memType;
  mTable->poolElems = grid.nVox();
  std::lock_guard<std::mutex> lock(mTable->mutex);
  for (unsigned int i = 0; i < nPools; ++i) mTable->addPool();
}

MemoryManager::~MemoryManager() { reportOnce(); }

void MemoryManager::reportOnce() {
  if (mReported.exchange(true)) return;
  std::cerr << "Maximum temporary Pools " << maxUsed() << std::endl;
}

std::shared_ptr<float> MemoryManager::getPool(const GridInfo& g) {
  PRECONDITION(g.nVox() <= mTable->grid.nVox(), "Grid too large");
  std::lock_guard<std::mutex> lock(mTable->mutex);
  PoolTable& t = *mTable;
  // Legacy order: the highest-index free pool.
  size_t id = t.pools.size();
  for (size_t i = t.pools.size(); i-- > 0;)
    if (!t.pools[i]->locked) { id = i; break; }
  if (id == t.pools.size()) {
    if (t.limitBytes && (t.pools.size() + 1) * t.bytesPerPool() > t.limitBytes) {
      std::ostringstream os;
      os << "MemoryManager limit exceeded: request for one more pool of " << t.bytesPerPool()
         << " bytes (grid of " << g.nVox() << " voxels), " << t.inUse << " of " << t.pools.size()
         << " pools (" << t.pools.size() * t.bytesPerPool() << " bytes) in use, limit "
         << t.limitBytes << " bytes";
      throw PyCAMemoryException(__FILE__, __LINE__, os.str());
    }
    t.addPool();
  }
  PoolEntry* e = t.pools[id].get();
  e->locked = true;
  ++t.inUse;
  ++t.requests;
  t.peak = std::max(t.peak, t.inUse);
  t.maxUsedIdx = std::max(t.maxUsedIdx, id);
  // The returned pointer owns a lease: its deleter hands the pool back. The
  // lease holds the table, so the manager may die first.
  std::shared_ptr<PoolTable> table = mTable;
  return std::shared_ptr<float>(e->buffer.get(), [table, e](float*) { table->release(e); });
}

size_t MemoryManager::getNumPools() const {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  return mTable->pools.size();
}

MemoryType MemoryManager::memType() const { return mTable->type; }
const GridInfo& MemoryManager::grid() const { return mTable->grid; }

size_t MemoryManager::poolsInUse() const { return stats().poolsInUse; }
size_t MemoryManager::peakInUse() const { return stats().peakInUse; }
size_t MemoryManager::bytesHeld() const { return stats().bytesHeld; }
size_t MemoryManager::maxUsed() const {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  return mTable->maxUsedIdx + 1;
}
size_t MemoryManager::limit() const { return stats().limitBytes; }

MemoryManagerStats MemoryManager::stats() const {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  MemoryManagerStats s;
  s.numPools = mTable->pools.size();
  s.poolsInUse = mTable->inUse;
  s.peakInUse = mTable->peak;
  s.bytesPerPool = mTable->bytesPerPool();
  s.bytesHeld = s.numPools * s.bytesPerPool;
  s.limitBytes = mTable->limitBytes;
  s.totalRequests = mTable->requests;
  return s;
}

void MemoryManager::resetPeak() {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  mTable->peak = mTable->inUse;
}

size_t MemoryManager::releaseUnused() {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  auto& v = mTable->pools;
  size_t before = v.size();
  v.erase(std::remove_if(v.begin(), v.end(), [](const std::unique_ptr<PoolEntry>& e) { return !e->locked; }),
          v.end());
  return before - v.size();
}

void MemoryManager::setLimit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  mTable->limitBytes = bytes;
}

std::string MemoryManager::usageReport() const {
  std::lock_guard<std::mutex> lock(mTable->mutex);
  std::ostringstream os;
  size_t n = 0;
  for (size_t i = 0; i < mTable->pools.size(); ++i) {
    if (!mTable->pools[i]->locked) continue;
    os << "pool " << i << ": in use, " << mTable->bytesPerPool() << " bytes of "
       << MemTypeStr(mTable->type) << "\n";
    ++n;
  }
  if (n == 0) return "no pools in use";
  return os.str();
}

// ---- ThreadMemoryManager -------------------------------------------------

namespace {
thread_local std::shared_ptr<MemoryManager> tThreadManager;
}

void ThreadMemoryManager::init(const GridInfo& grid, MemoryType memType, unsigned int nPools) {
  // Build the new one first: if it throws, the old manager stays in place.
  auto mm = std::make_shared<MemoryManager>(grid, memType, nPools);
  tThreadManager = std::move(mm);
}

bool ThreadMemoryManager::isInitialized() { return static_cast<bool>(tThreadManager); }

MemoryManager& ThreadMemoryManager::instance() {
  MemoryManager* mMemMan = tThreadManager.get();
  PYCA_ASSERT(mMemMan);
  return *mMemMan;
}

std::shared_ptr<MemoryManager> ThreadMemoryManager::instancePtr() { return tThreadManager; }

std::shared_ptr<MemoryManager> ThreadMemoryManager::instanceShared() {
  MemoryManager* mMemMan = tThreadManager.get();
  PYCA_ASSERT(mMemMan);
  return tThreadManager;
}

void ThreadMemoryManager::destroy() {
  if (tThreadManager) tThreadManager->reportOnce();
  tThreadManager.reset();
}

void ThreadMemoryManager::release() {
  if (tThreadManager) tThreadManager->silence();
  tThreadManager.reset();
}

}  // namespace PyCA
