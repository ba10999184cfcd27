/* bench/bench_server.c: the server side of rf-bench (see bench_server.h).
 * Per message size: RUN prepares the buffers (pattern to be read, cleared
 * target, atomic word), READY answers, the server then takes part in the
 * ping-pong tests or keeps receiving write_imms, and DONE is answered with
 * RESULT, the outcome of checking its memory. A -q N run is N connections
 * (at most --max-qps), each with its own session, served by its own
 * thread. */
#include "bench_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmaflow/clock.h>
#include <rdmaflow/fabric.h>

#include "bench_loops.h"
#include "bench_proto.h"
#include "bench_session.h"
#include "bench_stats.h"

#define WHO "rf-bench server"

typedef struct serve_state {
    const bench_test_info *t;
    bench_hello hello;
    uint64_t size; /* of the current RUN; 0 between runs */
    uint32_t iters;
    uint32_t imm_next; /* write_imm_bw: next immediate expected */
    uint32_t imm_count;
    bool imm_disorder;
} serve_state;

static void prepare(bench_session *s, serve_state *st, const bench_msg *m)
{
    st->size = m->size;
    st->iters = m->iters;
    st->imm_next = 1;
    st->imm_count = 0;
    st->imm_disorder = false;
    bench_pattern_fill(bench_at(s, s->lay.src), m->size, m->size,
                       BENCH_SEED_SERVER);
    memset(bench_at(s, s->lay.dst), 0, m->size);
    uint64_t base = bench_atomic_base(m->size);
    memcpy(bench_at(s, s->lay.atomic), &base, 8);
}

/* Checks the server's memory after the client's DONE. */
static bench_check verify(bench_session *s, const serve_state *st,
                          uint64_t *value)
{
    const unsigned char *dst = bench_at(s, s->lay.dst);
    uint64_t size = st->size;
    int64_t bad;
    *value = 0;
    switch (st->t->verb) {
    case BENCH_VERB_READ:
        return BENCH_CHECK_OK;
    case BENCH_VERB_WRITE:
    case BENCH_VERB_WRITE_IMM:
        if (st->t->pingpong) {
            bad = bench_pattern_check(dst, size - 1, size, BENCH_SEED_CLIENT);
            if (bad < 0 && dst[size - 1] != (unsigned char)st->iters)
                bad = (int64_t)size - 1;
        } else {
            bad = bench_pattern_check(dst, size, size, BENCH_SEED_CLIENT);
        }
        if (bad >= 0) {
            *value = (uint64_t)bad;
            return BENCH_CHECK_DATA;
        }
        if (st->t->bw && st->t->verb == BENCH_VERB_WRITE_IMM &&
            (st->imm_count != st->iters || st->imm_disorder)) {
            *value = st->imm_count;
            return BENCH_CHECK_IMM;
        }
        return BENCH_CHECK_OK;
    case BENCH_VERB_FETCH_ADD:
    case BENCH_VERB_CMP_SWAP: {
        uint64_t word;
        memcpy(&word, bench_at(s, s->lay.atomic), 8);
        *value = word;
        return word == bench_atomic_base(size) + st->iters
                   ? BENCH_CHECK_OK
                   : BENCH_CHECK_COUNTER;
    }
    }
    return BENCH_CHECK_PROTO;
}

/* Answers one control message; returns 1 after BYE, 0 to go on, -1 on a
 * failure that ends the connection. */
static int handle(bench_session *s, serve_state *st, const bench_msg *m)
{
    bench_msg reply = {0};
    switch (m->type) {
    case BENCH_MSG_RUN:
        reply.type = BENCH_MSG_READY;
        if (st->size || m->size == 0 || m->size > st->hello.max_size ||
            m->iters < BENCH_MIN_ITERS || (st->t->atomic && m->size != 8)) {
            bench_err(s, "bad RUN (size %llu, iters %u)",
                      (unsigned long long)m->size, m->iters);
            reply.status = BENCH_CHECK_PROTO;
            bench_send_msg(s, &reply);
            return -1;
        }
        prepare(s, st, m);
        if (bench_send_msg(s, &reply))
            return -1;
        if (st->t->pingpong) {
            /* RUN's value is the client's inline threshold: mirror it. */
            bench_pingpong pp = {.t = st->t,
                                 .size = st->size,
                                 .iters = st->iters,
                                 .inline_size = (uint32_t)m->value};
            if (bench_run_pingpong(s, &pp))
                return -1;
            if (!pp.stopped)
                return 0;
            /* -D: the client's DONE after its last complete round trip */
            if (pp.stop.type != BENCH_MSG_DONE || pp.stop.iters != pp.done) {
                bench_err(s,
                          "%s: %s (%u round trips) ended the ping-pong "
                          "after %u",
                          st->t->name, bench_msg_name(pp.stop.type),
                          pp.stop.iters, pp.done);
                return -1;
            }
            st->iters = pp.done;
            return handle(s, st, &pp.stop);
        }
        return 0;
    case BENCH_MSG_DONE:
        reply.type = BENCH_MSG_RESULT;
        /* A duration run (-D) says in DONE how many of RUN's operations it
         * executed; a ping-pong always runs them all. */
        if (st->size && !st->t->pingpong && m->iters <= st->iters)
            st->iters = m->iters;
        if (!st->size) {
            reply.status = BENCH_CHECK_PROTO;
        } else {
            reply.status = (uint8_t)verify(s, st, &reply.value);
            reply.size = st->size;
            reply.iters = st->iters;
            if (reply.status != BENCH_CHECK_OK)
                bench_err(s,
                          "%s, %llu bytes: verification failed (check "
                          "%u, value %llu)",
                          st->t->name, (unsigned long long)st->size,
                          reply.status, (unsigned long long)reply.value);
        }
        st->size = 0;
        return bench_send_msg(s, &reply) ? -1 : 0;
    case BENCH_MSG_BYE:
        return 1;
    default:
        bench_err(s, "unexpected %s", bench_msg_name(m->type));
        return -1;
    }
}

/* After BYE, waits (at most 2 s) for the client to close first. The
 * receive of BYE can complete here before the transport has acknowledged
 * the send to the client (rxe posts the receive's completion, then sends
 * the ACK); closing at once could flush the client's BYE with
 * RF_ERR_DISCONNECTED after a measurement that completed. perftest ends
 * its runs the same way, on its out-of-band socket. */
static void linger(bench_session *s)
{
    int64_t deadline = rf_deadline_ms(2000);
    while (rf_ep_state(s->ep) == RF_OK && !rf_deadline_passed(deadline)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Serves one accepted connection until BYE. */
static int serve_conn(bench_session *s, serve_state *st)
{
    bool imm_stream = st->t->bw && st->t->verb == BENCH_VERB_WRITE_IMM;
    for (;;) {
        bench_msg m;
        bool imm;
        uint32_t v;
        /* Spin while write_imms stream in (the receiver must repost at the
         * sender's pace, as perftest's server); else poll idly so a passive
         * server leaves the CPU to the client (perftest's server sleeps in
         * a TCP read during one-sided tests). */
        bench_wait how =
            imm_stream && st->size ? BENCH_WAIT_SPIN : BENCH_WAIT_IDLE;
        if (bench_recv_any(s, how, &m, &imm, &v))
            return -1;
        if (imm) {
            if (!imm_stream || !st->size) {
                bench_err(s, "unexpected write_imm (imm %u)", v);
                return -1;
            }
            if (v != st->imm_next)
                st->imm_disorder = true;
            st->imm_next = v + 1;
            st->imm_count++;
            continue;
        }
        int rc = handle(s, st, &m);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            linger(s);
            return 0;
        }
    }
}

static int validate_hello(const void *priv, size_t len, bench_hello *h,
                          const char **why)
{
    if (bench_hello_unpack(priv, len, h)) {
        *why = "not an rf-bench client (or another protocol version)";
        return -1;
    }
    if (h->test >= BENCH_TEST_COUNT) {
        *why = "unknown test";
        return -1;
    }
    if (h->max_size == 0 || h->max_size > BENCH_MAX_SIZE ||
        h->iters < BENCH_MIN_ITERS || h->tx_depth == 0 ||
        h->tx_depth > BENCH_MAX_TX_DEPTH || h->qps == 0 ||
        h->qp_index >= h->qps ||
        (h->qps > 1 && !bench_test_get((bench_test)h->test)->bw)) {
        *why = "parameters out of range";
        return -1;
    }
    return 0;
}

static void reject(rf_conn_req *req, bench_welcome_status status,
                   uint32_t max_qps)
{
    unsigned char w[BENCH_WELCOME_SIZE];
    bench_welcome_pack(
        &(bench_welcome){.status = (uint8_t)status, .max_qps = max_qps}, w);
    rf_reject(req, w, sizeof w);
}

/* One accepted connection of a run and what its thread found. */
typedef struct serve_conn_ctx {
    bench_session s;
    serve_state st;
    bool open;
    int rc;
    pthread_t thread;
    bool threaded;
} serve_conn_ctx;

/* Sets up the session for the request and accepts it. */
static int accept_conn(const bench_opts *o, rf_fabric *fab, rf_conn_req *req,
                       const bench_hello *h, serve_conn_ctx *c)
{
    c->st.hello = *h;
    c->st.t = bench_test_get((bench_test)h->test);
    if (bench_session_init(&c->s, WHO, fab, h->max_size, h->tx_depth, o->events,
                           o->spin_us, o->timeout_s)) {
        rf_reject(req, NULL, 0);
        return -1;
    }
    /* what the provider does, not what was asked: shm ignores manual */
    c->s.manual = rf_fabric_progress(fab) == RF_PROGRESS_MANUAL;
    c->s.peer = h->region;
    bench_welcome w = {.status = BENCH_WELCOME_OK, .max_qps = o->max_qps};
    rf_mr_describe(c->s.mr, &w.region);
    unsigned char wbuf[BENCH_WELCOME_SIZE];
    bench_welcome_pack(&w, wbuf);
    rf_ep_attr attr = bench_session_ep_attr(&c->s);
    rf_status rs = rf_accept(req, &attr, wbuf, sizeof wbuf, &c->s.ep);
    c->open = true;
    if (rs != RF_OK) {
        bench_err(&c->s, "rf_accept: %s: %s", rf_status_string(rs),
                  rf_error_message());
        return -1;
    }
    return bench_session_post_recvs(&c->s);
}

static void *serve_thread(void *arg)
{
    serve_conn_ctx *c = arg;
    c->rc = serve_conn(&c->s, &c->st);
    return NULL;
}

/* The connections after the first of a -q run: the same client (token),
 * test and parameters, in index order. */
static int same_run(const bench_hello *first, const bench_hello *h,
                    uint32_t index)
{
    return h->token == first->token && h->qps == first->qps &&
           h->qp_index == index && h->test == first->test &&
           h->iters == first->iters && h->tx_depth == first->tx_depth &&
           h->max_size == first->max_size;
}

/* Serves one run: the first request, and with -q N the N - 1 further
 * connections of the same run, each served by its own thread. */
static int serve_one(const bench_opts *o, rf_fabric *fab, rf_listener *l,
                     rf_conn_req *req)
{
    char peer[128];
    snprintf(peer, sizeof peer, "%s", rf_conn_req_peer(req));
    size_t len = 0;
    const void *priv = rf_conn_req_private_data(req, &len);
    bench_hello h;
    const char *why = NULL;
    if (validate_hello(priv, len, &h, &why) ||
        (h.qp_index != 0 && (why = "not the first endpoint of a run"))) {
        fprintf(stderr, WHO ": rejecting a connection from %s: %s\n", peer,
                why);
        reject(req, BENCH_WELCOME_REFUSED, o->max_qps);
        return -1;
    }
    if (h.qps > o->max_qps) {
        fprintf(stderr,
                WHO ": rejecting %s from %s: it asks for %u endpoints (QPs), "
                    "more than --max-qps %u\n",
                bench_test_get((bench_test)h.test)->name, peer, (unsigned)h.qps,
                o->max_qps);
        reject(req, BENCH_WELCOME_TOO_MANY, o->max_qps);
        return -1;
    }
    const uint32_t nqp = h.qps;
    serve_conn_ctx *c = calloc(nqp, sizeof *c);
    if (!c) {
        fprintf(stderr, WHO ": out of memory\n");
        reject(req, BENCH_WELCOME_REFUSED, o->max_qps);
        return -1;
    }
    int failures = 0;
    uint32_t n = 0;
    if (accept_conn(o, fab, req, &h, &c[n++]))
        failures++;
    while (!failures && n < nqp) {
        rf_conn_req *more = NULL;
        /* bounded: a client must not hold the server with half a run */
        rf_status st = rf_listener_get_request(l, o->timeout_s * 1000, &more);
        if (st != RF_OK) {
            fprintf(stderr, WHO ": waiting for endpoint %u of %u: %s: %s\n",
                    n + 1, nqp, rf_status_string(st), rf_error_message());
            failures++;
            break;
        }
        bench_hello hn;
        priv = rf_conn_req_private_data(more, &len);
        if (validate_hello(priv, len, &hn, &why) || !same_run(&h, &hn, n)) {
            fprintf(stderr,
                    WHO ": rejecting a connection from %s: not endpoint %u "
                        "of the run being set up\n",
                    rf_conn_req_peer(more), n);
            reject(more, BENCH_WELCOME_REFUSED, o->max_qps);
            failures++;
            break;
        }
        if (accept_conn(o, fab, more, &hn, &c[n++]))
            failures++;
    }
    if (!failures && o->ready_fd < 0) {
        printf(" Accepted %s from %s: %u endpoint%s (QP%s)\n", c[0].st.t->name,
               peer, nqp, nqp > 1 ? "s" : "", nqp > 1 ? "s" : "");
        fflush(stdout);
    }
    if (!failures) {
        for (uint32_t i = 1; i < nqp; i++) {
            if (pthread_create(&c[i].thread, NULL, serve_thread, &c[i])) {
                fprintf(stderr, WHO ": cannot start a thread for endpoint %u\n",
                        i);
                failures++;
                break;
            }
            c[i].threaded = true;
        }
        if (!failures)
            serve_thread(&c[0]);
        else
            c[0].rc = -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (c[i].threaded)
            pthread_join(c[i].thread, NULL);
        if (c[i].rc)
            failures++;
        if (c[i].open)
            bench_session_fini(&c[i].s);
    }
    free(c);
    return failures ? -1 : 0;
}

static int announce(const bench_opts *o, rf_fabric *fab, uint16_t port)
{
    if (o->ready_fd >= 0) { /* loopback parent waits for "PORT\n" */
        char line[16];
        int n = snprintf(line, sizeof line, "%u\n", (unsigned)port);
        ssize_t w = write(o->ready_fd, line, (size_t)n);
        close(o->ready_fd);
        if (w != n) {
            fprintf(stderr, WHO ": --ready-fd %d: %s\n", o->ready_fd,
                    strerror(errno));
            return -1;
        }
        return 0;
    }
    printf(" Waiting for a client on %s port %u (provider %s)\n", o->host,
           (unsigned)port, rf_fabric_provider(fab));
    fflush(stdout);
    return 0;
}

int bench_server(const bench_opts *o)
{
    rf_fabric *fab = NULL;
    bool any = strcmp(o->host, "0.0.0.0") == 0 || strcmp(o->host, "::") == 0;
    rf_fabric_attr fattr = {.bind_addr = any ? NULL : o->host,
                            .progress = o->progress};
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
    rf_listener *l = NULL;
    st = rf_listen(fab, o->host, o->port, &l);
    if (st != RF_OK) {
        fprintf(stderr, WHO ": rf_listen(%s:%u): %s: %s\n", o->host,
                (unsigned)o->port, rf_status_string(st), rf_error_message());
        rf_fabric_close(fab);
        return 1;
    }
    int failures = 0;
    if (announce(o, fab, rf_listener_port(l)))
        failures++;
    /* A loopback child must not outlive a client that never connects. */
    int wait_ms = o->ready_fd >= 0 ? o->timeout_s * 1000 : -1;
    while (!failures || o->forever) {
        rf_conn_req *req = NULL;
        st = rf_listener_get_request(l, wait_ms, &req);
        if (st != RF_OK) {
            fprintf(stderr, WHO ": waiting for a client: %s: %s\n",
                    rf_status_string(st), rf_error_message());
            failures++;
            break;
        }
        if (serve_one(o, fab, l, req))
            failures++;
        if (!o->forever)
            break;
    }
    rf_listener_close(l);
    rf_fabric_close(fab);
    return failures ? 1 : 0;
}
