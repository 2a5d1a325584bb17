/*
 * Unit test of gpu_ipc's remote key format and mapping cache policy, with
 * counting stand-ins for the driver's map and unmap (no GPU, no CUDA).
 *   test_gpu_ipc_cache
 * Prints each rule it checks; exits non-zero at the first wrong value.
 */
#include "gpu_ipc_cache.h"
#include "gpu_ipc_key.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                  \
    do {                                           \
        printf("test_gpu_ipc_cache: FAIL: ");      \
        printf(__VA_ARGS__);                       \
        printf(" (%s:%d)\n", __FILE__, __LINE__);  \
        exit(1);                                   \
    } while (0)

#define CHECK_EQ(_what, _expected, _got)                                                 \
    do {                                                                                 \
        unsigned long long _e = (unsigned long long)(_expected);                         \
        unsigned long long _g = (unsigned long long)(_got);                              \
        if (_e != _g) {                                                                  \
            FAIL("%s: expected %llu (0x%llx), got %llu (0x%llx)", _what, _e, _e, _g, _g); \
        }                                                                                \
    } while (0)

#define PASS(...)                      \
    do {                               \
        printf("ok: ");                \
        printf(__VA_ARGS__);           \
        printf("\n");                  \
    } while (0)

/* ---- the stand-in driver ---- */

#define FAKE_MAX_MAPPINGS 64

typedef struct fake_driver {
    unsigned maps, unmaps;
    uint64_t next_addr;
    ucs_status_t fail_with; /* UCS_OK: map succeeds */
    uint64_t mapped[FAKE_MAX_MAPPINGS];   /* live mappings */
    uint64_t buffer_id[FAKE_MAX_MAPPINGS];
    uint64_t owner[FAKE_MAX_MAPPINGS];    /* pid and start time */
    unsigned live;
} fake_driver_t;

static uint64_t fake_owner(const uct_gpu_ipc_key_t *key)
{
    return ((uint64_t)key->owner_pid << 40) ^ key->owner_start;
}

static ucs_status_t fake_map(void *arg, const uct_gpu_ipc_key_t *key, uint64_t *mapped_p,
                             void **map_ctx_p)
{
    fake_driver_t *drv = arg;
    unsigned i;

    if (drv->fail_with != UCS_OK) {
        return drv->fail_with;
    }
    if (drv->live == FAKE_MAX_MAPPINGS) {
        FAIL("more than %d live mappings", FAKE_MAX_MAPPINGS);
    }
    /* The cache maps each allocation once (drivers before CUDA 11 refuse to
     * open a legacy handle that is open already). */
    for (i = 0; i < drv->live; ++i) {
        if ((drv->buffer_id[i] == key->buffer_id) && (drv->owner[i] == fake_owner(key))) {
            FAIL("pid %u buffer id %llu mapped twice", key->owner_pid,
                 (unsigned long long)key->buffer_id);
        }
    }
    ++drv->maps;
    drv->next_addr += 0x100000;
    drv->mapped[drv->live]    = drv->next_addr;
    drv->buffer_id[drv->live] = key->buffer_id;
    drv->owner[drv->live]     = fake_owner(key);
    ++drv->live;
    *mapped_p  = drv->next_addr;
    *map_ctx_p = (void *)(uintptr_t)(drv->next_addr ^ 0x5a5a);
    return UCS_OK;
}

static void fake_unmap(void *arg, const uct_gpu_ipc_key_t *key, uint64_t mapped, void *map_ctx)
{
    fake_driver_t *drv = arg;
    unsigned i;

    if (map_ctx != (void *)(uintptr_t)(mapped ^ 0x5a5a)) {
        FAIL("unmap of 0x%llx with another mapping's context", (unsigned long long)mapped);
    }
    for (i = 0; i < drv->live; ++i) {
        if (drv->mapped[i] == mapped) {
            if (drv->buffer_id[i] != key->buffer_id) {
                FAIL("unmap of 0x%llx with buffer id %llu, mapped with %llu",
                     (unsigned long long)mapped, (unsigned long long)key->buffer_id,
                     (unsigned long long)drv->buffer_id[i]);
            }
            drv->mapped[i]    = drv->mapped[drv->live - 1];
            drv->buffer_id[i] = drv->buffer_id[drv->live - 1];
            drv->owner[i]     = drv->owner[drv->live - 1];
            --drv->live;
            ++drv->unmaps;
            return;
        }
    }
    FAIL("unmap of 0x%llx, which is not mapped", (unsigned long long)mapped);
}

static int fake_is_mapped(const fake_driver_t *drv, uint64_t mapped)
{
    unsigned i;

    for (i = 0; i < drv->live; ++i) {
        if (drv->mapped[i] == mapped) {
            return 1;
        }
    }
    return 0;
}

static const uct_gpu_ipc_cache_ops_t fake_ops = {.map = fake_map, .unmap = fake_unmap};

static uct_gpu_ipc_key_t make_key(uint32_t pid, uint64_t start, uint64_t base, uint64_t length,
                                  uint64_t buffer_id)
{
    uct_gpu_ipc_key_t key;

    memset(&key, 0, sizeof(key));
    key.handle_type = UCT_GPU_IPC_HANDLE_LEGACY;
    key.owner_pid   = pid;
    key.owner_start = start;
    key.vmm_fd      = -1;
    key.base        = base;
    key.length      = length;
    key.buffer_id   = buffer_id;
    memset(key.legacy_handle, (int)buffer_id, sizeof(key.legacy_handle));
    return key;
}

typedef struct ref {
    uct_gpu_ipc_cache_entry_t *entry;
    uint64_t mapped;
} ref_t;

static ref_t get(uct_gpu_ipc_cache_t *cache, const uct_gpu_ipc_key_t *key)
{
    ucs_status_t status;
    ref_t ref;

    status = uct_gpu_ipc_cache_get(cache, key, &ref.entry, &ref.mapped);
    if (status != UCS_OK) {
        FAIL("get of pid %u 0x%llx bufid %llu: %s", key->owner_pid,
             (unsigned long long)key->base, (unsigned long long)key->buffer_id,
             ucs_status_string(status));
    }
    return ref;
}

static void setup(uct_gpu_ipc_cache_t *cache, fake_driver_t *drv, unsigned limit)
{
    memset(drv, 0, sizeof(*drv));
    drv->next_addr = 0x7f0000000000ull;
    uct_gpu_ipc_cache_init(cache, &fake_ops, drv, limit);
}

static void stats_of(uct_gpu_ipc_cache_t *cache, uct_gpu_ipc_cache_stats_t *stats)
{
    uct_gpu_ipc_cache_get_stats(cache, stats);
}

/* ---- cache policy ---- */

static void test_hit_and_miss(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    uct_gpu_ipc_key_t a = make_key(100, 7, 0x10000000, 0x200000, 1);
    uct_gpu_ipc_key_t b = make_key(100, 7, 0x20000000, 0x200000, 2);
    uct_gpu_ipc_key_t c = make_key(200, 9, 0x10000000, 0x200000, 1); /* other owner, same range */
    ref_t ra, ra2, rb, rc;

    setup(&cache, &drv, 16);
    ra = get(&cache, &a);
    CHECK_EQ("maps after first get", 1, drv.maps);
    uct_gpu_ipc_cache_put(&cache, ra.entry);
    CHECK_EQ("unmaps after put (kept cached)", 0, drv.unmaps);
    ra2 = get(&cache, &a);
    CHECK_EQ("maps after second get of the same key", 1, drv.maps);
    CHECK_EQ("same mapping on a hit", ra.mapped, ra2.mapped);
    ra = get(&cache, &a);
    CHECK_EQ("a third reference shares the mapping", ra2.mapped, ra.mapped);
    PASS("hit: a key seen before reuses its mapping, referenced or idle");

    rb = get(&cache, &b);
    rc = get(&cache, &c);
    CHECK_EQ("maps after two other allocations", 3, drv.maps);
    CHECK_EQ("first mapping still live", 1, fake_is_mapped(&drv, ra.mapped));
    stats_of(&cache, &st);
    CHECK_EQ("hits", 2, st.hits);
    CHECK_EQ("misses", 3, st.misses);
    CHECK_EQ("indexed", 3, st.indexed);
    PASS("miss: another allocation of the owner, or another owner at the same address, "
         "maps anew and leaves the others");

    uct_gpu_ipc_cache_put(&cache, ra.entry);
    uct_gpu_ipc_cache_put(&cache, ra2.entry);
    uct_gpu_ipc_cache_put(&cache, rb.entry);
    uct_gpu_ipc_cache_put(&cache, rc.entry);
    uct_gpu_ipc_cache_purge(&cache);
    CHECK_EQ("live mappings after purge", 0, drv.live);
    PASS("purge unmaps every idle entry");
    uct_gpu_ipc_cache_cleanup(&cache);
}

static void test_stale_buffer_id(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    uct_gpu_ipc_key_t old_key = make_key(100, 7, 0x10000000, 0x200000, 1);
    uct_gpu_ipc_key_t new_key = make_key(100, 7, 0x10000000, 0x200000, 2);
    ref_t r_old, r_new, r;

    setup(&cache, &drv, 16);
    r_old = get(&cache, &old_key);
    r_new = get(&cache, &new_key);
    CHECK_EQ("maps: the reallocation is mapped anew", 2, drv.maps);
    if (r_new.mapped == r_old.mapped) {
        FAIL("new buffer id returned the old mapping 0x%llx", (unsigned long long)r_old.mapped);
    }
    CHECK_EQ("stale but referenced mapping stays until released", 1,
             fake_is_mapped(&drv, r_old.mapped));
    stats_of(&cache, &st);
    CHECK_EQ("stale count", 1, st.stale);
    CHECK_EQ("indexed (stale one left the index)", 1, st.indexed);
    CHECK_EQ("mapped (stale one still mapped)", 2, st.mapped);
    uct_gpu_ipc_cache_put(&cache, r_old.entry);
    CHECK_EQ("stale mapping unmapped at its last release", 0, fake_is_mapped(&drv, r_old.mapped));
    r = get(&cache, &new_key);
    CHECK_EQ("the new key still hits", r_new.mapped, r.mapped);
    PASS("stale buffer id at the same address: never reused, unmapped when released");

    /* An idle stale entry goes at once. */
    uct_gpu_ipc_cache_put(&cache, r.entry);
    uct_gpu_ipc_cache_put(&cache, r_new.entry);
    old_key = make_key(100, 7, 0x10000000, 0x200000, 3);
    r       = get(&cache, &old_key);
    CHECK_EQ("idle stale mapping unmapped immediately", 0, fake_is_mapped(&drv, r_new.mapped));
    uct_gpu_ipc_cache_put(&cache, r.entry);
    PASS("stale idle entry is unmapped when the newer key arrives");

    /* A new process with a recycled pid: everything of the old one is stale,
     * even a key identical in every other field. */
    r_old   = get(&cache, &old_key);
    new_key = make_key(100, 8, 0x10000000, 0x200000, 3);
    r_new   = get(&cache, &new_key);
    if (r_new.mapped == r_old.mapped) {
        FAIL("recycled pid returned the dead process's mapping");
    }
    uct_gpu_ipc_cache_put(&cache, r_old.entry);
    CHECK_EQ("dead process's mapping unmapped", 0, fake_is_mapped(&drv, r_old.mapped));
    uct_gpu_ipc_cache_put(&cache, r_new.entry);
    PASS("recycled pid (other start time): the old process's mappings are stale");
    uct_gpu_ipc_cache_cleanup(&cache);
}

/* A context reset: the entries mapped in it leave the index (the next get
 * maps again), an unused one is unmapped at once, a used one at its last
 * release; entries of other contexts stay. */
static void test_retire_ctx(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    uct_gpu_ipc_key_t a = make_key(100, 7, 0x10000000, 0x200000, 1);
    uct_gpu_ipc_key_t b = make_key(100, 7, 0x20000000, 0x200000, 2);
    uct_gpu_ipc_key_t c = make_key(101, 9, 0x10000000, 0x200000, 3);
    ref_t ra, rb, rc, r;

    setup(&cache, &drv, 16);
    ra = get(&cache, &a);
    rb = get(&cache, &b);
    rc = get(&cache, &c);
    uct_gpu_ipc_cache_put(&cache, ra.entry); /* idle */
    /* the fake driver gives every mapping a context of its own */
    CHECK_EQ("entries retired with a's context", 1,
             uct_gpu_ipc_cache_retire_ctx(&cache, (void *)(uintptr_t)(ra.mapped ^ 0x5a5a)));
    CHECK_EQ("a's idle mapping unmapped at once", 0, fake_is_mapped(&drv, ra.mapped));
    CHECK_EQ("entries retired with b's context", 1,
             uct_gpu_ipc_cache_retire_ctx(&cache, (void *)(uintptr_t)(rb.mapped ^ 0x5a5a)));
    CHECK_EQ("b's mapping kept while referenced", 1, fake_is_mapped(&drv, rb.mapped));
    stats_of(&cache, &st);
    CHECK_EQ("indexed: c only", 1, st.indexed);
    uct_gpu_ipc_cache_put(&cache, rb.entry);
    CHECK_EQ("b's retired mapping unmapped at its last release", 0,
             fake_is_mapped(&drv, rb.mapped));
    r = get(&cache, &b);
    CHECK_EQ("b mapped again after the reset", 4, drv.maps);
    CHECK_EQ("c untouched", 1, fake_is_mapped(&drv, rc.mapped));
    CHECK_EQ("a context nothing was mapped in", 0,
             uct_gpu_ipc_cache_retire_ctx(&cache, (void *)(uintptr_t)0x1234));
    uct_gpu_ipc_cache_put(&cache, r.entry);
    uct_gpu_ipc_cache_put(&cache, rc.entry);
    PASS("a context's reset retires exactly its mappings: idle ones now, used ones when released");
    uct_gpu_ipc_cache_cleanup(&cache);
}

static void test_overlap(void)
{
    uct_gpu_ipc_cache_t cache;
    fake_driver_t drv;
    uct_gpu_ipc_key_t a     = make_key(100, 7, 0x1000000, 0x200000, 5);
    uct_gpu_ipc_key_t adj   = make_key(100, 7, 0x1200000, 0x100000, 6); /* right after a */
    uct_gpu_ipc_key_t over  = make_key(100, 7, 0x1100000, 0x200000, 7); /* overlaps both */
    uct_gpu_ipc_key_t other = make_key(101, 7, 0x1100000, 0x200000, 7); /* other owner */
    ref_t ra, radj, rover, rother;

    setup(&cache, &drv, 16);
    ra   = get(&cache, &a);
    radj = get(&cache, &adj);
    uct_gpu_ipc_cache_put(&cache, ra.entry);
    uct_gpu_ipc_cache_put(&cache, radj.entry);
    CHECK_EQ("adjacent allocations coexist", 2, drv.live);
    rother = get(&cache, &other);
    CHECK_EQ("another owner's overlapping range does not retire ours", 3, drv.live);
    rover = get(&cache, &over);
    CHECK_EQ("first overlapped entry unmapped", 0, fake_is_mapped(&drv, ra.mapped));
    CHECK_EQ("second overlapped entry unmapped", 0, fake_is_mapped(&drv, radj.mapped));
    CHECK_EQ("other owner's entry kept", 1, fake_is_mapped(&drv, rother.mapped));
    ra = get(&cache, &over);
    CHECK_EQ("the overlapping key hits its own mapping", rover.mapped, ra.mapped);
    uct_gpu_ipc_cache_put(&cache, ra.entry);
    uct_gpu_ipc_cache_put(&cache, rover.entry);
    uct_gpu_ipc_cache_put(&cache, rother.entry);
    uct_gpu_ipc_cache_cleanup(&cache);
    CHECK_EQ("nothing mapped after cleanup", 0, drv.live);
    PASS("overlapping range with another buffer id retires every entry it overlaps, only "
         "for the same owner");
}

static void test_lru_bound(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    uct_gpu_ipc_key_t k[5];
    ref_t r[5];
    int i;

    for (i = 0; i < 5; ++i) {
        k[i] = make_key(100, 7, 0x10000000ull * (i + 1), 0x100000, 10 + i);
    }
    setup(&cache, &drv, 3);
    for (i = 0; i < 3; ++i) {
        r[i] = get(&cache, &k[i]);
    }
    /* Released in the order 1, 0, 2; then 1 used again: LRU is 0. */
    uct_gpu_ipc_cache_put(&cache, r[1].entry);
    uct_gpu_ipc_cache_put(&cache, r[0].entry);
    uct_gpu_ipc_cache_put(&cache, r[2].entry);
    r[1] = get(&cache, &k[1]);
    uct_gpu_ipc_cache_put(&cache, r[1].entry);
    r[3] = get(&cache, &k[3]);
    CHECK_EQ("mappings at the bound", 3, drv.live);
    CHECK_EQ("least recently used (entry 0) evicted", 0, fake_is_mapped(&drv, r[0].mapped));
    CHECK_EQ("entry 2 kept", 1, fake_is_mapped(&drv, r[2].mapped));
    CHECK_EQ("entry 1 kept (used again)", 1, fake_is_mapped(&drv, r[1].mapped));
    r[4] = get(&cache, &k[4]);
    CHECK_EQ("next victim is entry 2", 0, fake_is_mapped(&drv, r[2].mapped));
    stats_of(&cache, &st);
    CHECK_EQ("evictions", 2, st.evictions);
    CHECK_EQ("mapped", 3, st.mapped);
    PASS("LRU eviction at the bound of 3: oldest unreferenced first, a hit refreshes");

    /* Entries 3 and 4 are referenced, 1 is idle: two more referenced ones
     * leave only referenced entries, and the cache goes past its bound. */
    r[0] = get(&cache, &k[0]);
    CHECK_EQ("idle entry 1 evicted for a new one", 0, fake_is_mapped(&drv, r[1].mapped));
    r[2] = get(&cache, &k[2]);
    stats_of(&cache, &st);
    CHECK_EQ("past the bound when everything is referenced", 4, st.mapped);
    for (i = 0; i < 5; ++i) {
        if ((i != 1) && !fake_is_mapped(&drv, r[i].mapped)) {
            FAIL("referenced entry %d was unmapped", i);
        }
    }
    PASS("referenced entries are never evicted; the cache grows past the bound instead");

    uct_gpu_ipc_cache_put(&cache, r[3].entry);
    stats_of(&cache, &st);
    CHECK_EQ("a release brings it back to the bound", 3, st.mapped);
    CHECK_EQ("released entry was the one evicted", 0, fake_is_mapped(&drv, r[3].mapped));
    uct_gpu_ipc_cache_put(&cache, r[4].entry);
    uct_gpu_ipc_cache_set_limit(&cache, 1);
    stats_of(&cache, &st);
    CHECK_EQ("lowering the limit evicts idle entries", 2, st.mapped);
    CHECK_EQ("referenced entry 0 still mapped", 1, fake_is_mapped(&drv, r[0].mapped));
    uct_gpu_ipc_cache_put(&cache, r[0].entry);
    uct_gpu_ipc_cache_put(&cache, r[2].entry);
    stats_of(&cache, &st);
    CHECK_EQ("at the new limit after releases", 1, st.mapped);
    uct_gpu_ipc_cache_purge(&cache);
    CHECK_EQ("nothing mapped after purge", 0, drv.live);
    PASS("going over the bound is undone as entries are released; set_limit evicts");
    uct_gpu_ipc_cache_cleanup(&cache);
}

/*
 * A copy in flight holds its own reference on the rkey's entry (what
 * gpu_ipc's endpoints do): with a bound of 1, neither a new mapping nor the
 * rkey's release may unmap the entry before the copy's put.
 */
static void test_copy_hold(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    uct_gpu_ipc_key_t a = make_key(100, 7, 0x10000000, 0x200000, 1);
    uct_gpu_ipc_key_t b = make_key(100, 7, 0x20000000, 0x200000, 2);
    ref_t ra, rb;

    setup(&cache, &drv, 1);
    ra = get(&cache, &a);
    uct_gpu_ipc_cache_hold(&cache, ra.entry); /* the copy */
    uct_gpu_ipc_cache_put(&cache, ra.entry);  /* the rkey */
    rb = get(&cache, &b);
    CHECK_EQ("held entry mapped after a new mapping at the bound", 1,
             fake_is_mapped(&drv, ra.mapped));
    stats_of(&cache, &st);
    CHECK_EQ("past the bound while the copy holds it", 2, st.mapped);
    CHECK_EQ("no eviction of a held entry", 0, st.evictions);
    uct_gpu_ipc_cache_put(&cache, ra.entry); /* the copy completes */
    CHECK_EQ("unmapped at the copy's put", 0, fake_is_mapped(&drv, ra.mapped));
    PASS("a copy's hold keeps an entry mapped past its rkey's release and an eviction, "
         "until the copy's put");

    /* Both referenced (past the bound); the rkey of the one a copy holds is
     * released: without the hold that release would unmap it. */
    ra = get(&cache, &a);
    uct_gpu_ipc_cache_hold(&cache, ra.entry);
    uct_gpu_ipc_cache_put(&cache, ra.entry);
    CHECK_EQ("held entry mapped after its rkey's release past the bound", 1,
             fake_is_mapped(&drv, ra.mapped));
    uct_gpu_ipc_cache_put(&cache, rb.entry);
    uct_gpu_ipc_cache_put(&cache, ra.entry);
    stats_of(&cache, &st);
    CHECK_EQ("back at the bound after the copy's put", 1, st.mapped);
    uct_gpu_ipc_cache_cleanup(&cache);
    CHECK_EQ("nothing mapped after cleanup", 0, drv.live);
    PASS("a release past the bound leaves a held entry; the copy's put brings the cache "
         "back to the bound");
}

/* The live owner (pid 100) started at 7; a key naming start 8 is stale. */
static ucs_status_t fake_check(void *arg, const uct_gpu_ipc_key_t *key)
{
    return (key->owner_pid == 100 && key->owner_start != 7) ? UCS_ERR_UNREACHABLE : UCS_OK;
}

static const uct_gpu_ipc_cache_ops_t checking_ops = {
    .map = fake_map, .unmap = fake_unmap, .check = fake_check};

/* A stale key is refused before it can retire the live owner's mappings as
 * superseded (a key of another incarnation of the pid supersedes them). */
static void test_stale_key_refused(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    uct_gpu_ipc_key_t live  = make_key(100, 7, 0x10000000, 0x200000, 1);
    uct_gpu_ipc_key_t stale = make_key(100, 8, 0x30000000, 0x200000, 3);
    uct_gpu_ipc_cache_entry_t *entry = NULL;
    uint64_t mapped = 0;
    ref_t r;

    memset(&drv, 0, sizeof(drv));
    drv.next_addr = 0x7f0000000000ull;
    uct_gpu_ipc_cache_init(&cache, &checking_ops, &drv, 16);
    r = get(&cache, &live);
    uct_gpu_ipc_cache_put(&cache, r.entry);
    CHECK_EQ("a stale key is refused", UCS_ERR_UNREACHABLE,
             uct_gpu_ipc_cache_get(&cache, &stale, &entry, &mapped));
    CHECK_EQ("nothing mapped for it", 1, drv.maps);
    CHECK_EQ("the live owner's idle mapping stays", 1, fake_is_mapped(&drv, r.mapped));
    stats_of(&cache, &st);
    CHECK_EQ("nothing retired as stale", 0, st.stale);
    r = get(&cache, &live);
    CHECK_EQ("the live key still hits", 1, drv.maps);
    uct_gpu_ipc_cache_put(&cache, r.entry);
    uct_gpu_ipc_cache_purge(&cache);
    uct_gpu_ipc_cache_cleanup(&cache);
    PASS("a key whose owner is not the pid's process now is refused before it retires the "
         "live owner's mappings");
}

static void test_map_failure(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    uct_gpu_ipc_cache_entry_t *entry;
    fake_driver_t drv;
    uct_gpu_ipc_key_t a = make_key(100, 7, 0x10000000, 0x200000, 1);
    ucs_status_t status;
    uint64_t mapped;
    ref_t r;

    setup(&cache, &drv, 4);
    drv.fail_with = UCS_ERR_UNREACHABLE;
    status        = uct_gpu_ipc_cache_get(&cache, &a, &entry, &mapped);
    CHECK_EQ("status of a failed map", UCS_ERR_UNREACHABLE, status);
    stats_of(&cache, &st);
    CHECK_EQ("nothing indexed after a failed map", 0, st.indexed);
    drv.fail_with = UCS_OK;
    r             = get(&cache, &a);
    CHECK_EQ("a later get maps again", 1, drv.maps);
    uct_gpu_ipc_cache_put(&cache, r.entry);
    uct_gpu_ipc_cache_cleanup(&cache);
    PASS("a failed map leaves nothing behind and is retried next time");
}

/* ---- key format ---- */

static uct_gpu_ipc_key_t good_key(void)
{
    uct_gpu_ipc_key_t key = make_key(4242, 123456, 0x7f0012340000ull, 1 << 20, 99);
    unsigned i;

    for (i = 0; i < sizeof(key.dev_uuid); ++i) {
        key.dev_uuid[i] = (uint8_t)(0xa0 + i);
    }
    return key;
}

static void expect_invalid(const void *blob, const char *what, const char *expect_word)
{
    uct_gpu_ipc_key_t key;
    char why[160] = "";

    if (uct_gpu_ipc_key_unpack(blob, &key, why, sizeof(why)) == 0) {
        FAIL("%s: accepted", what);
    }
    if ((expect_word != NULL) && (strstr(why, expect_word) == NULL)) {
        FAIL("%s: reason '%s' does not say '%s'", what, why, expect_word);
    }
}

/* A key with one field edited and a correct checksum: only that field's own
 * validation can reject it. */
static void expect_field_invalid(uct_gpu_ipc_key_t key, const char *what, const char *word)
{
    uint8_t blob[UCT_GPU_IPC_KEY_PACKED_SIZE];

    key.checksum = uct_gpu_ipc_key_checksum(&key);
    memcpy(blob, &key, sizeof(key));
    expect_invalid(blob, what, word);
}

static void test_key_format(void)
{
    uint8_t blob[UCT_GPU_IPC_KEY_PACKED_SIZE + 16], copy[sizeof(blob)];
    uct_gpu_ipc_key_t key = good_key(), out, edit;
    char why[160];
    size_t i;

    memset(blob, 0xee, sizeof(blob));
    /* pack() also completes `key` (magic, version, checksum). */
    uct_gpu_ipc_key_pack(&key, blob + 1); /* unaligned on purpose */
    if (uct_gpu_ipc_key_unpack(blob + 1, &out, why, sizeof(why)) != 0) {
        FAIL("good key rejected: %s", why);
    }
    if (memcmp(&out, &key, sizeof(key)) != 0) {
        FAIL("unpacked key differs from the packed one");
    }
    PASS("a good key (at an unaligned address) unpacks to the same fields");

    for (i = 0; i < UCT_GPU_IPC_KEY_PACKED_SIZE; ++i) {
        memcpy(copy, blob + 1, UCT_GPU_IPC_KEY_PACKED_SIZE);
        copy[i] ^= 0x5a;
        if (uct_gpu_ipc_key_unpack(copy, &out, why, sizeof(why)) == 0) {
            FAIL("key with byte %zu corrupted accepted", i);
        }
    }
    PASS("every one of the %zu bytes, corrupted, is rejected", (size_t)UCT_GPU_IPC_KEY_PACKED_SIZE);

    edit       = key;
    edit.magic = 0x12345678;
    expect_field_invalid(edit, "bad magic", "magic");
    edit         = key;
    edit.version = UCT_GPU_IPC_KEY_VERSION + 1;
    expect_field_invalid(edit, "other version", "version");
    edit             = key;
    edit.handle_type = UCT_GPU_IPC_HANDLE_LAST;
    expect_field_invalid(edit, "unknown handle type", "handle type");
    edit        = key;
    edit.length = 0;
    expect_field_invalid(edit, "zero length", "range");
    edit        = key;
    edit.base   = UINT64_MAX - 10;
    expect_field_invalid(edit, "range wrapping around", "range");
    edit           = key;
    edit.owner_pid = 0;
    expect_field_invalid(edit, "owner pid 0", "owner");
    edit             = key;
    edit.handle_type = UCT_GPU_IPC_HANDLE_VMM_FD;
    edit.vmm_fd      = -1;
    expect_field_invalid(edit, "VMM key without fd", "fd");
    PASS("each field's own check (magic, version, handle type, range, owner, VMM fd) "
         "rejects a bad value even with a correct checksum");

    edit             = key;
    edit.handle_type = UCT_GPU_IPC_HANDLE_NONE;
    edit.length      = 0;
    uct_gpu_ipc_key_pack(&edit, copy);
    if (uct_gpu_ipc_key_unpack(copy, &out, why, sizeof(why)) != 0) {
        FAIL("NONE key without a range rejected: %s", why);
    }
    PASS("a NONE key (nothing exported) needs no range");

    memset(copy, 0, sizeof(copy));
    memcpy(copy, blob + 1, UCT_GPU_IPC_KEY_PACKED_SIZE / 2);
    expect_invalid(copy, "truncated key (second half zero)", "checksum");
    memset(copy, 0, sizeof(copy));
    expect_invalid(copy, "all-zero blob", "magic");
    for (i = 0; i < sizeof(copy); ++i) {
        copy[i] = (uint8_t)(i * 37 + 11);
    }
    expect_invalid(copy, "patterned bytes", "magic");
    memset(copy, 0, sizeof(copy));
    snprintf((char *)copy, sizeof(copy), "cuda_ipc key from another transport");
    expect_invalid(copy, "another transport's key", "magic");
    PASS("truncated and foreign blobs are rejected with a reason");
}

#define THREADS_N       4
#define THREADS_KEYS    8
#define THREADS_ROUNDS  20000

typedef struct thread_arg {
    uct_gpu_ipc_cache_t *cache;
    unsigned seed;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *arg = p;
    uct_gpu_ipc_key_t key;
    ref_t held[2];
    int i, j;

    for (i = 0; i < THREADS_ROUNDS; ++i) {
        for (j = 0; j < 2; ++j) {
            int n = rand_r(&arg->seed) % THREADS_KEYS;

            key     = make_key(100, 7, 0x10000000ull * (n + 1), 0x100000, 1 + n);
            held[j] = get(arg->cache, &key);
            if (held[j].mapped == 0) {
                FAIL("thread got a null mapping");
            }
        }
        uct_gpu_ipc_cache_put(arg->cache, held[1].entry);
        uct_gpu_ipc_cache_put(arg->cache, held[0].entry);
    }
    return NULL;
}

static void test_threads(void)
{
    uct_gpu_ipc_cache_t cache;
    uct_gpu_ipc_cache_stats_t st;
    fake_driver_t drv;
    pthread_t threads[THREADS_N];
    thread_arg_t args[THREADS_N];
    int i;

    setup(&cache, &drv, 4);
    for (i = 0; i < THREADS_N; ++i) {
        args[i].cache = &cache;
        args[i].seed  = 1234 + i;
        pthread_create(&threads[i], NULL, thread_main, &args[i]);
    }
    for (i = 0; i < THREADS_N; ++i) {
        pthread_join(threads[i], NULL);
    }
    stats_of(&cache, &st);
    CHECK_EQ("all entries idle after the threads", st.mapped, st.idle);
    CHECK_EQ("within the bound once idle", 1, st.mapped <= 4);
    CHECK_EQ("hits + misses", (unsigned long)THREADS_N * THREADS_ROUNDS * 2, st.hits + st.misses);
    uct_gpu_ipc_cache_cleanup(&cache);
    CHECK_EQ("maps == unmaps", drv.maps, drv.unmaps);
    PASS("%d threads x %d rounds on %d allocations with a bound of 4: no allocation mapped "
         "twice, counts consistent (%lu hits, %lu misses, %lu evictions)",
         THREADS_N, THREADS_ROUNDS, THREADS_KEYS, st.hits, st.misses, st.evictions);
}

int main(void)
{
    test_key_format();
    test_hit_and_miss();
    test_stale_buffer_id();
    test_retire_ctx();
    test_overlap();
    test_lru_bound();
    test_copy_hold();
    test_stale_key_refused();
    test_map_failure();
    test_threads();
    printf("test_gpu_ipc_cache: all checks passed\n");
    return 0;
}
