/*
 * coll/strata node area of device data: its queue, for the queued driver
 * (coll_strata_pipeline_queued.c).  The waits and stores are stream memory
 * operations (cuStreamWaitValue64, cuStreamWriteValue64) on the node's
 * progress flags, which live in the shared-memory segment and which every
 * rank registers with the driver; a slot's mark is an event recorded on
 * the pipeline's stream, queried (never waited for) by the host before it
 * starts that chunk's exchange between nodes.
 *
 * The two streams' dependencies on each other (the exchange reads the
 * reduction, the copy-out reads the exchange's result) are also events the
 * other stream waits for (follow): the host orders them already, but an
 * ordering made only through stream memory operations or the host is not
 * visible to CUDA (the driver's "Stream Memory Operations"), whose
 * scheduler then may put the work in the wrong order on the hardware
 * queues the streams share (docs/design.md, "Ordering of device work
 * across processes").
 */
#include "coll_strata_node_device.h"

#include <stdio.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"

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

static int mca_coll_strata_node_device_handoff(mca_coll_strata_node_t *node, int slot)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context || NULL == d->net) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_status(
        d, strata_cuda.cuEventRecord(d->exchanged[slot], d->net), "cuEventRecord");
}

static int mca_coll_strata_node_device_follow(mca_coll_strata_node_t *node, int slot,
                                              bool into_exchange)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (d->no_context || NULL == d->net) {
        return MPI_ERR_OTHER;
    }
    return mca_coll_strata_node_device_status(
        d,
        into_exchange ? strata_cuda.cuStreamWaitEvent(d->net, d->events[slot], 0)
                      : strata_cuda.cuStreamWaitEvent(d->stream, d->exchanged[slot], 0),
        "cuStreamWaitEvent");
}

static void mca_coll_strata_node_device_poll(mca_coll_strata_node_t *node)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);

    if (!d->no_context) {
        (void)strata_cuda.cuStreamQuery(d->stream);
    }
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

const mca_coll_strata_node_queue_ops_t mca_coll_strata_node_device_queue = {
    .await = mca_coll_strata_node_device_await,
    .signal = mca_coll_strata_node_device_signal,
    .mark = mca_coll_strata_node_device_mark,
    .marked = mca_coll_strata_node_device_marked,
    .exchange = mca_coll_strata_node_device_exchange,
    .handoff = mca_coll_strata_node_device_handoff,
    .follow = mca_coll_strata_node_device_follow,
    .poll = mca_coll_strata_node_device_poll,
    .drain = mca_coll_strata_node_device_drain,
};

/*
 * Whether this rank can queue whole calls (coll_strata_pipeline_queued.c):
 * the driver has 64-bit stream memory operations (on by default since CUDA
 * 11.7; older drivers and some platforms need NVreg_EnableStreamMemOPs=1),
 * and the node's progress flags, in the shared-memory segment, are
 * registered so that this GPU can wait on them and store them.  Without,
 * the host drives every chunk (as before issue 36): slower, not wrong.
 */
bool mca_coll_strata_node_device_queue_setup(mca_coll_strata_node_device_t *d,
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
        /* timing off: only queried for completion, or waited for by a stream */
        if (CUDA_SUCCESS != strata_cuda.cuEventCreate(&d->events[i], CU_EVENT_DISABLE_TIMING) ||
            (NULL != d->net && CUDA_SUCCESS != strata_cuda.cuEventCreate(
                                                   &d->exchanged[i], CU_EVENT_DISABLE_TIMING))) {
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
