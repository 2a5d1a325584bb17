/*
 * cuInit, devices and their attributes, primary contexts, the current context
 * of each thread, and cuGetProcAddress.
 */
#define _GNU_SOURCE /* dladdr */
#include "cuda_standin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define CUDA_STANDIN_CTX_MAGIC 0x43545843u /* "CXTC" */

typedef struct cuda_standin_device {
    struct CUctx_st primary;
    size_t used; /* device memory allocated on it */
} cuda_standin_device_t;

static int cuda_standin_inited;
static int cuda_standin_ndevices;
static cuda_standin_device_t cuda_standin_devices[CUDA_STANDIN_MAX_DEVICES];

/* Like the driver's, the current context is per thread and starts NULL:
 * code running on a thread that never set one must get
 * CUDA_ERROR_INVALID_CONTEXT, as it would on a GPU. */
static __thread CUcontext cuda_standin_current;

int cuda_standin_initialized(void)
{
    return cuda_standin_inited;
}

int cuda_standin_device_count(void)
{
    return cuda_standin_ndevices;
}

int cuda_standin_device_valid(int device)
{
    return (device >= 0) && (device < cuda_standin_ndevices);
}

/* Contexts an application made with cuCtxCreate (few: tests make one). */
#define CUDA_STANDIN_MAX_CREATED 16
static struct CUctx_st cuda_standin_created[CUDA_STANDIN_MAX_CREATED];

int cuda_standin_ctx_valid(CUcontext ctx)
{
    int i;

    for (i = 0; i < cuda_standin_ndevices; ++i) {
        if (ctx == &cuda_standin_devices[i].primary) {
            return ctx->retained > 0;
        }
    }
    for (i = 0; i < CUDA_STANDIN_MAX_CREATED; ++i) {
        if (ctx == &cuda_standin_created[i]) {
            return ctx->retained > 0;
        }
    }
    return 0;
}

CUcontext cuda_standin_ctx_current(void)
{
    /* A context released to zero is destroyed: it no longer counts. */
    return cuda_standin_ctx_valid(cuda_standin_current) ? cuda_standin_current : NULL;
}

CUresult cuda_standin_device_charge(int device, size_t size)
{
    cuda_standin_device_t *dev = &cuda_standin_devices[device];

    if (size > CUDA_STANDIN_DEVICE_MEMORY - dev->used) {
        return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY,
                                  "device %d: %zu bytes asked, %zu of %zu in use", device, size,
                                  dev->used, CUDA_STANDIN_DEVICE_MEMORY);
    }
    dev->used += size;
    return CUDA_SUCCESS;
}

void cuda_standin_device_uncharge(int device, size_t size)
{
    cuda_standin_devices[device].used -= size;
}

size_t cuda_standin_device_used(int device)
{
    return cuda_standin_devices[device].used;
}

void cuda_standin_device_forget(void)
{
    memset(cuda_standin_devices, 0, sizeof(cuda_standin_devices));
    cuda_standin_inited   = 0;
    cuda_standin_ndevices = 0;
    cuda_standin_current  = NULL;
}

static CUresult cuda_standin_init(unsigned int flags)
{
    CUresult status;
    int i;

    if (flags != 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    }
    if (cuda_standin_inited) {
        return CUDA_SUCCESS;
    }
    if (cuda_standin_config.devices == 0) {
        return cuda_standin_error(CUDA_ERROR_NO_DEVICE, "CUDA_STANDIN_DEVICES=0");
    }
    status = cuda_standin_vaspace_init();
    if (status != CUDA_SUCCESS) {
        return status;
    }
    for (i = 0; i < cuda_standin_config.devices; ++i) {
        cuda_standin_devices[i].primary.magic  = CUDA_STANDIN_CTX_MAGIC;
        cuda_standin_devices[i].primary.device = i;
    }
    cuda_standin_ndevices = cuda_standin_config.devices;
    cuda_standin_inited   = 1;
    cuda_standin_note("%d device(s)", cuda_standin_ndevices);
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuInit, CUDA_STANDIN_CALL_LOCK, cuda_standin_init(Flags));
}

static CUresult cuda_standin_driver_version(int *version)
{
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = CUDA_STANDIN_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    CUDA_STANDIN_CALL(cuDriverGetVersion, CUDA_STANDIN_ANYTIME,
                      cuda_standin_driver_version(driverVersion));
}

/* --- Devices --- */

static CUresult cuda_standin_device_check(CUdevice dev)
{
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_DEVICE, "no device %d (of %d)", dev,
                                  cuda_standin_ndevices);
    }
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_device_get_count(int *count)
{
    if (count == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *count = cuda_standin_ndevices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    CUDA_STANDIN_CALL(cuDeviceGetCount, CUDA_STANDIN_INITED, cuda_standin_device_get_count(count));
}

static CUresult cuda_standin_device_get(CUdevice *device, int ordinal)
{
    if (device == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(ordinal)) {
        return cuda_standin_device_check(ordinal);
    }
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUDA_STANDIN_CALL(cuDeviceGet, CUDA_STANDIN_INITED, cuda_standin_device_get(device, ordinal));
}

static CUresult cuda_standin_device_get_name(char *name, int len, CUdevice dev)
{
    if ((name == NULL) || (len <= 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    snprintf(name, (size_t)len, "CUDA stand-in (host memory) #%d", dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDeviceGetName, CUDA_STANDIN_INITED,
                      cuda_standin_device_get_name(name, len, dev));
}

/* The PCI address "0000:1<dev>:00.0": bus 0x10 + dev, device 0, domain 0. */
static int cuda_standin_device_pci_bus(CUdevice dev)
{
    return 0x10 + dev;
}

static int cuda_standin_device_attribute_value(CUdevice_attribute attrib, CUdevice dev)
{
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return cuda_standin_device_pci_bus(dev);
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return 9;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return 132;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        return 2;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
        return cuda_standin_config.mps;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: /* the driver's default since 11.7 */
        return 1;
    default:
        /* PCI device and domain ids, minor capability 0, and everything
         * the stand-in does not model (GPUDirect RDMA among them). */
        return 0;
    }
}

static CUresult cuda_standin_device_get_attribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    if ((pi == NULL) || ((int)attrib < 1) || (attrib >= CU_DEVICE_ATTRIBUTE_MAX)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "attribute %d", (int)attrib);
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    *pi = cuda_standin_device_attribute_value(attrib, dev);
    cuda_standin_note("attribute %d = %d", (int)attrib, *pi);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDeviceGetAttribute, CUDA_STANDIN_INITED,
                      cuda_standin_device_get_attribute(pi, attrib, dev));
}

/* Deterministic per device index, so that tests can compare UUIDs across
 * processes as Strata does to recognize the same GPU. */
static CUresult cuda_standin_device_get_uuid(CUuuid *uuid, CUdevice dev)
{
    static const char prefix[15] = {'c', 'u', 'd', 'a', '-', 's', 't', 'a',
                                    'n', 'd', '-', 'i', 'n', '-', '#'};

    if (uuid == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    memcpy(uuid->bytes, prefix, sizeof(prefix));
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDeviceGetUuid, CUDA_STANDIN_INITED,
                      cuda_standin_device_get_uuid(uuid, dev));
}

static CUresult cuda_standin_device_get_pci_bus_id(char *bus_id, int len, CUdevice dev)
{
    if ((bus_id == NULL) || (len <= 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    snprintf(bus_id, (size_t)len, "0000:%02x:00.0", cuda_standin_device_pci_bus(dev));
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDeviceGetPCIBusId, CUDA_STANDIN_INITED,
                      cuda_standin_device_get_pci_bus_id(pciBusId, len, dev));
}

static CUresult cuda_standin_device_total_mem(size_t *bytes, CUdevice dev)
{
    if (bytes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    *bytes = CUDA_STANDIN_DEVICE_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDeviceTotalMem, CUDA_STANDIN_INITED,
                      cuda_standin_device_total_mem(bytes, dev));
}

/* --- Contexts --- */

static CUresult cuda_standin_primary_retain(CUcontext *pctx, CUdevice dev)
{
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    *pctx = &cuda_standin_devices[dev].primary;
    ++(*pctx)->retained;
    cuda_standin_note("device %d ctx %p refs %d", dev, (void *)*pctx, (*pctx)->retained);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDevicePrimaryCtxRetain, CUDA_STANDIN_INITED,
                      cuda_standin_primary_retain(pctx, dev));
}

/* Released to zero, the context counts as destroyed (calls made with it
 * current fail); unlike the driver, its allocations are kept. */
static CUresult cuda_standin_primary_release(CUdevice dev)
{
    struct CUctx_st *ctx;

    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    ctx = &cuda_standin_devices[dev].primary;
    if (ctx->retained == 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_CONTEXT, "primary context not retained");
    }
    --ctx->retained;
    cuda_standin_note("device %d refs %d", dev, ctx->retained);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDevicePrimaryCtxRelease, CUDA_STANDIN_INITED,
                      cuda_standin_primary_release(dev));
}

/* What a context made goes with it (as on a GPU): its allocations and the
 * peers' memory it opened by IPC.  Queued work runs first. */
static void cuda_standin_ctx_teardown(CUcontext ctx)
{
    size_t i;

    (void)cuda_standin_stream_finish_all();
    for (i = cuda_standin_map_count(); i > 0; --i) {
        cuda_standin_map_t *map = cuda_standin_map_at(i - 1);

        if ((map->ctx == ctx) &&
            ((map->kind == CUDA_STANDIN_MAP_ALLOC) || (map->kind == CUDA_STANDIN_MAP_IPC))) {
            cuda_standin_note("ctx %p gone: buffer id 0x%llx at 0x%lx dropped", (void *)ctx,
                              map->buffer_id, (unsigned long)map->base);
            cuda_standin_map_destroy(map);
        }
    }
}

/* The driver destroys everything of the primary context and leaves it to
 * be made again at the next use; retained handles stay valid. */
static CUresult cuda_standin_primary_reset(CUdevice dev)
{
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    cuda_standin_ctx_teardown(&cuda_standin_devices[dev].primary);
    cuda_standin_devices[dev].primary.flags = 0;
    return CUDA_SUCCESS;
}

CUresult cuda_standin_patchable_cuDevicePrimaryCtxReset(CUdevice dev)
{
    CUDA_STANDIN_CALL(cuDevicePrimaryCtxReset, CUDA_STANDIN_INITED,
                      cuda_standin_primary_reset(dev));
}

/* Active while retained; the flags are the context's (cuCtxSetFlags). */
static CUresult cuda_standin_primary_get_state(CUdevice dev, unsigned *flags, int *active)
{
    if ((flags == NULL) || (active == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    *flags  = cuda_standin_devices[dev].primary.flags;
    *active = cuda_standin_devices[dev].primary.retained > 0;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    CUDA_STANDIN_CALL(cuDevicePrimaryCtxGetState, CUDA_STANDIN_INITED,
                      cuda_standin_primary_get_state(dev, flags, active));
}

/* Peer access between two distinct devices: the stand-in's devices share
 * one address space, so every pair can; a device is not its own peer. */
static CUresult cuda_standin_can_access_peer(int *can, CUdevice dev, CUdevice peer)
{
    if (can == NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "NULL result");
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    if (!cuda_standin_device_valid(peer)) {
        return cuda_standin_device_check(peer);
    }
    *can = (dev != peer);
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CUDA_STANDIN_CALL(cuDeviceCanAccessPeer, CUDA_STANDIN_INITED,
                      cuda_standin_can_access_peer(canAccessPeer, dev, peerDev));
}

static CUresult cuda_standin_ctx_get_current(CUcontext *pctx)
{
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pctx = cuda_standin_current;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUDA_STANDIN_CALL(cuCtxGetCurrent, CUDA_STANDIN_INITED, cuda_standin_ctx_get_current(pctx));
}

static CUresult cuda_standin_ctx_set_current(CUcontext ctx)
{
    if ((ctx != NULL) && !cuda_standin_ctx_valid(ctx)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_CONTEXT, "%p is not a live context",
                                  (void *)ctx);
    }
    cuda_standin_current = ctx;
    cuda_standin_note("ctx %p", (void *)ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUDA_STANDIN_CALL(cuCtxSetCurrent, CUDA_STANDIN_INITED, cuda_standin_ctx_set_current(ctx));
}

static CUresult cuda_standin_ctx_get_device(CUdevice *device)
{
    if (device == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *device = cuda_standin_ctx_current()->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    CUDA_STANDIN_CALL(cuCtxGetDevice, CUDA_STANDIN_IN_CTX, cuda_standin_ctx_get_device(device));
}

/* Flags cuCtxSetFlags accepts (cuda.h: "see cuDevicePrimaryCtxSetFlags"):
 * the scheduling policy, MAP_HOST, LMEM_RESIZE_TO_MAX, COREDUMP_ENABLE,
 * USER_COREDUMP_ENABLE and SYNC_MEMOPS. */
#define CUDA_STANDIN_CTX_SETTABLE_FLAGS \
    (CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE | \
     CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS)

int cuda_standin_ctx_sync_memops(void)
{
    CUcontext ctx = cuda_standin_ctx_current();

    return (ctx != NULL) && (ctx->flags & CU_CTX_SYNC_MEMOPS);
}

static CUresult cuda_standin_ctx_get_flags(unsigned int *flags)
{
    if (flags == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *flags = cuda_standin_ctx_current()->flags;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUDA_STANDIN_CALL(cuCtxGetFlags, CUDA_STANDIN_IN_CTX, cuda_standin_ctx_get_flags(flags));
}

/* The flags replace the current ones, as the driver's do. */
static CUresult cuda_standin_ctx_set_flags(unsigned int flags)
{
    if ((flags & ~(unsigned)CUDA_STANDIN_CTX_SETTABLE_FLAGS) != 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    cuda_standin_ctx_current()->flags = flags;
    cuda_standin_note("ctx %p flags 0x%x", (void *)cuda_standin_ctx_current(), flags);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags)
{
    CUDA_STANDIN_CALL(cuCtxSetFlags, CUDA_STANDIN_IN_CTX, cuda_standin_ctx_set_flags(flags));
}

/* A context of the application's own: current once made; its memory is not
 * the primary context's (kernels of another context may not use it). */
static CUresult cuda_standin_ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    int i;

    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cuda_standin_device_valid(dev)) {
        return cuda_standin_device_check(dev);
    }
    for (i = 0; i < CUDA_STANDIN_MAX_CREATED; ++i) {
        struct CUctx_st *ctx = &cuda_standin_created[i];

        if (ctx->retained == 0) {
            ctx->magic           = cuda_standin_devices[dev].primary.magic;
            ctx->device          = dev;
            ctx->retained        = 1;
            ctx->created         = 1;
            ctx->flags           = flags & CUDA_STANDIN_CTX_SETTABLE_FLAGS;
            cuda_standin_current = ctx;
            *pctx                = ctx;
            cuda_standin_note("device %d ctx %p", dev, (void *)ctx);
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_OUT_OF_MEMORY, "more than %d contexts",
                              CUDA_STANDIN_MAX_CREATED);
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    (void)params;
    CUDA_STANDIN_CALL(cuCtxCreate, CUDA_STANDIN_INITED, cuda_standin_ctx_create(pctx, flags, dev));
}

static CUresult cuda_standin_ctx_destroy(CUcontext ctx)
{
    if ((ctx == NULL) || !ctx->created || !cuda_standin_ctx_valid(ctx)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_CONTEXT, "%p is not a created context",
                                  (void *)ctx);
    }
    cuda_standin_ctx_teardown(ctx);
    ctx->retained = 0;
    if (cuda_standin_current == ctx) {
        cuda_standin_current = NULL;
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    CUDA_STANDIN_CALL(cuCtxDestroy, CUDA_STANDIN_INITED, cuda_standin_ctx_destroy(ctx));
}

/* --- cuGetProcAddress --- */

/* Our own entry points only: dlsym on this library's handle would also find
 * its dependencies' symbols, so the result must lie in this object. */
static void *cuda_standin_self_symbol(const char *name)
{
    Dl_info self, found;
    void *handle, *sym;

    if ((dladdr((void *)cuda_standin_self_symbol, &self) == 0) || (self.dli_fname == NULL)) {
        return NULL;
    }
    handle = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) {
        return NULL;
    }
    sym = dlsym(handle, name);
    if ((sym != NULL) && ((dladdr(sym, &found) == 0) || (found.dli_fbase != self.dli_fbase))) {
        sym = NULL;
    }
    dlclose(handle);
    return sym;
}

/* The driver returns the newest version of a symbol for the caller's CUDA
 * version; the stand-in exports exactly one version of each, so the plain
 * name or its _v2 is the one.  Per-thread-stream variants are not separate:
 * the default stream is shared (see cuda_standin_stream.c). */
static CUresult cuda_standin_get_proc_address(const char *symbol, void **pfn, int cuda_version,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *status)
{
    char versioned[128];
    void *sym = NULL;

    if ((symbol == NULL) || (pfn == NULL) || (flags > 3)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (strncmp(symbol, "cu", 2) == 0) {
        sym = cuda_standin_self_symbol(symbol);
        if ((sym == NULL) &&
            ((size_t)snprintf(versioned, sizeof(versioned), "%s_v2", symbol) < sizeof(versioned))) {
            sym = cuda_standin_self_symbol(versioned);
        }
    }
    *pfn = sym;
    if (status != NULL) {
        *status = (sym != NULL) ? CU_GET_PROC_ADDRESS_SUCCESS
                                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    if (sym == NULL) {
        return cuda_standin_error(CUDA_ERROR_NOT_FOUND, "%s (version %d) not exported", symbol,
                                  cuda_version);
    }
    cuda_standin_note("%s -> %p", symbol, sym);
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *symbolStatus)
{
    /* No lock: dlopen takes the loader lock, and a library constructor
     * holding it may call into the driver. */
    CUDA_STANDIN_CALL(cuGetProcAddress, CUDA_STANDIN_ANYTIME,
                      cuda_standin_get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus));
}
