/*
 * coll/strata comm: the lazy set-up of strata's own algorithms on a
 * communicator, at its first collective that could run them (never in
 * comm_query or module_enable: creating the sub-communicators there
 * re-enters coll selection and deadlocks MPI_Comm_dup).  The engine's
 * topology, then the pipeline's resources; the outcome agreed across the
 * whole communicator, so every rank takes the same path afterwards; then
 * the network figures of the cost model.
 */
#include "coll_strata_module.h"

#include <limits.h>
#include <stdio.h>

#include <common/strata_mem.h>

/* Warn once per process, and only where the failure happened (`why` set). */
static void mca_coll_strata_module_warn(struct ompi_communicator_t *comm, const char *why)
{
    static bool warned = false;

    if ('\0' == why[0]) {
        MCA_COLL_STRATA_VERBOSE(10, "%s: another rank could not set up strata; falling back",
                                comm->c_name);
    } else if (!warned) {
        warned = true;
        opal_output(0,
                    "coll:strata: warning: %s: %s; allreduce on this communicator "
                    "falls back to the component below strata",
                    comm->c_name, why);
    } else {
        MCA_COLL_STRATA_VERBOSE(10, "%s: %s; falling back", comm->c_name, why);
    }
}

/*
 * Topology, then the pipeline's resources; the outcome is agreed across the
 * whole communicator (through the saved allreduce), so every rank takes the
 * same path afterwards.  Creating the sub-communicators re-enters this
 * communicator's collectives (context-id agreement): SETUP_BUSY sends those
 * calls to the fallback.
 */
static int mca_coll_strata_module_setup(mca_coll_strata_module_t *module,
                                        struct ompi_communicator_t *comm)
{
    char why[PATH_MAX + 128] = "";
    int mine[3], all[3], all_ok, rc;

    /* (a no-op: the collective that set strata up agreed them first) */
    (void)mca_coll_strata_settings_ready(module, comm);
    module->setup = MCA_COLL_STRATA_SETUP_BUSY;
    rc = mca_coll_strata_topo_setup(&module->engine, comm, why, sizeof(why));
    /* Collective over the node: every rank that has a node communicator
     * (every rank of the node does, once the split is agreed) takes part,
     * also one whose later topology steps failed: it declines there, or its
     * node peers would wait for it in the segment's set-up. */
    if (NULL != module->engine.topo.node_comm) {
        int node_rc = mca_coll_strata_pipeline_setup(&module->engine, &module->settings,
                                                     OMPI_SUCCESS == rc, why, sizeof(why));

        rc = (OMPI_SUCCESS == rc) ? node_rc : rc;
    }

    /* One agreement for three facts: whether every rank is set up, whether
     * any rank has a CUDA driver (only then do device allreduces ask the
     * ranks whether all of them can run on the GPUs: host-only jobs never
     * pay for that question), and whether some rank progresses nonblocking
     * calls inside MPI calls only (coll_strata_progress=calls: then no rank
     * sets up the transport a progress thread needs between nodes). */
    mine[0] = (OMPI_SUCCESS == rc) ? 0 : 1;
    mine[1] = strata_mem_driver_present() ? 1 : 0;
    mine[2] = mca_coll_strata_progress_threaded() ? 0 : 1;
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, mine, all, 3, MPI_INT, MPI_MAX);
    all_ok = (OMPI_SUCCESS == rc) && !all[0];
    module->engine.any_driver = all_ok && all[1];
    /* the rail's own transport for nonblocking calls between nodes
     * (collective over each rail, right after the agreement so that every
     * rank of a rail takes part; without it they use the pml and progress
     * inside MPI calls only) */
    if (all_ok && !all[2] && module->engine.topo.nnodes > 1) {
        (void)mca_coll_strata_wire_setup(&module->engine);
    }
    /* after the agreement: it needs every rank's topology.  A broadcast
     * that fails on some ranks only leaves the communicator unusable
     * whatever this rank does next. */
    if (all_ok && OMPI_SUCCESS != (rc = mca_coll_strata_network_setup(module, comm))) {
        snprintf(why, sizeof(why), "cannot broadcast the network figures (%d)", rc);
        all_ok = 0;
    }
    if (!all_ok) {
        mca_coll_strata_module_warn(comm, why);
        mca_coll_strata_pipeline_release(&module->engine);
        mca_coll_strata_topo_release(&module->engine.topo);
        module->setup = MCA_COLL_STRATA_SETUP_FAILED;
        return OMPI_ERROR;
    }

    MCA_COLL_STRATA_VERBOSE(10, "%s: %d nodes, %d-%d ranks per node, node %d, local rank %d%s",
                            comm->c_name, module->engine.topo.nnodes, module->engine.topo.ppn_min,
                            module->engine.topo.ppn_max, module->engine.topo.node_index,
                            module->engine.topo.local_rank,
                            NULL != module->engine.topo.rail_comm ? ", on a rail" : "");
    module->setup = MCA_COLL_STRATA_SETUP_READY;
    /* coll_strata_progress=thread: the progress thread from the first
     * communicator on */
    mca_coll_strata_progress_early();
    return OMPI_SUCCESS;
}

bool mca_coll_strata_module_ready(mca_coll_strata_module_t *module,
                                  struct ompi_communicator_t *comm, const char **why)
{
    switch (module->setup) {
    case MCA_COLL_STRATA_SETUP_READY:
        return true;
    case MCA_COLL_STRATA_SETUP_BUSY:
        *why = "strata is creating its sub-communicators";
        return false;
    case MCA_COLL_STRATA_SETUP_FAILED:
        *why = "strata set-up failed on this communicator";
        return false;
    default:
        if (OMPI_SUCCESS != mca_coll_strata_module_setup(module, comm)) {
            *why = "strata set-up failed on this communicator";
            return false;
        }
        return true;
    }
}
