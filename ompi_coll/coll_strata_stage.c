/*
 * coll/strata staging of device buffers through pinned host memory (see
 * coll_strata_stage.h).
 *
 * Copies run on strata's own stream of the buffer's device, created with the
 * default flags so that it waits for work the application left on the legacy
 * default stream; each direction is one batch of asynchronous copies and one
 * stream synchronisation.  The bounce memory is the communicator's cached
 * buffer when it is free and large enough to grow into (up to
 * coll_strata_stage_max bytes), else memory of the call's own: a second
 * nonblocking call in flight, or a layout too large that cannot be cut into
 * pieces.
 */
#include "coll_strata.h"

#ifndef STRATA_MEM_NO_CUDA
#include <common/strata_cuda.h>
#endif

#include <pthread.h>
#include <string.h>

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

const char *mca_coll_strata_kinds_of(const void *sbuf, const void *rbuf)
{
    strata_mem_kind_t s, r;

    /* one buffer (bcast: rbuf NULL) or in place: it is both ends */
    s = (MPI_IN_PLACE == sbuf) ? STRATA_MEM_HOST : mca_coll_strata_kind(sbuf, NULL);
    r = (NULL == rbuf) ? s : mca_coll_strata_kind(rbuf, NULL);
    return mca_coll_strata_kinds_name((MPI_IN_PLACE == sbuf) ? r : s, r);
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
                              struct ompi_datatype_t *const *dtypes, ptrdiff_t *lo,
                              ptrdiff_t *hi)
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
 * staging still works through pageable memory, only slower. */
static char *mca_coll_strata_bounce_alloc(size_t size, bool *pinned)
{
    void *mem = NULL;
    CUcontext saved;

    if ((0 == strata_cuda_ctx_push(-1, &saved))) {
        CUresult res = strata_cuda.cuMemHostAlloc(&mem, size, CU_MEMHOSTALLOC_PORTABLE);

        strata_cuda_ctx_pop(saved);
        if (CUDA_SUCCESS == res) {
            *pinned = true;
            return mem;
        }
        MCA_COLL_STRATA_VERBOSE(10, "cuMemHostAlloc(%zu) failed (%d); staging through "
                                "pageable memory", size, (int)res);
    }
    *pinned = false;
    return malloc(size);
}

static void mca_coll_strata_bounce_free(char *mem, bool pinned)
{
    CUcontext saved;

    if (NULL == mem) {
        return;
    }
    if (!pinned) {
        free(mem);
        return;
    }
    if (0 == strata_cuda_ctx_push(-1, &saved)) {
        (void)strata_cuda.cuMemFreeHost(mem);
        strata_cuda_ctx_pop(saved);
    }
}

#else
/* Without CUDA nothing is ever staged; these keep the file one piece. */
static char *mca_coll_strata_bounce_alloc(size_t size, bool *pinned)
{
    *pinned = false;
    return malloc(size);
}

static void mca_coll_strata_bounce_free(char *mem, bool pinned)
{
    free(mem);
}
#endif

static int mca_coll_strata_bounce_get(mca_coll_strata_stage_t *st, size_t size)
{
    mca_coll_strata_bounce_cache_t *cache = &st->module->bounce;
    size_t max = mca_coll_strata_component.stage_max;

    st->bounce_size = size;
    if (!cache->busy && size <= max) {
        if (cache->size < size) {
            /* grow by doubling, so a run of growing calls reallocates rarely */
            size_t want = (cache->size * 2 > size) ? cache->size * 2 : size;

            want = (want > max) ? max : want;
            mca_coll_strata_bounce_free(cache->mem, cache->pinned);
            cache->size = 0;
            cache->mem = mca_coll_strata_bounce_alloc(want, &cache->pinned);
            if (NULL == cache->mem) {
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
            cache->size = want;
        }
        cache->busy = true;
        st->bounce = cache->mem;
        st->bounce_cached = true;
        st->bounce_pinned = cache->pinned;
        return OMPI_SUCCESS;
    }
    st->bounce = mca_coll_strata_bounce_alloc(size, &st->bounce_pinned);
    st->bounce_cached = false;
    return (NULL == st->bounce) ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

static void mca_coll_strata_bounce_put(mca_coll_strata_stage_t *st)
{
    if (st->bounce_cached) {
        st->module->bounce.busy = false;
    } else {
        mca_coll_strata_bounce_free(st->bounce, st->bounce_pinned);
    }
    st->bounce = NULL;
}

void mca_coll_strata_stage_release(mca_coll_strata_module_t *module)
{
    mca_coll_strata_bounce_free(module->bounce.mem, module->bounce.pinned);
    module->bounce.mem = NULL;
    module->bounce.size = 0;
}

/* ---- copies ------------------------------------------------------------- */

#ifndef STRATA_MEM_NO_CUDA
/* Strata's stream per device, made on first use, kept for the process. */
static CUstream mca_coll_strata_streams[MCA_COLL_STRATA_STAGE_DEVICES];
static pthread_mutex_t mca_coll_strata_streams_lock = PTHREAD_MUTEX_INITIALIZER;

static CUstream mca_coll_strata_stream(int ordinal)
{
    CUstream stream;

    if (ordinal < 0 || ordinal >= MCA_COLL_STRATA_STAGE_DEVICES) {
        return NULL;
    }
    pthread_mutex_lock(&mca_coll_strata_streams_lock);
    stream = mca_coll_strata_streams[ordinal];
    if ((NULL == stream) &&
        (CUDA_SUCCESS == strata_cuda.cuStreamCreate(&stream, CU_STREAM_DEFAULT))) {
        mca_coll_strata_streams[ordinal] = stream;
    }
    pthread_mutex_unlock(&mca_coll_strata_streams_lock);
    return stream;
}

static void mca_coll_strata_stage_fail(mca_coll_strata_stage_t *st, const char *what,
                                       const mca_coll_strata_stage_buf_t *b, CUresult res)
{
    char str[160];

    opal_output(0, "coll:strata: %s on %s: %s the %s buffer (%zd bytes) failed: %s", st->coll,
                mca_coll_strata_kinds_name(st->buf[0].kind, st->buf[1].kind), what,
                (b == &st->buf[MCA_COLL_STRATA_STAGE_SEND]) ? "send" : "receive",
                b->hi - b->lo, strata_cuda_result_str(res, str, sizeof(str)));
    if (MPI_SUCCESS == st->rc) {
        st->rc = MPI_ERR_OTHER;
    }
}

/*
 * Copies the device regions with `dir` one way (to_host) or the other and
 * waits for them; a buffer's failure is recorded and the others still copy.
 */
static void mca_coll_strata_stage_copy(mca_coll_strata_stage_t *st, int dir, bool to_host)
{
    const char *what = to_host ? "copying in" : "copying out";

    for (int i = 0; i < 2; ++i) {
        mca_coll_strata_stage_buf_t *b = &st->buf[i];
        CUdeviceptr dev = (CUdeviceptr)(b->user + b->lo);
        char *host = st->bounce + b->offset;
        size_t len = (size_t)(b->hi - b->lo);
        CUstream stream;
        CUcontext saved;
        CUresult res;

        if (!(b->dir & dir) || STRATA_MEM_DEVICE != b->kind) {
            continue;
        }
        if (0 != strata_cuda_ctx_push(b->ordinal, &saved)) {
            mca_coll_strata_stage_fail(st, what, b, CUDA_ERROR_INVALID_CONTEXT);
            if (to_host) {
                memset(host, 0, len);
            }
            continue;
        }
        stream = mca_coll_strata_stream(b->ordinal);
        res = to_host ? strata_cuda.cuMemcpyDtoHAsync(host, dev, len, stream)
                      : strata_cuda.cuMemcpyHtoDAsync(dev, host, len, stream);
        if (CUDA_SUCCESS == res) {
            res = strata_cuda.cuStreamSynchronize(stream);
        }
        strata_cuda_ctx_pop(saved);
        if (CUDA_SUCCESS != res) {
            mca_coll_strata_stage_fail(st, what, b, res);
            if (to_host) {
                memset(host, 0, len);
            }
        }
    }
}

#else
static void mca_coll_strata_stage_copy(mca_coll_strata_stage_t *st, int dir, bool to_host)
{
}
#endif

/* ---- a staged call ------------------------------------------------------ */

void mca_coll_strata_stage_init(mca_coll_strata_stage_t *st, mca_coll_strata_module_t *module,
                                const char *coll)
{
    memset(st, 0, sizeof(*st));
    st->coll = coll;
    st->module = module;
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
    b->kind = mca_coll_strata_kind(user, &b->ordinal);
}

int mca_coll_strata_stage_in(mca_coll_strata_stage_t *st)
{
    size_t total = 0;
    int rc;

    for (int i = 0; i < 2; ++i) {
        mca_coll_strata_stage_buf_t *b = &st->buf[i];

        if (STRATA_MEM_DEVICE != b->kind || 0 == b->dir || b->hi <= b->lo) {
            b->dir = (STRATA_MEM_DEVICE == b->kind) ? 0 : b->dir;
            continue;
        }
        b->offset = total;
        total += ((size_t)(b->hi - b->lo) + MCA_COLL_STRATA_STAGE_ALIGN - 1) &
                 ~(size_t)(MCA_COLL_STRATA_STAGE_ALIGN - 1);
    }
    if (0 == total) {
        return OMPI_SUCCESS;
    }
    rc = mca_coll_strata_bounce_get(st, total);
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "coll:strata: %s: no host memory for %zu bytes of staging", st->coll,
                    total);
        return rc;
    }
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
    mca_coll_strata_bounce_put(st);
    return (MPI_SUCCESS != coll_rc) ? coll_rc : st->rc;
}

/* ---- pieces ------------------------------------------------------------- */

int mca_coll_strata_stage_pieces(mca_coll_strata_module_t *module,
                                 struct ompi_communicator_t *comm, int count,
                                 struct ompi_datatype_t *dtype, bool stages, bool can_split,
                                 int *piece)
{
    /* two buffers (send and receive) share the bound */
    size_t limit = mca_coll_strata_component.stage_max / 2;
    size_t size, extent_bytes;
    ptrdiff_t lb, extent;
    int mine[2], all[2], rc;

    *piece = count;
    ompi_datatype_type_size(dtype, &size);
    /* The type signature's size is the same on every rank, so is this test. */
    if ((size_t)count * size <= limit) {
        return OMPI_SUCCESS;
    }
    mine[0] = stages ? 1 : 0;
    mine[1] = can_split ? 0 : 1;
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, mine, all, 2, MPI_INT, MPI_MAX, comm);
    if (OMPI_SUCCESS != rc || !all[0] || all[1]) {
        return rc;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    extent_bytes = (size_t)((extent > 0) ? extent : (ptrdiff_t)size);
    *piece = (int)((limit / extent_bytes > 0) ? limit / extent_bytes : 1);
    return OMPI_SUCCESS;
}
