// math.i -- the free operators of PyCA::Opers, flattened into PyCA.Core.

// ---- reductions ------------------------------------------------------------------
// Reduction.h hides its C++ out-parameter forms (float& a_o, ...) from SWIG
// with #ifndef SWIG; Python gets the value-returning forms with the legacy
// argument lists: Sum(im[, update[, st[, onDev]]]) -> float, and
// MinMax(im|field, ...) -> (min, max), a tuple of two floats.
%include <std_pair.i>
%template() std::pair<float, float>;

%include "IOpers.h"
%include "FOpers.h"
%include "Reduction.h"
