// conditionMacro.h -- precondition and argument-check macros (legacy names).
#ifndef __PYCA_CONDITION_MACRO_H__
#define __PYCA_CONDITION_MACRO_H__

#include "PyCAException.h"

#define throw_exception(msg) throw PyCA::PyCAException(__FILE__, __LINE__, (msg))

/// Throws PyCAException(msg) unless cond holds.
#define PRECONDITION(cond, msg)                                   \
  do {                                                            \
    if (!(cond)) throw PyCA::PyCAException(__FILE__, __LINE__, (msg)); \
  } while (0)

/// Throws PyCAException with the stringified condition (active in all builds).
#define PYCA_ASSERT(cond) PRECONDITION(cond, #cond)

// Grid checks: "Input grids are not equal".
#define MK_CHECK2_SIZE(a, b) \
  PRECONDITION((a).grid() == (b).grid(), "Input grids are not equal")
#define MK_CHECK3_SIZE(a, b, c) \
  do { MK_CHECK2_SIZE(a, b); MK_CHECK2_SIZE(a, c); } while (0)
#define MK_CHECK4_SIZE(a, b, c, d) \
  do { MK_CHECK3_SIZE(a, b, c); MK_CHECK2_SIZE(a, d); } while (0)

// Memory-type checks: "memory types are not compatible".
#define MK_CHECK2_MEM(a, b) \
  PRECONDITION((a).memType() == (b).memType(), "memory types are not compatible")
#define MK_CHECK3_MEM(a, b, c) \
  do { MK_CHECK2_MEM(a, b); MK_CHECK2_MEM(a, c); } while (0)
#define MK_CHECK4_MEM(a, b, c, d) \
  do { MK_CHECK3_MEM(a, b, c); MK_CHECK2_MEM(a, d); } while (0)

#define MK_CHECK2_ALL(a, b) do { MK_CHECK2_SIZE(a, b); MK_CHECK2_MEM(a, b); } while (0)
#define MK_CHECK3_ALL(a, b, c) do { MK_CHECK3_SIZE(a, b, c); MK_CHECK3_MEM(a, b, c); } while (0)
#define MK_CHECK4_ALL(a, b, c, d) do { MK_CHECK4_SIZE(a, b, c, d); MK_CHECK4_MEM(a, b, c, d); } while (0)

#endif
