// alg_fluid.i -- FluidKernelFFTInterface, FluidKernelFFTCPU / FluidKernelFFTGPU.
// The classes are FluidKernelFFT<EXEC_CPU> and FluidKernelFFT<EXEC_GPU>
// (FluidKernelFFT.h); errors are RuntimeError with the legacy text (Core.i).
// As in the legacy module, FluidKernelFFTGPU exists in CUDA builds only.
%{
#include "FluidKernelFFTInterface.h"
#include "FluidKernelFFT.h"
%}

%include "FluidKernelFFTInterface.h"
// Abstract: instantiating it is a TypeError (Python's convention for abstract
// classes; SWIG's default is AttributeError).
%extend PyCA::FluidKernelFFTInterface {
%pythoncode %{
    def __init__(self, *args, **kwargs):
        raise TypeError("FluidKernelFFTInterface is abstract: use FluidKernelFFTCPU or FluidKernelFFTGPU")
%}
}
%include "FluidKernelFFT.h"
%template(FluidKernelFFTCPU) PyCA::FluidKernelFFT<EXEC_CPU>;
%template(FluidKernelFFTGPU) PyCA::FluidKernelFFT<EXEC_GPU>;

%pythoncode %{
if not CudaCompiled():
    del FluidKernelFFTGPU
%}
