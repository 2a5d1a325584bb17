/*
 * standin_selftest: initialization, devices and their attributes, contexts,
 * error strings and cuGetProcAddress.
 */
#include "standin_selftest.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* --- Initialization, devices, contexts --- */

static void st_test_before_init(void)
{
    int count = -1, version = 0;

    st_group_begin("before cuInit: NOT_INITIALIZED except version/strings");
    ST_CU(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    ST_CU(cuCtxSetCurrent(NULL), CUDA_ERROR_NOT_INITIALIZED);
    ST_OK(cuDriverGetVersion(&version));
    ST_EQ("cuDriverGetVersion", version, 13000);
    ST_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuInit(0));
    ST_OK(cuInit(0));
    st_group_end();
}

static void st_test_device(CUdevice dev)
{
    static const struct {
        CUdevice_attribute attr;
        int value;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
        {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
        {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
        {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
        {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
        {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 0},
    };
    char name[128], expect[128], bus[32];
    size_t i, total = 0;
    CUuuid uuid;
    int value;

    ST_OK(cuDeviceGetName(name, sizeof(name), dev));
    snprintf(expect, sizeof(expect), "CUDA stand-in (host memory) #%d", dev);
    ST_EQ("device name matches", strcmp(name, expect), 0);
    ST_OK(cuDeviceGetPCIBusId(bus, sizeof(bus), dev));
    snprintf(expect, sizeof(expect), "0000:1%d:00.0", dev);
    ST_EQ("PCI bus id matches", strcmp(bus, expect), 0);
    ST_OK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev));
    ST_EQ("PCI_BUS_ID", value, 0x10 + dev);
    for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); ++i) {
        ST_OK(cuDeviceGetAttribute(&value, attrs[i].attr, dev));
        ST_EQ("device attribute", value, attrs[i].value);
    }
    ST_OK(cuDeviceGetUuid(&uuid, dev));
    ST_EQ("uuid last byte is the index", (unsigned char)uuid.bytes[15], dev);
    ST_OK(cuDeviceTotalMem(&total, dev));
    ST_TRUE("total memory >= 1 GiB", total >= (1ul << 30));
}

static void st_test_devices(void)
{
    CUuuid uuid0, uuid1;
    CUdevice dev;
    int count = 0, value;

    st_group_begin("devices: names, PCI ids, UUIDs, attributes");
    ST_OK(cuDeviceGetCount(&count));
    ST_EQ("device count (CUDA_STANDIN_DEVICES)", count, ST_DEVICES);
    for (dev = 0; dev < count; ++dev) {
        st_test_device(dev);
    }
    ST_CU(cuDeviceGet(&dev, ST_DEVICES), CUDA_ERROR_INVALID_DEVICE);
    ST_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuDeviceGetUuid(&uuid0, 0));
    ST_OK(cuDeviceGetUuid(&uuid1, 1));
    ST_TRUE("UUIDs of two devices differ", memcmp(&uuid0, &uuid1, sizeof(uuid0)) != 0);
    st_group_end();
}

/* Run on a fresh thread: no context there until it sets one. */
static void *st_thread_without_ctx(void *arg)
{
    CUcontext ctx = (CUcontext)1;
    CUdeviceptr ptr;

    (void)arg;
    ST_OK(cuCtxGetCurrent(&ctx));
    ST_EQ("a new thread's current context", (uintptr_t)ctx, 0);
    ST_CU(cuMemAlloc(&ptr, 4096), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    return NULL;
}

static void st_test_contexts(void)
{
    CUcontext ctx = (CUcontext)1, ctx1, current;
    CUipcMemHandle handle;
    CUdevice dev = -1;
    CUdeviceptr ptr;
    CUstream stream;
    CUevent event;
    pthread_t thread;
    char host[16];

    st_group_begin("contexts: none current -> CUDA_ERROR_INVALID_CONTEXT");
    ST_OK(cuCtxGetCurrent(&ctx));
    ST_EQ("current context before cuCtxSetCurrent", (uintptr_t)ctx, 0);
    ST_CU(cuMemAlloc(&ptr, 4096), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuMemAllocManaged(&ptr, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuMemcpyHtoD(0x1000, host, sizeof(host)), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuStreamCreate(&stream, 0), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuEventCreate(&event, 0), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuIpcGetMemHandle(&handle, 0x1000), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
    ST_CU(cuCtxSetCurrent((CUcontext)&handle), CUDA_ERROR_INVALID_CONTEXT);

    ST_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    ST_OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
    ST_TRUE("two devices have two primary contexts", ctx != ctx1);
    ST_OK(cuCtxSetCurrent(ctx1));
    ST_OK(cuCtxGetDevice(&dev));
    ST_EQ("cuCtxGetDevice", dev, 1);
    ST_OK(cuDevicePrimaryCtxRelease(1));
    ST_CU(cuMemAlloc(&ptr, 4096), CUDA_ERROR_INVALID_CONTEXT); /* released to 0: destroyed */
    ST_CU(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
    ST_OK(cuCtxSetCurrent(ctx));
    ST_OK(cuCtxGetCurrent(&current));
    ST_EQ("current context", (uintptr_t)current, (uintptr_t)ctx);
    if (pthread_create(&thread, NULL, st_thread_without_ctx, NULL) != 0) {
        st_fail("pthread_create failed");
    }
    pthread_join(thread, NULL);
    st_group_end();
}

static void st_test_api_misc(void)
{
    CUdriverProcAddressQueryResult status;
    const char *str = "x";
    void *fn        = NULL;

    st_group_begin("error strings, cuGetProcAddress");
    ST_OK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &str));
    ST_EQ("cuGetErrorName", strcmp(str, "CUDA_ERROR_INVALID_VALUE"), 0);
    ST_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &str));
    ST_EQ("cuGetErrorString", strcmp(str, "out of memory"), 0);
    ST_CU(cuGetErrorName((CUresult)12345, &str), CUDA_ERROR_INVALID_VALUE);
    ST_EQ("cuGetErrorName of an unknown code sets NULL", (uintptr_t)str, 0);
    ST_OK(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    ST_EQ("cuGetProcAddress(cuMemAlloc) is cuMemAlloc_v2", (uintptr_t)fn, (uintptr_t)&cuMemAlloc);
    ST_OK(cuGetProcAddress("cuInit", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    ST_EQ("cuGetProcAddress(cuInit)", (uintptr_t)fn, (uintptr_t)&cuInit);
    ST_CU(cuGetProcAddress("cuNoSuchCall", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
    ST_EQ("symbolStatus", status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ST_CU(cuGetProcAddress("malloc", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
    st_group_end();
}

/* The library under test must be the stand-in, not a real driver found
 * first on the library path: these checks would mean nothing there. */
static void st_check_is_standin(void)
{
    char name[128] = "";

    if ((cuDeviceGetName(name, sizeof(name), 0) != CUDA_SUCCESS) ||
        (strncmp(name, "CUDA stand-in", 13) != 0)) {
        st_fail("libcuda.so.1 is not the stand-in (device 0 is \"%s\"); put its lib/ first in "
                "LD_LIBRARY_PATH", name);
    }
}

void st_test_driver(void)
{
    st_test_before_init();
    st_check_is_standin();
    st_test_devices();
    st_test_contexts();
    st_test_api_misc();
}
