// MemOpersKernels.h -- index functors of the raw-array operators that are not
// elementwise (MemOpers.h): each reads or writes at an index other than its
// own, or combines two arrays with powf. Launched by detail::forEach; the
// CUDA launchers are the specialisations declared below, defined in
// cuda/MemOpersCUDA.cu.
#ifndef __PYCA_MEM_OPERS_KERNELS_H__
#define __PYCA_MEM_OPERS_KERNELS_H__

#include <cmath>
#include <cstddef>

#include "Elementwise.h"
#include "pycaKernel.h"

namespace PyCA {
namespace kern {

/// out[i] = i (down: n - 1 - i).
struct MemLinear {
  float* out;
  size_t n;
  bool down;
  PYCA_HOSTDEVICE void operator()(size_t i) const { out[i] = down ? float(n - 1 - i) : float(i); }
};

/// Pair i of (n + 1) / 2: out[i] = in[n-1-i] and out[n-1-i] = in[i], both read
/// before either is written, so out == in reverses in place.
struct MemReverse {
  float* out;
  const float* in;
  size_t n;
  PYCA_HOSTDEVICE void operator()(size_t i) const {
    const size_t j = n - 1 - i;
    const float a = in[i], b = in[j];
    out[i] = b;
    out[j] = a;
  }
};

/// Cyclic axis permutation of an sx x sy x sz volume (see MemOpers::ShiftCoordinate).
struct MemShiftCoordinate {
  float* out;
  const float* in;
  size_t sx, sy, sz;
  bool dir;
  PYCA_HOSTDEVICE void operator()(size_t i) const {
    const size_t x = i % sx, y = (i / sx) % sy, z = i / (sx * sy);
    out[dir ? z + sz * (x + sx * y) : y + sy * (z + sz * x)] = in[i];
  }
};

/// out[i] = a[i] ^ b[i].
struct MemPow {
  float* out;
  const float* a;
  const float* b;
  PYCA_HOSTDEVICE void operator()(size_t i) const { out[i] = powf(a[i], b[i]); }
};

}  // namespace kern

namespace detail {
template <>
void gpuForEach<kern::MemLinear>(const kern::MemLinear& fn, size_t n, StreamT st);
template <>
void gpuForEach<kern::MemReverse>(const kern::MemReverse& fn, size_t n, StreamT st);
template <>
void gpuForEach<kern::MemShiftCoordinate>(const kern::MemShiftCoordinate& fn, size_t n, StreamT st);
template <>
void gpuForEach<kern::MemPow>(const kern::MemPow& fn, size_t n, StreamT st);
}  // namespace detail
}  // namespace PyCA

#endif
