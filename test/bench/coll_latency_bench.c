/*
 * Per-call latency of small collectives on host buffers, back to back.
 *
 *   coll_latency_bench [--min BYTES] [--max BYTES] [--iters N] [--repeats R]
 *                      [--warmup N] [--colls LIST] [--type int|float|char]
 *                      [--op NAME[,NAME...]|all] [--label TEXT]
 *
 * For each collective of --colls (allreduce, reduce, bcast, allgather,
 * alltoall, iallreduce, reduce_scatter_block; default all but the last),
 * each reduction operation of --op where the collective reduces (allreduce,
 * reduce, iallreduce, reduce_scatter_block) and each size (powers of two
 * from --min to --max bytes, default 8 B .. 4 KiB, the per-rank block for
 * allgather, alltoall and reduce_scatter_block; sizes below one element are
 * skipped), it runs
 * --warmup calls, then --repeats times --iters calls back to back (no barrier
 * between calls, as codes call them).  A repeat's figure is the slowest rank's
 * mean time per call; the best repeat is reported, since what disturbs a
 * 2-core machine only adds.
 *
 * --type: the elements, MPI_INT (int, default), MPI_FLOAT (float) or
 * MPI_SIGNED_CHAR (char).  Send buffers hold ones (no overflow in sum or prod).
 * --op: a predefined operation, sum (default), prod, max, min, land, lor,
 * lxor, band, bor or bxor (MPI_SUM ... MPI_BXOR), a comma-separated list of
 * them, or all: every one defined on --type (float: sum, prod, max, min; int
 * and char: all ten, MPI defines the logical and bitwise ones on C integer
 * types, signed char included).  An operation not defined on --type is an
 * error.
 *
 * Output on rank 0, one line per collective, operation and size:
 *   RESULT,<label>,<collective>,<op>,<bytes>,<us_per_call>
 * where <op> is the operation's name above, or - for a collective without one
 * (bcast, allgather, alltoall: measured once, whatever --op says).
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
    char ops[256];
    const char *label;
} bench_opts_t;

/* the element type of every call (--type) */
static MPI_Datatype bench_type;
static size_t bench_esize = sizeof(int);
static int bench_type_is_float;

/* the reduction operation of the calls being measured (--op) */
static MPI_Op bench_op;

/* The predefined operations, in the order they are measured; the logical and
 * bitwise ones are not defined on floating-point types. */
static const struct {
    const char *name;
    int integer_only;
} bench_ops[] = {
    {"sum", 0}, {"prod", 0}, {"max", 0},  {"min", 0}, {"land", 1},
    {"lor", 1}, {"lxor", 1}, {"band", 1}, {"bor", 1}, {"bxor", 1},
};
#define BENCH_NOPS (sizeof(bench_ops) / sizeof(bench_ops[0]))

/* MPI_Op handles need not be constants, hence a function */
static MPI_Op bench_op_handle(size_t i)
{
    MPI_Op ops[BENCH_NOPS] = {MPI_SUM, MPI_PROD, MPI_MAX,  MPI_MIN, MPI_LAND,
                              MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};

    return ops[i];
}

typedef void (*bench_call_fn)(char *sbuf, char *rbuf, int count, int size);

static void bench_allreduce(char *s, char *r, int n, int size)
{
    MPI_Allreduce(s, r, n, bench_type, bench_op, MPI_COMM_WORLD);
}

static void bench_reduce(char *s, char *r, int n, int size)
{
    MPI_Reduce(s, r, n, bench_type, bench_op, 0, MPI_COMM_WORLD);
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

    MPI_Iallreduce(s, r, n, bench_type, bench_op, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static void bench_reduce_scatter_block(char *s, char *r, int n, int size)
{
    MPI_Reduce_scatter_block(s, r, n, bench_type, bench_op, MPI_COMM_WORLD);
}

static const struct {
    const char *name;
    bench_call_fn call;
    int reduces; /* takes an MPI_Op */
} bench_colls[] = {
    {"allreduce", bench_allreduce, 1},
    {"reduce", bench_reduce, 1},
    {"bcast", bench_bcast, 0},
    {"allgather", bench_allgather, 0},
    {"alltoall", bench_alltoall, 0},
    {"iallreduce", bench_iallreduce, 1},
    {"reduce_scatter_block", bench_reduce_scatter_block, 1},
};

/* whether NAME is an item of the comma-separated LIST */
static int bench_listed(const char *list, const char *name)
{
    char l[260], want[64];

    snprintf(l, sizeof(l), ",%s,", list);
    snprintf(want, sizeof(want), ",%s,", name);
    return NULL != strstr(l, want);
}

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
                    "[--repeats R] [--warmup N] [--colls LIST] [--type int|float|char]\n"
                    "                          [--op sum|prod|max|min|land|lor|lxor|band|bor|bxor"
                    "[,...]|all] [--label TEXT]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Checks --op against the operations and --type; 'all' becomes every
 * operation defined on the type. */
static void bench_check_ops(bench_opts_t *o)
{
    char copy[256], *save = NULL;

    if (!strcmp(o->ops, "all")) {
        o->ops[0] = '\0';
        for (size_t i = 0; i < BENCH_NOPS; ++i) {
            if (!bench_type_is_float || !bench_ops[i].integer_only) {
                strcat(strcat(o->ops, o->ops[0] ? "," : ""), bench_ops[i].name);
            }
        }
        return;
    }
    snprintf(copy, sizeof(copy), "%s", o->ops);
    for (char *t = strtok_r(copy, ",", &save); NULL != t; t = strtok_r(NULL, ",", &save)) {
        size_t i;

        for (i = 0; i < BENCH_NOPS && strcmp(t, bench_ops[i].name); ++i) {
        }
        if (BENCH_NOPS == i) {
            fprintf(stderr, "coll_latency_bench: unknown operation '%s'\n", t);
            bench_usage();
        }
        if (bench_type_is_float && bench_ops[i].integer_only) {
            fprintf(stderr, "coll_latency_bench: '%s' is not defined on float\n", t);
            bench_usage();
        }
    }
}

static void bench_parse(int argc, char **argv, bench_opts_t *o)
{
    *o = (bench_opts_t){.min_bytes = 8, .max_bytes = 4096, .iters = 2000, .repeats = 5,
                        .warmup = 200, .label = "run"};
    strcpy(o->colls, "allreduce,reduce,bcast,allgather,alltoall,iallreduce");
    strcpy(o->ops, "sum");
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
            bench_type_is_float = 0;
            if (!strcmp(v, "float")) {
                bench_type = MPI_FLOAT, bench_esize = sizeof(float), bench_type_is_float = 1;
            } else if (!strcmp(v, "char")) {
                bench_type = MPI_SIGNED_CHAR, bench_esize = 1;
            } else if (!strcmp(v, "int")) {
                bench_type = MPI_INT, bench_esize = sizeof(int);
            } else {
                bench_usage();
            }
        } else if (!strcmp(a, "--op")) {
            snprintf(o->ops, sizeof(o->ops), "%s", v);
        } else if (!strcmp(a, "--label")) {
            o->label = v;
        } else {
            bench_usage();
        }
        ++i;
    }
    if (o->min_bytes < 1 || o->max_bytes < o->min_bytes || o->iters < 1 || o->repeats < 1) {
        bench_usage();
    }
    bench_check_ops(o);
}

/* Fills N elements of --type with ones. */
static void bench_fill_ones(char *buf, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (MPI_FLOAT == bench_type) {
            ((float *)buf)[i] = 1.0f;
        } else if (MPI_INT == bench_type) {
            ((int *)buf)[i] = 1;
        } else {
            ((signed char *)buf)[i] = 1;
        }
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

/* Every size of one collective with the current bench_op, OPNAME in the output. */
static void bench_sizes(size_t c, const char *opname, char *s, char *r, int rank, int size,
                        const bench_opts_t *o)
{
    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 2) {
        int n = (int)(bytes / bench_esize);
        double us;

        if (n < 1) {
            continue;
        }
        us = bench_one(bench_colls[c].call, s, r, n, size, o);
        if (0 == rank) {
            printf("RESULT,%s,%s,%s,%zu,%.4f\n", o->label, bench_colls[c].name, opname, bytes, us);
            fflush(stdout);
        }
    }
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
    s = calloc(max_elems + 1, bench_esize);
    r = calloc(max_elems + 1, bench_esize);
    if (NULL == s || NULL == r) {
        fprintf(stderr, "coll_latency_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    bench_fill_ones(s, max_elems);
    for (size_t c = 0; c < sizeof(bench_colls) / sizeof(bench_colls[0]); ++c) {
        if (!bench_listed(o.colls, bench_colls[c].name)) {
            continue;
        }
        if (!bench_colls[c].reduces) {
            bench_op = MPI_OP_NULL;
            bench_sizes(c, "-", s, r, rank, size, &o);
            continue;
        }
        for (size_t i = 0; i < BENCH_NOPS; ++i) {
            if (bench_listed(o.ops, bench_ops[i].name)) {
                bench_op = bench_op_handle(i);
                bench_sizes(c, bench_ops[i].name, s, r, rank, size, &o);
            }
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
