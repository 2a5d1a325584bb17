/*
 * What kind of memory a pointer is: host, device or managed.
 *
 * One answer for every part of Strata (the UCX memory domains, the hook's
 * datatype staging, coll/strata's per-call dispatch), from the driver's
 * pointer attributes.  Two entry points:
 *   strata_mem_query()  every attribute the UCX domains need (one driver call)
 *   strata_mem_kind()   the kind only, for per-call dispatch: while no CUDA
 *                       driver is loaded in the process it answers "host"
 *                       without calling anything (see strata_mem.c)
 */
#ifndef STRATA_MEM_H
#define STRATA_MEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strata_mem_kind {
    STRATA_MEM_HOST = 0, /* anything the driver does not call device memory */
    STRATA_MEM_DEVICE,   /* cuMemAlloc, cudaMalloc, VMM, pools: not CPU-accessible */
    STRATA_MEM_MANAGED,  /* cuMemAllocManaged: the CPU may touch it */
} strata_mem_kind_t;

typedef struct strata_mem_info {
    strata_mem_kind_t kind;
    int ordinal;                /* device of device/managed memory, else -1 */
    unsigned long long buffer_id;
    uintptr_t base;             /* the allocation (or VMM mapping) holding it */
    size_t length;
    int legacy_ipc;             /* exportable with cuIpcGetMemHandle */
    int from_pool;              /* from a stream-ordered memory pool */
    int host_pinned;            /* host memory the driver has page-locked
                                 * (cuMemHostAlloc, cuMemHostRegister) */
    void *ctx;                  /* CUcontext of the memory (pointer attribute
                                 * CONTEXT): NULL for VMM and pool memory */
} strata_mem_info_t;

#ifndef STRATA_MEM_NO_CUDA
/*
 * Every attribute of the memory at `ptr`, in one driver call (plus
 * cuMemGetAddressRange the first time a device buffer is asked about: its
 * range is kept by buffer id).  Memory the driver does not know is host
 * memory and no error.  Returns 0, or -1 when the driver cannot be asked
 * (not loaded, or the query failed): info then says host.
 */
int strata_mem_query(const void *ptr, strata_mem_info_t *info);

/*
 * The kind of the memory at `ptr`.  NULL (and MPI's in-place marker, which
 * callers filter) is host.  In a process without a CUDA driver this costs a
 * load, a compare and, only when a shared object was loaded since the last
 * call, one dlopen(RTLD_NOLOAD).  `ordinal` (may be NULL) gets the device.
 */
strata_mem_kind_t strata_mem_kind(const void *ptr, int *ordinal);
/* The same, and (ctx not NULL) the context that owns the memory (a
 * CUcontext; NULL for memory no context owns, e.g. VMM mappings), in the
 * same one driver call: what a caller needs to know before it hands the
 * buffer to work in a context of its own. */
strata_mem_kind_t strata_mem_kind_ctx(const void *ptr, int *ordinal, void **ctx);

/*
 * Synchronous memory operations.  The driver lets cuMemsetD8, cuMemcpyDtoD
 * and cuMemcpyHtoD from pageable memory return before the bytes land: they
 * are queued on the legacy default stream, which Strata's non-blocking
 * streams and a peer reading through IPC do not wait for.  A buffer filled
 * that way just before an MPI call would be read stale (the H200 run of
 * 2026-11-27: VMM, stream-ordered and IPC-opened memory).  Two switches make
 * such operations complete before they return: CU_CTX_SYNC_MEMOPS on the
 * context that issues them (cuCtxSetFlags, driver 12.1 or newer), which
 * covers every kind of memory, and CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the
 * allocation, which only cuMemAlloc and managed memory take.  Strata sets
 * both, as UCX's own CUDA support does (the context flag unless switched
 * off: strata_mem_ctx_sync_memops_setup).
 *
 * The flag is set only where Strata meets a context off the data path
 * (STRATA_MEM_MEET): cuCtxSetFlags takes the context's lock, which an
 * application thread may hold while it waits for the GPU (UCX PRs 10599 and
 * 11705).  Once flagged, a context is settled: its default streams are
 * synchronized once, so that what the application queued there before has
 * landed too (strata_mem.c says why those streams and never the whole
 * context).  On the data path (STRATA_MEM_DATA_PATH: a buffer UCP or Open
 * MPI asks about) the context is only looked up, without a lock; a buffer
 * of a context that lacks the flag is settled the first time it is seen.
 * No driver call is made under a lock of Strata's.
 */
typedef enum strata_mem_where {
    STRATA_MEM_MEET,      /* a domain's open, an allocation hook, the accelerator's set-up */
    STRATA_MEM_DATA_PATH, /* a buffer handed to a transfer, maybe while Strata's streams wait */
} strata_mem_where_t;

/* Meets the context current on this thread (STRATA_MEM_MEET): flagged and
 * settled the first time.  Returns 0 when the context is flagged, -1 when it
 * cannot be (no context, a driver without cuCtxSetFlags or refusing it). */
int strata_mem_sync_memops_ctx(void);

/*
 * Everything Strata does for a device buffer it meets at `ptr`: the pointer
 * attribute where the allocation takes it, and the context flag on the
 * current context and on the context the allocation belongs to (the primary
 * context of its device for memory without one: VMM, pools), met `where`.
 * Returns 0 when the current context has the flag, else -1.
 *
 * What is done for a buffer or a context is not asked or done again: the
 * attribute once per buffer id (taken or refused), a context's flag and
 * settling once per context.  On the data path the cost is then one
 * cuCtxGetCurrent (the current context may be another) and a look at a
 * table, so UCP's question about a buffer costs two driver calls with
 * strata_mem_query's.
 */
int strata_mem_set_sync_memops(uintptr_t ptr, strata_mem_where_t where);

/* The same for memory strata_mem_query() described already (info, asked
 * about an address in the allocation at `ptr`): no query of its own. */
int strata_mem_sync_memops_info(uintptr_t ptr, const strata_mem_info_t *info,
                                strata_mem_where_t where);

/*
 * CU_CTX_SYNC_MEMOPS changes the application's context for good: from the
 * moment Strata flags it, every synchronous memset and device-to-device copy
 * the application issues in it blocks the host until done, after
 * MPI_Finalize too, and cuCtxGetFlags shows it.  on == 0 (the plugin's
 * setting: UCX_STRATA_CTX_SYNC_MEMOPS, accelerator_cuda_strata_ctx_sync_memops)
 * leaves contexts alone: no flag and no settling; cuMemAlloc memory still
 * gets the pointer attribute.  `report` (may be NULL) takes a line, once
 * each: a warning (warn != 0) the first time the driver refuses the flag,
 * naming its error, and a diagnostic the first time the data path meets a
 * context no domain, hook or set-up met.  Per plugin (each has its own copy
 * of this code); the latest call wins.
 */
typedef void (*strata_mem_report_t)(int warn, const char *msg);
void strata_mem_ctx_sync_memops_setup(int on, strata_mem_report_t report);
/* Whether contexts get the flag (the setting; not whether a driver took it). */
int strata_mem_ctx_sync_memops_on(void);

/* Whether a CUDA driver is loaded and initialised in this process (the
 * condition under which strata_mem_kind() asks the driver at all).  Inline:
 * every collective call asks it; once settled it is a load and a compare. */
enum {
    STRATA_MEM_DRIVER_UNKNOWN = 0,
    STRATA_MEM_DRIVER_PRESENT,
    STRATA_MEM_DRIVER_ABSENT,
    STRATA_MEM_DRIVER_NOT_YET,
};
extern int strata_mem_driver_state;
int strata_mem_driver_settle(void);

static inline int strata_mem_driver_present(void)
{
    int state = __atomic_load_n(&strata_mem_driver_state, __ATOMIC_ACQUIRE);

    if (__builtin_expect(state == STRATA_MEM_DRIVER_PRESENT, 1)) {
        return 1;
    }
    if (__builtin_expect(state == STRATA_MEM_DRIVER_ABSENT, 1)) {
        return 0;
    }
    return strata_mem_driver_settle();
}

#else
/* Built without CUDA headers (configure said so): there is no device
 * memory this build could stage, so every buffer is host memory. */
static inline strata_mem_kind_t strata_mem_kind(const void *ptr, int *ordinal)
{
    (void)ptr;
    if (ordinal != NULL) {
        *ordinal = -1;
    }
    return STRATA_MEM_HOST;
}
static inline strata_mem_kind_t strata_mem_kind_ctx(const void *ptr, int *ordinal, void **ctx)
{
    if (ctx != NULL) {
        *ctx = NULL;
    }
    return strata_mem_kind(ptr, ordinal);
}
static inline int strata_mem_driver_present(void)
{
    return 0;
}
#endif

/* "host", "device", "managed" */
static inline const char *strata_mem_kind_name(strata_mem_kind_t kind)
{
    return (kind == STRATA_MEM_DEVICE) ? "device" : (kind == STRATA_MEM_MANAGED) ? "managed" : "host";
}

#ifdef __cplusplus
}
#endif

#endif /* STRATA_MEM_H */
