// MemPool.h -- a typed, reference-counted buffer in one kind of memory.
#ifndef __PYCA_MEM_POOL_H__
#define __PYCA_MEM_POOL_H__

#include <algorithm>
#include <cstddef>
#include <memory>

#include "MemAlloc.h"
#include "conditionMacro.h"
#include "mem.h"

namespace PyCA {

/// Capacity granularity in elements (legacy: allocations round up to 128).
constexpr size_t MEMPOOL_ALIGN_ELEMS = 128;

/// A buffer of `capacity()` elements of T in memory of type `memType()`.
/// Copies are shallow: copies share the buffer, which is freed (or handed
/// back to its MemoryManager) when the last copy lets go of it.
/// Invariant: data() is null if and only if capacity() == 0 or the pool is unallocated.
template <typename T>
class MemPool {
 public:
  /// Empty pool: capacity 0, null data.
  explicit MemPool(MemoryType type = MEM_HOST) : mType(type), mCap(0) {}

  /// Allocates roundup(n, 128) elements. Throws on failure.
  MemPool(size_t n, MemoryType type) : mType(type), mCap(n) {
    mData = allocate(n, type);
  }

  /// Adopts a raw pointer from AllocateMemory(type, ...); freed with the matching call.
  MemPool(T* raw, size_t n, MemoryType type)
      : mData(raw, [type](T* p) { FreeMemory(type, p); }), mType(type), mCap(n) {}

  /// Aliases an existing shared buffer and records n as its capacity.
  MemPool(std::shared_ptr<T> data, size_t n, MemoryType type)
      : mData(std::move(data)), mType(type), mCap(n) {}

  MemoryType memType() const { return mType; }
  /// Usable elements.
  size_t capacity() const { return mCap; }
  T* get() { return mData.get(); }
  const T* get() const { return mData.get(); }
  /// The shared owner of the buffer (keeps it alive while held).
  const std::shared_ptr<T>& sharedPtr() const { return mData; }

  /// Exchanges buffers; both pools must have the same memory type.
  void swap(MemPool& o) {
    PRECONDITION(mType == o.mType, "memory types are not compatible");
    std::swap(mData, o.mData);
    std::swap(mCap, o.mCap);
  }

  /// New allocation of n elements; copies min(old, n) elements if preserve.
  /// No-op if n equals the capacity.
  void resize(size_t n, bool preserve = false, StreamT st = nullptr) {
    if (n == mCap && mData) return;
    std::shared_ptr<T> fresh = allocate(n, mType);
    if (preserve && mData && n > 0)
      CopyMemory(fresh.get(), mType, mData.get(), mType, std::min(n, mCap) * sizeof(T), st);
    mData = std::move(fresh);
    mCap = n;
  }

  /// Moves the contents to memory of type t (new allocation + copy). No-op if same type.
  void toType(MemoryType t, StreamT st = nullptr) {
    if (t == mType) return;
    std::shared_ptr<T> fresh = allocate(mCap, t);
    if (mCap > 0 && mData) CopyMemory(fresh.get(), t, mData.get(), mType, mCap * sizeof(T), st);
    mData = std::move(fresh);
    mType = t;
  }

  /// Deep copy of o (reallocating when type or capacity differ).
  void clone(const MemPool& o, StreamT st = nullptr) {
    if (this == &o) return;
    if (o.mType != mType || o.mCap != mCap || !mData) {
      mData = allocate(o.mCap, o.mType);
      mType = o.mType;
      mCap = o.mCap;
    }
    if (mCap > 0 && o.mData)
      CopyMemory(mData.get(), mType, o.mData.get(), o.mType, mCap * sizeof(T), st);
  }

  /// Drops this pool's reference to its buffer (capacity 0).
  void reset() { mData.reset(); mCap = 0; }

 private:
  static std::shared_ptr<T> allocate(size_t n, MemoryType type) {
    if (n == 0) return std::shared_ptr<T>();
    size_t rounded = (n + MEMPOOL_ALIGN_ELEMS - 1) / MEMPOOL_ALIGN_ELEMS * MEMPOOL_ALIGN_ELEMS;
    if (rounded < n || rounded > static_cast<size_t>(-1) / sizeof(T))
      throw PyCAMemoryException(__FILE__, __LINE__, "Error, memory allocation failed (size overflow)");
    T* p = static_cast<T*>(AllocateMemory(type, rounded * sizeof(T)));
    return std::shared_ptr<T>(p, [type](T* q) { FreeMemory(type, q); });
  }

  std::shared_ptr<T> mData;
  MemoryType mType;
  size_t mCap;
};

}  // namespace PyCA

#endif
