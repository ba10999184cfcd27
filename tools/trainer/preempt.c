/* tools/trainer/preempt.c: the SIGTERM handler of preempt.h. The handler
 * only sets flags, writes a line prepared beforehand and calls _exit, all
 * async-signal-safe. SA_RESTART: the library's system calls go on as if
 * nothing happened; the training loop looks at the flag between steps. */
#include "preempt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exit_status.h"
#include "report.h"

static volatile sig_atomic_t got_term, graceful;
static char line_now[512], line_late[512];
static size_t len_now, len_late;

static void say_and_exit(const char *line, size_t len)
{
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
    _exit(TR_EXIT_RETRYABLE);
}

static void on_term(int sig)
{
    (void)sig;
    if (got_term || !graceful)
        say_and_exit(line_now, len_now);
    got_term = 1;
    alarm(TR_PREEMPT_GRACE_SECS);
}

static void on_alarm(int sig)
{
    (void)sig;
    if (got_term)
        say_and_exit(line_late, len_late);
}

void tr_preempt_install(const char *task)
{
    const char *pfx = tr_task_prefix();
    int n =
        snprintf(line_now, sizeof line_now,
                 "%srf-trainer: exit %d (%s): preempted: %s got SIGTERM "
                 "and stopped at once\n",
                 pfx, TR_EXIT_RETRYABLE, tr_exit_kind(TR_EXIT_RETRYABLE), task);
    len_now = n > 0 && (size_t)n < sizeof line_now ? (size_t)n : 0;
    n = snprintf(line_late, sizeof line_late,
                 "%srf-trainer: exit %d (%s): preempted: %s got SIGTERM and "
                 "had not finished %d s later\n",
                 pfx, TR_EXIT_RETRYABLE, tr_exit_kind(TR_EXIT_RETRYABLE), task,
                 TR_PREEMPT_GRACE_SECS);
    len_late = n > 0 && (size_t)n < sizeof line_late ? (size_t)n : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
}

void tr_preempt_graceful(bool on)
{
    graceful = on;
}

bool tr_preempted(void)
{
    return got_term != 0;
}
