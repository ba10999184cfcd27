/* tools/trainer/preempt.h: SIGTERM, a task's manager asking it to stop
 * (Kubernetes evicting or preempting its pod, Slurm's scancel, rf-launch
 * ending a job). TensorFlow's PreemptionCheckpointHandler saves a
 * checkpoint on the signal and exits so that the platform restarts the
 * task; rf-trainer does the same within the grace a manager gives
 * (Kubernetes: terminationGracePeriodSeconds, 30 s by default):
 * - a worker or the chief training notes the signal and stops at the end
 *   of its step; the chief saves a checkpoint; both exit 138 (retryable)
 *   without announcing that they finished (the job goes on when they are
 *   back). A signal after the job's last step lets the task finish the
 *   job as usual (its exit status is the job's);
 * - anywhere else (a ps, a task still waiting for its peers, the
 *   evaluator) there is nothing to save: the task exits 138 at once;
 * - a task that has not exited TR_PREEMPT_GRACE_SECS after the signal, or
 *   that gets a second one, exits 138 at once.
 * Each exit says why on its final line. */
#ifndef RF_TRAINER_PREEMPT_H
#define RF_TRAINER_PREEMPT_H

#include <stdbool.h>

#define TR_PREEMPT_GRACE_SECS 20

/* Installs the SIGTERM handler for the task named task
 * ("/job:worker/task:1"); outside a graceful section for now. */
void tr_preempt_install(const char *task);
/* Enters (on) or leaves a section in which the task polls tr_preempted()
 * and ends by itself (a worker's training and its end). */
void tr_preempt_graceful(bool on);
/* Whether SIGTERM was received. */
bool tr_preempted(void);

#endif
