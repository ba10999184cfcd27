/* rdmaflow/fabric.h: the transport API. A verbs-shaped set of small objects
 * (fabric, memory region, completion queue, listener, endpoint) and one-sided
 * (read, write, write_imm, fetch_add, cmp_swap) and two-sided (send, recv)
 * operations, implemented by providers selected by name (sock, verbs, ...).
 *
 * Semantics (identical for every provider; the conformance suite in
 * tests/fabric checks them):
 *  - An endpoint is a reliable connection (RC QP semantics). Work posted to
 *    one endpoint is executed at the target in posting order and its
 *    completions are reported in posting order.
 *  - A fabric is a protection domain: a region registered on it may be
 *    accessed by every peer connected to any endpoint of that fabric that
 *    holds its descriptor and whose access flags allow the operation.
 *  - The local buffer of every operation must lie inside a region registered
 *    on the same fabric (passed as `local_mr`); posting checks it.
 *  - A remote access violation (unknown rkey, out of bounds, missing access
 *    right) completes with RF_ERR_REMOTE_ACCESS; an atomic on an address not
 *    8-byte aligned completes with RF_ERR_INVALID_ARG. Either error puts the
 *    endpoint (both sides) into the error state, as an RC QP: all later and
 *    outstanding work on it completes with RF_ERR_DISCONNECTED. Target memory
 *    outside the addressed range is never touched.
 *  - A dead peer (process killed, connection lost) is reported as
 *    RF_ERR_DISCONNECTED on every outstanding and later operation, within a
 *    bounded time (RF_PEER_TIMEOUT_MS, default 10000).
 *  - send and write_imm consume one receive posted at the target; if none is
 *    posted the message waits up to RF_RNR_TIMEOUT_MS (default 2000; at most
 *    3930 with verbs, the longest finite RC RNR retry) and the initiator's
 *    work then completes with RF_ERR_NO_RESOURCE.
 *  - A send longer than the receive it consumes is an error: the receive
 *    completes with RF_ERR_INVALID_ARG, the send with RF_ERR_REMOTE_ACCESS,
 *    and the endpoint enters the error state on both sides. Nothing
 *    outside the receive buffer is written. On verbs the send may report
 *    RF_ERR_INVALID_ARG (the responder's invalid-request NAK) and either
 *    side RF_ERR_DISCONNECTED (rxe completes the short receive as flushed,
 *    and the flush of the disconnect can reach the send before the NAK).
 *  - An error completion is always reported, even for unsignaled work.
 *  - An endpoint created with RF_EP_REMOTE_ACCESS_OFF lets its peer send
 *    (and receive) but not read, write, write_imm or run atomics on this
 *    fabric's regions until rf_ep_enable_remote_access: such a request is
 *    refused as an access violation (RF_ERR_REMOTE_ACCESS; verbs NICs may
 *    report it as RF_ERR_INVALID_ARG, an invalid-request NAK), target memory
 *    untouched. A server enables it once the peer has authenticated, so a
 *    peer that only guessed an rkey gets nothing.
 */
#ifndef RDMAFLOW_FABRIC_H
#define RDMAFLOW_FABRIC_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_fabric rf_fabric;
typedef struct rf_mr rf_mr;
typedef struct rf_cq rf_cq;
typedef struct rf_ep rf_ep;
typedef struct rf_listener rf_listener;
typedef struct rf_conn_req rf_conn_req;

/* Largest private data carried by connect, accept and reject. librdmacm
 * leaves 56 bytes of an RC connect request on InfiniBand and RoCE and the
 * receiver sees them zero-padded, so the verbs provider spends one byte on
 * the length. */
#define RF_MAX_PRIVATE_DATA 55

/* What a peer needs to reach a registered region. Fixed-size and
 * little-endian when sent on the wire with rf_mr_desc_pack(). */
typedef struct rf_mr_desc {
    uint64_t addr; /* remote virtual address of the first byte */
    uint64_t len;  /* length in bytes */
    uint32_t rkey; /* remote key */
} rf_mr_desc;

#define RF_MR_DESC_PACKED_SIZE 20

enum rf_access {
    RF_ACCESS_LOCAL_WRITE = 1 << 0,   /* local buffer of read/recv/atomic */
    RF_ACCESS_REMOTE_READ = 1 << 1,   /* target of read */
    RF_ACCESS_REMOTE_WRITE = 1 << 2,  /* target of write and write_imm */
    RF_ACCESS_REMOTE_ATOMIC = 1 << 3, /* target of fetch_add and cmp_swap */
};
#define RF_ACCESS_ALL                                                          \
    (RF_ACCESS_LOCAL_WRITE | RF_ACCESS_REMOTE_READ | RF_ACCESS_REMOTE_WRITE |  \
     RF_ACCESS_REMOTE_ATOMIC)

typedef enum rf_op {
    RF_OP_READ = 0,      /* local <- remote */
    RF_OP_WRITE,         /* local -> remote */
    RF_OP_WRITE_IMM,     /* local -> remote, then imm delivered to a recv */
    RF_OP_FETCH_ADD,     /* 8-byte remote += add; old value -> local */
    RF_OP_CMP_SWAP,      /* 8-byte remote = (remote == cmp) ? swap : remote;
                            old value -> local */
    RF_OP_SEND,          /* local -> a receive posted at the peer */
    RF_OP_RECV,          /* completion of a receive that got a send */
    RF_OP_RECV_WRITE_IMM /* completion of a receive that got a write_imm */
} rf_op;

/* "read", "write", "write_imm", "fetch_add", "cmp_swap", "send", "recv",
 * "recv_write_imm"; "unknown op" for any other value. */
RF_API const char *rf_wr_op_name(rf_op op);

enum rf_wr_flags {
    RF_WR_UNSIGNALED = 1 << 0, /* no completion on success */
    RF_WR_INLINE = 1 << 1,     /* hint: payload small enough to inline */
    RF_WR_FENCE = 1 << 2,      /* wait for earlier reads/atomics first */
};

/* One work request. Zero-initialise and fill what the op needs. */
typedef struct rf_wr {
    rf_op op;             /* RF_OP_READ .. RF_OP_SEND */
    uint32_t flags;       /* rf_wr_flags */
    void *context;        /* returned in the completion */
    void *local;          /* local buffer (8 bytes for atomics) */
    size_t len;           /* bytes (8 for atomics; may be 0 for write_imm) */
    rf_mr *local_mr;      /* region containing local; may be NULL if len 0 */
    uint64_t remote_addr; /* target address (one-sided ops) */
    uint32_t rkey;        /* target region key (one-sided ops) */
    uint32_t imm;         /* immediate for write_imm */
    uint64_t compare_add; /* fetch_add: the addend; cmp_swap: compare */
    uint64_t swap;        /* cmp_swap: the new value */
} rf_wr;

typedef struct rf_completion {
    void *context; /* as posted */
    rf_ep *ep;     /* endpoint the work belonged to */
    rf_op op;      /* the operation that completed */
    rf_status status;
    uint32_t len; /* bytes received (recv); bytes moved otherwise */
    uint32_t imm; /* immediate (RF_OP_RECV_WRITE_IMM) */
} rf_completion;

/* Who makes data progress on a fabric (as libfabric's FI_PROGRESS_AUTO and
 * FI_PROGRESS_MANUAL). AUTO: the provider serves remote one-sided
 * operations and receives replies by itself, whether or not the process
 * polls. MANUAL: the provider may leave data progress (serving the peers'
 * one-sided operations and sends, receiving replies) to the threads inside
 * rf_cq_poll / rf_cq_wait on a completion queue the endpoint uses; a
 * process that stops polling may stall its peers' operations on it (past
 * RF_PEER_TIMEOUT_MS + RF_RNR_TIMEOUT_MS the peers' endpoints fail as for a
 * frozen process). Connection setup, hang-ups and timers are still
 * progressed. Per provider: sock honours it (RF_SOCK_PROGRESS overrides
 * it); verbs (the NIC progresses) and shm accept MANUAL and behave as
 * AUTO; auto passes it to the providers it opens. */
typedef enum rf_progress {
    RF_PROGRESS_AUTO = 0,
    RF_PROGRESS_MANUAL = 1,
} rf_progress;

typedef struct rf_fabric_attr {
    /* Local address the fabric will be used on; lets a provider pick the
     * device (verbs) or NUMA node. NULL: provider default. */
    const char *bind_addr;
    /* RF_PROGRESS_AUTO (0, the default) or RF_PROGRESS_MANUAL; any other
     * value is RF_ERR_INVALID_ARG. */
    rf_progress progress;
} rf_fabric_attr;

typedef struct rf_ep_attr {
    rf_cq *send_cq;       /* completions of posted work (required) */
    rf_cq *recv_cq;       /* completions of receives (NULL: send_cq) */
    uint32_t max_send_wr; /* outstanding posted work; 0: 1024 */
    uint32_t max_recv_wr; /* outstanding receives; 0: 256 */
    uint32_t flags;       /* rf_ep_flags */
} rf_ep_attr;

enum rf_ep_flags {
    /* The peer's one-sided operations are refused until
     * rf_ep_enable_remote_access (see the semantics above). */
    RF_EP_REMOTE_ACCESS_OFF = 1 << 0,
};

/* --- fabric ------------------------------------------------------------ */

/* Opens a provider by name: "sock", "shm", "verbs", or "auto"; NULL or ""
 * mean the value of RF_FABRIC if set, else "auto". An auto fabric opens
 * every provider that works on this host, registers each region on all of
 * them under one rkey, listens on all of them, and chooses per peer when it
 * connects: shm for an address of this host, verbs where an RDMA device
 * serves the address, sock otherwise (falling back to the next when the
 * peer has no listener of that provider); rf_ep_provider tells which. */
RF_API rf_status rf_fabric_open(const char *provider,
                                const rf_fabric_attr *attr, rf_fabric **out);
RF_API void rf_fabric_close(rf_fabric *fabric);
RF_API const char *rf_fabric_provider(const rf_fabric *fabric);
/* The data progress the fabric makes (attr->progress as the provider took
 * it, or RF_SOCK_PROGRESS): RF_PROGRESS_MANUAL only where the provider
 * honours it (sock; auto if its sock fabric does), else RF_PROGRESS_AUTO. */
RF_API rf_progress rf_fabric_progress(const rf_fabric *fabric);
/* What rf_post posted on a fabric since it was opened: work requests and
 * their bytes per op (indexed by rf_op, RF_OP_READ .. RF_OP_SEND), counted
 * when the provider accepted them (an auto fabric counts its endpoints',
 * whatever provider serves them). For tests and benchmarks: one row READ
 * of an embedding table is one RF_OP_READ. */
#define RF_FABRIC_OPS (RF_OP_SEND + 1)
typedef struct rf_fabric_counters {
    uint64_t posted[RF_FABRIC_OPS];
    uint64_t bytes[RF_FABRIC_OPS];
} rf_fabric_counters;
RF_API void rf_fabric_counters_get(const rf_fabric *fabric,
                                   rf_fabric_counters *out);
/* Names of the compiled-in providers, NULL-terminated. */
RF_API const char *const *rf_fabric_providers(void);

/* Whether var's current value would be accepted by the library, read
 * the way its reader reads it: RF_FABRIC (a provider compiled in) and
 * RF_AUTO_PROVIDERS here, every other row by rf_setting_check (env.h).
 * RF_OK, or RF_ERR_INVALID_ARG naming the variable and its value: what
 * rf-info reports before a task would refuse it. */
struct rf_env_var;
RF_API rf_status rf_fabric_setting_check(const struct rf_env_var *var);

/* --- memory regions ---------------------------------------------------- */

RF_API rf_status rf_mr_reg(rf_fabric *fabric, void *addr, size_t len,
                           uint32_t access, rf_mr **out);
RF_API rf_status rf_mr_dereg(rf_mr *mr);
RF_API void rf_mr_describe(const rf_mr *mr, rf_mr_desc *desc);
RF_API void *rf_mr_addr(const rf_mr *mr);
RF_API size_t rf_mr_len(const rf_mr *mr);
RF_API void rf_mr_desc_pack(const rf_mr_desc *desc,
                            unsigned char out[RF_MR_DESC_PACKED_SIZE]);
RF_API void rf_mr_desc_unpack(const unsigned char in[RF_MR_DESC_PACKED_SIZE],
                              rf_mr_desc *desc);

/* --- completion queues ------------------------------------------------- */

RF_API rf_status rf_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out);

enum rf_cq_flags {
    /* The application promises that one thread at a time uses the queue:
     * rf_cq_poll / rf_cq_wait on it, and rf_post on the endpoints whose
     * send queue it is (as rdma-core's IBV_CREATE_CQ_ATTR_SINGLE_THREADED
     * and a thread domain together). A provider may then complete work the
     * posting thread ran itself without a lock (shm: one-sided work of at
     * most 4096 bytes that rf_post ran inline). Breaking the promise loses
     * or duplicates completions. Providers with nothing to gain ignore it
     * (sock, verbs). */
    RF_CQ_SINGLE_THREADED = 1u << 0,
};

typedef struct rf_cq_attr {
    uint32_t depth; /* as rf_cq_create's */
    uint32_t flags; /* rf_cq_flags */
} rf_cq_attr;

/* rf_cq_create with flags; unknown flags are refused (RF_ERR_INVALID_ARG,
 * naming them). */
RF_API rf_status rf_cq_create_ex(rf_fabric *fabric, const rf_cq_attr *attr,
                                 rf_cq **out);
RF_API void rf_cq_destroy(rf_cq *cq);
/* Returns the number of completions stored (0 if none), or a negative
 * rf_status. Never blocks. */
RF_API int rf_cq_poll(rf_cq *cq, rf_completion *out, int max);
/* Like rf_cq_poll but waits up to timeout_ms (-1: forever) for at least one
 * completion; returns RF_ERR_TIMEOUT if none arrived. It polls for up to
 * the CQ's spin time first (RF_CQ_SPIN_US, default 20 us, set per CQ with
 * rf_cq_set_spin_us; 0 = block at once), then blocks in the provider (a
 * condition variable on sock; a completion channel on verbs unless
 * RF_VERBS_CQ_MODE=poll). The spin adapts: after 4 spins in a row on the
 * queue found nothing, one wait in 32 spins and the others block at once,
 * until a spin finds a completion again. */
#define RF_CQ_SPIN_US_DEFAULT 20
#define RF_CQ_SPIN_US_MAX     1000000
RF_API int rf_cq_wait(rf_cq *cq, rf_completion *out, int max, int timeout_ms);
RF_API rf_status rf_cq_set_spin_us(rf_cq *cq, unsigned spin_us);

/* --- connection management -------------------------------------------- */

/* Listens on host:port (port 0 picks a free port; see rf_listener_port). */
RF_API rf_status rf_listen(rf_fabric *fabric, const char *host, uint16_t port,
                           rf_listener **out);
RF_API uint16_t rf_listener_port(const rf_listener *listener);
RF_API void rf_listener_close(rf_listener *listener);
/* Waits up to timeout_ms (-1: forever) for an incoming connection request. */
RF_API rf_status rf_listener_get_request(rf_listener *listener, int timeout_ms,
                                         rf_conn_req **out);
RF_API const void *rf_conn_req_private_data(const rf_conn_req *req,
                                            size_t *len);
/* The connecting peer's address ("ip:port"), for logs; never NULL. */
RF_API const char *rf_conn_req_peer(const rf_conn_req *req);
/* Accepts the request (consuming it) with up to RF_MAX_PRIVATE_DATA bytes of
 * reply data, creating a connected endpoint. */
RF_API rf_status rf_accept(rf_conn_req *req, const rf_ep_attr *attr,
                           const void *priv, size_t priv_len, rf_ep **out);
/* Rejects the request (consuming it); the connector's rf_connect returns
 * RF_ERR_UNAVAILABLE and rf_connect_reject_data() gives it this data. */
RF_API void rf_reject(rf_conn_req *req, const void *priv, size_t priv_len);

/* Connects to host:port carrying private data; waits up to timeout_ms. A
 * refused or absent listener gives RF_ERR_UNAVAILABLE. */
RF_API rf_status rf_connect(rf_fabric *fabric, const char *host, uint16_t port,
                            const rf_ep_attr *attr, const void *priv,
                            size_t priv_len, int timeout_ms, rf_ep **out);
/* After rf_connect on this thread returned RF_ERR_UNAVAILABLE because the
 * listener rejected it: the reject's private data (*len 0 otherwise). Valid
 * until the next rf_connect on the same thread. */
RF_API const void *rf_connect_reject_data(size_t *len);
/* The private data the peer sent (accept reply for a connector, connect
 * request for an acceptor). */
RF_API const void *rf_ep_peer_private_data(const rf_ep *ep, size_t *len);
/* Closes the endpoint; outstanding work completes with
 * RF_ERR_DISCONNECTED before this returns. */
RF_API void rf_ep_close(rf_ep *ep);
/* The provider carrying the endpoint ("shm", "sock", "verbs"): the
 * fabric's own, or the one an auto fabric chose for this peer. */
RF_API const char *rf_ep_provider(const rf_ep *ep);
/* RF_OK while usable, RF_ERR_DISCONNECTED once in the error state. */
RF_API rf_status rf_ep_state(const rf_ep *ep);
/* Lets the peer of an endpoint created with RF_EP_REMOTE_ACCESS_OFF read,
 * write and run atomics on this fabric's regions (as their access flags
 * allow) from now on. Idempotent; RF_ERR_DISCONNECTED on a failed
 * endpoint. */
RF_API rf_status rf_ep_enable_remote_access(rf_ep *ep);

/* --- data transfer ----------------------------------------------------- */

/* Posts n work requests in one call (one doorbell where the provider has
 * one). *posted (may be NULL) receives how many were accepted; on error the
 * rest were not posted. RF_ERR_NO_RESOURCE: send queue full. */
RF_API rf_status rf_post(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted);
/* Posts a receive buffer for one incoming send or write_imm. */
RF_API rf_status rf_post_recv(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                              void *context);

/* Single-operation helpers (signaled). */
RF_API rf_status rf_read(rf_ep *ep, void *local, size_t len, rf_mr *local_mr,
                         uint64_t remote_addr, uint32_t rkey, void *context);
RF_API rf_status rf_write(rf_ep *ep, const void *local, size_t len,
                          rf_mr *local_mr, uint64_t remote_addr, uint32_t rkey,
                          void *context);
RF_API rf_status rf_write_imm(rf_ep *ep, const void *local, size_t len,
                              rf_mr *local_mr, uint64_t remote_addr,
                              uint32_t rkey, uint32_t imm, void *context);
RF_API rf_status rf_fetch_add(rf_ep *ep, uint64_t *result, rf_mr *local_mr,
                              uint64_t remote_addr, uint32_t rkey, uint64_t add,
                              void *context);
RF_API rf_status rf_cmp_swap(rf_ep *ep, uint64_t *result, rf_mr *local_mr,
                             uint64_t remote_addr, uint32_t rkey,
                             uint64_t compare, uint64_t swap, void *context);
RF_API rf_status rf_send(rf_ep *ep, const void *local, size_t len,
                         rf_mr *local_mr, void *context);

#ifdef __cplusplus
}
#endif
#endif
