/* rdmaflow/session.h: TensorFlow 1.x's distributed runtime in C: the
 * server every task starts (tf.train.Server), and the worker's session over
 * a graph built under replica_device_setter (what MonitoredTrainingSession
 * runs the classic trainer with). A program is run once per task:
 *
 *   rf_cluster *cluster;               // rf_cluster_resolve(flags, TF_CONFIG)
 *   rf_server *server;
 *   rf_server_start(cluster, NULL, &server);
 *   if (!strcmp(rf_cluster_self(cluster)->job, "ps"))
 *       return rf_server_join(server);  // server.join(): until SHUTDOWN
 *
 *   rf_graph *g; ...                   // with tf.device(replica_device_setter(
 *   rf_graph_push_replica_device_setter(g, setter);   //   cluster=cluster)):
 *   rf_node *gs = rf_global_step(g);   // first, so it lands on ps 0
 *   ... x, y placeholders, the model, loss ...
 *   rf_minimize(g, &adagrad, loss, gs, &train_op);
 *   rf_device_fn_pop(g);
 *   rf_graph_initialize_variables(g);
 *
 *   rf_session_options so;
 *   rf_session_options_init(&so);
 *   so.train_op = train_op;
 *   rf_session *s;
 *   rf_session_create(server, g, ex, &so, &s);  // chief: create + init;
 *                                               // others: look up + wait
 *   int64_t step;
 *   rf_session_global_step(s, &step);  // a restarted or late worker may
 *   while (step < last_step) {         // find it done: StopAtStepHook
 *       rf_node *fetch[] = {loss, train_op};
 *       rf_tensor out[2];
 *       rf_session_run(s, feeds, values, 2, fetch, 2, out, &step);
 *   }
 *   rf_session_finish(s, 0);           // worker: announce done; chief: wait
 *                                      // for the others, pull every variable
 *   ... chief: evaluate the graph locally, export ...
 *   rf_session_shutdown_cluster(s);    // chief: every ps task stops
 *   rf_session_destroy(s);
 *   rf_server_stop(server);
 *
 * What a training run is (one step of async training; docs/DESIGN.md
 * section 4 has the protocol):
 *   1. every variable on a ps task is read with RDMA READs straight into its
 *      storage (registered memory), all posted at once, one batch per ps;
 *      an op that consumes a variable waits for that variable's read only;
 *   2. the forward and backward pass runs on this worker; as soon as
 *      backprop has produced a variable's gradient it is pushed by the
 *      session's push strategy (apply=ps: WRITE_WITH_IMM into the worker's
 *      inbox on the ps, which applies the optimizer; apply=worker: READ the
 *      record, apply here, WRITE it back, with use_locking under the
 *      record's CMP_AND_SWP lock) while backprop goes on;
 *   3. the pushes are waited for, then global_step is advanced by
 *      FETCH_AND_ADD on ps task 0; its new value is the run's step.
 * With sync_replicas (TensorFlow's SyncReplicasOptimizer) step 2 pushes
 * each gradient, tagged with this worker's local step (the global_step it
 * read), into the variable's accumulator on its ps, which drops stale
 * gradients and applies the mean of replicas_to_aggregate of them once;
 * step 3 waits until every shard applied this step's mean (READs of their
 * step words) and global_step was published past the local step (by
 * CMP_AND_SWP, exactly once in the cluster); that value is the run's step.
 * A run whose fetches do not include train_op only reads and computes
 * (nothing is pushed, global_step does not move).
 *
 * Errors are rf_status codes with rf_error_message() saying what failed and
 * where (the variable, the ps task); the library never exits. A session is
 * used by one thread at a time. */
#ifndef RDMAFLOW_SESSION_H
#define RDMAFLOW_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/cluster.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"
#include "rdmaflow/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- server (tf.train.Server) ------------------------------------------ */

typedef struct rf_server rf_server;

typedef struct rf_server_options {
    /* ps tasks: one span per apply=ps update of the first trace_updates
     * updates of each shard is added to this trace (category "ps", thread
     * 0); NULL: none. The caller writes and destroys it after
     * rf_server_stop. */
    rf_trace *trace;
    uint64_t trace_updates;
} rf_server_options;

/* Starts this task's server, for the task rf_cluster_self(cluster) names:
 * - every task binds the calling thread to the NUMA node nearest its
 *   cluster address (RF_BIND; threads created afterwards, the executor's
 *   and the fabric's, inherit it) and opens the fabric on that address
 *   (RF_FABRIC);
 * - a ps task also starts serving on its address (rf_ps_server_start): the
 *   chief will create its shards.
 * options may be NULL. The cluster must outlive the server. */
rf_status rf_server_start(const rf_cluster *cluster,
                          const rf_server_options *options, rf_server **out);
/* A ps task: blocks until the chief shut the cluster down (RF_OK) or the
 * server failed. RF_ERR_INVALID_ARG on a worker's server. */
rf_status rf_server_join(rf_server *server);
/* Stops serving and frees the server (every session on it must be
 * destroyed first). NULL is ignored. */
void rf_server_stop(rf_server *server);

rf_fabric *rf_server_fabric(const rf_server *server);
const rf_cluster *rf_server_cluster(const rf_server *server);
const rf_binding *rf_server_binding(const rf_server *server);
/* A ps task's listening port (0 on a worker). */
uint16_t rf_server_port(const rf_server *server);
/* A ps task's arena NUMA node and why (rf_ps_server_numa_node); -1 and ""
 * on a worker. */
int rf_server_numa_node(const rf_server *server, const char **why);

/* ---- session ------------------------------------------------------------ */

typedef struct rf_session rf_session;

typedef struct rf_session_options {
    /* The graph's train op (rf_minimize's). Its ApplyX nodes say which
     * variables are trained, with which optimizer and slots; running it
     * (fetching it) makes a run a training step. Required. */
    rf_node *train_op;
    /* The graph's global_step (NULL: the variable named "global_step"). It
     * must be placed on ps task 0, where the cluster's global_step word
     * is. */
    rf_node *global_step;
    rf_ps_apply_mode apply; /* RF_PS_APPLY_PS (default) or _WORKER */
    bool use_locking;       /* apply=worker: take each record's lock */
    /* Non-chief: how long to wait for the chief to create and initialise
     * the variables; 0: 120000 ms. */
    int init_timeout_ms;
    /* Passed to the ps client (0: its defaults). */
    int connect_timeout_ms;
    int op_timeout_ms;
    /* The chief: restore the newest checkpoint of this directory that
     * verifies (rdmaflow/checkpoint.h; a newer corrupt one is skipped and
     * named) instead of initialising, if there is one. NULL: initialise. */
    const char *checkpoint_dir;
    /* Synchronous replicas (TensorFlow 1.x's SyncReplicasOptimizer): every
     * step the gradients of replicas_to_aggregate workers (N; 0: every
     * training worker) are averaged on the ps and applied once; a gradient
     * computed from an older step is dropped as stale (counted: see
     * rf_session_sync_stats); each worker waits for the step to be
     * published (at most op_timeout_ms). total_num_replicas (M; 0: every
     * training worker) is the number of workers pushing, the training
     * workers of the cluster; M > N gives M - N backup workers, whose late
     * gradients are dropped and which the others never wait for. The
     * average is applied on the ps: apply must be RF_PS_APPLY_PS. Every
     * worker must give the same N and M (a shard created with others is
     * refused, naming both). */
    bool sync_replicas;
    int replicas_to_aggregate;
    int total_num_replicas;
} rf_session_options;

void rf_session_options_init(rf_session_options *o);

/* Creates the worker session of this task over g, whose variables
 * replica_device_setter placed (every variable on /job:ps must be trained
 * by train_op, be one of its optimizer slots or beta powers, or be
 * global_step; anything else is refused naming it), and executor ex (which
 * runs every plan of the session). Connects to every ps task (retrying
 * while they come up), points each remote variable's storage at one
 * registered block, then:
 * - the chief (rf_cluster_self(...)->is_chief) creates the shards and
 *   writes the variables' current (initialised) values into them;
 * - another worker looks the shards up (a shard whose shape, dtype or
 *   optimizer differs from this graph's is refused, naming both) and waits
 *   for the chief's initialisation, at most init_timeout_ms.
 * g and ex must outlive the session; g's variables must be initialised. */
rf_status rf_session_create(rf_server *server, rf_graph *g, rf_executor *ex,
                            const rf_session_options *options,
                            rf_session **out);
/* Waits for anything in flight, closes the ps connections and frees the
 * session. The graph's variables get buffers of their own back
 * (rf_variable_own_storage) holding their last values, so the graph stays
 * usable. NULL is ignored. */
void rf_session_destroy(rf_session *s);

/* One step (see the top): feeds[i] gets values[i]; fetched[j] receives the
 * value of fetches[j] (views into the plan's buffers, valid until the next
 * run with the same feeds and fetches). A plan is made for each distinct
 * (feeds, fetches) the first time they are run. *global_step (may be NULL)
 * gets global_step's value after a training run, and the last value this
 * session saw otherwise. On failure nothing of the step is outstanding
 * any more when it returns (every read and push was waited for). */
rf_status rf_session_run(rf_session *s, rf_node *const *feeds,
                         const rf_tensor *values, size_t num_feeds,
                         rf_node *const *fetches, size_t num_fetches,
                         rf_tensor *fetched, int64_t *global_step);

/* The chief: the checkpoint it restored when the session was created (NULL
 * if it initialised); *note (may be NULL) says which newer checkpoints were
 * skipped as corrupt, "" if none. */
const char *rf_session_restored_from(const rf_session *s, const char **note);

/* The chief: a checkpoint of the job now, as TensorFlow's Saver: every
 * shard's values, optimizer slots and the first variable's beta powers,
 * read with one-sided READs while the other workers go on training, and
 * global_step (read first), under the graph's names (dense/kernel,
 * dense/kernel/Adagrad, beta1_power, global_step), written to
 * dir/model.ckpt-<global_step>.safetensors with the state file updated and
 * checkpoints beyond max_to_keep (0: 5) deleted (rf_ckpt_dir_save). The
 * path written goes to path_out (may be NULL). A checkpoint restores into
 * any number of ps tasks: shards are matched by name. */
rf_status rf_session_save(rf_session *s, const char *dir, int max_to_keep,
                          char *path_out, size_t len);

/* Reads the cluster's global_step (ps task 0). */
rf_status rf_session_global_step(rf_session *s, int64_t *value);

/* Sync replicas: what this session's pushes became, and the shards'. */
typedef struct rf_session_sync_stats {
    int replicas_to_aggregate, total_num_replicas;
    /* the step this worker's next gradients are tagged with */
    int64_t local_step;
    uint64_t accepted;  /* this worker's gradients taken by an accumulator */
    uint64_t stale;     /* this worker's gradients dropped as stale */
    uint64_t published; /* steps whose global_step this worker advanced */
    /* every shard's stale counter summed (READ from the ps tasks now):
     * the gradients of every worker dropped as stale */
    uint64_t stale_on_ps;
} rf_session_sync_stats;
/* RF_ERR_INVALID_ARG unless the session has sync_replicas. */
rf_status rf_session_sync_stats_get(rf_session *s, rf_session_sync_stats *out);

/* Traces the following runs (executor ops and the session's fabric
 * operations, category "fabric", args bytes and ps_task) into t; NULL
 * stops. The apply=worker pusher thread is named in it. */
void rf_session_set_trace(rf_session *s, rf_trace *t);

/* The end of this worker's job. A non-chief worker announces that it has
 * finished (the chief waits for that before shutting the cluster down). The
 * chief waits at most timeout_ms (0: 30 minutes) for every other training
 * worker's announcement (RF_ERR_TIMEOUT says how many came; with sync
 * replicas and backup workers only replicas_to_aggregate - 1 others are
 * required, the rest are waited for at most op_timeout_ms more, so a
 * stopped backup worker does not hold the job), then reads
 * every variable of the graph from the ps tasks, optimizer slots, Adam's
 * beta powers (the first variable's: see docs/DESIGN.md, Departures) and
 * global_step included, so the graph can be evaluated and exported
 * locally. Call once, after the last run. */
rf_status rf_session_finish(rf_session *s, int timeout_ms);

/* Chief: tells every ps task to stop serving (their rf_server_join
 * returns RF_OK). */
rf_status rf_session_shutdown_cluster(rf_session *s);

/* ---- what a step does (--explain, traces) ------------------------------- */

/* A variable of the session, in creation order: global_step first, then
 * the trained variables in the order of their ApplyX nodes. */
typedef struct rf_session_var_desc {
    const char *name;
    const char *device; /* as replica_device_setter placed it */
    size_t ps_task;
    rf_dtype dtype;
    rf_shape shape;
    size_t bytes;        /* the values */
    size_t record_bytes; /* the shard record on the ps; 0 for global_step */
    const char *const *slots; /* optimizer slot variables' names */
    unsigned num_slots;
    const char *where; /* global_step: "ps 0 globals block, word 0"; else "" */
} rf_session_var_desc;

typedef enum rf_step_op_kind {
    RF_STEP_READ = 0,      /* READ of a variable, all posted at once */
    RF_STEP_COMPUTE,       /* forward + backward on this worker */
    RF_STEP_PUSH,          /* a gradient pushed by the push strategy */
    RF_STEP_WAIT,          /* wait for every push to be applied (sync:
                              taken or dropped by its accumulator) */
    RF_STEP_FETCH_AND_ADD, /* global_step += 1 on ps 0 */
    RF_STEP_WAIT_STEP,     /* sync: wait until every shard applied this
                              step (READ of their step words) and
                              global_step passed the local step (published
                              by CMP_AND_SWP, once in the cluster) */
} rf_step_op_kind;

/* One operation of a training step, in the order the step issues them
 * (pushes in the order the plan produces the gradients). name is also the
 * name of its span in a trace ("READ dense/kernel", "WRITE_WITH_IMM
 * dense/kernel", "APPLY_WORKER dense/kernel", "wait apply acks",
 * "FETCH_AND_ADD global_step"; sync: "wait accumulator acks",
 * "WAIT_GLOBAL_STEP global_step"). */
typedef struct rf_step_op {
    rf_step_op_kind kind;
    const char *op;   /* "READ", "COMPUTE", "WRITE_WITH_IMM", "APPLY_WORKER",
                         "WAIT_ACKS", "WAIT_APPLIES", "FETCH_AND_ADD",
                         "WAIT_GLOBAL_STEP" */
    const char *name; /* span name */
    const char *var;  /* the variable, NULL for COMPUTE and WAIT */
    size_t ps_task;
    size_t bytes;
    size_t num_ops; /* COMPUTE: ops in the plan */
    bool locking;   /* an APPLY_WORKER push under use_locking */
} rf_step_op;

typedef struct rf_session_desc {
    const char *apply; /* "ps", "worker" or "sync" (the push strategy) */
    bool use_locking;
    /* sync: replicas_to_aggregate and total_num_replicas; 0 otherwise */
    int replicas_to_aggregate, total_num_replicas;
    int compute_threads;
    const rf_session_var_desc *vars;
    size_t num_vars;
    const rf_step_op *step; /* the training step */
    size_t num_step_ops;
} rf_session_desc;

/* The description of the training step of this session's train plan for
 * (feeds, fetches), made (with that plan) if it was not yet run. It is the
 * same list the session executes and names its trace spans from. Valid
 * until the session is destroyed. */
rf_status rf_session_describe(rf_session *s, rf_node *const *feeds,
                              size_t num_feeds, rf_node *const *fetches,
                              size_t num_fetches, const rf_session_desc **out);

#ifdef __cplusplus
}
#endif
#endif
