/* tests/integration/ps/case_states.c: the ps connection state table
 * (ps/ps_server_conn_state.c) seen from raw peers: a message a state does
 * not accept drops the connection, and the drop's log line names the state
 * and the refusal the table gives; the transitions are logged (debug) with
 * their reasons. One ps without a secret (admitted -> waiting for HELLO ->
 * live) and one with (waiting for the auth request -> waiting for the
 * proof -> closing after a wrong proof). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ps/proto.h"
#include "rdmaflow/secret.h"
#include "tests/integration/ps/cases.h"

/* A HELLO for id sent without waiting for an answer (the ps may drop the
 * connection at once). */
static void send_hello(raw_peer *r, uint32_t id)
{
    rf_mr_desc all;
    rf_mr_describe(r->mr, &all);
    ps_hello h = {.client_id = id,
                  .recv_depth = 8,
                  .ring_slots = 8,
                  .ring = {.addr = all.addr, .len = 64, .rkey = all.rkey}};
    unsigned char msg[PS_REQ_MAX];
    size_t len;
    CHECK_OK(ps_enc_hello(msg, sizeof msg, ++r->req, &h, &len));
    raw_send_status(r, msg, len);
}

static void send_auth_req(raw_peer *r, uint32_t id)
{
    ps_auth_req q = {.client_id = id, .flags = PS_CONN_FLAG_AUTH};
    unsigned char msg[PS_REQ_MAX];
    size_t len;
    CHECK_OK(ps_enc_auth_req(msg, sizeof msg, ++r->req, &q, &len));
    raw_send_status(r, msg, len);
}

/* The end of the ps's drop line for a peer: "(<state>): <refusal>" (its
 * start, "dropping the connection of client N from H:P", is checked
 * apart). */
static const char *drop_line(const char *state, const char *why)
{
    static char b[512];
    snprintf(b, sizeof b, "(%s): %s", state, why);
    return b;
}

/* The ps drops r without a word; its log names the state and the refusal. */
static void dropped(raw_peer *r, const char *log, const char *state,
                    const char *why)
{
    pt_expect_dropped_silently(r);
    raw_close(r);
    pt_expect_log(log, drop_line(state, why));
}

/* The ps (exited) logged no transition the table does not allow. */
static void only_allowed_transitions(const char *log)
{
    FILE *f = fopen(log, "r");
    CHECK(f, "cannot read %s", log);
    char line[1024];
    while (fgets(line, sizeof line, f))
        CHECK(!strstr(line, "is not in the state table"), "the ps logged: %s",
              line);
    fclose(f);
}

static void start(pt_ps *ps, const char *name, const char *secret_path,
                  char *log, size_t len)
{
    const char *extra[] = {"--secret", secret_path, NULL};
    setenv("RF_LOG_LEVEL", "debug", 1);
    pt_start_logged_ps(ps, name, secret_path ? extra : NULL, log, len);
    unsetenv("RF_LOG_LEVEL");
}

static void without_secret(rf_fabric *f)
{
    char log[256];
    pt_ps ps;
    start(&ps, "ps-states", NULL, log, sizeof log);
    raw_peer r;
    /* waiting for HELLO: a DIR_REQ first */
    raw_connect_ok(&r, f, ps.port, 61, false);
    pt_send_range(&r, PS_MSG_DIR_REQ);
    dropped(&r, log, "waiting for HELLO", "DIR_REQ before HELLO");
    pt_expect_log(log, "admitted -> waiting for HELLO (receives posted)");
    pt_expect_log(log, "dropping the connection of client 61 from ");
    /* live: a second HELLO, then an AUTH_REQ out of place */
    raw_connect_ok(&r, f, ps.port, 62, false);
    raw_hello(&r, 62, false);
    pt_expect_log(log, "waiting for HELLO -> live (HELLO taken");
    send_hello(&r, 62);
    dropped(&r, log, "live", "a second HELLO");
    pt_expect_log(log, "live -> dead (a second HELLO)");
    raw_connect_ok(&r, f, ps.port, 63, false);
    raw_hello(&r, 63, false);
    send_auth_req(&r, 63);
    dropped(&r, log, "live",
            "unexpected AUTH_REQ (a reply, or a handshake message out of "
            "place)");
    /* the table's refusals leave the ps serving */
    const char *addrs[1] = {pt_addr(ps.port)};
    rf_ps_client *chief = pt_client(f, addrs, 1, 0, true);
    CHECK_OK(rf_ps_shutdown(chief));
    rft_wait_ok(&ps.child, rft_ms(10000));
    rf_ps_client_close(chief);
    only_allowed_transitions(log);
}

static void with_secret(rf_fabric *f)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/rf-states-secret-%d", (int)getpid());
    FILE *fp = fopen(path, "w");
    CHECK(fp, "cannot create %s", path);
    fputs("0123456789abcdef0123456789abcdef0123456789abcdef\n", fp);
    fclose(fp);
    CHECK(chmod(path, 0600) == 0, "chmod %s", path);
    char log[256];
    pt_ps ps;
    start(&ps, "ps-states-auth", path, log, sizeof log);
    raw_peer r;
    /* waiting for the auth request: HELLO */
    pt_raw_auth_peer(&r, f, ps.port, 64);
    send_hello(&r, 64);
    dropped(&r, log, "waiting for the auth request",
            "HELLO on an unauthenticated connection (expected AUTH_REQ)");
    /* waiting for the proof: a DIR_REQ */
    pt_raw_auth_peer(&r, f, ps.port, 65);
    pt_raw_auth_req(&r, 65);
    pt_expect_log(log, "waiting for the auth request -> waiting for the "
                       "proof (AUTH_CHALLENGE sent)");
    pt_send_range(&r, PS_MSG_DIR_REQ);
    dropped(&r, log, "waiting for the proof",
            "DIR_REQ on an unauthenticated connection (expected AUTH_PROOF)");
    /* a wrong proof: refused, closing, then dead */
    pt_raw_auth_peer(&r, f, ps.port, 66);
    pt_raw_auth_req(&r, 66);
    pt_raw_wrong_proof(&r);
    raw_expect_dropped(&r, rft_ms(10000));
    raw_close(&r);
    pt_expect_log(log, "waiting for the proof -> closing (refused)");
    pt_expect_log(log, "dropping the connection of client 66 from ");
    pt_expect_log(log, "(closing): ");
    pt_expect_log(log, "closing -> dead (");
    /* the refusals left the ps serving: an authenticated chief shuts it
     * down */
    rf_cluster_secret *secret = NULL;
    CHECK_OK(rf_secret_load(path, &secret));
    const char *addrs[1] = {pt_addr(ps.port)};
    rf_ps_client_options o = {.client_id = 0,
                              .is_chief = true,
                              .secret = secret,
                              .connect_timeout_ms = rft_ms(20000),
                              .op_timeout_ms = rft_ms(10000)};
    rf_ps_client *chief = NULL;
    CHECK_OK(rf_ps_client_connect(f, addrs, 1, &o, &chief));
    CHECK_OK(rf_ps_shutdown(chief));
    rft_wait_ok(&ps.child, rft_ms(10000));
    rf_ps_client_close(chief);
    only_allowed_transitions(log);
    rf_secret_free(secret);
    unlink(path);
}

void case_conn_states(void)
{
    rf_fabric *f = pt_fabric();
    without_secret(f);
    with_secret(f);
    rf_fabric_close(f);
}
