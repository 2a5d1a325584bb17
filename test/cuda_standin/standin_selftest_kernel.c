/*
 * Self-tests of the stand-in's kernel launches: Strata's reduction kernels
 * (common/kernels), run on device memory at completion points.
 */
#include "standin_selftest.h"

#include "kernels/strata_reduce.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ST_K_COUNT 1000

static void st_kernel_args(strata_reduce_args_t *a, const CUdeviceptr *src, int nsrc,
                           CUdeviceptr dst, unsigned long long count)
{
    memset(a, 0, sizeof(*a));
    for (int j = 0; j < nsrc; ++j) {
        a->src[j] = (const void *)(uintptr_t)src[j];
    }
    a->dst = (void *)(uintptr_t)dst;
    a->count = count;
    a->nsrc = nsrc;
}

static CUresult st_launch(CUfunction fn, strata_reduce_args_t *a, CUstream stream)
{
    void *params[] = {a};

    return cuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, stream, params, NULL);
}

void st_test_kernels(void)
{
    static const unsigned char image[16] = {0x50, 0xed, 0x55, 0xba};
    int in[3][ST_K_COUNT], out[ST_K_COUNT];
    CUdeviceptr src[3], dst;
    strata_reduce_args_t a;
    CUmodule module;
    CUfunction sum, bogus;
    CUstream stream;
    pid_t pid;

    st_group_begin("kernels: Strata's reductions run on device memory at completion points");
    ST_CU(cuModuleLoadData(&module, NULL), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuModuleLoadData(&module, image));
    ST_CU(cuModuleGetFunction(&bogus, module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    ST_OK(cuModuleGetFunction(&sum, module, "strata_reduce_sum_int32"));
    ST_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (int j = 0; j < 3; ++j) {
        for (int i = 0; i < ST_K_COUNT; ++i) {
            in[j][i] = (j + 1) * 1000 + i;
        }
        src[j] = st_alloc(sizeof(in[j]));
        ST_OK(cuMemcpyHtoD(src[j], in[j], sizeof(in[j])));
    }
    dst = st_alloc(sizeof(out));
    ST_OK(cuMemsetD8(dst, 0, sizeof(out)));
    ST_OK(cuCtxSynchronize());
    st_kernel_args(&a, src, 3, dst, ST_K_COUNT);
    ST_OK(st_launch(sum, &a, stream));
    memset(&a, 0xff, sizeof(a)); /* the launch copied its parameter */
    ST_CU(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
    ST_OK(cuStreamSynchronize(stream));
    ST_OK(cuMemcpyDtoH(out, dst, sizeof(out)));
    for (int i = 0; i < ST_K_COUNT; ++i) {
        ST_EQ("sum of three inputs", out[i], 6000 + 3 * i);
    }
    /* in place: dst is the last input */
    st_kernel_args(&a, src, 2, src[1], ST_K_COUNT);
    ST_OK(st_launch(sum, &a, stream));
    ST_OK(cuStreamSynchronize(stream));
    ST_OK(cuMemcpyDtoH(out, src[1], sizeof(out)));
    ST_EQ("in place, element 7", out[7], 3000 + 2 * 7);
    /* bad launches fail at once */
    st_kernel_args(&a, src, 3, dst, ST_K_COUNT);
    {
        void *params[] = {&a};

        ST_CU(cuLaunchKernel(sum, 0, 1, 1, 128, 1, 1, 0, stream, params, NULL),
              CUDA_ERROR_INVALID_VALUE);
        ST_CU(cuLaunchKernel(sum, 1, 1, 1, 2048, 1, 1, 0, stream, params, NULL),
              CUDA_ERROR_INVALID_VALUE);
        ST_CU(cuLaunchKernel((CUfunction)(uintptr_t)&a, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL),
              CUDA_ERROR_INVALID_HANDLE);
        ST_CU(cuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
              CUDA_ERROR_INVALID_VALUE);
    }
    /* a host pointer in a kernel is an illegal address, sticky, as on a GPU;
     * and so is a range past the end of its allocation (children: a forked
     * child starts without driver state) */
    for (int bad = 0; bad < 2; ++bad) {
        pid = st_fork();
        if (pid == 0) {
            CUdeviceptr d;

            st_ctx_setup(0);
            d = st_alloc(sizeof(out));
            ST_OK(cuModuleLoadData(&module, image));
            ST_OK(cuModuleGetFunction(&sum, module, "strata_reduce_sum_int32"));
            st_kernel_args(&a, &d, 1, bad ? d : (CUdeviceptr)(uintptr_t)out,
                           bad ? ST_K_COUNT + 1 : ST_K_COUNT);
            ST_OK(st_launch(sum, &a, NULL));
            ST_CU(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
            ST_CU(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
            st_child_done();
        }
        st_expect_child_ok(bad ? "a range past its allocation: illegal address, sticky"
                               : "a host pointer in a kernel: illegal address, sticky",
                           pid);
    }
    ST_OK(cuStreamDestroy(stream));
    for (int j = 0; j < 3; ++j) {
        ST_OK(cuMemFree(src[j]));
    }
    ST_OK(cuMemFree(dst));
    ST_OK(cuModuleUnload(module));
    ST_CU(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
    st_group_end();
}
