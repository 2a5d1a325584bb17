/*
 * The gpu_copy transport through UCT's public API, in one process: opens the
 * "gpu_copy" memory domain of component "strata" and its interface on gpu0,
 * connects an endpoint to its own interface (as UCP's memory-type endpoints
 * do) and copies between host buffers and cuMemAlloc'ed device buffers:
 *
 *   test_gpu_copy_uct [--max-size BYTES]
 *
 *   short    put_short host->device, get_short device->host
 *   zcopy    put_zcopy host->device, get_zcopy device->host, device->device,
 *            each completed through progress
 *   offsets  the same at odd offsets into the buffers
 *   many     64 copies in flight in both directions, then a flush with a
 *            completion; every completion called once, in posting order
 *            within a direction
 *   fence    host->device, fence, device->host of the same bytes
 *   pending  MAX_EVENTS=2: the third copy is refused, waits in the pending
 *            queue and runs from progress; purge removes a request.  With
 *            UCX >= 1.16, whose protocols cannot wait for a refused
 *            memory-type copy, MAX_EVENTS is a soft limit: 8 copies all go
 *            in flight, pending_add answers BUSY, every byte arrives
 *   idle     an idle interface's progress callback leaves the worker (after
 *            64 calls that found nothing) and comes back when a copy is
 *            posted, which completes; with progress disabled by the user
 *            it stays off, and uct_iface_progress still completes the copy
 *   thread   first copy of a new interface from a thread with no CUDA context
 *   errors   a range past the end of a device allocation fails with an error
 *            status, never a crash; an address of another process is
 *            unreachable
 *   close    closing an interface with a copy in flight (a warning is
 *            expected)
 *
 * Sizes: 0, 1, 3, 4095, 65537, 1 MiB + 7 and 64 MiB (capped by --max-size).
 * Device memory is filled and checked with cuMemcpyHtoD/cuMemcpyDtoH only,
 * so the program is correct on a real GPU.  One line per check; the first
 * wrong byte prints the check, size, index, expected and got, and exits 1.
 * Exit 77: no CUDA device or no gpu_copy transport.
 *
 * Build (the driver from the toolkit's link stub; at run time the CUDA
 * stand-in or the real driver, first on LD_LIBRARY_PATH), from test/, with
 * the helpers of test/common/ (the UCT harness, device patterns):
 *   gcc -O2 -I/usr/local/cuda/include -Icommon ucx/test_gpu_copy_uct.c common/stest_uct.c \
 *       common/stest_cuda.c common/stest_pattern.c -o test_gpu_copy_uct \
 *       -luct -lucs -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 * Run (UCX 1.13 loads the plugin only when preloaded):
 *   LD_PRELOAD=.../libuct_strata.so LD_LIBRARY_PATH=<libcuda.so.1 dir> ./test_gpu_copy_uct
 */
#include "stest_cuda.h"
#include "stest_fail.h"
#include "stest_pattern.h"
#include "stest_uct.h"

#include <uct/api/version.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_ADDR_MAX 64

typedef struct test_iface {
    uct_iface_h iface;
    uct_ep_h ep;
} test_iface_t;

void stest_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stdout, "test_gpu_copy_uct: FAIL: ");
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
    exit(1);
}

/* ---- UCT plumbing ---- */

static void test_check_attr(uct_iface_h iface)
{
    uint64_t need = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_SHORT |
                    UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                    UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    uct_iface_attr_t attr;

    STEST_UCS(uct_iface_query(iface, &attr));
    if ((attr.cap.flags & need) != need) {
        stest_fail("capabilities: expected flags 0x%" PRIx64 " got 0x%" PRIx64, need,
                   attr.cap.flags);
    }
    if ((attr.cap.put.max_iov != 1) || (attr.cap.get.max_iov != 1)) {
        stest_fail("max_iov: expected 1 got put %zu get %zu", attr.cap.put.max_iov,
                   attr.cap.get.max_iov);
    }
    printf("caps: ok (latency %.1f us, bandwidth %.0f MB/s, overhead %.1f us)\n",
           attr.latency.c * 1e6, attr.bandwidth.shared / (1 << 20), attr.overhead * 1e6);
}

/* An endpoint to the interface's own address, as UCP's loopback. */
static ucs_status_t test_connect(uct_iface_h iface, uct_ep_h *ep_p, int corrupt)
{
    uint8_t dev_addr[TEST_ADDR_MAX], iface_addr[TEST_ADDR_MAX];

    stest_uct_iface_addresses(iface, dev_addr, iface_addr, TEST_ADDR_MAX);
    if (corrupt) {
        /* another process's interface: a different process id */
        iface_addr[0] ^= 0x5a;
    }
    if (uct_iface_is_reachable(iface, (uct_device_addr_t *)dev_addr,
                               (uct_iface_addr_t *)iface_addr) == corrupt) {
        stest_fail("%s address: expected %s got the opposite", corrupt ? "foreign" : "own",
                   corrupt ? "unreachable" : "reachable");
    }
    return stest_uct_ep_create(iface, dev_addr, iface_addr, ep_p);
}

/* An interface with an endpoint connected to itself; `settings` are
 * UCX_GPU_COPY_* overrides, NAME, VALUE pairs, NULL-terminated. */
static void test_open_iface(stest_uct_t *ctx, test_iface_t *t, const char **settings)
{
    t->iface = stest_uct_iface_open(ctx, "gpu_copy", settings, NULL, NULL);
    STEST_UCS(test_connect(t->iface, &t->ep, 0));
}

static void test_close_iface(test_iface_t *t)
{
    uct_ep_destroy(t->ep);
    uct_iface_close(t->iface);
}

/* ---- copies ---- */

/* Loopback copies: the device address is the remote one, no rkey. */
static ucs_status_t test_put_zcopy(test_iface_t *t, const void *src, CUdeviceptr dst, size_t len,
                                   stest_uct_comp_t *comp)
{
    return stest_uct_put_zcopy(t->ep, src, len, (uint64_t)dst, UCT_INVALID_RKEY, comp);
}

static ucs_status_t test_get_zcopy(test_iface_t *t, void *dst, CUdeviceptr src, size_t len,
                                   stest_uct_comp_t *comp)
{
    return stest_uct_get_zcopy(t->ep, dst, len, (uint64_t)src, UCT_INVALID_RKEY, comp);
}

/* short, zcopy and device->device copies of `size` bytes at `offset`. */
static void test_size(stest_uct_t *ctx, test_iface_t *t, size_t size, size_t offset)
{
    size_t alloc = size + offset + 1;
    uint8_t *host_src = malloc(alloc), *host_dst = malloc(alloc);
    CUdeviceptr dev, dev2;
    stest_uct_comp_t comp;
    char what[64];

    if ((host_src == NULL) || (host_dst == NULL)) {
        stest_fail("out of memory for %zu bytes", alloc);
    }
    STEST_CU(cuMemAlloc(&dev, alloc));
    STEST_CU(cuMemAlloc(&dev2, alloc));

    if (size <= UINT32_MAX) {
        snprintf(what, sizeof(what), "put_short h->d +%zu", offset);
        stest_seq_fill(host_src + offset, size, 1);
        STEST_UCS(uct_ep_put_short(t->ep, host_src + offset, (unsigned)size,
                                  (uint64_t)(dev + offset), UCT_INVALID_RKEY));
        stest_dev_seq_check(what, size, dev + offset, size, 1, 0);
        printf("%s %zu: ok\n", what, size);

        snprintf(what, sizeof(what), "get_short d->h +%zu", offset);
        memset(host_dst, 0, alloc);
        STEST_UCS(uct_ep_get_short(t->ep, host_dst + offset, (unsigned)size,
                                  (uint64_t)(dev + offset), UCT_INVALID_RKEY));
        stest_seq_check(what, size, host_dst + offset, size, 1, 0);
        printf("%s %zu: ok\n", what, size);
    }

    snprintf(what, sizeof(what), "put_zcopy h->d +%zu", offset);
    stest_seq_fill(host_src + offset, size, 2);
    stest_uct_wait(ctx, test_put_zcopy(t, host_src + offset, dev + offset, size, &comp), &comp, what);
    stest_dev_seq_check(what, size, dev + offset, size, 2, 0);
    printf("%s %zu: ok\n", what, size);

    snprintf(what, sizeof(what), "get_zcopy d->h +%zu", offset);
    stest_dev_seq_fill(dev + offset, size, 3);
    memset(host_dst, 0, alloc);
    stest_uct_wait(ctx, test_get_zcopy(t, host_dst + offset, dev + offset, size, &comp), &comp, what);
    stest_seq_check(what, size, host_dst + offset, size, 3, 0);
    printf("%s %zu: ok\n", what, size);

    /* device->device: get_zcopy into a device "local" buffer. */
    snprintf(what, sizeof(what), "get_zcopy d->d +%zu", offset);
    stest_dev_seq_fill(dev2, alloc, 9);
    stest_uct_wait(ctx, test_get_zcopy(t, (void *)(dev2 + offset), dev + offset, size, &comp), &comp,
              what);
    stest_dev_seq_check(what, size, dev2 + offset, size, 3, 0);
    printf("%s %zu: ok\n", what, size);

    STEST_CU(cuMemFree(dev));
    STEST_CU(cuMemFree(dev2));
    free(host_src);
    free(host_dst);
}

#define TEST_MANY     64
#define TEST_MANY_LEN 4096

/* Many copies in flight in both directions, then a flush with completion. */
static void test_many(stest_uct_t *ctx, test_iface_t *t)
{
    static stest_uct_comp_t comps[TEST_MANY];
    uint8_t *host = malloc(TEST_MANY * TEST_MANY_LEN);
    uint8_t *back = calloc(TEST_MANY, TEST_MANY_LEN);
    stest_uct_comp_t flush_comp;
    CUdeviceptr dev, dev_src;
    ucs_status_t status;
    int i, prev_h2d = -1, prev_d2h = -1;

    STEST_CU(cuMemAlloc(&dev, TEST_MANY * TEST_MANY_LEN));
    STEST_CU(cuMemAlloc(&dev_src, TEST_MANY * TEST_MANY_LEN));
    stest_seq_fill(host, TEST_MANY * TEST_MANY_LEN, 4);
    stest_dev_seq_fill(dev_src, TEST_MANY * TEST_MANY_LEN, 5);
    for (i = 0; i < TEST_MANY; ++i) {
        size_t off = (size_t)i * TEST_MANY_LEN;

        status = (i % 2) ? test_get_zcopy(t, back + off, dev_src + off, TEST_MANY_LEN, &comps[i]) :
                           test_put_zcopy(t, host + off, dev + off, TEST_MANY_LEN, &comps[i]);
        if (status != UCS_INPROGRESS) {
            stest_fail("many: copy %d expected INPROGRESS got %s", i, ucs_status_string(status));
        }
    }
    status = uct_iface_flush(t->iface, 0, NULL);
    if (status != UCS_INPROGRESS) {
        stest_fail("many: iface flush expected INPROGRESS got %s", ucs_status_string(status));
    }
    stest_uct_comp_init(&flush_comp);
    status = uct_ep_flush(t->ep, 0, &flush_comp.super);
    if (status != UCS_INPROGRESS) {
        stest_fail("many: ep flush expected INPROGRESS got %s", ucs_status_string(status));
    }
    stest_uct_progress_until(ctx, &flush_comp.calls, "many: flush");
    for (i = 0; i < TEST_MANY; ++i) {
        int *prev = (i % 2) ? &prev_d2h : &prev_h2d;

        if ((comps[i].calls != 1) || (comps[i].status != UCS_OK)) {
            stest_fail("many: copy %d: completion called %d times (expected 1), status %s", i,
                      comps[i].calls, ucs_status_string(comps[i].status));
        }
        if (comps[i].order > flush_comp.order) {
            stest_fail("many: copy %d completed after the flush", i);
        }
        if (comps[i].order < *prev) {
            stest_fail("many: copy %d completed before an earlier copy of its direction", i);
        }
        *prev = comps[i].order;
    }
    for (i = 0; i < TEST_MANY; ++i) {
        size_t off = (size_t)i * TEST_MANY_LEN;

        if (i % 2) {
            stest_seq_check("many d->h", TEST_MANY_LEN, back + off, TEST_MANY_LEN, 5, off);
        } else {
            stest_dev_seq_check("many h->d", TEST_MANY_LEN, dev + off, TEST_MANY_LEN, 4, off);
        }
    }
    STEST_UCS(uct_iface_flush(t->iface, 0, NULL));
    printf("many: %d copies in flight, flush with completion: ok\n", TEST_MANY);
    STEST_CU(cuMemFree(dev));
    STEST_CU(cuMemFree(dev_src));
    free(host);
    free(back);
}

/* A fence orders a device->host copy after the host->device copy before it,
 * although the two directions run on different streams. */
static void test_fence(stest_uct_t *ctx, test_iface_t *t)
{
    size_t len    = 1 << 20;
    uint8_t *src  = malloc(len), *dst = calloc(1, len);
    stest_uct_comp_t put_comp, get_comp;
    CUdeviceptr dev;

    STEST_CU(cuMemAlloc(&dev, len));
    stest_dev_seq_fill(dev, len, 7);
    stest_seq_fill(src, len, 6);
    if (test_put_zcopy(t, src, dev, len, &put_comp) != UCS_INPROGRESS) {
        stest_fail("fence: put_zcopy did not go in flight");
    }
    STEST_UCS(uct_ep_fence(t->ep, 0));
    if (test_get_zcopy(t, dst, dev, len, &get_comp) != UCS_INPROGRESS) {
        stest_fail("fence: get_zcopy did not go in flight");
    }
    stest_uct_wait(ctx, UCS_INPROGRESS, &get_comp, "fence: get");
    stest_uct_wait(ctx, UCS_INPROGRESS, &put_comp, "fence: put");
    stest_seq_check("fence: d->h after h->d", len, dst, len, 6, 0);
    printf("fence: h->d zcopy, fence, d->h zcopy of the same bytes: ok\n");

    /* The short copy runs at once on its own stream: only the fence makes
     * it wait for the zero-copy operation still queued. */
    stest_seq_fill(src, len, 12);
    memset(dst, 0, len);
    if (test_put_zcopy(t, src, dev, len, &put_comp) != UCS_INPROGRESS) {
        stest_fail("fence: put_zcopy did not go in flight");
    }
    STEST_UCS(uct_ep_fence(t->ep, 0));
    STEST_UCS(uct_ep_get_short(t->ep, dst, (unsigned)len, (uint64_t)dev, UCT_INVALID_RKEY));
    stest_seq_check("fence: d->h short after h->d zcopy", len, dst, len, 12, 0);
    stest_uct_wait(ctx, UCS_INPROGRESS, &put_comp, "fence: put");
    printf("fence: h->d zcopy, fence, d->h short of the same bytes: ok\n");
    STEST_CU(cuMemFree(dev));
    free(src);
    free(dst);
}

typedef struct test_pending {
    uct_pending_req_t super; /* first: the callback casts back */
    test_iface_t *t;
    const void *src;
    CUdeviceptr dst;
    size_t len;
    int calls;
    ucs_status_t status;
    stest_uct_comp_t comp;
} test_pending_t;

static ucs_status_t test_pending_cb(uct_pending_req_t *self)
{
    test_pending_t *req = (test_pending_t *)self;

    req->calls++;
    req->status = test_put_zcopy(req->t, req->src, req->dst, req->len, &req->comp);
    return (req->status == UCS_ERR_NO_RESOURCE) ? UCS_ERR_NO_RESOURCE : UCS_OK;
}

#if UCT_API >= UCT_VERSION(1, 16)

/* MAX_EVENTS=2 is a soft limit: no copy is refused, none waits as pending. */
static void test_pending(stest_uct_t *ctx)
{
    static const char *settings[] = {"MAX_EVENTS", "2", NULL};
    enum { count = 8 };
    size_t len = 65536;
    uint8_t *src = malloc(count * len);
    stest_uct_comp_t comps[count];
    test_pending_t req = {0};
    ucs_status_t status;
    test_iface_t t;
    CUdeviceptr dev;
    int i;

    test_open_iface(ctx, &t, settings);
    STEST_CU(cuMemAlloc(&dev, count * len));
    stest_seq_fill(src, count * len, 8);
    for (i = 0; i < count; ++i) {
        status = test_put_zcopy(&t, src + i * len, dev + i * len, len, &comps[i]);
        if (status != UCS_INPROGRESS) {
            stest_fail("pending: MAX_EVENTS=2 is soft with UCX %s: copy %d expected INPROGRESS "
                       "got %s",
                       UCT_VERNO_STRING, i, ucs_status_string(status));
        }
    }
    req.super.func = test_pending_cb;
    status = uct_ep_pending_add(t.ep, &req.super, 0);
    if (status != UCS_ERR_BUSY) {
        stest_fail("pending: pending_add with %d copies in flight expected BUSY got %s", count,
                   ucs_status_string(status));
    }
    for (i = 0; i < count; ++i) {
        stest_uct_wait(ctx, UCS_INPROGRESS, &comps[i], "pending: soft limit copy");
    }
    stest_dev_seq_check("pending: 8 copies", count * len, dev, count * len, 8, 0);
    printf("pending: MAX_EVENTS=2 is a soft limit with UCX %s: %d copies in flight, "
           "pending_add BUSY, all bytes arrived: ok\n",
           UCT_VERNO_STRING, count);
    STEST_CU(cuMemFree(dev));
    test_close_iface(&t);
    free(src);
}

#else

static int test_purged;

static void test_purge_cb(uct_pending_req_t *self, void *arg)
{
    ++test_purged;
}

/* MAX_EVENTS=2: a third copy is refused and goes through the pending queue. */
static void test_pending(stest_uct_t *ctx)
{
    static const char *settings[] = {"MAX_EVENTS", "2", NULL};
    size_t len = 65536;
    uint8_t *src = malloc(3 * len);
    test_pending_t req = {0}, other = {0};
    stest_uct_comp_t comps[2];
    test_iface_t t;
    uct_ep_h ep2;
    CUdeviceptr dev;
    int i;

    test_open_iface(ctx, &t, settings);
    STEST_UCS(test_connect(t.iface, &ep2, 0));
    STEST_CU(cuMemAlloc(&dev, 3 * len));
    stest_seq_fill(src, 3 * len, 8);
    for (i = 0; i < 2; ++i) {
        if (test_put_zcopy(&t, src + i * len, dev + i * len, len, &comps[i]) != UCS_INPROGRESS) {
            stest_fail("pending: copy %d did not go in flight", i);
        }
    }
    req.status = test_put_zcopy(&t, src + 2 * len, dev + 2 * len, len, &req.comp);
    if (req.status != UCS_ERR_NO_RESOURCE) {
        stest_fail("pending: third copy expected NO_RESOURCE got %s", ucs_status_string(req.status));
    }
    req.super.func = test_pending_cb;
    req.t          = &t;
    req.src        = src + 2 * len;
    req.dst        = dev + 2 * len;
    req.len        = len;
    STEST_UCS(uct_ep_pending_add(t.ep, &req.super, 0));
    other.super.func = test_pending_cb;
    STEST_UCS(uct_ep_pending_add(ep2, &other.super, 0));
    if (uct_ep_flush(t.ep, 0, NULL) != UCS_ERR_NO_RESOURCE) {
        stest_fail("pending: ep flush with a pending request expected NO_RESOURCE");
    }
    uct_ep_pending_purge(ep2, test_purge_cb, NULL);
    if ((test_purged != 1) || (other.calls != 0)) {
        stest_fail("pending: purge expected 1 request removed got %d (%d run)", test_purged,
                  other.calls);
    }
    stest_uct_progress_until(ctx, &req.calls, "pending: dispatch");
    stest_uct_wait(ctx, req.status, &req.comp, "pending: dispatched copy");
    stest_uct_wait(ctx, UCS_INPROGRESS, &comps[0], "pending: copy 0");
    stest_uct_wait(ctx, UCS_INPROGRESS, &comps[1], "pending: copy 1");
    stest_dev_seq_check("pending: 3 copies", 3 * len, dev, 3 * len, 8, 0);
    printf("pending: MAX_EVENTS=2, third copy queued, dispatched by progress; purge: ok\n");
    STEST_CU(cuMemFree(dev));
    uct_ep_destroy(ep2);
    test_close_iface(&t);
    free(src);
}

#endif

typedef struct test_thread_arg {
    stest_uct_t *ctx;
    test_iface_t *t;
    uint8_t *src, *dst;
    CUdeviceptr dev;
    size_t len;
    int had_ctx;
} test_thread_arg_t;

/* ---- progress registration ---- */

/* ucx_tl/base/gpu_base_iface.c: UCT_GPU_BASE_IFACE_IDLE_POLLS */
#define TEST_IDLE_POLLS 64

/* How many of the worker's fast-path callbacks are the interface's. */
static int test_iface_callbacks(const stest_uct_t *ctx, uct_iface_h iface)
{
    const ucs_callbackq_elem_t *elem;
    int count = 0;

    for (elem = ctx->worker->progress_q.fast_elems; elem->cb != NULL; ++elem) {
        count += (elem->arg == (void *)iface);
    }
    return count;
}

static void test_idle_poll(const stest_uct_t *ctx, int calls)
{
    while (calls-- > 0) {
        uct_worker_progress(ctx->worker);
    }
}

static void test_idle(stest_uct_t *ctx, test_iface_t *t)
{
    uint8_t host[4096];
    stest_uct_comp_t comp;
    ucs_status_t status;
    CUdeviceptr dev;
    int round;

    STEST_CU(cuMemAlloc(&dev, sizeof(host)));
    for (round = 0; round < 2; ++round) {
        /* (UCX removes a callback lazily: at the next dispatch.) */
        test_idle_poll(ctx, TEST_IDLE_POLLS + 2);
        if (test_iface_callbacks(ctx, t->iface) != 0) {
            stest_fail("idle: the progress callback is still on the worker after %d idle calls",
                       TEST_IDLE_POLLS + 2);
        }
        stest_seq_fill(host, sizeof(host), 20 + round);
        stest_uct_wait(ctx, test_put_zcopy(t, host, dev, sizeof(host), &comp), &comp,
                       "idle: put_zcopy");
        stest_dev_seq_check("idle: put_zcopy", sizeof(host), dev, sizeof(host), 20 + round, 0);
        printf("idle %d: callback off the worker, then a copy posted and completed: ok\n", round);
    }

    /* Progress the user turned off stays off; the user drives the copy. */
    test_idle_poll(ctx, TEST_IDLE_POLLS + 2);
    uct_iface_progress_disable(t->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    stest_seq_fill(host, sizeof(host), 30);
    status = test_put_zcopy(t, host, dev, sizeof(host), &comp);
    if (status == UCS_INPROGRESS) {
        test_idle_poll(ctx, 4);
        if (test_iface_callbacks(ctx, t->iface) != 0) {
            stest_fail("idle: a copy put the callback on the worker with progress disabled");
        }
        while (comp.calls == 0) {
            uct_iface_progress(t->iface);
        }
    }
    stest_uct_wait(ctx, status, &comp, "idle: put_zcopy, progress disabled");
    stest_dev_seq_check("idle: put_zcopy, progress disabled", sizeof(host), dev, sizeof(host), 30,
                        0);
    uct_iface_progress_enable(t->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    test_idle_poll(ctx, 1);
    if (test_iface_callbacks(ctx, t->iface) != 1) {
        stest_fail("idle: progress enabled again, but %d callbacks are on the worker",
                   test_iface_callbacks(ctx, t->iface));
    }
    printf("idle: progress disabled by the user stays off: ok\n");
    STEST_CU(cuMemFree(dev));
}

static void *test_thread_run(void *p)
{
    test_thread_arg_t *arg = p;
    stest_uct_comp_t comp;
    CUcontext cuctx = NULL;

    cuCtxGetCurrent(&cuctx);
    arg->had_ctx = (cuctx != NULL);
    STEST_UCS(uct_ep_put_short(arg->t->ep, arg->src, (unsigned)arg->len, (uint64_t)arg->dev,
                              UCT_INVALID_RKEY));
    stest_uct_wait(arg->ctx, test_get_zcopy(arg->t, arg->dst, arg->dev, arg->len, &comp), &comp,
              "thread: get_zcopy");
    return NULL;
}

/* A new interface's first copies from a thread that never touched CUDA. */
static void test_thread(stest_uct_t *ctx)
{
    test_thread_arg_t arg = {.ctx = ctx, .len = 100003};
    test_iface_t t;
    pthread_t thread;

    test_open_iface(ctx, &t, NULL);
    arg.t   = &t;
    arg.src = malloc(arg.len);
    arg.dst = calloc(1, arg.len);
    STEST_CU(cuMemAlloc(&arg.dev, arg.len));
    stest_seq_fill(arg.src, arg.len, 10);
    if (pthread_create(&thread, NULL, test_thread_run, &arg) != 0) {
        stest_fail("thread: pthread_create");
    }
    pthread_join(thread, NULL);
    if (arg.had_ctx) {
        stest_fail("thread: expected a thread without CUDA context, it had one");
    }
    stest_dev_seq_check("thread: put_short", arg.len, arg.dev, arg.len, 10, 0);
    stest_seq_check("thread: get_zcopy", arg.len, arg.dst, arg.len, 10, 0);
    printf("thread: copies from a thread with no CUDA context: ok\n");
    STEST_CU(cuMemFree(arg.dev));
    test_close_iface(&t);
    free(arg.src);
    free(arg.dst);
}

/* Bad ranges fail with a status; another process's address is unreachable. */
static void test_errors(stest_uct_t *ctx, test_iface_t *t)
{
    size_t len = 4096;
    uint8_t buf[64] = {0};
    stest_uct_comp_t comp;
    ucs_status_t status;
    CUdeviceptr dev;
    uct_ep_h ep;

    STEST_CU(cuMemAlloc(&dev, len));
    status = test_put_zcopy(t, buf, dev + len - 8, sizeof(buf), &comp);
    if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        stest_fail("errors: put_zcopy past the allocation expected an error got %s",
                  ucs_status_string(status));
    }
    printf("errors: put_zcopy past the end of an allocation: %s: ok\n", ucs_status_string(status));
    status = test_get_zcopy(t, buf, dev + len - 8, sizeof(buf), &comp);
    if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        stest_fail("errors: get_zcopy past the allocation expected an error got %s",
                  ucs_status_string(status));
    }
    printf("errors: get_zcopy past the end of an allocation: %s: ok\n", ucs_status_string(status));
    /* Short copies are not range-checked by gpu_copy (that would cost every
     * pack a driver query); the driver decides: the stand-in refuses, a real
     * GPU may accept bytes within the allocation's page.  No crash is the
     * check. */
    status = uct_ep_put_short(t->ep, buf, sizeof(buf), (uint64_t)(dev + len - 8),
                              UCT_INVALID_RKEY);
    printf("errors: put_short past the end of an allocation: %s: ok (no crash)\n",
           ucs_status_string(status));
    STEST_UCS(uct_iface_flush(t->iface, 0, NULL));
    STEST_CU(cuMemFree(dev));

    status = test_connect(t->iface, &ep, 1);
    if (status == UCS_OK) {
        stest_fail("errors: endpoint to another process's address expected an error got OK");
    }
    printf("errors: endpoint to another process: %s: ok\n", ucs_status_string(status));
}

/* Closing with a copy in flight waits for it and does not crash. */
static void test_close_busy(stest_uct_t *ctx)
{
    size_t len   = 1 << 20;
    uint8_t *src = malloc(len);
    stest_uct_comp_t comp;
    test_iface_t t;
    CUdeviceptr dev;

    test_open_iface(ctx, &t, NULL);
    STEST_CU(cuMemAlloc(&dev, len));
    stest_seq_fill(src, len, 11);
    if (test_put_zcopy(&t, src, dev, len, &comp) != UCS_INPROGRESS) {
        stest_fail("close: put_zcopy did not go in flight");
    }
    printf("close: closing an interface with a copy in flight (a warning is expected)\n");
    test_close_iface(&t);
    stest_dev_seq_check("close: copy in flight at close", len, dev, len, 11, 0);
    if (comp.calls != 0) {
        stest_fail("close: expected no completion call got %d", comp.calls);
    }
    printf("close: copy finished before close returned, no completion called: ok\n");
    STEST_CU(cuMemFree(dev));
    free(src);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 1, 3, 4095, 65537, (1 << 20) + 7, 64 << 20};
    size_t max_size = 64 << 20;
    stest_uct_t ctx = {0};
    test_iface_t t;
    stest_dev_t dev;
    unsigned i;

    if ((argc == 3) && !strcmp(argv[1], "--max-size")) {
        max_size = strtoull(argv[2], NULL, 0);
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--max-size BYTES]\n", argv[0]);
        return 2;
    }
    if (stest_dev_open(0, &dev) != 0) {
        printf("test_gpu_copy_uct: SKIP: no CUDA device\n");
        return 77;
    }
    stest_uct_worker_create(&ctx);
    if (!stest_uct_find_component(&ctx, "strata")) {
        printf("test_gpu_copy_uct: SKIP: no UCT component 'strata' (LD_PRELOAD libuct_strata.so)\n");
        return 77;
    }
    STEST_UCS(stest_uct_md_open(&ctx, "gpu_copy", NULL));
    if (!stest_uct_find_device(&ctx, "gpu_copy")) {
        printf("test_gpu_copy_uct: SKIP: memory domain gpu_copy has no gpu_copy device\n");
        return 77;
    }
    printf("gpu_copy on %s\n", ctx.dev_name);
    test_open_iface(&ctx, &t, NULL);
    test_check_attr(t.iface);

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        if (sizes[i] > max_size) {
            continue;
        }
        test_size(&ctx, &t, sizes[i], 0);
        if (sizes[i] <= (1 << 20)) {
            test_size(&ctx, &t, sizes[i], 3);
        }
    }
    test_many(&ctx, &t);
    test_fence(&ctx, &t);
    test_pending(&ctx);
    test_idle(&ctx, &t);
    test_thread(&ctx);
    test_errors(&ctx, &t);
    test_close_busy(&ctx);

    STEST_UCS(uct_iface_flush(t.iface, 0, NULL));
    test_close_iface(&t);
    uct_md_close(ctx.md);
    stest_uct_worker_destroy(&ctx);
    printf("test_gpu_copy_uct: all checks passed\n");
    return 0;
}
