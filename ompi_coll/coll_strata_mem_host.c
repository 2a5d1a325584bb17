/*
 * coll/strata primitives for host memory: memcpy and Open MPI's own op
 * functions, so every predefined op and datatype Open MPI reduces (and every
 * user-defined op) strata reduces identically.
 *
 * The op functions are reached through PMPI_Reduce_local rather than
 * ompi/op/op.h: Debian's Open MPI development headers omit a Fortran header
 * op.h includes, and the public call reaches the same functions (through
 * PMPI, so profiling tools do not see strata's internal reductions).
 */
#include "coll_strata.h"

#include <limits.h>
#include <string.h>

/* dst = src op dst, in pieces MPI's int count can express */
static void mca_coll_strata_mem_host_reduce(struct ompi_op_t *op, const void *src, void *dst,
                                            size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t extent;
    size_t done = 0;

    ompi_datatype_type_extent(dtype, &extent);
    while (done < count) {
        size_t n = (count - done > INT_MAX) ? INT_MAX : count - done;
        size_t off = done * (size_t)extent;

        (void)PMPI_Reduce_local((const char *)src + off, (char *)dst + off, (int)n, dtype, op);
        done += n;
    }
}

static void mca_coll_strata_mem_host_copy(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

static void mca_coll_strata_mem_host_reduce2(struct ompi_op_t *op, const void *a,
                                             const void *b, void *dst, size_t count,
                                             struct ompi_datatype_t *dtype)
{
    ptrdiff_t extent;

    ompi_datatype_type_extent(dtype, &extent);
    memcpy(dst, b, count * (size_t)extent);
    mca_coll_strata_mem_host_reduce(op, a, dst, count, dtype);
}

const mca_coll_strata_mem_ops_t mca_coll_strata_mem_host_ops = {
    .name = "host",
    .copy = mca_coll_strata_mem_host_copy,
    .reduce2 = mca_coll_strata_mem_host_reduce2,
    .reduce = mca_coll_strata_mem_host_reduce,
};

const char *mca_coll_strata_op_name(struct ompi_op_t *op)
{
    static const struct {
        MPI_Op op;
        const char *name;
    } names[] = {
        {MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"},     {MPI_MIN, "MPI_MIN"},
        {MPI_MAX, "MPI_MAX"},   {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
        {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
        {MPI_BXOR, "MPI_BXOR"}, {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"},
        {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (names[i].op == op) {
            return names[i].name;
        }
    }
    return "user op";
}
