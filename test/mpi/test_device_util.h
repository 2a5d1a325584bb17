/*
 * What the device-buffer MPI test programs share: a watchdog that turns a
 * hang into a failure, and a check of CUDA driver calls.  The including
 * program defines, before including this file,
 *   static void fail(const char *fmt, ...)   prints and aborts the job
 * and calls test_watchdog_arm()/alarm(0) around each check.
 */
#ifndef STRATA_TEST_DEVICE_UTIL_H
#define STRATA_TEST_DEVICE_UTIL_H

#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char test_watchdog_msg[256];

static void test_watchdog_fire(int sig)
{
    (void)sig;
    if (write(STDOUT_FILENO, test_watchdog_msg, strlen(test_watchdog_msg)) < 0) {
        /* nothing left to report it to */
    }
    _exit(1);
}

/* From now on, SIGALRM after `timeout` s reports `what` as a hang of `rank`
 * (install test_watchdog_fire for SIGALRM once). */
static void test_watchdog_arm(int rank, const char *what, int timeout)
{
    snprintf(test_watchdog_msg, sizeof(test_watchdog_msg),
             "FAIL rank %d: hang: %s did not finish within %d s\n", rank, what, timeout);
    alarm((unsigned)timeout);
}

#define CU_CHECK(_call) test_cu_check((_call), #_call, __LINE__)

static void test_cu_check(CUresult res, const char *call, int line)
{
    const char *name = "?", *str = "?";

    if (res == CUDA_SUCCESS) {
        return;
    }
    cuGetErrorName(res, &name);
    cuGetErrorString(res, &str);
    fail("%s (line %d): %s (%s)", call, line, name, str);
}

#endif /* STRATA_TEST_DEVICE_UTIL_H */
