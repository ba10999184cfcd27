/* tools/launch/supervise.h: watching the running tasks until they end. */
#ifndef RF_LAUNCH_SUPERVISE_H
#define RF_LAUNCH_SUPERVISE_H

#include <stdint.h>

#include "launch.h"
#include "task.h"

/* Forwards the tasks' output and waits for them, reacting to task exits,
 * the signals read from sigfd (a signalfd for SIGCHLD, SIGINT, SIGTERM,
 * SIGHUP), --timeout (counted from start_ms, an rf_now_ms time) and the grace
 * periods, until every task has been reaped; then kills whatever is left of
 * their process groups and any other descendant, and forwards the last output.
 * Tasks with pid 0 were never started. With o->restart_on_failure, a task
 * that fails while the others run is started again (lt_task_start with
 * sig, after its backoff) until it has used o->max_restarts; t->restarts
 * counts them. ctlfd (-1: none) is the control socket (control.h): an
 * elastic job's workers added there go into t (room for cap tasks; *n
 * grows) and start as the others did; removed ones are stopped and their
 * end is not a failure. Returns rf-launch's exit status. */
int lt_supervise(lt_task *t, int *n, int cap, const lt_opts *o,
                 const lt_sigstate *sig, int sigfd, int ctlfd,
                 int64_t start_ms);

/* Records the children this process has before any task starts (e.g. a
 * shell's process substitution `rf-launch ... > >(tee log)`, which runs
 * as a child of the shell that exec'd rf-launch): the end of the launch
 * kills the tasks' leftover descendants, never those. Call once, before
 * the first lt_task_start. */
void lt_note_inherited(void);

/* Stops every started task (SIGTERM, then SIGKILL after o->grace_s) and
 * reaps it: used when the launch fails before all tasks are started. */
void lt_stop_all(lt_task *t, int n, const lt_opts *o, int sigfd);

#endif
