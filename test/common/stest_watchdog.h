/*
 * A watchdog that turns a hang into a failure: after stest_watchdog_init(),
 * each stest_watchdog_arm() gives the next check `timeout` seconds; past
 * them the process prints "FAIL rank R: hang: <what> did not finish within
 * T s" and exits 1.  alarm(0) disarms it.
 */
#ifndef STEST_WATCHDOG_H
#define STEST_WATCHDOG_H

void stest_watchdog_init(void);
void stest_watchdog_arm(int rank, const char *what, int timeout);

#endif /* STEST_WATCHDOG_H */
