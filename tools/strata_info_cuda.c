/*
 * CUDA: the driver (common/strata_cuda: the table every plugin uses, so
 * the tool sees exactly what they will), its version against the headers
 * Strata was built with, and the devices.
 */
#define _GNU_SOURCE /* dladdr */
#include "strata_config.h"
#include "strata_info.h"
#include "strata_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The oldest GPU architecture Strata's kernels are compiled for
 * (STRATA_NVCC_ARCHS in common/Makefile.am). */
#define STRATA_INFO_MIN_SM 75

void *strata_info_cuda_symbol(const char *name)
{
    void *driver = strata_cuda_driver_handle();

    return (driver != NULL) ? dlsym(driver, name) : NULL;
}

static void strata_info_check_cuda_driver(strata_info_t *info)
{
    char path[4096] = "libcuda.so.1";
    int version = 0;
    Dl_info dl;

    if (strata_cuda_state() == STRATA_CUDA_NO_DRIVER) {
        strata_info_line(info, STRATA_INFO_MISSING, "driver",
                         "%s (no NVIDIA driver on this node, or not in the loader's path)",
                         strata_cuda_error());
        return;
    }
    if ((strata_cuda.cuDriverGetVersion == NULL) ||
        (strata_cuda.cuDriverGetVersion(&version) != CUDA_SUCCESS)) {
        strata_info_line(info, STRATA_INFO_WARN, "driver", "libcuda.so.1 loads, version unknown");
        return;
    }
    if ((dladdr((void *)strata_cuda.cuDriverGetVersion, &dl) != 0) && (dl.dli_fname != NULL)) {
        snprintf(path, sizeof(path), "%s", dl.dli_fname);
    }
    if (version < CUDA_VERSION) {
        strata_info_line(info, STRATA_INFO_WARN, "driver",
                         "%s, CUDA %d.%d, older than the CUDA %d.%d headers Strata was built "
                         "with: its reduction kernels may not load (device allreduce is then "
                         "staged through host memory)",
                         path, version / 1000, (version % 1000) / 10, CUDA_VERSION / 1000,
                         (CUDA_VERSION % 1000) / 10);
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "driver", "%s, CUDA %d.%d", path, version / 1000,
                     (version % 1000) / 10);
}

static void strata_info_check_cuda_device(strata_info_t *info, int ordinal)
{
    __typeof__(&cuDeviceTotalMem) total_mem = strata_info_cuda_symbol("cuDeviceTotalMem_v2");
    strata_info_gpu_t *gpu = &info->gpus[ordinal];
    int major = 0, minor = 0;
    char item[32], mem[32] = "memory unknown";
    size_t bytes = 0;
    CUdevice dev;

    snprintf(item, sizeof(item), "GPU %d", ordinal);
    if (strata_cuda.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) {
        strata_info_line(info, STRATA_INFO_MISSING, item, "cuDeviceGet failed");
        return;
    }
    if (strata_cuda.cuDeviceGetName(gpu->name, sizeof(gpu->name), dev) != CUDA_SUCCESS) {
        snprintf(gpu->name, sizeof(gpu->name), "(name unknown)");
    }
    if (strata_cuda.cuDeviceGetPCIBusId(gpu->bus_id, sizeof(gpu->bus_id), dev) != CUDA_SUCCESS) {
        gpu->bus_id[0] = '\0';
    }
    (void)strata_cuda.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                           dev);
    (void)strata_cuda.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                           dev);
    if ((total_mem != NULL) && (total_mem(&bytes, dev) == CUDA_SUCCESS)) {
        strata_info_bytes_str(bytes, mem, sizeof(mem));
    }
    if (major * 10 + minor < STRATA_INFO_MIN_SM) {
        strata_info_line(info, STRATA_INFO_WARN, item,
                         "%s, sm_%d%d, %s, PCI %s: Strata's kernels need sm_%d or newer, so "
                         "device allreduce on it is staged through host memory",
                         gpu->name, major, minor, mem, gpu->bus_id, STRATA_INFO_MIN_SM);
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, item, "%s, sm_%d%d, %s, PCI %s", gpu->name, major,
                     minor, mem, gpu->bus_id);
}

void strata_info_check_cuda(strata_info_t *info)
{
    int count, i;

    strata_info_section(info, "CUDA");
    (void)strata_cuda_load();
    strata_info_check_cuda_driver(info);
    if (strata_cuda_state() == STRATA_CUDA_NO_DRIVER) {
        return;
    }
    if (strata_cuda_state() != STRATA_CUDA_READY) {
        strata_info_line(info, STRATA_INFO_MISSING, "devices", "%s", strata_cuda_error());
        return;
    }
    count = strata_cuda_device_count();
    if (count <= 0) {
        strata_info_line(info, STRATA_INFO_MISSING, "devices", "the driver sees no GPU");
        return;
    }
    info->cuda_ready = 1;
    info->num_gpus   = (count < STRATA_INFO_MAX_GPUS) ? count : STRATA_INFO_MAX_GPUS;
    strata_info_line(info, STRATA_INFO_OK, "devices", "%d GPU(s)%s", count,
                     (count > STRATA_INFO_MAX_GPUS) ? " (the first 64 checked)" : "");
    for (i = 0; i < info->num_gpus; ++i) {
        strata_info_check_cuda_device(info, i);
    }
}
