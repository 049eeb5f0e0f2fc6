// FluidKernelFFTPocket.cxx -- the pocketfft back end of FluidKernelFFT<EXEC_CPU>,
// built when CMake finds no FFTW (or PYCA_FFT=pocketfft). pocketfft is the
// header-only C++ FFT that NumPy and SciPy ship (BSD licence; vendored in
// Code/Cxx/thirdparty/pocketfft). Same unnormalised real-to-complex /
// complex-to-real transforms and the same half-spectrum layout as the FFTW
// back end (FluidKernelFFTCPU.cxx), so results agree to float rounding.
// Not available here: FFTW's measured plans and wisdom (PYCA_FFTW_PLANNER and
// PYCA_FFTW_WISDOM are ignored), the pruned transforms of a spectral
// tolerance (every mode is transformed; the spectral step zeroes the others,
// as with cuFFT), and the adaptive team (pocketfft's own threads, as many as
// GetCPUThreads()). K at 128^3 takes about 1.4x FFTW's time (./run bench).
#include "pocketfft_hdronly.h"

#include <complex>
#include <cstddef>

#include "CPUThreads.h"
#include "FluidKernelFFTBackend.h"

namespace PyCA {
namespace detail {

namespace {

class PocketfftBackend final : public FluidFFTBackend {
 public:
  explicit PocketfftBackend(const GridInfo& g) : FluidFFTBackend(g, MEM_HOST) {
    for (int i = 0; i < mLayout.rank; ++i) {
      mShape.push_back(size_t(mLayout.n[i]));
      mAxes.push_back(size_t(i));
    }
    // C order (the last axis fastest), strides in bytes
    mRealStride.assign(mShape.size(), 0);
    mCplxStride.assign(mShape.size(), 0);
    ptrdiff_t r = sizeof(float), c = sizeof(std::complex<float>);
    for (int i = int(mShape.size()) - 1; i >= 0; --i) {
      mRealStride[i] = r;
      mCplxStride[i] = c;
      r *= ptrdiff_t(mShape[i]);
      c *= ptrdiff_t(i == int(mShape.size()) - 1 ? mShape[i] / 2 + 1 : mShape[i]);
    }
  }

  void forward(const Field3D& in, StreamT) override {
    for (int d = 0; d < 3; ++d) {
      if (mLayout.rank == 0) {  // one voxel (or none): the transform is the value
        if (mLayout.nReal) {
          spec(d)[0] = in.getComponent(d)[0];
          spec(d)[1] = 0.f;
        }
        continue;
      }
      pocketfft::r2c<float>(mShape, mRealStride, mCplxStride, mAxes, pocketfft::FORWARD,
                            in.getComponent(d), reinterpret_cast<std::complex<float>*>(spec(d)), 1.f,
                            threads());
    }
  }

  void backward(Field3D& out, StreamT) override {
    for (int d = 0; d < 3; ++d) {
      if (mLayout.rank == 0) {
        if (mLayout.nReal) out.getComponent(d)[0] = spec(d)[0];
        continue;
      }
      pocketfft::c2r<float>(mShape, mCplxStride, mRealStride, mAxes, pocketfft::BACKWARD,
                            reinterpret_cast<const std::complex<float>*>(spec(d)), out.getComponent(d), 1.f,
                            threads());
    }
  }

 private:
  size_t threads() const {
    if (mLayout.nReal < (size_t(1) << 15)) return 1;
    const int t = GetCPUThreads();
    return t > 1 ? size_t(t) : 1;
  }

  pocketfft::shape_t mShape, mAxes;
  pocketfft::stride_t mRealStride, mCplxStride;
};

}  // namespace

std::unique_ptr<FluidFFTBackend> makeCpuFftBackend(const GridInfo& g) {
  return std::make_unique<PocketfftBackend>(g);
}

const char* cpuFftBackendName() { return "pocketfft"; }

}  // namespace detail
}  // namespace PyCA
