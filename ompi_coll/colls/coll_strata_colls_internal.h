/*
 * coll/strata collectives, the room's own declarations (see
 * coll_strata_colls.h): each collective's host path (host buffers, or the
 * host copies of staged ones) and native path (device buffers on every
 * rank, the pipeline on the GPUs), and what every reduction shares (its
 * decision, coll_strata_reduction.c) and every native path
 * (coll_strata_native.c).  Included by colls/'s sources only.  May include:
 * engine/'s and logic/'s interfaces.  Not coll_strata.h.
 */
#ifndef MCA_COLL_STRATA_COLLS_INTERNAL_H
#define MCA_COLL_STRATA_COLLS_INTERNAL_H

#include <stdbool.h>

#include "../engine/coll_strata_engine.h"
#include "../logic/coll_strata_logic.h"

struct ompi_communicator_t;
struct ompi_datatype_t;
struct ompi_op_t;
struct ompi_request_t;
struct mca_coll_strata_module_t;
struct mca_coll_strata_buf_kind_t;
struct mca_coll_strata_bufs_t;
struct mca_coll_strata_stage_t;

/* coll_strata_reduction.c: the host path's decision for an allreduce of
 * count x dtype with op (cached), or NULL with *why when it goes to the
 * module below strata; *scratch holds a fresh one */
const mca_coll_strata_decision_t *
mca_coll_strata_reduction_host_decision(struct mca_coll_strata_module_t *module, int count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_strata_decision_t *scratch, const char **why);

/* coll_strata_allreduce.c: strata's host allreduce (its algorithms or the
 * fallback), what a staged device allreduce runs on its host copies */
int mca_coll_strata_allreduce_host(struct mca_coll_strata_module_t *module, const void *sbuf,
                                   void *rbuf, int count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                   const char *kinds);

/* coll_strata_reduction.c: a reduction on host buffers (or staged copies):
 * strata's pipeline where it may run (*ran), else nothing (the caller hands
 * it to the module below strata) */
int mca_coll_strata_reduction_host(struct mca_coll_strata_module_t *module,
                                   struct ompi_communicator_t *comm,
                                   const mca_coll_strata_pipeline_args_t *a, bool *ran);
/* coll_strata_reduction.c: the communicator's set-up at the first call
 * strata's own algorithms could run (every rank, same inputs), so that the
 * native path knows at once whether some rank has a CUDA driver */
void mca_coll_strata_setup_early(struct mca_coll_strata_module_t *module,
                                 struct ompi_communicator_t *comm, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op);
/* coll_strata_reduction.c: the verbose name of a reduction's exchange
 * between nodes (the ring's reduce-scatter half where it runs) */
const char *mca_coll_strata_reduction_inter_name(const struct mca_coll_strata_module_t *module,
                                                 const mca_coll_strata_pipeline_args_t *a,
                                                 const mca_coll_strata_decision_t *d);
/* coll_strata_reduction.c: the format a host-path reduction's exchange
 * between nodes sends in (the communicator's strata_compress, else
 * coll_strata_compress, where the call qualifies) set in d, with the
 * exchange chosen again for the bytes that then cross (`blocking`: the
 * call may compare the ranks' keys, a collective; a nonblocking one must
 * not); and its note for the verbose line (", compressed bf16 between
 * nodes", or "") */
void mca_coll_strata_reduction_compress(struct mca_coll_strata_module_t *module,
                                        struct ompi_communicator_t *comm, size_t count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        bool blocking, mca_coll_strata_decision_t *d);
const char *mca_coll_strata_reduction_codec_note(const mca_coll_strata_decision_t *d, char *buf,
                                                 size_t len);

/* coll_strata_native.c: whether every rank can run a call on the GPUs
 * (`mine`: this one can, on device `ordinal`), the device area set up at
 * the first; and, for verbose lines, how device blocks cross nodes. */
int mca_coll_strata_native_agree(struct mca_coll_strata_module_t *module,
                                 struct ompi_communicator_t *comm, int mine, int ordinal, bool *go);
/* coll_strata_native.c: whether a classified buffer is on device `ordinal`
 * in its primary context, where the native path runs */
bool mca_coll_strata_native_primary(const struct mca_coll_strata_buf_kind_t *k, int ordinal);
const char *mca_coll_strata_native_network(struct mca_coll_strata_module_t *module,
                                           const mca_coll_strata_decision_t *decision);

/* coll_strata_copies.c: MPI_Bcast and MPI_Allgather on the pipeline.  The
 * native path (device buffers on every rank; *ran says whether it ran),
 * and the host path (host buffers or staged copies: the pipeline where it
 * applies, else the module below strata). */
int mca_coll_strata_bcast_native(struct mca_coll_strata_module_t *module,
                                 const struct mca_coll_strata_bufs_t *bufs, void *buf, int count,
                                 struct ompi_datatype_t *dtype, int root,
                                 struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_bcast_host(struct mca_coll_strata_module_t *module, void *buf, int count,
                               struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm);
int mca_coll_strata_allgather_native(struct mca_coll_strata_module_t *module,
                                     const struct mca_coll_strata_bufs_t *bufs, const void *sbuf,
                                     int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                     int rcount, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_allgather_host(struct mca_coll_strata_module_t *module, const void *sbuf,
                                   int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                   int rcount, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm);

/* coll_strata_reduction.c: the nonblocking host path of a reduction: the
 * pipeline started (*ran; *request made) where it may run without waiting
 * for a peer (nonblocking_ready: set up and agreed by an earlier blocking
 * call), else nothing (the caller hands it to the module below).  `st`:
 * the call's device buffers staged, copied in already (its host copies in
 * `a`), NULL: host buffers.  `name` starts the verbose line.  istart: a
 * nonblocking call on the host node area and its request. */
bool mca_coll_strata_nonblocking_ready(const struct mca_coll_strata_module_t *module);
int mca_coll_strata_reduction_istart(struct mca_coll_strata_module_t *module,
                                     struct ompi_communicator_t *comm,
                                     struct mca_coll_strata_stage_t *st,
                                     const mca_coll_strata_pipeline_args_t *a, const char *name,
                                     struct ompi_request_t **request, bool *ran);
int mca_coll_strata_pipeline_istart(struct mca_coll_strata_module_t *module,
                                    struct ompi_communicator_t *comm,
                                    struct mca_coll_strata_stage_t *st,
                                    const mca_coll_strata_pipeline_args_t *a,
                                    const mca_coll_strata_decision_t *d,
                                    int (*finish)(void *arg, int rc), void *finish_arg,
                                    struct ompi_request_t **request);
/* coll_strata_allreduce.c, coll_strata_reductions.c, coll_strata_copies.c:
 * each nonblocking collective's host path on the pipeline (*ran) */
int mca_coll_strata_iallreduce_host(struct mca_coll_strata_module_t *module,
                                    struct mca_coll_strata_stage_t *st, const void *sbuf,
                                    void *rbuf, int count, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                    struct ompi_request_t **request, bool *ran);
int mca_coll_strata_ireduce_host(struct mca_coll_strata_module_t *module,
                                 struct mca_coll_strata_stage_t *st, const void *sbuf, void *rbuf,
                                 int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 int root, struct ompi_communicator_t *comm,
                                 struct ompi_request_t **request, bool *ran);
int mca_coll_strata_ireduce_scatter_block_host(struct mca_coll_strata_module_t *module,
                                               struct mca_coll_strata_stage_t *st, const void *sbuf,
                                               void *rbuf, int rcount,
                                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                               struct ompi_communicator_t *comm,
                                               struct ompi_request_t **request, bool *ran);
int mca_coll_strata_ibcast_host(struct mca_coll_strata_module_t *module,
                                struct mca_coll_strata_stage_t *st, void *buf, int count,
                                struct ompi_datatype_t *dtype, int root,
                                struct ompi_communicator_t *comm, struct ompi_request_t **request,
                                bool *ran);
int mca_coll_strata_iallgather_host(struct mca_coll_strata_module_t *module,
                                    struct mca_coll_strata_stage_t *st, const void *sbuf,
                                    int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                    int rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm,
                                    struct ompi_request_t **request, bool *ran);
int mca_coll_strata_ireduce_scatter_host(struct mca_coll_strata_module_t *module,
                                         struct mca_coll_strata_stage_t *st, const void *sbuf,
                                         void *rbuf, const int *rcounts,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         struct ompi_request_t **request, bool *ran);

/* coll_strata_reduction.c: the native path (the pipeline on the GPUs) for
 * every reduction, when every rank agrees it can run (*ran); `name` starts
 * the verbose line.  Called by every rank for the same calls. */
int mca_coll_strata_reduction_native(struct mca_coll_strata_module_t *module,
                                     struct ompi_communicator_t *comm,
                                     const struct mca_coll_strata_bufs_t *bufs,
                                     const mca_coll_strata_pipeline_args_t *a, const char *name,
                                     bool *ran);
/* coll_strata_reductions.c: MPI_Reduce, MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter on host buffers (or staged copies): strata's pipeline
 * where it may run, else the module below strata */
int mca_coll_strata_reduce_host(struct mca_coll_strata_module_t *module, const void *sbuf,
                                void *rbuf, int count, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, int root, struct ompi_communicator_t *comm);
int mca_coll_strata_reduce_scatter_block_host(struct mca_coll_strata_module_t *module,
                                              const void *sbuf, void *rbuf, int rcount,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm);
int mca_coll_strata_reduce_scatter_host(struct mca_coll_strata_module_t *module, const void *sbuf,
                                        void *rbuf, const int *rcounts,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm);
/* ... and their native path, asked by every rank first wherever some rank
 * has a CUDA driver (*ran: it ran, the call is done) */
int mca_coll_strata_reduce_native(struct mca_coll_strata_module_t *module,
                                  const struct mca_coll_strata_bufs_t *bufs, const void *sbuf,
                                  void *rbuf, int count, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                                  bool *ran);
int mca_coll_strata_reduce_scatter_block_native(struct mca_coll_strata_module_t *module,
                                                const struct mca_coll_strata_bufs_t *bufs,
                                                const void *sbuf, void *rbuf, int rcount,
                                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                                struct ompi_communicator_t *comm, bool *ran);
int mca_coll_strata_reduce_scatter_native(struct mca_coll_strata_module_t *module,
                                          const struct mca_coll_strata_bufs_t *bufs,
                                          const void *sbuf, void *rbuf, const int *rcounts,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm, bool *ran);


#endif /* MCA_COLL_STRATA_COLLS_INTERNAL_H */
