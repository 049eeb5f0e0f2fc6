// io.i -- _ITKFileIO (builds with ITK only: SWIG runs with -DENABLE_ITK).
// Static methods, as in the legacy module; every C++ failure is an IOError
// with the bare what() text (spec 4), and ReadHeader(grid, name) returns the
// component type (an int, ITK's itk::IOComponentEnum value).
#ifdef ENABLE_ITK
%{
#include "ITKFileIO.h"
%}

%define PYCA_ITK_IOERROR(method)
%exception PyCA::ITKFileIO::method {
  try {
    $action
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_IOError, e.what());
    SWIG_fail;
  }
}
%enddef
PYCA_ITK_IOERROR(ReadHeader)
PYCA_ITK_IOERROR(LoadImage)
PYCA_ITK_IOERROR(LoadField)
PYCA_ITK_IOERROR(LoadFieldComponents)
PYCA_ITK_IOERROR(SaveImage)
PYCA_ITK_IOERROR(SaveField)
PYCA_ITK_IOERROR(SaveFieldComponents)

%typemap(in, numinputs=0) PyCA::ITKFileIO::ComponentType& type (PyCA::ITKFileIO::ComponentType tmp) {
  tmp = PyCA::ITKFileIO::UNKNOWNCOMPONENTTYPE;
  $1 = &tmp;
}
%typemap(argout) PyCA::ITKFileIO::ComponentType& type {
  $result = SWIG_Python_AppendOutput($result, PyLong_FromLong(long(*$1)));
}

%rename(_ITKFileIO) PyCA::ITKFileIO;
%include "ITKFileIO.h"
#endif
