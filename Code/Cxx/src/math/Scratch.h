// Scratch.h -- temporary images and fields for the operators that need them,
// and protection against outputs that alias inputs read at other voxels.
//
// Scratch comes from the thread memory manager when it is initialised with
// the same memory type and its pools are large enough (a ManagedImage3D /
// ManagedField3D, returned to the pool when the operator returns); otherwise
// it is a private allocation freed before the operator returns.
#ifndef __PYCA_SCRATCH_H__
#define __PYCA_SCRATCH_H__

#include <cstddef>
#include <memory>

#include "Field3D.h"
#include "GridInfo.h"
#include "Image3D.h"
#include "estream.h"
#include "mem.h"

namespace PyCA {
namespace detail {

/// A scratch image / field on grid g in memory mt (contents undefined).
std::unique_ptr<Image3D> scratchImage(const GridInfo& g, MemoryType mt);
std::unique_ptr<Field3D> scratchField(const GridInfo& g, MemoryType mt);

/// True if any buffer of a shares memory with any buffer of b (over their
/// grids' voxels).
bool overlaps(const Image3D& a, const Image3D& b);
bool overlaps(const Image3D& a, const Field3D& b);
bool overlaps(const Field3D& a, const Image3D& b);
bool overlaps(const Field3D& a, const Field3D& b);

/// An input that an operator reads at voxels other than the one it writes
/// (gathers, stencils, splat sources): the input itself, or a scratch copy
/// when it shares memory with any of the outputs, so in-place calls such as
/// ApplyH(im, im, h) are correct.
template <class T>
class Unaliased {
 public:
  template <class... Out>
  Unaliased(const T& in, StreamT st, const Out&... outs) : mIn(&in) {
    if ((overlaps(outs, in) || ...)) {
      mCopy = makeCopy(in, st);
      mIn = mCopy.get();
    }
  }
  const T& get() const { return *mIn; }
  operator const T&() const { return *mIn; }

 private:
  static std::unique_ptr<T> makeCopy(const T& in, StreamT st);
  const T* mIn;
  std::unique_ptr<T> mCopy;
};
template <>
std::unique_ptr<Image3D> Unaliased<Image3D>::makeCopy(const Image3D& in, StreamT st);
template <>
std::unique_ptr<Field3D> Unaliased<Field3D>::makeCopy(const Field3D& in, StreamT st);

}  // namespace detail
}  // namespace PyCA

#endif
