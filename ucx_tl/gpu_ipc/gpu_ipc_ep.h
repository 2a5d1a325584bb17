/*
 * An endpoint of gpu_ipc: a peer process on this node (its pid is the
 * interface address).  Operations copy between a local device buffer and
 * the peer's allocation mapped by the rkey.
 */
#ifndef UCT_GPU_IPC_EP_H
#define UCT_GPU_IPC_EP_H

#include "gpu_ipc_iface.h"

#include <sys/types.h>

typedef struct uct_gpu_ipc_ep {
    uct_base_ep_t super;
    pid_t remote_pid;
    unsigned long remote_start; /* peer's start time: tells a recycled pid */
    int remote_pidfd;           /* the peer process itself (-1: no pidfd_open) */
    unsigned stream_index;      /* every operation of this endpoint goes there */
    unsigned pending_count;     /* its requests in the interface's pending queue */
    int failure_reported;
} uct_gpu_ipc_ep_t;

/* What a pending request holds in its priv[] while queued on the iface. */
typedef struct uct_gpu_ipc_pending_priv {
    ucs_queue_elem_t queue;
    uct_gpu_ipc_ep_t *ep;
} uct_gpu_ipc_pending_priv_t;

UCS_CLASS_DECLARE_NEW_FUNC(uct_gpu_ipc_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpu_ipc_ep_t, uct_ep_t);

ucs_status_t uct_gpu_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t uct_gpu_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t uct_gpu_ipc_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags);
void uct_gpu_ipc_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg);
ucs_status_t uct_gpu_ipc_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_gpu_ipc_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);

#endif /* UCT_GPU_IPC_EP_H */
