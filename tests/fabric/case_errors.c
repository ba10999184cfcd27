/* tests/fabric/case_errors.c: remote access errors. Each bad operation runs
 * on a fresh endpoint inside one batch: [good write, BAD, good unsignaled
 * write, good read]. Expected completions, in order: RF_OK, the documented
 * error (RF_ERR_REMOTE_ACCESS, or RF_ERR_INVALID_ARG for an unaligned
 * atomic; reported even when the bad op is unsignaled), then
 * RF_ERR_DISCONNECTED for both later ops (the unsignaled one included). Then
 * the endpoint is in the error state on both sides, later work gets
 * RF_ERR_DISCONNECTED, the target regions hold exactly what the good write
 * put there (the later write never ran) and their canary guards are intact,
 * and the next fresh connection to the same listener works. */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define RSIZE 65536
enum { R_ALL, R_RO, R_WO, R_NOATOMIC, R_DEAD, NREG };
static const uint32_t reg_access[NREG] = {
    RF_ACCESS_ALL,
    RF_ACCESS_LOCAL_WRITE | RF_ACCESS_REMOTE_READ,
    RF_ACCESS_LOCAL_WRITE | RF_ACCESS_REMOTE_WRITE | RF_ACCESS_REMOTE_ATOMIC,
    RF_ACCESS_LOCAL_WRITE | RF_ACCESS_REMOTE_READ | RF_ACCESS_REMOTE_WRITE,
    RF_ACCESS_ALL, /* deregistered right after registration */
};

/* Where a bad operation points. */
typedef enum {
    A_BASE,  /* region base + off */
    A_END,   /* region base + len + off (off may be negative) */
    A_ABS,   /* the absolute address off */
    A_OTHER, /* base of region R_ALL + off, with this region's rkey */
} anchor;

typedef struct bad_op {
    const char *name;
    int region;
    rf_op op;
    anchor at;
    int64_t off;
    size_t len;
    int bad_rkey;
    rf_status want;
} bad_op;

typedef struct env {
    rt_target t;
    rf_fabric *f;
    rt_buf local;
    rf_mr_desc d[NREG];
    uint32_t bogus_rkey;
} env;

static uint64_t region_seed(int r)
{
    return 7000 + (uint64_t)r;
}

static void setup(env *e)
{
    tgt_start(&e->t);
    for (int r = 0; r < NREG; r++) {
        tgt_region(&e->t, r, RSIZE, reg_access[r], 4096, &e->d[r]);
        tgt_fill(&e->t, r, region_seed(r));
    }
    char reply[16];
    tgt_cmd(&e->t, reply, sizeof reply, "dereg %d", R_DEAD);
    /* An rkey no region of the target has. */
    static const uint32_t candidates[] = {0x5a5a5a5au, 0xfffffffeu, 0x00c0ffeeu,
                                          0x13572468u};
    e->bogus_rkey = 0;
    for (size_t i = 0; i < 4 && !e->bogus_rkey; i++) {
        int used = 0;
        for (int r = 0; r < NREG; r++)
            used |= e->d[r].rkey == candidates[i];
        if (!used)
            e->bogus_rkey = candidates[i];
    }
    CHECK(e->bogus_rkey != 0, "no unused rkey candidate");
    e->f = rt_fabric_open();
    rt_buf_alloc(e->f, &e->local, 65536 + 8192, RF_ACCESS_LOCAL_WRITE);
}

static void teardown(env *e)
{
    /* A fresh connection after all the errors still works. */
    rt_conn c;
    rt_connect(e->f, e->t.port, "final", &c);
    rt_roundtrip(&c, &e->local, &e->d[R_ALL], 4096, 8192, 99);
    rt_conn_close(&c);
    rt_buf_free(&e->local);
    rf_fabric_close(e->f);
    tgt_stop(&e->t);
}

static void run_bad(env *e, const bad_op *b, int index)
{
    char token[16], what[160];
    snprintf(token, sizeof token, "e%d", index);
    const int unsignaled = index % 2; /* every other bad op is unsignaled */
    snprintf(what, sizeof what, "%s%s", b->name,
             unsignaled ? " (unsignaled)" : "");
    rft_note("error case: %s", what);
    rt_conn c;
    rt_connect(e->f, e->t.port, token, &c);

    const rf_mr_desc *all = &e->d[R_ALL], *r = &e->d[b->region];
    uint64_t addr = (uint64_t)b->off;
    if (b->at == A_BASE)
        addr += r->addr;
    else if (b->at == A_END)
        addr += r->addr + r->len;
    else if (b->at == A_OTHER)
        addr += all->addr;
    const uint64_t seed_good = 100 + (uint64_t)index,
                   seed_late = 200 + (uint64_t)index;
    unsigned char *p = e->local.p;
    pat_fill(p, 8, seed_good, 0);        /* good write: all[0, 8) */
    pat_fill(p + 8, 8, seed_late, 8);    /* late write: all[8, 16) */
    unsigned char *bad_buf = p + 64;     /* bad op's local buffer */
    unsigned char *read_buf = p + 65536; /* late read */
    rf_wr wrs[4] = {
        {.op = RF_OP_WRITE,
         .context = (void *)1,
         .local = p,
         .len = 8,
         .local_mr = e->local.mr,
         .remote_addr = all->addr,
         .rkey = all->rkey},
        {.op = b->op,
         .flags = unsignaled ? RF_WR_UNSIGNALED : 0,
         .context = (void *)2,
         .local = bad_buf,
         .len = b->len,
         .local_mr = e->local.mr,
         .remote_addr = addr,
         .rkey = b->bad_rkey ? e->bogus_rkey : r->rkey,
         .compare_add = 1,
         .swap = 2},
        {.op = RF_OP_WRITE,
         .flags = RF_WR_UNSIGNALED,
         .context = (void *)3,
         .local = p + 8,
         .len = 8,
         .local_mr = e->local.mr,
         .remote_addr = all->addr + 8,
         .rkey = all->rkey},
        {.op = RF_OP_READ,
         .context = (void *)4,
         .local = read_buf,
         .len = 64,
         .local_mr = e->local.mr,
         .remote_addr = all->addr,
         .rkey = all->rkey},
    };
    if (b->op == RF_OP_WRITE)
        pat_fill(bad_buf, b->len, 0xbad, 0);
    size_t posted = 0;
    rf_status st = rf_post(c.ep, wrs, 4, &posted);
    CHECK(st == RF_OK && posted == 4, "%s: rf_post: %s, posted %zu", what,
          rf_status_string(st), posted);
    /* One at a time, so a missing or wrong completion is named. */
    rf_completion comp = rt_wait_one(c.cq, rft_ms(20000));
    rt_expect_comp(&comp, "good write before the bad op", (void *)1,
                   RF_OP_WRITE, RF_OK, 8);
    comp = rt_wait_one(c.cq, rft_ms(20000));
    rt_expect_comp(&comp, what, (void *)2, b->op, b->want, -1);
    comp = rt_wait_one(c.cq, rft_ms(20000));
    rt_expect_comp(&comp, "unsignaled write after the bad op", (void *)3,
                   RF_OP_WRITE, RF_ERR_DISCONNECTED, -1);
    comp = rt_wait_one(c.cq, rft_ms(20000));
    rt_expect_comp(&comp, "read after the bad op", (void *)4, RF_OP_READ,
                   RF_ERR_DISCONNECTED, -1);
    rt_expect_dead(&c, p + 128, e->local.mr, all->addr + 16, all->rkey);

    /* The target's side of the endpoint fails too. */
    int bound = rft_ms(rt_opts.peer_timeout_ms + 5000);
    CHECK(tgt_ep_disconnected(&e->t, token, bound),
          "%s: the target's endpoint is still connected after %d ms", what,
          bound);
    /* Memory: only the good write landed; canaries intact. */
    for (int i = 0; i < NREG; i++) {
        if (i == R_ALL)
            tgt_verify(&e->t, i, 0, 8, seed_good, region_seed(i));
        else
            tgt_verify(&e->t, i, 0, 0, 0, region_seed(i));
    }
    tgt_fill(&e->t, R_ALL, region_seed(R_ALL));
    rt_conn_close(&c);
}

static void run_table(const bad_op *ops, size_t n)
{
    env e;
    setup(&e);
    for (size_t i = 0; i < n; i++)
        run_bad(&e, &ops[i], (int)i);
    teardown(&e);
}

#define RA RF_ERR_REMOTE_ACCESS

void case_errors_rkey(void)
{
    static const bad_op ops[] = {
        {"read with unknown rkey", R_ALL, RF_OP_READ, A_BASE, 0, 64, 1, RA},
        {"write with unknown rkey", R_ALL, RF_OP_WRITE, A_BASE, 0, 64, 1, RA},
        {"fetch_add with unknown rkey", R_ALL, RF_OP_FETCH_ADD, A_BASE, 64, 8,
         1, RA},
        {"cmp_swap with unknown rkey", R_ALL, RF_OP_CMP_SWAP, A_BASE, 64, 8, 1,
         RA},
        /* The rkey of a region deregistered since. */
        {"write with the rkey of a deregistered region", R_DEAD, RF_OP_WRITE,
         A_BASE, 0, 64, 0, RA},
        {"read with the rkey of a deregistered region", R_DEAD, RF_OP_READ,
         A_BASE, 0, 64, 0, RA},
        {"fetch_add with the rkey of a deregistered region", R_DEAD,
         RF_OP_FETCH_ADD, A_BASE, 8, 8, 0, RA},
        /* A valid rkey, but the address of another region. */
        {"write with the rkey of one region, address of another", R_NOATOMIC,
         RF_OP_WRITE, A_OTHER, 4096, 64, 0, RA},
        {"read with the rkey of one region, address of another", R_RO,
         RF_OP_READ, A_OTHER, 0, 64, 0, RA},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

void case_errors_bounds(void)
{
    static const bad_op ops[] = {
        {"write 1 B just past the end", R_ALL, RF_OP_WRITE, A_END, 0, 1, 0, RA},
        {"read 8 B just past the end", R_ALL, RF_OP_READ, A_END, 0, 8, 0, RA},
        {"write straddling the end (4 of 8 B inside)", R_ALL, RF_OP_WRITE,
         A_END, -4, 8, 0, RA},
        {"read straddling the end", R_ALL, RF_OP_READ, A_END, -100, 4096, 0,
         RA},
        {"write 8 KiB straddling the end (4 KiB - 1 inside)", R_ALL,
         RF_OP_WRITE, A_END, -4095, 8192, 0, RA},
        {"write of region length + 1 from the base", R_ALL, RF_OP_WRITE, A_BASE,
         0, RSIZE + 1, 0, RA},
        {"write 2 B starting 1 B before the base", R_ALL, RF_OP_WRITE, A_BASE,
         -1, 2, 0, RA},
        {"read 8 B before the base", R_ALL, RF_OP_READ, A_BASE, -8, 8, 0, RA},
        {"write 8 B at base - 4 (offset 2^64 - 4, offset + len wraps)", R_ALL,
         RF_OP_WRITE, A_BASE, -4, 8, 0, RA},
        {"write 8 B at base + 2^63", R_ALL, RF_OP_WRITE, A_BASE, INT64_MIN, 8,
         0, RA},
        {"write at address 2^64 - 4 (wraps to 4)", R_ALL, RF_OP_WRITE, A_ABS,
         -4, 8, 0, RA},
        {"read at address 0", R_ALL, RF_OP_READ, A_ABS, 0, 8, 0, RA},
        {"fetch_add just past the end", R_ALL, RF_OP_FETCH_ADD, A_END, 0, 8, 0,
         RA},
        {"cmp_swap before the base", R_ALL, RF_OP_CMP_SWAP, A_BASE, -8, 8, 0,
         RA},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

void case_errors_atomic_align(void)
{
    static const bad_op ops[] = {
        {"fetch_add at base + 4", R_ALL, RF_OP_FETCH_ADD, A_BASE, 4, 8, 0,
         RF_ERR_INVALID_ARG},
        {"cmp_swap at base + 1", R_ALL, RF_OP_CMP_SWAP, A_BASE, 1, 8, 0,
         RF_ERR_INVALID_ARG},
        {"fetch_add at base + 4095", R_ALL, RF_OP_FETCH_ADD, A_BASE, 4095, 8, 0,
         RF_ERR_INVALID_ARG},
        {"cmp_swap at base + 8 + 2", R_ALL, RF_OP_CMP_SWAP, A_BASE, 10, 8, 0,
         RF_ERR_INVALID_ARG},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

void case_errors_access(void)
{
    static const bad_op ops[] = {
        {"write to a region without REMOTE_WRITE", R_RO, RF_OP_WRITE, A_BASE, 0,
         64, 0, RA},
        {"fetch_add on a region without REMOTE_WRITE/ATOMIC", R_RO,
         RF_OP_FETCH_ADD, A_BASE, 0, 8, 0, RA},
        {"cmp_swap on a region without REMOTE_WRITE/ATOMIC", R_RO,
         RF_OP_CMP_SWAP, A_BASE, 8, 8, 0, RA},
        {"read from a region without REMOTE_READ", R_WO, RF_OP_READ, A_BASE, 0,
         64, 0, RA},
        {"fetch_add on a region without REMOTE_ATOMIC", R_NOATOMIC,
         RF_OP_FETCH_ADD, A_BASE, 0, 8, 0, RA},
        {"cmp_swap on a region without REMOTE_ATOMIC", R_NOATOMIC,
         RF_OP_CMP_SWAP, A_BASE, 16, 8, 0, RA},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}
