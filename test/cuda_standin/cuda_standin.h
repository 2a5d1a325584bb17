/*
 * The CUDA stand-in: a libcuda.so.1 that keeps "device" memory in host memory
 * so that CI machines without a GPU can drive Strata's transport through real
 * driver calls.  This header is internal to the library.
 *
 * What it models, and why each part matters to the code under test:
 *  - Device addresses lie in one PROT_NONE reservation that is never made
 *    accessible, so a CPU load or store to device memory faults as it would on
 *    a GPU.  The bytes live in a memfd per allocation; the library reaches them
 *    through a private read-write alias mapping of that memfd.
 *  - Asynchronous work is queued per stream and runs only at completion points
 *    (synchronize, or a query that reports completion), so a transport that
 *    declares a copy done before its event completes reads stale data.
 *  - IPC handles name the exporter's memfd (/proc/<pid>/fd/<fd>), so another
 *    process really maps the same bytes.
 *  - With CUDA_STANDIN_CONNECTIONS=N streams share N first-in first-out
 *    hardware queues (cuda_standin_hwq.c), so a wait queued in front of the
 *    work that would meet it hangs, as on a GPU.
 *
 * Every exported entry point runs through CUDA_STANDIN_CALL (fault injection,
 * initialization and context checks, the global lock, tracing).
 */
#ifndef CUDA_STANDIN_H
#define CUDA_STANDIN_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

/* The library is built with -fvisibility=hidden; the driver API that cuda.h
 * declares is what it exports, so those declarations carry default
 * visibility and every definition of them inherits it. */
#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop

#if CUDA_VERSION < 12000
#error "the CUDA stand-in needs cuda.h from CUDA 12.0 or newer"
#endif

#define CUDA_STANDIN_KIB(_n) ((size_t)(_n) << 10)
#define CUDA_STANDIN_MIB(_n) ((size_t)(_n) << 20)
#define CUDA_STANDIN_GIB(_n) ((size_t)(_n) << 30)

#define CUDA_STANDIN_MAX_DEVICES   8
#define CUDA_STANDIN_DRIVER_VERSION 13000
/* cuMemAlloc: sizes rounded up to, and addresses aligned on, 64 KiB. */
#define CUDA_STANDIN_ALLOC_ALIGN   CUDA_STANDIN_KIB(64)
/* cuMemGetAllocationGranularity, for both minimum and recommended. */
#define CUDA_STANDIN_VMM_GRANULARITY CUDA_STANDIN_MIB(2)
/* What cuDeviceTotalMem reports; allocations beyond it fail. */
/* bytes of memory each device has (CUDA_STANDIN_DEVICE_MEMORY, in MiB) */
#define CUDA_STANDIN_DEVICE_MEMORY ((size_t)cuda_standin_config.device_memory_mib << 20)

#define CUDA_STANDIN_ALIGN_UP(_x, _a) ((((_x) + (_a) - 1) / (_a)) * (_a))
#define CUDA_STANDIN_IS_ALIGNED(_x, _a) (((_x) % (_a)) == 0)

/* Two levels so that cuda.h's renaming macros expand first:
 * CUDA_STANDIN_SYMBOL(cuMemAlloc) is "cuMemAlloc_v2". */
#define CUDA_STANDIN_STR2(_x)   #_x
#define CUDA_STANDIN_SYMBOL(_x) CUDA_STANDIN_STR2(_x)

/*
 * Every exported entry point, as an application spells it (cuda.h maps it to
 * the exported, versioned symbol).  The list gives each one an id for fault
 * injection and tracing; CUDA_STANDIN_CALL refuses to compile for a name that
 * is missing here.
 */
/* clang-format off */
#define CUDA_STANDIN_APIS(_x) \
    _x(cuInit) \
    _x(cuDriverGetVersion) \
    _x(cuGetErrorString) \
    _x(cuGetErrorName) \
    _x(cuGetProcAddress) \
    _x(cuDeviceGetCount) \
    _x(cuDeviceGet) \
    _x(cuDeviceGetName) \
    _x(cuDeviceGetAttribute) \
    _x(cuDeviceGetUuid) \
    _x(cuDeviceGetPCIBusId) \
    _x(cuDeviceTotalMem) \
    _x(cuDevicePrimaryCtxRetain) \
    _x(cuDevicePrimaryCtxRelease) \
    _x(cuDevicePrimaryCtxGetState) \
    _x(cuDevicePrimaryCtxReset) \
    _x(cuDeviceCanAccessPeer) \
    _x(cuCtxGetCurrent) \
    _x(cuCtxSetCurrent) \
    _x(cuCtxCreate) \
    _x(cuCtxDestroy) \
    _x(cuCtxGetDevice) \
    _x(cuCtxSynchronize) \
    _x(cuCtxGetFlags) \
    _x(cuCtxSetFlags) \
    _x(cuMemGetInfo) \
    _x(cuMemHostAlloc) \
    _x(cuModuleLoadData) \
    _x(cuModuleUnload) \
    _x(cuModuleGetFunction) \
    _x(cuLaunchKernel) \
    _x(cuMemFreeHost) \
    _x(cuMemHostRegister) \
    _x(cuMemHostUnregister) \
    _x(cuMemHostGetDevicePointer) \
    _x(cuMemAlloc) \
    _x(cuMemAllocPitch) \
    _x(cuMemFree) \
    _x(cuMemAllocManaged) \
    _x(cuMemAllocAsync) \
    _x(cuMemAllocFromPoolAsync) \
    _x(cuMemFreeAsync) \
    _x(cuDeviceGetDefaultMemPool) \
    _x(cuMemPoolCreate) \
    _x(cuMemPoolDestroy) \
    _x(cuPointerGetAttribute) \
    _x(cuPointerGetAttributes) \
    _x(cuPointerSetAttribute) \
    _x(cuMemGetAddressRange) \
    _x(cuMemcpy) \
    _x(cuMemcpyAsync) \
    _x(cuMemcpyHtoD) \
    _x(cuMemcpyDtoH) \
    _x(cuMemcpyDtoD) \
    _x(cuMemcpyHtoDAsync) \
    _x(cuMemcpyDtoHAsync) \
    _x(cuMemcpyDtoDAsync) \
    _x(cuMemsetD8) \
    _x(cuStreamCreate) \
    _x(cuStreamDestroy) \
    _x(cuStreamSynchronize) \
    _x(cuStreamQuery) \
    _x(cuStreamWaitEvent) \
    _x(cuStreamWaitValue32) \
    _x(cuStreamWaitValue64) \
    _x(cuStreamWriteValue32) \
    _x(cuStreamWriteValue64) \
    _x(cuEventCreate) \
    _x(cuEventDestroy) \
    _x(cuEventRecord) \
    _x(cuEventQuery) \
    _x(cuEventSynchronize) \
    _x(cuIpcGetMemHandle) \
    _x(cuIpcOpenMemHandle) \
    _x(cuIpcCloseMemHandle) \
    _x(cuMemCreate) \
    _x(cuMemRelease) \
    _x(cuMemMap) \
    _x(cuMemUnmap) \
    _x(cuMemSetAccess) \
    _x(cuMemAddressReserve) \
    _x(cuMemAddressFree) \
    _x(cuMemGetAllocationGranularity) \
    _x(cuMemRetainAllocationHandle) \
    _x(cuMemGetAllocationPropertiesFromHandle) \
    _x(cuMemExportToShareableHandle) \
    _x(cuMemImportFromShareableHandle) \
    _x(cuMemGetHandleForAddressRange)

/*
 * The allocation entry points that UCX's bistro patcher hooks.  Their exported
 * symbols are assembly stubs with a prologue it can relocate (see
 * cuda_standin_entry.c); the C implementation behind each is
 * cuda_standin_patchable_<name>, with exactly cuda.h's prototype.
 */
#define CUDA_STANDIN_PATCHABLE_APIS(_x) \
    _x(cuMemAlloc) \
    _x(cuMemAllocPitch) \
    _x(cuMemFree) \
    _x(cuMemAllocManaged) \
    _x(cuMemAllocAsync) \
    _x(cuMemAllocFromPoolAsync) \
    _x(cuMemFreeAsync) \
    _x(cuMemCreate) \
    _x(cuMemRelease) \
    _x(cuMemMap) \
    _x(cuMemUnmap) \
    _x(cuIpcOpenMemHandle) \
    _x(cuIpcCloseMemHandle) \
    _x(cuDevicePrimaryCtxReset)

#define CUDA_STANDIN_API_ID(_name) CUDA_STANDIN_API_ID_##_name
#define CUDA_STANDIN_API_ENUM(_name) CUDA_STANDIN_API_ID(_name),
typedef enum cuda_standin_api_id {
    CUDA_STANDIN_APIS(CUDA_STANDIN_API_ENUM)
    CUDA_STANDIN_API_COUNT
} cuda_standin_api_id_t;
/* clang-format on */

#define CUDA_STANDIN_PATCHABLE_DECLARE(_name) \
    extern __typeof__(_name) cuda_standin_patchable_##_name __attribute__((visibility("hidden")));
CUDA_STANDIN_PATCHABLE_APIS(CUDA_STANDIN_PATCHABLE_DECLARE)

/* --- Settings (cuda_standin_api.c): read once, at the first call. --- */

typedef struct cuda_standin_config {
    int devices;       /* CUDA_STANDIN_DEVICES */
    int query_delay;   /* CUDA_STANDIN_QUERY_DELAY */
    int trace;         /* CUDA_STANDIN_TRACE */
    int device_memory_mib; /* CUDA_STANDIN_DEVICE_MEMORY */
    int ipc_free_check;    /* CUDA_STANDIN_IPC_FREE_CHECK */
    /* CUDA_STANDIN_ORDER=seed:N: queued work also runs at random calls
     * (seeded), not only at completion points; 0 keeps it lazy. */
    unsigned order_seed;
    int wait_value_ms;      /* CUDA_STANDIN_WAIT_VALUE_MS */
    int mps;                /* CUDA_STANDIN_MPS */
    int connections;        /* CUDA_STANDIN_CONNECTIONS: 0, streams run each on their own */
    char counts_path[4096]; /* CUDA_STANDIN_COUNTS: "" for none */
    /* CUDA_STANDIN_FAIL: the result forced on each entry point, or
     * CUDA_SUCCESS where the call runs normally. */
    CUresult fail[CUDA_STANDIN_API_COUNT];
} cuda_standin_config_t;

extern cuda_standin_config_t cuda_standin_config;

/* --- The call wrapper (cuda_standin_api.c). --- */

enum {
    CUDA_STANDIN_CALL_NEED_INIT = 1u << 0, /* CUDA_ERROR_NOT_INITIALIZED before cuInit */
    CUDA_STANDIN_CALL_LOCK      = 1u << 1, /* runs under the global lock */
    CUDA_STANDIN_CALL_NEED_CTX  = 1u << 2, /* CUDA_ERROR_INVALID_CONTEXT without a context */
};

/* Works before cuInit and touches no shared state (error strings, version). */
#define CUDA_STANDIN_ANYTIME 0u
/* Needs cuInit; no context needed (devices, pointer queries, VMM). */
#define CUDA_STANDIN_INITED  (CUDA_STANDIN_CALL_NEED_INIT | CUDA_STANDIN_CALL_LOCK)
/* Needs a current context: allocation, copies, streams, events, IPC. */
#define CUDA_STANDIN_IN_CTX  (CUDA_STANDIN_INITED | CUDA_STANDIN_CALL_NEED_CTX)

typedef struct cuda_standin_call {
    cuda_standin_api_id_t id;
    unsigned flags;
    int locked;
} cuda_standin_call_t;

CUresult cuda_standin_call_begin(cuda_standin_call_t *call);
/* Sleep `pause` without holding the global lock where that is safe. */
void cuda_standin_lock_pause(const struct timespec *pause);
CUresult cuda_standin_call_end(cuda_standin_call_t *call, CUresult status);

/*
 * The body of every exported function: _impl runs only when the entry point
 * is not forced to fail and its preconditions (_flags) hold.
 */
#define CUDA_STANDIN_CALL(_name, _flags, _impl) \
    do { \
        cuda_standin_call_t _call = {CUDA_STANDIN_API_ID(_name), (_flags), 0}; \
        CUresult _status          = cuda_standin_call_begin(&_call); \
        if (_status == CUDA_SUCCESS) { \
            _status = (_impl); \
        } \
        return cuda_standin_call_end(&_call, _status); \
    } while (0)

/* With CUDA_STANDIN_TRACE=1, adds a detail (arguments, or why a call failed)
 * to this thread's trace line for the current call; free otherwise. */
void cuda_standin_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where the notes end, and a way back there: for failures a caller expects
 * and handles itself (attributes that fall back to their defaults). */
size_t cuda_standin_note_mark(void);
void cuda_standin_note_rewind(size_t mark);

/* `_status`, after noting why: for error returns that need a reason.  A
 * macro, so that the compiler and analyzers see which result it is. */
#define cuda_standin_error(_status, ...) (cuda_standin_note(__VA_ARGS__), (_status))

/* A device fault during queued work: like a GPU's, it is sticky, every later
 * call that needs a context returns it.  Always printed to stderr. */
void cuda_standin_fault(CUresult status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CUresult cuda_standin_sticky_error(void);

/* The process id, refreshed in a forked child; part of buffer ids. */
pid_t cuda_standin_pid(void);

/* The symbol of an entry point ("cuMemAlloc_v2"), for messages. */
const char *cuda_standin_api_name(cuda_standin_api_id_t id);

/* --- CUresult names (cuda_standin_result.c). --- */

const char *cuda_standin_result_name(CUresult code);
/* "CUDA_ERROR_OUT_OF_MEMORY" -> 2; -1 for a name that is not a CUresult. */
int cuda_standin_result_parse(const char *name, CUresult *code_p);

/* --- Devices and contexts (cuda_standin_device.c). --- */

struct CUctx_st {
    uint32_t magic;
    int device;
    unsigned flags; /* cuCtxSetFlags: CU_CTX_SYNC_MEMOPS is the one that acts */
    int retained; /* cuDevicePrimaryCtxRetain count; 0: destroyed */
    int created;  /* made by cuCtxCreate (not a primary context) */
};

int cuda_standin_initialized(void);
int cuda_standin_device_count(void);
int cuda_standin_device_valid(int device);
/* The current context of this thread if it is usable, else NULL. */
CUcontext cuda_standin_ctx_current(void);
int cuda_standin_ctx_valid(CUcontext ctx);
/* Accounts device memory; CUDA_ERROR_OUT_OF_MEMORY beyond the device's size. */
CUresult cuda_standin_device_charge(int device, size_t size);
/* CU_CTX_SYNC_MEMOPS on the current context: synchronous copies and
 * memsets it issues complete before they return, whatever the memory. */
int cuda_standin_ctx_sync_memops(void);
void cuda_standin_device_uncharge(int device, size_t size);
size_t cuda_standin_device_used(int device);

/* --- Address space, backing memory, mapping table (cuda_standin_vaspace.c). --- */

typedef enum cuda_standin_map_kind {
    CUDA_STANDIN_MAP_ALLOC,   /* cuMemAlloc, cuMemAllocPitch: legacy-IPC capable */
    CUDA_STANDIN_MAP_POOL,    /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
    CUDA_STANDIN_MAP_MANAGED, /* cuMemAllocManaged: the one kind the CPU may touch */
    CUDA_STANDIN_MAP_VMM,     /* cuMemMap of a cuMemCreate'd or imported handle */
    CUDA_STANDIN_MAP_IPC,     /* cuIpcOpenMemHandle of another process's allocation */
} cuda_standin_map_kind_t;

struct cuda_standin_phys;

/* One range of addresses the stand-in handed out, and what backs it. */
typedef struct cuda_standin_map {
    cuda_standin_map_kind_t kind;
    uintptr_t base;
    size_t size;    /* as asked for: bounds of copies, cuMemGetAddressRange */
    size_t va_size; /* taken from the device range (rounded); 0 if not from it */
    char *alias;    /* the library's read-write view of the bytes */
    size_t alias_size;
    int memfd;      /* backing fd owned by this mapping, or -1 */
    size_t charged; /* device memory accounted to `device` */
    unsigned long long buffer_id;
    CUcontext ctx;  /* context current at allocation; NULL for VMM */
    int device;
    int sync_memops;
    int free_queued;                                /* cuMemFreeAsync pending */
    struct CUmemPoolHandle_st *pool;                /* POOL */
    struct cuda_standin_phys *phys;                 /* VMM */
    unsigned char access[CUDA_STANDIN_MAX_DEVICES]; /* VMM: CUmemAccess_flags per device */
    pid_t ipc_pid;                                  /* IPC: the exporter ... */
    unsigned long long ipc_buffer_id;               /* ... and its buffer id */
    int ipc_refs;                                   /* IPC: opens not closed yet */
} cuda_standin_map_t;

/* Reserves the device range (once per process; kept across fork). */
CUresult cuda_standin_vaspace_init(void);
int cuda_standin_vaspace_contains(uintptr_t addr);
CUresult cuda_standin_va_alloc(size_t size, size_t align, uintptr_t hint, uintptr_t *addr_p);
void cuda_standin_va_free(uintptr_t addr, size_t size);

/* Process-unique, and unique across processes: (pid << 32) | counter. */
unsigned long long cuda_standin_next_id(void);

/* A memfd named "cuda_standin.<id><suffix>" of `size` bytes. */
CUresult cuda_standin_backing_create(unsigned long long id, const char *suffix, size_t size,
                                     int *fd_p);
CUresult cuda_standin_backing_map(int fd, size_t size, char **alias_p);

cuda_standin_map_t *cuda_standin_map_new(cuda_standin_map_kind_t kind);
CUresult cuda_standin_map_insert(cuda_standin_map_t *map);
/* Unmaps, closes and frees everything the mapping holds (see its kind). */
void cuda_standin_map_destroy(cuda_standin_map_t *map);
/* The mapping whose [base, base + size) holds addr, or NULL. */
cuda_standin_map_t *cuda_standin_map_find(uintptr_t addr);
/* The first mapping that intersects [addr, addr + size), or NULL. */
cuda_standin_map_t *cuda_standin_map_first_in(uintptr_t addr, size_t size);
size_t cuda_standin_map_count(void);
cuda_standin_map_t *cuda_standin_map_at(size_t index);

/* --- Allocation (cuda_standin_mem.c). --- */

/* Frees a cuMemAlloc/pool/managed allocation by its base (queued frees). */
CUresult cuda_standin_mem_free_base(uintptr_t dptr);
/* [addr, addr + len) lies in page-locked host memory (cuMemHostAlloc,
 * cuMemHostRegister): the driver's DMA reads it directly. */
int cuda_standin_mem_host_pinned(uintptr_t addr, size_t len);
/* What the driver knows of page-locked host memory (pointer attributes). */
typedef struct cuda_standin_host_info {
    uintptr_t base;
    size_t size;
    CUcontext ctx;
    unsigned long long buffer_id;
} cuda_standin_host_info_t;
/* 1 and *info where addr lies in page-locked host memory, else 0. */
int cuda_standin_mem_host_info(uintptr_t addr, cuda_standin_host_info_t *info);
/* cuda_standin_ipc.c: another process still maps this memfd (IPC) */
int cuda_standin_ipc_still_open(int memfd);
void cuda_standin_mem_pool_release(struct CUmemPoolHandle_st *pool);
unsigned cuda_standin_mem_pool_handle_types(const struct CUmemPoolHandle_st *pool);

/* --- Streams and events (cuda_standin_stream.c). --- */

typedef enum cuda_standin_op_kind {
    CUDA_STANDIN_OP_COPY,
    CUDA_STANDIN_OP_MEMSET,
    CUDA_STANDIN_OP_FREE,        /* cuMemFreeAsync */
    CUDA_STANDIN_OP_MARKER,      /* cuEventRecord */
    CUDA_STANDIN_OP_WAIT,        /* another stream's work up to a position first */
    CUDA_STANDIN_OP_KERNEL,      /* cuLaunchKernel: one of Strata's kernels */
    CUDA_STANDIN_OP_WAIT_VALUE,  /* cuStreamWaitValue32/64 */
    CUDA_STANDIN_OP_WRITE_VALUE, /* cuStreamWriteValue32/64 */
} cuda_standin_op_kind_t;

typedef struct cuda_standin_op {
    cuda_standin_op_kind_t kind;
    uint64_t seq;                   /* position in its stream, from 1 */
    struct cuda_standin_op *next;
    int device;                     /* whose access rights apply (VMM) */
    CUcontext ctx;                  /* KERNEL: the context it was launched in */
    uintptr_t dst, src;             /* COPY; dst for MEMSET, FREE and *_VALUE */
    size_t len;                     /* *_VALUE: 4 or 8 */
    unsigned char value;            /* MEMSET */
    void *staged;                   /* COPY: the source as it was at issue (owned) */
    uint64_t word;                  /* *_VALUE: the operand */
    unsigned flags;                 /* WAIT_VALUE: CU_STREAM_WAIT_VALUE_* */
    uint64_t wait_stream, wait_seq; /* WAIT */
    const struct strata_reduce_host_kernel *kernel; /* KERNEL: which, and a copy */
    unsigned char params[256];                      /* of its parameter */
    /* CUDA_STANDIN_CONNECTIONS: the hardware queue it runs on, its place
     * there, and its wait's slot in the device's shared pool (MPS) or -1 */
    struct cuda_standin_hwq *hwq;
    uint64_t hwq_ticket;
    int hwq_slot;
} cuda_standin_op_t;

typedef struct CUstream_st cuda_standin_stream_t;

/* 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are the default stream. */
CUresult cuda_standin_stream_get(CUstream handle, cuda_standin_stream_t **stream_p);
/* The device whose engines run the stream's work. */
int cuda_standin_stream_device(cuda_standin_stream_t *stream);
cuda_standin_stream_t *cuda_standin_stream_default(void);
/* Queues a copy of *op (with the implicit default-stream ordering). */
CUresult cuda_standin_stream_enqueue(cuda_standin_stream_t *stream, const cuda_standin_op_t *op);
/* Runs all queued work of the stream: a completion point. */
CUresult cuda_standin_stream_finish(cuda_standin_stream_t *stream);
/* Runs all queued work of every stream: the device-wide synchronization
 * that cuMemFree, cuMemUnmap and cuIpcCloseMemHandle imply. */
CUresult cuda_standin_stream_finish_all(void);
/* CUDA_STANDIN_ORDER=seed:N: runs some queued work now, as a GPU may. */
void cuda_standin_stream_progress_random(void);
/* Frees what a dropped or finished operation owns. */
void cuda_standin_op_release(cuda_standin_op_t *op);

/* --- Hardware queues (cuda_standin_hwq.c, CUDA_STANDIN_CONNECTIONS). --- */

/* CUDA_DEVICE_MAX_CONNECTIONS's range */
#define CUDA_STANDIN_HWQ_MAX 32

typedef struct cuda_standin_hwq cuda_standin_hwq_t;

int cuda_standin_hwq_enabled(void);
/* The queue of a stream created now in ctx (round-robin), and the default
 * stream's (queue 0) for work queued in ctx; NULL when out of memory. */
cuda_standin_hwq_t *cuda_standin_hwq_for_stream(CUcontext ctx);
cuda_standin_hwq_t *cuda_standin_hwq_for_default(CUcontext ctx);
unsigned cuda_standin_hwq_index(const cuda_standin_hwq_t *queue);
/* op (its seq set) joins the queue's FIFO: op->hwq, hwq_ticket, hwq_slot. */
CUresult cuda_standin_hwq_push(cuda_standin_hwq_t *queue, cuda_standin_stream_t *stream,
                               cuda_standin_op_t *op);
/* An operation queued on op's queue before op and not run yet: which (its
 * stream and position), 0 when none is left. */
int cuda_standin_hwq_earlier(const cuda_standin_op_t *op, cuda_standin_stream_t **stream_p,
                             uint64_t *seq_p);
/* MPS: a wait of another process (*pid_p) holds op's queue up before op. */
int cuda_standin_hwq_foreign(const cuda_standin_op_t *op, pid_t *pid_p);
/* Another thread runs an operation of the queue. */
int cuda_standin_hwq_busy(const cuda_standin_hwq_t *queue);
/* This thread runs an operation of the queue: take returns what release
 * restores (a nested run of the same thread keeps it taken). */
int cuda_standin_hwq_take(cuda_standin_hwq_t *queue);
void cuda_standin_hwq_release(cuda_standin_hwq_t *queue, int nested);
/* op ran: it leaves its queue's FIFO (and the shared pool). */
void cuda_standin_hwq_done(cuda_standin_op_t *op);
void cuda_standin_hwq_forget(void);

/* --- Copies (cuda_standin_copy.c), run by queued operations. --- */

CUresult cuda_standin_copy_run(const cuda_standin_op_t *op);
/* cuda_standin_module.c: runs a queued kernel on the memory's aliases. */
void cuda_standin_kernel_run(const cuda_standin_op_t *op);
CUresult cuda_standin_memset_run(const cuda_standin_op_t *op);
/* cuda_standin_memop.c: runs a WAIT_VALUE (polls) or WRITE_VALUE. */
void cuda_standin_memop_run(const cuda_standin_op_t *op);
/* A WAIT_VALUE whose condition holds now; 1 for every other operation. */
int cuda_standin_memop_ready(const cuda_standin_op_t *op);
/* CLOCK_MONOTONIC in milliseconds: what CUDA_STANDIN_WAIT_VALUE_MS measures. */
uint64_t cuda_standin_memop_now_ms(void);

/* --- VMM (cuda_standin_vmm.c). --- */

void cuda_standin_vmm_phys_put(struct cuda_standin_phys *phys);
unsigned long long cuda_standin_vmm_phys_id(const struct cuda_standin_phys *phys);
unsigned cuda_standin_vmm_phys_handle_types(const struct cuda_standin_phys *phys);
/* The memfd of the physical allocation; a mapping's base is its byte 0. */
int cuda_standin_vmm_phys_fd(const struct cuda_standin_phys *phys);
/* The reservation holding addr: 0 when addr is in none. */
int cuda_standin_vmm_reservation(uintptr_t addr, uintptr_t *base_p, size_t *size_p);

/* --- Cost counters (cuda_standin_count.c, CUDA_STANDIN_COUNTS). --- */

typedef enum cuda_standin_count_kind {
    CUDA_STANDIN_COUNT_WAIT,   /* the host waited for the device */
    CUDA_STANDIN_COUNT_LAUNCH, /* a kernel */
    CUDA_STANDIN_COUNT_DTOD,
    CUDA_STANDIN_COUNT_HTOD,
    CUDA_STANDIN_COUNT_DTOH,
    CUDA_STANDIN_COUNT_MEMSET,
    CUDA_STANDIN_COUNT_PTRQ,  /* a question about an address (cuda_standin_count.c) */
    CUDA_STANDIN_COUNT_CALLS, /* any entry point, failed or not */
    /* bytes of device memory read and written (cuda_standin_count.c) */
    CUDA_STANDIN_COUNT_TRAFFIC,
    CUDA_STANDIN_COUNT_KINDS
} cuda_standin_count_kind_t;

void cuda_standin_count(cuda_standin_count_kind_t kind);
void cuda_standin_count_add(cuda_standin_count_kind_t kind, unsigned long long n);
/* One entry point called: CALLS, and PTRQ for the pointer queries. */
void cuda_standin_count_call(cuda_standin_api_id_t id);
/* One copy of len bytes, counted by the kinds of memory on each side, and
 * its device-memory traffic. */
void cuda_standin_count_copy(uintptr_t dst, uintptr_t src, size_t len);
/* One memset of len bytes (device memory written). */
void cuda_standin_count_memset(uintptr_t dst, size_t len);
/* One kernel's traffic, from its launch parameter: every input element
 * read once, every output element written once. */
void cuda_standin_count_kernel(const struct strata_reduce_host_kernel *kernel, const void *params);
/* Registers the line written at exit (settings read). */
void cuda_standin_count_setup(void);
void cuda_standin_count_forget(void);

/* --- Fork: a child starts with no driver state, as after exec. --- */

void cuda_standin_device_forget(void);
void cuda_standin_vaspace_forget(void);
void cuda_standin_mem_forget(void);
void cuda_standin_stream_forget(void);
void cuda_standin_vmm_forget(void);

#endif /* CUDA_STANDIN_H */
