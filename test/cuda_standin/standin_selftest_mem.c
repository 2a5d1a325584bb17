/*
 * standin_selftest: allocation, what the CPU may touch, copies, streams and
 * events, threads, and pointer attributes, in one process.
 */
#include "standin_selftest.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- Allocation --- */

static void st_test_alloc(void)
{
    const size_t size = 100000; /* not a multiple of 64 KiB on purpose */
    size_t free0, free1, total, pitch = 0;
    unsigned long long id, id2;
    CUdeviceptr ptr, ptr2, pitched;

    st_group_begin("allocation: alignment, reuse of a freed address, new id");
    ST_CU(cuMemAlloc(&ptr, 0), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemGetInfo(&free0, &total));
    ptr = st_alloc(size);
    ST_EQ("cuMemAlloc address % 64 KiB", ptr % 65536, 0);
    ST_OK(cuMemGetInfo(&free1, &total));
    ST_EQ("cuMemGetInfo free drops by the rounded size", free0 - free1, 2 * 65536);
    id = st_buffer_id(ptr);
    ST_CU(cuMemFree(ptr + 1), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemFree(ptr));
    ST_CU(cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE);
    ptr2 = st_alloc(size);
    ST_EQ("re-allocation after free returns the same address", ptr2, ptr);
    id2 = st_buffer_id(ptr2);
    ST_TRUE("re-allocation at the same address has a new buffer id", id2 != id);
    ST_EQ("buffer id carries the pid", id2 >> 32, (unsigned long long)getpid());
    ST_CU(cuMemAllocPitch(&pitched, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemAllocPitch(&pitched, &pitch, 1000, 10, 4));
    ST_EQ("pitch", pitch, 1024);
    ST_OK(cuMemFree(pitched));
    ST_OK(cuMemFree(ptr2));
    st_group_end();
}

static void st_test_host_alloc(void)
{
    unsigned char host[256], back[256];
    CUdeviceptr dev = st_alloc(4096);
    void *pinned = NULL;

    st_group_begin("pinned host memory: cuMemHostAlloc, copies through it, cuMemFreeHost");
    ST_CU(cuMemHostAlloc(&pinned, 0, 0), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemHostAlloc(&pinned, sizeof(host), CU_MEMHOSTALLOC_PORTABLE));
    ST_TRUE("pinned memory is page-aligned", ((uintptr_t)pinned % 4096) == 0);
    st_fill(host, sizeof(host), 7, 0);
    memcpy(pinned, host, sizeof(host)); /* the CPU may touch it */
    ST_OK(cuMemcpyHtoD(dev, pinned, sizeof(host)));
    memset(back, 0, sizeof(back));
    ST_OK(cuMemcpyDtoH(back, dev, sizeof(back)));
    ST_TRUE("bytes through pinned memory", memcmp(back, host, sizeof(host)) == 0);
    ST_CU(cuMemFreeHost(host), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemFreeHost(pinned));
    ST_CU(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemFree(dev));
    st_group_end();
}

/* cuMemHostRegister/Unregister: the driver's refusals (an overlapping
 * range, an address that starts no registered range, device memory), and
 * cuDeviceCanAccessPeer: a device is not its own peer. */
static void st_test_host_register(void)
{
    CUdeviceptr dev = st_alloc(4096);
    char *host      = malloc(3 * 4096);
    int can         = -1;

    st_group_begin("cuMemHostRegister, cuMemHostUnregister, cuDeviceCanAccessPeer");
    ST_OK(cuMemHostRegister(host, 3 * 4096, 0));
    ST_CU(cuMemHostRegister(host + 4096, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    ST_CU(cuMemHostUnregister(host + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    ST_OK(cuMemHostUnregister(host));
    ST_CU(cuMemHostUnregister(host), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    ST_CU(cuMemHostRegister(NULL, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemHostRegister((void *)dev, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuDeviceCanAccessPeer(&can, 0, 0));
    ST_TRUE("a device is not its own peer", can == 0);
    ST_CU(cuDeviceCanAccessPeer(&can, 0, 1000), CUDA_ERROR_INVALID_DEVICE);
    ST_OK(cuMemFree(dev));
    free(host);
    st_group_end();
}

static void st_test_cpu_fault(void)
{
    volatile unsigned char *cpu;
    CUdeviceptr ptr = st_alloc(4096);
    unsigned char host[64];
    pid_t pid;

    st_group_begin("device memory: a CPU load or store is SIGSEGV");
    st_fill(host, sizeof(host), 3, 0);
    ST_OK(cuMemcpyHtoD(ptr, host, sizeof(host)));
    cpu = (volatile unsigned char *)(uintptr_t)ptr;
    pid = st_fork();
    if (pid == 0) {
        printf("  child: reading device address %p (expect SIGSEGV)\n", (void *)cpu);
        fflush(stdout);
        (void)cpu[0];
        _exit(0);
    }
    st_expect_child_signal("CPU load from device memory", pid, SIGSEGV);
    pid = st_fork();
    if (pid == 0) {
        cpu[10] = 1;
        _exit(0);
    }
    st_expect_child_signal("CPU store to device memory", pid, SIGSEGV);
    ST_OK(cuMemFree(ptr));
    st_group_end();
}

/* --- Copies --- */

static void st_test_sync_copies(void)
{
    const size_t size = 100000;
    unsigned char *a = malloc(size), *b = malloc(size), *managed;
    CUdeviceptr d1 = st_alloc(size), d2 = st_alloc(size), m, freed;

    st_group_begin("synchronous copies: every direction, bounds, freed memory");
    st_fill(a, size, 20, 0);
    ST_OK(cuMemcpyHtoD(d1, a, size));
    memset(b, 0, size);
    ST_OK(cuMemcpyDtoH(b, d1, size));
    st_check_pattern("HtoD then DtoH", b, size, 20, 0);
    ST_OK(cuMemcpyDtoD(d2 + 100, d1, size - 100));
    ST_OK(cuMemcpyDtoH(b, d2 + 100, size - 100));
    st_check_pattern("DtoD to an interior offset", b, size - 100, 20, 0);
    ST_OK(cuMemcpyDtoH(b, d1 + 4096, 1000));
    st_check_pattern("DtoH from an interior offset", b, 1000, 20, 4096);

    st_fill(a, size, 21, 0);
    ST_OK(cuMemcpy(d1, (CUdeviceptr)a, size));
    ST_OK(cuMemcpy(d2, d1, size));
    memset(b, 0, size);
    ST_OK(cuMemcpy((CUdeviceptr)b, d2, size));
    st_check_pattern("cuMemcpy host->device->device->host", b, size, 21, 0);
    ST_OK(cuMemcpy((CUdeviceptr)b, (CUdeviceptr)a, 10));
    st_check_pattern("cuMemcpy host->host", b, 10, 21, 0);

    ST_OK(cuMemAllocManaged(&m, size, CU_MEM_ATTACH_GLOBAL));
    managed = (unsigned char *)(uintptr_t)m;
    ST_OK(cuMemcpyDtoD(m, d1, size));
    st_check_pattern("DtoD into managed memory, read by the CPU", managed, size, 21, 0);
    st_fill(managed, size, 22, 0);
    ST_OK(cuMemcpyDtoH(b, m, size));
    st_check_pattern("DtoH of managed memory written by the CPU", b, size, 22, 0);

    ST_CU(cuMemcpyHtoD((CUdeviceptr)b, a, 10), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpyDtoH(b, (CUdeviceptr)a, 10), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpyHtoD(d1 + size - 1, a, 2), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpyDtoH(b, d1 + size, 1), CUDA_ERROR_INVALID_VALUE);
    freed = st_alloc(4096);
    ST_OK(cuMemFree(freed));
    ST_CU(cuMemcpyHtoD(freed, a, 10), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpy((CUdeviceptr)b, freed, 10), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemcpyHtoD(d1, a, 0));

    ST_CU(cuMemsetD8((CUdeviceptr)b, 0, 10), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemsetD8(d2 + 10, 0xab, 1000));
    ST_OK(cuMemcpyDtoH(b, d2 + 10, 1000));
    st_check_value("cuMemsetD8 then DtoH", b, 1000, 0xab);

    ST_OK(cuMemFree(m));
    ST_OK(cuMemFree(d1));
    ST_OK(cuMemFree(d2));
    free(a);
    free(b);
    st_group_end();
}

/* Polls `what` until it succeeds, expecting exactly `delay` NOT_READY. */
static void st_expect_not_ready_then_done(const char *what, CUresult (*query)(void *), void *arg)
{
    int i;

    for (i = 0; i < ST_QUERY_DELAY; ++i) {
        st_expect_cu(what, query(arg), CUDA_ERROR_NOT_READY, __LINE__);
    }
    st_expect_cu(what, query(arg), CUDA_SUCCESS, __LINE__);
}

static CUresult st_query_event(void *event)
{
    return cuEventQuery((CUevent)event);
}

static CUresult st_query_stream(void *stream)
{
    return cuStreamQuery((CUstream)stream);
}

static void st_test_async_copies(void)
{
    const size_t size = 100000;
    unsigned char *a = malloc(size), *b = malloc(size), *managed;
    CUdeviceptr d = st_alloc(size), freed, m;
    CUstream s;
    CUevent ev;

    st_group_begin("async copies: visible only at completion points");
    ST_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ST_CU(cuEventCreate(&ev, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    ST_OK(cuEventQuery(ev)); /* never recorded: complete */
    st_fill(a, size, 10, 0);
    ST_OK(cuMemcpyHtoD(d, a, size));

    st_fill(a, size, 1, 0);
    ST_OK(cuMemcpyHtoDAsync(d, a, size, s));
    ST_OK(cuEventRecord(ev, s));
    ST_OK(cuMemcpyDtoH(b, d, size)); /* legacy stream: does not wait for s */
    st_check_pattern("device before the event completes (stale)", b, size, 10, 0);
    st_expect_not_ready_then_done("cuEventQuery", st_query_event, ev);
    ST_OK(cuMemcpyDtoH(b, d, size));
    st_check_pattern("device after cuEventQuery reported completion", b, size, 1, 0);

    st_fill(a, size, 2, 0);
    ST_OK(cuMemcpyHtoDAsync(d, a, size, s));
    ST_OK(cuEventRecord(ev, s));
    ST_OK(cuMemcpyDtoH(b, d, size));
    st_check_pattern("device before cuEventSynchronize (stale)", b, size, 1, 0);
    ST_OK(cuEventSynchronize(ev));
    ST_OK(cuMemcpyDtoH(b, d, size));
    st_check_pattern("device after cuEventSynchronize", b, size, 2, 0);

    st_fill(a, size, 3, 0);
    ST_OK(cuMemcpyHtoDAsync(d, a, size, s));
    st_fill(a, size, 4, 0); /* the copy reads the host buffer when it runs */
    ST_OK(cuStreamSynchronize(s));
    ST_OK(cuMemcpyDtoH(b, d, size));
    st_check_pattern("host source reused before completion shows up", b, size, 4, 0);

    memset(b, 0, size);
    ST_OK(cuMemcpyDtoHAsync(b, d, size, s));
    st_check_value("DtoHAsync destination before completion", b, size, 0);
    st_expect_not_ready_then_done("cuStreamQuery", st_query_stream, s);
    st_check_pattern("DtoHAsync destination after cuStreamQuery", b, size, 4, 0);

    ST_OK(cuMemAllocManaged(&m, size, CU_MEM_ATTACH_GLOBAL));
    managed = (unsigned char *)(uintptr_t)m;
    memset(managed, 0, size);
    ST_OK(cuMemcpyAsync(m, d, size, s));
    st_check_value("managed destination before completion", managed, size, 0);
    ST_OK(cuStreamSynchronize(s));
    st_check_pattern("managed destination after cuStreamSynchronize", managed, size, 4, 0);

    freed = st_alloc(4096);
    ST_OK(cuMemFree(freed));
    ST_CU(cuMemcpyHtoDAsync(freed, a, 10, s), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpyHtoDAsync(d + size - 10, a, 20, s), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpyAsync(d, (CUdeviceptr)a, 10, (CUstream)&ev), CUDA_ERROR_INVALID_HANDLE);

    ST_OK(cuMemFree(m));
    ST_OK(cuEventDestroy(ev));
    ST_CU(cuEventDestroy(ev), CUDA_ERROR_INVALID_HANDLE);
    ST_OK(cuStreamDestroy(s));
    ST_OK(cuMemFree(d));
    free(a);
    free(b);
    st_group_end();
}

static void st_test_stream_order(void)
{
    const size_t size = 65536;
    unsigned char *a = malloc(size), *b = malloc(size);
    CUdeviceptr d = st_alloc(size), d2 = st_alloc(size), pooled;
    CUstream blocking, s2, s3;
    CUevent ev;

    st_group_begin("stream order: legacy sync, cuStreamWaitEvent, DtoD, free");
    ST_OK(cuStreamCreate(&blocking, 0));
    ST_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    ST_OK(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    ST_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));

    st_fill(a, size, 5, 0);
    ST_OK(cuMemcpyHtoDAsync(d, a, size, blocking));
    ST_OK(cuMemcpyDtoH(b, d, size));
    st_check_pattern("legacy stream waits for a blocking stream", b, size, 5, 0);

    st_fill(a, size, 6, 0);
    ST_OK(cuMemcpyHtoDAsync(d, a, size, s2));
    ST_OK(cuEventRecord(ev, s2));
    ST_OK(cuStreamWaitEvent(s3, ev, 0));
    memset(b, 0, size);
    ST_OK(cuMemcpyDtoHAsync(b, d, size, s3));
    ST_OK(cuStreamSynchronize(s3));
    st_check_pattern("work after cuStreamWaitEvent sees the event's work", b, size, 6, 0);
    ST_OK(cuStreamQuery(s2));

    ST_OK(cuMemcpyDtoD(d2, d, size));
    ST_CU(cuStreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_NOT_READY); /* no host sync for DtoD */
    ST_OK(cuMemcpyDtoH(b, d2, size));
    st_check_pattern("DtoD is ordered before a later DtoH", b, size, 6, 0);

    st_fill(a, size, 7, 0);
    ST_OK(cuMemcpyHtoDAsync(d, a, size, s2));
    ST_OK(cuCtxSynchronize());
    ST_OK(cuMemcpyDtoH(b, d, size));
    st_check_pattern("cuCtxSynchronize completes all streams", b, size, 7, 0);

    ST_OK(cuMemAllocAsync(&pooled, size, s2));
    ST_OK(cuMemcpyHtoDAsync(pooled, a, size, s2));
    ST_OK(cuMemFreeAsync(pooled, s2));
    ST_CU(cuMemFreeAsync(pooled, s2), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuStreamSynchronize(s2));
    ST_CU(cuMemcpyDtoH(b, pooled, 1), CUDA_ERROR_INVALID_VALUE);

    ST_OK(cuEventDestroy(ev));
    ST_OK(cuStreamDestroy(s3));
    ST_OK(cuStreamDestroy(s2));
    ST_OK(cuStreamDestroy(blocking));
    ST_CU(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    ST_OK(cuMemFree(d2));
    ST_OK(cuMemFree(d));
    free(a);
    free(b);
    st_group_end();
}

/* One of several threads doing allocation, copies and frees at once. */
static void *st_thread_worker(void *arg)
{
    const size_t size = 65536 + 8;
    unsigned seed     = (unsigned)(uintptr_t)arg;
    unsigned char *a = malloc(size), *b = malloc(size);
    CUcontext ctx;
    CUdeviceptr d;
    CUstream s;
    int i;

    ST_OK(cuDevicePrimaryCtxRetain(&ctx, (int)(seed % ST_DEVICES)));
    ST_OK(cuCtxSetCurrent(ctx));
    ST_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (i = 0; i < 50; ++i) {
        d = st_alloc(size);
        st_fill(a, size, seed + i, 0);
        ST_OK(cuMemcpyHtoDAsync(d, a, size, s));
        ST_OK(cuMemcpyDtoHAsync(b, d, size, s));
        ST_OK(cuStreamSynchronize(s));
        st_check_pattern("thread round trip", b, size, seed + i, 0);
        ST_OK(cuMemFree(d));
    }
    ST_OK(cuStreamDestroy(s));
    ST_OK(cuDevicePrimaryCtxRelease((int)(seed % ST_DEVICES)));
    free(a);
    free(b);
    return NULL;
}

static void st_test_threads(void)
{
    pthread_t threads[4];
    void *seed;
    size_t i;

    st_group_begin("threads: 4 threads allocate, copy and free at once");
    for (i = 0; i < 4; ++i) {
        seed = (void *)(uintptr_t)(100 + i);
        if (pthread_create(&threads[i], NULL, st_thread_worker, seed) != 0) {
            st_fail("pthread_create failed");
        }
    }
    for (i = 0; i < 4; ++i) {
        pthread_join(threads[i], NULL);
    }
    st_group_end();
}

/* --- Pointer attributes --- */

typedef struct st_attrs {
    CUcontext ctx;
    unsigned int memory_type, is_managed, ipc_capable, mapped, handle_types, access;
    int ordinal;
    unsigned long long buffer_id;
    CUdeviceptr range_start;
    size_t range_size;
    CUmemoryPool pool;
} st_attrs_t;

static void st_get_attrs(CUdeviceptr ptr, st_attrs_t *a)
{
    CUpointer_attribute names[] = {
        CU_POINTER_ATTRIBUTE_CONTEXT,          CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,       CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_MAPPED,           CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
        CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,     CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,       CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
    void *data[] = {&a->ctx,         &a->memory_type,  &a->is_managed, &a->ipc_capable,
                    &a->mapped,      &a->handle_types, &a->access,     &a->ordinal,
                    &a->buffer_id,   &a->range_start,  &a->range_size, &a->pool};

    memset(a, 0x55, sizeof(*a)); /* every value must be written */
    ST_OK(cuPointerGetAttributes(sizeof(names) / sizeof(names[0]), names, data, ptr));
}

static void st_test_attrs_device(void)
{
    const size_t size = 100000;
    CUdeviceptr d = st_alloc(size), base = 0, dptr = 0;
    CUcontext ctx;
    size_t range = 0;
    void *host;
    st_attrs_t a;

    ST_OK(cuCtxGetCurrent(&ctx));
    st_get_attrs(d + 777, &a);
    ST_EQ("device: CONTEXT", (uintptr_t)a.ctx, (uintptr_t)ctx);
    ST_EQ("device: MEMORY_TYPE", a.memory_type, CU_MEMORYTYPE_DEVICE);
    ST_EQ("device: IS_MANAGED", a.is_managed, 0);
    ST_EQ("device: IS_LEGACY_CUDA_IPC_CAPABLE", a.ipc_capable, 1);
    ST_EQ("device: MAPPED", a.mapped, 1);
    ST_EQ("device: DEVICE_ORDINAL", a.ordinal, 0);
    ST_EQ("device: BUFFER_ID", a.buffer_id, st_buffer_id(d));
    ST_EQ("device: RANGE_START_ADDR of an interior pointer", a.range_start, d);
    ST_EQ("device: RANGE_SIZE", a.range_size, size);
    ST_EQ("device: MEMPOOL_HANDLE", (uintptr_t)a.pool, 0);
    ST_EQ("device: ACCESS_FLAGS", a.access, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
    ST_CU(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, d),
          CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuPointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d + 5));
    ST_EQ("device: DEVICE_POINTER", dptr, d + 5);
    ST_OK(cuMemGetAddressRange(&base, &range, d + size - 1));
    ST_EQ("cuMemGetAddressRange base", base, d);
    ST_EQ("cuMemGetAddressRange size", range, size);
    ST_OK(cuMemFree(d));
}

static void st_test_attrs_host(void)
{
    char host_var[64] = "";
    CUdeviceptr h = (CUdeviceptr)host_var;
    unsigned int type = 7;
    size_t range;
    st_attrs_t a;

    ST_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, h),
          CUDA_ERROR_INVALID_VALUE);
    st_get_attrs(h, &a);
    ST_EQ("host: MEMORY_TYPE", a.memory_type, 0);
    ST_EQ("host: CONTEXT", (uintptr_t)a.ctx, 0);
    ST_EQ("host: IS_MANAGED", a.is_managed, 0);
    ST_EQ("host: BUFFER_ID", a.buffer_id, 0);
    ST_EQ("host: DEVICE_ORDINAL", a.ordinal, -2);
    ST_EQ("host: RANGE_START_ADDR", a.range_start, 0);
    ST_EQ("host: RANGE_SIZE", a.range_size, 0);
    ST_CU(cuMemGetAddressRange(NULL, &range, h), CUDA_ERROR_NOT_FOUND);
}

static void st_test_attrs_managed(void)
{
    CUipcMemHandle handle;
    CUdeviceptr m;
    void *host = NULL;
    st_attrs_t a;

    ST_OK(cuMemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL));
    ((volatile char *)(uintptr_t)m)[100] = 1; /* the CPU may touch it */
    st_get_attrs(m + 100, &a);
    ST_EQ("managed: MEMORY_TYPE", a.memory_type, CU_MEMORYTYPE_DEVICE);
    ST_EQ("managed: IS_MANAGED", a.is_managed, 1);
    ST_EQ("managed: IS_LEGACY_CUDA_IPC_CAPABLE", a.ipc_capable, 0);
    ST_EQ("managed: RANGE_START_ADDR", a.range_start, m);
    ST_OK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, m));
    ST_EQ("managed: HOST_POINTER", (uintptr_t)host, m);
    ST_CU(cuIpcGetMemHandle(&handle, m), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemAllocManaged(&m, 8192, 0), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemFree((CUdeviceptr)(uintptr_t)host));
}

static void st_test_attrs_pool(void)
{
    CUmemoryPool default_pool, pool;
    CUmemPoolProps props;
    CUipcMemHandle handle;
    CUdeviceptr p, q;
    st_attrs_t a;

    ST_OK(cuDeviceGetDefaultMemPool(&default_pool, 0));
    ST_OK(cuMemAllocAsync(&p, 4096, NULL));
    st_get_attrs(p, &a);
    ST_EQ("pool: MEMORY_TYPE", a.memory_type, CU_MEMORYTYPE_DEVICE);
    ST_EQ("pool: MEMPOOL_HANDLE is the default pool", (uintptr_t)a.pool, (uintptr_t)default_pool);
    ST_EQ("pool: IS_LEGACY_CUDA_IPC_CAPABLE", a.ipc_capable, 0);
    ST_CU(cuIpcGetMemHandle(&handle, p), CUDA_ERROR_INVALID_VALUE);
    memset(&props, 0, sizeof(props));
    props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id   = 1;
    ST_OK(cuMemPoolCreate(&pool, &props));
    ST_OK(cuMemAllocFromPoolAsync(&q, 4096, pool, NULL));
    st_get_attrs(q, &a);
    ST_EQ("pool: MEMPOOL_HANDLE of cuMemAllocFromPoolAsync", (uintptr_t)a.pool, (uintptr_t)pool);
    ST_EQ("pool: DEVICE_ORDINAL follows the pool", a.ordinal, 1);
    ST_OK(cuMemPoolDestroy(pool)); /* lives on until q is freed */
    ST_CU(cuMemPoolDestroy(default_pool), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemFreeAsync(q, NULL));
    ST_OK(cuMemFree(p));
    ST_OK(cuStreamSynchronize(NULL));
}

static void st_test_attributes(void)
{
    st_group_begin("pointer attributes: device, host, managed, pool memory");
    st_test_attrs_device();
    st_test_attrs_host();
    st_test_attrs_managed();
    st_test_attrs_pool();
    st_group_end();
}

void st_test_memory(void)
{
    st_test_alloc();
    st_test_host_alloc();
    st_test_host_register();
    st_test_cpu_fault();
    st_test_sync_copies();
    st_test_async_copies();
    st_test_stream_order();
    st_test_threads();
    st_test_attributes();
}
