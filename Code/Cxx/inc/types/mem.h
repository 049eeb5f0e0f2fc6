// mem.h -- where a buffer lives.
#ifndef __PYCA_MEM_H__
#define __PYCA_MEM_H__

namespace PyCA {

/// Memory placement of a buffer. Integer values are legacy ABI.
enum MemoryType : int {
  MEM_UNINITIALIZED = 0,
  MEM_HOST = 1,
  MEM_HOST_PINNED = 2,
  MEM_DEVICE = 3
};

/// Legacy human-readable name: "host memory", "pinned host memory",
/// "gpu_device_memory" or "uninitialized memory".
const char* MemTypeStr(MemoryType type);

/// Name of the enumerator: "MEM_HOST", "MEM_HOST_PINNED", "MEM_DEVICE", "MEM_UNINITIALIZED".
const char* MemTypeName(MemoryType type);

/// True for memory the CPU can address directly (MEM_HOST, MEM_HOST_PINNED).
inline bool isHostAccessible(MemoryType t) { return t == MEM_HOST || t == MEM_HOST_PINNED; }

}  // namespace PyCA

#endif
