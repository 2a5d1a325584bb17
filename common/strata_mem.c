/*
 * Pointer classification (see strata_mem.h).
 *
 * Device memory can exist only once a CUDA driver is loaded in the process.
 * Whether one is, is settled at the first question:
 *   PRESENT  libcuda.so.1 is loaded: every query asks cuPointerGetAttributes
 *            (host memory answers type 0, no error)
 *   ABSENT   it is not loaded and cannot be (a node without the driver):
 *            nothing in this process can ever be device memory
 *   NOT_YET  it could be loaded but is not: an application may load it long
 *            after MPI_Init (mpi4py initialises MPI at import, CuPy loads the
 *            driver later), so it is looked for again whenever the process
 *            has loaded another shared object; glibc counts loads
 *            (dl_phdr_info.dlpi_adds), and reading the count stops at the
 *            first object (about 20 ns, no lock)
 * A driver that is loaded but cannot initialise (no device) counts as
 * ABSENT.  What is not covered: a libcuda.so.1 that the dynamic linker
 * cannot find by that name (loaded by absolute path only) while no other
 * is found at the first look.
 * PRESENT and ABSENT are final (Strata opens the driver RTLD_NODELETE), and
 * cost one load and compare per question.
 */
#define _GNU_SOURCE
#include "strata_mem.h"

#include "strata_cuda.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

int strata_mem_driver_state; /* STRATA_MEM_DRIVER_* (strata_mem.h) */
static unsigned long long strata_mem_seen_adds; /* dlpi_adds when last looked */
static pthread_mutex_t strata_mem_driver_lock = PTHREAD_MUTEX_INITIALIZER;

static int strata_mem_adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1; /* the count is the same in every entry: stop at the first */
}

static unsigned long long strata_mem_dl_adds(void)
{
    unsigned long long adds = 0;

    (void)dl_iterate_phdr(strata_mem_adds_cb, &adds);
    return adds;
}

/* libcuda.so.1 loaded now: 1 when Strata could initialise it, -1 when it
 * cannot be (cuInit fails: no device, CUDA_VISIBLE_DEVICES empty, ...), 0
 * when it is not loaded. */
static int strata_mem_driver_loaded(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    if (handle == NULL) {
        return 0;
    }
    dlclose(handle);
    return (strata_cuda_load() == 0) ? 1 : -1;
}

/* The state once the driver is found loaded (or not): a driver that cannot
 * initialise can have made no device memory either. */
static int strata_mem_driver_state_of(int loaded, int otherwise)
{
    return (loaded > 0) ? STRATA_MEM_DRIVER_PRESENT
                        : (loaded < 0) ? STRATA_MEM_DRIVER_ABSENT : otherwise;
}

static int strata_mem_driver_first_look(void)
{
    int loaded = strata_mem_driver_loaded();
    void *handle;

    if (loaded != 0) {
        return strata_mem_driver_state_of(loaded, STRATA_MEM_DRIVER_ABSENT);
    }
    handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        return STRATA_MEM_DRIVER_ABSENT;
    }
    dlclose(handle);
    /* A driver that stayed resident after the probe (something else holds
     * it) would not move the load count when the application starts using
     * it: settle it now. */
    loaded = strata_mem_driver_loaded();
    if (loaded != 0) {
        return strata_mem_driver_state_of(loaded, STRATA_MEM_DRIVER_ABSENT);
    }
    strata_mem_seen_adds = strata_mem_dl_adds();
    return STRATA_MEM_DRIVER_NOT_YET;
}

int strata_mem_driver_settle(void)
{
    int state = __atomic_load_n(&strata_mem_driver_state, __ATOMIC_ACQUIRE);

    /* NOT_YET, the common case here: look at the load count without the
     * lock; only a change (something was loaded) takes it. */
    if (state == STRATA_MEM_DRIVER_NOT_YET &&
        strata_mem_dl_adds() == __atomic_load_n(&strata_mem_seen_adds, __ATOMIC_RELAXED)) {
        return 0;
    }
    pthread_mutex_lock(&strata_mem_driver_lock);
    state = strata_mem_driver_state;
    if (state == STRATA_MEM_DRIVER_UNKNOWN) {
        state = strata_mem_driver_first_look();
    } else if (state == STRATA_MEM_DRIVER_NOT_YET) {
        unsigned long long adds = strata_mem_dl_adds();

        if (adds != strata_mem_seen_adds) {
            __atomic_store_n(&strata_mem_seen_adds, adds, __ATOMIC_RELAXED);
            state = strata_mem_driver_state_of(strata_mem_driver_loaded(),
                                               STRATA_MEM_DRIVER_NOT_YET);
        }
    }
    __atomic_store_n(&strata_mem_driver_state, state, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&strata_mem_driver_lock);
    return state == STRATA_MEM_DRIVER_PRESENT;
}

/* ---- what is known of a device buffer, by its buffer id ---- */

/*
 * UCP asks about the buffer of every message whose type its cache does not
 * know: what does not change for an allocation is kept here, so that asking
 * again costs one cuPointerGetAttributes.  A buffer id names one allocation
 * (or VMM mapping) for the life of the process (a new allocation at the
 * same address gets a new id), so an entry never goes stale; an entry
 * evicted by another id (one slot per id, direct-mapped) is learnt again.
 */
#define STRATA_MEM_BUFFERS 256 /* a power of 2 */
typedef struct strata_mem_buffer {
    unsigned long long id; /* 0: empty */
    uintptr_t base;        /* cuMemGetAddressRange's answer; length 0: not asked yet */
    size_t length;
    int sync_memops_done; /* cuPointerSetAttribute(SYNC_MEMOPS) taken or refused */
} strata_mem_buffer_t;
static strata_mem_buffer_t strata_mem_buffers[STRATA_MEM_BUFFERS];
static pthread_mutex_t strata_mem_buffers_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of id, emptied for it if another id held it (the lock held). */
static strata_mem_buffer_t *strata_mem_buffer_slot(unsigned long long id)
{
    strata_mem_buffer_t *b = &strata_mem_buffers[(id ^ (id >> 32)) & (STRATA_MEM_BUFFERS - 1)];

    if (b->id != id) {
        memset(b, 0, sizeof(*b));
        b->id = id;
    }
    return b;
}

/* The allocation holding ptr as learnt before: 1 and *base, *length. */
static int strata_mem_buffer_range(unsigned long long id, uintptr_t ptr, uintptr_t *base,
                                   size_t *length)
{
    strata_mem_buffer_t *b;
    int found;

    if (id == 0) {
        return 0;
    }
    pthread_mutex_lock(&strata_mem_buffers_lock);
    b     = &strata_mem_buffers[(id ^ (id >> 32)) & (STRATA_MEM_BUFFERS - 1)];
    found = (b->id == id) && (b->length != 0) && (ptr >= b->base) && (ptr - b->base < b->length);
    if (found) {
        *base   = b->base;
        *length = b->length;
    }
    pthread_mutex_unlock(&strata_mem_buffers_lock);
    return found;
}

static void strata_mem_buffer_learn_range(unsigned long long id, uintptr_t base, size_t length)
{
    strata_mem_buffer_t *b;

    if (id == 0) {
        return;
    }
    pthread_mutex_lock(&strata_mem_buffers_lock);
    b         = strata_mem_buffer_slot(id);
    b->base   = base;
    b->length = length;
    pthread_mutex_unlock(&strata_mem_buffers_lock);
}

/* Whether the buffer's SYNC_MEMOPS attribute was set (or refused) before;
 * marks it so when `mark`. */
static int strata_mem_buffer_sync_memops(unsigned long long id, int mark)
{
    strata_mem_buffer_t *b;
    int done;

    if (id == 0) {
        return 0;
    }
    pthread_mutex_lock(&strata_mem_buffers_lock);
    b    = strata_mem_buffer_slot(id);
    done = b->sync_memops_done;
    if (mark) {
        b->sync_memops_done = 1;
    }
    pthread_mutex_unlock(&strata_mem_buffers_lock);
    return done;
}

int strata_mem_query(const void *ptr, strata_mem_info_t *info)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
        CU_POINTER_ATTRIBUTE_CONTEXT,
    };
    CUmemorytype mem_type    = 0;
    unsigned is_managed      = 0;
    unsigned long long bufid = 0;
    int ordinal              = -1;
    CUdeviceptr start        = 0;
    size_t range             = 0;
    int legacy_ipc           = 0;
    CUmemoryPool pool        = NULL;
    CUcontext ctx            = NULL;
    void *values[]           = {&mem_type, &is_managed, &bufid, &ordinal, &start,
                                &range,    &legacy_ipc, &pool,  &ctx};
    uintptr_t mbase          = 0;
    CUdeviceptr mstart       = 0;
    size_t mrange            = 0;

    memset(info, 0, sizeof(*info));
    info->kind    = STRATA_MEM_HOST;
    info->ordinal = -1;
    if ((strata_cuda_load() != 0) ||
        (strata_cuda.cuPointerGetAttributes(sizeof(attrs) / sizeof(attrs[0]), attrs, values,
                                            (CUdeviceptr)ptr) != CUDA_SUCCESS)) {
        return -1;
    }
    info->ctx = ctx; /* page-locked host memory has one too */
    if ((mem_type != CU_MEMORYTYPE_DEVICE) && !is_managed) {
        info->host_pinned = (mem_type == CU_MEMORYTYPE_HOST);
        return 0;
    }
    /* RANGE_* describe a VMM buffer's whole address reservation, which may
     * hold several mappings; cuMemGetAddressRange gives the one mapping (or
     * the allocation) containing the address, the unit that is exported,
     * once per buffer. */
    if (strata_mem_buffer_range(bufid, (uintptr_t)ptr, &mbase, &mrange)) {
        start = (CUdeviceptr)mbase;
        range = mrange;
    } else if (strata_cuda.cuMemGetAddressRange(&mstart, &mrange, (CUdeviceptr)ptr) ==
               CUDA_SUCCESS) {
        start = mstart;
        range = mrange;
        strata_mem_buffer_learn_range(bufid, (uintptr_t)mstart, mrange);
    }
    info->kind       = is_managed ? STRATA_MEM_MANAGED : STRATA_MEM_DEVICE;
    info->ordinal    = ordinal;
    info->buffer_id  = bufid;
    info->base       = (uintptr_t)start;
    info->length     = range;
    info->legacy_ipc = legacy_ipc && !is_managed;
    info->from_pool  = (pool != NULL);
    return 0;
}

strata_mem_kind_t strata_mem_kind_ctx(const void *ptr, int *ordinal, void **ctx)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_CONTEXT,
    };
    CUmemorytype mem_type = 0;
    unsigned is_managed   = 0;
    int dev               = -1;
    CUcontext owner       = NULL;
    void *values[]        = {&mem_type, &is_managed, &dev, &owner};
    /* the context only where the caller asks for it */
    unsigned nattrs       = (ctx != NULL) ? 4 : 3;

    if (ordinal != NULL) {
        *ordinal = -1;
    }
    if (ctx != NULL) {
        *ctx = NULL;
    }
    /* (the driver answers unknown pointers with defaults, not an error:
     * a failed query means it cannot be asked at all) */
    if ((ptr == NULL) || !strata_mem_driver_present() ||
        (strata_cuda.cuPointerGetAttributes(nattrs, attrs, values, (CUdeviceptr)ptr) !=
         CUDA_SUCCESS)) {
        return STRATA_MEM_HOST;
    }
    if (ordinal != NULL) {
        *ordinal = dev;
    }
    if (ctx != NULL) {
        *ctx = owner;
    }
    if (is_managed) {
        return STRATA_MEM_MANAGED;
    }
    return (mem_type == CU_MEMORYTYPE_DEVICE) ? STRATA_MEM_DEVICE : STRATA_MEM_HOST;
}

strata_mem_kind_t strata_mem_kind(const void *ptr, int *ordinal)
{
    return strata_mem_kind_ctx(ptr, ordinal, NULL);
}

/* ---- synchronous memory operations (strata_mem.h) ---- */

static int strata_mem_ctx_flag_wanted = 1; /* strata_mem_ctx_sync_memops_setup() */
static strata_mem_report_t strata_mem_report;
static int strata_mem_refusal_reported;
static int strata_mem_data_path_reported;

void strata_mem_ctx_sync_memops_setup(int on, strata_mem_report_t report)
{
    __atomic_store_n(&strata_mem_report, report, __ATOMIC_RELEASE);
    __atomic_store_n(&strata_mem_ctx_flag_wanted, !!on, __ATOMIC_RELEASE);
}

int strata_mem_ctx_sync_memops_on(void)
{
    return __atomic_load_n(&strata_mem_ctx_flag_wanted, __ATOMIC_ACQUIRE);
}

/* One line to the plugin's log, the first time (*once) only. */
static void strata_mem_report_once(int *once, int warn, const char *msg)
{
    strata_mem_report_t report = __atomic_load_n(&strata_mem_report, __ATOMIC_ACQUIRE);

    if ((report != NULL) && !__atomic_exchange_n(once, 1, __ATOMIC_ACQ_REL)) {
        report(warn, msg);
    }
}

/* The first refusal of the flag (once per process). */
static void strata_mem_ctx_flag_refused(CUcontext ctx, CUresult res)
{
    char error[160], msg[512];

    snprintf(msg, sizeof(msg),
             "cuCtxSetFlags(CU_CTX_SYNC_MEMOPS) refused on context %p: %s; synchronous copies "
             "and memsets into VMM, stream-ordered and IPC-opened memory may land after the "
             "MPI call reads them: synchronize before calling MPI (reported once)",
             (void *)ctx, strata_cuda_result_str(res, error, sizeof(error)));
    strata_mem_report_once(&strata_mem_refusal_reported, 1, msg);
}

/* The current context (ctx) gets the flag, keeping its other flags. */
static int strata_mem_ctx_flag_current(CUcontext ctx)
{
    unsigned flags = 0;
    CUresult res;

    if ((strata_cuda.cuCtxSetFlags == NULL) || (strata_cuda.cuCtxGetFlags == NULL) ||
        (strata_cuda.cuCtxGetFlags(&flags) != CUDA_SUCCESS)) {
        return -1;
    }
    if (flags & CU_CTX_SYNC_MEMOPS) {
        return 0;
    }
    res = strata_cuda.cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS);
    if (res != CUDA_SUCCESS) {
        strata_mem_ctx_flag_refused(ctx, res);
        return -1;
    }
    return 0;
}

/*
 * Settling the current context.  The flag makes the synchronous calls
 * issued after it complete before they return; what the application issued
 * before may still be queued (a cuMemcpyHtoD from pageable memory returns
 * once its source is staged, a cuMemsetD8 at once).  Those calls queue on
 * the default stream of the thread that issued them: the context's legacy
 * stream, or with per-thread default streams (nvcc --default-stream
 * per-thread) that thread's own.  Settling synchronizes both, after the
 * flag is set (before, a call between the two would be missed).
 *
 * Never cuCtxSynchronize: it waits for every stream of the context, Strata's
 * own too, and coll/strata's queued pipeline parks its stream on a wait for
 * a counter that the calling thread itself stores once the exchange between
 * nodes is done; a UCP question from inside that exchange never returned
 * (cluster_native_late_ctx_2x2).  The legacy stream waits only for earlier
 * work of blocking streams: Strata's streams that hold such waits, and its
 * transports' streams, are non-blocking, and its blocking ones (ompi_accel's
 * copies, coll/strata's copy-out staging) carry copies, which finish on
 * their own.  Not reached: another thread's per-thread default stream (work
 * an application hands between its threads it synchronizes itself), and
 * asynchronous work on the application's own streams, which CUDA-aware MPI
 * leaves to the application anyway.
 */
static void strata_mem_ctx_settle(void)
{
    (void)strata_cuda.cuStreamSynchronize(CU_STREAM_LEGACY);
    (void)strata_cuda.cuStreamSynchronize(CU_STREAM_PER_THREAD);
}

/*
 * Contexts met off the data path.  An entry is claimed under the lock, which
 * is never held across a driver call, and published by raising the count:
 * the data path reads the table without it.  A context destroyed and another
 * created at the same address would be taken for this one: the contexts
 * Strata meets are primary ones (never destroyed while retained) or
 * long-lived.
 */
#define STRATA_MEM_CTX_MAX 64
enum {
    STRATA_MEM_CTX_FLAGGING = 1, /* claimed: a thread flags and settles it now */
    STRATA_MEM_CTX_FLAGGED,      /* done; flag_ret: whether the driver took the flag */
};
typedef struct strata_mem_ctx_entry {
    CUcontext ctx; /* set before the entry is published, never changed */
    int state;     /* STRATA_MEM_CTX_* */
    int flag_ret;  /* strata_mem_ctx_flag_current()'s answer, stored before FLAGGED */
} strata_mem_ctx_entry_t;
static strata_mem_ctx_entry_t strata_mem_ctxs[STRATA_MEM_CTX_MAX];
static int strata_mem_nctxs;
static pthread_mutex_t strata_mem_ctxs_lock = PTHREAD_MUTEX_INITIALIZER;

static strata_mem_ctx_entry_t *strata_mem_ctx_find(CUcontext ctx)
{
    int n = __atomic_load_n(&strata_mem_nctxs, __ATOMIC_ACQUIRE);
    int i;

    for (i = 0; i < n; ++i) {
        if (strata_mem_ctxs[i].ctx == ctx) {
            return &strata_mem_ctxs[i];
        }
    }
    return NULL;
}

static int strata_mem_ctx_state(const strata_mem_ctx_entry_t *e)
{
    return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
}

/* Whether ctx has the flag: all the data path asks. */
static int strata_mem_ctx_flagged(CUcontext ctx)
{
    const strata_mem_ctx_entry_t *e = strata_mem_ctx_find(ctx);

    return (e != NULL) && (strata_mem_ctx_state(e) == STRATA_MEM_CTX_FLAGGED) &&
           (__atomic_load_n(&e->flag_ret, __ATOMIC_RELAXED) == 0);
}

/* ctx's entry, claimed for this thread (*claimed) if no thread had met it;
 * NULL when the table is full. */
static strata_mem_ctx_entry_t *strata_mem_ctx_claim(CUcontext ctx, int *claimed)
{
    strata_mem_ctx_entry_t *e;

    *claimed = 0;
    pthread_mutex_lock(&strata_mem_ctxs_lock);
    e = strata_mem_ctx_find(ctx);
    if ((e == NULL) && (strata_mem_nctxs < STRATA_MEM_CTX_MAX)) {
        e        = &strata_mem_ctxs[strata_mem_nctxs];
        e->ctx   = ctx;
        e->state = STRATA_MEM_CTX_FLAGGING;
        __atomic_store_n(&strata_mem_nctxs, strata_mem_nctxs + 1, __ATOMIC_RELEASE);
        *claimed = 1;
    }
    pthread_mutex_unlock(&strata_mem_ctxs_lock);
    return e;
}

/* Off the data path: ctx, current on this thread, is flagged and settled
 * the first time it is met (every time, unrecorded, once the table is
 * full).  Returns what flagging returned; 0 while another thread is at it. */
static int strata_mem_ctx_meet(CUcontext ctx)
{
    strata_mem_ctx_entry_t *e = strata_mem_ctx_find(ctx);
    int claimed               = 0;
    int ret;

    if (e == NULL) {
        e = strata_mem_ctx_claim(ctx, &claimed);
    }
    if ((e != NULL) && !claimed) {
        return (strata_mem_ctx_state(e) == STRATA_MEM_CTX_FLAGGED)
                   ? __atomic_load_n(&e->flag_ret, __ATOMIC_RELAXED)
                   : 0;
    }
    ret = strata_mem_ctx_flag_current(ctx);
    strata_mem_ctx_settle();
    if (e != NULL) {
        __atomic_store_n(&e->flag_ret, ret, __ATOMIC_RELAXED);
        __atomic_store_n(&e->state, STRATA_MEM_CTX_FLAGGED, __ATOMIC_RELEASE);
    }
    return ret;
}

int strata_mem_sync_memops_ctx(void)
{
    CUcontext ctx = NULL;

    if (!strata_mem_ctx_sync_memops_on() || (strata_cuda_load() != 0) ||
        (strata_cuda.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) || (ctx == NULL)) {
        return -1;
    }
    return strata_mem_ctx_meet(ctx);
}

/*
 * The data path meets a context no domain, hook or set-up met: allocation
 * hooks off (UCX_MEMTYPE_CACHE=n, UCX_STRATA_MEMTYPE_HOOKS=n, pml/ob1 with
 * ompi_accel) and the context made after them.  It is not flagged there:
 * cuCtxSetFlags takes the context's lock, and UCX saw it deadlock a progress
 * thread against an application thread inside cudaLaunchKernel, which held
 * that lock while it waited for the GPU (PRs 10599, 11705).  Each buffer of
 * such a context is settled instead when first seen (after its attribute is
 * set), which cannot wait for Strata's streams (strata_mem_ctx_settle) and
 * holds no lock: cuMemAlloc memory keeps the whole guarantee (written
 * before: settled; after: the attribute), VMM, pool and IPC-opened memory
 * for what was written before its first message only.
 */
static void strata_mem_ctx_data_path_note(CUcontext ctx)
{
    char msg[512];

    if ((ctx == NULL) || (strata_mem_ctx_find(ctx) != NULL) ||
        __atomic_load_n(&strata_mem_data_path_reported, __ATOMIC_RELAXED)) {
        return;
    }
    snprintf(msg, sizeof(msg),
             "CUDA context %p first met on the data path (no domain, allocation hook or "
             "set-up saw it): it is left without CU_CTX_SYNC_MEMOPS, each buffer is settled "
             "when first seen; synchronous copies and memsets into VMM, stream-ordered and "
             "IPC-opened memory of it may land after a later MPI call reads them: "
             "synchronize before calling MPI (reported once)",
             (void *)ctx);
    strata_mem_report_once(&strata_mem_data_path_reported, 0, msg);
}

/* The data path's settling for a buffer seen the first time, in each
 * context it may have been written from that lacks the flag: the current
 * one, and the one owning the memory (made current for it). */
static void strata_mem_settle_unflagged(CUcontext current, CUcontext owner)
{
    if ((current != NULL) && !strata_mem_ctx_flagged(current)) {
        strata_mem_ctx_settle();
    }
    if ((owner != NULL) && (owner != current) && !strata_mem_ctx_flagged(owner) &&
        (strata_cuda.cuCtxSetCurrent(owner) == CUDA_SUCCESS)) {
        strata_mem_ctx_settle();
        (void)strata_cuda.cuCtxSetCurrent(current);
    }
}

/* The context the memory belongs to: its own for cuMemAlloc memory, the
 * device's primary context for memory without one.  On the data path only
 * a primary context Strata retained already (no driver call); off it, one
 * that is active, and a context met already needs no question about its
 * state. */
static CUcontext strata_mem_owner_ctx(const strata_mem_info_t *info, strata_mem_where_t where)
{
    CUcontext ctx = (CUcontext)info->ctx;
    int active    = 0;
    unsigned flags;
    CUdevice dev;

    if ((ctx != NULL) || (info->ordinal < 0)) {
        return ctx;
    }
    ctx = strata_cuda_primary_ctx_retained(info->ordinal);
    if ((where == STRATA_MEM_DATA_PATH) || ((ctx != NULL) && (strata_mem_ctx_find(ctx) != NULL))) {
        return ctx;
    }
    if ((strata_cuda.cuDevicePrimaryCtxGetState == NULL) ||
        (strata_cuda.cuDeviceGet(&dev, info->ordinal) != CUDA_SUCCESS) ||
        (strata_cuda.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS) || !active) {
        return NULL;
    }
    return strata_cuda_primary_ctx(info->ordinal);
}

/* The pointer attribute, once per buffer: set, it stays; refused
 * (CUDA_ERROR_NOT_SUPPORTED: VMM, pool and IPC-opened memory, whose
 * context flag covers them), it is refused for good.  Other failures (no
 * context yet) are tried again at the next question.  Returns 1 when the
 * buffer was not known before (a buffer without an id never is). */
static int strata_mem_sync_memops_attr(uintptr_t ptr, const strata_mem_info_t *info)
{
    unsigned int one = 1;
    CUresult res;

    if (strata_mem_buffer_sync_memops(info->buffer_id, 0)) {
        return 0;
    }
    res = strata_cuda.cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                            (CUdeviceptr)ptr);
    if ((res == CUDA_SUCCESS) || (res == CUDA_ERROR_NOT_SUPPORTED)) {
        (void)strata_mem_buffer_sync_memops(info->buffer_id, 1);
    }
    return info->buffer_id != 0;
}

int strata_mem_sync_memops_info(uintptr_t ptr, const strata_mem_info_t *info,
                                strata_mem_where_t where)
{
    CUcontext current = NULL, owner;
    int first, ret;

    if ((ptr == 0) || (strata_cuda_load() != 0)) {
        return -1;
    }
    first = strata_mem_sync_memops_attr(ptr, info);
    if (!strata_mem_ctx_sync_memops_on() ||
        (strata_cuda.cuCtxGetCurrent(&current) != CUDA_SUCCESS)) {
        return -1;
    }
    owner = strata_mem_owner_ctx(info, where);
    if (where == STRATA_MEM_DATA_PATH) {
        strata_mem_ctx_data_path_note(current);
        strata_mem_ctx_data_path_note(owner);
        if (first) {
            strata_mem_settle_unflagged(current, owner);
        }
        return strata_mem_ctx_flagged(current) ? 0 : -1;
    }
    ret = (current != NULL) ? strata_mem_ctx_meet(current) : -1;
    /* Made current only while it still needs the flag and the settling. */
    if ((owner != NULL) && (owner != current) && (strata_mem_ctx_find(owner) == NULL) &&
        (strata_cuda.cuCtxSetCurrent(owner) == CUDA_SUCCESS)) {
        (void)strata_mem_ctx_meet(owner);
        (void)strata_cuda.cuCtxSetCurrent(current);
    }
    return ret;
}

int strata_mem_set_sync_memops(uintptr_t ptr, strata_mem_where_t where)
{
    strata_mem_info_t info;

    if ((ptr == 0) || (strata_cuda_load() != 0)) {
        return -1;
    }
    /* A query that fails leaves info saying host memory without a context:
     * the attribute and the current context are still tried. */
    (void)strata_mem_query((const void *)ptr, &info);
    return strata_mem_sync_memops_info(ptr, &info, where);
}
