// metrics.i -- BoxFilter and MutualInformation (ImageMetrics.h), the
// library's half of PyCA.Apps.metrics. PyCA extensions (no legacy name).
%{
#include "ImageMetrics.h"
%}
%include <std_vector.i>
%template(_DoubleVector) std::vector<double>;
%rename(_jointHistogram) PyCA::MutualInformation::jointHistogram;
%include "ImageMetrics.h"

%pythoncode %{
def _mi_joint_histogram(self):
    """The last joint histogram p(a, b) as a float64 NumPy array of shape
    (bins + 4, bins + 4) (a: the fixed image's bin), summing to 1."""
    import numpy
    n = self.bins() + 4
    return numpy.array(self._jointHistogram(), dtype=numpy.float64).reshape(n, n)
MutualInformation.jointHistogram = _mi_joint_histogram
del _mi_joint_histogram
%}
