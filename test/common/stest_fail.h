/*
 * How a test program reports a wrong value or a failed call, and ends.
 * The helpers of this folder call it; each program links exactly one
 * definition: stest_mpi.c's (prints the rank, aborts the MPI job) or its
 * own (a single-process program names itself and exits 1).
 */
#ifndef STEST_FAIL_H
#define STEST_FAIL_H

void stest_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* STEST_FAIL_H */
