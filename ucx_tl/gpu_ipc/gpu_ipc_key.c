/*
 * Packed remote key of gpu_ipc (see gpu_ipc_key.h).
 */
#include "gpu_ipc_key.h"

#include <stdio.h>
#include <string.h>

uint32_t uct_gpu_ipc_key_checksum(const uct_gpu_ipc_key_t *key)
{
    /* FNV-1a: cheap, and any single damaged byte changes the result.  It
     * detects corruption, not forgery; peers on one node trust each other. */
    const uint8_t *p = (const uint8_t *)key;
    size_t n         = offsetof(uct_gpu_ipc_key_t, checksum);
    uint32_t h       = 2166136261u;

    while (n-- > 0) {
        h = (h ^ *p++) * 16777619u;
    }
    return h;
}

void uct_gpu_ipc_key_pack(uct_gpu_ipc_key_t *key, void *buffer)
{
    key->magic    = UCT_GPU_IPC_KEY_MAGIC;
    key->version  = UCT_GPU_IPC_KEY_VERSION;
    key->checksum = uct_gpu_ipc_key_checksum(key);
    memcpy(buffer, key, sizeof(*key));
}

const char *uct_gpu_ipc_handle_type_name(unsigned type)
{
    switch (type) {
    case UCT_GPU_IPC_HANDLE_NONE:
        return "none";
    case UCT_GPU_IPC_HANDLE_LEGACY:
        return "legacy";
    case UCT_GPU_IPC_HANDLE_VMM_FD:
        return "vmm-fd";
    case UCT_GPU_IPC_HANDLE_HOST:
        return "host";
    default:
        return "invalid";
    }
}

static int uct_gpu_ipc_key_invalid(char *why, size_t max, const char *what, unsigned long long value)
{
    snprintf(why, max, "%s 0x%llx", what, value);
    return -1;
}

int uct_gpu_ipc_key_unpack(const void *buffer, uct_gpu_ipc_key_t *key, char *why, size_t max)
{
    uint32_t sum;

    /* Unaligned and untrusted: copy first, then look. */
    memcpy(key, buffer, sizeof(*key));
    if (key->magic != UCT_GPU_IPC_KEY_MAGIC) {
        uct_gpu_ipc_key_invalid(why, max, "not a gpu_ipc key: bad magic", key->magic);
        return UCT_GPU_IPC_KEY_FOREIGN;
    }
    if (key->version != UCT_GPU_IPC_KEY_VERSION) {
        uct_gpu_ipc_key_invalid(why, max, "gpu_ipc key of another Strata version:",
                                key->version);
        return UCT_GPU_IPC_KEY_FOREIGN;
    }
    sum = uct_gpu_ipc_key_checksum(key);
    if (sum != key->checksum) {
        snprintf(why, max, "gpu_ipc key damaged: checksum 0x%x, expected 0x%x", key->checksum, sum);
        return -1;
    }
    if (key->handle_type >= UCT_GPU_IPC_HANDLE_LAST) {
        return uct_gpu_ipc_key_invalid(why, max, "gpu_ipc key with unknown handle type",
                                       key->handle_type);
    }
    if ((key->handle_type != UCT_GPU_IPC_HANDLE_NONE) &&
        ((key->length == 0) || (key->base + key->length < key->base) || (key->owner_pid == 0))) {
        snprintf(why, max, "gpu_ipc key with impossible range 0x%llx+%llu or owner %u",
                 (unsigned long long)key->base, (unsigned long long)key->length, key->owner_pid);
        return -1;
    }
    if ((key->handle_type == UCT_GPU_IPC_HANDLE_VMM_FD) && (key->vmm_fd < 0)) {
        return uct_gpu_ipc_key_invalid(why, max, "gpu_ipc VMM key with bad fd",
                                       (unsigned)key->vmm_fd);
    }
    return 0;
}
