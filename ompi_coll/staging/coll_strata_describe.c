/*
 * coll/strata: what each collective touches on this rank (see
 * coll_strata_stage.h).  MPI's rules, written once for the blocking and the
 * nonblocking entries:
 *   - a receive buffer the call may not write completely (gaps between
 *     v-blocks, holes in derived types) is copied in as well, so that its
 *     gaps come back unchanged;
 *   - with MPI_IN_PLACE the receive buffer is also the input;
 *   - arguments that are not significant on this rank (a non-root's receive
 *     buffer of a gather, ...) are not touched at all.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_stage_internal.h"

/* bytes that count elements of each given type write (their sizes) */
static size_t mca_coll_strata_bytes(size_t count, struct ompi_datatype_t *dtype)
{
    size_t size;

    ompi_datatype_type_size(dtype, &size);
    return count * size;
}

static size_t mca_coll_strata_bytes_v(int n, const int *counts, struct ompi_datatype_t *dtype)
{
    size_t total = 0;

    for (int i = 0; i < n; ++i) {
        total += (size_t)counts[i];
    }
    return mca_coll_strata_bytes(total, dtype);
}

/* Add a receive region: out, plus in when in place or not written whole. */
static void mca_coll_strata_describe_recv(mca_coll_strata_stage_t *st, const void *rbuf,
                                          ptrdiff_t lo, ptrdiff_t hi, size_t written, bool in_place)
{
    int dir = MCA_COLL_STRATA_STAGE_OUT;

    if (in_place || !mca_coll_strata_region_dense(written, lo, hi)) {
        dir |= MCA_COLL_STRATA_STAGE_IN;
    }
    mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_RECV, rbuf, lo, hi, dir);
}

static void mca_coll_strata_describe_send(mca_coll_strata_stage_t *st, const void *sbuf,
                                          size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t lo, hi;

    if (MPI_IN_PLACE == sbuf) {
        return;
    }
    mca_coll_strata_region(count, dtype, &lo, &hi);
    mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_SEND, sbuf, lo, hi,
                              MCA_COLL_STRATA_STAGE_IN);
}

void mca_coll_strata_describe_gather(mca_coll_strata_stage_t *st, const mca_coll_strata_call_t *c,
                                     const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                     void *rbuf, const int *rcounts, const int *displs, int rcount,
                                     struct ompi_datatype_t *rdtype, bool all)
{
    bool receives = all || c->rank == c->root;
    ptrdiff_t lo, hi;
    size_t written;

    /* at a gather's root, MPI_IN_PLACE means its own block is in place */
    mca_coll_strata_describe_send(st, sbuf, (size_t)scount, sdtype);
    if (!receives) {
        return;
    }
    if (NULL != rcounts) {
        mca_coll_strata_region_v(c->size, rcounts, displs, rdtype, &lo, &hi);
        written = mca_coll_strata_bytes_v(c->size, rcounts, rdtype);
    } else {
        mca_coll_strata_region((size_t)rcount * (size_t)c->size, rdtype, &lo, &hi);
        written = mca_coll_strata_bytes((size_t)rcount * (size_t)c->size, rdtype);
    }
    mca_coll_strata_describe_recv(st, rbuf, lo, hi, written, MPI_IN_PLACE == sbuf);
}

void mca_coll_strata_describe_scatter(mca_coll_strata_stage_t *st, const mca_coll_strata_call_t *c,
                                      const void *sbuf, const int *scounts, const int *displs,
                                      int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                      int rcount, struct ompi_datatype_t *rdtype)
{
    ptrdiff_t lo, hi;

    if (c->rank == c->root) {
        if (NULL != scounts) {
            mca_coll_strata_region_v(c->size, scounts, displs, sdtype, &lo, &hi);
        } else {
            mca_coll_strata_region((size_t)scount * (size_t)c->size, sdtype, &lo, &hi);
        }
        mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_SEND, sbuf, lo, hi,
                                  MCA_COLL_STRATA_STAGE_IN);
    }
    /* at the root, MPI_IN_PLACE as the receive buffer: nothing to receive */
    if (MPI_IN_PLACE != rbuf) {
        mca_coll_strata_region((size_t)rcount, rdtype, &lo, &hi);
        mca_coll_strata_describe_recv(st, rbuf, lo, hi,
                                      mca_coll_strata_bytes((size_t)rcount, rdtype), false);
    }
}

void mca_coll_strata_describe_alltoall(mca_coll_strata_stage_t *st, const mca_coll_strata_call_t *c,
                                       const void *sbuf, const int *scounts, const int *sdispls,
                                       int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                       const int *rcounts, const int *rdispls, int rcount,
                                       struct ompi_datatype_t *rdtype)
{
    size_t n = (size_t)c->size;
    ptrdiff_t lo, hi;
    size_t written;

    if (MPI_IN_PLACE != sbuf) {
        if (NULL != scounts) {
            mca_coll_strata_region_v(c->size, scounts, sdispls, sdtype, &lo, &hi);
        } else {
            mca_coll_strata_region((size_t)scount * n, sdtype, &lo, &hi);
        }
        mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_SEND, sbuf, lo, hi,
                                  MCA_COLL_STRATA_STAGE_IN);
    }
    if (NULL != rcounts) {
        mca_coll_strata_region_v(c->size, rcounts, rdispls, rdtype, &lo, &hi);
        written = mca_coll_strata_bytes_v(c->size, rcounts, rdtype);
    } else {
        mca_coll_strata_region((size_t)rcount * n, rdtype, &lo, &hi);
        written = mca_coll_strata_bytes((size_t)rcount * n, rdtype);
    }
    mca_coll_strata_describe_recv(st, rbuf, lo, hi, written, MPI_IN_PLACE == sbuf);
}

void mca_coll_strata_describe_alltoallw(mca_coll_strata_stage_t *st,
                                        const mca_coll_strata_call_t *c, const void *sbuf,
                                        const int *scounts, const int *sdispls,
                                        struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                        const int *rcounts, const int *rdispls,
                                        struct ompi_datatype_t *const *rdtypes)
{
    ptrdiff_t lo, hi;
    size_t written = 0;

    if (MPI_IN_PLACE != sbuf) {
        mca_coll_strata_region_w(c->size, scounts, sdispls, sdtypes, &lo, &hi);
        mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_SEND, sbuf, lo, hi,
                                  MCA_COLL_STRATA_STAGE_IN);
    }
    mca_coll_strata_region_w(c->size, rcounts, rdispls, rdtypes, &lo, &hi);
    for (int i = 0; i < c->size; ++i) {
        written += mca_coll_strata_bytes((size_t)rcounts[i], rdtypes[i]);
    }
    mca_coll_strata_describe_recv(st, rbuf, lo, hi, written, MPI_IN_PLACE == sbuf);
}

void mca_coll_strata_describe_elementwise(mca_coll_strata_stage_t *st,
                                          const mca_coll_strata_call_t *c,
                                          mca_coll_strata_elem_t kind, const void *sbuf, void *rbuf,
                                          int count, struct ompi_datatype_t *dtype)
{
    size_t written = mca_coll_strata_bytes((size_t)count, dtype);
    ptrdiff_t lo, hi;

    mca_coll_strata_region((size_t)count, dtype, &lo, &hi);
    if (MCA_COLL_STRATA_ELEM_BCAST == kind) {
        if (c->rank == c->root) {
            mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_RECV, rbuf, lo, hi,
                                      MCA_COLL_STRATA_STAGE_IN);
        } else {
            mca_coll_strata_describe_recv(st, rbuf, lo, hi, written, false);
        }
        return;
    }
    mca_coll_strata_describe_send(st, sbuf, (size_t)count, dtype);
    if (c->root >= 0 && c->rank != c->root) {
        return; /* a reduce's receive buffer matters at the root only */
    }
    /* exscan leaves rank 0's buffer undefined: it comes back as it was */
    mca_coll_strata_describe_recv(st, rbuf, lo, hi, written,
                                  MPI_IN_PLACE == sbuf ||
                                      (MCA_COLL_STRATA_ELEM_EXSCAN == kind && 0 == c->rank));
}

void mca_coll_strata_describe_reduce_scatter(mca_coll_strata_stage_t *st,
                                             const mca_coll_strata_call_t *c, const void *sbuf,
                                             void *rbuf, const int *rcounts, int rcount,
                                             struct ompi_datatype_t *dtype)
{
    size_t total = 0, mine = (NULL != rcounts) ? (size_t)rcounts[c->rank] : (size_t)rcount;
    ptrdiff_t lo, hi;

    for (int i = 0; i < c->size; ++i) {
        total += (NULL != rcounts) ? (size_t)rcounts[i] : (size_t)rcount;
    }
    if (MPI_IN_PLACE == sbuf) {
        /* the whole input is in rbuf; this rank's result lands at its start */
        mca_coll_strata_region(total, dtype, &lo, &hi);
        mca_coll_strata_stage_add(st, MCA_COLL_STRATA_STAGE_RECV, rbuf, lo, hi,
                                  MCA_COLL_STRATA_STAGE_IN | MCA_COLL_STRATA_STAGE_OUT);
        return;
    }
    mca_coll_strata_describe_send(st, sbuf, total, dtype);
    mca_coll_strata_region(mine, dtype, &lo, &hi);
    mca_coll_strata_describe_recv(st, rbuf, lo, hi, mca_coll_strata_bytes(mine, dtype), false);
}
