/* fabric/sock/sock_ep.c: sock endpoints: creation on a connected socket,
 * the error state (RC QP semantics: every outstanding work request and
 * posted receive completes with RF_ERR_DISCONNECTED, the peer is told with
 * an ERROR frame and the socket drains then closes), close, completions,
 * epoll interest (manual progress: no input, see sock.h) and the
 * per-endpoint service of the progress thread and pollers. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

rf_status sock_ep_check_attr(const rf_ep_attr *attr, uint32_t *max_wr,
                             uint32_t *max_recv)
{
    *max_wr = attr->max_send_wr ? attr->max_send_wr : 1024;
    *max_recv = attr->max_recv_wr ? attr->max_recv_wr : 256;
    if (*max_wr > RF_SOCK_MAX_QUEUE || *max_recv > RF_SOCK_MAX_QUEUE)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sock: max_send_wr %u / max_recv_wr %u exceed "
                            "the limit of %u",
                            *max_wr, *max_recv, RF_SOCK_MAX_QUEUE);
    return RF_OK;
}

/* What the progress thread watches for a state needing `want`: with manual
 * progress, a hang-up instead of input (pollers read the input). */
static uint32_t epoll_mask(const sock_fabric *fab, uint32_t want)
{
    if (fab->manual && (want & EPOLLIN))
        want = (want & ~(uint32_t)EPOLLIN) | EPOLLRDHUP;
    return want;
}

static void ep_free(sock_ep *ep)
{
    sock_tgt_free_stage(ep);
    sock_txq_destroy(&ep->rep);
    sock_txq_destroy(&ep->req);
    free(ep->wrs);
    free(ep->recvs);
    free(ep->rxbuf);
    pthread_mutex_destroy(&ep->mu);
    free(ep);
}

rf_status sock_ep_create(sock_fabric *fab, int fd, const rf_ep_attr *attr,
                         const void *peer_priv, size_t peer_priv_len,
                         uint32_t peer_max, uint32_t peer_serve, sock_ep **out)
{
    uint32_t max_wr, max_recv;
    rf_status st = sock_ep_check_attr(attr, &max_wr, &max_recv);
    if (st != RF_OK) {
        close(fd);
        return st;
    }
    sock_ep *ep = calloc(1, sizeof *ep);
    if (ep) {
        pthread_mutex_init(&ep->mu, NULL);
        ep->wrs = calloc(max_wr, sizeof *ep->wrs);
        ep->recvs = calloc(max_recv, sizeof *ep->recvs);
        ep->rxbuf = malloc(SOCK_RXBUF_SIZE);
    }
    if (!ep || !ep->wrs || !ep->recvs || !ep->rxbuf) {
        if (ep)
            ep_free(ep);
        close(fd);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "sock: no memory for an endpoint of %u work "
                            "requests",
                            max_wr);
    }
    ep->base.fabric = &fab->base;
    ep->base.send_cq = attr->send_cq;
    ep->base.recv_cq = attr->recv_cq ? attr->recv_cq : attr->send_cq;
    if (peer_priv_len > RF_MAX_PRIVATE_DATA)
        peer_priv_len = RF_MAX_PRIVATE_DATA;
    if (peer_priv_len)
        memcpy(ep->base.peer_priv, peer_priv, peer_priv_len);
    ep->base.peer_priv_len = peer_priv_len;
    ep->tag.kind = SOCK_POLL_EP;
    ep->fab = fab;
    ep->fd = fd;
    ep->phase = SOCK_OPEN;
    ep->state = RF_OK;
    ep->peer_max = peer_max;
    ep->peer_serve = peer_serve;
    ep->remote_off = (attr->flags & RF_EP_REMOTE_ACCESS_OFF) != 0;
    ep->max_wr = max_wr;
    ep->max_recv = max_recv;
    sock_net_peer_name(fd, ep->peer, sizeof ep->peer);
    sock_net_tune(fd, fab->peer_timeout_ms, fab->rto_min_us);
    sock_cq_ref((sock_cq *)ep->base.send_cq);
    sock_cq_ref((sock_cq *)ep->base.recv_cq);

    pthread_mutex_lock(&fab->mu);
    ep->next = fab->eps;
    if (fab->eps)
        fab->eps->prev = ep;
    fab->eps = ep;
    pthread_mutex_unlock(&fab->mu);

    ep->ev_mask = EPOLLIN;
    ep->ev_reg = epoll_mask(fab, ep->ev_mask);
    struct epoll_event ev = {.events = ep->ev_reg, .data.ptr = &ep->tag};
    if (epoll_ctl(fab->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int e = errno;
        sock_ep_close(&ep->base);
        return rf_error_set(RF_ERR_IO, "sock: epoll_ctl: %s", strerror(e));
    }
    /* Direct pollers find it only now, fully made (cq->mu orders this). */
    st = sock_direct_attach((sock_cq *)ep->base.send_cq, ep);
    if (st == RF_OK && ep->base.recv_cq != ep->base.send_cq) {
        st = sock_direct_attach((sock_cq *)ep->base.recv_cq, ep);
        if (st != RF_OK)
            sock_direct_detach((sock_cq *)ep->base.send_cq, ep);
    }
    if (st != RF_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", rf_error_message());
        sock_ep_close(&ep->base);
        return rf_error_set(st, "%s", msg);
    }
    ep->direct_attached = 1;
    RF_LOG_DEBUG("sock: endpoint connected to %s", ep->peer);
    *out = ep;
    return RF_OK;
}

void sock_ep_kick(sock_ep *ep)
{
    sock_fabric *fab = ep->fab;
    pthread_mutex_lock(&fab->kick_mu);
    int first = !ep->kicked;
    if (first) {
        ep->kicked = 1;
        ep->kick_next = fab->kicks;
        fab->kicks = ep;
    }
    pthread_mutex_unlock(&fab->kick_mu);
    if (first)
        sock_fab_wake(fab);
}

/* Manual progress: reading resumes (a send got its receive, a write its
 * reads sent), so waiters on its queues must wait on the socket again. */
static void resumed(sock_ep *ep, uint32_t m)
{
    if (!ep->fab->manual || !(m & EPOLLIN) || (ep->ev_mask & EPOLLIN))
        return;
    sock_direct_wake((sock_cq *)ep->base.send_cq);
    if (ep->base.recv_cq != ep->base.send_cq)
        sock_direct_wake((sock_cq *)ep->base.recv_cq);
}

void sock_ep_update_events(sock_ep *ep)
{
    if (ep->fd < 0)
        return;
    uint32_t m = 0;
    if (!(ep->phase == SOCK_OPEN &&
          (ep->rx_phase == RX_WAIT_RECV || ep->rx_phase == RX_WAIT_READS)))
        m |= EPOLLIN;
    if (sock_tx_pending(ep) && !(ep->phase == SOCK_DRAIN && ep->shut_wr))
        m |= EPOLLOUT;
    uint32_t reg = epoll_mask(ep->fab, m);
    if (reg == ep->ev_reg) {
        resumed(ep, m);
        ep->ev_mask = m;
        return;
    }
    struct epoll_event ev = {.events = reg, .data.ptr = &ep->tag};
    if (epoll_ctl(ep->fab->epfd, EPOLL_CTL_MOD, ep->fd, &ev) == 0) {
        resumed(ep, m);
        ep->ev_mask = m;
        ep->ev_reg = reg;
    } else
        RF_LOG_ERRORF("sock: epoll_ctl(MOD) for %s: %s", ep->peer,
                      strerror(errno));
}

void sock_ep_push_recv_comp(sock_ep *ep, const rf_completion *c)
{
    if (sock_cq_push((sock_cq *)ep->base.recv_cq, c))
        ep->cq_overflow = 1;
}

static int is_rd_atomic(uint8_t op)
{
    return op == RF_OP_READ || op == RF_OP_FETCH_ADD || op == RF_OP_CMP_SWAP;
}

void sock_ep_complete_head(sock_ep *ep, rf_status status)
{
    sock_wr *w = &ep->wrs[ep->wr_head % ep->max_wr];
    if (ep->wr_head < ep->wr_sent) {
        if (is_rd_atomic(w->op) && ep->rd_atomic_inflight > 0)
            ep->rd_atomic_inflight--;
    } else {
        ep->wr_sent++; /* was held by a fence, never sent */
    }
    ep->wr_head++;
    if (status == RF_OK && (w->flags & RF_WR_UNSIGNALED))
        return;
    rf_completion c = {.context = w->context,
                       .ep = rf_ep_public(&ep->base),
                       .op = (rf_op)w->op,
                       .status = status,
                       .len = status == RF_OK ? w->len : 0};
    if (sock_cq_push((sock_cq *)ep->base.send_cq, &c))
        ep->cq_overflow = 1;
}

void sock_ep_check_overflow(sock_ep *ep)
{
    if (ep->cq_overflow && ep->state == RF_OK)
        sock_ep_fail(ep, RF_ERR_DISCONNECTED,
                     "a completion queue of the endpoint overflowed");
}

/* Drops every queued request frame except one partly written, whose rest
 * is copied so the stream stays well formed. Returns -1 if out of memory. */
static int drop_requests(sock_ep *ep)
{
    if (ep->tx_partial != 2) {
        sock_txq_clear(&ep->req);
        return 0;
    }
    sock_txq *q = &ep->req;
    if (sock_txi_materialize(sock_txq_at(q, q->head)) < 0)
        return -1;
    while (q->tail - q->head > 1) {
        free(sock_txq_at(q, q->tail - 1)->owned);
        q->tail--;
    }
    return 0;
}

/* Keeps the replies before the first blocked one (the peer matches replies
 * to its requests in order), pushing their receive completions now. */
static void trim_replies(sock_ep *ep)
{
    sock_txq *q = &ep->rep;
    uint64_t s = q->head;
    for (; s != q->tail; s++) {
        sock_txi *t = sock_txq_at(q, s);
        if (t->blocked)
            break;
        if (t->has_event) {
            t->has_event = 0;
            sock_ep_push_recv_comp(ep, &t->ev);
        }
    }
    while (q->tail != s) {
        sock_txi *t = sock_txq_at(q, q->tail - 1);
        if (t->mr)
            ep->rep_mr_refs--;
        free(t->owned);
        q->tail--;
    }
}

void sock_ep_fail(sock_ep *ep, rf_status reason, const char *fmt, ...)
{
    if (ep->state != RF_OK)
        return;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    RF_LOG_INFO("sock: endpoint to %s enters the error state (%s): %s",
                ep->peer, rf_status_string(reason), why);
    ep->state = RF_ERR_DISCONNECTED;

    /* Before any completion is visible: the caller may free its buffers as
     * soon as it sees one, so no queued frame may point at them after. */
    if (ep->phase == SOCK_OPEN && drop_requests(ep) < 0) {
        RF_LOG_ERRORF("sock: out of memory failing endpoint to %s", ep->peer);
        sock_ep_sock_dead(ep);
    }
    /* Receives already filled keep their success, and come first. */
    trim_replies(ep);
    if (ep->rx_sink == SINK_TGT_SEND) {
        rf_completion c = {.context = ep->rx_ctx,
                           .ep = rf_ep_public(&ep->base),
                           .op = RF_OP_RECV,
                           .status = RF_ERR_DISCONNECTED};
        sock_ep_push_recv_comp(ep, &c);
    }
    while (ep->wr_head != ep->wr_tail)
        sock_ep_complete_head(ep, RF_ERR_DISCONNECTED);
    ep->rd_atomic_inflight = 0;
    while (ep->recv_head != ep->recv_tail) {
        sock_recv *r = &ep->recvs[ep->recv_head++ % ep->max_recv];
        rf_completion c = {.context = r->context,
                           .ep = rf_ep_public(&ep->base),
                           .op = RF_OP_RECV,
                           .status = RF_ERR_DISCONNECTED};
        sock_ep_push_recv_comp(ep, &c);
    }
    sock_tgt_free_stage(ep);
    ep->rx_phase = RX_HDR;
    ep->rx_sink = SINK_NONE;
    ep->rx_dst = NULL;
    ep->rx_mr = NULL;
    ep->rx_left = 0;

    if (ep->phase == SOCK_OPEN) {
        sock_txi *t = sock_txq_push(&ep->rep);
        if (!t) {
            sock_ep_sock_dead(ep);
            return;
        }
        rf_sock_hdr h = {.op = RF_SOCK_ERROR, .key = (uint32_t)reason};
        rf_sock_hdr_encode(&h, t->hdr);
        ep->phase = SOCK_DRAIN;
        ep->drain_deadline = 0;
        __atomic_store_n(&ep->fab->timers_hint, 1, __ATOMIC_RELAXED);
        sock_ep_kick(ep);
    }
}

void sock_ep_sock_dead(sock_ep *ep)
{
    if (ep->fd >= 0) {
        epoll_ctl(ep->fab->epfd, EPOLL_CTL_DEL, ep->fd, NULL);
        close(ep->fd);
        ep->fd = -1;
    }
    ep->phase = SOCK_DEAD;
    ep->tx_partial = 0;
    sock_txq_clear(&ep->req);
    sock_txq_clear(&ep->rep);
    ep->rep_mr_refs = 0;
    ep->copy_bytes = 0;
    ep->rep_open = 0;
}

void sock_ep_service(sock_ep *ep, uint32_t events)
{
    if (ep->fd < 0 || ep->closing)
        return;
    /* Reading and writing are tried whatever the event, except that a
     * hang-up while reading is paused (a send waiting for a receive) would
     * repeat forever: the sender is gone, so is the connection. */
    if ((events & (EPOLLHUP | EPOLLERR)) && ep->phase == SOCK_OPEN &&
        (ep->rx_phase == RX_WAIT_RECV || ep->rx_phase == RX_WAIT_READS)) {
        sock_ep_fail(ep, RF_ERR_DISCONNECTED, "connection lost");
        sock_ep_sock_dead(ep);
        return;
    }
    if (ep->phase == SOCK_OPEN)
        sock_tgt_match(ep);
    sock_rx_run(ep);
    if (ep->fd < 0)
        return;
    /* A receive posted while a send was being staged matches it now. */
    if (ep->phase == SOCK_OPEN)
        sock_tgt_match(ep);
    sock_ep_check_overflow(ep);
    if (sock_tx_flush(ep, 1) < 0) {
        int e = errno;
        sock_ep_fail(ep, RF_ERR_DISCONNECTED, "sending to the peer failed: %s",
                     strerror(e));
        sock_ep_sock_dead(ep);
        return;
    }
    sock_ep_check_overflow(ep);
    if (ep->phase == SOCK_DRAIN) {
        if (ep->drain_deadline == 0) {
            ep->drain_deadline = rf_now_ms() + ep->fab->drain_timeout_ms;
            __atomic_store_n(&ep->fab->timers_hint, 1, __ATOMIC_RELAXED);
        }
        if (sock_tx_flush(ep, 1) < 0) {
            sock_ep_sock_dead(ep);
            return;
        }
        if (!sock_tx_pending(ep) && !ep->shut_wr) {
            shutdown(ep->fd, SHUT_WR);
            ep->shut_wr = 1;
        }
    }
    sock_ep_update_events(ep);
}

int sock_ep_timers(sock_ep *ep, int64_t now)
{
    if (ep->fd < 0 || ep->closing)
        return 0;
    /* progress_ms may be newer than now (set by a poster meanwhile) */
    if (ep->phase == SOCK_OPEN && ep->wr_head != ep->wr_sent &&
        now > ep->progress_ms &&
        now - ep->progress_ms >
            (int64_t)ep->fab->peer_timeout_ms + ep->fab->rnr_timeout_ms &&
        ep->fab->manual && (ep->ev_mask & EPOLLIN)) {
        /* Manual progress: the replies may be waiting unread because this
         * process did not poll; reading them is progress. */
        sock_ep_service(ep, EPOLLIN);
        if (ep->fd < 0 || ep->phase != SOCK_OPEN)
            return ep->phase == SOCK_DRAIN;
    }
    if (ep->phase == SOCK_OPEN && ep->wr_head != ep->wr_sent &&
        now > ep->progress_ms &&
        now - ep->progress_ms >
            (int64_t)ep->fab->peer_timeout_ms + ep->fab->rnr_timeout_ms) {
        RF_LOG_WARN("sock: no progress from %s for %lld ms with work "
                    "outstanding; giving up on the connection",
                    ep->peer, (long long)(now - ep->progress_ms));
        sock_ep_fail(ep, RF_ERR_DISCONNECTED, "the peer stopped responding");
        sock_ep_sock_dead(ep);
        return 0;
    }
    if (ep->phase == SOCK_OPEN) {
        sock_tgt_match(ep);
        int r = sock_tgt_timers(ep, now);
        if (r & SOCK_TIMER_FIRED)
            sock_ep_service(ep, 0);
        if (ep->phase == SOCK_OPEN)
            return r & SOCK_TIMER_PENDING;
    }
    if (ep->phase == SOCK_DRAIN) {
        if (ep->drain_deadline && now >= ep->drain_deadline) {
            RF_LOG_DEBUG("sock: closing drained connection to %s", ep->peer);
            sock_ep_sock_dead(ep);
            return 0;
        }
        return 1;
    }
    return 0;
}

rf_status sock_ep_state(const rf_ep *base)
{
    sock_ep *ep = (sock_ep *)(uintptr_t)base;
    pthread_mutex_lock(&ep->mu);
    rf_status st = ep->state;
    pthread_mutex_unlock(&ep->mu);
    return st;
}

rf_status sock_ep_enable_remote_access(rf_ep *base)
{
    sock_ep *ep = SOCK_EP(base);
    __atomic_store_n(&ep->remote_off, 0, __ATOMIC_RELEASE);
    rf_status st = sock_ep_state(base);
    if (st != RF_OK)
        return rf_error_set(st,
                            "rf_ep_enable_remote_access: the endpoint "
                            "to %s is in the error state",
                            ep->peer);
    return RF_OK;
}

void sock_ep_detach(sock_fabric *fab, sock_ep *ep)
{
    pthread_mutex_lock(&ep->mu);
    sock_ep_sock_dead(ep);
    pthread_mutex_unlock(&ep->mu);
    if (ep->prev)
        ep->prev->next = ep->next;
    else if (fab->eps == ep)
        fab->eps = ep->next;
    if (ep->next)
        ep->next->prev = ep->prev;
    ep->prev = ep->next = NULL;
    pthread_mutex_lock(&fab->kick_mu);
    if (ep->kicked) {
        sock_ep **p = &fab->kicks;
        while (*p && *p != ep)
            p = &(*p)->kick_next;
        if (*p)
            *p = ep->kick_next;
        ep->kicked = 0;
    }
    pthread_mutex_unlock(&fab->kick_mu);
}

/* An endpoint closed after it failed may still be writing its last replies
 * (e.g. the RF_ERR_REMOTE_ACCESS answer to the peer's bad request): give the
 * progress thread up to the drain timeout to get them out, so the peer sees
 * the same errors whether or not the application closes promptly. */
static void linger(sock_ep *ep)
{
    int64_t deadline = rf_deadline_ms(ep->fab->drain_timeout_ms);
    for (;;) {
        pthread_mutex_lock(&ep->mu);
        int busy = ep->fd >= 0 && ep->phase == SOCK_DRAIN && !ep->shut_wr &&
                   sock_tx_pending(ep);
        pthread_mutex_unlock(&ep->mu);
        if (!busy || rf_deadline_passed(deadline))
            return;
        rf_sleep_ms(1);
    }
}

void sock_ep_close(rf_ep *base)
{
    sock_ep *ep = SOCK_EP(base);
    sock_fabric *fab = ep->fab;
    /* No direct poller may hold it past this point. */
    if (ep->direct_attached) {
        sock_direct_detach((sock_cq *)ep->base.send_cq, ep);
        if (ep->base.recv_cq != ep->base.send_cq)
            sock_direct_detach((sock_cq *)ep->base.recv_cq, ep);
    }
    linger(ep);
    pthread_mutex_lock(&ep->mu);
    if (ep->state == RF_OK)
        sock_ep_fail(ep, RF_ERR_DISCONNECTED, "closed locally");
    ep->closing = 1;
    /* Nothing may point at the caller's buffers once this returns. */
    sock_ep_sock_dead(ep);
    sock_tgt_free_stage(ep);
    pthread_mutex_unlock(&ep->mu);
    sock_fab_command(fab, SOCK_CMD_DETACH_EP, ep);
    RF_LOG_DEBUG("sock: endpoint to %s closed", ep->peer);
    sock_cq_unref((sock_cq *)ep->base.send_cq);
    sock_cq_unref((sock_cq *)ep->base.recv_cq);
    ep_free(ep);
}
