/* rdmaflow/spawn.h: starting, waiting for and stopping child processes, the
 * one way the tree starts a program (rf-launch's tasks, rf-bench --loopback's
 * server, rf-fabric-demo's target, tests). fork + exec, never a bare fork:
 * the child runs nothing of the caller's between the two (libibverbs and
 * other fork-unsafe libraries are never used in it), and the caller learns
 * whether the exec worked (a failure comes back as an rf_status with an
 * rf_error_set message, never as a silent exit 127). Also a bounded wait,
 * a terminate (signal, grace, SIGKILL) and the parent's side of a "ready
 * fd" handshake (the child writes the port it listens on).
 *
 * Not a process supervisor (rf-launch watches its tasks itself), not a
 * shell (argv is executed as given) and no pseudo-terminals.
 *
 * fork() copies the address space copy-on-write: a process that has
 * registered memory with libibverbs (without ibv_fork_init) is only safe if
 * the kernel copies pinned pages at fork (ibv_is_fork_initialized() ==
 * IBV_FORK_UNNEEDED), so spawn before registering memory where possible.
 * Needs POSIX (<signal.h>'s sigset_t). Implemented in core/spawn.c; the
 * library never exits, the child uses _exit only after a failed set-up. */
#ifndef RDMAFLOW_SPAWN_H
#define RDMAFLOW_SPAWN_H

#include "rdmaflow/api.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rf_spawn_opts.path for "this program again" (re-execution). */
#define RF_SPAWN_SELF "/proc/self/exe"

/* How many extra descriptors a child can be given (rf_spawn_opts.keep). */
#define RF_SPAWN_MAX_FDS 16

/* After SIGKILL, how long rf_child_stop waits for the child to go. */
#define RF_SPAWN_KILL_WAIT_MS 5000

/* What one of the child's stdin, stdout, stderr is. */
typedef enum rf_spawn_stdio {
    RF_SPAWN_INHERIT = 0, /* the caller's descriptor */
    RF_SPAWN_DEVNULL,     /* /dev/null (read-only for stdin) */
    RF_SPAWN_PIPE,        /* a pipe; the caller gets the other end */
} rf_spawn_stdio;

/* A descriptor of the caller's that the child gets as child_fd (>= 3). The
 * caller keeps (and closes) its own fd. */
typedef struct rf_spawn_fd {
    int fd;
    int child_fd;
} rf_spawn_fd;

typedef struct rf_spawn_opts {
    /* NULL-terminated; argv[0] is the program name the child sees. */
    const char *const *argv;
    /* The file to execute: NULL searches argv[0] in PATH (execvp rules);
     * RF_SPAWN_SELF re-executes the calling program. */
    const char *path;
    /* The child's environment is the caller's, minus every NAME in unset
     * (NULL-terminated, or NULL), with every "NAME=value" of set
     * (NULL-terminated, or NULL) replacing or adding that variable. */
    const char *const *env_set;
    const char *const *env_unset;
    /* The child leads a new process group (pgid = pid); rf_child_signal and
     * rf_child_stop then signal the whole group. */
    bool new_pgroup;
    /* PR_SET_PDEATHSIG(SIGKILL): the child is killed when the caller dies.
     * Linux ties this to the *thread* that called rf_spawn: spawn from a
     * thread that lives as long as the child should. */
    bool die_with_parent;
    /* stdin, stdout, stderr. */
    rf_spawn_stdio stdio[3];
    /* The caller's ends of RF_SPAWN_PIPE streams are non-blocking. */
    bool pipe_nonblock;
    /* Extra descriptors the child gets (ready/port pipes); at most
     * RF_SPAWN_MAX_FDS, child_fd >= 3 and distinct. Every other descriptor
     * follows its own FD_CLOEXEC flag (rf_spawn's own are all
     * close-on-exec). */
    const rf_spawn_fd *keep;
    int nkeep;
    /* Signal state the child execs with. sigmask: its signal mask (NULL:
     * that of the calling thread). sigdefault: signals set back to SIG_DFL
     * (e.g. SIGPIPE, which the caller ignores but the program should not);
     * NULL: none. Ignored signals otherwise stay ignored (exec keeps that),
     * caught ones become SIG_DFL as exec makes them. */
    const sigset_t *sigmask;
    const sigset_t *sigdefault;
} rf_spawn_opts;

/* A started child. The pipe ends are the caller's to read, write and close
 * (rf_child_close closes those still open; set one to -1 when handing it
 * over). */
typedef struct rf_child {
    pid_t pid;       /* 0: none */
    bool pgroup;     /* leads its own process group */
    bool reaped;     /* waited for; pid no longer valid */
    int wstatus;     /* waitpid status, once reaped */
    int stdio_fd[3]; /* caller's ends of the RF_SPAWN_PIPE streams, or -1 */
} rf_child;

/* Starts o->argv. Returns RF_OK once the program has been executed (the
 * exec succeeded), with *child filled in. On failure nothing is left
 * behind (a child that failed to set up or exec has been reaped, pipes
 * closed) and the message says what failed: "cannot run 'PROG': No such
 * file or directory" when the exec fails, "STEP failed: REASON" for the
 * steps before it (setpgid, prctl(PR_SET_PDEATHSIG), dup2, signal
 * set-up), "fork: REASON", "pipe: REASON", "out of memory". Bad options
 * are RF_ERR_INVALID_ARG. *child is cleared (pid 0) first, also on
 * failure. */
RF_API rf_status rf_spawn(const rf_spawn_opts *o, rf_child *child);

/* Waits up to timeout_ms (negative: no limit, 0: just look) for the child
 * to exit. RF_OK: reaped, *wstatus (may be NULL) is its waitpid status.
 * RF_ERR_TIMEOUT: still running. RF_ERR_IO: waitpid failed (e.g. someone
 * else reaped it). A reaped child gives its status again. */
RF_API rf_status rf_child_wait(rf_child *child, int64_t timeout_ms,
                               int *wstatus);

/* Sends sig to the child (to its group when it leads one). RF_ERR_INVALID_ARG
 * once it has been reaped (its pid may belong to another process). */
RF_API rf_status rf_child_signal(rf_child *child, int sig);

/* Stops the child: sends sig (0: none, only wait), waits up to grace_ms
 * (negative: no limit, no SIGKILL) for it to exit, then sends SIGKILL (to
 * its group when it leads one) and waits up to RF_SPAWN_KILL_WAIT_MS. RF_OK:
 * reaped, *wstatus (may be NULL) set, *killed (may be NULL) tells whether
 * SIGKILL was needed. RF_ERR_TIMEOUT: still there after SIGKILL (stuck in the
 * kernel); not reaped. RF_ERR_IO: waitpid failed. */
RF_API rf_status rf_child_stop(rf_child *child, int sig, int64_t grace_ms,
                               int *wstatus, bool *killed);

/* Closes the pipe ends still open; does not wait. */
RF_API void rf_child_close(rf_child *child);

/* The parent's side of a ready-fd handshake: reads one line from fd (byte
 * by byte, so nothing after it is consumed) within timeout_ms (negative: no
 * limit) and parses it as prefix (NULL: none) followed by a port in
 * 1..65535 and '\n', e.g. "4242\n" or, with prefix "port ", "port 4242\n".
 * RF_ERR_TIMEOUT: no whole line in time. RF_ERR_DISCONNECTED: the writer
 * closed fd first (the child died or failed before listening).
 * RF_ERR_CORRUPT: a line of another form. RF_ERR_IO: read/poll failed. */
RF_API rf_status rf_spawn_read_port(int fd, const char *prefix,
                                    int64_t timeout_ms, uint16_t *port);

#ifdef __cplusplus
}
#endif
#endif
