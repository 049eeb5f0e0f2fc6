// MemOpers.h -- the legacy raw-array operators: MemOpers<mode, T> and the
// matching PyCA::Opers templates on plain pointers.
//
// Every operator works on n consecutive elements. `mode` picks the back end
// at compile time, as in the legacy library:
//   EXEC_CPU        host (or pinned) pointers, OpenMP loop;
//   EXEC_GPU        device pointers, CUDA kernel; a constant `c` is a host
//                   value unless onDev is true, then &c is a device address;
//   EXEC_GPU_PARAM  as EXEC_GPU, with every constant read from device memory.
// In a CPU-only build the GPU modes throw PyCAException "Error, GPU code not
// compiled". The pointers are not checked against the mode (a host pointer
// passed to EXEC_GPU is a CUDA error, a device pointer passed to EXEC_CPU a
// crash, as in the legacy); a null pointer with n > 0 throws PyCAException.
//
// The arithmetic is the one of the Image3D operators (IOpers.h): the same
// per-element functors and launchers. T is float only: MemOpers<mode, int>
// does not compile (static_assert).
//
// Conventions: outputs first; `_I` = in place (the first argument is input
// and output); `C` = constant operand (also overloaded under the plain name,
// e.g. Add(a_o, a_i, c, n)). In-place calls (a_o == a_i) are fine for every
// elementwise operator and ReverseOrder; ShiftCoordinate refuses them.
#ifndef __PYCA_MEM_OPERS_H__
#define __PYCA_MEM_OPERS_H__

#include <cstddef>
#include <type_traits>

#include "estream.h"
#include "pycaConst.h"

namespace PyCA {

/// Static operators on raw arrays of n elements (legacy MemOpers).
template <int mode, typename T>
class MemOpers {
  static_assert(std::is_same<T, float>::value, "MemOpers is provided for T = float only");
  static_assert(mode == EXEC_CPU || mode == EXEC_GPU || mode == EXEC_GPU_PARAM,
                "mode must be EXEC_CPU, EXEC_GPU or EXEC_GPU_PARAM");

 public:
  /// The class that executes (legacy: the CPU or GPU executor); this one.
  typedef MemOpers MemOpersExec;
  enum { exec_mode = mode };

  // ---- copies and fills ------------------------------------------------------
  /// a_o = a_i.
  static void Copy(T* a_o, const T* a_i, size_t n, StreamT st = nullptr);
  /// a_o = c.
  static void SetMem(T* a_o, const T& c, size_t n, StreamT st = nullptr, bool onDev = false);
  /// a_o[i] = i.
  static void SetLinear(T* a_o, size_t n, StreamT st = nullptr);
  /// a_o[i] = n - 1 - i.
  static void SetLinearDown(T* a_o, size_t n, StreamT st = nullptr);
  /// a_o[i] = a_i[n - 1 - i]; a_o == a_i reverses in place.
  static void ReverseOrder(T* a_o, const T* a_i, size_t n, StreamT st = nullptr);
  /// Cyclic axis permutation of a sizeX x sizeY x sizeZ volume (x fastest):
  /// dir true: a_o[z + sZ*(x + sX*y)] = a_i[x + sX*(y + sY*z)] (a_o is
  /// sizeZ x sizeX x sizeY); dir false: a_o[y + sY*(z + sZ*x)] = a_i[x, y, z]
  /// (a_o is sizeY x sizeZ x sizeX). Throws PyCAException if a_o == a_i.
  static void ShiftCoordinate(T* a_o, const T* a_i, size_t sizeX, size_t sizeY, size_t sizeZ,
                              bool dir, StreamT st = nullptr);

  // ---- unary: OP(a_o, a_i, n) a_o = f(a_i); OP_I(a_o, n) a_o = f(a_o) ----------
#define PYCA_DECLARE_MEM_UNARY(OP)                                      \
  static void OP(T* a_o, const T* a_i, size_t n, StreamT st = nullptr); \
  static void OP##_I(T* a_o, size_t n, StreamT st = nullptr);
  PYCA_DECLARE_MEM_UNARY(Abs)    // |x|
  PYCA_DECLARE_MEM_UNARY(Cube)   // x^3
  PYCA_DECLARE_MEM_UNARY(Exp)    // e^x
  PYCA_DECLARE_MEM_UNARY(Log)    // ln x
  PYCA_DECLARE_MEM_UNARY(Neg)    // -x
  PYCA_DECLARE_MEM_UNARY(Ramp)   // max(x, 0)
  PYCA_DECLARE_MEM_UNARY(Sgn)    // -1, 0, 1
  PYCA_DECLARE_MEM_UNARY(Step)   // 0 below 0, 0.5 at 0, 1 above
  PYCA_DECLARE_MEM_UNARY(Sqr)    // x^2
  PYCA_DECLARE_MEM_UNARY(Sqrt)   // sqrt(x)
  PYCA_DECLARE_MEM_UNARY(Inv)    // 1/x
  PYCA_DECLARE_MEM_UNARY(Ceil)
  PYCA_DECLARE_MEM_UNARY(Floor)
  PYCA_DECLARE_MEM_UNARY(Round)  // half away from zero
  PYCA_DECLARE_MEM_UNARY(Sin)
  PYCA_DECLARE_MEM_UNARY(Asin)
  PYCA_DECLARE_MEM_UNARY(Cos)
  PYCA_DECLARE_MEM_UNARY(Acos)
  PYCA_DECLARE_MEM_UNARY(Tan)
  PYCA_DECLARE_MEM_UNARY(Atan)
  PYCA_DECLARE_MEM_UNARY(Csc)    // 1/sin x
  PYCA_DECLARE_MEM_UNARY(Sec)    // 1/cos x
  PYCA_DECLARE_MEM_UNARY(Cot)    // 1/tan x
#undef PYCA_DECLARE_MEM_UNARY

  // ---- binary with an array or a constant --------------------------------------
  // OP(a_o, a_i, a_i1, n): a_o = a_i op a_i1; OP(a_o, a_i, c, n) and OPC: a_o =
  // a_i op c; OP_I(a_o, a_i, n) / OP_I(a_o, c, n) / OPC_I: a_o = a_o op (a_i or c).
#define PYCA_DECLARE_MEM_BINARY(OP)                                                             \
  static void OP(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr);          \
  static void OP(T* a_o, const T* a_i, const T& c, size_t n, StreamT st = nullptr,              \
                 bool onDev = false);                                                           \
  static void OP##_I(T* a_o, const T* a_i, size_t n, StreamT st = nullptr);                     \
  static void OP##_I(T* a_o, const T& c, size_t n, StreamT st = nullptr, bool onDev = false);   \
  static void OP##C(T* a_o, const T* a_i, const T& c, size_t n, StreamT st = nullptr,           \
                    bool onDev = false);                                                        \
  static void OP##C_I(T* a_o, const T& c, size_t n, StreamT st = nullptr, bool onDev = false);
  PYCA_DECLARE_MEM_BINARY(Add)
  PYCA_DECLARE_MEM_BINARY(Sub)
  PYCA_DECLARE_MEM_BINARY(Mul)
  PYCA_DECLARE_MEM_BINARY(Div)
  PYCA_DECLARE_MEM_BINARY(Max)
  PYCA_DECLARE_MEM_BINARY(Min)
  PYCA_DECLARE_MEM_BINARY(Pow)    // a^b (powf)
  PYCA_DECLARE_MEM_BINARY(Atan2)  // atan2(a, b)
  PYCA_DECLARE_MEM_BINARY(GT)     // comparisons: 1.0 where true, 0.0 elsewhere
  PYCA_DECLARE_MEM_BINARY(GTE)
  PYCA_DECLARE_MEM_BINARY(EQ)
  PYCA_DECLARE_MEM_BINARY(NEQ)
  PYCA_DECLARE_MEM_BINARY(LT)
  PYCA_DECLARE_MEM_BINARY(LTE)
#undef PYCA_DECLARE_MEM_BINARY

  // ---- fused arithmetic (names as in IOpers.h) -----------------------------------
  /// |a_i - a_i1|
  static void AbsDiff(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr);
  static void AbsDiff_I(T* a_o, const T* a_i, size_t n, StreamT st = nullptr);
  /// (a_i - a_i1)^2
  static void SqrDiff(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr);
  static void SqrDiff_I(T* a_o, const T* a_i, size_t n, StreamT st = nullptr);

  // Three arrays: OP(a_o, a_i, a_i1, a_i2, n), OP_I(a_o, a_i, a_i1, n).
#define PYCA_DECLARE_MEM_TERNARY(OP)                                                            \
  static void OP(T* a_o, const T* a_i, const T* a_i1, const T* a_i2, size_t n,                  \
                 StreamT st = nullptr);                                                         \
  static void OP##_I(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr);
  PYCA_DECLARE_MEM_TERNARY(MulMul)   // a * b * c
  PYCA_DECLARE_MEM_TERNARY(MulAdd)   // a * b + c
  PYCA_DECLARE_MEM_TERNARY(MulSub)   // a * b - c
  PYCA_DECLARE_MEM_TERNARY(AddMul)   // (a + b) * c
  PYCA_DECLARE_MEM_TERNARY(AddDiv)   // (a + b) / c
  PYCA_DECLARE_MEM_TERNARY(SubMul)   // (a - b) * c
  PYCA_DECLARE_MEM_TERNARY(SubDiv)   // (a - b) / c
  PYCA_DECLARE_MEM_TERNARY(Add_Mul)  // a + b * c
  PYCA_DECLARE_MEM_TERNARY(Sub_Mul)  // a - b * c
#undef PYCA_DECLARE_MEM_TERNARY

  // Three arrays and a constant: OP(a_o, a_i, a_i1, a_i2, c, n), OP_I(a_o, a_i, a_i1, c, n).
#define PYCA_DECLARE_MEM_TERNARY_C(OP)                                                          \
  static void OP(T* a_o, const T* a_i, const T* a_i1, const T* a_i2, const T& c, size_t n,      \
                 StreamT st = nullptr, bool onDev = false);                                     \
  static void OP##_I(T* a_o, const T* a_i, const T* a_i1, const T& c, size_t n,                 \
                     StreamT st = nullptr, bool onDev = false);
  PYCA_DECLARE_MEM_TERNARY_C(Add_AddMulC)  // a + (b + c) * k
  PYCA_DECLARE_MEM_TERNARY_C(Add_SubMulC)  // a + (b - c) * k
  PYCA_DECLARE_MEM_TERNARY_C(Add_MulMulC)  // a + b * c * k
  PYCA_DECLARE_MEM_TERNARY_C(Sub_AddMulC)  // a - (b + c) * k
  PYCA_DECLARE_MEM_TERNARY_C(Sub_SubMulC)  // a - (b - c) * k
  PYCA_DECLARE_MEM_TERNARY_C(Sub_MulMulC)  // a - b * c * k
#undef PYCA_DECLARE_MEM_TERNARY_C

  // Two arrays and a constant: OP(a_o, a_i, a_i1, c, n), OP_I(a_o, a_i, c, n).
#define PYCA_DECLARE_MEM_BINARY_C(OP)                                                           \
  static void OP(T* a_o, const T* a_i, const T* a_i1, const T& c, size_t n,                     \
                 StreamT st = nullptr, bool onDev = false);                                     \
  static void OP##_I(T* a_o, const T* a_i, const T& c, size_t n, StreamT st = nullptr,          \
                     bool onDev = false);
  PYCA_DECLARE_MEM_BINARY_C(AddMulC)   // (a + b) * c
  PYCA_DECLARE_MEM_BINARY_C(SubMulC)   // (a - b) * c
  PYCA_DECLARE_MEM_BINARY_C(MulMulC)   // a * b * c
  PYCA_DECLARE_MEM_BINARY_C(Add_MulC)  // a + b * c
#undef PYCA_DECLARE_MEM_BINARY_C

  /// a_i * c + a_i1 (MulCAdd), a_i * c - a_i1 (MulCSub); _I: a_o * c +- a_i.
  static void MulCAdd(T* a_o, const T* a_i, const T& c, const T* a_i1, size_t n,
                      StreamT st = nullptr, bool onDev = false);
  static void MulCAdd_I(T* a_o, const T& c, const T* a_i, size_t n, StreamT st = nullptr,
                        bool onDev = false);
  static void MulCSub(T* a_o, const T* a_i, const T& c, const T* a_i1, size_t n,
                      StreamT st = nullptr, bool onDev = false);
  static void MulCSub_I(T* a_o, const T& c, const T* a_i, size_t n, StreamT st = nullptr,
                        bool onDev = false);
  /// a_i * a + b
  static void MulCAddC(T* a_o, const T* a_i, const T& a, const T& b, size_t n,
                       StreamT st = nullptr, bool onDev = false);
  static void MulCAddC_I(T* a_o, const T& a, const T& b, size_t n, StreamT st = nullptr,
                         bool onDev = false);
  /// (a_i + a) * b
  static void AddCMulC(T* a_o, const T* a_i, const T& a, const T& b, size_t n,
                       StreamT st = nullptr, bool onDev = false);
  static void AddCMulC_I(T* a_o, const T& a, const T& b, size_t n, StreamT st = nullptr,
                         bool onDev = false);
  /// a_i * a + a_i1 * b
  static void MulC_Add_MulC(T* a_o, const T* a_i, const T& a, const T* a_i1, const T& b, size_t n,
                            StreamT st = nullptr, bool onDev = false);
  static void MulC_Add_MulC_I(T* a_o, const T& a, const T* a_i, const T& b, size_t n,
                              StreamT st = nullptr, bool onDev = false);
  /// (a_i + a) * b + c
  static void AddCMulCAddC(T* a_o, const T* a_i, const T& a, const T& b, const T& c, size_t n,
                           StreamT st = nullptr, bool onDev = false);
  static void AddCMulCAddC_I(T* a_o, const T& a, const T& b, const T& c, size_t n,
                             StreamT st = nullptr, bool onDev = false);
};

namespace Opers {

// Raw-pointer operators: Opers::Add<EXEC_CPU>(a_o, a_i, a_i1, n) is
// MemOpers<EXEC_CPU, T>::Add(a_o, a_i, a_i1, n), for every operator above.
// The mode is always given explicitly, so these never compete with the
// Image3D/Field3D overloads.

#define PYCA_MEM_FORWARD(OP, PARAMS, ARGS)     \
  template <int mode, typename T>              \
  inline void OP PARAMS {                      \
    MemOpers<mode, T>::OP ARGS;                \
  }

PYCA_MEM_FORWARD(Copy, (T* a_o, const T* a_i, size_t n, StreamT st = nullptr), (a_o, a_i, n, st))
PYCA_MEM_FORWARD(SetMem, (T* a_o, const T& c, size_t n, StreamT st = nullptr, bool onDev = false),
                 (a_o, c, n, st, onDev))
PYCA_MEM_FORWARD(SetLinear, (T* a_o, size_t n, StreamT st = nullptr), (a_o, n, st))
PYCA_MEM_FORWARD(SetLinearDown, (T* a_o, size_t n, StreamT st = nullptr), (a_o, n, st))
PYCA_MEM_FORWARD(ReverseOrder, (T* a_o, const T* a_i, size_t n, StreamT st = nullptr),
                 (a_o, a_i, n, st))
PYCA_MEM_FORWARD(ShiftCoordinate,
                 (T* a_o, const T* a_i, size_t sizeX, size_t sizeY, size_t sizeZ, bool dir,
                  StreamT st = nullptr),
                 (a_o, a_i, sizeX, sizeY, sizeZ, dir, st))

#define PYCA_MEM_FORWARD_UNARY(OP)                                                     \
  PYCA_MEM_FORWARD(OP, (T* a_o, const T* a_i, size_t n, StreamT st = nullptr),          \
                   (a_o, a_i, n, st))                                                   \
  PYCA_MEM_FORWARD(OP##_I, (T* a_o, size_t n, StreamT st = nullptr), (a_o, n, st))
PYCA_MEM_FORWARD_UNARY(Abs)
PYCA_MEM_FORWARD_UNARY(Cube)
PYCA_MEM_FORWARD_UNARY(Exp)
PYCA_MEM_FORWARD_UNARY(Log)
PYCA_MEM_FORWARD_UNARY(Neg)
PYCA_MEM_FORWARD_UNARY(Ramp)
PYCA_MEM_FORWARD_UNARY(Sgn)
PYCA_MEM_FORWARD_UNARY(Step)
PYCA_MEM_FORWARD_UNARY(Sqr)
PYCA_MEM_FORWARD_UNARY(Sqrt)
PYCA_MEM_FORWARD_UNARY(Inv)
PYCA_MEM_FORWARD_UNARY(Ceil)
PYCA_MEM_FORWARD_UNARY(Floor)
PYCA_MEM_FORWARD_UNARY(Round)
PYCA_MEM_FORWARD_UNARY(Sin)
PYCA_MEM_FORWARD_UNARY(Asin)
PYCA_MEM_FORWARD_UNARY(Cos)
PYCA_MEM_FORWARD_UNARY(Acos)
PYCA_MEM_FORWARD_UNARY(Tan)
PYCA_MEM_FORWARD_UNARY(Atan)
PYCA_MEM_FORWARD_UNARY(Csc)
PYCA_MEM_FORWARD_UNARY(Sec)
PYCA_MEM_FORWARD_UNARY(Cot)
#undef PYCA_MEM_FORWARD_UNARY

#define PYCA_MEM_FORWARD_BINARY(OP)                                                          \
  PYCA_MEM_FORWARD(OP, (T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr), \
                   (a_o, a_i, a_i1, n, st))                                                  \
  PYCA_MEM_FORWARD(OP,                                                                       \
                   (T* a_o, const T* a_i, const T& c, size_t n, StreamT st = nullptr,         \
                    bool onDev = false),                                                     \
                   (a_o, a_i, c, n, st, onDev))                                              \
  PYCA_MEM_FORWARD(OP##_I, (T* a_o, const T* a_i, size_t n, StreamT st = nullptr),           \
                   (a_o, a_i, n, st))                                                        \
  PYCA_MEM_FORWARD(OP##_I,                                                                   \
                   (T* a_o, const T& c, size_t n, StreamT st = nullptr, bool onDev = false),  \
                   (a_o, c, n, st, onDev))                                                   \
  PYCA_MEM_FORWARD(OP##C,                                                                    \
                   (T* a_o, const T* a_i, const T& c, size_t n, StreamT st = nullptr,         \
                    bool onDev = false),                                                     \
                   (a_o, a_i, c, n, st, onDev))                                              \
  PYCA_MEM_FORWARD(OP##C_I,                                                                  \
                   (T* a_o, const T& c, size_t n, StreamT st = nullptr, bool onDev = false),  \
                   (a_o, c, n, st, onDev))
PYCA_MEM_FORWARD_BINARY(Add)
PYCA_MEM_FORWARD_BINARY(Sub)
PYCA_MEM_FORWARD_BINARY(Mul)
PYCA_MEM_FORWARD_BINARY(Div)
PYCA_MEM_FORWARD_BINARY(Max)
PYCA_MEM_FORWARD_BINARY(Min)
PYCA_MEM_FORWARD_BINARY(Pow)
PYCA_MEM_FORWARD_BINARY(Atan2)
PYCA_MEM_FORWARD_BINARY(GT)
PYCA_MEM_FORWARD_BINARY(GTE)
PYCA_MEM_FORWARD_BINARY(EQ)
PYCA_MEM_FORWARD_BINARY(NEQ)
PYCA_MEM_FORWARD_BINARY(LT)
PYCA_MEM_FORWARD_BINARY(LTE)
#undef PYCA_MEM_FORWARD_BINARY

PYCA_MEM_FORWARD(AbsDiff, (T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr),
                 (a_o, a_i, a_i1, n, st))
PYCA_MEM_FORWARD(AbsDiff_I, (T* a_o, const T* a_i, size_t n, StreamT st = nullptr), (a_o, a_i, n, st))
PYCA_MEM_FORWARD(SqrDiff, (T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr),
                 (a_o, a_i, a_i1, n, st))
PYCA_MEM_FORWARD(SqrDiff_I, (T* a_o, const T* a_i, size_t n, StreamT st = nullptr), (a_o, a_i, n, st))

#define PYCA_MEM_FORWARD_TERNARY(OP)                                                          \
  PYCA_MEM_FORWARD(OP,                                                                        \
                   (T* a_o, const T* a_i, const T* a_i1, const T* a_i2, size_t n,              \
                    StreamT st = nullptr),                                                    \
                   (a_o, a_i, a_i1, a_i2, n, st))                                             \
  PYCA_MEM_FORWARD(OP##_I, (T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st = nullptr), \
                   (a_o, a_i, a_i1, n, st))
PYCA_MEM_FORWARD_TERNARY(MulMul)
PYCA_MEM_FORWARD_TERNARY(MulAdd)
PYCA_MEM_FORWARD_TERNARY(MulSub)
PYCA_MEM_FORWARD_TERNARY(AddMul)
PYCA_MEM_FORWARD_TERNARY(AddDiv)
PYCA_MEM_FORWARD_TERNARY(SubMul)
PYCA_MEM_FORWARD_TERNARY(SubDiv)
PYCA_MEM_FORWARD_TERNARY(Add_Mul)
PYCA_MEM_FORWARD_TERNARY(Sub_Mul)
#undef PYCA_MEM_FORWARD_TERNARY

#define PYCA_MEM_FORWARD_TERNARY_C(OP)                                                        \
  PYCA_MEM_FORWARD(OP,                                                                        \
                   (T* a_o, const T* a_i, const T* a_i1, const T* a_i2, const T& c, size_t n,  \
                    StreamT st = nullptr, bool onDev = false),                                \
                   (a_o, a_i, a_i1, a_i2, c, n, st, onDev))                                   \
  PYCA_MEM_FORWARD(OP##_I,                                                                    \
                   (T* a_o, const T* a_i, const T* a_i1, const T& c, size_t n,                 \
                    StreamT st = nullptr, bool onDev = false),                                \
                   (a_o, a_i, a_i1, c, n, st, onDev))
PYCA_MEM_FORWARD_TERNARY_C(Add_AddMulC)
PYCA_MEM_FORWARD_TERNARY_C(Add_SubMulC)
PYCA_MEM_FORWARD_TERNARY_C(Add_MulMulC)
PYCA_MEM_FORWARD_TERNARY_C(Sub_AddMulC)
PYCA_MEM_FORWARD_TERNARY_C(Sub_SubMulC)
PYCA_MEM_FORWARD_TERNARY_C(Sub_MulMulC)
#undef PYCA_MEM_FORWARD_TERNARY_C

#define PYCA_MEM_FORWARD_BINARY_C(OP)                                                         \
  PYCA_MEM_FORWARD(OP,                                                                        \
                   (T* a_o, const T* a_i, const T* a_i1, const T& c, size_t n,                 \
                    StreamT st = nullptr, bool onDev = false),                                \
                   (a_o, a_i, a_i1, c, n, st, onDev))                                         \
  PYCA_MEM_FORWARD(OP##_I,                                                                    \
                   (T* a_o, const T* a_i, const T& c, size_t n, StreamT st = nullptr,          \
                    bool onDev = false),                                                      \
                   (a_o, a_i, c, n, st, onDev))
PYCA_MEM_FORWARD_BINARY_C(AddMulC)
PYCA_MEM_FORWARD_BINARY_C(SubMulC)
PYCA_MEM_FORWARD_BINARY_C(MulMulC)
PYCA_MEM_FORWARD_BINARY_C(Add_MulC)
#undef PYCA_MEM_FORWARD_BINARY_C

PYCA_MEM_FORWARD(MulCAdd,
                 (T* a_o, const T* a_i, const T& c, const T* a_i1, size_t n, StreamT st = nullptr,
                  bool onDev = false),
                 (a_o, a_i, c, a_i1, n, st, onDev))
PYCA_MEM_FORWARD(MulCAdd_I,
                 (T* a_o, const T& c, const T* a_i, size_t n, StreamT st = nullptr, bool onDev = false),
                 (a_o, c, a_i, n, st, onDev))
PYCA_MEM_FORWARD(MulCSub,
                 (T* a_o, const T* a_i, const T& c, const T* a_i1, size_t n, StreamT st = nullptr,
                  bool onDev = false),
                 (a_o, a_i, c, a_i1, n, st, onDev))
PYCA_MEM_FORWARD(MulCSub_I,
                 (T* a_o, const T& c, const T* a_i, size_t n, StreamT st = nullptr, bool onDev = false),
                 (a_o, c, a_i, n, st, onDev))
PYCA_MEM_FORWARD(MulCAddC,
                 (T* a_o, const T* a_i, const T& a, const T& b, size_t n, StreamT st = nullptr,
                  bool onDev = false),
                 (a_o, a_i, a, b, n, st, onDev))
PYCA_MEM_FORWARD(MulCAddC_I,
                 (T* a_o, const T& a, const T& b, size_t n, StreamT st = nullptr, bool onDev = false),
                 (a_o, a, b, n, st, onDev))
PYCA_MEM_FORWARD(AddCMulC,
                 (T* a_o, const T* a_i, const T& a, const T& b, size_t n, StreamT st = nullptr,
                  bool onDev = false),
                 (a_o, a_i, a, b, n, st, onDev))
PYCA_MEM_FORWARD(AddCMulC_I,
                 (T* a_o, const T& a, const T& b, size_t n, StreamT st = nullptr, bool onDev = false),
                 (a_o, a, b, n, st, onDev))
PYCA_MEM_FORWARD(MulC_Add_MulC,
                 (T* a_o, const T* a_i, const T& a, const T* a_i1, const T& b, size_t n,
                  StreamT st = nullptr, bool onDev = false),
                 (a_o, a_i, a, a_i1, b, n, st, onDev))
PYCA_MEM_FORWARD(MulC_Add_MulC_I,
                 (T* a_o, const T& a, const T* a_i, const T& b, size_t n, StreamT st = nullptr,
                  bool onDev = false),
                 (a_o, a, a_i, b, n, st, onDev))
PYCA_MEM_FORWARD(AddCMulCAddC,
                 (T* a_o, const T* a_i, const T& a, const T& b, const T& c, size_t n,
                  StreamT st = nullptr, bool onDev = false),
                 (a_o, a_i, a, b, c, n, st, onDev))
PYCA_MEM_FORWARD(AddCMulCAddC_I,
                 (T* a_o, const T& a, const T& b, const T& c, size_t n, StreamT st = nullptr,
                  bool onDev = false),
                 (a_o, a, b, c, n, st, onDev))

#undef PYCA_MEM_FORWARD

}  // namespace Opers
}  // namespace PyCA

#endif
