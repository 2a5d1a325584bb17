/*
 * The device address space and what is mapped in it.
 *
 * One range is reserved PROT_NONE at cuInit and stays so: the stand-in never
 * maps anything the CPU could touch at a device address.  Device addresses
 * are handed out from it first-fit, lowest address first, so that freeing an
 * allocation and allocating the same size again returns the same address
 * (with a new buffer id), as a GPU's allocator often does; tests use this to
 * model a remote buffer that was freed and reused.
 *
 * The bytes behind an address live in a memfd; the library reaches them
 * through a private alias mapping.  The mapping table, sorted by address,
 * resolves any device pointer (interior ones included) to its mapping.
 */
#define _GNU_SOURCE
#include "cuda_standin.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct cuda_standin_range {
    uintptr_t base;
    size_t size;
} cuda_standin_range_t;

static uintptr_t cuda_standin_va_base;
static size_t cuda_standin_va_size;

/* Free parts of the device range, sorted by address, never adjacent. */
static cuda_standin_range_t *cuda_standin_free;
static size_t cuda_standin_free_count, cuda_standin_free_cap;

/* Everything handed out, sorted by base; ranges never overlap. */
static cuda_standin_map_t **cuda_standin_maps;
static size_t cuda_standin_map_num, cuda_standin_map_cap;

static uint32_t cuda_standin_id_counter;

/* The array, with room for one more than `count` elements (moved if it
 * had to grow), or NULL when out of memory (the array stays as it was). */
static void *cuda_standin_array_grow(void *array, size_t *cap, size_t count, size_t elem_size)
{
    size_t new_cap;
    void *grown;

    if (count < *cap) {
        return array;
    }
    new_cap = (*cap == 0) ? 16 : (*cap * 2);
    grown   = realloc(array, new_cap * elem_size);
    if (grown != NULL) {
        *cap = new_cap;
    }
    return grown;
}

static int cuda_standin_free_grow(void)
{
    cuda_standin_range_t *grown = cuda_standin_array_grow(
            cuda_standin_free, &cuda_standin_free_cap, cuda_standin_free_count,
            sizeof(*cuda_standin_free));

    if (grown == NULL) {
        return -1;
    }
    cuda_standin_free = grown;
    return 0;
}

unsigned long long cuda_standin_next_id(void)
{
    return ((unsigned long long)cuda_standin_pid() << 32) | ++cuda_standin_id_counter;
}

/* --- The device range --- */

/*
 * Processes forked from one parent reserve the device range at the same
 * address, and would then hand out the same device addresses: a transport
 * that used a peer's address where it needed its own mapping would pass by
 * accident.  So each process starts its allocations at a pid-dependent
 * offset (up to 96 granules), as different GPUs' address spaces differ.
 */
static size_t cuda_standin_va_skew(void)
{
    return (size_t)(cuda_standin_pid() % 97) * CUDA_STANDIN_VMM_GRANULARITY;
}

static void cuda_standin_free_reset(void)
{
    size_t skew = cuda_standin_va_skew();

    cuda_standin_free_count = 0;
    if (cuda_standin_va_size == 0) {
        return;
    }
    /* The array always has room after the first reset (see vaspace_init). */
    cuda_standin_free[0].base = cuda_standin_va_base + skew;
    cuda_standin_free[0].size = cuda_standin_va_size - skew;
    cuda_standin_free_count   = 1;
}

/* 64 GiB when the system allows it; valgrind, for one, caps a single
 * mapping at 32 GiB, so smaller sizes are tried down to 1 GiB. */
CUresult cuda_standin_vaspace_init(void)
{
    const size_t align = CUDA_STANDIN_VMM_GRANULARITY;
    size_t size;
    void *p;

    if (cuda_standin_va_size != 0) {
        return CUDA_SUCCESS;
    }
    if (cuda_standin_free_grow() != 0) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size = CUDA_STANDIN_GIB(64); size >= CUDA_STANDIN_GIB(1); size /= 2) {
        p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            /* The slack before the aligned start stays reserved, unused. */
            cuda_standin_va_base = CUDA_STANDIN_ALIGN_UP((uintptr_t)p, align);
            cuda_standin_va_size = size;
            cuda_standin_free_reset();
            cuda_standin_note("device range 0x%lx..0x%lx", (unsigned long)cuda_standin_va_base,
                              (unsigned long)(cuda_standin_va_base + size));
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "cannot reserve a device address range");
}

int cuda_standin_vaspace_contains(uintptr_t addr)
{
    return (addr >= cuda_standin_va_base) && (addr - cuda_standin_va_base < cuda_standin_va_size);
}

static int cuda_standin_free_insert_at(size_t index, uintptr_t base, size_t size)
{
    if (cuda_standin_free_grow() != 0) {
        return -1;
    }
    memmove(&cuda_standin_free[index + 1], &cuda_standin_free[index],
            (cuda_standin_free_count - index) * sizeof(*cuda_standin_free));
    cuda_standin_free[index].base = base;
    cuda_standin_free[index].size = size;
    ++cuda_standin_free_count;
    return 0;
}

static void cuda_standin_free_remove_at(size_t index)
{
    --cuda_standin_free_count;
    memmove(&cuda_standin_free[index], &cuda_standin_free[index + 1],
            (cuda_standin_free_count - index) * sizeof(*cuda_standin_free));
}

/* Takes [start, start + size) out of free range `index`, which holds it. */
static CUresult cuda_standin_free_carve(size_t index, uintptr_t start, size_t size)
{
    cuda_standin_range_t *r = &cuda_standin_free[index];
    uintptr_t end           = r->base + r->size;
    size_t left             = start - r->base;
    size_t right            = end - (start + size);

    if ((left > 0) && (right > 0)) {
        if (cuda_standin_free_insert_at(index + 1, start + size, right) != 0) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        cuda_standin_free[index].size = left;
    } else if (left > 0) {
        r->size = left;
    } else if (right > 0) {
        r->base = start + size;
        r->size = right;
    } else {
        cuda_standin_free_remove_at(index);
    }
    return CUDA_SUCCESS;
}

static int cuda_standin_free_fits(const cuda_standin_range_t *r, uintptr_t start, size_t size)
{
    return (start >= r->base) && (start - r->base <= r->size) &&
           (size <= r->size - (start - r->base));
}

CUresult cuda_standin_va_alloc(size_t size, size_t align, uintptr_t hint, uintptr_t *addr_p)
{
    uintptr_t start;
    size_t i;

    if ((hint != 0) && CUDA_STANDIN_IS_ALIGNED(hint, align)) {
        for (i = 0; i < cuda_standin_free_count; ++i) {
            if (cuda_standin_free_fits(&cuda_standin_free[i], hint, size)) {
                *addr_p = hint;
                return cuda_standin_free_carve(i, hint, size);
            }
        }
    }
    for (i = 0; i < cuda_standin_free_count; ++i) {
        start = CUDA_STANDIN_ALIGN_UP(cuda_standin_free[i].base, align);
        if (cuda_standin_free_fits(&cuda_standin_free[i], start, size)) {
            *addr_p = start;
            return cuda_standin_free_carve(i, start, size);
        }
    }
    return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY,
                              "device address range exhausted (%zu bytes)", size);
}

void cuda_standin_va_free(uintptr_t addr, size_t size)
{
    size_t i = 0;

    while ((i < cuda_standin_free_count) && (cuda_standin_free[i].base < addr)) {
        ++i;
    }
    if (cuda_standin_free_insert_at(i, addr, size) != 0) {
        return; /* out of memory: the range is lost, nothing else breaks */
    }
    if ((i + 1 < cuda_standin_free_count) && (addr + size == cuda_standin_free[i + 1].base)) {
        cuda_standin_free[i].size += cuda_standin_free[i + 1].size;
        cuda_standin_free_remove_at(i + 1);
    }
    if ((i > 0) && (cuda_standin_free[i - 1].base + cuda_standin_free[i - 1].size == addr)) {
        cuda_standin_free[i - 1].size += cuda_standin_free[i].size;
        cuda_standin_free_remove_at(i);
    }
}

/* --- Backing memory --- */

CUresult cuda_standin_backing_create(unsigned long long id, const char *suffix, size_t size,
                                     int *fd_p)
{
    char name[96];
    int fd;

    /* cuIpcOpenMemHandle recognizes an allocation by this name. */
    snprintf(name, sizeof(name), "cuda_standin.%llu%s", id, suffix);
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "memfd_create: %m");
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "ftruncate %zu: %m", size);
    }
    *fd_p = fd;
    return CUDA_SUCCESS;
}

CUresult cuda_standin_backing_map(int fd, size_t size, char **alias_p)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    if (p == MAP_FAILED) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "mmap of %zu bytes: %m", size);
    }
    *alias_p = p;
    return CUDA_SUCCESS;
}

/* --- The mapping table --- */

/* Index of the first mapping whose base is above addr. */
static size_t cuda_standin_map_upper(uintptr_t addr)
{
    size_t lo = 0, hi = cuda_standin_map_num, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (cuda_standin_maps[mid]->base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

cuda_standin_map_t *cuda_standin_map_new(cuda_standin_map_kind_t kind)
{
    cuda_standin_map_t *map = calloc(1, sizeof(*map));

    if (map != NULL) {
        map->kind   = kind;
        map->memfd  = -1;
        map->device = 0;
    }
    return map;
}

CUresult cuda_standin_map_insert(cuda_standin_map_t *map)
{
    cuda_standin_map_t **grown = cuda_standin_array_grow(cuda_standin_maps, &cuda_standin_map_cap,
                                                         cuda_standin_map_num,
                                                         sizeof(cuda_standin_map_t *));
    size_t index;

    if (grown == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    cuda_standin_maps = grown;
    index             = cuda_standin_map_upper(map->base);
    memmove(&cuda_standin_maps[index + 1], &cuda_standin_maps[index],
            (cuda_standin_map_num - index) * sizeof(cuda_standin_map_t *));
    cuda_standin_maps[index] = map;
    ++cuda_standin_map_num;
    return CUDA_SUCCESS;
}

static void cuda_standin_map_remove(cuda_standin_map_t *map)
{
    size_t index = cuda_standin_map_upper(map->base);

    if ((index == 0) || (cuda_standin_maps[index - 1] != map)) {
        return; /* never inserted: an allocation that failed half way */
    }
    --cuda_standin_map_num;
    memmove(&cuda_standin_maps[index - 1], &cuda_standin_maps[index],
            (cuda_standin_map_num - (index - 1)) * sizeof(cuda_standin_map_t *));
}

/* Only what this process holds; nothing it refers to elsewhere. */
static void cuda_standin_map_drop_local(cuda_standin_map_t *map)
{
    if (map->alias != NULL) {
        munmap(map->alias, map->alias_size);
    }
    if (map->memfd >= 0) {
        close(map->memfd);
    }
    free(map);
}

void cuda_standin_map_destroy(cuda_standin_map_t *map)
{
    cuda_standin_map_remove(map);
    if (map->va_size != 0) {
        cuda_standin_va_free(map->base, map->va_size);
    }
    if (map->charged != 0) {
        cuda_standin_device_uncharge(map->device, map->charged);
    }
    if (map->phys != NULL) {
        cuda_standin_vmm_phys_put(map->phys);
    }
    if (map->pool != NULL) {
        cuda_standin_mem_pool_release(map->pool);
    }
    cuda_standin_map_drop_local(map);
}

cuda_standin_map_t *cuda_standin_map_find(uintptr_t addr)
{
    size_t index = cuda_standin_map_upper(addr);
    cuda_standin_map_t *map;

    if (index == 0) {
        return NULL;
    }
    map = cuda_standin_maps[index - 1];
    return (addr - map->base < map->size) ? map : NULL;
}

cuda_standin_map_t *cuda_standin_map_first_in(uintptr_t addr, size_t size)
{
    size_t index               = cuda_standin_map_upper(addr);
    cuda_standin_map_t *before = (index > 0) ? cuda_standin_maps[index - 1] : NULL;
    cuda_standin_map_t *after  = (index < cuda_standin_map_num) ? cuda_standin_maps[index] : NULL;

    if ((before != NULL) && (addr - before->base < before->size)) {
        return before;
    }
    if ((after != NULL) && (after->base - addr < size)) {
        return after;
    }
    return NULL;
}

size_t cuda_standin_map_count(void)
{
    return cuda_standin_map_num;
}

cuda_standin_map_t *cuda_standin_map_at(size_t index)
{
    return cuda_standin_maps[index];
}

/* Fork child: the parent's mappings and fds are dropped from this process
 * (the parent's own stay intact); the device range itself is kept and
 * reused by the next cuInit, so parent addresses still fault here. */
void cuda_standin_vaspace_forget(void)
{
    size_t i;

    for (i = 0; i < cuda_standin_map_num; ++i) {
        cuda_standin_map_drop_local(cuda_standin_maps[i]);
    }
    cuda_standin_map_num    = 0;
    cuda_standin_id_counter = 0;
    cuda_standin_free_reset();
}
