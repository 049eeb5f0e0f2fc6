// GaussianFilter.cxx -- GaussianFilter<mode>: kernel tables, argument checks
// and the separable passes, each one kern::GaussPass run by forEachVoxel
// (compiled by nvcc in CUDA builds, see Code/Cxx/CMakeLists.txt).
#include "GaussianFilter.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "Field3D.h"
#include "GaussianKernels.h"
#include "GridInfo.h"
#include "Image3D.h"
#include "MemAlloc.h"
#include "Scratch.h"
#include "VoxelLaunch.h"
#include "conditionMacro.h"

namespace PyCA {

#ifdef PYCA_X86_DISPATCH
namespace detail {
/// CPU rows on AVX2 machines: the voxels whose taps all lie inside the grid
/// (a whole y or z row, the interior of an x row) run kern::gaussTapsRow;
/// the border voxels of an x row run the body.
template <int axis>
struct CpuRow<kern::GaussPass<axis>> {
  using Fn = kern::GaussPass<axis>;
  static constexpr bool kAvx2 = true;
  static PYCA_TARGET_AVX2 void avx2(const Fn& fn, int y, int z, size_t base, int nx) {
    if constexpr (axis == 0) {
      const int e0 = std::min(fn.r, nx), e1 = std::max(e0, nx - fn.r);
      for (int x = 0; x < e0; ++x) fn(x, y, z, base + size_t(x));
      if (e1 > e0)
        kern::gaussTapsRow(fn.in + base + size_t(e0), 1, fn.w, -fn.r, fn.r, fn.inv[e0], fn.out + base + size_t(e0),
                           e1 - e0);
      for (int x = e1; x < nx; ++x) fn(x, y, z, base + size_t(x));
    } else {
      const int p = axis == 1 ? y : z;
      const int lo = p < fn.r ? -p : -fn.r;
      const int hi = fn.n - 1 - p < fn.r ? fn.n - 1 - p : fn.r;
      kern::gaussTapsRow(fn.in + base, fn.stride, fn.w, lo, hi, fn.inv[p], fn.out + base, nx);
    }
  }
};
}  // namespace detail
#endif

namespace {

bool spansOverlap(const float* a, const float* b, size_t n) {
  return a && b && n > 0 && a < b + n && b < a + n;
}

}  // namespace

template <int mode>
GaussianFilter<mode>::GaussianFilter()
    : mSize(0, 0, 0), mSigma(0.f, 0.f, 0.f), mRadius(0, 0, 0), mReqRadius(0, 0, 0), mWOff{0, 0, 0},
      mNOff{0, 0, 0}, mDevTables(MEM_DEVICE), mDevStale(true), mBuilds(0) {
  updateParams(Vec3Di(0, 0, 0), Vec3Df(0.f, 0.f, 0.f), Vec3Di(0, 0, 0));
  mBuilds = 0;
}

template <int mode>
void GaussianFilter<mode>::updateParams(const Vec3Di& size, const Vec3Df& sigma, const Vec3Di& kernelRadius) {
  if (size.x < 0 || size.y < 0 || size.z < 0)
    throw PyCAValueException(__FILE__, __LINE__, "Error, negative size");
  if (!std::isfinite(sigma.x) || !std::isfinite(sigma.y) || !std::isfinite(sigma.z))
    throw PyCAValueException(__FILE__, __LINE__, "Error, sigma must be finite");
  if (mBuilds > 0 && size == mSize && sigma == mSigma && kernelRadius == mReqRadius) return;

  Vec3Di rad;
  for (int d = 0; d < 3; ++d) {
    int r = std::min(kernelRadius[d], size[d] / 2 - 1);  // legacy clip
    if (r < 0 || !(sigma[d] > 0.f)) r = 0;
    rad[d] = r;
  }
  std::vector<float> t;
  size_t wOff[3], nOff[3];
  for (int d = 0; d < 3; ++d) {
    const int r = rad[d];
    std::vector<double> w(size_t(2 * r + 1));
    double sum = 0.0;
    for (int k = -r; k <= r; ++k) {
      const double s = double(sigma[d]);
      w[size_t(k + r)] = r == 0 ? 1.0 : std::exp(-double(k) * double(k) / (2.0 * s * s));
      sum += w[size_t(k + r)];
    }
    wOff[d] = t.size();
    for (double v : w) t.push_back(float(v / sum));
    nOff[d] = t.size();
    for (int p = 0; p < size[d]; ++p) {
      const int lo = std::max(-r, -p), hi = std::min(r, size[d] - 1 - p);
      double in = 0.0;
      for (int k = lo; k <= hi; ++k) in += w[size_t(k + r)];
      t.push_back(float(sum / in));
    }
  }
  // commit (nothing above throws after validation except bad_alloc)
  mTables.swap(t);
  for (int d = 0; d < 3; ++d) {
    mWOff[d] = wOff[d];
    mNOff[d] = nOff[d];
  }
  mSize = size;
  mSigma = sigma;
  mReqRadius = kernelRadius;
  mRadius = rad;
  mDevStale = true;
  ++mBuilds;
}

template <int mode>
void GaussianFilter<mode>::checkMemType(MemoryType mt) const {
  if (mode == EXEC_CPU)
    PRECONDITION(mt != MEM_DEVICE, "Using EXEC_CPU object on non-host memory");
  else
    PRECONDITION(mt != MEM_HOST, "Using EXEC_GPU object on host memory");
}

template <int mode>
const float* GaussianFilter<mode>::tables(MemoryType mt) {
  if (mt != MEM_DEVICE) return mTables.data();
  if (mDevStale) {
    MemPool<float> dev(mTables.size(), MEM_DEVICE);  // new buffer: copies of this filter keep theirs
    CopyMemory(dev.get(), MEM_DEVICE, mTables.data(), MEM_HOST, mTables.size() * sizeof(float));
    mDevTables = dev;
    mDevStale = false;
  }
  return mDevTables.get();
}

template <int mode>
void GaussianFilter<mode>::pass(int d, float* a_o, const float* a_i, MemoryType mt, StreamT st) {
  const float* tb = tables(mt);
  const int r = mRadius[d];
  const float* w = tb + mWOff[d] + size_t(r);
  const float* inv = tb + mNOff[d];
  const ptrdiff_t stride = d == 0 ? 1 : (d == 1 ? ptrdiff_t(mSize.x) : ptrdiff_t(mSize.x) * mSize.y);
  switch (d) {
    case 0:
      detail::forEachVoxel(mt, kern::GaussPass<0>{a_i, a_o, w, inv, r, mSize.x, stride}, mSize, st);
      break;
    case 1:
      detail::forEachVoxel(mt, kern::GaussPass<1>{a_i, a_o, w, inv, r, mSize.y, stride}, mSize, st);
      break;
    default:
      detail::forEachVoxel(mt, kern::GaussPass<2>{a_i, a_o, w, inv, r, mSize.z, stride}, mSize, st);
      break;
  }
}

template <int mode>
void GaussianFilter<mode>::run(float* a_o, const float* a_i, float* a_tmp, MemoryType mt, StreamT st) {
  const size_t nVox = size_t(mSize.x) * size_t(mSize.y) * size_t(mSize.z);
  if (nVox == 0) return;
  PRECONDITION(a_o && a_i, "Error, null array");
  int axes[3], n = 0;
  for (int d = 0; d < 3; ++d)
    if (mRadius[d] > 0) axes[n++] = d;
  if (n == 0) {
    if (a_o != a_i) CopyMemory(a_o, mt, a_i, mt, nVox * sizeof(float), st);
    return;
  }
  std::unique_ptr<Image3D> own;
  if (n > 1 || spansOverlap(a_o, a_i, nVox)) {
    if (!a_tmp || spansOverlap(a_tmp, a_o, nVox) || spansOverlap(a_tmp, a_i, nVox)) {
      own = detail::scratchImage(GridInfo(mSize), mt);
      a_tmp = own->get();
    }
  }
  // Pass j writes a_o or a_tmp so that the last one lands in a_o; if the first
  // would overwrite its own input (a_o aliases a_i, odd count), shift by one
  // and copy at the end.
  const bool endInTmp = (n % 2 == 1) && spansOverlap(a_o, a_i, nVox);
  const float* src = a_i;
  float* dst = nullptr;
  for (int j = 0; j < n; ++j) {
    const bool toOut = (((n - 1 - j) % 2) == 0) != endInTmp;
    dst = toOut ? a_o : a_tmp;
    pass(axes[j], dst, src, mt, st);
    src = dst;
  }
  if (endInTmp) CopyMemory(a_o, mt, a_tmp, mt, nVox * sizeof(float), st);
}

template <int mode>
void GaussianFilter<mode>::filter(Image3D& a_o, const Image3D& a_i, Image3D& a_tmp, StreamT st) {
  checkMemType(a_o.memType());
  checkMemType(a_i.memType());
  checkMemType(a_tmp.memType());
  MK_CHECK3_MEM(a_o, a_i, a_tmp);
  PRECONDITION(a_o.size() == mSize && a_i.size() == mSize, "Inputs have different Size");
  PRECONDITION(a_tmp.capacity() >= a_i.nVox(), "Error, a_tmp holds fewer voxels than the images");
  run(detail::dataOf(a_o), detail::dataOf(a_i), a_tmp.get(), a_o.memType(), st);
}

template <int mode>
void GaussianFilter<mode>::filter(Field3D& a_o, const Field3D& a_i, Image3D& a_tmp, StreamT st) {
  checkMemType(a_o.memType());
  checkMemType(a_i.memType());
  checkMemType(a_tmp.memType());
  MK_CHECK2_MEM(a_o, a_i);
  MK_CHECK2_MEM(a_o, a_tmp);
  PRECONDITION(a_o.size() == mSize && a_i.size() == mSize, "Inputs have different Size");
  PRECONDITION(a_tmp.capacity() >= a_i.nVox(), "Error, a_tmp holds fewer voxels than the images");
  // In place (the same component arrays) runs per component; any other
  // sharing between a_o and a_i filters a copy of a_i.
  bool same = true;
  for (int d = 0; d < 3; ++d) same = same && a_o.getComponent(d) == a_i.getComponent(d);
  std::unique_ptr<detail::Unaliased<Field3D>> copy;
  if (!same) copy = std::make_unique<detail::Unaliased<Field3D>>(a_i, st, a_o);
  const Field3D& src = copy ? copy->get() : a_i;
  for (int d = 0; d < 3; ++d)
    run(detail::dataOf(a_o, d), detail::dataOf(src, d), a_tmp.get(), a_o.memType(), st);
}

template <int mode>
void GaussianFilter<mode>::filter(float* a_o, const float* a_i, float* a_tmp, StreamT st) {
  run(a_o, a_i, a_tmp, mode == EXEC_CPU ? MEM_HOST : MEM_DEVICE, st);
}

template <int mode>
void GaussianFilter<mode>::convolutionSingleAxis(float* a_o, const float* a_i, int axis, StreamT st) {
  PRECONDITION(axis >= 0 && axis <= 2, "unknown DimT");
  const size_t nVox = size_t(mSize.x) * size_t(mSize.y) * size_t(mSize.z);
  if (nVox == 0) return;
  PRECONDITION(a_o && a_i, "Error, null array");
  PRECONDITION(!spansOverlap(a_o, a_i, nVox), "Error, a_o must not overlap a_i");
  const MemoryType mt = mode == EXEC_CPU ? MEM_HOST : MEM_DEVICE;
  if (mRadius[axis] == 0)
    CopyMemory(a_o, mt, a_i, mt, nVox * sizeof(float), st);
  else
    pass(axis, a_o, a_i, mt, st);
}

template class GaussianFilter<EXEC_CPU>;
template class GaussianFilter<EXEC_GPU>;

}  // namespace PyCA
