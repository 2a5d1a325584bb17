/*
 * The cache of peer allocations mapped into this process by gpu_ipc.
 *
 * Mapping a peer's allocation (cuIpcOpenMemHandle, or importing a VMM
 * handle) costs far more than a copy of a few kilobytes, and drivers before
 * CUDA 11 refuse to open the same legacy handle twice in one process (newer
 * ones count the opens and return the same pointer), so every
 * allocation is mapped once, shared by all the rkeys that point into it,
 * and kept mapped after the last of them is released, for the next message.
 *
 * An entry is identified by (owner pid, owner start time, base, length,
 * buffer id).  An owner cannot have two live allocations that overlap, so
 * when a key arrives whose range overlaps an entry of the same owner with a
 * different identity, that entry is STALE: the owner freed the allocation
 * (and perhaps allocated again at the same address).  A stale entry leaves
 * the index at once, so no lookup can return it again, and is unmapped as
 * soon as its last user releases it.  The same holds for every entry of an
 * earlier process that had the same pid.
 *
 * The cache holds at most `max_entries` mappings: before mapping another it
 * unmaps the least recently used unreferenced ones.  Referenced entries are
 * never unmapped; when every entry is in use the cache grows past the limit
 * rather than fail a transfer.
 *
 * This file is bookkeeping only: mapping and unmapping are callbacks (the
 * driver calls are in gpu_ipc_md.c), so the policy is unit-tested without
 * CUDA (test/unit/test_gpu_ipc_cache.c).  All functions are thread-safe;
 * callbacks run under the cache lock, which also keeps two threads from
 * opening the same handle at once.
 */
#ifndef UCT_GPU_IPC_CACHE_H
#define UCT_GPU_IPC_CACHE_H

#include "gpu_ipc_key.h"

#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/type/status.h>
#include <pthread.h>

typedef struct uct_gpu_ipc_cache_entry uct_gpu_ipc_cache_entry_t;

typedef struct uct_gpu_ipc_cache_ops {
    /* Maps the allocation `key` describes; returns UCS_OK, its address in
     * this process and whatever unmap() will need to know about how it was
     * mapped (*map_ctx_p), or why not (UCS_ERR_UNREACHABLE: use another
     * path). */
    ucs_status_t (*map)(void *arg, const uct_gpu_ipc_key_t *key, uint64_t *mapped_p,
                        void **map_ctx_p);
    /* Undoes map(); may run on another thread than map() did. */
    void (*unmap)(void *arg, const uct_gpu_ipc_key_t *key, uint64_t mapped, void *map_ctx);
    /* Optional, asked on a miss before anything else: UCS_OK if the key's
     * owner is the process that runs under its pid now.  A key that fails
     * it is refused (its status returned) and must not retire the live
     * owner's entries as superseded. */
    ucs_status_t (*check)(void *arg, const uct_gpu_ipc_key_t *key);
} uct_gpu_ipc_cache_ops_t;

/* Identity of a peer allocation: what must match for a mapping to be reused. */
typedef struct uct_gpu_ipc_cache_id {
    uint64_t owner_start;
    uint64_t base;
    uint64_t length;
    uint64_t buffer_id;
    uint32_t owner_pid;
    uint32_t handle_type;
} uct_gpu_ipc_cache_id_t;

KHASH_TYPE(uct_gpu_ipc_cache_index, uct_gpu_ipc_cache_id_t, uct_gpu_ipc_cache_entry_t *);

/* Counters, for tests and debug logs. */
typedef struct uct_gpu_ipc_cache_stats {
    unsigned mapped;  /* entries mapped now, stale ones included */
    unsigned indexed; /* entries a lookup can find */
    unsigned idle;    /* mapped and unreferenced */
    unsigned long hits, misses, maps, unmaps, stale, evictions, map_failures;
} uct_gpu_ipc_cache_stats_t;

typedef struct uct_gpu_ipc_cache {
    pthread_mutex_t lock;
    const uct_gpu_ipc_cache_ops_t *ops;
    void *ops_arg;
    unsigned max_entries;
    khash_t(uct_gpu_ipc_cache_index) index;
    ucs_list_link_t indexed; /* entries in the index, for overlap scans */
    ucs_list_link_t idle;    /* unreferenced entries, least recently used first */
    uct_gpu_ipc_cache_stats_t stats;
} uct_gpu_ipc_cache_t;

void uct_gpu_ipc_cache_init(uct_gpu_ipc_cache_t *cache, const uct_gpu_ipc_cache_ops_t *ops,
                            void *ops_arg, unsigned max_entries);

/* Unmaps every unreferenced entry; referenced ones are left to the process's
 * end (their users may still copy through them). */
void uct_gpu_ipc_cache_purge(uct_gpu_ipc_cache_t *cache);

/* Purges, then frees the cache's own memory.  Referenced entries, if any,
 * are left mapped and are forgotten (reported at debug level). */
void uct_gpu_ipc_cache_cleanup(uct_gpu_ipc_cache_t *cache);

/* Retires every entry map() made with `map_ctx` (a context about to be
 * reset, which takes its mappings with it): no lookup finds them again;
 * each is unmapped now if unused, else at its last release.  Returns how
 * many. */
unsigned uct_gpu_ipc_cache_retire_ctx(uct_gpu_ipc_cache_t *cache, void *map_ctx);

/* Changes the limit, unmapping idle entries beyond it. */
void uct_gpu_ipc_cache_set_limit(uct_gpu_ipc_cache_t *cache, unsigned max_entries);

/*
 * Returns a referenced entry for the allocation `key` describes, mapping it
 * if needed, and its address in this process.  Errors are map()'s.
 */
ucs_status_t uct_gpu_ipc_cache_get(uct_gpu_ipc_cache_t *cache, const uct_gpu_ipc_key_t *key,
                                   uct_gpu_ipc_cache_entry_t **entry_p, uint64_t *mapped_p);

/*
 * Takes another reference on an entry the caller holds one on already: a
 * copy through an rkey's mapping holds its own until the copy completes, so
 * that neither the rkey's release nor an eviction unmaps it under the copy.
 */
void uct_gpu_ipc_cache_hold(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry);

/* Drops a reference taken by uct_gpu_ipc_cache_get() or _hold(). */
void uct_gpu_ipc_cache_put(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry);

void uct_gpu_ipc_cache_get_stats(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_stats_t *stats);

#endif /* UCT_GPU_IPC_CACHE_H */
