/*
 * coll/strata's part of the adapter to the Open MPI it is built against
 * (4.1.x and 5.0.x): what only coll/strata needs of Open MPI that the
 * installed headers cannot give.  What every Strata plugin shares (the
 * series switch MCA_STRATA_OMPI_5, the component export, the version check
 * at registration, and where each difference between the series is met)
 * is ompi_common/strata_ompi.h, included here.
 *
 *                          Open MPI 4.1              Open MPI 5.0
 *   coll component         2.0.0 (module 2.3.0)      2.4.0 (module 2.4.0)
 *   nonblocking request    data: two objects         data: objects or vectors,
 *                                                    plus arrays freed at completion
 *   opal mutexes           opal/threads/mutex.h      opal/mca/threads/mutex.h
 *
 * Module enable/disable and comm->c_coll are the same in both: each calls
 * coll_module_enable before copying a module's functions in, and
 * coll_module_disable once per slot the module holds when a communicator
 * goes (mca_coll_base_comm_unselect).
 *
 * In base/: every room may include it (engine/'s and staging/'s locks,
 * staging/'s nonblocking request).  May include: ompi_common/ and Open
 * MPI.  Nothing else of ompi_coll.
 */
#ifndef MCA_COLL_STRATA_OMPI_H
#define MCA_COLL_STRATA_OMPI_H

#include "ompi_config.h"

#include "ompi/request/request.h"
#include "ompi_common/strata_ompi.h"

/* OPAL's threads moved into a framework (opal/mca/threads) in 5.0. */
#if MCA_STRATA_OMPI_5
#include "opal/mca/threads/mutex.h"
#else
#include "opal/threads/mutex.h"
#endif

/* Info objects: a key's value (a string object of its own in 5.0), and the
 * callbacks of info subscriptions (const strings in 5.0). */
#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"

#if MCA_STRATA_OMPI_5
typedef const char *mca_coll_strata_info_str_t;
#else
typedef char *mca_coll_strata_info_str_t;
#endif

/* `key`'s value in `info` into buf (len bytes, terminated, cut short if
 * longer); false where the key is not set. */
static inline bool mca_coll_strata_info_get(opal_info_t *info, const char *key, char *buf,
                                            size_t len)
{
    int flag = 0;
#if MCA_STRATA_OMPI_5
    opal_cstring_t *value = NULL;

    if (NULL == info || OPAL_SUCCESS != opal_info_get(info, key, &value, &flag) || !flag) {
        return false;
    }
    snprintf(buf, len, "%s", value->string);
    OBJ_RELEASE(value);
    return true;
#else
    if (NULL == info || OPAL_SUCCESS != opal_info_get(info, key, (int)len - 1, buf, &flag)) {
        return false;
    }
    buf[len - 1] = '\0';
    return 0 != flag;
#endif
}

/* The version of the coll component structure (ompi/mca/coll/coll.h). */
#if MCA_STRATA_OMPI_5
#define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
#define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif

/*
 * A nonblocking collective's request.  MPI_I* calls treat the request a coll
 * module returns as an ompi_coll_base_nbc_request_t: they keep the derived
 * datatypes and user ops of the call alive by storing them in its `data` and
 * chaining a completion callback (coll_base_util.c, ompi_coll_base_retain_*),
 * and they read the communicator from req_mpi_object.  That structure is
 * declared in coll/base/coll_base_util.h, which includes ompi/op/op.h, which
 * includes a Fortran header (ompi/mpi/fortran/base/fint_2_int.h) neither
 * Debian 12's nor Debian 13's development package ships.  So its layout is
 * restated here, and its class (exported by libmpi) is named for OBJ_NEW;
 * coll/strata compares the class's size with this one before it installs a
 * nonblocking collective.  Strata never touches `data`: Open MPI's
 * constructor and callbacks do.
 */
typedef struct mca_coll_strata_nbc_request_t {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t req_free;
    } cb;
    void *req_complete_cb_data;
#if MCA_STRATA_OMPI_5
    struct {
        union {
            void *objs[2]; /* op/datatype, two datatypes */
            struct {
                void *stypes, *rtypes;
                int scount, rcount;
            } vecs;
        } refcounted;
        /* OMPI_REQ_NB_RELEASE_ARRAYS: temporary arrays freed at completion */
        void *release_arrays[7];
    } data;
#else
    union {
        void *objs[2]; /* op/datatype, two datatypes, or two datatype vectors */
    } data;
#endif
} mca_coll_strata_nbc_request_t;

/* OBJ_CLASS(ompi_coll_base_nbc_request_t) */
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/* MPI cannot cancel collectives. */
static inline int mca_coll_strata_request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST;
}

/* A coll request of strata's own made as Open MPI makes its nonblocking
 * ones: of type COLL, its status empty, not cancellable, released by
 * free_fn, on comm (MPI_I* reads it there, ompi_coll_base_retain_*;
 * retained here, released with the request).  A persistent one is inactive
 * and complete until MPI_Start, any other active. */
static inline void mca_coll_strata_request_init(ompi_request_t *req,
                                                struct ompi_communicator_t *comm, bool persistent,
                                                ompi_request_free_fn_t free_fn)
{
    OMPI_REQUEST_INIT(req, persistent);
    req->req_type = OMPI_REQUEST_COLL;
    if (!persistent) {
        req->req_state = OMPI_REQUEST_ACTIVE;
    }
    req->req_free = free_fn;
    req->req_cancel = mca_coll_strata_request_cancel;
    /* not cancelled, no source or tag, as for any collective */
    req->req_status = ompi_status_empty;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_mpi_object.comm = comm;
    OBJ_RETAIN(comm);
}

#endif /* MCA_COLL_STRATA_OMPI_H */
