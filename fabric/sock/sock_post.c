/* fabric/sock/sock_post.c: posting work and receives on a sock endpoint.
 * rf_post builds the request frames of all its work requests under the
 * endpoint lock and, when nothing else is queued, writes them at once with
 * one sendmsg from the calling thread (the progress thread finishes what the
 * socket did not take). A work request with RF_WR_FENCE is held back, with
 * everything posted after it, until earlier reads and atomics completed. */
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

#include <errno.h>
#include <string.h>

static int is_rd_atomic(uint8_t op)
{
    return op == RF_OP_READ || op == RF_OP_FETCH_ADD || op == RF_OP_CMP_SWAP;
}

/* Queues the request frame of the work request at ep->wr_sent. */
static int transmit(sock_ep *ep)
{
    sock_wr *w = &ep->wrs[ep->wr_sent % ep->max_wr];
    sock_txi *t = sock_txq_push(&ep->req);
    if (!t)
        return -1;
    rf_sock_hdr h = {.key = w->rkey, .addr = w->remote_addr};
    switch ((rf_op)w->op) {
    case RF_OP_READ:
        h.op = RF_SOCK_READ_REQ;
        h.aux = w->len;
        break;
    case RF_OP_WRITE:
        h.op = RF_SOCK_WRITE_REQ;
        h.len = w->len;
        break;
    case RF_OP_WRITE_IMM:
        h.op = RF_SOCK_WRITE_IMM_REQ;
        h.len = w->len;
        h.aux = w->imm;
        break;
    case RF_OP_SEND:
        h = (rf_sock_hdr){.op = RF_SOCK_SEND_REQ, .len = w->len};
        break;
    case RF_OP_FETCH_ADD:
        h.op = RF_SOCK_FADD_REQ;
        h.arg0 = w->compare_add;
        break;
    case RF_OP_CMP_SWAP:
        h.op = RF_SOCK_CSWAP_REQ;
        h.arg0 = w->compare_add;
        h.arg1 = w->swap;
        break;
    default:
        break;
    }
    rf_sock_hdr_encode(&h, t->hdr);
    if (h.len) {
        t->data = w->local;
        t->data_len = h.len;
    }
    if (is_rd_atomic(w->op))
        ep->rd_atomic_inflight++;
    if (ep->wr_head == ep->wr_sent)
        ep->progress_ms = rf_now_ms(); /* the watchdog starts now */
    ep->wr_sent++;
    return 0;
}

/* Held back: a fence waiting for earlier reads and atomics, or as many
 * requests outstanding as the peer serves at once. */
static int fenced(const sock_ep *ep, const sock_wr *w)
{
    if (ep->wr_sent - ep->wr_head >= ep->peer_serve)
        return 1;
    return (w->flags & RF_WR_FENCE) && ep->rd_atomic_inflight > 0;
}

void sock_post_release_fenced(sock_ep *ep)
{
    while (ep->wr_sent < ep->wr_tail &&
           !fenced(ep, &ep->wrs[ep->wr_sent % ep->max_wr])) {
        if (transmit(ep) < 0) {
            sock_ep_fail(ep, RF_ERR_DISCONNECTED,
                         "out of memory sending fenced work");
            return;
        }
    }
}

rf_status sock_post(rf_ep *base, const rf_wr *wrs, size_t n, size_t *posted)
{
    sock_ep *ep = SOCK_EP(base);
    pthread_mutex_lock(&ep->mu);
    if (ep->state != RF_OK) {
        pthread_mutex_unlock(&ep->mu);
        return rf_error_set(RF_ERR_DISCONNECTED,
                            "rf_post: the endpoint to %s is in the error "
                            "state",
                            ep->peer);
    }
    int idle = sock_txq_empty(&ep->req) && ep->tx_partial == 0;
    rf_status st = RF_OK;
    size_t i;
    for (i = 0; i < n; i++) {
        if (ep->wr_tail - ep->wr_head >= ep->max_wr) {
            st = rf_error_set(RF_ERR_NO_RESOURCE,
                              "rf_post: send queue full (%u outstanding)",
                              ep->max_wr);
            break;
        }
        const rf_wr *r = &wrs[i];
        sock_wr *w = &ep->wrs[ep->wr_tail % ep->max_wr];
        *w = (sock_wr){.op = (uint8_t)r->op,
                       .flags = (uint8_t)r->flags,
                       .len = (uint32_t)r->len,
                       .rkey = r->rkey,
                       .imm = r->imm,
                       .context = r->context,
                       .local = r->local,
                       .remote_addr = r->remote_addr,
                       .compare_add = r->compare_add,
                       .swap = r->swap};
        ep->wr_tail++;
        if (ep->wr_sent == ep->wr_tail - 1 && !fenced(ep, w) &&
            transmit(ep) < 0) {
            ep->wr_tail--;
            st = rf_error_set(RF_ERR_NO_MEMORY, "rf_post: out of memory");
            break;
        }
    }
    *posted = i;
    if (i > 0) {
        if (idle && sock_tx_flush(ep, 0) < 0) {
            int e = errno;
            sock_ep_fail(ep, RF_ERR_DISCONNECTED,
                         "sending to the peer failed: %s", strerror(e));
        }
        sock_ep_update_events(ep);
    }
    pthread_mutex_unlock(&ep->mu);
    return st;
}

rf_status sock_post_recv(rf_ep *base, void *buf, size_t len, rf_mr *mr,
                         void *context)
{
    (void)mr;
    sock_ep *ep = SOCK_EP(base);
    pthread_mutex_lock(&ep->mu);
    if (ep->state != RF_OK) {
        pthread_mutex_unlock(&ep->mu);
        return rf_error_set(RF_ERR_DISCONNECTED,
                            "rf_post_recv: the endpoint to %s is in the "
                            "error state",
                            ep->peer);
    }
    if (ep->recv_tail - ep->recv_head >= ep->max_recv) {
        pthread_mutex_unlock(&ep->mu);
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "rf_post_recv: receive queue full (%u posted)",
                            ep->max_recv);
    }
    ep->recvs[ep->recv_tail++ % ep->max_recv] =
        (sock_recv){.buf = buf, .len = (uint32_t)len, .context = context};
    if (ep->stage_head || ep->rx_phase == RX_WAIT_RECV)
        sock_ep_kick(ep);
    pthread_mutex_unlock(&ep->mu);
    return RF_OK;
}
