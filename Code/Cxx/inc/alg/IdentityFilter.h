// IdentityFilter.h -- template<int mode> class IdentityFilter: the "no
// smoothing" filter of MultiscaleResampler<IdentityFilter<mode>> (Python
// MultiscaleResamplerCPU / MultiscaleResamplerGPU).
#ifndef __PYCA_IDENTITY_FILTER_H__
#define __PYCA_IDENTITY_FILTER_H__

#include "Field3D.h"
#include "FOpers.h"
#include "IOpers.h"
#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {

/// The filter interface of GaussianFilter<mode> with out = in.
template <int mode>
class IdentityFilter {
 public:
  static constexpr int kExecMode = mode;
  /// The multiscale resampler does not smooth with this filter.
  static constexpr bool kSmooths = false;

  /// Records the size; sigma and radius are ignored.
  void updateParams(const Vec3Di& size, const Vec3Df&, const Vec3Di&) { mSize = size; }
  /// a_o = a_i (Opers::Copy; a_tmp is not used).
  void filter(Image3D& a_o, const Image3D& a_i, Image3D&, StreamT st = nullptr) { Opers::Copy(a_o, a_i, st); }
  void filter(Field3D& a_o, const Field3D& a_i, Image3D&, StreamT st = nullptr) { Opers::Copy(a_o, a_i, st); }
  Vec3Di getSize() const { return mSize; }

 private:
  Vec3Di mSize;
};

}  // namespace PyCA

#endif
