/* tests/fabric/case_batch.c: batched posting and selective signaling.
 * 4096 operations outstanding at once (posted in batches of 64, then of
 * 1024), completions counted and checked in posting order, and every
 * operation's effect checked (RC ordering: a read or atomic sees the writes
 * and atomics posted before it). Unsignaled work produces no completion yet is
 * executed, in order, before later signaled work. The fabric's counters
 * (rf_fabric_counters_get) count exactly what each round posted. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define N_OUT  4096 /* outstanding operations per round */
#define GROUPS (N_OUT / 4)

/* Round r posts N_OUT operations in groups of four for j < GROUPS:
 *   write slot j, fetch_add the counter, read slot j back, cmp_swap the
 *   counter with compare == swap == its expected value (a pure read). */
static void round_trip(rt_target *t, rt_conn *c, rt_buf *b,
                       const rf_mr_desc *slots, const rf_mr_desc *ctr, int r,
                       size_t batch)
{
    const uint64_t seed = 500 + (uint64_t)r, filler = 900 + (uint64_t)r;
    const uint64_t base = (uint64_t)r * GROUPS + 77;
    tgt_fill(t, 0, filler);
    uint64_t *src = (uint64_t *)(void *)b->p;
    uint64_t *res = src + N_OUT, *dst = res + N_OUT;
    pat_fill(src, GROUPS * 8, seed, 0);
    memset(res, 0xee, N_OUT * 8 * 2);
    static rf_wr wrs[N_OUT];
    for (size_t i = 0; i < N_OUT; i++) {
        size_t j = i / 4;
        rf_wr *w = &wrs[i];
        *w = (rf_wr){.context = (void *)(uintptr_t)((size_t)r * N_OUT + i + 1),
                     .len = 8,
                     .local_mr = b->mr};
        switch (i % 4) {
        case 0:
            w->op = RF_OP_WRITE;
            w->local = &src[j];
            w->remote_addr = slots->addr + 8 * j;
            w->rkey = slots->rkey;
            break;
        case 1:
            w->op = RF_OP_FETCH_ADD;
            w->local = &res[i];
            w->remote_addr = ctr->addr;
            w->rkey = ctr->rkey;
            w->compare_add = 1;
            break;
        case 2:
            w->op = RF_OP_READ;
            w->local = &dst[j];
            w->remote_addr = slots->addr + 8 * j;
            w->rkey = slots->rkey;
            break;
        default:
            w->op = RF_OP_CMP_SWAP;
            w->local = &res[i];
            w->remote_addr = ctr->addr;
            w->rkey = ctr->rkey;
            w->compare_add = w->swap = base + j + 1;
            break;
        }
    }
    for (size_t i = 0; i < N_OUT; i += batch) {
        size_t posted = 0;
        rf_status st = rf_post(c->ep, wrs + i, batch, &posted);
        CHECK(st == RF_OK && posted == batch,
              "rf_post of wrs %zu..%zu with %zu outstanding: %s, posted %zu", i,
              i + batch - 1, i, rf_status_string(st), posted);
    }
    static rf_completion comps[N_OUT];
    rt_wait_n(c->cq, comps, N_OUT, rft_ms(30000));
    for (size_t i = 0; i < N_OUT; i++) {
        char what[48];
        snprintf(what, sizeof what, "completion %zu of round %d", i, r);
        rt_expect_comp(&comps[i], what, wrs[i].context, wrs[i].op, RF_OK, 8);
        CHECK(comps[i].ep == c->ep, "%s: wrong ep", what);
    }
    rt_expect_quiet(c->cq, 10, "after all completions");
    for (size_t j = 0; j < GROUPS; j++) {
        CHECK_EQ_U64(res[4 * j + 1], base + j);     /* fetch_add old value */
        CHECK_EQ_U64(res[4 * j + 3], base + j + 1); /* cmp_swap old value */
        CHECK(dst[j] == src[j],
              "read of slot %zu returned 0x%llx, the write "
              "before it wrote 0x%llx",
              j, (unsigned long long)dst[j], (unsigned long long)src[j]);
    }
    tgt_verify(t, 0, 0, GROUPS * 8, seed, filler);
    CHECK_EQ_U64(tgt_get(t, 1, 0), base + GROUPS);
}

/* The fabric's counters saw exactly a round's posts: GROUPS of each of the
 * four ops, 8 bytes each, nothing else. */
static void check_counted(const rf_fabric_counters *a,
                          const rf_fabric_counters *z, int r)
{
    for (int op = 0; op < RF_FABRIC_OPS; op++) {
        bool used = op == RF_OP_WRITE || op == RF_OP_FETCH_ADD ||
                    op == RF_OP_READ || op == RF_OP_CMP_SWAP;
        uint64_t n = z->posted[op] - a->posted[op],
                 bytes = z->bytes[op] - a->bytes[op];
        CHECK(n == (used ? GROUPS : 0) && bytes == (used ? 8u * GROUPS : 0),
              "round %d: the fabric counted %llu work requests of op %d "
              "(%llu bytes), %d were posted (%d bytes)",
              r, (unsigned long long)n, op, (unsigned long long)bytes,
              used ? GROUPS : 0, used ? 8 * GROUPS : 0);
    }
}

void case_many_outstanding(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc slots, ctr;
    tgt_region(&t, 0, 65536, RF_ACCESS_ALL, 4096, &slots);
    tgt_region(&t, 1, 4096, RF_ACCESS_ALL, 4096, &ctr);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 3 * N_OUT * 8, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rt_connect(f, t.port, "mo", &c);
    tgt_set(&t, 1, 0, 77);
    for (int r = 0; r < 2; r++) {
        rf_fabric_counters a, z;
        rf_fabric_counters_get(f, &a);
        round_trip(&t, &c, &b, &slots, &ctr, r, r == 0 ? 64 : 1024);
        rf_fabric_counters_get(f, &z);
        check_counted(&a, &z, r);
    }
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}

/* --- selective signaling ------------------------------------------------- */

#define U_WRITES 99
#define CHUNK    64

void case_selective_signaling(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d, ctr;
    tgt_region(&t, 0, 65536, RF_ACCESS_ALL, 4096, &d);
    tgt_region(&t, 1, 4096, RF_ACCESS_ALL, 4096, &ctr);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 65536, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rt_connect(f, t.port, "ss", &c);
    unsigned char *src = b.p, *dst = b.p + 32768;
    const size_t span = U_WRITES * CHUNK;
    tgt_fill(&t, 0, 1);

    /* 20 rounds of 99 unsignaled writes then one signaled read of them all:
     * one completion per round, and the read sees every write. */
    for (int r = 0; r < 20; r++) {
        const uint64_t seed = 3000 + (uint64_t)r;
        pat_fill(src, span, seed, 0);
        memset(dst, 0, span);
        rf_wr wrs[U_WRITES + 1];
        for (int k = 0; k < U_WRITES; k++) {
            wrs[k] = rt_wr(RF_OP_WRITE, src + (size_t)k * CHUNK, CHUNK, b.mr,
                           d.addr + (uint64_t)k * CHUNK, d.rkey);
            wrs[k].flags = RF_WR_UNSIGNALED;
            wrs[k].context = (void *)(uintptr_t)(0x1000 + k);
        }
        wrs[U_WRITES] = rt_wr(RF_OP_READ, dst, span, b.mr, d.addr, d.rkey);
        wrs[U_WRITES].context = (void *)(uintptr_t)(0x2000 + r);
        size_t posted = 0;
        CHECK_OK(rf_post(c.ep, wrs, U_WRITES + 1, &posted));
        CHECK(posted == U_WRITES + 1, "posted %zu", posted);
        rf_completion comp = rt_wait_one(c.cq, rft_ms(10000));
        rt_expect_comp(&comp, "signaled read after unsignaled writes",
                       wrs[U_WRITES].context, RF_OP_READ, RF_OK,
                       (long long)span);
        size_t bad = pat_check(dst, span, seed, 0);
        CHECK(bad == PAT_OK,
              "round %d: byte %zu read 0x%02x, an unsignaled "
              "write before the read wrote 0x%02x",
              r, bad, dst[bad], pat_byte(seed, bad));
        if (r == 0)
            rt_expect_quiet(c.cq, 100, "unsignaled writes completed");
    }
    tgt_verify(&t, 0, 0, span, 3019, 1);

    /* Unsignaled fetch_adds, then a signaled read of the counter. */
    uint64_t *res = (uint64_t *)(void *)(b.p + 8192);
    tgt_set(&t, 1, 0, 5);
    rf_wr fa[11];
    for (int k = 0; k < 10; k++) {
        fa[k] = rt_wr(RF_OP_FETCH_ADD, &res[k], 8, b.mr, ctr.addr, ctr.rkey);
        fa[k].flags = RF_WR_UNSIGNALED;
        fa[k].context = (void *)(uintptr_t)(0x3000 + k);
        fa[k].compare_add = 3;
    }
    fa[10] = rt_wr(RF_OP_READ, &res[10], 8, b.mr, ctr.addr, ctr.rkey);
    fa[10].context = (void *)(uintptr_t)0x3100;
    CHECK_OK(rf_post(c.ep, fa, 11, NULL));
    rf_completion comp = rt_wait_one(c.cq, rft_ms(10000));
    rt_expect_comp(&comp, "read after unsignaled fetch_adds", fa[10].context,
                   RF_OP_READ, RF_OK, 8);
    CHECK_EQ_U64(res[10], 5 + 30);
    for (int k = 0; k < 10; k++)
        CHECK_EQ_U64(res[k], 5 + 3 * (uint64_t)k);

    /* A mix: exactly the signaled ones complete, in order. */
    tgt_fill(&t, 0, 4001);
    pat_fill(src, 256, 4000, 0);
    rf_wr mix[6] = {
        {.op = RF_OP_WRITE,
         .flags = RF_WR_UNSIGNALED,
         .context = (void *)1,
         .local = src,
         .len = 64,
         .local_mr = b.mr,
         .remote_addr = d.addr,
         .rkey = d.rkey},
        {.op = RF_OP_WRITE,
         .context = (void *)2,
         .local = src + 64,
         .len = 64,
         .local_mr = b.mr,
         .remote_addr = d.addr + 64,
         .rkey = d.rkey},
        {.op = RF_OP_WRITE,
         .flags = RF_WR_UNSIGNALED,
         .context = (void *)3,
         .local = src + 128,
         .len = 128,
         .local_mr = b.mr,
         .remote_addr = d.addr + 128,
         .rkey = d.rkey},
        {.op = RF_OP_READ,
         .flags = RF_WR_UNSIGNALED,
         .context = (void *)4,
         .local = dst,
         .len = 256,
         .local_mr = b.mr,
         .remote_addr = d.addr,
         .rkey = d.rkey},
        {.op = RF_OP_FETCH_ADD,
         .flags = RF_WR_UNSIGNALED,
         .context = (void *)5,
         .local = res,
         .len = 8,
         .local_mr = b.mr,
         .remote_addr = ctr.addr,
         .rkey = ctr.rkey,
         .compare_add = 1},
        {.op = RF_OP_FETCH_ADD,
         .context = (void *)6,
         .local = res + 1,
         .len = 8,
         .local_mr = b.mr,
         .remote_addr = ctr.addr,
         .rkey = ctr.rkey,
         .compare_add = 1},
    };
    CHECK_OK(rf_post(c.ep, mix, 6, NULL));
    rf_completion two[2];
    rt_wait_n(c.cq, two, 2, rft_ms(10000));
    rt_expect_comp(&two[0], "signaled write in a mix", (void *)2, RF_OP_WRITE,
                   RF_OK, 64);
    rt_expect_comp(&two[1], "signaled fetch_add in a mix", (void *)6,
                   RF_OP_FETCH_ADD, RF_OK, 8);
    CHECK_EQ_U64(res[0], 35);
    CHECK_EQ_U64(res[1], 36);
    /* The unsignaled read ran before the final fetch_add completed. */
    size_t bad = pat_check(dst, 256, 4000, 0);
    CHECK(bad == PAT_OK, "unsignaled read: byte %zu wrong", bad);
    rt_expect_quiet(c.cq, 200, "unsignaled work produced a completion");
    tgt_verify(&t, 0, 0, 256, 4000, 4001);
    CHECK_EQ_U64(tgt_get(&t, 1, 0), 37);

    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
