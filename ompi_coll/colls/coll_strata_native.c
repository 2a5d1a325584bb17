/*
 * coll/strata native paths: what every collective that runs the pipeline
 * on the GPUs shares (the reductions, coll_strata_reduction.c; the
 * bcast and allgather, coll_strata_copies.c).  The ranks agree first that
 * every one of them can (its buffers device memory where the GPUs of its
 * device scratch reach them), and the device node area is set up at the
 * first such call; the verbose lines say how device blocks cross nodes.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#ifndef STRATA_MEM_NO_CUDA
#include <common/strata_cuda.h>
#endif

#include "ompi/constants.h"

/* Whether a classified buffer is on device `ordinal`, in its primary
 * context (or owned by none, as VMM mappings are): where the device node
 * area's kernels and copies run. */
bool mca_coll_strata_native_primary(const mca_coll_strata_buf_kind_t *k, int ordinal)
{
#ifndef STRATA_MEM_NO_CUDA
    return k->ordinal == ordinal &&
           (NULL == k->context || (CUcontext)k->context == strata_cuda_primary_ctx(ordinal));
#else
    return false;
#endif
}

/* For the verbose line: how this rank's device blocks cross nodes. */
const char *mca_coll_strata_native_network(mca_coll_strata_module_t *module,
                                           const mca_coll_strata_decision_t *decision)
{
    const mca_coll_strata_node_t *node = mca_coll_strata_node_device(&module->engine);

    if (MCA_COLL_STRATA_INTER_NONE == decision->inter || NULL == node->inter_recv) {
        return "";
    }
    return (NULL != node->inter_stage) ? " (staged through host memory)"
                                       : " (device buffers through the pml)";
}

/* Every rank: whether every rank can run this call on the GPUs (`mine`:
 * this one can, its buffers on device `ordinal`), the device area set up
 * at the first such call (agreed inside: a failure stages from then on).
 * *go: run it natively. */
int mca_coll_strata_native_agree(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                 int mine, int ordinal, bool *go)
{
    int all = 0, rc;

    *go = false;
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, &mine, &all, 1, MPI_INT, MPI_MIN);
    if (OMPI_SUCCESS != rc || !all) {
        return rc;
    }
    if (MCA_COLL_STRATA_SETUP_NONE == module->engine.device_setup) {
        module->engine.device_ordinal = ordinal;
        module->engine.device_setup =
            (OMPI_SUCCESS ==
             mca_coll_strata_node_device_setup(&module->engine, &module->settings, comm, ordinal))
                ? MCA_COLL_STRATA_SETUP_READY
                : MCA_COLL_STRATA_SETUP_FAILED;
    }
    *go = MCA_COLL_STRATA_SETUP_READY == module->engine.device_setup;
    return OMPI_SUCCESS;
}
