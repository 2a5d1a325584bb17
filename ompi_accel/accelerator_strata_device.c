/*
 * accelerator/cuda (Strata): the devices, as Open MPI asks about them
 * (which one this thread uses, where it sits on PCI for topology, whether
 * two can reach each other's memory).
 */
#include "ompi_accel/accelerator_strata.h"

#include <stdio.h>

#include "opal/constants.h"
#include "opal/util/output.h"

int accelerator_strata_get_device(int *dev_id)
{
    if (dev_id == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* No context current on this thread: no device paired with it. */
    *dev_id = strata_cuda_current_device(MCA_ACCELERATOR_NO_DEVICE_ID);
    return OPAL_SUCCESS;
}

int accelerator_strata_get_device_pci_attr(int dev_id, opal_accelerator_pci_attr_t *pci_attr)
{
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    char busid[32];
    CUdevice dev;
    CUresult res;

    if ((pci_attr == NULL) || (dev_id < 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    res = strata_cuda.cuDeviceGet(&dev, dev_id);
    if (res == CUDA_SUCCESS) {
        res = strata_cuda.cuDeviceGetPCIBusId(busid, sizeof(busid), dev);
    }
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuDeviceGetPCIBusId", res, "device %d", dev_id);
        return OPAL_ERROR;
    }
    /* "domain:bus:device.function", hexadecimal */
    if (sscanf(busid, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) {
        opal_output(0, "accelerator:cuda (Strata): device %d: PCI bus id '%s' not understood",
                    dev_id, busid);
        return OPAL_ERROR;
    }
    pci_attr->domain_id   = (uint16_t)domain;
    pci_attr->bus_id      = (uint8_t)bus;
    pci_attr->device_id   = (uint8_t)device;
    pci_attr->function_id = (uint8_t)function;
    return OPAL_SUCCESS;
}

int accelerator_strata_device_can_access_peer(int *access, int dev1, int dev2)
{
    CUdevice d1, d2;
    CUresult res;
    int can = 0;

    if ((access == NULL) || (dev1 < 0) || (dev2 < 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (strata_cuda.cuDeviceCanAccessPeer == NULL) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    res = strata_cuda.cuDeviceGet(&d1, dev1);
    if (res == CUDA_SUCCESS) {
        res = strata_cuda.cuDeviceGet(&d2, dev2);
    }
    if (res == CUDA_SUCCESS) {
        res = strata_cuda.cuDeviceCanAccessPeer(&can, d1, d2);
    }
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuDeviceCanAccessPeer", res, "devices %d and %d", dev1, dev2);
        return OPAL_ERROR;
    }
    *access = can;
    return OPAL_SUCCESS;
}
