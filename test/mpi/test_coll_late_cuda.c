/*
 * The CUDA driver loaded after MPI_Init, as mpi4py + CuPy do it (MPI starts
 * at import, the driver when the first array is made):
 *
 *   mpirun -np N test_coll_late_cuda [--timeout S]
 *
 * The program is not linked with libcuda.  It runs a host MPI_Allreduce
 * first (coll/strata looks for a driver and finds none loaded), then
 * dlopens libcuda.so.1, allocates device buffers, and runs MPI_Allreduce,
 * MPI_Bcast and MPI_Allgather on them; every value is checked against the
 * host reference through cuMemcpyDtoH.  A library that decided "no driver"
 * once and for all passes the device pointers to host code: a crash (the
 * CUDA stand-in's device memory faults on a CPU access).  Each device
 * collective has S seconds (default 60): past them a watchdog prints "FAIL
 * rank R: hang: ..." and exits 1.  Exit 77 on all ranks when no driver or
 * device can be had.
 */
#include "stest_watchdog.h"

#include <cuda.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4099 /* elements: a prime, not a multiple of any rank count */

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
} cu;

static int rank, size, timeout = 60;

static void fail(const char *what, int index, long expected, long got)
{
    printf("FAIL rank %d: %s index=%d: expected %ld got %ld\n", rank, what, index, expected, got);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Load the driver now; 0 on success. */
static int load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CUdevice dev;
    CUcontext ctx;

    if (h == NULL) {
        return -1;
    }
    cu.init = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    cu.device_get = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    cu.primary_retain = (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    cu.ctx_set = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    cu.alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    cu.free = (CUresult(*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
    cu.htod = (CUresult(*)(CUdeviceptr, const void *, size_t))dlsym(h, "cuMemcpyHtoD_v2");
    cu.dtoh = (CUresult(*)(void *, CUdeviceptr, size_t))dlsym(h, "cuMemcpyDtoH_v2");
    if (!cu.init || !cu.device_get || !cu.primary_retain || !cu.ctx_set || !cu.alloc ||
        !cu.free || !cu.htod || !cu.dtoh) {
        return -1;
    }
    if (cu.init(0) != CUDA_SUCCESS || cu.device_get(&dev, 0) != CUDA_SUCCESS ||
        cu.primary_retain(&ctx, dev) != CUDA_SUCCESS || cu.ctx_set(ctx) != CUDA_SUCCESS) {
        return -1;
    }
    return 0;
}

static CUdeviceptr device_copy_of(const int *host, size_t n)
{
    CUdeviceptr d;

    if (cu.alloc(&d, n * sizeof(int)) != CUDA_SUCCESS ||
        cu.htod(d, host, n * sizeof(int)) != CUDA_SUCCESS) {
        fail("cuMemAlloc/cuMemcpyHtoD", -1, 0, 0);
    }
    return d;
}

static void check_device(const char *what, CUdeviceptr d, const int *expect, size_t n)
{
    int *got = malloc(n * sizeof(int));

    if (got == NULL || cu.dtoh(got, d, n * sizeof(int)) != CUDA_SUCCESS) {
        fail("cuMemcpyDtoH", -1, 0, 0);
    }
    for (size_t i = 0; i < n; ++i) {
        if (got[i] != expect[i]) {
            fail(what, (int)i, expect[i], got[i]);
        }
    }
    free(got);
    printf("rank %d: %s on device buffers: ok\n", rank, what);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--timeout") && (i + 1 < argc) && (atoi(argv[i + 1]) > 0)) {
            timeout = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: test_coll_late_cuda [--timeout S]\n");
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    static int in[N], out[N], expect[N], all[N * 64];
    int ok, all_ok, h = rank;
    CUdeviceptr din, dout, dall;

    MPI_Init(&argc, &argv);
    parse_args(argc, argv);
    stest_watchdog_init();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) {
        fail("at most 64 ranks", -1, 64, size);
    }
    /* host first: strata looks for a driver and finds none loaded */
    MPI_Allreduce(&rank, &h, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (h != size * (size - 1) / 2) {
        fail("host allreduce", 0, size * (size - 1) / 2, h);
    }
    ok = load_driver() == 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0) {
            printf("test_coll_late_cuda: skip: no CUDA driver or device\n");
        }
        MPI_Finalize();
        return 77;
    }

    for (int i = 0; i < N; ++i) {
        in[i] = rank * 1000003 + i;
        expect[i] = size * i + 1000003 * (size * (size - 1) / 2);
    }
    din = device_copy_of(in, N);
    dout = device_copy_of(out, N);
    stest_watchdog_arm(rank, "MPI_Allreduce on device buffers", timeout);
    MPI_Allreduce((void *)din, (void *)dout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    alarm(0);
    check_device("MPI_Allreduce", dout, expect, N);

    for (int i = 0; i < N; ++i) {
        expect[i] = 0 * 1000003 + i; /* root 0's input */
    }
    stest_watchdog_arm(rank, "MPI_Bcast on device buffers", timeout);
    MPI_Bcast((void *)din, N, MPI_INT, 0, MPI_COMM_WORLD);
    alarm(0);
    check_device("MPI_Bcast", din, expect, N);

    (void)cu.htod(din, in, sizeof(int) * N); /* restore this rank's input */
    for (int r = 0; r < size; ++r) {
        for (int i = 0; i < N; ++i) {
            all[r * N + i] = r * 1000003 + i;
        }
    }
    if (cu.alloc(&dall, (size_t)size * N * sizeof(int)) != CUDA_SUCCESS) {
        fail("cuMemAlloc", -1, 0, 0);
    }
    stest_watchdog_arm(rank, "MPI_Allgather on device buffers", timeout);
    MPI_Allgather((void *)din, N, MPI_INT, (void *)dall, N, MPI_INT, MPI_COMM_WORLD);
    alarm(0);
    check_device("MPI_Allgather", dall, all, (size_t)size * N);

    (void)cu.free(din);
    (void)cu.free(dout);
    (void)cu.free(dall);
    if (rank == 0) {
        printf("test_coll_late_cuda: all checks passed\n");
    }
    MPI_Finalize();
    return 0;
}
