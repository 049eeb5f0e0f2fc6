// FluidKernelFFTGPU.cu -- the cuFFT back end of FluidKernelFFT<EXEC_GPU>.
//
// Each instance owns its two plans (R2C, C2R; single precision, the layout of
// FluidKernelFFTKernels.h), one work area for both (allocated through
// MemAlloc, cuFFT's own allocation switched off), its spectra and its symbol
// tables in device memory. (The legacy kept the tables in one
// constant-memory symbol shared by every GPU kernel, so the last setGrid
// won.) The per-frequency step is the same body the CPU runs
// (FluidKernelFFTSpectral.cxx). Everything is queued on the caller's stream.
#include <cufft.h>
#include <cuda_runtime.h>

#include <string>

#include "FluidKernelFFTBackend.h"
#include "MemAlloc.h"
#include "MemPool.h"
#include "PyCAException.h"

namespace PyCA {
namespace detail {

namespace {

void check(cufftResult r, const char* what, const char* file, int line) {
  if (r != CUFFT_SUCCESS)
    throw PyCAException(file, line, std::string("FluidKernelFFT: cuFFT error ") + std::to_string(int(r)) +
                                        " in " + what);
}
#define PYCA_CUFFT(call) check((call), #call, __FILE__, __LINE__)

void checkCuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw PyCAException(file, line, std::string("FluidKernelFFT: ") + what + ": " + cudaGetErrorString(e));
}

/// A cuFFT plan handle, destroyed with its owner.
class CufftPlan {
 public:
  CufftPlan() = default;
  ~CufftPlan() {
    if (mValid) cufftDestroy(mHandle);
  }
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;

  /// Makes the plan without a work area; returns the work area size it needs.
  size_t make(const SpectralLayout& L, cufftType type) {
    PYCA_CUFFT(cufftCreate(&mHandle));
    mValid = true;
    PYCA_CUFFT(cufftSetAutoAllocation(mHandle, 0));
    int n[3] = {L.n[0], L.n[1], L.n[2]};
    size_t work = 0;
    PYCA_CUFFT(cufftMakePlanMany(mHandle, L.rank, n, nullptr, 1, 0, nullptr, 1, 0, type, 1, &work));
    return work;
  }
  cufftHandle get() const { return mHandle; }

 private:
  cufftHandle mHandle = 0;
  bool mValid = false;
};

class CufftBackend final : public FluidFFTBackend {
 public:
  explicit CufftBackend(const GridInfo& g) : FluidFFTBackend(g, MEM_DEVICE), mWork(MEM_DEVICE) {
    if (mLayout.rank == 0) return;
    const size_t w0 = mR2C.make(mLayout, CUFFT_R2C);
    const size_t w1 = mC2R.make(mLayout, CUFFT_C2R);
    const size_t w = w0 > w1 ? w0 : w1;
    if (w > 0) mWork = MemPool<float>((w + sizeof(float) - 1) / sizeof(float), MEM_DEVICE);
    // one work area: the two plans never run at the same time (one stream)
    PYCA_CUFFT(cufftSetWorkArea(mR2C.get(), mWork.get()));
    PYCA_CUFFT(cufftSetWorkArea(mC2R.get(), mWork.get()));
  }

  void forward(const Field3D& in, StreamT st) override {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(st);
    if (mLayout.rank == 0) {  // one voxel: the transform is the value
      for (int d = 0; d < 3; ++d) {
        checkCuda(cudaMemsetAsync(spec(d), 0, 2 * sizeof(float), s), "cudaMemsetAsync", __FILE__, __LINE__);
        checkCuda(cudaMemcpyAsync(spec(d), in.getComponent(d), sizeof(float), cudaMemcpyDeviceToDevice, s),
                  "cudaMemcpyAsync", __FILE__, __LINE__);
      }
      return;
    }
    PYCA_CUFFT(cufftSetStream(mR2C.get(), s));
    for (int d = 0; d < 3; ++d)
      PYCA_CUFFT(cufftExecR2C(mR2C.get(), const_cast<cufftReal*>(in.getComponent(d)),
                              reinterpret_cast<cufftComplex*>(spec(d))));
  }

  void backward(Field3D& out, StreamT st) override {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(st);
    if (mLayout.rank == 0) {
      for (int d = 0; d < 3; ++d)
        checkCuda(cudaMemcpyAsync(out.getComponent(d), spec(d), sizeof(float), cudaMemcpyDeviceToDevice, s),
                  "cudaMemcpyAsync", __FILE__, __LINE__);
      return;
    }
    PYCA_CUFFT(cufftSetStream(mC2R.get(), s));
    for (int d = 0; d < 3; ++d)
      PYCA_CUFFT(cufftExecC2R(mC2R.get(), reinterpret_cast<cufftComplex*>(spec(d)), out.getComponent(d)));
  }

 private:
  CufftPlan mR2C, mC2R;
  MemPool<float> mWork;
};

}  // namespace

std::unique_ptr<FluidFFTBackend> makeCufftBackend(const GridInfo& g) {
  return std::make_unique<CufftBackend>(g);
}

}  // namespace detail
}  // namespace PyCA
