/* fabric/shm/shm_cm.c: connection management of the shm provider. A
 * listener is a Unix SOCK_SEQPACKET socket in the abstract namespace named
 * "rdmaflow-shm-<port>" (a shm listener owns its port on every local
 * address, as a wildcard bind would; port 0 picks a free one in the dynamic
 * range). The host must be an address of this host, else RF_ERR_UNAVAILABLE
 * (same-host only). Handshake, one message each:
 *   connector -> CONNECT(priv)
 *   acceptor  -> ACCEPT(priv) + its receive ring and doorbell fds
 *             or REJECT(priv)
 *   connector -> READY + its receive ring and doorbell fds
 * The peer's credentials (SO_PEERCRED) are logged and name the request.
 * No region, segment or table descriptor is passed before the handshake is
 * complete, and none at all on a gated endpoint until
 * rf_ep_enable_remote_access. A connection that does not send its request
 * within RF_SHM_HANDSHAKE_TIMEOUT_MS is dropped; connections waiting for
 * theirs are kept across rf_listener_get_request calls (at most
 * SHM_MAX_PENDING; more are refused), so a slow or silent connector never
 * makes the call overrun its timeout or delays the others. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/local_addr.h"
#include "fabric/shm/shm.h"

static socklen_t make_name(struct sockaddr_un *sa, uint16_t port)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1,
                     "rdmaflow-shm-%u", (unsigned)port);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* RF_OK if host names an address of this host (or the wildcard). */
static rf_status check_local(const char *what, const char *host)
{
    int local = rf_addr_is_local(host);
    if (local < 0)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "shm: %s: cannot resolve %s: %s", what, host,
                            rf_error_message());
    if (!local)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "shm: %s: %s is not an address of this host; the "
                            "shm provider connects processes on one host only "
                            "(use sock or verbs across hosts)",
                            what, host);
    return RF_OK;
}

/* The peer's credentials, shaped like "address:port" (the user in the place
 * of the address, the pid in that of the port), so that a caller grouping
 * connections by address (the ps admission bound) groups them by user, as
 * every process of a host shares one address on sock. */
static void describe_peer(int fd, char *out, size_t cap)
{
    struct ucred cr;
    socklen_t l = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0)
        snprintf(out, cap, "uid%ld/gid%ld:%ld", (long)cr.uid, (long)cr.gid,
                 (long)cr.pid);
    else
        snprintf(out, cap, "unknown:0");
}

/* --- listener ---------------------------------------------------------------
 */

rf_status shm_listen(rf_fabric *fabric, const char *host, uint16_t port,
                     rf_listener **out)
{
    rf_status st = check_local("rf_listen", host);
    if (st != RF_OK)
        return st;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return rf_error_set(RF_ERR_NO_RESOURCE, "shm: socket: %s",
                            strerror(errno));
    struct sockaddr_un sa;
    uint16_t chosen = port;
    int ok = 0;
    if (port) {
        ok = bind(fd, (struct sockaddr *)&sa, make_name(&sa, port)) == 0;
    } else {
        unsigned seed = (unsigned)getpid() ^ (unsigned)rf_now_ns();
        for (int i = 0; i < 2000 && !ok; i++) {
            seed = seed * 1103515245u + 12345u;
            chosen = (uint16_t)(49152 + (seed >> 8) % 16384);
            ok = bind(fd, (struct sockaddr *)&sa, make_name(&sa, chosen)) == 0;
            if (!ok && errno != EADDRINUSE)
                break;
        }
    }
    if (!ok || listen(fd, 128) != 0) {
        st = rf_error_set(
            errno == EADDRINUSE ? RF_ERR_UNAVAILABLE : RF_ERR_NO_RESOURCE,
            "shm: rf_listen on port %u: %s", (unsigned)port, strerror(errno));
        close(fd);
        return st;
    }
    shm_listener *l = calloc(1, sizeof *l);
    if (!l) {
        close(fd);
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: out of memory");
    }
    l->base.fabric = fabric;
    l->base.port = chosen;
    l->fd = fd;
    RF_LOG_INFO("shm: listening on port %u (abstract socket @rdmaflow-shm-%u)",
                (unsigned)chosen, (unsigned)chosen);
    *out = &l->base;
    return RF_OK;
}

void shm_listener_close(rf_listener *base)
{
    shm_listener *l = (shm_listener *)base;
    for (int i = 0; i < l->npending; i++)
        close(l->pending[i].fd);
    close(l->fd);
    free(l);
}

static void drop_pending(shm_listener *l, int i, const char *why)
{
    RF_LOG_WARN("shm: dropped a connection from %s on port %u: %s",
                l->pending[i].who, (unsigned)l->base.port, why);
    close(l->pending[i].fd);
    l->pending[i] = l->pending[--l->npending];
}

/* Takes every waiting connection into the pending set (bounded). */
static void take_new(shm_listener *l, shm_fabric *fab)
{
    for (;;) {
        int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0)
            return;
        if (l->npending == SHM_MAX_PENDING) {
            char who[64];
            describe_peer(c, who, sizeof who);
            RF_LOG_WARN("shm: refused a connection from %s on port %u: %d "
                        "connections are still in their handshake",
                        who, (unsigned)l->base.port, SHM_MAX_PENDING);
            close(c);
            continue;
        }
        shm_pending *p = &l->pending[l->npending++];
        p->fd = c;
        p->deadline = rf_deadline_ms(fab->hs_timeout_ms);
        describe_peer(c, p->who, sizeof p->who);
    }
}

/* A pending connection's CONNECT, if it arrived: 1 request made, 0 not
 * yet, -1 dropped. */
static int try_pending(shm_listener *l, int i, rf_conn_req **out)
{
    shm_msg m;
    int nfds = 0, fds[1];
    int r = shm_msg_recv(l->pending[i].fd, &m, fds, 0, &nfds);
    if (r == -EAGAIN) {
        if (!rf_deadline_passed(l->pending[i].deadline))
            return 0;
        drop_pending(l, i, "no connect request in time");
        return -1;
    }
    if (r != 1 || m.type != SHM_MSG_CONNECT || m.len > RF_MAX_PRIVATE_DATA) {
        drop_pending(l, i, "not a valid connect request");
        return -1;
    }
    shm_conn_req *req = calloc(1, sizeof *req);
    if (!req) {
        drop_pending(l, i, "out of memory");
        return -1;
    }
    req->base.listener = &l->base;
    req->base.priv_len = m.len;
    memcpy(req->base.priv, m.priv, m.len);
    snprintf(req->base.peer, sizeof req->base.peer, "%s", l->pending[i].who);
    req->fd = l->pending[i].fd;
    RF_LOG_INFO("shm: connection request from %s on port %u", l->pending[i].who,
                (unsigned)l->base.port);
    l->pending[i] = l->pending[--l->npending];
    *out = &req->base;
    return 1;
}

rf_status shm_get_request(rf_listener *base, int timeout_ms, rf_conn_req **out)
{
    shm_listener *l = (shm_listener *)base;
    shm_fabric *fab = (shm_fabric *)base->fabric;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    for (;;) {
        take_new(l, fab);
        int64_t next = deadline;
        for (int i = 0; i < l->npending;) {
            int r = try_pending(l, i, out);
            if (r == 1)
                return RF_OK;
            if (r == 0) {
                if (next == RF_DEADLINE_NONE || l->pending[i].deadline < next)
                    next = l->pending[i].deadline;
                i++;
            }
        }
        if (rf_deadline_passed(deadline))
            return rf_error_set(RF_ERR_TIMEOUT,
                                "rf_listener_get_request: no connection "
                                "request within %d ms",
                                timeout_ms);
        struct pollfd p[1 + SHM_MAX_PENDING];
        p[0] = (struct pollfd){.fd = l->fd, .events = POLLIN};
        for (int i = 0; i < l->npending; i++)
            p[1 + i] =
                (struct pollfd){.fd = l->pending[i].fd, .events = POLLIN};
        int left = rf_deadline_left_ms(next);
        if (poll(p, (nfds_t)(1 + l->npending), left) < 0 && errno != EINTR)
            return rf_error_set(RF_ERR_IO, "shm: poll on the listener: %s",
                                strerror(errno));
    }
}

void shm_reject(rf_conn_req *base, const void *priv, size_t priv_len)
{
    shm_conn_req *req = (shm_conn_req *)base;
    (void)shm_msg_send(req->fd, SHM_MSG_REJECT, 0, 0, priv, priv_len, NULL, 0);
    close(req->fd);
    free(req);
}

rf_status shm_accept(rf_conn_req *base, const rf_ep_attr *attr,
                     const void *priv, size_t priv_len, rf_ep **out)
{
    shm_conn_req *req = (shm_conn_req *)base;
    shm_fabric *fab = (shm_fabric *)base->listener->fabric;
    shm_ep *ep = NULL;
    rf_status st = shm_ep_new(fab, attr, req->fd, base->peer, &ep);
    if (st != RF_OK) {
        shm_reject(base, NULL, 0);
        return st;
    }
    memcpy(ep->base.peer_priv, base->priv, base->priv_len);
    ep->base.peer_priv_len = base->priv_len;
    int fds[2] = {ep->rx_ring_fd, ep->my_efd};
    int e =
        shm_msg_send(ep->sock, SHM_MSG_ACCEPT, 0, 0, priv, priv_len, fds, 2);
    free(req);
    if (e) {
        st = rf_error_set(RF_ERR_DISCONNECTED,
                          "rf_accept: the connector (%s) is gone: %s", ep->peer,
                          strerror(e));
        shm_ep_free(ep);
        return st;
    }
    close(ep->rx_ring_fd);
    ep->rx_ring_fd = -1;
    /* The progress thread finishes the handshake (READY: the connector's
     * ring; grants unless gated; ESTABLISHED; DONE), so a connector that
     * stalls costs this call nothing. Work posted meanwhile waits. */
    ep->hs = SHM_HS_WAIT_READY;
    ep->hs_deadline = rf_deadline_ms(fab->hs_timeout_ms);
    ep->gated = (attr->flags & RF_EP_REMOTE_ACCESS_OFF) != 0;
    st = shm_ep_register(ep, 1);
    if (st == RF_OK)
        st = shm_ep_watch(ep);
    if (st != RF_OK) {
        shm_ep_close(&ep->base);
        return st;
    }
    RF_LOG_INFO("shm: accepted %s%s", ep->peer,
                (attr->flags & RF_EP_REMOTE_ACCESS_OFF) ? " (remote access off)"
                                                        : "");
    *out = &ep->base;
    return RF_OK;
}

rf_status shm_connect(rf_fabric *fabric, const char *host, uint16_t port,
                      const rf_ep_attr *attr, const void *priv, size_t priv_len,
                      int timeout_ms, rf_ep **out)
{
    shm_fabric *fab = (shm_fabric *)fabric;
    rf_status st = check_local("rf_connect", host);
    if (st != RF_OK)
        return st;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return rf_error_set(RF_ERR_NO_RESOURCE, "shm: socket: %s",
                            strerror(errno));
    struct sockaddr_un sa;
    socklen_t sl = make_name(&sa, port);
    for (;;) {
        if (connect(fd, (struct sockaddr *)&sa, sl) == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) { /* listener backlog full: retry */
            if (rf_deadline_passed(deadline)) {
                close(fd);
                return rf_error_set(RF_ERR_TIMEOUT,
                                    "rf_connect: shm listener on port %u is "
                                    "not accepting",
                                    (unsigned)port);
            }
            rf_sleep_ms(1);
            continue;
        }
        int e = errno;
        close(fd);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: no shm listener on %s:%u: %s", host,
                            (unsigned)port, strerror(e));
    }
    char who[64];
    describe_peer(fd, who, sizeof who);
    if (shm_msg_send(fd, SHM_MSG_CONNECT, 0, 0, priv, priv_len, NULL, 0)) {
        close(fd);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: the shm listener on port %u closed",
                            (unsigned)port);
    }
    shm_msg m;
    int nfds = 0, fds[2];
    int r = shm_msg_wait(fd, &m, fds, 2, &nfds, deadline);
    if (r == -ETIMEDOUT) {
        close(fd);
        return rf_error_set(RF_ERR_TIMEOUT,
                            "rf_connect: no answer from the shm listener on "
                            "port %u within %d ms",
                            (unsigned)port, timeout_ms);
    }
    if (r == 1 && m.type == SHM_MSG_REJECT && nfds == 0) {
        close(fd);
        rf_set_reject_data(m.priv, m.len <= RF_MAX_PRIVATE_DATA ? m.len : 0);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: rejected by the listener on port %u "
                            "(%s) with %u bytes of private data",
                            (unsigned)port, who, m.len);
    }
    if (r != 1 || m.type != SHM_MSG_ACCEPT || nfds != 2 ||
        m.len > RF_MAX_PRIVATE_DATA) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        close(fd);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: the shm listener on port %u closed "
                            "the connection or answered badly",
                            (unsigned)port);
    }
    shm_ep *ep = NULL;
    st = shm_ep_new(fab, attr, fd, who, &ep);
    if (st != RF_OK) {
        close(fds[0]);
        close(fds[1]);
        close(fd);
        return st;
    }
    memcpy(ep->base.peer_priv, m.priv, m.len);
    ep->base.peer_priv_len = m.len;
    st = shm_ep_attach(ep, fds[0], fds[1]);
    if (st == RF_OK) {
        int mine[2] = {ep->rx_ring_fd, ep->my_efd};
        if (shm_msg_send(fd, SHM_MSG_READY, 0, 0, NULL, 0, mine, 2))
            st = rf_error_set(RF_ERR_UNAVAILABLE,
                              "rf_connect: the listener (%s) went away", who);
    }
    if (st == RF_OK) {
        close(ep->rx_ring_fd);
        ep->rx_ring_fd = -1;
        st = shm_ep_handshake_wait(ep, SHM_MSG_ESTABLISHED, deadline);
    }
    if (st != RF_OK) {
        shm_ep_free(ep);
        return st;
    }
    st = shm_ep_register(ep, attr->flags & RF_EP_REMOTE_ACCESS_OFF);
    if (st == RF_OK && shm_msg_send(fd, SHM_MSG_DONE, 0, 0, NULL, 0, NULL, 0))
        st = rf_error_set(RF_ERR_UNAVAILABLE,
                          "rf_connect: the listener (%s) went away", who);
    if (st == RF_OK)
        st = shm_ep_watch(ep);
    if (st != RF_OK) {
        shm_ep_close(&ep->base);
        return st;
    }
    RF_LOG_INFO("shm: connected to port %u (%s)", (unsigned)port, who);
    *out = &ep->base;
    return RF_OK;
}
