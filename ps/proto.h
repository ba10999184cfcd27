/* ps/proto.h: the ps control-plane protocol, as plain structs and
 * pure encode/decode functions (no I/O, no allocation) so they can be fuzzed.
 *
 * Every message is one rf_send into a receive the peer posted: a 16-byte
 * little-endian header {magic "RFPS" u32, version u16, type u16, payload
 * length u32, request id u32} then the payload. Requests go worker -> ps,
 * each answered by exactly one reply with the same request id (the typed
 * reply, or ERROR_REPLY {status i32, text}). Decoders check every field
 * (ranges, enum values, reserved bytes zero, no trailing bytes) and fail with
 * RF_ERR_CORRUPT and a message naming the field.
 *
 * Before any message, the connect private data carries a short hello
 * (ps_conn_hello: magic, version, client id, flags) and the accept carries
 * ps_conn_welcome (magic, version, ps task index, incarnation); a version
 * mismatch is rejected with a text reason. When the ps has a cluster secret
 * the first messages are AUTH_REQ / AUTH_CHALLENGE / AUTH_PROOF / AUTH_OK
 * (ps_auth.h, docs/DESIGN.md), before HELLO. */
#ifndef RF_GRAPH_DIST_PROTO_H
#define RF_GRAPH_DIST_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"
#include "rdmaflow/types.h"

/* PS_PROTO_VERSION 2: authentication, PS_CONN_FLAG_AUTH; 3: FTRL's
 * hyper-parameters in the shard spec; 4: the spec's max_push_rows
 * (embedding tables: row version words, sparse inboxes); 5: ps 0's
 * globals block of PS_GLOBALS_BYTES with the SSP clock words, and a
 * table inbox's gather area (rf_ps_gather_rows); 6: sync-replicas tables
 * (a sync table's sparse push header of PS_SPARSE_SYNC_HDR_BYTES: count and
 * tag); 7: self-verifying table rows (every field of a table an array of
 * row records: version, CRC32C, row; ps_layout.h), so a peer of version 6
 * reading rows between version words is refused at HELLO; 8: LEAVE_REQ /
 * LEAVE_REPLY and the members bitmap in the globals block (elastic
 * workers); 9: SHARD_REQ / SHARD_REPLY, the shard ledger of ps task 0
 * (types 28 and 29, numbered apart from the others so that types added
 * elsewhere from 18 on do not collide; 18-27 are unknown types); also
 * PS_CONN_FLAG_TOKEN and the task token in the connect hello (a task's
 * identity across its restarts, ps_server_token.c); also LEDGER_REQ /
 * LEDGER_REPLY (types 30 and 31: the chief reads ps task 0's ledger for
 * its checkpoint and loads it into a restarted one; new types, so the
 * version stays 9). */
#define PS_PROTO_MAGIC   0x53504652u /* "RFPS" little-endian */
#define PS_PROTO_VERSION 9u
#define PS_MSG_HDR_SIZE  16u
#define PS_MSG_MAX       8192u /* header + payload */
/* Requests (worker -> ps) are small: the ps's receives are this size. */
#define PS_REQ_MAX      1024u
#define PS_ERR_TEXT_MAX 1024u
/* Region descriptors per REGIONS_REPLY. */
#define PS_REGIONS_PER_MSG 256u
/* Bound on regions (arena chunks) a ps may have. */
#define PS_MAX_REGIONS 65536u
/* Largest encoded directory entry (a 255-byte name, rank 8, 3 slots). */
#define PS_ENTRY_MAX 480u
/* Most replicas a sync-replicas shard may aggregate (rf_ps_shard_spec). */
#define PS_SYNC_MAX_REPLICAS ((uint32_t)RF_PS_MAX_SYNC_REPLICAS)

typedef enum ps_msg_type {
    PS_MSG_HELLO = 1,
    PS_MSG_HELLO_REPLY,
    PS_MSG_REGIONS_REQ,
    PS_MSG_REGIONS_REPLY,
    PS_MSG_DIR_REQ,
    PS_MSG_DIR_REPLY,
    PS_MSG_CREATE_REQ,
    PS_MSG_CREATE_REPLY,
    PS_MSG_SHUTDOWN_REQ,
    PS_MSG_SHUTDOWN_REPLY,
    PS_MSG_ERROR_REPLY,
    PS_MSG_AUTH_REQ,        /* worker: its nonce and claimed identity */
    PS_MSG_AUTH_CHALLENGE,  /* ps: its nonce, identity and HMAC */
    PS_MSG_AUTH_PROOF,      /* worker: its HMAC */
    PS_MSG_AUTH_OK,         /* ps: the worker is authenticated */
    PS_MSG_LEAVE_REQ,       /* worker: it leaves the job (elastic) */
    PS_MSG_LEAVE_REPLY,     /* ps: it is no longer a member */
    PS_MSG_SHARD_REQ = 28,  /* worker: progress, and the next batch please */
    PS_MSG_SHARD_REPLY,     /* ps task 0: the batch to train */
    PS_MSG_LEDGER_REQ = 30, /* chief: a page of the ledger, read or load */
    PS_MSG_LEDGER_REPLY,    /* ps task 0: the page read, or the load taken */
    PS_MSG_TYPE_END         /* one past the last (with gaps: 18-27) */
} ps_msg_type;

const char *ps_msg_type_name(uint32_t type);

typedef struct ps_msg_hdr {
    uint16_t type;
    uint32_t len; /* payload bytes after the header */
    uint32_t req_id;
} ps_msg_hdr;

/* A location in a ps arena: region index (in the REGIONS list) + offset. */
typedef struct ps_loc {
    uint32_t region;
    uint64_t offset;
} ps_loc;
#define PS_NO_REGION UINT32_MAX

/* --- connection private data --- */

#define PS_CONN_FLAG_CHIEF 1u
/* The connector has a cluster secret and will authenticate (ps_auth.c). */
#define PS_CONN_FLAG_AUTH 2u
/* A reject whose text starts with this is an authentication or role
 * refusal (RF_ERR_AUTH at the connector, not retried); the rest says why. */
#define PS_REJECT_AUTH "auth: "
/* A connect rejected with private data starting with this is retried (too
 * many connections setting up at the ps: ps_server_admit.c). */
#define PS_REJECT_BUSY "busy: "
/* The connector presents its task token (PS_TOKEN_LEN bytes after the
 * base hello): the same for every run of the same task (ps_token.c), so a
 * ps can tell a task's restart from a stranger taking its slot. */
#define PS_CONN_FLAG_TOKEN 4u
#define PS_TOKEN_LEN       16u
typedef struct ps_conn_hello {
    uint32_t client_id;
    uint32_t flags;
    unsigned char token[PS_TOKEN_LEN]; /* with PS_CONN_FLAG_TOKEN */
} ps_conn_hello;
/* The hello without a token; with one it is PS_CONN_HELLO_MAX bytes. */
#define PS_CONN_HELLO_SIZE 16u
#define PS_CONN_HELLO_MAX  (PS_CONN_HELLO_SIZE + PS_TOKEN_LEN)
typedef struct ps_conn_welcome {
    int32_t ps_index;
    uint64_t incarnation;
} ps_conn_welcome;
#define PS_CONN_WELCOME_SIZE 20u

/* Writes ps_conn_hello_size(h) bytes: PS_CONN_HELLO_SIZE, or
 * PS_CONN_HELLO_MAX with PS_CONN_FLAG_TOKEN. */
void ps_conn_hello_encode(const ps_conn_hello *h, unsigned char *out);
size_t ps_conn_hello_size(const ps_conn_hello *h);
rf_status ps_conn_hello_decode(const void *data, size_t len, ps_conn_hello *h);
void ps_conn_welcome_encode(const ps_conn_welcome *w,
                            unsigned char out[PS_CONN_WELCOME_SIZE]);
rf_status ps_conn_welcome_decode(const void *data, size_t len,
                                 ps_conn_welcome *w);

/* --- messages --- */

typedef struct ps_hello {
    uint32_t client_id;
    uint32_t flags;      /* PS_CONN_FLAG_CHIEF */
    uint32_t recv_depth; /* receives the worker keeps posted (acks) */
    uint32_t ring_slots; /* ack ring words (>= recv_depth) */
    rf_mr_desc ring;     /* the ack ring: ring_slots u64 at ring.addr */
} ps_hello;

typedef struct ps_hello_reply {
    int32_t ps_index;
    uint64_t incarnation;
    uint32_t recv_depth; /* receives the ps keeps posted per connection */
    uint32_t num_regions;
    uint32_t num_shards;
    ps_loc globals; /* global_step at offset 0 */
} ps_hello_reply;

typedef struct ps_range_req {
    uint32_t start;
} ps_range_req; /* REGIONS_REQ and DIR_REQ */

typedef struct ps_regions_reply {
    uint32_t total, start, count;
    rf_mr_desc regions[PS_REGIONS_PER_MSG];
} ps_regions_reply;

/* A shard spec as it travels (name copied in). */
typedef struct ps_spec {
    char name[RF_PS_MAX_NAME + 1];
    uint32_t part;
    rf_dtype dtype;
    rf_shape shape;
    bool trainable;
    rf_optim_config optim; /* kind and fields; zero when not trainable */
    /* Sync replicas (trainable only): replicas_to_aggregate and
     * total_num_replicas, 1 <= sync_n <= sync_m <= PS_SYNC_MAX_REPLICAS;
     * both 0 for an async shard. */
    uint32_t sync_n, sync_m;
    /* Embedding tables: rows per sparse push (0: a dense shard); a table is
     * trainable, float32 (sync or async), of rank >= 1 with rows of >= 1
     * element, max_push_rows <= PS_MAX_PUSH_ROWS. */
    uint32_t max_push_rows;
} ps_spec;

typedef struct ps_entry {
    uint32_t shard_id;
    ps_spec spec;
    ps_loc record;
    uint64_t record_bytes;
    uint64_t values_bytes;
    uint32_t values_off;
    uint32_t num_slots;
    uint64_t slot_off[RF_OPTIM_MAX_SLOTS];
    /* Header words (offsets in the record): init flag, seqlock version,
     * lock, beta powers, the sync step and stale count. Fixed by
     * ps_layout.h; sent so that a peer with another layout is refused
     * instead of misread. */
    uint16_t init_off, version_off, lock_off, scalars_off;
    uint16_t sync_step_off, sync_stale_off;
    /* this worker's gradient inbox (ps_inbox_bytes long); PS_NO_REGION if
     * none */
    ps_loc inbox;
} ps_entry;

typedef struct ps_dir_reply {
    uint64_t incarnation;
    uint32_t total, start, count;
    /* count entries follow in the payload; decode them one at a time with
     * ps_dir_reply_entry. */
} ps_dir_reply;

typedef struct ps_create_reply {
    bool created; /* false: it existed with the same spec */
    ps_entry entry;
} ps_create_reply;

typedef struct ps_error_reply {
    int32_t status; /* a negative rf_status */
    char text[PS_ERR_TEXT_MAX + 1];
} ps_error_reply;

/* SHARD_REQ: the geometry, and (has_done) the progress on a shard. */
typedef struct ps_shard_req {
    rf_ps_shard_geometry geom;
    bool has_done;
    rf_ps_shard_grant done; /* epoch, shard, batch only */
} ps_shard_req;
/* SHARD_REPLY: the grant (first_example derived by the receiver), and
 * whether the reported shard was no longer the worker's. */
typedef struct ps_shard_reply {
    rf_ps_shard_grant next;
    bool stale;
} ps_shard_reply;

/* LEDGER_REQ: the chief reads ps task 0's saved ledger (ps_ledger_save)
 * a page at a time (offset 0 takes a fresh snapshot), or loads one into
 * an unset ledger a page at a time (offset 0 starts it; the last page,
 * offset + count == total, loads it). */
#define PS_LEDGER_OP_READ 1u
#define PS_LEDGER_OP_LOAD 2u
/* Bytes per page: a load travels in a request (at most PS_REQ_MAX), a
 * read in a reply. */
#define PS_LEDGER_LOAD_PAGE 960u
#define PS_LEDGER_READ_PAGE 8000u
typedef struct ps_ledger_req {
    uint32_t op, offset, total, count; /* total, count: 0 for a read */
    const unsigned char *data;         /* load: count bytes (in the msg) */
} ps_ledger_req;
/* LEDGER_REPLY: total (0: the ledger is unset), the page at offset (count
 * bytes; 0 for a load), and for a load's last page that it was loaded. */
typedef struct ps_ledger_reply {
    uint32_t total, offset, count;
    bool loaded;
    const unsigned char *data;
} ps_ledger_reply;

/* Authentication (ps_auth.c; layouts in proto_codec.c). */
#define PS_AUTH_NONCE 32u
#define PS_AUTH_MAC   32u
typedef struct ps_auth_req {
    unsigned char nonce[PS_AUTH_NONCE];
    uint32_t client_id;
    uint32_t flags; /* as in the connect hello */
} ps_auth_req;
typedef struct ps_auth_challenge {
    unsigned char nonce[PS_AUTH_NONCE];
    int32_t ps_index;
    uint64_t incarnation;
    unsigned char mac[PS_AUTH_MAC];
} ps_auth_challenge;
typedef struct ps_auth_proof {
    unsigned char mac[PS_AUTH_MAC];
} ps_auth_proof;

/* --- encoding: each writes a whole message (header included) into buf and
 * stores its size; RF_ERR_INVALID_ARG if it does not fit in cap. --- */

rf_status ps_enc_hello(void *buf, size_t cap, uint32_t req_id,
                       const ps_hello *m, size_t *len);
rf_status ps_enc_hello_reply(void *buf, size_t cap, uint32_t req_id,
                             const ps_hello_reply *m, size_t *len);
rf_status ps_enc_range_req(void *buf, size_t cap, uint16_t type,
                           uint32_t req_id, const ps_range_req *m, size_t *len);
rf_status ps_enc_regions_reply(void *buf, size_t cap, uint32_t req_id,
                               const ps_regions_reply *m, size_t *len);
rf_status ps_enc_create_req(void *buf, size_t cap, uint32_t req_id,
                            const ps_spec *m, size_t *len);
rf_status ps_enc_create_reply(void *buf, size_t cap, uint32_t req_id,
                              const ps_create_reply *m, size_t *len);
rf_status ps_enc_empty(void *buf, size_t cap, uint16_t type, uint32_t req_id,
                       size_t *len); /* SHUTDOWN_REQ/_REPLY, AUTH_OK */
rf_status ps_enc_auth_req(void *buf, size_t cap, uint32_t req_id,
                          const ps_auth_req *m, size_t *len);
rf_status ps_enc_auth_challenge(void *buf, size_t cap, uint32_t req_id,
                                const ps_auth_challenge *m, size_t *len);
rf_status ps_enc_auth_proof(void *buf, size_t cap, uint32_t req_id,
                            const ps_auth_proof *m, size_t *len);
rf_status ps_enc_error_reply(void *buf, size_t cap, uint32_t req_id,
                             int32_t status, const char *text, size_t *len);
rf_status ps_enc_shard_req(void *buf, size_t cap, uint32_t req_id,
                           const ps_shard_req *m, size_t *len);
rf_status ps_enc_shard_reply(void *buf, size_t cap, uint32_t req_id,
                             const ps_shard_reply *m, size_t *len);
rf_status ps_enc_ledger_req(void *buf, size_t cap, uint32_t req_id,
                            const ps_ledger_req *m, size_t *len);
rf_status ps_enc_ledger_reply(void *buf, size_t cap, uint32_t req_id,
                              const ps_ledger_reply *m, size_t *len);
/* DIR_REPLY is built incrementally: begin, then add entries while
 * ps_entry_size() still fits, then finish (patches count and length). */
typedef struct ps_dir_writer {
    unsigned char *buf;
    size_t cap, len;
    uint32_t count;
} ps_dir_writer;
void ps_dir_begin(ps_dir_writer *w, void *buf, size_t cap, uint32_t req_id,
                  uint64_t incarnation, uint32_t total, uint32_t start);
/* Returns false (and adds nothing) when the entry does not fit. */
bool ps_dir_add(ps_dir_writer *w, const ps_entry *e);
size_t ps_dir_finish(ps_dir_writer *w);
size_t ps_entry_size(const ps_entry *e);

/* --- decoding --- */

/* Checks the header of a received message of len bytes: magic, version,
 * known type, len == header + payload length. */
rf_status ps_dec_hdr(const void *buf, size_t len, ps_msg_hdr *h);
/* Each takes the whole message (header included, already checked by
 * ps_dec_hdr) and checks the type. */
rf_status ps_dec_hello(const void *buf, size_t len, ps_hello *m);
rf_status ps_dec_hello_reply(const void *buf, size_t len, ps_hello_reply *m);
rf_status ps_dec_range_req(const void *buf, size_t len, uint16_t type,
                           ps_range_req *m);
rf_status ps_dec_regions_reply(const void *buf, size_t len,
                               ps_regions_reply *m);
rf_status ps_dec_create_req(const void *buf, size_t len, ps_spec *m);
rf_status ps_dec_create_reply(const void *buf, size_t len, ps_create_reply *m);
rf_status ps_dec_empty(const void *buf, size_t len, uint16_t type);
rf_status ps_dec_auth_req(const void *buf, size_t len, ps_auth_req *m);
rf_status ps_dec_auth_challenge(const void *buf, size_t len,
                                ps_auth_challenge *m);
rf_status ps_dec_auth_proof(const void *buf, size_t len, ps_auth_proof *m);
rf_status ps_dec_error_reply(const void *buf, size_t len, ps_error_reply *m);
rf_status ps_dec_shard_req(const void *buf, size_t len, ps_shard_req *m);
/* Also checks batch < shard_len, shard < num_shards, epochs_done <= epoch
 * + 1 and computes first_example from batch_size and shard_batches. */
rf_status ps_dec_shard_reply(const void *buf, size_t len, ps_shard_reply *m,
                             uint32_t batch_size, uint32_t shard_batches);
/* The data pointers point into buf. Checks op, the page against total
 * and its bound, a read's total and count zero. */
rf_status ps_dec_ledger_req(const void *buf, size_t len, ps_ledger_req *m);
rf_status ps_dec_ledger_reply(const void *buf, size_t len, ps_ledger_reply *m);
/* Decodes the DIR_REPLY header and then calls each(entry) for its count
 * entries, in order; stops at the first error (decode or callback). */
rf_status ps_dec_dir_reply(const void *buf, size_t len, ps_dir_reply *m,
                           rf_status (*each)(void *ctx, const ps_entry *e),
                           void *ctx);

/* Structural checks shared by encode and decode: name, dtype, rank, dims,
 * optimizer kind and flags, trainable => float32, the sync replicas counts
 * (0, 0 or 1 <= n <= m <= PS_SYNC_MAX_REPLICAS, trainable only). Not the
 * optimizer's hyper-parameter ranges (rf_optim_validate does that where it is
 * linked). */
rf_status ps_spec_check(const ps_spec *s);
/* Entry consistency: the layout the spec implies (ps_layout) matches the
 * offsets and sizes, slots counted right. */
rf_status ps_entry_check(const ps_entry *e);

#endif
