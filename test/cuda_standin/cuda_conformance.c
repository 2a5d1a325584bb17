/*
 * cuda_conformance: records what a CUDA driver answers where Strata depends
 * on it, so that the CUDA stand-in can be held to the real driver's answers.
 *
 *   LD_LIBRARY_PATH=<dir of libcuda.so.1> ./cuda_conformance [--out FILE]
 *   conformance/compare.sh conformance/driver-documented.txt FILE
 *
 * It opens "libcuda.so.1" with dlopen, as Strata does, and is linked to no
 * driver: on a GPU machine LD_LIBRARY_PATH (or the system's library path)
 * gives it the real driver, in CI <builddir>/test/cuda_standin/lib gives it
 * the stand-in.  Entry points are looked up by their versioned names
 * (cuda.h's renaming macros), then with cuGetProcAddress; one the driver
 * lacks makes the answers that need it `unsupported`.
 *
 * Output (stdout, or FILE): two comment lines naming the driver and device,
 * then one answer per line, `key value`, sorted by key.  Values are
 * normalized so that two drivers' answers compare: `error:CUDA_ERROR_NAME`
 * when a call fails, `unsupported` when the driver has no such entry point.
 * Exit status: 0 when the answers were written (whatever they are), 77 when
 * there is no driver or no device, 1 when the probe itself could not run.
 *
 * Memory kinds (each 2 MiB on device 0; cudart's allocations are these same
 * driver kinds: cudaMalloc is cumemalloc, cudaMallocAsync pool_default,
 * cudaMallocFromPoolAsync pool_custom, cudaMallocHost/cudaHostAlloc
 * pinned_host, cudaHostRegister registered_host, cudaMallocManaged managed):
 *   cumemalloc       cuMemAlloc
 *   vmm              cuMemCreate (POSIX fd handle type), cuMemAddressReserve
 *                    of twice the size, cuMemMap at the second half, cuMemSetAccess
 *   pool_default     cuMemAllocAsync on the legacy stream, then synchronized
 *   pool_custom      cuMemAllocFromPoolAsync from a cuMemPoolCreate pool (POSIX fd)
 *   ipc_opened       a peer process's cuMemAlloc, opened with cuIpcOpenMemHandle
 *   pinned_host      cuMemHostAlloc
 *   registered_host  malloc'ed (page-aligned), cuMemHostRegister
 *   pageable_host    malloc'ed
 *   managed          cuMemAllocManaged
 *
 * Per kind (pointer = base + 64):
 *   <kind>.setup                        ok, or the error of the allocation
 *   <kind>.attr.<name>                  cuPointerGetAttribute, one at a time
 *   <kind>.attrs.call, .attrs.<name>    cuPointerGetAttributes of all at once
 *      memory_type (host/device/array/unified/none), context (current/null/
 *      other), device_ordinal, buffer_id (zero/nonzero), range_start_addr
 *      (base/reservation/null/other), range_size (size/reservation/0/other:N),
 *      is_managed, is_legacy_cuda_ipc_capable, mempool_handle (null/default/
 *      custom/other), sync_memops, allowed_handle_types (none or
 *      posix_fd+win32+...), mapped
 *   <kind>.attr.buffer_id.distinct      yes/no: another allocation of the kind
 *   <kind>.attr.sync_memops.set         cuPointerSetAttribute(SYNC_MEMOPS, 1)
 *   <kind>.attr.sync_memops.after_set   SYNC_MEMOPS read back
 *   <kind>.ipc_get_mem_handle           ok or error (at the base)
 *   <kind>.address_range[.base|.size]   cuMemGetAddressRange
 *
 * Ordering, without timing races: the legacy default stream is blocked by
 * cuStreamWaitValue32(CU_STREAM_LEGACY, flag, 1, GEQ) on a flag in
 * cuMemHostAlloc'ed memory, and a helper thread releases it (notes that it
 * did, then writes 1) after 300 ms, or as soon as the probe has read what it
 * reads while blocked.  Nothing queued on the legacy stream can land before
 * the release, so:
 *   .returns   before_landing: the call returned while the legacy stream was
 *              still blocked (its effect cannot have landed yet);
 *              after_landing: it returned only after the release (it waited
 *              for the legacy stream)
 *   .read_nonblocking  old/new/mixed: the target read on a
 *              CU_STREAM_NON_BLOCKING stream (cuMemcpyDtoHAsync,
 *              cuStreamSynchronize), 20 ms after the call returned
 *   .read_peer  old/new/mixed: the same read by the peer process through IPC
 *              (cuMemcpyDtoH of the opened or of its own allocation)
 *              Either read says released:old/new/mixed when it began after
 *              the release (the call had waited for it): then it shows what
 *              the call left at its return, not the blocked state.
 *   .final      the target after the release and cuCtxSynchronize
 * Targets: cumemalloc, vmm, pool_default, ipc_opened.  Operations (4 bytes
 * unless named): memset (cuMemsetD8), htod_pageable, htod_pageable_1m
 * (1 MiB), htod_pinned, dtod (cuMemcpyDtoD), dtoh (cuMemcpyDtoH: .returns only).
 *   order.wait_value32                   ok or error: the block itself
 *   order.legacy_blocked.query           cuStreamQuery(CU_STREAM_LEGACY), blocked
 *   order.legacy_blocked.<kind>.<op>.*   plain
 *   order.ptr_sync_memops.<kind>.<op>.*  on the allocation whose SYNC_MEMOPS
 *                                        was set (whatever the set answered)
 *   order.ctx.*                          cuCtxGetFlags, cuCtxSetFlags (from
 *                                        cuGetProcAddress, 12.1) with CU_CTX_SYNC_MEMOPS
 *   order.ctx_sync_memops.<kind>.<op>.*  plain again, with the context flag
 *   order.async.<kind>.<stream>.*        cuMemcpyHtoDAsync from pinned memory
 *      on the legacy, per_thread, blocking (cuStreamCreate 0) or nonblocking
 *      stream: .returns, .read_nonblocking, .read_peer, .synchronize
 *      (cuStreamSynchronize of that stream: before or after the release),
 *      .read_after_synchronize, .final
 * A probe whose call waits for the blocked stream is bounded by the helper's
 * release; alarm() ends a hang with a message.
 *
 * The peer process is forked before cuInit (both processes initialize the
 * driver themselves) and answers requests over a socketpair.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CC_SIZE        ((size_t)2 << 20)  /* bytes of each allocation */
#define CC_LARGE       ((size_t)1 << 20)  /* the large pageable copy */
#define CC_SMALL       4                  /* every other operation */
#define CC_OFFSET      64                 /* attributes are asked at base + this */
#define CC_ALLOCS      3                  /* per kind: probed, distinct, order target */
#define CC_RELEASE_MS  300                /* the helper releases the stream after this */
#define CC_SETTLE_MS   20                 /* wait before reading while blocked */
#define CC_DEADLINE_S  150                /* the whole run */
#define CC_UNSUPPORTED ((CUresult)100000) /* the driver has no such entry point */

#define CC_STR2(_x) #_x
#define CC_STR(_x)  CC_STR2(_x)

/* --- The driver's entry points, found at run time --- */

/* clang-format off */
#define CC_APIS(_x) \
    _x(cuInit) _x(cuDriverGetVersion) _x(cuGetErrorName) _x(cuGetProcAddress) \
    _x(cuDeviceGetCount) _x(cuDeviceGet) _x(cuDeviceGetName) \
    _x(cuDevicePrimaryCtxRetain) _x(cuCtxSetCurrent) _x(cuCtxSynchronize) _x(cuCtxGetFlags) \
    _x(cuMemAlloc) _x(cuMemAllocManaged) _x(cuMemHostAlloc) _x(cuMemHostRegister) \
    _x(cuMemHostGetDevicePointer) _x(cuMemAllocAsync) _x(cuMemAllocFromPoolAsync) \
    _x(cuDeviceGetDefaultMemPool) _x(cuMemPoolCreate) \
    _x(cuMemGetAllocationGranularity) _x(cuMemCreate) _x(cuMemAddressReserve) _x(cuMemMap) \
    _x(cuMemSetAccess) \
    _x(cuPointerGetAttribute) _x(cuPointerGetAttributes) _x(cuPointerSetAttribute) \
    _x(cuMemGetAddressRange) _x(cuIpcGetMemHandle) _x(cuIpcOpenMemHandle) \
    _x(cuMemcpyHtoD) _x(cuMemcpyDtoH) _x(cuMemcpyDtoD) _x(cuMemsetD8) \
    _x(cuMemcpyHtoDAsync) _x(cuMemcpyDtoHAsync) \
    _x(cuStreamCreate) _x(cuStreamSynchronize) _x(cuStreamQuery) _x(cuStreamWaitValue32)
/* clang-format on */

/* Members are named after the exported symbols (cuMemAlloc is cuMemAlloc_v2
 * here too), so that cc_api.cuMemAlloc reads as the call it is. */
#define CC_API_MEMBER(_name) __typeof__(_name) *_name;
static struct {
    CC_APIS(CC_API_MEMBER)
    CUresult (*cuCtxSetFlags)(unsigned int flags); /* cuGetProcAddress, CUDA 12.1 */
} cc_api;

/* A driver call, or CC_UNSUPPORTED where the driver lacks the entry point. */
#define CC(_name, ...) ((cc_api._name != NULL) ? cc_api._name(__VA_ARGS__) : CC_UNSUPPORTED)

static void *cc_driver;

static void *cc_resolve(const char *symbol, const char *plain)
{
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn                             = dlsym(cc_driver, symbol);

    if ((fn == NULL) && (cc_api.cuGetProcAddress != NULL) &&
        ((cc_api.cuGetProcAddress(plain, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
          CUDA_SUCCESS) ||
         (found != CU_GET_PROC_ADDRESS_SUCCESS))) {
        fn = NULL;
    }
    return fn;
}

#define CC_API_RESOLVE(_name) \
    cc_api._name = (__typeof__(cc_api._name))cc_resolve(CC_STR(_name), #_name);

/* 0: no driver library */
static int cc_open_driver(void)
{
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn                             = NULL;

    cc_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (cc_driver == NULL) {
        fprintf(stderr, "cuda_conformance: dlopen(libcuda.so.1): %s\n", dlerror());
        return 0;
    }
    cc_api.cuGetProcAddress = (__typeof__(cc_api.cuGetProcAddress))dlsym(cc_driver,
                                                                         CC_STR(cuGetProcAddress));
    CC_APIS(CC_API_RESOLVE)
    if ((cc_api.cuGetProcAddress != NULL) &&
        (cc_api.cuGetProcAddress("cuCtxSetFlags", &fn, 12010, CU_GET_PROC_ADDRESS_DEFAULT,
                                 &found) == CUDA_SUCCESS) &&
        (found == CU_GET_PROC_ADDRESS_SUCCESS)) {
        cc_api.cuCtxSetFlags = (CUresult(*)(unsigned int))fn;
    }
    return 1;
}

/* --- Messages, answers --- */

static const char *volatile cc_phase = "start";
static char cc_phase_buf[192];

/* What the program is doing, for the messages of a failure or a hang. */
static void cc_set_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void cc_set_phase(const char *fmt, ...)
{
    va_list ap;

    cc_phase = "(between probes)";
    va_start(ap, fmt);
    vsnprintf(cc_phase_buf, sizeof(cc_phase_buf), fmt, ap);
    va_end(ap);
    cc_phase = cc_phase_buf;
}

static void cc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void cc_fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "cuda_conformance [pid %d] %s: ", (int)getpid(), cc_phase);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void cc_deadline_expired(int sig)
{
    static const char msg[] = "cuda_conformance: deadline expired (a hang?) in: ";
    const char *phase       = cc_phase;

    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    (void)!write(2, phase, strlen(phase));
    (void)!write(2, "\n", 1);
    _exit(1);
}

static void cc_deadline_set(unsigned seconds)
{
    signal(SIGALRM, cc_deadline_expired);
    alarm(seconds);
}

static const char *cc_result(CUresult res)
{
    static char buf[8][96];
    static unsigned next;
    const char *name = NULL;
    char *out        = buf[next++ % 8];

    if (res == CUDA_SUCCESS) {
        return "ok";
    } else if (res == CC_UNSUPPORTED) {
        return "unsupported";
    }
    if ((cc_api.cuGetErrorName == NULL) || (cc_api.cuGetErrorName(res, &name) != CUDA_SUCCESS) ||
        (name == NULL)) {
        snprintf(out, sizeof(buf[0]), "error:CUresult_%d", (int)res);
    } else {
        snprintf(out, sizeof(buf[0]), "error:%s", name);
    }
    return out;
}

static char **cc_lines;
static size_t cc_nlines, cc_cap;

static void cc_put(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cc_put(const char *key, const char *fmt, ...)
{
    char value[256], *line;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    if (cc_nlines == cc_cap) {
        cc_cap   = (cc_cap == 0) ? 256 : (2 * cc_cap);
        cc_lines = realloc(cc_lines, cc_cap * sizeof(*cc_lines));
        if (cc_lines == NULL) {
            cc_fail("out of memory");
        }
    }
    if (asprintf(&line, "%s %s", key, value) < 0) {
        cc_fail("out of memory");
    }
    cc_lines[cc_nlines++] = line;
}

static void cc_put_result(const char *key, CUresult res)
{
    cc_put(key, "%s", cc_result(res));
}

/* The key `<a>.<b>[.<c>]`, in a rotating buffer. */
static const char *cc_key(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static const char *cc_key(const char *fmt, ...)
{
    static char buf[8][192];
    static unsigned next;
    char *out = buf[next++ % 8];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, sizeof(buf[0]), fmt, ap);
    va_end(ap);
    return out;
}

static int cc_line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void cc_sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
    }
}

/* --- The peer process --- */

enum {
    CC_PEER_INIT,        /* initialize, allocate CC_ALLOCS buffers: handles back */
    CC_PEER_OPEN,        /* open `handle` into slot `index` */
    CC_PEER_READ_OPENED, /* read slot `index` at 0 and `offset` */
    CC_PEER_READ_OWN,    /* read its own buffer `index` at 0 and `offset` */
    CC_PEER_QUIT
};

typedef struct cc_msg {
    int cmd;
    int index;
    size_t offset;
    CUipcMemHandle handle;
} cc_msg_t;

typedef struct cc_reply {
    CUresult status;
    char what[64]; /* the call that failed */
    unsigned char bytes[2 * CC_SMALL];
    CUipcMemHandle handles[CC_ALLOCS];
} cc_reply_t;

static int cc_peer_sock  = -1;
static pid_t cc_peer_pid = -1;

static void cc_peer_reply(int sock, const cc_reply_t *reply)
{
    if (send(sock, reply, sizeof(*reply), 0) != (ssize_t)sizeof(*reply)) {
        _exit(1);
    }
}

#define CC_PEER_TRY(_reply, _name, ...) \
    if (((_reply)->status == CUDA_SUCCESS) && \
        (((_reply)->status = CC(_name, __VA_ARGS__)) != CUDA_SUCCESS)) { \
        snprintf((_reply)->what, sizeof((_reply)->what), "%s", #_name); \
    }

/* Reads CC_SMALL bytes at ptr and at ptr + offset. */
static void cc_peer_read(CUdeviceptr ptr, size_t offset, cc_reply_t *reply)
{
    CC_PEER_TRY(reply, cuMemcpyDtoH, reply->bytes, ptr, CC_SMALL);
    CC_PEER_TRY(reply, cuMemcpyDtoH, reply->bytes + CC_SMALL, ptr + offset, CC_SMALL);
}

static void cc_peer_main(int sock)
{
    CUdeviceptr own[CC_ALLOCS] = {0}, opened[CC_ALLOCS] = {0};
    cc_reply_t reply;
    CUcontext ctx;
    CUdevice dev;
    cc_msg_t msg;
    int i;

    cc_phase = "peer";
    cc_deadline_set(CC_DEADLINE_S);
    for (;;) {
        if (recv(sock, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) {
            _exit(0); /* the owner is gone */
        }
        memset(&reply, 0, sizeof(reply));
        switch (msg.cmd) {
        case CC_PEER_INIT:
            if (!cc_open_driver()) {
                reply.status = CC_UNSUPPORTED;
                snprintf(reply.what, sizeof(reply.what), "dlopen(libcuda.so.1)");
                break;
            }
            CC_PEER_TRY(&reply, cuInit, 0);
            CC_PEER_TRY(&reply, cuDeviceGet, &dev, 0);
            CC_PEER_TRY(&reply, cuDevicePrimaryCtxRetain, &ctx, dev);
            CC_PEER_TRY(&reply, cuCtxSetCurrent, ctx);
            for (i = 0; i < CC_ALLOCS; ++i) {
                CC_PEER_TRY(&reply, cuMemAlloc, &own[i], CC_SIZE);
                CC_PEER_TRY(&reply, cuMemsetD8, own[i], 0, CC_SIZE);
                CC_PEER_TRY(&reply, cuIpcGetMemHandle, &reply.handles[i], own[i]);
            }
            CC_PEER_TRY(&reply, cuCtxSynchronize);
            break;
        case CC_PEER_OPEN:
            CC_PEER_TRY(&reply, cuIpcOpenMemHandle, &opened[msg.index], msg.handle,
                        CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
            break;
        case CC_PEER_READ_OPENED:
            cc_peer_read(opened[msg.index], msg.offset, &reply);
            break;
        case CC_PEER_READ_OWN:
            cc_peer_read(own[msg.index], msg.offset, &reply);
            break;
        default:
            cc_peer_reply(sock, &reply);
            _exit(0);
        }
        cc_peer_reply(sock, &reply);
    }
}

static void cc_peer_call(int cmd, int index, size_t offset, const CUipcMemHandle *handle,
                         cc_reply_t *reply)
{
    cc_msg_t msg = {cmd, index, offset, {{0}}};

    if (handle != NULL) {
        msg.handle = *handle;
    }
    if ((send(cc_peer_sock, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) ||
        (recv(cc_peer_sock, reply, sizeof(*reply), 0) != (ssize_t)sizeof(*reply))) {
        cc_fail("the peer process stopped answering (request %d)", cmd);
    }
}

static void cc_peer_start(void)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
        cc_fail("socketpair: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    cc_peer_pid = fork();
    if (cc_peer_pid < 0) {
        cc_fail("fork: %s", strerror(errno));
    } else if (cc_peer_pid == 0) {
        close(sv[0]);
        cc_peer_main(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    cc_peer_sock = sv[0];
}

static void cc_peer_stop(void)
{
    cc_reply_t reply;
    int status;

    if (cc_peer_pid <= 0) {
        return;
    }
    cc_peer_call(CC_PEER_QUIT, 0, 0, NULL, &reply);
    close(cc_peer_sock);
    waitpid(cc_peer_pid, &status, 0);
    cc_peer_pid = -1;
}

/* --- Memory kinds --- */

typedef enum cc_kind_id {
    CC_CUMEMALLOC,
    CC_VMM,
    CC_POOL_DEFAULT,
    CC_POOL_CUSTOM,
    CC_IPC_OPENED,
    CC_PINNED_HOST,
    CC_REGISTERED_HOST,
    CC_PAGEABLE_HOST,
    CC_MANAGED,
    CC_NKINDS
} cc_kind_id_t;

typedef struct cc_kind {
    const char *name;
    int ok; /* allocated */
    size_t size;
    CUdeviceptr base[CC_ALLOCS];
    CUdeviceptr resv[CC_ALLOCS]; /* vmm: the reservation the mapping sits in */
    size_t resv_size;
} cc_kind_t;

static cc_kind_t cc_kinds[CC_NKINDS] = {{"cumemalloc"},      {"vmm"},           {"pool_default"},
                                        {"pool_custom"},     {"ipc_opened"},    {"pinned_host"},
                                        {"registered_host"}, {"pageable_host"}, {"managed"}};

static CUcontext cc_ctx;
static CUdevice cc_dev;
static CUmemoryPool cc_pool_default, cc_pool_custom;
static CUipcMemHandle cc_peer_handles[CC_ALLOCS];

static CUresult cc_alloc_vmm(cc_kind_t *k, int i)
{
    CUmemAllocationProp prop = {0};
    CUmemGenericAllocationHandle handle;
    CUmemAccessDesc access = {{0}};
    size_t gran            = 0;
    CUresult res;

    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = (int)cc_dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    res = CC(cuMemGetAllocationGranularity, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    k->size      = ((CC_SIZE + gran - 1) / gran) * gran;
    k->resv_size = 2 * k->size;
    res          = CC(cuMemCreate, &handle, k->size, &prop, 0);
    if (res == CUDA_SUCCESS) {
        res = CC(cuMemAddressReserve, &k->resv[i], k->resv_size, 0, 0, 0);
    }
    if (res == CUDA_SUCCESS) {
        k->base[i] = k->resv[i] + k->size;
        res        = CC(cuMemMap, k->base[i], k->size, 0, handle, 0);
    }
    if (res == CUDA_SUCCESS) {
        access.location = prop.location;
        access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        res             = CC(cuMemSetAccess, k->base[i], k->size, &access, 1);
    }
    return res;
}

static CUresult cc_alloc_one(cc_kind_id_t id, int i)
{
    cc_kind_t *k = &cc_kinds[id];
    CUmemPoolProps props;
    cc_reply_t reply;
    CUresult res;
    void *host;

    k->size = CC_SIZE;
    switch (id) {
    case CC_CUMEMALLOC:
        return CC(cuMemAlloc, &k->base[i], k->size);
    case CC_VMM:
        return cc_alloc_vmm(k, i);
    case CC_POOL_DEFAULT:
        res = CC(cuDeviceGetDefaultMemPool, &cc_pool_default, cc_dev);
        if (res == CUDA_SUCCESS) {
            res = CC(cuMemAllocAsync, &k->base[i], k->size, CU_STREAM_LEGACY);
        }
        return (res == CUDA_SUCCESS) ? CC(cuStreamSynchronize, CU_STREAM_LEGACY) : res;
    case CC_POOL_CUSTOM:
        res = CUDA_SUCCESS;
        if (cc_pool_custom == NULL) {
            memset(&props, 0, sizeof(props));
            props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
            props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id   = (int)cc_dev;
            res                 = CC(cuMemPoolCreate, &cc_pool_custom, &props);
        }
        if (res == CUDA_SUCCESS) {
            res = CC(cuMemAllocFromPoolAsync, &k->base[i], k->size, cc_pool_custom,
                     CU_STREAM_LEGACY);
        }
        return (res == CUDA_SUCCESS) ? CC(cuStreamSynchronize, CU_STREAM_LEGACY) : res;
    case CC_IPC_OPENED:
        if (i == 0) {
            cc_peer_call(CC_PEER_INIT, 0, 0, NULL, &reply);
            if (reply.status != CUDA_SUCCESS) {
                fprintf(stderr, "cuda_conformance: peer: %s: %s\n", reply.what,
                        cc_result(reply.status));
                return reply.status;
            }
            memcpy(cc_peer_handles, reply.handles, sizeof(cc_peer_handles));
        }
        return CC(cuIpcOpenMemHandle, &k->base[i], cc_peer_handles[i],
                  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    case CC_PINNED_HOST:
        res        = CC(cuMemHostAlloc, &host, k->size, 0);
        k->base[i] = (res == CUDA_SUCCESS) ? (CUdeviceptr)(uintptr_t)host : 0;
        return res;
    case CC_REGISTERED_HOST:
    case CC_PAGEABLE_HOST:
        if (posix_memalign(&host, 4096, k->size) != 0) {
            cc_fail("posix_memalign: out of memory");
        }
        memset(host, 0, k->size);
        k->base[i] = (CUdeviceptr)(uintptr_t)host;
        return (id == CC_REGISTERED_HOST) ? CC(cuMemHostRegister, host, k->size, 0) : CUDA_SUCCESS;
    case CC_MANAGED:
        return CC(cuMemAllocManaged, &k->base[i], k->size, CU_MEM_ATTACH_GLOBAL);
    default:
        cc_fail("kind %d", (int)id);
    }
}

static void cc_alloc_kinds(void)
{
    CUresult res = CUDA_SUCCESS;
    int id, i;

    cc_phase = "allocation";
    for (id = 0; id < CC_NKINDS; ++id) {
        for (i = 0; (i < CC_ALLOCS) && (res == CUDA_SUCCESS); ++i) {
            res = cc_alloc_one((cc_kind_id_t)id, i);
        }
        cc_put_result(cc_key("%s.setup", cc_kinds[id].name), res);
        cc_kinds[id].ok = (res == CUDA_SUCCESS);
        res             = CUDA_SUCCESS;
    }
    cc_put_result("ctx.synchronize_after_setup", CC(cuCtxSynchronize));
}

/* --- Pointer attributes --- */

typedef enum cc_norm {
    CC_NORM_UINT,
    CC_NORM_MEMTYPE,
    CC_NORM_CONTEXT,
    CC_NORM_ORDINAL,
    CC_NORM_BUFFER_ID,
    CC_NORM_RANGE_START,
    CC_NORM_RANGE_SIZE,
    CC_NORM_POOL,
    CC_NORM_HANDLE_TYPES
} cc_norm_t;

static const struct {
    CUpointer_attribute attr;
    const char *name;
    cc_norm_t norm;
} cc_attrs[] = {
    {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "memory_type", CC_NORM_MEMTYPE},
    {CU_POINTER_ATTRIBUTE_CONTEXT, "context", CC_NORM_CONTEXT},
    {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "device_ordinal", CC_NORM_ORDINAL},
    {CU_POINTER_ATTRIBUTE_BUFFER_ID, "buffer_id", CC_NORM_BUFFER_ID},
    {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "range_start_addr", CC_NORM_RANGE_START},
    {CU_POINTER_ATTRIBUTE_RANGE_SIZE, "range_size", CC_NORM_RANGE_SIZE},
    {CU_POINTER_ATTRIBUTE_IS_MANAGED, "is_managed", CC_NORM_UINT},
    {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, "is_legacy_cuda_ipc_capable", CC_NORM_UINT},
    {CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, "mempool_handle", CC_NORM_POOL},
    {CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, "sync_memops", CC_NORM_UINT},
    {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, "allowed_handle_types", CC_NORM_HANDLE_TYPES},
    {CU_POINTER_ATTRIBUTE_MAPPED, "mapped", CC_NORM_UINT},
};

#define CC_NATTRS (sizeof(cc_attrs) / sizeof(cc_attrs[0]))

/* Room for any attribute's value (the largest is 8 bytes). */
typedef union cc_value {
    unsigned int u;
    unsigned long long u64;
    void *p;
    unsigned char raw[16];
} cc_value_t;

static const char *cc_normalize(const cc_kind_t *k, int i, cc_norm_t norm, const cc_value_t *v)
{
    static char buf[8][64];
    static unsigned next;
    char *out = buf[next++ % 8];
    unsigned bit;
    size_t len;

    switch (norm) {
    case CC_NORM_MEMTYPE:
        switch (v->u) {
        case 0:
            return "none";
        case CU_MEMORYTYPE_HOST:
            return "host";
        case CU_MEMORYTYPE_DEVICE:
            return "device";
        case CU_MEMORYTYPE_ARRAY:
            return "array";
        case CU_MEMORYTYPE_UNIFIED:
            return "unified";
        default:
            break;
        }
        break;
    case CC_NORM_CONTEXT:
        return (v->p == NULL) ? "null" : (v->p == (void *)cc_ctx) ? "current" : "other";
    case CC_NORM_ORDINAL:
        if ((int)v->u == CU_DEVICE_INVALID) {
            return "invalid";
        }
        snprintf(out, sizeof(buf[0]), "%d", (int)v->u);
        return out;
    case CC_NORM_BUFFER_ID:
        return (v->u64 != 0) ? "nonzero" : "zero";
    case CC_NORM_RANGE_START:
        if (v->u64 == 0) {
            return "null";
        } else if (v->u64 == k->base[i]) {
            return "base";
        } else if ((k->resv[i] != 0) && (v->u64 == k->resv[i])) {
            return "reservation";
        }
        return "other";
    case CC_NORM_RANGE_SIZE:
        if (v->u64 == 0) {
            return "0";
        } else if (v->u64 == k->size) {
            return "size";
        } else if ((k->resv_size != 0) && (v->u64 == k->resv_size)) {
            return "reservation";
        }
        snprintf(out, sizeof(buf[0]), "other:%llu", v->u64);
        return out;
    case CC_NORM_POOL:
        if (v->p == NULL) {
            return "null";
        } else if (v->p == (void *)cc_pool_default) {
            return "default";
        } else if (v->p == (void *)cc_pool_custom) {
            return "custom";
        }
        return "other";
    case CC_NORM_HANDLE_TYPES:
        if (v->u == 0) {
            return "none";
        }
        out[0] = '\0';
        for (bit = 1; bit != 0; bit <<= 1) {
            if (!(v->u & bit)) {
                continue;
            }
            len = strlen(out);
            snprintf(out + len, sizeof(buf[0]) - len, "%s%s", (len > 0) ? "+" : "",
                     (bit == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ? "posix_fd"
                     : (bit == CU_MEM_HANDLE_TYPE_WIN32)               ? "win32"
                     : (bit == CU_MEM_HANDLE_TYPE_WIN32_KMT)           ? "win32_kmt"
                     : (bit == CU_MEM_HANDLE_TYPE_FABRIC)              ? "fabric"
                                                                       : "unknown");
        }
        return out;
    case CC_NORM_UINT:
        break;
    }
    snprintf(out, sizeof(buf[0]), "%u", v->u);
    return out;
}

static CUresult cc_get_attr(CUpointer_attribute attr, CUdeviceptr ptr, cc_value_t *v)
{
    memset(v, 0, sizeof(*v));
    return CC(cuPointerGetAttribute, v, attr, ptr);
}

static void cc_probe_attributes(cc_kind_id_t id)
{
    const cc_kind_t *k    = &cc_kinds[id];
    const CUdeviceptr ptr = k->base[0] + CC_OFFSET;
    CUpointer_attribute attrs[CC_NATTRS];
    cc_value_t values[CC_NATTRS], v0, v1;
    void *data[CC_NATTRS];
    unsigned int one = 1;
    CUresult res, res1;
    size_t a;

    for (a = 0; a < CC_NATTRS; ++a) {
        res = cc_get_attr(cc_attrs[a].attr, ptr, &v0);
        cc_put(cc_key("%s.attr.%s", k->name, cc_attrs[a].name), "%s",
               (res == CUDA_SUCCESS) ? cc_normalize(k, 0, cc_attrs[a].norm, &v0) : cc_result(res));
    }
    res  = cc_get_attr(CU_POINTER_ATTRIBUTE_BUFFER_ID, k->base[0], &v0);
    res1 = cc_get_attr(CU_POINTER_ATTRIBUTE_BUFFER_ID, k->base[1], &v1);
    cc_put(cc_key("%s.attr.buffer_id.distinct", k->name), "%s",
           (res != CUDA_SUCCESS)    ? cc_result(res)
           : (res1 != CUDA_SUCCESS) ? cc_result(res1)
           : (v0.u64 != v1.u64)     ? "yes"
                                    : "no");

    /* All at once: may fail as a whole where one attribute alone fails. */
    memset(values, 0, sizeof(values));
    for (a = 0; a < CC_NATTRS; ++a) {
        attrs[a] = cc_attrs[a].attr;
        data[a]  = &values[a];
    }
    res = CC(cuPointerGetAttributes, (unsigned)CC_NATTRS, attrs, data, ptr);
    cc_put_result(cc_key("%s.attrs.call", k->name), res);
    if (res == CUDA_SUCCESS) {
        for (a = 0; a < CC_NATTRS; ++a) {
            cc_put(cc_key("%s.attrs.%s", k->name, cc_attrs[a].name), "%s",
                   cc_normalize(k, 0, cc_attrs[a].norm, &values[a]));
        }
    }

    /* SYNC_MEMOPS on the probed allocation (order.ptr_sync_memops uses it). */
    cc_put_result(cc_key("%s.attr.sync_memops.set", k->name),
                  CC(cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, k->base[0]));
    res = cc_get_attr(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr, &v0);
    cc_put(cc_key("%s.attr.sync_memops.after_set", k->name), "%s",
           (res == CUDA_SUCCESS) ? cc_normalize(k, 0, CC_NORM_UINT, &v0) : cc_result(res));
}

static void cc_probe_ipc_and_range(cc_kind_id_t id)
{
    const cc_kind_t *k = &cc_kinds[id];
    CUipcMemHandle handle;
    CUdeviceptr base = 0;
    cc_value_t v;
    size_t size = 0;
    CUresult res;

    cc_put_result(cc_key("%s.ipc_get_mem_handle", k->name),
                  CC(cuIpcGetMemHandle, &handle, k->base[0]));
    res = CC(cuMemGetAddressRange, &base, &size, k->base[0] + CC_OFFSET);
    cc_put_result(cc_key("%s.address_range", k->name), res);
    if (res == CUDA_SUCCESS) {
        memset(&v, 0, sizeof(v));
        v.u64 = base;
        cc_put(cc_key("%s.address_range.base", k->name), "%s",
               cc_normalize(k, 0, CC_NORM_RANGE_START, &v));
        v.u64 = size;
        cc_put(cc_key("%s.address_range.size", k->name), "%s",
               cc_normalize(k, 0, CC_NORM_RANGE_SIZE, &v));
    }
}

/* --- Ordering --- */

/* The helper thread that releases the blocked legacy stream. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int armed, release_now, done, quit;
    volatile uint32_t *flag; /* cuMemHostAlloc'ed */
    CUdeviceptr flag_dev;    /* its address for the device */
    int released;            /* set just before the flag is written */
} cc_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static pthread_t cc_gate_thread;
static int cc_gate_started;

static void *cc_gate_main(void *arg)
{
    struct timespec deadline;

    (void)arg;
    pthread_mutex_lock(&cc_gate.lock);
    for (;;) {
        while (!cc_gate.armed && !cc_gate.quit) {
            pthread_cond_wait(&cc_gate.cond, &cc_gate.lock);
        }
        if (cc_gate.quit) {
            break;
        }
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += (long)CC_RELEASE_MS * 1000000L;
        deadline.tv_sec += deadline.tv_nsec / 1000000000L;
        deadline.tv_nsec %= 1000000000L;
        while (!cc_gate.release_now &&
               (pthread_cond_timedwait(&cc_gate.cond, &cc_gate.lock, &deadline) != ETIMEDOUT)) {
        }
        __atomic_store_n(&cc_gate.released, 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(cc_gate.flag, 1, __ATOMIC_SEQ_CST);
        cc_gate.armed = 0;
        cc_gate.done  = 1;
        pthread_cond_broadcast(&cc_gate.cond);
    }
    pthread_mutex_unlock(&cc_gate.lock);
    return NULL;
}

/* Blocks the legacy stream until the helper releases it. */
static CUresult cc_block(void)
{
    CUresult res;

    __atomic_store_n(cc_gate.flag, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&cc_gate.released, 0, __ATOMIC_SEQ_CST);
    res = CC(cuStreamWaitValue32, CU_STREAM_LEGACY, cc_gate.flag_dev, 1, CU_STREAM_WAIT_VALUE_GEQ);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    pthread_mutex_lock(&cc_gate.lock);
    cc_gate.release_now = 0;
    cc_gate.done        = 0;
    cc_gate.armed       = 1;
    pthread_cond_broadcast(&cc_gate.cond);
    pthread_mutex_unlock(&cc_gate.lock);
    return CUDA_SUCCESS;
}

static int cc_released(void)
{
    return __atomic_load_n(&cc_gate.released, __ATOMIC_SEQ_CST);
}

/* Releases now (if the helper has not yet) and waits for the device. */
static CUresult cc_unblock(void)
{
    pthread_mutex_lock(&cc_gate.lock);
    cc_gate.release_now = 1;
    pthread_cond_broadcast(&cc_gate.cond);
    while (!cc_gate.done) {
        pthread_cond_wait(&cc_gate.cond, &cc_gate.lock);
    }
    pthread_mutex_unlock(&cc_gate.lock);
    return CC(cuCtxSynchronize);
}

typedef enum cc_op {
    CC_OP_MEMSET,
    CC_OP_HTOD_PAGEABLE,
    CC_OP_HTOD_PAGEABLE_1M,
    CC_OP_HTOD_PINNED,
    CC_OP_DTOD,
    CC_OP_DTOH,
    CC_NOPS
} cc_op_t;

static const char *const cc_op_names[CC_NOPS] = {"memset",      "htod_pageable", "htod_pageable_1m",
                                                 "htod_pinned", "dtod",          "dtoh"};

/* What the order probes use besides their targets. */
static struct {
    unsigned char *pageable; /* malloc'ed, CC_LARGE */
    unsigned char *pinned;   /* cuMemHostAlloc'ed, CC_LARGE */
    unsigned char *rd;       /* cuMemHostAlloc'ed: reads land here */
    CUdeviceptr src;         /* cuMemAlloc'ed, CC_LARGE: dtod's source */
    CUstream nb_read;        /* non-blocking: reads while blocked */
    CUstream nb_copy;        /* non-blocking: order.async */
    CUstream blocking;       /* cuStreamCreate(0): order.async */
    unsigned values;         /* the old/new byte pairs handed out */
    int peer_opened[CC_ALLOCS];
} cc_ord;

/* One order probe's target: an allocation of a kind, and how the peer sees it. */
typedef struct cc_target {
    const char *kind;
    CUdeviceptr ptr;
    int peer; /* 0: none; 1: the peer opened ours (slot); 2: the peer's own (index) */
    int peer_index;
} cc_target_t;

/* old, new or mixed; "released:" before it when the read began after the
 * release (the operation had waited for it): no longer a read of the
 * blocked state, only of what the operation left at its return. */
static const char *cc_classify(const unsigned char *bytes, unsigned char old_v, unsigned char new_v,
                               int late)
{
    int olds = 0, news = 0, i;

    for (i = 0; i < 2 * CC_SMALL; ++i) {
        olds += (bytes[i] == old_v);
        news += (bytes[i] == new_v);
    }
    if (olds == 2 * CC_SMALL) {
        return late ? "released:old" : "old";
    } else if (news == 2 * CC_SMALL) {
        return late ? "released:new" : "new";
    }
    return late ? "released:mixed" : "mixed";
}

/* The first and last CC_SMALL bytes of [ptr, ptr + len), on stream nb_read. */
static const char *cc_read_nonblocking(CUdeviceptr ptr, size_t len, unsigned char old_v,
                                       unsigned char new_v)
{
    const int late = cc_released();
    CUresult res;

    memset(cc_ord.rd, 0xee, 2 * CC_SMALL);
    res = CC(cuMemcpyDtoHAsync, cc_ord.rd, ptr, CC_SMALL, cc_ord.nb_read);
    if (res == CUDA_SUCCESS) {
        res = CC(cuMemcpyDtoHAsync, cc_ord.rd + CC_SMALL, ptr + len - CC_SMALL, CC_SMALL,
                 cc_ord.nb_read);
    }
    if (res == CUDA_SUCCESS) {
        res = CC(cuStreamSynchronize, cc_ord.nb_read);
    }
    return (res == CUDA_SUCCESS) ? cc_classify(cc_ord.rd, old_v, new_v, late) : cc_result(res);
}

static const char *cc_read_final(CUdeviceptr ptr, size_t len, unsigned char old_v,
                                 unsigned char new_v)
{
    CUresult res;

    memset(cc_ord.rd, 0xee, 2 * CC_SMALL);
    res = CC(cuMemcpyDtoH, cc_ord.rd, ptr, CC_SMALL);
    if (res == CUDA_SUCCESS) {
        res = CC(cuMemcpyDtoH, cc_ord.rd + CC_SMALL, ptr + len - CC_SMALL, CC_SMALL);
    }
    return (res == CUDA_SUCCESS) ? cc_classify(cc_ord.rd, old_v, new_v, 0) : cc_result(res);
}

static const char *cc_read_peer(const cc_target_t *t, size_t len, unsigned char old_v,
                                unsigned char new_v)
{
    const int late = cc_released();
    cc_reply_t reply;

    if ((t->peer == 1) && !cc_ord.peer_opened[t->peer_index]) {
        return "unsupported"; /* the peer could not open it */
    }
    cc_peer_call((t->peer == 1) ? CC_PEER_READ_OPENED : CC_PEER_READ_OWN, t->peer_index,
                 len - CC_SMALL, NULL, &reply);
    return (reply.status == CUDA_SUCCESS) ? cc_classify(reply.bytes, old_v, new_v, late)
                                          : cc_result(reply.status);
}

/* A fresh pair of byte values: the target holds old_v, the operation writes new_v. */
static void cc_values(unsigned char *old_v, unsigned char *new_v)
{
    *old_v = (unsigned char)(0x10 + 2 * (cc_ord.values++ % 100));
    *new_v = (unsigned char)(*old_v + 1);
}

/* The target holds old_v and every source new_v, all landed. */
static CUresult cc_prepare(CUdeviceptr target, size_t len, unsigned char old_v, unsigned char new_v)
{
    CUresult res = CC(cuMemsetD8, target, old_v, CC_LARGE);

    memset(cc_ord.pageable, new_v, len);
    memset(cc_ord.pinned, new_v, len);
    if (res == CUDA_SUCCESS) {
        res = CC(cuMemsetD8, cc_ord.src, new_v, len);
    }
    return (res == CUDA_SUCCESS) ? CC(cuCtxSynchronize) : res;
}

static CUresult cc_run_op(cc_op_t op, CUdeviceptr target, size_t len, unsigned char new_v)
{
    switch (op) {
    case CC_OP_MEMSET:
        return CC(cuMemsetD8, target, new_v, len);
    case CC_OP_HTOD_PAGEABLE:
    case CC_OP_HTOD_PAGEABLE_1M:
        return CC(cuMemcpyHtoD, target, cc_ord.pageable, len);
    case CC_OP_HTOD_PINNED:
        return CC(cuMemcpyHtoD, target, cc_ord.pinned, len);
    case CC_OP_DTOD:
        return CC(cuMemcpyDtoD, target, cc_ord.src, len);
    case CC_OP_DTOH:
        return CC(cuMemcpyDtoH, cc_ord.pageable, target, len);
    default:
        cc_fail("operation %d", (int)op);
    }
}

/* The answers of one synchronous operation on a blocked legacy stream. */
static void cc_order_case(const char *prefix, const cc_target_t *t, cc_op_t op)
{
    const size_t len = (op == CC_OP_HTOD_PAGEABLE_1M) ? CC_LARGE : CC_SMALL;
    const char *name = cc_op_names[op];
    unsigned char old_v, new_v;
    CUresult res;
    int released;

    cc_set_phase("%s.%s.%s", prefix, t->kind, name);
    cc_values(&old_v, &new_v);
    res = cc_prepare(t->ptr, len, old_v, new_v);
    if (res == CUDA_SUCCESS) {
        res = cc_block();
    }
    if (res != CUDA_SUCCESS) {
        cc_put_result(cc_key("%s.%s.%s.returns", prefix, t->kind, name), res);
        return;
    }
    res      = cc_run_op(op, t->ptr, len, new_v);
    released = cc_released();
    cc_put(cc_key("%s.%s.%s.returns", prefix, t->kind, name), "%s",
           (res != CUDA_SUCCESS) ? cc_result(res)
           : released            ? "after_landing"
                                 : "before_landing");
    if (op != CC_OP_DTOH) {
        cc_sleep_ms(CC_SETTLE_MS);
        cc_put(cc_key("%s.%s.%s.read_nonblocking", prefix, t->kind, name), "%s",
               cc_read_nonblocking(t->ptr, len, old_v, new_v));
        if (t->peer) {
            cc_put(cc_key("%s.%s.%s.read_peer", prefix, t->kind, name), "%s",
                   cc_read_peer(t, len, old_v, new_v));
        }
    }
    res = cc_unblock();
    if (res != CUDA_SUCCESS) {
        cc_put_result(cc_key("%s.%s.%s.final", prefix, t->kind, name), res);
    } else if (op != CC_OP_DTOH) {
        cc_put(cc_key("%s.%s.%s.final", prefix, t->kind, name), "%s",
               cc_read_final(t->ptr, len, old_v, new_v));
    }
}

/* cuMemcpyHtoDAsync from pinned memory on `stream`, the legacy stream blocked. */
static void cc_async_case(const cc_target_t *t, const char *sname, CUstream stream)
{
    unsigned char old_v, new_v;
    CUresult res;
    int released;

    cc_set_phase("order.async.%s.%s", t->kind, sname);
    cc_values(&old_v, &new_v);
    res = cc_prepare(t->ptr, CC_SMALL, old_v, new_v);
    if (res == CUDA_SUCCESS) {
        res = cc_block();
    }
    if (res != CUDA_SUCCESS) {
        cc_put_result(cc_key("order.async.%s.%s.returns", t->kind, sname), res);
        return;
    }
    res      = CC(cuMemcpyHtoDAsync, t->ptr, cc_ord.pinned, CC_SMALL, stream);
    released = cc_released();
    cc_put(cc_key("order.async.%s.%s.returns", t->kind, sname), "%s",
           (res != CUDA_SUCCESS) ? cc_result(res)
           : released            ? "after_landing"
                                 : "before_landing");
    cc_sleep_ms(CC_SETTLE_MS);
    cc_put(cc_key("order.async.%s.%s.read_nonblocking", t->kind, sname), "%s",
           cc_read_nonblocking(t->ptr, CC_SMALL, old_v, new_v));
    if (t->peer) {
        cc_put(cc_key("order.async.%s.%s.read_peer", t->kind, sname), "%s",
               cc_read_peer(t, CC_SMALL, old_v, new_v));
    }
    res      = CC(cuStreamSynchronize, stream);
    released = cc_released();
    cc_put(cc_key("order.async.%s.%s.synchronize", t->kind, sname), "%s",
           (res != CUDA_SUCCESS) ? cc_result(res)
           : released            ? "after_landing"
                                 : "before_landing");
    cc_put(cc_key("order.async.%s.%s.read_after_synchronize", t->kind, sname), "%s",
           cc_read_nonblocking(t->ptr, CC_SMALL, old_v, new_v));
    res = cc_unblock();
    cc_put(cc_key("order.async.%s.%s.final", t->kind, sname), "%s",
           (res != CUDA_SUCCESS) ? cc_result(res) : cc_read_final(t->ptr, CC_SMALL, old_v, new_v));
}

static const cc_kind_id_t cc_order_kinds[] = {CC_CUMEMALLOC, CC_VMM, CC_POOL_DEFAULT,
                                              CC_IPC_OPENED};
#define CC_NORDER (sizeof(cc_order_kinds) / sizeof(cc_order_kinds[0]))

/* Allocation `alloc` of an order kind as a target. */
static cc_target_t cc_target(cc_kind_id_t id, int alloc)
{
    cc_target_t t = {cc_kinds[id].name, cc_kinds[id].base[alloc], 0, alloc};

    if (id == CC_CUMEMALLOC) {
        t.peer = 1;
    } else if (id == CC_IPC_OPENED) {
        t.peer = 2;
    }
    return t;
}

/* The keys a variant of the order probes would have written, all `why`
 * (the driver cannot block a stream, or cannot set the context flag). */
static void cc_order_keys_put(const char *prefix, const char *why)
{
    size_t k, o;
    cc_target_t t;

    for (k = 0; k < CC_NORDER; ++k) {
        t = cc_target(cc_order_kinds[k], 2);
        for (o = 0; o < CC_NOPS; ++o) {
            cc_put(cc_key("%s.%s.%s.returns", prefix, t.kind, cc_op_names[o]), "%s", why);
            if (o == CC_OP_DTOH) {
                continue;
            }
            cc_put(cc_key("%s.%s.%s.read_nonblocking", prefix, t.kind, cc_op_names[o]), "%s", why);
            cc_put(cc_key("%s.%s.%s.final", prefix, t.kind, cc_op_names[o]), "%s", why);
            if (t.peer) {
                cc_put(cc_key("%s.%s.%s.read_peer", prefix, t.kind, cc_op_names[o]), "%s", why);
            }
        }
    }
}

static void cc_async_keys_put(const char *why)
{
    static const char *const streams[] = {"legacy", "per_thread", "blocking", "nonblocking"};
    static const char *const keys[]    = {"returns",     "read_nonblocking",       "read_peer",
                                          "synchronize", "read_after_synchronize", "final"};
    size_t k, s, a;
    cc_target_t t;

    for (k = 0; k < CC_NORDER; ++k) {
        t = cc_target(cc_order_kinds[k], 2);
        for (s = 0; s < sizeof(streams) / sizeof(streams[0]); ++s) {
            for (a = 0; a < sizeof(keys) / sizeof(keys[0]); ++a) {
                if ((strcmp(keys[a], "read_peer") != 0) || t.peer) {
                    cc_put(cc_key("order.async.%s.%s.%s", t.kind, streams[s], keys[a]), "%s", why);
                }
            }
        }
    }
}

static CUresult cc_order_setup(void)
{
    CUresult res;
    void *p;

    cc_phase        = "order setup";
    cc_ord.pageable = malloc(CC_LARGE);
    if (cc_ord.pageable == NULL) {
        cc_fail("out of memory");
    }
    res = CC(cuMemHostAlloc, &p, CC_LARGE, 0);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    cc_ord.pinned = p;
    res           = CC(cuMemHostAlloc, &p, 4096, CU_MEMHOSTALLOC_DEVICEMAP);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    cc_ord.rd     = p;
    cc_gate.flag  = (volatile uint32_t *)(cc_ord.rd + 64);
    *cc_gate.flag = 1;
    /* The stand-in's pinned memory is usable as it is, as UVA makes it on a GPU. */
    if (CC(cuMemHostGetDevicePointer, &cc_gate.flag_dev, (void *)cc_gate.flag, 0) != CUDA_SUCCESS) {
        cc_gate.flag_dev = (CUdeviceptr)(uintptr_t)cc_gate.flag;
    }
    res = CC(cuMemAlloc, &cc_ord.src, CC_LARGE);
    if (res == CUDA_SUCCESS) {
        res = CC(cuStreamCreate, &cc_ord.nb_read, CU_STREAM_NON_BLOCKING);
    }
    if (res == CUDA_SUCCESS) {
        res = CC(cuStreamCreate, &cc_ord.nb_copy, CU_STREAM_NON_BLOCKING);
    }
    if (res == CUDA_SUCCESS) {
        res = CC(cuStreamCreate, &cc_ord.blocking, CU_STREAM_DEFAULT);
    }
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pthread_create(&cc_gate_thread, NULL, cc_gate_main, NULL) != 0) {
        cc_fail("pthread_create");
    }
    cc_gate_started = 1;
    return CUDA_SUCCESS;
}

/* Each operation and read once, unblocked: the driver's first use of a path
 * (staging buffers, a stream's first copy) must not run into the release. */
static void cc_order_warmup(void)
{
    cc_target_t t = cc_target(CC_CUMEMALLOC, 2);
    size_t o;

    cc_phase = "order warm-up";
    if (!cc_kinds[CC_CUMEMALLOC].ok) {
        return;
    }
    if (!cc_kinds[CC_IPC_OPENED].ok) {
        t.peer = 0;
    }
    (void)cc_prepare(t.ptr, CC_LARGE, 1, 2);
    for (o = 0; o < CC_NOPS; ++o) {
        (void)cc_run_op((cc_op_t)o, t.ptr, (o == CC_OP_HTOD_PAGEABLE_1M) ? CC_LARGE : CC_SMALL, 2);
    }
    (void)CC(cuMemcpyHtoDAsync, t.ptr, cc_ord.pinned, CC_SMALL, cc_ord.nb_copy);
    (void)CC(cuMemcpyHtoDAsync, t.ptr, cc_ord.pinned, CC_SMALL, cc_ord.blocking);
    (void)cc_read_nonblocking(t.ptr, CC_SMALL, 1, 2);
    if (t.peer) {
        (void)cc_read_peer(&t, CC_SMALL, 1, 2);
    }
    (void)CC(cuCtxSynchronize);
}

/* The peer opens our cumemalloc allocations 0 and 2 (order targets). */
static void cc_peer_open_ours(void)
{
    const cc_kind_t *k = &cc_kinds[CC_CUMEMALLOC];
    CUipcMemHandle handle;
    cc_reply_t reply;
    int i;

    if (!cc_kinds[CC_IPC_OPENED].ok) {
        return; /* the peer has no driver */
    }
    for (i = 0; i < CC_ALLOCS; i += 2) {
        if (CC(cuIpcGetMemHandle, &handle, k->base[i]) != CUDA_SUCCESS) {
            continue;
        }
        cc_peer_call(CC_PEER_OPEN, i, 0, &handle, &reply);
        cc_ord.peer_opened[i] = (reply.status == CUDA_SUCCESS);
    }
}

static void cc_order_variant(const char *prefix, int alloc)
{
    cc_target_t t;
    size_t k, o;

    for (k = 0; k < CC_NORDER; ++k) {
        if (!cc_kinds[cc_order_kinds[k]].ok) {
            continue;
        }
        t = cc_target(cc_order_kinds[k], alloc);
        if ((t.peer != 0) && !cc_kinds[CC_IPC_OPENED].ok) {
            t.peer = 0;
        }
        for (o = 0; o < CC_NOPS; ++o) {
            cc_order_case(prefix, &t, (cc_op_t)o);
        }
    }
}

static void cc_probe_order(void)
{
    unsigned int flags0 = 0, flags = 0;
    const char *why;
    cc_target_t t;
    CUresult res;
    size_t k;

    res = cc_order_setup();
    if (res != CUDA_SUCCESS) {
        cc_put_result("order.setup", res);
        return;
    }
    cc_put("order.setup", "ok");

    /* Can the legacy stream be blocked at all? */
    cc_phase = "order.wait_value32";
    res      = cc_block();
    cc_put_result("order.wait_value32", res);
    if (res != CUDA_SUCCESS) {
        why = cc_result(res);
        cc_put("order.legacy_blocked.query", "%s", why);
        cc_order_keys_put("order.legacy_blocked", why);
        cc_order_keys_put("order.ptr_sync_memops", why);
        cc_order_keys_put("order.ctx_sync_memops", why);
        cc_async_keys_put(why);
        return;
    }
    cc_put_result("order.legacy_blocked.query", CC(cuStreamQuery, CU_STREAM_LEGACY));
    cc_put_result("order.legacy_blocked.unblock", cc_unblock());

    cc_peer_open_ours();
    cc_order_warmup();
    cc_order_variant("order.legacy_blocked", 2);
    cc_order_variant("order.ptr_sync_memops", 0);

    for (k = 0; k < CC_NORDER; ++k) {
        if (!cc_kinds[cc_order_kinds[k]].ok) {
            continue;
        }
        t = cc_target(cc_order_kinds[k], 2);
        if ((t.peer != 0) && !cc_kinds[CC_IPC_OPENED].ok) {
            t.peer = 0;
        }
        cc_async_case(&t, "legacy", CU_STREAM_LEGACY);
        cc_async_case(&t, "per_thread", CU_STREAM_PER_THREAD);
        cc_async_case(&t, "blocking", cc_ord.blocking);
        cc_async_case(&t, "nonblocking", cc_ord.nb_copy);
    }

    /* The context-wide flag (UCX's way for VMM memory). */
    cc_phase = "order.ctx";
    res      = CC(cuCtxGetFlags, &flags0);
    cc_put_result("order.ctx.get_flags", res);
    if (res == CUDA_SUCCESS) {
        cc_put("order.ctx.initial_sync_memops", "%d", !!(flags0 & CU_CTX_SYNC_MEMOPS));
        res = (cc_api.cuCtxSetFlags != NULL) ? cc_api.cuCtxSetFlags(flags0 | CU_CTX_SYNC_MEMOPS)
                                             : CC_UNSUPPORTED;
    }
    cc_put_result("order.ctx.set_flags", res);
    if ((res == CUDA_SUCCESS) && ((res = CC(cuCtxGetFlags, &flags)) == CUDA_SUCCESS)) {
        cc_put("order.ctx.sync_memops_after_set", "%d", !!(flags & CU_CTX_SYNC_MEMOPS));
    }
    if (res == CUDA_SUCCESS) {
        cc_order_variant("order.ctx_sync_memops", 2);
        cc_put_result("order.ctx.restore_flags", cc_api.cuCtxSetFlags(flags0));
    } else {
        cc_order_keys_put("order.ctx_sync_memops", cc_result(res));
    }
}

/* --- main --- */

static void cc_usage(void)
{
    fprintf(stderr, "usage: cuda_conformance [--out FILE]\n");
    exit(1);
}

int main(int argc, char **argv)
{
    const char *out_path = NULL;
    int version = 0, count = 0, id;
    char name[256] = "?";
    FILE *out      = stdout;
    char date[32];
    CUresult res;
    time_t now;
    size_t l;

    if ((argc == 3) && (strcmp(argv[1], "--out") == 0)) {
        out_path = argv[2];
    } else if (argc != 1) {
        cc_usage();
    }
    signal(SIGPIPE, SIG_IGN);
    /* Before anything initializes the driver: both processes do it themselves. */
    cc_peer_start();
    cc_deadline_set(CC_DEADLINE_S);

    if (!cc_open_driver()) {
        cc_peer_stop();
        fprintf(stderr, "cuda_conformance: no CUDA driver: skipped\n");
        return 77;
    }
    res = CC(cuInit, 0);
    if ((res == CUDA_SUCCESS) && (CC(cuDeviceGetCount, &count) == CUDA_SUCCESS) && (count == 0)) {
        res = CUDA_ERROR_NO_DEVICE;
    }
    if (res != CUDA_SUCCESS) {
        cc_peer_stop();
        fprintf(stderr, "cuda_conformance: cuInit: %s: skipped\n", cc_result(res));
        return ((res == CUDA_ERROR_NO_DEVICE) || (res == CC_UNSUPPORTED)) ? 77 : 1;
    }
    if (((res = CC(cuDeviceGet, &cc_dev, 0)) != CUDA_SUCCESS) ||
        ((res = CC(cuDevicePrimaryCtxRetain, &cc_ctx, cc_dev)) != CUDA_SUCCESS) ||
        ((res = CC(cuCtxSetCurrent, cc_ctx)) != CUDA_SUCCESS)) {
        cc_fail("device 0's primary context: %s", cc_result(res));
    }
    (void)CC(cuDriverGetVersion, &version);
    (void)CC(cuDeviceGetName, name, sizeof(name), cc_dev);

    cc_alloc_kinds();
    for (id = 0; id < CC_NKINDS; ++id) {
        if (cc_kinds[id].ok) {
            cc_phase = cc_kinds[id].name;
            cc_probe_attributes((cc_kind_id_t)id);
            cc_probe_ipc_and_range((cc_kind_id_t)id);
        }
    }
    cc_probe_order();

    cc_phase = "output";
    if ((out_path != NULL) && ((out = fopen(out_path, "w")) == NULL)) {
        cc_fail("%s: %s", out_path, strerror(errno));
    }
    qsort(cc_lines, cc_nlines, sizeof(*cc_lines), cc_line_cmp);
    now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
    fprintf(out, "# driver: %d, device: %s\n", version, name);
    fprintf(out, "# recorded: %s\n", date);
    fprintf(out, "# cuda_conformance answers, `key value`, sorted (see the program's header)\n");
    for (l = 0; l < cc_nlines; ++l) {
        fprintf(out, "%s\n", cc_lines[l]);
    }
    if ((fflush(out) != 0) || ((out != stdout) && (fclose(out) != 0))) {
        cc_fail("writing the answers: %s", strerror(errno));
    }
    /* Stop the helper and the peer; the driver cleans up at exit. */
    pthread_mutex_lock(&cc_gate.lock);
    cc_gate.quit = 1;
    pthread_cond_broadcast(&cc_gate.cond);
    pthread_mutex_unlock(&cc_gate.lock);
    if (cc_gate_started) {
        pthread_join(cc_gate_thread, NULL);
    }
    cc_peer_stop();
    return 0;
}
