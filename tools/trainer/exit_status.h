/* tools/trainer/exit_status.h: rf-trainer's exit statuses, the one place
 * that maps rdmaflow's rf_status codes to them, and the final line each
 * task ends with. The statuses follow the contract of Kubeflow's
 * restartPolicy: ExitCode (1-127 permanent, 128-255 retryable):
 *   0    success;
 *   1    a permanent failure (a corrupt checkpoint, a NaN loss, a disk
 *        that failed the final save): restarting the task repeats it;
 *   2    a usage or configuration error (a flag, a setting, a model or a
 *        secret that disagrees with the cluster's);
 *   138  a failure a restart can cure: a peer unreachable past
 *        --max_wait_secs, a lost ps that did not come back in time, a
 *        task preempted (SIGTERM). 138 = 128 + SIGUSR1, the code Kubeflow
 *        reserves for a program asking to be retried.
 * The final line ("rf-trainer: exit 138 (retryable): <reason>") goes to
 * stderr, or stdout for 0, and is the last line the task prints. */
#ifndef RF_TRAINER_EXIT_STATUS_H
#define RF_TRAINER_EXIT_STATUS_H

#include <stdio.h>

#include "rdmaflow/status.h"

#define TR_EXIT_OK        RF_EXIT_OK
#define TR_EXIT_FAILED    RF_EXIT_FAILED
#define TR_EXIT_USAGE     RF_EXIT_USAGE
#define TR_EXIT_RETRYABLE RF_EXIT_RETRYABLE

/* The exit status for a failure with status st (RF_OK: 0): the library's
 * rf_status_exit_code. */
int tr_exit_status(rf_status st);
/* A word for an exit status: "success", "permanent", "usage",
 * "retryable" (any other code: "permanent" below 128, else "retryable"). */
const char *tr_exit_kind(int code);

/* Prints "rf-trainer: <what>: <msg>" on stderr as the trainer's error lines
 * do, keeps "<what>: <msg>" as the reason of the exit unless one was kept
 * already (the first failure is the cause), and returns code. */
int tr_exit_fail(int code, const char *what, const char *msg);
/* tr_exit_fail with tr_exit_status(st). */
int tr_exit_fail_status(rf_status st, const char *what, const char *msg);
/* Keeps the reason of the exit (printf-style) if none was kept yet; for a
 * success ("worker 1 done at global_step 3000") or a failure already said
 * on stderr. */
void tr_exit_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Says whether a reason was kept. */
int tr_exit_has_reason(void);
/* The final line for exit status code: "rf-trainer: exit <code> (<kind>):
 * <reason>" on stderr (stdout for 0, after flushing it); the reason kept,
 * else "see the lines above". */
void tr_exit_final_line(int code);

#endif
