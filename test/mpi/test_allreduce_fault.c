/*
 * MPI_Allreduce when one rank fails its part on purpose (coll/strata's
 * coll_strata_test_fail, set for that rank only), with MPI_ERRORS_RETURN:
 *
 *   mpirun -np N test_allreduce_fault --expect fail|ok|own [--failing R] [--count N]
 *                                     [--timeout S] [--coll NAME] [--root R]
 *
 * The first call, an MPI_INT sum of --count elements (default 1 Mi), must
 * return on every rank within --timeout seconds (default 60; a hang prints
 * "hang" and exits 1): with --expect fail every rank must get an error
 * (each says which), with --expect ok (a failure strata absorbs, e.g. in its
 * set-up, by handing the call on) every rank must get MPI_SUCCESS and the
 * right sums, with --expect own (a failure only rank --failing's own result
 * depends on, e.g. its copy out of the node's result) that rank must get an
 * error and every other rank MPI_SUCCESS and the right sums.  --coll
 * reduce_scatter_block (each rank's block: count/ranks elements) or reduce
 * (to --root, default 0; the others' results are nobody's) makes every call
 * that collective instead, each rank checking its part; --coll bcast (from
 * --root: every other rank checks the root's vector) and --coll allgather
 * (count/ranks elements per rank: every rank checks every block) make it
 * the copy-only collectives; with --swap-pairs they describe the ints as
 * count/2 pairs stored swapped (a datatype strata must pack: its memory
 * layout is not contiguous).  Then later calls on the same communicator, small and large,
 * separate and in place, must all be right.  Exits 1 naming the first
 * wrong value or rank.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, timeout_s = 60, root = 0, swap_pairs = 0;
static MPI_Datatype pair_swapped; /* two ints, the second first */
static const char *coll = "allreduce";
static const char *phase = "start";

static void on_alarm(int sig)
{
    char msg[160];
    int n;

    (void)sig;
    n = snprintf(msg, sizeof(msg), "test_allreduce_fault: FAIL rank %d: hang: %s did not finish "
                 "within %d s\n", rank, phase, timeout_s);
    if (write(1, msg, (size_t)n) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

/* input element i of rank r, and the sum over all ranks */
static int input(int r, long i)
{
    return (int)((r * 7 + i) % 1000);
}

static long long expected(long i)
{
    long long sum = 0;

    for (int r = 0; r < size; ++r) {
        sum += input(r, i);
    }
    return sum;
}

/* Element i of the result: of the reduced vector, the root's vector, or
 * the gathered one (count / size elements per rank). */
static long long want(long i, long count)
{
    long per = count / size;

    if (!strcmp(coll, "bcast")) return input(root, i);
    if (!strcmp(coll, "allgather")) return input((int)(i / per), i % per);
    return expected(i);
}

/* This rank's part of the result of count elements: [*lo, *hi). */
static void part(long count, long *lo, long *hi)
{
    *lo = 0;
    *hi = count;
    if (!strcmp(coll, "reduce_scatter_block")) {
        *lo = count / size * rank;
        *hi = *lo + count / size;
    } else if (!strcmp(coll, "allgather")) {
        *hi = count / size * size;
    } else if (!strcmp(coll, "reduce") && rank != root) {
        *hi = 0;
    }
}

/* One call of the collective over count elements; returns its rc, checks
 * this rank's part if ok. */
static int call(long count, int in_place, int check, int *wrong)
{
    if (swap_pairs) {
        /* whole pairs: every block an even number of ints */
        count = !strcmp(coll, "allgather") ? count / size / 2 * 2 * size : count / 2 * 2;
    }
    int *sbuf = malloc(sizeof(int) * (size_t)(count ? count : 1));
    int *rbuf = malloc(sizeof(int) * (size_t)(count ? count : 1));
    const void *s = in_place ? MPI_IN_PLACE : (const void *)sbuf;
    long lo, hi;
    int rc;

    part(count, &lo, &hi);
    for (long i = 0; i < count; ++i) {
        sbuf[i] = input(rank, i);
        rbuf[i] = in_place ? sbuf[i] : -1;
    }
    alarm((unsigned)timeout_s);
    if (!strcmp(coll, "bcast")) {
        if (rank == root) memcpy(rbuf, sbuf, sizeof(int) * (size_t)count);
        rc = swap_pairs ? MPI_Bcast(rbuf, (int)(count / 2), pair_swapped, root, MPI_COMM_WORLD)
                        : MPI_Bcast(rbuf, (int)count, MPI_INT, root, MPI_COMM_WORLD);
    } else if (!strcmp(coll, "allgather")) {
        long per = count / size;

        if (in_place) {
            for (long i = 0; i < per * size; ++i) rbuf[i] = -1;
            memcpy(rbuf + per * rank, sbuf, sizeof(int) * (size_t)per);
        }
        rc = swap_pairs
                 ? MPI_Allgather(s, (int)(per / 2), pair_swapped, rbuf, (int)(per / 2),
                                 pair_swapped, MPI_COMM_WORLD)
                 : MPI_Allgather(s, (int)per, MPI_INT, rbuf, (int)per, MPI_INT, MPI_COMM_WORLD);
    } else if (!strcmp(coll, "reduce_scatter_block")) {
        rc = MPI_Reduce_scatter_block(s, rbuf, (int)(count / size), MPI_INT, MPI_SUM,
                                      MPI_COMM_WORLD);
    } else if (!strcmp(coll, "reduce")) {
        /* only the root may pass MPI_IN_PLACE */
        rc = MPI_Reduce(rank == root ? s : sbuf, rank == root ? rbuf : NULL, (int)count, MPI_INT,
                        MPI_SUM, root, MPI_COMM_WORLD);
    } else {
        rc = MPI_Allreduce(s, rbuf, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    alarm(0);
    *wrong = 0;
    for (long i = lo; check && MPI_SUCCESS == rc && i < hi; ++i) {
        if (rbuf[i - lo] != want(i, count)) {
            printf("test_allreduce_fault: FAIL rank %d: %s: element %ld is %d, expected %lld\n",
                   rank, phase, i, rbuf[i - lo], want(i, count));
            *wrong = 1;
            break;
        }
    }
    free(sbuf);
    free(rbuf);
    return rc;
}

int main(int argc, char **argv)
{
    long count = 1 << 20;
    const char *expect = NULL;
    int rc, wrong, failed, nfailed = 0, bad = 0, all_bad = 0, failing = -1, want_fail, check;
    char err[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--expect")) expect = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout")) timeout_s = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--failing")) failing = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--coll")) coll = argv[i + 1];
        else if (!strcmp(argv[i], "--root")) root = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--swap-pairs")) swap_pairs = atoi(argv[i + 1]);
    }
    {
        int lens[2] = {1, 1};
        MPI_Aint displs[2] = {sizeof(int), 0};
        MPI_Datatype types[2] = {MPI_INT, MPI_INT};

        MPI_Type_create_struct(2, lens, displs, types, &pair_swapped);
        MPI_Type_commit(&pair_swapped);
    }
    if (NULL == expect ||
        (strcmp(expect, "fail") && strcmp(expect, "ok") && strcmp(expect, "own")) ||
        (!strcmp(expect, "own") && (failing < 0 || failing >= size)) ||
        (strcmp(coll, "allreduce") && strcmp(coll, "reduce_scatter_block") &&
         strcmp(coll, "reduce") && strcmp(coll, "bcast") && strcmp(coll, "allgather")) ||
        root < 0 || root >= size) {
        if (0 == rank)
            fprintf(stderr,
                    "usage: test_allreduce_fault --expect fail|ok|own [--failing R] [--count N] "
                    "[--coll allreduce|reduce_scatter_block|reduce|bcast|allgather] "
                    "[--root R]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* whether this rank must get an error from the first call, and must
     * otherwise have the right sums */
    want_fail = !strcmp(expect, "fail") || (!strcmp(expect, "own") && rank == failing);
    check = !want_fail && strcmp(expect, "fail");
    signal(SIGALRM, on_alarm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    phase = "the first allreduce";
    rc = call(count, 0, check, &wrong);
    failed = (MPI_SUCCESS != rc);
    if (failed) {
        MPI_Error_string(rc, err, &len);
        printf("test_allreduce_fault: rank %d: the first allreduce returned an error: %s\n", rank,
               err);
    } else {
        printf("test_allreduce_fault: rank %d: the first allreduce returned MPI_SUCCESS\n", rank);
    }
    bad = wrong || (failed != want_fail);
    if (want_fail && !failed) {
        printf("test_allreduce_fault: FAIL rank %d: expected an error\n", rank);
    } else if (!want_fail && failed) {
        printf("test_allreduce_fault: FAIL rank %d: expected MPI_SUCCESS\n", rank);
    }
    MPI_Allreduce(&failed, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    /* later calls on the same communicator */
    {
        static const long counts[] = {1, 7, 1021, 65537};
        long sizes[5];
        int n = 0;

        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); ++i) {
            sizes[n++] = counts[i];
        }
        sizes[n++] = count;
        for (int i = 0; i < n; ++i) {
            for (int in_place = 0; in_place < 2; ++in_place) {
                char what[64];

                snprintf(what, sizeof(what), "a later allreduce of %ld%s", sizes[i],
                         in_place ? " in place" : "");
                phase = what;
                rc = call(sizes[i], in_place, 1, &wrong);
                if (MPI_SUCCESS != rc) {
                    printf("test_allreduce_fault: FAIL rank %d: %s returned an error\n", rank,
                           what);
                }
                bad |= wrong || MPI_SUCCESS != rc;
            }
        }
    }
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_allreduce_fault: %s: %d of %d ranks returned an error from the first call "
               "(expected %s); later calls %s\n",
               all_bad ? "FAIL" : "OK", nfailed, size, expect, all_bad ? "checked above" : "right");
    }
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
