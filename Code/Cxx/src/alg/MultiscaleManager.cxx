// MultiscaleManager.cxx -- level grids of the multiscale schemes.
#include "MultiscaleManager.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>

#include "conditionMacro.h"

namespace PyCA {

GridInfo Multiscale::downScale(const GridInfo& grid, int factor) {
  PRECONDITION(factor >= 1, "Error, downsample factor must be positive");
  if (factor == 1) return grid;
  const Vec3Di& s = grid.size();
  const Vec3Df& sp = grid.spacing();
  const Vec3Di ns(std::max(s.x / factor, 1), std::max(s.y / factor, 1), std::max(s.z / factor, 1));
  const Vec3Df nsp(sp.x * float(s.x) / float(ns.x), sp.y * float(s.y) / float(ns.y),
                   sp.z * float(s.z) / float(ns.z));
  return GridInfo(ns, nsp, grid.origin());
}

MultiscaleManager::MultiscaleManager(const GridInfo& origGrid)
    : mOrigGrid(origGrid), mCurGrid(origGrid), mPreGrid(origGrid), mCurLevel(0), mVerbose(false) {}

void MultiscaleManager::addScaleLevel(int downsampleFactor) {
  PRECONDITION(downsampleFactor >= 1, "Error, downsample factor must be positive");
  const unsigned int f = (unsigned int)downsampleFactor;
  PRECONDITION(std::find(mFactors.begin(), mFactors.end(), f) == mFactors.end(),
               "Error, cannot add multiple scale levels with the same downsample factor");
  mFactors.insert(std::upper_bound(mFactors.begin(), mFactors.end(), f, std::greater<unsigned int>()), f);
  updateGrids();
  if (mVerbose) {
    std::cout << "Scale levels (downsample factors):";
    for (unsigned int v : mFactors) std::cout << ' ' << v;
    std::cout << std::endl;
  }
}

void MultiscaleManager::start() {
  if (mFactors.empty()) addScaleLevel(1);
  set(0);
}

void MultiscaleManager::next() { set(int(mCurLevel) + 1); }

void MultiscaleManager::set(int level) {
  PRECONDITION(!mFactors.empty(), "Error, no scale levels (call addScaleLevel or start first)");
  const int last = int(mFactors.size()) - 1;
  mCurLevel = (unsigned int)std::min(std::max(level, 0), last);
  updateGrids();
  if (mVerbose) std::cout << "level is " << mCurLevel << std::endl;
}

unsigned int MultiscaleManager::getScaleFactor() const {
  return mFactors.empty() ? 1u : mFactors[mCurLevel];
}

unsigned int MultiscaleManager::getScaleFactor(unsigned int level) const {
  if (level >= mFactors.size())
    throw std::out_of_range("MultiscaleManager.getScaleFactor: level " + std::to_string(level) +
                            " out of range (" + std::to_string(mFactors.size()) + " levels)");
  return mFactors[level];
}

Vec3Df MultiscaleManager::getCurFactor() const {
  const Vec3Di &p = mPreGrid.size(), &c = mCurGrid.size();
  return Vec3Df(float(p.x) / float(c.x), float(p.y) / float(c.y), float(p.z) / float(c.z));
}

void MultiscaleManager::updateGrids() {
  if (mFactors.empty()) {
    mCurLevel = 0;
    mCurGrid = mPreGrid = mOrigGrid;
    return;
  }
  if (mCurLevel >= mFactors.size()) mCurLevel = (unsigned int)mFactors.size() - 1;
  mCurGrid = Multiscale::downScale(mOrigGrid, int(mFactors[mCurLevel]));
  mPreGrid = mCurLevel == 0 ? mOrigGrid : Multiscale::downScale(mOrigGrid, int(mFactors[mCurLevel - 1]));
}

}  // namespace PyCA
