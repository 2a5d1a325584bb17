/*
 * The mapping cache of gpu_ipc: lookup, staleness, LRU (see gpu_ipc_cache.h).
 */
#include "gpu_ipc_cache.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log_def.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>

struct uct_gpu_ipc_cache_entry {
    uct_gpu_ipc_key_t key;     /* the key it was mapped from, for unmap() */
    uct_gpu_ipc_cache_id_t id;
    uint64_t mapped;           /* its base address in this process */
    void *map_ctx;             /* from map(), for unmap() */
    unsigned refcount;
    int indexed;               /* in the index: not stale */
    ucs_list_link_t indexed_link;
    ucs_list_link_t idle_link; /* in cache->idle while refcount == 0 */
};

static inline khint32_t uct_gpu_ipc_cache_id_hash(uct_gpu_ipc_cache_id_t id)
{
    return kh_int64_hash_func(id.base ^ id.buffer_id) ^ kh_int_hash_func(id.owner_pid);
}

static inline int uct_gpu_ipc_cache_id_equal(uct_gpu_ipc_cache_id_t a, uct_gpu_ipc_cache_id_t b)
{
    return (a.owner_pid == b.owner_pid) && (a.owner_start == b.owner_start) &&
           (a.base == b.base) && (a.length == b.length) && (a.buffer_id == b.buffer_id) &&
           (a.handle_type == b.handle_type);
}

KHASH_IMPL(uct_gpu_ipc_cache_index, uct_gpu_ipc_cache_id_t, uct_gpu_ipc_cache_entry_t *, 1,
           uct_gpu_ipc_cache_id_hash, uct_gpu_ipc_cache_id_equal)

static uct_gpu_ipc_cache_id_t uct_gpu_ipc_cache_id_of(const uct_gpu_ipc_key_t *key)
{
    uct_gpu_ipc_cache_id_t id;

    /* Zeroed first: the struct is hashed and compared field by field, but a
     * defined padding costs nothing and keeps memory checkers quiet. */
    memset(&id, 0, sizeof(id));
    id.owner_pid   = key->owner_pid;
    id.owner_start = key->owner_start;
    id.base        = key->base;
    id.length      = key->length;
    id.buffer_id   = key->buffer_id;
    id.handle_type = key->handle_type;
    return id;
}

/* Whether `entry` cannot be the allocation `id` names, given that `id` is
 * live now: same owner pid, and either another incarnation of that pid, or
 * an overlapping range that is not the same allocation. */
static int uct_gpu_ipc_cache_is_superseded(const uct_gpu_ipc_cache_entry_t *entry,
                                           const uct_gpu_ipc_cache_id_t *id)
{
    const uct_gpu_ipc_cache_id_t *old = &entry->id;

    if (old->owner_pid != id->owner_pid) {
        return 0;
    }
    if (old->owner_start != id->owner_start) {
        return 1;
    }
    return (old->base < id->base + id->length) && (id->base < old->base + old->length) &&
           !uct_gpu_ipc_cache_id_equal(*old, *id);
}

static void uct_gpu_ipc_cache_unmap(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry)
{
    ucs_assert(entry->refcount == 0);
    ucs_trace("gpu_ipc cache: unmap pid %u 0x%llx+%llu bufid %llu mapped at 0x%llx",
              entry->id.owner_pid, (unsigned long long)entry->id.base,
              (unsigned long long)entry->id.length, (unsigned long long)entry->id.buffer_id,
              (unsigned long long)entry->mapped);
    cache->ops->unmap(cache->ops_arg, &entry->key, entry->mapped, entry->map_ctx);
    ucs_list_del(&entry->idle_link);
    --cache->stats.idle;
    --cache->stats.mapped;
    ++cache->stats.unmaps;
    ucs_free(entry);
}

static void uct_gpu_ipc_cache_unindex(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry)
{
    khiter_t iter;

    iter = kh_get(uct_gpu_ipc_cache_index, &cache->index, entry->id);
    ucs_assert(iter != kh_end(&cache->index));
    kh_del(uct_gpu_ipc_cache_index, &cache->index, iter);
    ucs_list_del(&entry->indexed_link);
    entry->indexed = 0;
    --cache->stats.indexed;
}

/* Removes an entry that must never be found again; unmaps it now if nobody
 * uses it, else its last uct_gpu_ipc_cache_put() does. */
static void uct_gpu_ipc_cache_retire(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry)
{
    uct_gpu_ipc_cache_unindex(cache, entry);
    if (entry->refcount == 0) {
        uct_gpu_ipc_cache_unmap(cache, entry);
    }
}

static void uct_gpu_ipc_cache_retire_superseded(uct_gpu_ipc_cache_t *cache,
                                                const uct_gpu_ipc_cache_id_t *id)
{
    uct_gpu_ipc_cache_entry_t *entry, *tmp;

    /* A linear scan, only on a miss: a miss maps an allocation, which costs
     * far more than walking a few thousand entries. */
    ucs_list_for_each_safe(entry, tmp, &cache->indexed, indexed_link) {
        if (uct_gpu_ipc_cache_is_superseded(entry, id)) {
            ucs_debug("gpu_ipc cache: pid %u 0x%llx+%llu bufid %llu is stale (now 0x%llx+%llu "
                      "bufid %llu)%s",
                      entry->id.owner_pid, (unsigned long long)entry->id.base,
                      (unsigned long long)entry->id.length,
                      (unsigned long long)entry->id.buffer_id, (unsigned long long)id->base,
                      (unsigned long long)id->length, (unsigned long long)id->buffer_id,
                      entry->refcount ? ", unmapped when released" : "");
            ++cache->stats.stale;
            uct_gpu_ipc_cache_retire(cache, entry);
        }
    }
}

/* Unmaps idle entries, oldest first, until at most max_entries are mapped
 * or none is idle.  A purge is not counted as evictions. */
static void uct_gpu_ipc_cache_unmap_idle(uct_gpu_ipc_cache_t *cache, unsigned max_entries,
                                         int is_purge)
{
    while ((cache->stats.mapped > max_entries) && !ucs_list_is_empty(&cache->idle)) {
        uct_gpu_ipc_cache_entry_t *entry = ucs_list_head(&cache->idle, uct_gpu_ipc_cache_entry_t,
                                                         idle_link);

        ucs_assert(entry->indexed); /* stale entries are unmapped when idle */
        if (!is_purge) {
            ++cache->stats.evictions;
        }
        uct_gpu_ipc_cache_unindex(cache, entry);
        uct_gpu_ipc_cache_unmap(cache, entry);
    }
}

void uct_gpu_ipc_cache_init(uct_gpu_ipc_cache_t *cache, const uct_gpu_ipc_cache_ops_t *ops,
                            void *ops_arg, unsigned max_entries)
{
    memset(cache, 0, sizeof(*cache));
    pthread_mutex_init(&cache->lock, NULL);
    cache->ops         = ops;
    cache->ops_arg     = ops_arg;
    cache->max_entries = max_entries;
    kh_init_inplace(uct_gpu_ipc_cache_index, &cache->index);
    ucs_list_head_init(&cache->indexed);
    ucs_list_head_init(&cache->idle);
}

void uct_gpu_ipc_cache_purge(uct_gpu_ipc_cache_t *cache)
{
    pthread_mutex_lock(&cache->lock);
    uct_gpu_ipc_cache_unmap_idle(cache, 0, 1);
    pthread_mutex_unlock(&cache->lock);
}

void uct_gpu_ipc_cache_cleanup(uct_gpu_ipc_cache_t *cache)
{
    uct_gpu_ipc_cache_purge(cache);
    if (cache->stats.mapped > 0) {
        ucs_debug("gpu_ipc cache: %u mappings still referenced at cleanup", cache->stats.mapped);
    }
    kh_destroy_inplace(uct_gpu_ipc_cache_index, &cache->index);
    pthread_mutex_destroy(&cache->lock);
}

unsigned uct_gpu_ipc_cache_retire_ctx(uct_gpu_ipc_cache_t *cache, void *map_ctx)
{
    uct_gpu_ipc_cache_entry_t *entry, *tmp;
    unsigned count = 0;

    pthread_mutex_lock(&cache->lock);
    ucs_list_for_each_safe(entry, tmp, &cache->indexed, indexed_link) {
        if (entry->map_ctx == map_ctx) {
            ++cache->stats.stale;
            ++count;
            uct_gpu_ipc_cache_retire(cache, entry);
        }
    }
    pthread_mutex_unlock(&cache->lock);
    return count;
}

void uct_gpu_ipc_cache_set_limit(uct_gpu_ipc_cache_t *cache, unsigned max_entries)
{
    pthread_mutex_lock(&cache->lock);
    cache->max_entries = max_entries;
    uct_gpu_ipc_cache_unmap_idle(cache, max_entries, 0);
    pthread_mutex_unlock(&cache->lock);
}

static ucs_status_t uct_gpu_ipc_cache_insert(uct_gpu_ipc_cache_t *cache,
                                             const uct_gpu_ipc_key_t *key,
                                             const uct_gpu_ipc_cache_id_t *id,
                                             uct_gpu_ipc_cache_entry_t **entry_p)
{
    uct_gpu_ipc_cache_entry_t *entry;
    ucs_status_t status;
    khiter_t iter;
    int ret;

    entry = ucs_calloc(1, sizeof(*entry), "gpu_ipc cache entry");
    if (entry == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    iter = kh_put(uct_gpu_ipc_cache_index, &cache->index, *id, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }
    ucs_assert(ret != UCS_KH_PUT_KEY_PRESENT);

    status = cache->ops->map(cache->ops_arg, key, &entry->mapped, &entry->map_ctx);
    if (status != UCS_OK) {
        ++cache->stats.map_failures;
        goto err_del;
    }
    entry->key      = *key;
    entry->id       = *id;
    entry->refcount = 1;
    entry->indexed  = 1;
    ucs_list_head_init(&entry->idle_link);
    ucs_list_add_tail(&cache->indexed, &entry->indexed_link);
    kh_val(&cache->index, iter) = entry;
    ++cache->stats.mapped;
    ++cache->stats.indexed;
    ++cache->stats.maps;
    *entry_p = entry;
    return UCS_OK;

err_del:
    kh_del(uct_gpu_ipc_cache_index, &cache->index, iter);
err_free:
    ucs_free(entry);
    return status;
}

ucs_status_t uct_gpu_ipc_cache_get(uct_gpu_ipc_cache_t *cache, const uct_gpu_ipc_key_t *key,
                                   uct_gpu_ipc_cache_entry_t **entry_p, uint64_t *mapped_p)
{
    uct_gpu_ipc_cache_id_t id = uct_gpu_ipc_cache_id_of(key);
    uct_gpu_ipc_cache_entry_t *entry;
    ucs_status_t status = UCS_OK;
    khiter_t iter;

    pthread_mutex_lock(&cache->lock);
    iter = kh_get(uct_gpu_ipc_cache_index, &cache->index, id);
    if (iter != kh_end(&cache->index)) {
        entry = kh_val(&cache->index, iter);
        if (entry->refcount++ == 0) {
            ucs_list_del(&entry->idle_link);
            --cache->stats.idle;
        }
        ++cache->stats.hits;
        goto out;
    }

    ++cache->stats.misses;
    if (cache->ops->check != NULL) {
        status = cache->ops->check(cache->ops_arg, key);
        if (status != UCS_OK) {
            goto out;
        }
    }
    uct_gpu_ipc_cache_retire_superseded(cache, &id);
    uct_gpu_ipc_cache_unmap_idle(cache, (cache->max_entries > 0) ? cache->max_entries - 1 : 0, 0);
    if (cache->stats.mapped >= cache->max_entries) {
        ucs_debug("gpu_ipc cache: all %u mappings in use, going past the limit of %u",
                  cache->stats.mapped, cache->max_entries);
    }
    status = uct_gpu_ipc_cache_insert(cache, key, &id, &entry);

out:
    if (status == UCS_OK) {
        *entry_p  = entry;
        *mapped_p = entry->mapped;
    }
    pthread_mutex_unlock(&cache->lock);
    return status;
}

void uct_gpu_ipc_cache_hold(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry)
{
    pthread_mutex_lock(&cache->lock);
    /* Referenced already, so not idle: nothing to take off the LRU list. */
    ucs_assert(entry->refcount > 0);
    ++entry->refcount;
    pthread_mutex_unlock(&cache->lock);
}

void uct_gpu_ipc_cache_put(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_entry_t *entry)
{
    pthread_mutex_lock(&cache->lock);
    ucs_assert(entry->refcount > 0);
    if (--entry->refcount == 0) {
        /* Most recently used at the tail; eviction takes the head. */
        ucs_list_add_tail(&cache->idle, &entry->idle_link);
        ++cache->stats.idle;
        if (!entry->indexed) {
            uct_gpu_ipc_cache_unmap(cache, entry);
        } else {
            /* A put can bring the cache back under a limit it went past. */
            uct_gpu_ipc_cache_unmap_idle(cache, cache->max_entries, 0);
        }
    }
    pthread_mutex_unlock(&cache->lock);
}

void uct_gpu_ipc_cache_get_stats(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_stats_t *stats)
{
    pthread_mutex_lock(&cache->lock);
    *stats = cache->stats;
    pthread_mutex_unlock(&cache->lock);
}
