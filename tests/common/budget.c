/* tests/common/budget.c: the time scale and the watchdog (see budget.h). */
#include "tests/common/budget.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/env.h"
#include "tests/common/check.h"
#include "tests/common/proc.h"

/* 0 until read; reading twice gives the same value, so threads may race to
 * fill it in. */
static atomic_int scale;

int rft_scale(void)
{
    int s = atomic_load(&scale);
    if (s > 0)
        return s;
    int64_t v = 1;
    if (rf_env_int("RF_TEST_TIME_SCALE", 1, 1, 100, &v) != RF_OK) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                rf_error_message());
        exit(2);
    }
    atomic_store(&scale, (int)v);
    return (int)v;
}

int rft_ms(int base_ms)
{
    return base_ms * rft_scale();
}

/* What the handler prints, prepared when the watchdog is armed (the handler
 * only writes): "FAIL [" who " <pid>] watchdog: <what> exceeded ..."; who is
 * read when it fires (a role names itself after arming). */
static char wd_pid[16];
static char wd_rest[256];

static void put(const char *s)
{
    (void)!write(2, s, strlen(s));
}

static void on_alarm(int sig)
{
    (void)sig;
    put("FAIL [");
    put(rft_who());
    put(wd_pid);
    put(wd_rest);
    rft_kill_all();
    _exit(1);
}

void rft_watchdog(const char *what, int budget_s)
{
    alarm(0);
    if (budget_s <= 0)
        return;
    int seconds = budget_s * rft_scale();
    snprintf(wd_pid, sizeof wd_pid, " %d]", (int)getpid());
    snprintf(wd_rest, sizeof wd_rest,
             " watchdog: %s exceeded its time budget (%d s); killing "
             "children\n",
             what, seconds);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)seconds);
}
