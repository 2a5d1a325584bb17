/*
 * Self-tests: when synchronous work lands, as the driver documents it
 * (cuda_standin_copy.c), SYNC_MEMOPS per memory kind and per context, stream
 * memory operations (cuda_standin_memop.c), and the seeded order.
 */
#include "standin_selftest.h"

#include "kernels/strata_reduce.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ST_ORDER_SIZE 4096

/* A non-blocking stream reads the device bytes: it is not ordered after
 * the default stream, so it sees only what has landed. */
static void st_order_read_nb(CUstream nb, CUdeviceptr d, unsigned char *out, size_t len)
{
    ST_OK(cuMemcpyDtoHAsync(out, d, len, nb));
    ST_OK(cuStreamSynchronize(nb));
}

static void st_test_order_pageable(CUstream nb)
{
    unsigned char *host = malloc(ST_ORDER_SIZE), *pinned = NULL, out[ST_ORDER_SIZE];
    CUdeviceptr d = st_alloc(ST_ORDER_SIZE);
    unsigned sync = 1;

    st_group_begin("synchronous copies: pageable HtoD, DtoD and memset land late");
    st_fill(host, ST_ORDER_SIZE, 70, 0);
    ST_OK(cuMemcpyHtoD(d, host, ST_ORDER_SIZE));
    ST_OK(cuCtxSynchronize());
    st_fill(host, ST_ORDER_SIZE, 71, 0);
    ST_OK(cuMemcpyHtoD(d, host, ST_ORDER_SIZE));
    memset(host, 0, ST_ORDER_SIZE); /* staged at the call: the copy keeps 71 */
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_pattern("pageable HtoD not landed for a non-blocking stream", out, sizeof(out), 70, 0);
    ST_OK(cuMemcpyDtoH(out, d, sizeof(out))); /* the default stream: after it */
    st_check_pattern("pageable HtoD seen by the default stream (staged source)", out, sizeof(out),
                     71, 0);

    ST_OK(cuMemHostAlloc((void **)&pinned, ST_ORDER_SIZE, 0));
    st_fill(pinned, ST_ORDER_SIZE, 72, 0);
    ST_OK(cuMemcpyHtoD(d, pinned, ST_ORDER_SIZE));
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_pattern("pinned HtoD landed when it returned", out, sizeof(out), 72, 0);

    ST_OK(cuMemsetD8(d, 0x3c, ST_ORDER_SIZE));
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_pattern("memset not landed for a non-blocking stream", out, sizeof(out), 72, 0);
    ST_OK(cuCtxSynchronize());
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_value("memset after cuCtxSynchronize", out, sizeof(out), 0x3c);

    ST_OK(cuPointerSetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    st_fill(host, ST_ORDER_SIZE, 73, 0);
    ST_OK(cuMemcpyHtoD(d, host, ST_ORDER_SIZE));
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_pattern("pageable HtoD with SYNC_MEMOPS landed when it returned", out, sizeof(out), 73,
                     0);
    ST_OK(cuMemsetD8(d, 0x4d, ST_ORDER_SIZE));
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_value("memset with SYNC_MEMOPS landed when it returned", out, sizeof(out), 0x4d);
    ST_OK(cuMemFreeHost(pinned));
    ST_OK(cuMemFree(d));
    free(host);
    st_group_end();
}

static void st_test_order_ctx_flag(CUstream nb)
{
    unsigned char host[ST_ORDER_SIZE], out[ST_ORDER_SIZE];
    CUdeviceptr d, pool_mem;
    unsigned flags = 0, sync = 1;

    st_group_begin("SYNC_MEMOPS: refused on pool memory, CU_CTX_SYNC_MEMOPS covers it");
    ST_OK(cuMemAllocAsync(&pool_mem, ST_ORDER_SIZE, NULL));
    ST_OK(cuStreamSynchronize(NULL));
    ST_CU(cuPointerSetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, pool_mem),
          CUDA_ERROR_NOT_SUPPORTED);
    st_fill(host, sizeof(host), 74, 0);
    ST_OK(cuMemcpyHtoD(pool_mem, host, sizeof(host)));
    ST_OK(cuCtxSynchronize());
    st_fill(host, sizeof(host), 75, 0);
    ST_OK(cuMemcpyHtoD(pool_mem, host, sizeof(host)));
    st_order_read_nb(nb, pool_mem, out, sizeof(out));
    st_check_pattern("pool memory: pageable HtoD not landed", out, sizeof(out), 74, 0);
    ST_OK(cuCtxSynchronize());

    ST_OK(cuCtxGetFlags(&flags));
    ST_EQ("a new context has no SYNC_MEMOPS", flags & CU_CTX_SYNC_MEMOPS, 0);
    ST_CU(cuCtxSetFlags(0x80000000u), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS));
    ST_OK(cuCtxGetFlags(&flags));
    ST_TRUE("cuCtxGetFlags shows SYNC_MEMOPS", flags & CU_CTX_SYNC_MEMOPS);
    d = st_alloc(ST_ORDER_SIZE);
    st_fill(host, sizeof(host), 76, 0);
    ST_OK(cuMemcpyHtoD(pool_mem, host, sizeof(host)));
    st_order_read_nb(nb, pool_mem, out, sizeof(out));
    st_check_pattern("CU_CTX_SYNC_MEMOPS: pool memory HtoD landed", out, sizeof(out), 76, 0);
    ST_OK(cuMemsetD8(d, 0x5e, ST_ORDER_SIZE));
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_value("CU_CTX_SYNC_MEMOPS: memset landed", out, sizeof(out), 0x5e);
    ST_OK(cuMemcpyDtoD(pool_mem, d, ST_ORDER_SIZE));
    st_order_read_nb(nb, pool_mem, out, sizeof(out));
    st_check_value("CU_CTX_SYNC_MEMOPS: DtoD landed", out, sizeof(out), 0x5e);
    ST_OK(cuCtxSetFlags(flags & ~(unsigned)CU_CTX_SYNC_MEMOPS));
    ST_OK(cuMemFreeAsync(pool_mem, NULL));
    ST_OK(cuMemFree(d));
    st_group_end();
}

void *st_release_later(void *arg)
{
    st_release_t *r = arg;

    usleep(100000);
    r->released = 1;
    __atomic_store_n(r->flag, r->value, __ATOMIC_RELEASE);
    return NULL;
}

static void st_test_order_memops(CUstream nb)
{
    unsigned char host[ST_ORDER_SIZE], out[ST_ORDER_SIZE], *pinned = NULL;
    CUdeviceptr d = st_alloc(ST_ORDER_SIZE), word = st_alloc(64);
    st_release_t r = {NULL, 1, 0};
    uint32_t *flag = NULL;
    uint64_t got64 = 0;
    pthread_t thread;

    st_group_begin("stream memory operations: wait and write values");
    ST_OK(cuMemHostAlloc((void **)&flag, 64, 0));
    ST_OK(cuMemHostAlloc((void **)&pinned, ST_ORDER_SIZE, 0));
    *flag  = 0;
    r.flag = flag;
    ST_CU(cuStreamWaitValue32(NULL, (CUdeviceptr)(uintptr_t)flag + 1, 1, 0),
          CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuStreamWaitValue32(NULL, (CUdeviceptr)(uintptr_t)host, 1, 0), CUDA_ERROR_INVALID_VALUE);

    /* The default stream blocked: a pinned HtoD waits for the release. */
    ST_OK(cuStreamWaitValue32(NULL, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
    st_fill(pinned, ST_ORDER_SIZE, 77, 0);
    ST_EQ("thread started", pthread_create(&thread, NULL, st_release_later, &r), 0);
    ST_OK(cuMemcpyHtoD(d, pinned, ST_ORDER_SIZE));
    ST_TRUE("a pinned HtoD returned only after the blocked stream went on", r.released);
    pthread_join(thread, NULL);

    /* Blocked again: a memset returns at once and lands after the release. */
    *flag      = 0;
    r.released = 0;
    ST_OK(cuStreamWaitValue32(NULL, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    ST_OK(cuMemsetD8(d, 0x6f, ST_ORDER_SIZE));
    ST_TRUE("the memset returned before the release", !r.released);
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_pattern("non-blocking stream: the memset has not landed", out, sizeof(out), 77, 0);
    ST_EQ("thread started", pthread_create(&thread, NULL, st_release_later, &r), 0);
    ST_OK(cuCtxSynchronize());
    pthread_join(thread, NULL);
    st_order_read_nb(nb, d, out, sizeof(out));
    st_check_value("after the release the memset landed", out, sizeof(out), 0x6f);

    /* Writes land in stream order; a wait on a written word goes on. */
    ST_OK(cuStreamWriteValue64(nb, word + 8, 0x1122334455667788ull, 0));
    ST_OK(cuStreamWaitValue64(nb, word + 8, 0x1122334455667788ull, CU_STREAM_WAIT_VALUE_EQ));
    ST_OK(cuStreamWriteValue32(nb, word, 7, 0));
    ST_OK(cuStreamWaitValue32(nb, word, 1, CU_STREAM_WAIT_VALUE_AND));
    ST_OK(cuStreamSynchronize(nb));
    ST_OK(cuMemcpyDtoH(&got64, word + 8, 8));
    ST_EQ("cuStreamWriteValue64", got64, 0x1122334455667788ull);
    ST_OK(cuMemcpyDtoH(host, word, 4));
    ST_EQ("cuStreamWriteValue32", *(uint32_t *)host, 7);

    ST_OK(cuMemFreeHost(flag));
    ST_OK(cuMemFreeHost(pinned));
    ST_OK(cuMemFree(d));
    ST_OK(cuMemFree(word));
    st_group_end();
}

/* Sub-process of the settings group, CUDA_STANDIN_WAIT_VALUE_MS=50: a wait
 * nobody satisfies faults (sticky) instead of hanging. */
int st_sub_wait_timeout(void)
{
    uint32_t *flag = NULL;

    st_ctx_setup(0);
    ST_OK(cuMemHostAlloc((void **)&flag, 64, 0));
    *flag = 0;
    ST_OK(cuStreamWaitValue32(NULL, (CUdeviceptr)(uintptr_t)flag, 1, 0));
    ST_CU(cuStreamSynchronize(NULL), CUDA_ERROR_LAUNCH_TIMEOUT);
    ST_CU(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_TIMEOUT);
    return 0;
}

/* Sub-process, CUDA_STANDIN_ORDER=seed:N: queued work lands at some call
 * without a completion point, in stream order. */
int st_sub_order_seed(void)
{
    unsigned char out[ST_ORDER_SIZE];
    CUdeviceptr d;
    CUcontext ctx;
    CUstream nb;
    int calls;

    st_ctx_setup(0);
    d = st_alloc(ST_ORDER_SIZE);
    ST_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    ST_OK(cuMemsetD8(d, 0x11, ST_ORDER_SIZE));
    ST_OK(cuMemsetD8(d, 0x22, ST_ORDER_SIZE));
    for (calls = 0; calls < 1000; ++calls) {
        ST_OK(cuCtxGetCurrent(&ctx));
        ST_OK(cuMemcpyDtoHAsync(out, d + ST_ORDER_SIZE - 1, 1, nb));
        ST_OK(cuStreamSynchronize(nb));
        if (out[0] == 0x22) {
            break;
        }
    }
    ST_TRUE("the second memset landed without a completion point", out[0] == 0x22);
    ST_OK(cuMemcpyDtoHAsync(out, d, ST_ORDER_SIZE, nb));
    ST_OK(cuStreamSynchronize(nb));
    st_check_value("both memsets landed in order", out, ST_ORDER_SIZE, 0x22);
    printf("  seeded order: the queued memsets landed after %d calls\n", calls);
    return 0;
}

/* Sub-process, CUDA_STANDIN_COUNTS=FILE: a known mix of calls; the parent
 * reads the line written at exit (st_check_counts). */
int st_sub_counts(void)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
    unsigned char host[64];
    unsigned type = 0, one = 1;
    void *values[] = {&type};
    CUdeviceptr a, b, base;
    size_t size;
    void *pinned;
    CUstream nb;
    static const unsigned char image[16] = {0x50, 0xed, 0x55, 0xba};
    strata_reduce_args_t args;
    void *params[] = {&args};
    CUmodule module;
    CUfunction sum;

    st_ctx_setup(0);
    a = st_alloc(64);
    b = st_alloc(64);
    ST_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    ST_OK(cuMemHostAlloc(&pinned, sizeof(host), 0));
    memset(host, 1, sizeof(host));
    ST_OK(cuMemcpyHtoD(a, host, sizeof(host)));                     /* htod, and a wait (staged) */
    ST_OK(cuMemcpyDtoD(b, a, sizeof(host)));                        /* dtod, no wait */
    ST_OK(cuMemsetD8(a, 2, sizeof(host)));                          /* memset, no wait */
    ST_OK(cuMemcpyHtoDAsync(b, pinned, sizeof(host), nb));          /* htod, no wait (pinned) */
    ST_OK(cuMemcpyHtoDAsync(b, host, sizeof(host), nb));            /* htod, a wait (pageable) */
    ST_OK(cuStreamSynchronize(nb));                                 /* a wait */
    ST_OK(cuMemcpyDtoH(host, a, sizeof(host)));                     /* dtoh, and a wait */
    ST_CU(cuMemcpyDtoH(host, a, 100000), CUDA_ERROR_INVALID_VALUE); /* failed: not counted */
    ST_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a)); /* ptrq */
    ST_OK(cuPointerGetAttributes(1, attrs, values, (CUdeviceptr)host));       /* ptrq (host) */
    ST_CU(cuMemGetAddressRange(&base, &size, (CUdeviceptr)host),
          CUDA_ERROR_NOT_FOUND);                                             /* ptrq, failed */
    ST_OK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, b)); /* a call only */
    ST_OK(cuModuleLoadData(&module, image));
    ST_OK(cuModuleGetFunction(&sum, module, "strata_reduce_sum_int32"));
    memset(&args, 0, sizeof(args));
    args.src[0] = (const void *)(uintptr_t)a;
    args.src[1] = (const void *)(uintptr_t)b;
    args.dst    = (void *)(uintptr_t)b;
    args.count  = 16;
    args.nsrc   = 2;
    ST_OK(cuLaunchKernel(sum, 1, 1, 1, 32, 1, 1, 0, nb, params, NULL)); /* a launch */
    /* traffic: htod 3 x 64 written, dtod 64 read + 64 written, memset 64
     * written, dtoh 64 read, the kernel 2 x 64 read + 64 written: 640 */
    return 0; /* 23 calls in all, st_ctx_setup's 4 included */
}

void st_test_order(void)
{
    CUstream nb;

    ST_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    st_test_order_pageable(nb);
    st_test_order_ctx_flag(nb);
    st_test_order_memops(nb);
    ST_OK(cuStreamDestroy(nb));
}
