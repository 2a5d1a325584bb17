/*
 * coll/strata MPI_Allreduce entry point.
 *
 * Decides, per call, whether strata runs the hierarchical algorithm
 * (coll_strata_pipeline.c) or hands the call to the module that would have
 * run without it.  Handed on, never attempted: non-commutative ops (the
 * pipeline reduces in node order, not rank order), derived datatypes, calls
 * made while strata builds its sub-communicators, and communicators whose
 * set-up failed.  Every input to these choices is the same on all ranks
 * (MPI requires matching count, datatype and op), so ranks never disagree
 * about who runs what.  At verbosity 20 each call says what ran and why.
 */
#include "coll_strata.h"

#include "ompi/constants.h"

static int mca_coll_strata_allreduce_fallback(mca_coll_strata_module_t *module,
                                              const void *sbuf, void *rbuf, int count,
                                              struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              const char *why)
{
    MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s: fallback (%s)", comm->c_name,
                            count, dtype->name, mca_coll_strata_op_name(op), why);
    return module->fallback.allreduce(sbuf, rbuf, count, dtype, op, comm,
                                      module->fallback.allreduce_module);
}

/* Why strata cannot run this call at all, or NULL. */
static const char *mca_coll_strata_allreduce_unsupported(mca_coll_strata_module_t *module,
                                                         struct ompi_datatype_t *dtype,
                                                         struct ompi_op_t *op)
{
    if (MCA_COLL_STRATA_SETUP_BUSY == module->setup) {
        return "strata is creating its sub-communicators";
    }
    if (MCA_COLL_STRATA_SETUP_FAILED == module->setup) {
        return "strata set-up failed on this communicator";
    }
    int commute = 0;

    if (MPI_SUCCESS != PMPI_Op_commutative(op, &commute) || !commute) {
        return "non-commutative op";
    }
    if (!ompi_datatype_is_predefined(dtype)) {
        return "derived datatype";
    }
    if (MCA_COLL_STRATA_ALG_FALLBACK == mca_coll_strata_component.decision.algorithm) {
        return "forced by coll_strata_allreduce_algorithm";
    }
    return NULL;
}

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *base)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;
    mca_coll_strata_decision_input_t in;
    mca_coll_strata_decision_t decision;
    const char *why;
    ptrdiff_t extent;

    if (0 == count) {
        return OMPI_SUCCESS;
    }
    why = mca_coll_strata_allreduce_unsupported(module, dtype, op);
    if (NULL != why) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm,
                                                  why);
    }
    if (MCA_COLL_STRATA_SETUP_NONE == module->setup &&
        OMPI_SUCCESS != mca_coll_strata_topo_setup(module, comm)) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm,
                                                  "strata set-up failed on this communicator");
    }

    ompi_datatype_type_extent(dtype, &extent);
    in.bytes = (size_t)count * (size_t)extent;
    in.nnodes = module->topo.nnodes;
    in.ppn_min = module->topo.ppn_min;
    in.ppn_max = module->topo.ppn_max;
    mca_coll_strata_decide(&mca_coll_strata_component.decision, &in, &decision);
    if (MCA_COLL_STRATA_ALG_FALLBACK == decision.algorithm) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm,
                                                  decision.reason);
    }

    MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s: %s, %d slice(s), inter-node %s, "
                            "%d node(s) (%s)", comm->c_name, count, dtype->name, mca_coll_strata_op_name(op),
                            mca_coll_strata_alg_name(decision.algorithm), decision.nslices,
                            mca_coll_strata_inter_name(decision.inter), in.nnodes,
                            decision.reason);
    return mca_coll_strata_pipeline_allreduce(module, sbuf, rbuf, (size_t)count, dtype, op,
                                              &decision, &mca_coll_strata_mem_host_ops);
}
