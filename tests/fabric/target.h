/* tests/fabric/target.h: the target role and the driver's handle on it.
 *
 * The target process opens the fabric, listens on --host port 0, prints
 * "port N" and then serves two things at once: an acceptor thread that
 * accepts every connection request (replying with the request's private data
 * with bit 7 set on each byte; requests whose data starts with 'R' are
 * rejected with that reply instead, and 'O' requests are answered by an
 * rf_accept with oversize private data, which must fail; 'G' requests are
 * accepted with RF_EP_REMOTE_ACCESS_OFF, until an "enable TOKEN" command;
 * "hwm" gives the target's peak resident memory in kB)
 * and closes endpoints
 * once they are disconnected; and a line protocol on stdin/stdout through
 * which the driver registers regions, fills and verifies them (including
 * canary guards around each region, inside the same allocation but outside
 * the registered range), posts and checks receives, and inspects endpoints
 * (found by the private data "token" their connector sent). The target never
 * touches region memory except on command, so everything the driver sees in
 * it was done by the fabric. */
#ifndef RF_TESTS_FABRIC_TARGET_H
#define RF_TESTS_FABRIC_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "tests/common/proc.h"

/* The role's entry point (argv after the common options). */
int rt_target_main(void);

typedef struct rt_target {
    rft_child proc;
    uint16_t port;
} rt_target;

/* Driver side. Every call fails the test unless the target replies "ok". */
void tgt_start(rt_target *t);
void tgt_stop(rt_target *t);
/* Sends a command and returns the reply after "ok" (may be empty). */
__attribute__((format(printf, 4, 5))) void
tgt_cmd(rt_target *t, char *reply, size_t cap, const char *fmt, ...);
/* Sends a command without waiting; collect with tgt_reply. */
__attribute__((format(printf, 2, 3))) void tgt_send(rt_target *t,
                                                    const char *fmt, ...);
void tgt_reply(rt_target *t, char *reply, size_t cap, int timeout_ms);

void tgt_region(rt_target *t, int id, size_t size, uint32_t access,
                size_t guard, rf_mr_desc *desc);
void tgt_fill(rt_target *t, int id, uint64_t seed);
/* Region holds pattern seed_in in [off, off+len), seed_out elsewhere, and
 * its guards are intact. */
void tgt_verify(rt_target *t, int id, uint64_t off, uint64_t len,
                uint64_t seed_in, uint64_t seed_out);
uint64_t tgt_get(rt_target *t, int id, uint64_t off);
void tgt_set(rt_target *t, int id, uint64_t off, uint64_t value);
/* Waits (up to timeout_ms) for the target's endpoint of `token` to be in the
 * error state; returns 1 if it is, 0 if still connected at the deadline. */
int tgt_ep_disconnected(rt_target *t, const char *token, int timeout_ms);

typedef struct tgt_stats {
    long accepted, rejected, accept_errors, open, oversize_ok, oversize_bad;
} tgt_stats;
tgt_stats tgt_get_stats(rt_target *t);
/* Waits until the target has handled (accepted, rejected or failed) at least
 * n connection requests, then returns its counters. */
tgt_stats tgt_wait_handled(rt_target *t, long n);

#endif
