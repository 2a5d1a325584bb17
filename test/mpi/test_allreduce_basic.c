/*
 * MPI_Allreduce against an independent reference, on whatever coll component
 * the job selected (tuned, han, strata...):
 *   test_allreduce_basic [--max-count N]
 * Types int, long long, float, double; ops SUM, MAX, MIN; counts 0, 1, primes
 * and a large count; separate buffers and MPI_IN_PLACE; MPI_COMM_WORLD and a
 * split of odd size.  Every input is an integer small enough that float and
 * double sums are exact, so the reference (computed by every rank alone, in
 * 64-bit integers, from the formula that made the inputs) must match exactly.
 * The first wrong value prints rank, case, index, expected and got.
 * Then sums of inexact floats and doubles (random in [-1, 1]: the order of
 * the additions shows in the bits) must be bitwise identical on every rank:
 * MPI does not fix the order, but every rank must use the same one.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_INT, T_LLONG, T_FLOAT, T_DOUBLE, T_COUNT } test_type_t;
static const char *type_names[] = {"MPI_INT", "MPI_LONG_LONG", "MPI_FLOAT", "MPI_DOUBLE"};
static const size_t type_sizes[] = {sizeof(int), sizeof(long long), sizeof(float), sizeof(double)};

static MPI_Datatype type_mpi(test_type_t t)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_LLONG: return MPI_LONG_LONG;
    case T_FLOAT: return MPI_FLOAT;
    default: return MPI_DOUBLE;
    }
}

/* The input of rank r at index i: small signed integers, different per rank. */
static int64_t input_value(int r, long i)
{
    return (int64_t)(((r + 1) * 7919L + i * 104729L) % 2001) - 1000;
}

static void type_store(test_type_t t, void *buf, long i, int64_t v)
{
    switch (t) {
    case T_INT: ((int *)buf)[i] = (int)v; break;
    case T_LLONG: ((long long *)buf)[i] = v; break;
    case T_FLOAT: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = (double)v; break;
    }
}

static int64_t type_load(test_type_t t, const void *buf, long i)
{
    switch (t) {
    case T_INT: return ((const int *)buf)[i];
    case T_LLONG: return ((const long long *)buf)[i];
    case T_FLOAT: return (int64_t)((const float *)buf)[i];
    default: return (int64_t)((const double *)buf)[i];
    }
}

static int64_t reference(MPI_Op op, const int *world_ranks, int n, long i)
{
    int64_t acc = input_value(world_ranks[0], i);
    for (int k = 1; k < n; k++) {
        int64_t v = input_value(world_ranks[k], i);
        if (op == MPI_SUM) acc += v;
        else if (op == MPI_MAX) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
    }
    return acc;
}

static int check_case(MPI_Comm comm, const char *comm_name, const int *world_ranks,
                      test_type_t t, MPI_Op op, const char *op_name, long count, int in_place)
{
    int rank, size, world_rank;
    size_t bytes = (size_t)(count > 0 ? count : 1) * type_sizes[t];
    char *sbuf = malloc(bytes), *rbuf = malloc(bytes);

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    for (long i = 0; i < count; i++) {
        type_store(t, in_place ? rbuf : sbuf, i, input_value(world_rank, i));
        if (!in_place) type_store(t, rbuf, i, -7777); /* poison: every element must be written */
    }
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int)count, type_mpi(t), op, comm);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "test_allreduce_basic: FAIL rank %d: %s %s %s count %ld%s: MPI_Allreduce returned %d\n",
                world_rank, comm_name, type_names[t], op_name, count, in_place ? " in-place" : "", rc);
        return 1;
    }
    for (long i = 0; i < count; i++) {
        int64_t expected = reference(op, world_ranks, size, i), got = type_load(t, rbuf, i);
        if (expected != got) {
            fprintf(stderr, "test_allreduce_basic: FAIL rank %d: %s %s %s count %ld%s: index %ld expected %lld got %lld\n",
                    world_rank, comm_name, type_names[t], op_name, count, in_place ? " in-place" : "",
                    i, (long long)expected, (long long)got);
            return 1;
        }
    }
    free(sbuf);
    free(rbuf);
    return 0;
}

static int check_comm(MPI_Comm comm, const char *comm_name, long max_count)
{
    const long counts[] = {0, 1, 2, 7, 31, 1031, 65537, max_count};
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN};
    const char *op_names[] = {"MPI_SUM", "MPI_MAX", "MPI_MIN"};
    int size, world_rank, rank, cases = 0, failed = 0;
    int *world_ranks;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    world_ranks = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&world_rank, 1, MPI_INT, world_ranks, 1, MPI_INT, comm);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int t = 0; t < T_COUNT; t++) {
            for (int o = 0; o < 3; o++) {
                for (int in_place = 0; in_place < 2; in_place++) {
                    failed |= check_case(comm, comm_name, world_ranks, (test_type_t)t, ops[o],
                                         op_names[o], counts[c], in_place);
                    cases++;
                }
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, comm);
    if (rank == 0 && !failed) {
        printf("test_allreduce_basic: OK: %s (%d ranks): %d cases\n", comm_name, size, cases);
    }
    free(world_ranks);
    return failed;
}

/* Inexact sums: every rank's result must have rank 0's bits. */
static int check_identical(MPI_Comm comm, long max_count)
{
    static const long counts[] = {1, 7, 1021, 65537, 300007};
    int rank, failed = 0;

    MPI_Comm_rank(comm, &rank);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); ++c) {
        long n = counts[c] <= max_count ? counts[c] : max_count;

        for (int dbl = 0; dbl < 2; ++dbl) {
            size_t es = dbl ? sizeof(double) : sizeof(float);
            char *in = malloc(es * (size_t)n), *out = malloc(es * (size_t)n);
            char *root = malloc(es * (size_t)n);
            uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1) + (uint64_t)n;

            for (long i = 0; i < n; ++i) {
                double v;

                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                v = (double)(int64_t)(x >> 11) / (double)(1ull << 52) - 1.0;
                if (dbl) ((double *)in)[i] = v;
                else ((float *)in)[i] = (float)v;
            }
            MPI_Allreduce(in, out, (int)n, dbl ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, comm);
            memcpy(root, out, es * (size_t)n);
            MPI_Bcast(root, (int)(es * (size_t)n), MPI_BYTE, 0, comm);
            if (memcmp(root, out, es * (size_t)n)) {
                fprintf(stderr, "test_allreduce_basic: FAIL rank %d: inexact %s sum of %ld "
                        "differs from rank 0's bits\n", rank, dbl ? "double" : "float", n);
                failed = 1;
            }
            free(in);
            free(out);
            free(root);
        }
    }
    if (0 == rank && !failed) {
        printf("test_allreduce_basic: inexact float and double sums bitwise identical on every "
               "rank\n");
    }
    return failed;
}

int main(int argc, char **argv)
{
    long max_count = 1L << 20;
    int rank, size, failed = 0;
    MPI_Comm odd;

    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--max-count")) max_count = atol(argv[i + 1]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    failed |= check_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", max_count);
    failed |= check_identical(MPI_COMM_WORLD, max_count);
    /* All ranks but the last: an odd size whenever the world is even. */
    MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 && size > 1 ? MPI_UNDEFINED : 0, rank, &odd);
    if (odd != MPI_COMM_NULL) {
        failed |= check_comm(odd, "split(size-1)", max_count);
        MPI_Comm_free(&odd);
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed ? 1 : 0;
}
