/*
 * The gpu_ipc transport: zero-copy put/get between processes of one node,
 * device to device, through peer allocations mapped by the gpu_ipc domain.
 *
 * A put or get is one cuMemcpyDtoDAsync on one of the interface's streams,
 * followed by an event; the interface's progress completes operations in
 * issue order per stream when their events have fired.  Each endpoint is
 * given one stream (round-robin over MAX_STREAMS at creation), so transfers
 * to different peers overlap while an endpoint's own operations stay in
 * order, which is what lets an endpoint flush by queueing a marker behind
 * them.
 */
#ifndef UCT_GPU_IPC_IFACE_H
#define UCT_GPU_IPC_IFACE_H

#include "../strata_md.h"
#include "gpu_ipc_cache.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>

#define UCT_GPU_IPC_TL_NAME         "gpu_ipc"
#define UCT_GPU_IPC_MAX_STREAMS_CAP 64

typedef struct uct_gpu_ipc_iface_config {
    uct_iface_config_t super;
    unsigned max_streams;
    unsigned max_poll;
    unsigned max_events;
    double bandwidth; /* UCS_CONFIG_BW_AUTO: estimated from the GPU links */
    double latency;
    double overhead;
} uct_gpu_ipc_iface_config_t;

/* A copy in flight, or (event == NULL) an endpoint flush waiting for the
 * copies queued before it on the same stream. */
typedef struct uct_gpu_ipc_op {
    ucs_queue_elem_t queue;
    CUevent event;           /* created on first use, kept while pooled */
    int is_copy;
    uct_completion_t *comp;
    /* The peer mapping a copy reads or writes, referenced until its event
     * has fired: the rkey may be released, and the cache may evict, while
     * the copy runs.  NULL for flush markers. */
    uct_gpu_ipc_cache_entry_t *mapping;
} uct_gpu_ipc_op_t;

typedef struct uct_gpu_ipc_stream {
    CUstream stream;
    ucs_queue_head_t ops; /* in issue order */
} uct_gpu_ipc_stream_t;

typedef struct uct_gpu_ipc_iface {
    uct_base_iface_t super;
    int device;                    /* ordinal this interface was opened for */
    CUcontext ctx;                 /* owns the streams and events; NULL until the first copy */
    uct_gpu_ipc_stream_t *streams; /* config.max_streams of them */
    int streams_created;
    unsigned next_stream;          /* for the next endpoint */
    unsigned copies_in_flight;     /* holding an event: bounded by max_events */
    int in_dispatch;               /* pending requests are being dispatched */
    unsigned ops_queued;           /* copies and flush markers */
    ucs_mpool_t op_mp;
    ucs_queue_head_t pending_q;    /* requests waiting for an event */
    struct {
        unsigned max_streams;
        unsigned max_poll;
        unsigned max_events;
        double bandwidth;
        double latency;
        double overhead;
    } config;
} uct_gpu_ipc_iface_t;

/*
 * Makes the interface's context current for a sequence of driver calls and
 * returns the thread's previous one in *saved.  The first call adopts the
 * thread's context (or, if it has none, the primary context of the device
 * of `hint`) for the interface's life.
 */
ucs_status_t uct_gpu_ipc_iface_ctx_enter(uct_gpu_ipc_iface_t *iface, CUdeviceptr hint,
                                         CUcontext *saved);
void uct_gpu_ipc_iface_ctx_leave(uct_gpu_ipc_iface_t *iface, CUcontext saved);

/* Creates the streams, in the interface's context (which must be current),
 * at the first copy: an interface that never copies costs no driver state. */
ucs_status_t uct_gpu_ipc_iface_create_streams(uct_gpu_ipc_iface_t *iface);

/* Returns an operation descriptor to the pool, with its mapping reference. */
void uct_gpu_ipc_iface_op_release(uct_gpu_ipc_op_t *op);

/* Starts the next pending request if an event is free again. */
void uct_gpu_ipc_iface_dispatch_pending(uct_gpu_ipc_iface_t *iface);

/*
 * Whether a new operation may start now: an event is free, and no pending
 * request is waiting ahead of it (UCT keeps pending requests first in line;
 * only their own dispatch may use the freed resources).
 */
static inline int uct_gpu_ipc_iface_has_resources(const uct_gpu_ipc_iface_t *iface)
{
    return (iface->copies_in_flight < iface->config.max_events) &&
           (ucs_queue_is_empty(&iface->pending_q) || iface->in_dispatch);
}

#endif /* UCT_GPU_IPC_IFACE_H */
