/*
 * The base endpoint of gpu_copy and gpu_ipc: pending requests, flush and
 * fence (see gpu_base_ep.h).
 */
#include "gpu_base_ep.h"

#include <ucs/debug/log.h>

UCS_CLASS_INIT_FUNC(uct_gpu_base_ep_t, uct_gpu_base_iface_t *iface,
                           uct_gpu_base_queue_t *queue)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    self->queue         = queue;
    self->pending_count = 0;
    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(uct_gpu_base_ep_t)
{
    uct_gpu_base_iface_t *iface = ucs_derived_of(self->super.super.iface, uct_gpu_base_iface_t);

    if (self->pending_count > 0) {
        /* UCT's contract is that the user purges first; the queue is the
         * iface's, and no request may point at a dead endpoint. */
        ucs_warn("%s: ep %p destroyed with %u pending requests", iface->ops->tl_name, self,
                 self->pending_count);
        uct_gpu_base_ep_pending_purge(&self->super.super, NULL, NULL);
    }
}

UCS_CLASS_DEFINE(uct_gpu_base_ep_t, uct_base_ep_t);

ucs_status_t uct_gpu_base_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    uct_gpu_base_ep_t *ep             = ucs_derived_of(tl_ep, uct_gpu_base_ep_t);
    uct_gpu_base_iface_t *iface       = ucs_derived_of(tl_ep->iface, uct_gpu_base_iface_t);
    uct_gpu_base_pending_priv_t *priv = (uct_gpu_base_pending_priv_t *)req->priv;

    UCS_STATIC_ASSERT(sizeof(*priv) <= UCT_PENDING_REQ_PRIV_LEN);
    /* The only resource an operation can lack is an event (or its turn). */
    if (uct_gpu_base_iface_has_resources(iface)) {
        return UCS_ERR_BUSY;
    }
    priv->ep = ep;
    ucs_queue_push(&iface->pending, &priv->queue_elem);
    ++ep->pending_count;
    uct_gpu_base_iface_progress_wake(iface);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

void uct_gpu_base_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg)
{
    uct_gpu_base_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpu_base_ep_t);
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gpu_base_iface_t);
    uct_gpu_base_pending_priv_t *priv;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(priv, iter, &iface->pending, queue_elem) {
        if (priv->ep != ep) {
            continue;
        }
        ucs_queue_del_iter(&iface->pending, iter);
        --ep->pending_count;
        if (cb != NULL) {
            cb(ucs_container_of(priv, uct_pending_req_t, priv), arg);
        }
    }
}

/*
 * The endpoint's requests still in the pending queue come before the
 * flush: it returns UCS_ERR_NO_RESOURCE and the caller queues it behind
 * them, unless it runs from the dispatcher, which has posted everything
 * ahead of it.  Device work in flight cannot be cancelled: with
 * UCT_FLUSH_FLAG_CANCEL too the flush completes when it does (the caller
 * purges the pending requests).
 */
ucs_status_t uct_gpu_base_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_gpu_base_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpu_base_ep_t);
    uct_gpu_base_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gpu_base_iface_t);
    ucs_status_t status;

    if ((ep->pending_count > 0) && !iface->in_dispatch && !(flags & UCT_FLUSH_FLAG_CANCEL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* Without a queue of its own the ep waits for every operation posted
     * so far: more than it must, never less. */
    status = (ep->queue != NULL) ? uct_gpu_base_iface_flush_queue(iface, ep->queue, comp) :
                                   uct_gpu_base_iface_flush_all(iface, comp);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    }
    return status;
}

/* An ep with a queue of its own is ordered by its stream already. */
ucs_status_t uct_gpu_base_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_gpu_base_ep_t *ep = ucs_derived_of(tl_ep, uct_gpu_base_ep_t);

    if (ep->queue == NULL) {
        uct_gpu_base_iface_fence_request(ucs_derived_of(tl_ep->iface, uct_gpu_base_iface_t));
    }
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}
