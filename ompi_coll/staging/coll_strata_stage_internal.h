/*
 * coll/strata staging, the room's own declarations (see
 * coll_strata_stage.h): the kinds' names, the regions of v and w layouts,
 * and the pieces every rank agrees on.  Included by staging/'s sources
 * only.  May include: staging's interface.  Not coll_strata.h.
 */
#ifndef MCA_COLL_STRATA_STAGE_INTERNAL_H
#define MCA_COLL_STRATA_STAGE_INTERNAL_H

#include "coll_strata_stage.h"

/* "device->host" etc.: the send and receive kinds, for verbose output. */
const char *mca_coll_strata_kinds_name(strata_mem_kind_t send, strata_mem_kind_t recv);

/* Blocks i < n of counts[i] elements at displs[i] extents (NULL displs:
 * packed one after another, as Reduce_scatter lays them out). */
void mca_coll_strata_region_v(int n, const int *counts, const int *displs,
                              struct ompi_datatype_t *dtype, ptrdiff_t *lo, ptrdiff_t *hi);
/* Alltoallw: displacements in bytes, a datatype per block. */
void mca_coll_strata_region_w(int n, const int *counts, const int *displs,
                              struct ompi_datatype_t *const *dtypes, ptrdiff_t *lo, ptrdiff_t *hi);
/* Whether writing `count` elements of `dtype` covers [lo, hi) completely,
 * so an output region needs no copy in first. */
bool mca_coll_strata_region_dense(size_t bytes_written, ptrdiff_t lo, ptrdiff_t hi);

/*
 * Elements per piece for an elementwise collective (reductions, scans,
 * broadcast) of `count` x `dtype`: `count` when the call fits the bounce
 * bound or no rank stages, else the piece size every rank then uses.  Above
 * the bound every rank asks the others (one small allreduce), because the
 * ranks must run the same sequence of collectives whichever of them stage.
 * `can_split`: this rank could cut its buffer at element boundaries.
 */
int mca_coll_strata_stage_pieces(struct mca_coll_strata_module_t *module,
                                 struct ompi_communicator_t *comm, int count,
                                 struct ompi_datatype_t *dtype, bool stages, bool can_split,
                                 int *piece);

#endif /* MCA_COLL_STRATA_STAGE_INTERNAL_H */
