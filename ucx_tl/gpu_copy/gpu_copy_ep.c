/*
 * gpu_copy endpoint: the copies.  Short operations are synchronous on the
 * iface's short stream; zero-copy operations are queued on the base
 * iface's queue of their direction and completed by its progress.
 */
#include "gpu_copy_ep.h"

#include <ucs/debug/log.h>
#include <ucs/type/class.h>

#include <inttypes.h>
#include <string.h>

static UCS_CLASS_INIT_FUNC(uct_gpu_copy_ep_t, const uct_ep_params_t *params)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(params->iface, uct_gpu_copy_iface_t);
    const uct_device_addr_t *dev_addr;

    /* Checked even without UCX's parameter checks: the address is read. */
    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) || (params->iface_addr == NULL)) {
        ucs_error("gpu_copy: an endpoint is created from its peer's interface address");
        return UCS_ERR_INVALID_PARAM;
    }
    dev_addr = (params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ? params->dev_addr : NULL;
    if (!uct_iface_is_reachable(&iface->super.super.super, dev_addr, params->iface_addr)) {
        ucs_error("gpu_copy: the peer interface belongs to another process");
        return UCS_ERR_UNREACHABLE;
    }
    UCS_CLASS_CALL_SUPER_INIT(uct_gpu_base_ep_t, &iface->super, NULL);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpu_copy_ep_t)
{
}

UCS_CLASS_DEFINE(uct_gpu_copy_ep_t, uct_gpu_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gpu_copy_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpu_copy_ep_t, uct_ep_t);

static uct_gpu_copy_iface_t *uct_gpu_copy_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, uct_gpu_copy_iface_t);
}

/*
 * Which stream a copy goes to, from the memory types of its two sides, and
 * a GPU pointer to pick a context by if the thread has none.  The driver
 * copies any direction with one call under unified addressing; the
 * direction only keeps independent copies on independent engines.
 */
static ucs_status_t uct_gpu_copy_ep_direction(void *dst, const void *src, size_t length,
                                              uct_gpu_copy_dir_t *dir_p, CUdeviceptr *gpu_ptr_p)
{
    uct_strata_mem_info_t src_info, dst_info;
    ucs_status_t status;
    int src_gpu, dst_gpu;

    status = uct_strata_mem_info_get(src, length, &src_info);
    if (status == UCS_OK) {
        status = uct_strata_mem_info_get(dst, length, &dst_info);
    }
    if (status != UCS_OK) {
        ucs_error("gpu_copy: copy of %zu bytes %p -> %p: %s", length, src, dst,
                  ucs_status_string(status));
        return status;
    }
    src_gpu    = (src_info.mem_type != UCS_MEMORY_TYPE_HOST);
    dst_gpu    = (dst_info.mem_type != UCS_MEMORY_TYPE_HOST);
    *dir_p     = (uct_gpu_copy_dir_t)((src_gpu << 1) | dst_gpu);
    *gpu_ptr_p = dst_gpu ? (CUdeviceptr)dst : (src_gpu ? (CUdeviceptr)src : 0);
    return UCS_OK;
}

/* Queues one copy and its event; UCS_INPROGRESS until progress sees it. */
static ucs_status_t uct_gpu_copy_ep_post(uct_ep_h tl_ep, void *dst, const void *src, size_t length,
                                         uct_completion_t *comp)
{
    uct_gpu_copy_iface_t *iface = uct_gpu_copy_ep_iface(tl_ep);
    uct_gpu_base_queue_t *queue;
    uct_gpu_base_op_t *op;
    uct_gpu_copy_dir_t dir;
    CUdeviceptr gpu_ptr;
    CUcontext restore;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }
    if (!uct_gpu_base_iface_has_resources(&iface->super)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super.super);
        return UCS_ERR_NO_RESOURCE;
    }
    status = uct_gpu_copy_ep_direction(dst, src, length, &dir, &gpu_ptr);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_gpu_base_iface_ctx_enter(&iface->super, gpu_ptr, &restore);
    if (status != UCS_OK) {
        return status;
    }
    queue  = &iface->super.queues[dir];
    status = uct_gpu_base_iface_op_get(&iface->super, queue, &op);
    if (status != UCS_OK) {
        goto out_leave;
    }
    status = UCT_STRATA_CUDA(strata_cuda.cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, length,
                                                       queue->stream));
    if (status != UCS_OK) {
        ucs_mpool_put(op);
        goto out_leave;
    }
    status = uct_gpu_base_iface_op_push(&iface->super, queue, op, comp);
out_leave:
    uct_gpu_base_iface_ctx_leave(restore);
    return status;
}

/* The pinned buffer short copies of `length` bytes go through, or NULL
 * (longer than it, switched off, or it cannot be had: then directly). */
static void *uct_gpu_copy_ep_short_bounce(uct_gpu_copy_iface_t *iface, size_t length)
{
    if (length > iface->config.short_bounce) {
        return NULL;
    }
    if ((iface->short_bounce == NULL) &&
        (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                              strata_cuda.cuMemHostAlloc(&iface->short_bounce,
                                                         iface->config.short_bounce,
                                                         CU_MEMHOSTALLOC_PORTABLE)) != UCS_OK)) {
        iface->short_bounce        = NULL;
        iface->config.short_bounce = 0; /* do not ask again */
    }
    return iface->short_bounce;
}

/*
 * A short copy: done when this returns.  It runs on its own stream so that
 * waiting for it does not wait for queued zero-copy operations (UCT orders
 * them only across a fence) nor for the application's work on the GPU.
 * It takes no descriptor, so it is never refused for lack of one: UCP's
 * pack/unpack through memory-type endpoints treats any status but UCS_OK
 * as a failed message.  The host side (UCT's short operations take CPU
 * memory) goes through the pinned short bounce buffer when it fits: one
 * DMA and a memcpy of at most a few KiB, where pageable memory would make
 * the driver stage the copy itself.
 */
static ucs_status_t uct_gpu_copy_ep_copy_sync(uct_ep_h tl_ep, void *dst, const void *src,
                                              size_t length, CUdeviceptr gpu_ptr, int to_gpu)
{
    uct_gpu_copy_iface_t *iface = uct_gpu_copy_ep_iface(tl_ep);
    CUcontext restore;
    ucs_status_t status;
    void *bounce;

    if (length == 0) {
        return UCS_OK;
    }
    status = uct_gpu_base_iface_ctx_enter(&iface->super, gpu_ptr, &restore);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_gpu_base_iface_stream_get(&iface->short_stream);
    if (status != UCS_OK) {
        goto out_leave;
    }
    status = uct_gpu_base_iface_fence_wait(&iface->super, iface->short_stream);
    if (status != UCS_OK) {
        goto out_leave;
    }
    bounce = uct_gpu_copy_ep_short_bounce(iface, length);
    if ((bounce != NULL) && to_gpu) {
        memcpy(bounce, src, length);
        src = bounce;
    }
    status = UCT_STRATA_CUDA(strata_cuda.cuMemcpyAsync((CUdeviceptr)(((bounce != NULL) && !to_gpu) ?
                                                                         bounce :
                                                                         dst),
                                                       (CUdeviceptr)src, length,
                                                       iface->short_stream));
    if (status != UCS_OK) {
        goto out_leave;
    }
    status = UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(iface->short_stream));
    if ((status == UCS_OK) && (bounce != NULL) && !to_gpu) {
        memcpy(dst, bounce, length);
    }
out_leave:
    uct_gpu_base_iface_ctx_leave(restore);
    return status;
}

ucs_status_t uct_gpu_copy_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    ucs_status_t status;

    status = uct_gpu_copy_ep_copy_sync(tl_ep, (void *)remote_addr, buffer, length,
                                       (CUdeviceptr)remote_addr, 1);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, SHORT, length);
    ucs_trace_data("gpu_copy PUT_SHORT %u bytes %p -> 0x%" PRIx64 ": %s", length, buffer,
                   remote_addr, ucs_status_string(status));
    return status;
}

ucs_status_t uct_gpu_copy_ep_get_short(uct_ep_h tl_ep, void *buffer, unsigned length,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    ucs_status_t status;

    status = uct_gpu_copy_ep_copy_sync(tl_ep, buffer, (const void *)remote_addr, length,
                                       (CUdeviceptr)remote_addr, 0);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, SHORT, length);
    ucs_trace_data("gpu_copy GET_SHORT %u bytes 0x%" PRIx64 " -> %p: %s", length, remote_addr,
                   buffer, ucs_status_string(status));
    return status;
}

/* max_iov is 1; a strided entry is nothing UCP sends and not supported. */
static ucs_status_t uct_gpu_copy_ep_iov_length(const uct_iov_t *iov, size_t iovcnt,
                                               size_t *length_p)
{
    if ((iovcnt == 0) || (iov[0].count == 0)) {
        *length_p = 0;
        return UCS_OK;
    }
    if ((iovcnt > 1) || (iov[0].count > 1)) {
        ucs_error("gpu_copy: %zu iov entries of %u elements (supported: one contiguous)", iovcnt,
                  iov[0].count);
        return UCS_ERR_UNSUPPORTED;
    }
    *length_p = iov[0].length;
    return UCS_OK;
}

ucs_status_t uct_gpu_copy_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp)
{
    ucs_status_t status;
    size_t length;

    status = uct_gpu_copy_ep_iov_length(iov, iovcnt, &length);
    if ((status != UCS_OK) || (length == 0)) {
        return status;
    }
    status = uct_gpu_copy_ep_post(tl_ep, (void *)remote_addr, iov[0].buffer, length, comp);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t), PUT, ZCOPY,
                                 length);
    ucs_trace_data("gpu_copy PUT_ZCOPY %zu bytes %p -> 0x%" PRIx64 ": %s", length,
                   iov[0].buffer, remote_addr, ucs_status_string(status));
    return status;
}

ucs_status_t uct_gpu_copy_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp)
{
    ucs_status_t status;
    size_t length;

    status = uct_gpu_copy_ep_iov_length(iov, iovcnt, &length);
    if ((status != UCS_OK) || (length == 0)) {
        return status;
    }
    status = uct_gpu_copy_ep_post(tl_ep, iov[0].buffer, (const void *)remote_addr, length, comp);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t), GET, ZCOPY,
                                 length);
    ucs_trace_data("gpu_copy GET_ZCOPY %zu bytes 0x%" PRIx64 " -> %p: %s", length, remote_addr,
                   iov[0].buffer, ucs_status_string(status));
    return status;
}
