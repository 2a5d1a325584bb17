/*
 * NVML, opened at run time (see strata_nvml.h).
 */
#include "strata_nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/*
 * The part of nvml.h Strata uses.  These are the ABI of libnvidia-ml.so.1
 * (stable since the _v2 entry points of driver r418): handles are opaque
 * pointers, results and enums are ints with the values below.
 */
typedef int strata_nvml_return_t;               /* nvmlReturn_t */
typedef struct strata_nvml_device *strata_nvml_device_t; /* nvmlDevice_t */

#define STRATA_NVML_SUCCESS          0 /* NVML_SUCCESS */
#define STRATA_NVML_P2P_CAPS_NVLINK  2 /* NVML_P2P_CAPS_INDEX_NVLINK */
#define STRATA_NVML_P2P_STATUS_OK    0 /* NVML_P2P_STATUS_OK */
#define STRATA_NVML_FEATURE_ENABLED  1 /* NVML_FEATURE_ENABLED */
/* NVML_NVLINK_MAX_LINKS: 18 since Hopper; asking past a device's last link
 * just returns an error, so the largest value is safe for every GPU. */
#define STRATA_NVML_NVLINK_MAX_LINKS 18

typedef struct strata_nvml_api {
    strata_nvml_return_t (*init)(void);
    const char *(*error_string)(strata_nvml_return_t result);
    strata_nvml_return_t (*device_by_bus_id)(const char *bus_id, strata_nvml_device_t *device);
    strata_nvml_return_t (*p2p_status)(strata_nvml_device_t device1, strata_nvml_device_t device2,
                                       int caps_index, int *status);
    strata_nvml_return_t (*nvlink_state)(strata_nvml_device_t device, unsigned link,
                                         int *is_active);
} strata_nvml_api_t;

static strata_nvml_api_t strata_nvml;
static pthread_once_t strata_nvml_once = PTHREAD_ONCE_INIT;
static int strata_nvml_ready;
static char strata_nvml_load_error[256] = "not loaded";

typedef struct strata_nvml_sym {
    const char *name;
    void **ptr;
} strata_nvml_sym_t;

static const strata_nvml_sym_t strata_nvml_syms[] = {
    {"nvmlInit_v2", (void **)&strata_nvml.init},
    {"nvmlErrorString", (void **)&strata_nvml.error_string},
    {"nvmlDeviceGetHandleByPciBusId_v2", (void **)&strata_nvml.device_by_bus_id},
    {"nvmlDeviceGetP2PStatus", (void **)&strata_nvml.p2p_status},
    {"nvmlDeviceGetNvLinkState", (void **)&strata_nvml.nvlink_state},
    {NULL, NULL}
};

static void strata_nvml_load_once(void)
{
    const strata_nvml_sym_t *sym;
    strata_nvml_return_t ret;
    void *handle;

    handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(strata_nvml_load_error, sizeof(strata_nvml_load_error),
                 "libnvidia-ml.so.1 not loadable: %s", dlerror());
        return;
    }
    for (sym = strata_nvml_syms; sym->name != NULL; ++sym) {
        *sym->ptr = dlsym(handle, sym->name);
        if (*sym->ptr == NULL) {
            snprintf(strata_nvml_load_error, sizeof(strata_nvml_load_error),
                     "NVML lacks %s (driver too old)", sym->name);
            dlclose(handle);
            return;
        }
    }
    /* Initialized once and never shut down: nvmlInit costs milliseconds, and
     * NVML's state is released with the process.  The library stays open
     * for the same reason. */
    ret = strata_nvml.init();
    if (ret != STRATA_NVML_SUCCESS) {
        snprintf(strata_nvml_load_error, sizeof(strata_nvml_load_error), "nvmlInit_v2 failed: %s",
                 strata_nvml.error_string(ret));
        dlclose(handle);
        return;
    }
    strata_nvml_ready = 1;
}

int strata_nvml_load(void)
{
    pthread_once(&strata_nvml_once, strata_nvml_load_once);
    return strata_nvml_ready ? 0 : -1;
}

const char *strata_nvml_error(void)
{
    return strata_nvml_ready ? "" : strata_nvml_load_error;
}

static int strata_nvml_device(const char *bus_id, strata_nvml_device_t *device)
{
    return (strata_nvml_load() == 0) &&
           (strata_nvml.device_by_bus_id(bus_id, device) == STRATA_NVML_SUCCESS);
}

strata_gpu_link_t strata_nvml_gpu_link(const char *bus_id, const char *peer_bus_id)
{
    strata_nvml_device_t device, peer;
    int status;

    if (!strata_nvml_device(bus_id, &device) || !strata_nvml_device(peer_bus_id, &peer)) {
        return STRATA_GPU_LINK_UNKNOWN;
    }
    /* The NVLink P2P capability covers direct links and NVSwitch fabrics
     * alike, which counting a device's links would not tell apart. */
    if ((strata_nvml.p2p_status(device, peer, STRATA_NVML_P2P_CAPS_NVLINK, &status) ==
         STRATA_NVML_SUCCESS) &&
        (status == STRATA_NVML_P2P_STATUS_OK)) {
        return STRATA_GPU_LINK_NVLINK;
    }
    return STRATA_GPU_LINK_PCIE;
}

unsigned strata_nvml_active_nvlinks(const char *bus_id)
{
    strata_nvml_device_t device;
    unsigned link, count = 0;
    int active;

    if (!strata_nvml_device(bus_id, &device)) {
        return 0;
    }
    for (link = 0; link < STRATA_NVML_NVLINK_MAX_LINKS; ++link) {
        if ((strata_nvml.nvlink_state(device, link, &active) == STRATA_NVML_SUCCESS) &&
            (active == STRATA_NVML_FEATURE_ENABLED)) {
            ++count;
        }
    }
    return count;
}

const char *strata_gpu_link_name(strata_gpu_link_t link)
{
    switch (link) {
    case STRATA_GPU_LINK_PCIE:
        return "PCIe";
    case STRATA_GPU_LINK_NVLINK:
        return "NVLink";
    default:
        return "unknown";
    }
}
