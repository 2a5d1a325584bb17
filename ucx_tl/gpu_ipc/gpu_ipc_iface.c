/*
 * gpu_ipc interfaces: settings, addressing, performance estimates, and
 * what its operations hold (see gpu_ipc_iface.h); queues, progress, flush
 * and the pending queue are the base interface's.
 */
#include "gpu_ipc_iface.h"
#include "gpu_ipc_ep.h"
#include "gpu_ipc_md.h"
#include "../base/gpu_base_ep.h"

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
     UCS_CONFIG_TYPE_TABLE(uct_gpu_base_iface_config_table)},

    {"MAX_STREAMS", "4",
     "Number of CUDA streams copies are issued on. Each endpoint uses one, assigned\n"
     "round-robin, so transfers to different peers overlap (at most " UCS_PP_MAKE_STRING(
         UCT_GPU_IPC_MAX_STREAMS_CAP) ").",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, max_streams), UCS_CONFIG_TYPE_UINT},

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

    {"BOUNCE_SIZE", "4m",
     "Size of each pinned host buffer that stages a copy between this process's GPU\n"
     "memory and a peer's host memory (a piece of such a transfer).",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, bounce_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"SHARED_DETOUR", "64k",
     "Copies of at most this many bytes between two buffers of one GPU go through\n"
     "pinned host memory (two copy-engine copies) when the GPU's processes do not\n"
     "share it through MPS: without MPS a device-to-device copy waits for a context\n"
     "switch (~120 us on an H200) whenever another process used the GPU since, a\n"
     "copy between device and host memory does not. 0: always copy directly.",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, shared_detour), UCS_CONFIG_TYPE_MEMUNITS},

    {"BOUNCE_COUNT", "4",
     "Number of those buffers per interface (allocated at first use): the pieces of a\n"
     "transfer in flight at once.",
     ucs_offsetof(uct_gpu_ipc_iface_config_t, bounce_count), UCS_CONFIG_TYPE_UINT},

    {NULL}};

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

/* Another process on this node: the driver does not open a process's own
 * IPC handles, and gpu_copy serves copies within one process. */
static int uct_gpu_ipc_iface_is_reachable(uct_iface_h tl_iface, const uct_device_addr_t *dev_addr,
                                          const uct_iface_addr_t *iface_addr, char *reason,
                                          size_t max)
{
    if (!uct_strata_iface_local_is_reachable(dev_addr, UCS_SYS_NS_TYPE_PID, reason, max)) {
        return 0;
    }
    if (*(const pid_t *)iface_addr == getpid()) {
        uct_strata_reachable_reason(reason, max, "same process");
        return 0;
    }
    return 1;
}

UCT_STRATA_IFACE_IS_REACHABLE_DEFINE(uct_gpu_ipc_iface_is_reachable)
UCT_STRATA_EP_IS_CONNECTED_DEFINE(uct_gpu_ipc_ep_is_connected)

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
        ucs_debug("gpu_ipc gpu%d: one visible GPU, peers share it: %.0f MB/s",
                  iface->super.ordinal, UCT_GPU_IPC_BW_SAME_DEVICE / UCS_MBYTE);
        return UCT_GPU_IPC_BW_SAME_DEVICE;
    }
    link = uct_gpu_ipc_iface_peer_link(iface->super.ordinal, count);
    if (link == STRATA_GPU_LINK_NVLINK) {
        links = uct_gpu_ipc_bus_id(iface->super.ordinal, bus_id, sizeof(bus_id)) ?
                        strata_nvml_active_nvlinks(bus_id) : 0;
        bw    = ucs_min(ucs_max(links, 1) * UCT_GPU_IPC_BW_PER_NVLINK, UCT_GPU_IPC_BW_SAME_DEVICE);
    } else {
        bw = UCT_GPU_IPC_BW_PCIE;
    }
    ucs_debug("gpu_ipc gpu%d: %s to the other GPUs%s%s: %.0f MB/s", iface->super.ordinal,
              strata_gpu_link_name(link), (strata_nvml_load() == 0) ? "" : ", NVML: ",
              strata_nvml_error(), bw / UCS_MBYTE);
    return bw;
}

static ucs_status_t uct_gpu_ipc_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *iface_attr)
{
    uct_gpu_ipc_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_ipc_iface_t);

    uct_gpu_base_iface_query(&iface->super, iface_attr);
    iface_attr->iface_addr_len   = sizeof(pid_t);
    iface_attr->device_addr_len  = uct_gpu_ipc_iface_device_addr_len();
    iface_attr->cap.flags       |= UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE | UCT_IFACE_FLAG_EP_CHECK;
    iface_attr->latency          = ucs_linear_func_make(iface->config.latency, 0);
    iface_attr->bandwidth.shared = iface->config.bandwidth;
    iface_attr->overhead         = iface->config.overhead;
    return UCS_OK;
}

/* ---- operations ---- */

/* Last, after the completion: the copy no longer touches the peer's
 * memory, and this may be the reference that unmaps it. */
static void uct_gpu_ipc_iface_op_release(uct_gpu_base_op_t *base_op)
{
    uct_gpu_ipc_op_t *op = ucs_derived_of(base_op, uct_gpu_ipc_op_t);

    if (op->mapping != NULL) {
        uct_gpu_ipc_cache_put(uct_gpu_ipc_global_cache(), op->mapping);
        op->mapping = NULL;
    }
    if (op->detour_held != 0) {
        uct_gpu_ipc_detour_release(op->detour, op->detour_held);
        op->detour_held = 0;
    }
}

static const uct_gpu_base_iface_ops_t uct_gpu_ipc_iface_base_ops = {
    .tl_name      = UCT_GPU_IPC_TL_NAME,
    .op_size      = sizeof(uct_gpu_ipc_op_t),
    .op_release   = uct_gpu_ipc_iface_op_release,
    /* UCP moves rendezvous data and RMA through it with protocols that
     * queue a refused operation, in every version. */
    .mtype_copies = 0,
};

/* clang-format off */
static uct_iface_ops_t uct_gpu_ipc_iface_ops = {
    .ep_put_zcopy             = uct_gpu_ipc_ep_put_zcopy,
    .ep_get_zcopy             = uct_gpu_ipc_ep_get_zcopy,
    .ep_pending_add           = uct_gpu_base_ep_pending_add,
    .ep_pending_purge         = uct_gpu_base_ep_pending_purge,
    .ep_flush                 = uct_gpu_base_ep_flush,
    .ep_fence                 = uct_gpu_base_ep_fence,
    .ep_check                 = uct_gpu_ipc_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpu_ipc_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_ipc_ep_t),
    .iface_flush              = uct_gpu_base_iface_flush,
    .iface_fence              = uct_gpu_base_iface_fence,
    .iface_progress_enable    = uct_gpu_base_iface_progress_enable,
    .iface_progress_disable   = uct_gpu_base_iface_progress_disable,
    .iface_progress           = uct_gpu_base_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = uct_gpu_base_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_ipc_iface_t),
    .iface_query              = uct_gpu_ipc_iface_query,
    .iface_get_device_address = uct_gpu_ipc_iface_get_device_address,
    .iface_get_address        = uct_gpu_ipc_iface_get_address,
    .iface_is_reachable       = UCT_STRATA_IFACE_IS_REACHABLE_OP(uct_gpu_ipc_iface_is_reachable),
};
/* clang-format on */

/* clang-format off */
static uct_iface_internal_ops_t uct_gpu_ipc_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    UCT_STRATA_IFACE_INTERNAL_OPS_VERSIONED(uct_gpu_ipc_iface_is_reachable,
                                            uct_gpu_ipc_ep_is_connected)
};
/* clang-format on */

/* ---- life cycle ---- */

/* Whether processes share the device through MPS (then their kernels and
 * copies run side by side, with no context switch for the detour to avoid). */
static int uct_gpu_ipc_iface_mps(int ordinal)
{
    CUdevice dev;
    int mps = 0;

    if ((strata_cuda.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) ||
        (strata_cuda.cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev) !=
         CUDA_SUCCESS)) {
        return 0;
    }
    ucs_debug("gpu_ipc gpu%d: %s", ordinal,
              mps ? "shared through MPS: small copies within it run directly" :
                    "not under MPS: small copies within it take the detour through host memory");
    return mps;
}

static UCS_CLASS_INIT_FUNC(uct_gpu_ipc_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params, const uct_iface_config_t *tl_config)
{
    const uct_gpu_ipc_iface_config_t *config = ucs_derived_of(tl_config,
                                                              uct_gpu_ipc_iface_config_t);
    ucs_status_t status;

    if ((config->max_streams == 0) || (config->max_streams > UCT_GPU_IPC_MAX_STREAMS_CAP)) {
        ucs_error("UCX_GPU_IPC_MAX_STREAMS=%u: must be 1..%d", config->max_streams,
                  UCT_GPU_IPC_MAX_STREAMS_CAP);
        return UCS_ERR_INVALID_PARAM;
    }
    UCS_CLASS_CALL_SUPER_INIT(uct_gpu_base_iface_t, &uct_gpu_ipc_iface_ops,
                              &uct_gpu_ipc_iface_internal_ops, &uct_gpu_ipc_iface_base_ops, md,
                              worker, params, tl_config, config->max_streams);

    status = uct_gpu_ipc_stage_init(&self->stage, config->bounce_size, config->bounce_count);
    if (status != UCS_OK) {
        return status;
    }
    uct_gpu_ipc_detour_init(&self->detour, (config->shared_detour == UCS_MEMUNITS_INF) ?
                                               0 :
                                               config->shared_detour);
    self->mps              = uct_gpu_ipc_iface_mps(self->super.ordinal);
    self->host_keys        = ucs_derived_of(md, uct_strata_md_t)->config.ipc_host;
    self->next_stream      = 0;
    self->config.latency   = config->latency;
    self->config.overhead  = config->overhead;
    self->config.bandwidth = UCT_STRATA_CONFIG_BW_IS_AUTO(config->bandwidth) ?
                                 uct_gpu_ipc_iface_estimate_bw(self) :
                                 config->bandwidth;
    return UCS_OK;
}

/* Before the base's cleanup: the staging buffers need the context, and
 * their copies may still be queued (the base drains the queues after). */
static UCS_CLASS_CLEANUP_FUNC(uct_gpu_ipc_iface_t)
{
    CUcontext restore;

    if ((self->stage.bounce == NULL) && (self->detour.arena == NULL)) {
        return;
    }
    if (self->super.ctx_usable &&
        (uct_gpu_base_iface_ctx_enter(&self->super, 0, &restore) == UCS_OK)) {
        uct_gpu_ipc_stage_cleanup(&self->stage, 1);
        uct_gpu_ipc_detour_cleanup(&self->detour, 1);
        uct_gpu_base_iface_ctx_leave(restore);
    } else {
        uct_gpu_ipc_stage_cleanup(&self->stage, 0);
        uct_gpu_ipc_detour_cleanup(&self->detour, 0);
    }
}

UCS_CLASS_DEFINE(uct_gpu_ipc_iface_t, uct_gpu_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpu_ipc_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                                 const uct_iface_params_t *, const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpu_ipc_iface_t, uct_iface_t);

/* Both domains of the component list their transports' devices; only the
 * IPC domain's registrations and keys work for gpu_ipc. */
static ucs_status_t uct_gpu_ipc_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                              unsigned *num_devices_p)
{
    return uct_strata_query_gpu_devices(md, UCT_STRATA_MD_IPC, devices_p, num_devices_p);
}

/* Registered with the component, by its constructor (strata_component.c). */
UCT_TL_DEFINE_ENTRY(&uct_strata_component, gpu_ipc, uct_gpu_ipc_query_devices, uct_gpu_ipc_iface_t,
                    "GPU_IPC_", uct_gpu_ipc_iface_config_table, uct_gpu_ipc_iface_config_t);
