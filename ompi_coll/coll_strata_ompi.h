/*
 * coll/strata's adapter to the Open MPI it is built against (4.1.x): what
 * the component needs of Open MPI that the installed headers cannot give.
 *
 * A nonblocking collective's request.  MPI_I* calls in Open MPI 4.1 treat the
 * request a coll module returns as an ompi_coll_base_nbc_request_t: they
 * keep the derived datatypes and user ops of the call alive by storing them
 * in its `data` and chaining a completion callback (coll_base_util.c,
 * ompi_coll_base_retain_*), and they read the communicator from
 * req_mpi_object.  That structure is declared in coll/base/coll_base_util.h,
 * which includes ompi/op/op.h, which includes a Fortran header Debian's
 * development package does not ship.  So its layout is restated here, and
 * its class (exported by libmpi) is named for OBJ_NEW.
 */
#ifndef MCA_COLL_STRATA_OMPI_H
#define MCA_COLL_STRATA_OMPI_H

#include "ompi/request/request.h"

typedef struct mca_coll_strata_nbc_request_t {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t req_free;
    } cb;
    void *req_complete_cb_data;
    union {
        void *objs[2]; /* op/datatype, two datatypes, or two datatype vectors */
    } data;
} mca_coll_strata_nbc_request_t;

/* OBJ_CLASS(ompi_coll_base_nbc_request_t) */
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

#endif /* MCA_COLL_STRATA_OMPI_H */
