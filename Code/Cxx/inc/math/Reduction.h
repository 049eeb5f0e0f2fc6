// Reduction.h -- reductions over images and fields (namespace PyCA::Opers).
//
// Accumulation is in double on both back ends, so results do not drift with
// the image size the way the legacy float32 accumulation did. Field
// reductions run over all three components together. Max, Min, LInf and
// MinMax return exact voxel values.
//
// NaN: a NaN voxel makes every reduction NaN (sums by IEEE arithmetic; Max,
// Min, LInf and MinMax explicitly, like NumPy's max/min), on both back ends.
//
// Zero voxels: Sum, Sum2, L1, Dot and SumComp give 0 and LInf gives 0 (the
// empty sum / the largest of no magnitudes); Max, Min and MinMax have no value
// and throw PyCAValueException (Python: ValueError), as NumPy does. A single
// voxel is an ordinary reduction (the legacy GPU code refused it with "Number
// of elements = 1 for reduce call").
//
// Results are deterministic: the CPU reduces fixed chunks of voxels and
// combines them in chunk order, so the same data give the same bits whatever
// the run or the OpenMP thread count (and with or without AVX2). The GPU
// (CUB) is deterministic run to run on a given device; CPU and GPU sums agree
// to double rounding, extrema exactly.
#ifndef __PYCA_REDUCTION_H__
#define __PYCA_REDUCTION_H__

#include <utility>

#include "Field3D.h"
#include "Image3D.h"
#include "Vec2D.h"
#include "Vec3D.h"
#include "estream.h"

namespace PyCA {
namespace Opers {

// ---- value-returning forms (what Python calls) -----------------------------
// In double precision. There is no prior value to combine with: update is
// accepted for legacy call compatibility and ignored. onDev is accepted for
// compatibility; the result is always returned on the host.

/// Sum of the voxels (of all three components for a field).
double Sum(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Sum(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Sum of squares.
double Sum2(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Sum2(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Sum of absolute values.
double L1(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double L1(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Largest absolute value (an exact voxel magnitude; 0 for no voxels).
double LInf(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double LInf(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Largest voxel value (exact).
double Max(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Max(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Smallest voxel value (exact).
double Min(const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
double Min(const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
/// Sum of a_i * a_i1 (field: over all components). Checks grids ("Input
/// grids are not equal") and memory types ("memory types are not compatible").
double Dot(const Image3D& a_i, const Image3D& a_i1, bool update = false, StreamT st = nullptr,
           bool onDev = false);
double Dot(const Field3D& a_i, const Field3D& a_i1, bool update = false, StreamT st = nullptr,
           bool onDev = false);
/// (smallest, largest) voxel value in one pass; Python gets the tuple (min, max).
/// (The legacy C++ function was MaxMin(Vec2D<float>&) with x = max, y = min.)
std::pair<float, float> MinMax(const Image3D& a_i, bool update = false, StreamT st = nullptr,
                               bool onDev = false);
std::pair<float, float> MinMax(const Field3D& a_i, bool update = false, StreamT st = nullptr,
                               bool onDev = false);
/// Per-component sums of a field.
Vec3Df SumComp(const Field3D& a_i, StreamT st = nullptr);

// ---- legacy C++ out-parameter forms -------------------------------------------
// a_o = r, or with update a_o combined with r: prior + r for the sums (Sum,
// Sum2, L1, Dot), max(prior, r) for Max and LInf, min(prior, r) for Min. The
// reduction itself is in double; a_o receives the float of the combination.
// C++ only: Python has no output float (SWIG does not see these).
#ifndef SWIG
void Sum(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Sum(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Sum2(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Sum2(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void L1(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void L1(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void LInf(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void LInf(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Max(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Max(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Min(float& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Min(float& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr, bool onDev = false);
void Dot(float& a_o, const Image3D& a_i, const Image3D& a_i1, bool update = false,
         StreamT st = nullptr, bool onDev = false);
void Dot(float& a_o, const Field3D& a_i, const Field3D& a_i1, bool update = false,
         StreamT st = nullptr, bool onDev = false);
/// Legacy MaxMin: a_o.x = largest, a_o.y = smallest voxel value (one pass;
/// Python's MinMax). With update, a_o.x = max(prior a_o.x, largest) and
/// a_o.y = min(prior a_o.y, smallest). Throws PyCAValueException (a_o
/// unchanged) for no voxels.
void MaxMin(Vec2Df& a_o, const Image3D& a_i, bool update = false, StreamT st = nullptr,
            bool onDev = false);
void MaxMin(Vec2Df& a_o, const Field3D& a_i, bool update = false, StreamT st = nullptr,
            bool onDev = false);
#endif
/// Per-component sums of a field into a_o (Python: Sum(Vec3Df, Field3D)).
void Sum(Vec3Df& a_o, const Field3D& a_i, StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
