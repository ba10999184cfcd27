/* fabric/sock/sock.h: internal types and cross-file functions of the sock
 * provider (TCP, target-side progress thread). Not a public header.
 *
 * Threads and locks. Each fabric has one progress thread owning an epoll set
 * of: a wake eventfd, listening sockets, incoming handshakes and endpoint
 * sockets (all non-blocking). User threads post work under the endpoint
 * lock and write request frames directly; a thread polling or waiting on a
 * queue of few endpoints reads their sockets itself (sock_direct.c).
 * Manual progress (RF_PROGRESS_MANUAL or RF_SOCK_PROGRESS=manual): the
 * epoll set watches endpoint sockets for hang-ups (EPOLLRDHUP), errors and
 * room to write only, never for input; their input is read by the threads
 * polling or waiting on a queue the endpoint uses (any number of
 * endpoints), by the progress thread when a kick asks it (a receive posted
 * for a waiting send, a resumed write) and by the watchdog before it
 * declares a peer frozen. Everything that touches a target region
 * (executing requests, sending read data) runs in a thread serving an
 * endpoint (the progress thread or such a poller) while it holds
 * fab->mr_mu shared; registration and rf_mr_dereg take it exclusively. A
 * poller only ever trylocks; the progress thread trylocks an endpoint it
 * was woken for (epoll reports it again). Lock order: fab->mr_mu -> fab->mu
 * -> ep->mu -> listener->mu -> fab->kick_mu -> cq->mu. ep->mu is never held
 * while waiting for the progress thread.
 *
 * Semantics beyond fabric.h (wire format in sock_frame.h, target-side error
 * rules in sock_target.c):
 *  - Error state: every outstanding work request and posted receive
 *    completes with RF_ERR_DISCONNECTED (unsignaled ones too), except the one
 *    that caused it, which gets its own error; replies already queued are
 *    still sent, then an ERROR frame, then the socket drains and closes.
 *    Later rf_post / rf_post_recv return RF_ERR_DISCONNECTED and post
 *    nothing (no completion).
 *  - rf_ep_close: outstanding work completes with RF_ERR_DISCONNECTED before
 *    it returns; the socket is closed at once (the peer sees EOF, i.e.
 *    RF_ERR_DISCONNECTED). Closing an endpoint that had already failed waits
 *    up to the drain timeout for its last replies to be written.
 *  - CQ overflow: never loses a completion (kept past the depth, in order),
 *    logs an error once per queue and puts the producing endpoint in the
 *    error state.
 *  - Packet loss: TCP's; its retransmission floor is RF_SOCK_RTO_MIN_US
 *    (default 10 ms, TCP_RTO_MIN_US) on both ends, not 200 ms.
 *  - Dead peer: EOF/reset at once; a silent host through keepalive and
 *    TCP_USER_TIMEOUT (RF_PEER_TIMEOUT_MS); a frozen peer process by the
 *    watchdog: work outstanding and no byte moved either way for
 *    RF_PEER_TIMEOUT_MS + RF_RNR_TIMEOUT_MS.
 *  - Handshake: an incoming connection must complete its handshake within
 *    RF_SOCK_HANDSHAKE_TIMEOUT_MS (default 5000) or is dropped. rf_connect:
 *    refused, rejected, closed or not an rdmaflow listener give
 *    RF_ERR_UNAVAILABLE (a reject's private data is shown in the error
 *    message); no answer within timeout_ms gives RF_ERR_TIMEOUT.
 *  - Zero-length read/write/write_imm skip the rkey check, as in verbs.
 *  - RF_WR_FENCE: the request (and all after it) is sent only once earlier
 *    reads and atomics completed.
 *  - Manual progress: a peer's requests and this side's replies are read
 *    only inside rf_cq_poll / rf_cq_wait on a queue the endpoint uses (and
 *    on the paths above); error state, close and CQ overflow are as above,
 *    a hang-up is seen without polling, and an unpolled process looks
 *    frozen to its peers' watchdogs. RF_SOCK_PROGRESS (attr|auto|manual)
 *    overrides rf_fabric_attr.progress. */
#ifndef RF_FABRIC_SOCK_H
#define RF_FABRIC_SOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "fabric/provider.h"
#include "fabric/sock/sock_frame.h"
#include "rdmaflow/clock.h"

/* Per-connection receive buffer; payload larger than what is buffered is
 * received straight into its destination. */
#define SOCK_RXBUF_SIZE (64 * 1024)
/* Send payloads that arrive before a receive is posted are kept (for up to
 * RF_RNR_TIMEOUT_MS) while they total at most this many bytes per endpoint;
 * a larger one stops reading the connection until a receive is posted. */
#define SOCK_STAGE_MAX (1024 * 1024)
/* A write or atomic that overlaps read data still to be sent copies that
 * data first while the copies of an endpoint total at most this many bytes;
 * past that it waits, with reading the connection paused, until those
 * reads have been sent (RX_WAIT_READS). */
#define SOCK_COPY_MAX (1024 * 1024)
/* Incoming connections whose handshake is unfinished, per fabric. */
#define SOCK_MAX_HANDSHAKES 1024
/* Completed handshakes waiting for rf_listener_get_request, per listener. */
#define SOCK_MAX_READY 256

typedef enum sock_kind {
    SOCK_POLL_WAKE = 1,
    SOCK_POLL_LISTENER,
    SOCK_POLL_HS,
    SOCK_POLL_EP,
} sock_kind;

/* First thing epoll's data.ptr points at, to tell the object kinds apart. */
typedef struct sock_pollable {
    sock_kind kind;
} sock_pollable;

typedef struct sock_fabric sock_fabric;
typedef struct sock_ep sock_ep;
typedef struct sock_listener sock_listener;

typedef struct sock_mr {
    rf_mr base;
    struct sock_mr *next; /* rkey hash chain (fab->mr_mu) */
} sock_mr;

typedef struct sock_cq_chunk sock_cq_chunk;
/* With automatic progress a queue's pollers read its endpoints' sockets
 * only while it has at most this many endpoints; manual: always. */
#define SOCK_CQ_DIRECT_MAX 4

typedef struct sock_cq {
    rf_cq base;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    rf_completion *ring; /* `cap` = the depth asked for */
    uint32_t cap, head, count;
    sock_cq_chunk *ovf_head, *ovf_tail; /* completions past the depth */
    size_t ovf_count;
    /* count + ovf_count, stored under mu and read without it: an empty
     * queue is polled without taking the lock the progress thread pushes
     * under */
    _Atomic size_t pending;
    int waiters;
    /* Direct progress (sock_direct.c): the endpoints using this queue,
     * whose sockets a poller or waiter reads itself instead of waiting for
     * the progress thread (mu; grown as needed). */
    struct sock_ep **direct;
    int ndirect, direct_cap;
    uint64_t direct_gen; /* bumped when the set or a socket's use changes */
    int efd;             /* eventfd: a push while poll_waiters > 0 */
    int poll_waiters;
    int refs;      /* endpoints using it */
    int destroyed; /* rf_cq_destroy called; freed when refs reaches 0 */
    int overflow_logged;
    struct sock_cq *prev, *next; /* fab->cqs (fab->mu) */
} sock_cq;

enum sock_cmd_type {
    SOCK_CMD_DETACH_EP = 1,
    SOCK_CMD_DETACH_LISTENER,
    SOCK_CMD_STOP,
};

typedef struct sock_cmd {
    int type;
    void *obj;
    int done;
    struct sock_cmd *next;
} sock_cmd;

struct sock_fabric {
    rf_fabric base;
    int epfd, wakefd;
    sock_pollable wake_tag;
    pthread_t thread;
    int thread_started;

    /* configuration, read once at open */
    int rnr_timeout_ms;
    int peer_timeout_ms;
    int hs_timeout_ms;
    /* requests of one peer this fabric serves outstanding at once
     * (RF_SOCK_SERVE_MAX, default 4096; told to the peer in the handshake,
     * which holds more back; a peer that sends more is dropped) */
    uint32_t serve_max;
    int drain_timeout_ms;
    int direct; /* RF_SOCK_DIRECT (default 1): direct progress allowed */
    /* RF_SOCK_RTO_MIN_US (default 10000, 0 = the kernel's): the floor of
     * TCP's retransmission timeout on every connection (sock_net_tune) */
    int rto_min_us;
    /* Manual data progress (rf_fabric_attr.progress, RF_SOCK_PROGRESS):
     * endpoint input is read by pollers, not the progress thread. */
    int manual;

    /* System calls on endpoint sockets, by any thread (relaxed counts, for
     * tests and diagnosis: bounded per operation, never timed). */
    _Atomic uint64_t n_recv; /* recv into the receive buffer or a target */
    _Atomic uint64_t n_send; /* sendmsg of queued frames */
    /* Input readiness of endpoint sockets the progress thread got from
     * epoll (none with manual progress). */
    _Atomic uint64_t n_thread_in;

    /* Region table and target memory access: taken shared by every thread
     * that serves endpoints (the progress thread, direct pollers), so they
     * never wait for each other here, and exclusively by registration and
     * rf_mr_dereg (writers preferred: a waiting dereg holds new readers
     * off). */
    pthread_rwlock_t mr_mu;
    sock_mr **mr_buckets;
    size_t mr_nbuckets, mr_count;

    pthread_mutex_t mu; /* object lists and commands */
    pthread_cond_t cmd_cond;
    sock_ep *eps;
    sock_cq *cqs;
    sock_listener *listeners;
    sock_cmd *cmds;

    pthread_mutex_t kick_mu; /* endpoints the progress thread must visit */
    sock_ep *kicks;

    /* progress thread only */
    struct sock_hs *hs_list;
    size_t hs_count;
    int timers_hint;
};

/* --- listener and connection requests ----------------------------------- */

typedef struct sock_conn_req {
    rf_conn_req base;
    int fd;
    uint32_t peer_max;
    uint32_t peer_serve;
    char peer[64];
    struct sock_conn_req *next;
} sock_conn_req;

struct sock_listener {
    rf_listener base;
    sock_pollable tag;
    sock_fabric *fab;
    int fd;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    sock_conn_req *ready_head, *ready_tail;
    size_t nready;
    int closed;
    int refs; /* 1 while open + 1 per request handed out */
    struct sock_listener *prev, *next; /* fab->listeners (fab->mu) */
};

/* An accepted TCP connection whose handshake is being read (progress thread
 * only). */
typedef struct sock_hs {
    sock_pollable tag;
    sock_listener *listener;
    int fd;
    unsigned char buf[RF_SOCK_HS_SIZE];
    size_t got;
    int64_t deadline;
    char peer[64];
    struct sock_hs *prev, *next;
} sock_hs;

/* --- endpoint ----------------------------------------------------------- */

/* One posted work request, from post until its reply (initiator side). */
typedef struct sock_wr {
    uint8_t op; /* rf_op */
    uint8_t flags;
    uint32_t len;
    uint32_t rkey;
    uint32_t imm;
    void *context;
    void *local;
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
} sock_wr;

typedef struct sock_recv {
    void *buf;
    uint32_t len;
    void *context;
} sock_recv;

/* One frame waiting to be written (or a reply waiting for a receive). */
typedef struct sock_txi {
    unsigned char hdr[RF_SOCK_HDR_SIZE];
    uint8_t hdr_sent;          /* header bytes already written */
    uint8_t blocked;           /* reply held until a receive is posted */
    uint8_t has_event;         /* push `ev` before writing the frame */
    uint8_t is_reply;          /* answers a peer request (rep_open) */
    const unsigned char *data; /* unsent payload */
    size_t data_len;
    sock_mr *mr;          /* region of read data, else NULL */
    unsigned char *owned; /* heap copy backing data, else NULL */
    size_t owned_len;     /* its size, counted in the ep's copy_bytes */
    rf_completion ev;     /* receive completion (has_event) */
} sock_txi;

/* Ring of frames with absolute sequence numbers (cap is a power of two). */
typedef struct sock_txq {
    sock_txi *items;
    size_t cap;
    uint64_t head, tail;
} sock_txq;

/* A send or write_imm that arrived with no receive posted (RNR). */
typedef struct sock_stage {
    unsigned char *data; /* send payload, NULL for write_imm or empty */
    uint32_t len;
    uint8_t is_imm;
    uint32_t imm;
    uint64_t rep_seq; /* its blocked reply in ep->rep */
    int64_t deadline;
    struct sock_stage *next;
} sock_stage;

enum sock_phase {
    SOCK_OPEN = 0, /* connected */
    SOCK_DRAIN,    /* error state: writing the last replies, then shutdown
                      and discarding input until EOF or the drain deadline */
    SOCK_DEAD,     /* socket closed */
};

enum sock_rx_phase {
    RX_HDR = 0,    /* reading a frame header */
    RX_PAYLOAD,    /* reading payload into rx_dst (or discarding) */
    RX_WAIT_RECV,  /* a send header is parsed, waiting for a receive */
    RX_WAIT_READS, /* a write/atomic (rx_h) waits for overlapped reads to
                      be sent */
};

enum sock_rx_sink {
    SINK_NONE = 0,
    SINK_TGT_WRITE,     /* write payload into a target region */
    SINK_TGT_WRITE_IMM, /* write_imm payload into a target region */
    SINK_TGT_SEND,      /* send payload into a posted receive */
    SINK_TGT_STAGE,     /* send payload into an RNR staging buffer */
    SINK_INIT_READ,     /* read reply into the initiator's local buffer */
    SINK_DISCARD,       /* payload dropped (region deregistered meanwhile) */
};

struct sock_ep {
    rf_ep base;
    sock_pollable tag;
    sock_fabric *fab;
    pthread_mutex_t mu;
    sock_ep *prev, *next; /* fab->eps (fab->mu) */
    sock_ep *kick_next;   /* fab->kicks (fab->kick_mu) */
    int kicked;           /* (fab->kick_mu) */

    int fd;
    /* direct pollers holding the endpoint (sock_direct.c) */
    _Atomic int direct_pins;
    int direct_attached; /* on its queues' direct lists (creator, closer) */
    int phase;           /* sock_phase */
    uint32_t ev_mask;    /* events the state needs (EPOLLIN: reading is
                            not paused) */
    uint32_t ev_reg;     /* events registered with epoll: ev_mask, or with
                            manual progress EPOLLRDHUP for EPOLLIN */
    rf_status state;     /* RF_OK or RF_ERR_DISCONNECTED */
    int closing;         /* rf_ep_close in progress */
    int cq_overflow;     /* a completion of this ep overflowed its CQ */
    int shut_wr;         /* shutdown(SHUT_WR) done (SOCK_DRAIN) */
    int64_t drain_deadline;
    /* Last time bytes moved either way, or work was sent on an idle
     * endpoint: the watchdog fails an endpoint that owes replies and made
     * no progress for RF_PEER_TIMEOUT_MS + RF_RNR_TIMEOUT_MS. */
    int64_t progress_ms;
    char peer[64];
    uint32_t peer_max;   /* the peer's max_send_wr (handshake) */
    uint32_t peer_serve; /* requests the peer serves at once (handshake):
                            more are held back until replies come */
    /* 1: RF_EP_REMOTE_ACCESS_OFF and not enabled yet; read by the target
     * code (progress thread), cleared by rf_ep_enable_remote_access */
    int remote_off;

    /* initiator: [wr_head, wr_sent) sent, [wr_sent, wr_tail) held by a
     * fence; slot i at wrs[i % max_wr] */
    sock_wr *wrs;
    uint32_t max_wr;
    uint64_t wr_head, wr_sent, wr_tail;
    uint32_t rd_atomic_inflight; /* reads/atomics in [wr_head, wr_sent) */

    sock_recv *recvs;
    uint32_t max_recv;
    uint64_t recv_head, recv_tail;

    /* transmit: replies (target side) and requests (initiator side) are two
     * ordered streams interleaved at frame boundaries. tx_partial names the
     * queue whose head frame is partly written (0 none, 1 rep, 2 req). */
    sock_txq rep, req;
    int tx_partial;
    uint32_t rep_open;    /* peer requests whose reply is not written */
    uint32_t rep_mr_refs; /* rep items pointing into target regions */
    size_t copy_bytes;    /* read data copied for queued replies */

    /* receive */
    unsigned char *rxbuf;
    size_t rx_start, rx_end;
    int rx_phase;
    rf_sock_hdr rx_h;
    int rx_sink;
    unsigned char *rx_dst;
    size_t rx_left;
    sock_mr *rx_mr;
    void *rx_ctx;      /* receive context (SINK_TGT_SEND) */
    rf_status rx_fail; /* SINK_DISCARD: status to reply when done */
    int64_t rx_wait_deadline;
    sock_stage *rx_stage; /* SINK_TGT_STAGE: entry being filled */

    /* RNR staging */
    sock_stage *stage_head, *stage_tail;
    size_t stage_bytes;
};

static inline void sock_count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

#define SOCK_EP(e)  ((sock_ep *)(e))
#define SOCK_FAB(f) ((sock_fabric *)(f))

/* Times and deadlines are rf_now_ms() values (rdmaflow/clock.h); a
 * deadline from rf_deadline_ms() of a negative timeout is RF_DEADLINE_NONE.
 * Deadlines kept in the structures above are always finite. */

/* sock_provider.c */
extern const rf_provider_ops rf_sock_provider;
void sock_fab_wake(sock_fabric *fab);
/* Hands a command to the progress thread and waits until it is done. */
void sock_fab_command(sock_fabric *fab, int type, void *obj);

/* sock_progress.c */
void *sock_progress_main(void *arg);

/* sock_mr.c */
rf_status sock_mr_reg(rf_fabric *fabric, void *addr, size_t len,
                      uint32_t access, rf_mr **out);
/* The same with the rkey chosen by the caller (the auto provider); 0: pick
 * a random one. */
rf_status sock_mr_reg_keyed(rf_fabric *fabric, void *addr, size_t len,
                            uint32_t access, uint32_t want_rkey, rf_mr **out);
rf_status sock_mr_dereg(rf_mr *mr);
sock_mr *sock_mr_find(sock_fabric *fab, uint32_t rkey); /* holds mr_mu */
void sock_mr_free_all(sock_fabric *fab);

/* sock_direct.c: a poller or waiter on a CQ of at most SOCK_CQ_DIRECT_MAX
 * endpoints reads their sockets itself (as a TCP ping-pong does) rather
 * than waiting for the progress thread to read and wake it. RF_SOCK_DIRECT=0
 * turns it off. With manual progress it applies to any number of endpoints
 * and serves every one of them (requests to this side too), whatever
 * RF_SOCK_DIRECT says. */
rf_status sock_direct_attach(sock_cq *cq, sock_ep *ep);
void sock_direct_detach(sock_cq *cq, sock_ep *ep);
/* An endpoint's reading resumed: waiters wait on its socket too (manual
 * progress). */
void sock_direct_wake(sock_cq *cq);
/* Reads what has arrived on the CQ's endpoints (no blocking, no waiting
 * for a lock the progress thread holds). */
void sock_direct_poll(sock_cq *cq);
/* Blocks until a completion, readable data on an endpoint or the deadline;
 * returns 1 if it did wait with direct progress, 0 if the CQ does not
 * allow it (the caller uses its condition variable); manual: always 1. */
int sock_direct_wait(sock_cq *cq, int64_t deadline);

/* sock_cq.c */
rf_status sock_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out);
void sock_cq_destroy(rf_cq *cq);
int sock_cq_poll(rf_cq *cq, rf_completion *out, int max);
int sock_cq_wait(rf_cq *cq, rf_completion *out, int max, int timeout_ms);
/* Stores a completion; returns 1 if it went past the depth (kept in the
 * overflow list, logged), 0 otherwise. */
int sock_cq_push(sock_cq *cq, const rf_completion *c);
void sock_cq_ref(sock_cq *cq);
void sock_cq_unref(sock_cq *cq);
void sock_cq_free(sock_cq *cq);

/* sock_net.c */
rf_status sock_net_connect(const char *host, uint16_t port, int64_t deadline,
                           int *fd_out);
rf_status sock_net_listen(const char *host, uint16_t port, int *fd_out,
                          uint16_t *port_out);
void sock_net_tune(int fd, int peer_timeout_ms, int rto_min_us);
rf_status sock_net_send_all(int fd, const void *buf, size_t len,
                            int64_t deadline);
/* Reads exactly len bytes; RF_ERR_UNAVAILABLE on EOF. */
rf_status sock_net_recv_all(int fd, void *buf, size_t len, int64_t deadline);
void sock_net_peer_name(int fd, char *buf, size_t len);

/* sock_listen.c */
rf_status sock_listen(rf_fabric *fabric, const char *host, uint16_t port,
                      rf_listener **out);
void sock_listener_close(rf_listener *listener);
rf_status sock_get_request(rf_listener *listener, int timeout_ms,
                           rf_conn_req **out);
rf_status sock_accept(rf_conn_req *req, const rf_ep_attr *attr,
                      const void *priv, size_t priv_len, rf_ep **out);
void sock_reject(rf_conn_req *req, const void *priv, size_t priv_len);
void sock_listener_on_event(sock_fabric *fab, sock_listener *l);
void sock_hs_on_event(sock_fabric *fab, sock_hs *hs);
/* Drops handshakes past their deadline; returns 1 if any remain. */
int sock_hs_timers(sock_fabric *fab, int64_t now);
void sock_listener_detach(sock_fabric *fab, sock_listener *l);

/* sock_connect.c */
rf_status sock_connect(rf_fabric *fabric, const char *host, uint16_t port,
                       const rf_ep_attr *attr, const void *priv,
                       size_t priv_len, int timeout_ms, rf_ep **out);

/* sock_ep.c */
rf_status sock_ep_check_attr(const rf_ep_attr *attr, uint32_t *max_wr,
                             uint32_t *max_recv);
/* Creates an endpoint on a connected socket (handshake done) and hands it
 * to the progress thread. Closes fd on failure. */
rf_status sock_ep_create(sock_fabric *fab, int fd, const rf_ep_attr *attr,
                         const void *peer_priv, size_t peer_priv_len,
                         uint32_t peer_max, uint32_t peer_serve, sock_ep **out);
void sock_ep_close(rf_ep *ep);
rf_status sock_ep_state(const rf_ep *ep);
rf_status sock_ep_enable_remote_access(rf_ep *ep);
/* Enters the error state (ep->mu held): every outstanding work request and
 * posted receive completes with RF_ERR_DISCONNECTED, queued request frames
 * are dropped, an ERROR frame is queued and the socket starts draining. */
void sock_ep_fail(sock_ep *ep, rf_status reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The socket is unusable: close it now (ep->mu held). */
void sock_ep_sock_dead(sock_ep *ep);
/* Re-registers the epoll events the endpoint's state needs (ep->mu held):
 * with manual progress, EPOLLRDHUP instead of EPOLLIN. */
void sock_ep_update_events(sock_ep *ep);
/* Asks the progress thread to service the endpoint soon. */
void sock_ep_kick(sock_ep *ep);
/* Completes the oldest outstanding work request (ep->mu held). */
void sock_ep_complete_head(sock_ep *ep, rf_status status);
void sock_ep_push_recv_comp(sock_ep *ep, const rf_completion *c);
/* Fails the endpoint if one of its completions overflowed a CQ. */
void sock_ep_check_overflow(sock_ep *ep);
/* Progress thread: removes an endpoint being closed from epoll and lists. */
void sock_ep_detach(sock_fabric *fab, sock_ep *ep);
/* Progress thread: I/O readiness or a kick (ep->mu held). */
void sock_ep_service(sock_ep *ep, uint32_t events);
/* Progress thread: deadlines (RNR, drain); returns 1 while any is set. */
int sock_ep_timers(sock_ep *ep, int64_t now);

/* sock_post.c */
rf_status sock_post(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted);
rf_status sock_post_recv(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                         void *context);
/* Sends work held back by a fence once earlier reads/atomics completed. */
void sock_post_release_fenced(sock_ep *ep);

/* sock_txq.c */
sock_txi *sock_txq_push(sock_txq *q); /* NULL if out of memory */
static inline sock_txi *sock_txq_at(sock_txq *q, uint64_t seq)
{
    return &q->items[seq & (q->cap - 1)];
}
static inline int sock_txq_empty(const sock_txq *q)
{
    return q->head == q->tail;
}
void sock_txq_pop(sock_txq *q);
void sock_txq_clear(sock_txq *q);
void sock_txq_destroy(sock_txq *q);
/* Copies an item's unsent payload to the heap; -1 if out of memory. */
int sock_txi_materialize(sock_txi *t);
/* Writes queued frames (replies too when allow_rep). Returns 0 when done or
 * the socket is full, -1 when the socket failed. ep->mu held. */
int sock_tx_flush(sock_ep *ep, int allow_rep);
/* True when something can be written now. */
int sock_tx_pending(const sock_ep *ep);

/* sock_rx.c */
/* Reads and handles input (ep->mu and fab->mr_mu held). */
void sock_rx_run(sock_ep *ep);
void sock_rx_payload_done(sock_ep *ep);
/* The peer broke the protocol: log it, fail the endpoint, drop the socket. */
void sock_rx_protocol_error(sock_ep *ep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* sock_target.c */
/* Handles a request header from the peer (target side). */
void sock_tgt_request(sock_ep *ep, const rf_sock_hdr *h);
/* The payload of a write, write_imm or send finished arriving. */
void sock_tgt_payload_done(sock_ep *ep);
/* Matches staged messages (and a waiting send) with posted receives. */
void sock_tgt_match(sock_ep *ep);
/* RNR deadlines: returns SOCK_TIMER_PENDING while any is set, plus
 * SOCK_TIMER_FIRED when one expired. */
#define SOCK_TIMER_PENDING 1
#define SOCK_TIMER_FIRED   2
int sock_tgt_timers(sock_ep *ep, int64_t now);
/* Queues a reply frame; returns it (NULL and fails the ep if no memory). */
sock_txi *sock_tgt_reply(sock_ep *ep, uint8_t op, rf_status status,
                         uint64_t value);
/* Copies pending read data of this endpoint that overlaps [p, p+len). */
/* RX_WAIT_READS: runs the waiting write or atomic if it may run now. */
void sock_tgt_resume(sock_ep *ep);
/* A reply was written: its copy is no longer counted; a write waiting for
 * overlapped reads is looked at again. ep->mu held. */
void sock_tgt_reply_sent(sock_ep *ep, const sock_txi *t);
/* Region being deregistered: fix up this endpoint (ep->mu held). */
void sock_tgt_region_gone(sock_ep *ep, sock_mr *mr);
void sock_tgt_free_stage(sock_ep *ep);

#endif
