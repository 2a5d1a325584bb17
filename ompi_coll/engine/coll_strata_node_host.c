/*
 * coll/strata node area of host data: the slots of the node's shared-memory
 * segment, memcpy, and Open MPI's own op functions, so every predefined op
 * and datatype Open MPI reduces (and every user-defined op) strata reduces
 * identically.  Everything here is done when it returns: complete() has
 * nothing to wait for.
 *
 * The op functions are reached through the coll framework's reduce_local
 * of the module below strata (the engine's `below`, filled by the module)
 * rather than ompi/op/op.h: Debian's Open MPI development headers omit a
 * Fortran header op.h includes, and the coll framework reaches the same
 * functions (never through the MPI profiling layer, so tools do not see
 * strata's internal reductions).
 */
#include "coll_strata_engine_internal.h"

#include <limits.h>
#include <string.h>

#include "ompi/constants.h"

static char *mca_coll_strata_node_host_input(const mca_coll_strata_node_t *node, int slot, int r)
{
    return mca_coll_strata_shm_input(node->shm, slot, r);
}

static char *mca_coll_strata_node_host_result(const mca_coll_strata_node_t *node, int slot)
{
    return mca_coll_strata_shm_result(node->shm, slot);
}

static int mca_coll_strata_node_host_copy(mca_coll_strata_node_t *node, void *dst, const void *src,
                                          size_t bytes)
{
    memcpy(dst, src, bytes);
    return OMPI_SUCCESS;
}

/* The engine whose host node area `node` is (it holds the op functions:
 * the module below strata's reduce_local). */
static mca_coll_strata_engine_t *mca_coll_strata_node_host_engine(mca_coll_strata_node_t *node)
{
    return (mca_coll_strata_engine_t *)((char *)node -
                                        offsetof(mca_coll_strata_engine_t, node_host));
}

/* dst = src op dst, in pieces MPI's int count can express */
static int mca_coll_strata_node_host_reduce_into(mca_coll_strata_engine_t *e, struct ompi_op_t *op,
                                                 const void *src, void *dst, size_t count,
                                                 struct ompi_datatype_t *dtype, ptrdiff_t extent)
{
    size_t done = 0;

    while (done < count) {
        size_t n = (count - done > INT_MAX) ? INT_MAX : count - done;
        size_t off = done * (size_t)extent;
        int rc = e->below->reduce_local(e->below_ctx, op, (const char *)src + off,
                                        (char *)dst + off, (int)n, dtype);

        if (MPI_SUCCESS != rc) {
            return rc;
        }
        done += n;
    }
    return OMPI_SUCCESS;
}

/* The order the header promises: dst = srcs[k-1], then srcs[i] op dst for
 * i = k-2 down to 0 -- for two inputs, a op b as MPI writes it. */
static int mca_coll_strata_node_host_reduce(mca_coll_strata_node_t *node, struct ompi_op_t *op,
                                            struct ompi_datatype_t *dtype, const void *const *srcs,
                                            int k, void *dst, size_t count)
{
    mca_coll_strata_engine_t *e = mca_coll_strata_node_host_engine(node);
    ptrdiff_t extent;
    int rc = OMPI_SUCCESS;

    ompi_datatype_type_extent(dtype, &extent);
    if (dst != srcs[k - 1]) {
        memcpy(dst, srcs[k - 1], count * (size_t)extent);
    }
    for (int i = k - 2; i >= 0 && OMPI_SUCCESS == rc; --i) {
        rc = mca_coll_strata_node_host_reduce_into(e, op, srcs[i], dst, count, dtype, extent);
    }
    return rc;
}

static int mca_coll_strata_node_host_complete(mca_coll_strata_node_t *node)
{
    return OMPI_SUCCESS;
}

static int mca_coll_strata_node_host_completed(mca_coll_strata_node_t *node, bool *done)
{
    *done = true;
    return OMPI_SUCCESS;
}

const mca_coll_strata_node_ops_t mca_coll_strata_node_host_ops = {
    .name = "host",
    .input = mca_coll_strata_node_host_input,
    .result = mca_coll_strata_node_host_result,
    .copy = mca_coll_strata_node_host_copy,
    .reduce = mca_coll_strata_node_host_reduce,
    .complete = mca_coll_strata_node_host_complete,
    .completed = mca_coll_strata_node_host_completed,
};
