/*
 * coll/strata engine: the room that moves a collective's data.  The
 * pipeline (reduce-scatter on the node, one exchange per rail between nodes,
 * copy out; chunk by chunk), its node areas (host data in the node's
 * shared-memory segment, device data in the GPUs' scratch), the exchange
 * between nodes that runs logic/'s schedules, and the topology (nodes,
 * rails, sub-communicators) the pipeline runs over (docs/design.md, "The
 * allreduce").
 *
 * This header is the room's interface: the engine's state, one
 * mca_coll_strata_engine_t per communicator (the module embeds it), and
 * what the other rooms call (set-up and release from the module, a
 * pipeline run from colls/).  Every function takes the engine and, where
 * it needs them, the communicator's agreed settings: never the module.
 * The node areas' table, the segment's flags and the exchange are the
 * room's own: coll_strata_engine_internal.h.
 *
 * May include: base/ and logic/'s interfaces and the C library; nothing of
 * Open MPI (its types are named here as incomplete structs, the sources
 * include Open MPI).  Not coll_strata.h, which includes this header.
 */
#ifndef MCA_COLL_STRATA_ENGINE_H
#define MCA_COLL_STRATA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../base/coll_strata_settings.h"
#include "../logic/coll_strata_logic.h"

struct ompi_communicator_t;
struct ompi_datatype_t;
struct ompi_op_t;
struct mca_coll_strata_xchg_t;
struct mca_coll_strata_node_ops_t;
struct mca_coll_strata_node_queue_ops_t;
struct mca_coll_strata_shm_flags_t;
struct mca_coll_strata_wire_ucp_t;

/* Most shared-memory slots (chunks in flight) a communicator may have. */
#define MCA_COLL_STRATA_SLOTS_MAX 64

/*
 * A node's shared-memory segment: per local rank flags, then `nslots`
 * slots, each holding one input area per local rank and one result area.
 */
typedef struct mca_coll_strata_shm_t {
    void *base;
    size_t size;
    int nranks;
    int nslots;
    size_t slot_bytes; /* bytes of one input (or result) area */
    struct mca_coll_strata_shm_flags_t *flags;
    char *slots;
    /* this process's: its local rank, and when (mca_coll_strata_now) it
     * may next look whether a local rank died (coll_strata_shm_watch.c) */
    int me;
    double next_watch_s;
} mca_coll_strata_shm_t;

/* Where this process sits: computed once per communicator. */
typedef struct mca_coll_strata_topo_t {
    int nnodes;
    int node_index; /* nodes numbered by their lowest rank */
    int local_rank;
    int local_size;
    int ppn_min; /* fewest ranks on any node */
    int ppn_max;
    /* ranks sharing this node (coll preference excludes strata) */
    struct ompi_communicator_t *node_comm;
    /* the same local rank on every node: local ranks < ppn_min only, else NULL */
    struct ompi_communicator_t *rail_comm;
    /* Node order: the ranks node by node, each node's in comm order (how an
     * allgather's node areas hold the gathered vector).  Per rank of comm:
     * its node and its position in node order; per node: the position of
     * its first rank (nnodes + 1 entries, the last the comm size). */
    int *rank_node;
    int *rank_pos;
    int *node_first;
    /* every node's ranks are consecutive in comm (node order is comm order) */
    bool node_contiguous;
} mca_coll_strata_topo_t;

/* A node area: the primitives and the segment their progress flags (and,
 * for host data, the slots) live in. */
typedef struct mca_coll_strata_node_t {
    const struct mca_coll_strata_node_ops_t *ops;
    /* NULL: the host drives every chunk (coll_strata_pipeline_host.c); else the
     * area queues a whole call (coll_strata_pipeline_queued.c) */
    const struct mca_coll_strata_node_queue_ops_t *queue;
    mca_coll_strata_shm_t *shm;
    /* bytes of one slot's input (or result) area: a chunk's, or an
     * allgather chunk's blocks together */
    size_t slot_bytes;
    /* The inter-node phase, per slot (inter_slot_bytes each): where it
     * receives blocks (NULL without a rail), and, where the pml cannot carry
     * this area's memory, pinned host memory it stages the blocks it
     * sends and receives through (two per slot; NULL: the pml carries it). */
    char *inter_recv;
    char *inter_stage;
    size_t inter_slot_bytes;
    /* per slot, where a compressed exchange packs the block it sends
     * (host areas with a rail; NULL: this area does not compress) */
    char *inter_packed;
} mca_coll_strata_node_t;

typedef struct mca_coll_strata_node_device_t mca_coll_strata_node_device_t;

typedef enum {
    MCA_COLL_STRATA_SETUP_NONE, /* not tried yet */
    MCA_COLL_STRATA_SETUP_BUSY, /* inside setup: calls go to the fallback */
    MCA_COLL_STRATA_SETUP_READY,
    MCA_COLL_STRATA_SETUP_FAILED /* agreed across the communicator */
} mca_coll_strata_setup_state_t;

/*
 * What the engine asks of the communicator it runs on: the collectives of
 * the module below strata (the set-up's agreements over the whole
 * communicator, which must not run strata's own algorithms: they are
 * being set up), and the op functions for host data (the host node area's
 * reductions).  Filled by the module (coll_strata_module.c); `ctx` is
 * handed back to every call.
 */
typedef struct mca_coll_strata_engine_below_t {
    int (*allreduce)(void *ctx, struct ompi_communicator_t *comm, const void *sbuf, void *rbuf,
                     int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op);
    int (*allgather)(void *ctx, struct ompi_communicator_t *comm, const void *sbuf, int scount,
                     struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     struct ompi_datatype_t *rdtype);
    /* dst = src op dst, n elements */
    int (*reduce_local)(void *ctx, struct ompi_op_t *op, const void *src, void *dst, int n,
                        struct ompi_datatype_t *dtype);
} mca_coll_strata_engine_below_t;

/*
 * The engine of one communicator: everything the pipeline, its node areas
 * and the exchanges between nodes keep from one call to the next.
 */
typedef struct mca_coll_strata_engine_t {
    const mca_coll_strata_engine_below_t *below;
    void *below_ctx;
    /* this process's: the segment files' directory (coll_strata_shm_dir),
     * the device path between nodes (coll_strata_allreduce_device_network,
     * MCA_COLL_STRATA_DEVICE_NET_*; rank-local, not agreed) */
    const char *shm_dir;
    int device_network;
    mca_coll_strata_topo_t topo;
    mca_coll_strata_shm_t shm;
    mca_coll_strata_node_t node_host; /* host data in `shm` */
    /* device data in the local ranks' device scratch (coll_strata_node_device_setup.c) */
    mca_coll_strata_node_device_t *node_device;
    mca_coll_strata_setup_state_t device_setup;
    bool any_driver;    /* some rank had a CUDA driver at set-up (agreed) */
    int device_ordinal; /* the GPU of this rank's device scratch */
    /* chunks this communicator has pushed through the segment, all calls;
     * identical on every local rank since collectives are ordered */
    uint64_t chunk_serial;
    /* per slot: the inter-node phase of the chunk in it (nxchgs of them) */
    struct mca_coll_strata_xchg_t *xchgs;
    int nxchgs;
    /* the nodes' regions of a call's result (nnodes + 1 entries; see
     * mca_coll_strata_pipeline_args_t.parts), made with the exchanges */
    size_t *node_parts;
    /* idle polls of the host driver before it yields the core (adapts) */
    unsigned spin_budget;
    /* the nonblocking calls started and not yet done, oldest first, and
     * whether a thread is turning them (coll_strata_pipeline_nb.c) */
    struct mca_coll_strata_pipeline_call_t *nb_head, *nb_tail;
    int nb_driving;
    /* when (mca_coll_strata_now) the application's thread last advanced
     * them inside an MPI call: the progress thread stands aside meanwhile */
    double nb_app_s;
    /* the rail's connections on coll/strata's own UCP worker, which the
     * nonblocking calls' exchanges use (coll_strata_wire_ucp.c), or NULL */
    struct mca_coll_strata_wire_ucp_t *wire_ucp;
} mca_coll_strata_engine_t;

/* coll_strata_engine.c: a new communicator's engine (nothing set up yet);
 * its release (whatever was set up: device area, pipeline, topology); and
 * the process's last word at the component's close (device scratch that
 * peers kept mapped, waited for a few seconds). */
void mca_coll_strata_engine_init(mca_coll_strata_engine_t *e,
                                 const mca_coll_strata_engine_below_t *below, void *below_ctx,
                                 const char *shm_dir, int device_network);
void mca_coll_strata_engine_release(mca_coll_strata_engine_t *e);
void mca_coll_strata_engine_finalize(void);

/* coll_strata_progress.c: the progress of nonblocking calls
 * (coll_strata_progress): `auto` the progress thread starts at the first
 * nonblocking call it can turn, `thread` at the first communicator set up
 * (mca_coll_strata_progress_early), `calls` never: progress inside MPI
 * calls only.  Set by the component when it opens; the thread stops in
 * engine_finalize. */
#define MCA_COLL_STRATA_PROGRESS_AUTO   0
#define MCA_COLL_STRATA_PROGRESS_THREAD 1
#define MCA_COLL_STRATA_PROGRESS_CALLS  2
void mca_coll_strata_progress_set_mode(int mode);
void mca_coll_strata_progress_early(void);
void mca_coll_strata_progress_finalize(void);
/* Whether this process may progress nonblocking calls in a thread (the
 * setting is not `calls`): what a communicator's set-up agrees on before
 * it sets up the network transport that thread needs. */
bool mca_coll_strata_progress_threaded(void);
/* coll_strata_wire_ucp.c (coll_strata_wire.h): the rail's own transport for
 * nonblocking calls between nodes, set up in the communicator's set-up
 * (collective over the engine's rail; false: none, the pml then) */
bool mca_coll_strata_wire_setup(mca_coll_strata_engine_t *e);

/* Seconds on the monotonic clock (the network measurement, the exchange's
 * patience with a refusing pml, the application's last advance of a
 * nonblocking call). */
static inline double mca_coll_strata_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* coll_strata_topo.c: nodes, rails and sub-communicators.  Errors leave a
 * message in `why`; release undoes a partial set-up too.  topo.node_comm is
 * set afterwards, failed or not, exactly when the node split was agreed
 * across comm (then every rank of the node has it). */
int mca_coll_strata_topo_setup(mca_coll_strata_engine_t *e, struct ompi_communicator_t *comm,
                               char *why, size_t why_len);
void mca_coll_strata_topo_release(mca_coll_strata_topo_t *topo);

/* coll_strata_pipeline.c: the pipeline's resources (shared-memory slots,
 * one exchange and its scratch per slot), made once per communicator;
 * collective over the node (see mca_coll_strata_shm_attach for `willing`) */
int mca_coll_strata_pipeline_setup(mca_coll_strata_engine_t *e, const mca_coll_strata_settings_t *s,
                                   bool willing, char *why, size_t why_len);
void mca_coll_strata_pipeline_release(mca_coll_strata_engine_t *e);

/*
 * One run of the pipeline (coll_strata_pipeline.c): the reduction over
 * every rank of `count` elements (each rank's input at sbuf: MPI_IN_PLACE
 * resolved by the caller), and where this rank's part of it goes: elements
 * [out_lo, out_hi) of the reduced vector, element out_lo at `out`.  The
 * phases are the same for each collective; the part differs:
 *   MPI_Allreduce                  the whole vector, every rank
 *   MPI_Reduce_scatter(_block)     the rank's block
 *   MPI_Reduce                     the whole vector at the root, none elsewhere
 * (the replicated algorithm's owners write straight to `out` only where
 * the part is the whole vector.)
 */
typedef enum {
    /* every rank's input into its input area, reduced by the slice owners
     * into the result area, allreduced between nodes */
    MCA_COLL_STRATA_PIPE_REDUCE = 0,
    /* the root's input into the result area, broadcast between nodes by
     * the leaders (sched_alg), copied out by every other rank */
    MCA_COLL_STRATA_PIPE_BCAST,
    /* every rank's input into its place of the result area (node order,
     * mca_coll_strata_topo_t), the node regions allgathered between nodes by
     * the leaders, every rank's block copied out to its place in `out` */
    MCA_COLL_STRATA_PIPE_ALLGATHER
} mca_coll_strata_pipe_kind_t;

typedef struct mca_coll_strata_pipeline_args_t {
    mca_coll_strata_pipe_kind_t kind;
    const void *sbuf;
    void *out;
    /* elements: of the reduced or broadcast vector; of each rank's block
     * for an allgather (chunk c covers the same elements of every block) */
    size_t count, out_lo, out_hi;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op; /* NULL for BCAST and ALLGATHER */
    /* BCAST: the root's rank in comm; BCAST and ALLGATHER: the schedule
     * between the nodes' leaders (logic/coll_strata_sched.h) */
    int root;
    mca_coll_strata_sched_alg_t sched_alg;
    struct ompi_communicator_t *comm; /* BCAST and ALLGATHER: the call's */
    /* REDUCE: whose the result is, for the exchange between nodes: every
     * rank's (WHOLE: the allreduce), the root's (MPI_Reduce, `root`), or
     * each rank its block (BLOCKS: count / ranks elements each, or
     * rcounts[r]).  With the ring or halving-doubling between nodes the
     * exchange then is the ring's reduce-scatter half on the nodes' regions
     * of the result
     * (logic/coll_strata_sched.h's ring_rs; a reduce-scatter's only where each
     * node's ranks are consecutive), sending (N-1)/N of the vector instead
     * of 2(N-1)/N. */
    enum {
        MCA_COLL_STRATA_PARTS_WHOLE = 0,
        MCA_COLL_STRATA_PARTS_ROOT,
        MCA_COLL_STRATA_PARTS_BLOCKS
    } parts;
    const int *rcounts;
    const char *coll; /* "MPI_Allreduce"...: for messages */
    /* not an allreduce: some rank's part is less than the whole vector, so
     * the replicated path (whose owners write the whole vector to `out`)
     * runs as the leader path on every rank (the same for all: a rank
     * whose own part is the whole vector must not decide otherwise) */
    bool partial;
} mca_coll_strata_pipeline_args_t;

int mca_coll_strata_pipeline_run(mca_coll_strata_engine_t *e,
                                 const mca_coll_strata_pipeline_args_t *a,
                                 const mca_coll_strata_decision_t *decision,
                                 mca_coll_strata_node_t *node);
/* Whether the run's exchange between nodes is the ring's reduce-scatter
 * half (see the args' parts): the one rule for the pipeline and for the
 * verbose lines that name it. */
bool mca_coll_strata_pipeline_scatters(const mca_coll_strata_engine_t *e,
                                       const mca_coll_strata_pipeline_args_t *a,
                                       const mca_coll_strata_decision_t *decision);
/*
 * The same run as a nonblocking collective (coll_strata_pipeline_nb.c):
 * started now (its chunks take the communicator's next serials, what can
 * move at once moves), advanced by progress (advance never waits; it says
 * whether the call is done), and ended (its outcome, as pipeline_run's;
 * the call freed).  `a` and `decision` are copied; the buffers they name
 * stay the application's until the call is done.  Host data only (the
 * host node area).
 */
typedef struct mca_coll_strata_pipeline_call_t mca_coll_strata_pipeline_call_t;
int mca_coll_strata_pipeline_start(mca_coll_strata_engine_t *e,
                                   const mca_coll_strata_pipeline_args_t *a,
                                   const mca_coll_strata_decision_t *decision,
                                   mca_coll_strata_node_t *node,
                                   mca_coll_strata_pipeline_call_t **call);
bool mca_coll_strata_pipeline_advance(mca_coll_strata_pipeline_call_t *call);
int mca_coll_strata_pipeline_end(mca_coll_strata_pipeline_call_t *call);

/* The run for MPI_Allreduce (sbuf may be MPI_IN_PLACE). */
int mca_coll_strata_pipeline_allreduce(mca_coll_strata_engine_t *e, const void *sbuf, void *rbuf,
                                       size_t count, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op,
                                       const mca_coll_strata_decision_t *decision,
                                       mca_coll_strata_node_t *node);

/* The node area of device data (coll_strata_node_device*.c).  reduces: a
 * kernel exists for the op and type (coll_strata_node_device_kernels.c);
 * setup: collective over comm (agreed, warns once); node_device: the area,
 * NULL before a successful set-up. */
bool mca_coll_strata_node_device_reduces(struct ompi_op_t *op, struct ompi_datatype_t *dtype);
int mca_coll_strata_node_device_setup(mca_coll_strata_engine_t *e,
                                      const mca_coll_strata_settings_t *s,
                                      struct ompi_communicator_t *comm, int ordinal);
mca_coll_strata_node_t *mca_coll_strata_node_device(mca_coll_strata_engine_t *e);
/* Whether this call's device buffers (on device `ordinal`; `primary`:
 * every one of them in that device's primary context, as the caller
 * classified them) are where this rank's native path runs its kernels: its
 * scratch's device (the first native call's, before the set-up). */
bool mca_coll_strata_node_device_reaches(const mca_coll_strata_engine_t *e,
                                         struct ompi_communicator_t *comm, int ordinal,
                                         bool primary);
/* release: the communicator goes; its device scratch is freed once every
 * local rank has closed its mapping of it, until then kept on a retired
 * list; reap frees what may be freed from that list, first waiting up to
 * wait_s seconds for the peers (0 at every communicator's creation and
 * release, a few seconds at the component's close). */
void mca_coll_strata_node_device_release(mca_coll_strata_engine_t *e);
void mca_coll_strata_node_device_reap(double wait_s);
/* The pipeline on device buffers through the node area, in the primary
 * context of the device the area was set up on (after a successful set-up);
 * `a` as for mca_coll_strata_pipeline_run. */
int mca_coll_strata_node_device_run(mca_coll_strata_engine_t *e,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *decision);

#endif /* MCA_COLL_STRATA_ENGINE_H */
