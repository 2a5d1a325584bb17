/*
 * gpu_ipc interfaces: settings, addressing, performance estimates, streams
 * and events, progress (see gpu_ipc_iface.h).
 */
#include "gpu_ipc_iface.h"
#include "gpu_ipc_ep.h"
#include "gpu_ipc_md.h"

#include <common/strata_nvml.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/type/class.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

/*
 * Bandwidth estimates, by what connects the two GPUs (bytes per second of
 * one copy; UCP ranks lanes and splits messages by them):
 *  - same device (ranks sharing a GPU): the copy reads and writes device
 *    memory; cuMemcpyDtoD reaches ~40% of HBM peak, 350 GB/s on a V100
 *    (900 GB/s HBM2) and more on later parts.  300 GB/s is a floor.
 *  - NVLink: 25 GB/s per link and direction for NVLink 2, 3 and 4, of which
 *    copies see ~80%, so 20 GB/s per active link of the local GPU (NVSwitch
 *    systems give every pair all the links; direct meshes split them, so
 *    this is optimistic there but still ranks NVLink above PCIe).
 *  - PCIe: Gen4 x16 moves ~25 GB/s, Gen3 x16 ~12; 20 GB/s between.  Also
 *    the guess when NVML is missing.
 */
#define UCT_GPU_IPC_BW_SAME_DEVICE (300.0 * UCS_GBYTE)
#define UCT_GPU_IPC_BW_PER_NVLINK  (20.0 * UCS_GBYTE)
#define UCT_GPU_IPC_BW_PCIE        (20.0 * UCS_GBYTE)

static ucs_config_field_t uct_gpu_ipc_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_gpu_ipc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"MAX_STREAMS", "4",
     "Number of CUDA streams copies are issued on. Each endpoint uses one, assigned\n"
     "round-robin, so transfers to different peers overlap (at most "
     UCS_PP_MAKE_STRING(UCT_GPU_IPC_MAX_STREAMS_CAP) ").",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, max_streams), UCS_CONFIG_TYPE_UINT},

    {"MAX_POLL", "16",
     "Most completed copies one progress call reports.",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, max_poll), UCS_CONFIG_TYPE_UINT},

    {"MAX_EVENTS", "inf",
     "Most copies in flight on an interface (each holds a CUDA event); more wait\n"
     "in the pending queue.",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, max_events), UCS_CONFIG_TYPE_UINT},

    {"BW", "auto",
     "Bandwidth UCP assumes for a copy. 'auto': 300 GB/s if only one GPU is visible\n"
     "(peers share it), else 20 GB/s per active NVLink when NVML reports NVLink to\n"
     "every other GPU, else 20 GB/s (PCIe).",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, bandwidth), UCS_CONFIG_TYPE_BW},

    {"LATENCY", "3us",
     "Latency UCP assumes for a copy: a driver call to issue it and an event to\n"
     "see it complete.",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, latency), UCS_CONFIG_TYPE_TIME},

    {"OVERHEAD", "2us",
     "CPU time UCP assumes for issuing a copy (cuMemcpyDtoDAsync and cuEventRecord).",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, overhead), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpu_ipc_iface_t, uct_iface_t);

/* ---- addressing ---- */

/* Peers address each other by pid, so they must share a pid namespace. */
static size_t uct_gpu_ipc_iface_device_addr_len(void)
{
    return ucs_sys_ns_is_default(UCS_SYS_NS_TYPE_PID) ? sizeof(uct_iface_local_addr_base_t) :
                                                        sizeof(uct_iface_local_addr_ns_t);
}

static ucs_status_t uct_gpu_ipc_iface_get_device_address(uct_iface_t *tl_iface,
                                                         uct_device_addr_t *addr)
{
    uct_iface_get_local_address((uct_iface_local_addr_ns_t *)addr, UCS_SYS_NS_TYPE_PID);
    return UCS_OK;
}

static ucs_status_t uct_gpu_ipc_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    *(pid_t *)addr = getpid();
    return UCS_OK;
}

static int uct_gpu_ipc_iface_is_reachable(const uct_iface_h tl_iface,
                                          const uct_device_addr_t *dev_addr,
                                          const uct_iface_addr_t *iface_addr)
{
    /* Another process on this node: the driver does not open a process's
     * own IPC handles, and gpu_copy serves copies within one process. */
    return uct_iface_local_is_reachable((uct_iface_local_addr_ns_t *)dev_addr,
                                        UCS_SYS_NS_TYPE_PID) &&
           (*(const pid_t *)iface_addr != getpid());
}

/* ---- performance ---- */

static int uct_gpu_ipc_bus_id(int ordinal, char *bus_id, size_t max)
{
    CUdevice dev;

    return (strata_cuda.cuDeviceGet(&dev, ordinal) == CUDA_SUCCESS) &&
           (strata_cuda.cuDeviceGetPCIBusId(bus_id, (int)max, dev) == CUDA_SUCCESS);
}

/*
 * The link to the other visible GPUs: NVLink only if NVML says so for every
 * one of them, since the peer's GPU is not known when UCP asks.
 */
static strata_gpu_link_t uct_gpu_ipc_iface_peer_link(int device, int count)
{
    char bus_id[32], peer_bus_id[32];
    strata_gpu_link_t link;
    int peer;

    if (!uct_gpu_ipc_bus_id(device, bus_id, sizeof(bus_id))) {
        return STRATA_GPU_LINK_UNKNOWN;
    }
    for (peer = 0; peer < count; ++peer) {
        if (peer == device) {
            continue;
        }
        if (!uct_gpu_ipc_bus_id(peer, peer_bus_id, sizeof(peer_bus_id))) {
            return STRATA_GPU_LINK_UNKNOWN;
        }
        link = strata_nvml_gpu_link(bus_id, peer_bus_id);
        if (link != STRATA_GPU_LINK_NVLINK) {
            return link;
        }
    }
    return STRATA_GPU_LINK_NVLINK;
}

static double uct_gpu_ipc_iface_estimate_bw(const uct_gpu_ipc_iface_t *iface)
{
    int count = strata_cuda_device_count();
    char bus_id[32];
    unsigned links;
    strata_gpu_link_t link;
    double bw;

    /* A peer whose GPU this process cannot see is unreachable (its handles
     * do not open), so with one visible GPU every peer shares it. */
    if (count <= 1) {
        ucs_debug("gpu_ipc gpu%d: one visible GPU, peers share it: %.0f MB/s", iface->device,
                  UCT_GPU_IPC_BW_SAME_DEVICE / UCS_MBYTE);
        return UCT_GPU_IPC_BW_SAME_DEVICE;
    }
    link = uct_gpu_ipc_iface_peer_link(iface->device, count);
    if (link == STRATA_GPU_LINK_NVLINK) {
        links = uct_gpu_ipc_bus_id(iface->device, bus_id, sizeof(bus_id)) ?
                        strata_nvml_active_nvlinks(bus_id) : 0;
        bw    = ucs_min(ucs_max(links, 1) * UCT_GPU_IPC_BW_PER_NVLINK, UCT_GPU_IPC_BW_SAME_DEVICE);
    } else {
        bw = UCT_GPU_IPC_BW_PCIE;
    }
    ucs_debug("gpu_ipc gpu%d: %s to the other GPUs%s%s: %.0f MB/s", iface->device,
              strata_gpu_link_name(link), (strata_nvml_load() == 0) ? "" : ", NVML: ",
              strata_nvml_error(), bw / UCS_MBYTE);
    return bw;
}

static ucs_status_t uct_gpu_ipc_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *iface_attr)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_ipc_iface_t);

    uct_base_iface_query(&iface->super, iface_attr);
    iface_attr->iface_addr_len  = sizeof(pid_t);
    iface_attr->device_addr_len = uct_gpu_ipc_iface_device_addr_len();
    iface_attr->ep_addr_len     = 0;
    iface_attr->max_conn_priv   = 0;
    iface_attr->cap.flags       = UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                                  UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                  UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                                  UCT_IFACE_FLAG_EP_CHECK;
    /* No wakeup: completions are seen by polling events. */
    iface_attr->cap.event_flags = 0;

    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = ULONG_MAX;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = 1;

    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = ULONG_MAX;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = 1;

    iface_attr->latency             = ucs_linear_func_make(iface->config.latency, 0);
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = iface->config.bandwidth;
    iface_attr->overhead            = iface->config.overhead;
    iface_attr->priority            = 0;
    return UCS_OK;
}

/* ---- context, streams, progress ---- */

ucs_status_t uct_gpu_ipc_iface_create_streams(uct_gpu_ipc_iface_t *iface)
{
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < iface->config.max_streams; ++i) {
        /* Non-blocking: the application's legacy default stream must not
         * serialize with our copies. */
        status = UCT_STRATA_CUDA(strata_cuda.cuStreamCreate(&iface->streams[i].stream,
                                                            CU_STREAM_NON_BLOCKING));
        if (status != UCS_OK) {
            goto err_destroy;
        }
    }
    iface->streams_created = 1;
    return UCS_OK;

err_destroy:
    while (i-- > 0) {
        (void)UCT_STRATA_CUDA(strata_cuda.cuStreamDestroy(iface->streams[i].stream));
        iface->streams[i].stream = NULL;
    }
    return status;
}

ucs_status_t uct_gpu_ipc_iface_ctx_enter(uct_gpu_ipc_iface_t *iface, CUdeviceptr hint,
                                         CUcontext *saved)
{
    CUcontext current = NULL;

    (void)UCT_STRATA_CUDA(strata_cuda.cuCtxGetCurrent(&current));
    if (iface->ctx == NULL) {
        if ((current == NULL) && (strata_cuda_ctx_ensure(hint) != 0)) {
            ucs_error("gpu_ipc: no CUDA context to copy in, and none could be made current");
            return UCS_ERR_NO_DEVICE;
        }
        (void)UCT_STRATA_CUDA(strata_cuda.cuCtxGetCurrent(&current));
        iface->ctx = current;
    }
    *saved = current;
    if ((current != iface->ctx) &&
        (UCT_STRATA_CUDA(strata_cuda.cuCtxSetCurrent(iface->ctx)) != UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

void uct_gpu_ipc_iface_ctx_leave(uct_gpu_ipc_iface_t *iface, CUcontext saved)
{
    if (saved != iface->ctx) {
        (void)UCT_STRATA_CUDA(strata_cuda.cuCtxSetCurrent(saved));
    }
}

void uct_gpu_ipc_iface_op_release(uct_gpu_ipc_op_t *op)
{
    if (op->mapping != NULL) {
        /* Last, after the completion: the copy no longer touches the peer's
         * memory, and this may be the reference that unmaps it. */
        uct_gpu_ipc_cache_put(uct_gpu_ipc_global_cache(), op->mapping);
        op->mapping = NULL;
    }
    ucs_mpool_put(op);
}

void uct_gpu_ipc_iface_dispatch_pending(uct_gpu_ipc_iface_t *iface)
{
    uct_gpu_ipc_pending_priv_t *priv;
    uct_pending_req_t *req;
    ucs_status_t status;

    iface->in_dispatch = 1;
    while (!ucs_queue_is_empty(&iface->pending_q) &&
           (iface->copies_in_flight < iface->config.max_events)) {
        priv = ucs_queue_pull_elem_non_empty(&iface->pending_q, uct_gpu_ipc_pending_priv_t,
                                             queue);
        --priv->ep->pending_count;
        req    = ucs_container_of(priv, uct_pending_req_t, priv);
        status = req->func(req);
        if (status != UCS_OK) {
            /* Not done: first in line again, tried on the next progress. */
            ucs_queue_push_head(&iface->pending_q, &priv->queue);
            ++priv->ep->pending_count;
            break;
        }
    }
    iface->in_dispatch = 0;
}

/*
 * Completes the finished operations at the head of one stream, in order;
 * with fail != UCS_OK, every operation of the stream, with that status,
 * without asking the driver.
 */
static unsigned uct_gpu_ipc_iface_progress_stream(uct_gpu_ipc_iface_t *iface,
                                                  uct_gpu_ipc_stream_t *stream, unsigned max,
                                                  ucs_status_t fail)
{
    unsigned count = 0;
    uct_gpu_ipc_op_t *op;
    ucs_status_t status;

    while ((count < max) && !ucs_queue_is_empty(&stream->ops)) {
        op     = ucs_queue_head_elem_non_empty(&stream->ops, uct_gpu_ipc_op_t, queue);
        status = fail;
        if (op->is_copy) {
            if (fail == UCS_OK) {
                status = UCT_STRATA_CUDA(strata_cuda.cuEventQuery(op->event));
            }
            if (status == UCS_INPROGRESS) {
                break;
            }
            --iface->copies_in_flight;
        }
        ucs_queue_pull_non_empty(&stream->ops);
        --iface->ops_queued;
        if (op->comp != NULL) {
            uct_invoke_completion(op->comp, status);
        }
        uct_gpu_ipc_iface_op_release(op);
        ++count;
    }
    return count;
}

static unsigned uct_gpu_ipc_iface_progress(uct_iface_h tl_iface)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_ipc_iface_t);
    unsigned count             = 0;
    CUcontext saved;
    unsigned i;

    if ((iface->ops_queued > 0) && (uct_gpu_ipc_iface_ctx_enter(iface, 0, &saved) == UCS_OK)) {
        for (i = 0; (i < iface->config.max_streams) && (count < iface->config.max_poll); ++i) {
            count += uct_gpu_ipc_iface_progress_stream(iface, &iface->streams[i],
                                                       iface->config.max_poll - count, UCS_OK);
        }
        uct_gpu_ipc_iface_ctx_leave(iface, saved);
    } else if (iface->ops_queued > 0) {
        /* The context is gone (destroyed by the application, or the driver
         * failed): no event can be asked again.  Every operation completes
         * with an error rather than never. */
        ucs_error("gpu_ipc: cannot enter the CUDA context of iface %p: failing %u operations",
                  iface, iface->ops_queued);
        for (i = 0; i < iface->config.max_streams; ++i) {
            count += uct_gpu_ipc_iface_progress_stream(iface, &iface->streams[i], UINT_MAX,
                                                       UCS_ERR_IO_ERROR);
        }
    }
    /* Also with nothing completed now: a request that could not post last
     * time (it came back NO_RESOURCE) must be tried again. */
    if (!ucs_queue_is_empty(&iface->pending_q)) {
        uct_gpu_ipc_iface_dispatch_pending(iface);
    }
    return count;
}

static ucs_status_t uct_gpu_ipc_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                            uct_completion_t *comp)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_ipc_iface_t);

    /* As UCX's transports without a flush completion: the caller polls. */
    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return (iface->ops_queued == 0) ? UCS_OK : UCS_INPROGRESS;
}

static uct_iface_ops_t uct_gpu_ipc_iface_ops = {
    .ep_put_zcopy             = uct_gpu_ipc_ep_put_zcopy,
    .ep_get_zcopy             = uct_gpu_ipc_ep_get_zcopy,
    .ep_pending_add           = uct_gpu_ipc_ep_pending_add,
    .ep_pending_purge         = uct_gpu_ipc_ep_pending_purge,
    .ep_flush                 = uct_gpu_ipc_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    .ep_check                 = uct_gpu_ipc_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpu_ipc_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_ipc_ep_t),
    .iface_flush              = uct_gpu_ipc_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gpu_ipc_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_ipc_iface_t),
    .iface_query              = uct_gpu_ipc_iface_query,
    .iface_get_device_address = uct_gpu_ipc_iface_get_device_address,
    .iface_get_address        = uct_gpu_ipc_iface_get_address,
    .iface_is_reachable       = uct_gpu_ipc_iface_is_reachable,
};

static void uct_gpu_ipc_op_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    memset(obj, 0, sizeof(uct_gpu_ipc_op_t));
}

static void uct_gpu_ipc_op_cleanup(ucs_mpool_t *mp, void *obj)
{
    uct_gpu_ipc_op_t *op = obj;

    /* Runs in the interface's cleanup, with its context current. */
    if (op->event != NULL) {
        (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuEventDestroy(op->event));
    }
}

static ucs_mpool_ops_t uct_gpu_ipc_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = uct_gpu_ipc_op_init,
    .obj_cleanup   = uct_gpu_ipc_op_cleanup,
    .obj_str       = NULL,
};

/* ---- life cycle ---- */

static ucs_status_t uct_gpu_ipc_iface_check_config(const uct_gpu_ipc_iface_config_t *config)
{
    if ((config->max_streams == 0) || (config->max_streams > UCT_GPU_IPC_MAX_STREAMS_CAP)) {
        ucs_error("UCX_GPU_IPC_MAX_STREAMS=%u: must be 1..%d", config->max_streams,
                  UCT_GPU_IPC_MAX_STREAMS_CAP);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->max_poll == 0) || (config->max_events == 0)) {
        ucs_error("UCX_GPU_IPC_MAX_POLL and UCX_GPU_IPC_MAX_EVENTS must be at least 1");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_gpu_ipc_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params, const uct_iface_config_t *tl_config)
{
    const uct_gpu_ipc_iface_config_t *config = ucs_derived_of(tl_config,
                                                              uct_gpu_ipc_iface_config_t);
    ucs_status_t status;
    unsigned i;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_gpu_ipc_iface_ops,
                              &uct_base_iface_internal_ops, md, worker, params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                                      UCS_STATS_ARG(UCT_GPU_IPC_TL_NAME));

    status = uct_gpu_ipc_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_strata_iface_device(params, "gpu_ipc", &self->device);
    if (status != UCS_OK) {
        return status;
    }
    self->config.max_streams = config->max_streams;
    self->config.max_poll    = config->max_poll;
    self->config.max_events  = config->max_events;
    self->config.latency     = config->latency;
    self->config.overhead    = config->overhead;
    self->config.bandwidth   = UCS_CONFIG_BW_IS_AUTO(config->bandwidth) ?
                                       uct_gpu_ipc_iface_estimate_bw(self) :
                                       config->bandwidth;
    self->ctx              = NULL;
    self->streams_created  = 0;
    self->next_stream      = 0;
    self->copies_in_flight = 0;
    self->in_dispatch      = 0;
    self->ops_queued       = 0;
    ucs_queue_head_init(&self->pending_q);

    self->streams = ucs_calloc(self->config.max_streams, sizeof(*self->streams),
                               "gpu_ipc streams");
    if (self->streams == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < self->config.max_streams; ++i) {
        ucs_queue_head_init(&self->streams[i].ops);
    }
    status = ucs_mpool_init(&self->op_mp, 0, sizeof(uct_gpu_ipc_op_t), 0,
                            UCS_SYS_CACHE_LINE_SIZE, 128, UINT_MAX, &uct_gpu_ipc_op_mpool_ops,
                            "gpu_ipc operations");
    if (status != UCS_OK) {
        goto err_free_streams;
    }
    return UCS_OK;

err_free_streams:
    ucs_free(self->streams);
    return status;
}

/* Waits for every copy in flight and drops its descriptor: the interface is
 * going away, so nobody is told about their completion. */
static void uct_gpu_ipc_iface_drain(uct_gpu_ipc_iface_t *iface)
{
    uct_gpu_ipc_stream_t *stream;
    uct_gpu_ipc_op_t *op;
    unsigned i;

    for (i = 0; i < iface->config.max_streams; ++i) {
        stream = &iface->streams[i];
        if (stream->stream != NULL) {
            (void)UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(stream->stream));
        }
        /* Synchronized above: the copies no longer use their mappings. */
        while (!ucs_queue_is_empty(&stream->ops)) {
            op = ucs_queue_pull_elem_non_empty(&stream->ops, uct_gpu_ipc_op_t, queue);
            uct_gpu_ipc_iface_op_release(op);
        }
        if (stream->stream != NULL) {
            (void)UCT_STRATA_CUDA(strata_cuda.cuStreamDestroy(stream->stream));
        }
    }
    if (iface->ops_queued > 0) {
        ucs_debug("gpu_ipc: iface %p closed with %u operations outstanding", iface,
                  iface->ops_queued);
    }
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpu_ipc_iface_t)
{
    CUcontext saved = NULL;

    uct_base_iface_progress_disable(&self->super.super, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (!ucs_queue_is_empty(&self->pending_q)) {
        ucs_warn("gpu_ipc: iface %p closed with pending requests", self);
    }
    /* Streams and events belong to the interface's context, which must be
     * current to destroy them. */
    if ((self->ctx != NULL) && (uct_gpu_ipc_iface_ctx_enter(self, 0, &saved) == UCS_OK)) {
        uct_gpu_ipc_iface_drain(self);
        ucs_mpool_cleanup(&self->op_mp, 1);
        uct_gpu_ipc_iface_ctx_leave(self, saved);
    } else {
        ucs_mpool_cleanup(&self->op_mp, 1);
    }
    ucs_free(self->streams);
}

UCS_CLASS_DEFINE(uct_gpu_ipc_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpu_ipc_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                                 const uct_iface_params_t *, const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpu_ipc_iface_t, uct_iface_t);

static ucs_status_t uct_gpu_ipc_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                              unsigned *num_devices_p)
{
    /* Both domains of the component list their transports' devices; only
     * the IPC domain's registrations and keys work for gpu_ipc. */
    if (ucs_derived_of(md, uct_strata_md_t)->kind != UCT_STRATA_MD_IPC) {
        *devices_p     = NULL;
        *num_devices_p = 0;
        return UCS_OK;
    }
    return uct_strata_query_gpu_devices(md, devices_p, num_devices_p);
}

UCT_TL_DEFINE(&uct_strata_component, gpu_ipc, uct_gpu_ipc_query_devices, uct_gpu_ipc_iface_t,
              "GPU_IPC_", uct_gpu_ipc_iface_config_table, uct_gpu_ipc_iface_config_t);
