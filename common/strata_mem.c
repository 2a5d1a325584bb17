/*
 * Pointer classification (see strata_mem.h).
 *
 * Device memory can exist only once a CUDA driver is loaded in the process,
 * and an application may load it long after MPI_Init (mpi4py initialises
 * MPI at import, CuPy loads the driver later).  So "is a driver here" is
 * asked again whenever the process has loaded another shared object:
 * glibc counts loads (dl_phdr_info.dlpi_adds), and reading the count stops
 * after the first object.  Once the driver is found it stays (Strata opens
 * it RTLD_NODELETE) and every query goes to cuPointerGetAttributes, which
 * answers host memory with type 0 and no error.
 */
#define _GNU_SOURCE
#include "strata_mem.h"

#include "strata_cuda.h"

#include <dlfcn.h>
#include <link.h>

static int strata_mem_present;               /* latched: driver loaded and usable */
static unsigned long long strata_mem_seen_adds; /* dlpi_adds when last looked */

static int strata_mem_adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1; /* the count is the same in every entry: stop at the first */
}

static int strata_mem_driver_check(void)
{
    unsigned long long adds = 0;
    void *handle;

    (void)dl_iterate_phdr(strata_mem_adds_cb, &adds);
    if (adds == __atomic_load_n(&strata_mem_seen_adds, __ATOMIC_RELAXED)) {
        return 0;
    }
    __atomic_store_n(&strata_mem_seen_adds, adds, __ATOMIC_RELAXED);
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) {
        return 0;
    }
    dlclose(handle);
    if (strata_cuda_load() != 0) {
        return 0;
    }
    __atomic_store_n(&strata_mem_present, 1, __ATOMIC_RELEASE);
    return 1;
}

int strata_mem_driver_present(void)
{
    if (__builtin_expect(__atomic_load_n(&strata_mem_present, __ATOMIC_ACQUIRE), 1)) {
        return 1;
    }
    return strata_mem_driver_check();
}

int strata_mem_query(const void *ptr, strata_mem_info_t *info)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
    };
    CUmemorytype mem_type    = 0;
    unsigned is_managed      = 0;
    unsigned long long bufid = 0;
    int ordinal              = -1;
    CUdeviceptr start        = 0;
    size_t range             = 0;
    int legacy_ipc           = 0;
    CUmemoryPool pool        = NULL;
    void *values[]           = {&mem_type, &is_managed, &bufid,  &ordinal,
                                &start,    &range,      &legacy_ipc, &pool};
    CUdeviceptr mstart       = 0;
    size_t mrange            = 0;

    info->kind       = STRATA_MEM_HOST;
    info->ordinal    = -1;
    info->buffer_id  = 0;
    info->base       = 0;
    info->length     = 0;
    info->legacy_ipc = 0;
    info->from_pool  = 0;
    if ((strata_cuda_load() != 0) ||
        (strata_cuda.cuPointerGetAttributes(sizeof(attrs) / sizeof(attrs[0]), attrs, values,
                                            (CUdeviceptr)ptr) != CUDA_SUCCESS)) {
        return -1;
    }
    if ((mem_type != CU_MEMORYTYPE_DEVICE) && !is_managed) {
        return 0;
    }
    /* RANGE_* describe a VMM buffer's whole address reservation, which may
     * hold several mappings; cuMemGetAddressRange gives the one mapping (or
     * the allocation) containing the address, the unit that is exported. */
    if (strata_cuda.cuMemGetAddressRange(&mstart, &mrange, (CUdeviceptr)ptr) == CUDA_SUCCESS) {
        start = mstart;
        range = mrange;
    }
    info->kind       = is_managed ? STRATA_MEM_MANAGED : STRATA_MEM_DEVICE;
    info->ordinal    = ordinal;
    info->buffer_id  = bufid;
    info->base       = (uintptr_t)start;
    info->length     = range;
    info->legacy_ipc = legacy_ipc && !is_managed;
    info->from_pool  = (pool != NULL);
    return 0;
}

strata_mem_kind_t strata_mem_kind(const void *ptr, int *ordinal)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    };
    CUmemorytype mem_type = 0;
    unsigned is_managed   = 0;
    int dev               = -1;
    void *values[]        = {&mem_type, &is_managed, &dev};

    if (ordinal != NULL) {
        *ordinal = -1;
    }
    if ((ptr == NULL) || !strata_mem_driver_present() ||
        (strata_cuda.cuPointerGetAttributes(3, attrs, values, (CUdeviceptr)ptr) !=
         CUDA_SUCCESS)) {
        return STRATA_MEM_HOST;
    }
    if (ordinal != NULL) {
        *ordinal = dev;
    }
    if (is_managed) {
        return STRATA_MEM_MANAGED;
    }
    return (mem_type == CU_MEMORYTYPE_DEVICE) ? STRATA_MEM_DEVICE : STRATA_MEM_HOST;
}
