/*
 * coll/strata MPI_Bcast and MPI_Allgather: the copy-only collectives on the
 * allreduce's pipeline (engine/coll_strata_pipeline*.c), the same node areas, slots,
 * counters and failure rules, other phases (docs/design.md, "Bcast and
 * allgather"):
 *   MPI_Bcast      the root copies its chunk into the node's result area;
 *                  the nodes' leaders pass it on between nodes (a binomial
 *                  tree or a chain, logic/coll_strata_sched.h); every other rank
 *                  copies it out
 *   MPI_Allgather  every rank copies its block's chunk into its place of the
 *                  result area (node order); the leaders allgather the node
 *                  regions by a ring; every rank copies every block out
 * So a node's data crosses the network once per node, not once per rank.
 *
 * The pipeline moves bytes: MPI lets ranks describe one message with
 * different datatypes of the same signature, so every choice below is made
 * from what is the same on every rank (the settings, the bytes, the
 * topology), and each rank maps its own datatype onto the bytes: a
 * contiguous one in place, any other packed into (and unpacked from) a
 * host buffer of its own.
 *
 * Two paths, as for the reductions: native (device buffers on every rank,
 * the pipeline on the GPUs through CUDA IPC; the ranks agree first,
 * mca_coll_strata_native_agree) and host (host buffers, or the host copies
 * of staged device buffers).  Handed on to the module below strata: one
 * rank, calls below coll_strata_bcast_min / _allgather_min bytes, one rank
 * per node (nothing for the node phase to save), blocks over INT_MAX
 * bytes, an allgather of more ranks than a chunk has bytes, set-up
 * failures, and coll_strata_{bcast,allgather}_algorithm fallback.
 * Verbosity 20 names what ran.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include <limits.h>
#include <stdlib.h>

#include "ompi/constants.h"

/* ---- the decision: the same on every rank ------------------------------ */

/*
 * Why a copy collective of `bytes` per block goes to the module below
 * strata, or NULL with *d and *sched set for the pipeline.  `native`: the
 * device path asks (its size rule is allreduce_device_native_min's).
 */
static const char *mca_coll_strata_copy_decide(mca_coll_strata_module_t *module,
                                               struct ompi_communicator_t *comm,
                                               mca_coll_strata_pipe_kind_t kind, size_t bytes,
                                               bool native, mca_coll_strata_decision_t *d,
                                               mca_coll_strata_sched_alg_t *sched)
{
    const mca_coll_strata_settings_t *c = &module->settings;
    bool bcast = MCA_COLL_STRATA_PIPE_BCAST == kind;
    int setting = bcast ? c->bcast_algorithm : c->allgather_algorithm;
    size_t total = bytes * (bcast ? 1 : (size_t)ompi_comm_size(comm)), chunks, chunk;
    const char *why = NULL;

    if (MCA_COLL_STRATA_COPY_FALLBACK == setting) {
        return bcast ? "forced by coll_strata_bcast_algorithm"
                     : "forced by coll_strata_allgather_algorithm";
    }
    if (ompi_comm_size(comm) < 2) {
        return "one rank";
    }
    if (bytes > (size_t)INT_MAX) {
        return "a block of more than INT_MAX bytes";
    }
    if (!native && MCA_COLL_STRATA_COPY_AUTO == setting &&
        total < (bcast ? c->bcast_min : c->allgather_min)) {
        return bcast ? "below coll_strata_bcast_min" : "below coll_strata_allgather_min";
    }
    if (!mca_coll_strata_module_ready(module, comm, &why)) {
        return why;
    }
    if (MCA_COLL_STRATA_COPY_AUTO == setting && 1 == module->engine.topo.ppn_max) {
        return "one rank per node: no node phase to save";
    }
    /* the chunks of the pipeline that runs it: the device area's on the GPUs */
    chunk = native ? mca_coll_strata_device_chunk_bytes(c) : module->engine.shm.slot_bytes;
    if (!bcast && (size_t)ompi_comm_size(comm) > chunk) {
        return "more ranks than a chunk has bytes (coll_strata_segment_size)";
    }
    *d = (mca_coll_strata_decision_t){
        .algorithm = MCA_COLL_STRATA_ALG_LEADER,
        .inter = (module->engine.topo.nnodes > 1) ? MCA_COLL_STRATA_INTER_RING
                                                  : MCA_COLL_STRATA_INTER_NONE,
        .nslices = 1,
        .reason = (MCA_COLL_STRATA_COPY_AUTO == setting) ? "auto" : "forced",
    };
    chunks = (total + chunk - 1) / chunk;
    *sched = bcast ? mca_coll_strata_decide_bcast_sched(setting, module->engine.topo.nnodes, chunks)
                   : MCA_COLL_STRATA_SCHED_RING_AG;
    return NULL;
}

static const char *mca_coll_strata_copy_sched_name(mca_coll_strata_sched_alg_t sched,
                                                   const mca_coll_strata_decision_t *d)
{
    if (MCA_COLL_STRATA_INTER_NONE == d->inter) {
        return "none";
    }
    return (MCA_COLL_STRATA_SCHED_CHAIN == sched)      ? "chain"
           : (MCA_COLL_STRATA_SCHED_BINOMIAL == sched) ? "binomial"
                                                       : "ring";
}

/* ---- each rank's datatype onto the bytes ------------------------------- */

/* count x dtype at buf as bytes: where they start when the layout is
 * contiguous (else NULL), and how many.  Two elements in a row without a
 * gap between or inside them make any count contiguous (so the check
 * never needs a count past INT_MAX). */
static char *mca_coll_strata_copy_bytes(void *buf, size_t count, struct ompi_datatype_t *dtype,
                                        size_t *bytes)
{
    ptrdiff_t true_lb, true_extent;
    size_t size;

    ompi_datatype_type_size(dtype, &size);
    *bytes = count * size;
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, (count < 2) ? (int)count : 2)) {
        return NULL;
    }
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    return (char *)buf + true_lb;
}

static int mca_coll_strata_copy_pack(const void *buf, int count, struct ompi_datatype_t *dtype,
                                     char *packed, size_t bytes)
{
    int position = 0;

    return PMPI_Pack(buf, count, dtype, packed, (int)bytes, &position, MPI_COMM_SELF);
}

static int mca_coll_strata_copy_unpack(const char *packed, size_t bytes, void *buf, int count,
                                       struct ompi_datatype_t *dtype)
{
    int position = 0;

    return PMPI_Unpack(packed, (int)bytes, &position, buf, count, dtype, MPI_COMM_SELF);
}

/* The pipeline for `a` on the host node area, saying so at verbosity 20. */
static int mca_coll_strata_copy_run(mca_coll_strata_module_t *module,
                                    struct ompi_communicator_t *comm,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *d, const char *kinds,
                                    bool packed)
{
    MCA_COLL_STRATA_VERBOSE(20, "%s %s %zu bytes%s %s: pipeline, inter-node %s, %d node(s)%s (%s)",
                            a->coll, comm->c_name, a->count,
                            (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind) ? " per rank" : "", kinds,
                            mca_coll_strata_copy_sched_name(a->sched_alg, d),
                            module->engine.topo.nnodes, packed ? ", packed" : "", d->reason);
    return mca_coll_strata_pipeline_run(&module->engine, a, d, &module->engine.node_host);
}

/* A packed image's memory (coll_strata_test_fail=pack: none), or NULL
 * with the reason said. */
static char *mca_coll_strata_copy_alloc(const char *coll, size_t bytes)
{
    char *p = mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_PACK) ? NULL : malloc(bytes);

    if (NULL == p) {
        opal_output(0,
                    "coll:strata: %s: no memory for a packed image of %zu bytes (a "
                    "non-contiguous datatype): this call fails on this rank (MPI_ERR_NO_MEM)",
                    coll, bytes);
    }
    return p;
}

/* ---- MPI_Bcast ---------------------------------------------------------- */

static void mca_coll_strata_bcast_args(mca_coll_strata_pipeline_args_t *a, char *data, size_t bytes,
                                       int root, struct ompi_communicator_t *comm,
                                       mca_coll_strata_sched_alg_t sched)
{
    bool at_root = ompi_comm_rank(comm) == root;

    *a = (mca_coll_strata_pipeline_args_t){
        .kind = MCA_COLL_STRATA_PIPE_BCAST,
        .sbuf = data,
        .out = data,
        .count = bytes,
        .out_lo = 0,
        .out_hi = at_root ? 0 : bytes,
        .dtype = MPI_BYTE,
        .root = root,
        .sched_alg = sched,
        .comm = comm,
        .coll = "MPI_Bcast",
        .partial = true,
    };
}

int mca_coll_strata_bcast_host(mca_coll_strata_module_t *module, void *buf, int count,
                               struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm)
{
    mca_coll_strata_pipeline_args_t a;
    mca_coll_strata_decision_t d;
    mca_coll_strata_sched_alg_t sched;
    bool at_root = ompi_comm_rank(comm) == root;
    size_t bytes;
    char *data = mca_coll_strata_copy_bytes(buf, (size_t)count, dtype, &bytes), *packed = NULL;
    const char *why = (0 == bytes)
                          ? "no data"
                          : mca_coll_strata_copy_decide(module, comm, MCA_COLL_STRATA_PIPE_BCAST,
                                                        bytes, false, &d, &sched);
    int rc = OMPI_SUCCESS;

    if (NULL != why) {
        MCA_COLL_STRATA_VERBOSE(20, "MPI_Bcast %s %zu bytes: fallback (%s)", comm->c_name, bytes,
                                why);
        return MCA_COLL_STRATA_FALLBACK(module, bcast, comm, buf, count, dtype, root);
    }
    if (NULL == data) {
        /* Not contiguous here: the bytes through a packed image.  Without
         * memory for it this rank still takes its part (the others count
         * on it): no input at the root (every rank fails), no output
         * elsewhere. */
        data = packed = mca_coll_strata_copy_alloc("MPI_Bcast", bytes);
        if (NULL != packed && at_root) {
            rc = mca_coll_strata_copy_pack(buf, count, dtype, packed, bytes);
        }
    }
    mca_coll_strata_bcast_args(&a, data, bytes, root, comm, sched);
    if (NULL == data || OMPI_SUCCESS != rc) {
        a.sbuf = NULL;
        a.out_hi = 0;
        rc = (OMPI_SUCCESS != rc) ? rc : MPI_ERR_NO_MEM;
    }
    {
        int run_rc = mca_coll_strata_copy_run(module, comm, &a, &d, "host", NULL != packed);

        rc = (OMPI_SUCCESS != rc) ? rc : run_rc;
    }
    if (NULL != packed && OMPI_SUCCESS == rc && !at_root) {
        rc = mca_coll_strata_copy_unpack(packed, bytes, buf, count, dtype);
    }
    free(packed);
    return rc;
}

/* ---- MPI_Allgather ------------------------------------------------------ */

static void mca_coll_strata_allgather_args(mca_coll_strata_pipeline_args_t *a, const char *in,
                                           char *out, size_t bytes,
                                           struct ompi_communicator_t *comm)
{
    *a = (mca_coll_strata_pipeline_args_t){
        .kind = MCA_COLL_STRATA_PIPE_ALLGATHER,
        .sbuf = in,
        .out = out,
        .count = bytes,
        .out_lo = 0,
        .out_hi = bytes,
        .dtype = MPI_BYTE,
        .sched_alg = MCA_COLL_STRATA_SCHED_RING_AG,
        .comm = comm,
        .coll = "MPI_Allgather",
        .partial = true,
    };
}

/* This rank's block (sbuf, or its place in rbuf for MPI_IN_PLACE) and the
 * gathered vector as bytes: in place where contiguous, else through
 * packed images (*in_packed, *out_packed: malloc'ed, the input packed). */
static int mca_coll_strata_allgather_sides(const void *sbuf, int scount,
                                           struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                           struct ompi_datatype_t *rdtype, int me, int n,
                                           size_t bytes, const char **in, char **out,
                                           char **in_packed, char **out_packed)
{
    ptrdiff_t lb, rextent;
    size_t sbytes;

    ompi_datatype_get_extent(rdtype, &lb, &rextent);
    *in = NULL;
    *in_packed = *out_packed = NULL;
    *out = mca_coll_strata_copy_bytes(rbuf, (size_t)rcount * (size_t)n, rdtype, &sbytes);
    if (NULL == *out) {
        *out = *out_packed = mca_coll_strata_copy_alloc("MPI_Allgather", bytes * (size_t)n);
        if (NULL == *out) {
            return MPI_ERR_NO_MEM;
        }
    }
    if (MPI_IN_PLACE == sbuf) {
        /* this rank's block of rbuf, rcount x rdtype */
        sbuf = (const char *)rbuf + (ptrdiff_t)me * rcount * rextent;
        scount = rcount;
        sdtype = rdtype;
    }
    *in = mca_coll_strata_copy_bytes((void *)sbuf, (size_t)scount, sdtype, &sbytes);
    if (NULL == *in) {
        *in = *in_packed = mca_coll_strata_copy_alloc("MPI_Allgather", bytes);
        if (NULL == *in) {
            return MPI_ERR_NO_MEM;
        }
        return mca_coll_strata_copy_pack(sbuf, scount, sdtype, *in_packed, bytes);
    }
    return OMPI_SUCCESS;
}

int mca_coll_strata_allgather_host(mca_coll_strata_module_t *module, const void *sbuf, int scount,
                                   struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm)
{
    mca_coll_strata_pipeline_args_t a;
    mca_coll_strata_decision_t d;
    mca_coll_strata_sched_alg_t sched;
    int me = ompi_comm_rank(comm), n = ompi_comm_size(comm), rc, run_rc;
    char *out = NULL, *in_packed = NULL, *out_packed = NULL;
    const char *in = NULL, *why;
    ptrdiff_t lb, rextent;
    size_t bytes;

    /* the receive side's bytes per block: the same on every rank */
    ompi_datatype_type_size(rdtype, &bytes);
    bytes *= (size_t)rcount;
    why = (0 == bytes) ? "no data"
                       : mca_coll_strata_copy_decide(module, comm, MCA_COLL_STRATA_PIPE_ALLGATHER,
                                                     bytes, false, &d, &sched);
    if (NULL != why) {
        MCA_COLL_STRATA_VERBOSE(20, "MPI_Allgather %s %zu bytes per rank: fallback (%s)",
                                comm->c_name, bytes, why);
        return MCA_COLL_STRATA_FALLBACK(module, allgather, comm, sbuf, scount, sdtype, rbuf, rcount,
                                        rdtype);
    }
    rc = mca_coll_strata_allgather_sides(sbuf, scount, sdtype, rbuf, rcount, rdtype, me, n, bytes,
                                         &in, &out, &in_packed, &out_packed);
    mca_coll_strata_allgather_args(&a, in, out, bytes, comm);
    if (OMPI_SUCCESS != rc) {
        /* still this rank's part (see mca_coll_strata_bcast_host): no input
         * (every rank fails), no output */
        a.sbuf = NULL;
        if (NULL == out) {
            a.out = NULL;
            a.out_hi = 0;
        }
    }
    run_rc = mca_coll_strata_copy_run(module, comm, &a, &d, "host",
                                      NULL != in_packed || NULL != out_packed);
    rc = (OMPI_SUCCESS != rc) ? rc : run_rc;
    if (NULL != out_packed && OMPI_SUCCESS == rc) {
        ompi_datatype_get_extent(rdtype, &lb, &rextent);
        for (int q = 0; q < n && OMPI_SUCCESS == rc; ++q) {
            rc = mca_coll_strata_copy_unpack(out_packed + (size_t)q * bytes, bytes,
                                             (char *)rbuf + (ptrdiff_t)q * rcount * rextent, rcount,
                                             rdtype);
        }
    }
    free(in_packed);
    free(out_packed);
    return rc;
}

/* ---- the nonblocking host path: the same, started in MPI_I* ----------- */

/* A nonblocking call's packed image and where it unpacks to, once the call
 * is done: every block of an allgather (n of them), a bcast's one buffer
 * (n = 1; not at the root). */
typedef struct mca_coll_strata_copy_unpack_t {
    char *packed, *in_packed;
    void *buf;
    int count, n;
    ptrdiff_t stride;
    size_t bytes;
    bool unpack;
    int rc; /* this rank's own failure at the start (no memory, packing) */
    struct ompi_datatype_t *dtype;
} mca_coll_strata_copy_unpack_t;

static int mca_coll_strata_copy_finish(void *arg, int rc)
{
    mca_coll_strata_copy_unpack_t *u = arg;

    rc = (OMPI_SUCCESS != rc) ? rc : u->rc;
    for (int q = 0; u->unpack && NULL != u->packed && OMPI_SUCCESS == rc && q < u->n; ++q) {
        rc = mca_coll_strata_copy_unpack(u->packed + (size_t)q * u->bytes, u->bytes,
                                         (char *)u->buf + (ptrdiff_t)q * u->stride, u->count,
                                         u->dtype);
    }
    free(u->packed);
    free(u->in_packed);
    free(u);
    return rc;
}

/* The decision for a nonblocking copy, or false (said at verbosity 20):
 * the communicator set up by an earlier blocking call, the same rules as
 * the blocking form's (never the buffers: the same on every rank). */
static bool mca_coll_strata_copy_idecide(mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_strata_pipe_kind_t kind, const char *coll,
                                         size_t bytes, mca_coll_strata_decision_t *d,
                                         mca_coll_strata_sched_alg_t *sched)
{
    const char *why = !mca_coll_strata_nonblocking_ready(module)
                          ? "not set up yet: a blocking collective sets the communicator up"
                      : (0 == bytes)
                          ? "no data"
                          : mca_coll_strata_copy_decide(module, comm, kind, bytes, false, d, sched);

    if (NULL != why) {
        MCA_COLL_STRATA_VERBOSE(20, "%s %s %zu bytes%s: module below strata (%s)", coll,
                                comm->c_name, bytes,
                                (MCA_COLL_STRATA_PIPE_ALLGATHER == kind) ? " per rank" : "", why);
        return false;
    }
    return true;
}

/* Start the call on the pipeline with its unpacking for the end (u, NULL
 * when nothing is packed; freed here where the start fails). */
static int mca_coll_strata_copy_istart(mca_coll_strata_module_t *module,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_strata_stage_t *st,
                                       const mca_coll_strata_pipeline_args_t *a,
                                       const mca_coll_strata_decision_t *d,
                                       mca_coll_strata_copy_unpack_t *u, ompi_request_t **request)
{
    MCA_COLL_STRATA_VERBOSE(20, "%s %s %zu bytes%s %s: pipeline, inter-node %s, %d node(s)%s (%s)",
                            a->coll, comm->c_name, a->count,
                            (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind) ? " per rank" : "",
                            (NULL != st) ? mca_coll_strata_bufs_kinds(&st->bufs) : "host",
                            mca_coll_strata_copy_sched_name(a->sched_alg, d),
                            module->engine.topo.nnodes, (NULL != u) ? ", packed" : "", d->reason);
    {
        int rc = mca_coll_strata_pipeline_istart(
            module, comm, st, a, d, (NULL != u) ? mca_coll_strata_copy_finish : NULL, u, request);

        if (OMPI_SUCCESS != rc && NULL != u) {
            u->unpack = false;
            (void)mca_coll_strata_copy_finish(u, rc);
        }
        return rc;
    }
}

int mca_coll_strata_ibcast_host(mca_coll_strata_module_t *module, mca_coll_strata_stage_t *st,
                                void *buf, int count, struct ompi_datatype_t *dtype, int root,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                bool *ran)
{
    mca_coll_strata_pipeline_args_t a;
    mca_coll_strata_decision_t d;
    mca_coll_strata_sched_alg_t sched;
    mca_coll_strata_copy_unpack_t *u = NULL;
    bool at_root = ompi_comm_rank(comm) == root;
    size_t bytes;
    char *data = mca_coll_strata_copy_bytes(buf, (size_t)count, dtype, &bytes);
    int rc = OMPI_SUCCESS;

    *ran = false;
    if (!mca_coll_strata_copy_idecide(module, comm, MCA_COLL_STRATA_PIPE_BCAST, "MPI_Ibcast", bytes,
                                      &d, &sched)) {
        return OMPI_SUCCESS;
    }
    *ran = true;
    if (NULL == data) {
        /* not contiguous here: through a packed image, unpacked at the end
         * (without memory for it this rank still takes its part, and the
         * request says so: as the blocking form, mca_coll_strata_bcast_host) */
        u = calloc(1, sizeof(*u));
        if (NULL == u) {
            return OMPI_ERR_OUT_OF_RESOURCE; /* nothing started yet */
        }
        data = mca_coll_strata_copy_alloc("MPI_Ibcast", bytes);
        *u = (mca_coll_strata_copy_unpack_t){.packed = data,
                                             .buf = buf,
                                             .count = count,
                                             .n = 1,
                                             .bytes = bytes,
                                             .unpack = !at_root,
                                             .dtype = dtype};
        if (NULL == data) {
            u->rc = MPI_ERR_NO_MEM;
        } else if (at_root) {
            u->rc = rc = mca_coll_strata_copy_pack(buf, count, dtype, data, bytes);
        }
    }
    mca_coll_strata_bcast_args(&a, data, bytes, root, comm, sched);
    a.coll = "MPI_Ibcast";
    if (NULL == data || OMPI_SUCCESS != rc) {
        a.sbuf = NULL;
        a.out_hi = 0;
    }
    return mca_coll_strata_copy_istart(module, comm, st, &a, &d, u, request);
}

int mca_coll_strata_iallgather_host(mca_coll_strata_module_t *module, mca_coll_strata_stage_t *st,
                                    const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                    void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    bool *ran)
{
    mca_coll_strata_pipeline_args_t a;
    mca_coll_strata_decision_t d;
    mca_coll_strata_sched_alg_t sched;
    mca_coll_strata_copy_unpack_t *u = NULL;
    int me = ompi_comm_rank(comm), n = ompi_comm_size(comm), rc;
    char *out = NULL, *in_packed = NULL, *out_packed = NULL;
    const char *in = NULL;
    ptrdiff_t lb, rextent;
    size_t bytes;

    *ran = false;
    ompi_datatype_type_size(rdtype, &bytes);
    bytes *= (size_t)rcount;
    if (!mca_coll_strata_copy_idecide(module, comm, MCA_COLL_STRATA_PIPE_ALLGATHER,
                                      "MPI_Iallgather", bytes, &d, &sched)) {
        return OMPI_SUCCESS;
    }
    *ran = true;
    rc = mca_coll_strata_allgather_sides(sbuf, scount, sdtype, rbuf, rcount, rdtype, me, n, bytes,
                                         &in, &out, &in_packed, &out_packed);
    if (NULL != in_packed || NULL != out_packed || OMPI_SUCCESS != rc) {
        ompi_datatype_get_extent(rdtype, &lb, &rextent);
        u = calloc(1, sizeof(*u));
        if (NULL == u) {
            free(in_packed);
            free(out_packed);
            return OMPI_ERR_OUT_OF_RESOURCE; /* nothing started yet */
        } else {
            *u = (mca_coll_strata_copy_unpack_t){.packed = out_packed,
                                                 .in_packed = in_packed,
                                                 .buf = rbuf,
                                                 .count = rcount,
                                                 .n = n,
                                                 .stride = (ptrdiff_t)rcount * rextent,
                                                 .bytes = bytes,
                                                 .unpack = NULL != out_packed,
                                                 .rc = rc,
                                                 .dtype = rdtype};
        }
    }
    mca_coll_strata_allgather_args(&a, in, out, bytes, comm);
    a.coll = "MPI_Iallgather";
    if (OMPI_SUCCESS != rc) {
        /* still this rank's part (see mca_coll_strata_allgather_host) */
        a.sbuf = NULL;
        if (NULL == out) {
            a.out = NULL;
            a.out_hi = 0;
        }
    }
    return mca_coll_strata_copy_istart(module, comm, st, &a, &d, u, request);
}

/* ---- the native path ---------------------------------------------------- */

/* Is count x dtype at buf device memory this rank can hand the GPUs whole:
 * contiguous (the device path does not pack), and where the device node
 * area runs?  `k`: buf's classification at the call's entry (a datatype's
 * lower bound moves the start within the same allocation).  *data: where
 * it starts. */
static bool mca_coll_strata_copy_device(const mca_coll_strata_buf_kind_t *k, void *buf,
                                        size_t count, struct ompi_datatype_t *dtype, char **data)
{
    size_t bytes;

    *data = mca_coll_strata_copy_bytes(buf, count, dtype, &bytes);
    return NULL != *data && STRATA_MEM_DEVICE == k->kind;
}

/* The rank-independent half of the native choice: *d and *sched, or false. */
static bool mca_coll_strata_copy_native_applies(mca_coll_strata_module_t *module,
                                                struct ompi_communicator_t *comm,
                                                mca_coll_strata_pipe_kind_t kind, size_t bytes,
                                                mca_coll_strata_decision_t *d,
                                                mca_coll_strata_sched_alg_t *sched)
{
    const mca_coll_strata_settings_t *c = &module->settings;
    size_t total = bytes *
                   ((MCA_COLL_STRATA_PIPE_BCAST == kind) ? 1 : (size_t)ompi_comm_size(comm));

    /* The size rule first: a call that cannot run natively never sets the
     * communicator up.  The decision sets it up (every rank: same inputs),
     * after which whether some rank has a driver is known. */
    if (0 == bytes ||
        !mca_coll_strata_decide_try_native(c->device_algorithm, c->device_native_min, total)) {
        return false;
    }
    return NULL == mca_coll_strata_copy_decide(module, comm, kind, bytes, true, d, sched) &&
           module->engine.any_driver &&
           MCA_COLL_STRATA_SETUP_FAILED != module->engine.device_setup &&
           1 < module->engine.topo.ppn_max;
}

static int mca_coll_strata_copy_native_run(mca_coll_strata_module_t *module,
                                           struct ompi_communicator_t *comm,
                                           const mca_coll_strata_pipeline_args_t *a,
                                           const mca_coll_strata_decision_t *d, int mine,
                                           int ordinal, bool *ran)
{
    bool go;
    int rc = mca_coll_strata_native_agree(module, comm, mine, ordinal, &go);

    if (OMPI_SUCCESS != rc || !go) {
        return rc;
    }
    MCA_COLL_STRATA_VERBOSE(20,
                            "%s %s %zu bytes%s device->device: native, inter-node %s%s, "
                            "%d node(s) (%s)",
                            a->coll, comm->c_name, a->count,
                            (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind) ? " per rank" : "",
                            mca_coll_strata_copy_sched_name(a->sched_alg, d),
                            mca_coll_strata_native_network(module, d), module->engine.topo.nnodes,
                            d->reason);
    *ran = true;
    return mca_coll_strata_node_device_run(&module->engine, a, d);
}

int mca_coll_strata_bcast_native(mca_coll_strata_module_t *module,
                                 const mca_coll_strata_bufs_t *bufs, void *buf, int count,
                                 struct ompi_datatype_t *dtype, int root,
                                 struct ompi_communicator_t *comm, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;
    mca_coll_strata_decision_t d;
    mca_coll_strata_sched_alg_t sched;
    const mca_coll_strata_buf_kind_t *k;
    int ordinal = -1, mine;
    size_t bytes;
    char *data;

    *ran = false;
    ompi_datatype_type_size(dtype, &bytes);
    bytes *= (size_t)count;
    if (!mca_coll_strata_copy_native_applies(module, comm, MCA_COLL_STRATA_PIPE_BCAST, bytes, &d,
                                             &sched)) {
        return OMPI_SUCCESS;
    }
    k = &bufs->buf[MCA_COLL_STRATA_STAGE_RECV];
    ordinal = k->ordinal;
    mine = mca_coll_strata_copy_device(k, buf, (size_t)count, dtype, &data) &&
           mca_coll_strata_node_device_reaches(&module->engine, comm, ordinal,
                                               mca_coll_strata_native_primary(k, ordinal));
    mca_coll_strata_bcast_args(&a, data, bytes, root, comm, sched);
    return mca_coll_strata_copy_native_run(module, comm, &a, &d, mine, ordinal, ran);
}

int mca_coll_strata_allgather_native(mca_coll_strata_module_t *module,
                                     const mca_coll_strata_bufs_t *bufs, const void *sbuf,
                                     int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                     int rcount, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, bool *ran)
{
    mca_coll_strata_pipeline_args_t a;
    mca_coll_strata_decision_t d;
    mca_coll_strata_sched_alg_t sched;
    const mca_coll_strata_buf_kind_t *ik = mca_coll_strata_bufs_input(bufs);
    const mca_coll_strata_buf_kind_t *ok = &bufs->buf[MCA_COLL_STRATA_STAGE_RECV];
    int ordinal = ok->ordinal, mine, me = ompi_comm_rank(comm);
    ptrdiff_t lb, rextent;
    size_t bytes;
    char *in, *out;

    *ran = false;
    ompi_datatype_type_size(rdtype, &bytes);
    bytes *= (size_t)rcount;
    if (!mca_coll_strata_copy_native_applies(module, comm, MCA_COLL_STRATA_PIPE_ALLGATHER, bytes,
                                             &d, &sched)) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_get_extent(rdtype, &lb, &rextent);
    if (MPI_IN_PLACE == sbuf) {
        sbuf = (const char *)rbuf + (ptrdiff_t)me * rcount * rextent;
        scount = rcount;
        sdtype = rdtype;
    }
    /* in place: the input is the rank's block of rbuf */
    mine = mca_coll_strata_copy_device(ok, rbuf, (size_t)rcount * (size_t)ompi_comm_size(comm),
                                       rdtype, &out) &&
           mca_coll_strata_copy_device(ik, (void *)sbuf, (size_t)scount, sdtype, &in) &&
           ik->ordinal == ordinal &&
           mca_coll_strata_node_device_reaches(&module->engine, comm, ordinal,
                                               mca_coll_strata_native_primary(ik, ordinal) &&
                                                   mca_coll_strata_native_primary(ok, ordinal));
    mca_coll_strata_allgather_args(&a, mine ? in : NULL, mine ? out : NULL, bytes, comm);
    return mca_coll_strata_copy_native_run(module, comm, &a, &d, mine, ordinal, ran);
}
