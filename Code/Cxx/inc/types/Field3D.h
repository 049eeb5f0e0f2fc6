// Field3D.h -- a 3-vector field on a 3-D grid: three separate float buffers.
#ifndef __PYCA_FIELD3D_H__
#define __PYCA_FIELD3D_H__

#include <cstddef>
#include <iosfwd>
#include <string>

#include "GridInfo.h"
#include "MemPool.h"
#include "estream.h"
#include "mem.h"

namespace PyCA {

/// Components x, y, z each stored x fastest like an Image3D.
/// Invariants: grid().nVox() <= capacity(); the three pools share one memory
/// type and capacity; the public pointers x, y, z always equal getX/getY/getZ.
class Field3D {
 public:
  explicit Field3D(MemoryType memType = MEM_HOST);
  Field3D(const GridInfo& grid, MemoryType memType = MEM_HOST);
  /// Uses three given buffers ("Provided mempools are different sizes",
  /// "Data too large for given MemPool").
  Field3D(const GridInfo& grid, const MemPool<float>& poolX, const MemPool<float>& poolY,
          const MemPool<float>& poolZ);
  Field3D(int sx, int sy, int sz, MemoryType memType = MEM_HOST);
  virtual ~Field3D();
  Field3D(const Field3D&) = delete;
  Field3D& operator=(const Field3D&) = delete;

  MemoryType memType() const { return mX.memType(); }
  bool onDev() const { return memType() == MEM_DEVICE; }
  bool onHost() const { return memType() != MEM_DEVICE; }

  GridInfo& grid() { return mGrid; }
  const GridInfo& grid() const { return mGrid; }
  Vec3Di& size() { return mGrid.size(); }
  const Vec3Di& size() const { return mGrid.size(); }
  Vec3Df& spacing() { return mGrid.spacing(); }
  const Vec3Df& spacing() const { return mGrid.spacing(); }
  Vec3Df& origin() { return mGrid.origin(); }
  const Vec3Df& origin() const { return mGrid.origin(); }

  /// Throws "Grid is larger than pre-allocated memory" (grid left unchanged).
  void setGrid(const GridInfo& grid);

  size_t nVox() const { return mGrid.nVox(); }
  float voxelVol() const { return mGrid.voxelVol(); }
  size_t capacity() const { return mX.capacity(); }
  /// True when y follows x and z follows y in one allocation (never, here).
  bool isContinuous() const;

  void resize(const GridInfo& grid, bool preserveData = false, StreamT st = nullptr);
  void setCap(const Vec3Di& size, bool preserveData = false, StreamT st = nullptr);
  void setCap(size_t nVox, bool preserveData = false, StreamT st = nullptr);
  void toType(MemoryType memType, StreamT st = nullptr);
  void clone(const Field3D& other, StreamT st = nullptr);
  void swap(Field3D& other);

  /// Vector at a voxel (host-accessible memory only; bounds checked).
  Vec3Df get(size_t i) const;
  Vec3Df get(int x, int y, int z) const;
  void set(size_t i, const Vec3Df& v);
  void set(int x, int y, int z, const Vec3Df& v);

  float* getX() { return mX.get(); }
  float* getY() { return mY.get(); }
  float* getZ() { return mZ.get(); }
  const float* getX() const { return mX.get(); }
  const float* getY() const { return mY.get(); }
  const float* getZ() const { return mZ.get(); }
  /// Component d (0, 1, 2).
  float* getComponent(int d) { return d == 0 ? getX() : (d == 1 ? getY() : getZ()); }
  const float* getComponent(int d) const { return d == 0 ? getX() : (d == 1 ? getY() : getZ()); }
  MemPool<float>& getMemPoolX() { return mX; }
  MemPool<float>& getMemPoolY() { return mY; }
  MemPool<float>& getMemPoolZ() { return mZ; }
  const MemPool<float>& getMemPool(int d) const { return d == 0 ? mX : (d == 1 ? mY : mZ); }

  std::string toString() const;
  void _print(std::ostream& os) const;

  /// Legacy raw component pointers (kept equal to getX/getY/getZ).
  float* x;
  float* y;
  float* z;

 protected:
  void syncPointers();
  /// Applies f to copies of the three pools and commits them only if all succeed.
  template <class F>
  void update(F f);
  size_t checkedIndex(size_t i) const;
  size_t checkedIndex(int x, int y, int z) const;

  GridInfo mGrid;
  MemPool<float> mX, mY, mZ;
};

}  // namespace PyCA

#endif
