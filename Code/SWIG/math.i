// math.i -- the free operators of PyCA::Opers, flattened into PyCA.Core.

// ---- reductions ------------------------------------------------------------------
// Reduction.h hides its C++ out-parameter forms (float& a_o, ...) from SWIG
// with #ifndef SWIG; Python gets the value-returning forms with the legacy
// argument lists: Sum(im[, update[, st[, onDev]]]) -> float, and
// MinMax(im|field, ...) -> (min, max), a tuple of two floats.
%include <std_pair.i>
%template() std::pair<float, float>;

// The legacy raw-array Gradient(Field3D&, const float*) takes a component
// pointer such as field.x; None is a TypeError, not a null array.
%typemap(check) const float* a_i {
  if (!$1) { SWIG_exception_fail(SWIG_TypeError, "in method '$symname', argument $argnum of type 'float const *' must not be None"); }
}

%include "IOpers.h"
%include "FOpers.h"
%include "IFOpers.h"
%include "HFOpers.h"
%include "VFOpers.h"
%include "Reduction.h"
