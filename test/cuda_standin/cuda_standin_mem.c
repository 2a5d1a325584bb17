/*
 * Allocation: cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, the
 * stream-ordered cuMemAllocAsync family and their memory pools, cuMemFree,
 * cuMemGetInfo.
 *
 * The allocation entry points UCX hooks are defined here under the name
 * cuda_standin_patchable_<api>; cuda_standin_entry.c exports them behind
 * patchable stubs.
 */
#include "cuda_standin.h"

#include <stdio.h>
#include <string.h>

#define CUDA_STANDIN_POOL_MAGIC 0x4c4f4f50u /* "POOL" */

struct CUmemPoolHandle_st {
    uint32_t magic;
    int device;
    int is_default;
    int destroyed;
    size_t outstanding; /* allocations from it not yet freed */
    CUmemPoolProps props;
    struct CUmemPoolHandle_st *next;
};

static struct CUmemPoolHandle_st cuda_standin_default_pools[CUDA_STANDIN_MAX_DEVICES];
/* Pools made with cuMemPoolCreate and not destroyed. */
static struct CUmemPoolHandle_st *cuda_standin_pools;

/* cuMemAllocPitch rows start on this boundary, as on current GPUs. */
#define CUDA_STANDIN_PITCH_ALIGN 512

/* --- Allocating device memory --- */

typedef struct cuda_standin_alloc_args {
    cuda_standin_map_kind_t kind;
    size_t size;
    int device;
    CUcontext ctx;
    struct CUmemPoolHandle_st *pool;
} cuda_standin_alloc_args_t;

static const char *cuda_standin_alloc_suffix(cuda_standin_map_kind_t kind)
{
    switch (kind) {
    case CUDA_STANDIN_MAP_POOL:
        return ".pool";
    case CUDA_STANDIN_MAP_MANAGED:
        return ".managed";
    default:
        return ""; /* exactly "cuda_standin.<id>": legacy-IPC capable */
    }
}

/* Backing memory and its alias; managed memory is the alias itself, a
 * mapping the CPU may use, outside the device range. */
static CUresult cuda_standin_alloc_back(cuda_standin_map_t *map, size_t rounded)
{
    CUresult status;

    status = cuda_standin_backing_create(map->buffer_id, cuda_standin_alloc_suffix(map->kind),
                                         rounded, &map->memfd);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = cuda_standin_backing_map(map->memfd, rounded, &map->alias);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    map->alias_size = rounded;
    if (map->kind == CUDA_STANDIN_MAP_MANAGED) {
        map->base = (uintptr_t)map->alias;
        return CUDA_SUCCESS;
    }
    status = cuda_standin_va_alloc(rounded, CUDA_STANDIN_ALLOC_ALIGN, 0, &map->base);
    if (status == CUDA_SUCCESS) {
        map->va_size = rounded;
    }
    return status;
}

static CUresult cuda_standin_alloc(const cuda_standin_alloc_args_t *args, CUdeviceptr *dptr)
{
    size_t rounded = CUDA_STANDIN_ALIGN_UP(args->size, CUDA_STANDIN_ALLOC_ALIGN);
    cuda_standin_map_t *map;
    CUresult status;

    if ((dptr == NULL) || (args->size == 0) || (rounded < args->size)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "size %zu", args->size);
    }
    map = cuda_standin_map_new(args->kind);
    if (map == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    map->size      = args->size;
    map->device    = args->device;
    map->ctx       = args->ctx;
    map->buffer_id = cuda_standin_next_id();
    status         = cuda_standin_device_charge(args->device, rounded);
    if (status != CUDA_SUCCESS) {
        goto err_destroy;
    }
    map->charged = rounded;
    status       = cuda_standin_alloc_back(map, rounded);
    if (status != CUDA_SUCCESS) {
        goto err_destroy;
    }
    status = cuda_standin_map_insert(map);
    if (status != CUDA_SUCCESS) {
        goto err_destroy;
    }
    if (args->pool != NULL) {
        map->pool = args->pool;
        ++args->pool->outstanding;
    }
    *dptr = (CUdeviceptr)map->base;
    cuda_standin_note("0x%llx size %zu buffer id 0x%llx", (unsigned long long)map->base,
                      map->size, map->buffer_id);
    return CUDA_SUCCESS;

err_destroy:
    cuda_standin_map_destroy(map);
    return status;
}

/* An allocation on the device of the current context. */
static CUresult cuda_standin_alloc_here(cuda_standin_map_kind_t kind, size_t size,
                                        CUdeviceptr *dptr)
{
    CUcontext ctx                  = cuda_standin_ctx_current();
    cuda_standin_alloc_args_t args = {kind, size, ctx->device, ctx, NULL};

    return cuda_standin_alloc(&args, dptr);
}

CUresult cuda_standin_patchable_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    CUDA_STANDIN_CALL(cuMemAlloc, CUDA_STANDIN_IN_CTX,
                      cuda_standin_alloc_here(CUDA_STANDIN_MAP_ALLOC, bytesize, dptr));
}

static CUresult cuda_standin_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                         size_t height, unsigned int elem_size)
{
    size_t row;

    if ((pitch == NULL) || (width == 0) || (height == 0) ||
        ((elem_size != 4) && (elem_size != 8) && (elem_size != 16))) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "width %zu height %zu element %u",
                                  width, height, elem_size);
    }
    row = CUDA_STANDIN_ALIGN_UP(width, CUDA_STANDIN_PITCH_ALIGN);
    if (height > SIZE_MAX / row) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pitch = row;
    return cuda_standin_alloc_here(CUDA_STANDIN_MAP_ALLOC, row * height, dptr);
}

CUresult cuda_standin_patchable_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch,
                                                size_t WidthInBytes, size_t Height,
                                                unsigned int ElementSizeBytes)
{
    CUDA_STANDIN_CALL(cuMemAllocPitch, CUDA_STANDIN_IN_CTX,
                      cuda_standin_alloc_pitch(dptr, pPitch, WidthInBytes, Height,
                                               ElementSizeBytes));
}

/* CU_MEMORYTYPE_DEVICE, not CU_MEMORYTYPE_UNIFIED, is what pointer queries
 * report for managed memory (with IS_MANAGED=1): UCX's memory type detection,
 * written against the real driver, recognizes managed memory exactly so. */
static CUresult cuda_standin_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    if ((flags != CU_MEM_ATTACH_GLOBAL) && (flags != CU_MEM_ATTACH_HOST)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    return cuda_standin_alloc_here(CUDA_STANDIN_MAP_MANAGED, size, dptr);
}

CUresult cuda_standin_patchable_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                                                  unsigned int flags)
{
    CUDA_STANDIN_CALL(cuMemAllocManaged, CUDA_STANDIN_IN_CTX,
                      cuda_standin_alloc_managed(dptr, bytesize, flags));
}

/* --- Freeing --- */

static int cuda_standin_mem_freeable(const cuda_standin_map_t *map, uintptr_t dptr)
{
    return (map != NULL) && (map->base == dptr) &&
           ((map->kind == CUDA_STANDIN_MAP_ALLOC) || (map->kind == CUDA_STANDIN_MAP_POOL) ||
            (map->kind == CUDA_STANDIN_MAP_MANAGED));
}

CUresult cuda_standin_mem_free_base(uintptr_t dptr)
{
    cuda_standin_map_t *map = cuda_standin_map_find(dptr);

    if (!cuda_standin_mem_freeable(map, dptr)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%lx is not the start of a live allocation",
                                  (unsigned long)dptr);
    }
    if (cuda_standin_config.ipc_free_check && (map->kind == CUDA_STANDIN_MAP_ALLOC) &&
        cuda_standin_ipc_still_open(map->memfd)) {
        fprintf(stderr,
                "cuda_standin: pid %d: cuMemFree(0x%lx): the allocation is still open in "
                "another process (cuIpcOpenMemHandle): undefined on a GPU\n",
                (int)cuda_standin_pid(), (unsigned long)dptr);
    }
    cuda_standin_note("freed 0x%lx buffer id 0x%llx", (unsigned long)dptr, map->buffer_id);
    cuda_standin_map_destroy(map);
    return CUDA_SUCCESS;
}

/* Like cudaFree, freeing synchronizes the device first: work queued on the
 * memory runs before it goes away. */
static CUresult cuda_standin_free(CUdeviceptr dptr)
{
    (void)cuda_standin_stream_finish_all();
    return cuda_standin_mem_free_base((uintptr_t)dptr);
}

CUresult cuda_standin_patchable_cuMemFree(CUdeviceptr dptr)
{
    CUDA_STANDIN_CALL(cuMemFree, CUDA_STANDIN_IN_CTX, cuda_standin_free(dptr));
}

/* --- Stream-ordered allocation --- */

static int cuda_standin_pool_valid(struct CUmemPoolHandle_st *pool)
{
    struct CUmemPoolHandle_st *p;

    if ((pool >= &cuda_standin_default_pools[0]) &&
        (pool < &cuda_standin_default_pools[CUDA_STANDIN_MAX_DEVICES])) {
        return cuda_standin_device_valid(pool->device) && (pool->magic == CUDA_STANDIN_POOL_MAGIC);
    }
    for (p = cuda_standin_pools; p != NULL; p = p->next) {
        if (p == pool) {
            return 1;
        }
    }
    return 0;
}

static struct CUmemPoolHandle_st *cuda_standin_pool_default(int device)
{
    struct CUmemPoolHandle_st *pool = &cuda_standin_default_pools[device];

    if (pool->magic != CUDA_STANDIN_POOL_MAGIC) {
        memset(pool, 0, sizeof(*pool));
        pool->magic                = CUDA_STANDIN_POOL_MAGIC;
        pool->device               = device;
        pool->is_default           = 1;
        pool->props.allocType      = CU_MEM_ALLOCATION_TYPE_PINNED;
        pool->props.location.type  = CU_MEM_LOCATION_TYPE_DEVICE;
        pool->props.location.id    = device;
        pool->props.handleTypes    = CU_MEM_HANDLE_TYPE_NONE; /* not exportable */
    }
    return pool;
}

/* The allocation exists from now on, which is earlier than stream order
 * requires and never wrong; the memory is not legacy-IPC capable. */
static CUresult cuda_standin_alloc_from_pool(CUdeviceptr *dptr, size_t size,
                                             struct CUmemPoolHandle_st *pool, CUstream hstream)
{
    cuda_standin_alloc_args_t args = {CUDA_STANDIN_MAP_POOL, size, 0, NULL, NULL};
    cuda_standin_stream_t *stream = NULL;
    CUresult status;

    status = cuda_standin_stream_get(hstream, &stream);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (pool == NULL) {
        pool = cuda_standin_pool_default(cuda_standin_stream_device(stream));
    } else if (!cuda_standin_pool_valid(pool)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "%p is not a memory pool",
                                  (void *)pool);
    }
    args.device = pool->device;
    args.ctx    = cuda_standin_ctx_current();
    args.pool   = pool;
    return cuda_standin_alloc(&args, dptr);
}

CUresult cuda_standin_patchable_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
                                                CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemAllocAsync, CUDA_STANDIN_IN_CTX,
                      cuda_standin_alloc_from_pool(dptr, bytesize, NULL, hStream));
}

CUresult cuda_standin_patchable_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                        CUmemoryPool pool, CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemAllocFromPoolAsync, CUDA_STANDIN_IN_CTX,
                      (pool == NULL) ? CUDA_ERROR_INVALID_VALUE
                                     : cuda_standin_alloc_from_pool(dptr, bytesize, pool, hStream));
}

/* The free runs in stream order; until then the memory stays valid. */
static CUresult cuda_standin_free_async(CUdeviceptr dptr, CUstream hstream)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)dptr);
    cuda_standin_op_t op    = {.kind = CUDA_STANDIN_OP_FREE, .dst = (uintptr_t)dptr};
    cuda_standin_stream_t *stream = NULL;
    CUresult status;

    status = cuda_standin_stream_get(hstream, &stream);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!cuda_standin_mem_freeable(map, (uintptr_t)dptr) || map->free_queued) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%llx is not the start of a live allocation",
                                  (unsigned long long)dptr);
    }
    status = cuda_standin_stream_enqueue(stream, &op);
    if (status == CUDA_SUCCESS) {
        map->free_queued = 1;
    }
    return status;
}

CUresult cuda_standin_patchable_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    CUDA_STANDIN_CALL(cuMemFreeAsync, CUDA_STANDIN_IN_CTX, cuda_standin_free_async(dptr, hStream));
}

/* --- Pools --- */

static CUresult cuda_standin_get_default_pool(CUmemoryPool *pool_out, CUdevice dev)
{
    if (pool_out == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *pool_out = cuda_standin_pool_default(dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDeviceGetDefaultMemPool, CUDA_STANDIN_INITED,
                      cuda_standin_get_default_pool(pool_out, dev));
}

static CUresult cuda_standin_pool_create(CUmemoryPool *pool_out, const CUmemPoolProps *props)
{
    struct CUmemPoolHandle_st *pool;

    if ((pool_out == NULL) || (props == NULL) ||
        (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) ||
        (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(props->location.id)) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    if ((props->handleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0) {
        return cuda_standin_error(CUDA_ERROR_NOT_SUPPORTED, "handle types 0x%x",
                                  (unsigned)props->handleTypes);
    }
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pool->magic        = CUDA_STANDIN_POOL_MAGIC;
    pool->device       = props->location.id;
    pool->props        = *props;
    pool->next         = cuda_standin_pools;
    cuda_standin_pools = pool;
    *pool_out          = pool;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUDA_STANDIN_CALL(cuMemPoolCreate, CUDA_STANDIN_INITED,
                      cuda_standin_pool_create(pool, poolProps));
}

void cuda_standin_mem_pool_release(struct CUmemPoolHandle_st *pool)
{
    --pool->outstanding;
    if (pool->destroyed && (pool->outstanding == 0)) {
        free(pool);
    }
}

unsigned cuda_standin_mem_pool_handle_types(const struct CUmemPoolHandle_st *pool)
{
    return (unsigned)pool->props.handleTypes;
}

/* As in the driver, a pool with live allocations goes away with the last. */
static CUresult cuda_standin_pool_destroy(CUmemoryPool pool)
{
    struct CUmemPoolHandle_st **pp;

    for (pp = &cuda_standin_pools; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == pool) {
            *pp             = pool->next;
            pool->destroyed = 1;
            if (pool->outstanding == 0) {
                free(pool);
            }
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "not a pool from cuMemPoolCreate");
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUDA_STANDIN_CALL(cuMemPoolDestroy, CUDA_STANDIN_INITED, cuda_standin_pool_destroy(pool));
}

/* --- Memory info --- */

static CUresult cuda_standin_mem_get_info(size_t *free_bytes, size_t *total)
{
    int device = cuda_standin_ctx_current()->device;

    if ((free_bytes == NULL) || (total == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *total      = CUDA_STANDIN_DEVICE_MEMORY;
    *free_bytes = CUDA_STANDIN_DEVICE_MEMORY - cuda_standin_device_used(device);
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *free, size_t *total)
{
    CUDA_STANDIN_CALL(cuMemGetInfo, CUDA_STANDIN_IN_CTX, cuda_standin_mem_get_info(free, total));
}

/* --- Pinned host memory ---
 * Page-locked host memory is ordinary host memory to the CPU; the stand-in
 * keeps a list only so that cuMemFreeHost can refuse what it did not give
 * (as the driver does).  The CUDA_STANDIN_CALL lock guards the list. */
typedef struct cuda_standin_host_alloc {
    void *ptr;
    size_t size;
    CUcontext ctx; /* current when it was allocated or registered */
    unsigned long long buffer_id;
    struct cuda_standin_host_alloc *next;
} cuda_standin_host_alloc_t;

static cuda_standin_host_alloc_t *cuda_standin_host_allocs;

static CUresult cuda_standin_mem_host_alloc(void **pp, size_t size, unsigned int flags)
{
    cuda_standin_host_alloc_t *a;

    if ((pp == NULL) || (size == 0) || (flags & ~0xfu)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "bad pointer, size or flags");
    }
    a = calloc(1, sizeof(*a));
    if ((a == NULL) || (posix_memalign(&a->ptr, 4096, size) != 0)) {
        free(a);
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes of host memory", size);
    }
    a->size                  = size;
    a->ctx                   = cuda_standin_ctx_current();
    a->buffer_id             = cuda_standin_next_id();
    a->next                  = cuda_standin_host_allocs;
    cuda_standin_host_allocs = a;
    *pp                      = a->ptr;
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_mem_free_host(void *ptr)
{
    cuda_standin_host_alloc_t **pa, *a;

    for (pa = &cuda_standin_host_allocs; *pa != NULL; pa = &(*pa)->next) {
        if ((*pa)->ptr == ptr) {
            a   = *pa;
            *pa = a->next;
            free(a->ptr);
            free(a);
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "%p is not from cuMemHostAlloc", ptr);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuMemHostAlloc, CUDA_STANDIN_IN_CTX,
                      cuda_standin_mem_host_alloc(pp, bytesize, Flags));
}

CUresult cuMemFreeHost(void *p)
{
    CUDA_STANDIN_CALL(cuMemFreeHost, CUDA_STANDIN_IN_CTX, cuda_standin_mem_free_host(p));
}

/* --- Registered host memory ---
 * cuMemHostRegister page-locks memory the application allocated; the CPU
 * sees no difference.  The stand-in keeps the ranges so that it refuses,
 * as the driver does, a range that overlaps one registered already and an
 * unregistration of an address that does not start one. */
static cuda_standin_host_alloc_t *cuda_standin_host_registered;

static CUresult cuda_standin_mem_host_register(void *ptr, size_t size, unsigned int flags)
{
    uintptr_t start = (uintptr_t)ptr;
    cuda_standin_host_alloc_t *a;

    if ((ptr == NULL) || (size == 0) || (flags & ~0xfu)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "bad pointer, size or flags");
    }
    if (cuda_standin_vaspace_contains(start) || cuda_standin_vaspace_contains(start + size - 1)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "%p is device memory", ptr);
    }
    for (a = cuda_standin_host_registered; a != NULL; a = a->next) {
        if ((start < (uintptr_t)a->ptr + a->size) && ((uintptr_t)a->ptr < start + size)) {
            return cuda_standin_error(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                                      "%zu bytes at %p overlap %zu registered at %p", size, ptr,
                                      a->size, a->ptr);
        }
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "registration record");
    }
    a->ptr                       = ptr;
    a->size                      = size;
    a->ctx                       = cuda_standin_ctx_current();
    a->buffer_id                 = cuda_standin_next_id();
    a->next                      = cuda_standin_host_registered;
    cuda_standin_host_registered = a;
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_mem_host_unregister(void *ptr)
{
    cuda_standin_host_alloc_t **pa, *a;

    for (pa = &cuda_standin_host_registered; *pa != NULL; pa = &(*pa)->next) {
        if ((*pa)->ptr == ptr) {
            a   = *pa;
            *pa = a->next;
            free(a);
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                              "%p does not start a registered range", ptr);
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuMemHostRegister, CUDA_STANDIN_IN_CTX,
                      cuda_standin_mem_host_register(p, bytesize, Flags));
}

CUresult cuMemHostUnregister(void *p)
{
    CUDA_STANDIN_CALL(cuMemHostUnregister, CUDA_STANDIN_IN_CTX,
                      cuda_standin_mem_host_unregister(p));
}

static const cuda_standin_host_alloc_t *
cuda_standin_host_list_find(const cuda_standin_host_alloc_t *list, uintptr_t addr, size_t len)
{
    const cuda_standin_host_alloc_t *a;

    for (a = list; a != NULL; a = a->next) {
        if ((addr >= (uintptr_t)a->ptr) && (addr + len <= (uintptr_t)a->ptr + a->size)) {
            return a;
        }
    }
    return NULL;
}

static const cuda_standin_host_alloc_t *cuda_standin_host_find(uintptr_t addr, size_t len)
{
    const cuda_standin_host_alloc_t *a = cuda_standin_host_list_find(cuda_standin_host_allocs, addr,
                                                                     len);

    return (a != NULL) ? a : cuda_standin_host_list_find(cuda_standin_host_registered, addr, len);
}

/* The device's address of pinned host memory: with unified addressing
 * the host's own (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
 * is 1 here); memory that is not pinned has none. */
static CUresult cuda_standin_mem_host_device_pointer(CUdeviceptr *pdptr, void *p,
                                                     unsigned int flags)
{
    if ((pdptr == NULL) || (flags != 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "bad pointer or flags 0x%x", flags);
    }
    if (cuda_standin_host_find((uintptr_t)p, 1) == NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "%p is not page-locked host memory", p);
    }
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuMemHostGetDevicePointer, CUDA_STANDIN_IN_CTX,
                      cuda_standin_mem_host_device_pointer(pdptr, p, Flags));
}

int cuda_standin_mem_host_pinned(uintptr_t addr, size_t len)
{
    return cuda_standin_host_find(addr, len) != NULL;
}

int cuda_standin_mem_host_info(uintptr_t addr, cuda_standin_host_info_t *info)
{
    const cuda_standin_host_alloc_t *a = cuda_standin_host_find(addr, 1);

    if (a == NULL) {
        return 0;
    }
    info->base      = (uintptr_t)a->ptr;
    info->size      = a->size;
    info->ctx       = a->ctx;
    info->buffer_id = a->buffer_id;
    return 1;
}

/* Fork child: pools are process state (mappings go with the vaspace). */
void cuda_standin_mem_forget(void)
{
    struct CUmemPoolHandle_st *pool;

    while (cuda_standin_pools != NULL) {
        pool               = cuda_standin_pools;
        cuda_standin_pools = pool->next;
        free(pool);
    }
    memset(cuda_standin_default_pools, 0, sizeof(cuda_standin_default_pools));
}
