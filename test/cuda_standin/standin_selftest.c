/*
 * standin_selftest: checks that the CUDA stand-in (libcuda.so.1 in lib/)
 * behaves like the driver where Strata's transport depends on it.
 *
 *   LD_LIBRARY_PATH=<builddir>/test/cuda_standin/lib ./standin_selftest
 *
 * It prints one line per group of checks and exits 1 at the first wrong
 * value, naming the call or value, what was expected and what it got.  The
 * program sets the stand-in's settings itself (CUDA_STANDIN_DEVICES=2,
 * CUDA_STANDIN_QUERY_DELAY=2, no CUDA_STANDIN_FAIL); the groups that test
 * settings run it again with others ("--sub <mode>").
 *
 * This file has the helpers, the settings groups and main(); the other
 * groups are in standin_selftest_device.c (driver, devices, contexts),
 * standin_selftest_mem.c (memory, copies, streams, attributes),
 * standin_selftest_ipc.c (legacy IPC and VMM with a second process),
 * standin_selftest_dmabuf.c (dma-buf export) and standin_selftest_queue.c
 * (hardware queues).
 */
#define _GNU_SOURCE
#include "standin_selftest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int st_checks;
static const char *st_group;
static int st_group_checks;
static const char *st_argv0;
/* This program's file, read at start: in a child forked under valgrind,
 * exec("/proc/self/exe") would start valgrind's tool instead. */
static char st_self[4096];

/* --- Helpers --- */

/* Checks run on several threads in one group. */
static void st_count(void)
{
    __atomic_add_fetch(&st_checks, 1, __ATOMIC_RELAXED);
}

void st_fail(const char *fmt, ...)
{
    va_list ap;

    printf("FAIL [pid %d] %s: ", (int)getpid(), (st_group != NULL) ? st_group : "setup");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(1);
}

void st_group_begin(const char *name)
{
    st_group        = name;
    st_group_checks = st_checks;
}

void st_group_end(void)
{
    printf("PASS %-58s (%d checks)\n", st_group, st_checks - st_group_checks);
    fflush(stdout);
    st_group = NULL;
}

const char *st_result_name(CUresult res)
{
    static char unnamed[32];
    const char *name = NULL;

    if ((cuGetErrorName(res, &name) != CUDA_SUCCESS) || (name == NULL)) {
        snprintf(unnamed, sizeof(unnamed), "CUresult %d", (int)res);
        return unnamed;
    }
    return name;
}

void st_expect_cu(const char *call, CUresult got, CUresult expected, int line)
{
    st_count();
    if (got != expected) {
        st_fail("line %d: %s: expected %s, got %s", line, call, st_result_name(expected),
                st_result_name(got));
    }
}

void st_expect_u64(const char *what, unsigned long long got, unsigned long long expected, int line)
{
    st_count();
    if (got != expected) {
        st_fail("line %d: %s: expected 0x%llx (%lld), got 0x%llx (%lld)", line, what, expected,
                (long long)expected, got, (long long)got);
    }
}

unsigned char st_pattern_byte(unsigned seed, size_t i)
{
    return (unsigned char)((size_t)seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

void st_fill(void *buf, size_t len, unsigned seed, size_t first)
{
    unsigned char *p = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = st_pattern_byte(seed, first + i);
    }
}

void st_check_pattern(const char *what, const void *buf, size_t len, unsigned seed, size_t first)
{
    const unsigned char *p = buf;
    size_t i;

    st_count();
    for (i = 0; i < len; ++i) {
        if (p[i] != st_pattern_byte(seed, first + i)) {
            st_fail("%s: byte %zu: expected 0x%02x (pattern %u), got 0x%02x", what, i,
                    st_pattern_byte(seed, first + i), seed, p[i]);
        }
    }
}

void st_check_value(const char *what, const void *buf, size_t len, unsigned char value)
{
    const unsigned char *p = buf;
    size_t i;

    st_count();
    for (i = 0; i < len; ++i) {
        if (p[i] != value) {
            st_fail("%s: byte %zu: expected 0x%02x, got 0x%02x", what, i, value, p[i]);
        }
    }
}

void st_ctx_setup(int device)
{
    CUcontext ctx;
    CUdevice dev;

    ST_OK(cuInit(0));
    ST_OK(cuDeviceGet(&dev, device));
    ST_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    ST_OK(cuCtxSetCurrent(ctx));
}

CUdeviceptr st_alloc(size_t size)
{
    CUdeviceptr ptr = 0;

    ST_OK(cuMemAlloc(&ptr, size));
    return ptr;
}

unsigned long long st_buffer_id(CUdeviceptr ptr)
{
    unsigned long long id = 0;

    ST_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr));
    return id;
}

/* A hang (a deadlock in the library, a child that never exits) must fail
 * the test, not stall CI: each process gets a deadline. */
static void st_deadline_expired(int sig)
{
    static const char msg[] = "FAIL standin_selftest: deadline expired (hang?)\n";

    (void)sig;
    (void)!write(1, msg, sizeof(msg) - 1);
    _exit(1);
}

static void st_deadline_set(unsigned seconds)
{
    signal(SIGALRM, st_deadline_expired);
    alarm(seconds);
}

pid_t st_fork(void)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        st_fail("fork: %s", strerror(errno));
    } else if (pid == 0) {
        st_deadline_set(120);
    }
    return pid;
}

static int st_wait(pid_t pid)
{
    int status;

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            st_fail("waitpid: %s", strerror(errno));
        }
    }
    return status;
}

void st_expect_child_ok(const char *what, pid_t pid)
{
    int status = st_wait(pid);

    st_count();
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        st_fail("%s: child %d %s %d", what, (int)pid,
                WIFEXITED(status) ? "exited with" : "killed by signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
}

void st_expect_child_signal(const char *what, pid_t pid, int sig)
{
    int status = st_wait(pid);

    st_count();
    if (!WIFSIGNALED(status) || (WTERMSIG(status) != sig)) {
        st_fail("%s: expected child %d killed by signal %d, got %s %d", what, (int)pid, sig,
                WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
}

void st_child_done(void)
{
    printf("  child %d: %d checks passed\n", (int)getpid(), st_checks);
    exit(0);
}

/* --- Settings, each in a fresh process (the library reads them once) --- */

pid_t st_spawn_sub(const char *mode, const char *const *env, int stderr_fd)
{
    pid_t pid = st_fork();

    if (pid == 0) {
        for (; *env != NULL; env += 2) {
            setenv(env[0], env[1], 1);
        }
        if (stderr_fd >= 0) {
            dup2(stderr_fd, 2);
        }
        execl(st_self, st_argv0, "--sub", mode, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Runs a sub-mode with stderr captured; fails unless it contains `needle`. */
static void st_expect_sub_stderr(const char *mode, const char *const *env, const char *needle)
{
    char out[16384];
    size_t len = 0;
    ssize_t n;
    int fds[2];
    pid_t pid;

    if (pipe(fds) != 0) {
        st_fail("pipe: %s", strerror(errno));
    }
    pid = st_spawn_sub(mode, env, fds[1]);
    close(fds[1]);
    while ((len < sizeof(out) - 1) && ((n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)) {
        len += (size_t)n;
    }
    out[len] = '\0';
    close(fds[0]);
    st_expect_child_ok(mode, pid);
    st_count();
    if (strstr(out, needle) == NULL) {
        st_fail("%s: stderr lacks \"%s\"; it was:\n%s", mode, needle, out);
    }
}

/* CUDA_STANDIN_COUNTS: the sub-process's one line, exactly. */
static void st_check_counts(void)
{
    char path[] = "/tmp/standin_counts.XXXXXX", line[256] = "", want[256];
    const char *env[] = {"CUDA_STANDIN_COUNTS", path, NULL};
    ssize_t n;
    pid_t pid;
    int fd = mkstemp(path);

    if (fd < 0) {
        st_fail("mkstemp: %s", strerror(errno));
    }
    pid = st_spawn_sub("counts", env, -1);
    st_expect_child_ok("CUDA_STANDIN_COUNTS", pid);
    n = read(fd, line, sizeof(line) - 1);
    close(fd);
    unlink(path);
    snprintf(want, sizeof(want),
             "pid=%d waits=4 launches=1 dtod=1 htod=3 dtoh=1 memset=1 "
             "ptrq=3 calls=23 traffic=640\n",
             (int)pid);
    st_count();
    if ((n <= 0) || (strcmp(line, want) != 0)) {
        st_fail("CUDA_STANDIN_COUNTS: expected \"%s\", got \"%s\"", want, line);
    }
}

static void st_test_settings(void)
{
    static const char *const fail_env[] = {
        "CUDA_STANDIN_FAIL",
        "cuMemAlloc_v2=2,cuIpcOpenMemHandle,cuStreamQuery=CUDA_ERROR_LAUNCH_FAILED,"
        "cuMemGetHandleForAddressRange=CUDA_ERROR_NOT_SUPPORTED",
        NULL};
    static const char *const fail_init_env[] = {"CUDA_STANDIN_FAIL", "cuInit=100", NULL};
    static const char *const nodev_env[]     = {"CUDA_STANDIN_DEVICES", "0", NULL};
    static const char *const bad_env[]       = {"CUDA_STANDIN_FAIL", "cuNoSuchCall", NULL};
    static const char *const trace_env[]     = {"CUDA_STANDIN_TRACE", "1", NULL};
    static const char *const memory_env[]    = {"CUDA_STANDIN_DEVICE_MEMORY", "2", NULL};
    static const char *const timeout_env[]   = {"CUDA_STANDIN_WAIT_VALUE_MS", "50", NULL};
    static const char *const seed_env[]      = {"CUDA_STANDIN_ORDER", "seed:7", NULL};
    static const char *const bad_seed_env[]  = {"CUDA_STANDIN_ORDER", "seed:x", NULL};
    int devnull;

    st_group_begin("settings: CUDA_STANDIN_FAIL, _DEVICES=0, _TRACE, _DEVICE_MEMORY, _ORDER, "
                   "_WAIT_VALUE_MS, _COUNTS");
    st_expect_child_ok("CUDA_STANDIN_WAIT_VALUE_MS=50",
                       st_spawn_sub("wait-timeout", timeout_env, -1));
    st_expect_child_ok("CUDA_STANDIN_ORDER=seed:7", st_spawn_sub("order-seed", seed_env, -1));
    st_expect_child_ok("CUDA_STANDIN_DEVICE_MEMORY=2", st_spawn_sub("memory", memory_env, -1));
    st_expect_child_ok("CUDA_STANDIN_FAIL", st_spawn_sub("fail", fail_env, -1));
    st_expect_child_ok("CUDA_STANDIN_FAIL=cuInit", st_spawn_sub("fail-init", fail_init_env, -1));
    st_expect_child_ok("CUDA_STANDIN_DEVICES=0", st_spawn_sub("no-device", nodev_env, -1));
    devnull = open("/dev/null", O_WRONLY);
    st_expect_child_signal("CUDA_STANDIN_FAIL naming no entry point aborts",
                           st_spawn_sub("no-device", bad_env, devnull), SIGABRT);
    st_expect_child_signal("CUDA_STANDIN_ORDER=seed:x aborts",
                           st_spawn_sub("no-device", bad_seed_env, devnull), SIGABRT);
    close(devnull);
    st_expect_sub_stderr("trace", trace_env, "cuMemAlloc_v2 -> CUDA_SUCCESS");
    st_check_counts();
    st_group_end();
}

static int st_sub_fail(void)
{
    CUipcMemHandle handle;
    CUdeviceptr ptr = 0;
    int fd;

    memset(&handle, 0, sizeof(handle));
    st_ctx_setup(0);
    ST_CU(cuMemAlloc(&ptr, 4096), CUDA_ERROR_OUT_OF_MEMORY);
    ST_EQ("a failed cuMemAlloc leaves *dptr alone", ptr, 0);
    ST_CU(cuIpcOpenMemHandle(&ptr, handle, 0), CUDA_ERROR_UNKNOWN);
    ST_CU(cuStreamQuery(NULL), CUDA_ERROR_LAUNCH_FAILED);
    ST_OK(cuMemAllocManaged(&ptr, 4096, CU_MEM_ATTACH_GLOBAL));
    fd = -1;
    ST_CU(cuMemGetHandleForAddressRange(&fd, ptr, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
          CUDA_ERROR_NOT_SUPPORTED);
    ST_EQ("a forced failure leaves *handle alone", fd, -1);
    ST_OK(cuMemFree(ptr));
    return 0;
}

static int st_sub_fail_init(void)
{
    int count;

    ST_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);
    ST_CU(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    return 0;
}

static int st_sub_no_device(void)
{
    int count, version;

    ST_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);
    ST_CU(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    ST_OK(cuDriverGetVersion(&version));
    return 0;
}

static int st_sub_trace(void)
{
    CUdeviceptr ptr;

    st_ctx_setup(0);
    ptr = st_alloc(4096);
    ST_OK(cuMemFree(ptr));
    return 0;
}

/* 2 MiB of device memory: reported, and allocations beyond it refused. */
static int st_sub_memory(void)
{
    CUdeviceptr a = 0, b = 0;
    size_t free_bytes, total;

    st_ctx_setup(0);
    ST_OK(cuMemGetInfo(&free_bytes, &total));
    ST_EQ("cuMemGetInfo total is the setting", total, (size_t)2 << 20);
    ST_OK(cuMemAlloc(&a, (size_t)3 << 19));
    ST_CU(cuMemAlloc(&b, (size_t)1 << 20), CUDA_ERROR_OUT_OF_MEMORY);
    ST_EQ("a refused cuMemAlloc leaves *dptr alone", b, 0);
    ST_OK(cuMemFree(a));
    ST_OK(cuMemAlloc(&b, (size_t)1 << 20));
    ST_OK(cuMemFree(b));
    return 0;
}

static int st_run_sub(const char *mode)
{
    st_group = mode;
    if (strcmp(mode, "fail") == 0) {
        return st_sub_fail();
    } else if (strcmp(mode, "fail-init") == 0) {
        return st_sub_fail_init();
    } else if (strcmp(mode, "no-device") == 0) {
        return st_sub_no_device();
    } else if (strcmp(mode, "trace") == 0) {
        return st_sub_trace();
    } else if (strcmp(mode, "memory") == 0) {
        return st_sub_memory();
    } else if (strcmp(mode, "wait-timeout") == 0) {
        return st_sub_wait_timeout();
    } else if (strcmp(mode, "order-seed") == 0) {
        return st_sub_order_seed();
    } else if (strcmp(mode, "counts") == 0) {
        return st_sub_counts();
    } else if (strcmp(mode, "queues-1") == 0) {
        return st_sub_queues(1);
    } else if (strcmp(mode, "queues-2") == 0) {
        return st_sub_queues(2);
    } else if (strcmp(mode, "queues-processes") == 0) {
        return st_sub_queues_processes();
    }
    fprintf(stderr, "unknown sub-mode %s\n", mode);
    return 2;
}

/* The library reads its settings at the first call: set them before it. */
static void st_settings_apply(void)
{
    char value[16];

    snprintf(value, sizeof(value), "%d", ST_DEVICES);
    setenv("CUDA_STANDIN_DEVICES", value, 1);
    snprintf(value, sizeof(value), "%d", ST_QUERY_DELAY);
    setenv("CUDA_STANDIN_QUERY_DELAY", value, 1);
    unsetenv("CUDA_STANDIN_FAIL");
}

int main(int argc, char **argv)
{
    st_argv0 = argv[0];
    if ((argc == 3) && (strcmp(argv[1], "--sub") == 0)) {
        return st_run_sub(argv[2]);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (readlink("/proc/self/exe", st_self, sizeof(st_self) - 1) <= 0) {
        st_fail("readlink /proc/self/exe: %s", strerror(errno));
    }
    st_settings_apply();
    st_deadline_set(600);
    printf("standin_selftest: checking the CUDA stand-in (pid %d)\n", (int)getpid());

    st_test_driver();
    st_test_memory();
    st_test_ipc();
    st_test_vmm();
    st_test_kernels();
    st_test_dmabuf();
    st_test_order();
    st_test_settings();
    st_test_queues();

    printf("standin_selftest: all %d checks passed\n", st_checks);
    return 0;
}
