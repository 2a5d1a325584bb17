/*
 * The base interface of gpu_copy and gpu_ipc: context, streams, the event
 * pool, per-stream queues and their progress, flush and fence, the pending
 * queue, and the drain at close (see gpu_base_iface.h).
 */
#include "gpu_base_iface.h"
#include "gpu_base_ep.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>

/* clang-format off */
ucs_config_field_t uct_gpu_base_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_gpu_base_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"MAX_POLL", "16",
     "Most completions handled by one call to progress.",
     ucs_offsetof(uct_gpu_base_iface_config_t, max_poll), UCS_CONFIG_TYPE_UINT},

    {"MAX_EVENTS", "inf",
     "Most operations in flight on one interface (each holds a CUDA event); more are\n"
     "refused as 'no resource' and wait in the pending queue ('inf': no limit).\n"
     "gpu_copy with UCX >= 1.16 takes them all (UCP cannot wait for a refused copy):\n"
     "there it is a soft limit, and a finite value is warned about once.",
     ucs_offsetof(uct_gpu_base_iface_config_t, max_events), UCS_CONFIG_TYPE_UINT},

    {NULL}
};
/* clang-format on */

/* ---- context and streams ---- */

/* The device whose primary context an interface adopts on first use: the
 * thread's, else the one owning `hint`, else the interface's. */
static int uct_gpu_base_iface_ctx_device(const uct_gpu_base_iface_t *iface, CUdeviceptr hint)
{
    int ordinal = -1;

    if ((hint == 0) || (strata_mem_kind((const void *)hint, &ordinal) == STRATA_MEM_HOST) ||
        (ordinal < 0)) {
        ordinal = (iface->ordinal >= 0) ? iface->ordinal : 0;
    }
    return strata_cuda_current_device(ordinal);
}

ucs_status_t uct_gpu_base_iface_ctx_enter(uct_gpu_base_iface_t *iface, CUdeviceptr hint,
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
        /* The primary context (which Strata retains) of the thread's
         * device, else of the device owning `hint`: streams and events made
         * in a context of the application's own would die with it
         * (cuCtxDestroy), and every later operation with them. */
        iface->ctx = strata_cuda_primary_ctx(uct_gpu_base_iface_ctx_device(iface, hint));
        if (iface->ctx == NULL) {
            ucs_error("%s/gpu%d: cannot retain the device's primary CUDA context for 0x%llx",
                      iface->ops->tl_name, iface->ordinal, (unsigned long long)hint);
            return UCS_ERR_NO_DEVICE;
        }
        if (current == iface->ctx) {
            return UCS_OK;
        }
        if (current == NULL) {
            /* as strata_cuda_ctx_ensure(): it stays current on this thread */
            return UCT_STRATA_CUDA(strata_cuda.cuCtxSetCurrent(iface->ctx));
        }
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

void uct_gpu_base_iface_ctx_leave(CUcontext restore)
{
    if (restore != NULL) {
        (void)UCT_STRATA_CUDA(strata_cuda.cuCtxSetCurrent(restore));
    }
}

ucs_status_t uct_gpu_base_iface_stream_get(CUstream *stream_p)
{
    if (ucs_likely(*stream_p != NULL)) {
        return UCS_OK;
    }
    /* Non-blocking: no implicit synchronization with the legacy default
     * stream, so the application's own work does not serialize with ours. */
    return UCT_STRATA_CUDA(strata_cuda.cuStreamCreate(stream_p, CU_STREAM_NON_BLOCKING));
}

void uct_gpu_base_iface_stream_destroy(uct_gpu_base_iface_t *iface, CUstream stream)
{
    CUcontext restore;

    if ((stream == NULL) || !iface->ctx_usable ||
        (uct_gpu_base_iface_ctx_enter(iface, 0, &restore) != UCS_OK)) {
        return;
    }
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuStreamDestroy(stream));
    uct_gpu_base_iface_ctx_leave(restore);
}

/* ---- posting ---- */

ucs_status_t uct_gpu_base_iface_op_get(uct_gpu_base_iface_t *iface, uct_gpu_base_queue_t *queue,
                                       uct_gpu_base_op_t **op_p)
{
    uct_gpu_base_op_t *op;
    ucs_status_t status;

    status = uct_gpu_base_iface_stream_get(&queue->stream);
    if (status != UCS_OK) {
        return status;
    }
    op = ucs_mpool_get(&iface->op_mp);
    if (op == NULL) {
        ucs_error("%s: out of memory for an operation descriptor", iface->ops->tl_name);
        return UCS_ERR_NO_MEMORY;
    }
    if (op->event == NULL) {
        /* Without timing an event is a plain completion marker, the
         * cheapest kind to record and query. */
        status = UCT_STRATA_CUDA(strata_cuda.cuEventCreate(&op->event, CU_EVENT_DISABLE_TIMING));
        if (status != UCS_OK) {
            op->event = NULL;
            goto err_put;
        }
    }
    status = uct_gpu_base_iface_fence_wait(iface, queue->stream);
    if (status != UCS_OK) {
        goto err_put;
    }
    op->is_marker = 0;
    *op_p         = op;
    return UCS_OK;

err_put:
    ucs_mpool_put(op);
    return status;
}

ucs_status_t uct_gpu_base_iface_op_push(uct_gpu_base_iface_t *iface, uct_gpu_base_queue_t *queue,
                                        uct_gpu_base_op_t *op, uct_completion_t *comp)
{
    ucs_status_t status;

    status = UCT_STRATA_CUDA(strata_cuda.cuEventRecord(op->event, queue->stream));
    if (ucs_unlikely(status != UCS_OK)) {
        /* The work is queued but cannot be tracked: let it finish, so that
         * the caller may reuse the buffers once it sees the error. */
        (void)UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(queue->stream));
        ucs_mpool_put(op);
        return status;
    }
    op->comp = comp;
    op->seq  = ++iface->seq;
    ucs_queue_push(&queue->ops, &op->queue);
    ++iface->outstanding;
    ++iface->queued;
    uct_gpu_base_iface_progress_wake(iface);
    return UCS_INPROGRESS;
}

/* ---- completion ---- */

static uct_gpu_base_op_t *uct_gpu_base_queue_head(uct_gpu_base_queue_t *queue)
{
    if (ucs_queue_is_empty(&queue->ops)) {
        return NULL;
    }
    return ucs_queue_head_elem_non_empty(&queue->ops, uct_gpu_base_op_t, queue);
}

/* Back to the pool, with what the transport attached to it. */
static void uct_gpu_base_iface_op_release(uct_gpu_base_iface_t *iface, uct_gpu_base_op_t *op)
{
    if (iface->ops->op_release != NULL) {
        iface->ops->op_release(op);
    }
    ucs_mpool_put(op);
}

/*
 * Takes the head of `queue` off and completes it.  The counters go first,
 * so that the completion may post the next operation; the descriptor and
 * what it holds (a peer mapping) go last, once its user has been told.
 */
static void uct_gpu_base_iface_op_complete(uct_gpu_base_iface_t *iface,
                                           uct_gpu_base_queue_t *queue, uct_gpu_base_op_t *op,
                                           ucs_status_t status)
{
    ucs_queue_pull_non_empty(&queue->ops);
    --iface->queued;
    if (!op->is_marker) {
        --iface->outstanding;
    }
    ucs_trace_data("%s: %s %" PRIu64 " done: %s", iface->ops->tl_name,
                   op->is_marker ? "flush after" : "operation", op->seq,
                   ucs_status_string(status));
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    uct_gpu_base_iface_op_release(iface, op);
}

/*
 * Completes up to `max` operations of one queue, oldest first; with
 * fail != UCS_OK, with that status and without asking the driver.  Work on
 * a stream finishes in order, so the first operation not done ends the
 * scan: one query per completed operation plus one.  A failed operation
 * (the driver reports a fault on the event) completes with the error, so
 * its user learns of it and the queue moves on.
 */
static unsigned uct_gpu_base_queue_progress(uct_gpu_base_iface_t *iface,
                                            uct_gpu_base_queue_t *queue, unsigned max,
                                            ucs_status_t fail)
{
    unsigned count = 0;
    uct_gpu_base_op_t *op;
    ucs_status_t status;

    while ((count < max) && ((op = uct_gpu_base_queue_head(queue)) != NULL)) {
        status = fail;
        if (!op->is_marker && (fail == UCS_OK)) {
            status = UCT_STRATA_CUDA(strata_cuda.cuEventQuery(op->event));
            if (status == UCS_INPROGRESS) {
                break;
            }
        }
        uct_gpu_base_iface_op_complete(iface, queue, op, status);
        ++count;
    }
    return count;
}

static unsigned uct_gpu_base_iface_poll_queues(uct_gpu_base_iface_t *iface)
{
    unsigned count = 0;
    unsigned i, index;

    /* Starting with another queue each time keeps a busy queue from using
     * up max_poll while the others wait. */
    for (i = 0; (i < iface->num_queues) && (count < iface->config.max_poll); ++i) {
        index  = (iface->poll_start + i) % iface->num_queues;
        count += uct_gpu_base_queue_progress(iface, &iface->queues[index],
                                             iface->config.max_poll - count, UCS_OK);
    }
    iface->poll_start = (iface->poll_start + 1) % iface->num_queues;
    return count;
}

/*
 * The context is gone (destroyed by the application, or the driver failed):
 * no event can be asked again.  Every operation completes with an error
 * rather than never.
 */
static unsigned uct_gpu_base_iface_fail_all(uct_gpu_base_iface_t *iface)
{
    unsigned count = 0;
    unsigned i;

    ucs_error("%s: cannot enter the CUDA context of iface %p: failing %u operations",
              iface->ops->tl_name, iface, iface->queued);
    for (i = 0; i < iface->num_queues; ++i) {
        count += uct_gpu_base_queue_progress(iface, &iface->queues[i], UINT_MAX,
                                             UCS_ERR_IO_ERROR);
    }
    return count;
}

/* ---- flush and fence ---- */

/* An interface flush with a completion, waiting for what was posted before it. */
typedef struct uct_gpu_base_flush {
    ucs_queue_elem_t queue;
    uct_completion_t *comp;
    uint64_t seq; /* the last operation posted when the flush was asked for */
} uct_gpu_base_flush_t;

/* No operation older than this is in a queue (UINT64_MAX: none is); a
 * marker's sequence number is a lower bound of what follows it. */
static uint64_t uct_gpu_base_iface_oldest_seq(uct_gpu_base_iface_t *iface)
{
    uint64_t oldest = UINT64_MAX;
    uct_gpu_base_op_t *head;
    unsigned i;

    for (i = 0; i < iface->num_queues; ++i) {
        head = uct_gpu_base_queue_head(&iface->queues[i]);
        if (head != NULL) {
            oldest = ucs_min(oldest, head->seq);
        }
    }
    return oldest;
}

/* Flushes complete when every operation posted before them has. */
static void uct_gpu_base_iface_complete_flushes(uct_gpu_base_iface_t *iface)
{
    uct_gpu_base_flush_t *flush;
    uct_completion_t *comp;
    uint64_t oldest;

    if (ucs_queue_is_empty(&iface->flushes)) {
        return;
    }
    oldest = uct_gpu_base_iface_oldest_seq(iface);
    while (!ucs_queue_is_empty(&iface->flushes)) {
        flush = ucs_queue_head_elem_non_empty(&iface->flushes, uct_gpu_base_flush_t, queue);
        if (flush->seq >= oldest) {
            break;
        }
        ucs_queue_pull_non_empty(&iface->flushes);
        comp = flush->comp;
        ucs_free(flush);
        uct_invoke_completion(comp, UCS_OK);
    }
}

ucs_status_t uct_gpu_base_iface_flush_all(uct_gpu_base_iface_t *iface, uct_completion_t *comp)
{
    uct_gpu_base_flush_t *flush;

    if (iface->outstanding == 0) {
        return UCS_OK;
    }
    if (comp != NULL) {
        flush = ucs_malloc(sizeof(*flush), "gpu flush");
        if (flush == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        flush->comp = comp;
        flush->seq  = iface->seq;
        ucs_queue_push(&iface->flushes, &flush->queue);
    }
    return UCS_INPROGRESS;
}

ucs_status_t uct_gpu_base_iface_flush_queue(uct_gpu_base_iface_t *iface,
                                            uct_gpu_base_queue_t *queue, uct_completion_t *comp)
{
    uct_gpu_base_op_t *marker;

    if (ucs_queue_is_empty(&queue->ops)) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }
    marker = ucs_mpool_get(&iface->op_mp);
    if (marker == NULL) {
        ucs_error("%s: out of memory for a flush descriptor", iface->ops->tl_name);
        return UCS_ERR_NO_MEMORY;
    }
    marker->is_marker = 1;
    marker->comp      = comp;
    marker->seq       = iface->seq;
    ucs_queue_push(&queue->ops, &marker->queue);
    ++iface->queued;
    uct_gpu_base_iface_progress_wake(iface);
    return UCS_INPROGRESS;
}

/* UCT_FLUSH_FLAG_CANCEL cannot stop device work in flight: it waits like a flush. */
ucs_status_t uct_gpu_base_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_base_iface_t);

    return ((iface->queued > 0) || !uct_strata_queue_is_empty(&iface->pending)) ? UCS_ERR_BUSY :
                                                                                  UCS_OK;
}

ucs_status_t uct_gpu_base_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                      uct_completion_t *comp)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_base_iface_t);
    ucs_status_t status;

    status = uct_gpu_base_iface_flush_all(iface, comp);
    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}

void uct_gpu_base_iface_fence_request(uct_gpu_base_iface_t *iface)
{
    if (iface->outstanding > 0) {
        iface->fence_seq = iface->seq;
    }
}

ucs_status_t uct_gpu_base_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_base_iface_t);

    uct_gpu_base_iface_fence_request(iface);
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

/*
 * Work on different streams may overtake; after a fence the new
 * operation's stream waits for the newest event of every other queue that
 * still holds an operation from before the fence (its tail is at least as
 * new as that operation, and was recorded already, so the wait cannot
 * deadlock).  A marker at the tail has no event of its own: the newest
 * operation before it is waited for.
 */
ucs_status_t uct_gpu_base_iface_fence_wait(uct_gpu_base_iface_t *iface, CUstream stream)
{
    uct_gpu_base_queue_t *queue;
    uct_gpu_base_op_t *head, *op, *last;
    ucs_status_t status;
    int before_fence = 0;
    unsigned i;

    if (ucs_likely(iface->fence_seq == 0)) {
        return UCS_OK;
    }
    for (i = 0; i < iface->num_queues; ++i) {
        queue = &iface->queues[i];
        head  = uct_gpu_base_queue_head(queue);
        if ((head == NULL) || (head->seq > iface->fence_seq)) {
            continue;
        }
        before_fence = 1;
        if (queue->stream == stream) {
            continue; /* a stream keeps its own order */
        }
        last = ucs_queue_tail_elem_non_empty(&queue->ops, uct_gpu_base_op_t, queue);
        if (last->is_marker) {
            last = NULL;
            ucs_queue_for_each(op, &queue->ops, queue) {
                if (!op->is_marker) {
                    last = op;
                }
            }
        }
        if (last == NULL) {
            continue; /* only markers: nothing runs on the device */
        }
        status = UCT_STRATA_CUDA(strata_cuda.cuStreamWaitEvent(stream, last->event, 0));
        if (status != UCS_OK) {
            return status;
        }
    }
    if (!before_fence) {
        iface->fence_seq = 0;
    }
    return UCS_OK;
}

/* ---- the pending queue ---- */

/*
 * Runs pending requests, oldest first, while events are free.  A request
 * that cannot go yet stays at the head, so order is kept; it is tried again
 * on the next progress even if nothing completed.
 */
static void uct_gpu_base_iface_dispatch_pending(uct_gpu_base_iface_t *iface)
{
    uct_gpu_base_pending_priv_t *priv;
    uct_pending_req_t *req;
    ucs_status_t status;

    iface->in_dispatch = 1;
    while (!ucs_queue_is_empty(&iface->pending) &&
           (iface->outstanding < iface->config.max_events)) {
        priv = ucs_queue_pull_elem_non_empty(&iface->pending, uct_gpu_base_pending_priv_t,
                                             queue_elem);
        --priv->ep->pending_count;
        req    = ucs_container_of(priv, uct_pending_req_t, priv);
        status = req->func(req);
        if (status != UCS_OK) {
            ucs_queue_push_head(&iface->pending, &priv->queue_elem);
            ++priv->ep->pending_count;
            break;
        }
    }
    iface->in_dispatch = 0;
}

/* ---- progress registration ---- */

/*
 * UCP enables an interface's progress for as long as the interface is in
 * use, and the worker then calls it on every spin of every wait loop: on a
 * GPU node running host traffic, two idle callbacks per spin that made host
 * point-to-point latency measurably slower.  So the callback stays on the
 * worker only while there is work: it goes after this many calls in a row
 * found nothing (a short grace, so that a stream of small copies does not
 * register and unregister at each one), and comes back when work is posted.
 */
#define UCT_GPU_BASE_IFACE_IDLE_POLLS 64

/* From inside a callback, or from a thread other than the dispatcher's: the
 * worker's "safe" queue operations. */
#define UCT_GPU_BASE_IFACE_PROGRESS_FLAGS(_iface) \
    ((_iface)->progress_wanted | UCT_PROGRESS_THREAD_SAFE)

void uct_gpu_base_iface_progress_wake(uct_gpu_base_iface_t *iface)
{
    iface->idle_polls = 0;
    if (ucs_unlikely((iface->progress_wanted != 0) && (iface->super.progress_flags == 0))) {
        uct_base_iface_progress_enable(&iface->super.super,
                                       UCT_GPU_BASE_IFACE_PROGRESS_FLAGS(iface));
    }
}

static void uct_gpu_base_iface_progress_sleep(uct_gpu_base_iface_t *iface)
{
    if (iface->super.progress_flags != 0) {
        uct_base_iface_progress_disable(&iface->super.super,
                                        UCT_GPU_BASE_IFACE_PROGRESS_FLAGS(iface));
    }
}

void uct_gpu_base_iface_progress_enable(uct_iface_h tl_iface, unsigned flags)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_base_iface_t);

    iface->progress_wanted |= flags & (UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    iface->idle_polls = 0;
    uct_base_iface_progress_enable(tl_iface, flags);
}

void uct_gpu_base_iface_progress_disable(uct_iface_h tl_iface, unsigned flags)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_base_iface_t);

    iface->progress_wanted &= ~flags;
    uct_base_iface_progress_disable(tl_iface, flags);
}

unsigned uct_gpu_base_iface_progress(uct_iface_h tl_iface)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_base_iface_t);
    unsigned count              = 0;
    CUcontext restore;

    /* The common case for a host-only job: one test and out, and after a
     * while off the worker altogether. */
    if (ucs_likely((iface->queued == 0) && ucs_queue_is_empty(&iface->pending))) {
        if (++iface->idle_polls == UCT_GPU_BASE_IFACE_IDLE_POLLS) {
            uct_gpu_base_iface_progress_sleep(iface);
        }
        return 0;
    }
    iface->idle_polls = 0;
    if (iface->queued > 0) {
        if (uct_gpu_base_iface_ctx_enter(iface, 0, &restore) == UCS_OK) {
            count = uct_gpu_base_iface_poll_queues(iface);
            uct_gpu_base_iface_ctx_leave(restore);
        } else {
            count = uct_gpu_base_iface_fail_all(iface);
        }
        uct_gpu_base_iface_complete_flushes(iface);
    }
    if (!ucs_queue_is_empty(&iface->pending)) {
        uct_gpu_base_iface_dispatch_pending(iface);
    }
    return count;
}

/* ---- capabilities ---- */

void uct_gpu_base_iface_query(uct_gpu_base_iface_t *iface, uct_iface_attr_t *iface_attr)
{
    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->ep_addr_len   = 0;
    iface_attr->max_conn_priv = 0;
    iface_attr->cap.flags     = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_PUT_ZCOPY |
                                UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING;
    /* No wakeup: that needs a host callback on the streams, which the
     * driver table does not load, so completions are seen by polling. */
    iface_attr->cap.event_flags = 0;

    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = SIZE_MAX;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = 1;

    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = SIZE_MAX;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = 1;

    iface_attr->bandwidth.dedicated = 0;
    iface_attr->priority            = 0;
}

/* ---- the descriptor pool ---- */

static void uct_gpu_base_op_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_gpu_base_iface_t *iface = ucs_container_of(mp, uct_gpu_base_iface_t, op_mp);

    /* The event is created when the descriptor is first used, with the
     * iface's context current and a way to report failure. */
    memset(obj, 0, iface->ops->op_size);
}

static void uct_gpu_base_op_cleanup(ucs_mpool_t *mp, void *obj)
{
    uct_gpu_base_iface_t *iface = ucs_container_of(mp, uct_gpu_base_iface_t, op_mp);
    uct_gpu_base_op_t *op       = obj;

    /* Runs at close with the context current, if it still can be. */
    if ((op->event != NULL) && iface->ctx_usable) {
        (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuEventDestroy(op->event));
    }
}

static ucs_mpool_ops_t uct_gpu_base_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = uct_gpu_base_op_init,
    .obj_cleanup   = uct_gpu_base_op_cleanup,
    .obj_str       = NULL,
};

/* ---- life cycle ---- */

/*
 * The MAX_EVENTS a transport that must not refuse works with: none.  A
 * user who set one is told, once per process, that it is a soft limit here
 * (UCP opens an interface per worker and per device).
 */
static unsigned uct_gpu_base_iface_soft_max_events(const uct_gpu_base_iface_ops_t *ops,
                                                   unsigned max_events)
{
    static int warned;
    char setting[64];
    size_t i;

    if ((max_events != UINT_MAX) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
        ucs_snprintf_zero(setting, sizeof(setting), "UCX_%s_MAX_EVENTS", ops->tl_name);
        for (i = 0; setting[i] != '\0'; ++i) {
            setting[i] = (char)toupper((unsigned char)setting[i]);
        }
        ucs_warn("%s=%u is a soft limit with UCX %s%s: UCP's protocols copy rendezvous "
                 "fragments through %s and cannot wait for a copy it refuses, so it takes "
                 "every copy, with more CUDA events than the limit when more are in flight",
                 setting, max_events, UCT_VERNO_STRING, UCT_STRATA_MTYPE_COPY_WHY, ops->tl_name);
    }
    return UINT_MAX;
}

UCS_CLASS_INIT_FUNC(uct_gpu_base_iface_t, uct_iface_ops_t *tl_ops,
                           uct_iface_internal_ops_t *internal_ops,
                           const uct_gpu_base_iface_ops_t *ops, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params, const uct_iface_config_t *tl_config,
                           unsigned num_queues)
{
    const uct_gpu_base_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpu_base_iface_config_t);
    ucs_status_t status;
    unsigned i;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, tl_ops, internal_ops, md, worker, params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                                      UCS_STATS_ARG(ops->tl_name));

    ucs_assert(ops->op_size >= sizeof(uct_gpu_base_op_t));
    if ((config->max_poll == 0) || (config->max_events == 0)) {
        ucs_error("%s: MAX_POLL and MAX_EVENTS must be at least 1", ops->tl_name);
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_strata_iface_device(params, ops->tl_name, &self->ordinal);
    if (status != UCS_OK) {
        return status;
    }
    self->ops               = ops;
    self->ctx               = NULL;
    self->ctx_usable        = 1;
    self->num_queues        = num_queues;
    self->poll_start        = 0;
    self->outstanding       = 0;
    self->queued            = 0;
    self->seq               = 0;
    self->fence_seq         = 0;
    self->in_dispatch       = 0;
    self->progress_wanted   = 0;
    self->idle_polls        = 0;
    self->config.max_poll   = config->max_poll;
    self->config.max_events = (!ops->mtype_copies || UCT_STRATA_MTYPE_COPY_CAN_REFUSE()) ?
                                  config->max_events :
                                  uct_gpu_base_iface_soft_max_events(ops, config->max_events);
    ucs_queue_head_init(&self->flushes);
    ucs_queue_head_init(&self->pending);

    self->queues = ucs_calloc(num_queues, sizeof(*self->queues), "gpu queues");
    if (self->queues == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < num_queues; ++i) {
        ucs_queue_head_init(&self->queues[i].ops);
    }
    /* MAX_EVENTS is enforced by `outstanding`, so that pending_add can tell
     * exactly when an event is free; the pool itself is unbounded. */
    status = uct_strata_mpool_init(&self->op_mp, ops->op_size, 128, &uct_gpu_base_op_mpool_ops,
                                   ops->tl_name);
    if (status != UCS_OK) {
        goto err_free_queues;
    }
    return UCS_OK;

err_free_queues:
    ucs_free(self->queues);
    return status;
}

/*
 * Closing with operations in flight (the user did not flush): wait for the
 * device so that no copy touches memory after we return, release what the
 * operations hold, and drop their completions, whose owners are being torn
 * down with us.  Without a usable context its work is gone already.
 */
static void uct_gpu_base_iface_drain(uct_gpu_base_iface_t *iface)
{
    uct_gpu_base_queue_t *queue;
    uct_gpu_base_flush_t *flush;
    uct_gpu_base_op_t *op;
    unsigned i;

    if (iface->queued > 0) {
        ucs_warn("%s: closing interface %p with %u operations in flight; waiting for them, "
                 "their completions will not be called", iface->ops->tl_name, iface,
                 iface->queued);
    }
    for (i = 0; i < iface->num_queues; ++i) {
        queue = &iface->queues[i];
        if (!ucs_queue_is_empty(&queue->ops) && iface->ctx_usable) {
            (void)UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(queue->stream));
        }
        while (!ucs_queue_is_empty(&queue->ops)) {
            op = ucs_queue_pull_elem_non_empty(&queue->ops, uct_gpu_base_op_t, queue);
            uct_gpu_base_iface_op_release(iface, op);
        }
    }
    iface->outstanding = 0;
    iface->queued      = 0;
    while (!ucs_queue_is_empty(&iface->flushes)) {
        flush = ucs_queue_pull_elem_non_empty(&iface->flushes, uct_gpu_base_flush_t, queue);
        ucs_free(flush);
    }
    if (!ucs_queue_is_empty(&iface->pending)) {
        ucs_warn("%s: closing interface %p with %zu pending requests", iface->ops->tl_name, iface,
                 ucs_queue_length(&iface->pending));
    }
}

UCS_CLASS_CLEANUP_FUNC(uct_gpu_base_iface_t)
{
    CUcontext restore = NULL;
    unsigned i;

    /* Asleep, the callback may still sit in the worker's queue, only marked
     * for removal (UCX 1.13's remove_safe leaves that to its proxy, after
     * this interface is gone): putting it back and taking it out with the
     * plain calls purges such entries first. */
    if ((self->progress_wanted != 0) && (self->super.progress_flags == 0)) {
        uct_base_iface_progress_enable(&self->super.super, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    }
    uct_base_iface_progress_disable(&self->super.super, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    /* Streams and events went with their context if the application
     * destroyed it (cudaDeviceReset before finalize): then only host memory
     * is released. */
    if (self->ctx != NULL) {
        self->ctx_usable = (uct_gpu_base_iface_ctx_enter(self, 0, &restore) == UCS_OK);
    }
    uct_gpu_base_iface_drain(self);
    ucs_mpool_cleanup(&self->op_mp, 1);
    for (i = 0; i < self->num_queues; ++i) {
        if ((self->queues[i].stream != NULL) && self->ctx_usable) {
            (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG,
                                       strata_cuda.cuStreamDestroy(self->queues[i].stream));
        }
    }
    uct_gpu_base_iface_ctx_leave(restore);
    ucs_free(self->queues);
}

UCS_CLASS_DEFINE(uct_gpu_base_iface_t, uct_base_iface_t);
