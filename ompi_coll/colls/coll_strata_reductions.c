/*
 * coll/strata MPI_Reduce, MPI_Reduce_scatter_block and MPI_Reduce_scatter:
 * the allreduce's pipeline (engine/coll_strata_pipeline*.c), each rank copying out
 * only its part of the result: the root the whole vector, or every rank its
 * block (docs/design.md, "The other reductions").  The phases are the
 * allreduce's: the node's reduce-scatter into the shared segment (or the
 * GPUs' scratch), one exchange per rail between nodes, the copy out.
 *
 * Two paths, as for the allreduce: native (device buffers on every rank,
 * the pipeline on the GPUs; the ranks agree first, coll_strata_reduction.c)
 * and host (host buffers, or the host copies of staged device buffers).
 * The host path's decision is the allreduce's for the whole vector (count,
 * datatype, op and topology: the same on every rank, so every rank takes the
 * same path whether its buffers are host memory or staged), with one change:
 * the replicated path lets its owners write the whole vector into their
 * receive buffers, which these calls do not have; it runs as the leader path
 * instead (one slice, the same exchange).  Handed on to the module below
 * strata, as for the allreduce: non-commutative ops, derived datatypes, one
 * rank, set-up failures, coll_strata_allreduce_algorithm fallback, and
 * vectors of more than INT_MAX elements.  Verbosity 20 names what ran.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include <limits.h>

#include "ompi/constants.h"

/* ---- each collective's part: where this rank's result goes ------------- */

static void mca_coll_strata_reduce_args(mca_coll_strata_pipeline_args_t *a, const void *sbuf,
                                        void *rbuf, int count, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, int root,
                                        struct ompi_communicator_t *comm)
{
    bool at_root = ompi_comm_rank(comm) == root;

    *a = (mca_coll_strata_pipeline_args_t){
        .sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf,
        .out = at_root ? rbuf : NULL,
        .count = (size_t)count,
        .out_lo = 0,
        .out_hi = at_root ? (size_t)count : 0,
        .dtype = dtype,
        .op = op,
        .coll = "MPI_Reduce",
        .partial = true,
        .parts = MCA_COLL_STRATA_PARTS_ROOT,
        .root = root,
    };
}

static void mca_coll_strata_rsb_args(mca_coll_strata_pipeline_args_t *a, const void *sbuf,
                                     void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                     struct ompi_op_t *op, struct ompi_communicator_t *comm)
{
    size_t me = (size_t)ompi_comm_rank(comm), n = (size_t)ompi_comm_size(comm);

    *a = (mca_coll_strata_pipeline_args_t){
        .sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf,
        .out = rbuf,
        .count = (size_t)rcount * n,
        .out_lo = (size_t)rcount * me,
        .out_hi = (size_t)rcount * (me + 1),
        .dtype = dtype,
        .op = op,
        .coll = "MPI_Reduce_scatter_block",
        .partial = true,
        .parts = MCA_COLL_STRATA_PARTS_BLOCKS,
    };
}

static void mca_coll_strata_rs_args(mca_coll_strata_pipeline_args_t *a, const void *sbuf,
                                    void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm)
{
    int me = ompi_comm_rank(comm), n = ompi_comm_size(comm);

    *a = (mca_coll_strata_pipeline_args_t){
        .sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf,
        .out = rbuf,
        .dtype = dtype,
        .op = op,
        .coll = "MPI_Reduce_scatter",
        .partial = true,
        .parts = MCA_COLL_STRATA_PARTS_BLOCKS,
        .rcounts = rcounts,
    };
    /* This rank's block starts after the blocks of the ranks before it. */
    for (int r = 0; r < n; ++r) {
        if (r == me) {
            a->out_lo = a->count;
        }
        a->count += (size_t)rcounts[r];
    }
    a->out_hi = a->out_lo + (size_t)rcounts[me];
}

/* ---- the host path (host buffers, staged copies) ----------------------- */

/* A small MPI_Reduce goes to the module below strata (coll_strata_reduce_min;
 * the same on every rank: count and datatype are, the setting is agreed). */
static bool mca_coll_strata_reduce_small(const mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm,
                                         const mca_coll_strata_pipeline_args_t *a)
{
    size_t size;

    ompi_datatype_type_size(a->dtype, &size);
    if (a->count * size >= module->settings.reduce_min) {
        return false;
    }
    MCA_COLL_STRATA_VERBOSE(20, "%s %s count=%zu %s %s: fallback (below coll_strata_reduce_min)",
                            a->coll, comm->c_name, a->count, a->dtype->name,
                            mca_coll_strata_op_name(a->op));
    return true;
}

int mca_coll_strata_reduce_host(mca_coll_strata_module_t *module, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                int root, struct ompi_communicator_t *comm)
{
    mca_coll_strata_pipeline_args_t a;
    bool ran = false;
    int rc;

    mca_coll_strata_reduce_args(&a, sbuf, rbuf, count, dtype, op, root, comm);
    if (count > 0 && !mca_coll_strata_reduce_small(module, comm, &a)) {
        rc = mca_coll_strata_reduction_host(module, comm, &a, &ran);
        if (ran || OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return MCA_COLL_STRATA_FALLBACK(module, reduce, comm, sbuf, rbuf, count, dtype, op, root);
}

int mca_coll_strata_reduce_scatter_block_host(mca_coll_strata_module_t *module, const void *sbuf,
                                              void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm)
{
    mca_coll_strata_pipeline_args_t a;
    bool ran = false;
    int rc;

    mca_coll_strata_rsb_args(&a, sbuf, rbuf, rcount, dtype, op, comm);
    if (rcount > 0) {
        rc = mca_coll_strata_reduction_host(module, comm, &a, &ran);
        if (ran || OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return MCA_COLL_STRATA_FALLBACK(module, reduce_scatter_block, comm, sbuf, rbuf, rcount, dtype,
                                    op);
}

int mca_coll_strata_reduce_scatter_host(mca_coll_strata_module_t *module, const void *sbuf,
                                        void *rbuf, const int *rcounts,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm)
{
    mca_coll_strata_pipeline_args_t a;
    bool ran = false;
    int rc;

    mca_coll_strata_rs_args(&a, sbuf, rbuf, rcounts, dtype, op, comm);
    if (a.count > 0) {
        rc = mca_coll_strata_reduction_host(module, comm, &a, &ran);
        if (ran || OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return MCA_COLL_STRATA_FALLBACK(module, reduce_scatter, comm, sbuf, rbuf, rcounts, dtype, op);
}

/* ---- the nonblocking host path: the same parts, started in MPI_I* ---- */

int mca_coll_strata_ireduce_host(mca_coll_strata_module_t *module, mca_coll_strata_stage_t *st,
                                 const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm, ompi_request_t **request,
                                 bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_reduce_args(&a, sbuf, rbuf, count, dtype, op, root, comm);
    a.coll = "MPI_Ireduce";
    *ran = false;
    if (count > 0 && mca_coll_strata_reduce_small(module, comm, &a)) {
        return OMPI_SUCCESS;
    }
    return mca_coll_strata_reduction_istart(module, comm, st, &a, a.coll, request, ran);
}

int mca_coll_strata_ireduce_scatter_block_host(mca_coll_strata_module_t *module,
                                               mca_coll_strata_stage_t *st, const void *sbuf,
                                               void *rbuf, int rcount,
                                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                               struct ompi_communicator_t *comm,
                                               ompi_request_t **request, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_rsb_args(&a, sbuf, rbuf, rcount, dtype, op, comm);
    a.coll = "MPI_Ireduce_scatter_block";
    return mca_coll_strata_reduction_istart(module, comm, st, &a, a.coll, request, ran);
}

int mca_coll_strata_ireduce_scatter_host(mca_coll_strata_module_t *module,
                                         mca_coll_strata_stage_t *st, const void *sbuf, void *rbuf,
                                         const int *rcounts, struct ompi_datatype_t *dtype,
                                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                         ompi_request_t **request, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_rs_args(&a, sbuf, rbuf, rcounts, dtype, op, comm);
    a.coll = "MPI_Ireduce_scatter";
    return mca_coll_strata_reduction_istart(module, comm, st, &a, a.coll, request, ran);
}

/* ---- the native path: every rank asks, where some rank has a driver ---- */

static int mca_coll_strata_reduction_try_native(mca_coll_strata_module_t *module,
                                                struct ompi_communicator_t *comm,
                                                const mca_coll_strata_bufs_t *bufs,
                                                const mca_coll_strata_pipeline_args_t *a, bool *ran)
{
    *ran = false;
    if (0 == a->count) {
        return OMPI_SUCCESS;
    }
    mca_coll_strata_setup_early(module, comm, a->dtype, a->op);
    if (OPAL_LIKELY(!module->engine.any_driver)) {
        return OMPI_SUCCESS;
    }
    return mca_coll_strata_reduction_native(module, comm, bufs, a, a->coll, ran);
}

int mca_coll_strata_reduce_native(mca_coll_strata_module_t *module,
                                  const mca_coll_strata_bufs_t *bufs, const void *sbuf, void *rbuf,
                                  int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  int root, struct ompi_communicator_t *comm, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_reduce_args(&a, sbuf, rbuf, count, dtype, op, root, comm);
    return mca_coll_strata_reduction_try_native(module, comm, bufs, &a, ran);
}

int mca_coll_strata_reduce_scatter_block_native(mca_coll_strata_module_t *module,
                                                const mca_coll_strata_bufs_t *bufs,
                                                const void *sbuf, void *rbuf, int rcount,
                                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                                struct ompi_communicator_t *comm, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_rsb_args(&a, sbuf, rbuf, rcount, dtype, op, comm);
    return mca_coll_strata_reduction_try_native(module, comm, bufs, &a, ran);
}

int mca_coll_strata_reduce_scatter_native(mca_coll_strata_module_t *module,
                                          const mca_coll_strata_bufs_t *bufs, const void *sbuf,
                                          void *rbuf, const int *rcounts,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_rs_args(&a, sbuf, rbuf, rcounts, dtype, op, comm);
    return mca_coll_strata_reduction_try_native(module, comm, bufs, &a, ran);
}
