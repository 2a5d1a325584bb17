/*
 * coll/strata staging: device buffers of a collective strata has no device
 * algorithm for run through pinned host copies (docs/design.md, "Collectives
 * on device buffers").  This room holds staging (coll_strata_stage.c), what
 * each collective touches (coll_strata_describe.c), elementwise collectives
 * in pieces (coll_strata_elementwise.c) and the request of a staged
 * nonblocking collective (coll_strata_stage_req.c); this header is its
 * interface, what colls/ and the module call.  Its own declarations:
 * coll_strata_stage_internal.h.
 *
 * A call describes each of its (at most two) buffers by the bytes it
 * touches on this rank, relative to the caller's pointer, and whether the
 * collective reads them (in), writes them (out) or both.  Staging then
 *   in    takes a bounce buffer (the communicator's cached pinned buffer, or
 *         one for this call), copies every `in` device region to it on
 *         strata's stream and waits for the copies
 *   run   the caller runs the saved fallback (or strata's host allreduce) on
 *         the host pointers mca_coll_strata_stage_ptr() gives
 *   out   copies every `out` region back to the device, after the work the
 *         application queued on the legacy default stream before the call,
 *         waits for the copies and gives the bounce buffer back
 * Host and managed buffers are not copied: their pointers pass unchanged.
 *
 * A failed copy in does not skip the collective: the peers are already in
 * it and would hang.  The region is zeroed, the collective runs, and the
 * call returns MPI_ERR_OTHER with a message naming the collective and the
 * driver call.  Only running out of host memory altogether (no pinned and
 * no plain memory for the bounce buffer, or no memory for a request)
 * returns an error before the collective: the peers then wait, as they do
 * when any MPI implementation fails an allocation inside a collective.
 *
 * May include: common/strata_mem.h, Open MPI's request and base/'s
 * verbosity (MCA_COLL_STRATA_TRACE reads it).  Not coll_strata.h (the
 * module is struct mca_coll_strata_module_t).
 */
#ifndef MCA_COLL_STRATA_STAGE_H
#define MCA_COLL_STRATA_STAGE_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>

#include <common/strata_mem.h>

#include "mpi.h"
#include "ompi/request/request.h"

#include "../base/coll_strata_log.h"

struct ompi_communicator_t;
struct ompi_datatype_t;
struct mca_coll_strata_module_t;

/* coll_strata_stage_max: default and smallest accepted value (bytes) */
#define MCA_COLL_STRATA_STAGE_MAX_DEFAULT (64 * 1024 * 1024)
#define MCA_COLL_STRATA_STAGE_MAX_MIN     (64 * 1024)

#define MCA_COLL_STRATA_STAGE_IN  0x1
#define MCA_COLL_STRATA_STAGE_OUT 0x2

/*
 * A call's buffer arguments, classified once at its entry point: the kind,
 * device and owning context of each, one driver query per distinct buffer
 * (none for MPI_IN_PLACE or NULL, none at all in a process without a CUDA
 * driver).  Every layer below reads them from here (the native path's
 * choice, the staging, the verbose lines) instead of asking the driver
 * again.  A pointer inside a classified buffer (a piece of it, a
 * datatype's lower bound) is taken to be of the same allocation.
 */
typedef struct mca_coll_strata_buf_kind_t {
    strata_mem_kind_t kind;
    int ordinal;   /* device of device or managed memory, else -1 */
    void *context; /* the CUcontext owning it (NULL: none, or host) */
} mca_coll_strata_buf_kind_t;

typedef struct mca_coll_strata_bufs_t {
    mca_coll_strata_buf_kind_t buf[2]; /* MCA_COLL_STRATA_STAGE_SEND, _RECV */
    bool in_place;                     /* the send buffer is MPI_IN_PLACE */
    bool one;                          /* no receive buffer: a one-buffer call */
} mca_coll_strata_bufs_t;

/* coll_strata_stage.c: classify sbuf and rbuf (rbuf NULL: none; rbuf ==
 * sbuf: asked once) */
void mca_coll_strata_bufs_classify(mca_coll_strata_bufs_t *b, const void *sbuf, const void *rbuf);

/* Whether either buffer is device memory: then the call cannot go to code
 * that reads memory with the CPU as it is. */
static inline bool mca_coll_strata_bufs_device(const mca_coll_strata_bufs_t *b)
{
    return STRATA_MEM_DEVICE == b->buf[0].kind || STRATA_MEM_DEVICE == b->buf[1].kind;
}

/* The buffer the call reads its input from: the receive buffer in place. */
static inline const mca_coll_strata_buf_kind_t *
mca_coll_strata_bufs_input(const mca_coll_strata_bufs_t *b)
{
    return b->in_place ? &b->buf[1] : &b->buf[0];
}

/* "device->host" ... for the verbose lines (in place: the receive buffer's
 * kind both ways; one buffer: its kind both ways) */
const char *mca_coll_strata_bufs_kinds(const mca_coll_strata_bufs_t *b);

typedef struct mca_coll_strata_stage_buf_t {
    const char *user; /* the caller's pointer */
    ptrdiff_t lo, hi; /* the call touches [user + lo, user + hi) */
    int dir;          /* MCA_COLL_STRATA_STAGE_IN | _OUT; 0: not used */
    strata_mem_kind_t kind;
    int ordinal;   /* device of a device buffer */
    size_t offset; /* of its region in the bounce buffer */
    /* a CUevent on the legacy default stream at the call's start, which
     * the copy out waits for (mca_coll_strata_stage_order); NULL: none */
    struct CUevent_st *after;
} mca_coll_strata_stage_buf_t;

#define MCA_COLL_STRATA_STAGE_SEND 0
#define MCA_COLL_STRATA_STAGE_RECV 1

typedef struct mca_coll_strata_stage_t {
    const char *coll; /* "MPI_Allgather", for messages */
    struct mca_coll_strata_module_t *module;
    mca_coll_strata_bufs_t bufs; /* the call's, classified at its entry */
    mca_coll_strata_stage_buf_t buf[2];
    char *bounce;
    size_t bounce_size;
    bool bounce_cached; /* the module's cached buffer (else this call's own) */
    bool bounce_pinned;
    bool bounce_sink;   /* no memory for it: a sink stands in (see stage_in) */
    int bounce_ordinal; /* device whose context allocated it */
    int rc;             /* first staging error (MPI_ERR_OTHER) */
} mca_coll_strata_stage_t;

/* The memory kind of one buffer argument: MPI_IN_PLACE and NULL are
 * host (for a pointer a call computes that no classification covers). */
strata_mem_kind_t mca_coll_strata_kind(const void *buf, int *ordinal);

/* Byte regions a call touches, relative to the buffer pointer. */
void mca_coll_strata_region(size_t count, struct ompi_datatype_t *dtype, ptrdiff_t *lo,
                            ptrdiff_t *hi);
/* A staging of the call whose buffers `bufs` classified (its entry's). */
void mca_coll_strata_stage_init(mca_coll_strata_stage_t *st,
                                struct mca_coll_strata_module_t *module, const char *coll,
                                const mca_coll_strata_bufs_t *bufs);
/*
 * Describe buffer `which` (SEND or RECV): `user` points into the call's
 * buffer of that name (its kind is the classification's).  An `out` region
 * that the call may not write completely should also be `in`, so the bytes
 * in its gaps come back unchanged.  Host buffers and empty regions are
 * ignored.
 */
void mca_coll_strata_stage_add(mca_coll_strata_stage_t *st, int which, const void *user,
                               ptrdiff_t lo, ptrdiff_t hi, int dir);

/* Copy in.  Returns OMPI_SUCCESS, or an error when no host memory could be
 * had at all (then nothing else needs undoing). */
int mca_coll_strata_stage_in(mca_coll_strata_stage_t *st);
/* What to hand the host code for buffer `which`: the host copy's address
 * matching the caller's pointer, or the caller's pointer itself. */
void *mca_coll_strata_stage_ptr(const mca_coll_strata_stage_t *st, int which);
/* The argument to hand the host code for a buffer argument `orig`:
 * unchanged when MPI_IN_PLACE or not described (not significant on this
 * rank), else its staged host address. */
static inline void *mca_coll_strata_stage_arg(const mca_coll_strata_stage_t *st, int which,
                                              const void *orig)
{
    if (MPI_IN_PLACE == orig || st->buf[which].user != (const char *)orig) {
        return (void *)orig;
    }
    return mca_coll_strata_stage_ptr(st, which);
}

/* Copy out (unless coll_rc or an earlier staging step failed) and give the
 * bounce buffer back.  Returns the call's result. */
int mca_coll_strata_stage_out(mca_coll_strata_stage_t *st, int coll_rc);

/* Free the communicator's cached bounce buffer (module destructor). */
void mca_coll_strata_stage_release(struct mca_coll_strata_module_t *module);

/*
 * coll_strata_stage_req.c: the request of a nonblocking collective strata
 * runs itself.  Made before the work starts (so that running out of memory
 * is reported before any communication), then activated with the started
 * host collective's request (staged: when that completes, the request
 * copies out and completes) or the engine's nonblocking call (pipeline).
 * Discard: nothing started.
 */
typedef struct mca_coll_strata_stage_req_t mca_coll_strata_stage_req_t;
mca_coll_strata_stage_req_t *mca_coll_strata_stage_req_new(struct mca_coll_strata_module_t *module,
                                                           struct ompi_communicator_t *comm);
int mca_coll_strata_stage_req_activate(mca_coll_strata_stage_req_t *req,
                                       const mca_coll_strata_stage_t *st, ompi_request_t *inner,
                                       ompi_request_t **request);
void mca_coll_strata_stage_req_discard(mca_coll_strata_stage_req_t *req);
/* The same for a nonblocking call on strata's pipeline: the request
 * completes once progress has advanced the call to its end: `finish` (if
 * not NULL) then runs with the call's outcome (the caller's own last step:
 * unpacking a packed image), and where `st` (not NULL) staged the call's
 * device buffers, the request copies out. */
int mca_coll_strata_stage_req_activate_call(mca_coll_strata_stage_req_t *req,
                                            const mca_coll_strata_stage_t *st,
                                            struct mca_coll_strata_pipeline_call_t *call,
                                            int (*finish)(void *arg, int rc), void *finish_arg,
                                            ompi_request_t **request);
/* Whether Open MPI's nonblocking request layout is the one strata restates
 * (coll_strata_ompi.h); without it strata installs no nonblocking entry. */
bool mca_coll_strata_stage_req_layout_ok(void);
/* Unregister the progress callback (component close). */
void mca_coll_strata_stage_req_finalize(void);

/*
 * coll_strata_describe.c: which bytes of its buffers each collective reads
 * and writes on this rank (what MPI says is significant where: roots,
 * MPI_IN_PLACE, v/w layouts).  Shared by the blocking and nonblocking
 * entries.  `rank`/`size` are the caller's in comm.
 */
typedef struct mca_coll_strata_call_t {
    int rank, size, root;
} mca_coll_strata_call_t;

void mca_coll_strata_describe_gather(mca_coll_strata_stage_t *st, const mca_coll_strata_call_t *c,
                                     const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                     void *rbuf, const int *rcounts, const int *displs, int rcount,
                                     struct ompi_datatype_t *rdtype, bool all);
void mca_coll_strata_describe_scatter(mca_coll_strata_stage_t *st, const mca_coll_strata_call_t *c,
                                      const void *sbuf, const int *scounts, const int *displs,
                                      int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                      int rcount, struct ompi_datatype_t *rdtype);
void mca_coll_strata_describe_alltoall(mca_coll_strata_stage_t *st, const mca_coll_strata_call_t *c,
                                       const void *sbuf, const int *scounts, const int *sdispls,
                                       int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                       const int *rcounts, const int *rdispls, int rcount,
                                       struct ompi_datatype_t *rdtype);
void mca_coll_strata_describe_alltoallw(mca_coll_strata_stage_t *st,
                                        const mca_coll_strata_call_t *c, const void *sbuf,
                                        const int *scounts, const int *sdispls,
                                        struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                        const int *rcounts, const int *rdispls,
                                        struct ompi_datatype_t *const *rdtypes);
/* Reductions, scans and broadcast: `count` elements from `sbuf` into
 * `rbuf`.  `root` < 0: every rank receives (allreduce, scan); exscan: rank
 * 0's result is undefined, its buffer comes back unchanged; bcast: pass
 * sbuf == rbuf == the buffer. */
typedef enum {
    MCA_COLL_STRATA_ELEM_REDUCE, /* allreduce (root -1), reduce, scan */
    MCA_COLL_STRATA_ELEM_EXSCAN,
    MCA_COLL_STRATA_ELEM_BCAST,
} mca_coll_strata_elem_t;
void mca_coll_strata_describe_elementwise(mca_coll_strata_stage_t *st,
                                          const mca_coll_strata_call_t *c,
                                          mca_coll_strata_elem_t kind, const void *sbuf, void *rbuf,
                                          int count, struct ompi_datatype_t *dtype);
void mca_coll_strata_describe_reduce_scatter(mca_coll_strata_stage_t *st,
                                             const mca_coll_strata_call_t *c, const void *sbuf,
                                             void *rbuf, const int *rcounts, int rcount,
                                             struct ompi_datatype_t *dtype);

/*
 * coll_strata_elementwise.c: one elementwise collective (reduction, scan,
 * broadcast), staged piece by piece where it must be; `run` is called per
 * piece with the host (or unchanged) pointers.  Host ranks call it too when
 * the data is above the pieces' bound, so that every rank runs the same
 * sequence of collectives.
 */
typedef int (*mca_coll_strata_elem_fn_t)(struct mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm, const void *sbuf,
                                         void *rbuf, int count, void *arg);
int mca_coll_strata_elementwise(struct mca_coll_strata_module_t *module,
                                struct ompi_communicator_t *comm, mca_coll_strata_elem_t kind,
                                int root, const char *coll, const mca_coll_strata_bufs_t *bufs,
                                const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, bool can_split,
                                mca_coll_strata_elem_fn_t run, void *arg);
/* Whether `count` x `dtype` is above the size from which pieces may be cut
 * (the same answer on every rank: the settings are agreed). */
bool mca_coll_strata_elem_big(const struct mca_coll_strata_module_t *module, int count,
                              struct ompi_datatype_t *dtype);

/*
 * The two halves of every entry point (colls/coll_strata_colls.c,
 * colls/coll_strata_icolls.c).  MCA_COLL_STRATA_UNSTAGED classifies the
 * call's buffers and returns `_call` (the saved module on the caller's
 * buffers) when neither is device memory, else starts the staging `_st`
 * with the classification.  MCA_COLL_STRATA_STAGED copies in, returns `_call` (the saved
 * module on the host copies) after copying out.  MCA_COLL_STRATA_ISTAGED
 * copies in, starts `_call` (a nonblocking collective on the host copies
 * whose request it gives as &inner) and returns a staged request in
 * *_request that copies out when `inner` completes.
 */
#define MCA_COLL_STRATA_UNSTAGED(_st, _mod, _coll, _comm, _s, _r, _call) \
    do { \
        mca_coll_strata_bufs_t _bufs; \
        mca_coll_strata_bufs_classify(&_bufs, (_s), (_r)); \
        if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&_bufs))) { \
            MCA_COLL_STRATA_TRACE((_coll), (_comm), &_bufs, "module below strata"); \
            return (_call); \
        } \
        mca_coll_strata_stage_init((_st), (_mod), (_coll), &_bufs); \
    } while (0)

#define MCA_COLL_STRATA_STAGED(_st, _comm, _call) \
    do { \
        int _rc = mca_coll_strata_stage_in(_st); \
        if (OMPI_SUCCESS != _rc) { \
            return _rc; \
        } \
        MCA_COLL_STRATA_TRACE((_st)->coll, (_comm), &(_st)->bufs, "staged"); \
        return mca_coll_strata_stage_out((_st), (_call)); \
    } while (0)

#define MCA_COLL_STRATA_ISTAGED(_st, _comm, _request, _call) \
    do { \
        int _rc = mca_coll_strata_stage_in(_st); \
        if (OMPI_SUCCESS != _rc) { \
            return _rc; \
        } \
        MCA_COLL_STRATA_ISTAGED_RUN((_st), (_comm), (_request), _call); \
    } while (0)

/* ISTAGED once copied in: the module below on the host copies. */
#define MCA_COLL_STRATA_ISTAGED_RUN(_st, _comm, _request, _call) \
    do { \
        ompi_request_t *inner = NULL; \
        mca_coll_strata_stage_req_t *_req; \
        int _rc; \
        _req = mca_coll_strata_stage_req_new((_st)->module, (_comm)); \
        if (NULL == _req) { \
            return mca_coll_strata_stage_out((_st), OMPI_ERR_OUT_OF_RESOURCE); \
        } \
        MCA_COLL_STRATA_TRACE((_st)->coll, (_comm), &(_st)->bufs, "staged"); \
        _rc = (_call); \
        if (OMPI_SUCCESS != _rc) { \
            mca_coll_strata_stage_req_discard(_req); \
            return mca_coll_strata_stage_out((_st), _rc); \
        } \
        return mca_coll_strata_stage_req_activate(_req, (_st), inner, (_request)); \
    } while (0)

/*
 * The same two halves where strata's own pipeline may run a nonblocking
 * call: `_try` (an expression that sets the caller's bool `_ran`) starts
 * it, on the caller's buffers (UNSTAGED_TRY) or on the host copies once
 * copied in (ISTAGED_TRY: the request then copies out when the call is
 * done); where it did not run, the module below does, as above.  The
 * choice is the same on every rank (it reads nothing of the buffers), so
 * host and device ranks of one call run the same collective.
 */
#define MCA_COLL_STRATA_UNSTAGED_TRY(_st, _mod, _coll, _comm, _s, _r, _ran, _try, _call) \
    do { \
        mca_coll_strata_bufs_t _bufs; \
        mca_coll_strata_bufs_classify(&_bufs, (_s), (_r)); \
        if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&_bufs))) { \
            int _rc = (_try); \
            if (_ran) { \
                return _rc; \
            } \
            MCA_COLL_STRATA_TRACE((_coll), (_comm), &_bufs, "module below strata"); \
            return (_call); \
        } \
        mca_coll_strata_stage_init((_st), (_mod), (_coll), &_bufs); \
    } while (0)

#define MCA_COLL_STRATA_ISTAGED_TRY(_st, _comm, _request, _ran, _try, _call) \
    do { \
        int _rc = mca_coll_strata_stage_in(_st); \
        if (OMPI_SUCCESS != _rc) { \
            return _rc; \
        } \
        _rc = (_try); \
        if (_ran) { \
            return _rc; \
        } \
        MCA_COLL_STRATA_ISTAGED_RUN((_st), (_comm), (_request), _call); \
    } while (0)

/* The host pointer to hand the saved module for a buffer argument. */
#define MCA_COLL_STRATA_S(_st, _sbuf) \
    mca_coll_strata_stage_arg((_st), MCA_COLL_STRATA_STAGE_SEND, (_sbuf))
#define MCA_COLL_STRATA_R(_st, _rbuf) \
    mca_coll_strata_stage_arg((_st), MCA_COLL_STRATA_STAGE_RECV, (_rbuf))

#define MCA_COLL_STRATA_CALL(_comm, _root) \
    { \
        .rank = ompi_comm_rank(_comm), .size = ompi_comm_size(_comm), .root = (_root) \
    }

/* Verbosity 20: one line per call naming the kinds and the path. */
void mca_coll_strata_trace(const char *coll, struct ompi_communicator_t *comm,
                           const mca_coll_strata_bufs_t *bufs, const char *path);
#define MCA_COLL_STRATA_TRACE(_coll, _comm, _bufs, _path) \
    do { \
        if (OPAL_UNLIKELY(mca_coll_strata_log.verbose >= 20)) { \
            mca_coll_strata_trace((_coll), (_comm), (_bufs), (_path)); \
        } \
    } while (0)

#endif /* MCA_COLL_STRATA_STAGE_H */
