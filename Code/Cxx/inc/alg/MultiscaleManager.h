// MultiscaleManager.h -- Multiscale (the downsampled grid of a level) and
// MultiscaleManager (the list of levels of a coarse-to-fine scheme and the
// current one).
#ifndef __PYCA_MULTISCALE_MANAGER_H__
#define __PYCA_MULTISCALE_MANAGER_H__

#include <cstddef>
#include <vector>

#include "GridInfo.h"
#include "Vec3D.h"

namespace PyCA {

class Multiscale {
 public:
  /// The grid downsampled by factor: size max(size / factor, 1) per axis
  /// (integer division), spacing * size / new size (the same physical
  /// extent), origin kept. factor 1 returns grid. Throws "Error, downsample
  /// factor must be positive" for factor < 1.
  static GridInfo downScale(const GridInfo& grid, int factor);
};

/// Levels are downsample factors, kept sorted from the coarsest (largest
/// factor) to the finest; level 0 is the coarsest. The current level starts
/// at 0; with no levels the current and previous grids are the original
/// grid. Prints nothing unless setVerbose(true) (the legacy printed the
/// factor list on addScaleLevel and "level is N" on every level change to
/// stdout; verbose mode prints the same lines).
class MultiscaleManager {
 public:
  explicit MultiscaleManager(const GridInfo& origGrid);

  /// Adds a level. Throws "Error, cannot add multiple scale levels with the
  /// same downsample factor" for a factor already present, "Error,
  /// downsample factor must be positive" for factor < 1. The current level
  /// number is kept (its grids are recomputed).
  void addScaleLevel(int downsampleFactor);
  /// Adds the factor 1 if there are no levels, then goes to level 0.
  void start();
  /// Goes to the next (finer) level; stays on the last one.
  void next();
  /// Goes to level (clamped to [0, nScale() - 1]). Throws "Error, no scale
  /// levels (call addScaleLevel or start first)" without levels.
  void set(int level);

  unsigned int getCurLevel() const { return mCurLevel; }
  unsigned int nScale() const { return (unsigned int)mFactors.size(); }
  /// The current level's factor (1 without levels).
  unsigned int getScaleFactor() const;
  /// Level `level`'s factor (std::out_of_range, Python IndexError, outside [0, nScale())).
  unsigned int getScaleFactor(unsigned int level) const;
  bool isFirstScale() const { return mCurLevel == 0; }
  bool isLastScale() const { return mFactors.empty() || mCurLevel + 1 == mFactors.size(); }
  /// The current grid is the original one (factor 1).
  bool isIdentityScale() const { return getScaleFactor() == 1; }
  /// Previous-level size / current-level size per axis (level 0: original /
  /// current).
  Vec3Df getCurFactor() const;

  const GridInfo& getOrgGrid() const { return mOrigGrid; }
  const GridInfo& getCurGrid() const { return mCurGrid; }
  /// The previous level's grid (level 0: the original grid).
  const GridInfo& getPreGrid() const { return mPreGrid; }
  const Vec3Di& getOrgSize() const { return mOrigGrid.size(); }
  const Vec3Di& getCurSize() const { return mCurGrid.size(); }
  const Vec3Df& getOrgSpace() const { return mOrigGrid.spacing(); }
  const Vec3Df& getCurSpace() const { return mCurGrid.spacing(); }
  size_t origNVox() const { return mOrigGrid.nVox(); }
  size_t curNVox() const { return mCurGrid.nVox(); }
  float origVoxelVol() const { return mOrigGrid.voxelVol(); }
  float curVoxelVol() const { return mCurGrid.voxelVol(); }

  /// Print the legacy messages to stdout (default false).
  void setVerbose(bool verbose) { mVerbose = verbose; }
  bool getVerbose() const { return mVerbose; }

 private:
  void updateGrids();

  GridInfo mOrigGrid, mCurGrid, mPreGrid;
  std::vector<unsigned int> mFactors;  // strictly decreasing
  unsigned int mCurLevel;              // < nScale() when there are levels, else 0
  bool mVerbose;
};

}  // namespace PyCA

#endif
