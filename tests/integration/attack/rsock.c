/* tests/integration/attack/rsock.c: the raw sock-protocol peer (see
 * rsock.h): blocking TCP with poll() deadlines, frames encoded and decoded
 * with fabric/sock/sock_frame.h. */
#include "tests/integration/attack/rsock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/sock/sock.h"
#include "rdmaflow/clock.h"

const char *rs_result_name(rs_result r)
{
    switch (r) {
    case RS_OK:
        return "ok";
    case RS_REJECTED:
        return "rejected";
    case RS_CLOSED:
        return "closed by the peer";
    case RS_TIMEOUT:
        return "no answer";
    default:
        return "bad bytes";
    }
}

rs_result rs_tcp(rsock *s, const char *host, uint16_t port, int timeout_ms)
{
    memset(s, 0, sizeof *s);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->fd < 0)
        return RS_BAD;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return RS_BAD;
    if (connect(s->fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (errno != EINPROGRESS)
            return RS_CLOSED;
        struct pollfd p = {.fd = s->fd, .events = POLLOUT};
        if (poll(&p, 1, timeout_ms) != 1)
            return RS_TIMEOUT;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err)
            return RS_CLOSED;
    }
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in l;
    socklen_t ll = sizeof l;
    getsockname(s->fd, (struct sockaddr *)&l, &ll);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &l.sin_addr, ip, sizeof ip);
    snprintf(s->local, sizeof s->local, "%s:%u", ip, ntohs(l.sin_port));
    return RS_OK;
}

/* Reads exactly len bytes by deadline. */
static rs_result read_all(rsock *s, void *buf, size_t len, int64_t deadline)
{
    unsigned char *p = buf;
    while (len) {
        ssize_t n = recv(s->fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return RS_CLOSED;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return RS_CLOSED;
        int left = rf_deadline_left_ms(deadline);
        if (left <= 0)
            return RS_TIMEOUT;
        struct pollfd q = {.fd = s->fd, .events = POLLIN};
        poll(&q, 1, left);
    }
    return RS_OK;
}

rs_result rs_write(rsock *s, const void *buf, size_t len)
{
    rf_status st = sock_net_send_all(s->fd, buf, len, rf_deadline_ms(10000));
    if (st == RF_OK)
        return RS_OK;
    return st == RF_ERR_TIMEOUT ? RS_TIMEOUT : RS_CLOSED;
}

rs_result rs_handshake(rsock *s, const void *priv, size_t len, int timeout_ms)
{
    rf_sock_hs hs = {.type = RF_SOCK_HS_CONNECT,
                     .priv_len = (uint8_t)len,
                     .max_send_wr = 64,
                     .serve_max = 64};
    memcpy(hs.priv, priv, len < RF_SOCK_HS_PRIV ? len : RF_SOCK_HS_PRIV);
    unsigned char buf[RF_SOCK_HS_SIZE];
    rf_sock_hs_encode(&hs, buf);
    rs_result r = rs_write(s, buf, sizeof buf);
    if (r != RS_OK)
        return r;
    r = read_all(s, buf, sizeof buf, rf_deadline_ms(timeout_ms));
    if (r != RS_OK)
        return r;
    rf_sock_hs in;
    if (rf_sock_hs_decode(buf, sizeof buf, &in) != RF_SOCK_PARSE_OK)
        return RS_BAD;
    memcpy(s->priv, in.priv, in.priv_len);
    s->priv_len = in.priv_len;
    if (in.type == RF_SOCK_HS_REJECT)
        return RS_REJECTED;
    return in.type == RF_SOCK_HS_ACCEPT ? RS_OK : RS_BAD;
}

rs_result rs_open(rsock *s, const char *host, uint16_t port, const void *priv,
                  size_t len, int timeout_ms)
{
    rs_result r = rs_tcp(s, host, port, timeout_ms);
    return r == RS_OK ? rs_handshake(s, priv, len, timeout_ms) : r;
}

rs_result rs_frame(rsock *s, const rf_sock_hdr *h, const void *payload)
{
    unsigned char hdr[RF_SOCK_HDR_SIZE];
    rf_sock_hdr_encode(h, hdr);
    rs_result r = rs_write(s, hdr, sizeof hdr);
    if (r == RS_OK && h->len && payload)
        r = rs_write(s, payload, h->len);
    return r;
}

rs_result rs_next(rsock *s, rf_sock_hdr *h, void *payload, size_t cap,
                  size_t *plen, int timeout_ms)
{
    int64_t deadline = rf_deadline_ms(timeout_ms);
    unsigned char hdr[RF_SOCK_HDR_SIZE];
    rs_result r = read_all(s, hdr, sizeof hdr, deadline);
    if (r != RS_OK)
        return r;
    if (rf_sock_hdr_decode(hdr, sizeof hdr, h) != RF_SOCK_PARSE_OK)
        return RS_BAD;
    size_t got = 0;
    unsigned char skip[4096];
    for (uint32_t left = h->len; left;) {
        size_t room = payload && got < cap ? cap - got : 0;
        size_t n = room ? (room < left ? room : left)
                        : (left < sizeof skip ? left : sizeof skip);
        void *to = room ? (unsigned char *)payload + got : skip;
        if ((r = read_all(s, to, n, deadline)) != RS_OK)
            return r;
        if (room)
            got += n;
        left -= (uint32_t)n;
    }
    if (plen)
        *plen = got;
    if (h->op == RF_SOCK_SEND_REQ) {
        s->ps_msgs++;
        rf_sock_hdr ack = {.op = RF_SOCK_ACK};
        rs_frame(s, &ack, NULL);
    }
    return RS_OK;
}

rs_result rs_ps_send(rsock *s, const void *msg, size_t len, int timeout_ms)
{
    rf_sock_hdr h = {.op = RF_SOCK_SEND_REQ, .len = (uint32_t)len};
    rs_result r = rs_frame(s, &h, msg);
    if (r != RS_OK)
        return r;
    for (;;) { /* the ACK, perhaps after a ps message */
        rf_sock_hdr a;
        if ((r = rs_next(s, &a, NULL, 0, NULL, timeout_ms)) != RS_OK)
            return r;
        if (a.op == RF_SOCK_ACK)
            return rf_sock_hdr_status(&a) == 0 ? RS_OK : RS_CLOSED;
        if (a.op == RF_SOCK_ERROR)
            return RS_CLOSED;
    }
}

rs_result rs_ps_recv(rsock *s, void *buf, size_t cap, size_t *len,
                     int timeout_ms)
{
    rf_sock_hdr h;
    rs_result r = rs_next(s, &h, buf, cap, len, timeout_ms);
    if (r != RS_OK)
        return r;
    if (h.op == RF_SOCK_ERROR)
        return RS_CLOSED;
    return h.op == RF_SOCK_SEND_REQ ? RS_OK : RS_BAD;
}

rs_result rs_wait_closed(rsock *s, int timeout_ms)
{
    int64_t deadline = rf_deadline_ms(timeout_ms);
    for (;;) {
        int left = rf_deadline_left_ms(deadline);
        if (left <= 0)
            return RS_TIMEOUT;
        rf_sock_hdr h;
        rs_result r = rs_next(s, &h, NULL, 0, NULL, left);
        if (r == RS_CLOSED || r == RS_BAD)
            return RS_CLOSED; /* bad bytes: not a peer that serves us */
        if (r == RS_TIMEOUT)
            return RS_TIMEOUT;
        if (h.op == RF_SOCK_ERROR) {
            /* the peer's error state: it closes next */
            continue;
        }
    }
}

void rs_close(rsock *s)
{
    if (s->fd > 0)
        close(s->fd);
    s->fd = -1;
}
