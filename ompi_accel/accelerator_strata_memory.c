/*
 * accelerator/cuda (Strata): what memory a pointer is, and moving, making
 * and registering memory.
 *
 * Kinds come from common/strata_mem (the answer every part of Strata uses);
 * copies go through the driver on a stream of this component's own and are
 * complete when mem_copy returns (Open MPI's datatype engine reads the
 * bytes right after).  A failing driver call is an error line naming the
 * call and the buffers, and an error code to the caller: Open MPI then
 * fails the MPI call instead of reading device memory with the CPU.
 */
#include "ompi_accel/accelerator_strata.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/util/output.h"

#include "common/strata_mem.h"

int accelerator_strata_check_addr(const void *addr, int *dev_id, uint64_t *flags)
{
    int ordinal = -1;
    strata_mem_kind_t kind;

    if ((dev_id == NULL) || (flags == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    *dev_id = MCA_ACCELERATOR_NO_DEVICE_ID;
    *flags  = 0;
    if (addr == NULL) {
        return 0;
    }
    kind = strata_mem_kind(addr, &ordinal);
    if (kind == STRATA_MEM_HOST) {
        return 0;
    }
    /* Managed memory is marked so that Open MPI copies it through host
     * buffers (the CPU may touch it, RDMA of it would fault pages). */
    if (kind == STRATA_MEM_MANAGED) {
        *flags |= MCA_ACCELERATOR_FLAGS_UNIFIED_MEMORY;
    }
    *dev_id = (ordinal >= 0) ? ordinal : MCA_ACCELERATOR_NO_DEVICE_ID;
    return 1;
}

/*
 * Whether every page of [ptr, ptr + len) is mapped in this process.  A side
 * of a copy that the driver does not call device memory is host memory to
 * it, and the driver's CPU reads or writes it: an address mapped nowhere
 * (an unmapped page: e.g. another process's device address outside this
 * process's reservations) would be a crash there instead of an error here.
 * mincore() fails with ENOMEM on a range with unmapped pages and touches
 * nothing.  It does not see protections: an address inside a mapping the
 * CPU may not touch (the driver's own reserved range, where a freed device
 * buffer lies) passes, and there the driver itself refuses the copy.
 */
static int accelerator_strata_host_mapped(const void *ptr, size_t len)
{
    unsigned char vec[4096];
    size_t page     = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
    uintptr_t end   = (uintptr_t)ptr + len;
    size_t chunk;

    if (end < (uintptr_t)ptr) {
        return 0; /* wraps around the address space */
    }
    while (start < end) {
        chunk = end - start;
        if (chunk > sizeof(vec) * page) {
            chunk = sizeof(vec) * page;
        }
        if ((mincore((void *)start, chunk, vec) != 0) && (errno == ENOMEM)) {
            return 0;
        }
        start += chunk;
    }
    return 1;
}

/* What a copy's side is, once per copy (the datatype engine copies run by
 * run, so this is on its path). */
typedef struct accelerator_strata_side {
    strata_mem_kind_t kind;
    int dev;
} accelerator_strata_side_t;

static int accelerator_strata_side(const void *ptr, size_t size, const char *role,
                                   accelerator_strata_side_t *side)
{
    side->dev  = -1;
    side->kind = strata_mem_kind(ptr, &side->dev);
    if ((side->kind == STRATA_MEM_HOST) && !accelerator_strata_host_mapped(ptr, size)) {
        opal_output(0,
                    "accelerator:cuda (Strata): a copy of %zu bytes, %s %p: neither device "
                    "memory of this process nor mapped host memory",
                    size, role, ptr);
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

/* The device whose primary context a copy runs in: the one the caller
 * named, else the device of either buffer, else the calling thread's
 * (device 0 where it has none). */
static int accelerator_strata_copy_device(int dest_dev_id, int src_dev_id,
                                          const accelerator_strata_side_t *dest,
                                          const accelerator_strata_side_t *src)
{
    if (dest_dev_id >= 0) {
        return dest_dev_id;
    }
    if (src_dev_id >= 0) {
        return src_dev_id;
    }
    if ((dest->kind != STRATA_MEM_HOST) && (dest->dev >= 0)) {
        return dest->dev;
    }
    if ((src->kind != STRATA_MEM_HOST) && (src->dev >= 0)) {
        return src->dev;
    }
    return strata_cuda_current_device(0);
}

/* Both sides checked and the copy's device chosen; OPAL_ERR_BAD_PARAM with
 * a line naming the side that is neither device nor mapped host memory. */
static int accelerator_strata_copy_prepare(int dest_dev_id, int src_dev_id, void *dest,
                                           const void *src, size_t size, int *dev)
{
    accelerator_strata_side_t d, s;

    if ((accelerator_strata_side(src, size, "from", &s) != OPAL_SUCCESS) ||
        (accelerator_strata_side(dest, size, "to", &d) != OPAL_SUCCESS)) {
        return OPAL_ERR_BAD_PARAM;
    }
    *dev = accelerator_strata_copy_device(dest_dev_id, src_dev_id, &d, &s);
    return OPAL_SUCCESS;
}

static CUstream accelerator_strata_stream_of(opal_accelerator_stream_t *stream)
{
    return *(CUstream *)stream->stream;
}

int accelerator_strata_mem_copy_async(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                                      size_t size, opal_accelerator_stream_t *stream,
                                      opal_accelerator_transfer_type_t type)
{
    CUcontext saved;
    CUresult res;
    int dev;

    (void)type;
    if ((stream == NULL) || (stream->stream == NULL) || (dest == NULL) || (src == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (size == 0) {
        return OPAL_SUCCESS;
    }
    if (accelerator_strata_copy_prepare(dest_dev_id, src_dev_id, dest, src, size, &dev) !=
        OPAL_SUCCESS) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (accelerator_strata_ctx_push(dev, &saved, "an asynchronous copy") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    res = strata_cuda.cuMemcpyAsync((CUdeviceptr)dest, (CUdeviceptr)src, size,
                                    accelerator_strata_stream_of(stream));
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuMemcpyAsync", res, "%zu bytes from %p to %p", size, src, dest);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int accelerator_strata_mem_copy(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                                size_t size, opal_accelerator_transfer_type_t type)
{
    const char *call;
    CUcontext saved;
    CUstream stream;
    CUresult res;
    int dev;

    if ((dest == NULL) || (src == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (size == 0) {
        return OPAL_SUCCESS;
    }
    if (type == MCA_ACCELERATOR_TRANSFER_HTOH) {
        memcpy(dest, src, size);
        return OPAL_SUCCESS;
    }
    if (accelerator_strata_copy_prepare(dest_dev_id, src_dev_id, dest, src, size, &dev) !=
        OPAL_SUCCESS) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (accelerator_strata_ctx_push(dev, &saved, "a copy") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    /* A stream and a wait, not cuMemcpy: device-to-device cuMemcpy returns
     * before the copy ran. */
    stream = accelerator_strata_copy_stream(dev);
    if (stream == NULL) {
        accelerator_strata_ctx_pop(saved);
        return OPAL_ERROR;
    }
    res  = strata_cuda.cuMemcpyAsync((CUdeviceptr)dest, (CUdeviceptr)src, size, stream);
    call = "cuMemcpyAsync";
    if (res == CUDA_SUCCESS) {
        res  = strata_cuda.cuStreamSynchronize(stream);
        call = "cuStreamSynchronize";
    }
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report(call, res, "a copy of %zu bytes from %p to %p", size, src, dest);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int accelerator_strata_mem_move(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                                size_t size, opal_accelerator_transfer_type_t type)
{
    uintptr_t d = (uintptr_t)dest, s = (uintptr_t)src;
    void *tmp = NULL;
    int rc, dev = -1;

    if ((dest == NULL) || (src == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if ((size == 0) || (d == s)) {
        return OPAL_SUCCESS;
    }
    if ((d + size <= s) || (s + size <= d)) {
        return accelerator_strata_mem_copy(dest_dev_id, src_dev_id, dest, src, size, type);
    }
    if (type == MCA_ACCELERATOR_TRANSFER_HTOH) {
        memmove(dest, src, size);
        return OPAL_SUCCESS;
    }
    /* Overlapping device ranges: through a device buffer of its own, on the
     * copy's device, allocated and freed there. */
    rc = accelerator_strata_copy_prepare(dest_dev_id, src_dev_id, dest, src, size, &dev);
    if (rc == OPAL_SUCCESS) {
        rc = accelerator_strata_mem_alloc(dev, &tmp, size);
    }
    if (rc != OPAL_SUCCESS) {
        return rc;
    }
    rc = accelerator_strata_mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, src_dev_id, tmp, src, size,
                                     MCA_ACCELERATOR_TRANSFER_UNSPEC);
    if (rc == OPAL_SUCCESS) {
        rc = accelerator_strata_mem_copy(dest_dev_id, MCA_ACCELERATOR_NO_DEVICE_ID, dest, tmp, size,
                                         MCA_ACCELERATOR_TRANSFER_UNSPEC);
    }
    (void)accelerator_strata_mem_release(dev, tmp);
    return rc;
}

int accelerator_strata_mem_alloc(int dev_id, void **ptr, size_t size)
{
    CUdeviceptr p = 0;
    CUcontext saved;
    CUresult res;

    if ((ptr == NULL) || (size == 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (accelerator_strata_ctx_push(dev_id, &saved, "an allocation") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    res = strata_cuda.cuMemAlloc(&p, size);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuMemAlloc", res, "%zu bytes on device %d", size, dev_id);
        return (res == CUDA_ERROR_OUT_OF_MEMORY) ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_ERROR;
    }
    *ptr = (void *)p;
    return OPAL_SUCCESS;
}

int accelerator_strata_mem_release(int dev_id, void *ptr)
{
    CUcontext saved;
    CUresult res;

    if (ptr == NULL) {
        return OPAL_SUCCESS;
    }
    if (accelerator_strata_ctx_push(dev_id, &saved, "a release") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    res = strata_cuda.cuMemFree((CUdeviceptr)ptr);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuMemFree", res, "%p", ptr);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* The device whose context answers a query about ptr: the caller's, else
 * the memory's, else the calling thread's (device 0 where it has none). */
static int accelerator_strata_query_device(int dev_id, const void *ptr)
{
    int ordinal = -1;

    if (dev_id >= 0) {
        return dev_id;
    }
    if ((strata_mem_kind(ptr, &ordinal) != STRATA_MEM_HOST) && (ordinal >= 0)) {
        return ordinal;
    }
    return strata_cuda_current_device(0);
}

/* Queries on memory the driver may not know: the caller decides what a
 * failure means, so the detail is at verbosity 20 only. */
int accelerator_strata_get_address_range(int dev_id, const void *ptr, void **base, size_t *size)
{
    CUdeviceptr b = 0;
    size_t len    = 0;
    CUcontext saved;
    CUresult res;

    if ((ptr == NULL) || (base == NULL) || (size == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* The driver answers only with a context current on this thread. */
    if (accelerator_strata_ctx_push(accelerator_strata_query_device(dev_id, ptr), &saved,
                                    "an address range") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    res = strata_cuda.cuMemGetAddressRange(&b, &len, (CUdeviceptr)ptr);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        opal_output_verbose(20, accelerator_strata_output,
                            "accelerator:cuda (Strata): cuMemGetAddressRange(%p): %d, not device "
                            "memory the driver knows",
                            ptr, (int)res);
        return OPAL_ERROR;
    }
    *base = (void *)b;
    *size = len;
    return OPAL_SUCCESS;
}

int accelerator_strata_get_buffer_id(int dev_id, const void *addr,
                                     opal_accelerator_buffer_id_t *buf_id)
{
    unsigned long long id = 0;
    CUcontext saved;
    CUresult res;

    if ((addr == NULL) || (buf_id == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (accelerator_strata_ctx_push(accelerator_strata_query_device(dev_id, addr), &saved,
                                    "a buffer id") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    res = strata_cuda.cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)addr);
    if (res == CUDA_SUCCESS) {
        /* Registration caches key on the id: a buffer freed and allocated
         * again at the same address gets a new one.  Synchronous memory
         * operations, as for every device buffer Strata hands on: the data
         * path, where contexts are only looked up (common/strata_mem.h). */
        (void)strata_mem_set_sync_memops((uintptr_t)addr, STRATA_MEM_DATA_PATH);
    }
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        opal_output_verbose(20, accelerator_strata_output,
                            "accelerator:cuda (Strata): no buffer id for %p: %d", addr, (int)res);
        return OPAL_ERROR;
    }
    *buf_id = id;
    return OPAL_SUCCESS;
}

int accelerator_strata_host_register(int dev_id, void *ptr, size_t size)
{
    CUcontext saved;
    CUresult res;

    if ((ptr == NULL) || (size == 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (strata_cuda.cuMemHostRegister == NULL) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (accelerator_strata_ctx_push(dev_id, &saved, "a host registration") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    /* Portable: pinned for every context, whichever device asked. */
    res = strata_cuda.cuMemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuMemHostRegister", res, "%zu bytes at %p", size, ptr);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int accelerator_strata_host_unregister(int dev_id, void *ptr)
{
    CUcontext saved;
    CUresult res;

    if (ptr == NULL) {
        return OPAL_SUCCESS;
    }
    if (strata_cuda.cuMemHostUnregister == NULL) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (accelerator_strata_ctx_push(dev_id, &saved, "a host unregistration") != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    res = strata_cuda.cuMemHostUnregister(ptr);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuMemHostUnregister", res, "%p", ptr);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}
