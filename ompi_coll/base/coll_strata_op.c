/*
 * coll/strata base: Open MPI's predefined ops by name (see coll_strata_op.h).
 */
#include "coll_strata_op.h"

#include "mpi.h"

/* The predefined op's name, or NULL for a user op. */
static const char *mca_coll_strata_op_predefined_name(struct ompi_op_t *op)
{
    static const struct {
        MPI_Op op;
        const char *name;
    } names[] = {
        {MPI_SUM, "MPI_SUM"},         {MPI_PROD, "MPI_PROD"},     {MPI_MIN, "MPI_MIN"},
        {MPI_MAX, "MPI_MAX"},         {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
        {MPI_LXOR, "MPI_LXOR"},       {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
        {MPI_BXOR, "MPI_BXOR"},       {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"},
        {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (names[i].op == op) {
            return names[i].name;
        }
    }
    return NULL;
}

const char *mca_coll_strata_op_name(struct ompi_op_t *op)
{
    const char *name = mca_coll_strata_op_predefined_name(op);

    return (NULL != name) ? name : "user op";
}

bool mca_coll_strata_op_is_predefined(struct ompi_op_t *op)
{
    return NULL != mca_coll_strata_op_predefined_name(op);
}
