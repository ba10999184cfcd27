/* tests/fabric/case_atomics.c: fetch_add and cmp_swap. Values and wrap-around
 * on one endpoint; 2 processes x 4 threads of fetch_adds on one word of a
 * third process (exact final value, every fetched value distinct); and
 * cmp_swap as a spin lock guarding a non-atomic read + write counter across
 * 2 processes x 2 threads (no lost update). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

static uint64_t atomic_op(rt_conn *c, rt_buf *b, rf_op op, uint64_t addr,
                          uint32_t rkey, uint64_t a, uint64_t s)
{
    uint64_t *res = (uint64_t *)(void *)(b->p + 24); /* 8-aligned, not 0 */
    *res = 0x5555555555555555ull;
    return rt_atomic(c, op, res, b->mr, addr, rkey, a, s,
                     op == RF_OP_FETCH_ADD ? "fetch_add" : "cmp_swap");
}

void case_atomics_basic(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 4096, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 4096, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rt_connect(f, t.port, "at", &c);

    const uint64_t w = d.addr + 8 * 100, last = d.addr + 4096 - 8;
    tgt_set(&t, 0, 8 * 99, 0x1111111111111111ull);
    tgt_set(&t, 0, 8 * 100, 0xfffffffffffffffeull);
    tgt_set(&t, 0, 8 * 101, 0x2222222222222222ull);
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_FETCH_ADD, w, d.rkey, 1, 0),
                 0xfffffffffffffffeull);
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_FETCH_ADD, w, d.rkey, 3, 0),
                 0xffffffffffffffffull);
    CHECK_EQ_U64(tgt_get(&t, 0, 8 * 100), 2); /* wrapped around */
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_FETCH_ADD, w, d.rkey, 0, 0), 2);
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_FETCH_ADD, w, d.rkey, 1ull << 63, 0),
                 2);
    CHECK_EQ_U64(tgt_get(&t, 0, 8 * 100), (1ull << 63) + 2);
    /* cmp_swap miss: value unchanged, old value returned. */
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_CMP_SWAP, w, d.rkey, 5, 9),
                 (1ull << 63) + 2);
    CHECK_EQ_U64(tgt_get(&t, 0, 8 * 100), (1ull << 63) + 2);
    /* cmp_swap hit. */
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_CMP_SWAP, w, d.rkey, (1ull << 63) + 2,
                           0xdeadbeefcafef00dull),
                 (1ull << 63) + 2);
    CHECK_EQ_U64(tgt_get(&t, 0, 8 * 100), 0xdeadbeefcafef00dull);
    /* Neighbours untouched (8-byte operations, not 16). */
    CHECK_EQ_U64(tgt_get(&t, 0, 8 * 99), 0x1111111111111111ull);
    CHECK_EQ_U64(tgt_get(&t, 0, 8 * 101), 0x2222222222222222ull);
    /* First and last word of the region. */
    tgt_set(&t, 0, 0, 40);
    tgt_set(&t, 0, 4096 - 8, 70);
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_FETCH_ADD, d.addr, d.rkey, 2, 0), 40);
    CHECK_EQ_U64(atomic_op(&c, &b, RF_OP_CMP_SWAP, last, d.rkey, 70, 71), 70);
    CHECK_EQ_U64(tgt_get(&t, 0, 0), 42);
    CHECK_EQ_U64(tgt_get(&t, 0, 4096 - 8), 71);
    /* A read after the atomics on the same endpoint sees their result. */
    uint64_t *v = (uint64_t *)(void *)(b.p + 64);
    rt_do(&c, rt_wr(RF_OP_READ, v, 8, b.mr, w, d.rkey), "read after atomics");
    CHECK_EQ_U64(*v, 0xdeadbeefcafef00dull);

    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}

/* --- contention across processes ---------------------------------------- */

#define FADD_WORKERS 2
#define FADD_THREADS 4
#define FADD_ITERS   100000

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Starts worker process id of workers, each with threads threads meeting at
 * the start barrier (the word at 128, zeroed by the caller). */
static void spawn_worker(rft_child *w, const char *role, int id, int workers,
                         uint16_t port, const rf_mr_desc *d, int threads,
                         long iters, const char *out)
{
    char a_port[16], a_addr[32], a_rkey[16], a_thr[16], a_it[16], a_id[16],
        a_start[16];
    snprintf(a_port, sizeof a_port, "%u", (unsigned)port);
    snprintf(a_addr, sizeof a_addr, "%llu", (unsigned long long)d->addr);
    snprintf(a_rkey, sizeof a_rkey, "%u", d->rkey);
    snprintf(a_thr, sizeof a_thr, "%d", threads);
    snprintf(a_it, sizeof a_it, "%ld", iters);
    snprintf(a_id, sizeof a_id, "%d", id);
    snprintf(a_start, sizeof a_start, "%d", workers * threads);
    const char *args[] = {"--role",
                          role,
                          "--port",
                          a_port,
                          "--addr",
                          a_addr,
                          "--rkey",
                          a_rkey,
                          "--id",
                          a_id,
                          "--threads",
                          a_thr,
                          "--iters",
                          a_it,
                          "--start",
                          a_start,
                          out ? "--out" : NULL,
                          out,
                          NULL};
    char name[32];
    snprintf(name, sizeof name, "%s-worker %d", role, id);
    rt_spawn(w, name, args);
}

/* Starts n workers of role in w, each writing its results to out[i] in
 * a fresh directory made from the template dir. */
static void spawn_workers(rft_child *w, int n, const char *role, uint16_t port,
                          const rf_mr_desc *d, int threads, long iters,
                          char *dir, char (*out)[64])
{
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    for (int i = 0; i < n; i++) {
        snprintf(out[i], sizeof out[i], "%s/w%d", dir, i);
        spawn_worker(&w[i], role, i, n, port, d, threads, iters, out[i]);
    }
}

void case_fetch_add_contention(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 4096, RF_ACCESS_ALL, 4096, &d);
    const uint64_t init = 0x0123456700000000ull;
    tgt_set(&t, 0, 0, init);
    tgt_set(&t, 0, 128, 0); /* the start barrier */
    /* The counter lives at the start of the region. */
    char dir[] = "/tmp/rf_fabric_fadd.XXXXXX";
    char out[FADD_WORKERS][64];
    rft_child w[FADD_WORKERS];
    spawn_workers(w, FADD_WORKERS, "fadd", t.port, &d, FADD_THREADS, FADD_ITERS,
                  dir, out);
    for (int i = 0; i < FADD_WORKERS; i++)
        rft_wait_ok(&w[i], rft_ms(140000));

    const size_t total = (size_t)FADD_WORKERS * FADD_THREADS * FADD_ITERS;
    uint64_t *all = malloc(total * 8);
    CHECK(all != NULL, "out of memory");
    size_t n = 0;
    for (int i = 0; i < FADD_WORKERS; i++) {
        FILE *fp = fopen(out[i], "rb");
        CHECK(fp != NULL, "worker %d wrote no result file %s", i, out[i]);
        size_t per = (size_t)FADD_THREADS * FADD_ITERS;
        CHECK(fread(all + n, 8, per, fp) == per, "short result file %s",
              out[i]);
        fclose(fp);
        unlink(out[i]);
        n += per;
    }
    rmdir(dir);
    /* Which process fetched each value (values outside the range are
     * reported by the check below). */
    const size_t per_worker = (size_t)FADD_THREADS * FADD_ITERS;
    unsigned char *owner = calloc(total, 1);
    CHECK(owner != NULL, "out of memory");
    for (size_t i = 0; i < total; i++)
        if (all[i] - init < total)
            owner[all[i] - init] = (unsigned char)(1 + i / per_worker);
    /* Every fetched value distinct and all of them exactly init .. init +
     * total - 1: each increment was applied once, atomically. */
    qsort(all, total, 8, cmp_u64);
    for (size_t i = 0; i < total; i++)
        CHECK(all[i] == init + i,
              "sorted fetched value %zu is 0x%llx, expected 0x%llx (%s)", i,
              (unsigned long long)all[i], (unsigned long long)(init + i),
              i && all[i] == all[i - 1] ? "duplicate" : "gap");
    free(all);
    /* The contention happened: in the order the target applied them, the
     * two processes' increments alternate. Workers that ran one after the
     * other switch once at most, and would pass the check above with a
     * fetch_add that is not atomic at all. */
    size_t switches = 0;
    for (size_t i = 1; i < total; i++)
        switches += owner[i] != owner[i - 1];
    free(owner);
    printf("  %zu switches between the two processes in %zu increments\n",
           switches, total);
    CHECK(switches >= 3,
          "the two processes' fetch_adds did not overlap (%zu switches in "
          "%zu increments): nothing was contended",
          switches, total);
    CHECK_EQ_U64(tgt_get(&t, 0, 0), init + total);
    tgt_stop(&t);
}

#define LOCK_WORKERS   2
#define LOCK_THREADS   2
#define LOCK_ITERS     1000
#define CONTROL_ITERS  200
#define CONTROL_ROUNDS 50
#define LOCK_ROUNDS    10

/* Starts LOCK_WORKERS processes of ROLE, each with LOCK_THREADS threads
 * doing ITERS read+1+write sections on the counter at 64, and returns the
 * sum of what they wrote to their --out files (lock acquisitions that found
 * another holder; 0 for the unlocked control). */
static uint64_t run_lock_workers(rt_target *t, const rf_mr_desc *d,
                                 const char *role, long iters)
{
    tgt_set(t, 0, 128, 0); /* the start barrier */
    char dir[] = "/tmp/rf_fabric_lock.XXXXXX";
    char out[LOCK_WORKERS][64];
    rft_child w[LOCK_WORKERS];
    spawn_workers(w, LOCK_WORKERS, role, t->port, d, LOCK_THREADS, iters, dir,
                  out);
    for (int i = 0; i < LOCK_WORKERS; i++)
        rft_wait_ok(&w[i], rft_ms(110000));
    uint64_t sum = 0;
    for (int i = 0; i < LOCK_WORKERS; i++) {
        FILE *fp = fopen(out[i], "r");
        CHECK(fp != NULL, "%s worker %d wrote no result file %s", role, i,
              out[i]);
        unsigned long long v;
        CHECK(fscanf(fp, "%llu", &v) == 1, "%s: no count in %s", role, out[i]);
        fclose(fp);
        unlink(out[i]);
        sum += v;
    }
    rmdir(dir);
    return sum;
}

void case_cmp_swap_lock(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 4096, RF_ACCESS_ALL, 4096, &d);
    /* Lock word at 0 (0 = free), counter at 64. */
    const uint64_t init = 1000000;

    /* The control: the same sections without the lock lose updates (two
     * threads read the same value), so the window the lock closes is real
     * on this provider. Bounded: CONTROL_ROUNDS short rounds. */
    const uint64_t per_round =
        (uint64_t)LOCK_WORKERS * LOCK_THREADS * CONTROL_ITERS;
    uint64_t lost = 0;
    int round = 0;
    while (!lost && round < CONTROL_ROUNDS) {
        round++;
        tgt_set(&t, 0, 64, init);
        run_lock_workers(&t, &d, "nolock", CONTROL_ITERS);
        uint64_t got = tgt_get(&t, 0, 64);
        CHECK(got > init && got <= init + per_round,
              "control: counter 0x%llx outside %llu + (0, %llu]",
              (unsigned long long)got, (unsigned long long)init,
              (unsigned long long)per_round);
        lost = init + per_round - got;
    }
    CHECK(lost > 0,
          "control: %d rounds of %llu unlocked read+write increments lost "
          "none: this run cannot show that the lock does anything",
          round, (unsigned long long)per_round);
    printf("  control (no lock): %llu of %llu increments lost in round %d\n",
           (unsigned long long)lost, (unsigned long long)per_round, round);

    /* The lock: no increment lost, and (bounded: LOCK_ROUNDS rounds) some
     * acquisition found the lock held by another thread, so mutual
     * exclusion was needed and not just never tested. */
    const uint64_t want = (uint64_t)LOCK_WORKERS * LOCK_THREADS * LOCK_ITERS;
    uint64_t contended = 0;
    for (round = 1; !contended && round <= LOCK_ROUNDS; round++) {
        tgt_set(&t, 0, 64, init);
        contended = run_lock_workers(&t, &d, "lock", LOCK_ITERS);
        CHECK_EQ_U64(tgt_get(&t, 0, 0), 0);
        CHECK_EQ_U64(tgt_get(&t, 0, 64), init + want);
        printf("  locked round %d: none of %llu lost; %llu acquisitions "
               "found the lock held\n",
               round, (unsigned long long)want, (unsigned long long)contended);
    }
    CHECK(contended > 0,
          "in %d rounds no acquisition ever found the lock held by another "
          "thread: the lock was never contended",
          LOCK_ROUNDS);
    tgt_stop(&t);
}
