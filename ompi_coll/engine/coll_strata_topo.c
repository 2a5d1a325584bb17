/*
 * coll/strata topology: nodes, rails and the sub-communicators behind them.
 *
 * Built once per communicator, lazily, inside the first allreduce strata
 * runs itself (mca_coll_strata_module_ready): creating communicators in
 * comm_query/module_enable re-enters coll selection and deadlocks
 * MPI_Comm_dup.  Only saved fallback functions are called on `comm` here,
 * never the communicator's current ones, which are strata's own.  The
 * sub-communicators carry the info key ompi_comm_coll_preference=^strata so
 * strata never stacks on its own building blocks.
 *
 *   node_comm  the ranks of this node (MPI_COMM_TYPE_SHARED), in comm order
 *   rail_comm  local rank r of every node, ordered by node, for r < ppn_min:
 *              every rail spans all nodes even when nodes hold different
 *              numbers of ranks
 */
#include "coll_strata_engine_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/constants.h"
#include "opal/util/info.h"

static void mca_coll_strata_topo_name(struct ompi_communicator_t *sub,
                                      struct ompi_communicator_t *comm, const char *what)
{
    char name[2 * MPI_MAX_OBJECT_NAME]; /* set_name keeps what fits */

    snprintf(name, sizeof(name), "strata %s of %s", what, comm->c_name);
    ompi_comm_set_name(sub, name);
}

/* Nodes from every rank's node leader (its node's lowest rank in comm),
 * given every rank's leader in `leaders`. */
static void mca_coll_strata_topo_count(mca_coll_strata_topo_t *topo, const int *leaders, int size,
                                       int leader)
{
    topo->nnodes = 0;
    topo->node_index = 0;
    topo->ppn_min = size;
    topo->ppn_max = 0;
    for (int r = 0; r < size; ++r) {
        int ppn = 0;

        if (leaders[r] != r) {
            continue;
        }
        topo->node_index += (r < leader) ? 1 : 0;
        topo->nnodes++;
        for (int q = r; q < size; ++q) {
            ppn += (leaders[q] == r) ? 1 : 0;
        }
        topo->ppn_min = (ppn < topo->ppn_min) ? ppn : topo->ppn_min;
        topo->ppn_max = (ppn > topo->ppn_max) ? ppn : topo->ppn_max;
    }
}

/* Node order (mca_coll_strata_topo_t): each rank's node is the number of
 * leaders below its own (leaders are their node's lowest rank); its
 * position follows the earlier ranks of its node.  node_first counts the
 * ranks before each node; `placed` (nnodes entries) those placed so far. */
static void mca_coll_strata_topo_order(mca_coll_strata_topo_t *topo, const int *leaders, int size,
                                       int *placed)
{
    for (int k = 0; k <= topo->nnodes; ++k) {
        topo->node_first[k] = 0;
    }
    for (int r = 0, node = 0; r < size; ++r) {
        topo->rank_node[r] = (leaders[r] == r) ? node++ : topo->rank_node[leaders[r]];
        topo->node_first[topo->rank_node[r] + 1]++;
    }
    for (int k = 0; k < topo->nnodes; ++k) {
        topo->node_first[k + 1] += topo->node_first[k];
        placed[k] = 0;
    }
    topo->node_contiguous = true;
    for (int r = 0; r < size; ++r) {
        int k = topo->rank_node[r];

        topo->rank_pos[r] = topo->node_first[k] + placed[k]++;
        topo->node_contiguous = topo->node_contiguous && topo->rank_pos[r] == r;
    }
}

/*
 * Every rank runs the same collectives in the same order whatever fails
 * locally: a rank that skipped one would leave the others in it while it
 * waits in the next (a hang, or mismatched collectives).  What can fail on
 * one rank alone (the allocation, the node split) is agreed before the
 * first collective that depends on it; a later local failure only changes
 * what the rank contributes (no rail), and the set-up's closing agreement
 * (coll_strata_module.c) turns it into a fallback on every rank.
 */
int mca_coll_strata_topo_setup(mca_coll_strata_engine_t *e, struct ompi_communicator_t *comm,
                               char *why, size_t why_len)
{
    mca_coll_strata_topo_t *topo = &e->topo;
    int size = ompi_comm_size(comm), leader = ompi_comm_rank(comm);
    int *leaders = NULL, ok, all_ok = 0, rc, rc2;
    opal_info_t info;

    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", "^strata");

    if (!mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_NODES)) {
        /* every rank's leader, then scratch for node order */
        leaders = malloc(sizeof(int) * 2 * (size_t)size);
        topo->rank_node = malloc(sizeof(int) * (size_t)size);
        topo->rank_pos = malloc(sizeof(int) * (size_t)size);
        topo->node_first = malloc(sizeof(int) * ((size_t)size + 1));
        if (NULL == topo->rank_node || NULL == topo->rank_pos || NULL == topo->node_first) {
            free(leaders);
            leaders = NULL;
        }
    }
    rc = ompi_comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, &info, &topo->node_comm);
    if (OMPI_SUCCESS != rc) {
        topo->node_comm = NULL;
        snprintf(why, why_len, "cannot split by node (%d)", rc);
    } else if (NULL == leaders) {
        snprintf(why, why_len, "cannot allocate %d node leaders", size);
    }
    ok = (OMPI_SUCCESS == rc) && (NULL != leaders);
    rc = e->below->allreduce(e->below_ctx, comm, &ok, &all_ok, 1, MPI_INT, MPI_MIN);
    if (OMPI_SUCCESS != rc || !all_ok) {
        if ('\0' == why[0]) {
            snprintf(why, why_len, "another rank could not split by node or allocate");
        }
        /* not every rank of the node may have it: none takes part in the
         * node's set-up (no rail exists yet: this frees node_comm only) */
        mca_coll_strata_topo_release(topo);
        rc = OMPI_ERROR;
        goto out;
    }
    mca_coll_strata_topo_name(topo->node_comm, comm, "node");
    topo->local_rank = ompi_comm_rank(topo->node_comm);
    topo->local_size = ompi_comm_size(topo->node_comm);

    /* leader: rank 0 of node_comm, the node's lowest rank in comm */
    rc = topo->node_comm->c_coll->coll_bcast(&leader, 1, MPI_INT, 0, topo->node_comm,
                                             topo->node_comm->c_coll->coll_bcast_module);
    rc2 = e->below->allgather(e->below_ctx, comm, &leader, 1, MPI_INT, leaders, 1, MPI_INT);
    if (OMPI_SUCCESS == rc && OMPI_SUCCESS != rc2) {
        rc = rc2;
    }
    if (OMPI_SUCCESS == rc && mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_LEADERS)) {
        rc = OMPI_ERROR;
    }
    if (OMPI_SUCCESS == rc) {
        mca_coll_strata_topo_count(topo, leaders, size, leader);
        mca_coll_strata_topo_order(topo, leaders, size, leaders + size);
    } else {
        snprintf(why, why_len, "cannot exchange node leaders (%d)", rc);
        topo->nnodes = 0;
    }
    /* The rail split is collective over comm: every rank takes part (the
     * nodes count is the same on every rank that exchanged leaders; a rank
     * whose exchange failed joins with no rail). */
    {
        int nnodes = topo->nnodes, max_nnodes = 0;

        rc2 = e->below->allreduce(e->below_ctx, comm, &nnodes, &max_nnodes, 1, MPI_INT, MPI_MAX);
        if (OMPI_SUCCESS == rc2 && max_nnodes > 1) {
            int color = (OMPI_SUCCESS == rc && topo->local_rank < topo->ppn_min) ? topo->local_rank
                                                                                 : MPI_UNDEFINED;

            rc2 = ompi_comm_split_with_info(comm, color, topo->node_index, &info, &topo->rail_comm,
                                            false);
            if (OMPI_SUCCESS != rc2 || &ompi_mpi_comm_null.comm == topo->rail_comm) {
                topo->rail_comm = NULL;
            } else {
                mca_coll_strata_topo_name(topo->rail_comm, comm, "rail");
            }
        }
        if (OMPI_SUCCESS == rc && OMPI_SUCCESS != rc2) {
            rc = rc2;
            snprintf(why, why_len, "cannot split into rails (%d)", rc);
        }
    }

out:
    free(leaders);
    OBJ_DESTRUCT(&info);
    return rc;
}

void mca_coll_strata_topo_release(mca_coll_strata_topo_t *topo)
{
    free(topo->rank_node);
    free(topo->rank_pos);
    free(topo->node_first);
    topo->rank_node = topo->rank_pos = topo->node_first = NULL;
    if (NULL != topo->rail_comm) {
        ompi_comm_free(&topo->rail_comm);
        topo->rail_comm = NULL;
    }
    if (NULL != topo->node_comm) {
        ompi_comm_free(&topo->node_comm);
        topo->node_comm = NULL;
    }
}
