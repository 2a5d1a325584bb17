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
static int mca_coll_strata_ring_finish_step(mca_coll_strata_ring_t *ring)
{
    int n = ompi_comm_size(ring->comm), r = ompi_comm_rank(ring->comm), rc = OMPI_SUCCESS;
    mca_coll_strata_node_t *node = ring->node;
    char *block;
    size_t count;

    if (ring->step < n - 1) {
        const void *srcs[2];

        mca_coll_strata_ring_block(ring, r - ring->step - 1, &block, &count);
        srcs[0] = ring->scratch;
        srcs[1] = block;
        rc = node->ops->reduce(node, ring->op, ring->dtype, srcs, 2, block, count);
        if (OMPI_SUCCESS == rc) {
            rc = node->ops->complete(node);
        }
    }
    ring->posted = false;
    ring->step++;
    return rc;
}

int mca_coll_strata_ring_start(mca_coll_strata_ring_t *ring)
{
    ompi_datatype_type_extent(ring->dtype, &ring->extent);
    ring->step = 0;
    ring->posted = false;
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
        rc = mca_coll_strata_ring_finish_step(ring);
        if (OMPI_SUCCESS == rc && ring->step < last) {
            rc = mca_coll_strata_ring_post(ring);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    *done = (ring->step >= last);
    return OMPI_SUCCESS;
}
