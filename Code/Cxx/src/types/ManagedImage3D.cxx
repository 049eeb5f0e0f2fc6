#include "ManagedImage3D.h"

#include "conditionMacro.h"

namespace PyCA {

namespace {
// A pool from mm if it serves this memory type, else a private buffer.
MemPool<float> borrow(MemoryManager* mm, const GridInfo& grid, MemoryType memType) {
  CheckGridSize(grid);
  if (mm && mm->memType() == memType)
    return MemPool<float>(mm->getPool(grid), grid.nVox(), memType);
  return MemPool<float>(grid.nVox(), memType);
}

MemoryManager& checked(MemoryManager& mm, MemoryType memType) {
  PRECONDITION(mm.memType() == memType, "MemoryManager memType does not match");
  return mm;
}
}  // namespace

ManagedImage3D::ManagedImage3D(const GridInfo& grid, MemoryType memType)
    : Image3D(grid, borrow(ThreadMemoryManager::instancePtr().get(), grid, memType)) {}

ManagedImage3D::ManagedImage3D(const GridInfo& grid, MemoryType memType, MemoryManager& mm)
    : Image3D(grid, borrow(&checked(mm, memType), grid, memType)) {}

ManagedField3D::ManagedField3D(const GridInfo& grid, MemoryType memType)
    : ManagedField3D(grid, memType, ThreadMemoryManager::instancePtr().get()) {}

ManagedField3D::ManagedField3D(const GridInfo& grid, MemoryType memType, MemoryManager& mm)
    : ManagedField3D(grid, memType, &checked(mm, memType)) {}

ManagedField3D::ManagedField3D(const GridInfo& grid, MemoryType memType, MemoryManager* mm)
    : Field3D(grid, borrow(mm, grid, memType), borrow(mm, grid, memType),
              borrow(mm, grid, memType)) {}

}  // namespace PyCA
