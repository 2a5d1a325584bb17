/*
 * What every entry point goes through: the settings, fault injection, the
 * initialization and context preconditions, the global lock and the trace.
 * Also the process-wide pieces that belong to no object: the sticky device
 * fault, the cached pid, and fork handling.
 */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include "cuda_standin.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

cuda_standin_config_t cuda_standin_config;

/* One lock for all driver state: the stand-in is for correctness, not speed,
 * and a single lock makes every call atomic, as tests expect.  Recursive,
 * because the mmap/munmap calls made under it may run UCX's memory event
 * handlers (libucm hooks them), which may call back into the driver. */
static pthread_mutex_t cuda_standin_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static __thread int cuda_standin_lock_depth; /* this thread's holds of it */
static pthread_once_t cuda_standin_setup_once = PTHREAD_ONCE_INIT;
static pid_t cuda_standin_cached_pid;
static CUresult cuda_standin_sticky = CUDA_SUCCESS;

/* This thread's notes on the call in progress, printed by the trace. */
static __thread char cuda_standin_note_buf[320];
static __thread size_t cuda_standin_note_len;

typedef struct cuda_standin_api_name {
    const char *symbol;  /* exported: "cuMemAlloc_v2" */
    const char *spelled; /* as applications write it: "cuMemAlloc" */
} cuda_standin_api_name_t;

#define CUDA_STANDIN_API_NAME(_name) {CUDA_STANDIN_SYMBOL(_name), #_name},
static const cuda_standin_api_name_t cuda_standin_api_names[CUDA_STANDIN_API_COUNT] = {
    CUDA_STANDIN_APIS(CUDA_STANDIN_API_NAME)
};

/* A pause inside a call that waits for something outside this thread (a
 * cuStreamWaitValue's word, another thread's run of a stream): the lock is
 * let go meanwhile, so that the process's other threads go on with their
 * driver calls, as on a GPU, where a synchronizing thread holds no lock.
 * Kept where this thread holds it more than once (a driver call made from
 * inside another), whose outer call may be in the middle of a change. */
void cuda_standin_lock_pause(const struct timespec *pause)
{
    if (cuda_standin_lock_depth == 1) {
        pthread_mutex_unlock(&cuda_standin_lock);
        nanosleep(pause, NULL);
        pthread_mutex_lock(&cuda_standin_lock);
    } else {
        nanosleep(pause, NULL);
    }
}

const char *cuda_standin_api_name(cuda_standin_api_id_t id)
{
    return cuda_standin_api_names[id].symbol;
}

/* --- Settings --- */

typedef int (*cuda_standin_setting_parse_t)(const char *value, const char **why);

typedef struct cuda_standin_setting {
    const char *name;
    const char *default_value;
    const char *description;
    cuda_standin_setting_parse_t parse;
} cuda_standin_setting_t;

static int cuda_standin_parse_int(const char *value, int min, int max, int *result)
{
    char *end;
    long v;

    errno = 0;
    v     = strtol(value, &end, 10);
    if ((errno != 0) || (end == value) || (*end != '\0') || (v < min) || (v > max)) {
        return -1;
    }
    *result = (int)v;
    return 0;
}

static int cuda_standin_parse_devices(const char *value, const char **why)
{
    *why = "expected a number of devices from 0 to 8";
    return cuda_standin_parse_int(value, 0, CUDA_STANDIN_MAX_DEVICES,
                                  &cuda_standin_config.devices);
}

static int cuda_standin_parse_query_delay(const char *value, const char **why)
{
    *why = "expected a count from 0 to 1000000";
    return cuda_standin_parse_int(value, 0, 1000000, &cuda_standin_config.query_delay);
}

static int cuda_standin_parse_device_memory(const char *value, const char **why)
{
    *why = "expected MiB from 1 to 1048576";
    return cuda_standin_parse_int(value, 1, 1 << 20, &cuda_standin_config.device_memory_mib);
}

static int cuda_standin_parse_trace(const char *value, const char **why)
{
    *why = "expected 0 or 1";
    return cuda_standin_parse_int(value, 0, 1, &cuda_standin_config.trace);
}

static int cuda_standin_parse_ipc_free_check(const char *value, const char **why)
{
    *why = "expected 0 or 1";
    return cuda_standin_parse_int(value, 0, 1, &cuda_standin_config.ipc_free_check);
}

static int cuda_standin_parse_order(const char *value, const char **why)
{
    int seed = 0;

    *why = "expected 'lazy' or 'seed:N' with N from 1 to 2147483647";
    if (strcmp(value, "lazy") == 0) {
        cuda_standin_config.order_seed = 0;
        return 0;
    }
    if ((strncmp(value, "seed:", 5) != 0) ||
        (cuda_standin_parse_int(value + 5, 1, INT32_MAX, &seed) != 0)) {
        return -1;
    }
    cuda_standin_config.order_seed = (unsigned)seed;
    return 0;
}

static int cuda_standin_parse_wait_value_ms(const char *value, const char **why)
{
    *why = "expected milliseconds from 1 to 3600000";
    return cuda_standin_parse_int(value, 1, 3600000, &cuda_standin_config.wait_value_ms);
}

static int cuda_standin_parse_mps(const char *value, const char **why)
{
    *why = "expected 0 or 1";
    return cuda_standin_parse_int(value, 0, 1, &cuda_standin_config.mps);
}

static int cuda_standin_parse_connections(const char *value, const char **why)
{
    *why = "expected a number of queues from 1 to 32, or 0 for none";
    return cuda_standin_parse_int(value, 0, CUDA_STANDIN_HWQ_MAX, &cuda_standin_config.connections);
}

static int cuda_standin_parse_counts(const char *value, const char **why)
{
    *why = "expected a file name shorter than 4096 bytes";
    if (strlen(value) >= sizeof(cuda_standin_config.counts_path)) {
        return -1;
    }
    strcpy(cuda_standin_config.counts_path, value);
    return 0;
}

static int cuda_standin_api_lookup(const char *name, size_t len)
{
    const cuda_standin_api_name_t *api;
    int id;

    for (id = 0; id < CUDA_STANDIN_API_COUNT; ++id) {
        api = &cuda_standin_api_names[id];
        if (((strlen(api->symbol) == len) && (strncmp(api->symbol, name, len) == 0)) ||
            ((strlen(api->spelled) == len) && (strncmp(api->spelled, name, len) == 0))) {
            return id;
        }
    }
    return -1;
}

static int cuda_standin_parse_result(const char *text, CUresult *code_p)
{
    int number;

    if (cuda_standin_parse_int(text, 1, 1000000, &number) == 0) {
        *code_p = (CUresult)number;
        return 0;
    }
    return ((cuda_standin_result_parse(text, code_p) == 0) && (*code_p != CUDA_SUCCESS)) ? 0 : -1;
}

/* One "name[=CODE]" item of CUDA_STANDIN_FAIL. */
static int cuda_standin_parse_fail_item(char *item, const char **why)
{
    CUresult code = CUDA_ERROR_UNKNOWN;
    char *eq      = strchr(item, '=');
    int id;

    id = cuda_standin_api_lookup(item, (eq != NULL) ? (size_t)(eq - item) : strlen(item));
    if (id < 0) {
        *why = "names an entry point the stand-in does not export";
        return -1;
    }
    if ((eq != NULL) && (cuda_standin_parse_result(eq + 1, &code) != 0)) {
        *why = "CODE must be a nonzero CUresult number or name";
        return -1;
    }
    cuda_standin_config.fail[id] = code;
    return 0;
}

static int cuda_standin_parse_fail(const char *value, const char **why)
{
    char *copy = strdup(value), *item, *save = NULL;
    int ret    = 0;

    if (copy == NULL) {
        *why = "out of memory";
        return -1;
    }
    for (item = strtok_r(copy, ",", &save); (item != NULL) && (ret == 0);
         item = strtok_r(NULL, ",", &save)) {
        ret = cuda_standin_parse_fail_item(item, why);
    }
    free(copy);
    return ret;
}

static const cuda_standin_setting_t cuda_standin_settings[] = {
    {"CUDA_STANDIN_DEVICES", "1",
     "number of devices, 0 to 8; 0 makes cuInit fail with CUDA_ERROR_NO_DEVICE",
     cuda_standin_parse_devices},
    {"CUDA_STANDIN_QUERY_DELAY", "2",
     "cuStreamQuery/cuEventQuery answer CUDA_ERROR_NOT_READY this many times after each "
     "enqueue or record before running the queued work",
     cuda_standin_parse_query_delay},
    {"CUDA_STANDIN_DEVICE_MEMORY", "16384",
     "MiB of memory each device has (per process); allocations beyond it fail with "
     "CUDA_ERROR_OUT_OF_MEMORY",
     cuda_standin_parse_device_memory},
    {"CUDA_STANDIN_TRACE", "0", "1: print every call and its result to stderr",
     cuda_standin_parse_trace},
    {"CUDA_STANDIN_IPC_FREE_CHECK", "0",
     "1: a cuMemFree of an allocation another process still has open through "
     "cuIpcOpenMemHandle (undefined on a GPU) prints one line to stderr",
     cuda_standin_parse_ipc_free_check},
    {"CUDA_STANDIN_ORDER", "lazy",
     "when queued work lands: 'lazy' at the completion points only (the latest the driver "
     "allows), 'seed:N' also at random calls (seeded), for tests that look for races",
     cuda_standin_parse_order},
    {"CUDA_STANDIN_WAIT_VALUE_MS", "10000",
     "a cuStreamWaitValue32/64 whose condition is not met within this many milliseconds "
     "faults with CUDA_ERROR_LAUNCH_TIMEOUT instead of hanging",
     cuda_standin_parse_wait_value_ms},
    {"CUDA_STANDIN_MPS", "0",
     "1: the devices answer CU_DEVICE_ATTRIBUTE_MPS_ENABLED with 1, as under an MPS "
     "daemon (processes sharing a GPU run side by side; the stand-in's behaviour is "
     "otherwise the same)",
     cuda_standin_parse_mps},
    {"CUDA_STANDIN_CONNECTIONS", "0",
     "N: each context's streams (a device's, with CUDA_STANDIN_MPS=1: every process's on it) "
     "share N first-in first-out hardware queues, round-robin, and a cuStreamWaitValue not "
     "met holds up its whole queue, as CUDA_DEVICE_MAX_CONNECTIONS queues do on a GPU; 0: "
     "each stream runs on its own",
     cuda_standin_parse_connections},
    {"CUDA_STANDIN_COUNTS", "",
     "FILE: each process appends 'pid=P waits=N launches=N dtod=N htod=N dtoh=N memset=N "
     "ptrq=N calls=N traffic=N' at exit: host-side waits, kernel launches, copies by "
     "direction and memsets it issued, pointer queries and driver calls it made, and the "
     "bytes of device memory its copies, memsets and kernels read and wrote",
     cuda_standin_parse_counts},
    {"CUDA_STANDIN_FAIL", "",
     "name[=CODE][,name...]: these entry points (e.g. cuIpcOpenMemHandle_v2) return CODE "
     "(default CUDA_ERROR_UNKNOWN) every time without doing anything",
     cuda_standin_parse_fail},
};

/* A setting that cannot be parsed is a broken test setup: failing loudly
 * beats running a test that silently checks something else. */
static void cuda_standin_setting_load(const cuda_standin_setting_t *setting)
{
    const char *value = getenv(setting->name);
    const char *why   = "";

    if ((value == NULL) || (*value == '\0')) {
        value = setting->default_value;
    }
    if ((*value != '\0') && (setting->parse(value, &why) != 0)) {
        fprintf(stderr, "cuda_standin: %s='%s': %s\n  %s: %s\n", setting->name, value, why,
                setting->name, setting->description);
        abort();
    }
}

static void cuda_standin_fork_prepare(void)
{
    pthread_mutex_lock(&cuda_standin_lock);
}

static void cuda_standin_fork_parent(void)
{
    pthread_mutex_unlock(&cuda_standin_lock);
}

/* The real driver cannot be used in a forked child at all; the stand-in
 * makes the child a fresh process instead: it drops the parent's
 * allocations, streams and contexts (closing their fds) and needs cuInit
 * again.  Tests rely on this to act as a separate IPC peer after fork. */
static void cuda_standin_fork_child(void)
{
    pthread_mutexattr_t attr;

    /* The lock is held (prepare) under the parent's thread id, which a
     * recursive mutex checks on unlock: it is made anew instead. */
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&cuda_standin_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    cuda_standin_cached_pid = getpid();
    cuda_standin_sticky     = CUDA_SUCCESS;
    cuda_standin_count_forget();
    cuda_standin_stream_forget();
    cuda_standin_mem_forget();
    cuda_standin_vmm_forget();
    cuda_standin_vaspace_forget();
    cuda_standin_device_forget();
}

static void cuda_standin_setup(void)
{
    size_t i;

    for (i = 0; i < sizeof(cuda_standin_settings) / sizeof(cuda_standin_settings[0]); ++i) {
        cuda_standin_setting_load(&cuda_standin_settings[i]);
    }
    cuda_standin_cached_pid = getpid();
    cuda_standin_count_setup();
    pthread_atfork(cuda_standin_fork_prepare, cuda_standin_fork_parent, cuda_standin_fork_child);
}

pid_t cuda_standin_pid(void)
{
    return cuda_standin_cached_pid;
}

/* --- Notes and trace --- */

void cuda_standin_note(const char *fmt, ...)
{
    size_t room = sizeof(cuda_standin_note_buf) - cuda_standin_note_len;
    va_list ap;
    int n;

    if (!cuda_standin_config.trace || (room <= 2)) {
        return;
    }
    if (cuda_standin_note_len > 0) {
        cuda_standin_note_buf[cuda_standin_note_len++] = ';';
        cuda_standin_note_buf[cuda_standin_note_len++] = ' ';
        room -= 2;
    }
    va_start(ap, fmt);
    n = vsnprintf(cuda_standin_note_buf + cuda_standin_note_len, room, fmt, ap);
    va_end(ap);
    if (n > 0) {
        cuda_standin_note_len += ((size_t)n < room) ? (size_t)n : room - 1;
    }
}

size_t cuda_standin_note_mark(void)
{
    return cuda_standin_note_len;
}

void cuda_standin_note_rewind(size_t mark)
{
    if (mark < cuda_standin_note_len) {
        cuda_standin_note_len = mark;
    }
}

void cuda_standin_fault(CUresult status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda_standin[%d]: device fault, %s: %s\n", (int)cuda_standin_pid(),
            cuda_standin_result_name(status), msg);
    if (cuda_standin_sticky == CUDA_SUCCESS) {
        cuda_standin_sticky = status;
    }
}

CUresult cuda_standin_sticky_error(void)
{
    return cuda_standin_sticky;
}

static void cuda_standin_trace(const cuda_standin_call_t *call, CUresult status)
{
    fprintf(stderr, "cuda_standin[%d]: %s -> %s%s%.*s\n", (int)cuda_standin_pid(),
            cuda_standin_api_name(call->id), cuda_standin_result_name(status),
            (cuda_standin_note_len > 0) ? ": " : "", (int)cuda_standin_note_len,
            cuda_standin_note_buf);
}

/* --- The call wrapper --- */

static CUresult cuda_standin_call_check(const cuda_standin_call_t *call)
{
    if ((call->flags & CUDA_STANDIN_CALL_NEED_INIT) && !cuda_standin_initialized()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (!(call->flags & CUDA_STANDIN_CALL_NEED_CTX)) {
        return CUDA_SUCCESS;
    }
    if (cuda_standin_ctx_current() == NULL) {
        return cuda_standin_error(CUDA_ERROR_INVALID_CONTEXT, "no current context on this thread");
    }
    return cuda_standin_sticky;
}

CUresult cuda_standin_call_begin(cuda_standin_call_t *call)
{
    CUresult status;

    pthread_once(&cuda_standin_setup_once, cuda_standin_setup);
    cuda_standin_note_len = 0;
    cuda_standin_count_call(call->id);

    status = cuda_standin_config.fail[call->id];
    if (status != CUDA_SUCCESS) {
        return cuda_standin_error(status, "forced by CUDA_STANDIN_FAIL");
    }
    if (call->flags & CUDA_STANDIN_CALL_LOCK) {
        pthread_mutex_lock(&cuda_standin_lock);
        ++cuda_standin_lock_depth;
        call->locked = 1;
    }
    status = cuda_standin_call_check(call);
    if ((status != CUDA_SUCCESS) && call->locked) {
        --cuda_standin_lock_depth;
        pthread_mutex_unlock(&cuda_standin_lock);
        call->locked = 0;
    }
    if ((status == CUDA_SUCCESS) && call->locked && (cuda_standin_config.order_seed != 0) &&
        cuda_standin_initialized()) {
        cuda_standin_stream_progress_random();
    }
    return status;
}

CUresult cuda_standin_call_end(cuda_standin_call_t *call, CUresult status)
{
    if (call->locked) {
        --cuda_standin_lock_depth;
        pthread_mutex_unlock(&cuda_standin_lock);
    }
    if (cuda_standin_config.trace) {
        cuda_standin_trace(call, status);
    }
    return status;
}
