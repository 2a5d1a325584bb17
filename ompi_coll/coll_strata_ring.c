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
 */
#include "coll_strata.h"

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

/* A node-area failure (a copy or a reduction on the GPU) is kept for the
 * end of the call and the ring goes on, so that the rail's other members
 * are not left waiting for this member's messages; only the pml's own
 * failures end the ring. */
static void mca_coll_strata_ring_note(mca_coll_strata_ring_t *ring, int rc)
{
    if (OMPI_SUCCESS != rc && OMPI_SUCCESS == ring->node_error) {
        ring->node_error = rc;
    }
}

/* Copy `count` elements between the node area and a staging block, and
 * wait for the copy: a message may be sent (a block reduced) only after. */
static void mca_coll_strata_ring_stage(mca_coll_strata_ring_t *ring, void *dst, const void *src,
                                       size_t count)
{
    mca_coll_strata_node_t *node = ring->node;
    int rc = node->ops->copy(node, dst, src, count * (size_t)ring->extent);

    mca_coll_strata_ring_note(ring, (OMPI_SUCCESS == rc) ? node->ops->complete(node) : rc);
}

/* Post the send and receive of ring->step. */
static int mca_coll_strata_ring_post(mca_coll_strata_ring_t *ring)
{
    int n = ompi_comm_size(ring->comm), r = ompi_comm_rank(ring->comm);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    bool scatter = ring->step < n - 1;
    int s = scatter ? ring->step : ring->step - (n - 1);
    int send_block = scatter ? r - s : r + 1 - s;
    int recv_block = scatter ? r - s - 1 : r - s;
    char *send_ptr, *recv_ptr;
    size_t send_count, recv_count;
    int rc;

    mca_coll_strata_ring_block(ring, send_block, &send_ptr, &send_count);
    mca_coll_strata_ring_block(ring, recv_block, &recv_ptr, &recv_count);
    if (scatter) {
        recv_ptr = ring->scratch;
    }
    if (NULL != ring->stage_send) {
        mca_coll_strata_ring_stage(ring, ring->stage_send, send_ptr, send_count);
        send_ptr = ring->stage_send;
        recv_ptr = ring->stage_recv;
    }
    rc = MCA_PML_CALL(irecv(recv_ptr, recv_count, ring->dtype, left, ring->tag, ring->comm,
                            &ring->reqs[0]));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(isend(send_ptr, send_count, ring->dtype, right, ring->tag,
                            MCA_PML_BASE_SEND_STANDARD, ring->comm, &ring->reqs[1]));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    ring->posted = true;
    return OMPI_SUCCESS;
}

/* The step's messages are done: fold the received block in (scatter steps):
 * block = received op block, as every member of the rail reduces it. */
static void mca_coll_strata_ring_finish_step(mca_coll_strata_ring_t *ring)
{
    int n = ompi_comm_size(ring->comm), r = ompi_comm_rank(ring->comm), rc;
    mca_coll_strata_node_t *node = ring->node;
    char *block;
    size_t count;

    if (ring->step < n - 1) {
        const void *srcs[2];

        mca_coll_strata_ring_block(ring, r - ring->step - 1, &block, &count);
        if (NULL != ring->stage_recv) {
            mca_coll_strata_ring_stage(ring, ring->scratch, ring->stage_recv, count);
        }
        srcs[0] = ring->scratch;
        srcs[1] = block;
        rc = node->ops->reduce(node, ring->op, ring->dtype, srcs, 2, block, count);
        mca_coll_strata_ring_note(ring, (OMPI_SUCCESS == rc) ? node->ops->complete(node) : rc);
    } else if (NULL != ring->stage_recv) {
        mca_coll_strata_ring_block(ring, r - (ring->step - (n - 1)), &block, &count);
        mca_coll_strata_ring_stage(ring, block, ring->stage_recv, count);
    }
    ring->posted = false;
    ring->step++;
}

int mca_coll_strata_ring_start(mca_coll_strata_ring_t *ring)
{
    ompi_datatype_type_extent(ring->dtype, &ring->extent);
    ring->step = 0;
    ring->posted = false;
    ring->node_error = OMPI_SUCCESS;
    ring->reqs[0] = ring->reqs[1] = MPI_REQUEST_NULL;
    return (ompi_comm_size(ring->comm) > 1) ? mca_coll_strata_ring_post(ring) : OMPI_SUCCESS;
}

/* Advance as far as completed messages allow; never blocks. */
int mca_coll_strata_ring_progress(mca_coll_strata_ring_t *ring, bool *done)
{
    int last = 2 * (ompi_comm_size(ring->comm) - 1);
    int completed, rc;

    while (ring->step < last) {
        rc = ompi_request_test_all(2, ring->reqs, &completed, MPI_STATUSES_IGNORE);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (!completed) {
            break;
        }
        mca_coll_strata_ring_finish_step(ring);
        rc = (ring->step < last) ? mca_coll_strata_ring_post(ring) : OMPI_SUCCESS;
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    *done = (ring->step >= last);
    return OMPI_SUCCESS;
}
