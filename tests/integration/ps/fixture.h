/* tests/integration/ps/fixture.h: the ps suite's own parts on top of the
 * common harness (tests/common: checks, child processes, time budgets): the
 * fabric chosen by RF_FABRIC (default sock) on RF_TEST_HOST (default
 * 127.0.0.1), ps helper processes (rf_ps_helper), clients with the tests'
 * timeouts, registered float buffers and seeded data. Built as the library
 * rf_test_ps so that another suite (tests/integration/session) can start ps
 * tasks the same way: it links rf_test_ps and sets RF_PS_HELPER to
 * $<TARGET_FILE:rf_ps_helper> when its program is not built beside the
 * helper. */
#ifndef RF_TESTS_INTEGRATION_PS_FIXTURE_H
#define RF_TESTS_INTEGRATION_PS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/common/proc.h"

const char *pt_provider(void); /* RF_FABRIC or "sock" */
const char *pt_host(void);     /* RF_TEST_HOST or "127.0.0.1" */
rf_fabric *pt_fabric(void);    /* opens the provider on pt_host() */
/* A port nobody listens on right now (bound then released). */
uint16_t pt_free_port(void);
/* "host:port" in a static ring of buffers. */
const char *pt_addr(uint16_t port);
/* How a listener of this provider names a connection from this host and
 * user: rf_conn_req_peer of a connection made to itself, up to its last
 * colon (pt_host() on sock and verbs, "uid<U>/gid<G>" on shm). Learned once
 * from the provider, so a test of what the ps logs about a peer asserts the
 * same text for any provider. */
const char *pt_peer_addr(void);
/* Whether the provider needs the target process's CPU to serve one-sided
 * reads (sock: its progress thread is the target), so that a stopped
 * (SIGSTOP) ps holds them in flight; false for verbs (the NIC serves them)
 * and shm (the initiator copies from the shared segment). Fails for a
 * provider it does not know. */
bool pt_reads_need_target_cpu(void);

/* Starts the ps helper (RF_PS_HELPER, or rf_ps_helper beside this program)
 * with args (NULL-terminated; the role first), stdin /dev/null. */
void pt_spawn(rft_child *c, const char *name, const char *const *args);

/* A ps helper process: started on port (0: any), READY read back. */
typedef struct pt_ps {
    rft_child child;
    uint16_t port;
    uint64_t incarnation;
} pt_ps;
void pt_ps_start(pt_ps *ps, int index, uint16_t port);

/* ---- data ---- */

/* Deterministic floats in [-1, 1) from (seed, i). */
float pt_rand(uint64_t seed, uint64_t i);
void pt_fill(float *p, size_t n, uint64_t seed);

/* Registered float buffers for tests. */
typedef struct pt_buf {
    float *p;
    size_t n;
    rf_mr *mr;
} pt_buf;
void pt_buf_alloc(rf_ps_client *c, pt_buf *b, size_t n);
/* Frees every pt_buf (call once their clients are closed). */
void pt_buf_release_all(void);

/* A client with the test's timeouts. */
rf_ps_client *pt_client(rf_fabric *f, const char *const *addrs, size_t n,
                        uint32_t id, bool chief);

/* The push primitive a case's apply mode stands for (the ps client takes
 * no mode: ps -> the inbox, worker -> the read-modify-write, locking -> its
 * _locked form), dense and sparse. */
rf_status pt_push(rf_ps_client *c, const rf_ps_xfer *grads, size_t n,
                  rf_ps_apply_mode mode, bool locking);
rf_status pt_push_sparse(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                         size_t n, const float *grad, rf_mr *mr,
                         rf_ps_apply_mode mode, bool locking);

#endif
