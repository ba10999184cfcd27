/* fabric/sock/sock_direct.c: direct progress. A thread polling or waiting
 * on a completion queue that at most SOCK_CQ_DIRECT_MAX endpoints use reads
 * their sockets itself, under the same locks as the progress thread
 * (fab->mr_mu shared, then ep->mu, both only tried: a poller never waits
 * for a lock), so a reply reaches the waiter with the one wake-up of a TCP
 * ping-pong instead of the progress thread's wake-up and then the
 * waiter's, and costs it one recv (a poll's read is its own test: no peek
 * first, no second read to find the socket empty). What the read brings
 * is handled whatever it is, requests to this side as a target too. The
 * progress thread keeps watching the same sockets: whichever thread takes
 * the locks first reads; the other finds nothing or leaves it.
 *
 * Manual progress (fab->manual): the progress thread does not watch the
 * sockets for input, so this is how they are read: a poller reads every
 * endpoint of the queue (no SOCK_CQ_DIRECT_MAX limit, requests and
 * replies alike), and a waiter waits on all their sockets (those whose
 * reading is not paused) and the queue's eventfd. An endpoint attached to
 * the queue, or whose paused reading resumes, wakes the waiters
 * (sock_direct_wake) so they wait on its socket too.
 *
 * Lifetime: a poller pins the endpoints it reads (direct_pins) after
 * finding them in the queue's list under cq->mu; rf_ep_close takes the
 * endpoint off the lists, wakes pollers through the queue's eventfd and
 * waits until no pin is left, before anything is freed. A waiter polls the
 * queue's eventfd (written by every push while a waiter polls) and, with
 * automatic progress, the sockets of the endpoints with work outstanding
 * whose replies complete on that queue (what else arrives is the progress
 * thread's to read). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

/* Endpoints a poller pins without allocating. */
#define PIN_LOCAL 16

typedef struct pinset {
    sock_ep **eps;
    int n;
    uint64_t gen; /* cq->direct_gen when pinned */
    sock_ep *local[PIN_LOCAL];
} pinset;

static int manual(const sock_cq *cq)
{
    return SOCK_FAB(cq->base.fabric)->manual;
}

/* Writes the queue's eventfd if a waiter polls it (cq->mu held). */
static void wake_locked(sock_cq *cq)
{
    if (cq->poll_waiters > 0 && cq->efd >= 0) {
        uint64_t one = 1;
        ssize_t r = write(cq->efd, &one, sizeof one);
        (void)r; /* EAGAIN: saturated, the waiter wakes anyway */
    }
}

rf_status sock_direct_attach(sock_cq *cq, sock_ep *ep)
{
    pthread_mutex_lock(&cq->mu);
    if (cq->ndirect == cq->direct_cap) {
        int cap = cq->direct_cap ? 2 * cq->direct_cap : SOCK_CQ_DIRECT_MAX;
        sock_ep **d = realloc(cq->direct, (size_t)cap * sizeof *d);
        if (!d) {
            pthread_mutex_unlock(&cq->mu);
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "sock: no memory to list endpoint %d of a "
                                "completion queue",
                                cq->ndirect + 1);
        }
        cq->direct = d;
        cq->direct_cap = cap;
    }
    cq->direct[cq->ndirect++] = ep;
    cq->direct_gen++;
    if (manual(cq))
        wake_locked(cq); /* a waiter waits on its socket from now on */
    pthread_mutex_unlock(&cq->mu);
    return RF_OK;
}

void sock_direct_detach(sock_cq *cq, sock_ep *ep)
{
    pthread_mutex_lock(&cq->mu);
    for (int i = 0; i < cq->ndirect; i++) {
        if (cq->direct[i] == ep) {
            cq->direct[i] = cq->direct[--cq->ndirect];
            break;
        }
    }
    cq->direct_gen++;
    wake_locked(cq);
    pthread_mutex_unlock(&cq->mu);
    while (atomic_load_explicit(&ep->direct_pins, memory_order_acquire))
        sched_yield();
}

void sock_direct_wake(sock_cq *cq)
{
    pthread_mutex_lock(&cq->mu);
    cq->direct_gen++;
    wake_locked(cq);
    pthread_mutex_unlock(&cq->mu);
}

/* Pins the endpoints to read into ps; none when direct progress does not
 * apply (automatic progress and more than SOCK_CQ_DIRECT_MAX of them). */
static void pin_all(sock_cq *cq, pinset *ps)
{
    ps->eps = ps->local;
    ps->n = 0;
    pthread_mutex_lock(&cq->mu);
    int n = cq->ndirect;
    if (!manual(cq) && n > SOCK_CQ_DIRECT_MAX)
        n = 0;
    if (n > PIN_LOCAL) {
        ps->eps = malloc((size_t)n * sizeof *ps->eps);
        if (!ps->eps) { /* serve the first ones this time */
            ps->eps = ps->local;
            n = PIN_LOCAL;
        }
    }
    for (int i = 0; i < n; i++) {
        ps->eps[i] = cq->direct[i];
        atomic_fetch_add_explicit(&ps->eps[i]->direct_pins, 1,
                                  memory_order_acquire);
    }
    ps->n = n;
    ps->gen = cq->direct_gen;
    pthread_mutex_unlock(&cq->mu);
}

static void unpin_all(pinset *ps)
{
    for (int i = 0; i < ps->n; i++)
        atomic_fetch_sub_explicit(&ps->eps[i]->direct_pins, 1,
                                  memory_order_release);
    if (ps->eps != ps->local)
        free(ps->eps);
}

/* Services ep if its reading is not paused and nobody else is at it (the
 * progress thread, another poller): never waits for a lock. */
static void service(sock_ep *ep)
{
    sock_fabric *fab = ep->fab;
    if (pthread_rwlock_tryrdlock(&fab->mr_mu) != 0)
        return; /* a deregistration is waiting */
    if (pthread_mutex_trylock(&ep->mu) == 0) {
        if (ep->fd >= 0 && !ep->closing && (ep->ev_mask & EPOLLIN))
            sock_ep_service(ep, EPOLLIN);
        pthread_mutex_unlock(&ep->mu);
    }
    pthread_rwlock_unlock(&fab->mr_mu);
}

/* ep's socket if a completion on cq may come from what arrives on it
 * (ep->mu held), else -1: a reply to work it posted (send queue), or, with
 * recvs, a send or write_imm for a posted receive. A blocked waiter does
 * not wake for the peer's requests to this side as a target (the progress
 * thread's work), so it leaves out receives; a busy poller looks anyway.
 * Manual progress: any socket whose reading is not paused (requests to
 * this side are this thread's work too). */
static int reply_fd(const sock_cq *cq, const sock_ep *ep, int recvs)
{
    if (ep->fd < 0 || ep->closing || !(ep->ev_mask & EPOLLIN))
        return -1;
    if (ep->fab->manual)
        return ep->fd;
    if (ep->base.send_cq == &cq->base && ep->wr_head != ep->wr_sent)
        return ep->fd;
    if (recvs && ep->base.recv_cq == &cq->base &&
        ep->recv_head != ep->recv_tail)
        return ep->fd;
    return -1;
}

/* One read per endpoint with something due on this queue: the read itself
 * is the test (one system call, as a TCP ping-pong's non-blocking read),
 * and what it brings is handled at once. */
void sock_direct_poll(sock_cq *cq)
{
    sock_fabric *fab = SOCK_FAB(cq->base.fabric);
    if (!fab->direct && !fab->manual)
        return;
    pinset ps;
    pin_all(cq, &ps);
    for (int i = 0; i < ps.n; i++) {
        sock_ep *ep = ps.eps[i];
        if (pthread_rwlock_tryrdlock(&fab->mr_mu) != 0)
            continue;
        if (pthread_mutex_trylock(&ep->mu) == 0) {
            if (reply_fd(cq, ep, 1) >= 0)
                sock_ep_service(ep, EPOLLIN);
            pthread_mutex_unlock(&ep->mu);
        }
        pthread_rwlock_unlock(&fab->mr_mu);
    }
    unpin_all(&ps);
}

int sock_direct_wait(sock_cq *cq, int64_t deadline)
{
    sock_fabric *fab = SOCK_FAB(cq->base.fabric);
    if ((!fab->direct && !fab->manual) || cq->efd < 0)
        return 0;
    pinset ps;
    pin_all(cq, &ps);
    if (ps.n == 0 && !fab->manual) {
        unpin_all(&ps);
        return 0;
    }
    struct pollfd pfd_local[PIN_LOCAL + 1];
    sock_ep *owner_local[PIN_LOCAL + 1];
    struct pollfd *pfd = pfd_local;
    sock_ep **owner = owner_local;
    if (ps.n > PIN_LOCAL) {
        pfd = malloc((size_t)(ps.n + 1) * sizeof *pfd);
        owner = malloc((size_t)(ps.n + 1) * sizeof *owner);
        if (!pfd || !owner) { /* wait on the first ones this time */
            free(pfd);
            free(owner);
            pfd = pfd_local;
            owner = owner_local;
        }
    }
    int room = pfd == pfd_local ? PIN_LOCAL : ps.n;
    int np = 0;
    pfd[np] = (struct pollfd){.fd = cq->efd, .events = POLLIN};
    owner[np++] = NULL;
    for (int i = 0; i < ps.n && np <= room; i++) {
        /* A duplicate, made under ep->mu, is what poll waits on: the
         * progress thread may close the endpoint's own fd meanwhile (it
         * then fails the outstanding work, whose completions wake us). */
        pthread_mutex_lock(&ps.eps[i]->mu);
        int fd = reply_fd(cq, ps.eps[i], 0);
        if (fd >= 0)
            fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        pthread_mutex_unlock(&ps.eps[i]->mu);
        if (fd >= 0) {
            pfd[np] = (struct pollfd){.fd = fd, .events = POLLIN};
            owner[np++] = ps.eps[i];
        }
    }
    pthread_mutex_lock(&cq->mu);
    /* An endpoint attached or resumed since the pin: look again first. */
    int ready = cq->count > 0 || cq->ovf_count > 0 || cq->direct_gen != ps.gen;
    if (!ready)
        cq->poll_waiters++;
    pthread_mutex_unlock(&cq->mu);
    if (!ready) {
        int left = rf_deadline_left_ms(deadline);
        int r = poll(pfd, (nfds_t)np, left);
        pthread_mutex_lock(&cq->mu);
        cq->poll_waiters--;
        pthread_mutex_unlock(&cq->mu);
        if (r > 0) {
            if (pfd[0].revents & POLLIN) {
                uint64_t v;
                ssize_t k = read(cq->efd, &v, sizeof v);
                (void)k;
            }
            for (int i = 1; i < np; i++)
                if (pfd[i].revents)
                    service(owner[i]);
        }
    }
    for (int i = 1; i < np; i++)
        close(pfd[i].fd);
    if (pfd != pfd_local) {
        free(pfd);
        free(owner);
    }
    unpin_all(&ps);
    return 1;
}
