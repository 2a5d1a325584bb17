/*
 * A peer killed while a nonblocking collective is outstanding: every
 * survivor's MPI_Wait must return an error, none may hang.  Run under a
 * launcher that keeps the job when a process dies (Open MPI: mpirun
 * --enable-recovery).
 *
 *   mpirun --enable-recovery -np N test_icoll_peer_death --victim R
 *          [--count N] [--timeout S] [--before] [--blocking]
 *
 * First one MPI_Iallreduce completes and is checked against the sum
 * computed here (the pipeline works on this communicator).  Then every rank
 * starts a second one of --count doubles (default 2M: far more chunks than
 * the pipeline's slots, so nobody can finish it without the victim's
 * part); the victim (world rank R) kills itself with SIGKILL right after
 * its start, or with --before just before it; the survivors wait.  Each
 * survivor prints "test_icoll_peer_death: rank X: error (...)" when its
 * MPI_Wait returns an error within --timeout seconds (default 60: a hang,
 * not a speed), "...: rank X: no error" when it returns success (wrong:
 * the victim's part is missing), or, past the timeout, stest_watchdog's
 * "FAIL rank X: hang: ..." (test/common/stest_watchdog.c).  Survivors
 * leave with _exit, without MPI_Finalize (whose fence would wait for the
 * dead), exit status 0 on an error, 1 otherwise.  With --blocking the
 * second call is an MPI_Allreduce: the survivors' call itself must return
 * the error (the victim dies just before it).
 */
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stest_watchdog.h"

#define PROG "test_icoll_peer_death"

static int rank, size;

static double input(int r, long i) { return (double)(r + 1) * (double)(i % 4093); }

static void die(void)
{
    fflush(stdout);
    raise(SIGKILL);
}

/* One checked MPI_Iallreduce of count doubles: whether it was right. */
static bool checked_round(long count)
{
    double *sbuf = calloc((size_t)count, sizeof(double));
    double *rbuf = calloc((size_t)count, sizeof(double));
    MPI_Request req;
    bool ok = true;
    int rc;

    if (NULL == sbuf || NULL == rbuf) {
        return false;
    }
    for (long i = 0; i < count; ++i) sbuf[i] = input(rank, i);
    rc = MPI_Iallreduce(sbuf, rbuf, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (long i = 0; MPI_SUCCESS == rc && i < count && ok; ++i) {
        ok = rbuf[i] == (double)size * (size + 1) / 2 * (double)(i % 4093);
    }
    free(sbuf);
    free(rbuf);
    return MPI_SUCCESS == rc && ok;
}

int main(int argc, char **argv)
{
    long count = 2L << 20;
    double t0;
    int victim = -1, rc, timeout = 60;
    bool before = false, blocking = false;
    double *sbuf, *rbuf;
    MPI_Request req;

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--victim") && i + 1 < argc) {
            victim = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            count = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            timeout = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--before")) {
            before = true;
        } else if (!strcmp(argv[i], "--blocking")) {
            blocking = true;
        } else {
            fprintf(stderr, PROG ": unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (victim < 0 || victim >= size || size < 2) {
        if (0 == rank) fprintf(stderr, PROG ": --victim must name a rank of 2 or more\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* a blocking collective sets strata's pipeline up on the communicator
     * (nonblocking calls before that go to the module below); then a
     * nonblocking round proves the path right */
    {
        int one = 1, all = 0;

        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    if (!checked_round(4096) || !checked_round(count)) {
        printf(PROG ": rank %d: the first MPI_Iallreduce was wrong\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    sbuf = calloc((size_t)count, sizeof(double));
    rbuf = calloc((size_t)count, sizeof(double));
    if (NULL == sbuf || NULL == rbuf) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < count; ++i) sbuf[i] = input(rank, i);
    if (rank == victim && (before || blocking)) die();
    stest_watchdog_init();
    stest_watchdog_arm(rank, blocking ? PROG ": the MPI_Allreduce" : PROG ": the MPI_Wait",
                       timeout);
    t0 = MPI_Wtime();
    if (blocking) {
        rc = MPI_Allreduce(sbuf, rbuf, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else {
        rc = MPI_Iallreduce(sbuf, rbuf, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        if (rank == victim) die();
        if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    alarm(0);
    if (MPI_SUCCESS == rc) {
        printf(PROG ": rank %d: no error\n", rank);
        fflush(stdout);
        _exit(1);
    } else {
        char what[MPI_MAX_ERROR_STRING];
        int len = 0, cls = 0;

        MPI_Error_class(rc, &cls);
        MPI_Error_string(cls, what, &len);
        printf(PROG ": rank %d: error (class %d: %s) after %.1f s\n", rank, cls, what,
               MPI_Wtime() - t0);
        fflush(stdout);
        _exit(0);
    }
}
