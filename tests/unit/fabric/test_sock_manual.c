/* tests/unit/fabric/test_sock_manual.c: the sock provider's manual data
 * progress (rf_fabric_attr.progress = RF_PROGRESS_MANUAL, RF_SOCK_PROGRESS),
 * on two sock fabrics in one process connected over loopback TCP:
 *  - ops: read, write (8 B and 1 MiB), fetch_add, cmp_swap, send and
 *    write_imm complete while the target's thread polls or waits on its
 *    queue, and neither progress thread ever gets input readiness for an
 *    endpoint socket (n_thread_in stays 0); with automatic progress and no
 *    target poller the target's thread does (the counter works);
 *  - stall: a target that does not poll does not serve a write (nobody
 *    else reads its socket, so this holds whatever the timing), then
 *    serves it inside its first polls;
 *  - many: 6 endpoints (more than SOCK_CQ_DIRECT_MAX) on one queue each
 *    side, all served by the pollers;
 *  - close: rf_ep_close completes outstanding work with
 *    RF_ERR_DISCONNECTED, and a waiter sees the peer's close as
 *    RF_ERR_DISCONNECTED;
 *  - late: replies left unread while the initiator does not poll for longer
 *    than the no-progress watchdog's limit are not taken for a frozen
 *    peer (the watchdog reads them first);
 *  - env: RF_SOCK_PROGRESS overrides the attr, a bad value (or a bad attr)
 *    is RF_ERR_INVALID_ARG naming it; shm accepts manual; rf_fabric_progress
 *    reports what the provider does (shm: auto; auto: its sock fabric's).
 * Deadlines only guard against hangs; nothing is timed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/sock/sock.h"
#include "rdmaflow/clock.h"
#include "tests/common/check.h"

#define HANG_MS  10000
#define MEM      (2u << 20)
#define BIG      (1u << 20)
#define MAX_EPS  6
#define N_ROUNDS 50

typedef struct side {
    rf_fabric *f;
    rf_cq *cq;
    unsigned char *mem;
    rf_mr *mr;
} side;

typedef struct net {
    side a, b; /* initiator, target */
    rf_listener *l;
    rf_ep *ea[MAX_EPS], *eb[MAX_EPS];
    int neps;
    /* the target's poller thread */
    pthread_t poller;
    atomic_int stop;
    atomic_int recvs; /* receive completions it saw (all RF_OK) */
    atomic_int bad;   /* completions with an error status */
    int waits;        /* 1: rf_cq_wait, else rf_cq_poll */
} net;

static void side_open(side *s, rf_progress progress)
{
    rf_fabric_attr attr = {.bind_addr = "127.0.0.1", .progress = progress};
    CHECK_OK(rf_fabric_open("sock", &attr, &s->f));
    CHECK_OK(rf_cq_create(s->f, 256, &s->cq));
    s->mem = calloc(1, MEM);
    CHECK_TRUE(s->mem != NULL);
    CHECK_OK(rf_mr_reg(s->f, s->mem, MEM, RF_ACCESS_ALL, &s->mr));
}

static void side_close(side *s)
{
    rf_mr_dereg(s->mr);
    rf_cq_destroy(s->cq);
    rf_fabric_close(s->f);
    free(s->mem);
}

typedef struct acceptor {
    net *n;
    int count;
} acceptor;

static void *accept_main(void *arg)
{
    acceptor *ac = arg;
    for (int i = 0; i < ac->count; i++) {
        rf_conn_req *req;
        CHECK_OK(rf_listener_get_request(ac->n->l, HANG_MS, &req));
        rf_ep_attr attr = {.send_cq = ac->n->b.cq, .max_recv_wr = 16};
        CHECK_OK(rf_accept(req, &attr, NULL, 0, &ac->n->eb[i]));
    }
    return NULL;
}

static void net_open(net *n, rf_progress progress, int neps)
{
    memset(n, 0, sizeof *n);
    side_open(&n->a, progress);
    side_open(&n->b, progress);
    CHECK_OK(rf_listen(n->b.f, "127.0.0.1", 0, &n->l));
    n->neps = neps;
    acceptor ac = {n, neps};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, accept_main, &ac) == 0, "pthread_create");
    for (int i = 0; i < neps; i++) {
        rf_ep_attr attr = {.send_cq = n->a.cq};
        CHECK_OK(rf_connect(n->a.f, "127.0.0.1", rf_listener_port(n->l), &attr,
                            NULL, 0, HANG_MS, &n->ea[i]));
    }
    pthread_join(t, NULL);
}

static void net_close(net *n)
{
    for (int i = 0; i < n->neps; i++) {
        if (n->ea[i])
            rf_ep_close(n->ea[i]);
        if (n->eb[i])
            rf_ep_close(n->eb[i]);
    }
    rf_listener_close(n->l);
    side_close(&n->a);
    side_close(&n->b);
}

/* The target's application thread: polls (or waits on) its queue, which
 * is what serves the initiator's operations with manual progress. */
static void *poller_main(void *arg)
{
    net *n = arg;
    while (!atomic_load(&n->stop)) {
        rf_completion c[8];
        int k =
            n->waits ? rf_cq_wait(n->b.cq, c, 8, 5) : rf_cq_poll(n->b.cq, c, 8);
        for (int i = 0; i < k; i++) {
            if (c[i].status != RF_OK)
                atomic_fetch_add(&n->bad, 1);
            else if (c[i].op == RF_OP_RECV || c[i].op == RF_OP_RECV_WRITE_IMM)
                atomic_fetch_add(&n->recvs, 1);
        }
    }
    return NULL;
}

static void poller_start(net *n, int waits)
{
    n->waits = waits;
    atomic_store(&n->stop, 0);
    CHECK(pthread_create(&n->poller, NULL, poller_main, n) == 0,
          "pthread_create");
}

static void poller_stop(net *n)
{
    atomic_store(&n->stop, 1);
    pthread_join(n->poller, NULL);
}

/* One completion on the initiator's queue: polled in a loop, or waited
 * for (rf_cq_wait blocks in poll() on the sockets with manual progress). */
static rf_completion one(net *n, int wait)
{
    rf_completion c;
    int k = 0;
    if (wait) {
        k = rf_cq_wait(n->a.cq, &c, 1, HANG_MS);
    } else {
        int64_t deadline = rf_deadline_ms(HANG_MS);
        while (k == 0 && !rf_deadline_passed(deadline))
            k = rf_cq_poll(n->a.cq, &c, 1);
    }
    CHECK(k == 1, "initiator: no completion (%d: %s)", k, rf_error_message());
    return c;
}

static void done_ok(net *n, int wait, rf_op op)
{
    rf_completion c = one(n, wait);
    CHECK(c.status == RF_OK, "%s: %s", rf_wr_op_name(op),
          rf_status_string(c.status));
    CHECK(c.op == op, "completion of %s, expected %s", rf_wr_op_name(c.op),
          rf_wr_op_name(op));
}

static uint64_t raddr(const rf_mr *mr)
{
    rf_mr_desc d;
    rf_mr_describe(mr, &d);
    return d.addr;
}

static uint32_t rkey_of(const rf_mr *mr)
{
    rf_mr_desc d;
    rf_mr_describe(mr, &d);
    return d.rkey;
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void wr64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Every operation kind once per round on endpoint i. */
static void round_ops(net *n, int i, uint64_t r, int wait)
{
    rf_ep *ep = n->ea[i];
    uint64_t base = raddr(n->b.mr);
    uint32_t rkey = rkey_of(n->b.mr);
    size_t slot = (size_t)i * 64;
    unsigned char *la = n->a.mem + slot, *tb = n->b.mem + slot;

    /* write 8 B */
    wr64(la, 0x1000 + r);
    CHECK_OK(rf_write(ep, la, 8, n->a.mr, base + slot, rkey, NULL));
    done_ok(n, wait, RF_OP_WRITE);
    CHECK_EQ_U64(rd64(tb), 0x1000 + r);
    /* read 8 B */
    wr64(tb + 8, 0x2000 + r);
    CHECK_OK(rf_read(ep, la + 8, 8, n->a.mr, base + slot + 8, rkey, NULL));
    done_ok(n, wait, RF_OP_READ);
    CHECK_EQ_U64(rd64(la + 8), 0x2000 + r);
    /* fetch_add and cmp_swap on one word */
    wr64(tb + 16, 100);
    uint64_t *res = (uint64_t *)(void *)(la + 24);
    CHECK_OK(rf_fetch_add(ep, res, n->a.mr, base + slot + 16, rkey, 5, NULL));
    done_ok(n, wait, RF_OP_FETCH_ADD);
    CHECK_EQ_U64(*res, 100);
    CHECK_OK(rf_cmp_swap(ep, res, n->a.mr, base + slot + 16, rkey, 105, 7 + r,
                         NULL));
    done_ok(n, wait, RF_OP_CMP_SWAP);
    CHECK_EQ_U64(*res, 105);
    CHECK_EQ_U64(rd64(tb + 16), 7 + r);
}

/* Large transfers (payload read straight into place, the send side's
 * queue filling the socket) and the two-sided operations, on endpoint 0. */
static void big_and_two_sided(net *n, int wait)
{
    rf_ep *ep = n->ea[0];
    uint64_t base = raddr(n->b.mr);
    uint32_t rkey = rkey_of(n->b.mr);
    size_t off = BIG; /* second half of both regions */
    for (size_t k = 0; k < BIG; k++)
        n->a.mem[off + k] = (unsigned char)(k * 7 + 1);
    CHECK_OK(
        rf_write(ep, n->a.mem + off, BIG, n->a.mr, base + off, rkey, NULL));
    done_ok(n, wait, RF_OP_WRITE);
    CHECK(memcmp(n->a.mem + off, n->b.mem + off, BIG) == 0,
          "1 MiB write: target memory differs");
    memset(n->a.mem + off, 0, BIG);
    CHECK_OK(rf_read(ep, n->a.mem + off, BIG, n->a.mr, base + off, rkey, NULL));
    done_ok(n, wait, RF_OP_READ);
    CHECK(memcmp(n->a.mem + off, n->b.mem + off, BIG) == 0,
          "1 MiB read: local memory differs");

    int before = atomic_load(&n->recvs);
    CHECK_OK(rf_post_recv(n->eb[0], n->b.mem + 512, 64, n->b.mr, NULL));
    CHECK_OK(rf_post_recv(n->eb[0], n->b.mem + 576, 64, n->b.mr, NULL));
    memcpy(n->a.mem + 512, "manual progress", 16);
    CHECK_OK(rf_send(ep, n->a.mem + 512, 16, n->a.mr, NULL));
    done_ok(n, wait, RF_OP_SEND);
    CHECK_OK(rf_write_imm(ep, n->a.mem + 512, 8, n->a.mr, base + 640, rkey, 42,
                          NULL));
    done_ok(n, wait, RF_OP_WRITE_IMM);
    int64_t deadline = rf_deadline_ms(HANG_MS);
    while (atomic_load(&n->recvs) < before + 2 && !rf_deadline_passed(deadline))
        rf_sleep_ms(1);
    CHECK(atomic_load(&n->recvs) == before + 2, "receives completed: %d of 2",
          atomic_load(&n->recvs) - before);
    CHECK(memcmp(n->b.mem + 512, "manual progress", 16) == 0,
          "send payload not in the receive buffer");
    CHECK(memcmp(n->b.mem + 640, "manual p", 8) == 0,
          "write_imm payload not at the target");
}

static uint64_t thread_in(const side *s)
{
    return atomic_load(&SOCK_FAB(s->f)->n_thread_in);
}

static void ops(void)
{
    net n;
    net_open(&n, RF_PROGRESS_MANUAL, 1);
    CHECK_TRUE(SOCK_FAB(n.a.f)->manual && SOCK_FAB(n.b.f)->manual);
    for (int waits = 0; waits < 2; waits++) {
        poller_start(&n, waits);
        for (uint64_t r = 0; r < N_ROUNDS; r++)
            round_ops(&n, 0, r, (int)(r & 1));
        big_and_two_sided(&n, 0);
        big_and_two_sided(&n, 1);
        poller_stop(&n);
    }
    CHECK(atomic_load(&n.bad) == 0, "%d error completions at the target",
          atomic_load(&n.bad));
    CHECK_OK(rf_ep_state(n.ea[0]));
    CHECK(thread_in(&n.a) == 0 && thread_in(&n.b) == 0,
          "manual: progress threads got input readiness %llu / %llu times",
          (unsigned long long)thread_in(&n.a),
          (unsigned long long)thread_in(&n.b));
    net_close(&n);

    /* Control: automatic progress, nobody polls the target. */
    net_open(&n, RF_PROGRESS_AUTO, 1);
    CHECK_TRUE(!SOCK_FAB(n.b.f)->manual);
    for (uint64_t r = 0; r < 5; r++)
        round_ops(&n, 0, r, 1);
    CHECK(thread_in(&n.b) > 0, "auto: the target's thread read nothing");
    net_close(&n);
}

static void stall(void)
{
    net n;
    net_open(&n, RF_PROGRESS_MANUAL, 1);
    uint64_t base = raddr(n.b.mr);
    wr64(n.a.mem, 0xfeed);
    CHECK_OK(
        rf_write(n.ea[0], n.a.mem, 8, n.a.mr, base, rkey_of(n.b.mr), NULL));
    rf_completion c;
    int k = rf_cq_wait(n.a.cq, &c, 1, 300);
    CHECK(k == RF_ERR_TIMEOUT, "the write completed (%d) with an idle target",
          k);
    CHECK(rd64(n.b.mem) == 0, "an idle target was written");
    /* The target polls: the write is served, the reply reaches us. */
    k = 0;
    int64_t deadline = rf_deadline_ms(HANG_MS);
    while (k == 0 && !rf_deadline_passed(deadline)) {
        CHECK(rf_cq_poll(n.b.cq, &c, 1) == 0, "a target completion");
        k = rf_cq_poll(n.a.cq, &c, 1);
    }
    CHECK(k == 1 && c.status == RF_OK,
          "no write completion after the "
          "target polled (%d)",
          k);
    CHECK_EQ_U64(rd64(n.b.mem), 0xfeed);
    net_close(&n);
}

static void many(void)
{
    net n;
    net_open(&n, RF_PROGRESS_MANUAL, MAX_EPS);
    CHECK_TRUE(MAX_EPS > SOCK_CQ_DIRECT_MAX);
    poller_start(&n, 1);
    for (uint64_t r = 0; r < 5; r++)
        for (int i = 0; i < MAX_EPS; i++)
            round_ops(&n, i, r, (int)((r + (uint64_t)i) & 1));
    poller_stop(&n);
    CHECK(thread_in(&n.a) == 0 && thread_in(&n.b) == 0,
          "progress threads got input readiness");
    net_close(&n);
}

static void closing(void)
{
    net n;
    net_open(&n, RF_PROGRESS_MANUAL, 2);
    uint64_t base = raddr(n.b.mr);
    uint32_t rkey = rkey_of(n.b.mr);
    /* idle target: the write stays outstanding until the close */
    CHECK_OK(rf_write(n.ea[0], n.a.mem, 8, n.a.mr, base, rkey, NULL));
    rf_ep_close(n.ea[0]);
    n.ea[0] = NULL;
    rf_completion c = one(&n, 0);
    CHECK(c.status == RF_ERR_DISCONNECTED, "closed: %s",
          rf_status_string(c.status));
    /* the peer closes while we wait for a read it never serves */
    CHECK_OK(rf_read(n.ea[1], n.a.mem, 8, n.a.mr, base, rkey, NULL));
    rf_ep_close(n.eb[1]);
    n.eb[1] = NULL;
    c = one(&n, 1);
    CHECK(c.status == RF_ERR_DISCONNECTED, "peer closed: %s",
          rf_status_string(c.status));
    CHECK_ST(rf_ep_state(n.ea[1]), RF_ERR_DISCONNECTED);
    net_close(&n);
}

static void late(void)
{
    /* watchdog limit 100 + 0 ms; it scans once a second */
    setenv("RF_PEER_TIMEOUT_MS", "100", 1);
    setenv("RF_RNR_TIMEOUT_MS", "0", 1);
    net n;
    net_open(&n, RF_PROGRESS_MANUAL, 1);
    unsetenv("RF_PEER_TIMEOUT_MS");
    unsetenv("RF_RNR_TIMEOUT_MS");
    poller_start(&n, 1);
    wr64(n.a.mem, 0xbeef);
    CHECK_OK(rf_write(n.ea[0], n.a.mem, 8, n.a.mr, raddr(n.b.mr),
                      rkey_of(n.b.mr), NULL));
    rf_sleep_ms(2500); /* two watchdog scans, the reply unread meanwhile */
    rf_completion c = one(&n, 0);
    CHECK(c.status == RF_OK, "write after a late poll: %s",
          rf_status_string(c.status));
    poller_stop(&n);
    CHECK_OK(rf_ep_state(n.ea[0]));
    net_close(&n);
}

static rf_status open_with(const char *env, rf_progress progress, rf_fabric **f)
{
    if (env)
        setenv("RF_SOCK_PROGRESS", env, 1);
    else
        unsetenv("RF_SOCK_PROGRESS");
    rf_fabric_attr attr = {.progress = progress};
    rf_status st = rf_fabric_open("sock", &attr, f);
    unsetenv("RF_SOCK_PROGRESS");
    return st;
}

static void env(void)
{
    rf_fabric *f = NULL;
    CHECK_ST(open_with("bogus", RF_PROGRESS_AUTO, &f), RF_ERR_INVALID_ARG);
    CHECK_MSG("RF_SOCK_PROGRESS");
    CHECK_MSG("bogus");
    CHECK_TRUE(f == NULL);
    CHECK_ST(open_with(NULL, (rf_progress)7, &f), RF_ERR_INVALID_ARG);
    CHECK_MSG("progress");
    /* shm progresses by itself: it accepts manual and behaves as auto */
    rf_fabric_attr shm_attr = {.progress = RF_PROGRESS_MANUAL};
    CHECK_OK(rf_fabric_open("shm", &shm_attr, &f));
    CHECK(rf_fabric_progress(f) == RF_PROGRESS_AUTO,
          "shm asked for manual reports %d, want RF_PROGRESS_AUTO",
          (int)rf_fabric_progress(f));
    rf_fabric_close(f);
    /* auto reports manual when its sock fabric makes it */
    CHECK_OK(rf_fabric_open("auto", &shm_attr, &f));
    CHECK(rf_fabric_progress(f) == RF_PROGRESS_MANUAL,
          "auto asked for manual reports %d, want RF_PROGRESS_MANUAL",
          (int)rf_fabric_progress(f));
    rf_fabric_close(f);
    struct {
        const char *env;
        rf_progress attr;
        int manual;
    } rows[] = {
        {NULL, RF_PROGRESS_AUTO, 0},     {NULL, RF_PROGRESS_MANUAL, 1},
        {"attr", RF_PROGRESS_MANUAL, 1}, {"manual", RF_PROGRESS_AUTO, 1},
        {"auto", RF_PROGRESS_MANUAL, 0}, {"", RF_PROGRESS_MANUAL, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK_OK(open_with(rows[i].env, rows[i].attr, &f));
        CHECK(SOCK_FAB(f)->manual == rows[i].manual,
              "RF_SOCK_PROGRESS=%s, attr %d: manual %d",
              rows[i].env ? rows[i].env : "(unset)", (int)rows[i].attr,
              SOCK_FAB(f)->manual);
        CHECK(rf_fabric_progress(f) ==
                  (rows[i].manual ? RF_PROGRESS_MANUAL : RF_PROGRESS_AUTO),
              "RF_SOCK_PROGRESS=%s, attr %d: rf_fabric_progress %d",
              rows[i].env ? rows[i].env : "(unset)", (int)rows[i].attr,
              (int)rf_fabric_progress(f));
        rf_fabric_close(f);
    }
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"ops", ops},       {"stall", stall}, {"many", many},
        {"close", closing}, {"late", late},   {"env", env},
    };
    return rft_groups_run(groups, sizeof groups / sizeof groups[0], argc, argv);
}
