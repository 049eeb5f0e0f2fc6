// OpDispatch.h -- turns the run-time enums of the operator API (background
// strategy, interpolation, finite-difference scheme and boundary condition)
// and the grid size into the compile-time parameters of the kernel functors,
// with the legacy messages for unsupported values. Each dispatcher calls
// f(tag...) once, where a tag's ::value is the enum value.
#ifndef __PYCA_OP_DISPATCH_H__
#define __PYCA_OP_DISPATCH_H__

#include <climits>
#include <cstddef>

#include "conditionMacro.h"
#include "pycaConst.h"

namespace PyCA {
namespace detail {

template <BackgroundStrategy B>
struct BgTag {
  static constexpr BackgroundStrategy value = B;
};
template <InterpT I>
struct InterpTag {
  static constexpr InterpT value = I;
};
template <DiffT D>
struct DiffTag {
  static constexpr DiffT value = D;
};
template <BoundaryCondT B>
struct BcTag {
  static constexpr BoundaryCondT value = B;
};
template <class I>
struct IndexTag {
  using type = I;
};

/// Which strategies an operator family accepts.
enum BgSet {
  BG_IMAGE,   ///< images: CLAMP, WRAP, ZERO, PARTIAL_ZERO
  BG_FIELD,   ///< generic field ops: those and ID, PARTIAL_ID
  BG_HFIELD,  ///< H-field compositions: CLAMP, ID, PARTIAL_ID
  BG_VFIELD   ///< V-field compositions, Ad, CoAd: CLAMP, WRAP, ZERO, PARTIAL_ZERO
};

constexpr bool bgAccepted(BgSet set, BackgroundStrategy bg) {
  return bg == BACKGROUND_STRATEGY_CLAMP ||
         ((bg == BACKGROUND_STRATEGY_WRAP || bg == BACKGROUND_STRATEGY_ZERO ||
           bg == BACKGROUND_STRATEGY_PARTIAL_ZERO) &&
          set != BG_HFIELD) ||
         ((bg == BACKGROUND_STRATEGY_ID || bg == BACKGROUND_STRATEGY_PARTIAL_ID) &&
          (set == BG_FIELD || set == BG_HFIELD));
}

template <BgSet set, BackgroundStrategy B, class F>
void callIfAccepted(const char* msg, F& f) {
  if constexpr (bgAccepted(set, B))
    f(BgTag<B>{});
  else
    throw PyCAException(__FILE__, __LINE__, msg);
}

/// Calls f(BgTag<bg>{}) if bg is in set, else throws msg (the legacy text of
/// the operator family: "Unknown/unimplemented background strategy",
/// "Unknown background strategy", "Unknown/unsupported background strategy").
/// Only the accepted strategies are instantiated.
template <BgSet set, class F>
void dispatchBg(BackgroundStrategy bg, const char* msg, F&& f) {
  switch (bg) {
    case BACKGROUND_STRATEGY_CLAMP:
      callIfAccepted<set, BACKGROUND_STRATEGY_CLAMP>(msg, f);
      break;
    case BACKGROUND_STRATEGY_WRAP:
      callIfAccepted<set, BACKGROUND_STRATEGY_WRAP>(msg, f);
      break;
    case BACKGROUND_STRATEGY_ZERO:
      callIfAccepted<set, BACKGROUND_STRATEGY_ZERO>(msg, f);
      break;
    case BACKGROUND_STRATEGY_PARTIAL_ZERO:
      callIfAccepted<set, BACKGROUND_STRATEGY_PARTIAL_ZERO>(msg, f);
      break;
    case BACKGROUND_STRATEGY_ID:
      callIfAccepted<set, BACKGROUND_STRATEGY_ID>(msg, f);
      break;
    case BACKGROUND_STRATEGY_PARTIAL_ID:
      callIfAccepted<set, BACKGROUND_STRATEGY_PARTIAL_ID>(msg, f);
      break;
    default:
      throw PyCAException(__FILE__, __LINE__, msg);
  }
}

template <class F>
void dispatchInterp(InterpT interp, F&& f) {
  switch (interp) {
    case INTERP_NN:
      f(InterpTag<INTERP_NN>{});
      break;
    case INTERP_LINEAR:
      f(InterpTag<INTERP_LINEAR>{});
      break;
    case INTERP_CUBIC:
      f(InterpTag<INTERP_CUBIC>{});
      break;
    default:
      throw PyCAException(__FILE__, __LINE__, "Unknown interpolation strategy");
  }
}

template <class F>
void dispatchDiffBc(DiffT diff, BoundaryCondT bc, F&& f) {
  auto withBc = [&](auto d) {
    switch (bc) {
      case BC_APPROX:
        f(d, BcTag<BC_APPROX>{});
        break;
      case BC_WRAP:
        f(d, BcTag<BC_WRAP>{});
        break;
      case BC_CLAMP:
        f(d, BcTag<BC_CLAMP>{});
        break;
      default:
        throw PyCAException(__FILE__, __LINE__, "unknown BoundaryCondT");
    }
  };
  switch (diff) {
    case DIFF_FORWARD:
      withBc(DiffTag<DIFF_FORWARD>{});
      break;
    case DIFF_BACKWARD:
      withBc(DiffTag<DIFF_BACKWARD>{});
      break;
    case DIFF_CENTRAL:
      withBc(DiffTag<DIFF_CENTRAL>{});
      break;
    default:
      throw PyCAException(__FILE__, __LINE__, "unknown DiffT");
  }
}

template <class F>
void dispatchBc(BoundaryCondT bc, F&& f) {
  switch (bc) {
    case BC_APPROX:
      f(BcTag<BC_APPROX>{});
      break;
    case BC_WRAP:
      f(BcTag<BC_WRAP>{});
      break;
    case BC_CLAMP:
      f(BcTag<BC_CLAMP>{});
      break;
    default:
      throw PyCAException(__FILE__, __LINE__, "unknown BoundaryCondT");
  }
}

/// Index type for grids of up to nVox voxels: int (vectorises with 32-bit
/// gathers) below 2^31, else long long.
template <class F>
void dispatchIndex(size_t nVox, F&& f) {
  if (nVox <= size_t(INT_MAX))
    f(IndexTag<int>{});
  else
    f(IndexTag<long long>{});
}

}  // namespace detail
}  // namespace PyCA

#endif
