/*
 * coll/strata engine: one communicator's engine made and released, and the
 * process's last word (coll_strata_engine.h).  What is set up lazily (the
 * topology, the pipeline's resources, the device node area) is set up by
 * its own file; release undoes whatever of it was made, in the reverse
 * order: the device area (its scratch may outlive the communicator, see
 * coll_strata_node_device_setup.c), the segment and exchanges, the
 * sub-communicators.
 */
#include "coll_strata_pipeline.h"
#include "coll_strata_wire.h"

#include <string.h>

void mca_coll_strata_engine_init(mca_coll_strata_engine_t *e,
                                 const mca_coll_strata_engine_below_t *below, void *below_ctx,
                                 const char *shm_dir, int device_network)
{
    memset(e, 0, sizeof(*e));
    e->below = below;
    e->below_ctx = below_ctx;
    e->shm_dir = shm_dir;
    e->device_network = device_network;
    e->device_setup = MCA_COLL_STRATA_SETUP_NONE;
    e->device_ordinal = -1;
    /* a few polls before the first call has measured anything */
    e->spin_budget = 8;
}

void mca_coll_strata_engine_release(mca_coll_strata_engine_t *e)
{
    /* the progress thread forgets it first; none of its calls is left in
     * practice: a nonblocking call's request holds the module until the
     * call is done */
    mca_coll_strata_progress_unwatch(e);
    mca_coll_strata_pipeline_drain(e);
    mca_coll_strata_wire_ucp_release(e);
    mca_coll_strata_node_device_release(e);
    mca_coll_strata_pipeline_release(e);
    mca_coll_strata_topo_release(&e->topo);
}

void mca_coll_strata_engine_finalize(void)
{
    mca_coll_strata_progress_finalize();
    mca_coll_strata_wire_ucp_finalize();
    /* MPI_Finalize: the peers are closing theirs now */
    mca_coll_strata_node_device_reap(10.0);
}
