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

#include <stdio.h>

#include "flags.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/session.h"
#include "train_graph.h"

/* dist_ps.c: the ps job: serves until the chief's shutdown (exit status). */
int tr_run_ps(const tr_flags *f, rf_cluster *cluster);

/* dist_worker.c: the worker job (and the chief); exit status. */
int tr_run_worker(const tr_flags *f, rf_cluster *cluster);

/* dist_eval.c: the evaluator job: evaluates the chief's checkpoints;
 * exit status. */
int tr_run_evaluator(const tr_flags *f, rf_cluster *cluster);

/* dist_explain.c: --explain (text) and --explain=json, before training,
 * from the session's description of its training step. */
int tr_dist_explain(const tr_flags *f, const rf_server *server,
                    const tr_session *ts, const rf_session_desc *desc,
                    FILE *out, char *err, size_t errlen);

#endif
