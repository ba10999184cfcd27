/* tools/launch/task.h: starting one task, the same way the first time and
 * at every restart. */
#ifndef RF_LAUNCH_TASK_H
#define RF_LAUNCH_TASK_H

#include <signal.h>

#include "launch.h"
#include "rdmaflow/status.h"

/* The signal state rf-launch started with, restored in every task: the
 * mask, and the signals set back to SIG_DFL (SIGPIPE, which rf-launch
 * itself ignores, unless it was ignored at the start). */
typedef struct lt_sigstate {
    sigset_t mask;
    sigset_t dfl;
} lt_sigstate;

/* Starts task t (its argv, PATH searched) as the leader of its own process
 * group, killed if rf-launch dies (PR_SET_PDEATHSIG, tied to the calling
 * thread: rf-launch's only one), with the signal state of sig, stdin from
 * /dev/null (a remote task's ssh: a pipe held open in t->stdin_fd, see
 * remote.h), stdout and stderr into non-blocking pipes forwarded line by
 * line to rf-launch's, and TF_CONFIG set to t->tf_config (or removed in
 * flags mode). Releases t's port reservation first so the task can bind
 * the port. Sets t->pid and t->running. On failure the message says why
 * (the child is reaped). The pipes of an earlier run must be closed. */
rf_status lt_task_start(lt_task *t, const lt_sigstate *sig);

#endif
