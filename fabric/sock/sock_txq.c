/* fabric/sock/sock_txq.c: an endpoint's transmit side. Two rings of frames,
 * replies (target side, may point into target regions) and requests
 * (initiator side, point into the poster's local buffers), written with one
 * sendmsg per batch and interleaved only at frame boundaries. A reply that
 * carries a receive completion pushes it when it reaches the head, i.e.
 * after every earlier reply has been written; a blocked reply (send waiting
 * for a receive) holds back later replies but never requests. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "fabric/sock/sock.h"
#include "fabric/sock/sock_dma.h"

#define MAX_BATCH 128

enum { Q_NONE = 0, Q_REP = 1, Q_REQ = 2 };

sock_txi *sock_txq_push(sock_txq *q)
{
    if (q->tail - q->head == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 64;
        sock_txi *n = malloc(ncap * sizeof *n);
        if (!n)
            return NULL;
        for (uint64_t s = q->head; s != q->tail; s++)
            n[s & (ncap - 1)] = q->items[s & (q->cap - 1)];
        free(q->items);
        q->items = n;
        q->cap = ncap;
    }
    sock_txi *t = sock_txq_at(q, q->tail++);
    memset(t, 0, sizeof *t);
    return t;
}

void sock_txq_pop(sock_txq *q)
{
    sock_txi *t = sock_txq_at(q, q->head);
    free(t->owned);
    t->owned = NULL;
    q->head++;
}

void sock_txq_clear(sock_txq *q)
{
    while (!sock_txq_empty(q))
        sock_txq_pop(q);
}

void sock_txq_destroy(sock_txq *q)
{
    sock_txq_clear(q);
    free(q->items);
    q->items = NULL;
    q->cap = 0;
}

int sock_txi_materialize(sock_txi *t)
{
    if (t->data_len == 0 || (t->owned && !t->mr))
        return 0;
    unsigned char *c = malloc(t->data_len);
    if (!c)
        return -1;
    SOCK_DMA_BEGIN();
    memcpy(c, t->data, t->data_len);
    SOCK_DMA_END();
    free(t->owned);
    t->owned = c;
    t->data = c;
    return 0;
}

int sock_tx_pending(const sock_ep *ep)
{
    if (ep->tx_partial || !sock_txq_empty(&ep->req))
        return 1;
    if (sock_txq_empty(&ep->rep))
        return 0;
    const sock_txi *t = &ep->rep.items[ep->rep.head & (ep->rep.cap - 1)];
    return !t->blocked;
}

/* Pops a fully written item, keeping the endpoint's counters. */
static void item_done(sock_ep *ep, int q)
{
    if (q == Q_REP) {
        sock_txi *t = sock_txq_at(&ep->rep, ep->rep.head);
        if (t->mr)
            ep->rep_mr_refs--;
        if (t->is_reply && ep->rep_open > 0)
            ep->rep_open--;
        sock_tgt_reply_sent(ep, t);
        sock_txq_pop(&ep->rep);
    } else {
        sock_txq_pop(&ep->req);
    }
}

/* Pushes the receive completions of replies now at the head. */
static void head_events(sock_ep *ep)
{
    while (!sock_txq_empty(&ep->rep) && ep->tx_partial != Q_REP) {
        sock_txi *t = sock_txq_at(&ep->rep, ep->rep.head);
        if (t->blocked || !t->has_event)
            return;
        t->has_event = 0;
        sock_ep_push_recv_comp(ep, &t->ev);
    }
}

static int add_item(sock_txi *t, struct iovec *iov, int *niov)
{
    if (t->hdr_sent < RF_SOCK_HDR_SIZE) {
        iov[*niov].iov_base = t->hdr + t->hdr_sent;
        iov[*niov].iov_len = RF_SOCK_HDR_SIZE - t->hdr_sent;
        (*niov)++;
    }
    if (t->data_len) {
        iov[*niov].iov_base = (void *)t->data;
        iov[*niov].iov_len = t->data_len;
        (*niov)++;
    }
    return 1;
}

/* Accounts n written bytes to the batch; returns 1 if it all went. */
static int advance(sock_ep *ep, const int *qs, int nq, size_t n)
{
    for (int i = 0; i < nq; i++) {
        sock_txq *q = qs[i] == Q_REP ? &ep->rep : &ep->req;
        sock_txi *t = sock_txq_at(q, q->head);
        size_t h = RF_SOCK_HDR_SIZE - t->hdr_sent;
        size_t k = n < h ? n : h;
        t->hdr_sent = (uint8_t)(t->hdr_sent + k);
        n -= k;
        k = n < t->data_len ? n : t->data_len;
        if (k) {
            t->data += k;
            t->data_len -= k;
            n -= k;
        }
        if (t->hdr_sent == RF_SOCK_HDR_SIZE && t->data_len == 0) {
            ep->tx_partial = Q_NONE;
            item_done(ep, qs[i]);
        } else {
            ep->tx_partial = qs[i];
            return 0;
        }
    }
    return 1;
}

int sock_tx_flush(sock_ep *ep, int allow_rep)
{
    if (ep->fd < 0 || ep->phase == SOCK_DEAD)
        return 0;
    if (!allow_rep && ep->tx_partial == Q_REP)
        return 0; /* only the progress thread may finish that frame */
    for (;;) {
        if (allow_rep)
            head_events(ep);
        struct iovec iov[2 * MAX_BATCH];
        int qs[MAX_BATCH];
        int niov = 0, nq = 0;
        uint64_t rep_seq = ep->rep.head, req_seq = ep->req.head;
        if (ep->tx_partial == Q_REP) {
            add_item(sock_txq_at(&ep->rep, rep_seq++), iov, &niov);
            qs[nq++] = Q_REP;
        } else if (ep->tx_partial == Q_REQ) {
            add_item(sock_txq_at(&ep->req, req_seq++), iov, &niov);
            qs[nq++] = Q_REQ;
        }
        if (allow_rep) {
            while (nq < MAX_BATCH && rep_seq != ep->rep.tail) {
                sock_txi *t = sock_txq_at(&ep->rep, rep_seq);
                if (t->blocked || t->has_event)
                    break;
                add_item(t, iov, &niov);
                qs[nq++] = Q_REP;
                rep_seq++;
            }
        }
        while (nq < MAX_BATCH && req_seq != ep->req.tail) {
            add_item(sock_txq_at(&ep->req, req_seq++), iov, &niov);
            qs[nq++] = Q_REQ;
        }
        if (nq == 0)
            return 0;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        SOCK_DMA_BEGIN();
        ssize_t n = sendmsg(ep->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        SOCK_DMA_END();
        sock_count(&ep->fab->n_send);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        if (n > 0)
            ep->progress_ms = rf_now_ms();
        if (!advance(ep, qs, nq, (size_t)n))
            return 0; /* socket buffer full */
    }
}
