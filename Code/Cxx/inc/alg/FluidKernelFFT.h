// FluidKernelFFT.h -- FluidKernelFFT<EXEC_CPU> (FFTW) and FluidKernelFFT<EXEC_GPU>
// (cuFFT): the fluid operator L and its inverse K applied in Fourier space.
//
// With N_d the grid size and h_d the spacing along axis d, and k_d the
// frequency index (0 <= k_d < N_d), the legacy's finite-difference symbols are
//   W_d(k) = (2 cos(2 pi k_d / N_d) - 2) / h_d^2     second difference
//   S_d(k) = sin(2 pi k_d / N_d) / h_d               central first difference
// and L is, per frequency, the real symmetric 3x3 matrix
//   L_dd = gamma - alpha (W_x + W_y + W_z) - beta W_d
//   L_de = beta S_d S_e                              (d != e)
// i.e. the Fourier symbol of -alpha Lap - beta grad div + gamma Id with the
// 3-point Laplacian on the diagonal of grad div and central differences off
// it. applyOperator multiplies by L lpow times; applyInverseOperator solves
// with L (an LDL^T factorisation per frequency) lpow times. With gamma == 0 the
// zero frequency of K f (the mean) is set to 0. With divergence-free on, the
// result is then projected per frequency onto the complement of S:
//   u <- u - S (S . u) / |S|^2   (frequencies with S = 0 are left as they are),
// which makes the central-difference divergence of the result zero.
//
// Errors (PyCAException, Python RuntimeError): "Using EXEC_CPU object on
// non-host memory", "Using EXEC_GPU object on host memory", "Input grids are
// not equal" (f and v, or a field and the kernel's grid: size and spacing),
// "FluidKernelFFT: setGrid has not been called". Any grid size works (the
// legacy limit of 512 per axis is gone). In CPU-only builds the
// FluidKernelFFT<EXEC_GPU> methods that need the GPU throw "Error, GPU code not compiled".
//
// Each instance owns its spectra, symbol tables and (GPU) cuFFT plans, so
// kernels on different grids coexist; CPU plans are shared between instances
// through an in-process cache. One instance must not be used by two threads
// (or on two unordered streams) at once; different instances may.
#ifndef __PYCA_FLUID_KERNEL_FFT_H__
#define __PYCA_FLUID_KERNEL_FFT_H__

#include <memory>

#include "Field3D.h"
#include "FluidKernelFFTInterface.h"
#include "GridInfo.h"
#include "Vec3D.h"
#include "estream.h"
#include "mem.h"
#include "pycaConst.h"

namespace PyCA {

namespace detail {
class FluidFFTBackend;
}

/// mode is EXEC_CPU (host or pinned memory, FFTW with the OpenMP thread
/// count) or EXEC_GPU (device memory, cuFFT).
template <int mode>
class FluidKernelFFT : public FluidKernelFFTInterface {
  static_assert(mode == EXEC_CPU || mode == EXEC_GPU, "mode must be EXEC_CPU or EXEC_GPU");

 public:
  FluidKernelFFT();
  ~FluidKernelFFT() override;
  FluidKernelFFT(const FluidKernelFFT&) = delete;
  FluidKernelFFT& operator=(const FluidKernelFFT&) = delete;

  void setAlpha(float alpha) override { mAlpha = alpha; }
  float getAlpha() const override { return mAlpha; }
  void setBeta(float beta) override { mBeta = beta; }
  float getBeta() const override { return mBeta; }
  void setGamma(float gamma) override { mGamma = gamma; }
  float getGamma() const override { return mGamma; }
  void setLPow(int lpow) override;
  int getLPow() const override { return mLPow; }
  void setDivergenceFree(bool df) override { mDivergenceFree = df; }
  bool getDivergenceFree() const override { return mDivergenceFree; }
  /// PyCA extension: applyInverseOperator drops the frequencies where K's
  /// multiplier is at most eps times its largest (gamma^-lpow), so that
  /// ||K - K_eps|| <= eps ||K|| (operator norm), and the CPU back end skips
  /// their transforms (pruned FFTW transforms along y and z). It takes
  /// effect on 3-D grids with alpha > 0, beta >= 0, gamma > 0 and lpow >= 1;
  /// for L^-2 with alpha = 200 mm^2, gamma = 1 on a 2 mm grid, eps = 1e-4
  /// keeps half the frequencies of each axis. 0 (the default) keeps every
  /// frequency: the legacy operator. applyOperator (L) is truncated only with
  /// setBandedOperator(true).
  /// Throws PyCAValueException (Python ValueError) unless 0 <= eps < 1.
  void setSpectralTolerance(float eps);
  float getSpectralTolerance() const { return mSpectralTol; }
  /// PyCA extension: with true, applyOperator keeps the same band as
  /// applyInverseOperator (L restricted to K's band at the spectral
  /// tolerance and lpow: the modes outside it are set to zero, and the CPU
  /// back end skips their transforms). For descents whose directions live in
  /// K's band. false (the default): the full L, the legacy operator.
  void setBandedOperator(bool banded) { mBandedOperator = banded; }
  bool getBandedOperator() const { return mBandedOperator; }

  /// Plans the transforms (in well under 0.1 s for 128^3 on the CPU) and
  /// builds the tables. A grid with a zero extent is accepted; applying the
  /// kernel to it is a no-op.
  void setGrid(const GridInfo& grid) override;
  /// MEM_HOST (EXEC_CPU) or MEM_DEVICE (EXEC_GPU).
  MemoryType memType() const override { return mode == EXEC_CPU ? MEM_HOST : MEM_DEVICE; }

  void applyOperator(Field3D& f, const Field3D& v, StreamT st = nullptr) override;
  void applyOperator(Field3D& f, StreamT st = nullptr) override;
  void applyInverseOperator(Field3D& v, const Field3D& f, StreamT st = nullptr) override;
  void applyInverseOperator(Field3D& f, StreamT st = nullptr) override;

 private:
  void apply(Field3D& out, const Field3D& in, bool inverse, StreamT st);
  void checkField(const Field3D& a) const;

  float mAlpha = 1.f;
  float mBeta = 0.f;
  float mGamma = 0.f;
  int mLPow = 1;
  bool mDivergenceFree = false;
  float mSpectralTol = 0.f;
  bool mBandedOperator = false;
  bool mHasGrid = false;
  GridInfo mGrid;
  std::unique_ptr<detail::FluidFFTBackend> mBackend;
};

/// The FFT library of FluidKernelFFT<EXEC_CPU> in this build: "fftw" (FFTW 3,
/// preferred) or "pocketfft" (the fallback where CMake found no FFTW, or
/// PYCA_FFT=pocketfft).
const char* GetCPUFFTBackend();

extern template class FluidKernelFFT<EXEC_CPU>;
extern template class FluidKernelFFT<EXEC_GPU>;

#ifndef SWIG
/// The Python names of the two instantiations, for C++ too.
typedef FluidKernelFFT<EXEC_CPU> FluidKernelFFTCPU;
typedef FluidKernelFFT<EXEC_GPU> FluidKernelFFTGPU;
#endif

}  // namespace PyCA

#endif
