// alg_filter.i -- GaussianFilter*, Multiscale, MultiscaleManager, MultiscaleResampler*.
//
// Python names (as the legacy): GaussianFilterInterface, GaussianFilterCPU,
// Multiscale, MultiscaleManager, MultiscaleResamplerInterface,
// MultiscaleResamplerCPU (no smoothing), MultiscaleResamplerGaussCPU, and in
// CUDA builds GaussianFilterGPU, MultiscaleResamplerGPU,
// MultiscaleResamplerGaussGPU.
%{
#include "GaussianFilterInterface.h"
#include "GaussianFilter.h"
#include "IdentityFilter.h"
#include "MultiscaleManager.h"
#include "MultiscaleResamplerInterface.h"
#include "MultiscaleResampler.h"
%}

// The raw-array forms take device or host pointers of an unchecked size: C++
// only (the legacy wrapped them, but Python could not call them usefully).
%ignore PyCA::GaussianFilterInterface::filter(float*, const float*, float*, StreamT);
%ignore PyCA::GaussianFilterInterface::filter(float*, const float*, float*);
%ignore PyCA::GaussianFilterInterface::convolutionSingleAxis;
%ignore PyCA::GaussianFilter::filter(float*, const float*, float*, StreamT);
%ignore PyCA::GaussianFilter::filter(float*, const float*, float*);
%ignore PyCA::GaussianFilter::convolutionSingleAxis;
%ignore PyCA::GaussianFilter::kExecMode;
%ignore PyCA::GaussianFilter::kSmooths;
// Pointer references (C++ double buffering).
%ignore PyCA::MultiscaleResamplerInterface::updateImage;
%ignore PyCA::MultiscaleResampler::updateImage;
%ignore PyCA::MultiscaleResampler::kExecMode;

// Live references into the manager / resampler keep their owner alive.
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getOrgGrid)
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getCurGrid)
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getPreGrid)
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getOrgSize)
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getCurSize)
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getOrgSpace)
PYCA_KEEPALIVE(PyCA::MultiscaleManager::getCurSpace)
PYCA_KEEPALIVE(PyCA::MultiscaleResamplerInterface::getScaleManager)
PYCA_KEEPALIVE(PyCA::MultiscaleResampler::getScaleManager)

%include "GaussianFilterInterface.h"
%include "GaussianFilter.h"
%template(GaussianFilterCPU) PyCA::GaussianFilter<EXEC_CPU>;
%template(GaussianFilterGPU) PyCA::GaussianFilter<EXEC_GPU>;

%include "MultiscaleManager.h"
%include "MultiscaleResamplerInterface.h"
%include "MultiscaleResampler.h"
%template(MultiscaleResamplerCPU) PyCA::MultiscaleResampler<PyCA::IdentityFilter<EXEC_CPU> >;
%template(MultiscaleResamplerGPU) PyCA::MultiscaleResampler<PyCA::IdentityFilter<EXEC_GPU> >;
%template(MultiscaleResamplerGaussCPU) PyCA::MultiscaleResampler<PyCA::GaussianFilter<EXEC_CPU> >;
%template(MultiscaleResamplerGaussGPU) PyCA::MultiscaleResampler<PyCA::GaussianFilter<EXEC_GPU> >;

%pythoncode %{
# The interfaces are abstract: constructing one is a TypeError (SWIG's
# default is AttributeError), like any call with arguments of the wrong kind.
def _pyca_abstract_init(self, *args, **kwargs):
    raise TypeError("%s is abstract: use one of its CPU/GPU classes" % type(self).__name__)
GaussianFilterInterface.__init__ = _pyca_abstract_init
MultiscaleResamplerInterface.__init__ = _pyca_abstract_init
del _pyca_abstract_init

# The GPU classes exist in CUDA builds only (as in the legacy module).
if not CudaCompiled():
    del GaussianFilterGPU, MultiscaleResamplerGPU, MultiscaleResamplerGaussGPU
%}
