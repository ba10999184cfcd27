/* rdmaflow/session.h: TensorFlow 1.x's distributed runtime in C: the
 * worker's session over a graph built under replica_device_setter (what
 * MonitoredTrainingSession runs the classic trainer with), and what a step
 * does. The server every task starts is rdmaflow/server.h, the monitored
 * session and its hooks rdmaflow/monitored_session.h, metrics files
 * rdmaflow/metrics.h; this header includes all three, so a program that
 * includes it alone has the whole runtime. A program is run once per
 * task:
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
#include "rdmaflow/server.h"
#include "rdmaflow/status.h"
#include "rdmaflow/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- session ------------------------------------------------------------ */

typedef struct rf_session rf_session;

/* How a step's lookups fetch an embedding table's rows (issue 23 item 4;
 * docs/DESIGN.md "Lookups that pick the cheaper way"): one-sided row
 * READs by the worker (rf_ps_read_rows: no ps CPU, one work request per
 * row), or the ps-side gather (rf_ps_gather_rows: TensorFlow's Gather
 * colocated with the shard, one request per table and step, the ps CPU
 * copies the rows). Either way every row is checked whole by its CRC32C
 * (the worker's, or the ps's copy) and the rows are identical. auto (the
 * default) decides per table shard and per lookup from a cost model
 * measured once at session creation (rf_session_lookup_info). */
typedef enum rf_lookup_way {
    RF_LOOKUP_AUTO = 0,
    RF_LOOKUP_ROWS,
    RF_LOOKUP_GATHER,
} rf_lookup_way;

/* "auto", "rows" or "gather" (NULL for another value). */
RF_API const char *rf_lookup_way_name(rf_lookup_way way);
/* The way named (exactly "auto", "rows" or "gather"): RF_OK, or
 * RF_ERR_INVALID_ARG naming the text and the accepted names. */
RF_API rf_status rf_lookup_way_parse(const char *text, rf_lookup_way *out);

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
    /* Embedding tables: how lookups fetch their rows (rf-trainer's
     * --embedding_lookup): RF_LOOKUP_ROWS and _GATHER force a way for
     * every table; RF_LOOKUP_AUTO (the default) probes each table
     * shard's ps once when the session is created and then takes, for
     * each lookup, the way the cost model says is cheaper for that
     * step's unique rows of the shard (rf_session_lookup_info). */
    rf_lookup_way embedding_lookup;
    /* Stale synchronous parallel (async training only; refused with
     * sync_replicas): a worker more than staleness steps ahead of the
     * slowest training worker waits before its next training step; -1
     * (the default): off. */
    int staleness;
    /* How long one such wait may last (0: 600000 ms); RF_ERR_TIMEOUT then
     * names the slowest worker, its clock and this worker's. */
    int staleness_wait_ms;
    /* Sync replicas: how long a step waits while fewer than
     * replicas_to_aggregate training workers are members of ps task 0 (a
     * worker's bit clears once its connection has been closed for the
     * ps's member_timeout_ms); then the run fails for good
     * (rf_session_sync_stuck). 0: op_timeout_ms; the monitored session
     * gives its max_wait_secs. */
    int sync_max_wait_ms;
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
/* Sync replicas: true once a run failed (RF_ERR_UNAVAILABLE) because
 * fewer than replicas_to_aggregate training workers were connected to ps
 * task 0 for sync_max_wait_ms while a step waited: no step can complete, a
 * recovery cannot help (the monitored session does not recover from it).
 * False for any other session. */
RF_API bool rf_session_sync_stuck(const rf_session *s);

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
    /* of table_rows_read: the rows the ps-side gather fetched (the rest
     * were READ one-sided), and the lookups of a table shard by each way
     * (a lookup of a partitioned table is one per part it touched). The
     * ps checks a gathered row's CRC itself (rf_ps_server_counters), so
     * the torn and busy counts above are the row READs' only. */
    uint64_t table_rows_gathered;
    uint64_t table_lookups_read, table_lookups_gathered;
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
/* bytes_read and bytes_pushed of rf_session_counters split by the ps task
 * at the other end (global_step's FETCH_AND_ADD is ps 0's): fills
 * out[0 .. min(num_ps, max)) and returns the cluster's number of ps tasks
 * (0 for an offline session). The sums over the ps tasks are the
 * counters' totals. */
typedef struct rf_session_ps_bytes {
    uint64_t bytes_read, bytes_pushed;
} rf_session_ps_bytes;
RF_API size_t rf_session_ps_bytes_get(const rf_session *s,
                                      rf_session_ps_bytes *out, size_t max);

/* How the lookups of one embedding table shard fetch its rows, and why
 * (the session's creation logs `reason` once per shard, at info level).
 * The cost model (auto): a lookup of n distinct rows of the shard costs
 * about rows_fixed_us + rows_per_row_us * n by row READs and
 * gather_fixed_us + gather_per_row_us * n by the ps-side gather, each
 * line fitted through two probes (1 row and probe_rows rows, the median
 * of several timed lookups of each) of the shard's own ps when the
 * session was created; a lookup takes the cheaper line at its n (rows
 * on a tie). Two lines cross at most once: below switch_rows rows the
 * way is `below`, from switch_rows on `above` (a forced way, or lines
 * that do not cross in [1, max_push_rows]: both the same way,
 * switch_rows 0). Forced ways measure nothing (the costs are 0). */
typedef struct rf_session_lookup_info {
    const char *table; /* the shard's variable ("emb/part_0") */
    size_t ps_task;
    rf_lookup_way configured;   /* the option as given */
    rf_lookup_way below, above; /* ROWS or GATHER */
    uint64_t switch_rows;
    uint32_t probe_rows;
    double rows_fixed_us, rows_per_row_us;
    double gather_fixed_us, gather_per_row_us;
    char reason[320];
    /* what its lookups did so far (as the session counters count) */
    uint64_t lookups_read, lookups_gathered;
    uint64_t rows_read, rows_gathered;
} rf_session_lookup_info;
/* The number of table shards; fills out[0 .. min(that, max)) in the
 * order of rf_session_describe's variables. An offline session has not
 * measured anything: configured auto shows below = above = ROWS and
 * the reason says so. */
RF_API size_t rf_session_lookup_info_get(const rf_session *s,
                                         rf_session_lookup_info *out,
                                         size_t max);

/* Traces the following runs (executor ops and the session's fabric
 * operations, category "fabric", args bytes and ps_task) into t; NULL
 * stops. The apply=worker pusher thread is named in it. */
RF_API void rf_session_set_trace(rf_session *s, rf_trace *t);

/* The end of this worker's job. A non-chief worker announces that it has
 * finished (the chief waits for that before shutting the cluster down). The
 * chief waits at most timeout_ms (0: 30 minutes) for every other training
 * worker's announcement (RF_ERR_TIMEOUT says how many came; with sync
 * replicas and backup workers only replicas_to_aggregate - 1 others are
 * required, the rest are not waited for once their connections are gone
 * (no longer members of ps task 0), else at most op_timeout_ms more, so
 * neither a dead nor a stopped backup worker holds the job), then reads
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
 *   single look) for every other training worker's announcement (in an
 *   elastic job, rf_server_elastic, for every other member of ps task 0's
 *   members bitmap, read again at each look: a worker that left or has
 *   been gone past the ps's member_timeout_ms is not waited for; sync
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

/* An elastic worker (not the chief) leaves the job instead of finishing
 * it: ps task 0 drops it from the members at once (LEAVE, rdmaflow/ps.h),
 * so the chief's end does not wait for it. Call after its last step, then
 * destroy the session without rf_session_finish. */
RF_API rf_status rf_session_leave(rf_session *s);
/* The shard ledger of ps task 0 (rf_ps_shard_next, rdmaflow/ps.h): done
 * (NULL: nothing to report) records this worker's progress, *next is the
 * batch it trains now. Elastic async workers call it after each batch. */
RF_API rf_status rf_session_shard_next(rf_session *s,
                                       const rf_ps_shard_geometry *geom,
                                       const rf_ps_shard_grant *done,
                                       rf_ps_shard_grant *next, bool *stale);

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
     * lookup's parts taking row READs and one rf_ps_gather_rows for those
     * taking the ps-side gather (rf_session_lookup_info): the trace's
     * span is "READ_ROWS <lookup node>", its args the rows of each way) */
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
     * wire_bytes are then the per-step bound (max_push_rows rows, for a
     * READ by the costlier of the table's ways: row records, or rows, their
     * indices, the request and the ack of a gather; a push those rows and
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

#ifdef __cplusplus
}
#endif

/* The rest of the runtime, which this header held before it was split. */
#include "rdmaflow/metrics.h"
#include "rdmaflow/monitored_session.h"

#endif
