// pycaUtils.h -- small integer helpers of the legacy API (launch sizes,
// alignment, powers of two) and the legacy `uint` typedef.
#ifndef __PYCA_UTILS_H__
#define __PYCA_UTILS_H__

#include <cstddef>

#include "pycaConst.h"

/// Legacy shorthand (global, as in the legacy header; glibc declares the same).
typedef unsigned int uint;

namespace PyCA {

/// ceil(a / b) for b > 0: the number of blocks of b items that cover a items.
constexpr size_t iDivUp(size_t a, size_t b) { return (a + b - 1) / b; }
/// a rounded up to a multiple of b (b > 0).
constexpr size_t iAlignUp(size_t a, size_t b) { return iDivUp(a, b) * b; }
/// a rounded down to a multiple of b (b > 0).
constexpr size_t iAlignDown(size_t a, size_t b) { return a / b * b; }
/// True when x is a power of two (0 is not).
constexpr bool isPow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }
/// The smallest power of two >= x (1 for x == 0; 0 if it does not fit in size_t).
constexpr size_t nextPowerOf2(size_t x) {
  size_t p = 1;
  while (p != 0 && p < x) p <<= 1;
  return p;
}
/// floor(log2(x)) for x > 0; 0 for x == 0.
constexpr unsigned int log2i(size_t x) {
  unsigned int r = 0;
  while (x >>= 1) ++r;
  return r;
}

}  // namespace PyCA

#endif
