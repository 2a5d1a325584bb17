/*
 * dma-buf export by the gpu_copy domain (see gpu_copy_dmabuf.h).
 */
#include "gpu_copy_dmabuf.h"

#if UCT_STRATA_HAVE_DMABUF

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/topo/base/topo.h>

/* Devices whose system device is remembered; others are looked up on every
 * query (UCX's own topology holds at most 128 devices in all). */
#define UCT_GPU_COPY_DMABUF_SYS_DEV_CACHE 64

/* sys_dev + 1 per device ordinal; 0: not looked up yet.  Racing lookups
 * store the same value. */
static uint16_t uct_gpu_copy_dmabuf_sys_devs[UCT_GPU_COPY_DMABUF_SYS_DEV_CACHE];

static int uct_gpu_copy_dmabuf_device_supported(int ordinal)
{
    int supported = 0;
    CUdevice dev;

    if ((UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuDeviceGet(&dev, ordinal)) !=
         UCS_OK) ||
        (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                              strata_cuda
                                  .cuDeviceGetAttribute(&supported,
                                                        CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                                                        dev)) != UCS_OK)) {
        return 0;
    }
    return supported;
}

/* UCP makes the first domain that lists a memory type its provider, and then
 * registers that memory type with every NIC domain through dma-bufs: list
 * CUDA only where every device can export, or a NIC would get no fd for
 * some buffers and, without peer memory, fail to register them. */
uint64_t uct_gpu_copy_dmabuf_mem_types(void)
{
    int count = strata_cuda_device_count();
    int i;

    if ((count == 0) || (strata_cuda.cuMemGetHandleForAddressRange == NULL)) {
        ucs_debug("gpu_copy: no dma-buf export (%s)",
                  (count == 0) ? "no CUDA device" :
                                 "the driver lacks cuMemGetHandleForAddressRange");
        return 0;
    }
    for (i = 0; i < count; ++i) {
        if (!uct_gpu_copy_dmabuf_device_supported(i)) {
            ucs_debug("gpu_copy: no dma-buf export: CUDA device %d does not support dma-buf", i);
            return 0;
        }
    }
    return UCS_BIT(UCS_MEMORY_TYPE_CUDA);
}

static ucs_sys_device_t uct_gpu_copy_dmabuf_sys_dev_lookup(int ordinal)
{
    static const CUdevice_attribute attrs[] = {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
                                               CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                                               CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID};
    ucs_sys_device_t sys_dev;
    ucs_sys_bus_id_t bus_id;
    int values[3];
    CUdevice dev;
    unsigned i;

    if (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, strata_cuda.cuDeviceGet(&dev, ordinal)) !=
        UCS_OK) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    for (i = 0; i < 3; ++i) {
        if (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                 strata_cuda.cuDeviceGetAttribute(&values[i], attrs[i], dev)) !=
            UCS_OK) {
            return UCS_SYS_DEVICE_ID_UNKNOWN;
        }
    }
    bus_id.domain   = (uint16_t)values[0];
    bus_id.bus      = (uint8_t)values[1];
    bus_id.slot     = (uint8_t)values[2];
    bus_id.function = 0; /* what the driver's PCI bus id string says, too */
    if (ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev) != UCS_OK) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    ucs_debug("gpu_copy: CUDA device %d is %04x:%02x:%02x.0, sys_dev %u", ordinal, bus_id.domain,
              bus_id.bus, bus_id.slot, (unsigned)sys_dev);
    return sys_dev;
}

ucs_sys_device_t uct_gpu_copy_dmabuf_sys_dev(int ordinal)
{
    ucs_sys_device_t sys_dev;
    uint16_t cached;

    if (ordinal < 0) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    if (ordinal >= UCT_GPU_COPY_DMABUF_SYS_DEV_CACHE) {
        return uct_gpu_copy_dmabuf_sys_dev_lookup(ordinal);
    }
    cached = __atomic_load_n(&uct_gpu_copy_dmabuf_sys_devs[ordinal], __ATOMIC_RELAXED);
    if (cached != 0) {
        return (ucs_sys_device_t)(cached - 1);
    }
    sys_dev = uct_gpu_copy_dmabuf_sys_dev_lookup(ordinal);
    __atomic_store_n(&uct_gpu_copy_dmabuf_sys_devs[ordinal], (uint16_t)(sys_dev + 1),
                     __ATOMIC_RELAXED);
    return sys_dev;
}

/* A new dma-buf fd of [start, start + length), or UCT_DMABUF_FD_INVALID. */
static int uct_gpu_copy_dmabuf_export(CUdeviceptr start, size_t length)
{
    int fd = UCT_DMABUF_FD_INVALID;

    if (strata_cuda.cuMemGetHandleForAddressRange == NULL) {
        ucs_debug("gpu_copy: the driver lacks cuMemGetHandleForAddressRange: no dma-buf");
        return UCT_DMABUF_FD_INVALID;
    }
    /* A thread that only ever used the runtime may have no current context. */
    if (strata_cuda_ctx_ensure(start) != 0) {
        ucs_debug("gpu_copy: no CUDA context for 0x%llx: no dma-buf", (unsigned long long)start);
        return UCT_DMABUF_FD_INVALID;
    }
    if (UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                             strata_cuda
                                 .cuMemGetHandleForAddressRange(&fd, start, length,
                                                                CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                                                0)) != UCS_OK) {
        return UCT_DMABUF_FD_INVALID;
    }
    ucs_trace("gpu_copy: dma-buf of 0x%llx+%zu is fd %d", (unsigned long long)start, length, fd);
    return fd;
}

/*
 * The whole allocation (or VMM mapping) is exported, from its page-aligned
 * start: the NIC's domain registers [offset, offset + length) of the
 * dma-buf, and UCP may register more than the buffer it was given (its
 * registration cache rounds ranges).  A range that runs past its allocation
 * cannot be described by one dma-buf.
 */
void uct_gpu_copy_dmabuf_mem_query(const void *address, const uct_strata_mem_info_t *info,
                                   uct_strata_md_mem_attr_t *mem_attr)
{
    size_t page     = ucs_get_page_size();
    uintptr_t start = (uintptr_t)info->base & ~(uintptr_t)(page - 1);
    uintptr_t end   = ((uintptr_t)info->base + info->length + page - 1) & ~(uintptr_t)(page - 1);
    int exportable  = (info->mem_type == UCS_MEMORY_TYPE_CUDA) && !info->spans;

    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD) {
        mem_attr->dmabuf_fd = exportable ?
                                  uct_gpu_copy_dmabuf_export((CUdeviceptr)start, end - start) :
                                  UCT_DMABUF_FD_INVALID;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET) {
        mem_attr->dmabuf_offset = (uintptr_t)address - start;
    }
}

#endif /* UCT_STRATA_HAVE_DMABUF */
