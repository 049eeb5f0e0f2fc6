// CUDA device and stream helpers (runtime API only; CPU builds answer politely).
#include "CudaUtils.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "conditionMacro.h"
#include "estream.h"

#ifdef CUDA_ENABLED
#include <cuda_runtime_api.h>
#endif

namespace PyCA {

unsigned int GetNumberOfCUDADevices() {
#ifdef CUDA_ENABLED
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for the caller
    return 0;
  }
  return static_cast<unsigned int>(n);
#else
  return 0;
#endif
}

void SetCUDADevice(unsigned int deviceNum) {
#ifdef CUDA_ENABLED
  unsigned int n = GetNumberOfCUDADevices();
  PRECONDITION(n > 0, "Error, no CUDA capable devices found.");
  if (deviceNum >= n) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "Error, cannot select device %u, only %u devices available.",
                  deviceNum, n);
    throw PyCAException(__FILE__, __LINE__, buf);
  }
  cudaSetDevice(static_cast<int>(deviceNum));
#else
  (void)deviceNum;
  throw PyCAException(__FILE__, __LINE__, "Cuda support not compiled");
#endif
}

void CheckCUDAError(const char* file, int line, const char* msg) {
#ifdef CUDA_ENABLED
  // Without a device nothing can have failed on one (and the runtime's
  // "no CUDA-capable device" is not the caller's error).
  if (GetNumberOfCUDADevices() == 0) return;
  // Wait for the device first, so that errors of kernels still running
  // (asynchronous faults) are reported here too; this also makes the call a
  // barrier for timing.
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  else cudaGetLastError();
  if (e != cudaSuccess) {
    std::string text = std::string("CUDA error: ") + cudaGetErrorString(e);
    if (msg) text += std::string(" (") + msg + ")";
    throw PyCAException(file ? file : "unknown file", line, text);
  }
#else
  (void)file; (void)line; (void)msg;
#endif
}

std::string GetCUDAMemUsage() {
#ifdef CUDA_ENABLED
  size_t freeB = 0, total = 0;
  if (cudaMemGetInfo(&freeB, &total) != cudaSuccess) {
    cudaGetLastError();
    return "no CUDA device available";
  }
  std::ostringstream os;
  os << "GPU memory used " << (total - freeB) / (1024 * 1024) << " MB of " << total / (1024 * 1024)
     << " MB";
  return os.str();
#else
  return "CUDA support not compiled";
#endif
}

void AssertMinCUDACapabilityVersion(int devNum, int major, int minor) {
#ifdef CUDA_ENABLED
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, devNum) != cudaSuccess) {
    cudaGetLastError();
    throw PyCAException(__FILE__, __LINE__, "Error, no CUDA capable devices found.");
  }
  if (prop.major < major || (prop.major == major && prop.minor < minor)) {
    std::ostringstream os;
    os << "Device " << devNum << " has compute capability " << prop.major << "." << prop.minor
       << ", need " << major << "." << minor;
    throw PyCAException(__FILE__, __LINE__, os.str());
  }
#else
  (void)devNum; (void)major; (void)minor;
  throw PyCAException(__FILE__, __LINE__, "Cuda support not compiled");
#endif
}

void AssertMinCUDACapabilityVersion(int major, int minor) {
#ifdef CUDA_ENABLED
  int dev = 0;
  cudaGetDevice(&dev);
  AssertMinCUDACapabilityVersion(dev, major, minor);
#else
  AssertMinCUDACapabilityVersion(0, major, minor);
#endif
}

int GetCurrentCUDADevice() {
#ifdef CUDA_ENABLED
  if (GetNumberOfCUDADevices() == 0) return -1;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return dev;
#else
  return -1;
#endif
}

int GetCUDAPointerDevice(const void* p) {
#ifdef CUDA_ENABLED
  if (!p || GetNumberOfCUDADevices() == 0) return -1;
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // a plain host pointer on old runtimes
    return -1;
  }
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) return attr.device;
  return -1;
#else
  (void)p;
  return -1;
#endif
}

// ---- streams --------------------------------------------------------------

namespace {
std::vector<StreamT> gStreams;
}

void StreamCreate(int nStream) {
#ifdef CUDA_ENABLED
  PRECONDITION(nStream >= 0, "Number of streams must not be negative");
  StreamDestroy();
  for (int i = 0; i < nStream; ++i) {
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) {
      cudaGetLastError();
      StreamDestroy();
      throw PyCAException(__FILE__, __LINE__, "Error, could not create CUDA stream");
    }
    gStreams.push_back(reinterpret_cast<StreamT>(s));
  }
#else
  (void)nStream;
  throw PyCAException(__FILE__, __LINE__, "Cuda support not compiled");
#endif
}

void StreamDestroy() {
#ifdef CUDA_ENABLED
  for (StreamT s : gStreams) cudaStreamDestroy(reinterpret_cast<cudaStream_t>(s));
  gStreams.clear();
#else
  throw PyCAException(__FILE__, __LINE__, "Cuda support not compiled");
#endif
}

StreamT GetStream(int id) {
  if (id < 0 || size_t(id) >= gStreams.size()) return nullptr;
  return gStreams[size_t(id)];
}

bool CheckStreamCondition(size_t nstreams) { return gStreams.size() >= nstreams; }

void StreamIncompatibleWarning(const char* what, const char* file, int line) {
  std::cerr << "Warning: " << (what ? what : "operation") << " does not support streams (" << (file ? file : "")
            << ":" << line << ")" << std::endl;
}

void StreamIncompatibleWarning(const char* what, const char* file, int line, const char* sol) {
  StreamIncompatibleWarning(what, file, line);
  if (sol) std::cerr << "  " << sol << std::endl;
}

}  // namespace PyCA
