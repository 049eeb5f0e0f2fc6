// Raw-array operators (MemOpers.h): each one is a launch of the functor its
// Image3D counterpart uses (PointwiseKernels.h), on the back end of `mode`;
// the few that are not elementwise are index functors (MemOpersKernels.h).
#include "MemOpers.h"

#include <limits>

#include "Elementwise.h"
#include "MemAlloc.h"
#include "MemOpersKernels.h"
#include "PointwiseKernels.h"
#include "conditionMacro.h"

namespace PyCA {

namespace {

using detail::EwArgs;

/// Throws "Error, GPU code not compiled" for the GPU modes of a CPU-only build.
template <int mode>
void requireBackEnd() {
#ifndef CUDA_ENABLED
  if (mode != EXEC_CPU) detail::throwGpuNotCompiled(__FILE__, __LINE__);
#endif
}

template <int mode>
constexpr MemoryType memTypeOf() {
  return mode == EXEC_CPU ? MEM_HOST : MEM_DEVICE;
}

/// The value of a constant argument: read from device memory in
/// EXEC_GPU_PARAM mode, or in EXEC_GPU mode with onDev.
template <int mode>
float constOf(const float& c, bool onDev) {
  requireBackEnd<mode>();
  if (mode == EXEC_GPU_PARAM || (mode == EXEC_GPU && onDev)) {
    float h = 0.f;
    CopyMemory(&h, MEM_HOST, &c, MEM_DEVICE, sizeof(float));
    return h;
  }
  return c;
}

template <class... P>
bool allNonNull(const P*... p) {
  return (... && (p != nullptr));
}

/// out[i] = op(in[0][i], ...) for i < n.
template <int mode, class Op, class... In>
void run(const Op& op, float* out, size_t n, StreamT st, const In*... in) {
  requireBackEnd<mode>();
  if (n == 0) return;
  PRECONDITION(allNonNull(out, in...), "MemOpers: null array pointer");
  detail::launch(memTypeOf<mode>(), op, EwArgs<sizeof...(In)>{out, {in...}, nullptr, n}, st);
}

/// fn(i) for i < n.
template <int mode, class Fn>
void runIndex(const Fn& fn, size_t n, StreamT st) {
  detail::forEach(memTypeOf<mode>(), fn, n, st);
}

}  // namespace

#define PYCA_MEM template <int mode, typename T>
#define PYCA_MEM_CLASS MemOpers<mode, T>

// ---- copies and fills ------------------------------------------------------

PYCA_MEM void PYCA_MEM_CLASS::Copy(T* a_o, const T* a_i, size_t n, StreamT st) {
  run<mode>(kern::Identity{}, a_o, n, st, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::SetMem(T* a_o, const T& c, size_t n, StreamT st, bool onDev) {
  run<mode>(kern::SetC{constOf<mode>(c, onDev)}, a_o, n, st);
}
PYCA_MEM void PYCA_MEM_CLASS::SetLinear(T* a_o, size_t n, StreamT st) {
  requireBackEnd<mode>();
  PRECONDITION(n == 0 || a_o, "MemOpers: null array pointer");
  runIndex<mode>(kern::MemLinear{a_o, n, false}, n, st);
}
PYCA_MEM void PYCA_MEM_CLASS::SetLinearDown(T* a_o, size_t n, StreamT st) {
  requireBackEnd<mode>();
  PRECONDITION(n == 0 || a_o, "MemOpers: null array pointer");
  runIndex<mode>(kern::MemLinear{a_o, n, true}, n, st);
}
PYCA_MEM void PYCA_MEM_CLASS::ReverseOrder(T* a_o, const T* a_i, size_t n, StreamT st) {
  requireBackEnd<mode>();
  PRECONDITION(n == 0 || (a_o && a_i), "MemOpers: null array pointer");
  runIndex<mode>(kern::MemReverse{a_o, a_i, n}, (n + 1) / 2, st);
}
PYCA_MEM void PYCA_MEM_CLASS::ShiftCoordinate(T* a_o, const T* a_i, size_t sizeX, size_t sizeY,
                                              size_t sizeZ, bool dir, StreamT st) {
  requireBackEnd<mode>();
  const size_t big = std::numeric_limits<size_t>::max();
  PRECONDITION(sizeX == 0 || sizeY == 0 || (sizeY <= big / sizeX && sizeZ <= big / (sizeX * sizeY)),
               "ShiftCoordinate: sizeX * sizeY * sizeZ overflows");
  const size_t n = sizeX * sizeY * sizeZ;
  if (n == 0) return;
  PRECONDITION(a_o && a_i, "MemOpers: null array pointer");
  PRECONDITION(a_o != a_i, "ShiftCoordinate cannot run in place (a_o == a_i)");
  runIndex<mode>(kern::MemShiftCoordinate{a_o, a_i, sizeX, sizeY, sizeZ, dir}, n, st);
}

// ---- unary -------------------------------------------------------------------

#define PYCA_MEM_UNARY(OP)                                                       \
  PYCA_MEM void PYCA_MEM_CLASS::OP(T* a_o, const T* a_i, size_t n, StreamT st) { \
    run<mode>(kern::OP{}, a_o, n, st, a_i);                                      \
  }                                                                              \
  PYCA_MEM void PYCA_MEM_CLASS::OP##_I(T* a_o, size_t n, StreamT st) {           \
    run<mode>(kern::OP{}, a_o, n, st, a_o);                                      \
  }
PYCA_MEM_UNARY(Abs)
PYCA_MEM_UNARY(Cube)
PYCA_MEM_UNARY(Exp)
PYCA_MEM_UNARY(Log)
PYCA_MEM_UNARY(Neg)
PYCA_MEM_UNARY(Ramp)
PYCA_MEM_UNARY(Sgn)
PYCA_MEM_UNARY(Step)
PYCA_MEM_UNARY(Sqr)
PYCA_MEM_UNARY(Sqrt)
PYCA_MEM_UNARY(Inv)
PYCA_MEM_UNARY(Ceil)
PYCA_MEM_UNARY(Floor)
PYCA_MEM_UNARY(Round)
PYCA_MEM_UNARY(Sin)
PYCA_MEM_UNARY(Asin)
PYCA_MEM_UNARY(Cos)
PYCA_MEM_UNARY(Acos)
PYCA_MEM_UNARY(Tan)
PYCA_MEM_UNARY(Atan)
PYCA_MEM_UNARY(Csc)
PYCA_MEM_UNARY(Sec)
PYCA_MEM_UNARY(Cot)
#undef PYCA_MEM_UNARY

// ---- binary ------------------------------------------------------------------
// The array forms run kern::OP, every constant form kern::WithC<kern::OP>.

#define PYCA_MEM_BINARY_CONST_FORMS(OP)                                                        \
  PYCA_MEM void PYCA_MEM_CLASS::OP(T* a_o, const T* a_i, const T& c, size_t n, StreamT st,     \
                                   bool onDev) {                                               \
    run<mode>(kern::WithC<kern::OP>{{}, constOf<mode>(c, onDev)}, a_o, n, st, a_i);            \
  }                                                                                            \
  PYCA_MEM void PYCA_MEM_CLASS::OP##_I(T* a_o, const T& c, size_t n, StreamT st, bool onDev) { \
    run<mode>(kern::WithC<kern::OP>{{}, constOf<mode>(c, onDev)}, a_o, n, st, a_o);            \
  }                                                                                            \
  PYCA_MEM void PYCA_MEM_CLASS::OP##C(T* a_o, const T* a_i, const T& c, size_t n, StreamT st,  \
                                      bool onDev) {                                            \
    OP(a_o, a_i, c, n, st, onDev);                                                             \
  }                                                                                            \
  PYCA_MEM void PYCA_MEM_CLASS::OP##C_I(T* a_o, const T& c, size_t n, StreamT st, bool onDev) { \
    OP##_I(a_o, c, n, st, onDev);                                                              \
  }
#define PYCA_MEM_BINARY(OP)                                                                     \
  PYCA_MEM void PYCA_MEM_CLASS::OP(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st) { \
    run<mode>(kern::OP{}, a_o, n, st, a_i, a_i1);                                               \
  }                                                                                             \
  PYCA_MEM void PYCA_MEM_CLASS::OP##_I(T* a_o, const T* a_i, size_t n, StreamT st) {            \
    run<mode>(kern::OP{}, a_o, n, st, a_o, a_i);                                                \
  }                                                                                             \
  PYCA_MEM_BINARY_CONST_FORMS(OP)
PYCA_MEM_BINARY(Add)
PYCA_MEM_BINARY(Sub)
PYCA_MEM_BINARY(Mul)
PYCA_MEM_BINARY(Div)
PYCA_MEM_BINARY(Max)
PYCA_MEM_BINARY(Min)
PYCA_MEM_BINARY(Atan2)
PYCA_MEM_BINARY(GT)
PYCA_MEM_BINARY(GTE)
PYCA_MEM_BINARY(EQ)
PYCA_MEM_BINARY(NEQ)
PYCA_MEM_BINARY(LT)
PYCA_MEM_BINARY(LTE)
#undef PYCA_MEM_BINARY
#undef PYCA_MEM_BINARY_CONST_FORMS

// Pow: the constant forms are PowC's functor; the array forms an index functor.
PYCA_MEM void PYCA_MEM_CLASS::Pow(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st) {
  requireBackEnd<mode>();
  PRECONDITION(n == 0 || (a_o && a_i && a_i1), "MemOpers: null array pointer");
  runIndex<mode>(kern::MemPow{a_o, a_i, a_i1}, n, st);
}
PYCA_MEM void PYCA_MEM_CLASS::Pow_I(T* a_o, const T* a_i, size_t n, StreamT st) {
  Pow(a_o, a_o, a_i, n, st);
}
PYCA_MEM void PYCA_MEM_CLASS::Pow(T* a_o, const T* a_i, const T& c, size_t n, StreamT st, bool onDev) {
  run<mode>(kern::PowC{constOf<mode>(c, onDev)}, a_o, n, st, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::Pow_I(T* a_o, const T& c, size_t n, StreamT st, bool onDev) {
  run<mode>(kern::PowC{constOf<mode>(c, onDev)}, a_o, n, st, a_o);
}
PYCA_MEM void PYCA_MEM_CLASS::PowC(T* a_o, const T* a_i, const T& c, size_t n, StreamT st, bool onDev) {
  Pow(a_o, a_i, c, n, st, onDev);
}
PYCA_MEM void PYCA_MEM_CLASS::PowC_I(T* a_o, const T& c, size_t n, StreamT st, bool onDev) {
  Pow_I(a_o, c, n, st, onDev);
}

// ---- fused -------------------------------------------------------------------

PYCA_MEM void PYCA_MEM_CLASS::AbsDiff(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st) {
  run<mode>(kern::AbsDiff{}, a_o, n, st, a_i, a_i1);
}
PYCA_MEM void PYCA_MEM_CLASS::AbsDiff_I(T* a_o, const T* a_i, size_t n, StreamT st) {
  run<mode>(kern::AbsDiff{}, a_o, n, st, a_o, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::SqrDiff(T* a_o, const T* a_i, const T* a_i1, size_t n, StreamT st) {
  run<mode>(kern::SqrDiff{}, a_o, n, st, a_i, a_i1);
}
PYCA_MEM void PYCA_MEM_CLASS::SqrDiff_I(T* a_o, const T* a_i, size_t n, StreamT st) {
  run<mode>(kern::SqrDiff{}, a_o, n, st, a_o, a_i);
}

#define PYCA_MEM_TERNARY(OP)                                                                 \
  PYCA_MEM void PYCA_MEM_CLASS::OP(T* a_o, const T* a_i, const T* a_i1, const T* a_i2,       \
                                   size_t n, StreamT st) {                                   \
    run<mode>(kern::OP{}, a_o, n, st, a_i, a_i1, a_i2);                                      \
  }                                                                                          \
  PYCA_MEM void PYCA_MEM_CLASS::OP##_I(T* a_o, const T* a_i, const T* a_i1, size_t n,        \
                                       StreamT st) {                                         \
    run<mode>(kern::OP{}, a_o, n, st, a_o, a_i, a_i1);                                       \
  }
PYCA_MEM_TERNARY(MulMul)
PYCA_MEM_TERNARY(MulAdd)
PYCA_MEM_TERNARY(MulSub)
PYCA_MEM_TERNARY(AddMul)
PYCA_MEM_TERNARY(AddDiv)
PYCA_MEM_TERNARY(SubMul)
PYCA_MEM_TERNARY(SubDiv)
PYCA_MEM_TERNARY(Add_Mul)
PYCA_MEM_TERNARY(Sub_Mul)
#undef PYCA_MEM_TERNARY

#define PYCA_MEM_TERNARY_C(OP)                                                               \
  PYCA_MEM void PYCA_MEM_CLASS::OP(T* a_o, const T* a_i, const T* a_i1, const T* a_i2,       \
                                   const T& c, size_t n, StreamT st, bool onDev) {           \
    run<mode>(kern::OP{constOf<mode>(c, onDev)}, a_o, n, st, a_i, a_i1, a_i2);               \
  }                                                                                          \
  PYCA_MEM void PYCA_MEM_CLASS::OP##_I(T* a_o, const T* a_i, const T* a_i1, const T& c,      \
                                       size_t n, StreamT st, bool onDev) {                   \
    run<mode>(kern::OP{constOf<mode>(c, onDev)}, a_o, n, st, a_o, a_i, a_i1);                \
  }
PYCA_MEM_TERNARY_C(Add_AddMulC)
PYCA_MEM_TERNARY_C(Add_SubMulC)
PYCA_MEM_TERNARY_C(Add_MulMulC)
PYCA_MEM_TERNARY_C(Sub_AddMulC)
PYCA_MEM_TERNARY_C(Sub_SubMulC)
PYCA_MEM_TERNARY_C(Sub_MulMulC)
#undef PYCA_MEM_TERNARY_C

#define PYCA_MEM_BINARY_C(OP)                                                                \
  PYCA_MEM void PYCA_MEM_CLASS::OP(T* a_o, const T* a_i, const T* a_i1, const T& c,          \
                                   size_t n, StreamT st, bool onDev) {                       \
    run<mode>(kern::OP{constOf<mode>(c, onDev)}, a_o, n, st, a_i, a_i1);                     \
  }                                                                                          \
  PYCA_MEM void PYCA_MEM_CLASS::OP##_I(T* a_o, const T* a_i, const T& c, size_t n,           \
                                       StreamT st, bool onDev) {                             \
    run<mode>(kern::OP{constOf<mode>(c, onDev)}, a_o, n, st, a_o, a_i);                      \
  }
PYCA_MEM_BINARY_C(AddMulC)
PYCA_MEM_BINARY_C(SubMulC)
PYCA_MEM_BINARY_C(MulMulC)
PYCA_MEM_BINARY_C(Add_MulC)
#undef PYCA_MEM_BINARY_C

PYCA_MEM void PYCA_MEM_CLASS::MulCAdd(T* a_o, const T* a_i, const T& c, const T* a_i1, size_t n,
                                      StreamT st, bool onDev) {
  run<mode>(kern::MulCAdd{constOf<mode>(c, onDev)}, a_o, n, st, a_i, a_i1);
}
PYCA_MEM void PYCA_MEM_CLASS::MulCAdd_I(T* a_o, const T& c, const T* a_i, size_t n, StreamT st,
                                        bool onDev) {
  run<mode>(kern::MulCAdd{constOf<mode>(c, onDev)}, a_o, n, st, a_o, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::MulCSub(T* a_o, const T* a_i, const T& c, const T* a_i1, size_t n,
                                      StreamT st, bool onDev) {
  run<mode>(kern::MulCSub{constOf<mode>(c, onDev)}, a_o, n, st, a_i, a_i1);
}
PYCA_MEM void PYCA_MEM_CLASS::MulCSub_I(T* a_o, const T& c, const T* a_i, size_t n, StreamT st,
                                        bool onDev) {
  run<mode>(kern::MulCSub{constOf<mode>(c, onDev)}, a_o, n, st, a_o, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::MulCAddC(T* a_o, const T* a_i, const T& a, const T& b, size_t n,
                                       StreamT st, bool onDev) {
  run<mode>(kern::MulCAddC{constOf<mode>(a, onDev), constOf<mode>(b, onDev)}, a_o, n, st, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::MulCAddC_I(T* a_o, const T& a, const T& b, size_t n, StreamT st,
                                         bool onDev) {
  run<mode>(kern::MulCAddC{constOf<mode>(a, onDev), constOf<mode>(b, onDev)}, a_o, n, st, a_o);
}
PYCA_MEM void PYCA_MEM_CLASS::AddCMulC(T* a_o, const T* a_i, const T& a, const T& b, size_t n,
                                       StreamT st, bool onDev) {
  run<mode>(kern::AddCMulC{constOf<mode>(a, onDev), constOf<mode>(b, onDev)}, a_o, n, st, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::AddCMulC_I(T* a_o, const T& a, const T& b, size_t n, StreamT st,
                                         bool onDev) {
  run<mode>(kern::AddCMulC{constOf<mode>(a, onDev), constOf<mode>(b, onDev)}, a_o, n, st, a_o);
}
PYCA_MEM void PYCA_MEM_CLASS::MulC_Add_MulC(T* a_o, const T* a_i, const T& a, const T* a_i1,
                                            const T& b, size_t n, StreamT st, bool onDev) {
  run<mode>(kern::MulC_Add_MulC{constOf<mode>(a, onDev), constOf<mode>(b, onDev)}, a_o, n, st, a_i,
            a_i1);
}
PYCA_MEM void PYCA_MEM_CLASS::MulC_Add_MulC_I(T* a_o, const T& a, const T* a_i, const T& b,
                                              size_t n, StreamT st, bool onDev) {
  run<mode>(kern::MulC_Add_MulC{constOf<mode>(a, onDev), constOf<mode>(b, onDev)}, a_o, n, st, a_o,
            a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::AddCMulCAddC(T* a_o, const T* a_i, const T& a, const T& b, const T& c,
                                           size_t n, StreamT st, bool onDev) {
  run<mode>(kern::AddCMulCAddC{constOf<mode>(a, onDev), constOf<mode>(b, onDev),
                               constOf<mode>(c, onDev)},
            a_o, n, st, a_i);
}
PYCA_MEM void PYCA_MEM_CLASS::AddCMulCAddC_I(T* a_o, const T& a, const T& b, const T& c, size_t n,
                                             StreamT st, bool onDev) {
  run<mode>(kern::AddCMulCAddC{constOf<mode>(a, onDev), constOf<mode>(b, onDev),
                               constOf<mode>(c, onDev)},
            a_o, n, st, a_o);
}

#undef PYCA_MEM
#undef PYCA_MEM_CLASS

template class MemOpers<EXEC_CPU, float>;
template class MemOpers<EXEC_GPU, float>;
template class MemOpers<EXEC_GPU_PARAM, float>;

}  // namespace PyCA
