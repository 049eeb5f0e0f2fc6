// pycaConst.h -- enumerations and constants of the PyCA API.
// The integer values are part of the legacy ABI and must never change.
#ifndef __PYCA_CONST_H__
#define __PYCA_CONST_H__

#include <cfloat>

// Interpolation and background strategies live in the global namespace (legacy).
// Every enum is a plain unscoped enum (it converts to int, as legacy code
// expects) with int as its fixed underlying type, so any int that Python or a
// cast passes is a valid value and the operators can reject it with their
// legacy message instead of undefined behaviour.
/// Interpolation scheme used when sampling an image or field.
enum InterpT : int { INTERP_NN = 0, INTERP_LINEAR = 1, INTERP_CUBIC = 2 };

/// What a sample outside the grid sees.
enum BackgroundStrategy : int {
  BACKGROUND_STRATEGY_PARTIAL_ID = 0,
  BACKGROUND_STRATEGY_ID = 1,
  BACKGROUND_STRATEGY_PARTIAL_ZERO = 2,
  BACKGROUND_STRATEGY_ZERO = 3,
  BACKGROUND_STRATEGY_CLAMP = 4,
  BACKGROUND_STRATEGY_WRAP = 5,
  BACKGROUND_STRATEGY_VAL = 6
};

#define DEFAULT_INTERP_METHOD INTERP_LINEAR

#define EXEC_CPU 0
#define EXEC_GPU 1
#define EXEC_GPU_PARAM 2

#define CTA_SIZE 256
#define CUDA_DATA_BLOCK_ALIGN 128
#define BLOCK_ALIGN 128
#define REG_BLOCK_SIZE 256
#define MAX_NUMBER_DEVICES 256
#define MAX_FFT_TABLE_LENGTH 512
#define FIX_SCALE_20 1048576.0f
#define GRIDINFO_EPS 1e-6

#define WRAP_TRUE 1
#define WRAP_FALSE 0
#define ACCUM_TRUE 1
#define ACCUM_FALSE 0
#define SLICE_TRUE 1
#define SLICE_FALSE 0

namespace PyCA {

/// Axis selector for finite differences.
enum DimT : int { DIM_X = 0, DIM_Y = 1, DIM_Z = 2 };
/// Finite-difference scheme.
enum DiffT : int { DIFF_FORWARD = 0, DIFF_BACKWARD = 1, DIFF_CENTRAL = 2 };
/// Boundary condition of finite differences.
enum BoundaryCondT : int { BC_APPROX = 0, BC_WRAP = 1, BC_CLAMP = 2 };
/// Optional post-operation of finite differences.
enum OpT : int { OP_VAL = 0, OP_SQR = 1 };

/// Smallest positive normal float (legacy cvar.MIN_VAL).
extern const float MIN_VAL;
/// Largest finite float (legacy cvar.MAX_VAL).
extern const float MAX_VAL;

}  // namespace PyCA

#endif
