/*
 * gpu_share_probe: the fixed cost of one small, synchronized GPU operation
 * when several processes share one GPU (each with its own CUDA context, as
 * MPI ranks have).  A diagnostic for coll/strata's native device allreduce,
 * which issues 3 such operations per chunk per rank (copy in, reduce, copy
 * out, each followed by cuStreamSynchronize).
 *
 *   gpu_share_probe NPROCS OP BYTES ITERS
 *     OP: dtod   cuMemcpyDtoDAsync (on HBM-speed drivers: an SM copy)
 *         dtoh   cuMemcpyDtoHAsync to pinned memory (a copy engine)
 *         htod   cuMemcpyHtoDAsync from pinned memory
 *         dtoh_pageable, htod_pageable   the same to or from malloc'ed memory
 *                (what a small message costs where it is copied from or to
 *                a pageable buffer: issue 34)
 *         memset cuMemsetD8Async
 *   Forks NPROCS processes; each does ITERS x (OP on its stream, then
 *   cuStreamSynchronize) and prints its microseconds per operation.
 *
 * Reading it: if `4 dtod 131072 2000` shows ~100+ us per op while
 * `1 dtod 131072 2000` shows a few us (and dtoh stays a few us), the GPU
 * serializes compute-engine work of different contexts with a context
 * switch per operation; under MPS (one shared context) it should not.
 *
 * Built as test/gpu/gpu_share_probe; run by device-run.sh (step share_probe).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_SYM(_fn, _name) \
    do { \
        *(void **)&(_fn) = dlsym(lib, (_name)); \
        if (NULL == (_fn)) { \
            fprintf(stderr, "gpu_share_probe: no %s\n", (_name)); \
            return 1; \
        } \
    } while (0)

static double probe_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int probe_child(int id, const char *op, size_t bytes, int iters, int start_fd)
{
    CUresult (*init)(unsigned), (*dev_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t), (*host_alloc)(void **, size_t, unsigned);
    CUresult (*stream_create)(CUstream *, unsigned), (*sync)(CUstream);
    CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*htod)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, CUstream) = NULL;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CUdeviceptr a, b;
    CUcontext ctx;
    CUstream s;
    CUdevice dev;
    void *host, *pageable, *side;
    double t0, t1;
    char go;
    int rc = 0;

    if (NULL == lib) {
        fprintf(stderr, "gpu_share_probe: %s\n", dlerror());
        return 1;
    }
    PROBE_SYM(init, "cuInit");
    PROBE_SYM(dev_get, "cuDeviceGet");
    PROBE_SYM(retain, "cuDevicePrimaryCtxRetain");
    PROBE_SYM(set, "cuCtxSetCurrent");
    PROBE_SYM(alloc, "cuMemAlloc_v2");
    PROBE_SYM(host_alloc, "cuMemHostAlloc");
    PROBE_SYM(stream_create, "cuStreamCreate");
    PROBE_SYM(sync, "cuStreamSynchronize");
    PROBE_SYM(dtod, "cuMemcpyDtoDAsync_v2");
    PROBE_SYM(dtoh, "cuMemcpyDtoHAsync_v2");
    PROBE_SYM(htod, "cuMemcpyHtoDAsync_v2");
    if (0 == strcmp(op, "memset")) {
        PROBE_SYM(memset8, "cuMemsetD8Async");
    }
    if (init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || set(ctx) || alloc(&a, bytes) ||
        alloc(&b, bytes) || host_alloc(&host, bytes, 0) || stream_create(&s, CU_STREAM_DEFAULT)) {
        fprintf(stderr, "gpu_share_probe: CUDA set-up failed\n");
        return 1;
    }
    pageable = malloc(bytes);
    if (NULL == pageable) {
        fprintf(stderr, "gpu_share_probe: no memory\n");
        return 1;
    }
    memset(pageable, 0, bytes);
    side = (NULL != strstr(op, "_pageable")) ? pageable : host;
    /* warm up, then start together */
    for (int i = 0; i < 10; ++i) {
        rc |= dtod(b, a, bytes, s) | dtoh(host, a, bytes, s) | sync(s);
    }
    if (1 != read(start_fd, &go, 1)) {
        return 1;
    }
    t0 = probe_now_us();
    for (int i = 0; i < iters && 0 == rc; ++i) {
        if (0 == strcmp(op, "dtod")) {
            rc = dtod(b, a, bytes, s);
        } else if (0 == strncmp(op, "dtoh", 4)) {
            rc = dtoh(side, a, bytes, s);
        } else if (0 == strncmp(op, "htod", 4)) {
            rc = htod(a, side, bytes, s);
        } else {
            rc = memset8(a, (unsigned char)i, bytes, s);
        }
        if (CUDA_SUCCESS == rc) {
            rc = sync(s);
        }
    }
    t1 = probe_now_us();
    printf("proc %d: %s %zu bytes: %.1f us per op+sync (%d ops)%s\n", id, op, bytes,
           (t1 - t0) / iters, iters, rc ? " FAILED" : "");
    fflush(stdout); /* the child leaves with _exit */
    free(pageable);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    int nprocs, iters, fds[2], status, fail = 0;
    size_t bytes;

    if (argc != 5) {
        fprintf(stderr, "usage: gpu_share_probe NPROCS dtod|dtoh|htod|dtoh_pageable|htod_pageable|memset BYTES "
                "ITERS\n");
        return 2;
    }
    nprocs = atoi(argv[1]);
    bytes = strtoull(argv[3], NULL, 0);
    iters = atoi(argv[4]);
    if (pipe(fds)) {
        return 1;
    }
    /* fork before any CUDA call: every child gets its own context */
    for (int i = 0; i < nprocs; ++i) {
        if (0 == fork()) {
            close(fds[1]);
            _exit(probe_child(i, argv[2], bytes, iters, fds[0]));
        }
    }
    close(fds[0]);
    sleep(3); /* let every child set up */
    for (int i = 0; i < nprocs; ++i) {
        if (1 != write(fds[1], "g", 1)) {
            return 1;
        }
    }
    for (int i = 0; i < nprocs; ++i) {
        wait(&status);
        fail |= !WIFEXITED(status) || 0 != WEXITSTATUS(status);
    }
    return fail;
}
