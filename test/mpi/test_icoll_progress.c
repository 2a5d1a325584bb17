/*
 * Progress without MPI calls: an MPI_Iallreduce started, then the ranks
 * compute without calling MPI (asleep, as a GPU code's host thread, or
 * busy), watching the receive buffer.
 *
 *   mpirun -np N test_icoll_progress --expect thread|calls [--compute sleep|busy]
 *                                    [--count N] [--idle S] [--timeout S]
 *
 *   --expect thread  the result must land in the receive buffer while no
 *                    rank calls MPI (coll/strata's progress thread), within
 *                    --timeout seconds (default 60: a hang, not a speed);
 *                    then, with the thread started and nothing to do, the
 *                    process must use under a tenth of --idle seconds
 *                    (default 2) of CPU time while it sleeps that long
 *   --expect calls   it must not land before MPI is called again (nobody
 *                    progresses the call: progress inside MPI calls only),
 *                    looked at for 2 s; then MPI_Wait completes it
 *   --count N        doubles (default 2M: many more chunks than the
 *                    pipeline's slots, so no start can finish it alone)
 * Either way the result is checked against the sum computed here, and the
 * request completes.  Prints "test_icoll_progress: OK" on rank 0.
 */
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PROG "test_icoll_progress"

static int rank, size;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru); /* every thread of the process */
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double input(int r, long i) { return (double)(r + 1) * (double)(i % 4093); }

static double expected(long i) { return (double)size * (size + 1) / 2 * (double)(i % 4093); }

/* Whether the whole result is in rbuf (read without MPI: the test looks
 * at memory the call writes; it does not use it before MPI_Wait). */
static bool landed(const volatile double *rbuf, long count)
{
    for (long i = count - 1; i >= 0; i--) {
        if (rbuf[i] != expected(i)) return false;
    }
    return true;
}

static void on_alarm(int sig)
{
    (void)sig;
    fprintf(stderr, PROG ": rank %d: timed out\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    bool want_thread = false, busy = false, ok = true;
    long count = 2L << 20;
    double idle = 2.0, timeout = 60.0, t0, cpu;
    double *sbuf, *rbuf;
    volatile double sink = 0;
    MPI_Request req;
    int flag = 0, one = 1, all;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect") && i + 1 < argc)
            want_thread = !strcmp(argv[++i], "thread");
        else if (!strcmp(argv[i], "--compute") && i + 1 < argc) busy = !strcmp(argv[++i], "busy");
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = atol(argv[++i]);
        else if (!strcmp(argv[i], "--idle") && i + 1 < argc) idle = atof(argv[++i]);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atof(argv[++i]);
        else {
            if (rank == 0) fprintf(stderr, "usage: " PROG " --expect thread|calls [...]\n");
            MPI_Finalize();
            return 2;
        }
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)(timeout + idle + 60));
    sbuf = malloc(sizeof(double) * (size_t)count);
    rbuf = malloc(sizeof(double) * (size_t)count);
    if (sbuf == NULL || rbuf == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < count; i++) {
        sbuf[i] = input(rank, i);
        rbuf[i] = -1.0;
    }
    /* a blocking call sets the communicator up for coll/strata */
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    MPI_Iallreduce(sbuf, rbuf, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    /* compute, without MPI, until the result is there (or it is clear it
     * will not be) */
    t0 = now();
    while (!landed(rbuf, count) && now() - t0 < (want_thread ? timeout : 2.0)) {
        if (busy) {
            for (int k = 0; k < 200000; k++) sink += k * 0.5; /* the compute */
        } else {
            usleep(1000);
        }
    }
    if (want_thread && !landed(rbuf, count)) {
        fprintf(stderr, PROG ": rank %d: the result did not land in %.0f s without MPI calls\n",
                rank, timeout);
        ok = false;
    } else if (!want_thread && landed(rbuf, count)) {
        fprintf(stderr,
                PROG ": rank %d: the result landed without MPI calls (expected progress "
                     "inside MPI calls only)\n",
                rank);
        ok = false;
    }
    while (!flag) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    for (long i = 0; i < count; i++) {
        if (rbuf[i] != expected(i)) {
            fprintf(stderr, PROG ": rank %d: element %ld is %g, expected %g\n", rank, i, rbuf[i],
                    expected(i));
            ok = false;
            break;
        }
    }
    if (ok && want_thread) {
        /* the thread is started and has nothing to do: it must sleep */
        cpu = cpu_seconds();
        t0 = now();
        while (now() - t0 < idle) usleep(10000);
        cpu = cpu_seconds() - cpu;
        printf(PROG ": rank %d: %.3f s of CPU time in %.1f s idle\n", rank, cpu, idle);
        if (cpu > idle / 10) {
            fprintf(stderr, PROG ": rank %d: an idle process used %.3f s of CPU in %.1f s\n", rank,
                    cpu, idle);
            ok = false;
        }
    }
    {
        int mine = ok ? 1 : 0, every = 0;

        MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (rank == 0 && every)
            printf(PROG ": OK (%s, %s compute)\n", want_thread ? "thread" : "calls",
                   busy ? "busy" : "sleeping");
        ok = every;
    }
    (void)sink;
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
