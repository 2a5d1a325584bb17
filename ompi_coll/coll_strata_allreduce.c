/*
 * coll/strata MPI_Allreduce entry point.
 *
 * Memory kind first: host (and managed) buffers run strata's host path
 * directly; device buffers are staged (coll_strata_stage.c) around the same
 * host path, in pieces when they exceed the staging bound.  The host path
 * decides, per call, whether strata runs the hierarchical algorithm
 * (coll_strata_pipeline.c) or hands the call to the module that would have
 * run without it.  Handed on, never attempted: non-commutative ops (the
 * pipeline reduces in node order, not rank order), derived datatypes, calls
 * made while strata builds its sub-communicators, and communicators whose
 * set-up failed.  Every input to the algorithm choice is the same on all
 * ranks (MPI requires matching count, datatype and op), so ranks never
 * disagree about who runs what, whichever of them stage.  At verbosity 20
 * each call says what ran and why.
 */
#include "coll_strata.h"

#include "ompi/constants.h"

static int mca_coll_strata_allreduce_fallback(mca_coll_strata_module_t *module,
                                              const void *sbuf, void *rbuf, int count,
                                              struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              const char *kinds, const char *why)
{
    MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s %s: fallback (%s)", comm->c_name,
                            count, dtype->name, mca_coll_strata_op_name(op), kinds, why);
    return MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, sbuf, rbuf, count, dtype, op);
}

/* Why strata's own algorithms cannot run this call at all, or NULL. */
static const char *mca_coll_strata_allreduce_unsupported(struct ompi_datatype_t *dtype,
                                                         struct ompi_op_t *op)
{
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

int mca_coll_strata_allreduce_host(mca_coll_strata_module_t *module, const void *sbuf,
                                   void *rbuf, int count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                   const char *kinds)
{
    mca_coll_strata_decision_input_t in;
    mca_coll_strata_decision_t decision;
    const char *why;
    ptrdiff_t extent;

    why = mca_coll_strata_allreduce_unsupported(dtype, op);
    if (NULL == why && ompi_comm_size(comm) < 2) {
        why = "one rank";
    }
    if (NULL == why) {
        (void)mca_coll_strata_module_ready(module, comm, &why);
    }
    if (NULL != why) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm,
                                                  kinds, why);
    }

    ompi_datatype_type_extent(dtype, &extent);
    in.bytes = (size_t)count * (size_t)extent;
    in.nnodes = module->topo.nnodes;
    in.ppn_min = module->topo.ppn_min;
    in.ppn_max = module->topo.ppn_max;
    in.device = false; /* the host path: staging, if any, happened around it */
    mca_coll_strata_decide(&mca_coll_strata_component.decision, &in, &decision);
    if (MCA_COLL_STRATA_ALG_FALLBACK == decision.algorithm) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm,
                                                  kinds, decision.reason);
    }

    MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s %s: %s, %d slice(s), inter-node %s, "
                            "%d node(s) (%s)", comm->c_name, count, dtype->name,
                            mca_coll_strata_op_name(op), kinds,
                            mca_coll_strata_alg_name(decision.algorithm), decision.nslices,
                            mca_coll_strata_inter_name(decision.inter), in.nnodes,
                            decision.reason);
    return mca_coll_strata_pipeline_allreduce(module, sbuf, rbuf, (size_t)count, dtype, op,
                                              &decision, &module->node_host);
}

typedef struct mca_coll_strata_allreduce_args_t {
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    const char *kinds;
} mca_coll_strata_allreduce_args_t;

static int mca_coll_strata_allreduce_piece(mca_coll_strata_module_t *module,
                                           struct ompi_communicator_t *comm, const void *sbuf,
                                           void *rbuf, int count, void *arg)
{
    mca_coll_strata_allreduce_args_t *a = arg;

    return mca_coll_strata_allreduce_host(module, sbuf, rbuf, count, a->dtype, a->op, comm,
                                          a->kinds);
}

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *base)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;
    mca_coll_strata_allreduce_args_t a = {dtype, op, "host->host"};
    bool device;

    if (0 == count) {
        return OMPI_SUCCESS;
    }
    device = mca_coll_strata_any_device(sbuf, rbuf);
    if (OPAL_LIKELY(!device && !mca_coll_strata_elem_big(count, dtype))) {
        return mca_coll_strata_allreduce_host(module, sbuf, rbuf, count, dtype, op, comm,
                                              "host->host");
    }
    /* This rank's device path; the algorithm is chosen again, from
     * rank-independent inputs only, for every piece on the host copies. */
    if (MCA_COLL_STRATA_DEVICE_STAGED == mca_coll_strata_decide_device_path(device)) {
        a.kinds = mca_coll_strata_kinds_of(sbuf, rbuf);
        MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s %s: staged", comm->c_name,
                                count, dtype->name, mca_coll_strata_op_name(op), a.kinds);
    }
    return mca_coll_strata_elementwise(module, comm, MCA_COLL_STRATA_ELEM_REDUCE, -1,
                                       "MPI_Allreduce", sbuf, rbuf, count, dtype, true,
                                       mca_coll_strata_allreduce_piece, &a);
}
