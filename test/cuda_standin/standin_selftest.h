/*
 * Helpers shared by the files of standin_selftest: checks that count, print
 * and stop the program at the first wrong value.
 */
#ifndef STANDIN_SELFTEST_H
#define STANDIN_SELFTEST_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The settings the test runs under (main() sets them before any call). */
#define ST_DEVICES     2
#define ST_QUERY_DELAY 2

extern int st_checks;

void st_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void st_group_begin(const char *name);
void st_group_end(void);

const char *st_result_name(CUresult res);
void st_expect_cu(const char *call, CUresult got, CUresult expected, int line);
void st_expect_u64(const char *what, unsigned long long got, unsigned long long expected, int line);

/* A driver call and the result it must return. */
#define ST_CU(_call, _expected) st_expect_cu(#_call, (_call), (_expected), __LINE__)
#define ST_OK(_call)            ST_CU(_call, CUDA_SUCCESS)
/* An integer or pointer value and what it must be. */
#define ST_EQ(_what, _got, _expected) \
    st_expect_u64((_what), (unsigned long long)(_got), (unsigned long long)(_expected), __LINE__)
#define ST_TRUE(_what, _cond) ST_EQ((_what), !!(_cond), 1)

/* Byte i of pattern `seed` is a function of both, so offsets show. */
unsigned char st_pattern_byte(unsigned seed, size_t i);
void st_fill(void *buf, size_t len, unsigned seed, size_t first);
/* Fails naming the first byte that differs from the pattern. */
void st_check_pattern(const char *what, const void *buf, size_t len, unsigned seed, size_t first);
void st_check_value(const char *what, const void *buf, size_t len, unsigned char value);

/* cuInit, then the primary context of `device` current on this thread. */
void st_ctx_setup(int device);
CUdeviceptr st_alloc(size_t size);
unsigned long long st_buffer_id(CUdeviceptr ptr);

/* Fork helpers: children flush nothing twice and report by exit status. */
pid_t st_fork(void);
void st_expect_child_ok(const char *what, pid_t pid);
void st_expect_child_signal(const char *what, pid_t pid, int sig);
/* Ends a forked child that passed: reports its own count of checks. */
void st_child_done(void) __attribute__((noreturn));
/* This program again as "--sub MODE", with env's NAME, VALUE pairs set
 * (NULL-terminated) and stderr to stderr_fd (-1: unchanged). */
pid_t st_spawn_sub(const char *mode, const char *const *env, int stderr_fd);

/* A thread's job (standin_selftest_order.c): after 100 ms, `released`
 * set, then `value` stored in *flag (release order), as another process
 * or the host meets a stream's wait. */
typedef struct st_release {
    volatile uint32_t *flag;
    uint32_t value;
    volatile int released;
} st_release_t;
void *st_release_later(void *arg);

/* The groups of checks, by file: _device.c, _mem.c, _ipc.c, _kernel.c, _dmabuf.c,
 * _order.c, _queue.c. */
void st_test_driver(void);
void st_test_memory(void);
void st_test_ipc(void);
void st_test_vmm(void);
void st_test_kernels(void);
void st_test_dmabuf(void);
void st_test_order(void);
void st_test_queues(void);
/* Sub-processes (standin_selftest --sub MODE) of standin_selftest_order.c. */
int st_sub_wait_timeout(void);
int st_sub_order_seed(void);
int st_sub_counts(void);
/* ... and of standin_selftest_queue.c. */
int st_sub_queues(int queues);
int st_sub_queues_processes(void);

#endif /* STANDIN_SELFTEST_H */
