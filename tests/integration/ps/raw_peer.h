/* tests/integration/ps/raw_peer.h: a hand-driven fabric peer of a ps task,
 * for fault tests: connects with any private data, sends any bytes, speaks
 * the protocol through the codec when asked, posts raw one-sided work, and
 * waits for the ps to drop it. */
#ifndef RF_TESTS_INTEGRATION_PS_RAW_PEER_H
#define RF_TESTS_INTEGRATION_PS_RAW_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ps/proto.h"
#include "rdmaflow/fabric.h"

typedef struct raw_peer {
    rf_fabric *f;
    rf_cq *cq;
    rf_ep *ep;
    unsigned char *mem; /* [0, 64K) receives, [64K, 128K) sends */
    rf_mr *mr;
    uint32_t req;
    /* Receive completions taken while waiting for a send's: fabric.h orders
     * completions per queue, not a receive after the send it answers, so a
     * reply may be reported first (shm). raw_recv returns these first. */
    rf_completion held[8];
    uint32_t nheld;
    uint32_t acks; /* ack ring words taken (raw_wait_imm) */
} raw_peer;

/* Connects with priv; returns the rf_connect status (no check). */
rf_status raw_connect(raw_peer *r, rf_fabric *f, uint16_t port,
                      const void *priv, size_t len);
/* Connects with a valid ps hello for client id. */
void raw_connect_ok(raw_peer *r, rf_fabric *f, uint16_t port, uint32_t id,
                    bool chief);
/* Sends len bytes (copied) and waits for the send's completion. */
void raw_send(raw_peer *r, const void *buf, size_t len);
/* The same, returning the completion's status. */
rf_status raw_send_status(raw_peer *r, const void *buf, size_t len);
/* The next receive's bytes (up to cap), within timeout; returns its length
 * or fails. */
size_t raw_recv(raw_peer *r, void *buf, size_t cap, int timeout_ms);
/* Sends a request and returns its reply's length; *reply points at the
 * reply's bytes until the next call. */
size_t raw_rpc(raw_peer *r, const void *msg, size_t len,
               const unsigned char **reply);
/* HELLO (valid, with an ack ring in r->mem) and its reply. */
void raw_hello(raw_peer *r, uint32_t id, bool chief);
/* Region 0 of the ps arena (REGIONS_REQ). */
rf_mr_desc raw_region0(raw_peer *r);
/* The directory entry of the shard named name (the first DIR_REPLY page);
 * fails the case when it is not there. */
ps_entry raw_dir_entry(raw_peer *r, const char *name);
/* Posts one work request on the peer's endpoint and returns the status of
 * its completion. */
rf_status raw_do(raw_peer *r, rf_wr wr);
/* The next write_imm into the ack ring raw_hello set up (an ack): returns
 * its ring word, the immediate in *imm (may be NULL); reposts the receive. */
uint64_t raw_wait_imm(raw_peer *r, int timeout_ms, uint32_t *imm);
/* A WRITE_WITH_IMM of len bytes at local (in the peer's region) to
 * remote_addr/rkey with immediate imm, then its ack: fails the case unless
 * the ack carries imm; returns the ack's ring word. */
uint64_t raw_write_imm_acked(raw_peer *r, const void *local, size_t len,
                             uint64_t remote_addr, uint32_t rkey, uint32_t imm);
/* Waits until the ps dropped the connection (an error completion or the
 * endpoint in the error state). */
void raw_expect_dropped(raw_peer *r, int timeout_ms);
/* Posts a one-sided request the ps answers by dropping the connection,
 * then raw_expect_dropped: its own completion is RF_OK or, when the drop
 * beat the responder's ACK (rxe), RF_ERR_DISCONNECTED; any other status
 * fails the case. */
void raw_do_dropped(raw_peer *r, rf_wr wr, int timeout_ms);
void raw_close(raw_peer *r);

#endif
