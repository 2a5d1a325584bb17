/*
 * gpu_copy: copies between host and GPU memory inside one process.
 *
 * UCP 1.13 moves device buffers through "memory type" endpoints: a loopback
 * endpoint on a transport whose memory domain can access CUDA memory.  It
 * packs and unpacks with put_short/get_short and runs the rendezvous
 * pipeline's host-fragment copies with put_zcopy/get_zcopy.  gpu_copy is that
 * transport for Strata's "gpu_copy" memory domain.
 *
 * Short operations copy synchronously on their own stream.  Zero-copy
 * operations are queued on one stream per direction, each followed by an
 * event from a pool; progress polls the oldest event of every queue and
 * completes operations in the order they were posted on that queue.
 */
#ifndef UCT_GPU_COPY_IFACE_H
#define UCT_GPU_COPY_IFACE_H

#include "../strata_md.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>

#define UCT_GPU_COPY_TL_NAME "gpu_copy"

/*
 * Streams are kept per direction so that a large host-to-device copy does
 * not hold back a device-to-host copy of the other half of a pipeline (the
 * copy engines run the two directions in parallel).  The index is
 * (source is GPU memory) << 1 | (destination is GPU memory).
 */
typedef enum uct_gpu_copy_dir {
    UCT_GPU_COPY_DIR_H2H,
    UCT_GPU_COPY_DIR_H2D,
    UCT_GPU_COPY_DIR_D2H,
    UCT_GPU_COPY_DIR_D2D,
    UCT_GPU_COPY_DIR_LAST
} uct_gpu_copy_dir_t;

/* Identifies the process: gpu_copy reaches only memory of its own process. */
typedef struct uct_gpu_copy_iface_addr {
    uint64_t process_id;
} UCS_S_PACKED uct_gpu_copy_iface_addr_t;

/* Identifies the host (ucs_get_system_id()). */
typedef struct uct_gpu_copy_device_addr {
    uint64_t system_id;
} UCS_S_PACKED uct_gpu_copy_device_addr_t;

/* One posted zero-copy operation, from the iface's pool. */
typedef struct uct_gpu_copy_op {
    ucs_queue_elem_t queue;
    /* Created on the descriptor's first use and kept while it is pooled:
     * creating an event per copy costs more than a small copy. */
    CUevent event;
    uct_completion_t *comp;
    uint64_t seq; /* order of posting on the iface, from 1 */
} uct_gpu_copy_op_t;

/* A flush with a completion, waiting for copies posted before it. */
typedef struct uct_gpu_copy_flush {
    ucs_queue_elem_t queue;
    uct_completion_t *comp;
    uint64_t seq; /* the last copy posted when the flush was asked for */
} uct_gpu_copy_flush_t;

typedef struct uct_gpu_copy_queue {
    CUstream stream;      /* created on first use */
    ucs_queue_head_t ops; /* uct_gpu_copy_op_t, oldest first */
} uct_gpu_copy_queue_t;

/* What gpu_copy keeps in uct_pending_req_t::priv. */
typedef struct uct_gpu_copy_pending_priv {
    ucs_queue_elem_t queue_elem; /* first, as uct_pending_req_priv_queue_t */
    uct_ep_h ep;                 /* to purge one endpoint's requests */
} uct_gpu_copy_pending_priv_t;

typedef struct uct_gpu_copy_iface_config {
    uct_iface_config_t super;
    unsigned max_poll;
    unsigned max_events;
    double bandwidth;
    double d2d_bandwidth;
    double latency;
} uct_gpu_copy_iface_config_t;

typedef struct uct_gpu_copy_iface {
    uct_base_iface_t super;
    uint64_t process_id;
    int ordinal; /* of the device this iface was opened on ("gpu<N>") */
    /* The context the streams and events belong to: the one current on
     * the first thread that copies.  NULL until then. */
    CUcontext ctx;
    int ctx_usable; /* cleared at teardown if ctx cannot be made current */
    CUstream short_stream;
    uct_gpu_copy_queue_t queues[UCT_GPU_COPY_DIR_LAST];
    ucs_mpool_t op_mp;
    unsigned outstanding; /* posted copies not yet completed */
    uint64_t seq;         /* of the last copy posted */
    /* Copies up to this sequence number finish before any copy posted
     * after the fence starts; 0 when no fence is in force. */
    uint64_t fence_seq;
    ucs_queue_head_t flushes; /* uct_gpu_copy_flush_t, oldest first */
    ucs_queue_head_t pending; /* uct_pending_req_t waiting for a descriptor */
    int in_dispatch;          /* running pending requests now */
    unsigned poll_start;      /* queue polled first, rotated for fairness */
    struct {
        unsigned max_poll;
        unsigned max_events;
        double bandwidth;
        double d2d_bandwidth;
        double latency;
    } config;
} uct_gpu_copy_iface_t;

/*
 * Makes iface->ctx current on the calling thread (adopting the thread's
 * context, or the primary context of the device owning `hint`, on first
 * use).  A different context the thread had is returned in *restore_p for
 * uct_gpu_copy_iface_ctx_leave(); a thread that had none keeps ours, as
 * strata_cuda_ctx_ensure() does.
 */
ucs_status_t uct_gpu_copy_iface_ctx_enter(uct_gpu_copy_iface_t *iface, CUdeviceptr hint,
                                          CUcontext *restore_p);
void uct_gpu_copy_iface_ctx_leave(CUcontext restore);

/* Creates *stream_p on first use; the iface's context must be current. */
ucs_status_t uct_gpu_copy_iface_stream_get(CUstream *stream_p);

/* Makes `stream` wait for copies a fence ordered before new ones. */
ucs_status_t uct_gpu_copy_iface_fence_wait(uct_gpu_copy_iface_t *iface, CUstream stream);

/* Orders copies posted from now on after those already posted. */
void uct_gpu_copy_iface_fence_request(uct_gpu_copy_iface_t *iface);

/*
 * No request posted earlier waits in the pending queue: it is empty, or the
 * caller runs from its dispatcher, which has posted everything ahead.
 * Operations and flushes must not overtake pending requests.
 */
static UCS_F_ALWAYS_INLINE int uct_gpu_copy_iface_pending_is_clear(uct_gpu_copy_iface_t *iface)
{
    return ucs_queue_is_empty(&iface->pending) || iface->in_dispatch;
}

/* A zero-copy operation may be posted now. */
static UCS_F_ALWAYS_INLINE int uct_gpu_copy_iface_has_resources(uct_gpu_copy_iface_t *iface)
{
    return (iface->outstanding < iface->config.max_events) &&
           uct_gpu_copy_iface_pending_is_clear(iface);
}

/*
 * Flush of every copy posted so far: UCS_OK if none is outstanding, else
 * UCS_INPROGRESS, and comp (if not NULL) is completed once they are.
 */
ucs_status_t uct_gpu_copy_iface_flush_copies(uct_gpu_copy_iface_t *iface, uct_completion_t *comp);

#endif /* UCT_GPU_COPY_IFACE_H */
