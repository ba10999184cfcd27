/* tests/fabric/case_overlap.c: writes and atomics that overlap reads still
 * outstanding on the same endpoint. Eight 4 MiB reads of a region, then a
 * write of all of it, then a read, posted at once: the eight see the old
 * bytes, the last the new ones (requests take effect in order). A read,
 * a fetch_add on its first word and an 8-byte read: old word, old word,
 * word + 1. And the target's peak memory grows by much less than the 32 MiB
 * of read data the write overlapped (the sock target may not copy it all:
 * it holds the write until the reads are sent). */
#include <stdlib.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define RLEN   (4u << 20)
#define NREADS 8
#define OLD    9301
#define NEW    9302

static long target_hwm(rt_target *t)
{
    char reply[64];
    tgt_cmd(t, reply, sizeof reply, "hwm");
    long kb = strtol(reply, NULL, 10);
    CHECK(kb > 0, "hwm: '%s'", reply);
    return kb;
}

void case_overlap_order(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, RLEN, RF_ACCESS_ALL, 4096, &d);
    tgt_fill(&t, 0, OLD);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, (size_t)(NREADS + 2) * RLEN, RF_ACCESS_ALL);
    rt_conn c;
    rt_connect(f, t.port, "overlap", &c);
    long hwm0 = target_hwm(&t);

    unsigned char *src = b.p + (size_t)NREADS * RLEN;
    unsigned char *last = src + RLEN;
    pat_fill(src, RLEN, NEW, 0);
    memset(b.p, 0, (size_t)NREADS * RLEN);
    memset(last, 0, RLEN);
    rf_wr wrs[NREADS + 2];
    for (int i = 0; i < NREADS; i++) {
        wrs[i] = rt_wr(RF_OP_READ, b.p + (size_t)i * RLEN, RLEN, b.mr, d.addr,
                       d.rkey);
        wrs[i].context = (void *)(uintptr_t)(i + 1);
    }
    wrs[NREADS] = rt_wr(RF_OP_WRITE, src, RLEN, b.mr, d.addr, d.rkey);
    wrs[NREADS].context = (void *)(uintptr_t)100;
    wrs[NREADS + 1] = rt_wr(RF_OP_READ, last, RLEN, b.mr, d.addr, d.rkey);
    wrs[NREADS + 1].context = (void *)(uintptr_t)101;
    size_t posted = 0;
    CHECK_OK(rf_post(c.ep, wrs, NREADS + 2, &posted));
    CHECK(posted == NREADS + 2, "posted %zu", posted);
    rf_completion comps[NREADS + 2];
    rt_wait_n(c.cq, comps, NREADS + 2, rft_ms(30000));
    for (int i = 0; i < NREADS + 2; i++)
        CHECK(comps[i].status == RF_OK, "completion %d: %s", i,
              rf_status_string(comps[i].status));
    for (int i = 0; i < NREADS; i++) {
        size_t bad = pat_check(b.p + (size_t)i * RLEN, RLEN, OLD, 0);
        CHECK(bad == PAT_OK,
              "read %d, posted before the write, saw byte %zu changed", i, bad);
    }
    size_t bad = pat_check(last, RLEN, NEW, 0);
    CHECK(bad == PAT_OK, "the read after the write: byte %zu is not new", bad);
    tgt_verify(&t, 0, 0, RLEN, NEW, NEW);
    long grew = target_hwm(&t) - hwm0;
    rft_note("target peak memory grew by %ld kB for %d overlapped 4 MiB "
             "reads",
             grew, NREADS);
    CHECK(grew < 16 * 1024,
          "the target's peak memory grew by %ld kB (the overlapped reads "
          "were copied)",
          grew);

    /* A fetch_add behind a read of the same word. */
    tgt_set(&t, 0, 0, 500);
    uint64_t *r1 = (uint64_t *)(void *)b.p, *old = r1 + 1, *r2 = r1 + 2;
    rf_wr w3[3] = {
        {.op = RF_OP_READ,
         .context = r1,
         .local = b.p + 64,
         .len = RLEN / 2,
         .local_mr = b.mr,
         .remote_addr = d.addr,
         .rkey = d.rkey},
        {.op = RF_OP_FETCH_ADD,
         .context = old,
         .local = old,
         .len = 8,
         .local_mr = b.mr,
         .remote_addr = d.addr,
         .rkey = d.rkey,
         .compare_add = 1},
        {.op = RF_OP_READ,
         .context = r2,
         .local = r2,
         .len = 8,
         .local_mr = b.mr,
         .remote_addr = d.addr,
         .rkey = d.rkey},
    };
    CHECK_OK(rf_post(c.ep, w3, 3, &posted));
    rt_wait_n(c.cq, comps, 3, rft_ms(30000));
    for (int i = 0; i < 3; i++)
        CHECK(comps[i].status == RF_OK, "completion %d: %s", i,
              rf_status_string(comps[i].status));
    uint64_t first;
    memcpy(&first, b.p + 64, 8);
    CHECK_EQ_U64(first, 500);
    CHECK_EQ_U64(*old, 500);
    CHECK_EQ_U64(*r2, 501);

    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
