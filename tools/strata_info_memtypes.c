/*
 * Memory types: does UCX in a process with Strata tell GPU memory from
 * host memory?
 *
 * Debian's UCX has no CUDA hooks of its own.  Opening Strata's gpu_copy
 * domain installs hooks on the driver's allocation functions that feed
 * UCX's memory type events (ucx_tl/strata_memhooks.c); UCP's memory type
 * cache listens to those events.  So the check is the path a job takes:
 * open the domain through UCT, listen to the same events UCP's cache
 * listens to, cuMemAlloc, and see whether the allocation was announced as
 * CUDA memory; then ask the domain itself, as UCP does for an address the
 * cache does not know.
 */
#include "strata_config.h"
#include "strata_info.h"
#include "strata_info_ucx.h"
#include "strata_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STRATA_INFO_MEMTYPE_BYTES (1ul << 20)

/* What the UCX memory type events said about our allocation. */
typedef struct strata_info_memtype_events {
    CUdeviceptr ptr;
    int alloc_seen;
    int free_seen;
    ucs_memory_type_t alloc_type;
} strata_info_memtype_events_t;

static void strata_info_memtype_event_cb(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    strata_info_memtype_events_t *seen = arg;

    if ((CUdeviceptr)(uintptr_t)event->mem_type.address != seen->ptr) {
        return;
    }
    if (type == UCM_EVENT_MEM_TYPE_ALLOC) {
        seen->alloc_seen = 1;
        seen->alloc_type = event->mem_type.mem_type;
    } else if (type == UCM_EVENT_MEM_TYPE_FREE) {
        seen->free_seen = 1;
    }
}

/* Why the hooks are not there, as far as the environment tells. */
static const char *strata_info_memhooks_off_reason(void)
{
    const char *hooks = getenv("UCX_STRATA_MEMTYPE_HOOKS");
    const char *cache = getenv("UCX_MEMTYPE_CACHE");

    if ((hooks != NULL) && ((hooks[0] == 'n') || (hooks[0] == 'N') || (hooks[0] == '0'))) {
        return "UCX_STRATA_MEMTYPE_HOOKS is set to no";
    }
    if ((cache != NULL) && ((cache[0] == 'n') || (cache[0] == 'N') || (cache[0] == '0'))) {
        return "UCX_MEMTYPE_CACHE is set to no, so nothing would listen";
    }
    return "the driver's allocation functions could not be patched "
           "(UCX_LOG_LEVEL=diag strata_info says why)";
}

static void strata_info_report_hooks(strata_info_t *info, const strata_info_memtype_events_t *seen)
{
    char size[32];

    strata_info_bytes_str(STRATA_INFO_MEMTYPE_BYTES, size, sizeof(size));
    if (seen->alloc_seen && (seen->alloc_type == UCS_MEMORY_TYPE_CUDA)) {
        strata_info_line(info, STRATA_INFO_OK, "allocation hooks",
                         "installed: a cuMemAlloc of %s was announced to UCX's memory type cache "
                         "as CUDA memory%s",
                         size, seen->free_seen ? ", and its cuMemFree too" : " (its free was not)");
    } else if (seen->alloc_seen) {
        strata_info_line(info, STRATA_INFO_WARN, "allocation hooks",
                         "a cuMemAlloc was announced with memory type %d, not CUDA",
                         (int)seen->alloc_type);
    } else {
        strata_info_line(info, STRATA_INFO_WARN, "allocation hooks",
                         "not installed: %s. UCX's memory type cache is off, so every buffer is "
                         "checked with the driver (correct, slower for host memory)",
                         strata_info_memhooks_off_reason());
    }
}

/* What the domain left on GPU 0's context (current, made after the domain
 * opened): in a job it sets CU_CTX_SYNC_MEMOPS on the contexts it meets off
 * the data path, which the application then sees (its synchronous memsets
 * and device-to-device copies block the host).  Without allocation hooks
 * (`hooked` 0) nothing met this context before the domain was asked about a
 * buffer, the data path, which never sets the flag (common/strata_mem.h). */
static void strata_info_report_ctx_flag(strata_info_t *info, int hooked)
{
    const char *setting = getenv("UCX_STRATA_CTX_SYNC_MEMOPS");
    int off = (setting != NULL) && (!strcasecmp(setting, "n") || !strcasecmp(setting, "no") ||
                                    !strcasecmp(setting, "off") || !strcmp(setting, "0"));
    unsigned flags = 0;
    char error[160];
    CUresult res;

    if ((strata_cuda.cuCtxGetFlags == NULL) ||
        (strata_cuda.cuCtxGetFlags(&flags) != CUDA_SUCCESS)) {
        strata_info_line(info, STRATA_INFO_WARN, "context flag",
                         "CU_CTX_SYNC_MEMOPS cannot be read (the driver has no cuCtxGetFlags, "
                         "CUDA 12.1): synchronous copies into VMM, stream-ordered or IPC-opened "
                         "memory may land after the MPI call reads them");
    } else if (flags & CU_CTX_SYNC_MEMOPS) {
        strata_info_line(info, STRATA_INFO_OK, "context flag",
                         "CU_CTX_SYNC_MEMOPS on: set on the contexts Strata meets, for good "
                         "(the application's synchronous cudaMemset and device-to-device "
                         "cudaMemcpy then block the host; UCX_STRATA_CTX_SYNC_MEMOPS=n leaves "
                         "contexts alone)");
    } else if (off) {
        strata_info_line(info, STRATA_INFO_NOTE, "context flag",
                         "CU_CTX_SYNC_MEMOPS off (UCX_STRATA_CTX_SYNC_MEMOPS=n): synchronous "
                         "copies and memsets into VMM, stream-ordered or IPC-opened memory may "
                         "land after the MPI call reads them; synchronize before calling MPI");
    } else if (!hooked) {
        strata_info_line(info, STRATA_INFO_WARN, "context flag",
                         "CU_CTX_SYNC_MEMOPS not set on a context made after UCX started: "
                         "without the allocation hooks Strata first meets it on the data path, "
                         "where it never sets the flag (cuCtxSetFlags takes the context's "
                         "lock); each buffer is settled when first seen, but synchronous copies "
                         "into VMM, stream-ordered or IPC-opened memory after that may land "
                         "after the MPI call reads them: make the context current before "
                         "MPI_Init, or synchronize before calling MPI");
    } else {
        /* Asked again here, for the driver's answer (UCX's own warning
         * about it is silenced in strata_info). */
        res = (strata_cuda.cuCtxSetFlags != NULL)
                  ? strata_cuda.cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS)
                  : CUDA_ERROR_NOT_SUPPORTED;
        strata_info_line(info, STRATA_INFO_WARN, "context flag",
                         "CU_CTX_SYNC_MEMOPS not set although UCX_STRATA_CTX_SYNC_MEMOPS is on: "
                         "cuCtxSetFlags: %s; synchronous copies into VMM, stream-ordered or "
                         "IPC-opened memory may land after the MPI call reads them",
                         strata_cuda_result_str(res, error, sizeof(error)));
    }
}

/* What the domain says about device memory and about host memory: the
 * line to report, once the hooks' line is out. */
static strata_info_status_t strata_info_check_detection(uct_md_h md, CUdeviceptr ptr,
                                                        char *detail, size_t max)
{
    ucs_memory_type_t device_type = UCS_MEMORY_TYPE_UNKNOWN, host_type = UCS_MEMORY_TYPE_UNKNOWN;
    static char host_buffer[4096];
    ucs_status_t device_status, host_status;

    device_status = strata_info_ucx.uct_md_detect_memory_type(md, (void *)(uintptr_t)ptr,
                                                              STRATA_INFO_MEMTYPE_BYTES,
                                                              &device_type);
    host_status   = strata_info_ucx.uct_md_detect_memory_type(md, host_buffer,
                                                              sizeof(host_buffer), &host_type);
    if ((device_status != UCS_OK) || (device_type != UCS_MEMORY_TYPE_CUDA)) {
        snprintf(detail, max,
                 "gpu_copy does not recognize cuMemAlloc memory (%s, type %d): UCX would take "
                 "device buffers for host memory",
                 strata_info_ucx.ucs_status_string(device_status), (int)device_type);
        return STRATA_INFO_MISSING;
    }
    if ((host_status == UCS_OK) && (host_type != UCS_MEMORY_TYPE_HOST)) {
        snprintf(detail, max, "gpu_copy takes host memory for GPU memory (type %d)",
                 (int)host_type);
        return STRATA_INFO_MISSING;
    }
    snprintf(detail, max, "uct_md_detect_memory_type: cuMemAlloc memory is CUDA, host memory is "
                          "not gpu_copy's");
    return STRATA_INFO_OK;
}

/* Listens, allocates and frees on device 0 with the domain open. */
static void strata_info_check_alloc(strata_info_t *info, uct_md_h md)
{
    const int events = UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE;
    strata_info_memtype_events_t seen = {0};
    strata_info_status_t detection;
    char error[160], detail[512];
    ucs_status_t status;
    CUcontext saved;
    CUresult res;

    /* NO_INSTALL: only listen; installing is the domain's business. */
    status = strata_info_ucx.ucm_set_event_handler(events | UCM_EVENT_FLAG_NO_INSTALL, 0,
                                                   strata_info_memtype_event_cb, &seen);
    if (status != UCS_OK) {
        strata_info_line(info, STRATA_INFO_WARN, "allocation hooks",
                         "cannot listen to UCX's memory type events: %s",
                         strata_info_ucx.ucs_status_string(status));
    }
    if (strata_cuda_ctx_push(0, &saved) != 0) {
        strata_info_line(info, STRATA_INFO_MISSING, "detection",
                         "cannot make GPU 0's context current");
        goto out_unset;
    }
    /* The hook announces the allocation from inside cuMemAlloc, after the
     * driver stored the pointer: in seen.ptr, where the callback looks. */
    res = strata_cuda.cuMemAlloc(&seen.ptr, STRATA_INFO_MEMTYPE_BYTES);
    if (res != CUDA_SUCCESS) {
        strata_info_line(info, STRATA_INFO_MISSING, "detection", "cuMemAlloc on GPU 0: %s",
                         strata_cuda_result_str(res, error, sizeof(error)));
        goto out_pop;
    }
    detection = strata_info_check_detection(md, seen.ptr, detail, sizeof(detail));
    (void)strata_cuda.cuMemFree(seen.ptr);
    if (status == UCS_OK) {
        strata_info_report_hooks(info, &seen);
    }
    strata_info_line(info, detection, "detection", "%s", detail);
    strata_info_report_ctx_flag(info, seen.alloc_seen);
out_pop:
    strata_cuda_ctx_pop(saved);
out_unset:
    if (status == UCS_OK) {
        strata_info_ucx.ucm_unset_event_handler(events, strata_info_memtype_event_cb, &seen);
    }
}

void strata_info_check_memtypes(strata_info_t *info)
{
    ucs_status_t status;
    uct_md_h md;

    strata_info_section(info, "Memory types");
    if (info->uct_component == NULL) {
        strata_info_line(info, STRATA_INFO_NOTE, "allocation hooks",
                         "UCX component strata is not loaded (see Plugins)");
        return;
    }
    if (!info->cuda_ready) {
        strata_info_line(info, STRATA_INFO_NOTE, "allocation hooks", "no usable GPU (see CUDA)");
        return;
    }
    status = strata_info_ucx_md_open((uct_component_h)info->uct_component, "gpu_copy", &md);
    if (status != UCS_OK) {
        strata_info_line(info, STRATA_INFO_MISSING, "gpu_copy domain", "uct_md_open: %s",
                         strata_info_ucx.ucs_status_string(status));
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "gpu_copy domain",
                     "opened through UCT, as UCP opens it (this installs the allocation hooks)");
    strata_info_check_alloc(info, md);
    strata_info_ucx.uct_md_close(md);
}
