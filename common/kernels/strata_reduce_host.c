/*
 * Strata's reduction kernels compiled for the host (the CUDA stand-in runs
 * them for kernel launches; unit tests check them against Open MPI's own op
 * functions): the very source nvcc compiles, as C.
 */
#include "strata_reduce_kernels.cu"
