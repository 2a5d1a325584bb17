/*
 * standin_bistro_test: the stand-in's allocation entry points can be hooked
 * with UCX's libucm "bistro" patcher, as Strata's memory-type hooks do.
 *
 *   LD_LIBRARY_PATH=<builddir>/test/cuda_standin/lib ./standin_bistro_test
 *
 * Patches every patchable entry point and restores it, then hooks
 * cuMemAlloc_v2 and cuMemFree_v2 and checks that calls reach the hooks and
 * that the hooks reach the originals (through the relocated prologue).
 * Prints what it checks; exits 1 at the first failure.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From UCX 1.13.1's ucm/bistro/bistro.h; ucs_status_t is a packed enum. */
typedef int8_t bt_ucs_status_t;
typedef struct ucm_bistro_restore_point ucm_bistro_restore_point_t;
bt_ucs_status_t ucm_bistro_patch(void *func_ptr, void *hook, const char *symbol, void **orig_func_p,
                                 ucm_bistro_restore_point_t **rp);
bt_ucs_status_t ucm_bistro_restore(ucm_bistro_restore_point_t *rp);

static const char *const bt_patchable[] = {
    "cuMemAlloc_v2",      "cuMemAllocPitch_v2", "cuMemFree_v2",
    "cuMemAllocManaged",  "cuMemAllocAsync",    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",     "cuMemCreate",        "cuMemRelease",
    "cuMemMap",           "cuMemUnmap",         "cuIpcOpenMemHandle_v2",
    "cuIpcCloseMemHandle"};

/* push %rbp; mov %rsp,%rbp; pop %rbp, three times: see cuda_standin_entry.c */
static const unsigned char bt_prologue[15] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0x55, 0x48, 0x89,
                                              0xe5, 0x5d, 0x55, 0x48, 0x89, 0xe5, 0x5d};

static void *bt_driver;
static int bt_checks;

static void bt_fail(const char *what, long long expected, long long got)
{
    printf("FAIL %s: expected %lld, got %lld\n", what, expected, got);
    exit(1);
}

static void bt_expect(const char *what, long long got, long long expected)
{
    ++bt_checks;
    if (got != expected) {
        bt_fail(what, expected, got);
    }
}

static void *bt_sym(const char *name)
{
    void *sym = dlsym(bt_driver, name);

    if (sym == NULL) {
        printf("FAIL dlsym(%s): %s\n", name, dlerror());
        exit(1);
    }
    return sym;
}

static CUresult (*bt_orig_alloc)(CUdeviceptr *, size_t);
static CUresult (*bt_orig_free)(CUdeviceptr);
static int bt_alloc_calls, bt_free_calls;

static CUresult bt_hook_alloc(CUdeviceptr *dptr, size_t size)
{
    ++bt_alloc_calls;
    return bt_orig_alloc(dptr, size);
}

static CUresult bt_hook_free(CUdeviceptr dptr)
{
    ++bt_free_calls;
    return bt_orig_free(dptr);
}

static void bt_unused_hook(void)
{
}

/* Every entry point: the prologue is there, and bistro patches it. */
static void bt_patch_all(void)
{
    ucm_bistro_restore_point_t *rp;
    void *orig, *fn;
    size_t i;

    for (i = 0; i < sizeof(bt_patchable) / sizeof(bt_patchable[0]); ++i) {
        fn = bt_sym(bt_patchable[i]);
        bt_expect(bt_patchable[i], memcmp(fn, bt_prologue, sizeof(bt_prologue)) == 0, 1);
        bt_expect("ucm_bistro_patch", ucm_bistro_patch(fn, (void *)bt_unused_hook, bt_patchable[i],
                                                       &orig, &rp),
                  0);
        bt_expect("ucm_bistro_restore", ucm_bistro_restore(rp), 0);
        bt_expect("prologue back after restore",
                  memcmp(fn, bt_prologue, sizeof(bt_prologue)) == 0, 1);
    }
    printf("PASS bistro patches and restores all %zu patchable entry points\n", i);
}

static void bt_setup_context(void)
{
    CUresult (*init)(unsigned)                     = bt_sym("cuInit");
    CUresult (*retain)(CUcontext *, CUdevice)      = bt_sym("cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext)             = bt_sym("cuCtxSetCurrent");
    CUcontext ctx;

    bt_expect("cuInit", init(0), CUDA_SUCCESS);
    bt_expect("cuDevicePrimaryCtxRetain", retain(&ctx, 0), CUDA_SUCCESS);
    bt_expect("cuCtxSetCurrent", set_current(ctx), CUDA_SUCCESS);
}

static void bt_hooked_calls(void)
{
    CUresult (*alloc)(CUdeviceptr *, size_t)              = bt_sym("cuMemAlloc_v2");
    CUresult (*mem_free)(CUdeviceptr)                    = bt_sym("cuMemFree_v2");
    CUresult (*get_attr)(void *, CUpointer_attribute, CUdeviceptr) =
            bt_sym("cuPointerGetAttribute");
    ucm_bistro_restore_point_t *rp_alloc, *rp_free;
    unsigned int type = 0;
    CUdeviceptr ptr   = 0;

    bt_expect("patch cuMemAlloc_v2",
              ucm_bistro_patch((void *)alloc, (void *)bt_hook_alloc, "cuMemAlloc_v2",
                               (void **)&bt_orig_alloc, &rp_alloc),
              0);
    bt_expect("patch cuMemFree_v2",
              ucm_bistro_patch((void *)mem_free, (void *)bt_hook_free, "cuMemFree_v2",
                               (void **)&bt_orig_free, &rp_free),
              0);
    bt_expect("hooked cuMemAlloc_v2", alloc(&ptr, 1 << 20), CUDA_SUCCESS);
    bt_expect("alloc hook calls", bt_alloc_calls, 1);
    bt_expect("memory type of the hooked allocation",
              get_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr), CUDA_SUCCESS);
    bt_expect("CU_MEMORYTYPE_DEVICE", type, CU_MEMORYTYPE_DEVICE);
    bt_expect("hooked cuMemAlloc_v2(0) passes the error back", alloc(&ptr, 0),
              CUDA_ERROR_INVALID_VALUE);
    bt_expect("hooked cuMemFree_v2", mem_free(ptr), CUDA_SUCCESS);
    bt_expect("free hook calls", bt_free_calls, 1);
    printf("PASS hooks on cuMemAlloc_v2/cuMemFree_v2 run and call the originals\n");

    bt_expect("restore cuMemAlloc_v2", ucm_bistro_restore(rp_alloc), 0);
    bt_expect("restore cuMemFree_v2", ucm_bistro_restore(rp_free), 0);
    bt_expect("unhooked cuMemAlloc_v2", alloc(&ptr, 4096), CUDA_SUCCESS);
    bt_expect("unhooked cuMemFree_v2", mem_free(ptr), CUDA_SUCCESS);
    bt_expect("no hook calls after restore", bt_alloc_calls + bt_free_calls, 3);
    printf("PASS restored entry points bypass the hooks\n");
}

int main(void)
{
    char name[128];
    CUresult (*get_name)(char *, int, CUdevice);

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* As Strata opens it (common/strata_cuda.c). */
    bt_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (bt_driver == NULL) {
        printf("FAIL dlopen(libcuda.so.1): %s\n", dlerror());
        return 1;
    }
    bt_setup_context();
    get_name = bt_sym("cuDeviceGetName");
    if ((get_name(name, sizeof(name), 0) != CUDA_SUCCESS) ||
        (strncmp(name, "CUDA stand-in", 13) != 0)) {
        printf("FAIL libcuda.so.1 is not the stand-in; put its lib/ first in LD_LIBRARY_PATH\n");
        return 1;
    }
    bt_patch_all();
    bt_hooked_calls();
    printf("standin_bistro_test: all %d checks passed\n", bt_checks);
    return 0;
}
