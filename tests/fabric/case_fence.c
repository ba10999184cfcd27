/* tests/fabric/case_fence.c: RF_WR_FENCE. A fenced write whose source is the
 * local buffer an earlier read (or atomic) of the same batch fills must send
 * the data that read brought in: the fence waits for earlier reads and
 * atomics to complete. */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define CHUNK   16384
#define COPY_TO 32768 /* where the fenced write puts the read data */
#define COUNTER 65536 /* fetch_add word */
#define OLD_TO  65544 /* where the fenced write puts the old value */

void case_fence(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 2 * 65536, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 3 * CHUNK, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rt_connect(f, t.port, "fence", &c);
    unsigned char *buf = b.p, *check = b.p + CHUNK;
    uint64_t *old = (uint64_t *)(void *)(b.p + 2 * CHUNK);
    tgt_set(&t, 0, COUNTER, 1000);
    for (int round = 0; round < 20; round++) {
        const uint64_t seed = 8000 + (uint64_t)round;
        tgt_fill(&t, 0, seed);
        tgt_set(&t, 0, COUNTER, 1000 + 7 * (uint64_t)round);
        memset(buf, 0xa5, CHUNK); /* stale local data */
        *old = 0xa5a5a5a5a5a5a5a5ull;
        rf_wr wrs[4] = {
            {.op = RF_OP_READ,
             .context = (void *)1,
             .local = buf,
             .len = CHUNK,
             .local_mr = b.mr,
             .remote_addr = d.addr,
             .rkey = d.rkey},
            {.op = RF_OP_WRITE,
             .flags = RF_WR_FENCE,
             .context = (void *)2,
             .local = buf,
             .len = CHUNK,
             .local_mr = b.mr,
             .remote_addr = d.addr + COPY_TO,
             .rkey = d.rkey},
            {.op = RF_OP_FETCH_ADD,
             .context = (void *)3,
             .local = old,
             .len = 8,
             .local_mr = b.mr,
             .remote_addr = d.addr + COUNTER,
             .rkey = d.rkey,
             .compare_add = 7},
            {.op = RF_OP_WRITE,
             .flags = RF_WR_FENCE,
             .context = (void *)4,
             .local = old,
             .len = 8,
             .local_mr = b.mr,
             .remote_addr = d.addr + OLD_TO,
             .rkey = d.rkey},
        };
        CHECK_OK(rf_post(c.ep, wrs, 4, NULL));
        rf_completion comps[4];
        rt_wait_n(c.cq, comps, 4, rft_ms(20000));
        for (int i = 0; i < 4; i++)
            rt_expect_comp(&comps[i], "fenced batch", wrs[i].context, wrs[i].op,
                           RF_OK, (long long)wrs[i].len);
        /* The copy holds what the read brought in (region offsets 0..). */
        rt_do(&c,
              rt_wr(RF_OP_READ, check, CHUNK, b.mr, d.addr + COPY_TO, d.rkey),
              "read of the copy");
        size_t bad = pat_check(check, CHUNK, seed, 0);
        CHECK(bad == PAT_OK,
              "round %d: fenced write sent byte %zu as 0x%02x, the read "
              "before it brought 0x%02x",
              round, bad, check[bad], pat_byte(seed, bad));
        CHECK_EQ_U64(*old, 1000 + 7 * (uint64_t)round);
        CHECK_EQ_U64(tgt_get(&t, 0, OLD_TO), 1000 + 7 * (uint64_t)round);
    }
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
