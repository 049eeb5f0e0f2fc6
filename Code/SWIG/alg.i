// alg.i -- the algorithm classes: FFT fluid kernels (alg_fluid.i), Gaussian
// filters and multiscale resampling (alg_filter.i), the metrics (metrics.i).
%include "alg_fluid.i"
%include "alg_filter.i"
%include "metrics.i"
