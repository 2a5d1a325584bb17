/*
 * Bad MPI_Allreduce arguments with coll/strata selected: each is rejected
 * with an MPI error class (the communicator's handler is MPI_ERRORS_RETURN),
 * and a correct allreduce on the same communicator still works afterwards.
 *   mpirun -np N test_allreduce_errors
 * Prints each case; exits non-zero naming the first case that was accepted
 * or rejected with the wrong class.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int failures = 0;

static void expect_class2(const char *what, int rc, int expected_class, int also_class)
{
    int cls = MPI_SUCCESS, rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &cls);
    }
    if (cls != expected_class && cls != also_class) {
        printf("test_allreduce_errors: FAIL: rank %d: %s: error class %d, expected %d\n", rank,
               what, cls, expected_class);
        failures++;
    } else if (0 == rank) {
        printf("test_allreduce_errors: %s: rejected as expected (class %d)\n", what, cls);
    }
}

static void expect_class(const char *what, int rc, int expected_class)
{
    expect_class2(what, rc, expected_class, expected_class);
}

/* A correct call after the bad ones: the sum of ranks, exactly. */
static void expect_still_works(MPI_Comm comm)
{
    int rank, size;
    long long in[1000], out[1000];

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < 1000; ++i) {
        in[i] = rank + i;
    }
    if (MPI_SUCCESS != MPI_Allreduce(in, out, 1000, MPI_LONG_LONG, MPI_SUM, comm)) {
        printf("test_allreduce_errors: FAIL: rank %d: a correct call after the bad ones failed\n",
               rank);
        failures++;
        return;
    }
    for (int i = 0; i < 1000; ++i) {
        long long expect = (long long)size * (size - 1) / 2 + (long long)size * i;
        if (out[i] != expect) {
            printf("test_allreduce_errors: FAIL: rank %d index %d expected %lld got %lld\n", rank, i,
                   expect, out[i]);
            failures++;
            return;
        }
    }
}

int main(int argc, char **argv)
{
    int a[4] = {1, 2, 3, 4}, b[4];
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    /* MPI_COMM_NULL errors go to MPI_COMM_WORLD's handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    /* strata has set up the communicator before the bad calls come */
    expect_still_works(comm);
    expect_class("negative count", MPI_Allreduce(a, b, -1, MPI_INT, MPI_SUM, comm), MPI_ERR_COUNT);
    /* Open MPI 4.1 checks the op/datatype pair first and says MPI_ERR_OP */
    expect_class2("null datatype", MPI_Allreduce(a, b, 4, MPI_DATATYPE_NULL, MPI_SUM, comm),
                  MPI_ERR_TYPE, MPI_ERR_OP);
    expect_class("null op", MPI_Allreduce(a, b, 4, MPI_INT, MPI_OP_NULL, comm), MPI_ERR_OP);
    expect_class("MPI_SUM on a pair type", MPI_Allreduce(a, b, 2, MPI_2INT, MPI_SUM, comm),
                 MPI_ERR_OP);
    expect_class("MPI_BAND on MPI_FLOAT", MPI_Allreduce(a, b, 4, MPI_FLOAT, MPI_BAND, comm),
                 MPI_ERR_OP);
    expect_class("MPI_IN_PLACE as receive buffer",
                 MPI_Allreduce(a, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, comm), MPI_ERR_BUFFER);
    expect_class("null communicator", MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL),
                 MPI_ERR_COMM);
    expect_still_works(comm);

    MPI_Comm_free(&comm);
    if (0 == failures) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (0 == rank) {
            printf("test_allreduce_errors: OK: 7 bad calls rejected, communicator still works\n");
        }
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
