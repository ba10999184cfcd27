/* fabric/sock/sock_target.c: the target side of the sock provider
 * (progress thread, fab->mr_mu held). Checks each request against the
 * fabric's regions (rkey, overflow-safe bounds, access flags, 8-byte
 * alignment for atomics), executes it in order and queues its reply; write
 * payload lands directly in the region. Sends and write_imms consume posted
 * receives in order; with none posted they wait (RNR) up to
 * RF_RNR_TIMEOUT_MS.
 *
 * Error semantics (as verbs, see fabric.h):
 *  - remote access not enabled on the endpoint (RF_EP_REMOTE_ACCESS_OFF),
 *    unknown rkey, out of bounds, missing access right: the initiator's work
 *    completes with RF_ERR_REMOTE_ACCESS; unaligned atomic: with
 *    RF_ERR_INVALID_ARG. Both endpoints then enter the error state.
 *  - a send larger than the receive buffer (verbs: local length error at the
 *    receiver, remote invalid request at the sender): the receive completes
 *    with RF_ERR_INVALID_ARG (len 0, buffer untouched) and the send with
 *    RF_ERR_REMOTE_ACCESS; both endpoints enter the error state.
 *  - no receive posted within RF_RNR_TIMEOUT_MS (verbs: RNR retries
 *    exceeded): the send/write_imm completes with RF_ERR_NO_RESOURCE and both
 *    endpoints enter the error state. Waiting messages are staged (send
 *    payload copied, up to SOCK_STAGE_MAX bytes per endpoint) so the
 *    connection keeps flowing; past that, reading the connection pauses.
 *  - Read data is taken from the region when it is written to the socket;
 *    a later write or atomic on the same endpoint that overlaps a pending
 *    read first copies that read's data (up to SOCK_COPY_MAX per endpoint;
 *    past that it waits, reading paused, until those reads are sent), so
 *    requests of one endpoint take effect in order and what a peer makes
 *    the target copy stays bounded.
 *  - A region deregistered while a read reply is queued fails that read
 *    with RF_ERR_REMOTE_ACCESS (or, if already partly written, finishes it
 *    from a copy). */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "fabric/sock/sock_dma.h"

static int have_recv(const sock_ep *ep)
{
    return ep->recv_head != ep->recv_tail;
}

static sock_recv pop_recv(sock_ep *ep)
{
    return ep->recvs[ep->recv_head++ % ep->max_recv];
}

/* Out of memory while queueing: the stream can no longer be kept right. */
static void no_memory(sock_ep *ep)
{
    RF_LOG_ERRORF("sock: out of memory serving %s; dropping the connection",
                  ep->peer);
    sock_ep_fail(ep, RF_ERR_DISCONNECTED, "out of memory");
    sock_ep_sock_dead(ep);
}

static void encode_reply(sock_txi *t, uint8_t op, rf_status status,
                         uint64_t value, uint32_t len)
{
    rf_sock_hdr h = {.op = op, .key = (uint32_t)status, .len = len};
    if (op == RF_SOCK_ATOMIC_RESP && status == RF_OK)
        h.addr = value;
    rf_sock_hdr_encode(&h, t->hdr);
}

sock_txi *sock_tgt_reply(sock_ep *ep, uint8_t op, rf_status status,
                         uint64_t value)
{
    sock_txi *t = sock_txq_push(&ep->rep);
    if (!t) {
        no_memory(ep);
        return NULL;
    }
    t->is_reply = 1;
    encode_reply(t, op, status, value, 0);
    return t;
}

static uint8_t reply_op(uint8_t req)
{
    switch (req) {
    case RF_SOCK_READ_REQ:
        return RF_SOCK_READ_RESP;
    case RF_SOCK_FADD_REQ:
    case RF_SOCK_CSWAP_REQ:
        return RF_SOCK_ATOMIC_RESP;
    default:
        return RF_SOCK_ACK;
    }
}

/* Rejects the request being handled: error reply, then the error state. */
static void reject(sock_ep *ep, uint8_t req, rf_status st, const char *why)
{
    if (!sock_tgt_reply(ep, reply_op(req), st, 0))
        return;
    sock_ep_fail(ep, st, "%s from the peer: %s", rf_sock_op_name(req), why);
}

/* Finds the region for [addr, addr+len) with the `need` access bits. */
static rf_status lookup(sock_ep *ep, const rf_sock_hdr *h, uint64_t len,
                        uint32_t need, sock_mr **mr_out, unsigned char **p,
                        const char **why)
{
    if (__atomic_load_n(&ep->remote_off, __ATOMIC_ACQUIRE)) {
        *why = "remote access is not enabled on this connection (not "
               "authenticated)";
        return RF_ERR_REMOTE_ACCESS;
    }
    sock_mr *mr = sock_mr_find(ep->fab, h->key);
    if (!mr) {
        *why = "unknown rkey";
        return RF_ERR_REMOTE_ACCESS;
    }
    const rf_mr *b = &mr->base;
    if (!rf_sock_access_ok(b->remote_addr, b->len, b->access, h->addr, len,
                           0)) {
        *why = "outside the region";
        return RF_ERR_REMOTE_ACCESS;
    }
    if ((b->access & need) != need) {
        *why = "the region lacks the access right";
        return RF_ERR_REMOTE_ACCESS;
    }
    *mr_out = mr;
    *p = (unsigned char *)b->addr + (h->addr - b->remote_addr);
    return RF_OK;
}

static void access_error(sock_ep *ep, const rf_sock_hdr *h, uint64_t len,
                         rf_status st, const char *why)
{
    RF_LOG_WARN("sock: %s from %s rejected: rkey 0x%x addr 0x%llx len %llu: "
                "%s",
                rf_sock_op_name(h->op), ep->peer, h->key,
                (unsigned long long)h->addr, (unsigned long long)len, why);
    reject(ep, h->op, st, why);
}

/* Copies queued read data that overlaps [a, b) (copy) or counts it. */
static size_t overlapped_reads(sock_ep *ep, uintptr_t a, uintptr_t b, int copy)
{
    size_t bytes = 0;
    for (uint64_t s = ep->rep.head; s != ep->rep.tail; s++) {
        sock_txi *t = sock_txq_at(&ep->rep, s);
        if (!t->mr || t->data_len == 0)
            continue;
        uintptr_t ta = (uintptr_t)t->data, tb = ta + t->data_len;
        if (ta >= b || a >= tb)
            continue;
        bytes += t->data_len;
        if (!copy)
            continue;
        if (sock_txi_materialize(t) < 0) {
            no_memory(ep);
            return bytes;
        }
        t->owned_len = t->data_len;
        ep->copy_bytes += t->data_len;
        t->mr = NULL;
        ep->rep_mr_refs--;
    }
    return bytes;
}

/* 1 if the write or atomic h of [p, p+len) may take effect now: no queued
 * read overlaps it, or those that do were copied (the endpoint's copies
 * staying within SOCK_COPY_MAX). Else 0: it waits (RX_WAIT_READS, reading
 * paused) until they have been sent, so requests still take effect in
 * order and what a peer can make the target copy stays bounded. */
static int overlap_ready(sock_ep *ep, const rf_sock_hdr *h, const void *p,
                         size_t len)
{
    if (!ep->rep_mr_refs || len == 0)
        return 1;
    uintptr_t a = (uintptr_t)p, b = a + len;
    size_t need = overlapped_reads(ep, a, b, 0);
    if (need == 0)
        return 1;
    if (ep->copy_bytes + need <= SOCK_COPY_MAX) {
        overlapped_reads(ep, a, b, 1);
        return ep->state == RF_OK;
    }
    ep->rx_h = *h;
    ep->rx_sink = SINK_NONE;
    ep->rx_phase = RX_WAIT_READS;
    return 0;
}

void sock_tgt_reply_sent(sock_ep *ep, const sock_txi *t)
{
    if (t->owned_len && ep->copy_bytes >= t->owned_len)
        ep->copy_bytes -= t->owned_len;
    if (ep->rx_phase == RX_WAIT_READS && t->data_len == 0)
        sock_ep_kick(ep);
}

static void do_read(sock_ep *ep, const rf_sock_hdr *h)
{
    if (h->aux == 0) { /* zero-length: no rkey check, as in verbs */
        sock_tgt_reply(ep, RF_SOCK_READ_RESP, RF_OK, 0);
        return;
    }
    sock_mr *mr;
    unsigned char *p;
    const char *why;
    rf_status st = lookup(ep, h, h->aux, RF_ACCESS_REMOTE_READ, &mr, &p, &why);
    if (st != RF_OK) {
        access_error(ep, h, h->aux, st, why);
        return;
    }
    sock_txi *t = sock_tgt_reply(ep, RF_SOCK_READ_RESP, RF_OK, 0);
    if (!t)
        return;
    encode_reply(t, RF_SOCK_READ_RESP, RF_OK, 0, h->aux);
    t->data = p;
    t->data_len = h->aux;
    t->mr = mr;
    ep->rep_mr_refs++;
}

static void do_write(sock_ep *ep, const rf_sock_hdr *h)
{
    ep->rx_h = *h;
    ep->rx_sink =
        h->op == RF_SOCK_WRITE_REQ ? SINK_TGT_WRITE : SINK_TGT_WRITE_IMM;
    if (h->len == 0) { /* zero-length: no rkey check, as in verbs */
        sock_tgt_payload_done(ep);
        return;
    }
    sock_mr *mr;
    unsigned char *p;
    const char *why;
    rf_status st = lookup(ep, h, h->len, RF_ACCESS_REMOTE_WRITE, &mr, &p, &why);
    if (st != RF_OK) {
        ep->rx_sink = SINK_NONE;
        access_error(ep, h, h->len, st, why);
        return;
    }
    if (!overlap_ready(ep, h, p, h->len))
        return;
    ep->rx_phase = RX_PAYLOAD;
    ep->rx_dst = p;
    ep->rx_left = h->len;
    ep->rx_mr = mr;
}

static void do_atomic(sock_ep *ep, const rf_sock_hdr *h)
{
    if (h->addr % 8) {
        RF_LOG_WARN("sock: %s from %s rejected: address 0x%llx is not 8-byte "
                    "aligned",
                    rf_sock_op_name(h->op), ep->peer,
                    (unsigned long long)h->addr);
        reject(ep, h->op, RF_ERR_INVALID_ARG, "unaligned atomic");
        return;
    }
    sock_mr *mr;
    unsigned char *p;
    const char *why;
    rf_status st = lookup(ep, h, 8, RF_ACCESS_REMOTE_ATOMIC, &mr, &p, &why);
    if (st != RF_OK) {
        access_error(ep, h, 8, st, why);
        return;
    }
    if (!overlap_ready(ep, h, p, 8))
        return;
    uint64_t *word = (uint64_t *)(void *)p;
    uint64_t old;
    SOCK_DMA_BEGIN();
    if (h->op == RF_SOCK_FADD_REQ) {
        old = __atomic_fetch_add(word, h->arg0, __ATOMIC_SEQ_CST);
    } else {
        old = h->arg0;
        __atomic_compare_exchange_n(word, &old, h->arg1, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    }
    SOCK_DMA_END();
    sock_tgt_reply(ep, RF_SOCK_ATOMIC_RESP, RF_OK, old);
}

/* Starts receiving the send in ep->rx_h: into a posted receive, a staging
 * buffer, or (neither possible) waits with reading paused. */
static void start_send(sock_ep *ep)
{
    const rf_sock_hdr *h = &ep->rx_h;
    if (!ep->stage_head && have_recv(ep)) {
        sock_recv r = pop_recv(ep);
        if (h->len > r.len) {
            rf_completion c = {.context = r.context,
                               .ep = rf_ep_public(&ep->base),
                               .op = RF_OP_RECV,
                               .status = RF_ERR_INVALID_ARG};
            sock_ep_push_recv_comp(ep, &c);
            RF_LOG_WARN("sock: send of %u bytes from %s is larger than the "
                        "posted receive of %u bytes",
                        h->len, ep->peer, r.len);
            reject(ep, RF_SOCK_SEND_REQ, RF_ERR_REMOTE_ACCESS,
                   "send larger than the receive buffer");
            return;
        }
        ep->rx_sink = SINK_TGT_SEND;
        ep->rx_ctx = r.context;
        ep->rx_dst = r.buf;
    } else if (ep->stage_bytes + h->len <= SOCK_STAGE_MAX) {
        sock_stage *s = calloc(1, sizeof *s);
        if (s && h->len) {
            s->data = malloc(h->len);
            if (!s->data) {
                free(s);
                s = NULL;
            }
        }
        if (!s) {
            no_memory(ep);
            return;
        }
        s->len = h->len;
        ep->stage_bytes += h->len;
        ep->rx_stage = s;
        ep->rx_sink = SINK_TGT_STAGE;
        ep->rx_dst = s->data;
    } else {
        ep->rx_phase = RX_WAIT_RECV;
        ep->rx_wait_deadline = rf_now_ms() + ep->fab->rnr_timeout_ms;
        __atomic_store_n(&ep->fab->timers_hint, 1, __ATOMIC_RELAXED);
        return;
    }
    ep->rx_left = h->len;
    if (h->len == 0) {
        sock_tgt_payload_done(ep);
        return;
    }
    ep->rx_phase = RX_PAYLOAD;
}

void sock_tgt_request(sock_ep *ep, const rf_sock_hdr *h)
{
    /* Each request holds one reply slot until its reply is written; the
     * peer declared how many it may have outstanding and was told how many
     * this target serves at once: more is a protocol violation. */
    uint32_t limit =
        ep->peer_max < ep->fab->serve_max ? ep->peer_max : ep->fab->serve_max;
    if (ep->rep_open >= limit) {
        sock_rx_protocol_error(ep,
                               "more than %u outstanding requests (it "
                               "declared %u, this target serves %u)",
                               limit, ep->peer_max, ep->fab->serve_max);
        return;
    }
    ep->rep_open++;
    switch (h->op) {
    case RF_SOCK_READ_REQ:
        do_read(ep, h);
        break;
    case RF_SOCK_WRITE_REQ:
    case RF_SOCK_WRITE_IMM_REQ:
        do_write(ep, h);
        break;
    case RF_SOCK_SEND_REQ:
        ep->rx_h = *h;
        start_send(ep);
        break;
    default:
        do_atomic(ep, h);
        break;
    }
}

/* Queues the reply of a send/write_imm that got receive r. */
static void deliver(sock_ep *ep, sock_txi *t, void *ctx, int is_imm,
                    uint32_t len, uint32_t imm)
{
    t->blocked = 0;
    t->has_event = 1;
    t->ev = (rf_completion){.context = ctx,
                            .ep = rf_ep_public(&ep->base),
                            .op = is_imm ? RF_OP_RECV_WRITE_IMM : RF_OP_RECV,
                            .status = RF_OK,
                            .len = len,
                            .imm = is_imm ? imm : 0};
}

static void stage_append(sock_ep *ep, sock_stage *s)
{
    sock_txi *t = sock_tgt_reply(ep, RF_SOCK_ACK, RF_OK, 0);
    if (!t) {
        free(s->data);
        free(s);
        return;
    }
    t->blocked = 1;
    s->rep_seq = ep->rep.tail - 1;
    s->deadline = rf_now_ms() + ep->fab->rnr_timeout_ms;
    if (ep->stage_tail)
        ep->stage_tail->next = s;
    else
        ep->stage_head = s;
    ep->stage_tail = s;
    __atomic_store_n(&ep->fab->timers_hint, 1, __ATOMIC_RELAXED);
}

void sock_tgt_payload_done(sock_ep *ep)
{
    const rf_sock_hdr h = ep->rx_h;
    int sink = ep->rx_sink;
    ep->rx_phase = RX_HDR;
    ep->rx_sink = SINK_NONE;
    ep->rx_dst = NULL;
    ep->rx_mr = NULL;
    switch (sink) {
    case SINK_DISCARD:
        reject(ep, h.op, ep->rx_fail, "region deregistered during the write");
        return;
    case SINK_TGT_WRITE:
        sock_tgt_reply(ep, RF_SOCK_ACK, RF_OK, 0);
        return;
    case SINK_TGT_WRITE_IMM:
        if (!ep->stage_head && have_recv(ep)) {
            sock_recv r = pop_recv(ep);
            sock_txi *t = sock_tgt_reply(ep, RF_SOCK_ACK, RF_OK, 0);
            if (t)
                deliver(ep, t, r.context, 1, h.len, h.aux);
        } else {
            sock_stage *s = calloc(1, sizeof *s);
            if (!s) {
                no_memory(ep);
                return;
            }
            s->is_imm = 1;
            s->imm = h.aux;
            s->len = h.len;
            stage_append(ep, s);
        }
        return;
    case SINK_TGT_SEND: {
        sock_txi *t = sock_tgt_reply(ep, RF_SOCK_ACK, RF_OK, 0);
        if (t)
            deliver(ep, t, ep->rx_ctx, 0, h.len, 0);
        ep->rx_ctx = NULL;
        return;
    }
    case SINK_TGT_STAGE: {
        sock_stage *s = ep->rx_stage;
        ep->rx_stage = NULL;
        stage_append(ep, s);
        return;
    }
    }
}

void sock_tgt_resume(sock_ep *ep)
{
    rf_sock_hdr h = ep->rx_h;
    ep->rx_phase = RX_HDR;
    if (h.op == RF_SOCK_WRITE_REQ || h.op == RF_SOCK_WRITE_IMM_REQ)
        do_write(ep, &h);
    else
        do_atomic(ep, &h);
}

void sock_tgt_match(sock_ep *ep)
{
    while (ep->stage_head && have_recv(ep) && ep->state == RF_OK) {
        sock_stage *s = ep->stage_head;
        ep->stage_head = s->next;
        if (!ep->stage_head)
            ep->stage_tail = NULL;
        if (!s->is_imm)
            ep->stage_bytes -= s->len;
        sock_recv r = pop_recv(ep);
        sock_txi *t = sock_txq_at(&ep->rep, s->rep_seq);
        if (!s->is_imm && s->len > r.len) {
            rf_completion c = {.context = r.context,
                               .ep = rf_ep_public(&ep->base),
                               .op = RF_OP_RECV,
                               .status = RF_ERR_INVALID_ARG};
            sock_ep_push_recv_comp(ep, &c);
            t->blocked = 0;
            encode_reply(t, RF_SOCK_ACK, RF_ERR_REMOTE_ACCESS, 0, 0);
            RF_LOG_WARN("sock: send of %u bytes from %s is larger than the "
                        "posted receive of %u bytes",
                        s->len, ep->peer, r.len);
            free(s->data);
            free(s);
            sock_ep_fail(ep, RF_ERR_REMOTE_ACCESS,
                         "send larger than the receive buffer");
            return;
        }
        if (s->len && !s->is_imm) {
            SOCK_DMA_BEGIN();
            memcpy(r.buf, s->data, s->len);
            SOCK_DMA_END();
        }
        deliver(ep, t, r.context, s->is_imm, s->len, s->imm);
        free(s->data);
        free(s);
    }
    if (ep->rx_phase == RX_WAIT_RECV && !ep->stage_head && have_recv(ep) &&
        ep->state == RF_OK) {
        ep->rx_phase = RX_HDR;
        start_send(ep);
        /* Its payload may already be buffered, with no more input coming
         * to wake us: make sure the receive loop runs again. */
        sock_ep_kick(ep);
    }
}

int sock_tgt_timers(sock_ep *ep, int64_t now)
{
    if (ep->state != RF_OK)
        return 0;
    if (ep->stage_head) {
        sock_stage *s = ep->stage_head;
        if (now < s->deadline)
            return SOCK_TIMER_PENDING;
        sock_txi *t = sock_txq_at(&ep->rep, s->rep_seq);
        t->blocked = 0;
        encode_reply(t, RF_SOCK_ACK, RF_ERR_NO_RESOURCE, 0, 0);
        RF_LOG_WARN("sock: %s from %s found no receive posted within %d ms",
                    s->is_imm ? "write_imm" : "send", ep->peer,
                    ep->fab->rnr_timeout_ms);
        sock_ep_fail(ep, RF_ERR_NO_RESOURCE,
                     "receiver not ready (no receive posted in time)");
        return SOCK_TIMER_FIRED;
    }
    if (ep->rx_phase == RX_WAIT_RECV) {
        if (now < ep->rx_wait_deadline)
            return SOCK_TIMER_PENDING;
        RF_LOG_WARN("sock: send of %u bytes from %s found no receive posted "
                    "within %d ms",
                    ep->rx_h.len, ep->peer, ep->fab->rnr_timeout_ms);
        ep->rx_phase = RX_HDR;
        reject(ep, RF_SOCK_SEND_REQ, RF_ERR_NO_RESOURCE,
               "receiver not ready (no receive posted in time)");
        return SOCK_TIMER_FIRED;
    }
    return 0;
}

void sock_tgt_region_gone(sock_ep *ep, sock_mr *mr)
{
    int failed = 0;
    for (uint64_t s = ep->rep.head; ep->rep_mr_refs && s != ep->rep.tail; s++) {
        sock_txi *t = sock_txq_at(&ep->rep, s);
        if (t->mr != mr)
            continue;
        if (t->hdr_sent > 0) {
            /* Partly written: finish the frame from a copy. */
            if (sock_txi_materialize(t) < 0) {
                no_memory(ep);
                return;
            }
        } else {
            /* Not started: the read fails, as on a NIC. */
            encode_reply(t, RF_SOCK_READ_RESP, RF_ERR_REMOTE_ACCESS, 0, 0);
            t->data = NULL;
            t->data_len = 0;
            failed = 1;
        }
        t->mr = NULL;
        ep->rep_mr_refs--;
    }
    if (ep->rx_mr == mr && ep->rx_phase == RX_PAYLOAD) {
        ep->rx_sink = SINK_DISCARD;
        ep->rx_fail = RF_ERR_REMOTE_ACCESS;
        ep->rx_dst = NULL;
        ep->rx_mr = NULL;
    }
    if (failed)
        sock_ep_fail(ep, RF_ERR_REMOTE_ACCESS,
                     "a region was deregistered while a read of it was "
                     "queued");
}

void sock_tgt_free_stage(sock_ep *ep)
{
    while (ep->stage_head) {
        sock_stage *s = ep->stage_head;
        ep->stage_head = s->next;
        free(s->data);
        free(s);
    }
    ep->stage_tail = NULL;
    ep->stage_bytes = 0;
    if (ep->rx_stage) {
        free(ep->rx_stage->data);
        free(ep->rx_stage);
        ep->rx_stage = NULL;
    }
}
