/*
 * What the calls of a process cost the GPU, counted (CUDA_STANDIN_COUNTS).
 *
 * Tests assert budgets that do not depend on timing: how often the host
 * waited for the device (cuStreamSynchronize, cuEventSynchronize,
 * cuCtxSynchronize, and synchronous copies and memsets that block until
 * they land), how many kernels were launched, and how many copies of each
 * direction and memsets were issued.  On a GPU shared without MPS every
 * compute-engine operation (kernel, device-to-device copy, memset) pays a
 * context switch, and every host-side wait a round trip: these are the
 * numbers a fast path keeps low.  On the host's side: how often an address
 * was asked about (ptrq: cuPointerGetAttribute, cuPointerGetAttributes and
 * cuMemGetAddressRange, the stand-in's queries that take an address and say
 * what is there) and how many driver calls were made in all (calls: every
 * entry point, failed and forced-to-fail ones included, as each costs a trip
 * into the driver; cuPointerSetAttribute and cuMemRetainAllocationHandle are
 * calls, not queries).  Buffer detection runs for every message UCP sends,
 * so these are the budget of its path.
 *
 * Device-memory traffic (traffic: bytes) is what bounds a collective on a
 * GPU: the bytes each operation reads from and writes to device memory (an
 * allocation of the stand-in's on any device, IPC mappings of a peer's
 * included), counted when the operation is issued, as a GPU's memory would
 * see them: a device-to-device copy of n bytes reads n and writes n, a
 * host-to-device copy writes n, a device-to-host copy reads n, a memset
 * writes n; a reduction kernel reads count elements of each of its nsrc
 * inputs and writes count of its output (its launch parameter says how
 * many; each further output it writes counts too).  Stream memory operations (4- or 8-byte flags) are not counted.
 * A collective's minimum is every input byte read once and every output
 * byte written once.
 *
 * With CUDA_STANDIN_COUNTS=FILE each process appends one line at exit:
 *   pid=P waits=N launches=N dtod=N htod=N dtoh=N memset=N ptrq=N calls=N traffic=N
 * in one write(2) on an O_APPEND descriptor, so lines of processes exiting
 * together do not interleave.  A forked child starts from zero.
 */
#include "cuda_standin.h"

#include "kernels/strata_reduce.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static unsigned long long cuda_standin_counts[CUDA_STANDIN_COUNT_KINDS];
static int cuda_standin_count_registered;

/* Atomic: the call counts are taken before the global lock (and by calls
 * that never take it). */
void cuda_standin_count(cuda_standin_count_kind_t kind)
{
    cuda_standin_count_add(kind, 1);
}

void cuda_standin_count_add(cuda_standin_count_kind_t kind, unsigned long long n)
{
    __atomic_add_fetch(&cuda_standin_counts[kind], n, __ATOMIC_RELAXED);
}

/* Through one more macro, so that cuda.h's renaming applies first (the
 * list's ids are the exported names: cuMemGetAddressRange_v2). */
#define CUDA_STANDIN_COUNT_ID(_name) CUDA_STANDIN_API_ID(_name)

void cuda_standin_count_call(cuda_standin_api_id_t id)
{
    cuda_standin_count(CUDA_STANDIN_COUNT_CALLS);
    if ((id == CUDA_STANDIN_COUNT_ID(cuPointerGetAttribute)) ||
        (id == CUDA_STANDIN_COUNT_ID(cuPointerGetAttributes)) ||
        (id == CUDA_STANDIN_COUNT_ID(cuMemGetAddressRange))) {
        cuda_standin_count(CUDA_STANDIN_COUNT_PTRQ);
    }
}

void cuda_standin_count_copy(uintptr_t dst, uintptr_t src, size_t len)
{
    int dst_dev = cuda_standin_map_find(dst) != NULL;
    int src_dev = cuda_standin_map_find(src) != NULL;

    if (dst_dev && src_dev) {
        cuda_standin_count(CUDA_STANDIN_COUNT_DTOD);
    } else if (dst_dev) {
        cuda_standin_count(CUDA_STANDIN_COUNT_HTOD);
    } else if (src_dev) {
        cuda_standin_count(CUDA_STANDIN_COUNT_DTOH);
    }
    cuda_standin_count_add(CUDA_STANDIN_COUNT_TRAFFIC,
                           (unsigned long long)len * (unsigned)(dst_dev + src_dev));
}

void cuda_standin_count_memset(uintptr_t dst, size_t len)
{
    cuda_standin_count(CUDA_STANDIN_COUNT_MEMSET);
    if (cuda_standin_map_find(dst) != NULL) {
        cuda_standin_count_add(CUDA_STANDIN_COUNT_TRAFFIC, len);
    }
}

void cuda_standin_count_kernel(const strata_reduce_host_kernel_t *kernel, const void *params)
{
    strata_reduce_args_t args;

    memcpy(&args, params, sizeof(args));
    if ((args.nsrc < 1) || (args.nsrc > STRATA_REDUCE_MAX_SRCS) || (args.nalso < 0) ||
        (args.nalso > STRATA_REDUCE_MAX_ALSO)) {
        return; /* it faults when it runs, and moves nothing */
    }
    cuda_standin_count_add(CUDA_STANDIN_COUNT_TRAFFIC,
                           args.count * kernel->elem_size *
                               (unsigned long long)(args.nsrc + 1 + args.nalso));
}

static void cuda_standin_count_write(void)
{
    char line[256];
    int fd, n;

    if (cuda_standin_config.counts_path[0] == '\0') {
        return;
    }
    n  = snprintf(line, sizeof(line),
                  "pid=%d waits=%llu launches=%llu dtod=%llu htod=%llu "
                   "dtoh=%llu memset=%llu ptrq=%llu calls=%llu traffic=%llu\n",
                  (int)getpid(), cuda_standin_counts[CUDA_STANDIN_COUNT_WAIT],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_LAUNCH],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_DTOD],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_HTOD],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_DTOH],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_MEMSET],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_PTRQ],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_CALLS],
                  cuda_standin_counts[CUDA_STANDIN_COUNT_TRAFFIC]);
    fd = open(cuda_standin_config.counts_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cuda_standin: CUDA_STANDIN_COUNTS=%s: %s\n",
                cuda_standin_config.counts_path, strerror(errno));
        return;
    }
    if (write(fd, line, (size_t)n) != n) {
        fprintf(stderr, "cuda_standin: CUDA_STANDIN_COUNTS=%s: short write\n",
                cuda_standin_config.counts_path);
    }
    close(fd);
}

void cuda_standin_count_setup(void)
{
    if ((cuda_standin_config.counts_path[0] != '\0') && !cuda_standin_count_registered) {
        cuda_standin_count_registered = 1;
        atexit(cuda_standin_count_write);
    }
}

void cuda_standin_count_forget(void)
{
    memset(cuda_standin_counts, 0, sizeof(cuda_standin_counts));
}
