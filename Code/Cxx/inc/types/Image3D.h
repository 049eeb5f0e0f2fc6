// Image3D.h -- a scalar float image on a 3-D grid, in host or device memory.
#ifndef __PYCA_IMAGE3D_H__
#define __PYCA_IMAGE3D_H__

#include <cstddef>
#include <iosfwd>
#include <string>

#include "GridInfo.h"
#include "MemPool.h"
#include "estream.h"
#include "mem.h"

namespace PyCA {

/// Float voxels stored x fastest: index = x + sx*(y + sy*z).
/// Invariant: grid().nVox() <= capacity().
class Image3D {
 public:
  /// Empty image (capacity 0) in memory memType.
  explicit Image3D(MemoryType memType = MEM_HOST);
  /// Allocates grid.nVox() voxels (contents uninitialised).
  Image3D(const GridInfo& grid, MemoryType memType = MEM_HOST);
  /// Uses the given buffer ("Data too large for given MemPool" if too small).
  Image3D(const GridInfo& grid, const MemPool<float>& data);
  Image3D(int sx, int sy, int sz, MemoryType memType = MEM_HOST);
  virtual ~Image3D();
  Image3D(const Image3D&) = delete;
  Image3D& operator=(const Image3D&) = delete;

  MemoryType memType() const { return mData.memType(); }
  bool onDev() const { return memType() == MEM_DEVICE; }
  bool onHost() const { return memType() != MEM_DEVICE; }

  /// Live references into this image's grid (no capacity checks).
  GridInfo& grid() { return mGrid; }
  const GridInfo& grid() const { return mGrid; }
  Vec3Di& size() { return mGrid.size(); }
  const Vec3Di& size() const { return mGrid.size(); }
  Vec3Df& spacing() { return mGrid.spacing(); }
  const Vec3Df& spacing() const { return mGrid.spacing(); }
  Vec3Df& origin() { return mGrid.origin(); }
  const Vec3Df& origin() const { return mGrid.origin(); }

  /// Throws "grid too large for current image" if grid.nVox() > capacity().
  void setGrid(const GridInfo& grid);
  /// Throws "size too large for current image" (and leaves the grid unchanged).
  void setSize(const Vec3Di& size);
  void setSpacing(const Vec3Df& sp) { mGrid.setSpacing(sp); }
  void setOrigin(const Vec3Df& org) { mGrid.setOrigin(org); }

  size_t nVox() const { return mGrid.nVox(); }
  float voxelVol() const { return mGrid.voxelVol(); }
  size_t capacity() const { return mData.capacity(); }

  /// Reallocates if grid.nVox() differs from nVox(), then sets the grid.
  void resize(const GridInfo& grid, bool preserveData = false, StreamT st = nullptr);
  /// Ensures a capacity of size.prod() (or nVox) voxels.
  void setCap(const Vec3Di& size, bool preserveData = false, StreamT st = nullptr);
  void setCap(size_t nVox, bool preserveData = false, StreamT st = nullptr);
  /// Moves the data to memory of type memType (no-op if the same).
  void toType(MemoryType memType, StreamT st = nullptr);
  /// Deep copy of other's grid, memory type and data.
  void clone(const Image3D& other, StreamT st = nullptr);
  /// Exchanges grid and data with other (same memory type required).
  void swap(Image3D& other);

  /// Voxel access for host-accessible memory; throws for MEM_DEVICE and
  /// std::out_of_range outside the grid.
  float get(size_t i) const;
  float get(int x, int y, int z) const;
  void set(size_t i, float v);
  void set(int x, int y, int z, float v);
  float& operator()(int x, int y, int z) { return mData.get()[index(x, y, z)]; }
  const float& operator()(int x, int y, int z) const { return mData.get()[index(x, y, z)]; }
  float& operator()(size_t i) { return mData.get()[i]; }
  const float& operator()(size_t i) const { return mData.get()[i]; }

  /// Raw data pointer.
  float* get() { return mData.get(); }
  const float* get() const { return mData.get(); }
  MemPool<float>& getMemPool() { return mData; }
  const MemPool<float>& getMemPool() const { return mData; }

  /// Legacy text: "Image3D: size (X, Y, Z) origin (...) spacing (...) MemType: MEM_HOST".
  std::string toString() const;
  void _print(std::ostream& os) const;

 protected:
  size_t index(int x, int y, int z) const {
    return size_t(x) + size_t(mGrid.size().x) * (size_t(y) + size_t(mGrid.size().y) * size_t(z));
  }
  size_t checkedIndex(size_t i) const;
  size_t checkedIndex(int x, int y, int z) const;

  GridInfo mGrid;
  MemPool<float> mData;
};

}  // namespace PyCA

#endif
