/*
 * coll/strata ring allreduce on a rail, non-blocking.
 *
 * The rail's n members each hold `count` elements at `buf`; the vector is cut
 * into n blocks.  Steps 0..n-2 reduce-scatter (send a block to the right,
 * receive the next one from the left into scratch, reduce it in), after
 * which member r holds block r+1 complete; steps n-1..2n-3 pass the complete
 * blocks around (received straight into `buf`).  Every member sends
 * 2(n-1)/n of the vector: the bandwidth optimum.
 *
 * The pipeline keeps one ring per chunk in flight and calls
 * mca_coll_strata_ring_progress between its shared-memory steps, so the
 * network phase of one chunk overlaps the node phases of the next.  Rings of
 * different chunks use different tags (one per shared-memory slot): a rail
 * member may post chunk c+1 before its neighbour finished chunk c, and the
 * tag keeps those messages apart.
 *
 * The blocks live in the node area (host shared memory, or device memory
 * on the GPU path).  Where the pml cannot carry device memory (ob1, or
 * pml/ucx without Strata's transports) the ring stages each message
 * through pinned host blocks of its slot: the block it sends is copied
 * out before the send is posted, a received block copied in before it is
 * reduced; the reduction itself stays with the node area (on the GPU).
 *
 * Failures never stop the ring: a member that cannot compute its part (a
 * failed copy or reduction, input a local rank could not provide, a
 * failed send or receive) goes on through every step, so that no member
 * on another node waits for a message that is not coming, but sends
 * each remaining step's message with another length than the receiver
 * expects (nothing where it expects elements, one element where it
 * expects none: truncated, nothing written).  The receiver takes that as
 * the news, marks its own result failed and passes the news on the same
 * way: after the ring every member whose result depends on the failure
 * knows, at no cost to rings that do not fail.
 */
#include "coll_strata.h"

#include <string.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/pml.h"

static void mca_coll_strata_ring_block(const mca_coll_strata_ring_t *ring, int block,
                                       char **ptr, size_t *count)
{
    int n = ompi_comm_size(ring->comm);
    size_t offset;

    block = ((block % n) + n) % n;
    mca_coll_strata_partition(ring->count, n, block, &offset, count);
    *ptr = ring->buf + offset * (size_t)ring->extent;
}

static void mca_coll_strata_ring_fail(mca_coll_strata_ring_t *ring)
{
    ring->failed = true;
}

/* Copy `count` elements between the node area and a staging block, and
 * wait for the copy: a message may be sent (a block reduced) only after. */
static void mca_coll_strata_ring_stage(mca_coll_strata_ring_t *ring, void *dst, const void *src,
                                       size_t count)
{
    mca_coll_strata_node_t *node = ring->node;
    int rc = node->ops->copy(node, dst, src, count * (size_t)ring->extent);

    if (OMPI_SUCCESS == rc) {
        rc = node->ops->complete(node);
    }
    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_ring_fail(ring);
    }
}

/* Post the send and receive of ring->step.  A request the pml refuses is
 * left NULL (complete) and the ring marked failed. */
static void mca_coll_strata_ring_post(mca_coll_strata_ring_t *ring)
{
    int n = ompi_comm_size(ring->comm), r = ompi_comm_rank(ring->comm);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    bool scatter = ring->step < n - 1;
    int s = scatter ? ring->step : ring->step - (n - 1);
    int send_block = scatter ? r - s : r + 1 - s;
    int recv_block = scatter ? r - s - 1 : r - s;
    char *send_ptr, *recv_ptr;
    size_t send_count;

    mca_coll_strata_ring_block(ring, send_block, &send_ptr, &send_count);
    mca_coll_strata_ring_block(ring, recv_block, &recv_ptr, &ring->recv_count);
    if (scatter) {
        recv_ptr = ring->scratch;
    }
    if (NULL != ring->stage_send && !ring->failed) {
        mca_coll_strata_ring_stage(ring, ring->stage_send, send_ptr, send_count);
        send_ptr = ring->stage_send;
    }
    if (NULL != ring->stage_recv) {
        recv_ptr = ring->stage_recv;
    }
    if (ring->failed) {
        /* the news (see the top): host memory, whatever the node area */
        send_count = (0 == send_count) ? 1 : 0;
        send_ptr = ring->signal;
    }
    if (OMPI_SUCCESS != MCA_PML_CALL(irecv(recv_ptr, ring->recv_count, ring->dtype, left,
                                           ring->tag, ring->comm, &ring->reqs[0]))) {
        ring->reqs[0] = MPI_REQUEST_NULL;
        mca_coll_strata_ring_fail(ring);
    }
    if (OMPI_SUCCESS != MCA_PML_CALL(isend(send_ptr, send_count, ring->dtype, right, ring->tag,
                                           MCA_PML_BASE_SEND_STANDARD, ring->comm,
                                           &ring->reqs[1]))) {
        ring->reqs[1] = MPI_REQUEST_NULL;
        mca_coll_strata_ring_fail(ring);
    }
}

/* Both requests of the step are complete: did the left neighbour's message
 * arrive whole?  A request that ended in error is not freed by the test
 * (MPI's rule for MPI_ERR_IN_STATUS): free it here. */
static void mca_coll_strata_ring_check(mca_coll_strata_ring_t *ring, int rc,
                                       const ompi_status_public_t *status)
{
    size_t size;

    if (OMPI_SUCCESS != rc) {
        for (int i = 0; i < 2; ++i) {
            if (MPI_REQUEST_NULL != ring->reqs[i]) {
                (void)ompi_request_free(&ring->reqs[i]);
            }
        }
        mca_coll_strata_ring_fail(ring);
        return;
    }
    /* _ucount: the bytes received (what MPI_Get_count reads) */
    ompi_datatype_type_size(ring->dtype, &size);
    if (status->_ucount != ring->recv_count * size) {
        mca_coll_strata_ring_fail(ring);
    }
}

/* The step's messages are done: fold the received block in (scatter steps):
 * block = received op block, as every member of the rail reduces it. */
static void mca_coll_strata_ring_finish_step(mca_coll_strata_ring_t *ring)
{
    int n = ompi_comm_size(ring->comm), r = ompi_comm_rank(ring->comm), rc;
    mca_coll_strata_node_t *node = ring->node;
    char *block;
    size_t count;

    if (ring->failed) {
        /* the result is wrong anyway: only the messages go on */
    } else if (ring->step < n - 1) {
        const void *srcs[2];

        mca_coll_strata_ring_block(ring, r - ring->step - 1, &block, &count);
        if (NULL != ring->stage_recv) {
            mca_coll_strata_ring_stage(ring, ring->scratch, ring->stage_recv, count);
        }
        srcs[0] = ring->scratch;
        srcs[1] = block;
        rc = node->ops->reduce(node, ring->op, ring->dtype, srcs, 2, block, count);
        if (OMPI_SUCCESS == rc) {
            rc = node->ops->complete(node);
        }
        if (OMPI_SUCCESS != rc) {
            mca_coll_strata_ring_fail(ring);
        }
    } else if (NULL != ring->stage_recv) {
        mca_coll_strata_ring_block(ring, r - (ring->step - (n - 1)), &block, &count);
        mca_coll_strata_ring_stage(ring, block, ring->stage_recv, count);
    }
    ring->step++;
}

void mca_coll_strata_ring_start(mca_coll_strata_ring_t *ring)
{
    ompi_datatype_type_extent(ring->dtype, &ring->extent);
    ring->step = 0;
    ring->reqs[0] = ring->reqs[1] = MPI_REQUEST_NULL;
    memset(ring->signal, 0, sizeof(ring->signal));
    if (ompi_comm_size(ring->comm) > 1) {
        mca_coll_strata_ring_post(ring);
    }
}

/* Advance as far as completed messages allow; never blocks, never stops
 * early: a failure is in ring->failed. */
void mca_coll_strata_ring_progress(mca_coll_strata_ring_t *ring, bool *done)
{
    int last = 2 * (ompi_comm_size(ring->comm) - 1);

    while (ring->step < last) {
        ompi_status_public_t status[2];
        int completed = 0, rc;

        rc = ompi_request_test_all(2, ring->reqs, &completed, status);
        if (!completed && OMPI_SUCCESS == rc) {
            break;
        }
        mca_coll_strata_ring_check(ring, rc, &status[0]);
        mca_coll_strata_ring_finish_step(ring);
        if (ring->step < last) {
            mca_coll_strata_ring_post(ring);
        }
    }
    *done = (ring->step >= last);
}
