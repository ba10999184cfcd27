/* rdmaflow/ps.h: the parameter-server data plane (DESIGN.md section 4). A ps
 * task runs an rf_ps_server: it knows nothing about the model, starts with
 * an empty arena of large NUMA-bound registered chunks and serves a
 * directory of shards to every worker. A worker task uses an rf_ps_client:
 * it connects to every ps task, creates (chief) or looks up (others) its
 * variables' shards, and reads and updates them with one-sided operations.
 *
 * Shard record (in the ps arena, 64-byte aligned, offsets from its start):
 *   0   init flag (u64: 1 once the chief wrote the initial values)
 *   8   version   (u64 seqlock: odd while an update is being written)
 *   16  lock      (u64: 0 free, else the holder's token; the _locked
 *                  read-modify-writes take it with cmp_swap)
 *   24  reserved
 *   32  beta1_power, beta2_power (2 x f32: Adam's bias-correction powers,
 *       one pair per shard, advanced by every apply of that shard)
 *   40  updates   (u64: number of optimizer applies done)
 *   48  sync step (int64, sync-replicas shards: the step whose gradients
 *       the accumulator takes; the ps advances it after each averaged
 *       update, which publishes that update)
 *   56  stale     (u64, sync-replicas shards: gradients dropped as stale)
 *   64  values, then each optimizer slot, each 64-byte aligned.
 * Globals block (4096 bytes per ps, zero when the ps starts; the cluster's
 * are ps task 0's): global_step, an int64 at offset 0, the workers-done
 * bitmap, RF_PS_DONE_WORDS u64 from offset 8 (rf_ps_worker_done sets the
 * bit of its client id with CMP_AND_SWP), and from offset 64 the stale
 * synchronous parallel clocks, RF_PS_MAX_CLOCKS int64, one per client id
 * (rf_ps_clock_advance: FETCH_AND_ADD; rf_ps_clocks_read: one READ),
 * and from offset 3648 the members bitmap, RF_PS_DONE_WORDS u64: the bit
 * of every client id that said HELLO and has not left (LEAVE) nor been
 * disconnected longer than member_timeout_ms. The ps's service thread
 * writes it with the CPU only (never a NIC atomic: on a real NIC CPU
 * writes and IBV_ATOMIC_HCA atomics to one word are not coherent, so it is
 * kept apart from the NIC-written done bitmap); clients READ it
 * (rf_ps_members_read); at offset 3712 the sync-replicas chief epoch, a
 * u64 the chief bumps with FETCH_AND_ADD (rf_ps_sync_epoch_bump).
 *
 * Pushes: the client offers one call per thing it puts on the wire, each
 * in a dense and a rows (sparse) form, and no mode: which one a training
 * step uses is the caller's choice (the session's push strategies,
 * session/push_*.c, with rf_session_options.apply).
 *   Into the inbox (rf_ps_push_inbox, rf_ps_push_sparse_inbox; TensorFlow's
 *     default placement, apply=ps): the worker WRITE_WITH_IMMs its gradient
 *     into its own inbox for the shard (in the ps arena); the ps's apply
 *     thread runs rf_optim_apply on the record and acknowledges with a
 *     WRITE_WITH_IMM of the new version into the worker's ack ring. One
 *     push per shard may be outstanding per worker; pushes to different
 *     shards overlap.
 *   Read-modify-write (rf_ps_update_rmw, rf_ps_update_sparse_rmw;
 *     one-sided, zero ps CPU, apply=worker): READ the record, apply
 *     locally, WRITE it back; the _locked forms (use_locking) take the
 *     shard's lock word with CMP_AND_SWP first and release it (fenced)
 *     after the writes.
 * With one worker both give bitwise the values of rf_optim_apply run
 * locally with the same gradients.
 *   Into the accumulator (rf_ps_push_sync, rf_ps_push_sparse_sync; sync
 *     replicas, TensorFlow's SyncReplicasOptimizer, a shard created with
 *     replicas_to_aggregate N > 0): the gradient is tagged
 *     with the worker's local step; the ps's accumulator for the shard drops
 *     (and counts) a gradient tagged below the shard's sync step, adds one
 *     tagged with it (one per worker and step), and when N were added
 *     applies their mean once with the shard's optimizer and advances the
 *     sync step; a tag above the step is a protocol error (the connection
 *     is dropped). Every push is acknowledged, accepted or stale.
 *
 * A client may be shared by threads: its calls are serialised (a wait holds
 * the client; a read-set wait only while it handles completions). Errors are
 * rf_status with rf_error_message() explaining them; the library never exits.
 * RF_ERR_DISCONNECTED / RF_ERR_UNAVAILABLE: a ps went away (call
 * rf_ps_client_reconnect); RF_ERR_ABORTED: a ps restarted (a new incarnation)
 * and its variables are gone until the chief recreates and restores them. */
#ifndef RDMAFLOW_PS_H
#define RDMAFLOW_PS_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/secret.h"
#include "rdmaflow/status.h"
#include "rdmaflow/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest variable name (bytes, without the terminating NUL). */
#define RF_PS_MAX_NAME 255
/* Most ps tasks a client connects to (rf_ps_client_connect). */
#define RF_PS_MAX_TASKS 4096
/* Most replicas a sync-replicas shard may have (total_num_replicas). */
#define RF_PS_MAX_SYNC_REPLICAS 1024

/* ---- ps server ---------------------------------------------------------- */

typedef struct rf_ps_server rf_ps_server;

typedef struct rf_ps_server_options {
    int task_index;     /* this ps task's index, for logs (>= 0) */
    size_t chunk_bytes; /* arena chunk; 0: RF_PS_CHUNK_MB (default 64 MiB) */
    size_t max_bytes;   /* arena limit; 0: RF_PS_ARENA_MAX_MB (0 = none) */
    int max_workers;    /* concurrent worker connections; 0: 64 */
    /* A connection must be a client (authenticated, with a secret, and its
     * HELLO answered) within this many ms or is dropped; 0:
     * RF_PS_HANDSHAKE_TIMEOUT_MS (default 10000). Until then it holds no
     * client slot; at most 32 such connections at once, 16 from one
     * address, besides at most 32 (max_workers if fewer) of tasks the ps knows (their
     * task token matches their id's, ps/ps_server_token.c). */
    int handshake_timeout_ms;
    uint64_t incarnation; /* 0: a random 64-bit id (tests may force one) */
    /* NULL, or called by the service thread once per apply=ps update
     * while that shard has had fewer than trace_updates updates (0: all),
     * with ctx = on_apply_ctx, e.g. to record it as a trace span (the ps
     * knows no graph or trace): name "apply <var>", args the JSON members
     * "\"bytes\":N,\"worker\":W", the update's start and duration on
     * rf_now_ns()'s clock, and the shard's update count before it. */
    void (*on_apply)(void *ctx, const char *name, const char *args,
                     uint64_t t0_ns, uint64_t dur_ns, uint64_t update);
    void *on_apply_ctx;
    uint64_t trace_updates;
    /* NULL: no authentication (a client that offers it is refused).
     * Otherwise every connection must complete the mutual HMAC-SHA256
     * challenge-response with this secret before any request but the
     * handshake's is served (a client without one is refused). Must
     * outlive the server. */
    const rf_cluster_secret *secret;
    /* Role binding to the cluster spec: when bind_roles, client ids must
     * be below num_workers (the training workers, chief included) and only
     * chief_id may claim the chief flag (create shards, SHUTDOWN). */
    bool bind_roles;
    uint32_t chief_id;
    uint32_t num_workers;
    /* Members (elastic workers): a client id is a member of the job from
     * its HELLO until it sends LEAVE (rf_ps_leave) or until its connection
     * has been closed for member_timeout_ms (0: 10000); the bitmap is in
     * the globals block (rf_ps_members_read). */
    int member_timeout_ms;
    /* NULL: listen on host. Otherwise the local address the listener binds
     * ("0.0.0.0" or "::": every address), while host still chooses the
     * arena's NUMA node (and the caller opened the fabric on host). */
    const char *listen_host;
    /* Bound on the inbox one client gets for one embedding table (a sparse
     * push of max_push_rows rows: count, indices, gradient rows); a CREATE
     * implying more is refused with RF_ERR_INVALID_ARG saying so. 0:
     * RF_PS_MAX_INBOX_MB (default 64 MiB). */
    size_t max_inbox_bytes;
    /* Bound on what the accumulators of this ps's sync-replicas tables
     * hold together (per touched row its sum and count, and a row map per
     * table; rf_ps_push_sparse_sync): a push that would pass it is refused
     * with an error ack, nothing changed. 0: RF_PS_MAX_ACCUM_MB (default
     * 256 MiB). */
    size_t max_accum_bytes;
    /* A ps's life without its chief (0: unbounded). Once a chief has said
     * HELLO, a ps with no chief connection for chief_gone_exit_ms stops by
     * itself; one that never saw a chief stops idle_exit_ms after its
     * start. rf_ps_server_join then returns RF_ERR_TIMEOUT saying why. */
    int chief_gone_exit_ms;
    int idle_exit_ms;
} rf_ps_server_options;

/* Listens on host:port (port 0: a free port, see rf_ps_server_port) and
 * starts serving on fabric, which must stay open until rf_ps_server_stop.
 * The arena's NUMA node is chosen from host (rf_topology_choose, RF_BIND). */
RF_API rf_status rf_ps_server_start(rf_fabric *fabric, const char *host,
                                    uint16_t port,
                                    const rf_ps_server_options *options,
                                    rf_ps_server **out);
RF_API uint16_t rf_ps_server_port(const rf_ps_server *server);
RF_API uint64_t rf_ps_server_incarnation(const rf_ps_server *server);
/* The NUMA node the arena (and the service threads) are bound to, -1 when
 * not bound (RF_BIND=none), and in *why (may be NULL) how it was chosen. */
RF_API int rf_ps_server_numa_node(const rf_ps_server *server, const char **why);
/* Blocks until the chief sent SHUTDOWN (RF_OK) or the server failed or
 * stopped without its chief (its status; chief_gone_exit_ms, idle_exit_ms).
 * Does not free anything. */
RF_API rf_status rf_ps_server_join(rf_ps_server *server);
/* Connections this ps refused or dropped, by reason, since it started. */
typedef struct rf_ps_server_counters {
    uint64_t refused_auth;      /* no secret, a wrong one, or a role (client
                                   id, chief) the cluster does not give it */
    uint64_t refused_busy;      /* too many connections setting up, in all
                                   or from one address */
    uint64_t refused_full;      /* max_workers clients connected already */
    uint64_t refused_duplicate; /* its client id is connected already */
    uint64_t dropped_idle;      /* not a client within the handshake time */
    uint64_t dropped_protocol;  /* a malformed, oversized, unexpected or
                                   unversioned message */
    /* Embedding tables (sparse inbox pushes). */
    uint64_t sparse_applies; /* sparse pushes applied */
    uint64_t sparse_rows;    /* rows they applied */
    uint64_t sparse_refused; /* refused with an error ack (a count above
                                max_push_rows, an index out of range, a
                                sync table's accumulator bound) */
    /* ps-side gathers (rf_ps_gather_rows): requests served, rows copied,
     * requests refused with an error ack (nothing copied). */
    uint64_t gather_requests;
    uint64_t gather_rows;
    uint64_t gather_refused;
    /* Dense gradient pushes applied (apply=ps) or taken into a sync
     * accumulator; sync pushes (dense or sparse) dropped as stale, their
     * step tag behind the shard's. */
    uint64_t dense_applies;
    uint64_t stale_dropped;
    /* Now: clients connected (said HELLO), and the bytes of the arena's
     * chunks (shard records, inboxes, the globals block). */
    uint64_t clients;
    uint64_t arena_bytes;
} rf_ps_server_counters;
RF_API void rf_ps_server_get_counters(rf_ps_server *server,
                                      rf_ps_server_counters *out);
/* Stops serving (closing every connection), joins the threads and frees the
 * server and its arena. Call once, after or instead of join. */
RF_API void rf_ps_server_stop(rf_ps_server *server);

/* ---- worker client ------------------------------------------------------ */

typedef struct rf_ps_client rf_ps_client;
typedef struct rf_ps_var rf_ps_var;

typedef struct rf_ps_client_options {
    /* Stable id of this client, unique in the cluster: the worker task index
     * (a TF_CONFIG "chief" task needs an id distinct from every worker's).
     * Keys the client's inboxes on the ps tasks. */
    uint32_t client_id;
    bool is_chief;          /* may create shards and send SHUTDOWN */
    int connect_timeout_ms; /* deadline to reach every ps; 0: 30000 */
    int op_timeout_ms;      /* bound on any one wait; 0: 30000 */
    int lock_timeout_ms;    /* the _locked calls' spin bound; 0: 10000 */
    int lookup_timeout_ms;  /* rf_ps_lookup wait for the chief; 0: 30000 */
    /* NULL: no authentication. Otherwise every ps task must have the
     * same secret; a ps without one, or with another, fails the connect
     * with RF_ERR_AUTH (not retried). Must outlive the client. */
    const rf_cluster_secret *secret;
    /* May be NULL: when a connect or reconnect fails with
     * RF_ERR_UNAVAILABLE, gets the first ps task that did not come up (what
     * a readiness wait names). */
    int *unreachable;
} rf_ps_client_options;

/* Connects to every ps task ("host:port" each; ps task i = ps_addrs[i]),
 * retrying with exponential backoff until connect_timeout_ms: a worker may
 * start before its ps tasks. Fetches each ps's directory and incarnation. A
 * task that never answers: RF_ERR_UNAVAILABLE naming it ("ps task 1
 * (127.0.0.1:2223) did not come up within 30 s"). */
RF_API rf_status rf_ps_client_connect(rf_fabric *fabric,
                                      const char *const *ps_addrs,
                                      size_t num_ps,
                                      const rf_ps_client_options *options,
                                      rf_ps_client **out);
/* Closes every connection and frees the client, its var handles and the
 * regions registered with rf_ps_client_register. */
RF_API void rf_ps_client_close(rf_ps_client *client);
RF_API size_t rf_ps_client_num_ps(const rf_ps_client *client);
RF_API uint64_t rf_ps_client_incarnation(const rf_ps_client *client,
                                         size_t ps_task);
/* The fabric provider carrying the connection to ps_task (rf_ep_provider:
 * what RF_FABRIC=auto chose for that peer), "" before the first one. */
RF_API const char *rf_ps_client_provider(const rf_ps_client *client,
                                         size_t ps_task);
/* Reconnects every connection that failed (all of them if force), with the
 * same backoff and deadline as connect, and refetches directories. If a ps
 * came back with a different incarnation its var handles become stale (every
 * operation on them returns RF_ERR_ABORTED until rf_ps_create/rf_ps_lookup is
 * called again for them) and this returns RF_ERR_ABORTED naming the tasks;
 * the client itself is connected and usable. */
RF_API rf_status rf_ps_client_reconnect(rf_ps_client *client, bool force);

/* Registers a block of worker memory (tensors to pull into, gradients to
 * push from) once: *out stays valid until rf_ps_client_close or
 * rf_ps_client_deregister. */
RF_API rf_status rf_ps_client_register(rf_ps_client *client, void *addr,
                                       size_t len, rf_mr **out);
/* The same for the reply buffers of rf_ps_gather_rows: also registered
 * remote-writable, so the ps can WRITE the rows it gathered there (the
 * only worker memory a ps may write besides the client's ack rings; keep
 * nothing else in it). rf_ps_client_deregister releases it. */
RF_API rf_status rf_ps_client_register_reply(rf_ps_client *client, void *addr,
                                             size_t len, rf_mr **out);
RF_API void rf_ps_client_deregister(rf_ps_client *client, rf_mr *mr);

/* What a shard is. trainable shards must be float32 and have a valid
 * optimizer config (its slot layout is allocated beside the values);
 * non-trainable ones (any dtype) have no slots and cannot be pushed to. */
typedef struct rf_ps_shard_spec {
    const char *name; /* 1..RF_PS_MAX_NAME bytes */
    uint32_t part;    /* partition index (0 when not partitioned) */
    rf_dtype dtype;
    rf_shape shape; /* fully known */
    bool trainable;
    rf_optim_config optim; /* read only when trainable */
    /* Sync replicas (trainable only; both 0: an async shard): gradients
     * are averaged over replicas_to_aggregate workers per step (>= 1) of
     * total_num_replicas (>= replicas_to_aggregate, at most
     * RF_PS_MAX_SYNC_REPLICAS) pushing;
     * a lookup with other counts is refused like another optimizer. */
    uint32_t replicas_to_aggregate, total_num_replicas;
    /* 0: an ordinary (dense) shard. A shard of rank >= 1 with
     * max_push_rows > 0 is an embedding table: row r (0 <= r < shape.dims[0])
     * is numel/dims[0] elements of the values (and of each slot), each
     * row of each field stored as a self-verifying row record (a version,
     * odd while a writer owns the row, and a CRC32C of the version and the
     * row before it; docs/DESIGN.md "Self-verifying rows"), and
     * each worker's inbox holds one sparse push of up to max_push_rows rows
     * (a count, the row indices, the gradient rows) instead of a dense
     * gradient. Part of the spec (lookup compares it). A table is
     * trainable and float32; it may be a sync-replicas shard
     * (replicas_to_aggregate > 0, compared by lookup as for a dense shard:
     * rf_ps_push_sparse_sync, the sparse accumulator of ps/ps_server_sync.c
     * bounded by rf_ps_server_options.max_accum_bytes). */
    uint32_t max_push_rows;
} rf_ps_shard_spec;

/* Chief: creates the shard on ps task ps_task (slots at their initial
 * values, beta powers at beta1/beta2, init flag clear, sync step 0, empty
 * accumulator). Creating a shard
 * that exists with the same spec returns it; with a different spec:
 * RF_ERR_INVALID_ARG naming both. Calling it again for a stale handle
 * refreshes the same handle. */
RF_API rf_status rf_ps_create(rf_ps_client *client, size_t ps_task,
                              const rf_ps_shard_spec *spec, rf_ps_var **out);
/* Others: finds the shard by name and part in ps_task's directory, waiting
 * up to lookup_timeout_ms for the chief to create it (RF_ERR_TIMEOUT). A
 * shard whose dtype, shape or optimizer differs from spec is refused with
 * RF_ERR_INVALID_ARG naming both. */
RF_API rf_status rf_ps_lookup(rf_ps_client *client, size_t ps_task,
                              const rf_ps_shard_spec *spec, rf_ps_var **out);

/* Facts about a handle (for --explain and checkpoints). */
typedef struct rf_ps_var_info {
    const char *name;
    uint32_t part;
    size_t ps_task;
    rf_dtype dtype;
    rf_shape shape;
    size_t values_bytes;  /* numel * dtype size */
    unsigned num_slots;   /* optimizer slots, each values_bytes */
    size_t record_bytes;  /* the whole record in the ps arena */
    size_t rmw_bytes;     /* what rf_ps_update_rmw READs and WRITEs back:
                             beta powers, values, slots and their padding */
    uint64_t remote_addr; /* record address on the ps */
    uint32_t rkey;
    /* Embedding tables (0 otherwise): rows (dims[0]), bytes per row, the
     * spec's max_push_rows; and any trainable shard's inbox bytes per
     * worker on its ps. */
    size_t rows, row_bytes;
    uint32_t max_push_rows;
    size_t inbox_bytes;
} rf_ps_var_info;
RF_API void rf_ps_var_get_info(const rf_ps_var *var, rf_ps_var_info *info);
/* What a shard of this spec will be on ps task ps_task before it exists
 * (--explain_only): the same sizes rf_ps_var_get_info gives once the ps
 * has created it (values, slots, record, apply=worker's READ/WRITE span);
 * remote_addr and rkey 0. RF_ERR_INVALID_ARG for a spec the ps would
 * refuse for its shape, dtype or optimizer. */
RF_API rf_status rf_ps_shard_spec_info(const rf_ps_shard_spec *spec,
                                       size_t ps_task, rf_ps_var_info *info);

/* ---- data operations ---------------------------------------------------- */

typedef enum rf_ps_field {
    RF_PS_FIELD_VALUES = 0,
    RF_PS_FIELD_SLOT0 = 1, /* slot i is RF_PS_FIELD_SLOT0 + i */
    RF_PS_FIELD_SCALARS = 1 + RF_OPTIM_MAX_SLOTS, /* 8 bytes: beta powers */
} rf_ps_field;

/* One transfer between a worker buffer (inside the registered region mr)
 * and a shard field. len must equal the field's size (values_bytes; 8 for
 * the scalars); anything else is refused before anything is posted. */
typedef struct rf_ps_xfer {
    rf_ps_var *var;
    rf_ps_field field;
    void *buf;
    size_t len;
    rf_mr *mr;
} rf_ps_xfer;

/* Pull: RDMA READs every transfer straight into its buffer, all reads to one
 * ps posted in one rf_post batch, one batch per ps, then waits for all. */
RF_API rf_status rf_ps_read(rf_ps_client *client, const rf_ps_xfer *xfers,
                            size_t n);
/* A prepared pull (the per-step read of every variable a worker needs):
 * transfers validated once, work requests built once, then posted every step
 * (one rf_post batch per ps, as rf_ps_read) and waited for one transfer at a
 * time, so compute can start on the first variables while later ones are in
 * flight. A set belongs to its client (destroy it before closing the
 * client). A handle refreshed by rf_ps_create / rf_ps_lookup after a ps
 * restart is picked up by the next post; a stale one fails the post
 * (RF_ERR_ABORTED, as rf_ps_read). */
typedef struct rf_ps_read_set rf_ps_read_set;
/* Checks every transfer as rf_ps_read does (refusing the set, naming the
 * transfer, if one is bad) and builds the work requests. n may be 0. */
RF_API rf_status rf_ps_read_set_create(rf_ps_client *client,
                                       const rf_ps_xfer *xfers, size_t n,
                                       rf_ps_read_set **out);
/* Waits (bounded by op_timeout_ms) for anything still in flight, then frees
 * the set. No wait on it may be running. NULL is ignored. */
RF_API void rf_ps_read_set_destroy(rf_ps_read_set *set);
/* Posts every read. The previous post must have been waited for entirely
 * (rf_ps_read_set_wait_all, or rf_ps_read_set_wait of every transfer) --
 * else RF_ERR_INVALID_ARG. A ps that is not connected or a stale handle
 * fails the post before anything is posted (as rf_ps_read); a ps refusing
 * the work part-way fails the transfers it did not take. Either way every
 * transfer not posted gets that failure as its status, the others stay in
 * flight, the first failure is returned, and the post must still be waited
 * for before the next one (the failed transfers' waits return at once).
 * Allocates nothing. */
RF_API rf_status rf_ps_read_set_post(rf_ps_read_set *set);
/* Waits for transfer i of the last post (any thread; several threads may
 * wait for different transfers at once, each call is serialised on the
 * client like every other call, but the client is held only while
 * completions are handled, so a thread whose transfer arrived returns while
 * others still wait). Bounded by op_timeout_ms: then RF_ERR_TIMEOUT and the
 * connection to that transfer's ps is closed (its transfers fail; call
 * rf_ps_client_reconnect). Returns that transfer's status (RF_OK once
 * complete; a failure names the variable and the ps). Calling it again for
 * a completed transfer returns its status at once. i out of range, or no
 * post yet: RF_ERR_INVALID_ARG. Allocates nothing. */
RF_API rf_status rf_ps_read_set_wait(rf_ps_read_set *set, size_t i);
/* Waits for every transfer of the last post (one op_timeout_ms bound for
 * all); returns the first failure by transfer index. RF_OK if nothing was
 * posted yet. */
RF_API rf_status rf_ps_read_set_wait_all(rf_ps_read_set *set);

/* WRITEs the buffers into the shards (chief: initial values, restores). */
RF_API rf_status rf_ps_write(rf_ps_client *client, const rf_ps_xfer *xfers,
                             size_t n);
/* Chief: writes the values (field RF_PS_FIELD_VALUES) and then sets each
 * shard's init flag, ordered after its values on the same connection. */
RF_API rf_status rf_ps_init_values(rf_ps_client *client,
                                   const rf_ps_xfer *xfers, size_t n);
/* Non-chief: polls the init flags with READs every poll_ms until all are set
 * or timeout_ms passed; then RF_ERR_TIMEOUT naming the uninitialised
 * variables. */
RF_API rf_status rf_ps_wait_initialized(rf_ps_client *client,
                                        rf_ps_var *const *vars, size_t n,
                                        int poll_ms, int timeout_ms);

/* Where a training step applies its gradients (rf_session_options.apply;
 * the session's push strategy picks the calls below from it: no push call
 * of the client takes it). */
typedef enum rf_ps_apply_mode {
    RF_PS_APPLY_PS = 0, /* default: the ps applies (the inbox pushes) */
    RF_PS_APPLY_WORKER, /* one-sided: the read-modify-writes */
} rf_ps_apply_mode;

/* Dense pushes: grads are gradients (field RF_PS_FIELD_VALUES, float32,
 * values_bytes each, float aligned, no shard twice) of trainable async
 * dense shards (a sync-replicas shard is refused: rf_ps_push_sync; an
 * embedding table: the sparse forms below). */
/* Into the inbox (the ps applies): per shard one WRITE_WITH_IMM of the
 * gradient into this worker's inbox on its ps, one batch per ps; returns
 * once posted. A gradient buffer may be reused once rf_ps_push_wait
 * returned, and a second push to a shard first waits for the previous
 * one's ack. */
RF_API rf_status rf_ps_push_inbox(rf_ps_client *client, const rf_ps_xfer *grads,
                                  size_t n);
/* Read-modify-write (the worker applies, no ps CPU): per shard a READ of
 * the record from its beta powers to its end, rf_optim_apply on the copy,
 * a WRITE back and a FETCH_AND_ADD of the version (+2), every shard
 * advancing together, one batch per ps and round; completes every update
 * before returning. Two workers updating one shard at once may lose an
 * update (Hogwild!). */
RF_API rf_status rf_ps_update_rmw(rf_ps_client *client, const rf_ps_xfer *grads,
                                  size_t n);
/* rf_ps_update_rmw holding each shard's lock word: CMP_AND_SWP 0 -> this
 * client's token first (held elsewhere: retried after a jittered backoff
 * until lock_timeout_ms, then RF_ERR_TIMEOUT), the version made odd while
 * the copy is applied, the lock released with a fenced CMP_AND_SWP after
 * the WRITE (finding another token there: RF_ERR_CORRUPT). No lock is held
 * while waiting for another, so two workers never deadlock. */
RF_API rf_status rf_ps_update_rmw_locked(rf_ps_client *client,
                                         const rf_ps_xfer *grads, size_t n);
/* Into the accumulator (sync replicas): pushes gradients (as
 * rf_ps_push_inbox) of sync-replicas shards (an async shard is refused)
 * into their accumulators, tagged with local_step (>= 0): per shard a
 * WRITE of the tag into the inbox, then the WRITE_WITH_IMM of the
 * gradient, one batch per ps; returns once posted.
 * rf_ps_push_wait waits for the acknowledgements (accepted or stale: see
 * rf_ps_sync_counts). */
RF_API rf_status rf_ps_push_sync(rf_ps_client *client, const rf_ps_xfer *grads,
                                 size_t n, int64_t local_step);
/* Waits for the acknowledgements of every outstanding inbox or sync
 * push. The first failure is returned (every push is still waited for). */
RF_API rf_status rf_ps_push_wait(rf_ps_client *client);
/* Sync pushes of this client acknowledged so far: taken by an accumulator
 * (accepted) and dropped as stale. Either may be NULL. */
RF_API void rf_ps_sync_counts(rf_ps_client *client, uint64_t *accepted,
                              uint64_t *stale);
/* Sync-replicas shards: READs every shard's sync step and stale count (one
 * batch per ps) into steps[i] and stale[i] (either may be NULL). */
RF_API rf_status rf_ps_sync_read(rf_ps_client *client, rf_ps_var *const *vars,
                                 size_t n, int64_t *steps, uint64_t *stale);
/* Chief: WRITEs step (>= 0) into every shard's sync step word (one batch
 * per ps, waited for): the step the accumulators take next, the
 * global_step training starts from. An accumulator whose step is rewritten
 * drops what it held. Before rf_ps_init_values, so a worker that sees the
 * init flags sees the step. */
/* Sync replicas' chief epoch, a u64 at offset 3712 of ps task 0's globals
 * block: the chief bumps it (FETCH_AND_ADD; *epoch the new value, may be
 * NULL) after each rf_ps_sync_set_step of its start or restore, so a
 * worker waiting for a step learns that the step it pushed for was set
 * again (its gradient dropped, or the restore at its own step) instead of
 * waiting out its timeout; any worker READs it. */
RF_API rf_status rf_ps_sync_epoch_bump(rf_ps_client *client, uint64_t *epoch);
RF_API rf_status rf_ps_sync_epoch_read(rf_ps_client *client, uint64_t *epoch);
RF_API rf_status rf_ps_sync_set_step(rf_ps_client *client,
                                     rf_ps_var *const *vars, size_t n,
                                     int64_t step);

/* What this client's reads of embedding table rows saw, since it was
 * connected (every row READ is one work request: a row record, checked by
 * its CRC32C; docs/DESIGN.md "Self-verifying rows"). */
typedef struct rf_ps_row_counters {
    uint64_t rows;      /* rows returned whole (reads, range reads, and the
                           reads of read-modify-writes) */
    uint64_t reads;     /* row record READs checked (rows + re-reads) */
    uint64_t torn;      /* records whose CRC did not match (read again) */
    uint64_t busy;      /* records a writer owned (odd version; read again) */
    uint64_t conflicts; /* rows of sparse rmw updates and rf_ps_write_rows
                           whose CMP_AND_SWP lost to another writer (read
                           and applied again) */
} rf_ps_row_counters;
RF_API void rf_ps_client_row_counters(rf_ps_client *client,
                                      rf_ps_row_counters *out);

/* ---- embedding tables --------------------------------------------------- */

/* One set of rows of one field of a table shard. */
typedef struct rf_ps_rows {
    rf_ps_var *var;      /* a table shard */
    rf_ps_field field;   /* RF_PS_FIELD_VALUES or a slot */
    const int64_t *rows; /* n row indices, each in [0, dims[0]) */
    size_t n;
    void *buf; /* n * row_bytes, inside mr: row i lands at i * row_bytes */
    rf_mr *mr;
} rf_ps_rows;

/* READs the listed rows of every set: all the rows for one ps posted as one
 * rf_post list (chained work requests: one doorbell; split only where the
 * endpoint's send queue depth requires), one list per ps, then waits for all
 * (op_timeout_ms). Each row is one READ of its row record, whole whatever
 * order the responder fetched its bytes in: a record whose CRC32C is not
 * that of its version and row (torn by a concurrent write; a torn record
 * passes with probability about 2^-32) or whose version is odd (a writer
 * owns the row) is read again (bounded retries, then RF_ERR_TIMEOUT naming
 * the shard and row), and counted (rf_ps_client_row_counters). Every index is
 * checked against the shard's rows before anything is posted:
 * RF_ERR_INVALID_ARG naming the shard, the position and the index (no READ
 * outside the table is ever posted). Allocates nothing per call after the first
 * (keep per-client scratch). */
RF_API rf_status rf_ps_read_rows(rf_ps_client *client, const rf_ps_rows *sets,
                                 size_t nsets);
/* READs rows [row0, row0 + nrows) of one field of a table shard into buf
 * (nrows * row_bytes, inside mr; nrows at most RF_PS_RANGE_MAX_ROWS), each
 * row checked as rf_ps_read_rows checks it, with one READ per 4 MiB of
 * consecutive row records; a row that is not whole is then read again
 * alone as rf_ps_read_rows does (bounded by op_timeout_ms). A range outside the
 * table: RF_ERR_INVALID_ARG, nothing posted. For reading a whole table while
 * workers train (checkpoints). */
#define RF_PS_RANGE_MAX_ROWS 65536u
RF_API rf_status rf_ps_read_row_range(rf_ps_client *client, rf_ps_var *var,
                                      rf_ps_field field, int64_t row0,
                                      size_t nrows, void *buf, rf_mr *mr);
/* WRITEs the listed rows of every set (indices checked before anything is
 * posted), each as a row update: READ of the row's records of every field
 * (until whole and at one version v), CMP_AND_SWP of its version v -> v + 1
 * (owned; lost to another writer: read again), WRITE of every record
 * sealed at v + 2 with the set's row in its field; waits for completion.
 * The rows of one set should be distinct. For a table that workers may be
 * reading or writing (restores into a running job). */
RF_API rf_status rf_ps_write_rows(rf_ps_client *client, const rf_ps_rows *sets,
                                  size_t nsets);
/* Chief, before the shard's init flag is set (no worker reads a shard
 * before its flag): WRITEs rows [row0, row0 + nrows) of one field (values
 * or a slot) of a table shard from buf (nrows * row_bytes, inside mr) as
 * row records built and sealed here (version 0), one WRITE per 4 MiB of
 * consecutive records, and waits. The flag is READ first: a shard already
 * initialised is refused (RF_ERR_INVALID_ARG: use rf_ps_write_rows), as is a
 * range outside its rows (nothing posted). */
RF_API rf_status rf_ps_write_row_range(rf_ps_client *client, rf_ps_var *var,
                                       rf_ps_field field, int64_t row0,
                                       size_t nrows, const void *buf,
                                       rf_mr *mr);
/* Chief: sets the init flags of the shards (after their values were
 * written by this client's completed writes, e.g. rf_ps_write_row_range),
 * one batch per ps, waited for. */
RF_API rf_status rf_ps_mark_initialized(rf_ps_client *client,
                                        rf_ps_var *const *vars, size_t n);

/* The ps-side gather TensorFlow's colocated Gather is: for each set, the
 * row indices go to the set's ps (WRITE_WITH_IMM into this worker's gather
 * inbox there), whose service thread checks every index (a bad one: an
 * error ack naming the shard and index, nothing copied), copies each row
 * whole (its record's version even and its CRC32C that of the version and
 * the copy) into
 * the reply and WRITEs the rows into buf (sets' mr must be registered
 * remote-writable: rf_ps_client_register_reply does), then acknowledges;
 * waits for every ack (op_timeout_ms). Indices are checked here first, as
 * rf_ps_read_rows does. The ps CPU does the work: the baseline the
 * one-sided rf_ps_read_rows is compared with (bench/emb-lookup), and the
 * session's other lookup way (rf_session_options.embedding_lookup; which
 * is cheaper: rf_ps_lookup_cost).
 * A set of more than the table's max_push_rows rows (the gather inbox's
 * size) goes as several requests, one at a time per table; sets of
 * different tables are in flight together. A table's outstanding inbox
 * push is waited for first (they share the table's push slot). */
RF_API rf_status rf_ps_gather_rows(rf_ps_client *client, const rf_ps_rows *sets,
                                   size_t nsets);

/* What a lookup of n distinct rows of one table shard costs by each way,
 * as a line per way, cost(n) = fixed + per_row * n microseconds
 * (docs/DESIGN.md "Lookups that pick the cheaper way"; the session's
 * embedding_lookup=auto): rows, rf_ps_read_rows (one READ per row, no ps
 * CPU); gather, rf_ps_gather_rows (one request, the ps CPU copies).
 * rf_ps_lookup_cost_measure probes the shard's own ps now: m rows of the
 * values spread evenly over the shard (row k * (rows / m)) by each way, m =
 * min(max_rows, 256, the shard's rows and max_push_rows), one untimed lookup of
 * each way, then 7 rounds of 1 row and of m rows by each way alternated (so a
 * change of load hits both); each line goes through the medians at 1 and m
 * rows, neither part below 0 (m = 1: per_row 0). buf (m rows) must be in mr,
 * registered with rf_ps_client_register_reply (the gather WRITEs there). About
 * 60 round trips: done once, when a session is created. */
typedef struct rf_ps_lookup_cost {
    uint32_t probe_rows; /* m */
    double rows_fixed_us, rows_per_row_us;
    double gather_fixed_us, gather_per_row_us;
} rf_ps_lookup_cost;
RF_API rf_status rf_ps_lookup_cost_measure(rf_ps_client *client, rf_ps_var *var,
                                           void *buf, rf_mr *mr,
                                           size_t max_rows,
                                           rf_ps_lookup_cost *out);
/* Whether the gather is the cheaper way for n rows by the model (false on
 * a tie: row READs cost the ps nothing). */
RF_API bool rf_ps_lookup_cost_gather_cheaper(const rf_ps_lookup_cost *cost,
                                             double n);

/* Sparse pushes: a sparse gradient to a trainable async table shard (a
 * sync one is refused: rf_ps_push_sparse_sync): grad is n rows
 * (n * row_bytes float32) for the row indices rows[0..n); both inside mr.
 * The caller has deduplicated them (rf_optim_dedup) unless the optimizer is
 * sgd (whose updates apply once per occurrence, like TF's ScatterSub);
 * n <= max_push_rows (else RF_ERR_INVALID_ARG); indices checked as in
 * rf_ps_read_rows.
 * rf_ps_push_sparse_inbox (the ps applies): WRITE of the count and indices
 * and WRITE_WITH_IMM of the rows into this worker's inbox for the shard
 * (one list), returns once posted;
 * the ps service thread checks the count and every index against the shard
 * (a bad push is refused with an error ack and changes nothing: the ps's
 * check is the last line of defence), then, for each row, owns the row
 * (its version odd), applies rf_optim_apply_sparse to the row and its slot
 * rows in place and seals their records at the next version (Adam: TF
 * 1.x's rule over every row, row by row), and acks as a dense push does;
 * rf_ps_push_wait waits for the acks.
 * rf_ps_update_sparse_rmw (the worker applies): a row update of the
 * unique rows (as rf_ps_write_rows: READ of every field's record until
 * whole, rf_optim_apply_sparse locally on the gathered rows, CMP_AND_SWP of
 * each row's version, WRITE of the sealed records; a row another writer
 * took meanwhile is read and applied again, so no update is lost);
 * completes before returning. _locked: the shard's lock word is held
 * around it as rf_ps_update_rmw_locked holds it. Adam is refused by both
 * (RF_ERR_INVALID_ARG: its TF 1.x sparse rule moves every row, a
 * whole-table read-modify-write; use the inbox). */
RF_API rf_status rf_ps_push_sparse_inbox(rf_ps_client *client, rf_ps_var *var,
                                         const int64_t *rows, size_t n,
                                         const float *grad, rf_mr *mr);
RF_API rf_status rf_ps_update_sparse_rmw(rf_ps_client *client, rf_ps_var *var,
                                         const int64_t *rows, size_t n,
                                         const float *grad, rf_mr *mr);
RF_API rf_status rf_ps_update_sparse_rmw_locked(rf_ps_client *client,
                                                rf_ps_var *var,
                                                const int64_t *rows, size_t n,
                                                const float *grad, rf_mr *mr);
/* Sync replicas with a table (TF 1.x's SparseConditionalAccumulator under
 * SyncReplicasOptimizer): pushes a sparse gradient to a sync-replicas table
 * shard (an async one is refused, as rf_ps_push_sparse_inbox refuses a
 * sync one) as rf_ps_push_sparse_inbox does (same checks: the caller
 * deduplicated rows, n <= max_push_rows, indices in range, both inside mr),
 * tagged with local_step (>= 0). The ps drops a gradient tagged below the
 * shard's sync step (counted stale), keeps one per client and step, sums each
 * touched row and counts its contributions, and after replicas_to_aggregate
 * gradients applies each touched row's mean (its sum divided by its own
 * count) with rf_optim_apply_sparse, then advances the sync step; a push
 * that would take its accumulator past the ps's max_accum_bytes is refused
 * with an error ack, nothing changed. Returns once posted: rf_ps_push_wait
 * waits for the acks, rf_ps_sync_counts counts them as for dense. */
RF_API rf_status rf_ps_push_sparse_sync(rf_ps_client *client, rf_ps_var *var,
                                        const int64_t *rows, size_t n,
                                        const float *grad, rf_mr *mr,
                                        int64_t local_step);

/* global_step (ps task 0): atomic add returning the previous value, a read,
 * and a write (chief restore). */
RF_API rf_status rf_ps_global_step_add(rf_ps_client *client, int64_t add,
                                       int64_t *old);
RF_API rf_status rf_ps_global_step_read(rf_ps_client *client, int64_t *value);
RF_API rf_status rf_ps_global_step_write(rf_ps_client *client, int64_t value);
/* CMP_AND_SWP of global_step: desired if it is expected; *old (may be
 * NULL) gets the value before, so the swap happened iff *old == expected. */
RF_API rf_status rf_ps_global_step_cas(rf_ps_client *client, int64_t expected,
                                       int64_t desired, int64_t *old);

/* Stale synchronous parallel: one int64 clock word per client id on ps task
 * 0 (RF_PS_MAX_CLOCKS of them, zero when the ps starts). */
#define RF_PS_MAX_CLOCKS RF_PS_MAX_DONE_WORKERS
/* FETCH_AND_ADD of this client's clock word; *old (may be NULL) gets the
 * value before. */
RF_API rf_status rf_ps_clock_advance(rf_ps_client *client, int64_t add,
                                     int64_t *old);
/* One READ of the clock words of client ids [first_id, first_id + n) into
 * clocks[0..n). */
RF_API rf_status rf_ps_clocks_read(rf_ps_client *client, uint32_t first_id,
                                   size_t n, int64_t *clocks);

/* The end of a job. A worker that finished training announces it by
 * setting the bit of its client id in ps task 0's workers-done bitmap
 * (CMP_AND_SWP; announcing twice, e.g. after a restart, is harmless), so
 * the chief knows which workers finished and may shut the cluster down.
 * Client ids must be below RF_PS_MAX_DONE_WORKERS (RF_ERR_INVALID_ARG). */
#define RF_PS_DONE_WORDS       7
#define RF_PS_MAX_DONE_WORKERS (64 * RF_PS_DONE_WORDS)
RF_API rf_status rf_ps_worker_done(rf_ps_client *client);
/* Reads the bitmap. */
RF_API rf_status rf_ps_workers_done_read(rf_ps_client *client,
                                         uint64_t bits[RF_PS_DONE_WORDS]);
/* Members (elastic workers): reads ps task 0's members bitmap (plain
 * READs: the ps's CPU writes it), the client ids connected or gone for
 * less than the ps's member_timeout_ms that did not LEAVE. */
RF_API rf_status rf_ps_members_read(rf_ps_client *client,
                                    uint64_t bits[RF_PS_DONE_WORDS]);
/* This client leaves the job (an elastic worker scaled down or told to
 * stop): ps task 0 clears its member bit at once, so the chief's end does
 * not wait for it. A LEAVE_REQ answered by LEAVE_REPLY; call it after the
 * last step, before rf_ps_client_destroy. */
RF_API rf_status rf_ps_leave(rf_ps_client *client);
/* The shard ledger (elastic workers, docs/DESIGN.md "The shard ledger"):
 * ps task 0 cuts the training set into shards of shard_batches whole
 * batches (the tail of fewer than batch_size examples is not trained) and
 * deals them; every worker of a job must send the same geometry. */
typedef struct rf_ps_shard_geometry {
    uint64_t num_examples;
    uint32_t batch_size;
    uint32_t shard_batches;
    uint64_t seed; /* epoch e's deal order is shuffled by seed + e */
} rf_ps_shard_geometry;
/* A place in the ledger: batch `batch` of shard `shard` of epoch `epoch`
 * (its examples start at first_example), and the ledger's sizes. */
typedef struct rf_ps_shard_grant {
    uint32_t epoch, shard, batch;
    uint32_t shard_len;   /* batches in this shard */
    uint32_t num_shards;  /* shards per epoch */
    uint32_t epochs_done; /* epochs all of whose shards were trained */
    uint64_t first_example;
} rf_ps_shard_grant;
/* One SHARD_REQ to ps task 0: done (NULL: nothing to report) says this
 * worker trained every batch of done->shard before done->batch (progress
 * is recorded here, so call it after each batch's push); *next is the
 * batch to train now. RF_ERR_INVALID_ARG when the geometry differs from
 * the one the ledger was set with (the message names both). *stale (may
 * be NULL) is set when the shard reported on had been returned to the
 * ledger (this worker was gone past member_timeout_ms). */
RF_API rf_status rf_ps_shard_next(rf_ps_client *client,
                                  const rf_ps_shard_geometry *geom,
                                  const rf_ps_shard_grant *done,
                                  rf_ps_shard_grant *next, bool *stale);
/* Chief: ps task 0's shard ledger in its saved form (a few dozen bytes
 * plus 12 per outstanding shard; ps/ps_ledger.h) into a malloc'd *buf of
 * *len bytes, read a page per request from one snapshot; *len 0 (and *buf
 * NULL) when no worker asked for a shard yet. */
RF_API rf_status rf_ps_ledger_read(rf_ps_client *client, unsigned char **buf,
                                   size_t *len);
/* Chief: loads a saved ledger into ps task 0, which refuses it when its
 * ledger is set already (a worker asked it) and when the form does not
 * parse or check (RF_ERR_CORRUPT naming what); both leave it as it was. */
RF_API rf_status rf_ps_ledger_load(rf_ps_client *client,
                                   const unsigned char *buf, size_t len);
/* Checks a saved ledger as ps task 0 would load it (RF_ERR_CORRUPT naming
 * what is wrong) and describes it into desc (may be NULL). */
RF_API rf_status rf_ps_ledger_check(const void *buf, size_t len, char *desc,
                                    size_t cap);
/* The server's members bitmap as its service thread last wrote it. */
RF_API void rf_ps_server_members(rf_ps_server *server,
                                 uint64_t bits[RF_PS_DONE_WORDS]);
/* Chief: ORs bits into the bitmap (what it had seen before ps task 0
 * restarted with an empty one). */
RF_API rf_status rf_ps_workers_done_merge(
    rf_ps_client *client, const uint64_t bits[RF_PS_DONE_WORDS]);
RF_API bool rf_ps_worker_is_done(const uint64_t bits[RF_PS_DONE_WORDS],
                                 uint32_t id);
/* Chief: reads the bitmap every poll_ms (<= 0: 50) until every client id of
 * ids[0..n) announced or timeout_ms passed (<= 0: a single read);
 * RF_ERR_TIMEOUT then says how many announced and names the missing ids
 * ("1 of 2 workers announced they finished ... within 5 s; missing client
 * id 2"). bits gets the last bitmap read. */
RF_API rf_status rf_ps_wait_workers_done(rf_ps_client *client,
                                         const uint32_t *ids, size_t n,
                                         int poll_ms, int timeout_ms,
                                         uint64_t bits[RF_PS_DONE_WORDS]);

/* Chief: tells every ps task to stop serving (its rf_ps_server_join returns
 * RF_OK) and waits for each to acknowledge. */
RF_API rf_status rf_ps_shutdown(rf_ps_client *client);

#ifdef __cplusplus
}
#endif
#endif
