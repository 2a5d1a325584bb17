/*
 * Checks that Open MPI sees the node layout the test asked for:
 *   test_topology --nodes N --ppn K
 * MPI_COMM_TYPE_SHARED must split MPI_COMM_WORLD into N node communicators of
 * K ranks each, every rank of a node must report the same hostname, and the N
 * nodes must have N different hostnames.  Prints what it checked; exits
 * non-zero on the first mismatch, naming the rank, what was expected and what
 * was found.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOST_LEN 64

static int fail(int rank, const char *what, long expected, long got)
{
    fprintf(stderr, "test_topology: FAIL rank %d: %s: expected %ld, got %ld\n", rank, what,
            expected, got);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    int nodes = -1, ppn = -1, rank, size, node_rank, node_size, i;
    char host[HOST_LEN] = {0};
    char *all_hosts;
    MPI_Comm node_comm;

    MPI_Init(&argc, &argv);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes")) nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ppn")) ppn = atoi(argv[i + 1]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (nodes <= 0 || ppn <= 0) {
        if (rank == 0) fprintf(stderr, "usage: test_topology --nodes N --ppn K\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (size != nodes * ppn) fail(rank, "world size (nodes * ppn)", (long)nodes * ppn, size);

    gethostname(host, HOST_LEN - 1);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
    MPI_Comm_rank(node_comm, &node_rank);
    MPI_Comm_size(node_comm, &node_size);
    if (node_size != ppn) fail(rank, "ranks in my MPI_COMM_TYPE_SHARED communicator", ppn, node_size);

    /* Every rank of my node communicator has my hostname. */
    all_hosts = calloc((size_t)size, HOST_LEN);
    MPI_Allgather(host, HOST_LEN, MPI_CHAR, all_hosts, HOST_LEN, MPI_CHAR, node_comm);
    for (i = 0; i < node_size; i++) {
        if (strncmp(all_hosts + (size_t)i * HOST_LEN, host, HOST_LEN)) {
            fprintf(stderr, "test_topology: FAIL rank %d: node peer %d has hostname '%s', I have '%s'\n",
                    rank, i, all_hosts + (size_t)i * HOST_LEN, host);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    /* Count distinct hostnames across the job. */
    MPI_Allgather(host, HOST_LEN, MPI_CHAR, all_hosts, HOST_LEN, MPI_CHAR, MPI_COMM_WORLD);
    if (rank == 0) {
        int distinct = 0, j;
        for (i = 0; i < size; i++) {
            for (j = 0; j < i; j++) {
                if (!strncmp(all_hosts + (size_t)i * HOST_LEN, all_hosts + (size_t)j * HOST_LEN, HOST_LEN)) break;
            }
            if (j == i) {
                distinct++;
                printf("test_topology: node '%s'\n", all_hosts + (size_t)i * HOST_LEN);
            }
        }
        if (distinct != nodes) fail(rank, "distinct hostnames", nodes, distinct);
        printf("test_topology: OK: %d ranks, %d nodes with distinct hostnames, %d ranks per "
               "MPI_COMM_TYPE_SHARED communicator\n", size, distinct, ppn);
    }
    free(all_hosts);
    MPI_Comm_free(&node_comm);
    MPI_Finalize();
    return 0;
}
