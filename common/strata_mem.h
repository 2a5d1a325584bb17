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
} strata_mem_info_t;

#ifndef STRATA_MEM_NO_CUDA
/*
 * Every attribute of the memory at `ptr`, in one driver call (plus
 * cuMemGetAddressRange for device memory).  Memory the driver does not know
 * is host memory and no error.  Returns 0, or -1 when the driver cannot be
 * asked (not loaded, or the query failed): info then says host.
 */
int strata_mem_query(const void *ptr, strata_mem_info_t *info);

/*
 * The kind of the memory at `ptr`.  NULL (and MPI's in-place marker, which
 * callers filter) is host.  In a process without a CUDA driver this costs a
 * load, a compare and, only when a shared object was loaded since the last
 * call, one dlopen(RTLD_NOLOAD).  `ordinal` (may be NULL) gets the device.
 */
strata_mem_kind_t strata_mem_kind(const void *ptr, int *ordinal);

/*
 * Sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the device allocation at `ptr`,
 * as UCX's own CUDA support does for the memory it detects: synchronous
 * copies and memsets on it (cuMemsetD8, cuMemcpyDtoD, which otherwise return
 * before the device has run them) are complete when they return, so a
 * buffer filled just before an MPI call holds its bytes when a transport
 * reads it on another stream.  GPUDirect RDMA needs it too.  Failures (VMM
 * mappings may refuse it) change nothing else.
 */
void strata_mem_set_sync_memops(uintptr_t ptr);

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
