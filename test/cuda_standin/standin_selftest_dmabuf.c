/*
 * standin_selftest: dma-buf export (cuMemGetHandleForAddressRange), as UCX's
 * dma-buf providers call it: the descriptor's bytes are the allocation's,
 * each call gives a new descriptor, and what the driver refuses is refused.
 */
#define _GNU_SOURCE
#include "standin_selftest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ST_DMABUF CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD

static int st_dmabuf_get(CUdeviceptr ptr, size_t size)
{
    int fd = -1;

    ST_OK(cuMemGetHandleForAddressRange(&fd, ptr, size, ST_DMABUF, 0));
    ST_TRUE("the dma-buf fd is a descriptor", fd >= 0);
    ST_TRUE("the dma-buf fd is close-on-exec", fcntl(fd, F_GETFD) & FD_CLOEXEC);
    return fd;
}

static unsigned char *st_dmabuf_map(int fd, size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    if (p == MAP_FAILED) {
        st_fail("mmap of dma-buf fd %d, %zu bytes: %s", fd, size, strerror(errno));
    }
    return p;
}

/* The device's bytes through the descriptor, both ways: later device writes
 * show in the mapping and mapping writes in device reads (one memory, not a
 * snapshot, as a NIC sees it). */
static void st_dmabuf_check_shared(const char *what, CUdeviceptr ptr, size_t size, int fd)
{
    unsigned char *view = st_dmabuf_map(fd, size);
    unsigned char *buf  = malloc(size);

    if (buf == NULL) {
        st_fail("out of memory");
    }
    st_fill(buf, size, 61, 0);
    ST_OK(cuMemcpyHtoD(ptr, buf, size));
    ST_OK(cuCtxSynchronize()); /* a pageable copy lands after it returns */
    st_check_pattern(what, view, size, 61, 0);
    st_fill(view + size / 2, 100, 62, 0);
    ST_OK(cuMemcpyDtoH(buf, ptr + size / 2, 100));
    st_check_pattern("mapping writes seen by the device", buf, 100, 62, 0);
    munmap(view, size);
    free(buf);
}

static void st_test_dmabuf_alloc(void)
{
    const size_t size = 65536;
    size_t page       = (size_t)sysconf(_SC_PAGESIZE);
    CUdeviceptr ptr   = st_alloc(size);
    CUdeviceptr managed;
    int fd, fd2, dummy = -1;
    char host[8192];

    st_group_begin("dma-buf: cuMemAlloc memory, fresh fds, refusals");
    fd = st_dmabuf_get(ptr, size);
    st_dmabuf_check_shared("device bytes through the dma-buf fd", ptr, size, fd);
    fd2 = st_dmabuf_get(ptr, page);
    ST_TRUE("a second call gives another fd", fd2 != fd);
    close(fd);
    st_dmabuf_check_shared("through the second fd, the first closed", ptr, page, fd2);
    close(fd2);

    ST_CU(cuMemGetHandleForAddressRange(NULL, ptr, size, ST_DMABUF, 0), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemGetHandleForAddressRange(&dummy, ptr, size, ST_DMABUF, 1), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemGetHandleForAddressRange(&dummy, ptr + 8, page, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE); /* not page-aligned */
    ST_CU(cuMemGetHandleForAddressRange(&dummy, ptr, page + 8, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemGetHandleForAddressRange(&dummy, ptr, 2 * size, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE); /* past the allocation */
    ST_CU(cuMemGetHandleForAddressRange(&dummy, ptr + page, page, ST_DMABUF, 0),
          CUDA_ERROR_NOT_SUPPORTED); /* the stand-in's limit */
    ST_CU(cuMemGetHandleForAddressRange(&dummy, (CUdeviceptr)(uintptr_t)host, page, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemAllocManaged(&managed, size, CU_MEM_ATTACH_GLOBAL));
    ST_CU(cuMemGetHandleForAddressRange(&dummy, managed, size, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE);
    ST_EQ("a refused call leaves *handle alone", dummy, -1);
    ST_OK(cuMemFree(managed));
    ST_OK(cuMemFree(ptr));
    ST_CU(cuMemGetHandleForAddressRange(&dummy, ptr, size, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE); /* freed */
    st_group_end();
}

static void st_test_dmabuf_vmm(void)
{
    CUmemGenericAllocationHandle handle;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUdeviceptr va;
    size_t gran;
    int fd;

    memset(&prop, 0, sizeof(prop));
    prop.type          = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id   = 0;
    memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

    st_group_begin("dma-buf: a cuMemMap'ed range");
    ST_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ST_OK(cuMemCreate(&handle, gran, &prop, 0));
    ST_OK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
    ST_CU(cuMemGetHandleForAddressRange(&fd, va, gran, ST_DMABUF, 0),
          CUDA_ERROR_INVALID_VALUE); /* reserved, not mapped */
    ST_OK(cuMemMap(va, gran, 0, handle, 0));
    ST_OK(cuMemSetAccess(va, gran, &access, 1));
    fd = st_dmabuf_get(va, gran);
    st_dmabuf_check_shared("VMM bytes through the dma-buf fd", va, gran, fd);
    close(fd);
    ST_OK(cuMemUnmap(va, gran));
    ST_OK(cuMemRelease(handle));
    ST_OK(cuMemAddressFree(va, 2 * gran));
    st_group_end();
}

void st_test_dmabuf(void)
{
    st_ctx_setup(0);
    st_test_dmabuf_alloc();
    st_test_dmabuf_vmm();
}
