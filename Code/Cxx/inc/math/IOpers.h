// IOpers.h -- free operators on images (namespace PyCA::Opers).
//
// Conventions (legacy): outputs come first; `_I` = in place (the first
// argument is input and output); `C` = constant operand, and every constant
// form of an image operator is also overloaded under the plain name
// (Add(o, a, 2.f)); a trailing `a_mask` image restricts the write to voxels
// where mask != 0 (the others keep their value). Every operator checks that
// all arguments have equal grids ("Input grids are not equal") and memory
// types ("memory types are not compatible"), then runs on the back end of
// its output's memory type (MEM_DEVICE: CUDA, otherwise the CPU). `st` is a
// CUDA stream (ignored on the CPU); `onDev` is accepted for compatibility:
// constants are always passed by value.
#ifndef __PYCA_IOPERS_H__
#define __PYCA_IOPERS_H__

#include "Image3D.h"
#include "Vec3D.h"
#include "estream.h"
#include "pycaConst.h"

namespace PyCA {
class Field3D;

namespace Opers {

// ---- group D: copies and fills ---------------------------------------------

/// a_o = a_i. Works across host, pinned and device memory.
void Copy(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);
/// a_o = a_i where a_mask != 0.
void Copy(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st = nullptr);
/// a_o = component dim (0, 1, 2) of a_i.
void Copy(Image3D& a_o, const Field3D& a_i, int dim, StreamT st = nullptr);

/// a_o = c.
void SetMem(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
/// a_o = c where a_mask != 0.
void SetMem(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st = nullptr,
            bool onDev = false);

// ---- group A: unary pointwise ------------------------------------------------
// OP(a_o, a_i[, a_mask]): a_o = f(a_i); OP_I(a_o[, a_mask]): a_o = f(a_o).

#define PYCA_DECLARE_IMAGE_UNARY(OP)                                                     \
  void OP(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);                       \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st = nullptr); \
  void OP##_I(Image3D& a_o, StreamT st = nullptr);                                       \
  void OP##_I(Image3D& a_o, const Image3D& a_mask, StreamT st = nullptr);

PYCA_DECLARE_IMAGE_UNARY(Abs)    // |x|
PYCA_DECLARE_IMAGE_UNARY(Cube)   // x^3
PYCA_DECLARE_IMAGE_UNARY(Exp)    // e^x
PYCA_DECLARE_IMAGE_UNARY(Log)    // ln x
PYCA_DECLARE_IMAGE_UNARY(Neg)    // -x
PYCA_DECLARE_IMAGE_UNARY(Ramp)   // max(x, 0)
PYCA_DECLARE_IMAGE_UNARY(Sgn)    // -1, 0, 1
PYCA_DECLARE_IMAGE_UNARY(Step)   // 0 below 0, 0.5 at 0, 1 above
PYCA_DECLARE_IMAGE_UNARY(Sqr)    // x^2
PYCA_DECLARE_IMAGE_UNARY(Sqrt)   // sqrt(x)
PYCA_DECLARE_IMAGE_UNARY(Inv)    // 1/x
PYCA_DECLARE_IMAGE_UNARY(Ceil)
PYCA_DECLARE_IMAGE_UNARY(Floor)
PYCA_DECLARE_IMAGE_UNARY(Round)  // half away from zero
PYCA_DECLARE_IMAGE_UNARY(Sin)
PYCA_DECLARE_IMAGE_UNARY(Asin)
PYCA_DECLARE_IMAGE_UNARY(Cos)
PYCA_DECLARE_IMAGE_UNARY(Acos)
PYCA_DECLARE_IMAGE_UNARY(Tan)
PYCA_DECLARE_IMAGE_UNARY(Atan)
PYCA_DECLARE_IMAGE_UNARY(Csc)    // 1/sin x
PYCA_DECLARE_IMAGE_UNARY(Sec)    // 1/cos x
PYCA_DECLARE_IMAGE_UNARY(Cot)    // 1/tan x
#undef PYCA_DECLARE_IMAGE_UNARY

// ---- group B: binary with an image or a constant -------------------------------
// OP(a_o, a_i, a_i1[, a_mask]): a_o = a_i op a_i1; OP(a_o, a_i, c[, a_mask]) and
// OPC(...): a_o = a_i op c; OP_I / OPC_I: a_o = a_o op (a_i or c).

#define PYCA_DECLARE_IMAGE_BINARY(OP)                                                             \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st = nullptr);           \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_mask,           \
          StreamT st = nullptr);                                                                  \
  void OP(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr,                 \
          bool onDev = false);                                                                    \
  void OP(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask,                \
          StreamT st = nullptr, bool onDev = false);                                              \
  void OP##_I(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);                            \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st = nullptr);     \
  void OP##_I(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);            \
  void OP##_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st = nullptr,          \
              bool onDev = false);                                                                \
  void OP##C(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr,              \
             bool onDev = false);                                                                 \
  void OP##C(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask,             \
             StreamT st = nullptr, bool onDev = false);                                           \
  void OP##C_I(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);           \
  void OP##C_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st = nullptr,         \
               bool onDev = false);

PYCA_DECLARE_IMAGE_BINARY(Add)
PYCA_DECLARE_IMAGE_BINARY(Sub)
PYCA_DECLARE_IMAGE_BINARY(Mul)
PYCA_DECLARE_IMAGE_BINARY(Div)
PYCA_DECLARE_IMAGE_BINARY(Max)
PYCA_DECLARE_IMAGE_BINARY(Min)
PYCA_DECLARE_IMAGE_BINARY(Atan2)  // atan2(a, b)
PYCA_DECLARE_IMAGE_BINARY(GT)     // comparisons: 1.0 where true, 0.0 elsewhere
PYCA_DECLARE_IMAGE_BINARY(GTE)
PYCA_DECLARE_IMAGE_BINARY(EQ)
PYCA_DECLARE_IMAGE_BINARY(NEQ)
PYCA_DECLARE_IMAGE_BINARY(LT)
PYCA_DECLARE_IMAGE_BINARY(LTE)
#undef PYCA_DECLARE_IMAGE_BINARY

// ---- group C: fused arithmetic -----------------------------------------------
// Names read left to right, `_` separating an outer operation. Each OP_I
// form uses a_o as its first operand.

/// a_i ^ c
void PowC(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr, bool onDev = false);
void PowC_I(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
/// |a_i - a_i1|
void AbsDiff(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st = nullptr);
void AbsDiff_I(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);
/// (a_i - a_i1)^2
void SqrDiff(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st = nullptr);
void SqrDiff_I(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);

// Three arrays: OP(a_o, a_i, a_i1, a_i2), OP_I(a_o, a_i, a_i1).
#define PYCA_DECLARE_IMAGE_TERNARY(OP)                                                   \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_i2,    \
          StreamT st = nullptr);                                                         \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st = nullptr);
PYCA_DECLARE_IMAGE_TERNARY(MulMul)   // a * b * c
PYCA_DECLARE_IMAGE_TERNARY(MulAdd)   // a * b + c
PYCA_DECLARE_IMAGE_TERNARY(MulSub)   // a * b - c
PYCA_DECLARE_IMAGE_TERNARY(AddMul)   // (a + b) * c
PYCA_DECLARE_IMAGE_TERNARY(AddDiv)   // (a + b) / c
PYCA_DECLARE_IMAGE_TERNARY(SubMul)   // (a - b) * c
PYCA_DECLARE_IMAGE_TERNARY(SubDiv)   // (a - b) / c
PYCA_DECLARE_IMAGE_TERNARY(Add_Mul)  // a + b * c
PYCA_DECLARE_IMAGE_TERNARY(Sub_Mul)  // a - b * c
#undef PYCA_DECLARE_IMAGE_TERNARY

// Three arrays and a constant: OP(a_o, a_i, a_i1, a_i2, c), OP_I(a_o, a_i, a_i1, c).
#define PYCA_DECLARE_IMAGE_TERNARY_C(OP)                                                  \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_i2,     \
          const float& c, StreamT st = nullptr, bool onDev = false);                      \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const float& c,      \
              StreamT st = nullptr, bool onDev = false);
PYCA_DECLARE_IMAGE_TERNARY_C(Add_AddMulC)  // a + (b + c) * k
PYCA_DECLARE_IMAGE_TERNARY_C(Add_SubMulC)  // a + (b - c) * k
PYCA_DECLARE_IMAGE_TERNARY_C(Add_MulMulC)  // a + b * c * k
PYCA_DECLARE_IMAGE_TERNARY_C(Sub_AddMulC)  // a - (b + c) * k
PYCA_DECLARE_IMAGE_TERNARY_C(Sub_SubMulC)  // a - (b - c) * k
PYCA_DECLARE_IMAGE_TERNARY_C(Sub_MulMulC)  // a - b * c * k
#undef PYCA_DECLARE_IMAGE_TERNARY_C

// Two arrays and a constant: OP(a_o, a_i, a_i1, c), OP_I(a_o, a_i, c).
#define PYCA_DECLARE_IMAGE_BINARY_C(OP)                                                   \
  void OP(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const float& c,         \
          StreamT st = nullptr, bool onDev = false);                                      \
  void OP##_I(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr,     \
              bool onDev = false);
PYCA_DECLARE_IMAGE_BINARY_C(AddMulC)   // (a + b) * c
PYCA_DECLARE_IMAGE_BINARY_C(SubMulC)   // (a - b) * c
PYCA_DECLARE_IMAGE_BINARY_C(MulMulC)   // a * b * c
PYCA_DECLARE_IMAGE_BINARY_C(Add_MulC)  // a + b * c
#undef PYCA_DECLARE_IMAGE_BINARY_C

/// a_i * c + a_i1 (MulCAdd), a_i * c - a_i1 (MulCSub); _I: a_o * c +- a_i.
void MulCAdd(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_i1,
             StreamT st = nullptr, bool onDev = false);
void MulCAdd_I(Image3D& a_o, const float& c, const Image3D& a_i, StreamT st = nullptr,
               bool onDev = false);
void MulCSub(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_i1,
             StreamT st = nullptr, bool onDev = false);
void MulCSub_I(Image3D& a_o, const float& c, const Image3D& a_i, StreamT st = nullptr,
               bool onDev = false);
/// a_i * a + b
void MulCAddC(Image3D& a_o, const Image3D& a_i, const float& a, const float& b,
              StreamT st = nullptr, bool onDev = false);
void MulCAddC_I(Image3D& a_o, const float& a, const float& b, StreamT st = nullptr,
                bool onDev = false);
/// (a_i + a) * b
void AddCMulC(Image3D& a_o, const Image3D& a_i, const float& a, const float& b,
              StreamT st = nullptr, bool onDev = false);
void AddCMulC_I(Image3D& a_o, const float& a, const float& b, StreamT st = nullptr,
                bool onDev = false);
/// a_i * a + a_i1 * b
void MulC_Add_MulC(Image3D& a_o, const Image3D& a_i, const float& a, const Image3D& a_i1,
                   const float& b, StreamT st = nullptr, bool onDev = false);
void MulC_Add_MulC_I(Image3D& a_o, const float& a, const Image3D& a_i, const float& b,
                     StreamT st = nullptr, bool onDev = false);
/// (a_i + a) * b + c
void AddCMulCAddC(Image3D& a_o, const Image3D& a_i, const float& a, const float& b,
                  const float& c, StreamT st = nullptr, bool onDev = false);
void AddCMulCAddC_I(Image3D& a_o, const float& a, const float& b, const float& c,
                    StreamT st = nullptr, bool onDev = false);

// ---- group D: thresholds -------------------------------------------------------

/// Soft threshold max(x - c, 0) + min(x + c, 0).
void Shrink(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr);
void Shrink_I(Image3D& a_o, const float& c, StreamT st = nullptr);
/// Huber-like |x|: |x| - eps/2 where |x| > eps, x^2 / (2 eps) inside.
void SoftAbs(Image3D& a_o, const Image3D& a_i, const float& eps, StreamT st = nullptr);
void SoftAbs_I(Image3D& a_o, const float& eps, StreamT st = nullptr);
/// x / eps clamped to [-1, 1].
void SoftSgn(Image3D& a_o, const Image3D& a_i, const float& eps, StreamT st = nullptr);
void SoftSgn_I(Image3D& a_o, const float& eps, StreamT st = nullptr);

// ---- group D: grids, resampling, convolution --------------------------------------

/// Cyclic permutation of the axes: dir = true writes a_o(z, x, y) = a_i(x, y, z)
/// (a_o has size (sz, sx, sy)), dir = false a_o(y, z, x) = a_i(x, y, z) (size
/// (sy, sz, sx)). Throws "Inputs have different Size" if a_o's size is not
/// the permuted one.
void ShiftCoordinate(Image3D& a_o, const Image3D& a_i, bool dir, StreamT st = nullptr);
/// a_o(x) = a_i(x + start) over a_o's grid; voxels outside a_i give 0.
void SubVol(Image3D& a_o, const Image3D& a_i, const Vec3Di& start, StreamT st = nullptr);
/// a_o(x + start) = a_i(x) where x + start lies inside a_o (the rest of a_o is kept).
void SetSubVol_I(Image3D& a_o, const Image3D& a_i, const Vec3Di& start, StreamT st = nullptr);
/// Voxel-grid resampling of a_i onto a_o's size (spacing and origin are not
/// used): a_o(x) = a_i(x * r + o), r = size_i / size_o per axis, o = (r - 1)/2
/// with useOriginOffset (centred samples), else 0. Equal sizes copy; an
/// empty a_i (no voxels) gives 0.
/// bg: CLAMP, WRAP, ZERO, PARTIAL_ZERO ("Unknown background strategy").
void Resample(Image3D& a_o, const Image3D& a_i, BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP,
              InterpT interp = INTERP_LINEAR, bool useOriginOffset = true, StreamT st = nullptr);
/// World-coordinate resampling: a_o(x) = a_i at the world point of a_o's
/// voxel x, i.e. at ((x * sp_o + org_o) - org_i) / sp_i in a_i's voxels
/// (0 everywhere if a_i has no voxels).
void ResampleWorld(Image3D& a_o, const Image3D& a_i, BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP,
                   InterpT interp = INTERP_LINEAR, StreamT st = nullptr);
/// Adjoint of ResampleWorld: every voxel of a_i is splatted (trilinear
/// weights) at its world point into a_o, ACCUMULATING into a_o (legacy: zero
/// it first); the weighted form also accumulates the weights into a_w. bg is
/// checked as for ResampleWorld and otherwise unused.
void SplatWorld(Image3D& a_o, const Image3D& a_i, BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP,
                StreamT st = nullptr);
void SplatWorld(Image3D& a_o, const Image3D& a_i, Image3D& a_w,
                BackgroundStrategy bg = BACKGROUND_STRATEGY_CLAMP, StreamT st = nullptr);
/// a_o(x) = sum_k kernel(k) a_i(x + k - r) over the odd-sized kernel image
/// (r = half its size), neighbours clamped at the borders. This is a
/// correlation, as in the legacy library (flip the kernel for a convolution).
/// Throws "Only odd-sized kernels allowed in convolution".
void Convolve(Image3D& a_o, const Image3D& a_i, const Image3D& kernel, StreamT st = nullptr);

}  // namespace Opers
}  // namespace PyCA

#endif
