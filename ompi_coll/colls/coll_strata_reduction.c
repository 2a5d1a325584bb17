/*
 * coll/strata reductions: what MPI_Allreduce, MPI_Reduce,
 * MPI_Reduce_scatter_block and MPI_Reduce_scatter share.  Whether strata's
 * own algorithms can run a call at all (the op commutes, the datatype is
 * predefined, nothing forces the fallback), the decision for count x
 * datatype on the communicator's topology and the host path's cache of
 * it, the communicator's set-up at the first call that could run them, and
 * the two paths every reduction takes: host (host buffers, or the host
 * copies of staged ones) and native (device buffers on every rank, the
 * pipeline on the GPUs, agreed first).  Each reduction's own file says
 * where its part of the result goes (coll_strata_allreduce.c,
 * coll_strata_reductions.c); both call this one, never each other.
 */
#include "../base/coll_strata_ompi.h"
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include <limits.h>
#include <string.h>

#include <common/kernels/strata_reduce.h>

#include "ompi/constants.h"

/* Why strata's own algorithms cannot run this call at all, or NULL. */
static const char *mca_coll_strata_reduction_unsupported(const mca_coll_strata_module_t *module,
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
static void mca_coll_strata_reduction_input(const mca_coll_strata_module_t *module, int count,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                            bool device, bool native,
                                            mca_coll_strata_decision_input_t *in_out)
{
    mca_coll_strata_decision_input_t in;
    ptrdiff_t extent;

    ompi_datatype_type_extent(dtype, &extent);
    in.bytes = (size_t)count * (size_t)extent;
    in.nnodes = module->engine.topo.nnodes;
    in.ppn_min = module->engine.topo.ppn_min;
    in.ppn_max = module->engine.topo.ppn_max;
    in.device = device;
    in.native = native;
    /* no vectorized kernel for these on the host (Open MPI's op/avx has the
     * arithmetic and bitwise ones); the GPUs' kernels have every op */
    in.slow_op = !native && (MPI_LAND == op || MPI_LOR == op || MPI_LXOR == op);
    /* the native path's chunks are the device area's */
    in.chunk_bytes = native ? mca_coll_strata_device_chunk_bytes(&module->settings)
                            : module->engine.shm.slot_bytes;
    in.slots = module->engine.shm.nslots;
    in.wire_ratio = 1.0;
    *in_out = in;
}

static void mca_coll_strata_reduction_decide(const mca_coll_strata_module_t *module, int count,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             bool device, bool native,
                                             mca_coll_strata_decision_t *decision)
{
    mca_coll_strata_decision_input_t in;

    mca_coll_strata_reduction_input(module, count, dtype, op, device, native, &in);
    mca_coll_strata_decide(&module->decision, &in, decision);
}

static inline mca_coll_strata_ar_cached_t *
mca_coll_strata_reduction_cache_slot(mca_coll_strata_module_t *module, int count)
{
    return &module->ar_cache[(unsigned)count % MCA_COLL_STRATA_AR_CACHE_SIZE];
}

/* The host path's decision for this call: the cached one (see
 * mca_coll_strata_ar_cached_t), or NULL with *why set when the call goes
 * to the fallback, or a fresh one in *scratch (cached when it may be). */
const mca_coll_strata_decision_t *
mca_coll_strata_reduction_host_decision(mca_coll_strata_module_t *module, int count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_strata_decision_t *scratch, const char **why)
{
    mca_coll_strata_ar_cached_t *slot = mca_coll_strata_reduction_cache_slot(module, count);

    if (OPAL_LIKELY(slot->count == count && slot->dtype == dtype && slot->op == op)) {
        return &slot->decision;
    }
    *why = mca_coll_strata_reduction_unsupported(module, dtype, op);
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
        mca_coll_strata_reduction_decide(module, count, dtype, op, false, false, scratch);
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

/* For the verbose line: the exchange between nodes, naming the ring's
 * reduce-scatter half where the pipeline runs it (see the args' parts). */
const char *mca_coll_strata_reduction_inter_name(const mca_coll_strata_module_t *module,
                                                 const mca_coll_strata_pipeline_args_t *a,
                                                 const mca_coll_strata_decision_t *d)
{
    return mca_coll_strata_pipeline_scatters(&module->engine, a, d)
               ? "ring_rs"
               : mca_coll_strata_inter_name(d->inter);
}

/*
 * The info key as every rank of the communicator was given it: compared
 * once after each MPI_Comm_set_info (the module counts them alike on every
 * rank), at the first call that could compress; a nonblocking call cannot
 * compare (it must not wait for its peers), so until a blocking one has,
 * its calls stay exact.  Ranks given different values are told so (rank
 * 0, once per setting) and stay exact: one format on some ranks and
 * another on others would run different exchanges.
 */
static int mca_coll_strata_reduction_compress_key(mca_coll_strata_module_t *module,
                                                  struct ompi_communicator_t *comm, bool blocking)
{
    unsigned epoch = __atomic_load_n(&module->compress_epoch, __ATOMIC_ACQUIRE);
    int mine[2], all[2];

    if (epoch == module->compress_agreed_epoch) {
        return module->compress_agreed;
    }
    if (!blocking) {
        return MCA_COLL_STRATA_COMPRESS_DIFFERS; /* not compared yet: exact */
    }
    mine[0] = module->compress_info;
    mine[1] = -module->compress_info;
    if (OMPI_SUCCESS !=
            MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, mine, all, 2, MPI_INT, MPI_MAX) ||
        all[0] != -all[1]) {
        if (0 == ompi_comm_rank(comm)) {
            opal_output(0,
                        "coll:strata: warning: %s: the ranks were given different values of the "
                        "info key " MCA_COLL_STRATA_INFO_COMPRESS ": its calls stay exact",
                        comm->c_name);
        }
        module->compress_agreed = MCA_COLL_STRATA_COMPRESS_DIFFERS;
    } else {
        module->compress_agreed = all[0];
    }
    module->compress_agreed_epoch = epoch;
    return module->compress_agreed;
}

/*
 * The format this host-path call's exchange between nodes sends in: the
 * communicator's info key strata_compress where set (as every rank has
 * it), else coll_strata_compress (agreed with the other settings), for a
 * sum of MPI_FLOAT or MPI_DOUBLE of at least coll_strata_compress_min
 * bytes whose exchange is one of strata's own (ring, doubling,
 * halving-doubling; the rail's own allreduce cannot compress); everything
 * else exact.  Every input is the same on every rank, so every rank
 * chooses alike.
 */
static mca_coll_strata_codec_t
mca_coll_strata_reduction_codec(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                bool blocking, const mca_coll_strata_decision_t *d)
{
    int key;

    if (module->engine.topo.nnodes < 2 || MPI_SUM != op ||
        (MPI_FLOAT != dtype && MPI_DOUBLE != dtype) ||
        (MCA_COLL_STRATA_INTER_RING != d->inter && MCA_COLL_STRATA_INTER_RD != d->inter &&
         MCA_COLL_STRATA_INTER_RHD != d->inter)) {
        return MCA_COLL_STRATA_CODEC_NONE;
    }
    if (count * (size_t)(MPI_FLOAT == dtype ? 4 : 8) < module->settings.compress_min) {
        return MCA_COLL_STRATA_CODEC_NONE;
    }
    key = mca_coll_strata_reduction_compress_key(module, comm, blocking);
    if (MCA_COLL_STRATA_COMPRESS_UNSET == key) {
        return (mca_coll_strata_codec_t)module->settings.compress;
    }
    return (key >= 0) ? (mca_coll_strata_codec_t)key : MCA_COLL_STRATA_CODEC_NONE;
}

void mca_coll_strata_reduction_compress(mca_coll_strata_module_t *module,
                                        struct ompi_communicator_t *comm, size_t count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        bool blocking, mca_coll_strata_decision_t *d)
{
    mca_coll_strata_decision_input_t in;

    d->codec = mca_coll_strata_reduction_codec(module, comm, count, dtype, op, blocking, d);
    if (MCA_COLL_STRATA_CODEC_NONE == d->codec || count > (size_t)INT_MAX) {
        return;
    }
    /* the cost model sees the bytes that cross */
    mca_coll_strata_reduction_input(module, (int)count, dtype, op, false, false, &in);
    in.wire_ratio = mca_coll_strata_codec_ratio(d->codec, (MPI_FLOAT == dtype) ? 4 : 8);
    mca_coll_strata_decide_compressed(&module->decision, &in, d);
}

const char *mca_coll_strata_reduction_codec_note(const mca_coll_strata_decision_t *d, char *buf,
                                                 size_t len)
{
    if (MCA_COLL_STRATA_CODEC_NONE == d->codec) {
        return "";
    }
    snprintf(buf, len, ", compressed %s between nodes", mca_coll_strata_codec_name(d->codec));
    return buf;
}

int mca_coll_strata_reduction_host(mca_coll_strata_module_t *module,
                                   struct ompi_communicator_t *comm,
                                   const mca_coll_strata_pipeline_args_t *a, bool *ran)
{
    mca_coll_strata_decision_t scratch, d;
    const mca_coll_strata_decision_t *decision = NULL;
    const char *why = "more than INT_MAX elements";
    char note[48];

    *ran = false;
    if (a->count <= (size_t)INT_MAX) {
        decision = mca_coll_strata_reduction_host_decision(module, (int)a->count, a->dtype, a->op,
                                                           comm, &scratch, &why);
    }
    if (NULL == decision || MCA_COLL_STRATA_ALG_FALLBACK == decision->algorithm) {
        MCA_COLL_STRATA_VERBOSE(20, "%s %s count=%zu %s %s: fallback (%s)", a->coll, comm->c_name,
                                a->count, a->dtype->name, mca_coll_strata_op_name(a->op),
                                (NULL == decision) ? why : decision->reason);
        return OMPI_SUCCESS;
    }
    d = *decision;
    if (MCA_COLL_STRATA_ALG_REPLICATED == d.algorithm && a->partial) {
        d.algorithm = MCA_COLL_STRATA_ALG_LEADER;
        d.nslices = 1;
    }
    mca_coll_strata_reduction_compress(module, comm, a->count, a->dtype, a->op, true, &d);
    MCA_COLL_STRATA_VERBOSE(20,
                            "%s %s count=%zu %s %s: %s, %d slice(s), inter-node %s, %d node(s), "
                            "this rank's part %zu element(s)%s (%s)",
                            a->coll, comm->c_name, a->count, a->dtype->name,
                            mca_coll_strata_op_name(a->op), mca_coll_strata_alg_name(d.algorithm),
                            d.nslices, mca_coll_strata_reduction_inter_name(module, a, &d),
                            module->engine.topo.nnodes, a->out_hi - a->out_lo,
                            mca_coll_strata_reduction_codec_note(&d, note, sizeof(note)), d.reason);
    *ran = true;
    return mca_coll_strata_pipeline_run(&module->engine, a, &d, &module->engine.node_host);
}

/* Whether strata's pipeline may start a nonblocking call on comm now:
 * the communicator set up and its settings agreed by an earlier blocking
 * collective.  A nonblocking call never does either itself (both are
 * collectives that wait for every rank, and MPI_I* must not wait for a
 * peer), so a communicator's first calls go to the module below. */
bool mca_coll_strata_nonblocking_ready(const mca_coll_strata_module_t *module)
{
    return module->settings_agreed && MCA_COLL_STRATA_SETUP_READY == module->setup;
}

/* Start a nonblocking call on the host node area: its request made, then
 * the engine's call started (`st`: on those host copies, which the request
 * copies out when the call is done; `finish`: run first then, with the
 * call's outcome).  A failure here comes before any communication: the
 * staging is given back, nothing else to undo (`finish` does not run: the
 * caller undoes its own). */
int mca_coll_strata_pipeline_istart(mca_coll_strata_module_t *module,
                                    struct ompi_communicator_t *comm, mca_coll_strata_stage_t *st,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *d,
                                    int (*finish)(void *arg, int rc), void *finish_arg,
                                    ompi_request_t **request)
{
    mca_coll_strata_stage_req_t *req = mca_coll_strata_stage_req_new(module, comm);
    mca_coll_strata_pipeline_call_t *call;
    int rc = OMPI_ERR_OUT_OF_RESOURCE;

    if (NULL != req) {
        rc = mca_coll_strata_pipeline_start(&module->engine, a, d, &module->engine.node_host,
                                            &call);
        if (OMPI_SUCCESS == rc) {
            return mca_coll_strata_stage_req_activate_call(req, st, call, finish, finish_arg,
                                                           request);
        }
        mca_coll_strata_stage_req_discard(req);
    }
    return (NULL != st) ? mca_coll_strata_stage_out(st, rc) : rc;
}

int mca_coll_strata_reduction_istart(mca_coll_strata_module_t *module,
                                     struct ompi_communicator_t *comm, mca_coll_strata_stage_t *st,
                                     const mca_coll_strata_pipeline_args_t *a, const char *name,
                                     ompi_request_t **request, bool *ran)
{
    mca_coll_strata_decision_t scratch, d;
    const mca_coll_strata_decision_t *decision = NULL;
    const char *why = "more than INT_MAX elements";
    char note[48];

    *ran = false;
    if (!mca_coll_strata_nonblocking_ready(module)) {
        MCA_COLL_STRATA_VERBOSE(20,
                                "%s %s count=%zu: module below strata (not set up yet: a "
                                "blocking collective sets the communicator up)",
                                name, comm->c_name, a->count);
        return OMPI_SUCCESS;
    }
    if (0 < a->count && a->count <= (size_t)INT_MAX) {
        decision = mca_coll_strata_reduction_host_decision(module, (int)a->count, a->dtype, a->op,
                                                           comm, &scratch, &why);
    } else if (0 == a->count) {
        why = "no data";
    }
    if (NULL != decision && MCA_COLL_STRATA_INTER_COLL == decision->inter) {
        /* the rail's own allreduce is a blocking call: not from progress */
        decision = NULL;
        why = "coll_strata_allreduce_inter=coll blocks";
    }
    if (NULL == decision || MCA_COLL_STRATA_ALG_FALLBACK == decision->algorithm) {
        MCA_COLL_STRATA_VERBOSE(20, "%s %s count=%zu %s %s: module below strata (%s)", name,
                                comm->c_name, a->count, a->dtype->name,
                                mca_coll_strata_op_name(a->op),
                                (NULL == decision) ? why : decision->reason);
        return OMPI_SUCCESS;
    }
    d = *decision;
    if (MCA_COLL_STRATA_ALG_REPLICATED == d.algorithm && a->partial) {
        d.algorithm = MCA_COLL_STRATA_ALG_LEADER;
        d.nslices = 1;
    }
    mca_coll_strata_reduction_compress(module, comm, a->count, a->dtype, a->op, false, &d);
    MCA_COLL_STRATA_VERBOSE(20,
                            "%s %s count=%zu %s %s %s: %s, %d slice(s), inter-node %s, "
                            "%d node(s), this rank's part %zu element(s)%s (%s)",
                            name, comm->c_name, a->count, a->dtype->name,
                            mca_coll_strata_op_name(a->op),
                            (NULL != st) ? mca_coll_strata_bufs_kinds(&st->bufs) : "host->host",
                            mca_coll_strata_alg_name(d.algorithm), d.nslices,
                            mca_coll_strata_reduction_inter_name(module, a, &d),
                            module->engine.topo.nnodes, a->out_hi - a->out_lo,
                            mca_coll_strata_reduction_codec_note(&d, note, sizeof(note)), d.reason);
    *ran = true;
    return mca_coll_strata_pipeline_istart(module, comm, st, a, &d, NULL, NULL, request);
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
                                     const mca_coll_strata_bufs_t *bufs,
                                     const mca_coll_strata_pipeline_args_t *a, const char *name,
                                     bool *ran)
{
    const mca_coll_strata_settings_t *c = &module->settings;
    const mca_coll_strata_buf_kind_t *in, *out;
    mca_coll_strata_decision_t decision;
    int mine, ordinal = -1, rc;
    bool has_part = a->out_hi > a->out_lo, go;
    size_t size;

    *ran = false;
    ompi_datatype_type_size(a->dtype, &size);
    /* any_driver is set by a successful set-up, so the topology is known */
    if (!module->engine.any_driver || MCA_COLL_STRATA_SETUP_READY != module->setup ||
        a->count > (size_t)INT_MAX ||
        NULL != mca_coll_strata_reduction_unsupported(module, a->dtype, a->op) ||
        MCA_COLL_STRATA_SETUP_FAILED == module->engine.device_setup ||
        !mca_coll_strata_decide_try_native(c->device_algorithm, c->device_native_min,
                                           a->count * size)) {
        return OMPI_SUCCESS;
    }
    mca_coll_strata_reduction_decide(module, (int)a->count, a->dtype, a->op, true, true, &decision);
    if (MCA_COLL_STRATA_ALG_FALLBACK == decision.algorithm) {
        /* one rank per node: nothing for the node phase to do; staged */
        return OMPI_SUCCESS;
    }
    /* the replicated path's owners write the whole vector to `out` */
    if (MCA_COLL_STRATA_ALG_REPLICATED == decision.algorithm && a->partial) {
        decision.algorithm = MCA_COLL_STRATA_ALG_LEADER;
        decision.nslices = 1;
    }
    /* a->sbuf is the call's input (its receive buffer in place), a->out
     * its receive buffer */
    in = mca_coll_strata_bufs_input(bufs);
    out = &bufs->buf[MCA_COLL_STRATA_STAGE_RECV];
    ordinal = in->ordinal;
    mine = STRATA_MEM_DEVICE == in->kind && (!has_part || STRATA_MEM_DEVICE == out->kind) &&
           module->engine.topo.local_size <= STRATA_REDUCE_MAX_SRCS &&
           mca_coll_strata_node_device_reduces(a->op, a->dtype) &&
           mca_coll_strata_node_device_reaches(
               &module->engine, comm, ordinal,
               mca_coll_strata_native_primary(in, ordinal) &&
                   (!has_part || mca_coll_strata_native_primary(out, ordinal)));
    rc = mca_coll_strata_native_agree(module, comm, mine, ordinal, &go);
    if (OMPI_SUCCESS != rc || !go) {
        return rc;
    }
    MCA_COLL_STRATA_VERBOSE(20,
                            "%s %s count=%zu %s %s device->device: native, %s, "
                            "%d slice(s), inter-node %s%s, %d node(s) (%s)",
                            name, comm->c_name, a->count, a->dtype->name,
                            mca_coll_strata_op_name(a->op),
                            mca_coll_strata_alg_name(decision.algorithm), decision.nslices,
                            mca_coll_strata_reduction_inter_name(module, a, &decision),
                            mca_coll_strata_native_network(module, &decision),
                            module->engine.topo.nnodes, decision.reason);
    *ran = true;
    return mca_coll_strata_node_device_run(&module->engine, a, &decision);
}

void mca_coll_strata_setup_early(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    /* Set up at the first call strata's algorithms could run, whatever the
     * buffers (the tests are the same on every rank): then whether some
     * rank has a CUDA driver is known before the native path is asked
     * about, so a first device call can already run on the GPUs. */
    if (OPAL_UNLIKELY(MCA_COLL_STRATA_SETUP_NONE == module->setup) && ompi_comm_size(comm) > 1 &&
        NULL == mca_coll_strata_reduction_unsupported(module, dtype, op)) {
        const char *why;

        (void)mca_coll_strata_module_ready(module, comm, &why);
    }
}
