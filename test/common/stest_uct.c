#include "stest_uct.h"

#include "stest_fail.h"

#include <stdio.h>
#include <string.h>

#define STEST_UCT_MAX_SPIN 100000000UL

static int stest_uct_comp_counter;

void stest_ucs_check(ucs_status_t status, const char *call)
{
    if (status != UCS_OK) {
        stest_fail("%s: %s", call, ucs_status_string(status));
    }
}

void stest_ucs_expect(const char *what, ucs_status_t expected, ucs_status_t got)
{
    if (got != expected) {
        stest_fail("%s: expected %s got %s", what, ucs_status_string(expected),
                   ucs_status_string(got));
    }
}

int stest_uct_find_component(stest_uct_t *u, const char *name)
{
    uct_component_h *components;
    unsigned num, i;
    int found = 0;

    STEST_UCS(uct_query_components(&components, &num));
    for (i = 0; i < num; ++i) {
        uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};

        STEST_UCS(uct_component_query(components[i], &attr));
        if (!strcmp(attr.name, name)) {
            u->component = components[i];
            found        = 1;
        }
    }
    uct_release_component_list(components);
    return found;
}

static void stest_uct_config_apply(void *config, const char **settings)
{
    for (const char **s = settings; (s != NULL) && (*s != NULL); s += 2) {
        STEST_UCS(uct_config_modify(config, s[0], s[1]));
    }
}

ucs_status_t stest_uct_md_open(stest_uct_t *u, const char *md_name, const char **settings)
{
    uct_md_config_t *md_config;
    ucs_status_t status;

    STEST_UCS(uct_md_config_read(u->component, NULL, NULL, &md_config));
    stest_uct_config_apply(md_config, settings);
    status = uct_md_open(u->component, md_name, md_config, &u->md);
    uct_config_release(md_config);
    return status;
}

int stest_uct_find_device(stest_uct_t *u, const char *tl_name)
{
    uct_tl_resource_desc_t *resources;
    unsigned num, i;
    int found = 0;

    STEST_UCS(uct_md_query_tl_resources(u->md, &resources, &num));
    for (i = 0; i < num; ++i) {
        if (!strcmp(resources[i].tl_name, tl_name) && !found) {
            snprintf(u->dev_name, sizeof(u->dev_name), "%s", resources[i].dev_name);
            found = 1;
        }
    }
    uct_release_tl_resource_list(resources);
    return found;
}

void stest_uct_worker_create(stest_uct_t *u)
{
    STEST_UCS(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &u->async));
    STEST_UCS(uct_worker_create(u->async, UCS_THREAD_MODE_SINGLE, &u->worker));
}

void stest_uct_worker_destroy(stest_uct_t *u)
{
    uct_worker_destroy(u->worker);
    ucs_async_context_destroy(u->async);
}

uct_iface_h stest_uct_iface_open(stest_uct_t *u, const char *tl_name, const char **settings,
                                 uct_error_handler_t err_handler, void *err_arg)
{
    uct_iface_params_t params = {0};
    uct_iface_config_t *config;
    uct_iface_h iface;

    STEST_UCS(uct_md_iface_config_read(u->md, tl_name, NULL, NULL, &config));
    stest_uct_config_apply(config, settings);
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl_name;
    params.mode.device.dev_name = u->dev_name;
    if (err_handler != NULL) {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.err_handler       = err_handler;
        params.err_handler_arg   = err_arg;
        params.err_handler_flags = 0;
    }
    STEST_UCS(uct_iface_open(u->md, u->worker, &params, config, &iface));
    uct_config_release(config);
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return iface;
}

void stest_uct_iface_addresses(uct_iface_h iface, uint8_t *dev_addr, uint8_t *iface_addr,
                               size_t max)
{
    uct_iface_attr_t attr;

    STEST_UCS(uct_iface_query(iface, &attr));
    if ((attr.device_addr_len > max) || (attr.iface_addr_len > max)) {
        stest_fail("addresses longer than %zu bytes", max);
    }
    memset(dev_addr, 0, max);
    memset(iface_addr, 0, max);
    STEST_UCS(uct_iface_get_device_address(iface, (uct_device_addr_t *)dev_addr));
    STEST_UCS(uct_iface_get_address(iface, (uct_iface_addr_t *)iface_addr));
}

ucs_status_t stest_uct_ep_create(uct_iface_h iface, const uint8_t *dev_addr,
                                 const uint8_t *iface_addr, uct_ep_h *ep_p)
{
    uct_ep_params_t ep_params = {0};

    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = (const uct_device_addr_t *)dev_addr;
    ep_params.iface_addr = (const uct_iface_addr_t *)iface_addr;
    return uct_ep_create(&ep_params, ep_p);
}

void stest_uct_comp_cb(uct_completion_t *self)
{
    stest_uct_comp_t *comp = (stest_uct_comp_t *)self;

    comp->calls++;
    comp->status = self->status;
    comp->order  = stest_uct_comp_counter++;
}

void stest_uct_comp_init(stest_uct_comp_t *comp)
{
    comp->super.func   = stest_uct_comp_cb;
    comp->super.count  = 1;
    comp->super.status = UCS_OK;
    comp->calls        = 0;
    comp->order        = -1;
    comp->status       = UCS_INPROGRESS;
}

ucs_status_t stest_uct_put_zcopy(uct_ep_h ep, const void *buffer, size_t len, uint64_t remote,
                                 uct_rkey_t rkey, stest_uct_comp_t *comp)
{
    uct_iov_t iov = {.buffer = (void *)buffer, .length = len, .memh = UCT_MEM_HANDLE_NULL,
                     .stride = 0, .count = 1};

    stest_uct_comp_init(comp);
    return uct_ep_put_zcopy(ep, &iov, 1, remote, rkey, &comp->super);
}

ucs_status_t stest_uct_get_zcopy(uct_ep_h ep, void *buffer, size_t len, uint64_t remote,
                                 uct_rkey_t rkey, stest_uct_comp_t *comp)
{
    uct_iov_t iov = {.buffer = buffer, .length = len, .memh = UCT_MEM_HANDLE_NULL,
                     .stride = 0, .count = 1};

    stest_uct_comp_init(comp);
    return uct_ep_get_zcopy(ep, &iov, 1, remote, rkey, &comp->super);
}

void stest_uct_progress_until(const stest_uct_t *u, const int *flag, const char *what)
{
    unsigned long spins;

    for (spins = 0; !*flag; ++spins) {
        if (spins > STEST_UCT_MAX_SPIN) {
            stest_fail("%s: no completion after %lu progress calls", what, spins);
        }
        uct_worker_progress(u->worker);
    }
}

void stest_uct_wait(const stest_uct_t *u, ucs_status_t status, stest_uct_comp_t *comp,
                    const char *what)
{
    if (status == UCS_OK) {
        return;
    }
    if (status != UCS_INPROGRESS) {
        stest_fail("%s: %s", what, ucs_status_string(status));
    }
    stest_uct_progress_until(u, &comp->calls, what);
    if ((comp->calls != 1) || (comp->status != UCS_OK)) {
        stest_fail("%s: completion called %d times, status %s", what, comp->calls,
                   ucs_status_string(comp->status));
    }
}
