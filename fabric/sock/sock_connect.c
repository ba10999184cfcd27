/* fabric/sock/sock_connect.c: rf_connect for the sock provider. Connects
 * with a deadline, sends the CONNECT handshake with the private data and
 * waits for ACCEPT (its private data becomes the endpoint's peer data) or
 * REJECT. Refused, rejected, closed during the handshake or not an rdmaflow
 * listener: RF_ERR_UNAVAILABLE; deadline passed: RF_ERR_TIMEOUT. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

/* "n bytes: 0a1b..." for the error message of a reject. */
static void describe_priv(const rf_sock_hs *hs, char *buf, size_t len)
{
    int k = snprintf(buf, len, "%u bytes of private data", hs->priv_len);
    if (hs->priv_len && k > 0 && (size_t)k < len) {
        size_t at = (size_t)k;
        at += (size_t)snprintf(buf + at, len - at, ":");
        for (unsigned i = 0; i < hs->priv_len && at + 3 < len; i++)
            at += (size_t)snprintf(buf + at, len - at, " %02x", hs->priv[i]);
    }
}

rf_status sock_connect(rf_fabric *fabric, const char *host, uint16_t port,
                       const rf_ep_attr *attr, const void *priv,
                       size_t priv_len, int timeout_ms, rf_ep **out)
{
    sock_fabric *fab = SOCK_FAB(fabric);
    uint32_t max_wr, max_recv;
    rf_status st = sock_ep_check_attr(attr, &max_wr, &max_recv);
    if (st != RF_OK)
        return st;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    int fd;
    st = sock_net_connect(host, port, deadline, &fd);
    if (st != RF_OK)
        return st;

    rf_sock_hs hs = {.type = RF_SOCK_HS_CONNECT,
                     .max_send_wr = max_wr,
                     .serve_max = fab->serve_max,
                     .priv_len = (uint8_t)priv_len};
    if (priv_len)
        memcpy(hs.priv, priv, priv_len);
    unsigned char buf[RF_SOCK_HS_SIZE];
    rf_sock_hs_encode(&hs, buf);
    st = sock_net_send_all(fd, buf, sizeof buf, deadline);
    if (st == RF_OK)
        st = sock_net_recv_all(fd, buf, sizeof buf, deadline);
    if (st != RF_OK) {
        char cause[128];
        snprintf(cause, sizeof cause, "%s", rf_error_message());
        close(fd);
        if (st == RF_ERR_TIMEOUT)
            return rf_error_set(RF_ERR_TIMEOUT,
                                "rf_connect: %s:%u did not answer within %d "
                                "ms",
                                host, (unsigned)port, timeout_ms);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: %s:%u closed the connection during "
                            "the handshake (%s)",
                            host, (unsigned)port, cause);
    }
    rf_sock_hs in;
    rf_sock_parse p = rf_sock_hs_decode(buf, sizeof buf, &in);
    if (p == RF_SOCK_PARSE_VERSION) {
        close(fd);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: %s:%u speaks sock protocol version "
                            "%u, this side %u",
                            host, (unsigned)port, in.version,
                            RF_SOCK_HS_VERSION);
    }
    if (p != RF_SOCK_PARSE_OK || in.type == RF_SOCK_HS_CONNECT) {
        close(fd);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: %s:%u is not an rdmaflow sock "
                            "listener (%s)",
                            host, (unsigned)port,
                            p != RF_SOCK_PARSE_OK ? rf_sock_parse_string(p)
                                                  : "unexpected CONNECT");
    }
    if (in.type == RF_SOCK_HS_REJECT) {
        close(fd);
        rf_set_reject_data(in.priv, in.priv_len);
        char what[256];
        describe_priv(&in, what, sizeof what);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: %s:%u rejected the connection (%s)",
                            host, (unsigned)port, what);
    }
    sock_ep *ep;
    st = sock_ep_create(fab, fd, attr, in.priv, in.priv_len, in.max_send_wr,
                        in.serve_max, &ep);
    if (st != RF_OK)
        return st;
    *out = &ep->base;
    return RF_OK;
}
