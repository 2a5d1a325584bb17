/*
 * Self-tests: hardware queues (CUDA_STANDIN_CONNECTIONS, cuda_standin_hwq.c).
 * Each runs in sub-processes with its settings: a wait not met holds up the
 * other streams of its queue and only those (one queue, then two), and
 * under CUDA_STANDIN_MPS=1 another process's streams on the device too.
 */
#include "standin_selftest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ST_QUEUE_SIZE 4096

/* The words two processes share (ST_QUEUES_FILE): the condition of A's
 * wait, and each one's progress. */
enum { ST_QUEUE_FLAG, ST_QUEUE_A_QUEUED, ST_QUEUE_B_DONE };

/* A copy from pinned memory on `stream`: whether it can finish while a
 * wait not met is queued on another stream (queries never wait). */
static int st_queue_copy_runs(CUstream stream, CUdeviceptr d, const unsigned char *pinned)
{
    CUresult res = CUDA_ERROR_NOT_READY;
    int i;

    ST_OK(cuMemcpyHtoDAsync(d, pinned, ST_QUEUE_SIZE, stream));
    for (i = 0; (i < ST_QUERY_DELAY + 3) && (res == CUDA_ERROR_NOT_READY); ++i) {
        res = cuStreamQuery(stream);
    }
    if ((res != CUDA_SUCCESS) && (res != CUDA_ERROR_NOT_READY)) {
        st_fail("cuStreamQuery: %s", st_result_name(res));
    }
    return res == CUDA_SUCCESS;
}

static void st_queue_check_landed(CUstream stream, CUdeviceptr d, unsigned seed)
{
    unsigned char out[ST_QUEUE_SIZE];

    ST_OK(cuMemcpyDtoHAsync(out, d, sizeof(out), stream));
    ST_OK(cuStreamSynchronize(stream));
    st_check_pattern("the copy landed", out, sizeof(out), seed, 0);
}

/* CUDA_STANDIN_CONNECTIONS=1 (queues 1) or 2 (queues 2): streams a, b, c
 * are the pool's streams 1, 2, 3 (the default stream is 0): one queue for
 * all, or a and c on queue 1, b with the default stream on queue 0. */
int st_sub_queues(int queues)
{
    st_release_t r        = {NULL, 1, 0};
    unsigned char *pinned = NULL;
    uint32_t *flag        = NULL;
    CUstream a, b, c;
    pthread_t thread;
    CUdeviceptr d;

    st_ctx_setup(0);
    d = st_alloc(ST_QUEUE_SIZE);
    ST_OK(cuMemHostAlloc((void **)&flag, 64, 0));
    r.flag = flag;
    ST_OK(cuMemHostAlloc((void **)&pinned, ST_QUEUE_SIZE, 0));
    ST_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    ST_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    ST_OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    *flag = 0;
    st_fill(pinned, ST_QUEUE_SIZE, 91, 0);
    ST_OK(cuStreamWaitValue32(a, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
    ST_EQ("a copy on stream b runs past stream a's wait (queues)", st_queue_copy_runs(b, d, pinned),
          queues > 1);
    ST_TRUE("a copy on stream c waits behind stream a's wait", !st_queue_copy_runs(c, d, pinned));
    ST_EQ("thread started", pthread_create(&thread, NULL, st_release_later, &r), 0);
    ST_OK(cuStreamSynchronize(c));
    ST_TRUE("stream c finished only after the wait was met", r.released);
    pthread_join(thread, NULL);
    st_queue_check_landed(b, d, 91);
    ST_OK(cuStreamDestroy(a));
    ST_OK(cuStreamDestroy(b));
    ST_OK(cuStreamDestroy(c));
    ST_OK(cuMemFreeHost(flag));
    ST_OK(cuMemFreeHost(pinned));
    ST_OK(cuMemFree(d));
    return 0;
}

static uint32_t *st_queue_words(void)
{
    const char *path = getenv("ST_QUEUES_FILE");
    uint32_t *words;
    int fd;

    fd = (path != NULL) ? open(path, O_RDWR) : -1;
    if (fd < 0) {
        st_fail("ST_QUEUES_FILE %s: %s", (path != NULL) ? path : "(unset)", strerror(errno));
    }
    words = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (words == MAP_FAILED) {
        st_fail("mmap %s: %s", path, strerror(errno));
    }
    ST_OK(cuMemHostRegister(words, 4096, CU_MEMHOSTREGISTER_DEVICEMAP));
    return words;
}

static void st_queue_spin_until(const uint32_t *word, const char *what)
{
    int i;

    for (i = 0; (i < 100000) && (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0); ++i) {
        usleep(100);
    }
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0) {
        st_fail("%s: not in 10 s", what);
    }
}

/* Process A: a wait on the shared flag, queued, then run once met (its
 * queries run it: work lands in the process that queued it). */
static int st_sub_queues_waiter(uint32_t *words)
{
    CUresult res = CUDA_ERROR_NOT_READY;
    CUstream s;
    int i;

    ST_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ST_OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)&words[ST_QUEUE_FLAG], 1,
                              CU_STREAM_WAIT_VALUE_GEQ));
    __atomic_store_n(&words[ST_QUEUE_A_QUEUED], 1, __ATOMIC_RELEASE);
    for (i = 0; (i < 100000) && (res == CUDA_ERROR_NOT_READY); ++i) {
        res = cuStreamQuery(s);
        usleep(100);
    }
    ST_OK(res);
    st_queue_spin_until(&words[ST_QUEUE_B_DONE], "process B done");
    ST_OK(cuStreamDestroy(s));
    return 0;
}

/* Process B: a copy queued after A's wait; held up by it where the two
 * processes share the device's queues (ST_QUEUES_SHARED=1), not otherwise;
 * then B meets A's wait itself and its copy goes on. */
static int st_sub_queues_other(uint32_t *words, int shared)
{
    unsigned char *pinned = NULL;
    CUdeviceptr d         = st_alloc(ST_QUEUE_SIZE);
    CUstream s;

    ST_OK(cuMemHostAlloc((void **)&pinned, ST_QUEUE_SIZE, 0));
    st_fill(pinned, ST_QUEUE_SIZE, 92, 0);
    ST_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    st_queue_spin_until(&words[ST_QUEUE_A_QUEUED], "process A's wait queued");
    ST_EQ("process B's copy runs past process A's wait (shared queues: no)",
          st_queue_copy_runs(s, d, pinned), !shared);
    __atomic_store_n(&words[ST_QUEUE_FLAG], 1, __ATOMIC_RELEASE);
    ST_OK(cuStreamSynchronize(s));
    st_queue_check_landed(s, d, 92);
    __atomic_store_n(&words[ST_QUEUE_B_DONE], 1, __ATOMIC_RELEASE);
    ST_OK(cuStreamDestroy(s));
    ST_OK(cuMemFreeHost(pinned));
    ST_OK(cuMemFree(d));
    return 0;
}

int st_sub_queues_processes(void)
{
    const char *role   = getenv("ST_QUEUES_ROLE");
    const char *shared = getenv("ST_QUEUES_SHARED");
    uint32_t *words;

    st_ctx_setup(0);
    words = st_queue_words();
    if ((role != NULL) && (strcmp(role, "waiter") == 0)) {
        return st_sub_queues_waiter(words);
    }
    return st_sub_queues_other(words, (shared != NULL) && (strcmp(shared, "1") == 0));
}

/* Processes A and B (siblings: the same parent, so one pool under MPS) on
 * one device and one queue each; `mps`: whether they share it. */
static void st_queue_processes(const char *mps)
{
    char path[]          = "/tmp/standin_queues.XXXXXX";
    const char *waiter[] = {"CUDA_STANDIN_CONNECTIONS",
                            "1",
                            "CUDA_STANDIN_MPS",
                            mps,
                            "ST_QUEUES_FILE",
                            path,
                            "ST_QUEUES_ROLE",
                            "waiter",
                            NULL};
    const char *other[]  = {"CUDA_STANDIN_CONNECTIONS",
                            "1",
                            "CUDA_STANDIN_MPS",
                            mps,
                            "ST_QUEUES_FILE",
                            path,
                            "ST_QUEUES_SHARED",
                            mps,
                            NULL};
    int fd               = mkstemp(path);
    pid_t a, b;

    if ((fd < 0) || (ftruncate(fd, 4096) != 0)) {
        st_fail("%s: %s", path, strerror(errno));
    }
    close(fd);
    a = st_spawn_sub("queues-processes", waiter, -1);
    b = st_spawn_sub("queues-processes", other, -1);
    st_expect_child_ok("process B", b);
    st_expect_child_ok("process A", a);
    unlink(path);
}

void st_test_queues(void)
{
    static const char *const one[] = {"CUDA_STANDIN_CONNECTIONS", "1", NULL};
    static const char *const two[] = {"CUDA_STANDIN_CONNECTIONS", "2", NULL};

    st_group_begin("hardware queues: CUDA_STANDIN_CONNECTIONS=1 and 2, shared under MPS");
    st_expect_child_ok("CUDA_STANDIN_CONNECTIONS=1", st_spawn_sub("queues-1", one, -1));
    st_expect_child_ok("CUDA_STANDIN_CONNECTIONS=2", st_spawn_sub("queues-2", two, -1));
    st_queue_processes("0");
    st_queue_processes("1");
    st_group_end();
}
