// FluidKernelFFT.cxx -- the fluid kernel classes: parameters, argument checks
// (legacy messages), and the transform / per-frequency / transform sequence
// on the back end of the mode.
#include "FluidKernelFFT.h"

#include <cmath>
#include <string>

#include "Elementwise.h"
#include "FluidKernelFFTBackend.h"
#include "MemAlloc.h"
#include "PyCAException.h"
#include "conditionMacro.h"

namespace PyCA {
namespace detail {

FluidFFTBackend::FluidFFTBackend(const GridInfo& g, MemoryType mt)
    : mLayout(g.size()), mBand(mLayout.half), mMemType(mt), mSpecStride(0), mSpec(mt), mTables(mLayout, g.spacing()),
      mTabMem(mt) {
  // components start on 128-byte boundaries (32 floats): SIMD-aligned for FFTW
  mSpecStride = (2 * mLayout.nComplex + 31) / 32 * 32;
  if (mLayout.nReal == 0) return;
  mSpec = MemPool<float>(3 * mSpecStride, mt);
  mTabMem = MemPool<float>(mTables.data.size(), mt);
  CopyMemory(mTabMem.get(), mt, mTables.data.data(), MEM_HOST, mTables.data.size() * sizeof(float));
}

void FluidFFTBackend::spectral(float alpha, float beta, float gamma, int lpow, bool divFree,
                               bool inverse, StreamT st) {
  SpectralArgs a;
  for (int d = 0; d < 3; ++d) a.spec[d] = spec(d);
  a.tables = mTabMem.get();
  a.off = &mTables.off[0][0];
  a.half = mLayout.half;
  a.alpha = alpha;
  a.beta = beta;
  a.gamma = gamma;
  a.scale = float(1.0 / double(mLayout.nReal));
  a.lpow = lpow;
  a.divFree = divFree;
  a.inverse = inverse;
  a.band = mBand;
  runSpectral(mMemType, a, st);
}

#ifndef CUDA_ENABLED
std::unique_ptr<FluidFFTBackend> makeCufftBackend(const GridInfo&) {
  throwGpuNotCompiled(__FILE__, __LINE__);
}
#endif

}  // namespace detail

template <int mode>
FluidKernelFFT<mode>::FluidKernelFFT() = default;

template <int mode>
FluidKernelFFT<mode>::~FluidKernelFFT() = default;

template <int mode>
void FluidKernelFFT<mode>::setLPow(int lpow) {
  if (lpow < 0)
    throw PyCAValueException(__FILE__, __LINE__,
                             "FluidKernelFFT: LPow must be >= 0 (got " + std::to_string(lpow) + ")");
  mLPow = lpow;
}

template <int mode>
void FluidKernelFFT<mode>::setSpectralTolerance(float eps) {
  if (!(eps >= 0.f && eps < 1.f))
    throw PyCAValueException(__FILE__, __LINE__,
                             "FluidKernelFFT: the spectral tolerance must be in [0, 1) (got " +
                                 std::to_string(eps) + ")");
  mSpectralTol = eps;
}

template <int mode>
void FluidKernelFFT<mode>::setGrid(const GridInfo& grid) {
  CheckGridSize(grid);
  // the new back end is complete before the old one goes (strong guarantee)
  std::unique_ptr<detail::FluidFFTBackend> b =
      mode == EXEC_CPU ? detail::makeCpuFftBackend(grid) : detail::makeCufftBackend(grid);
  mBackend = std::move(b);
  mGrid = grid;
  mHasGrid = true;
}

template <int mode>
void FluidKernelFFT<mode>::checkField(const Field3D& a) const {
  PRECONDITION(mHasGrid, "FluidKernelFFT: setGrid has not been called");
  if (mode == EXEC_CPU)
    PRECONDITION(a.memType() != MEM_DEVICE, "Using EXEC_CPU object on non-host memory");
  else
    PRECONDITION(a.memType() == MEM_DEVICE, "Using EXEC_GPU object on host memory");
  // the kernel's grid: same size and spacing (the origin plays no part)
  PRECONDITION(GridInfo(a.size(), a.spacing()) == GridInfo(mGrid.size(), mGrid.spacing()),
               "Input grids are not equal (field " + a.grid().toString() + ", kernel " +
                   mGrid.toString() + ")");
  PRECONDITION(a.nVox() <= a.capacity(), "Grid is larger than pre-allocated memory");
}

template <int mode>
void FluidKernelFFT<mode>::apply(Field3D& out, const Field3D& in, bool inverse, StreamT st) {
  checkField(out);
  if (&in != &out) {
    checkField(in);
    MK_CHECK2_SIZE(out, in);
  }
  if (mBackend->layout().nReal == 0) return;
  // all three forward transforms read `in` before any backward transform
  // writes `out`, so any aliasing between them is safe
  const bool banded = inverse || mBandedOperator;  // K's band (L's too with setBandedOperator)
  mBackend->setBand(banded ? detail::spectralBand(mBackend->layout(), mGrid.spacing(), mAlpha, mBeta, mGamma,
                                                  mLPow, mSpectralTol)
                           : detail::SpectralBand(mBackend->layout().half));
  mBackend->forward(in, st);
  mBackend->spectral(mAlpha, mBeta, mGamma, mLPow, mDivergenceFree, inverse, st);
  mBackend->backward(out, st);
}

template <int mode>
void FluidKernelFFT<mode>::applyOperator(Field3D& f, const Field3D& v, StreamT st) {
  apply(f, v, false, st);
}
template <int mode>
void FluidKernelFFT<mode>::applyOperator(Field3D& f, StreamT st) {
  apply(f, f, false, st);
}
template <int mode>
void FluidKernelFFT<mode>::applyInverseOperator(Field3D& v, const Field3D& f, StreamT st) {
  apply(v, f, true, st);
}
template <int mode>
void FluidKernelFFT<mode>::applyInverseOperator(Field3D& f, StreamT st) {
  apply(f, f, true, st);
}

template class FluidKernelFFT<EXEC_CPU>;
template class FluidKernelFFT<EXEC_GPU>;

const char* GetCPUFFTBackend() { return detail::cpuFftBackendName(); }

}  // namespace PyCA
