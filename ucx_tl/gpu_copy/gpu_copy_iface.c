/*
 * gpu_copy interface: settings, addressing, capabilities and performance.
 * Queues, progress, flush/fence and the pending queue are the base
 * interface's (base/gpu_base_iface.c); the copies are posted in
 * gpu_copy_ep.c.
 */
#include "gpu_copy_iface.h"
#include "gpu_copy_ep.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/uid.h>
#include <ucs/type/class.h>

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Performance model.  UCP uses it to rank the lanes that can copy across
 * memory types and to size rendezvous pipeline fragments, so it should be
 * right for the common machine, and on the low side where machines differ:
 *  - issue overhead: cuMemcpyAsync + cuEventRecord cost the CPU about 2 us
 *    (the driver's command submission, as for a kernel launch);
 *  - latency, UCX_GPU_COPY_LATENCY: a small copy's DMA setup and PCIe round
 *    trip plus noticing its completion take about 5 us more; with the issue
 *    cost that is the 7-8 us UCX's own cuda_copy assumes for a small copy;
 *  - host<->device bandwidth, UCX_GPU_COPY_BW: PCIe gen4 x16 carries about
 *    25 GB/s from pinned host memory (gen5 about 50, NVLink-C2C far more);
 *    UCP's staging buffers are pageable to CUDA, which the driver copies
 *    through its own bounce buffers at less.  20 GB/s keeps gpu_copy from
 *    looking better than a direct device path on any of these;
 *  - device<->device bandwidth, UCX_GPU_COPY_D2D_BW: one GPU copies through
 *    HBM at a terabyte per second or more, peers over NVLink at 100-450 GB/s,
 *    over PCIe at the host rate; 200 GB/s is the NVLink case.
 */
#define UCT_GPU_COPY_IFACE_OVERHEAD 2e-6

static ucs_config_field_t uct_gpu_copy_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_gpu_copy_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_gpu_base_iface_config_table)},

    {"BW", "20GBs",
     "Host<->GPU copy bandwidth UCP assumes (GB = 2^30 bytes). The default suits\n"
     "PCIe gen4 x16; raise it for PCIe gen5 or NVLink-C2C hosts.",
     ucs_offsetof(uct_gpu_copy_iface_config_t, bandwidth), UCS_CONFIG_TYPE_BW},

    {"D2D_BW", "200GBs",
     "GPU<->GPU copy bandwidth UCP assumes (within a GPU or to a peer over NVLink).",
     ucs_offsetof(uct_gpu_copy_iface_config_t, d2d_bandwidth), UCS_CONFIG_TYPE_BW},

    {"LATENCY", "5us", "Latency of a copy UCP assumes, beyond the CPU time to issue it.",
     ucs_offsetof(uct_gpu_copy_iface_config_t, latency), UCS_CONFIG_TYPE_TIME},

    {"SHORT_BOUNCE", "64k",
     "Size of the pinned host buffer through which short copies (UCP packing and\n"
     "unpacking device data into its messages) go: the copy engine moves pinned\n"
     "memory directly, where a copy from pageable memory makes the driver stage it.\n"
     "Longer short copies go directly; 0 sends all of them directly.",
     ucs_offsetof(uct_gpu_copy_iface_config_t, short_bounce), UCS_CONFIG_TYPE_MEMUNITS},

    {NULL}};

/* "auto" is a valid UCS bandwidth; for us it means the compiled-in default. */
#define UCT_GPU_COPY_IFACE_BW_DEFAULT     (20.0 * UCS_GBYTE)
#define UCT_GPU_COPY_IFACE_D2D_BW_DEFAULT (200.0 * UCS_GBYTE)

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpu_copy_iface_t, uct_iface_t);

/* ---- addressing ---- */

/*
 * A random number per process, made again in a forked child: an address
 * from the parent must not look reachable there, the copy would land in the
 * child's copy of the memory.
 */
static uint64_t uct_gpu_copy_process_id(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static pid_t owner;
    static uint64_t id;
    pid_t pid = getpid();
    uint64_t result;

    pthread_mutex_lock(&lock);
    if (owner != pid) {
        id    = ucs_generate_uuid((uintptr_t)pid);
        owner = pid;
    }
    result = id;
    pthread_mutex_unlock(&lock);
    return result;
}

static ucs_status_t uct_gpu_copy_iface_get_address(uct_iface_h tl_iface,
                                                   uct_iface_addr_t *iface_addr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    ((uct_gpu_copy_iface_addr_t *)iface_addr)->process_id = iface->process_id;
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_iface_get_device_address(uct_iface_h tl_iface,
                                                          uct_device_addr_t *dev_addr)
{
    ((uct_gpu_copy_device_addr_t *)dev_addr)->system_id = ucs_get_system_id();
    return UCS_OK;
}

/* The same host (device address) and the same process (iface address). */
static int uct_gpu_copy_iface_is_reachable(uct_iface_h tl_iface, const uct_device_addr_t *dev_addr,
                                           const uct_iface_addr_t *iface_addr, char *reason,
                                           size_t max)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    if ((dev_addr != NULL) &&
        (((const uct_gpu_copy_device_addr_t *)dev_addr)->system_id != ucs_get_system_id())) {
        uct_strata_reachable_reason(reason, max, "another host");
        return 0;
    }
    if ((iface_addr == NULL) ||
        (((const uct_gpu_copy_iface_addr_t *)iface_addr)->process_id != iface->process_id)) {
        uct_strata_reachable_reason(reason, max, "gpu_copy copies within one process");
        return 0;
    }
    return 1;
}

UCT_STRATA_IFACE_IS_REACHABLE_DEFINE(uct_gpu_copy_iface_is_reachable)

/* An endpoint is a loopback of its own process: connected to that one. */
static int uct_gpu_copy_ep_is_connected(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                        const uct_iface_addr_t *iface_addr)
{
    return uct_gpu_copy_iface_is_reachable(tl_ep->iface, dev_addr, iface_addr, NULL, 0);
}

UCT_STRATA_EP_IS_CONNECTED_DEFINE(uct_gpu_copy_ep_is_connected)

/* ---- capabilities and performance ---- */

static ucs_status_t uct_gpu_copy_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *iface_attr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);

    uct_gpu_base_iface_query(&iface->super, iface_attr);

    iface_attr->iface_addr_len  = sizeof(uct_gpu_copy_iface_addr_t);
    iface_attr->device_addr_len = sizeof(uct_gpu_copy_device_addr_t);
    /* What UCP 1.13 asks of a memory-type copy transport: short put/get for
     * pack/unpack, zcopy put/get and pending for the rendezvous pipeline
     * (the base's), and a loopback connection. */
    iface_attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_SHORT;

    /* A short copy is one synchronous driver call of any length. */
    iface_attr->cap.put.max_short = UINT_MAX;
    iface_attr->cap.get.max_short = UINT_MAX;

    iface_attr->cap.am.opt_zcopy_align = 1;
    iface_attr->cap.am.align_mtu       = 1;
    iface_attr->cap.am.max_iov         = 1;

    iface_attr->latency          = ucs_linear_func_make(iface->config.latency, 0);
    iface_attr->bandwidth.shared = iface->config.bandwidth;
    iface_attr->overhead         = UCT_GPU_COPY_IFACE_OVERHEAD;
    return UCS_OK;
}

static int uct_gpu_copy_is_gpu_mem_type(ucs_memory_type_t mem_type)
{
    return (mem_type == UCS_MEMORY_TYPE_CUDA) || (mem_type == UCS_MEMORY_TYPE_CUDA_MANAGED);
}

static double uct_gpu_copy_iface_bandwidth(uct_gpu_copy_iface_t *iface,
                                           const uct_perf_attr_t *perf_attr)
{
    uint64_t both = UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE | UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE;

    if (ucs_test_all_flags(perf_attr->field_mask, both) &&
        uct_gpu_copy_is_gpu_mem_type(perf_attr->local_memory_type) &&
        uct_gpu_copy_is_gpu_mem_type(perf_attr->remote_memory_type)) {
        return iface->config.d2d_bandwidth;
    }
    return iface->config.bandwidth;
}

static ucs_status_t uct_gpu_copy_iface_estimate_perf(uct_iface_h tl_iface,
                                                     uct_perf_attr_t *perf_attr)
{
    uct_gpu_copy_iface_t *iface = ucs_derived_of(tl_iface, uct_gpu_copy_iface_t);
    uct_ppn_bandwidth_t bandwidth = {.dedicated = 0,
                                     .shared    = uct_gpu_copy_iface_bandwidth(iface, perf_attr)};

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
        perf_attr->bandwidth = bandwidth;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
        perf_attr->send_pre_overhead = UCT_GPU_COPY_IFACE_OVERHEAD;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        perf_attr->send_post_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
        perf_attr->recv_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) {
        perf_attr->latency = ucs_linear_func_make(iface->config.latency, 0);
    }
    uct_strata_perf_attr_versioned(perf_attr, bandwidth);
    return UCS_OK;
}

/* ---- ops tables ---- */

/* clang-format off */
static uct_iface_ops_t uct_gpu_copy_iface_ops = {
    .ep_put_short             = uct_gpu_copy_ep_put_short,
    .ep_get_short             = uct_gpu_copy_ep_get_short,
    .ep_put_zcopy             = uct_gpu_copy_ep_put_zcopy,
    .ep_get_zcopy             = uct_gpu_copy_ep_get_zcopy,
    .ep_pending_add           = uct_gpu_base_ep_pending_add,
    .ep_pending_purge         = uct_gpu_base_ep_pending_purge,
    .ep_flush                 = uct_gpu_base_ep_flush,
    .ep_fence                 = uct_gpu_base_ep_fence,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpu_copy_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_copy_ep_t),
    .iface_flush              = uct_gpu_base_iface_flush,
    .iface_fence              = uct_gpu_base_iface_fence,
    .iface_progress_enable    = uct_gpu_base_iface_progress_enable,
    .iface_progress_disable   = uct_gpu_base_iface_progress_disable,
    .iface_progress           = uct_gpu_base_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = uct_gpu_base_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_gpu_copy_iface_t),
    .iface_query              = uct_gpu_copy_iface_query,
    .iface_get_device_address = uct_gpu_copy_iface_get_device_address,
    .iface_get_address        = uct_gpu_copy_iface_get_address,
    .iface_is_reachable       = UCT_STRATA_IFACE_IS_REACHABLE_OP(uct_gpu_copy_iface_is_reachable),
};
/* clang-format on */

/* clang-format off */
static uct_iface_internal_ops_t uct_gpu_copy_iface_internal_ops = {
    .iface_estimate_perf = uct_gpu_copy_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    UCT_STRATA_IFACE_INTERNAL_OPS_VERSIONED(uct_gpu_copy_iface_is_reachable,
                                            uct_gpu_copy_ep_is_connected)
};
/* clang-format on */

static const uct_gpu_base_iface_ops_t uct_gpu_copy_iface_base_ops = {
    .tl_name      = UCT_GPU_COPY_TL_NAME,
    .op_size      = sizeof(uct_gpu_base_op_t),
    .op_release   = NULL,
    /* UCP's rendezvous pipeline copies through it as a memory-type endpoint. */
    .mtype_copies = 1,
};

/* ---- life cycle ---- */

static UCS_CLASS_INIT_FUNC(uct_gpu_copy_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params, const uct_iface_config_t *tl_config)
{
    const uct_gpu_copy_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpu_copy_iface_config_t);

    UCS_CLASS_CALL_SUPER_INIT(uct_gpu_base_iface_t, &uct_gpu_copy_iface_ops,
                              &uct_gpu_copy_iface_internal_ops, &uct_gpu_copy_iface_base_ops, md,
                              worker, params, tl_config, UCT_GPU_COPY_DIR_LAST);

    self->process_id           = uct_gpu_copy_process_id();
    self->short_stream         = NULL;
    self->short_bounce         = NULL;
    self->config.short_bounce  = (config->short_bounce == UCS_MEMUNITS_INF) ? 0 :
                                                                              config->short_bounce;
    self->config.latency       = config->latency;
    self->config.bandwidth     = UCT_STRATA_CONFIG_BW_IS_AUTO(config->bandwidth) ?
                                     UCT_GPU_COPY_IFACE_BW_DEFAULT :
                                     config->bandwidth;
    self->config.d2d_bandwidth = UCT_STRATA_CONFIG_BW_IS_AUTO(config->d2d_bandwidth) ?
                                     UCT_GPU_COPY_IFACE_D2D_BW_DEFAULT :
                                     config->d2d_bandwidth;
    return UCS_OK;
}

/* The base drains the queues; the short stream has nothing in flight. */
static UCS_CLASS_CLEANUP_FUNC(uct_gpu_copy_iface_t)
{
    CUcontext restore;

    uct_gpu_base_iface_stream_destroy(&self->super, self->short_stream);
    if ((self->short_bounce != NULL) && self->super.ctx_usable &&
        (uct_gpu_base_iface_ctx_enter(&self->super, 0, &restore) == UCS_OK)) {
        (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG,
                                   strata_cuda.cuMemFreeHost(self->short_bounce));
        uct_gpu_base_iface_ctx_leave(restore);
    }
}

UCS_CLASS_DEFINE(uct_gpu_copy_iface_t, uct_gpu_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpu_copy_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                                 const uct_iface_params_t *, const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpu_copy_iface_t, uct_iface_t);

/* Devices only on the gpu_copy domain; gpu_ipc has its own transport. */
static ucs_status_t uct_gpu_copy_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                               unsigned *num_devices_p)
{
    return uct_strata_query_gpu_devices(md, UCT_STRATA_MD_COPY, devices_p, num_devices_p);
}

/* Registered with the component, by its constructor (strata_component.c). */
UCT_TL_DEFINE_ENTRY(&uct_strata_component, gpu_copy, uct_gpu_copy_query_devices,
                    uct_gpu_copy_iface_t, "GPU_COPY_", uct_gpu_copy_iface_config_table,
                    uct_gpu_copy_iface_config_t);
