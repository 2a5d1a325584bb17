/*
 * coll/strata persistent collectives (MPI 4.0: MPI_Allreduce_init and the
 * others; Open MPI 5.0 and later).
 *
 * Without these, Open MPI hands MPI_*_init to the module below strata
 * (libnbc), whose schedule touches the buffers from the host: a device
 * buffer there is read as host memory.  So strata takes the six it runs
 * on its pipeline (allreduce, reduce, reduce_scatter_block,
 * reduce_scatter, bcast, allgather): MPI_*_init keeps the call's
 * arguments in a persistent request; each MPI_Start starts the same
 * call's nonblocking form through strata's own entry (colls/
 * coll_strata_icolls.c: the pipeline where it runs, staged for device
 * buffers, the module below otherwise: the same decision as MPI_I*), and
 * completes the persistent request when that inner request completes
 * (its completion callback).  MPI_Wait then makes it inactive again, as
 * for any persistent request; the inner request is released at the next
 * start or when the persistent one is freed (it is complete by then).
 * Nothing here waits for a peer.  The other persistent collectives stay
 * with the module below.
 */
#include "../base/coll_strata_ompi.h"
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls.h"

#if MCA_STRATA_OMPI_5

#include "ompi/constants.h"

typedef enum {
    MCA_COLL_STRATA_PERSIST_ALLREDUCE,
    MCA_COLL_STRATA_PERSIST_REDUCE,
    MCA_COLL_STRATA_PERSIST_REDUCE_SCATTER_BLOCK,
    MCA_COLL_STRATA_PERSIST_REDUCE_SCATTER,
    MCA_COLL_STRATA_PERSIST_BCAST,
    MCA_COLL_STRATA_PERSIST_ALLGATHER
} mca_coll_strata_persist_kind_t;

/* A persistent call's arguments, as MPI_*_init gave them (MPI: unchanged
 * until the request is freed); what a kind does not take is left zero. */
typedef struct mca_coll_strata_persist_call_t {
    mca_coll_strata_persist_kind_t kind;
    const void *sbuf;
    void *rbuf; /* the bcast's buffer */
    int scount, rcount, root;
    const int *rcounts;
    struct ompi_datatype_t *sdtype, *rdtype; /* rdtype: the allgather's */
    struct ompi_op_t *op;                    /* the reductions' */
} mca_coll_strata_persist_call_t;

typedef struct mca_coll_strata_persist_t {
    /* what MPI_*_init's caller expects of a coll request (retain_op) */
    mca_coll_strata_nbc_request_t super;
    mca_coll_strata_persist_call_t call;
    /* an allgather in place may give anything as its send type: not
     * retained then */
    bool sdtype_held;
    mca_coll_base_module_t *module;
    /* the nonblocking call of the current (or last) start, or NULL */
    ompi_request_t *inner;
} mca_coll_strata_persist_t;

static OBJ_CLASS_INSTANCE(mca_coll_strata_persist_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* The inner request completed: so does the persistent one, with its outcome. */
static int mca_coll_strata_persist_done(ompi_request_t *inner)
{
    mca_coll_strata_persist_t *p = (mca_coll_strata_persist_t *)inner->req_complete_cb_data;

    p->super.super.req_status.MPI_ERROR = inner->req_status.MPI_ERROR;
    ompi_request_complete(&p->super.super, true);
    return OMPI_SUCCESS;
}

/* The nonblocking form of the kept call, through strata's own entry. */
static int mca_coll_strata_persist_issue(mca_coll_strata_persist_t *p)
{
    struct ompi_communicator_t *comm = p->super.super.req_mpi_object.comm;
    const mca_coll_strata_persist_call_t *c = &p->call;

    switch (c->kind) {
    case MCA_COLL_STRATA_PERSIST_ALLREDUCE:
        return mca_coll_strata_iallreduce(c->sbuf, c->rbuf, c->scount, c->sdtype, c->op, comm,
                                          &p->inner, p->module);
    case MCA_COLL_STRATA_PERSIST_REDUCE:
        return mca_coll_strata_ireduce(c->sbuf, c->rbuf, c->scount, c->sdtype, c->op, c->root, comm,
                                       &p->inner, p->module);
    case MCA_COLL_STRATA_PERSIST_REDUCE_SCATTER_BLOCK:
        return mca_coll_strata_ireduce_scatter_block(c->sbuf, c->rbuf, c->rcount, c->sdtype, c->op,
                                                     comm, &p->inner, p->module);
    case MCA_COLL_STRATA_PERSIST_REDUCE_SCATTER:
        return mca_coll_strata_ireduce_scatter(c->sbuf, c->rbuf, c->rcounts, c->sdtype, c->op, comm,
                                               &p->inner, p->module);
    case MCA_COLL_STRATA_PERSIST_BCAST:
        return mca_coll_strata_ibcast(c->rbuf, c->scount, c->sdtype, c->root, comm, &p->inner,
                                      p->module);
    default:
        return mca_coll_strata_iallgather(c->sbuf, c->scount, c->sdtype, c->rbuf, c->rcount,
                                          c->rdtype, comm, &p->inner, p->module);
    }
}

/* MPI_Start, MPI_Startall: each request's call started; a start that
 * fails leaves its request inactive and returns the error. */
static int mca_coll_strata_persist_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_coll_strata_persist_t *p = (mca_coll_strata_persist_t *)requests[i];
        int rc;

        if (NULL != p->inner) {
            (void)ompi_request_free(&p->inner); /* the last start's: complete */
        }
        p->super.super.req_status = ompi_status_empty;
        p->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
        p->super.super.req_complete = REQUEST_PENDING;
        p->super.super.req_state = OMPI_REQUEST_ACTIVE;
        p->inner = NULL;
        rc = mca_coll_strata_persist_issue(p);
        if (OMPI_SUCCESS != rc || NULL == p->inner) {
            p->inner = NULL;
            p->super.super.req_complete = REQUEST_COMPLETED;
            p->super.super.req_state = OMPI_REQUEST_INACTIVE;
            return (OMPI_SUCCESS != rc) ? rc : OMPI_ERR_OUT_OF_RESOURCE;
        }
        /* (calls the callback at once where the inner one is already complete) */
        (void)ompi_request_set_callback(p->inner, mca_coll_strata_persist_done, p);
    }
    return OMPI_SUCCESS;
}

/* The call's objects, retained for the request's life (release: false). */
static void mca_coll_strata_persist_hold(mca_coll_strata_persist_t *p, bool hold)
{
    void *objs[] = {p->sdtype_held ? p->call.sdtype : NULL, p->call.rdtype, p->call.op, p->module};

    for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); ++i) {
        if (NULL == objs[i]) {
            continue;
        }
        if (hold) {
            OBJ_RETAIN(objs[i]);
        } else {
            OBJ_RELEASE(objs[i]);
        }
    }
}

/* MPI_Request_free: an active persistent collective cannot be freed (its
 * buffers are still in use); an inactive one lets go of everything. */
static int mca_coll_strata_persist_free(ompi_request_t **request)
{
    mca_coll_strata_persist_t *p = (mca_coll_strata_persist_t *)*request;
    struct ompi_communicator_t *comm = p->super.super.req_mpi_object.comm;

    if (OMPI_REQUEST_ACTIVE == p->super.super.req_state && !REQUEST_COMPLETE(&p->super.super)) {
        return MPI_ERR_REQUEST;
    }
    if (NULL != p->inner) {
        (void)ompi_request_free(&p->inner);
    }
    mca_coll_strata_persist_hold(p, false);
    OMPI_REQUEST_FINI(&p->super.super);
    OBJ_RELEASE(p);
    OBJ_RELEASE(comm);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* MPI_*_init: an inactive persistent request of the call `c` on comm. */
static int mca_coll_strata_persist_init(const mca_coll_strata_persist_call_t *c,
                                        struct ompi_communicator_t *comm, ompi_request_t **request,
                                        mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_t *p = OBJ_NEW(mca_coll_strata_persist_t);

    if (NULL == p) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_coll_strata_request_init(&p->super.super, comm, true, mca_coll_strata_persist_free);
    p->super.super.req_start = mca_coll_strata_persist_start;
    p->call = *c;
    p->sdtype_held = !(MCA_COLL_STRATA_PERSIST_ALLGATHER == c->kind && MPI_IN_PLACE == c->sbuf);
    p->module = module;
    p->inner = NULL;
    mca_coll_strata_persist_hold(p, true);
    *request = &p->super.super;
    return OMPI_SUCCESS;
}

/* The info hints of MPI_*_init are not read (none is defined for these). */

int mca_coll_strata_allreduce_init(const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_call_t c = {.kind = MCA_COLL_STRATA_PERSIST_ALLREDUCE,
                                        .sbuf = sbuf,
                                        .rbuf = rbuf,
                                        .scount = count,
                                        .sdtype = dtype,
                                        .op = op};

    (void)info;
    return mca_coll_strata_persist_init(&c, comm, request, module);
}

int mca_coll_strata_reduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_call_t c = {.kind = MCA_COLL_STRATA_PERSIST_REDUCE,
                                        .sbuf = sbuf,
                                        .rbuf = rbuf,
                                        .scount = count,
                                        .root = root,
                                        .sdtype = dtype,
                                        .op = op};

    (void)info;
    return mca_coll_strata_persist_init(&c, comm, request, module);
}

int mca_coll_strata_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              struct ompi_info_t *info, ompi_request_t **request,
                                              mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_call_t c = {.kind = MCA_COLL_STRATA_PERSIST_REDUCE_SCATTER_BLOCK,
                                        .sbuf = sbuf,
                                        .rbuf = rbuf,
                                        .rcount = rcount,
                                        .sdtype = dtype,
                                        .op = op};

    (void)info;
    return mca_coll_strata_persist_init(&c, comm, request, module);
}

int mca_coll_strata_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_call_t c = {.kind = MCA_COLL_STRATA_PERSIST_REDUCE_SCATTER,
                                        .sbuf = sbuf,
                                        .rbuf = rbuf,
                                        .rcounts = rcounts,
                                        .sdtype = dtype,
                                        .op = op};

    (void)info;
    return mca_coll_strata_persist_init(&c, comm, request, module);
}

int mca_coll_strata_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_call_t c = {.kind = MCA_COLL_STRATA_PERSIST_BCAST,
                                        .rbuf = buf,
                                        .scount = count,
                                        .root = root,
                                        .sdtype = dtype};

    (void)info;
    return mca_coll_strata_persist_init(&c, comm, request, module);
}

int mca_coll_strata_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_persist_call_t c = {.kind = MCA_COLL_STRATA_PERSIST_ALLGATHER,
                                        .sbuf = sbuf,
                                        .rbuf = rbuf,
                                        .scount = scount,
                                        .rcount = rcount,
                                        .sdtype = sdtype,
                                        .rdtype = rdtype};

    (void)info;
    return mca_coll_strata_persist_init(&c, comm, request, module);
}

#endif /* MCA_STRATA_OMPI_5 */
