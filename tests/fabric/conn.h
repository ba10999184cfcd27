/* tests/fabric/conn.h: fabric, buffer, endpoint and completion helpers used
 * by the cases and the initiator roles. All of them fail the test (check.h)
 * instead of returning errors, except the rt_try_* variants. */
#ifndef RF_TESTS_FABRIC_CONN_H
#define RF_TESTS_FABRIC_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"

/* Queue sizes used for every endpoint the suite creates. */
#define RT_SEND_WR  4096
#define RT_RECV_WR  4096
#define RT_CQ_DEPTH 16384

/* Opens the provider named by --provider, bound to --host. */
rf_fabric *rt_fabric_open(void);

/* A page-aligned buffer registered on a fabric. */
typedef struct rt_buf {
    unsigned char *p;
    size_t len;
    rf_mr *mr;
} rt_buf;

void rt_buf_alloc(rf_fabric *fabric, rt_buf *b, size_t len, uint32_t access);
void rt_buf_free(rt_buf *b);

/* An endpoint with its own completion queue (send and receive). */
typedef struct rt_conn {
    rf_ep *ep;
    rf_cq *cq;
} rt_conn;

/* Connects to --host:port with private data `token` (a short ASCII string
 * the target uses to find the endpoint). */
void rt_connect(rf_fabric *fabric, uint16_t port, const char *token,
                rt_conn *c);
/* Same with raw private data; returns the rf_connect status (c->ep is NULL
 * unless RF_OK). The completion queue is created either way. */
rf_status rt_try_connect(rf_fabric *fabric, uint16_t port, const void *priv,
                         size_t priv_len, int timeout_ms, rt_conn *c);
/* rt_try_connect with a queue created with cq_flags (rf_cq_flags). */
rf_status rt_try_connect_cq(rf_fabric *fabric, uint16_t port, const void *priv,
                            size_t priv_len, int timeout_ms, uint32_t cq_flags,
                            rt_conn *c);
void rt_conn_close(rt_conn *c);

/* Collects exactly n completions within timeout_ms into out. */
void rt_wait_n(rf_cq *cq, rf_completion *out, int n, int timeout_ms);
/* Collects one completion. */
rf_completion rt_wait_one(rf_cq *cq, int timeout_ms);
/* Fails if any completion arrives within ms. */
void rt_expect_quiet(rf_cq *cq, int ms, const char *why);

/* Checks one completion's context, op, status and (unless len < 0) len. */
void rt_expect_comp(const rf_completion *c, const char *what, void *context,
                    rf_op op, rf_status status, long long len);

/* A work request moving len bytes between local (in mr) and raddr (rkey),
 * with local as its context; set flags, imm, compare_add and swap after it
 * where the op needs them. */
rf_wr rt_wr(rf_op op, void *local, size_t len, rf_mr *mr, uint64_t raddr,
            uint32_t rkey);
/* Posts one work request and waits for its (successful) completion. */
void rt_do(rt_conn *c, rf_wr wr, const char *what);
/* rt_do of an 8-byte atomic (RF_OP_FETCH_ADD: add is the addend;
 * RF_OP_CMP_SWAP: add is the compare value, swap the new one) into *res;
 * returns *res. */
uint64_t rt_atomic(rt_conn *c, rf_op op, uint64_t *res, rf_mr *mr,
                   uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t swap,
                   const char *what);

/* After an endpoint entered the error state: rf_ep_state reports
 * RF_ERR_DISCONNECTED, and new work either is refused by rf_post with
 * RF_ERR_DISCONNECTED or completes with RF_ERR_DISCONNECTED (signaled and
 * unsignaled alike). local/mr: an 8-byte buffer for the probes. */
void rt_expect_dead(rt_conn *c, void *local, rf_mr *mr, uint64_t raddr,
                    uint32_t rkey);

/* Writes pattern(seed) to [off, off+len) of the remote region, reads it back
 * into another part of local (which must hold 2 * len bytes) and checks it
 * byte for byte. */
void rt_roundtrip(rt_conn *c, rt_buf *local, const rf_mr_desc *remote,
                  uint64_t off, size_t len, uint64_t seed);

#endif
