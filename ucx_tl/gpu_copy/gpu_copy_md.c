/*
 * The gpu_copy memory domain (see gpu_copy_md.h): capabilities, no-op
 * registration, memory type detection, and its opening.
 */
#include "gpu_copy_md.h"
#include "gpu_copy_dmabuf.h"
#include "../strata_memhooks.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <limits.h>
#include <string.h>

/* Open gpu_copy domains: UCP closes a domain none of whose transports it
 * selected, so a nonzero count means some UCP context in the process
 * detects CUDA memory (common/strata_uct_probe.h). */
static int uct_gpu_copy_md_open_count;

__attribute__((visibility("default"))) int uct_strata_gpu_copy_domains_open(void)
{
    return __atomic_load_n(&uct_gpu_copy_md_open_count, __ATOMIC_ACQUIRE);
}

static void uct_gpu_copy_md_close(uct_md_h uct_md)
{
    __atomic_sub_fetch(&uct_gpu_copy_md_open_count, 1, __ATOMIC_RELEASE);
    uct_strata_md_close(uct_md);
}

#define UCT_GPU_COPY_MD_GPU_MEM_TYPES \
    (UCS_BIT(UCS_MEMORY_TYPE_CUDA) | UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED))

static ucs_status_t uct_gpu_copy_md_query(uct_md_h uct_md, uct_strata_md_attr_t *md_attr)
{
    /* UCP 1.13 chooses a "copy across memory types" lane only on a domain
     * that registers host memory, so gpu_copy registers host and device
     * memory: device memory as a no-op, host memory by pinning it (see
     * mem_reg), which UCP's cache keeps.  It needs
     * no rkey: UCP copies through loopback endpoints of gpu_copy, one call
     * per fragment, and a key per fragment would cost more than the copy. */
    static const uct_strata_md_caps_t caps = {
        .flags            = UCT_MD_FLAG_REG,
        .reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCT_GPU_COPY_MD_GPU_MEM_TYPES,
        .access_mem_types = UCT_GPU_COPY_MD_GPU_MEM_TYPES | UCT_STRATA_MTYPE_COPY_ACCESS_HOST,
        .detect_mem_types = UCT_GPU_COPY_MD_GPU_MEM_TYPES,
        /* A no-op registration never goes stale; a pinned one is dropped
         * by UCP's cache when the memory is unmapped. */
        .cache_mem_types  = UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCT_GPU_COPY_MD_GPU_MEM_TYPES,
        .rkey_packed_size = sizeof(uint32_t),
        .reg_cost         = {0, 0},
    };

    uct_strata_md_attr_fill(md_attr, &caps);
    UCT_STRATA_MD_ATTR_SET_DMABUF_MEM_TYPES(md_attr, uct_gpu_copy_dmabuf_mem_types());
    return UCS_OK;
}

/*
 * A registration of host memory page-locks it (cuMemHostRegister, portable
 * to every context), as UCX's cuda_copy does: UCP registers the host
 * buffers that stage its host<->device pipelines (its fragment pools) with
 * this domain, and the copy engines move pinned memory by DMA at the link's
 * speed, where from pageable memory the driver stages each copy through its
 * own buffer on the host's time.  UCP's registration cache keeps them
 * (cache_mem_types), so each is pinned once.  Best effort: without a current
 * context, for memory the application pinned already, or when the driver
 * refuses, the registration is the no-op that device memory always gets
 * (copies still work, at pageable speed).
 */
typedef struct uct_gpu_copy_memh {
    void *address; /* pinned by this registration */
} uct_gpu_copy_memh_t;

/* Whether to pin [address, +length): host memory, not pinned already, and a
 * context current to pin it in. */
static int uct_gpu_copy_md_should_pin(const uct_strata_md_t *md, void *address, size_t length)
{
    strata_mem_info_t info;
    CUcontext ctx = NULL;

    if (!md->config.copy_pin_host || (length == 0) || (strata_cuda.cuMemHostRegister == NULL)) {
        return 0;
    }
    if ((strata_mem_query(address, &info) != 0) || (info.kind != STRATA_MEM_HOST) ||
        info.host_pinned) {
        return 0;
    }
    return (strata_cuda.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS) && (ctx != NULL);
}

static ucs_status_t uct_gpu_copy_md_mem_reg(UCT_STRATA_MEM_REG_ARGS)
{
    uct_strata_md_t *md = ucs_derived_of(uct_md, uct_strata_md_t);
    uct_gpu_copy_memh_t *memh;
    char str[160];
    CUresult res;

    *memh_p = (uct_mem_h)uct_md; /* the no-op registration: non-NULL */
    if (!uct_gpu_copy_md_should_pin(md, address, length)) {
        return UCS_OK;
    }
    memh = ucs_malloc(sizeof(*memh), "gpu_copy memh");
    if (memh == NULL) {
        return UCS_OK;
    }
    res = strata_cuda.cuMemHostRegister(address, length, CU_MEMHOSTREGISTER_PORTABLE);
    if (res != CUDA_SUCCESS) {
        ucs_debug("gpu_copy: %p+%zu stays pageable: cuMemHostRegister: %s", address, length,
                  strata_cuda_result_str(res, str, sizeof(str)));
        ucs_free(memh);
        return UCS_OK;
    }
    memh->address = address;
    *memh_p       = memh;
    ucs_trace("gpu_copy: pinned %p+%zu", address, length);
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_md_mem_dereg(UCT_STRATA_MEM_DEREG_ARGS)
{
    uct_gpu_copy_memh_t *memh = (uct_gpu_copy_memh_t *)UCT_STRATA_MEM_DEREG_MEMH(params);

    if ((void *)memh == (void *)uct_md) {
        return UCS_OK;
    }
    /* Unpinned even if the memory was unmapped first: the driver drops its
     * page references either way. */
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuMemHostUnregister(memh->address));
    ucs_free(memh);
    return UCS_OK;
}

/* UCP packs a key for every domain a buffer is registered with, and a
 * loopback endpoint may hand it back to this component's rkey_unpack: the
 * magic tells it apart from a gpu_ipc key (see strata_component.c). */
static ucs_status_t uct_gpu_copy_md_mkey_pack(UCT_STRATA_MKEY_PACK_ARGS)
{
    const uint32_t magic = UCT_GPU_COPY_KEY_MAGIC;

    memcpy(rkey_buffer, &magic, sizeof(magic));
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_md_mem_query(uct_md_h uct_md, const void *address, size_t length,
                                              uct_strata_md_mem_attr_t *mem_attr)
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
    /* The data path, maybe inside coll/strata's exchange while its stream
     * waits for this thread: memory the allocation hooks did not see (hooks
     * off, allocated before UCX started) gets its pointer attribute, and is
     * settled once if its context lacks the flag, which is never set here
     * (strata_mem.h). */
    if (info.mem_type == UCS_MEMORY_TYPE_CUDA) {
        (void)strata_mem_sync_memops_info(info.base, &info.mem, STRATA_MEM_DATA_PATH);
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = info.mem_type;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = uct_gpu_copy_dmabuf_sys_dev(info.ordinal);
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = (void *)info.base;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = info.length;
    }
    uct_gpu_copy_dmabuf_mem_query(address, &info, mem_attr);
    return UCS_OK;
}

static ucs_status_t uct_gpu_copy_md_detect_memory_type(uct_md_h uct_md, const void *address,
                                                       size_t length, ucs_memory_type_t *mem_type_p)
{
    uct_strata_md_mem_attr_t mem_attr = {.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE};
    ucs_status_t status;

    status = uct_gpu_copy_md_mem_query(uct_md, address, length, &mem_attr);
    if (status == UCS_OK) {
        *mem_type_p = mem_attr.mem_type;
    }
    return status;
}

/* clang-format off */
static uct_md_ops_t uct_gpu_copy_md_ops = {
    .close                  = uct_gpu_copy_md_close,
    .query                  = uct_gpu_copy_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg                = uct_gpu_copy_md_mem_reg,
    .mem_dereg              = uct_gpu_copy_md_mem_dereg,
    .mem_query              = uct_gpu_copy_md_mem_query,
    .mkey_pack              = uct_gpu_copy_md_mkey_pack,
    .detect_memory_type     = uct_gpu_copy_md_detect_memory_type,
    UCT_STRATA_MD_OPS_VERSIONED
};
/* clang-format on */

/* The detecting domain is the one UCP's memory type cache relies on, so its
 * opening is where the cache gets its source of events. */
static ucs_status_t uct_gpu_copy_md_init(uct_strata_md_t *md, const uct_strata_md_config_t *config)
{
    ucs_status_t status;

    status = uct_strata_memhooks_init(config->memtype_hooks, config->memtype_scan);
    if (status != UCS_OK) {
        return status;
    }
    __atomic_add_fetch(&uct_gpu_copy_md_open_count, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

const uct_strata_md_desc_t uct_gpu_copy_md_desc = {
    .name = UCT_STRATA_MD_NAME_COPY,
    .kind = UCT_STRATA_MD_COPY,
    .ops  = &uct_gpu_copy_md_ops,
    .init = uct_gpu_copy_md_init,
};
