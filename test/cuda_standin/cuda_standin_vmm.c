/*
 * Virtual memory management: physical allocations (cuMemCreate, a memfd
 * each), address reservations in the device range, mappings, access rights,
 * and export/import as POSIX file descriptors (a dup of the memfd, which
 * really crosses processes over SCM_RIGHTS).
 *
 * A physical allocation is freed when its handle references
 * (cuMemCreate/Import/RetainAllocationHandle, each paired with cuMemRelease)
 * and its mappings are all gone; exported fds keep the memfd's bytes alive
 * on their own, as the driver's shareable handles do.
 */
#define _GNU_SOURCE
#include "cuda_standin.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CUDA_STANDIN_PHYS_MAGIC 0x53594850u /* "PHYS" */

struct cuda_standin_phys {
    uint32_t magic;
    int fd;
    size_t size;
    CUmemAllocationProp prop;
    int refs;       /* handle references plus mappings */
    size_t charged; /* device memory accounted; 0 when imported */
    unsigned long long id;
    struct cuda_standin_phys *next;
};

typedef struct cuda_standin_reservation {
    uintptr_t base;
    size_t size;
    struct cuda_standin_reservation *next;
} cuda_standin_reservation_t;

static struct cuda_standin_phys *cuda_standin_phys_list;
static cuda_standin_reservation_t *cuda_standin_reservations;

/* --- Physical allocations --- */

/* Handles are the objects' addresses, accepted only if live. */
static struct cuda_standin_phys *cuda_standin_phys_get(CUmemGenericAllocationHandle handle)
{
    struct cuda_standin_phys *phys;

    for (phys = cuda_standin_phys_list; phys != NULL; phys = phys->next) {
        if ((CUmemGenericAllocationHandle)(uintptr_t)phys == handle) {
            return phys;
        }
    }
    return NULL;
}

static CUmemGenericAllocationHandle cuda_standin_phys_handle(struct cuda_standin_phys *phys)
{
    return (CUmemGenericAllocationHandle)(uintptr_t)phys;
}

static struct cuda_standin_phys *cuda_standin_phys_new(int fd, size_t size,
                                                       const CUmemAllocationProp *prop)
{
    struct cuda_standin_phys *phys = calloc(1, sizeof(*phys));

    if (phys == NULL) {
        return NULL;
    }
    phys->magic            = CUDA_STANDIN_PHYS_MAGIC;
    phys->fd               = fd;
    phys->size             = size;
    phys->prop             = *prop;
    phys->refs             = 1;
    phys->next             = cuda_standin_phys_list;
    cuda_standin_phys_list = phys;
    return phys;
}

void cuda_standin_vmm_phys_put(struct cuda_standin_phys *phys)
{
    struct cuda_standin_phys **pp;

    if (--phys->refs > 0) {
        return;
    }
    for (pp = &cuda_standin_phys_list; *pp != phys; pp = &(*pp)->next) {
    }
    *pp = phys->next;
    if (phys->charged != 0) {
        cuda_standin_device_uncharge(phys->prop.location.id, phys->charged);
    }
    close(phys->fd);
    free(phys);
}

unsigned long long cuda_standin_vmm_phys_id(const struct cuda_standin_phys *phys)
{
    return phys->id;
}

int cuda_standin_vmm_phys_fd(const struct cuda_standin_phys *phys)
{
    return phys->fd;
}

unsigned cuda_standin_vmm_phys_handle_types(const struct cuda_standin_phys *phys)
{
    return (unsigned)phys->prop.requestedHandleTypes;
}

static CUresult cuda_standin_prop_check(const CUmemAllocationProp *prop)
{
    if ((prop == NULL) || (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "prop.type must be PINNED");
    }
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        return cuda_standin_error(CUDA_ERROR_NOT_SUPPORTED, "only device locations are modelled");
    }
    if (!cuda_standin_device_valid(prop->location.id)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_DEVICE, "device %d", prop->location.id);
    }
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_vmm_create(CUmemGenericAllocationHandle *handle, size_t size,
                                        const CUmemAllocationProp *prop, unsigned long long flags)
{
    struct cuda_standin_phys *phys;
    unsigned long long id;
    char suffix[32];
    CUresult status;
    int fd;

    if ((handle == NULL) || (flags != 0) || (size == 0) ||
        !CUDA_STANDIN_IS_ALIGNED(size, CUDA_STANDIN_VMM_GRANULARITY)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "size %zu must be a nonzero multiple of %zu", size,
                                  CUDA_STANDIN_VMM_GRANULARITY);
    }
    status = cuda_standin_prop_check(prop);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0) {
        return cuda_standin_error(CUDA_ERROR_NOT_SUPPORTED, "handle types 0x%x",
                                  (unsigned)prop->requestedHandleTypes);
    }
    status = cuda_standin_device_charge(prop->location.id, size);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    /* The name tells an importer the device (see vmm_import). */
    id = cuda_standin_next_id();
    snprintf(suffix, sizeof(suffix), ".vmm.dev%d", prop->location.id);
    status = cuda_standin_backing_create(id, suffix, size, &fd);
    if (status != CUDA_SUCCESS) {
        goto err_uncharge;
    }
    phys = cuda_standin_phys_new(fd, size, prop);
    if (phys == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_close;
    }
    phys->id      = id;
    phys->charged = size;
    *handle       = cuda_standin_phys_handle(phys);
    cuda_standin_note("handle 0x%llx size %zu", *handle, size);
    return CUDA_SUCCESS;

err_close:
    close(fd);
err_uncharge:
    cuda_standin_device_uncharge(prop->location.id, size);
    return status;
}

CUresult cuda_standin_patchable_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                            const CUmemAllocationProp *prop,
                                            unsigned long long flags)
{
    CUDA_STANDIN_CALL(cuMemCreate, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_create(handle, size, prop, flags));
}

static CUresult cuda_standin_vmm_release(CUmemGenericAllocationHandle handle)
{
    struct cuda_standin_phys *phys = cuda_standin_phys_get(handle);

    if (phys == NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%llx is not a handle", handle);
    }
    cuda_standin_vmm_phys_put(phys);
    return CUDA_SUCCESS;
}

CUresult cuda_standin_patchable_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUDA_STANDIN_CALL(cuMemRelease, CUDA_STANDIN_INITED, cuda_standin_vmm_release(handle));
}

/* --- Reservations --- */

int cuda_standin_vmm_reservation(uintptr_t addr, uintptr_t *base_p, size_t *size_p)
{
    cuda_standin_reservation_t *r;

    for (r = cuda_standin_reservations; r != NULL; r = r->next) {
        if (addr - r->base < r->size) {
            *base_p = r->base;
            *size_p = r->size;
            return 1;
        }
    }
    return 0;
}

/* Aligned at least to the granularity, so that the start can be mapped. */
static CUresult cuda_standin_vmm_reserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    cuda_standin_reservation_t *r;
    CUresult status;

    if ((ptr == NULL) || (flags != 0) || (size == 0) || !CUDA_STANDIN_IS_ALIGNED(size, page) ||
        ((alignment & (alignment - 1)) != 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "size %zu alignment %zu", size,
                                  alignment);
    }
    if (alignment < CUDA_STANDIN_VMM_GRANULARITY) {
        alignment = CUDA_STANDIN_VMM_GRANULARITY;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    status = cuda_standin_va_alloc(size, alignment, (uintptr_t)addr, &r->base);
    if (status != CUDA_SUCCESS) {
        free(r);
        return status;
    }
    r->size                   = size;
    r->next                   = cuda_standin_reservations;
    cuda_standin_reservations = r;
    *ptr                      = (CUdeviceptr)r->base;
    cuda_standin_note("0x%lx size %zu", (unsigned long)r->base, size);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    CUDA_STANDIN_CALL(cuMemAddressReserve, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_reserve(ptr, size, alignment, addr, flags));
}

/* Stricter than the documentation says: a reservation with mappings left in
 * it is refused, since freeing it would leave them dangling. */
static CUresult cuda_standin_vmm_address_free(CUdeviceptr ptr, size_t size)
{
    cuda_standin_reservation_t **pr, *r;

    for (pr = &cuda_standin_reservations; *pr != NULL; pr = &(*pr)->next) {
        r = *pr;
        if ((r->base != (uintptr_t)ptr) || (r->size != size)) {
            continue;
        }
        if (cuda_standin_map_first_in(r->base, r->size) != NULL) {
            return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx still has mappings",
                                      (unsigned long)r->base);
        }
        *pr = r->next;
        cuda_standin_va_free(r->base, r->size);
        free(r);
        return CUDA_SUCCESS;
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%llx size %zu is not a reservation",
                              (unsigned long long)ptr, size);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUDA_STANDIN_CALL(cuMemAddressFree, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_address_free(ptr, size));
}

/* --- Mappings --- */

static CUresult cuda_standin_vmm_map_check(uintptr_t ptr, size_t size, size_t offset,
                                           const struct cuda_standin_phys *phys,
                                           unsigned long long flags)
{
    uintptr_t resv_base;
    size_t resv_size;

    if (phys == NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "not an allocation handle");
    }
    /* cuda.h: "offset ... currently must be zero". */
    if ((flags != 0) || (offset != 0) || (size == 0) || (size > phys->size) ||
        !CUDA_STANDIN_IS_ALIGNED(ptr, CUDA_STANDIN_VMM_GRANULARITY) ||
        !CUDA_STANDIN_IS_ALIGNED(size, CUDA_STANDIN_VMM_GRANULARITY)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "ptr 0x%lx size %zu offset %zu",
                                  (unsigned long)ptr, size, offset);
    }
    if (!cuda_standin_vmm_reservation(ptr, &resv_base, &resv_size) ||
        (size > resv_size - (ptr - resv_base))) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx+%zu is not inside a reservation",
                                  (unsigned long)ptr, size);
    }
    if (cuda_standin_map_first_in(ptr, size) != NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx+%zu is already mapped",
                                  (unsigned long)ptr, size);
    }
    return CUDA_SUCCESS;
}

/* A new mapping has no access rights until cuMemSetAccess, as documented:
 * copies touching it fail until then. */
static CUresult cuda_standin_vmm_map(CUdeviceptr ptr, size_t size, size_t offset,
                                     CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    struct cuda_standin_phys *phys = cuda_standin_phys_get(handle);
    cuda_standin_map_t *map;
    CUresult status;

    status = cuda_standin_vmm_map_check((uintptr_t)ptr, size, offset, phys, flags);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    map = cuda_standin_map_new(CUDA_STANDIN_MAP_VMM);
    if (map == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    map->base      = (uintptr_t)ptr;
    map->size      = size;
    map->device    = phys->prop.location.id;
    map->buffer_id = cuda_standin_next_id();
    status         = cuda_standin_backing_map(phys->fd, size, &map->alias);
    if (status == CUDA_SUCCESS) {
        map->alias_size = size;
        status          = cuda_standin_map_insert(map);
    }
    if (status != CUDA_SUCCESS) {
        cuda_standin_map_destroy(map);
        return status;
    }
    map->phys = phys;
    ++phys->refs;
    cuda_standin_note("0x%llx size %zu handle 0x%llx buffer id 0x%llx", (unsigned long long)ptr,
                      size, handle, map->buffer_id);
    return CUDA_SUCCESS;
}

CUresult cuda_standin_patchable_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                         CUmemGenericAllocationHandle handle,
                                         unsigned long long flags)
{
    CUDA_STANDIN_CALL(cuMemMap, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_map(ptr, size, offset, handle, flags));
}

/* Does [ptr, ptr + size) consist of whole VMM mappings, back to back? */
static int cuda_standin_vmm_tiled(uintptr_t ptr, size_t size)
{
    uintptr_t addr = ptr, end = ptr + size;
    cuda_standin_map_t *map;

    if ((size == 0) || (end < ptr)) {
        return 0;
    }
    while (addr < end) {
        map = cuda_standin_map_find(addr);
        if ((map == NULL) || (map->kind != CUDA_STANDIN_MAP_VMM) || (map->base != addr) ||
            (map->size > end - addr)) {
            return 0;
        }
        addr += map->size;
    }
    return 1;
}

static CUresult cuda_standin_vmm_unmap(CUdeviceptr ptr, size_t size)
{
    uintptr_t addr = (uintptr_t)ptr, end = (uintptr_t)ptr + size;
    cuda_standin_map_t *map;

    if (!cuda_standin_vmm_tiled(addr, size)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%lx+%zu is not a whole number of mappings",
                                  (unsigned long)addr, size);
    }
    /* cuMemUnmap synchronizes: queued work on the range runs first. */
    (void)cuda_standin_stream_finish_all();
    while (addr < end) {
        map = cuda_standin_map_find(addr);
        addr += map->size;
        cuda_standin_map_destroy(map);
    }
    return CUDA_SUCCESS;
}

CUresult cuda_standin_patchable_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUDA_STANDIN_CALL(cuMemUnmap, CUDA_STANDIN_INITED, cuda_standin_vmm_unmap(ptr, size));
}

static CUresult cuda_standin_access_check(const CUmemAccessDesc *desc, size_t count)
{
    size_t i;

    if ((desc == NULL) || (count == 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (i = 0; i < count; ++i) {
        if ((desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) ||
            ((desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) &&
             (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ) &&
             (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))) {
            return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "descriptor %zu", i);
        }
        if (!cuda_standin_device_valid(desc[i].location.id)) {
            return cuda_standin_error(CUDA_ERROR_INVALID_DEVICE, "descriptor %zu: device %d", i,
                                      desc[i].location.id);
        }
    }
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_vmm_set_access(CUdeviceptr ptr, size_t size,
                                            const CUmemAccessDesc *desc, size_t count)
{
    uintptr_t addr = (uintptr_t)ptr, end = (uintptr_t)ptr + size;
    cuda_standin_map_t *map;
    CUresult status;
    size_t i;

    status = cuda_standin_access_check(desc, count);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!cuda_standin_vmm_tiled(addr, size)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx+%zu is not fully mapped",
                                  (unsigned long)addr, size);
    }
    for (; addr < end; addr += map->size) {
        map = cuda_standin_map_find(addr);
        for (i = 0; i < count; ++i) {
            map->access[desc[i].location.id] = (unsigned char)desc[i].flags;
        }
    }
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    CUDA_STANDIN_CALL(cuMemSetAccess, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_set_access(ptr, size, desc, count));
}

/* --- Queries --- */

static CUresult cuda_standin_vmm_granularity(size_t *granularity, const CUmemAllocationProp *prop,
                                             CUmemAllocationGranularity_flags option)
{
    CUresult status;

    if ((granularity == NULL) || ((option != CU_MEM_ALLOC_GRANULARITY_MINIMUM) &&
                                  (option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    status = cuda_standin_prop_check(prop);
    if (status == CUDA_SUCCESS) {
        *granularity = CUDA_STANDIN_VMM_GRANULARITY;
    }
    return status;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    CUDA_STANDIN_CALL(cuMemGetAllocationGranularity, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_granularity(granularity, prop, option));
}

static CUresult cuda_standin_vmm_retain(CUmemGenericAllocationHandle *handle, void *addr)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)addr);

    if ((handle == NULL) || (map == NULL) || (map->kind != CUDA_STANDIN_MAP_VMM)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "%p is not VMM-mapped", addr);
    }
    ++map->phys->refs;
    *handle = cuda_standin_phys_handle(map->phys);
    return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUDA_STANDIN_CALL(cuMemRetainAllocationHandle, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_retain(handle, addr));
}

static CUresult cuda_standin_vmm_get_prop(CUmemAllocationProp *prop,
                                          CUmemGenericAllocationHandle handle)
{
    struct cuda_standin_phys *phys = cuda_standin_phys_get(handle);

    if ((prop == NULL) || (phys == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *prop = phys->prop;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                CUmemGenericAllocationHandle handle)
{
    CUDA_STANDIN_CALL(cuMemGetAllocationPropertiesFromHandle, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_get_prop(prop, handle));
}

/* --- Export and import --- */

static CUresult cuda_standin_vmm_export(void *shareable, CUmemGenericAllocationHandle handle,
                                        CUmemAllocationHandleType type, unsigned long long flags)
{
    struct cuda_standin_phys *phys = cuda_standin_phys_get(handle);
    int fd;

    if ((shareable == NULL) || (phys == NULL) || (flags != 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!(phys->prop.requestedHandleTypes & type)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "handle type 0x%x was not requested at cuMemCreate",
                                  (unsigned)type);
    }
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    fd = fcntl(phys->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "dup: %m");
    }
    memcpy(shareable, &fd, sizeof(fd));
    cuda_standin_note("handle 0x%llx -> fd %d", handle, fd);
    return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags)
{
    CUDA_STANDIN_CALL(cuMemExportToShareableHandle, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_export(shareableHandle, handle, handleType, flags));
}

/* The fd must be a stand-in VMM memfd; its name gives its id and device. */
static int cuda_standin_vmm_fd_identify(int fd, unsigned long long *id, int *device)
{
    char path[64], target[128];
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    len = readlink(path, target, sizeof(target) - 1);
    if (len < 0) {
        return -1;
    }
    target[len] = '\0';
    return (sscanf(target, "/memfd:cuda_standin.%llu.vmm.dev%d", id, device) == 2) ? 0 : -1;
}

/* The caller keeps its fd (the driver does not take it over). */
static CUresult cuda_standin_vmm_import(CUmemGenericAllocationHandle *handle, void *os_handle,
                                        CUmemAllocationHandleType type)
{
    CUmemAllocationProp prop = {.type                 = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    int fd = (int)(intptr_t)os_handle, dup_fd, device;
    struct cuda_standin_phys *phys;
    unsigned long long id;
    struct stat st;

    if (handle == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (cuda_standin_vmm_fd_identify(fd, &id, &device) != 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "fd %d is not an exported allocation",
                                  fd);
    }
    if ((fstat(fd, &st) != 0) || (st.st_size <= 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "fd %d: %m", fd);
    }
    dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "dup: %m");
    }
    prop.location.id = cuda_standin_device_valid(device) ? device : 0;
    phys             = cuda_standin_phys_new(dup_fd, (size_t)st.st_size, &prop);
    if (phys == NULL) {
        close(dup_fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    phys->id = id;
    *handle  = cuda_standin_phys_handle(phys);
    cuda_standin_note("fd %d -> handle 0x%llx size %zu", fd, *handle, phys->size);
    return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType)
{
    CUDA_STANDIN_CALL(cuMemImportFromShareableHandle, CUDA_STANDIN_INITED,
                      cuda_standin_vmm_import(handle, osHandle, shHandleType));
}

/* --- Fork child --- */

void cuda_standin_vmm_forget(void)
{
    struct cuda_standin_phys *phys;
    cuda_standin_reservation_t *r;

    while (cuda_standin_phys_list != NULL) {
        phys                   = cuda_standin_phys_list;
        cuda_standin_phys_list = phys->next;
        close(phys->fd);
        free(phys);
    }
    while (cuda_standin_reservations != NULL) {
        r                         = cuda_standin_reservations;
        cuda_standin_reservations = r->next;
        free(r);
    }
}
