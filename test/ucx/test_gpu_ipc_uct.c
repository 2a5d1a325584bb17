/*
 * The gpu_ipc transport through UCT's public API, between two processes:
 * the parent ("peer") reads and writes device memory of its child ("owner")
 * with get_zcopy/put_zcopy.  Addresses and packed rkeys go over a
 * socketpair made before fork (CUDA must not be initialized before fork).
 *
 *   test_gpu_ipc_uct [--expect-unreachable] [--max-size BYTES] [--only start|inflight|reset]
 *
 *   get       get_zcopy of the owner's buffer at several offsets and sizes
 *   put       put_zcopy into the owner's buffer; the owner checks the bytes
 *   many      32 gets in flight, then an endpoint flush with a completion
 *   pending   UCX_GPU_IPC_MAX_EVENTS=2: the third get is refused, waits as a
 *             pending request and runs from progress
 *   range     a get past the end of the remote allocation: an error status
 *   corrupt   damaged and truncated rkey blobs: an error; a foreign one (or a
 *             damaged magic/version): unreachable; never a crash
 *   own       this process's own key: UCS_ERR_UNREACHABLE
 *   stale     the owner frees and reallocates (same size, often the same
 *             address) while the old rkey is still held: the new key reads
 *             the new bytes
 *   none      managed memory, and a range running past its allocation,
 *             pack NONE keys: UCS_ERR_UNREACHABLE
 *   vmm       cuMemCreate memory exported as a POSIX fd (skipped where the
 *             driver or pidfd_getfd refuses)
 *   start     the owner's keys (legacy and VMM) with another start time, as a
 *             dead owner's keys look once a new process has its pid: unpacking
 *             them answers UCS_ERR_UNREACHABLE (the owner's real keys work)
 *   death     the owner exits: ep_check reports UCS_ERR_ENDPOINT_TIMEOUT to
 *             the error handler, and a get fails with that status
 * --only start: connect, start, death.
 * --only inflight: with a mapping cache of one entry (UCX_STRATA_IPC_CACHE_SIZE=1)
 *   a get from one owner allocation and a put into another are in flight at
 *   once while the first one's mapping is pushed out: round 1 by mapping the
 *   second allocation, round 2 by releasing the first rkey past the limit.
 *   Bytes and statuses are checked here; that no mapping is closed under a
 *   copy is checked on the CUDA stand-in's trace (CUDA_STANDIN_TRACE=1) by
 *   test/ucx/tests.sh, from the lines this check prints on stderr.
 * --only reset: a get maps the owner's allocation (cached once its rkey is
 *   released), a gpu_copy domain installs the driver hooks, and once UCX is
 *   closed the peer resets device 0's primary context: the cache must unmap
 *   the allocation first (checked on the stand-in's trace by
 *   test/ucx/tests.sh, from the line this check prints on stderr).
 * --expect-unreachable (run with CUDA_STANDIN_FAIL=cuIpcOpenMemHandle_v2):
 *   unpacking the owner's key must answer UCS_ERR_UNREACHABLE, so that UCP
 *   falls back to another protocol.
 *
 * One line per check; the first wrong byte prints the check, size, index,
 * expected and got, and exits 1.  Exit 77: no CUDA device or no gpu_ipc.
 *
 * The file is longer than the house limit of ~800 lines because the owner and
 * the peer are the two ends of one socketpair protocol: each message type is
 * read next to the code that answers it.  The UCT harness and the byte
 * patterns are test/common/'s; the parts here are, in order, the socketpair
 * protocol, the interface with its error handler, the owner, and one
 * function per check of the peer.  The key format's code is compiled in
 * (below) for the start check, which forges keys.
 *
 * Build (the driver from the toolkit's link stub; at run time the CUDA
 * stand-in or the real driver, first on LD_LIBRARY_PATH), from the source
 * tree's top:
 *   gcc -O2 -I/usr/local/cuda/include -Itest/common -Iucx_tl/gpu_ipc test/ucx/test_gpu_ipc_uct.c \
 *       ucx_tl/gpu_ipc/gpu_ipc_key.c test/common/stest_uct.c test/common/stest_cuda.c \
 *       test/common/stest_pattern.c -o test_gpu_ipc_uct -luct -lucs \
 *       -L/usr/local/cuda/lib64/stubs -lcuda
 * Run (UCX 1.13 loads the plugin only when preloaded):
 *   LD_PRELOAD=.../libuct_strata.so LD_LIBRARY_PATH=<libcuda.so.1 dir> ./test_gpu_ipc_uct
 */
#include "stest_cuda.h"
#include "stest_fail.h"
#include "stest_uct.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* gpu_ipc's key format (plain C, no UCX or CUDA; linked in from
 * ucx_tl/gpu_ipc/gpu_ipc_key.c): the start check rewrites the owner's keys
 * as a stale peer would send them. */
#include "gpu_ipc_key.h"

#define TEST_MAX_SPIN   100000000UL
#define TEST_ADDR_MAX   64
#define TEST_RKEY_MAX   512
#define TEST_OWNER_SIZE ((size_t)4 << 20)
#define TEST_MIN(_a, _b) (((_a) < (_b)) ? (_a) : (_b))

static const char *test_role = "peer";
static size_t test_max_size  = TEST_OWNER_SIZE;
static const char *test_cache_size; /* UCX_STRATA_IPC_CACHE_SIZE; NULL: as configured */

void stest_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stdout, "test_gpu_ipc_uct (%s): FAIL: ", test_role);
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    fflush(stdout);
    va_end(ap);
    exit(1);
}

static void test_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void test_ok(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("%s: ok: ", test_role);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

/* ---- the socketpair protocol ---- */

typedef enum {
    MSG_KEY,          /* owner -> peer: a registered buffer */
    MSG_NO_KEY,       /* owner -> peer: the kind of memory asked for is unsupported */
    MSG_CHECK_PUT,    /* peer -> owner: check bytes put into the put buffer */
    MSG_RESULT,       /* owner -> peer: 0 or the failing index + 1 */
    MSG_REALLOC,      /* peer -> owner: free the get buffer, allocate again */
    MSG_MANAGED,      /* peer -> owner: register managed memory */
    MSG_PAST_END,     /* peer -> owner: register a range past its allocation */
    MSG_VMM,          /* peer -> owner: register exportable VMM memory */
    MSG_DIE,          /* peer -> owner: exit now */
} test_msg_type_t;

typedef struct test_msg {
    test_msg_type_t type;
    uint64_t addr, length;
    unsigned seed;
    uint64_t result;
    size_t rkey_len;
    uint8_t rkey[TEST_RKEY_MAX];
} test_msg_t;

static int test_sock = -1;

static void test_send(const test_msg_t *msg)
{
    if (write(test_sock, msg, sizeof(*msg)) != (ssize_t)sizeof(*msg)) {
        stest_fail("write to the other process: %s", strerror(errno));
    }
}

static void test_read_full(void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(test_sock, (char *)buf + got, len - got);
        if (n <= 0) {
            stest_fail("read from the other process: %s", n ? strerror(errno) : "closed");
        }
        got += n;
    }
}

static void test_recv(test_msg_t *msg, test_msg_type_t expect)
{
    test_read_full(msg, sizeof(*msg));
    if ((expect != (test_msg_type_t)-1) && (msg->type != expect)) {
        stest_fail("message type: expected %d got %d", expect, msg->type);
    }
}

/* ---- buffers ---- */

/* cuMemsetD8 is asynchronous for device memory, and gpu_ipc copies on
 * non-blocking streams that do not wait for the legacy stream: finish it. */
static void test_zero_dev(CUdeviceptr dev, size_t len)
{
    STEST_CU(cuMemsetD8(dev, 0, len));
    STEST_CU(cuCtxSynchronize());
}

/* ---- UCT plumbing ---- */

typedef struct test_ctx {
    stest_uct_t uct;
    uct_iface_h iface;
    int ep_errors;
    ucs_status_t ep_error_status;
} test_ctx_t;

static ucs_status_t test_err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    test_ctx_t *ctx = arg;

    ctx->ep_errors++;
    ctx->ep_error_status = status;
    return UCS_OK;
}

/* uct_config_modify() names a setting of the component's domains without
 * its prefix ("IPC_CACHE_SIZE") before UCX 1.17, and with it after. */
#if UCT_API >= UCT_VERSION(1, 17)
#define TEST_MD_SETTING(_name) "STRATA_" _name
#else
#define TEST_MD_SETTING(_name) _name
#endif

/* Opens md gpu_ipc and an interface on its first device; 0 if there is none. */
static int test_open(test_ctx_t *ctx, const char *max_events)
{
    const char *md_settings[] = {TEST_MD_SETTING("IPC_CACHE_SIZE"), test_cache_size, NULL};
    const char *iface_settings[] = {"MAX_EVENTS", max_events, NULL};

    memset(ctx, 0, sizeof(*ctx));
    if (!stest_uct_find_component(&ctx->uct, "strata")) {
        return 0;
    }
    if ((stest_uct_md_open(&ctx->uct, "gpu_ipc", (test_cache_size != NULL) ? md_settings : NULL) !=
         UCS_OK) ||
        !stest_uct_find_device(&ctx->uct, "gpu_ipc")) {
        return 0;
    }
    stest_uct_worker_create(&ctx->uct);
    ctx->iface = stest_uct_iface_open(&ctx->uct, "gpu_ipc", iface_settings, test_err_handler, ctx);
    return 1;
}

static void test_close(test_ctx_t *ctx)
{
    uct_iface_close(ctx->iface);
    stest_uct_worker_destroy(&ctx->uct);
    uct_md_close(ctx->uct.md);
}

static void test_cuda_init(void)
{
    stest_dev_t dev;

    if (stest_dev_open(0, &dev) != 0) {
        stest_fail("cuInit/cuDeviceGetCount: no CUDA device");
    }
}

/* Registers [addr, addr+length) and fills msg with its packed key. */
static uct_mem_h test_register(test_ctx_t *ctx, CUdeviceptr addr, size_t length,
                               test_msg_t *msg)
{
    uct_md_attr_t attr;
    uct_mem_h memh;

    STEST_UCS(uct_md_query(ctx->uct.md, &attr));
    if (attr.rkey_packed_size > TEST_RKEY_MAX) {
        stest_fail("rkey_packed_size %zu > %d", attr.rkey_packed_size, TEST_RKEY_MAX);
    }
    STEST_UCS(uct_md_mem_reg(ctx->uct.md, (void *)addr, length, UCT_MD_MEM_ACCESS_ALL, &memh));
    memset(msg, 0, sizeof(*msg));
    msg->type     = MSG_KEY;
    msg->addr     = addr;
    msg->length   = length;
    msg->rkey_len = attr.rkey_packed_size;
    STEST_UCS(uct_md_mkey_pack(ctx->uct.md, memh, msg->rkey));
    return memh;
}

/* Address exchange: iface and device address of each side, owner first. */
static void test_exchange_addresses(test_ctx_t *ctx, uint8_t *dev_addr, uint8_t *iface_addr)
{
    uint8_t mine[2][TEST_ADDR_MAX];

    stest_uct_iface_addresses(ctx->iface, mine[0], mine[1], TEST_ADDR_MAX);
    if (write(test_sock, mine, sizeof(mine)) != sizeof(mine)) {
        stest_fail("address exchange: %s", strerror(errno));
    }
    test_read_full(dev_addr, TEST_ADDR_MAX);
    test_read_full(iface_addr, TEST_ADDR_MAX);
}

/* ---- the owner (child) ---- */

static void test_owner_send_vmm(test_ctx_t *ctx)
{
    CUmemAllocationProp prop = {0};
    CUmemAccessDesc access   = {0};
    CUmemGenericAllocationHandle handle;
    size_t granularity;
    CUdeviceptr ptr;
    test_msg_t msg;

    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if ((cuMemGetAllocationGranularity(&granularity, &prop,
                                       CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) ||
        (cuMemCreate(&handle, granularity, &prop, 0) != CUDA_SUCCESS)) {
        memset(&msg, 0, sizeof(msg));
        msg.type = MSG_NO_KEY;
        test_send(&msg);
        return;
    }
    STEST_CU(cuMemAddressReserve(&ptr, granularity, 0, 0, 0));
    STEST_CU(cuMemMap(ptr, granularity, 0, handle, 0));
    access.location = prop.location;
    access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    STEST_CU(cuMemSetAccess(ptr, granularity, &access, 1));
    stest_dev_seq_fill(ptr, granularity, 4);
    (void)test_register(ctx, ptr, granularity, &msg);
    msg.seed = 4;
    test_send(&msg);
    /* Registered (and the fd open) until the process ends. */
}

static void test_owner_check_put(CUdeviceptr put_buf, const test_msg_t *req)
{
    test_msg_t reply = {.type = MSG_RESULT};
    uint8_t expected, got;

    reply.result = stest_dev_seq_find_wrong(put_buf + req->addr, req->length, req->seed, 0, &expected,
                                   &got);
    reply.seed   = ((unsigned)expected << 8) | got;
    test_send(&reply);
}

static int test_owner(void)
{
    CUdeviceptr get_buf, put_buf, managed;
    uct_mem_h get_memh, put_memh, memh;
    uint8_t peer_addr[2][TEST_ADDR_MAX];
    test_ctx_t ctx;
    test_msg_t msg;

    test_role = "owner";
    test_cuda_init();
    if (!test_open(&ctx, "inf")) {
        stest_fail("no gpu_ipc here but the peer has it");
    }
    test_exchange_addresses(&ctx, peer_addr[0], peer_addr[1]);
    STEST_CU(cuMemAlloc(&get_buf, TEST_OWNER_SIZE));
    STEST_CU(cuMemAlloc(&put_buf, TEST_OWNER_SIZE));
    stest_dev_seq_fill(get_buf, TEST_OWNER_SIZE, 1);
    test_zero_dev(put_buf, TEST_OWNER_SIZE);

    get_memh = test_register(&ctx, get_buf, TEST_OWNER_SIZE, &msg);
    msg.seed = 1;
    test_send(&msg);
    put_memh = test_register(&ctx, put_buf, TEST_OWNER_SIZE, &msg);
    test_send(&msg);

    for (;;) {
        test_recv(&msg, (test_msg_type_t)-1);
        switch (msg.type) {
        case MSG_CHECK_PUT:
            test_owner_check_put(put_buf, &msg);
            break;
        case MSG_REALLOC:
            STEST_UCS(uct_md_mem_dereg(ctx.uct.md, get_memh));
            STEST_CU(cuMemFree(get_buf));
            STEST_CU(cuMemAlloc(&get_buf, TEST_OWNER_SIZE));
            stest_dev_seq_fill(get_buf, TEST_OWNER_SIZE, 2);
            get_memh = test_register(&ctx, get_buf, TEST_OWNER_SIZE, &msg);
            msg.seed = 2;
            test_send(&msg);
            break;
        case MSG_MANAGED:
            STEST_CU(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL));
            memh = test_register(&ctx, managed, 1 << 20, &msg);
            test_send(&msg);
            (void)memh;
            break;
        case MSG_PAST_END:
            memh = test_register(&ctx, put_buf + TEST_OWNER_SIZE - 64, 4096, &msg);
            test_send(&msg);
            STEST_UCS(uct_md_mem_dereg(ctx.uct.md, memh));
            break;
        case MSG_VMM:
            test_owner_send_vmm(&ctx);
            break;
        case MSG_DIE:
            /* As a crash would: no cleanup, no goodbye. */
            _exit(0);
        default:
            stest_fail("unexpected message %d", msg.type);
        }
    }
    (void)put_memh;
    return 0;
}

/* ---- the peer (parent) ---- */

typedef struct test_remote {
    uct_rkey_bundle_t rkey;
    uint64_t addr, length;
    unsigned seed;
} test_remote_t;

static ucs_status_t test_unpack(test_ctx_t *ctx, const test_msg_t *msg, test_remote_t *remote)
{
    remote->addr   = msg->addr;
    remote->length = msg->length;
    remote->seed   = msg->seed;
    return uct_rkey_unpack(ctx->uct.component, msg->rkey, &remote->rkey);
}

static ucs_status_t test_get(test_ctx_t *ctx, uct_ep_h ep, CUdeviceptr local, uint64_t remote,
                             size_t len, uct_rkey_t rkey, stest_uct_comp_t *comp)
{
    return stest_uct_get_zcopy(ep, (void *)local, len, remote, rkey, comp);
}

static ucs_status_t test_put(test_ctx_t *ctx, uct_ep_h ep, CUdeviceptr local, uint64_t remote,
                             size_t len, uct_rkey_t rkey, stest_uct_comp_t *comp)
{
    return stest_uct_put_zcopy(ep, (const void *)local, len, remote, rkey, comp);
}

static const size_t test_sizes[] = {1, 3, 4095, 65537, (1 << 20) + 7, TEST_OWNER_SIZE};
static const size_t test_offsets[] = {0, 1, 4097};

static void test_peer_get(test_ctx_t *ctx, uct_ep_h ep, const test_remote_t *remote,
                          CUdeviceptr local, const char *what)
{
    size_t s, o, largest = 0;
    stest_uct_comp_t comp;

    for (s = 0; s < sizeof(test_sizes) / sizeof(test_sizes[0]); ++s) {
        for (o = 0; o < sizeof(test_offsets) / sizeof(test_offsets[0]); ++o) {
            size_t size   = test_sizes[s];
            size_t offset = test_offsets[o];

            if ((size > test_max_size) || (offset + size > remote->length)) {
                continue;
            }
            largest = (size > largest) ? size : largest;
            test_zero_dev(local, size);
            stest_uct_wait(&ctx->uct, test_get(ctx, ep, local, remote->addr + offset, size,
                                    remote->rkey.rkey, &comp), &comp, what);
            stest_dev_seq_check(what, size, local, size, remote->seed, offset);
        }
    }
    test_ok("%s: get_zcopy of sizes 1..%zu at offsets 0, 1, 4097: bytes match", what, largest);
}

static void test_peer_put(test_ctx_t *ctx, uct_ep_h ep, const test_remote_t *remote,
                          CUdeviceptr local)
{
    test_msg_t msg = {.type = MSG_CHECK_PUT};
    stest_uct_comp_t comp;
    size_t s, offset = 129;

    for (s = 0; s < sizeof(test_sizes) / sizeof(test_sizes[0]); ++s) {
        size_t size = test_sizes[s];
        if ((size > test_max_size) || (offset + size > remote->length)) {
            continue;
        }
        stest_dev_seq_fill(local, size, 3 + s);
        stest_uct_wait(&ctx->uct, test_put(ctx, ep, local, remote->addr + offset, size, remote->rkey.rkey,
                                &comp), &comp, "put");
        msg.type   = MSG_CHECK_PUT;
        msg.addr   = offset;
        msg.length = size;
        msg.seed   = 3 + s;
        test_send(&msg);
        test_recv(&msg, MSG_RESULT);
        if (msg.result != 0) {
            stest_fail("put size %zu: owner reads index %" PRIu64 " expected 0x%02x got 0x%02x",
                      size, msg.result - 1, msg.seed >> 8, msg.seed & 0xff);
        }
    }
    test_ok("put: put_zcopy of sizes 1..%zu at offset 129: the owner reads the bytes back",
            TEST_MIN(test_max_size, TEST_OWNER_SIZE));
}

static void test_peer_many(test_ctx_t *ctx, uct_ep_h ep, const test_remote_t *remote,
                           CUdeviceptr local)
{
    enum { N = 32, CHUNK = 65536 };
    stest_uct_comp_t comps[N], flush_comp;
    ucs_status_t status;
    int i;

    test_zero_dev(local, N * CHUNK);
    for (i = 0; i < N; ++i) {
        status = test_get(ctx, ep, local + i * CHUNK, remote->addr + i * CHUNK, CHUNK,
                          remote->rkey.rkey, &comps[i]);
        STEST_EXPECT_STATUS("many: get in flight", UCS_INPROGRESS, status);
    }
    stest_uct_comp_init(&flush_comp);
    status = uct_ep_flush(ep, 0, &flush_comp.super);
    if (status == UCS_INPROGRESS) {
        stest_uct_progress_until(&ctx->uct, &flush_comp.calls, "many: flush");
    } else {
        STEST_EXPECT_STATUS("many: flush", UCS_OK, status);
    }
    for (i = 0; i < N; ++i) {
        if (comps[i].calls != 1) {
            stest_fail("many: get %d completed %d times at flush completion", i, comps[i].calls);
        }
    }
    stest_dev_seq_check("many", N * CHUNK, local, N * CHUNK, remote->seed, 0);
    STEST_EXPECT_STATUS("many: second flush", UCS_OK, uct_ep_flush(ep, 0, NULL));
    STEST_EXPECT_STATUS("many: iface flush", UCS_OK, uct_iface_flush(ctx->iface, 0, NULL));
    test_ok("many: %d gets in flight, then ep flush with a completion: all completed before "
            "it, bytes match", N);
}

typedef struct test_pending_req {
    uct_pending_req_t super;
    test_ctx_t *ctx;
    uct_ep_h ep;
    CUdeviceptr local;
    uint64_t remote;
    uct_rkey_t rkey;
    stest_uct_comp_t comp;
    int started;
} test_pending_req_t;

static ucs_status_t test_pending_cb(uct_pending_req_t *self)
{
    test_pending_req_t *req = (test_pending_req_t *)self;
    ucs_status_t status;

    status = test_get(req->ctx, req->ep, req->local, req->remote, 4096, req->rkey, &req->comp);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }
    req->started = 1;
    return UCS_OK;
}

/* Needs an interface with MAX_EVENTS=2. */
static void test_peer_pending(test_ctx_t *ctx, uct_ep_h ep, const test_remote_t *remote,
                              CUdeviceptr local)
{
    test_pending_req_t req = {.ctx = ctx, .ep = ep, .local = local + 2 * 4096,
                              .remote = remote->addr + 2 * 4096, .rkey = remote->rkey.rkey};
    stest_uct_comp_t comps[2];
    ucs_status_t status;
    int i;

    req.super.func = test_pending_cb;
    for (i = 0; i < 2; ++i) {
        status = test_get(ctx, ep, local + i * 4096, remote->addr + i * 4096, 4096,
                          remote->rkey.rkey, &comps[i]);
        STEST_EXPECT_STATUS("pending: get within MAX_EVENTS", UCS_INPROGRESS, status);
    }
    status = test_get(ctx, ep, req.local, req.remote, 4096, req.rkey, &req.comp);
    STEST_EXPECT_STATUS("pending: third get", UCS_ERR_NO_RESOURCE, status);
    STEST_EXPECT_STATUS("pending: add", UCS_OK, uct_ep_pending_add(ep, &req.super, 0));
    STEST_EXPECT_STATUS("pending: flush with a pending request", UCS_ERR_NO_RESOURCE,
                       uct_ep_flush(ep, 0, NULL));
    stest_uct_progress_until(&ctx->uct, &req.started, "pending: dispatch");
    stest_uct_progress_until(&ctx->uct, &req.comp.calls, "pending: dispatched get");
    for (i = 0; i < 2; ++i) {
        stest_uct_progress_until(&ctx->uct, &comps[i].calls, "pending: first gets");
    }
    stest_dev_seq_check("pending", 3 * 4096, local, 3 * 4096, remote->seed, 0);
    test_ok("pending: MAX_EVENTS=2, the third get is refused (NO_RESOURCE), queued, and runs "
            "from progress");
}

static void test_peer_range(test_ctx_t *ctx, uct_ep_h ep, const test_remote_t *remote,
                            CUdeviceptr local)
{
    stest_uct_comp_t comp;

    printf("range: an error message from gpu_ipc is expected next\n");
    fflush(stdout);
    STEST_EXPECT_STATUS("range: get past the end of the remote allocation",
                       UCS_ERR_INVALID_PARAM,
                       test_get(ctx, ep, local, remote->addr + remote->length - 8, 16,
                                remote->rkey.rkey, &comp));
    STEST_EXPECT_STATUS("range: get before the remote allocation", UCS_ERR_INVALID_PARAM,
                       test_get(ctx, ep, local, remote->addr - 1, 16, remote->rkey.rkey,
                                &comp));
    test_ok("range: gets outside the remote allocation fail with UCS_ERR_INVALID_PARAM");
}

static void test_peer_corrupt(test_ctx_t *ctx, const test_msg_t *good)
{
    test_msg_t bad;
    uct_rkey_bundle_t rkey;
    ucs_status_t status;
    size_t i;
    /* A packed key starts with its magic (4 bytes) and version (2). */
    enum { KEY_FORMAT_BYTES = 6 };

    printf("corrupt: error messages from gpu_ipc are expected next\n");
    fflush(stdout);
    for (i = 0; i < good->rkey_len; i += 7) {
        bad = *good;
        bad.rkey[i] ^= 0x40;
        status = uct_rkey_unpack(ctx->uct.component, bad.rkey, &rkey);
        /* A damaged magic or version reads as another format or version of
         * the key: unreachable (UCP falls back), not an error. */
        if ((status == UCS_OK) ||
            ((status == UCS_ERR_UNREACHABLE) && (i >= KEY_FORMAT_BYTES))) {
            stest_fail("corrupt: rkey with byte %zu damaged: %s", i, ucs_status_string(status));
        }
    }
    bad = *good;
    memset(bad.rkey + good->rkey_len / 2, 0, sizeof(bad.rkey) - good->rkey_len / 2);
    status = uct_rkey_unpack(ctx->uct.component, bad.rkey, &rkey);
    STEST_EXPECT_STATUS("corrupt: truncated rkey", UCS_ERR_INVALID_PARAM, status);
    memset(bad.rkey, 0, sizeof(bad.rkey));
    snprintf((char *)bad.rkey, sizeof(bad.rkey), "some other transport's key");
    status = uct_rkey_unpack(ctx->uct.component, bad.rkey, &rkey);
    STEST_EXPECT_STATUS("corrupt: foreign rkey", UCS_ERR_UNREACHABLE, status);
    test_ok("corrupt: damaged (every 7th byte) and truncated rkeys fail to unpack with an "
            "error; a foreign one is unreachable");
}

static void test_peer_own(test_ctx_t *ctx, CUdeviceptr local)
{
    test_remote_t remote;
    test_msg_t msg;
    uct_mem_h memh;

    memh = test_register(ctx, local, 4096, &msg);
    STEST_EXPECT_STATUS("own: unpack of this process's key", UCS_ERR_UNREACHABLE,
                       test_unpack(ctx, &msg, &remote));
    STEST_UCS(uct_md_mem_dereg(ctx->uct.md, memh));
    test_ok("own: this process's key is unreachable");
}

static void test_peer_stale(test_ctx_t *ctx, uct_ep_h ep, test_remote_t *old, CUdeviceptr local)
{
    test_msg_t msg = {.type = MSG_REALLOC};
    test_remote_t remote;

    /* The old rkey stays unpacked (referenced) across the reallocation. */
    test_send(&msg);
    test_recv(&msg, MSG_KEY);
    STEST_UCS(test_unpack(ctx, &msg, &remote));
    test_peer_get(ctx, ep, &remote, local, msg.addr == old->addr ? "stale (same address)" :
                                                                   "stale (new address)");
    STEST_UCS(uct_rkey_release(ctx->uct.component, &old->rkey));
    test_peer_get(ctx, ep, &remote, local, "stale: after releasing the old key");
    *old = remote;
}

static void test_peer_none(test_ctx_t *ctx)
{
    test_msg_t msg = {.type = MSG_MANAGED};
    test_remote_t remote;

    test_send(&msg);
    test_recv(&msg, MSG_KEY);
    STEST_EXPECT_STATUS("none: managed memory", UCS_ERR_UNREACHABLE,
                       test_unpack(ctx, &msg, &remote));
    msg.type = MSG_PAST_END;
    test_send(&msg);
    test_recv(&msg, MSG_KEY);
    STEST_EXPECT_STATUS("none: range past its allocation", UCS_ERR_UNREACHABLE,
                       test_unpack(ctx, &msg, &remote));
    test_ok("none: managed memory and a range past its allocation are unreachable");
}

/*
 * The owner's key `msg` with another owner start time: what a key of an
 * owner that has exited looks like once a new process got its pid (here the
 * owner itself, so that its handle and fd are there to be taken).  Unpacking
 * it must answer UNREACHABLE: the process behind the pid is not the one that
 * exported the memory.  Done before the real key is unpacked, so that the
 * handle is not open already (the driver would refuse a second open anyway).
 */
static void test_peer_start(test_ctx_t *ctx, const test_msg_t *msg, const char *what)
{
    uct_gpu_ipc_key_t key;
    test_remote_t remote;
    ucs_status_t status;
    test_msg_t forged;
    char why[128];

    if (uct_gpu_ipc_key_unpack(msg->rkey, &key, why, sizeof(why)) != 0) {
        stest_fail("start: the owner's %s key does not unpack: %s", what, why);
    }
    key.owner_start += 1;
    forged = *msg;
    uct_gpu_ipc_key_pack(&key, forged.rkey);
    status = test_unpack(ctx, &forged, &remote);
    if (status == UCS_OK) {
        STEST_UCS(uct_rkey_release(ctx->uct.component, &remote.rkey));
    }
    snprintf(why, sizeof(why), "start: unpack of a %s key naming the owner's pid %u with "
             "start time %llu (the owner's + 1)", what, key.owner_pid,
             (unsigned long long)key.owner_start);
    STEST_EXPECT_STATUS(why, UCS_ERR_UNREACHABLE, status);
    test_ok("start: a %s key naming the owner's pid %u with start time %llu (the owner's + 1) "
            "is unreachable", what, key.owner_pid, (unsigned long long)key.owner_start);
}

static void test_peer_vmm(test_ctx_t *ctx, uct_ep_h ep, CUdeviceptr local)
{
    test_msg_t msg = {.type = MSG_VMM};
    test_remote_t remote;
    ucs_status_t status;

    test_send(&msg);
    test_recv(&msg, (test_msg_type_t)-1);
    if (msg.type == MSG_NO_KEY) {
        printf("vmm: skipped, the owner's driver has no exportable VMM memory\n");
        return;
    }
    test_peer_start(ctx, &msg, "VMM");
    status = test_unpack(ctx, &msg, &remote);
    if (status == UCS_ERR_UNREACHABLE) {
        printf("vmm: skipped, unreachable here (pidfd_getfd refused, or import unsupported; "
               "UCX_LOG_LEVEL=debug says which); so the start check of VMM keys proved "
               "nothing\n");
        return;
    }
    STEST_EXPECT_STATUS("vmm: unpack", UCS_OK, status);
    test_peer_get(ctx, ep, &remote, local, "vmm");
    STEST_UCS(uct_rkey_release(ctx->uct.component, &remote.rkey));
}

/* The inflight check's round, and its marks on stderr: there they interleave
 * with the stand-in's trace in the order things happened. */
static int test_inflight_round;

static void test_inflight_mark(const char *what)
{
    fprintf(stderr, "test_gpu_ipc_uct: inflight round %d: %s\n", test_inflight_round, what);
}

static void test_inflight_comp_cb(uct_completion_t *self)
{
    test_inflight_mark("a copy completed");
    stest_uct_comp_cb(self);
}

static void test_inflight_wait(test_ctx_t *ctx, stest_uct_comp_t *comp, const char *what)
{
    stest_uct_wait(&ctx->uct, UCS_INPROGRESS, comp, what);
}

/* A get from `a` and a put into `b` in flight at once, each holding (with
 * the fix) the only reference to its mapping for part of the time. */
static void test_peer_inflight_round(test_ctx_t *ctx, uct_ep_h ep, const test_msg_t *a_msg,
                                     const test_msg_t *b_msg, CUdeviceptr local, size_t size)
{
    test_msg_t msg = {.type = MSG_CHECK_PUT};
    stest_uct_comp_t get_comp, put_comp;
    test_remote_t a, b;
    unsigned seed = 10 + test_inflight_round;

    test_zero_dev(local, size);
    stest_dev_seq_fill(local + size, size, seed);
    STEST_UCS(test_unpack(ctx, a_msg, &a));
    if (test_inflight_round == 2) {
        /* Both mapped: the cache is past its limit of one. */
        STEST_UCS(test_unpack(ctx, b_msg, &b));
    }
    /* Completion callbacks run from progress only: set after the call. */
    STEST_EXPECT_STATUS("inflight: get", UCS_INPROGRESS,
                       test_get(ctx, ep, local, a.addr, size, a.rkey.rkey, &get_comp));
    get_comp.super.func = test_inflight_comp_cb;
    test_inflight_mark("copies queued");
    if (test_inflight_round == 1) {
        /* a's mapping is idle but for the get: mapping b evicts it. */
        STEST_UCS(uct_rkey_release(ctx->uct.component, &a.rkey));
        STEST_UCS(test_unpack(ctx, b_msg, &b));
    }
    STEST_EXPECT_STATUS("inflight: put", UCS_INPROGRESS,
                       test_put(ctx, ep, local + size, b.addr, size, b.rkey.rkey, &put_comp));
    put_comp.super.func = test_inflight_comp_cb;
    if (test_inflight_round == 2) {
        /* Back under the limit: releasing a's rkey would unmap it. */
        STEST_UCS(uct_rkey_release(ctx->uct.component, &a.rkey));
    }
    STEST_UCS(uct_rkey_release(ctx->uct.component, &b.rkey));
    test_inflight_wait(ctx, &get_comp, "inflight: get");
    test_inflight_wait(ctx, &put_comp, "inflight: put");
    stest_dev_seq_check("inflight get", size, local, size, a.seed, 0);
    msg.addr   = 0;
    msg.length = size;
    msg.seed   = seed;
    test_send(&msg);
    test_recv(&msg, MSG_RESULT);
    if (msg.result != 0) {
        stest_fail("inflight put size %zu: owner reads index %" PRIu64 " expected 0x%02x got "
                  "0x%02x", size, msg.result - 1, msg.seed >> 8, msg.seed & 0xff);
    }
}

/* Needs a mapping cache of one entry (--only inflight sets it). */
static void test_peer_inflight(test_ctx_t *ctx, uct_ep_h ep, const test_msg_t *get_msg,
                               const test_msg_t *put_msg, CUdeviceptr local)
{
    size_t size = TEST_MIN(test_max_size, (size_t)1 << 20);

    for (test_inflight_round = 1; test_inflight_round <= 2; ++test_inflight_round) {
        test_peer_inflight_round(ctx, ep, get_msg, put_msg, local, size);
    }
    test_ok("inflight: cache of one mapping, a get and a put through two owner allocations "
            "in flight at once, rkeys released and the first mapping pushed out (by the "
            "second mapping, then by its rkey's release) before they complete: bytes match");
}

static void test_peer_death(test_ctx_t *ctx, uct_ep_h ep, const test_remote_t *remote,
                            CUdeviceptr local, pid_t owner)
{
    test_msg_t msg = {.type = MSG_DIE};
    stest_uct_comp_t comp;
    unsigned long spins;
    int wstatus;

    test_send(&msg);
    if (waitpid(owner, &wstatus, 0) != owner) {
        stest_fail("death: waitpid: %s", strerror(errno));
    }
    STEST_UCS(uct_ep_check(ep, 0, NULL));
    for (spins = 0; (ctx->ep_errors == 0) && (spins < TEST_MAX_SPIN); ++spins) {
        uct_worker_progress(ctx->uct.worker);
    }
    if (ctx->ep_errors != 1) {
        stest_fail("death: error handler called %d times after ep_check", ctx->ep_errors);
    }
    STEST_EXPECT_STATUS("death: error handler status", UCS_ERR_ENDPOINT_TIMEOUT,
                       ctx->ep_error_status);
    if (remote != NULL) {
        STEST_EXPECT_STATUS("death: get from a dead owner", UCS_ERR_ENDPOINT_TIMEOUT,
                           test_get(ctx, ep, local, remote->addr, 16, remote->rkey.rkey, &comp));
    }
    test_ok("death: the owner exited; ep_check reports UCS_ERR_ENDPOINT_TIMEOUT%s",
            (remote != NULL) ? ", a get fails with it" : "");
}

static uct_ep_h test_peer_connect(test_ctx_t *ctx, const uint8_t *dev_addr,
                                  const uint8_t *iface_addr)
{
    uct_ep_h ep;

    if (!uct_iface_is_reachable(ctx->iface, (const uct_device_addr_t *)dev_addr,
                                (const uct_iface_addr_t *)iface_addr)) {
        stest_fail("the owner's interface is not reachable");
    }
    STEST_UCS(stest_uct_ep_create(ctx->iface, dev_addr, iface_addr, &ep));
    return ep;
}

/* --only reset, before the reset: the owner's allocation mapped and cached
 * (its rkey released, nothing else holds the mapping), and the driver hooks
 * installed, which opening a gpu_copy domain does. */
static void test_peer_reset_prepare(test_ctx_t *ctx, uct_ep_h ep, const test_msg_t *get_msg,
                                    CUdeviceptr local)
{
    test_remote_t remote;
    stest_uct_t copy = {.component = ctx->uct.component};

    STEST_UCS(stest_uct_md_open(&copy, "gpu_copy", NULL));
    uct_md_close(copy.md);
    STEST_UCS(test_unpack(ctx, get_msg, &remote));
    test_peer_get(ctx, ep, &remote, local, "reset: before it");
    STEST_UCS(uct_rkey_release(ctx->uct.component, &remote.rkey));
}

/* The device's primary context reset once UCX is closed (as CUDA asks): the
 * cache must unmap the peer's allocation first, which test/ucx/tests.sh
 * reads on the stand-in's trace between this mark on stderr and the reset. */
static void test_peer_reset(void)
{
    CUdevice dev;

    STEST_CU(cuDeviceGet(&dev, 0));
    fprintf(stderr, "test_gpu_ipc_uct: reset: resetting device 0's primary context\n");
    STEST_CU(cuDevicePrimaryCtxReset(dev));
    test_ok("reset: device 0's primary context reset with a peer's allocation still cached");
}

/* --only CHECK: the peer runs that check alone, then death. */
static int test_peer_only(test_ctx_t *ctx, uct_ep_h ep, const char *only,
                          const test_msg_t *get_msg, const test_msg_t *put_msg, pid_t owner)
{
    test_remote_t get_remote;
    CUdeviceptr local;

    STEST_CU(cuMemAlloc(&local, TEST_OWNER_SIZE + 4096));
    if (!strcmp(only, "start")) {
        test_peer_start(ctx, get_msg, "legacy");
        STEST_UCS(test_unpack(ctx, get_msg, &get_remote));
        test_peer_get(ctx, ep, &get_remote, local, "start: the owner's real legacy key");
        STEST_UCS(uct_rkey_release(ctx->uct.component, &get_remote.rkey));
        test_peer_vmm(ctx, ep, local);
    } else if (!strcmp(only, "reset")) {
        test_peer_reset_prepare(ctx, ep, get_msg, local);
    } else {
        test_peer_inflight(ctx, ep, get_msg, put_msg, local);
    }
    test_peer_death(ctx, ep, NULL, 0, owner);
    uct_ep_destroy(ep);
    test_close(ctx);
    STEST_CU(cuMemFree(local));
    if (!strcmp(only, "reset")) {
        test_peer_reset();
    }
    printf("test_gpu_ipc_uct: all checks passed\n");
    return 0;
}

static int test_peer(pid_t owner, int expect_unreachable, const char *only)
{
    uint8_t dev_addr[TEST_ADDR_MAX], iface_addr[TEST_ADDR_MAX];
    test_remote_t get_remote, put_remote;
    test_msg_t get_msg, put_msg;
    test_ctx_t ctx, pctx;
    CUdeviceptr local;
    uct_ep_h ep, pep;
    ucs_status_t status;

    test_cuda_init();
    if (!test_open(&ctx, "inf")) {
        printf("test_gpu_ipc_uct: no gpu_ipc transport here (no device, or the plugin not "
               "loaded): skipped\n");
        kill(owner, SIGKILL);
        return 77;
    }
    test_exchange_addresses(&ctx, dev_addr, iface_addr);
    ep = test_peer_connect(&ctx, dev_addr, iface_addr);
    test_ok("connect: the owner (pid %d) is reachable, ep created", (int)owner);

    test_recv(&get_msg, MSG_KEY);
    test_recv(&put_msg, MSG_KEY);
    if (only != NULL) {
        return test_peer_only(&ctx, ep, only, &get_msg, &put_msg, owner);
    }
    if (!expect_unreachable) {
        test_peer_start(&ctx, &get_msg, "legacy");
    }
    status = test_unpack(&ctx, &get_msg, &get_remote);
    if (expect_unreachable) {
        STEST_EXPECT_STATUS("unpack when the driver refuses to open handles",
                           UCS_ERR_UNREACHABLE, status);
        test_ok("unreachable: a handle the driver cannot open makes the key unreachable");
        test_peer_death(&ctx, ep, NULL, 0, owner);
        return 0;
    }
    STEST_EXPECT_STATUS("unpack", UCS_OK, status);
    STEST_UCS(test_unpack(&ctx, &put_msg, &put_remote));
    STEST_CU(cuMemAlloc(&local, TEST_OWNER_SIZE + 4096));

    test_peer_get(&ctx, ep, &get_remote, local, "get");
    test_peer_put(&ctx, ep, &put_remote, local);
    test_peer_many(&ctx, ep, &get_remote, local);
    test_peer_range(&ctx, ep, &get_remote, local);
    test_peer_corrupt(&ctx, &get_msg);
    test_peer_own(&ctx, local);

    /* A second interface in the same process shares the mapping cache. */
    if (!test_open(&pctx, "2")) {
        stest_fail("second gpu_ipc interface");
    }
    pep = test_peer_connect(&pctx, dev_addr, iface_addr);
    test_peer_pending(&pctx, pep, &get_remote, local);
    uct_ep_destroy(pep);
    test_close(&pctx);

    test_peer_stale(&ctx, ep, &get_remote, local);
    test_peer_none(&ctx);
    test_peer_vmm(&ctx, ep, local);
    test_peer_death(&ctx, ep, &get_remote, local, owner);

    STEST_UCS(uct_rkey_release(ctx.uct.component, &get_remote.rkey));
    STEST_UCS(uct_rkey_release(ctx.uct.component, &put_remote.rkey));
    uct_ep_destroy(ep);
    test_close(&ctx);
    STEST_CU(cuMemFree(local));
    printf("test_gpu_ipc_uct: all checks passed\n");
    return 0;
}

int main(int argc, char **argv)
{
    int expect_unreachable = 0;
    const char *only       = NULL;
    int sv[2], i;
    pid_t pid;

    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--expect-unreachable")) {
            expect_unreachable = 1;
        } else if (!strcmp(argv[i], "--max-size") && (i + 1 < argc)) {
            test_max_size = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--only") && (i + 1 < argc) &&
                   (!strcmp(argv[i + 1], "start") || !strcmp(argv[i + 1], "inflight") ||
                    !strcmp(argv[i + 1], "reset"))) {
            only = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: %s [--expect-unreachable] [--max-size BYTES] "
                    "[--only start|inflight|reset]\n",
                    argv[0]);
            return 2;
        }
    }
    if ((only != NULL) && !strcmp(only, "inflight")) {
        test_cache_size = "1";
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        stest_fail("socketpair: %s", strerror(errno));
    }
    /* Before any CUDA call: a CUDA context does not survive fork. */
    pid = fork();
    if (pid < 0) {
        stest_fail("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(sv[0]);
        test_sock = sv[1];
        return test_owner();
    }
    close(sv[1]);
    test_sock = sv[0];
    return test_peer(pid, expect_unreachable, only);
}
