/* ps/ps_server_internal.h: the ps server's types, shared by its
 * files: ps_server.c (threads, connection lifecycle), ps_server_ctrl.c
 * (control messages), ps_server_conn_state.c (a connection's states and
 * what each accepts), ps_server_shards.c (shard table, records, inboxes),
 * ps_server_apply.c (apply=ps pushes and acks), ps_server_sync.c (the
 * accumulators of sync-replicas shards), ps_server_sparse_sync.c (those
 * of sync tables).
 *
 * Threads: a listener thread accepts connections (validating the connect
 * private data) and queues the endpoints; the service thread (bound to the
 * NIC's NUMA node) owns everything else: it adopts queued endpoints, polls
 * the one completion queue all endpoints share, answers control messages
 * and runs the optimizer for pushes. Only `mu` protected fields are touched
 * by both. */
#ifndef RF_GRAPH_DIST_PS_SERVER_INTERNAL_H
#define RF_GRAPH_DIST_PS_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ps/proto.h"
#include "ps/ps_arena.h"
#include "ps/ps_layout.h"
#include "ps/ps_ledger.h"
#include "ps/ps_spec.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/topology.h"

/* Receives the ps keeps posted per connection (control + pushes). */
#define PS_SRV_RECV_DEPTH 64u
/* Reply buffers per connection (a ring; one request at a time is the
 * protocol, the ring is slack for a misbehaving peer). */
#define PS_SRV_REPLY_BUFS 4u

/* Connections not yet clients (ps_server_admit.c): at most this many at
 * once, and this many from one address. */
#define PS_SRV_MAX_UNADMITTED      32u
#define PS_SRV_UNADMITTED_PER_ADDR 16u
/* Known tasks' connections (ps_server_token.c) setting up, besides those:
 * their own cap, the smaller of this and max_workers, so the completion
 * queue of max_workers + 64 connections fits a device's max_cqe (rxe:
 * 32767, 26624 with the default 64 clients). */
#define PS_SRV_MAX_KNOWN_UNADMITTED 32u

typedef struct ps_server_conn ps_server_conn;

/* A connection's phase (ps_server_conn_state.c holds the table of what
 * each accepts and may become). */
typedef enum ps_conn_state {
    PS_CONN_ADMITTED,      /* adopted; its receives being posted */
    PS_CONN_WAIT_AUTH_REQ, /* with a secret: AUTH_REQ comes first */
    PS_CONN_WAIT_PROOF,    /* AUTH_CHALLENGE sent, AUTH_PROOF next */
    PS_CONN_WAIT_HELLO,    /* authenticated (or no secret): HELLO next */
    PS_CONN_LIVE,          /* a client: holds a client slot */
    PS_CONN_CLOSING,       /* refused: closed once its last reply was sent */
    PS_CONN_DEAD,          /* closed; kept until the CQ is drained of its
                              work */
    PS_CONN_NUM_STATES
} ps_conn_state;

/* A client id's (or the chief role's) task token, and where it was first
 * seen (ps_server_token.c). */
typedef struct ps_binding {
    uint32_t id; /* UINT32_MAX: the chief's role is not bound yet */
    bool has_token;
    unsigned char token[PS_TOKEN_LEN];
    char peer[64];
} ps_binding;

typedef struct ps_addr_count {
    char addr[64];
    uint32_t count; /* 0: a free entry */
} ps_addr_count;

enum { PS_TAG_RECV = 1, PS_TAG_SEND };

/* Completion context: which connection, which receive buffer. */
typedef struct ps_tag {
    ps_server_conn *conn;
    uint32_t index;
    uint32_t kind;
} ps_tag;

typedef struct ps_inbox {
    uint32_t client_id;
    ps_loc loc;
    unsigned char *ptr; /* ps_inbox_bytes: (sync: the tag, then) the
                           gradient */
    int64_t sync_step;  /* sync: the step of the client's gradient the
                           accumulator holds; -1: none */
} ps_inbox;

/* A sync-replicas shard's accumulator (TensorFlow's ConditionalAccumulator;
 * ps_server_sync.c). Service thread only; the step it accepts is the
 * record's sync step word, which the chief may rewrite one-sidedly. */
typedef struct ps_rows_acc ps_rows_acc; /* ps_server_sparse_sync.c */
typedef struct ps_sync_acc {
    float *sum;        /* the gradients taken for `step`, summed (dense) */
    ps_rows_acc *rows; /* a table's per-row sums and counts (else NULL) */
    uint32_t count;    /* how many (from distinct clients) */
    int64_t step;      /* the step they belong to */
    uint64_t applied;  /* averaged updates applied */
    uint64_t taken;    /* gradients taken, in all */
} ps_sync_acc;

typedef struct ps_shard {
    uint32_t id;
    ps_spec spec;
    ps_layout layout;
    ps_loc rec;
    unsigned char *rec_ptr;
    ps_sync_acc *sync; /* NULL: an async shard */
    ps_inbox *inboxes;
    uint32_t num_inboxes, cap_inboxes;
    uint32_t hash_next; /* chain in the name hash (UINT32_MAX ends) */
} ps_shard;

struct ps_server_conn {
    rf_ps_server *srv;
    rf_ep *ep;
    ps_conn_state state; /* ps_conn_set_state changes it */
    uint32_t client_id;
    bool chief;
    bool has_token; /* its connect hello carried a task token */
    unsigned char token[PS_TOKEN_LEN];
    bool known;    /* admitted as a known task (ps_server_admit.c) */
    char peer[64]; /* the connector's address */
    /* Authentication (ps_server_auth.c) */
    unsigned char client_nonce[PS_AUTH_NONCE], ps_nonce[PS_AUTH_NONCE];
    long long deadline_ms; /* a client by then (HELLO) or dropped */
    rf_mr_desc ring;
    uint32_t ring_slots;
    uint64_t acks;      /* acks sent */
    unsigned char *mem; /* receives, replies, ack staging: one region */
    size_t mem_len;
    rf_mr *mr;
    uint32_t next_reply;
    uint64_t sends_posted, sends_done;
    ps_tag rtag[PS_SRV_RECV_DEPTH];
    ps_tag stag;
    ps_server_conn *next;
};

/* An accepted endpoint waiting for the service thread. */
typedef struct ps_pending {
    rf_ep *ep;
    ps_conn_hello hello;
    bool known; /* admitted past the caps as a known task */
    char peer[64];
    struct ps_pending *next;
} ps_pending;

struct rf_ps_server {
    rf_fabric *fabric;
    rf_ps_server_options opt;
    char host[256];
    uint16_t port;
    uint64_t incarnation;
    rf_topology *topo;
    rf_binding binding;
    rf_listener *listener;
    rf_cq *cq;
    ps_arena arena; /* service thread only */

    ps_shard *shards; /* service thread only */
    uint32_t num_shards, cap_shards;
    uint32_t *hash; /* bucket heads, hash_cap entries */
    uint32_t hash_cap;

    ps_server_conn *conns;     /* live, service thread only */
    ps_server_conn *graveyard; /* closed, freed when the CQ drains */
    uint32_t num_conns;

    pthread_t listen_thread, service_thread;
    bool listen_started, service_started;

    pthread_mutex_t mu;
    pthread_cond_t cond;
    ps_pending *pending; /* mu */
    uint32_t unadmitted; /* mu: connections not yet clients (admit.c) */
    uint32_t clients;    /* mu: connections live (said HELLO) */
    ps_addr_count addrs[PS_SRV_MAX_UNADMITTED]; /* mu: unadmitted ones */
    uint32_t known_unadmitted; /* mu: known tasks setting up (admit.c) */
    /* mu: task tokens (ps_server_token.c): each client id's, and the
     * chief role's (chief.id UINT32_MAX until a chief said HELLO) */
    ps_binding *binds;
    uint32_t num_binds, cap_binds;
    ps_binding chief;
    bool job_token; /* RF_JOB_TOKEN was set at the start */
    /* The ps's life without its chief (ps_server_life.c, service thread):
     * chief connections live, since when none is (0: one is, or none
     * ever was), when the ps started; why it stopped by itself (mu) */
    uint32_t chiefs_live;
    bool chief_seen;
    long long chief_gone_ms, started_ms;
    char stop_why[512];
    rf_ps_server_counters counters; /* mu */
    long long next_expiry_check;    /* service thread */
    bool stop;                      /* mu: threads must exit */
    bool done;                      /* mu: the service thread exited */
    rf_status status;               /* mu: why it exited (RF_OK: shutdown) */
    bool shutdown; /* service thread: a SHUTDOWN was answered */
    /* ps_server_sparse.c: the indices of the sparse push being applied,
     * room for the largest max_push_rows of any table (service thread) */
    int64_t *sparse_idx;
    uint32_t sparse_cap;
    /* ps_server_sparse_sync.c: bytes the sync tables' accumulators hold,
     * within opt.max_accum_bytes (service thread) */
    size_t accum_bytes;
    /* rf_ps_server_counters' dense_applies and stale_dropped: the service
     * thread adds with __atomic_fetch_add, get_counters loads (no lock on
     * the push path) */
    uint64_t dense_applies, stale_dropped;
    /* ps_server_members.c (service thread): when each client id's last
     * connection closed without a LEAVE (0: it did not), and the members
     * bitmap's words in the globals block */
    long long member_gone_ms[RF_PS_MAX_DONE_WORKERS];
    uint64_t *members;
    /* the shard ledger (ps task 0 only; service thread: SHARD_REQ, and a
     * member's LEAVE or expiry returns its shards) */
    ps_ledger ledger;
    /* LEDGER_REQ (ps_server_ledger.c): the saved form being read by the
     * chief (taken at offset 0), and the one being loaded */
    unsigned char *ledger_snap, *ledger_stage;
    uint32_t ledger_snap_len, ledger_stage_len, ledger_stage_total;
};

/* Connection memory: receives (PS_SRV_RECV_DEPTH x PS_REQ_MAX), reply
 * buffers (PS_SRV_REPLY_BUFS x PS_MSG_MAX), ack staging words. */
static inline size_t ps_conn_stage_off(void)
{
    return (size_t)PS_SRV_RECV_DEPTH * PS_REQ_MAX +
           (size_t)PS_SRV_REPLY_BUFS * PS_MSG_MAX;
}
#define PS_CONN_MEM_LEN (ps_conn_stage_off() + 8u * PS_SRV_RECV_DEPTH)

/* ps_server.c */
/* Logs (naming the connection's state), counts as a protocol drop (unless
 * the connection was refused: closing) and closes. */
void ps_conn_drop(ps_server_conn *c, const char *why);
/* The same for a drop the caller counted otherwise (never as protocol). */
void ps_conn_drop_counted(ps_server_conn *c, const char *why);

/* ps_server_conn_state.c: the state table. */
const char *ps_conn_state_name(ps_conn_state st);
/* Whether a state handles control message type, serves pushes, is bound by
 * the handshake deadline, may change to another. */
bool ps_conn_state_accepts(ps_conn_state st, uint16_t type);
bool ps_conn_state_serves_pushes(ps_conn_state st);
bool ps_conn_state_in_handshake(ps_conn_state st);
bool ps_conn_state_may_follow(ps_conn_state from, ps_conn_state to);
/* Why a control message of type is refused in st (the drop's reason). */
void ps_conn_state_refusal(ps_conn_state st, uint16_t type, char *buf,
                           size_t len);
/* The one place c->state changes: logs the transition and why (debug; an
 * error when the table does not allow it). */
void ps_conn_set_state(ps_server_conn *c, ps_conn_state to, const char *why);
/* Before dispatch: true if c's state handles a control message of type
 * (or a push), else drops c with the state's refusal. */
bool ps_conn_accepts(ps_server_conn *c, uint16_t type);
bool ps_conn_accepts_push(ps_server_conn *c);

/* ps_server_admit.c. Listener thread: NULL if a new connection from peer
 * may set up, else why not (in why, counted). */
const char *ps_admit_connection(rf_ps_server *s, const char *peer, bool known,
                                char *why, size_t len);
/* A connection closes: it was a client (live) or not, admitted as known or
 * not. */
void ps_admit_release(rf_ps_server *s, const char *peer, bool client,
                      bool known);
/* At HELLO: takes a client slot; false (counted) when max_workers are. */
bool ps_admit_client(ps_server_conn *c);
/* Service thread: drops connections past their deadline_ms. */
void ps_admit_expire(rf_ps_server *s);
/* counters field at offset, + 1 */
void ps_count(rf_ps_server *s, size_t offset);
#define PS_COUNT(s, field) ps_count((s), offsetof(rf_ps_server_counters, field))
bool ps_srv_stopping(rf_ps_server *s);
void ps_conn_label(const ps_server_conn *c, char *buf, size_t len);

/* ps_server_token.c. Listener: whether h's token matches its id's binding
 * (or the job token); why h may not connect (an "auth: " text, logged and
 * counted by the caller), or NULL. Service thread at HELLO: binds c's id
 * (and the chief's role) to its token, logging a takeover; why not (the
 * refusal's text), or NULL. At LEAVE: forgets id's binding. */
bool ps_token_known(rf_ps_server *s, const ps_conn_hello *h);
const char *ps_token_admit(rf_ps_server *s, const ps_conn_hello *h,
                           const char *peer, char *text, size_t len);
const char *ps_token_bind(ps_server_conn *c, char *text, size_t len);
void ps_token_forget(rf_ps_server *s, uint32_t id);

/* ps_server_life.c (service thread): a chief connection went live or
 * closed; RF_OK, or the status the ps stops with (the why logged and kept
 * in stop_why) when its chief has been gone too long. */
void ps_life_chief(rf_ps_server *s, bool live);
rf_status ps_life_check(rf_ps_server *s);

/* ps_server_ctrl.c: handles one received control message of len bytes;
 * false if the connection was dropped. */
/* Members (ps_server_members.c, service thread): a client id is one from
 * its HELLO until its LEAVE, or until its connection has been closed for
 * member_timeout_ms (checked by ps_members_expire). */
void ps_members_init(rf_ps_server *s);
void ps_members_join(rf_ps_server *s, uint32_t id);
void ps_members_leave(rf_ps_server *s, uint32_t id);
void ps_members_gone(rf_ps_server *s, uint32_t id);
void ps_members_expire(rf_ps_server *s);

bool ps_ctrl_handle(ps_server_conn *c, const unsigned char *msg, size_t len);
/* Sends a reply prepared in the buffer from ps_ctrl_reply_buf. */
unsigned char *ps_ctrl_reply_buf(ps_server_conn *c);
bool ps_ctrl_send(ps_server_conn *c, const unsigned char *buf, size_t len);

/* Replies with an ERROR_REPLY {status, text} (logged); false if the
 * connection was dropped. */
bool ps_ctrl_reply_error(ps_server_conn *c, uint32_t req_id, rf_status status,
                         const char *text);
/* Sends the ERROR_REPLY and closes the connection once it is sent. */
void ps_ctrl_refuse(ps_server_conn *c, uint32_t req_id, rf_status status,
                    const char *text);
/* ps_server_ledger.c: LEDGER_REQ, the chief reading or loading ps task
 * 0's shard ledger a page at a time. */
bool ps_ctrl_ledger(ps_server_conn *c, uint32_t req_id,
                    const unsigned char *msg, size_t len);

/* ps_server_auth.c: the connect-time checks (secret configured on both
 * sides, roles bound to the cluster spec): NULL if the hello may proceed,
 * else the short reject text (PS_REJECT_AUTH...) with the full reason,
 * naming peer, logged. */
const char *ps_auth_admit(rf_ps_server *s, const ps_conn_hello *h,
                          const char *peer, char *text, size_t len);
/* AUTH_REQ (waiting for the auth request) and AUTH_PROOF (waiting for
 * the proof); false if the connection was dropped or refused. */
bool ps_auth_on_req(ps_server_conn *c, uint32_t req_id,
                    const unsigned char *msg, size_t len);
bool ps_auth_on_proof(ps_server_conn *c, uint32_t req_id,
                      const unsigned char *msg, size_t len);

/* ps_server_shards.c */
rf_status ps_shards_init(rf_ps_server *s);
void ps_shards_free(rf_ps_server *s);
ps_shard *ps_shard_find(rf_ps_server *s, const char *name, uint32_t part);
/* Creates a shard (record allocated, slots and scalars initialised). */
rf_status ps_shard_create(rf_ps_server *s, const ps_spec *spec, ps_shard **out);
/* The client's inbox for a trainable shard, allocated on first use. */
rf_status ps_shard_inbox(rf_ps_server *s, ps_shard *sh, uint32_t client_id,
                         ps_inbox **out);
ps_inbox *ps_shard_find_inbox(ps_shard *sh, uint32_t client_id);
/* Fills a directory entry (allocating the client's inbox if trainable). */
rf_status ps_shard_entry(rf_ps_server *s, ps_shard *sh, uint32_t client_id,
                         ps_entry *e);
/* A word of sh's record. */
static inline uint64_t *ps_shard_word(ps_shard *sh, uint64_t off)
{
    return (uint64_t *)(void *)(sh->rec_ptr + off);
}
/* ps_server_apply.c: an update of sh's record under its seqlock: begin
 * makes the version odd (an acquire-release exchange keeps the update's
 * stores after it), end even again (a release store). */
void ps_shard_write_begin(ps_shard *sh);
void ps_shard_write_end(ps_shard *sh);
/* Inside the write: the optimizer's step is finished, its scalars stored
 * into the record and the update counted. */
void ps_shard_step_done(ps_shard *sh, rf_optim_scalars *sc);
/* Counts a request: done and rows if ok, refused if not. */
void ps_count_request(rf_ps_server *s, uint64_t *done, uint64_t *rows,
                      uint64_t *refused, bool ok, uint64_t n);
/* ps_server_apply.c: a write_imm completion of len bytes; false if the
 * connection was dropped. */
bool ps_apply_push(ps_server_conn *c, uint32_t imm, uint32_t len);
/* One optimizer update of sh with grad under the record's seqlock (beta
 * powers and the update count advanced). */
rf_status ps_apply_update(ps_shard *sh, const float *grad);
/* The on_apply trace callback for an update of sh that started at t0 (the
 * shard had `done` updates before it). */
void ps_apply_traced(ps_server_conn *c, const ps_shard *sh, uint64_t t0,
                     uint64_t done, uint32_t len);
/* Writes the ack word into the client's ack ring (write_imm echoing imm);
 * false if the connection was dropped. */
bool ps_send_ack(ps_server_conn *c, uint32_t imm, uint64_t word);

/* ps_server_sparse.c: room for a push of max_push_rows indices (at
 * shard creation, so a push allocates nothing), and a push to a table
 * (already checked: trainable, inbox). */
rf_status ps_sparse_reserve(rf_ps_server *s, uint32_t max_push_rows);
bool ps_sparse_push(ps_server_conn *c, ps_shard *sh, ps_inbox *ib, uint32_t imm,
                    uint32_t len);
/* Checks a push's count against max_push_rows and copies its indices out of
 * the inbox into s->sparse_idx, each checked against the shard's rows
 * (RF_ERR_INVALID_ARG naming the first bad one). */
rf_status ps_sparse_copy_indices(rf_ps_server *s, const ps_shard *sh,
                                 const ps_inbox *ib, uint64_t count);
/* Copies count little-endian indices from src into s->sparse_idx, each
 * checked against sh's rows; the first bad one is refused
 * ("ps <i>: <what> '<name>' part <p> refused: index ... is outside its ...
 * rows") and its position stored in *bad (if bad is not NULL). */
rf_status ps_indices_copy(rf_ps_server *s, const ps_shard *sh,
                          const unsigned char *src, uint64_t count,
                          const char *what, uint64_t *bad);
/* The update of n checked rows idx of sh with grad (n rows), each row
 * owned (its values record's version odd) and its records sealed at the
 * next version (Adam: every row, row by row), the shard's version and
 * update count advanced. */
rf_status ps_sparse_apply_rows(ps_shard *sh, const int64_t *idx, size_t n,
                               const float *grad);

/* ps_server_sparse_sync.c: a sync table's accumulator (created with its
 * ps_sync_acc, freed with it) and a push to a sync table (already checked:
 * trainable, inbox). */
rf_status ps_rows_acc_create(ps_shard *sh);
void ps_rows_acc_free(rf_ps_server *s, ps_shard *sh);
/* Forgets the touched rows (their memory kept, still charged). */
void ps_rows_acc_clear(ps_shard *sh);
bool ps_sparse_sync_push(ps_server_conn *c, ps_shard *sh, ps_inbox *ib,
                         uint32_t imm, uint32_t len);

/* ps_server_gather.c: a gather request (a write_imm of
 * PS_GATHER_REQ_BYTES) to a table (already checked: trainable, inbox). */
bool ps_gather_serve(ps_server_conn *c, ps_shard *sh, ps_inbox *ib,
                     uint32_t imm);

/* ps_server_sync.c */
rf_status ps_sync_create(ps_shard *sh);
void ps_sync_free(rf_ps_server *s, ps_shard *sh);
/* Empties sh's accumulator for step: nothing taken, from any client. */
void ps_sync_reset(ps_shard *sh, int64_t step);
/* After the update of step's gradients: counts it, empties the
 * accumulator for step + 1 and publishes step + 1 in the shard's step word;
 * returns the ack word of the push that completed the step. */
uint64_t ps_sync_publish(ps_shard *sh, int64_t step);
/* A sync push's tag against the shard's step word (the accumulator emptied
 * first when the chief set another step): true when the gradient is to be
 * taken (the tag is the accumulator's step and the client has none in it
 * yet); otherwise it was answered (stale: counted, acked with the stale
 * bit; a client's second gradient: acked, dropped) or the connection
 * dropped (a tag ahead), and *ret is what the push handler returns. */
bool ps_sync_gate(ps_server_conn *c, ps_shard *sh, ps_inbox *ib, uint32_t imm,
                  int64_t tag, bool *ret);
/* A push to a sync shard (already checked: trainable, inbox, length). */
bool ps_sync_push(ps_server_conn *c, ps_shard *sh, ps_inbox *ib, uint32_t imm,
                  uint32_t len);
/* One log line per sync shard: its step, updates, stale gradients. */
void ps_sync_log_stats(rf_ps_server *s);

/* The most known tasks' connections setting up at once. */
static inline uint32_t ps_known_unadmitted_max(const rf_ps_server *s)
{
    uint32_t w = (uint32_t)s->opt.max_workers;
    return w < PS_SRV_MAX_KNOWN_UNADMITTED ? w : PS_SRV_MAX_KNOWN_UNADMITTED;
}

#endif
