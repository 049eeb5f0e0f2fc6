#include "GridInfo.h"

#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "PyCAException.h"
#include "pycaConst.h"

namespace PyCA {

const float MIN_VAL = std::numeric_limits<float>::min();
const float MAX_VAL = std::numeric_limits<float>::max();

GridInfo::GridInfo() : mSize(0, 0, 0), mSpacing(1.f, 1.f, 1.f), mOrigin(0.f, 0.f, 0.f) {}

GridInfo::GridInfo(const Vec3Di& size, const Vec3Df& sp, const Vec3Df& org)
    : mSize(size), mSpacing(sp), mOrigin(org) {}

void GridInfo::set(const Vec3Di& size, const Vec3Df& sp, const Vec3Df& org) {
  mSize = size;
  mSpacing = sp;
  mOrigin = org;
}

size_t GridInfo::nVox() const {
  if (mSize.x <= 0 || mSize.y <= 0 || mSize.z <= 0) return 0;
  // Saturate instead of wrapping: an absurd grid must fail to allocate, not
  // silently allocate a wrapped-around small buffer.
  unsigned __int128 n = (unsigned __int128)mSize.x * (unsigned)mSize.y * (unsigned)mSize.z;
  const size_t maxN = std::numeric_limits<size_t>::max();
  return n > maxN ? maxN : static_cast<size_t>(n);
}

bool GridInfo::operator==(const GridInfo& o) const {
  return mSize == o.mSize && (mSpacing - o.mSpacing).length() < GRIDINFO_EPS &&
         (mOrigin - o.mOrigin).length() < GRIDINFO_EPS;
}

std::string GridInfo::toString() const {
  std::ostringstream os;
  _print(os);
  return os.str();
}

void GridInfo::_print(std::ostream& os) const {
  os << "Grid: size (" << mSize.x << ", " << mSize.y << ", " << mSize.z << ") origin ("
     << mOrigin.x << " " << mOrigin.y << " " << mOrigin.z << ") spacing (" << mSpacing.x << " "
     << mSpacing.y << " " << mSpacing.z << ")";
}

void GridInfo::read(std::istream& is) {
  is >> mSize.x >> mSize.y >> mSize.z >> mOrigin.x >> mOrigin.y >> mOrigin.z >> mSpacing.x >>
      mSpacing.y >> mSpacing.z;
}

void CheckGridSize(const GridInfo& grid) {
  const Vec3Di& s = grid.size();
  if (s.x < 0 || s.y < 0 || s.z < 0) {
    std::ostringstream os;
    os << "Grid size must not be negative, got (" << s.x << ", " << s.y << ", " << s.z << ")";
    throw PyCAValueException(__FILE__, __LINE__, os.str());
  }
}

std::ostream& operator<<(std::ostream& os, const GridInfo& g) {
  g._print(os);
  return os;
}

std::istream& operator>>(std::istream& is, GridInfo& g) {
  g.read(is);
  return is;
}

}  // namespace PyCA
