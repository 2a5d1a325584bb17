/*
 * Collectives on a communicator whose ranks were given different coll/strata
 * settings (the job sets them for some ranks only):
 *
 *   mpirun -np N test_coll_settings [--first bcast|reduce|scan|exscan|allreduce]
 *                                   [--bytes B] [--timeout S]
 *
 * The first collective on a fresh duplicate of MPI_COMM_WORLD is --first
 * (default bcast), of --bytes bytes (default 8 MiB: above half of a small
 * coll_strata_stage_max, below half of the default one), root the last
 * rank where there is one; then every other of the five, and allreduces
 * from 8 B to --bytes, on the same communicator.  Every call must return
 * within --timeout seconds (default 60; a hang prints "hang" and exits 1)
 * with MPI_SUCCESS and the values computed here from the inputs (integer
 * sums: exact).  Exits 1 naming the first wrong value.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, timeout_s = 60;
static const char *phase = "start";

static void on_alarm(int sig)
{
    char msg[160];
    int n;

    (void)sig;
    n = snprintf(msg, sizeof(msg),
                 "test_coll_settings: FAIL rank %d: hang: %s did not finish within %d s\n", rank,
                 phase, timeout_s);
    if (write(1, msg, (size_t)n) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

static int input(int r, long i) { return (int)((r * 13 + i * 7) % 1009); }

/* the sum of input(r, i) over ranks [0, upto) */
static long long sum_upto(int upto, long i)
{
    long long s = 0;

    for (int r = 0; r < upto; ++r) {
        s += input(r, i);
    }
    return s;
}

static int fail(const char *what, long i, long long got, long long want)
{
    printf("test_coll_settings: FAIL rank %d: %s: element %ld is %lld, expected %lld\n", rank, what,
           i, got, want);
    return 1;
}

/* One collective of `count` elements on comm, checked. */
static int run(const char *coll, MPI_Comm comm, long count)
{
    int root = size - 1, rc = MPI_SUCCESS, wrong = 0;
    long long *sbuf = malloc(sizeof(long long) * (size_t)(count ? count : 1));
    long long *rbuf = malloc(sizeof(long long) * (size_t)(count ? count : 1));

    if (NULL == sbuf || NULL == rbuf) {
        printf("test_coll_settings: FAIL rank %d: out of memory\n", rank);
        exit(1);
    }
    for (long i = 0; i < count; ++i) {
        sbuf[i] = input(rank, i);
        rbuf[i] = -1;
    }
    phase = coll;
    alarm((unsigned)timeout_s);
    if (0 == strcmp(coll, "bcast")) {
        rc = MPI_Bcast(sbuf, (int)count, MPI_LONG_LONG, root, comm);
    } else if (0 == strcmp(coll, "reduce")) {
        rc = MPI_Reduce(sbuf, rbuf, (int)count, MPI_LONG_LONG, MPI_SUM, root, comm);
    } else if (0 == strcmp(coll, "scan")) {
        rc = MPI_Scan(sbuf, rbuf, (int)count, MPI_LONG_LONG, MPI_SUM, comm);
    } else if (0 == strcmp(coll, "exscan")) {
        rc = MPI_Exscan(sbuf, rbuf, (int)count, MPI_LONG_LONG, MPI_SUM, comm);
    } else {
        rc = MPI_Allreduce(sbuf, rbuf, (int)count, MPI_LONG_LONG, MPI_SUM, comm);
    }
    alarm(0);
    if (MPI_SUCCESS != rc) {
        printf("test_coll_settings: FAIL rank %d: %s of %ld elements returned %d\n", rank, coll,
               count, rc);
        exit(1);
    }
    for (long i = 0; i < count && !wrong; ++i) {
        if (0 == strcmp(coll, "bcast")) {
            if (sbuf[i] != input(root, i)) {
                wrong = fail(coll, i, sbuf[i], input(root, i));
            }
        } else if (0 == strcmp(coll, "reduce")) {
            if (rank == root && rbuf[i] != sum_upto(size, i)) {
                wrong = fail(coll, i, rbuf[i], sum_upto(size, i));
            }
        } else if (0 == strcmp(coll, "scan")) {
            if (rbuf[i] != sum_upto(rank + 1, i)) {
                wrong = fail(coll, i, rbuf[i], sum_upto(rank + 1, i));
            }
        } else if (0 == strcmp(coll, "exscan")) {
            if (rank > 0 && rbuf[i] != sum_upto(rank, i)) {
                wrong = fail(coll, i, rbuf[i], sum_upto(rank, i));
            }
        } else if (rbuf[i] != sum_upto(size, i)) {
            wrong = fail(coll, i, rbuf[i], sum_upto(size, i));
        }
    }
    free(sbuf);
    free(rbuf);
    return wrong;
}

int main(int argc, char **argv)
{
    static const char *colls[] = {"bcast", "reduce", "scan", "exscan", "allreduce"};
    const char *first = "bcast";
    long bytes = 8L << 20, count;
    int wrong = 0, all_wrong = 0;
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--first")) {
            first = argv[i + 1];
        } else if (0 == strcmp(argv[i], "--bytes")) {
            bytes = atol(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--timeout")) {
            timeout_s = atoi(argv[i + 1]);
        }
    }
    signal(SIGALRM, on_alarm);
    count = bytes / (long)sizeof(long long);
    /* a communicator whose first collective is the one asked for
     * (MPI_Init may have run some on MPI_COMM_WORLD) */
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    wrong |= run(first, comm, count);
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); ++c) {
        if (0 != strcmp(colls[c], first)) {
            wrong |= run(colls[c], comm, count);
        }
    }
    for (long n = 1; n <= count; n *= 16) {
        wrong |= run("allreduce", comm, n);
    }
    phase = "the final check";
    alarm((unsigned)timeout_s);
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    alarm(0);
    MPI_Comm_free(&comm);
    if (0 == rank) {
        printf("test_coll_settings: %s on %d ranks (first %s, %ld bytes)\n",
               all_wrong ? "FAIL" : "ok", size, first, bytes);
    }
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
