// MemoryManager.h -- pools of scratch buffers, shared or one per thread.
#ifndef __PYCA_MEMORY_MANAGER_H__
#define __PYCA_MEMORY_MANAGER_H__

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "GridInfo.h"
#include "mem.h"

namespace PyCA {

namespace detail {
struct PoolTable;
}

/// Counters of a MemoryManager (a snapshot; RMM-style current/peak/total).
struct MemoryManagerStats {
  size_t numPools = 0;      ///< pools allocated (getNumPools())
  size_t poolsInUse = 0;    ///< pools handed out and not yet returned
  size_t peakInUse = 0;     ///< most pools in use at once since creation or resetPeak()
  size_t bytesPerPool = 0;  ///< allocation size of one pool
  size_t bytesHeld = 0;     ///< numPools * bytesPerPool
  size_t limitBytes = 0;    ///< 0 = unlimited
  size_t totalRequests = 0; ///< getPool calls that succeeded
};

/// Hands out buffers ("pools") of grid().nVox() floats in memory memType().
///
/// A request takes the highest-index free pool (legacy order) or, when none is
/// free, allocates one more; pools are never freed by themselves (only
/// releaseUnused() does). A buffer returns to the manager when the last
/// shared_ptr to it dies, so it can never be handed out twice, and the manager's
/// state outlives this object while any buffer is out (no use-after-free).
/// Thread-safe: one mutex guards the pool table.
class MemoryManager {
 public:
  /// Allocates nPools pools of grid.nVox() floats in memory memType.
  MemoryManager(const GridInfo& grid, MemoryType memType, unsigned int nPools);
  /// Prints "Maximum temporary Pools N" to stderr (legacy), N = highest pool
  /// index ever handed out + 1, unless ThreadMemoryManager::destroy() already did.
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  /// A buffer of at least g.nVox() floats, returned to the pool when released.
  /// Throws "Grid too large" if g has more voxels than grid(), PyCAMemoryException
  /// when a new pool cannot be allocated or would exceed the limit.
  std::shared_ptr<float> getPool(const GridInfo& g);

  /// Number of pools allocated.
  size_t getNumPools() const;
  MemoryType memType() const;
  const GridInfo& grid() const;

  size_t poolsInUse() const;
  size_t peakInUse() const;
  size_t bytesHeld() const;
  /// Highest pool index ever handed out + 1 (1 if none was).
  size_t maxUsed() const;
  MemoryManagerStats stats() const;
  /// Peak in use := pools in use now.
  void resetPeak();
  /// Frees every pool not in use; returns how many were freed.
  size_t releaseUnused();
  /// Caps bytesHeld(); 0 removes the cap. Growth beyond it throws PyCAMemoryException.
  void setLimit(size_t bytes);
  size_t limit() const;
  /// One line per pool still in use ("pool 3: in use, 1048576 bytes"), or "no pools in use".
  std::string usageReport() const;

 private:
  friend class ThreadMemoryManager;
  /// Prints the "Maximum temporary Pools" line the first time only.
  void reportOnce();
  /// Marks the line as printed without printing it (ThreadMemoryManager::release()).
  void silence() { mReported.store(true); }

  std::shared_ptr<detail::PoolTable> mTable;
  std::atomic<bool> mReported{false};
};

/// One MemoryManager per OS thread (legacy ThreadMemoryManager).
class ThreadMemoryManager {
 public:
  /// Creates this thread's manager, replacing (and releasing) any previous one.
  static void init(const GridInfo& grid, MemoryType memType, unsigned int nPools);
  static bool isInitialized();
  /// This thread's manager; throws PyCAException "mMemMan" if not initialised.
  static MemoryManager& instance();
  /// Shared ownership of this thread's manager (null if not initialised).
  static std::shared_ptr<MemoryManager> instancePtr();
  /// As instance(), but shares ownership (what Python's instance() returns).
  static std::shared_ptr<MemoryManager> instanceShared();
  /// Releases this thread's manager (no-op if none) and prints its
  /// "Maximum temporary Pools N" line now, even if Python still holds a
  /// reference from instance() (which stays safe to use).
  static void destroy();
  /// PyCA extension: releases this thread's manager (no-op if none) without
  /// the "Maximum temporary Pools N" line, now or later (the apps' quiet end:
  /// a command line's output is its own lines only). destroy() keeps the
  /// legacy report.
  static void release();
};

}  // namespace PyCA

// Legacy: MemoryManager.h also declares ManagedImage3D and ManagedField3D, so
// a program that includes only this header uses the managed types. Included
// after MemoryManager is complete; each of them includes this header first,
// and the include guards make either order work.
#ifndef SWIG
#include "ManagedImage3D.h"
#include "ManagedField3D.h"
#endif

#endif
