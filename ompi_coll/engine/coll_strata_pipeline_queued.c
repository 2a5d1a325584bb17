/*
 * coll/strata pipeline, queued whole on the node area (device data): the
 * GPUs coordinate the chunks, the host waits once per call.
 *
 * The steps (coll_strata_pipeline_steps.c), slots and progress counters
 * are the host driver's (coll_strata_pipeline_host.c); what changes is
 * who waits.  For each chunk the
 * host queues, on its stream:
 *   in      wait until the slot is free (every rank's `copied_out` of the
 *           chunk nslots before, for the copy-only collectives; a
 *           reduction's input area is known free from this rank's own
 *           earlier copy-out), copy the input in, store `copied_in`
 *   reduce  (owners) wait for every rank's `copied_in` of the chunk and
 *           `copied_out` of the one nslots before, one kernel over all
 *           inputs, store `reduced` (and `published` without a network)
 *   out     wait for the owners' `published`, copy this rank's part out,
 *           store `copied_out`
 * The waits and stores are stream memory operations on the counters in the
 * node's shared-memory segment, which every GPU maps: no chunk needs the
 * host.  Each rank queues chunk c's out after chunk c + nslots - 1's in and
 * reduce, so the next chunks' copies overlap the current ones, and every
 * wait names work that every rank queued earlier in the same order: no
 * cycle, whatever the ranks' relative speed.
 *
 * Between nodes the owner's host runs the exchange (coll_strata_xchg.c) on
 * a second stream that never waits on a flag: it starts chunk c's exchange
 * when an event queried (not synchronized) says the reduction is done,
 * polls the exchange's own copies and folds (cuStreamQuery) before each
 * message that depends on them, and stores `published` from the host when
 * the exchange is done; the queued copy-out waits for that on the GPU.  So
 * between nodes too the host waits for its GPU once per call.
 *
 * No wait before the work that meets it.  Streams share a few hardware
 * queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default; under MPS the clients
 * of a GPU share the server's), each first-in first-out, and a wait not
 * met holds up its whole queue: the exchange's copies and folds, UCX's
 * copy streams, another communicator's stream, or under MPS another
 * rank's.  Ordering through stream memory operations is invisible to
 * CUDA's scheduler (the driver's "Stream Memory Operations").  So the host
 * queues a wait on a counter only once what meets it is queued ahead of
 * it: every rank it names has queued its store of the value (the record
 * beside each counter, stored right after the store is queued) or stored
 * it; `published` between nodes is stored by the owners' hosts, so a
 * chunk's copy-out is queued only once its exchanges are done.  Then in
 * the order work was queued, everything a wait names comes before it, on
 * whichever queue, and no queue ever holds up what it waits for.  The host
 * waits there for its peers' hosts, never for a GPU (still one host wait
 * for the GPU per call), progressing the exchanges meanwhile.  The two
 * streams' dependencies are also events (the exchange follows the
 * reduction's mark, the copy-out the exchange's handoff), so CUDA sees
 * them; UCX's copies are ordered by the host, which publishes a chunk only
 * once its messages are done.
 *
 * Failures.  A failed copy or kernel is noted and the chunk goes on; a
 * failed wait or store leaves the queue unusable, and nothing more is
 * queued.  At the end the host waits for its stream (the one wait); if the
 * stream failed or stopped early, it stores every counter of the call from
 * the host, so no peer's stream waits for it forever.  Then every local
 * rank says in the segment that its call is over and whether a part its
 * peers read failed (`call_done`, `call_failed`, stored at once when it
 * happens so that an owner's exchange carries the news to the other nodes),
 * and waits until every local rank has said so: a rank returns an error
 * when a part it read failed, and the next call starts with every stream
 * idle.
 */
#include "coll_strata_pipeline.h"

#include <sched.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

/* idle polls of the host's loops before each further one yields the core */
#define MCA_COLL_STRATA_QUEUED_SPINS 64

typedef struct mca_coll_strata_queued_t {
    mca_coll_strata_pipeline_t *p;
    const mca_coll_strata_node_queue_ops_t *q;
    uint64_t end;     /* chunk serial after this call's last chunk */
    bool broken;      /* a wait or store could not be queued: nothing more is */
    bool exchanges;   /* this rank runs exchanges between nodes */
    uint64_t reduced; /* chunks whose reduction (and mark) is queued */
} mca_coll_strata_queued_t;

/* This rank failed a part its peers read: say so now, not only at the
 * end, so that an owner of this node starting an exchange tells the other
 * nodes. */
static void mca_coll_strata_queued_tell(mca_coll_strata_queued_t *s)
{
    mca_coll_strata_pipeline_t *p = s->p;

    if (p->shared_failed) {
        __atomic_store_n(&p->shm->flags[p->me].call_failed, s->end, __ATOMIC_RELEASE);
    }
}

static void mca_coll_strata_queued_note(mca_coll_strata_queued_t *s, uint64_t c,
                                        mca_coll_strata_part_t part, int rc)
{
    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_pipeline_fail(s->p, c, part, rc);
        mca_coll_strata_queued_tell(s);
    }
}

/* A wait or store that could not be queued: the stream no longer tells
 * the peers anything; the host does at the end. */
static bool mca_coll_strata_queued_ok(mca_coll_strata_queued_t *s, uint64_t c, int rc)
{
    if (OMPI_SUCCESS != rc && !s->broken) {
        s->broken = true;
        mca_coll_strata_pipeline_fail(s->p, c, MCA_COLL_STRATA_PART_INPUT, rc);
        mca_coll_strata_queued_tell(s);
    }
    return !s->broken;
}

static bool mca_coll_strata_queued_exchange(mca_coll_strata_queued_t *s);

/* Nothing moved: let the stream's work go on, progress the pml, and after
 * a few idle polls give the core away (ranks often oversubscribe cores). */
static void mca_coll_strata_queued_idle(mca_coll_strata_queued_t *s, unsigned *idle)
{
    s->q->poll(s->p->node);
    opal_progress();
    if (++*idle > MCA_COLL_STRATA_QUEUED_SPINS) {
        mca_coll_strata_shm_watch(s->p->shm); /* a peer that died */
        sched_yield();
    }
}

/* One turn of the host's loop: the exchanges between nodes, or an idle poll. */
static void mca_coll_strata_queued_turn(mca_coll_strata_queued_t *s, unsigned *idle)
{
    if (s->exchanges && mca_coll_strata_queued_exchange(s)) {
        *idle = 0;
    } else {
        mca_coll_strata_queued_idle(s, idle);
    }
}

/* Whether each of local ranks [0, nranks) has queued its store of `value`
 * in counter `field` (the record beside the counter) or stored it. */
static bool mca_coll_strata_queued_ahead(const mca_coll_strata_shm_t *shm, size_t field, int nranks,
                                         uint64_t value)
{
    for (int r = 0; r < nranks; ++r) {
        const char *flags = (const char *)&shm->flags[r];

        if (mca_coll_strata_flag_load(
                (const uint64_t *)(flags + MCA_COLL_STRATA_SHM_QUEUED(field))) < value &&
            mca_coll_strata_flag_load((const uint64_t *)(flags + field)) < value) {
            return false;
        }
    }
    return true;
}

/* A wait is queued behind what meets it (see the top): the host waits
 * here until that is queued or stored, for its peers' hosts only. */
static bool mca_coll_strata_queued_await(mca_coll_strata_queued_t *s, uint64_t c, size_t field,
                                         int nranks, uint64_t value)
{
    mca_coll_strata_pipeline_t *p = s->p;
    unsigned idle = 0;

    /* 0: no earlier chunk to wait for */
    if (0 == value) {
        return true;
    }
    while (!mca_coll_strata_queued_ahead(p->shm, field, nranks, value)) {
        mca_coll_strata_queued_turn(s, &idle);
    }
    return mca_coll_strata_queued_ok(s, c, s->q->await(p->node, field, nranks, value));
}

/* The store queued, its record beside the counter says so: a peer may now
 * queue a wait for it. */
static bool mca_coll_strata_queued_signal(mca_coll_strata_queued_t *s, uint64_t c, size_t field)
{
    mca_coll_strata_pipeline_t *p = s->p;
    uint64_t value = p->base + c + 1;

    if (!mca_coll_strata_queued_ok(s, c, s->q->signal(p->node, field, value))) {
        return false;
    }
    mca_coll_strata_flag_store(
        (uint64_t *)((char *)&p->shm->flags[p->me] + MCA_COLL_STRATA_SHM_QUEUED(field)), value);
    return true;
}

/* Whether the slot's input area is known free without a wait: a
 * reduction's is once every owner has read it, and this rank's copy-out of
 * the chunk nslots before, queued earlier on this stream, already waited
 * for every owner's publication of it (which follows its reading).  Not on
 * the replicated path, whose owners publish nothing; not for the copy-only
 * collectives, whose inputs go to the shared result area. */
static bool mca_coll_strata_queued_in_free(const mca_coll_strata_pipeline_t *p)
{
    return MCA_COLL_STRATA_PIPE_REDUCE == p->kind && !p->replicated;
}

static void mca_coll_strata_queued_in(mca_coll_strata_queued_t *s, uint64_t c)
{
    mca_coll_strata_pipeline_t *p = s->p;

    if (!mca_coll_strata_queued_in_free(p) &&
        !mca_coll_strata_queued_await(s, c, mca_coll_strata_pipeline_in_gate(p), p->shm->nranks,
                                      mca_coll_strata_pipeline_reuse_mark(p, p->base + c))) {
        return;
    }
    mca_coll_strata_queued_note(s, c, MCA_COLL_STRATA_PART_INPUT,
                                mca_coll_strata_pipeline_issue_in(p, c));
    if (mca_coll_strata_queued_signal(s, c, MCA_COLL_STRATA_FLAG(copied_in)) && !p->owner) {
        (void)mca_coll_strata_queued_signal(s, c, MCA_COLL_STRATA_FLAG(reduced));
    }
}

static void mca_coll_strata_queued_reduce(mca_coll_strata_queued_t *s, uint64_t c)
{
    mca_coll_strata_pipeline_t *p = s->p;
    int k = p->shm->nranks;
    size_t len;
    char *dst;

    if (!mca_coll_strata_queued_await(s, c, MCA_COLL_STRATA_FLAG(copied_in), k, p->base + c + 1) ||
        !mca_coll_strata_queued_await(s, c, MCA_COLL_STRATA_FLAG(copied_out), k,
                                      mca_coll_strata_pipeline_reuse_mark(p, p->base + c))) {
        return;
    }
    mca_coll_strata_queued_note(s, c, MCA_COLL_STRATA_PART_RESULT,
                                mca_coll_strata_pipeline_issue_reduce(p, c, &dst, &len));
    if (!mca_coll_strata_queued_signal(s, c, MCA_COLL_STRATA_FLAG(reduced))) {
        return;
    }
    if (!s->exchanges) {
        (void)mca_coll_strata_queued_signal(s, c, MCA_COLL_STRATA_FLAG(published));
    } else if (mca_coll_strata_queued_ok(
                   s, c, s->q->mark(p->node, mca_coll_strata_pipeline_slot(p, c)))) {
        s->reduced = c + 1;
    }
}

static void mca_coll_strata_queued_out(mca_coll_strata_queued_t *s, uint64_t c)
{
    mca_coll_strata_pipeline_t *p = s->p;

    /* A replicated owner's result is in its rbuf: it reads no result area. */
    if (!p->private_result) {
        if (!mca_coll_strata_queued_await(s, c, MCA_COLL_STRATA_FLAG(published), p->result_owners,
                                          p->base + c + 1)) {
            return;
        }
        /* this rank's own slice came from its exchange, on the other stream */
        if (s->exchanges) {
            mca_coll_strata_queued_note(
                s, c, MCA_COLL_STRATA_PART_OWN,
                s->q->follow(p->node, mca_coll_strata_pipeline_slot(p, c), false));
        }
        mca_coll_strata_queued_note(s, c, MCA_COLL_STRATA_PART_OWN,
                                    mca_coll_strata_pipeline_issue_out(p, c));
    }
    (void)mca_coll_strata_queued_signal(s, c, MCA_COLL_STRATA_FLAG(copied_out));
}

/* Whether a rank of the node said that a part of this call failed. */
static bool mca_coll_strata_queued_node_failed(const mca_coll_strata_queued_t *s, int except)
{
    const mca_coll_strata_shm_t *shm = s->p->shm;

    for (int r = 0; r < shm->nranks; ++r) {
        if (r != except &&
            (__atomic_load_n(&shm->flags[r].call_failed, __ATOMIC_ACQUIRE) == s->end ||
             mca_coll_strata_shm_dead(shm, r))) {
            return true;
        }
    }
    return false;
}

/*
 * The host's part between nodes: start the exchange of each chunk whose
 * reduction the GPU finished (the slot's mark), in order and at most nslots
 * in flight (one exchange per slot); advance them; publish the finished
 * ones in order, from the host.  Chunks the stream never reduced (it broke)
 * still run their exchange, marked failed, so that no rank of another node
 * waits for this one.  Returns whether anything moved.
 */
static bool mca_coll_strata_queued_exchange(mca_coll_strata_queued_t *s)
{
    mca_coll_strata_pipeline_t *p = s->p;
    uint64_t nslots = (uint64_t)p->shm->nslots, published = p->next_publish;
    bool moved = false;

    s->q->exchange(p->node, true);
    while (p->next_reduce < p->nchunks && p->next_reduce < p->next_publish + nslots) {
        uint64_t c = p->next_reduce;
        bool done = false;
        size_t len;
        char *dst;

        if (c < s->reduced) {
            int rc = s->q->marked(p->node, mca_coll_strata_pipeline_slot(p, c), &done);

            if (OMPI_SUCCESS != rc) {
                mca_coll_strata_queued_note(s, c, MCA_COLL_STRATA_PART_RESULT, rc);
                done = true;
            }
        } else {
            done = s->broken; /* never queued: nothing to wait for */
        }
        if (!done) {
            break;
        }
        if (c < s->reduced) { /* the exchange's work follows the reduction */
            mca_coll_strata_queued_note(
                s, c, MCA_COLL_STRATA_PART_RESULT,
                s->q->follow(p->node, mca_coll_strata_pipeline_slot(p, c), true));
        }
        mca_coll_strata_pipeline_reduce_target(p, c, &dst, &len);
        mca_coll_strata_pipeline_inter_start(
            p, c, dst, len, c >= s->reduced || mca_coll_strata_queued_node_failed(s, -1));
        p->next_reduce++;
        moved = true;
    }
    if (mca_coll_strata_pipeline_publish_exchanged(p)) {
        moved = true;
        mca_coll_strata_queued_tell(s); /* a failure the exchange brought */
    }
    /* what this rank's copy-out of each published chunk follows */
    for (uint64_t c = published; c < p->next_publish; ++c) {
        mca_coll_strata_queued_note(s, c, MCA_COLL_STRATA_PART_OWN,
                                    s->q->handoff(p->node, mca_coll_strata_pipeline_slot(p, c)));
    }
    s->q->exchange(p->node, false);
    return moved;
}

/* The stream stopped early or failed: the host stores every counter of the
 * call, so that no peer's stream waits for this rank (its own stream no
 * longer writes them: it is done or dead). */
static void mca_coll_strata_queued_release_peers(mca_coll_strata_queued_t *s)
{
    mca_coll_strata_pipeline_t *p = s->p;
    mca_coll_strata_shm_flags_t *mine = &p->shm->flags[p->me];
    uint64_t *counters[] = {&mine->copied_in, &mine->reduced, &mine->copied_out};

    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); ++i) {
        if (__atomic_load_n(counters[i], __ATOMIC_ACQUIRE) < s->end) {
            __atomic_store_n(counters[i], s->end, __ATOMIC_RELEASE);
        }
    }
    /* with exchanges the host publishes, chunk by chunk, after them */
    if (!s->exchanges && __atomic_load_n(&mine->published, __ATOMIC_ACQUIRE) < s->end) {
        __atomic_store_n(&mine->published, s->end, __ATOMIC_RELEASE);
    }
}

/* The call is over on this rank: say so, wait until it is on every local
 * rank, and learn whether a part this rank read failed elsewhere. */
static void mca_coll_strata_queued_end(mca_coll_strata_queued_t *s)
{
    mca_coll_strata_pipeline_t *p = s->p;
    mca_coll_strata_shm_t *shm = p->shm;
    unsigned idle = 0;

    mca_coll_strata_queued_tell(s);
    __atomic_store_n(&shm->flags[p->me].call_done, s->end, __ATOMIC_RELEASE);
    for (int r = 0; r < shm->nranks; ++r) {
        while (__atomic_load_n(&shm->flags[r].call_done, __ATOMIC_ACQUIRE) < s->end) {
            mca_coll_strata_queued_idle(s, &idle);
        }
    }
    if (mca_coll_strata_queued_node_failed(s, p->me) && OMPI_SUCCESS == p->node_error) {
        p->peer_failed = true;
        p->node_error = MPI_ERR_OTHER;
    }
}

void mca_coll_strata_pipeline_driver_queued(mca_coll_strata_pipeline_t *p)
{
    mca_coll_strata_queued_t s = {
        .p = p,
        .q = p->node->queue,
        .end = p->base + p->nchunks,
        .exchanges = mca_coll_strata_pipeline_exchanges(p),
    };
    /* chunk c's copy-out is queued after chunk c + lag's copy-in */
    uint64_t lag = (uint64_t)p->shm->nslots - 1;
    unsigned idle = 0;
    int rc;

    if (0 == p->nchunks) {
        return;
    }
    for (uint64_t step = 0; step < p->nchunks + lag; ++step) {
        if (step < p->nchunks && !s.broken) {
            mca_coll_strata_queued_in(&s, step);
        }
        if (step < p->nchunks && p->owner && !s.broken) {
            /* The slot's mark is chunk step - nslots's until that chunk's
             * exchange has started: marking it again now would make that
             * exchange wait for work that waits for it. */
            while (s.exchanges && p->next_reduce + (uint64_t)p->shm->nslots <= step) {
                mca_coll_strata_queued_turn(&s, &idle);
            }
            mca_coll_strata_queued_reduce(&s, step);
        }
        if (step >= lag && !s.broken) {
            mca_coll_strata_queued_out(&s, step - lag);
        }
        if (s.exchanges) {
            (void)mca_coll_strata_queued_exchange(&s);
        }
    }
    /* Between nodes the host keeps the network going until its last chunk
     * is published; then no rank of another node needs it any more, and
     * it may wait for its stream. */
    while (s.exchanges && p->next_publish < p->nchunks) {
        mca_coll_strata_queued_turn(&s, &idle);
    }
    /* the call's one host-side wait */
    rc = s.q->drain(p->node);
    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_queued_note(&s, p->nchunks - 1, MCA_COLL_STRATA_PART_RESULT, rc);
        s.broken = true;
    }
    if (s.broken) {
        mca_coll_strata_queued_release_peers(&s);
    }
    mca_coll_strata_queued_end(&s);
}
