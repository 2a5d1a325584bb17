/*
 * Collectives on device buffers leave the calling thread's CUDA context as
 * they found it:
 *
 *   mpirun -np N test_coll_ctx [--move]
 *
 * Each rank allocates its device buffers in its device's primary context,
 * then makes no context current (as a thread of an application that uses
 * the runtime API on another thread, or a progress thread, has none) and
 * calls MPI_Allreduce (in two sizes: the staged and, where the job allows,
 * the native path), MPI_Iallreduce + MPI_Wait and MPI_Bcast on the device
 * buffers.  After each call no context may be current: one left current is
 * adopted by the CUDA runtime (cudaGetDevice() changes under the
 * application).  Then the same calls with the primary context current must
 * leave it current.  Every value is checked against the host
 * reference.
 *
 * --move (a job with the native allreduce and two devices or more): then
 * rank 1 moves its buffers, first to the next device (allocated in that
 * device's primary context, as after cudaSetDevice), then into a context
 * of its own (cuCtxCreate) on its first device, and the same calls run on
 * them; then on the first buffers again.  Every value must be right: the
 * native path, set up on rank 1's first device, must not run its kernels
 * on memory they cannot reach (a sticky illegal address that fails every
 * later call).  Exit 77 on all ranks without a CUDA device.
 */
#include "stest_mpi.h"

#include <cuda.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 7      /* elements: a staged allreduce */
#define LARGE 300000 /* elements: native where the job runs it */

static int rank, size;

static void check_ctx(const char *what, CUcontext expected)
{
    CUcontext current = NULL;

    STEST_CU(cuCtxGetCurrent(&current));
    if (current != expected) {
        printf("rank %d: FAIL: %s left context %p current, the thread had %p\n", rank, what,
               (void *)current, (void *)expected);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void check_values(const char *what, CUdeviceptr buf, int count, int (*expect)(int i),
                         CUcontext ctx)
{
    int *host = malloc((size_t)count * sizeof(int));
    CUcontext saved = NULL;

    STEST_CU(cuCtxGetCurrent(&saved));
    STEST_CU(cuCtxSetCurrent(ctx));
    STEST_CU(cuMemcpyDtoH(host, buf, (size_t)count * sizeof(int)));
    STEST_CU(cuCtxSetCurrent(saved));
    for (int i = 0; i < count; ++i) {
        if (host[i] != expect(i)) {
            printf("rank %d: FAIL: %s index=%d: expected %d got %d\n", rank, what, i, expect(i),
                   host[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    free(host);
}

static int input(int i, int r) { return (i % 1000) + r; }
static int sum(int i) { return size * (i % 1000) + size * (size - 1) / 2; }
static int root_value(int i) { return input(i, size - 1); }

static void fill(CUdeviceptr buf, int count, CUcontext ctx)
{
    int *host = malloc((size_t)count * sizeof(int));
    CUcontext saved = NULL;

    for (int i = 0; i < count; ++i) {
        host[i] = input(i, rank);
    }
    STEST_CU(cuCtxGetCurrent(&saved));
    STEST_CU(cuCtxSetCurrent(ctx));
    STEST_CU(cuMemcpyHtoD(buf, host, (size_t)count * sizeof(int)));
    STEST_CU(cuCtxSetCurrent(saved));
    free(host);
}

/* The collectives with `current` current on the calling thread. */
static void run(const char *label, CUcontext current, CUcontext ctx, CUdeviceptr sbuf,
                CUdeviceptr rbuf)
{
    static const int counts[] = {SMALL, LARGE};
    char what[96];
    MPI_Request req;

    STEST_CU(cuCtxSetCurrent(current));
    for (int c = 0; c < 2; ++c) {
        int n = counts[c];

        fill(sbuf, n, ctx);
        MPI_Allreduce((void *)(uintptr_t)sbuf, (void *)(uintptr_t)rbuf, n, MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
        snprintf(what, sizeof(what), "MPI_Allreduce count=%d (%s)", n, label);
        check_ctx(what, current);
        check_values(what, rbuf, n, sum, ctx);

        fill(sbuf, n, ctx);
        MPI_Iallreduce((void *)(uintptr_t)sbuf, (void *)(uintptr_t)rbuf, n, MPI_INT, MPI_SUM,
                       MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        snprintf(what, sizeof(what), "MPI_Iallreduce count=%d (%s)", n, label);
        check_ctx(what, current);
        check_values(what, rbuf, n, sum, ctx);

        fill(sbuf, n, ctx);
        MPI_Bcast((void *)(uintptr_t)sbuf, n, MPI_INT, size - 1, MPI_COMM_WORLD);
        snprintf(what, sizeof(what), "MPI_Bcast count=%d (%s)", n, label);
        check_ctx(what, current);
        check_values(what, sbuf, n, root_value, ctx);
    }
    STEST_CU(cuCtxSetCurrent(ctx));
}

int main(int argc, char **argv)
{
    stest_dev_t dev;
    CUdeviceptr sbuf, rbuf;
    int rc, move = (argc > 1 && 0 == strcmp(argv[1], "--move"));

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    stest_mpi_init(rank, STEST_MPI_FAIL_RANK_FIRST);
    rc = stest_mpi_dev_open(&dev);
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != 0) {
        MPI_Finalize();
        return STEST_EXIT_SKIP;
    }
    STEST_CU(cuMemAlloc(&sbuf, LARGE * sizeof(int)));
    STEST_CU(cuMemAlloc(&rbuf, LARGE * sizeof(int)));

    run("no context current", NULL, dev.ctx, sbuf, rbuf);
    run("the primary context current", dev.ctx, dev.ctx, sbuf, rbuf);
    if (move) {
        CUdeviceptr s2, r2;
        CUcontext other = dev.ctx, own = dev.ctx;
        CUdevice next;

        if (rank == 1) {
            if (dev.count < 2) {
                printf("rank 1: FAIL: --move needs two devices\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            STEST_CU(cuDeviceGet(&next, (dev.index + 1) % dev.count));
            STEST_CU(cuDevicePrimaryCtxRetain(&other, next));
            STEST_CU(cuCtxSetCurrent(other));
        }
        STEST_CU(cuMemAlloc(&s2, LARGE * sizeof(int)));
        STEST_CU(cuMemAlloc(&r2, LARGE * sizeof(int)));
        run("rank 1's buffers on its next device", other, other, s2, r2);
        STEST_CU(cuCtxSetCurrent(other));
        STEST_CU(cuMemFree(s2));
        STEST_CU(cuMemFree(r2));
        if (rank == 1) {
            STEST_CU(cuDevicePrimaryCtxRelease(next));
            STEST_CU(cuCtxCreate(&own, NULL, 0, dev.dev));
        }
        STEST_CU(cuCtxSetCurrent(own));
        STEST_CU(cuMemAlloc(&s2, LARGE * sizeof(int)));
        STEST_CU(cuMemAlloc(&r2, LARGE * sizeof(int)));
        run("rank 1's buffers in a context of its own", own, own, s2, r2);
        STEST_CU(cuCtxSetCurrent(own));
        STEST_CU(cuMemFree(s2));
        STEST_CU(cuMemFree(r2));
        if (rank == 1) {
            STEST_CU(cuCtxDestroy(own));
        }
        run("the first buffers again", dev.ctx, dev.ctx, sbuf, rbuf);
    }

    STEST_CU(cuMemFree(sbuf));
    STEST_CU(cuMemFree(rbuf));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("test_coll_ctx: every collective left the thread's context as it found it\n");
    }
    stest_dev_close(&dev);
    MPI_Finalize();
    return 0;
}
