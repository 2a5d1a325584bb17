/*
 * hook/strata component: parameters, and loading libuct_strata.so early in
 * MPI_Init when asked to (Open MPI 4.1: the post-opal hook; 5.0: the
 * component's open, hook_strata.h).
 */
#include "hook_strata.h"
#ifdef MCA_HOOK_STRATA_HAVE_DT
#include "hook_strata_cuda_aware.h"
#include "hook_strata_dt.h"
#endif

#include <dlfcn.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/base/base.h"
#include "opal/mca/base/mca_base_var.h"

static int mca_hook_strata_component_register(void);
static int mca_hook_strata_component_open(void);
static int mca_hook_strata_component_close(void);
static void mca_hook_strata_mpi_init_top_post_opal(int argc, char **argv, int requested,
                                                  int *provided);
static void mca_hook_strata_mpi_init_bottom(int argc, char **argv, int requested, int *provided);

/* clang-format off */
mca_hook_strata_component_t mca_hook_strata_component = {
    .super = {
        .hookm_version = {
            OMPI_HOOK_BASE_VERSION_1_0_0,
            .mca_component_name = "strata",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = mca_hook_strata_component_open,
            .mca_close_component = mca_hook_strata_component_close,
            .mca_register_component_params = mca_hook_strata_component_register,
        },
        .hookm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        /* Not hookm_mpi_init_top: that runs before the hook framework is
         * opened and reaches only components linked into libmpi.  The
         * post-opal hook is the first one a dynamic component receives, and
         * in Open MPI 4.1 it still precedes pml selection (and so ucp_init).
         * In 5.0 it follows pml selection: there the component's open does
         * the loading (hook_strata.h). */
        .hookm_mpi_init_top_post_opal = MCA_HOOK_STRATA_LOAD_AT_OPEN
                                        ? NULL : mca_hook_strata_mpi_init_top_post_opal,
        /* The pml is chosen by then: what MPIX_Query_cuda_support answers. */
        .hookm_mpi_init_bottom = mca_hook_strata_mpi_init_bottom,
    },
    .load_uct = false,
    .device_datatypes = true,
    .device_datatypes_chunk = 262144,
    .device_datatypes_gap = 4096,
    .uct_module = NULL,
    .verbose = 0,
    .output = -1,
    .uct_handle = NULL,
    .gpu = false,
};
/* clang-format on */

/* Where `make install` put the UCT module; configure substitutes it. */
static char *mca_hook_strata_default_uct_module = STRATA_UCT_MODULE_PATH;

static int mca_hook_strata_component_register(void)
{
    mca_base_component_t *c = &mca_hook_strata_component.super.hookm_version;

    if (OMPI_SUCCESS != mca_strata_ompi_version_check("hook/strata")) {
        return OMPI_ERR_NOT_AVAILABLE;
    }

    mca_hook_strata_component.load_uct = false;
    (void)mca_base_component_var_register(
        c, "load_uct",
        "Load Strata's UCX transport module (libuct_strata.so) early in MPI_Init, "
        "before pml/ucx initializes UCX. Needed for UCX versions without plugin "
        "discovery (before 1.22)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_hook_strata_component.load_uct);

    mca_hook_strata_component.uct_module = mca_hook_strata_default_uct_module;
    (void)mca_base_component_var_register(
        c, "uct_module",
        "Path of libuct_strata.so to load when hook_strata_load_uct is set "
        "(default: where make install put it)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_hook_strata_component.uct_module);

    mca_hook_strata_component.device_datatypes = true;
    (void)mca_base_component_var_register(
        c, "device_datatypes",
        "With hook_strata_load_uct: pack and unpack non-contiguous MPI datatypes on GPU "
        "buffers for pml/ucx by copying their runs to and from the device (Open MPI "
        "without CUDA support packs them on the CPU, which cannot read GPU memory)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_hook_strata_component.device_datatypes);

    mca_hook_strata_component.device_datatypes_chunk = 262144;
    (void)mca_base_component_var_register(
        c, "device_datatypes_chunk",
        "Host memory (bytes, per thread) sends of non-contiguous datatypes on GPU memory "
        "may use to read nearby runs with one copy (hook_strata_device_datatypes_gap); 0 "
        "copies each run on its own",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_hook_strata_component.device_datatypes_chunk);

    mca_hook_strata_component.device_datatypes_gap = 4096;
    (void)mca_base_component_var_register(
        c, "device_datatypes_gap",
        "Largest gap (bytes) between two runs of a non-contiguous datatype on GPU memory "
        "that a send reads along, to copy both runs at once (one copy costs about as much "
        "as a few KiB of data)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_hook_strata_component.device_datatypes_gap);

    mca_hook_strata_component.verbose = 0;
    (void)mca_base_component_var_register(
        c, "verbose",
        "Verbosity of hook/strata (0 silent, 10 says what was loaded, 20 each non-contiguous "
        "send or receive on GPU memory)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_hook_strata_component.verbose);
    return OMPI_SUCCESS;
}

static void mca_hook_strata_load_uct(void);

static int mca_hook_strata_component_open(void)
{
    mca_hook_strata_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_hook_strata_component.output,
                              mca_hook_strata_component.verbose);
    if (MCA_HOOK_STRATA_LOAD_AT_OPEN) {
        /* The hook framework opens before the pml's (instance init). */
        mca_hook_strata_load_uct();
    }
    return OMPI_SUCCESS;
}

static int mca_hook_strata_component_close(void)
{
    /* The UCT module stays loaded: UCX holds pointers into it until the
     * process exits, after MPI_Finalize. */
    if (mca_hook_strata_component.output >= 0) {
        opal_output_close(mca_hook_strata_component.output);
        mca_hook_strata_component.output = -1;
    }
    return OMPI_SUCCESS;
}

static void mca_hook_strata_mpi_init_top_post_opal(int argc, char **argv, int requested,
                                                  int *provided)
{
    mca_hook_strata_load_uct();
}

static void mca_hook_strata_mpi_init_bottom(int argc, char **argv, int requested, int *provided)
{
#ifdef MCA_HOOK_STRATA_HAVE_DT
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    int ucx_ready   = mca_hook_strata_component.gpu && NULL != mca_hook_strata_component.uct_handle;

#if MCA_STRATA_OMPI_5
    mca_hook_strata_cuda_aware_answer_accel(mca_hook_strata_component.output, pml, ucx_ready);
#else
    if (ucx_ready) {
        mca_hook_strata_cuda_aware_answer(mca_hook_strata_component.output, pml);
    }
#endif
#endif
}

/* Before pml/ucx calls ucp_init: at most once per process. */
static void mca_hook_strata_load_uct(void)
{
    const char *path = mca_hook_strata_component.uct_module;

    if (!mca_hook_strata_component.load_uct || NULL != mca_hook_strata_component.uct_handle) {
        return;
    }
#ifdef MCA_HOOK_STRATA_HAVE_DT
    /* Without a driver the line still runs, quietly, on the host transports. */
    mca_hook_strata_component.gpu =
        mca_hook_strata_cuda_aware_probe(mca_hook_strata_component.output);
#endif
    if (NULL == path || '\0' == path[0]) {
        opal_output(0, "hook:strata: hook_strata_load_uct is set but hook_strata_uct_module "
                       "is empty; Strata's UCX transports are not loaded");
        return;
    }
    /* RTLD_GLOBAL: the module's constructor registers the component with the
     * libuct already in the process, and UCX later resolves its symbols. */
    mca_hook_strata_component.uct_handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (NULL == mca_hook_strata_component.uct_handle) {
        opal_output(0, "hook:strata: cannot load %s (%s); Strata's UCX transports are not "
                       "available in this job (set hook_strata_uct_module to the installed "
                       "libuct_strata.so)", path, dlerror());
        return;
    }
    opal_output_verbose(10, mca_hook_strata_component.output, "hook:strata: loaded %s", path);
#ifdef MCA_HOOK_STRATA_HAVE_DT
    if (mca_hook_strata_component.device_datatypes) {
        mca_hook_strata_dt_enable(mca_hook_strata_component.output);
    }
#endif
}
