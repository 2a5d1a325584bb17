/*
 * coll/strata MPI_Allreduce entry point.
 *
 * Memory kind first: host (and managed) buffers run strata's host path
 * directly; device buffers run on the GPUs where every rank can (the
 * native path), or are staged (staging/coll_strata_stage.c) around the
 * same host path, in pieces when they exceed the staging bound.  The host
 * path decides, per call, whether strata runs the hierarchical algorithm
 * (engine/coll_strata_pipeline*.c) or hands the call to the module that
 * would have run without it; the decision, and all that MPI_Allreduce
 * shares with the other reductions, is coll_strata_reduction.c's.  Handed on, never attempted: non-commutative ops (the
 * pipeline reduces in node order, not rank order), derived datatypes, calls
 * made while strata builds its sub-communicators, and communicators whose
 * set-up failed.  Every input to the algorithm choice is the same on all
 * ranks (MPI requires matching count, datatype and op), so ranks never
 * disagree about who runs what, whichever of them stage.  At verbosity 20
 * each call says what ran and why.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include "ompi/constants.h"

static int mca_coll_strata_allreduce_fallback(mca_coll_strata_module_t *module, const void *sbuf,
                                              void *rbuf, int count, struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm, const char *kinds,
                                              const char *why)
{
    MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s %s: fallback (%s)", comm->c_name,
                            count, dtype->name, mca_coll_strata_op_name(op), kinds, why);
    return MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, sbuf, rbuf, count, dtype, op);
}

int mca_coll_strata_allreduce_host(mca_coll_strata_module_t *module, const void *sbuf, void *rbuf,
                                   int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, const char *kinds)
{
    mca_coll_strata_decision_t scratch, compressed;
    const mca_coll_strata_decision_t *decision;
    const char *why = NULL;
    char note[48];

    /* the host path: staging, if any, happened around it */
    decision = mca_coll_strata_reduction_host_decision(module, count, dtype, op, comm, &scratch,
                                                       &why);
    if (NULL == decision || MCA_COLL_STRATA_ALG_FALLBACK == decision->algorithm) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm, kinds,
                                                  (NULL == decision) ? why : decision->reason);
    }
    /* the cached decision says how, this call's communicator what format
     * crosses between nodes */
    compressed = *decision;
    mca_coll_strata_reduction_compress(module, comm, (size_t)count, dtype, op, true, &compressed);
    if (MCA_COLL_STRATA_CODEC_NONE != compressed.codec) {
        decision = &compressed;
    }

    MCA_COLL_STRATA_VERBOSE(20,
                            "allreduce %s count=%d %s %s %s: %s, %d slice(s), inter-node %s, "
                            "%d node(s)%s (%s)",
                            comm->c_name, count, dtype->name, mca_coll_strata_op_name(op), kinds,
                            mca_coll_strata_alg_name(decision->algorithm), decision->nslices,
                            mca_coll_strata_inter_name(decision->inter), module->engine.topo.nnodes,
                            mca_coll_strata_reduction_codec_note(decision, note, sizeof(note)),
                            decision->reason);
    return mca_coll_strata_pipeline_allreduce(&module->engine, sbuf, rbuf, (size_t)count, dtype, op,
                                              decision, &module->engine.node_host);
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

/* The pipeline's arguments of an allreduce: the whole vector, every rank
 * (in place: the input is rbuf). */
static void mca_coll_strata_allreduce_args(mca_coll_strata_pipeline_args_t *a, const void *sbuf,
                                           void *rbuf, int count, struct ompi_datatype_t *dtype,
                                           struct ompi_op_t *op, const char *coll)
{
    *a = (mca_coll_strata_pipeline_args_t){
        .sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf,
        .out = rbuf,
        .count = (size_t)count,
        .out_lo = 0,
        .out_hi = (size_t)count,
        .dtype = dtype,
        .op = op,
        .coll = coll,
    };
}

static int mca_coll_strata_allreduce_native(mca_coll_strata_module_t *module,
                                            const mca_coll_strata_bufs_t *bufs, const void *sbuf,
                                            void *rbuf, int count, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                            bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_allreduce_args(&a, sbuf, rbuf, count, dtype, op, "MPI_Allreduce");
    return mca_coll_strata_reduction_native(module, comm, bufs, &a, "allreduce", ran);
}

int mca_coll_strata_iallreduce_host(mca_coll_strata_module_t *module, mca_coll_strata_stage_t *st,
                                    const void *sbuf, void *rbuf, int count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    bool *ran)
{
    mca_coll_strata_pipeline_args_t a;

    mca_coll_strata_allreduce_args(&a, sbuf, rbuf, count, dtype, op, "MPI_Iallreduce");
    return mca_coll_strata_reduction_istart(module, comm, st, &a, "iallreduce", request, ran);
}

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;
    mca_coll_strata_allreduce_args_t a = {dtype, op, "host->host"};
    mca_coll_strata_bufs_t b;
    bool device;
    int rc;

    if (0 == count) {
        return OMPI_SUCCESS;
    }
    rc = mca_coll_strata_settings_ready(module, comm);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_setup_early(module, comm, dtype, op);
    /* the one look at the buffers: every path below reads it */
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    /* Every rank asks, whatever its buffers (only where some rank has a
     * CUDA driver: a host-only job pays this one branch). */
    if (OPAL_UNLIKELY(module->engine.any_driver)) {
        bool ran;

        rc = mca_coll_strata_allreduce_native(module, &b, sbuf, rbuf, count, dtype, op, comm, &ran);
        if (ran || OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    device = mca_coll_strata_bufs_device(&b);
    if (OPAL_LIKELY(!device && !mca_coll_strata_elem_big(module, count, dtype))) {
        return mca_coll_strata_allreduce_host(module, sbuf, rbuf, count, dtype, op, comm,
                                              "host->host");
    }
    /* This rank's device path; the algorithm is chosen again, from
     * rank-independent inputs only, for every piece on the host copies. */
    if (MCA_COLL_STRATA_DEVICE_STAGED == mca_coll_strata_decide_device_path(device)) {
        a.kinds = mca_coll_strata_bufs_kinds(&b);
        MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s %s: staged", comm->c_name, count,
                                dtype->name, mca_coll_strata_op_name(op), a.kinds);
    }
    return mca_coll_strata_elementwise(module, comm, MCA_COLL_STRATA_ELEM_REDUCE, -1,
                                       "MPI_Allreduce", &b, sbuf, rbuf, count, dtype, true,
                                       mca_coll_strata_allreduce_piece, &a);
}
