// PointwiseKernels.h -- the per-voxel bodies of the elementwise operators.
//
// Each functor computes one output value from its inputs and captured
// constants. It is compiled by g++ for the CPU back end and by nvcc for the
// CUDA back end, so the arithmetic the GPU runs is the arithmetic the CPU
// tests check. Register each functor in ElementwiseOps.def.
#ifndef __PYCA_POINTWISE_KERNELS_H__
#define __PYCA_POINTWISE_KERNELS_H__

#include "pycaKernel.h"

namespace PyCA {
namespace kern {

/// out = c
struct SetC {
  float c;
  PYCA_HOSTDEVICE float operator()() const { return c; }
};

/// out = a
struct Identity {
  PYCA_HOSTDEVICE float operator()(float a) const { return a; }
};

/// out = a * c
struct MulC {
  float c;
  PYCA_HOSTDEVICE float operator()(float a) const { return a * c; }
};

/// out = a + c
struct AddC {
  float c;
  PYCA_HOSTDEVICE float operator()(float a) const { return a + c; }
};

/// out = a + b
struct Add {
  PYCA_HOSTDEVICE float operator()(float a, float b) const { return a + b; }
};

// ---- reduction maps: float inputs -> double term -------------------------

/// term = a
struct RedIdentity {
  PYCA_HOSTDEVICE double operator()(float a) const { return double(a); }
};

/// term = a^2 (exact in double)
struct RedSquare {
  PYCA_HOSTDEVICE double operator()(float a) const { return double(a) * double(a); }
};

}  // namespace kern
}  // namespace PyCA

#endif
