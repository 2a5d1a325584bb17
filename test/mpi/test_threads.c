/*
 * Collectives and point-to-point on device buffers from several threads at
 * once, each on a communicator of its own, under MPI_THREAD_MULTIPLE:
 *
 *   mpirun -np N test_threads [--threads T] [--rounds R] [--count C] [--timeout S]
 *
 * The main thread duplicates MPI_COMM_WORLD T times (default 4), then T
 * threads run at once, thread t on duplicate t with the device's primary
 * context current: R rounds (default 20) of MPI_Allreduce (a small and a
 * C-element one, default 65536: staged and, where the job runs it, native),
 * MPI_Bcast, MPI_Allgather, MPI_Iallreduce + MPI_Wait, MPI_Reduce to a
 * rotating root, and a ring of MPI_Sendrecv on device buffers (through the
 * pml: device memory to pml/ucx with Strata's transports), every value
 * checked against what the inputs (rank, thread, round) make.  A thread
 * stuck for --timeout seconds (default 120) fails the run ("hang").  Exits
 * 1 naming the first wrong value; 77 on every rank without
 * MPI_THREAD_MULTIPLE or a CUDA device.
 */
#include "stest_mpi.h"

#include <cuda.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 16
#define SMALL       7

static int rank, size, nthreads = 4, rounds = 20, timeout_s = 120;
static long count = 65536;
static CUcontext ctx;
static MPI_Comm comms[MAX_THREADS];

static void on_alarm(int sig)
{
    static const char msg[] = "test_threads: FAIL: hang: a thread did not finish in time\n";

    (void)sig;
    if (write(1, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

/* input element i of rank r, thread t, round k */
static int input(int r, int t, int k, long i)
{
    return (int)((i * 7 + r * 131 + t * 17 + k * 5) % 1000);
}

static void fail(int t, const char *what, long i, long got, long want)
{
    printf("rank %d: FAIL: thread %d: %s: element %ld is %ld, expected %ld\n", rank, t, what, i,
           got, want);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check_rc(int t, const char *what, int rc)
{
    if (MPI_SUCCESS != rc) {
        printf("rank %d: FAIL: thread %d: %s returned %d\n", rank, t, what, rc);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void cu(CUresult res, const char *what)
{
    if (CUDA_SUCCESS != res) {
        printf("rank %d: FAIL: %s: CUresult %d\n", rank, what, (int)res);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

typedef struct work {
    int t;
    int *host;
    CUdeviceptr s, r;
} work_t;

static void put(work_t *w, CUdeviceptr d, long n, int k, int r)
{
    for (long i = 0; i < n; ++i) {
        w->host[i] = input(r, w->t, k, i);
    }
    cu(cuMemcpyHtoD(d, w->host, (size_t)n * sizeof(int)), "cuMemcpyHtoD");
}

static void get(work_t *w, CUdeviceptr d, long n)
{
    cu(cuMemcpyDtoH(w->host, d, (size_t)n * sizeof(int)), "cuMemcpyDtoH");
}

static long sum_upto(int upto, int t, int k, long i)
{
    long s = 0;

    for (int r = 0; r < upto; ++r) {
        s += input(r, t, k, i);
    }
    return s;
}

static void round_run(work_t *w, int k)
{
    MPI_Comm comm = comms[w->t];
    void *s = (void *)(uintptr_t)w->s, *r = (void *)(uintptr_t)w->r;
    int t = w->t, root = k % size;
    MPI_Request req;

    for (int big = 0; big < 2; ++big) {
        long n = big ? count : SMALL;

        put(w, w->s, n, k, rank);
        check_rc(t, "MPI_Allreduce", MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, comm));
        get(w, w->r, n);
        for (long i = 0; i < n; ++i) {
            if (w->host[i] != sum_upto(size, t, k, i)) {
                fail(t, "MPI_Allreduce", i, w->host[i], sum_upto(size, t, k, i));
            }
        }
    }
    put(w, w->s, count, k, rank);
    check_rc(t, "MPI_Iallreduce", MPI_Iallreduce(s, r, (int)count, MPI_INT, MPI_SUM, comm, &req));
    check_rc(t, "MPI_Wait", MPI_Wait(&req, MPI_STATUS_IGNORE));
    get(w, w->r, count);
    for (long i = 0; i < count; ++i) {
        if (w->host[i] != sum_upto(size, t, k, i)) {
            fail(t, "MPI_Iallreduce", i, w->host[i], sum_upto(size, t, k, i));
        }
    }
    put(w, w->s, count, k, rank);
    check_rc(t, "MPI_Reduce", MPI_Reduce(s, r, (int)count, MPI_INT, MPI_SUM, root, comm));
    if (rank == root) {
        get(w, w->r, count);
        for (long i = 0; i < count; ++i) {
            if (w->host[i] != sum_upto(size, t, k, i)) {
                fail(t, "MPI_Reduce", i, w->host[i], sum_upto(size, t, k, i));
            }
        }
    }
    put(w, w->s, count, k, rank);
    check_rc(t, "MPI_Bcast", MPI_Bcast(s, (int)count, MPI_INT, root, comm));
    get(w, w->s, count);
    for (long i = 0; i < count; ++i) {
        if (w->host[i] != input(root, t, k, i)) {
            fail(t, "MPI_Bcast", i, w->host[i], input(root, t, k, i));
        }
    }
    put(w, w->s, SMALL, k, rank);
    check_rc(t, "MPI_Allgather", MPI_Allgather(s, SMALL, MPI_INT, r, SMALL, MPI_INT, comm));
    get(w, w->r, (long)SMALL * size);
    for (int q = 0; q < size; ++q) {
        for (long i = 0; i < SMALL; ++i) {
            if (w->host[q * SMALL + i] != input(q, t, k, i)) {
                fail(t, "MPI_Allgather", q * SMALL + i, w->host[q * SMALL + i], input(q, t, k, i));
            }
        }
    }
    /* the ring: from the left, to the right */
    put(w, w->s, count, k, rank);
    check_rc(t, "MPI_Sendrecv",
             MPI_Sendrecv(s, (int)count, MPI_INT, (rank + 1) % size, k, r, (int)count, MPI_INT,
                          (rank + size - 1) % size, k, comm, MPI_STATUS_IGNORE));
    get(w, w->r, count);
    for (long i = 0; i < count; ++i) {
        int left = (rank + size - 1) % size;

        if (w->host[i] != input(left, t, k, i)) {
            fail(t, "MPI_Sendrecv", i, w->host[i], input(left, t, k, i));
        }
    }
}

static void *thread_main(void *arg)
{
    work_t *w = arg;

    cu(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    for (int k = 0; k < rounds; ++k) {
        round_run(w, k);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t threads[MAX_THREADS];
    work_t work[MAX_THREADS];
    int provided = 0, skip = 0;
    CUdevice dev;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    stest_mpi_init(rank, STEST_MPI_FAIL_RANK_FIRST);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) nthreads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout")) timeout_s = atoi(argv[i + 1]);
    }
    nthreads = (nthreads < 1) ? 1 : (nthreads > MAX_THREADS) ? MAX_THREADS : nthreads;
    count = (count < SMALL * size) ? SMALL * size : count;
    skip = (provided < MPI_THREAD_MULTIPLE) || (CUDA_SUCCESS != cuInit(0)) ||
           (CUDA_SUCCESS != cuDeviceGet(&dev, 0)) ||
           (CUDA_SUCCESS != cuDevicePrimaryCtxRetain(&ctx, dev));
    MPI_Allreduce(MPI_IN_PLACE, &skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (skip) {
        if (0 == rank) {
            printf("test_threads: skip: %s\n",
                   (provided < MPI_THREAD_MULTIPLE) ? "no MPI_THREAD_MULTIPLE" : "no CUDA device");
        }
        MPI_Finalize();
        return 77;
    }
    cu(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    for (int t = 0; t < nthreads; ++t) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
        MPI_Comm_set_errhandler(comms[t], MPI_ERRORS_RETURN);
        work[t].t = t;
        work[t].host = malloc(sizeof(int) * (size_t)count * (size_t)size);
        cu(cuMemAlloc(&work[t].s, sizeof(int) * (size_t)count), "cuMemAlloc");
        cu(cuMemAlloc(&work[t].r, sizeof(int) * (size_t)count * (size_t)size), "cuMemAlloc");
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)timeout_s);
    for (int t = 0; t < nthreads; ++t) {
        pthread_create(&threads[t], NULL, thread_main, &work[t]);
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(threads[t], NULL);
    }
    alarm(0);
    for (int t = 0; t < nthreads; ++t) {
        MPI_Comm_free(&comms[t]);
        cu(cuMemFree(work[t].s), "cuMemFree");
        cu(cuMemFree(work[t].r), "cuMemFree");
        free(work[t].host);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_threads: ok: %d threads x %d rounds on %d ranks, %ld elements\n", nthreads,
               rounds, size, count);
    }
    MPI_Finalize();
    return 0;
}
