// FieldLerpAvx2.h -- AVX2 trilinear sampling of a 3-component field at n
// points, under any field background strategy (see FieldLerpAvx2.cxx); only
// for grids with sx >= 2 and fewer than 2^31 voxels, and only when
// cpuUseAvx2().
#ifndef __PYCA_FIELDLERP_AVX2_H__
#define __PYCA_FIELDLERP_AVX2_H__

#include "pycaConst.h"

namespace PyCA {
namespace detail {

#if defined(__GNUC__) && defined(__x86_64__)
#define PYCA_HAVE_FIELDLERP_AVX2 1
/// (ox, oy, oz)[k] = triLerp<bg, int>(f, px[k], py[k], pz[k]) for k < n,
/// bit for bit (interp.h's field triLerp, same operations in the same
/// order). The points may alias the outputs.
template <BackgroundStrategy bg>
void fieldLerpAvx2(const float* fx, const float* fy, const float* fz, int sx, int sy, int sz, const float* px,
                   const float* py, const float* pz, float* ox, float* oy, float* oz, int n);
#endif

}  // namespace detail
}  // namespace PyCA

#endif
