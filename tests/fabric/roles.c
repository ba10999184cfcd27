/* tests/fabric/roles.c: initiator worker roles started by multi-process
 * cases (fetch_add contention, cmp_swap lock and its unlocked control, a
 * stream to be killed). */
#include "tests/fabric/roles.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/conn.h"

#define FADD_WINDOW 32
#define MAX_THREADS 64

typedef struct worker {
    int index;
    pthread_t thread;
    rf_fabric *fabric;
    rt_buf results; /* fadd: one uint64 per operation */
} worker;

/* With --start N: every thread of every worker process adds 1 to the word
 * at --addr + START_WORD once connected and waits until it reads N there, so
 * that the processes contend from their first operation instead of one
 * finishing before the next has started. */
#define START_WORD 128

static void start_together(rf_fabric *fabric, rt_conn *c)
{
    if (rt_role.start <= 0)
        return;
    rt_buf b;
    rt_buf_alloc(fabric, &b, 8, RF_ACCESS_LOCAL_WRITE);
    uint64_t *v = (uint64_t *)(void *)b.p;
    rf_wr wr = {.op = RF_OP_FETCH_ADD,
                .context = (void *)(uintptr_t)9,
                .local = v,
                .len = 8,
                .local_mr = b.mr,
                .remote_addr = rt_role.addr + START_WORD,
                .rkey = rt_role.rkey,
                .compare_add = 1};
    rt_do(c, wr, "start fetch_add");
    uint64_t arrived = *v + 1; /* the value before this thread's add */
    wr.op = RF_OP_READ;
    const int64_t deadline = rf_deadline_ms(rft_ms(60000));
    while (arrived < (uint64_t)rt_role.start) {
        CHECK(rf_now_ms() < deadline,
              "start: %llu of %d threads arrived within %d ms",
              (unsigned long long)arrived, rt_role.start, rft_ms(60000));
        rf_sleep_ms(1);
        rt_do(c, wr, "start read");
        arrived = *v;
    }
    rt_buf_free(&b);
}

static void *fadd_thread(void *arg)
{
    worker *w = arg;
    char token[32];
    snprintf(token, sizeof token, "fa%d.%d", rt_role.id, w->index);
    rt_conn c;
    rt_connect(w->fabric, rt_role.port, token, &c);
    start_together(w->fabric, &c);
    long n = rt_role.iters, posted = 0, done = 0;
    uint64_t *res = (uint64_t *)(void *)w->results.p;
    rf_completion comps[64];
    while (done < n) {
        rf_wr wrs[16];
        size_t k = 0;
        while (posted + (long)k < n && posted + (long)k - done < FADD_WINDOW &&
               k < 16) {
            long i = posted + (long)k;
            wrs[k] = rt_wr(RF_OP_FETCH_ADD, &res[i], 8, w->results.mr,
                           rt_role.addr, rt_role.rkey);
            wrs[k].context = (void *)(uintptr_t)(i + 1);
            wrs[k++].compare_add = 1;
        }
        if (k) {
            size_t got = 0;
            rf_status st = rf_post(c.ep, wrs, k, &got);
            CHECK(st == RF_OK && got == k, "rf_post %zu fetch_adds: %s (%zu)",
                  k, rf_status_string(st), got);
            posted += (long)k;
        }
        int r = rf_cq_wait(c.cq, comps, 64, rft_ms(20000));
        CHECK(r > 0, "fetch_add completions: rf_cq_wait returned %d (%s)", r,
              r < 0 ? rf_status_string((rf_status)r) : "");
        for (int i = 0; i < r; i++, done++)
            rt_expect_comp(&comps[i], "fetch_add",
                           (void *)(uintptr_t)(done + 1), RF_OP_FETCH_ADD,
                           RF_OK, 8);
    }
    rt_conn_close(&c);
    return NULL;
}

int rt_role_fadd(void)
{
    rft_set_who("fadd-worker");
    CHECK(rt_role.port && rt_role.threads > 0 && rt_role.iters > 0 &&
              rt_role.out,
          "fadd role needs --port --addr --rkey --threads --iters --out");
    rf_fabric *f = rt_fabric_open();
    worker w[MAX_THREADS];
    for (int t = 0; t < rt_role.threads; t++) {
        w[t].index = t;
        w[t].fabric = f;
        rt_buf_alloc(f, &w[t].results, (size_t)rt_role.iters * 8,
                     RF_ACCESS_LOCAL_WRITE);
    }
    for (int t = 0; t < rt_role.threads; t++)
        CHECK(pthread_create(&w[t].thread, NULL, fadd_thread, &w[t]) == 0,
              "pthread_create");
    for (int t = 0; t < rt_role.threads; t++)
        pthread_join(w[t].thread, NULL);
    FILE *out = fopen(rt_role.out, "wb");
    CHECK(out != NULL, "cannot create %s", rt_role.out);
    for (int t = 0; t < rt_role.threads; t++) {
        CHECK(fwrite(w[t].results.p, 8, (size_t)rt_role.iters, out) ==
                  (size_t)rt_role.iters,
              "writing %s", rt_role.out);
        rt_buf_free(&w[t].results);
    }
    CHECK(fclose(out) == 0, "closing %s", rt_role.out);
    rf_fabric_close(f);
    return 0;
}

/* --- cmp_swap lock, and the same critical section without it ----------- */

typedef struct lock_worker {
    worker w;
    bool locked;        /* false: the unprotected control */
    uint64_t contended; /* acquisitions that found another holder */
} lock_worker;

static void *lock_thread(void *arg)
{
    lock_worker *lw = arg;
    worker *w = &lw->w;
    char token[32];
    snprintf(token, sizeof token, "lk%d.%d", rt_role.id, w->index);
    rt_conn c;
    rt_connect(w->fabric, rt_role.port, token, &c);
    start_together(w->fabric, &c);
    rt_buf b;
    rt_buf_alloc(w->fabric, &b, 64, RF_ACCESS_LOCAL_WRITE);
    uint64_t *old = (uint64_t *)(void *)b.p, *val = old + 1;
    const uint64_t me =
        ((uint64_t)(rt_role.id + 1) << 8) | (unsigned)(w->index + 1);
    const uint64_t lock = rt_role.addr, counter = rt_role.addr + 64;
    rf_wr cas = {.op = RF_OP_CMP_SWAP,
                 .local = old,
                 .len = 8,
                 .local_mr = b.mr,
                 .remote_addr = lock,
                 .rkey = rt_role.rkey};
    for (long i = 0; i < rt_role.iters; i++) {
        unsigned backoff = 1;
        while (lw->locked) { /* acquire: 0 -> me */
            cas.compare_add = 0;
            cas.swap = me;
            cas.context = (void *)(uintptr_t)1;
            rt_do(&c, cas, "lock cmp_swap");
            if (*old == 0)
                break;
            CHECK(*old != me, "lock already held by this thread");
            lw->contended++;
            usleep(backoff);
            if (backoff < 256)
                backoff *= 2;
        }
        rt_do(&c, rt_wr(RF_OP_READ, val, 8, b.mr, counter, rt_role.rkey),
              "counter read");
        *val += 1;
        rt_do(&c, rt_wr(RF_OP_WRITE, val, 8, b.mr, counter, rt_role.rkey),
              "counter write");
        if (!lw->locked)
            continue;
        cas.compare_add = me; /* release: me -> 0 */
        cas.swap = 0;
        cas.context = (void *)(uintptr_t)4;
        rt_do(&c, cas, "unlock cmp_swap");
        CHECK(*old == me,
              "lock word was 0x%llx while this thread (0x%llx) "
              "held the lock",
              (unsigned long long)*old, (unsigned long long)me);
    }
    rt_buf_free(&b);
    rt_conn_close(&c);
    return NULL;
}

int rt_role_lock(bool locked)
{
    rft_set_who(locked ? "lock-worker" : "nolock-worker");
    CHECK(rt_role.port && rt_role.threads > 0 && rt_role.iters > 0,
          "lock role needs --port --addr --rkey --threads --iters");
    rf_fabric *f = rt_fabric_open();
    lock_worker w[MAX_THREADS];
    for (int t = 0; t < rt_role.threads; t++) {
        w[t] = (lock_worker){.w = {.index = t, .fabric = f}, .locked = locked};
        CHECK(pthread_create(&w[t].w.thread, NULL, lock_thread, &w[t]) == 0,
              "pthread_create");
    }
    uint64_t contended = 0;
    for (int t = 0; t < rt_role.threads; t++) {
        pthread_join(w[t].w.thread, NULL);
        contended += w[t].contended;
    }
    rf_fabric_close(f);
    if (rt_role.out) {
        FILE *out = fopen(rt_role.out, "w");
        CHECK(out != NULL, "cannot create %s", rt_role.out);
        fprintf(out, "%llu\n", (unsigned long long)contended);
        CHECK(fclose(out) == 0, "closing %s", rt_role.out);
    }
    return 0;
}

/* --- a stream to be killed ----------------------------------------------- */

int rt_role_stream(void)
{
    rft_set_who("stream-worker");
    CHECK(rt_role.port && rt_role.token && rt_role.len >= (1u << 20),
          "stream role needs --port --addr --rkey --len --token");
    rf_fabric *f = rt_fabric_open();
    rt_conn c;
    rt_connect(f, rt_role.port, rt_role.token, &c);
    rt_buf b;
    rt_buf_alloc(f, &b, 1u << 20, RF_ACCESS_LOCAL_WRITE);
    int outstanding = 0, announced = 0;
    for (uint64_t i = 0;; i++) {
        while (outstanding < 4) {
            rf_wr wr = {.op = RF_OP_WRITE,
                        .context = (void *)(uintptr_t)(i + 1),
                        .local = b.p,
                        .len = b.len,
                        .local_mr = b.mr,
                        .remote_addr = rt_role.addr,
                        .rkey = rt_role.rkey};
            CHECK_OK(rf_post(c.ep, &wr, 1, NULL));
            outstanding++;
        }
        rf_completion comp = rt_wait_one(c.cq, rft_ms(20000));
        CHECK(comp.status == RF_OK, "stream write: %s",
              rf_status_string(comp.status));
        outstanding--;
        if (!announced) {
            printf("streaming\n");
            fflush(stdout);
            announced = 1;
        }
    }
}
