// ManagedField3D.h -- a Field3D whose three buffers are borrowed from a MemoryManager.
#ifndef __PYCA_MANAGED_FIELD3D_H__
#define __PYCA_MANAGED_FIELD3D_H__

#include "Field3D.h"
#include "MemoryManager.h"

namespace PyCA {

/// Borrows three pools (x, y, z); see ManagedImage3D for the rules.
class ManagedField3D : public Field3D {
 public:
  ManagedField3D(const GridInfo& grid, MemoryType memType);
  /// Explicit manager; throws "MemoryManager memType does not match".
  ManagedField3D(const GridInfo& grid, MemoryType memType, MemoryManager& mm);

 private:
  ManagedField3D(const GridInfo& grid, MemoryType memType, MemoryManager* mm);
};

}  // namespace PyCA

#endif
