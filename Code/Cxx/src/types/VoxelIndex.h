// VoxelIndex.h -- checked voxel indexing shared by Image3D and Field3D.
#ifndef __PYCA_VOXEL_INDEX_H__
#define __PYCA_VOXEL_INDEX_H__

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#include "GridInfo.h"
#include "conditionMacro.h"
#include "mem.h"

namespace PyCA {
namespace detail {

inline void checkHostAccess(const char* what, MemoryType mt) {
  PRECONDITION(mt != MEM_DEVICE, std::string("Voxel access needs host memory (") + what +
                                     " is in gpu_device_memory)");
}

/// Host-side voxel access checks: host-accessible memory, a grid that fits
/// the buffer (tooLarge is the container's legacy message), i inside the grid.
inline size_t checkedVoxelIndex(const char* what, const char* tooLarge, const GridInfo& g,
                                size_t capacity, MemoryType mt, size_t i) {
  checkHostAccess(what, mt);
  PRECONDITION(g.nVox() <= capacity, tooLarge);
  if (i >= g.nVox())
    throw std::out_of_range(std::string(what) + " index " + std::to_string(i) +
                            " out of range (nVox " + std::to_string(g.nVox()) + ")");
  return i;
}

inline size_t checkedVoxelIndex(const char* what, const char* tooLarge, const GridInfo& g,
                                size_t capacity, MemoryType mt, int x, int y, int z) {
  const Vec3Di& s = g.size();
  if (x < 0 || y < 0 || z < 0 || x >= s.x || y >= s.y || z >= s.z) {
    checkHostAccess(what, mt);
    std::ostringstream os;
    os << what << " voxel (" << x << ", " << y << ", " << z << ") out of range for size (" << s.x
       << ", " << s.y << ", " << s.z << ")";
    throw std::out_of_range(os.str());
  }
  const size_t i = size_t(x) + size_t(s.x) * (size_t(y) + size_t(s.y) * size_t(z));
  return checkedVoxelIndex(what, tooLarge, g, capacity, mt, i);
}

}  // namespace detail
}  // namespace PyCA

#endif
