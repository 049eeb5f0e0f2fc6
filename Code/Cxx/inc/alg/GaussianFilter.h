// GaussianFilter.h -- template<int mode> class GaussianFilter: the separable
// Gaussian filter on the CPU (EXEC_CPU, Python GaussianFilterCPU) or the GPU
// (EXEC_GPU, Python GaussianFilterGPU, CUDA builds).
#ifndef __PYCA_GAUSSIAN_FILTER_H__
#define __PYCA_GAUSSIAN_FILTER_H__

#include <cstddef>
#include <vector>

#include "GaussianFilterInterface.h"
#include "MemPool.h"
#include "Vec3D.h"
#include "estream.h"
#include "mem.h"
#include "pycaConst.h"

namespace PyCA {

class Image3D;
class Field3D;

/// The Gaussian filter of GaussianFilterInterface, run by one kernel body on
/// either back end. mode is the execution mode: an EXEC_CPU filter accepts
/// host (and pinned) images ("Using EXEC_CPU object on non-host memory"
/// otherwise), an EXEC_GPU filter device (and pinned) images ("Using
/// EXEC_GPU object on host memory"); pinned memory runs on the CPU, as for
/// every operator. Copies share nothing mutable. Not thread-safe: one filter
/// per thread (filter() uploads the kernels to the device lazily).
template <int mode>
class GaussianFilter : public GaussianFilterInterface {
 public:
  static constexpr int kExecMode = mode;
  /// The multiscale resampler smooths with this filter.
  static constexpr bool kSmooths = true;

  /// A filter of size 0 (call updateParams before filtering).
  GaussianFilter();

  void updateParams(const Vec3Di& size, const Vec3Df& sigma, const Vec3Di& kernelRadius) override;
  void filter(Image3D& a_o, const Image3D& a_i, Image3D& a_tmp, StreamT st = nullptr) override;
  void filter(Field3D& a_o, const Field3D& a_i, Image3D& a_tmp, StreamT st = nullptr) override;
  void filter(float* a_o, const float* a_i, float* a_tmp, StreamT st = nullptr) override;
  void convolutionSingleAxis(float* a_o, const float* a_i, int axis, StreamT st = nullptr) override;

  Vec3Di getSize() const override { return mSize; }
  Vec3Df getSigma() const override { return mSigma; }
  Vec3Di getKernelRadius() const override { return mRadius; }
  /// How many times the kernels were built (updateParams with new values).
  [[nodiscard]] unsigned int kernelBuilds() const { return mBuilds; }

 private:
  /// The three passes (or fewer) from a_i to a_o on the back end of mt.
  void run(float* a_o, const float* a_i, float* a_tmp, MemoryType mt, StreamT st);
  /// One pass along axis d.
  void pass(int d, float* a_o, const float* a_i, MemoryType mt, StreamT st);
  /// The tables (weights, border normalisation) readable on the back end of mt.
  const float* tables(MemoryType mt);
  void checkMemType(MemoryType mt) const;

  Vec3Di mSize;
  Vec3Df mSigma;
  Vec3Di mRadius;      // clipped radius in use
  Vec3Di mReqRadius;   // radius as requested (for the "changed" test)
  // Host tables: for each axis d, 2 r_d + 1 unit-sum weights at mWOff[d]
  // (centre at mWOff[d] + r_d) and size_d factors 1 / (sum of the in-grid
  // weights) at mNOff[d].
  std::vector<float> mTables;
  size_t mWOff[3], mNOff[3];
  MemPool<float> mDevTables;  // device copy of mTables (EXEC_GPU), made lazily
  bool mDevStale;
  unsigned int mBuilds;
};

#ifndef SWIG  // Python gets these names from %template
typedef GaussianFilter<EXEC_CPU> GaussianFilterCPU;
typedef GaussianFilter<EXEC_GPU> GaussianFilterGPU;
#endif

}  // namespace PyCA

#endif
