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
#include "coll_strata.h"

#include <stdio.h>

#include "ompi/constants.h"
#include "opal/util/info.h"

static void mca_coll_strata_topo_name(struct ompi_communicator_t *sub,
                                      struct ompi_communicator_t *comm, const char *what)
{
    char name[2 * MPI_MAX_OBJECT_NAME]; /* set_name keeps what fits */

    snprintf(name, sizeof(name), "strata %s of %s", what, comm->c_name);
    ompi_comm_set_name(sub, name);
}

/* Nodes from every rank's node leader (its node's lowest rank in comm). */
static int mca_coll_strata_topo_nodes(mca_coll_strata_module_t *module,
                                      struct ompi_communicator_t *comm)
{
    mca_coll_strata_topo_t *topo = &module->topo;
    int size = ompi_comm_size(comm);
    int me = ompi_comm_rank(comm);
    int leader = me, rc, *leaders;

    rc = topo->node_comm->c_coll->coll_bcast(&leader, 1, MPI_INT, 0, topo->node_comm,
                                             topo->node_comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    leaders = malloc(sizeof(int) * size);
    if (NULL == leaders) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = MCA_COLL_STRATA_FALLBACK(module, allgather, comm, &leader, 1, MPI_INT, leaders, 1, MPI_INT);
    if (OMPI_SUCCESS == rc) {
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
    free(leaders);
    return rc;
}

int mca_coll_strata_topo_setup(mca_coll_strata_module_t *module,
                               struct ompi_communicator_t *comm, char *why, size_t why_len)
{
    mca_coll_strata_topo_t *topo = &module->topo;
    opal_info_t info;
    int rc;

    OBJ_CONSTRUCT(&info, opal_info_t);
    opal_info_set(&info, "ompi_comm_coll_preference", "^strata");

    rc = ompi_comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, &info, &topo->node_comm);
    if (OMPI_SUCCESS != rc) {
        snprintf(why, why_len, "cannot split by node (%d)", rc);
        goto out;
    }
    mca_coll_strata_topo_name(topo->node_comm, comm, "node");
    topo->local_rank = ompi_comm_rank(topo->node_comm);
    topo->local_size = ompi_comm_size(topo->node_comm);

    rc = mca_coll_strata_topo_nodes(module, comm);
    if (OMPI_SUCCESS != rc) {
        snprintf(why, why_len, "cannot exchange node leaders (%d)", rc);
        goto out;
    }
    if (topo->nnodes > 1) {
        int color = (topo->local_rank < topo->ppn_min) ? topo->local_rank : MPI_UNDEFINED;

        rc = ompi_comm_split_with_info(comm, color, topo->node_index, &info,
                                       &topo->rail_comm, false);
        if (OMPI_SUCCESS != rc) {
            snprintf(why, why_len, "cannot split into rails (%d)", rc);
            topo->rail_comm = NULL;
            goto out;
        }
        if (&ompi_mpi_comm_null.comm == topo->rail_comm) {
            topo->rail_comm = NULL;
        } else {
            mca_coll_strata_topo_name(topo->rail_comm, comm, "rail");
        }
    }

out:
    OBJ_DESTRUCT(&info);
    return rc;
}

void mca_coll_strata_topo_release(mca_coll_strata_topo_t *topo)
{
    if (NULL != topo->rail_comm) {
        ompi_comm_free(&topo->rail_comm);
        topo->rail_comm = NULL;
    }
    if (NULL != topo->node_comm) {
        ompi_comm_free(&topo->node_comm);
        topo->node_comm = NULL;
    }
}
