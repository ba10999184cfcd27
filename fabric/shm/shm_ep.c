/* fabric/shm/shm_ep.c: endpoints of the shm provider: their local
 * resources (send and receive queues, the receive ring this side owns, the
 * doorbell eventfd), the peer's resources they map (its ring, its region
 * table read-only, its segments, each bounded), the control messages the
 * progress thread reads from the socket (TABLE, SEG, SEG_GONE, ERR, EOF),
 * the error state, the remote access gate and closing. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/shm/shm.h"

rf_status shm_ep_new(shm_fabric *fab, const rf_ep_attr *attr, int sock,
                     const char *peer, shm_ep **out)
{
    shm_ep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: out of memory");
    ep->base.fabric = &fab->base;
    ep->base.send_cq = attr->send_cq;
    ep->base.recv_cq = attr->recv_cq ? attr->recv_cq : attr->send_cq;
    ep->fab = fab;
    ep->sock = sock;
    ep->my_efd = ep->peer_efd = ep->rx_ring_fd = -1;
    snprintf(ep->peer, sizeof ep->peer, "%s", peer);
    rf_spin_init(&ep->lock);
    ep->pseg_seed = (uint64_t)(uintptr_t)ep ^ rf_now_ns();
    ep->sq_cap = attr->max_send_wr ? attr->max_send_wr : 1024;
    ep->rq_cap = attr->max_recv_wr ? attr->max_recv_wr : 256;
    ep->sq = calloc(ep->sq_cap, sizeof *ep->sq);
    ep->rq = calloc(ep->rq_cap, sizeof *ep->rq);
    rf_status st = RF_OK;
    if (!ep->sq || !ep->rq) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "shm: out of memory for queues");
        goto err;
    }
    int rfd = shm_memfd_new("rdmaflow-shm-ring", SHM_RING_BYTES);
    if (rfd < 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "shm: ring memfd: %s",
                          strerror(errno));
        goto err;
    }
    void *m =
        mmap(NULL, SHM_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
    if (m == MAP_FAILED) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "shm: ring mapping: %s",
                          strerror(errno));
        close(rfd);
        goto err;
    }
    ep->rx = m;
    ep->rx_ring_fd = rfd;
    ep->my_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ep->my_efd < 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "shm: eventfd: %s",
                          strerror(errno));
        goto err;
    }
    *out = ep;
    return RF_OK;
err:
    ep->sock = -1; /* still the caller's */
    shm_ep_free(ep);
    return st;
}

rf_status shm_ep_attach(shm_ep *ep, int ring_fd, int efd)
{
    rf_status st = RF_OK;
    if (!shm_fd_usable(ring_fd, SHM_RING_BYTES)) {
        st = rf_error_set(RF_ERR_UNAVAILABLE,
                          "shm: the peer's ring is not a sealed memfd of at "
                          "least %zu bytes",
                          (size_t)SHM_RING_BYTES);
    } else {
        void *m = mmap(NULL, SHM_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                       ring_fd, 0);
        if (m == MAP_FAILED)
            st = rf_error_set(RF_ERR_NO_MEMORY,
                              "shm: mapping the peer's ring: %s",
                              strerror(errno));
        else
            ep->tx = m;
    }
    close(ring_fd);
    if (st != RF_OK) {
        close(efd);
        return st;
    }
    ep->peer_efd = efd;
    return RF_OK;
}

static void unmap_peer(shm_ep *ep)
{
    for (uint32_t i = 0; i < ep->npsegs; i++)
        munmap(ep->psegs[i].map, ep->psegs[i].len);
    free(ep->psegs);
    ep->psegs = NULL;
    ep->npsegs = ep->psegs_cap = 0;
    free(ep->pseg_slot);
    ep->pseg_slot = NULL;
    ep->pseg_mask = 0;
    if (ep->peer_table)
        munmap((void *)ep->peer_table, SHM_TABLE_BYTES);
    ep->peer_table = NULL;
}

void shm_ep_free(shm_ep *ep)
{
    unmap_peer(ep);
    if (ep->rx)
        munmap(ep->rx, SHM_RING_BYTES);
    if (ep->tx)
        munmap(ep->tx, SHM_RING_BYTES);
    if (ep->rx_ring_fd >= 0)
        close(ep->rx_ring_fd);
    if (ep->my_efd >= 0)
        close(ep->my_efd);
    if (ep->peer_efd >= 0)
        close(ep->peer_efd);
    if (ep->sock >= 0)
        close(ep->sock);
    free(ep->sq);
    free(ep->rq);
    free(ep);
}

rf_status shm_ep_register(shm_ep *ep, int gated)
{
    shm_fabric *fab = ep->fab;
    pthread_mutex_lock(&fab->mu);
    ep->id = fab->next_ep_id++;
    ep->next = fab->eps;
    fab->eps = ep;
    rf_spin_lock(&ep->lock);
    rf_status st = gated ? RF_OK : shm_grant(ep);
    rf_spin_unlock(&ep->lock);
    pthread_mutex_unlock(&fab->mu);
    return st;
}

rf_status shm_ep_watch(shm_ep *ep)
{
    shm_fabric *fab = ep->fab;
    pthread_mutex_lock(&fab->mu);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP,
                             .data.u64 = ep->id << 1};
    struct epoll_event ev2 = {.events = EPOLLIN, .data.u64 = ep->id << 1 | 1};
    rf_status st = RF_OK;
    if (epoll_ctl(fab->epfd, EPOLL_CTL_ADD, ep->sock, &ev) != 0 ||
        epoll_ctl(fab->epfd, EPOLL_CTL_ADD, ep->my_efd, &ev2) != 0)
        st = rf_error_set(RF_ERR_NO_RESOURCE, "shm: epoll_ctl: %s",
                          strerror(errno));
    pthread_mutex_unlock(&fab->mu);
    shm_fab_wake(fab);
    return st;
}

rf_status shm_ep_handshake_wait(shm_ep *ep, int type, int64_t deadline)
{
    for (;;) {
        shm_msg m;
        int fds[2], nfds = 0;
        int r = shm_msg_wait(ep->sock, &m, fds, 2, &nfds, deadline);
        if (r == -ETIMEDOUT)
            return rf_error_set(RF_ERR_TIMEOUT,
                                "shm: handshake with %s timed out", ep->peer);
        if (r != 1)
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "shm: %s closed the connection during the "
                                "handshake",
                                ep->peer);
        if (m.type == type && nfds == 0)
            return RF_OK;
        if (m.type != SHM_MSG_TABLE && m.type != SHM_MSG_SEG) {
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "shm: unexpected message %d from %s during "
                                "the handshake",
                                (int)m.type, ep->peer);
        }
        rf_spin_lock(&ep->lock);
        shm_ep_handle(ep, &m, fds, nfds);
        int bad = ep->state != SHM_EP_OK;
        rf_spin_unlock(&ep->lock);
        if (bad)
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "shm: bad handshake message from %s", ep->peer);
    }
}

static rf_completion completion_of(shm_ep *ep, const rf_wr *wr, rf_status st)
{
    return (rf_completion){.context = wr->context,
                           .ep = rf_ep_public(&ep->base),
                           .op = wr->op,
                           .status = st,
                           .len = st == RF_OK ? (uint32_t)wr->len : 0};
}

void shm_ep_complete(shm_ep *ep, const rf_wr *wr, rf_status st)
{
    if (st == RF_OK && (wr->flags & RF_WR_UNSIGNALED))
        return;
    rf_completion c = completion_of(ep, wr, st);
    shm_cq_push((shm_cq *)ep->base.send_cq, &c);
}

void shm_ep_complete_inline(shm_ep *ep, const rf_wr *wr)
{
    if (wr->flags & RF_WR_UNSIGNALED)
        return;
    rf_completion c = completion_of(ep, wr, RF_OK);
    shm_cq_push_inline((shm_cq *)ep->base.send_cq, &c);
}

void shm_ep_fail(shm_ep *ep, rf_status head_status, int notify,
                 rf_status peer_status, const char *why)
{
    if (ep->state != SHM_EP_OK)
        return;
    /* A message the receiver acknowledged was delivered: it completes
     * RF_OK even if the peer closed or failed right after (as an RC ACK
     * that arrived before the error). */
    if (shm_ep_take_ack(ep))
        head_status = RF_OK;
    ep->state = SHM_EP_ERROR;
    RF_LOG_INFO("shm: endpoint to %s enters the error state: %s", ep->peer,
                why);
    if (notify)
        (void)shm_msg_send(ep->sock, SHM_MSG_ERR, (uint32_t)peer_status, 0,
                           NULL, 0, NULL, 0);
    for (uint32_t i = 0; i < ep->sq_count; i++) {
        shm_wqe *w = &ep->sq[(ep->sq_head + i) % ep->sq_cap];
        shm_ep_complete(ep, &w->wr,
                        i == 0 && head_status != RF_OK ? head_status
                                                       : RF_ERR_DISCONNECTED);
    }
    ep->sq_count = 0;
    for (uint32_t i = 0; i < ep->rq_count; i++) {
        shm_rqe *r = &ep->rq[(ep->rq_head + i) % ep->rq_cap];
        rf_completion c = {.context = r->context,
                           .ep = rf_ep_public(&ep->base),
                           .op = RF_OP_RECV,
                           .status = RF_ERR_DISCONNECTED};
        shm_cq_push((shm_cq *)ep->base.recv_cq, &c);
    }
    ep->rq_count = 0;
    ep->rx_active = 0;
    ep->rnr_since = 0;
}

/* The peer's segments are found by id through an open-addressing index
 * (pseg_slot: psegs index + 1, 0 empty; at least twice as many slots as
 * segments, so a lookup probes a slot or two whatever the number of
 * segments). Ids are the peer's: they are mixed with a seed of this
 * endpoint before hashing. */
static uint32_t pseg_hash(const shm_ep *ep, uint32_t id)
{
    uint64_t h = ((uint64_t)id ^ ep->pseg_seed) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & ep->pseg_mask;
}

static shm_peer_seg *find_pseg(shm_ep *ep, uint32_t id)
{
    if (!ep->pseg_slot)
        return NULL;
    for (uint32_t i = pseg_hash(ep, id);; i = (i + 1) & ep->pseg_mask) {
        uint32_t v = ep->pseg_slot[i];
        if (v == 0)
            return NULL;
        if (ep->psegs[v - 1].id == id)
            return &ep->psegs[v - 1];
    }
}

/* Rebuilds the index for psegs_cap segments. 0 if no memory (the old index
 * is kept). */
static int pseg_reindex(shm_ep *ep)
{
    uint32_t nslots = 2 * ep->psegs_cap;
    uint32_t *slot = calloc(nslots, sizeof *slot);
    if (!slot)
        return 0;
    free(ep->pseg_slot);
    ep->pseg_slot = slot;
    ep->pseg_mask = nslots - 1;
    for (uint32_t k = 0; k < ep->npsegs; k++) {
        uint32_t i = pseg_hash(ep, ep->psegs[k].id);
        while (slot[i])
            i = (i + 1) & ep->pseg_mask;
        slot[i] = k + 1;
    }
    return 1;
}

static void on_table(shm_ep *ep, int fd)
{
    if (ep->peer_table || !shm_fd_usable(fd, SHM_TABLE_BYTES)) {
        close(fd);
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "bad region table message from the peer");
        return;
    }
    void *m = mmap(NULL, SHM_TABLE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "cannot map the peer's region table");
        return;
    }
    ep->peer_table = m;
}

static void on_seg(shm_ep *ep, uint32_t id, uint64_t len, int fd)
{
    if (find_pseg(ep, id)) { /* announced again (another region) */
        close(fd);
        return;
    }
    if (ep->npsegs >= SHM_MAX_PEER_SEGS || len == 0 || len > SHM_MAX_SEG_LEN ||
        !shm_fd_usable(fd, len)) {
        close(fd);
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "the peer announced a segment beyond this process's "
                    "limits");
        return;
    }
    if (ep->npsegs == ep->psegs_cap) {
        uint32_t ncap = ep->psegs_cap ? ep->psegs_cap * 2 : 8;
        shm_peer_seg *n = realloc(ep->psegs, ncap * sizeof *n);
        if (!n) {
            close(fd);
            shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED, "out of memory");
            return;
        }
        ep->psegs = n;
        uint32_t ocap = ep->psegs_cap;
        ep->psegs_cap = ncap;
        if (!pseg_reindex(ep)) {
            ep->psegs_cap = ocap;
            close(fd);
            shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED, "out of memory");
            return;
        }
    }
    void *m =
        mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "cannot map a segment of the peer");
        return;
    }
    ep->psegs[ep->npsegs++] = (shm_peer_seg){.id = id, .len = len, .map = m};
    uint32_t i = pseg_hash(ep, id);
    while (ep->pseg_slot[i])
        i = (i + 1) & ep->pseg_mask;
    ep->pseg_slot[i] = ep->npsegs;
}

static void on_seg_gone(shm_ep *ep, uint32_t id)
{
    shm_peer_seg *s = find_pseg(ep, id);
    if (!s)
        return;
    munmap(s->map, s->len);
    *s = ep->psegs[--ep->npsegs];
    /* Rare (a region freed for good): rebuild in place, no allocation. */
    memset(ep->pseg_slot, 0, (ep->pseg_mask + 1) * sizeof *ep->pseg_slot);
    for (uint32_t k = 0; k < ep->npsegs; k++) {
        uint32_t i = pseg_hash(ep, ep->psegs[k].id);
        while (ep->pseg_slot[i])
            i = (i + 1) & ep->pseg_mask;
        ep->pseg_slot[i] = k + 1;
    }
}

/* Acceptor side, progress thread (fab->mu and ep->lock held). */
static void on_ready(shm_ep *ep, int *fds)
{
    if (ep->hs != SHM_HS_WAIT_READY) {
        close(fds[0]);
        close(fds[1]);
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "READY outside the handshake");
        return;
    }
    if (shm_ep_attach(ep, fds[0], fds[1]) != RF_OK) {
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED, rf_error_message());
        return;
    }
    if (!ep->gated && !ep->granted && shm_grant(ep) != RF_OK)
        return; /* failed the endpoint */
    if (shm_msg_send(ep->sock, SHM_MSG_ESTABLISHED, 0, 0, NULL, 0, NULL, 0)) {
        shm_ep_fail(ep, RF_OK, 0, RF_OK, "the connector went away");
        return;
    }
    ep->hs = SHM_HS_WAIT_DONE;
}

void shm_ep_handle(shm_ep *ep, const shm_msg *mp, int *fds, int nfds)
{
    shm_msg m = *mp;
    int want = m.type == SHM_MSG_TABLE || m.type == SHM_MSG_SEG;
    if (m.type == SHM_MSG_READY)
        want = 2;
    if (nfds != want) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "control message with the wrong descriptors");
        return;
    }
    if (ep->state != SHM_EP_OK) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        return;
    }
    switch (m.type) {
    case SHM_MSG_TABLE:
        on_table(ep, fds[0]);
        break;
    case SHM_MSG_SEG:
        on_seg(ep, m.a, m.c, fds[0]);
        break;
    case SHM_MSG_SEG_GONE:
        on_seg_gone(ep, m.a);
        break;
    case SHM_MSG_READY:
        on_ready(ep, fds);
        break;
    case SHM_MSG_DONE:
        if (ep->hs != SHM_HS_WAIT_DONE)
            shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                        "DONE outside the handshake");
        else
            ep->hs = SHM_HS_UP;
        break;
    case SHM_MSG_ERR: {
        rf_status st = (rf_status)(int32_t)m.a;
        (void)shm_ep_take_ack(ep);
        int inflight = ep->sq_count > 0 && ep->sq[ep->sq_head].inflight;
        if (st >= 0 || st < -100)
            st = RF_ERR_DISCONNECTED;
        shm_ep_fail(ep, inflight ? st : RF_OK, 0, RF_OK,
                    "the peer reported an error on this connection");
        break;
    }
    default:
        shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                    "unexpected control message");
    }
}

void shm_ep_drain(shm_ep *ep)
{
    for (int guard = 0; guard < 4096; guard++) {
        shm_msg m;
        int fds[2], nfds = 0;
        int r = shm_msg_recv(ep->sock, &m, fds, 2, &nfds);
        if (r == -EAGAIN)
            return;
        if (r <= 0) {
            if (ep->state == SHM_EP_OK)
                shm_ep_fail(ep, RF_OK, 0, RF_OK,
                            r == 0 ? "the peer closed the connection "
                                     "(process exited or endpoint closed)"
                                   : "bad control message from the peer");
            /* Nothing more will come: stop watching the socket. */
            epoll_ctl(ep->fab->epfd, EPOLL_CTL_DEL, ep->sock, NULL);
            return;
        }
        shm_ep_handle(ep, &m, fds, nfds);
    }
}

int shm_ep_hung_up(const shm_ep *ep)
{
    /* Only looks: handling messages here could unmap (SEG_GONE) the
     * segment a copy is using, and the caller may not hold ep->lock. */
    struct pollfd p = {.fd = ep->sock, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    return (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

/* Looks the peer segment up (used by shm_post.c through shm_ep_drain). */
shm_peer_seg *shm_ep_pseg(shm_ep *ep, uint32_t id)
{
    shm_peer_seg *s = find_pseg(ep, id);
    if (!s) {
        shm_ep_drain(ep);
        s = find_pseg(ep, id);
    }
    return s;
}

void shm_ep_close(rf_ep *base)
{
    shm_ep *ep = (shm_ep *)base;
    shm_fabric *fab = ep->fab;
    pthread_mutex_lock(&fab->mu);
    for (shm_ep **p = &fab->eps; *p; p = &(*p)->next) {
        if (*p == ep) {
            *p = ep->next;
            break;
        }
    }
    epoll_ctl(fab->epfd, EPOLL_CTL_DEL, ep->sock, NULL);
    epoll_ctl(fab->epfd, EPOLL_CTL_DEL, ep->my_efd, NULL);
    rf_spin_lock(&ep->lock);
    shm_ep_fail(ep, RF_OK, 0, RF_OK, "closed");
    rf_spin_unlock(&ep->lock);
    pthread_mutex_unlock(&fab->mu);
    shm_ep_free(ep); /* closing the socket tells the peer */
}

rf_status shm_ep_state(const rf_ep *base)
{
    shm_ep *ep = (shm_ep *)base;
    rf_spin_lock(&ep->lock);
    int s = ep->state;
    rf_spin_unlock(&ep->lock);
    return s == SHM_EP_OK ? RF_OK : RF_ERR_DISCONNECTED;
}

rf_status shm_ep_enable_remote_access(rf_ep *base)
{
    shm_ep *ep = (shm_ep *)base;
    shm_fabric *fab = ep->fab;
    pthread_mutex_lock(&fab->mu);
    rf_spin_lock(&ep->lock);
    rf_status st = RF_OK;
    if (ep->state != SHM_EP_OK)
        st = rf_error_set(RF_ERR_DISCONNECTED,
                          "rf_ep_enable_remote_access: endpoint to %s has "
                          "failed",
                          ep->peer);
    else if (!ep->granted)
        st = shm_grant(ep);
    rf_spin_unlock(&ep->lock);
    pthread_mutex_unlock(&fab->mu);
    return st;
}
