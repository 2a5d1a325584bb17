/*
 * Non-contiguous MPI datatypes on GPU buffers, for pml/ucx (see
 * hook_strata_dt.h).
 */
#include "hook_strata_dt.h"

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"

#include <common/strata_cuda.h>
#include <common/strata_mem.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#define MCA_HOOK_STRATA_EXPORT __attribute__((visibility("default")))

typedef ucs_status_t (*mca_hook_strata_dt_create_fn_t)(const ucp_generic_dt_ops_t *, void *,
                                                       ucp_datatype_t *);
typedef void (*mca_hook_strata_dt_destroy_fn_t)(ucp_datatype_t);

/* One per generic datatype pml/ucx creates: its own ops and context. */
typedef struct mca_hook_strata_dt_wrap {
    const ucp_generic_dt_ops_t *orig_ops;
    void *orig_context; /* the ompi_datatype_t, as pml/ucx passes it */
    ucp_datatype_t ucp_datatype;
    struct mca_hook_strata_dt_wrap *next;
} mca_hook_strata_dt_wrap_t;

/* One per pack or unpack operation. */
typedef struct mca_hook_strata_dt_state {
    const mca_hook_strata_dt_wrap_t *wrap;
    void *orig_state;
    char *host;       /* staging copy of the device span, or NULL */
    char *before;     /* receive: the span as staged in, to find what unpack wrote */
    CUdeviceptr dev;  /* start of the device span */
    size_t span;
    int unpacking;
    int failed;
} mca_hook_strata_dt_state_t;

static int mca_hook_strata_dt_enabled;
static int mca_hook_strata_dt_output = -1;
static mca_hook_strata_dt_wrap_t *mca_hook_strata_dt_wraps;
static pthread_mutex_t mca_hook_strata_dt_lock = PTHREAD_MUTEX_INITIALIZER;

void mca_hook_strata_dt_enable(int verbose_output)
{
    mca_hook_strata_dt_output = verbose_output;
    if (strata_cuda_load() != 0) {
        opal_output_verbose(10, verbose_output,
                            "hook:strata: no CUDA driver (%s); datatypes are not staged",
                            strata_cuda_error());
        return;
    }
    mca_hook_strata_dt_enabled = 1;
}

/* libucp's own definition, looked up in libucp itself: a plain dlsym
 * would find this file's definition again. */
static void *mca_hook_strata_dt_ucp_symbol(const char *name)
{
    void *ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
    void *sym;

    if (ucp == NULL) {
        ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_GLOBAL);
    }
    sym = (ucp != NULL) ? dlsym(ucp, name) : NULL;
    if (sym == NULL) {
        opal_output(0, "hook:strata: cannot find %s in libucp.so.0: %s", name, dlerror());
    }
    return sym;
}

static int mca_hook_strata_dt_is_device(const void *buffer)
{
    return strata_mem_kind(buffer, NULL) == STRATA_MEM_DEVICE;
}

/* The bytes `count` elements of the datatype touch: [buffer + true_lb,
 * + span).  Returns -1 for layouts it cannot stage (negative extents). */
static int mca_hook_strata_dt_span(const ompi_datatype_t *dt, size_t count, ptrdiff_t *true_lb,
                                   size_t *span)
{
    ptrdiff_t lb, extent, true_extent;

    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, true_lb, &true_extent);
    if ((extent < 0) || (true_extent < 0)) {
        return -1;
    }
    *span = (count == 0) ? 0 : (count - 1) * (size_t)extent + (size_t)true_extent;
    return 0;
}

/* dev: the device side of the copy, whose device's context is used. */
static int mca_hook_strata_dt_copy(void *dst, const void *src, size_t len, CUdeviceptr dev,
                                   const char *what)
{
    char str[160];
    CUresult res;

    if ((len == 0) || (strata_cuda_ctx_ensure(dev) != 0)) {
        return (len == 0) ? 0 : -1;
    }
    res = strata_cuda.cuMemcpy((CUdeviceptr)dst, (CUdeviceptr)src, len);
    if (res != CUDA_SUCCESS) {
        opal_output(0, "hook:strata: staging a non-contiguous datatype (%s, %zu bytes) failed: %s",
                    what, len, strata_cuda_result_str(res, str, sizeof(str)));
        return -1;
    }
    return 0;
}

/*
 * Common start of pack and unpack: decides whether the buffer needs
 * staging and, if so, fills a host copy of its span and returns the host
 * address that stands for `buffer`.
 */
static const void *mca_hook_strata_dt_stage_in(mca_hook_strata_dt_state_t *st, const void *buffer,
                                               size_t count)
{
    ptrdiff_t true_lb;

    if (!mca_hook_strata_dt_enabled || (count == 0) ||
        (mca_hook_strata_dt_span(st->wrap->orig_context, count, &true_lb, &st->span) != 0) ||
        !mca_hook_strata_dt_is_device((const char *)buffer + true_lb)) {
        /* Not staged: host memory, and layouts with a negative extent
         * (rare; on device memory Open MPI's CPU packing then fails). */
        return buffer;
    }
    st->host = malloc(st->span);
    st->dev  = (CUdeviceptr)buffer + true_lb;
    if ((st->host == NULL) ||
        (mca_hook_strata_dt_copy(st->host, (void *)st->dev, st->span, st->dev,
                                 "device to host") != 0)) {
        free(st->host);
        st->host   = NULL;
        st->failed = 1;
        return buffer;
    }
    if (st->unpacking) {
        st->before = malloc(st->span);
        if (st->before == NULL) {
            free(st->host);
            st->host   = NULL;
            st->failed = 1;
            return buffer;
        }
        memcpy(st->before, st->host, st->span);
    }
    opal_output_verbose(20, mca_hook_strata_dt_output,
                        "hook:strata: staged %zu bytes of a non-contiguous datatype on GPU "
                        "memory %p for %s", st->span, buffer, st->unpacking ? "receive" : "send");
    return st->host - true_lb;
}

/*
 * UCP's generic datatype callbacks cannot report a failure to start, and a
 * pack cannot report one at all: a send whose GPU data cannot be read (no
 * memory for the staging copy, or a failing driver) stops the job with a
 * message rather than sending bytes it does not have.
 */
static void mca_hook_strata_dt_fatal(const char *what)
{
    opal_output(0, "hook:strata: %s; cannot continue this transfer of a non-contiguous "
                   "datatype on GPU memory", what);
    abort();
}

static mca_hook_strata_dt_state_t *mca_hook_strata_dt_state_new(void *context, int unpacking)
{
    mca_hook_strata_dt_state_t *st = calloc(1, sizeof(*st));

    if (st == NULL) {
        mca_hook_strata_dt_fatal("out of memory for a datatype state");
    }
    st->wrap      = context;
    st->unpacking = unpacking;
    return st;
}

static void *mca_hook_strata_dt_start_pack(void *context, const void *buffer, size_t count)
{
    mca_hook_strata_dt_state_t *st = mca_hook_strata_dt_state_new(context, 0);
    const void *src                = mca_hook_strata_dt_stage_in(st, buffer, count);

    if (st->failed) {
        mca_hook_strata_dt_fatal("staging the send buffer from GPU memory failed");
    }
    st->orig_state = st->wrap->orig_ops->start_pack(st->wrap->orig_context, src, count);
    return st;
}

static void *mca_hook_strata_dt_start_unpack(void *context, void *buffer, size_t count)
{
    mca_hook_strata_dt_state_t *st = mca_hook_strata_dt_state_new(context, 1);
    void *dst                      = (void *)mca_hook_strata_dt_stage_in(st, buffer, count);

    st->orig_state = st->wrap->orig_ops->start_unpack(st->wrap->orig_context, dst, count);
    return st;
}

static size_t mca_hook_strata_dt_packed_size(void *state)
{
    mca_hook_strata_dt_state_t *st = state;

    return st->wrap->orig_ops->packed_size(st->orig_state);
}

static size_t mca_hook_strata_dt_pack(void *state, size_t offset, void *dest, size_t max_length)
{
    mca_hook_strata_dt_state_t *st = state;

    return st->wrap->orig_ops->pack(st->orig_state, offset, dest, max_length);
}

static ucs_status_t mca_hook_strata_dt_unpack(void *state, size_t offset, const void *src,
                                              size_t length)
{
    mca_hook_strata_dt_state_t *st = state;

    if (st->failed) {
        return UCS_ERR_IO_ERROR;
    }
    return st->wrap->orig_ops->unpack(st->orig_state, offset, src, length);
}

/*
 * Copies back to the device only the bytes the unpack changed, in runs.
 * Writing the whole span would also write the gaps between elements, with
 * the values they had when the receive started, and so undo whatever wrote
 * them meanwhile: another receive into an interleaved type, or a kernel.
 * A byte the unpack wrote with the value it already had needs no copy.
 */
static void mca_hook_strata_dt_write_back(mca_hook_strata_dt_state_t *st)
{
    size_t i = 0, start;

    while (i < st->span) {
        if (st->host[i] == st->before[i]) {
            ++i;
            continue;
        }
        for (start = i; (i < st->span) && (st->host[i] != st->before[i]); ++i) {
        }
        if (mca_hook_strata_dt_copy((char *)st->dev + start, st->host + start, i - start, st->dev,
                                    "host to device") != 0) {
            return;
        }
    }
}

static void mca_hook_strata_dt_finish(void *state)
{
    mca_hook_strata_dt_state_t *st = state;

    if (st->unpacking && (st->host != NULL)) {
        mca_hook_strata_dt_write_back(st);
    }
    st->wrap->orig_ops->finish(st->orig_state);
    free(st->before);
    free(st->host);
    free(st);
}

static const ucp_generic_dt_ops_t mca_hook_strata_dt_ops = {
    .start_pack   = mca_hook_strata_dt_start_pack,
    .start_unpack = mca_hook_strata_dt_start_unpack,
    .packed_size  = mca_hook_strata_dt_packed_size,
    .pack         = mca_hook_strata_dt_pack,
    .unpack       = mca_hook_strata_dt_unpack,
    .finish       = mca_hook_strata_dt_finish,
};

MCA_HOOK_STRATA_EXPORT ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops,
                                                          void *context,
                                                          ucp_datatype_t *datatype_p)
{
    static mca_hook_strata_dt_create_fn_t create;
    mca_hook_strata_dt_wrap_t *wrap;
    ucs_status_t status;

    if ((create == NULL) &&
        ((create = (mca_hook_strata_dt_create_fn_t)mca_hook_strata_dt_ucp_symbol(
              "ucp_dt_create_generic")) == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }
    /* Not enabled: pml/ucx gets exactly what it asked for. */
    wrap = mca_hook_strata_dt_enabled ? calloc(1, sizeof(*wrap)) : NULL;
    if (wrap == NULL) {
        return create(ops, context, datatype_p);
    }
    wrap->orig_ops     = ops;
    wrap->orig_context = context;
    status             = create(&mca_hook_strata_dt_ops, wrap, datatype_p);
    if (status != UCS_OK) {
        free(wrap);
        return status;
    }
    wrap->ucp_datatype = *datatype_p;
    pthread_mutex_lock(&mca_hook_strata_dt_lock);
    wrap->next               = mca_hook_strata_dt_wraps;
    mca_hook_strata_dt_wraps = wrap;
    pthread_mutex_unlock(&mca_hook_strata_dt_lock);
    return UCS_OK;
}

MCA_HOOK_STRATA_EXPORT void ucp_dt_destroy(ucp_datatype_t datatype)
{
    static mca_hook_strata_dt_destroy_fn_t destroy;
    mca_hook_strata_dt_wrap_t **p, *found = NULL;

    if ((destroy == NULL) &&
        ((destroy = (mca_hook_strata_dt_destroy_fn_t)mca_hook_strata_dt_ucp_symbol(
              "ucp_dt_destroy")) == NULL)) {
        return;
    }
    pthread_mutex_lock(&mca_hook_strata_dt_lock);
    for (p = &mca_hook_strata_dt_wraps; *p != NULL; p = &(*p)->next) {
        if ((*p)->ucp_datatype == datatype) {
            found = *p;
            *p    = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&mca_hook_strata_dt_lock);
    destroy(datatype);
    free(found);
}
