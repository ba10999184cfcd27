/* tests/integration/ps/cases.h: the case functions (cases.def) and the small
 * cluster fixture most of them use: n ps helper processes and a chief
 * client (id 0) in the driver. */
#ifndef RF_TESTS_INTEGRATION_PS_CASES_H
#define RF_TESTS_INTEGRATION_PS_CASES_H

#include <sys/types.h>

#include "rdmaflow/ps.h"
#include "rdmaflow/secret.h"
#include "tests/integration/ps/fixture.h"
#include "tests/integration/ps/raw_peer.h"

#define PT_CASE(n, b, d) void case_##n(void);
#include "tests/integration/ps/cases.def"
#undef PT_CASE

#define PT_MAX_PS 4

typedef struct pt_cluster {
    pt_ps ps[PT_MAX_PS];
    size_t n;
    const char *addrs[PT_MAX_PS];
    rf_fabric *f;
    rf_ps_client *chief;
} pt_cluster;

void pt_cluster_start(pt_cluster *c, size_t nps);
/* The chief shuts every ps down; each must exit 0. */
void pt_cluster_stop(pt_cluster *c);

/* Creates (chief) and initialises a float variable with seeded values;
 * returns the handle and fills vals (n floats) with what was written. */
rf_ps_var *pt_make_var(rf_ps_client *c, size_t ps, const rf_ps_shard_spec *spec,
                       uint64_t seed, float *vals);
/* Reads field of var into a fresh registered buffer (freed by caller with
 * free(); its region stays registered with the client). */
float *pt_read_field(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
                     size_t n);

/* case_auth.c: ps helpers whose log is read back. A ps helper with extra
 * args, its log (RF_LOG_FILE) a fresh file named in *log. */
void pt_start_logged_ps(pt_ps *ps, const char *name, const char *const *extra,
                        char *log, size_t loglen);
/* Waits up to 5 s for the ps log to contain needle. */
void pt_expect_log(const char *log, const char *needle);
/* prefix, how the ps names a peer on this host and a colon (a static ring
 * of buffers). */
const char *pt_at_host(const char *prefix);
/* Waits until the ps closed r's connection, failing if any message from it
 * arrives first. */
void pt_expect_dropped_silently(raw_peer *r);
/* Connects offering authentication as client id. */
void pt_raw_auth_peer(raw_peer *r, rf_fabric *f, uint16_t port, uint32_t id);
/* Sends a REGIONS_REQ or DIR_REQ; the ps may have closed already. */
void pt_send_range(raw_peer *r, uint16_t type);
/* AUTH_REQ and the ps's challenge. */
void pt_raw_auth_req(raw_peer *r, uint32_t id);
/* After pt_raw_auth_req: a proof made without the secret, answered by an
 * ERROR_REPLY RF_ERR_AUTH. */
void pt_raw_wrong_proof(raw_peer *r);
/* A secret file of n random bytes with mode (tag names it), and the secret
 * loaded from one. */
const char *pt_secret_file(const char *tag, size_t n, mode_t mode);
rf_cluster_secret *pt_load_secret(const char *path);
/* A client of the ps at port as id (the chief's role if chief), with
 * secret (may be NULL): its connect's status, or the client (failing the
 * case if it cannot connect within 20 s). */
rf_status pt_try_auth_client(rf_fabric *f, uint16_t port, uint32_t id,
                             bool chief, const rf_cluster_secret *secret,
                             int timeout_ms, rf_ps_client **out);
rf_ps_client *pt_auth_client(rf_fabric *f, uint16_t port, uint32_t id,
                             bool chief, const rf_cluster_secret *secret);

#endif
