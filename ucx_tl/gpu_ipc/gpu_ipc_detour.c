/*
 * Small copies within a GPU shared without MPS, through pinned host memory
 * (see gpu_ipc_detour.h): the slots and the two copies.
 */
#include "gpu_ipc_detour.h"

#include <ucs/debug/log.h>

void uct_gpu_ipc_detour_init(uct_gpu_ipc_detour_t *detour, size_t max)
{
    detour->max         = max;
    detour->arena       = NULL;
    detour->free        = UCT_GPU_IPC_DETOUR_ALL_FREE;
    detour->unavailable = 0;
}

void uct_gpu_ipc_detour_cleanup(uct_gpu_ipc_detour_t *detour, int ctx_usable)
{
    if ((detour->arena != NULL) && ctx_usable) {
        /* Closed with copies in flight (the base drains its queues after
         * this): they read and write the slots still. */
        if (detour->free != UCT_GPU_IPC_DETOUR_ALL_FREE) {
            (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuCtxSynchronize());
        }
        (void)UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG, strata_cuda.cuMemFreeHost(detour->arena));
    }
    detour->arena = NULL;
}

/* The arena, allocated at the first detour (most processes never share a
 * GPU); a failure is said once and the copies go directly from then on. */
static int uct_gpu_ipc_detour_arena(uct_gpu_ipc_detour_t *detour)
{
    ucs_status_t status;

    if (ucs_likely(detour->arena != NULL)) {
        return 1;
    }
    if (detour->unavailable) {
        return 0;
    }
    status = UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_DIAG,
                                  strata_cuda.cuMemHostAlloc(&detour->arena,
                                                             detour->max * UCT_GPU_IPC_DETOUR_SLOTS,
                                                             CU_MEMHOSTALLOC_PORTABLE));
    if (status != UCS_OK) {
        ucs_diag("gpu_ipc: no pinned memory for small copies within a shared GPU (%d x %zu "
                 "bytes): they run as device-to-device copies",
                 UCT_GPU_IPC_DETOUR_SLOTS, detour->max);
        detour->arena       = NULL;
        detour->unavailable = 1;
        return 0;
    }
    return 1;
}

unsigned uct_gpu_ipc_detour_copy(uct_gpu_ipc_detour_t *detour, CUstream stream, CUdeviceptr dst,
                                 CUdeviceptr src, size_t length, ucs_status_t *status_p)
{
    unsigned slot;
    void *host;

    *status_p = UCS_OK;
    if ((detour->free == 0) || !uct_gpu_ipc_detour_arena(detour)) {
        return 0;
    }
    slot      = (unsigned)__builtin_ctz(detour->free);
    host      = UCS_PTR_BYTE_OFFSET(detour->arena, (size_t)slot * detour->max);
    *status_p = UCT_STRATA_CUDA(strata_cuda.cuMemcpyDtoHAsync(host, src, length, stream));
    if (*status_p == UCS_OK) {
        *status_p = UCT_STRATA_CUDA(strata_cuda.cuMemcpyHtoDAsync(dst, host, length, stream));
    }
    if (*status_p != UCS_OK) {
        /* What was queued reads or writes the slot still: let it finish. */
        (void)UCT_STRATA_CUDA(strata_cuda.cuStreamSynchronize(stream));
        return 0;
    }
    detour->free &= ~(1u << slot);
    return slot + 1;
}

void uct_gpu_ipc_detour_release(uct_gpu_ipc_detour_t *detour, unsigned held)
{
    if (held != 0) {
        detour->free |= 1u << (held - 1);
    }
}
