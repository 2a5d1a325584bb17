/*
 * Legacy CUDA IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle.
 *
 * A handle names the exporter's memfd by pid and fd number; the importer
 * opens /proc/<pid>/fd/<fd> and maps it, so both processes share the bytes.
 * The memfd's name carries the allocation's buffer id: if the exporter freed
 * the allocation (and maybe reused the fd number), the name no longer matches
 * and the open fails with CUDA_ERROR_INVALID_HANDLE.
 *
 * An importer holds a shared flock on its own open file description of the
 * memfd for as long as it maps it (the mapping keeps the description, and
 * so the lock, after the descriptor is closed; the last unmap drops both):
 * the exporter's cuMemFree tells from a refused exclusive lock that another
 * process still has the allocation open (cuda_standin_ipc_still_open).
 */
#define _GNU_SOURCE
#include "cuda_standin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CUDA_STANDIN_IPC_MAGIC 0x5453494350494453ull /* "SDIPCIST" */

/* The 64 bytes of a CUipcMemHandle, as the stand-in fills them. */
typedef struct cuda_standin_ipc_handle {
    uint64_t magic;
    int32_t pid;        /* exporter */
    int32_t fd;         /* its memfd, in the exporter */
    uint64_t size;      /* the allocation's size: the range the importer sees */
    uint64_t fd_size;   /* bytes of the memfd */
    uint64_t buffer_id; /* the allocation's id, also in the memfd's name */
    int32_t device;
} cuda_standin_ipc_handle_t;

_Static_assert(sizeof(cuda_standin_ipc_handle_t) <= CU_IPC_HANDLE_SIZE,
               "an IPC handle must fit in CUipcMemHandle");

static CUresult cuda_standin_ipc_get(CUipcMemHandle *handle, CUdeviceptr dptr)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)dptr);
    cuda_standin_ipc_handle_t h;

    if (handle == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Only cuMemAlloc memory: stream-ordered (default pool), managed, VMM
     * and imported memory are not legacy-IPC capable. */
    if ((map == NULL) || (map->kind != CUDA_STANDIN_MAP_ALLOC)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%llx is not in a cuMemAlloc allocation",
                                  (unsigned long long)dptr);
    }
    memset(&h, 0, sizeof(h));
    h.magic     = CUDA_STANDIN_IPC_MAGIC;
    h.pid       = (int32_t)cuda_standin_pid();
    h.fd        = map->memfd;
    h.size      = map->size;
    h.fd_size   = map->alias_size;
    h.buffer_id = map->buffer_id;
    h.device    = map->device;
    memset(handle, 0, sizeof(*handle));
    memcpy(handle->reserved, &h, sizeof(h));
    cuda_standin_note("base 0x%lx size %zu buffer id 0x%llx fd %d", (unsigned long)map->base,
                      map->size, map->buffer_id, map->memfd);
    return CUDA_SUCCESS;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUDA_STANDIN_CALL(cuIpcGetMemHandle, CUDA_STANDIN_IN_CTX, cuda_standin_ipc_get(pHandle, dptr));
}

static cuda_standin_map_t *cuda_standin_ipc_find_open(const cuda_standin_ipc_handle_t *h)
{
    cuda_standin_map_t *map;
    size_t i;

    for (i = 0; i < cuda_standin_map_count(); ++i) {
        map = cuda_standin_map_at(i);
        if ((map->kind == CUDA_STANDIN_MAP_IPC) && (map->ipc_pid == h->pid) &&
            (map->ipc_buffer_id == h->buffer_id)) {
            return map;
        }
    }
    return NULL;
}

/* Is the fd we opened still the memfd of that allocation?  Checked on our
 * own fd, so the exporter cannot swap it between the check and the map. */
static int cuda_standin_ipc_fd_matches(int fd, const cuda_standin_ipc_handle_t *h)
{
    char path[64], target[128], expect[64];
    struct stat st;
    ssize_t len;
    int n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    len = readlink(path, target, sizeof(target) - 1);
    if (len < 0) {
        return 0;
    }
    target[len] = '\0';
    n = snprintf(expect, sizeof(expect), "/memfd:cuda_standin.%llu",
                 (unsigned long long)h->buffer_id);
    if ((strncmp(target, expect, (size_t)n) != 0) ||
        ((target[n] != '\0') && (strcmp(target + n, " (deleted)") != 0))) {
        return 0;
    }
    return (fstat(fd, &st) == 0) && ((uint64_t)st.st_size >= h->fd_size);
}

static CUresult cuda_standin_ipc_open_fd(const cuda_standin_ipc_handle_t *h, int *fd_p)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h->pid, (int)h->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "%s: %m (exporter gone?)", path);
    }
    if (!cuda_standin_ipc_fd_matches(fd, h)) {
        close(fd);
        return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE,
                                  "%s is no longer buffer 0x%llx (freed by the exporter)", path,
                                  (unsigned long long)h->buffer_id);
    }
    *fd_p = fd;
    return CUDA_SUCCESS;
}

/* A new range of this process's device addresses over the exporter's bytes,
 * with its own buffer id. */
static CUresult cuda_standin_ipc_map(const cuda_standin_ipc_handle_t *h, int fd, CUdeviceptr *pdptr)
{
    CUcontext ctx           = cuda_standin_ctx_current();
    cuda_standin_map_t *map = cuda_standin_map_new(CUDA_STANDIN_MAP_IPC);
    size_t va_size          = CUDA_STANDIN_ALIGN_UP(h->fd_size, CUDA_STANDIN_ALLOC_ALIGN);
    CUresult status;

    if (map == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    map->size          = h->size;
    map->ctx           = ctx;
    map->device        = cuda_standin_device_valid(h->device) ? h->device : ctx->device;
    map->buffer_id     = cuda_standin_next_id();
    map->ipc_pid       = h->pid;
    map->ipc_buffer_id = h->buffer_id;
    map->ipc_refs      = 1;
    status             = cuda_standin_backing_map(fd, h->fd_size, &map->alias);
    if (status != CUDA_SUCCESS) {
        goto err_destroy;
    }
    map->alias_size = h->fd_size;
    status          = cuda_standin_va_alloc(va_size, CUDA_STANDIN_ALLOC_ALIGN, 0, &map->base);
    if (status != CUDA_SUCCESS) {
        goto err_destroy;
    }
    map->va_size = va_size;
    status       = cuda_standin_map_insert(map);
    if (status != CUDA_SUCCESS) {
        goto err_destroy;
    }
    *pdptr = (CUdeviceptr)map->base;
    cuda_standin_note("pid %d buffer 0x%llx at 0x%lx size %zu, buffer id 0x%llx", (int)h->pid,
                      (unsigned long long)h->buffer_id, (unsigned long)map->base, map->size,
                      map->buffer_id);
    return CUDA_SUCCESS;

err_destroy:
    cuda_standin_map_destroy(map);
    return status;
}

static CUresult cuda_standin_ipc_open(CUdeviceptr *pdptr, const CUipcMemHandle *handle,
                                      unsigned int flags)
{
    cuda_standin_ipc_handle_t h;
    cuda_standin_map_t *open;
    CUresult status;
    int fd = -1;

    if ((pdptr == NULL) || ((flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    memcpy(&h, handle->reserved, sizeof(h));
    if (h.magic != CUDA_STANDIN_IPC_MAGIC) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "not a stand-in IPC handle");
    }
    /* Like the driver: a process cannot open its own handles. */
    if (h.pid == (int32_t)cuda_standin_pid()) {
        return cuda_standin_error(CUDA_ERROR_INVALID_CONTEXT, "handle exported by this process");
    }
    /* Like the driver (cuda.h): a handle open already in this context
     * gains a reference and gives the same pointer; the last close unmaps.
     * (Drivers before CUDA 11 refused it with CUDA_ERROR_ALREADY_MAPPED.) */
    open = cuda_standin_ipc_find_open(&h);
    if ((open != NULL) && (open->ctx == cuda_standin_ctx_current())) {
        ++open->ipc_refs;
        *pdptr = (CUdeviceptr)open->base;
        cuda_standin_note("pid %d buffer 0x%llx open again: %d references", (int)h.pid,
                          (unsigned long long)h.buffer_id, open->ipc_refs);
        return CUDA_SUCCESS;
    } else if (open != NULL) {
        return cuda_standin_error(CUDA_ERROR_ALREADY_MAPPED,
                                  "pid %d buffer 0x%llx is open in another context", (int)h.pid,
                                  (unsigned long long)h.buffer_id);
    }
    status = cuda_standin_ipc_open_fd(&h, &fd);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    (void)flock(fd, LOCK_SH); /* see the top: held while mapped */
    status = cuda_standin_ipc_map(&h, fd, pdptr);
    close(fd); /* the mapping keeps the memory */
    return status;
}

CUresult cuda_standin_patchable_cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                                   unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuIpcOpenMemHandle, CUDA_STANDIN_IN_CTX,
                      cuda_standin_ipc_open(pdptr, &handle, Flags));
}

static CUresult cuda_standin_ipc_close(CUdeviceptr dptr)
{
    cuda_standin_map_t *map = cuda_standin_map_find((uintptr_t)dptr);

    if ((map == NULL) || (map->kind != CUDA_STANDIN_MAP_IPC) || (map->base != (uintptr_t)dptr)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%llx is not an open IPC mapping",
                                  (unsigned long long)dptr);
    }
    if (--map->ipc_refs > 0) {
        cuda_standin_note("buffer id 0x%llx: %d references left", map->buffer_id, map->ipc_refs);
        return CUDA_SUCCESS;
    }
    /* Queued work on the mapping runs before it goes away. */
    (void)cuda_standin_stream_finish_all();
    cuda_standin_note("closed buffer id 0x%llx", map->buffer_id);
    cuda_standin_map_destroy(map);
    return CUDA_SUCCESS;
}

CUresult cuda_standin_patchable_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CUDA_STANDIN_CALL(cuIpcCloseMemHandle, CUDA_STANDIN_IN_CTX, cuda_standin_ipc_close(dptr));
}

int cuda_standin_ipc_still_open(int memfd)
{
    if (memfd < 0) {
        return 0;
    }
    if (flock(memfd, LOCK_EX | LOCK_NB) == 0) {
        (void)flock(memfd, LOCK_UN);
        return 0;
    }
    return errno == EWOULDBLOCK;
}
