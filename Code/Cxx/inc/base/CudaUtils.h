// CudaUtils.h -- CUDA device helpers; safe to call in CPU-only builds.
#ifndef __PYCA_CUDA_UTILS_H__
#define __PYCA_CUDA_UTILS_H__

#include <string>

namespace PyCA {

/// Number of usable CUDA devices (0 in CPU builds or without a driver/GPU).
unsigned int GetNumberOfCUDADevices();
/// Selects the current device. Throws "Cuda support not compiled" in CPU
/// builds, "Error, cannot select device %d, only %d devices available." otherwise.
void SetCUDADevice(unsigned int deviceNum);
/// Waits for the device, then throws a PyCAException if a CUDA call or kernel
/// failed (no-op in CPU builds and on machines without a CUDA device).
void CheckCUDAError(const char* file, int line, const char* msg = nullptr);
/// "used/total" memory of the current device, or "CUDA support not compiled".
std::string GetCUDAMemUsage();
/// Throws unless device devNum has compute capability >= major.minor.
void AssertMinCUDACapabilityVersion(int devNum, int major, int minor);
void AssertMinCUDACapabilityVersion(int major, int minor);
/// The current device, or -1 in CPU builds and without a usable device.
int GetCurrentCUDADevice();
/// The device that holds the memory at p (device or managed memory), or -1
/// for host memory, unknown pointers and in CPU builds. Used by the DLPack
/// export (PyCA.Core, interop.i) to report a buffer's device.
int GetCUDAPointerDevice(const void* p);

}  // namespace PyCA

#endif
