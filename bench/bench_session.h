/* bench/bench_session.h: the resources one side of a benchmark connection
 * owns (completion queues, one registered region, the endpoint, the peer's
 * descriptor), the region's layout (identical on both sides for a given
 * maximum size, so each side can address the other's buffers), control
 * messaging over send/recv, completion polling with a timeout, and the data
 * patterns used to verify that operations really moved data. */
#ifndef RF_BENCH_SESSION_H
#define RF_BENCH_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmaflow/fabric.h>

#include "bench_proto.h"

#define BENCH_SEED_CLIENT 0x43
#define BENCH_SEED_SERVER 0x53
#define BENCH_SLOT_SIZE   64 /* one control receive buffer */

/* Offsets in the registered region. atomic, src and dst depend only on the
 * maximum size, so they are the same in the peer's region. */
typedef struct bench_layout {
    size_t atomic;    /* 8-byte target word of fetch_add / cmp_swap */
    size_t src;       /* source of writes; what the peer reads */
    size_t dst;       /* where the peer writes; destination of reads */
    size_t results;   /* atomic results, one 8-byte word per TX slot */
    size_t ctrl_send; /* outgoing control message */
    size_t ctrl_recv; /* receive slots, BENCH_SLOT_SIZE each */
    size_t total;
} bench_layout;

typedef enum bench_wait {
    BENCH_WAIT_SPIN, /* busy poll: measured or active phases */
    BENCH_WAIT_IDLE, /* poll with short sleeps: passive phases */
} bench_wait;

typedef struct bench_session {
    const char *who; /* message prefix: "rf-bench" or "rf-bench server" */
    rf_fabric *fab;  /* not owned */
    rf_cq *scq, *rcq;
    rf_mr *mr;
    unsigned char *mem;
    bench_layout lay;
    uint32_t tx_depth;
    uint32_t recv_slots;
    rf_ep *ep;
    rf_mr_desc peer; /* the peer's region */
    bool events;     /* rf_cq_wait instead of polling */
    bool manual;     /* the fabric has manual progress: spins poll the CQs */
    int spin_us;     /* with events: the CQs' spin, -1 = the library's */
    uint64_t timeout_ns;
} bench_session;

/* Allocates and registers a region for messages up to max_size and
 * tx_depth outstanding operations, and creates the completion queues.
 * Returns 0 or -1 (message printed). */
int bench_session_init(bench_session *s, const char *who, rf_fabric *fab,
                       uint64_t max_size, uint32_t tx_depth, bool events,
                       int spin_us, int timeout_s);
/* Endpoint attributes matching the session's queues. */
rf_ep_attr bench_session_ep_attr(const bench_session *s);
/* Posts every receive slot (after the endpoint exists). */
int bench_session_post_recvs(bench_session *s);
/* Reposts receive slot (the context of a receive completion). */
int bench_session_repost(bench_session *s, void *slot_context);
/* Closes the endpoint, deregisters and frees. The fabric stays open. */
void bench_session_fini(bench_session *s);

static inline unsigned char *bench_at(const bench_session *s, size_t offset)
{
    return s->mem + offset;
}
static inline uint64_t bench_peer_addr(const bench_session *s, size_t offset)
{
    return s->peer.addr + offset;
}

/* Prints "<who>: <message>" to stderr. */
void bench_err(const bench_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Waits for one completion on cq. Returns 1, or -1 on error or timeout
 * (message printed). The completion's status is for the caller to check. */
int bench_poll1(const bench_session *s, rf_cq *cq, rf_completion *c,
                bench_wait how);
/* Waits for the completion of the send-queue work whose context is ctx;
 * any other completion, or an error status, is a failure. */
int bench_wait_send(const bench_session *s, void *ctx, bench_wait how);

/* Sends a control message and waits for its completion. */
int bench_send_msg(bench_session *s, const bench_msg *m);
/* Receives the next arrival (reposting its slot): a control message (*imm
 * set false, m filled) or a write_imm (*imm set true, *imm_value filled). */
int bench_recv_any(bench_session *s, bench_wait how, bench_msg *m, bool *imm,
                   uint32_t *imm_value);
/* bench_recv_any without waiting: 1 after an arrival, 0 when there was
 * none, -1 on an error (said). */
int bench_try_recv(bench_session *s, bench_msg *m, bool *imm,
                   uint32_t *imm_value);
/* Receives the next control message. A write_imm arrival instead is a
 * protocol error. */
int bench_recv_msg(bench_session *s, bench_msg *m, bench_wait how);
/* Receives the next control message and checks its type and status. */
int bench_expect_msg(bench_session *s, bench_msg_type type, bench_msg *m);

/* Data patterns: byte j of the pattern for message size `size` from the
 * side with `seed`. */
void bench_pattern_fill(unsigned char *p, uint64_t len, uint64_t size,
                        unsigned seed);
/* Offset of the first byte that differs from the pattern, or -1. */
int64_t bench_pattern_check(const unsigned char *p, uint64_t len, uint64_t size,
                            unsigned seed);
/* Initial value of the atomic word for a run of this size. */
uint64_t bench_atomic_base(uint64_t size);

#endif
