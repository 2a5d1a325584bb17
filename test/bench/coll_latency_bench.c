/*
 * Per-call latency of small collectives on host buffers, back to back.
 *
 *   coll_latency_bench [--min BYTES] [--max BYTES] [--iters N] [--repeats R]
 *                      [--warmup N] [--colls LIST] [--type int|float|char] [--label TEXT]
 *
 * For each collective of --colls (allreduce, reduce, bcast, allgather,
 * alltoall, iallreduce; default all) and each size (powers of two from --min
 * to --max bytes, default 8 B .. 4 KiB, the per-rank
 * block for allgather and alltoall; elements of --type: MPI_INT (default),
 * MPI_FLOAT or MPI_SIGNED_CHAR, with MPI_SUM where there is a reduction), it
 * runs --warmup calls, then --repeats
 * times --iters calls back to back (no barrier between calls, as codes call
 * them).  A repeat's figure is the slowest rank's mean time per call; the
 * best repeat is reported, since what disturbs a 2-core machine only adds.
 *
 * Output on rank 0, one line per collective and size:
 *   RESULT,<label>,<collective>,<bytes>,<us_per_call>
 * It measures the cost a call pays for going through a component (dispatch,
 * memory-kind checks) on top of the algorithm; compare variants in one run
 * (test/bench/coll_overhead.py alternates them).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t min_bytes, max_bytes;
    int iters, repeats, warmup;
    char colls[256];
    const char *label;
} bench_opts_t;

/* the element type of every call (--type) */
static MPI_Datatype bench_type;
static size_t bench_esize = sizeof(int);

typedef void (*bench_call_fn)(char *sbuf, char *rbuf, int count, int size);

static void bench_allreduce(char *s, char *r, int n, int size)
{
    MPI_Allreduce(s, r, n, bench_type, MPI_SUM, MPI_COMM_WORLD);
}

static void bench_reduce(char *s, char *r, int n, int size)
{
    MPI_Reduce(s, r, n, bench_type, MPI_SUM, 0, MPI_COMM_WORLD);
}

static void bench_bcast(char *s, char *r, int n, int size)
{
    MPI_Bcast(s, n, bench_type, 0, MPI_COMM_WORLD);
}

static void bench_allgather(char *s, char *r, int n, int size)
{
    MPI_Allgather(s, n, bench_type, r, n, bench_type, MPI_COMM_WORLD);
}

static void bench_alltoall(char *s, char *r, int n, int size)
{
    MPI_Alltoall(s, n, bench_type, r, n, bench_type, MPI_COMM_WORLD);
}

static void bench_iallreduce(char *s, char *r, int n, int size)
{
    MPI_Request req;

    MPI_Iallreduce(s, r, n, bench_type, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static const struct {
    const char *name;
    bench_call_fn call;
} bench_colls[] = {
    {"allreduce", bench_allreduce}, {"reduce", bench_reduce},
    {"bcast", bench_bcast},         {"allgather", bench_allgather},
    {"alltoall", bench_alltoall},   {"iallreduce", bench_iallreduce},
};

static size_t bench_parse_size(const char *text)
{
    char *end;
    double v = strtod(text, &end);

    switch (*end) {
    case 'k': case 'K': return (size_t)(v * 1024);
    case 'm': case 'M': return (size_t)(v * 1024 * 1024);
    default: return (size_t)v;
    }
}

static void bench_usage(void)
{
    fprintf(stderr, "usage: coll_latency_bench [--min BYTES] [--max BYTES] [--iters N] "
                    "[--repeats R] [--warmup N] [--colls LIST] [--type int|float|char] [--label TEXT]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void bench_parse(int argc, char **argv, bench_opts_t *o)
{
    *o = (bench_opts_t){.min_bytes = 8, .max_bytes = 4096, .iters = 2000, .repeats = 5,
                        .warmup = 200, .label = "run"};
    strcpy(o->colls, "allreduce,reduce,bcast,allgather,alltoall,iallreduce");
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = (i + 1 < argc) ? argv[i + 1] : NULL;

        if (NULL == v) {
            bench_usage();
        } else if (!strcmp(a, "--min")) {
            o->min_bytes = bench_parse_size(v);
        } else if (!strcmp(a, "--max")) {
            o->max_bytes = bench_parse_size(v);
        } else if (!strcmp(a, "--iters")) {
            o->iters = atoi(v);
        } else if (!strcmp(a, "--repeats")) {
            o->repeats = atoi(v);
        } else if (!strcmp(a, "--warmup")) {
            o->warmup = atoi(v);
        } else if (!strcmp(a, "--colls")) {
            snprintf(o->colls, sizeof(o->colls), "%s", v);
        } else if (!strcmp(a, "--type")) {
            if (!strcmp(v, "float")) {
                bench_type = MPI_FLOAT, bench_esize = sizeof(float);
            } else if (!strcmp(v, "char")) {
                bench_type = MPI_SIGNED_CHAR, bench_esize = 1;
            } else if (!strcmp(v, "int")) {
                bench_type = MPI_INT, bench_esize = sizeof(int);
            } else {
                bench_usage();
            }
        } else if (!strcmp(a, "--label")) {
            o->label = v;
        } else {
            bench_usage();
        }
        ++i;
    }
    if (o->min_bytes < bench_esize || o->max_bytes < o->min_bytes || o->iters < 1 ||
        o->repeats < 1) {
        bench_usage();
    }
}

/* The best repeat's slowest-rank mean time per call, in microseconds. */
static double bench_one(bench_call_fn call, char *s, char *r, int n, int size,
                        const bench_opts_t *o)
{
    double best = 1e30;

    for (int i = 0; i < o->warmup; ++i) {
        call(s, r, n, size);
    }
    for (int rep = 0; rep < o->repeats; ++rep) {
        double t0, mine, slowest;

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < o->iters; ++i) {
            call(s, r, n, size);
        }
        mine = (MPI_Wtime() - t0) / o->iters;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = (slowest < best) ? slowest : best;
    }
    return best * 1e6;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    int rank, size;
    char *s, *r;
    size_t max_elems;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bench_type = MPI_INT;
    bench_parse(argc, argv, &o);
    max_elems = o.max_bytes / bench_esize * (size_t)size;
    s = calloc(max_elems, bench_esize);
    r = calloc(max_elems, bench_esize);
    if (NULL == s || NULL == r) {
        fprintf(stderr, "coll_latency_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t c = 0; c < sizeof(bench_colls) / sizeof(bench_colls[0]); ++c) {
        char list[260], want[64];

        snprintf(list, sizeof(list), ",%s,", o.colls);
        snprintf(want, sizeof(want), ",%s,", bench_colls[c].name);
        if (NULL == strstr(list, want)) {
            continue;
        }
        for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
            int n = (int)(bytes / bench_esize);
            double us = bench_one(bench_colls[c].call, s, r, n, size, &o);

            if (0 == rank) {
                printf("RESULT,%s,%s,%zu,%.3f\n", o.label, bench_colls[c].name, bytes, us);
                fflush(stdout);
            }
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
