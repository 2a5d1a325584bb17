/*
 * coll/strata base: which ops are MPI's predefined ones, and their names
 * for messages.  Every room may ask (the verbose lines of colls/ and of the
 * device node area, the decision cache of colls/).
 *
 * May include: the C library.  Nothing of ompi_coll or of Open MPI (the op
 * is an incomplete struct here).
 */
#ifndef MCA_COLL_STRATA_OP_H
#define MCA_COLL_STRATA_OP_H

#include <stdbool.h>

struct ompi_op_t;

/* a printable name for an op (predefined, or "user op") */
const char *mca_coll_strata_op_name(struct ompi_op_t *op);
/* MPI_SUM ... MPI_NO_OP: a static object, the same for the whole run */
bool mca_coll_strata_op_is_predefined(struct ompi_op_t *op);

#endif /* MCA_COLL_STRATA_OP_H */
