/* bench/bench_loops.c: rf-bench's measured loops (see bench_loops.h). Only
 * the public fabric API is used; one work request per rf_post, as perftest
 * posts one WR per ibv_post_send by default. */
#include "bench_loops.h"

#include <sched.h>
#include <string.h>

#include "bench_clock.h"

#define CTX_PINGPONG ((void *)(uintptr_t)0x50494e47u)

/* Gives up after the session timeout without progress; while busy polling
 * the clock is read every 1024 calls only. */
typedef struct stall_watch {
    uint64_t deadline;
    unsigned spins;
} stall_watch;

static int stalled(const bench_session *s, stall_watch *w, const char *what)
{
    /* With -e every call follows a wait, so the clock is cheap enough. */
    if (!s->events && (++w->spins & 1023u) != 0)
        return 0;
    uint64_t now = rf_now_ns();
    if (!w->deadline) {
        w->deadline = now + s->timeout_ns;
        return 0;
    }
    if (now <= w->deadline)
        return 0;
    bench_err(s, "%s: no progress within %llu s", what,
              (unsigned long long)(s->timeout_ns / 1000000000u));
    return -1;
}

/* The one-sided operation of the test, against the peer's buffers. */
static rf_wr base_wr(const bench_session *s, const bench_run *r)
{
    rf_wr wr = {.local_mr = s->mr, .rkey = s->peer.rkey, .len = r->size};
    switch (r->t->verb) {
    case BENCH_VERB_READ:
        wr.op = RF_OP_READ;
        wr.local = bench_at(s, s->lay.dst);
        wr.remote_addr = bench_peer_addr(s, s->lay.src);
        break;
    case BENCH_VERB_WRITE:
    case BENCH_VERB_WRITE_IMM:
        wr.op = r->t->verb == BENCH_VERB_WRITE ? RF_OP_WRITE : RF_OP_WRITE_IMM;
        wr.local = bench_at(s, s->lay.src);
        wr.remote_addr = bench_peer_addr(s, s->lay.dst);
        if (r->size <= r->inline_size)
            wr.flags |= RF_WR_INLINE;
        break;
    case BENCH_VERB_FETCH_ADD:
    case BENCH_VERB_CMP_SWAP:
        wr.op = r->t->verb == BENCH_VERB_FETCH_ADD ? RF_OP_FETCH_ADD
                                                   : RF_OP_CMP_SWAP;
        wr.len = 8;
        wr.local = bench_at(s, s->lay.results);
        wr.remote_addr = bench_peer_addr(s, s->lay.atomic);
        wr.compare_add = 1; /* fetch_add's addend */
        break;
    }
    return wr;
}

/* Atomic results: operation i must have returned base + i (operations
 * execute in posting order and every fetch_add / cmp_swap adds one). The
 * first mismatch is kept and reported after the loop, never inside it. */
typedef struct result_check {
    bool bad;
    uint32_t index;
    uint64_t got, want;
} result_check;

static inline void check_result(result_check *rc, const unsigned char *slot,
                                uint64_t want, uint32_t index)
{
    uint64_t got;
    memcpy(&got, slot, 8);
    if (got != want && !rc->bad)
        *rc = (result_check){true, index, got, want};
}

static int report_results(const bench_session *s, const bench_run *r,
                          const result_check *rc)
{
    if (!rc->bad)
        return 0;
    bench_err(s, "%s: operation %u returned %#llx, expected %#llx", r->t->name,
              rc->index, (unsigned long long)rc->got,
              (unsigned long long)rc->want);
    return -1;
}

/* Up to 16 send completions: waited for (100 ms at most) with -e, else
 * polled; 0 when none came, -1 (said) on an error. */
static int reap(const bench_session *s, rf_completion *comps)
{
    int got;
    if (s->events) {
        got = rf_cq_wait(s->scq, comps, 16, 100);
        if (got == RF_ERR_TIMEOUT)
            got = 0;
    } else {
        got = rf_cq_poll(s->scq, comps, 16);
    }
    if (got < 0) {
        bench_err(s, "rf_cq_poll: %s: %s", rf_status_string((rf_status)got),
                  rf_error_message());
        return -1;
    }
    return got;
}

static int post(const bench_session *s, const rf_wr *wr, uint32_t index)
{
    rf_status st = rf_post(s->ep, wr, 1, NULL);
    if (st == RF_OK)
        return 0;
    bench_err(s, "rf_post (operation %u): %s: %s", index, rf_status_string(st),
              rf_error_message());
    return -1;
}

int bench_run_lat(bench_session *s, bench_run *r)
{
    rf_wr wr = base_wr(s, r);
    uint64_t base = bench_atomic_base(r->size);
    bool atomic = r->t->atomic;
    result_check rc = {0};
    for (uint32_t i = 0; i < r->iters; i++) {
        /* cmp_swap: each compare matches the previous swap, so every
         * operation succeeds and the word counts the operations. */
        wr.compare_add = r->t->verb == BENCH_VERB_CMP_SWAP ? base + i : 1;
        wr.swap = base + i + 1;
        wr.context = (void *)(uintptr_t)i;
        r->tposted[i] = bench_ticks();
        if (post(s, &wr, i))
            return -1;
        rf_completion c;
        if (bench_poll1(s, s->scq, &c, BENCH_WAIT_SPIN) < 0)
            return -1;
        if (c.status != RF_OK || c.context != wr.context) {
            bench_err(s, "operation %u completed with %s", i,
                      rf_status_string(c.status));
            return -1;
        }
        if (atomic)
            check_result(&rc, wr.local, base + i, i);
    }
    return report_results(s, r, &rc);
}

int bench_run_bw(bench_session *s, bench_run *r)
{
    rf_wr wr = base_wr(s, r);
    const uint32_t n = r->iters, txd = r->tx_depth, cqm = r->cq_mod;
    const uint32_t keep = wr.flags;
    const bench_verb verb = r->t->verb;
    uint64_t base = bench_atomic_base(r->size);
    unsigned char *results = bench_at(s, s->lay.results);
    uint32_t scnt = 0, ccnt = 0;
    stall_watch w = {0, 0};
    rf_completion comps[16];
    result_check rc = {0};

    while (ccnt < n) {
        while (scnt < n && scnt - ccnt < txd) {
            /* perftest: every cq_mod-th operation and the last one. */
            bool signaled = scnt % cqm == cqm - 1 || scnt == n - 1;
            wr.flags = keep | (signaled ? 0 : RF_WR_UNSIGNALED);
            wr.context = (void *)(uintptr_t)scnt;
            if (verb == BENCH_VERB_WRITE_IMM) {
                wr.imm = scnt + 1;
            } else if (verb == BENCH_VERB_FETCH_ADD ||
                       verb == BENCH_VERB_CMP_SWAP) {
                wr.local = results + (size_t)(scnt % txd) * 8;
                /* The slot's previous operation, scnt - txd, completed
                 * (scnt - ccnt < txd): check what it returned. */
                if (scnt >= txd)
                    check_result(&rc, wr.local, base + scnt - txd, scnt - txd);
                if (verb == BENCH_VERB_CMP_SWAP) {
                    /* Operations execute in posting order, so each
                     * compare matches the previous swap. */
                    wr.compare_add = base + scnt;
                    wr.swap = base + scnt + 1;
                }
            }
            r->tposted[scnt] = bench_ticks();
            rf_status st = rf_post(s->ep, &wr, 1, NULL);
            if (st == RF_ERR_NO_RESOURCE)
                break; /* send queue full: reap completions first */
            if (st != RF_OK) {
                bench_err(s, "rf_post (operation %u): %s: %s", scnt,
                          rf_status_string(st), rf_error_message());
                return -1;
            }
            scnt++;
        }
        int got = reap(s, comps);
        if (got < 0)
            return -1;
        if (got == 0) {
            if (stalled(s, &w, r->t->name))
                return -1;
            continue;
        }
        uint64_t now = bench_ticks();
        for (int k = 0; k < got; k++) {
            uintptr_t idx = (uintptr_t)comps[k].context;
            if (comps[k].status != RF_OK) {
                bench_err(s, "operation %zu completed with %s", (size_t)idx,
                          rf_status_string(comps[k].status));
                return -1;
            }
            if (idx >= n || idx < ccnt) {
                bench_err(s,
                          "completion out of order (operation %zu after "
                          "%u)",
                          (size_t)idx, ccnt);
                return -1;
            }
            r->tcompleted[idx] = now;
            ccnt = (uint32_t)idx + 1;
        }
        w.deadline = 0;
    }
    if (verb == BENCH_VERB_FETCH_ADD || verb == BENCH_VERB_CMP_SWAP)
        for (uint32_t i = n > txd ? n - txd : 0; i < n; i++)
            check_result(&rc, results + (size_t)(i % txd) * 8, base + i, i);
    return report_results(s, r, &rc);
}

/* Sampling of a duration run: the first call at or after the first
 * margin starts it, the first at or after the last margin ends it. */
typedef struct sampler {
    uint64_t t0, start, stop, end;
    bool on, off;
    uint64_t c0, tstart;
} sampler;

static void sampler_init(sampler *sm, const bench_duration *d)
{
    *sm = (sampler){0};
    sm->t0 = bench_ticks();
    sm->start = sm->t0 + d->margin_ticks;
    sm->stop = sm->t0 + d->run_ticks - d->margin_ticks;
    sm->end = sm->t0 + d->run_ticks;
}

/* Records the sample's edges at now, with count operations completed;
 * returns true once the run is over. */
static bool sampler_tick(sampler *sm, bench_duration *d, uint64_t now,
                         uint64_t count)
{
    if (!sm->on && now >= sm->start) {
        sm->on = true;
        sm->tstart = now;
        sm->c0 = count;
    }
    if (sm->on && !sm->off && now >= sm->stop) {
        sm->off = true;
        d->sample_ticks = now - sm->tstart;
        d->sample_ops = count - sm->c0;
    }
    return now >= sm->end;
}

int bench_run_lat_duration(bench_session *s, bench_run *r, bench_duration *d)
{
    rf_wr wr = base_wr(s, r);
    uint64_t base = bench_atomic_base(r->size);
    bool atomic = r->t->atomic;
    result_check rc = {0};
    sampler sm;
    sampler_init(&sm, d);
    uint32_t i = 0;
    for (bool over = false; !over && i < UINT32_MAX - 1; i++) {
        wr.compare_add = r->t->verb == BENCH_VERB_CMP_SWAP ? base + i : 1;
        wr.swap = base + i + 1;
        wr.context = (void *)(uintptr_t)i;
        if (post(s, &wr, i))
            return -1;
        rf_completion c;
        if (bench_poll1(s, s->scq, &c, BENCH_WAIT_SPIN) < 0)
            return -1;
        if (c.status != RF_OK || c.context != wr.context) {
            bench_err(s, "operation %u completed with %s", i,
                      rf_status_string(c.status));
            return -1;
        }
        if (atomic)
            check_result(&rc, wr.local, base + i, i);
        over = sampler_tick(&sm, d, bench_ticks(), (uint64_t)i + 1);
    }
    d->done = i;
    r->iters = i;
    return report_results(s, r, &rc);
}

int bench_run_bw_duration(bench_session *s, bench_run *r, bench_duration *d)
{
    rf_wr wr = base_wr(s, r);
    const uint32_t txd = r->tx_depth, cqm = r->cq_mod;
    const uint32_t keep = wr.flags;
    const bench_verb verb = r->t->verb;
    const bool atomic =
        verb == BENCH_VERB_FETCH_ADD || verb == BENCH_VERB_CMP_SWAP;
    uint64_t base = bench_atomic_base(r->size);
    unsigned char *results = bench_at(s, s->lay.results);
    uint32_t scnt = 0, ccnt = 0;
    bool stopping = false, last_signaled = false;
    stall_watch w = {0, 0};
    rf_completion comps[16];
    result_check rc = {0};
    sampler sm;
    sampler_init(&sm, d);

    for (;;) {
        if (sampler_tick(&sm, d, bench_ticks(), ccnt) ||
            scnt >= UINT32_MAX - txd - 1)
            stopping = true;
        /* Once stopping, one more (signaled) operation if the last one
         * posted was not, so that its completion shows everything done. */
        while (scnt - ccnt < txd &&
               (!stopping || (scnt > 0 && !last_signaled))) {
            bool signaled = scnt % cqm == cqm - 1 || stopping;
            wr.flags = keep | (signaled ? 0 : RF_WR_UNSIGNALED);
            wr.context = (void *)(uintptr_t)scnt;
            if (verb == BENCH_VERB_WRITE_IMM) {
                wr.imm = scnt + 1;
            } else if (atomic) {
                wr.local = results + (size_t)(scnt % txd) * 8;
                if (scnt >= txd)
                    check_result(&rc, wr.local, base + scnt - txd, scnt - txd);
                if (verb == BENCH_VERB_CMP_SWAP) {
                    wr.compare_add = base + scnt;
                    wr.swap = base + scnt + 1;
                }
            }
            rf_status st = rf_post(s->ep, &wr, 1, NULL);
            if (st == RF_ERR_NO_RESOURCE)
                break;
            if (st != RF_OK) {
                bench_err(s, "rf_post (operation %u): %s: %s", scnt,
                          rf_status_string(st), rf_error_message());
                return -1;
            }
            last_signaled = signaled;
            scnt++;
        }
        if (stopping && last_signaled && ccnt == scnt)
            break;
        int got = reap(s, comps);
        if (got < 0)
            return -1;
        if (got == 0) {
            if (stalled(s, &w, r->t->name))
                return -1;
            continue;
        }
        for (int k = 0; k < got; k++) {
            uintptr_t idx = (uintptr_t)comps[k].context;
            if (comps[k].status != RF_OK) {
                bench_err(s, "operation %zu completed with %s", (size_t)idx,
                          rf_status_string(comps[k].status));
                return -1;
            }
            if (idx >= scnt || idx < ccnt) {
                bench_err(s,
                          "completion out of order (operation %zu after "
                          "%u)",
                          (size_t)idx, ccnt);
                return -1;
            }
            ccnt = (uint32_t)idx + 1;
        }
        w.deadline = 0;
    }
    if (atomic)
        for (uint32_t i = scnt > txd ? scnt - txd : 0; i < scnt; i++)
            check_result(&rc, results + (size_t)(i % txd) * 8, base + i, i);
    d->done = scnt;
    r->iters = scnt;
    return report_results(s, r, &rc);
}

/* The peer's write lands in this memory behind the compiler's back (the
 * NIC's DMA with verbs, the provider's progress thread with sock): a
 * volatile load as perftest's poll_buf, kept out of ThreadSanitizer's view
 * (the data is checked later, after a completion orders it). */
__attribute__((no_sanitize("thread"))) static int
wait_byte(const bench_session *s, const volatile unsigned char *p,
          unsigned char want)
{
    stall_watch w = {0, 0};
    while (*p != want) {
        if (s->events)
            sched_yield();
        if (stalled(s, &w, "waiting for the peer's write"))
            return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 0;
}

static int wait_imm(bench_session *s, uint32_t want)
{
    bench_msg m;
    bool imm;
    uint32_t v;
    if (bench_recv_any(s, BENCH_WAIT_SPIN, &m, &imm, &v))
        return -1;
    if (!imm) {
        bench_err(s, "unexpected %s during the ping-pong",
                  bench_msg_name(m.type));
        return -1;
    }
    if (v != want) {
        bench_err(s, "write_imm carried %u, expected %u", v, want);
        return -1;
    }
    return 0;
}

int bench_run_pingpong(bench_session *s, const bench_test_info *t,
                       uint64_t size, uint32_t iters, uint32_t inline_size,
                       bool initiator, uint64_t *tposted)
{
    bool imm = t->verb == BENCH_VERB_WRITE_IMM;
    bench_run r = {.t = t, .size = size, .inline_size = inline_size};
    rf_wr wr = base_wr(s, &r);
    wr.context = CTX_PINGPONG;
    unsigned char *last = bench_at(s, s->lay.src) + size - 1;
    const volatile unsigned char *flag = bench_at(s, s->lay.dst) + size - 1;

    for (uint32_t i = 0; i < iters; i++) {
        if (i > 0 || !initiator) {
            uint32_t want = initiator ? i : i + 1;
            int rc = imm ? wait_imm(s, want)
                         : wait_byte(s, flag, (unsigned char)want);
            if (rc)
                return -1;
        }
        if (tposted)
            tposted[i] = bench_ticks();
        *last = (unsigned char)(i + 1); /* what the peer polls for */
        wr.imm = i + 1;
        if (post(s, &wr, i) ||
            bench_wait_send(s, CTX_PINGPONG, BENCH_WAIT_SPIN))
            return -1;
    }
    if (!initiator)
        return 0;
    return imm ? wait_imm(s, iters) : wait_byte(s, flag, (unsigned char)iters);
}
