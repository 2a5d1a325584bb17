/*
 * Hardware queues (CUDA_STANDIN_CONNECTIONS=N): the GPU's few first-in
 * first-out work queues that streams share.
 *
 * A GPU does not run each stream on a queue of its own: a context's streams
 * are mapped round-robin onto CUDA_DEVICE_MAX_CONNECTIONS queues (8 by
 * default), and each queue runs its operations in the order they were
 * issued, whichever stream issued them.  A cuStreamWaitValue whose
 * condition does not hold stops its queue: every stream mapped there waits
 * with it, not only its own.  Ordering expressed only through stream memory
 * operations is invisible to CUDA (the driver's "Stream Memory Operations"
 * section), so code that puts a wait in front of work that would release it
 * hangs once the two land on one queue.  Under MPS the clients of a device
 * share the server's queues.
 *
 * What this file models, and how:
 *  - A pool of N queues per context (per device under CUDA_STANDIN_MPS=1).
 *    Stream k created in the pool goes to queue k % N; the default stream
 *    is queue 0 (the null stream is a context's first), so with N >= 2 the
 *    first created stream has a queue of its own.
 *  - Every operation queued gets the next ticket of its queue and an entry
 *    in the queue's FIFO.  cuda_standin_stream.c runs an operation only once
 *    every entry of its queue with a smaller ticket has run (running those
 *    first, whichever stream they belong to), and only one thread at a time
 *    runs a queue's operations: a blocked wait therefore holds its whole
 *    queue, at completion points and in queries alike.
 *  - Under CUDA_STANDIN_MPS=1 the processes on a device share the queues:
 *    their tickets come from one counter per queue in shared memory, and
 *    each process lists there the cuStreamWaitValue operations it has queued
 *    and not yet run.  An operation of another process runs only once no
 *    such wait with a smaller ticket on its queue is left.  Only waits are
 *    shared: another process's copies and kernels finish on their own on a
 *    GPU and hold up nobody, and their effects reach this process only
 *    through memory, which a wait would name.  Operations run lazily in the
 *    process that queued them (cuda_standin_stream.c), so a wait counts as
 *    pending until its own process has run it; a process that dies leaves
 *    nothing pending.  The shared memory belongs to the processes started by
 *    one parent (an MPI job's ranks on a node are children of its launcher,
 *    sharing a GPU there): /dev/shm/cuda_standin.hwq.<uid>.<parent pid>.
 *    <parent start time>.<device>, removed by the last process to leave (or
 *    by the next one to arrive, once the parent is gone).
 * Unset (0), none of this exists and every stream runs on its own, as
 * before.
 */
#define _GNU_SOURCE
#include "cuda_standin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The waits of all processes on a device that may be pending at once. */
#define CUDA_STANDIN_HWQ_SHARED_WAITS 16384
#define CUDA_STANDIN_HWQ_MAGIC        0x5148575349445453ull /* "STDISWHQ" */
#define CUDA_STANDIN_HWQ_PREFIX       "cuda_standin.hwq."

/* One entry of a queue's FIFO: an operation not run yet. */
typedef struct cuda_standin_hwq_entry {
    struct cuda_standin_hwq_entry *next;
    cuda_standin_stream_t *stream;
    uint64_t seq; /* the operation's position in its stream */
    uint64_t ticket;
} cuda_standin_hwq_entry_t;

enum {
    CUDA_STANDIN_HWQ_FREE,
    CUDA_STANDIN_HWQ_CLAIMED, /* being filled in: its ticket is not known yet */
    CUDA_STANDIN_HWQ_PENDING,
};

/* A wait another process may have to let pass first. */
typedef struct cuda_standin_hwq_slot {
    uint32_t state;
    int32_t pid;
    uint32_t queue;
    uint32_t reserved;
    uint64_t ticket;
} cuda_standin_hwq_slot_t;

typedef struct cuda_standin_hwq_shared {
    uint64_t magic;
    uint32_t connections; /* every process of the pool must agree */
    uint32_t users;
    uint32_t pending; /* slots not free: nothing to scan at 0 */
    uint32_t reserved;
    uint64_t tickets[CUDA_STANDIN_HWQ_MAX];
    cuda_standin_hwq_slot_t waits[CUDA_STANDIN_HWQ_SHARED_WAITS];
} cuda_standin_hwq_shared_t;

struct cuda_standin_hwq {
    struct cuda_standin_hwq_pool *pool;
    unsigned index;
    uint64_t tickets; /* handed out (a pool of this process alone) */
    cuda_standin_hwq_entry_t *head, *tail;
    int running; /* a thread runs one of its operations, and which */
    pthread_t runner;
};

typedef struct cuda_standin_hwq_pool {
    struct cuda_standin_hwq_pool *next;
    CUcontext ctx; /* whose streams it takes; NULL under MPS: the device's */
    int device;
    unsigned streams; /* mapped so far, the default stream counted */
    cuda_standin_hwq_shared_t *shared;
    char shared_name[128];
    struct cuda_standin_hwq queues[CUDA_STANDIN_HWQ_MAX];
} cuda_standin_hwq_pool_t;

static cuda_standin_hwq_pool_t *cuda_standin_hwq_pools;
static int cuda_standin_hwq_exit_registered;
static int cuda_standin_hwq_overflow_said;

int cuda_standin_hwq_enabled(void)
{
    return cuda_standin_config.connections > 0;
}

/* --- The pool shared by the processes on a device (MPS) --- */

/* The parent's start time (clock ticks since boot, /proc/PID/stat field
 * 22), so that a later process with a reused parent pid finds a pool of
 * its own. */
static unsigned long long cuda_standin_hwq_start_time(pid_t pid)
{
    unsigned long long start = 0;
    char path[64], buf[1024], *p;
    int fd, field;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    p      = strrchr(buf, ')'); /* the command may hold spaces */
    for (field = 2; (p != NULL) && (field < 22); ++field) {
        p = strchr(p + 1, ' ');
    }
    if (p != NULL) {
        start = strtoull(p + 1, NULL, 10);
    }
    return start;
}

/* Pools whose parent is gone: their processes are gone too, or no longer
 * share a GPU with anybody new. */
static void cuda_standin_hwq_remove_stale(void)
{
    char prefix[64], name[300];
    struct dirent *de;
    DIR *dir = opendir("/dev/shm");
    int len;
    long ppid;

    if (dir == NULL) {
        return;
    }
    len = snprintf(prefix, sizeof(prefix), CUDA_STANDIN_HWQ_PREFIX "%u.", (unsigned)getuid());
    while ((de = readdir(dir)) != NULL) {
        if (strncmp(de->d_name, prefix, (size_t)len) != 0) {
            continue;
        }
        ppid = strtol(de->d_name + len, NULL, 10);
        if ((ppid > 0) && (kill((pid_t)ppid, 0) != 0) && (errno == ESRCH)) {
            snprintf(name, sizeof(name), "/%s", de->d_name);
            (void)shm_unlink(name);
        }
    }
    closedir(dir);
}

static void cuda_standin_hwq_shared_attach(cuda_standin_hwq_pool_t *pool)
{
    size_t size = sizeof(cuda_standin_hwq_shared_t);
    cuda_standin_hwq_shared_t *shared;
    uint64_t magic = 0;
    pid_t ppid     = getppid();
    int fd;

    cuda_standin_hwq_remove_stale();
    snprintf(pool->shared_name, sizeof(pool->shared_name),
             "/" CUDA_STANDIN_HWQ_PREFIX "%u.%d.%llu.%d", (unsigned)getuid(), (int)ppid,
             cuda_standin_hwq_start_time(ppid), pool->device);
    fd = shm_open(pool->shared_name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if ((fd < 0) || (ftruncate(fd, (off_t)size) != 0)) {
        fprintf(stderr, "cuda_standin: CUDA_STANDIN_CONNECTIONS under CUDA_STANDIN_MPS: %s: %s\n",
                pool->shared_name, strerror(errno));
        abort();
    }
    shared = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (shared == MAP_FAILED) {
        fprintf(stderr, "cuda_standin: mmap of %s: %s\n", pool->shared_name, strerror(errno));
        abort();
    }
    /* the first process sets the pool's settings; a later one must agree */
    if (__atomic_compare_exchange_n(&shared->magic, &magic, CUDA_STANDIN_HWQ_MAGIC, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&shared->connections, (uint32_t)cuda_standin_config.connections,
                         __ATOMIC_RELEASE);
    }
    while (__atomic_load_n(&shared->connections, __ATOMIC_ACQUIRE) == 0) {
        sched_yield();
    }
    if (shared->connections != (uint32_t)cuda_standin_config.connections) {
        fprintf(stderr,
                "cuda_standin: CUDA_STANDIN_CONNECTIONS=%d, but other processes on device %d "
                "share %u queues\n",
                cuda_standin_config.connections, pool->device, shared->connections);
        abort();
    }
    __atomic_add_fetch(&shared->users, 1, __ATOMIC_ACQ_REL);
    pool->shared = shared;
}

/* This process's waits no longer hold anybody up (it exits, or forgot its
 * parent's state in a forked child: those are the parent's). */
static void cuda_standin_hwq_shared_release(cuda_standin_hwq_shared_t *shared, pid_t pid)
{
    size_t i;

    for (i = 0; i < CUDA_STANDIN_HWQ_SHARED_WAITS; ++i) {
        cuda_standin_hwq_slot_t *slot = &shared->waits[i];

        if ((__atomic_load_n(&slot->state, __ATOMIC_ACQUIRE) != CUDA_STANDIN_HWQ_FREE) &&
            (slot->pid == pid)) {
            __atomic_store_n(&slot->state, CUDA_STANDIN_HWQ_FREE, __ATOMIC_RELEASE);
            __atomic_sub_fetch(&shared->pending, 1, __ATOMIC_ACQ_REL);
        }
    }
}

static void cuda_standin_hwq_exit(void)
{
    cuda_standin_hwq_pool_t *pool;

    for (pool = cuda_standin_hwq_pools; pool != NULL; pool = pool->next) {
        if (pool->shared == NULL) {
            continue;
        }
        cuda_standin_hwq_shared_release(pool->shared, getpid());
        if (__atomic_sub_fetch(&pool->shared->users, 1, __ATOMIC_ACQ_REL) == 0) {
            (void)shm_unlink(pool->shared_name);
        }
        pool->shared = NULL;
    }
}

/* A slot for a wait being queued on `queue`, its ticket still to come:
 * another process that scans meanwhile waits for it (claimed). */
static int cuda_standin_hwq_slot_claim(cuda_standin_hwq_shared_t *shared, unsigned queue)
{
    size_t i;

    for (i = 0; i < CUDA_STANDIN_HWQ_SHARED_WAITS; ++i) {
        cuda_standin_hwq_slot_t *slot = &shared->waits[i];
        uint32_t free_state           = CUDA_STANDIN_HWQ_FREE;

        if (__atomic_compare_exchange_n(&slot->state, &free_state, CUDA_STANDIN_HWQ_CLAIMED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            slot->pid   = (int32_t)cuda_standin_pid();
            slot->queue = queue;
            __atomic_add_fetch(&shared->pending, 1, __ATOMIC_ACQ_REL);
            return (int)i;
        }
    }
    if (!cuda_standin_hwq_overflow_said) {
        cuda_standin_hwq_overflow_said = 1;
        fprintf(stderr,
                "cuda_standin: CUDA_STANDIN_CONNECTIONS: more than %d waits pending on a "
                "device's shared queues: later ones hold up no other process\n",
                CUDA_STANDIN_HWQ_SHARED_WAITS);
    }
    return -1;
}

/* --- Pools and queues --- */

static cuda_standin_hwq_pool_t *cuda_standin_hwq_pool(CUcontext ctx)
{
    CUcontext key = cuda_standin_config.mps ? NULL : ctx;
    int device    = (ctx != NULL) ? ctx->device : 0;
    cuda_standin_hwq_pool_t *pool;
    unsigned i;

    for (pool = cuda_standin_hwq_pools; pool != NULL; pool = pool->next) {
        if ((pool->ctx == key) && (pool->device == device)) {
            return pool;
        }
    }
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL) {
        return NULL;
    }
    pool->ctx     = key;
    pool->device  = device;
    pool->streams = 1; /* the default stream is queue 0 */
    for (i = 0; i < CUDA_STANDIN_HWQ_MAX; ++i) {
        pool->queues[i].pool  = pool;
        pool->queues[i].index = i;
    }
    if (cuda_standin_config.mps) {
        cuda_standin_hwq_shared_attach(pool);
        if (!cuda_standin_hwq_exit_registered) {
            cuda_standin_hwq_exit_registered = 1;
            atexit(cuda_standin_hwq_exit);
        }
    }
    pool->next             = cuda_standin_hwq_pools;
    cuda_standin_hwq_pools = pool;
    return pool;
}

cuda_standin_hwq_t *cuda_standin_hwq_for_stream(CUcontext ctx)
{
    cuda_standin_hwq_pool_t *pool = cuda_standin_hwq_pool(ctx);

    if (pool == NULL) {
        return NULL;
    }
    return &pool->queues[pool->streams++ % (unsigned)cuda_standin_config.connections];
}

cuda_standin_hwq_t *cuda_standin_hwq_for_default(CUcontext ctx)
{
    cuda_standin_hwq_pool_t *pool = cuda_standin_hwq_pool(ctx);

    return (pool != NULL) ? &pool->queues[0] : NULL;
}

unsigned cuda_standin_hwq_index(const cuda_standin_hwq_t *queue)
{
    return queue->index;
}

CUresult cuda_standin_hwq_push(cuda_standin_hwq_t *queue, cuda_standin_stream_t *stream,
                               cuda_standin_op_t *op)
{
    cuda_standin_hwq_entry_t *entry   = malloc(sizeof(*entry));
    cuda_standin_hwq_shared_t *shared = queue->pool->shared;
    int slot                          = -1;

    if (entry == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if ((shared != NULL) && (op->kind == CUDA_STANDIN_OP_WAIT_VALUE)) {
        slot = cuda_standin_hwq_slot_claim(shared, queue->index);
    }
    entry->ticket = (shared != NULL)
                        ? __atomic_add_fetch(&shared->tickets[queue->index], 1, __ATOMIC_ACQ_REL)
                        : ++queue->tickets;
    if (slot >= 0) {
        shared->waits[slot].ticket = entry->ticket;
        __atomic_store_n(&shared->waits[slot].state, CUDA_STANDIN_HWQ_PENDING, __ATOMIC_RELEASE);
    }
    entry->stream  = stream;
    entry->seq     = op->seq;
    entry->next    = NULL;
    op->hwq        = queue;
    op->hwq_ticket = entry->ticket;
    op->hwq_slot   = slot;
    if (queue->tail != NULL) {
        queue->tail->next = entry;
    } else {
        queue->head = entry;
    }
    queue->tail = entry;
    return CUDA_SUCCESS;
}

int cuda_standin_hwq_earlier(const cuda_standin_op_t *op, cuda_standin_stream_t **stream_p,
                             uint64_t *seq_p)
{
    const cuda_standin_hwq_entry_t *head = op->hwq->head;

    if ((head == NULL) || (head->ticket >= op->hwq_ticket)) {
        return 0;
    }
    *stream_p = head->stream;
    *seq_p    = head->seq;
    return 1;
}

/* A wait of another process queued before op on op's queue, not run yet
 * (its process alive): op waits behind it.  A slot still being filled in
 * may hold a smaller ticket: it holds op up until it says. */
int cuda_standin_hwq_foreign(const cuda_standin_op_t *op, pid_t *pid_p)
{
    cuda_standin_hwq_shared_t *shared = op->hwq->pool->shared;
    pid_t self                        = cuda_standin_pid();
    size_t i;

    if ((shared == NULL) || (__atomic_load_n(&shared->pending, __ATOMIC_ACQUIRE) == 0)) {
        return 0;
    }
    for (i = 0; i < CUDA_STANDIN_HWQ_SHARED_WAITS; ++i) {
        const cuda_standin_hwq_slot_t *slot = &shared->waits[i];
        uint32_t state                      = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);

        if ((state == CUDA_STANDIN_HWQ_FREE) || (slot->pid == self) ||
            (slot->queue != op->hwq->index) ||
            ((state == CUDA_STANDIN_HWQ_PENDING) && (slot->ticket >= op->hwq_ticket))) {
            continue;
        }
        if ((kill(slot->pid, 0) != 0) && (errno == ESRCH)) {
            continue; /* died with it pending */
        }
        *pid_p = slot->pid;
        return 1;
    }
    return 0;
}

/* --- Who runs a queue --- */

int cuda_standin_hwq_busy(const cuda_standin_hwq_t *queue)
{
    return queue->running && !pthread_equal(queue->runner, pthread_self());
}

int cuda_standin_hwq_take(cuda_standin_hwq_t *queue)
{
    int nested = queue->running;

    queue->running = 1;
    queue->runner  = pthread_self();
    return nested;
}

void cuda_standin_hwq_release(cuda_standin_hwq_t *queue, int nested)
{
    queue->running = nested;
}

/* op ran: it was the queue's head (cuda_standin_stream.c runs nothing
 * before the earlier entries of its queue). */
void cuda_standin_hwq_done(cuda_standin_op_t *op)
{
    cuda_standin_hwq_t *queue         = op->hwq;
    cuda_standin_hwq_entry_t *entry   = queue->head;
    cuda_standin_hwq_shared_t *shared = queue->pool->shared;

    if ((entry == NULL) || (entry->ticket != op->hwq_ticket)) {
        fprintf(stderr, "cuda_standin: hardware queue %u ran ticket %llu out of order\n",
                queue->index, (unsigned long long)op->hwq_ticket);
        abort();
    }
    queue->head = entry->next;
    if (queue->head == NULL) {
        queue->tail = NULL;
    }
    free(entry);
    if ((shared != NULL) && (op->hwq_slot >= 0)) {
        __atomic_store_n(&shared->waits[op->hwq_slot].state, CUDA_STANDIN_HWQ_FREE,
                         __ATOMIC_RELEASE);
        __atomic_sub_fetch(&shared->pending, 1, __ATOMIC_ACQ_REL);
    }
    op->hwq      = NULL;
    op->hwq_slot = -1;
}

/* A forked child: the queued work and the shared pool's waits are the
 * parent's; the child joins a pool of its own (its parent is another). */
void cuda_standin_hwq_forget(void)
{
    cuda_standin_hwq_pool_t *pool;
    cuda_standin_hwq_entry_t *entry;
    unsigned i;

    while ((pool = cuda_standin_hwq_pools) != NULL) {
        cuda_standin_hwq_pools = pool->next;
        for (i = 0; i < CUDA_STANDIN_HWQ_MAX; ++i) {
            while ((entry = pool->queues[i].head) != NULL) {
                pool->queues[i].head = entry->next;
                free(entry);
            }
        }
        if (pool->shared != NULL) {
            (void)munmap(pool->shared, sizeof(*pool->shared));
        }
        free(pool);
    }
}
