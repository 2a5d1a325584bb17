#include "stest_buf.h"

#include "stest_fail.h"

#include <stdlib.h>
#include <string.h>

static void stest_buf_vmm_alloc(stest_buf_t *b, size_t len)
{
    CUmemAllocationProp prop = {0};
    CUmemAccessDesc access   = {0};
    CUdeviceptr d;
    size_t gran;

    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = (int)b->dev->dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    STEST_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    b->vmm_size = (len + gran - 1) / gran * gran;
    STEST_CU(cuMemCreate(&b->vmm_handle, b->vmm_size, &prop, 0));
    STEST_CU(cuMemAddressReserve(&d, b->vmm_size, 0, 0, 0));
    STEST_CU(cuMemMap(d, b->vmm_size, 0, b->vmm_handle, 0));
    access.location = prop.location;
    access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    STEST_CU(cuMemSetAccess(d, b->vmm_size, &access, 1));
    b->ptr = (void *)(uintptr_t)d;
}

void stest_buf_alloc(stest_buf_t *b, stest_mem_t mem, size_t len, const stest_dev_t *dev)
{
    size_t n = len ? len : 1;
    CUdeviceptr d;

    memset(b, 0, sizeof(*b));
    b->mem = mem;
    b->len = len;
    b->dev = dev;
    switch (mem) {
    case STEST_MEM_HOST:
        b->ptr = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
        if (b->ptr == NULL) stest_fail("cannot allocate %zu host bytes", n);
        return;
    case STEST_MEM_VMM:
        stest_buf_vmm_alloc(b, n);
        return;
    case STEST_MEM_ASYNC:
        STEST_CU(cuMemAllocAsync(&d, n, dev->stream));
        STEST_CU(cuStreamSynchronize(dev->stream));
        break;
    case STEST_MEM_MANAGED:
        STEST_CU(cuMemAllocManaged(&d, n, CU_MEM_ATTACH_GLOBAL));
        break;
    default:
        STEST_CU(cuMemAlloc(&d, n));
        break;
    }
    b->ptr = (void *)(uintptr_t)d;
}

void stest_buf_free(stest_buf_t *b)
{
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)b->ptr;

    if (b->ptr == NULL) return;
    switch (b->mem) {
    case STEST_MEM_HOST:
        free(b->ptr);
        break;
    case STEST_MEM_VMM:
        STEST_CU(cuMemUnmap(d, b->vmm_size));
        STEST_CU(cuMemRelease(b->vmm_handle));
        STEST_CU(cuMemAddressFree(d, b->vmm_size));
        break;
    case STEST_MEM_ASYNC:
        STEST_CU(cuMemFreeAsync(d, b->dev->stream));
        STEST_CU(cuStreamSynchronize(b->dev->stream));
        break;
    default:
        STEST_CU(cuMemFree(d));
        break;
    }
    b->ptr = NULL;
}

int stest_buf_on_device(const stest_buf_t *b)
{
    return b->mem != STEST_MEM_HOST && b->mem != STEST_MEM_MANAGED;
}

void stest_buf_write(stest_buf_t *b, size_t off, const void *src, size_t n)
{
    if (n == 0) return;
    if (stest_buf_on_device(b)) stest_dev_write((CUdeviceptr)(uintptr_t)b->ptr + off, src, n);
    else memcpy((char *)b->ptr + off, src, n);
}

void stest_buf_read(const stest_buf_t *b, size_t off, void *dst, size_t n)
{
    if (n == 0) return;
    if (stest_buf_on_device(b)) stest_dev_read(dst, (CUdeviceptr)(uintptr_t)b->ptr + off, n);
    else memcpy(dst, (const char *)b->ptr + off, n);
}
