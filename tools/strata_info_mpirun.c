/*
 * The mpirun line for this node: README's one-argument form (--tune with
 * the installed cuda-aware.conf), plus what the checks found this node or
 * this installation needs beside it: the network transports, and the
 * paths of a build tree or a prefix install.
 */
#include "strata_config.h"
#include "strata_info.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void strata_info_mpirun_tune_file(strata_info_t *info, char *path, size_t max)
{
    if (info->builddir[0] != '\0') {
        snprintf(path, max, "%s/config/cuda-aware.conf", info->srcdir);
    } else {
        snprintf(path, max, "%s", STRATA_INFO_TUNE_FILE);
    }
    if (access(path, R_OK) != 0) {
        /* Open MPI 4.1's ranks read the file themselves and go on without
         * it; 5.0's mpirun reads it and stops. */
        strata_info_line(info, STRATA_INFO_MISSING, "tune file",
                         "%s is not readable%s: mpirun would %s", path,
                         (info->builddir[0] != '\0') ? "" : " (make install puts it there)",
                         (strata_info_ompi_major(info) >= 5)
                             ? "stop (\"Unable to locate the variable file\")"
                             : "warn \"Unable to locate the variable file\" and run without "
                               "Strata's settings");
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "tune file", "%s%s", path,
                     (info->builddir[0] != '\0') ? " (the build tree's source)" : "");
}

static const char *strata_info_mpirun_tls(strata_info_t *info)
{
    if (info->rdma_up) {
        strata_info_line(info, STRATA_INFO_OK, "UCX_TLS",
                         "self,sm,rc,gpu_copy,gpu_ipc: shared memory and Strata's transports "
                         "inside the node, InfiniBand/RoCE (rc, with ud for set-up) between "
                         "nodes");
        return "self,sm,rc,gpu_copy,gpu_ipc";
    }
    strata_info_line(info, STRATA_INFO_OK, "UCX_TLS",
                     "self,sm,tcp,gpu_copy,gpu_ipc: shared memory and Strata's transports inside "
                     "the node, TCP between nodes (no RDMA port up)");
    return "self,sm,tcp,gpu_copy,gpu_ipc";
}

void strata_info_check_mpirun(strata_info_t *info)
{
    char tune[PATH_MAX + 32], extra[3 * PATH_MAX + 128] = "";
    const char *tls;
    size_t used = 0;

    strata_info_section(info, "mpirun line");
    strata_info_mpirun_tune_file(info, tune, sizeof(tune));
    tls = strata_info_mpirun_tls(info);
    /* The component path by its long name, which the tune file sets (to
     * SYS_DEFAULT, Open MPI's own directory) and which this one replaces:
     * Open MPI 4.1 and 5.0 read it before mca_base_component_path, which
     * under Debian 13's mpirun (5.0) PMIx sets to its own plugin directory
     * for every rank.  SYS_DEFAULT is the running Open MPI's directory,
     * whichever it is (openmpi3 on Debian 12, openmpi40 on Debian 13). */
    if (info->need_component_path) {
        used += (size_t)snprintf(extra + used, sizeof(extra) - used,
                                 " --mca opal_mca_base_component_path SYS_DEFAULT:%s",
                                 info->ompi_component_dir);
    }
    /* hook/strata loads the module from where make install put it. */
    if (strcmp(info->uct_module, STRATA_INFO_UCX_MODULE_DIR "/libuct_strata.so") != 0) {
        (void)snprintf(extra + used, sizeof(extra) - used, " --mca hook_strata_uct_module %s",
                       info->uct_module);
    }
    if (info->num_gpus > 0) {
        strata_info_line(info, STRATA_INFO_NOTE, "ranks",
                         "one per GPU: -np <%d x nodes> --map-by ppr:%d:node; each rank selects "
                         "its GPU by OMPI_COMM_WORLD_LOCAL_RANK",
                         info->num_gpus, info->num_gpus);
    }
    strata_info_command(info, "mpirun --tune %s%s -x UCX_TLS=%s -np <ranks> ./app", tune, extra,
                        tls);
}
