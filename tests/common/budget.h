/* tests/common/budget.h: the time budgets of the tests. Every timeout and
 * deadline a test uses is a base figure multiplied by RF_TEST_TIME_SCALE
 * (an integer, 1 to 100, default 1; ctest sets it higher under sanitizers,
 * rxe-run in the TCG guest), and each case runs under a watchdog that ends
 * the process and kills its children once the case's budget is spent.
 * Clocks and sleeping are rdmaflow's own (rdmaflow/clock.h: rf_now_ms,
 * rf_now_us, rf_deadline_ms, rf_sleep_ms); no test reads a clock itself. */
#ifndef RF_TESTS_COMMON_BUDGET_H
#define RF_TESTS_COMMON_BUDGET_H

#include "rdmaflow/clock.h"

/* RF_TEST_TIME_SCALE. A value that is not an integer in [1, 100] is a usage
 * error: the program says so and exits 2. */
int rft_scale(void);

/* base_ms multiplied by the time scale. */
int rft_ms(int base_ms);

/* Arms the watchdog: once budget_s x the time scale seconds have passed
 * (SIGALRM), it prints "FAIL [who pid] watchdog: <what> exceeded its time
 * budget", kills every child (proc.h) and exits 1. A new call replaces the
 * previous budget; budget_s <= 0 disarms it. what must stay valid. */
void rft_watchdog(const char *what, int budget_s);

#endif
