/* fabric/sock/sock_net.c: TCP socket helpers for the sock provider: name
 * resolution, connect with a deadline, listening sockets, socket options
 * (TCP_NODELAY, keepalive and TCP_USER_TIMEOUT from RF_PEER_TIMEOUT_MS, the
 * retransmission floor and delayed ACK cap from RF_SOCK_RTO_MIN_US) and
 * whole-buffer send/receive with a deadline on non-blocking sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

static int wait_fd(int fd, short what, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = what};
        int r = poll(&p, 1, rf_deadline_left_ms(deadline));
        if (r > 0)
            return 1;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static void addr_name(const struct sockaddr *sa, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)sa;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
        snprintf(buf, len, "%s:%u", ip, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        port = ntohs(a->sin6_port);
        snprintf(buf, len, "[%s]:%u", ip, port);
    } else {
        snprintf(buf, len, "?");
    }
}

void sock_net_peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        addr_name((struct sockaddr *)&ss, buf, len);
    else
        snprintf(buf, len, "?");
}

rf_status sock_net_connect(const char *host, uint16_t port, int64_t deadline,
                           int *fd_out)
{
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g != 0)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: cannot resolve '%s': %s", host,
                            gai_strerror(g));
    int last_err = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family,
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_err = errno;
            continue;
        }
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r < 0 && errno == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            if (w == 0) {
                close(fd);
                freeaddrinfo(res);
                return rf_error_set(RF_ERR_TIMEOUT,
                                    "rf_connect: connecting to %s:%u timed "
                                    "out",
                                    host, (unsigned)port);
            }
            int err = 0;
            socklen_t el = sizeof err;
            if (w < 0)
                err = errno;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                err = errno;
            r = err ? -1 : 0;
            errno = err;
        }
        if (r == 0) {
            freeaddrinfo(res);
            *fd_out = fd;
            return RF_OK;
        }
        last_err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    return rf_error_set(RF_ERR_UNAVAILABLE, "rf_connect: %s:%u: %s", host,
                        (unsigned)port, strerror(last_err));
}

rf_status sock_net_listen(const char *host, uint16_t port, int *fd_out,
                          uint16_t *port_out)
{
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    const char *node = host;
    if (node && (!*node || strcmp(node, "*") == 0))
        node = NULL;
    struct addrinfo *res = NULL;
    int g = getaddrinfo(node, service, &hints, &res);
    if (g != 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_listen: cannot resolve '%s': %s",
                            host ? host : "", gai_strerror(g));
    int last_err = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family,
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            listen(fd, 512) == 0) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            getsockname(fd, (struct sockaddr *)&ss, &sl);
            *port_out = ss.ss_family == AF_INET6
                            ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                            : ntohs(((struct sockaddr_in *)&ss)->sin_port);
            freeaddrinfo(res);
            *fd_out = fd;
            return RF_OK;
        }
        last_err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    return rf_error_set(last_err == EADDRINUSE ? RF_ERR_UNAVAILABLE : RF_ERR_IO,
                        "rf_listen: %s:%u: %s", host ? host : "*",
                        (unsigned)port, strerror(last_err));
}

/* Linux >= 6.15 (include/uapi/linux/tcp.h); older kernels refuse them. */
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif
#ifndef TCP_DELACK_MAX_US
#define TCP_DELACK_MAX_US 46
#endif

/* A lost segment with nothing sent behind it (the last of a request or a
 * reply: the common case for a request/reply protocol) is found only by the
 * retransmission timer or the tail loss probe, both at least 200 ms by
 * default, where the round trip is tens of microseconds: at 5 % loss that is
 * most of a training step's time. The floor goes down to rto_min_us and the
 * delayed ACK (which the probe waits out) to half of it, so a late ACK is
 * not taken for a loss. Both ends are rdmaflow's, so both set it. The kernel
 * rounds up to its ticks and refuses less than two (8 ms at HZ=250: a
 * warning, the default stays; a delayed ACK cap so refused is tried at
 * rto_min_us); an older kernel refuses both: its defaults stay, as they
 * would with RF_SOCK_RTO_MIN_US=0 (logged at info). */
static void tune_rto(int fd, int rto_min_us)
{
    if (rto_min_us <= 0)
        return;
    if (setsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &rto_min_us,
                   sizeof rto_min_us)) {
        int e = errno;
        RF_LOG_LIMITED(e == EINVAL ? RF_LOG_WARN : RF_LOG_INFO,
                       "sock: RF_SOCK_RTO_MIN_US=%d: TCP_RTO_MIN_US refused "
                       "(%s%s); TCP keeps the kernel's 200 ms floor",
                       rto_min_us, strerror(e),
                       e == EINVAL ? ": under two of the kernel's ticks"
                                   : ": a kernel before Linux 6.15");
        return;
    }
    int delack = rto_min_us / 2;
    if (setsockopt(fd, IPPROTO_TCP, TCP_DELACK_MAX_US, &delack, sizeof delack))
        setsockopt(fd, IPPROTO_TCP, TCP_DELACK_MAX_US, &rto_min_us,
                   sizeof rto_min_us);
}

void sock_net_tune(int fd, int peer_timeout_ms, int rto_min_us)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    /* A silent peer: keepalive probes after a third of the timeout, dropped
     * after about the timeout; unacknowledged data likewise. */
    int secs = peer_timeout_ms / 3000;
    if (secs < 1)
        secs = 1;
    int cnt = 2;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof secs);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &secs, sizeof secs);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    unsigned int ut = (unsigned int)peer_timeout_ms;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
    tune_rto(fd, rto_min_us);
}

rf_status sock_net_send_all(int fd, const void *buf, size_t len,
                            int64_t deadline)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = wait_fd(fd, POLLOUT, deadline);
            if (w == 0)
                return rf_error_set(RF_ERR_TIMEOUT, "sock: send timed out");
            if (w > 0)
                continue;
        }
        return rf_error_set(RF_ERR_UNAVAILABLE, "sock: send failed: %s",
                            strerror(errno));
    }
    return RF_OK;
}

rf_status sock_net_recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "sock: connection closed by the peer");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(fd, POLLIN, deadline);
            if (w == 0)
                return rf_error_set(RF_ERR_TIMEOUT, "sock: no answer in time");
            if (w > 0)
                continue;
        }
        return rf_error_set(RF_ERR_UNAVAILABLE, "sock: receive failed: %s",
                            strerror(errno));
    }
    return RF_OK;
}
