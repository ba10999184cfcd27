/* tests/fabric/case_recv_short.c: a send longer than the receive it
 * consumes (fabric.h). The receive completes with RF_ERR_INVALID_ARG, the
 * send with an error (RF_ERR_REMOTE_ACCESS; verbs: RF_ERR_INVALID_ARG, the
 * responder's invalid-request NAK, or RF_ERR_DISCONNECTED when the flush
 * of the failed responder's disconnect comes first, as on rxe, which also
 * completes the short receive as flushed), the work behind it and the target's
 * other receive with RF_ERR_DISCONNECTED, and both endpoints enter the
 * error state; nothing outside the receive buffer is written. One byte too
 * long, then a message of many slots / packets. */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define RBUF_OFF 100u
#define RBUF_LEN 1000u
#define BIG      (300u * 1024u)

static void target_recv(rt_target *t, const char *token, int *op, int *st,
                        unsigned long long *ctx)
{
    char r[256];
    unsigned len, imm;
    tgt_cmd(t, r, sizeof r, "waitrecv %s %d", token, rft_ms(20000));
    CHECK(sscanf(r, "%d %d %u %u %llu", op, st, &len, &imm, ctx) == 5,
          "bad waitrecv reply '%s'", r);
}

void case_recv_short(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc rbuf;
    tgt_region(&t, 1, 65536, RF_ACCESS_LOCAL_WRITE, 4096, &rbuf);
    tgt_fill(&t, 1, 2);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, BIG + 4096, RF_ACCESS_LOCAL_WRITE);
    static const unsigned sizes[] = {RBUF_LEN + 1, BIG};
    char r[256];
    for (int i = 0; i < 2; i++) {
        char token[16];
        snprintf(token, sizeof token, "short%d", i);
        rt_conn c;
        rt_connect(f, t.port, token, &c);
        tgt_cmd(&t, r, sizeof r, "postrecv %s 1 %u %u 7", token, RBUF_OFF,
                RBUF_LEN);
        tgt_cmd(&t, r, sizeof r, "postrecv %s 1 4096 8192 8", token);
        pat_fill(b.p, sizes[i], 3, 0);
        /* One list, so the second is posted before the first can fail. */
        rf_wr wrs[2] = {{.op = RF_OP_SEND,
                         .context = (void *)1,
                         .local = b.p,
                         .len = sizes[i],
                         .local_mr = b.mr},
                        {.op = RF_OP_SEND,
                         .context = (void *)2,
                         .local = b.p + BIG,
                         .len = 16,
                         .local_mr = b.mr}};
        size_t posted = 0;
        CHECK_OK(rf_post(c.ep, wrs, 2, &posted));
        CHECK(posted == 2, "posted %zu of 2", posted);

        rf_completion comp = rt_wait_one(c.cq, rft_ms(20000));
        /* verbs: the responder's invalid-request NAK (RF_ERR_INVALID_ARG),
         * or, on rxe, the flush of the disconnect the failed responder
         * starts, which can arrive first (RF_ERR_DISCONNECTED) */
        bool verbs = strcmp(rf_ep_provider(c.ep), "verbs") == 0;
        CHECK(comp.context == (void *)1 && comp.op == RF_OP_SEND &&
                  (comp.status == RF_ERR_REMOTE_ACCESS ||
                   (verbs && (comp.status == RF_ERR_INVALID_ARG ||
                              comp.status == RF_ERR_DISCONNECTED))),
              "send of %u bytes into a %u-byte receive: completion {context "
              "%p, op %s, status %s}, expected {0x1, SEND, "
              "RF_ERR_REMOTE_ACCESS%s}",
              sizes[i], RBUF_LEN, comp.context, rf_wr_op_name(comp.op),
              rf_status_string(comp.status),
              verbs ? " (verbs: or RF_ERR_INVALID_ARG, RF_ERR_DISCONNECTED)"
                    : "");
        rft_note("send of %u bytes into %u: %s", sizes[i], RBUF_LEN,
                 rf_status_string(comp.status));
        comp = rt_wait_one(c.cq, rft_ms(20000));
        rt_expect_comp(&comp, "send behind the failed one", (void *)2,
                       RF_OP_SEND, RF_ERR_DISCONNECTED, -1);
        rt_expect_dead(&c, b.p, b.mr, 0, 0);

        int op, st;
        unsigned long long ctx;
        target_recv(&t, token, &op, &st, &ctx);
        CHECK(ctx == 7 && (st == RF_ERR_INVALID_ARG ||
                           (verbs && st == RF_ERR_DISCONNECTED)),
              "the too short receive: completion {context %llu, op %s, status "
              "%s}, expected {7, RF_ERR_INVALID_ARG%s}",
              ctx, rf_wr_op_name((rf_op)op), rf_status_string((rf_status)st),
              verbs ? " (verbs: or RF_ERR_DISCONNECTED, rxe's flush)" : "");
        target_recv(&t, token, &op, &st, &ctx);
        CHECK(ctx == 8 && st == RF_ERR_DISCONNECTED,
              "the target's other receive: completion {context %llu, status "
              "%s}, expected {8, RF_ERR_DISCONNECTED}",
              ctx, rf_status_string((rf_status)st));
        CHECK(tgt_ep_disconnected(&t, token, rft_ms(10000)),
              "the target's endpoint is still connected after the send "
              "longer than its receive");
        /* Outside the receive buffer nothing changed (inside, a provider
         * may have placed part of the message before it saw the length). */
        tgt_cmd(&t, r, sizeof r, "verifyrange 1 0 %u 2", RBUF_OFF);
        tgt_cmd(&t, r, sizeof r, "verifyrange 1 %u %u 2", RBUF_OFF + RBUF_LEN,
                65536 - RBUF_OFF - RBUF_LEN);
        rt_conn_close(&c);
    }
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
