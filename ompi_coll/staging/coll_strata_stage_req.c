/*
 * coll/strata: the request of a nonblocking collective strata runs itself,
 * of one of two kinds:
 *   staged    device buffers: the entry copies in (local work only), starts
 *             the saved module's nonblocking collective on the host copies
 *             (`inner`); once that completes, this request copies out
 *   pipeline  host buffers on strata's pipeline: the entry started the
 *             engine's nonblocking call (`call`, engine/coll_strata_pipeline_nb.c);
 *             progress advances it
 * Either way the call must stay nonblocking: a call that waited for its
 * peers could deadlock a correct program (rank A: MPI_Iallreduce, MPI_Send
 * to B, MPI_Wait; rank B: MPI_Recv from A, MPI_Iallreduce, MPI_Wait).  A
 * progress callback, registered the first time such a request exists,
 * watches the inner requests and advances the calls; when one is done it
 * finishes it and completes the outer request, which the application's
 * MPI_Wait/MPI_Test then sees.  One thread at a time runs the callback
 * (others, and a callback reached again from inside it, return at once).
 */
#include "../base/coll_strata_ompi.h"
#include "../comm/coll_strata_module.h"
#include "coll_strata_stage.h"

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

struct mca_coll_strata_stage_req_t {
    /* what MPI_I* expects of a coll request (coll_strata_ompi.h) */
    mca_coll_strata_nbc_request_t super;
    mca_coll_strata_stage_t stage;
    ompi_request_t *inner;                 /* staged: the fallback's request on the host copies */
    mca_coll_strata_pipeline_call_t *call; /* pipeline: the engine's call */
    bool staged;                           /* pipeline: on the host copies of `stage` */
    /* pipeline: what the caller does once the call is done (unpack a
     * packed image, free it), given the call's outcome; returns it */
    int (*finish)(void *arg, int rc);
    void *finish_arg;
    bool freed;            /* MPI_Request_free came before completion */
    struct mca_coll_strata_stage_req_t *next;
};

static OBJ_CLASS_INSTANCE(mca_coll_strata_stage_req_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* Staged requests in flight (any communicator), and the lock over the list
 * and every request's `freed` flag. */
static mca_coll_strata_stage_req_t *mca_coll_strata_stage_reqs;
static opal_mutex_t mca_coll_strata_stage_reqs_lock = OPAL_MUTEX_STATIC_INIT;
static bool mca_coll_strata_stage_progress_on;
/* a thread is in the progress callback */
static int mca_coll_strata_stage_progress_busy;

static void mca_coll_strata_stage_req_release(mca_coll_strata_stage_req_t *req)
{
    struct ompi_communicator_t *comm = req->super.super.req_mpi_object.comm;

    OBJ_RELEASE(req->stage.module);
    OMPI_REQUEST_FINI(&req->super.super);
    OBJ_RELEASE(req);
    OBJ_RELEASE(comm);
}

/* Copy out, report, and complete; a request MPI_Request_free let go of is
 * released here.  Completing and reading `freed` happen under the lock, so
 * a concurrent MPI_Request_free sees either an incomplete request (and
 * leaves it to this function) or a complete one (and releases it itself). */
static void mca_coll_strata_stage_req_finish(mca_coll_strata_stage_req_t *req)
{
    bool freed;
    int rc;

    if (NULL != req->call) {
        rc = mca_coll_strata_pipeline_end(req->call);
        req->call = NULL;
        if (NULL != req->finish) {
            rc = req->finish(req->finish_arg, rc);
        }
        if (req->staged) {
            rc = mca_coll_strata_stage_out(&req->stage, rc);
        }
    } else {
        rc = mca_coll_strata_stage_out(&req->stage, req->inner->req_status.MPI_ERROR);
        (void)ompi_request_free(&req->inner);
    }
    req->super.super.req_status.MPI_ERROR = rc;

    OPAL_THREAD_LOCK(&mca_coll_strata_stage_reqs_lock);
    freed = req->freed;
    /* Completion runs the callbacks MPI_I* chained to release the call's
     * datatypes and ops; nobody waits on a freed request. */
    ompi_request_complete(&req->super.super, !freed);
    OPAL_THREAD_UNLOCK(&mca_coll_strata_stage_reqs_lock);
    if (freed) {
        mca_coll_strata_stage_req_release(req);
    }
}

/* Whether the request's work is done: its inner request complete, or its
 * call advanced to its end. */
static bool mca_coll_strata_stage_req_done(mca_coll_strata_stage_req_t *req)
{
    return (NULL != req->call) ? mca_coll_strata_pipeline_advance(req->call)
                               : REQUEST_COMPLETE(req->inner);
}

static int mca_coll_strata_stage_req_progress(void)
{
    mca_coll_strata_stage_req_t *done = NULL, **link, *req;
    int count = 0, idle = 0;

    if (NULL == mca_coll_strata_stage_reqs ||
        !__atomic_compare_exchange_n(&mca_coll_strata_stage_progress_busy, &idle, 1, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return 0;
    }
    /* (advancing a call may reach opal_progress again: the busy word makes
     * that return at once, and the list lock is not held meanwhile by
     * anyone but this thread, which does not take it twice) */
    OPAL_THREAD_LOCK(&mca_coll_strata_stage_reqs_lock);
    for (link = &mca_coll_strata_stage_reqs; NULL != *link;) {
        req = *link;
        if (mca_coll_strata_stage_req_done(req)) {
            *link = req->next;
            req->next = done;
            done = req;
        } else {
            link = &req->next;
        }
    }
    OPAL_THREAD_UNLOCK(&mca_coll_strata_stage_reqs_lock);
    /* Outside the list lock: copying out waits for the device, completing
     * runs the callbacks MPI_I* chained (finish takes the lock for that). */
    while (NULL != done) {
        req = done;
        done = req->next;
        mca_coll_strata_stage_req_finish(req);
        ++count;
    }
    __atomic_store_n(&mca_coll_strata_stage_progress_busy, 0, __ATOMIC_RELEASE);
    return count;
}

static int mca_coll_strata_stage_req_free(ompi_request_t **request)
{
    mca_coll_strata_stage_req_t *req = (mca_coll_strata_stage_req_t *)*request;
    bool complete;

    OPAL_THREAD_LOCK(&mca_coll_strata_stage_reqs_lock);
    complete = REQUEST_COMPLETE(&req->super.super);
    req->freed = !complete;
    OPAL_THREAD_UNLOCK(&mca_coll_strata_stage_reqs_lock);
    if (complete) {
        mca_coll_strata_stage_req_release(req);
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

mca_coll_strata_stage_req_t *mca_coll_strata_stage_req_new(mca_coll_strata_module_t *module,
                                                           struct ompi_communicator_t *comm)
{
    mca_coll_strata_stage_req_t *req = OBJ_NEW(mca_coll_strata_stage_req_t);

    if (NULL == req) {
        return NULL;
    }
    mca_coll_strata_request_init(&req->super.super, comm, false, mca_coll_strata_stage_req_free);
    req->inner = NULL;
    req->call = NULL;
    req->staged = false;
    req->finish = NULL;
    req->finish_arg = NULL;
    req->freed = false;
    req->stage.module = module;
    OBJ_RETAIN(module);
    return req;
}

void mca_coll_strata_stage_req_discard(mca_coll_strata_stage_req_t *req)
{
    mca_coll_strata_stage_req_release(req);
}

/* The request in the progress callback's list (registered the first time). */
static void mca_coll_strata_stage_req_watch(mca_coll_strata_stage_req_t *req)
{
    OPAL_THREAD_LOCK(&mca_coll_strata_stage_reqs_lock);
    if (!mca_coll_strata_stage_progress_on) {
        mca_coll_strata_stage_progress_on = true;
        opal_progress_register(mca_coll_strata_stage_req_progress);
    }
    req->next = mca_coll_strata_stage_reqs;
    mca_coll_strata_stage_reqs = req;
    OPAL_THREAD_UNLOCK(&mca_coll_strata_stage_reqs_lock);
}

int mca_coll_strata_stage_req_activate(mca_coll_strata_stage_req_t *req,
                                       const mca_coll_strata_stage_t *st, ompi_request_t *inner,
                                       ompi_request_t **request)
{
    req->stage = *st;
    req->inner = inner;
    mca_coll_strata_stage_req_watch(req);
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

int mca_coll_strata_stage_req_activate_call(mca_coll_strata_stage_req_t *req,
                                            const mca_coll_strata_stage_t *st,
                                            mca_coll_strata_pipeline_call_t *call,
                                            int (*finish)(void *arg, int rc), void *finish_arg,
                                            ompi_request_t **request)
{
    req->call = call;
    req->finish = finish;
    req->finish_arg = finish_arg;
    if (NULL != st) {
        req->stage = *st;
        req->staged = true;
    }
    mca_coll_strata_stage_req_watch(req);
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

/* The layout restated in coll_strata_ompi.h is the one this Open MPI uses
 * (its class records the size it was built with). */
bool mca_coll_strata_stage_req_layout_ok(void)
{
    return ompi_coll_base_nbc_request_t_class.cls_sizeof == sizeof(mca_coll_strata_nbc_request_t);
}

void mca_coll_strata_stage_req_finalize(void)
{
    if (mca_coll_strata_stage_progress_on) {
        opal_progress_unregister(mca_coll_strata_stage_req_progress);
        mca_coll_strata_stage_progress_on = false;
    }
}
