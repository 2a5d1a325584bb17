/*
 * CUDA IPC between processes of this node, as gpu_ipc and coll/strata use
 * it: this process allocates on one GPU and exports the buffer
 * (cuIpcGetMemHandle), a second process maps it on another GPU (or the
 * same one: two ranks sharing a GPU), checks the pattern it finds and
 * writes the complement back, which this process then checks.  Every
 * ordered pair of GPUs is tried.
 *
 * The second process is this program again (fork + exec, "--ipc-peer FD"):
 * a forked child of a process that initialized CUDA cannot use CUDA, and
 * an exec'd one starts as a rank does.  Requests and replies go over a
 * socketpair; a peer that hangs is killed after STRATA_INFO_IPC_TIMEOUT_MS.
 */
#include "strata_config.h"
#include "strata_info.h"
#include "strata_cuda.h"
#include "strata_nvml.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define STRATA_INFO_IPC_BYTES      (1ul << 20)
/* The peer's first request includes its cuInit, seconds on a large node. */
#define STRATA_INFO_IPC_TIMEOUT_MS 60000

typedef struct strata_info_ipc_request {
    int32_t device; /* where the peer maps the buffer; -1: exit */
    uint32_t seed;
    uint64_t size;
    CUipcMemHandle handle;
} strata_info_ipc_request_t;

typedef struct strata_info_ipc_reply {
    int32_t ok;
    char error[256];
} strata_info_ipc_reply_t;

typedef struct strata_info_ipc_peer {
    pid_t pid;
    int sock;
    int dead; /* stopped answering: no more requests */
    char why[256];
} strata_info_ipc_peer_t;

static uint8_t strata_info_ipc_pattern(uint32_t seed, size_t i)
{
    return (uint8_t)(seed + i * 7 + (i >> 9));
}

/* The index of the first byte that is not the pattern (or its complement),
 * or size when all are. */
static size_t strata_info_ipc_verify(const uint8_t *buf, size_t size, uint32_t seed,
                                     uint8_t flip)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (buf[i] != (uint8_t)(strata_info_ipc_pattern(seed, i) ^ flip)) {
            break;
        }
    }
    return i;
}

static void strata_info_ipc_fill(uint8_t *buf, size_t size, uint32_t seed, uint8_t flip)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        buf[i] = (uint8_t)(strata_info_ipc_pattern(seed, i) ^ flip);
    }
}

/* A CUDA call that failed, as "cuIpcOpenMemHandle: CUDA_ERROR_... (...)". */
static int strata_info_ipc_cuda_failed(CUresult res, const char *call, char *error, size_t max)
{
    char str[160];

    if (res == CUDA_SUCCESS) {
        return 0;
    }
    snprintf(error, max, "%s: %s", call, strata_cuda_result_str(res, str, sizeof(str)));
    return 1;
}

static int strata_info_ipc_copy(CUdeviceptr dst_dev, void *dst_host, CUdeviceptr src_dev,
                                const void *src_host, size_t size, char *error, size_t max)
{
    CUresult res = (dst_host != NULL)
                           ? strata_cuda.cuMemcpyDtoHAsync(dst_host, src_dev, size, 0)
                           : strata_cuda.cuMemcpyHtoDAsync(dst_dev, src_host, size, 0);

    if (strata_info_ipc_cuda_failed(res, (dst_host != NULL) ? "cuMemcpyDtoHAsync"
                                                            : "cuMemcpyHtoDAsync",
                                    error, max)) {
        return -1;
    }
    return strata_info_ipc_cuda_failed(strata_cuda.cuStreamSynchronize(0), "cuStreamSynchronize",
                                       error, max)
                   ? -1
                   : 0;
}

/* ---- the peer process ---- */

/* Maps the buffer, checks the pattern, writes its complement back. */
static int strata_info_ipc_peer_map(const strata_info_ipc_request_t *req, uint8_t *host,
                                    char *error, size_t max)
{
    CUdeviceptr ptr;
    CUresult res;
    int rc;

    res = strata_cuda.cuIpcOpenMemHandle(&ptr, req->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (strata_info_ipc_cuda_failed(res, "cuIpcOpenMemHandle", error, max)) {
        return -1;
    }
    rc = strata_info_ipc_copy(0, host, ptr, NULL, req->size, error, max);
    if (rc == 0) {
        size_t bad = strata_info_ipc_verify(host, req->size, req->seed, 0);

        if (bad < req->size) {
            snprintf(error, max, "the mapped buffer reads wrong at byte %zu: expected 0x%02x, "
                     "got 0x%02x", bad, strata_info_ipc_pattern(req->seed, bad), host[bad]);
            rc = -1;
        }
    }
    if (rc == 0) {
        strata_info_ipc_fill(host, req->size, req->seed, 0xff);
        rc = strata_info_ipc_copy(ptr, NULL, 0, host, req->size, error, max);
    }
    res = strata_cuda.cuIpcCloseMemHandle(ptr);
    if ((rc == 0) && strata_info_ipc_cuda_failed(res, "cuIpcCloseMemHandle", error, max)) {
        rc = -1;
    }
    return rc;
}

static void strata_info_ipc_peer_serve(const strata_info_ipc_request_t *req,
                                       strata_info_ipc_reply_t *reply)
{
    CUcontext saved;
    uint8_t *host;

    reply->ok = 0;
    if (strata_cuda_load() != 0) {
        snprintf(reply->error, sizeof(reply->error), "CUDA in a second process: %s",
                 strata_cuda_error());
        return;
    }
    host = malloc(req->size);
    if (host == NULL) {
        snprintf(reply->error, sizeof(reply->error), "out of host memory");
        return;
    }
    if (strata_cuda_ctx_push(req->device, &saved) != 0) {
        snprintf(reply->error, sizeof(reply->error), "cannot make GPU %d's context current",
                 req->device);
    } else {
        reply->ok = (strata_info_ipc_peer_map(req, host, reply->error, sizeof(reply->error)) == 0);
        strata_cuda_ctx_pop(saved);
    }
    free(host);
}

int strata_info_ipc_peer_main(int sock)
{
    strata_info_ipc_request_t req;
    strata_info_ipc_reply_t reply;

    while (recv(sock, &req, sizeof(req), 0) == (ssize_t)sizeof(req)) {
        if ((req.device < 0) || (req.size == 0) || (req.size > STRATA_INFO_IPC_BYTES)) {
            break;
        }
        memset(&reply, 0, sizeof(reply));
        strata_info_ipc_peer_serve(&req, &reply);
        if (send(sock, &reply, sizeof(reply), MSG_NOSIGNAL) != (ssize_t)sizeof(reply)) {
            break;
        }
    }
    return 0;
}

/* ---- this process ---- */

static int strata_info_ipc_peer_start(strata_info_t *info, strata_info_ipc_peer_t *peer)
{
    int fds[2];

    memset(peer, 0, sizeof(*peer));
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
        snprintf(peer->why, sizeof(peer->why), "socketpair: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    peer->pid = fork();
    if (peer->pid < 0) {
        snprintf(peer->why, sizeof(peer->why), "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (peer->pid == 0) {
        char fd_arg[16];

        (void)fcntl(fds[1], F_SETFD, 0); /* kept across exec */
        snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
        execl(info->self_exe, info->self_exe, "--ipc-peer", fd_arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    peer->sock = fds[0];
    return 0;
}

/* Why the peer stopped answering: how it ended, if it did. */
static void strata_info_ipc_peer_lost(strata_info_ipc_peer_t *peer, const char *what)
{
    int status = 0;

    peer->dead = 1;
    if (waitpid(peer->pid, &status, WNOHANG) == peer->pid) {
        peer->pid = 0;
        if (WIFSIGNALED(status)) {
            snprintf(peer->why, sizeof(peer->why), "the peer process died (signal %d) %s",
                     WTERMSIG(status), what);
            return;
        }
        snprintf(peer->why, sizeof(peer->why), "the peer process exited (status %d) %s%s",
                 WEXITSTATUS(status), what,
                 (WEXITSTATUS(status) == 127) ? ": it could not be started" : "");
        return;
    }
    snprintf(peer->why, sizeof(peer->why), "the peer process stopped answering %s", what);
}

static int strata_info_ipc_peer_ask(strata_info_ipc_peer_t *peer,
                                    const strata_info_ipc_request_t *req,
                                    strata_info_ipc_reply_t *reply)
{
    struct pollfd pfd = {.fd = peer->sock, .events = POLLIN};
    int rc;

    if (send(peer->sock, req, sizeof(*req), MSG_NOSIGNAL) != (ssize_t)sizeof(*req)) {
        strata_info_ipc_peer_lost(peer, "before the request");
        return -1;
    }
    do {
        rc = poll(&pfd, 1, STRATA_INFO_IPC_TIMEOUT_MS);
    } while ((rc < 0) && (errno == EINTR));
    if (rc == 0) {
        kill(peer->pid, SIGKILL);
        (void)waitpid(peer->pid, NULL, 0);
        peer->pid  = 0;
        peer->dead = 1;
        snprintf(peer->why, sizeof(peer->why), "the peer process gave no answer in %d s (killed)",
                 STRATA_INFO_IPC_TIMEOUT_MS / 1000);
        return -1;
    }
    if (recv(peer->sock, reply, sizeof(*reply), 0) != (ssize_t)sizeof(*reply)) {
        /* Give a dying peer a moment to be reaped, for its exit status. */
        usleep(100000);
        strata_info_ipc_peer_lost(peer, "while mapping the buffer");
        return -1;
    }
    reply->error[sizeof(reply->error) - 1] = '\0';
    return 0;
}

static void strata_info_ipc_peer_stop(strata_info_ipc_peer_t *peer)
{
    strata_info_ipc_request_t req = {.device = -1};

    if (!peer->dead) {
        (void)send(peer->sock, &req, sizeof(req), MSG_NOSIGNAL);
    }
    close(peer->sock);
    if (peer->pid > 0) {
        (void)waitpid(peer->pid, NULL, 0);
    }
}

/* Exports a buffer on `exporter`, has the peer map it on `importer`, and
 * checks what the peer wrote back.  Returns 0 if every byte was right. */
static int strata_info_ipc_try(strata_info_ipc_peer_t *peer, int exporter, int importer,
                               uint8_t *host, char *error, size_t max)
{
    strata_info_ipc_request_t req = {.device = importer, .size = STRATA_INFO_IPC_BYTES};
    strata_info_ipc_reply_t reply;
    CUdeviceptr ptr = 0;
    CUcontext saved;
    size_t bad;
    int rc = -1;

    req.seed = (uint32_t)(exporter * 131 + importer * 7 + 1);
    if (strata_cuda_ctx_push(exporter, &saved) != 0) {
        snprintf(error, max, "cannot make GPU %d's context current", exporter);
        return -1;
    }
    if (strata_info_ipc_cuda_failed(strata_cuda.cuMemAlloc(&ptr, req.size), "cuMemAlloc", error,
                                    max)) {
        goto out_pop;
    }
    strata_info_ipc_fill(host, req.size, req.seed, 0);
    if ((strata_info_ipc_copy(ptr, NULL, 0, host, req.size, error, max) != 0) ||
        strata_info_ipc_cuda_failed(strata_cuda.cuIpcGetMemHandle(&req.handle, ptr),
                                    "cuIpcGetMemHandle", error, max)) {
        goto out_free;
    }
    if (strata_info_ipc_peer_ask(peer, &req, &reply) != 0) {
        snprintf(error, max, "%s", peer->why);
        goto out_free;
    }
    if (!reply.ok) {
        snprintf(error, max, "in the peer: %s", reply.error);
        goto out_free;
    }
    if (strata_info_ipc_copy(0, host, ptr, NULL, req.size, error, max) != 0) {
        goto out_free;
    }
    bad = strata_info_ipc_verify(host, req.size, req.seed, 0xff);
    if (bad < req.size) {
        snprintf(error, max, "what the peer wrote reads wrong here at byte %zu", bad);
        goto out_free;
    }
    rc = 0;
out_free:
    (void)strata_cuda.cuMemFree(ptr);
out_pop:
    strata_cuda_ctx_pop(saved);
    return rc;
}

/* "peer access yes, NVLink" for two different GPUs. */
static void strata_info_ipc_pair_link(const strata_info_t *info, int a, int b, char *buf,
                                      size_t max)
{
    __typeof__(&cuDeviceCanAccessPeer) can_access = strata_info_cuda_symbol(
            "cuDeviceCanAccessPeer");
    const char *access = "not reported by this driver";
    CUdevice dev_a, dev_b;
    int can = 0;

    if ((can_access != NULL) && (strata_cuda.cuDeviceGet(&dev_a, a) == CUDA_SUCCESS) &&
        (strata_cuda.cuDeviceGet(&dev_b, b) == CUDA_SUCCESS) &&
        (can_access(&can, dev_a, dev_b) == CUDA_SUCCESS)) {
        access = can ? "yes" : "no (copies go through host memory, by the driver)";
    }
    snprintf(buf, max, "; peer access: %s; link: %s", access,
             (strata_nvml_load() == 0)
                     ? strata_gpu_link_name(strata_nvml_gpu_link(info->gpus[a].bus_id,
                                                                 info->gpus[b].bus_id))
                     : "unknown (no NVML)");
}

static void strata_info_ipc_check_pair(strata_info_t *info, strata_info_ipc_peer_t *peer, int a,
                                       int b, uint8_t *host)
{
    char item[48], error[512], link[160] = "";
    int from, to;

    snprintf(item, sizeof(item), "GPU %d <-> GPU %d", a, b);
    for (from = a, to = b;; from = b, to = a) {
        if (strata_info_ipc_try(peer, from, to, host, error, sizeof(error)) != 0) {
            strata_info_line(info, STRATA_INFO_WARN, item,
                             "exported on GPU %d, mapped in another process on GPU %d: %s. "
                             "gpu_ipc cannot be used there: device data is staged through host "
                             "memory",
                             from, to, error);
            return;
        }
        if ((a == b) || (from == b)) {
            break;
        }
    }
    if (a == b) {
        strata_info_line(info, STRATA_INFO_OK, item,
                         "IPC works between two processes on one GPU (mapped, read and written "
                         "back)");
        return;
    }
    strata_info_ipc_pair_link(info, a, b, link, sizeof(link));
    strata_info_line(info, STRATA_INFO_OK, item,
                     "IPC works both ways (exported on each, mapped, read and written back on "
                     "the other)%s",
                     link);
}

void strata_info_check_ipc(strata_info_t *info)
{
    strata_info_ipc_peer_t peer;
    int a, b, unchecked = 0;
    uint8_t *host;

    strata_info_section(info, "CUDA IPC");
    if (!info->cuda_ready) {
        strata_info_line(info, STRATA_INFO_NOTE, "IPC", "no usable GPU (see CUDA)");
        return;
    }
    host = malloc(STRATA_INFO_IPC_BYTES);
    if (host == NULL) {
        strata_info_line(info, STRATA_INFO_WARN, "IPC", "not checked: out of host memory");
        return;
    }
    if (strata_info_ipc_peer_start(info, &peer) != 0) {
        strata_info_line(info, STRATA_INFO_WARN, "IPC", "not checked: %s", peer.why);
        free(host);
        return;
    }
    for (a = 0; a < info->num_gpus; ++a) {
        for (b = a; b < info->num_gpus; ++b) {
            if (peer.dead) {
                ++unchecked;
            } else {
                strata_info_ipc_check_pair(info, &peer, a, b, host);
            }
        }
    }
    if (unchecked > 0) {
        strata_info_line(info, STRATA_INFO_NOTE, "other pairs",
                         "%d not checked: the peer process is gone", unchecked);
    }
    strata_info_ipc_peer_stop(&peer);
    free(host);
}
