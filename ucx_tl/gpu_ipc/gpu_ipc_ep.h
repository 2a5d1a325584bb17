/*
 * An endpoint of gpu_ipc: a peer process on this node (its pid is the
 * interface address).  Operations copy between a local device buffer and
 * the peer's allocation mapped by the rkey.
 */
#ifndef UCT_GPU_IPC_EP_H
#define UCT_GPU_IPC_EP_H

#include "gpu_ipc_iface.h"
#include "../base/gpu_base_ep.h"

#include <sys/types.h>

/* Every operation of the endpoint goes to its queue (super.queue), one of
 * the iface's streams. */
typedef struct uct_gpu_ipc_ep {
    uct_gpu_base_ep_t super;
    pid_t remote_pid;
    unsigned long remote_start; /* peer's start time: tells a recycled pid */
    int remote_pidfd;           /* the peer process itself (-1: no pidfd_open) */
    int failure_reported;
} uct_gpu_ipc_ep_t;

UCS_CLASS_DECLARE_NEW_FUNC(uct_gpu_ipc_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpu_ipc_ep_t, uct_ep_t);

ucs_status_t uct_gpu_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t uct_gpu_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t uct_gpu_ipc_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);

/* Whether the endpoint's peer is the process at these addresses (NULL: not
 * given): the same host and PID namespace, and the same pid. */
int uct_gpu_ipc_ep_is_connected(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                const uct_iface_addr_t *iface_addr);

#endif /* UCT_GPU_IPC_EP_H */
