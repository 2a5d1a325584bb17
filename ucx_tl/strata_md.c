/*
 * Memory domains of component "strata": opening, the gpu_copy domain's
 * queries, and the pointer questions both domains ask the driver.
 * The gpu_ipc domain's registration and keys are in gpu_ipc/gpu_ipc_md.c.
 */
#include "strata_md.h"
#include "strata_memhooks.h"
#include "gpu_ipc/gpu_ipc_md.h"

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

    {"IPC_CACHE_SIZE", "1024",
     "Most peer allocations kept mapped by gpu_ipc in one process. Mappings not in\n"
     "use are closed, least recently used first, when the limit is reached.",
     ucs_offsetof(uct_strata_md_config_t, ipc_cache_size), UCS_CONFIG_TYPE_UINT},

    {"IPC_LEGACY", "y",
     "Export cudaMalloc/cuMemAlloc memory to peers with CUDA IPC handles.",
     ucs_offsetof(uct_strata_md_config_t, ipc_legacy), UCS_CONFIG_TYPE_BOOL},

    {"IPC_VMM", "y",
     "Export VMM (cuMemCreate) memory created with the POSIX file descriptor handle\n"
     "type; a peer takes the owner's descriptor with pidfd_getfd(2), which needs\n"
     "ptrace access to the owner (same user; kernel.yama.ptrace_scope 0). Where\n"
     "that is refused such memory is staged through host memory instead.",
     ucs_offsetof(uct_strata_md_config_t, ipc_vmm), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

ucs_status_t uct_strata_cuda_check(CUresult res, const char *call, ucs_log_level_t level)
{
    char str[160];

    if (ucs_likely(res == CUDA_SUCCESS)) {
        return UCS_OK;
    }
    if (res == CUDA_ERROR_NOT_READY) {
        return UCS_INPROGRESS;
    }
    ucs_log(level, "%s failed: %s", call, strata_cuda_result_str(res, str, sizeof(str)));
    switch (res) {
    case CUDA_ERROR_OUT_OF_MEMORY:
        return UCS_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return UCS_ERR_INVALID_PARAM;
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
        return UCS_ERR_UNSUPPORTED;
    default:
        return UCS_ERR_IO_ERROR;
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
    info->mem_type   = (mem.kind == STRATA_MEM_MANAGED) ? UCS_MEMORY_TYPE_CUDA_MANAGED
                                                         : UCS_MEMORY_TYPE_CUDA;
    info->base       = (CUdeviceptr)mem.base;
    info->length     = mem.length;
    info->buffer_id  = mem.buffer_id;
    info->ordinal    = mem.ordinal;
    info->legacy_ipc = mem.legacy_ipc;
    info->from_pool  = mem.from_pool;
    /* Still device memory for every purpose but export: a buffer may cross
     * adjacent mappings of one reservation (growing allocators do that). */
    if ((mem.length != 0) && ((uintptr_t)address + length > mem.base + mem.length)) {
        ucs_debug("%p+%zu runs past its allocation 0x%lx+%zu", address, length,
                  (unsigned long)mem.base, mem.length);
        info->spans = 1;
    }
    return UCS_OK;
}

ucs_status_t uct_strata_query_gpu_devices(uct_md_h uct_md, uct_tl_device_resource_t **devices_p,
                                          unsigned *num_devices_p)
{
    int count = strata_cuda_device_count();
    uct_tl_device_resource_t *devices;
    int i;

    if (count <= 0) {
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

/* ---- the gpu_copy domain ---- */

/* Open gpu_copy domains: UCP closes a domain none of whose transports it
 * selected, so a nonzero count means some UCP context in the process
 * detects CUDA memory (common/strata_uct_probe.h). */
static int uct_strata_copy_domains_open;

__attribute__((visibility("default"))) int uct_strata_gpu_copy_domains_open(void)
{
    return __atomic_load_n(&uct_strata_copy_domains_open, __ATOMIC_ACQUIRE);
}

static void uct_strata_md_close(uct_md_h uct_md)
{
    if (ucs_derived_of(uct_md, uct_strata_md_t)->kind == UCT_STRATA_MD_COPY) {
        __atomic_sub_fetch(&uct_strata_copy_domains_open, 1, __ATOMIC_RELEASE);
    }
    ucs_free(uct_md);
}

static ucs_status_t uct_gpu_copy_md_query(uct_md_h uct_md, uct_md_attr_t *md_attr)
{
    /* UCP 1.13 chooses a "copy across memory types" lane only on a domain
     * that registers host memory, so gpu_copy claims registration of host
     * and device memory; registering costs nothing (see mem_reg).  It needs
     * no rkey: UCP copies through loopback endpoints of gpu_copy, one call
     * per fragment, and a key per fragment would cost more than the copy. */
    md_attr->cap.flags            = UCT_MD_FLAG_REG;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                    UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                    UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                    UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    md_attr->cap.detect_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                    UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = ULONG_MAX;
    md_attr->rkey_packed_size     = sizeof(uint32_t);
    md_attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}

/*
 * Registration is a no-op: copies need nothing pinned or exported.  Host
 * memory is deliberately not page-locked here: UCP registers host buffers
 * with every domain that accepts them, and pinning each would slow down
 * host-only traffic.  The handle only has to be non-NULL.
 */
static ucs_status_t uct_gpu_copy_md_mem_reg(UCT_STRATA_MEM_REG_ARGS)
{
    *memh_p = (uct_mem_h)uct_md;
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_md_mem_dereg(UCT_STRATA_MEM_DEREG_ARGS)
{
    return UCS_OK;
}

/* UCP packs a key for every domain a buffer is registered with, and a
 * loopback endpoint may hand it back to this component's rkey_unpack: the
 * magic tells it apart from a gpu_ipc key (see strata_component.c). */
static ucs_status_t uct_gpu_copy_md_mkey_pack(UCT_STRATA_MKEY_PACK_ARGS)
{
    const uint32_t magic = UCT_STRATA_COPY_KEY_MAGIC;

    memcpy(rkey_buffer, &magic, sizeof(magic));
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_md_mem_query(uct_md_h uct_md, const void *address, size_t length,
                                              uct_md_mem_attr_t *mem_attr)
{
    uct_strata_mem_info_t info;
    ucs_status_t status;

    status = uct_strata_mem_info_get(address, length, &info);
    if (status != UCS_OK) {
        return status;
    }
    /* Not ours: UCP asks the next domain, or assumes host memory.  Device
     * memory is always answered as such, even when the range crosses into
     * another mapping: "not detected" would send it to host transports. */
    if (info.mem_type == UCS_MEMORY_TYPE_HOST) {
        return UCS_ERR_INVALID_ADDR;
    }
    /* Memory the allocation hooks did not see (hooks off, or allocated
     * before UCX started) gets SYNC_MEMOPS when UCP first asks about it. */
    if (info.mem_type == UCS_MEMORY_TYPE_CUDA) {
        strata_mem_set_sync_memops(info.base);
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = info.mem_type;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = (void *)info.base;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = info.length;
    }
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_md_detect_memory_type(uct_md_h uct_md, const void *address,
                                                       size_t length, ucs_memory_type_t *mem_type_p)
{
    uct_md_mem_attr_t mem_attr = {.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE};
    ucs_status_t status;

    status = uct_gpu_copy_md_mem_query(uct_md, address, length, &mem_attr);
    if (status == UCS_OK) {
        *mem_type_p = mem_attr.mem_type;
    }
    return status;
}

static uct_md_ops_t uct_gpu_copy_md_ops = {
    .close                  = uct_strata_md_close,
    .query                  = uct_gpu_copy_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg                = uct_gpu_copy_md_mem_reg,
    .mem_dereg              = uct_gpu_copy_md_mem_dereg,
    .mem_query              = uct_gpu_copy_md_mem_query,
    .mkey_pack              = uct_gpu_copy_md_mkey_pack,
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)ucs_empty_function_return_zero,
    .detect_memory_type     = uct_gpu_copy_md_detect_memory_type,
};

/* ---- opening ---- */

ucs_status_t uct_strata_md_open(uct_component_t *component, const char *md_name,
                                const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_strata_md_config_t *config = ucs_derived_of(uct_config, uct_strata_md_config_t);
    uct_strata_md_t *md;
    ucs_status_t status;

    if (strata_cuda_load() != 0) {
        ucs_error("cannot open memory domain %s: %s", md_name, strata_cuda_error());
        return UCS_ERR_NO_DEVICE;
    }
    md = ucs_calloc(1, sizeof(*md), "strata md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    md->super.component      = component;
    md->config.ipc_cache_size = config->ipc_cache_size;
    md->config.ipc_legacy     = config->ipc_legacy;
    md->config.ipc_vmm        = config->ipc_vmm;
    if (!strcmp(md_name, UCT_STRATA_MD_NAME_COPY)) {
        md->kind      = UCT_STRATA_MD_COPY;
        md->super.ops = &uct_gpu_copy_md_ops;
        /* The detecting domain is the one UCP's memory type cache relies on,
         * so its opening is where the cache gets its source of events. */
        status = uct_strata_memhooks_init(config->memtype_hooks);
        if (status != UCS_OK) {
            ucs_free(md);
            return status;
        }
        __atomic_add_fetch(&uct_strata_copy_domains_open, 1, __ATOMIC_RELEASE);
    } else if (!strcmp(md_name, UCT_STRATA_MD_NAME_IPC)) {
        md->kind      = UCT_STRATA_MD_IPC;
        md->super.ops = &uct_gpu_ipc_md_ops;
        uct_gpu_ipc_md_configure(md);
    } else {
        ucs_error("component %s has no memory domain '%s' (it has %s and %s)",
                  UCT_STRATA_COMPONENT_NAME, md_name, UCT_STRATA_MD_NAME_COPY,
                  UCT_STRATA_MD_NAME_IPC);
        ucs_free(md);
        return UCS_ERR_NO_DEVICE;
    }
    *md_p = &md->super;
    return UCS_OK;
}
