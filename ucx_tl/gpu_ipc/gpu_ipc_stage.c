/*
 * Staged copies between device memory and a peer's host memory (see
 * gpu_ipc_stage.h): the bounce buffers, their turns, and CMA.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv/writev */
#endif
#include "gpu_ipc_stage.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/uio.h>

ucs_status_t uct_gpu_ipc_stage_init(uct_gpu_ipc_stage_t *stage, size_t piece, unsigned count)
{
    if ((count == 0) || (piece < 4096) || (piece == UCS_MEMUNITS_INF)) {
        ucs_error("gpu_ipc: UCX_GPU_IPC_BOUNCE_COUNT=%u, UCX_GPU_IPC_BOUNCE_SIZE=%zu: the count "
                  "must be at least 1 and the size 4k or more",
                  count, piece);
        return UCS_ERR_INVALID_PARAM;
    }
    stage->piece  = piece;
    stage->count  = count;
    stage->bounce = NULL;
    stage->next   = 0;
    return UCS_OK;
}

static void uct_gpu_ipc_stage_free(uct_gpu_ipc_bounce_t *bounce, unsigned count)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (bounce[i].busy) {
            (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG,
                                       strata_cuda.cuEventSynchronize(bounce[i].event));
        }
        if (bounce[i].event != NULL) {
            (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG,
                                       strata_cuda.cuEventDestroy(bounce[i].event));
        }
        if (bounce[i].buf != NULL) {
            (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG,
                                       strata_cuda.cuMemFreeHost(bounce[i].buf));
        }
    }
    ucs_free(bounce);
}

/* The buffers, allocated at first use (most processes never stage). */
static ucs_status_t uct_gpu_ipc_stage_buffers(uct_gpu_ipc_stage_t *stage)
{
    uct_gpu_ipc_bounce_t *bounce;
    ucs_status_t status = UCS_OK;
    unsigned i;

    if (ucs_likely(stage->bounce != NULL)) {
        return UCS_OK;
    }
    bounce = ucs_calloc(stage->count, sizeof(*bounce), "gpu_ipc bounce");
    if (bounce == NULL) {
        ucs_error("gpu_ipc: no memory for %u bounce buffer descriptors", stage->count);
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; (i < stage->count) && (status == UCS_OK); ++i) {
        status = UCT_STRATA_CUDA(strata_cuda.cuMemHostAlloc(&bounce[i].buf, stage->piece,
                                                            CU_MEMHOSTALLOC_PORTABLE));
        if (status == UCS_OK) {
            status = UCT_STRATA_CUDA(strata_cuda.cuEventCreate(&bounce[i].event,
                                                               CU_EVENT_DISABLE_TIMING));
        }
    }
    if (status != UCS_OK) {
        ucs_error("gpu_ipc: cannot allocate %u pinned bounce buffers of %zu bytes "
                  "(UCX_GPU_IPC_BOUNCE_COUNT, UCX_GPU_IPC_BOUNCE_SIZE)",
                  stage->count, stage->piece);
        uct_gpu_ipc_stage_free(bounce, stage->count);
        return status;
    }
    stage->bounce = bounce;
    return UCS_OK;
}

void uct_gpu_ipc_stage_cleanup(uct_gpu_ipc_stage_t *stage, int ctx_usable)
{
    if (stage->bounce == NULL) {
        return;
    }
    if (ctx_usable) {
        uct_gpu_ipc_stage_free(stage->bounce, stage->count);
    } else {
        ucs_free(stage->bounce); /* the context is gone, and its memory with it */
    }
    stage->bounce = NULL;
}

/* Buffer i of this transfer, free: waits if its last copy still runs. */
static ucs_status_t uct_gpu_ipc_stage_take(uct_gpu_ipc_stage_t *stage, unsigned first, size_t i,
                                           uct_gpu_ipc_bounce_t **b_p)
{
    uct_gpu_ipc_bounce_t *b = &stage->bounce[(first + i) % stage->count];
    ucs_status_t status;

    *b_p = b;
    if (!b->busy) {
        return UCS_OK;
    }
    status = UCT_STRATA_CUDA(strata_cuda.cuEventQuery(b->event));
    if (status == UCS_INPROGRESS) {
        status = UCT_STRATA_CUDA(strata_cuda.cuEventSynchronize(b->event));
    }
    if (status == UCS_OK) {
        b->busy = 0;
    }
    return status;
}

/* Marks b in use by the copy just queued on `stream`. */
static ucs_status_t uct_gpu_ipc_stage_mark(uct_gpu_ipc_bounce_t *b, CUstream stream)
{
    ucs_status_t status = UCT_STRATA_CUDA(strata_cuda.cuEventRecord(b->event, stream));

    b->busy = (status == UCS_OK);
    return status;
}

/* The first buffer of a transfer of `npieces`, and the next transfer's. */
static unsigned uct_gpu_ipc_stage_claim(uct_gpu_ipc_stage_t *stage, size_t npieces)
{
    unsigned first = stage->next;

    stage->next = (unsigned)((first + npieces) % stage->count);
    return first;
}

ucs_status_t uct_gpu_ipc_stage_cma(pid_t pid, void *local, uint64_t remote, size_t length,
                                   int is_put)
{
    struct iovec liov, riov;
    ssize_t done;

    while (length > 0) {
        liov.iov_base = local;
        liov.iov_len  = length;
        riov.iov_base = (void *)(uintptr_t)remote;
        riov.iov_len  = length;
        done          = is_put ? process_vm_writev(pid, &liov, 1, &riov, 1, 0) :
                                 process_vm_readv(pid, &liov, 1, &riov, 1, 0);
        if (done <= 0) {
            if ((done < 0) && (errno == EINTR)) {
                continue;
            }
            ucs_error("gpu_ipc: process_vm_%s(pid %d, 0x%" PRIx64 ", %zu bytes) failed: %m",
                      is_put ? "writev" : "readv", (int)pid, remote, length);
            return ((done < 0) && (errno == ESRCH)) ? UCS_ERR_ENDPOINT_TIMEOUT : UCS_ERR_IO_ERROR;
        }
        local = UCS_PTR_BYTE_OFFSET(local, done);
        remote += done;
        length -= done;
    }
    return UCS_OK;
}

ucs_status_t uct_gpu_ipc_stage_get(uct_gpu_ipc_stage_t *stage, CUstream stream, pid_t pid,
                                   CUdeviceptr local, uint64_t remote, size_t length)
{
    size_t npieces = ucs_div_round_up(length, stage->piece);
    uct_gpu_ipc_bounce_t *b;
    ucs_status_t status;
    size_t i, off, len;
    unsigned first;

    status = uct_gpu_ipc_stage_buffers(stage);
    if (status != UCS_OK) {
        return status;
    }
    first = uct_gpu_ipc_stage_claim(stage, npieces);
    for (i = 0; i < npieces; ++i) {
        off    = i * stage->piece;
        len    = ucs_min(stage->piece, length - off);
        status = uct_gpu_ipc_stage_take(stage, first, i, &b);
        if (status == UCS_OK) {
            status = uct_gpu_ipc_stage_cma(pid, b->buf, remote + off, len, 0);
        }
        if (status == UCS_OK) {
            status = UCT_STRATA_CUDA(strata_cuda.cuMemcpyHtoDAsync(local + off, b->buf, len,
                                                                   stream));
        }
        if (status == UCS_OK) {
            status = uct_gpu_ipc_stage_mark(b, stream);
        }
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

/* Queues the device-to-host copy of piece i into its buffer. */
static ucs_status_t uct_gpu_ipc_stage_put_issue(uct_gpu_ipc_stage_t *stage, unsigned first,
                                                size_t i, CUstream stream, CUdeviceptr local,
                                                size_t length)
{
    size_t off = i * stage->piece;
    size_t len = ucs_min(stage->piece, length - off);
    uct_gpu_ipc_bounce_t *b;
    ucs_status_t status;

    status = uct_gpu_ipc_stage_take(stage, first, i, &b);
    if (status == UCS_OK) {
        status = UCT_STRATA_CUDA(strata_cuda.cuMemcpyDtoHAsync(b->buf, local + off, len, stream));
    }
    if (status == UCS_OK) {
        status = uct_gpu_ipc_stage_mark(b, stream);
    }
    return status;
}

ucs_status_t uct_gpu_ipc_stage_put(uct_gpu_ipc_stage_t *stage, CUstream stream, pid_t pid,
                                   CUdeviceptr local, uint64_t remote, size_t length)
{
    size_t npieces = ucs_div_round_up(length, stage->piece);
    size_t i, issued, off, len;
    uct_gpu_ipc_bounce_t *b;
    ucs_status_t status;
    unsigned first;

    status = uct_gpu_ipc_stage_buffers(stage);
    if (status != UCS_OK) {
        return status;
    }
    first = uct_gpu_ipc_stage_claim(stage, npieces);
    /* The copies run up to `count` pieces ahead of the CPU's writes. */
    for (i = 0, issued = 0; i < npieces; ++i) {
        for (; (issued < npieces) && (issued < i + stage->count); ++issued) {
            status = uct_gpu_ipc_stage_put_issue(stage, first, issued, stream, local, length);
            if (status != UCS_OK) {
                return status;
            }
        }
        off    = i * stage->piece;
        len    = ucs_min(stage->piece, length - off);
        status = uct_gpu_ipc_stage_take(stage, first, i, &b);
        if (status == UCS_OK) {
            status = uct_gpu_ipc_stage_cma(pid, b->buf, remote + off, len, 1);
        }
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}
