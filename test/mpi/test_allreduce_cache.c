/*
 * coll/strata keeps the allreduce decisions of recent calls per
 * communicator, keyed by (count, datatype, op).  Calls that must not share a
 * decision, made back to back, each get their own, and right answers:
 *   test_allreduce_cache [--small-count N]
 * 1. counts N and N + 8 ints (the same cache slot), on either side of
 *    coll_strata_allreduce_small_max when N * 4 is just below it: the
 *    verbose lines (checked by the runner) must name the small-message path
 *    for one and the large one for the other, every time;
 * 2. MPI_SUM and MPI_MAX with one count, alternating;
 * 3. a commutative user op, freed, then a non-commutative one (malloc tends
 *    to hand out the same address): the second must go to the fallback
 *    (its verbose line says "non-commutative op") and reduce in rank order;
 *    a predefined op with the same count after it is strata's again;
 * 4. MPI_SUM, then a non-commutative op with the same count and type: the
 *    fallback again.
 * Every result is checked against a reference computed by each rank alone.
 * Prints "test_allreduce_cache: N errors" on rank 0; exit 1 on any.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static int check_sum_max(int count, MPI_Op op, int round)
{
    int *in = calloc((size_t)count, sizeof(int)), *out = calloc((size_t)count, sizeof(int));
    int errors = 0;

    for (int i = 0; i < count; ++i) {
        in[i] = (rank + 1) * (i % 97) + round;
    }
    MPI_Allreduce(in, out, count, MPI_INT, op, MPI_COMM_WORLD);
    for (int i = 0; i < count && errors < 3; ++i) {
        /* sum over r of (r+1)(i%97) + round, or the largest rank's value */
        int expect = (op == MPI_SUM) ? (nranks * (nranks + 1) / 2) * (i % 97) + nranks * round
                                     : nranks * (i % 97) + round;

        if (out[i] != expect) {
            fprintf(stderr, "rank %d: count %d %s round %d: [%d] = %d, expected %d\n", rank, count,
                    (op == MPI_SUM) ? "MPI_SUM" : "MPI_MAX", round, i, out[i], expect);
            ++errors;
        }
    }
    free(in);
    free(out);
    return errors;
}

/* Affine maps x -> m x + c, (m, c) per element; a (x) b applies a, then b.
 * Composition is associative but not commutative: MPI's rank order
 * x0 (x) x1 (x) ... is the only right answer. */
typedef struct {
    unsigned m, c;
} affine_t;

static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    affine_t *a = in, *b = inout;

    (void)dt;
    for (int i = 0; i < *len; ++i) {
        affine_t r = {b[i].m * a[i].m, b[i].m * a[i].c + b[i].c};

        b[i] = r;
    }
}

static void sum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    affine_t *a = in, *b = inout;

    (void)dt;
    for (int i = 0; i < *len; ++i) {
        b[i].m += a[i].m;
        b[i].c += a[i].c;
    }
}

/* a (x) b = a: associative, not commutative; the rank-order answer is
 * rank 0's value */
static void first_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, sizeof(unsigned) * (size_t)*len);
}

/* MPI_SUM on count unsigned ints (kept in the cache), then a
 * non-commutative op on the same count and type: the op is part of the key. */
static int check_same_count_user_op(int count)
{
    unsigned *in = calloc((size_t)count, sizeof(unsigned));
    unsigned *out = calloc((size_t)count, sizeof(unsigned));
    MPI_Op op;
    int errors = 0;

    for (int i = 0; i < count; ++i) {
        in[i] = (unsigned)(rank + 7);
    }
    MPI_Allreduce(in, out, count, MPI_UNSIGNED, MPI_SUM, MPI_COMM_WORLD);
    MPI_Op_create(first_op, 0, &op);
    MPI_Allreduce(in, out, count, MPI_UNSIGNED, op, MPI_COMM_WORLD);
    MPI_Op_free(&op);
    for (int i = 0; i < count && errors < 3; ++i) {
        if (out[i] != 7u) {
            fprintf(stderr, "rank %d: non-commutative op after MPI_SUM: [%d] = %u, expected 7\n",
                    rank, i, out[i]);
            ++errors;
        }
    }
    free(in);
    free(out);
    return errors;
}

static int check_user_ops(int count)
{
    affine_t *in = calloc((size_t)count, sizeof(affine_t));
    affine_t *out = calloc((size_t)count, sizeof(affine_t));
    affine_t expect = {2, 1};
    MPI_Datatype pair;
    MPI_Op op;
    int errors = 0;

    MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
    MPI_Type_commit(&pair);
    for (int i = 0; i < count; ++i) {
        in[i].m = (unsigned)(rank + 2);
        in[i].c = (unsigned)(rank + 1);
    }
    MPI_Op_create(sum_op, 1, &op);
    MPI_Allreduce(in, out, count, pair, op, MPI_COMM_WORLD);
    MPI_Op_free(&op);
    if (out[0].c != (unsigned)(nranks * (nranks + 1) / 2)) {
        fprintf(stderr, "rank %d: commutative user op: %u\n", rank, out[0].c);
        ++errors;
    }

    MPI_Op_create(affine_op, 0, &op);
    MPI_Allreduce(in, out, count, pair, op, MPI_COMM_WORLD);
    MPI_Op_free(&op);
    for (int r = 1; r < nranks; ++r) {
        affine_t x = {(unsigned)(r + 2), (unsigned)(r + 1)};

        expect.c = x.m * expect.c + x.c;
        expect.m = x.m * expect.m;
    }
    for (int i = 0; i < count && errors < 3; ++i) {
        if (out[i].m != expect.m || out[i].c != expect.c) {
            fprintf(stderr,
                    "rank %d: non-commutative user op: [%d] = (%u, %u), expected "
                    "(%u, %u)\n",
                    rank, i, out[i].m, out[i].c, expect.m, expect.c);
            ++errors;
        }
    }

    MPI_Allreduce(in, out, 2 * count, MPI_UNSIGNED, MPI_SUM, MPI_COMM_WORLD);
    if (out[0].c != (unsigned)(nranks * (nranks + 1) / 2)) {
        fprintf(stderr, "rank %d: MPI_SUM after the user ops: %u\n", rank, out[0].c);
        ++errors;
    }
    MPI_Type_free(&pair);
    free(in);
    free(out);
    return errors;
}

int main(int argc, char **argv)
{
    int small = 508, errors = 0, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i + 1 < argc; ++i) {
        if (!strcmp(argv[i], "--small-count")) {
            small = atoi(argv[i + 1]);
        }
    }

    for (int round = 0; round < 3; ++round) {
        errors += check_sum_max(small, MPI_SUM, round);
        errors += check_sum_max(small + 8, MPI_SUM, round);
    }
    for (int round = 0; round < 3; ++round) {
        errors += check_sum_max(small, MPI_SUM, round);
        errors += check_sum_max(small, MPI_MAX, round);
    }
    errors += check_user_ops(24);
    errors += check_same_count_user_op(40);

    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_allreduce_cache: %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
