// Scratch.cxx -- scratch allocation from the thread memory manager, aliasing checks.
#include "Scratch.h"

#include "FOpers.h"
#include "IOpers.h"
#include "ManagedField3D.h"
#include "ManagedImage3D.h"
#include "MemoryManager.h"

namespace PyCA {
namespace detail {

namespace {
bool managerFits(const GridInfo& g, MemoryType mt) {
  if (!ThreadMemoryManager::isInitialized()) return false;
  const MemoryManager& mm = ThreadMemoryManager::instance();
  return mm.memType() == mt && g.nVox() <= mm.grid().nVox();
}

struct Span {
  const float* p;
  size_t n;
};
bool spansOverlap(Span a, Span b) {
  if (!a.p || !b.p || a.n == 0 || b.n == 0) return false;
  return a.p < b.p + b.n && b.p < a.p + a.n;
}
}  // namespace

std::unique_ptr<Image3D> scratchImage(const GridInfo& g, MemoryType mt) {
  if (managerFits(g, mt)) return std::make_unique<ManagedImage3D>(g, mt);
  return std::make_unique<Image3D>(g, mt);
}

std::unique_ptr<Field3D> scratchField(const GridInfo& g, MemoryType mt) {
  if (managerFits(g, mt)) return std::make_unique<ManagedField3D>(g, mt);
  return std::make_unique<Field3D>(g, mt);
}

bool overlaps(const Image3D& a, const Image3D& b) {
  return spansOverlap({a.get(), a.nVox()}, {b.get(), b.nVox()});
}
bool overlaps(const Image3D& a, const Field3D& b) {
  for (int d = 0; d < 3; ++d)
    if (spansOverlap({a.get(), a.nVox()}, {b.getComponent(d), b.nVox()})) return true;
  return false;
}
bool overlaps(const Field3D& a, const Image3D& b) { return overlaps(b, a); }
bool overlaps(const Field3D& a, const Field3D& b) {
  for (int d = 0; d < 3; ++d)
    for (int e = 0; e < 3; ++e)
      if (spansOverlap({a.getComponent(d), a.nVox()}, {b.getComponent(e), b.nVox()})) return true;
  return false;
}

template <>
std::unique_ptr<Image3D> Unaliased<Image3D>::makeCopy(const Image3D& in, StreamT st) {
  auto c = scratchImage(in.grid(), in.memType());
  Opers::Copy(*c, in, st);
  return c;
}
template <>
std::unique_ptr<Field3D> Unaliased<Field3D>::makeCopy(const Field3D& in, StreamT st) {
  auto c = scratchField(in.grid(), in.memType());
  Opers::Copy(*c, in, st);
  return c;
}

}  // namespace detail
}  // namespace PyCA
