/* tools/launch/remote.h: the ssh command line that starts a task on its
 * host (rf-launch --hostfile). */
#ifndef RF_LAUNCH_REMOTE_H
#define RF_LAUNCH_REMOTE_H

#include "launch.h"

/* The default of --ssh: no password or host-key prompt can hang a launch. */
#define LT_DEFAULT_SSH "ssh -o BatchMode=yes"

/* Replaces t->argv (PROGRAM ARGS... and the cluster flags) by
 *   SSH_WORDS... HOST 'cd CWD && exec env [-u TF_CONFIG | TF_CONFIG=...]
 *       RF_*=... sh -c WATCH rf-task ARGV...'
 * ssh is o->ssh split at blanks (no quoting); CWD is rf-launch's working
 * directory; the RF_* variables of rf-launch's environment and the task's
 * TF_CONFIG travel in the command (ssh forwards no environment), but for
 * RF_JOB_TOKEN when the job has rf-launch's secret: then WATCH reads the
 * secret's line and the job token's line (empty: none) from ssh's
 * standard input (task.c writes them); every word is quoted for the
 * remote shell. WATCH runs the task in the
 * background and stops it (SIGTERM) when ssh's standard input ends, i.e.
 * when rf-launch stops ssh or dies: without a terminal, sshd would leave
 * it running. The task's exit status is ssh's (128 + N if killed by
 * signal N). Returns 0, or -1 (out of memory). */
int lt_remote_wrap(const lt_opts *o, lt_task *t);

#endif
