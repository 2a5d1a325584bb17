/*
 * coll/strata pipelined hierarchical allreduce (docs/design.md, "The allreduce"):
 * a call's arguments, the nodes' parts of its result, the choice of its
 * driver, and the pipeline's resources.  The stages themselves are
 * coll_strata_pipeline_steps.c; the drivers that run them are
 * coll_strata_pipeline_host.c (the host drives every chunk) and
 * coll_strata_pipeline_queued.c (the node area queues the whole call).
 *
 * The vector moves through the node's shared-memory segment chunk by chunk.
 * For every chunk:
 *   copy in     each local rank copies its chunk into its input area
 *   reduce      slice owner j (local rank j < nslices) reads slice j of every
 *               input area and writes the node's partial result to the
 *               result area: the intra-node reduce-scatter
 *   inter-node  owner j allreduces its slice with owner j of every other
 *               node on rail j (strata's ring, recursive doubling or
 *               halving-doubling: coll_strata_xchg.c; or the rail's own
 *               allreduce)
 *   publish     owner j marks its slice final
 *   copy out    every local rank copies its part of the chunk's result out:
 *               the whole chunk for MPI_Allreduce (the intra-node allgather),
 *               the part of the rank's block or the root's vector for the
 *               other reductions (colls/coll_strata_reductions.c)
 * The leader path is the same schedule with one slice.  The replicated
 * (small-message) path gives every owner the whole chunk instead of a slice:
 * each reduces all inputs straight into its own receive buffer and
 * allreduces it on its own rail, so it needs nobody's result; only ranks
 * without a rail (uneven nodes) copy local rank 0's result out of the
 * result area.
 *
 * There are shm->nslots slots, so up to that many chunks are in flight: a
 * rank copies chunk c+1 in and reduces it while chunk c's exchange is on the
 * network.  Progress is published through monotonic per-rank counters that
 * count chunks over the communicator's lifetime (the engine's chunk_serial), so
 * consecutive calls with different sizes or algorithms need no reset and no
 * barrier between them.  Slot reuse rules (g = global chunk serial):
 *   input area of g   free once every rank's `reduced` >= g - nslots + 1
 *   result area of g  free once every rank's `copied_out` >= g - nslots + 1
 * A rank that owns no slice of a chunk reads no inputs, so it advances its
 * `reduced` counter when it copies in; then the rule holds whichever ranks
 * owned slices in earlier calls.
 *
 * Failures never stop the flags: a rank whose copy or reduction fails
 * (device work can), or whose exchange learns that a member on another node
 * failed, still advances every counter, so no local rank waits forever, and
 * the counters stay equal on every rank for the next call.  It marks the
 * chunk in its failure word for the slot before the counter that
 * announces its part; a rank that waited for that counter reads the word
 * and fails the call too.  So a failed part makes every rank whose result
 * depends on it return an error (every rank, on the allreduce's rail path;
 * for the other reductions the ranks whose part the chunk holds), the rank
 * whose own copy or reduction failed too, and the next call starts clean.
 */
#include "coll_strata_pipeline.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

bool mca_coll_strata_pipeline_scatters(const mca_coll_strata_engine_t *e,
                                       const mca_coll_strata_pipeline_args_t *a,
                                       const mca_coll_strata_decision_t *decision)
{
    const mca_coll_strata_topo_t *topo = &e->topo;

    /* bandwidth's exchanges (ring, halving-doubling) become the ring's
     * reduce-scatter half: the bytes of one half, never more steps than
     * the ring (doubling's small vectors keep their latency) */
    if (MCA_COLL_STRATA_PIPE_REDUCE != a->kind || topo->nnodes < 2 || NULL == e->node_parts ||
        MCA_COLL_STRATA_ALG_REPLICATED == decision->algorithm ||
        (MCA_COLL_STRATA_INTER_RING != decision->inter &&
         MCA_COLL_STRATA_INTER_RHD != decision->inter)) {
        return false;
    }
    switch (a->parts) {
    case MCA_COLL_STRATA_PARTS_ROOT:
        /* A chain to the root's node: its members step together (empty
         * blocks still pass, they carry the failure news), so a chunk's
         * exchange takes nnodes - 1 transfers and only nslots overlap;
         * beyond that the full exchange streams better. */
        return topo->nnodes - 1 <= e->shm.nslots;
    case MCA_COLL_STRATA_PARTS_BLOCKS:
        /* one region per node only where node order is comm order */
        return topo->node_contiguous;
    default:
        return false;
    }
}

/* The nodes' regions of the result (mca_coll_strata_pipeline_args_t's
 * parts) in e->node_parts, for a call the reduce-scatter half runs:
 * a reduce's root node holds it all; a reduce-scatter's nodes their
 * ranks' blocks. */
static const size_t *mca_coll_strata_pipeline_parts(mca_coll_strata_engine_t *e,
                                                    const mca_coll_strata_pipeline_args_t *a)
{
    const mca_coll_strata_topo_t *topo = &e->topo;
    size_t *b = e->node_parts, at = 0;
    int nnodes = topo->nnodes, size = topo->node_first[nnodes];

    if (MCA_COLL_STRATA_PARTS_ROOT == a->parts) {
        for (int k = 0; k <= nnodes; ++k) {
            b[k] = (k <= topo->rank_node[a->root]) ? 0 : a->count;
        }
        return b;
    }
    b[0] = 0;
    for (int k = 0; k < nnodes; ++k) {
        for (int q = topo->node_first[k]; q < topo->node_first[k + 1]; ++q) {
            at += (NULL != a->rcounts) ? (size_t)a->rcounts[q] : a->count / (size_t)size;
        }
        b[k + 1] = at;
    }
    return b;
}

int mca_coll_strata_pipeline_allreduce(mca_coll_strata_engine_t *e, const void *sbuf, void *rbuf,
                                       size_t count, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op,
                                       const mca_coll_strata_decision_t *decision,
                                       mca_coll_strata_node_t *node)
{
    mca_coll_strata_pipeline_args_t a = {
        .sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf,
        .out = rbuf,
        .count = count,
        .out_lo = 0,
        .out_hi = count,
        .dtype = dtype,
        .op = op,
        .coll = "MPI_Allreduce",
    };

    return mca_coll_strata_pipeline_run(e, &a, decision, node);
}

/* A failure this rank's own messages do not name: said once per process. */
static void mca_coll_strata_pipeline_report(const mca_coll_strata_pipeline_t *p, const char *coll)
{
    mca_coll_strata_engine_t *e = p->e;

    if (OMPI_SUCCESS != p->node_error && p->peer_failed) {
        static bool warned = false;

        if (!warned) {
            warned = true;
            opal_output(0,
                        "coll:strata: %s failed (%s): a part of the call "
                        "failed on this rank's rail or on another rank of its node (see the "
                        "messages of the ranks concerned); the result is undefined, later "
                        "calls are not affected",
                        coll, e->topo.node_comm->c_name);
        }
    }
}

void mca_coll_strata_pipeline_prepare(mca_coll_strata_engine_t *e,
                                      const mca_coll_strata_pipeline_args_t *a,
                                      const mca_coll_strata_decision_t *decision,
                                      mca_coll_strata_node_t *node,
                                      const mca_coll_strata_direct_t *direct,
                                      mca_coll_strata_pipeline_t *out)
{
    mca_coll_strata_pipeline_t p = {
        .e = e,
        .shm = node->shm,
        .node = node,
        .decision = decision,
        .kind = a->kind,
        .sched_alg = a->sched_alg,
        .copies_in = true,
        .comm_size = 1,
        .sbuf = a->sbuf,
        .out = a->out,
        .out_lo = a->out_lo,
        .out_hi = a->out_hi,
        .count = a->count,
        .dtype = a->dtype,
        .op = a->op,
        .base = e->chunk_serial,
        .me = e->topo.local_rank,
        .nslices = (NULL != direct) ? e->topo.local_size : decision->nslices,
        .direct = direct,
    };
    struct ompi_datatype_t *dtype = a->dtype;
    size_t count = a->count;

    p.owner = p.me < p.nslices;
    p.replicated = MCA_COLL_STRATA_ALG_REPLICATED == decision->algorithm && NULL == direct;
    if (mca_coll_strata_pipeline_scatters(e, a, decision)) {
        p.node_parts = mca_coll_strata_pipeline_parts(e, a);
    }
    if (MCA_COLL_STRATA_PIPE_BCAST == a->kind) {
        p.root_node = e->topo.rank_node[a->root];
        p.root = a->root; /* on one node (the direct path) its local rank too */
        p.copies_in = a->root == ompi_comm_rank(a->comm);
    } else if (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind) {
        p.comm_size = ompi_comm_size(a->comm);
        p.comm_rank = ompi_comm_rank(a->comm);
    }
    /* Local rank 0 keeps publishing to the result area while ranks without a
     * rail need it; every other replicated owner works in its own rbuf (the
     * replicated path runs only where every rank's part is the whole
     * vector: MPI_Allreduce). */
    p.private_result = p.replicated && p.owner && !(0 == p.me && e->topo.local_size > p.nslices);
    p.result_owners = p.replicated ? 1 : p.nslices;
    p.fail_copy_out = !p.private_result &&
                      mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_COPY_OUT);
    ompi_datatype_type_extent(dtype, &p.extent);
    /* an allgather's chunk holds that many elements of every block */
    p.chunk_elems = node->slot_bytes / ((size_t)p.extent * (size_t)p.comm_size);
    if (NULL != p.direct) {
        p.chunk_elems = (count > 0) ? count : 1; /* no slot: one chunk, the whole vector */
    }
    p.nchunks = (count + p.chunk_elems - 1) / p.chunk_elems;
    /* Every local rank counts the same chunks, whatever happens below. */
    e->chunk_serial += p.nchunks;
    *out = p;
}

int mca_coll_strata_pipeline_outcome(const mca_coll_strata_pipeline_t *p, const char *coll)
{
    mca_coll_strata_pipeline_report(p, coll);
    return p->node_error;
}

/* Whether a call may run on the node area's direct path (which then asks
 * the node's ranks whether their buffers allow it): the same answer on
 * every local rank, from what they share.  For now the calls within one
 * node (no exchange between nodes to feed), queued: the reductions with a
 * slice for every local rank (each writes its slice to every output whose
 * window holds it, one kernel per run of the slice that the same outputs
 * hold), a bcast (each rank copies a slice of the root's vector to every
 * other rank) and an allgather (each rank copies its block to everyone). */
static bool mca_coll_strata_pipeline_may_direct(const mca_coll_strata_engine_t *e,
                                                const mca_coll_strata_pipeline_args_t *a,
                                                const mca_coll_strata_decision_t *decision,
                                                const mca_coll_strata_node_t *node)
{
    int k = e->topo.local_size;

    return NULL != node->ops->direct && NULL != node->queue && 1 == e->topo.nnodes &&
           a->count > 0 && k >= 2 && k <= MCA_COLL_STRATA_DIRECT_RANKS_MAX &&
           (MCA_COLL_STRATA_PIPE_REDUCE != a->kind ||
            (MCA_COLL_STRATA_ALG_REPLICATED != decision->algorithm && decision->nslices == k));
}

int mca_coll_strata_pipeline_run(mca_coll_strata_engine_t *e,
                                 const mca_coll_strata_pipeline_args_t *a,
                                 const mca_coll_strata_decision_t *decision,
                                 mca_coll_strata_node_t *node)
{
    const mca_coll_strata_direct_t *direct = NULL;
    mca_coll_strata_pipeline_t p;

    /* nonblocking calls started before this one go first: theirs are the
     * counters' earlier chunks */
    mca_coll_strata_pipeline_drain(e);
    if (mca_coll_strata_pipeline_may_direct(e, a, decision, node)) {
        direct = node->ops->direct(node, a, e->chunk_serial);
        MCA_COLL_STRATA_VERBOSE(20, "%s %s: %s", a->coll, e->topo.node_comm->c_name,
                                (NULL != direct) ? "direct (every local rank's buffers read and "
                                                   "written where they are)"
                                                 : "through the device scratch (a local rank's "
                                                   "buffers cannot be exported, or its output "
                                                   "overlaps its input in place, or "
                                                   "coll_strata_device_direct=0)");
    }
    mca_coll_strata_pipeline_prepare(e, a, decision, node, direct, &p);
    /* the driver: the node area's queue where it has one, else the host */
    if (NULL != node->queue) {
        mca_coll_strata_pipeline_driver_queued(&p);
    } else {
        mca_coll_strata_pipeline_driver_host(&p);
    }
    return mca_coll_strata_pipeline_outcome(&p, a->coll);
}

/* Shared-memory slots, and per slot an exchange and its scratch, sized by
 * coll_strata_segment_size and coll_strata_shm_slots (within their ranges:
 * the component bounds them when it opens). */
int mca_coll_strata_pipeline_setup(mca_coll_strata_engine_t *e, const mca_coll_strata_settings_t *s,
                                   bool willing, char *why, size_t why_len)
{
    const mca_coll_strata_settings_t *c = s;
    size_t slot_bytes = (c->segment_size + 63) & ~(size_t)63;
    int nslots = c->shm_slots;
    int rc;

    rc = mca_coll_strata_shm_attach(&e->shm, e->topo.node_comm, willing, slot_bytes, nslots,
                                    e->shm_dir, why, why_len);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    e->node_host.ops = &mca_coll_strata_node_host_ops;
    e->node_host.shm = &e->shm;
    e->node_host.slot_bytes = slot_bytes;
    e->node_host.inter_slot_bytes = slot_bytes;
    /* Local steps from here on: the set-up's closing agreement makes a
     * failure on one rank a fallback on all of them. */
    if (!mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_PIPELINE)) {
        e->xchgs = calloc((size_t)nslots, sizeof(*e->xchgs));
    }
    e->nxchgs = (NULL != e->xchgs) ? nslots : 0;
    if (NULL == e->xchgs) {
        snprintf(why, why_len, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < nslots; ++i) {
        e->xchgs[i].bounds = malloc(sizeof(size_t) * ((size_t)e->topo.nnodes + 1));
        if (NULL == e->xchgs[i].bounds) {
            snprintf(why, why_len, "out of memory");
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    e->node_parts = malloc(sizeof(size_t) * ((size_t)e->topo.nnodes + 1));
    if (NULL == e->node_parts) {
        snprintf(why, why_len, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* An exchange receives at most one chunk: one slot's bytes per chunk in
     * flight. */
    if (NULL != e->topo.rail_comm) {
        /* and where a compressed exchange packs what it sends: never more
         * than the elements (coll_strata_codec.h) */
        e->node_host.inter_recv = malloc(slot_bytes * (size_t)nslots);
        e->node_host.inter_packed = malloc(slot_bytes * (size_t)nslots);
        if (NULL == e->node_host.inter_recv || NULL == e->node_host.inter_packed) {
            snprintf(why, why_len, "cannot allocate %zu bytes of exchange scratch",
                     2 * slot_bytes * (size_t)nslots);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    return OMPI_SUCCESS;
}

void mca_coll_strata_pipeline_release(mca_coll_strata_engine_t *e)
{
    mca_coll_strata_shm_detach(&e->shm);
    free(e->node_host.inter_recv);
    e->node_host.inter_recv = NULL;
    free(e->node_host.inter_packed);
    e->node_host.inter_packed = NULL;
    /* as many as pipeline_setup made */
    for (int i = 0; NULL != e->xchgs && i < e->nxchgs; ++i) {
        free(e->xchgs[i].bounds);
    }
    free(e->xchgs);
    e->xchgs = NULL;
    e->nxchgs = 0;
    free(e->node_parts);
    e->node_parts = NULL;
}
