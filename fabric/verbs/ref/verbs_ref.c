/* fabric/verbs/ref/verbs_ref.c: rf-bench-verbs-ref, the raw-verbs baseline
 * of rdmaflow's per-operation cost (bench/verbs-opcount). In one process on
 * one device it connects two RC QPs to each other twice, once with raw
 * libibverbs + librdmacm and once through rdmaflow's verbs provider, and
 * runs the same 8-byte read, write, write_imm, fetch_add and cmp_swap on
 * each: one signaled work request per post (ibv_post_send / rf_post, as
 * rf-bench posts), then polling one completion (ibv_poll_cq / rf_cq_poll
 * with max 1, as rf-bench polls), no inline data.
 *
 * It is meant to run under `valgrind --tool=callgrind --collect-atstart=no`:
 * only the post and poll calls are collected (CALLGRIND_TOGGLE_COLLECT
 * around each call) and every phase ends with a dump named
 * "SIDE OP post|poll N=ITERS calls=C", so each dump's total is the
 * user-space instructions of ITERS posts or polls, rdma-core's and the
 * provider's included. Before a completion is polled the program sleeps
 * 1 ms outside the collection, so the poll phase counts polls that find a
 * completion (calls = ITERS when none was empty); a last phase per side,
 * "SIDE - empty_poll", polls an empty CQ. The raw phases run twice:
 * "raw" before rdmaflow's fabric (and its event thread) exists, as a
 * single-threaded verbs program, and "raw_mt" beside it. Without valgrind the
 * requests do nothing and the program checks that every operation did its work.
 *
 * It lives under fabric/verbs/ because only that folder may include
 * libibverbs' headers (tests/layers/check-layers); it is not part of the
 * library (bench/CMakeLists.txt builds it).
 *
 * Usage: rf-bench-verbs-ref [--host ADDR] [-n ITERS]
 *   --host ADDR  local address of the RDMA device (default 10.77.0.1, the
 *                rxe guest's)
 *   -n ITERS     operations per phase (default 200, 1 .. 1000000)
 * Exit: 0 all checks passed, 1 a step or a check failed, 2 usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <valgrind/callgrind.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/status.h"

#define BUF_SIZE 4096
#define WARMUP   16
#define QDEPTH   16

enum { OP_READ, OP_WRITE, OP_WRITE_IMM, OP_FETCH_ADD, OP_CMP_SWAP, NOPS };
static const char *const op_name[NOPS] = {"read", "write", "write_imm",
                                          "fetch_add", "cmp_swap"};
/* Offsets of each operation's local and remote 8 bytes. */
#define LOCAL_OFF(op)  ((size_t)(op)*128)
#define REMOTE_OFF(op) ((size_t)(op)*128 + 64)
#define READ_PATTERN   0x0123456789abcdefull

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failed;
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rf-bench-verbs-ref: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failed = 1;
}

/* Ends a phase: a dump of what was collected since the last one, and the
 * same line on stdout. */
static void end_phase(const char *side, const char *op, const char *what,
                      int iters, long calls)
{
    char name[128];
    snprintf(name, sizeof name, "%s %s %s N=%d calls=%ld", side, op, what,
             iters, calls);
    CALLGRIND_DUMP_STATS_AT(name);
    printf("phase %s\n", name);
}

/* --- raw libibverbs + librdmacm ------------------------------------------ */

typedef struct raw {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *lid, *cli, *srv;
    struct ibv_pd *pd;
    struct ibv_cq *ccq, *scq;
    struct ibv_mr *cmr, *smr;
    unsigned char *cbuf, *sbuf;
    int connected;
} raw;

/* Waits up to 10 s for the next rdma_cm event, which must be `want`. */
static int raw_event(raw *r, enum rdma_cm_event_type want,
                     struct rdma_cm_id **id)
{
    struct pollfd p = {.fd = r->ch->fd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1) {
        fail("raw: no rdma_cm event (wanted %s) in 10 s", rdma_event_str(want));
        return -1;
    }
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(r->ch, &ev)) {
        fail("raw: rdma_get_cm_event: %s", strerror(errno));
        return -1;
    }
    int ok = ev->event == want && ev->status == 0;
    if (!ok)
        fail("raw: rdma_cm event %s (status %d), wanted %s",
             rdma_event_str(ev->event), ev->status, rdma_event_str(want));
    if (id)
        *id = ev->id;
    rdma_ack_cm_event(ev);
    return ok ? 0 : -1;
}

static int raw_qp(raw *r, struct rdma_cm_id *id, struct ibv_cq *cq)
{
    struct ibv_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = QDEPTH,
                .max_recv_wr = QDEPTH,
                .max_send_sge = 1,
                .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 0,
    };
    if (rdma_create_qp(id, r->pd, &qa)) {
        fail("raw: rdma_create_qp: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int raw_post_recv(raw *r)
{
    struct ibv_recv_wr w = {.wr_id = 1, .num_sge = 0}, *bad;
    int rc = ibv_post_recv(r->srv->qp, &w, &bad);
    if (rc)
        fail("raw: ibv_post_recv: %s", strerror(rc));
    return rc ? -1 : 0;
}

static int raw_open(raw *r, const struct sockaddr *addr)
{
    struct rdma_conn_param cp = {.responder_resources = 1,
                                 .initiator_depth = 1,
                                 .retry_count = 6,
                                 .rnr_retry_count = 6};
    struct sockaddr_storage dst;
    r->ch = rdma_create_event_channel();
    if (!r->ch) {
        fail("raw: rdma_create_event_channel: %s", strerror(errno));
        return -1;
    }
    if (rdma_create_id(r->ch, &r->lid, NULL, RDMA_PS_TCP) ||
        rdma_bind_addr(r->lid, (struct sockaddr *)addr) ||
        rdma_listen(r->lid, 1) ||
        rdma_create_id(r->ch, &r->cli, NULL, RDMA_PS_TCP)) {
        fail("raw: listen: %s", strerror(errno));
        return -1;
    }
    memcpy(&dst, addr, sizeof(struct sockaddr_in));
    ((struct sockaddr_in *)&dst)->sin_port = rdma_get_src_port(r->lid);
    if (rdma_resolve_addr(r->cli, NULL, (struct sockaddr *)&dst, 5000)) {
        fail("raw: rdma_resolve_addr: %s", strerror(errno));
        return -1;
    }
    if (raw_event(r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL))
        return -1;
    if (rdma_resolve_route(r->cli, 5000)) {
        fail("raw: rdma_resolve_route: %s", strerror(errno));
        return -1;
    }
    if (raw_event(r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL))
        return -1;
    r->pd = ibv_alloc_pd(r->cli->verbs);
    r->ccq = ibv_create_cq(r->cli->verbs, 2 * QDEPTH, NULL, NULL, 0);
    r->scq = ibv_create_cq(r->cli->verbs, 2 * QDEPTH, NULL, NULL, 0);
    if (!r->pd || !r->ccq || !r->scq) {
        fail("raw: PD/CQ: %s", strerror(errno));
        return -1;
    }
    r->cmr = ibv_reg_mr(r->pd, r->cbuf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
    r->smr = ibv_reg_mr(r->pd, r->sbuf, BUF_SIZE,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    if (!r->cmr || !r->smr) {
        fail("raw: ibv_reg_mr: %s", strerror(errno));
        return -1;
    }
    if (raw_qp(r, r->cli, r->ccq))
        return -1;
    if (rdma_connect(r->cli, &cp)) {
        fail("raw: rdma_connect: %s", strerror(errno));
        return -1;
    }
    if (raw_event(r, RDMA_CM_EVENT_CONNECT_REQUEST, &r->srv))
        return -1;
    if (r->srv->verbs != r->cli->verbs) {
        fail("raw: the connection request came in on another device");
        return -1;
    }
    if (raw_qp(r, r->srv, r->scq))
        return -1;
    for (int i = 0; i < QDEPTH; i++)
        if (raw_post_recv(r))
            return -1;
    if (rdma_accept(r->srv, &cp)) {
        fail("raw: rdma_accept: %s", strerror(errno));
        return -1;
    }
    /* ESTABLISHED for both ids, in either order. */
    if (raw_event(r, RDMA_CM_EVENT_ESTABLISHED, NULL) ||
        raw_event(r, RDMA_CM_EVENT_ESTABLISHED, NULL))
        return -1;
    r->connected = 1;
    return 0;
}

static void raw_close(raw *r)
{
    if (r->connected) {
        /* Both ends disconnect (a DREQ each way, or the DREP to the
         * other's), so neither waits for the DREQ timeout. */
        rdma_disconnect(r->cli);
        rdma_disconnect(r->srv);
        raw_event(r, RDMA_CM_EVENT_DISCONNECTED, NULL);
        raw_event(r, RDMA_CM_EVENT_DISCONNECTED, NULL);
    }
    if (r->srv) {
        if (r->srv->qp)
            rdma_destroy_qp(r->srv);
        rdma_destroy_id(r->srv);
    }
    if (r->cli) {
        if (r->cli->qp)
            rdma_destroy_qp(r->cli);
        rdma_destroy_id(r->cli);
    }
    if (r->cmr)
        ibv_dereg_mr(r->cmr);
    if (r->smr)
        ibv_dereg_mr(r->smr);
    if (r->ccq)
        ibv_destroy_cq(r->ccq);
    if (r->scq)
        ibv_destroy_cq(r->scq);
    if (r->pd)
        ibv_dealloc_pd(r->pd);
    if (r->lid)
        rdma_destroy_id(r->lid);
    if (r->ch)
        rdma_destroy_event_channel(r->ch);
}

static struct ibv_send_wr raw_wr(raw *r, int op, struct ibv_sge *g)
{
    *g = (struct ibv_sge){.addr = (uintptr_t)(r->cbuf + LOCAL_OFF(op)),
                          .length = 8,
                          .lkey = r->cmr->lkey};
    struct ibv_send_wr w = {
        .sg_list = g, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED};
    uint64_t remote = (uintptr_t)(r->sbuf + REMOTE_OFF(op));
    switch (op) {
    case OP_READ:
        w.opcode = IBV_WR_RDMA_READ;
        break;
    case OP_WRITE:
        w.opcode = IBV_WR_RDMA_WRITE;
        break;
    case OP_WRITE_IMM:
        w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        break;
    case OP_FETCH_ADD:
        w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        w.wr.atomic.compare_add = 1;
        break;
    default:
        w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        break;
    }
    if (op == OP_FETCH_ADD || op == OP_CMP_SWAP) {
        w.wr.atomic.remote_addr = remote;
        w.wr.atomic.rkey = r->smr->rkey;
    } else {
        w.wr.rdma.remote_addr = remote;
        w.wr.rdma.rkey = r->smr->rkey;
    }
    return w;
}

/* The target side of a write_imm: its receive completion, reposted. */
static int raw_target(raw *r, int op)
{
    if (op != OP_WRITE_IMM)
        return 0;
    struct ibv_wc wc;
    int64_t deadline = rf_deadline_ms(10000);
    int n;
    while ((n = ibv_poll_cq(r->scq, 1, &wc)) == 0)
        if (rf_deadline_left_ms(deadline) == 0)
            break;
    if (n != 1 || wc.status != IBV_WC_SUCCESS ||
        wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
        fail("raw: write_imm receive: %s",
             n == 1 ? ibv_wc_status_str(wc.status) : "no completion in 10 s");
        return -1;
    }
    return raw_post_recv(r);
}

/* count: 0 nothing, 1 the posts, 2 the polls. */
static long raw_loop(raw *r, int op, int iters, int count, uint64_t *seq)
{
    struct ibv_sge g;
    struct ibv_send_wr w = raw_wr(r, op, &g), *bad;
    long polls = 0;
    for (int i = 0; i < iters; i++, (*seq)++) {
        w.wr_id = *seq;
        w.imm_data = htonl((uint32_t)*seq);
        if (op == OP_CMP_SWAP) {
            w.wr.atomic.compare_add = *seq;
            w.wr.atomic.swap = *seq + 1;
        }
        int rc;
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        rc = ibv_post_send(r->cli->qp, &w, &bad);
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        if (rc) {
            fail("raw: ibv_post_send(%s): %s", op_name[op], strerror(rc));
            return -1;
        }
        rf_sleep_ms(1);
        struct ibv_wc wc;
        int n;
        int64_t deadline = rf_deadline_ms(10000);
        do {
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            n = ibv_poll_cq(r->ccq, 1, &wc);
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            polls++;
        } while (n == 0 && rf_deadline_left_ms(deadline) != 0);
        if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != *seq) {
            fail("raw: %s %llu: %s", op_name[op], (unsigned long long)*seq,
                 n == 1 ? ibv_wc_status_str(wc.status) : "no completion");
            return -1;
        }
        if (raw_target(r, op))
            return -1;
    }
    return polls;
}

static long raw_empty(raw *r, int iters)
{
    struct ibv_wc wc;
    long found = 0;
    for (int i = 0; i < iters; i++) {
        CALLGRIND_TOGGLE_COLLECT;
        int n = ibv_poll_cq(r->ccq, 1, &wc);
        CALLGRIND_TOGGLE_COLLECT;
        found += n;
    }
    return found;
}

/* --- rdmaflow's verbs provider ------------------------------------------- */

typedef struct rfs {
    rf_fabric *fab;
    rf_cq *ccq, *scq;
    rf_mr *cmr, *smr;
    rf_listener *l;
    rf_ep *cli, *srv;
    unsigned char *cbuf, *sbuf;
    rf_status accept_st;
    char accept_msg[256];
} rfs;

static void *rfs_accept(void *arg)
{
    rfs *s = arg;
    rf_conn_req *req;
    rf_ep_attr a = {.send_cq = s->scq};
    s->accept_st = rf_listener_get_request(s->l, 10000, &req);
    if (s->accept_st == RF_OK)
        s->accept_st = rf_accept(req, &a, NULL, 0, &s->srv);
    if (s->accept_st != RF_OK)
        snprintf(s->accept_msg, sizeof s->accept_msg, "%s", rf_error_message());
    return NULL;
}

static int rfs_check(rf_status st, const char *what)
{
    if (st != RF_OK)
        fail("rdmaflow: %s: %s: %s", what, rf_status_string(st),
             rf_error_message());
    return st == RF_OK ? 0 : -1;
}

static int rfs_open(rfs *s, const char *host)
{
    rf_fabric_attr fa = {.bind_addr = host};
    if (rfs_check(rf_fabric_open("verbs", &fa, &s->fab), "rf_fabric_open") ||
        rfs_check(rf_cq_create(s->fab, 2 * QDEPTH, &s->ccq), "rf_cq_create") ||
        rfs_check(rf_cq_create(s->fab, 2 * QDEPTH, &s->scq), "rf_cq_create") ||
        rfs_check(rf_mr_reg(s->fab, s->cbuf, BUF_SIZE, RF_ACCESS_LOCAL_WRITE,
                            &s->cmr),
                  "rf_mr_reg") ||
        rfs_check(rf_mr_reg(s->fab, s->sbuf, BUF_SIZE, RF_ACCESS_ALL, &s->smr),
                  "rf_mr_reg") ||
        rfs_check(rf_listen(s->fab, host, 0, &s->l), "rf_listen"))
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, rfs_accept, s)) {
        fail("pthread_create failed");
        return -1;
    }
    rf_ep_attr a = {.send_cq = s->ccq, .max_send_wr = QDEPTH};
    rf_status st = rf_connect(s->fab, host, rf_listener_port(s->l), &a, NULL, 0,
                              10000, &s->cli);
    pthread_join(t, NULL);
    if (rfs_check(st, "rf_connect"))
        return -1;
    if (s->accept_st != RF_OK) {
        fail("rdmaflow: rf_accept: %s: %s", rf_status_string(s->accept_st),
             s->accept_msg);
        return -1;
    }
    for (int i = 0; i < QDEPTH; i++)
        if (rfs_check(rf_post_recv(s->srv, NULL, 0, NULL, NULL),
                      "rf_post_recv"))
            return -1;
    return 0;
}

static void rfs_close(rfs *s)
{
    if (s->cli)
        rf_ep_close(s->cli);
    if (s->srv)
        rf_ep_close(s->srv);
    if (s->l)
        rf_listener_close(s->l);
    if (s->cmr)
        rf_mr_dereg(s->cmr);
    if (s->smr)
        rf_mr_dereg(s->smr);
    if (s->ccq)
        rf_cq_destroy(s->ccq);
    if (s->scq)
        rf_cq_destroy(s->scq);
    if (s->fab)
        rf_fabric_close(s->fab);
}

static rf_wr rfs_wr(rfs *s, int op)
{
    static const rf_op ops[NOPS] = {RF_OP_READ, RF_OP_WRITE, RF_OP_WRITE_IMM,
                                    RF_OP_FETCH_ADD, RF_OP_CMP_SWAP};
    rf_mr_desc d;
    rf_mr_describe(s->smr, &d);
    rf_wr w = {.op = ops[op],
               .local = s->cbuf + LOCAL_OFF(op),
               .len = 8,
               .local_mr = s->cmr,
               .remote_addr = (uintptr_t)(s->sbuf + REMOTE_OFF(op)),
               .rkey = d.rkey};
    if (op == OP_FETCH_ADD)
        w.compare_add = 1;
    return w;
}

static int rfs_target(rfs *s, int op)
{
    if (op != OP_WRITE_IMM)
        return 0;
    rf_completion c;
    int n = rf_cq_wait(s->scq, &c, 1, 10000);
    if (n != 1 || c.status != RF_OK || c.op != RF_OP_RECV_WRITE_IMM) {
        fail("rdmaflow: write_imm receive: %s",
             n == 1 ? rf_status_string(c.status) : rf_error_message());
        return -1;
    }
    return rfs_check(rf_post_recv(s->srv, NULL, 0, NULL, NULL), "rf_post_recv");
}

static long rfs_loop(rfs *s, int op, int iters, int count, uint64_t *seq)
{
    rf_wr w = rfs_wr(s, op);
    long polls = 0;
    for (int i = 0; i < iters; i++, (*seq)++) {
        w.context = (void *)(uintptr_t)*seq;
        w.imm = (uint32_t)*seq;
        if (op == OP_CMP_SWAP) {
            w.compare_add = *seq;
            w.swap = *seq + 1;
        }
        rf_status st;
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        st = rf_post(s->cli, &w, 1, NULL);
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        if (rfs_check(st, "rf_post"))
            return -1;
        rf_sleep_ms(1);
        rf_completion c;
        int n;
        int64_t deadline = rf_deadline_ms(10000);
        do {
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            n = rf_cq_poll(s->ccq, &c, 1);
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            polls++;
        } while (n == 0 && rf_deadline_left_ms(deadline) != 0);
        if (n != 1 || c.status != RF_OK || c.context != w.context) {
            fail("rdmaflow: %s %llu: %s", op_name[op], (unsigned long long)*seq,
                 n == 1 ? rf_status_string(c.status) : "no completion");
            return -1;
        }
        if (rfs_target(s, op))
            return -1;
    }
    return polls;
}

static long rfs_empty(rfs *s, int iters)
{
    rf_completion c;
    long found = 0;
    for (int i = 0; i < iters; i++) {
        CALLGRIND_TOGGLE_COLLECT;
        int n = rf_cq_poll(s->ccq, &c, 1);
        CALLGRIND_TOGGLE_COLLECT;
        found += n;
    }
    return found;
}

/* --- the checks and the phases ------------------------------------------- */

/* What the operations must have left in memory: the read pattern, the
 * written bytes, and a cmp_swap word that counted every cmp_swap. */
static void check_memory(const char *side, const unsigned char *cbuf,
                         const unsigned char *sbuf, uint64_t seq_end)
{
    uint64_t v;
    memcpy(&v, cbuf + LOCAL_OFF(OP_READ), 8);
    if (v != READ_PATTERN)
        fail("%s: read returned %#llx, expected %#llx", side,
             (unsigned long long)v, (unsigned long long)READ_PATTERN);
    memcpy(&v, sbuf + REMOTE_OFF(OP_WRITE), 8);
    if (v != 0x5757575757575757ull)
        fail("%s: write did not reach the target", side);
    memcpy(&v, sbuf + REMOTE_OFF(OP_CMP_SWAP), 8);
    if (v != seq_end)
        fail("%s: cmp_swap word %llu, expected %llu", side,
             (unsigned long long)v, (unsigned long long)seq_end);
}

static void reset_buffers(unsigned char *cbuf, unsigned char *sbuf)
{
    uint64_t pattern = READ_PATTERN;
    memset(cbuf, 0, BUF_SIZE);
    memset(sbuf, 0, BUF_SIZE);
    memcpy(sbuf + REMOTE_OFF(OP_READ), &pattern, 8);
    memset(cbuf + LOCAL_OFF(OP_WRITE), 0x57, 8);
    memset(cbuf + LOCAL_OFF(OP_WRITE_IMM), 0x57, 8);
}

typedef long (*loop_fn)(void *side, int op, int iters, int count,
                        uint64_t *seq);

static long raw_loop_v(void *r, int op, int iters, int count, uint64_t *seq)
{
    return raw_loop(r, op, iters, count, seq);
}
static long rfs_loop_v(void *s, int op, int iters, int count, uint64_t *seq)
{
    return rfs_loop(s, op, iters, count, seq);
}

/* Warm-up, posts counted, polls counted, for every operation; cmp_swap
 * compares with its own sequence number, so seq must start at the
 * target word's value (0). */
static int run_side(const char *name, void *side, loop_fn loop, int iters,
                    unsigned char *cbuf, unsigned char *sbuf)
{
    reset_buffers(cbuf, sbuf);
    uint64_t seq_op[NOPS] = {0};
    for (int op = 0; op < NOPS; op++) {
        uint64_t *seq = &seq_op[op];
        if (loop(side, op, WARMUP, 0, seq) < 0)
            return -1;
        CALLGRIND_ZERO_STATS;
        long polls = loop(side, op, iters, 1, seq);
        if (polls < 0)
            return -1;
        end_phase(name, op_name[op], "post", iters, iters);
        polls = loop(side, op, iters, 2, seq);
        if (polls < 0)
            return -1;
        end_phase(name, op_name[op], "poll", iters, polls);
    }
    uint64_t fa;
    memcpy(&fa, cbuf + LOCAL_OFF(OP_FETCH_ADD), 8);
    /* the last fetch_add returned the count before it */
    if (fa != seq_op[OP_FETCH_ADD] - 1)
        fail("%s: fetch_add returned %llu, expected %llu", name,
             (unsigned long long)fa,
             (unsigned long long)(seq_op[OP_FETCH_ADD] - 1));
    check_memory(name, cbuf, sbuf, seq_op[OP_CMP_SWAP]);
    return failed ? -1 : 0;
}

static int usage_error(const char *what)
{
    fprintf(stderr,
            "rf-bench-verbs-ref: %s\n"
            "usage: rf-bench-verbs-ref [--host ADDR] [-n ITERS]\n",
            what);
    return 2;
}

int main(int argc, char **argv)
{
    const char *host = "10.77.0.1";
    int iters = 200;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host") && i + 1 < argc) {
            host = argv[++i];
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            int64_t v;
            if (rf_parse_int(argv[++i], 1, 1000000, "-n", &v) != RF_OK)
                return usage_error(rf_error_message());
            iters = (int)v;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: rf-bench-verbs-ref [--host ADDR] [-n ITERS]\n");
            return 0;
        } else {
            fprintf(stderr,
                    "rf-bench-verbs-ref: unknown or incomplete "
                    "argument '%s'\n",
                    argv[i]);
            return usage_error("see --help");
        }
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST},
                    *ai;
    if (getaddrinfo(host, NULL, &hints, &ai))
        return usage_error("--host: not a numeric IPv4 address");

    unsigned char *bufs = aligned_alloc(4096, 4 * BUF_SIZE);
    if (!bufs) {
        freeaddrinfo(ai);
        fail("out of memory");
        return 1;
    }
    raw r = {.cbuf = bufs, .sbuf = bufs + BUF_SIZE};
    rfs s = {.cbuf = bufs + 2 * BUF_SIZE, .sbuf = bufs + 3 * BUF_SIZE};
    long found = 0;
    if (raw_open(&r, ai->ai_addr) == 0 &&
        run_side("raw", &r, raw_loop_v, iters, r.cbuf, r.sbuf) == 0) {
        CALLGRIND_ZERO_STATS;
        found = raw_empty(&r, iters);
        end_phase("raw", "-", "empty_poll", iters, iters);
    }
    /* rdmaflow's fabric has an event thread, and libc's write() (rxe's
     * doorbell) costs more in a process with threads (cancellation
     * bookkeeping): "raw_mt" repeats the raw phases with the fabric open,
     * so that raw_mt and rdmaflow differ only in the post and poll
     * paths. */
    if (!failed && rfs_open(&s, host) == 0 &&
        run_side("raw_mt", &r, raw_loop_v, iters, r.cbuf, r.sbuf) == 0) {
        CALLGRIND_ZERO_STATS;
        found += raw_empty(&r, iters);
        end_phase("raw_mt", "-", "empty_poll", iters, iters);
    }
    raw_close(&r);
    if (!failed &&
        run_side("rdmaflow", &s, rfs_loop_v, iters, s.cbuf, s.sbuf) == 0) {
        CALLGRIND_ZERO_STATS;
        found += rfs_empty(&s, iters);
        end_phase("rdmaflow", "-", "empty_poll", iters, iters);
    }
    rfs_close(&s);
    if (found)
        fail("%ld completions found by polls of an empty CQ", found);
    free(bufs);
    freeaddrinfo(ai);
    if (!failed)
        printf("rf-bench-verbs-ref: all operations checked\n");
    return failed ? 1 : 0;
}
