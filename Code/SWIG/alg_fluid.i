// alg_fluid.i -- FluidKernelFFTInterface, FluidKernelFFTCPU / FluidKernelFFTGPU.
