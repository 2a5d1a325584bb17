/*
 * coll/strata module: per-communicator query, enable, the fallback table and
 * the lazy set-up of strata's own algorithms.
 *
 * Open MPI stacks coll modules: each enabled module overwrites the function
 * pointers it implements, in priority order.  Strata is enabled after the
 * modules below it, so in module_enable it saves (and retains) the function
 * of every collective it installs as it stands then: the one that would
 * have run without strata.  A collective with nothing below it is not
 * installed.  Sub-communicators are never created here: doing so inside
 * comm_query/module_enable re-enters coll selection and deadlocks
 * MPI_Comm_dup.
 */
#include "coll_strata.h"
#include "colls/coll_strata_colls.h"
#include "staging/coll_strata_stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

static void mca_coll_strata_module_construct(mca_coll_strata_module_t *module)
{
    memset(&module->fallback, 0, sizeof(module->fallback));
    memset(&module->bounce, 0, sizeof(module->bounce));
    module->setup = MCA_COLL_STRATA_SETUP_NONE;
    /* until the first collective that reads them agrees them */
    module->settings = mca_coll_strata_component.settings;
    module->settings_agreed = false;
    module->decision = module->settings.decision;
    module->node_device = NULL;
    module->device_setup = MCA_COLL_STRATA_SETUP_NONE;
    module->any_driver = false;
    module->device_ordinal = -1;
    memset(&module->topo, 0, sizeof(module->topo));
    memset(&module->shm, 0, sizeof(module->shm));
    module->chunk_serial = 0;
    module->xchgs = NULL;
    module->node_parts = NULL;
    module->spin_budget = 8;
    memset(&module->node_host, 0, sizeof(module->node_host));
    memset(module->ar_cache, 0, sizeof(module->ar_cache));
}

#define MCA_COLL_STRATA_FALLBACK_RELEASE(_coll) \
    if (NULL != module->fallback._coll##_module) { \
        OBJ_RELEASE(module->fallback._coll##_module); \
        module->fallback._coll##_module = NULL; \
    } \
    module->fallback._coll = NULL;

static void mca_coll_strata_module_destruct(mca_coll_strata_module_t *module)
{
    mca_coll_strata_node_device_release(module);
    mca_coll_strata_pipeline_release(module);
    mca_coll_strata_topo_release(&module->topo);
    mca_coll_strata_stage_release(module);
    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_RELEASE)
}

OBJ_CLASS_INSTANCE(mca_coll_strata_module_t, mca_coll_base_module_t,
                   mca_coll_strata_module_construct, mca_coll_strata_module_destruct);

int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_coll_strata_component_set_priority();
    return OMPI_SUCCESS;
}

/* Save what runs below strata for one collective; with nothing there (or
 * only strata itself), strata does not install that collective either. */
#define MCA_COLL_STRATA_FALLBACK_SAVE(_coll) \
    if (NULL != comm->c_coll->coll_##_coll && NULL != comm->c_coll->coll_##_coll##_module && \
        base != comm->c_coll->coll_##_coll##_module) { \
        module->fallback._coll = comm->c_coll->coll_##_coll; \
        module->fallback._coll##_module = comm->c_coll->coll_##_coll##_module; \
        OBJ_RETAIN(module->fallback._coll##_module); \
    } else { \
        module->super.coll_##_coll = NULL; \
        MCA_COLL_STRATA_VERBOSE(10, "%s: no " #_coll " below strata; not installing it", \
                                comm->c_name); \
    }

static int mca_coll_strata_module_enable(mca_coll_base_module_t *base,
                                         struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;

    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_SAVE)
    /* set-up and pieces agree through the first two; set-up hands the
     * network figures round with the third */
    if (NULL == module->fallback.allreduce || NULL == module->fallback.allgather ||
        NULL == module->fallback.bcast) {
        MCA_COLL_STRATA_VERBOSE(10,
                                "%s: no allreduce/allgather/bcast below strata to build on; "
                                "not enabling",
                                comm->c_name);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/*
 * The communicator is going (mca_coll_base_comm_unselect, once for every slot
 * strata holds): let go of the modules below strata now rather than when
 * strata's own last reference goes, so that no module is kept alive by
 * another one past its communicator.  The destructor releases whatever is
 * left, for a module that was never enabled.
 */
static int mca_coll_strata_module_disable(mca_coll_base_module_t *base,
                                          struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;

    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_RELEASE)
    return OMPI_SUCCESS;
}

/* Warn once per process, and only where the failure happened (`why` set). */
static void mca_coll_strata_module_warn(struct ompi_communicator_t *comm, const char *why)
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
    int mine[2], all[2], all_ok, rc;

    /* (a no-op: the collective that set strata up agreed them first) */
    (void)mca_coll_strata_settings_ready(module, comm);
    module->setup = MCA_COLL_STRATA_SETUP_BUSY;
    rc = mca_coll_strata_topo_setup(module, comm, why, sizeof(why));
    /* Collective over the node: every rank that has a node communicator
     * (every rank of the node does, once the split is agreed) takes part,
     * also one whose later topology steps failed: it declines there, or its
     * node peers would wait for it in the segment's set-up. */
    if (NULL != module->topo.node_comm) {
        int node_rc = mca_coll_strata_pipeline_setup(module, OMPI_SUCCESS == rc, why, sizeof(why));

        rc = (OMPI_SUCCESS == rc) ? node_rc : rc;
    }

    /* One agreement for two facts: whether every rank is set up, and whether
     * any rank has a CUDA driver (only then do device allreduces ask the
     * ranks whether all of them can run on the GPUs: host-only jobs never
     * pay for that question). */
    mine[0] = (OMPI_SUCCESS == rc) ? 0 : 1;
    mine[1] = strata_mem_driver_present() ? 1 : 0;
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, mine, all, 2, MPI_INT, MPI_MAX);
    all_ok = (OMPI_SUCCESS == rc) && !all[0];
    module->any_driver = all_ok && all[1];
    /* after the agreement: it needs every rank's topology.  A broadcast
     * that fails on some ranks only leaves the communicator unusable
     * whatever this rank does next. */
    if (all_ok && OMPI_SUCCESS != (rc = mca_coll_strata_network_setup(module, comm))) {
        snprintf(why, sizeof(why), "cannot broadcast the network figures (%d)", rc);
        all_ok = 0;
    }
    if (!all_ok) {
        mca_coll_strata_module_warn(comm, why);
        mca_coll_strata_pipeline_release(module);
        mca_coll_strata_topo_release(&module->topo);
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

#define MCA_COLL_STRATA_INSTALL(_coll) module->super.coll_##_coll = mca_coll_strata_##_coll;

mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority)
{
    mca_coll_strata_module_t *module;

    *priority = mca_coll_strata_component.priority_used;
    if (*priority <= 0) {
        MCA_COLL_STRATA_VERBOSE(30, "%s: priority %d, switched off", comm->c_name,
                                *priority);
        return NULL;
    }
    /* One-rank communicators too: device buffers on MPI_COMM_SELF need
     * staging as much as anywhere. */
    if (OMPI_COMM_IS_INTER(comm)) {
        MCA_COLL_STRATA_VERBOSE(30, "%s: intercommunicator, not handled", comm->c_name);
        return NULL;
    }

    /* what communicators freed earlier could not free yet */
    mca_coll_strata_node_device_reap(0.0);
    module = OBJ_NEW(mca_coll_strata_module_t);
    if (NULL == module) {
        return NULL;
    }
    module->super.coll_module_enable = mca_coll_strata_module_enable;
    module->super.coll_module_disable = mca_coll_strata_module_disable;
    MCA_COLL_STRATA_FOREACH_BLOCKING(MCA_COLL_STRATA_INSTALL)
    if (mca_coll_strata_stage_req_layout_ok()) {
        MCA_COLL_STRATA_FOREACH_NONBLOCKING(MCA_COLL_STRATA_INSTALL)
    } else {
        static bool warned = false;

        if (!warned) {
            warned = true;
            opal_output(0, "coll:strata: warning: this Open MPI's nonblocking collective "
                        "request is not the one strata was built for; nonblocking collectives "
                        "are left to the component below strata (no device buffers there)");
        }
    }

    MCA_COLL_STRATA_VERBOSE(10, "%s: selected for %d ranks (priority %d)",
                            comm->c_name, ompi_comm_size(comm), *priority);
    return &module->super;
}
