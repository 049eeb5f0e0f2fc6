// ImageMetrics.cxx -- BoxFilter and MutualInformation (ImageMetrics.h):
// checks, then the kernel bodies of MetricKernels.h through the voxel
// launcher (CPU: OpenMP; GPU: grid-stride kernels). Only the histogram's
// accumulation differs: fixed chunks summed in order on the CPU
// (deterministic for any thread count), atomics on the GPU.
#include "ImageMetrics.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "Apply.h"
#include "MemAlloc.h"
#include "MemPool.h"
#include "MetricKernels.h"
#include "PyCAException.h"
#include "Scratch.h"
#include "CpuFeatures.h"
#include "VoxelLaunch.h"
#include "conditionMacro.h"

namespace PyCA {

using detail::checkAll;
using detail::dataOf;
using detail::forEachVoxel;

namespace {

/// CPU form of a y or z pass: the same running sums (kern::BoxLine's
/// arithmetic, in the same order per line), but for a whole x row of lines
/// at once, x innermost: contiguous loads instead of one strided line at a
/// time. Rows (z for a y pass, y for a z pass) are split over the threads.
template <int axis, BoundaryCondT bc>
void boxPassRowsCpu(float* out, const float* in, const Vec3Di& s, int r) {
  const int n = axis == 1 ? s.y : s.z;
  const int rows = axis == 1 ? s.z : s.y;
  const ptrdiff_t stride = axis == 1 ? ptrdiff_t(s.x) : ptrdiff_t(s.x) * s.y;
  const ptrdiff_t rowStep = axis == 1 ? ptrdiff_t(s.x) * s.y : ptrdiff_t(s.x);
  const int nx = s.x;
  const kern::BoxLine<axis, bc> line{in, out, s.x, s.y, n, r, stride};
  const size_t work = size_t(nx) * size_t(n) * size_t(rows);
#pragma omp parallel num_threads(GetCPUThreads()) if (work >= detail::kOmpMinVoxels)
  {
    std::vector<double> acc(static_cast<size_t>(nx));
#pragma omp for schedule(static)
    for (int q = 0; q < rows; ++q) {
      const float* src = in + ptrdiff_t(q) * rowStep;
      float* dst = out + ptrdiff_t(q) * rowStep;
      for (int x = 0; x < nx; ++x) acc[size_t(x)] = 0.0;
      for (int j = -r; j <= r; ++j)
        for (int x = 0; x < nx; ++x) acc[size_t(x)] += line.val(src + x, j);
      for (int x = 0; x < nx; ++x) dst[x] = float(acc[size_t(x)]);
      for (int k = 1; k < n; ++k) {
        float* d = dst + ptrdiff_t(k) * stride;
        const int hi = k + r, lo = k - 1 - r;
        if (lo >= 0 && hi < n) {  // both taps inside (BoxLine's fast path)
          const float* ph = src + ptrdiff_t(hi) * stride;
          const float* pl = src + ptrdiff_t(lo) * stride;
          double* a = acc.data();
#pragma omp simd
          for (int x = 0; x < nx; ++x) {
            a[x] += double(ph[x]) - double(pl[x]);
            d[x] = float(a[x]);
          }
        } else {
          for (int x = 0; x < nx; ++x) {
            acc[size_t(x)] += line.val(src + x, hi) - line.val(src + x, lo);
            d[x] = float(acc[size_t(x)]);
          }
        }
      }
    }
  }
}

/// CPU form of the x pass for small radii: each output the direct sum of its
/// window, in double (kern::BoxLine's arithmetic: the same taps and boundary
/// rule, summed directly instead of by a running sum). The running sum's
/// serial dependence along x kept that pass scalar (4x slower than the y and
/// z passes at r = 2); the direct sums vectorise. Sums of at most 17 floats
/// in double are exact unless the taps span more than 2^29 in magnitude, so
/// the results are those of the running sum but for such extremes.
constexpr int kBoxDirectMaxRadius = 8;

/// One row of the direct x pass: border voxels by BoxLine::val, the interior
/// (every tap inside) by a vectorised loop.
template <BoundaryCondT bc>
PYCA_FORCEINLINE void boxRowXDirect(const kern::BoxLine<0, bc>& line, const float* src, float* dst, int nx, int r,
                                    int x0, int x1) {
  auto border = [&](int x) {  // taps outside the line by the boundary rule
    double acc = 0.0;
    for (int j = -r; j <= r; ++j) acc += line.val(src, x + j);
    dst[x] = float(acc);
  };
  for (int x = 0; x < x0; ++x) border(x);
  switch (r) {  // the taps unrolled (a run-time count kept the loop scalar)
#define PYCA_BOX_X_CASE(R)                                        \
  case R:                                                         \
    _Pragma("omp simd") for (int x = x0; x < x1; ++x) {           \
      double acc = 0.0;                                           \
      for (int j = -(R); j <= (R); ++j) acc += double(src[x + j]); \
      dst[x] = float(acc);                                        \
    }                                                             \
    break;
    PYCA_BOX_X_CASE(1)
    PYCA_BOX_X_CASE(2)
    PYCA_BOX_X_CASE(3)
    PYCA_BOX_X_CASE(4)
    PYCA_BOX_X_CASE(5)
    PYCA_BOX_X_CASE(6)
    PYCA_BOX_X_CASE(7)
    PYCA_BOX_X_CASE(8)
#undef PYCA_BOX_X_CASE
    default:
      for (int x = x0; x < x1; ++x) {
        double acc = 0.0;
        for (int j = -r; j <= r; ++j) acc += double(src[x + j]);
        dst[x] = float(acc);
      }
  }
  for (int x = x1; x < nx; ++x) border(x);
}
template <BoundaryCondT bc>
__attribute__((noinline)) void boxRowsXBase(const kern::BoxLine<0, bc> line, const float* in, float* out, int nx,
                                            int r, int x0, int x1, long long q0, long long q1) {
  for (long long q = q0; q < q1; ++q) boxRowXDirect<bc>(line, in + q * nx, out + q * nx, nx, r, x0, x1);
}
#ifdef PYCA_X86_DISPATCH
template <BoundaryCondT bc>
__attribute__((noinline)) PYCA_TARGET_AVX2 void boxRowsXAvx2(const kern::BoxLine<0, bc> line, const float* in,
                                                              float* out, int nx, int r, int x0, int x1,
                                                              long long q0, long long q1) {
  for (long long q = q0; q < q1; ++q) boxRowXDirect<bc>(line, in + q * nx, out + q * nx, nx, r, x0, x1);
}
#endif

template <BoundaryCondT bc>
void boxPassXDirectCpu(float* out, const float* in, const Vec3Di& s, int r) {
  const int nx = s.x;
  const long long rows = (long long)s.y * s.z;
  const kern::BoxLine<0, bc> line{in, out, s.x, s.y, nx, r, 1};
  const int x0 = r < nx ? r : nx;  // [x0, x1): every tap inside
  const int x1 = nx - r > x0 ? nx - r : x0;
  const bool avx2 = detail::cpuUseAvx2();
  (void)avx2;
#pragma omp parallel num_threads(GetCPUThreads()) if (size_t(rows) * size_t(nx) >= detail::kOmpMinVoxels)
  {
    long long q0 = 0, q1 = rows;
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    q0 = rows * t / nt;
    q1 = rows * (t + 1) / nt;
#endif
#ifdef PYCA_X86_DISPATCH
    if (avx2)
      boxRowsXAvx2<bc>(line, in, out, nx, r, x0, x1, q0, q1);
    else
#endif
      boxRowsXBase<bc>(line, in, out, nx, r, x0, x1, q0, q1);
  }
}

template <int axis>
void boxPass(float* out, const float* in, const Vec3Di& s, int r, BoundaryCondT bc, MemoryType mt, StreamT st) {
  if (axis == 0 && mt != MEM_DEVICE && r <= kBoxDirectMaxRadius) {
    switch (bc) {
      case BC_APPROX:
        boxPassXDirectCpu<BC_APPROX>(out, in, s, r);
        return;
      case BC_CLAMP:
        boxPassXDirectCpu<BC_CLAMP>(out, in, s, r);
        return;
      case BC_WRAP:
        boxPassXDirectCpu<BC_WRAP>(out, in, s, r);
        return;
      default:
        throw PyCAException(__FILE__, __LINE__, "BoxFilter: unknown BoundaryCondT");
    }
  }
  const int n = axis == 0 ? s.x : (axis == 1 ? s.y : s.z);
  const ptrdiff_t stride = axis == 0 ? 1 : (axis == 1 ? ptrdiff_t(s.x) : ptrdiff_t(s.x) * s.y);
  const Vec3Di lines(axis == 0 ? 1 : s.x, axis == 1 ? 1 : s.y, axis == 2 ? 1 : s.z);
  if (axis != 0 && mt != MEM_DEVICE) {
    switch (bc) {
      case BC_APPROX:
        boxPassRowsCpu<axis, BC_APPROX>(out, in, s, r);
        return;
      case BC_CLAMP:
        boxPassRowsCpu<axis, BC_CLAMP>(out, in, s, r);
        return;
      case BC_WRAP:
        boxPassRowsCpu<axis, BC_WRAP>(out, in, s, r);
        return;
      default:
        throw PyCAException(__FILE__, __LINE__, "BoxFilter: unknown BoundaryCondT");
    }
  }
  switch (bc) {
    case BC_APPROX:
      forEachVoxel(mt, kern::BoxLine<axis, BC_APPROX>{in, out, s.x, s.y, n, r, stride}, lines, st);
      break;
    case BC_CLAMP:
      forEachVoxel(mt, kern::BoxLine<axis, BC_CLAMP>{in, out, s.x, s.y, n, r, stride}, lines, st);
      break;
    case BC_WRAP:
      forEachVoxel(mt, kern::BoxLine<axis, BC_WRAP>{in, out, s.x, s.y, n, r, stride}, lines, st);
      break;
    default:
      throw PyCAException(__FILE__, __LINE__, "BoxFilter: unknown BoundaryCondT");
  }
}

void boxPassAxis(int d, float* out, const float* in, const Vec3Di& s, int r, BoundaryCondT bc, MemoryType mt,
                 StreamT st) {
  if (d == 0) boxPass<0>(out, in, s, r, bc, mt, st);
  else if (d == 1) boxPass<1>(out, in, s, r, bc, mt, st);
  else boxPass<2>(out, in, s, r, bc, mt, st);
}

kern::ParzenMap parzen(float lo, float hi, int bins) {
  return kern::ParzenMap{lo, hi, float(double(bins - 1) / (double(hi) - double(lo)))};
}

constexpr size_t kHistChunk = size_t(1) << 15;  // voxels per CPU partial histogram

struct PlainAdd {  // the CPU's adder (host/device only so that nvcc does not warn
  double* h;         // about the host/device miHistogramVoxel calling it)
  PYCA_HOSTDEVICE void operator()(int bin, double w) const { h[bin] += w; }
};

#ifdef __CUDACC__
__global__ void miHistogramKernel(const float* f, const float* m, const float* mask, kern::ParzenMap pf,
                                  kern::ParzenMap pm, int nb, size_t n, double* hist) {
  struct AtomicAdd {
    double* h;
    __device__ void operator()(int bin, double w) const { atomicAdd(h + bin, w); }
  } add{hist};
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    kern::miHistogramVoxel(f, m, mask, pf, pm, nb, i, add);
}
#endif

/// The joint histogram (unnormalised sums of weights) into hist (nb * nb).
void miHistogram(std::vector<double>& hist, const float* f, const float* m, const float* mask,
                 const kern::ParzenMap& pf, const kern::ParzenMap& pm, int nb, size_t n, MemoryType mt,
                 StreamT st) {
  const size_t nbins = size_t(nb) * size_t(nb);
  hist.assign(nbins, 0.0);
  if (n == 0) return;
  if (mt == MEM_DEVICE) {
#ifdef __CUDACC__
    MemPool<double> dev(nbins, MEM_DEVICE);
    cudaStream_t cs = reinterpret_cast<cudaStream_t>(st);
    if (cudaMemsetAsync(dev.get(), 0, nbins * sizeof(double), cs) != cudaSuccess)
      throw PyCAException(__FILE__, __LINE__, "MutualInformation: cudaMemset failed");
    size_t blocks = (n + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    miHistogramKernel<<<unsigned(blocks), 256, 0, cs>>>(f, m, mask, pf, pm, nb, n, dev.get());
    detail::checkLaunch(__FILE__, __LINE__);
    CopyMemory(hist.data(), MEM_HOST, dev.get(), MEM_DEVICE, nbins * sizeof(double));  // pageable: no stream
    if (cudaStreamSynchronize(cs) != cudaSuccess)
      throw PyCAException(__FILE__, __LINE__, "MutualInformation: histogram kernel failed");
#else
    (void)st;
    detail::throwGpuNotCompiled(__FILE__, __LINE__);
#endif
    return;
  }
  // CPU: fixed chunks, each its own partial histogram, summed in chunk order.
  const size_t chunks = (n + kHistChunk - 1) / kHistChunk;
  std::vector<double> part(chunks * nbins, 0.0);
#pragma omp parallel for num_threads(GetCPUThreads()) schedule(dynamic, 1) if (chunks > 1)
  for (long long c = 0; c < (long long)chunks; ++c) {
    PlainAdd add{part.data() + size_t(c) * nbins};
    const size_t lo = size_t(c) * kHistChunk, hi = lo + kHistChunk < n ? lo + kHistChunk : n;
    for (size_t i = lo; i < hi; ++i) kern::miHistogramVoxel(f, m, mask, pf, pm, nb, i, add);
  }
  for (size_t c = 0; c < chunks; ++c) {
    const double* p = part.data() + c * nbins;
    for (size_t b = 0; b < nbins; ++b) hist[b] += p[b];
  }
}

}  // namespace

namespace {
void boxFilter(Image3D& a_o, const Image3D& a_i, const Vec3Di& radius, BoundaryCondT bc, Image3D* a_tmp,
               StreamT st);
}

void BoxFilter(Image3D& a_o, const Image3D& a_i, const Vec3Di& radius, BoundaryCondT bc, StreamT st) {
  boxFilter(a_o, a_i, radius, bc, nullptr, st);
}

void BoxFilter(Image3D& a_o, const Image3D& a_i, const Vec3Di& radius, BoundaryCondT bc, Image3D& a_tmp,
               StreamT st) {
  checkAll(a_o, a_tmp);
  PRECONDITION(!detail::overlaps(a_tmp, a_o) && !detail::overlaps(a_tmp, a_i),
               "BoxFilter: the scratch image must not be the output or the input");
  boxFilter(a_o, a_i, radius, bc, &a_tmp, st);
}

namespace {
void boxFilter(Image3D& a_o, const Image3D& a_i, const Vec3Di& radius, BoundaryCondT bc, Image3D* a_tmp,
               StreamT st) {
  checkAll(a_o, a_i);
  PRECONDITION(radius.x >= 0 && radius.y >= 0 && radius.z >= 0, "BoxFilter: radius must be >= 0");
  PRECONDITION(radius.x <= (1 << 20) && radius.y <= (1 << 20) && radius.z <= (1 << 20),
               "BoxFilter: radius must be at most 2^20 voxels");
  PRECONDITION(bc == BC_APPROX || bc == BC_CLAMP || bc == BC_WRAP, "BoxFilter: unknown BoundaryCondT");
  const Vec3Di s = a_o.size();
  const size_t nVox = a_o.nVox();
  if (nVox == 0) return;
  const MemoryType mt = a_o.memType();
  int axes[3], na = 0;
  const int r[3] = {radius.x, radius.y, radius.z};
  for (int d = 0; d < 3; ++d)
    if (r[d] > 0) axes[na++] = d;
  if (na == 0) {
    if (dataOf(a_o) != dataOf(a_i)) CopyMemory(dataOf(a_o), mt, dataOf(a_i), mt, nVox * sizeof(float), st);
    return;
  }
  // Ping-pong between a_o and a scratch image so that no pass runs in place
  // (a line reads values it has already overwritten otherwise): the last
  // pass writes a_o.
  std::unique_ptr<Image3D> tmp = (na > 1 && !a_tmp) ? detail::scratchImage(a_o.grid(), mt) : nullptr;
  float* bufs[2] = {dataOf(a_o), a_tmp ? dataOf(*a_tmp) : (tmp ? dataOf(*tmp) : nullptr)};
  int cur = (na % 2 == 1) ? 0 : 1;  // the first pass's output, so that the last one is a_o
  const float* src = dataOf(a_i);
  std::unique_ptr<Image3D> copy;
  if (src == bufs[cur]) {  // in place with an odd pass count: read a copy
    copy = detail::scratchImage(a_o.grid(), mt);
    CopyMemory(dataOf(*copy), mt, src, mt, nVox * sizeof(float), st);
    src = dataOf(*copy);
  }
  for (int k = 0; k < na; ++k) {
    boxPassAxis(axes[k], bufs[cur], src, s, r[axes[k]], bc, mt, st);
    src = bufs[cur];
    cur ^= 1;
  }
}
}  // namespace

MutualInformation::MutualInformation(int bins, float fixedLo, float fixedHi, float movingLo, float movingHi)
    : mBins(bins), mFLo(fixedLo), mFHi(fixedHi), mMLo(movingLo), mMHi(movingHi) {
  PRECONDITION(bins >= 2 && bins <= 4096, "MutualInformation: bins must be 2..4096");
  PRECONDITION(std::isfinite(fixedLo) && std::isfinite(fixedHi) && fixedLo < fixedHi,
               "MutualInformation: the fixed image's range must be finite with lo < hi");
  PRECONDITION(std::isfinite(movingLo) && std::isfinite(movingHi) && movingLo < movingHi,
               "MutualInformation: the moving image's range must be finite with lo < hi");
}

double MutualInformation::compute(const Image3D& fixed, const Image3D& moving, StreamT st) {
  return run(fixed, moving, nullptr, st);
}

double MutualInformation::compute(const Image3D& fixed, const Image3D& moving, const Image3D& mask, StreamT st) {
  return run(fixed, moving, &mask, st);
}

double MutualInformation::run(const Image3D& fixed, const Image3D& moving, const Image3D* mask, StreamT st) {
  checkAll(fixed, moving);
  if (mask) checkAll(fixed, *mask);
  const int nb = mBins + 4;
  std::vector<double> h;
  miHistogram(h, dataOf(fixed), dataOf(moving), mask ? dataOf(*mask) : nullptr, parzen(mFLo, mFHi, mBins),
              parzen(mMLo, mMHi, mBins), nb, fixed.nVox(), fixed.memType(), st);
  double total = 0.0;
  for (double v : h) total += v;
  mCount = total;  // the cubic B-splines are a partition of unity: one per voxel counted
  mJoint.assign(h.size(), 0.0);
  mLogRatio.assign(h.size(), 0.f);
  mValue = 0.0;
  if (!(total > 0.0)) return 0.0;
  std::vector<double> pf(size_t(nb), 0.0), pm(size_t(nb), 0.0);
  for (int a = 0; a < nb; ++a)
    for (int b = 0; b < nb; ++b) {
      const double p = h[size_t(a) * nb + b] / total;
      mJoint[size_t(a) * nb + b] = p;
      pf[size_t(a)] += p;
      pm[size_t(b)] += p;
    }
  for (int a = 0; a < nb; ++a)
    for (int b = 0; b < nb; ++b) {
      const double p = mJoint[size_t(a) * nb + b];
      if (p > 0.0) {
        const double l = std::log(p / (pf[size_t(a)] * pm[size_t(b)]));
        mLogRatio[size_t(a) * nb + b] = float(l);
        mValue += p * l;
      }
    }
  return mValue;
}

void MutualInformation::gradient(Image3D& a_o, const Image3D& fixed, const Image3D& moving, StreamT st) const {
  grad(a_o, fixed, moving, nullptr, st);
}

void MutualInformation::gradient(Image3D& a_o, const Image3D& fixed, const Image3D& moving, const Image3D& mask,
                                 StreamT st) const {
  grad(a_o, fixed, moving, &mask, st);
}

void MutualInformation::grad(Image3D& a_o, const Image3D& fixed, const Image3D& moving, const Image3D* mask,
                             StreamT st) const {
  checkAll(a_o, fixed, moving);
  if (mask) checkAll(a_o, *mask);
  const int nb = mBins + 4;
  PRECONDITION(mLogRatio.size() == size_t(nb) * nb,
               "MutualInformation::gradient: call compute() on these images first");
  PRECONDITION(!detail::overlaps(a_o, fixed) && !detail::overlaps(a_o, moving),
               "MutualInformation::gradient: the output must not be an input");
  const MemoryType mt = a_o.memType();
  const size_t nbins = size_t(nb) * nb;
  MemPool<float> table(nbins, mt == MEM_DEVICE ? MEM_DEVICE : MEM_HOST);
  CopyMemory(table.get(), mt == MEM_DEVICE ? MEM_DEVICE : MEM_HOST, mLogRatio.data(), MEM_HOST,
             nbins * sizeof(float));  // pageable host memory: a synchronous copy
  const kern::ParzenMap pm = parzen(mMLo, mMHi, mBins);
  const float scale = mCount > 0.0 ? float(-double(pm.invDelta) / mCount) : 0.f;
  const kern::MIGradientOp fn{dataOf(fixed), dataOf(moving), mask ? dataOf(*mask) : nullptr, table.get(),
                              dataOf(a_o), parzen(mFLo, mFHi, mBins), pm, nb, scale};
  forEachVoxel(mt, fn, a_o.size(), st);
#ifdef __CUDACC__
  if (mt == MEM_DEVICE) cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(st));  // the table's lifetime
#endif
}

}  // namespace PyCA
