/*
 * Plugins: each of Strata's plugins loads (dlopen, RTLD_NOW so that an
 * unresolved symbol shows now, not in the middle of a job), the UCT module
 * registers component "strata", and its domains offer the transports
 * ucx_info -d would list.  The module is opened as hook/strata opens it in
 * MPI_Init (RTLD_GLOBAL, after libuct), and stays loaded for the memory type
 * check.
 */
#include "strata_config.h"
#include "strata_info.h"
#include "strata_info_ucx.h"
#include "strata_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STRATA_INFO_COMPONENT_NAME "strata"

static void *strata_info_plugin_open(strata_info_t *info, const char *item, const char *path,
                                     int flags)
{
    struct stat st;
    void *handle;

    if (stat(path, &st) != 0) {
        strata_info_line(info, STRATA_INFO_MISSING, item, "%s: %s%s", path, strerror(errno),
                         info->paths_given            ? ""
                         : (info->builddir[0] != '\0') ? " (not built? run make in the build tree)"
                                                       : " (not installed? run make install, or "
                                                         "use --builddir DIR for a build tree)");
        return NULL;
    }
    handle = dlopen(path, flags);
    if (handle == NULL) {
        strata_info_line(info, STRATA_INFO_MISSING, item, "cannot load %s: %s", path, dlerror());
    }
    return handle;
}

/* "gpu_copy/gpu0 gpu_copy/gpu1" of one domain, as ucx_info -d lists them;
 * returns the number of transports. */
static int strata_info_md_transports(strata_info_t *info, uct_component_h component,
                                     const char *md_name, char *list, size_t max)
{
    uct_tl_resource_desc_t *resources;
    unsigned num, i;
    ucs_status_t status;
    size_t used = strlen(list);
    uct_md_h md;

    status = strata_info_ucx_md_open(component, md_name, &md);
    if (status != UCS_OK) {
        strata_info_line(info, STRATA_INFO_MISSING, "transports",
                         "cannot open memory domain %s: %s", md_name,
                         strata_info_ucx.ucs_status_string(status));
        return 0;
    }
    status = strata_info_ucx.uct_md_query_tl_resources(md, &resources, &num);
    if (status != UCS_OK) {
        strata_info_line(info, STRATA_INFO_MISSING, "transports",
                         "memory domain %s lists no transports: %s", md_name,
                         strata_info_ucx.ucs_status_string(status));
        strata_info_ucx.uct_md_close(md);
        return 0;
    }
    for (i = 0; (i < num) && (used < max); ++i) {
        used += (size_t)snprintf(list + used, max - used, "%s%s/%s", (used > 0) ? " " : "",
                                 resources[i].tl_name, resources[i].dev_name);
    }
    strata_info_ucx.uct_release_tl_resource_list(resources);
    strata_info_ucx.uct_md_close(md);
    return (int)num;
}

static int strata_info_has_transport(const char *list, const char *tl)
{
    size_t len = strlen(tl);
    const char *p;

    for (p = strstr(list, tl); p != NULL; p = strstr(p + 1, tl)) {
        if (((p == list) || (p[-1] == ' ')) && (p[len] == '/')) {
            return 1;
        }
    }
    return 0;
}

/* The domains of component "strata" and their transports. */
static void strata_info_check_transports(strata_info_t *info, uct_component_h component,
                                         unsigned md_count)
{
    uct_md_resource_desc_t *mds;
    uct_component_attr_t attr;
    char list[1024] = "";

    if (md_count == 0) {
        if (strata_cuda_load() != 0) {
            strata_info_line(info, STRATA_INFO_NOTE, "transports",
                             "none without a usable GPU, as ucx_info -d shows (%s; see CUDA)",
                             strata_cuda_error());
        } else {
            strata_info_line(info, STRATA_INFO_MISSING, "transports",
                             "component strata has no memory domains although the driver sees "
                             "%d GPU(s)", strata_cuda_device_count());
        }
        return;
    }
    mds = calloc(md_count, sizeof(*mds));
    if (mds == NULL) {
        strata_info_line(info, STRATA_INFO_MISSING, "transports", "out of memory");
        return;
    }
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds;
    if (strata_info_ucx.uct_component_query(component, &attr) == UCS_OK) {
        for (unsigned i = 0; i < md_count; ++i) {
            (void)strata_info_md_transports(info, component, mds[i].md_name, list, sizeof(list));
        }
    }
    free(mds);
    if (strata_info_has_transport(list, "gpu_copy") && strata_info_has_transport(list, "gpu_ipc")) {
        strata_info_line(info, STRATA_INFO_OK, "transports", "%s (ucx_info -d lists these)", list);
    } else {
        strata_info_line(info, STRATA_INFO_MISSING, "transports",
                         "gpu_copy and gpu_ipc are both needed; found: %s",
                         (list[0] != '\0') ? list : "none");
    }
}

static void strata_info_check_uct_component(strata_info_t *info)
{
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned num, i;
    ucs_status_t status;

    status = strata_info_ucx.uct_query_components(&components, &num);
    if (status != UCS_OK) {
        strata_info_line(info, STRATA_INFO_MISSING, "UCT component", "uct_query_components: %s",
                         strata_info_ucx.ucs_status_string(status));
        return;
    }
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if ((strata_info_ucx.uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, STRATA_INFO_COMPONENT_NAME)) {
            /* The handle is the module's own static component: it outlives
             * the list. */
            info->uct_component = components[i];
            break;
        }
    }
    strata_info_ucx.uct_release_component_list(components);
    if (info->uct_component == NULL) {
        strata_info_line(info, STRATA_INFO_MISSING, "UCT component",
                         "the module loaded but UCX lists no component \"%s\" (%u components)",
                         STRATA_INFO_COMPONENT_NAME, num);
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "UCT component",
                     "\"%s\" registered with UCX, %u memory domain(s)", STRATA_INFO_COMPONENT_NAME,
                     attr.md_resource_count);
    strata_info_check_transports(info, info->uct_component, attr.md_resource_count);
}

static void strata_info_check_uct_module(strata_info_t *info)
{
    if (!info->ucx_loaded) {
        strata_info_line(info, STRATA_INFO_NOTE, "libuct_strata.so",
                         "%s: not loaded, UCX itself did not load (see Versions)",
                         info->uct_module);
        return;
    }
    if (strata_info_plugin_open(info, "libuct_strata.so", info->uct_module,
                                RTLD_NOW | RTLD_GLOBAL) == NULL) {
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "libuct_strata.so", "loads: %s", info->uct_module);
    strata_info_check_uct_component(info);
}

#ifdef STRATA_BUILT_OMPI_VERSION /* a build with Strata's Open MPI components */
/* Returns 1 when the component file loads and holds its structure. */
static int strata_info_check_ompi_component(strata_info_t *info, const char *item, const char *file,
                                            const char *symbol)
{
    char path[PATH_MAX + 64];
    void *handle;

    snprintf(path, sizeof(path), "%s/%s", info->ompi_component_dir, file);
    handle = strata_info_plugin_open(info, item, path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        return 0;
    }
    if (dlsym(handle, symbol) == NULL) {
        strata_info_line(info, STRATA_INFO_MISSING, item,
                         "%s loads but has no %s: not an Open MPI component of Strata", path,
                         symbol);
        return 0;
    }
    strata_info_line(info, STRATA_INFO_OK, item, "loads: %s", path);
    return 1;
}

/* Whether `dir` is in a colon-separated path list. */
static int strata_info_in_path_list(const char *list, const char *dir)
{
    size_t len = strlen(dir);
    const char *p;

    for (p = list; p != NULL; p = strchr(p, ':')) {
        p += (*p == ':');
        if (!strncmp(p, dir, len) && ((p[len] == ':') || (p[len] == '\0'))) {
            return 1;
        }
    }
    return 0;
}

/* Whether a component path holds Open MPI's own directory: by its name, or
 * as SYS_DEFAULT (SYSTEM_DEFAULT), which Open MPI expands to it. */
static int strata_info_has_ompi_dir(const char *list)
{
    return strata_info_in_path_list(list, STRATA_INFO_OMPI_PKGLIBDIR) ||
           strata_info_in_path_list(list, "SYS_DEFAULT") ||
           strata_info_in_path_list(list, "SYSTEM_DEFAULT");
}

/*
 * Open MPI looks for components in its own directory only; a prefix
 * install or a build tree needs the component path, which the mpirun line
 * of the last section then sets by its long name, opal_mca_base_component_path
 * (read before mca_base_component_path by 4.1 and 5.0; the tune file sets
 * it).  The path replaces Open MPI's own directory, so one that leaves it
 * out loses every component of Open MPI (the --mca on the mpirun line wins
 * over the environment).  From the environment, the long name counts; the
 * short one only with Open MPI 4.1: with 5.0 the tune file's long name wins
 * over it (and Debian 13's PMIx hands every rank its own value of it).
 */
static void strata_info_check_component_path(strata_info_t *info)
{
    static const char long_var[]  = "OMPI_MCA_opal_mca_base_component_path";
    static const char short_var[] = "OMPI_MCA_mca_base_component_path";
    const char *var               = long_var;
    const char *env               = getenv(long_var);

    if ((env == NULL) && (getenv(short_var) != NULL)) {
        if (strata_info_ompi_major(info) >= 5) {
            strata_info_line(info, STRATA_INFO_NOTE, "component path",
                             "%s is not used by Open MPI %u's mpirun with the tune file (whose "
                             "opal_mca_base_component_path wins over it): set %s instead",
                             short_var, strata_info_ompi_major(info), long_var);
        } else {
            var = short_var;
            env = getenv(short_var);
        }
    }
    if ((env != NULL) && !strata_info_has_ompi_dir(env)) {
        info->need_component_path = 1;
        strata_info_line(info, STRATA_INFO_WARN, "component path",
                         "%s=%s leaves out Open MPI's own directory %s, so Open MPI finds none "
                         "of its own components: the mpirun line below overrides it; fix it for "
                         "other jobs (SYS_DEFAULT, Open MPI's directory, first)",
                         var, env, STRATA_INFO_OMPI_PKGLIBDIR);
        return;
    }
    if ((env != NULL) && strata_info_in_path_list(env, info->ompi_component_dir)) {
        strata_info_line(info, STRATA_INFO_OK, "component path", "%s includes %s", var,
                         info->ompi_component_dir);
        return;
    }
    if (!strcmp(info->ompi_component_dir, STRATA_INFO_OMPI_PKGLIBDIR)) {
        strata_info_line(info, STRATA_INFO_OK, "component path",
                         "Open MPI's own component directory, searched by default");
        return;
    }
    info->need_component_path = 1;
    strata_info_line(info, (info->builddir[0] != '\0') ? STRATA_INFO_OK : STRATA_INFO_WARN,
                     "component path",
                     "Open MPI searches only %s by default, not %s: the mpirun line below adds it "
                     "(opal_mca_base_component_path)",
                     STRATA_INFO_OMPI_PKGLIBDIR, info->ompi_component_dir);
}
#endif

void strata_info_check_plugins(strata_info_t *info)
{
    strata_info_section(info, "Plugins");
    strata_info_check_uct_module(info);
#ifdef STRATA_BUILT_OMPI_VERSION
    (void)strata_info_check_ompi_component(info, "coll/strata", "mca_coll_strata.so",
                                           "mca_coll_strata_component");
    (void)strata_info_check_ompi_component(info, "hook/strata", "mca_hook_strata.so",
                                           "mca_hook_strata_component");
#ifdef STRATA_BUILT_ACCEL
    /* Open MPI 5.0: named "cuda" for Open MPI's loader (ompi_accel/) */
    info->accel_loads = strata_info_check_ompi_component(info, "accelerator/cuda",
                                                         "mca_accelerator_cuda.so",
                                                         "mca_accelerator_cuda_component");
#endif
    strata_info_check_component_path(info);
#else
    strata_info_line(info, STRATA_INFO_MISSING, "coll/strata, hook/strata",
                     "not built: this Strata has no Open MPI components (see Versions)");
#endif
}
