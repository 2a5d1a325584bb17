/*
 * Versions: the Open MPI and UCX this node runs, against those Strata was
 * built for (configure put them in strata_config.h).
 *
 * The two are held to different standards.  libuct_strata.so compiles
 * against UCT's internal headers of exactly one UCX release, whose
 * structures change between releases, so any other UCX is missing.  The
 * Open MPI components implement the 4.1 coll and hook interfaces: another
 * 4.1.x runs them (a warning: rebuild to be sure), another series cannot.
 */
#define _GNU_SOURCE /* dladdr */
#include "strata_config.h"
#include "strata_info.h"
#include "strata_info_ucx.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* libmpi's soname for Open MPI 3.0 to 5.0; other MPIs have other names. */
#define STRATA_INFO_LIBMPI "libmpi.so.40"

typedef int (*strata_info_mpi_get_library_version_fn_t)(char *version, int *len);

static void strata_info_check_strata_build(strata_info_t *info)
{
#ifdef STRATA_BUILT_OMPI_VERSION
    const char *ompi = STRATA_BUILT_OMPI_VERSION;
#else
    const char *ompi = "none (built without the Open MPI components)";
#endif

    strata_info_line(info, STRATA_INFO_OK, "Strata",
                     "%s, built for Open MPI %s, UCX %s, CUDA %d.%d headers", PACKAGE_VERSION,
                     ompi, STRATA_BUILT_UCX_VERSION, CUDA_VERSION / 1000,
                     (CUDA_VERSION % 1000) / 10);
}

static void strata_info_check_ompi_version(strata_info_t *info)
{
#ifdef STRATA_BUILT_OMPI_VERSION
    strata_info_mpi_get_library_version_fn_t get_version;
    unsigned built[3] = {0, 0, 0}, run[3] = {0, 0, 0};
    char version[8192] = "", path[4096] = "";
    int len = 0;
    void *libmpi;
    Dl_info dl;

    libmpi = dlopen(STRATA_INFO_LIBMPI, RTLD_NOW | RTLD_LOCAL);
    if (libmpi == NULL) {
        strata_info_line(info, STRATA_INFO_MISSING, "Open MPI", "cannot load %s: %s",
                         STRATA_INFO_LIBMPI, dlerror());
        return;
    }
    /* MPI_Get_library_version is one of the few calls MPI allows before
     * MPI_Init; it starts nothing. */
    get_version = (strata_info_mpi_get_library_version_fn_t)dlsym(libmpi,
                                                                   "MPI_Get_library_version");
    if (get_version == NULL) {
        strata_info_line(info, STRATA_INFO_MISSING, "Open MPI", "%s has no MPI_Get_library_version",
                         STRATA_INFO_LIBMPI);
        return;
    }
    if ((dladdr((void *)get_version, &dl) != 0) && (dl.dli_fname != NULL)) {
        snprintf(path, sizeof(path), "%s", dl.dli_fname);
    }
    (void)get_version(version, &len);
    version[sizeof(version) - 1] = '\0';
    version[strcspn(version, ",")] = '\0'; /* "Open MPI v4.1.4, package: ..." */
    sscanf(STRATA_BUILT_OMPI_VERSION, "%u.%u.%u", &built[0], &built[1], &built[2]);
    if (sscanf(version, "Open MPI v%u.%u.%u", &run[0], &run[1], &run[2]) >= 2) {
        memcpy(info->ompi_version, run, sizeof(info->ompi_version));
    }
    if (info->ompi_version[0] == 0) {
        strata_info_line(info, STRATA_INFO_MISSING, "Open MPI",
                         "%s is \"%s\", not Open MPI: Strata's components are built for "
                         "Open MPI %s",
                         path, version, STRATA_BUILT_OMPI_VERSION);
    } else if ((run[0] != built[0]) || (run[1] != built[1])) {
        strata_info_line(info, STRATA_INFO_MISSING, "Open MPI",
                         "%u.%u.%u (%s), but Strata's components implement Open MPI %u.%u's "
                         "interfaces (built for %s): rebuild Strata against this Open MPI",
                         run[0], run[1], run[2], path, built[0], built[1],
                         STRATA_BUILT_OMPI_VERSION);
    } else if (run[2] != built[2]) {
        strata_info_line(info, STRATA_INFO_WARN, "Open MPI",
                         "%u.%u.%u (%s), Strata was built for %s: the same interfaces, but "
                         "rebuild Strata to be sure its components match this Open MPI",
                         run[0], run[1], run[2], path, STRATA_BUILT_OMPI_VERSION);
    } else {
        strata_info_line(info, STRATA_INFO_OK, "Open MPI", "%u.%u.%u (%s), as Strata was built for",
                         run[0], run[1], run[2], path);
    }
#else
    strata_info_line(info, STRATA_INFO_MISSING, "Open MPI",
                     "this Strata was built without its Open MPI components (configure found no "
                     "Open MPI 4.1, or --without-ompi)");
#endif
}

static void strata_info_check_ucx_version(strata_info_t *info)
{
    unsigned built[3] = {0, 0, 0}, *run = info->ucx_version;
    char error[512];

    if (strata_info_ucx_load(error, sizeof(error)) != 0) {
        strata_info_line(info, STRATA_INFO_MISSING, "UCX", "%s", error);
        return;
    }
    info->ucx_loaded = 1;
    strata_info_ucx.ucp_get_version(&run[0], &run[1], &run[2]);
    sscanf(STRATA_BUILT_UCX_VERSION, "%u.%u.%u", &built[0], &built[1], &built[2]);
    if ((run[0] != built[0]) || (run[1] != built[1]) || (run[2] != built[2])) {
        strata_info_line(info, STRATA_INFO_MISSING, "UCX",
                         "%u.%u.%u (%s), but libuct_strata.so is built against UCX %s's internal "
                         "headers, whose structures differ between releases: rebuild Strata "
                         "against this UCX (and its source tree)",
                         run[0], run[1], run[2], strata_info_ucx_libucp_path(),
                         STRATA_BUILT_UCX_VERSION);
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "UCX", "%u.%u.%u (%s), as Strata was built for", run[0],
                     run[1], run[2], strata_info_ucx_libucp_path());
}

unsigned strata_info_ompi_major(const strata_info_t *info)
{
    unsigned major = info->ompi_version[0];

#ifdef STRATA_BUILT_OMPI_VERSION
    if (major == 0) {
        (void)sscanf(STRATA_BUILT_OMPI_VERSION, "%u", &major);
    }
#endif
    return major;
}

void strata_info_check_versions(strata_info_t *info)
{
    strata_info_section(info, "Versions");
    strata_info_check_strata_build(info);
    strata_info_check_ompi_version(info);
    strata_info_check_ucx_version(info);
}
