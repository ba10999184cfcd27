/* fabric/sock/sock_rx.c: an endpoint's receive side (progress thread).
 * Reads into a fixed per-connection buffer, decodes and validates each
 * frame header, hands requests to the target code and matches replies, in
 * order, to the oldest outstanding work request (initiator side). Large
 * payloads are received straight into their destination. Any protocol
 * violation drops the connection. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "fabric/sock/sock_dma.h"

/* Payload at least this large, with nothing buffered, is received directly
 * into its destination. */
#define DIRECT_MIN (16 * 1024)
/* Bytes read per service call, so one busy peer cannot starve others. */
#define RX_BUDGET (4u * 1024 * 1024)

void sock_rx_protocol_error(sock_ep *ep, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    RF_LOG_ERRORF("sock: protocol error from %s: %s; dropping the connection",
                  ep->peer, why);
    sock_ep_fail(ep, RF_ERR_DISCONNECTED, "protocol error: %s", why);
    sock_ep_sock_dead(ep);
}

static uint8_t reply_for(uint8_t op)
{
    switch (op) {
    case RF_OP_READ:
        return RF_SOCK_READ_RESP;
    case RF_OP_FETCH_ADD:
    case RF_OP_CMP_SWAP:
        return RF_SOCK_ATOMIC_RESP;
    default:
        return RF_SOCK_ACK;
    }
}

static void reply_done(sock_ep *ep, rf_status st)
{
    sock_ep_complete_head(ep, st);
    if (st != RF_OK)
        sock_ep_fail(ep, st, "the peer reported %s for a work request",
                     rf_status_string(st));
    else if (ep->wr_sent < ep->wr_tail)
        sock_post_release_fenced(ep);
}

/* A reply to our oldest outstanding request. */
static void on_reply(sock_ep *ep, const rf_sock_hdr *h)
{
    if (ep->wr_head == ep->wr_sent) {
        sock_rx_protocol_error(ep, "%s with no request outstanding",
                               rf_sock_op_name(h->op));
        return;
    }
    sock_wr *w = &ep->wrs[ep->wr_head % ep->max_wr];
    if (h->op != reply_for(w->op)) {
        sock_rx_protocol_error(ep, "%s does not answer the oldest request",
                               rf_sock_op_name(h->op));
        return;
    }
    rf_status st = (rf_status)rf_sock_hdr_status(h);
    if (st != RF_OK) {
        reply_done(ep, st);
        return;
    }
    switch (h->op) {
    case RF_SOCK_READ_RESP:
        if (h->len != w->len) {
            sock_rx_protocol_error(ep, "READ_RESP of %u bytes for a read of %u",
                                   h->len, w->len);
            return;
        }
        if (h->len == 0) {
            reply_done(ep, RF_OK);
            return;
        }
        ep->rx_phase = RX_PAYLOAD;
        ep->rx_sink = SINK_INIT_READ;
        ep->rx_dst = w->local;
        ep->rx_left = h->len;
        return;
    case RF_SOCK_ATOMIC_RESP:
        memcpy(w->local, &h->addr, sizeof h->addr);
        reply_done(ep, RF_OK);
        return;
    default:
        reply_done(ep, RF_OK);
        return;
    }
}

static void on_header(sock_ep *ep, const rf_sock_hdr *h)
{
    if (rf_sock_op_is_request(h->op)) {
        sock_tgt_request(ep, h);
        return;
    }
    if (h->op == RF_SOCK_ERROR) {
        rf_status why = (rf_status)rf_sock_hdr_status(h);
        sock_ep_fail(ep, RF_ERR_DISCONNECTED,
                     "the peer entered the error state (%s)",
                     rf_status_string(why));
        return;
    }
    on_reply(ep, h);
}

void sock_rx_payload_done(sock_ep *ep)
{
    if (ep->rx_sink == SINK_INIT_READ) {
        ep->rx_phase = RX_HDR;
        ep->rx_sink = SINK_NONE;
        ep->rx_dst = NULL;
        reply_done(ep, RF_OK);
        return;
    }
    sock_tgt_payload_done(ep);
}

/* Handles what is buffered; stops when more input is needed, the
 * connection waits for a receive, or it left the open phase. */
static void consume(sock_ep *ep)
{
    while (ep->phase == SOCK_OPEN && ep->fd >= 0) {
        size_t avail = ep->rx_end - ep->rx_start;
        if (ep->rx_phase == RX_HDR) {
            if (avail < RF_SOCK_HDR_SIZE)
                return;
            rf_sock_hdr h;
            rf_sock_parse p =
                rf_sock_hdr_decode(ep->rxbuf + ep->rx_start, avail, &h);
            if (p != RF_SOCK_PARSE_OK) {
                const unsigned char *b = ep->rxbuf + ep->rx_start;
                sock_rx_protocol_error(ep,
                                       "bad frame header (%s; first bytes "
                                       "%02x %02x %02x %02x)",
                                       rf_sock_parse_string(p), b[0], b[1],
                                       b[2], b[3]);
                return;
            }
            ep->rx_start += RF_SOCK_HDR_SIZE;
            on_header(ep, &h);
        } else if (ep->rx_phase == RX_PAYLOAD) {
            if (avail == 0)
                return;
            size_t n = avail < ep->rx_left ? avail : ep->rx_left;
            if (ep->rx_sink != SINK_DISCARD) {
                SOCK_DMA_BEGIN();
                memcpy(ep->rx_dst, ep->rxbuf + ep->rx_start, n);
                SOCK_DMA_END();
                ep->rx_dst += n;
            }
            ep->rx_start += n;
            ep->rx_left -= n;
            if (ep->rx_left == 0)
                sock_rx_payload_done(ep);
        } else if (ep->rx_phase == RX_WAIT_READS) {
            sock_tgt_resume(ep);
            if (ep->rx_phase == RX_WAIT_READS)
                return;
        } else {
            return; /* RX_WAIT_RECV */
        }
    }
}

static void peer_gone(sock_ep *ep, ssize_t n, int err)
{
    if (n == 0)
        sock_ep_fail(ep, RF_ERR_DISCONNECTED, "the peer closed the connection");
    else
        sock_ep_fail(ep, RF_ERR_DISCONNECTED, "connection lost: %s",
                     strerror(err));
    sock_ep_sock_dead(ep);
}

/* Error state: discard input until EOF (then close) or nothing is left. */
static void drain(sock_ep *ep)
{
    ep->rx_start = ep->rx_end = 0;
    for (size_t total = 0; ep->fd >= 0 && total < RX_BUDGET;) {
        ssize_t n = recv(ep->fd, ep->rxbuf, SOCK_RXBUF_SIZE, MSG_DONTWAIT);
        sock_count(&ep->fab->n_recv);
        if (n > 0) {
            total += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        sock_ep_sock_dead(ep);
    }
}

/* Returns the number of bytes read. A read that returns less than it asked
 * for took all the socket had: what was read is handled and the loop ends
 * without a second read that would only find nothing (every reader polls
 * the socket level-triggered, so later bytes are seen), i.e. one system
 * call per message. */
static size_t rx_loop(sock_ep *ep)
{
    size_t budget = RX_BUDGET;
    int emptied = 0;
    while (ep->fd >= 0) {
        if (ep->phase != SOCK_OPEN) {
            drain(ep);
            return RX_BUDGET - budget;
        }
        consume(ep);
        if (ep->fd < 0 || ep->phase != SOCK_OPEN)
            continue;
        if (ep->rx_phase == RX_WAIT_RECV || ep->rx_phase == RX_WAIT_READS ||
            budget == 0 || emptied)
            return RX_BUDGET - budget;
        if (ep->rx_start == ep->rx_end)
            ep->rx_start = ep->rx_end = 0;
        ssize_t n;
        if (ep->rx_phase == RX_PAYLOAD && ep->rx_sink != SINK_DISCARD &&
            ep->rx_start == ep->rx_end && ep->rx_left >= DIRECT_MIN) {
            size_t want = ep->rx_left < budget ? ep->rx_left : budget;
            SOCK_DMA_BEGIN();
            n = recv(ep->fd, ep->rx_dst, want, MSG_DONTWAIT);
            SOCK_DMA_END();
            sock_count(&ep->fab->n_recv);
            if (n > 0) {
                emptied = (size_t)n < want;
                ep->rx_dst += n;
                ep->rx_left -= (size_t)n;
                budget -= (size_t)n;
                if (ep->rx_left == 0)
                    sock_rx_payload_done(ep);
                continue;
            }
        } else {
            if (ep->rx_start > 0 &&
                SOCK_RXBUF_SIZE - ep->rx_end < RF_SOCK_HDR_SIZE) {
                memmove(ep->rxbuf, ep->rxbuf + ep->rx_start,
                        ep->rx_end - ep->rx_start);
                ep->rx_end -= ep->rx_start;
                ep->rx_start = 0;
            }
            size_t want = SOCK_RXBUF_SIZE - ep->rx_end;
            n = recv(ep->fd, ep->rxbuf + ep->rx_end, want, MSG_DONTWAIT);
            sock_count(&ep->fab->n_recv);
            if (n > 0) {
                emptied = (size_t)n < want;
                ep->rx_end += (size_t)n;
                budget = (size_t)n < budget ? budget - (size_t)n : 0;
                continue;
            }
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return RX_BUDGET - budget;
        peer_gone(ep, n, errno);
        return RX_BUDGET - budget;
    }
    return RX_BUDGET - budget;
}

void sock_rx_run(sock_ep *ep)
{
    if (rx_loop(ep) > 0)
        ep->progress_ms = rf_now_ms();
}
