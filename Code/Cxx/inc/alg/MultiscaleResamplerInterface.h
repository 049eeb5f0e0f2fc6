// MultiscaleResamplerInterface.h -- the interface of the multiscale
// resamplers MultiscaleResampler<Filter> (Python MultiscaleResamplerCPU/GPU,
// MultiscaleResamplerGaussCPU/GPU).
#ifndef __PYCA_MULTISCALE_RESAMPLER_INTERFACE_H__
#define __PYCA_MULTISCALE_RESAMPLER_INTERFACE_H__

#include "MultiscaleManager.h"
#include "estream.h"

namespace PyCA {

class Image3D;
class Field3D;

/// Carries images and deformations between the levels of a MultiscaleManager.
/// Every output is set to the current level's grid (reallocated when its
/// capacity is too small). Temporaries come from the thread memory manager
/// when it is initialised with the same memory type and large enough pools
/// (they are back in the pool when the call returns), else they are private.
class MultiscaleResamplerInterface {
 public:
  virtual ~MultiscaleResamplerInterface() = default;

  /// The manager state given to the last setScaleLevel (a copy).
  virtual const MultiscaleManager& getScaleManager() const = 0;
  /// Takes the manager's current level (and, for the Gaussian resampler,
  /// sets the smoothing for it). The manager's original grid must equal the
  /// resampler's ("Input grids are not equal").
  virtual void setScaleLevel(const MultiscaleManager& scaleManager, StreamT st = nullptr) = 0;

  /// sI = orgI (on the original grid) smoothed (Gaussian resampler) and
  /// resampled to the current grid (trilinear, CLAMP, centred); a copy at the
  /// identity level.
  virtual void downsampleImage(Image3D& sI, const Image3D& orgI, StreamT st = nullptr) = 0;
  /// The same for a field, resampled with rescaleVector (the components are
  /// divided by the size ratio original / current: a displacement in voxel
  /// units, legacy).
  virtual void downsampleField(Field3D& sF, const Field3D& orgF, StreamT st = nullptr) = 0;
  /// sI (on its own grid, normally the previous level's) resampled in place to
  /// the current grid (trilinear, CLAMP, centred); zero at the first level.
  virtual void upsampleImage(Image3D& sI, StreamT st = nullptr) = 0;
  /// C++ only: downsamples orgI into *scratchI, then swaps the two pointers,
  /// so sI points to the current level's image and scratchI to the buffer it
  /// held before (double buffering without a copy).
  virtual void updateImage(Image3D*& sI, const Image3D& orgI, Image3D*& scratchI, StreamT st = nullptr) = 0;
  /// The H-field h (voxel coordinates of its own grid, normally the previous
  /// level's) carried to the current grid: its displacement h - x is
  /// resampled (trilinear, CLAMP, centred), divided by the size ratio
  /// (voxels of the new grid) and x added back. The identity at the first
  /// level.
  virtual void updateHField(Field3D& h, StreamT st = nullptr) = 0;
  /// The V-field v (physical units) resampled to the current grid (trilinear,
  /// CLAMP, centred, values unchanged); zero at the first level.
  virtual void updateVField(Field3D& v, StreamT st = nullptr) = 0;
};

}  // namespace PyCA

#endif
