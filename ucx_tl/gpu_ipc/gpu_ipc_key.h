/*
 * The packed remote key of the gpu_ipc memory domain.
 *
 * A key describes the WHOLE allocation (or VMM mapping) that contains the
 * registered buffer, never just the buffer: CUDA exports allocations, and a
 * peer maps each one once and reuses the mapping for every buffer in it.
 * The owner's buffer id travels with the key so that a peer can tell a
 * freed-and-reallocated allocation at the same address from the one it has
 * mapped (a stale mapping would deliver the old allocation's bytes), and
 * the owner's start time so that a new process reusing a dead owner's pid
 * (buffer ids restart in every process) is not taken for it.
 *
 * The blob crosses process boundaries and may arrive damaged, so unpacking
 * validates it (magic, version, handle type, sizes, checksum) and never
 * trusts a field it has not checked.  This file is plain C with no UCX or
 * CUDA dependency so the format is unit-tested on its own.
 */
#ifndef UCT_GPU_IPC_KEY_H
#define UCT_GPU_IPC_KEY_H

#include <stddef.h>
#include <stdint.h>

#define UCT_GPU_IPC_KEY_MAGIC   0x53545241u /* "ARTS" little-endian: "STRA" in memory */
/* 2: HOST keys.  A peer of version 1 sees a version-2 key as foreign
 * (unreachable: UCP falls back) instead of failing on an unknown handle type. */
#define UCT_GPU_IPC_KEY_VERSION        2
#define UCT_GPU_IPC_LEGACY_HANDLE_SIZE 64   /* sizeof(CUipcMemHandle) */

typedef enum uct_gpu_ipc_handle_type {
    /* The memory cannot be exported (managed memory, a non-exportable
     * stream-ordered pool, a range spanning several VMM mappings): the
     * peer answers UNREACHABLE and UCP uses another protocol. */
    UCT_GPU_IPC_HANDLE_NONE   = 0,
    /* cuIpcGetMemHandle of a cuMemAlloc/cudaMalloc allocation. */
    UCT_GPU_IPC_HANDLE_LEGACY = 1,
    /* cuMemExportToShareableHandle(POSIX_FILE_DESCRIPTOR) of a VMM
     * allocation: the peer takes the owner's fd with pidfd_getfd(). */
    UCT_GPU_IPC_HANDLE_VMM_FD = 2,
    /* Host memory of the owner (base, length: the registered range), read
     * and written with process_vm_readv/writev (CMA).  A peer copies between
     * it and its own device memory through pinned bounce buffers. */
    UCT_GPU_IPC_HANDLE_HOST   = 3,
    UCT_GPU_IPC_HANDLE_LAST
} uct_gpu_ipc_handle_type_t;

typedef struct uct_gpu_ipc_key {
    uint32_t magic;
    uint16_t version;
    uint16_t handle_type;        /* uct_gpu_ipc_handle_type_t */
    uint32_t owner_pid;
    int32_t vmm_fd;              /* owner's fd of the shareable handle (VMM_FD) */
    uint64_t owner_start;        /* owner's start time (/proc/PID/stat), so that a
                                    recycled pid is not taken for the same owner */
    uint64_t base;               /* owner's address of the allocation */
    uint64_t length;             /* its length */
    uint64_t vmm_offset;         /* offset of `base` in the physical allocation */
    uint64_t buffer_id;          /* owner's CU_POINTER_ATTRIBUTE_BUFFER_ID */
    uint8_t dev_uuid[16];        /* the device that owns the memory */
    uint8_t legacy_handle[UCT_GPU_IPC_LEGACY_HANDLE_SIZE]; /* LEGACY */
    uint32_t checksum;           /* of every byte above */
} __attribute__((packed)) uct_gpu_ipc_key_t;

#define UCT_GPU_IPC_KEY_PACKED_SIZE sizeof(uct_gpu_ipc_key_t)

/* Fills magic, version and checksum of *key and copies it to buffer. */
void uct_gpu_ipc_key_pack(uct_gpu_ipc_key_t *key, void *buffer);

/*
 * Copies and validates a packed key.  Returns 0; UCT_GPU_IPC_KEY_FOREIGN
 * for a key of another format or Strata version (a peer that cannot be
 * understood: fall back, not fail); -1 for a damaged key.  Both with a
 * one-line reason in why[].
 */
#define UCT_GPU_IPC_KEY_FOREIGN (-2)
int uct_gpu_ipc_key_unpack(const void *buffer, uct_gpu_ipc_key_t *key, char *why, size_t max);

/* Checksum over a key's bytes up to (not including) the checksum field. */
uint32_t uct_gpu_ipc_key_checksum(const uct_gpu_ipc_key_t *key);

const char *uct_gpu_ipc_handle_type_name(unsigned type);

#endif /* UCT_GPU_IPC_KEY_H */
