// MultiscaleResampler.cxx -- MultiscaleResampler<Filter>: the level changes
// of images, H-fields and V-fields, built from the resampling operators
// (Resample, SetToIdentity, ...) with scratch from the thread memory manager.
#include "MultiscaleResampler.h"

#include <cmath>
#include <utility>

#include "FOpers.h"
#include "Field3D.h"
#include "HFOpers.h"
#include "IOpers.h"
#include "Image3D.h"
#include "Scratch.h"
#include "VFOpers.h"
#include "conditionMacro.h"

namespace PyCA {

namespace {

template <int mode, class T>
void checkMode(const T& obj) {
  if (mode == EXEC_CPU)
    PRECONDITION(obj.memType() != MEM_DEVICE, "Using EXEC_CPU object on non-host memory");
  else
    PRECONDITION(obj.memType() != MEM_HOST, "Using EXEC_GPU object on host memory");
}

/// obj takes grid g, reallocated only when its capacity is too small.
template <class T>
void takeGrid(T& obj, const GridInfo& g) {
  if (obj.capacity() < g.nVox())
    obj.resize(g);
  else
    obj.setGrid(g);
}

}  // namespace

template <class F>
MultiscaleResampler<F>::MultiscaleResampler(const GridInfo& origGrid)
    : mOrigGrid(origGrid), mManager(origGrid), mLevelSet(false), mSigma(0.f, 0.f, 0.f), mRadius(0, 0, 0) {}

template <class F>
void MultiscaleResampler<F>::requireLevel() const {
  PRECONDITION(mLevelSet, "Error, setScaleLevel has not been called");
}

template <class F>
void MultiscaleResampler<F>::setScaleLevel(const MultiscaleManager& scaleManager, StreamT) {
  PRECONDITION(scaleManager.getOrgGrid() == mOrigGrid, "Input grids are not equal");
  mManager = scaleManager;
  mLevelSet = true;
  mSigma = Vec3Df(0.f, 0.f, 0.f);
  mRadius = Vec3Di(0, 0, 0);
  if constexpr (F::kSmooths) {
    if (!mManager.isIdentityScale()) {
      const Vec3Di &so = mOrigGrid.size(), &sc = mManager.getCurSize();
      Vec3Df sigma;
      Vec3Di radius;
      for (int d = 0; d < 3; ++d) {
        // original -> current (the legacy used previous -> current, spec 9.21)
        sigma[d] = std::sqrt(float(so[d]) / float(sc[d]) / 2.f);
        radius[d] = 2 * int(std::ceil(sigma[d]));
      }
      mFilter.updateParams(so, sigma, radius);
      mSigma = mFilter.getSigma();
      mRadius = mFilter.getKernelRadius();
    }
  }
}

template <class F>
void MultiscaleResampler<F>::downsampleImage(Image3D& sI, const Image3D& orgI, StreamT st) {
  requireLevel();
  checkMode<kExecMode>(sI);
  checkMode<kExecMode>(orgI);
  MK_CHECK2_MEM(sI, orgI);
  PRECONDITION(orgI.size() == mOrigGrid.size(), "Inputs have different Size");
  const MemoryType mt = sI.memType();
  detail::Unaliased<Image3D> in(orgI, st, sI);  // sI may be orgI
  const Image3D& src = in;
  const GridInfo& cur = mManager.getCurGrid();
  if (mManager.isIdentityScale()) {
    takeGrid(sI, cur);
    Opers::Copy(sI, src, st);
    return;
  }
  if constexpr (F::kSmooths) {
    auto smooth = detail::scratchImage(mOrigGrid, mt);
    {
      auto tmp = detail::scratchImage(mOrigGrid, mt);
      mFilter.filter(*smooth, src, *tmp, st);
    }
    takeGrid(sI, cur);
    Opers::Resample(sI, *smooth, BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR, true, st);
  } else {
    takeGrid(sI, cur);
    Opers::Resample(sI, src, BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR, true, st);
  }
}

template <class F>
void MultiscaleResampler<F>::downsampleField(Field3D& sF, const Field3D& orgF, StreamT st) {
  requireLevel();
  checkMode<kExecMode>(sF);
  checkMode<kExecMode>(orgF);
  MK_CHECK2_MEM(sF, orgF);
  PRECONDITION(orgF.size() == mOrigGrid.size(), "Inputs have different Size");
  const MemoryType mt = sF.memType();
  detail::Unaliased<Field3D> in(orgF, st, sF);
  const Field3D& src = in;
  const GridInfo& cur = mManager.getCurGrid();
  if (mManager.isIdentityScale()) {
    takeGrid(sF, cur);
    Opers::Copy(sF, src, st);
    return;
  }
  if constexpr (F::kSmooths) {
    auto smooth = detail::scratchField(mOrigGrid, mt);
    {
      auto tmp = detail::scratchImage(mOrigGrid, mt);
      mFilter.filter(*smooth, src, *tmp, st);
    }
    takeGrid(sF, cur);
    Opers::Resample(sF, *smooth, BACKGROUND_STRATEGY_CLAMP, true, st);
  } else {
    takeGrid(sF, cur);
    Opers::Resample(sF, src, BACKGROUND_STRATEGY_CLAMP, true, st);
  }
}

template <class F>
void MultiscaleResampler<F>::upsampleImage(Image3D& sI, StreamT st) {
  requireLevel();
  checkMode<kExecMode>(sI);
  const GridInfo& cur = mManager.getCurGrid();
  if (mManager.isFirstScale()) {
    takeGrid(sI, cur);
    Opers::SetMem(sI, 0.f, st);
    return;
  }
  auto prev = detail::scratchImage(sI.grid(), sI.memType());
  Opers::Copy(*prev, sI, st);
  takeGrid(sI, cur);
  Opers::Resample(sI, *prev, BACKGROUND_STRATEGY_CLAMP, INTERP_LINEAR, true, st);
}

template <class F>
void MultiscaleResampler<F>::updateImage(Image3D*& sI, const Image3D& orgI, Image3D*& scratchI, StreamT st) {
  PRECONDITION(sI && scratchI, "Error, null image");
  downsampleImage(*scratchI, orgI, st);
  std::swap(sI, scratchI);
}

template <class F>
void MultiscaleResampler<F>::updateHField(Field3D& h, StreamT st) {
  requireLevel();
  checkMode<kExecMode>(h);
  const GridInfo& cur = mManager.getCurGrid();
  const MemoryType mt = h.memType();
  if (mManager.isFirstScale()) {
    takeGrid(h, cur);
    Opers::SetToIdentity(h, st);
    return;
  }
  {
    // displacement in the voxels of h's grid, resampled and divided by the
    // size ratio: the displacement in the voxels of the current grid
    auto d = detail::scratchField(h.grid(), mt);
    Opers::SetToIdentity(*d, st);
    Opers::Sub(*d, h, *d, st);
    takeGrid(h, cur);
    Opers::Resample(h, *d, BACKGROUND_STRATEGY_CLAMP, true, st);
  }
  auto id = detail::scratchField(cur, mt);
  Opers::SetToIdentity(*id, st);
  Opers::Add_I(h, *id, st);
}

template <class F>
void MultiscaleResampler<F>::updateVField(Field3D& v, StreamT st) {
  requireLevel();
  checkMode<kExecMode>(v);
  const GridInfo& cur = mManager.getCurGrid();
  if (mManager.isFirstScale()) {
    takeGrid(v, cur);
    Opers::SetToZero(v, st);
    return;
  }
  auto prev = detail::scratchField(v.grid(), v.memType());
  Opers::Copy(*prev, v, st);
  takeGrid(v, cur);
  Opers::Resample(v, *prev, BACKGROUND_STRATEGY_CLAMP, false, st);
}

template class MultiscaleResampler<IdentityFilter<EXEC_CPU>>;
template class MultiscaleResampler<IdentityFilter<EXEC_GPU>>;
template class MultiscaleResampler<GaussianFilter<EXEC_CPU>>;
template class MultiscaleResampler<GaussianFilter<EXEC_GPU>>;

}  // namespace PyCA
