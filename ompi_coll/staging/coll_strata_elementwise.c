/*
 * coll/strata elementwise collectives on device buffers (reductions, scans,
 * broadcast; see coll_strata_stage.h): staged whole where the call fits the
 * staging bound, else cut into pieces at element boundaries.  Every rank
 * cuts the same pieces, whichever of them stage: a rank whose buffers are
 * host memory runs the same sequence of collectives as one that copies, so
 * the pieces are agreed (mca_coll_strata_stage_pieces) by every rank above
 * the bound.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_stage_internal.h"

#include "ompi/constants.h"

bool mca_coll_strata_elem_big(const mca_coll_strata_module_t *module, int count,
                              struct ompi_datatype_t *dtype)
{
    size_t size;

    ompi_datatype_type_size(dtype, &size);
    return (size_t)count * size > module->settings.stage_max / 2;
}

int mca_coll_strata_elementwise(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                mca_coll_strata_elem_t kind, int root, const char *coll,
                                const mca_coll_strata_bufs_t *bufs, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype, bool can_split,
                                mca_coll_strata_elem_fn_t run, void *arg)
{
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    bool stages = mca_coll_strata_bufs_device(bufs);
    int piece, first = 0, rc, result = MPI_SUCCESS;
    ptrdiff_t extent;

    rc = mca_coll_strata_stage_pieces(module, comm, count, dtype, stages, can_split, &piece);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (piece < count) {
        MCA_COLL_STRATA_VERBOSE(20, "%s %s: %d elements in pieces of %d (coll_strata_stage_max)",
                                coll, comm->c_name, count, piece);
    }
    ompi_datatype_type_extent(dtype, &extent);
    do {
        int n = (count - first < piece) ? count - first : piece;
        ptrdiff_t off = (ptrdiff_t)first * extent;
        const char *s = (MPI_IN_PLACE == sbuf || NULL == sbuf) ? sbuf : (const char *)sbuf + off;
        char *r = (NULL == rbuf) ? NULL : (char *)rbuf + off;
        mca_coll_strata_stage_t st;

        mca_coll_strata_stage_init(&st, module, coll, bufs);
        if (stages) {
            mca_coll_strata_describe_elementwise(&st, &c, kind, s, r, n, dtype);
            rc = mca_coll_strata_stage_in(&st);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
        MCA_COLL_STRATA_TRACE(coll, comm, bufs, stages ? "staged" : "module below strata");
        rc = run(module, comm, MCA_COLL_STRATA_S(&st, s), MCA_COLL_STRATA_R(&st, r), n, arg);
        rc = mca_coll_strata_stage_out(&st, rc);
        if (MPI_SUCCESS != rc && MPI_SUCCESS == result) {
            result = rc;
        }
        first += n;
    } while (first < count);
    return result;
}

int mca_coll_strata_stage_pieces(mca_coll_strata_module_t *module, struct ompi_communicator_t *comm,
                                 int count, struct ompi_datatype_t *dtype, bool stages,
                                 bool can_split, int *piece)
{
    /* two buffers (send and receive) share the bound */
    long limit = (long)(module->settings.stage_max / 2);
    ptrdiff_t lb, extent;
    size_t size;
    long mine[7], all[7];
    int rc;

    *piece = count;
    /* The type signature's size is the same on every rank, so is this test. */
    if (!mca_coll_strata_elem_big(module, count, dtype)) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    /* Cut only if some rank stages, every rank can cut at element
     * boundaries, and every rank's elements are the same bytes (ranks may
     * describe a broadcast with different datatypes); the smallest bound
     * wins.  MAX of x and of -x gives both the largest and the smallest. */
    mine[0] = stages ? 1 : 0;
    mine[1] = (can_split && extent > 0) ? 0 : 1;
    mine[2] = (long)size;
    mine[3] = -(long)size;
    mine[4] = (long)extent;
    mine[5] = -(long)extent;
    mine[6] = -limit;
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, mine, all, 7, MPI_LONG, MPI_MAX);
    if (OMPI_SUCCESS != rc || !all[0]) {
        return rc;
    }
    if (all[1] || all[2] != -all[3] || all[4] != -all[5]) {
        MCA_COLL_STRATA_VERBOSE(20,
                                "%s: ranks describe the data with different datatypes: "
                                "staged whole",
                                comm->c_name);
        return OMPI_SUCCESS;
    }
    {
        long elems = -all[6] / (long)extent;

        *piece = (elems >= count) ? count : (elems < 1) ? 1 : (int)elems;
    }
    return OMPI_SUCCESS;
}
