#include "Image3D.h"

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "VoxelIndex.h"
#include "conditionMacro.h"

namespace PyCA {

Image3D::Image3D(MemoryType memType) : mGrid(), mData(memType) {}

Image3D::Image3D(const GridInfo& grid, MemoryType memType) : mGrid(grid), mData(memType) {
  CheckGridSize(grid);
  mData = MemPool<float>(grid.nVox(), memType);
}

Image3D::Image3D(const GridInfo& grid, const MemPool<float>& data) : mGrid(grid), mData(data) {
  CheckGridSize(grid);
  PRECONDITION(grid.nVox() <= data.capacity(), "Data too large for given MemPool");
}

Image3D::Image3D(int sx, int sy, int sz, MemoryType memType)
    : Image3D(GridInfo(Vec3Di(sx, sy, sz)), memType) {}

Image3D::~Image3D() = default;

void Image3D::setGrid(const GridInfo& grid) {
  CheckGridSize(grid);
  PRECONDITION(grid.nVox() <= capacity(), "grid too large for current image");
  mGrid = grid;
}

void Image3D::setSize(const Vec3Di& size) {
  GridInfo g(size, mGrid.spacing(), mGrid.origin());
  CheckGridSize(g);
  PRECONDITION(g.nVox() <= capacity(), "size too large for current image");
  mGrid.setSize(size);
}

void Image3D::resize(const GridInfo& grid, bool preserveData, StreamT st) {
  CheckGridSize(grid);
  if (grid.nVox() != nVox() || !mData.get()) mData.resize(grid.nVox(), preserveData, st);
  mGrid = grid;
}

void Image3D::setCap(const Vec3Di& size, bool preserveData, StreamT st) {
  CheckGridSize(GridInfo(size));
  setCap(GridInfo(size).nVox(), preserveData, st);
}

void Image3D::setCap(size_t n, bool preserveData, StreamT st) {
  // Fixed: the legacy compared against the grid's nVox, not the capacity.
  if (n != capacity()) mData.resize(n, preserveData, st);
  if (nVox() > capacity()) mGrid.setSize(Vec3Di(0, 0, 0));
}

void Image3D::toType(MemoryType memType, StreamT st) { mData.toType(memType, st); }

void Image3D::clone(const Image3D& other, StreamT st) {
  if (this == &other) return;
  mData.clone(other.mData, st);
  mGrid = other.mGrid;
}

void Image3D::swap(Image3D& other) {
  PRECONDITION(memType() == other.memType(), "memory types are not compatible");
  std::swap(mGrid, other.mGrid);
  mData.swap(other.mData);
}

size_t Image3D::checkedIndex(size_t i) const {
  return detail::checkedVoxelIndex("Image3D", "grid too large for current image", mGrid, capacity(), memType(), i);
}

size_t Image3D::checkedIndex(int x, int y, int z) const {
  return detail::checkedVoxelIndex("Image3D", "grid too large for current image", mGrid, capacity(), memType(), x, y, z);
}

float Image3D::get(size_t i) const { return mData.get()[checkedIndex(i)]; }
float Image3D::get(int x, int y, int z) const { return mData.get()[checkedIndex(x, y, z)]; }
void Image3D::set(size_t i, float v) { mData.get()[checkedIndex(i)] = v; }
void Image3D::set(int x, int y, int z, float v) { mData.get()[checkedIndex(x, y, z)] = v; }

std::string Image3D::toString() const {
  std::ostringstream os;
  _print(os);
  return os.str();
}

void Image3D::_print(std::ostream& os) const {
  const Vec3Di& s = mGrid.size();
  const Vec3Df& o = mGrid.origin();
  const Vec3Df& p = mGrid.spacing();
  os << "Image3D: size (" << s.x << ", " << s.y << ", " << s.z << ") origin (" << o.x << " " << o.y
     << " " << o.z << ") spacing (" << p.x << " " << p.y << " " << p.z
     << ") MemType: " << MemTypeName(memType());
}

}  // namespace PyCA
