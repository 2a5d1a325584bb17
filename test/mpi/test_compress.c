/*
 * Compression between nodes (issue 44): MPI_Allreduce, MPI_Iallreduce and
 * MPI_Reduce_scatter_block with MPI_SUM on float and double, on a
 * communicator whose info key strata_compress names the format, checked
 * against an exact reference computed here independently: every rank
 * makes every rank's input (a deterministic generator) and sums it in long
 * double.  Each element must lie within the bound docs/design.md states
 * ("Compression between nodes"):
 *
 *   |result - exact| <= (N + 2) (u S + 2 sigma M) + R eps S,
 *   sigma = 2^(emin - p - emax + 1)
 *
 * with N the nodes, R the ranks, u the format's unit roundoff (2^-8 bf16,
 * 2^-11 fp16, 2^-4 fp8), eps the element type's, S the sum of the inputs'
 * magnitudes at that element, M the sum over ranks of their largest
 * magnitude within 128 elements of it (bounds any block's largest partial
 * sum), and emin, p, emax the format's smallest normal exponent, mantissa
 * bits and largest exponent (sigma M: half the smallest subnormal step of
 * a block scaled for M).
 * NaN and infinities must come out where the exact sum has them.  Every
 * rank's result must be the same bits (an allgather of checksums), and
 * with --expect-lossy at least one case must differ from the exact sum
 * (the data crossed the network narrowed, not exact).
 *
 *   mpirun ... test_compress --format bf16|fp16|fp8 --nodes N [--via dup|set]
 *              [--max-count C] [--expect-lossy] [--expect-exact]
 *   --via dup   the key given to MPI_Comm_dup_with_info (default); set:
 *               MPI_Comm_set_info on a duplicate; MPI_Comm_get_info must
 *               return it as set either way; none: no key (a plain
 *               duplicate: coll_strata_compress chooses, --format says what
 *               it was set to)
 *   --mismatch  odd ranks give the key fp16 instead (ranks given different
 *               values): the calls must stay exact (implies --expect-exact)
 *   --expect-exact  every result must equal, bit for bit, the same call's
 *               on MPI_COMM_WORLD (no key, and coll_strata_compress none:
 *               strata's exact path), as for an unknown format
 * Prints "test_compress: OK (N cases)" on rank 0.
 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "test_compress"

static int rank, size, nnodes = 1;
static long failures;
/* the largest |result - exact| / S seen, per kind of data (the report) */
static long double worst[6];

typedef struct {
    const char *name;
    double u;
    int emin, p, emax;
} format_t;

static const format_t formats[] = {
    {"bf16", 0x1p-8, -126, 7, 127},
    {"fp16", 0x1p-11, -14, 10, 15},
    {"fp8", 0x1p-4, -6, 3, 7},
    {"none", 0, 0, 0, 0},
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Rank r's element i of case c, kind k: made alike on every rank. */
static double input(int r, long i, int c, int k, bool as_float)
{
    uint64_t h = mix(((uint64_t)r << 48) ^ ((uint64_t)c << 32) ^ (uint64_t)i);
    double m = 1.0 + (double)(h >> 12) / 4503599627370496.0, s = (h & 1) ? -1.0 : 1.0;
    int e = (int)((h >> 1) % 64);

    switch (k) {
    case 0: /* gradients: modest range */ return s * ldexp(m, e % 20 - 20);
    case 1: /* wide dynamic range inside a block */ return s * ldexp(m, e % 60 - 30);
    case 2: /* cancellation: rank pairs nearly opposite */
        return ((r & 1) ? -1.0 : 1.0) *
                   ldexp(1.0 + (double)(mix(i) >> 12) / 4503599627370496.0, 3) +
               ldexp(m, -10);
    case 3: /* zeros, and denormals of the type */
        return (i % 3 == 0)   ? 0.0
               : (i % 3 == 1) ? -0.0
                              : s * (as_float ? FLT_MIN : DBL_MIN) * m / 16;
    case 4: /* NaN and infinities among ordinary values, on rank 1 only */
        if (1 == r && i % 97 == 5) {
            return NAN;
        }
        if (1 == r && i % 97 == 9) {
            return INFINITY;
        }
        return s * m;
    default: /* at the limits: large magnitudes that still sum finite */
        return s * (as_float ? FLT_MAX : DBL_MAX) / (4.0 * size) * (m / 2);
    }
}

static long double exact_sum(long i, int c, int k, bool as_float, long double *abs_sum)
{
    long double sum = 0, a = 0;

    for (int r = 0; r < size; ++r) {
        double x = input(r, i, c, k, as_float);

        if (as_float) {
            x = (double)(float)x;
        }
        sum += x;
        a += fabsl((long double)x);
    }
    *abs_sum = a;
    return sum;
}

/* M[i]: per rank, its largest finite magnitude within 128 elements of i,
 * summed over the ranks (an aligned 128-element block's maximum, over the
 * blocks that reach within 127 of i: every block a message can make). */
static long double *window_max(long count, int c, int k, bool as_float)
{
    long nb = count / 128 + 1;
    long double *m = calloc((size_t)count + 1, sizeof(long double));
    double *bmax = malloc(sizeof(double) * (size_t)nb);

    for (int r = 0; r < size; ++r) {
        for (long b = 0; b < nb; ++b) {
            bmax[b] = 0;
        }
        for (long j = 0; j < count; ++j) {
            double x = input(r, j, c, k, as_float);

            x = fabs(as_float ? (double)(float)x : x);
            if (isfinite(x) && x > bmax[j / 128]) {
                bmax[j / 128] = x;
            }
        }
        for (long i = 0; i < count; ++i) {
            double best = 0;

            for (long b = (i - 127 > 0 ? i - 127 : 0) / 128; b <= (i + 127) / 128 && b < nb; ++b) {
                best = (bmax[b] > best) ? bmax[b] : best;
            }
            m[i] += best;
        }
    }
    free(bmax);
    return m;
}

static uint64_t checksum(const void *buf, size_t bytes)
{
    const unsigned char *b = buf;
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < bytes; ++i) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

/* One call's results against the bound (or, `exact` not NULL, against the
 * exact path's results bit for bit); returns how many elements were not
 * the exact sum. */
static long check(const format_t *f, const char *what, const void *res, long lo, long n, long count,
                  int c, int k, bool as_float, const void *exact)
{
    size_t esz = as_float ? sizeof(float) : sizeof(double);

    if (NULL != exact) {
        if (0 != memcmp(res, exact, (size_t)n * esz) && failures++ < 10) {
            fprintf(stderr,
                    PROG ": rank %d: %s case %d kind %d count %ld: not the exact path's "
                         "result\n",
                    rank, what, c, k, count);
        }
        return 0;
    }
    {
        double eps = as_float ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
        long double *m = window_max(count, c, k, as_float);
        long inexact = 0;

        for (long i = lo; i < lo + n; ++i) {
            long double abs_sum, ref = exact_sum(i, c, k, as_float, &abs_sum);
            double got = as_float ? (double)((const float *)res)[i - lo]
                                  : ((const double *)res)[i - lo];
            long double exact_in_type = as_float ? (long double)(float)ref
                                                 : (long double)(double)ref;
            long double bound;

            if (isnan(ref) || isinf(ref)) {
                if (!(isnan(ref) ? isnan(got) : (double)ref == got)) {
                    if (failures++ < 10) {
                        fprintf(stderr,
                                PROG ": rank %d: %s %s case %d kind %d element %ld: %g, want %Lg\n",
                                rank, f->name, what, c, k, i, got, ref);
                    }
                }
                continue;
            }
            if ((long double)got != exact_in_type) {
                inexact++;
            }
            if (abs_sum > 0 && fabsl((long double)got - ref) / abs_sum > worst[k]) {
                worst[k] = fabsl((long double)got - ref) / abs_sum;
            }
            bound = (nnodes + 2) * ((long double)f->u * abs_sum +
                                    2 * ldexpl(m[i], f->emin - f->p - f->emax + 1)) +
                    size * (long double)eps * abs_sum;
            if (!(fabsl((long double)got - ref) <= bound) || !isfinite(got)) {
                if (failures++ < 10) {
                    fprintf(stderr,
                            PROG
                            ": rank %d: %s %s %s case %d kind %d count %ld element %ld: %.17g, "
                            "exact %.17Lg, error %.3Lg, bound %.3Lg\n",
                            rank, f->name, what, as_float ? "float" : "double", c, k, count, i, got,
                            ref, fabsl((long double)got - ref), bound);
                }
            }
        }
        free(m);
        return inexact;
    }
}

int main(int argc, char **argv)
{
    const char *format = "bf16", *via = "dup";
    const format_t *f = NULL;
    long max_count = 70000, lossy = 0, cases = 0;
    bool expect_lossy = false, expect_exact = false, mismatch = false;
    static const long counts[] = {1, 127, 128, 129, 1000, 4099, 17000, 70000, 300000};
    MPI_Comm comm;
    MPI_Info info, got_info;
    char value[64];
    int flag;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--format") && i + 1 < argc) {
            format = argv[++i];
        } else if (0 == strcmp(argv[i], "--via") && i + 1 < argc) {
            via = argv[++i];
        } else if (0 == strcmp(argv[i], "--nodes") && i + 1 < argc) {
            nnodes = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "--max-count") && i + 1 < argc) {
            max_count = atol(argv[++i]);
        } else if (0 == strcmp(argv[i], "--expect-lossy")) {
            expect_lossy = true;
        } else if (0 == strcmp(argv[i], "--expect-exact")) {
            expect_exact = true;
        } else if (0 == strcmp(argv[i], "--mismatch")) {
            mismatch = expect_exact = true;
        }
    }
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); ++i) {
        if (0 == strcmp(formats[i].name, format)) {
            f = &formats[i];
        }
    }
    if (NULL == f) { /* an unknown format: the calls must stay exact */
        f = &formats[3];
        expect_exact = true;
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "strata_compress", (mismatch && (rank & 1)) ? "fp16" : format);
    if (0 == strcmp(via, "none")) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    } else if (0 == strcmp(via, "set")) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_info(comm, info);
    } else {
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    }
    MPI_Comm_get_info(comm, &got_info);
    MPI_Info_get(got_info, "strata_compress", sizeof(value) - 1, value, &flag);
    if (0 != strcmp(via, "none") && !mismatch && (!flag || 0 != strcmp(value, format))) {
        fprintf(stderr, PROG ": rank %d: MPI_Comm_get_info gives strata_compress=%s, set %s\n",
                rank, flag ? value : "(none)", format);
        failures++;
    }
    MPI_Info_free(&got_info);
    MPI_Info_free(&info);

    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]) && counts[ci] <= max_count; ++ci) {
        long count = counts[ci] - counts[ci] % size + size; /* a multiple of size (scatter) */

        for (int k = 0; k < 6; ++k) {
            for (int t = 0; t < 2; ++t) {
                bool as_float = (0 == t);
                size_t esz = as_float ? sizeof(float) : sizeof(double);
                MPI_Datatype dt = as_float ? MPI_FLOAT : MPI_DOUBLE;
                char *sbuf = malloc((size_t)count * esz), *rbuf = malloc((size_t)count * esz);
                char *xbuf = expect_exact ? malloc((size_t)count * esz) : NULL;
                uint64_t mine, *all = malloc(sizeof(uint64_t) * (size_t)size);
                int c = (int)(ci * 16 + (size_t)k * 2 + (size_t)t);
                MPI_Request req;

                for (long i = 0; i < count; ++i) {
                    double x = input(rank, i, c, k, as_float);

                    if (as_float) {
                        ((float *)sbuf)[i] = (float)x;
                    } else {
                        ((double *)sbuf)[i] = x;
                    }
                }
                /* blocking, separate buffers */
                MPI_Allreduce(sbuf, rbuf, (int)count, dt, MPI_SUM, comm);
                if (expect_exact) {
                    MPI_Allreduce(sbuf, xbuf, (int)count, dt, MPI_SUM, MPI_COMM_WORLD);
                }
                lossy += check(f, "MPI_Allreduce", rbuf, 0, count, count, c, k, as_float, xbuf);
                mine = checksum(rbuf, (size_t)count * esz);
                MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
                for (int r = 0; r < size; ++r) {
                    if (all[r] != all[0] && failures++ < 10) {
                        fprintf(stderr,
                                PROG ": rank %d: case %d kind %d: rank %d's result differs "
                                     "from rank 0's\n",
                                rank, c, k, r);
                    }
                }
                /* nonblocking, in place */
                memcpy(rbuf, sbuf, (size_t)count * esz);
                MPI_Iallreduce(MPI_IN_PLACE, rbuf, (int)count, dt, MPI_SUM, comm, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                lossy += check(f, "MPI_Iallreduce", rbuf, 0, count, count, c, k, as_float, xbuf);
                /* each rank's part */
                MPI_Reduce_scatter_block(sbuf, rbuf, (int)(count / size), dt, MPI_SUM, comm);
                if (expect_exact) {
                    MPI_Reduce_scatter_block(sbuf, xbuf, (int)(count / size), dt, MPI_SUM,
                                             MPI_COMM_WORLD);
                }
                lossy += check(f, "MPI_Reduce_scatter_block", rbuf, rank * (count / size),
                               count / size, count, c, k, as_float, xbuf);
                cases += 3;
                free(sbuf);
                free(rbuf);
                free(xbuf);
                free(all);
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &lossy, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (expect_lossy && 0 == lossy) {
        if (0 == rank) {
            fprintf(stderr,
                    PROG ": every result was exact: nothing crossed the network narrowed\n");
        }
        failures++;
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    {
        static const char *kinds[6] = {"gradients", "wide range", "cancellation",
                                       "zeros/denormals", "NaN/Inf", "limits"};
        double w[6], all[6];

        for (int k = 0; k < 6; ++k) {
            w[k] = (double)worst[k];
        }
        MPI_Reduce(w, all, 6, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank && !expect_exact) {
            for (int k = 0; k < 6; ++k) {
                printf(PROG ": %s, %s: largest |error| / sum of magnitudes %.3g (the bound's "
                            "(N + 2) u: %.3g)\n",
                       format, kinds[k], all[k], (nnodes + 2) * f->u);
            }
        }
    }
    MPI_Comm_free(&comm);
    if (0 == rank) {
        if (failures) {
            fprintf(stderr, PROG ": FAILED (%ld problems)\n", failures);
        } else {
            printf(PROG ": OK (%ld cases, %s, %ld inexact elements)\n", cases, format, lossy);
        }
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
