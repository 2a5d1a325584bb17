/*
 * coll/strata node area of device data: the allreduce pipeline on the GPUs.
 *
 * Every local rank allocates one device scratch area, nslots x (an input
 * chunk, a result chunk), exports it with CUDA IPC and maps every peer's.
 * Slot s's input of local rank r lives in r's scratch; the slot's result
 * area is local rank 0's (the slice owners write their slices into it
 * through their mappings, everybody copies the chunk out of it).  Copies
 * and reductions are queued on this rank's stream, a non-blocking one that
 * each call orders after the work the application left on the legacy
 * default stream (an event recorded there at the call's start): queued
 * calls wait on other processes' flags, and a blocking stream would make
 * every legacy-stream synchronization of the process (another thread's
 * cudaMemcpy) wait for them too.  Either the GPU waits on the progress
 * flags in host shared memory and stores them itself (the queued driver,
 * coll_strata_pipeline_queued.c), or complete() waits for the stream and
 * only then does the host store the flag that lets a peer read what was
 * written (coll_strata_pipeline.c).
 * Reductions are Strata's kernels (common/kernels): one pass over all k
 * inputs, in the order the host path reduces in.
 *
 * Between nodes (ranks with a rail) the scratch has a third region, where
 * the ring receives blocks; the ring hands device blocks to the pml when
 * the pml carries device memory (pml/ucx with Strata's transports), else it
 * stages each message through pinned host blocks allocated here
 * (coll_strata_allreduce_device_network).  Copies use cuMemcpyAsync, which
 * takes device and pinned host addresses alike (unified addressing).
 *
 * Set up once per communicator, the first time a device allreduce takes
 * this path; the outcome is agreed over the communicator, and a failure on
 * any rank leaves the communicator on the staged path, with one warning.
 */
#include "../coll_strata.h"
#include "coll_strata_engine_internal.h"

#ifndef STRATA_MEM_NO_CUDA

#include <common/strata_cuda.h>
#include <common/strata_kernels.h>
#include <common/strata_uct_probe.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/base/base.h"

struct mca_coll_strata_node_device_t {
    mca_coll_strata_node_t super;
    int ordinal;
    CUstream stream; /* the pipeline's */
    /* the exchange between nodes' (never waits on a flag), and where copy,
     * reduce and complete() go now: one of the two */
    CUstream net, cur;
    int nslots, nranks, me;
    /* Queued calls (coll_strata_pipeline_queued.c, where super.queue is
     * set): the node's progress flags as the GPU addresses them (the
     * segment's flags registered with the driver, this process's mapping),
     * and one event per slot marking a chunk's reduction. */
    CUdeviceptr flags_dev;
    void *flags_host;
    CUevent events[MCA_COLL_STRATA_SLOTS_MAX];
    CUevent legacy;      /* the legacy default stream at the call's start */
    const char *coll;    /* the call in progress ("MPI_Allreduce"), for messages */
    CUdeviceptr scratch; /* this rank's */
    size_t scratch_bytes;
    CUdeviceptr *peer; /* every local rank's, as this process maps it */
    void *stage;       /* pinned host blocks of the ring, or NULL */
    /* no context could be made current for the call in progress: every
     * device operation of it fails at once (mca_coll_strata_node_device_allreduce) */
    bool no_context;
    /* the kernel of the call in progress (MPI requires one op and type) */
    struct ompi_op_t *op;
    struct ompi_datatype_t *dtype;
    CUfunction fn;
};

/* ---- which kernel reduces an op on a datatype ---- */

static const char *mca_coll_strata_node_device_type_name(struct ompi_datatype_t *dtype)
{
    /* clang-format off */
    static const struct {
        MPI_Datatype type;
        const char *name;
    } types[] = {
        {MPI_CHAR, "int8"},           {MPI_SIGNED_CHAR, "int8"},      {MPI_INT8_T, "int8"},
        {MPI_UNSIGNED_CHAR, "uint8"}, {MPI_UINT8_T, "uint8"},         {MPI_BYTE, "uint8"},
        {MPI_SHORT, "int16"},         {MPI_INT16_T, "int16"},         {MPI_UNSIGNED_SHORT, "uint16"},
        {MPI_UINT16_T, "uint16"},     {MPI_INT, "int32"},             {MPI_INT32_T, "int32"},
        {MPI_UNSIGNED, "uint32"},     {MPI_UINT32_T, "uint32"},       {MPI_LONG, "int64"},
        {MPI_LONG_LONG, "int64"},     {MPI_INT64_T, "int64"},         {MPI_AINT, "int64"},
        {MPI_OFFSET, "int64"},        {MPI_COUNT, "int64"},           {MPI_UNSIGNED_LONG, "uint64"},
        {MPI_UNSIGNED_LONG_LONG, "uint64"}, {MPI_UINT64_T, "uint64"}, {MPI_FLOAT, "float"},
        {MPI_DOUBLE, "double"},       {MPI_C_FLOAT_COMPLEX, "cfloat"}, {MPI_C_COMPLEX, "cfloat"},
        {MPI_C_DOUBLE_COMPLEX, "cdouble"}, {MPI_C_BOOL, "bool"},      {MPI_FLOAT_INT, "float_int"},
        {MPI_DOUBLE_INT, "double_int"}, {MPI_LONG_INT, "long_int"},   {MPI_2INT, "2int"},
        {MPI_SHORT_INT, "short_int"},
    };
    /* clang-format on */

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); ++i) {
        if (types[i].type == dtype) {
            return types[i].name;
        }
    }
    return NULL;
}

/* The kernels' name of a predefined op: MPI's name in lower case without
 * "MPI_" (MPI_MAXLOC: "maxloc"); NULL for the ops no kernel applies. */
static const char *mca_coll_strata_node_device_op_name(struct ompi_op_t *op, char *buf, size_t len)
{
    static const char *const kernel_ops[] = {"sum",  "prod", "min", "max",  "land",   "lor",
                                             "lxor", "band", "bor", "bxor", "maxloc", "minloc"};
    const char *name = mca_coll_strata_op_name(op);
    size_t i;

    if (0 != strncmp(name, "MPI_", 4) || strlen(name + 4) >= len) {
        return NULL;
    }
    for (i = 0; name[4 + i] != '\0'; ++i) {
        buf[i] = (char)(name[4 + i] - 'A' + 'a');
    }
    buf[i] = '\0';
    for (i = 0; i < sizeof(kernel_ops) / sizeof(kernel_ops[0]); ++i) {
        if (0 == strcmp(buf, kernel_ops[i])) {
            return buf;
        }
    }
    return NULL;
}

/* The op x type matrix of common/kernels/strata_reduce_kernels.cu. */
bool mca_coll_strata_node_device_reduces(struct ompi_op_t *op, struct ompi_datatype_t *dtype)
{
    char obuf[16];
    const char *o = mca_coll_strata_node_device_op_name(op, obuf, sizeof(obuf));
    const char *t = mca_coll_strata_node_device_type_name(dtype);
    bool loc, logical, arith;

    if (NULL == o || NULL == t || !strata_kernels_available()) {
        return false;
    }
    loc = (0 == strcmp(o, "maxloc") || 0 == strcmp(o, "minloc"));
    logical = ('l' == o[0]);
    arith = (0 == strcmp(o, "sum") || 0 == strcmp(o, "prod"));
    if (NULL != strstr(t, "_int") || 0 == strcmp(t, "2int")) {
        return loc; /* the pair types */
    }
    if (loc) {
        return false;
    }
    if (0 == strcmp(t, "bool")) {
        return logical;
    }
    if ('c' == t[0]) {
        return arith; /* complex */
    }
    if (0 == strcmp(t, "float") || 0 == strcmp(t, "double")) {
        return arith || 0 == strcmp(o, "min") || 0 == strcmp(o, "max");
    }
    /* MPI_BYTE takes only the bitwise ops */
    return (MPI_BYTE != dtype) || ('b' == o[0]);
}

/* ---- the primitives ---- */

#define MCA_COLL_STRATA_DEV(_node) ((mca_coll_strata_node_device_t *)(_node))

static int mca_coll_strata_node_device_status(mca_coll_strata_node_device_t *d, CUresult res,
                                              const char *what)
{
    char str[160];

    if (CUDA_SUCCESS == res) {
        return OMPI_SUCCESS;
    }
    opal_output(0, "coll:strata: %s on device buffers: %s failed: %s",
                (NULL != d->coll) ? d->coll : "a collective", what,
                strata_cuda_result_str(res, str, sizeof(str)));
    return MPI_ERR_OTHER;
}

static char *mca_coll_strata_node_device_input(const mca_coll_strata_node_t *node, int slot, int r)
{
    const mca_coll_strata_node_device_t *d = (const mca_coll_strata_node_device_t *)node;

    return (char *)(uintptr_t)(d->peer[r] + (CUdeviceptr)slot * d->super.slot_bytes);
}

static char *mca_coll_strata_node_device_result(const mca_coll_strata_node_t *node, int slot)
{
    const mca_coll_strata_node_device_t *d = (const mca_coll_strata_node_device_t *)node;

    return (char *)(uintptr_t)(d->peer[0] + (CUdeviceptr)(d->nslots + slot) * d->super.slot_bytes);
}

static int mca_coll_strata_node_device_copy(mca_coll_strata_node_t *node, void *dst,
                                            const void *src, size_t bytes)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_status(
        d, strata_cuda.cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, d->cur),
        "cuMemcpyAsync");
}

static int mca_coll_strata_node_device_reduce(mca_coll_strata_node_t *node, struct ompi_op_t *op,
                                              struct ompi_datatype_t *dtype,
                                              const void *const *srcs, int k, void *dst,
                                              size_t count)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);
    strata_reduce_args_t args;

    if (k > STRATA_REDUCE_MAX_SRCS) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    if (op != d->op || dtype != d->dtype) {
        char obuf[16];
        CUresult res = strata_kernels_function(
            d->ordinal, mca_coll_strata_node_device_op_name(op, obuf, sizeof(obuf)),
            mca_coll_strata_node_device_type_name(dtype), &d->fn);

        if (CUDA_SUCCESS != res) {
            return mca_coll_strata_node_device_status(d, res, "finding the reduction kernel");
        }
        d->op = op;
        d->dtype = dtype;
    }
    memset(&args, 0, sizeof(args));
    for (int i = 0; i < k; ++i) {
        args.src[i] = srcs[i];
    }
    args.dst = dst;
    args.count = count;
    args.nsrc = k;
    return mca_coll_strata_node_device_status(d, strata_kernels_reduce(d->fn, &args, d->cur),
                                              "cuLaunchKernel");
}

static int mca_coll_strata_node_device_complete(mca_coll_strata_node_t *node)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_status(d, strata_cuda.cuStreamSynchronize(d->cur),
                                              "cuStreamSynchronize");
}

/* A query's answer: NOT_READY is not done, anything else done (or failed). */
static int mca_coll_strata_node_device_polled(mca_coll_strata_node_device_t *d, CUresult res,
                                              const char *what, bool *done)
{
    *done = CUDA_ERROR_NOT_READY != res;
    return (CUDA_ERROR_NOT_READY == res) ? OMPI_SUCCESS
                                         : mca_coll_strata_node_device_status(d, res, what);
}

static int mca_coll_strata_node_device_completed(mca_coll_strata_node_t *node, bool *done)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_polled(d, strata_cuda.cuStreamQuery(d->cur), "cuStreamQuery",
                                              done);
}

/* ---- the queue: stream memory operations on the node's flags ---- */

static CUdeviceptr mca_coll_strata_node_device_flag(const mca_coll_strata_node_device_t *d, int r,
                                                    size_t field)
{
    return d->flags_dev + (CUdeviceptr)r * sizeof(mca_coll_strata_shm_flags_t) + field;
}

static int mca_coll_strata_node_device_await(mca_coll_strata_node_t *node, size_t field, int nranks,
                                             uint64_t value)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);
    CUresult res = CUDA_SUCCESS;

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    /* GEQ compares the signed difference: the counters only grow */
    for (int r = 0; r < nranks && CUDA_SUCCESS == res; ++r) {
        res = strata_cuda.cuStreamWaitValue64(d->stream,
                                              mca_coll_strata_node_device_flag(d, r, field), value,
                                              CU_STREAM_WAIT_VALUE_GEQ);
    }
    return mca_coll_strata_node_device_status(d, res, "cuStreamWaitValue64");
}

static int mca_coll_strata_node_device_signal(mca_coll_strata_node_t *node, size_t field,
                                              uint64_t value)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    /* the default flags: a memory barrier first, so a peer that sees the
     * value sees the data written before it */
    return mca_coll_strata_node_device_status(
        d,
        strata_cuda.cuStreamWriteValue64(d->stream,
                                         mca_coll_strata_node_device_flag(d, d->me, field), value,
                                         CU_STREAM_WRITE_VALUE_DEFAULT),
        "cuStreamWriteValue64");
}

static int mca_coll_strata_node_device_mark(mca_coll_strata_node_t *node, int slot)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_status(
        d, strata_cuda.cuEventRecord(d->events[slot], d->stream), "cuEventRecord");
}

static int mca_coll_strata_node_device_marked(mca_coll_strata_node_t *node, int slot, bool *done)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_polled(d, strata_cuda.cuEventQuery(d->events[slot]),
                                              "cuEventQuery", done);
}

static void mca_coll_strata_node_device_exchange(mca_coll_strata_node_t *node, bool on)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    d->cur = on ? d->net : d->stream;
}

static int mca_coll_strata_node_device_drain(mca_coll_strata_node_t *node)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_status(d, strata_cuda.cuStreamSynchronize(d->stream),
                                              "cuStreamSynchronize");
}

static const mca_coll_strata_node_queue_ops_t mca_coll_strata_node_device_queue = {
    .await = mca_coll_strata_node_device_await,
    .signal = mca_coll_strata_node_device_signal,
    .mark = mca_coll_strata_node_device_mark,
    .marked = mca_coll_strata_node_device_marked,
    .exchange = mca_coll_strata_node_device_exchange,
    .drain = mca_coll_strata_node_device_drain,
};

static const mca_coll_strata_node_ops_t mca_coll_strata_node_device_ops = {
    .name = "device",
    .input = mca_coll_strata_node_device_input,
    .result = mca_coll_strata_node_device_result,
    .copy = mca_coll_strata_node_device_copy,
    .reduce = mca_coll_strata_node_device_reduce,
    .complete = mca_coll_strata_node_device_complete,
    .completed = mca_coll_strata_node_device_completed,
};


/* ---- set-up ---- */

/*
 * Freeing.  A rank's scratch is mapped by its node peers (local rank 0's
 * holds the result area every rank copies out of), and CUDA leaves freeing
 * exported memory before every importer closed it undefined; a rank that
 * returns from its last allreduce may free its communicator while a peer
 * still copies out.  So each rank first closes its own mappings of the
 * others' scratch (and finishes its stream), then frees its scratch only
 * once every local rank has done the same:
 *   - at set-up, where every local rank takes the same failure branch, a
 *     barrier of the node between the two;
 *   - when the communicator goes (no collective there: peers may free it
 *     much later), each rank says so in its device_closed flag in the
 *     node's segment; the last frees at once, the others keep their
 *     scratch, and the segment, on a retired list that every later
 *     communicator's creation and release, and the component's close,
 *     revisit (mca_coll_strata_node_device_reap).
 */
typedef struct mca_coll_strata_node_device_retired_t {
    struct mca_coll_strata_node_device_retired_t *next;
    int ordinal;
    CUdeviceptr scratch;
    mca_coll_strata_shm_t shm; /* owned: its flags say who closed */
} mca_coll_strata_node_device_retired_t;

static mca_coll_strata_node_device_retired_t *mca_coll_strata_node_device_retired = NULL;
static opal_mutex_t mca_coll_strata_node_device_retired_lock = OPAL_MUTEX_STATIC_INIT;

/* This rank's mappings of its peers' scratch, its stream and staging
 * blocks: everything but the scratch it exported. */
static void mca_coll_strata_node_device_close(mca_coll_strata_node_device_t *d)
{
    CUcontext saved;

    if (0 != strata_cuda_ctx_push(d->ordinal, &saved)) {
        return;
    }
    if (NULL != d->stream) {
        (void)strata_cuda.cuStreamSynchronize(d->stream);
    }
    if (NULL != d->net) {
        (void)strata_cuda.cuStreamSynchronize(d->net);
        (void)strata_cuda.cuStreamDestroy(d->net);
        d->net = NULL;
    }
    if (NULL != d->legacy) {
        (void)strata_cuda.cuEventDestroy(d->legacy);
        d->legacy = NULL;
    }
    for (int i = 0; i < MCA_COLL_STRATA_SLOTS_MAX; ++i) {
        if (NULL != d->events[i]) {
            (void)strata_cuda.cuEventDestroy(d->events[i]);
            d->events[i] = NULL;
        }
    }
    if (NULL != d->flags_host) {
        (void)strata_cuda.cuMemHostUnregister(d->flags_host);
        d->flags_host = NULL;
        d->flags_dev = 0;
    }
    for (int r = 0; NULL != d->peer && r < d->nranks; ++r) {
        if (0 != d->peer[r] && d->peer[r] != d->scratch) {
            (void)strata_cuda.cuIpcCloseMemHandle(d->peer[r]);
        }
        d->peer[r] = 0;
    }
    if (NULL != d->stage) {
        (void)strata_cuda.cuMemFreeHost(d->stage);
        d->stage = NULL;
    }
    if (NULL != d->stream) {
        (void)strata_cuda.cuStreamDestroy(d->stream);
        d->stream = NULL;
    }
    strata_cuda_ctx_pop(saved);
}

static void mca_coll_strata_node_device_free_scratch(int ordinal, CUdeviceptr scratch)
{
    CUcontext saved;

    if (0 != scratch && 0 == strata_cuda_ctx_push(ordinal, &saved)) {
        (void)strata_cuda.cuMemFree(scratch);
        strata_cuda_ctx_pop(saved);
    }
}

static bool mca_coll_strata_node_device_all_closed(const mca_coll_strata_shm_t *shm)
{
    for (int r = 0; r < shm->nranks; ++r) {
        if (0 == __atomic_load_n(&shm->flags[r].device_closed, __ATOMIC_ACQUIRE)) {
            return false;
        }
    }
    return true;
}

void mca_coll_strata_node_device_reap(double wait_s)
{
    mca_coll_strata_node_device_retired_t **at, *e;
    double waited = 0.0;

    OPAL_THREAD_LOCK(&mca_coll_strata_node_device_retired_lock);
    for (at = &mca_coll_strata_node_device_retired; NULL != (e = *at);) {
        while (!mca_coll_strata_node_device_all_closed(&e->shm) && waited < wait_s) {
            struct timespec ms = {0, 1000000};

            nanosleep(&ms, NULL);
            waited += 1e-3;
        }
        if (!mca_coll_strata_node_device_all_closed(&e->shm)) {
            at = &e->next;
            continue;
        }
        mca_coll_strata_node_device_free_scratch(e->ordinal, e->scratch);
        mca_coll_strata_shm_detach(&e->shm);
        *at = e->next;
        free(e);
    }
    if (wait_s > 0.0 && NULL != mca_coll_strata_node_device_retired) {
        /* peers gone without closing (killed): the process's exit frees it */
        MCA_COLL_STRATA_VERBOSE(10, "device scratch kept: a local rank never closed its mapping "
                                    "of it");
    }
    OPAL_THREAD_UNLOCK(&mca_coll_strata_node_device_retired_lock);
}

/* The set-up gave up after every local rank took part in the exchange:
 * all of them come here, also one that allocated nothing (d NULL, or no
 * peer table: no context), so the node's barrier orders every close before
 * every free.  A failed barrier leaves the scratch allocated (a peer may
 * still map it). */
static void mca_coll_strata_node_device_free_together(mca_coll_strata_node_device_t *d,
                                                      struct ompi_communicator_t *node_comm)
{
    bool allocated = (NULL != d) && (NULL != d->peer);

    if (allocated) {
        mca_coll_strata_node_device_close(d);
    }
    if (OMPI_SUCCESS ==
            node_comm->c_coll->coll_barrier(node_comm, node_comm->c_coll->coll_barrier_module) &&
        allocated) {
        mca_coll_strata_node_device_free_scratch(d->ordinal, d->scratch);
    }
    if (NULL != d) {
        free(d->peer);
        free(d);
    }
}

/* Can the pml in use take device buffers?  pml/ucx, with a UCP context
 * that kept Strata's gpu_copy domain (so it tells device memory from host
 * memory and copies it); ob1 and its BTLs read every buffer with the CPU. */
static bool mca_coll_strata_node_device_pml_carries(void)
{
    return 0 == strcmp(mca_pml_base_selected_component.pmlm_version.mca_component_name, "ucx") &&
           strata_uct_gpu_copy_domains() > 0;
}

/* Whether this rank's ring stages device blocks through pinned host memory
 * between nodes (else the pml takes them as they are).  Rank-local: a
 * message's bytes are the same either way. */
static bool mca_coll_strata_node_device_stages(struct ompi_communicator_t *comm)
{
    bool warn, direct;

    direct = mca_coll_strata_decide_device_direct(mca_coll_strata_component.device_network,
                                                  mca_coll_strata_node_device_pml_carries(), &warn);
    if (warn) {
        static bool warned = false;

        if (!warned) {
            warned = true;
            opal_output(0,
                        "coll:strata: warning: %s: coll_strata_allreduce_device_network is "
                        "direct, but pml/%s cannot carry device memory (it needs pml/ucx with "
                        "Strata's gpu_copy transport in UCX_TLS); device data between nodes is "
                        "staged through pinned host memory",
                        comm->c_name,
                        mca_pml_base_selected_component.pmlm_version.mca_component_name);
        }
    }
    MCA_COLL_STRATA_VERBOSE(10, "%s: native device allreduce between nodes: %s", comm->c_name,
                            direct ? "device buffers through the pml"
                                   : "staged through pinned host memory");
    return !direct;
}

/* This rank's part: scratch, stream, handle, and with a rail the ring's
 * receive region (and its staging blocks); `why` says what failed. */
static int mca_coll_strata_node_device_alloc(mca_coll_strata_node_device_t *d,
                                             mca_coll_strata_module_t *module,
                                             struct ompi_communicator_t *comm,
                                             CUipcMemHandle *handle, char *why, size_t why_len)
{
    bool rail = NULL != module->topo.rail_comm;
    size_t region = (size_t)d->nslots * d->super.slot_bytes;
    char str[160];
    CUresult res;

    d->scratch_bytes = (rail ? 3 : 2) * region;
    res = strata_cuda.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    d->cur = d->stream;
    if (CUDA_SUCCESS == res) {
        res = strata_cuda.cuEventCreate(&d->legacy, CU_EVENT_DISABLE_TIMING);
    }
    if (CUDA_SUCCESS == res && rail) {
        res = strata_cuda.cuStreamCreate(&d->net, CU_STREAM_NON_BLOCKING);
    }
    if (CUDA_SUCCESS == res) {
        res = strata_cuda.cuMemAlloc(&d->scratch, d->scratch_bytes);
    }
    if (CUDA_SUCCESS == res) {
        res = strata_cuda.cuIpcGetMemHandle(handle, d->scratch);
    }
    if (CUDA_SUCCESS != res) {
        snprintf(why, why_len, "device scratch of %zu bytes: %s", d->scratch_bytes,
                 strata_cuda_result_str(res, str, sizeof(str)));
        return OMPI_ERROR;
    }
    if (!rail) {
        return OMPI_SUCCESS;
    }
    d->super.inter_recv = (char *)(uintptr_t)(d->scratch + 2 * region);
    d->super.inter_slot_bytes = d->super.slot_bytes;
    if (mca_coll_strata_node_device_stages(comm)) {
        res = strata_cuda.cuMemHostAlloc(&d->stage, 2 * region, 0);
        if (CUDA_SUCCESS != res) {
            d->stage = NULL;
            snprintf(why, why_len, "pinned host memory of %zu bytes for the inter-node phase: %s",
                     2 * region, strata_cuda_result_str(res, str, sizeof(str)));
            return OMPI_ERROR;
        }
        d->super.inter_stage = d->stage;
    }
    return OMPI_SUCCESS;
}

/*
 * Whether this rank can queue whole calls (coll_strata_pipeline_queued.c):
 * the driver has 64-bit stream memory operations (on by default since CUDA
 * 11.7; older drivers and some platforms need NVreg_EnableStreamMemOPs=1),
 * and the node's progress flags, in the shared-memory segment, are
 * registered so that this GPU can wait on them and store them.  Without,
 * the host drives every chunk (as before issue 36): slower, not wrong.
 */
static bool mca_coll_strata_node_device_queue_setup(mca_coll_strata_node_device_t *d,
                                                    mca_coll_strata_shm_t *shm, CUdevice dev)
{
    size_t bytes = (size_t)((char *)shm->slots - (char *)shm->flags);
    int memops = 0;
    CUresult res;

    if (NULL == strata_cuda.cuStreamWaitValue64 || NULL == strata_cuda.cuStreamWriteValue64 ||
        NULL == strata_cuda.cuMemHostRegister || NULL == strata_cuda.cuMemHostUnregister ||
        NULL == strata_cuda.cuMemHostGetDevicePointer ||
        CUDA_SUCCESS != strata_cuda.cuDeviceGetAttribute(
                            &memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev) ||
        !memops) {
        MCA_COLL_STRATA_VERBOSE(10,
                                "device %d: no 64-bit stream memory operations: the host "
                                "drives the native path chunk by chunk",
                                d->ordinal);
        return false;
    }
    for (int i = 0; i < d->nslots; ++i) {
        /* timing off: only queried for completion */
        if (CUDA_SUCCESS != strata_cuda.cuEventCreate(&d->events[i], CU_EVENT_DISABLE_TIMING)) {
            return false;
        }
    }
    res = strata_cuda.cuMemHostRegister(shm->flags, bytes,
                                        CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
    if (CUDA_SUCCESS == res) {
        d->flags_host = shm->flags;
        res = strata_cuda.cuMemHostGetDevicePointer(&d->flags_dev, shm->flags, 0);
    }
    if (CUDA_SUCCESS != res) {
        char str[160];

        d->flags_dev = 0;
        MCA_COLL_STRATA_VERBOSE(10,
                                "device %d: the node's progress flags cannot be registered "
                                "(%s): the host drives the native path chunk by chunk",
                                d->ordinal, strata_cuda_result_str(res, str, sizeof(str)));
        return false;
    }
    return true;
}

/* What each local rank tells its peers: its scratch's handle, whether it
 * has one (a rank whose allocation failed sends ok = 0), which GPU it is
 * (by UUID: ordinals differ between processes that see different
 * devices), whether that GPU runs under MPS, and whether it can queue. */
typedef struct mca_coll_strata_node_device_card_t {
    CUipcMemHandle handle;
    CUuuid uuid;
    int ok;
    int mps;
    int queued;
} mca_coll_strata_node_device_card_t;

/* Whether another local rank runs on this rank's GPU without MPS.  Ranks
 * sharing a GPU without MPS take turns on it, each in its own context, and
 * the native path hands every chunk from one process's GPU work to
 * another's: measured on an H200 (docs/results/2026-11-26-gpu-h200), about
 * 750 us per chunk whatever its size, 15-26x slower than staging through
 * host memory with 2 and 4 ranks on the GPU.  So auto stays staged there.
 * Under MPS (CU_DEVICE_ATTRIBUTE_MPS_ENABLED on both) the ranks' work runs
 * side by side, as with one rank per GPU: native. */
static bool mca_coll_strata_node_device_shared(int me, int k,
                                               const mca_coll_strata_node_device_card_t *cards)
{
    for (int r = 0; r < k; ++r) {
        if (r != me && 0 == memcmp(&cards[r].uuid, &cards[me].uuid, sizeof(cards[me].uuid)) &&
            !(cards[r].mps && cards[me].mps)) {
            return true;
        }
    }
    return false;
}

/* Map every peer's scratch from the node's cards. */
static int mca_coll_strata_node_device_map(mca_coll_strata_node_device_t *d, int me,
                                           const mca_coll_strata_node_device_card_t *cards,
                                           char *why, size_t why_len)
{
    char str[160];

    for (int r = 0; r < d->nranks; ++r) {
        CUresult res;

        if (r == me) {
            d->peer[r] = d->scratch;
            continue;
        }
        if (!cards[r].ok) {
            snprintf(why, why_len, "local rank %d could not set up its device scratch", r);
            return OMPI_ERROR;
        }
        res = strata_cuda.cuIpcOpenMemHandle(&d->peer[r], cards[r].handle,
                                             CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (CUDA_SUCCESS != res) {
            d->peer[r] = 0;
            snprintf(why, why_len, "cannot map local rank %d's device scratch: %s", r,
                     strata_cuda_result_str(res, str, sizeof(str)));
            return OMPI_ERROR;
        }
    }
    return OMPI_SUCCESS;
}

int mca_coll_strata_node_device_setup(mca_coll_strata_module_t *module,
                                      struct ompi_communicator_t *comm, int ordinal)
{
    struct ompi_communicator_t *node_comm = module->topo.node_comm;
    mca_coll_strata_node_device_t *d = calloc(1, sizeof(*d));
    int k = module->topo.local_size, me = module->topo.local_rank, ok = 0, all_ok = 0, rc;
    int agree[2], all[2] = {0, 0};
    /* k <= STRATA_REDUCE_MAX_SRCS: the native path was agreed for it */
    mca_coll_strata_node_device_card_t mine, cards[k];
    char why[256] = "";
    CUcontext saved;
    CUdevice dev;

    memset(&mine, 0, sizeof(mine));
    if (NULL == d || 0 != strata_cuda_ctx_push(ordinal, &saved)) {
        snprintf(why, sizeof(why), "out of memory, or no CUDA context for device %d", ordinal);
    } else {
        d->super.ops = &mca_coll_strata_node_device_ops;
        d->super.shm = &module->shm;
        d->ordinal = ordinal;
        /* chunks sized for device memory, not for host shared memory */
        d->super.slot_bytes = mca_coll_strata_device_chunk_bytes(&module->settings);
        d->nslots = module->shm.nslots;
        d->nranks = k;
        d->me = me;
        d->peer = calloc((size_t)k, sizeof(*d->peer));
        ok = (NULL != d->peer) &&
             (OMPI_SUCCESS ==
              mca_coll_strata_node_device_alloc(d, module, comm, &mine.handle, why, sizeof(why)));
        if (ok && (CUDA_SUCCESS != strata_cuda.cuDeviceGet(&dev, ordinal) ||
                   CUDA_SUCCESS != strata_cuda.cuDeviceGetUuid(&mine.uuid, dev))) {
            snprintf(why, sizeof(why), "no UUID for device %d", ordinal);
            ok = 0;
        }
        if (ok) {
            (void)strata_cuda.cuDeviceGetAttribute(&mine.mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev);
            mine.queued = module->settings.device_queue &&
                          mca_coll_strata_node_device_queue_setup(d, &module->shm, dev);
        }
        strata_cuda_ctx_pop(saved);
    }
    mine.ok = ok;
    /* Every local rank reaches the exchange, whatever failed. */
    rc = node_comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, cards, sizeof(mine),
                                           MPI_BYTE, node_comm,
                                           node_comm->c_coll->coll_allgather_module);
    if (ok && OMPI_SUCCESS == rc && 0 == strata_cuda_ctx_push(ordinal, &saved)) {
        ok = (OMPI_SUCCESS == mca_coll_strata_node_device_map(d, me, cards, why, sizeof(why)));
        strata_cuda_ctx_pop(saved);
    } else {
        ok = 0;
    }
    /* One agreement for all: [0] 0 failed somewhere, 1 ready but some
     * node's ranks share a GPU without MPS, 2 ready (one rank per GPU, or
     * MPS); [1] every rank can queue whole calls.  Queueing is agreed over
     * comm, though only a node's ranks meet in its flags: one rule, the
     * same everywhere. */
    if (ok) {
        ok = mca_coll_strata_node_device_shared(me, k, cards) ? 1 : 2;
    }
    agree[0] = ok;
    agree[1] = ok && mine.queued;
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, agree, all, 2, MPI_INT, MPI_MIN);
    all_ok = all[0];
    if (OMPI_SUCCESS == rc && 1 == all_ok &&
        MCA_COLL_STRATA_DEVICE_ALG_AUTO == module->settings.device_algorithm) {
        MCA_COLL_STRATA_VERBOSE(10,
                                "%s: local ranks share a GPU: device allreduce staged "
                                "(allreduce_device_algorithm=native runs it on the GPU anyway)",
                                comm->c_name);
        mca_coll_strata_node_device_free_together(d, node_comm);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (OMPI_SUCCESS != rc || !all_ok) {
        static bool warned = false;

        if ('\0' != why[0] && !warned) {
            warned = true;
            opal_output(0,
                        "coll:strata: warning: %s: %s; device allreduce on this communicator "
                        "is staged through host memory",
                        comm->c_name, why);
        }
        mca_coll_strata_node_device_free_together(d, node_comm);
        return OMPI_ERROR;
    }
    if (all[1]) { /* the GPUs coordinate the chunks, the host waits once per call */
        d->super.queue = &mca_coll_strata_node_device_queue;
    }
    module->node_device = d;
    MCA_COLL_STRATA_VERBOSE(10,
                            "%s: device scratch of %zu bytes on device %d, mapped by %d "
                            "local rank(s); %s",
                            comm->c_name, d->scratch_bytes, ordinal, k,
                            all[1] ? "each call queued on the GPU, one host wait"
                                   : "the host drives every chunk");
    return OMPI_SUCCESS;
}

mca_coll_strata_node_t *mca_coll_strata_node_device(mca_coll_strata_module_t *module)
{
    return (NULL != module->node_device) ? &module->node_device->super : NULL;
}

/*
 * Checked every call: an application may move to another GPU (cudaSetDevice)
 * or allocate in a context of its own after the first native call, and a
 * kernel on memory it cannot reach is a sticky error that breaks every
 * later CUDA call of the process.  Where the buffers are elsewhere, every
 * rank stages the call (the agreement that follows in the caller).
 */
bool mca_coll_strata_node_device_reaches(const mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm, const void *sbuf,
                                         const void *rbuf, int ordinal)
{
    int want = (MCA_COLL_STRATA_SETUP_NONE == module->device_setup) ? ordinal
                                                                    : module->device_ordinal;

    /* rbuf NULL: no output on this rank (an MPI_Reduce's non-root) */
    if (ordinal == want &&
        (NULL == rbuf || strata_cuda_primary_reaches((CUdeviceptr)(uintptr_t)rbuf, want)) &&
        (MPI_IN_PLACE == sbuf || strata_cuda_primary_reaches((CUdeviceptr)(uintptr_t)sbuf, want))) {
        return true;
    }
    MCA_COLL_STRATA_VERBOSE(20,
                            "allreduce %s: device buffers not in device %d's primary "
                            "context, where this rank's device scratch is: staged",
                            comm->c_name, want);
    return false;
}

void mca_coll_strata_node_device_release(mca_coll_strata_module_t *module)
{
    mca_coll_strata_node_device_t *d = module->node_device;
    mca_coll_strata_node_device_retired_t *e;

    if (NULL == d) {
        return;
    }
    module->node_device = NULL;
    mca_coll_strata_node_device_close(d);
    __atomic_store_n(&module->shm.flags[module->topo.local_rank].device_closed, 1,
                     __ATOMIC_RELEASE);
    e = mca_coll_strata_node_device_all_closed(&module->shm) ? NULL : calloc(1, sizeof(*e));
    if (NULL == e) {
        /* the last to close (or out of memory: then as before) */
        mca_coll_strata_node_device_free_scratch(d->ordinal, d->scratch);
    } else {
        e->ordinal = d->ordinal;
        e->scratch = d->scratch;
        e->shm = module->shm; /* the segment stays mapped with it */
        memset(&module->shm, 0, sizeof(module->shm));
        OPAL_THREAD_LOCK(&mca_coll_strata_node_device_retired_lock);
        e->next = mca_coll_strata_node_device_retired;
        mca_coll_strata_node_device_retired = e;
        OPAL_THREAD_UNLOCK(&mca_coll_strata_node_device_retired_lock);
    }
    free(d->peer);
    free(d);
    mca_coll_strata_node_device_reap(0.0);
}

/* The call's work follows what the application queued on the legacy
 * default stream before it (its writes of the send buffer, of an in-place
 * buffer): the stream waits for an event recorded there now, never for
 * work queued later.  Where that cannot be queued, the host waits for the
 * legacy stream instead, which orders the same. */
static void mca_coll_strata_node_device_after_legacy(mca_coll_strata_node_device_t *d)
{
    if (CUDA_SUCCESS != strata_cuda.cuEventRecord(d->legacy, CU_STREAM_LEGACY) ||
        CUDA_SUCCESS != strata_cuda.cuStreamWaitEvent(d->stream, d->legacy, 0)) {
        (void)strata_cuda.cuStreamSynchronize(CU_STREAM_LEGACY);
    }
}

int mca_coll_strata_node_device_run(mca_coll_strata_module_t *module,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *decision)
{
    mca_coll_strata_node_device_t *d = module->node_device;
    CUcontext saved = STRATA_CUDA_CTX_UNCHANGED;
    int rc;

    /* Without the device's context this rank still runs the pipeline, every
     * operation failing at once: its node peers wait for its flags, and its
     * chunk counter must stay with theirs (a rank that returned here would
     * hang them, and later calls would read stale slots).  Every rank whose
     * result depends on this one's part then returns an error. */
    if (mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_CONTEXT) ||
        0 != strata_cuda_ctx_push(module->device_ordinal, &saved)) {
        opal_output(0,
                    "coll:strata: %s on device buffers: no CUDA context for "
                    "device %d: this call fails",
                    a->coll, module->device_ordinal);
        d->no_context = true;
    } else {
        mca_coll_strata_node_device_after_legacy(d);
    }
    d->coll = a->coll;
    rc = mca_coll_strata_pipeline_run(module, a, decision, mca_coll_strata_node_device(module));
    d->no_context = false;
    strata_cuda_ctx_pop(saved);
    return rc;
}

#else /* no CUDA headers: no device path */

bool mca_coll_strata_node_device_reduces(struct ompi_op_t *op, struct ompi_datatype_t *dtype)
{
    return false;
}

int mca_coll_strata_node_device_setup(mca_coll_strata_module_t *module,
                                      struct ompi_communicator_t *comm, int ordinal)
{
    return OMPI_ERR_NOT_SUPPORTED;
}

mca_coll_strata_node_t *mca_coll_strata_node_device(mca_coll_strata_module_t *module)
{
    return NULL;
}

bool mca_coll_strata_node_device_reaches(const mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm, const void *sbuf,
                                         const void *rbuf, int ordinal)
{
    return false;
}

void mca_coll_strata_node_device_release(mca_coll_strata_module_t *module)
{
}

void mca_coll_strata_node_device_reap(double wait_s)
{
    (void)wait_s;
}

int mca_coll_strata_node_device_run(mca_coll_strata_module_t *module,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *decision)
{
    return OMPI_ERR_NOT_SUPPORTED; /* never set up */
}

#endif
