#include "Field3D.h"

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "Image3D.h"
#include "VoxelIndex.h"
#include "conditionMacro.h"

namespace PyCA {

Field3D::Field3D(MemoryType memType) : mGrid(), mX(memType), mY(memType), mZ(memType) {
  syncPointers();
}

Field3D::Field3D(const GridInfo& grid, MemoryType memType)
    : mGrid(grid), mX(memType), mY(memType), mZ(memType) {
  CheckGridSize(grid);
  size_t n = grid.nVox();
  mX = MemPool<float>(n, memType);
  mY = MemPool<float>(n, memType);
  mZ = MemPool<float>(n, memType);
  syncPointers();
}

Field3D::Field3D(const GridInfo& grid, const MemPool<float>& px, const MemPool<float>& py,
                 const MemPool<float>& pz)
    : mGrid(grid), mX(px), mY(py), mZ(pz) {
  CheckGridSize(grid);
  PRECONDITION(px.capacity() == py.capacity() && px.capacity() == pz.capacity(),
               "Provided mempools are different sizes");
  PRECONDITION(px.memType() == py.memType() && px.memType() == pz.memType(),
               "memory types are not compatible");
  PRECONDITION(grid.nVox() <= px.capacity(), "Data too large for given MemPool");
  syncPointers();
}

Field3D::Field3D(int sx, int sy, int sz, MemoryType memType)
    : Field3D(GridInfo(Vec3Di(sx, sy, sz)), memType) {}

Field3D::~Field3D() = default;

void Field3D::syncPointers() {
  x = mX.get();
  y = mY.get();
  z = mZ.get();
}

template <class F>
void Field3D::update(F f) {
  // All or nothing: work on copies (they share the buffers), commit only if
  // all three components succeed, so a failed allocation leaves the field as it was.
  MemPool<float> x = mX, y = mY, z = mZ;
  f(x);
  f(y);
  f(z);
  mX = x;
  mY = y;
  mZ = z;
  syncPointers();
}

void Field3D::setGrid(const GridInfo& grid) {
  // Fixed: the legacy set the grid before checking.
  CheckGridSize(grid);
  PRECONDITION(grid.nVox() <= capacity(), "Grid is larger than pre-allocated memory");
  mGrid = grid;
}

bool Field3D::isContinuous() const {
  size_t c = capacity();
  return c > 0 && mY.get() == mX.get() + c && mZ.get() == mY.get() + c;
}

void Field3D::resize(const GridInfo& grid, bool preserveData, StreamT st) {
  CheckGridSize(grid);
  if (grid.nVox() != nVox() || !mX.get()) {
    size_t n = grid.nVox();
    update([&](MemPool<float>& p) { p.resize(n, preserveData, st); });
  }
  mGrid = grid;
}

void Field3D::setCap(const Vec3Di& size, bool preserveData, StreamT st) {
  CheckGridSize(GridInfo(size));
  setCap(GridInfo(size).nVox(), preserveData, st);
}

void Field3D::setCap(size_t n, bool preserveData, StreamT st) {
  // Fixed: the legacy never updated the stored capacity.
  if (n != capacity()) update([&](MemPool<float>& p) { p.resize(n, preserveData, st); });
  if (nVox() > capacity()) mGrid.setSize(Vec3Di(0, 0, 0));
}

void Field3D::toType(MemoryType memType, StreamT st) {
  update([&](MemPool<float>& p) { p.toType(memType, st); });
}

void Field3D::clone(const Field3D& other, StreamT st) {
  if (this == &other) return;
  int d = 0;
  update([&](MemPool<float>& p) { p.clone(other.getMemPool(d++), st); });
  mGrid = other.mGrid;
}

void Field3D::swap(Field3D& other) {
  PRECONDITION(memType() == other.memType(), "memory types are not compatible");
  std::swap(mGrid, other.mGrid);
  mX.swap(other.mX);
  mY.swap(other.mY);
  mZ.swap(other.mZ);
  syncPointers();
  other.syncPointers();
}

size_t Field3D::checkedIndex(size_t i) const {
  return detail::checkedVoxelIndex("Field3D", "Grid is larger than pre-allocated memory", mGrid, capacity(), memType(), i);
}

size_t Field3D::checkedIndex(int x, int y, int z) const {
  return detail::checkedVoxelIndex("Field3D", "Grid is larger than pre-allocated memory", mGrid, capacity(), memType(), x, y, z);
}

Vec3Df Field3D::get(size_t i) const {
  i = checkedIndex(i);
  return Vec3Df(mX.get()[i], mY.get()[i], mZ.get()[i]);
}

Vec3Df Field3D::get(int xi, int yi, int zi) const { return get(checkedIndex(xi, yi, zi)); }

void Field3D::set(size_t i, const Vec3Df& v) {
  i = checkedIndex(i);
  mX.get()[i] = v.x;
  mY.get()[i] = v.y;
  mZ.get()[i] = v.z;
}

void Field3D::set(int xi, int yi, int zi, const Vec3Df& v) { set(checkedIndex(xi, yi, zi), v); }

std::string Field3D::toString() const {
  std::ostringstream os;
  _print(os);
  return os.str();
}

void Field3D::_print(std::ostream& os) const {
  const Vec3Di& s = mGrid.size();
  const Vec3Df& o = mGrid.origin();
  const Vec3Df& p = mGrid.spacing();
  os << "Field3D: size (" << s.x << ", " << s.y << ", " << s.z << ") origin (" << o.x << " " << o.y
     << " " << o.z << ") spacing (" << p.x << " " << p.y << " " << p.z
     << ") MemType: " << MemTypeName(memType());
}

}  // namespace PyCA
