// FluidKernelFFTInterface.h -- the abstract fluid kernel: the differential
// operator L = -alpha Lap - beta grad div + gamma Id (discrete symbols) and
// its inverse K = L^-1, applied to vector fields in Fourier space.
#ifndef __PYCA_FLUID_KERNEL_FFT_INTERFACE_H__
#define __PYCA_FLUID_KERNEL_FFT_INTERFACE_H__

#include "Field3D.h"
#include "GridInfo.h"
#include "estream.h"
#include "mem.h"

namespace PyCA {

/// A fluid kernel on one grid. Implemented by FluidKernelFFT<EXEC_CPU> and
/// FluidKernelFFT<EXEC_GPU> (FluidKernelFFT.h), whose header documents the
/// symbols, the errors and the threading rules.
class FluidKernelFFTInterface {
 public:
  virtual ~FluidKernelFFTInterface() = default;

  /// Weight of the Laplacian term (default 1).
  virtual void setAlpha(float alpha) = 0;
  virtual float getAlpha() const = 0;
  /// Weight of the grad-div term (default 0).
  virtual void setBeta(float beta) = 0;
  virtual float getBeta() const = 0;
  /// Weight of the identity term (default 0; then K sets the mean to 0).
  virtual void setGamma(float gamma) = 0;
  virtual float getGamma() const = 0;
  /// L is applied lpow times (default 1); throws PyCAValueException for lpow < 0.
  virtual void setLPow(int lpow) = 0;
  virtual int getLPow() const = 0;
  /// Project every result onto divergence-free fields (default false).
  virtual void setDivergenceFree(bool df) = 0;
  virtual bool getDivergenceFree() const = 0;

  /// Sizes the transforms, tables and buffers for grid (its spacing enters
  /// the symbols; its origin plays no part).
  virtual void setGrid(const GridInfo& grid) = 0;
  /// The memory type the kernel works on (MEM_HOST for the CPU kernel, which
  /// also accepts pinned host memory; MEM_DEVICE for the GPU kernel).
  virtual MemoryType memType() const = 0;

  /// f = L v.
  virtual void applyOperator(Field3D& f, const Field3D& v, StreamT st = nullptr) = 0;
  /// f = L f.
  virtual void applyOperator(Field3D& f, StreamT st = nullptr) = 0;
  /// v = K f = L^-1 f.
  virtual void applyInverseOperator(Field3D& v, const Field3D& f, StreamT st = nullptr) = 0;
  /// f = K f.
  virtual void applyInverseOperator(Field3D& f, StreamT st = nullptr) = 0;
};

}  // namespace PyCA

#endif
