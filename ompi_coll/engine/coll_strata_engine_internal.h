/*
 * coll/strata engine, the room's own declarations (see coll_strata_engine.h):
 * the node areas' table of primitives, the node's shared-memory segment and
 * its progress flags, and the exchange between nodes.  Included by the
 * engine's sources only.  May include: the engine's interface, base/'s
 * verbose messages and fault injection, Open MPI's communicator, datatype,
 * coll framework and request.  Not
 * coll_strata.h.
 */
#ifndef MCA_COLL_STRATA_ENGINE_INTERNAL_H
#define MCA_COLL_STRATA_ENGINE_INTERNAL_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

#include "../base/coll_strata_ompi.h"
#include "../base/coll_strata_log.h"
#include "../base/coll_strata_op.h"
#include "coll_strata_engine.h"

/*
 * Where a node's chunks live, and how they are copied and reduced: the
 * pipeline and the inter-node exchange are written once against this table, and each
 * memory kind fills one (coll_strata_node_host.c: the shared-memory
 * segment, memcpy and Open MPI's op functions).  copy and reduce may only
 * queue their work; it is finished when complete() returns (or once
 * completed() says so: the exchange polls, it never waits), and only then
 * may a progress flag announce it.  Every call returns an OMPI status.
 */
/* The direct path's view of a call: local rank r's input (element 0 of
 * the vector) and output (element lo[r], its window [lo[r], hi[r]); NULL
 * where the window is empty), as this process addresses them. */
typedef struct mca_coll_strata_direct_t {
    char **in, **out;
    size_t *lo, *hi;
} mca_coll_strata_direct_t;

typedef struct mca_coll_strata_node_ops_t {
    const char *name;
    /* local rank r's input area of a slot, and the slot's result area */
    char *(*input)(const struct mca_coll_strata_node_t *node, int slot, int r);
    char *(*result)(const struct mca_coll_strata_node_t *node, int slot);
    int (*copy)(struct mca_coll_strata_node_t *node, void *dst, const void *src, size_t bytes);
    /* dst = srcs[0] op (srcs[1] op (... op srcs[k-1])), count elements of
     * dtype, each element reduced in that order; dst may be srcs[k-1] */
    int (*reduce)(struct mca_coll_strata_node_t *node, struct ompi_op_t *op,
                  struct ompi_datatype_t *dtype, const void *const *srcs, int k, void *dst,
                  size_t count);
    int (*complete)(struct mca_coll_strata_node_t *node);
    /* whether the work queued so far is done: never waits */
    int (*completed)(struct mca_coll_strata_node_t *node, bool *done);
    /* (optional: NULL where the area has no direct path) The direct path:
     * the node's ranks read each other's inputs and write each other's
     * outputs where the application has them, with no copy in or out.
     * direct: collective over the node's ranks (each tells the others its
     * buffers for the call at chunk serial `serial`, and maps theirs):
     * every local rank's buffers as this process addresses them (valid
     * until the call ends), or NULL: the call runs through the slots; the
     * same answer on every local rank.  reduce_to: reduce as `reduce`
     * does, writing the result to each of dsts[0..ndst). */
    const struct mca_coll_strata_direct_t *(*direct)(struct mca_coll_strata_node_t *node,
                                                     const mca_coll_strata_pipeline_args_t *a,
                                                     uint64_t serial);
    int (*reduce_to)(struct mca_coll_strata_node_t *node, struct ompi_op_t *op,
                     struct ompi_datatype_t *dtype, const void *const *srcs, int k,
                     void *const *dsts, int ndst, size_t count);
} mca_coll_strata_node_ops_t;

extern const mca_coll_strata_node_ops_t mca_coll_strata_node_host_ops;

/*
 * A node area whose copies and reductions run on a queue that can itself
 * wait on the node's progress flags and store them (device data: a CUDA
 * stream with stream memory operations on the flags, which live in host
 * shared memory the GPUs map).  The host queues a whole call through it
 * and waits once (coll_strata_pipeline_queued.c).  Every call returns an
 * OMPI status; a failed await or signal leaves the queue unusable for the
 * rest of the call.
 */
typedef struct mca_coll_strata_node_queue_ops_t {
    /* later work waits until counter `field` (an offset into
     * mca_coll_strata_shm_flags_t) of local ranks [0, nranks) is >= value */
    int (*await)(struct mca_coll_strata_node_t *node, size_t field, int nranks, uint64_t value);
    /* this rank's counter `field` becomes value once the work before it is done */
    int (*signal)(struct mca_coll_strata_node_t *node, size_t field, uint64_t value);
    /* mark `slot`: the work queued so far; marked: whether that work is
     * done (never waits) */
    int (*mark)(struct mca_coll_strata_node_t *node, int slot);
    int (*marked)(struct mca_coll_strata_node_t *node, int slot, bool *done);
    /* on: copy, reduce, complete() and completed() go to a second queue,
     * the exchange between nodes', which never waits on a flag, so the
     * exchange's work never waits for a peer's; off: back to the
     * pipeline's */
    void (*exchange)(struct mca_coll_strata_node_t *node, bool on);
    /* The ordering between the two queues, as the GPU's own dependencies
     * (events), besides the flags the host reads: handoff marks `slot`'s
     * exchange work queued so far on the exchange's queue; follow makes
     * later work of the exchange's queue (into_exchange) wait for `slot`'s
     * mark, or later work of the pipeline's wait for `slot`'s handoff. */
    int (*handoff)(struct mca_coll_strata_node_t *node, int slot);
    int (*follow)(struct mca_coll_strata_node_t *node, int slot, bool into_exchange);
    /* let queued work go on where it needs this process to ask (the CUDA
     * stand-in runs work only at its own process's driver calls); never
     * waits, reports nothing: the drain does */
    void (*poll)(struct mca_coll_strata_node_t *node);
    /* wait until everything queued is done: the call's one host-side wait */
    int (*drain)(struct mca_coll_strata_node_t *node);
} mca_coll_strata_node_queue_ops_t;

/* What a local rank tells its node's other ranks about one of its buffers
 * for a call on the direct path: the handle of the allocation holding it
 * (CUDA IPC: 64 bytes), that allocation's addresses in the rank's process,
 * and the buffer's offset there. */
typedef struct mca_coll_strata_shm_buf_t {
    unsigned char handle[64];
    uint64_t base, len, offset;
} mca_coll_strata_shm_buf_t;

/* A local rank's card for one call on the direct path: its input (where
 * its peers read it: a reduction's every input, a bcast's root's) and its
 * output, the output's window of the vector (empty: no output); ok 0 where
 * they cannot be exported (then no rank runs the call direct).  Then, in a
 * second round, mapped: whether it mapped every peer's buffer it needs
 * (else no rank runs it direct either). */
typedef struct mca_coll_strata_shm_card_t {
    mca_coll_strata_shm_buf_t in, out;
    uint64_t out_lo, out_hi;
    uint32_t ok, in_read, mapped, pad;
} mca_coll_strata_shm_card_t;

/* One local rank's progress flags, each on its own cache line.  Beside
 * each progress counter (the word after it) the queued driver keeps the
 * value of it this rank has queued its stream's store of: queued, maybe
 * not stored yet (coll_strata_pipeline_queued.c: a wait on the counter is
 * queued only once that store is queued ahead of it). */
typedef struct mca_coll_strata_shm_flags_t {
    uint64_t copied_in; /* chunks whose input this rank wrote to its slot */
    uint64_t copied_in_queued;
    char pad0[48];
    uint64_t reduced; /* (slice owners) chunks whose inputs were read */
    uint64_t reduced_queued;
    char pad1[48];
    uint64_t published; /* (slice owners) chunks whose result slice is final */
    uint64_t published_queued;
    char pad2[48];
    uint64_t copied_out; /* chunks this rank copied out of the result area */
    uint64_t copied_out_queued;
    char pad3[48];
    /* 1 once this rank has closed its mappings of its peers' device scratch
     * (coll_strata_node_device_setup.c: a rank frees its own only then) */
    uint64_t device_closed;
    char pad4[56];
    /* (the queued driver) the chunk serial at which this rank's last call
     * ended, once its queue and exchanges are done; that serial in
     * call_failed when a part of it its peers read (input, result) failed
     * (coll_strata_pipeline_queued.c) */
    uint64_t call_done;
    uint64_t call_failed;
    char pad5[48];
    /* (local rank 0's only: the node's) a word every announcing store
     * bumps while some rank's progress thread sleeps on it (sleepers > 0),
     * with a futex wake (coll_strata_progress.c) */
    uint32_t doorbell;
    uint32_t sleepers;
    char pad6[56];
    /* who this rank is, for its peers' watch (coll_strata_shm_watch.c):
     * its process and pid namespace, written once it has mapped the
     * segment; dead 1 once a peer found the process gone and made its
     * flags read as done and failed */
    uint64_t pid, pidns;
    uint32_t dead, pad7;
    char pad8[40];
    /* per slot: g + 1 when this rank's input of global chunk g in that slot
     * is wrong (before copied_in), and when its result slice of g is
     * (before published).  Two words, each keyed by the chunk, each
     * rewritten only once the slot's area is free again, so no mark is
     * lost before every rank that depends on it has read it; a rank's own
     * copy-out failing marks nothing (coll_strata_pipeline_steps.c) */
    uint64_t input_failed[MCA_COLL_STRATA_SLOTS_MAX];
    uint64_t result_failed[MCA_COLL_STRATA_SLOTS_MAX];
    /* (the direct path, coll_strata_node_device_map.c) this rank's buffers
     * for the call whose chunks start at serial card_serial - 1: written,
     * then card_serial stored (release); its mapping of its peers' buffers
     * for that call: card.mapped written, then mapped_serial stored */
    mca_coll_strata_shm_card_t card;
    uint64_t card_serial, mapped_serial;
} mca_coll_strata_shm_flags_t;

/* The offset of the queued store's record beside progress counter `_field`
 * (an offset into mca_coll_strata_shm_flags_t). */
#define MCA_COLL_STRATA_SHM_QUEUED(_field) ((_field) + sizeof(uint64_t))
#define MCA_COLL_STRATA_SHM_QUEUED_BESIDE(_name) \
    _Static_assert(offsetof(mca_coll_strata_shm_flags_t, _name##_queued) == \
                       MCA_COLL_STRATA_SHM_QUEUED(offsetof(mca_coll_strata_shm_flags_t, _name)), \
                   #_name "_queued must follow " #_name)
MCA_COLL_STRATA_SHM_QUEUED_BESIDE(copied_in);
MCA_COLL_STRATA_SHM_QUEUED_BESIDE(reduced);
MCA_COLL_STRATA_SHM_QUEUED_BESIDE(published);
MCA_COLL_STRATA_SHM_QUEUED_BESIDE(copied_out);

/* coll_strata_shm.c: collective over node_comm; a rank that is not
 * `willing` (its own set-up already failed) still takes part and makes the
 * attach fail on every local rank. */
int mca_coll_strata_shm_attach(mca_coll_strata_shm_t *shm, struct ompi_communicator_t *node_comm,
                               bool willing, size_t slot_bytes, int nslots, const char *dir,
                               char *why, size_t why_len);
void mca_coll_strata_shm_detach(mca_coll_strata_shm_t *shm);
void mca_coll_strata_shm_cleanup_stale(const char *dir);
/* This process's pid namespace (the inode of /proc/self/ns/pid), or 0. */
unsigned long mca_coll_strata_shm_pidns(void);

/* coll_strata_shm_watch.c: the node's ranks watched for death.  A local
 * rank whose process is gone (killed, crashed) never stores its counters
 * again, and every peer waiting for them would wait forever; so a waiting
 * rank looks (at most every MCA_COLL_STRATA_SHM_WATCH_S), and a dead rank's
 * counters are made to read as done and its parts as failed: every call
 * runs to its end and fails, on this node and, through the exchanges'
 * failure news, on the others.
 *   watch_self  this rank's record, once the segment is mapped
 *   watch       look, where a wait found nothing moved (a dead rank found
 *               is marked: the waits then pass and read it failed)
 *   dead        whether local rank r was found dead */
void mca_coll_strata_shm_watch_self(mca_coll_strata_shm_t *shm, int me);
void mca_coll_strata_shm_watch(mca_coll_strata_shm_t *shm);
bool mca_coll_strata_shm_dead(const mca_coll_strata_shm_t *shm, int r);

static inline char *mca_coll_strata_shm_input(const mca_coll_strata_shm_t *shm, int slot,
                                              int local_rank)
{
    return shm->slots + ((size_t)slot * (shm->nranks + 1) + local_rank) * shm->slot_bytes;
}

static inline char *mca_coll_strata_shm_result(const mca_coll_strata_shm_t *shm, int slot)
{
    return mca_coll_strata_shm_input(shm, slot, shm->nranks);
}

/* coll_strata_xchg.c: one exchange of `count` elements at `buf` among the
 * members of `comm` by schedule `sched` (logic/coll_strata_sched.h: the caller
 * sets its alg, root and bounds; start sets n and count), in place,
 * advanced by mca_coll_strata_xchg_progress until it returns done. */
typedef struct mca_coll_strata_xchg_t {
    struct ompi_communicator_t *comm;
    mca_coll_strata_sched_t sched;
    /* room for the node regions of an allgather (sched.bounds): one entry
     * per node and one more, made with the exchanges */
    size_t *bounds;
    char *buf;
    char *scratch; /* receives what is folded in: up to `count` elements */
    size_t count;
    ptrdiff_t extent;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    mca_coll_strata_node_t *node; /* copies and folds */
    /* pinned host blocks the messages go through when the pml cannot carry
     * the node area's memory; NULL: sent and received in place */
    char *stage_send;
    char *stage_recv;
    /* compression between nodes (coll_strata_codec.h; NONE: exact): each
     * block sent is packed into `packed`, each received one arrives packed
     * in `scratch` and is widened into the vector; the sender keeps the
     * rounded values it sent (so every node ends with the same result) */
    mca_coll_strata_codec_t codec;
    char *packed;
    bool packed_ready; /* this step's block is packed (a refused send is posted again) */
    int tag;
    int step, nsteps;
    mca_coll_strata_sched_step_t cur; /* the step in flight */
    bool done;                        /* this chunk's inter-node phase is complete */
    /* this member's result is wrong (set before start when its input is);
     * the exchange goes on and tells its peers (coll_strata_xchg.c) */
    bool failed;
    /* how its messages travel (coll_strata_wire.h); the step's requests
     * on it, receive then send (the wire's own type; NULL: none in flight);
     * the wire's state for this exchange */
    const struct mca_coll_strata_wire_ops_t *wire;
    void *reqs[2];
    void *wire_ctx;          /* the engine's connections on the wire */
    void *wire_state;        /* this exchange's (slot's) own */
    char signal[64];         /* what a failed member sends: one element at most */
    /* the step's send the pml refused, to be posted again (as the news of
     * the failure), and since when (CLOCK_MONOTONIC seconds; 0: not refused) */
    bool send_pending;
    double send_refused_at;
    /* node-area work (a staging copy, a fold) is queued and not known done:
     * the next send or receive waits for it (polled, never waited for) */
    bool node_busy;
    /* the next step's messages are still to be posted (after node_busy) */
    bool post_next;
} mca_coll_strata_xchg_t;

/* start: x's fields set by the caller (x->wire NULL: the pml) */
void mca_coll_strata_xchg_start(mca_coll_strata_xchg_t *x);
void mca_coll_strata_xchg_progress(mca_coll_strata_xchg_t *x, bool *done);

#endif /* MCA_COLL_STRATA_ENGINE_INTERNAL_H */
