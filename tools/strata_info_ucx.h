/*
 * UCX, opened at run time.
 *
 * strata_info is the tool a user runs when something is wrong, so it must
 * start where UCX is missing or broken and say so, rather than fail in the
 * dynamic loader.  It therefore links no UCX library: strata_info_ucx_load()
 * opens libucs, libucm, libuct and libucp (RTLD_GLOBAL: libuct_strata.so,
 * loaded after them, binds to the same copies, as in an MPI process) and
 * resolves the few entry points the checks call into strata_info_ucx.
 * The types come from UCX's public headers.
 */
#ifndef STRATA_INFO_UCX_H
#define STRATA_INFO_UCX_H

#include <ucm/api/ucm.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

/* _fn(library, name): every entry point strata_info calls, and its library. */
#define STRATA_INFO_UCX_FUNCS(_fn) \
    _fn(ucs, ucs_status_string) \
    _fn(ucm, ucm_set_event_handler) \
    _fn(ucm, ucm_unset_event_handler) \
    _fn(uct, uct_query_components) \
    _fn(uct, uct_release_component_list) \
    _fn(uct, uct_component_query) \
    _fn(uct, uct_md_config_read) \
    _fn(uct, uct_config_release) \
    _fn(uct, uct_md_open) \
    _fn(uct, uct_md_close) \
    _fn(uct, uct_md_query_tl_resources) \
    _fn(uct, uct_release_tl_resource_list) \
    _fn(uct, uct_md_detect_memory_type) \
    _fn(ucp, ucp_get_version)

#define STRATA_INFO_UCX_DECLARE_PTR(_lib, _name) __typeof__(&_name) _name;

typedef struct strata_info_ucx_api {
    STRATA_INFO_UCX_FUNCS(STRATA_INFO_UCX_DECLARE_PTR)
} strata_info_ucx_api_t;

extern strata_info_ucx_api_t strata_info_ucx;

/*
 * Opens UCX's libraries and resolves every entry point.  Returns 0 on
 * success; otherwise -1, with the loader's reason in `error`.
 */
int strata_info_ucx_load(char *error, size_t max);

/* Path of the loaded libucp, for the report ("" if unknown). */
const char *strata_info_ucx_libucp_path(void);

/* The md_open/query_tl_resources pair ucx_info -d walks, for one domain:
 * opens `md_name` of `component` with its default configuration. */
ucs_status_t strata_info_ucx_md_open(uct_component_h component, const char *md_name,
                                     uct_md_h *md_p);

#endif /* STRATA_INFO_UCX_H */
