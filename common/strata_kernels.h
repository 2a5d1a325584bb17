/*
 * Strata's reduction kernels on the GPU: the fatbin nvcc built from
 * common/kernels/strata_reduce_kernels.cu, embedded in the plugin and
 * loaded with the driver API at first use (no libcudart).
 *
 *   strata_kernels_function()  the kernel of an op and element type, in the
 *                              primary context of a device (module loaded
 *                              there once, functions looked up once)
 *   strata_kernels_reduce()    launch one k-input reduction on a stream
 *
 * A build without nvcc embeds no fatbin: strata_kernels_available() says
 * so, and callers keep their other path (staging through host memory).
 */
#ifndef STRATA_KERNELS_H
#define STRATA_KERNELS_H

#include <cuda.h>

#include "kernels/strata_reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build embeds kernels and the driver can load them. */
int strata_kernels_available(void);

/* Whether the kernels' op x type matrix (kernels/strata_reduce_kernels.cu)
 * has strata_reduce_<op>_<type>: op is MPI's predefined op in lower case
 * without "MPI_" ("sum", "maxloc"), type an element type ("int32",
 * "double", "cfloat", "2int").  Names only: it asks no driver. */
int strata_kernels_reduces(const char *op, const char *type);

/* The kernel strata_reduce_<op>_<type> in device `ordinal`'s primary
 * context (which must be current).  CUDA_ERROR_NOT_FOUND: no such kernel. */
CUresult strata_kernels_function(int ordinal, const char *op, const char *type, CUfunction *fn);

/* Queue fn over args->count elements on `stream`. */
CUresult strata_kernels_reduce(CUfunction fn, const strata_reduce_args_t *args, CUstream stream);

/* The embedded image (kernels/strata_reduce_fatbin.c, generated), or size 0. */
extern const unsigned char strata_reduce_fatbin[];
extern const unsigned long strata_reduce_fatbin_size;

#ifdef __cplusplus
}
#endif

#endif /* STRATA_KERNELS_H */
