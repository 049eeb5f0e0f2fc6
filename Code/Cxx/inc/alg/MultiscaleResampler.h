// MultiscaleResampler.h -- template<class SmoothFilter> class
// MultiscaleResampler: multiscale resampling without smoothing
// (IdentityFilter<mode>) or with Gaussian pre-smoothing (GaussianFilter<mode>).
#ifndef __PYCA_MULTISCALE_RESAMPLER_H__
#define __PYCA_MULTISCALE_RESAMPLER_H__

#include "GaussianFilter.h"
#include "GridInfo.h"
#include "IdentityFilter.h"
#include "MultiscaleManager.h"
#include "MultiscaleResamplerInterface.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {

/// SmoothFilter is IdentityFilter<mode> or GaussianFilter<mode>; mode is the
/// execution mode (arguments in the wrong memory raise "Using EXEC_CPU object
/// on non-host memory" / "Using EXEC_GPU object on host memory").
///
/// Gaussian pre-smoothing at a level with factor > 1: the original image is
/// smoothed with sigma_d = sqrt(r_d / 2), r_d = original size / current size
/// along axis d, kernel radius 2 ceil(sigma_d) (clipped by the filter), then
/// resampled. (The legacy took r from the previous -> current level ratio,
/// which under-smooths every level after the first; see
/// Documentation/LegacyDifferences.md.)
template <class SmoothFilter>
class MultiscaleResampler : public MultiscaleResamplerInterface {
 public:
  typedef SmoothFilter SmoothFilterType;
  static constexpr int kExecMode = SmoothFilter::kExecMode;

  explicit MultiscaleResampler(const GridInfo& origGrid);

  const MultiscaleManager& getScaleManager() const override { return mManager; }
  void setScaleLevel(const MultiscaleManager& scaleManager, StreamT st = nullptr) override;
  void downsampleImage(Image3D& sI, const Image3D& orgI, StreamT st = nullptr) override;
  void downsampleField(Field3D& sF, const Field3D& orgF, StreamT st = nullptr) override;
  void upsampleImage(Image3D& sI, StreamT st = nullptr) override;
  void updateImage(Image3D*& sI, const Image3D& orgI, Image3D*& scratchI, StreamT st = nullptr) override;
  void updateHField(Field3D& h, StreamT st = nullptr) override;
  void updateVField(Field3D& v, StreamT st = nullptr) override;

  /// The smoothing sigma and kernel radius of the current level (0 when the
  /// level is not smoothed).
  Vec3Df getSigma() const { return mSigma; }
  Vec3Di getKernelRadius() const { return mRadius; }

 private:
  void requireLevel() const;

  GridInfo mOrigGrid;
  MultiscaleManager mManager;
  bool mLevelSet;
  Vec3Df mSigma;
  Vec3Di mRadius;
  SmoothFilter mFilter;
};

#ifndef SWIG  // Python gets these names from %template
typedef MultiscaleResampler<IdentityFilter<EXEC_CPU>> MultiscaleResamplerCPU;
typedef MultiscaleResampler<IdentityFilter<EXEC_GPU>> MultiscaleResamplerGPU;
typedef MultiscaleResampler<GaussianFilter<EXEC_CPU>> MultiscaleResamplerGaussCPU;
typedef MultiscaleResampler<GaussianFilter<EXEC_GPU>> MultiscaleResamplerGaussGPU;
#endif

}  // namespace PyCA

#endif
