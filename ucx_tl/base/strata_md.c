/*
 * Memory domains of component "strata": what both share (settings, the
 * pointer questions they ask the driver, opening and closing).  Each
 * domain's own operations are in ../gpu_copy/gpu_copy_md.c and
 * ../gpu_ipc/gpu_ipc_md.c.
 */
#include "strata_md.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <stdlib.h>
#include <string.h>

ucs_config_field_t uct_strata_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_strata_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"MEMTYPE_HOOKS", "try",
     "Install hooks on the CUDA driver's allocation functions, so that UCX's memory\n"
     "type cache learns which addresses are GPU memory (this UCX has no CUDA hooks\n"
     "of its own). 'try': install, and if that fails disable the cache with a warning\n"
     "(every buffer is then checked with the driver, which is slower for host memory);\n"
     "'yes': fail if they cannot be installed; 'no': do not install, disable the cache.",
     ucs_offsetof(uct_strata_md_config_t, memtype_hooks), UCS_CONFIG_TYPE_TERNARY},

    {"MEMTYPE_SCAN", "auto",
     "Mark the ranges in /proc/self/maps that may hold GPU memory the hooks do not see\n"
     "(allocated before them, or a peer's opened by CUDA IPC), so that UCP asks the\n"
     "driver about buffers in them. 'auto': when UCX's memory type cache is created if a\n"
     "CUDA context exists by then (current on the thread, or a device's primary context),\n"
     "else at the first GPU allocation or CUDA IPC mapping: until then an empty cache\n"
     "keeps UCP on its fast path for host buffers. 'on': when the cache is created (for\n"
     "contexts made with cuCtxCreate on another thread); 'off': never.",
     ucs_offsetof(uct_strata_md_config_t, memtype_scan), UCS_CONFIG_TYPE_ON_OFF_AUTO},

    {"IPC_CACHE_SIZE", "1024",
     "Most peer allocations kept mapped by gpu_ipc in one process. Mappings not in\n"
     "use are closed, least recently used first, when the limit is reached.",
     ucs_offsetof(uct_strata_md_config_t, ipc_cache_size), UCS_CONFIG_TYPE_UINT},

    {"IPC_LEGACY", "y", "Export cudaMalloc/cuMemAlloc memory to peers with CUDA IPC handles.",
     ucs_offsetof(uct_strata_md_config_t, ipc_legacy), UCS_CONFIG_TYPE_BOOL},

    {"IPC_VMM", "y",
     "Export VMM (cuMemCreate) memory created with the POSIX file descriptor handle\n"
     "type; a peer takes the owner's descriptor with pidfd_getfd(2), which needs\n"
     "ptrace access to the owner (same user; kernel.yama.ptrace_scope 0). Where\n"
     "that is refused such memory is staged through host memory instead.",
     ucs_offsetof(uct_strata_md_config_t, ipc_vmm), UCS_CONFIG_TYPE_BOOL},

    {"IPC_HOST", "auto",
     "gpu_ipc also registers host memory, so that a rendezvous between host memory of\n"
     "one process and device memory of another moves in one large transfer: the\n"
     "process with the device buffer copies between it and the peer's host memory\n"
     "through pinned bounce buffers (the host side with process_vm_readv/writev, as\n"
     "the cma transport does). 'auto': on with UCX before 1.16, whose default\n"
     "protocols otherwise move host->device messages in shared-memory fragments, each\n"
     "unpacked by a synchronous copy; off from 1.16, whose protocols pipeline them.",
     ucs_offsetof(uct_strata_md_config_t, ipc_host), UCS_CONFIG_TYPE_ON_OFF_AUTO},

    {"COPY_PIN_HOST", "y",
     "gpu_copy page-locks (cuMemHostRegister) the host memory UCP registers with it:\n"
     "the buffers through which UCP pipelines host<->device messages, and memory\n"
     "mapped with ucp_mem_map. Copies between pinned host memory and the GPU run\n"
     "as DMA on the copy engines; from pageable memory the driver stages each one\n"
     "on the host. UCP's registration cache pins each buffer once. 'n': register\n"
     "without pinning (less locked memory, host<->device copies at pageable speed).",
     ucs_offsetof(uct_strata_md_config_t, copy_pin_host), UCS_CONFIG_TYPE_BOOL},

    {"CTX_SYNC_MEMOPS", "y",
     "Set CU_CTX_SYNC_MEMOPS on the CUDA contexts Strata meets off the data path\n"
     "(the application's current one at ucp_init, those that allocate or open\n"
     "device memory while the allocation hooks are on), so that synchronous\n"
     "memsets and copies issued in them land before they return. This changes the\n"
     "application's contexts for good: from then on every synchronous cudaMemset\n"
     "and device-to-device cudaMemcpy blocks the host, also after\n"
     "ucp_cleanup/MPI_Finalize. 'n':\n"
     "leave contexts alone; then a synchronous memset or copy into VMM, stream-\n"
     "ordered or IPC-opened memory right before a send may be read before it lands\n"
     "(the first bytes of a message stale, as seen on an H200): synchronize first.\n"
     "cuMemAlloc memory keeps the SYNC_MEMOPS pointer attribute either way.",
     ucs_offsetof(uct_strata_md_config_t, ctx_sync_memops), UCS_CONFIG_TYPE_BOOL},

    {NULL}};

/* strata_mem's lines: the driver refusing CU_CTX_SYNC_MEMOPS (a warning), a
 * context first met on the data path (a diagnostic). */
static void uct_strata_md_report(int warn, const char *msg)
{
    if (warn) {
        ucs_warn("strata: %s", msg);
    } else {
        ucs_diag("strata: %s", msg);
    }
}

ucs_status_t uct_strata_mem_info_get(const void *address, size_t length,
                                     uct_strata_mem_info_t *info)
{
    strata_mem_info_t mem;

    memset(info, 0, sizeof(*info));
    info->mem_type = UCS_MEMORY_TYPE_HOST;
    info->ordinal  = -1;

    /* Host memory costs one driver call and no error (common/strata_mem.c). */
    if ((strata_mem_query(address, &mem) != 0) || (mem.kind == STRATA_MEM_HOST)) {
        return UCS_OK;
    }
    info->mem_type   = (mem.kind == STRATA_MEM_MANAGED) ? UCS_MEMORY_TYPE_CUDA_MANAGED :
                                                          UCS_MEMORY_TYPE_CUDA;
    info->base       = (CUdeviceptr)mem.base;
    info->length     = mem.length;
    info->buffer_id  = mem.buffer_id;
    info->ordinal    = mem.ordinal;
    info->legacy_ipc = mem.legacy_ipc;
    info->from_pool  = mem.from_pool;
    info->mem        = mem;
    /* Still device memory for every purpose but export: a buffer may cross
     * adjacent mappings of one reservation (growing allocators do that). */
    if ((mem.length != 0) && ((uintptr_t)address + length > mem.base + mem.length)) {
        ucs_debug("%p+%zu runs past its allocation 0x%lx+%zu", address, length,
                  (unsigned long)mem.base, mem.length);
        info->spans = 1;
    }
    return UCS_OK;
}

ucs_status_t uct_strata_query_gpu_devices(uct_md_h uct_md, uct_strata_md_kind_t kind,
                                          uct_tl_device_resource_t **devices_p,
                                          unsigned *num_devices_p)
{
    int count = strata_cuda_device_count();
    uct_tl_device_resource_t *devices;
    int i;

    if ((count <= 0) || (ucs_derived_of(uct_md, uct_strata_md_t)->kind != kind)) {
        *devices_p     = NULL;
        *num_devices_p = 0;
        return UCS_OK;
    }
    devices = ucs_calloc(count, sizeof(*devices), "strata gpu devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < count; ++i) {
        ucs_snprintf_zero(devices[i].name, sizeof(devices[i].name), "gpu%d", i);
        devices[i].type       = UCT_DEVICE_TYPE_ACC;
        devices[i].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    *devices_p     = devices;
    *num_devices_p = count;
    return UCS_OK;
}

ucs_status_t uct_strata_iface_device(const uct_iface_params_t *params, const char *tl_name,
                                     int *ordinal_p)
{
    const char *name;
    char *end;
    long ordinal;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("%s: an interface is opened on a device (gpu<N>)", tl_name);
        return UCS_ERR_UNSUPPORTED;
    }
    name = params->mode.device.dev_name;
    if (strncmp(name, "gpu", 3) != 0) {
        ucs_error("%s: no device '%s' (devices are gpu0, gpu1, ...)", tl_name, name);
        return UCS_ERR_NO_DEVICE;
    }
    ordinal = strtol(name + 3, &end, 10);
    if ((end == name + 3) || (*end != '\0') || (ordinal < 0) ||
        (ordinal >= strata_cuda_device_count())) {
        ucs_error("%s: no device '%s' (%d GPUs)", tl_name, name, strata_cuda_device_count());
        return UCS_ERR_NO_DEVICE;
    }
    *ordinal_p = (int)ordinal;
    return UCS_OK;
}

void uct_strata_md_close(uct_md_h uct_md)
{
    ucs_free(uct_md);
}

ucs_status_t uct_strata_md_open(const uct_strata_md_desc_t *desc, uct_component_t *component,
                                const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_strata_md_config_t *config = ucs_derived_of(uct_config, uct_strata_md_config_t);
    uct_strata_md_t *md;
    ucs_status_t status;

    if (strata_cuda_load() != 0) {
        ucs_error("cannot open memory domain %s: %s", desc->name, strata_cuda_error());
        return UCS_ERR_NO_DEVICE;
    }
    /* The application's context, if it has one already, met off the data
     * path: from here on its synchronous copies and memsets land before they
     * return, and what it queued before has landed (strata_mem.h).  A driver without
     * cuCtxSetFlags (before 12.1) leaves VMM, stream-ordered and IPC-opened
     * memory without that guarantee. */
    strata_mem_ctx_sync_memops_setup(config->ctx_sync_memops, uct_strata_md_report);
    if (!config->ctx_sync_memops) {
        ucs_diag("%s: UCX_STRATA_CTX_SYNC_MEMOPS=n: contexts are left without "
                 "CU_CTX_SYNC_MEMOPS; synchronous copies into VMM, stream-ordered or "
                 "IPC-opened memory may land after the MPI call reads them",
                 desc->name);
    } else if ((strata_mem_sync_memops_ctx() != 0) && (strata_cuda.cuCtxSetFlags == NULL)) {
        ucs_diag("%s: the CUDA driver has no cuCtxSetFlags (CUDA 12.1): synchronous copies "
                 "into VMM, stream-ordered or IPC-opened memory may land after the MPI call "
                 "reads them; synchronize before calling MPI",
                 desc->name);
    }
    md = ucs_calloc(1, sizeof(*md), "strata md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    md->super.component       = component;
    md->super.ops             = desc->ops;
    md->kind                  = desc->kind;
    md->config.ipc_cache_size = config->ipc_cache_size;
    md->config.ipc_legacy     = config->ipc_legacy;
    md->config.ipc_vmm        = config->ipc_vmm;
    md->config.copy_pin_host  = config->copy_pin_host;
    md->config.ipc_host       = (config->ipc_host == UCS_CONFIG_AUTO) ?
                                    UCT_STRATA_IPC_HOST_DEFAULT :
                                    (config->ipc_host == UCS_CONFIG_ON);
    if (desc->init != NULL) {
        status = desc->init(md, config);
        if (status != UCS_OK) {
            ucs_free(md);
            return status;
        }
    }
    *md_p = &md->super;
    return UCS_OK;
}
