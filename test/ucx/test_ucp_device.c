/*
 * UCP between two processes with GPU buffers, through public APIs only (UCP
 * and the CUDA driver API), so it proves what an application sees of the
 * transports UCX picked (gpu_copy, gpu_ipc, or UCX's own):
 *
 *   test_ucp_device [--alloc cumemalloc|vmm|async|ipc|host] [--test LIST]
 *                   [--sizes LIST] [--iters N] [--timeout S] [--print-info]
 *                   [--expect-tls LIST] [--memtype-hint] [--mem-map-detect]
 *                   [--early-alloc] [--late-cuda] [--stale-size N] [--stale-rounds N]
 *                   [--stale-tag-only]
 *                   [--kill-size N] [--kill-by self|parent] [--badrkey-header]
 *                   [--err-mode peer|none] [--same-device]
 *
 * The process forks: the parent is rank 0, the child rank 1; they exchange
 * UCP worker addresses, packed rkeys and "go"/"done" messages over a
 * socketpair.  Tests (--test, a comma list, default all but kill):
 *   tag      ucp_tag_send_nbx/recv_nbx, every size, device->device,
 *            host->device, device->host, both ranks sending in turn
 *            (--dirs chooses; h->h, host->host in a process with a CUDA
 *            context, only when named)
 *   rma      put and get between a local buffer (device, then host) and a
 *            ucp_mem_map'ed device buffer of the peer, at two offsets
 *   stale    the peer frees a registered buffer and allocates again (same
 *            address on the stand-in, usually on a GPU too); get, send and
 *            receive must see the new contents, never a stale mapping's
 *            (--stale-tag-only: send and receive only, no ucp_mem_map and
 *            get, for protocols that cannot get from device memory)
 *   badrkey  corrupted packed rkeys: unpack fails, or a get through it fails
 *            or returns the right bytes; never a crash, hang or wrong bytes
 *   memset   the sender fills its device source with cuMemsetD8 alone (over
 *            other bytes written and synchronized before) and calls
 *            ucp_tag_send_nbx at once, no synchronization between; every
 *            size, device->device and device->host, both ranks in turn.
 *            A synchronous memset of device memory does not wait for the
 *            device ("no host-side synchronization is performed") unless the
 *            memory has CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, which Strata's
 *            allocation hooks set (as UCX's CUDA support does); without it a
 *            transport reading the buffer on its own non-blocking stream or
 *            through a peer's IPC mapping sends the bytes from before the
 *            memset.  Also reads SYNC_MEMOPS of a cuMemAlloc buffer
 *            allocated after ucp_init: it must be 1 when Strata's module is
 *            loaded and its hooks are on (not UCX_STRATA_MEMTYPE_HOOKS=n or
 *            UCX_MEMTYPE_CACHE=n); with them off the value is only printed
 *            and pre-memset bytes are reported, not failed.  Its buffers are
 *            always allocated after ucp_init (--early-alloc does not apply)
 *   kill     rank 1 dies (SIGKILL) in the middle of a 64 MiB receive; rank 0
 *            must see an error on its request or endpoint within --timeout
 *   ownctx   rank 0 gets rank 1's registered device buffer with a context of
 *            its own current (cuCtxCreate), into a buffer of that context,
 *            destroys the context, then gets the same bytes again through the
 *            same rkey into a buffer of its primary context.  A transport
 *            that mapped the peer's memory, or made its streams, in the
 *            application's context (and cached them) fails the second get
 *            (--alloc cumemalloc only; not in all)
 *   all      tag,rma,stale,badrkey,memset,kill
 * Every destination is filled with a poison pattern first and every source
 * with a pattern depending on test, size, iteration and direction, so a
 * transfer that did not happen or returned stale bytes is caught; bytes past
 * the transfer (a guard) must keep the poison.  One line per check
 * ("tag d->d 4096: ok"); the first wrong byte prints rank, check, size,
 * index, expected and got, and the run exits 1.  Each check is bounded by
 * --timeout seconds (default 20): a hang prints "hang" and exits 1.  Rank r
 * uses device r % count (--same-device: device 0 for both).  Exit 77:
 * no CUDA device, or the device lacks what --alloc needs.
 *
 * --alloc ipc: every device buffer of a rank is a peer's allocation opened
 * with cuIpcOpenMemHandle (twice, and closed once: the driver counts opens),
 * as coll/strata hands its peers' buffers to the
 * pml: a third process (the owner, started by rank 0 and serving both ranks
 * over socketpairs) allocates with cuMemAlloc and exports, so the ranks
 * themselves allocate no device memory at all (with --late-cuda, nothing
 * but an IPC mapping can tell UCX that device memory exists).
 *
 * --ctx-flag on|off: after ucp_cleanup, the rank's context (its device's
 * primary context) must have CU_CTX_SYNC_MEMOPS (cuCtxGetFlags), or must
 * not: Strata sets it on the contexts it meets, for good, unless
 * UCX_STRATA_CTX_SYNC_MEMOPS=n; each rank prints what it found.
 *
 * --early-alloc allocates the device buffers of the tag test before
 * ucp_init; --late-cuda makes no CUDA context at all until UCP is set up and
 * has exchanged host messages (a host-only process, as UCX sees it, that
 * turns to the GPU later).
 *
 * Endpoints use UCP_ERR_HANDLING_MODE_PEER (--err-mode none: not for the
 * tests other than kill, which always needs it).  In UCX 1.13 that mode
 * admits only transports with peer failure handling (shared memory only with
 * UCX_POSIX_ERROR_HANDLING=y / UCX_SYSV_ERROR_HANDLING=y) and, for the
 * rendezvous lanes, only MDs flagged UCT_MD_FLAG_INVALIDATE.  Rank 0 prints
 * the transports of the endpoint's lanes; --expect-tls fails unless the named
 * ones are among them, --print-info prints UCX's whole configuration.
 * UCX 1.13's default protocols do ucp_put/get on device memory through
 * active messages and a CPU copy at the target unless a transport offers
 * put/get short/bcopy; UCX_PROTO_ENABLE=y selects the newer protocols.
 *
 * Device memory is never touched by the CPU: it is filled and checked with
 * cuMemcpyHtoD/cuMemcpyDtoH, so the program is correct on a real GPU.  CUDA is
 * initialised after the fork, in each process (a forked child cannot use a
 * parent's CUDA).  --alloc host runs the same checks on host memory only and
 * never calls CUDA.
 *
 * This file is longer than the house limit of ~800 lines because it is one
 * self-contained program a user can build and run by hand with one compiler
 * line; its parts (buffers, control channel, UCP plumbing, one function per
 * test) are in that order.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <ucp/api/ucp.h>
#ifdef STRATA_TEST_CUDART
#include <cuda_runtime_api.h>
#endif

#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GUARD        64     /* bytes after (and, for RMA, before) a transfer that must not change */
#define RMA_SHIFT    129    /* odd remote offset of every other RMA iteration */
#define EXIT_SKIP    77
#define MAX_SIZES    64
#define KILL_TAG     0x6b696c6cull
#define MEMSET_TAG   5000
#define FULL_MASK    UINT64_MAX

enum {
    T_TAG = 1,
    T_RMA = 2,
    T_STALE = 4,
    T_BADRKEY = 8,
    T_KILL = 16,
    T_MEMSET = 32,
    T_OWNCTX = 64
};
typedef enum {
    ALLOC_CUMEMALLOC,
    ALLOC_VMM,
    ALLOC_ASYNC,
    ALLOC_CUDAMALLOC,
    ALLOC_CUDAMALLOCASYNC,
    ALLOC_IPC,
    ALLOC_HOST
} alloc_mode_t;
typedef enum { MEM_HOST, MEM_DEVICE } mem_kind_t;

static const char *alloc_names[] = {"cumemalloc",      "vmm", "async", "cudamalloc",
                                    "cudamallocasync", "ipc", "host"};

static struct {
    alloc_mode_t alloc;
    unsigned tests;
    size_t sizes[MAX_SIZES];
    int num_sizes, iters, timeout, print_info, memtype_hint, mem_map_detect, early_alloc, late_cuda;
    int stale_rounds, stale_tag_only, kill_by_parent, badrkey_header, err_mode_none, same_device;
    unsigned dirs; /* --dirs: bit d of tag_dirs[] (tag test); default the first three */
    int host_mem;  /* --host-mem: 0 pageable, 1 pinned (cuMemHostAlloc), 2 registered */
    int ctx_flag; /* --ctx-flag: CU_CTX_SYNC_MEMOPS expected after ucp_cleanup (1, 0; -1 unchecked) */
    size_t stale_size, kill_size;
    const char *expect_tls;
} opt = {.alloc = ALLOC_CUMEMALLOC,
         .tests = T_TAG | T_RMA | T_STALE | T_BADRKEY | T_MEMSET,
         .iters = 2,
         .timeout = 20,
         .dirs = 7,
         .ctx_flag = -1,
         .stale_rounds = 3,
         .stale_size = 4u << 20,
         .kill_size = 64u << 20};

typedef struct test_buf {
    int on_device;
    int borrowed;              /* from the --early-alloc pool: not freed */
    int host_kind;             /* host buffer: opt.host_mem at allocation */
    void *ptr;                 /* the address UCP sees */
    size_t len;
    size_t vmm_size;           /* VMM: mapped size, rounded to the granularity */
    CUmemGenericAllocationHandle vmm_handle;
    uint64_t owner_ptr; /* --alloc ipc: the allocation in the owner */
} test_buf_t;

static struct {
    int rank, sock;
    int owner; /* --alloc ipc: socket to the owner */
    pid_t child, owner_pid;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    ucp_context_h ucp;
    ucp_worker_h worker;
    ucp_ep_h ep;
    void *peer_addr;
    size_t peer_addr_len;
    volatile ucs_status_t ep_status;   /* set by the endpoint's error handler */
    int closing;
    int child_may_die;                 /* the kill test */
    int kill_phase;                    /* endpoints for the kill test */
    uint8_t *stage;
    size_t stage_len;
    test_buf_t pool[2];                /* --early-alloc: device buffers made before ucp_init */
} g = {.sock = -1, .owner = -1};

/* ---- failing, watchdog ----------------------------------------------------- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    printf("rank %d: FAIL: ", g.rank);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(NULL);
    if (g.rank == 0 && g.child > 0) kill(g.child, SIGKILL);
    _exit(1);
}

static char watchdog_msg[512];
static char current_check[256] = "set-up";

static void watchdog_fire(int sig)
{
    (void)sig;
    if (write(STDOUT_FILENO, watchdog_msg, strlen(watchdog_msg)) < 0) {
        /* nothing left to report it to */
    }
    if (g.rank == 0 && g.child > 0) kill(g.child, SIGKILL);
    _exit(1);
}

static void watchdog_arm(const char *what)
{
    size_t n = strlen(what) < sizeof(current_check) - 1 ? strlen(what) : sizeof(current_check) - 1;
    memcpy(current_check, what, n);
    current_check[n] = '\0';
    snprintf(watchdog_msg, sizeof(watchdog_msg), "rank %d: FAIL: hang: %s did not finish within %d s\n",
             g.rank, current_check, opt.timeout);
    alarm((unsigned)opt.timeout);
}

/* Names the step of the armed check a hang would stop in, without
 * re-arming it (the wireup's steps). */
static void watchdog_step(const char *step)
{
    snprintf(watchdog_msg, sizeof(watchdog_msg),
             "rank %d: FAIL: hang: %s did not finish within %d s (in: %s)\n", g.rank, current_check,
             opt.timeout, step);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- CUDA and buffers ------------------------------------------------------- */

#define CU_CHECK(_call) cu_check((_call), #_call, __LINE__)

#ifdef STRATA_TEST_CUDART
#define CUDART_CHECK(_call) cudart_check((_call), #_call, __LINE__)
static void cudart_check(cudaError_t err, const char *call, int line)
{
    if (err != cudaSuccess) die("%s (line %d): %s", call, line, cudaGetErrorString(err));
}
#endif

static void cu_check(CUresult res, const char *call, int line)
{
    const char *name = "?", *str = "?";
    if (res == CUDA_SUCCESS) return;
    cuGetErrorName(res, &name);
    cuGetErrorString(res, &str);
    die("%s (line %d): %s (%s)", call, line, name, str);
}

static int device_allocs(void) { return opt.alloc != ALLOC_HOST; }

/* Returns 0, or EXIT_SKIP with the reason printed. */
static int cuda_setup(void)
{
    int count, vmm = 0, fd_handles = 0, pools = 0;
    char name[128];

    if (!device_allocs()) return 0;
    CU_CHECK(cuInit(0));
    CU_CHECK(cuDeviceGetCount(&count));
    if (count == 0) {
        printf("rank %d: skip: no CUDA device\n", g.rank);
        return EXIT_SKIP;
    }
    CU_CHECK(cuDeviceGet(&g.dev, opt.same_device ? 0 : g.rank % count));
    CU_CHECK(cuDevicePrimaryCtxRetain(&g.ctx, g.dev));
    CU_CHECK(cuCtxSetCurrent(g.ctx));
    CU_CHECK(cuDeviceGetName(name, sizeof(name), g.dev));
    printf("rank %d: device %d of %d: %s, --alloc %s\n", g.rank, (int)g.dev, count, name,
           alloc_names[opt.alloc]);
    if (opt.alloc == ALLOC_VMM) {
        CU_CHECK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, g.dev));
        CU_CHECK(cuDeviceGetAttribute(&fd_handles,
                                      CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, g.dev));
        if (!vmm || !fd_handles) {
            printf("rank %d: skip: device lacks VMM (%d) or POSIX fd handles (%d)\n", g.rank, vmm, fd_handles);
            return EXIT_SKIP;
        }
    } else if (opt.alloc == ALLOC_ASYNC) {
        CU_CHECK(cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, g.dev));
        if (!pools) {
            printf("rank %d: skip: device lacks memory pools (cuMemAllocAsync)\n", g.rank);
            return EXIT_SKIP;
        }
        CU_CHECK(cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING));
    } else if (opt.alloc == ALLOC_CUDAMALLOC || opt.alloc == ALLOC_CUDAMALLOCASYNC) {
#ifdef STRATA_TEST_CUDART
        CU_CHECK(cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING));
#else
        printf("rank %d: skip: built without the CUDA runtime (test/gpu/test_ucp_device_cudart has it)\n",
               g.rank);
        return EXIT_SKIP;
#endif
    }
    return 0;
}

static void vmm_alloc(test_buf_t *b)
{
    CUmemAllocationProp prop = {0};
    CUmemAccessDesc access = {0};
    CUdeviceptr d;
    size_t gran;

    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)g.dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    b->vmm_size = (b->len + gran - 1) / gran * gran;
    CU_CHECK(cuMemCreate(&b->vmm_handle, b->vmm_size, &prop, 0));
    CU_CHECK(cuMemAddressReserve(&d, b->vmm_size, 0, 0, 0));
    CU_CHECK(cuMemMap(d, b->vmm_size, 0, b->vmm_handle, 0));
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_CHECK(cuMemSetAccess(d, b->vmm_size, &access, 1));
    b->ptr = (void *)(uintptr_t)d;
}

/* ---- --alloc ipc: device memory a third process owns ----------------------- */

enum { OWNER_ALLOC = 1, OWNER_FREE = 2 };
typedef struct {
    uint64_t op, dev, arg; /* arg: the size to allocate, or the allocation to free */
} owner_req_t;
typedef struct {
    uint64_t res; /* CUresult */
    uint64_t ptr;
    CUipcMemHandle handle;
} owner_rep_t;

/* 0, or -1 when the other end closed (or failed) first. */
static int fd_io(int fd, void *buf, size_t n, int out)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = out ? write(fd, p, n) : read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static CUresult owner_serve(const owner_req_t *req, owner_rep_t *rep)
{
    static CUcontext ctx[64];
    CUdevice dev;
    CUdeviceptr d;
    CUresult res;

    if (req->dev >= 64) return CUDA_ERROR_INVALID_DEVICE;
    if (ctx[req->dev] == NULL) {
        if ((res = cuDeviceGet(&dev, (int)req->dev)) != CUDA_SUCCESS ||
            (res = cuDevicePrimaryCtxRetain(&ctx[req->dev], dev)) != CUDA_SUCCESS) {
            return res;
        }
    }
    if ((res = cuCtxSetCurrent(ctx[req->dev])) != CUDA_SUCCESS) return res;
    if (req->op == OWNER_FREE) return cuMemFree((CUdeviceptr)req->arg);
    if ((res = cuMemAlloc(&d, (size_t)req->arg)) != CUDA_SUCCESS) return res;
    if ((res = cuIpcGetMemHandle(&rep->handle, d)) != CUDA_SUCCESS) {
        cuMemFree(d);
        return res;
    }
    rep->ptr = (uint64_t)d;
    return CUDA_SUCCESS;
}

/* The owner: allocates and frees for both ranks until both have gone. */
static int owner_run(int fd0, int fd1)
{
    struct pollfd pfd[2] = {{.fd = fd0, .events = POLLIN}, {.fd = fd1, .events = POLLIN}};
    CUresult init = cuInit(0);
    owner_req_t req;
    owner_rep_t rep;

    while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
        if (poll(pfd, 2, -1) < 0 && errno != EINTR) return 1;
        for (int i = 0; i < 2; i++) {
            if (pfd[i].fd < 0 || pfd[i].revents == 0) continue;
            memset(&rep, 0, sizeof(rep));
            if (fd_io(pfd[i].fd, &req, sizeof(req), 0) != 0) {
                close(pfd[i].fd);
                pfd[i].fd = -1;
                continue;
            }
            rep.res = init != CUDA_SUCCESS ? init : owner_serve(&req, &rep);
            if (fd_io(pfd[i].fd, &rep, sizeof(rep), 1) != 0) {
                close(pfd[i].fd);
                pfd[i].fd = -1;
            }
        }
    }
    return 0;
}

static void owner_call(uint64_t op, uint64_t arg, owner_rep_t *rep, const char *what)
{
    owner_req_t req = {.op = op, .dev = (uint64_t)g.dev, .arg = arg};
    const char *name = "?";

    if (fd_io(g.owner, &req, sizeof(req), 1) != 0 || fd_io(g.owner, rep, sizeof(*rep), 0) != 0) {
        die("the owner of the device memory went away (%s)", what);
    }
    if (rep->res != CUDA_SUCCESS) {
        cuGetErrorName((CUresult)rep->res, &name);
        die("the owner's %s failed: %s", what, name);
    }
}

static void ipc_alloc(test_buf_t *b)
{
    owner_rep_t rep;
    CUdeviceptr d;

    CUdeviceptr again;
    CUresult res;

    owner_call(OWNER_ALLOC, b->len, &rep, "cuMemAlloc + cuIpcGetMemHandle");
    CU_CHECK(cuIpcOpenMemHandle(&d, rep.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    /* Opened twice and closed once, as two users of one mapping do (the
     * driver counts the opens): the mapping must stay device memory to UCX
     * after the first close.  Drivers before CUDA 11 refuse the second. */
    res = cuIpcOpenMemHandle(&again, rep.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (res == CUDA_SUCCESS) {
        if (again != d)
            die("the handle opened again at 0x%llx, not 0x%llx", (unsigned long long)again,
                (unsigned long long)d);
        CU_CHECK(cuIpcCloseMemHandle(again));
    } else if (res != CUDA_ERROR_ALREADY_MAPPED) {
        CU_CHECK(res);
    }
    b->ptr = (void *)(uintptr_t)d;
    b->owner_ptr = rep.ptr;
}

static void ipc_free(test_buf_t *b)
{
    owner_rep_t rep;

    CU_CHECK(cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)b->ptr));
    owner_call(OWNER_FREE, b->owner_ptr, &rep, "cuMemFree");
}

static void buf_alloc(test_buf_t *b, mem_kind_t kind, size_t len)
{
    CUdeviceptr d;

    memset(b, 0, sizeof(*b));
    b->len = len ? len : 1;
    b->on_device = kind == MEM_DEVICE && device_allocs();
    if (!b->on_device) {
        b->host_kind = (opt.alloc == ALLOC_HOST) ? 0 : opt.host_mem;
        if (b->host_kind == 1) {
            CU_CHECK(cuMemHostAlloc(&b->ptr, b->len, 0));
            return;
        }
        b->ptr = aligned_alloc(4096, (b->len + 4095) / 4096 * 4096);
        if (b->ptr == NULL) die("cannot allocate %zu host bytes", b->len);
        if (b->host_kind == 2)
            CU_CHECK(cuMemHostRegister(b->ptr, (b->len + 4095) / 4096 * 4096, 0));
        return;
    }
    switch (opt.alloc) {
    case ALLOC_VMM:
        vmm_alloc(b);
        return;
    case ALLOC_IPC: ipc_alloc(b); return;
    case ALLOC_ASYNC:
        CU_CHECK(cuMemAllocAsync(&d, b->len, g.stream));
        CU_CHECK(cuStreamSynchronize(g.stream));
        break;
#ifdef STRATA_TEST_CUDART
    /* The CUDA runtime reaches the driver through cuGetProcAddress: only
     * hooks on the driver's own entry points see these allocations. */
    case ALLOC_CUDAMALLOC:
        CUDART_CHECK(cudaMalloc((void **)&d, b->len));
        break;
    case ALLOC_CUDAMALLOCASYNC:
        CUDART_CHECK(cudaMallocAsync((void **)&d, b->len, (cudaStream_t)g.stream));
        CUDART_CHECK(cudaStreamSynchronize((cudaStream_t)g.stream));
        break;
#endif
    default:
        CU_CHECK(cuMemAlloc(&d, b->len));
        break;
    }
    b->ptr = (void *)(uintptr_t)d;
}

static void buf_free(test_buf_t *b)
{
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)b->ptr;

    if (b->ptr == NULL || b->borrowed) return;
    if (!b->on_device) {
        if (b->host_kind == 1) {
            CU_CHECK(cuMemFreeHost(b->ptr));
        } else {
            if (b->host_kind == 2) CU_CHECK(cuMemHostUnregister(b->ptr));
            free(b->ptr);
        }
    } else if (opt.alloc == ALLOC_VMM) {
        CU_CHECK(cuMemUnmap(d, b->vmm_size));
        CU_CHECK(cuMemRelease(b->vmm_handle));
        CU_CHECK(cuMemAddressFree(d, b->vmm_size));
    } else if (opt.alloc == ALLOC_IPC) {
        ipc_free(b);
    } else if (opt.alloc == ALLOC_ASYNC) {
        CU_CHECK(cuMemFreeAsync(d, g.stream));
        CU_CHECK(cuStreamSynchronize(g.stream));
#ifdef STRATA_TEST_CUDART
    } else if (opt.alloc == ALLOC_CUDAMALLOC) {
        CUDART_CHECK(cudaFree((void *)(uintptr_t)d));
    } else if (opt.alloc == ALLOC_CUDAMALLOCASYNC) {
        CUDART_CHECK(cudaFreeAsync((void *)(uintptr_t)d, (cudaStream_t)g.stream));
        CUDART_CHECK(cudaStreamSynchronize((cudaStream_t)g.stream));
#endif
    } else {
        CU_CHECK(cuMemFree(d));
    }
    b->ptr = NULL;
}

/* A buffer for one tag check: the early pool's for device memory with
 * --early-alloc (allocated before ucp_init, so only the transport's own
 * detection can know it is device memory), else a fresh one. */
static void buf_get(test_buf_t *b, mem_kind_t kind, size_t len, int pool_index)
{
    if (opt.early_alloc && kind == MEM_DEVICE && device_allocs()) {
        *b = g.pool[pool_index];
        b->borrowed = 1;
        return;
    }
    buf_alloc(b, kind, len);
}

static uint8_t *stage_get(size_t n)
{
    if (n > g.stage_len) {
        free(g.stage);
        g.stage = malloc(n);
        if (g.stage == NULL) die("cannot allocate %zu staging bytes", n);
        g.stage_len = n;
    }
    return g.stage;
}

static void buf_write(test_buf_t *b, size_t off, const void *src, size_t n)
{
    if (n == 0) return;
    if (b->on_device) CU_CHECK(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)b->ptr + off, src, n));
    else memcpy((char *)b->ptr + off, src, n);
}

static void buf_read(test_buf_t *b, size_t off, void *dst, size_t n)
{
    if (n == 0) return;
    if (b->on_device) CU_CHECK(cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)b->ptr + off, n));
    else memcpy(dst, (char *)b->ptr + off, n);
}

/* ---- patterns ------------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);
}

/* Byte `index` of the pattern `seed`: 8 bytes per 64-bit mix. */
static uint8_t pattern_byte(uint64_t seed, size_t index)
{
    return (uint8_t)(mix64(seed + (index >> 3)) >> ((index & 7) * 8));
}

static void pattern_gen(uint8_t *dst, size_t n, uint64_t seed, size_t first)
{
    uint64_t word = mix64(seed + (first >> 3));
    for (size_t i = 0; i < n; i++) {
        size_t index = first + i;
        if (i > 0 && (index & 7) == 0) word = mix64(seed + (index >> 3));
        dst[i] = (uint8_t)(word >> ((index & 7) * 8));
    }
}

/* Fills b[off, off + n) with bytes first.. of pattern `seed`. */
static void fill_pattern(test_buf_t *b, size_t off, size_t n, uint64_t seed, size_t first)
{
    uint8_t *stage = stage_get(n);
    pattern_gen(stage, n, seed, first);
    buf_write(b, off, stage, n);
}

/* b[off, off + n) must hold bytes first.. of pattern `seed`. */
static void check_pattern(test_buf_t *b, size_t off, size_t n, uint64_t seed, size_t first, const char *what)
{
    uint8_t *got = stage_get(n);
    buf_read(b, off, got, n);
    for (size_t i = 0; i < n; i++) {
        uint8_t want = pattern_byte(seed, first + i);
        if (got[i] != want) {
            die("%s: byte %zu of the buffer (%zu into this range of %zu): expected 0x%02x, got 0x%02x",
                what, off + i, i, n, want, got[i]);
        }
    }
}

/* ---- control channel (socketpair) -------------------------------------------------- */

static void rank1_ended(int st)
{
    g.child = 0;
    if (WIFSIGNALED(st)) die("rank 1 was killed by signal %d (%s) during %s", WTERMSIG(st), strsignal(WTERMSIG(st)),
                             current_check);
    die("rank 1 exited with status %d during %s", WEXITSTATUS(st), current_check);
}

static void peer_gone(void)
{
    int st;
    if (g.rank == 1) die("rank 0 went away during %s", current_check);
    if (g.child > 0 && waitpid(g.child, &st, 0) == g.child) rank1_ended(st);
    die("rank 1 went away during %s", current_check);
}

/* Rank 0 also watches for rank 1's death (a crash there would otherwise
 * look like a hang here), except in the kill test, which expects it. */
static void progress(void)
{
    static unsigned calls;
    int st;

    if (g.worker != NULL && ucp_worker_progress(g.worker) == 0) sched_yield();
    if (g.rank == 0 && g.child > 0 && !g.child_may_die && (++calls & 1023) == 0 &&
        waitpid(g.child, &st, WNOHANG) == g.child) {
        rank1_ended(st);
    }
}

static void sock_write(const void *buf, size_t n)
{
    if (fd_io(g.sock, (void *)buf, n, 1) != 0) peer_gone();
}

/* Reads exactly n bytes, progressing the UCP worker while waiting: the peer
 * may need our progress (a pending ack) to finish what it does. */
static void sock_read(void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        struct pollfd pfd = {.fd = g.sock, .events = POLLIN};
        progress();
        if (poll(&pfd, 1, g.worker != NULL ? 0 : -1) <= 0) continue;
        ssize_t r = read(g.sock, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) peer_gone();
        p += r;
        n -= (size_t)r;
    }
}

static void sock_send_msg(const void *buf, size_t n)
{
    uint64_t len = n;
    sock_write(&len, sizeof(len));
    sock_write(buf, n);
}

static void *sock_recv_msg(size_t *n)
{
    uint64_t len;
    void *buf;
    sock_read(&len, sizeof(len));
    buf = malloc(len ? len : 1);
    if (buf == NULL) die("cannot allocate %" PRIu64 " bytes", len);
    sock_read(buf, len);
    *n = len;
    return buf;
}

static void sock_send_u64(uint64_t v) { sock_write(&v, sizeof(v)); }
static uint64_t sock_recv_u64(void)
{
    uint64_t v;
    sock_read(&v, sizeof(v));
    return v;
}

static void barrier(void)
{
    sock_send_u64(0xba);
    if (sock_recv_u64() != 0xba) die("control channel out of step");
}

/* ---- UCP plumbing ------------------------------------------------------------------ */

static void ucs_check(ucs_status_t st, const char *what)
{
    if (st != UCS_OK) die("%s: %s", what, ucs_status_string(st));
}

static void ep_error_handler(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    g.ep_status = status;
    if (!g.closing) printf("rank %d: endpoint error: %s\n", g.rank, ucs_status_string(status));
}

/* The kill test always needs peer failure handling; --err-mode none turns
 * it off for the others. */
static ucp_err_handling_mode_t ep_err_mode(void)
{
    return opt.err_mode_none && !g.kill_phase ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
}

static const char *ep_err_mode_name(void)
{
    return ep_err_mode() == UCP_ERR_HANDLING_MODE_PEER ? "peer" : "none";
}

static void ep_create(void)
{
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = g.peer_addr,
        .err_mode = ep_err_mode(),
        .err_handler = {.cb = ep_error_handler, .arg = NULL},
    };
    g.ep_status = UCS_OK;
    ucs_check(ucp_ep_create(g.worker, &params, &g.ep), "ucp_ep_create");
}

static ucs_status_t request_wait_until(void *req, double deadline)
{
    ucs_status_t st;
    if (req == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (deadline > 0 && now_s() > deadline) return UCS_ERR_TIMED_OUT;
        progress();
    }
    ucp_request_free(req);
    return st;
}

static ucs_status_t request_wait(void *req) { return request_wait_until(req, 0); }

/* NULL: the message was there already and the receive completed at once;
 * UCP then filled *info through param.recv_info. */
static ucs_status_t recv_wait(void *req, ucp_tag_recv_info_t *info)
{
    ucs_status_t st;
    if (req == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
    while ((st = ucp_tag_recv_request_test(req, info)) == UCS_INPROGRESS) progress();
    ucp_request_free(req);
    return st;
}

static ucp_request_param_t op_param(const test_buf_t *b)
{
    ucp_request_param_t p = {0};
    if (opt.memtype_hint) {
        p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p.memory_type = b->on_device ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    }
    return p;
}

static ucs_status_t ep_flush(void)
{
    ucp_request_param_t p = {0};
    return request_wait(ucp_ep_flush_nbx(g.ep, &p));
}

static void tag_send(test_buf_t *b, size_t n, ucp_tag_t tag, const char *what)
{
    ucp_request_param_t p = op_param(b);
    ucs_status_t st = request_wait(ucp_tag_send_nbx(g.ep, b->ptr, n, tag, &p));
    if (st != UCS_OK) die("%s: ucp_tag_send_nbx: %s", what, ucs_status_string(st));
}

static void tag_recv(test_buf_t *b, size_t n, ucp_tag_t tag, const char *what)
{
    ucp_request_param_t p = op_param(b);
    ucp_tag_recv_info_t info = {.length = SIZE_MAX};
    ucs_status_t st;

    /* UCX 1.13 ignores RECV_INFO and returns NULL, without the length, for a
     * receive that completes at once (the message was already there):
     * always take a request, so ucp_tag_recv_request_test reports it. */
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.recv_info.tag_info = &info;
    st = recv_wait(ucp_tag_recv_nbx(g.worker, b->ptr, n, tag, FULL_MASK, &p), &info);
    if (st != UCS_OK) die("%s: ucp_tag_recv_nbx: %s", what, ucs_status_string(st));
    if (info.length != n) die("%s: received %zu bytes, expected %zu", what, info.length, n);
}

/* The transports named by the "lane[N]:  I:tl/dev.K md[..] ..." lines of
 * UCX's printed configuration, space separated, each once. */
static void lane_tls_parse(const char *text, char *tls, size_t max)
{
    char *copy = strdup(text), *line, *save = NULL, name[32];
    size_t used = strlen(tls);

    for (line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane["), *close, *colon, *slash;
        /* skip "lane[N]:", then the resource index "I:" ends at the colon */
        if (lane == NULL || (close = strchr(lane, ']')) == NULL || close[1] != ':' ||
            (colon = strchr(close + 2, ':')) == NULL ||
            (slash = strchr(colon, '/')) == NULL || slash - colon - 1 >= (long)sizeof(name)) {
            continue;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(slash - colon - 1), colon + 1);
        if (strstr(tls, name) != NULL) continue;
        used += (size_t)snprintf(tls + used, used < max ? max - used : 0, "%s%s", used ? " " : "", name);
    }
    free(copy);
}

/* UCX's printed configuration: of the endpoint (ucp_ep_print_info) or of the
 * worker, whose memory-type endpoints are where host<->device copies go. */
static char *ucx_config_text(int worker)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (f == NULL) die("open_memstream failed");
    if (worker) ucp_worker_print_info(g.worker, f);
    else ucp_ep_print_info(g.ep, f);
    fclose(f);
    return text;
}

static void ep_lane_tls(char *tls, size_t max)
{
    char *text = ucx_config_text(0);
    tls[0] = '\0';
    lane_tls_parse(text, tls, max);
    free(text);
}

/* Prints the transports of the endpoint's lanes and of the worker's
 * memory-type endpoints (--print-info: UCX's whole configuration) and, with
 * --expect-tls, fails unless every named transport is among them. */
static void ep_report_transports(void)
{
    char ep_tls[256], mt_tls[256] = "", *ep_text = ucx_config_text(0), *wk_text = ucx_config_text(1);
    char *list, *tl, *save = NULL;

    ep_lane_tls(ep_tls, sizeof(ep_tls));
    lane_tls_parse(strstr(wk_text, "UCP endpoint") ? strstr(wk_text, "UCP endpoint") : "", mt_tls, sizeof(mt_tls));
    if (g.rank == 0) {
        printf("endpoint lanes (err mode %s): %s; memory-type endpoints: %s\n", ep_err_mode_name(), ep_tls,
               mt_tls[0] ? mt_tls : "none");
    }
    if (opt.print_info) {
        printf("rank %d: UCP endpoint configuration:\n%s", g.rank, ep_text);
        if (g.rank == 0) printf("%s", wk_text);
    }
    if (opt.expect_tls != NULL && g.rank == 0) {
        list = strdup(opt.expect_tls);
        for (tl = strtok_r(list, ",", &save); tl != NULL; tl = strtok_r(NULL, ",", &save)) {
            if (strstr(ep_tls, tl) == NULL && strstr(mt_tls, tl) == NULL) {
                printf("%s%s", ep_text, wk_text);
                /* UCX 1.13 wireup (select.c): with error handling, rma_bw lanes
                 * need an MD flagged UCT_MD_FLAG_INVALIDATE. */
                if (ep_err_mode() == UCP_ERR_HANDLING_MODE_PEER) {
                    printf("note: with UCP_ERR_HANDLING_MODE_PEER, UCX 1.13 selects only transports with peer "
                           "failure handling, and for the rendezvous (rma_bw) lanes only MDs flagged "
                           "UCT_MD_FLAG_INVALIDATE; --err-mode none shows the selection without error handling\n");
                }
                die("transport %s is neither among the endpoint's lanes (%s) nor the memory-type endpoints' (%s) "
                    "(--expect-tls %s)", tl, ep_tls, mt_tls, opt.expect_tls);
            }
            printf("transport %s: selected\n", tl);
        }
        free(list);
    }
    free(ep_text);
    free(wk_text);
}

static void ucp_setup(void)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_TAG | UCP_FEATURE_RMA};
    ucp_worker_params_t wparams = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    test_buf_t ping;
    ucp_address_t *addr;
    ucp_config_t *config;
    size_t addr_len;

    watchdog_arm("UCP set-up and wireup");
    ucs_check(ucp_config_read(NULL, NULL, &config), "ucp_config_read");
    /* A dead peer is found by keepalive; UCX's default round is 20 s, longer
     * than --timeout.  An explicit UCX_KEEPALIVE_INTERVAL wins. */
    if ((opt.tests & T_KILL) && getenv("UCX_KEEPALIVE_INTERVAL") == NULL) {
        ucs_check(ucp_config_modify(config, "KEEPALIVE_INTERVAL", "1s"), "ucp_config_modify");
    }
    watchdog_step("ucp_init");
    ucs_check(ucp_init(&params, config, &g.ucp), "ucp_init");
    ucp_config_release(config);
    watchdog_step("ucp_worker_create");
    ucs_check(ucp_worker_create(g.ucp, &wparams, &g.worker), "ucp_worker_create");
    ucs_check(ucp_worker_get_address(g.worker, &addr, &addr_len), "ucp_worker_get_address");
    watchdog_step("the worker address exchange");
    sock_send_msg(addr, addr_len);
    ucp_worker_release_address(g.worker, addr);
    free(g.peer_addr);
    g.peer_addr = sock_recv_msg(&g.peer_addr_len);
    watchdog_step("ucp_ep_create");
    ep_create();
    watchdog_step("the host ping-pong");

    /* A host ping-pong completes the wireup before any test looks at lanes. */
    buf_alloc(&ping, MEM_HOST, 8);
    if (g.rank == 0) {
        tag_send(&ping, 8, 1, "wireup ping");
        tag_recv(&ping, 8, 2, "wireup pong");
    } else {
        tag_recv(&ping, 8, 1, "wireup ping");
        tag_send(&ping, 8, 2, "wireup pong");
    }
    buf_free(&ping);
    watchdog_step("the barrier after the ping-pong");
    barrier();
    alarm(0);
}

static void ep_close(void)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS};
    if (g.ep == NULL) return;
    g.closing = 1;
    if (g.ep_status != UCS_OK) p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    request_wait(ucp_ep_close_nbx(g.ep, &p));
    g.ep = NULL;
    g.closing = 0;
}

static void ucp_teardown(void)
{
    watchdog_arm("UCP teardown (endpoint close)");
    ep_close();
    barrier();
    alarm(0);
    ucp_worker_destroy(g.worker);
    g.worker = NULL;
    ucp_cleanup(g.ucp);
    g.ucp = NULL;
}

/* ---- tests ------------------------------------------------------------------------ */

static const struct {
    mem_kind_t src, dst;
    const char *name;
} tag_dirs[] = {
    {MEM_DEVICE, MEM_DEVICE, "d->d"},
    {MEM_HOST, MEM_DEVICE, "h->d"},
    {MEM_DEVICE, MEM_HOST, "d->h"},
    {MEM_HOST, MEM_HOST, "h->h"}, /* only when asked: host traffic of a process with a context */
};
#define TAG_DIRS ((int)(sizeof(tag_dirs) / sizeof(tag_dirs[0])))

/* Both ranks own a source of kind dir.src and a destination of kind dir.dst;
 * rank 0 sends to rank 1, then rank 1 to rank 0, --iters times. */
static void test_tag_case(int d, size_t size, ucp_tag_t *tag)
{
    test_buf_t src, dst;
    char what[128];

    snprintf(what, sizeof(what), "tag %s %zu", tag_dirs[d].name, size);
    watchdog_arm(what);
    buf_get(&src, tag_dirs[d].src, size + GUARD, 0);
    buf_get(&dst, tag_dirs[d].dst, size + GUARD, 1);
    for (int it = 0; it < opt.iters; it++) {
        for (int sender = 0; sender < 2; sender++, (*tag)++) {
            uint64_t seed = seed_of(T_TAG, (uint64_t)d, size, (uint64_t)(it * 2 + sender));
            uint64_t poison = ~seed;
            snprintf(what, sizeof(what), "tag %s size %zu iter %d, rank %d -> rank %d", tag_dirs[d].name,
                     size, it, sender, !sender);
            if (g.rank == sender) {
                fill_pattern(&src, 0, size + GUARD, seed, 0);
                tag_send(&src, size, *tag, what);
            } else {
                fill_pattern(&dst, 0, size + GUARD, poison, 0);
                tag_recv(&dst, size, *tag, what);
                check_pattern(&dst, 0, size, seed, 0, what);
                check_pattern(&dst, size, GUARD, poison, size, what);
            }
        }
    }
    barrier();
    buf_free(&src);
    buf_free(&dst);
    alarm(0);
    if (g.rank == 0) printf("tag %s %zu: ok\n", tag_dirs[d].name, size);
}

static void test_tag(void)
{
    ucp_tag_t tag = 1000;
    for (int d = 0; d < TAG_DIRS; d++) {
        if (!(opt.dirs & (1u << d))) continue;
        for (int s = 0; s < opt.num_sizes; s++) test_tag_case(d, opt.sizes[s], &tag);
    }
}

static ucp_mem_h mem_map(test_buf_t *b)
{
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = b->ptr,
        .length = b->len,
    };
    ucp_mem_h memh;
    if (!opt.mem_map_detect) {
        mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        mp.memory_type = b->on_device ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    }
    ucs_check(ucp_mem_map(g.ucp, &mp, &memh), "ucp_mem_map");
    return memh;
}

/* Rank 1: registers b and sends its address and packed rkey to rank 0. */
static ucp_mem_h expose(test_buf_t *b)
{
    ucp_mem_h memh = mem_map(b);
    void *rkey_buf;
    size_t rkey_len;

    ucs_check(ucp_rkey_pack(g.ucp, memh, &rkey_buf, &rkey_len), "ucp_rkey_pack");
    sock_send_u64((uint64_t)(uintptr_t)b->ptr);
    sock_send_msg(rkey_buf, rkey_len);
    ucp_rkey_buffer_release(rkey_buf);
    return memh;
}

/* Rank 0: receives what expose() sent and unpacks the rkey. */
static ucp_rkey_h attach(uint64_t *raddr, void **packed, size_t *packed_len)
{
    ucp_rkey_h rkey;
    size_t len;
    void *buf;

    *raddr = sock_recv_u64();
    buf = sock_recv_msg(&len);
    ucs_check(ucp_ep_rkey_unpack(g.ep, buf, &rkey), "ucp_ep_rkey_unpack");
    if (packed != NULL) {
        *packed = buf;
        *packed_len = len;
    } else {
        free(buf);
    }
    return rkey;
}

static void rma_op(int put, test_buf_t *b, size_t n, uint64_t raddr, ucp_rkey_h rkey, const char *what)
{
    ucp_request_param_t p = op_param(b);
    void *req = put ? ucp_put_nbx(g.ep, b->ptr, n, raddr, rkey, &p) : ucp_get_nbx(g.ep, b->ptr, n, raddr, rkey, &p);
    ucs_status_t st = request_wait(req);
    if (st != UCS_OK) die("%s: ucp_%s_nbx: %s", what, put ? "put" : "get", ucs_status_string(st));
    st = ep_flush();
    if (st != UCS_OK) die("%s: ucp_ep_flush_nbx: %s", what, ucs_status_string(st));
}

/* One size, one local kind: get from rank 1's registered device buffer, then
 * put into it; rank 1 checks its bytes around the put. */
static void test_rma_case(test_buf_t *rbuf, uint64_t raddr, ucp_rkey_h rkey, mem_kind_t kind, size_t size)
{
    char k = kind == MEM_DEVICE ? 'd' : 'h', what[128];
    test_buf_t lbuf = {0};

    snprintf(what, sizeof(what), "rma %c<->d %zu", k, size);
    watchdog_arm(what);
    if (g.rank == 0) buf_alloc(&lbuf, kind, size + GUARD);
    for (int it = 0; it < opt.iters; it++) {
        size_t off = GUARD + (it & 1 ? RMA_SHIFT : 0);
        uint64_t seed_get = seed_of(T_RMA, kind, size, (uint64_t)it * 2);
        uint64_t seed_put = seed_of(T_RMA, kind, size, (uint64_t)it * 2 + 1);
        if (g.rank == 1) {
            fill_pattern(rbuf, off - GUARD, size + 2 * GUARD, seed_get, off - GUARD);
            sock_send_u64(1);
            sock_recv_u64();
            snprintf(what, sizeof(what), "rma put %c->d size %zu iter %d (rank 1's buffer + %zu)", k, size, it, off);
            check_pattern(rbuf, off - GUARD, GUARD, seed_get, off - GUARD, what);
            check_pattern(rbuf, off, size, seed_put, 0, what);
            check_pattern(rbuf, off + size, GUARD, seed_get, off + size, what);
        } else {
            sock_recv_u64();
            snprintf(what, sizeof(what), "rma get d->%c size %zu iter %d (rank 1's buffer + %zu)", k, size, it, off);
            fill_pattern(&lbuf, 0, size + GUARD, ~seed_get, 0);
            rma_op(0, &lbuf, size, raddr + off, rkey, what);
            check_pattern(&lbuf, 0, size, seed_get, off, what);
            check_pattern(&lbuf, size, GUARD, ~seed_get, size, what);
            snprintf(what, sizeof(what), "rma put %c->d size %zu iter %d", k, size, it);
            fill_pattern(&lbuf, 0, size, seed_put, 0);
            rma_op(1, &lbuf, size, raddr + off, rkey, what);
            sock_send_u64(2);
        }
        barrier();
    }
    alarm(0);
    if (g.rank == 0) {
        buf_free(&lbuf);
        printf("rma get d->%c %zu: ok\nrma put %c->d %zu: ok\n", k, size, k, size);
    }
}

static void test_rma(void)
{
    size_t max = 0;
    test_buf_t rbuf = {0};
    ucp_mem_h memh = NULL;
    ucp_rkey_h rkey = NULL;
    uint64_t raddr = 0;

    for (int s = 0; s < opt.num_sizes; s++) max = opt.sizes[s] > max ? opt.sizes[s] : max;
    if (g.rank == 1) {
        buf_alloc(&rbuf, MEM_DEVICE, max + RMA_SHIFT + 2 * GUARD);
        memh = expose(&rbuf);
    } else {
        rkey = attach(&raddr, NULL, NULL);
    }
    for (int k = MEM_DEVICE; k >= MEM_HOST; k--) {
        for (int s = 0; s < opt.num_sizes; s++) test_rma_case(&rbuf, raddr, rkey, (mem_kind_t)k, opt.sizes[s]);
    }
    if (g.rank == 0) ucp_rkey_destroy(rkey);
    barrier();
    if (g.rank == 1) {
        ucs_check(ucp_mem_unmap(g.ucp, memh), "ucp_mem_unmap");
        buf_free(&rbuf);
    }
}

/* See --test ownctx at the top. */
static void test_ownctx(void)
{
    const size_t size = 256 * 1024;
    uint64_t seed = seed_of(T_OWNCTX, MEM_DEVICE, size, 0), raddr = 0;
    test_buf_t rbuf = {0}, lbuf = {0};
    ucp_mem_h memh = NULL;
    ucp_rkey_h rkey = NULL;
    CUcontext own = NULL;

    watchdog_arm("ownctx");
    if (g.rank == 1) {
        buf_alloc(&rbuf, MEM_DEVICE, size);
        fill_pattern(&rbuf, 0, size, seed, 0);
        memh = expose(&rbuf);
        sock_recv_u64();
    } else {
        rkey = attach(&raddr, NULL, NULL);
        CU_CHECK(cuCtxCreate(&own, NULL, 0, g.dev));
        buf_alloc(&lbuf, MEM_DEVICE, size);
        fill_pattern(&lbuf, 0, size, ~seed, 0);
        rma_op(0, &lbuf, size, raddr, rkey, "ownctx: get in a context of rank 0's own");
        check_pattern(&lbuf, 0, size, seed, 0, "ownctx: get in a context of rank 0's own");
        buf_free(&lbuf);
        CU_CHECK(cuCtxDestroy(own));
        CU_CHECK(cuCtxSetCurrent(g.ctx));
        buf_alloc(&lbuf, MEM_DEVICE, size);
        fill_pattern(&lbuf, 0, size, ~seed, 0);
        rma_op(0, &lbuf, size, raddr, rkey, "ownctx: get after that context was destroyed");
        check_pattern(&lbuf, 0, size, seed, 0, "ownctx: get after that context was destroyed");
        buf_free(&lbuf);
        ucp_rkey_destroy(rkey);
        sock_send_u64(1);
        printf("ownctx get d->d %zu in a context of its own, then after it was destroyed: ok\n",
               size);
    }
    alarm(0);
    barrier();
    if (g.rank == 1) {
        ucs_check(ucp_mem_unmap(g.ucp, memh), "ucp_mem_unmap");
        buf_free(&rbuf);
    }
}

/* Round r: both ranks allocate (the same address as the last round, where the
 * allocator repeats), rank 0 gets from rank 1's new buffer through a new
 * rkey, then each sends its buffer to the other.  A transport that maps a
 * peer's memory by address alone would hand back the last round's bytes. */
static void test_stale(void)
{
    size_t size = opt.stale_size;
    uintptr_t last = 0;
    char what[160];

    for (int r = 0; r < opt.stale_rounds; r++) {
        test_buf_t b;
        ucp_mem_h memh = NULL;
        ucp_rkey_h rkey = NULL;
        uint64_t raddr = 0, peer_last_repeat = 0;
        uint64_t seed_get = seed_of(T_STALE, size, (uint64_t)r, 0);
        uint64_t seed_10 = seed_of(T_STALE, size, (uint64_t)r, 1);
        uint64_t seed_01 = seed_of(T_STALE, size, (uint64_t)r, 2);
        int repeat;

        snprintf(what, sizeof(what), "stale round %d", r);
        watchdog_arm(what);
        buf_alloc(&b, MEM_DEVICE, size + GUARD);
        repeat = r > 0 && (uintptr_t)b.ptr == last;
        last = (uintptr_t)b.ptr;
        if (opt.stale_tag_only) {
            sock_send_u64((uint64_t)repeat);
            peer_last_repeat = sock_recv_u64();
        } else if (g.rank == 1) {
            fill_pattern(&b, 0, size + GUARD, seed_get, 0);
            memh = expose(&b);
            sock_send_u64((uint64_t)repeat);
        } else {
            rkey = attach(&raddr, NULL, NULL);
            peer_last_repeat = sock_recv_u64();
            snprintf(what, sizeof(what), "stale round %d: get from rank 1's new buffer 0x%" PRIx64, r, raddr);
            fill_pattern(&b, 0, size + GUARD, ~seed_get, 0);
            rma_op(0, &b, size, raddr, rkey, what);
            check_pattern(&b, 0, size, seed_get, 0, what);
            ucp_rkey_destroy(rkey);
        }
        barrier();
        if (memh != NULL) ucs_check(ucp_mem_unmap(g.ucp, memh), "ucp_mem_unmap");

        snprintf(what, sizeof(what), "stale round %d: tag rank 1 -> rank 0", r);
        if (g.rank == 1) {
            fill_pattern(&b, 0, size, seed_10, 0);
            tag_send(&b, size, 3000 + (ucp_tag_t)r * 2, what);
        } else {
            fill_pattern(&b, 0, size + GUARD, ~seed_10, 0);
            tag_recv(&b, size, 3000 + (ucp_tag_t)r * 2, what);
            check_pattern(&b, 0, size, seed_10, 0, what);
            check_pattern(&b, size, GUARD, ~seed_10, size, what);
        }
        snprintf(what, sizeof(what), "stale round %d: tag rank 0 -> rank 1", r);
        if (g.rank == 0) {
            fill_pattern(&b, 0, size, seed_01, 0);
            tag_send(&b, size, 3001 + (ucp_tag_t)r * 2, what);
        } else {
            fill_pattern(&b, 0, size + GUARD, ~seed_01, 0);
            tag_recv(&b, size, 3001 + (ucp_tag_t)r * 2, what);
            check_pattern(&b, 0, size, seed_01, 0, what);
            check_pattern(&b, size, GUARD, ~seed_01, size, what);
        }
        barrier();
        buf_free(&b);
        alarm(0);
        if (g.rank == 0) {
            printf("stale round %d %zu: ok (address repeated: rank 0 %s, rank 1 %s)\n", r, size,
                   r == 0 ? "-" : repeat ? "yes" : "no", r == 0 ? "-" : peer_last_repeat ? "yes" : "no");
        }
    }
}

/* ---- badrkey ---- */

typedef struct { size_t off, len; char name[64]; } rkey_damage_t;

/* Where to flip bytes of a packed rkey.  UCX 1.13 packs: a 64-bit md map, one
 * byte of memory type, then per md a size byte and that md's blob (the
 * transport's part), then optional system-device data.  Flipping UCP's own
 * header tests UCX, not the transport: only with --badrkey-header. */
static int rkey_damages(const uint8_t *p, size_t len, rkey_damage_t *d, int max)
{
    uint64_t map = 0;
    size_t o = 9;
    int n = 0, md = 0;

    if (len >= 9) {
        memcpy(&map, p, 8);
        for (; map != 0 && o < len; map &= map - 1, md++) {
            size_t blob = p[o++];
            if (o + blob > len) break;
            if (blob > 0 && n + 5 <= max) {
                size_t at[] = {o, o + blob / 2, o + blob - 1};
                const char *where[] = {"first", "middle", "last"};
                for (int i = 0; i < 3; i++) {
                    d[n] = (rkey_damage_t){at[i], 1, ""};
                    snprintf(d[n++].name, sizeof(d[0].name), "md blob %d (%zu B) %s byte @%zu", md, blob, where[i], at[i]);
                }
                d[n] = (rkey_damage_t){o, blob, ""};
                snprintf(d[n++].name, sizeof(d[0].name), "md blob %d (%zu B) every byte", md, blob);
                if (opt.badrkey_header) {
                    d[n] = (rkey_damage_t){o - 1, 1, ""};
                    snprintf(d[n++].name, sizeof(d[0].name), "md blob %d size byte @%zu", md, o - 1);
                }
            }
            o += blob;
        }
    }
    if (map != 0 || o > len || n == 0) {
        printf("badrkey: rkey of %zu bytes %s; flipping bytes near the end\n", len,
               map == 0 && o <= len ? "has no transport bytes (every md blob is empty)"
                                    : "is not in UCX 1.13's layout");
        n = 0;
        for (size_t back = 1; back <= 16 && back < len && n < max; back *= 2) {
            if (len - back < 9 && !opt.badrkey_header) break;
            d[n] = (rkey_damage_t){len - back, 1, ""};
            snprintf(d[n++].name, sizeof(d[0].name), "byte @%zu", len - back);
        }
    }
    if (opt.badrkey_header && n + 2 <= max) {
        d[n++] = (rkey_damage_t){0, 1, "md map byte 0"};
        d[n++] = (rkey_damage_t){8, 1, "memory type byte"};
    }
    return n;
}

/* A get of n bytes through rkey into lbuf; returns "correct", "wrong" or the error. */
static const char *badrkey_get(test_buf_t *lbuf, size_t n, uint64_t raddr, ucp_rkey_h rkey, uint64_t seed,
                               char *detail, size_t max)
{
    ucp_request_param_t p = op_param(lbuf);
    double deadline = now_s() + opt.timeout / 2.0;
    ucs_status_t st;
    uint8_t *got;

    fill_pattern(lbuf, 0, n, ~seed, 0);
    st = request_wait_until(ucp_get_nbx(g.ep, lbuf->ptr, n, raddr, rkey, &p), deadline);
    if (st == UCS_OK) st = request_wait_until(ucp_ep_flush_nbx(g.ep, &p), deadline);
    if (st == UCS_ERR_TIMED_OUT) die("badrkey: %s: the get did not complete within %d s (hang)", detail, opt.timeout / 2);
    if (st != UCS_OK) {
        snprintf(detail, max, "get failed (%s)", ucs_status_string(st));
        return "error";
    }
    got = stage_get(n);
    buf_read(lbuf, 0, got, n);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != pattern_byte(seed, i)) {
            snprintf(detail, max, "get completed but byte %zu: expected 0x%02x, got 0x%02x", i,
                     pattern_byte(seed, i), got[i]);
            return "wrong";
        }
    }
    snprintf(detail, max, "get completed, data correct");
    return "correct";
}

static void badrkey_reconnect_if_failed(void)
{
    if (g.ep_status == UCS_OK) return;
    printf("badrkey: endpoint failed (%s); reconnecting\n", ucs_status_string(g.ep_status));
    ep_close();
    ep_create();
}

static void test_badrkey(void)
{
    size_t size = 65536, packed_len = 0;
    uint64_t seed = seed_of(T_BADRKEY, size, 0, 0), raddr = 0;
    rkey_damage_t damages[64];
    test_buf_t buf;
    ucp_mem_h memh = NULL;
    ucp_rkey_h good = NULL, bad;
    void *packed = NULL;
    char detail[160];
    const char *res;
    int n;

    watchdog_arm("badrkey set-up");
    buf_alloc(&buf, MEM_DEVICE, size);
    if (g.rank == 1) {
        fill_pattern(&buf, 0, size, seed, 0);
        memh = expose(&buf);
        sock_recv_u64(); /* rank 0 is done; served its gets by progressing meanwhile */
        ucs_check(ucp_mem_unmap(g.ucp, memh), "ucp_mem_unmap");
        buf_free(&buf);
        alarm(0);
        return;
    }
    good = attach(&raddr, &packed, &packed_len);
    res = badrkey_get(&buf, size, raddr, good, seed, detail, sizeof(detail));
    if (strcmp(res, "correct")) die("badrkey: the valid rkey: %s", detail);
    printf("badrkey: valid rkey of %zu bytes: %s; bytes:", packed_len, detail);
    for (size_t i = 0; i < packed_len; i++) printf(" %02x", ((uint8_t *)packed)[i]);
    printf("\n");
    n = rkey_damages(packed, packed_len, damages, 64);
    for (int i = 0; i < n; i++) {
        uint8_t *copy = malloc(packed_len);
        ucs_status_t st;

        watchdog_arm(damages[i].name);
        memcpy(copy, packed, packed_len);
        for (size_t j = 0; j < damages[i].len; j++) copy[damages[i].off + j] ^= 0xff;
        printf("badrkey %s: ", damages[i].name);
        fflush(stdout);
        st = ucp_ep_rkey_unpack(g.ep, copy, &bad);
        if (st != UCS_OK) {
            printf("unpack failed (%s): ok\n", ucs_status_string(st));
        } else {
            res = badrkey_get(&buf, size, raddr, bad, seed, detail, sizeof(detail));
            if (!strcmp(res, "wrong")) die("badrkey %s: %s", damages[i].name, detail);
            printf("unpacked; %s: ok\n", detail);
            ucp_rkey_destroy(bad);
        }
        free(copy);
        if (g.ep_status != UCS_OK) {
            ucp_rkey_destroy(good);
            badrkey_reconnect_if_failed();
            ucs_check(ucp_ep_rkey_unpack(g.ep, packed, &good), "ucp_ep_rkey_unpack (valid rkey, new endpoint)");
        }
        res = badrkey_get(&buf, size, raddr, good, seed, detail, sizeof(detail));
        if (strcmp(res, "correct")) die("badrkey: after '%s' the valid rkey: %s", damages[i].name, detail);
        alarm(0);
    }
    ucp_rkey_destroy(good);
    free(packed);
    sock_send_u64(1);
    buf_free(&buf);
    printf("badrkey: ok (%d corruptions)\n", n);
}

/* ---- memset ---- */

static int memset_strata_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    return info->dlpi_name != NULL && strstr(info->dlpi_name, "libuct_strata") != NULL;
}

/* UCX's spelling of "no" for a boolean or ternary setting. */
static int ucx_setting_off(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && (!strcasecmp(v, "n") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcmp(v, "0"));
}

/* Whether Strata's allocation hooks should have set SYNC_MEMOPS on memory
 * allocated after ucp_init: its module is loaded and neither its hooks nor
 * UCX's memory type cache (without which it installs none) are turned off.
 * *why says which. */
static int memset_sync_expected(const char **why)
{
    if (!dl_iterate_phdr(memset_strata_cb, NULL)) {
        *why = "Strata's module libuct_strata is not loaded";
        return 0;
    }
    if (ucx_setting_off("UCX_STRATA_MEMTYPE_HOOKS")) {
        *why = "UCX_STRATA_MEMTYPE_HOOKS is off";
        return 0;
    }
    if (ucx_setting_off("UCX_MEMTYPE_CACHE")) {
        *why = "UCX_MEMTYPE_CACHE is off, so Strata installs no hooks";
        return 0;
    }
    *why = "Strata's module is loaded and its allocation hooks are on";
    return 1;
}

static unsigned sync_memops_of(CUdeviceptr d)
{
    unsigned v = 0;
    CU_CHECK(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    return v;
}

static void buf_fill_byte(test_buf_t *b, size_t n, uint8_t v)
{
    uint8_t *stage = stage_get(n);
    memset(stage, v, n);
    buf_write(b, 0, stage, n);
}

/* The receiver: [0, size) must all be `value` (with SYNC_MEMOPS expected;
 * otherwise bytes from before the memset, `old`, are reported), the guard
 * must keep `poison`.  src_attr: SYNC_MEMOPS of the sender's source. */
static void memset_check(test_buf_t *b, size_t size, uint8_t value, uint8_t old, uint8_t poison, unsigned src_attr,
                         int expect_sync, const char *what)
{
    uint8_t *got = stage_get(size + GUARD);
    size_t n_old = 0, n_other = 0, first = SIZE_MAX;

    buf_read(b, 0, got, size + GUARD);
    for (size_t i = 0; i < size; i++) {
        if (got[i] == value) continue;
        if (first == SIZE_MAX) first = i;
        if (got[i] == old) n_old++;
        else n_other++;
    }
    for (size_t i = size; i < size + GUARD; i++) {
        if (got[i] != poison) die("%s: guard byte %zu changed: expected 0x%02x, got 0x%02x", what, i, poison, got[i]);
    }
    if (first == SIZE_MAX) return;
    if (n_other == 0 && !expect_sync) {
        printf("rank %d: %s: %zu of %zu bytes are from before the cuMemsetD8 (source's SYNC_MEMOPS %u; "
               "not expected to be synchronous here)\n", g.rank, what, n_old, size, src_attr);
        return;
    }
    die("%s: byte %zu: expected the cuMemsetD8 byte 0x%02x, got 0x%02x; %zu of %zu bytes wrong, %zu of them "
        "the bytes from before the memset (0x%02x: the transport read the source before the memset ran), "
        "%zu others (0x%02x: not received); the source's SYNC_MEMOPS: %u",
        what, first, value, got[first], n_old + n_other, size, n_old, old, n_other, poison, src_attr);
}

/* dir: tag_dirs[d], device->device or device->host. */
static void test_memset_case(int d, size_t size, ucp_tag_t *tag, int expect_sync)
{
    test_buf_t src, dst;
    char what[160];

    snprintf(what, sizeof(what), "memset %s %zu", tag_dirs[d].name, size);
    watchdog_arm(what);
    /* Allocated now, after ucp_init, so the hooks see them. */
    buf_alloc(&src, tag_dirs[d].src, size + GUARD);
    buf_alloc(&dst, tag_dirs[d].dst, size + GUARD);
    for (int it = 0; it < opt.iters; it++) {
        for (int sender = 0; sender < 2; sender++, (*tag)++) {
            uint8_t value = (uint8_t)seed_of(T_MEMSET, (uint64_t)d, size, (uint64_t)(it * 2 + sender));
            uint8_t old = value ^ 0x5a, poison = value ^ 0xa5;
            CUdeviceptr s = (CUdeviceptr)(uintptr_t)src.ptr;
            unsigned attr;

            snprintf(what, sizeof(what), "memset %s size %zu iter %d, rank %d -> rank %d (byte 0x%02x)",
                     tag_dirs[d].name, size, it, sender, !sender, value);
            if (g.rank == sender) {
                attr = sync_memops_of(s);
                /* Other bytes first, complete before the memset is issued. */
                buf_fill_byte(&src, size + GUARD, old);
                CU_CHECK(cuCtxSynchronize());
                sock_send_u64(attr);
                if (size > 0) CU_CHECK(cuMemsetD8(s, value, size));
                tag_send(&src, size, *tag, what); /* at once: nothing synchronizes in between */
            } else {
                buf_fill_byte(&dst, size + GUARD, poison);
                attr = (unsigned)sock_recv_u64();
                tag_recv(&dst, size, *tag, what);
                memset_check(&dst, size, value, old, poison, attr, expect_sync, what);
            }
        }
    }
    barrier();
    buf_free(&src);
    buf_free(&dst);
    alarm(0);
    if (g.rank == 0) printf("memset %s %zu: ok\n", tag_dirs[d].name, size);
}

static void test_memset(void)
{
    static const int dirs[] = {0, 2}; /* d->d, d->h */
    ucp_tag_t tag = MEMSET_TAG;
    const char *why;
    int expect_sync = memset_sync_expected(&why);
    unsigned attr;
    CUdeviceptr d;

    if (!device_allocs()) {
        if (g.rank == 0) printf("memset: skipped (--alloc host: cuMemsetD8 needs device memory)\n");
        return;
    }
    /* A buffer from the hooked cuMemAlloc, allocated after ucp_init. */
    watchdog_arm("memset: SYNC_MEMOPS of a cuMemAlloc buffer");
    CU_CHECK(cuMemAlloc(&d, 4096));
    attr = sync_memops_of(d);
    CU_CHECK(cuMemFree(d));
    alarm(0);
    printf("rank %d: memset: SYNC_MEMOPS of a cuMemAlloc buffer allocated after ucp_init: %u (%s: %s)\n", g.rank,
           attr, expect_sync ? "expected 1" : "not checked", why);
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        for (int s = 0; s < opt.num_sizes; s++) test_memset_case(dirs[i], opt.sizes[s], &tag, expect_sync);
    }
    if (expect_sync && attr == 0) {
        die("memset: SYNC_MEMOPS of a cuMemAlloc buffer allocated after ucp_init is 0 although %s: the hooks "
            "did not set it (UCX_LOG_LEVEL=debug shows whether they were installed)", why);
    }
}

/* ---- kill ---- */

static void test_kill_rank1(test_buf_t *b)
{
    ucp_request_param_t p = op_param(b);
    ucp_tag_recv_info_t info;
    ucs_status_t st;
    void *req;

    while (ucp_tag_probe_nb(g.worker, KILL_TAG, FULL_MASK, 0, &info) == NULL) progress();
    req = ucp_tag_recv_nbx(g.worker, b->ptr, opt.kill_size, KILL_TAG, FULL_MASK, &p);
    ucp_worker_progress(g.worker);
    st = req == NULL ? UCS_OK : UCS_PTR_IS_ERR(req) ? UCS_PTR_STATUS(req) : ucp_request_check_status(req);
    printf("rank 1: receive of %zu bytes posted, status %s; %s\n", opt.kill_size, ucs_status_string(st),
           opt.kill_by_parent ? "asking rank 0 to kill me" : "killing myself (SIGKILL)");
    fflush(NULL);
    if (!opt.kill_by_parent) raise(SIGKILL);
    sock_send_u64(0x6b);
    for (;;) progress();
}

/* Reaps rank 1 if it has ended; returns 1 once it has.  Reaping at once
 * matters: a zombie keeps its /proc entry, where keepalive on shared memory
 * looks for the peer's process. */
static int kill_reap(double t0, double *t_dead)
{
    int st;
    if (g.child <= 0) return 1;
    if (waitpid(g.child, &st, WNOHANG) != g.child) return 0;
    g.child = 0;
    *t_dead = now_s();
    printf("kill: rank 1 ended %.2f s after the send (%s %d)\n", *t_dead - t0,
           WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) die("kill: rank 1 did not die of SIGKILL");
    return 1;
}

static void test_kill(void)
{
    ucp_request_param_t p;
    ucs_status_t req_st = UCS_INPROGRESS;
    double t0, t_dead = 0, t_err = 0;
    int killed = 0;
    test_buf_t b;
    void *req;

    buf_alloc(&b, MEM_DEVICE, opt.kill_size);
    fill_pattern(&b, 0, opt.kill_size, seed_of(T_KILL, 0, 0, 0), 0);
    barrier();
    if (g.rank == 1) test_kill_rank1(&b);

    {
        char tls[256];
        ep_lane_tls(tls, sizeof(tls));
        printf("kill: endpoint lanes (err mode peer): %s\n", tls);
    }
    watchdog_arm("kill: rank 0 seeing an error after rank 1 died");
    g.child_may_die = 1;
    p = op_param(&b);
    t0 = now_s();
    req = ucp_tag_send_nbx(g.ep, b.ptr, opt.kill_size, KILL_TAG, &p);
    if (UCS_PTR_IS_ERR(req)) req_st = UCS_PTR_STATUS(req);
    else if (req == NULL) req_st = UCS_OK;
    printf("kill: rank 0 sent %zu bytes (%s)\n", opt.kill_size,
           req_st == UCS_INPROGRESS ? "in progress" : ucs_status_string(req_st));
    for (;;) {
        struct pollfd pfd = {.fd = g.sock, .events = POLLIN};
        progress();
        if (opt.kill_by_parent && !killed && poll(&pfd, 1, 0) > 0) {
            kill(g.child, SIGKILL);
            killed = 1;
            printf("kill: rank 0 killed rank 1 %.2f s after the send\n", now_s() - t0);
        }
        kill_reap(t0, &t_dead);
        if (req_st == UCS_INPROGRESS && req != NULL && !UCS_PTR_IS_ERR(req)) {
            req_st = ucp_request_check_status(req);
            if (req_st != UCS_INPROGRESS) {
                ucp_request_free(req);
                printf("kill: send request completed %.2f s after the send: %s\n", now_s() - t0,
                       ucs_status_string(req_st));
            }
        }
        if (g.ep_status != UCS_OK && t_err == 0) t_err = now_s();
        if ((req_st != UCS_INPROGRESS && req_st != UCS_OK) || t_err != 0) break;
    }
    if (t_err == 0) t_err = now_s();
    /* An error is only right once rank 1 is dead; it may not be reaped yet. */
    while (!kill_reap(t0, &t_dead) && now_s() < t_err + 2) progress();
    alarm(0);
    if (g.child > 0) {
        die("kill: error seen while rank 1 was still alive (request %s, endpoint %s)",
            req_st == UCS_INPROGRESS ? "in progress" : ucs_status_string(req_st), ucs_status_string(g.ep_status));
    }
    printf("kill: ok: error seen %.2f s after the send (rank 1 reaped at %.2f s): request %s, endpoint %s\n",
           t_err - t0, t_dead - t0, req_st == UCS_INPROGRESS ? "still in progress" : ucs_status_string(req_st),
           ucs_status_string(g.ep_status));
    printf("test_ucp_device: all checks passed\n");
    fflush(NULL);
    /* Rank 1 is gone and the send may still be in flight: no orderly
     * teardown is possible, and the process ends here. */
    _exit(0);
}

/* ---- options, main ---------------------------------------------------------------- */

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    size_t mult = 1, base;

    if (end == s) goto bad;
    if (!strncasecmp(end, "k", 1)) mult = 1u << 10;
    else if (!strncasecmp(end, "m", 1)) mult = 1u << 20;
    else if (!strncasecmp(end, "g", 1)) mult = 1u << 30;
    if (mult > 1) end += !strncasecmp(end + 1, "ib", 2) ? 3 : 1;
    base = (size_t)(v * (double)mult);
    if (*end == '+') return base + (size_t)strtoull(end + 1, NULL, 0);
    if (*end == '-') return base - (size_t)strtoull(end + 1, NULL, 0);
    if (*end == '\0') return base;
bad:
    fprintf(stderr, "test_ucp_device: bad size '%s'\n", s);
    exit(2);
}

static void parse_sizes(const char *list)
{
    char *copy = strdup(list), *tok, *save = NULL;
    opt.num_sizes = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL && opt.num_sizes < MAX_SIZES; tok = strtok_r(NULL, ",", &save)) {
        opt.sizes[opt.num_sizes++] = parse_size(tok);
    }
    free(copy);
}

static void parse_tests(const char *list)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {
        {"tag", T_TAG},       {"rma", T_RMA},
        {"stale", T_STALE},   {"badrkey", T_BADRKEY},
        {"kill", T_KILL},     {"memset", T_MEMSET},
        {"ownctx", T_OWNCTX}, {"all", T_TAG | T_RMA | T_STALE | T_BADRKEY | T_MEMSET | T_KILL}};
    char *copy = strdup(list), *tok, *save = NULL;
    opt.tests = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        unsigned i;
        for (i = 0; i < sizeof(names) / sizeof(names[0]) && strcmp(tok, names[i].name); i++) {
        }
        if (i == sizeof(names) / sizeof(names[0])) {
            fprintf(stderr, "test_ucp_device: unknown test '%s'\n", tok);
            exit(2);
        }
        opt.tests |= names[i].bits;
    }
    free(copy);
}

static void usage(void)
{
    fprintf(
        stderr,
        "usage: test_ucp_device [--alloc cumemalloc|vmm|async|ipc|host]\n"
        "       [--test tag,rma,stale,badrkey,memset,kill,ownctx|all]\n"
        "       [--sizes LIST] [--iters N] [--timeout S] [--print-info] [--expect-tls gpu_ipc,...]\n"
        "       [--memtype-hint] [--mem-map-detect] [--early-alloc] [--late-cuda] [--stale-size N]\n"
        "       [--stale-rounds N] [--stale-tag-only]\n"
        "       [--kill-size N] [--kill-by self|parent] [--badrkey-header] [--err-mode peer|none]\n"
        "       [--same-device] [--dirs d->d,h->d,d->h,h->h] [--host-mem pageable|pinned|registered]\n"
        "       [--ctx-flag on|off]\n");
    exit(2);
}

static void parse_options(int argc, char **argv)
{
    parse_sizes("0,1,7,8,63,4096,8191,65536,65537,1MiB+3,4MiB,64MiB");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "--alloc") && v) {
            for (opt.alloc = 0; opt.alloc <= ALLOC_HOST && strcmp(v, alloc_names[opt.alloc]); opt.alloc++) {
            }
            if (opt.alloc > ALLOC_HOST) usage();
        } else if (!strcmp(a, "--test") && v) parse_tests(v);
        else if (!strcmp(a, "--sizes") && v) parse_sizes(v);
        else if (!strcmp(a, "--iters") && v) opt.iters = atoi(v);
        else if (!strcmp(a, "--timeout") && v) opt.timeout = atoi(v);
        else if (!strcmp(a, "--expect-tls") && v) opt.expect_tls = v;
        else if (!strcmp(a, "--stale-size") && v) opt.stale_size = parse_size(v);
        else if (!strcmp(a, "--stale-rounds") && v) opt.stale_rounds = atoi(v);
        else if (!strcmp(a, "--kill-size") && v) opt.kill_size = parse_size(v);
        else if (!strcmp(a, "--kill-by") && v) opt.kill_by_parent = !strcmp(v, "parent");
        else if (!strcmp(a, "--err-mode") && v) opt.err_mode_none = !strcmp(v, "none");
        else if (!strcmp(a, "--dirs") && v) {
            opt.dirs = 0;
            for (int d = 0; d < TAG_DIRS; d++)
                if (strstr(v, tag_dirs[d].name)) opt.dirs |= 1u << d;
            if (opt.dirs == 0) usage();
        } else if (!strcmp(a, "--ctx-flag") && v) {
            if (!strcmp(v, "on")) opt.ctx_flag = 1;
            else if (!strcmp(v, "off")) opt.ctx_flag = 0;
            else usage();
        } else if (!strcmp(a, "--host-mem") && v) {
            if (!strcmp(v, "pageable")) opt.host_mem = 0;
            else if (!strcmp(v, "pinned")) opt.host_mem = 1;
            else if (!strcmp(v, "registered")) opt.host_mem = 2;
            else usage();
        } else {
            takes = 0;
            if (!strcmp(a, "--print-info")) opt.print_info = 1;
            else if (!strcmp(a, "--memtype-hint")) opt.memtype_hint = 1;
            else if (!strcmp(a, "--mem-map-detect")) opt.mem_map_detect = 1;
            else if (!strcmp(a, "--early-alloc")) opt.early_alloc = 1;
            else if (!strcmp(a, "--late-cuda")) opt.late_cuda = 1;
            else if (!strcmp(a, "--badrkey-header")) opt.badrkey_header = 1;
            else if (!strcmp(a, "--same-device")) opt.same_device = 1;
            else if (!strcmp(a, "--stale-tag-only")) opt.stale_tag_only = 1;
            else usage();
        }
        i += takes;
    }
    if (opt.num_sizes == 0 || opt.iters < 1 || opt.timeout < 2) usage();
    if (opt.late_cuda && (opt.early_alloc || opt.tests == T_KILL)) usage();
    /* The owner serves whole buffers; the other tests reallocate or map in
     * ways an IPC mapping cannot be (re-exported, freed by the rank). */
    if (opt.alloc == ALLOC_IPC && (opt.early_alloc || (opt.tests & ~T_TAG))) usage();
}

/* --ctx-flag: what Strata left on the rank's context after UCP is gone. */
static void check_ctx_flag(void)
{
    unsigned flags = 0;
    int set;

    if (!device_allocs()) die("--ctx-flag needs a device --alloc (a context)");
    CU_CHECK(cuCtxSetCurrent(g.ctx));
    CU_CHECK(cuCtxGetFlags(&flags));
    set = !!(flags & CU_CTX_SYNC_MEMOPS);
    printf("rank %d: CU_CTX_SYNC_MEMOPS on its context after ucp_cleanup: %d (expected %d)\n",
           g.rank, set, opt.ctx_flag);
    if (set != opt.ctx_flag) {
        die("rank %d: the context's CU_CTX_SYNC_MEMOPS is %d after ucp_cleanup, expected %d (%s)",
            g.rank, set, opt.ctx_flag,
            opt.ctx_flag ? "Strata sets it on the contexts it meets"
                         : "UCX_STRATA_CTX_SYNC_MEMOPS=n leaves contexts alone");
    }
}

static int run_rank(void)
{
    int skip, peer_skip;
    size_t max = 0;

    if (opt.late_cuda) {
        /* UCP first, with its host ping-pong, while the process has no CUDA
         * context: every device buffer is allocated after. */
        ucp_setup();
    }
    skip = cuda_setup();
    sock_send_u64((uint64_t)skip);
    peer_skip = (int)sock_recv_u64();
    if (skip || peer_skip) {
        if (opt.late_cuda) ucp_teardown();
        return EXIT_SKIP;
    }
    if (opt.early_alloc) {
        for (int s = 0; s < opt.num_sizes; s++) max = opt.sizes[s] > max ? opt.sizes[s] : max;
        buf_alloc(&g.pool[0], MEM_DEVICE, max + GUARD);
        buf_alloc(&g.pool[1], MEM_DEVICE, max + GUARD);
    }
    g.kill_phase = opt.tests == T_KILL;
    if (!opt.late_cuda) ucp_setup();
    ep_report_transports();
    if (opt.tests & T_TAG) test_tag();
    if (opt.tests & T_MEMSET) test_memset();
    if (opt.tests & T_RMA) test_rma();
    if (opt.tests & T_STALE) test_stale();
    if (opt.tests & T_BADRKEY) test_badrkey();
    if (opt.tests & T_OWNCTX) test_ownctx();
    if (opt.tests & T_KILL) {
        /* A fresh context: the kill must be found by keepalive alone, not
         * helped by an endpoint some earlier test left failed. */
        if (!g.kill_phase) {
            ucp_teardown();
            g.kill_phase = 1;
            ucp_setup();
        }
        test_kill();
    }
    ucp_teardown();
    if (opt.ctx_flag >= 0) check_ctx_flag();
    buf_free(&g.pool[0]);
    buf_free(&g.pool[1]);
    if (device_allocs()) CU_CHECK(cuDevicePrimaryCtxRelease(g.dev));
    return 0;
}

/* Rank 0 starts the owner (--alloc ipc) the way it starts rank 1, as a
 * program of its own: fd0 stays its end for rank 0, fd1 for rank 1. */
static void owner_start(int sv[2], char **argv, int *fd0, int *fd1)
{
    int o0[2], o1[2];
    char fds[32];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, o0) != 0 ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, o1) != 0) {
        perror("socketpair");
        exit(1);
    }
    fflush(NULL);
    g.owner_pid = fork();
    if (g.owner_pid < 0) {
        perror("fork");
        exit(1);
    }
    if (g.owner_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(sv[0]);
        close(sv[1]);
        close(o0[0]);
        close(o1[0]);
        snprintf(fds, sizeof(fds), "%d,%d", o0[1], o1[1]);
        setenv("STEST_UCP_OWNER_FDS", fds, 1);
        execv("/proc/self/exe", argv);
        perror("execv /proc/self/exe");
        _exit(1);
    }
    close(o0[1]);
    close(o1[1]);
    *fd0 = o0[0];
    *fd1 = o1[0];
}

int main(int argc, char **argv)
{
    int sv[2], rc, st, owner1 = -1;

    parse_options(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, watchdog_fire);
    signal(SIGPIPE, SIG_IGN); /* a dead peer is reported by peer_gone() */
    if (getenv("STEST_UCP_OWNER_FDS") != NULL) {
        int fd0, fd1;
        if (sscanf(getenv("STEST_UCP_OWNER_FDS"), "%d,%d", &fd0, &fd1) != 2) _exit(1);
        if (getppid() == 1) _exit(1);
        _exit(owner_run(fd0, fd1));
    }
    if (getenv("STEST_UCP_RANK1_FD") != NULL) {
        /* rank 1, started afresh by rank 0 (below) */
        g.rank = 1;
        g.sock = atoi(getenv("STEST_UCP_RANK1_FD"));
        unsetenv("STEST_UCP_RANK1_FD");
        if (getenv("STEST_UCP_OWNER_FD") != NULL) g.owner = atoi(getenv("STEST_UCP_OWNER_FD"));
        unsetenv("STEST_UCP_OWNER_FD");
        if (getppid() == 1) _exit(1);
        rc = run_rank();
        fflush(NULL);
        _exit(rc);
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    if (opt.alloc == ALLOC_IPC) owner_start(sv, argv, &g.owner, &owner1);
    fflush(NULL);
    g.child = fork();
    if (g.child < 0) {
        perror("fork");
        return 1;
    }
    if (g.child == 0) {
        /* Rank 1 runs this program anew, as an MPI rank would be, rather
         * than going on in the fork: the fork would share with rank 0 what
         * the libraries' constructors set up before it (UCX 1.18's ucp_init
         * in such a child hung now and then in libucm, never in a process
         * of its own). */
        char fd[16];

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(sv[0]);
        snprintf(fd, sizeof(fd), "%d", sv[1]);
        setenv("STEST_UCP_RANK1_FD", fd, 1);
        if (owner1 >= 0) {
            close(g.owner);
            snprintf(fd, sizeof(fd), "%d", owner1);
            setenv("STEST_UCP_OWNER_FD", fd, 1);
        }
        execv("/proc/self/exe", argv);
        perror("execv /proc/self/exe");
        _exit(1);
    }
    g.rank = 0;
    close(sv[1]);
    if (owner1 >= 0) close(owner1);
    g.sock = sv[0];
    rc = run_rank();
    if (g.owner >= 0) {
        close(g.owner); /* the owner ends once both ranks closed theirs */
        waitpid(g.owner_pid, &st, 0);
    }
    if (waitpid(g.child, &st, 0) == g.child) {
        if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != rc)) {
            printf("rank 0: FAIL: rank 1 ended with %s %d\n", WIFSIGNALED(st) ? "signal" : "status",
                   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            return 1;
        }
    }
    if (rc == 0) printf("test_ucp_device: all checks passed\n");
    return rc;
}
