/*
 * Overlap of MPI_Iallreduce with compute, as OSU's osu_iallreduce defines
 * it, on whatever coll component the job selected:
 *
 *   mpirun -np N icoll_overlap_bench [--sizes 65536,1048576,...] [--iters K]
 *                                    [--compute sleep|busy] [--label NAME]
 *
 * For each size (bytes of MPI_DOUBLE):
 *   t_pure     MPI_Iallreduce then MPI_Wait at once
 *   t_compute  compute alone, as long as t_pure (sleep: nanosleep, a GPU
 *              code's host thread waiting for its kernel; busy: a loop)
 *   t_all      MPI_Iallreduce, the compute (no MPI call in it), MPI_Wait
 *   overlap    100 - 100 (t_all - t_compute) / t_pure   (clipped to 0..100)
 * and the blocking MPI_Allreduce of the same size (t_blocking, for the
 * "nonblocking alone at most 1.05x blocking" comparison).  Times are the
 * slowest rank's mean over --iters calls (after 2 warm-up calls), in us.
 * Prints one CSV line per size: label,compute,bytes,t_blocking,t_pure,
 * t_compute,t_all,overlap.  A benchmark: it asserts nothing.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank;
static bool busy;
static volatile double sink;

static void compute_for(double us)
{
    double end = MPI_Wtime() + us * 1e-6;

    if (busy) {
        while (MPI_Wtime() < end) {
            for (int k = 0; k < 1000; k++) sink += k * 0.5;
        }
    } else {
        struct timespec ts = {(time_t)(us * 1e-6), (long)((us - 1e6 * (long)(us * 1e-6)) * 1e3)};

        nanosleep(&ts, NULL);
    }
}

/* The slowest rank's mean. */
static double slowest(double t, int iters)
{
    double all;

    MPI_Allreduce(&t, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return 1e6 * all / iters;
}

int main(int argc, char **argv)
{
    long sizes[32] = {65536, 262144, 1048576, 4194304, 16777216};
    int nsizes = 5, iters = 20;
    const char *label = "run";
    double *s, *r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *tok = strtok(argv[++i], ",");

            for (nsizes = 0; tok != NULL && nsizes < 32; tok = strtok(NULL, ","))
                sizes[nsizes++] = atol(tok);
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--compute") && i + 1 < argc) {
            busy = !strcmp(argv[++i], "busy");
        } else if (!strcmp(argv[i], "--label") && i + 1 < argc) {
            label = argv[++i];
        } else {
            if (rank == 0)
                fprintf(
                    stderr,
                    "usage: icoll_overlap_bench [--sizes B,...] [--iters K] [--compute sleep|busy] [--label NAME]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (rank == 0) printf("label,compute,bytes,t_blocking,t_pure,t_compute,t_all,overlap\n");
    for (int k = 0; k < nsizes; k++) {
        int count = (int)(sizes[k] / (long)sizeof(double));
        double t0, tb, tp, tc, ta, overlap;
        MPI_Request req;

        s = malloc(sizeof(double) * (size_t)count);
        r = malloc(sizeof(double) * (size_t)count);
        for (int i = 0; i < count; i++) s[i] = rank + i % 7;
        for (int i = 0; i < 2; i++) MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        tb = slowest(MPI_Wtime() - t0, iters);
        for (int i = 0; i < 2; i++) {
            MPI_Iallreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            MPI_Iallreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        tp = slowest(MPI_Wtime() - t0, iters);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) compute_for(tp);
        tc = slowest(MPI_Wtime() - t0, iters);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            MPI_Iallreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
            compute_for(tp);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        ta = slowest(MPI_Wtime() - t0, iters);
        overlap = 100.0 - 100.0 * (ta - tc) / tp;
        if (overlap < 0) overlap = 0;
        if (overlap > 100) overlap = 100;
        if (rank == 0) {
            printf("%s,%s,%ld,%.1f,%.1f,%.1f,%.1f,%.1f\n", label, busy ? "busy" : "sleep", sizes[k],
                   tb, tp, tc, ta, overlap);
            fflush(stdout);
        }
        free(s);
        free(r);
    }
    MPI_Finalize();
    return 0;
}
