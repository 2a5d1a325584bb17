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
 * written (coll_strata_pipeline_host.c).
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
#include "coll_strata_node_device.h"

#include <stdio.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"

/* ---- the primitives ---- */

int mca_coll_strata_node_device_status(mca_coll_strata_node_device_t *d, CUresult res,
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

int mca_coll_strata_node_device_launch(mca_coll_strata_node_device_t *d, struct ompi_op_t *op,
                                       struct ompi_datatype_t *dtype, const void *const *srcs,
                                       int k, void *const *dsts, int ndst, size_t count)
{
    strata_reduce_args_t args;

    if (k > STRATA_REDUCE_MAX_SRCS || ndst < 1 || ndst > STRATA_REDUCE_MAX_ALSO + 1) {
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
    args.dst = dsts[0];
    for (int i = 1; i < ndst; ++i) {
        args.also[i - 1] = dsts[i];
    }
    args.nalso = ndst - 1;
    args.count = count;
    args.nsrc = k;
    return mca_coll_strata_node_device_status(d, strata_kernels_reduce(d->fn, &args, d->cur),
                                              "cuLaunchKernel");
}

static int mca_coll_strata_node_device_reduce(mca_coll_strata_node_t *node, struct ompi_op_t *op,
                                              struct ompi_datatype_t *dtype,
                                              const void *const *srcs, int k, void *dst,
                                              size_t count)
{
    return mca_coll_strata_node_device_launch(MCA_COLL_STRATA_DEV(node), op, dtype, srcs, k, &dst,
                                              1, count);
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
int mca_coll_strata_node_device_polled(mca_coll_strata_node_device_t *d, CUresult res,
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

const mca_coll_strata_node_ops_t mca_coll_strata_node_device_ops = {
    .name = "device",
    .input = mca_coll_strata_node_device_input,
    .result = mca_coll_strata_node_device_result,
    .copy = mca_coll_strata_node_device_copy,
    .reduce = mca_coll_strata_node_device_reduce,
    .complete = mca_coll_strata_node_device_complete,
    .completed = mca_coll_strata_node_device_completed,
    .direct = mca_coll_strata_node_device_direct,
    .reduce_to = mca_coll_strata_node_device_reduce_to,
};

/* ---- a call ---- */

mca_coll_strata_node_t *mca_coll_strata_node_device(mca_coll_strata_engine_t *e)
{
    return (NULL != e->node_device) ? &e->node_device->super : NULL;
}

/*
 * Checked every call: an application may move to another GPU (cudaSetDevice)
 * or allocate in a context of its own after the first native call, and a
 * kernel on memory it cannot reach is a sticky error that breaks every
 * later CUDA call of the process.  Where the buffers are elsewhere, every
 * rank stages the call (the agreement that follows in the caller).
 */
bool mca_coll_strata_node_device_reaches(const mca_coll_strata_engine_t *e,
                                         struct ompi_communicator_t *comm, int ordinal,
                                         bool primary)
{
    int want = (MCA_COLL_STRATA_SETUP_NONE == e->device_setup) ? ordinal : e->device_ordinal;

    if (ordinal == want && primary) {
        return true;
    }
    MCA_COLL_STRATA_VERBOSE(20,
                            "allreduce %s: device buffers not in device %d's primary "
                            "context, where this rank's device scratch is: staged",
                            comm->c_name, want);
    return false;
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

int mca_coll_strata_node_device_run(mca_coll_strata_engine_t *e,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *decision)
{
    mca_coll_strata_node_device_t *d = e->node_device;
    CUcontext saved = STRATA_CUDA_CTX_UNCHANGED;
    int rc;

    /* Without the device's context this rank still runs the pipeline, every
     * operation failing at once: its node peers wait for its flags, and its
     * chunk counter must stay with theirs (a rank that returned here would
     * hang them, and later calls would read stale slots).  Every rank whose
     * result depends on this one's part then returns an error. */
    if (mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_CONTEXT) ||
        0 != strata_cuda_ctx_push(e->device_ordinal, &saved)) {
        opal_output(0,
                    "coll:strata: %s on device buffers: no CUDA context for "
                    "device %d: this call fails",
                    a->coll, e->device_ordinal);
        d->no_context = true;
    } else {
        mca_coll_strata_node_device_after_legacy(d);
    }
    d->coll = a->coll;
    rc = mca_coll_strata_pipeline_run(e, a, decision, mca_coll_strata_node_device(e));
    d->no_context = false;
    strata_cuda_ctx_pop(saved);
    return rc;
}
