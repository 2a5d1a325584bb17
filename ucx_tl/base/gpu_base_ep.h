/*
 * The base endpoint of gpu_copy and gpu_ipc: pending requests (queued on
 * the interface, since the resource they wait for, an event, is the
 * interface's), flush and fence.  An endpoint either keeps all its
 * operations on one queue of the interface (gpu_ipc: one stream per peer),
 * which orders them and lets it flush only that queue, or spreads them over
 * all queues (gpu_copy: one stream per direction), and then flushes and
 * fences the whole interface.
 */
#ifndef UCT_GPU_BASE_EP_H
#define UCT_GPU_BASE_EP_H

#include "gpu_base_iface.h"

#include <uct/base/uct_iface.h>
#include <ucs/type/class.h>

typedef struct uct_gpu_base_ep {
    uct_base_ep_t super;
    uct_gpu_base_queue_t *queue; /* of every operation of the ep; NULL: any */
    unsigned pending_count;      /* its requests in the iface's pending queue */
} uct_gpu_base_ep_t;

/* What the base keeps in uct_pending_req_t::priv. */
typedef struct uct_gpu_base_pending_priv {
    ucs_queue_elem_t queue_elem;
    uct_gpu_base_ep_t *ep; /* to purge one endpoint's requests */
} uct_gpu_base_pending_priv_t;

/* (iface, queue of all the ep's operations or NULL) */
UCS_CLASS_DECLARE(uct_gpu_base_ep_t, uct_gpu_base_iface_t *, uct_gpu_base_queue_t *);

/* uct_iface_ops_t entries. */
ucs_status_t uct_gpu_base_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags);
void uct_gpu_base_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg);
ucs_status_t uct_gpu_base_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_gpu_base_ep_fence(uct_ep_h tl_ep, unsigned flags);

#endif /* UCT_GPU_BASE_EP_H */
