/*
 * coll/strata module: per-communicator query, enable and the saved fallback.
 *
 * Open MPI stacks coll modules: each enabled module overwrites the function
 * pointers it implements, in priority order.  Strata is enabled after the
 * modules below it, so in module_enable it saves (and retains) the function
 * that would have run without it; everything strata does not handle goes
 * there.  Sub-communicators are never created here: doing so inside
 * comm_query/module_enable re-enters coll selection and deadlocks
 * MPI_Comm_dup.
 */
#include "coll_strata.h"

#include <string.h>

#include "ompi/constants.h"

static void mca_coll_strata_module_construct(mca_coll_strata_module_t *module)
{
    module->fallback.allreduce = NULL;
    module->fallback.allreduce_module = NULL;
    module->setup = MCA_COLL_STRATA_SETUP_NONE;
    memset(&module->topo, 0, sizeof(module->topo));
    memset(&module->shm, 0, sizeof(module->shm));
    module->chunk_serial = 0;
    module->rings = NULL;
    module->scratch = NULL;
    module->scratch_slot_bytes = 0;
}

static void mca_coll_strata_module_destruct(mca_coll_strata_module_t *module)
{
    mca_coll_strata_topo_release(module);
    if (NULL != module->fallback.allreduce_module) {
        OBJ_RELEASE(module->fallback.allreduce_module);
    }
}

OBJ_CLASS_INSTANCE(mca_coll_strata_module_t, mca_coll_base_module_t,
                   mca_coll_strata_module_construct, mca_coll_strata_module_destruct);

int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

static int mca_coll_strata_module_enable(mca_coll_base_module_t *base,
                                         struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;

    if (NULL == comm->c_coll->coll_allreduce || NULL == comm->c_coll->coll_allreduce_module) {
        MCA_COLL_STRATA_VERBOSE(10, "%s: no allreduce below strata to fall back to; "
                                "not enabling", comm->c_name);
        return OMPI_ERROR;
    }
    module->fallback.allreduce = comm->c_coll->coll_allreduce;
    module->fallback.allreduce_module = comm->c_coll->coll_allreduce_module;
    OBJ_RETAIN(module->fallback.allreduce_module);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority)
{
    mca_coll_strata_module_t *module;

    *priority = mca_coll_strata_component.priority;
    if (*priority <= 0) {
        MCA_COLL_STRATA_VERBOSE(30, "%s: priority %d, switched off", comm->c_name,
                                *priority);
        return NULL;
    }
    if (OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2) {
        MCA_COLL_STRATA_VERBOSE(30, "%s: %s, not handled", comm->c_name,
                                OMPI_COMM_IS_INTER(comm) ? "intercommunicator" : "one rank");
        return NULL;
    }

    module = OBJ_NEW(mca_coll_strata_module_t);
    if (NULL == module) {
        return NULL;
    }
    module->super.coll_module_enable = mca_coll_strata_module_enable;
    module->super.coll_allreduce = mca_coll_strata_allreduce;

    MCA_COLL_STRATA_VERBOSE(10, "%s: selected for %d ranks (priority %d)",
                            comm->c_name, ompi_comm_size(comm), *priority);
    return &module->super;
}
