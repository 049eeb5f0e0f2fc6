// MemAlloc.h -- raw allocation and copies for each MemoryType.
// The only place that calls malloc/cudaMalloc/cudaMallocHost.
#ifndef __PYCA_MEM_ALLOC_H__
#define __PYCA_MEM_ALLOC_H__

#include <cstddef>

#include "estream.h"
#include "mem.h"

namespace PyCA {

/// True when the library was built with the CUDA back end.
bool CudaCompiled();

/// Allocates nBytes (64-byte aligned on the host) of memory of type t.
/// Returns nullptr for nBytes == 0. Throws PyCAMemoryException when the
/// allocation fails, PyCAException "CUDA support not compiled" for
/// MEM_DEVICE/MEM_HOST_PINNED in CPU builds, "Error, Unknown Memory Type" otherwise.
void* AllocateMemory(MemoryType t, size_t nBytes);

/// Frees a block from AllocateMemory(t, ...). Never throws.
void FreeMemory(MemoryType t, void* p) noexcept;

/// Copies nBytes between any two memory types (host, pinned, device).
/// With a stream, host<->device copies require pinned host memory
/// ("Pinned memory is required for streaming between CPU and GPU").
void CopyMemory(void* dst, MemoryType dstType, const void* src, MemoryType srcType,
                size_t nBytes, StreamT st = nullptr);

}  // namespace PyCA

#endif
