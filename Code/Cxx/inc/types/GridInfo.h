// GridInfo.h -- size, spacing and origin of a regular 3-D grid.
#ifndef __PYCA_GRID_INFO_H__
#define __PYCA_GRID_INFO_H__

#include <cstddef>
#include <iosfwd>
#include <string>

#include "Vec3D.h"

namespace PyCA {

/// A regular grid: size in voxels, spacing and origin in world units.
/// Invariant: none enforced (a default grid has size 0); negative sizes are
/// rejected by the containers that allocate for a grid.
class GridInfo {
 public:
  /// Size (0,0,0), spacing (1,1,1), origin (0,0,0).
  GridInfo();
  GridInfo(const Vec3Di& size, const Vec3Df& sp = Vec3Df(1.f, 1.f, 1.f),
           const Vec3Df& org = Vec3Df(0.f, 0.f, 0.f));

  void set(const Vec3Di& size, const Vec3Df& sp = Vec3Df(1.f, 1.f, 1.f),
           const Vec3Df& org = Vec3Df(0.f, 0.f, 0.f));

  /// Live references: writing through them changes this grid.
  Vec3Di& size() { return mSize; }
  Vec3Df& spacing() { return mSpacing; }
  Vec3Df& origin() { return mOrigin; }
  const Vec3Di& size() const { return mSize; }
  const Vec3Df& spacing() const { return mSpacing; }
  const Vec3Df& origin() const { return mOrigin; }

  void setSize(const Vec3Di& s) { mSize = s; }
  void setSpacing(const Vec3Df& s) { mSpacing = s; }
  void setOrigin(const Vec3Df& o) { mOrigin = o; }

  /// Number of voxels (product of the size; 0 if any extent is <= 0).
  size_t nVox() const;
  /// Volume of one voxel (product of the spacing).
  float voxelVol() const { return mSpacing.x * mSpacing.y * mSpacing.z; }

  /// Equal sizes, and spacing and origin within GRIDINFO_EPS (Euclidean).
  bool operator==(const GridInfo& o) const;
  bool operator!=(const GridInfo& o) const { return !(*this == o); }

  /// Legacy text: "Grid: size (X, Y, Z) origin (a b c) spacing (a b c)".
  std::string toString() const;
  void _print(std::ostream& os) const;
  void read(std::istream& is);

 private:
  Vec3Di mSize;
  Vec3Df mSpacing;
  Vec3Df mOrigin;
};

/// Throws PyCAValueException if any extent of grid is negative.
void CheckGridSize(const GridInfo& grid);

std::ostream& operator<<(std::ostream& os, const GridInfo& g);
std::istream& operator>>(std::istream& is, GridInfo& g);

}  // namespace PyCA

#endif
