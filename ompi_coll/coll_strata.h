/*
 * coll/strata: topology-aware collectives for Open MPI 4.1 and 5.0 (the
 * differences: coll_strata_ompi.h).
 *
 * Declares the component, the per-communicator module and every entry point.
 * The component is off by default (priority 0 makes comm_query decline), so an
 * installed Strata changes nothing until a job asks for it with
 * --mca coll_strata_priority <n>.
 *
 * Once on, strata owns every collective that moves data (blocking and
 * nonblocking; barriers stay with the module below it).  Each entry asks
 * the memory kind of its buffers first: host and managed buffers go where
 * they went before (strata's own allreduce, or the saved module below
 * strata), device buffers are staged through pinned host memory around that
 * same path, so a device pointer never reaches code that reads memory with
 * the CPU (Debian's Open MPI has no CUDA support).
 *
 * Where things are:
 *   coll_strata_component.c   MCA parameters
 *   coll_strata_settings.c    the settings a communicator runs with (agreed)
 *   coll_strata_module.c      comm_query / module_enable / the fallback
 *                             table / lazy set-up of strata's own algorithms
 *   coll_strata_topo.c        nodes, rails and sub-communicators
 *   coll_strata_shm.c         the per-node shared-memory segment
 *   coll_strata_decision.c    which algorithm runs for a call (pure logic)
 *   coll_strata_allreduce.c   MPI_Allreduce entry: memory kind, checks,
 *                             decision, fallback
 *   coll_strata_pipeline.c    reduce-scatter(node) -> allreduce(rail) ->
 *                             allgather(node), pipelined by chunks; its
 *                             shared-memory slots and exchanges
 *   coll_strata_sched.c       inter-node schedules (ring, recursive doubling,
 *                             halving-doubling): pure step arithmetic
 *   coll_strata_xchg.c        runs a schedule on a rail, non-blocking
 *   coll_strata_node_host.c   the node area of host data: copy/reduce
 *                             primitives on the shared-memory segment
 *   coll_strata_colls.c       every other blocking collective: memory kind,
 *                             then fallback or staged fallback
 *   coll_strata_icolls.c      the nonblocking twins
 *   coll_strata_stage.c       staging device buffers: regions, pinned bounce
 *                             buffers, copies on strata's stream, pieces
 *   coll_strata_stage_req.c   the request of a staged nonblocking collective
 */
#ifndef MCA_COLL_STRATA_H
#define MCA_COLL_STRATA_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#include <time.h>

#include "logic/coll_strata_decision.h"
#include "coll_strata_ompi.h"
#include "logic/coll_strata_sched.h"

BEGIN_C_DECLS

/*
 * The coll_strata settings that shape what a rank sends or which collectives
 * it calls: ranks deciding from different values would run different
 * exchanges and wait for each other.  The component holds this process's
 * values (MCA parameters); every communicator runs with its own copy,
 * agreed across its ranks at its first collective that reads one
 * (coll_strata_settings.c): rank 0's value of each, where they differ.
 */
typedef struct mca_coll_strata_settings_t {
    /* decision knobs: algorithm overrides and thresholds (and the derived
     * network figures, alpha/beta/overhead, from the three below) */
    mca_coll_strata_decision_params_t decision;
    /* the inter-node cost model's network (0: measured at set-up) */
    double inter_latency_us;
    double inter_bandwidth_gbs;
    double inter_overhead_us; /* decision.overhead; 0: measured with alpha */
    size_t inter_eager_max;   /* decision.eager_max; 0: from the pml */
    /* bytes of one pipeline chunk (the whole vector moves chunk by chunk) */
    size_t segment_size;
    /* chunks in flight per communicator (shared-memory slots) */
    int shm_slots;
    /* bytes of pinned host memory a communicator keeps for staging device
     * buffers; larger reductions and broadcasts run in pieces */
    size_t stage_max;
    /* device allreduce: MCA_COLL_STRATA_DEVICE_ALG_*, and the bytes from
     * which `auto` runs it on the GPUs */
    int device_algorithm;
    size_t device_native_min;
    /* bytes from which MPI_Reduce runs on strata's pipeline (below, the
     * module below strata: its tree lets non-roots return at once) */
    size_t reduce_min;
    /* MPI_Bcast and MPI_Allgather on strata's pipeline: MCA_COLL_STRATA_COPY_*,
     * and the bytes (the vector; the gathered vector) from which `auto`
     * runs them there */
    int bcast_algorithm;
    size_t bcast_min;
    int allgather_algorithm;
    size_t allgather_min;
} mca_coll_strata_settings_t;

typedef struct mca_coll_strata_component_t {
    mca_coll_base_component_t super;
    /* MCA parameters (coll_strata_*) */
    int priority;
    /* the priority comm_query answers: `priority` raised above coll/han's
     * (mca_coll_strata_init_query) */
    int priority_used;
    int verbose;
    /* the settings every rank of a communicator must share (each module
     * runs with its agreed copy, mca_coll_strata_module_t.settings) */
    mca_coll_strata_settings_t settings;
    /* directory of the shared-memory files (a tmpfs) */
    char *shm_dir;
    /* native device allreduce between nodes: MCA_COLL_STRATA_DEVICE_NET_* */
    int device_network;
    /* for tests: steps this process fails on purpose (coll_strata_test_fail,
     * MCA_COLL_STRATA_TEST_FAIL_* bits) */
    char *test_fail;
    unsigned test_fail_steps;
    /* opal_output stream the verbose messages go to */
    int output;
} mca_coll_strata_component_t;

/*
 * Every collective strata installs, blocking then nonblocking.  One list, so
 * saving, installing and releasing the fallback cannot miss one.
 */
#define MCA_COLL_STRATA_FOREACH_BLOCKING(_X) \
    _X(allgather) _X(allgatherv) _X(allreduce) _X(alltoall) _X(alltoallv) _X(alltoallw) \
    _X(bcast) _X(exscan) _X(gather) _X(gatherv) _X(reduce) _X(reduce_scatter) \
    _X(reduce_scatter_block) _X(scan) _X(scatter) _X(scatterv) _X(reduce_local)
#define MCA_COLL_STRATA_FOREACH_NONBLOCKING(_X) \
    _X(iallgather) _X(iallgatherv) _X(iallreduce) _X(ialltoall) _X(ialltoallv) \
    _X(ialltoallw) _X(ibcast) _X(iexscan) _X(igather) _X(igatherv) _X(ireduce) \
    _X(ireduce_scatter) _X(ireduce_scatter_block) _X(iscan) _X(iscatter) _X(iscatterv)
#define MCA_COLL_STRATA_FOREACH_COLL(_X) \
    MCA_COLL_STRATA_FOREACH_BLOCKING(_X) MCA_COLL_STRATA_FOREACH_NONBLOCKING(_X)

#define MCA_COLL_STRATA_FALLBACK_FIELD(_coll) \
    mca_coll_base_module_##_coll##_fn_t _coll; \
    mca_coll_base_module_t *_coll##_module;

/*
 * The functions of the modules that ran before strata was stacked on top of
 * a communicator, saved (and retained) in module_enable: strata hands them
 * every call it does not run itself, and the host copies of staged calls.
 * None points back at strata.
 */
typedef struct mca_coll_strata_fallback_t {
    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_FIELD)
} mca_coll_strata_fallback_t;

/*
 * Call the saved function of collective `_coll` on `_comm`: `...` are its
 * arguments before the communicator (IFALLBACK: nonblocking, the request
 * after it).  For the length of the call the communicator's slot of that
 * collective shows the module below strata, as if strata were not stacked:
 * a module that hands calls on by calling the communicator's own function
 * (coll/han does, when it declines a communicator) would otherwise call
 * strata again, and strata it, without end.  coll/han also replaces itself
 * in that slot, once, with the module below it, taking over the slot's
 * reference to itself; strata then adopts the replacement as its saved
 * function, as Open MPI would have done without strata.  Afterwards the
 * slot shows again what it showed before (strata, or a module stacked
 * above strata).  MPI allows one collective at a time per communicator, so
 * nobody else looks at the slot meanwhile.
 */
#define MCA_COLL_STRATA_BELOW(_mod, _coll, _comm, _invoke) \
    ({ \
        mca_coll_strata_module_t *_sm = (_mod); \
        mca_coll_base_comm_coll_t *_cc = (_comm)->c_coll; \
        __typeof__(_cc->coll_##_coll) _top = _cc->coll_##_coll; \
        mca_coll_base_module_t *_top_module = _cc->coll_##_coll##_module; \
        int _rc; \
        _cc->coll_##_coll = _sm->fallback._coll; \
        _cc->coll_##_coll##_module = _sm->fallback._coll##_module; \
        _rc = (_invoke); \
        if (OPAL_UNLIKELY(_cc->coll_##_coll##_module != _sm->fallback._coll##_module)) { \
            _sm->fallback._coll = _cc->coll_##_coll; \
            _sm->fallback._coll##_module = _cc->coll_##_coll##_module; \
        } \
        _cc->coll_##_coll = _top; \
        _cc->coll_##_coll##_module = _top_module; \
        _rc; \
    })

#define MCA_COLL_STRATA_FALLBACK(_mod, _coll, _comm, ...) \
    MCA_COLL_STRATA_BELOW(_mod, _coll, _comm, \
                          _sm->fallback._coll(__VA_ARGS__, (_comm), _sm->fallback._coll##_module))

#define MCA_COLL_STRATA_IFALLBACK(_mod, _coll, _comm, _request, ...) \
    MCA_COLL_STRATA_BELOW(_mod, _coll, _comm, \
                          _sm->fallback._coll(__VA_ARGS__, (_comm), (_request), \
                                              _sm->fallback._coll##_module))

/* The pinned host buffer a communicator keeps for staging. */
typedef struct mca_coll_strata_bounce_cache_t {
    char *mem;
    size_t size;
    bool pinned; /* cuMemHostAlloc (else malloc: pinning failed) */
    bool busy;   /* lent to a call in progress (atomic) */
    int ordinal; /* device whose context allocated it */
} mca_coll_strata_bounce_cache_t;

struct mca_coll_strata_node_t;

/*
 * Where a node's chunks live, and how they are copied and reduced: the
 * pipeline and the inter-node exchange are written once against this table, and each
 * memory kind fills one (coll_strata_node_host.c: the shared-memory
 * segment, memcpy and Open MPI's op functions).  copy and reduce may only
 * queue their work; it is finished when complete() returns, and only then
 * may a progress flag announce it.  Every call returns an OMPI status.
 */
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
} mca_coll_strata_node_ops_t;

extern const mca_coll_strata_node_ops_t mca_coll_strata_node_host_ops;

/* Most shared-memory slots (chunks in flight) a communicator may have. */
#define MCA_COLL_STRATA_SLOTS_MAX 64

/* One local rank's progress flags, each on its own cache line. */
typedef struct mca_coll_strata_shm_flags_t {
    uint64_t copied_in;  /* chunks whose input this rank wrote to its slot */
    char pad0[56];
    uint64_t reduced;    /* (slice owners) chunks whose inputs were read */
    char pad1[56];
    uint64_t published;  /* (slice owners) chunks whose result slice is final */
    char pad2[56];
    uint64_t copied_out; /* chunks this rank copied out of the result area */
    char pad3[56];
    /* 1 once this rank has closed its mappings of its peers' device scratch
     * (coll_strata_node_device.c: a rank frees its own only then) */
    uint64_t device_closed;
    char pad4[56];
    /* per slot: g + 1 when this rank's input of global chunk g in that slot
     * is wrong (before copied_in), and when its result slice of g is
     * (before published).  Two words, each keyed by the chunk, each
     * rewritten only once the slot's area is free again, so no mark is
     * lost before every rank that depends on it has read it; a rank's own
     * copy-out failing marks nothing (coll_strata_pipeline.c) */
    uint64_t input_failed[MCA_COLL_STRATA_SLOTS_MAX];
    uint64_t result_failed[MCA_COLL_STRATA_SLOTS_MAX];
} mca_coll_strata_shm_flags_t;

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
    mca_coll_strata_shm_flags_t *flags;
    char *slots;
} mca_coll_strata_shm_t;

/* Where this process sits: computed once per communicator. */
typedef struct mca_coll_strata_topo_t {
    int nnodes;
    int node_index;   /* nodes numbered by their lowest rank */
    int local_rank;
    int local_size;
    int ppn_min;      /* fewest ranks on any node */
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

typedef enum {
    MCA_COLL_STRATA_SETUP_NONE,   /* not tried yet */
    MCA_COLL_STRATA_SETUP_BUSY,   /* inside setup: calls go to the fallback */
    MCA_COLL_STRATA_SETUP_READY,
    MCA_COLL_STRATA_SETUP_FAILED  /* agreed across the communicator */
} mca_coll_strata_setup_state_t;

/* A node area: the primitives and the segment their progress flags (and,
 * for host data, the slots) live in. */
typedef struct mca_coll_strata_node_t {
    const mca_coll_strata_node_ops_t *ops;
    mca_coll_strata_shm_t *shm;
    /* The inter-node phase, per slot (inter_slot_bytes each): where it
     * receives blocks (NULL without a rail), and, where the pml cannot carry
     * this area's memory, pinned host memory it stages the blocks it
     * sends and receives through (two per slot; NULL: the pml carries it). */
    char *inter_recv;
    char *inter_stage;
    size_t inter_slot_bytes;
} mca_coll_strata_node_t;

typedef struct mca_coll_strata_node_device_t mca_coll_strata_node_device_t;

/*
 * The allreduce decisions of the last few host calls, per (count, datatype,
 * op): what a code's loop of dot products and norms asks again and again
 * skips the argument checks and the cost model.  Only calls strata's checks
 * passed with a predefined datatype and op are kept: those objects are
 * static, so an address names the same thing for the whole run (a freed
 * user op's address may come back as another op).  Everything else the
 * decision reads is fixed once the communicator is set up.  Collectives on
 * one communicator are ordered by MPI, so no lock.  Direct-mapped by count.
 */
#define MCA_COLL_STRATA_AR_CACHE_SIZE 4
typedef struct mca_coll_strata_ar_cached_t {
    int count; /* 0: empty (a count of 0 never reaches a decision) */
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    mca_coll_strata_decision_t decision;
} mca_coll_strata_ar_cached_t;

typedef struct mca_coll_strata_module_t {
    mca_coll_base_module_t super;
    mca_coll_strata_fallback_t fallback;
    mca_coll_strata_bounce_cache_t bounce;
    mca_coll_strata_setup_state_t setup;
    /* the settings this communicator runs with, agreed across its ranks
     * (settings_agreed) at its first collective that reads one */
    mca_coll_strata_settings_t settings;
    bool settings_agreed;
    /* the settings' decision knobs, with the network figures this
     * communicator's cost model uses: configured, or measured at set-up
     * (bitwise the same on every rank: coll_strata_network.c) */
    mca_coll_strata_decision_params_t decision;
    mca_coll_strata_topo_t topo;
    mca_coll_strata_shm_t shm;
    mca_coll_strata_node_t node_host; /* host data in `shm` */
    /* device data in the local ranks' device scratch (coll_strata_node_device.c) */
    mca_coll_strata_node_device_t *node_device;
    mca_coll_strata_setup_state_t device_setup;
    bool any_driver; /* some rank had a CUDA driver at set-up (agreed) */
    int device_ordinal; /* the GPU of this rank's device scratch */
    /* chunks this communicator has pushed through the segment, all calls;
     * identical on every local rank since collectives are ordered */
    uint64_t chunk_serial;
    /* per slot: the inter-node phase of the chunk in it */
    struct mca_coll_strata_xchg_t *xchgs;
    /* the nodes' regions of a call's result (nnodes + 1 entries; see
     * mca_coll_strata_pipeline_args_t.parts), made with the exchanges */
    size_t *node_parts;
    /* idle polls of the pipeline before it yields the core (adapts) */
    unsigned spin_budget;
    mca_coll_strata_ar_cached_t ar_cache[MCA_COLL_STRATA_AR_CACHE_SIZE];
} mca_coll_strata_module_t;

OBJ_CLASS_DECLARATION(mca_coll_strata_module_t);

MCA_STRATA_OMPI_COMPONENT_EXPORT extern mca_coll_strata_component_t mca_coll_strata_component;

/* Seconds on the monotonic clock (the network measurement, the exchange's
 * patience with a refusing pml). */
static inline double mca_coll_strata_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The arguments (names looked up for the message) are evaluated only when
 * the message is wanted: per-call messages sit on the fast path. */
#define MCA_COLL_STRATA_VERBOSE(_level, ...) \
    do { \
        if (OPAL_UNLIKELY(mca_coll_strata_component.verbose >= (_level))) { \
            opal_output_verbose((_level), mca_coll_strata_component.output, \
                                "coll:strata: " __VA_ARGS__); \
        } \
    } while (0)

/* coll_strata_component.c: fault injection for tests (coll_strata_test_fail):
 * true when this process is to fail `step` now (INTER: once) */
#define MCA_COLL_STRATA_TEST_FAIL_NODES    0x1u /* the topology's node exchange */
#define MCA_COLL_STRATA_TEST_FAIL_PIPELINE 0x2u /* the pipeline's allocations */
#define MCA_COLL_STRATA_TEST_FAIL_INTER    0x4u /* the next inter-node phase */
#define MCA_COLL_STRATA_TEST_FAIL_LEADERS  0x8u /* the node leaders' exchange */
#define MCA_COLL_STRATA_TEST_FAIL_CONTEXT  0x10u /* the native allreduce's context switch */
#define MCA_COLL_STRATA_TEST_FAIL_COPY_OUT 0x20u /* the next pipeline call's copies out */
#define MCA_COLL_STRATA_TEST_FAIL_ISEND    0x40u /* the exchange's next isend (refused) */
#define MCA_COLL_STRATA_TEST_FAIL_STAGE    0x80u /* every staging buffer's allocation */
#define MCA_COLL_STRATA_TEST_FAIL_PACK     0x100u /* a bcast's or allgather's packed image */
bool mca_coll_strata_test_fail_now(unsigned step);

static inline bool mca_coll_strata_test_fail(unsigned step)
{
    return OPAL_UNLIKELY(0 != (mca_coll_strata_component.test_fail_steps & step)) &&
           mca_coll_strata_test_fail_now(step);
}

/* coll_strata_component.c: priority_used from coll_strata_priority and
 * coll/han's priority */
void mca_coll_strata_component_set_priority(void);

/* coll_strata_settings.c: module->settings, agreed across comm (collective:
 * every rank calls it at the same collective, the first one on comm that
 * reads a setting; cheap once agreed).  Where ranks' values differ, rank 0
 * names the setting (once per process) and every rank takes rank 0's.
 * Returns an error only when the agreement's own allreduce failed (the
 * module then runs with this process's values). */
int mca_coll_strata_settings_agree(mca_coll_strata_module_t *module,
                                   struct ompi_communicator_t *comm);

static inline int mca_coll_strata_settings_ready(mca_coll_strata_module_t *module,
                                                 struct ompi_communicator_t *comm)
{
    return OPAL_LIKELY(module->settings_agreed) ? OMPI_SUCCESS
                                                : mca_coll_strata_settings_agree(module, comm);
}

/* coll_strata_settings.c: the figures derived from a settings' configured
 * ones (the decision's alpha, beta, gamma, overhead): after the component's
 * parameters are read, and after an agreement replaced some of them */
void mca_coll_strata_settings_derive(mca_coll_strata_settings_t *settings);

/* coll_strata_module.c */
int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority);

/* coll_strata_module.c: true when strata's own algorithms may run on comm
 * (sets them up on first use; false while that set-up is in progress and
 * after it failed, which every rank agrees on). */
bool mca_coll_strata_module_ready(mca_coll_strata_module_t *module,
                                  struct ompi_communicator_t *comm, const char **why);

/* coll_strata_network.c: module->decision with the network figures of the
 * cost model (configured, measured or cached); part of the set-up, so
 * collective over comm.  Returns an error when a broadcast failed. */
int mca_coll_strata_network_setup(mca_coll_strata_module_t *module,
                                  struct ompi_communicator_t *comm);

/* coll_strata_topo.c: nodes, rails and sub-communicators.  Errors leave a
 * message in `why`; release undoes a partial set-up too.  topo.node_comm is
 * set afterwards, failed or not, exactly when the node split was agreed
 * across comm (then every rank of the node has it). */
int mca_coll_strata_topo_setup(mca_coll_strata_module_t *module,
                               struct ompi_communicator_t *comm, char *why, size_t why_len);
void mca_coll_strata_topo_release(mca_coll_strata_topo_t *topo);

/* coll_strata_shm.c: collective over node_comm; a rank that is not
 * `willing` (its own set-up already failed) still takes part and makes the
 * attach fail on every local rank. */
int mca_coll_strata_shm_attach(mca_coll_strata_shm_t *shm, struct ompi_communicator_t *node_comm,
                               bool willing, size_t slot_bytes, int nslots, const char *dir,
                               char *why, size_t why_len);
void mca_coll_strata_shm_detach(mca_coll_strata_shm_t *shm);
void mca_coll_strata_shm_cleanup_stale(const char *dir);

static inline char *mca_coll_strata_shm_input(const mca_coll_strata_shm_t *shm, int slot,
                                              int local_rank)
{
    return shm->slots + ((size_t)slot * (shm->nranks + 1) + local_rank) * shm->slot_bytes;
}

static inline char *mca_coll_strata_shm_result(const mca_coll_strata_shm_t *shm, int slot)
{
    return mca_coll_strata_shm_input(shm, slot, shm->nranks);
}

/* coll_strata_node_host.c: a printable name for an op (predefined or "user op") */
const char *mca_coll_strata_op_name(struct ompi_op_t *op);
/* MPI_SUM ... MPI_NO_OP: a static object, the same for the whole run */
bool mca_coll_strata_op_is_predefined(struct ompi_op_t *op);

/* coll_strata_allreduce.c: the host path's decision for an allreduce of
 * count x dtype with op (cached), or NULL with *why when it goes to the
 * module below strata; *scratch holds a fresh one */
const mca_coll_strata_decision_t *
mca_coll_strata_allreduce_host_decision(mca_coll_strata_module_t *module, int count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_strata_decision_t *scratch, const char **why);

/* coll_strata_allreduce.c */
int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module);

/* coll_strata_allreduce.c: strata's host allreduce (its algorithms or the
 * fallback), what a staged device allreduce runs on its host copies */
int mca_coll_strata_allreduce_host(mca_coll_strata_module_t *module, const void *sbuf,
                                   void *rbuf, int count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                   const char *kinds);

/* coll_strata_node_device.c: the node area of device data.  reduces: a
 * kernel exists for the op and type; setup: collective over comm (agreed,
 * warns once); node_device: the area, NULL before a successful set-up. */
bool mca_coll_strata_node_device_reduces(struct ompi_op_t *op, struct ompi_datatype_t *dtype);
int mca_coll_strata_node_device_setup(mca_coll_strata_module_t *module,
                                      struct ompi_communicator_t *comm, int ordinal);
mca_coll_strata_node_t *mca_coll_strata_node_device(mca_coll_strata_module_t *module);
/* Whether this call's device buffers (on device `ordinal`) are where this
 * rank's native path runs its kernels: its scratch's device (the first
 * native call's, before the set-up) and that device's primary context. */
bool mca_coll_strata_node_device_reaches(const mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm, const void *sbuf,
                                         const void *rbuf, int ordinal);
/* release: the communicator goes; its device scratch is freed once every
 * local rank has closed its mapping of it, until then kept on a retired
 * list; reap frees what may be freed from that list, first waiting up to
 * wait_s seconds for the peers (0 at every communicator's creation and
 * release, a few seconds at the component's close). */
void mca_coll_strata_node_device_release(mca_coll_strata_module_t *module);
void mca_coll_strata_node_device_reap(double wait_s);
/* The pipeline on device buffers through the node area, in the primary
 * context of the device the area was set up on (after a successful set-up);
 * `a` as for mca_coll_strata_pipeline_run. */
struct mca_coll_strata_pipeline_args_t;
int mca_coll_strata_node_device_run(mca_coll_strata_module_t *module,
                                    const struct mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *decision);

/* coll_strata_pipeline.c: the pipeline's resources (shared-memory slots,
 * one exchange and its scratch per slot), made once per communicator;
 * collective over the node (see mca_coll_strata_shm_attach for `willing`) */
int mca_coll_strata_pipeline_setup(mca_coll_strata_module_t *module, bool willing, char *why,
                                   size_t why_len);
void mca_coll_strata_pipeline_release(mca_coll_strata_module_t *module);

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
     * between the nodes' leaders (coll_strata_sched.h) */
    int root;
    mca_coll_strata_sched_alg_t sched_alg;
    struct ompi_communicator_t *comm; /* BCAST and ALLGATHER: the call's */
    /* REDUCE: whose the result is, for the exchange between nodes: every
     * rank's (WHOLE: the allreduce), the root's (MPI_Reduce, `root`), or
     * each rank its block (BLOCKS: count / ranks elements each, or
     * rcounts[r]).  With the ring or halving-doubling between nodes the
     * exchange then is the ring's reduce-scatter half on the nodes' regions
     * of the result
     * (coll_strata_sched.h's ring_rs; a reduce-scatter's only where each
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

int mca_coll_strata_pipeline_run(mca_coll_strata_module_t *module,
                                 const mca_coll_strata_pipeline_args_t *a,
                                 const mca_coll_strata_decision_t *decision,
                                 mca_coll_strata_node_t *node);
/* Whether the run's exchange between nodes is the ring's reduce-scatter
 * half (see the args' parts): the one rule for the pipeline and for the
 * verbose lines that name it. */
bool mca_coll_strata_pipeline_scatters(const mca_coll_strata_module_t *module,
                                       const mca_coll_strata_pipeline_args_t *a,
                                       const mca_coll_strata_decision_t *decision);
/* The run for MPI_Allreduce (sbuf may be MPI_IN_PLACE). */
int mca_coll_strata_pipeline_allreduce(mca_coll_strata_module_t *module, const void *sbuf,
                                       void *rbuf, size_t count,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       const mca_coll_strata_decision_t *decision,
                                       mca_coll_strata_node_t *node);

/* coll_strata_reductions.c: MPI_Reduce, MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter on host buffers (or staged copies): strata's pipeline
 * where it may run, else the module below strata */
int mca_coll_strata_reduction_host(mca_coll_strata_module_t *module,
                                   struct ompi_communicator_t *comm,
                                   const mca_coll_strata_pipeline_args_t *a, bool *ran);
/* coll_strata_allreduce.c: the communicator's set-up at the first call
 * strata's own algorithms could run (every rank, same inputs), so that the
 * native path knows at once whether some rank has a CUDA driver */
void mca_coll_strata_setup_early(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op);
/* coll_strata_reductions.c: the verbose name of a reduction's exchange
 * between nodes (the ring's reduce-scatter half where it runs) */
const char *mca_coll_strata_reduction_inter_name(const mca_coll_strata_module_t *module,
                                                 const mca_coll_strata_pipeline_args_t *a,
                                                 const mca_coll_strata_decision_t *d);

/* coll_strata_allreduce.c: whether every rank can run a call on the GPUs
 * (`mine`: this one can, on device `ordinal`), the device area set up at
 * the first; and, for verbose lines, how device blocks cross nodes. */
int mca_coll_strata_native_agree(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                 int mine, int ordinal, bool *go);
const char *mca_coll_strata_native_network(mca_coll_strata_module_t *module,
                                           const mca_coll_strata_decision_t *decision);

/* coll_strata_copies.c: MPI_Bcast and MPI_Allgather on the pipeline.  The
 * native path (device buffers on every rank; *ran says whether it ran),
 * and the host path (host buffers or staged copies: the pipeline where it
 * applies, else the module below strata). */
int mca_coll_strata_bcast_native(mca_coll_strata_module_t *module, void *buf, int count,
                                 struct ompi_datatype_t *dtype, int root,
                                 struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_bcast_host(mca_coll_strata_module_t *module, void *buf, int count,
                               struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm);
int mca_coll_strata_allgather_native(mca_coll_strata_module_t *module, const void *sbuf, int scount,
                                     struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                     struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_allgather_host(mca_coll_strata_module_t *module, const void *sbuf, int scount,
                                   struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm);

/* coll_strata_allreduce.c: the native path (the pipeline on the GPUs) for
 * the allreduce and these, when every rank agrees it can run (*ran); `name`
 * starts the verbose line.  Called by every rank for the same calls. */
int mca_coll_strata_reduction_native(mca_coll_strata_module_t *module,
                                     struct ompi_communicator_t *comm,
                                     const mca_coll_strata_pipeline_args_t *a, const char *name,
                                     bool *ran);
int mca_coll_strata_reduce_host(mca_coll_strata_module_t *module, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                int root, struct ompi_communicator_t *comm);
int mca_coll_strata_reduce_scatter_block_host(mca_coll_strata_module_t *module, const void *sbuf,
                                              void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm);
int mca_coll_strata_reduce_scatter_host(mca_coll_strata_module_t *module, const void *sbuf,
                                        void *rbuf, const int *rcounts,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm);
/* ... and their native path, asked by every rank first wherever some rank
 * has a CUDA driver (*ran: it ran, the call is done) */
int mca_coll_strata_reduce_native(mca_coll_strata_module_t *module, const void *sbuf, void *rbuf,
                                  int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  int root, struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_reduce_scatter_block_native(mca_coll_strata_module_t *module, const void *sbuf,
                                                void *rbuf, int rcount,
                                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                                struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_reduce_scatter_native(mca_coll_strata_module_t *module, const void *sbuf,
                                          void *rbuf, const int *rcounts,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm, bool *ran);

/* coll_strata_xchg.c: one exchange of `count` elements at `buf` among the
 * members of `comm` by schedule `sched` (coll_strata_sched.h: the caller
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
    int tag;
    int step, nsteps;
    mca_coll_strata_sched_step_t cur; /* the step in flight */
    bool done;   /* this chunk's inter-node phase is complete */
    /* this member's result is wrong (set before start when its input is);
     * the exchange goes on and tells its peers (coll_strata_xchg.c) */
    bool failed;
    ompi_request_t *reqs[2]; /* receive, send */
    char signal[64]; /* what a failed member sends: one element at most */
    /* the step's send the pml refused, to be posted again (as the news of
     * the failure), and since when (CLOCK_MONOTONIC seconds; 0: not refused) */
    bool send_pending;
    double send_refused_at;
} mca_coll_strata_xchg_t;

void mca_coll_strata_xchg_start(mca_coll_strata_xchg_t *x);
void mca_coll_strata_xchg_progress(mca_coll_strata_xchg_t *x, bool *done);

/*
 * Entry points: coll_strata_allreduce.c, coll_strata_colls.c (blocking) and
 * coll_strata_icolls.c (nonblocking), with Open MPI's coll signatures.
 */
#define MCA_COLL_STRATA_M mca_coll_base_module_t *module
#define MCA_COLL_STRATA_C struct ompi_communicator_t *comm
#define MCA_COLL_STRATA_R ompi_request_t **request
#define MCA_COLL_STRATA_DT struct ompi_datatype_t *
int mca_coll_strata_allgather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                              int rcount, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_M);
int mca_coll_strata_allgatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype,
                               void *rbuf, const int *rcounts, const int *displs,
                               MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_alltoall(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                             int rcount, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                             MCA_COLL_STRATA_M);
int mca_coll_strata_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                              MCA_COLL_STRATA_DT sdtype, void *rbuf, const int *rcounts,
                              const int *rdispls, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_M);
int mca_coll_strata_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                              MCA_COLL_STRATA_DT const *sdtypes, void *rbuf,
                              const int *rcounts, const int *rdispls,
                              MCA_COLL_STRATA_DT const *rdtypes, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_M);
int mca_coll_strata_bcast(void *buf, int count, MCA_COLL_STRATA_DT dtype, int root,
                          MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_exscan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                           struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_gather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                           int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                           MCA_COLL_STRATA_M);
int mca_coll_strata_gatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                            const int *rcounts, const int *displs, MCA_COLL_STRATA_DT rdtype,
                            int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                           struct ompi_op_t *op, int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                   MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                         MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_scan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                         struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_scatter(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                            int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                            MCA_COLL_STRATA_M);
int mca_coll_strata_scatterv(const void *sbuf, const int *scounts, const int *displs,
                             MCA_COLL_STRATA_DT sdtype, void *rbuf, int rcount,
                             MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                             MCA_COLL_STRATA_M);

int mca_coll_strata_reduce_local(const void *inbuf, void *inoutbuf, int count,
                                 MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op, MCA_COLL_STRATA_M);

int mca_coll_strata_iallgather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype,
                               void *rbuf, int rcount, MCA_COLL_STRATA_DT rdtype,
                               MCA_COLL_STRATA_C, MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_iallgatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype,
                                void *rbuf, const int *rcounts, const int *displs,
                                MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C, MCA_COLL_STRATA_R,
                                MCA_COLL_STRATA_M);
int mca_coll_strata_iallreduce(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                               struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_R,
                               MCA_COLL_STRATA_M);
int mca_coll_strata_ialltoall(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype,
                              void *rbuf, int rcount, MCA_COLL_STRATA_DT rdtype,
                              MCA_COLL_STRATA_C, MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                               MCA_COLL_STRATA_DT sdtype, void *rbuf, const int *rcounts,
                               const int *rdispls, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                               MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                               MCA_COLL_STRATA_DT const *sdtypes, void *rbuf,
                               const int *rcounts, const int *rdispls,
                               MCA_COLL_STRATA_DT const *rdtypes, MCA_COLL_STRATA_C,
                               MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_ibcast(void *buf, int count, MCA_COLL_STRATA_DT dtype, int root,
                           MCA_COLL_STRATA_C, MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_iexscan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                            struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_R,
                            MCA_COLL_STRATA_M);
int mca_coll_strata_igather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                            int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                            MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_igatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                             const int *rcounts, const int *displs, MCA_COLL_STRATA_DT rdtype,
                             int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_ireduce(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                            struct ompi_op_t *op, int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_R,
                            MCA_COLL_STRATA_M);
int mca_coll_strata_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                    MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                    MCA_COLL_STRATA_C, MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                          MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                          MCA_COLL_STRATA_C, MCA_COLL_STRATA_R,
                                          MCA_COLL_STRATA_M);
int mca_coll_strata_iscan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                          struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_R,
                          MCA_COLL_STRATA_M);
int mca_coll_strata_iscatter(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype,
                             void *rbuf, int rcount, MCA_COLL_STRATA_DT rdtype, int root,
                             MCA_COLL_STRATA_C, MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
int mca_coll_strata_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                              MCA_COLL_STRATA_DT sdtype, void *rbuf, int rcount,
                              MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_R, MCA_COLL_STRATA_M);
#undef MCA_COLL_STRATA_M
#undef MCA_COLL_STRATA_C
#undef MCA_COLL_STRATA_R
#undef MCA_COLL_STRATA_DT

#include "staging/coll_strata_stage.h"

END_C_DECLS

#endif /* MCA_COLL_STRATA_H */
