/*
 * The base of Strata's transports, as UCX's src/uct/cuda/base/ is for
 * cuda_copy and cuda_ipc: gpu_copy and gpu_ipc interfaces derive from
 * uct_gpu_base_iface_t, which owns
 *  - the CUDA context the interface's streams and events belong to, made
 *    current around every sequence of driver calls (ctx_enter/ctx_leave);
 *  - a pool of operation descriptors, each with its CUDA event;
 *  - per-stream queues of operations, each operation followed on its stream
 *    by its event;
 *  - progress: the operations of a queue complete in the order they were
 *    posted on it, when their events have fired;
 *  - flush (of one queue, or of the whole interface), fence across queues,
 *    the pending queue of requests waiting for an event, and the drain of
 *    operations still in flight when the interface closes.
 * A transport decides which queue an operation goes to, issues its device
 * work between uct_gpu_base_iface_op_get() and uct_gpu_base_iface_op_push(),
 * and may extend the descriptor (uct_gpu_base_iface_ops_t::op_size).
 */
#ifndef UCT_GPU_BASE_IFACE_H
#define UCT_GPU_BASE_IFACE_H

#include "strata_md.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/type/class.h>

/*
 * One operation on a queue: device work followed by `event`, or a marker
 * (a queue flush) that completes when everything queued before it on the
 * same queue has.  A transport's descriptor starts with this one.
 */
typedef struct uct_gpu_base_op {
    ucs_queue_elem_t queue;
    /* Created on the descriptor's first use and kept while it is pooled:
     * creating an event per operation costs more than a small copy. */
    CUevent event;
    int is_marker;
    uct_completion_t *comp;
    /* Order of posting on the interface, from 1; a marker has that of the
     * last operation posted before it. */
    uint64_t seq;
} uct_gpu_base_op_t;

typedef struct uct_gpu_base_queue {
    CUstream stream;      /* created at its first operation */
    ucs_queue_head_t ops; /* uct_gpu_base_op_t, oldest first */
} uct_gpu_base_queue_t;

/* What a transport tells its base. */
typedef struct uct_gpu_base_iface_ops {
    const char *tl_name;
    size_t op_size; /* of the transport's descriptor, at least sizeof(uct_gpu_base_op_t) */
    /*
     * Releases what the transport attached to an operation that leaves its
     * queue (completed, failed, or dropped at close): the device no longer
     * runs it.  Called after the operation's completion; NULL: nothing.
     */
    void (*op_release)(uct_gpu_base_op_t *op);
    /*
     * Whether UCP copies rendezvous fragments through the transport as a
     * memory-type endpoint.  Such a transport may refuse an operation for
     * want of an event (MAX_EVENTS) only where UCP's protocols can wait for
     * a refused copy (UCT_STRATA_MTYPE_COPY_CAN_REFUSE()); elsewhere
     * MAX_EVENTS is a soft limit, operations beyond it take new events, and
     * opening an interface with a finite setting warns once per process.
     */
    int mtype_copies;
} uct_gpu_base_iface_ops_t;

/* Settings both transports have (UCX_GPU_COPY_*, UCX_GPU_IPC_*). */
typedef struct uct_gpu_base_iface_config {
    uct_iface_config_t super;
    unsigned max_poll;
    unsigned max_events;
} uct_gpu_base_iface_config_t;

extern ucs_config_field_t uct_gpu_base_iface_config_table[];

typedef struct uct_gpu_base_iface {
    uct_base_iface_t super;
    const uct_gpu_base_iface_ops_t *ops;
    int ordinal; /* of the device the interface was opened on ("gpu<N>") */
    /* The context the streams and events belong to: the one current on the
     * first thread that posts an operation.  NULL until then. */
    CUcontext ctx;
    int ctx_usable; /* cleared at close if ctx cannot be made current */
    uct_gpu_base_queue_t *queues;
    unsigned num_queues;
    unsigned poll_start; /* queue polled first, rotated for fairness */
    ucs_mpool_t op_mp;
    unsigned outstanding; /* operations holding an event: at most max_events */
    unsigned queued;      /* operations and markers in the queues */
    uint64_t seq;         /* of the last operation posted */
    /* Operations up to this sequence number finish before any posted after
     * the fence starts; 0 when no fence is in force. */
    uint64_t fence_seq;
    ucs_queue_head_t flushes; /* interface flushes waiting, oldest first */
    ucs_queue_head_t pending; /* uct_pending_req_t waiting for an event */
    int in_dispatch;          /* running pending requests now */
    /* Progress UCP asked for (UCT_PROGRESS_SEND/RECV); the callback is on
     * the worker only while there is work, and a little after. */
    unsigned progress_wanted;
    unsigned idle_polls; /* progress calls that found nothing, in a row */
    struct {
        unsigned max_poll;
        unsigned max_events; /* UINT_MAX: never refuse (no or a soft limit) */
    } config;
} uct_gpu_base_iface_t;

/* (tl ops, internal ops, base ops, md, worker, params, config, queues) */
UCS_CLASS_DECLARE(uct_gpu_base_iface_t, uct_iface_ops_t *, uct_iface_internal_ops_t *,
                  const uct_gpu_base_iface_ops_t *, uct_md_h, uct_worker_h,
                  const uct_iface_params_t *, const uct_iface_config_t *, unsigned);

/*
 * Makes iface->ctx current on the calling thread (adopting, on first use,
 * the primary context of the thread's device, or of the device owning
 * `hint`: never a context of the application's own, which it may destroy).  A different context the thread had is returned in *restore_p for
 * uct_gpu_base_iface_ctx_leave(); a thread that had none keeps ours, as
 * after strata_cuda_ctx_ensure().
 */
ucs_status_t uct_gpu_base_iface_ctx_enter(uct_gpu_base_iface_t *iface, CUdeviceptr hint,
                                          CUcontext *restore_p);
void uct_gpu_base_iface_ctx_leave(CUcontext restore);

/* Creates *stream_p on first use; the iface's context must be current. */
ucs_status_t uct_gpu_base_iface_stream_get(CUstream *stream_p);

/* Destroys a stream of the interface's context at close (if it still can). */
void uct_gpu_base_iface_stream_destroy(uct_gpu_base_iface_t *iface, CUstream stream);

/*
 * A descriptor for an operation on `queue`, whose stream exists and waits
 * for what a fence ordered before it.  The iface's context must be current.
 * The caller issues its device work on queue->stream, then either pushes
 * the descriptor or gives it back with ucs_mpool_put().
 */
ucs_status_t uct_gpu_base_iface_op_get(uct_gpu_base_iface_t *iface, uct_gpu_base_queue_t *queue,
                                       uct_gpu_base_op_t **op_p);

/*
 * Records the operation's event behind the work just issued and queues it:
 * UCS_INPROGRESS until progress completes it with `comp`.  On failure the
 * descriptor is given back.
 */
ucs_status_t uct_gpu_base_iface_op_push(uct_gpu_base_iface_t *iface, uct_gpu_base_queue_t *queue,
                                        uct_gpu_base_op_t *op, uct_completion_t *comp);

/* Makes `stream` wait for operations a fence ordered before new ones. */
ucs_status_t uct_gpu_base_iface_fence_wait(uct_gpu_base_iface_t *iface, CUstream stream);

/* Orders operations posted from now on after those already posted. */
void uct_gpu_base_iface_fence_request(uct_gpu_base_iface_t *iface);

/*
 * Flush of every operation posted so far: UCS_OK if none is outstanding,
 * else UCS_INPROGRESS, and comp (if not NULL) is completed once they are.
 */
ucs_status_t uct_gpu_base_iface_flush_all(uct_gpu_base_iface_t *iface, uct_completion_t *comp);

/* The same for the operations of one queue (they complete in order, so a
 * marker behind them completes after the last). */
ucs_status_t uct_gpu_base_iface_flush_queue(uct_gpu_base_iface_t *iface,
                                            uct_gpu_base_queue_t *queue, uct_completion_t *comp);

/* Capabilities both transports share: zero-copy put/get of one contiguous
 * entry, pending, connection to an interface, no wakeup events. */
void uct_gpu_base_iface_query(uct_gpu_base_iface_t *iface, uct_iface_attr_t *iface_attr);

/*
 * Puts the progress callback back on the worker when work is posted (an
 * idle interface takes it off: see uct_gpu_base_iface_progress()).
 */
void uct_gpu_base_iface_progress_wake(uct_gpu_base_iface_t *iface);

/* uct_iface_ops_t entries. */
unsigned uct_gpu_base_iface_progress(uct_iface_h tl_iface);
void uct_gpu_base_iface_progress_enable(uct_iface_h tl_iface, unsigned flags);
void uct_gpu_base_iface_progress_disable(uct_iface_h tl_iface, unsigned flags);
/*
 * iface_event_arm: neither transport has an event file descriptor
 * (event_flags 0), but UCP arms an interface whose last endpoint went away
 * whatever its flags (UCX 1.12 with adaptive progress: a fatal error on
 * anything but UCS_OK or BUSY).  Armed means nothing left to progress: BUSY
 * while operations or pending requests remain.
 */
ucs_status_t uct_gpu_base_iface_event_arm(uct_iface_h tl_iface, unsigned events);

ucs_status_t uct_gpu_base_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                      uct_completion_t *comp);
ucs_status_t uct_gpu_base_iface_fence(uct_iface_h tl_iface, unsigned flags);

/*
 * A new operation may be posted now: an event is free, and no request
 * posted earlier waits in the pending queue (the queue is empty, or the
 * caller runs from its dispatcher, which has posted everything ahead).
 * Operations must not overtake pending requests.
 */
static UCS_F_ALWAYS_INLINE int uct_gpu_base_iface_has_resources(const uct_gpu_base_iface_t *iface)
{
    return (iface->outstanding < iface->config.max_events) &&
           (uct_strata_queue_is_empty(&iface->pending) || iface->in_dispatch);
}

#endif /* UCT_GPU_BASE_IFACE_H */
