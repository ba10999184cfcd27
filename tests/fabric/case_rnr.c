/* tests/fabric/case_rnr.c: receiver not ready. A send or write_imm that
 * finds no receive posted waits (up to RF_RNR_TIMEOUT_MS, set here for both
 * processes) and is delivered intact when a receive is posted meanwhile; if
 * none is posted in time the initiator's work completes with
 * RF_ERR_NO_RESOURCE, within the timeout plus slack. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

static void expect_recv(rt_target *t, const char *token, rf_op op, unsigned len,
                        unsigned imm, unsigned long long ctx)
{
    char r[256];
    tgt_cmd(t, r, sizeof r, "waitrecv %s %d", token, rft_ms(20000));
    int gop, gst;
    unsigned glen, gimm;
    unsigned long long gctx;
    CHECK(sscanf(r, "%d %d %u %u %llu", &gop, &gst, &glen, &gimm, &gctx) == 5,
          "bad waitrecv reply '%s'", r);
    CHECK(gop == (int)op && gst == RF_OK && glen == len && gctx == ctx &&
              (op != RF_OP_RECV_WRITE_IMM || gimm == imm),
          "late receive: target completion {op %s, status %s, len %u, imm "
          "%u, context %llu}, expected {%s, RF_OK, %u, %u, %llu}",
          rf_wr_op_name((rf_op)gop), rf_status_string((rf_status)gst), glen,
          gimm, gctx, rf_wr_op_name(op), len, imm, ctx);
}

void case_rnr(void)
{
    /* Scaled for slow builds, but capped: a finite RC RNR retry (verbs)
     * cannot wait longer than 6 x 655 ms (fabric.h). */
    int rnr_ms = rft_ms(1500);
    if (rnr_ms > 3000)
        rnr_ms = 3000;
    char v[16];
    snprintf(v, sizeof v, "%d", rnr_ms);
    setenv("RF_RNR_TIMEOUT_MS", v, 1); /* target (inherited) and driver */
    rt_target t;
    tgt_start(&t);
    rf_mr_desc data, rbuf;
    tgt_region(&t, 0, 65536, RF_ACCESS_ALL, 4096, &data);
    tgt_region(&t, 1, 65536, RF_ACCESS_LOCAL_WRITE, 4096, &rbuf);
    tgt_fill(&t, 0, 1);
    tgt_fill(&t, 1, 2);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 65536, RF_ACCESS_LOCAL_WRITE);
    char r[64];

    /* 1. The receive is posted a while after the message arrived. */
    rt_conn c;
    rt_connect(f, t.port, "rnr-late", &c);
    pat_fill(b.p, 1000, 3, 100); /* lands at offset 100 of region 1 */
    CHECK_OK(rf_send(c.ep, b.p, 1000, b.mr, (void *)1));
    usleep((useconds_t)rnr_ms * 1000 / 5);
    tgt_cmd(&t, r, sizeof r, "postrecv rnr-late 1 100 4000 7");
    expect_recv(&t, "rnr-late", RF_OP_RECV, 1000, 0, 7);
    rf_completion comp = rt_wait_one(c.cq, rft_ms(20000));
    rt_expect_comp(&comp, "send that waited for a receive", (void *)1,
                   RF_OP_SEND, RF_OK, 1000);
    tgt_verify(&t, 1, 100, 1000, 3, 2);

    pat_fill(b.p + 4096, 512, 4, 2048);
    CHECK_OK(rf_write_imm(c.ep, b.p + 4096, 512, b.mr, data.addr + 2048,
                          data.rkey, 0xabcd, (void *)2));
    usleep((useconds_t)rnr_ms * 1000 / 5);
    tgt_cmd(&t, r, sizeof r, "postrecv rnr-late 1 0 0 8");
    expect_recv(&t, "rnr-late", RF_OP_RECV_WRITE_IMM, 512, 0xabcd, 8);
    comp = rt_wait_one(c.cq, rft_ms(20000));
    rt_expect_comp(&comp, "write_imm that waited for a receive", (void *)2,
                   RF_OP_WRITE_IMM, RF_OK, 512);
    tgt_verify(&t, 0, 2048, 512, 4, 1);
    rt_conn_close(&c);

    /* 2. No receive at all: RF_ERR_NO_RESOURCE in bounded time. */
    static const rf_op ops[] = {RF_OP_SEND, RF_OP_WRITE_IMM};
    for (int i = 0; i < 2; i++) {
        char token[16];
        snprintf(token, sizeof token, "rnr-none%d", i);
        rt_connect(f, t.port, token, &c);
        uint64_t t0 = rf_now_us();
        rf_wr wr = {.op = ops[i],
                    .context = (void *)3,
                    .local = b.p,
                    .len = 64,
                    .local_mr = b.mr,
                    .remote_addr = data.addr + 8192,
                    .rkey = data.rkey,
                    .imm = 9};
        CHECK_OK(rf_post(c.ep, &wr, 1, NULL));
        comp = rt_wait_one(c.cq, rnr_ms + rft_ms(10000));
        uint64_t ms = (rf_now_us() - t0) / 1000;
        rt_expect_comp(
            &comp, i ? "write_imm without a receive" : "send without a receive",
            (void *)3, ops[i], RF_ERR_NO_RESOURCE, -1);
        CHECK(ms <= (uint64_t)(rnr_ms + rft_ms(5000)),
              "RF_ERR_NO_RESOURCE after %llu ms, RF_RNR_TIMEOUT_MS is %d",
              (unsigned long long)ms, rnr_ms);
        rft_note("%s without a receive failed after %llu ms (timeout %d ms)",
                 rf_wr_op_name(ops[i]), (unsigned long long)ms, rnr_ms);
        rt_conn_close(&c);
    }
    unsetenv("RF_RNR_TIMEOUT_MS");
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
