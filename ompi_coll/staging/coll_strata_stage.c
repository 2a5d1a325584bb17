/*
 * coll/strata staging of device buffers through pinned host memory (see
 * coll_strata_stage.h).
 *
 * Copies run on strata's own streams of the buffer's device (see
 * mca_coll_strata_stream); each direction is one batch of asynchronous
 * copies, then a wait for each stream used.  The bounce memory is the communicator's cached
 * buffer when it is free and large enough to grow into (up to
 * coll_strata_stage_max bytes), else memory of the call's own: a second
 * nonblocking call in flight, or a layout too large that cannot be cut into
 * pieces.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_stage_internal.h"

#ifndef STRATA_MEM_NO_CUDA
#include <common/strata_cuda.h>
#endif

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ompi/constants.h"

#define MCA_COLL_STRATA_STAGE_ALIGN   64
#define MCA_COLL_STRATA_STAGE_DEVICES 64

strata_mem_kind_t mca_coll_strata_kind(const void *buf, int *ordinal)
{
    if (MPI_IN_PLACE == buf) {
        if (NULL != ordinal) {
            *ordinal = -1;
        }
        return STRATA_MEM_HOST;
    }
    return strata_mem_kind(buf, ordinal);
}

const char *mca_coll_strata_kinds_name(strata_mem_kind_t send, strata_mem_kind_t recv)
{
    static const char *const names[3][3] = {
        {"host->host", "host->device", "host->managed"},
        {"device->host", "device->device", "device->managed"},
        {"managed->host", "managed->device", "managed->managed"},
    };

    return names[send][recv];
}

/* One buffer argument: MPI_IN_PLACE and NULL are host, asked of nobody. */
static void mca_coll_strata_bufs_one(mca_coll_strata_buf_kind_t *k, const void *buf)
{
    k->ordinal = -1;
    k->context = NULL;
    k->kind = (MPI_IN_PLACE == buf || NULL == buf)
                  ? STRATA_MEM_HOST
                  : strata_mem_kind_ctx(buf, &k->ordinal, &k->context);
}

void mca_coll_strata_bufs_classify(mca_coll_strata_bufs_t *b, const void *sbuf, const void *rbuf)
{
    b->in_place = MPI_IN_PLACE == sbuf;
    b->one = NULL == rbuf;
    if (OPAL_LIKELY(!strata_mem_driver_present())) {
        /* no driver, no device memory: a load and a compare */
        b->buf[0] = b->buf[1] = (mca_coll_strata_buf_kind_t){STRATA_MEM_HOST, -1, NULL};
        return;
    }
    mca_coll_strata_bufs_one(&b->buf[0], sbuf);
    if (rbuf == sbuf) {
        b->buf[1] = b->buf[0];
    } else {
        mca_coll_strata_bufs_one(&b->buf[1], rbuf);
    }
}

const char *mca_coll_strata_bufs_kinds(const mca_coll_strata_bufs_t *b)
{
    strata_mem_kind_t s = b->buf[0].kind, r = b->one ? s : b->buf[1].kind;

    /* one buffer (bcast: rbuf NULL) or in place: it is both ends */
    return mca_coll_strata_kinds_name(b->in_place ? r : s, r);
}

void mca_coll_strata_trace(const char *coll, struct ompi_communicator_t *comm,
                           const mca_coll_strata_bufs_t *bufs, const char *path)
{
    MCA_COLL_STRATA_VERBOSE(20, "%s %s %s: %s", coll, comm->c_name,
                            mca_coll_strata_bufs_kinds(bufs), path);
}

/* ---- regions ------------------------------------------------------------ */

void mca_coll_strata_region(size_t count, struct ompi_datatype_t *dtype, ptrdiff_t *lo,
                            ptrdiff_t *hi)
{
    ptrdiff_t lb, extent, true_lb, true_extent;

    *lo = *hi = 0;
    if (0 == count) {
        return;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    *lo = true_lb + ((extent < 0) ? (ptrdiff_t)(count - 1) * extent : 0);
    *hi = true_lb + true_extent + ((extent > 0) ? (ptrdiff_t)(count - 1) * extent : 0);
}

/* Grow [lo, hi) by the block [blo, bhi); empty blocks change nothing. */
static void mca_coll_strata_region_join(ptrdiff_t blo, ptrdiff_t bhi, bool *any, ptrdiff_t *lo,
                                        ptrdiff_t *hi)
{
    if (blo == bhi) {
        return;
    }
    if (!*any || blo < *lo) {
        *lo = blo;
    }
    if (!*any || bhi > *hi) {
        *hi = bhi;
    }
    *any = true;
}

void mca_coll_strata_region_v(int n, const int *counts, const int *displs,
                              struct ompi_datatype_t *dtype, ptrdiff_t *lo, ptrdiff_t *hi)
{
    ptrdiff_t lb, extent, blo, bhi, packed = 0;
    bool any = false;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    *lo = *hi = 0;
    for (int i = 0; i < n; ++i) {
        ptrdiff_t at = (NULL != displs) ? (ptrdiff_t)displs[i] * extent : packed;

        mca_coll_strata_region((size_t)counts[i], dtype, &blo, &bhi);
        mca_coll_strata_region_join(at + blo, at + bhi, &any, lo, hi);
        packed += (ptrdiff_t)counts[i] * extent;
    }
}

void mca_coll_strata_region_w(int n, const int *counts, const int *displs,
                              struct ompi_datatype_t *const *dtypes, ptrdiff_t *lo, ptrdiff_t *hi)
{
    ptrdiff_t blo, bhi;
    bool any = false;

    *lo = *hi = 0;
    for (int i = 0; i < n; ++i) {
        mca_coll_strata_region((size_t)counts[i], dtypes[i], &blo, &bhi);
        mca_coll_strata_region_join(displs[i] + blo, displs[i] + bhi, &any, lo, hi);
    }
}

bool mca_coll_strata_region_dense(size_t bytes_written, ptrdiff_t lo, ptrdiff_t hi)
{
    return bytes_written == (size_t)(hi - lo);
}

/* ---- bounce memory ------------------------------------------------------ */

#ifndef STRATA_MEM_NO_CUDA
/* Pinned when the driver gives it (fast copies), else plain host memory:
 * staging still works through pageable memory, only slower.  Allocated in
 * the context of the device being staged (portable: any context may use
 * it), so a thread without a context never makes one on another device. */
static char *mca_coll_strata_bounce_alloc(size_t size, int ordinal, bool *pinned)
{
    void *mem = NULL;
    CUcontext saved;

    if ((0 == strata_cuda_ctx_push(ordinal, &saved))) {
        CUresult res = strata_cuda.cuMemHostAlloc(&mem, size, CU_MEMHOSTALLOC_PORTABLE);

        strata_cuda_ctx_pop(saved);
        if (CUDA_SUCCESS == res) {
            *pinned = true;
            return mem;
        }
        MCA_COLL_STRATA_VERBOSE(10,
                                "cuMemHostAlloc(%zu) failed (%d); staging through "
                                "pageable memory",
                                size, (int)res);
    }
    *pinned = false;
    return malloc(size);
}

static void mca_coll_strata_bounce_free(char *mem, bool pinned, int ordinal)
{
    CUcontext saved;

    if (NULL == mem) {
        return;
    }
    if (!pinned) {
        free(mem);
        return;
    }
    if (0 == strata_cuda_ctx_push(ordinal, &saved)) {
        (void)strata_cuda.cuMemFreeHost(mem);
        strata_cuda_ctx_pop(saved);
    }
}

#else
/* Without CUDA nothing is ever staged; these keep the file one piece. */
static char *mca_coll_strata_bounce_alloc(size_t size, int ordinal, bool *pinned)
{
    *pinned = false;
    return malloc(size);
}

static void mca_coll_strata_bounce_free(char *mem, bool pinned, int ordinal)
{
    free(mem);
}
#endif

/* The communicator's cached buffer when no other call holds it and `size`
 * fits the bound, else memory of this call's own.  `busy` is taken with an
 * atomic exchange: a staged nonblocking call gives the buffer back from the
 * progress engine, possibly on another thread. */
static int mca_coll_strata_bounce_get(mca_coll_strata_stage_t *st, size_t size, int ordinal)
{
    mca_coll_strata_bounce_cache_t *cache = &st->module->bounce;
    size_t max = st->module->settings.stage_max;

    st->bounce_size = size;
    st->bounce_ordinal = ordinal;
    if (size <= max && !__atomic_exchange_n(&cache->busy, true, __ATOMIC_ACQUIRE)) {
        if (cache->size < size) {
            /* grow by doubling, so a run of growing calls reallocates rarely */
            size_t want = (cache->size * 2 > size) ? cache->size * 2 : size;

            want = (want > max) ? max : want;
            mca_coll_strata_bounce_free(cache->mem, cache->pinned, cache->ordinal);
            cache->size = 0;
            cache->ordinal = ordinal;
            cache->mem = mca_coll_strata_bounce_alloc(want, ordinal, &cache->pinned);
            if (NULL == cache->mem) {
                __atomic_store_n(&cache->busy, false, __ATOMIC_RELEASE);
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
            cache->size = want;
        }
        st->bounce = cache->mem;
        st->bounce_cached = true;
        st->bounce_pinned = cache->pinned;
        return OMPI_SUCCESS;
    }
    st->bounce = mca_coll_strata_bounce_alloc(size, ordinal, &st->bounce_pinned);
    st->bounce_cached = false;
    return (NULL == st->bounce) ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

/*
 * No memory for a call's staging buffer: the call must still run on this
 * rank, or its peers wait for it forever (a blocking collective cannot tell
 * them, and asking them first would cost every staged call a round trip).
 * A sink stands in: `size` bytes of address space over one block of
 * MCA_COLL_STRATA_SINK_BLOCK bytes mapped again and again, so it costs that
 * block whatever the size.  What this rank sends from it is garbage, what
 * it receives is lost; the call returns MPI_ERR_NO_MEM here, and the peers'
 * results that depend on this rank's data are undefined, as after any
 * error an MPI library reports on one rank.  NULL if even that fails;
 * *mapped: the bytes mapped (whole pages), what the sink's put unmaps.
 */
#define MCA_COLL_STRATA_SINK_BLOCK ((size_t)2 << 20)

static char *mca_coll_strata_sink_map(size_t size, size_t *mapped)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t total = (size + page - 1) / page * page, block;
    char *base;
    int fd;

    total = (0 == total) ? page : total;
    block = (total < MCA_COLL_STRATA_SINK_BLOCK) ? total : MCA_COLL_STRATA_SINK_BLOCK;
    fd = memfd_create("strata_stage_sink", MFD_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (MAP_FAILED == base || 0 != ftruncate(fd, (off_t)block)) {
        if (MAP_FAILED != base) {
            munmap(base, total);
        }
        close(fd);
        return NULL;
    }
    for (size_t off = 0; off < total; off += block) {
        size_t len = (total - off < block) ? total - off : block;

        if (MAP_FAILED ==
            mmap(base + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0)) {
            munmap(base, total);
            close(fd);
            return NULL;
        }
    }
    close(fd); /* the mappings keep the block */
    *mapped = total;
    return base;
}

static void mca_coll_strata_bounce_put(mca_coll_strata_stage_t *st)
{
    if (st->bounce_sink) {
        munmap(st->bounce, st->bounce_size);
        st->bounce_sink = false;
    } else if (st->bounce_cached) {
        __atomic_store_n(&st->module->bounce.busy, false, __ATOMIC_RELEASE);
    } else {
        mca_coll_strata_bounce_free(st->bounce, st->bounce_pinned, st->bounce_ordinal);
    }
    st->bounce = NULL;
}

void mca_coll_strata_stage_release(mca_coll_strata_module_t *module)
{
    mca_coll_strata_bounce_free(module->bounce.mem, module->bounce.pinned, module->bounce.ordinal);
    module->bounce.mem = NULL;
    module->bounce.size = 0;
}

/* ---- copies ------------------------------------------------------------- */

#ifndef STRATA_MEM_NO_CUDA
/*
 * Strata's streams per device, made on first use in the device's primary
 * context, kept for the process.  Copies in run on a blocking stream: they
 * wait for work the application left on the legacy default stream before
 * the call (the buffer's producer).  Copies out run on a non-blocking one:
 * a nonblocking collective copies out from the progress engine, and must
 * not wait for kernels the application queued after starting it; they wait
 * for an event recorded at the call's start instead
 * (mca_coll_strata_stage_order).
 */
static CUstream mca_coll_strata_streams[MCA_COLL_STRATA_STAGE_DEVICES][2];
static pthread_mutex_t mca_coll_strata_streams_lock = PTHREAD_MUTEX_INITIALIZER;

static CUstream mca_coll_strata_stream(int ordinal, bool to_host)
{
    CUstream stream;

    if (ordinal < 0 || ordinal >= MCA_COLL_STRATA_STAGE_DEVICES) {
        return NULL;
    }
    pthread_mutex_lock(&mca_coll_strata_streams_lock);
    stream = mca_coll_strata_streams[ordinal][to_host];
    if ((NULL == stream) &&
        (CUDA_SUCCESS == strata_cuda.cuStreamCreate(&stream, to_host ? CU_STREAM_DEFAULT
                                                                     : CU_STREAM_NON_BLOCKING))) {
        mca_coll_strata_streams[ordinal][to_host] = stream;
    }
    pthread_mutex_unlock(&mca_coll_strata_streams_lock);
    return stream;
}

static void mca_coll_strata_stage_fail(mca_coll_strata_stage_t *st, bool to_host,
                                       const mca_coll_strata_stage_buf_t *b, CUresult res)
{
    char str[160];

    opal_output(0, "coll:strata: %s on %s: %s the %s buffer (%zd bytes) failed: %s", st->coll,
                mca_coll_strata_kinds_name(st->buf[0].kind, st->buf[1].kind),
                to_host ? "copying in" : "copying out",
                (b == &st->buf[MCA_COLL_STRATA_STAGE_SEND]) ? "send" : "receive", b->hi - b->lo,
                strata_cuda_result_str(res, str, sizeof(str)));
    if (MPI_SUCCESS == st->rc) {
        st->rc = MPI_ERR_OTHER;
    }
    /* a region that could not be read goes into the collective as zeros */
    if (to_host) {
        memset(st->bounce + b->offset, 0, (size_t)(b->hi - b->lo));
    }
}

/* One buffer's copy, queued on the stream of its device and direction. */
static CUresult mca_coll_strata_stage_copy_one(mca_coll_strata_stage_t *st,
                                               mca_coll_strata_stage_buf_t *b, bool to_host)
{
    CUdeviceptr dev = (CUdeviceptr)(b->user + b->lo);
    char *host = st->bounce + b->offset;
    size_t len = (size_t)(b->hi - b->lo);
    CUstream stream;
    CUcontext saved;
    CUresult res;

    if (0 != strata_cuda_ctx_push(b->ordinal, &saved)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    stream = mca_coll_strata_stream(b->ordinal, to_host);
    if (to_host) {
        res = strata_cuda.cuMemcpyDtoHAsync(host, dev, len, stream);
    } else {
        res = (NULL == b->after) ? CUDA_SUCCESS
                                 : strata_cuda.cuStreamWaitEvent(stream, b->after, 0);
        if (CUDA_SUCCESS == res) {
            res = strata_cuda.cuMemcpyHtoDAsync(dev, host, len, stream);
        }
    }
    strata_cuda_ctx_pop(saved);
    return res;
}

static CUresult mca_coll_strata_stage_sync_one(const mca_coll_strata_stage_buf_t *b, bool to_host)
{
    CUcontext saved;
    CUresult res;

    if (0 != strata_cuda_ctx_push(b->ordinal, &saved)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    res = strata_cuda.cuStreamSynchronize(mca_coll_strata_stream(b->ordinal, to_host));
    strata_cuda_ctx_pop(saved);
    return res;
}

/*
 * Copies the device regions with `dir` one way (to_host) or the other: every
 * copy is queued first, then each stream is waited for, so the two buffers
 * of a call travel together.  A buffer's failure is recorded and the other
 * still copies.
 */
static void mca_coll_strata_stage_copy(mca_coll_strata_stage_t *st, int dir, bool to_host)
{
    bool queued[2] = {false, false};

    for (int i = 0; i < 2; ++i) {
        mca_coll_strata_stage_buf_t *b = &st->buf[i];
        CUresult res;

        if (!(b->dir & dir) || STRATA_MEM_DEVICE != b->kind) {
            continue;
        }
        res = mca_coll_strata_stage_copy_one(st, b, to_host);
        if (CUDA_SUCCESS != res) {
            mca_coll_strata_stage_fail(st, to_host, b, res);
        }
        queued[i] = (CUDA_SUCCESS == res);
    }
    for (int i = 0; i < 2; ++i) {
        CUresult res;

        if (!queued[i]) {
            continue;
        }
        res = mca_coll_strata_stage_sync_one(&st->buf[i], to_host);
        if (CUDA_SUCCESS != res) {
            mca_coll_strata_stage_fail(st, to_host, &st->buf[i], res);
        }
    }
}

/*
 * The application's last write of a receive buffer may still be queued on
 * the legacy default stream when it calls MPI: cuMemsetD8, and cuMemcpyHtoD
 * from pageable memory, return before the device memory is written (unless
 * the memory has SYNC_MEMOPS, which nothing sets under pml/ob1), and so may
 * its kernels.  A copy out on the non-blocking stream is not ordered after
 * that work, and the old bytes could land over the result.  So the call's
 * start records, for each device buffer it copies out, an event on the
 * legacy stream, which the copy out waits for: after the application's
 * work before the call, never after work it queued later.  Without an event
 * the host waits for the legacy stream now, which orders the same.
 */
static void mca_coll_strata_stage_order(mca_coll_strata_stage_t *st)
{
    for (int i = 0; i < 2; ++i) {
        mca_coll_strata_stage_buf_t *b = &st->buf[i];
        CUevent event = NULL;
        CUcontext saved;
        CUresult res;

        if (!(b->dir & MCA_COLL_STRATA_STAGE_OUT) || STRATA_MEM_DEVICE != b->kind ||
            0 != strata_cuda_ctx_push(b->ordinal, &saved)) {
            continue; /* without a context the copy out fails, and says so */
        }
        res = strata_cuda.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
        if (CUDA_SUCCESS == res) {
            res = strata_cuda.cuEventRecord(event, CU_STREAM_LEGACY);
            if (CUDA_SUCCESS != res) {
                (void)strata_cuda.cuEventDestroy(event);
                event = NULL;
            }
        }
        if (CUDA_SUCCESS != res) {
            (void)strata_cuda.cuStreamSynchronize(CU_STREAM_LEGACY);
        }
        b->after = event;
        strata_cuda_ctx_pop(saved);
    }
}

/* The events of mca_coll_strata_stage_order, once the copies out are queued
 * (a copy out already queued still waits for its event). */
static void mca_coll_strata_stage_order_release(mca_coll_strata_stage_t *st)
{
    for (int i = 0; i < 2; ++i) {
        mca_coll_strata_stage_buf_t *b = &st->buf[i];
        CUcontext saved;

        if (NULL == b->after || 0 != strata_cuda_ctx_push(b->ordinal, &saved)) {
            continue;
        }
        (void)strata_cuda.cuEventDestroy(b->after);
        b->after = NULL;
        strata_cuda_ctx_pop(saved);
    }
}

#else
static void mca_coll_strata_stage_copy(mca_coll_strata_stage_t *st, int dir, bool to_host)
{
}

static void mca_coll_strata_stage_order(mca_coll_strata_stage_t *st)
{
}

static void mca_coll_strata_stage_order_release(mca_coll_strata_stage_t *st)
{
}
#endif

/* ---- a staged call ------------------------------------------------------ */

void mca_coll_strata_stage_init(mca_coll_strata_stage_t *st, mca_coll_strata_module_t *module,
                                const char *coll, const mca_coll_strata_bufs_t *bufs)
{
    memset(st, 0, sizeof(*st));
    st->coll = coll;
    st->module = module;
    st->bufs = *bufs;
    st->rc = MPI_SUCCESS;
    st->buf[0].kind = st->buf[1].kind = STRATA_MEM_HOST;
}

void mca_coll_strata_stage_add(mca_coll_strata_stage_t *st, int which, const void *user,
                               ptrdiff_t lo, ptrdiff_t hi, int dir)
{
    mca_coll_strata_stage_buf_t *b = &st->buf[which];

    b->user = user;
    b->lo = lo;
    b->hi = hi;
    b->dir = dir;
    /* what the call's entry found for this buffer (MPI_IN_PLACE: host) */
    b->kind = (MPI_IN_PLACE == user) ? STRATA_MEM_HOST : st->bufs.buf[which].kind;
    b->ordinal = (MPI_IN_PLACE == user) ? -1 : st->bufs.buf[which].ordinal;
}

int mca_coll_strata_stage_in(mca_coll_strata_stage_t *st)
{
    size_t total = 0;
    int rc, ordinal = -1;

    for (int i = 0; i < 2; ++i) {
        mca_coll_strata_stage_buf_t *b = &st->buf[i];

        if (STRATA_MEM_DEVICE != b->kind || 0 == b->dir || b->hi <= b->lo) {
            b->dir = (STRATA_MEM_DEVICE == b->kind) ? 0 : b->dir;
            continue;
        }
        b->offset = total;
        ordinal = (ordinal < 0) ? b->ordinal : ordinal;
        total += ((size_t)(b->hi - b->lo) + MCA_COLL_STRATA_STAGE_ALIGN - 1) &
                 ~(size_t)(MCA_COLL_STRATA_STAGE_ALIGN - 1);
    }
    if (0 == total) {
        return OMPI_SUCCESS;
    }
    rc = mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_STAGE)
             ? OMPI_ERR_OUT_OF_RESOURCE
             : mca_coll_strata_bounce_get(st, total, ordinal);
    if (OMPI_SUCCESS != rc) {
        st->bounce = mca_coll_strata_sink_map(total, &st->bounce_size);
        st->bounce_cached = st->bounce_pinned = false;
        st->bounce_sink = (NULL != st->bounce);
        opal_output(0,
                    "coll:strata: %s on device buffers: no host memory for %zu bytes of "
                    "staging: this call fails on this rank%s",
                    st->coll, total,
                    st->bounce_sink ? " (it still takes part, so that no peer waits for it)"
                                    : ", and its peers may wait for it");
        if (!st->bounce_sink) {
            return rc;
        }
        st->rc = MPI_ERR_NO_MEM;
        return OMPI_SUCCESS;
    }
    mca_coll_strata_stage_order(st);
    mca_coll_strata_stage_copy(st, MCA_COLL_STRATA_STAGE_IN, true);
    return OMPI_SUCCESS;
}

void *mca_coll_strata_stage_ptr(const mca_coll_strata_stage_t *st, int which)
{
    const mca_coll_strata_stage_buf_t *b = &st->buf[which];

    if (STRATA_MEM_DEVICE != b->kind || 0 == b->dir) {
        return (void *)b->user;
    }
    /* the host address that corresponds to the caller's pointer */
    return st->bounce + b->offset - b->lo;
}

int mca_coll_strata_stage_out(mca_coll_strata_stage_t *st, int coll_rc)
{
    if (NULL == st->bounce) {
        return (MPI_SUCCESS != coll_rc) ? coll_rc : st->rc;
    }
    if (MPI_SUCCESS == coll_rc && MPI_SUCCESS == st->rc) {
        mca_coll_strata_stage_copy(st, MCA_COLL_STRATA_STAGE_OUT, false);
    }
    mca_coll_strata_stage_order_release(st);
    mca_coll_strata_bounce_put(st);
    return (MPI_SUCCESS != coll_rc) ? coll_rc : st->rc;
}
