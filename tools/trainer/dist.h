/* tools/trainer/dist.h: rf-trainer's distributed mode (TensorFlow 1.x's
 * classic ps/worker trainer), a client of rdmaflow/session.h. A ps task
 * starts its server and serves until the chief shuts it down (dist_ps.c).
 * A worker starts its server, builds the model under replica_device_setter
 * (every variable on a ps task, global_step first so it lands on ps 0,
 * everything else on this worker), creates its session (the chief creates
 * and initialises the shards, the others wait for it), prints --explain
 * from the session's step description (dist_explain.c), trains on its part
 * of the data until the cluster's global_step reaches --train_steps
 * (StopAtStepHook), and finishes: the others announce they are done, the
 * chief waits for them, pulls every variable back, evaluates, writes
 * --variables_out and shuts the ps tasks down (dist_worker.c). */
#ifndef RF_TRAINER_DIST_H
#define RF_TRAINER_DIST_H

#include <json-c/json.h>
#include <stdio.h>

#include "flags.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/metrics.h"
#include "rdmaflow/monitored_session.h"
#include "rdmaflow/session.h"
#include "train_graph.h"

/* dist_common.c: replica_device_setter(cluster, worker_device=
 * "/job:<job>/task:<i>", ps_strategy of the flags) for task; -1 with err. */
int tr_make_setter(const tr_flags *f, const rf_cluster *cluster,
                   const rf_cluster_task *task, rf_replica_device_setter **out,
                   char *err, size_t errlen);
/* The session options of the flags (train_op and global_step from s). */
/* Examples one global step trains: the batch, N workers' batches with
 * --sync_replicas (N: --replicas_to_aggregate, else every worker). */
int64_t tr_examples_per_global_step(const tr_flags *f, int num_workers);
/* dist_stop.c: the chief (else nothing) saves a checkpoint into
 * --checkpoint_dir now, printing "chief: saved checkpoint PATH after
 * AFTER"; saved gets "; saved PATH" or why not. */
void tr_save_now(rf_monitored_session *ms, const tr_flags *f, bool chief,
                 const char *after, char *saved, size_t len);
/* The exit status of training that failed with rc and err: 138 when a
 * sync replicas job can no longer complete a step (rf_session_sync_stuck;
 * the monitored session's chief saved and shut the ps tasks down, err
 * says so), else rc. */
int tr_training_failed(rf_monitored_session *ms, int rc, const char *err);
void tr_session_options_fill(const tr_flags *f, const tr_session *s,
                             rf_session_options *o);
/* The monitored session's options of the flags (checkpoints, step
 * counter, summaries, waits); examples_per_step per_global_step. The
 * summaries are s's loss and, if it has one, its batch accuracy, whose
 * nodes summary_nodes (room for 2, alive until the session is created)
 * holds. Hooks are the caller's. */
void tr_monitored_options_fill(const tr_flags *f, const tr_session *s,
                               int64_t per_global_step,
                               rf_node *summary_nodes[2],
                               rf_monitored_session_options *mo);
/* With --staleness: one line of what stale synchronous parallel cost this
 * worker (its current session's counters). */
void tr_print_ssp(const tr_flags *f, rf_monitored_session *ms);
/* One line per embedding table shard: its lookups' way, why, and what
 * they took (rf_session_lookup_info); nothing without tables. */
void tr_print_lookups(rf_monitored_session *ms);

/* dist_ps.c: the ps job: serves until the chief's shutdown (exit status). */
int tr_run_ps(const tr_flags *f, rf_cluster *cluster);

/* dist_worker.c: the worker job (and the chief); exit status. --explain
 * goes to explain. */
int tr_run_worker(const tr_flags *f, rf_cluster *cluster, FILE *explain);

/* elastic.c: an elastic worker (not the chief) stopped by SIGTERM
 * (preempt.h) leaves the job: LEAVE to ps task 0, its final line; returns
 * the exit status (0, or a failure's). */
int tr_elastic_leave(rf_monitored_session *ms, rf_metrics_writer *metrics,
                     const rf_cluster_task *self, int64_t steps);

/* ledger.c: an elastic worker's data from the shard ledger of ps task 0
 * (rf_session_shard_next): each batch is the one the ledger dealt; after
 * its step the batch is written to --shards_out and reported. */
typedef struct tr_ledger {
    rf_ps_shard_geometry geom;
    rf_ps_shard_grant at; /* the batch to train */
    int fd;               /* --shards_out, or -1 */
    int worker;
    int64_t batches; /* trained by this task */
} tr_ledger;
/* Opens --shards_out and asks for the first batch. 0, or the exit status
 * with err. The ledger's requests recover the session when a ps was lost
 * (rf_monitored_session_shard_next); a job that ended meanwhile makes
 * should_stop true. */
int tr_ledger_start(tr_ledger *l, const tr_flags *f, const rf_dataset *train,
                    int worker, rf_monitored_session *ms, char *err,
                    size_t errlen);
/* The dealt batch's examples into x and y. 0 or the exit status. */
int tr_ledger_batch(const tr_ledger *l, const rf_dataset *train, float *x,
                    int32_t *y, char *err, size_t errlen);
/* The batch was trained (its step, push included, returned): its line in
 * --shards_out. 0 or the exit status. */
int tr_ledger_record(tr_ledger *l, int64_t global_step, char *err,
                     size_t errlen);
/* Then its progress to the ledger, which deals the next batch; *ended
 * when the job ended while the session recovered. */
int tr_ledger_report(tr_ledger *l, rf_monitored_session *ms, bool *ended,
                     char *err, size_t errlen);
void tr_ledger_close(tr_ledger *l);

/* dist_eval.c: the evaluator job: evaluates the chief's checkpoints;
 * exit status. */
int tr_run_evaluator(const tr_flags *f, rf_cluster *cluster);

/* dist_explain.c: --explain (text) and --explain=json, before training,
 * from the session's description of its training step. */
int tr_dist_explain(const tr_flags *f, const rf_server *server,
                    const rf_session_desc *desc, FILE *out, char *err,
                    size_t errlen);
/* Its pieces, for --explain_only too (server NULL: nothing opened): one
 * worker task's "explain" JSON member (NULL when out of memory), and its
 * text with every header line starting with pfx; the cluster's line. */
json_object *tr_explain_worker_json(const tr_flags *f, const rf_cluster *c,
                                    const rf_cluster_task *self,
                                    const rf_server *server,
                                    const rf_session_desc *desc);
void tr_explain_worker_text(const tr_flags *f, const rf_cluster *c,
                            const rf_cluster_task *self,
                            const rf_server *server,
                            const rf_session_desc *desc, json_object *ex,
                            const char *pfx, FILE *out);
void tr_explain_cluster_line(const rf_cluster *c, const char *pfx, FILE *out);

/* explain_only.c: --explain_only for cluster c (NULL: local mode) on out;
 * exit status. */
int tr_explain_only(const tr_flags *f, const rf_cluster *c, FILE *out);
/* explain_local.c: --explain of a local run (text or JSON) on out. */
int tr_explain_local(const tr_flags *f, const tr_session *s, FILE *out,
                     char *err, size_t errlen);

#endif
