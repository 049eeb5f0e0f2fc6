// interp.h -- forwards to the public sampling header inc/math/interp.h.
// Downstream projects of the legacy library added Code/Cxx/src/math to their
// include path to include interp.h from here; it keeps working.
#include "../../inc/math/interp.h"
