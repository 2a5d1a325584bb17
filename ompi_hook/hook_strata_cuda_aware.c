/*
 * The CUDA-aware launch line on a node without a driver, and the answer
 * applications get from MPIX_Query_cuda_support() (hook_strata_cuda_aware.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif

#include "hook_strata_cuda_aware.h"

#include "common/strata_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi_common/strata_ompi.h"
#include "opal/util/output.h"
#if MCA_STRATA_OMPI_5
#include "opal/mca/accelerator/accelerator.h"
#include "opal/mca/accelerator/base/base.h"
#include "opal/runtime/opal_params_core.h"
#endif

/* Strata's UCX transports, as config/cuda-aware.conf names them. */
#define HOOK_STRATA_CA_TLS "gpu_copy,gpu_ipc"

int mca_hook_strata_cuda_aware_probe(int output)
{
    const char *tls = getenv("UCX_TLS");
    char trimmed[1024];

    if (0 == strata_cuda_load() && strata_cuda_device_count() > 0) {
        return 1;
    }
    /* UCX names every transport of UCX_TLS it cannot find in a warning, on
     * every rank; users keep one launch line for GPU and CPU nodes. */
    if (NULL != tls &&
        mca_hook_strata_cuda_aware_tls_without(tls, HOOK_STRATA_CA_TLS, trimmed, sizeof(trimmed))) {
        setenv("UCX_TLS", trimmed, 1);
        opal_output_verbose(10, output,
                            "hook:strata: no GPU here (%s): UCX_TLS=%s (without " HOOK_STRATA_CA_TLS
                            ")",
                            (0 == strata_cuda_load()) ? "no device" : strata_cuda_error(), trimmed);
    }
    return 0;
}

/* Whether UCX_TLS lets device buffers reach Strata's transports: unset,
 * "all", a negated list that does not name gpu_copy, or a list naming it
 * (a user's own list replaces the tune file's). */
static int hook_strata_ca_tls_ok(const char *tls)
{
    if (NULL == tls || 0 == strcmp(tls, "all")) {
        return 1;
    }
    if ('^' == tls[0]) {
        return !mca_hook_strata_cuda_aware_tls_names(tls + 1, "gpu_copy");
    }
    return mca_hook_strata_cuda_aware_tls_names(tls, "gpu_copy");
}

#if MCA_STRATA_OMPI_5
/* Whether the selected accelerator module is Strata's: the object holding
 * its functions exports Strata's mark (an Open MPI built with CUDA has a
 * "cuda" component of its own, which is never touched). */
static int hook_strata_ca_accel_is_strata(void)
{
    Dl_info info;
    void *handle, *mark;

    if (opal_built_with_cuda_support || NULL == opal_accelerator.check_addr ||
        0 == dladdr((void *)opal_accelerator.check_addr, &info) || NULL == info.dli_fname) {
        return 0;
    }
    handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (NULL == handle) {
        return 0;
    }
    mark = dlsym(handle, "mca_accelerator_cuda_strata_marker");
    dlclose(handle);
    return NULL != mark;
}

/*
 * Open MPI 5.0 answers 1 exactly when the selected accelerator component is
 * named "cuda": Strata's (ompi_accel/), which makes the datatype engine and
 * pml/ob1 CUDA-aware by itself.  pml/ucx instead hands device buffers to
 * UCX, which takes them only with Strata's module loaded and gpu_copy in
 * UCX_TLS; without those the answer would claim what is not there, so the
 * name the answer is read from is changed and the answer is 0.  That name
 * is Open MPI's copy of the selected component; after selection it is read
 * by the answer, by comparisons with "null" (pml/ob1, the datatype engine:
 * unaffected), and by btl/ofi, mtl/ofi and btl/smcuda, which take device
 * memory only from a "cuda" component: under pml/ucx without Strata's path
 * no device buffer goes through them correctly anyway.
 */
void mca_hook_strata_cuda_aware_answer_accel(int output, const char *pml, int ucx_ready)
{
    char *name      = opal_accelerator_base_selected_component.base_version.mca_component_name;
    const char *tls = getenv("UCX_TLS");

    if (0 == strcmp(name, "cuda") && !hook_strata_ca_accel_is_strata()) {
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() left as it is: the "
                            "accelerator component is Open MPI's own CUDA component");
        return;
    }
    if (0 != strcmp(name, "cuda")) {
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() answers 0: the accelerator "
                            "component is '%s' (accelerator_cuda_strata_enable not set, or no "
                            "device here)",
                            name);
        return;
    }
    if (NULL != pml && 0 == strcmp(pml, "ucx") && (!ucx_ready || !hook_strata_ca_tls_ok(tls))) {
        snprintf(name,
                 sizeof(opal_accelerator_base_selected_component.base_version.mca_component_name),
                 "%s", "cuda-without-pml-ucx");
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() answers 0: pml/ucx carries "
                            "the job and %s",
                            ucx_ready ? "UCX_TLS leaves out gpu_copy"
                                      : "Strata's UCX module is not loaded");
        return;
    }
    opal_output_verbose(10, output,
                        "hook:strata: MPIX_Query_cuda_support() answers 1: Strata's accelerator "
                        "component is selected, device buffers go through pml/%s",
                        (NULL == pml) ? "?" : pml);
}
#endif

void mca_hook_strata_cuda_aware_answer(int output, const char *pml)
{
    const char *tls = getenv("UCX_TLS");
    Dl_info fn_info, mpi_info;
    char why[160];
    void *fn;

    /* ob1 on Open MPI 4.1 built without CUDA copies device memory with the
     * CPU: only pml/ucx alone makes point-to-point CUDA-aware. */
    if (NULL == pml || 0 != strcmp(pml, "ucx")) {
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() left as it is: pml is '%s', "
                            "not ucx alone",
                            (NULL == pml) ? "" : pml);
        return;
    }
    /* Without gpu_copy in UCX_TLS device buffers do not reach Strata. */
    if (!hook_strata_ca_tls_ok(tls)) {
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() left as it is: UCX_TLS=%s "
                            "leaves out gpu_copy",
                            tls);
        return;
    }
    /* The definition in libmpi (the object Open MPI's pml framework is in:
     * MPI_Init may be a profiling tool's), not one an application may have
     * of its own. */
    fn = dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support");
    if (NULL == fn || 0 == dladdr(fn, &fn_info) ||
        0 == dladdr((void *)&mca_pml_base_selected_component, &mpi_info) ||
        fn_info.dli_fbase != mpi_info.dli_fbase) {
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() left as it is: not found in "
                            "Open MPI's library");
        return;
    }
    if (0 != mca_hook_strata_cuda_aware_return_one(fn, why, sizeof(why))) {
        opal_output_verbose(10, output,
                            "hook:strata: MPIX_Query_cuda_support() left as it is (%s): %s",
                            mpi_info.dli_fname, why);
        return;
    }
    opal_output_verbose(10, output,
                        "hook:strata: MPIX_Query_cuda_support() answers 1 (%s): device buffers "
                        "go through pml/ucx with Strata's transports",
                        mpi_info.dli_fname);
}
