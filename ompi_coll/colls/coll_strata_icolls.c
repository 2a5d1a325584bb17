/*
 * coll/strata nonblocking collectives.
 *
 * The same test as the blocking entries: no device buffer, and the saved
 * module's nonblocking collective runs as it would without strata.  With
 * device buffers the call is described as its blocking twin is
 * (staging/coll_strata_describe.c), copied in (local work, no waiting for peers),
 * the saved module's nonblocking collective starts on the host copies, and
 * a staged request (staging/coll_strata_stage_req.c) copies out when it completes.
 * Nothing here waits for another rank, so a program that is correct with
 * host buffers cannot deadlock with device buffers.  Nonblocking calls are
 * staged whole: they are not cut into pieces.
 */
#include "../comm/coll_strata_module.h"
#include "coll_strata_colls.h"
#include "coll_strata_colls_internal.h"
#include "../staging/coll_strata_stage.h"

#include "ompi/constants.h"

int mca_coll_strata_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    bool ran = false;

    MCA_COLL_STRATA_UNSTAGED_TRY(&st, m, "MPI_Iallgather", comm, sbuf, rbuf, ran,
                                 mca_coll_strata_iallgather_host(m, NULL, sbuf, scount, sdtype,
                                                                 rbuf, rcount, rdtype, comm,
                                                                 request, &ran),
                                 MCA_COLL_STRATA_IFALLBACK(m, iallgather, comm, request, sbuf,
                                                           scount, sdtype, rbuf, rcount, rdtype));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype,
                                    true);
    MCA_COLL_STRATA_ISTAGED_TRY(
        &st, comm, request, ran,
        mca_coll_strata_iallgather_host(m, &st, MCA_COLL_STRATA_S(&st, sbuf), scount, sdtype,
                                        MCA_COLL_STRATA_R(&st, rbuf), rcount, rdtype, comm, request,
                                        &ran),
        MCA_COLL_STRATA_IFALLBACK(m, iallgather, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf), scount,
                                  sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcount, rdtype));
}

int mca_coll_strata_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, const int *rcounts, const int *displs,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Iallgatherv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, iallgatherv, comm, request, sbuf, scount,
                                                       sdtype, rbuf, rcounts, displs, rdtype));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype,
                                    true);
    MCA_COLL_STRATA_ISTAGED(&st, comm, request,
                            MCA_COLL_STRATA_IFALLBACK(
                                m, iallgatherv, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf), scount,
                                sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcounts, displs, rdtype));
}

int mca_coll_strata_iallreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    bool ran = false;

    MCA_COLL_STRATA_UNSTAGED_TRY(
        &st, m, "MPI_Iallreduce", comm, sbuf, rbuf, ran,
        mca_coll_strata_iallreduce_host(m, NULL, sbuf, rbuf, count, dtype, op, comm, request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, iallreduce, comm, request, sbuf, rbuf, count, dtype, op));
    mca_coll_strata_describe_elementwise(&st, &c, MCA_COLL_STRATA_ELEM_REDUCE, sbuf, rbuf, count,
                                         dtype);
    MCA_COLL_STRATA_ISTAGED_TRY(
        &st, comm, request, ran,
        mca_coll_strata_iallreduce_host(m, &st, MCA_COLL_STRATA_S(&st, sbuf),
                                        MCA_COLL_STRATA_R(&st, rbuf), count, dtype, op, comm,
                                        request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, iallreduce, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf),
                                  MCA_COLL_STRATA_R(&st, rbuf), count, dtype, op));
}

int mca_coll_strata_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Ialltoall", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, ialltoall, comm, request, sbuf, scount,
                                                       sdtype, rbuf, rcount, rdtype));
    mca_coll_strata_describe_alltoall(&st, &c, sbuf, NULL, NULL, scount, sdtype, rbuf, NULL, NULL,
                                      rcount, rdtype);
    MCA_COLL_STRATA_ISTAGED(
        &st, comm, request,
        MCA_COLL_STRATA_IFALLBACK(m, ialltoall, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf), scount,
                                  sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcount, rdtype));
}

int mca_coll_strata_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                               struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                               const int *rdispls, struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Ialltoallv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, ialltoallv, comm, request, sbuf, scounts,
                                                       sdispls, sdtype, rbuf, rcounts, rdispls,
                                                       rdtype));
    mca_coll_strata_describe_alltoall(&st, &c, sbuf, scounts, sdispls, 0, sdtype, rbuf, rcounts,
                                      rdispls, 0, rdtype);
    MCA_COLL_STRATA_ISTAGED(&st, comm, request,
                            MCA_COLL_STRATA_IFALLBACK(m, ialltoallv, comm, &inner,
                                                      MCA_COLL_STRATA_S(&st, sbuf), scounts,
                                                      sdispls, sdtype, MCA_COLL_STRATA_R(&st, rbuf),
                                                      rcounts, rdispls, rdtype));
}

int mca_coll_strata_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                               struct ompi_datatype_t *const *sdtypes, void *rbuf,
                               const int *rcounts, const int *rdispls,
                               struct ompi_datatype_t *const *rdtypes,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Ialltoallw", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, ialltoallw, comm, request, sbuf, scounts,
                                                       sdispls, sdtypes, rbuf, rcounts, rdispls,
                                                       rdtypes));
    mca_coll_strata_describe_alltoallw(&st, &c, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                                       rdispls, rdtypes);
    MCA_COLL_STRATA_ISTAGED(
        &st, comm, request,
        MCA_COLL_STRATA_IFALLBACK(m, ialltoallw, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf),
                                  scounts, sdispls, sdtypes, MCA_COLL_STRATA_R(&st, rbuf), rcounts,
                                  rdispls, rdtypes));
}

int mca_coll_strata_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;
    bool ran = false;

    MCA_COLL_STRATA_UNSTAGED_TRY(
        &st, m, "MPI_Ibcast", comm, buf, buf, ran,
        mca_coll_strata_ibcast_host(m, NULL, buf, count, dtype, root, comm, request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, ibcast, comm, request, buf, count, dtype, root));
    mca_coll_strata_describe_elementwise(&st, &c, MCA_COLL_STRATA_ELEM_BCAST, buf, buf, count,
                                         dtype);
    MCA_COLL_STRATA_ISTAGED_TRY(
        &st, comm, request, ran,
        mca_coll_strata_ibcast_host(m, &st, MCA_COLL_STRATA_R(&st, buf), count, dtype, root, comm,
                                    request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, ibcast, comm, &inner, MCA_COLL_STRATA_R(&st, buf), count,
                                  dtype, root));
}

int mca_coll_strata_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(
        &st, m, "MPI_Iexscan", comm, sbuf, rbuf,
        MCA_COLL_STRATA_IFALLBACK(m, iexscan, comm, request, sbuf, rbuf, count, dtype, op));
    mca_coll_strata_describe_elementwise(&st, &c, MCA_COLL_STRATA_ELEM_EXSCAN, sbuf, rbuf, count,
                                         dtype);
    MCA_COLL_STRATA_ISTAGED(
        &st, comm, request,
        MCA_COLL_STRATA_IFALLBACK(m, iexscan, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf),
                                  MCA_COLL_STRATA_R(&st, rbuf), count, dtype, op));
}

int mca_coll_strata_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Igather", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, igather, comm, request, sbuf, scount,
                                                       sdtype, rbuf, rcount, rdtype, root));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype,
                                    false);
    MCA_COLL_STRATA_ISTAGED(
        &st, comm, request,
        MCA_COLL_STRATA_IFALLBACK(m, igather, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf), scount,
                                  sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcount, rdtype, root));
}

int mca_coll_strata_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Igatherv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, igatherv, comm, request, sbuf, scount,
                                                       sdtype, rbuf, rcounts, displs, rdtype,
                                                       root));
    mca_coll_strata_describe_gather(&st, &c, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype,
                                    false);
    MCA_COLL_STRATA_ISTAGED(&st, comm, request,
                            MCA_COLL_STRATA_IFALLBACK(m, igatherv, comm, &inner,
                                                      MCA_COLL_STRATA_S(&st, sbuf), scount, sdtype,
                                                      MCA_COLL_STRATA_R(&st, rbuf), rcounts, displs,
                                                      rdtype, root));
}

int mca_coll_strata_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;
    bool ran = false;

    MCA_COLL_STRATA_UNSTAGED_TRY(
        &st, m, "MPI_Ireduce", comm, sbuf, rbuf, ran,
        mca_coll_strata_ireduce_host(m, NULL, sbuf, rbuf, count, dtype, op, root, comm, request,
                                     &ran),
        MCA_COLL_STRATA_IFALLBACK(m, ireduce, comm, request, sbuf, rbuf, count, dtype, op, root));
    mca_coll_strata_describe_elementwise(&st, &c, MCA_COLL_STRATA_ELEM_REDUCE, sbuf, rbuf, count,
                                         dtype);
    MCA_COLL_STRATA_ISTAGED_TRY(
        &st, comm, request, ran,
        mca_coll_strata_ireduce_host(m, &st, MCA_COLL_STRATA_S(&st, sbuf),
                                     MCA_COLL_STRATA_R(&st, rbuf), count, dtype, op, root, comm,
                                     request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, ireduce, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf),
                                  MCA_COLL_STRATA_R(&st, rbuf), count, dtype, op, root));
}

int mca_coll_strata_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    bool ran = false;

    MCA_COLL_STRATA_UNSTAGED_TRY(&st, m, "MPI_Ireduce_scatter", comm, sbuf, rbuf, ran,
                                 mca_coll_strata_ireduce_scatter_host(
                                     m, NULL, sbuf, rbuf, rcounts, dtype, op, comm, request, &ran),
                                 MCA_COLL_STRATA_IFALLBACK(m, ireduce_scatter, comm, request, sbuf,
                                                           rbuf, rcounts, dtype, op));
    mca_coll_strata_describe_reduce_scatter(&st, &c, sbuf, rbuf, rcounts, 0, dtype);
    MCA_COLL_STRATA_ISTAGED_TRY(
        &st, comm, request, ran,
        mca_coll_strata_ireduce_scatter_host(m, &st, MCA_COLL_STRATA_S(&st, sbuf),
                                             MCA_COLL_STRATA_R(&st, rbuf), rcounts, dtype, op, comm,
                                             request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, ireduce_scatter, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf),
                                  MCA_COLL_STRATA_R(&st, rbuf), rcounts, dtype, op));
}

int mca_coll_strata_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;
    bool ran = false;

    MCA_COLL_STRATA_UNSTAGED_TRY(&st, m, "MPI_Ireduce_scatter_block", comm, sbuf, rbuf, ran,
                                 mca_coll_strata_ireduce_scatter_block_host(
                                     m, NULL, sbuf, rbuf, rcount, dtype, op, comm, request, &ran),
                                 MCA_COLL_STRATA_IFALLBACK(m, ireduce_scatter_block, comm, request,
                                                           sbuf, rbuf, rcount, dtype, op));
    mca_coll_strata_describe_reduce_scatter(&st, &c, sbuf, rbuf, NULL, rcount, dtype);
    MCA_COLL_STRATA_ISTAGED_TRY(
        &st, comm, request, ran,
        mca_coll_strata_ireduce_scatter_block_host(m, &st, MCA_COLL_STRATA_S(&st, sbuf),
                                                   MCA_COLL_STRATA_R(&st, rbuf), rcount, dtype, op,
                                                   comm, request, &ran),
        MCA_COLL_STRATA_IFALLBACK(m, ireduce_scatter_block, comm, &inner,
                                  MCA_COLL_STRATA_S(&st, sbuf), MCA_COLL_STRATA_R(&st, rbuf),
                                  rcount, dtype, op));
}

int mca_coll_strata_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, -1);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(
        &st, m, "MPI_Iscan", comm, sbuf, rbuf,
        MCA_COLL_STRATA_IFALLBACK(m, iscan, comm, request, sbuf, rbuf, count, dtype, op));
    mca_coll_strata_describe_elementwise(&st, &c, MCA_COLL_STRATA_ELEM_REDUCE, sbuf, rbuf, count,
                                         dtype);
    MCA_COLL_STRATA_ISTAGED(
        &st, comm, request,
        MCA_COLL_STRATA_IFALLBACK(m, iscan, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf),
                                  MCA_COLL_STRATA_R(&st, rbuf), count, dtype, op));
}

int mca_coll_strata_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Iscatter", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, iscatter, comm, request, sbuf, scount,
                                                       sdtype, rbuf, rcount, rdtype, root));
    mca_coll_strata_describe_scatter(&st, &c, sbuf, NULL, NULL, scount, sdtype, rbuf, rcount,
                                     rdtype);
    MCA_COLL_STRATA_ISTAGED(
        &st, comm, request,
        MCA_COLL_STRATA_IFALLBACK(m, iscatter, comm, &inner, MCA_COLL_STRATA_S(&st, sbuf), scount,
                                  sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcount, rdtype, root));
}

int mca_coll_strata_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                              struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              struct ompi_datatype_t *rdtype, int root,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)module;
    mca_coll_strata_call_t c = MCA_COLL_STRATA_CALL(comm, root);
    mca_coll_strata_stage_t st;

    MCA_COLL_STRATA_UNSTAGED(&st, m, "MPI_Iscatterv", comm, sbuf, rbuf,
                             MCA_COLL_STRATA_IFALLBACK(m, iscatterv, comm, request, sbuf, scounts,
                                                       displs, sdtype, rbuf, rcount, rdtype, root));
    mca_coll_strata_describe_scatter(&st, &c, sbuf, scounts, displs, 0, sdtype, rbuf, rcount,
                                     rdtype);
    MCA_COLL_STRATA_ISTAGED(&st, comm, request,
                            MCA_COLL_STRATA_IFALLBACK(m, iscatterv, comm, &inner,
                                                      MCA_COLL_STRATA_S(&st, sbuf), scounts, displs,
                                                      sdtype, MCA_COLL_STRATA_R(&st, rbuf), rcount,
                                                      rdtype, root));
}
