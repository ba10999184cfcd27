/* fabric/shm/shm.h: internal types and cross-file functions of the shm
 * provider (peers on one host, regions in shared memory). Not a public
 * header; the design is in fabric/shm/README.md.
 *
 * Threads and locks. Each fabric has one progress thread owning an epoll set
 * of a wake eventfd and, per endpoint, its Unix socket (control messages,
 * peer death) and its doorbell eventfd (the peer produced or consumed ring
 * slots). User threads queue work (rf_post, rf_post_recv) under the
 * endpoint lock and wake the thread; the progress thread executes the work
 * requests, in posting order, with fab->mu and ep->lock held, except that
 * it drops ep->lock while it copies the data of the request at the head of
 * the queue, or a message's data into or out of a ring slot (shm_post.c:
 * nobody else touches the head, the ring or the receive being filled, maps
 * or unmaps segments, or fails the endpoint meanwhile: ep->copying keeps
 * rf_post from running work inline then). Exception: a one-sided
 * request of at most SHM_INLINE_MAX bytes posted on an endpoint with
 * nothing queued runs at once in rf_post (ep->lock held). ep->lock is a
 * spin lock (core/spinlock.h): held for short sections (an inline request,
 * a control message, a few system calls that do not block), never across a
 * wait. Lock order: shm_seg_mu (process-wide segments) -> fab->mu ->
 * ep->lock -> cq->mu -> cq->lock.
 *
 * Semantics beyond fabric.h:
 *  - One-sided work is executed by the initiator: it checks the request
 *    against the target's region table (mapped read-only) and copies to or
 *    from the target's segment mapping (or runs the __atomic op on it).
 *  - At most one send/write_imm is in flight per endpoint; work behind it
 *    waits for the receiver's acknowledgement (so a send that fails with
 *    RNR never lets later work run, as on an RC QP).
 *  - Error state: the work that caused it gets its own status, every other
 *    outstanding work request and posted receive RF_ERR_DISCONNECTED; the
 *    peer is told with an ERR message. Later rf_post / rf_post_recv return
 *    RF_ERR_DISCONNECTED and post nothing.
 *  - Dead peer: its socket hangs up (EOF). Long copies check the socket
 *    every SHM_COPY_CHUNK bytes. A live but frozen receiver fails an
 *    in-flight send/write_imm after RF_PEER_TIMEOUT_MS + RF_RNR_TIMEOUT_MS
 *    without consuming a slot. */
#ifndef RF_FABRIC_SHM_H
#define RF_FABRIC_SHM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/spinlock.h"
#include "fabric/provider.h"
#include "rdmaflow/clock.h"

#define SHM_MAGIC   0x524d4853u /* "SHMR" */
#define SHM_VERSION 1

/* Region table: fixed size, one memfd per fabric, mapped read-only by
 * peers. The entry of an rkey is one of the SHM_PROBE_WINDOW slots from
 * index rkey % SHM_TABLE_ENTRIES; an rkey this provider picks is
 * generation << SHM_TABLE_BITS | index, in the window's first slot. */
#define SHM_TABLE_BITS    12
#define SHM_TABLE_ENTRIES (1u << SHM_TABLE_BITS)
#define SHM_PROBE_WINDOW  16
/* Segments a peer may make this process map on one endpoint. */
#define SHM_MAX_PEER_SEGS 4096
/* Largest segment a peer may announce (virtual address space only). */
#define SHM_MAX_SEG_LEN (1ull << 40)
/* Rings: one per direction and endpoint, owned (created and sized) by the
 * receiver; the sender maps it with this fixed size. */
#define SHM_RING_SLOTS 32
#define SHM_SLOT_DATA  (64 * 1024)
/* Copies are done in pieces of this size, checking the peer in between. */
#define SHM_COPY_CHUNK (1024u * 1024)
/* Pacing: a transfer of at least SHM_PACE_MIN bytes does not start while
 * its send queue's completion queue holds SHM_PACE_BYTES or more of
 * completed, unconsumed transfers, for up to RF_SHM_PACE_MS (default 100;
 * 0 disables); see README.md. */
#define SHM_PACE_MIN   (1u << 20)
#define SHM_PACE_BYTES (16u << 20)
/* One-sided work up to this size posted on an idle endpoint runs in the
 * posting thread (as UCX's shared-memory transports copy in the caller):
 * no queue, no wake-up, no hand-off of the completion. */
#define SHM_INLINE_MAX (1024u * 1024)
/* A queue created RF_CQ_SINGLE_THREADED takes the completions of inline
 * work of at most SHM_LANE_MAX_LEN bytes into a lane of SHM_LANE_SLOTS
 * that only the one application thread touches (plain loads and stores,
 * no lock), while the shared ring is empty (shm_cq.c). Not counted for
 * pacing: the lane holds at most SHM_LANE_SLOTS * SHM_LANE_MAX_LEN. */
#define SHM_LANE_SLOTS   64
#define SHM_LANE_MAX_LEN 4096u
/* Ring slot data of at least this many bytes is copied without ep->lock
 * (a user thread posting or polling meanwhile does not spin on it). */
#define SHM_UNLOCKED_COPY_MIN 4096
/* Work the progress thread runs on one endpoint before moving on. */
#define SHM_RUN_BUDGET 256

/* --- shared-memory layouts ---------------------------------------------- */

/* One region table entry. A seqlock: seq is odd while the owner writes. */
typedef struct shm_tentry {
    uint64_t seq;
    uint64_t addr;    /* first byte (the process's virtual address) */
    uint64_t len;     /* bytes */
    uint64_t seg_off; /* offset of addr in its segment */
    uint32_t rkey;
    uint32_t access; /* rf_access bits */
    uint32_t seg_id;
    uint32_t valid;
    uint64_t pad[2];
} shm_tentry;
_Static_assert(sizeof(shm_tentry) == 64, "table entry is one cache line");
#define SHM_TABLE_BYTES ((size_t)SHM_TABLE_ENTRIES * sizeof(shm_tentry))

enum { SHM_SLOT_FIRST = 1, SHM_SLOT_LAST = 2 };

typedef struct shm_slot {
    uint32_t flags; /* SHM_SLOT_FIRST | SHM_SLOT_LAST */
    uint32_t op;    /* RF_OP_SEND or RF_OP_WRITE_IMM */
    uint32_t chunk; /* payload bytes in this slot (0 for write_imm) */
    uint32_t imm;
    uint64_t total; /* message length */
    uint64_t msg;   /* message number, 1, 2, ... */
    unsigned char data[SHM_SLOT_DATA];
} shm_slot;

typedef struct shm_ring {
    _Alignas(64) uint64_t prod; /* slots produced (sender) */
    _Alignas(64) uint64_t cons; /* slots consumed (receiver) */
    uint64_t acked;             /* last message completed (receiver) */
    _Alignas(64) shm_slot slots[SHM_RING_SLOTS];
} shm_ring;
#define SHM_RING_BYTES (((sizeof(shm_ring) + 4095) / 4096) * 4096)

/* --- control messages on the Unix socket --------------------------------- */

enum shm_msg_type {
    SHM_MSG_CONNECT = 1, /* priv */
    SHM_MSG_ACCEPT,      /* priv; fds: acceptor's rx ring, doorbell */
    SHM_MSG_REJECT,      /* priv */
    SHM_MSG_READY,       /* fds: connector's rx ring, doorbell */
    SHM_MSG_TABLE,       /* fd: region table (remote access granted) */
    SHM_MSG_SEG,         /* a = segment id, c = length; fd: the memfd */
    SHM_MSG_SEG_GONE,    /* a = segment id */
    SHM_MSG_ERR,         /* a = status for the in-flight send/write_imm */
    SHM_MSG_ESTABLISHED, /* acceptor: its grants (if any) were sent */
    SHM_MSG_DONE,        /* connector: its grants (if any) were sent */
};

typedef struct shm_msg {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t a;
    uint32_t len; /* bytes of priv used */
    uint64_t c;
    unsigned char priv[RF_MAX_PRIVATE_DATA + 1];
} shm_msg;

/* Sends one message with up to 2 fds (MSG_DONTWAIT unless blocking). 0 on
 * success, an errno value otherwise. */
int shm_msg_send(int fd, int type, uint32_t a, uint64_t c, const void *priv,
                 size_t len, const int *fds, int nfds);
/* Receives one message without blocking. Returns 1 (message, *nfds fds
 * stored, extra ones closed), 0 at EOF, -EAGAIN when none is waiting, or
 * another negative errno value (a malformed message is -EPROTO). */
int shm_msg_recv(int fd, shm_msg *m, int *fds, int maxfds, int *nfds);
/* Waits up to the deadline for a message (shm_msg_recv's results, and
 * -ETIMEDOUT). */
int shm_msg_wait(int fd, shm_msg *m, int *fds, int maxfds, int *nfds,
                 int64_t deadline);

/* A sealed (no shrink, no grow) memfd of len bytes; -1 with errno. */
int shm_memfd_new(const char *name, size_t len);
/* True if a peer's fd is a regular file (memfd) of at least len bytes that
 * cannot shrink. */
int shm_fd_usable(int fd, uint64_t len);

/* --- objects ---------------------------------------------------------------
 */

typedef struct shm_seg shm_seg;
typedef struct shm_ep shm_ep;

typedef struct shm_fabric {
    rf_fabric base;
    pthread_mutex_t mu;
    int rnr_timeout_ms;
    int hs_timeout_ms;
    int peer_timeout_ms;
    int pace_ms;
    /* Region table. */
    int table_fd;
    shm_tentry *table;
    uint32_t next_gen;
    unsigned char slot_used[SHM_TABLE_ENTRIES];
    struct shm_mr *mrs; /* remote-access regions of this fabric */
    /* Endpoints and the progress thread. */
    shm_ep *eps;
    uint64_t next_ep_id;
    int epfd, wakefd;
    pthread_t thread;
    int stop;
} shm_fabric;

typedef struct shm_mr {
    rf_mr base;
    shm_seg *seg; /* NULL for local-only regions */
    uint32_t index;
    struct shm_mr *next;
} shm_mr;

typedef struct shm_cq {
    rf_cq base;
    rf_spinlock lock; /* v, cap, head, count, lead, paced, waiters */
    rf_completion *v;
    size_t cap, head, count;
    size_t pending;     /* count, readable without the lock (atomic) */
    uint64_t lead;      /* bytes of the transfers completed in v */
    int paced;          /* a progress thread waits for lead to drop */
    int waiters;        /* threads blocked (or about to) in shm_cq_wait */
    pthread_mutex_t mu; /* blocking waiters: taken before lock */
    pthread_cond_t cv;
    /* RF_CQ_SINGLE_THREADED only: the application thread's lane (no
     * lock; see SHM_LANE_SLOTS) */
    uint32_t lane_head, lane_count;
    rf_completion lane[SHM_LANE_SLOTS];
} shm_cq;

/* Connections accepted but whose CONNECT has not arrived yet. */
#define SHM_MAX_PENDING 64

typedef struct shm_pending {
    int fd;
    int64_t deadline;
    char who[64];
} shm_pending;

typedef struct shm_listener {
    rf_listener base;
    int fd;
    shm_pending pending[SHM_MAX_PENDING];
    int npending;
} shm_listener;

typedef struct shm_conn_req {
    rf_conn_req base;
    int fd;
} shm_conn_req;

typedef struct shm_wqe {
    rf_wr wr;
    uint64_t msg;    /* ring message number once pushed */
    uint32_t pushed; /* slots pushed so far */
    uint32_t nslots; /* slots the message needs */
    int inflight;    /* pushed (or pushing), waiting for the ack */
} shm_wqe;

typedef struct shm_rqe {
    void *buf;
    size_t len;
    void *context;
} shm_rqe;

typedef struct shm_peer_seg {
    uint32_t id;
    size_t len;
    unsigned char *map;
} shm_peer_seg;

enum { SHM_EP_OK = 0, SHM_EP_ERROR };
/* Handshake state of an accepted endpoint (connectors start UP). */
enum { SHM_HS_UP = 0, SHM_HS_WAIT_READY, SHM_HS_WAIT_DONE };

struct shm_ep {
    rf_ep base;
    shm_fabric *fab;
    uint64_t id;
    shm_ep *next;
    rf_spinlock lock;
    int sock;
    int state;
    int granted; /* table and segments sent to the peer */
    int gated;   /* created with RF_EP_REMOTE_ACCESS_OFF */
    int hs;      /* SHM_HS_* */
    /* The progress thread copies ring slot data without ep->lock
     * (shm_post.c); rf_post then queues instead of running inline. */
    int copying;
    int64_t hs_deadline;
    char peer[64];
    /* Send queue (ring buffer of max_send_wr). */
    shm_wqe *sq;
    uint32_t sq_cap, sq_head, sq_count;
    /* Receive queue. */
    shm_rqe *rq;
    uint32_t rq_cap, rq_head, rq_count;
    /* Peer's regions: table (read-only) and segments. */
    const shm_tentry *peer_table;
    shm_peer_seg *psegs;
    uint32_t npsegs, psegs_cap;
    uint32_t *pseg_slot; /* id -> psegs index + 1 (shm_ep.c) */
    uint32_t pseg_mask;  /* slots - 1 (2 x psegs_cap, a power of 2) */
    uint64_t pseg_seed;
    /* Rings and doorbells. */
    shm_ring *rx, *tx;
    int rx_ring_fd; /* until passed to the peer */
    int my_efd, peer_efd;
    uint64_t tx_prod, rx_cons, next_msg;
    /* Message being received into the receive at rq_head. */
    int rx_active;
    uint64_t rx_off, rx_total, rx_msg;
    uint32_t rx_op, rx_imm;
    int64_t rnr_since;     /* rf_now_ms() when a message found no receive */
    int64_t pace_since;    /* rf_now_ms() when the head started to wait */
    int64_t tx_wait_since; /* the in-flight message's receiver last moved */
    uint64_t tx_seen_cons;
};

/* shm_provider.c */
extern const rf_provider_ops rf_shm_provider;
void shm_fab_wake(shm_fabric *fab);

/* shm_mr.c */
rf_status shm_mr_reg(rf_fabric *fabric, void *addr, size_t len, uint32_t access,
                     rf_mr **out);
/* The same with the rkey chosen by the caller (the auto provider gives
 * every provider's registration of a region one rkey); 0: pick one. */
rf_status shm_mr_reg_keyed(rf_fabric *fabric, void *addr, size_t len,
                           uint32_t access, uint32_t want_rkey, rf_mr **out);
rf_status shm_mr_dereg(rf_mr *mr);
/* Sends the table and every segment of the fabric to the peer (fab->mu and
 * ep->lock held). */
rf_status shm_grant(shm_ep *ep);

/* shm_cq.c */
rf_status shm_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out);
void shm_cq_destroy(rf_cq *cq);
int shm_cq_poll(rf_cq *cq, rf_completion *out, int max);
int shm_cq_wait(rf_cq *cq, rf_completion *out, int max, int timeout_ms);
void shm_cq_push(shm_cq *cq, const rf_completion *c);
/* A completion of work the posting thread ran itself (rf_post, ep->lock
 * held): into the lane if the queue allows it, else shm_cq_push. */
void shm_cq_push_inline(shm_cq *cq, const rf_completion *c);
/* Bytes of completed transfers not yet taken; marks the queue so taking
 * completions wakes the fabric's progress thread. */
uint64_t shm_cq_lead(shm_cq *cq);

/* shm_cm.c */
rf_status shm_listen(rf_fabric *fabric, const char *host, uint16_t port,
                     rf_listener **out);
void shm_listener_close(rf_listener *listener);
rf_status shm_get_request(rf_listener *listener, int timeout_ms,
                          rf_conn_req **out);
rf_status shm_accept(rf_conn_req *req, const rf_ep_attr *attr, const void *priv,
                     size_t priv_len, rf_ep **out);
void shm_reject(rf_conn_req *req, const void *priv, size_t priv_len);
rf_status shm_connect(rf_fabric *fabric, const char *host, uint16_t port,
                      const rf_ep_attr *attr, const void *priv, size_t priv_len,
                      int timeout_ms, rf_ep **out);

/* shm_ep.c */
/* Creates an endpoint's local resources (queues, rx ring, doorbell). */
rf_status shm_ep_new(shm_fabric *fab, const rf_ep_attr *attr, int sock,
                     const char *peer, shm_ep **out);
/* Maps the peer's ring and keeps its doorbell (fds consumed). */
rf_status shm_ep_attach(shm_ep *ep, int ring_fd, int efd);
/* Adds a connected endpoint to the fabric's list (and grants access
 * unless gated); then, when the handshake is over, to the progress
 * thread's epoll set. */
rf_status shm_ep_register(shm_ep *ep, int gated);
rf_status shm_ep_watch(shm_ep *ep);
/* Handshake: waits for a message of this type (no fds), handling the
 * TABLE and SEG messages that precede it. */
rf_status shm_ep_handshake_wait(shm_ep *ep, int type, int64_t deadline);
/* Handles one control message (ep->lock held; the fds are consumed). */
void shm_ep_handle(shm_ep *ep, const shm_msg *m, int *fds, int nfds);
void shm_ep_free(shm_ep *ep);
void shm_ep_close(rf_ep *ep);
rf_status shm_ep_state(const rf_ep *ep);
rf_status shm_ep_enable_remote_access(rf_ep *ep);
/* Puts the endpoint in the error state (ep->lock held): the in-flight or
 * failing work at the head gets head_status (0: RF_ERR_DISCONNECTED),
 * everything else RF_ERR_DISCONNECTED. Tells the peer (ERR with
 * peer_status) when notify. */
void shm_ep_fail(shm_ep *ep, rf_status head_status, int notify,
                 rf_status peer_status, const char *why);
/* Reads and handles every control message waiting on the socket (ep->lock
 * held). */
void shm_ep_drain(shm_ep *ep);
/* True if the peer hung up (looks at the socket without blocking or
 * reading; ep->lock need not be held). The caller fails the endpoint. */
int shm_ep_hung_up(const shm_ep *ep);
void shm_ep_complete(shm_ep *ep, const rf_wr *wr, rf_status st);
/* The successful completion of work rf_post ran inline (ep->lock held):
 * into the queue's lane where it may go (shm_cq_push_inline). */
void shm_ep_complete_inline(shm_ep *ep, const rf_wr *wr);
/* The peer's segment id, reading waiting control messages if it is not
 * known yet; NULL if the peer never announced it. */
shm_peer_seg *shm_ep_pseg(shm_ep *ep, uint32_t id);

/* shm_post.c */
rf_status shm_post(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted);
rf_status shm_post_recv(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                        void *context);
/* Runs queued work and ring traffic of one endpoint (progress thread,
 * fab->mu and ep->lock held). Returns 1 if work remains that can run now;
 * lowers *deadline to when a timed wait (RNR, pacing) ends. */
int shm_ep_progress(shm_ep *ep, int64_t *deadline);
/* Completes the in-flight send/write_imm at the head with RF_OK if the
 * receiver has acknowledged it (ep->lock held); returns 1 if it did. */
int shm_ep_take_ack(shm_ep *ep);

#endif
