/* session/session_internal.h: the distributed session's insides, shared by
 * the files of session/ only:
 *   server.c          rf_server: NUMA binding, fabric, the ps task's server
 *   session_map.c     the placed graph -> remote variables (shards)
 *   session_connect.c ps connections, registered storage, create or look
 *                     up, initialise or wait, the prepared reads; pulling
 *                     everything back at the end (finish)
 *   session_plan.c    one plan per (feeds, fetches) with its hooks and its
 *                     step description (the one list execution, --explain
 *                     and the trace read)
 *   session.c         create, one step, the global_step FETCH_AND_ADD,
 *                     describe
 *   session_finish.c  the end of the job: finish and its steps
 *   session_ckpt.c    checkpoints: the chief's save and restore
 *   session_rows.c    embedding tables: each step's rows of a lookup READ
 *                     (or gathered by the ps) into a gathered buffer the
 *                     lookup kernel reads, and a table's sparse gradient
 *                     staged and pushed
 *   session_lookup_way.c  each table's lookup way: forced, or (auto) the
 *                     cheaper by a cost model measured at creation
 *   session_ssp.c     stale synchronous parallel: the clock words' wait
 *                     before a training step and advance after it
 *   push_ps.c, push_worker.c, push_sync.c
 *                     the push strategies (apply=ps, apply=worker, sync
 *                     replicas), one ops table each: the step loop calls
 *                     the table, never tests the mode. */
#ifndef RF_SESSION_INTERNAL_H
#define RF_SESSION_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/session.h"

struct rf_server {
    const rf_cluster *cluster;
    const rf_cluster_task *self;
    rf_topology *topo;
    rf_binding binding;
    rf_fabric *fabric;
    rf_ps_server *ps; /* ps tasks only */
    rf_server_options opt;
    rf_cluster_secret *secret; /* NULL: the cluster is not authenticated */
};

typedef struct sess_push_xfer sess_push_xfer;

/* A trained variable that lives on a ps task. */
typedef struct sess_var {
    /* How its gradient goes under the session's push strategy: the
     * strategy's dense or rows transfer, chosen once by sess_map. */
    const sess_push_xfer *xfer;
    rf_node *var;        /* the worker graph's variable */
    rf_node *grad;       /* its gradient node (fetched, hooked) */
    rf_apply_info apply; /* the optimizer apply it stands for */
    size_t ps_task;
    const char *device; /* as replica_device_setter placed it (the node's) */
    rf_ps_var *shard;
    rf_ps_var_info info;
    float *grad_buf; /* registered staging pushes go from */
    bool in_block;   /* its graph storage is in the registered block */
    const char *slot_names[RF_OPTIM_MAX_SLOTS];
    char args[96];   /* its spans' args: "\"bytes\":N,\"ps_task\":P" */
    uint64_t t_post; /* when this step's read was posted (trace) */
    atomic_int read_traced;
    size_t read_ix; /* a dense shard: its transfer in s->reads */
    /* An embedding table shard (trained by a sparse apply, read only by
     * lookups): the worker holds none of it. Per step the lookups READ the
     * batch's rows (session_rows.c) and the gradient is pushed as at most
     * max_push_rows rows: their indices in push_rows and the rows in
     * grad_buf (both registered); dedup_scratch for rf_optim_dedup. */
    bool table;
    uint32_t max_push_rows;
    size_t rows, row_bytes, width; /* width: floats per row */
    int64_t *push_rows;
    size_t push_n; /* this step's rows (the step's actual push bytes) */
    void *dedup_scratch;
    rf_mr *whole_mr; /* the graph's storage, for the initial write and the
                        final read of the whole table */
    /* The chief's graph left the table uninitialised: the session writes
     * its rows on the ps from rf_variable_initialize_rows in chunks
     * (session_table_init.c) and the graph's storage is never touched
     * (until the final pull: pulled). */
    bool rows_init, pulled;
    bool restored; /* the chief restored its rows from a checkpoint */
    /* this step's gradient, indices and values: whichever after-hook
     * comes second stages and pushes it */
    const rf_tensor *step_idx, *step_vals;
    atomic_int ready;
    /* a table: how its lookups fetch its rows, why, and how often each
     * way did (session_lookup_way.c) */
    rf_session_lookup_info way;
} sess_var;

/* A lookup (EmbeddingLookup or Gather) of table shards: its batch's rows
 * are READ each step into gathered (registered), and the kernel is pointed
 * at gathered and at the ids' positions in it (session_rows.c). */
typedef struct sess_lookup {
    rf_node *node;
    size_t ids_in;      /* the ids' input */
    size_t nparts;      /* parts: inputs 1.. (lookup) or input 0 (Gather) */
    uint32_t *part_var; /* index in v of each part */
    int64_t *part_rows; /* rows of each part */
    size_t cap;         /* the most ids of one step */
    size_t row_bytes;
    int32_t *part; /* per id: its part and row */
    int64_t *row;
    int64_t *pos;      /* per id: its row in gathered (the kernel's ids) */
    uint32_t *uniq;    /* per distinct id: its first position */
    uint32_t *slot_of; /* per distinct id: its row in gathered */
    uint32_t *hash;    /* open addressing: distinct id + 1, 0 empty */
    size_t hcap;       /* a power of two >= 2 cap */
    uint32_t *count;   /* per part */
    int64_t *rows;     /* the rows READ, part after part */
    unsigned char *gathered; /* in s->rows.gathered_mem */
    rf_ps_rows *sets;        /* one per part: the row READs' first, then */
    size_t *set_part;        /* the gathers'; each set's part */
    rf_tensor pos_t, gathered_t;
    size_t step_rows; /* rows READ this step */
} sess_lookup;

typedef struct sess_plan sess_plan;
typedef struct sess_push_ops sess_push_ops;

/* The session, its fields grouped by the feature that owns them (at most
 * 25 direct fields: issue 22). */
struct rf_session {
    rf_server *server; /* NULL for an offline session */
    /* rf_session_create_offline: describes, never connects */
    bool offline;
    rf_graph *g;
    rf_executor *ex;
    rf_session_options opt;
    /* this task in the cluster */
    struct {
        const rf_cluster_task *self;
        bool chief;
        int num_ps, num_workers; /* num_workers -1: unknown (sparse) */
        bool elastic; /* workers join and leave (rf_server_elastic) */
    } task;

    /* the graph's nodes the session knows */
    struct {
        rf_node *global_step_var;
        rf_node *train_op;
        int32_t *var_of_node; /* node id -> index in v of its variable, -1 */
        size_t nnodes;        /* graph nodes when the session was made */
    } nodes;
    sess_var *v;
    size_t nv;

    rf_ps_client *client;
    const char **ps_providers; /* num_ps, filled by rf_session_describe */
    /* the registered block: values and gradient staging, registered once,
     * and the read set of the dense shards' values in it */
    struct {
        unsigned char *mem;
        size_t mem_len;
        rf_mr *mem_mr;
        rf_ps_read_set *reads;
        size_t nreads; /* the dense shards in reads */
    } block;
    /* embedding tables' lookups (session_rows.c) */
    struct {
        sess_lookup *lookups; /* of table shards */
        size_t nlookups;
        size_t nlookups_of_node; /* nodes covered by lookup_of_node */
        int32_t *lookup_of_node; /* node id -> index in lookups, or -1 */
        /* rf_ps_read_rows and the sparse pushes from concurrent executor
         * threads and the pusher: one at a time on the client */
        pthread_mutex_t mu;
        bool mu_init;
        /* the lookups' gathered buffers, in a block of their own:
         * registered remote-writable (rf_ps_client_register_reply) when a
         * table may take the ps-side gather, whose ps WRITEs the rows
         * there, so nothing else of the worker is exposed to WRITEs */
        unsigned char *gathered_mem;
        size_t gathered_len;
        rf_mr *gathered_mr;
    } rows;

    /* the runs */
    struct {
        sess_plan *plans; /* one per distinct (feeds, fetches), a list */
        int64_t global_step;
        int64_t step_value; /* what a fetched train_op shows: the new step */
        uint64_t step;      /* runs so far (the trace's step) */
    } run;

    const sess_push_ops *push;
    void *push_state; /* the strategy's own (sync: the sync replicas') */

    /* checkpoints (session_ckpt.c, ckpt_tables.c) */
    struct {
        unsigned char *snap;   /* values, slots, powers; registered */
        unsigned char *tstage; /* tables' checkpoint pieces (ckpt_tables.c) */
        size_t tstage_len;
        rf_mr *tstage_mr;
        int64_t *tidx;
        size_t snap_len;
        rf_mr *snap_mr;
        char restored_from[4096]; /* the checkpoint the chief restored, "" */
        char restore_note[1024];  /* newer checkpoints skipped as corrupt */
        int64_t restored_step;    /* the restored checkpoint's, or -1 */
        int64_t saved_step;       /* the last rf_session_save's, or -1 */
        /* how the chief found the shards: "restored", "adopted" (every
         * shard was initialised already: a restarted chief without a
         * checkpoint) or "initialised" */
        const char *init_how;
    } ckpt;

    /* Readiness (rf_session_create_attempt): bound of each wait of one
     * attempt to create (connect, lookup, init flags; 0: the options' and
     * the defaults), and on failure the task it was waiting for
     * ("/job:ps/task:1"). */
    struct {
        int attempt_ms;
        /* The chief, re-creating a lost session in the same process: if
         * every shard is still initialised (no ps restarted), adopt them
         * instead of rolling the job back to the newest checkpoint. */
        bool prefer_adopt;
        int unreachable_ps; /* the ps client's first unreachable task */
        char waiting_for[64];
    } ready;

    /* stale synchronous parallel (session_ssp.c; opt.staleness >= 0):
     * this worker's clock (training steps completed in the job), whether
     * its word is marked finished, the training workers' words as last
     * read, and the clock READ's span args */
    struct {
        int64_t clock;
        bool done;
        int64_t *clocks;
        char args[64];
    } ssp;

    /* what the session reports */
    struct {
        rf_session_counters counters;  /* rf_session_counters_get */
        rf_session_ps_bytes *ps_bytes; /* per ps task (task.num_ps) */
        rf_trace *trace;               /* non-NULL while tracing */
        rf_session_var_desc *var_desc; /* global_step, then v[] */
    } report;
};

/* One transfer kind under a push strategy: a dense gradient (the variable's
 * whole gradient in grad_buf) or a table's staged rows (push_rows and
 * grad_buf, push_n of them). */
struct sess_push_xfer {
    /* Pushes the staged gradients of v[vars[0..n)], all of this kind:
     * posts them (acknowledged by wait) or completes them. */
    rf_status (*push)(rf_session *s, const size_t *vars, size_t n);
    /* The payload bytes, both ways, of one push of v: dense, its gradient
     * (rows ignored); rows, rows rows of it (the step description's bound
     * takes max_push_rows). */
    size_t (*wire_bytes)(const rf_session *s, const sess_var *v, size_t rows);
};

/* A push strategy (the same pattern as the fabric's rf_provider_ops: a
 * constant table of designated initializers). The optional slots (marked)
 * may be NULL: the session calls every slot through session/push.c, where
 * an empty one does nothing, and never tests the strategy itself. */
struct sess_push_ops {
    const char *name;    /* "ps", "worker", "sync" (rf_session_desc.apply) */
    const char *push_op; /* the step op of a push, its span-name prefix */
    const char *wait_op; /* the step op of the wait */
    const char *wait_span;
    /* The step's last op, which moves global_step: its kind and op, whose
     * span is "<advance_op> global_step". */
    rf_step_op_kind advance_kind;
    const char *advance_op;
    /* use_locking applies to its pushes (the read-modify-writes) */
    bool locks;
    /* a table's rows are always deduplicated, sgd's too (sync: the
     * accumulator counts one contribution per row and gradient) */
    bool rows_dedup;
    /* (optional) Refuses table v (at map time) if its rows transfer
     * cannot push its optimizer's update. */
    rf_status (*check_rows)(const rf_session *s, const sess_var *v);
    /* Its two transfer kinds (sess_var.xfer points at one of them). */
    sess_push_xfer dense, rows;
    /* (optional) Checks the options against the cluster (before anything
     * connects; before sess_map) and makes the strategy's own state
     * (s->push_state). */
    rf_status (*configure)(rf_session *s);
    /* (optional) After the session connected (and the chief initialised):
     * starts what the strategy runs beside the executor (a thread).
     * (optional) stop undoes start and configure, and may follow a failed
     * configure or start. */
    rf_status (*start)(rf_session *s);
    void (*stop)(rf_session *s);
    /* (optional) The chief, after a restore and before it writes the initial
     * values and the init flags (so a worker that sees the flags sees this
     * too). */
    rf_status (*init_shards)(rf_session *s);
    /* (optional) At the start of a training run, before anything is
     * read. */
    rf_status (*begin)(rf_session *s);
    /* (optional) On the executor thread tid, just after the gradient of
     * v[i] was staged (copied, or its rows staged); span is the push's
     * span name. Empty: v[i] is pushed at once (its xfer's push) on that
     * thread, in span. */
    rf_status (*on_gradient)(rf_session *s, size_t i, const char *span,
                             int tid);
    /* (optional) After the plan ran: until every gradient handed over
     * was pushed (issued); the first failure of the step. */
    rf_status (*drain)(rf_session *s);
    /* Then: until every push was applied (acknowledged). */
    rf_status (*wait)(rf_session *s);
    /* Then, if the step succeeded: moves global_step past this step;
     * *step gets its new value. */
    rf_status (*advance)(rf_session *s, int64_t *step);
    /* (optional) Names the strategy's threads in the trace. */
    void (*name_threads)(rf_session *s, rf_trace *t);
    /* (optional; empty: 0 and 0) The shards' replicas_to_aggregate and
     * total_num_replicas (sync replicas: set by configure). */
    void (*replicas)(const rf_session *s, uint32_t *n, uint32_t *m);
    /* (optional; empty: false) The chief's finish, k of the n other
     * workers ids still missing (not in done): whether it may stop waiting
     * for them (sync replicas' backup workers: once only they are missing,
     * those no longer connected are not waited for at all, connected ones
     * op_timeout_ms more, not the whole wait). */
    bool (*may_skip_missing)(rf_session *s, const uint32_t *ids, size_t n,
                             const uint64_t *done, size_t k);
};

extern const sess_push_ops sess_push_apply_ps;
extern const sess_push_ops sess_push_apply_worker;
extern const sess_push_ops sess_push_sync;

/* session/push.c: the one dispatcher, each function calling the slot of
 * its name (an empty optional slot does nothing or answers its default;
 * an empty on_gradient: sess_push_gradient pushes v[i] at once) ... */
rf_status sess_push_configure(rf_session *s);
rf_status sess_push_start(rf_session *s);
void sess_push_stop(rf_session *s);
rf_status sess_push_init_shards(rf_session *s);
rf_status sess_push_begin(rf_session *s);
rf_status sess_push_gradient(rf_session *s, size_t i, const char *span,
                             int tid);
rf_status sess_push_drain(rf_session *s);
rf_status sess_push_wait(rf_session *s);
rf_status sess_push_advance(rf_session *s, int64_t *step);
void sess_push_name_threads(rf_session *s, rf_trace *t);
void sess_push_replicas(const rf_session *s, uint32_t *n, uint32_t *m);
rf_status sess_push_check_rows(const rf_session *s, const sess_var *v);
bool sess_push_may_skip_missing(rf_session *s, const uint32_t *ids, size_t n,
                                const uint64_t *done, size_t k);
/* ... and the entries strategies share: every push acknowledged
 * (rf_ps_push_wait), global_step += 1 by FETCH_AND_ADD on ps task 0, and
 * the bookkeeping of a table's rows push (st: what the client call
 * returned; counts the rows, or names the table in the error), called
 * with s->rows.mu held around both. */
rf_status sess_push_wait_acks(rf_session *s);
rf_status sess_advance_fetch_add(rf_session *s, int64_t *step);
rf_status sess_rows_pushed(rf_session *s, const sess_var *v, rf_status st);
/* The wire bytes of a rows push through the inbox (apply=ps and sync): the
 * count, the indices and rows, the ack. */
size_t sess_rows_inbox_wire(const rf_session *s, const sess_var *v,
                            size_t rows);

/* A plan of the session with its hooks and its step description. */
struct sess_plan {
    sess_plan *next;
    rf_session *session;
    rf_node **feeds;
    size_t nfeeds;
    rf_node **fetches; /* the caller's */
    size_t nfetches;
    bool train; /* fetches include train_op */
    /* the plan reads global_step (an op of it, or a fetch): its storage
     * gets ps 0's value (one 8-byte READ) before the plan runs, as a
     * TensorFlow run reads the variable */
    bool reads_global_step;
    rf_plan *plan; /* fetches: the caller's (train_op excluded), then
                      every gradient when train */
    size_t plan_nfetch;
    int32_t *fetch_map; /* caller fetch j -> plan fetch, -1 for train_op */
    rf_tensor *out;     /* the plan's outputs */
    uint32_t *wait_off; /* CSR by node id: remote variables it waits for */
    uint32_t *wait_var;
    int32_t *grad_var; /* node id -> index in v of its gradient, or -1 */
    int32_t *idx_var;  /* node id -> the table whose gradient indices, -1 */
    /* the step description: what execution, --explain and the trace's
     * span names read */
    rf_step_op *ops;
    size_t nops;
    size_t *read_op; /* v[i]'s READ in ops */
    size_t *push_op; /* v[i]'s push in ops */
    size_t wait_op, advance_op;
    size_t ssp_read_op, ssp_add_op; /* with staleness >= 0 */
    rf_session_desc desc;
};

/* session.c: RF_ERR_INVALID_ARG saying that what (a public function's
 * name) cannot be used on an offline session. */
rf_status sess_refuse_offline(const char *what);
/* "/job:J/task:I" of the task with this client id (worker_id). */
void sess_task_of_id(const rf_session *s, uint32_t id, char *buf, size_t len);

/* session_ssp.c: stale synchronous parallel. check: the options (before
 * anything connects); start: after the connection, reads this worker's
 * clock word; wait: before a training step, until this worker is at most
 * staleness ahead of the slowest training worker (RF_ERR_TIMEOUT after
 * staleness_wait_ms naming it); advance: after the step (global_step
 * moved), clock += 1; finish: marks the word so this worker never holds
 * the others. Every entry but check does nothing with staleness -1. */
rf_status sess_ssp_check(const rf_session_options *o);
bool sess_ssp_on(const rf_session *s);
rf_status sess_ssp_start(rf_session *s);
rf_status sess_ssp_wait(rf_session *s, const sess_plan *p);
rf_status sess_ssp_advance(rf_session *s, const sess_plan *p);
rf_status sess_ssp_finish(rf_session *s);
void sess_ssp_free(rf_session *s);

/* session_map.c: fills s->v (one per ApplyX node of the graph, in creation
 * order) and s->global_step_var; refuses any other variable on /job:ps. */
rf_status sess_map(rf_session *s);
/* The shard spec of v (create, lookup, and --explain_only's sizes). */
rf_ps_shard_spec sess_spec(const rf_session *s, const sess_var *v);

/* session_rows.c: the tables' lookups (s->lookups) and the bytes of their
 * gathered buffers and of the tables' push staging in the registered block
 * (rows_layout: sizes, rows_place: pointers into it from base). */
rf_status sess_rows_map(rf_session *s);
size_t sess_rows_bytes(const rf_session *s);
void sess_rows_place(rf_session *s, unsigned char *base);
/* The lookups' gathered block: allocated and registered (reply-writable
 * unless every table is forced to row READs), and its memory freed after
 * the client closed (which deregistered it). */
rf_status sess_rows_register_gathered(rf_session *s);
void sess_rows_free_gathered(rf_session *s);
void sess_rows_free(rf_session *s);
/* The input hook of a lookup (checks the ids, READs the distinct rows,
 * points the kernel at them); ctx is the plan. */
rf_status sess_rows_inputs(void *ctx, rf_node *node, const rf_tensor **in,
                           size_t *n, int tid);
/* After the gradient's indices (is_idx) or values of table v[i]: the
 * second of the two stages the step's rows (dedup unless sgd) and hands
 * them to the push strategy (sess_push_gradient). */
rf_status sess_rows_gradient(rf_session *s, size_t i, bool is_idx,
                             const rf_tensor *value, const char *span, int tid);
/* The payload bytes, both ways, of a READ of n rows of table v, and of a
 * gather of them (the step description's bound takes the larger at
 * max_push_rows). */
size_t sess_rows_read_wire(const sess_var *v, size_t n);
size_t sess_rows_gather_wire(const sess_var *v, size_t n);
/* session.c: counts bytes read from or pushed to ps task ps (the
 * counters' totals and rf_session_ps_bytes_get's split). */
void sess_count_bytes(rf_session *s, size_t ps, uint64_t read, uint64_t pushed);

/* session_lookup_way.c: each table's way (v->way): forced, or (auto)
 * measured against its ps now, after the shards are initialised;
 * logged once per table. An offline session measures nothing. */
rf_status sess_lookup_ways_choose(rf_session *s);
/* The way a lookup of n distinct rows of table v takes. */
rf_lookup_way sess_way_of(const sess_var *v, size_t n);

/* session_connect.c */
rf_status sess_connect(rf_session *s);
/* Reads every variable's values (and with slots, the optimizer slots,
 * beta powers) and global_step into the local graph. */
rf_status sess_pull_all(rf_session *s, bool slots);
void sess_disconnect(rf_session *s);

/* session_table_init.c: the chief writes the initial values of every
 * rows_init table (written: restored or adopted ones excluded by the
 * caller) on its shard in bounded chunks, then sets their init flags. */
rf_status sess_tables_init(rf_session *s);
/* Rows [r0, r0 + n) of field of table v from buf (inside mr): one WRITE
 * (rf_ps_write_row_range) unless locked (the shard's init flag is set:
 * rf_ps_write_rows, 4096 rows a call, idx their scratch). */
rf_status sess_table_write(rf_session *s, sess_var *v, rf_ps_field field,
                           bool locked, int64_t r0, size_t n, void *buf,
                           rf_mr *mr, int64_t *idx);

/* ckpt_tables.c: every table's values and slots as whole tensors (one
 * source each, filled in pieces from the shards), and their restore. */
typedef struct sess_tbl_src sess_tbl_src;
rf_status sess_tables_ckpt(rf_session *s, sess_tbl_src **out, size_t *n);
void sess_tables_ckpt_tensor(sess_tbl_src *src, size_t j, rf_ckpt_tensor *t,
                             rf_ckpt_fill *f);
void sess_tables_ckpt_free(sess_tbl_src *src, size_t n);
/* Writes every table's values and slots from ck into the shards. */
rf_status sess_tables_restore(rf_session *s, const rf_ckpt *ck);
void sess_tables_stage_free(rf_session *s);

/* session_ckpt.c: the chief, at creation: restores the newest checkpoint
 * of opt.checkpoint_dir that verifies into the shards (all but the values
 * and init flags, which init_or_wait writes from the variables), *restored
 * true; nothing (false) without a directory or a checkpoint. */
rf_status sess_restore(rf_session *s, bool *restored);
void sess_snapshot_free(rf_session *s);

/* session_ledger.c: ps task 0's shard ledger as a checkpoint tensor (t
 * over buf; t.name NULL when the ledger is unset), and its restore into a
 * ps task 0 whose ledger is unset. */
typedef struct sess_ledger_save {
    unsigned char *buf;
    rf_ckpt_tensor t;
} sess_ledger_save;
rf_status sess_ledger_read(rf_session *s, sess_ledger_save *out);
rf_status sess_ledger_restore(rf_session *s, const rf_ckpt *ck);

/* session_plan.c */
rf_status sess_plan_get(rf_session *s, rf_node *const *feeds, size_t nfeeds,
                        rf_node *const *fetches, size_t nfetches,
                        sess_plan **out);
void sess_plans_destroy(rf_session *s);
/* Adds a "fabric" span [t0, now) to the session's trace, if tracing. */
void sess_span(rf_session *s, const char *name, const char *args, uint64_t t0,
               int tid);
/* Staging transfer of v[i]'s gradient. */
rf_ps_xfer sess_grad_xfer(const rf_session *s, size_t i);

#endif
