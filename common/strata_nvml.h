/*
 * What NVML says about the links between GPUs, opened at run time.
 *
 * Like the CUDA driver (strata_cuda.h), NVML (libnvidia-ml.so.1) is never
 * linked: it comes with the driver, nvml.h is not installed where Strata is
 * built, and a node without it must still run.  The few entry points used
 * here are declared in strata_nvml.c.  Every query answers "unknown" when
 * NVML is missing or does not know the device, and callers then assume the
 * slowest plausible link (PCIe).
 *
 * Devices are named by PCI bus id ("0000:3b:00.0"), as cuDeviceGetPCIBusId
 * writes it: the one name the CUDA driver and NVML both understand, whatever
 * CUDA_VISIBLE_DEVICES renumbers.
 */
#ifndef STRATA_NVML_H
#define STRATA_NVML_H

#ifdef __cplusplus
extern "C" {
#endif

/* The link between two GPUs. */
typedef enum strata_gpu_link {
    STRATA_GPU_LINK_UNKNOWN = 0, /* NVML missing, or a device it does not know */
    STRATA_GPU_LINK_PCIE,        /* no NVLink between them */
    STRATA_GPU_LINK_NVLINK,      /* NVLink, direct or through NVSwitch */
} strata_gpu_link_t;

/*
 * Opens NVML once per process (thread-safe).  Returns 0 if it is usable;
 * otherwise -1, and strata_nvml_error() says why in one line.
 */
int strata_nvml_load(void);
const char *strata_nvml_error(void);

/* How GPUs `bus_id` and `peer_bus_id` are connected. */
strata_gpu_link_t strata_nvml_gpu_link(const char *bus_id, const char *peer_bus_id);

/* Number of active NVLinks of GPU `bus_id`; 0 if none or unknown. */
unsigned strata_nvml_active_nvlinks(const char *bus_id);

const char *strata_gpu_link_name(strata_gpu_link_t link);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_NVML_H */
