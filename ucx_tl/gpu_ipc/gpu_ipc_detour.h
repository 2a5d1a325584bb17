/*
 * Small copies between two buffers of one GPU that processes share without
 * MPS, through pinned host memory: what gpu_ipc does below
 * UCX_GPU_IPC_SHARED_DETOUR bytes.
 *
 * On a GPU shared by processes without MPS, each process's compute-engine
 * work (a kernel, a device-to-device copy, a memset) waits for a context
 * switch when another process used the GPU since (~120-135 us on the H200,
 * 2026-11-27), while copies between device and host memory run on the copy
 * engines and do not.  A small message pays the switch for nothing, so its
 * copy takes the detour: device to a pinned slot, slot to device, both
 * queued on the endpoint's stream (no host wait), the slot held until the
 * operation completes.  A large one is worth the switch (gpu_ipc moves
 * HBM-speed data in one copy), and under MPS or between two GPUs there is
 * no switch to avoid: those copy directly.
 */
#ifndef UCT_GPU_IPC_DETOUR_H
#define UCT_GPU_IPC_DETOUR_H

#include "../base/strata_md.h"

#include <stdint.h>

#define UCT_GPU_IPC_DETOUR_SLOTS    16 /* copies on the detour at once */
#define UCT_GPU_IPC_DETOUR_ALL_FREE ((uint32_t)((1ull << UCT_GPU_IPC_DETOUR_SLOTS) - 1))

typedef struct uct_gpu_ipc_detour {
    size_t max;      /* largest copy that takes it (a slot's size); 0: never */
    void *arena;     /* UCT_GPU_IPC_DETOUR_SLOTS slots, pinned, at first use */
    uint32_t free;   /* bit i: slot i is free */
    int unavailable; /* the arena could not be allocated: copy directly */
} uct_gpu_ipc_detour_t;

void uct_gpu_ipc_detour_init(uct_gpu_ipc_detour_t *detour, size_t max);

/* Frees the arena; the interface's context is current if ctx_usable (the
 * base has completed every operation, so no slot is in use). */
void uct_gpu_ipc_detour_cleanup(uct_gpu_ipc_detour_t *detour, int ctx_usable);

/*
 * Queues dst <- src (length bytes, at most detour->max) on `stream` through
 * a free slot, whose number + 1 it returns (the operation's to release when
 * it completes), or 0 when no slot is free or the arena cannot be had: the
 * caller then copies directly.  *status_p: how queueing went (a failed copy
 * releases its slot).  The context of `stream` is current.
 */
unsigned uct_gpu_ipc_detour_copy(uct_gpu_ipc_detour_t *detour, CUstream stream, CUdeviceptr dst,
                                 CUdeviceptr src, size_t length, ucs_status_t *status_p);

/* Gives back slot number + 1 `held` (0: none). */
void uct_gpu_ipc_detour_release(uct_gpu_ipc_detour_t *detour, unsigned held);

#endif /* UCT_GPU_IPC_DETOUR_H */
