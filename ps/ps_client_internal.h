/* ps/ps_client_internal.h: the worker-side client's types, shared by
 * ps_client.c (connect, reconnect, close, registered memory),
 * ps_client_progress.c (completions, waits, posting, control RPCs),
 * ps_client_dir.c (regions, directories, create/lookup), ps_client_data.c
 * (read, write, init flags, global step, workers done, shutdown),
 * ps_client_wait.c (the one progress-and-wait engine, cli_wait),
 * ps_client_push.c (apply=ps and apply=worker pushes),
 * ps_client_sync.c (sync-replicas pushes and step words),
 * ps_client_readset.c (prepared read sets), ps_client_rows.c (embedding
 * rows), ps_client_gather.c (ps-side gathers of them) and
 * ps_client_conn_state.c (a ps connection's states and their table).
 *
 * One completion queue serves every endpoint (sends and receives); every
 * posted work request is signaled and its context is a cli_op. The client's
 * mutex (mu) guards its state; public calls are serialised by the call
 * token (cli_lock / cli_unlock: mu plus call_busy), except the read-set
 * waits, which take mu alone. Every wait goes through cli_wait, which lets
 * go of mu while it sleeps (the token stays with its call). */
#ifndef RF_GRAPH_DIST_PS_CLIENT_INTERNAL_H
#define RF_GRAPH_DIST_PS_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ps/proto.h"
#include "ps/ps_layout.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/ps.h"

#define PS_CLI_RECV_DEPTH 64u  /* receives posted per ps (replies, acks) */
#define PS_CLI_SQ_DEPTH   512u /* send queue per ps */
#define PS_CLI_POOL_CHUNK (4u << 20)

typedef struct ps_cli_conn ps_cli_conn;
typedef struct cli_group cli_group;

/* A ps connection's phase (ps_client_conn_state.c holds the table of the
 * requests each may send and the states that may follow). */
typedef enum cli_conn_state {
    CLI_CONN_NOT_CONNECTED,  /* never connected */
    CLI_CONN_CONNECTING,     /* rf_connect in progress */
    CLI_CONN_AUTHENTICATING, /* with a secret: AUTH_REQ, AUTH_PROOF */
    CLI_CONN_HELLO,          /* HELLO, then the regions and directory */
    CLI_CONN_LIVE,           /* a client of the ps */
    CLI_CONN_DOWN,           /* lost, refused, shut down or closed (why
                                says); rf_ps_client_reconnect */
    CLI_CONN_NUM_STATES
} cli_conn_state;

enum cli_op_kind {
    CLI_OP_GROUP = 1, /* counts toward a cli_group */
    CLI_OP_CTRL,      /* a control send */
    CLI_OP_PUSH,      /* apply=ps write_imm of a var */
    CLI_OP_WM,        /* an apply=worker stage of a var */
    CLI_OP_RECV,      /* a posted receive */
    CLI_OP_TAG,       /* a WRITE before a push's write_imm (sync tag, sparse) */
};

typedef struct cli_op {
    uint32_t kind;
    uint32_t index; /* receive buffer index (CLI_OP_RECV) */
    cli_group *group;
    rf_ps_var *var;
    ps_cli_conn *conn;
} cli_op;

/* Work posted by one call, waited for together. */
struct cli_group {
    uint32_t pending;
    rf_status status; /* first failure */
    char err[400];
};

struct ps_cli_conn {
    rf_ps_client *client;
    size_t index;
    char addr[300]; /* as given */
    char host[256];
    uint16_t port;
    rf_ep *ep;            /* kept while down until closed (its flushed
                             completions drain) */
    cli_conn_state state; /* cli_conn_set_state changes it */
    char why[400];        /* why it is down */
    rf_status fatal;      /* why the last connect attempt cannot be retried */
    uint64_t incarnation;
    const char *provider; /* rf_ep_provider of the last connection, "" */
    int32_t ps_index;
    uint32_t ps_recv_depth;
    rf_mr_desc *regions;
    uint32_t num_regions;
    ps_loc globals;
    ps_entry *dir;
    uint32_t num_dir, cap_dir;
    rf_ps_var **by_shard; /* num_dir entries: the handle of each shard */

    unsigned char *mem; /* receives, request buffer, ack ring */
    size_t mem_len;
    rf_mr *mr;
    cli_op rop[PS_CLI_RECV_DEPTH];
    cli_op ctrl_op;
    uint32_t next_req;
    bool reply_ready; /* the RPC slot: a reply received, not consumed */
    uint32_t reply_index, reply_len;
    uint64_t acks_seen;
    uint32_t sq_used;         /* posted, not completed */
    uint32_t pushes_inflight; /* apply=ps pushes not acknowledged */
};

struct rf_ps_var {
    rf_ps_client *client;
    size_t ps;
    ps_spec spec;  /* the local graph's */
    ps_entry e;    /* the ps's */
    ps_layout lay; /* the layout e implies (table rows, inbox) */
    uint64_t rec_addr, inbox_addr;
    uint32_t rkey, inbox_rkey;
    bool stale;

    /* apply=ps and sync pushes */
    cli_op push_op;
    bool push_busy, push_sent, push_acked;
    bool push_sync; /* the push in flight is a sync push */
    uint8_t push_seq;
    uint64_t version; /* from the last ack (a sync push: the shard's step) */
    /* sync pushes: the tag's registered word (allocated on first use);
     * sparse pushes: the count word, the same way */
    cli_op tag_op;
    unsigned char *sync_tag;
    rf_mr *sync_tag_mr;
    /* ps-side gathers (ps_client_gather.c): the push in flight is one;
     * its request and indices (registered, allocated on first use), the
     * set and first position it carries, its outcome (the ack's error and
     * the bad position + 1, 0: none). */
    bool push_gather;
    unsigned char *gather_req;
    rf_mr *gather_req_mr;
    size_t gather_set, gather_base;
    rf_status gather_status;
    uint64_t gather_pos;

    /* apply=worker, init flags: scratch copy of the record (registered) */
    unsigned char *scratch;
    rf_mr *scratch_mr;
    cli_op wm_op;
    int wm_state;
    uint32_t wm_pending;
    rf_status wm_status;
    const float *wm_grad;
    long long wm_retry_at, wm_deadline;
    uint32_t wm_backoff_us;
    bool wm_locking;
    bool wm_fresh; /* its next stage is to be posted */

    rf_ps_var *next;
};

typedef struct cli_pool_chunk {
    unsigned char *base;
    size_t len, used;
    rf_mr *mr;
    struct cli_pool_chunk *next;
} cli_pool_chunk;

typedef struct cli_reg {
    rf_mr *mr;
    bool reply; /* rf_ps_client_register_reply: remote-writable */
    struct cli_reg *next;
} cli_reg;

/* A row being read (ps_client_rows.c): set, position, field offset. */
typedef struct cli_row_item {
    size_t set, pos;
    uint64_t off;
} cli_row_item;

struct rf_ps_client {
    pthread_mutex_t mu;
    rf_fabric *fabric;
    rf_ps_client_options opt;
    rf_cq *cq;
    ps_cli_conn *conns;
    size_t num_ps;
    rf_ps_var *vars;
    cli_pool_chunk *pool;
    cli_reg *regs;
    unsigned char *words; /* registered scratch words (init flags, step) */
    rf_mr *words_mr;
    size_t words_cap;
    uint64_t lock_token;
    unsigned char task_token[PS_TOKEN_LEN]; /* ps_token.c */
    char token_src[160];                    /* where it came from */
    uint32_t pushes_busy;
    uint64_t sync_accepted, sync_stale; /* sync pushes acknowledged */
    rf_status push_status; /* first apply=ps failure since the last wait */
    char push_err[1200];
    /* The wait engine (ps_client_wait.c), all under mu: */
    bool call_busy;             /* a public call holds the call token */
    pthread_cond_t call_cv;     /* signalled when it is given back */
    bool cq_sleeper;            /* a waiter sleeps in rf_cq_wait without mu:
                                   only it may take completions meanwhile */
    uint32_t cv_sleepers;       /* waiters sleeping on progress_cv */
    pthread_cond_t progress_cv; /* CLOCK_MONOTONIC; broadcast when
                                   completions were handled or the
                                   sleeper came back */
    uint64_t reaped;            /* completions handled so far */
    /* One batch of one-sided requests on variables' records (read, write,
     * init_values, record words: ps_client_data.c), kept between calls */
    rf_wr *batch_wrs;
    cli_op *batch_ops;
    uint64_t *batch_remote;
    size_t batch_cap;
    /* Embedding tables (ps_client_rows.c): scratch kept between calls */
    rf_wr *rs_wrs;
    size_t rs_wr_cap;
    cli_row_item *rs_items;
    size_t rs_item_cap;
    cli_op *rs_ops; /* one per ps */
    /* apply=worker sparse pushes: the gathered rows (registered) */
    unsigned char *rmw_buf;
    rf_mr *rmw_mr;
    size_t rmw_cap;
    size_t *rmw_hash; /* unique-row table */
    size_t rmw_hash_cap;
    int64_t *rmw_rows, *rmw_local;
    size_t rmw_rows_cap;
    /* table row records READ or built for a WRITE (registered; the
     * self-verifying rows of ps_layout.h), and what the row reads saw */
    unsigned char *rec_buf;
    rf_mr *rec_mr;
    size_t rec_cap;
    rf_ps_row_counters row_counters;
    /* ps-side gathers: rows of each set sent so far */
    size_t *gt_done;
    size_t gt_cap;
};

/* ps_client.c */
const char *cli_ps_name(const ps_cli_conn *p, char *buf, size_t len);
/* ps_client_auth.c: the handshake before HELLO (RF_ERR_AUTH: refused, not
 * retried), and the status and message of a connect reject whose data
 * starts with PS_REJECT_AUTH. */
rf_status cli_authenticate(ps_cli_conn *p, const ps_conn_welcome *w);
rf_status cli_auth_refused(const ps_cli_conn *p, const char *data, size_t len);
/* Room for n requests in c->batch_wrs / batch_ops / batch_remote (grown,
 * never shrunk; the caller holds the call token). */
rf_status cli_batch_reserve(rf_ps_client *c, size_t n);
/* One one-sided op per var on bytes [off, off + len) of its record, one
 * batch per ps, waited for: READ into c->words[first + stride * i] (zeroed
 * first), or WRITE from there (stride 0: the same words for every var).
 * c->words must hold them. Caller holds c->mu. */
rf_status cli_record_words(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                           rf_op op, uint64_t off, size_t len, size_t first,
                           size_t stride, const char *what);
/* Marks the connection down (keeping the endpoint for reconnect). */
void cli_conn_fail(ps_cli_conn *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Closes the endpoint and handles its flushed completions. */
void cli_conn_close(ps_cli_conn *p);
rf_status cli_pool_alloc(rf_ps_client *c, size_t len, unsigned char **out,
                         rf_mr **mr);
/* At least n registered 8-byte words in c->words. */
rf_status cli_words(rf_ps_client *c, size_t n);
/* RF_OK if p is usable, else RF_ERR_DISCONNECTED naming it. */
rf_status cli_conn_check(ps_cli_conn *p);

/* ps_client_conn_state.c: the state table. */
const char *cli_conn_state_name(cli_conn_state st);
/* Connected and usable (handshaking or live): work may be posted. */
bool cli_conn_state_usable(cli_conn_state st);
/* Whether a state may send a request of type, may change to another. */
bool cli_conn_state_may_send(cli_conn_state st, uint16_t type);
bool cli_conn_state_may_follow(cli_conn_state from, cli_conn_state to);
/* The one place p->state changes: logs the transition and why (debug; an
 * error when the table does not allow it). */
void cli_conn_set_state(ps_cli_conn *p, cli_conn_state to, const char *why);
/* cli_conn_check, then the request of len bytes in cli_req_buf against
 * the state's table row (RF_ERR_INVALID_ARG naming the state if it may not
 * be sent). */
rf_status cli_conn_check_request(ps_cli_conn *p, size_t len);
static inline bool cli_conn_usable(const ps_cli_conn *p)
{
    return cli_conn_state_usable(p->state);
}

/* ps_client_wait.c: the one progress-and-wait engine.
 *
 * cli_lock / cli_unlock take and give back the client for a public call
 * (mu and the call token); a read-set wait takes mu alone. */
void cli_lock(rf_ps_client *c);
void cli_unlock(rf_ps_client *c);
/* What a wait is for: done(c, arg), checked under mu after each round of
 * completion handling, until deadline_ms (rf_now_ms); what names it in the
 * timeout message and limit_ms is the bound that message states. wake_us
 * (0: none) is an rf_now_us time by which done may turn true with no
 * completion (a backoff). conn is the connection the awaited work is on;
 * NULL: every connection with work outstanding. expire (may be NULL)
 * marks the caller's own work timed out, before the connections close. */
typedef struct cli_wait_for {
    bool (*done)(rf_ps_client *c, const void *arg);
    const void *arg;
    long long deadline_ms;
    int limit_ms;
    long long wake_us;
    const char *what;
    ps_cli_conn *conn;
    void (*expire)(rf_ps_client *c, const void *arg);
} cli_wait_for;
/* Waits (caller holds mu) until w->done: each round handles every
 * completion queued without blocking, dispatching each to its owner; then
 * it sleeps without mu, in rf_cq_wait if no other waiter does (handling
 * what it got once it holds mu again), else on progress_cv. The timeout
 * policy, the same for every wait: at the deadline, expire runs, the
 * connections involved (w->conn, or every connection with work posted or
 * pushes unacknowledged) fail with "<what>: no completion within <ms> ms"
 * and are closed, flushing all their work, and the wait returns
 * RF_ERR_TIMEOUT "<what>: no completion within <ms> ms; the connections
 * involved were closed". A connection found down with pushes
 * unacknowledged is closed at once (no ack will come). */
rf_status cli_wait(rf_ps_client *c, const cli_wait_for *w);
/* cli_wait for a predicate with the op timeout from now, every connection
 * with work outstanding involved. */
rf_status cli_wait_op(rf_ps_client *c,
                      bool (*done)(rf_ps_client *, const void *),
                      const void *arg, const char *what);
/* Lets us microseconds pass through the engine (handling completions,
 * without mu while sleeping): a backoff that holds no one up. */
rf_status cli_pause_us(rf_ps_client *c, uint32_t us, const char *what);
/* Handles every completion queued now, waiting for a sleeping waiter to
 * hand back what it took (after a close: all of its flushed work). */
void cli_drain(rf_ps_client *c);

/* ps_client_progress.c */
/* Handles n completions: each to the owner its cli_op names. */
void cli_dispatch(rf_ps_client *c, const rf_completion *x, int n);
/* Posts n work requests to p in as few rf_post calls as the send queue
 * allows (handling completions while it is full). */
rf_status cli_post(ps_cli_conn *p, rf_wr *wrs, size_t n);
/* cli_post telling how many were posted (on failure, the rest were not). */
rf_status cli_post_n(ps_cli_conn *p, rf_wr *wrs, size_t n, size_t *done);
/* cli_post for work counted in g: what could not be posted is taken off
 * g's pending count and recorded as g's failure. */
rf_status cli_post_group(ps_cli_conn *p, cli_group *g, rf_wr *wrs, size_t n);
/* Waits until g has no pending work; on timeout the connections with work
 * posted are closed so no completion can outlive g. */
rf_status cli_group_wait(rf_ps_client *c, cli_group *g, const char *what);
void cli_group_fail(cli_group *g, rf_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A plain READ of the u64 at offset off of ps task 0's globals block. */
rf_status cli_globals_read(rf_ps_client *c, uint32_t off, uint64_t *out,
                           const char *what);
/* A FETCH_AND_ADD of add to that u64; *old (may be NULL) its value before. */
rf_status cli_globals_fetch_add(rf_ps_client *c, uint32_t off, uint64_t add,
                                uint64_t *old, const char *what);
/* Sends the request of len bytes in p's request buffer and waits for the
 * reply of type want (an ERROR_REPLY becomes its status and text). The
 * reply is at *reply until cli_rpc_done. */
unsigned char *cli_req_buf(ps_cli_conn *p);
uint32_t cli_next_req_id(ps_cli_conn *p);
rf_status cli_rpc(ps_cli_conn *p, size_t len, uint16_t want,
                  const unsigned char **reply, size_t *reply_len);
void cli_rpc_done(ps_cli_conn *p);
/* Posts every receive of p. */
rf_status cli_post_receives(ps_cli_conn *p);

/* ps_client_dir.c */
rf_status cli_fetch_regions(ps_cli_conn *p);
rf_status cli_fetch_dir(ps_cli_conn *p);
/* A var became stale or its ps reconnected: rebinding after a dir fetch. */
void cli_vars_invalidate(rf_ps_client *c, size_t ps);

/* ps_client_push.c */
/* The inbox pushes (rf_ps_push_inbox: sync false) or the sync pushes
 * (rf_ps_push_sync: tagged with step) of n gradients, checked by the
 * caller. */
rf_status cli_push_ps(rf_ps_client *c, const rf_ps_xfer *g, size_t n, bool sync,
                      int64_t step);
/* The checks every dense push makes of each transfer (shard, field,
 * alignment, no shard twice; a sync shard only with sync; with inbox, the
 * shard's inbox on its ps); what names the caller in the messages. */
rf_status cli_push_check(rf_ps_client *c, const rf_ps_xfer *g, size_t n,
                         bool sync, bool inbox, const char *what);
/* v's push starts: in flight until both its send and its ack arrived
 * (counted in the client's and its ps's pushes); a new sequence. */
void cli_push_begin(rf_ps_var *v, bool sync, bool gather);
void cli_push_on_ack(ps_cli_conn *p, uint32_t imm);
void cli_push_on_send(rf_ps_var *v, rf_status st);
void cli_wm_on_completion(rf_ps_var *v, rf_status st);
/* The var's registered copy of its record (allocated on first use). */
rf_status cli_var_scratch(rf_ps_var *v);

/* ps_client_push.c: waits for v's push to be acknowledged (and for room
 * at its ps). */
rf_status cli_push_wait_var(rf_ps_client *c, rf_ps_var *v, const char *what);

/* ps_client_rows.c */
rf_status cli_rows_scratch(rf_ps_client *c, size_t wrs, size_t items);
/* v is a usable table of c. */
rf_status cli_table_check(rf_ps_client *c, rf_ps_var *v, const char *what);
/* Every var is this client's, not stale, its ps connected (under c->mu). */
rf_status cli_vars_usable(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                          const char *what);
/* count items of size bytes at buf lie inside mr. */
rf_status cli_rows_in_mr(const rf_ps_var *v, const void *buf, size_t count,
                         size_t size, rf_mr *mr, const char *what,
                         const char *which);
/* Every index in [0, rows). */
rf_status cli_rows_indices(const rf_ps_var *v, const int64_t *rows, size_t n,
                           size_t set, const char *what);
rf_status cli_field_off(const rf_ps_var *v, rf_ps_field field, uint64_t *off,
                        const char *what);
/* The checks of rf_ps_read_rows' sets (table, field, buffer inside its
 * region, indices), with check_mr (may be NULL) run on each set too,
 * before its indices; *total (may be NULL) gets the sets' rows. */
typedef rf_status (*cli_rows_mr_check)(rf_ps_client *c, const rf_ps_rows *s,
                                       size_t i, const char *what);
rf_status cli_rows_check_sets(rf_ps_client *c, const rf_ps_rows *sets,
                              size_t nsets, const char *what,
                              cli_rows_mr_check check_mr, size_t *total);
/* A public row-set call: fn(c, sets, nsets) under the client's lock; a NULL
 * client refused naming what. */
rf_status cli_rows_locked(rf_ps_client *c,
                          rf_status (*fn)(rf_ps_client *c,
                                          const rf_ps_rows *sets, size_t nsets),
                          const rf_ps_rows *sets, size_t nsets,
                          const char *what);
/* ps_client_gather.c: the ack of a gather (v->push_gather), and a
 * gather's write that failed. */
void cli_gather_on_ack(rf_ps_var *v, uint64_t word);
void cli_gather_failed(rf_ps_var *v, rf_status st);
/* At least bytes of 64-byte aligned scratch registered for local writes in
 * *buf (capacity *cap, region *mr), grown by doubling from 4096; what it
 * held is not kept. The client's scratch buffers (rec_buf, rmw_buf) grow
 * this one way. */
rf_status cli_scratch_reserve(rf_ps_client *c, unsigned char **buf, rf_mr **mr,
                              size_t *cap, size_t bytes);
/* At least bytes of registered row-record scratch in c->rec_buf. */
rf_status cli_rec_buf(rf_ps_client *c, size_t bytes);
/* Checks the record copy rec of one row (ps_row_check) and counts what it
 * saw in c->row_counters: true if whole. */
bool cli_row_whole(rf_ps_client *c, const unsigned char *rec, size_t len,
                   uint64_t *version);
/* rf_ps_read_row_range without its lock and its bound on nrows. */
rf_status cli_rows_read_range(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
                              int64_t row0, size_t n, void *buf, rf_mr *mr);
/* rf_ps_write_row_range without its lock. */
rf_status cli_rows_write_range(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
                               int64_t row0, size_t nrows, const void *buf,
                               rf_mr *mr);
/* ps_client_rows_write.c: the rows of set (checked) replace those of
 * field f (0 values, 1 + i slot i) by row updates (cli_rows_update). */
rf_status cli_rows_write_field(rf_ps_client *c, const rf_ps_rows *set,
                               size_t f);
/* ps_client_rows_rmw.c: a sparse read-modify-write (rf_ps_update_sparse_rmw
 * and _locked, checked by the caller; what names it in the messages). */
rf_status cli_rows_rmw(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                       size_t n, const float *grad, bool locking,
                       const char *what);
/* The read-modify-write of m distinct rows of table v, every field: READs
 * each row's field records until whole (all at one version), gathers each
 * field's rows into field[f] (m rows of row_bytes, row j of which[0..k)),
 * lets modify change them, owns each row (CMP_AND_SWP of its values
 * record's version, even v to v + 1), WRITEs the records sealed at v + 2
 * and starts again with the rows whose swap lost (another writer wrote
 * them since the READ), until all are written or op_timeout_ms. */
typedef rf_status (*cli_rows_modify)(void *ctx, rf_ps_var *v,
                                     const size_t *which, size_t k,
                                     float *const *field);
rf_status cli_rows_update(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                          size_t m, cli_rows_modify modify, void *ctx,
                          const char *what);

/* ps_client_data.c */
rf_status cli_check_xfer(rf_ps_client *c, const rf_ps_xfer *x, bool write,
                         uint64_t *remote);

#endif
