// math.i -- the free operators of PyCA::Opers, flattened into PyCA.Core.

// The out-parameter reduction forms are C++ only; Python gets the
// value-returning forms with the legacy argument lists.
%ignore PyCA::Opers::Sum(float&, const Image3D&, bool, StreamT, bool);
%ignore PyCA::Opers::Sum(float&, const Image3D&, bool, StreamT);
%ignore PyCA::Opers::Sum(float&, const Image3D&, bool);
%ignore PyCA::Opers::Sum(float&, const Image3D&);
%ignore PyCA::Opers::Sum(float&, const Field3D&, bool, StreamT, bool);
%ignore PyCA::Opers::Sum(float&, const Field3D&, bool, StreamT);
%ignore PyCA::Opers::Sum(float&, const Field3D&, bool);
%ignore PyCA::Opers::Sum(float&, const Field3D&);
%ignore PyCA::Opers::Sum2(float&, const Image3D&, bool, StreamT, bool);
%ignore PyCA::Opers::Sum2(float&, const Image3D&, bool, StreamT);
%ignore PyCA::Opers::Sum2(float&, const Image3D&, bool);
%ignore PyCA::Opers::Sum2(float&, const Image3D&);
%ignore PyCA::Opers::Sum2(float&, const Field3D&, bool, StreamT, bool);
%ignore PyCA::Opers::Sum2(float&, const Field3D&, bool, StreamT);
%ignore PyCA::Opers::Sum2(float&, const Field3D&, bool);
%ignore PyCA::Opers::Sum2(float&, const Field3D&);

%include "IOpers.h"
%include "FOpers.h"
%include "Reduction.h"
