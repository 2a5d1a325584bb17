/*
 * UCT component "strata" (libuct_strata.so).
 *
 * Registering from a constructor is what lets a UCX without plugin discovery
 * pick the component up after dlopen/LD_PRELOAD: UCS_STATIC_INIT adds it to
 * libuct's component list before ucp_init walks that list.  Nothing here may
 * touch CUDA: the constructor runs in every process that loads the module.
 *
 * This version registers the component and its configuration table only; its
 * memory domain and the gpu_copy/gpu_ipc transports report no resources yet.
 */
#include <uct/base/uct_component.h>
#include <uct/base/uct_md.h>
#include <ucs/sys/stubs.h>

typedef struct uct_strata_md_config {
    uct_md_config_t super;
} uct_strata_md_config_t;

static ucs_config_field_t uct_strata_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_strata_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};

static ucs_status_t uct_strata_query_md_resources(uct_component_t *component,
                                                  uct_md_resource_desc_t **resources_p,
                                                  unsigned *num_resources_p)
{
    return uct_md_query_empty_md_resource(resources_p, num_resources_p);
}

uct_component_t uct_strata_component = {
    .query_md_resources = uct_strata_query_md_resources,
    .md_open            = (uct_component_md_open_func_t)ucs_empty_function_return_unsupported,
    .cm_open            = (uct_component_cm_open_func_t)ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_md_stub_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)ucs_empty_function_return_success,
    .name               = "strata",
    .md_config          = {
        .name           = "Strata memory domain",
        .prefix         = "STRATA_",
        .table          = uct_strata_md_config_table,
        .size           = sizeof(uct_strata_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_strata_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function,
};
UCT_COMPONENT_REGISTER(&uct_strata_component)
