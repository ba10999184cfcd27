/* bench/bench_loops.h: the measured loops, as perftest's run_iter_lat
 * (read and atomic latency: post one signaled operation, busy-poll its
 * completion, repeat; the time between consecutive posts is one full round
 * trip), run_iter_lat_write (ping-pong: wait for the peer's write, post
 * ours, reap its completion; the interval is a round trip, reported /2), and
 * run_iter_bw (up to tx_depth operations in flight per endpoint, every
 * cq_mod-th of an endpoint's signaled; with -q N the endpoints are served
 * round-robin from one thread, as perftest serves its QPs). */
#ifndef RF_BENCH_LOOPS_H
#define RF_BENCH_LOOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "bench_opts.h"
#include "bench_session.h"

typedef struct bench_run {
    const bench_test_info *t;
    uint64_t size;
    uint32_t iters;       /* per endpoint */
    uint32_t tx_depth;    /* effective (<= iters), per endpoint */
    uint32_t cq_mod;      /* effective (<= tx_depth) */
    uint32_t inline_size; /* RF_WR_INLINE hint up to this size */
    /* iters x endpoints entries, in the order of all endpoints' posts and
     * completions (perftest's tposted[totscnt] / tcompleted[totccnt]) */
    uint64_t *tposted;    /* post times (bench_ticks) */
    uint64_t *tcompleted; /* bandwidth: completion times */
    uint32_t *qp_done;    /* bandwidth, out: operations run per endpoint */
} bench_run;

/* -D: what a duration run measured between its margins. */
typedef struct bench_duration {
    uint64_t run_ticks, margin_ticks; /* the whole run, each margin */
    uint64_t done;                    /* operations executed in all */
    uint64_t sample_ops;              /* completed between the margins */
    uint64_t sample_ticks;            /* the time between them */
} bench_duration;

/* Client side of read, fetch_add and cmp_swap latency. */
int bench_run_lat(bench_session *s, bench_run *r);
/* Client side of every bandwidth test, over the nqp sessions s[0..nqp-1]
 * (iters operations on each). */
int bench_run_bw(bench_session *s, uint32_t nqp, bench_run *r);
/* -D, as perftest's duration mode: the same loops run until run_ticks
 * have passed (iters and the timestamp arrays unused; every operation is
 * still checked), counting only what completed after the first margin and
 * before the last (on all endpoints). d->done is the number of operations
 * executed (all endpoints'; r->qp_done has each one's, for the server's
 * verification). */
int bench_run_lat_duration(bench_session *s, bench_run *r, bench_duration *d);
int bench_run_bw_duration(bench_session *s, uint32_t nqp, bench_run *r,
                          bench_duration *d);

/* One side of the write / write_imm ping-pong. */
typedef struct bench_pingpong {
    const bench_test_info *t;
    uint64_t size;
    uint32_t iters; /* round trips (-n); with dur, the most allowed */
    uint32_t inline_size;
    /* The initiator (client) posts first and, at the end, waits for the
     * peer's last message. */
    bool initiator;
    uint64_t *tposted;   /* initiator with -n: iters post times, or NULL */
    bench_duration *dur; /* initiator with -D: run this long, then stop
                          * after a complete round trip; NULL otherwise */
    uint32_t done;       /* out: round trips completed */
    /* out, the other side: the initiator's control message (its DONE after
     * a -D run) came instead of its next write, and ended the loop */
    bool stopped;
    bench_msg stop;
} bench_pingpong;
int bench_run_pingpong(bench_session *s, bench_pingpong *p);

#endif
