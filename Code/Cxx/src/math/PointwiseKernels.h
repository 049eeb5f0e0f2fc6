// PointwiseKernels.h -- the per-voxel bodies of the elementwise operators.
//
// Each functor computes one output value from its inputs and captured
// constants. It is compiled by g++ for the CPU back end and by nvcc for the
// CUDA back end, so the arithmetic the GPU runs is the arithmetic the CPU
// tests check. Register each functor in ElementwiseOps.def.
#ifndef __PYCA_POINTWISE_KERNELS_H__
#define __PYCA_POINTWISE_KERNELS_H__

#include <cmath>
#include <cstddef>

#include "pycaKernel.h"

namespace PyCA {
namespace kern {

// ---- helpers and copies ----------------------------------------------------

/// out = c
struct SetC {
  float c;
  PYCA_HOSTDEVICE float operator()() const { return c; }
};

/// out = a
struct Identity {
  PYCA_HOSTDEVICE float operator()(float a) const { return a; }
};

/// Binds a constant as the second operand of a binary functor:
/// WithC<Sub>{{}, c}(a) = Sub(a, c) = a - c. Every "C" operator is one of these.
template <class B>
struct WithC {
  B op;
  float c;
  PYCA_HOSTDEVICE float operator()(float a) const { return op(a, c); }
};

// ---- group A: unary pointwise (one line each; the legacy float maths) -------

#define PYCA_UNARY_FUNCTOR(NAME, EXPR) \
  struct NAME {                          \
    PYCA_HOSTDEVICE float operator()(float x) const { return EXPR; } \
  };
PYCA_UNARY_FUNCTOR(Abs, fabsf(x))
PYCA_UNARY_FUNCTOR(Cube, x * x * x)
PYCA_UNARY_FUNCTOR(Exp, expf(x))
PYCA_UNARY_FUNCTOR(Log, logf(x))
PYCA_UNARY_FUNCTOR(Neg, -x)
PYCA_UNARY_FUNCTOR(Ramp, x > 0.f ? x : 0.f)
PYCA_UNARY_FUNCTOR(Sgn, x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f))
PYCA_UNARY_FUNCTOR(Step, x > 0.f ? 1.f : (x < 0.f ? 0.f : 0.5f))
PYCA_UNARY_FUNCTOR(Sqr, x * x)
PYCA_UNARY_FUNCTOR(Sqrt, sqrtf(x))
PYCA_UNARY_FUNCTOR(Inv, 1.f / x)
PYCA_UNARY_FUNCTOR(Ceil, ceilf(x))
PYCA_UNARY_FUNCTOR(Floor, floorf(x))
PYCA_UNARY_FUNCTOR(Round, roundf(x))
PYCA_UNARY_FUNCTOR(Sin, sinf(x))
PYCA_UNARY_FUNCTOR(Asin, asinf(x))
PYCA_UNARY_FUNCTOR(Cos, cosf(x))
PYCA_UNARY_FUNCTOR(Acos, acosf(x))
PYCA_UNARY_FUNCTOR(Tan, tanf(x))
PYCA_UNARY_FUNCTOR(Atan, atanf(x))
PYCA_UNARY_FUNCTOR(Csc, 1.f / sinf(x))
PYCA_UNARY_FUNCTOR(Sec, 1.f / cosf(x))
PYCA_UNARY_FUNCTOR(Cot, 1.f / tanf(x))
#undef PYCA_UNARY_FUNCTOR

// ---- group B: binary pointwise (a op b); comparisons give 1.0 / 0.0 --------

#define PYCA_BINARY_FUNCTOR(NAME, EXPR) \
  struct NAME {                           \
    PYCA_HOSTDEVICE float operator()(float a, float b) const { return EXPR; } \
  };
PYCA_BINARY_FUNCTOR(Add, a + b)
PYCA_BINARY_FUNCTOR(Sub, a - b)
PYCA_BINARY_FUNCTOR(Mul, a * b)
PYCA_BINARY_FUNCTOR(Div, a / b)
PYCA_BINARY_FUNCTOR(Max, a > b ? a : b)
PYCA_BINARY_FUNCTOR(Min, a < b ? a : b)
PYCA_BINARY_FUNCTOR(Atan2, atan2f(a, b))
PYCA_BINARY_FUNCTOR(GT, a > b ? 1.f : 0.f)
PYCA_BINARY_FUNCTOR(GTE, a >= b ? 1.f : 0.f)
PYCA_BINARY_FUNCTOR(EQ, a == b ? 1.f : 0.f)
PYCA_BINARY_FUNCTOR(NEQ, a != b ? 1.f : 0.f)
PYCA_BINARY_FUNCTOR(LT, a < b ? 1.f : 0.f)
PYCA_BINARY_FUNCTOR(LTE, a <= b ? 1.f : 0.f)
// group C, two arrays
PYCA_BINARY_FUNCTOR(AbsDiff, fabsf(a - b))
PYCA_BINARY_FUNCTOR(SqrDiff, (a - b) * (a - b))
#undef PYCA_BINARY_FUNCTOR

// ---- group C: fused arithmetic --------------------------------------------
// Names read left to right; `_` separates an outer operation. Constants are
// members, arrays are call arguments in the operator's argument order.

#define PYCA_TERNARY_FUNCTOR(NAME, EXPR) \
  struct NAME {                            \
    PYCA_HOSTDEVICE float operator()(float a, float b, float c) const { return EXPR; } \
  };
PYCA_TERNARY_FUNCTOR(MulMul, a * b * c)
PYCA_TERNARY_FUNCTOR(MulAdd, a * b + c)
PYCA_TERNARY_FUNCTOR(MulSub, a * b - c)
PYCA_TERNARY_FUNCTOR(AddMul, (a + b) * c)
PYCA_TERNARY_FUNCTOR(AddDiv, (a + b) / c)
PYCA_TERNARY_FUNCTOR(SubMul, (a - b) * c)
PYCA_TERNARY_FUNCTOR(SubDiv, (a - b) / c)
PYCA_TERNARY_FUNCTOR(Add_Mul, a + b * c)
PYCA_TERNARY_FUNCTOR(Sub_Mul, a - b * c)
#undef PYCA_TERNARY_FUNCTOR

/// a + (b + c) * k, and its sign variants: k is the constant.
#define PYCA_TERNARY_K_FUNCTOR(NAME, EXPR) \
  struct NAME {                              \
    float k;                                 \
    PYCA_HOSTDEVICE float operator()(float a, float b, float c) const { return EXPR; } \
  };
PYCA_TERNARY_K_FUNCTOR(Add_AddMulC, a + (b + c) * k)
PYCA_TERNARY_K_FUNCTOR(Add_SubMulC, a + (b - c) * k)
PYCA_TERNARY_K_FUNCTOR(Sub_AddMulC, a - (b + c) * k)
PYCA_TERNARY_K_FUNCTOR(Sub_SubMulC, a - (b - c) * k)
PYCA_TERNARY_K_FUNCTOR(Add_MulMulC, a + b * c * k)
PYCA_TERNARY_K_FUNCTOR(Sub_MulMulC, a - b * c * k)
#undef PYCA_TERNARY_K_FUNCTOR

/// Two arrays and one constant k.
#define PYCA_BINARY_K_FUNCTOR(NAME, EXPR) \
  struct NAME {                             \
    float k;                                \
    PYCA_HOSTDEVICE float operator()(float a, float b) const { return EXPR; } \
  };
PYCA_BINARY_K_FUNCTOR(AddMulC, (a + b) * k)
PYCA_BINARY_K_FUNCTOR(SubMulC, (a - b) * k)
PYCA_BINARY_K_FUNCTOR(MulMulC, a * b * k)
PYCA_BINARY_K_FUNCTOR(Add_MulC, a + b * k)
PYCA_BINARY_K_FUNCTOR(MulCAdd, a * k + b)
PYCA_BINARY_K_FUNCTOR(MulCSub, a * k - b)
#undef PYCA_BINARY_K_FUNCTOR

/// a * ca + b * cb
struct MulC_Add_MulC {
  float ca, cb;
  PYCA_HOSTDEVICE float operator()(float a, float b) const { return a * ca + b * cb; }
};

/// a * p + q
struct MulCAddC {
  float p, q;
  PYCA_HOSTDEVICE float operator()(float a) const { return a * p + q; }
};

/// (a + p) * q
struct AddCMulC {
  float p, q;
  PYCA_HOSTDEVICE float operator()(float a) const { return (a + p) * q; }
};

/// (a + p) * q + r
struct AddCMulCAddC {
  float p, q, r;
  PYCA_HOSTDEVICE float operator()(float a) const { return (a + p) * q + r; }
};

/// a^c
struct PowC {
  float c;
  PYCA_HOSTDEVICE float operator()(float a) const { return powf(a, c); }
};

// ---- group D: thresholds -----------------------------------------------------

/// Soft threshold: max(x - c, 0) + min(x + c, 0).
struct Shrink {
  float c;
  PYCA_HOSTDEVICE float operator()(float x) const {
    return (x - c > 0.f ? x - c : 0.f) + (x + c < 0.f ? x + c : 0.f);
  }
};

/// Huber-like |x|: |x| - eps/2 beyond eps, x^2 / (2 eps) inside.
struct SoftAbs {
  float eps;
  PYCA_HOSTDEVICE float operator()(float x) const {
    const float ax = fabsf(x);
    return ax > eps ? ax - 0.5f * eps : x * x / (2.f * eps);
  }
};

/// Linear ramp from -1 to 1 over [-eps, eps].
struct SoftSgn {
  float eps;
  PYCA_HOSTDEVICE float operator()(float x) const {
    return x > eps ? 1.f : (x < -eps ? -1.f : x / eps);
  }
};

// ---- index functors: several arrays per voxel (launched by forEach) --------

/// Shrinks the length of each vector of a field by eps (zero below eps).
/// Reads all three components before writing, so in place is safe.
struct ShrinkVec {
  float eps;
  float *ox, *oy, *oz;
  const float *ix, *iy, *iz;
  PYCA_HOSTDEVICE void operator()(size_t i) const {
    const float x = ix[i], y = iy[i], z = iz[i];
    const float len = sqrtf(x * x + y * y + z * z);
    const float s = len > eps ? (len - eps) / len : 0.f;
    ox[i] = x * s;
    oy[i] = y * s;
    oz[i] = z * s;
  }
};

// ---- reduction maps: float inputs -> double term -------------------------

/// term = a
struct RedIdentity {
  static constexpr bool kFloatTerms = true;  // every term is a float value
  PYCA_HOSTDEVICE double operator()(float a) const { return double(a); }
};

/// term = a^2 (exact in double)
struct RedSquare {
  PYCA_HOSTDEVICE double operator()(float a) const { return double(a) * double(a); }
};

/// term = |a| (L1 with a sum, LInf with a max)
struct RedAbs {
  static constexpr bool kFloatTerms = true;
  PYCA_HOSTDEVICE double operator()(float a) const { return double(fabsf(a)); }
};

/// term = a * b (exact in double; Dot)
struct RedProduct {
  PYCA_HOSTDEVICE double operator()(float a, float b) const { return double(a) * double(b); }
};

}  // namespace kern
}  // namespace PyCA

#endif
