/*
 * The gpu_ipc memory domain: export on registration, import on rkey unpack.
 *
 * Registering a buffer exports the whole allocation that holds it (see
 * gpu_ipc_key.h): a legacy IPC handle for cudaMalloc/cuMemAlloc memory, or
 * a POSIX file descriptor for VMM memory created exportable; anything else
 * gets a NONE key.  Unpacking a key maps the allocation into this process
 * through the process-wide cache (gpu_ipc_cache.h), and answers
 * UCS_ERR_UNREACHABLE whenever that cannot be done, which makes UCP drop
 * this domain from the rkey and move the buffer by another protocol.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv/writev */
#endif
#include "gpu_ipc_md.h"
#include "../base/gpu_base_device_reset.h"
#include "../strata_memhooks.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/sys.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* What a registration owns besides the key: the exported VMM descriptor
 * stays open while registered, since peers take it from this process. */
typedef struct uct_gpu_ipc_memh {
    uct_gpu_ipc_key_t key;
    int vmm_fd;
    void *address; /* the registered range, whose allocation the key exports */
    size_t length;
} uct_gpu_ipc_memh_t;

_Static_assert(sizeof(CUipcMemHandle) == UCT_GPU_IPC_LEGACY_HANDLE_SIZE,
               "the key carries a CUipcMemHandle");

static uct_gpu_ipc_cache_t uct_gpu_ipc_cache;
static pthread_once_t uct_gpu_ipc_cache_once = PTHREAD_ONCE_INIT;
/* Set by the exit-time purge: the driver may already be shutting down. */
static int uct_gpu_ipc_exiting;

/* ---- registration (the owner's side) ---- */

static uint64_t uct_gpu_ipc_self_start_time(void)
{
    static pid_t pid;
    static uint64_t start;

    /* Per pid, not once: a forked child is another owner. */
    if (pid != getpid()) {
        start = ucs_sys_get_proc_create_time(getpid());
        pid   = getpid();
    }
    return start;
}

static void uct_gpu_ipc_key_init(uct_gpu_ipc_key_t *key, const uct_strata_mem_info_t *info)
{
    CUdevice dev;
    CUuuid uuid;

    memset(key, 0, sizeof(*key));
    key->handle_type = UCT_GPU_IPC_HANDLE_NONE;
    key->owner_pid   = getpid();
    key->owner_start = uct_gpu_ipc_self_start_time();
    key->vmm_fd      = -1;
    key->base        = info->base;
    key->length      = info->length;
    key->buffer_id   = info->buffer_id;
    if ((info->ordinal >= 0) &&
        (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuDeviceGet(&dev, info->ordinal)) ==
         UCS_OK) &&
        (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuDeviceGetUuid(&uuid, dev)) ==
         UCS_OK)) {
        memcpy(key->dev_uuid, uuid.bytes, sizeof(key->dev_uuid));
    }
}

static ucs_status_t uct_gpu_ipc_export_legacy(uct_gpu_ipc_memh_t *memh)
{
    CUipcMemHandle handle;
    ucs_status_t status;

    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuIpcGetMemHandle(&handle,
                                                                (CUdeviceptr)memh->key.base));
    if (status != UCS_OK) {
        return status;
    }
    memcpy(memh->key.legacy_handle, &handle, sizeof(handle));
    memh->key.handle_type = UCT_GPU_IPC_HANDLE_LEGACY;
    return UCS_OK;
}

/*
 * Exports the physical allocation behind a VMM mapping as a file descriptor.
 * Returns UCS_ERR_UNSUPPORTED, with the reason in *why, for memory that is
 * not a VMM mapping or was not created exportable.
 */
static ucs_status_t uct_gpu_ipc_export_vmm(uct_gpu_ipc_memh_t *memh, const char **why)
{
    CUmemGenericAllocationHandle handle;
    CUmemAllocationProp prop;
    ucs_status_t status;
    int fd = -1;

    if (!strata_cuda_has_vmm()) {
        *why = "the driver has no VMM export";
        return UCS_ERR_UNSUPPORTED;
    }
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuMemRetainAllocationHandle(&handle,
                                                                          (void *)memh->key.base));
    if (status != UCS_OK) {
        *why = "not a VMM mapping";
        return UCS_ERR_UNSUPPORTED;
    }
    memset(&prop, 0, sizeof(prop));
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuMemGetAllocationPropertiesFromHandle(&prop,
                                                                                     handle));
    if (status != UCS_OK) {
        *why = "its properties are unknown";
        goto out_release;
    }
    if (!(prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        *why    = "created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR";
        status  = UCS_ERR_UNSUPPORTED;
        goto out_release;
    }
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuMemExportToShareableHandle(
                                          &fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                          0));
    if (status != UCS_OK) {
        *why = "cuMemExportToShareableHandle failed";
        goto out_release;
    }
    memh->vmm_fd          = fd;
    memh->key.vmm_fd      = fd;
    /* cuMemMap maps a handle from its start (the offset must be 0), so the
     * mapping at `base` begins at offset 0 of the physical allocation. */
    memh->key.vmm_offset  = 0;
    memh->key.handle_type = UCT_GPU_IPC_HANDLE_VMM_FD;

out_release:
    /* The reference cuMemRetainAllocationHandle took; the exported fd keeps
     * the allocation alive for importers on its own. */
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuMemRelease(handle));
    return status;
}

/* Chooses and creates the handle for the allocation described by memh->key;
 * leaves a NONE key, with the reason logged, if there is none to give. */
static void uct_gpu_ipc_export(const uct_strata_md_t *md, const uct_strata_mem_info_t *info,
                               uct_gpu_ipc_memh_t *memh)
{
    const char *why = NULL;

    /* Pool memory before anything else, whatever the driver answers for
     * IS_LEGACY_CUDA_IPC_CAPABLE (UCX notes that attribute is wrong for some
     * allocations): a pool reuses and releases its blocks in the order of
     * the owner's streams, which a peer's mapping and copies never follow. */
    if (info->mem_type != UCS_MEMORY_TYPE_CUDA) {
        why = "managed memory has no IPC handle";
    } else if (info->from_pool) {
        why = "stream-ordered pool memory is not exported";
    } else if (info->legacy_ipc) {
        if (!md->config.ipc_legacy) {
            why = "legacy IPC is disabled (UCX_STRATA_IPC_LEGACY=n)";
        } else if (uct_gpu_ipc_export_legacy(memh) != UCS_OK) {
            why = "cuIpcGetMemHandle failed";
        }
    } else if (!md->config.ipc_vmm) {
        why = "VMM export is disabled (UCX_STRATA_IPC_VMM=n)";
    } else {
        (void)uct_gpu_ipc_export_vmm(memh, &why);
    }
    if (why != NULL) {
        ucs_debug("gpu_ipc: allocation 0x%llx+%llu not exported (%s): peers will use another "
                  "protocol", (unsigned long long)info->base, (unsigned long long)info->length,
                  why);
    }
}

/* Fills memh's key for the allocation `info` describes (that of the
 * registered range) and exports it, or leaves a NONE key saying why not. */
static void uct_gpu_ipc_memh_export(const uct_strata_md_t *md, uct_gpu_ipc_memh_t *memh,
                                    const uct_strata_mem_info_t *info)
{
    memh->vmm_fd = -1;
    uct_gpu_ipc_key_init(&memh->key, info);
    if (info->spans) {
        ucs_debug("gpu_ipc: %p+%zu spans more than one allocation: not exported", memh->address,
                  memh->length);
    } else if ((memh->length > 0) && (info->mem_type != UCS_MEMORY_TYPE_HOST)) {
        uct_gpu_ipc_export(md, info, memh);
    }
}

static ucs_status_t uct_gpu_ipc_mem_reg(UCT_STRATA_MEM_REG_ARGS)
{
    uct_strata_md_t *md = ucs_derived_of(uct_md, uct_strata_md_t);
    ucs_log_level_t level = (UCT_STRATA_MEM_REG_FLAGS() & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
                                UCS_LOG_LEVEL_DEBUG :
                                UCS_LOG_LEVEL_ERROR;
    uct_strata_mem_info_t info;
    uct_gpu_ipc_memh_t *memh;
    ucs_status_t status;

    status = uct_strata_mem_info_get(address, length, &info);
    if ((status == UCS_OK) && (info.mem_type == UCS_MEMORY_TYPE_HOST) && (length > 0) &&
        !md->config.ipc_host) {
        ucs_log(level, "gpu_ipc cannot register %p (length %zu): not CUDA device memory",
                address, length);
        return UCS_ERR_INVALID_ADDR;
    }

    memh = ucs_malloc(sizeof(*memh), "gpu_ipc memh");
    if (memh == NULL) {
        ucs_log(level, "gpu_ipc: no memory for a registration");
        return UCS_ERR_NO_MEMORY;
    }
    memh->address = address;
    memh->length  = length;
    if ((status == UCS_OK) && (info.mem_type == UCS_MEMORY_TYPE_HOST) && (length > 0)) {
        /* Host memory: nothing to export or pin; the peer reads and writes
         * the registered range with CMA (always current: no buffer id). */
        memh->vmm_fd = -1;
        uct_gpu_ipc_key_init(&memh->key, &info);
        memh->key.handle_type = UCT_GPU_IPC_HANDLE_HOST;
        memh->key.base        = (uintptr_t)address;
        memh->key.length      = length;
        *memh_p               = memh;
        return UCS_OK;
    }
    uct_gpu_ipc_memh_export(md, memh, &info);
    ucs_trace("gpu_ipc: registered %p+%zu: %s key of 0x%llx+%llu", address, length,
              uct_gpu_ipc_handle_type_name(memh->key.handle_type),
              (unsigned long long)memh->key.base, (unsigned long long)memh->key.length);
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t uct_gpu_ipc_mem_dereg(UCT_STRATA_MEM_DEREG_ARGS)
{
    uct_gpu_ipc_memh_t *memh;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    memh = UCT_STRATA_MEM_DEREG_MEMH(params);
    if (memh->vmm_fd >= 0) {
        close(memh->vmm_fd);
    }
    ucs_free(memh);
    return UCS_OK;
}

/*
 * Whether the allocation a registration exported is still the one at its
 * address.  UCP keeps gpu_ipc registrations in its registration cache
 * (cache_mem_types, which UCX 1.18's rendezvous needs) until the allocation
 * hooks report the free (../strata_memhooks.c).  Without them
 * (UCX_STRATA_MEMTYPE_HOOKS=n, hooks that could not be installed, a free
 * they do not see) a cached registration outlives its allocation, and a new
 * allocation at the same address would go out with the old one's handle:
 * the peer would read or write the freed allocation through its mapping.
 * The buffer id tells them apart (the driver never reuses one in a process).
 */
static int uct_gpu_ipc_memh_is_current(const uct_gpu_ipc_memh_t *memh,
                                       const uct_strata_mem_info_t *info)
{
    return (info->base == memh->key.base) && (info->length == memh->key.length) &&
           (info->buffer_id == memh->key.buffer_id);
}

/* Serializes re-exports with the packs of one registration by several
 * workers (UCP's registration cache is the context's). */
static pthread_mutex_t uct_gpu_ipc_memh_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Packs the key of the allocation at the registered address now: asks the
 * driver (two queries, as a registration does: small beside the rendezvous
 * a key is packed for) and exports the new allocation if it was replaced
 * since it was registered.  The old allocation's VMM descriptor is closed, as the free
 * would have had the registration released.
 */
static ucs_status_t uct_gpu_ipc_mkey_pack(UCT_STRATA_MKEY_PACK_ARGS)
{
    uct_strata_md_t *md          = ucs_derived_of(uct_md, uct_strata_md_t);
    uct_gpu_ipc_memh_t *ipc_memh = memh;
    uct_strata_mem_info_t info;
    uct_gpu_ipc_key_t key;

    if (ipc_memh->key.handle_type == UCT_GPU_IPC_HANDLE_HOST) {
        key = ipc_memh->key;
        uct_gpu_ipc_key_pack(&key, rkey_buffer);
        return UCS_OK;
    }
    if (ipc_memh->length > 0) {
        (void)uct_strata_mem_info_get(ipc_memh->address, ipc_memh->length, &info);
    }
    pthread_mutex_lock(&uct_gpu_ipc_memh_lock);
    if ((ipc_memh->length > 0) && !uct_gpu_ipc_memh_is_current(ipc_memh, &info)) {
        ucs_debug("gpu_ipc: registration %p+%zu outlived its allocation (0x%llx+%llu buffer id "
                  "%llu, now 0x%llx+%zu buffer id %llu): exporting the allocation there now",
                  ipc_memh->address, ipc_memh->length, (unsigned long long)ipc_memh->key.base,
                  (unsigned long long)ipc_memh->key.length,
                  (unsigned long long)ipc_memh->key.buffer_id, (unsigned long long)info.base,
                  info.length, info.buffer_id);
        if (ipc_memh->vmm_fd >= 0) {
            close(ipc_memh->vmm_fd);
        }
        uct_gpu_ipc_memh_export(md, ipc_memh, &info);
    }
    key = ipc_memh->key;
    pthread_mutex_unlock(&uct_gpu_ipc_memh_lock);
    uct_gpu_ipc_key_pack(&key, rkey_buffer);
    return UCS_OK;
}

static ucs_status_t uct_gpu_ipc_md_query(uct_md_h uct_md, uct_strata_md_attr_t *md_attr)
{
    /* A registration is two driver queries (a few microseconds, paid once
     * per rendezvous message); a cost of 0, as UCX's cuda_ipc says, keeps
     * UCP's protocol thresholds where they are tuned for device memory. */
    const uct_strata_md_t *md = ucs_derived_of(uct_md, uct_strata_md_t);
    /* With UCX_STRATA_IPC_HOST, host memory too (see gpu_ipc_ep.c): UCP 1.13
     * then finds a get lane for a host sender and a device receiver. */
    uint64_t host             = md->config.ipc_host ? UCS_BIT(UCS_MEMORY_TYPE_HOST) : 0;
    uct_strata_md_caps_t caps = {
        .flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY,
        .reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_CUDA) | host,
        .access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA),
        .detect_mem_types = 0,
        /* UCP's cache drops a registration when the allocation hooks
         * announce the free (../strata_memhooks.c), as with UCX's cuda_ipc;
         * without them mkey_pack finds the allocation replaced. */
        .cache_mem_types  = UCS_BIT(UCS_MEMORY_TYPE_CUDA) | host,
        .rkey_packed_size = UCT_GPU_IPC_KEY_PACKED_SIZE,
        .reg_cost         = {0, 0},
    };

    uct_strata_md_attr_fill(md_attr, &caps);
    return UCS_OK;
}

/* ---- import (the peer's side) ---- */

/*
 * The ordinal of the device with UUID `uuid` as this process numbers it, or
 * -1 if it cannot see it (CUDA_VISIBLE_DEVICES): its memory cannot be mapped.
 */
static int uct_gpu_ipc_visible_ordinal(const uint8_t *uuid)
{
    int count = strata_cuda_device_count();
    CUuuid dev_uuid;
    CUdevice dev;
    int i;

    for (i = 0; i < count; ++i) {
        if ((strata_cuda.cuDeviceGet(&dev, i) == CUDA_SUCCESS) &&
            (strata_cuda.cuDeviceGetUuid(&dev_uuid, dev) == CUDA_SUCCESS) &&
            !memcmp(dev_uuid.bytes, uuid, sizeof(dev_uuid.bytes))) {
            return i;
        }
    }
    return -1;
}

int uct_gpu_ipc_rkey_ordinal(uct_gpu_ipc_rkey_t *rkey)
{
    if (rkey->ordinal == UCT_GPU_IPC_ORDINAL_UNKNOWN) {
        rkey->ordinal = uct_gpu_ipc_visible_ordinal(rkey->dev_uuid);
    }
    return rkey->ordinal;
}

int uct_gpu_ipc_owner_is_alive(pid_t pid, uint64_t start)
{
    /* 0: no such process (or no /proc to tell, where endpoints fail too). */
    unsigned long now = ucs_sys_get_proc_create_time(pid);

    return (now != 0) && (now == start);
}

/*
 * UCS_OK if the key's owner still runs; UCS_ERR_UNREACHABLE if its pid is
 * gone or belongs to a process of another start time: the owner has exited,
 * and whatever the pid holds now is not the memory the key describes.
 */
static ucs_status_t uct_gpu_ipc_check_owner(const uct_gpu_ipc_key_t *key)
{
    unsigned long now = ucs_sys_get_proc_create_time((pid_t)key->owner_pid);

    if (now == 0) {
        ucs_debug("gpu_ipc: pid %u that exported allocation 0x%llx has exited: unreachable",
                  key->owner_pid, (unsigned long long)key->base);
        return UCS_ERR_UNREACHABLE;
    }
    if (now != key->owner_start) {
        ucs_debug("gpu_ipc: pid %u started at %lu, but the process that exported allocation "
                  "0x%llx with it started at %llu: the owner has exited and its pid was "
                  "reused, unreachable",
                  key->owner_pid, now, (unsigned long long)key->base,
                  (unsigned long long)key->owner_start);
        return UCS_ERR_UNREACHABLE;
    }
    return UCS_OK;
}

static ucs_status_t uct_gpu_ipc_map_legacy(const uct_gpu_ipc_key_t *key, uint64_t *mapped_p)
{
    CUipcMemHandle handle;
    CUdeviceptr ptr;
    ucs_status_t status;

    /* The driver opens a live exporter's handle whatever pid the key names:
     * a key of an earlier process with that pid must not pass for it.  The
     * cache asked uct_gpu_ipc_check_owner() before mapping (its check op). */
    memcpy(&handle, key->legacy_handle, sizeof(handle));
    /* LAZY_ENABLE_PEER_ACCESS: the owner's device may differ from ours. */
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuIpcOpenMemHandle(
                                          &ptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    if (status != UCS_OK) {
        return UCS_ERR_UNREACHABLE;
    }
    *mapped_p = ptr;
    return UCS_OK;
}

/* The owner's exported descriptor, duplicated into this process. */
static int uct_gpu_ipc_take_owner_fd(const uct_gpu_ipc_key_t *key)
{
    int pidfd, fd;

    pidfd = (int)syscall(SYS_pidfd_open, (pid_t)key->owner_pid, 0);
    if (pidfd < 0) {
        ucs_debug("gpu_ipc: pidfd_open(%u) failed: %m", key->owner_pid);
        return -1;
    }
    /* Checked after pidfd_open, which pins the process the pid names now: a
     * process that got the pid after the owner exited started later than the
     * key says, so a match means the pidfd is the owner's, and the fd number
     * is taken from the owner and not from a stranger. */
    if (uct_gpu_ipc_check_owner(key) != UCS_OK) {
        close(pidfd);
        return -1;
    }
    fd = (int)syscall(SYS_pidfd_getfd, pidfd, key->vmm_fd, 0);
    if (fd < 0) {
        ucs_debug("gpu_ipc: pidfd_getfd(pid %u, fd %d) failed: %m (it needs ptrace access to "
                  "the owner: same user, kernel.yama.ptrace_scope 0)",
                  key->owner_pid, key->vmm_fd);
    }
    close(pidfd);
    return fd;
}

/*
 * The copy that reads the mapping may run on any device's stream of this
 * process (the interface's, not necessarily the one current now), so every
 * device that can get access gets it; at least the current one must.
 */
static ucs_status_t uct_gpu_ipc_vmm_set_access(CUdeviceptr ptr, size_t length)
{
    CUmemAccessDesc access[16];
    CUdevice current;
    int count = ucs_min(strata_cuda_device_count(), (int)ucs_static_array_size(access));
    int i;

    for (i = 0; i < count; ++i) {
        memset(&access[i], 0, sizeof(access[i]));
        access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[i].location.id   = i;
        access[i].flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    if ((count > 0) && (strata_cuda.cuMemSetAccess(ptr, length, access, count) == CUDA_SUCCESS)) {
        return UCS_OK;
    }
    if (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuCtxGetDevice(&current)) !=
        UCS_OK) {
        return UCS_ERR_UNREACHABLE;
    }
    access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[0].location.id   = (int)current;
    access[0].flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                strata_cuda.cuMemSetAccess(ptr, length, access, 1));
}

static ucs_status_t uct_gpu_ipc_map_vmm(const uct_gpu_ipc_key_t *key, uint64_t *mapped_p)
{
    CUmemGenericAllocationHandle handle;
    CUdeviceptr ptr;
    ucs_status_t status;
    int fd;

    if (!strata_cuda_has_vmm()) {
        ucs_debug("gpu_ipc: the driver cannot import VMM memory");
        return UCS_ERR_UNREACHABLE;
    }
    fd = uct_gpu_ipc_take_owner_fd(key);
    if (fd < 0) {
        return UCS_ERR_UNREACHABLE;
    }
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuMemImportFromShareableHandle(
                                          &handle, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    /* The imported handle holds the allocation; our copy of the fd is done. */
    close(fd);
    if (status != UCS_OK) {
        goto err;
    }
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuMemAddressReserve(&ptr, key->length, 0, 0, 0));
    if (status != UCS_OK) {
        goto err_release;
    }
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                  strata_cuda.cuMemMap(ptr, key->length, key->vmm_offset, handle,
                                                       0));
    if (status != UCS_OK) {
        goto err_free_va;
    }
    status = uct_gpu_ipc_vmm_set_access(ptr, key->length);
    if (status != UCS_OK) {
        goto err_unmap;
    }
    /* The mapping keeps the physical allocation; the handle is not needed. */
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuMemRelease(handle));
    *mapped_p = ptr;
    return UCS_OK;

err_unmap:
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuMemUnmap(ptr, key->length));
err_free_va:
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               strata_cuda.cuMemAddressFree(ptr, key->length));
err_release:
    (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuMemRelease(handle));
err:
    return UCS_ERR_UNREACHABLE;
}

static ucs_status_t uct_gpu_ipc_cache_map_cb(void *arg, const uct_gpu_ipc_key_t *key,
                                             uint64_t *mapped_p, void **map_ctx_p)
{
    CUcontext ctx = NULL, saved;
    ucs_status_t status;
    int ordinal;

    if (strata_cuda_load() != 0) {
        ucs_debug("gpu_ipc: no CUDA driver to map a peer's memory: %s", strata_cuda_error());
        return UCS_ERR_UNREACHABLE;
    }
    ordinal = uct_gpu_ipc_visible_ordinal(key->dev_uuid);
    if (ordinal < 0) {
        ucs_debug("gpu_ipc: the device of pid %u's allocation 0x%llx is not visible here",
                  key->owner_pid, (unsigned long long)key->base);
        return UCS_ERR_UNREACHABLE;
    }
    /* The primary context of the calling thread's device (the device the
     * application's copies run on, and so the interfaces':
     * uct_gpu_base_iface_ctx_enter), else of the owner's, which can always
     * map its own memory.  Never the thread's own context: the mapping is
     * cached process-wide, and an application may destroy a context it
     * created (a cached mapping would then be dead). */
    ordinal = strata_cuda_current_device(ordinal);
    ctx     = strata_cuda_primary_ctx(ordinal);
    if ((ctx == NULL) || (strata_cuda_ctx_push(ordinal, &saved) != 0)) {
        ucs_debug("gpu_ipc: no primary context of device %d to map pid %u's allocation in", ordinal,
                  key->owner_pid);
        return UCS_ERR_UNREACHABLE;
    }
    /* A mapping belongs to the context that made it: unmapping, possibly
     * from another thread, happens there too; a reset of that context
     * drops it first (uct_gpu_ipc_device_reset). */
    *map_ctx_p = ctx;
    uct_strata_memhooks_own_call_enter();
    switch (key->handle_type) {
    case UCT_GPU_IPC_HANDLE_LEGACY:
        status = uct_gpu_ipc_map_legacy(key, mapped_p);
        break;
    case UCT_GPU_IPC_HANDLE_VMM_FD:
        status = uct_gpu_ipc_map_vmm(key, mapped_p);
        break;
    default:
        status = UCS_ERR_UNREACHABLE;
        break;
    }
    uct_strata_memhooks_own_call_leave();
    strata_cuda_ctx_pop(saved);
    return status;
}

static void uct_gpu_ipc_unmap(const uct_gpu_ipc_key_t *key, uint64_t mapped,
                              ucs_log_level_t level)
{
    if (key->handle_type == UCT_GPU_IPC_HANDLE_LEGACY) {
        (void)UCT_STRATA_CUDA_CALL(level, strata_cuda.cuIpcCloseMemHandle((CUdeviceptr)mapped));
        return;
    }
    (void)UCT_STRATA_CUDA_CALL(level, strata_cuda.cuMemUnmap((CUdeviceptr)mapped, key->length));
    (void)UCT_STRATA_CUDA_CALL(level,
                               strata_cuda.cuMemAddressFree((CUdeviceptr)mapped, key->length));
}

static void uct_gpu_ipc_cache_unmap_cb(void *arg, const uct_gpu_ipc_key_t *key, uint64_t mapped,
                                       void *map_ctx)
{
    /* After exit() has begun the driver may be gone already; the process's
     * end releases the mappings anyway. */
    ucs_log_level_t level = uct_gpu_ipc_exiting ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_WARN;
    CUcontext saved       = NULL;

    if ((UCT_STRATA_CUDA_CALL(level, strata_cuda.cuCtxGetCurrent(&saved)) != UCS_OK) ||
        ((saved != map_ctx) &&
         (UCT_STRATA_CUDA_CALL(level, strata_cuda.cuCtxSetCurrent(map_ctx)) != UCS_OK))) {
        return;
    }
    uct_gpu_ipc_unmap(key, mapped, level);
    if (saved != map_ctx) {
        (void)UCT_STRATA_CUDA_CALL(level, strata_cuda.cuCtxSetCurrent(saved));
    }
}

/* A stale key (its owner exited, its pid reused) is refused before the
 * cache retires the live owner's entries as superseded by it. */
static ucs_status_t uct_gpu_ipc_cache_check_cb(void *arg, const uct_gpu_ipc_key_t *key)
{
    return uct_gpu_ipc_check_owner(key);
}

static const uct_gpu_ipc_cache_ops_t uct_gpu_ipc_cache_ops = {
    .map   = uct_gpu_ipc_cache_map_cb,
    .unmap = uct_gpu_ipc_cache_unmap_cb,
    .check = uct_gpu_ipc_cache_check_cb,
};

/* Device `ordinal`'s primary context is about to be reset: the peers'
 * allocations mapped in it go with it, so the cache forgets them first
 * (unmapping what no copy uses). */
static void uct_gpu_ipc_device_reset(void *arg, int ordinal)
{
    CUcontext ctx;
    unsigned count;

    /* every mapping was made in a primary context Strata retained: none
     * retained for this device, none to drop (and none retained now) */
    ctx   = strata_cuda_primary_ctx_retained(ordinal);
    count = (ctx == NULL) ? 0 : uct_gpu_ipc_cache_retire_ctx(&uct_gpu_ipc_cache, ctx);
    ucs_debug("gpu_ipc: device %d's primary context is reset: %u cached mapping(s) of peers' "
              "memory dropped",
              ordinal, count);
}

static uct_gpu_base_device_reset_listener_t uct_gpu_ipc_device_reset_listener = {
    .cb = uct_gpu_ipc_device_reset,
};

static void uct_gpu_ipc_cache_init_once(void)
{
    /* The setting's default until a domain is opened with its value. */
    uct_gpu_ipc_cache_init(&uct_gpu_ipc_cache, &uct_gpu_ipc_cache_ops, NULL, 1024);
    /* Nothing is mapped before the cache exists: a reset matters from here. */
    uct_gpu_base_device_reset_listen(&uct_gpu_ipc_device_reset_listener);
}

uct_gpu_ipc_cache_t *uct_gpu_ipc_global_cache(void)
{
    pthread_once(&uct_gpu_ipc_cache_once, uct_gpu_ipc_cache_init_once);
    return &uct_gpu_ipc_cache;
}

UCS_STATIC_CLEANUP
{
    uct_gpu_ipc_cache_stats_t stats;

    if (uct_gpu_ipc_cache.ops == NULL) {
        return; /* never used */
    }
    /* No driver calls here: at exit the CUDA runtime or driver may be torn
     * down already, and the process's end releases every mapping anyway. */
    uct_gpu_ipc_exiting = 1;
    uct_gpu_ipc_cache_get_stats(&uct_gpu_ipc_cache, &stats);
    ucs_debug("gpu_ipc cache at exit: %lu hits, %lu misses, %lu maps, %lu stale, %lu evicted, "
              "%u still referenced",
              stats.hits, stats.misses, stats.maps, stats.stale, stats.evictions, stats.mapped);
}

/* One cache per process (a legacy handle opens once per process), so the
 * domain opened last sets its size. */
static ucs_status_t uct_gpu_ipc_md_init(uct_strata_md_t *md, const uct_strata_md_config_t *config)
{
    uct_gpu_ipc_cache_set_limit(uct_gpu_ipc_global_cache(), md->config.ipc_cache_size);
    return UCS_OK;
}

/* The owner (start time and pid) whose host memory CMA last reached: UCP
 * 1.13 unpacks a key per rendezvous message, mostly of the same peer. */
static uint64_t uct_gpu_ipc_host_reached;

/*
 * A key of the owner's host memory: reachable if this process may read the
 * owner's memory with CMA (same user, ptrace access), which one byte of the
 * range tells; else UNREACHABLE, and UCP uses another protocol.  Asked once
 * per owner (its pid and start time read from /proc): every copy checks
 * again that the owner is that same process (gpu_ipc_ep.c).
 */
static ucs_status_t uct_gpu_ipc_rkey_unpack_host(const uct_gpu_ipc_key_t *key, uct_rkey_t *rkey_p,
                                                 void **handle_p)
{
    uint64_t owner = ((uint64_t)key->owner_start << 22) ^ key->owner_pid;
    uct_gpu_ipc_rkey_t *rkey;
    struct iovec local, remote;
    char byte;

    if (__atomic_load_n(&uct_gpu_ipc_host_reached, __ATOMIC_RELAXED) != owner) {
        if (uct_gpu_ipc_check_owner(key) != UCS_OK) {
            return UCS_ERR_UNREACHABLE;
        }
        local.iov_base  = &byte;
        local.iov_len   = 1;
        remote.iov_base = (void *)(uintptr_t)key->base;
        remote.iov_len  = 1;
        if (process_vm_readv((pid_t)key->owner_pid, &local, 1, &remote, 1, 0) != 1) {
            ucs_debug("gpu_ipc: cannot read pid %u's host memory 0x%llx with CMA (%m): "
                      "unreachable",
                      key->owner_pid, (unsigned long long)key->base);
            return UCS_ERR_UNREACHABLE;
        }
        __atomic_store_n(&uct_gpu_ipc_host_reached, owner, __ATOMIC_RELAXED);
    }
    rkey = ucs_malloc(sizeof(*rkey), "gpu_ipc host rkey");
    if (rkey == NULL) {
        ucs_error("gpu_ipc: no memory for a remote key");
        return UCS_ERR_NO_MEMORY;
    }
    rkey->remote_base = key->base;
    rkey->length      = key->length;
    rkey->mapped_base = 0;
    rkey->owner_pid   = key->owner_pid;
    rkey->owner_start = key->owner_start;
    rkey->entry       = NULL;
    rkey->is_host     = 1;
    rkey->ordinal     = -1;
    *rkey_p           = (uintptr_t)rkey;
    *handle_p         = NULL;
    return UCS_OK;
}

ucs_status_t uct_gpu_ipc_rkey_unpack(UCT_STRATA_RKEY_UNPACK_ARGS)
{
    uct_gpu_ipc_rkey_t *rkey;
    uct_gpu_ipc_key_t key;
    ucs_status_t status;
    char why[128];

    switch (uct_gpu_ipc_key_unpack(rkey_buffer, &key, why, sizeof(why))) {
    case 0:
        break;
    case UCT_GPU_IPC_KEY_FOREIGN:
        /* A peer of another version: use another protocol with it. */
        ucs_diag("gpu_ipc: remote key not understood (%s): unreachable", why);
        return UCS_ERR_UNREACHABLE;
    default:
        ucs_error("gpu_ipc: invalid remote key: %s", why);
        return UCS_ERR_INVALID_PARAM;
    }
    if (key.handle_type == UCT_GPU_IPC_HANDLE_NONE) {
        ucs_debug("gpu_ipc: pid %u's allocation 0x%llx is not exported: unreachable",
                  key.owner_pid, (unsigned long long)key.base);
        return UCS_ERR_UNREACHABLE;
    }
    if (key.owner_pid == (uint32_t)getpid()) {
        /* The driver refuses to open a process's own handles. */
        ucs_debug("gpu_ipc: remote key of allocation 0x%llx is this process's: unreachable",
                  (unsigned long long)key.base);
        return UCS_ERR_UNREACHABLE;
    }
    if (key.handle_type == UCT_GPU_IPC_HANDLE_HOST) {
        return uct_gpu_ipc_rkey_unpack_host(&key, rkey_p, handle_p);
    }

    rkey = ucs_malloc(sizeof(*rkey), "gpu_ipc rkey");
    if (rkey == NULL) {
        ucs_error("gpu_ipc: no memory for a remote key");
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_gpu_ipc_cache_get(uct_gpu_ipc_global_cache(), &key, &rkey->entry,
                                   &rkey->mapped_base);
    if (status != UCS_OK) {
        ucs_debug("gpu_ipc: cannot map pid %u's %s allocation 0x%llx+%llu: %s", key.owner_pid,
                  uct_gpu_ipc_handle_type_name(key.handle_type), (unsigned long long)key.base,
                  (unsigned long long)key.length, ucs_status_string(status));
        ucs_free(rkey);
        return status;
    }
    rkey->remote_base = key.base;
    rkey->length      = key.length;
    rkey->owner_pid   = key.owner_pid;
    rkey->owner_start = key.owner_start;
    rkey->ordinal     = UCT_GPU_IPC_ORDINAL_UNKNOWN;
    memcpy(rkey->dev_uuid, key.dev_uuid, sizeof(rkey->dev_uuid));
    rkey->is_host     = 0;
    *rkey_p           = (uintptr_t)rkey;
    *handle_p         = NULL;
    return UCS_OK;
}

ucs_status_t uct_gpu_ipc_rkey_release(uct_component_t *component, uct_rkey_t uct_rkey,
                                      void *handle)
{
    uct_gpu_ipc_rkey_t *rkey = (uct_gpu_ipc_rkey_t *)uct_rkey;

    if (rkey->entry != NULL) {
        uct_gpu_ipc_cache_put(uct_gpu_ipc_global_cache(), rkey->entry);
    }
    ucs_free(rkey);
    return UCS_OK;
}

/* The mapping cache is the process's, not the domain's: it outlives it. */
/* clang-format off */
static uct_md_ops_t uct_gpu_ipc_md_ops = {
    .close                  = uct_strata_md_close,
    .query                  = uct_gpu_ipc_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg                = uct_gpu_ipc_mem_reg,
    .mem_dereg              = uct_gpu_ipc_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_gpu_ipc_mkey_pack,
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)ucs_empty_function_return_unsupported,
    UCT_STRATA_MD_OPS_VERSIONED
};
/* clang-format on */

const uct_strata_md_desc_t uct_gpu_ipc_md_desc = {
    .name = UCT_STRATA_MD_NAME_IPC,
    .kind = UCT_STRATA_MD_IPC,
    .ops  = &uct_gpu_ipc_md_ops,
    .init = uct_gpu_ipc_md_init,
};
