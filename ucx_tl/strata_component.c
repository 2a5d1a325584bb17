/*
 * UCT component "strata" (libuct_strata.so): the gpu_copy and gpu_ipc
 * memory domains and transports.
 *
 * Registering from a constructor is what lets a UCX without plugin discovery
 * pick the component up after dlopen/LD_PRELOAD: UCT_COMPONENT_REGISTER adds
 * it to libuct's component list before ucp_init walks that list.  Nothing
 * here may touch CUDA at load time: the constructor runs in every process
 * that loads the module, GPU or not.  The driver is opened on the first
 * resource query.
 */
#include "strata_md.h"
#include "gpu_copy/gpu_copy_md.h"
#include "gpu_ipc/gpu_ipc_md.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <string.h>

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
    return uct_gpu_ipc_rkey_unpack(component, rkey_buffer, rkey_p, handle_p);
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
    UCT_STRATA_COMPONENT_VFS_INIT
};
/* clang-format on */
UCT_COMPONENT_REGISTER(&uct_strata_component)
