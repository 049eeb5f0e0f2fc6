// Raw allocation per memory type. CUDA calls are compiled in only with
// CUDA_ENABLED; they use the runtime API, so a CUDA build still runs without a GPU.
#include "MemAlloc.h"

#include "CPUThreads.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include <cstdio>

#if defined(__linux__)
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

#include "conditionMacro.h"

#ifdef CUDA_ENABLED
#include <cuda_runtime_api.h>
#endif

namespace PyCA {

namespace {
constexpr size_t kHostAlign = 64;
constexpr size_t kHugeAlign = size_t(2) << 20;
constexpr size_t kHugeMin = size_t(4) << 20;

// Page colouring. Host buffers of kColourMin bytes or more start kColourStep
// times 1 .. kColours bytes past their alignment, in turn. Without it every
// large buffer starts on a 2 MiB (or page) boundary, so voxel i of every
// image and field shares the low 12 address bits: the gathers' loads then
// wait on unrelated pending stores to outputs (4 KiB aliasing), and the same
// voxel of all arrays falls in one L1/L2 set. The offset keeps 128-byte
// alignment (FFTW's and the vector loads' needs are 16 and 32 bytes).
constexpr size_t kColourMin = size_t(64) << 10;
constexpr size_t kColourStep = 128;
constexpr unsigned kColours = 31;  // offsets 128 .. 3968: distinct modulo 4 KiB

/// The coloured buffers handed out: returned pointer -> allocated pointer.
struct ColourTable {
  std::mutex m;
  std::unordered_map<void*, void*> base;
  unsigned next = 0;
};
ColourTable& colourTable() {
  static ColourTable* t = new ColourTable;  // never destroyed: frees may run at exit
  return *t;
}

[[noreturn]] void notCompiled(const char* file, int line) {
  throw PyCAException(file, line, "CUDA support not compiled");
}

/// What a failed host allocation is measured against, for its message: the
/// memory this process holds and the limit that applies. Under an address-
/// space limit (RLIMIT_AS, as batch schedulers set) those are the process's
/// mapped bytes and that limit; otherwise its resident bytes and the
/// machine's physical memory (with what is still available).
std::string hostMemoryContext() {
#if defined(__linux__)
  const long page = sysconf(_SC_PAGESIZE);
  unsigned long long vmPages = 0, rssPages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu %llu", &vmPages, &rssPages) != 2) vmPages = rssPages = 0;
    std::fclose(f);
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    return std::to_string(vmPages * (unsigned long long)page) +
           " bytes of address space in use by this process, limit " +
           std::to_string((unsigned long long)rl.rlim_cur) + " bytes (RLIMIT_AS)";
  const long phys = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
  std::string s = std::to_string(rssPages * (unsigned long long)page) +
                  " bytes resident in this process";
  if (phys > 0)
    s += ", limit " + std::to_string((unsigned long long)phys * (unsigned long long)page) +
         " bytes (physical memory";
  if (phys > 0 && avail >= 0)
    s += ", " + std::to_string((unsigned long long)avail * (unsigned long long)page) +
         " bytes available)";
  else if (phys > 0)
    s += ")";
  return s;
#else
  return "host memory in use unknown on this platform";
#endif
}

#ifdef CUDA_ENABLED
[[noreturn]] void cudaFailure(const char* file, int line, const char* what, cudaError_t e,
                              size_t nBytes, bool device) {
  cudaGetLastError();  // clear the sticky error of a failed allocation
  std::string msg = std::string(what) + " of " + std::to_string(nBytes) + " bytes failed: " +
                    cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) {
    if (device) {
      size_t freeB = 0, totalB = 0;
      int dev = -1;
      cudaGetDevice(&dev);
      if (cudaMemGetInfo(&freeB, &totalB) == cudaSuccess)
        msg += "; " + std::to_string(totalB - freeB) + " bytes in use on device " +
               std::to_string(dev) + ", limit " + std::to_string(totalB) + " bytes (" +
               std::to_string(freeB) + " free)";
      cudaGetLastError();
    } else {
      msg += "; " + hostMemoryContext();
    }
    throw PyCAMemoryException(file, line, msg);
  }
  throw PyCAException(file, line, msg);
}
#endif
// Large host copies are split over the OpenMP threads (one core cannot
// saturate the memory bus); small ones stay a single memcpy.
void hostCopy(void* dst, const void* src, size_t nBytes) {
  constexpr size_t kChunk = size_t(1) << 20;
  const long nChunks = static_cast<long>((nBytes + kChunk - 1) / kChunk);
  if (nChunks < 4) {
    std::memcpy(dst, src, nBytes);
    return;
  }
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(static)
  for (long c = 0; c < nChunks; ++c) {
    size_t off = size_t(c) * kChunk;
    std::memcpy(d + off, s + off, std::min(kChunk, nBytes - off));
  }
}
}  // namespace

const char* MemTypeStr(MemoryType type) {
  switch (type) {
    case MEM_HOST: return "host memory";
    case MEM_HOST_PINNED: return "pinned host memory";
    case MEM_DEVICE: return "gpu_device_memory";
    default: return "uninitialized memory";
  }
}

const char* MemTypeName(MemoryType t) {
  switch (t) {
    case MEM_HOST: return "MEM_HOST";
    case MEM_HOST_PINNED: return "MEM_HOST_PINNED";
    case MEM_DEVICE: return "MEM_DEVICE";
    default: return "MEM_UNINITIALIZED";
  }
}

bool CudaCompiled() {
#ifdef CUDA_ENABLED
  return true;
#else
  return false;
#endif
}

void* AllocateMemory(MemoryType t, size_t nBytes) {
  if (t != MEM_HOST && t != MEM_HOST_PINNED && t != MEM_DEVICE)
    throw PyCAException(__FILE__, __LINE__, "Error, Unknown Memory Type");
#ifndef CUDA_ENABLED
  if (t != MEM_HOST) notCompiled(__FILE__, __LINE__);
#endif
  if (nBytes == 0) return nullptr;
  void* p = nullptr;
  switch (t) {
    case MEM_HOST: {
      // Large buffers are 2 MiB aligned and marked for transparent huge pages
      // (as NumPy does): first touch then costs one fault per 2 MiB, not per
      // 4 KiB. Buffers of kColourMin bytes or more are also coloured (above).
      const size_t align = nBytes >= kHugeMin ? kHugeAlign : (nBytes >= kColourMin ? 4096 : kHostAlign);
      size_t colour = 0;
      if (nBytes >= kColourMin) {
        ColourTable& ct = colourTable();
        std::lock_guard<std::mutex> lock(ct.m);
        colour = kColourStep * (1 + ct.next++ % kColours);
      }
      const size_t total = nBytes + colour;
      void* base = nullptr;
      if (total < nBytes || posix_memalign(&base, align, total) != 0) base = nullptr;
      if (!base)
        throw PyCAMemoryException(__FILE__, __LINE__,
                                  "Error, memory allocation failed: " + std::to_string(nBytes) +
                                      " bytes of host memory requested; " + hostMemoryContext());
#ifdef MADV_HUGEPAGE
      if (align == kHugeAlign) madvise(base, total, MADV_HUGEPAGE);
#endif
      if (!colour) return base;
      p = static_cast<char*>(base) + colour;
      try {
        ColourTable& ct = colourTable();
        std::lock_guard<std::mutex> lock(ct.m);
        ct.base.emplace(p, base);
      } catch (...) {
        std::free(base);
        throw PyCAMemoryException(__FILE__, __LINE__,
                                  "Error, memory allocation failed: " + std::to_string(nBytes) +
                                      " bytes of host memory requested; " + hostMemoryContext());
      }
      return p;
    }
#ifdef CUDA_ENABLED
    case MEM_HOST_PINNED: {
      cudaError_t e = cudaMallocHost(&p, nBytes);
      if (e != cudaSuccess) cudaFailure(__FILE__, __LINE__, "cudaMallocHost", e, nBytes, false);
      return p;
    }
    case MEM_DEVICE: {
      cudaError_t e = cudaMalloc(&p, nBytes);
      if (e != cudaSuccess) cudaFailure(__FILE__, __LINE__, "cudaMalloc", e, nBytes, true);
      return p;
    }
#endif
    default:
      notCompiled(__FILE__, __LINE__);
  }
}

void FreeMemory(MemoryType t, void* p) noexcept {
  if (!p) return;
  switch (t) {
    case MEM_HOST: {
      ColourTable& ct = colourTable();
      {
        std::lock_guard<std::mutex> lock(ct.m);
        auto it = ct.base.find(p);
        if (it != ct.base.end()) {
          void* base = it->second;
          ct.base.erase(it);
          p = base;
        }
      }
      std::free(p);
      break;
    }
#ifdef CUDA_ENABLED
    case MEM_HOST_PINNED: cudaFreeHost(p); break;
    case MEM_DEVICE: cudaFree(p); break;
#endif
    default: break;
  }
}

void CopyMemory(void* dst, MemoryType dstType, const void* src, MemoryType srcType,
                size_t nBytes, StreamT st) {
  if (nBytes == 0 || dst == src) return;
  PRECONDITION(dst && src, "Copy of null memory");
  if (isHostAccessible(dstType) && isHostAccessible(srcType)) {
    hostCopy(dst, src, nBytes);
    return;
  }
#ifdef CUDA_ENABLED
  cudaError_t e;
  if (st) {
    bool hostSide = dstType != MEM_DEVICE || srcType != MEM_DEVICE;
    bool unpinned = dstType == MEM_HOST || srcType == MEM_HOST;
    PRECONDITION(!(hostSide && unpinned), "Pinned memory is required for streaming between CPU and GPU");
    e = cudaMemcpyAsync(dst, src, nBytes, cudaMemcpyDefault, reinterpret_cast<cudaStream_t>(st));
  } else {
    e = cudaMemcpy(dst, src, nBytes, cudaMemcpyDefault);
  }
  if (e != cudaSuccess) cudaFailure(__FILE__, __LINE__, "cudaMemcpy", e, nBytes, true);
#else
  (void)st;
  notCompiled(__FILE__, __LINE__);
#endif
}

}  // namespace PyCA
