/*
 * Copies and memset.
 *
 * A copy may mix any kinds of memory: host pointers are used directly;
 * device, managed and IPC-imported addresses through their mapping's alias.
 * A range may span adjacent mappings (VMM maps placed back to back).
 * Addresses are checked when the copy is submitted (an unmapped or freed
 * device range is CUDA_ERROR_INVALID_VALUE then) and translated again when
 * it runs.
 *
 * When the copy runs follows the driver's documented synchronization rules
 * ("API synchronization behavior" in the driver API reference):
 *  - cuMemcpy*Async: queued on the stream, run at a completion point.
 *  - from pageable host memory to device memory: "a stream sync is performed
 *    before the copy is initiated", then the call returns once the source is
 *    staged, "but the DMA to final destination may not have completed": the
 *    stand-in waits for the default stream, copies the source aside and
 *    queues the copy from there on the default stream.
 *  - from pinned (cuMemHostAlloc, cuMemHostRegister) host memory to device
 *    memory, device to host, and anything involving managed memory: queued
 *    on the default stream (so ordered after its earlier work) and run
 *    before the call returns.
 *  - device to device, and cuMemsetD8 of device memory: "no host-side
 *    synchronization is performed": queued on the default stream and
 *    returning at once.
 *  Work queued on the default stream lands at its next completion point:
 *  later work on that stream or on a blocking stream sees it, a non-blocking
 *  stream and other processes do not.  CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on
 *  the device memory, or CU_CTX_SYNC_MEMOPS on the current context, makes
 *  every synchronous copy and memset complete before it returns, as on a GPU.
 */
#include "cuda_standin.h"

#include <string.h>

typedef enum cuda_standin_copy_mode {
    CUDA_STANDIN_COPY_QUEUED,     /* asynchronous API: the caller's stream */
    CUDA_STANDIN_COPY_SYNC,       /* done when the call returns */
    CUDA_STANDIN_COPY_HOST_ASYNC, /* synchronous API, asynchronous to the host */
    CUDA_STANDIN_COPY_STAGED,     /* pageable source: staged now, lands later */
} cuda_standin_copy_mode_t;

/* What one side of a copy must be. */
typedef enum cuda_standin_side {
    CUDA_STANDIN_SIDE_ANY,    /* host or device: cuMemcpy, the host side of HtoD */
    CUDA_STANDIN_SIDE_DEVICE, /* the device side of a typed copy */
} cuda_standin_side_t;

/* The CPU view of the first contiguous piece of [addr, addr + len).
 * `need` is the access right the device running the copy must have. */
static CUresult cuda_standin_copy_piece(uintptr_t addr, size_t len, unsigned need, int device,
                                        cuda_standin_side_t side, char **cpu_p, size_t *piece_p)
{
    cuda_standin_map_t *map = cuda_standin_map_find(addr);
    size_t left;

    if (map != NULL) {
        if ((map->kind == CUDA_STANDIN_MAP_VMM) && ((map->access[device] & need) != need)) {
            return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                      "0x%lx: device %d has no access (cuMemSetAccess)",
                                      (unsigned long)addr, device);
        }
        left     = map->size - (addr - map->base);
        *cpu_p   = map->alias + (addr - map->base);
        *piece_p = (len < left) ? len : left;
        return CUDA_SUCCESS;
    }
    if (cuda_standin_vaspace_contains(addr)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "device address 0x%lx is not mapped (freed?)",
                                  (unsigned long)addr);
    }
    if ((side == CUDA_STANDIN_SIDE_DEVICE) || (addr == 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx is not device memory",
                                  (unsigned long)addr);
    }
    *cpu_p   = (char *)addr;
    *piece_p = len;
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_copy_check(uintptr_t addr, size_t len, unsigned need, int device,
                                        cuda_standin_side_t side)
{
    CUresult status;
    size_t piece;
    char *cpu;

    while (len > 0) {
        status = cuda_standin_copy_piece(addr, len, need, device, side, &cpu, &piece);
        if (status != CUDA_SUCCESS) {
            return status;
        }
        addr += piece;
        len -= piece;
    }
    return CUDA_SUCCESS;
}

CUresult cuda_standin_copy_run(const cuda_standin_op_t *op)
{
    const unsigned rd = CU_MEM_ACCESS_FLAGS_PROT_READ, rw = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    uintptr_t dst = op->dst, src = op->src;
    size_t len = op->len, dst_piece, src_piece, n;
    char *dst_cpu, *src_cpu;

    while (len > 0) {
        if ((cuda_standin_copy_piece(dst, len, rw, op->device, CUDA_STANDIN_SIDE_ANY, &dst_cpu,
                                     &dst_piece) != CUDA_SUCCESS) ||
            (cuda_standin_copy_piece(src, len, rd, op->device, CUDA_STANDIN_SIDE_ANY, &src_cpu,
                                     &src_piece) != CUDA_SUCCESS)) {
            cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS,
                               "queued copy 0x%lx -> 0x%lx (%zu bytes) touches unmapped memory",
                               (unsigned long)op->src, (unsigned long)op->dst, op->len);
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        n = (dst_piece < src_piece) ? dst_piece : src_piece;
        memmove(dst_cpu, src_cpu, n);
        dst += n;
        src += n;
        len -= n;
    }
    return CUDA_SUCCESS;
}

CUresult cuda_standin_memset_run(const cuda_standin_op_t *op)
{
    uintptr_t dst = op->dst;
    size_t len    = op->len, piece;
    char *cpu;

    while (len > 0) {
        if (cuda_standin_copy_piece(dst, len, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, op->device,
                                    CUDA_STANDIN_SIDE_ANY, &cpu, &piece) != CUDA_SUCCESS) {
            cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS,
                               "queued memset of 0x%lx (%zu bytes) touches unmapped memory",
                               (unsigned long)op->dst, op->len);
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        memset(cpu, op->value, piece);
        dst += piece;
        len -= piece;
    }
    return CUDA_SUCCESS;
}

/* Device memory whose synchronous operations need not wait for the host:
 * not managed, and neither it nor the context asked for synchronous memory
 * operations. */
static int cuda_standin_copy_device_only(uintptr_t addr)
{
    cuda_standin_map_t *map = cuda_standin_map_find(addr);

    return (map != NULL) && (map->kind != CUDA_STANDIN_MAP_MANAGED) && !map->sync_memops &&
           !cuda_standin_ctx_sync_memops();
}

static int cuda_standin_copy_is_device(uintptr_t addr)
{
    return cuda_standin_map_find(addr) != NULL;
}

/* How a synchronous copy of len bytes from src to dst behaves (see the top). */
static cuda_standin_copy_mode_t cuda_standin_copy_sync_mode(uintptr_t dst, uintptr_t src,
                                                            size_t len)
{
    if (!cuda_standin_copy_device_only(dst)) {
        return CUDA_STANDIN_COPY_SYNC; /* to host or managed memory, or synchronized */
    }
    if (cuda_standin_copy_is_device(src)) {
        return cuda_standin_copy_device_only(src) ? CUDA_STANDIN_COPY_HOST_ASYNC
                                                  : CUDA_STANDIN_COPY_SYNC;
    }
    return cuda_standin_mem_host_pinned(src, len) ? CUDA_STANDIN_COPY_SYNC
                                                  : CUDA_STANDIN_COPY_STAGED;
}

void cuda_standin_op_release(cuda_standin_op_t *op)
{
    free(op->staged);
    op->staged = NULL;
}

/* The pageable source, copied aside: the copy reads it from there. */
static CUresult cuda_standin_copy_stage(cuda_standin_op_t *op, cuda_standin_stream_t *stream)
{
    CUresult status = cuda_standin_stream_finish(stream);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    op->staged = malloc(op->len);
    if (op->staged == NULL) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes of staging", op->len);
    }
    memcpy(op->staged, (const void *)op->src, op->len);
    op->src = (uintptr_t)op->staged;
    return CUDA_SUCCESS;
}

/*
 * Whether an asynchronous copy moves between device memory and pageable host
 * memory.  The driver "might be synchronous with respect to host" for such a
 * copy: it stages the pageable side through its own pinned buffer, and "may
 * synchronize with the stream" to do so.  The stand-in runs it queued like
 * any other, but counts the host-side wait a GPU may make it pay: a pipeline
 * that stages through pageable memory is as costly as one that synchronizes.
 */
static int cuda_standin_copy_pageable_async(const cuda_standin_op_t *op)
{
    int dst_dev = cuda_standin_copy_is_device(op->dst);
    int src_dev = cuda_standin_copy_is_device(op->src);

    if (dst_dev == src_dev) {
        return 0; /* device to device, or host to host (synchronous anyway) */
    }
    return dst_dev ? !cuda_standin_mem_host_pinned(op->src, op->len)
                   : !cuda_standin_mem_host_pinned(op->dst, op->len);
}

/* Queues `op` and, for SYNC, runs it (with the stream's earlier work).  The
 * queue owns what `op` holds once it is queued. */
static CUresult cuda_standin_op_submit(cuda_standin_op_t *op, cuda_standin_stream_t *stream,
                                       cuda_standin_copy_mode_t mode)
{
    CUresult status = CUDA_SUCCESS;

    if (mode == CUDA_STANDIN_COPY_STAGED) {
        status = cuda_standin_copy_stage(op, stream);
    }
    if (status == CUDA_SUCCESS) {
        status = cuda_standin_stream_enqueue(stream, op);
    }
    if (status != CUDA_SUCCESS) {
        cuda_standin_op_release(op);
        return status;
    }
    if (op->kind == CUDA_STANDIN_OP_MEMSET) {
        cuda_standin_count_memset(op->dst, op->len);
    } else {
        cuda_standin_count_copy(op->dst, op->src, op->len);
    }
    if ((mode == CUDA_STANDIN_COPY_SYNC) || (mode == CUDA_STANDIN_COPY_STAGED) ||
        ((mode == CUDA_STANDIN_COPY_QUEUED) && cuda_standin_copy_pageable_async(op))) {
        cuda_standin_count(CUDA_STANDIN_COUNT_WAIT); /* the host waited for the device */
    }
    if (mode != CUDA_STANDIN_COPY_SYNC) {
        return CUDA_SUCCESS;
    }
    return cuda_standin_stream_finish(stream);
}

typedef struct cuda_standin_copy_args {
    uintptr_t dst, src;
    size_t len;
    cuda_standin_side_t dst_side, src_side;
} cuda_standin_copy_args_t;

static CUresult cuda_standin_copy(const cuda_standin_copy_args_t *args, CUstream hstream,
                                  cuda_standin_copy_mode_t mode)
{
    cuda_standin_op_t op = {.kind = CUDA_STANDIN_OP_COPY,
                            .dst  = args->dst,
                            .src  = args->src,
                            .len  = args->len};
    cuda_standin_stream_t *stream = NULL;
    CUresult status;

    cuda_standin_note("0x%lx -> 0x%lx, %zu bytes, stream %p", (unsigned long)args->src,
                      (unsigned long)args->dst, args->len, (void *)hstream);
    status = cuda_standin_stream_get((mode == CUDA_STANDIN_COPY_QUEUED) ? hstream : NULL, &stream);
    if ((status != CUDA_SUCCESS) || (args->len == 0)) {
        return status;
    }
    op.device = cuda_standin_stream_device(stream);
    status    = cuda_standin_copy_check(args->dst, args->len, CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                                        op.device, args->dst_side);
    if (status == CUDA_SUCCESS) {
        status = cuda_standin_copy_check(args->src, args->len, CU_MEM_ACCESS_FLAGS_PROT_READ,
                                         op.device, args->src_side);
    }
    if (status != CUDA_SUCCESS) {
        return status;
    }
    return cuda_standin_op_submit(&op, stream, mode);
}

static CUresult cuda_standin_copy_typed(uintptr_t dst, uintptr_t src, size_t len,
                                        cuda_standin_side_t dst_side, cuda_standin_side_t src_side,
                                        CUstream hstream, cuda_standin_copy_mode_t mode)
{
    cuda_standin_copy_args_t args = {dst, src, len, dst_side, src_side};

    return cuda_standin_copy(&args, hstream, mode);
}

#define CUDA_STANDIN_ANY    CUDA_STANDIN_SIDE_ANY
#define CUDA_STANDIN_DEVICE CUDA_STANDIN_SIDE_DEVICE

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    CUDA_STANDIN_CALL(cuMemcpy, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed(dst, src, ByteCount, CUDA_STANDIN_ANY,
                                              CUDA_STANDIN_ANY, NULL,
                                              cuda_standin_copy_sync_mode(dst, src, ByteCount)));
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemcpyAsync, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed(dst, src, ByteCount, CUDA_STANDIN_ANY,
                                              CUDA_STANDIN_ANY, hStream, CUDA_STANDIN_COPY_QUEUED));
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    CUDA_STANDIN_CALL(cuMemcpyHtoD, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed(dstDevice, (uintptr_t)srcHost, ByteCount,
                                              CUDA_STANDIN_DEVICE, CUDA_STANDIN_ANY, NULL,
                                              cuda_standin_copy_sync_mode(dstDevice,
                                                                          (uintptr_t)srcHost,
                                                                          ByteCount)));
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    CUDA_STANDIN_CALL(cuMemcpyDtoH, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed((uintptr_t)dstHost, srcDevice, ByteCount,
                                              CUDA_STANDIN_ANY, CUDA_STANDIN_DEVICE, NULL,
                                              CUDA_STANDIN_COPY_SYNC));
}

CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    CUDA_STANDIN_CALL(cuMemcpyDtoD, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed(dstDevice, srcDevice, ByteCount, CUDA_STANDIN_DEVICE,
                                              CUDA_STANDIN_DEVICE, NULL,
                                              cuda_standin_copy_sync_mode(dstDevice, srcDevice,
                                                                          ByteCount)));
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                           CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemcpyHtoDAsync, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed(dstDevice, (uintptr_t)srcHost, ByteCount,
                                              CUDA_STANDIN_DEVICE, CUDA_STANDIN_ANY, hStream,
                                              CUDA_STANDIN_COPY_QUEUED));
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemcpyDtoHAsync, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed((uintptr_t)dstHost, srcDevice, ByteCount,
                                              CUDA_STANDIN_ANY, CUDA_STANDIN_DEVICE, hStream,
                                              CUDA_STANDIN_COPY_QUEUED));
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemcpyDtoDAsync, CUDA_STANDIN_IN_CTX,
                      cuda_standin_copy_typed(dstDevice, srcDevice, ByteCount, CUDA_STANDIN_DEVICE,
                                              CUDA_STANDIN_DEVICE, hStream,
                                              CUDA_STANDIN_COPY_QUEUED));
}

static CUresult cuda_standin_memset(CUdeviceptr dst, unsigned char value, size_t len)
{
    cuda_standin_stream_t *stream = cuda_standin_stream_default();
    cuda_standin_op_t op          = {.kind   = CUDA_STANDIN_OP_MEMSET,
                                     .device = cuda_standin_stream_device(stream),
                                     .dst    = dst,
                                     .len    = len,
                                     .value  = value};
    cuda_standin_copy_mode_t mode;
    CUresult status;

    cuda_standin_note("0x%llx = 0x%02x, %zu bytes", (unsigned long long)dst, value, len);
    if (len == 0) {
        return CUDA_SUCCESS;
    }
    status = cuda_standin_copy_check(dst, len, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, op.device,
                                     CUDA_STANDIN_SIDE_DEVICE);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    mode = cuda_standin_copy_device_only(dst) ? CUDA_STANDIN_COPY_HOST_ASYNC
                                              : CUDA_STANDIN_COPY_SYNC;
    return cuda_standin_op_submit(&op, stream, mode);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    CUDA_STANDIN_CALL(cuMemsetD8, CUDA_STANDIN_IN_CTX, cuda_standin_memset(dstDevice, uc, N));
}
