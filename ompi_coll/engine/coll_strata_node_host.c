/*
 * coll/strata node area of host data: the slots of the node's shared-memory
 * segment, memcpy, and Open MPI's own op functions, so every predefined op
 * and datatype Open MPI reduces (and every user-defined op) strata reduces
 * identically.  Everything here is done when it returns: complete() has
 * nothing to wait for.
 *
 * The op functions are reached through the coll framework's reduce_local
 * (or PMPI_Reduce_local) rather than ompi/op/op.h: Debian's Open MPI
 * development headers omit a Fortran header op.h includes, and the coll
 * framework reaches the same functions (never through the MPI profiling
 * layer, so tools do not see strata's internal reductions).
 */
#include "../coll_strata.h"
#include "coll_strata_engine_internal.h"
#include "../colls/coll_strata_colls.h"

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

/*
 * dst = src op dst for n elements.  PMPI_Reduce_local checks its arguments,
 * retains the op and the datatype, and reaches the op through
 * MPI_COMM_SELF's reduce_local, which is strata's own (it stages device
 * buffers): for host data strata calls the function below its own
 * directly, the same op function without the detour.
 */
static int mca_coll_strata_node_host_reduce_local(struct ompi_op_t *op, const void *src, void *dst,
                                                  int n, struct ompi_datatype_t *dtype)
{
    mca_coll_base_comm_coll_t *self = ompi_mpi_comm_self.comm.c_coll;

    if (OPAL_LIKELY(mca_coll_strata_reduce_local == self->coll_reduce_local)) {
        mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)self->coll_reduce_local_module;

        return m->fallback.reduce_local(src, dst, n, dtype, op, m->fallback.reduce_local_module);
    }
    return PMPI_Reduce_local(src, dst, n, dtype, op);
}

/* dst = src op dst, in pieces MPI's int count can express */
static int mca_coll_strata_node_host_reduce_into(struct ompi_op_t *op, const void *src, void *dst,
                                                 size_t count, struct ompi_datatype_t *dtype,
                                                 ptrdiff_t extent)
{
    size_t done = 0;

    while (done < count) {
        size_t n = (count - done > INT_MAX) ? INT_MAX : count - done;
        size_t off = done * (size_t)extent;
        int rc = mca_coll_strata_node_host_reduce_local(op, (const char *)src + off,
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
    ptrdiff_t extent;
    int rc = OMPI_SUCCESS;

    ompi_datatype_type_extent(dtype, &extent);
    if (dst != srcs[k - 1]) {
        memcpy(dst, srcs[k - 1], count * (size_t)extent);
    }
    for (int i = k - 2; i >= 0 && OMPI_SUCCESS == rc; --i) {
        rc = mca_coll_strata_node_host_reduce_into(op, srcs[i], dst, count, dtype, extent);
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

/* The predefined op's name, or NULL for a user op. */
static const char *mca_coll_strata_op_predefined_name(struct ompi_op_t *op)
{
    static const struct {
        MPI_Op op;
        const char *name;
    } names[] = {
        {MPI_SUM, "MPI_SUM"},         {MPI_PROD, "MPI_PROD"},     {MPI_MIN, "MPI_MIN"},
        {MPI_MAX, "MPI_MAX"},         {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
        {MPI_LXOR, "MPI_LXOR"},       {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
        {MPI_BXOR, "MPI_BXOR"},       {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"},
        {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (names[i].op == op) {
            return names[i].name;
        }
    }
    return NULL;
}

const char *mca_coll_strata_op_name(struct ompi_op_t *op)
{
    const char *name = mca_coll_strata_op_predefined_name(op);

    return (NULL != name) ? name : "user op";
}

bool mca_coll_strata_op_is_predefined(struct ompi_op_t *op)
{
    return NULL != mca_coll_strata_op_predefined_name(op);
}
