/*
 * coll/strata: topology-aware collectives for Open MPI 4.1.
 *
 * Declares the component, the per-communicator module and every entry point.
 * The component is off by default (priority 0 makes comm_query decline), so an
 * installed Strata changes nothing until a job asks for it with
 * --mca coll_strata_priority <n>.
 */
#ifndef MCA_COLL_STRATA_H
#define MCA_COLL_STRATA_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/util/output.h"

BEGIN_C_DECLS

typedef struct mca_coll_strata_component_t {
    mca_coll_base_component_2_0_0_t super;
    /* MCA parameters (coll_strata_*) */
    int priority;
    int verbose;
    /* opal_output stream the verbose messages go to */
    int output;
} mca_coll_strata_component_t;

/*
 * The functions of the module that ran before strata was stacked on top of a
 * communicator: strata hands them every call it does not handle itself.
 */
typedef struct mca_coll_strata_fallback_t {
    mca_coll_base_module_allreduce_fn_t allreduce;
    mca_coll_base_module_t *allreduce_module;
} mca_coll_strata_fallback_t;

typedef struct mca_coll_strata_module_t {
    mca_coll_base_module_t super;
    mca_coll_strata_fallback_t fallback;
} mca_coll_strata_module_t;

OBJ_CLASS_DECLARATION(mca_coll_strata_module_t);

OMPI_MODULE_DECLSPEC extern mca_coll_strata_component_t mca_coll_strata_component;

#define MCA_COLL_STRATA_VERBOSE(_level, ...) \
    opal_output_verbose((_level), mca_coll_strata_component.output, "coll:strata: " __VA_ARGS__)

/* coll_strata_module.c */
int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority);

/* coll_strata_allreduce.c */
int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_STRATA_H */
