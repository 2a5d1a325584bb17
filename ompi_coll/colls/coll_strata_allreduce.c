/*
 * coll/strata MPI_Allreduce entry point.
 *
 * Memory kind first: host (and managed) buffers run strata's host path
 * directly; device buffers are staged (staging/coll_strata_stage.c) around the same
 * host path, in pieces when they exceed the staging bound.  The host path
 * decides, per call, whether strata runs the hierarchical algorithm
 * (engine/coll_strata_pipeline.c) or hands the call to the module that would have
 * run without it.  Handed on, never attempted: non-commutative ops (the
 * pipeline reduces in node order, not rank order), derived datatypes, calls
 * made while strata builds its sub-communicators, and communicators whose
 * set-up failed.  Every input to the algorithm choice is the same on all
 * ranks (MPI requires matching count, datatype and op), so ranks never
 * disagree about who runs what, whichever of them stage.  At verbosity 20
 * each call says what ran and why.
 */
#include "../coll_strata.h"
#include "coll_strata_colls.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include <limits.h>
#include <string.h>

#include <common/kernels/strata_reduce.h>

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

/* Why strata's own algorithms cannot run this call at all, or NULL. */
static const char *mca_coll_strata_allreduce_unsupported(const mca_coll_strata_module_t *module,
                                                         struct ompi_datatype_t *dtype,
                                                         struct ompi_op_t *op)
{
    int commute = 0;

    if (MPI_SUCCESS != PMPI_Op_commutative(op, &commute) || !commute) {
        return "non-commutative op";
    }
    if (!ompi_datatype_is_predefined(dtype)) {
        return "derived datatype";
    }
    if (MCA_COLL_STRATA_ALG_FALLBACK == module->settings.decision.algorithm) {
        return "forced by coll_strata_allreduce_algorithm";
    }
    return NULL;
}

/* The algorithm for count x dtype on this communicator's topology (set up).
 * `device`: this rank's buffers are device memory (its device path only);
 * `native`: the pipeline runs on the GPUs. */
static void mca_coll_strata_allreduce_decide(const mca_coll_strata_module_t *module, int count,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             bool device, bool native,
                                             mca_coll_strata_decision_t *decision)
{
    mca_coll_strata_decision_input_t in;
    ptrdiff_t extent;

    ompi_datatype_type_extent(dtype, &extent);
    in.bytes = (size_t)count * (size_t)extent;
    in.nnodes = module->topo.nnodes;
    in.ppn_min = module->topo.ppn_min;
    in.ppn_max = module->topo.ppn_max;
    in.device = device;
    in.native = native;
    /* no vectorized kernel for these on the host (Open MPI's op/avx has the
     * arithmetic and bitwise ones); the GPUs' kernels have every op */
    in.slow_op = !native && (MPI_LAND == op || MPI_LOR == op || MPI_LXOR == op);
    /* the native path's chunks are the device area's */
    in.chunk_bytes = native ? mca_coll_strata_device_chunk_bytes(&module->settings)
                            : module->shm.slot_bytes;
    in.slots = module->shm.nslots;
    mca_coll_strata_decide(&module->decision, &in, decision);
}

static inline mca_coll_strata_ar_cached_t *
mca_coll_strata_allreduce_slot(mca_coll_strata_module_t *module, int count)
{
    return &module->ar_cache[(unsigned)count % MCA_COLL_STRATA_AR_CACHE_SIZE];
}

/* The host path's decision for this call: the cached one (see
 * mca_coll_strata_ar_cached_t), or NULL with *why set when the call goes
 * to the fallback, or a fresh one in *scratch (cached when it may be). */
const mca_coll_strata_decision_t *
mca_coll_strata_allreduce_host_decision(mca_coll_strata_module_t *module, int count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_strata_decision_t *scratch, const char **why)
{
    mca_coll_strata_ar_cached_t *slot = mca_coll_strata_allreduce_slot(module, count);

    if (OPAL_LIKELY(slot->count == count && slot->dtype == dtype && slot->op == op)) {
        return &slot->decision;
    }
    *why = mca_coll_strata_allreduce_unsupported(module, dtype, op);
    if (NULL != *why) {
        return NULL;
    }
    if (ompi_comm_size(comm) < 2) {
        /* no set-up needed to know this (device buffers were staged) */
        memset(scratch, 0, sizeof(*scratch));
        scratch->algorithm = MCA_COLL_STRATA_ALG_FALLBACK;
        scratch->inter = MCA_COLL_STRATA_INTER_NONE;
        scratch->nslices = 1;
        scratch->reason = "one rank";
    } else if (mca_coll_strata_module_ready(module, comm, why)) {
        mca_coll_strata_allreduce_decide(module, count, dtype, op, false, false, scratch);
    } else {
        return NULL; /* set-up failed or under way: not cached */
    }
    if (mca_coll_strata_op_is_predefined(op)) { /* the datatype is: checked above */
        slot->count = count;
        slot->dtype = dtype;
        slot->op = op;
        slot->decision = *scratch;
    }
    return scratch;
}

int mca_coll_strata_allreduce_host(mca_coll_strata_module_t *module, const void *sbuf, void *rbuf,
                                   int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, const char *kinds)
{
    mca_coll_strata_decision_t scratch;
    const mca_coll_strata_decision_t *decision;
    const char *why = NULL;

    /* the host path: staging, if any, happened around it */
    decision = mca_coll_strata_allreduce_host_decision(module, count, dtype, op, comm, &scratch,
                                                       &why);
    if (NULL == decision || MCA_COLL_STRATA_ALG_FALLBACK == decision->algorithm) {
        return mca_coll_strata_allreduce_fallback(module, sbuf, rbuf, count, dtype, op, comm, kinds,
                                                  (NULL == decision) ? why : decision->reason);
    }

    MCA_COLL_STRATA_VERBOSE(20,
                            "allreduce %s count=%d %s %s %s: %s, %d slice(s), inter-node %s, "
                            "%d node(s) (%s)",
                            comm->c_name, count, dtype->name, mca_coll_strata_op_name(op), kinds,
                            mca_coll_strata_alg_name(decision->algorithm), decision->nslices,
                            mca_coll_strata_inter_name(decision->inter), module->topo.nnodes,
                            decision->reason);
    return mca_coll_strata_pipeline_allreduce(module, sbuf, rbuf, (size_t)count, dtype, op,
                                              decision, &module->node_host);
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

/* For the verbose line: how this rank's device blocks cross nodes. */
const char *mca_coll_strata_native_network(mca_coll_strata_module_t *module,
                                           const mca_coll_strata_decision_t *decision)
{
    const mca_coll_strata_node_t *node = mca_coll_strata_node_device(module);

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
    if (MCA_COLL_STRATA_SETUP_NONE == module->device_setup) {
        module->device_ordinal = ordinal;
        module->device_setup =
            (OMPI_SUCCESS == mca_coll_strata_node_device_setup(module, comm, ordinal))
                ? MCA_COLL_STRATA_SETUP_READY
                : MCA_COLL_STRATA_SETUP_FAILED;
    }
    *go = MCA_COLL_STRATA_SETUP_READY == module->device_setup;
    return OMPI_SUCCESS;
}

/*
 * The native path: the pipeline on the GPUs, its inter-node phase strata's
 * ring on device data, for the allreduce and the other reductions
 * (coll_strata_reductions.c: `a` says where this rank's part goes).  Every
 * rank comes here for the same calls (the tests before the agreement use
 * only what is the same everywhere) and the ranks agree whether all of them
 * can run it: device buffers on every rank (the input, and the output where
 * the rank has a part), a kernel for the op and type, at most
 * STRATA_REDUCE_MAX_SRCS local ranks.  *ran says whether it ran.
 */
int mca_coll_strata_reduction_native(mca_coll_strata_module_t *module,
                                     struct ompi_communicator_t *comm,
                                     const mca_coll_strata_pipeline_args_t *a, const char *name,
                                     bool *ran)
{
    const mca_coll_strata_settings_t *c = &module->settings;
    mca_coll_strata_decision_t decision;
    int mine, ordinal = -1, rc;
    bool has_part = a->out_hi > a->out_lo, go;
    size_t size;

    *ran = false;
    ompi_datatype_type_size(a->dtype, &size);
    /* any_driver is set by a successful set-up, so the topology is known */
    if (!module->any_driver || MCA_COLL_STRATA_SETUP_READY != module->setup ||
        a->count > (size_t)INT_MAX ||
        NULL != mca_coll_strata_allreduce_unsupported(module, a->dtype, a->op) ||
        MCA_COLL_STRATA_SETUP_FAILED == module->device_setup ||
        !mca_coll_strata_decide_try_native(c->device_algorithm, c->device_native_min,
                                           a->count * size)) {
        return OMPI_SUCCESS;
    }
    mca_coll_strata_allreduce_decide(module, (int)a->count, a->dtype, a->op, true, true, &decision);
    if (MCA_COLL_STRATA_ALG_FALLBACK == decision.algorithm) {
        /* one rank per node: nothing for the node phase to do; staged */
        return OMPI_SUCCESS;
    }
    /* the replicated path's owners write the whole vector to `out` */
    if (MCA_COLL_STRATA_ALG_REPLICATED == decision.algorithm && a->partial) {
        decision.algorithm = MCA_COLL_STRATA_ALG_LEADER;
        decision.nslices = 1;
    }
    mine = (STRATA_MEM_DEVICE == mca_coll_strata_kind(a->sbuf, &ordinal)) &&
           (!has_part || STRATA_MEM_DEVICE == mca_coll_strata_kind(a->out, NULL)) &&
           module->topo.local_size <= STRATA_REDUCE_MAX_SRCS &&
           mca_coll_strata_node_device_reduces(a->op, a->dtype) &&
           mca_coll_strata_node_device_reaches(module, comm, a->sbuf, has_part ? a->out : NULL,
                                               ordinal);
    rc = mca_coll_strata_native_agree(module, comm, mine, ordinal, &go);
    if (OMPI_SUCCESS != rc || !go) {
        return rc;
    }
    MCA_COLL_STRATA_VERBOSE(
        20,
        "%s %s count=%zu %s %s device->device: native, %s, "
        "%d slice(s), inter-node %s%s, %d node(s) (%s)",
        name, comm->c_name, a->count, a->dtype->name, mca_coll_strata_op_name(a->op),
        mca_coll_strata_alg_name(decision.algorithm), decision.nslices,
        mca_coll_strata_reduction_inter_name(module, a, &decision),
        mca_coll_strata_native_network(module, &decision), module->topo.nnodes, decision.reason);
    *ran = true;
    return mca_coll_strata_node_device_run(module, a, &decision);
}

static int mca_coll_strata_allreduce_native(mca_coll_strata_module_t *module, const void *sbuf,
                                            void *rbuf, int count, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                            bool *ran)
{
    mca_coll_strata_pipeline_args_t a = {
        .sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf,
        .out = rbuf,
        .count = (size_t)count,
        .out_lo = 0,
        .out_hi = (size_t)count,
        .dtype = dtype,
        .op = op,
        .coll = "MPI_Allreduce",
    };

    return mca_coll_strata_reduction_native(module, comm, &a, "allreduce", ran);
}

void mca_coll_strata_setup_early(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    /* Set up at the first call strata's algorithms could run, whatever the
     * buffers (the tests are the same on every rank): then whether some
     * rank has a CUDA driver is known before the native path is asked
     * about, so a first device call can already run on the GPUs. */
    if (OPAL_UNLIKELY(MCA_COLL_STRATA_SETUP_NONE == module->setup) && ompi_comm_size(comm) > 1 &&
        NULL == mca_coll_strata_allreduce_unsupported(module, dtype, op)) {
        const char *why;

        (void)mca_coll_strata_module_ready(module, comm, &why);
    }
}

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;
    mca_coll_strata_allreduce_args_t a = {dtype, op, "host->host"};
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
    /* Every rank asks, whatever its buffers (only where some rank has a
     * CUDA driver: a host-only job pays this one branch). */
    if (OPAL_UNLIKELY(module->any_driver)) {
        bool ran;

        rc = mca_coll_strata_allreduce_native(module, sbuf, rbuf, count, dtype, op, comm, &ran);
        if (ran || OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    device = mca_coll_strata_any_device(sbuf, rbuf);
    if (OPAL_LIKELY(!device && !mca_coll_strata_elem_big(module, count, dtype))) {
        return mca_coll_strata_allreduce_host(module, sbuf, rbuf, count, dtype, op, comm,
                                              "host->host");
    }
    /* This rank's device path; the algorithm is chosen again, from
     * rank-independent inputs only, for every piece on the host copies. */
    if (MCA_COLL_STRATA_DEVICE_STAGED == mca_coll_strata_decide_device_path(device)) {
        a.kinds = mca_coll_strata_kinds_of(sbuf, rbuf);
        MCA_COLL_STRATA_VERBOSE(20, "allreduce %s count=%d %s %s %s: staged", comm->c_name, count,
                                dtype->name, mca_coll_strata_op_name(op), a.kinds);
    }
    return mca_coll_strata_elementwise(module, comm, MCA_COLL_STRATA_ELEM_REDUCE, -1,
                                       "MPI_Allreduce", sbuf, rbuf, count, dtype, true,
                                       mca_coll_strata_allreduce_piece, &a);
}
