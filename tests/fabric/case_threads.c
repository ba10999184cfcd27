/* tests/fabric/case_threads.c: 4 threads, each with its own endpoint and
 * completion queue on one shared fabric, post concurrently to the same
 * target: each writes seeded data of varying size into its own slice, reads it
 * back and checks it, and counts with fetch_add on its own word. The
 * fabric's counters (kept per posting thread, fabric_tally.c) then hold
 * exactly every thread's posts, after the threads have exited. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define THREADS 4
#define ITERS   150
#define SLICE   (256u * 1024u)

typedef struct job {
    int index;
    pthread_t thread;
    rf_fabric *fabric;
    uint16_t port;
    rf_mr_desc data, counters;
    uint64_t last_seed, last_off, last_len;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    char token[16];
    snprintf(token, sizeof token, "th%d", j->index);
    rt_conn c;
    rt_connect(j->fabric, j->port, token, &c);
    rt_buf b;
    rt_buf_alloc(j->fabric, &b, 2 * SLICE + 64, RF_ACCESS_LOCAL_WRITE);
    uint64_t *res = (uint64_t *)(void *)(b.p + 2 * SLICE);
    const uint64_t base = (uint64_t)j->index * SLICE;
    /* The slice is a window of the data region. */
    rf_mr_desc slice = {
        .addr = j->data.addr + base, .len = SLICE, .rkey = j->data.rkey};
    for (int i = 0; i < ITERS; i++) {
        uint64_t r = pat_mix((uint64_t)j->index * 100000 + (uint64_t)i);
        size_t len = 1 + (size_t)(r % SLICE);
        uint64_t off = (r >> 32) % (SLICE - len + 1);
        uint64_t seed = 5000 + (uint64_t)j->index * 1000 + (uint64_t)i;
        /* Positions relative to the whole region, for the target's check. */
        unsigned char *src = b.p, *dst = b.p + SLICE;
        pat_fill(src, len, seed, base + off);
        memset(dst, 0, len);
        rt_do(&c,
              rt_wr(RF_OP_WRITE, src, len, b.mr, slice.addr + off, slice.rkey),
              "thread write");
        rt_do(&c,
              rt_wr(RF_OP_READ, dst, len, b.mr, slice.addr + off, slice.rkey),
              "thread read");
        size_t bad = pat_check(dst, len, seed, base + off);
        CHECK(bad == PAT_OK,
              "thread %d iteration %d: byte %zu of %zu read "
              "back wrong",
              j->index, i, bad, len);
        rt_atomic(&c, RF_OP_FETCH_ADD, res, b.mr,
                  j->counters.addr + 8 * (uint64_t)j->index, j->counters.rkey,
                  1, 0, "thread fetch_add");
        CHECK_EQ_U64(*res, (uint64_t)i);
        j->last_seed = seed;
        j->last_off = base + off;
        j->last_len = len;
    }
    rt_buf_free(&b);
    rt_conn_close(&c);
    return NULL;
}

void case_threads_endpoints(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc data, counters;
    tgt_region(&t, 0, THREADS * SLICE, RF_ACCESS_ALL, 4096, &data);
    tgt_region(&t, 1, 4096, RF_ACCESS_ALL, 4096, &counters);
    rf_fabric *f = rt_fabric_open();
    rf_fabric_counters a, z;
    rf_fabric_counters_get(f, &a);
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job){.index = i,
                        .fabric = f,
                        .port = t.port,
                        .data = data,
                        .counters = counters};
        CHECK(pthread_create(&jobs[i].thread, NULL, worker, &jobs[i]) == 0,
              "pthread_create");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(jobs[i].thread, NULL);
    rf_fabric_counters_get(f, &z);
    static const rf_op counted[] = {RF_OP_WRITE, RF_OP_READ, RF_OP_FETCH_ADD};
    for (size_t k = 0; k < sizeof counted / sizeof counted[0]; k++)
        CHECK(z.posted[counted[k]] - a.posted[counted[k]] ==
                  (uint64_t)THREADS * ITERS,
              "the fabric counted %llu %s posts of %d threads x %d",
              (unsigned long long)(z.posted[counted[k]] - a.posted[counted[k]]),
              rf_wr_op_name(counted[k]), THREADS, ITERS);
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ_U64(tgt_get(&t, 1, 8 * (uint64_t)i), ITERS);
        /* The target holds each thread's last write. */
        char r[64];
        tgt_cmd(&t, r, sizeof r, "verifyrange 0 %llu %llu %llu",
                (unsigned long long)jobs[i].last_off,
                (unsigned long long)jobs[i].last_len,
                (unsigned long long)jobs[i].last_seed);
    }
    rf_fabric_close(f);
    tgt_stop(&t);
}
