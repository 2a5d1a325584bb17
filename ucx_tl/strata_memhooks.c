/*
 * Memory-type detection for a UCX built without CUDA (see strata_memhooks.h).
 */
#include "strata_memhooks.h"
#include "strata_ucx_compat.h"
#include "base/gpu_base_device_reset.h"

#include <common/strata_cuda.h>
#include <common/strata_mem.h>
#include <ucm/api/ucm.h>
#include <ucm/bistro/bistro.h>
#include <ucm/event/event.h>
#include <ucm/util/sys.h>
#include <ucs/config/global_opts.h>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_cache.h>

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the hooks: call the driver, then tell UCX's memory type cache ---- */

static void uct_strata_memhooks_scan_deferred(void);

static void uct_strata_memhooks_dispatch(ucm_event_type_t type, CUdeviceptr ptr, size_t size,
                                         ucs_memory_type_t mem_type)
{
    ucm_event_t event;

    if ((ptr == 0) || (size == 0)) {
        return;
    }
    if (type == UCM_EVENT_MEM_TYPE_ALLOC) {
        /* first, so that the allocation's own entry lands on top */
        uct_strata_memhooks_scan_deferred();
    }
    uct_strata_memtype_event_init(&event, (void *)ptr, size, mem_type);
    ucm_event_dispatch(type, &event);
}

/* Nonzero while Strata's own transports call a hooked entry point on the
 * data path (uct_strata_memhooks_own_call_enter). */
static __thread int uct_strata_memhooks_own_calls;

void uct_strata_memhooks_own_call_enter(void)
{
    ++uct_strata_memhooks_own_calls;
}

void uct_strata_memhooks_own_call_leave(void)
{
    --uct_strata_memhooks_own_calls;
}

/* Device memory Strata sees allocated, and the context allocating it, are
 * made to complete synchronous memsets and copies before they return, and
 * a context met here the first time is settled (strata_mem.h): an
 * allocation is off the data path.  Called after ucm_event_leave(): the
 * settling waits for the application's default streams, and libucm's event
 * lock, which every mmap hook takes, is not held meanwhile.  Strata's own
 * mappings on the data path (gpu_ipc's) meet nothing. */
static void uct_strata_memhooks_sync_memops(CUdeviceptr ptr)
{
    if (uct_strata_memhooks_own_calls == 0) {
        (void)strata_mem_set_sync_memops((uintptr_t)ptr, STRATA_MEM_MEET);
    }
}

/* The size of the allocation that starts at ptr, asked before it is freed. */
static size_t uct_strata_memhooks_range(CUdeviceptr ptr)
{
    CUdeviceptr base = 0;
    size_t size      = 0;

    if ((ptr == 0) || (strata_cuda.cuMemGetAddressRange(&base, &size, ptr) != CUDA_SUCCESS)) {
        return 0;
    }
    return size;
}

/*
 * Hooks of the regular entry points: an allocation whose first arguments
 * are (CUdeviceptr *dptr, size_t size), reported once the driver succeeded;
 * a release whose first argument is the pointer, reported before the driver
 * frees it (afterwards its size cannot be asked).  Each defines the pointer
 * to the original entry point (filled by the patcher) and the hook.
 */
#define UCT_STRATA_ALLOC_HOOK(_func, _mem_type, _params, _args) \
    static CUresult(*uct_strata_orig_##_func) _params; \
    static CUresult uct_strata_hook_##_func _params \
    { \
        CUresult res; \
        ucm_event_enter(); \
        res = uct_strata_orig_##_func _args; \
        if (res == CUDA_SUCCESS) { \
            uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, *dptr, size, _mem_type); \
        } \
        ucm_event_leave(); \
        if (res == CUDA_SUCCESS) { \
            uct_strata_memhooks_sync_memops(*dptr); \
        } \
        return res; \
    }

#define UCT_STRATA_FREE_HOOK(_func, _params, _args) \
    static CUresult(*uct_strata_orig_##_func) _params; \
    static CUresult uct_strata_hook_##_func _params \
    { \
        CUresult res; \
        ucm_event_enter(); \
        uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_FREE, dptr, \
                                     uct_strata_memhooks_range(dptr), UCS_MEMORY_TYPE_CUDA); \
        res = uct_strata_orig_##_func _args; \
        ucm_event_leave(); \
        return res; \
    }

UCT_STRATA_ALLOC_HOOK(cuMemAlloc, UCS_MEMORY_TYPE_CUDA, (CUdeviceptr * dptr, size_t size),
                      (dptr, size))
UCT_STRATA_ALLOC_HOOK(cuMemAllocManaged, UCS_MEMORY_TYPE_CUDA_MANAGED,
                      (CUdeviceptr * dptr, size_t size, unsigned flags), (dptr, size, flags))
UCT_STRATA_ALLOC_HOOK(cuMemAllocAsync, UCS_MEMORY_TYPE_CUDA,
                      (CUdeviceptr * dptr, size_t size, CUstream stream), (dptr, size, stream))
UCT_STRATA_ALLOC_HOOK(cuMemAllocFromPoolAsync, UCS_MEMORY_TYPE_CUDA,
                      (CUdeviceptr * dptr, size_t size, CUmemoryPool pool, CUstream stream),
                      (dptr, size, pool, stream))
UCT_STRATA_FREE_HOOK(cuMemFree, (CUdeviceptr dptr), (dptr))
UCT_STRATA_FREE_HOOK(cuMemFreeAsync, (CUdeviceptr dptr, CUstream stream), (dptr, stream))
/* Per-thread default stream variants (programs built with
 * --default-stream per-thread call these). */
UCT_STRATA_ALLOC_HOOK(cuMemAllocAsync_ptsz, UCS_MEMORY_TYPE_CUDA,
                      (CUdeviceptr * dptr, size_t size, CUstream stream), (dptr, size, stream))
UCT_STRATA_ALLOC_HOOK(cuMemAllocFromPoolAsync_ptsz, UCS_MEMORY_TYPE_CUDA,
                      (CUdeviceptr * dptr, size_t size, CUmemoryPool pool, CUstream stream),
                      (dptr, size, pool, stream))
UCT_STRATA_FREE_HOOK(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream stream), (dptr, stream))

/*
 * A peer's allocation mapped by CUDA IPC is device memory no allocation hook
 * sees, and it may be the only device memory the process has (the deferred
 * scan has then not run): report the mapping itself, as an allocation, and
 * its release.  The pointer attribute belongs to the exporter's allocation;
 * the importing context is met (flagged and settled once), so its own
 * synchronous writes to the mapping land before they return.
 */
static CUresult (*uct_strata_orig_cuIpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned);

static CUresult uct_strata_hook_cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle handle,
                                                   unsigned flags)
{
    CUresult res;

    ucm_event_enter();
    res = uct_strata_orig_cuIpcOpenMemHandle(dptr, handle, flags);
    if (res == CUDA_SUCCESS) {
        uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, *dptr,
                                     uct_strata_memhooks_range(*dptr), UCS_MEMORY_TYPE_CUDA);
    }
    ucm_event_leave();
    if ((res == CUDA_SUCCESS) && (uct_strata_memhooks_own_calls == 0)) {
        (void)strata_mem_sync_memops_ctx();
    }
    return res;
}

/* The driver counts the opens of one handle in a context (each returns the
 * same pointer) and unmaps at the last close: released only then. */
static CUresult (*uct_strata_orig_cuIpcCloseMemHandle)(CUdeviceptr);

static CUresult uct_strata_hook_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    size_t size;
    CUresult res;

    ucm_event_enter();
    size = uct_strata_memhooks_range(dptr);
    res  = uct_strata_orig_cuIpcCloseMemHandle(dptr);
    if ((res == CUDA_SUCCESS) && (uct_strata_memhooks_range(dptr) == 0)) {
        uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_FREE, dptr, size, UCS_MEMORY_TYPE_CUDA);
    }
    ucm_event_leave();
    return res;
}

/* The irregular ones. */
static CUresult (*uct_strata_orig_cuMemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t,
                                                   unsigned);
static CUresult (*uct_strata_orig_cuMemMap)(CUdeviceptr, size_t, size_t,
                                            CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*uct_strata_orig_cuMemUnmap)(CUdeviceptr, size_t);

static CUresult uct_strata_hook_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                                size_t height, unsigned elem)
{
    CUresult res;

    ucm_event_enter();
    res = uct_strata_orig_cuMemAllocPitch(dptr, pitch, width, height, elem);
    if (res == CUDA_SUCCESS) {
        uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, *dptr, *pitch * height,
                                     UCS_MEMORY_TYPE_CUDA);
    }
    ucm_event_leave();
    if (res == CUDA_SUCCESS) {
        uct_strata_memhooks_sync_memops(*dptr);
    }
    return res;
}

static CUresult uct_strata_hook_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                         CUmemGenericAllocationHandle handle,
                                         unsigned long long flags)
{
    CUresult res;

    ucm_event_enter();
    res = uct_strata_orig_cuMemMap(ptr, size, offset, handle, flags);
    if (res == CUDA_SUCCESS) {
        uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, ptr, size, UCS_MEMORY_TYPE_CUDA);
    }
    ucm_event_leave();
    if (res == CUDA_SUCCESS) {
        uct_strata_memhooks_sync_memops(ptr);
    }
    return res;
}

static CUresult uct_strata_hook_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult res;

    ucm_event_enter();
    uct_strata_memhooks_dispatch(UCM_EVENT_MEM_TYPE_FREE, ptr, size, UCS_MEMORY_TYPE_CUDA);
    res = uct_strata_orig_cuMemUnmap(ptr, size);
    ucm_event_leave();
    return res;
}

/* ---- installing them ---- */

/* What a hook's absence, or a failure to patch it, means for the cache. */
typedef enum {
    /* Absent: the driver is too old to hook.  Unpatchable: allocations (or
     * frees) would go unseen, the cache cannot be trusted. */
    UCT_STRATA_MEMHOOK_REQUIRED,
    /* May be absent (older drivers); if present, as REQUIRED. */
    UCT_STRATA_MEMHOOK_IF_PRESENT,
    /* Reports memory the scan of the driver's address reservations also
     * covers, once it has run (CUDA IPC mappings): without it a process
     * whose only device memory is mapped from a peer before it allocates
     * any needs UCX_STRATA_MEMTYPE_SCAN=on (if the driver reserved the
     * range by ucp_init) or UCX_MEMTYPE_CACHE=n. */
    UCT_STRATA_MEMHOOK_BEST_EFFORT
} uct_strata_memhook_need_t;

typedef struct uct_strata_memhook {
    const char *symbol;  /* the driver's versioned entry point */
    void *hook;
    void **orig;
    uct_strata_memhook_need_t need;
    void **after; /* a hook that must be in place first (its orig), or NULL */
} uct_strata_memhook_t;

/* _func is pasted here, never passed on unpasted: cuda.h would expand
 * cuMemAlloc to cuMemAlloc_v2 on the way */
#define UCT_STRATA_MEMHOOK_ENTRY(_symbol, _hook, _orig, _need, _after) \
    { \
        _symbol, (void *)_hook, (void **)&_orig, UCT_STRATA_MEMHOOK_##_need, _after \
    }
#define UCT_STRATA_MEMHOOK_AFTER(_symbol, _func, _need, _after) \
    UCT_STRATA_MEMHOOK_ENTRY(_symbol, uct_strata_hook_##_func, uct_strata_orig_##_func, _need, \
                             _after)
#define UCT_STRATA_MEMHOOK(_symbol, _func, _need) \
    UCT_STRATA_MEMHOOK_ENTRY(_symbol, uct_strata_hook_##_func, uct_strata_orig_##_func, _need, NULL)

/*
 * cuDevicePrimaryCtxReset destroys everything of the primary context, the
 * peers' allocations gpu_ipc mapped and caches there included: the
 * transports that keep such state hear of it (gpu_base_device_reset.h) and
 * forget it before the driver runs.
 */
static CUresult (*uct_strata_orig_cuDevicePrimaryCtxReset)(CUdevice);

static CUresult uct_strata_hook_cuDevicePrimaryCtxReset(CUdevice dev)
{
    uct_gpu_base_device_reset_notify((int)dev);
    return uct_strata_orig_cuDevicePrimaryCtxReset(dev);
}

static uct_strata_memhook_t uct_strata_memhooks[] = {
    UCT_STRATA_MEMHOOK("cuMemAlloc_v2", cuMemAlloc, REQUIRED),
    UCT_STRATA_MEMHOOK("cuMemFree_v2", cuMemFree, REQUIRED),
    UCT_STRATA_MEMHOOK("cuMemAllocPitch_v2", cuMemAllocPitch, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemAllocManaged", cuMemAllocManaged, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemAllocAsync", cuMemAllocAsync, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemFreeAsync", cuMemFreeAsync, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemAllocAsync_ptsz", cuMemAllocAsync_ptsz, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemAllocFromPoolAsync_ptsz", cuMemAllocFromPoolAsync_ptsz, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemFreeAsync_ptsz", cuMemFreeAsync_ptsz, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemMap", cuMemMap, IF_PRESENT),
    UCT_STRATA_MEMHOOK("cuMemUnmap", cuMemUnmap, IF_PRESENT),
    /* the close first: a mapping reported without its release would stay
     * device memory in the cache after it is gone */
    UCT_STRATA_MEMHOOK("cuIpcCloseMemHandle", cuIpcCloseMemHandle, BEST_EFFORT),
    UCT_STRATA_MEMHOOK_AFTER("cuIpcOpenMemHandle_v2", cuIpcOpenMemHandle, BEST_EFFORT,
                             (void **)&uct_strata_orig_cuIpcCloseMemHandle),
    UCT_STRATA_MEMHOOK("cuDevicePrimaryCtxReset_v2", cuDevicePrimaryCtxReset, BEST_EFFORT),
};

static pthread_once_t uct_strata_memhooks_once = PTHREAD_ONCE_INIT;
static ucs_ternary_auto_value_t uct_strata_memhooks_mode;
static ucs_on_off_auto_value_t uct_strata_memhooks_scan = UCS_CONFIG_AUTO;
static ucs_status_t uct_strata_memhooks_status = UCS_ERR_NO_RESOURCE;
static int uct_strata_memhooks_installed;

/*
 * Patches the entry point's first bytes with a jump to our hook (libucm's
 * "bistro" mode).  Patching the code itself, not the callers' relocations,
 * is what catches cudaMalloc: the CUDA runtime reaches the driver through
 * cuGetProcAddress, never through a PLT entry.
 */
static ucs_status_t uct_strata_memhook_install(uct_strata_memhook_t *h)
{
    void *entry = dlsym(strata_cuda_driver_handle(), h->symbol);
    ucs_status_t status;

    if (entry == NULL) {
        ucs_debug("CUDA driver has no %s; not hooked", h->symbol);
        return (h->need == UCT_STRATA_MEMHOOK_REQUIRED) ? UCS_ERR_UNSUPPORTED : UCS_OK;
    }
    if ((h->after != NULL) && (*h->after == NULL)) {
        ucs_diag("strata: %s left unhooked: the hook it pairs with is not in place", h->symbol);
        return UCS_OK;
    }
    status = ucm_bistro_patch(entry, h->hook, h->symbol, h->orig, NULL);
    if ((status != UCS_OK) && (h->need == UCT_STRATA_MEMHOOK_BEST_EFFORT)) {
        ucs_diag("strata: cannot patch %s at %p (%s); left unhooked: what it maps is found by "
                 "the scan of the driver's address ranges once the process allocates device "
                 "memory",
                 h->symbol, entry, ucs_status_string(status));
        return UCS_OK;
    } else if (status != UCS_OK) {
        ucs_diag("strata: cannot patch %s at %p: %s", h->symbol, entry,
                 ucs_status_string(status));
        return status;
    }
    ucs_debug("hooked CUDA driver entry point %s", h->symbol);
    return UCS_OK;
}

/* The smallest inaccessible anonymous range taken for a device address
 * reservation: the driver reserves in units of 2 MiB and more. */
#define UCT_STRATA_MEMHOOKS_MIN_RESERVATION (2ul << 20)

/*
 * Memory the driver reserved before the hooks existed shows up in
 * /proc/self/maps as large inaccessible anonymous ranges (device address
 * reservations) or maps of /dev/nvidia*; mark those "unknown", so UCP asks
 * the gpu_copy domain about addresses in them instead of assuming host
 * memory.  Other inaccessible ranges (the gaps of every loaded library,
 * thread stack guards) are left out: each entry makes every lookup of host
 * buffers in the cache a little slower.
 */
static int uct_strata_memhooks_scan_match(void *addr, size_t length, int prot, const char *path,
                                          ucm_event_t *event)
{
    int nvidia_map  = !strncmp(path, "/dev/nvidia", 11);
    int reservation = !(prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) && (path[0] == '\0') &&
                      (length >= UCT_STRATA_MEMHOOKS_MIN_RESERVATION);

    uct_strata_memtype_event_init(event, addr, length, UCS_MEMORY_TYPE_UNKNOWN);
    return nvidia_map || reservation;
}

/* The cache being made: its handler alone is told. */
static int uct_strata_memhooks_scan_cb(void *arg, void *addr, size_t length, int prot,
                                       const char *path)
{
    ucm_event_handler_t *handler = arg;
    ucm_event_t event;

    if (uct_strata_memhooks_scan_match(addr, length, prot, path, &event)) {
        ucm_event_enter();
        handler->cb(UCM_EVENT_MEM_TYPE_ALLOC, &event, handler->arg);
        ucm_event_leave();
    }
    return 0;
}

/* A deferred scan, from inside a hook (ucm_event_enter()ed): every
 * handler, as for the hooks' own events. */
static int uct_strata_memhooks_scan_dispatch_cb(void *arg, void *addr, size_t length, int prot,
                                                const char *path)
{
    ucm_event_t event;

    if (uct_strata_memhooks_scan_match(addr, length, prot, path, &event)) {
        ucm_event_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, &event);
    }
    return 0;
}

/* 1 while a memory type cache was made without the scan (no CUDA context
 * then): the first device allocation or CUDA IPC mapping the hooks see
 * runs it. */
static int uct_strata_memhooks_scan_pending;

/*
 * The scan was skipped because nothing could be allocated yet; now that a
 * context allocates, run it: the driver's address reservations also hold
 * memory no hook reports (a peer's allocation opened with
 * cuIpcOpenMemHandle, for one), which UCP must ask the driver about rather
 * than take for host memory.  Once; the cache is not empty from here on
 * anyway.
 */
static void uct_strata_memhooks_scan_deferred(void)
{
    if (__atomic_load_n(&uct_strata_memhooks_scan_pending, __ATOMIC_ACQUIRE) &&
        __atomic_exchange_n(&uct_strata_memhooks_scan_pending, 0, __ATOMIC_ACQ_REL)) {
        ucs_debug("strata: the first device memory: scanning /proc/self/maps now");
        ucm_parse_proc_self_maps(uct_strata_memhooks_scan_dispatch_cb, NULL);
    }
}

static ucs_status_t uct_strata_memhooks_installer_install(int events)
{
    /* Asked for every kind of event; the hooks serve only memory types.
     * Without them (no GPU, or they failed and the cache was turned off)
     * there is nothing to install and nothing to refuse. */
    return UCS_OK;
}

/*
 * Whether the process may hold device memory the hooks did not see: some
 * context exists (current on this thread, or a device's primary context,
 * the one the CUDA runtime uses).  Device memory needs a context, so a
 * process that has none yet - a host-only job on a GPU node, or one that
 * touches CUDA only after MPI_Init - has nothing for the scan to find yet,
 * and deferring it to the first device allocation keeps UCX's memory type
 * cache empty for as long as the process has none, which lets UCP send host
 * buffers on its inline path.  In doubt (the driver cannot say), yes.
 * Not seen: a context made with cuCtxCreate on another thread and not
 * current on this one; UCX_STRATA_MEMTYPE_SCAN=on covers that case.
 */
static int uct_strata_memhooks_context_exists(void)
{
    CUcontext current = NULL;
    unsigned flags;
    int count, dev, active;

    if ((strata_cuda.cuCtxGetCurrent(&current) != CUDA_SUCCESS) || (current != NULL) ||
        (strata_cuda.cuDevicePrimaryCtxGetState == NULL) ||
        (strata_cuda.cuDeviceGetCount(&count) != CUDA_SUCCESS)) {
        return 1;
    }
    for (dev = 0; dev < count; ++dev) {
        if ((strata_cuda.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS) ||
            active) {
            return 1;
        }
    }
    return 0;
}

static void uct_strata_memhooks_installer_existing(ucm_event_handler_t *handler)
{
    if (!uct_strata_memhooks_installed || !(handler->events & UCM_EVENT_MEM_TYPE_ALLOC)) {
        return;
    }
    if (uct_strata_memhooks_scan == UCS_CONFIG_OFF) {
        ucs_debug("strata: UCX_STRATA_MEMTYPE_SCAN=off: /proc/self/maps not scanned");
        return;
    }
    if ((uct_strata_memhooks_scan == UCS_CONFIG_AUTO) && !uct_strata_memhooks_context_exists()) {
        ucs_debug("strata: no CUDA context exists yet, so no device memory predates the "
                  "allocation hooks: /proc/self/maps not scanned until the first allocation");
        __atomic_store_n(&uct_strata_memhooks_scan_pending, 1, __ATOMIC_RELEASE);
        return;
    }
    ucs_debug("strata: scanning /proc/self/maps for device memory allocated before the hooks");
    ucm_parse_proc_self_maps(uct_strata_memhooks_scan_cb, handler);
}

static ucm_event_installer_t uct_strata_memhooks_installer = {
    .install            = uct_strata_memhooks_installer_install,
    .get_existing_alloc = uct_strata_memhooks_installer_existing,
};

void uct_strata_memhooks_register(void)
{
    ucs_list_add_tail(&ucm_event_installer_list, &uct_strata_memhooks_installer.list);
}

void uct_strata_memhooks_unregister(void)
{
    ucs_list_del(&uct_strata_memhooks_installer.list);
}

/* Without hooks the cache would call every device buffer host memory and
 * UCP would hand it to host transports (a crash, or silent corruption).
 * With the cache off, UCP asks each detecting domain about each buffer. */
static void uct_strata_memhooks_disable_cache(const char *why, int warn)
{
    if (ucs_memtype_cache_global_instance != NULL) {
        ucs_warn("strata: %s, and UCX's memory type cache already exists: GPU buffers "
                 "allocated from now on may be taken for host memory; set "
                 "UCX_MEMTYPE_CACHE=n", why);
        return;
    }
    ucs_global_opts.enable_memtype_cache = UCS_NO;
    if (warn) {
        ucs_warn("strata: %s; UCX's memory type cache is disabled, so every buffer is "
                 "checked with the CUDA driver (slower for host memory). "
                 "Set UCX_STRATA_MEMTYPE_HOOKS=no to silence this", why);
    } else {
        ucs_debug("strata: %s; memory type cache disabled", why);
    }
}

static void uct_strata_memhooks_init_once(void)
{
    ucs_status_t status = UCS_OK;
    size_t i;

    if (uct_strata_memhooks_mode == UCS_NO) {
        uct_strata_memhooks_disable_cache("CUDA allocation hooks are off "
                                          "(UCX_STRATA_MEMTYPE_HOOKS=no)", 0);
        uct_strata_memhooks_status = UCS_OK;
        return;
    }
    if (ucs_global_opts.enable_memtype_cache == UCS_NO) {
        /* The user turned the cache off: nothing would listen. */
        uct_strata_memhooks_status = UCS_OK;
        return;
    }
    for (i = 0; (i < ucs_static_array_size(uct_strata_memhooks)) && (status == UCS_OK); ++i) {
        status = uct_strata_memhook_install(&uct_strata_memhooks[i]);
    }
    if (status != UCS_OK) {
        /* A required hook failed; the ones already patched stay (they only
         * add events) but the cache cannot be trusted. */
        if (uct_strata_memhooks_mode == UCS_YES) {
            ucs_error("strata: cannot hook the CUDA driver's allocation functions (%s) and "
                      "UCX_STRATA_MEMTYPE_HOOKS=yes", ucs_status_string(status));
            uct_strata_memhooks_status = status;
            return;
        }
        uct_strata_memhooks_disable_cache("cannot hook the CUDA driver's allocation functions",
                                          1);
        uct_strata_memhooks_status = UCS_OK;
        return;
    }
    uct_strata_memhooks_installed = 1;
    ucs_debug("strata: CUDA allocation hooks installed");
    uct_strata_memhooks_status = UCS_OK;
}

ucs_status_t uct_strata_memhooks_init(ucs_ternary_auto_value_t mode, ucs_on_off_auto_value_t scan)
{
    uct_strata_memhooks_mode = mode;
    uct_strata_memhooks_scan = scan;
    pthread_once(&uct_strata_memhooks_once, uct_strata_memhooks_init_once);
    return uct_strata_memhooks_status;
}

int uct_strata_memhooks_active(void)
{
    return uct_strata_memhooks_installed;
}
