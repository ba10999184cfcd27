/* bench/bench_loops.c: rf-bench's measured loops (see bench_loops.h). Only
 * the public fabric API is used; one work request per rf_post, as perftest
 * posts one WR per ibv_post_send by default. */
#include "bench_loops.h"

#include <sched.h>
#include <stdlib.h>
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

/* Up to 16 send completions: with wait (and -e) waited for, 100 ms at
 * most, else polled; 0 when none came, -1 (said) on an error. */
static int reap(const bench_session *s, rf_completion *comps, bool wait)
{
    int got;
    if (s->events && wait) {
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

/* One endpoint of a bandwidth run: its work request and counters (the
 * context of operation i is i, so completions are matched per endpoint). */
typedef struct qp_state {
    rf_wr wr;
    uint32_t scnt, ccnt;
    bool last_signaled;
} qp_state;

static qp_state *qp_states(bench_session *ss, uint32_t nqp, const bench_run *r)
{
    qp_state *q = calloc(nqp, sizeof *q);
    if (!q) {
        bench_err(&ss[0], "out of memory");
        return NULL;
    }
    for (uint32_t i = 0; i < nqp; i++)
        q[i].wr = base_wr(&ss[i], r);
    return q;
}

/* Prepares operation p->scnt of an endpoint (flags, immediate, atomic
 * operands and the check of its result slot's previous operation). */
static void prepare_op(bench_session *s, const bench_run *r, qp_state *p,
                       uint32_t keep, bool signaled, result_check *rc)
{
    const bench_verb verb = r->t->verb;
    const uint32_t scnt = p->scnt, txd = r->tx_depth;
    rf_wr *wr = &p->wr;
    wr->flags = keep | (signaled ? 0 : RF_WR_UNSIGNALED);
    wr->context = (void *)(uintptr_t)scnt;
    if (verb == BENCH_VERB_WRITE_IMM) {
        wr->imm = scnt + 1;
    } else if (verb == BENCH_VERB_FETCH_ADD || verb == BENCH_VERB_CMP_SWAP) {
        uint64_t base = bench_atomic_base(r->size);
        wr->local = bench_at(s, s->lay.results) + (size_t)(scnt % txd) * 8;
        /* The slot's previous operation, scnt - txd, completed
         * (scnt - ccnt < txd): check what it returned. */
        if (scnt >= txd)
            check_result(rc, wr->local, base + scnt - txd, scnt - txd);
        if (verb == BENCH_VERB_CMP_SWAP) {
            /* Operations execute in posting order, so each compare matches
             * the previous swap. */
            wr->compare_add = base + scnt;
            wr->swap = base + scnt + 1;
        }
    }
}

/* Takes got completions of endpoint i: *newly grows by the operations
 * they complete (its completion of operation k completes all its
 * operations up to k). */
static int take_comps(bench_session *s, const bench_run *r, qp_state *p,
                      const rf_completion *comps, int got, uint64_t *newly)
{
    for (int k = 0; k < got; k++) {
        uintptr_t idx = (uintptr_t)comps[k].context;
        if (comps[k].status != RF_OK) {
            bench_err(s, "operation %zu completed with %s", (size_t)idx,
                      rf_status_string(comps[k].status));
            return -1;
        }
        if (idx >= p->scnt || idx < p->ccnt) {
            bench_err(s, "%s: completion out of order (operation %zu after %u)",
                      r->t->name, (size_t)idx, p->ccnt);
            return -1;
        }
        *newly += (uint32_t)idx + 1 - p->ccnt;
        p->ccnt = (uint32_t)idx + 1;
    }
    return 0;
}

/* Polls every endpoint's completions once and, with -e when none came,
 * waits on one endpoint with work outstanding (never on an idle one's
 * queue). Returns the completions seen, or -1 (said); *newly is the
 * operations they complete, *now_out the time they were seen. */
static int reap_all(bench_session *ss, uint32_t nqp, const bench_run *r,
                    qp_state *q, uint64_t *newly, uint64_t *now_out)
{
    rf_completion comps[16];
    int seen = 0;
    *newly = 0;
    for (uint32_t i = 0; i < nqp; i++) {
        int got = reap(&ss[i], comps, false);
        if (got < 0 || take_comps(&ss[i], r, &q[i], comps, got, newly))
            return -1;
        if (got > 0)
            *now_out = bench_ticks();
        seen += got;
    }
    if (seen || !ss[0].events)
        return seen;
    for (uint32_t i = 0; i < nqp; i++) {
        if (q[i].ccnt == q[i].scnt)
            continue;
        int got = reap(&ss[i], comps, true);
        if (got < 0 || take_comps(&ss[i], r, &q[i], comps, got, newly))
            return -1;
        if (got > 0)
            *now_out = bench_ticks();
        return got;
    }
    return 0;
}

/* The atomic results still in each endpoint's slots after the loop. */
static void check_last_results(bench_session *ss, uint32_t nqp,
                               const bench_run *r, const qp_state *q,
                               result_check *rc)
{
    const bench_verb verb = r->t->verb;
    if (verb != BENCH_VERB_FETCH_ADD && verb != BENCH_VERB_CMP_SWAP)
        return;
    const uint32_t txd = r->tx_depth;
    uint64_t base = bench_atomic_base(r->size);
    for (uint32_t k = 0; k < nqp; k++) {
        const unsigned char *results = bench_at(&ss[k], ss[k].lay.results);
        uint32_t n = q[k].scnt;
        for (uint32_t i = n > txd ? n - txd : 0; i < n; i++)
            check_result(rc, results + (size_t)(i % txd) * 8, base + i, i);
    }
}

int bench_run_bw(bench_session *ss, uint32_t nqp, bench_run *r)
{
    const uint32_t n = r->iters, txd = r->tx_depth, cqm = r->cq_mod;
    const uint64_t total = (uint64_t)n * nqp;
    qp_state *q = qp_states(ss, nqp, r);
    if (!q)
        return -1;
    const uint32_t keep = q[0].wr.flags;
    uint64_t totscnt = 0, totccnt = 0;
    stall_watch w = {0, 0};
    result_check rc = {0};
    int rv = -1;

    while (totccnt < total) {
        for (uint32_t i = 0; i < nqp; i++) {
            qp_state *p = &q[i];
            while (p->scnt < n && p->scnt - p->ccnt < txd) {
                /* perftest: every cq_mod-th operation of the endpoint and
                 * its last one. */
                bool signaled = p->scnt % cqm == cqm - 1 || p->scnt == n - 1;
                prepare_op(&ss[i], r, p, keep, signaled, &rc);
                r->tposted[totscnt] = bench_ticks();
                rf_status st = rf_post(ss[i].ep, &p->wr, 1, NULL);
                if (st == RF_ERR_NO_RESOURCE)
                    break; /* send queue full: reap completions first */
                if (st != RF_OK) {
                    bench_err(&ss[i], "rf_post (operation %u): %s: %s", p->scnt,
                              rf_status_string(st), rf_error_message());
                    goto out;
                }
                p->scnt++;
                totscnt++;
            }
        }
        uint64_t newly, now = 0;
        int got = reap_all(ss, nqp, r, q, &newly, &now);
        if (got < 0)
            goto out;
        if (got == 0) {
            if (stalled(&ss[0], &w, r->t->name))
                goto out;
            continue;
        }
        /* Every operation now complete gets this time (perftest's
         * tcompleted[totccnt - 1]; the peak reads the signaled ones). */
        for (uint64_t end = totccnt + newly; totccnt < end; totccnt++)
            r->tcompleted[totccnt] = now;
        w.deadline = 0;
    }
    check_last_results(ss, nqp, r, q, &rc);
    for (uint32_t i = 0; i < nqp; i++)
        r->qp_done[i] = q[i].scnt;
    rv = report_results(&ss[0], r, &rc);
out:
    free(q);
    return rv;
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

int bench_run_bw_duration(bench_session *ss, uint32_t nqp, bench_run *r,
                          bench_duration *d)
{
    const uint32_t txd = r->tx_depth, cqm = r->cq_mod;
    qp_state *q = qp_states(ss, nqp, r);
    if (!q)
        return -1;
    const uint32_t keep = q[0].wr.flags;
    uint64_t totccnt = 0;
    bool stopping = false;
    stall_watch w = {0, 0};
    result_check rc = {0};
    sampler sm;
    int rv = -1;
    sampler_init(&sm, d);

    for (;;) {
        if (sampler_tick(&sm, d, bench_ticks(), totccnt))
            stopping = true;
        bool idle = true; /* once stopping: everything posted completed */
        for (uint32_t i = 0; i < nqp; i++) {
            qp_state *p = &q[i];
            if (p->scnt >= UINT32_MAX - txd - 1)
                stopping = true;
            /* Once stopping, one more (signaled) operation if the last one
             * posted was not, so that its completion shows everything
             * done. */
            while (p->scnt - p->ccnt < txd &&
                   (!stopping || (p->scnt > 0 && !p->last_signaled))) {
                bool signaled = p->scnt % cqm == cqm - 1 || stopping;
                prepare_op(&ss[i], r, p, keep, signaled, &rc);
                rf_status st = rf_post(ss[i].ep, &p->wr, 1, NULL);
                if (st == RF_ERR_NO_RESOURCE)
                    break;
                if (st != RF_OK) {
                    bench_err(&ss[i], "rf_post (operation %u): %s: %s", p->scnt,
                              rf_status_string(st), rf_error_message());
                    goto out;
                }
                p->last_signaled = signaled;
                p->scnt++;
            }
            if (p->ccnt != p->scnt || (p->scnt > 0 && !p->last_signaled))
                idle = false;
        }
        if (stopping && idle)
            break;
        uint64_t newly, now = 0;
        int got = reap_all(ss, nqp, r, q, &newly, &now);
        if (got < 0)
            goto out;
        if (got == 0) {
            if (stalled(&ss[0], &w, r->t->name))
                goto out;
            continue;
        }
        totccnt += newly;
        w.deadline = 0;
    }
    check_last_results(ss, nqp, r, q, &rc);
    d->done = 0;
    for (uint32_t i = 0; i < nqp; i++) {
        r->qp_done[i] = q[i].scnt;
        d->done += q[i].scnt;
    }
    rv = report_results(&ss[0], r, &rc);
out:
    free(q);
    return rv;
}

/* The peer's write lands in this memory behind the compiler's back (the
 * NIC's DMA with verbs, the provider's progress thread with sock): a
 * volatile load as perftest's poll_buf, kept out of ThreadSanitizer's view
 * (the data is checked later, after a completion orders it). With p, the
 * receive queue is looked at whenever the clock is (every 1024 spins): a
 * control message there instead of the write ends the ping-pong (1). */
__attribute__((no_sanitize("thread"))) static int
wait_byte(bench_session *s, const volatile unsigned char *b, unsigned char want,
          bench_pingpong *p)
{
    stall_watch w = {0, 0};
    while (*b != want) {
        if (s->manual) {
            /* Manual progress: the peer's write lands only when this side
             * polls (as ucx_perftest's spin calls ucp_worker_progress).
             * Nothing is outstanding on the send queue now. */
            rf_completion c;
            int n = rf_cq_poll(s->scq, &c, 1);
            if (n != 0) {
                bench_err(s,
                          "rf_cq_poll while waiting for the peer's write: "
                          "%s",
                          n < 0 ? rf_error_message()
                                : "an unexpected completion");
                return -1;
            }
        }
        /* Waiting modes leave the CPU to the thread that applies the
         * write (the progress thread); with manual progress that is this
         * one. */
        if (s->events && !s->manual)
            sched_yield();
        if (p && (s->events || (w.spins & 1023u) == 1023u)) {
            bool imm;
            uint32_t v;
            int got = bench_try_recv(s, &p->stop, &imm, &v);
            if (got < 0)
                return -1;
            if (got > 0) {
                if (imm) {
                    bench_err(s, "unexpected write_imm (imm %u)", v);
                    return -1;
                }
                p->stopped = true;
                return 1;
            }
        }
        if (stalled(s, &w, "waiting for the peer's write"))
            return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 0;
}

/* The peer's write_imm carrying want; with p, a control message instead
 * ends the ping-pong (1). */
static int wait_imm(bench_session *s, uint32_t want, bench_pingpong *p)
{
    bench_msg m;
    bool imm;
    uint32_t v;
    if (bench_recv_any(s, BENCH_WAIT_SPIN, &m, &imm, &v))
        return -1;
    if (!imm && p) {
        p->stop = m;
        p->stopped = true;
        return 1;
    }
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

int bench_run_pingpong(bench_session *s, bench_pingpong *p)
{
    const bool imm = p->t->verb == BENCH_VERB_WRITE_IMM;
    const bool initiator = p->initiator;
    bench_run r = {.t = p->t, .size = p->size, .inline_size = p->inline_size};
    rf_wr wr = base_wr(s, &r);
    wr.context = CTX_PINGPONG;
    unsigned char *last = bench_at(s, s->lay.src) + p->size - 1;
    const volatile unsigned char *flag = bench_at(s, s->lay.dst) + p->size - 1;
    /* The passive side may be told to stop (the initiator's -D). */
    bench_pingpong *stoppable = initiator ? NULL : p;
    sampler sm = {0};
    if (p->dur)
        sampler_init(&sm, p->dur);
    p->done = 0;
    p->stopped = false;

    uint32_t i = 0;
    for (; i < p->iters; i++) {
        if (i > 0 || !initiator) {
            uint32_t want = initiator ? i : i + 1;
            int rc = imm ? wait_imm(s, want, stoppable)
                         : wait_byte(s, flag, (unsigned char)want, stoppable);
            if (rc < 0)
                return -1;
            if (rc > 0) { /* stopped: the peer completed i round trips */
                p->done = i;
                return 0;
            }
        }
        /* -D: i round trips are complete; past the run's end, stop
         * before the next one (the peer then gets DONE instead). */
        if (p->dur && sampler_tick(&sm, p->dur, bench_ticks(), i)) {
            p->done = i;
            return 0;
        }
        if (p->tposted)
            p->tposted[i] = bench_ticks();
        *last = (unsigned char)(i + 1); /* what the peer polls for */
        wr.imm = i + 1;
        if (post(s, &wr, i) ||
            bench_wait_send(s, CTX_PINGPONG, BENCH_WAIT_SPIN))
            return -1;
    }
    p->done = i;
    if (!initiator)
        return 0;
    return imm ? wait_imm(s, i, NULL)
               : wait_byte(s, flag, (unsigned char)i, NULL);
}
