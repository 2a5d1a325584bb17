/*
 * gpu_ipc endpoints: put/get as asynchronous device copies, pending
 * requests, flush, and detection of a peer that has gone.
 */
#include "gpu_ipc_ep.h"
#include "gpu_ipc_md.h"

#include <uct/base/uct_log.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static UCS_CLASS_INIT_FUNC(uct_gpu_ipc_ep_t, const uct_ep_params_t *params)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(params->iface, uct_gpu_ipc_iface_t);

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    self->remote_pid       = *(const pid_t *)params->iface_addr;
    /* The start time is read after pidfd_open, so that a match with a key's
     * owner_start means the pidfd is that process (see gpu_ipc_md.c). */
    self->remote_pidfd     = (int)syscall(SYS_pidfd_open, self->remote_pid, 0);
    self->remote_start     = ucs_sys_get_proc_create_time(self->remote_pid);
    self->stream_index     = iface->next_stream++ % iface->config.max_streams;
    self->pending_count    = 0;
    self->failure_reported = 0;
    if (self->remote_start == 0) {
        ucs_diag("gpu_ipc: peer process %d is not running", self->remote_pid);
        if (self->remote_pidfd >= 0) {
            close(self->remote_pidfd);
        }
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    ucs_debug("gpu_ipc: ep %p to pid %d uses stream %u", self, self->remote_pid,
              self->stream_index);
    return UCS_OK;
}

static int uct_gpu_ipc_ep_is_failure_cb(const ucs_callbackq_elem_t *elem, void *arg);

static UCS_CLASS_CLEANUP_FUNC(uct_gpu_ipc_ep_t)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(self->super.super.iface, uct_gpu_ipc_iface_t);

    ucs_callbackq_remove_if(&iface->super.worker->super.progress_q, uct_gpu_ipc_ep_is_failure_cb,
                            self);
    if (self->pending_count > 0) {
        /* UCT's contract is that the user purges first; a queued request
         * must not outlive its endpoint in any case. */
        ucs_warn("gpu_ipc: ep %p destroyed with %u pending requests", self, self->pending_count);
        uct_gpu_ipc_ep_pending_purge(&self->super.super, NULL, NULL);
    }
    if (self->remote_pidfd >= 0) {
        close(self->remote_pidfd);
    }
}

UCS_CLASS_DEFINE(uct_gpu_ipc_ep_t, uct_base_ep_t)
UCS_CLASS_DEFINE_NEW_FUNC(uct_gpu_ipc_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpu_ipc_ep_t, uct_ep_t);

/* ---- peer failure ---- */

static int uct_gpu_ipc_pid_is_gone(pid_t pid)
{
    return (kill(pid, 0) != 0) && (errno == ESRCH);
}

static unsigned uct_gpu_ipc_ep_failure_progress(void *arg)
{
    uct_gpu_ipc_ep_t *ep = arg;

    uct_iface_handle_ep_err(ep->super.super.iface, &ep->super.super, UCS_ERR_ENDPOINT_TIMEOUT);
    return 1;
}

static int uct_gpu_ipc_ep_is_failure_cb(const ucs_callbackq_elem_t *elem, void *arg)
{
    return (elem->cb == uct_gpu_ipc_ep_failure_progress) && (elem->arg == arg);
}

ucs_status_t uct_gpu_ipc_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_gpu_ipc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpu_ipc_ep_t);
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gpu_ipc_iface_t);

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    if (ep->failure_reported) {
        return UCS_OK;
    }
    /* A start time that changed is a new process that got the pid. */
    if (uct_gpu_ipc_pid_is_gone(ep->remote_pid) ||
        (ucs_sys_get_proc_create_time(ep->remote_pid) != ep->remote_start)) {
        ucs_diag("gpu_ipc: ep %p: peer process %d has exited", ep, ep->remote_pid);
        ep->failure_reported = 1;
        /* Reported from progress, not from here: the error handler may
         * destroy the endpoint, which the caller still holds. */
        ucs_callbackq_add_safe(&iface->super.worker->super.progress_q,
                               uct_gpu_ipc_ep_failure_progress, ep, UCS_CALLBACKQ_FLAG_ONESHOT);
    }
    return UCS_OK;
}

/*
 * Whether the process that owns rkey's allocation has exited: its pid is
 * gone, or now names a process of another start time.  Asked before every
 * copy, so that it stays cheap: for the endpoint's peer (the usual owner,
 * whose start time was read after pinning it with a pidfd) the pidfd says
 * whether that very process still runs, a syscall like kill(); reading
 * /proc/<pid>/stat costs ten times more.
 */
static int uct_gpu_ipc_ep_owner_is_gone(const uct_gpu_ipc_ep_t *ep,
                                        const uct_gpu_ipc_rkey_t *rkey)
{
    if ((ep->remote_pidfd >= 0) && (rkey->owner_pid == ep->remote_pid) &&
        (rkey->owner_start == ep->remote_start)) {
        return (syscall(SYS_pidfd_send_signal, ep->remote_pidfd, 0, NULL, 0) != 0) &&
               (errno == ESRCH);
    }
    return !uct_gpu_ipc_owner_is_alive(rkey->owner_pid, rkey->owner_start);
}

/* ---- put / get ---- */

/* Where remote [remote_addr, +length) is in this process, if the rkey's
 * allocation holds all of it. */
static ucs_status_t uct_gpu_ipc_ep_translate(const uct_gpu_ipc_rkey_t *rkey, uint64_t remote_addr,
                                             size_t length, CUdeviceptr *mapped_p)
{
    uint64_t offset = remote_addr - rkey->remote_base;

    if ((remote_addr < rkey->remote_base) || (offset > rkey->length) ||
        (length > rkey->length - offset)) {
        ucs_error("gpu_ipc: remote range 0x%" PRIx64 "+%zu is outside pid %d's allocation "
                  "0x%" PRIx64 "+%" PRIu64 " that the remote key describes",
                  remote_addr, length, rkey->owner_pid, rkey->remote_base, rkey->length);
        return UCS_ERR_INVALID_PARAM;
    }
    *mapped_p = (CUdeviceptr)(rkey->mapped_base + offset);
    return UCS_OK;
}

/* Issues the copy through `mapping` (the rkey's), and queues its event with
 * a reference on the mapping that the completion releases. */
static ucs_status_t uct_gpu_ipc_ep_issue_copy(uct_gpu_ipc_iface_t *iface, uct_gpu_ipc_ep_t *ep,
                                              uct_gpu_ipc_cache_entry_t *mapping,
                                              CUdeviceptr dst, CUdeviceptr src, size_t length,
                                              uct_completion_t *comp)
{
    uct_gpu_ipc_stream_t *stream = &iface->streams[ep->stream_index];
    uct_gpu_ipc_op_t *op;
    ucs_status_t status;

    op = ucs_mpool_get(&iface->op_mp);
    if (op == NULL) {
        ucs_error("gpu_ipc: no memory for an operation descriptor");
        return UCS_ERR_NO_MEMORY;
    }
    if (op->event == NULL) {
        /* Events are made here, where the interface's context is current;
         * timing off makes recording and querying them cheaper. */
        status = UCT_STRATA_CUDA(strata_cuda.cuEventCreate(&op->event, CU_EVENT_DISABLE_TIMING));
        if (status != UCS_OK) {
            op->event = NULL;
            goto err_put;
        }
    }
    status = UCT_STRATA_CUDA(strata_cuda.cuMemcpyDtoDAsync(dst, src, length, stream->stream));
    if (status != UCS_OK) {
        goto err_put;
    }
    status = UCT_STRATA_CUDA(strata_cuda.cuEventRecord(op->event, stream->stream));
    if (status != UCS_OK) {
        /* The copy is issued but cannot be tracked: wait for it, so that
         * failing the operation does not leave it writing behind our back. */
        (void)UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(stream->stream));
        goto err_put;
    }
    uct_gpu_ipc_cache_hold(uct_gpu_ipc_global_cache(), mapping);
    op->is_copy = 1;
    op->comp    = comp;
    op->mapping = mapping;
    ucs_queue_push(&stream->ops, &op->queue);
    ++iface->copies_in_flight;
    ++iface->ops_queued;
    return UCS_INPROGRESS;

err_put:
    ucs_mpool_put(op);
    return status;
}

static ucs_status_t uct_gpu_ipc_ep_copy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                        uint64_t remote_addr, uct_rkey_t uct_rkey,
                                        uct_completion_t *comp, int is_put)
{
    uct_gpu_ipc_ep_t *ep            = ucs_derived_of(tl_ep, uct_gpu_ipc_ep_t);
    uct_gpu_ipc_iface_t *iface      = ucs_derived_of(tl_ep->iface, uct_gpu_ipc_iface_t);
    const uct_gpu_ipc_rkey_t *rkey  = (const uct_gpu_ipc_rkey_t *)uct_rkey;
    size_t length                   = (iovcnt > 0) ? iov[0].length : 0;
    CUdeviceptr local, remote;
    ucs_status_t status;
    CUcontext saved;

    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, is_put ? "gpu_ipc put_zcopy" : "gpu_ipc get_zcopy");
    if (length == 0) {
        return UCS_OK;
    }
    status = uct_gpu_ipc_ep_translate(rkey, remote_addr, length, &remote);
    if (status != UCS_OK) {
        return status;
    }
    /* A syscall per operation, well below the driver calls that follow, so
     * that a survivor gets an error instead of touching a dead process's
     * memory (also when a new process has its pid). */
    if (uct_gpu_ipc_ep_owner_is_gone(ep, rkey)) {
        ucs_diag("gpu_ipc: ep %p: process %d (start time %" PRIu64 ") that owns 0x%" PRIx64
                 " has exited", ep, rkey->owner_pid, rkey->owner_start, remote_addr);
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    if (!uct_gpu_ipc_iface_has_resources(iface)) {
        return UCS_ERR_NO_RESOURCE;
    }

    local  = (CUdeviceptr)iov[0].buffer;
    status = uct_gpu_ipc_iface_ctx_enter(iface, local, &saved);
    if (status != UCS_OK) {
        return status;
    }
    if (ucs_unlikely(!iface->streams_created)) {
        status = uct_gpu_ipc_iface_create_streams(iface);
        if (status != UCS_OK) {
            goto out_leave;
        }
    }
    status = is_put ? uct_gpu_ipc_ep_issue_copy(iface, ep, rkey->entry, remote, local, length,
                                                comp) :
                      uct_gpu_ipc_ep_issue_copy(iface, ep, rkey->entry, local, remote, length,
                                                comp);
out_leave:
    uct_gpu_ipc_iface_ctx_leave(iface, saved);
    ucs_trace_data("gpu_ipc %s [length %zu] local %p remote 0x%" PRIx64 " (mapped 0x%llx): %s",
                   is_put ? "PUT_ZCOPY" : "GET_ZCOPY", length, iov[0].buffer, remote_addr,
                   (unsigned long long)remote, ucs_status_string(status));
    return status;
}

ucs_status_t uct_gpu_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    return uct_gpu_ipc_ep_copy(tl_ep, iov, iovcnt, remote_addr, rkey, comp, 1);
}

ucs_status_t uct_gpu_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    return uct_gpu_ipc_ep_copy(tl_ep, iov, iovcnt, remote_addr, rkey, comp, 0);
}

/* ---- pending and flush ---- */

ucs_status_t uct_gpu_ipc_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    uct_gpu_ipc_ep_t *ep            = ucs_derived_of(tl_ep, uct_gpu_ipc_ep_t);
    uct_gpu_ipc_iface_t *iface      = ucs_derived_of(tl_ep->iface, uct_gpu_ipc_iface_t);
    uct_gpu_ipc_pending_priv_t *priv = (uct_gpu_ipc_pending_priv_t *)req->priv;

    UCS_STATIC_ASSERT(sizeof(*priv) <= UCT_PENDING_REQ_PRIV_LEN);
    /* The only resource an operation can lack is an event (or its turn). */
    if (uct_gpu_ipc_iface_has_resources(iface)) {
        return UCS_ERR_BUSY;
    }
    priv->ep = ep;
    ucs_queue_push(&iface->pending_q, &priv->queue);
    ++ep->pending_count;
    return UCS_OK;
}

void uct_gpu_ipc_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg)
{
    uct_gpu_ipc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpu_ipc_ep_t);
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gpu_ipc_iface_t);
    uct_gpu_ipc_pending_priv_t *priv;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(priv, iter, &iface->pending_q, queue) {
        if (priv->ep != ep) {
            continue;
        }
        ucs_queue_del_iter(&iface->pending_q, iter);
        --ep->pending_count;
        if (cb != NULL) {
            cb(ucs_container_of(priv, uct_pending_req_t, priv), arg);
        }
    }
}

ucs_status_t uct_gpu_ipc_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_gpu_ipc_ep_t *ep         = ucs_derived_of(tl_ep, uct_gpu_ipc_ep_t);
    uct_gpu_ipc_iface_t *iface   = ucs_derived_of(tl_ep->iface, uct_gpu_ipc_iface_t);
    uct_gpu_ipc_stream_t *stream = &iface->streams[ep->stream_index];
    uct_gpu_ipc_op_t *marker;

    /* Copies in flight cannot be cancelled: with UCT_FLUSH_FLAG_CANCEL too
     * the flush completes when they do (the caller purges pending ones). */
    if ((ep->pending_count > 0) && !(flags & UCT_FLUSH_FLAG_CANCEL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ucs_queue_is_empty(&stream->ops)) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }
    /* Operations on a stream complete in order, and all of this endpoint's
     * are on this stream: the marker completes after the last of them. */
    marker = ucs_mpool_get(&iface->op_mp);
    if (marker == NULL) {
        ucs_error("gpu_ipc: no memory for a flush descriptor");
        return UCS_ERR_NO_MEMORY;
    }
    marker->is_copy = 0;
    marker->comp    = comp;
    marker->mapping = NULL;
    ucs_queue_push(&stream->ops, &marker->queue);
    ++iface->ops_queued;
    return UCS_INPROGRESS;
}
