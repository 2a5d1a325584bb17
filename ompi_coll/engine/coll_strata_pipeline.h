/*
 * coll/strata engine: the pipeline's own declarations (see
 * coll_strata_pipeline.c for the algorithm).  One call is one
 * mca_coll_strata_pipeline_t, made by coll_strata_pipeline.c; its stages
 * are the steps (coll_strata_pipeline_steps.c), which a driver runs:
 *   coll_strata_pipeline_host.c    the host drives every chunk: it checks
 *                                  the node's progress flags, issues a
 *                                  step, waits for it (complete()), and
 *                                  stores the flag that announces it; the
 *                                  node area of host data, and device data
 *                                  where the GPU cannot wait on the flags
 *   coll_strata_pipeline_queued.c  the host queues every chunk's steps at
 *                                  once, each behind device-side waits on
 *                                  the same flags, and waits once per call:
 *                                  node areas with a queue (device data)
 *   coll_strata_pipeline_nb.c      the nonblocking collectives: the host's
 *                                  turns, one per progress, the call started
 *                                  in MPI_I* and finished in MPI_Wait/Test
 * Drivers call steps; steps never call a driver.  Every driver runs the
 * same steps on the same flags with the same slots, so the chunk counters
 * stay shared by every call of the communicator, whichever driver runs
 * it.  Included by the engine's sources only.
 */
#ifndef MCA_COLL_STRATA_PIPELINE_H
#define MCA_COLL_STRATA_PIPELINE_H

#include "coll_strata_engine_internal.h"

typedef struct mca_coll_strata_pipeline_t {
    mca_coll_strata_engine_t *e; /* the communicator's */
    mca_coll_strata_shm_t *shm;
    mca_coll_strata_node_t *node; /* where the slots live, how data moves */
    const mca_coll_strata_decision_t *decision;
    mca_coll_strata_pipe_kind_t kind;
    mca_coll_strata_sched_alg_t sched_alg; /* BCAST, ALLGATHER */
    int root_node;                         /* BCAST: the root's node */
    int root;                              /* BCAST: the root's rank in comm */
    bool copies_in; /* this rank has input (every rank, or the bcast's root) */
    int comm_size;  /* ALLGATHER: blocks per chunk */
    /* REDUCE: the nodes' regions of the result (args' parts), or NULL */
    const size_t *node_parts;
    int comm_rank;
    const char *sbuf;
    /* this rank's part of the result: elements [out_lo, out_hi) of the
     * reduced vector, element out_lo at `out` (mca_coll_strata_pipeline_args_t) */
    char *out;
    size_t out_lo, out_hi;
    size_t count;
    ptrdiff_t extent;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    size_t chunk_elems;
    uint64_t nchunks;
    uint64_t base;       /* global serial of chunk 0 of this call */
    int me;              /* local rank */
    bool owner;          /* owns slice `me` of every chunk */
    /* the chunk's slices: the decision's, or on the direct path every
     * local rank's (a bcast's or allgather's too: each copies a part) */
    int nslices;
    bool replicated;     /* owners take whole chunks (see above) */
    bool private_result; /* this rank's result lands in its rbuf, not the result area */
    int result_owners;   /* owners whose published results copy-out waits for */
    /* the call's outcome on this rank: its own first failure, or
     * MPI_ERR_OTHER for a part another rank failed (see the top) */
    int node_error;
    bool peer_failed; /* a failure this rank's own messages do not name */
    /* this rank failed a part others read (its input or result): the
     * queued driver tells the node at the end of the call */
    bool shared_failed;
    bool fail_copy_out; /* coll_strata_test_fail=copy_out: every copy-out of this call */
    /* its exchanges between nodes go on the engine's ucp wire (a
     * nonblocking call where the rail has one), not the pml */
    bool on_ucp_wire;
    /* the direct path (the node area's `direct`): every local rank's input
     * and output as this process addresses them, or NULL: the call runs
     * through the slots.  Direct, a call is one chunk: its owners reduce
     * their slices of the whole vector from every input into every output
     * whose window holds them, and nothing is copied in or out. */
    const mca_coll_strata_direct_t *direct;
    /* next chunk (0..nchunks) for each stage of this rank */
    uint64_t next_in, next_reduce, next_publish, next_out;
} mca_coll_strata_pipeline_t;

/* Which part of a chunk failed on this rank (coll_strata_pipeline_steps.c) */
typedef enum {
    MCA_COLL_STRATA_PART_INPUT,
    MCA_COLL_STRATA_PART_RESULT,
    MCA_COLL_STRATA_PART_OWN
} mca_coll_strata_part_t;

/* Most local ranks of the direct path: a kernel's outputs (one per rank) */
#define MCA_COLL_STRATA_DIRECT_RANKS_MAX 8

/* The progress counters, as offsets into mca_coll_strata_shm_flags_t */
#define MCA_COLL_STRATA_FLAG(_name) offsetof(mca_coll_strata_shm_flags_t, _name)

/* The progress flags' loads and stores: a store publishes what was
 * written before it (release), a load sees it (acquire). */
static inline uint64_t mca_coll_strata_flag_load(const uint64_t *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static inline void mca_coll_strata_flag_store(uint64_t *flag, uint64_t value)
{
    __atomic_store_n(flag, value, __ATOMIC_RELEASE);
}

/* coll_strata_progress.c: a store that lets a peer move was made: wake
 * the progress threads sleeping on the node's doorbell, if any (a fence
 * and a load when none sleeps). */
void mca_coll_strata_progress_ring_slow(mca_coll_strata_shm_t *shm);
static inline void mca_coll_strata_progress_ring(mca_coll_strata_shm_t *shm)
{
    /* the store before, the sleepers' count after: a sleeper that counted
     * itself after this load has not yet looked at the counters */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(0 != __atomic_load_n(&shm->flags[0].sleepers, __ATOMIC_RELAXED), 0)) {
        mca_coll_strata_progress_ring_slow(shm);
    }
}

/* A progress counter's store that a peer may be waiting for. */
static inline void mca_coll_strata_flag_announce(mca_coll_strata_shm_t *shm, uint64_t *flag,
                                                 uint64_t value)
{
    mca_coll_strata_flag_store(flag, value);
    mca_coll_strata_progress_ring(shm);
}

/* ---- coll_strata_pipeline_steps.c ---- */

/* Have local ranks [0, nranks) all advanced counter `field` to >= value? */
bool mca_coll_strata_pipeline_reached(const mca_coll_strata_shm_t *shm, size_t field, int nranks,
                                      uint64_t value);

/* Chunk c: its first element and its length; its slot; the counter value
 * that says the slot's previous chunk is done (0: there is none). */
void mca_coll_strata_pipeline_chunk(const mca_coll_strata_pipeline_t *p, uint64_t c, size_t *first,
                                    size_t *n);
int mca_coll_strata_pipeline_slot(const mca_coll_strata_pipeline_t *p, uint64_t c);
uint64_t mca_coll_strata_pipeline_reuse_mark(const mca_coll_strata_pipeline_t *p, uint64_t g);
/* The counter the copy-in of a chunk waits on before it reuses its slot:
 * `reduced` for a reduction (its input area), else `copied_out` */
size_t mca_coll_strata_pipeline_in_gate(const mca_coll_strata_pipeline_t *p);

/* A stage's work for chunk c, issued on the node area (queued: complete()
 * finishes it); each returns an OMPI status.
 *   issue_in      this rank's input into its area
 *   issue_reduce  this owner's slice (or whole chunk) from the inputs into
 *                 *dst (*len elements): what the exchange then takes
 *   issue_out     this rank's part out of the result area */
int mca_coll_strata_pipeline_issue_in(mca_coll_strata_pipeline_t *p, uint64_t c);
void mca_coll_strata_pipeline_reduce_target(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                            char **dst, size_t *len);
int mca_coll_strata_pipeline_issue_reduce(mca_coll_strata_pipeline_t *p, uint64_t c, char **dst,
                                          size_t *len);
int mca_coll_strata_pipeline_issue_out(mca_coll_strata_pipeline_t *p, uint64_t c);
/* the part of chunk c this rank copies out: [*lo, *hi) of the vector;
 * whether it has anything to copy out of a chunk whose window that is */
void mca_coll_strata_pipeline_window(const mca_coll_strata_pipeline_t *p, uint64_t c, size_t *lo,
                                     size_t *hi);
bool mca_coll_strata_pipeline_has_out(const mca_coll_strata_pipeline_t *p, size_t lo, size_t hi);

/* Start chunk c's exchange between nodes on its slice (done at once
 * without one); advance it (whether it is done); a done one's failure
 * marked for the node (before its publication) */
void mca_coll_strata_pipeline_inter_start(mca_coll_strata_pipeline_t *p, uint64_t c, char *slice,
                                          size_t slice_elems, bool failed);
bool mca_coll_strata_pipeline_inter_done(mca_coll_strata_pipeline_t *p, uint64_t c);
void mca_coll_strata_pipeline_inter_outcome(mca_coll_strata_pipeline_t *p, uint64_t c);
/* Advance the exchanges in flight (chunks [next_publish, next_reduce));
 * publish the finished ones in order from the host, a failed one marked
 * in the failure word before its counter (the exchange's own device work
 * is done by then: the exchange is done only once it is).  Whether any
 * was published. */
bool mca_coll_strata_pipeline_publish_exchanged(mca_coll_strata_pipeline_t *p);
/* whether this rank runs exchanges between nodes in this call */
static inline bool mca_coll_strata_pipeline_exchanges(const mca_coll_strata_pipeline_t *p)
{
    return p->owner && MCA_COLL_STRATA_INTER_NONE != p->decision->inter;
}

/* A failure of this rank's `part` of chunk c: kept for the end of the
 * call (note: the same for a status, nothing on success); whether any of
 * local ranks [0, nranks) marked `part` of chunk c failed (read after the
 * counter that announced their part of it) */
void mca_coll_strata_pipeline_fail(mca_coll_strata_pipeline_t *p, uint64_t c,
                                   mca_coll_strata_part_t part, int rc);
void mca_coll_strata_pipeline_note(mca_coll_strata_pipeline_t *p, uint64_t c,
                                   mca_coll_strata_part_t part, int rc);
bool mca_coll_strata_pipeline_peer_failed(mca_coll_strata_pipeline_t *p, int nranks,
                                          mca_coll_strata_part_t part, uint64_t c);

/* ---- the drivers: each runs a whole call (p made by
 * mca_coll_strata_pipeline_run) and leaves its outcome in p->node_error ---- */

/* coll_strata_pipeline_host.c: the host drives every chunk; one turn of
 * its round (every step that can move now; never waits), which the
 * nonblocking driver (coll_strata_pipeline_nb.c) runs at each progress */
void mca_coll_strata_pipeline_driver_host(mca_coll_strata_pipeline_t *p);
void mca_coll_strata_pipeline_host_turn(mca_coll_strata_pipeline_t *p, bool *moved);

/* coll_strata_pipeline.c: p made for a call (its chunks counted in the
 * engine's serial: every driver's calls on the communicator share the
 * counters), and the call's outcome said (a peer's failure, once) */
void mca_coll_strata_pipeline_prepare(mca_coll_strata_engine_t *e,
                                      const mca_coll_strata_pipeline_args_t *a,
                                      const mca_coll_strata_decision_t *decision,
                                      mca_coll_strata_node_t *node,
                                      const mca_coll_strata_direct_t *direct,
                                      mca_coll_strata_pipeline_t *p);
int mca_coll_strata_pipeline_outcome(const mca_coll_strata_pipeline_t *p, const char *coll);

/* coll_strata_progress.c: whether the progress thread may turn this
 * engine's nonblocking calls (a communicator within one node, the setting
 * not `calls`); watch them (the thread started where it is not yet:
 * false when it cannot be); forget the engine (before it is released) */
bool mca_coll_strata_progress_wanted(const mca_coll_strata_engine_t *e);
void mca_coll_strata_progress_watch(mca_coll_strata_engine_t *e);
void mca_coll_strata_progress_unwatch(mca_coll_strata_engine_t *e);

/* coll_strata_pipeline_nb.c: the progress thread's turn of an engine's
 * calls: whether anything moved; *aside: nothing was tried, because the
 * application drives the engine now (the thread sleeps meanwhile) */
bool mca_coll_strata_pipeline_nb_progress(mca_coll_strata_engine_t *e, bool *aside);

/* coll_strata_pipeline_nb.c: finish every nonblocking call the engine has
 * started (a blocking call's pipeline shares their counters and slots, so
 * it runs after them; so does the engine's release) */
void mca_coll_strata_pipeline_drain(mca_coll_strata_engine_t *e);
/* coll_strata_pipeline_queued.c: the whole call queued on the node area
 * (node->queue), one host wait */
void mca_coll_strata_pipeline_driver_queued(mca_coll_strata_pipeline_t *p);

#endif /* MCA_COLL_STRATA_PIPELINE_H */
