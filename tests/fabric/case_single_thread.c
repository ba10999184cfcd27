/* tests/fabric/case_single_thread.c: a completion queue created
 * RF_CQ_SINGLE_THREADED. Unknown flags are refused; on one endpoint, small
 * reads (run inline on shm, their completions in the queue's lane), reads
 * larger than the inline limit (queued for the progress thread, their
 * completions in the shared ring) and fetch_adds, mixed, posted past the
 * lane's 64 slots without polling, and, with the lane empty, after a large
 * read completed but was not yet taken: every completion comes back once, in
 * posting order, with the data of its own read, whether taken with rf_cq_poll
 * in odd batch sizes or with rf_cq_wait. Providers that ignore the flag must
 * pass too. */
#include <stdio.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define SMALL   8
#define LARGE   (2u << 20) /* above shm's SHM_INLINE_MAX */
#define REGION  (4u << 20)
#define COUNTER (REGION - 8)
#define NWR     320 /* per round: more than the lane holds */

typedef struct posted {
    rf_op op;
    uint64_t off; /* remote offset of a read */
    size_t len;
    unsigned char *local;
    uint64_t want_old; /* fetch_add: the counter before it */
} posted;

static void check_flags_refused(rf_fabric *f)
{
    rf_cq *cq = (rf_cq *)(uintptr_t)1;
    rf_status st =
        rf_cq_create_ex(f, &(rf_cq_attr){.depth = 16, .flags = 1u << 5}, &cq);
    CHECK(st == RF_ERR_INVALID_ARG, "unknown CQ flag 0x20: %s, want %s",
          rf_status_string(st), rf_status_string(RF_ERR_INVALID_ARG));
    CHECK(cq == NULL, "a refused rf_cq_create_ex left *out = %p", (void *)cq);
    CHECK(strstr(rf_error_message(), "unknown flags 0x20") != NULL,
          "the refusal does not name the flag: \"%s\"", rf_error_message());
    st = rf_cq_create_ex(
        f, &(rf_cq_attr){.depth = 0, .flags = RF_CQ_SINGLE_THREADED}, &cq);
    CHECK(st == RF_ERR_INVALID_ARG, "depth 0: %s", rf_status_string(st));
    CHECK(rf_cq_create_ex(f, NULL, &cq) == RF_ERR_INVALID_ARG,
          "a NULL attr is not refused");
}

/* Takes n completions: rf_cq_poll with batch sizes 1, 3, 7, 64 in turn,
 * or rf_cq_wait. */
static void take(rf_cq *cq, rf_completion *out, int n, int round)
{
    static const int batch[] = {1, 3, 7, 64};
    int64_t deadline = rf_deadline_ms(rft_ms(30000));
    int got = 0, k = 0;
    while (got < n) {
        CHECK(!rf_deadline_passed(deadline),
              "round %d: only %d of %d completions within the budget", round,
              got, n);
        int max = batch[k++ % 4];
        if (max > n - got)
            max = n - got;
        int r = round % 2 ? rf_cq_wait(cq, out + got, max, 1000)
                          : rf_cq_poll(cq, out + got, max);
        if (r == RF_ERR_TIMEOUT)
            continue;
        CHECK(r >= 0 && r <= max, "round %d: rf_cq_%s returned %d (%s)", round,
              round % 2 ? "wait" : "poll", r,
              r < 0 ? rf_status_string((rf_status)r) : "count");
        got += r;
    }
    rf_completion extra;
    CHECK(rf_cq_poll(cq, &extra, 1) == 0,
          "round %d: a completion beyond the %d posted", round, n);
}

/* Completions [from, n) are work requests from+1 .. n, in that order,
 * each with its own data. */
static void check_round(const rf_completion *comps, const posted *p, int from,
                        int n, uint64_t seed, int round)
{
    for (int i = from; i < n; i++) {
        CHECK(comps[i].context == (void *)(uintptr_t)(i + 1),
              "round %d: completion %d is work request %zu's: not in "
              "posting order",
              round, i, (size_t)(uintptr_t)comps[i].context);
        rt_expect_comp(&comps[i], "single-threaded queue",
                       (void *)(uintptr_t)(i + 1), p[i].op, RF_OK,
                       (long long)p[i].len);
        if (p[i].op == RF_OP_READ) {
            size_t bad = pat_check(p[i].local, p[i].len, seed, p[i].off);
            CHECK(bad == PAT_OK,
                  "round %d: read %d (%zu bytes at %llu) wrong at byte %zu",
                  round, i, p[i].len, (unsigned long long)p[i].off, bad);
        } else {
            uint64_t old = rt_peek_u64(p[i].local);
            CHECK(old == p[i].want_old,
                  "round %d: fetch_add %d returned %llu, want %llu", round, i,
                  (unsigned long long)old, (unsigned long long)p[i].want_old);
        }
    }
}

void case_single_thread(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, REGION, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    check_flags_refused(f);

    /* local: NWR small slots, then one LARGE area per large read */
    const size_t nlarge = 4;
    rt_buf b;
    rt_buf_alloc(f, &b, NWR * 64 + nlarge * LARGE, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rf_status cs = rt_try_connect_cq(f, t.port, "single", strlen("single"),
                                     rft_ms(10000), RF_CQ_SINGLE_THREADED, &c);
    CHECK(cs == RF_OK, "connect: %s", rf_status_string(cs));

    static posted p[NWR];
    static rf_completion comps[NWR];
    uint64_t counter = 5000;
    for (int round = 0; round < 6; round++) {
        const uint64_t seed = 9100 + (uint64_t)round;
        tgt_fill(&t, 0, seed);
        tgt_set(&t, 0, COUNTER, counter);
        memset(b.p, 0xa5, b.len);
        int n = 0, large = 0, taken = 0;
        for (int i = 0; i < NWR; i++) {
            /* 100 requests, all taken; a large read at 100 (then 50 ms
             * for it to complete into the ring untaken: the small reads
             * behind it must not overtake it through the empty lane) and
             * at 200; one fetch_add in 16 */
            rf_wr wr;
            if ((i == 100 || i == 200) && large < (int)nlarge) {
                unsigned char *dst = b.p + NWR * 64 + (size_t)large++ * LARGE;
                uint64_t off = (uint64_t)(i * 4096) % (REGION - LARGE - 8);
                wr = rt_wr(RF_OP_READ, dst, LARGE, b.mr, d.addr + off, d.rkey);
                p[n] = (posted){RF_OP_READ, off, LARGE, dst, 0};
            } else if (i % 16 == 15) {
                unsigned char *dst = b.p + (size_t)i * 64;
                wr = rt_wr(RF_OP_FETCH_ADD, dst, 8, b.mr, d.addr + COUNTER,
                           d.rkey);
                wr.compare_add = 1;
                p[n] = (posted){RF_OP_FETCH_ADD, 0, 8, dst, counter++};
            } else {
                unsigned char *dst = b.p + (size_t)i * 64;
                uint64_t off = ((uint64_t)i * 7919u) % (REGION - 4096);
                wr = rt_wr(RF_OP_READ, dst, SMALL, b.mr, d.addr + off, d.rkey);
                p[n] = (posted){RF_OP_READ, off, SMALL, dst, 0};
            }
            wr.context = (void *)(uintptr_t)(n + 1);
            CHECK_OK(rf_post(c.ep, &wr, 1, NULL));
            n++;
            if (i == 99) { /* the lane empty again for what follows */
                take(c.cq, comps, n, round);
                check_round(comps, p, 0, n, seed, round);
                taken = n;
            }
            if (i == 100)
                rf_sleep_ms(50);
        }
        take(c.cq, comps + taken, n - taken, round);
        check_round(comps, p, taken, n, seed, round);
        CHECK(tgt_get(&t, 0, COUNTER) == counter,
              "round %d: counter %llu, want %llu", round,
              (unsigned long long)tgt_get(&t, 0, COUNTER),
              (unsigned long long)counter);
    }
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
