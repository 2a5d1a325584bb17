/*
 * coll/strata: topology-aware collectives for Open MPI 4.1.
 *
 * Declares the component, the per-communicator module and every entry point.
 * The component is off by default (priority 0 makes comm_query decline), so an
 * installed Strata changes nothing until a job asks for it with
 * --mca coll_strata_priority <n>.
 *
 * Where things are:
 *   coll_strata_component.c   MCA parameters
 *   coll_strata_module.c      comm_query / module_enable / saved fallback
 *   coll_strata_topo.c        nodes, rails and sub-communicators (lazy)
 *   coll_strata_shm.c         the per-node shared-memory segment
 *   coll_strata_decision.c    which algorithm runs for a call (pure logic)
 *   coll_strata_allreduce.c   MPI_Allreduce entry: checks, decision, fallback
 *   coll_strata_pipeline.c    reduce-scatter(node) -> allreduce(rail) ->
 *                             allgather(node), pipelined by chunks
 *   coll_strata_ring.c        non-blocking ring allreduce on a rail
 *   coll_strata_mem_host.c    copy/reduce primitives for host buffers
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

#include "coll_strata_decision.h"

BEGIN_C_DECLS

typedef struct mca_coll_strata_component_t {
    mca_coll_base_component_2_0_0_t super;
    /* MCA parameters (coll_strata_*) */
    int priority;
    int verbose;
    /* decision knobs: algorithm overrides and thresholds */
    mca_coll_strata_decision_params_t decision;
    /* bytes of one pipeline chunk (the whole vector moves chunk by chunk) */
    size_t segment_size;
    /* chunks in flight per communicator (shared-memory slots) */
    int shm_slots;
    /* directory of the shared-memory files (a tmpfs) */
    char *shm_dir;
    /* opal_output stream the verbose messages go to */
    int output;
} mca_coll_strata_component_t;

/*
 * The functions of the module that ran before strata was stacked on top of a
 * communicator: strata hands them every call it does not handle itself.
 */
typedef struct mca_coll_strata_fallback_t {
    mca_coll_base_module_allreduce_fn_t allreduce;
    mca_coll_base_module_t *allreduce_module;
} mca_coll_strata_fallback_t;

/*
 * Copy and reduce primitives of one memory kind.  The pipeline is written
 * once against this table; host buffers use memcpy and Open MPI's op
 * functions, device buffers will use the GPU's.
 */
typedef struct mca_coll_strata_mem_ops_t {
    const char *name;
    void (*copy)(void *dst, const void *src, size_t bytes);
    /* dst = a op b, count elements of dtype */
    void (*reduce2)(struct ompi_op_t *op, const void *a, const void *b, void *dst,
                    size_t count, struct ompi_datatype_t *dtype);
    /* dst = src op dst */
    void (*reduce)(struct ompi_op_t *op, const void *src, void *dst, size_t count,
                   struct ompi_datatype_t *dtype);
} mca_coll_strata_mem_ops_t;

extern const mca_coll_strata_mem_ops_t mca_coll_strata_mem_host_ops;

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
} mca_coll_strata_topo_t;

typedef enum {
    MCA_COLL_STRATA_SETUP_NONE,   /* not tried yet */
    MCA_COLL_STRATA_SETUP_BUSY,   /* inside setup: calls go to the fallback */
    MCA_COLL_STRATA_SETUP_READY,
    MCA_COLL_STRATA_SETUP_FAILED  /* agreed across the communicator */
} mca_coll_strata_setup_state_t;

typedef struct mca_coll_strata_module_t {
    mca_coll_base_module_t super;
    mca_coll_strata_fallback_t fallback;
    mca_coll_strata_setup_state_t setup;
    mca_coll_strata_topo_t topo;
    mca_coll_strata_shm_t shm;
    /* chunks this communicator has pushed through the segment, all calls;
     * identical on every local rank since collectives are ordered */
    uint64_t chunk_serial;
    /* per slot: the inter-node phase of the chunk in it, and the ring's
     * receive space */
    struct mca_coll_strata_ring_t *rings;
    char *scratch;
    size_t scratch_slot_bytes;
} mca_coll_strata_module_t;

OBJ_CLASS_DECLARATION(mca_coll_strata_module_t);

OMPI_MODULE_DECLSPEC extern mca_coll_strata_component_t mca_coll_strata_component;

#define MCA_COLL_STRATA_VERBOSE(_level, ...) \
    opal_output_verbose((_level), mca_coll_strata_component.output, "coll:strata: " __VA_ARGS__)

/* coll_strata_module.c */
int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority);

/* coll_strata_topo.c */
int mca_coll_strata_topo_setup(mca_coll_strata_module_t *module,
                               struct ompi_communicator_t *comm);
void mca_coll_strata_topo_release(mca_coll_strata_module_t *module);

/* coll_strata_shm.c */
int mca_coll_strata_shm_attach(mca_coll_strata_shm_t *shm,
                               struct ompi_communicator_t *node_comm, size_t slot_bytes,
                               int nslots, const char *dir, char *why, size_t why_len);
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

/* coll_strata_mem_host.c: a printable name for an op (predefined or "user op") */
const char *mca_coll_strata_op_name(struct ompi_op_t *op);

/* coll_strata_allreduce.c */
int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module);

/* coll_strata_pipeline.c */
int mca_coll_strata_pipeline_allreduce(mca_coll_strata_module_t *module, const void *sbuf,
                                       void *rbuf, size_t count,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       const mca_coll_strata_decision_t *decision,
                                       const mca_coll_strata_mem_ops_t *mem);

/* coll_strata_ring.c: one ring allreduce of `count` elements at `buf`, in
 * place, advanced by mca_coll_strata_ring_progress until it returns done. */
typedef struct mca_coll_strata_ring_t {
    struct ompi_communicator_t *comm;
    char *buf;
    char *scratch;
    size_t count;
    ptrdiff_t extent;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    const mca_coll_strata_mem_ops_t *mem;
    int tag;
    int step;    /* 0 .. 2(size-1); size-1 first steps reduce-scatter */
    bool posted; /* the requests of `step` are in flight */
    bool done;   /* this chunk's inter-node phase is complete */
    ompi_request_t *reqs[2];
} mca_coll_strata_ring_t;

int mca_coll_strata_ring_start(mca_coll_strata_ring_t *ring);
int mca_coll_strata_ring_progress(mca_coll_strata_ring_t *ring, bool *done);

END_C_DECLS

#endif /* MCA_COLL_STRATA_H */
