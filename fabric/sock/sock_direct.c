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
 * Lifetime: a poller pins the endpoints it reads (direct_pins) after
 * finding them in the queue's list under cq->mu; rf_ep_close takes the
 * endpoint off the lists, wakes pollers through the queue's eventfd and
 * waits until no pin is left, before anything is freed. A waiter polls the
 * queue's eventfd (written by every push while a waiter polls) and the
 * sockets of the endpoints with work outstanding whose replies complete on
 * that queue (what else arrives is the progress thread's to read). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fabric/sock/sock.h"

void sock_direct_attach(sock_cq *cq, sock_ep *ep)
{
    pthread_mutex_lock(&cq->mu);
    if (cq->ndirect < SOCK_CQ_DIRECT_MAX)
        cq->direct[cq->ndirect++] = ep;
    else
        cq->direct_over++;
    pthread_mutex_unlock(&cq->mu);
}

void sock_direct_detach(sock_cq *cq, sock_ep *ep)
{
    pthread_mutex_lock(&cq->mu);
    int found = 0;
    for (int i = 0; i < cq->ndirect; i++) {
        if (cq->direct[i] == ep) {
            cq->direct[i] = cq->direct[--cq->ndirect];
            found = 1;
            break;
        }
    }
    if (!found && cq->direct_over > 0)
        cq->direct_over--;
    int wake = cq->poll_waiters > 0;
    pthread_mutex_unlock(&cq->mu);
    if (wake && cq->efd >= 0) {
        uint64_t one = 1;
        ssize_t r = write(cq->efd, &one, sizeof one);
        (void)r; /* EAGAIN: saturated, the waiter wakes anyway */
    }
    while (atomic_load_explicit(&ep->direct_pins, memory_order_acquire))
        sched_yield();
}

/* The endpoints to read, pinned; 0 when direct progress does not apply. */
static int pin_all(sock_cq *cq, sock_ep **eps)
{
    int n = 0;
    pthread_mutex_lock(&cq->mu);
    if (!cq->direct_over) {
        n = cq->ndirect;
        for (int i = 0; i < n; i++) {
            eps[i] = cq->direct[i];
            atomic_fetch_add_explicit(&eps[i]->direct_pins, 1,
                                      memory_order_acquire);
        }
    }
    pthread_mutex_unlock(&cq->mu);
    return n;
}

static void unpin_all(sock_ep **eps, int n)
{
    for (int i = 0; i < n; i++)
        atomic_fetch_sub_explicit(&eps[i]->direct_pins, 1,
                                  memory_order_release);
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
 * thread's work), so it leaves out receives; a busy poller looks anyway. */
static int reply_fd(const sock_cq *cq, const sock_ep *ep, int recvs)
{
    if (ep->fd < 0 || ep->closing || !(ep->ev_mask & EPOLLIN))
        return -1;
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
    if (!SOCK_FAB(cq->base.fabric)->direct)
        return;
    sock_ep *eps[SOCK_CQ_DIRECT_MAX];
    int n = pin_all(cq, eps);
    for (int i = 0; i < n; i++) {
        sock_ep *ep = eps[i];
        sock_fabric *fab = ep->fab;
        if (pthread_rwlock_tryrdlock(&fab->mr_mu) != 0)
            continue;
        if (pthread_mutex_trylock(&ep->mu) == 0) {
            if (reply_fd(cq, ep, 1) >= 0)
                sock_ep_service(ep, EPOLLIN);
            pthread_mutex_unlock(&ep->mu);
        }
        pthread_rwlock_unlock(&fab->mr_mu);
    }
    unpin_all(eps, n);
}

int sock_direct_wait(sock_cq *cq, int64_t deadline)
{
    if (!SOCK_FAB(cq->base.fabric)->direct || cq->efd < 0)
        return 0;
    sock_ep *eps[SOCK_CQ_DIRECT_MAX];
    int n = pin_all(cq, eps);
    if (n == 0) {
        unpin_all(eps, n);
        return 0;
    }
    struct pollfd pfd[SOCK_CQ_DIRECT_MAX + 1];
    sock_ep *owner[SOCK_CQ_DIRECT_MAX + 1];
    int np = 0;
    pfd[np] = (struct pollfd){.fd = cq->efd, .events = POLLIN};
    owner[np++] = NULL;
    for (int i = 0; i < n; i++) {
        /* A duplicate, made under ep->mu, is what poll waits on: the
         * progress thread may close the endpoint's own fd meanwhile (it
         * then fails the outstanding work, whose completions wake us). */
        pthread_mutex_lock(&eps[i]->mu);
        int fd = reply_fd(cq, eps[i], 0);
        if (fd >= 0)
            fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        pthread_mutex_unlock(&eps[i]->mu);
        if (fd >= 0) {
            pfd[np] = (struct pollfd){.fd = fd, .events = POLLIN};
            owner[np++] = eps[i];
        }
    }
    pthread_mutex_lock(&cq->mu);
    int ready = cq->count > 0 || cq->ovf_count > 0;
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
    unpin_all(eps, n);
    return 1;
}
