/* tests/unit/fabric/test_sock_direct.c: the sock provider's paths without
 * hand-offs (fabric/sock/sock_direct.c, sock_post.c, sock_rx.c), on two sock
 * fabrics in one process joined by a socketpair (no handshake: the frames
 * start at once). The initiator's socket is taken out of its progress
 * thread's epoll set, so only the posting and the polling/waiting thread
 * ever touch it:
 *  - no_progress: 8-byte reads complete through rf_cq_poll and through a
 *    blocking rf_cq_wait, the reply read by that thread;
 *  - syscalls: the provider's system call counters per operation: the
 *    initiator makes one sendmsg per request and at most two recv per reply
 *    in a blocking wait (one that finds nothing before it blocks, one that
 *    reads the reply); the target, served by its progress thread, one recv
 *    and one sendmsg per request (no second read to find the socket empty).
 * A deadline only guards against a hang; nothing is timed. */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "fabric/sock/sock.h"
#include "tests/common/check.h"

#define N_OPS   200
#define HANG_MS 10000

typedef struct pair {
    rf_fabric *fa, *fb; /* initiator, target */
    rf_cq *ca, *cb;
    sock_ep *ea, *eb;
    uint64_t *src, *dst;
    rf_mr *src_mr, *dst_mr;
} pair;

static void pair_open(pair *p)
{
    memset(p, 0, sizeof *p);
    CHECK_OK(rf_fabric_open("sock", NULL, &p->fa));
    CHECK_OK(rf_fabric_open("sock", NULL, &p->fb));
    CHECK_OK(rf_cq_create(p->fa, 64, &p->ca));
    CHECK_OK(rf_cq_create(p->fb, 64, &p->cb));
    CHECK_OK(rf_cq_set_spin_us(p->ca, 0)); /* straight to the blocking wait */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                     sv) == 0,
          "socketpair failed");
    rf_ep_attr aa = {.send_cq = p->ca, .max_send_wr = 16, .max_recv_wr = 4};
    rf_ep_attr ab = {.send_cq = p->cb, .max_send_wr = 16, .max_recv_wr = 4};
    CHECK_OK(
        sock_ep_create(SOCK_FAB(p->fa), sv[0], &aa, NULL, 0, 16, 16, &p->ea));
    CHECK_OK(
        sock_ep_create(SOCK_FAB(p->fb), sv[1], &ab, NULL, 0, 16, 16, &p->eb));
    /* The initiator's progress thread no longer sees its socket. */
    pthread_mutex_lock(&p->ea->mu);
    CHECK(epoll_ctl(SOCK_FAB(p->fa)->epfd, EPOLL_CTL_DEL, p->ea->fd, NULL) == 0,
          "epoll_ctl(DEL) failed");
    pthread_mutex_unlock(&p->ea->mu);
    p->src = calloc(1, 64);
    p->dst = calloc(1, 64);
    CHECK_TRUE(p->src && p->dst);
    CHECK_OK(rf_mr_reg(p->fb, p->src, 64, RF_ACCESS_ALL, &p->src_mr));
    CHECK_OK(rf_mr_reg(p->fa, p->dst, 64, RF_ACCESS_ALL, &p->dst_mr));
}

static void pair_close(pair *p)
{
    rf_ep_close(&p->ea->base);
    rf_ep_close(&p->eb->base);
    rf_mr_dereg(p->src_mr);
    rf_mr_dereg(p->dst_mr);
    rf_cq_destroy(p->ca);
    rf_cq_destroy(p->cb);
    rf_fabric_close(p->fa);
    rf_fabric_close(p->fb);
    free(p->src);
    free(p->dst);
}

static void post_read(pair *p, uint64_t i)
{
    *p->src = 0x5157000000000000ull + i;
    *p->dst = 0;
    rf_wr w = {.op = RF_OP_READ,
               .local = p->dst,
               .len = 8,
               .local_mr = p->dst_mr,
               .remote_addr = p->src_mr->remote_addr,
               .rkey = p->src_mr->rkey,
               .context = (void *)(uintptr_t)(i + 1)};
    CHECK_OK(rf_post(&p->ea->base, &w, 1, NULL));
}

static void check_done(pair *p, const rf_completion *c, uint64_t i)
{
    CHECK(c->status == RF_OK, "read %llu: %s", (unsigned long long)i,
          rf_status_string(c->status));
    CHECK(c->context == (void *)(uintptr_t)(i + 1), "read %llu: wrong context",
          (unsigned long long)i);
    CHECK_EQ_U64(*p->dst, 0x5157000000000000ull + i);
}

static void read_waiting(pair *p, uint64_t i)
{
    post_read(p, i);
    rf_completion c;
    int n = rf_cq_wait(p->ca, &c, 1, HANG_MS);
    CHECK(n == 1, "rf_cq_wait: %d (%s)", n, rf_error_message());
    check_done(p, &c, i);
}

static void no_progress(void)
{
    pair p;
    pair_open(&p);
    for (uint64_t i = 0; i < 20; i++) {
        post_read(&p, i);
        rf_completion c;
        int n = 0;
        int64_t deadline = rf_deadline_ms(HANG_MS);
        while (n == 0 && !rf_deadline_passed(deadline))
            n = rf_cq_poll(p.ca, &c, 1);
        CHECK(n == 1, "rf_cq_poll: no completion (%d)", n);
        check_done(&p, &c, i);
    }
    for (uint64_t i = 20; i < 40; i++)
        read_waiting(&p, i);
    CHECK_OK(rf_ep_state(&p.ea->base));
    pair_close(&p);
}

static void syscalls(void)
{
    pair p;
    pair_open(&p);
    read_waiting(&p, 0); /* the target's first wake-up is behind us */
    sock_fabric *a = SOCK_FAB(p.fa), *b = SOCK_FAB(p.fb);
    uint64_t a_send = atomic_load(&a->n_send), a_recv = atomic_load(&a->n_recv);
    uint64_t b_send = atomic_load(&b->n_send), b_recv = atomic_load(&b->n_recv);
    for (uint64_t i = 1; i <= N_OPS; i++)
        read_waiting(&p, i);
    a_send = atomic_load(&a->n_send) - a_send;
    a_recv = atomic_load(&a->n_recv) - a_recv;
    b_send = atomic_load(&b->n_send) - b_send;
    b_recv = atomic_load(&b->n_recv) - b_recv;
    rft_note("per %d reads: initiator %llu sendmsg, %llu recv; target %llu "
             "sendmsg, %llu recv",
             N_OPS, (unsigned long long)a_send, (unsigned long long)a_recv,
             (unsigned long long)b_send, (unsigned long long)b_recv);
    CHECK(a_send == N_OPS, "initiator: %llu sendmsg for %d requests",
          (unsigned long long)a_send, N_OPS);
    CHECK(a_recv <= 2 * N_OPS, "initiator: %llu recv for %d replies",
          (unsigned long long)a_recv, N_OPS);
    /* The target's thread counts a call after it returns, so the warm-up's
     * may land in the window and the last one after it: one off at most. */
    CHECK(b_send + 1 >= N_OPS && b_send <= N_OPS + 1,
          "target: %llu sendmsg for %d replies", (unsigned long long)b_send,
          N_OPS);
    CHECK(b_recv <= N_OPS + 1, "target: %llu recv for %d requests",
          (unsigned long long)b_recv, N_OPS);
    pair_close(&p);
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"no_progress", no_progress},
        {"syscalls", syscalls},
    };
    return rft_groups_run(groups, sizeof groups / sizeof groups[0], argc, argv);
}
