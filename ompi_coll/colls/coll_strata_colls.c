/*
 * coll/strata blocking collectives other than MPI_Allreduce.
 *
 * Each entry classifies its buffers first, once (staging's
 * mca_coll_strata_bufs_t: what every layer below reads).  If none is
 * device memory, the saved module below strata runs the call as it would have
 * without strata (a process that never loaded a CUDA driver pays one
 * check).  Otherwise the call is staged (staging/coll_strata_stage.c): what it
 * touches is described (staging/coll_strata_describe.c), device regions are copied
 * to pinned host memory, the saved module runs on the host copies, results
 * are copied back.  Reductions, scans and broadcasts above the staging
 * bound run in pieces on every rank (mca_coll_strata_elementwise).
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include "ompi/constants.h"

#define MCA_COLL_STRATA_MOD(_m) ((mca_coll_strata_module_t *)(_m))

typedef struct mca_coll_strata_elem_args_t {
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    int root;
} mca_coll_strata_elem_args_t;

/* Host buffers or their staged copies: strata's pipeline where it may run
 * (coll_strata_reductions.c), the same choice on every rank. */
static int mca_coll_strata_reduce_run(mca_coll_strata_module_t *m, struct ompi_communicator_t *comm,
                                      const void *s, void *r, int n, void *arg)
{
    mca_coll_strata_elem_args_t *a = arg;

    return mca_coll_strata_reduce_host(m, s, r, n, a->dtype, a->op, a->root, comm);
}

static int mca_coll_strata_scan_run(mca_coll_strata_module_t *m, struct ompi_communicator_t *comm,
                                    const void *s, void *r, int n, void *arg)
{
    mca_coll_strata_elem_args_t *a = arg;

    return MCA_COLL_STRATA_FALLBACK(m, scan, comm, s, r, n, a->dtype, a->op);
}

static int mca_coll_strata_exscan_run(mca_coll_strata_module_t *m, struct ompi_communicator_t *comm,
                                      const void *s, void *r, int n, void *arg)
{
    mca_coll_strata_elem_args_t *a = arg;

    return MCA_COLL_STRATA_FALLBACK(m, exscan, comm, s, r, n, a->dtype, a->op);
}

/* Host buffers or their staged copies: strata's pipeline where it may run
 * (coll_strata_copies.c), the same choice on every rank. */
static int mca_coll_strata_bcast_run(mca_coll_strata_module_t *m, struct ompi_communicator_t *comm,
                                     const void *s, void *r, int n, void *arg)
{
    mca_coll_strata_elem_args_t *a = arg;

    return mca_coll_strata_bcast_host(m, r, n, a->dtype, a->root, comm);
}

int mca_coll_strata_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_elem_args_t a = {dtype, op, root};
    int rc = mca_coll_strata_settings_ready(m, comm);
    mca_coll_strata_bufs_t b;
    bool ran;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    rc = mca_coll_strata_reduce_native(m, &b, sbuf, rbuf, count, dtype, op, root, comm, &ran);
    if (ran || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b) &&
                    !mca_coll_strata_elem_big(m, count, dtype))) {
        return mca_coll_strata_reduce_host(m, sbuf, rbuf, count, dtype, op, root, comm);
    }
    return mca_coll_strata_elementwise(m, comm, MCA_COLL_STRATA_ELEM_REDUCE, root, "MPI_Reduce", &b,
                                       sbuf, rbuf, count, dtype, true, mca_coll_strata_reduce_run,
                                       &a);
}

int mca_coll_strata_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_elem_args_t a = {dtype, op, -1};
    int rc = mca_coll_strata_settings_ready(m, comm);
    mca_coll_strata_bufs_t b;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b) &&
                    !mca_coll_strata_elem_big(m, count, dtype))) {
        MCA_COLL_STRATA_TRACE("MPI_Scan", comm, &b, "module below strata");
        return MCA_COLL_STRATA_FALLBACK(m, scan, comm, sbuf, rbuf, count, dtype, op);
    }
    return mca_coll_strata_elementwise(m, comm, MCA_COLL_STRATA_ELEM_REDUCE, -1, "MPI_Scan", &b,
                                       sbuf, rbuf, count, dtype, true, mca_coll_strata_scan_run,
                                       &a);
}

int mca_coll_strata_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_elem_args_t a = {dtype, op, -1};
    int rc = mca_coll_strata_settings_ready(m, comm);
    mca_coll_strata_bufs_t b;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b) &&
                    !mca_coll_strata_elem_big(m, count, dtype))) {
        MCA_COLL_STRATA_TRACE("MPI_Exscan", comm, &b, "module below strata");
        return MCA_COLL_STRATA_FALLBACK(m, exscan, comm, sbuf, rbuf, count, dtype, op);
    }
    return mca_coll_strata_elementwise(m, comm, MCA_COLL_STRATA_ELEM_EXSCAN, -1, "MPI_Exscan", &b,
                                       sbuf, rbuf, count, dtype, true, mca_coll_strata_exscan_run,
                                       &a);
}

int mca_coll_strata_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_elem_args_t a = {dtype, NULL, root};
    int rc = mca_coll_strata_settings_ready(m, comm);
    mca_coll_strata_bufs_t b;
    bool ran;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    /* one buffer, both ends of the call */
    mca_coll_strata_bufs_classify(&b, buf, buf);
    rc = mca_coll_strata_bcast_native(m, &b, buf, count, dtype, root, comm, &ran);
    if (ran || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b) &&
                    !mca_coll_strata_elem_big(m, count, dtype))) {
        return mca_coll_strata_bcast_host(m, buf, count, dtype, root, comm);
    }
    /* Ranks may describe one message with different datatypes; cutting it
     * at element boundaries is the same cut everywhere only for predefined
     * ones (every rank must agree, see mca_coll_strata_stage_pieces). */
    return mca_coll_strata_elementwise(m, comm, MCA_COLL_STRATA_ELEM_BCAST, root, "MPI_Bcast", &b,
                                       buf, buf, count, dtype, ompi_datatype_is_predefined(dtype),
                                       mca_coll_strata_bcast_run, &a);
}

/* MPI_Reduce_local reaches the coll framework through MPI_COMM_SELF; it
 * has no communicator of its own and nothing below it calls back. */
int mca_coll_strata_reduce_local(const void *inbuf, void *inoutbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    struct ompi_communicator_t *comm = &ompi_mpi_comm_self.comm;
    mca_coll_strata_stage_t st;
    mca_coll_strata_bufs_t b;
    ptrdiff_t lo, hi;

    mca_coll_strata_bufs_classify(&b, inbuf, inoutbuf);
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b))) {
        return m->fallback.reduce_local(inbuf, inoutbuf, count, dtype, op,
                                        m->fallback.reduce_local_module);
    }
    mca_coll_strata_stage_init(&st, m, "MPI_Reduce_local", &b);
    mca_coll_strata_region((size_t)count, dtype, &lo, &hi);
    mca_coll_strata_stage_add(&st, MCA_COLL_STRATA_STAGE_SEND, inbuf, lo, hi,
                              MCA_COLL_STRATA_STAGE_IN);
    mca_coll_strata_stage_add(&st, MCA_COLL_STRATA_STAGE_RECV, inoutbuf, lo, hi,
                              MCA_COLL_STRATA_STAGE_IN | MCA_COLL_STRATA_STAGE_OUT);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           m->fallback.reduce_local(MCA_COLL_STRATA_S(&st, inbuf),
                                                    MCA_COLL_STRATA_R(&st, inoutbuf), count, dtype,
                                                    op, m->fallback.reduce_local_module));
}

/* ---- the others: staged whole ------------------------------------------ */

int mca_coll_strata_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    mca_coll_strata_bufs_t b;
    bool ran;
    int rc = mca_coll_strata_settings_ready(m, comm);

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    rc = mca_coll_strata_allgather_native(m, &b, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                          &ran);
    if (ran || OMPI_SUCCESS != rc) {
        return rc;
    }
    /* host buffers, or their staged copies: the pipeline where it applies */
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b))) {
        return mca_coll_strata_allgather_host(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    }
    mca_coll_strata_stage_init(&st, m, "MPI_Allgather", &b);
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype,
                                    true);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           mca_coll_strata_allgather_host(m, MCA_COLL_STRATA_S(&st, sbuf), scount,
                                                          sdtype, MCA_COLL_STRATA_R(&st, rbuf),
                                                          rcount, rdtype, comm));
}

int mca_coll_strata_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *displs,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Allgatherv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, allgatherv, comm, sbuf, scount, sdtype,
                                                      rbuf, rcounts, displs, rdtype));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype,
                                    true);
    MCA_COLL_STRATA_STAGED(
        &st, comm,
        MCA_COLL_STRATA_FALLBACK(m, allgatherv, comm, MCA_COLL_STRATA_S(&st, sbuf), scount, sdtype,
                                 MCA_COLL_STRATA_R(&st, rbuf), rcounts, displs, rdtype));
}

int mca_coll_strata_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                           int rcount, struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Gather", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, gather, comm, sbuf, scount, sdtype, rbuf,
                                                      rcount, rdtype, root));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype,
                                    false);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           MCA_COLL_STRATA_FALLBACK(m, gather, comm, MCA_COLL_STRATA_S(&st, sbuf),
                                                    scount, sdtype, MCA_COLL_STRATA_R(&st, rbuf),
                                                    rcount, rdtype, root));
}

int mca_coll_strata_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Gatherv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, gatherv, comm, sbuf, scount, sdtype, rbuf,
                                                      rcounts, displs, rdtype, root));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype,
                                    false);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           MCA_COLL_STRATA_FALLBACK(m, gatherv, comm, MCA_COLL_STRATA_S(&st, sbuf),
                                                    scount, sdtype, MCA_COLL_STRATA_R(&st, rbuf),
                                                    rcounts, displs, rdtype, root));
}

int mca_coll_strata_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Scatter", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, scatter, comm, sbuf, scount, sdtype, rbuf,
                                                      rcount, rdtype, root));
    mca_coll_strata_describe_scatter(&st, &c, sbuf, NULL, NULL, scount, sdtype, rbuf, rcount,
                                     rdtype);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           MCA_COLL_STRATA_FALLBACK(m, scatter, comm, MCA_COLL_STRATA_S(&st, sbuf),
                                                    scount, sdtype, MCA_COLL_STRATA_R(&st, rbuf),
                                                    rcount, rdtype, root));
}

int mca_coll_strata_scatterv(const void *sbuf, const int *scounts, const int *displs,
                             struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Scatterv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, scatterv, comm, sbuf, scounts, displs,
                                                      sdtype, rbuf, rcount, rdtype, root));
    mca_coll_strata_describe_scatter(&st, &c, sbuf, scounts, displs, 0, sdtype, rbuf, rcount,
                                     rdtype);
    MCA_COLL_STRATA_STAGED(
        &st, comm,
        MCA_COLL_STRATA_FALLBACK(m, scatterv, comm, MCA_COLL_STRATA_S(&st, sbuf), scounts, displs,
                                 sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcount, rdtype, root));
}

int mca_coll_strata_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(
        &st, m, "MPI_Alltoall", comm, sbuf, rbuf,
        MCA_COLL_STRATA_FALLBACK(m, alltoall, comm, sbuf, scount, sdtype, rbuf, rcount, rdtype));
    mca_coll_strata_describe_alltoall(&st, &c, sbuf, NULL, NULL, scount, sdtype, rbuf, NULL, NULL,
                                      rcount, rdtype);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           MCA_COLL_STRATA_FALLBACK(m, alltoall, comm, MCA_COLL_STRATA_S(&st, sbuf),
                                                    scount, sdtype, MCA_COLL_STRATA_R(&st, rbuf),
                                                    rcount, rdtype));
}

int mca_coll_strata_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdispls, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Alltoallv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, alltoallv, comm, sbuf, scounts, sdispls,
                                                      sdtype, rbuf, rcounts, rdispls, rdtype));
    mca_coll_strata_describe_alltoall(&st, &c, sbuf, scounts, sdispls, 0, sdtype, rbuf, rcounts,
                                      rdispls, 0, rdtype);
    MCA_COLL_STRATA_STAGED(
        &st, comm,
        MCA_COLL_STRATA_FALLBACK(m, alltoallv, comm, MCA_COLL_STRATA_S(&st, sbuf), scounts, sdispls,
                                 sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcounts, rdispls, rdtype));
}

int mca_coll_strata_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *const *sdtypes, void *rbuf,
                              const int *rcounts, const int *rdispls,
                              struct ompi_datatype_t *const *rdtypes,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Alltoallw", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_FALLBACK(m, alltoallw, comm, sbuf, scounts, sdispls,
                                                      sdtypes, rbuf, rcounts, rdispls, rdtypes));
    mca_coll_strata_describe_alltoallw(&st, &c, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                                       rdispls, rdtypes);
    MCA_COLL_STRATA_STAGED(
        &st, comm,
        MCA_COLL_STRATA_FALLBACK(m, alltoallw, comm, MCA_COLL_STRATA_S(&st, sbuf), scounts, sdispls,
                                 sdtypes, MCA_COLL_STRATA_R(&st, rbuf), rcounts, rdispls, rdtypes));
}

int mca_coll_strata_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    mca_coll_strata_bufs_t b;
    int rc = mca_coll_strata_settings_ready(m, comm);
    bool ran;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    rc = mca_coll_strata_reduce_scatter_native(m, &b, sbuf, rbuf, rcounts, dtype, op, comm, &ran);
    if (ran || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b))) {
        return mca_coll_strata_reduce_scatter_host(m, sbuf, rbuf, rcounts, dtype, op, comm);
    }
    mca_coll_strata_stage_init(&st, m, "MPI_Reduce_scatter", &b);
    mca_coll_strata_describe_reduce_scatter(&st, &c, sbuf, rbuf, rcounts, 0, dtype);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           mca_coll_strata_reduce_scatter_host(m, MCA_COLL_STRATA_S(&st, sbuf),
                                                               MCA_COLL_STRATA_R(&st, rbuf),
                                                               rcounts, dtype, op, comm));
}

int mca_coll_strata_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_MOD(module);
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    mca_coll_strata_bufs_t b;
    int rc = mca_coll_strata_settings_ready(m, comm);
    bool ran;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_coll_strata_bufs_classify(&b, sbuf, rbuf);
    rc = mca_coll_strata_reduce_scatter_block_native(m, &b, sbuf, rbuf, rcount, dtype, op, comm,
                                                     &ran);
    if (ran || OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OPAL_LIKELY(!mca_coll_strata_bufs_device(&b))) {
        return mca_coll_strata_reduce_scatter_block_host(m, sbuf, rbuf, rcount, dtype, op, comm);
    }
    mca_coll_strata_stage_init(&st, m, "MPI_Reduce_scatter_block", &b);
    mca_coll_strata_describe_reduce_scatter(&st, &c, sbuf, rbuf, NULL, rcount, dtype);
    MCA_COLL_STRATA_STAGED(&st, comm,
                           mca_coll_strata_reduce_scatter_block_host(
                               m, MCA_COLL_STRATA_S(&st, sbuf), MCA_COLL_STRATA_R(&st, rbuf),
                               rcount, dtype, op, comm));
}
