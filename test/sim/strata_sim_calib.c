/*
 * strata_sim_calib: measures the parameters of test/sim/strata_sim's model
 * on the machine it runs on, with every rank of the job busy at once, as
 * they are in an allreduce (on the namespace cluster all "nodes" share the
 * host's cores, so a parameter measured by one idle pair would not be the
 * one an allreduce meets).
 *
 *   strata_sim_calib [--segment BYTES] [--repeats N] [--bw-bytes BYTES]
 *
 * Ranks are paired across nodes: local rank j of node 2i with local rank j
 * of node 2i + 1 (an even number of nodes, the same ranks on each).  Every
 * figure is the best of --repeats (5) repetitions, each started by a
 * barrier, of the mean over the repetition's messages, averaged over pairs:
 *   latency    8-byte ping-pong, one-way time = round trip / 2 (= L + 2o),
 *              the median of a rank's round trips
 *   o          a burst of 64 8-byte sends, per message (the sender's cost
 *              of one message: o, or g if that is larger)
 *   G          both partners stream --bw-bytes (8 MiB) to each other in
 *              32 KiB messages (eager), 64 in flight; the node's link
 *              carries the k pairs' bytes: G = time / bytes per node and
 *              direction
 *   copy-bw    memcpy of one segment (128 KiB) at a time through two
 *              buffers of 16 MiB, every rank at once, bytes per second per rank
 *   reduce-bw  MPI_Reduce_local MPI_FLOAT MPI_SUM of segment / k bytes
 *              (a slice) at a time through two 16 MiB buffers, every rank at
 *              once, bytes of the vector per second
 * Rank 0 prints the set as strata_sim reads it (`key = value`), with L =
 * latency - 2o (never below 0), and the raw figures as comments.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t segment, bw_bytes;
    int repeats;
} calib_opts_t;

typedef struct {
    MPI_Comm node;
    int rank, size, local, ppn, nnodes, node_index, partner;
} calib_topo_t;

static size_t calib_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

/* Node index and partner of every rank (see the top); 0 if the layout
 * cannot be paired. */
static int calib_topo(calib_topo_t *t)
{
    int mine[2], *all;
    MPI_Comm leaders;

    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &t->node);
    MPI_Comm_rank(t->node, &t->local);
    MPI_Comm_size(t->node, &t->ppn);
    MPI_Comm_split(MPI_COMM_WORLD, t->local == 0 ? 0 : MPI_UNDEFINED, t->rank, &leaders);
    if (t->local == 0) {
        MPI_Comm_rank(leaders, &t->node_index);
        MPI_Comm_size(leaders, &t->nnodes);
        MPI_Comm_free(&leaders);
    }
    MPI_Bcast(&t->node_index, 1, MPI_INT, 0, t->node);
    MPI_Bcast(&t->nnodes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    all = malloc(sizeof(int) * 2 * (size_t)t->size);
    mine[0] = t->node_index;
    mine[1] = t->local;
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    t->partner = -1;
    for (int r = 0; r < t->size; ++r) {
        if (all[2 * r] == (t->node_index ^ 1) && all[2 * r + 1] == t->local) t->partner = r;
    }
    free(all);
    int ok = t->partner >= 0, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all_ok;
}

/* The mean over all ranks of each rank's value. */
static double calib_mean(double v)
{
    double sum;
    int size;

    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return sum / size;
}

static int calib_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median one-way time of a rank's round trips, averaged over ranks: a
 * round trip that waited for a time slice (ranks outnumber cores on the
 * namespace cluster) does not count more than once. */
static double calib_latency(const calib_topo_t *t, int iters)
{
    char buf[8] = {0};
    int lower = t->node_index % 2 == 0;
    double *rtt = malloc(sizeof(double) * (size_t)iters), median;

    for (int i = -10; i < iters; ++i) {
        double t0 = MPI_Wtime();

        if (lower) {
            MPI_Send(buf, 8, MPI_CHAR, t->partner, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_CHAR, t->partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 8, MPI_CHAR, t->partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_CHAR, t->partner, 1, MPI_COMM_WORLD);
        }
        if (i >= 0) rtt[i] = MPI_Wtime() - t0;
    }
    qsort(rtt, (size_t)iters, sizeof(double), calib_cmp);
    median = rtt[iters / 2];
    free(rtt);
    return calib_mean(median / 2);
}

/* Per message of a burst of 64 sends (the lower partner sends, the other
 * receives; the figure is the sender's). */
static double calib_overhead(const calib_topo_t *t, int bursts)
{
    enum { W = 64 };
    char buf[W][8];
    MPI_Request reqs[W];
    int lower = t->node_index % 2 == 0;
    double sum = 0.0, v;

    memset(buf, 0, sizeof(buf));
    for (int b = 0; b < bursts; ++b) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (lower) {
            double t0 = MPI_Wtime();

            for (int i = 0; i < W; ++i) {
                MPI_Isend(buf[i], 8, MPI_CHAR, t->partner, 2, MPI_COMM_WORLD, &reqs[i]);
            }
            MPI_Waitall(W, reqs, MPI_STATUSES_IGNORE);
            sum += (MPI_Wtime() - t0) / W;
        } else {
            for (int i = 0; i < W; ++i) {
                MPI_Irecv(buf[i], 8, MPI_CHAR, t->partner, 2, MPI_COMM_WORLD, &reqs[i]);
            }
            MPI_Waitall(W, reqs, MPI_STATUSES_IGNORE);
        }
    }
    /* the senders' mean */
    v = lower ? sum / bursts : 0.0;
    return 2.0 * calib_mean(v);
}

/* Seconds per byte of the node's link, per direction: eager-sized
 * messages (btl/tcp sends up to 64 KiB without a handshake, as the ring's
 * blocks go), many in flight, so that the stream, not the protocol, sets
 * the pace. */
static double calib_gap(const calib_topo_t *t, size_t bytes)
{
    enum { INFLIGHT = 64 };
    size_t msg = 32 * 1024;
    int rounds = (int)((bytes + msg * INFLIGHT - 1) / (msg * INFLIGHT));
    char *sbuf = calloc(INFLIGHT, msg), *rbuf = calloc(INFLIGHT, msg);
    MPI_Request reqs[2 * INFLIGHT];
    double t0, dt, slowest;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int m = 0; m < rounds; ++m) {
        for (int i = 0; i < INFLIGHT; ++i) {
            MPI_Irecv(rbuf + i * msg, (int)msg, MPI_CHAR, t->partner, 3, MPI_COMM_WORLD,
                      &reqs[i]);
            MPI_Isend(sbuf + i * msg, (int)msg, MPI_CHAR, t->partner, 3, MPI_COMM_WORLD,
                      &reqs[INFLIGHT + i]);
        }
        MPI_Waitall(2 * INFLIGHT, reqs, MPI_STATUSES_IGNORE);
    }
    dt = MPI_Wtime() - t0;
    /* the node's link carries all its ranks' streams until the slowest ends */
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    return slowest / ((double)msg * INFLIGHT * rounds * t->ppn);
}

/* Pieces of `bytes` walk through two buffers of 16 MiB, as chunks walk
 * through a message: memory bandwidth, not a cache's. */
#define CALIB_SPAN ((size_t)16 << 20)

static double calib_copy(size_t bytes, int iters)
{
    char *a = malloc(CALIB_SPAN), *b = malloc(CALIB_SPAN);
    size_t pieces = CALIB_SPAN / bytes;
    double t0, dt;

    memset(a, 1, CALIB_SPAN);
    memset(b, 2, CALIB_SPAN);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        size_t off = (size_t)i % pieces * bytes;

        memcpy(b + off, a + off, bytes);
    }
    dt = MPI_Wtime() - t0;
    free(a);
    free(b);
    return calib_mean((double)bytes * iters / dt);
}

static double calib_reduce(size_t bytes, int iters)
{
    size_t n = CALIB_SPAN / sizeof(float), pieces = CALIB_SPAN / bytes;
    float *a = malloc(CALIB_SPAN), *b = malloc(CALIB_SPAN);
    double t0, dt;

    for (size_t i = 0; i < n; ++i) a[i] = b[i] = (float)(i % 7);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        size_t off = (size_t)i % pieces * (bytes / sizeof(float));

        MPI_Reduce_local(a + off, b + off, (int)(bytes / sizeof(float)), MPI_FLOAT, MPI_SUM);
    }
    dt = MPI_Wtime() - t0;
    free(a);
    free(b);
    return calib_mean((double)bytes * iters / dt);
}

static double calib_min(double a, double b)
{
    return a < b ? a : b;
}

static double calib_max(double a, double b)
{
    return a > b ? a : b;
}

int main(int argc, char **argv)
{
    calib_opts_t o = {.segment = 128 * 1024, .bw_bytes = 8 << 20, .repeats = 5};
    calib_topo_t t;
    double lat = 1e30, ovh = 1e30, gap = 1e30, copy = 0.0, reduce = 0.0;

    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--segment")) o.segment = calib_parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats")) o.repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--bw-bytes")) o.bw_bytes = calib_parse_size(argv[i + 1]);
        else {
            fprintf(stderr, "strata_sim_calib: unknown option '%s'\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (argc % 2 == 0 || o.repeats < 1 || o.segment < 1024 || o.bw_bytes < 1024) {
        fprintf(stderr, "strata_sim_calib: bad arguments (see the top of the source)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!calib_topo(&t)) {
        if (t.rank == 0) {
            fprintf(stderr, "strata_sim_calib: needs an even number of nodes with the same "
                            "number of ranks on each (got %d ranks)\n", t.size);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int r = 0; r < o.repeats; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        lat = calib_min(lat, calib_latency(&t, 400));
        ovh = calib_min(ovh, calib_overhead(&t, 20));
        gap = calib_min(gap, calib_gap(&t, o.bw_bytes));
        copy = calib_max(copy, calib_copy(o.segment, 2000));
        reduce = calib_max(reduce, calib_reduce(o.segment / (size_t)t.ppn, 2000));
    }
    if (t.rank == 0) {
        double L = lat - 2 * ovh;

        printf("# strata_sim_calib: %d nodes x %d ranks, every rank busy; best of %d\n",
               t.nnodes, t.ppn, o.repeats);
        printf("# one-way latency (L + 2o) %.2f us, per-message send cost %.2f us, "
               "link %.1f MB/s per node and direction, memcpy %.0f MB/s and reduce %.0f MB/s "
               "per rank\n", lat * 1e6, ovh * 1e6, 1e-6 / gap, copy * 1e-6, reduce * 1e-6);
        printf("L = %.9g\no = %.9g\nG = %.9g\ncopy-bw = %.9g\nreduce-bw = %.9g\n",
               L > 0 ? L : 0.0, ovh, gap, copy, reduce);
    }
    MPI_Comm_free(&t.node);
    MPI_Finalize();
    return 0;
}
