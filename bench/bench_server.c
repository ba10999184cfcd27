/* bench/bench_server.c: the server side of rf-bench (see bench_server.h).
 * Per message size: RUN prepares the buffers (pattern to be read, cleared
 * target, atomic word), READY answers, the server then takes part in the
 * ping-pong tests or keeps receiving write_imms, and DONE is answered with
 * RESULT, the outcome of checking its memory. */
#include "bench_server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
        /* RUN's value is the client's inline threshold: mirror it. */
        if (st->t->pingpong &&
            bench_run_pingpong(s, st->t, st->size, st->iters,
                               (uint32_t)m->value, false, NULL))
            return -1;
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
        if (rc)
            return rc > 0 ? 0 : -1;
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
        h->tx_depth > BENCH_MAX_TX_DEPTH) {
        *why = "parameters out of range";
        return -1;
    }
    return 0;
}

static int serve_one(const bench_opts *o, rf_fabric *fab, rf_conn_req *req)
{
    size_t len = 0;
    const void *priv = rf_conn_req_private_data(req, &len);
    serve_state st = {0};
    const char *why = NULL;
    if (validate_hello(priv, len, &st.hello, &why)) {
        fprintf(stderr, WHO ": rejecting a connection: %s\n", why);
        unsigned char w[BENCH_WELCOME_SIZE];
        bench_welcome_pack(&(bench_welcome){.status = 1}, w);
        rf_reject(req, w, sizeof w);
        return -1;
    }
    st.t = bench_test_get((bench_test)st.hello.test);

    bench_session s;
    if (bench_session_init(&s, WHO, fab, st.hello.max_size, st.hello.tx_depth,
                           o->events, o->spin_us, o->timeout_s)) {
        rf_reject(req, NULL, 0);
        return -1;
    }
    s.peer = st.hello.region;
    bench_welcome w = {.status = 0};
    rf_mr_describe(s.mr, &w.region);
    unsigned char wbuf[BENCH_WELCOME_SIZE];
    bench_welcome_pack(&w, wbuf);
    rf_ep_attr attr = bench_session_ep_attr(&s);
    rf_status rs = rf_accept(req, &attr, wbuf, sizeof wbuf, &s.ep);
    if (rs != RF_OK) {
        bench_err(&s, "rf_accept: %s: %s", rf_status_string(rs),
                  rf_error_message());
        bench_session_fini(&s);
        return -1;
    }
    int rc = bench_session_post_recvs(&s);
    if (rc == 0)
        rc = serve_conn(&s, &st);
    bench_session_fini(&s);
    return rc;
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
    rf_fabric_attr fattr = {.bind_addr = any ? NULL : o->host};
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
        if (serve_one(o, fab, req))
            failures++;
        if (!o->forever)
            break;
    }
    rf_listener_close(l);
    rf_fabric_close(fab);
    return failures ? 1 : 0;
}
