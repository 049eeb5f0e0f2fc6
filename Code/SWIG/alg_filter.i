// alg_filter.i -- GaussianFilter*, Multiscale, MultiscaleManager, MultiscaleResampler*.
