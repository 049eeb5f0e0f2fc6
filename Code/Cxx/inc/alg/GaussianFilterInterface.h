// GaussianFilterInterface.h -- the interface of the separable Gaussian filters
// GaussianFilter<EXEC_CPU> / GaussianFilter<EXEC_GPU> (Python
// GaussianFilterCPU / GaussianFilterGPU).
#ifndef __PYCA_GAUSSIAN_FILTER_INTERFACE_H__
#define __PYCA_GAUSSIAN_FILTER_INTERFACE_H__

#include "Vec3D.h"
#include "estream.h"

namespace PyCA {

class Image3D;
class Field3D;

/// Separable Gaussian smoothing in voxel units: one 1-D pass along x, then y,
/// then z. Each pass is a normalised convolution: at voxel p,
///   out(p) = sum_k w_k in(p + k) / sum_k w_k,  w_k = exp(-k^2 / (2 sigma^2)),
/// over the taps |k| <= radius that lie inside the grid, so borders are
/// renormalised over the in-grid taps (a constant image stays constant) and
/// the interior matches a unit-sum truncated Gaussian (legacy behaviour,
/// fitted to the legacy outputs).
class GaussianFilterInterface {
 public:
  virtual ~GaussianFilterInterface() = default;

  /// Sets the grid size and the kernels. The radius is clipped to
  /// size/2 - 1 per axis (and to 0 from below); an axis with sigma <= 0 or
  /// radius 0 is left unfiltered. Kernels are rebuilt only when size, sigma
  /// or radius change. Throws PyCAValueException for a negative size or a
  /// non-finite sigma.
  virtual void updateParams(const Vec3Di& size, const Vec3Df& sigma, const Vec3Di& kernelRadius) = 0;

  /// a_o = G * a_i. a_o and a_i must have the size given to updateParams
  /// ("Inputs have different Size"); a_tmp is scratch of at least that many
  /// voxels (its grid is not changed). a_o may be a_i.
  virtual void filter(Image3D& a_o, const Image3D& a_i, Image3D& a_tmp, StreamT st = nullptr) = 0;
  /// Each component of a field (an extension of the legacy interface).
  virtual void filter(Field3D& a_o, const Field3D& a_i, Image3D& a_tmp, StreamT st = nullptr) = 0;

  /// Raw arrays of the updateParams size, in the memory of the filter's
  /// execution mode (host for EXEC_CPU, device for EXEC_GPU); not checked.
  /// a_tmp may be null (private scratch is used then).
  virtual void filter(float* a_o, const float* a_i, float* a_tmp, StreamT st = nullptr) = 0;
  /// One pass along axis (0 = x, 1 = y, 2 = z) with that axis' kernel;
  /// a_o must not overlap a_i. (The legacy CPU version convolved along x
  /// whatever the axis.)
  virtual void convolutionSingleAxis(float* a_o, const float* a_i, int axis, StreamT st = nullptr) = 0;

  /// The size, sigma and (clipped) kernel radius in use.
  virtual Vec3Di getSize() const = 0;
  virtual Vec3Df getSigma() const = 0;
  virtual Vec3Di getKernelRadius() const = 0;
};

}  // namespace PyCA

#endif
