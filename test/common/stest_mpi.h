/*
 * What the MPI test programs on device buffers share: stest_fail for an MPI
 * job (the rank, the message, MPI_Abort), and the device of a rank.
 */
#ifndef STEST_MPI_H
#define STEST_MPI_H

#include "stest_cuda.h"

#define STEST_EXIT_SKIP 77

/* How a failure line starts; both are kept because users and logs know
 * each program's own form. */
typedef enum {
    STEST_MPI_FAIL_RANK_FIRST, /* "rank R: FAIL: ..." */
    STEST_MPI_FAIL_FIRST,      /* "FAIL rank R: ..." */
} stest_mpi_fail_style_t;

/* After MPI_Init: the rank that stest_fail prints, and its form. */
void stest_mpi_init(int world_rank, stest_mpi_fail_style_t style);

/* The rank's index among the ranks of its node. */
int stest_mpi_local_rank(void);

/* The device of the rank's local rank (modulo the count), current.  0, or
 * STEST_EXIT_SKIP with "rank R: skip: no CUDA device" printed. */
int stest_mpi_dev_open(stest_dev_t *d);

#endif /* STEST_MPI_H */
