/*
 * coll/strata: topology-aware collectives for Open MPI 4.1 and 5.0 (the
 * differences: coll_strata_ompi.h).
 *
 * Declares the component and the per-communicator module.  The component is
 * off by default (priority 0 makes comm_query decline), so an installed
 * Strata changes nothing until a job asks for it with
 * --mca coll_strata_priority <n>.
 *
 * Once on, strata owns every collective that moves data (blocking and
 * nonblocking; barriers stay with the module below it).  Each entry asks
 * the memory kind of its buffers first: host and managed buffers go where
 * they went before (strata's own algorithms, or the saved module below
 * strata), device buffers run on the GPUs where every rank can, or are
 * staged through pinned host memory around that same path, so a device
 * pointer never reaches code that reads memory with the CPU (Debian's Open
 * MPI has no CUDA support).
 *
 * The component is built of rooms, a folder each, each with one interface
 * header (docs/design.md, "Where things are in coll/strata"):
 *   ./        the component, the module and what a communicator runs with:
 *             coll_strata_component.c (MCA parameters), _module.c
 *             (comm_query, module_enable, the fallback table, the lazy
 *             set-up), _settings.c (agreed settings), _network.c (the cost
 *             model's network figures); coll_strata_ompi.h, the one adapter
 *             to Open MPI 4.1 and 5.0
 *   colls/    the collectives' entry points and each call's decision:
 *             coll_strata_colls.h
 *   staging/  any collective on device buffers through pinned host memory,
 *             and the staged nonblocking requests: coll_strata_stage.h
 *   engine/   the pipeline, its node areas (host, device), the exchange
 *             between nodes, the shared-memory segment, the topology:
 *             coll_strata_engine.h
 *   logic/    pure logic, no Open MPI: schedules, decision, cost model:
 *             coll_strata_logic.h
 *
 * Who includes what: this header includes the interfaces of engine/ and
 * logic/, whose state the module holds; no room's header includes this one
 * (they name the module as struct mca_coll_strata_module_t), so no room's
 * header includes back a header that includes it.  The rooms' sources
 * include this header for the module and the component, their own room's
 * headers, and the interfaces of the rooms they call.
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

#include "coll_strata_ompi.h"
#include "engine/coll_strata_engine.h"
#include "logic/coll_strata_logic.h"

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
    /* the same on the GPUs (the native device path's chunks, in device
     * memory: HBM wants far larger pieces than host shared memory) */
    size_t device_segment_size;
    /* chunks in flight per communicator (shared-memory slots) */
    int shm_slots;
    /* bytes of pinned host memory a communicator keeps for staging device
     * buffers; larger reductions and broadcasts run in pieces */
    size_t stage_max;
    /* device allreduce: MCA_COLL_STRATA_DEVICE_ALG_*, and the bytes from
     * which `auto` runs it on the GPUs */
    int device_algorithm;
    size_t device_native_min;
    /* 1: native device calls queued whole on the GPU; 0: the host drives */
    int device_queue;
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

/* Bytes of one chunk of the native device path: device_segment_size
 * rounded up to 64, the device node area's slot (known to the decisions
 * before the area is set up). */
static inline size_t mca_coll_strata_device_chunk_bytes(const mca_coll_strata_settings_t *s)
{
    return (s->device_segment_size + 63) & ~(size_t)63;
}

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

typedef enum {
    MCA_COLL_STRATA_SETUP_NONE,   /* not tried yet */
    MCA_COLL_STRATA_SETUP_BUSY,   /* inside setup: calls go to the fallback */
    MCA_COLL_STRATA_SETUP_READY,
    MCA_COLL_STRATA_SETUP_FAILED  /* agreed across the communicator */
} mca_coll_strata_setup_state_t;

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
    /* device data in the local ranks' device scratch (engine/coll_strata_node_device.c) */
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

END_C_DECLS

#endif /* MCA_COLL_STRATA_H */
