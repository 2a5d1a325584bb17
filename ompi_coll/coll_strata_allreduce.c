/*
 * coll/strata MPI_Allreduce entry point.
 *
 * The hierarchical algorithm (intra-node reduce-scatter, per-rail inter-node
 * allreduce, intra-node allgather; DESIGN.md "The allreduce") is not in this
 * version yet: every call goes to the saved fallback and says so at verbosity
 * 20, so a user can see that strata was selected and what ran instead.
 */
#include "coll_strata.h"

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *base)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;

    MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d: fallback (no strata algorithm built yet)",
                            comm->c_name, count);
    return module->fallback.allreduce(sbuf, rbuf, count, dtype, op, comm,
                                      module->fallback.allreduce_module);
}
