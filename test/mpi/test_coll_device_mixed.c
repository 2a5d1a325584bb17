/*
 * Collectives whose ranks disagree on what is legal to disagree on, with
 * device buffers cut into pieces (run it with a small coll_strata_stage_max,
 * e.g. 1 MiB, so that the messages below are cut):
 *
 *   mpirun -np N --mca coll_strata_stage_max 1048576 test_coll_device_mixed
 *
 *   memory kinds  rank 0 passes device buffers, the others host buffers:
 *                 MPI_Allreduce, MPI_Reduce (root 0 and root N-1), MPI_Bcast,
 *                 MPI_Scan of COUNT ints; every rank must run the same
 *                 sequence of collectives although only rank 0 stages
 *   status        a staged MPI_Iallreduce's status: not cancelled
 *   local         MPI_Reduce_local on device buffers (through MPI_COMM_SELF)
 *   bad input     with MPI_ERRORS_RETURN, device buffers and a negative count,
 *                 a root out of range, MPI_OP_NULL: MPI's own error classes,
 *                 and the communicator still works afterwards
 *   datatypes     MPI_Bcast of COUNT (double, int) pairs: the root describes
 *                 them as MPI_DOUBLE_INT (a predefined type with a hole), the
 *                 others as a struct type without the hole; the ranks may not
 *                 cut the message at different places
 * Every value is checked against the host reference (device memory through
 * cuMemcpyDtoH).  A check that takes more than 60 s prints "hang" (alarm).
 * Exit 77 on every rank when no CUDA device can be had.
 */
#include "stest_cuda.h"
#include "stest_mpi.h"

#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT (3 << 20) /* ints: 12 MiB, cut into pieces at a 1 MiB bound */
#define PAIRS (1 << 20) /* (double, int) pairs: 12 MiB of data, 16 MiB at the root */

typedef struct {
    double d;
    int i;
} pair_t; /* MPI_DOUBLE_INT's layout: 16 bytes, 4 of them a hole */

static int rank, size;

static void fail(const char *what, long index, long expected, long got)
{
    printf("FAIL rank %d: %s index=%ld: expected %ld got %ld\n", rank, what, index, expected, got);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void on_alarm(int sig)
{
    (void)sig;
    printf("FAIL rank %d: hang: a check did not finish within 60 s\n", rank);
    fflush(stdout);
    _exit(1);
}

/* A buffer of `bytes` holding `host`: device memory on rank 0, else host. */
static void *buffer_of(const void *host, size_t bytes, int device)
{
    void *h;

    if (device) {
        return (void *)stest_dev_dup(host, bytes);
    }
    h = malloc(bytes);
    if (h == NULL) {
        fail("malloc", -1, 0, 0);
    }
    memcpy(h, host, bytes);
    return h;
}

/* The contents of a buffer from buffer_of, into `out`; frees it. */
static void read_back(void *buf, void *out, size_t bytes, int device)
{
    if (device) {
        stest_dev_read_free(out, (CUdeviceptr)buf, bytes);
    } else {
        memcpy(out, buf, bytes);
        free(buf);
    }
}

static void check_ints(const char *what, const int *got, const int *expect, long n)
{
    for (long i = 0; i < n; ++i) {
        if (got[i] != expect[i]) {
            fail(what, i, expect[i], got[i]);
        }
    }
    if (rank == 0) {
        printf("%s: ok\n", what);
    }
}

static void test_kinds(int *in, int *out, int *expect)
{
    int device = rank == 0;
    void *s, *r;

    for (long i = 0; i < COUNT; ++i) {
        in[i] = (int)(rank * 7 + i % 1000);
    }
    /* allreduce, and reduce to root 0 (device) and to root size-1 (host) */
    for (int which = 0; which < 3; ++which) {
        int root = (which == 1) ? 0 : size - 1, receives = which == 0 || rank == root;
        const char *what = (which == 0) ? "allreduce, device on rank 0 only"
                         : (which == 1) ? "reduce to root 0, device on rank 0 only"
                                        : "reduce to root N-1, device on rank 0 only";

        for (long i = 0; i < COUNT; ++i) {
            expect[i] = (int)(7 * size * (size - 1) / 2 + size * (i % 1000));
        }
        memset(out, 0, sizeof(int) * COUNT);
        s = buffer_of(in, sizeof(int) * COUNT, device);
        r = buffer_of(out, sizeof(int) * COUNT, device);
        alarm(60);
        if (which == 0) {
            MPI_Allreduce(s, r, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        } else {
            MPI_Reduce(s, r, COUNT, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        }
        alarm(0);
        read_back(s, in, sizeof(int) * COUNT, device);
        read_back(r, out, sizeof(int) * COUNT, device);
        if (receives) {
            check_ints(what, out, expect, COUNT);
        }
    }
    /* scan */
    for (long i = 0; i < COUNT; ++i) {
        expect[i] = (int)(7 * rank * (rank + 1) / 2 + (rank + 1) * (i % 1000));
    }
    s = buffer_of(in, sizeof(int) * COUNT, device);
    r = buffer_of(out, sizeof(int) * COUNT, device);
    alarm(60);
    MPI_Scan(s, r, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    alarm(0);
    read_back(s, in, sizeof(int) * COUNT, device);
    read_back(r, out, sizeof(int) * COUNT, device);
    check_ints("scan, device on rank 0 only", out, expect, COUNT);
    /* bcast from rank 0 (device) */
    for (long i = 0; i < COUNT; ++i) {
        expect[i] = (int)(i % 1000);
    }
    r = buffer_of(in, sizeof(int) * COUNT, device);
    alarm(60);
    MPI_Bcast(r, COUNT, MPI_INT, 0, MPI_COMM_WORLD);
    alarm(0);
    read_back(r, out, sizeof(int) * COUNT, device);
    check_ints("bcast from the device root to host ranks", out, expect, COUNT);
}

/* MPI_Wait's status of a staged nonblocking collective says "not cancelled"
 * and no error, as for any completed collective. */
static void test_status(void)
{
    int one = 1, cancelled = -1;
    void *s = buffer_of(&one, sizeof(one), 1), *r = buffer_of(&one, sizeof(one), 1);
    MPI_Request req;
    MPI_Status st;

    for (int i = 0; i < 50; ++i) {
        MPI_Iallreduce(s, r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, &st);
        MPI_Test_cancelled(&st, &cancelled);
        if (cancelled) {
            fail("MPI_Test_cancelled on a staged MPI_Iallreduce's status", i, 0, cancelled);
        }
    }
    read_back(s, &one, sizeof(one), 1);
    read_back(r, &one, sizeof(one), 1);
    if (one != size) {
        fail("iallreduce of ones", 0, size, one);
    }
    if (rank == 0) {
        printf("status of staged nonblocking collectives: not cancelled: ok\n");
    }
}

static void test_reduce_local(int *a, int *b, int *expect)
{
    void *da, *db;

    for (long i = 0; i < COUNT; ++i) {
        a[i] = (int)(i % 977);
        b[i] = (int)(rank + 2 * (i % 13));
        expect[i] = a[i] + b[i];
    }
    da = buffer_of(a, sizeof(int) * COUNT, 1);
    db = buffer_of(b, sizeof(int) * COUNT, 1);
    MPI_Reduce_local(da, db, COUNT, MPI_INT, MPI_SUM);
    read_back(da, a, sizeof(int) * COUNT, 1);
    read_back(db, b, sizeof(int) * COUNT, 1);
    check_ints("reduce_local on device buffers", b, expect, COUNT);
}

static void expect_class(const char *what, int rc, int want)
{
    int cls = -1;

    MPI_Error_class(rc, &cls);
    if (cls != want) {
        fail(what, -1, want, cls);
    }
}

static void test_bad_input(void)
{
    int one = 1;
    void *s = buffer_of(&one, sizeof(one), 1), *r = buffer_of(&one, sizeof(one), 1);
    MPI_Request req;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    expect_class("allreduce, count -1", MPI_Allreduce(s, r, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                 MPI_ERR_COUNT);
    expect_class("bcast, root = size", MPI_Bcast(r, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    expect_class("iallreduce, MPI_OP_NULL",
                 MPI_Iallreduce(s, r, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &req), MPI_ERR_OP);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Allreduce(s, r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    read_back(s, &one, sizeof(one), 1);
    read_back(r, &one, sizeof(one), 1);
    if (one != size) {
        fail("allreduce after the rejected calls", 0, size, one);
    }
    if (rank == 0) {
        printf("bad input on device buffers: MPI's own errors, communicator still works: ok\n");
    }
}

/* The root's MPI_DOUBLE_INT (16-byte elements with a hole) against the
 * others' 12-byte struct: one type signature, two layouts. */
static void test_types(void)
{
    int root = 0, blocklens[2] = {1, 1};
    MPI_Aint displs[2] = {0, sizeof(double)};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT}, tight, packed;
    size_t bytes = (rank == root) ? sizeof(pair_t) * PAIRS : 12 * (size_t)PAIRS;
    char *host = malloc(bytes), *got = malloc(bytes);
    void *buf;

    if (host == NULL || got == NULL) {
        fail("malloc", -1, 0, 0);
    }
    MPI_Type_create_struct(2, blocklens, displs, types, &tight);
    MPI_Type_create_resized(tight, 0, 12, &packed);
    MPI_Type_commit(&packed);
    memset(host, 0, bytes);
    if (rank == root) {
        pair_t *p = (pair_t *)host;

        for (long i = 0; i < PAIRS; ++i) {
            p[i].d = (double)i + 0.5;
            p[i].i = (int)(i * 3);
        }
    }
    buf = buffer_of(host, bytes, 1); /* device buffers on every rank */
    alarm(60);
    MPI_Bcast(buf, PAIRS, (rank == root) ? MPI_DOUBLE_INT : packed, root, MPI_COMM_WORLD);
    alarm(0);
    read_back(buf, got, bytes, 1);
    for (long i = 0; i < PAIRS && rank != root; ++i) {
        double d;
        int v;

        memcpy(&d, got + 12 * i, sizeof(d));
        memcpy(&v, got + 12 * i + 8, sizeof(v));
        if (d != (double)i + 0.5 || v != (int)(i * 3)) {
            fail("bcast, MPI_DOUBLE_INT at the root, a 12-byte struct elsewhere", i,
                 (long)(i * 3), v);
        }
    }
    if (rank == root) {
        printf("bcast, MPI_DOUBLE_INT at the root, a 12-byte struct elsewhere: ok\n");
    }
    MPI_Type_free(&packed);
    MPI_Type_free(&tight);
    free(host);
    free(got);
}

int main(int argc, char **argv)
{
    int ok, all_ok, *in, *out, *expect;
    stest_dev_t dev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    signal(SIGALRM, on_alarm);
    stest_mpi_init(rank, STEST_MPI_FAIL_FIRST);
    ok = stest_dev_open(0, &dev) == 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0) {
            printf("test_coll_device_mixed: skip: no CUDA device\n");
        }
        MPI_Finalize();
        return 77;
    }
    in = malloc(sizeof(int) * COUNT);
    out = malloc(sizeof(int) * COUNT);
    expect = malloc(sizeof(int) * COUNT);
    if (in == NULL || out == NULL || expect == NULL) {
        fail("malloc", -1, 0, 0);
    }
    test_kinds(in, out, expect);
    test_status();
    test_reduce_local(in, out, expect);
    test_bad_input();
    test_types();
    free(in);
    free(out);
    free(expect);
    if (rank == 0) {
        printf("test_coll_device_mixed: all checks passed\n");
    }
    MPI_Finalize();
    return 0;
}
