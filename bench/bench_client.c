/* bench/bench_client.c: the client side of rf-bench (see bench_client.h).
 * The server's region descriptor arrives in the accept private data, the
 * client's goes in the connect private data; per size, RUN/READY frame the
 * measured loop and DONE/RESULT carry the server's verification. With -q N
 * the client opens N sessions (one connection each) and runs the bandwidth
 * loop over all of them from this thread. */
#include "bench_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmaflow/clock.h>

#include <rdmaflow/fabric.h>
#include <rdmaflow/fabric_info.h>

#include "bench_clock.h"
#include "bench_loops.h"
#include "bench_proto.h"
#include "bench_report.h"
#include "bench_session.h"
#include "bench_stats.h"

#define WHO "rf-bench"

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* perftest's force_dependecies: TX depth at most the iterations; CQ
 * moderation off (1) above 8 KiB unless asked for (but kept with -a), and at
 * most the TX depth. */
static void effective_bw(const bench_opts *o, uint64_t size, uint32_t iters,
                         uint32_t *txd, uint32_t *cqm)
{
    *txd = min_u32(o->tx_depth, iters);
    *cqm = o->cq_mod;
    if (size > BENCH_CQ_MOD_SIZE_LIMIT && !o->cq_mod_set && !o->all_sizes)
        *cqm = 1;
    if (*cqm > *txd)
        *cqm = *txd;
}

/* Checks what the client itself can see after RESULT: the bytes read or
 * written back to it, and the atomic results, on one endpoint that ran
 * iters operations. */
static int verify_local(bench_session *s, const bench_run *r, uint32_t iters)
{
    const unsigned char *dst = bench_at(s, s->lay.dst);
    uint64_t size = r->size;
    int64_t bad = -1;
    switch (r->t->verb) {
    case BENCH_VERB_READ:
        bad = bench_pattern_check(dst, size, size, BENCH_SEED_SERVER);
        break;
    case BENCH_VERB_WRITE:
    case BENCH_VERB_WRITE_IMM:
        if (r->t->pingpong) {
            bad = bench_pattern_check(dst, size - 1, size, BENCH_SEED_SERVER);
            if (bad < 0 && dst[size - 1] != (unsigned char)iters)
                bad = (int64_t)size - 1;
        }
        break;
    case BENCH_VERB_FETCH_ADD:
    case BENCH_VERB_CMP_SWAP: {
        /* Operation i returned base + i; the last is in its TX slot. */
        uint64_t got;
        size_t slot = r->t->bw ? (iters - 1) % r->tx_depth : 0;
        memcpy(&got, bench_at(s, s->lay.results + slot * 8), 8);
        uint64_t want = bench_atomic_base(size) + iters - 1;
        if (got != want) {
            bench_err(s, "%s: the last atomic returned %#llx, expected %#llx",
                      r->t->name, (unsigned long long)got,
                      (unsigned long long)want);
            return -1;
        }
        return 0;
    }
    }
    if (bad >= 0) {
        bench_err(s, "%s, %llu bytes: data verification failed at offset %lld",
                  r->t->name, (unsigned long long)size, (long long)bad);
        return -1;
    }
    return 0;
}

/* RUN on every endpoint, then READY from each. */
static int start_size(bench_session *ss, uint32_t nqp, uint64_t size,
                      uint32_t iters, uint32_t inline_size)
{
    for (uint32_t q = 0; q < nqp; q++) {
        bench_msg m = {.type = BENCH_MSG_RUN,
                       .size = size,
                       .iters = iters,
                       .value = inline_size};
        if (bench_send_msg(&ss[q], &m) ||
            bench_expect_msg(&ss[q], BENCH_MSG_READY, &m))
            return -1;
        if (m.status) {
            bench_err(&ss[q], "the server refused size %llu",
                      (unsigned long long)size);
            return -1;
        }
    }
    return 0;
}

/* DONE (with the operations it ran) on every endpoint, RESULT from each,
 * and the client's own checks. */
static int finish_size(bench_session *ss, uint32_t nqp, const bench_run *r)
{
    for (uint32_t q = 0; q < nqp; q++) {
        bench_msg m = {
            .type = BENCH_MSG_DONE, .size = r->size, .iters = r->qp_done[q]};
        if (bench_send_msg(&ss[q], &m) ||
            bench_expect_msg(&ss[q], BENCH_MSG_RESULT, &m))
            return -1;
        if (m.status != BENCH_CHECK_OK) {
            bench_err(&ss[q],
                      "%s, %llu bytes: the server's verification failed "
                      "(endpoint %u, check %u, value %llu)",
                      r->t->name, (unsigned long long)r->size, q, m.status,
                      (unsigned long long)m.value);
            return -1;
        }
        if (verify_local(&ss[q], r, r->qp_done[q]))
            return -1;
    }
    return 0;
}

static int run_size(bench_session *ss, uint32_t nqp, const bench_opts *o,
                    const bench_report_ctx *rc, uint64_t size)
{
    const bench_test_info *t = rc->t;
    bench_run r = {.t = t,
                   .size = size,
                   .iters = rc->iters,
                   .tx_depth = 1,
                   .cq_mod = 1,
                   .inline_size = rc->inline_size};
    const bool duration = o->duration_s > 0;
    if (t->bw)
        effective_bw(o, size, duration ? UINT32_MAX : r.iters, &r.tx_depth,
                     &r.cq_mod);
    const uint64_t total = (uint64_t)r.iters * nqp;
    r.qp_done = calloc(nqp, sizeof *r.qp_done);
    if (duration)
        r.iters = UINT32_MAX; /* the most RUN allows; DONE says how many */
    else {
        r.tposted = calloc(total, sizeof *r.tposted);
        r.tcompleted = calloc(total, sizeof *r.tcompleted);
    }
    int rv = -1;
    if (!r.qp_done || (!duration && (!r.tposted || !r.tcompleted))) {
        bench_err(&ss[0], "out of memory");
        goto out;
    }
    for (uint32_t q = 0; q < nqp; q++) {
        bench_session *s = &ss[q];
        bench_pattern_fill(bench_at(s, s->lay.src), size, size,
                           BENCH_SEED_CLIENT);
        memset(bench_at(s, s->lay.dst), 0, size);
        memset(bench_at(s, s->lay.results), 0, (size_t)s->tx_depth * 8);
    }
    if (start_size(ss, nqp, size, r.iters, rc->inline_size))
        goto out;

    int loop;
    bench_duration dur = {0};
    if (duration) {
        double tps = 1e9 / bench_clock_ns_per_tick();
        dur.run_ticks = (uint64_t)(o->duration_s * tps);
        dur.margin_ticks =
            (uint64_t)((o->margin_s ? o->margin_s : BENCH_DEFAULT_MARGIN) *
                       tps);
    }
    if (t->pingpong) {
        bench_pingpong pp = {.t = t,
                             .size = size,
                             .iters = r.iters,
                             .inline_size = r.inline_size,
                             .initiator = true,
                             .tposted = r.tposted,
                             .dur = duration ? &dur : NULL};
        loop = bench_run_pingpong(&ss[0], &pp);
        /* the report counts the round trips between the margins */
        dur.done = pp.done;
        r.iters = pp.done;
    } else if (t->bw) {
        loop = duration ? bench_run_bw_duration(ss, nqp, &r, &dur)
                        : bench_run_bw(ss, nqp, &r);
    } else {
        loop = duration ? bench_run_lat_duration(&ss[0], &r, &dur)
                        : bench_run_lat(&ss[0], &r);
    }
    if (loop)
        goto out;
    if (!t->bw)
        r.qp_done[0] = r.iters;
    if (finish_size(ss, nqp, &r))
        goto out;

    if (duration) {
        bench_report_duration(rc, size, r.cq_mod, &dur);
    } else if (t->bw) {
        bench_bw_stats bw;
        /* perftest: all endpoints' operations, from the first post to the
         * last completion */
        bench_bw_compute(r.tposted, r.tcompleted, (uint32_t)total, r.cq_mod,
                         size, !o->no_peak, bench_clock_ns_per_tick(), &bw);
        bench_report_bw(rc, size, r.cq_mod, &bw);
    } else {
        bench_lat_stats lat;
        if (bench_lat_compute(r.tposted, r.iters, t->rtt_factor,
                              bench_clock_ns_per_tick(), &lat)) {
            bench_err(&ss[0], "cannot compute statistics");
            goto out;
        }
        bench_report_lat(rc, size, &lat);
    }
    rv = 0;
out:
    free(r.tposted);
    free(r.tcompleted);
    free(r.qp_done);
    return rv;
}

static int connect_server(bench_session *s, const bench_opts *o,
                          const char *host, uint16_t port, uint32_t iters,
                          uint64_t max_size, uint32_t index, uint32_t token)
{
    bench_hello h = {.test = (uint8_t)o->test,
                     .iters = iters,
                     .tx_depth = s->tx_depth,
                     .max_size = max_size,
                     .qps = (uint16_t)o->qps,
                     .qp_index = (uint16_t)index,
                     .token = token};
    rf_mr_describe(s->mr, &h.region);
    unsigned char hbuf[BENCH_HELLO_SIZE];
    bench_hello_pack(&h, hbuf);
    rf_ep_attr attr = bench_session_ep_attr(s);
    rf_status st = rf_connect(s->fab, host, port, &attr, hbuf, sizeof hbuf,
                              o->timeout_s * 1000, &s->ep);
    bench_welcome w;
    if (st == RF_ERR_UNAVAILABLE) {
        size_t rlen = 0;
        const void *rej = rf_connect_reject_data(&rlen);
        if (bench_welcome_unpack(rej, rlen, &w) == 0 &&
            w.status == BENCH_WELCOME_TOO_MANY) {
            bench_err(s,
                      "-q %u: the server at %s:%u allows at most %u "
                      "endpoints (QPs) per run (its --max-qps)",
                      o->qps, host, (unsigned)port, w.max_qps);
            return -1;
        }
    }
    if (st != RF_OK) {
        bench_err(s, "rf_connect(%s:%u): %s: %s", host, (unsigned)port,
                  rf_status_string(st), rf_error_message());
        return -1;
    }
    size_t len = 0;
    const void *priv = rf_ep_peer_private_data(s->ep, &len);
    if (bench_welcome_unpack(priv, len, &w) || w.status) {
        bench_err(s,
                  "%s:%u is not an rf-bench server of this version, or "
                  "refused the test",
                  host, (unsigned)port);
        return -1;
    }
    if (w.region.len < s->lay.results) {
        bench_err(s, "the server's region (%llu bytes) is too small",
                  (unsigned long long)w.region.len);
        return -1;
    }
    s->peer = w.region;
    return bench_session_post_recvs(s);
}

/* Ties the connections of one run together at the server (with --forever
 * another client's may come in between). */
static uint32_t run_token(void)
{
    uint64_t v = rf_now_ns() ^ ((uint64_t)getpid() << 32);
    return (uint32_t)(v ^ (v >> 32)) | 1u;
}

int bench_client(const bench_opts *o, const char *host, uint16_t port)
{
    const bench_test_info *t = bench_test_get(o->test);
    uint64_t sizes[BENCH_MAX_SIZES];
    size_t nsizes = bench_opts_sizes(o, sizes);
    uint64_t max_size = 0;
    for (size_t i = 0; i < nsizes; i++)
        if (sizes[i] > max_size)
            max_size = sizes[i];
    uint32_t iters = bench_opts_iters(o);
    uint32_t txd = 1, cqm = 1;
    if (t->bw)
        effective_bw(o, sizes[0], o->duration_s ? UINT32_MAX : iters, &txd,
                     &cqm);

    rf_fabric *fab = NULL;
    rf_fabric_attr fattr = {.progress = o->progress};
    rf_status st = rf_fabric_open(o->provider, &fattr, &fab);
    if (st != RF_OK) {
        fprintf(stderr, WHO ": rf_fabric_open(%s): %s: %s%s\n",
                o->provider ? o->provider : "auto", rf_status_string(st),
                rf_error_message(), bench_opts_env_note(o));
        return 1;
    }
    if (bench_opts_check_device(o, fab, WHO)) {
        rf_fabric_close(fab);
        return 1;
    }
    /* -q N: N sessions, each with its own region, queues and connection */
    const uint32_t nqp = o->qps;
    bench_session *ss = calloc(nqp, sizeof *ss);
    if (!ss) {
        fprintf(stderr, WHO ": out of memory\n");
        rf_fabric_close(fab);
        return 1;
    }
    int rv = 1;
    uint32_t ready = 0;
    const uint32_t token = run_token();
    for (; ready < nqp; ready++) {
        if (bench_session_init(&ss[ready], WHO, fab, max_size, txd, o->events,
                               o->spin_us, o->timeout_s))
            goto out;
        /* what the provider does: shm ignores manual */
        ss[ready].manual = rf_fabric_progress(fab) == RF_PROGRESS_MANUAL;
        if (connect_server(&ss[ready], o, host, port, iters, max_size, ready,
                           token)) {
            ready++; /* its session is set up: finish it too */
            goto out;
        }
    }
    {
        char peer[300];
        snprintf(peer, sizeof peer, "%s:%u", host, (unsigned)port);
        rf_fabric_device dev;
        bool have_dev = strcmp(rf_ep_provider(ss[0].ep), "verbs") == 0 &&
                        rf_fabric_device_info(fab, &dev) == RF_OK;
        bench_report_ctx rc = {.o = o,
                               .dev = have_dev ? &dev : NULL,
                               .t = t,
                               .provider = rf_fabric_provider(fab),
                               .progress = rf_fabric_progress(fab),
                               .peer = peer,
                               .iters = iters,
                               .tx_depth = txd,
                               .cq_mod = cqm,
                               .inline_size = bench_opts_inline(o)};
        bench_report_header(&rc);
        size_t i = 0;
        while (i < nsizes && run_size(ss, nqp, o, &rc, sizes[i]) == 0)
            i++;
        if (i == nsizes) {
            bench_report_footer(&rc);
            rv = 0;
            for (uint32_t q = 0; q < nqp; q++) {
                bench_msg bye = {.type = BENCH_MSG_BYE};
                if (bench_send_msg(&ss[q], &bye))
                    rv = 1;
            }
        }
    }
out:
    for (uint32_t q = 0; q < ready; q++)
        bench_session_fini(&ss[q]);
    free(ss);
    rf_fabric_close(fab);
    return rv;
}
