/* tests/fabric/proc.h: child processes of the suite. A child is this very
 * program re-executed through /proc/self/exe (fork + exec, never a bare fork,
 * so fork-unsafe providers such as verbs work) with a --role argument. Its
 * stdin and stdout are pipes carrying a line protocol with the parent; its
 * stderr is shared. Every child dies with its parent (PR_SET_PDEATHSIG) and is
 * killed by rt_kill_children() when a check fails or the watchdog fires. */
#ifndef RF_TESTS_FABRIC_PROC_H
#define RF_TESTS_FABRIC_PROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct rt_child {
    pid_t pid;   /* 0 once reaped */
    int to_fd;   /* the child's stdin */
    int from_fd; /* the child's stdout */
    char name[48];
    char buf[4096]; /* bytes read but not yet returned as lines */
    size_t buf_len;
} rt_child;

/* Starts `/proc/self/exe --provider P --host H <args...>` (args is
 * NULL-terminated). Fails the test if it cannot. */
void rt_spawn(rt_child *c, const char *name, const char *const *args);

/* Writes one line (a newline is appended) to the child's stdin. */
__attribute__((format(printf, 2, 3))) void rt_child_send(rt_child *c,
                                                         const char *fmt, ...);

/* Reads one line (without the newline) from the child's stdout, waiting up
 * to timeout_ms. Returns 0, or fails the test on timeout or end of file. */
void rt_child_line(rt_child *c, char *line, size_t cap, int timeout_ms);

/* Waits up to timeout_ms for the child to exit; returns its wait status. On
 * timeout the child is killed and the test fails. */
int rt_child_wait(rt_child *c, int timeout_ms);

/* Like rt_child_wait but the child must exit with status 0. */
void rt_child_wait_ok(rt_child *c, int timeout_ms);

/* SIGKILLs the child and reaps it. */
void rt_child_kill(rt_child *c);

/* Closes the pipes (the child sees end of file on stdin). */
void rt_child_close_pipes(rt_child *c);

/* SIGKILLs every child not yet reaped. Async-signal-safe. */
void rt_kill_children(void);

/* Process-wide setup: ignore SIGPIPE, make this process die with its parent
 * when it is itself a child. */
void rt_proc_init(int is_child);

#endif
