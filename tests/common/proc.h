/* tests/common/proc.h: the child processes of multi-process tests. A child
 * is started with fork + exec, never a bare fork (the verbs provider is
 * fork-unsafe): either this very program re-executed through /proc/self/exe
 * (the fabric suite's roles) or a helper program (the ps suite's
 * rf_ps_helper; any later suite's). The child's stdout is a pipe carrying a
 * line protocol to the parent, its stdin a pipe from the parent or
 * /dev/null, its stderr shared. Every child dies with the thread that
 * started it (PR_SET_PDEATHSIG), every wait is bounded, and every child not
 * yet reaped is killed when a check fails (check.h) or the watchdog fires
 * (budget.h). Children are tracked per process; up to RFT_MAX_CHILDREN live
 * at once. */
#ifndef RF_TESTS_COMMON_PROC_H
#define RF_TESTS_COMMON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RFT_MAX_CHILDREN 64

typedef struct rft_child {
    pid_t pid;   /* 0 once reaped */
    int to_fd;   /* the child's stdin (-1: /dev/null, or closed) */
    int from_fd; /* the child's stdout (-1 once closed) */
    char name[48];
    char buf[8192]; /* bytes read but not yet returned as lines */
    size_t len;
} rft_child;

/* What the child's stdin is. */
#define RFT_STDIN_NULL 0 /* /dev/null */
#define RFT_STDIN_PIPE 1 /* a pipe: rft_send writes to it */

/* Starts a child named name (for messages) running program with args
 * (argv[1...], NULL-terminated). program: NULL for this program
 * (/proc/self/exe); a bare name for a program in the same folder as this
 * one (a suite's helpers are built beside its driver); otherwise a path,
 * used as given. stdin_mode: RFT_STDIN_NULL or RFT_STDIN_PIPE. Fails the
 * test if the child cannot be started. */
void rft_spawn(rft_child *c, const char *name, const char *program,
               const char *const *args, int stdin_mode);

/* Writes one line (a newline is appended) to the child's stdin pipe. */
__attribute__((format(printf, 2, 3))) void rft_send(rft_child *c,
                                                    const char *fmt, ...);

/* Reads the next line of the child's stdout (newline stripped) into line,
 * waiting up to timeout_ms; fails the test on timeout or end of file. */
void rft_line(rft_child *c, char *line, size_t cap, int timeout_ms);

/* Reads lines until one starts with prefix (others are noted on stderr) and
 * returns the rest of that line in rest; fails the test unless one comes
 * within timeout_ms. */
void rft_expect(rft_child *c, const char *prefix, char *rest, size_t cap,
                int timeout_ms);

/* Waits up to timeout_ms for the child to exit and returns its wait status.
 * On timeout the child is killed and the test fails. */
int rft_wait(rft_child *c, int timeout_ms);

/* Like rft_wait, but the child must exit with status 0. */
void rft_wait_ok(rft_child *c, int timeout_ms);

/* SIGKILLs the child, reaps it and closes its pipes. */
void rft_kill(rft_child *c);

/* Closes the child's stdin pipe (it sees end of file). */
void rft_close_stdin(rft_child *c);

/* SIGKILLs every child not yet reaped. Async-signal-safe. */
void rft_kill_all(void);

/* Process-wide setup, first thing in main: ignores SIGPIPE (a dead child's
 * pipe must fail a check, not kill the test), and in a child (is_child)
 * makes this process die with its parent. */
void rft_proc_init(bool is_child);

#endif
