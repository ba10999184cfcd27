/* bench/bench_session.c: per-connection resources, control messaging and
 * completion polling for rf-bench (see bench_session.h). */
#include "bench_session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmaflow/clock.h"

#define PAGE           4096u
#define CTX_CTRL_SEND  ((void *)(uintptr_t)UINTPTR_MAX)
#define MAX_RECV_SLOTS 1024u

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

void bench_err(const bench_session *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", s && s->who ? s->who : "rf-bench");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void layout(uint64_t max_size, uint32_t tx_depth, uint32_t slots,
                   bench_layout *l)
{
    size_t buf = round_up((size_t)max_size, PAGE);
    l->atomic = 0;
    l->src = PAGE;
    l->dst = l->src + buf;
    l->results = l->dst + buf;
    l->ctrl_send = round_up(l->results + (size_t)tx_depth * 8, 64);
    l->ctrl_recv = l->ctrl_send + BENCH_SLOT_SIZE;
    l->total = round_up(l->ctrl_recv + (size_t)slots * BENCH_SLOT_SIZE, PAGE);
}

int bench_session_init(bench_session *s, const char *who, rf_fabric *fab,
                       uint64_t max_size, uint32_t tx_depth, bool events,
                       int spin_us, int timeout_s)
{
    memset(s, 0, sizeof *s);
    s->who = who;
    s->fab = fab;
    s->tx_depth = tx_depth;
    s->events = events;
    s->spin_us = spin_us;
    s->timeout_ns = (uint64_t)timeout_s * 1000000000u;
    /* Enough receives that a write_imm stream at full TX depth never
     * waits for one (the receiver reposts as it consumes). */
    uint32_t slots = 2 * tx_depth + 16;
    s->recv_slots = slots > MAX_RECV_SLOTS ? MAX_RECV_SLOTS : slots;
    layout(max_size, tx_depth, s->recv_slots, &s->lay);

    s->mem = aligned_alloc(PAGE, s->lay.total);
    if (!s->mem) {
        bench_err(s, "cannot allocate %zu bytes", s->lay.total);
        return -1;
    }
    memset(s->mem, 0, s->lay.total); /* touch every page before timing */
    rf_status st = rf_mr_reg(fab, s->mem, s->lay.total, RF_ACCESS_ALL, &s->mr);
    /* Each session's queues and endpoint are used by one thread (the -q N
     * endpoints each have their own session): as perftest's single-thread
     * loop, the provider may skip the locks of its own completions. */
    if (st == RF_OK)
        st = rf_cq_create_ex(fab,
                             &(rf_cq_attr){.depth = 2 * tx_depth + 64,
                                           .flags = RF_CQ_SINGLE_THREADED},
                             &s->scq);
    if (st == RF_OK)
        st = rf_cq_create_ex(fab,
                             &(rf_cq_attr){.depth = s->recv_slots + 16,
                                           .flags = RF_CQ_SINGLE_THREADED},
                             &s->rcq);
    if (st == RF_OK && events && spin_us >= 0)
        st = rf_cq_set_spin_us(s->scq, (unsigned)spin_us);
    if (st == RF_OK && events && spin_us >= 0)
        st = rf_cq_set_spin_us(s->rcq, (unsigned)spin_us);
    if (st != RF_OK) {
        bench_err(s, "setup: %s: %s", rf_status_string(st), rf_error_message());
        bench_session_fini(s);
        return -1;
    }
    return 0;
}

rf_ep_attr bench_session_ep_attr(const bench_session *s)
{
    return (rf_ep_attr){.send_cq = s->scq,
                        .recv_cq = s->rcq,
                        .max_send_wr = s->tx_depth + 16,
                        .max_recv_wr = s->recv_slots};
}

int bench_session_repost(bench_session *s, void *slot_context)
{
    uintptr_t i = (uintptr_t)slot_context;
    if (i >= s->recv_slots) {
        bench_err(s, "receive completion with unknown context %zu", (size_t)i);
        return -1;
    }
    rf_status st =
        rf_post_recv(s->ep, bench_at(s, s->lay.ctrl_recv + i * BENCH_SLOT_SIZE),
                     BENCH_SLOT_SIZE, s->mr, slot_context);
    if (st != RF_OK) {
        bench_err(s, "rf_post_recv: %s: %s", rf_status_string(st),
                  rf_error_message());
        return -1;
    }
    return 0;
}

int bench_session_post_recvs(bench_session *s)
{
    for (uint32_t i = 0; i < s->recv_slots; i++)
        if (bench_session_repost(s, (void *)(uintptr_t)i))
            return -1;
    return 0;
}

void bench_session_fini(bench_session *s)
{
    if (s->ep)
        rf_ep_close(s->ep);
    s->ep = NULL;
    if (s->mr)
        rf_mr_dereg(s->mr);
    s->mr = NULL;
    if (s->scq)
        rf_cq_destroy(s->scq);
    if (s->rcq)
        rf_cq_destroy(s->rcq);
    s->scq = s->rcq = NULL;
    free(s->mem);
    s->mem = NULL;
}

int bench_poll1(const bench_session *s, rf_cq *cq, rf_completion *c,
                bench_wait how)
{
    uint64_t deadline = 0;
    unsigned spins = 0;
    long nap_ns = 20000; /* idle: 20 us, doubling up to 2 ms */
    for (;;) {
        int n;
        if (s->events) {
            n = rf_cq_wait(cq, c, 1, 100);
            if (n == RF_ERR_TIMEOUT)
                n = 0;
        } else {
            n = rf_cq_poll(cq, c, 1);
        }
        if (n > 0)
            return 1;
        if (n < 0) {
            bench_err(s, "%s: %s: %s", s->events ? "rf_cq_wait" : "rf_cq_poll",
                      rf_status_string((rf_status)n), rf_error_message());
            return -1;
        }
        /* With manual progress the peer's operations are served only in
         * here: no sleeping. */
        bool idle = how == BENCH_WAIT_IDLE && !s->events && !s->manual;
        if (idle) {
            /* Few wake-ups while the peer measures: a passive perftest
             * server sleeps in a TCP read meanwhile. */
            struct timespec ts = {0, nap_ns};
            nanosleep(&ts, NULL);
            if (nap_ns < 2000000)
                nap_ns *= 2;
        }
        /* Read the clock rarely while spinning: a fast completion never
         * pays for it. */
        if (s->events || idle || (++spins & 1023u) == 0) {
            uint64_t now = rf_now_ns();
            if (!deadline) {
                deadline = now + s->timeout_ns;
            } else if (now > deadline) {
                bench_err(s, "no completion within %llu s",
                          (unsigned long long)(s->timeout_ns / 1000000000u));
                return -1;
            }
        }
    }
}

int bench_wait_send(const bench_session *s, void *ctx, bench_wait how)
{
    rf_completion c;
    if (bench_poll1(s, s->scq, &c, how) < 0)
        return -1;
    if (c.status != RF_OK) {
        /* A completion carries a status, not a message: say which one. */
        bench_err(s,
                  "operation failed: the %s posted to the server completed "
                  "with %s (endpoint state: %s)",
                  rf_wr_op_name(c.op), rf_status_string(c.status),
                  rf_status_string(rf_ep_state(s->ep)));
        return -1;
    }
    if (c.context != ctx) {
        bench_err(s, "unexpected send completion (op %d)", (int)c.op);
        return -1;
    }
    return 0;
}

int bench_send_msg(bench_session *s, const bench_msg *m)
{
    unsigned char *buf = bench_at(s, s->lay.ctrl_send);
    bench_msg_pack(m, buf);
    rf_status st = rf_send(s->ep, buf, BENCH_MSG_SIZE, s->mr, CTX_CTRL_SEND);
    if (st != RF_OK) {
        bench_err(s, "rf_send(%s): %s: %s", bench_msg_name(m->type),
                  rf_status_string(st), rf_error_message());
        return -1;
    }
    return bench_wait_send(s, CTX_CTRL_SEND, BENCH_WAIT_SPIN);
}

/* Consumes one receive completion: a control message or a write_imm. */
static int take_recv(bench_session *s, const rf_completion *c, bench_msg *m,
                     bool *imm, uint32_t *imm_value)
{
    if (c->status != RF_OK) {
        bench_err(s, "receive failed: %s", rf_status_string(c->status));
        return -1;
    }
    uintptr_t slot = (uintptr_t)c->context;
    if (slot >= s->recv_slots) {
        bench_err(s, "receive completion with unknown context");
        return -1;
    }
    if (c->op == RF_OP_RECV_WRITE_IMM) {
        *imm = true;
        *imm_value = c->imm;
        return bench_session_repost(s, c->context);
    }
    if (c->op != RF_OP_RECV) {
        bench_err(s, "unexpected completion (op %d) on the receive queue",
                  (int)c->op);
        return -1;
    }
    *imm = false;
    int bad = bench_msg_unpack(
        bench_at(s, s->lay.ctrl_recv + slot * BENCH_SLOT_SIZE), c->len, m);
    /* After BYE the peer closes at once: nothing more to receive. */
    if ((bad || m->type != BENCH_MSG_BYE) &&
        bench_session_repost(s, c->context))
        return -1;
    if (bad) {
        bench_err(s, "malformed control message (%u bytes)", c->len);
        return -1;
    }
    return 0;
}

int bench_recv_any(bench_session *s, bench_wait how, bench_msg *m, bool *imm,
                   uint32_t *imm_value)
{
    rf_completion c;
    if (bench_poll1(s, s->rcq, &c, how) < 0)
        return -1;
    return take_recv(s, &c, m, imm, imm_value);
}

int bench_try_recv(bench_session *s, bench_msg *m, bool *imm,
                   uint32_t *imm_value)
{
    rf_completion c;
    int n = rf_cq_poll(s->rcq, &c, 1);
    if (n < 0) {
        bench_err(s, "rf_cq_poll: %s: %s", rf_status_string((rf_status)n),
                  rf_error_message());
        return -1;
    }
    if (n == 0)
        return 0;
    return take_recv(s, &c, m, imm, imm_value) ? -1 : 1;
}

int bench_recv_msg(bench_session *s, bench_msg *m, bench_wait how)
{
    bool imm;
    uint32_t v;
    if (bench_recv_any(s, how, m, &imm, &v))
        return -1;
    if (imm) {
        bench_err(s,
                  "unexpected write_imm (imm %u) while waiting for a "
                  "control message",
                  v);
        return -1;
    }
    return 0;
}

int bench_expect_msg(bench_session *s, bench_msg_type type, bench_msg *m)
{
    if (bench_recv_msg(s, m, BENCH_WAIT_IDLE))
        return -1;
    if (m->type != type) {
        bench_err(s, "expected %s, got %s", bench_msg_name(type),
                  bench_msg_name(m->type));
        return -1;
    }
    return 0;
}

static inline unsigned char pattern_byte(uint64_t j, uint64_t size,
                                         unsigned seed)
{
    return (unsigned char)(j * 131u + (j >> 8) * 7u + size * 29u + seed);
}

void bench_pattern_fill(unsigned char *p, uint64_t len, uint64_t size,
                        unsigned seed)
{
    for (uint64_t j = 0; j < len; j++)
        p[j] = pattern_byte(j, size, seed);
}

int64_t bench_pattern_check(const unsigned char *p, uint64_t len, uint64_t size,
                            unsigned seed)
{
    for (uint64_t j = 0; j < len; j++)
        if (p[j] != pattern_byte(j, size, seed))
            return (int64_t)j;
    return -1;
}

uint64_t bench_atomic_base(uint64_t size)
{
    return 0x5246000000000000ull + (size << 20);
}
