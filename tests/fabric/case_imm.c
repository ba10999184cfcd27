/* tests/fabric/case_imm.c: write_imm ordering. 4096 write_imms, the k-th
 * writing (magic ^ k) into slot k and carrying immediate k, all outstanding
 * at once: the target's receive completions must arrive with imm == k in
 * order, and slot k must already hold its value when completion k is polled
 * (the target checks this as it polls, see target.c). */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/target.h"

#define N_IMM 4096

void case_write_imm_order(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, N_IMM * 8, RF_ACCESS_ALL, 4096, &d);
    tgt_fill(&t, 0, 42); /* no slot starts with its expected value */
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, N_IMM * 8, RF_ACCESS_LOCAL_WRITE);
    uint64_t *src = (uint64_t *)(void *)b.p;
    const uint64_t magic = 0x5eed5eed00000000ull;
    for (uint64_t k = 0; k < N_IMM; k++)
        src[k] = magic ^ k;
    rt_conn c;
    rt_connect(f, t.port, "imm", &c);

    char r[256];
    tgt_send(&t, "immstream imm %d 0 %d %llu", N_IMM, rft_ms(30000),
             (unsigned long long)magic);
    tgt_reply(&t, r, sizeof r, rft_ms(20000));
    CHECK(strcmp(r, "ready") == 0, "target: %s", r);

    static rf_wr wrs[N_IMM];
    for (uint64_t k = 0; k < N_IMM; k++) {
        wrs[k] =
            rt_wr(RF_OP_WRITE_IMM, &src[k], 8, b.mr, d.addr + 8 * k, d.rkey);
        wrs[k].context = (void *)(uintptr_t)(k + 1);
        wrs[k].imm = (uint32_t)k;
    }
    for (size_t i = 0; i < N_IMM; i += 256)
        CHECK_OK(rf_post(c.ep, wrs + i, 256, NULL));
    static rf_completion comps[N_IMM];
    rt_wait_n(c.cq, comps, N_IMM, rft_ms(30000));
    for (size_t k = 0; k < N_IMM; k++)
        rt_expect_comp(&comps[k], "write_imm", wrs[k].context, RF_OP_WRITE_IMM,
                       RF_OK, 8);
    tgt_reply(&t, r, sizeof r, rft_ms(30000));
    CHECK(strcmp(r, "done") == 0, "target: %s", r);
    for (uint64_t k = 0; k < N_IMM; k += 511)
        CHECK_EQ_U64(tgt_get(&t, 0, 8 * k), magic ^ k);

    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
