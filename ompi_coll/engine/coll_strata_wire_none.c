/*
 * coll/strata without UCX: no ucp wire (coll_strata_wire.h).  Nonblocking
 * calls between nodes use the pml and progress inside MPI calls only.
 */
#include "coll_strata_wire.h"

bool mca_coll_strata_wire_setup(mca_coll_strata_engine_t *e)
{
    (void)e;
    MCA_COLL_STRATA_VERBOSE(10, "no UCP wire (coll/strata was built without UCX): nonblocking "
                                "calls between nodes progress inside MPI calls only");
    return false;
}

void mca_coll_strata_wire_ucp_release(mca_coll_strata_engine_t *e)
{
    (void)e;
}

void mca_coll_strata_wire_ucp_bind(mca_coll_strata_engine_t *e, mca_coll_strata_xchg_t *x, int slot)
{
    (void)e;
    (void)slot;
    x->wire = &mca_coll_strata_wire_pml; /* never reached: no engine has the wire */
}

bool mca_coll_strata_wire_ucp_watch(void)
{
    return true;
}

void mca_coll_strata_wire_ucp_finalize(void)
{
}
