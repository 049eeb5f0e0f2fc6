// ManagedImage3D.h -- an Image3D whose buffer is borrowed from a MemoryManager.
#ifndef __PYCA_MANAGED_IMAGE3D_H__
#define __PYCA_MANAGED_IMAGE3D_H__

#include "Image3D.h"
#include "MemoryManager.h"

namespace PyCA {

/// Borrows one pool. With the thread manager: used if initialised with the same
/// memory type, else the image silently gets a private buffer (legacy). The
/// pool goes back when the buffer is released (destruction, resize, toType,
/// or the last numpy view of it dying), wherever swap() has moved it.
class ManagedImage3D : public Image3D {
 public:
  ManagedImage3D(const GridInfo& grid, MemoryType memType);
  /// Explicit manager; throws "MemoryManager memType does not match".
  ManagedImage3D(const GridInfo& grid, MemoryType memType, MemoryManager& mm);
};


}  // namespace PyCA

// Legacy code found ManagedField3D next to ManagedImage3D.
#include "ManagedField3D.h"

#endif
