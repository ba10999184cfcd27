/* tests/fabric/case_kill.c: dead peers. The target is SIGKILLed while 16 MiB
 * writes and reads are outstanding: every operation still completes, those
 * after the first failure with RF_ERR_DISCONNECTED, all within
 * RF_PEER_TIMEOUT_MS (+5 s slack) of the kill, and later work fails with
 * RF_ERR_DISCONNECTED. And an initiator is SIGKILLed mid-stream: the target's
 * endpoint reaches the error state in bounded time and the target keeps
 * serving new connections. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define MIB    (1024u * 1024u)
#define OP_LEN (16 * MIB)
#define DEPTH  6

void case_kill_target(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 2 * OP_LEN, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 2 * OP_LEN, RF_ACCESS_LOCAL_WRITE);
    pat_fill(b.p, OP_LEN, 1, 0);
    rt_conn c;
    rt_connect(f, t.port, "kt", &c);

    uint64_t posted = 0, done = 0, kill_us = 0;
    int seen_disconnect = 0, ok_after_kill = 0;
    for (;;) {
        /* Keep DEPTH operations in flight until the kill. */
        while (!kill_us && posted - done < DEPTH) {
            int is_read = posted % 2;
            rf_wr wr = {.op = is_read ? RF_OP_READ : RF_OP_WRITE,
                        .context = (void *)(uintptr_t)(posted + 1),
                        .local = b.p + (is_read ? OP_LEN : 0),
                        .len = OP_LEN,
                        .local_mr = b.mr,
                        .remote_addr = d.addr + (is_read ? OP_LEN : 0),
                        .rkey = d.rkey};
            CHECK_OK(rf_post(c.ep, &wr, 1, NULL));
            posted++;
        }
        if (done == posted)
            break;
        int wait_ms = rft_ms(kill_us ? rt_opts.peer_timeout_ms + 5000 : 20000);
        rf_completion comp = rt_wait_one(c.cq, wait_ms);
        done++;
        CHECK(comp.context == (void *)(uintptr_t)done,
              "completion for op %p, expected op %llu (posting order)",
              comp.context, (unsigned long long)done);
        CHECK(comp.op == (done % 2 ? RF_OP_WRITE : RF_OP_READ),
              "completion %llu has op %s", (unsigned long long)done,
              rf_wr_op_name(comp.op));
        if (comp.status == RF_OK) {
            CHECK(!seen_disconnect,
                  "op %llu completed RF_OK after an "
                  "earlier op completed RF_ERR_DISCONNECTED",
                  (unsigned long long)done);
            ok_after_kill += kill_us != 0;
        } else {
            CHECK(comp.status == RF_ERR_DISCONNECTED,
                  "op %llu completed with %s, expected RF_OK or "
                  "RF_ERR_DISCONNECTED",
                  (unsigned long long)done, rf_status_string(comp.status));
            CHECK(kill_us, "op %llu failed before the target was killed",
                  (unsigned long long)done);
            seen_disconnect = 1;
        }
        if (!kill_us && done == 3) {
            rft_note("killing the target with %llu ops outstanding",
                     (unsigned long long)(posted - done));
            rft_kill(&t.proc);
            kill_us = rf_now_us();
        }
    }
    uint64_t ms = (rf_now_us() - kill_us) / 1000;
    rft_note("all %llu ops completed %llu ms after the kill (%d of them OK "
             "after it)",
             (unsigned long long)posted, (unsigned long long)ms, ok_after_kill);
    CHECK(seen_disconnect, "no outstanding op reported RF_ERR_DISCONNECTED");
    CHECK(ms <= (uint64_t)rft_ms(rt_opts.peer_timeout_ms + 5000),
          "outstanding ops took %llu ms to fail after the kill",
          (unsigned long long)ms);
    rt_expect_dead(&c, b.p, b.mr, d.addr, d.rkey);
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
}

void case_kill_initiator(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 4 * MIB, RF_ACCESS_ALL, 4096, &d);
    char port[16], addr[32], rkey[16], len[32];
    snprintf(port, sizeof port, "%u", (unsigned)t.port);
    snprintf(addr, sizeof addr, "%llu", (unsigned long long)d.addr);
    snprintf(rkey, sizeof rkey, "%u", d.rkey);
    snprintf(len, sizeof len, "%llu", (unsigned long long)d.len);
    const char *args[] = {"--role",  "stream", "--port", port,    "--addr",
                          addr,      "--rkey", rkey,     "--len", len,
                          "--token", "st",     NULL};
    rft_child w;
    rt_spawn(&w, "stream-worker", args);
    char line[64];
    rft_line(&w, line, sizeof line, rft_ms(20000));
    CHECK(strcmp(line, "streaming") == 0, "stream worker said '%s'", line);
    rft_kill(&w);
    uint64_t t0 = rf_now_us();
    int bound = rft_ms(rt_opts.peer_timeout_ms + 5000);
    CHECK(tgt_ep_disconnected(&t, "st", bound),
          "target endpoint of a killed initiator still connected after %d ms",
          bound);
    rft_note("target saw the dead initiator after %llu ms",
             (unsigned long long)((rf_now_us() - t0) / 1000));
    /* The target serves a new peer. */
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 2 * MIB, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rt_connect(f, t.port, "after", &c);
    rt_roundtrip(&c, &b, &d, 3 * MIB, MIB, 5);
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
