/*
 * gpu_copy interface: settings, addressing, capabilities, completion queues
 * and their progress, flush/fence, the pending queue, and the life cycle of
 * streams and events.  The copies themselves are posted in gpu_copy_ep.c.
 */
#include "gpu_copy_iface.h"
#include "gpu_copy_ep.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/uid.h>
#include <ucs/type/class.h>

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Performance model.  UCP uses it to rank the lanes that can copy across
 * memory types and to size rendezvous pipeline fragments, so it should be
 * right for the common machine, and on the low side where machines differ:
 *  - issue overhead: cuMemcpyAsync + cuEventRecord cost the CPU about 2 us
 *    (the driver's command submission, as for a kernel launch);
 *  - latency, UCX_GPU_COPY_LATENCY: a small copy's DMA setup and PCIe round
 *    trip plus noticing its completion take about 5 us more; with the issue
 *    cost that is the 7-8 us UCX's own cuda_copy assumes for a small copy;
 *  - host<->device bandwidth, UCX_GPU_COPY_BW: PCIe gen4 x16 carries about
 *    25 GB/s from pinned host memory (gen5 about 50, NVLink-C2C far more);
 *    UCP's staging buffers are pageable to CUDA, which the driver copies
 *    through its own bounce buffers at less.  20 GB/s keeps gpu_copy from
 *    looking better than a direct device path on any of these;
 *  - device<->device bandwidth, UCX_GPU_COPY_D2D_BW: one GPU copies through
 *    HBM at a terabyte per second or more, peers over NVLink at 100-450 GB/s,
 *    over PCIe at the host rate; 200 GB/s is the NVLink case.
 */
#define UCT_GPU_COPY_IFACE_OVERHEAD 2e-6

static ucs_config_field_t uct_gpu_copy_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_gpu_copy_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"MAX_POLL", "16",
     "Most copy completions handled by one call to progress.",
     ucs_offsetof(uct_gpu_copy_iface_config_t, max_poll), UCS_CONFIG_TYPE_UINT},

    {"MAX_EVENTS", "inf",
     "Most zero-copy operations in flight on one interface; more are refused as\n"
     "'no resource' and wait in the pending queue ('inf': no limit).",
     ucs_offsetof(uct_gpu_copy_iface_config_t, max_events), UCS_CONFIG_TYPE_UINT},

    {"BW", "20GBs",
     "Host<->GPU copy bandwidth UCP assumes (GB = 2^30 bytes). The default suits\n"
     "PCIe gen4 x16; raise it for PCIe gen5 or NVLink-C2C hosts.",
     ucs_offsetof(uct_gpu_copy_iface_config_t, bandwidth), UCS_CONFIG_TYPE_BW},

    {"D2D_BW", "200GBs",
     "GPU<->GPU copy bandwidth UCP assumes (within a GPU or to a peer over NVLink).",
     ucs_offsetof(uct_gpu_copy_iface_config_t, d2d_bandwidth), UCS_CONFIG_TYPE_BW},

    {"LATENCY", "5us",
     "Latency of a copy UCP assumes, beyond the CPU time to issue it.",
     ucs_offsetof(uct_gpu_copy_iface_config_t, latency), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

/* "auto" is a valid UCS bandwidth; for us it means the compiled-in default. */
#define UCT_GPU_COPY_IFACE_BW_DEFAULT     (20.0 * UCS_GBYTE)
#define UCT_GPU_COPY_IFACE_D2D_BW_DEFAULT (200.0 * UCS_GBYTE)

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpu_copy_iface_t, uct_iface_t);

/* ---- addressing ---- */

/*
 * A random number per process, made again in a forked child: an address
 * from the parent must not look reachable there, the copy would land in the
 * child's copy of the memory.
 */
static uint64_t uct_gpu_copy_process_id(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static pid_t owner;
    static uint64_t id;
    pid_t pid = getpid();
    uint64_t result;

    pthread_mutex_lock(&lock);
    if (owner != pid) {
        id    = ucs_generate_uuid((uintptr_t)pid);
        owner = pid;
    }
    result = id;
    pthread_mutex_unlock(&lock);
    return result;
}

static ucs_status_t uct_gpu_copy_iface_get_address(uct_iface_h tl_iface,
                                                   uct_iface_addr_t *iface_addr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    ((uct_gpu_copy_iface_addr_t *)iface_addr)->process_id = iface->process_id;
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_iface_get_device_address(uct_iface_h tl_iface,
                                                          uct_device_addr_t *dev_addr)
{
    ((uct_gpu_copy_device_addr_t *)dev_addr)->system_id = ucs_get_system_id();
    return UCS_OK;
}

static int uct_gpu_copy_iface_is_reachable(const uct_iface_h tl_iface,
                                           const uct_device_addr_t *dev_addr,
                                           const uct_iface_addr_t *iface_addr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    if ((dev_addr != NULL) &&
        (((const uct_gpu_copy_device_addr_t *)dev_addr)->system_id != ucs_get_system_id())) {
        return 0;
    }
    return (iface_addr != NULL) &&
           (((const uct_gpu_copy_iface_addr_t *)iface_addr)->process_id == iface->process_id);
}

/* ---- capabilities and performance ---- */

static ucs_status_t uct_gpu_copy_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *iface_attr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->iface_addr_len  = sizeof(uct_gpu_copy_iface_addr_t);
    iface_attr->device_addr_len = sizeof(uct_gpu_copy_device_addr_t);
    iface_attr->ep_addr_len     = 0;
    /* What UCP 1.13 asks of a memory-type copy transport: short put/get for
     * pack/unpack, zcopy put/get and pending for the rendezvous pipeline,
     * and a loopback connection.  No event flags: waking a sleeping worker
     * needs a host callback on the streams, which the driver table does not
     * load, so progress is by polling only. */
    iface_attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_PUT_SHORT |
                            UCT_IFACE_FLAG_GET_SHORT | UCT_IFACE_FLAG_PUT_ZCOPY |
                            UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING;
    iface_attr->cap.event_flags = 0;

    /* A short copy is one synchronous driver call of any length. */
    iface_attr->cap.put.max_short       = UINT_MAX;
    iface_attr->cap.put.max_bcopy       = 0;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = SIZE_MAX;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = 1;

    iface_attr->cap.get.max_short       = UINT_MAX;
    iface_attr->cap.get.max_bcopy       = 0;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = SIZE_MAX;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = 1;

    iface_attr->cap.am.opt_zcopy_align = 1;
    iface_attr->cap.am.align_mtu       = 1;
    iface_attr->cap.am.max_iov         = 1;

    iface_attr->latency             = ucs_linear_func_make(iface->config.latency, 0);
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = iface->config.bandwidth;
    iface_attr->overhead            = UCT_GPU_COPY_IFACE_OVERHEAD;
    iface_attr->priority            = 0;
    return UCS_OK;
}

static int uct_gpu_copy_is_gpu_mem_type(ucs_memory_type_t mem_type)
{
    return (mem_type == UCS_MEMORY_TYPE_CUDA) || (mem_type == UCS_MEMORY_TYPE_CUDA_MANAGED);
}

static double uct_gpu_copy_iface_bandwidth(uct_gpu_copy_iface_t *iface,
                                           const uct_perf_attr_t *perf_attr)
{
    uint64_t both = UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE | UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE;

    if (ucs_test_all_flags(perf_attr->field_mask, both) &&
        uct_gpu_copy_is_gpu_mem_type(perf_attr->local_memory_type) &&
        uct_gpu_copy_is_gpu_mem_type(perf_attr->remote_memory_type)) {
        return iface->config.d2d_bandwidth;
    }
    return iface->config.bandwidth;
}

static ucs_status_t uct_gpu_copy_iface_estimate_perf(uct_iface_h tl_iface,
                                                     uct_perf_attr_t *perf_attr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
        perf_attr->bandwidth.dedicated = 0;
        perf_attr->bandwidth.shared    = uct_gpu_copy_iface_bandwidth(iface, perf_attr);
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
        perf_attr->send_pre_overhead = UCT_GPU_COPY_IFACE_OVERHEAD;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        perf_attr->send_post_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
        perf_attr->recv_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) {
        perf_attr->latency = ucs_linear_func_make(iface->config.latency, 0);
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = SIZE_MAX;
    }
    return UCS_OK;
}

/* ---- CUDA context and streams ---- */

ucs_status_t uct_gpu_copy_iface_ctx_enter(uct_gpu_copy_iface_t *iface, CUdeviceptr hint,
                                          CUcontext *restore_p)
{
    CUcontext current = NULL;
    ucs_status_t status;

    *restore_p = NULL;
    status     = UCT_STRATA_CUDA(strata_cuda.cuCtxGetCurrent(&current));
    if (status != UCS_OK) {
        return status;
    }
    if ((current != NULL) && (current == iface->ctx)) {
        return UCS_OK;
    }
    if (iface->ctx == NULL) {
        if (current == NULL) {
            if (strata_cuda_ctx_ensure(hint) != 0) {
                ucs_error("gpu_copy/gpu%d: cannot make a CUDA context current for 0x%llx",
                          iface->ordinal, (unsigned long long)hint);
                return UCS_ERR_NO_DEVICE;
            }
            status = UCT_STRATA_CUDA(strata_cuda.cuCtxGetCurrent(&current));
            if (status != UCS_OK) {
                return status;
            }
        }
        iface->ctx = current;
        return UCS_OK;
    }
    /* Streams and events work only in the context that created them; a
     * thread of an application driving several GPUs may have another one
     * current, which it gets back when we are done. */
    status = UCT_STRATA_CUDA(strata_cuda.cuCtxSetCurrent(iface->ctx));
    if (status != UCS_OK) {
        return status;
    }
    *restore_p = current;
    return UCS_OK;
}

void uct_gpu_copy_iface_ctx_leave(CUcontext restore)
{
    if (restore != NULL) {
        (void)UCT_STRATA_CUDA(strata_cuda.cuCtxSetCurrent(restore));
    }
}

ucs_status_t uct_gpu_copy_iface_stream_get(CUstream *stream_p)
{
    if (*stream_p != NULL) {
        return UCS_OK;
    }
    /* Non-blocking: no implicit synchronization with the legacy default
     * stream, so the application's own work does not serialize with ours. */
    return UCT_STRATA_CUDA(strata_cuda.cuStreamCreate(stream_p, CU_STREAM_NON_BLOCKING));
}

/* ---- completion queues ---- */

static uct_gpu_copy_op_t *uct_gpu_copy_queue_head(uct_gpu_copy_queue_t *queue)
{
    if (ucs_queue_is_empty(&queue->ops)) {
        return NULL;
    }
    return ucs_queue_head_elem_non_empty(&queue->ops, uct_gpu_copy_op_t, queue);
}

/* Sequence number of the oldest copy not yet completed, UINT64_MAX if none. */
static uint64_t uct_gpu_copy_iface_oldest_seq(uct_gpu_copy_iface_t *iface)
{
    uint64_t oldest = UINT64_MAX;
    uct_gpu_copy_op_t *head;
    int dir;

    for (dir = 0; dir < UCT_GPU_COPY_DIR_LAST; ++dir) {
        head = uct_gpu_copy_queue_head(&iface->queues[dir]);
        if (head != NULL) {
            oldest = ucs_min(oldest, head->seq);
        }
    }
    return oldest;
}

static void uct_gpu_copy_iface_op_complete(uct_gpu_copy_iface_t *iface, uct_gpu_copy_op_t *op,
                                           ucs_status_t status)
{
    uct_completion_t *comp = op->comp;

    --iface->outstanding;
    /* Back to the pool first: the callback may post the next copy. */
    ucs_mpool_put(op);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}

/*
 * Completes up to `max` copies of one queue, oldest first.  Copies on a
 * stream finish in order, so the first that is not done ends the scan: one
 * query per completed copy plus one.
 */
static unsigned uct_gpu_copy_queue_poll(uct_gpu_copy_iface_t *iface, uct_gpu_copy_queue_t *queue,
                                        unsigned max, ucs_status_t fail)
{
    unsigned count = 0;
    uct_gpu_copy_op_t *op;
    ucs_status_t status;

    while ((count < max) && ((op = uct_gpu_copy_queue_head(queue)) != NULL)) {
        status = (fail == UCS_OK) ? UCT_STRATA_CUDA(strata_cuda.cuEventQuery(op->event)) : fail;
        if (status == UCS_INPROGRESS) {
            break;
        }
        /* A failed copy (the driver reports it on the event) completes with
         * the error, so its user learns of it and the queue moves on. */
        ucs_queue_pull_non_empty(&queue->ops);
        ucs_trace_data("gpu_copy: copy %" PRIu64 " done: %s", op->seq, ucs_status_string(status));
        uct_gpu_copy_iface_op_complete(iface, op, status);
        ++count;
    }
    return count;
}

static unsigned uct_gpu_copy_iface_poll_queues(uct_gpu_copy_iface_t *iface)
{
    unsigned count = 0;
    unsigned i, dir;

    /* Starting with another queue each time keeps a busy direction from
     * using up max_poll while the others wait. */
    for (i = 0; (i < UCT_GPU_COPY_DIR_LAST) && (count < iface->config.max_poll); ++i) {
        dir = (iface->poll_start + i) % UCT_GPU_COPY_DIR_LAST;
        count += uct_gpu_copy_queue_poll(iface, &iface->queues[dir],
                                         iface->config.max_poll - count, UCS_OK);
    }
    iface->poll_start = (iface->poll_start + 1) % UCT_GPU_COPY_DIR_LAST;
    return count;
}

/*
 * The context is gone (destroyed by the application, or the driver failed):
 * no event can be asked again.  Every copy completes with an error rather
 * than never.
 */
static unsigned uct_gpu_copy_iface_fail_all(uct_gpu_copy_iface_t *iface)
{
    unsigned count = 0;
    int dir;

    ucs_error("gpu_copy: cannot enter the CUDA context of iface %p: failing %u copies", iface,
              (unsigned)iface->outstanding);
    for (dir = 0; dir < UCT_GPU_COPY_DIR_LAST; ++dir) {
        count += uct_gpu_copy_queue_poll(iface, &iface->queues[dir], UINT_MAX, UCS_ERR_IO_ERROR);
    }
    return count;
}

/* Flushes complete when every copy posted before them has. */
static void uct_gpu_copy_iface_complete_flushes(uct_gpu_copy_iface_t *iface)
{
    uint64_t oldest = uct_gpu_copy_iface_oldest_seq(iface);
    uct_gpu_copy_flush_t *flush;
    uct_completion_t *comp;

    while (!ucs_queue_is_empty(&iface->flushes)) {
        flush = ucs_queue_head_elem_non_empty(&iface->flushes, uct_gpu_copy_flush_t, queue);
        if (flush->seq >= oldest) {
            break;
        }
        ucs_queue_pull_non_empty(&iface->flushes);
        comp = flush->comp;
        ucs_free(flush);
        uct_invoke_completion(comp, UCS_OK);
    }
}

/*
 * Runs pending requests, oldest first, while descriptors are free.  A
 * request that cannot go yet stays at the head, so order is kept.
 */
static void uct_gpu_copy_iface_dispatch_pending(uct_gpu_copy_iface_t *iface)
{
    uct_gpu_copy_pending_priv_t *priv;
    uct_pending_req_t *req;
    ucs_status_t status;

    iface->in_dispatch = 1;
    while (!ucs_queue_is_empty(&iface->pending) &&
           (iface->outstanding < iface->config.max_events)) {
        priv = ucs_queue_pull_elem_non_empty(&iface->pending, uct_gpu_copy_pending_priv_t,
                                             queue_elem);
        req    = ucs_container_of(priv, uct_pending_req_t, priv);
        status = req->func(req);
        if (status != UCS_OK) {
            ucs_queue_push_head(&iface->pending, &priv->queue_elem);
            break;
        }
    }
    iface->in_dispatch = 0;
}

static unsigned uct_gpu_copy_iface_progress(uct_iface_h tl_iface)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);
    unsigned count              = 0;
    CUcontext restore;

    /* The common case for a host-only job: one test and out. */
    if ((iface->outstanding == 0) && ucs_queue_is_empty(&iface->pending)) {
        return 0;
    }
    if (iface->outstanding > 0) {
        if (uct_gpu_copy_iface_ctx_enter(iface, 0, &restore) == UCS_OK) {
            count = uct_gpu_copy_iface_poll_queues(iface);
            uct_gpu_copy_iface_ctx_leave(restore);
        } else {
            count = uct_gpu_copy_iface_fail_all(iface);
        }
        uct_gpu_copy_iface_complete_flushes(iface);
    }
    uct_gpu_copy_iface_dispatch_pending(iface);
    return count;
}

/* ---- flush and fence ---- */

ucs_status_t uct_gpu_copy_iface_flush_copies(uct_gpu_copy_iface_t *iface, uct_completion_t *comp)
{
    uct_gpu_copy_flush_t *flush;

    if (iface->outstanding == 0) {
        return UCS_OK;
    }
    if (comp != NULL) {
        flush = ucs_malloc(sizeof(*flush), "gpu_copy flush");
        if (flush == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        flush->comp = comp;
        flush->seq  = iface->seq;
        ucs_queue_push(&iface->flushes, &flush->queue);
    }
    return UCS_INPROGRESS;
}

/* UCT_FLUSH_FLAG_CANCEL cannot stop a DMA in flight: it waits like a flush. */
static ucs_status_t uct_gpu_copy_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                             uct_completion_t *comp)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);
    ucs_status_t status;

    status = uct_gpu_copy_iface_flush_copies(iface, comp);
    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}

void uct_gpu_copy_iface_fence_request(uct_gpu_copy_iface_t *iface)
{
    if (iface->outstanding > 0) {
        iface->fence_seq = iface->seq;
    }
}

static ucs_status_t uct_gpu_copy_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    uct_gpu_copy_iface_fence_request(iface);
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

/*
 * Copies on different streams may overtake each other; after a fence the
 * new copy's stream waits for the newest event of every other queue that
 * still holds a copy from before the fence (its tail is at least as new as
 * that copy, and was recorded already, so the wait cannot deadlock).
 */
ucs_status_t uct_gpu_copy_iface_fence_wait(uct_gpu_copy_iface_t *iface, CUstream stream)
{
    uct_gpu_copy_queue_t *queue;
    uct_gpu_copy_op_t *head, *tail;
    ucs_status_t status;
    int before_fence = 0;
    int dir;

    if (iface->fence_seq == 0) {
        return UCS_OK;
    }
    for (dir = 0; dir < UCT_GPU_COPY_DIR_LAST; ++dir) {
        queue = &iface->queues[dir];
        head  = uct_gpu_copy_queue_head(queue);
        if ((head == NULL) || (head->seq > iface->fence_seq)) {
            continue;
        }
        before_fence = 1;
        if (queue->stream == stream) {
            continue; /* a stream keeps its own order */
        }
        tail   = ucs_queue_tail_elem_non_empty(&queue->ops, uct_gpu_copy_op_t, queue);
        status = UCT_STRATA_CUDA(strata_cuda.cuStreamWaitEvent(stream, tail->event, 0));
        if (status != UCS_OK) {
            return status;
        }
    }
    if (!before_fence) {
        iface->fence_seq = 0;
    }
    return UCS_OK;
}

/* ---- event pool ---- */

static void uct_gpu_copy_op_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_gpu_copy_op_t *op = obj;

    /* The event is created when the descriptor is first used, with the
     * iface's context current and a way to report failure. */
    op->event = NULL;
    op->comp  = NULL;
}

static void uct_gpu_copy_op_cleanup(ucs_mpool_t *mp, void *obj)
{
    uct_gpu_copy_iface_t *iface = ucs_container_of(mp, uct_gpu_copy_iface_t, op_mp);
    uct_gpu_copy_op_t *op       = obj;

    if ((op->event != NULL) && iface->ctx_usable) {
        (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuEventDestroy(op->event));
    }
}

static ucs_mpool_ops_t uct_gpu_copy_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = uct_gpu_copy_op_init,
    .obj_cleanup   = uct_gpu_copy_op_cleanup,
    .obj_str       = NULL,
};

/* ---- ops tables ---- */

static uct_iface_ops_t uct_gpu_copy_iface_ops = {
    .ep_put_short             = uct_gpu_copy_ep_put_short,
    .ep_get_short             = uct_gpu_copy_ep_get_short,
    .ep_put_zcopy             = uct_gpu_copy_ep_put_zcopy,
    .ep_get_zcopy             = uct_gpu_copy_ep_get_zcopy,
    .ep_pending_add           = uct_gpu_copy_ep_pending_add,
    .ep_pending_purge         = uct_gpu_copy_ep_pending_purge,
    .ep_flush                 = uct_gpu_copy_ep_flush,
    .ep_fence                 = uct_gpu_copy_ep_fence,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpu_copy_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_copy_ep_t),
    .iface_flush              = uct_gpu_copy_iface_flush,
    .iface_fence              = uct_gpu_copy_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gpu_copy_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_copy_iface_t),
    .iface_query              = uct_gpu_copy_iface_query,
    .iface_get_device_address = uct_gpu_copy_iface_get_device_address,
    .iface_get_address        = uct_gpu_copy_iface_get_address,
    .iface_is_reachable       = uct_gpu_copy_iface_is_reachable,
};

static uct_iface_internal_ops_t uct_gpu_copy_iface_internal_ops = {
    .iface_estimate_perf = uct_gpu_copy_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported,
};

/* ---- life cycle ---- */

static ucs_status_t uct_gpu_copy_iface_configure(uct_gpu_copy_iface_t *iface,
                                                 const uct_gpu_copy_iface_config_t *config)
{
    if ((config->max_poll == 0) || (config->max_events == 0)) {
        ucs_error("gpu_copy: MAX_POLL and MAX_EVENTS must be at least 1");
        return UCS_ERR_INVALID_PARAM;
    }
    iface->config.max_poll      = config->max_poll;
    iface->config.max_events    = config->max_events;
    iface->config.latency       = config->latency;
    iface->config.bandwidth     = UCS_CONFIG_BW_IS_AUTO(config->bandwidth) ?
                                          UCT_GPU_COPY_IFACE_BW_DEFAULT :
                                          config->bandwidth;
    iface->config.d2d_bandwidth = UCS_CONFIG_BW_IS_AUTO(config->d2d_bandwidth) ?
                                          UCT_GPU_COPY_IFACE_D2D_BW_DEFAULT :
                                          config->d2d_bandwidth;
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_gpu_copy_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params, const uct_iface_config_t *tl_config)
{
    const uct_gpu_copy_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpu_copy_iface_config_t);
    ucs_status_t status;
    int dir;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_gpu_copy_iface_ops,
                              &uct_gpu_copy_iface_internal_ops, md, worker, params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                                      UCS_STATS_ARG(UCT_GPU_COPY_TL_NAME));

    status = uct_strata_iface_device(params, "gpu_copy", &self->ordinal);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_gpu_copy_iface_configure(self, config);
    if (status != UCS_OK) {
        return status;
    }
    self->process_id   = uct_gpu_copy_process_id();
    self->ctx          = NULL;
    self->ctx_usable   = 1;
    self->short_stream = NULL;
    self->outstanding  = 0;
    self->seq          = 0;
    self->fence_seq    = 0;
    self->in_dispatch  = 0;
    self->poll_start   = 0;
    for (dir = 0; dir < UCT_GPU_COPY_DIR_LAST; ++dir) {
        self->queues[dir].stream = NULL;
        ucs_queue_head_init(&self->queues[dir].ops);
    }
    ucs_queue_head_init(&self->flushes);
    ucs_queue_head_init(&self->pending);

    /* MAX_EVENTS is enforced by `outstanding`, so that pending_add can tell
     * exactly when a descriptor is free; the pool itself is unbounded. */
    return ucs_mpool_init(&self->op_mp, 0, sizeof(uct_gpu_copy_op_t), 0, UCS_SYS_CACHE_LINE_SIZE,
                          128, UINT_MAX, &uct_gpu_copy_op_mpool_ops, "gpu_copy_ops");
}

/*
 * Closing with copies in flight (the user did not flush): wait for the
 * hardware so that no DMA touches memory after we return, and drop their
 * completions, whose owners are being torn down with us.
 */
static void uct_gpu_copy_iface_drain(uct_gpu_copy_iface_t *iface)
{
    uct_gpu_copy_queue_t *queue;
    uct_gpu_copy_flush_t *flush;
    uct_gpu_copy_op_t *op;
    int dir;

    if (iface->outstanding > 0) {
        ucs_warn("gpu_copy: closing interface %p with %u copies in flight; waiting for them, "
                 "their completions will not be called", iface, iface->outstanding);
    }
    for (dir = 0; dir < UCT_GPU_COPY_DIR_LAST; ++dir) {
        queue = &iface->queues[dir];
        if (!ucs_queue_is_empty(&queue->ops) && iface->ctx_usable) {
            (void)UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(queue->stream));
        }
        while (!ucs_queue_is_empty(&queue->ops)) {
            op = ucs_queue_pull_elem_non_empty(&queue->ops, uct_gpu_copy_op_t, queue);
            ucs_mpool_put(op);
        }
    }
    iface->outstanding = 0;
    while (!ucs_queue_is_empty(&iface->flushes)) {
        flush = ucs_queue_pull_elem_non_empty(&iface->flushes, uct_gpu_copy_flush_t, queue);
        ucs_free(flush);
    }
    if (!ucs_queue_is_empty(&iface->pending)) {
        ucs_warn("gpu_copy: closing interface %p with %zu pending requests", iface,
                 ucs_queue_length(&iface->pending));
    }
}

static void uct_gpu_copy_iface_destroy_stream(uct_gpu_copy_iface_t *iface, CUstream stream)
{
    if ((stream != NULL) && iface->ctx_usable) {
        (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuStreamDestroy(stream));
    }
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpu_copy_iface_t)
{
    CUcontext restore = NULL;
    int dir;

    uct_base_iface_progress_disable(&self->super.super, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    /* Streams and events went with their context if the application
     * destroyed it (cudaDeviceReset before finalize): then only host memory
     * is released. */
    if (self->ctx != NULL) {
        self->ctx_usable = (uct_gpu_copy_iface_ctx_enter(self, 0, &restore) == UCS_OK);
    }
    uct_gpu_copy_iface_drain(self);
    ucs_mpool_cleanup(&self->op_mp, 1);
    for (dir = 0; dir < UCT_GPU_COPY_DIR_LAST; ++dir) {
        uct_gpu_copy_iface_destroy_stream(self, self->queues[dir].stream);
    }
    uct_gpu_copy_iface_destroy_stream(self, self->short_stream);
    uct_gpu_copy_iface_ctx_leave(restore);
}

UCS_CLASS_DEFINE(uct_gpu_copy_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpu_copy_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                                 const uct_iface_params_t *, const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpu_copy_iface_t, uct_iface_t);

/* Devices only on the gpu_copy domain; gpu_ipc has its own transport. */
static ucs_status_t uct_gpu_copy_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                               unsigned *num_devices_p)
{
    if (ucs_derived_of(md, uct_strata_md_t)->kind != UCT_STRATA_MD_COPY) {
        *devices_p     = NULL;
        *num_devices_p = 0;
        return UCS_OK;
    }
    return uct_strata_query_gpu_devices(md, devices_p, num_devices_p);
}

UCT_TL_DEFINE(&uct_strata_component, gpu_copy, uct_gpu_copy_query_devices, uct_gpu_copy_iface_t,
              "GPU_COPY_", uct_gpu_copy_iface_config_table, uct_gpu_copy_iface_config_t);
