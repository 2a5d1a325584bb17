/*
 * accelerator/cuda (Strata): the component, its parameters and when it is
 * selected (accelerator_strata.h says why it is named "cuda").
 *
 * Open MPI's accelerator framework initialises every component it finds and
 * takes the one that is not "null" (two such stop MPI_Init), so init is
 * where this component decides: it offers its module only when switched on,
 * when this Open MPI has no CUDA support of its own, and when the driver
 * has a device.  Otherwise it says why (verbosity 10; the own-CUDA case at
 * any verbosity, since the user asked for something that cannot be) and
 * the null component runs.
 */
#define _GNU_SOURCE
#include "ompi_accel/accelerator_strata.h"

#include <dlfcn.h>

#include "opal/mca/accelerator/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_params_core.h"
#include "opal/util/output.h"

#include "common/strata_cuda.h"
#include "common/strata_mem.h"
#include "ompi_common/strata_ompi.h"

/* What tells this component's file from an Open MPI's own
 * mca_accelerator_cuda.so: `make install` looks for the string
 * (ompi_accel/Makefile.am), hook/strata for the symbol in the object that
 * holds the selected module's functions (hook_strata_cuda_aware.c). */
OPAL_DECLSPEC const char mca_accelerator_cuda_strata_marker[] = "STRATA_ACCELERATOR_CUDA_COMPONENT";

static bool accelerator_strata_enable;
static bool accelerator_strata_ctx_sync_memops;
static int accelerator_strata_verbose;

static int accelerator_strata_register(void);
static int accelerator_strata_open(void);
static int accelerator_strata_close(void);
static opal_accelerator_base_module_t *accelerator_strata_init(void);
static void accelerator_strata_finalize(opal_accelerator_base_module_t *module);

opal_accelerator_base_component_t mca_accelerator_cuda_component = {
    .base_version =
        {
            OPAL_ACCELERATOR_BASE_VERSION_1_0_0,
            .mca_component_name = "cuda",
            MCA_BASE_MAKE_VERSION(component, 0, 2, 0),
            .mca_open_component            = accelerator_strata_open,
            .mca_close_component           = accelerator_strata_close,
            .mca_register_component_params = accelerator_strata_register,
        },
    .base_data            = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .accelerator_init     = accelerator_strata_init,
    .accelerator_finalize = accelerator_strata_finalize,
};

opal_accelerator_base_module_t accelerator_strata_module = {
    .check_addr             = accelerator_strata_check_addr,
    .create_stream          = accelerator_strata_create_stream,
    .create_event           = accelerator_strata_create_event,
    .record_event           = accelerator_strata_record_event,
    .query_event            = accelerator_strata_query_event,
    .mem_copy_async         = accelerator_strata_mem_copy_async,
    .mem_copy               = accelerator_strata_mem_copy,
    .mem_move               = accelerator_strata_mem_move,
    .mem_alloc              = accelerator_strata_mem_alloc,
    .mem_release            = accelerator_strata_mem_release,
    .get_address_range      = accelerator_strata_get_address_range,
    .host_register          = accelerator_strata_host_register,
    .host_unregister        = accelerator_strata_host_unregister,
    .get_device             = accelerator_strata_get_device,
    .get_device_pci_attr    = accelerator_strata_get_device_pci_attr,
    .device_can_access_peer = accelerator_strata_device_can_access_peer,
    .get_buffer_id          = accelerator_strata_get_buffer_id,
};

static int accelerator_strata_register(void)
{
    mca_base_component_t *c = &mca_accelerator_cuda_component.base_version;

    /* Built for another Open MPI: Open MPI drops the component, null runs. */
    if (OMPI_SUCCESS != mca_strata_ompi_version_check("accelerator/cuda (Strata)")) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    accelerator_strata_enable = false;
    (void)mca_base_component_var_register(
        c, "strata_enable",
        "Strata's CUDA accelerator component: Open MPI's datatype engine, pml/ob1 and "
        "MPIX_Query_cuda_support() see device memory through Strata's CUDA driver table. "
        "false (the default): the null component runs. cuda-aware.conf switches it on; it is "
        "selected only where the CUDA driver has a device and this Open MPI has no CUDA "
        "support of its own",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &accelerator_strata_enable);
    accelerator_strata_ctx_sync_memops = true;
    (void)mca_base_component_var_register(
        c, "strata_ctx_sync_memops",
        "Set CU_CTX_SYNC_MEMOPS on the CUDA contexts this component meets off the data path "
        "(the current one in MPI_Init, those Open MPI makes streams and events in), as "
        "Strata's UCX transports do (UCX_STRATA_CTX_SYNC_MEMOPS): synchronous "
        "memsets and copies issued in them land before they return. It changes the "
        "application's contexts for good (every synchronous cudaMemset and device-to-device "
        "cudaMemcpy blocks the host, after MPI_Finalize too). false: contexts are left alone, "
        "and a synchronous memset or copy into VMM, stream-ordered or IPC-opened memory right "
        "before an MPI call may be read before it lands; cuMemAlloc memory keeps the "
        "SYNC_MEMOPS pointer attribute",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &accelerator_strata_ctx_sync_memops);
    accelerator_strata_verbose = 0;
    (void)mca_base_component_var_register(
        c, "strata_verbose",
        "Verbosity of Strata's CUDA accelerator component: 0 errors only, 10 why it was or was "
        "not selected, 20 each failed driver call in detail",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &accelerator_strata_verbose);
    return OPAL_SUCCESS;
}

static int accelerator_strata_open(void)
{
    accelerator_strata_output = opal_output_open(NULL);
    opal_output_set_verbosity(accelerator_strata_output, accelerator_strata_verbose);
    return OPAL_SUCCESS;
}

static int accelerator_strata_close(void)
{
    if (accelerator_strata_output >= 0) {
        opal_output_close(accelerator_strata_output);
        accelerator_strata_output = -1;
    }
    return OPAL_SUCCESS;
}

/* The file this component was loaded from, for messages. */
static const char *accelerator_strata_path(void)
{
    Dl_info info;

    if ((dladdr(&mca_accelerator_cuda_component, &info) != 0) && (info.dli_fname != NULL)) {
        return info.dli_fname;
    }
    return "mca_accelerator_cuda.so";
}

/* common/strata_mem's lines: the driver refusing CU_CTX_SYNC_MEMOPS (always
 * shown), a context first met on the data path (verbosity 10). */
static void accelerator_strata_mem_report(int warn, const char *msg)
{
    if (warn) {
        opal_output(0, "accelerator:cuda (Strata): %s", msg);
    } else {
        opal_output_verbose(10, accelerator_strata_output, "accelerator:cuda (Strata): %s", msg);
    }
}

static opal_accelerator_base_module_t *accelerator_strata_init(void)
{
    int driver = 0, count;

    if (!accelerator_strata_enable) {
        opal_output_verbose(10, accelerator_strata_output,
                            "accelerator:cuda (Strata): not switched on "
                            "(accelerator_cuda_strata_enable is false): the null component runs");
        return NULL;
    }
    if (opal_built_with_cuda_support) {
        opal_output(0,
                    "accelerator:cuda (Strata): this Open MPI was built with CUDA support and "
                    "brings its own CUDA component, which Strata's (%s) hides: Strata's steps "
                    "aside and the null component runs. Remove that file, or put Open MPI's "
                    "own component directory first in opal_mca_base_component_path",
                    accelerator_strata_path());
        return NULL;
    }
    if (strata_cuda_load() != 0) {
        opal_output_verbose(10, accelerator_strata_output,
                            "accelerator:cuda (Strata): not selected, no usable CUDA driver (%s)",
                            strata_cuda_error());
        return NULL;
    }
    count = strata_cuda_device_count();
    if (count <= 0) {
        opal_output_verbose(10, accelerator_strata_output,
                            "accelerator:cuda (Strata): not selected, the CUDA driver has no "
                            "device");
        return NULL;
    }
    strata_mem_ctx_sync_memops_setup(accelerator_strata_ctx_sync_memops,
                                     accelerator_strata_mem_report);
    /* MPI_Init, off the data path: the application's context, if it has one
     * already, is flagged and settled (common/strata_mem.h). */
    (void)strata_mem_sync_memops_ctx();
    (void)strata_cuda.cuDriverGetVersion(&driver);
    opal_output_verbose(10, accelerator_strata_output,
                        "accelerator:cuda (Strata): selected (%s), CUDA driver %d.%d, %d "
                        "device%s",
                        accelerator_strata_path(), driver / 1000, (driver % 1000) / 10, count,
                        (count == 1) ? "" : "s");
    return &accelerator_strata_module;
}

static void accelerator_strata_finalize(opal_accelerator_base_module_t *module)
{
    (void)module;
    accelerator_strata_streams_fini();
}
