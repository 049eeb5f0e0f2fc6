// metrics.i -- BoxFilter and MutualInformation (ImageMetrics.h), the
// library's half of PyCA.Apps.metrics. PyCA extensions (no legacy name).
%{
#include <cstring>
#include "ImageMetrics.h"
%}
// The joint histogram as a NumPy array (no std::vector proxy classes).
%ignore PyCA::MutualInformation::jointHistogram;
%rename(jointHistogram) PyCA::MutualInformation::jointHistogramArray;
%nothread PyCA::MutualInformation::jointHistogramArray;   // makes a Python object: keeps the GIL
%include "ImageMetrics.h"

%extend PyCA::MutualInformation {
  // the last joint histogram p(a, b): float64, (bins + 4, bins + 4) (a: the fixed image's bin), sum 1
  PyObject* jointHistogramArray() const {
    const std::vector<double> h = $self->jointHistogram();
    const npy_intp n = npy_intp($self->bins() + 4);
    npy_intp dims[2] = {n, n};
    PyObject* a = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (!a) return nullptr;
    if (h.size() == size_t(n * n))
      std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a)), h.data(), h.size() * sizeof(double));
    else
      std::memset(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a)), 0, size_t(n * n) * sizeof(double));
    return a;
  }
}
