/* tests/unit/ps/test_conn_state.c: the connection state tables of both
 * sides (ps/ps_server_conn_state.c, ps/ps_client_conn_state.c) row by row:
 * which control messages each ps state handles, which serve pushes and are
 * bound by the handshake deadline, the refusal texts the drops log, the
 * transitions allowed; which requests each client state may send (a
 * request its state may not send is refused naming the state, before
 * anything is posted) and which states are usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "ps/ps_server_internal.h"
#include "tests/common/check.h"

static uint32_t bit(uint16_t t)
{
    return 1u << t;
}

/* The control messages each ps state handles. */
static void test_server_accepts(void)
{
    const uint32_t want[PS_CONN_NUM_STATES] = {
        [PS_CONN_WAIT_AUTH_REQ] = bit(PS_MSG_AUTH_REQ),
        [PS_CONN_WAIT_PROOF] = bit(PS_MSG_AUTH_PROOF),
        [PS_CONN_WAIT_HELLO] = bit(PS_MSG_HELLO),
        [PS_CONN_LIVE] = bit(PS_MSG_REGIONS_REQ) | bit(PS_MSG_DIR_REQ) |
                         bit(PS_MSG_CREATE_REQ) | bit(PS_MSG_SHUTDOWN_REQ) |
                         bit(PS_MSG_LEAVE_REQ) | bit(PS_MSG_SHARD_REQ) |
                         bit(PS_MSG_LEDGER_REQ),
    };
    for (int s = 0; s < PS_CONN_NUM_STATES; s++) {
        for (uint16_t t = 0; t <= PS_MSG_TYPE_END; t++) {
            bool got = ps_conn_state_accepts((ps_conn_state)s, t);
            bool exp = t < PS_MSG_TYPE_END && (want[s] & bit(t));
            CHECK(got == exp, "ps state '%s' %s %s",
                  ps_conn_state_name((ps_conn_state)s),
                  got ? "accepts" : "refuses", ps_msg_type_name(t));
        }
        bool live = s == PS_CONN_LIVE;
        CHECK(ps_conn_state_serves_pushes((ps_conn_state)s) == live,
              "ps state '%s' and pushes", ps_conn_state_name(s));
        bool hs = s == PS_CONN_WAIT_AUTH_REQ || s == PS_CONN_WAIT_PROOF ||
                  s == PS_CONN_WAIT_HELLO;
        CHECK(ps_conn_state_in_handshake((ps_conn_state)s) == hs,
              "ps state '%s' and the handshake deadline",
              ps_conn_state_name(s));
    }
    CHECK(!ps_conn_state_accepts(PS_CONN_NUM_STATES, PS_MSG_HELLO),
          "a state past the table accepts");
    CHECK(strcmp(ps_conn_state_name(PS_CONN_NUM_STATES), "unknown") == 0,
          "a state past the table is named");
}

static void expect_refusal(ps_conn_state s, uint16_t t, const char *want)
{
    char buf[200];
    ps_conn_state_refusal(s, t, buf, sizeof buf);
    CHECK(strcmp(buf, want) == 0, "ps state '%s' refuses %s as '%s', not '%s'",
          ps_conn_state_name(s), ps_msg_type_name(t), buf, want);
}

/* The texts the drops log (tests/integration/ps case_auth.c matches some). */
static void test_server_refusals(void)
{
    expect_refusal(PS_CONN_WAIT_AUTH_REQ, PS_MSG_HELLO,
                   "HELLO on an unauthenticated connection (expected "
                   "AUTH_REQ)");
    expect_refusal(PS_CONN_WAIT_PROOF, PS_MSG_DIR_REQ,
                   "DIR_REQ on an unauthenticated connection (expected "
                   "AUTH_PROOF)");
    expect_refusal(PS_CONN_WAIT_PROOF, PS_MSG_AUTH_REQ,
                   "AUTH_REQ on an unauthenticated connection (expected "
                   "AUTH_PROOF)");
    expect_refusal(PS_CONN_WAIT_HELLO, PS_MSG_REGIONS_REQ,
                   "REGIONS_REQ before HELLO");
    expect_refusal(PS_CONN_WAIT_HELLO, PS_MSG_AUTH_REQ,
                   "AUTH_REQ before HELLO");
    expect_refusal(PS_CONN_LIVE, PS_MSG_HELLO, "a second HELLO");
    expect_refusal(PS_CONN_LIVE, PS_MSG_AUTH_PROOF,
                   "unexpected AUTH_PROOF (a reply, or a handshake message "
                   "out of place)");
    expect_refusal(PS_CONN_LIVE, PS_MSG_DIR_REPLY,
                   "unexpected DIR_REPLY (a reply, or a handshake message "
                   "out of place)");
    expect_refusal(PS_CONN_CLOSING, PS_MSG_DIR_REQ,
                   "a request after its connection was refused");
}

static void test_server_transitions(void)
{
    static const struct {
        ps_conn_state from, to;
        bool ok;
    } cases[] = {
        {PS_CONN_ADMITTED, PS_CONN_WAIT_AUTH_REQ, true},
        {PS_CONN_ADMITTED, PS_CONN_WAIT_HELLO, true},
        {PS_CONN_ADMITTED, PS_CONN_DEAD, true},
        {PS_CONN_ADMITTED, PS_CONN_LIVE, false},
        {PS_CONN_WAIT_AUTH_REQ, PS_CONN_WAIT_PROOF, true},
        {PS_CONN_WAIT_AUTH_REQ, PS_CONN_WAIT_HELLO, false},
        {PS_CONN_WAIT_PROOF, PS_CONN_WAIT_HELLO, true},
        {PS_CONN_WAIT_PROOF, PS_CONN_CLOSING, true},
        {PS_CONN_WAIT_PROOF, PS_CONN_LIVE, false},
        {PS_CONN_WAIT_HELLO, PS_CONN_LIVE, true},
        {PS_CONN_WAIT_HELLO, PS_CONN_CLOSING, true},
        {PS_CONN_WAIT_HELLO, PS_CONN_DEAD, true},
        /* a live connection holds a client slot: only its close ends it */
        {PS_CONN_LIVE, PS_CONN_DEAD, true},
        {PS_CONN_LIVE, PS_CONN_CLOSING, false},
        {PS_CONN_LIVE, PS_CONN_WAIT_HELLO, false},
        {PS_CONN_CLOSING, PS_CONN_DEAD, true},
        {PS_CONN_CLOSING, PS_CONN_LIVE, false},
        {PS_CONN_DEAD, PS_CONN_LIVE, false},
        {PS_CONN_DEAD, PS_CONN_DEAD, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(ps_conn_state_may_follow(cases[i].from, cases[i].to) ==
                  cases[i].ok,
              "ps: '%s' -> '%s' %s", ps_conn_state_name(cases[i].from),
              ps_conn_state_name(cases[i].to),
              cases[i].ok ? "refused" : "allowed");
    /* every name is distinct and said */
    for (int a = 0; a < PS_CONN_NUM_STATES; a++)
        for (int b = a + 1; b < PS_CONN_NUM_STATES; b++)
            CHECK(strcmp(ps_conn_state_name(a), ps_conn_state_name(b)) != 0,
                  "two ps states named '%s'", ps_conn_state_name(a));
}

static void test_client_table(void)
{
    const uint32_t want[CLI_CONN_NUM_STATES] = {
        [CLI_CONN_AUTHENTICATING] =
            bit(PS_MSG_AUTH_REQ) | bit(PS_MSG_AUTH_PROOF),
        [CLI_CONN_HELLO] =
            bit(PS_MSG_HELLO) | bit(PS_MSG_REGIONS_REQ) | bit(PS_MSG_DIR_REQ),
        [CLI_CONN_LIVE] = bit(PS_MSG_REGIONS_REQ) | bit(PS_MSG_DIR_REQ) |
                          bit(PS_MSG_CREATE_REQ) | bit(PS_MSG_SHUTDOWN_REQ) |
                          bit(PS_MSG_LEAVE_REQ) | bit(PS_MSG_SHARD_REQ) |
                          bit(PS_MSG_LEDGER_REQ),
    };
    for (int s = 0; s < CLI_CONN_NUM_STATES; s++) {
        for (uint16_t t = 0; t <= PS_MSG_TYPE_END; t++) {
            bool got = cli_conn_state_may_send((cli_conn_state)s, t);
            bool exp = t < PS_MSG_TYPE_END && (want[s] & bit(t));
            CHECK(got == exp, "client state '%s' %s %s",
                  cli_conn_state_name((cli_conn_state)s),
                  got ? "may send" : "may not send", ps_msg_type_name(t));
        }
        bool usable = s == CLI_CONN_AUTHENTICATING || s == CLI_CONN_HELLO ||
                      s == CLI_CONN_LIVE;
        CHECK(cli_conn_state_usable((cli_conn_state)s) == usable,
              "client state '%s' usable", cli_conn_state_name(s));
        for (int b = s + 1; b < CLI_CONN_NUM_STATES; b++)
            CHECK(strcmp(cli_conn_state_name(s), cli_conn_state_name(b)) != 0,
                  "two client states named '%s'", cli_conn_state_name(s));
    }
    CHECK(cli_conn_state_may_follow(CLI_CONN_CONNECTING, CLI_CONN_HELLO) &&
              cli_conn_state_may_follow(CLI_CONN_AUTHENTICATING,
                                        CLI_CONN_HELLO) &&
              cli_conn_state_may_follow(CLI_CONN_HELLO, CLI_CONN_LIVE) &&
              cli_conn_state_may_follow(CLI_CONN_LIVE, CLI_CONN_DOWN) &&
              cli_conn_state_may_follow(CLI_CONN_DOWN, CLI_CONN_CONNECTING),
          "the client's life");
    CHECK(!cli_conn_state_may_follow(CLI_CONN_CONNECTING, CLI_CONN_LIVE) &&
              !cli_conn_state_may_follow(CLI_CONN_LIVE, CLI_CONN_HELLO) &&
              !cli_conn_state_may_follow(CLI_CONN_DOWN, CLI_CONN_LIVE),
          "client shortcuts allowed");
}

/* cli_rpc's check: the request in the request buffer against the state. */
static void test_client_refuses_request(void)
{
    static unsigned char mem[(size_t)PS_CLI_RECV_DEPTH * PS_MSG_MAX +
                             PS_REQ_MAX + 8u * PS_CLI_RECV_DEPTH];
    ps_cli_conn p = {.index = 3, .mem = mem, .mem_len = sizeof mem};
    snprintf(p.addr, sizeof p.addr, "h:1");
    size_t len;
    /* not connected: the usual RF_ERR_DISCONNECTED */
    CHECK_OK(ps_enc_empty(cli_req_buf(&p), PS_REQ_MAX, PS_MSG_SHUTDOWN_REQ, 1,
                          &len));
    CHECK_ST(cli_conn_check_request(&p, len), RF_ERR_DISCONNECTED);
    CHECK(strstr(rf_error_message(), "not connected (never connected)"), "%s",
          rf_error_message());
    /* authenticating: a SHUTDOWN_REQ may not go out */
    cli_conn_set_state(&p, CLI_CONN_CONNECTING, "test");
    cli_conn_set_state(&p, CLI_CONN_AUTHENTICATING, "test");
    CHECK(cli_conn_usable(&p), "authenticating is usable");
    CHECK_ST(cli_conn_check_request(&p, len), RF_ERR_INVALID_ARG);
    CHECK(strstr(rf_error_message(),
                 "ps task 3 (h:1): ps client: SHUTDOWN_REQ may not be sent "
                 "on a connection that is authenticating"),
          "%s", rf_error_message());
    /* saying HELLO: HELLO goes out, SHUTDOWN_REQ does not */
    cli_conn_set_state(&p, CLI_CONN_HELLO, "test");
    CHECK_ST(cli_conn_check_request(&p, len), RF_ERR_INVALID_ARG);
    CHECK(strstr(rf_error_message(), "that is saying HELLO"), "%s",
          rf_error_message());
    ps_hello h = {.client_id = 1, .recv_depth = 8, .ring_slots = 8};
    h.ring.len = 64;
    h.ring.rkey = 1;
    h.ring.addr = 4096;
    CHECK_OK(ps_enc_hello(cli_req_buf(&p), PS_REQ_MAX, 2, &h, &len));
    CHECK_OK(cli_conn_check_request(&p, len));
    /* live: SHUTDOWN_REQ goes out, HELLO does not */
    cli_conn_set_state(&p, CLI_CONN_LIVE, "test");
    CHECK_ST(cli_conn_check_request(&p, len), RF_ERR_INVALID_ARG);
    CHECK(strstr(rf_error_message(), "HELLO may not be sent on a connection "
                                     "that is live"),
          "%s", rf_error_message());
    CHECK_OK(ps_enc_empty(cli_req_buf(&p), PS_REQ_MAX, PS_MSG_SHUTDOWN_REQ, 3,
                          &len));
    CHECK_OK(cli_conn_check_request(&p, len));
    /* down: not connected, saying why */
    snprintf(p.why, sizeof p.why, "shut down by the chief");
    cli_conn_set_state(&p, CLI_CONN_DOWN, p.why);
    CHECK(!cli_conn_usable(&p), "down is usable");
    CHECK_ST(cli_conn_check_request(&p, len), RF_ERR_DISCONNECTED);
    CHECK(strstr(rf_error_message(), "not connected (shut down by the chief)"),
          "%s", rf_error_message());
}

int main(void)
{
    test_server_accepts();
    test_server_refusals();
    test_server_transitions();
    test_client_table();
    test_client_refuses_request();
    printf("ok\n");
    return 0;
}
