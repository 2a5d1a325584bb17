/*
 * coll/strata node area of device data in a build without CUDA headers:
 * there is none.  Nothing is ever set up, so the colls never run the
 * device pipeline and stage device buffers (which such a build cannot
 * see either: every buffer is host memory to it).
 */
#include "coll_strata_engine_internal.h"

#include "ompi/constants.h"


bool mca_coll_strata_node_device_reduces(struct ompi_op_t *op, struct ompi_datatype_t *dtype)
{
    return false;
}

int mca_coll_strata_node_device_setup(mca_coll_strata_engine_t *e,
                                      const mca_coll_strata_settings_t *s,
                                      struct ompi_communicator_t *comm, int ordinal)
{
    return OMPI_ERR_NOT_SUPPORTED;
}

mca_coll_strata_node_t *mca_coll_strata_node_device(mca_coll_strata_engine_t *e)
{
    return NULL;
}

bool mca_coll_strata_node_device_reaches(const mca_coll_strata_engine_t *e,
                                         struct ompi_communicator_t *comm, int ordinal,
                                         bool primary)
{
    return false;
}

void mca_coll_strata_node_device_release(mca_coll_strata_engine_t *e)
{
}

void mca_coll_strata_node_device_reap(double wait_s)
{
    (void)wait_s;
}

int mca_coll_strata_node_device_run(mca_coll_strata_engine_t *e,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *decision)
{
    return OMPI_ERR_NOT_SUPPORTED; /* never set up */
}
