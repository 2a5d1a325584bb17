/*
 * dma-buf export: cuMemGetHandleForAddressRange with
 * CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, what UCX >= 1.14 hands a NIC's memory
 * domain to register device memory (GPUDirect RDMA without peer memory).
 *
 * The driver's dma-buf covers [dptr, dptr + size): byte 0 of the buffer is
 * dptr.  The stand-in answers with a new descriptor of the allocation's
 * memfd (F_DUPFD_CLOEXEC), whose byte 0 is the mapping's base, so it can
 * export only ranges that start at a mapping's base and stay inside that one
 * mapping; anything else that the driver would export fails with
 * CUDA_ERROR_NOT_SUPPORTED (a stand-in limit, noted in the trace).  Unlike
 * the driver's dma-buf, the descriptor can be mmap'ed by the CPU: tests use
 * that to see the bytes a NIC would read.
 */
#define _GNU_SOURCE
#include "cuda_standin.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* The fd whose byte 0 is map->base, or -1 if the kind cannot be exported:
 * the driver documents cuMemAlloc and fully mapped cuMemAddressReserve
 * ranges only. */
static int cuda_standin_dmabuf_backing(const cuda_standin_map_t *map)
{
    switch (map->kind) {
    case CUDA_STANDIN_MAP_ALLOC:
        return map->memfd;
    case CUDA_STANDIN_MAP_VMM:
        return cuda_standin_vmm_phys_fd(map->phys);
    default:
        return -1;
    }
}

static CUresult cuda_standin_dmabuf_check(const cuda_standin_map_t *map, uintptr_t dptr,
                                          size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    if ((map == NULL) || (cuda_standin_dmabuf_backing(map) < 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%lx is not in a cuMemAlloc or cuMemMap range",
                                  (unsigned long)dptr);
    }
    if ((size == 0) || !CUDA_STANDIN_IS_ALIGNED(dptr, page) ||
        !CUDA_STANDIN_IS_ALIGNED(size, page)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%lx+%zu is not aligned to the host page size %zu",
                                  (unsigned long)dptr, size, page);
    }
    if (size > map->alias_size - (dptr - map->base)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx+%zu runs past 0x%lx+%zu",
                                  (unsigned long)dptr, size, (unsigned long)map->base,
                                  map->alias_size);
    }
    if (dptr != map->base) {
        return cuda_standin_error(CUDA_ERROR_NOT_SUPPORTED,
                                  "stand-in: 0x%lx does not start the mapping 0x%lx",
                                  (unsigned long)dptr, (unsigned long)map->base);
    }
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_dmabuf_get(void *handle, CUdeviceptr dptr, size_t size,
                                        CUmemRangeHandleType type, unsigned long long flags)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)dptr);
    CUresult status;
    int fd;

    if ((handle == NULL) || (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) || (flags != 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "handle %p type %d flags 0x%llx",
                                  handle, (int)type, flags);
    }
    status = cuda_standin_dmabuf_check(map, (uintptr_t)dptr, size);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    fd = fcntl(cuda_standin_dmabuf_backing(map), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        return cuda_standin_error((errno == EMFILE) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_UNKNOWN,
                                  "fcntl(F_DUPFD_CLOEXEC): %m");
    }
    *(int *)handle = fd;
    cuda_standin_note("0x%llx+%zu buffer id 0x%llx: fd %d", (unsigned long long)dptr, size,
                      map->buffer_id, fd);
    return CUDA_SUCCESS;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType handleType, unsigned long long flags)
{
    CUDA_STANDIN_CALL(cuMemGetHandleForAddressRange, CUDA_STANDIN_IN_CTX,
                      cuda_standin_dmabuf_get(handle, dptr, size, handleType, flags));
}
