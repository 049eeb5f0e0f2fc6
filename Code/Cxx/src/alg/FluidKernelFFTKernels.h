// FluidKernelFFTKernels.h -- the per-frequency work of the fluid kernel,
// written once (PYCA_HOSTDEVICE) and run by both back ends over the
// half-spectrum grid: symbols, L or its inverse (lpow times), the
// divergence-free projection and the 1/N normalisation of the transforms.
//
// Spectral layout (SpectralLayout): the real-to-complex transforms run over
// the axes of extent > 1 (slowest first), the fastest of them halved to
// n/2 + 1 complex values; axes of extent 1 are dropped (the memory layout is
// the same), so a 2-D grid is a 2-D transform. The half-spectrum grid has the
// real grid's extents with the halved axis replaced by n/2 + 1, stored x
// fastest like a field, one interleaved complex array (re, im) per component.
// Index k along an axis is the frequency k (0 <= k <= n/2 on the halved
// axis, 0 <= k < n on the others), so the per-axis tables W_d[k], S_d[k]
// serve every layout.
#ifndef __PYCA_FLUID_KERNEL_FFT_KERNELS_H__
#define __PYCA_FLUID_KERNEL_FFT_KERNELS_H__

#include <cmath>
#include <cstddef>
#include <vector>

#include "GridInfo.h"
#include "Vec3D.h"
#include "estream.h"
#include "mem.h"
#include "pycaKernel.h"

namespace PyCA {
namespace detail {

/// Transform dimensions and the half-spectrum grid of a real grid.
struct SpectralLayout {
  Vec3Di size;     ///< the real grid
  Vec3Di half;     ///< the half-spectrum grid (x fastest)
  int halvedAxis;  ///< 0, 1, 2, or -1 for a one-voxel grid
  int rank;        ///< number of transformed axes (0 for one voxel or none)
  int n[3];        ///< their extents, slowest first (FFTW / cuFFT order)
  size_t nReal;    ///< voxels
  size_t nComplex; ///< complex values per component

  explicit SpectralLayout(const Vec3Di& s = Vec3Di(0, 0, 0)) : size(s), half(s), halvedAxis(-1), rank(0) {
    n[0] = n[1] = n[2] = 1;
    const int ext[3] = {s.x, s.y, s.z};
    for (int d = 0; d < 3 && halvedAxis < 0; ++d)
      if (ext[d] > 1) halvedAxis = d;
    for (int d = 2; d >= 0; --d)
      if (ext[d] > 1) n[rank++] = ext[d];
    if (halvedAxis >= 0) half[halvedAxis] = ext[halvedAxis] / 2 + 1;
    nReal = (s.x > 0 && s.y > 0 && s.z > 0) ? size_t(s.x) * size_t(s.y) * size_t(s.z) : 0;
    nComplex = nReal ? size_t(half.x) * size_t(half.y) * size_t(half.z) : 0;
    if (nReal == 0) rank = 0;  // an empty grid: nothing to transform
  }
};

/// The modes the per-frequency step keeps (the others it sets to zero): kx <
/// x on the halved axis, |ky| < y and |kz| < z (signed frequencies) on the
/// others. A band of the half-spectrum grid's extents keeps every mode.
struct SpectralBand {
  int x, y, z;
  explicit SpectralBand(const Vec3Di& half = Vec3Di(0, 0, 0)) : x(half.x), y(half.y), z(half.z) {}
  bool keepsAll(const Vec3Di& half) const { return x >= half.x && y >= half.y && z >= half.z; }
};

/// The band of K = L^-lpow whose dropped modes all have a multiplier of at
/// most eps times K's largest (gamma^-lpow, at the zero frequency): for
/// beta >= 0, L >= (gamma + alpha lambda) Id per frequency (lambda = -(W_x +
/// W_y + W_z); grad div adds a positive semi-definite term), so a mode with
/// (1 + alpha lambda_d / gamma)^lpow >= 1 / eps along one axis d alone can
/// go: ||K - K_band|| <= eps ||K|| in the operator norm. Only for 3-D grids
/// (the halved axis x) with alpha > 0, beta >= 0, gamma > 0, lpow >= 1 and
/// 0 < eps < 1; anything else keeps every mode.
inline SpectralBand spectralBand(const SpectralLayout& L, const Vec3Df& sp, double alpha, double beta,
                                 double gamma, int lpow, double eps) {
  SpectralBand b(L.half);
  if (!(eps > 0.0 && eps < 1.0) || !(alpha > 0.0) || !(beta >= 0.0) || !(gamma > 0.0) || lpow < 1 ||
      L.rank != 3 || L.halvedAxis != 0)
    return b;
  const int ext[3] = {L.size.x, L.size.y, L.size.z};
  const double h[3] = {sp.x, sp.y, sp.z};
  int* cut[3] = {&b.x, &b.y, &b.z};
  const double twoPi = 6.283185307179586476925286766559;
  for (int d = 0; d < 3; ++d) {
    // the first k (0 <= k <= n/2, lambda_d increasing) whose mode is dropped
    for (int k = 1; k <= ext[d] / 2; ++k) {
      const double lam = (2.0 - 2.0 * std::cos(twoPi * double(k) / double(ext[d]))) / (h[d] * h[d]);
      if (double(lpow) * std::log1p(alpha * lam / gamma) >= -std::log(eps)) {
        *cut[d] = k;
        break;
      }
    }
  }
  return b;
}

/// The symbol tables, one float array: W_x[half.x], W_y[half.y], W_z[half.z],
/// then S_x, S_y, S_z (computed in double). offset(d, 0) / offset(d, 1) give
/// where W_d / S_d start.
struct SymbolTables {
  std::vector<float> data;
  size_t off[2][3];

  SymbolTables(const SpectralLayout& L, const Vec3Df& sp) {
    const int ext[3] = {L.size.x, L.size.y, L.size.z};
    const int len[3] = {L.half.x, L.half.y, L.half.z};
    const double h[3] = {sp.x, sp.y, sp.z};
    size_t total = 0;
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 3; ++d) {
        off[t][d] = total;
        total += size_t(len[d] > 0 ? len[d] : 0);
      }
    data.assign(total, 0.f);
    const double twoPi = 6.283185307179586476925286766559;
    for (int d = 0; d < 3; ++d)
      for (int k = 0; k < len[d]; ++k) {
        const double th = twoPi * double(k) / double(ext[d]);
        data[off[0][d] + size_t(k)] = float((2.0 * std::cos(th) - 2.0) / (h[d] * h[d]));
        data[off[1][d] + size_t(k)] = float(std::sin(th) / h[d]);
      }
  }
};

/// The per-frequency step. kInverse: K = L^-1 (else L); kDivFree: project
/// afterwards; kPow > 0: lpow == kPow, known at compile time (the loop over
/// lpow unrolls and the CPU row loop vectorises), kPow == 0: lpow at run time.
/// X, Y, Z are the interleaved complex spectra of the three components
/// (read and written in place); the tables point into SymbolTables::data
/// (host or device copy).
template <bool kInverse, bool kDivFree, int kPow>
struct FluidSpectralOp {
  float* X;
  float* Y;
  float* Z;
  const float* wx;
  const float* wy;
  const float* wz;
  const float* sx;
  const float* sy;
  const float* sz;
  float alpha, beta, gamma;
  float scale;  ///< 1 / nVox: FFTW and cuFFT transforms are unnormalised
  int lpow;

  PYCA_HOSTDEVICE PYCA_FORCEINLINE void operator()(int x, int y, int z, size_t i) const {
    const float Wx = wx[x], Wy = wy[y], Wz = wz[z];
    const float Sx = sx[x], Sy = sy[y], Sz = sz[z];
    const float lam = gamma - alpha * (Wx + Wy + Wz);
    float a00 = lam - beta * Wx, a11 = lam - beta * Wy, a22 = lam - beta * Wz;
    float a10 = beta * Sx * Sy, a20 = beta * Sx * Sz, a21 = beta * Sy * Sz;
    float out = scale;
    if (kInverse) {
      // gamma == 0: L vanishes at the zero frequency, where K gives 0 (the
      // legacy rule); the matrix is replaced by the identity there so that
      // the factorisation below stays finite.
      const bool zero = (gamma == 0.f) & ((x | y | z) == 0);
      a00 = zero ? 1.f : a00;
      a11 = zero ? 1.f : a11;
      a22 = zero ? 1.f : a22;
      a10 = zero ? 0.f : a10;
      a20 = zero ? 0.f : a20;
      a21 = zero ? 0.f : a21;
      out = zero ? 0.f : out;
    }
    const size_t j = 2 * i;
    float r0 = X[j], i0 = X[j + 1];
    float r1 = Y[j], i1 = Y[j + 1];
    float r2 = Z[j], i2 = Z[j + 1];
    const int reps = kPow > 0 ? kPow : lpow;
    if (kInverse) {
      // L = l D l^T (l unit lower triangular), solved for the real and
      // imaginary parts.
      const float inv0 = 1.f / a00;
      const float l10 = a10 * inv0, l20 = a20 * inv0;
      const float d1 = a11 - l10 * a10;
      const float inv1 = 1.f / d1;
      const float l21 = (a21 - l20 * a10) * inv1;
      const float d2 = a22 - l20 * a20 - l21 * l21 * d1;
      const float inv2 = 1.f / d2;
      for (int p = 0; p < reps; ++p) {
        // forward: y = l^-1 b
        r1 -= l10 * r0;
        i1 -= l10 * i0;
        r2 -= l20 * r0 + l21 * r1;
        i2 -= l20 * i0 + l21 * i1;
        // diagonal
        r0 *= inv0; i0 *= inv0;
        r1 *= inv1; i1 *= inv1;
        r2 *= inv2; i2 *= inv2;
        // backward: u = l^-T z
        r1 -= l21 * r2;
        i1 -= l21 * i2;
        r0 -= l10 * r1 + l20 * r2;
        i0 -= l10 * i1 + l20 * i2;
      }
    } else {
      for (int p = 0; p < reps; ++p) {
        const float q0 = a00 * r0 + a10 * r1 + a20 * r2;
        const float q1 = a10 * r0 + a11 * r1 + a21 * r2;
        const float q2 = a20 * r0 + a21 * r1 + a22 * r2;
        const float p0 = a00 * i0 + a10 * i1 + a20 * i2;
        const float p1 = a10 * i0 + a11 * i1 + a21 * i2;
        const float p2 = a20 * i0 + a21 * i1 + a22 * i2;
        r0 = q0; r1 = q1; r2 = q2;
        i0 = p0; i1 = p1; i2 = p2;
      }
    }
    if (kDivFree) {
      const float n2 = Sx * Sx + Sy * Sy + Sz * Sz;
      const float invn2 = n2 > 0.f ? 1.f / n2 : 0.f;
      const float cr = (Sx * r0 + Sy * r1 + Sz * r2) * invn2;
      const float ci = (Sx * i0 + Sy * i1 + Sz * i2) * invn2;
      r0 -= cr * Sx; r1 -= cr * Sy; r2 -= cr * Sz;
      i0 -= ci * Sx; i1 -= ci * Sy; i2 -= ci * Sz;
    }
    X[j] = r0 * out; X[j + 1] = i0 * out;
    Y[j] = r1 * out; Y[j + 1] = i1 * out;
    Z[j] = r2 * out; Z[j + 1] = i2 * out;
  }
};

/// What the per-frequency step needs, independent of the back end.
struct SpectralArgs {
  float* spec[3];       ///< interleaved complex spectra of x, y, z
  const float* tables;  ///< SymbolTables::data (host or device copy)
  const size_t* off;    ///< SymbolTables::off, flattened [2][3] (host)
  Vec3Di half;
  float alpha, beta, gamma, scale;
  int lpow;
  bool divFree;
  bool inverse;
  SpectralBand band;  ///< the modes kept (SpectralBand(half): all)
};

/// Runs FluidSpectralOp over the half-spectrum grid on the back end of mt
/// (FluidKernelFFTSpectral.cxx, compiled by nvcc in CUDA builds).
void runSpectral(MemoryType mt, const SpectralArgs& a, StreamT st);

}  // namespace detail
}  // namespace PyCA

#endif
