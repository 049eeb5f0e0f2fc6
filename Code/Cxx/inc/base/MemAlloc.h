// MemAlloc.h -- raw allocation and copies for each MemoryType.
// The only place that calls malloc/cudaMalloc/cudaMallocHost.
#ifndef __PYCA_MEM_ALLOC_H__
#define __PYCA_MEM_ALLOC_H__

#include <cstddef>
#include <string>

#include "estream.h"
#include "mem.h"

namespace PyCA {

/// True when the library was built with the CUDA back end.
bool CudaCompiled();

/// The CPU back end compiles its hot loops (reductions, the voxel loops of
/// the Gaussian filter and trilinear sampling) twice, for the baseline ISA
/// and for AVX2, and picks one at run time. SetCPUDispatch("baseline")
/// forces the baseline loops, "avx2" the AVX2 ones (PyCAException if the
/// CPU lacks AVX2 or the build has no AVX2 loops; PyCAValueException, in
/// Python ValueError, for any other name), "auto" (the default)
/// AVX2 where the CPU has it. The environment variable PYCA_CPU_DISPATCH
/// sets the starting value. An extension of this library, for tests and
/// for comparing the two paths; results are meant to be identical.
void SetCPUDispatch(const std::string& path);
/// The loops in use now: "avx2" or "baseline".
const char* GetCPUDispatch();

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
