/*
 * coll/strata progress thread: nonblocking calls that complete while the
 * application computes without calling MPI (coll_strata_progress).
 *
 * One thread per process, started at the first nonblocking call that can
 * use it (`auto`) or at the first communicator set up (`thread`); never
 * with `calls` (progress only inside MPI calls, as Open MPI's own
 * nonblocking collectives).  It turns the calls of the engines it watches
 * (coll_strata_pipeline_nb.c's turns, the same steps as every driver) and
 * sleeps when nothing moves:
 *   - on the node's doorbell (the segment's word every announcing store
 *     bumps while a thread sleeps on it: a futex shared by the node's
 *     processes) while a watched call waits for a peer;
 *   - on a word of its own (a process-private futex) while nothing is
 *     watched: an idle thread costs no CPU.
 * Which calls it may turn: those of communicators within one node, whose
 * steps are copies and reductions in the node's segment, and those of
 * communicators across nodes whose rail has coll/strata's own UCP wire
 * (coll_strata_wire_ucp.c): their exchanges never enter the pml, whose
 * locks are off in a process that asked for MPI_THREAD_SINGLE or FUNNELED.
 * Where there is no such wire, calls between nodes progress inside MPI
 * calls only (docs/design.md, "Nonblocking collectives on the pipeline").
 * While such a call waits, the thread sleeps on the doorbell as for any
 * other, and the wire's watcher wakes it when a message arrives.
 *
 * The watched engines are a list under one mutex, which the thread holds
 * while it turns them (short: a turn never waits) and never while it
 * sleeps; an engine leaves the list before it is released.
 */
#include "coll_strata_pipeline.h"
#include "coll_strata_wire.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Most a sleep on a doorbell lasts: another watched engine's doorbell
 * (or a peer of a node whose ring this thread did not hear) is looked at
 * again by then. */
#define MCA_COLL_STRATA_PROGRESS_NAP_NS 2000000L
/* How long the thread leaves an engine the application drives before it
 * looks again (the application's MPI_Wait or MPI_Test polls far more
 * often: the engine stays its own while it is in MPI). */
#define MCA_COLL_STRATA_PROGRESS_ASIDE_NS 1000000L

typedef struct mca_coll_strata_progress_entry_t {
    mca_coll_strata_engine_t *e;
    struct mca_coll_strata_progress_entry_t *next;
} mca_coll_strata_progress_entry_t;

static struct {
    pthread_mutex_t lock; /* the list, `running`, `stop`, `napping_on` */
    mca_coll_strata_progress_entry_t *watched;
    bool running, stop, failed;
    pthread_t thread;
    uint32_t work;        /* bumped when an engine is watched: the idle sleep's word */
    uint32_t *napping_on; /* the doorbell the thread sleeps on, or NULL */
    int mode;             /* MCA_COLL_STRATA_PROGRESS_* */
} mca_coll_strata_progress = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .mode = MCA_COLL_STRATA_PROGRESS_AUTO,
};

static long mca_coll_strata_progress_futex(uint32_t *word, int op, uint32_t value,
                                           const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}

void mca_coll_strata_progress_ring_slow(mca_coll_strata_shm_t *shm)
{
    uint32_t *doorbell = &shm->flags[0].doorbell;

    __atomic_add_fetch(doorbell, 1, __ATOMIC_SEQ_CST);
    /* shared (not FUTEX_PRIVATE): the sleepers are other processes */
    (void)mca_coll_strata_progress_futex(doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

/* One pass over the watched engines (the lock held): turn each; forget
 * those left without calls.  Whether anything moved; *wait: an engine
 * still waiting for a peer, if any; *aside: one the application drives
 * now (left to it). */
static bool mca_coll_strata_progress_pass(mca_coll_strata_engine_t **wait, bool *aside)
{
    mca_coll_strata_progress_entry_t **link = &mca_coll_strata_progress.watched, *w;
    bool moved = false;

    *wait = NULL;
    *aside = false;
    while (NULL != (w = *link)) {
        bool left;

        if (mca_coll_strata_pipeline_nb_progress(w->e, &left)) {
            moved = true;
        }
        *aside = *aside || left;
        if (NULL == __atomic_load_n(&w->e->nb_head, __ATOMIC_ACQUIRE)) {
            *link = w->next;
            free(w);
            continue;
        }
        if (NULL == *wait) {
            *wait = w->e;
        }
        link = &w->next;
    }
    return moved;
}

/* Whether a watched engine has calls whose exchanges go on the ucp wire
 * (the lock held). */
static bool mca_coll_strata_progress_on_wire(void)
{
    for (mca_coll_strata_progress_entry_t *w = mca_coll_strata_progress.watched; NULL != w;
         w = w->next) {
        if (NULL != w->e->wire_ucp) {
            return true;
        }
    }
    return false;
}

static void *mca_coll_strata_progress_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mca_coll_strata_progress.lock);
    while (!mca_coll_strata_progress.stop) {
        mca_coll_strata_engine_t *wait;
        uint32_t seen, work = __atomic_load_n(&mca_coll_strata_progress.work, __ATOMIC_ACQUIRE);
        uint32_t *doorbell = NULL;
        struct timespec nap = {0, MCA_COLL_STRATA_PROGRESS_NAP_NS};
        bool aside;

        if (mca_coll_strata_progress_pass(&wait, &aside)) {
            continue;
        }
        if (aside) {
            /* The application drives an engine: look again once it may
             * have left MPI.  Not on the doorbell: the application's own
             * stores would wake this thread at every step, to find it
             * still driving (on fewer cores than threads, each wake takes
             * the core from a rank that moves). */
            struct timespec later = {0, MCA_COLL_STRATA_PROGRESS_ASIDE_NS};

            pthread_mutex_unlock(&mca_coll_strata_progress.lock);
            (void)mca_coll_strata_progress_futex(&mca_coll_strata_progress.work, FUTEX_WAIT_PRIVATE,
                                                 work, &later);
            pthread_mutex_lock(&mca_coll_strata_progress.lock);
            continue;
        }
        if (NULL != wait) {
            mca_coll_strata_engine_t *slept = wait;

            /* counted as a sleeper first, then a last look: a store made
             * after the look rings (see mca_coll_strata_progress_ring) */
            doorbell = &slept->shm.flags[0].doorbell;
            __atomic_add_fetch(&slept->shm.flags[0].sleepers, 1, __ATOMIC_SEQ_CST);
            seen = __atomic_load_n(doorbell, __ATOMIC_SEQ_CST);
            /* a call on the ucp wire: its messages ring too (the watcher),
             * armed before the last look */
            if (mca_coll_strata_progress_on_wire() && !mca_coll_strata_wire_ucp_watch()) {
                __atomic_sub_fetch(&slept->shm.flags[0].sleepers, 1, __ATOMIC_SEQ_CST);
                continue;
            }
            if (mca_coll_strata_progress_pass(&wait, &aside) || wait != slept) {
                /* (the lock is held: slept cannot have been released) */
                __atomic_sub_fetch(&slept->shm.flags[0].sleepers, 1, __ATOMIC_SEQ_CST);
                continue;
            }
            mca_coll_strata_progress.napping_on = doorbell;
            pthread_mutex_unlock(&mca_coll_strata_progress.lock);
            (void)mca_coll_strata_progress_futex(doorbell, FUTEX_WAIT, seen, &nap);
            pthread_mutex_lock(&mca_coll_strata_progress.lock);
            mca_coll_strata_progress.napping_on = NULL;
            /* the engine slept on is still watched (released ones leave
             * the list first): its segment is still mapped */
            for (mca_coll_strata_progress_entry_t *w = mca_coll_strata_progress.watched; NULL != w;
                 w = w->next) {
                if (&w->e->shm.flags[0].doorbell == doorbell) {
                    __atomic_sub_fetch(&w->e->shm.flags[0].sleepers, 1, __ATOMIC_SEQ_CST);
                    break;
                }
            }
            continue;
        }
        pthread_mutex_unlock(&mca_coll_strata_progress.lock);
        (void)mca_coll_strata_progress_futex(&mca_coll_strata_progress.work, FUTEX_WAIT_PRIVATE,
                                             work, NULL);
        pthread_mutex_lock(&mca_coll_strata_progress.lock);
    }
    pthread_mutex_unlock(&mca_coll_strata_progress.lock);
    return NULL;
}

/* The thread started (the lock held); false when it cannot be. */
static bool mca_coll_strata_progress_start(void)
{
    int rc;

    if (mca_coll_strata_progress.running || mca_coll_strata_progress.failed) {
        return mca_coll_strata_progress.running;
    }
    mca_coll_strata_progress.stop = false;
    rc = pthread_create(&mca_coll_strata_progress.thread, NULL, mca_coll_strata_progress_main,
                        NULL);
    if (0 != rc) {
        mca_coll_strata_progress.failed = true;
        opal_output(0,
                    "coll:strata: warning: cannot start the progress thread (%s): nonblocking "
                    "collectives progress inside MPI calls only",
                    strerror(rc));
        return false;
    }
    mca_coll_strata_progress.running = true;
    MCA_COLL_STRATA_VERBOSE(
        10, "progress thread started (coll_strata_progress=%s)",
        (MCA_COLL_STRATA_PROGRESS_THREAD == mca_coll_strata_progress.mode) ? "thread" : "auto");
    return true;
}

/* Wake the thread wherever it sleeps, to look again (the lock held: the
 * doorbell it naps on stays mapped meanwhile). */
static void mca_coll_strata_progress_nudge(void)
{
    __atomic_add_fetch(&mca_coll_strata_progress.work, 1, __ATOMIC_RELEASE);
    (void)mca_coll_strata_progress_futex(&mca_coll_strata_progress.work, FUTEX_WAKE_PRIVATE, 1,
                                         NULL);
    if (NULL != mca_coll_strata_progress.napping_on) {
        __atomic_add_fetch(mca_coll_strata_progress.napping_on, 1, __ATOMIC_SEQ_CST);
        (void)mca_coll_strata_progress_futex(mca_coll_strata_progress.napping_on, FUTEX_WAKE,
                                             INT_MAX, NULL);
    }
}

void mca_coll_strata_progress_wake(void)
{
    pthread_mutex_lock(&mca_coll_strata_progress.lock);
    if (mca_coll_strata_progress.running) {
        mca_coll_strata_progress_nudge();
    }
    pthread_mutex_unlock(&mca_coll_strata_progress.lock);
}

void mca_coll_strata_progress_set_mode(int mode)
{
    mca_coll_strata_progress.mode = mode;
}

bool mca_coll_strata_progress_threaded(void)
{
    return MCA_COLL_STRATA_PROGRESS_CALLS != mca_coll_strata_progress.mode;
}

/* Within one node; or across nodes with no exchange of this rank's that
 * enters the pml: a rank on no rail takes no part in them, a rail with the
 * ucp wire carries them there. */
bool mca_coll_strata_progress_wanted(const mca_coll_strata_engine_t *e)
{
    return MCA_COLL_STRATA_PROGRESS_CALLS != mca_coll_strata_progress.mode &&
           NULL != e->shm.flags &&
           (1 == e->topo.nnodes || NULL == e->topo.rail_comm || NULL != e->wire_ucp);
}

void mca_coll_strata_progress_early(void)
{
    if (MCA_COLL_STRATA_PROGRESS_THREAD == mca_coll_strata_progress.mode) {
        pthread_mutex_lock(&mca_coll_strata_progress.lock);
        (void)mca_coll_strata_progress_start();
        pthread_mutex_unlock(&mca_coll_strata_progress.lock);
    }
}

void mca_coll_strata_progress_watch(mca_coll_strata_engine_t *e)
{
    mca_coll_strata_progress_entry_t *w;
    bool known = false;

    pthread_mutex_lock(&mca_coll_strata_progress.lock);
    if (mca_coll_strata_progress_start()) {
        for (w = mca_coll_strata_progress.watched; NULL != w && !known; w = w->next) {
            known = (w->e == e);
        }
        if (!known && NULL != (w = malloc(sizeof(*w)))) {
            w->e = e;
            w->next = mca_coll_strata_progress.watched;
            mca_coll_strata_progress.watched = w;
        }
        /* a thread asleep (idle, or on another engine's doorbell) looks */
        mca_coll_strata_progress_nudge();
    }
    pthread_mutex_unlock(&mca_coll_strata_progress.lock);
}

void mca_coll_strata_progress_unwatch(mca_coll_strata_engine_t *e)
{
    mca_coll_strata_progress_entry_t **link, *w;

    pthread_mutex_lock(&mca_coll_strata_progress.lock);
    for (link = &mca_coll_strata_progress.watched; NULL != (w = *link);) {
        if (w->e == e) {
            *link = w->next;
            free(w);
        } else {
            link = &w->next;
        }
    }
    /* the thread may be asleep on this engine's doorbell: the segment is
     * unmapped next, so nothing may touch that word again (the thread's
     * nap ends by itself; it then finds the engine gone) */
    if (NULL != e->shm.flags && mca_coll_strata_progress.napping_on == &e->shm.flags[0].doorbell) {
        mca_coll_strata_progress.napping_on = NULL;
    }
    pthread_mutex_unlock(&mca_coll_strata_progress.lock);
}

void mca_coll_strata_progress_finalize(void)
{
    pthread_mutex_lock(&mca_coll_strata_progress.lock);
    if (!mca_coll_strata_progress.running) {
        pthread_mutex_unlock(&mca_coll_strata_progress.lock);
        return;
    }
    mca_coll_strata_progress.stop = true;
    mca_coll_strata_progress_nudge();
    pthread_mutex_unlock(&mca_coll_strata_progress.lock);
    pthread_join(mca_coll_strata_progress.thread, NULL);
    mca_coll_strata_progress.running = false;
    while (NULL != mca_coll_strata_progress.watched) {
        mca_coll_strata_progress_entry_t *w = mca_coll_strata_progress.watched;

        mca_coll_strata_progress.watched = w->next;
        free(w);
    }
}
