/* tests/fabric/case_gate.c: RF_EP_REMOTE_ACCESS_OFF. On an endpoint the
 * target accepted with remote access off, a read, a write and a fetch_add
 * with the region's real rkey and address are each refused as an access
 * violation (RF_ERR_REMOTE_ACCESS; on verbs an invalid-request NAK,
 * RF_ERR_INVALID_ARG, is allowed too), the endpoint fails on both sides and
 * the region is untouched; sends still reach the target while it is off.
 * After rf_ep_enable_remote_access on a new gated endpoint, the same
 * operations work. */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define RSIZE 4096
#define SEED  9100

static int refused_status(const rf_ep *ep, rf_status st)
{
    if (st == RF_ERR_REMOTE_ACCESS)
        return 1;
    /* the provider carrying the endpoint (auto may choose verbs) */
    return strcmp(rf_ep_provider(ep), "verbs") == 0 && st == RF_ERR_INVALID_ARG;
}

/* One one-sided op on a fresh gated endpoint: refused, endpoint failed on
 * both sides, region as filled. */
static void refused(rt_target *t, rf_fabric *f, rt_buf *b, const rf_mr_desc *d,
                    rf_op op, const char *token)
{
    rt_conn c;
    rt_connect(f, t->port, token, &c);
    memset(b->p, 0xab, 64);
    rf_wr wr = {.op = op,
                .context = b,
                .local = b->p,
                .len = op == RF_OP_FETCH_ADD ? 8 : 64,
                .local_mr = b->mr,
                .remote_addr = d->addr + 64,
                .rkey = d->rkey,
                .compare_add = 1};
    size_t posted = 0;
    CHECK_OK(rf_post(c.ep, &wr, 1, &posted));
    rf_completion comp = rt_wait_one(c.cq, rft_ms(10000));
    CHECK(refused_status(c.ep, comp.status),
          "%s on a gated endpoint completed with %s, want "
          "RF_ERR_REMOTE_ACCESS",
          rf_wr_op_name(op), rf_status_string(comp.status));
    CHECK(tgt_ep_disconnected(t, token, rft_ms(10000)),
          "the target's gated endpoint did not fail after a refused %s",
          rf_wr_op_name(op));
    if (op == RF_OP_READ)
        for (int i = 0; i < 64; i++)
            CHECK(b->p[i] == 0xab, "a refused read brought data (byte %d)", i);
    tgt_verify(t, 0, 0, 0, 0, SEED);
    rt_conn_close(&c);
}

void case_remote_access_gate(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d, rd;
    tgt_region(&t, 0, RSIZE, RF_ACCESS_ALL, 4096, &d);
    tgt_region(&t, 1, RSIZE, RF_ACCESS_ALL, 4096, &rd); /* receives */
    tgt_fill(&t, 0, SEED);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 4096, RF_ACCESS_ALL);

    /* Each posted as soon as the connection is up, several times over: a
     * provider that grants remote access for a moment after the accept
     * (librdmacm does, as the QP leaves INIT) lets some of them through. */
    for (int round = 0; round < 4; round++) {
        char tok[16];
        snprintf(tok, sizeof tok, "Gread%d", round);
        refused(&t, f, &b, &d, RF_OP_READ, tok);
        snprintf(tok, sizeof tok, "Gwrite%d", round);
        refused(&t, f, &b, &d, RF_OP_WRITE, tok);
        snprintf(tok, sizeof tok, "Gfadd%d", round);
        refused(&t, f, &b, &d, RF_OP_FETCH_ADD, tok);
    }

    /* Sends pass while remote access is off (the handshake needs them). */
    rt_conn c;
    rt_connect(f, t.port, "Gsend", &c);
    char reply[128];
    tgt_cmd(&t, reply, sizeof reply, "postrecv Gsend 1 0 64 7");
    memset(b.p, 0x5c, 64);
    rt_do(&c,
          (rf_wr){.op = RF_OP_SEND,
                  .context = &c,
                  .local = b.p,
                  .len = 64,
                  .local_mr = b.mr},
          "send on a gated endpoint");
    tgt_cmd(&t, reply, sizeof reply, "waitrecv Gsend %d", rft_ms(10000));
    int rop = -1, rst = -1;
    unsigned rlen = 0;
    CHECK(sscanf(reply, "%d %d %u", &rop, &rst, &rlen) == 3 &&
              rop == RF_OP_RECV && rst == RF_OK && rlen == 64,
          "the send on a gated endpoint: target completion '%s'", reply);

    /* Enabled: the same operations work, on the same endpoint. */
    tgt_cmd(&t, reply, sizeof reply, "enable Gsend");
    rt_roundtrip(&c, &b, &d, 128, 512, SEED + 1);
    uint64_t *old = (uint64_t *)(void *)(b.p + 2048);
    tgt_set(&t, 0, 8, 41);
    rt_atomic(&c, RF_OP_FETCH_ADD, old, b.mr, d.addr + 8, d.rkey, 1, 0,
              "fetch_add after enable");
    CHECK_EQ_U64(*old, 41);
    CHECK_EQ_U64(tgt_get(&t, 0, 8), 42);
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
