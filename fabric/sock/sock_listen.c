/* fabric/sock/sock_listen.c: sock listeners. The progress thread accepts TCP
 * connections and reads each one's handshake with a deadline
 * (RF_SOCK_HANDSHAKE_TIMEOUT_MS, default 5000): garbage, a wrong magic or
 * version, a truncated or never finished handshake drops that connection
 * only. Valid connection requests queue on the listener for
 * rf_listener_get_request; accept and reject answer with a handshake frame
 * carrying the reply's private data. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

static void listener_unref(sock_listener *l)
{
    pthread_mutex_lock(&l->mu);
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (last) {
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cond);
        free(l);
    }
}

rf_status sock_listen(rf_fabric *fabric, const char *host, uint16_t port,
                      rf_listener **out)
{
    sock_fabric *fab = SOCK_FAB(fabric);
    int fd;
    uint16_t bound;
    rf_status st = sock_net_listen(host, port, &fd, &bound);
    if (st != RF_OK)
        return st;
    sock_listener *l = calloc(1, sizeof *l);
    if (!l) {
        close(fd);
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_listen: out of memory");
    }
    l->base.fabric = fabric;
    l->base.port = bound;
    l->tag.kind = SOCK_POLL_LISTENER;
    l->fab = fab;
    l->fd = fd;
    l->refs = 1;
    pthread_mutex_init(&l->mu, NULL);
    rf_cond_init_monotonic(&l->cond);

    pthread_mutex_lock(&fab->mu);
    l->next = fab->listeners;
    if (fab->listeners)
        fab->listeners->prev = l;
    fab->listeners = l;
    pthread_mutex_unlock(&fab->mu);

    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->tag};
    if (epoll_ctl(fab->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int e = errno;
        sock_listener_close(&l->base);
        return rf_error_set(RF_ERR_IO, "rf_listen: epoll_ctl: %s", strerror(e));
    }
    RF_LOG_DEBUG("sock: listening on %s port %u", host ? host : "*",
                 (unsigned)bound);
    *out = &l->base;
    return RF_OK;
}

static void free_req(sock_conn_req *r)
{
    sock_listener *l = (sock_listener *)r->base.listener;
    if (r->fd >= 0)
        close(r->fd);
    free(r);
    listener_unref(l);
}

void sock_listener_close(rf_listener *base)
{
    sock_listener *l = (sock_listener *)base;
    sock_fabric *fab = l->fab;
    sock_fab_command(fab, SOCK_CMD_DETACH_LISTENER, l);
    pthread_mutex_lock(&fab->mu);
    if (l->prev)
        l->prev->next = l->next;
    else if (fab->listeners == l)
        fab->listeners = l->next;
    if (l->next)
        l->next->prev = l->prev;
    pthread_mutex_unlock(&fab->mu);

    pthread_mutex_lock(&l->mu);
    l->closed = 1;
    sock_conn_req *list = l->ready_head;
    l->ready_head = l->ready_tail = NULL;
    l->nready = 0;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
    while (list) {
        sock_conn_req *r = list;
        list = r->next;
        free_req(r);
    }
    listener_unref(l);
}

/* --- progress thread: accepting and reading handshakes ----------------- */

static void hs_unlink(sock_fabric *fab, sock_hs *hs)
{
    if (hs->prev)
        hs->prev->next = hs->next;
    else
        fab->hs_list = hs->next;
    if (hs->next)
        hs->next->prev = hs->prev;
    fab->hs_count--;
}

static void hs_drop(sock_fabric *fab, sock_hs *hs)
{
    epoll_ctl(fab->epfd, EPOLL_CTL_DEL, hs->fd, NULL);
    close(hs->fd);
    hs_unlink(fab, hs);
    free(hs);
}

static void send_hs(int fd, uint8_t type, uint32_t max_wr, uint32_t serve_max,
                    const void *priv, size_t priv_len, int64_t deadline,
                    rf_status *st)
{
    rf_sock_hs hs = {.type = type,
                     .max_send_wr = max_wr,
                     .serve_max = serve_max,
                     .priv_len = (uint8_t)priv_len};
    if (priv_len)
        memcpy(hs.priv, priv, priv_len);
    unsigned char buf[RF_SOCK_HS_SIZE];
    rf_sock_hs_encode(&hs, buf);
    rf_status r = sock_net_send_all(fd, buf, sizeof buf, deadline);
    if (st)
        *st = r;
}

void sock_listener_on_event(sock_fabric *fab, sock_listener *l)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                RF_LOG_WARN("sock: accept on port %u: %s",
                            (unsigned)l->base.port, strerror(errno));
            return;
        }
        sock_hs *hs = NULL;
        if (fab->hs_count < SOCK_MAX_HANDSHAKES)
            hs = calloc(1, sizeof *hs);
        if (!hs) {
            RF_LOG_WARN("sock: too many unfinished handshakes on port %u; "
                        "dropping a new connection",
                        (unsigned)l->base.port);
            close(fd);
            continue;
        }
        hs->tag.kind = SOCK_POLL_HS;
        hs->listener = l;
        hs->fd = fd;
        hs->deadline = rf_now_ms() + fab->hs_timeout_ms;
        sock_net_peer_name(fd, hs->peer, sizeof hs->peer);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &hs->tag};
        if (epoll_ctl(fab->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(hs);
            continue;
        }
        hs->next = fab->hs_list;
        if (fab->hs_list)
            fab->hs_list->prev = hs;
        fab->hs_list = hs;
        fab->hs_count++;
        __atomic_store_n(&fab->timers_hint, 1, __ATOMIC_RELAXED);
    }
}

static void hs_complete(sock_fabric *fab, sock_hs *hs)
{
    rf_sock_hs in;
    rf_sock_parse p = rf_sock_hs_decode(hs->buf, hs->got, &in);
    if (p == RF_SOCK_PARSE_VERSION) {
        RF_LOG_WARN("sock: %s speaks sock protocol version %u, this side "
                    "%u; rejecting",
                    hs->peer, in.version, RF_SOCK_HS_VERSION);
        send_hs(hs->fd, RF_SOCK_HS_REJECT, 0, 0, NULL, 0, 0, NULL);
        hs_drop(fab, hs);
        return;
    }
    if (p != RF_SOCK_PARSE_OK || in.type != RF_SOCK_HS_CONNECT) {
        RF_LOG_WARN("sock: dropping connection from %s: bad handshake (%s)",
                    hs->peer,
                    p != RF_SOCK_PARSE_OK ? rf_sock_parse_string(p)
                                          : "not a connect request");
        hs_drop(fab, hs);
        return;
    }
    sock_listener *l = hs->listener;
    sock_conn_req *r = calloc(1, sizeof *r);
    if (!r) {
        hs_drop(fab, hs);
        return;
    }
    r->base.listener = &l->base;
    memcpy(r->base.priv, in.priv, in.priv_len);
    r->base.priv_len = in.priv_len;
    r->fd = hs->fd;
    r->peer_max = in.max_send_wr;
    r->peer_serve = in.serve_max;
    memcpy(r->peer, hs->peer, sizeof r->peer);
    memcpy(r->base.peer, hs->peer, sizeof r->base.peer);
    epoll_ctl(fab->epfd, EPOLL_CTL_DEL, hs->fd, NULL);
    hs_unlink(fab, hs);
    free(hs);

    pthread_mutex_lock(&l->mu);
    if (l->closed || l->nready >= SOCK_MAX_READY) {
        pthread_mutex_unlock(&l->mu);
        RF_LOG_WARN("sock: %u connection requests already wait on port %u; "
                    "rejecting %s",
                    (unsigned)SOCK_MAX_READY, (unsigned)l->base.port, r->peer);
        send_hs(r->fd, RF_SOCK_HS_REJECT, 0, 0, NULL, 0, 0, NULL);
        close(r->fd);
        free(r);
        return;
    }
    l->refs++;
    if (l->ready_tail)
        l->ready_tail->next = r;
    else
        l->ready_head = r;
    l->ready_tail = r;
    l->nready++;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
}

void sock_hs_on_event(sock_fabric *fab, sock_hs *hs)
{
    for (;;) {
        ssize_t n = recv(hs->fd, hs->buf + hs->got, RF_SOCK_HS_SIZE - hs->got,
                         MSG_DONTWAIT);
        if (n > 0) {
            hs->got += (size_t)n;
            if (hs->got == RF_SOCK_HS_SIZE) {
                hs_complete(fab, hs);
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        RF_LOG_INFO("sock: connection from %s closed during the handshake "
                    "(%zu of %d bytes)",
                    hs->peer, hs->got, RF_SOCK_HS_SIZE);
        hs_drop(fab, hs);
        return;
    }
}

int sock_hs_timers(sock_fabric *fab, int64_t now)
{
    sock_hs *hs = fab->hs_list;
    while (hs) {
        sock_hs *next = hs->next;
        if (now >= hs->deadline) {
            RF_LOG_WARN("sock: dropping connection from %s: handshake not "
                        "finished within %d ms (%zu of %d bytes)",
                        hs->peer, fab->hs_timeout_ms, hs->got, RF_SOCK_HS_SIZE);
            hs_drop(fab, hs);
        }
        hs = next;
    }
    return fab->hs_list != NULL;
}

void sock_listener_detach(sock_fabric *fab, sock_listener *l)
{
    if (l->fd >= 0) {
        epoll_ctl(fab->epfd, EPOLL_CTL_DEL, l->fd, NULL);
        close(l->fd);
        l->fd = -1;
    }
    sock_hs *hs = fab->hs_list;
    while (hs) {
        sock_hs *next = hs->next;
        if (hs->listener == l)
            hs_drop(fab, hs);
        hs = next;
    }
}

/* --- requests ------------------------------------------------------------ */

/* The connector gave up (closed) while its request waited. */
static int req_peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 &&
           (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

rf_status sock_get_request(rf_listener *base, int timeout_ms, rf_conn_req **out)
{
    sock_listener *l = (sock_listener *)base;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    pthread_mutex_lock(&l->mu);
    l->refs++; /* a concurrent rf_listener_close must not free it */
    rf_status st = RF_ERR_TIMEOUT;
    for (;;) {
        if (l->closed) {
            st = RF_ERR_UNAVAILABLE;
            break;
        }
        while (l->ready_head) {
            sock_conn_req *r = l->ready_head;
            l->ready_head = r->next;
            if (!l->ready_head)
                l->ready_tail = NULL;
            l->nready--;
            r->next = NULL;
            if (req_peer_gone(r->fd)) {
                pthread_mutex_unlock(&l->mu);
                RF_LOG_INFO("sock: connection request from %s withdrawn",
                            r->peer);
                free_req(r);
                pthread_mutex_lock(&l->mu);
                continue;
            }
            *out = &r->base;
            st = RF_OK;
            break;
        }
        if (st == RF_OK || timeout_ms == 0)
            break;
        if (rf_cond_wait_until(&l->cond, &l->mu, deadline) == ETIMEDOUT)
            timeout_ms = 0; /* one last look */
    }
    pthread_mutex_unlock(&l->mu);
    listener_unref(l);
    if (st == RF_ERR_UNAVAILABLE)
        return rf_error_set(st, "rf_listener_get_request: listener closed");
    if (st != RF_OK)
        return rf_error_set(st, "rf_listener_get_request: no connection "
                                "request in time");
    return RF_OK;
}

rf_status sock_accept(rf_conn_req *base, const rf_ep_attr *attr,
                      const void *priv, size_t priv_len, rf_ep **out)
{
    sock_conn_req *r = (sock_conn_req *)base;
    sock_fabric *fab = SOCK_FAB(base->listener->fabric);
    uint32_t max_wr, max_recv;
    rf_status st = sock_ep_check_attr(attr, &max_wr, &max_recv);
    if (st != RF_OK) {
        sock_reject(base, NULL, 0);
        return st;
    }
    send_hs(r->fd, RF_SOCK_HS_ACCEPT, max_wr, fab->serve_max, priv, priv_len,
            rf_deadline_ms(fab->hs_timeout_ms), &st);
    if (st != RF_OK) {
        free_req(r);
        return rf_error_set(RF_ERR_DISCONNECTED,
                            "rf_accept: the connector went away");
    }
    sock_ep *ep;
    int fd = r->fd;
    r->fd = -1; /* owned by the endpoint (or closed by its creation) */
    st = sock_ep_create(fab, fd, attr, r->base.priv, r->base.priv_len,
                        r->peer_max, r->peer_serve, &ep);
    free_req(r);
    if (st != RF_OK)
        return st;
    *out = &ep->base;
    return RF_OK;
}

void sock_reject(rf_conn_req *base, const void *priv, size_t priv_len)
{
    sock_conn_req *r = (sock_conn_req *)base;
    send_hs(r->fd, RF_SOCK_HS_REJECT, 0, 0, priv, priv_len,
            rf_deadline_ms(1000), NULL);
    free_req(r);
}
