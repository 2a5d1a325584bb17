/*
 * gpu_copy endpoint: a loopback to the memory of the endpoint's own process.
 * "Remote" addresses are addresses in this process, host or GPU; the
 * endpoint holds no state of its own, its copies are queued on the iface.
 */
#ifndef UCT_GPU_COPY_EP_H
#define UCT_GPU_COPY_EP_H

#include "gpu_copy_iface.h"
#include "../base/gpu_base_ep.h"

#include <uct/base/uct_iface.h>
#include <ucs/type/class.h>

/* Its copies go to the iface's queue of their direction (queue NULL). */
typedef struct uct_gpu_copy_ep {
    uct_gpu_base_ep_t super;
} uct_gpu_copy_ep_t;

UCS_CLASS_DECLARE_NEW_FUNC(uct_gpu_copy_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpu_copy_ep_t, uct_ep_t);

ucs_status_t uct_gpu_copy_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                       uint64_t remote_addr, uct_rkey_t rkey);

ucs_status_t uct_gpu_copy_ep_get_short(uct_ep_h tl_ep, void *buffer, unsigned length,
                                       uint64_t remote_addr, uct_rkey_t rkey);

ucs_status_t uct_gpu_copy_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);

ucs_status_t uct_gpu_copy_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);

#endif /* UCT_GPU_COPY_EP_H */
