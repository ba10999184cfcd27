/* tests/fabric/case_auto.c: the auto provider's choice per peer (case
 * auto_choice, registered for auto only). Against targets on this host
 * opened with auto, sock and shm, an auto initiator's endpoints are carried
 * by shm, sock and shm (rf_ep_provider), and all move data through the
 * region descriptor the target sent; a plain sock initiator is served by an
 * auto target (its regions carry the same rkey on every provider). One auto
 * CQ shared by a shm and a sock endpoint reports both completions, each
 * naming the auto endpoint it was posted on. A listener's reject ends the
 * connect (no second try over another provider). */
#include <stdint.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/target.h"

#define RSIZE 8192

/* Starts a target with provider `provider` and one region, filled. */
static void target_with(rt_target *t, const char *provider, rf_mr_desc *d)
{
    const char *saved = rt_opts.provider;
    rt_opts.provider = provider;
    tgt_start(t);
    rt_opts.provider = saved;
    tgt_region(t, 0, RSIZE, RF_ACCESS_ALL, 4096, d);
}

static void expect_carrier(rf_fabric *f, rt_target *t, const rf_mr_desc *d,
                           rt_buf *b, const char *want, const char *what)
{
    rt_conn c;
    rt_connect(f, t->port, "auto-choice", &c);
    CHECK(strcmp(rf_ep_provider(c.ep), want) == 0,
          "%s: endpoint carried by %s, expected %s", what, rf_ep_provider(c.ep),
          want);
    rt_roundtrip(&c, b, d, 128, 1000, 4242);
    rt_conn_close(&c);
}

void case_auto_choice(void)
{
    rf_fabric *f = NULL;
    CHECK_OK(rf_fabric_open("auto", NULL, &f));
    CHECK(strcmp(rf_fabric_provider(f), "auto") == 0, "opened %s",
          rf_fabric_provider(f));
    rt_buf b;
    rt_buf_alloc(f, &b, 4096, RF_ACCESS_LOCAL_WRITE);

    rt_target ta, ts, tm;
    rf_mr_desc da, ds, dm;
    target_with(&ta, "auto", &da);
    target_with(&ts, "sock", &ds);
    target_with(&tm, "shm", &dm);

    expect_carrier(f, &ta, &da, &b, "shm", "auto -> auto on this host");
    expect_carrier(f, &ts, &ds, &b, "sock", "auto -> sock-only listener");
    expect_carrier(f, &tm, &dm, &b, "shm", "auto -> shm-only listener");

    /* Plain providers against the auto target, same descriptor. */
    static const char *const plain[] = {"sock", "shm"};
    for (int i = 0; i < 2; i++) {
        rf_fabric *pf = NULL;
        CHECK_OK(rf_fabric_open(plain[i], NULL, &pf));
        rt_buf pb;
        rt_buf_alloc(pf, &pb, 4096, RF_ACCESS_LOCAL_WRITE);
        expect_carrier(pf, &ta, &da, &pb, plain[i], "plain -> auto listener");
        rt_buf_free(&pb);
        rf_fabric_close(pf);
    }

    /* One CQ over a shm and a sock endpoint. */
    rf_cq *cq = NULL;
    CHECK_OK(rf_cq_create(f, 64, &cq));
    rf_ep_attr attr = {.send_cq = cq, .recv_cq = cq};
    rf_ep *em = NULL, *es = NULL;
    CHECK_OK(rf_connect(f, rt_opts.host, tm.port, &attr, "cq-shm", 6,
                        rft_ms(10000), &em));
    CHECK_OK(rf_connect(f, rt_opts.host, ts.port, &attr, "cq-sock", 7,
                        rft_ms(10000), &es));
    CHECK(strcmp(rf_ep_provider(em), "shm") == 0 &&
              strcmp(rf_ep_provider(es), "sock") == 0,
          "shared-CQ endpoints carried by %s and %s, expected shm and sock",
          rf_ep_provider(em), rf_ep_provider(es));
    tgt_fill(&tm, 0, 7);
    tgt_fill(&ts, 0, 8);
    for (int round = 0; round < 20; round++) {
        memset(b.p, 0, 2048);
        CHECK_OK(rf_read(es, b.p, 1024, b.mr, ds.addr, ds.rkey, &ts));
        CHECK_OK(rf_read(em, b.p + 1024, 1024, b.mr, dm.addr, dm.rkey, &tm));
        int seen_s = 0, seen_m = 0;
        for (int got = 0; got < 2;) {
            rf_completion c[2];
            int n = rf_cq_wait(cq, c, 2 - got, rft_ms(10000));
            CHECK(n > 0, "shared CQ: rf_cq_wait returned %d (%s)", n,
                  n < 0 ? rf_error_message() : "");
            for (int i = 0; i < n; i++) {
                CHECK(c[i].status == RF_OK && c[i].op == RF_OP_READ,
                      "shared CQ: completion status %s op %d",
                      rf_status_string(c[i].status), (int)c[i].op);
                if (c[i].context == &ts) {
                    CHECK(c[i].ep == es,
                          "sock read's completion names "
                          "endpoint %p, posted on %p",
                          (void *)c[i].ep, (void *)es);
                    seen_s++;
                } else {
                    CHECK(c[i].context == &tm && c[i].ep == em,
                          "shm read's completion names endpoint %p "
                          "(context %p), posted on %p",
                          (void *)c[i].ep, c[i].context, (void *)em);
                    seen_m++;
                }
            }
            got += n;
        }
        CHECK(seen_s == 1 && seen_m == 1,
              "round %d: %d sock, %d shm "
              "completions",
              round, seen_s, seen_m);
    }
    rf_ep_close(em);
    rf_ep_close(es);
    rf_cq_destroy(cq);

    /* A reject is final: one request reaches the target, not one per
     * provider. */
    tgt_stats before = tgt_get_stats(&ta);
    rt_conn c;
    rf_status st = rt_try_connect(f, ta.port, "R-auto", 6, rft_ms(10000), &c);
    CHECK(st == RF_ERR_UNAVAILABLE, "rejected connect returned %s",
          rf_status_string(st));
    rt_conn_close(&c);
    tgt_stats after = tgt_wait_handled(&ta, before.accepted + before.rejected +
                                                before.accept_errors + 1);
    CHECK(after.rejected == before.rejected + 1,
          "the target rejected %ld requests, expected 1",
          after.rejected - before.rejected);

    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&ta);
    tgt_stop(&ts);
    tgt_stop(&tm);
}
