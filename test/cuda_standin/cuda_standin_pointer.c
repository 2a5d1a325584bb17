/*
 * Pointer queries: cuPointerGetAttribute(s), cuPointerSetAttribute,
 * cuMemGetAddressRange.
 *
 * Value sizes: booleans are written as 4-byte unsigned ints (what UCX and
 * cuPointerSetAttribute use), enums as 4 bytes, addresses and ids as 8.
 *
 * For VMM memory RANGE_START_ADDR/RANGE_SIZE describe the address
 * reservation, as cuda.h documents ("not necessarily the address of the
 * mapped region"), and cuMemGetAddressRange / MAPPING_* the mapping; the two
 * agree whenever one mapping fills its reservation.
 */
#include "cuda_standin.h"

#include <string.h>

/* What the stand-in knows about an address. */
typedef struct cuda_standin_ptr {
    uintptr_t addr;
    cuda_standin_map_t *map; /* NULL: nothing is mapped there */
    uintptr_t resv_base;     /* the VMM reservation holding addr, if any */
    size_t resv_size;
} cuda_standin_ptr_t;

static cuda_standin_ptr_t cuda_standin_ptr_lookup(CUdeviceptr ptr)
{
    cuda_standin_ptr_t info = {(uintptr_t)ptr, cuda_standin_map_find((uintptr_t)ptr), 0, 0};

    cuda_standin_vmm_reservation(info.addr, &info.resv_base, &info.resv_size);
    return info;
}

/* Bytes a value of the attribute takes; 0 for attributes not supported. */
static size_t cuda_standin_attr_size(int attr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case 21: /* IS_HW_DECOMPRESS_CAPABLE, newer headers only */
        return sizeof(unsigned int);
    default:
        return 0;
    }
}

static void cuda_standin_put_uint(void *data, unsigned int value)
{
    memcpy(data, &value, sizeof(value));
}

static void cuda_standin_put_u64(void *data, unsigned long long value)
{
    memcpy(data, &value, sizeof(value));
}

static void cuda_standin_put_ptr(void *data, const void *value)
{
    memcpy(data, &value, sizeof(value));
}

/* The range RANGE_* report: the reservation for VMM memory. */
static void cuda_standin_ptr_range(const cuda_standin_ptr_t *info, uintptr_t *base, size_t *size)
{
    if ((info->map == NULL) || (info->map->kind == CUDA_STANDIN_MAP_VMM)) {
        *base = info->resv_base;
        *size = info->resv_size;
    } else {
        *base = info->map->base;
        *size = info->map->size;
    }
}

static unsigned cuda_standin_ptr_handle_types(const cuda_standin_map_t *map)
{
    switch (map->kind) {
    case CUDA_STANDIN_MAP_VMM:
        return cuda_standin_vmm_phys_handle_types(map->phys);
    case CUDA_STANDIN_MAP_POOL:
        return cuda_standin_mem_pool_handle_types(map->pool);
    default:
        return CU_MEM_HANDLE_TYPE_NONE;
    }
}

/* Rights of the current context's device (of the owner without one). */
static unsigned cuda_standin_ptr_access(const cuda_standin_map_t *map)
{
    CUcontext ctx = cuda_standin_ctx_current();

    if (map->kind != CUDA_STANDIN_MAP_VMM) {
        return CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
    }
    return map->access[(ctx != NULL) ? ctx->device : map->device];
}

/* An address in a VMM reservation with nothing mapped there. */
static CUresult cuda_standin_attr_unmapped(const cuda_standin_ptr_t *info, int attr, void *data)
{
    if (info->resv_size == 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx is not a CUDA pointer",
                                  (unsigned long)info->addr);
    }
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MAPPED:
        cuda_standin_put_uint(data, 0);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        cuda_standin_put_u64(data, info->resv_base);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        cuda_standin_put_u64(data, info->resv_size);
        return CUDA_SUCCESS;
    default:
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx is reserved but not mapped",
                                  (unsigned long)info->addr);
    }
}

/* Page-locked host memory: the driver knows it (cuda.h: memory type host,
 * the context it was allocated in, that context's device, a buffer id);
 * pageable memory it does not. */
static CUresult cuda_standin_attr_host(const cuda_standin_host_info_t *host, uintptr_t addr,
                                       int attr, void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        cuda_standin_put_ptr(data, host->ctx);
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        cuda_standin_put_uint(data, CU_MEMORYTYPE_HOST);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: /* unified addressing: the same */
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        cuda_standin_put_ptr(data, (void *)addr);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        cuda_standin_put_uint(data, (host->ctx != NULL) ? (unsigned)host->ctx->device : 0);
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        cuda_standin_put_u64(data, host->buffer_id);
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        cuda_standin_put_u64(data, host->base);
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        cuda_standin_put_u64(data, host->size);
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        cuda_standin_put_ptr(data, NULL);
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        cuda_standin_put_uint(data, 1);
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        cuda_standin_put_uint(data, 0);
        break;
    default:
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "attribute %d of host memory", attr);
    }
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_attr_get(const cuda_standin_ptr_t *info, int attr, void *data)
{
    const cuda_standin_map_t *map = info->map;
    cuda_standin_host_info_t host;
    uintptr_t range_base;
    size_t range_size;

    if ((map == NULL) && (info->resv_size == 0) && cuda_standin_mem_host_info(info->addr, &host)) {
        return cuda_standin_attr_host(&host, info->addr, attr, data);
    }
    if (map == NULL) {
        return cuda_standin_attr_unmapped(info, attr, data);
    }
    cuda_standin_ptr_range(info, &range_base, &range_size);
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        cuda_standin_put_ptr(data, map->ctx);
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        cuda_standin_put_uint(data, CU_MEMORYTYPE_DEVICE); /* managed too: see cuda_standin_mem.c */
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        cuda_standin_put_u64(data, info->addr);
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (map->kind != CUDA_STANDIN_MAP_MANAGED) {
            return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                      "device memory has no host pointer");
        }
        cuda_standin_put_ptr(data, (void *)info->addr);
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        cuda_standin_put_uint(data, map->sync_memops);
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        cuda_standin_put_u64(data, map->buffer_id);
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        cuda_standin_put_uint(data, map->kind == CUDA_STANDIN_MAP_MANAGED);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        cuda_standin_put_uint(data, (unsigned)map->device);
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        cuda_standin_put_uint(data, map->kind == CUDA_STANDIN_MAP_ALLOC);
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        cuda_standin_put_u64(data, range_base);
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        cuda_standin_put_u64(data, range_size);
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        cuda_standin_put_uint(data, 1);
        break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        cuda_standin_put_uint(data, cuda_standin_ptr_handle_types(map));
        break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case 21: /* IS_HW_DECOMPRESS_CAPABLE */
        cuda_standin_put_uint(data, 0);
        break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        cuda_standin_put_uint(data, cuda_standin_ptr_access(map));
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        cuda_standin_put_ptr(data, map->pool);
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        cuda_standin_put_u64(data, map->size);
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        cuda_standin_put_ptr(data, (void *)map->base);
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        cuda_standin_put_u64(data, (map->kind == CUDA_STANDIN_MAP_VMM)
                                       ? cuda_standin_vmm_phys_id(map->phys)
                                       : map->buffer_id);
        break;
    default:
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "attribute %d not supported", attr);
    }
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_pointer_get_attribute(void *data, CUpointer_attribute attr,
                                                   CUdeviceptr ptr)
{
    cuda_standin_ptr_t info;

    if ((data == NULL) || (cuda_standin_attr_size((int)attr) == 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "attribute %d", (int)attr);
    }
    info = cuda_standin_ptr_lookup(ptr);
    cuda_standin_note("0x%llx attribute %d", (unsigned long long)ptr, (int)attr);
    return cuda_standin_attr_get(&info, (int)attr, data);
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUDA_STANDIN_CALL(cuPointerGetAttribute, CUDA_STANDIN_INITED,
                      cuda_standin_pointer_get_attribute(data, attribute, ptr));
}

/* The documented defaults for what the driver does not know: zero/NULL,
 * and CU_DEVICE_INVALID (-2) for the ordinal. */
static void cuda_standin_attr_default(int attr, void *data)
{
    memset(data, 0, cuda_standin_attr_size(attr));
    if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
        cuda_standin_put_uint(data, (unsigned)CU_DEVICE_INVALID);
    }
}

static CUresult cuda_standin_pointer_get_attributes(unsigned int count, CUpointer_attribute *attrs,
                                                    void **data, CUdeviceptr ptr)
{
    cuda_standin_ptr_t info;
    unsigned int i;
    size_t mark;

    if ((attrs == NULL) || (data == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (i = 0; i < count; ++i) {
        if ((data[i] == NULL) || (cuda_standin_attr_size((int)attrs[i]) == 0)) {
            return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "attribute %d", (int)attrs[i]);
        }
    }
    info = cuda_standin_ptr_lookup(ptr);
    cuda_standin_note("0x%llx: %s", (unsigned long long)ptr,
                      (info.map != NULL) ? "known" : "unknown, defaults");
    mark = cuda_standin_note_mark();
    for (i = 0; i < count; ++i) {
        /* An attribute the pointer has no value for reads as its default. */
        if (cuda_standin_attr_get(&info, (int)attrs[i], data[i]) != CUDA_SUCCESS) {
            cuda_standin_attr_default((int)attrs[i], data[i]);
            cuda_standin_note_rewind(mark);
        }
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr)
{
    CUDA_STANDIN_CALL(cuPointerGetAttributes, CUDA_STANDIN_INITED,
                      cuda_standin_pointer_get_attributes(numAttributes, attributes, data, ptr));
}

/* SYNC_MEMOPS makes synchronous copies and memsets on the memory complete
 * before they return (see cuda_standin_copy.c); nothing else is settable.
 * The driver takes it only for memory with a legacy allocation behind it
 * (cuMemAlloc, cuMemAllocManaged): virtual-memory mappings answer
 * CUDA_ERROR_NOT_SUPPORTED (seen by UCX and libfabric users), and so, here,
 * do stream-ordered pool memory and IPC-opened mappings, whose allocation
 * the process does not own; the conformance probe's record says which of
 * these a GPU confirmed.  CU_CTX_SYNC_MEMOPS covers every kind. */
static CUresult cuda_standin_pointer_set_attribute(const void *value, CUpointer_attribute attr,
                                                   CUdeviceptr ptr)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)ptr);
    unsigned int flag;

    if ((value == NULL) || (attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) || (map == NULL)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "attribute %d of 0x%llx", (int)attr,
                                  (unsigned long long)ptr);
    }
    if ((map->kind != CUDA_STANDIN_MAP_ALLOC) && (map->kind != CUDA_STANDIN_MAP_MANAGED)) {
        return cuda_standin_error(CUDA_ERROR_NOT_SUPPORTED,
                                  "SYNC_MEMOPS of 0x%llx: not a cuMemAlloc/cuMemAllocManaged "
                                  "allocation (use CU_CTX_SYNC_MEMOPS)",
                                  (unsigned long long)ptr);
    }
    memcpy(&flag, value, sizeof(flag));
    map->sync_memops = (flag != 0);
    return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUDA_STANDIN_CALL(cuPointerSetAttribute, CUDA_STANDIN_INITED,
                      cuda_standin_pointer_set_attribute(value, attribute, ptr));
}

static CUresult cuda_standin_get_address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)dptr);

    if (map == NULL) {
        return cuda_standin_error(CUDA_ERROR_NOT_FOUND, "0x%llx is not in an allocation",
                                  (unsigned long long)dptr);
    }
    if (pbase != NULL) {
        *pbase = (CUdeviceptr)map->base;
    }
    if (psize != NULL) {
        *psize = map->size;
    }
    cuda_standin_note("0x%llx in 0x%lx size %zu", (unsigned long long)dptr,
                      (unsigned long)map->base, map->size);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUDA_STANDIN_CALL(cuMemGetAddressRange, CUDA_STANDIN_INITED,
                      cuda_standin_get_address_range(pbase, psize, dptr));
}
