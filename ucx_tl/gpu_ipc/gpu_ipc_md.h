/*
 * The gpu_ipc memory domain: registers device memory for peers on the
 * node (export of the whole allocation), packs and unpacks its keys.
 */
#ifndef UCT_GPU_IPC_MD_H
#define UCT_GPU_IPC_MD_H

#include "../base/strata_md.h"
#include "gpu_ipc_cache.h"

#include <sys/types.h>

extern const uct_strata_md_desc_t uct_gpu_ipc_md_desc;

/*
 * An unpacked remote key (uct_rkey_t points to it): a peer allocation mapped
 * into this process.  Remote address X is local address
 * mapped_base + (X - remote_base).  The mapping belongs to the process-wide
 * cache; the rkey holds one reference to it.
 */
typedef struct uct_gpu_ipc_rkey {
    uint64_t remote_base;             /* the owner's address of the allocation */
    uint64_t length;                  /* its length */
    uint64_t mapped_base;             /* its address here */
    pid_t owner_pid;
    uint64_t owner_start;             /* its start time, as in the key */
    uct_gpu_ipc_cache_entry_t *entry; /* the cache's mapping; NULL for host memory */
    int is_host;                      /* the owner's host memory (HOST key): CMA */
    uint8_t dev_uuid[16];             /* the owner's device */
    int ordinal;                      /* that device as this process numbers it, -1 if
                                       * not visible; UCT_GPU_IPC_ORDINAL_UNKNOWN until
                                       * asked (uct_gpu_ipc_rkey_ordinal) */
} uct_gpu_ipc_rkey_t;

#define UCT_GPU_IPC_ORDINAL_UNKNOWN (-2)

/* The device that holds the rkey's memory, as this process numbers it
 * (found once per rkey: a few driver calls). */
int uct_gpu_ipc_rkey_ordinal(uct_gpu_ipc_rkey_t *rkey);

/*
 * Whether process `pid` is the one that started at `start` (a key's
 * owner_start): not when the pid is gone, nor when a new process got it
 * after the owner exited.  Reads /proc/<pid>/stat (microseconds).
 */
int uct_gpu_ipc_owner_is_alive(pid_t pid, uint64_t start);

/* The process-wide cache of peer mappings that rkeys and copies reference. */
uct_gpu_ipc_cache_t *uct_gpu_ipc_global_cache(void);

/* Component-level key functions (a key is unpacked without a domain). */
ucs_status_t uct_gpu_ipc_rkey_unpack(UCT_STRATA_RKEY_UNPACK_ARGS);
ucs_status_t uct_gpu_ipc_rkey_release(uct_component_t *component, uct_rkey_t rkey, void *handle);

#endif /* UCT_GPU_IPC_MD_H */
