/*
 * coll/strata pipeline, nonblocking: the third driver.  A nonblocking
 * collective's call is prepared in MPI_I* as a blocking one would be (its
 * chunks take the next serials of the communicator's counters), then
 * turned by progress: each advance runs the host driver's turn
 * (coll_strata_pipeline_host.c), every step that can move now, and never
 * waits; MPI_Wait/Test see it done once its last chunk is copied out.
 *
 * Order.  The progress counters say "every chunk up to g": a call may
 * store a counter only once every earlier call of the communicator has
 * passed that counter.  So the engine keeps its started calls in order and
 * turns only the oldest; a blocking call (any driver) first finishes every
 * call started before it (mca_coll_strata_pipeline_drain), as MPI's order
 * of collectives on a communicator already says every rank does.
 *
 * Who turns.  Progress runs in whatever thread calls into MPI (and, in a
 * blocking call of this rank, inside its own waits), and in the progress
 * thread (coll_strata_progress.c), so one thread at a
 * time drives an engine: the engine's `nb_driving` word, taken with a
 * compare-and-swap.  Progress that finds it taken skips the engine (the
 * holder is turning it); a blocking call or a start waits for it (a turn is
 * short: it never waits for a peer).
 */
#include "coll_strata_pipeline.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

struct mca_coll_strata_pipeline_call_t {
    mca_coll_strata_pipeline_t p;
    /* the caller's decision and the nodes' parts, kept for the call's
     * life (the caller's are gone once MPI_I* returns; the engine's parts
     * are the next call's) */
    mca_coll_strata_decision_t decision;
    size_t *node_parts;
    const char *coll;
    bool done; /* its last chunk is copied out */
    /* the progress thread may turn it: none of its exchanges enters the pml */
    bool threadable;
    struct mca_coll_strata_pipeline_call_t *next;
};

/* Most turns one advance runs while they move: progress returns to the
 * application's other requests between them. */
#define MCA_COLL_STRATA_NB_TURNS 16
/* How recently (seconds) the application must have advanced an engine for
 * the progress thread to leave it alone. */
#define MCA_COLL_STRATA_NB_APP_S 1e-3

static bool mca_coll_strata_pipeline_nb_try_drive(mca_coll_strata_engine_t *e)
{
    int idle = 0;

    return __atomic_compare_exchange_n(&e->nb_driving, &idle, 1, false, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

static void mca_coll_strata_pipeline_nb_drive(mca_coll_strata_engine_t *e)
{
    while (!mca_coll_strata_pipeline_nb_try_drive(e)) {
        sched_yield(); /* another thread's turn: short, it never waits */
    }
}

static void mca_coll_strata_pipeline_nb_let_go(mca_coll_strata_engine_t *e)
{
    __atomic_store_n(&e->nb_driving, 0, __ATOMIC_RELEASE);
}

/* Turn the oldest call (the engine driven by this thread) while it moves;
 * a finished one leaves the queue and the next becomes the oldest.  The
 * progress thread (`in_thread`) stops at a call it may not turn.  Whether
 * anything moved. */
static bool mca_coll_strata_pipeline_nb_turns(mca_coll_strata_engine_t *e, bool in_thread)
{
    bool any = false;

    for (int i = 0; i < MCA_COLL_STRATA_NB_TURNS && NULL != e->nb_head; ++i) {
        mca_coll_strata_pipeline_call_t *call = e->nb_head;
        bool moved = false;

        if (in_thread && !call->threadable) {
            break;
        }
        mca_coll_strata_pipeline_host_turn(&call->p, &moved);
        if (call->p.next_out == call->p.nchunks) {
            call->done = true;
            e->nb_head = call->next;
            if (NULL == e->nb_head) {
                e->nb_tail = NULL;
            }
            moved = true;
        }
        if (!moved) {
            /* waiting for a peer: one that died would never move it */
            mca_coll_strata_shm_watch(call->p.shm);
            break;
        }
        any = true;
    }
    return any;
}

/* Whether the call's exchanges go on the engine's ucp wire: where the rail
 * set one up, for elements without gaps (the wire sends bytes, the pml
 * elements; predefined types are the same on every rank, so every member
 * decides alike). */
static bool mca_coll_strata_pipeline_nb_ucp(const mca_coll_strata_pipeline_t *p)
{
    size_t size = 0;

    if (NULL == p->e->wire_ucp || NULL == p->dtype) {
        return false;
    }
    ompi_datatype_type_size(p->dtype, &size);
    return size == (size_t)p->extent;
}

int mca_coll_strata_pipeline_start(mca_coll_strata_engine_t *e,
                                   const mca_coll_strata_pipeline_args_t *a,
                                   const mca_coll_strata_decision_t *decision,
                                   mca_coll_strata_node_t *node,
                                   mca_coll_strata_pipeline_call_t **out)
{
    mca_coll_strata_pipeline_call_t *call = calloc(1, sizeof(*call));
    size_t nparts = (size_t)e->topo.nnodes + 1;

    if (NULL == call || NULL == (call->node_parts = malloc(sizeof(size_t) * nparts))) {
        free(call);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    call->decision = *decision;
    call->coll = a->coll;
    mca_coll_strata_pipeline_nb_drive(e);
    mca_coll_strata_pipeline_prepare(e, a, &call->decision, node, NULL, &call->p);
    call->p.on_ucp_wire = mca_coll_strata_pipeline_nb_ucp(&call->p);
    call->threadable = mca_coll_strata_progress_wanted(e) &&
                       (1 == e->topo.nnodes || NULL == e->topo.rail_comm || call->p.on_ucp_wire);
    if (NULL != call->p.node_parts) {
        memcpy(call->node_parts, call->p.node_parts, sizeof(size_t) * nparts);
        call->p.node_parts = call->node_parts;
    }
    if (0 == call->p.nchunks) {
        call->done = true;
    } else if (NULL == e->nb_tail) {
        e->nb_head = e->nb_tail = call;
    } else {
        e->nb_tail->next = call;
        e->nb_tail = call;
    }
    /* what can move at once (this rank's copies in) moves now */
    (void)mca_coll_strata_pipeline_nb_turns(e, false);
    mca_coll_strata_pipeline_nb_let_go(e);
    if (!call->done && call->threadable) {
        mca_coll_strata_progress_watch(e); /* the rest while the caller computes */
    }
    *out = call;
    return OMPI_SUCCESS;
}

bool mca_coll_strata_pipeline_advance(mca_coll_strata_pipeline_call_t *call)
{
    mca_coll_strata_engine_t *e = call->p.e;
    double now;

    if (__atomic_load_n(&call->done, __ATOMIC_ACQUIRE)) {
        return true;
    }
    /* the application drives now (MPI_Wait, MPI_Test): the progress
     * thread leaves the engine to it (mca_coll_strata_pipeline_nb_progress) */
    now = mca_coll_strata_now();
    __atomic_store(&e->nb_app_s, &now, __ATOMIC_RELAXED);
    if (mca_coll_strata_pipeline_nb_try_drive(e)) {
        (void)mca_coll_strata_pipeline_nb_turns(e, false);
        mca_coll_strata_pipeline_nb_let_go(e);
    }
    return __atomic_load_n(&call->done, __ATOMIC_ACQUIRE);
}

bool mca_coll_strata_pipeline_nb_progress(mca_coll_strata_engine_t *e, bool *aside)
{
    bool moved = false;
    double app;

    *aside = false;
    if (NULL == __atomic_load_n(&e->nb_head, __ATOMIC_ACQUIRE)) {
        return false;
    }
    /* Two threads turning one engine in turn, each spinning while the
     * other holds it, leave every rank of a node with fewer cores than
     * threads waiting for one that was descheduled holding it (measured on
     * 2x2 namespace nodes: MPI_Iallreduce + MPI_Wait 4-25x the blocking
     * call).  So while the application's thread drives, or has within the
     * last MCA_COLL_STRATA_NB_APP_S (MPI_Wait polls far more often), the
     * progress thread does not touch the engine: it sleeps until the
     * application leaves MPI. */
    __atomic_load(&e->nb_app_s, &app, __ATOMIC_RELAXED);
    if (mca_coll_strata_now() - app < MCA_COLL_STRATA_NB_APP_S ||
        !mca_coll_strata_pipeline_nb_try_drive(e)) {
        *aside = true;
        return false;
    }
    /* a call whose exchanges enter the pml is left to MPI calls */
    moved = mca_coll_strata_pipeline_nb_turns(e, true);
    mca_coll_strata_pipeline_nb_let_go(e);
    return moved;
}

int mca_coll_strata_pipeline_end(mca_coll_strata_pipeline_call_t *call)
{
    int rc = mca_coll_strata_pipeline_outcome(&call->p, call->coll);

    free(call->node_parts);
    free(call);
    return rc;
}

void mca_coll_strata_pipeline_drain(mca_coll_strata_engine_t *e)
{
    if (NULL == __atomic_load_n(&e->nb_head, __ATOMIC_ACQUIRE)) {
        return;
    }
    mca_coll_strata_pipeline_nb_drive(e);
    while (NULL != e->nb_head) {
        if (!mca_coll_strata_pipeline_nb_turns(e, false)) {
            /* the pml's progress (this engine skipped: it is driven here) */
            opal_progress();
        }
    }
    mca_coll_strata_pipeline_nb_let_go(e);
}
