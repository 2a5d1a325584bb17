/*
 * gpu_ipc endpoints: put/get as asynchronous device copies, and detection
 * of a peer that has gone.  Pending requests, flush and fence are the base
 * endpoint's (base/gpu_base_ep.c).
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
    unsigned stream_index;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    stream_index = iface->next_stream++ % iface->super.num_queues;
    UCS_CLASS_CALL_SUPER_INIT(uct_gpu_base_ep_t, &iface->super,
                              &iface->super.queues[stream_index]);

    self->remote_pid       = *(const pid_t *)params->iface_addr;
    /* The start time is read after pidfd_open, so that a match with a key's
     * owner_start means the pidfd is that process (see gpu_ipc_md.c). */
    self->remote_pidfd     = (int)syscall(SYS_pidfd_open, self->remote_pid, 0);
    self->remote_start     = ucs_sys_get_proc_create_time(self->remote_pid);
    self->failure_reported = 0;
    if (self->remote_start == 0) {
        ucs_diag("gpu_ipc: peer process %d is not running", self->remote_pid);
        if (self->remote_pidfd >= 0) {
            close(self->remote_pidfd);
        }
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    ucs_debug("gpu_ipc: ep %p to pid %d uses stream %u", self, self->remote_pid, stream_index);
    return UCS_OK;
}

static int uct_gpu_ipc_ep_is_failure_cb(const ucs_callbackq_elem_t *elem, void *arg);

/* The base purges the ep's pending requests. */
static UCS_CLASS_CLEANUP_FUNC(uct_gpu_ipc_ep_t)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(self->super.super.super.iface,
                                                uct_gpu_ipc_iface_t);

    uct_strata_oneshot_remove(&iface->super.super.worker->super.progress_q, self,
                              uct_gpu_ipc_ep_is_failure_cb, self);
    if (self->remote_pidfd >= 0) {
        close(self->remote_pidfd);
    }
}

UCS_CLASS_DEFINE(uct_gpu_ipc_ep_t, uct_gpu_base_ep_t)
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

    uct_iface_handle_ep_err(ep->super.super.super.iface, &ep->super.super.super,
                            UCS_ERR_ENDPOINT_TIMEOUT);
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

    UCT_STRATA_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
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
        uct_strata_oneshot_add(&iface->super.super.worker->super.progress_q, ep,
                               uct_gpu_ipc_ep_failure_progress, ep);
    }
    return UCS_OK;
}

int uct_gpu_ipc_ep_is_connected(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                const uct_iface_addr_t *iface_addr)
{
    const uct_gpu_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpu_ipc_ep_t);

    if ((dev_addr != NULL) &&
        !uct_strata_iface_local_is_reachable(dev_addr, UCS_SYS_NS_TYPE_PID, NULL, 0)) {
        return 0;
    }
    return (iface_addr == NULL) || (*(const pid_t *)iface_addr == ep->remote_pid);
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
 * a reference on the mapping that the completion releases.  The iface's
 * context is current. */
static ucs_status_t uct_gpu_ipc_ep_issue_copy(uct_gpu_ipc_iface_t *iface, uct_gpu_ipc_ep_t *ep,
                                              uct_gpu_ipc_cache_entry_t *mapping, CUdeviceptr dst,
                                              CUdeviceptr src, size_t length, int local_is_host,
                                              int detour, uct_completion_t *comp)
{
    uct_gpu_base_queue_t *queue = ep->super.queue;
    unsigned held               = 0;
    uct_gpu_ipc_op_t *ipc_op;
    uct_gpu_base_op_t *op;
    ucs_status_t status;

    status = uct_gpu_base_iface_op_get(&iface->super, queue, &op);
    if (status != UCS_OK) {
        return status;
    }
    if (detour) {
        held = uct_gpu_ipc_detour_copy(&iface->detour, queue->stream, dst, src, length, &status);
    }
    if ((status == UCS_OK) && (held == 0)) {
        /* Local host memory (UCX_STRATA_IPC_HOST): one copy between it and
         * the peer's device memory; from pageable memory the driver stages
         * it. */
        status = local_is_host ?
                     UCT_STRATA_CUDA(strata_cuda.cuMemcpyAsync(dst, src, length, queue->stream)) :
                     UCT_STRATA_CUDA(strata_cuda.cuMemcpyDtoDAsync(dst, src, length,
                                                                   queue->stream));
    }
    if (status != UCS_OK) {
        ucs_mpool_put(op);
        return status;
    }
    status = uct_gpu_base_iface_op_push(&iface->super, queue, op, comp);
    if (status == UCS_INPROGRESS) {
        uct_gpu_ipc_cache_hold(uct_gpu_ipc_global_cache(), mapping);
        ipc_op              = ucs_derived_of(op, uct_gpu_ipc_op_t);
        ipc_op->mapping     = mapping;
        ipc_op->detour_held = held;
        ipc_op->detour      = &iface->detour;
    } else {
        /* Not tracked: the push synchronized the stream, the slot is free. */
        uct_gpu_ipc_detour_release(&iface->detour, held);
    }
    return status;
}

/* Whether a copy of `length` bytes may take the detour through host memory
 * (gpu_ipc_detour.h): small, and no MPS. */
static int uct_gpu_ipc_ep_may_detour(const uct_gpu_ipc_iface_t *iface, size_t length)
{
    return !iface->mps && (length <= iface->detour.max);
}

/* ---- the peer's host memory (HOST keys, gpu_ipc_stage.h) ---- */

/*
 * Local device memory to or from the peer's host memory, staged.  A get
 * completes through the endpoint's queue, behind its last copy; a put is
 * done when it returns.  The interface's context is current.
 */
static ucs_status_t uct_gpu_ipc_ep_staged(uct_gpu_ipc_iface_t *iface, uct_gpu_ipc_ep_t *ep,
                                          const uct_gpu_ipc_rkey_t *rkey, CUdeviceptr local,
                                          uint64_t remote, size_t length, int is_put,
                                          uct_completion_t *comp)
{
    uct_gpu_base_queue_t *queue = ep->super.queue;
    uct_gpu_base_op_t *op;
    ucs_status_t status;

    if (is_put) {
        status = uct_gpu_base_iface_stream_get(&queue->stream);
        if (status == UCS_OK) {
            status = uct_gpu_base_iface_fence_wait(&iface->super, queue->stream);
        }
        if (status == UCS_OK) {
            status = uct_gpu_ipc_stage_put(&iface->stage, queue->stream, rkey->owner_pid, local,
                                           remote, length);
        }
        return status;
    }
    status = uct_gpu_base_iface_op_get(&iface->super, queue, &op);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_gpu_ipc_stage_get(&iface->stage, queue->stream, rkey->owner_pid, local, remote,
                                   length);
    if (status != UCS_OK) {
        ucs_mpool_put(op);
        return status;
    }
    ucs_derived_of(op, uct_gpu_ipc_op_t)->mapping = NULL;
    return uct_gpu_base_iface_op_push(&iface->super, queue, op, comp);
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
    int local_is_host, ordinal, detour;
    ucs_status_t status;
    CUcontext restore;

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
    if (!uct_gpu_base_iface_has_resources(&iface->super)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super.super);
        return UCS_ERR_NO_RESOURCE;
    }

    /* The local buffer's kind costs a driver call: asked only where it can
     * be host memory (host keys, UCX_STRATA_IPC_HOST) or decides the detour. */
    local         = (CUdeviceptr)iov[0].buffer;
    local_is_host = 0;
    ordinal       = -1;
    if (rkey->is_host || iface->host_keys || uct_gpu_ipc_ep_may_detour(iface, length)) {
        local_is_host = (strata_mem_kind(iov[0].buffer, &ordinal) == STRATA_MEM_HOST);
    }
    if (rkey->is_host && local_is_host) {
        /* Host to host: CMA, done when it returns. */
        return uct_gpu_ipc_stage_cma(rkey->owner_pid, iov[0].buffer, remote_addr, length, is_put);
    }
    status = uct_gpu_base_iface_ctx_enter(&iface->super, local_is_host ? 0 : local, &restore);
    if (status != UCS_OK) {
        return status;
    }
    /* Both buffers on one GPU (ordinal is -1 unless may_detour asked it). */
    detour = !local_is_host && !rkey->is_host && (ordinal >= 0) &&
             uct_gpu_ipc_ep_may_detour(iface, length) &&
             (uct_gpu_ipc_rkey_ordinal((uct_gpu_ipc_rkey_t *)rkey) == ordinal);
    if (rkey->is_host) {
        status = uct_gpu_ipc_ep_staged(iface, ep, rkey, local, remote_addr, length, is_put, comp);
    } else if (is_put) {
        status = uct_gpu_ipc_ep_issue_copy(iface, ep, rkey->entry, remote, local, length,
                                           local_is_host, detour, comp);
    } else {
        status = uct_gpu_ipc_ep_issue_copy(iface, ep, rkey->entry, local, remote, length,
                                           local_is_host, detour, comp);
    }
    uct_gpu_base_iface_ctx_leave(restore);
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
