// Mat3D is header-only; the explicit instantiations compile every member
// for the two element types the library supports.
#include "Mat3D.h"

namespace PyCA {

template class Mat3D<float>;
template class Mat3D<double>;

}  // namespace PyCA
