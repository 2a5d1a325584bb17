/*
 * Strata's reduction kernels on the GPU (see strata_kernels.h).
 */
#include "strata_kernels.h"

#include "strata_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define STRATA_KERNELS_DEVICES 64
#define STRATA_KERNELS_NAMES   128 /* kernels looked up per device, at most */

/* Per device: the module, and the functions looked up so far. */
typedef struct strata_kernels_device {
    CUmodule module;
    int nfns;
    struct {
        char name[64];
        CUfunction fn;
    } fns[STRATA_KERNELS_NAMES];
} strata_kernels_device_t;

static strata_kernels_device_t strata_kernels_devices[STRATA_KERNELS_DEVICES];
static pthread_mutex_t strata_kernels_lock = PTHREAD_MUTEX_INITIALIZER;

int strata_kernels_available(void)
{
    return (strata_reduce_fatbin_size > 0) && (strata_cuda_load() == 0) &&
           (strata_cuda.cuModuleLoadData != NULL) && (strata_cuda.cuModuleGetFunction != NULL) &&
           (strata_cuda.cuLaunchKernel != NULL);
}

int strata_kernels_reduces(const char *op, const char *type)
{
    int loc     = (0 == strcmp(op, "maxloc") || 0 == strcmp(op, "minloc"));
    int logical = ('l' == op[0]);
    int arith   = (0 == strcmp(op, "sum") || 0 == strcmp(op, "prod"));

    if (NULL != strstr(type, "_int") || 0 == strcmp(type, "2int")) {
        return loc; /* the pair types */
    }
    if (loc) {
        return 0;
    }
    if (0 == strcmp(type, "bool")) {
        return logical;
    }
    if ('c' == type[0]) {
        return arith; /* complex */
    }
    if (0 == strcmp(type, "float") || 0 == strcmp(type, "double")) {
        return arith || 0 == strcmp(op, "min") || 0 == strcmp(op, "max");
    }
    return 1; /* the integers: every op but the pairs' */
}

static CUresult strata_kernels_lookup(strata_kernels_device_t *d, const char *name,
                                      CUfunction *fn)
{
    CUresult res;

    for (int i = 0; i < d->nfns; ++i) {
        if (strcmp(d->fns[i].name, name) == 0) {
            *fn = d->fns[i].fn;
            return CUDA_SUCCESS;
        }
    }
    if (d->module == NULL) {
        res = strata_cuda.cuModuleLoadData(&d->module, strata_reduce_fatbin);
        if (res != CUDA_SUCCESS) {
            d->module = NULL;
            return res;
        }
    }
    res = strata_cuda.cuModuleGetFunction(fn, d->module, name);
    if ((res == CUDA_SUCCESS) && (d->nfns < STRATA_KERNELS_NAMES)) {
        snprintf(d->fns[d->nfns].name, sizeof(d->fns[d->nfns].name), "%s", name);
        d->fns[d->nfns].fn = *fn;
        d->nfns++;
    }
    return res;
}

CUresult strata_kernels_function(int ordinal, const char *op, const char *type, CUfunction *fn)
{
    char name[64];
    CUresult res;

    if (!strata_kernels_available()) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if ((ordinal < 0) || (ordinal >= STRATA_KERNELS_DEVICES)) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    snprintf(name, sizeof(name), "strata_reduce_%s_%s", op, type);
    pthread_mutex_lock(&strata_kernels_lock);
    res = strata_kernels_lookup(&strata_kernels_devices[ordinal], name, fn);
    pthread_mutex_unlock(&strata_kernels_lock);
    return res;
}

CUresult strata_kernels_reduce(CUfunction fn, const strata_reduce_args_t *args, CUstream stream)
{
    /* Grid-stride kernels: enough blocks to fill a large GPU, no more than
     * the elements need. */
    const unsigned threads = 256;
    unsigned long long blocks = (args->count + threads - 1) / threads;
    void *params[] = {(void *)args};

    if (args->count == 0) {
        return CUDA_SUCCESS;
    }
    if ((args->nsrc < 1) || (args->nsrc > STRATA_REDUCE_MAX_SRCS) || (args->nalso < 0) ||
        (args->nalso > STRATA_REDUCE_MAX_ALSO)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    blocks = (blocks > 1024) ? 1024 : blocks;
    return strata_cuda.cuLaunchKernel(fn, (unsigned)blocks, 1, 1, threads, 1, 1, 0, stream, params,
                                      NULL);
}
