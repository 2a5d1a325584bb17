#include "stest_mpi.h"

#include "stest_fail.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static struct {
    int rank;
    stest_mpi_fail_style_t style;
} stest_mpi;

void stest_mpi_init(int world_rank, stest_mpi_fail_style_t style)
{
    stest_mpi.rank  = world_rank;
    stest_mpi.style = style;
}

void stest_fail(const char *fmt, ...)
{
    va_list ap;

    if (stest_mpi.style == STEST_MPI_FAIL_FIRST) printf("FAIL rank %d: ", stest_mpi.rank);
    else printf("rank %d: FAIL: ", stest_mpi.rank);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

int stest_mpi_local_rank(void)
{
    MPI_Comm node;
    int local_rank;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    return local_rank;
}

int stest_mpi_dev_open(stest_dev_t *d)
{
    if (stest_dev_open(stest_mpi_local_rank(), d) != 0) {
        printf("rank %d: skip: no CUDA device\n", stest_mpi.rank);
        return STEST_EXIT_SKIP;
    }
    return 0;
}
