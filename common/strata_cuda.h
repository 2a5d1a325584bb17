/*
 * The CUDA driver API, opened at run time.
 *
 * Strata never links libcuda: the same build must load on nodes without a
 * GPU or driver.  strata_cuda_load() dlopens libcuda.so.1 once per process
 * and resolves every entry point Strata calls into strata_cuda (a table of
 * function pointers).  Each entry is listed once, in STRATA_CUDA_FUNCS, with
 * the name cuda.h maps it to (cuMemAlloc -> cuMemAlloc_v2), so the symbol we
 * resolve is the one the header's prototype describes.
 *
 * Required entry points missing from the driver make the load fail (the
 * driver is too old); optional ones (VMM, stream-ordered allocation, dma-buf
 * export) leave their pointer NULL and the feature off.
 */
#ifndef STRATA_CUDA_H
#define STRATA_CUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * _req(name): the load fails without it.  _opt(name): may be missing.
 * Names are written as an application writes them; cuda.h's macros turn
 * them into the versioned symbol (see strata_cuda.c).
 */
/* clang-format off */
#define STRATA_CUDA_FUNCS(_req, _opt) \
    _req(cuInit) \
    _req(cuDriverGetVersion) \
    _req(cuGetErrorString) \
    _req(cuGetErrorName) \
    _req(cuDeviceGetCount) \
    _req(cuDeviceGet) \
    _req(cuDeviceGetName) \
    _req(cuDeviceGetAttribute) \
    _req(cuDeviceGetUuid) \
    _req(cuDeviceGetPCIBusId) \
    _req(cuDevicePrimaryCtxRetain) \
    _req(cuDevicePrimaryCtxRelease) \
    _req(cuCtxGetCurrent) \
    _req(cuCtxSetCurrent) \
    _req(cuCtxGetDevice) \
    _req(cuCtxSynchronize) \
    _req(cuPointerGetAttribute) \
    _req(cuPointerGetAttributes) \
    _req(cuMemGetAddressRange) \
    _req(cuMemAlloc) \
    _req(cuMemFree) \
    _req(cuMemAllocManaged) \
    _req(cuMemcpyAsync) \
    _req(cuMemcpyHtoDAsync) \
    _req(cuMemcpyDtoHAsync) \
    _req(cuMemcpyDtoDAsync) \
    _req(cuMemcpy) \
    _req(cuMemHostAlloc) \
    _req(cuMemFreeHost) \
    _req(cuPointerSetAttribute) \
    _req(cuStreamCreate) \
    _req(cuStreamDestroy) \
    _req(cuStreamSynchronize) \
    _req(cuStreamQuery) \
    _req(cuStreamWaitEvent) \
    _req(cuEventCreate) \
    _req(cuEventDestroy) \
    _req(cuEventRecord) \
    _req(cuEventQuery) \
    _req(cuEventSynchronize) \
    _req(cuIpcGetMemHandle) \
    _req(cuIpcOpenMemHandle) \
    _req(cuIpcCloseMemHandle) \
    _opt(cuDevicePrimaryCtxGetState) \
    _opt(cuCtxGetFlags) \
    _opt(cuCtxSetFlags) \
    _opt(cuDeviceCanAccessPeer) \
    _opt(cuMemHostRegister) \
    _opt(cuMemHostUnregister) \
    _opt(cuMemHostGetDevicePointer) \
    _opt(cuStreamWaitValue64) \
    _opt(cuStreamWriteValue64) \
    _opt(cuMemAllocAsync) \
    _opt(cuMemAllocFromPoolAsync) \
    _opt(cuMemFreeAsync) \
    _opt(cuMemCreate) \
    _opt(cuMemRelease) \
    _opt(cuMemMap) \
    _opt(cuMemUnmap) \
    _opt(cuMemSetAccess) \
    _opt(cuMemAddressReserve) \
    _opt(cuMemAddressFree) \
    _opt(cuMemGetAllocationGranularity) \
    _opt(cuMemRetainAllocationHandle) \
    _opt(cuMemGetAllocationPropertiesFromHandle) \
    _opt(cuMemExportToShareableHandle) \
    _opt(cuMemImportFromShareableHandle) \
    _opt(cuMemGetHandleForAddressRange) \
    _opt(cuModuleLoadData) \
    _opt(cuModuleUnload) \
    _opt(cuModuleGetFunction) \
    _opt(cuLaunchKernel)
/* clang-format on */

#define STRATA_CUDA_DECLARE_PTR(_name) __typeof__(&_name) _name;

/* The resolved driver entry points; valid after strata_cuda_load() == 0. */
typedef struct strata_cuda_api {
    STRATA_CUDA_FUNCS(STRATA_CUDA_DECLARE_PTR, STRATA_CUDA_DECLARE_PTR)
} strata_cuda_api_t;

extern strata_cuda_api_t strata_cuda;

/* Outcome of strata_cuda_load(), kept for diagnostics. */
typedef enum strata_cuda_state {
    STRATA_CUDA_NOT_LOADED = 0,
    STRATA_CUDA_READY,       /* driver loaded, cuInit succeeded */
    STRATA_CUDA_NO_DRIVER,   /* libcuda.so.1 not found: a node without GPU */
    STRATA_CUDA_BAD_DRIVER,  /* found, but too old or cuInit failed */
} strata_cuda_state_t;

/*
 * Opens the driver and calls cuInit(0), once per process (thread-safe).
 * Returns 0 when the driver is usable.  Otherwise returns -1 and
 * strata_cuda_error() says why in one line; no GPU is not an error a caller
 * should print at default verbosity.
 */
int strata_cuda_load(void);
strata_cuda_state_t strata_cuda_state(void);
const char *strata_cuda_error(void);

/* dlopen handle of the driver, for code that patches its entry points. */
void *strata_cuda_driver_handle(void);

/* "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for messages. */
const char *strata_cuda_result_str(CUresult res, char *buf, size_t max);

/* Whether every VMM entry point (cuMemCreate ... cuMemImportFromShareableHandle)
 * was found: they are optional one by one, but only useful together. */
int strata_cuda_has_vmm(void);

/* Number of devices, 0 if the driver is not usable. */
int strata_cuda_device_count(void);

/*
 * Makes a context current on this thread if none is: the primary context of
 * the device that owns `ptr` when ptr != 0, else of device 0.  UCX progress
 * threads and MPI ranks that touched CUDA only through cudaMalloc may call in
 * with no current context; the driver needs one for copies and IPC.
 * Returns 0 on success.
 */
int strata_cuda_ctx_ensure(CUdeviceptr ptr);

/* What strata_cuda_ctx_push() saves when it changed nothing: not a context
 * (NULL is one here: "no context current"). */
#define STRATA_CUDA_CTX_UNCHANGED ((CUcontext)(uintptr_t)1)

/*
 * Makes the primary context of device `ordinal` current on this thread
 * (ordinal < 0: keep any current context, else device 0's primary) and says
 * in *saved what to give strata_cuda_ctx_pop() to put the thread as it was:
 * the caller's context, NULL where it had none (the CUDA runtime would adopt
 * a context left current: cudaGetDevice() would change under the
 * application), or STRATA_CUDA_CTX_UNCHANGED.  The primary context, not any
 * context of that device: streams made in it stay usable whatever context
 * the application has current later.  Returns 0 on success; on failure
 * *saved is STRATA_CUDA_CTX_UNCHANGED, so popping it is harmless.
 */
int strata_cuda_ctx_push(int ordinal, CUcontext *saved);

/*
 * Whether a kernel launched in device `ordinal`'s primary context may use
 * the device memory at `ptr`: memory of that device, allocated in that
 * context (cudaMalloc's) or in none (VMM mappings).  Memory of another
 * device, or of a context the application created, is an illegal address
 * there, and the error is sticky: every later call of the process fails.
 */
int strata_cuda_primary_reaches(CUdeviceptr ptr, int ordinal);

/*
 * Device `ordinal`'s primary context, retained once by this process and
 * kept (NULL if the driver refuses): the context Strata's own streams,
 * events and IPC mappings live in, which no application's cuCtxDestroy can
 * take away (a cuDevicePrimaryCtxReset can: see gpu_ipc).
 */
CUcontext strata_cuda_primary_ctx(int ordinal);

/* The primary context of `ordinal` if this process retained it already
 * (strata_cuda_primary_ctx), else NULL: retains nothing. */
CUcontext strata_cuda_primary_ctx_retained(int ordinal);

/* The device of the calling thread's current context, else `fallback`:
 * where Strata's own work for the thread goes (its primary context). */
int strata_cuda_current_device(int fallback);
void strata_cuda_ctx_pop(CUcontext saved);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_CUDA_H */
