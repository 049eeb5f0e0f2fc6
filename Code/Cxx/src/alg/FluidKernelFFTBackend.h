// FluidKernelFFTBackend.h -- what FluidKernelFFT<mode> needs from an FFT back
// end: forward transforms of a field into the instance's spectra, the
// per-frequency step on them, and inverse transforms back into a field.
// FFTW (FluidKernelFFTCPU.cxx) and cuFFT (cuda/FluidKernelFFTGPU.cu).
#ifndef __PYCA_FLUID_KERNEL_FFT_BACKEND_H__
#define __PYCA_FLUID_KERNEL_FFT_BACKEND_H__

#include <memory>

#include "Field3D.h"
#include "FluidKernelFFTKernels.h"
#include "GridInfo.h"
#include "MemPool.h"
#include "estream.h"
#include "mem.h"

namespace PyCA {
namespace detail {

/// One instance's transforms, spectra and symbol tables on one grid.
/// Invariant: the spectra and tables are sized for layout().
class FluidFFTBackend {
 public:
  virtual ~FluidFFTBackend() = default;
  FluidFFTBackend(const FluidFFTBackend&) = delete;
  FluidFFTBackend& operator=(const FluidFFTBackend&) = delete;

  /// Spectra <- unnormalised real-to-complex transforms of in's components
  /// (in is not modified).
  virtual void forward(const Field3D& in, StreamT st) = 0;
  /// out <- unnormalised complex-to-real transforms of the spectra (which
  /// are overwritten).
  virtual void backward(Field3D& out, StreamT st) = 0;

  const SpectralLayout& layout() const { return mLayout; }
  /// The modes the next spectral step keeps (SpectralBand(layout().half):
  /// all). A back end may then skip the transforms of modes outside it
  /// (FFTW: pruned transforms); cuFFT transforms every mode, and the step
  /// sets the others to zero, so both compute the same.
  void setBand(const SpectralBand& b) { mBand = b; }
  const SpectralBand& band() const { return mBand; }
  /// The per-frequency step (FluidSpectralOp) on the spectra.
  void spectral(float alpha, float beta, float gamma, int lpow, bool divFree, bool inverse,
                StreamT st);

 protected:
  /// Allocates the spectra and the tables (copied to memory of type mt).
  FluidFFTBackend(const GridInfo& g, MemoryType mt);
  float* spec(int d) { return mSpec.get() + size_t(d) * mSpecStride; }

  SpectralLayout mLayout;
  SpectralBand mBand;     ///< the modes kept (default: all)
  MemoryType mMemType;
  size_t mSpecStride;     ///< floats between the components' spectra (2 nComplex, rounded up)
  MemPool<float> mSpec;   ///< three interleaved complex spectra
  SymbolTables mTables;   ///< host tables (offsets used by both back ends)
  MemPool<float> mTabMem; ///< the tables in memory of type mMemType
};

/// The CPU back end (host memory): FFTW (FluidKernelFFTCPU.cxx; plans come
/// from an in-process cache) or, in builds without FFTW, pocketfft
/// (FluidKernelFFTPocket.cxx).
std::unique_ptr<FluidFFTBackend> makeCpuFftBackend(const GridInfo& g);
/// "fftw" or "pocketfft": the CPU back end this library was built with.
const char* cpuFftBackendName();
/// The cuFFT back end (device memory); throws "Error, GPU code not compiled"
/// in CPU-only builds.
std::unique_ptr<FluidFFTBackend> makeCufftBackend(const GridInfo& g);

}  // namespace detail
}  // namespace PyCA

#endif
