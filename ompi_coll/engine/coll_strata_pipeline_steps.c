/*
 * coll/strata pipeline steps: what each stage of a chunk does, written once
 * for every driver (coll_strata_pipeline.h): where a chunk lives and which
 * slot it takes, its copy-in, the owner's reduction, the exchange between
 * nodes and its publication, the copy-out, and how a failed part is
 * marked for the ranks that read it (the algorithm and its rules:
 * coll_strata_pipeline.c).  A step issues work on the node area and
 * returns; it never waits for a flag, and it never calls a driver.
 */
#include "coll_strata_pipeline.h"
#include "coll_strata_wire.h"

#include <stddef.h>

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"

/* Have local ranks [0, nranks) all advanced counter `field` to >= value? */
bool mca_coll_strata_pipeline_reached(const mca_coll_strata_shm_t *shm, size_t field, int nranks,
                                      uint64_t value)
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
void mca_coll_strata_pipeline_note(mca_coll_strata_pipeline_t *p, uint64_t c,
                                   mca_coll_strata_part_t part, int rc)
{
    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_pipeline_fail(p, c, part, rc);
    }
}

/* Did any of local ranks [0, nranks) mark `part` of chunk c failed?  Read
 * after the counter that announced their part of it (acquire). */
bool mca_coll_strata_pipeline_peer_failed(mca_coll_strata_pipeline_t *p, int nranks,
                                          mca_coll_strata_part_t part, uint64_t c)
{
    for (int r = 0; r < nranks; ++r) {
        /* a dead rank's counters read as done, its parts as failed
         * (coll_strata_shm_watch.c) */
        if (__atomic_load_n(mca_coll_strata_pipeline_mark(p, r, part, c), __ATOMIC_RELAXED) ==
                p->base + c + 1 ||
            mca_coll_strata_shm_dead(p->shm, r)) {
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
               (size_t)p->e->topo.rank_pos[p->comm_rank] * n * (size_t)p->extent;
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

    if (!p->copies_in || NULL != p->direct) {
        return OMPI_SUCCESS; /* direct: the owners read the input where it is */
    }
    if (NULL == p->sbuf) {
        return MPI_ERR_NO_MEM; /* the caller had no memory for its input */
    }
    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    return node->ops->copy(node, mca_coll_strata_pipeline_in_area(p, c, n),
                           p->sbuf + first * (size_t)p->extent, n * (size_t)p->extent);
}

/* The reduce-scatter half for this rank's slice of chunk c: member k (the
 * rail's rank k is node k) ends with node k's region of the result within
 * the slice (empty where the region misses it). */
static void mca_coll_strata_pipeline_slice_parts(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                                 mca_coll_strata_xchg_t *x)
{
    int nnodes = p->e->topo.nnodes;
    size_t first, n, off, len, lo, hi;

    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    mca_coll_strata_partition(n, p->nslices, p->me, &off, &len);
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
    const mca_coll_strata_topo_t *topo = &p->e->topo;
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
    mca_coll_strata_xchg_t *x = &p->e->xchgs[slot];
    struct ompi_communicator_t *rail = p->e->topo.rail_comm;

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
        /* the call's format between nodes, where this area can pack (host
         * memory: every member of the call is on the host area alike) */
        x->codec = MCA_COLL_STRATA_CODEC_NONE;
        if (MCA_COLL_STRATA_CODEC_NONE != p->decision->codec && NULL != p->node->inter_packed) {
            x->codec = p->decision->codec;
            x->packed = p->node->inter_packed + (size_t)slot * p->node->inter_slot_bytes;
        }
        x->tag = 1 + slot;
        x->wire = NULL; /* the pml */
        if (p->on_ucp_wire) {
            mca_coll_strata_wire_ucp_bind(p->e, x, slot);
        }
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
    } else if (NULL != p->direct && 0 == 16 % (size_t)p->extent) {
        /* direct: slices of whole 16-byte vectors, so that every slice
         * starts aligned where the buffers do (a kernel's vector loads),
         * whatever the number of ranks; the last takes the rest */
        size_t v = 16 / (size_t)p->extent, units = (n + v - 1) / v, uoff, ulen;

        mca_coll_strata_partition(units, p->nslices, p->me, &uoff, &ulen);
        *off = (uoff * v < n) ? uoff * v : n;
        *len = ((uoff + ulen) * v < n ? (uoff + ulen) * v : n) - *off;
    } else {
        mca_coll_strata_partition(n, p->nslices, p->me, off, len);
    }
}

void mca_coll_strata_pipeline_reduce_target(const mca_coll_strata_pipeline_t *p, uint64_t c,
                                            char **dst, size_t *len)
{
    mca_coll_strata_node_t *node = p->node;
    int slot = mca_coll_strata_pipeline_slot(p, c);
    size_t first, n, off;

    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    if (NULL != p->direct) { /* no area: the outputs themselves */
        *dst = NULL;
        *len = 0;
        return;
    }
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

/* Direct: this owner's slice, elements [lo, hi) of the vector, from the
 * inputs `ins` (element 0 of each; a reduction's every rank's, in its
 * order; a bcast's the root's) into every rank's output whose window holds
 * them.  The slice is cut where a window starts or ends; each run between
 * cuts goes to the same outputs, in one operation (an allreduce's whole
 * slice to all k outputs at once; a reduce-scatter's to the one rank whose
 * block it is; a run nobody's window holds is not read at all).  A copy is
 * a one-input reduction. */
static int mca_coll_strata_pipeline_reduce_direct(mca_coll_strata_pipeline_t *p, char *const *ins,
                                                  int nin, size_t lo, size_t hi)
{
    const mca_coll_strata_direct_t *d = p->direct;
    mca_coll_strata_node_t *node = p->node;
    struct ompi_op_t *op = (NULL != p->op) ? p->op : MPI_BOR; /* MPI_BYTE: any op copies */
    size_t ext = (size_t)p->extent;
    int k = p->shm->nranks, rc = OMPI_SUCCESS;
    const void *srcs[nin];
    void *dsts[k];

    while (lo < hi && OMPI_SUCCESS == rc) {
        size_t end = hi;
        int ndst = 0;

        /* the run from lo: up to the next window edge inside the slice */
        for (int q = 0; q < k; ++q) {
            end = (d->lo[q] > lo && d->lo[q] < end) ? d->lo[q] : end;
            end = (d->hi[q] > lo && d->hi[q] < end) ? d->hi[q] : end;
        }
        for (int q = 0; q < k; ++q) {
            if (d->lo[q] <= lo && end <= d->hi[q]) {
                dsts[ndst++] = (NULL != d->out[q]) ? d->out[q] + (lo - d->lo[q]) * ext : NULL;
            }
        }
        for (int i = 0; i < nin && ndst > 0; ++i) {
            srcs[i] = (NULL != ins[i]) ? ins[i] + lo * ext : NULL;
        }
        if (ndst > 0) {
            rc = node->ops->reduce_to(node, op, p->dtype, srcs, nin, dsts, ndst, end - lo);
        }
        lo = end;
    }
    return rc;
}

/* Direct, an allgather: this rank's block, from its input, into its place
 * in every rank's output (but its own in place: it is there), in one
 * operation. */
static int mca_coll_strata_pipeline_gather_direct(mca_coll_strata_pipeline_t *p)
{
    const mca_coll_strata_direct_t *d = p->direct;
    size_t at = (size_t)p->comm_rank * p->count * (size_t)p->extent;
    int k = p->shm->nranks, ndst = 0;
    const void *src = d->in[p->me];
    void *dsts[k];

    for (int q = 0; q < k; ++q) {
        char *place = (NULL != d->out[q]) ? d->out[q] + at : NULL;

        if (q != p->me || place != src) {
            dsts[ndst++] = place;
        }
    }
    return (0 == ndst)
               ? OMPI_SUCCESS
               : p->node->ops->reduce_to(p->node, MPI_BOR, p->dtype, &src, 1, dsts, ndst, p->count);
}

/* Direct, a call's one chunk: this owner's part (see the two above). */
static int mca_coll_strata_pipeline_issue_direct(mca_coll_strata_pipeline_t *p, const int *order)
{
    int k = p->shm->nranks;
    char *ins[k];
    size_t off, len;

    if (MCA_COLL_STRATA_PIPE_ALLGATHER == p->kind) {
        return mca_coll_strata_pipeline_gather_direct(p);
    }
    mca_coll_strata_pipeline_slice(p, p->count, &off, &len);
    if (MCA_COLL_STRATA_PIPE_BCAST == p->kind) {
        ins[0] = p->direct->in[p->root];
        return mca_coll_strata_pipeline_reduce_direct(p, ins, 1, off, off + len);
    }
    for (int i = 0; i < k; ++i) {
        ins[i] = p->direct->in[order[i]];
    }
    return mca_coll_strata_pipeline_reduce_direct(p, ins, k, off, off + len);
}

int mca_coll_strata_pipeline_issue_reduce(mca_coll_strata_pipeline_t *p, uint64_t c, char **dst,
                                          size_t *len)
{
    mca_coll_strata_node_t *node = p->node;
    int slot = mca_coll_strata_pipeline_slot(p, c), k = p->shm->nranks;
    const void *srcs[p->shm->nranks]; /* k input areas of the slot */
    int order[p->shm->nranks];
    size_t first, n, off;

    mca_coll_strata_pipeline_reduce_target(p, c, dst, len);
    /* Inputs in local rank order 1, 0, 2, 3, ...: the order this pipeline
     * has always reduced in (b op a, then each further input). */
    for (int i = 0; i < k; ++i) {
        order[i] = (k < 2) ? 0 : (i == k - 1) ? 1 : (i == k - 2) ? 0 : k - 1 - i;
    }
    if (NULL != p->direct) {
        return mca_coll_strata_pipeline_issue_direct(p, order); /* one chunk: the vector */
    }
    if (MCA_COLL_STRATA_PIPE_REDUCE != p->kind) {
        return OMPI_SUCCESS;
    }
    /* the inputs' elements of this owner's slice (all for the replicated) */
    mca_coll_strata_pipeline_chunk(p, c, &first, &n);
    mca_coll_strata_pipeline_slice(p, n, &off, len);
    for (int i = 0; i < k; ++i) {
        srcs[i] = node->ops->input(node, slot, order[i]) + off * (size_t)p->extent;
    }
    return (1 == k) ? node->ops->copy(node, *dst, srcs[0], *len * (size_t)p->extent)
                    : node->ops->reduce(node, p->op, p->dtype, srcs, k, *dst, *len);
}

bool mca_coll_strata_pipeline_inter_done(mca_coll_strata_pipeline_t *p, uint64_t c)
{
    mca_coll_strata_xchg_t *x = &p->e->xchgs[mca_coll_strata_pipeline_slot(p, c)];

    if (!x->done) {
        mca_coll_strata_xchg_progress(x, &x->done);
    }
    return x->done;
}

/* Chunk c's exchange is done: a failed one is marked in the failure word
 * (before the caller's counter publishes the chunk). */
void mca_coll_strata_pipeline_inter_outcome(mca_coll_strata_pipeline_t *p, uint64_t c)
{
    mca_coll_strata_xchg_t *x = &p->e->xchgs[mca_coll_strata_pipeline_slot(p, c)];
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
        mca_coll_strata_flag_announce(p->shm, &p->shm->flags[p->me].published, p->base + c + 1);
        p->next_publish++;
        moved = true;
    }
    return moved;
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
                             result + (size_t)p->e->topo.rank_pos[q] * bytes, bytes);
    }
    return rc;
}

/* Whether this rank has a part of a chunk whose window is [lo, hi): every
 * block of an allgather (none without `out`: the caller had no memory for
 * it), else its window. */
bool mca_coll_strata_pipeline_has_out(const mca_coll_strata_pipeline_t *p, size_t lo, size_t hi)
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
    if (!mca_coll_strata_pipeline_has_out(p, lo, hi) || NULL != p->direct) {
        return OMPI_SUCCESS; /* direct: the owners wrote it into `out` */
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
