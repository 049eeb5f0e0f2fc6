// FluidKernelFFTSpectral.cxx -- launches the per-frequency step of the fluid
// kernel (FluidKernelFFTKernels.h) over the half-spectrum grid with the voxel
// launcher: an OpenMP row loop on the CPU, a grid-stride kernel on the GPU.
// Compiled by nvcc in CUDA builds (CMake marks it LANGUAGE CUDA).
#include "FluidKernelFFTKernels.h"
#include "VoxelLaunch.h"

namespace PyCA {
namespace detail {

namespace {
template <bool kInverse, bool kDivFree, int kPow>
void run(MemoryType mt, const SpectralArgs& a, StreamT st) {
  const float* t = a.tables;
  const FluidSpectralOp<kInverse, kDivFree, kPow> op{
      a.spec[0], a.spec[1], a.spec[2],
      t + a.off[0], t + a.off[1], t + a.off[2], t + a.off[3], t + a.off[4], t + a.off[5],
      a.alpha, a.beta, a.gamma, a.scale, a.lpow, a.band.x, a.band.y, a.band.z, a.half.y, a.half.z};
  forEachVoxel(mt, op, a.half, st);
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
