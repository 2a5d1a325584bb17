/*
 * UCX, opened at run time (see strata_info_ucx.h).
 */
#define _GNU_SOURCE /* dladdr */
#include "strata_info_ucx.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

strata_info_ucx_api_t strata_info_ucx;

/* In dependency order, so each library finds the ones it needs already
 * loaded from the same directory. */
typedef struct strata_info_ucx_lib {
    const char *tag;
    const char *soname;
    void *handle;
} strata_info_ucx_lib_t;

static strata_info_ucx_lib_t strata_info_ucx_libs[] = {
    {"ucs", "libucs.so.0", NULL},
    {"ucm", "libucm.so.0", NULL},
    {"uct", "libuct.so.0", NULL},
    {"ucp", "libucp.so.0", NULL},
};

#define STRATA_INFO_UCX_NUM_LIBS (sizeof(strata_info_ucx_libs) / sizeof(strata_info_ucx_libs[0]))

static char strata_info_ucx_libucp[4096];

static void *strata_info_ucx_lib_handle(const char *tag)
{
    size_t i;

    for (i = 0; i < STRATA_INFO_UCX_NUM_LIBS; ++i) {
        if (!strcmp(strata_info_ucx_libs[i].tag, tag)) {
            return strata_info_ucx_libs[i].handle;
        }
    }
    return NULL;
}

static int strata_info_ucx_resolve(const char *tag, const char *name, void **ptr, char *error,
                                   size_t max)
{
    *ptr = dlsym(strata_info_ucx_lib_handle(tag), name);
    if (*ptr == NULL) {
        snprintf(error, max, "lib%s.so.0 has no %s (UCX too old?)", tag, name);
        return -1;
    }
    return 0;
}

#define STRATA_INFO_UCX_RESOLVE(_lib, _name) \
    if (strata_info_ucx_resolve(#_lib, #_name, (void **)&strata_info_ucx._name, error, max) != \
        0) { \
        return -1; \
    }

static int strata_info_ucx_resolve_all(char *error, size_t max)
{
    STRATA_INFO_UCX_FUNCS(STRATA_INFO_UCX_RESOLVE)
    return 0;
}

int strata_info_ucx_load(char *error, size_t max)
{
    Dl_info dl;
    size_t i;

    for (i = 0; i < STRATA_INFO_UCX_NUM_LIBS; ++i) {
        strata_info_ucx_libs[i].handle = dlopen(strata_info_ucx_libs[i].soname,
                                                RTLD_NOW | RTLD_GLOBAL);
        if (strata_info_ucx_libs[i].handle == NULL) {
            snprintf(error, max, "cannot load %s: %s", strata_info_ucx_libs[i].soname, dlerror());
            return -1;
        }
    }
    if (strata_info_ucx_resolve_all(error, max) != 0) {
        return -1;
    }
    if ((dladdr((void *)strata_info_ucx.ucp_get_version, &dl) != 0) && (dl.dli_fname != NULL)) {
        snprintf(strata_info_ucx_libucp, sizeof(strata_info_ucx_libucp), "%s", dl.dli_fname);
    }
    return 0;
}

const char *strata_info_ucx_libucp_path(void)
{
    return strata_info_ucx_libucp;
}

ucs_status_t strata_info_ucx_md_open(uct_component_h component, const char *md_name,
                                     uct_md_h *md_p)
{
    uct_md_config_t *config;
    ucs_status_t status;

    status = strata_info_ucx.uct_md_config_read(component, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    status = strata_info_ucx.uct_md_open(component, md_name, config, md_p);
    strata_info_ucx.uct_config_release(config);
    return status;
}
