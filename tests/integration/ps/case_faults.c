/* tests/integration/ps/case_faults.c: peers that break the rules. Malformed
 * connect data is rejected with a reason; malformed or out-of-order control
 * messages, oversized messages and bogus pushes drop only that connection
 * (the ps logs why and keeps serving, variables intact); bad transfers are
 * refused by the client before anything is posted; one-sided accesses
 * outside the arena fail without touching neighbouring memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_layout.h"
#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/raw_peer.h"
#include "tests/integration/ps/specs.h"

static void check_values(rf_ps_client *c, rf_ps_var *v, const float *want,
                         size_t n, const char *after)
{
    float *got = pt_read_field(c, v, RF_PS_FIELD_VALUES, n);
    CHECK(memcmp(got, want, n * sizeof(float)) == 0, "values changed after %s",
          after);
    free(got);
}

void case_garbage(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_shard_spec s = pt_counter_spec("g", 32);
    float vals[32];
    rf_ps_var *v = pt_make_var(cl.chief, 0, &s, 11, vals);
    uint16_t port = cl.ps[0].port;
    raw_peer r;

    /* 1. Private data that is not a ps hello: rejected with the reason. */
    CHECK_ST(raw_connect(&r, cl.f, port, "hello", 5), RF_ERR_UNAVAILABLE);
    size_t rlen = 0;
    const char *why = rf_connect_reject_data(&rlen);
    CHECK(rlen && strstr(why, "not an rdmaflow ps peer"), "reject reason: %.*s",
          (int)rlen, why);
    raw_close(&r);
    unsigned char priv[PS_CONN_HELLO_SIZE];
    ps_conn_hello h = {.client_id = 50};
    ps_conn_hello_encode(&h, priv);
    priv[4] = 99; /* protocol version 99 */
    CHECK_ST(raw_connect(&r, cl.f, port, priv, sizeof priv),
             RF_ERR_UNAVAILABLE);
    why = rf_connect_reject_data(&rlen);
    CHECK(rlen && strstr(why, "version 99"), "reject reason: %.*s", (int)rlen,
          why);
    raw_close(&r);

    /* 2. Random bytes as a message. */
    raw_connect_ok(&r, cl.f, port, 51, false);
    unsigned char junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(pt_rand(9, i) * 127);
    raw_send(&r, junk, sizeof junk);
    raw_expect_dropped(&r, rft_ms(10000));
    raw_close(&r);

    /* 3. A message before HELLO. */
    raw_connect_ok(&r, cl.f, port, 52, false);
    unsigned char msg[4096];
    size_t len;
    ps_range_req q = {0};
    CHECK_OK(ps_enc_range_req(msg, sizeof msg, PS_MSG_DIR_REQ, 1, &q, &len));
    raw_send(&r, msg, len);
    raw_expect_dropped(&r, rft_ms(10000));
    raw_close(&r);

    /* 4. A CREATE_REQ whose length field lies, and one with a reserved byte
     * set. */
    for (int variant = 0; variant < 2; variant++) {
        raw_connect_ok(&r, cl.f, port, 53, false);
        raw_hello(&r, 53, false);
        ps_spec sp = {.part = 0, .dtype = RF_F32, .trainable = false};
        snprintf(sp.name, sizeof sp.name, "evil");
        sp.shape = rf_shape_make(0, NULL);
        CHECK_OK(ps_enc_create_req(msg, sizeof msg, 2, &sp, &len));
        if (variant == 0)
            len -= 3; /* payload shorter than its header says */
        else
            msg[PS_MSG_HDR_SIZE + 2 + 4 + 4 + 3] = 1; /* reserved byte */
        raw_send(&r, msg, len);
        raw_expect_dropped(&r, rft_ms(10000));
        raw_close(&r);
    }

    /* 5. A message larger than any request. */
    raw_connect_ok(&r, cl.f, port, 54, false);
    static unsigned char big[3000];
    memset(big, 0x5a, sizeof big);
    /* A receive too small is an error for the sender too (RC semantics). */
    rf_status bst = raw_send_status(&r, big, sizeof big);
    CHECK(bst != RF_OK, "a %zu-byte send into 1 KiB receives succeeded",
          sizeof big);
    raw_expect_dropped(&r, rft_ms(10000));
    raw_close(&r);

    /* 6. A push naming a shard that does not exist. */
    raw_connect_ok(&r, cl.f, port, 55, false);
    raw_hello(&r, 55, false);
    rf_mr_desc reg = raw_region0(&r);
    rf_wr wr = {.op = RF_OP_WRITE_IMM,
                .len = 0,
                .remote_addr = reg.addr,
                .rkey = reg.rkey,
                .imm = ps_imm_make(9999, 1)};
    raw_do_dropped(&r, wr, rft_ms(10000));
    raw_close(&r);

    /* 7. A non-chief's SHUTDOWN is refused with an error reply, and the
     * connection stays. */
    raw_connect_ok(&r, cl.f, port, 56, false);
    raw_hello(&r, 56, false);
    CHECK_OK(ps_enc_empty(msg, sizeof msg, PS_MSG_SHUTDOWN_REQ, 7, &len));
    raw_send(&r, msg, len);
    static unsigned char reply[PS_MSG_MAX];
    size_t n = raw_recv(&r, reply, sizeof reply, rft_ms(10000));
    static ps_error_reply er;
    CHECK_OK(ps_dec_error_reply(reply, n, &er));
    CHECK(strstr(er.text, "only the chief"), "error reply: %s", er.text);
    CHECK(rf_ep_state(r.ep) == RF_OK, "connection dropped");
    raw_close(&r);

    /* The ps kept serving; the variable is intact and still updatable. */
    check_values(cl.chief, v, vals, 32, "the garbage");
    pt_buf g;
    pt_buf_alloc(cl.chief, &g, 32);
    for (int i = 0; i < 32; i++)
        g.p[i] = -1.0f;
    rf_ps_xfer x = {.var = v,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = g.p,
                    .len = 128,
                    .mr = g.mr};
    CHECK_OK(rf_ps_push_inbox(cl.chief, &x, 1));
    CHECK_OK(rf_ps_push_wait(cl.chief));
    for (int i = 0; i < 32; i++)
        vals[i] += 1.0f;
    check_values(cl.chief, v, vals, 32, "a push");
    pt_cluster_stop(&cl);
}

void case_bounds(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_shard_spec sa = pt_counter_spec("a", 10),
                     sb = pt_counter_spec("b", 10);
    float va[10], vb[10];
    rf_ps_var *a = pt_make_var(cl.chief, 0, &sa, 21, va);
    rf_ps_var *b = pt_make_var(cl.chief, 0, &sb, 22, vb);
    int64_t gs0;
    CHECK_OK(rf_ps_global_step_add(cl.chief, 42, &gs0));

    /* Refused by the client, nothing posted. */
    pt_buf buf;
    pt_buf_alloc(cl.chief, &buf, 64);
    rf_ps_xfer x = {.var = a,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = buf.p,
                    .len = 44,
                    .mr = buf.mr};
    CHECK_ST(rf_ps_read(cl.chief, &x, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("44 bytes given, the field has 40");
    CHECK_ST(rf_ps_write(cl.chief, &x, 1), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ps_push_inbox(cl.chief, &x, 1), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ps_update_rmw_locked(cl.chief, &x, 1), RF_ERR_INVALID_ARG);
    x.len = 40;
    x.field = RF_PS_FIELD_SLOT0; /* sgd has no slot */
    CHECK_ST(rf_ps_write(cl.chief, &x, 1), RF_ERR_INVALID_ARG);
    x.field = RF_PS_FIELD_VALUES;
    x.buf = buf.p + 60; /* runs past the registered block */
    CHECK_ST(rf_ps_write(cl.chief, &x, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("not inside its registered region");
    x.buf = buf.p;
    rf_ps_xfer two[2] = {x, x};
    CHECK_ST(rf_ps_push_inbox(cl.chief, two, 2), RF_ERR_INVALID_ARG);
    CHECK_MSG("appears twice");

    /* One-sided accesses past the end of an arena region, or with a wrong
     * rkey, fail at the fabric; nothing else is touched. */
    raw_peer r;
    raw_connect_ok(&r, cl.f, cl.ps[0].port, 60, false);
    raw_hello(&r, 60, false);
    rf_mr_desc reg = raw_region0(&r);
    rf_wr wr = {.op = RF_OP_WRITE,
                .local = r.mem + 65536,
                .len = 16,
                .local_mr = r.mr,
                .remote_addr = reg.addr + reg.len - 8,
                .rkey = reg.rkey};
    memset(r.mem + 65536, 0xee, 16);
    CHECK_ST(raw_do(&r, wr), RF_ERR_REMOTE_ACCESS);
    raw_close(&r);
    raw_connect_ok(&r, cl.f, cl.ps[0].port, 61, false);
    raw_hello(&r, 61, false);
    wr.local_mr = r.mr;
    wr.local = r.mem + 65536;
    wr.op = RF_OP_READ;
    wr.remote_addr = reg.addr + reg.len;
    CHECK_ST(raw_do(&r, wr), RF_ERR_REMOTE_ACCESS);
    raw_close(&r);
    raw_connect_ok(&r, cl.f, cl.ps[0].port, 62, false);
    raw_hello(&r, 62, false);
    wr.local_mr = r.mr;
    wr.local = r.mem + 65536;
    wr.op = RF_OP_WRITE;
    wr.remote_addr = reg.addr;
    wr.rkey = reg.rkey ^ 0x5a5a;
    CHECK_ST(raw_do(&r, wr), RF_ERR_REMOTE_ACCESS);
    raw_close(&r);

    /* The chief's own connection is unaffected; everything is intact. */
    check_values(cl.chief, a, va, 10, "the bad accesses");
    check_values(cl.chief, b, vb, 10, "the bad accesses");
    int64_t gs;
    CHECK_OK(rf_ps_global_step_read(cl.chief, &gs));
    CHECK(gs == 42, "global_step %lld", (long long)gs);
    pt_cluster_stop(&cl);
}
