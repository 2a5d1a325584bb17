/*
 * hook/strata, two jobs early in MPI_Init:
 *   - makes a UCX without plugin discovery (UCX < 1.22, e.g. Debian's 1.13.1)
 *     load Strata's UCT module.  Open MPI calls a dynamic hook component
 *     right after OPAL is up, before pml/ucx calls ucp_init: the last moment
 *     a UCT component can still join UCX's component list;
 *   - (hook_strata_dt.c) lets pml/ucx send non-contiguous MPI datatypes on
 *     device buffers, by copying the datatype's runs between the device
 *     and UCX's packed stream in place of Open MPI's CPU pack and unpack
 *     (hook_strata_device_datatypes).
 */
#ifndef MCA_HOOK_STRATA_H
#define MCA_HOOK_STRATA_H

#include "ompi_config.h"

#include "ompi/mca/hook/hook.h"
#include "ompi_common/strata_ompi.h"
#include "opal/util/output.h"

BEGIN_C_DECLS

/*
 * hook/strata must load libuct_strata into UCX before pml/ucx calls
 * ucp_init.  Open MPI 4.1 calls a DSO hook's mpi_init_top_post_opal before
 * pml selection; 5.0 calls it only after the pml is selected (instance
 * init), but opens the hook framework before the pml's, so there the load
 * happens in the component's open callback.
 */
#define MCA_HOOK_STRATA_LOAD_AT_OPEN MCA_STRATA_OMPI_5

typedef struct mca_hook_strata_component_t {
    ompi_hook_base_component_1_0_0_t super;
    /* MCA parameters (hook_strata_*) */
    bool load_uct;
    bool device_datatypes;
    size_t device_datatypes_chunk;
    size_t device_datatypes_gap;
    char *uct_module;
    int verbose;
    int output;
    /* dlopen handle of libuct_strata.so, kept open for the life of the process */
    void *uct_handle;
    /* a CUDA driver with a device was found when the module was loaded */
    bool gpu;
} mca_hook_strata_component_t;

MCA_STRATA_OMPI_COMPONENT_EXPORT extern mca_hook_strata_component_t mca_hook_strata_component;

END_C_DECLS

#endif /* MCA_HOOK_STRATA_H */
