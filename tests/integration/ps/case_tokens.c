/* tests/integration/ps/case_tokens.c: a task's slot is its own across its
 * restarts (issue 26 items 1 and 4; ps/ps_token.c, ps/ps_server_token.c)
 * with a real ps helper process whose log is read back: without a secret,
 * a stranger (a raw peer without the task's token) is refused a bound id
 * and the chief's role at connect, logged with its address, while the
 * task itself (a new client in this process: the same token) takes its
 * slot back, logged too; a job token refuses any other token. With a
 * secret, 16 idle connections from this host do not keep a returning task
 * out: its token lets it past the caps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps/proto.h"
#include "rdmaflow/clock.h"
#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/raw_peer.h"

/* A connect of id with flags (and token if not NULL): its status, the
 * reject text in why. */
static rf_status raw_try(raw_peer *r, rf_fabric *f, uint16_t port, uint32_t id,
                         uint32_t flags, const unsigned char *token, char *why,
                         size_t len)
{
    ps_conn_hello h = {.client_id = id, .flags = flags};
    if (token) {
        h.flags |= PS_CONN_FLAG_TOKEN;
        memcpy(h.token, token, PS_TOKEN_LEN);
    }
    unsigned char priv[PS_CONN_HELLO_MAX];
    ps_conn_hello_encode(&h, priv);
    rf_status st = raw_connect(r, f, port, priv, ps_conn_hello_size(&h));
    size_t n = 0;
    const char *data = st == RF_OK ? NULL : rf_connect_reject_data(&n);
    snprintf(why, len, "%.*s", (int)n, data ? data : "");
    return st;
}

static void expect_stranger_refused(rf_fabric *f, uint16_t port, uint32_t id,
                                    uint32_t flags, const unsigned char *tok,
                                    const char *what)
{
    raw_peer r;
    char why[128];
    rf_status st = raw_try(&r, f, port, id, flags, tok, why, sizeof why);
    CHECK(st == RF_ERR_UNAVAILABLE &&
              strncmp(why, PS_REJECT_AUTH, strlen(PS_REJECT_AUTH)) == 0,
          "%s: connect %s ('%s'), want an \"auth: \" reject", what,
          rf_status_string(st), why);
    rft_note("%s: rejected ('%s')", what, why);
    raw_close(&r);
}

void case_tokens_gap(void)
{
    char dir[] = "/tmp/rf-tokens-XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp");
    setenv("RF_TOKEN_DIR", dir, 1);
    unsetenv("RF_JOB_TOKEN");
    char log[256];
    pt_ps ps;
    pt_start_logged_ps(&ps, "ps-tokens", NULL, log, sizeof log);
    rf_fabric *f = pt_fabric();
    rf_ps_client *chief = pt_auth_client(f, ps.port, 0, true, NULL);
    rf_ps_client *w1 = pt_auth_client(f, ps.port, 1, false, NULL);
    CHECK_OK(rf_ps_global_step_write(chief, 630));
    /* worker 1's restart gap */
    rf_ps_client_close(w1);
    unsigned char other[PS_TOKEN_LEN];
    memset(other, 0x5a, sizeof other);
    expect_stranger_refused(f, ps.port, 1, 0, NULL, "id 1 without a token");
    expect_stranger_refused(f, ps.port, 1, 0, other, "id 1 with another token");
    pt_expect_log(log, pt_at_host("refusing client 1 from "));
    pt_expect_log(log, "client id 1 belongs to the task first seen from");
    /* the chief's role, under its id and under a new one */
    expect_stranger_refused(f, ps.port, 0, PS_CONN_FLAG_CHIEF, NULL,
                            "the chief's id without a token");
    expect_stranger_refused(f, ps.port, 7, PS_CONN_FLAG_CHIEF, other,
                            "the chief's role from id 7");
    pt_expect_log(log, "the chief's role belongs to client 0");
    /* a new id is a new task (no role binding here): in, but SHUTDOWN is
     * the chief's alone */
    raw_peer r;
    char why[128];
    CHECK_OK(raw_try(&r, f, ps.port, 7, 0, other, why, sizeof why));
    raw_hello(&r, 7, false);
    unsigned char msg[64];
    size_t len;
    CHECK_OK(ps_enc_empty(msg, sizeof msg, PS_MSG_SHUTDOWN_REQ, 9, &len));
    const unsigned char *reply;
    size_t n = raw_rpc(&r, msg, len, &reply);
    static ps_error_reply er;
    CHECK_OK(ps_dec_error_reply(reply, n, &er));
    CHECK(strstr(er.text, "only the chief"), "SHUTDOWN from id 7: %s", er.text);
    pt_expect_log(log, pt_at_host("refusing SHUTDOWN from client 7 from "));
    raw_close(&r);
    /* worker 1 restarted: the same token (RF_TOKEN_DIR), its slot back */
    w1 = pt_auth_client(f, ps.port, 1, false, NULL);
    pt_expect_log(log, pt_at_host("client 1 from "));
    pt_expect_log(log, "takes its slot back (the same task token");
    int64_t gs = 0;
    CHECK_OK(rf_ps_global_step_read(w1, &gs));
    CHECK(gs == 630, "global_step %lld after the gap, want 630", (long long)gs);
    rf_ps_client_close(w1);
    CHECK_OK(rf_ps_shutdown(chief));
    rft_wait_ok(&ps.child, rft_ms(10000));
    rf_ps_client_close(chief);

    /* a job token: any other token is refused, bound or not */
    setenv("RF_JOB_TOKEN", "job-a", 1);
    pt_start_logged_ps(&ps, "ps-jobtoken", NULL, log, sizeof log);
    unsetenv("RF_JOB_TOKEN");
    rf_ps_client *c = NULL;
    CHECK_ST(pt_try_auth_client(f, ps.port, 0, true, NULL, rft_ms(5000), &c),
             RF_ERR_AUTH);
    pt_expect_log(log, "presents a token not of this job");
    setenv("RF_JOB_TOKEN", "job-a", 1);
    chief = pt_auth_client(f, ps.port, 0, true, NULL);
    unsetenv("RF_JOB_TOKEN");
    CHECK_OK(rf_ps_shutdown(chief));
    rft_wait_ok(&ps.child, rft_ms(10000));
    rf_ps_client_close(chief);
    rf_fabric_close(f);
    unsetenv("RF_TOKEN_DIR");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
}

void case_tokens_flood(void)
{
    const char *path = pt_secret_file("t", 64, 0600);
    rf_cluster_secret *secret = pt_load_secret(path);
    char log[256];
    pt_ps ps;
    const char *extra[] = {"--secret", path, NULL};
    /* long, so that waiting it out is plain to see */
    int hs_ms = rft_ms(8000);
    char hs_env[32];
    snprintf(hs_env, sizeof hs_env, "%d", hs_ms);
    setenv("RF_PS_HANDSHAKE_TIMEOUT_MS", hs_env, 1);
    pt_start_logged_ps(&ps, "ps-tflood", extra, log, sizeof log);
    unsetenv("RF_PS_HANDSHAKE_TIMEOUT_MS");
    rf_fabric *f = pt_fabric();
    rf_ps_client *chief = pt_auth_client(f, ps.port, 0, true, secret);
    rf_ps_client *w1 = pt_auth_client(f, ps.port, 1, false, secret);
    rf_ps_client_close(w1); /* worker 1 restarts */
    enum { N = 16 };
    static raw_peer r[N];
    for (int i = 0; i < N; i++) {
        char why[128];
        CHECK_OK(raw_try(&r[i], f, ps.port, (uint32_t)(10 + i),
                         PS_CONN_FLAG_AUTH, NULL, why, sizeof why));
    }
    /* the per-address cap is full: an anonymous one is turned away */
    raw_peer extra_peer;
    char why[128];
    CHECK_ST(raw_try(&extra_peer, f, ps.port, 40, PS_CONN_FLAG_AUTH, NULL, why,
                     sizeof why),
             RF_ERR_UNAVAILABLE);
    CHECK(strstr(why, "busy: "), "the 17th idle connection: '%s'", why);
    raw_close(&extra_peer);
    long long t0 = rf_now_ms();
    w1 = pt_auth_client(f, ps.port, 1, false, secret);
    long long took = rf_now_ms() - t0;
    rft_note("16 idle connections from this host; worker 1 back in %lld ms "
             "(handshake timeout %d ms)",
             took, hs_ms);
    CHECK(took < hs_ms / 4,
          "worker 1 took %lld ms to get back in past %d idle "
          "connections (handshake timeout %d ms): kept out by the flood",
          took, N, hs_ms);
    int64_t gs = -1;
    CHECK_OK(rf_ps_global_step_read(w1, &gs));
    for (int i = 0; i < N; i++)
        raw_close(&r[i]);
    rf_ps_client_close(w1);
    CHECK_OK(rf_ps_shutdown(chief));
    rft_wait_ok(&ps.child, rft_ms(10000));
    rf_ps_client_close(chief);
    rf_fabric_close(f);
    rf_secret_free(secret);
    unlink(path);
}
