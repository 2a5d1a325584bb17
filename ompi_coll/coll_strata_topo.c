/*
 * coll/strata topology: nodes, rails and the sub-communicators behind them.
 *
 * Built once per communicator, lazily, inside the first allreduce strata
 * runs itself: creating communicators in comm_query/module_enable re-enters
 * coll selection and deadlocks MPI_Comm_dup.  Creating them here re-enters
 * this communicator's allreduce instead (context-id agreement), which the
 * SETUP_BUSY state sends to the saved fallback.  The sub-communicators carry
 * the info key ompi_comm_coll_preference=^strata so strata never stacks on
 * its own building blocks.
 *
 *   node_comm  the ranks of this node (MPI_COMM_TYPE_SHARED), in comm order
 *   rail_comm  local rank r of every node, ordered by node, for r < ppn_min:
 *              every rail spans all nodes even when nodes hold different
 *              numbers of ranks
 *
 * The outcome (ready or failed) is agreed across the whole communicator, so
 * all ranks take the same path afterwards.
 */
#include "coll_strata.h"

#include <stdio.h>

#include "ompi/constants.h"
#include "opal/util/info.h"

/* Warn once per process, and only where the failure happened (`why` set). */
static void mca_coll_strata_topo_warn(struct ompi_communicator_t *comm, const char *why)
{
    static bool warned = false;

    if ('\0' == why[0]) {
        MCA_COLL_STRATA_VERBOSE(10, "%s: another rank could not set up strata; falling back",
                                comm->c_name);
    } else if (!warned) {
        warned = true;
        opal_output(0, "coll:strata: warning: %s: %s; allreduce on this communicator "
                    "falls back to the component below strata", comm->c_name, why);
    } else {
        MCA_COLL_STRATA_VERBOSE(10, "%s: %s; falling back", comm->c_name, why);
    }
}

static void mca_coll_strata_topo_name(struct ompi_communicator_t *sub,
                                      struct ompi_communicator_t *comm, const char *what)
{
    char name[2 * MPI_MAX_OBJECT_NAME]; /* set_name keeps what fits */

    snprintf(name, sizeof(name), "strata %s of %s", what, comm->c_name);
    ompi_comm_set_name(sub, name);
}

/* Nodes from every rank's node leader (its node's lowest rank in comm). */
static int mca_coll_strata_topo_nodes(mca_coll_strata_topo_t *topo,
                                      struct ompi_communicator_t *comm)
{
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
    rc = comm->c_coll->coll_allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, comm,
                                      comm->c_coll->coll_allgather_module);
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

static int mca_coll_strata_topo_comms(mca_coll_strata_topo_t *topo,
                                      struct ompi_communicator_t *comm, char *why,
                                      size_t why_len)
{
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

    rc = mca_coll_strata_topo_nodes(topo, comm);
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

/* Shared memory and ring scratch, sized by coll_strata_segment_size. */
static int mca_coll_strata_topo_buffers(mca_coll_strata_module_t *module, char *why,
                                        size_t why_len)
{
    mca_coll_strata_component_t *c = &mca_coll_strata_component;
    size_t slot_bytes = (c->segment_size < 4096) ? 4096 : c->segment_size;
    int nslots = (c->shm_slots < 1) ? 1 : c->shm_slots;
    int rc;

    slot_bytes = (slot_bytes + 63) & ~(size_t)63;
    rc = mca_coll_strata_shm_attach(&module->shm, module->topo.node_comm, slot_bytes, nslots,
                                    c->shm_dir, why, why_len);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    module->rings = calloc((size_t)nslots, sizeof(*module->rings));
    if (NULL == module->rings) {
        snprintf(why, why_len, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* A ring block is at most one chunk: one slot's bytes per chunk in flight. */
    if (NULL != module->topo.rail_comm) {
        module->scratch_slot_bytes = slot_bytes;
        module->scratch = malloc(slot_bytes * (size_t)nslots);
        if (NULL == module->scratch) {
            snprintf(why, why_len, "cannot allocate %zu bytes of ring scratch",
                     slot_bytes * (size_t)nslots);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    return OMPI_SUCCESS;
}

int mca_coll_strata_topo_setup(mca_coll_strata_module_t *module,
                               struct ompi_communicator_t *comm)
{
    char why[PATH_MAX + 128] = "";
    int ok, all_ok, rc;

    module->setup = MCA_COLL_STRATA_SETUP_BUSY;
    rc = mca_coll_strata_topo_comms(&module->topo, comm, why, sizeof(why));
    if (OMPI_SUCCESS == rc) {
        /* Collective over the node only, so every node must reach it. */
        rc = mca_coll_strata_topo_buffers(module, why, sizeof(why));
    }

    ok = (OMPI_SUCCESS == rc) ? 1 : 0;
    rc = module->fallback.allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm,
                                    module->fallback.allreduce_module);
    if (OMPI_SUCCESS != rc || !all_ok) {
        mca_coll_strata_topo_warn(comm, why);
        mca_coll_strata_topo_release(module);
        module->setup = MCA_COLL_STRATA_SETUP_FAILED;
        return OMPI_ERROR;
    }

    MCA_COLL_STRATA_VERBOSE(10, "%s: %d nodes, %d-%d ranks per node, node %d, local rank %d%s",
                            comm->c_name, module->topo.nnodes, module->topo.ppn_min,
                            module->topo.ppn_max, module->topo.node_index,
                            module->topo.local_rank,
                            NULL != module->topo.rail_comm ? ", on a rail" : "");
    module->setup = MCA_COLL_STRATA_SETUP_READY;
    return OMPI_SUCCESS;
}

void mca_coll_strata_topo_release(mca_coll_strata_module_t *module)
{
    mca_coll_strata_shm_detach(&module->shm);
    free(module->scratch);
    module->scratch = NULL;
    free(module->rings);
    module->rings = NULL;
    if (NULL != module->topo.rail_comm) {
        ompi_comm_free(&module->topo.rail_comm);
        module->topo.rail_comm = NULL;
    }
    if (NULL != module->topo.node_comm) {
        ompi_comm_free(&module->topo.node_comm);
        module->topo.node_comm = NULL;
    }
}
