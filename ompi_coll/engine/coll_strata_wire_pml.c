/*
 * coll/strata wire over Open MPI's pml (coll_strata_wire.h): the step's
 * messages as pml requests on the rail communicator, tagged by the slot.
 * What every blocking call's exchange uses, and nonblocking calls' where
 * the rail has no ucp wire (they then progress inside MPI calls only: the
 * pml may take no locks).
 */
#include "coll_strata_wire.h"

#include <stdint.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/pml.h"

static int mca_coll_strata_wire_pml_recv(mca_coll_strata_xchg_t *x, void *buf, size_t count,
                                         struct ompi_datatype_t *dtype, int peer)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = MCA_PML_CALL(irecv(buf, count, dtype, peer, x->tag, x->comm, &req));

    x->reqs[0] = (OMPI_SUCCESS == rc) ? req : NULL;
    return rc;
}

static int mca_coll_strata_wire_pml_send(mca_coll_strata_xchg_t *x, const void *buf, size_t count,
                                         struct ompi_datatype_t *dtype, int peer)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = MCA_PML_CALL(
        isend((void *)buf, count, dtype, peer, x->tag, MCA_PML_BASE_SEND_STANDARD, x->comm, &req));

    x->reqs[1] = (OMPI_SUCCESS == rc) ? req : NULL;
    return rc;
}

/* A request that ended in error is not freed by the test (MPI's rule for
 * MPI_ERR_IN_STATUS): freed here. */
static bool mca_coll_strata_wire_pml_test(mca_coll_strata_xchg_t *x, int *rc, size_t *received)
{
    ompi_request_t *reqs[2];
    ompi_status_public_t status[2];
    int completed = 0;

    for (int i = 0; i < 2; ++i) {
        reqs[i] = (NULL != x->reqs[i]) ? (ompi_request_t *)x->reqs[i] : MPI_REQUEST_NULL;
    }
    *rc = ompi_request_test_all(2, reqs, &completed, status);
    if (!completed && OMPI_SUCCESS == *rc) {
        return false;
    }
    if (OMPI_SUCCESS != *rc) {
        for (int i = 0; i < 2; ++i) {
            if (MPI_REQUEST_NULL != reqs[i]) {
                (void)ompi_request_free(&reqs[i]);
            }
        }
    }
    /* _ucount: the bytes received (what MPI_Get_count reads) */
    *received = (OMPI_SUCCESS == *rc && NULL != x->reqs[0]) ? status[0]._ucount : 0;
    x->reqs[0] = x->reqs[1] = NULL;
    return true;
}

const mca_coll_strata_wire_ops_t mca_coll_strata_wire_pml = {
    .name = "pml",
    .recv = mca_coll_strata_wire_pml_recv,
    .send = mca_coll_strata_wire_pml_send,
    .test = mca_coll_strata_wire_pml_test,
};
