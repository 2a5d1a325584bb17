/*
 * UCT component "strata" (libuct_strata.so): the gpu_copy and gpu_ipc
 * memory domains and transports.
 *
 * Registering from a constructor is what lets a UCX without plugin discovery
 * pick the component up after dlopen/LD_PRELOAD: the constructor adds it to
 * libuct's component list before ucp_init walks that list.  Nothing here may
 * touch CUDA at load time: the constructor runs in every process that loads
 * the module, GPU or not.  The driver is opened on the first resource query.
 *
 * The module shares UCT's internal structures, which change with every
 * minor release of UCX, so the constructor first checks that the UCX it
 * was loaded into is the series it was built against, and otherwise
 * registers nothing (component, transports, settings, memory hooks) and
 * says why on stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include "strata_config.h"
#include "base/strata_md.h"
#include "strata_memhooks.h"
#include "gpu_copy/gpu_copy_iface.h"
#include "gpu_copy/gpu_copy_md.h"
#include "gpu_ipc/gpu_ipc_iface.h"
#include "gpu_ipc/gpu_ipc_md.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stands in for the running UCX's version ("major.minor.release"), for
 * Strata's own tests of the refusal only. */
#define UCT_STRATA_TEST_UCX_VERSION_ENV "STRATA_TEST_UCX_RUNNING_VERSION"

static const uct_strata_md_desc_t *const uct_strata_md_descs[] = {
    &uct_gpu_copy_md_desc,
    &uct_gpu_ipc_md_desc,
};

/*
 * Two memory domains when the driver is usable and sees a GPU; none
 * otherwise.  A node without a GPU or driver is not an error: the reason
 * is logged at debug level (UCX_LOG_LEVEL=debug), never by default.
 */
static ucs_status_t uct_strata_query_md_resources(uct_component_t *component,
                                                  uct_md_resource_desc_t **resources_p,
                                                  unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    unsigned i;

    if (strata_cuda_device_count() <= 0) {
        ucs_debug("strata: no GPU memory domains: %s",
                  (strata_cuda_state() == STRATA_CUDA_READY) ? "the driver reports no device"
                                                             : strata_cuda_error());
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }
    resources = ucs_calloc(ucs_static_array_size(uct_strata_md_descs), sizeof(*resources),
                           "strata md resources");
    if (resources == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < ucs_static_array_size(uct_strata_md_descs); ++i) {
        ucs_snprintf_zero(resources[i].md_name, sizeof(resources[i].md_name), "%s",
                          uct_strata_md_descs[i]->name);
    }
    *resources_p     = resources;
    *num_resources_p = ucs_static_array_size(uct_strata_md_descs);
    return UCS_OK;
}

static ucs_status_t uct_strata_component_md_open(uct_component_t *component, const char *md_name,
                                                 const uct_md_config_t *config, uct_md_h *md_p)
{
    unsigned i;

    for (i = 0; i < ucs_static_array_size(uct_strata_md_descs); ++i) {
        if (!strcmp(md_name, uct_strata_md_descs[i]->name)) {
            return uct_strata_md_open(uct_strata_md_descs[i], component, config, md_p);
        }
    }
    ucs_error("component %s has no memory domain '%s' (it has %s and %s)",
              UCT_STRATA_COMPONENT_NAME, md_name, UCT_STRATA_MD_NAME_COPY, UCT_STRATA_MD_NAME_IPC);
    return UCS_ERR_NO_DEVICE;
}

/*
 * Both domains' keys arrive here.  gpu_copy's is only its magic and is
 * never needed (copies are local); anything else is gpu_ipc's to check.
 */
static ucs_status_t uct_strata_rkey_unpack(UCT_STRATA_RKEY_UNPACK_ARGS)
{
    uint32_t magic;

    /* UCP 1.13 releases every key of a failed unpack, the failed one too:
     * it must hold a value rkey_release recognizes as empty. */
    *rkey_p   = UCT_INVALID_RKEY;
    *handle_p = NULL;
    memcpy(&magic, rkey_buffer, sizeof(magic));
    if (magic == UCT_GPU_COPY_KEY_MAGIC) {
        return UCS_OK;
    }
    return uct_gpu_ipc_rkey_unpack(UCT_STRATA_RKEY_UNPACK_PASS);
}

static ucs_status_t uct_strata_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                            void *handle)
{
    if (rkey == UCT_INVALID_RKEY) {
        return UCS_OK;
    }
    return uct_gpu_ipc_rkey_release(component, rkey, handle);
}

/* clang-format off */
uct_component_t uct_strata_component = {
    .query_md_resources = uct_strata_query_md_resources,
    .md_open            = uct_strata_component_md_open,
    .cm_open            = (uct_component_cm_open_func_t)ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_strata_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)ucs_empty_function_return_unsupported,
    .rkey_release       = uct_strata_rkey_release,
    .name               = UCT_STRATA_COMPONENT_NAME,
    .md_config          = {
        .name           = "Strata GPU memory domains",
        .prefix         = "STRATA_",
        .table          = uct_strata_md_config_table,
        .size           = sizeof(uct_strata_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_strata_component),
    .flags              = 0,
    UCT_STRATA_COMPONENT_VERSIONED
};
/* clang-format on */

/* ---- registration ---- */

typedef void (*uct_strata_ucp_get_version_func_t)(unsigned *major, unsigned *minor,
                                                  unsigned *release);

static uct_tl_t *const uct_strata_tls[] = {
    &UCT_TL_NAME(gpu_copy),
    &UCT_TL_NAME(gpu_ipc),
};

static int uct_strata_registered;

/*
 * libuct and libucs have no version call; libucp, of the same installation
 * (one source tree, one package), has ucp_get_version().  It is in the
 * process when the program uses UCP; a program of UCT alone gets the libucp
 * beside the libuct it runs, loaded for the question and closed again
 * (its constructor and destructor only add and remove its settings).
 * Returns 0 with the version, or -1 with the reason in `why`.
 */
static int uct_strata_running_ucx_version(unsigned version[3], char *why, size_t max)
{
    uct_strata_ucp_get_version_func_t get_version;
    const char *test = getenv(UCT_STRATA_TEST_UCX_VERSION_ENV);
    char path[PATH_MAX];
    void *libucp = NULL;
    const char *slash;
    Dl_info info;

    version[0] = version[1] = version[2] = 0;
    if ((test != NULL) && (test[0] != '\0')) {
        if (sscanf(test, "%u.%u.%u", &version[0], &version[1], &version[2]) < 2) {
            snprintf(why, max, "%s=\"%s\" is not a version", UCT_STRATA_TEST_UCX_VERSION_ENV, test);
            return -1;
        }
        return 0;
    }
    get_version = (uct_strata_ucp_get_version_func_t)dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (get_version == NULL) {
        if (!dladdr((void *)uct_md_open, &info) || (info.dli_fname == NULL) ||
            ((slash = strrchr(info.dli_fname, '/')) == NULL)) {
            snprintf(why, max, "libucp is not loaded and libuct's location is unknown");
            return -1;
        }
        snprintf(path, sizeof(path), "%.*s/libucp.so.0", (int)(slash - info.dli_fname),
                 info.dli_fname);
        libucp      = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        get_version = (libucp == NULL) ?
                          NULL :
                          (uct_strata_ucp_get_version_func_t)dlsym(libucp, "ucp_get_version");
        if (get_version == NULL) {
            snprintf(why, max, "cannot ask %s: %s", path, dlerror());
            if (libucp != NULL) {
                dlclose(libucp);
            }
            return -1;
        }
    }
    get_version(&version[0], &version[1], &version[2]);
    if (libucp != NULL) {
        dlclose(libucp);
    }
    return 0;
}

/*
 * 1 if the running UCX is of the series (major.minor) the module was built
 * against.  Otherwise the refusal goes to stderr: a mismatched libucs's log
 * functions read its own global settings, whose layout is one of the things
 * that changed.
 */
static int uct_strata_ucx_version_matches(void)
{
    unsigned built[3] = {0, 0, 0}, running[3];
    char why[PATH_MAX + 128];

    (void)sscanf(STRATA_BUILT_UCX_VERSION, "%u.%u.%u", &built[0], &built[1], &built[2]);
    if (uct_strata_running_ucx_version(running, why, sizeof(why)) != 0) {
        fprintf(stderr,
                "libuct_strata.so: built against UCX %s, but cannot tell which UCX this "
                "process runs (%s): the UCT component \"%s\" is not registered\n",
                STRATA_BUILT_UCX_VERSION, why, UCT_STRATA_COMPONENT_NAME);
        return 0;
    }
    if ((running[0] != built[0]) || (running[1] != built[1])) {
        fprintf(stderr,
                "libuct_strata.so: built against UCX %s, but this process runs UCX %u.%u.%u, "
                "whose internal structures differ: the UCT component \"%s\" is not "
                "registered (rebuild Strata against this UCX and its source)\n",
                STRATA_BUILT_UCX_VERSION, running[0], running[1], running[2],
                UCT_STRATA_COMPONENT_NAME);
        return 0;
    }
    return 1;
}

/* What UCT_COMPONENT_REGISTER and UCT_TL_DEFINE do, each from a constructor
 * of its own, done by one constructor after the version check. */
UCS_STATIC_INIT
{
    unsigned i;

    if (!uct_strata_ucx_version_matches()) {
        return;
    }
    for (i = 0; i < ucs_static_array_size(uct_strata_tls); ++i) {
        ucs_list_add_tail(&ucs_config_global_list, &uct_strata_tls[i]->config.list);
        ucs_list_add_tail(&uct_strata_component.tl_list, &uct_strata_tls[i]->list);
    }
    ucs_list_add_tail(&ucs_config_global_list, &uct_strata_component.md_config.list);
    ucs_list_add_tail(&ucs_config_global_list, &uct_strata_component.cm_config.list);
    ucs_list_add_tail(&uct_components_list, &uct_strata_component.list);
    uct_strata_memhooks_register();
    uct_strata_registered = 1;
}

/* As UCX's macros: the settings leave the global list, the component stays
 * in libuct's (which outlives no module of its own either). */
UCS_STATIC_CLEANUP
{
    unsigned i;

    if (!uct_strata_registered) {
        return;
    }
    uct_strata_memhooks_unregister();
    ucs_list_del(&uct_strata_component.cm_config.list);
    ucs_list_del(&uct_strata_component.md_config.list);
    for (i = 0; i < ucs_static_array_size(uct_strata_tls); ++i) {
        ucs_list_del(&uct_strata_tls[i]->config.list);
    }
}
