/*
 * Staged copies between this process's device memory and a peer's host
 * memory: what gpu_ipc does with a HOST key (UCX_STRATA_IPC_HOST).
 *
 * No copy engine can reach another process's pageable memory, so a
 * transfer moves in pieces through pinned bounce buffers of this process:
 * the CPU moves a piece between the peer's memory and a buffer with CMA
 * (process_vm_readv/writev, as UCX's cma transport does), a copy engine
 * between the buffer and the device, and the buffers take turns so that
 * the CPU moves one piece while the engine moves another.  The host waits
 * only when a buffer it needs is still being copied: one wait per buffer
 * reuse, not per piece.
 *
 * Like cma, the CPU's part runs inside the call (a get returns once every
 * piece is read and its copy queued; a put once every piece is written);
 * a get's device copies complete through the endpoint's queue.
 */
#ifndef UCT_GPU_IPC_STAGE_H
#define UCT_GPU_IPC_STAGE_H

#include "../base/strata_md.h"

#include <sys/types.h>

typedef struct uct_gpu_ipc_bounce {
    void *buf;     /* cuMemHostAlloc'ed (portable), piece bytes */
    CUevent event; /* recorded after the last copy that used buf */
    int busy;      /* event recorded and not yet seen complete */
} uct_gpu_ipc_bounce_t;

typedef struct uct_gpu_ipc_stage {
    size_t piece;                 /* UCX_GPU_IPC_BOUNCE_SIZE */
    unsigned count;               /* UCX_GPU_IPC_BOUNCE_COUNT */
    uct_gpu_ipc_bounce_t *bounce; /* count of them, NULL until first used */
    unsigned next;                /* the one to use next */
} uct_gpu_ipc_stage_t;

/* Checks the settings; buffers come at first use. */
ucs_status_t uct_gpu_ipc_stage_init(uct_gpu_ipc_stage_t *stage, size_t piece, unsigned count);

/* Waits for the copies still using the buffers and frees them; the
 * interface's context is current (if it still can be). */
void uct_gpu_ipc_stage_cleanup(uct_gpu_ipc_stage_t *stage, int ctx_usable);

/* The peer's [remote, +length) into device memory at `local`: copies queued
 * on `stream`; the caller queues the operation that completes behind them.
 * The context of `stream` is current. */
ucs_status_t uct_gpu_ipc_stage_get(uct_gpu_ipc_stage_t *stage, CUstream stream, pid_t pid,
                                   CUdeviceptr local, uint64_t remote, size_t length);

/* Device memory at `local` into the peer's [remote, +length): done when it
 * returns.  The context of `stream` is current. */
ucs_status_t uct_gpu_ipc_stage_put(uct_gpu_ipc_stage_t *stage, CUstream stream, pid_t pid,
                                   CUdeviceptr local, uint64_t remote, size_t length);

/* Host memory to or from the peer's host memory with CMA (host to host
 * through a HOST key), done when it returns. */
ucs_status_t uct_gpu_ipc_stage_cma(pid_t pid, void *local, uint64_t remote, size_t length,
                                   int is_put);

#endif /* UCT_GPU_IPC_STAGE_H */
