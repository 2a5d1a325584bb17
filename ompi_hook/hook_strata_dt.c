/*
 * Non-contiguous MPI datatypes on GPU buffers, for pml/ucx (see
 * hook_strata_dt.h).
 *
 * A device buffer is never staged whole.  Open MPI's convertor lists the
 * datatype's contiguous runs, (address, length) in pack order
 * (opal_convertor_raw); a pack copies the runs that make up [offset, offset +
 * length) of the packed stream from the device into UCP's buffer, an unpack
 * copies them from UCP's buffer to the device.  Host memory is what UCP
 * hands in, plus, for sends, one gather buffer per thread
 * (hook_strata_device_datatypes_chunk): nearby runs (gaps up to
 * hook_strata_device_datatypes_gap) are read with one copy into it and
 * picked out on the CPU.  A receive writes the runs alone: the bytes
 * between them may belong to another receive or a kernel meanwhile.  The
 * copies are asynchronous on one stream per device, with one wait per call
 * (more only when the gather buffer fills).
 *
 * Failures do not stop the process.  An unpack that cannot write the device
 * returns an error, with which UCP completes the receive (MPI_ERR_INTERN):
 * with the fragment that completes the datatype's packed size, not before,
 * because UCP (1.18's rndv/rtr) releases a request that fails while more
 * of its fragments are on the way, and the next one finds it freed.  A
 * message shorter than the datatype therefore completes without the error,
 * and hook/strata says so on stderr.
 * A pack has no way to fail: UCP's generic pack returns a length, and UCP
 * sends that many bytes.  A send whose device data cannot be read therefore
 * goes out with zeros in place of the bytes not read, and says so on stderr.
 */
#include "hook_strata_dt.h"

#include "hook_strata.h"
#include "hook_strata_reloc.h"

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/proc/proc.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

#include <common/strata_cuda.h>
#include <common/strata_mem.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <ucp/api/ucp.h>

#define MCA_HOOK_STRATA_EXPORT __attribute__((visibility("default")))

/* Runs asked of the convertor at a time. */
#define MCA_HOOK_STRATA_DT_RUNS 64
/* Runs one fill of a gather buffer may hold. */
#define MCA_HOOK_STRATA_DT_PIECES 4096
#define MCA_HOOK_STRATA_DT_DEVICES 64

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

/* Where the next byte of the packed stream lies on the device.  The
 * convertor merges runs that touch (opal_convertor_raw), so each run here
 * is a separate stretch of device memory. */
typedef struct mca_hook_strata_dt_cursor {
    opal_convertor_t conv;
    struct iovec run[MCA_HOOK_STRATA_DT_RUNS];
    uint32_t num_runs, next_run;
    size_t run_offset; /* bytes of run[next_run] already passed */
    size_t position;   /* offset in the packed stream */
    int last_batch;    /* the convertor has no runs after these */
} mca_hook_strata_dt_cursor_t;

/* A run read into the gather buffer: where it lies there and in the pack. */
typedef struct mca_hook_strata_dt_piece {
    size_t from, to, length;
} mca_hook_strata_dt_piece_t;

/* A thread's gather buffer.  A pack fills and empties it before it returns,
 * and packs do not nest, so one per thread bounds the memory whatever the
 * number of sends in flight. */
typedef struct mca_hook_strata_dt_gather {
    char *buf; /* NULL: none to be had (chunk 0, or no memory) */
    size_t len, used;
    mca_hook_strata_dt_piece_t *pieces;
    size_t num_pieces;
} mca_hook_strata_dt_gather_t;

/* Nearby runs read by one copy: device range [start, end), landing at `at`
 * in the gather buffer; a group of one run is copied straight to `to`. */
typedef struct mca_hook_strata_dt_group {
    CUdeviceptr start, end;
    size_t at, to, num_runs;
} mca_hook_strata_dt_group_t;

/* A pack or unpack of a device buffer. */
typedef struct mca_hook_strata_dt_device {
    ompi_datatype_t *datatype; /* retained: MPI_Type_free may come first */
    const void *buffer;
    size_t count, packed_size;
    size_t unpacked; /* bytes received so far (fragments do not overlap) */
    int ordinal, unpacking, failed;
    int failure_returned; /* an unpack returned the failure to UCP */
    CUstream stream;
    mca_hook_strata_dt_cursor_t cursor;
    mca_hook_strata_dt_gather_t *gather; /* the thread's, during a pack; NULL: none */
} mca_hook_strata_dt_device_t;

/* One per pack or unpack operation: pml/ucx's own for host memory, ours for
 * device memory. */
typedef struct mca_hook_strata_dt_state {
    const mca_hook_strata_dt_wrap_t *wrap;
    void *orig_state;
    mca_hook_strata_dt_device_t *dev;
} mca_hook_strata_dt_state_t;

static int mca_hook_strata_dt_enabled;
static int mca_hook_strata_dt_output = -1;
static size_t mca_hook_strata_dt_chunk;
static size_t mca_hook_strata_dt_gap;
static mca_hook_strata_dt_wrap_t *mca_hook_strata_dt_wraps;
static pthread_mutex_t mca_hook_strata_dt_lock = PTHREAD_MUTEX_INITIALIZER;
static CUstream mca_hook_strata_dt_streams[MCA_HOOK_STRATA_DT_DEVICES];
static pthread_key_t mca_hook_strata_dt_gather_key;
static int mca_hook_strata_dt_gather_keyed;

/* The state of a device operation that could not have its own (no memory,
 * or a device ordinal past MCA_HOOK_STRATA_DT_DEVICES): a send of it is
 * empty, a receive into it fails. */
static mca_hook_strata_dt_state_t mca_hook_strata_dt_stateless;

static void mca_hook_strata_dt_gather_free(void *gather)
{
    mca_hook_strata_dt_gather_t *gb = gather;

    if (gb != NULL) {
        free(gb->buf);
        free(gb->pieces);
        free(gb);
    }
}

/* Whether the process's first ucp_dt_create_generic is this file's (the
 * address of the name itself would go through the GOT, to that first one). */
static int mca_hook_strata_dt_interposed(void)
{
    void *first = dlsym(RTLD_DEFAULT, "ucp_dt_create_generic");
    Dl_info mine, theirs;

    return (first != NULL) && dladdr((void *)mca_hook_strata_dt_interposed, &mine) &&
           dladdr(first, &theirs) && (mine.dli_fbase == theirs.dli_fbase);
}

/* libucp's own definition, looked up in libucp itself: a plain dlsym
 * would find this file's definition again (Open MPI 4.1), and the GOT
 * slots redirected below do not change what dlsym finds (5.0). */
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

static mca_hook_strata_dt_create_fn_t mca_hook_strata_dt_orig_create(void)
{
    static mca_hook_strata_dt_create_fn_t create;

    if (create == NULL) {
        create =
            (mca_hook_strata_dt_create_fn_t)mca_hook_strata_dt_ucp_symbol("ucp_dt_create_generic");
    }
    return create;
}

static mca_hook_strata_dt_destroy_fn_t mca_hook_strata_dt_orig_destroy(void)
{
    static mca_hook_strata_dt_destroy_fn_t destroy;

    if (destroy == NULL) {
        destroy = (mca_hook_strata_dt_destroy_fn_t)mca_hook_strata_dt_ucp_symbol("ucp_dt_destroy");
    }
    return destroy;
}

static ucs_status_t mca_hook_strata_dt_create(const ucp_generic_dt_ops_t *ops, void *context,
                                              ucp_datatype_t *datatype_p);
static void mca_hook_strata_dt_destroy(ucp_datatype_t datatype);

static void mca_hook_strata_dt_redirect_report(void *arg, const char *object, void *const *slot,
                                               int changed)
{
    opal_output_verbose(10, mca_hook_strata_dt_output, "hook:strata: %s of %s: GOT slot %p %s",
                        (const char *)arg, (object[0] != '\0') ? object : "the executable",
                        (void *)slot,
                        changed ? "redirected to hook/strata" : "already hook/strata's");
}

/* Points pml/ucx's object's references to `symbol` (GOT slots) at
 * `replacement`: the number of them, or -1 with *why set. */
static int mca_hook_strata_dt_redirect(const char *symbol, void *replacement, void *in_libucp,
                                       const void *pml_ucx, char *why, size_t why_len)
{
    mca_hook_strata_reloc_t r = {
        .symbol      = symbol,
        .replacement = replacement,
        /* this component (its own references would loop), and libucp,
         * whose internal calls stay its own */
        .skip        = {(const void *)mca_hook_strata_dt_redirect, in_libucp},
        /* pml/ucx's object alone: another caller of UCP in the process
         * (the application, a library) creates datatypes whose context is
         * not an Open MPI datatype */
        .only        = pml_ucx,
        .marked      = pml_ucx,
        .report      = mca_hook_strata_dt_redirect_report,
        .arg         = (void *)symbol,
    };

    if (mca_hook_strata_reloc_redirect(&r) < 0) {
        snprintf(why, why_len, "%s", r.error);
        return -1;
    }
    opal_output_verbose(10, mca_hook_strata_dt_output,
                        "hook:strata: %s: %zu GOT slot(s) point at hook/strata, %zu of them in "
                        "pml/ucx's object",
                        symbol, r.patched, r.patched_in_marked);
    return (int)r.patched_in_marked;
}

/* Open MPI 5.0 links pml/ucx into libmpi, which links libucp: libmpi's
 * calls were bound to libucp's definitions at load time, before the hook
 * was opened, and interposition cannot reach them.  Their GOT slots are
 * rewritten instead, while the hook opens (before the pml is selected and
 * makes its first datatype).  0 once pml/ucx's calls to
 * ucp_dt_create_generic reach this file; -1 with *why set otherwise. */
static int mca_hook_strata_dt_redirect_pml(char *why, size_t why_len)
{
    mca_hook_strata_dt_create_fn_t create   = mca_hook_strata_dt_orig_create();
    mca_hook_strata_dt_destroy_fn_t destroy = mca_hook_strata_dt_orig_destroy();
    const void *pml_ucx                     = dlsym(RTLD_DEFAULT, "mca_pml_ucx_component");
    Dl_info where;
    int n;

    if ((create == NULL) || (destroy == NULL)) {
        snprintf(why, why_len, "libucp's definitions were not found");
        return -1;
    }
    if (pml_ucx == NULL) {
        snprintf(why, why_len, "pml/ucx is not loaded yet, so its references cannot be redirected");
        return -1;
    }
    /* destroy first: a datatype made through hook/strata must be
     * destroyed through it (one it did not make, it passes on) */
    if ((mca_hook_strata_dt_redirect("ucp_dt_destroy", (void *)mca_hook_strata_dt_destroy,
                                     (void *)destroy, pml_ucx, why, why_len) < 0) ||
        ((n = mca_hook_strata_dt_redirect("ucp_dt_create_generic",
                                          (void *)mca_hook_strata_dt_create, (void *)create,
                                          pml_ucx, why, why_len)) < 0)) {
        return -1;
    }
    if (n == 0) {
        snprintf(why, why_len, "%s, where pml/ucx is, has no GOT slot for it",
                 (dladdr(pml_ucx, &where) && (where.dli_fname != NULL)) ? where.dli_fname
                                                                        : "the object");
        return -1;
    }
    return 0;
}

void mca_hook_strata_dt_enable(int verbose_output)
{
    char why[320];

    mca_hook_strata_dt_output = verbose_output;
    mca_hook_strata_dt_chunk  = mca_hook_strata_component.device_datatypes_chunk;
    mca_hook_strata_dt_gap    = mca_hook_strata_component.device_datatypes_gap;
    mca_hook_strata_dt_gather_keyed =
        (pthread_key_create(&mca_hook_strata_dt_gather_key, mca_hook_strata_dt_gather_free) == 0);
    if (strata_cuda_load() != 0) {
        opal_output_verbose(10, verbose_output,
                            "hook:strata: no CUDA driver (%s); datatypes pass through",
                            strata_cuda_error());
        return;
    }
    /* pml/ucx reaches this file's definitions by interposition when none
     * comes before them in the global scope: Open MPI 4.1, where pml/ucx is
     * a DSO opened after the hook; nothing more is needed there.  Otherwise
     * (5.0: pml/ucx inside libmpi, which links libucp) its GOT slots are
     * redirected.  The test is made at run time, whatever the version. */
    if (mca_hook_strata_dt_interposed()) {
        opal_output_verbose(10, verbose_output,
                            "hook:strata: pml/ucx will call hook/strata's ucp_dt_create_generic "
                            "(interposition)");
    } else if (mca_hook_strata_dt_redirect_pml(why, sizeof(why)) != 0) {
        opal_output(0,
                    "hook:strata: warning: pml/ucx calls libucp's ucp_dt_create_generic, not "
                    "hook/strata's (%s): non-contiguous datatypes on GPU memory are not "
                    "handled (hook_strata_device_datatypes)",
                    why);
        return;
    }
    mca_hook_strata_dt_enabled = 1;
}

/* ---- failures ----------------------------------------------------------- */

static void mca_hook_strata_dt_fail(mca_hook_strata_dt_device_t *dev, const char *what,
                                    const char *why)
{
    if (!dev->failed) {
        opal_output(0, "hook:strata: %s of a non-contiguous datatype on GPU memory %p: %s: %s%s",
                    dev->unpacking ? "receive" : "send", dev->buffer, what, why,
                    dev->unpacking ? ""
                                   : "; the message goes out with zeros in place of the bytes "
                                     "not read (a UCX generic datatype cannot fail a send)");
    }
    dev->failed = 1;
}

static int mca_hook_strata_dt_cu_check(mca_hook_strata_dt_device_t *dev, const char *call,
                                       CUresult res)
{
    char str[160];

    if (res == CUDA_SUCCESS) {
        return 0;
    }
    mca_hook_strata_dt_fail(dev, call, strata_cuda_result_str(res, str, sizeof(str)));
    return -1;
}

/* A driver call of this file: 0, or -1 with the failure reported. */
#define MCA_HOOK_STRATA_DT_CU(_dev, _func, ...) \
    mca_hook_strata_dt_cu_check((_dev), #_func, strata_cuda._func(__VA_ARGS__))

/* ---- the datatype's runs ------------------------------------------------ */

static int mca_hook_strata_dt_cursor_rewind(mca_hook_strata_dt_device_t *dev)
{
    mca_hook_strata_dt_cursor_t *c = &dev->cursor;

    opal_convertor_cleanup(&c->conv);
    c->num_runs = c->next_run = 0;
    c->run_offset = c->position = 0;
    c->last_batch = 0;
    /* Prepared for send whatever the direction: the runs are the same, and
     * opal_convertor_raw only reads the layout. */
    if (opal_convertor_copy_and_prepare_for_send(ompi_proc_local_proc->super.proc_convertor,
                                                 &dev->datatype->super, dev->count, dev->buffer,
                                                 0, &c->conv) != OPAL_SUCCESS) {
        mca_hook_strata_dt_fail(dev, "opal_convertor_prepare_for_send", "failed");
        return -1;
    }
    return 0;
}

/* The next piece of the packed stream, at most `max` bytes of one run:
 * its length (0 past the end) and device address. */
static size_t mca_hook_strata_dt_cursor_next(mca_hook_strata_dt_cursor_t *c, CUdeviceptr *addr,
                                             size_t max)
{
    const struct iovec *run;
    uint32_t num;
    size_t bytes, len;

    for (;;) {
        if (c->next_run == c->num_runs) {
            if (c->last_batch) {
                return 0;
            }
            num           = MCA_HOOK_STRATA_DT_RUNS;
            c->last_batch = (opal_convertor_raw(&c->conv, c->run, &num, &bytes) != 0) ||
                            (num == 0);
            c->num_runs   = num;
            c->next_run   = 0;
            c->run_offset = 0;
            continue;
        }
        run = &c->run[c->next_run];
        if (c->run_offset < run->iov_len) {
            break;
        }
        ++c->next_run;
        c->run_offset = 0;
    }
    len   = (run->iov_len - c->run_offset < max) ? run->iov_len - c->run_offset : max;
    *addr = (CUdeviceptr)run->iov_base + c->run_offset;
    c->run_offset += len;
    c->position += len;
    return len;
}

/* Puts the cursor at `offset` of the packed stream.  UCP goes forward; an
 * offset behind the cursor (fragments out of order) starts over. */
static int mca_hook_strata_dt_cursor_seek(mca_hook_strata_dt_device_t *dev, size_t offset)
{
    mca_hook_strata_dt_cursor_t *c = &dev->cursor;
    CUdeviceptr addr;

    if ((offset < c->position) && (mca_hook_strata_dt_cursor_rewind(dev) != 0)) {
        return -1;
    }
    while (c->position < offset) {
        if (mca_hook_strata_dt_cursor_next(c, &addr, offset - c->position) == 0) {
            mca_hook_strata_dt_fail(dev, "seek", "offset past the datatype's runs");
            return -1;
        }
    }
    return 0;
}

/* ---- device context and stream ------------------------------------------ */

/* strata's stream on the device, made blocking: it waits for what the
 * application queued on the legacy default stream, as a cuMemcpy would. */
static CUstream mca_hook_strata_dt_stream(mca_hook_strata_dt_device_t *dev)
{
    CUstream stream;

    pthread_mutex_lock(&mca_hook_strata_dt_lock);
    stream = mca_hook_strata_dt_streams[dev->ordinal];
    if ((stream == NULL) &&
        (MCA_HOOK_STRATA_DT_CU(dev, cuStreamCreate, &stream, CU_STREAM_DEFAULT) == 0)) {
        mca_hook_strata_dt_streams[dev->ordinal] = stream;
    }
    pthread_mutex_unlock(&mca_hook_strata_dt_lock);
    return stream;
}

/* Makes the device's primary context current (streams live in it). */
static int mca_hook_strata_dt_begin(mca_hook_strata_dt_device_t *dev, CUcontext *saved)
{
    if (strata_cuda_ctx_push(dev->ordinal, saved) != 0) {
        mca_hook_strata_dt_fail(dev, "strata_cuda_ctx_push", "no context for the device");
        return -1;
    }
    if ((dev->stream == NULL) && ((dev->stream = mca_hook_strata_dt_stream(dev)) == NULL)) {
        strata_cuda_ctx_pop(*saved);
        return -1;
    }
    return 0;
}

/* Waits for the copies queued so far; UCP's buffer is used once we return. */
static int mca_hook_strata_dt_wait(mca_hook_strata_dt_device_t *dev)
{
    if (dev->failed) {
        /* what was queued before the failure still runs into or out of
         * UCP's buffer: wait for it, whatever the outcome */
        (void)strata_cuda.cuStreamSynchronize(dev->stream);
        return -1;
    }
    return MCA_HOOK_STRATA_DT_CU(dev, cuStreamSynchronize, dev->stream);
}

/* ---- pack: device runs to the packed stream ------------------------------ */

/* This thread's gather buffer, made at its first pack; NULL without one. */
static mca_hook_strata_dt_gather_t *mca_hook_strata_dt_gather_get(void)
{
    mca_hook_strata_dt_gather_t *gb;

    if (!mca_hook_strata_dt_gather_keyed || (mca_hook_strata_dt_chunk == 0)) {
        return NULL;
    }
    gb = pthread_getspecific(mca_hook_strata_dt_gather_key);
    if (gb == NULL) {
        if ((gb = calloc(1, sizeof(*gb))) == NULL) {
            return NULL;
        }
        gb->len    = mca_hook_strata_dt_chunk;
        gb->buf    = malloc(gb->len);
        gb->pieces = malloc(MCA_HOOK_STRATA_DT_PIECES * sizeof(*gb->pieces));
        if ((gb->buf == NULL) || (gb->pieces == NULL)) {
            /* reading each run with its own copy needs no memory */
            free(gb->buf);
            free(gb->pieces);
            gb->buf    = NULL;
            gb->pieces = NULL;
        }
        if (pthread_setspecific(mca_hook_strata_dt_gather_key, gb) != 0) {
            mca_hook_strata_dt_gather_free(gb);
            return NULL;
        }
    }
    return (gb->buf != NULL) ? gb : NULL;
}

enum { MCA_HOOK_STRATA_DT_JOINED, MCA_HOOK_STRATA_DT_APART, MCA_HOOK_STRATA_DT_FULL };

/* Adds the run [addr, addr + len), bound for offset `to` of the pack, to
 * the group when it lies shortly after it and the gather buffer has room. */
static int mca_hook_strata_dt_group_join(mca_hook_strata_dt_device_t *dev,
                                         mca_hook_strata_dt_group_t *g, CUdeviceptr addr,
                                         size_t len, size_t to)
{
    mca_hook_strata_dt_gather_t *gb = dev->gather;
    size_t new_pieces               = (g->num_runs == 1) ? 2 : 1;

    if ((g->num_runs == 0) || (gb == NULL) || (addr < g->end) ||
        (addr - g->end > mca_hook_strata_dt_gap)) {
        return MCA_HOOK_STRATA_DT_APART;
    }
    if ((g->at + (addr + len - g->start) > gb->len) ||
        (gb->num_pieces + new_pieces > MCA_HOOK_STRATA_DT_PIECES)) {
        return MCA_HOOK_STRATA_DT_FULL;
    }
    if (g->num_runs == 1) {
        gb->pieces[gb->num_pieces++] =
            (mca_hook_strata_dt_piece_t){g->at, g->to, (size_t)(g->end - g->start)};
    }
    gb->pieces[gb->num_pieces++] =
        (mca_hook_strata_dt_piece_t){g->at + (size_t)(addr - g->start), to, len};
    g->end = addr + len;
    ++g->num_runs;
    return MCA_HOOK_STRATA_DT_JOINED;
}

/* Queues the group's copy: one run straight into the pack, several into
 * the gather buffer. */
static int mca_hook_strata_dt_group_flush(mca_hook_strata_dt_device_t *dev,
                                          mca_hook_strata_dt_group_t *g, char *dest)
{
    size_t len = (size_t)(g->end - g->start);
    int rc     = 0;

    if (g->num_runs == 1) {
        rc = MCA_HOOK_STRATA_DT_CU(dev, cuMemcpyDtoHAsync, dest + g->to, g->start, len,
                                   dev->stream);
    } else if (g->num_runs > 1) {
        rc = MCA_HOOK_STRATA_DT_CU(dev, cuMemcpyDtoHAsync, dev->gather->buf + g->at, g->start,
                                   len, dev->stream);
        dev->gather->used = g->at + len;
    }
    g->num_runs = 0;
    return rc;
}

/* Waits for the queued copies, then moves the gathered runs into place. */
static int mca_hook_strata_dt_gather_drain(mca_hook_strata_dt_device_t *dev, char *dest)
{
    mca_hook_strata_dt_gather_t *gb = dev->gather;
    size_t i;

    if (mca_hook_strata_dt_wait(dev) != 0) {
        return -1;
    }
    for (i = 0; (gb != NULL) && (i < gb->num_pieces); ++i) {
        memcpy(dest + gb->pieces[i].to, gb->buf + gb->pieces[i].from, gb->pieces[i].length);
    }
    if (gb != NULL) {
        gb->num_pieces = 0;
        gb->used       = 0;
    }
    return 0;
}

/* Packs `length` bytes from the cursor into dest. */
static int mca_hook_strata_dt_pack_runs(mca_hook_strata_dt_device_t *dev, char *dest,
                                        size_t length)
{
    mca_hook_strata_dt_group_t g = {0};
    size_t done                  = 0;
    CUdeviceptr addr;
    int rc;

    dev->gather = mca_hook_strata_dt_gather_get();
    if (dev->gather != NULL) {
        dev->gather->num_pieces = 0;
        dev->gather->used       = 0;
    }
    while (done < length) {
        size_t len = mca_hook_strata_dt_cursor_next(&dev->cursor, &addr, length - done);
        int joined;

        if (len == 0) {
            mca_hook_strata_dt_fail(dev, "pack", "the datatype's runs end before its size");
            break;
        }
        joined = mca_hook_strata_dt_group_join(dev, &g, addr, len, done);
        if (joined != MCA_HOOK_STRATA_DT_JOINED) {
            /* a full gather buffer is emptied before the next group */
            if ((mca_hook_strata_dt_group_flush(dev, &g, dest) != 0) ||
                ((joined == MCA_HOOK_STRATA_DT_FULL) && (dev->gather->num_pieces > 0) &&
                 (mca_hook_strata_dt_gather_drain(dev, dest) != 0))) {
                break;
            }
            g = (mca_hook_strata_dt_group_t){
                addr, addr + len, (dev->gather != NULL) ? dev->gather->used : 0, done, 1};
        }
        done += len;
    }
    if (!dev->failed) {
        (void)mca_hook_strata_dt_group_flush(dev, &g, dest);
    }
    rc          = mca_hook_strata_dt_gather_drain(dev, dest);
    dev->gather = NULL;
    return rc;
}

static size_t mca_hook_strata_dt_device_pack(mca_hook_strata_dt_device_t *dev, size_t offset,
                                             void *dest, size_t max_length)
{
    size_t length = 0;
    CUcontext saved;

    if (offset < dev->packed_size) {
        length = (max_length < dev->packed_size - offset) ? max_length
                                                          : dev->packed_size - offset;
    }
    if ((length > 0) && !dev->failed && (mca_hook_strata_dt_begin(dev, &saved) == 0)) {
        if (mca_hook_strata_dt_cursor_seek(dev, offset) == 0) {
            (void)mca_hook_strata_dt_pack_runs(dev, dest, length);
        }
        strata_cuda_ctx_pop(saved);
    }
    if (dev->failed) {
        memset(dest, 0, length);
    }
    return length;
}

/* ---- unpack: the packed stream to device runs ---------------------------- */

/* Writes `length` bytes of src to the runs from the cursor. */
static void mca_hook_strata_dt_unpack_runs(mca_hook_strata_dt_device_t *dev, const char *src,
                                           size_t length)
{
    size_t done = 0;
    CUdeviceptr addr;

    while (done < length) {
        size_t len = mca_hook_strata_dt_cursor_next(&dev->cursor, &addr, length - done);

        if (len == 0) {
            mca_hook_strata_dt_fail(dev, "unpack", "more data than the datatype holds");
            return;
        }
        if (MCA_HOOK_STRATA_DT_CU(dev, cuMemcpyHtoDAsync, addr, src + done, len, dev->stream) !=
            0) {
            return;
        }
        done += len;
    }
}

static ucs_status_t mca_hook_strata_dt_device_unpack(mca_hook_strata_dt_device_t *dev,
                                                     size_t offset, const void *src,
                                                     size_t length)
{
    CUcontext saved;

    if (!dev->failed && (length > 0) && (mca_hook_strata_dt_begin(dev, &saved) == 0)) {
        if (mca_hook_strata_dt_cursor_seek(dev, offset) == 0) {
            mca_hook_strata_dt_unpack_runs(dev, src, length);
            (void)mca_hook_strata_dt_wait(dev);
        }
        strata_cuda_ctx_pop(saved);
    }
    dev->unpacked += length;
    /* the failure waits for the datatype's last bytes (see the top) */
    if (!dev->failed || (dev->unpacked < dev->packed_size)) {
        return UCS_OK;
    }
    dev->failure_returned = 1;
    return UCS_ERR_IO_ERROR;
}

/* ---- operations --------------------------------------------------------- */

/* The device state of a device buffer, NULL for host memory and for
 * count 0.  *stateless: a device buffer that cannot have one (reported). */
static mca_hook_strata_dt_device_t *mca_hook_strata_dt_device_new(ompi_datatype_t *dt,
                                                                  const void *buffer, size_t count,
                                                                  int unpacking, int *stateless)
{
    mca_hook_strata_dt_device_t *dev;
    ptrdiff_t lb, extent, true_lb, true_extent;
    int ordinal = -1;

    *stateless = 0;
    if (!mca_hook_strata_dt_enabled || (count == 0)) {
        return NULL;
    }
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    /* the lowest byte of the layout (a negative extent puts the last
     * element first) */
    if (strata_mem_kind((const char *)buffer + true_lb +
                            ((extent < 0) ? (ptrdiff_t)(count - 1) * extent : 0),
                        &ordinal) != STRATA_MEM_DEVICE) {
        return NULL;
    }
    dev = calloc(1, sizeof(*dev));
    if ((dev == NULL) || (ordinal < 0) || (ordinal >= MCA_HOOK_STRATA_DT_DEVICES)) {
        opal_output(0, "hook:strata: %s of a non-contiguous datatype on GPU memory %p: %s",
                    unpacking ? "receive" : "send", buffer,
                    (dev == NULL) ? "out of memory for its state" : "device ordinal out of range");
        free(dev);
        *stateless = 1;
        return NULL;
    }
    OMPI_DATATYPE_RETAIN(dt);
    dev->datatype  = dt;
    dev->buffer    = buffer;
    dev->count     = count;
    dev->ordinal   = ordinal;
    dev->unpacking = unpacking;
    OBJ_CONSTRUCT(&dev->cursor.conv, opal_convertor_t);
    if (mca_hook_strata_dt_cursor_rewind(dev) == 0) {
        opal_convertor_get_packed_size(&dev->cursor.conv, &dev->packed_size);
    }
    opal_output_verbose(20, mca_hook_strata_dt_output,
                        "hook:strata: %s of %zu bytes of a non-contiguous datatype on GPU "
                        "memory %p (device %d), run by run",
                        unpacking ? "receive" : "send", dev->packed_size, buffer, ordinal);
    return dev;
}

static void mca_hook_strata_dt_device_free(mca_hook_strata_dt_device_t *dev)
{
    if (dev->unpacking && dev->failed && !dev->failure_returned) {
        opal_output(0,
                    "hook:strata: receive of a non-contiguous datatype on GPU memory %p: the "
                    "message (%zu bytes) was shorter than the datatype (%zu bytes), and UCX "
                    "completed the receive before its failure could be returned: the receive "
                    "reports success, but the buffer does not hold the message",
                    dev->buffer, dev->unpacked, dev->packed_size);
    }
    opal_convertor_cleanup(&dev->cursor.conv);
    OBJ_DESTRUCT(&dev->cursor.conv);
    OMPI_DATATYPE_RELEASE(dev->datatype);
    free(dev);
}

static void *mca_hook_strata_dt_start(void *context, const void *buffer, size_t count,
                                      int unpacking)
{
    const mca_hook_strata_dt_wrap_t *wrap = context;
    mca_hook_strata_dt_state_t *st        = calloc(1, sizeof(*st));
    int stateless;

    if (st == NULL) {
        opal_output(0, "hook:strata: out of memory for the state of a datatype %s",
                    unpacking ? "receive" : "send");
        return &mca_hook_strata_dt_stateless;
    }
    st->wrap = wrap;
    st->dev  = mca_hook_strata_dt_device_new(wrap->orig_context, buffer, count, unpacking,
                                            &stateless);
    if (stateless) {
        free(st);
        return &mca_hook_strata_dt_stateless;
    }
    if (st->dev == NULL) {
        st->orig_state = unpacking ? wrap->orig_ops->start_unpack(wrap->orig_context,
                                                                  (void *)buffer, count)
                                   : wrap->orig_ops->start_pack(wrap->orig_context, buffer, count);
    }
    return st;
}

static void *mca_hook_strata_dt_start_pack(void *context, const void *buffer, size_t count)
{
    return mca_hook_strata_dt_start(context, buffer, count, 0);
}

static void *mca_hook_strata_dt_start_unpack(void *context, void *buffer, size_t count)
{
    return mca_hook_strata_dt_start(context, buffer, count, 1);
}

static size_t mca_hook_strata_dt_packed_size(void *state)
{
    mca_hook_strata_dt_state_t *st = state;

    if (st == &mca_hook_strata_dt_stateless) {
        return 0;
    }
    return (st->dev != NULL) ? st->dev->packed_size
                             : st->wrap->orig_ops->packed_size(st->orig_state);
}

static size_t mca_hook_strata_dt_pack(void *state, size_t offset, void *dest, size_t max_length)
{
    mca_hook_strata_dt_state_t *st = state;

    if (st == &mca_hook_strata_dt_stateless) {
        return 0;
    }
    return (st->dev != NULL) ? mca_hook_strata_dt_device_pack(st->dev, offset, dest, max_length)
                             : st->wrap->orig_ops->pack(st->orig_state, offset, dest, max_length);
}

static ucs_status_t mca_hook_strata_dt_unpack(void *state, size_t offset, const void *src,
                                              size_t length)
{
    mca_hook_strata_dt_state_t *st = state;

    if (st == &mca_hook_strata_dt_stateless) {
        return UCS_ERR_NO_MEMORY;
    }
    return (st->dev != NULL) ? mca_hook_strata_dt_device_unpack(st->dev, offset, src, length)
                             : st->wrap->orig_ops->unpack(st->orig_state, offset, src, length);
}

static void mca_hook_strata_dt_finish(void *state)
{
    mca_hook_strata_dt_state_t *st = state;

    if (st == &mca_hook_strata_dt_stateless) {
        return;
    }
    if (st->dev != NULL) {
        mca_hook_strata_dt_device_free(st->dev);
    } else {
        st->wrap->orig_ops->finish(st->orig_state);
    }
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

/* ---- interposition and redirection -------------------------------------- */

/* The definitions pml/ucx's calls reach, by interposition (Open MPI 4.1)
 * or through redirected GOT slots (5.0: mca_hook_strata_dt_redirect_pml):
 * static, so that the addresses written there are this file's own, not
 * the process's first definition of the exported names. */
static ucs_status_t mca_hook_strata_dt_create(const ucp_generic_dt_ops_t *ops, void *context,
                                              ucp_datatype_t *datatype_p)
{
    mca_hook_strata_dt_create_fn_t create = mca_hook_strata_dt_orig_create();
    mca_hook_strata_dt_wrap_t *wrap;
    ucs_status_t status;

    if (create == NULL) {
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

static void mca_hook_strata_dt_destroy(ucp_datatype_t datatype)
{
    mca_hook_strata_dt_destroy_fn_t destroy = mca_hook_strata_dt_orig_destroy();
    mca_hook_strata_dt_wrap_t **p, *found = NULL;

    if (destroy == NULL) {
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

MCA_HOOK_STRATA_EXPORT ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops,
                                                          void *context, ucp_datatype_t *datatype_p)
{
    return mca_hook_strata_dt_create(ops, context, datatype_p);
}

MCA_HOOK_STRATA_EXPORT void ucp_dt_destroy(ucp_datatype_t datatype)
{
    mca_hook_strata_dt_destroy(datatype);
}
