/*
 * strata_info: checks a node for CUDA-aware MPI with Strata and prints the
 * mpirun line to use (README, "Checking a node: strata_info").
 *
 * Exit status: 0 when everything CUDA-aware MPI with Strata needs is there
 * (warnings allowed), 1 when something is missing, 2 on a usage error.
 */
#include "strata_config.h"
#include "strata_info.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STRATA_INFO_BUILDDIR_ENV "STRATA_INFO_BUILDDIR"

static void strata_info_usage(void)
{
    printf("Usage: strata_info [--json] [--quiet] [--builddir DIR] [--uct-module FILE]\n"
           "                   [--ompi-components DIR]\n"
           "Checks whether this node can run CUDA-aware MPI with Strata %s, and prints the\n"
           "mpirun line to use: versions of Open MPI and UCX, Strata's plugins, the CUDA\n"
           "driver and GPUs, the allocation hooks, CUDA IPC between the GPUs, GPUDirect RDMA.\n"
           "\n"
           "  --json                 one JSON object on stdout instead of the report\n"
           "  -q, --quiet            print only the WARN and MISSING lines\n"
           "  --builddir DIR         check an uninstalled build tree: its plugins in\n"
           "                         DIR/components/ (also: %s=DIR)\n"
           "  --uct-module FILE      the libuct_strata.so to check\n"
           "                         (default %s/libuct_strata.so)\n"
           "  --ompi-components DIR  where mca_coll_strata.so and mca_hook_strata.so are\n"
           "                         (default %s)\n"
           "  -h, --help             this text\n"
           "\n"
           "Each line is OK, INFO (a fact, or what was not checked here and why), WARN\n"
           "(CUDA-aware MPI works, slower or with less) or MISSING (it will not work).\n"
           "UCX's own messages are off unless UCX_LOG_LEVEL is set.\n"
           "\n"
           "Exit status: 0 ready for CUDA-aware MPI (warnings allowed), 1 something is\n"
           "missing, 2 usage error.\n",
           PACKAGE_VERSION, STRATA_INFO_BUILDDIR_ENV, STRATA_INFO_UCX_MODULE_DIR,
           STRATA_INFO_OMPI_COMPONENT_DIR);
}

/* dir + suffix into dst; -1, with a message, if it does not fit. */
static int strata_info_path(char *dst, size_t max, const char *dir, const char *suffix)
{
    if ((size_t)snprintf(dst, max, "%s%s", dir, suffix) >= max) {
        fprintf(stderr, "strata_info: path too long: %s%s\n", dir, suffix);
        return -1;
    }
    return 0;
}

/* The build tree's source directory, from its top Makefile (automake
 * writes abs_top_srcdir there); this build's own as the fallback. */
static void strata_info_find_srcdir(strata_info_t *info)
{
    static const char key[] = "abs_top_srcdir = ";
    char path[PATH_MAX + 16], line[PATH_MAX + 64]; /* path: realpath's PATH_MAX first */
    FILE *f;

    snprintf(info->srcdir, sizeof(info->srcdir), "%s", STRATA_INFO_SRCDIR);
    snprintf(path, sizeof(path), "%s/Makefile", info->builddir);
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (!strncmp(line, key, sizeof(key) - 1)) {
            line[strcspn(line, "\n")] = '\0';
            if (realpath(line + sizeof(key) - 1, path) != NULL) {
                (void)strata_info_path(info->srcdir, sizeof(info->srcdir), path, "");
            }
            break;
        }
    }
    fclose(f);
}

static int strata_info_set_builddir(strata_info_t *info, const char *dir)
{
    struct stat st;

    if ((realpath(dir, info->builddir) == NULL) || (stat(info->builddir, &st) != 0) ||
        !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "strata_info: build tree '%s' is not a directory\n", dir);
        return -1;
    }
    strata_info_find_srcdir(info);
    return 0;
}

enum {
    STRATA_INFO_OPT_JSON = 256,
    STRATA_INFO_OPT_BUILDDIR,
    STRATA_INFO_OPT_UCT_MODULE,
    STRATA_INFO_OPT_OMPI_COMPONENTS,
};

static int strata_info_parse(strata_info_t *info, int argc, char **argv)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, STRATA_INFO_OPT_JSON},
        {"quiet", no_argument, NULL, 'q'},
        {"builddir", required_argument, NULL, STRATA_INFO_OPT_BUILDDIR},
        {"uct-module", required_argument, NULL, STRATA_INFO_OPT_UCT_MODULE},
        {"ompi-components", required_argument, NULL, STRATA_INFO_OPT_OMPI_COMPONENTS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *builddir = getenv(STRATA_INFO_BUILDDIR_ENV);
    const char *uct_module = NULL, *uct_suffix = "";
    const char *ompi_components = NULL, *ompi_suffix = "";
    int opt;

    while ((opt = getopt_long(argc, argv, "qh", options, NULL)) != -1) {
        switch (opt) {
        case STRATA_INFO_OPT_JSON: info->json = 1; break;
        case 'q': info->quiet = 1; break;
        case STRATA_INFO_OPT_BUILDDIR: builddir = optarg; break;
        case STRATA_INFO_OPT_UCT_MODULE: uct_module = optarg; break;
        case STRATA_INFO_OPT_OMPI_COMPONENTS: ompi_components = optarg; break;
        case 'h': strata_info_usage(); exit(0);
        default: fprintf(stderr, "Try 'strata_info --help'.\n"); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "strata_info: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if ((builddir != NULL) && (builddir[0] != '\0') &&
        (strata_info_set_builddir(info, builddir) != 0)) {
        return -1;
    }
    info->paths_given = (uct_module != NULL) || (ompi_components != NULL);
    if (uct_module == NULL) {
        uct_module = (info->builddir[0] != '\0') ? info->builddir : STRATA_INFO_UCX_MODULE_DIR;
        uct_suffix = (info->builddir[0] != '\0') ? "/components/ucx/libuct_strata.so"
                                                 : "/libuct_strata.so";
    }
    if (ompi_components == NULL) {
        ompi_components = (info->builddir[0] != '\0') ? info->builddir
                                                       : STRATA_INFO_OMPI_COMPONENT_DIR;
        ompi_suffix     = (info->builddir[0] != '\0') ? "/components/ompi" : "";
    }
    if ((strata_info_path(info->uct_module, sizeof(info->uct_module), uct_module, uct_suffix) !=
         0) ||
        (strata_info_path(info->ompi_component_dir, sizeof(info->ompi_component_dir),
                          ompi_components, ompi_suffix) != 0)) {
        return -1;
    }
    return 0;
}

static void strata_info_header(strata_info_t *info)
{
    if (gethostname(info->node, sizeof(info->node)) != 0) {
        snprintf(info->node, sizeof(info->node), "this node");
    }
    info->node[sizeof(info->node) - 1] = '\0';
    if (info->json || info->quiet) {
        return;
    }
    printf("strata_info: Strata %s on %s, checking %s%s\n", PACKAGE_VERSION, info->node,
           (info->builddir[0] != '\0') ? "the build tree " : "the installed Strata",
           info->builddir);
}

int main(int argc, char **argv)
{
    static strata_info_t info;
    ssize_t len;
    int missing;

    if ((argc == 3) && !strcmp(argv[1], "--ipc-peer")) {
        return strata_info_ipc_peer_main(atoi(argv[2]));
    }
    if (strata_info_parse(&info, argc, argv) != 0) {
        return 2;
    }
    len = readlink("/proc/self/exe", info.self_exe, sizeof(info.self_exe) - 1);
    if (len <= 0) {
        snprintf(info.self_exe, sizeof(info.self_exe), "%s", argv[0]);
    }
    /* UCX prints its messages on stdout, where the report (and --json)
     * goes; the report says what went wrong itself. */
    setenv("UCX_LOG_LEVEL", "fatal", 0);

    strata_info_header(&info);
    strata_info_check_versions(&info);
    strata_info_check_plugins(&info);
    strata_info_check_cuda(&info);
    strata_info_check_memtypes(&info);
    strata_info_check_ipc(&info);
    strata_info_check_rdma(&info);
    strata_info_check_apps(&info);
    strata_info_check_mpirun(&info);
    strata_info_report_finish(&info);

    missing = (strata_info_count(&info, STRATA_INFO_MISSING) > 0);
    strata_info_report_free(&info);
    return missing ? 1 : 0;
}
