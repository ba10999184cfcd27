/* rdmaflow/monitored_session.h: the monitored session
 * (tf.train.MonitoredTrainingSession) over the worker's session of
 * rdmaflow/session.h: readiness, recovery, hooks (SessionRunHook and the
 * built-in ones) and the bounded end of a job. */
#ifndef RDMAFLOW_MONITORED_SESSION_H
#define RDMAFLOW_MONITORED_SESSION_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rdmaflow/graph.h"
#include "rdmaflow/metrics.h"
#include "rdmaflow/prometheus.h"
#include "rdmaflow/server.h"
#include "rdmaflow/session.h"
#include "rdmaflow/status.h"
#include "rdmaflow/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- monitored session (tf.train.MonitoredTrainingSession) -------------- */

/* A session that makes a long job survivable, with TensorFlow's semantics:
 *
 *   rf_monitored_session_options mo;
 *   rf_monitored_session_options_init(&mo);
 *   mo.session.train_op = train_op;
 *   mo.checkpoint_dir = "/ckpt";            // restore + CheckpointSaver
 *   rf_hook *hooks[2];
 *   rf_stop_at_step_hook_create(0, last_step, &hooks[0]);
 *   rf_nan_tensor_hook_create(loss, &hooks[1]);
 *   mo.hooks = hooks; mo.num_hooks = 2;     // owned by the session now
 *   rf_monitored_session *ms;
 *   rf_monitored_session_create(server, g, ex, &mo, &ms);
 *   bool ended = false;
 *   while (!ended && !rf_monitored_session_should_stop(ms))
 *       rf_monitored_session_run(ms, feeds, values, 2, fetch, 2, out, NULL,
 *                                &ended);
 *   st = rf_monitored_session_close(ms);    // chief: waits for the others
 *   ... chief: evaluate the graph locally, export ...
 *   rf_monitored_session_shutdown_cluster(ms);   // chief
 *   rf_monitored_session_destroy(ms);
 *
 * Creation: the chief restores the newest checkpoint of checkpoint_dir that
 * verifies (a corrupt newer one is named and skipped); without one it
 * adopts shards that are all initialised (a restarted chief) or
 * initialises them. The others wait until the chief has. Every task waits
 * for readiness (ps tasks up, variables initialised) at most max_wait_secs,
 * printing "still waiting for /job:ps/task:0: <last error>" every 10 s.
 *
 * Recovery (TensorFlow's _RecoverableSession): a run that fails with
 * RF_ERR_DISCONNECTED, RF_ERR_UNAVAILABLE, RF_ERR_ABORTED (a ps restarted:
 * new incarnation) or RF_ERR_TIMEOUT (a peer stopped answering) drops the
 * session, creates it again (the readiness wait above; the chief recreates
 * the shards of a restarted ps and restores the newest checkpoint into
 * every ps, or, when no ps restarted, adopts the variables as they are)
 * and runs the step again. Hooks see after_create_session again;
 * StopAtStep's last step is not moved by a recovery.
 *
 * Except when no step can complete: a sync replicas step that fewer
 * workers are connected for than replicas_to_aggregate, not back within
 * max_wait_secs (rf_session_sync_stuck). Then the run does not recover:
 * the chief saves a checkpoint (when it has a CheckpointSaver) and shuts
 * the ps tasks down, and the run fails with the step's status (so
 * rf_status_exit_code gives the retryable 138) and a message naming the
 * missing workers, the count needed and what the chief did ("...; saved
 * PATH; the ps tasks shut down"). The session is lost then: runs and
 * close are refused; destroy it.
 *
 * Hooks (SessionRunHook): begin once, after_create_session after every
 * creation, before_run / after_run around every run (a hook may ask for
 * extra nodes to be fetched in before_run and gets their values in
 * after_run), end at close. Chief-only hooks run only on the chief; the
 * session itself adds, on the chief, StepCounter (log_step_count_steps),
 * SummarySaver (summary_dir, save_summaries_steps or _secs) and
 * CheckpointSaver (checkpoint_dir with save_checkpoint_steps or _secs),
 * after the caller's hooks. A hook's failing status stops the run with it. */

typedef struct rf_monitored_session rf_monitored_session;
typedef struct rf_hook rf_hook;

/* What after_run sees. */
typedef struct rf_run_values {
    int64_t global_step;      /* after the run (the new one after training) */
    bool train;               /* the run fetched train_op */
    const rf_tensor *results; /* the nodes this hook asked for in before_run,
                                 in order */
    size_t num_results;
} rf_run_values;

/* A hook: every entry but name may be NULL. ctx is the hook's own. */
typedef struct rf_hook_ops {
    const char *name;
    rf_status (*begin)(void *ctx, rf_monitored_session *ms);
    rf_status (*after_create_session)(void *ctx, rf_monitored_session *ms,
                                      int64_t global_step);
    /* Writes at most max nodes to fetch with this run into fetch; returns
     * how many, or RF_HOOK_FAILED after rf_error_set: the run fails with
     * RF_ERR_INVALID_ARG and that message before its step (no later
     * hook's before_run, no after_run), as a TensorFlow hook's exception
     * in before_run does. */
    size_t (*before_run)(void *ctx, rf_monitored_session *ms, rf_node **fetch,
                         size_t max);
    rf_status (*after_run)(void *ctx, rf_monitored_session *ms,
                           const rf_run_values *values);
    rf_status (*end)(void *ctx, rf_monitored_session *ms);
    void (*destroy)(void *ctx); /* frees ctx */
} rf_hook_ops;

/* Nodes one hook may ask for in one run. */
#define RF_HOOK_MAX_FETCHES 16
/* What a before_run returns to fail the run (rf_error_set first). */
#define RF_HOOK_FAILED ((size_t)-1)

/* A hook of the caller's: ops (must outlive the hook) and ctx, which
 * ops->destroy frees with the hook. */
RF_API rf_status rf_hook_create(const rf_hook_ops *ops, void *ctx,
                                rf_hook **out);
/* Frees a hook not handed to a monitored session. NULL is ignored. */
RF_API void rf_hook_destroy(rf_hook *hook);

/* StopAtStepHook: stop when global_step reaches last_step, or num_steps
 * after the global_step the first session started from (computed once);
 * exactly one of the two is > 0. A session created when the job is already
 * at its last step stops before running (a late or restarted worker). */
RF_API rf_status rf_stop_at_step_hook_create(int64_t num_steps,
                                             int64_t last_step, rf_hook **out);
/* NanTensorHook(loss, fail_on_nan_loss=True): a run whose loss (a float32
 * scalar node) is NaN fails with RF_ERR_NUMERIC ("NaN loss during training
 * (global_step N)") and the job stops. */
RF_API rf_status rf_nan_tensor_hook_create(rf_node *loss, rf_hook **out);
/* LoggingTensorHook: every every_n_iter runs of this task, one line to out
 * (NULL: stdout) with the value of each node ("loss = 0.4127, global_step =
 * 1200 (0.812 sec)"); a non-scalar shows its first values. */
RF_API rf_status rf_logging_hook_create(rf_node *const *nodes, size_t num_nodes,
                                        int64_t every_n_iter, FILE *out,
                                        rf_hook **out_hook);
/* StepCounterHook: every every_n_steps of global_step, the cluster's
 * global_step/sec and, with examples_per_step > 0, examples/sec, to out
 * (NULL: stdout) and, when w is not NULL, as the scalar summaries
 * "global_step/sec" and "examples/sec" through w (the caller's: close it
 * after the session is destroyed; a write that fails is logged). */
RF_API rf_status rf_step_counter_hook_create(int64_t every_n_steps,
                                             int64_t examples_per_step,
                                             FILE *out, rf_summary_writer *w,
                                             rf_hook **out_hook);
/* CheckpointSaverHook (the chief): saves into dir (rf_session_save, keeping
 * max_to_keep, 0: 5) after the session is created (unless it has just
 * restored a checkpoint: the next save is counted from that checkpoint's
 * step, though other workers may have moved on since), every save_steps global
 * steps if save_steps > 0, else every save_secs seconds if save_secs > 0,
 * and at the end. One line per save to out (NULL: stdout). A save that
 * finds the session lost is left to the next run (which recovers first).
 * A save that cannot be written (no space, a read-only, vanished or
 * dangling directory: the previous checkpoints stay as they were) does not
 * stop training: the first of a run of failures is logged with its
 * reason, the next save is tried at its time, "checkpoint saved again"
 * says when one succeeds, and the run fails (RF_ERR_IO, naming dir and the
 * last error) only once max_failed_saves (3 here) saves in a row have
 * failed. The final save is retried once after 5 s; if it still fails,
 * close fails (RF_ERR_IO, or the session's status when it was lost), so a
 * job never ends "saved" without its last checkpoint. */
RF_API rf_status rf_checkpoint_saver_hook_create(const char *dir,
                                                 double save_secs,
                                                 int64_t save_steps,
                                                 int max_to_keep, FILE *out,
                                                 rf_hook **out_hook);
/* The same with max_failed_saves (>= 0; 0: failed saves never stop the
 * run, only the final one's failure counts). */
RF_API rf_status rf_checkpoint_saver_hook_create_ex(
    const char *dir, double save_secs, int64_t save_steps, int max_to_keep,
    int max_failed_saves, FILE *out, rf_hook **out_hook);

/* MetricsHook (rdmaflow's, for --metrics_out): this task's training as
 * JSON lines, written through w (rf_metrics_writer_open; the caller
 * closes it after the session is destroyed). Every training run is counted
 * with its loss (a float32 scalar node, fetched every run; NULL: null in
 * the file), accuracy (a float32 scalar node such as rf_accuracy's over
 * the batch, fetched every run; NULL: not written) and the bytes it moved
 * (rf_session_counters_get, a recovery's new session included); w writes
 * the lines it is due. The first session's creation starts w's clock
 * (rf_metrics_writer_start at its global_step). The hook writes no
 * summary: the caller does (rf_metrics_writer_summary) once it knows the
 * test accuracy. */
RF_API rf_status rf_metrics_hook_create(rf_metrics_writer *w, rf_node *loss,
                                        rf_node *accuracy, rf_hook **out_hook);

/* PrometheusHook (rdmaflow's, for --metrics_port): adds a worker's metrics
 * to r at begin (rdmaflow_global_step, rdmaflow_worker_steps_total,
 * _examples_total, _steps_per_second, _examples_per_second,
 * rdmaflow_global_step_per_second, the summary rdmaflow_worker_step_seconds,
 * rdmaflow_worker_recoveries_total; at the first session's creation
 * rdmaflow_worker_bytes_read_total and _bytes_pushed_total with a label
 * ps="/job:ps/task:N" per ps task) and updates them after every run with
 * atomic stores. examples_per_step: this worker's batch. r must outlive
 * the session. */
RF_API rf_status rf_prometheus_hook_create(rf_prom_registry *r,
                                           int64_t examples_per_step,
                                           rf_hook **out_hook);

/* SummarySaverHook (the chief; the monitored session adds one for its
 * summary_dir options below): on the first run and then every save_steps
 * global steps if save_steps > 0, else every save_secs seconds, fetches
 * the n scalar nodes with the run (float32, int32 or int64 of one element;
 * another fails the run naming the tag) and writes their values through
 * w (tags[i] names nodes[i]; at most RF_HOOK_MAX_FETCHES, tags distinct)
 * as one Event at the run's global_step, after a SessionLog START the
 * first time, as TensorFlow's. A write that fails is logged and training
 * goes on. w is the caller's: close it after the session is destroyed;
 * the tags are copied. */
RF_API rf_status rf_summary_saver_hook_create(rf_summary_writer *w,
                                              int64_t save_steps,
                                              double save_secs,
                                              rf_node *const *nodes,
                                              const char *const *tags, size_t n,
                                              rf_hook **out_hook);

typedef struct rf_monitored_session_options {
    /* train_op, apply mode, timeouts (see rf_session_options). Its
     * checkpoint_dir is ignored: use checkpoint_dir below. */
    rf_session_options session;
    /* The chief restores from it and, if save_checkpoint_steps or _secs is
     * > 0, saves into it. NULL: neither. */
    const char *checkpoint_dir;
    int64_t save_checkpoint_steps; /* > 0: every N steps (secs ignored) */
    double save_checkpoint_secs;   /* default 600; 0: only by steps */
    int max_to_keep;               /* default 5 */
    /* The chief stops (the run fails with RF_ERR_IO) once this many saves
     * in a row have failed (default 3; 0: never; CheckpointSaverHook). */
    int max_failed_saves;
    /* The chief's StepCounter every N steps (default 100; 0: none), with
     * examples/sec when examples_per_step (the batch size) > 0. */
    int64_t log_step_count_steps;
    int64_t examples_per_step;
    /* TensorBoard summaries (rdmaflow/summary.h), the chief's, into an
     * event file in summary_dir (NULL: checkpoint_dir; neither: none):
     * the StepCounter above writes global_step/sec (and examples/sec)
     * there too, and the SummarySaver writes the num_summaries scalar
     * nodes (float32, int32 or int64; summary_tags[i] names
     * summary_nodes[i]; tf.summary.scalar) every save_summaries_steps
     * global steps (default 100) or, when that is 0, every
     * save_summaries_secs seconds (default 0: never). The arrays are
     * read at creation only. */
    const char *summary_dir;
    int64_t save_summaries_steps;
    double save_summaries_secs;
    rf_node *const *summary_nodes;
    const char *const *summary_tags;
    size_t num_summaries;
    /* Readiness wait bound, at creation and at each recovery (default
     * 7200). */
    int max_wait_secs;
    /* The chief's close waits at most this long for the other workers
     * (default 120). */
    int stop_grace_secs;
    /* Handed over (the session destroys them, even when creation fails). */
    rf_hook *const *hooks;
    size_t num_hooks;
    rf_hook *const *chief_only_hooks;
    size_t num_chief_only_hooks;
    /* Waiting, recovery and the built-in hooks' lines (NULL: stdout). */
    FILE *log;
} rf_monitored_session_options;

RF_API void rf_monitored_session_options_init(rf_monitored_session_options *o);

/* The chief's checkpoint_dir, checked before any work (a program calls it
 * first, before starting its server or loading data): makes the directory
 * if it does not exist (rf_ckpt_dir_create) and checks that the state file
 * the CheckpointSaver rewrites after every save, dir/checkpoint, could be
 * written (rf_file_check_output), so a file, a FIFO or an unwritable place
 * is refused at once rather than after the wait for the ps tasks. The
 * failing call's status and message ("$DIR is not a directory", "cannot
 * create directory $DIR: ..."); RF_ERR_INVALID_ARG for a NULL dir or one
 * too long for a path ("'$DIR' is too long"). */
RF_API rf_status rf_monitored_session_check_checkpoint_dir(const char *dir);

/* Creates the session as described above (begin, the readiness wait, then
 * after_create_session). RF_ERR_TIMEOUT after max_wait_secs names what it
 * waited for; a refusal (a model that differs, a corrupt checkpoint
 * directory) fails at once. */
RF_API rf_status rf_monitored_session_create(
    rf_server *server, rf_graph *g, rf_executor *ex,
    const rf_monitored_session_options *o, rf_monitored_session **out);
/* One run (rf_session_run) with the hooks around it, recovering as above.
 * After a stop was requested it refuses to run (RF_ERR_INVALID_ARG).
 * *job_ended (may be NULL) says whether the step ran: false when it did
 * (fetched holds its values); true when the session was lost, recovered,
 * and the job had ended meanwhile (a hook's after_create_session
 * requested a stop: StopAtStep when the others reached the last step), so
 * nothing was run: RF_OK, fetched is left as it was (never zeroed) and
 * *global_step gets the recovered session's. The caller stops its loop
 * then, as should_stop now says. fetched are views into the session's
 * buffers: valid until the next run, or a recovery by any call (copy a
 * value out before rf_monitored_session_shard_next). */
RF_API rf_status rf_monitored_session_run(
    rf_monitored_session *ms, rf_node *const *feeds, const rf_tensor *values,
    size_t num_feeds, rf_node *const *fetches, size_t num_fetches,
    rf_tensor *fetched, int64_t *global_step, bool *job_ended);
/* The shard ledger of ps task 0 (rf_session_shard_next) with the
 * recovery of rf_monitored_session_run: a request that fails because a
 * ps was lost recovers the session (a restarted ps 0 gets the ledger of
 * the checkpoint restored into it) and asks again; a batch whose report
 * was lost is reported to the restored ledger, which says *stale when it
 * had dealt the shard to another worker meanwhile. *job_ended (may be
 * NULL) as for rf_monitored_session_run: the job ended while this task
 * recovered, *next is left as it was. A recovery frees the tensors the
 * last run fetched. */
RF_API rf_status rf_monitored_session_shard_next(
    rf_monitored_session *ms, const rf_ps_shard_geometry *geom,
    const rf_ps_shard_grant *done, rf_ps_shard_grant *next, bool *stale,
    bool *job_ended);
RF_API bool rf_monitored_session_should_stop(const rf_monitored_session *ms);
RF_API void rf_monitored_session_request_stop(rf_monitored_session *ms);
/* The session now (a new one after each recovery): for hooks and for
 * rf_session_save, describe, trace. */
RF_API rf_session *rf_monitored_session_session(rf_monitored_session *ms);
RF_API bool rf_monitored_session_is_chief(const rf_monitored_session *ms);
/* The last global_step seen; recoveries so far. */
RF_API int64_t rf_monitored_session_global_step(const rf_monitored_session *ms);
RF_API int rf_monitored_session_recoveries(const rf_monitored_session *ms);
/* Where log lines go (the options' log or stdout). */
RF_API FILE *rf_monitored_session_log(const rf_monitored_session *ms);

/* The end of this task's job. A non-chief announces that it finished and
 * runs the hooks' end. The chief waits at most stop_grace_secs for every
 * other worker, reads every variable (values, slots, beta powers,
 * global_step) into the graph, then runs the hooks' end (CheckpointSaver
 * saves the final checkpoint). If a worker did not finish in time it
 * returns RF_ERR_TIMEOUT naming it ("/job:worker/task:1 did not finish
 * within 120 s") after doing all of that, so the chief can still evaluate
 * and shut the cluster down before exiting with an error. Call once. */
RF_API rf_status rf_monitored_session_close(rf_monitored_session *ms);
/* The chief: rf_session_shutdown_cluster. */
RF_API rf_status
rf_monitored_session_shutdown_cluster(rf_monitored_session *ms);
/* Frees the session and its hooks. NULL is ignored. */
RF_API void rf_monitored_session_destroy(rf_monitored_session *ms);

#ifdef __cplusplus
}
#endif
#endif
