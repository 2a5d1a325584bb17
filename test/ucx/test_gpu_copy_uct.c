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
 *            queue and runs from progress; purge removes a request
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
 * stand-in or the real driver, first on LD_LIBRARY_PATH):
 *   gcc -O2 -I/usr/local/cuda/include test_gpu_copy_uct.c -o test_gpu_copy_uct \
 *       -luct -lucs -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 * Run (UCX 1.13 loads the plugin only when preloaded):
 *   LD_PRELOAD=.../libuct_strata.so LD_LIBRARY_PATH=<libcuda.so.1 dir> ./test_gpu_copy_uct
 */
#include <cuda.h>
#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_MAX_SPIN 100000000UL

typedef struct test_ctx {
    uct_component_h component;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_md_h md;
    char dev_name[UCT_DEVICE_NAME_MAX];
} test_ctx_t;

typedef struct test_iface {
    uct_iface_h iface;
    uct_ep_h ep;
} test_iface_t;

typedef struct test_comp {
    uct_completion_t super; /* first: the callback casts back */
    int calls;
    int order;
    ucs_status_t status;
} test_comp_t;

static int test_comp_counter;

static void test_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void test_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stdout, "test_gpu_copy_uct: FAIL: ");
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
    exit(1);
}

#define TEST_CU(_call) \
    do { \
        CUresult _res = (_call); \
        if (_res != CUDA_SUCCESS) { \
            const char *_name = NULL; \
            cuGetErrorName(_res, &_name); \
            test_fail("%s: %s", #_call, _name ? _name : "?"); \
        } \
    } while (0)

#define TEST_UCS(_call) \
    do { \
        ucs_status_t _status = (_call); \
        if (_status != UCS_OK) { \
            test_fail("%s: %s", #_call, ucs_status_string(_status)); \
        } \
    } while (0)

/* ---- buffers ---- */

static uint8_t test_pattern(unsigned seed, size_t i)
{
    return (uint8_t)(i * 131 + seed * 29 + (i >> 11) + 1);
}

static void test_fill(uint8_t *buf, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = test_pattern(seed, i);
    }
}

/* buf[i] must be pattern (seed, base + i): base is the slice's offset. */
static void test_check_slice(const char *what, size_t size, const uint8_t *buf, size_t len,
                             unsigned seed, size_t base)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (buf[i] != test_pattern(seed, base + i)) {
            test_fail("%s size %zu: index %zu expected 0x%02x got 0x%02x", what, size, base + i,
                      test_pattern(seed, base + i), buf[i]);
        }
    }
}

static void test_check_host(const char *what, size_t size, const uint8_t *buf, size_t len,
                            unsigned seed)
{
    test_check_slice(what, size, buf, len, seed, 0);
}

/* Reads device memory back with the driver and checks it. */
static void test_check_dev_slice(const char *what, size_t size, CUdeviceptr dev, size_t len,
                                 unsigned seed, size_t base)
{
    uint8_t *copy = malloc(len + 1);

    if (copy == NULL) {
        test_fail("out of memory");
    }
    if (len > 0) {
        TEST_CU(cuMemcpyDtoH(copy, dev, len));
    }
    test_check_slice(what, size, copy, len, seed, base);
    free(copy);
}

static void test_check_dev(const char *what, size_t size, CUdeviceptr dev, size_t len,
                           unsigned seed)
{
    test_check_dev_slice(what, size, dev, len, seed, 0);
}

static void test_fill_dev(CUdeviceptr dev, size_t len, unsigned seed)
{
    uint8_t *buf = malloc(len + 1);

    test_fill(buf, len, seed);
    if (len > 0) {
        TEST_CU(cuMemcpyHtoD(dev, buf, len));
    }
    free(buf);
}

/* ---- UCT plumbing ---- */

static void test_comp_cb(uct_completion_t *self)
{
    test_comp_t *comp = (test_comp_t *)self;

    comp->calls++;
    comp->status = self->status;
    comp->order  = test_comp_counter++;
}

static void test_comp_init(test_comp_t *comp)
{
    comp->super.func   = test_comp_cb;
    comp->super.count  = 1;
    comp->super.status = UCS_OK;
    comp->calls        = 0;
    comp->order        = -1;
    comp->status       = UCS_INPROGRESS;
}

static void test_progress_until(test_ctx_t *ctx, const int *flag, const char *what)
{
    unsigned long spins;

    for (spins = 0; !*flag; ++spins) {
        if (spins > TEST_MAX_SPIN) {
            test_fail("%s: no completion after %lu progress calls", what, spins);
        }
        uct_worker_progress(ctx->worker);
    }
}

/* Waits for a copy that returned `status`; fails on an error. */
static void test_wait(test_ctx_t *ctx, ucs_status_t status, test_comp_t *comp, const char *what)
{
    if (status == UCS_OK) {
        return;
    }
    if (status != UCS_INPROGRESS) {
        test_fail("%s: %s", what, ucs_status_string(status));
    }
    test_progress_until(ctx, &comp->calls, what);
    if ((comp->calls != 1) || (comp->status != UCS_OK)) {
        test_fail("%s: completion called %d times, status %s", what, comp->calls,
                  ucs_status_string(comp->status));
    }
}

static int test_find_component(test_ctx_t *ctx)
{
    uct_component_h *components;
    unsigned num, i;
    int found = 0;

    TEST_UCS(uct_query_components(&components, &num));
    for (i = 0; i < num; ++i) {
        uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};

        TEST_UCS(uct_component_query(components[i], &attr));
        if (!strcmp(attr.name, "strata")) {
            ctx->component = components[i];
            found          = 1;
        }
    }
    uct_release_component_list(components);
    return found;
}

static int test_open_md(test_ctx_t *ctx)
{
    uct_tl_resource_desc_t *resources;
    uct_md_config_t *md_config;
    unsigned num, i;
    int found = 0;

    TEST_UCS(uct_md_config_read(ctx->component, NULL, NULL, &md_config));
    TEST_UCS(uct_md_open(ctx->component, "gpu_copy", md_config, &ctx->md));
    uct_config_release(md_config);
    TEST_UCS(uct_md_query_tl_resources(ctx->md, &resources, &num));
    for (i = 0; i < num; ++i) {
        if (!strcmp(resources[i].tl_name, "gpu_copy") && !found) {
            snprintf(ctx->dev_name, sizeof(ctx->dev_name), "%s", resources[i].dev_name);
            found = 1;
        }
    }
    uct_release_tl_resource_list(resources);
    return found;
}

static void test_check_attr(uct_iface_h iface)
{
    uint64_t need = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_SHORT |
                    UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                    UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    uct_iface_attr_t attr;

    TEST_UCS(uct_iface_query(iface, &attr));
    if ((attr.cap.flags & need) != need) {
        test_fail("capabilities: expected flags 0x%" PRIx64 " got 0x%" PRIx64, need,
                  attr.cap.flags);
    }
    if ((attr.cap.put.max_iov != 1) || (attr.cap.get.max_iov != 1)) {
        test_fail("max_iov: expected 1 got put %zu get %zu", attr.cap.put.max_iov,
                  attr.cap.get.max_iov);
    }
    printf("caps: ok (latency %.1f us, bandwidth %.0f MB/s, overhead %.1f us)\n",
           attr.latency.c * 1e6, attr.bandwidth.shared / (1 << 20), attr.overhead * 1e6);
}

/* An endpoint to the interface's own address, as UCP's loopback. */
static ucs_status_t test_connect(uct_iface_h iface, uct_ep_h *ep_p, int corrupt)
{
    uct_ep_params_t ep_params = {0};
    uct_device_addr_t *dev_addr;
    uct_iface_addr_t *iface_addr;
    uct_iface_attr_t attr;
    ucs_status_t status;

    TEST_UCS(uct_iface_query(iface, &attr));
    dev_addr   = calloc(1, attr.device_addr_len + 1);
    iface_addr = calloc(1, attr.iface_addr_len + 1);
    TEST_UCS(uct_iface_get_device_address(iface, dev_addr));
    TEST_UCS(uct_iface_get_address(iface, iface_addr));
    if (corrupt) {
        /* another process's interface: a different process id */
        ((uint8_t *)iface_addr)[0] ^= 0x5a;
    }
    if (uct_iface_is_reachable(iface, dev_addr, iface_addr) == corrupt) {
        test_fail("%s address: expected %s got the opposite", corrupt ? "foreign" : "own",
                  corrupt ? "unreachable" : "reachable");
    }
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = dev_addr;
    ep_params.iface_addr = iface_addr;
    status               = uct_ep_create(&ep_params, ep_p);
    free(dev_addr);
    free(iface_addr);
    return status;
}

/* An interface with an endpoint connected to itself; `settings` are
 * UCX_GPU_COPY_* overrides, NAME, VALUE pairs, NULL-terminated. */
static void test_open_iface(test_ctx_t *ctx, test_iface_t *t, const char **settings)
{
    uct_iface_params_t params = {0};
    uct_iface_config_t *config;
    const char **s;

    TEST_UCS(uct_md_iface_config_read(ctx->md, "gpu_copy", NULL, NULL, &config));
    for (s = settings; (s != NULL) && (*s != NULL); s += 2) {
        TEST_UCS(uct_config_modify(config, s[0], s[1]));
    }
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gpu_copy";
    params.mode.device.dev_name = ctx->dev_name;
    TEST_UCS(uct_iface_open(ctx->md, ctx->worker, &params, config, &t->iface));
    uct_config_release(config);
    uct_iface_progress_enable(t->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    TEST_UCS(test_connect(t->iface, &t->ep, 0));
}

static void test_close_iface(test_iface_t *t)
{
    uct_ep_destroy(t->ep);
    uct_iface_close(t->iface);
}

/* ---- copies ---- */

static ucs_status_t test_put_zcopy(test_iface_t *t, const void *src, CUdeviceptr dst, size_t len,
                                   test_comp_t *comp)
{
    uct_iov_t iov = {.buffer = (void *)src, .length = len, .memh = UCT_MEM_HANDLE_NULL,
                     .stride = 0, .count = 1};

    test_comp_init(comp);
    return uct_ep_put_zcopy(t->ep, &iov, 1, (uint64_t)dst, UCT_INVALID_RKEY, &comp->super);
}

static ucs_status_t test_get_zcopy(test_iface_t *t, void *dst, CUdeviceptr src, size_t len,
                                   test_comp_t *comp)
{
    uct_iov_t iov = {.buffer = dst, .length = len, .memh = UCT_MEM_HANDLE_NULL,
                     .stride = 0, .count = 1};

    test_comp_init(comp);
    return uct_ep_get_zcopy(t->ep, &iov, 1, (uint64_t)src, UCT_INVALID_RKEY, &comp->super);
}

/* short, zcopy and device->device copies of `size` bytes at `offset`. */
static void test_size(test_ctx_t *ctx, test_iface_t *t, size_t size, size_t offset)
{
    size_t alloc = size + offset + 1;
    uint8_t *host_src = malloc(alloc), *host_dst = malloc(alloc);
    CUdeviceptr dev, dev2;
    test_comp_t comp;
    char what[64];

    if ((host_src == NULL) || (host_dst == NULL)) {
        test_fail("out of memory for %zu bytes", alloc);
    }
    TEST_CU(cuMemAlloc(&dev, alloc));
    TEST_CU(cuMemAlloc(&dev2, alloc));

    if (size <= UINT32_MAX) {
        snprintf(what, sizeof(what), "put_short h->d +%zu", offset);
        test_fill(host_src + offset, size, 1);
        TEST_UCS(uct_ep_put_short(t->ep, host_src + offset, (unsigned)size,
                                  (uint64_t)(dev + offset), UCT_INVALID_RKEY));
        test_check_dev(what, size, dev + offset, size, 1);
        printf("%s %zu: ok\n", what, size);

        snprintf(what, sizeof(what), "get_short d->h +%zu", offset);
        memset(host_dst, 0, alloc);
        TEST_UCS(uct_ep_get_short(t->ep, host_dst + offset, (unsigned)size,
                                  (uint64_t)(dev + offset), UCT_INVALID_RKEY));
        test_check_host(what, size, host_dst + offset, size, 1);
        printf("%s %zu: ok\n", what, size);
    }

    snprintf(what, sizeof(what), "put_zcopy h->d +%zu", offset);
    test_fill(host_src + offset, size, 2);
    test_wait(ctx, test_put_zcopy(t, host_src + offset, dev + offset, size, &comp), &comp, what);
    test_check_dev(what, size, dev + offset, size, 2);
    printf("%s %zu: ok\n", what, size);

    snprintf(what, sizeof(what), "get_zcopy d->h +%zu", offset);
    test_fill_dev(dev + offset, size, 3);
    memset(host_dst, 0, alloc);
    test_wait(ctx, test_get_zcopy(t, host_dst + offset, dev + offset, size, &comp), &comp, what);
    test_check_host(what, size, host_dst + offset, size, 3);
    printf("%s %zu: ok\n", what, size);

    /* device->device: get_zcopy into a device "local" buffer. */
    snprintf(what, sizeof(what), "get_zcopy d->d +%zu", offset);
    test_fill_dev(dev2, alloc, 9);
    test_wait(ctx, test_get_zcopy(t, (void *)(dev2 + offset), dev + offset, size, &comp), &comp,
              what);
    test_check_dev(what, size, dev2 + offset, size, 3);
    printf("%s %zu: ok\n", what, size);

    TEST_CU(cuMemFree(dev));
    TEST_CU(cuMemFree(dev2));
    free(host_src);
    free(host_dst);
}

#define TEST_MANY     64
#define TEST_MANY_LEN 4096

/* Many copies in flight in both directions, then a flush with completion. */
static void test_many(test_ctx_t *ctx, test_iface_t *t)
{
    static test_comp_t comps[TEST_MANY];
    uint8_t *host = malloc(TEST_MANY * TEST_MANY_LEN);
    uint8_t *back = calloc(TEST_MANY, TEST_MANY_LEN);
    test_comp_t flush_comp;
    CUdeviceptr dev, dev_src;
    ucs_status_t status;
    int i, prev_h2d = -1, prev_d2h = -1;

    TEST_CU(cuMemAlloc(&dev, TEST_MANY * TEST_MANY_LEN));
    TEST_CU(cuMemAlloc(&dev_src, TEST_MANY * TEST_MANY_LEN));
    test_fill(host, TEST_MANY * TEST_MANY_LEN, 4);
    test_fill_dev(dev_src, TEST_MANY * TEST_MANY_LEN, 5);
    for (i = 0; i < TEST_MANY; ++i) {
        size_t off = (size_t)i * TEST_MANY_LEN;

        status = (i % 2) ? test_get_zcopy(t, back + off, dev_src + off, TEST_MANY_LEN, &comps[i]) :
                           test_put_zcopy(t, host + off, dev + off, TEST_MANY_LEN, &comps[i]);
        if (status != UCS_INPROGRESS) {
            test_fail("many: copy %d expected INPROGRESS got %s", i, ucs_status_string(status));
        }
    }
    status = uct_iface_flush(t->iface, 0, NULL);
    if (status != UCS_INPROGRESS) {
        test_fail("many: iface flush expected INPROGRESS got %s", ucs_status_string(status));
    }
    test_comp_init(&flush_comp);
    status = uct_ep_flush(t->ep, 0, &flush_comp.super);
    if (status != UCS_INPROGRESS) {
        test_fail("many: ep flush expected INPROGRESS got %s", ucs_status_string(status));
    }
    test_progress_until(ctx, &flush_comp.calls, "many: flush");
    for (i = 0; i < TEST_MANY; ++i) {
        int *prev = (i % 2) ? &prev_d2h : &prev_h2d;

        if ((comps[i].calls != 1) || (comps[i].status != UCS_OK)) {
            test_fail("many: copy %d: completion called %d times (expected 1), status %s", i,
                      comps[i].calls, ucs_status_string(comps[i].status));
        }
        if (comps[i].order > flush_comp.order) {
            test_fail("many: copy %d completed after the flush", i);
        }
        if (comps[i].order < *prev) {
            test_fail("many: copy %d completed before an earlier copy of its direction", i);
        }
        *prev = comps[i].order;
    }
    for (i = 0; i < TEST_MANY; ++i) {
        size_t off = (size_t)i * TEST_MANY_LEN;

        if (i % 2) {
            test_check_slice("many d->h", TEST_MANY_LEN, back + off, TEST_MANY_LEN, 5, off);
        } else {
            test_check_dev_slice("many h->d", TEST_MANY_LEN, dev + off, TEST_MANY_LEN, 4, off);
        }
    }
    TEST_UCS(uct_iface_flush(t->iface, 0, NULL));
    printf("many: %d copies in flight, flush with completion: ok\n", TEST_MANY);
    TEST_CU(cuMemFree(dev));
    TEST_CU(cuMemFree(dev_src));
    free(host);
    free(back);
}

/* A fence orders a device->host copy after the host->device copy before it,
 * although the two directions run on different streams. */
static void test_fence(test_ctx_t *ctx, test_iface_t *t)
{
    size_t len    = 1 << 20;
    uint8_t *src  = malloc(len), *dst = calloc(1, len);
    test_comp_t put_comp, get_comp;
    CUdeviceptr dev;

    TEST_CU(cuMemAlloc(&dev, len));
    test_fill_dev(dev, len, 7);
    test_fill(src, len, 6);
    if (test_put_zcopy(t, src, dev, len, &put_comp) != UCS_INPROGRESS) {
        test_fail("fence: put_zcopy did not go in flight");
    }
    TEST_UCS(uct_ep_fence(t->ep, 0));
    if (test_get_zcopy(t, dst, dev, len, &get_comp) != UCS_INPROGRESS) {
        test_fail("fence: get_zcopy did not go in flight");
    }
    test_wait(ctx, UCS_INPROGRESS, &get_comp, "fence: get");
    test_wait(ctx, UCS_INPROGRESS, &put_comp, "fence: put");
    test_check_host("fence: d->h after h->d", len, dst, len, 6);
    printf("fence: h->d zcopy, fence, d->h zcopy of the same bytes: ok\n");

    /* The short copy runs at once on its own stream: only the fence makes
     * it wait for the zero-copy operation still queued. */
    test_fill(src, len, 12);
    memset(dst, 0, len);
    if (test_put_zcopy(t, src, dev, len, &put_comp) != UCS_INPROGRESS) {
        test_fail("fence: put_zcopy did not go in flight");
    }
    TEST_UCS(uct_ep_fence(t->ep, 0));
    TEST_UCS(uct_ep_get_short(t->ep, dst, (unsigned)len, (uint64_t)dev, UCT_INVALID_RKEY));
    test_check_host("fence: d->h short after h->d zcopy", len, dst, len, 12);
    test_wait(ctx, UCS_INPROGRESS, &put_comp, "fence: put");
    printf("fence: h->d zcopy, fence, d->h short of the same bytes: ok\n");
    TEST_CU(cuMemFree(dev));
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
    test_comp_t comp;
} test_pending_t;

static ucs_status_t test_pending_cb(uct_pending_req_t *self)
{
    test_pending_t *req = (test_pending_t *)self;

    req->calls++;
    req->status = test_put_zcopy(req->t, req->src, req->dst, req->len, &req->comp);
    return (req->status == UCS_ERR_NO_RESOURCE) ? UCS_ERR_NO_RESOURCE : UCS_OK;
}

static int test_purged;

static void test_purge_cb(uct_pending_req_t *self, void *arg)
{
    ++test_purged;
}

/* MAX_EVENTS=2: a third copy is refused and goes through the pending queue. */
static void test_pending(test_ctx_t *ctx)
{
    static const char *settings[] = {"MAX_EVENTS", "2", NULL};
    size_t len = 65536;
    uint8_t *src = malloc(3 * len);
    test_pending_t req = {0}, other = {0};
    test_comp_t comps[2];
    test_iface_t t;
    uct_ep_h ep2;
    CUdeviceptr dev;
    int i;

    test_open_iface(ctx, &t, settings);
    TEST_UCS(test_connect(t.iface, &ep2, 0));
    TEST_CU(cuMemAlloc(&dev, 3 * len));
    test_fill(src, 3 * len, 8);
    for (i = 0; i < 2; ++i) {
        if (test_put_zcopy(&t, src + i * len, dev + i * len, len, &comps[i]) != UCS_INPROGRESS) {
            test_fail("pending: copy %d did not go in flight", i);
        }
    }
    req.status = test_put_zcopy(&t, src + 2 * len, dev + 2 * len, len, &req.comp);
    if (req.status != UCS_ERR_NO_RESOURCE) {
        test_fail("pending: third copy expected NO_RESOURCE got %s", ucs_status_string(req.status));
    }
    req.super.func = test_pending_cb;
    req.t          = &t;
    req.src        = src + 2 * len;
    req.dst        = dev + 2 * len;
    req.len        = len;
    TEST_UCS(uct_ep_pending_add(t.ep, &req.super, 0));
    other.super.func = test_pending_cb;
    TEST_UCS(uct_ep_pending_add(ep2, &other.super, 0));
    if (uct_ep_flush(t.ep, 0, NULL) != UCS_ERR_NO_RESOURCE) {
        test_fail("pending: ep flush with a pending request expected NO_RESOURCE");
    }
    uct_ep_pending_purge(ep2, test_purge_cb, NULL);
    if ((test_purged != 1) || (other.calls != 0)) {
        test_fail("pending: purge expected 1 request removed got %d (%d run)", test_purged,
                  other.calls);
    }
    test_progress_until(ctx, &req.calls, "pending: dispatch");
    test_wait(ctx, req.status, &req.comp, "pending: dispatched copy");
    test_wait(ctx, UCS_INPROGRESS, &comps[0], "pending: copy 0");
    test_wait(ctx, UCS_INPROGRESS, &comps[1], "pending: copy 1");
    test_check_dev("pending: 3 copies", 3 * len, dev, 3 * len, 8);
    printf("pending: MAX_EVENTS=2, third copy queued, dispatched by progress; purge: ok\n");
    TEST_CU(cuMemFree(dev));
    uct_ep_destroy(ep2);
    test_close_iface(&t);
    free(src);
}

typedef struct test_thread_arg {
    test_ctx_t *ctx;
    test_iface_t *t;
    uint8_t *src, *dst;
    CUdeviceptr dev;
    size_t len;
    int had_ctx;
} test_thread_arg_t;

static void *test_thread_run(void *p)
{
    test_thread_arg_t *arg = p;
    test_comp_t comp;
    CUcontext cuctx = NULL;

    cuCtxGetCurrent(&cuctx);
    arg->had_ctx = (cuctx != NULL);
    TEST_UCS(uct_ep_put_short(arg->t->ep, arg->src, (unsigned)arg->len, (uint64_t)arg->dev,
                              UCT_INVALID_RKEY));
    test_wait(arg->ctx, test_get_zcopy(arg->t, arg->dst, arg->dev, arg->len, &comp), &comp,
              "thread: get_zcopy");
    return NULL;
}

/* A new interface's first copies from a thread that never touched CUDA. */
static void test_thread(test_ctx_t *ctx)
{
    test_thread_arg_t arg = {.ctx = ctx, .len = 100003};
    test_iface_t t;
    pthread_t thread;

    test_open_iface(ctx, &t, NULL);
    arg.t   = &t;
    arg.src = malloc(arg.len);
    arg.dst = calloc(1, arg.len);
    TEST_CU(cuMemAlloc(&arg.dev, arg.len));
    test_fill(arg.src, arg.len, 10);
    if (pthread_create(&thread, NULL, test_thread_run, &arg) != 0) {
        test_fail("thread: pthread_create");
    }
    pthread_join(thread, NULL);
    if (arg.had_ctx) {
        test_fail("thread: expected a thread without CUDA context, it had one");
    }
    test_check_dev("thread: put_short", arg.len, arg.dev, arg.len, 10);
    test_check_host("thread: get_zcopy", arg.len, arg.dst, arg.len, 10);
    printf("thread: copies from a thread with no CUDA context: ok\n");
    TEST_CU(cuMemFree(arg.dev));
    test_close_iface(&t);
    free(arg.src);
    free(arg.dst);
}

/* Bad ranges fail with a status; another process's address is unreachable. */
static void test_errors(test_ctx_t *ctx, test_iface_t *t)
{
    size_t len = 4096;
    uint8_t buf[64] = {0};
    test_comp_t comp;
    ucs_status_t status;
    CUdeviceptr dev;
    uct_ep_h ep;

    TEST_CU(cuMemAlloc(&dev, len));
    status = test_put_zcopy(t, buf, dev + len - 8, sizeof(buf), &comp);
    if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        test_fail("errors: put_zcopy past the allocation expected an error got %s",
                  ucs_status_string(status));
    }
    printf("errors: put_zcopy past the end of an allocation: %s: ok\n", ucs_status_string(status));
    status = test_get_zcopy(t, buf, dev + len - 8, sizeof(buf), &comp);
    if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        test_fail("errors: get_zcopy past the allocation expected an error got %s",
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
    TEST_UCS(uct_iface_flush(t->iface, 0, NULL));
    TEST_CU(cuMemFree(dev));

    status = test_connect(t->iface, &ep, 1);
    if (status == UCS_OK) {
        test_fail("errors: endpoint to another process's address expected an error got OK");
    }
    printf("errors: endpoint to another process: %s: ok\n", ucs_status_string(status));
}

/* Closing with a copy in flight waits for it and does not crash. */
static void test_close_busy(test_ctx_t *ctx)
{
    size_t len   = 1 << 20;
    uint8_t *src = malloc(len);
    test_comp_t comp;
    test_iface_t t;
    CUdeviceptr dev;

    test_open_iface(ctx, &t, NULL);
    TEST_CU(cuMemAlloc(&dev, len));
    test_fill(src, len, 11);
    if (test_put_zcopy(&t, src, dev, len, &comp) != UCS_INPROGRESS) {
        test_fail("close: put_zcopy did not go in flight");
    }
    printf("close: closing an interface with a copy in flight (a warning is expected)\n");
    test_close_iface(&t);
    test_check_dev("close: copy in flight at close", len, dev, len, 11);
    if (comp.calls != 0) {
        test_fail("close: expected no completion call got %d", comp.calls);
    }
    printf("close: copy finished before close returned, no completion called: ok\n");
    TEST_CU(cuMemFree(dev));
    free(src);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 1, 3, 4095, 65537, (1 << 20) + 7, 64 << 20};
    size_t max_size = 64 << 20;
    test_ctx_t ctx  = {0};
    test_iface_t t;
    CUcontext cuctx;
    CUdevice cudev;
    int count = 0;
    unsigned i;

    if ((argc == 3) && !strcmp(argv[1], "--max-size")) {
        max_size = strtoull(argv[2], NULL, 0);
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--max-size BYTES]\n", argv[0]);
        return 2;
    }
    if ((cuInit(0) != CUDA_SUCCESS) || (cuDeviceGetCount(&count) != CUDA_SUCCESS) ||
        (count == 0)) {
        printf("test_gpu_copy_uct: SKIP: no CUDA device\n");
        return 77;
    }
    TEST_CU(cuDeviceGet(&cudev, 0));
    TEST_CU(cuDevicePrimaryCtxRetain(&cuctx, cudev));
    TEST_CU(cuCtxSetCurrent(cuctx));

    TEST_UCS(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &ctx.async));
    TEST_UCS(uct_worker_create(ctx.async, UCS_THREAD_MODE_SINGLE, &ctx.worker));
    if (!test_find_component(&ctx)) {
        printf("test_gpu_copy_uct: SKIP: no UCT component 'strata' (LD_PRELOAD libuct_strata.so)\n");
        return 77;
    }
    if (!test_open_md(&ctx)) {
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
    test_thread(&ctx);
    test_errors(&ctx, &t);
    test_close_busy(&ctx);

    TEST_UCS(uct_iface_flush(t.iface, 0, NULL));
    test_close_iface(&t);
    uct_md_close(ctx.md);
    uct_worker_destroy(ctx.worker);
    ucs_async_context_destroy(ctx.async);
    printf("test_gpu_copy_uct: all checks passed\n");
    return 0;
}
