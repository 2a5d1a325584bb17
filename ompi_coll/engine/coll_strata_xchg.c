/*
 * coll/strata inter-node exchange: runs one schedule (logic/coll_strata_sched.h:
 * an allreduce by ring, recursive doubling, or recursive halving and
 * doubling; an allgather's ring; a bcast's binomial tree or chain) among
 * the members of a rail, non-blocking.
 *
 * The pipeline keeps one exchange per chunk in flight and calls
 * mca_coll_strata_xchg_progress between its shared-memory steps, so the
 * network phase of one chunk overlaps the node phases of the next.
 * Exchanges of different chunks use different tags (one per shared-memory
 * slot): a rail member may post chunk c+1 before its neighbour finished
 * chunk c, and the tag keeps those messages apart; between two members,
 * every message of a slot is sent and received in schedule order, so the
 * pml's ordering matches them.
 *
 * The messages travel on the exchange's wire (coll_strata_wire.h: the
 * pml, or coll/strata's own UCP worker for nonblocking calls).
 *
 * The vector lives in the node area (host shared memory, or device memory
 * on the GPU path).  A step's message is received into the slot's scratch
 * and folded into the vector by the node area's reduction (on the GPU for
 * device data), or received straight into the vector.  Where the pml cannot
 * carry device memory (ob1, or pml/ucx without Strata's transports) each
 * message goes through pinned host blocks of the slot: copied out before
 * the send is posted, copied in before it is folded.
 *
 * Failures never stop an exchange: a member that cannot compute its part (a
 * failed copy or reduction, input a local rank could not provide, a failed
 * send or receive) goes on through every step, so that no member on another
 * node waits for a message that is not coming, but sends each remaining
 * message with another length than the receiver expects (nothing where it
 * expects elements, one element where it expects none: truncated, nothing
 * written).  The receiver takes that as the news, marks its own result
 * failed and passes the news on the same way: it follows the data's
 * dependencies, at no cost to exchanges that do not fail.  A send the pml
 * refuses (out of resources) is posted again, as the news, until it is
 * taken: the receiver waits for it.  Only a pml that refuses for
 * MCA_COLL_STRATA_XCHG_REFUSED_S seconds is given up on, with an error
 * naming the peer, which may then wait forever: nothing is left to tell it.
 */
#include "coll_strata_wire.h"

#include <stdint.h>
#include <string.h>

#include "ompi/constants.h"


#define MCA_COLL_STRATA_XCHG_REFUSED_S 30.0

static void mca_coll_strata_xchg_fail(mca_coll_strata_xchg_t *x)
{
    x->failed = true;
}

/* The status of a node-area operation: queued, it is done when the node
 * area says so (mca_coll_strata_xchg_progress polls it before the next
 * send or receive: a message may be sent from a block, or received into
 * one, only after the work on it). */
static void mca_coll_strata_xchg_node(mca_coll_strata_xchg_t *x, int rc)
{
    if (OMPI_SUCCESS == rc) {
        x->node_busy = true;
    } else {
        mca_coll_strata_xchg_fail(x);
    }
}

/* Copy `count` elements between the node area and a staging block (or the
 * scratch); later work of the node area follows it in order. */
static void mca_coll_strata_xchg_copy(mca_coll_strata_xchg_t *x, void *dst, const void *src,
                                      size_t count)
{
    mca_coll_strata_xchg_node(x, x->node->ops->copy(x->node, dst, src, count * (size_t)x->extent));
}

static char *mca_coll_strata_xchg_at(const mca_coll_strata_xchg_t *x, size_t off)
{
    return x->buf + off * (size_t)x->extent;
}

/* The codec's element type for the exchange's datatype (compression runs
 * only on MPI_FLOAT and MPI_DOUBLE: colls/ chose it). */
static mca_coll_strata_codec_elem_t mca_coll_strata_xchg_elem(const mca_coll_strata_xchg_t *x)
{
    return (4 == x->extent) ? MCA_COLL_STRATA_CODEC_FLOAT : MCA_COLL_STRATA_CODEC_DOUBLE;
}

/* A compressed step's block packed, once (host memory: the codec runs on
 * this CPU), and the sender's own copy replaced by the values as rounded:
 * what it sent is what it keeps, so the nodes that combine their blocks
 * (recursive doubling) or take the owner's (the allgather half) all hold
 * the same bits.  The bytes on the wire. */
static size_t mca_coll_strata_xchg_pack(mca_coll_strata_xchg_t *x, char *block, size_t count)
{
    mca_coll_strata_codec_elem_t elem = mca_coll_strata_xchg_elem(x);

    if (!x->packed_ready) {
        mca_coll_strata_codec_pack(x->codec, elem, block, count, x->packed);
        mca_coll_strata_codec_unpack(x->codec, elem, x->packed, count, block, false);
        x->packed_ready = true;
    }
    return mca_coll_strata_codec_bytes(x->codec, count);
}

/* A compressed doubling or halving-doubling among a number of members
 * that is not a power of two ends by sending the whole result back to the
 * members folded in (coll_strata_sched.h), packed, and its sender keeps the
 * values as rounded: a member of the power-of-two core that skips that last
 * step rounds its result the same way (the same vector, the same blocks),
 * or it would keep other bits than its peers. */
static void mca_coll_strata_xchg_round_like_fold(mca_coll_strata_xchg_t *x)
{
    const mca_coll_strata_sched_step_t *s = &x->cur;
    int n = x->sched.n;

    if (MCA_COLL_STRATA_CODEC_NONE == x->codec || x->step != x->nsteps - 1 || s->send_peer >= 0 ||
        s->recv_peer >= 0 || 0 == (n & (n - 1)) ||
        (MCA_COLL_STRATA_SCHED_RD != x->sched.alg && MCA_COLL_STRATA_SCHED_RHD != x->sched.alg)) {
        return;
    }
    x->packed_ready = false;
    (void)mca_coll_strata_xchg_pack(x, x->buf, x->count);
}

/* Post (again) the step's send: its data, or the news of a failure.  A
 * refusal marks the exchange failed and leaves the send pending, to be
 * posted again by the progress (see the top). */
static void mca_coll_strata_xchg_send(mca_coll_strata_xchg_t *x)
{
    const mca_coll_strata_sched_step_t *s = &x->cur;
    size_t send_count = s->send_count;
    char *send_ptr = (NULL != x->stage_send) ? x->stage_send
                                             : mca_coll_strata_xchg_at(x, s->send_off);
    struct ompi_datatype_t *dtype = x->dtype;
    int rc;

    if (x->failed) {
        /* the news (see the top): host memory, whatever the node area (a
         * packed block's length never matches 0 or 1 element either) */
        send_count = (0 == send_count) ? 1 : 0;
        send_ptr = x->signal;
    } else if (MCA_COLL_STRATA_CODEC_NONE != x->codec) {
        send_count = mca_coll_strata_xchg_pack(x, send_ptr, send_count);
        send_ptr = x->packed;
        dtype = MPI_BYTE;
    }
    rc = mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_ISEND)
             ? OMPI_ERR_TEMP_OUT_OF_RESOURCE
             : x->wire->send(x, send_ptr, send_count, dtype, s->send_peer);
    if (OMPI_SUCCESS == rc) {
        x->send_pending = false;
        return;
    }
    if (0.0 == x->send_refused_at) {
        x->send_refused_at = mca_coll_strata_now();
    }
    mca_coll_strata_xchg_fail(x);
    if (mca_coll_strata_now() - x->send_refused_at > MCA_COLL_STRATA_XCHG_REFUSED_S) {
        opal_output(0,
                    "coll:strata: the %s refused a send to rank %d of %s for "
                    "%.0f s (%d); giving up: that rank may wait for it forever",
                    x->wire->name, s->send_peer, x->comm->c_name, MCA_COLL_STRATA_XCHG_REFUSED_S,
                    rc);
        x->send_pending = false;
    }
}

/* Post the messages of step x->step.  A receive the wire refuses is left
 * unposted (complete) and the exchange marked failed; a refused send is
 * posted again (mca_coll_strata_xchg_send). */
static void mca_coll_strata_xchg_post(mca_coll_strata_xchg_t *x)
{
    mca_coll_strata_sched_step_t *s = &x->cur;
    char *send_ptr, *recv_ptr;
    size_t send_count;

    mca_coll_strata_sched_step(&x->sched, ompi_comm_rank(x->comm), x->step, s);
    send_count = s->send_count;
    x->packed_ready = false;
    mca_coll_strata_xchg_round_like_fold(x);
    x->packed_ready = false;
    if (s->recv_peer >= 0) {
        size_t recv_count = s->recv_count;
        struct ompi_datatype_t *dtype = x->dtype;

        recv_ptr = (MCA_COLL_STRATA_FOLD_NONE == s->fold) ? mca_coll_strata_xchg_at(x, s->recv_off)
                                                          : x->scratch;
        if (NULL != x->stage_recv) {
            recv_ptr = x->stage_recv;
        }
        if (MCA_COLL_STRATA_CODEC_NONE != x->codec) {
            /* packed into the scratch (never larger than the elements),
             * widened into place when it is in */
            recv_ptr = x->scratch;
            recv_count = mca_coll_strata_codec_bytes(x->codec, s->recv_count);
            dtype = MPI_BYTE;
        }
        if (OMPI_SUCCESS != x->wire->recv(x, recv_ptr, recv_count, dtype, s->recv_peer)) {
            mca_coll_strata_xchg_fail(x);
        }
    }
    if (s->send_peer < 0) {
        return;
    }
    send_ptr = mca_coll_strata_xchg_at(x, s->send_off);
    if (NULL != x->stage_send && !x->failed) {
        mca_coll_strata_xchg_copy(x, x->stage_send, send_ptr, send_count);
    }
    x->send_pending = true;
    x->send_refused_at = 0.0;
    if (!x->node_busy) { /* else once the staging copy is done */
        mca_coll_strata_xchg_send(x);
    }
}

/* Both messages of the step are complete: did the peer's message arrive
 * whole? */
static void mca_coll_strata_xchg_check(mca_coll_strata_xchg_t *x, int rc, size_t received)
{
    size_t size;

    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_xchg_fail(x);
        return;
    }
    if (x->cur.recv_peer < 0) {
        return;
    }
    ompi_datatype_type_size(x->dtype, &size);
    if (received != ((MCA_COLL_STRATA_CODEC_NONE != x->codec)
                         ? mca_coll_strata_codec_bytes(x->codec, x->cur.recv_count)
                         : x->cur.recv_count * size)) {
        mca_coll_strata_xchg_fail(x);
    }
}

/* The step's messages are done: fold the received block in. */
static void mca_coll_strata_xchg_finish_step(mca_coll_strata_xchg_t *x)
{
    const mca_coll_strata_sched_step_t *s = &x->cur;
    mca_coll_strata_node_t *node = x->node;
    char *block = mca_coll_strata_xchg_at(x, s->recv_off);
    const void *srcs[2];

    if (x->failed || s->recv_peer < 0) {
        /* nothing received, or the result is wrong anyway */
    } else if (MCA_COLL_STRATA_CODEC_NONE != x->codec) {
        /* widened into place, or added in (a sum: in either order the same) */
        mca_coll_strata_codec_unpack(x->codec, mca_coll_strata_xchg_elem(x), x->scratch,
                                     s->recv_count, block, MCA_COLL_STRATA_FOLD_NONE != s->fold);
    } else if (MCA_COLL_STRATA_FOLD_NONE == s->fold) {
        if (NULL != x->stage_recv) {
            mca_coll_strata_xchg_copy(x, block, x->stage_recv, s->recv_count);
        }
    } else {
        if (NULL != x->stage_recv) {
            mca_coll_strata_xchg_copy(x, x->scratch, x->stage_recv, s->recv_count);
        }
        if (MCA_COLL_STRATA_FOLD_RECV_FIRST == s->fold) {
            /* block = received op block (the node area writes srcs[1]) */
            srcs[0] = x->scratch;
            srcs[1] = block;
            mca_coll_strata_xchg_node(
                x, node->ops->reduce(node, x->op, x->dtype, srcs, 2, block, s->recv_count));
        } else {
            /* block = block op received: into the scratch, then back */
            srcs[0] = block;
            srcs[1] = x->scratch;
            mca_coll_strata_xchg_node(
                x, node->ops->reduce(node, x->op, x->dtype, srcs, 2, x->scratch, s->recv_count));
            if (!x->failed) {
                mca_coll_strata_xchg_copy(x, block, x->scratch, s->recv_count);
            }
        }
    }
    x->step++;
}

void mca_coll_strata_xchg_start(mca_coll_strata_xchg_t *x)
{
    ompi_datatype_type_extent(x->dtype, &x->extent);
    x->step = 0;
    x->sched.n = ompi_comm_size(x->comm);
    x->sched.count = x->count;
    x->nsteps = mca_coll_strata_sched_nsteps(&x->sched);
    if (NULL == x->wire) {
        x->wire = &mca_coll_strata_wire_pml;
    }
    x->reqs[0] = x->reqs[1] = NULL;
    x->send_pending = false;
    x->node_busy = false;
    x->post_next = false;
    memset(x->signal, 0, sizeof(x->signal));
    if (x->nsteps > 0) {
        mca_coll_strata_xchg_post(x);
    }
}

/* Whether the node-area work queued by the exchange is done (a failure to
 * tell counts as done, and fails the exchange). */
static bool mca_coll_strata_xchg_node_done(mca_coll_strata_xchg_t *x)
{
    bool done = false;

    if (!x->node_busy) {
        return true;
    }
    if (OMPI_SUCCESS != x->node->ops->completed(x->node, &done)) {
        mca_coll_strata_xchg_fail(x);
        done = true;
    }
    x->node_busy = !done;
    return done;
}

/* Advance as far as completed messages allow; never blocks, never stops
 * early: a failure is in x->failed. */
void mca_coll_strata_xchg_progress(mca_coll_strata_xchg_t *x, bool *done)
{
    while (mca_coll_strata_xchg_node_done(x) && x->step < x->nsteps) {
        size_t received = 0;
        int rc = OMPI_SUCCESS;

        if (x->post_next) {
            x->post_next = false;
            mca_coll_strata_xchg_post(x);
            continue; /* its staging copy first, if any */
        }
        if (x->send_pending) {
            mca_coll_strata_xchg_send(x);
            if (x->send_pending) {
                break;
            }
        }
        if (!x->wire->test(x, &rc, &received)) {
            break;
        }
        mca_coll_strata_xchg_check(x, rc, received);
        mca_coll_strata_xchg_finish_step(x);
        /* the next step's receive may land where the fold reads: after it */
        x->post_next = x->step < x->nsteps;
    }
    *done = (x->step >= x->nsteps) && !x->node_busy;
}
