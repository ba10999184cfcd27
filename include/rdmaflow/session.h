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
 * With staleness K >= 0 (stale synchronous parallel, async only) a
 * training step first READs every training worker's clock word on ps 0
 * and waits while this worker's clock is more than K ahead of the
 * slowest, and after step 3 adds 1 to its own clock by FETCH_AND_ADD.
 * A run whose fetches do not include train_op only reads and computes
 * (nothing is pushed, global_step does not move).
 *
 * Errors are rf_status codes with rf_error_message() saying what failed and
 * where (the variable, the ps task); the library never exits. A session is
 * used by one thread at a time. */
#ifndef RDMAFLOW_SESSION_H
#define RDMAFLOW_SESSION_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
    /* The cluster secret (rdmaflow/secret.h; --cluster_secret_file): NULL
     * or "" means RF_CLUSTER_SECRET_FILE, and neither means an
     * unauthenticated cluster. Loaded once by rf_server_start; a ps task
     * then authenticates every connection, a worker's sessions
     * authenticate to every ps. */
    const char *cluster_secret_file;
    /* Without a secret (neither of the above), rf_server_start logs one
     * warning line per process saying that the cluster is unauthenticated
     * and what that exposes. require_secret (--require_secret), or
     * RF_REQUIRE_SECRET=1, makes it fail with RF_ERR_AUTH instead. */
    bool require_secret;
    /* The local address a ps task listens on (--bind_addr): NULL or ""
     * means RF_BIND_ADDR, and neither the task's cluster host. "0.0.0.0"
     * or "::" listens on every address, e.g. in a Kubernetes pod whose
     * own name resolves to a service address rather than its interface;
     * the cluster address still chooses the fabric's RDMA device and the
     * NUMA node. A worker listens on nothing: it is accepted (the same
     * command line serves every task) and changes nothing there. */
    const char *bind_addr;
    /* How long rf_server_start retries the cluster's host names that do
     * not resolve yet (this task's; a worker's ps tasks' too), as a
     * Kubernetes pod's peers at start (--max_wait_secs); 0: one try. The
     * error at the end names the host and its task. */
    int resolve_wait_secs;
} rf_server_options;

/* Starts this task's server, for the task rf_cluster_self(cluster) names:
 * - every task first resolves the host names it needs (resolve_wait_secs);
 * - every task binds the calling thread to the NUMA node nearest its
 *   cluster address (RF_BIND; threads created afterwards, the executor's
 *   and the fabric's, inherit it) and opens the fabric on that address
 *   (RF_FABRIC);
 * - a ps task also starts serving on its address, or on bind_addr
 *   (rf_ps_server_start): the
 *   chief will create its shards. Its roles are bound to the cluster: only
 *   the chief's worker id may claim the chief's role, only training
 *   workers' ids may connect, and with a cluster secret every connection
 *   must authenticate.
 * options may be NULL. The cluster must outlive the server. */
RF_API rf_status rf_server_start(const rf_cluster *cluster,
                                 const rf_server_options *options,
                                 rf_server **out);
/* A ps task: blocks until the chief shut the cluster down (RF_OK) or the
 * server failed. RF_ERR_INVALID_ARG on a worker's server. */
RF_API rf_status rf_server_join(rf_server *server);
/* Stops serving and frees the server (every session on it must be
 * destroyed first). NULL is ignored. */
RF_API void rf_server_stop(rf_server *server);

/* A ps task's refused and dropped connections so far (all zero on a
 * worker's server). */
RF_API void rf_server_ps_counters(rf_server *server,
                                  rf_ps_server_counters *out);
RF_API rf_fabric *rf_server_fabric(const rf_server *server);
RF_API const rf_cluster *rf_server_cluster(const rf_server *server);
RF_API const rf_binding *rf_server_binding(const rf_server *server);
/* A ps task's listening port (0 on a worker). */
RF_API uint16_t rf_server_port(const rf_server *server);
/* A ps task's arena NUMA node and why (rf_ps_server_numa_node); -1 and ""
 * on a worker. */
RF_API int rf_server_numa_node(const rf_server *server, const char **why);

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
    /* Embedding tables: the most ids one step's lookup of a table shard
     * may have when the ids have no static shape (it sizes the lookup's
     * gathered rows and the table's sparse pushes); 0: such a lookup is
     * refused. Ignored where the shape is known. */
    int64_t max_lookup_ids;
    /* Stale synchronous parallel (async training only; refused with
     * sync_replicas): a worker more than staleness steps ahead of the
     * slowest training worker waits before its next training step; -1
     * (the default): off. */
    int staleness;
    /* How long one such wait may last (0: 600000 ms); RF_ERR_TIMEOUT then
     * names the slowest worker, its clock and this worker's. */
    int staleness_wait_ms;
} rf_session_options;

RF_API void rf_session_options_init(rf_session_options *o);

/* Creates the worker session of this task over g, whose variables
 * replica_device_setter placed (every variable on /job:ps must be trained
 * by train_op, be one of its optimizer slots or beta powers, or be
 * global_step; anything else is refused naming it), and executor ex (which
 * runs every plan of the session). Connects to every ps task (retrying
 * while they come up), points each remote variable's storage at one
 * registered block, then:
 * - the chief (rf_cluster_self(...)->is_chief) creates the shards and
 *   writes the variables' current (initialised) values into them; an
 *   embedding table (a ps variable read only by lookups and trained by a
 *   sparse apply) that g left uninitialised is initialised on its shards
 *   instead, from rf_variable_initialize_rows in bounded chunks, never
 *   touching its graph storage (the same values rf_variable_initialize
 *   would give), so the chief need not hold it; checkpoints save and
 *   restore tables in pieces too, and only rf_session_finish's final pull
 *   reads a whole table into the graph;
 * - another worker looks the shards up (a shard whose shape, dtype or
 *   optimizer differs from this graph's is refused, naming both) and waits
 *   for the chief's initialisation, at most init_timeout_ms.
 * g and ex must outlive the session; g's variables must be initialised,
 * but for such tables (and their optimizer slots). */
RF_API rf_status rf_session_create(rf_server *server, rf_graph *g,
                                   rf_executor *ex,
                                   const rf_session_options *options,
                                   rf_session **out);
/* One attempt at creating a session, for a caller that waits for the
 * cluster to become ready (the monitored session's readiness wait). */
typedef struct rf_session_readiness {
    /* The bound of each wait of this attempt (the ps connections, the
     * shards' lookup, the init flags); 0: the options' and the defaults. */
    int attempt_ms;
    /* The chief re-creating a lost session in the same process: if every
     * shard is still initialised (no ps task restarted), adopt them as
     * they are instead of rolling the job back to the newest checkpoint. */
    bool prefer_adopt;
} rf_session_readiness;

/* rf_session_create with readiness (NULL: the defaults, which is
 * rf_session_create). On failure waiting_for (may be NULL; 64 bytes are
 * enough) gets the task the attempt was waiting for ("/job:ps/task:1"),
 * or "" if it failed for another reason. */
RF_API rf_status rf_session_create_attempt(
    rf_server *server, rf_graph *g, rf_executor *ex,
    const rf_session_options *options, const rf_session_readiness *readiness,
    rf_session **out, char *waiting_for, size_t len);

/* Waits for anything in flight, closes the ps connections and frees the
 * session. The graph's variables get buffers of their own back
 * (rf_variable_own_storage) holding their last values, so the graph stays
 * usable. NULL is ignored. */
RF_API void rf_session_destroy(rf_session *s);

/* One step (see the top): feeds[i] gets values[i]; fetched[j] receives the
 * value of fetches[j] (views into the plan's buffers, valid until the next
 * run with the same feeds and fetches). A plan is made for each distinct
 * (feeds, fetches) the first time they are run. *global_step (may be NULL)
 * gets global_step's value after a training run, and the last value this
 * session saw otherwise. On failure nothing of the step is outstanding
 * any more when it returns (every read and push was waited for). */
RF_API rf_status rf_session_run(rf_session *s, rf_node *const *feeds,
                                const rf_tensor *values, size_t num_feeds,
                                rf_node *const *fetches, size_t num_fetches,
                                rf_tensor *fetched, int64_t *global_step);

/* The chief: the checkpoint it restored when the session was created (NULL
 * if it initialised); *note (may be NULL) says which newer checkpoints were
 * skipped as corrupt, "" if none. */
RF_API const char *rf_session_restored_from(const rf_session *s,
                                            const char **note);

/* How a session got its variables, and its checkpoints so far. */
typedef struct rf_session_checkpoint_info {
    /* The chief: the checkpoint restored at creation (NULL if none) and
     * the newer ones skipped as corrupt ("" if none). */
    const char *restored_from;
    const char *restore_note;
    int64_t restored_step; /* the restored checkpoint's global_step, or -1 */
    int64_t saved_step;    /* the last rf_session_save's global_step, or -1 */
    /* The chief: "restored", "adopted" (every shard was initialised
     * already: a restarted chief without a checkpoint) or "initialised";
     * NULL on another worker. */
    const char *init_how;
} rf_session_checkpoint_info;
RF_API void rf_session_checkpoint_info_get(const rf_session *s,
                                           rf_session_checkpoint_info *out);

/* The chief: a checkpoint of the job now, as TensorFlow's Saver: every
 * shard's values, optimizer slots and the first variable's beta powers,
 * read with one-sided READs while the other workers go on training, and
 * global_step (read first), under the graph's names (dense/kernel,
 * dense/kernel/Adagrad, beta1_power, global_step), written to
 * dir/model.ckpt-<global_step>.safetensors with the state file updated and
 * checkpoints beyond max_to_keep (0: 5) deleted (rf_ckpt_dir_save). The
 * path written goes to path_out (may be NULL). A checkpoint restores into
 * any number of ps tasks: shards are matched by name. */
RF_API rf_status rf_session_save(rf_session *s, const char *dir,
                                 int max_to_keep, char *path_out, size_t len);

/* Reads the cluster's global_step (ps task 0). */
RF_API rf_status rf_session_global_step(rf_session *s, int64_t *value);

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
RF_API rf_status rf_session_sync_stats_get(rf_session *s,
                                           rf_session_sync_stats *out);

/* What this session's runs moved, counted from its creation (a recovery
 * makes a new session, counting from 0 again): the payload bytes of the
 * operations each successful run issued, as its step description gives
 * them (rf_step_op.wire_bytes). bytes_read: the variables' READs (every
 * run reads every variable it needs); bytes_pushed: everything else of a
 * training run, the push strategy's traffic in both directions (apply=ps:
 * gradients and acks; apply=worker: records read, applied and written
 * back; sync: tagged gradients, acks and step words) and global_step's
 * FETCH_AND_ADD or wait. */
typedef struct rf_session_counters {
    uint64_t runs, train_runs;
    uint64_t bytes_read, bytes_pushed;
    /* embedding table shards: the distinct rows the lookups READ and the
     * rows pushed (after dedup), and their bytes (a pushed row: its values
     * and its 8-byte index); they vary per step, within the bounds
     * rf_session_describe gives */
    uint64_t table_rows_read, table_bytes_read;
    uint64_t table_rows_pushed, table_bytes_pushed;
    /* what this session's row reads saw (its ps client's
     * rf_ps_row_counters: lookups, apply=worker read-modify-writes,
     * checkpoint reads, restores): row records found torn (their CRC32C
     * not that of their version and row) or owned by a writer (odd
     * version), each read again; and rows of apply=worker pushes and row
     * writes that lost their CMP_AND_SWP to another writer and went round
     * again. A torn row is never used. */
    uint64_t table_rows_torn, table_rows_busy, table_row_conflicts;
    /* stale synchronous parallel (staleness >= 0): training steps that
     * waited for the slowest worker, and the time spent waiting */
    uint64_t ssp_waits;
    uint64_t ssp_wait_ns;
    /* this worker's clock minus the slowest other training worker's
     * that has not finished, as the last training step's READ of the
     * clocks saw it, after any wait; 0 when this worker is the slowest,
     * alone, or SSP is off */
    int64_t ssp_lead;
} rf_session_counters;
RF_API void rf_session_counters_get(const rf_session *s,
                                    rf_session_counters *out);

/* Traces the following runs (executor ops and the session's fabric
 * operations, category "fabric", args bytes and ps_task) into t; NULL
 * stops. The apply=worker pusher thread is named in it. */
RF_API void rf_session_set_trace(rf_session *s, rf_trace *t);

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
 * locally. With staleness >= 0 either first marks this worker's clock
 * word finished (+2^62), so no worker waits for it any more. Call once,
 * after the last run. */
RF_API rf_status rf_session_finish(rf_session *s, int timeout_ms);

/* rf_session_finish in its steps, for a caller that recovers between
 * them (the monitored session's close):
 * - rf_session_finish_clock: with staleness >= 0, marks this worker's
 *   clock word finished, once; nothing otherwise;
 * - rf_session_announce_done: a non-chief announces that it finished;
 * - rf_session_wait_workers: the chief waits at most timeout_ms (<= 0: a
 *   single look) for every other training worker's announcement (sync
 *   replicas' backup workers as rf_session_finish says). RF_ERR_TIMEOUT
 *   names the tasks that did not ("/job:worker/task:1"); missing (may be
 *   NULL) gets the same comma-separated list ("" when all finished), and
 *   bits (may be NULL; RF_PS_DONE_WORDS words) the last workers-done
 *   bitmap read, after RF_OK and RF_ERR_TIMEOUT;
 * - rf_session_pull_all: reads every variable, optimizer slots, beta
 *   powers and global_step included, into the graph. */
RF_API rf_status rf_session_finish_clock(rf_session *s);
RF_API rf_status rf_session_announce_done(rf_session *s);
RF_API rf_status rf_session_wait_workers(rf_session *s, int timeout_ms,
                                         char *missing, size_t len,
                                         uint64_t *bits);
RF_API rf_status rf_session_pull_all(rf_session *s);

/* The workers-done bitmap on ps task 0 (rdmaflow/ps.h,
 * rf_ps_workers_done_read and _merge): read it into bits, or OR bits into
 * it (the chief gives back what a restarted ps task 0 forgot). */
RF_API rf_status rf_session_workers_done_read(rf_session *s,
                                              uint64_t bits[RF_PS_DONE_WORDS]);
RF_API rf_status rf_session_workers_done_merge(
    rf_session *s, const uint64_t bits[RF_PS_DONE_WORDS]);

/* The last global_step this session saw (no read: the value of its last
 * run, rf_session_global_step or rf_session_pull_all). */
RF_API int64_t rf_session_last_global_step(const rf_session *s);

/* Chief: tells every ps task to stop serving (their rf_server_join
 * returns RF_OK). */
RF_API rf_status rf_session_shutdown_cluster(rf_session *s);

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
    /* An embedding table shard (trained by a sparse apply, read only by
     * lookups; max_push_rows 0 for a dense shard): its rows, the bytes of
     * one row, and the most rows one push carries. */
    size_t rows, row_bytes;
    uint32_t max_push_rows;
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
    RF_STEP_CLOCKS_READ,   /* stale synchronous parallel, first: one READ
                              of every training worker's clock word on ps
                              0, re-READ (bounded backoff) while this
                              worker is more than staleness ahead of the
                              slowest */
    RF_STEP_CLOCK_ADD,     /* stale synchronous parallel, last: this
                              worker's clock word += 1 (FETCH_AND_ADD) */
} rf_step_op_kind;

/* One operation of a training step, in the order the step issues them
 * (pushes in the order the plan produces the gradients). name is also the
 * name of its span in a trace ("READ dense/kernel", "WRITE_WITH_IMM
 * dense/kernel", "APPLY_WORKER dense/kernel", "wait apply acks",
 * "FETCH_AND_ADD global_step"; sync: "wait accumulator acks",
 * "WAIT_GLOBAL_STEP global_step"). */
typedef struct rf_step_op {
    rf_step_op_kind kind;
    /* an embedding table shard's READ is "READ_ROWS" (its rows are read
     * by each lookup just before it runs, one rf_ps_read_rows for all the
     * lookup's parts: the trace's span is "READ_ROWS <lookup node>") */
    const char *op;   /* "READ", "COMPUTE", "WRITE_WITH_IMM", "APPLY_WORKER",
                         "WAIT_ACKS", "WAIT_APPLIES", "FETCH_AND_ADD",
                         "WAIT_GLOBAL_STEP"; SSP: "READ_CLOCKS" (span "READ
                         ssp_clocks"), "FETCH_AND_ADD" (span "FETCH_AND_ADD
                         ssp_clock") */
    const char *name; /* span name */
    const char *var;  /* the variable, NULL for COMPUTE and WAIT */
    size_t ps_task;
    size_t bytes;
    /* payload bytes the operation moves between this worker and the ps,
     * both directions: a READ its values; an apply=ps push the gradient
     * and the 8-byte ack (sync: and the 8-byte step tag); an apply=worker
     * push the record's values, slots and beta powers read and written
     * back plus its version word (and lock word); FETCH_AND_ADD 8;
     * READ_CLOCKS 8 per training worker (once: the re-READs of a wait are
     * not counted).
     * An embedding table shard's READ and push vary per step: bytes and
     * wire_bytes are then the per-step bound (max_push_rows rows and
     * their indices; an apply=worker push READs and WRITEs back the rows
     * of values and slots as row records, and a CMP_AND_SWP per row);
     * the session counters count what moved (bound is then true). */
    size_t wire_bytes;
    bool bound;
    size_t num_ops; /* COMPUTE: ops in the plan */
    bool locking;   /* an APPLY_WORKER push under use_locking */
} rf_step_op;

typedef struct rf_session_desc {
    const char *apply; /* "ps", "worker" or "sync" (the push strategy) */
    bool use_locking;
    /* sync: replicas_to_aggregate and total_num_replicas; 0 otherwise */
    int replicas_to_aggregate, total_num_replicas;
    /* stale synchronous parallel: the bound, -1 when off */
    int staleness;
    int compute_threads;
    const rf_session_var_desc *vars;
    size_t num_vars;
    const rf_step_op *step; /* the training step */
    size_t num_step_ops;
    /* per ps task: the fabric provider carrying this task's connection to
     * it (rf_ps_client_provider: what RF_FABRIC=auto chose), "" if none */
    const char *const *ps_providers;
    size_t num_ps;
} rf_session_desc;

/* The description of the training step of this session's train plan for
 * (feeds, fetches), made (with that plan) if it was not yet run. It is the
 * same list the session executes and names its trace spans from. Valid
 * until the session is destroyed. */
RF_API rf_status rf_session_describe(rf_session *s, rf_node *const *feeds,
                                     size_t num_feeds, rf_node *const *fetches,
                                     size_t num_fetches,
                                     const rf_session_desc **out);

/* A session that never connects (--explain_only): what task `as` (a chief
 * or worker task of cluster) would do over g, placed by
 * replica_device_setter, with these options. The shards' sizes are those
 * the ps tasks will make (rf_ps_shard_spec_info), so its description is
 * the one the live session gives, with every ps_providers entry "" (no
 * connection was made). Only rf_session_describe, rf_session_set_trace and
 * rf_session_destroy may be used on it; run, global_step, finish, save,
 * shutdown_cluster and sync_stats_get return RF_ERR_INVALID_ARG. The
 * cluster and the task must outlive the session. */
RF_API rf_status rf_session_create_offline(const rf_cluster *cluster,
                                           const rf_cluster_task *as,
                                           rf_graph *g, rf_executor *ex,
                                           const rf_session_options *options,
                                           rf_session **out);

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
 * Hooks (SessionRunHook): begin once, after_create_session after every
 * creation, before_run / after_run around every run (a hook may ask for
 * extra nodes to be fetched in before_run and gets their values in
 * after_run), end at close. Chief-only hooks run only on the chief; the
 * session itself adds, on the chief, StepCounter (log_step_count_steps) and
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
 * (NULL: stdout). */
RF_API rf_status rf_step_counter_hook_create(int64_t every_n_steps,
                                             int64_t examples_per_step,
                                             FILE *out, rf_hook **out_hook);
/* CheckpointSaverHook (the chief): saves into dir (rf_session_save, keeping
 * max_to_keep, 0: 5) after the session is created (unless it has just
 * restored a checkpoint: the next save is counted from that checkpoint's
 * step, though other workers may have moved on since), every save_steps global
 * steps if save_steps > 0, else every save_secs seconds if save_secs > 0,
 * and at the end. One line per save to out (NULL: stdout). */
RF_API rf_status rf_checkpoint_saver_hook_create(const char *dir,
                                                 double save_secs,
                                                 int64_t save_steps,
                                                 int max_to_keep, FILE *out,
                                                 rf_hook **out_hook);

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
typedef struct rf_metrics_writer rf_metrics_writer;
RF_API rf_status rf_metrics_hook_create(rf_metrics_writer *w, rf_node *loss,
                                        rf_node *accuracy, rf_hook **out_hook);

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
    /* The chief's StepCounter every N steps (default 100; 0: none), with
     * examples/sec when examples_per_step (the batch size) > 0. */
    int64_t log_step_count_steps;
    int64_t examples_per_step;
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
 * then, as should_stop now says. */
RF_API rf_status rf_monitored_session_run(
    rf_monitored_session *ms, rf_node *const *feeds, const rf_tensor *values,
    size_t num_feeds, rf_node *const *fetches, size_t num_fetches,
    rf_tensor *fetched, int64_t *global_step, bool *job_ended);
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

/* ---- metrics files (--metrics_out) ------------------------------------ */

/* A metrics file: JSON lines (one JSON object per line, written with
 * json-c), one "step" line per logged step of this task and a "summary"
 * line at the end; the README's "Metrics files" has the schema. Each line
 * is formatted whole and written with one write(2) to a file opened with
 * O_APPEND, so a task killed at any instant leaves only whole lines.
 * Usable without a monitored session (a local training loop calls
 * rf_metrics_writer_step itself); with one, rf_metrics_hook_create feeds
 * it.
 *
 *   if (rf_metrics_check_output(path) != RF_OK) ... // before training
 *   rf_metrics_options mo;
 *   rf_metrics_options_init(&mo);
 *   mo.path = path; mo.task = "worker:1"; mo.examples_per_step = batch;
 *   rf_metrics_writer *w;
 *   rf_metrics_writer_open(&mo, &w);
 *   rf_metrics_writer_start(w, global_step);
 *   ... per step: rf_metrics_writer_step(w, &(rf_metrics_step){...});
 *   rf_metrics_writer_summary(w, test_accuracy);   // NAN: not measured
 *   rf_metrics_writer_close(w); */

typedef struct rf_metrics_options {
    const char *path; /* required */
    /* the task: "local", "worker:1", "chief:0", "ps:0" (required) */
    const char *task;
    /* a line at this task's first step, every every_n_steps of its steps
     * and its last (written by the summary); default 100 */
    int64_t every_n_steps;
    /* examples in one step of this task (its batch size) */
    int64_t examples_per_step;
    /* examples in one global step of the cluster (sync replicas: every
     * aggregated replica's batch); 0: examples_per_step */
    int64_t examples_per_global_step;
} rf_metrics_options;

RF_API void rf_metrics_options_init(rf_metrics_options *o);

/* Checks, writing nothing, that rf_metrics_writer_open could write path:
 * rf_file_check_output's checks (a directory, device, FIFO or socket, a
 * missing or unwritable directory are refused), and an existing non-empty
 * file must be a metrics file already (its first line a metrics record),
 * which is replaced; anything else is refused and never clobbered. A file
 * another writer has open (a writer holds an exclusive flock(2) on it for
 * its life) is refused too, so two tasks given one path cannot interleave.
 * RF_ERR_INVALID_ARG naming the path and why. */
RF_API rf_status rf_metrics_check_output(const char *path);

/* Checks path as above and creates (truncates) it. */
RF_API rf_status rf_metrics_writer_open(const rf_metrics_options *o,
                                        rf_metrics_writer **out);

/* Training starts now, at this global_step: the origin of elapsed, of the
 * rates and of the summary's counts (open sets it too). */
RF_API void rf_metrics_writer_start(rf_metrics_writer *w, int64_t global_step);

/* One training step of this task. */
typedef struct rf_metrics_step {
    int64_t global_step; /* after the step */
    double loss;         /* NAN: null */
    double accuracy;     /* NAN: not measured (the field is left out) */
    uint64_t bytes_read, bytes_pushed; /* this step's */
    /* stale synchronous parallel: ssp true writes "ssp_lead", this
     * worker's clock minus the slowest training worker's as the step saw
     * it (rf_session_counters.ssp_lead) */
    bool ssp;
    int64_t ssp_lead;
} rf_metrics_step;

/* Counts the step and writes its line if it is due. RF_ERR_IO naming the
 * file and errno on a failed write. */
RF_API rf_status rf_metrics_writer_step(rf_metrics_writer *w,
                                        const rf_metrics_step *step);

/* What the writer counted since start. Rates are over [start, last step]:
 * examples_per_sec this task's, global_step_per_sec the cluster's
 * global_step delta over that time (StepCounterHook's global_step/sec)
 * and cluster_examples_per_sec that times examples_per_global_step. */
typedef struct rf_metrics_totals {
    int64_t steps, examples;
    int64_t start_global_step, global_step;
    double seconds;
    double examples_per_sec, global_step_per_sec, cluster_examples_per_sec;
    double final_loss; /* NAN before a step */
    uint64_t bytes_read, bytes_pushed;
} rf_metrics_totals;
RF_API void rf_metrics_writer_totals(const rf_metrics_writer *w,
                                     rf_metrics_totals *out);

/* Writes the last step's line if it was not due, then the summary line
 * (test_accuracy NAN: not measured, left out), and fsyncs the file. Call
 * once. */
RF_API rf_status rf_metrics_writer_summary(rf_metrics_writer *w,
                                           double test_accuracy);
/* A click-through model's evaluation: its test AUC and log loss and the
 * hidden model's on the same examples (rdmaflow/ctr_data.h); NAN fields
 * are left out. */
typedef struct rf_metrics_eval {
    double auc, log_loss, hidden_auc, hidden_log_loss;
} rf_metrics_eval;
/* rf_metrics_writer_summary with eval's fields ("auc", "log_loss",
 * "hidden_auc", "hidden_log_loss") in the summary too; eval NULL is
 * rf_metrics_writer_summary. */
RF_API rf_status rf_metrics_writer_summary_eval(rf_metrics_writer *w,
                                                double test_accuracy,
                                                const rf_metrics_eval *eval);

/* Closes the file (without a summary if none was written) and frees w.
 * NULL is ignored. */
RF_API void rf_metrics_writer_close(rf_metrics_writer *w);

#ifdef __cplusplus
}
#endif
#endif
