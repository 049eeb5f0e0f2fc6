// Core.i -- the Python module PyCA.Core (extension _Core).
// Declarative: the C++ headers are %included; this layer adds only what
// Python needs (exception translation, keep-alive of live references, NumPy
// views, __str__/tolist helpers). Python conveniences live in Code/Python/PyCA.
%module(package="PyCA") Core

// Default arguments are filled in by the C++ wrappers, not by the Python proxy,
// so a call reaches the wrapper of the default-argument variant it names and
// error messages carry that variant's declaration, as in the legacy module.
%feature("python:cdefaultargs");

// Docstrings: SWIG writes each function's C++ overload signatures (typed
// argument names); the prose comes from one table, Code/SWIG/doc/core_docs.py,
// which gen_core_docs.py turns into PyCA/_core_doc.py at build time (installed
// by the %pythoncode at the end of this file). Architecture.md, "Docstrings
// and stubs".
%feature("autodoc", "1");

// NumPy scalars (np.float32, np.int64, ...) are not Python floats/ints; cast
// mode lets number arguments take anything with __float__/__index__, so
// e.g. MulC_I(im, arr.max()) works under NumPy 2's scalar promotion rules.
%begin %{
#define SWIG_PYTHON_CAST_MODE
%}

%{
#define SWIG_FILE_WITH_INIT
#include "PyCA.h"
#include <numpy/arrayobject.h>
%}

%init %{
  import_array();
%}

%include <std_string.i>
%include <std_shared_ptr.i>

%rename(_print) *::_print;

// Every wrapped call: C++ failures become Python exceptions. The message is the
// legacy one: "<C++ declaration>:\n" + what().
%exception {
  try {
    $action
  } catch (const PyCA::PyCAMemoryException& e) {
    PyErr_SetString(PyExc_MemoryError, (std::string("$decl:\n") + e.what()).c_str());
    SWIG_fail;
  } catch (const PyCA::PyCAValueException& e) {
    PyErr_SetString(PyExc_ValueError, (std::string("$decl:\n") + e.what()).c_str());
    SWIG_fail;
  } catch (const PyCA::PyCAException& e) {
    PyErr_SetString(PyExc_RuntimeError, (std::string("$decl:\n") + e.what()).c_str());
    SWIG_fail;
  } catch (const std::bad_alloc& e) {
    PyErr_SetString(PyExc_MemoryError, (std::string("$decl:\nout of memory: ") + e.what()).c_str());
    SWIG_fail;
  } catch (const std::out_of_range& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
    SWIG_fail;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, (std::string("$decl:\n") + e.what()).c_str());
    SWIG_fail;
  }
}

// None where an object is passed by reference is a TypeError (SWIG's default
// is ValueError "invalid null reference"), like any other wrong argument type.
%typemap(in, noblock=1) SWIGTYPE & (void *argp = 0, int res = 0),
                         const SWIGTYPE & (void *argp = 0, int res = 0) {
  res = SWIG_ConvertPtr($input, &argp, $descriptor, %convertptr_flags);
  if (!SWIG_IsOK(res)) {
    %argument_fail(res, "$type", $symname, $argnum);
  }
  if (!argp) { SWIG_exception_fail(SWIG_TypeError, %argnullref_fmt("$type", $symname, $argnum)); }
  $1 = %reinterpret_cast(argp, $ltype);
}

%include "types.i"
%include "base.i"
%include "math.i"
%include "alg.i"
%include "io.i"
%include "type_opers.i"

// Keep this last: the docstrings of everything above (generated _core_doc.py).
%pythoncode %{
try:
    from . import _core_doc
except ImportError:
    _core_doc = None
if _core_doc is not None:
    _core_doc.apply(globals())
del _core_doc
%}
