// pycaKernel.h -- portability macros for code compiled by both g++ and nvcc.
// A function marked PYCA_HOSTDEVICE is one kernel body: the CPU back end calls
// it from an OpenMP loop, the CUDA back end from a grid-stride kernel.
#ifndef __PYCA_KERNEL_H__
#define __PYCA_KERNEL_H__

#if defined(__CUDACC__)
#define PYCA_HOSTDEVICE __host__ __device__
#define PYCA_DEVICE __device__
#define PYCA_FORCEINLINE __forceinline__
#else
#define PYCA_HOSTDEVICE
#define PYCA_DEVICE
#define PYCA_FORCEINLINE inline __attribute__((always_inline))
#endif

#endif
