// FluidKernelFFTSpectral.cxx -- launches the per-frequency step of the fluid
// kernel (FluidKernelFFTKernels.h) over the half-spectrum grid with the voxel
// launcher: an OpenMP row loop on the CPU, a grid-stride kernel on the GPU.
// Compiled by nvcc in CUDA builds (CMake marks it LANGUAGE CUDA).
#include "FluidKernelFFTKernels.h"
#include "VoxelLaunch.h"

namespace PyCA {
namespace detail {

namespace {

/// A box [x0, x0 + size) of the half-spectrum grid: fn at the box's voxels
/// with the grid's coordinates and index.
template <class Fn>
struct InBox {
  Fn fn;
  int x0, y0, z0, hx, hy;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t) const {
    const int X = x + x0, Y = y + y0, Z = z + z0;
    fn(X, Y, Z, size_t(X) + size_t(hx) * (size_t(Y) + size_t(hy) * size_t(Z)));
  }
};

/// Zeroes the three spectra at a voxel (the modes outside the band).
struct ZeroModes {
  float* X;
  float* Y;
  float* Z;
  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int, int, int, size_t i) const {
    X[2 * i] = X[2 * i + 1] = 0.f;
    Y[2 * i] = Y[2 * i + 1] = 0.f;
    Z[2 * i] = Z[2 * i + 1] = 0.f;
  }
};

template <class Fn>
void runBox(MemoryType mt, const Fn& fn, const Vec3Di& half, int x0, int x1, int y0, int y1, int z0, int z1,
            StreamT st) {
  if (x1 <= x0 || y1 <= y0 || z1 <= z0) return;
  forEachVoxel(mt, InBox<Fn>{fn, x0, y0, z0, half.x, half.y}, Vec3Di(x1 - x0, y1 - y0, z1 - z0), st);
}

template <bool kInverse, bool kDivFree, int kPow>
void run(MemoryType mt, const SpectralArgs& a, StreamT st) {
  const float* t = a.tables;
  const FluidSpectralOp<kInverse, kDivFree, kPow> op{
      a.spec[0], a.spec[1], a.spec[2],
      t + a.off[0], t + a.off[1], t + a.off[2], t + a.off[3], t + a.off[4], t + a.off[5],
      a.alpha, a.beta, a.gamma, a.scale, a.lpow};
  const Vec3Di& h = a.half;
  if (a.band.keepsAll(h)) {
    forEachVoxel(mt, op, h, st);
    return;
  }
  // A band (SpectralBand: 3-D grids, x halved): the step on the kept modes
  // only, zeros elsewhere, both over boxes. The kept ky are [0, cy) and
  // (ny - cy, ny), likewise kz; cx <= hx.
  const int cx = a.band.x < h.x ? a.band.x : h.x;
  const int cy = a.band.y < h.y ? a.band.y : h.y, cz = a.band.z < h.z ? a.band.z : h.z;
  const int yr[2][2] = {{0, cy}, {cy < h.y ? h.y - cy + 1 : h.y, h.y}};
  const int zr[2][2] = {{0, cz}, {cz < h.z ? h.z - cz + 1 : h.z, h.z}};
  const ZeroModes zero{a.spec[0], a.spec[1], a.spec[2]};
  for (int j = 0; j < 2; ++j) {
    for (int k = 0; k < 2; ++k) runBox(mt, op, h, 0, cx, yr[j][0], yr[j][1], zr[k][0], zr[k][1], st);
    runBox(mt, zero, h, 0, cx, yr[j][0], yr[j][1], zr[0][1], zr[1][0], st);  // kz outside the band
  }
  runBox(mt, zero, h, 0, cx, yr[0][1], yr[1][0], 0, h.z, st);  // ky outside the band
  runBox(mt, zero, h, cx, h.x, 0, h.y, 0, h.z, st);            // kx outside the band
}

template <bool kInverse, bool kDivFree>
void runPow(MemoryType mt, const SpectralArgs& a, StreamT st) {
  // the common powers with a compile-time count, any other at run time
  switch (a.lpow) {
    case 1: run<kInverse, kDivFree, 1>(mt, a, st); break;
    case 2: run<kInverse, kDivFree, 2>(mt, a, st); break;
    case 3: run<kInverse, kDivFree, 3>(mt, a, st); break;
    default: run<kInverse, kDivFree, 0>(mt, a, st); break;
  }
}
}  // namespace

void runSpectral(MemoryType mt, const SpectralArgs& a, StreamT st) {
  if (a.inverse) {
    if (a.divFree) runPow<true, true>(mt, a, st);
    else runPow<true, false>(mt, a, st);
  } else {
    if (a.divFree) runPow<false, true>(mt, a, st);
    else runPow<false, false>(mt, a, st);
  }
}

}  // namespace detail
}  // namespace PyCA
