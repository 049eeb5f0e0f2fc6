// Stencil.h -- the finite differences of every differential operator.
//
// A one-dimensional difference at position i of an axis of n voxels is
//   D f(i) = (f[ip] - f[im]) * w
// where (ip, im, w) depend on the scheme (DiffT), the boundary condition
// (BoundaryCondT) and i only -- stencilAt below, the single place the edge
// rules of spec 2.2 live:
//   forward   (f[i+1] - f[i]) / sp      backward (f[i] - f[i-1]) / sp
//   central   (f[i+1] - f[i-1]) / (2 sp)
//   BC_WRAP   neighbours wrap around;
//   BC_CLAMP  neighbours are clamped: forward/backward give 0 at the far
//             edge, central gives the one-sided difference / (2 sp);
//   BC_APPROX central uses the one-sided difference / sp at the edges
//             (forward/backward behave as BC_CLAMP);
//   n == 1    every difference along the axis is 0 (2-D slices).
// Diff3 applies it along x, y or z of a voxel of a 3-D array; the per-voxel
// functors of DiffKernels.h and the Jacobian-based deformation operators use
// it on the CPU and the GPU alike.
#ifndef __PYCA_STENCIL_H__
#define __PYCA_STENCIL_H__

#include <cstddef>

#include "pycaConst.h"
#include "pycaKernel.h"

namespace PyCA {
namespace detail {

/// D f(i) = (f[ip] - f[im]) * w, positions along the axis.
struct Stencil {
  int ip, im;
  float w;
};

/// The stencil at position i of an axis of n voxels with inverse spacing
/// invSp. Selects only (no branches), so loops over voxels vectorise.
template <DiffT diff, BoundaryCondT bc>
PYCA_HOSTDEVICE PYCA_FORCEINLINE Stencil stencilAt(int i, int n, float invSp) {
  const bool first = i == 0, last = i >= n - 1;
  const int next = last ? (bc == BC_WRAP ? 0 : i) : i + 1;
  const int prev = first ? (bc == BC_WRAP ? n - 1 : i) : i - 1;
  Stencil s;
  s.ip = diff == DIFF_BACKWARD ? i : next;
  s.im = diff == DIFF_FORWARD ? i : prev;
  float w = invSp;
  if (diff == DIFF_CENTRAL) w = (bc == BC_APPROX && (first || last)) ? invSp : 0.5f * invSp;
  s.w = n > 1 ? w : 0.f;
  return s;
}

/// The stencil in the interior (0 < i < n - 1), where no boundary rule applies.
template <DiffT diff>
PYCA_HOSTDEVICE PYCA_FORCEINLINE Stencil stencilInterior(int i, float invSp) {
  Stencil s;
  s.ip = diff == DIFF_BACKWARD ? i : i + 1;
  s.im = diff == DIFF_FORWARD ? i : i - 1;
  s.w = diff == DIFF_CENTRAL ? 0.5f * invSp : invSp;
  return s;
}

/// Finite differences along x, y, z of arrays on one grid.
template <DiffT diff, BoundaryCondT bc>
struct Diff3 {
  int sx, sy, sz;
  float ix, iy, iz;  ///< inverse spacing (1 for voxel units)

  /// Derivative of a at voxel (x, y, z) of linear index i along x; with
  /// interior = true the caller guarantees 0 < x < sx - 1 (constant offsets:
  /// contiguous vector loads).
  template <bool interior = false>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float dx(const float* a, int x, size_t i) const {
    const Stencil s = interior ? stencilInterior<diff>(x, ix) : stencilAt<diff, bc>(x, sx, ix);
    const float* c = a + i;
    return (c[s.ip - x] - c[s.im - x]) * s.w;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float dy(const float* a, int y, size_t i) const {
    const Stencil s = stencilAt<diff, bc>(y, sy, iy);
    const float* c = a + i;
    return (c[ptrdiff_t(s.ip - y) * sx] - c[ptrdiff_t(s.im - y) * sx]) * s.w;
  }
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float dz(const float* a, int z, size_t i) const {
    const Stencil s = stencilAt<diff, bc>(z, sz, iz);
    const float* c = a + i;
    const ptrdiff_t plane = ptrdiff_t(sx) * sy;
    return (c[(s.ip - z) * plane] - c[(s.im - z) * plane]) * s.w;
  }
  /// All three: g = (dx, dy, dz) of a at voxel (x, y, z), index i.
  template <bool interior = false>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void grad(const float* a, int x, int y, int z, size_t i, float& gx,
                                             float& gy, float& gz) const {
    gx = dx<interior>(a, x, i);
    gy = dy(a, y, i);
    gz = dz(a, z, i);
  }
  template <bool interior = false>
  PYCA_HOSTDEVICE PYCA_FORCEINLINE float along(int d, const float* a, int x, int y, int z, size_t i) const {
    return d == 0 ? dx<interior>(a, x, i) : (d == 1 ? dy(a, y, i) : dz(a, z, i));
  }
};

/// The central/BC_CLAMP differences in voxel units that the legacy Lie-group
/// operators (CoAd, Ad, AdInf, CoAdInf, JacobianXY, ...) use.
using VoxelCentral = Diff3<DIFF_CENTRAL, BC_CLAMP>;

/// 3x3 Jacobian J[r][c] = d a_r / d x_c of the field (a0, a1, a2) at a voxel.
template <bool interior = false, class D>
PYCA_HOSTDEVICE PYCA_FORCEINLINE void jacobianAt(const D& d, const float* a0, const float* a1,
                                                 const float* a2, int x, int y, int z, size_t i,
                                                 float J[3][3]) {
  d.template grad<interior>(a0, x, y, z, i, J[0][0], J[0][1], J[0][2]);
  d.template grad<interior>(a1, x, y, z, i, J[1][0], J[1][1], J[1][2]);
  d.template grad<interior>(a2, x, y, z, i, J[2][0], J[2][1], J[2][2]);
}

/// The Jacobian of an H-field is the identity along an axis of extent 1
/// (h_d(x) = x_d there): J[d][d] = 1 for such axes (2-D deformations keep
/// det J = the in-plane determinant, as in the legacy CoAd and Ad).
template <class D>
PYCA_HOSTDEVICE PYCA_FORCEINLINE void identityOnFlatAxes(const D& d, float J[3][3]) {
  if (d.sx == 1) J[0][0] = 1.f;
  if (d.sy == 1) J[1][1] = 1.f;
  if (d.sz == 1) J[2][2] = 1.f;
}

PYCA_HOSTDEVICE PYCA_FORCEINLINE float det3(const float J[3][3]) {
  return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
         J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}
PYCA_HOSTDEVICE PYCA_FORCEINLINE float det2(const float J[3][3]) {
  return J[0][0] * J[1][1] - J[0][1] * J[1][0];
}

}  // namespace detail
}  // namespace PyCA

#endif
