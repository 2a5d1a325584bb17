/*
 * Modules and kernel launches, for Strata's own kernels only.
 *
 * A GPU runs the machine code of a fatbin; the stand-in cannot.  What it can
 * run is the same kernel source compiled for the host
 * (common/kernels/strata_reduce_host.c), so:
 *  - cuModuleLoadData accepts an image that starts like a fatbin (or any
 *    image, with no check, when it does not: tests may pass their own);
 *  - cuModuleGetFunction finds a name only among Strata's host-compiled
 *    kernels (CUDA_ERROR_NOT_FOUND otherwise, as for a name the image lacks);
 *  - cuLaunchKernel copies the parameter (as the driver does at launch) and
 *    queues the kernel on the stream; it runs at a completion point, on the
 *    private aliases of the device memory its pointers name.  A pointer that
 *    is not device or managed memory of the stand-in, or a range that runs
 *    past its allocation, is what a GPU reports as an illegal address: a
 *    sticky fault, seen by the next synchronisation.
 * The grid only has to be valid: the host code runs the whole grid's work in
 * one call (the kernels stride over their elements).
 */
#include "cuda_standin.h"

#include "kernels/strata_reduce.h"

#include <stdlib.h>
#include <string.h>

/* Loaded modules, to tell a handle from a stale one (the CUDA_STANDIN_CALL
 * lock guards the list). */
struct CUmod_st {
    struct CUmod_st *next;
};

static struct CUmod_st *cuda_standin_modules;

static CUresult cuda_standin_module_load(CUmodule *module, const void *image)
{
    struct CUmod_st *m;

    if ((module == NULL) || (image == NULL)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "no module or no image");
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->next              = cuda_standin_modules;
    cuda_standin_modules = m;
    *module              = m;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CUDA_STANDIN_CALL(cuModuleLoadData, CUDA_STANDIN_IN_CTX, cuda_standin_module_load(module, image));
}

static int cuda_standin_module_loaded(CUmodule module)
{
    for (struct CUmod_st *m = cuda_standin_modules; m != NULL; m = m->next) {
        if (m == module) {
            return 1;
        }
    }
    return 0;
}

static CUresult cuda_standin_module_unload(CUmodule module)
{
    struct CUmod_st **pm;

    for (pm = &cuda_standin_modules; *pm != NULL; pm = &(*pm)->next) {
        if (*pm == module) {
            *pm = module->next;
            free(module);
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "not a loaded module");
}

CUresult cuModuleUnload(CUmodule hmod)
{
    CUDA_STANDIN_CALL(cuModuleUnload, CUDA_STANDIN_IN_CTX, cuda_standin_module_unload(hmod));
}

static CUresult cuda_standin_module_function(CUfunction *fn, CUmodule module, const char *name)
{
    if ((fn == NULL) || !cuda_standin_module_loaded(module) || (name == NULL)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "bad function, module or name");
    }
    for (const strata_reduce_host_kernel_t *k = strata_reduce_host_kernels; k->name; ++k) {
        if (strcmp(k->name, name) == 0) {
            *fn = (CUfunction)(uintptr_t)k;
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_NOT_FOUND, "%s: not one of Strata's kernels", name);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUDA_STANDIN_CALL(cuModuleGetFunction, CUDA_STANDIN_IN_CTX,
                      cuda_standin_module_function(hfunc, hmod, name));
}

/* A known kernel handle (cuModuleGetFunction's), or NULL. */
static const strata_reduce_host_kernel_t *cuda_standin_kernel_of(CUfunction fn)
{
    for (const strata_reduce_host_kernel_t *k = strata_reduce_host_kernels; k->name; ++k) {
        if ((CUfunction)(uintptr_t)k == fn) {
            return k;
        }
    }
    return NULL;
}

_Static_assert(sizeof(strata_reduce_args_t) <= sizeof(((cuda_standin_op_t *)0)->params),
               "a kernel's parameter must fit in the queued operation");

typedef struct cuda_standin_launch {
    CUfunction fn;
    unsigned grid[3], block[3];
    CUstream stream;
    void **params;
    void **extra;
} cuda_standin_launch_t;

static CUresult cuda_standin_launch(const cuda_standin_launch_t *l)
{
    const strata_reduce_host_kernel_t *k = cuda_standin_kernel_of(l->fn);
    cuda_standin_op_t op = {.kind = CUDA_STANDIN_OP_KERNEL};
    cuda_standin_stream_t *stream;
    CUresult status;

    if (k == NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "not a function of a loaded module");
    }
    if ((l->params == NULL) || (l->params[0] == NULL) || (l->extra != NULL)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "kernelParams must hold the one "
                                                            "parameter; extra is not supported");
    }
    if ((l->grid[0] * l->grid[1] * l->grid[2] == 0) || (l->block[0] * l->block[1] * l->block[2] == 0) ||
        (l->block[0] * l->block[1] * l->block[2] > 1024)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "grid %ux%ux%u, block %ux%ux%u",
                                  l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                                  l->block[2]);
    }
    status = cuda_standin_stream_get(l->stream, &stream);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    op.kernel = k;
    memcpy(op.params, l->params[0], sizeof(strata_reduce_args_t));
    op.device = cuda_standin_ctx_current()->device;
    op.ctx    = cuda_standin_ctx_current();
    status    = cuda_standin_stream_enqueue(stream, &op);
    if (status == CUDA_SUCCESS) {
        cuda_standin_count(CUDA_STANDIN_COUNT_LAUNCH);
        cuda_standin_count_kernel(k, op.params);
    }
    return status;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    cuda_standin_launch_t l = {f,       {gridDimX, gridDimY, gridDimZ},
                               {blockDimX, blockDimY, blockDimZ},
                               hStream, kernelParams, extra};

    (void)sharedMemBytes;
    CUDA_STANDIN_CALL(cuLaunchKernel, CUDA_STANDIN_IN_CTX, cuda_standin_launch(&l));
}

/* The alias of [addr, addr + len) if it lies in one device or managed
 * allocation the kernel may use, else NULL.  As on a GPU, memory this
 * process allocated (cuMemAlloc, pools) is for kernels of its own device and
 * context: another device's (without peer access, which the stand-in does
 * not model for it) or another context's is an illegal address.  IPC
 * mappings (opened with peer access enabled) and managed memory serve any. */
static void *cuda_standin_kernel_alias(uintptr_t addr, size_t len, int device, CUcontext ctx)
{
    cuda_standin_map_t *map = cuda_standin_map_find(addr);

    if ((map == NULL) || (addr + len > map->base + map->size)) {
        return NULL;
    }
    if (((map->kind == CUDA_STANDIN_MAP_ALLOC) || (map->kind == CUDA_STANDIN_MAP_POOL)) &&
        ((map->device != device) || ((map->ctx != NULL) && (map->ctx != ctx)))) {
        return NULL;
    }
    if ((map->kind == CUDA_STANDIN_MAP_VMM) &&
        ((map->access[device] & CU_MEM_ACCESS_FLAGS_PROT_READWRITE) !=
         CU_MEM_ACCESS_FLAGS_PROT_READWRITE)) {
        return NULL;
    }
    return map->alias + (addr - map->base);
}

void cuda_standin_kernel_run(const cuda_standin_op_t *op)
{
    strata_reduce_args_t args;
    size_t bytes;

    memcpy(&args, op->params, sizeof(args));
    bytes = (size_t)args.count * op->kernel->elem_size;
    if ((args.nsrc < 1) || (args.nsrc > STRATA_REDUCE_MAX_SRCS) || (args.nalso < 0) ||
        (args.nalso > STRATA_REDUCE_MAX_ALSO)) {
        cuda_standin_fault(CUDA_ERROR_LAUNCH_FAILED, "%s: %d inputs, %d more outputs",
                           op->kernel->name, args.nsrc, args.nalso);
        return;
    }
    if (bytes == 0) {
        return;
    }
    for (int j = 0; j < args.nsrc; ++j) {
        const void *alias = cuda_standin_kernel_alias((uintptr_t)args.src[j], bytes, op->device,
                                                      op->ctx);

        if (alias == NULL) {
            cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS,
                               "%s: input %d at %p (%zu bytes) is "
                               "not device memory of this device and context",
                               op->kernel->name, j, args.src[j], bytes);
            return;
        }
        args.src[j] = alias;
    }
    args.dst = cuda_standin_kernel_alias((uintptr_t)args.dst, bytes, op->device, op->ctx);
    if (args.dst == NULL) {
        cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS,
                           "%s: output at %p (%zu bytes) is not device "
                           "memory of this device and context",
                           op->kernel->name, ((const strata_reduce_args_t *)op->params)->dst,
                           bytes);
        return;
    }
    for (int j = 0; j < args.nalso; ++j) {
        void *alias = cuda_standin_kernel_alias((uintptr_t)args.also[j], bytes, op->device,
                                                op->ctx);

        if (alias == NULL) {
            cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS,
                               "%s: output %d at %p (%zu bytes) is not device memory of this "
                               "device and context",
                               op->kernel->name, j + 1, args.also[j], bytes);
            return;
        }
        args.also[j] = alias;
    }
    op->kernel->fn(args);
}
