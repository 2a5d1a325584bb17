/*
 * What applications are told: Open MPI's answers to "is MPI CUDA-aware?"
 * under the CUDA-aware line on this node (README, "What applications are
 * told"), from what the earlier checks found.
 */
#include "strata_config.h"
#include "strata_info.h"

void strata_info_check_apps(strata_info_t *info)
{
    unsigned major = strata_info_ompi_major(info);

    strata_info_section(info, "what applications are told");
    strata_info_line(info, STRATA_INFO_NOTE, "MPIX_CUDA_AWARE_SUPPORT",
                     "0, compiled into each application from the distribution's mpi-ext.h "
                     "(Open MPI built without CUDA): codes that test it need their own switch "
                     "(README)");
    if (!info->cuda_ready || info->num_gpus <= 0) {
        strata_info_line(info, STRATA_INFO_NOTE, "MPIX_Query_cuda_support()",
                         "0: no usable GPU here; the CUDA-aware line runs on the host "
                         "transports, quietly");
    } else if (NULL == info->uct_component) {
        strata_info_line(info, STRATA_INFO_NOTE, "MPIX_Query_cuda_support()",
                         "0: Strata's UCX module does not load (see plugins)");
    } else if (major >= 5 && !info->accel_loads) {
        strata_info_line(info, STRATA_INFO_WARN, "MPIX_Query_cuda_support()",
                         "0: Open MPI %u answers from its accelerator framework, and Strata's "
                         "component for it (mca_accelerator_cuda.so) does not load (see "
                         "plugins); device buffers work all the same through pml/ucx and "
                         "coll/strata: tell applications with their own switch",
                         major);
    } else if (major >= 5) {
        strata_info_line(info, STRATA_INFO_OK, "MPIX_Query_cuda_support()",
                         "1 under the CUDA-aware line (Strata's accelerator component, selected "
                         "on this node's driver; pml/ob1 then carries device buffers too); 0 "
                         "without the line, and 0 where pml/ucx runs without gpu_copy in "
                         "UCX_TLS");
    } else if (4 == major) {
        strata_info_line(info, STRATA_INFO_OK, "MPIX_Query_cuda_support()",
                         "1 under the CUDA-aware line, after MPI_Init, with pml/ucx (hook/strata "
                         "makes Open MPI 4.1's 'return 0' answer 1); 0 without the line");
    } else {
        strata_info_line(info, STRATA_INFO_NOTE, "MPIX_Query_cuda_support()",
                         "not known: Open MPI's version could not be read");
    }
}
