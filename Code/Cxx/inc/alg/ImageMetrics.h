// ImageMetrics.h -- the library's half of the similarity metrics of
// PyCA.Apps.metrics (a PyCA extension; the legacy library had SSD only):
//
//  * BoxFilter: windowed sums over a (2r+1)^3 box by separable running sums,
//    so the cost does not grow with the radius; the local sums of LNCC.
//  * MutualInformation: Mattes-style mutual information from a joint
//    histogram with cubic B-spline Parzen windows, its value and its exact
//    gradient with respect to the moving image.
//
// Both run on MEM_HOST and MEM_DEVICE with one kernel body per voxel or line
// (src/alg/MetricKernels.h): the CPU runs it in an OpenMP loop, the GPU in a
// grid-stride kernel. The CPU histogram is deterministic: fixed chunks of
// voxels, each accumulated on its own, then summed in chunk order, so the
// result does not depend on the thread count.
#ifndef __PYCA_IMAGE_METRICS_H__
#define __PYCA_IMAGE_METRICS_H__

#include <vector>

#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {

/// a_o(x) = sum of a_i over the box x + [-r, r] (per axis, r = radius), with
/// the boundary rule bc for the voxels of the box outside the grid:
/// BC_APPROX: none (the window is truncated at the border; equivalently,
/// zero outside), BC_CLAMP: the nearest voxel of the grid, BC_WRAP:
/// periodic. a_o may be a_i. Running sums in double precision along each
/// axis (one pass per axis with r > 0). Radii must be 0..2^20.
void BoxFilter(Image3D& a_o, const Image3D& a_i, const Vec3Di& radius, BoundaryCondT bc = BC_APPROX,
               StreamT st = nullptr);
/// The same with a scratch image of the caller's (same grid and memory
/// type, not a_o or a_i) instead of one allocated per call: for loops.
void BoxFilter(Image3D& a_o, const Image3D& a_i, const Vec3Di& radius, BoundaryCondT bc, Image3D& a_tmp,
               StreamT st = nullptr);

/// Mutual information of a fixed and a moving image (natural log), from
/// the joint histogram p(a, b) = (1/N) sum_x B(a - tf(x)) B(b - tm(x)) with
/// B the cubic B-spline and t(v) = 2 + (clamp(v, lo, hi) - lo) / delta,
/// delta = (hi - lo) / (bins - 1): bins centres from lo to hi, and two more
/// bins on each side for the spline's support (the histogram is
/// (bins + 4)^2). Voxels whose mask value is <= 0.5 are left out (no mask:
/// all voxels).
class MutualInformation {
 public:
  /// bins >= 2; lo < hi (finite) for both images.
  MutualInformation(int bins, float fixedLo, float fixedHi, float movingLo, float movingHi);

  /// The joint histogram of (fixed, moving), and the mutual information.
  double compute(const Image3D& fixed, const Image3D& moving, StreamT st = nullptr);
  double compute(const Image3D& fixed, const Image3D& moving, const Image3D& mask, StreamT st = nullptr);

  /// a_o = d MI / d moving(x) for each voxel, exactly (of the histogram of
  /// the last compute(), which must be of these images): 0 where the moving
  /// value is outside [lo, hi] (clamped) or the mask is off.
  void gradient(Image3D& a_o, const Image3D& fixed, const Image3D& moving, StreamT st = nullptr) const;
  void gradient(Image3D& a_o, const Image3D& fixed, const Image3D& moving, const Image3D& mask,
                StreamT st = nullptr) const;

  /// The last joint histogram p(a, b) ((bins + 4)^2, a = the fixed image's
  /// bin, row-major), summing to 1; the value; the voxel count N.
  std::vector<double> jointHistogram() const { return mJoint; }
  double value() const { return mValue; }
  double count() const { return mCount; }
  int bins() const { return mBins; }
  float fixedLo() const { return mFLo; }
  float fixedHi() const { return mFHi; }
  float movingLo() const { return mMLo; }
  float movingHi() const { return mMHi; }

 private:
  double run(const Image3D& fixed, const Image3D& moving, const Image3D* mask, StreamT st);
  void grad(Image3D& a_o, const Image3D& fixed, const Image3D& moving, const Image3D* mask, StreamT st) const;

  int mBins;
  float mFLo, mFHi, mMLo, mMHi;
  std::vector<double> mJoint;
  std::vector<float> mLogRatio;  // log p / (pF pM) per bin pair (0 where p = 0)
  double mValue = 0.0, mCount = 0.0;
};

}  // namespace PyCA

#endif
