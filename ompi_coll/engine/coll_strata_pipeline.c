/*
 * coll/strata pipelined hierarchical allreduce (docs/design.md, "The allreduce").
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
 * count chunks over the communicator's lifetime (module->chunk_serial), so
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
#include "../coll_strata.h"
#include "coll_strata_pipeline.h"

#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

/* Most idle polls of the pipeline before each further one also yields the
 * core (the budget adapts per communicator, see below). */
#define MCA_COLL_STRATA_PIPELINE_SPINS 64


static inline uint64_t mca_coll_strata_flag_load(const uint64_t *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static inline void mca_coll_strata_flag_store(uint64_t *flag, uint64_t value)
{
    __atomic_store_n(flag, value, __ATOMIC_RELEASE);
}

/* Have local ranks [0, nranks) all advanced counter `field` to >= value? */
static bool mca_coll_strata_pipeline_reached(const mca_coll_strata_shm_t *shm, size_t field,
                                             int nranks, uint64_t value)
{
    for (int i = 0; i < nranks; ++i) {
        const char *flags = (const char *)&shm->flags[i];

        if (mca_coll_strata_flag_load((const uint64_t *)(flags + field)) < value) {
            return false;
        }
    }
    return true;
}

/* Counter value meaning "chunk g - nslots is done" (0 when there is none). */
uint64_t mca_coll_strata_pipeline_reuse_mark(const mca_coll_strata_pipeline_t *p, uint64_t g)
{
    uint64_t nslots = (uint64_t)p->shm->nslots;

    return (g + 1 > nslots) ? g + 1 - nslots : 0;
}

void mca_coll_strata_pipeline_chunk(const mca_coll_strata_pipeline_t *p, uint64_t c, size_t *first,
                                    size_t *n)
{
    *first = c * p->chunk_elems;
    *n = (p->count - *first < p->chunk_elems) ? p->count - *first : p->chunk_elems;
}

int mca_coll_strata_pipeline_slot(const mca_coll_strata_pipeline_t *p, uint64_t c)
{
    return (int)((p->base + c) % (uint64_t)p->shm->nslots);
}

/*
 * Which part of a chunk failed on this rank, and so who must learn it:
 *   INPUT   its input (copy-in): the slice owners reducing the chunk
 *   RESULT  its result slice (reduction or exchange): every rank copying
 *           the chunk out
 *   OWN     its copy-out: nobody else (its result alone is wrong)
 * INPUT's word of a slot is rewritten at the copy-in of the chunk nslots
 * later, which waits until every owner has reduced (so read) this one;
 * RESULT's at that chunk's reduction, which waits until every rank has
 * copied this one out.  So each mark stays until all its readers have read
 * it, however far a rank's copy-in runs ahead of its copy-out.
 */

static uint64_t *mca_coll_strata_pipeline_mark(const mca_coll_strata_pipeline_t *p, int r,
                                               mca_coll_strata_part_t part, uint64_t c)
{
    int slot = mca_coll_strata_pipeline_slot(p, c);

    return (MCA_COLL_STRATA_PART_INPUT == part) ? &p->shm->flags[r].input_failed[slot]
                                                : &p->shm->flags[r].result_failed[slot];
}

/* Chunk c's `part` of this rank is wrong: say so in its failure word, keyed
 * by the chunk (the caller's next counter store, a release, publishes it). */
static void mca_coll_strata_pipeline_mark_failed(mca_coll_strata_pipeline_t *p, uint64_t c,
                                                 mca_coll_strata_part_t part)
{
    if (MCA_COLL_STRATA_PART_OWN != part) {
        __atomic_store_n(mca_coll_strata_pipeline_mark(p, p->me, part, c), p->base + c + 1,
                         __ATOMIC_RELAXED);
    }
}

void mca_coll_strata_pipeline_fail(mca_coll_strata_pipeline_t *p, uint64_t c,
                                   mca_coll_strata_part_t part, int rc)
{
    mca_coll_strata_pipeline_mark_failed(p, c, part);
    if (MCA_COLL_STRATA_PART_OWN != part) {
        p->shared_failed = true;
    }
    if (OMPI_SUCCESS == p->node_error) {
        p->node_error = rc;
    }
}

/* A node operation's status for chunk c: a failure is kept for the end of
 * the call, and the stage goes on as if the data had moved. */
static void mca_coll_strata_pipeline_note(mca_coll_strata_pipeline_t *p, uint64_t c,
                                          mca_coll_strata_part_t part, int rc)
{
    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_pipeline_fail(p, c, part, rc);
    }
}

/* Did any of local ranks [0, nranks) mark `part` of chunk c failed?  Read
 * after the counter that announced their part of it (acquire). */
static bool mca_coll_strata_pipeline_peer_failed(mca_coll_strata_pipeline_t *p, int nranks,
                                                 mca_coll_strata_part_t part, uint64_t c)
{
    for (int r = 0; r < nranks; ++r) {
        if (__atomic_load_n(mca_coll_strata_pipeline_mark(p, r, part, c), __ATOMIC_RELAXED) ==
            p->base + c + 1) {
            return true;
        }
    }
    return false;
}

/* Where this rank's input of chunk c (n elements) goes: its input area for
 * a reduction; the result area for the copy-only collectives, whose
 * inputs are already the result (the bcast's root's chunk, or this rank's
 * place in the allgather's node order). */
static char *mca_coll_strata_pipeline_in_area(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                              size_t n)
{
    mca_coll_strata_node_t *node = p->node;
    int slot = mca_coll_strata_pipeline_slot(p, c);

    switch (p->kind) {
    case MCA_COLL_STRATA_PIPE_BCAST:
        return node->ops->result(node, slot);
    case MCA_COLL_STRATA_PIPE_ALLGATHER:
        return node->ops->result(node, slot) +
               (size_t)p->module->topo.rank_pos[p->comm_rank] * n * (size_t)p->extent;
    default:
        return node->ops->input(node, slot, p->me);
    }
}

size_t mca_coll_strata_pipeline_in_gate(const mca_coll_strata_pipeline_t *p)
{
    return (MCA_COLL_STRATA_PIPE_REDUCE == p->kind) ? MCA_COLL_STRATA_FLAG(reduced)
                                                    : MCA_COLL_STRATA_FLAG(copied_out);
}

int mca_coll_strata_pipeline_issue_in(mca_coll_strata_pipeline_t *p, uint64_t c)
{
    mca_coll_strata_node_t *node = p->node;
    size_t first, n;

    if (!p->copies_in) {
        return OMPI_SUCCESS;
    }
    if (NULL == p->sbuf) {
        return MPI_ERR_NO_MEM; /* the caller had no memory for its input */
    }
    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    return node->ops->copy(node, mca_coll_strata_pipeline_in_area(p, c, n),
                           p->sbuf + first * (size_t)p->extent, n * (size_t)p->extent);
}

static void mca_coll_strata_pipeline_copy_in(mca_coll_strata_pipeline_t *p, bool *moved)
{
    uint64_t c = p->next_in, g = p->base + c;
    mca_coll_strata_shm_flags_t *mine = &p->shm->flags[p->me];
    int rc;

    /* The input area of the slot is free once every owner reduced the chunk
     * nslots before; the result area once every rank copied it out (which
     * implies the first). */
    if (c >= p->nchunks || !mca_coll_strata_pipeline_reached(
                               p->shm, mca_coll_strata_pipeline_in_gate(p), p->shm->nranks,
                               mca_coll_strata_pipeline_reuse_mark(p, g))) {
        return;
    }
    rc = mca_coll_strata_pipeline_issue_in(p, c);
    if (OMPI_SUCCESS == rc && p->copies_in) {
        rc = p->node->ops->complete(p->node);
    }
    mca_coll_strata_pipeline_note(p, c, MCA_COLL_STRATA_PART_INPUT, rc);
    mca_coll_strata_flag_store(&mine->copied_in, g + 1);
    if (!p->owner) {
        mca_coll_strata_flag_store(&mine->reduced, g + 1);
    }
    p->next_in++;
    *moved = true;
}

/* The reduce-scatter half for this rank's slice of chunk c: member k (the
 * rail's rank k is node k) ends with node k's region of the result within
 * the slice (empty where the region misses it). */
static void mca_coll_strata_pipeline_slice_parts(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                                 mca_coll_strata_xchg_t *x)
{
    int nnodes = p->module->topo.nnodes;
    size_t first, n, off, len, lo, hi;

    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    mca_coll_strata_partition(n, p->decision->nslices, p->me, &off, &len);
    lo = first + off;
    hi = lo + len;
    for (int k = 0; k <= nnodes; ++k) {
        size_t at = p->node_parts[k];

        x->bounds[k] = ((at < lo) ? lo : (at > hi) ? hi : at) - lo;
    }
    x->bounds[nnodes] = len;
    x->sched.alg = MCA_COLL_STRATA_SCHED_RING_RS;
    x->sched.bounds = x->bounds;
}

/* The schedule of chunk c's exchange: the allreduce's the decision chose,
 * or the copy-only collective's (its root's node; an allgather's node
 * regions in the chunk, every block of it n elements). */
static void mca_coll_strata_pipeline_sched(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                           mca_coll_strata_xchg_t *x)
{
    const mca_coll_strata_topo_t *topo = &p->module->topo;
    size_t first, n;

    x->sched.root = 0;
    x->sched.bounds = NULL;
    switch (p->kind) {
    case MCA_COLL_STRATA_PIPE_REDUCE:
        x->sched.alg = (MCA_COLL_STRATA_INTER_RD == p->decision->inter) ? MCA_COLL_STRATA_SCHED_RD
                       : (MCA_COLL_STRATA_INTER_RHD == p->decision->inter)
                           ? MCA_COLL_STRATA_SCHED_RHD
                           : MCA_COLL_STRATA_SCHED_RING;
        if (NULL != p->node_parts) { /* mca_coll_strata_pipeline_scatters */
            mca_coll_strata_pipeline_slice_parts(p, c, x);
        }
        break;
    case MCA_COLL_STRATA_PIPE_BCAST:
        x->sched.alg = p->sched_alg;
        x->sched.root = p->root_node;
        break;
    default:
        mca_coll_strata_pipeline_chunk(p, c, &first, &n);
        for (int k = 0; k <= topo->nnodes; ++k) {
            x->bounds[k] = (size_t)topo->node_first[k] * n;
        }
        x->sched.alg = p->sched_alg;
        x->sched.bounds = x->bounds;
        break;
    }
}

/* Start the inter-node phase of this rank's slice of chunk c (in the slot's
 * result area); blocking algorithms complete here.  `failed`: the slice is
 * already wrong (strata's exchanges tell the rail; the rail's own allreduce
 * cannot, so there only this node learns it). */
void mca_coll_strata_pipeline_inter_start(mca_coll_strata_pipeline_t *p, uint64_t c, char *slice,
                                          size_t slice_elems, bool failed)
{
    int slot = mca_coll_strata_pipeline_slot(p, c);
    mca_coll_strata_xchg_t *x = &p->module->xchgs[slot];
    struct ompi_communicator_t *rail = p->module->topo.rail_comm;

    x->done = true;
    x->failed = failed || mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_INTER);
    switch (p->decision->inter) {
    case MCA_COLL_STRATA_INTER_RING:
    case MCA_COLL_STRATA_INTER_RD:
    case MCA_COLL_STRATA_INTER_RHD:
        mca_coll_strata_pipeline_sched(p, c, x);
        x->comm = rail;
        x->buf = slice;
        x->scratch = p->node->inter_recv + (size_t)slot * p->node->inter_slot_bytes;
        x->stage_send = x->stage_recv = NULL;
        if (NULL != p->node->inter_stage) {
            x->stage_send = p->node->inter_stage + 2 * (size_t)slot * p->node->inter_slot_bytes;
            x->stage_recv = x->stage_send + p->node->inter_slot_bytes;
        }
        x->count = slice_elems;
        x->dtype = p->dtype;
        x->op = p->op;
        x->node = p->node;
        x->tag = 1 + slot;
        x->done = false;
        mca_coll_strata_xchg_start(x);
        break;
    case MCA_COLL_STRATA_INTER_COLL:
        if (OMPI_SUCCESS != rail->c_coll->coll_allreduce(MPI_IN_PLACE, slice, (int)slice_elems,
                                                         p->dtype, p->op, rail,
                                                         rail->c_coll->coll_allreduce_module)) {
            x->failed = true;
        }
        break;
    default:
        break;
    }
}

/* This owner's elements [*off, *off + *len) of a chunk of n: its slice, or
 * the whole chunk on the replicated path. */
static void mca_coll_strata_pipeline_slice(const mca_coll_strata_pipeline_t *p, size_t n,
                                           size_t *off, size_t *len)
{
    if (p->replicated) {
        *off = 0;
        *len = n;
    } else {
        mca_coll_strata_partition(n, p->decision->nslices, p->me, off, len);
    }
}

void mca_coll_strata_pipeline_reduce_target(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                            char **dst, size_t *len)
{
    mca_coll_strata_node_t *node = p->node;
    int slot = mca_coll_strata_pipeline_slot(p, c);
    size_t first, n, off;

    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    if (MCA_COLL_STRATA_PIPE_REDUCE != p->kind) {
        /* the inputs are the result: the leader sends and receives it whole */
        *dst = node->ops->result(node, slot);
        *len = (MCA_COLL_STRATA_PIPE_ALLGATHER == p->kind) ? n * (size_t)p->comm_size : n;
        return;
    }
    mca_coll_strata_pipeline_slice(p, n, &off, len);
    *dst = p->private_result ? p->out + first * (size_t)p->extent
                             : node->ops->result(node, slot) + off * (size_t)p->extent;
}

int mca_coll_strata_pipeline_issue_reduce(mca_coll_strata_pipeline_t *p, uint64_t c, char **dst,
                                          size_t *len)
{
    mca_coll_strata_node_t *node = p->node;
    int slot = mca_coll_strata_pipeline_slot(p, c), k = p->shm->nranks;
    const void *srcs[p->shm->nranks]; /* k input areas of the slot */
    size_t first, n, off;

    mca_coll_strata_pipeline_reduce_target(p, c, dst, len);
    if (MCA_COLL_STRATA_PIPE_REDUCE != p->kind) {
        return OMPI_SUCCESS;
    }
    /* the inputs' elements of this owner's slice (all for the replicated) */
    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    mca_coll_strata_pipeline_slice(p, n, &off, len);
    /* Inputs in local rank order 1, 0, 2, 3, ...: the order this pipeline
     * has always reduced in (b op a, then each further input). */
    for (int i = 0; i < k; ++i) {
        int r = (k < 2) ? 0 : (i == k - 1) ? 1 : (i == k - 2) ? 0 : k - 1 - i;

        srcs[i] = node->ops->input(node, slot, r) + off * (size_t)p->extent;
    }
    return (1 == k) ? node->ops->copy(node, *dst, srcs[0], *len * (size_t)p->extent)
                    : node->ops->reduce(node, p->op, p->dtype, srcs, k, *dst, *len);
}

static void mca_coll_strata_pipeline_reduce(mca_coll_strata_pipeline_t *p, bool *moved)
{
    mca_coll_strata_shm_t *shm = p->shm;
    uint64_t c = p->next_reduce, g = p->base + c;
    int k = shm->nranks, rc;
    bool inputs_failed;
    size_t len;
    char *dst;

    if (c >= p->next_in ||
        !mca_coll_strata_pipeline_reached(shm, MCA_COLL_STRATA_FLAG(copied_in), k, g + 1) ||
        !mca_coll_strata_pipeline_reached(shm, MCA_COLL_STRATA_FLAG(copied_out), k,
                                          mca_coll_strata_pipeline_reuse_mark(p, g))) {
        return;
    }
    inputs_failed = mca_coll_strata_pipeline_peer_failed(p, k, MCA_COLL_STRATA_PART_INPUT, c);
    rc = mca_coll_strata_pipeline_issue_reduce(p, c, &dst, &len);
    if (OMPI_SUCCESS == rc && MCA_COLL_STRATA_PIPE_REDUCE == p->kind) {
        rc = p->node->ops->complete(p->node);
    }
    mca_coll_strata_pipeline_note(p, c, MCA_COLL_STRATA_PART_RESULT, rc);
    mca_coll_strata_flag_store(&shm->flags[p->me].reduced, g + 1);
    p->next_reduce++;
    *moved = true;
    mca_coll_strata_pipeline_inter_start(p, c, dst, len, inputs_failed || OMPI_SUCCESS != rc);
}

bool mca_coll_strata_pipeline_inter_done(mca_coll_strata_pipeline_t *p, uint64_t c)
{
    mca_coll_strata_xchg_t *x = &p->module->xchgs[mca_coll_strata_pipeline_slot(p, c)];

    if (!x->done) {
        mca_coll_strata_xchg_progress(x, &x->done);
    }
    return x->done;
}

/* Chunk c's exchange is done: a failed one is marked in the failure word
 * (before the caller's counter publishes the chunk). */
void mca_coll_strata_pipeline_inter_outcome(mca_coll_strata_pipeline_t *p, uint64_t c)
{
    mca_coll_strata_xchg_t *x = &p->module->xchgs[mca_coll_strata_pipeline_slot(p, c)];
    size_t lo, hi;

    if (!x->failed) {
        return;
    }
    /* The node's readers of the slice learn it from the mark; this rank's
     * own call fails only where its part is in the chunk. */
    mca_coll_strata_pipeline_window(p, c, &lo, &hi);
    if (lo < hi) {
        p->peer_failed = true;
        mca_coll_strata_pipeline_fail(p, c, MCA_COLL_STRATA_PART_RESULT, MPI_ERR_OTHER);
    } else {
        mca_coll_strata_pipeline_mark_failed(p, c, MCA_COLL_STRATA_PART_RESULT);
        p->shared_failed = true;
    }
}

bool mca_coll_strata_pipeline_publish_exchanged(mca_coll_strata_pipeline_t *p)
{
    bool moved = false;

    for (uint64_t c = p->next_publish; c < p->next_reduce; ++c) {
        (void)mca_coll_strata_pipeline_inter_done(p, c);
    }
    while (p->next_publish < p->next_reduce &&
           mca_coll_strata_pipeline_inter_done(p, p->next_publish)) {
        uint64_t c = p->next_publish;

        mca_coll_strata_pipeline_inter_outcome(p, c);
        mca_coll_strata_flag_store(&p->shm->flags[p->me].published, p->base + c + 1);
        p->next_publish++;
        moved = true;
    }
    return moved;
}

static void mca_coll_strata_pipeline_publish(mca_coll_strata_pipeline_t *p, bool *moved)
{
    if (mca_coll_strata_pipeline_publish_exchanged(p)) {
        *moved = true;
    }
}

/* The part of chunk c this rank copies out: elements [*lo, *hi) of the
 * vector (empty where its window misses the chunk). */
void mca_coll_strata_pipeline_window(const mca_coll_strata_pipeline_t *p, uint64_t c, size_t *lo,
                                     size_t *hi)
{
    size_t first, n;

    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    *lo = (first > p->out_lo) ? first : p->out_lo;
    *hi = (first + n < p->out_hi) ? first + n : p->out_hi;
    if (*hi < *lo) {
        *hi = *lo;
    }
}

/* Chunk c's n elements of every rank's block (from element `first` of
 * each) from the result area (node order) to the block's place in `out`
 * (rank order). */
static int mca_coll_strata_pipeline_copy_out_blocks(mca_coll_strata_pipeline_t *p,
                                                    const char *result, size_t first, size_t n)
{
    mca_coll_strata_node_t *node = p->node;
    size_t bytes = n * (size_t)p->extent;
    int rc = OMPI_SUCCESS;

    for (int q = 0; q < p->comm_size && OMPI_SUCCESS == rc; ++q) {
        rc = node->ops->copy(node, p->out + ((size_t)q * p->count + first) * (size_t)p->extent,
                             result + (size_t)p->module->topo.rank_pos[q] * bytes, bytes);
    }
    return rc;
}

/* Whether this rank has a part of a chunk whose window is [lo, hi): every
 * block of an allgather (none without `out`: the caller had no memory for
 * it), else its window. */
static bool mca_coll_strata_pipeline_has_out(const mca_coll_strata_pipeline_t *p, size_t lo,
                                             size_t hi)
{
    return (MCA_COLL_STRATA_PIPE_ALLGATHER == p->kind) ? NULL != p->out : lo < hi;
}

int mca_coll_strata_pipeline_issue_out(mca_coll_strata_pipeline_t *p, uint64_t c)
{
    mca_coll_strata_node_t *node = p->node;
    bool allgather = MCA_COLL_STRATA_PIPE_ALLGATHER == p->kind;
    size_t first, n, lo, hi;
    const char *result;
    int rc;

    mca_coll_strata_pipeline_window(p, c, &lo, &hi);
    if (!mca_coll_strata_pipeline_has_out(p, lo, hi)) {
        return OMPI_SUCCESS;
    }
    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    result = node->ops->result(node, mca_coll_strata_pipeline_slot(p, c));
    rc = allgather ? mca_coll_strata_pipeline_copy_out_blocks(p, result, first, n)
                   : node->ops->copy(node, p->out + (lo - p->out_lo) * (size_t)p->extent,
                                     result + (lo - first) * (size_t)p->extent,
                                     (hi - lo) * (size_t)p->extent);
    if (OMPI_SUCCESS == rc && p->fail_copy_out) {
        rc = OMPI_ERROR;
    }
    return rc;
}

static void mca_coll_strata_pipeline_copy_out(mca_coll_strata_pipeline_t *p, bool *moved)
{
    uint64_t c = p->next_out, g = p->base + c;
    size_t lo, hi;
    int rc;

    if (p->private_result) {
        /* The result is already in rbuf once this rank published it. */
        if (c >= p->next_publish) {
            return;
        }
    } else if (c >= p->next_in ||
               !mca_coll_strata_pipeline_reached(p->shm, MCA_COLL_STRATA_FLAG(published),
                                                 p->result_owners, g + 1)) {
        return;
    } else {
        /* Only the ranks whose part of the result is in this chunk depend
         * on it (all of them for MPI_Allreduce); the others still wait for
         * it, so that the result area's reuse rule holds. */
        mca_coll_strata_pipeline_window(p, c, &lo, &hi);
        if (lo < hi &&
            mca_coll_strata_pipeline_peer_failed(p, p->result_owners, MCA_COLL_STRATA_PART_RESULT,
                                                 c) &&
            OMPI_SUCCESS == p->node_error) {
            p->peer_failed = true;
            p->node_error = MPI_ERR_OTHER;
        }
        rc = mca_coll_strata_pipeline_issue_out(p, c);
        if (OMPI_SUCCESS == rc && mca_coll_strata_pipeline_has_out(p, lo, hi)) {
            rc = p->node->ops->complete(p->node);
        }
        mca_coll_strata_pipeline_note(p, c, MCA_COLL_STRATA_PART_OWN, rc);
    }
    mca_coll_strata_flag_store(&p->shm->flags[p->me].copied_out, g + 1);
    p->next_out++;
    *moved = true;
}

bool mca_coll_strata_pipeline_scatters(const mca_coll_strata_module_t *module,
                                       const mca_coll_strata_pipeline_args_t *a,
                                       const mca_coll_strata_decision_t *decision)
{
    const mca_coll_strata_topo_t *topo = &module->topo;

    /* bandwidth's exchanges (ring, halving-doubling) become the ring's
     * reduce-scatter half: the bytes of one half, never more steps than
     * the ring (doubling's small vectors keep their latency) */
    if (MCA_COLL_STRATA_PIPE_REDUCE != a->kind || topo->nnodes < 2 || NULL == module->node_parts ||
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
        return topo->nnodes - 1 <= module->shm.nslots;
    case MCA_COLL_STRATA_PARTS_BLOCKS:
        /* one region per node only where node order is comm order */
        return topo->node_contiguous;
    default:
        return false;
    }
}

/* The nodes' regions of the result (mca_coll_strata_pipeline_args_t's
 * parts) in module->node_parts, for a call the reduce-scatter half runs:
 * a reduce's root node holds it all; a reduce-scatter's nodes their
 * ranks' blocks. */
static const size_t *mca_coll_strata_pipeline_parts(mca_coll_strata_module_t *module,
                                                    const mca_coll_strata_pipeline_args_t *a)
{
    const mca_coll_strata_topo_t *topo = &module->topo;
    size_t *b = module->node_parts, at = 0;
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

int mca_coll_strata_pipeline_allreduce(mca_coll_strata_module_t *module, const void *sbuf,
                                       void *rbuf, size_t count, struct ompi_datatype_t *dtype,
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

    return mca_coll_strata_pipeline_run(module, &a, decision, node);
}

/* The host drives every chunk: each stage waits for its flags, issues its
 * work, waits for it, and announces it (see the top). */
static void mca_coll_strata_pipeline_run_host(mca_coll_strata_pipeline_t *p)
{
    unsigned idle = 0;
    bool yielded = false;

    while (p->next_out < p->nchunks) {
        bool moved = false;

        mca_coll_strata_pipeline_copy_in(p, &moved);
        if (p->owner) {
            mca_coll_strata_pipeline_reduce(p, &moved);
            mca_coll_strata_pipeline_publish(p, &moved);
        }
        mca_coll_strata_pipeline_copy_out(p, &moved);
        if (moved) {
            idle = 0;
            continue;
        }
        /* Nothing moved: progress the pml; after a few idle polls give the
         * core away too, since ranks often oversubscribe cores (without
         * Open MPI knowing, e.g. namespace nodes sharing a machine) and a
         * spinning rank would starve the one it waits for.  The polls first:
         * a peer that is about to arrive is not worth a system call. */
        opal_progress();
        if (++idle > p->module->spin_budget) {
            sched_yield();
            yielded = true;
        }
    }
    /* Waits that outlast the polls mean the peers need this core (or are
     * far): poll less next time; waits the polls cover, poll more, up to
     * MCA_COLL_STRATA_PIPELINE_SPINS. */
    if (yielded) {
        p->module->spin_budget /= 2;
    } else if (p->module->spin_budget < MCA_COLL_STRATA_PIPELINE_SPINS) {
        p->module->spin_budget = (2 * p->module->spin_budget + 1 < MCA_COLL_STRATA_PIPELINE_SPINS)
                                     ? 2 * p->module->spin_budget + 1
                                     : MCA_COLL_STRATA_PIPELINE_SPINS;
    }
}

/* A failure this rank's own messages do not name: said once per process. */
static void mca_coll_strata_pipeline_report(const mca_coll_strata_pipeline_t *p, const char *coll)
{
    mca_coll_strata_module_t *module = p->module;

    if (OMPI_SUCCESS != p->node_error && p->peer_failed) {
        static bool warned = false;

        if (!warned) {
            warned = true;
            opal_output(0,
                        "coll:strata: %s failed (%s): a part of the call "
                        "failed on this rank's rail or on another rank of its node (see the "
                        "messages of the ranks concerned); the result is undefined, later "
                        "calls are not affected",
                        coll, module->topo.node_comm->c_name);
        }
    }
}

int mca_coll_strata_pipeline_run(mca_coll_strata_module_t *module,
                                 const mca_coll_strata_pipeline_args_t *a,
                                 const mca_coll_strata_decision_t *decision,
                                 mca_coll_strata_node_t *node)
{
    mca_coll_strata_pipeline_t p = {
        .module = module,
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
        .base = module->chunk_serial,
        .me = module->topo.local_rank,
        .owner = module->topo.local_rank < decision->nslices,
    };
    struct ompi_datatype_t *dtype = a->dtype;
    size_t count = a->count;

    p.replicated = MCA_COLL_STRATA_ALG_REPLICATED == decision->algorithm;
    if (mca_coll_strata_pipeline_scatters(module, a, decision)) {
        p.node_parts = mca_coll_strata_pipeline_parts(module, a);
    }
    if (MCA_COLL_STRATA_PIPE_BCAST == a->kind) {
        p.root_node = module->topo.rank_node[a->root];
        p.copies_in = a->root == ompi_comm_rank(a->comm);
    } else if (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind) {
        p.comm_size = ompi_comm_size(a->comm);
        p.comm_rank = ompi_comm_rank(a->comm);
    }
    /* Local rank 0 keeps publishing to the result area while ranks without a
     * rail need it; every other replicated owner works in its own rbuf (the
     * replicated path runs only where every rank's part is the whole
     * vector: MPI_Allreduce). */
    p.private_result = p.replicated && p.owner &&
                       !(0 == p.me && module->topo.local_size > decision->nslices);
    p.result_owners = p.replicated ? 1 : decision->nslices;
    p.fail_copy_out = !p.private_result &&
                      mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_COPY_OUT);
    ompi_datatype_type_extent(dtype, &p.extent);
    /* an allgather's chunk holds that many elements of every block */
    p.chunk_elems = node->slot_bytes / ((size_t)p.extent * (size_t)p.comm_size);
    p.nchunks = (count + p.chunk_elems - 1) / p.chunk_elems;
    /* Every local rank counts the same chunks, whatever happens below. */
    module->chunk_serial += p.nchunks;
    if (NULL != node->queue) {
        mca_coll_strata_pipeline_run_queued(&p);
    } else {
        mca_coll_strata_pipeline_run_host(&p);
    }
    mca_coll_strata_pipeline_report(&p, a->coll);
    return p.node_error;
}

/* Shared-memory slots, and per slot an exchange and its scratch, sized by
 * coll_strata_segment_size and coll_strata_shm_slots (within their ranges:
 * the component bounds them when it opens). */
int mca_coll_strata_pipeline_setup(mca_coll_strata_module_t *module, bool willing, char *why,
                                   size_t why_len)
{
    const mca_coll_strata_settings_t *c = &module->settings;
    size_t slot_bytes = (c->segment_size + 63) & ~(size_t)63;
    int nslots = c->shm_slots;
    int rc;

    rc = mca_coll_strata_shm_attach(&module->shm, module->topo.node_comm, willing, slot_bytes,
                                    nslots, mca_coll_strata_component.shm_dir, why, why_len);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    module->node_host.ops = &mca_coll_strata_node_host_ops;
    module->node_host.shm = &module->shm;
    module->node_host.slot_bytes = slot_bytes;
    module->node_host.inter_slot_bytes = slot_bytes;
    /* Local steps from here on: the set-up's closing agreement makes a
     * failure on one rank a fallback on all of them. */
    if (!mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_PIPELINE)) {
        module->xchgs = calloc((size_t)nslots, sizeof(*module->xchgs));
    }
    if (NULL == module->xchgs) {
        snprintf(why, why_len, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < nslots; ++i) {
        module->xchgs[i].bounds = malloc(sizeof(size_t) * ((size_t)module->topo.nnodes + 1));
        if (NULL == module->xchgs[i].bounds) {
            snprintf(why, why_len, "out of memory");
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    module->node_parts = malloc(sizeof(size_t) * ((size_t)module->topo.nnodes + 1));
    if (NULL == module->node_parts) {
        snprintf(why, why_len, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* An exchange receives at most one chunk: one slot's bytes per chunk in
     * flight. */
    if (NULL != module->topo.rail_comm) {
        module->node_host.inter_recv = malloc(slot_bytes * (size_t)nslots);
        if (NULL == module->node_host.inter_recv) {
            snprintf(why, why_len, "cannot allocate %zu bytes of exchange scratch",
                     slot_bytes * (size_t)nslots);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    return OMPI_SUCCESS;
}

void mca_coll_strata_pipeline_release(mca_coll_strata_module_t *module)
{
    mca_coll_strata_shm_detach(&module->shm);
    free(module->node_host.inter_recv);
    module->node_host.inter_recv = NULL;
    /* as many as pipeline_setup made: the agreed shm_slots */
    for (int i = 0; NULL != module->xchgs && i < module->settings.shm_slots; ++i) {
        free(module->xchgs[i].bounds);
    }
    free(module->xchgs);
    module->xchgs = NULL;
    free(module->node_parts);
    module->node_parts = NULL;
}
