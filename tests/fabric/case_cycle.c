/* tests/fabric/case_cycle.c: endpoint life cycle. 50 connect / verified
 * write+read+fetch_add / close cycles against one listener (the target sees
 * each closed endpoint fail and the counts add up; two endpoints open at once
 * are independent), and rf_ep_close with 16 MiB operations outstanding:
 * every one of them has its completion (RF_OK, or RF_ERR_DISCONNECTED from
 * the first cut-off on) by the time rf_ep_close returns. */
#include <stdio.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define CYCLES 50

void case_reconnect(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 65536, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 16384, RF_ACCESS_LOCAL_WRITE);
    uint64_t *res = (uint64_t *)(void *)(b.p + 16384 - 8);
    for (int i = 0; i < CYCLES; i++) {
        char token[16];
        snprintf(token, sizeof token, "rc%d", i);
        rt_conn c;
        rt_connect(f, t.port, token, &c);
        rt_roundtrip(&c, &b, &d, 4096 * (uint64_t)(i % 8), 4096,
                     600 + (uint64_t)i);
        rt_atomic(&c, RF_OP_FETCH_ADD, res, b.mr, d.addr + 65536 - 8, d.rkey, 1,
                  0, "fetch_add");
        CHECK_EQ_U64(*res, (uint64_t)i);
        rt_conn_close(&c);
        if (i % 10 == 9) {
            int bound = rft_ms(rt_opts.peer_timeout_ms + 5000);
            CHECK(tgt_ep_disconnected(&t, token, bound),
                  "target endpoint %s still connected %d ms after the "
                  "initiator closed it",
                  token, bound);
        }
    }
    /* Two at once: closing one leaves the other working. */
    rt_conn a, c2;
    rt_connect(f, t.port, "two-a", &a);
    rt_connect(f, t.port, "two-b", &c2);
    rt_roundtrip(&a, &b, &d, 0, 4096, 1);
    rt_roundtrip(&c2, &b, &d, 4096, 4096, 2);
    rt_conn_close(&a);
    rt_roundtrip(&c2, &b, &d, 8192, 4096, 3);
    CHECK_OK(rf_ep_state(c2.ep));
    rt_conn_close(&c2);

    tgt_stats s = tgt_wait_handled(&t, CYCLES + 2);
    CHECK(s.accepted == CYCLES + 2 && s.accept_errors == 0,
          "target accepted %ld connections (expected %d), %ld errors",
          s.accepted, CYCLES + 2, s.accept_errors);
    CHECK_EQ_U64(tgt_get(&t, 0, 65536 - 8), CYCLES);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}

#define MIB   (1024u * 1024u)
#define N_BIG 8

void case_close_outstanding(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 16 * MIB, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 32 * MIB, RF_ACCESS_LOCAL_WRITE);
    for (int round = 0; round < 3; round++) {
        rt_conn c;
        rt_connect(f, t.port, round ? "co" : "co0", &c);
        rf_wr wrs[N_BIG];
        for (int i = 0; i < N_BIG; i++) {
            wrs[i] = rt_wr(i % 2 ? RF_OP_READ : RF_OP_WRITE,
                           b.p + (i % 2 ? 16 * MIB : 0), 16 * MIB, b.mr, d.addr,
                           d.rkey);
            wrs[i].context = (void *)(uintptr_t)(i + 1);
        }
        /* Round 2 also has an unsignaled op in the middle. */
        if (round == 2)
            wrs[3].flags = RF_WR_UNSIGNALED;
        CHECK_OK(rf_post(c.ep, wrs, N_BIG, NULL));
        if (round == 1)
            rt_wait_one(c.cq, rft_ms(20000)); /* let one finish first */
        rf_ep_close(c.ep);
        c.ep = NULL;
        /* Everything is in the queue now: poll, don't wait. */
        rf_completion comps[N_BIG + 1];
        int got = 0;
        for (;;) {
            int r = rf_cq_poll(c.cq, comps + got, N_BIG + 1 - got);
            CHECK(r >= 0, "rf_cq_poll: %s", rf_status_string((rf_status)r));
            if (r == 0)
                break;
            got += r;
        }
        /* Ops first..N_BIG, in order; RF_OK up to a point, then
         * RF_ERR_DISCONNECTED. A successful unsignaled op has none. */
        int first = round == 1 ? 2 : 1, seen_disc = 0, idx = 0;
        for (int i = first; i <= N_BIG; i++) {
            if (idx < got && comps[idx].context == (void *)(uintptr_t)i) {
                rf_status st = comps[idx].status;
                CHECK(st == RF_ERR_DISCONNECTED || (st == RF_OK && !seen_disc),
                      "round %d: op %d completed with %s%s", round, i,
                      rf_status_string(st),
                      st == RF_OK ? " after an earlier op was cut off" : "");
                seen_disc |= st == RF_ERR_DISCONNECTED;
                idx++;
                continue;
            }
            CHECK(round == 2 && i == 4 && !seen_disc,
                  "round %d: no completion for op %d by the time rf_ep_close "
                  "returned (%d completions queued)",
                  round, i, got);
        }
        CHECK(idx == got, "round %d: %d unexpected completions after close",
              round, got - idx);
        rf_cq_destroy(c.cq);
    }
    /* The listener is unaffected. */
    rt_conn c;
    rt_connect(f, t.port, "co-after", &c);
    rt_roundtrip(&c, &b, &d, 0, MIB, 8);
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
