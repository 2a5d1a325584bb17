/*
 * Stream memory operations: cuStreamWaitValue32/64 and cuStreamWriteValue32/64.
 *
 * Like every queued operation they run at a completion point of their
 * stream (see cuda_standin_stream.c).  A write stores the word with release
 * order, so the bytes the stream wrote before it are visible to whoever sees
 * the word: another process reading the same memory through an IPC mapping,
 * or the host reading pinned memory.  A wait polls the word until its
 * condition holds; its stream, and everything ordered after it, goes no
 * further until then.  The condition is met by another process, by the host
 * storing to pinned memory, or by a write queued earlier: a wait that only
 * work of this process queued later could satisfy never ends on a GPU
 * either.  The stand-in polls without the driver's lock, so the process's
 * other threads go on meanwhile (their calls may be what meets the
 * condition: another communicator's collective, say); after
 * CUDA_STANDIN_WAIT_VALUE_MS (default 10000) it gives up with a sticky
 * CUDA_ERROR_LAUNCH_TIMEOUT, so that a wrong hand-off fails a test instead
 * of hanging it.
 */
#include "cuda_standin.h"

#include <string.h>
#include <time.h>

/* The CPU view of the word: device and managed memory through the
 * mapping's alias, host memory (pinned, as the driver requires) directly. */
static CUresult cuda_standin_memop_word(uintptr_t addr, size_t len, void **cpu_p)
{
    cuda_standin_map_t *map = cuda_standin_map_find(addr);

    if (map != NULL) {
        if (addr + len > map->base + map->size) {
            return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx: past its allocation",
                                      (unsigned long)addr);
        }
        *cpu_p = map->alias + (addr - map->base);
        return CUDA_SUCCESS;
    }
    if (cuda_standin_vaspace_contains(addr)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%lx is not mapped (freed?)",
                                  (unsigned long)addr);
    }
    if (!cuda_standin_mem_host_pinned(addr, len)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE,
                                  "0x%lx is neither device nor page-locked host memory",
                                  (unsigned long)addr);
    }
    *cpu_p = (void *)addr;
    return CUDA_SUCCESS;
}

static uint64_t cuda_standin_memop_load(const void *cpu, size_t len)
{
    return (len == sizeof(uint32_t)) ? __atomic_load_n((const uint32_t *)cpu, __ATOMIC_ACQUIRE)
                                     : __atomic_load_n((const uint64_t *)cpu, __ATOMIC_ACQUIRE);
}

/* cuda.h's conditions; GEQ compares as the signed difference, so that a
 * counter may wrap. */
static int cuda_standin_memop_holds(const cuda_standin_op_t *op, uint64_t now)
{
    uint64_t mask = (op->len == sizeof(uint32_t)) ? UINT32_MAX : UINT64_MAX;

    switch (op->flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return (op->len == sizeof(uint32_t)) ? ((int32_t)(uint32_t)(now - op->word) >= 0)
                                             : ((int64_t)(now - op->word) >= 0);
    case CU_STREAM_WAIT_VALUE_EQ:
        return now == op->word;
    case CU_STREAM_WAIT_VALUE_AND:
        return (now & op->word) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
        return (~(now | op->word) & mask) != 0;
    default:
        return 0;
    }
}

int cuda_standin_memop_ready(const cuda_standin_op_t *op)
{
    void *cpu;

    if (op->kind != CUDA_STANDIN_OP_WAIT_VALUE) {
        return 1;
    }
    return (cuda_standin_memop_word(op->dst, op->len, &cpu) != CUDA_SUCCESS) ||
           cuda_standin_memop_holds(op, cuda_standin_memop_load(cpu, op->len));
}

uint64_t cuda_standin_memop_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cuda_standin_memop_wait(const cuda_standin_op_t *op, void *cpu)
{
    const struct timespec pause = {0, 20000};
    uint64_t deadline = cuda_standin_memop_now_ms() + (uint64_t)cuda_standin_config.wait_value_ms;

    while (!cuda_standin_memop_holds(op, cuda_standin_memop_load(cpu, op->len))) {
        if (cuda_standin_memop_now_ms() > deadline) {
            cuda_standin_fault(CUDA_ERROR_LAUNCH_TIMEOUT,
                               "cuStreamWaitValue%zu on 0x%lx (condition %u, operand 0x%llx) not "
                               "met within %d ms (CUDA_STANDIN_WAIT_VALUE_MS)",
                               op->len * 8, (unsigned long)op->dst, op->flags & 0xf,
                               (unsigned long long)op->word, cuda_standin_config.wait_value_ms);
            return;
        }
        cuda_standin_lock_pause(&pause);
    }
}

void cuda_standin_memop_run(const cuda_standin_op_t *op)
{
    void *cpu;

    if (cuda_standin_memop_word(op->dst, op->len, &cpu) != CUDA_SUCCESS) {
        cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS, "stream memory operation on 0x%lx: unmapped",
                           (unsigned long)op->dst);
        return;
    }
    if (op->kind == CUDA_STANDIN_OP_WAIT_VALUE) {
        cuda_standin_memop_wait(op, cpu);
    } else if (op->len == sizeof(uint32_t)) {
        __atomic_store_n((uint32_t *)cpu, (uint32_t)op->word, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n((uint64_t *)cpu, op->word, __ATOMIC_RELEASE);
    }
}

static CUresult cuda_standin_memop_enqueue(CUstream hstream, cuda_standin_op_kind_t kind,
                                           CUdeviceptr addr, uint64_t word, size_t len,
                                           unsigned flags)
{
    cuda_standin_op_t op = {.kind = kind, .dst = addr, .len = len, .word = word, .flags = flags};
    cuda_standin_stream_t *stream = NULL;
    CUresult status;
    void *cpu;

    cuda_standin_note("0x%llx, 0x%llx, flags 0x%x, stream %p", (unsigned long long)addr,
                      (unsigned long long)word, flags, (void *)hstream);
    if ((addr % len) != 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "0x%llx is not %zu-byte aligned",
                                  (unsigned long long)addr, len);
    }
    if ((kind == CUDA_STANDIN_OP_WAIT_VALUE) ? ((flags & 0xf) > CU_STREAM_WAIT_VALUE_NOR)
                                             : (flags > CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    status = cuda_standin_memop_word(addr, len, &cpu);
    if (status == CUDA_SUCCESS) {
        status = cuda_standin_stream_get(hstream, &stream);
    }
    if (status == CUDA_SUCCESS) {
        op.device = cuda_standin_stream_device(stream);
        status    = cuda_standin_stream_enqueue(stream, &op);
    }
    return status;
}

CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                             unsigned int flags)
{
    CUDA_STANDIN_CALL(cuStreamWaitValue32, CUDA_STANDIN_IN_CTX,
                      cuda_standin_memop_enqueue(stream, CUDA_STANDIN_OP_WAIT_VALUE, addr, value,
                                                 sizeof(uint32_t), flags));
}

CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                             unsigned int flags)
{
    CUDA_STANDIN_CALL(cuStreamWaitValue64, CUDA_STANDIN_IN_CTX,
                      cuda_standin_memop_enqueue(stream, CUDA_STANDIN_OP_WAIT_VALUE, addr, value,
                                                 sizeof(uint64_t), flags));
}

CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                              unsigned int flags)
{
    CUDA_STANDIN_CALL(cuStreamWriteValue32, CUDA_STANDIN_IN_CTX,
                      cuda_standin_memop_enqueue(stream, CUDA_STANDIN_OP_WRITE_VALUE, addr, value,
                                                 sizeof(uint32_t), flags));
}

CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                              unsigned int flags)
{
    CUDA_STANDIN_CALL(cuStreamWriteValue64, CUDA_STANDIN_IN_CTX,
                      cuda_standin_memop_enqueue(stream, CUDA_STANDIN_OP_WRITE_VALUE, addr, value,
                                                 sizeof(uint64_t), flags));
}
