/*
 * coll/strata collectives: the room of the entry points Open MPI calls, one
 * per collective, and the decision each call takes: strata's own
 * algorithms (the engine's pipeline, on host buffers or on the GPUs), the
 * module below strata, or staging around either (docs/design.md, "Where
 * things are in coll/strata").
 *
 * This header is the room's interface: the entry points, with Open MPI's
 * coll signatures, that the module installs.  What the room's sources call
 * of each other (the host and native paths of each collective):
 * coll_strata_colls_internal.h.
 *
 * May include: Open MPI's coll framework.  Not coll_strata.h.
 */
#ifndef MCA_COLL_STRATA_COLLS_H
#define MCA_COLL_STRATA_COLLS_H

#include "ompi_config.h"

#include "mpi.h" /* OMPI_MAJOR_VERSION */
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

struct ompi_communicator_t;
struct ompi_datatype_t;
struct ompi_op_t;

/* coll_strata_allreduce.c */
int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/*
 * Entry points: coll_strata_allreduce.c, coll_strata_colls.c (blocking) and
 * coll_strata_icolls.c (nonblocking), with Open MPI's coll signatures.
 */
#define MCA_COLL_STRATA_M   mca_coll_base_module_t *module
#define MCA_COLL_STRATA_C   struct ompi_communicator_t *comm
#define MCA_COLL_STRATA_REQ ompi_request_t **request
#define MCA_COLL_STRATA_DT  struct ompi_datatype_t *
int mca_coll_strata_allgather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                              int rcount, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_M);
int mca_coll_strata_allgatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                               const int *rcounts, const int *displs, MCA_COLL_STRATA_DT rdtype,
                               MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_alltoall(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                             int rcount, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                             MCA_COLL_STRATA_M);
int mca_coll_strata_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                              MCA_COLL_STRATA_DT sdtype, void *rbuf, const int *rcounts,
                              const int *rdispls, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_M);
int mca_coll_strata_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                              MCA_COLL_STRATA_DT const *sdtypes, void *rbuf, const int *rcounts,
                              const int *rdispls, MCA_COLL_STRATA_DT const *rdtypes,
                              MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_bcast(void *buf, int count, MCA_COLL_STRATA_DT dtype, int root,
                          MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_exscan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                           struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_gather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                           int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                           MCA_COLL_STRATA_M);
int mca_coll_strata_gatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                            const int *rcounts, const int *displs, MCA_COLL_STRATA_DT rdtype,
                            int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                           struct ompi_op_t *op, int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                   MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                         MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_scan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                         struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_M);
int mca_coll_strata_scatter(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                            int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                            MCA_COLL_STRATA_M);
int mca_coll_strata_scatterv(const void *sbuf, const int *scounts, const int *displs,
                             MCA_COLL_STRATA_DT sdtype, void *rbuf, int rcount,
                             MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                             MCA_COLL_STRATA_M);

int mca_coll_strata_reduce_local(const void *inbuf, void *inoutbuf, int count,
                                 MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op, MCA_COLL_STRATA_M);

int mca_coll_strata_iallgather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                               int rcount, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                               MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_iallgatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                                const int *rcounts, const int *displs, MCA_COLL_STRATA_DT rdtype,
                                MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_iallreduce(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                               struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ,
                               MCA_COLL_STRATA_M);
int mca_coll_strata_ialltoall(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                              int rcount, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                               MCA_COLL_STRATA_DT sdtype, void *rbuf, const int *rcounts,
                               const int *rdispls, MCA_COLL_STRATA_DT rdtype, MCA_COLL_STRATA_C,
                               MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                               MCA_COLL_STRATA_DT const *sdtypes, void *rbuf, const int *rcounts,
                               const int *rdispls, MCA_COLL_STRATA_DT const *rdtypes,
                               MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_ibcast(void *buf, int count, MCA_COLL_STRATA_DT dtype, int root,
                           MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_iexscan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                            struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ,
                            MCA_COLL_STRATA_M);
int mca_coll_strata_igather(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                            int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                            MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_igatherv(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                             const int *rcounts, const int *displs, MCA_COLL_STRATA_DT rdtype,
                             int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_ireduce(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                            struct ompi_op_t *op, int root, MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ,
                            MCA_COLL_STRATA_M);
int mca_coll_strata_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                    MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                    MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                          MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                          MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ,
                                          MCA_COLL_STRATA_M);
int mca_coll_strata_iscan(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                          struct ompi_op_t *op, MCA_COLL_STRATA_C, MCA_COLL_STRATA_REQ,
                          MCA_COLL_STRATA_M);
int mca_coll_strata_iscatter(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype, void *rbuf,
                             int rcount, MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                             MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                              MCA_COLL_STRATA_DT sdtype, void *rbuf, int rcount,
                              MCA_COLL_STRATA_DT rdtype, int root, MCA_COLL_STRATA_C,
                              MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
/* coll_strata_persistent.c: the persistent forms (MPI 4.0, Open MPI 5.0) of
 * the collectives strata runs on its pipeline */
#if OMPI_MAJOR_VERSION >= 5
int mca_coll_strata_allreduce_init(const void *sbuf, void *rbuf, int count,
                                   MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                   MCA_COLL_STRATA_C, struct ompi_info_t *info, MCA_COLL_STRATA_REQ,
                                   MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_init(const void *sbuf, void *rbuf, int count, MCA_COLL_STRATA_DT dtype,
                                struct ompi_op_t *op, int root, MCA_COLL_STRATA_C,
                                struct ompi_info_t *info, MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                              MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                              MCA_COLL_STRATA_C, struct ompi_info_t *info,
                                              MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                        MCA_COLL_STRATA_DT dtype, struct ompi_op_t *op,
                                        MCA_COLL_STRATA_C, struct ompi_info_t *info,
                                        MCA_COLL_STRATA_REQ, MCA_COLL_STRATA_M);
int mca_coll_strata_bcast_init(void *buf, int count, MCA_COLL_STRATA_DT dtype, int root,
                               MCA_COLL_STRATA_C, struct ompi_info_t *info, MCA_COLL_STRATA_REQ,
                               MCA_COLL_STRATA_M);
int mca_coll_strata_allgather_init(const void *sbuf, int scount, MCA_COLL_STRATA_DT sdtype,
                                   void *rbuf, int rcount, MCA_COLL_STRATA_DT rdtype,
                                   MCA_COLL_STRATA_C, struct ompi_info_t *info, MCA_COLL_STRATA_REQ,
                                   MCA_COLL_STRATA_M);
#endif

#undef MCA_COLL_STRATA_M
#undef MCA_COLL_STRATA_C
#undef MCA_COLL_STRATA_REQ
#undef MCA_COLL_STRATA_DT

#endif /* MCA_COLL_STRATA_COLLS_H */
