// TriLerpAvx2.h -- AVX2 CLAMP-trilinear image sampling of n points (see
// TriLerpAvx2.cxx); only for grids with sx >= 2 and fewer than 2^31 voxels,
// and only when cpuHasAvx2().
#ifndef __PYCA_TRILERP_AVX2_H__
#define __PYCA_TRILERP_AVX2_H__

namespace PyCA {
namespace detail {

#if defined(__GNUC__) && defined(__x86_64__)
#define PYCA_HAVE_TRILERP_AVX2 1
/// out[k] = triLerp<CLAMP>(img, px[k], py[k], pz[k], sx, sy, sz), k < n.
void triLerpClampAvx2(const float* img, int sx, int sy, int sz, const float* px, const float* py,
                      const float* pz, float* out, int n);
#endif

}  // namespace detail
}  // namespace PyCA

#endif
