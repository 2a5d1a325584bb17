/*
 * The CUDA driver API, opened at run time (see strata_cuda.h).
 */
#include "strata_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

strata_cuda_api_t strata_cuda;

static pthread_once_t strata_cuda_once = PTHREAD_ONCE_INIT;
static strata_cuda_state_t strata_cuda_load_state = STRATA_CUDA_NOT_LOADED;
static char strata_cuda_load_error[256];
static void *strata_cuda_handle;

/* Two levels so that cuda.h's renaming macros expand first:
 * STRATA_CUDA_SYMBOL(cuMemAlloc) is "cuMemAlloc_v2". */
#define STRATA_CUDA_SYMBOL2(_name) #_name
#define STRATA_CUDA_SYMBOL(_name)  STRATA_CUDA_SYMBOL2(_name)

typedef struct strata_cuda_sym {
    const char *name;
    void **ptr;
    int required;
} strata_cuda_sym_t;

#define STRATA_CUDA_SYM_REQ(_name) {STRATA_CUDA_SYMBOL(_name), (void **)&strata_cuda._name, 1},
#define STRATA_CUDA_SYM_OPT(_name) {STRATA_CUDA_SYMBOL(_name), (void **)&strata_cuda._name, 0},

static const strata_cuda_sym_t strata_cuda_syms[] = {
    STRATA_CUDA_FUNCS(STRATA_CUDA_SYM_REQ, STRATA_CUDA_SYM_OPT)
    {NULL, NULL, 0}
};

static void strata_cuda_fail(strata_cuda_state_t state, const char *fmt, const char *arg)
{
    strata_cuda_load_state = state;
    snprintf(strata_cuda_load_error, sizeof(strata_cuda_load_error), fmt, arg);
}

static int strata_cuda_resolve_all(void)
{
    const strata_cuda_sym_t *sym;

    for (sym = strata_cuda_syms; sym->name != NULL; ++sym) {
        *sym->ptr = dlsym(strata_cuda_handle, sym->name);
        if ((*sym->ptr == NULL) && sym->required) {
            strata_cuda_fail(STRATA_CUDA_BAD_DRIVER,
                             "the CUDA driver lacks %s (driver too old)", sym->name);
            return -1;
        }
    }
    return 0;
}

static void strata_cuda_load_once(void)
{
    char res_str[160];
    CUresult res;

    /* RTLD_NODELETE: UCX and our hooks keep pointers into the driver for
     * the life of the process. */
    strata_cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (strata_cuda_handle == NULL) {
        strata_cuda_fail(STRATA_CUDA_NO_DRIVER, "libcuda.so.1 not loadable: %s", dlerror());
        return;
    }
    if (strata_cuda_resolve_all() != 0) {
        return;
    }
    res = strata_cuda.cuInit(0);
    if (res != CUDA_SUCCESS) {
        strata_cuda_fail(STRATA_CUDA_BAD_DRIVER, "cuInit failed: %s",
                         strata_cuda_result_str(res, res_str, sizeof(res_str)));
        return;
    }
    strata_cuda_load_state = STRATA_CUDA_READY;
}

int strata_cuda_load(void)
{
    pthread_once(&strata_cuda_once, strata_cuda_load_once);
    return (strata_cuda_load_state == STRATA_CUDA_READY) ? 0 : -1;
}

strata_cuda_state_t strata_cuda_state(void)
{
    return strata_cuda_load_state;
}

const char *strata_cuda_error(void)
{
    return (strata_cuda_load_state == STRATA_CUDA_READY) ? "" : strata_cuda_load_error;
}

void *strata_cuda_driver_handle(void)
{
    return strata_cuda_handle;
}

const char *strata_cuda_result_str(CUresult res, char *buf, size_t max)
{
    const char *name = NULL, *desc = NULL;

    if (strata_cuda.cuGetErrorName != NULL) {
        (void)strata_cuda.cuGetErrorName(res, &name);
    }
    if (strata_cuda.cuGetErrorString != NULL) {
        (void)strata_cuda.cuGetErrorString(res, &desc);
    }
    snprintf(buf, max, "%s (%s)", name ? name : "CUDA error", desc ? desc : "no description");
    return buf;
}

int strata_cuda_has_vmm(void)
{
    return (strata_cuda.cuMemCreate != NULL) && (strata_cuda.cuMemRelease != NULL) &&
           (strata_cuda.cuMemMap != NULL) && (strata_cuda.cuMemUnmap != NULL) &&
           (strata_cuda.cuMemSetAccess != NULL) && (strata_cuda.cuMemAddressReserve != NULL) &&
           (strata_cuda.cuMemAddressFree != NULL) &&
           (strata_cuda.cuMemRetainAllocationHandle != NULL) &&
           (strata_cuda.cuMemGetAllocationPropertiesFromHandle != NULL) &&
           (strata_cuda.cuMemExportToShareableHandle != NULL) &&
           (strata_cuda.cuMemImportFromShareableHandle != NULL);
}

int strata_cuda_device_count(void)
{
    int count = 0;

    if ((strata_cuda_load() != 0) || (strata_cuda.cuDeviceGetCount(&count) != CUDA_SUCCESS)) {
        return 0;
    }
    return count;
}

int strata_cuda_ctx_ensure(CUdeviceptr ptr)
{
    CUcontext ctx = NULL;
    CUdevice dev  = 0;
    int ordinal   = 0;

    if (strata_cuda_load() != 0) {
        return -1;
    }
    if ((strata_cuda.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS) && (ctx != NULL)) {
        return 0;
    }
    if ((ptr != 0) &&
        (strata_cuda.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) !=
         CUDA_SUCCESS)) {
        ordinal = 0;
    }
    /* The primary context stays retained: it is the one the CUDA runtime
     * shares, and releasing it could destroy the application's state. */
    if ((strata_cuda.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) ||
        (strata_cuda.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)) {
        return -1;
    }
    if (strata_cuda.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        (void)strata_cuda.cuDevicePrimaryCtxRelease(dev);
        return -1;
    }
    return 0;
}

/* Primary contexts this process retained, by device ordinal: retained once
 * and kept, as strata_cuda_ctx_ensure() keeps them.  Read and published
 * without a lock: the allocation hooks ask for them (common/strata_mem.c),
 * and no driver call is made under a lock a hook may take. */
#define STRATA_CUDA_MAX_DEVICES 64
static CUcontext strata_cuda_primary[STRATA_CUDA_MAX_DEVICES];

CUcontext strata_cuda_primary_ctx(int ordinal)
{
    CUcontext ctx = NULL, kept = NULL;
    CUdevice dev;

    if ((ordinal < 0) || (ordinal >= STRATA_CUDA_MAX_DEVICES)) {
        return NULL;
    }
    ctx = __atomic_load_n(&strata_cuda_primary[ordinal], __ATOMIC_ACQUIRE);
    if ((ctx != NULL) || (strata_cuda.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) ||
        (strata_cuda.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)) {
        return ctx;
    }
    /* Another thread may have retained it meanwhile: one retain is kept. */
    if (!__atomic_compare_exchange_n(&strata_cuda_primary[ordinal], &kept, ctx, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        (void)strata_cuda.cuDevicePrimaryCtxRelease(dev);
        ctx = kept;
    }
    return ctx;
}

int strata_cuda_ctx_push(int ordinal, CUcontext *saved)
{
    CUcontext current = NULL, want;

    *saved = STRATA_CUDA_CTX_UNCHANGED;
    if ((strata_cuda_load() != 0) || (strata_cuda.cuCtxGetCurrent(&current) != CUDA_SUCCESS)) {
        return -1;
    }
    if (ordinal < 0) {
        if (current != NULL) {
            return 0; /* any context will do */
        }
        ordinal = 0;
    }
    want = strata_cuda_primary_ctx(ordinal);
    if (want == NULL) {
        return -1;
    }
    if (current == want) {
        return 0;
    }
    if (strata_cuda.cuCtxSetCurrent(want) != CUDA_SUCCESS) {
        return -1;
    }
    *saved = current;
    return 0;
}

CUcontext strata_cuda_primary_ctx_retained(int ordinal)
{
    if ((ordinal < 0) || (ordinal >= STRATA_CUDA_MAX_DEVICES)) {
        return NULL;
    }
    return __atomic_load_n(&strata_cuda_primary[ordinal], __ATOMIC_ACQUIRE);
}

int strata_cuda_current_device(int fallback)
{
    CUcontext current = NULL;
    CUdevice dev;

    if ((strata_cuda_load() == 0) && (strata_cuda.cuCtxGetCurrent(&current) == CUDA_SUCCESS) &&
        (current != NULL) && (strata_cuda.cuCtxGetDevice(&dev) == CUDA_SUCCESS)) {
        return (int)dev;
    }
    return fallback;
}

int strata_cuda_primary_reaches(CUdeviceptr ptr, int ordinal)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_CONTEXT};
    int dev                     = -1;
    CUcontext ctx               = NULL;
    void *values[]              = {&dev, &ctx};

    if ((strata_cuda_load() != 0) ||
        (strata_cuda.cuPointerGetAttributes(2, attrs, values, ptr) != CUDA_SUCCESS) ||
        (dev != ordinal)) {
        return 0;
    }
    return (ctx == NULL) || (ctx == strata_cuda_primary_ctx(ordinal));
}

void strata_cuda_ctx_pop(CUcontext saved)
{
    if (saved != STRATA_CUDA_CTX_UNCHANGED) {
        (void)strata_cuda.cuCtxSetCurrent(saved);
    }
}
