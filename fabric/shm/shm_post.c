/* fabric/shm/shm_post.c: the data path of the shm provider. rf_post and
 * rf_post_recv queue; the progress thread (shm_ep_progress) executes an
 * endpoint's work in posting order (except that one-sided work of at most
 * SHM_INLINE_MAX bytes posted on an endpoint with nothing queued runs at
 * once in the posting thread, which keeps the order too):
 *  - read, write, fetch_add, cmp_swap: checked against the peer's region
 *    table (remote access granted, rkey and generation, overflow-safe
 *    bounds, access right, then 8-byte alignment for atomics, in that order)
 *    and executed here, on the mapping of the peer's segment: the target's
 *    CPU does nothing. Zero-length read/write/write_imm skip the rkey check
 *    (as verbs) but not the gate.
 *  - send: its payload goes through the peer's receive ring in slots of
 *    SHM_SLOT_DATA bytes (flow control on the ring's consumer index);
 *    write_imm writes its data one-sided, then puts one slot carrying the
 *    immediate. Both complete when the receiver acknowledges the message
 *    (ring word `acked`); nothing behind them runs before.
 *  - receiving: this side's ring is consumed into posted receives in order;
 *    a message that finds none waits up to RF_RNR_TIMEOUT_MS, then fails
 *    both endpoints (the sender's work with RF_ERR_NO_RESOURCE); a send
 *    larger than the receive fails the receive with RF_ERR_INVALID_ARG and
 *    the send with RF_ERR_REMOTE_ACCESS.
 * Everything the peer wrote in the ring is read once and validated; a
 * corrupt ring fails the endpoint. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/shm/shm.h"

static void kick(int efd)
{
    uint64_t one = 1;
    ssize_t r;
    do {
        r = write(efd, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
}

/* --- posting ---------------------------------------------------------------
 */

static rf_status exec_one_sided(shm_ep *ep, const rf_wr *wr, int progress);

/* One-sided work of at most SHM_INLINE_MAX bytes on an idle endpoint runs
 * at once in the posting thread: nothing is queued before it, so order is
 * kept, and it saves the progress thread's wake-up and the hand-off of its
 * completion. */
static int run_inline(const shm_ep *ep, const rf_wr *wr)
{
    return ep->sq_count == 0 && !ep->copying && ep->hs == SHM_HS_UP &&
           wr->op != RF_OP_SEND && wr->op != RF_OP_WRITE_IMM &&
           wr->len <= SHM_INLINE_MAX;
}

rf_status shm_post(rf_ep *base, const rf_wr *wrs, size_t n, size_t *posted)
{
    shm_ep *ep = (shm_ep *)base;
    rf_status st = RF_OK;
    size_t i = 0;
    int queued = 0;
    rf_spin_lock(&ep->lock);
    if (ep->state != SHM_EP_OK) {
        st = rf_error_set(RF_ERR_DISCONNECTED,
                          "rf_post: endpoint to %s is in the error state",
                          ep->peer);
    } else {
        for (; i < n; i++) {
            if (ep->state != SHM_EP_OK) {
                /* An earlier request of this batch failed the endpoint:
                 * the rest is flushed, as the progress thread would. */
                shm_ep_complete(ep, &wrs[i], RF_ERR_DISCONNECTED);
                continue;
            }
            if (ep->sq_count == ep->sq_cap) {
                st = rf_error_set(RF_ERR_NO_RESOURCE,
                                  "rf_post: send queue full (%u work "
                                  "requests outstanding)",
                                  ep->sq_cap);
                break;
            }
            if (run_inline(ep, &wrs[i])) {
                /* Never queued: it completes (or fails the endpoint) here,
                 * and the queue stays empty. */
                rf_status xs = exec_one_sided(ep, &wrs[i], 0);
                if (xs != RF_OK && ep->state != SHM_EP_OK) {
                    /* Looking for the peer's table or segment read a
                     * message that failed the endpoint. */
                    shm_ep_complete(ep, &wrs[i], RF_ERR_DISCONNECTED);
                    continue;
                }
                if (xs != RF_OK) {
                    ep->sq[ep->sq_head] = (shm_wqe){.wr = wrs[i]};
                    ep->sq_count = 1;
                    shm_ep_fail(ep, xs, 1, RF_ERR_DISCONNECTED,
                                xs == RF_ERR_DISCONNECTED
                                    ? "the peer is gone"
                                    : "remote access violation by this side");
                    continue;
                }
                shm_ep_complete_inline(ep, &wrs[i]);
                continue;
            }
            ep->sq[(ep->sq_head + ep->sq_count) % ep->sq_cap] =
                (shm_wqe){.wr = wrs[i]};
            ep->sq_count++;
            queued = 1;
        }
    }
    rf_spin_unlock(&ep->lock);
    *posted = i;
    if (queued)
        shm_fab_wake(ep->fab);
    return st;
}

rf_status shm_post_recv(rf_ep *base, void *buf, size_t len, rf_mr *mr,
                        void *context)
{
    (void)mr;
    shm_ep *ep = (shm_ep *)base;
    rf_status st = RF_OK;
    rf_spin_lock(&ep->lock);
    if (ep->state != SHM_EP_OK) {
        st = rf_error_set(RF_ERR_DISCONNECTED,
                          "rf_post_recv: endpoint to %s is in the error state",
                          ep->peer);
    } else if (ep->rq_count == ep->rq_cap) {
        st = rf_error_set(RF_ERR_NO_RESOURCE,
                          "rf_post_recv: receive queue full (%u)", ep->rq_cap);
    } else {
        ep->rq[(ep->rq_head + ep->rq_count) % ep->rq_cap] =
            (shm_rqe){.buf = buf, .len = len, .context = context};
        ep->rq_count++;
    }
    rf_spin_unlock(&ep->lock);
    if (st == RF_OK)
        shm_fab_wake(ep->fab);
    return st;
}

/* --- one-sided execution ---------------------------------------------------
 */

/* Reads one entry of the peer's table consistently (seqlock). */
static int read_slot(const shm_tentry *e, shm_tentry *out)
{
    for (int tries = 0; tries < 10000; tries++) {
        uint64_t s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1)
            continue;
        out->addr = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        out->len = __atomic_load_n(&e->len, __ATOMIC_ACQUIRE);
        out->seg_off = __atomic_load_n(&e->seg_off, __ATOMIC_ACQUIRE);
        out->rkey = __atomic_load_n(&e->rkey, __ATOMIC_ACQUIRE);
        out->access = __atomic_load_n(&e->access, __ATOMIC_ACQUIRE);
        out->seg_id = __atomic_load_n(&e->seg_id, __ATOMIC_ACQUIRE);
        out->valid = __atomic_load_n(&e->valid, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) == s1)
            return 1;
    }
    return 0;
}

/* Finds the valid entry for rkey in its probe window (SHM_PROBE_WINDOW
 * slots from rkey % SHM_TABLE_ENTRIES). 0 if there is none. */
static int read_entry(const shm_tentry *t, uint32_t rkey, shm_tentry *out)
{
    for (uint32_t i = 0; i < SHM_PROBE_WINDOW; i++) {
        const shm_tentry *e = &t[(rkey + i) & (SHM_TABLE_ENTRIES - 1)];
        if (__atomic_load_n(&e->rkey, __ATOMIC_ACQUIRE) != rkey)
            continue;
        if (read_slot(e, out) && out->valid && out->rkey == rkey)
            return 1;
    }
    return 0;
}

/* Resolves the target range of a one-sided request to this process's
 * mapping of the peer's segment. */
static rf_status resolve(shm_ep *ep, const rf_wr *wr, uint32_t need,
                         unsigned char **out)
{
    if (!ep->peer_table)
        shm_ep_drain(ep);
    if (ep->state != SHM_EP_OK)
        return RF_ERR_DISCONNECTED;
    if (!ep->peer_table) {
        RF_LOG_DEBUG("shm: %s refused: the peer has not enabled remote access",
                     "one-sided op");
        return RF_ERR_REMOTE_ACCESS;
    }
    *out = NULL;
    int atomic = wr->op == RF_OP_FETCH_ADD || wr->op == RF_OP_CMP_SWAP;
    if (wr->len == 0 && !atomic)
        return RF_OK;
    shm_tentry e;
    if (!read_entry(ep->peer_table, wr->rkey, &e) || !e.valid ||
        e.rkey != wr->rkey)
        return RF_ERR_REMOTE_ACCESS;
    uint64_t a = wr->remote_addr, len = wr->len;
    if (len > e.len || a < e.addr || a - e.addr > e.len - len)
        return RF_ERR_REMOTE_ACCESS;
    if ((e.access & need) != need)
        return RF_ERR_REMOTE_ACCESS;
    if (atomic && a % 8)
        return RF_ERR_INVALID_ARG;
    shm_peer_seg *s = shm_ep_pseg(ep, e.seg_id);
    if (ep->state != SHM_EP_OK)
        return RF_ERR_DISCONNECTED;
    if (!s || e.seg_off > s->len || e.len > s->len - e.seg_off)
        return RF_ERR_REMOTE_ACCESS;
    *out = s->map + e.seg_off + (a - e.addr);
    /* The table is the peer's: an entry whose offset disagrees with its
     * address must not make an atomic run on a misaligned word here. */
    if (atomic && (uintptr_t)*out % 8)
        return RF_ERR_INVALID_ARG;
    return RF_OK;
}

/* memcpy in pieces of SHM_COPY_CHUNK, looking at the socket after each
 * when there is more than one (also after the last: a large transfer
 * completes only if the peer was still there when it ended, as an RC ack
 * would). The progress thread (progress) copies the request at the head of
 * the queue without ep->lock, which nobody else needs for it (shm.h), and
 * lets the threads waiting for its completions, and the peer, run between
 * pieces: a long copy keeps a core busy, there is no NIC doing it. A
 * posting thread copies inline for itself, holding the lock, as long as it
 * asked to. RF_ERR_DISCONNECTED if the peer hung up; the caller fails the
 * endpoint. */
static rf_status copy(shm_ep *ep, void *dst, const void *src, size_t len,
                      int progress)
{
    if (len == 8) { /* a counter or a lock word: no call into libc */
        uint64_t v;
        memcpy(&v, src, 8);
        memcpy(dst, &v, 8);
        return RF_OK;
    }
    if (len <= SHM_COPY_CHUNK) { /* one piece: no system call */
        memcpy(dst, src, len);
        return RF_OK;
    }
    rf_status st = RF_OK;
    if (progress)
        rf_spin_unlock(&ep->lock);
    for (size_t off = 0; off < len;) {
        size_t n = len - off < SHM_COPY_CHUNK ? len - off : SHM_COPY_CHUNK;
        memcpy((unsigned char *)dst + off, (const unsigned char *)src + off, n);
        off += n;
        if (shm_ep_hung_up(ep)) {
            st = RF_ERR_DISCONNECTED;
            break;
        }
        if (progress && off < len)
            sched_yield();
    }
    if (progress)
        rf_spin_lock(&ep->lock);
    return st;
}

static rf_status exec_one_sided(shm_ep *ep, const rf_wr *wr, int progress)
{
    static const uint32_t need[] = {
        [RF_OP_READ] = RF_ACCESS_REMOTE_READ,
        [RF_OP_WRITE] = RF_ACCESS_REMOTE_WRITE,
        [RF_OP_WRITE_IMM] = RF_ACCESS_REMOTE_WRITE,
        [RF_OP_FETCH_ADD] = RF_ACCESS_REMOTE_ATOMIC,
        [RF_OP_CMP_SWAP] = RF_ACCESS_REMOTE_ATOMIC,
    };
    if (wr->len > SHM_COPY_CHUNK && shm_ep_hung_up(ep))
        return RF_ERR_DISCONNECTED;
    unsigned char *p = NULL;
    rf_status st = resolve(ep, wr, need[wr->op], &p);
    if (st != RF_OK || !p)
        return st;
    switch (wr->op) {
    case RF_OP_READ:
        return copy(ep, wr->local, p, wr->len, progress);
    case RF_OP_WRITE:
    case RF_OP_WRITE_IMM:
        return copy(ep, p, wr->local, wr->len, progress);
    case RF_OP_FETCH_ADD: {
        uint64_t old = __atomic_fetch_add((uint64_t *)(void *)p,
                                          wr->compare_add, __ATOMIC_SEQ_CST);
        memcpy(wr->local, &old, 8);
        return RF_OK;
    }
    case RF_OP_CMP_SWAP: {
        uint64_t old = wr->compare_add;
        __atomic_compare_exchange_n((uint64_t *)(void *)p, &old, wr->swap, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        memcpy(wr->local, &old, 8);
        return RF_OK;
    }
    default:
        return RF_ERR_INVALID_ARG;
    }
}

/* --- rings -----------------------------------------------------------------
 */

/* memcpy of ring slot data by the progress thread (ep->lock held on entry
 * and on return): a large piece is copied without the lock, so a thread
 * posting to or polling this endpoint meanwhile does not spin on it for
 * the length of a 64 KiB copy. Nobody else touches the ring, the head
 * request or the receive being filled (shm.h); ep->copying keeps rf_post
 * from running work inline, which could fail the endpoint. 0 if the
 * endpoint failed meanwhile (it cannot: rf_ep_close needs fab->mu, which
 * the progress thread holds; checked all the same). */
static int slot_copy(shm_ep *ep, void *dst, const void *src, size_t len)
{
    if (len < SHM_UNLOCKED_COPY_MIN) {
        memcpy(dst, src, len);
        return 1;
    }
    ep->copying = 1;
    rf_spin_unlock(&ep->lock);
    memcpy(dst, src, len);
    rf_spin_lock(&ep->lock);
    ep->copying = 0;
    return ep->state == SHM_EP_OK;
}

static void push_slots(shm_ep *ep, shm_wqe *w)
{
    int pushed = 0;
    while (w->pushed < w->nslots) {
        uint64_t cons = __atomic_load_n(&ep->tx->cons, __ATOMIC_ACQUIRE);
        if (ep->tx_prod - cons >= SHM_RING_SLOTS)
            break;
        shm_slot *s = &ep->tx->slots[ep->tx_prod % SHM_RING_SLOTS];
        size_t off = (size_t)w->pushed * SHM_SLOT_DATA;
        size_t chunk = 0;
        if (w->wr.op == RF_OP_SEND)
            chunk = w->wr.len - off < SHM_SLOT_DATA ? w->wr.len - off
                                                    : SHM_SLOT_DATA;
        s->flags = (w->pushed == 0 ? SHM_SLOT_FIRST : 0) |
                   (w->pushed + 1 == w->nslots ? SHM_SLOT_LAST : 0);
        s->op = (uint32_t)w->wr.op;
        s->chunk = (uint32_t)chunk;
        s->imm = w->wr.imm;
        s->total = w->wr.len;
        s->msg = w->msg;
        if (chunk &&
            !slot_copy(ep, s->data, (const unsigned char *)w->wr.local + off,
                       chunk))
            return;
        ep->tx_prod++;
        __atomic_store_n(&ep->tx->prod, ep->tx_prod, __ATOMIC_RELEASE);
        w->pushed++;
        pushed = 1;
    }
    if (pushed)
        kick(ep->peer_efd);
}

static void corrupt(shm_ep *ep, const char *what)
{
    RF_LOG_WARN("shm: endpoint to %s: corrupt receive ring (%s)", ep->peer,
                what);
    shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED, "corrupt receive ring");
}

static void complete_recv(shm_ep *ep, rf_op op, rf_status st, uint32_t len,
                          uint32_t imm)
{
    shm_rqe *r = &ep->rq[ep->rq_head];
    rf_completion c = {.context = r->context,
                       .ep = rf_ep_public(&ep->base),
                       .op = op,
                       .status = st,
                       .len = len,
                       .imm = imm};
    ep->rq_head = (ep->rq_head + 1) % ep->rq_cap;
    ep->rq_count--;
    shm_cq_push((shm_cq *)ep->base.recv_cq, &c);
}

static void lower(int64_t *deadline, int64_t d)
{
    if (*deadline == RF_DEADLINE_NONE || d < *deadline)
        *deadline = d;
}

static void rx_process(shm_ep *ep, int64_t *rnr_deadline)
{
    int consumed = 0;
    while (ep->state == SHM_EP_OK) {
        uint64_t prod = __atomic_load_n(&ep->rx->prod, __ATOMIC_ACQUIRE);
        if (prod == ep->rx_cons)
            break;
        if (prod - ep->rx_cons > SHM_RING_SLOTS) {
            corrupt(ep, "producer index");
            return;
        }
        const shm_slot *s = &ep->rx->slots[ep->rx_cons % SHM_RING_SLOTS];
        /* Each header field loaded once (the peer may be rewriting it): what
         * is validated is what is used. */
        uint32_t flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
        uint32_t op = __atomic_load_n(&s->op, __ATOMIC_RELAXED);
        uint32_t chunk = __atomic_load_n(&s->chunk, __ATOMIC_RELAXED);
        uint32_t imm = __atomic_load_n(&s->imm, __ATOMIC_RELAXED);
        uint64_t total = __atomic_load_n(&s->total, __ATOMIC_RELAXED);
        uint64_t msg = __atomic_load_n(&s->msg, __ATOMIC_RELAXED);
        if (chunk > SHM_SLOT_DATA ||
            (op != RF_OP_SEND && op != RF_OP_WRITE_IMM) || total > UINT32_MAX ||
            (op == RF_OP_WRITE_IMM &&
             (chunk || flags != (SHM_SLOT_FIRST | SHM_SLOT_LAST)))) {
            corrupt(ep, "slot header");
            return;
        }
        if (!ep->rx_active) {
            if (!(flags & SHM_SLOT_FIRST)) {
                corrupt(ep, "message without its first slot");
                return;
            }
            if (ep->rq_count == 0) {
                int64_t now = rf_now_ms();
                if (!ep->rnr_since)
                    ep->rnr_since = now ? now : 1;
                if (now - ep->rnr_since >= ep->fab->rnr_timeout_ms) {
                    shm_ep_fail(ep, RF_OK, 1, RF_ERR_NO_RESOURCE,
                                "no receive posted within RF_RNR_TIMEOUT_MS");
                    return;
                }
                lower(rnr_deadline, ep->rnr_since + ep->fab->rnr_timeout_ms);
                break;
            }
            ep->rnr_since = 0;
            if (op == RF_OP_SEND && total > ep->rq[ep->rq_head].len) {
                complete_recv(ep, RF_OP_RECV, RF_ERR_INVALID_ARG, 0, 0);
                shm_ep_fail(ep, RF_OK, 1, RF_ERR_REMOTE_ACCESS,
                            "a send larger than the posted receive");
                return;
            }
            ep->rx_active = 1;
            ep->rx_off = 0;
            ep->rx_total = total;
            ep->rx_op = op;
            ep->rx_imm = imm;
            ep->rx_msg = msg;
        }
        if (op != ep->rx_op || total != ep->rx_total || msg != ep->rx_msg ||
            chunk > ep->rx_total - ep->rx_off) {
            corrupt(ep, "slot does not continue its message");
            return;
        }
        if (chunk &&
            !slot_copy(ep,
                       (unsigned char *)ep->rq[ep->rq_head].buf + ep->rx_off,
                       s->data, chunk))
            return;
        ep->rx_off += chunk;
        ep->rx_cons++;
        __atomic_store_n(&ep->rx->cons, ep->rx_cons, __ATOMIC_RELEASE);
        consumed = 1;
        if (flags & SHM_SLOT_LAST) {
            if (op == RF_OP_SEND && ep->rx_off != ep->rx_total) {
                corrupt(ep, "message shorter than announced");
                return;
            }
            complete_recv(ep,
                          op == RF_OP_SEND ? RF_OP_RECV : RF_OP_RECV_WRITE_IMM,
                          RF_OK, (uint32_t)ep->rx_total, ep->rx_imm);
            ep->rx_active = 0;
            __atomic_store_n(&ep->rx->acked, msg, __ATOMIC_RELEASE);
        }
    }
    if (consumed)
        kick(ep->peer_efd);
}

/* --- the endpoint's work ---------------------------------------------------
 */

static void pop(shm_ep *ep)
{
    ep->sq_head = (ep->sq_head + 1) % ep->sq_cap;
    ep->sq_count--;
}

int shm_ep_take_ack(shm_ep *ep)
{
    if (ep->sq_count == 0 || !ep->tx)
        return 0;
    shm_wqe *w = &ep->sq[ep->sq_head];
    if (!w->inflight || w->pushed < w->nslots ||
        __atomic_load_n(&ep->tx->acked, __ATOMIC_ACQUIRE) < w->msg)
        return 0;
    shm_ep_complete(ep, &w->wr, RF_OK);
    pop(ep);
    ep->tx_wait_since = 0;
    return 1;
}

/* A send/write_imm waits for its receiver. A receiver that consumes
 * nothing (process stopped or wedged, not dead: that is EOF) for
 * RF_PEER_TIMEOUT_MS + RF_RNR_TIMEOUT_MS fails the endpoint. */
static int stalled(shm_ep *ep, int64_t *deadline)
{
    int64_t now = rf_now_ms();
    uint64_t cons = __atomic_load_n(&ep->tx->cons, __ATOMIC_ACQUIRE);
    if (!ep->tx_wait_since || cons != ep->tx_seen_cons) {
        ep->tx_wait_since = now ? now : 1;
        ep->tx_seen_cons = cons;
    }
    int64_t limit = (int64_t)ep->fab->peer_timeout_ms + ep->fab->rnr_timeout_ms;
    if (now - ep->tx_wait_since >= limit) {
        shm_ep_fail(ep, RF_ERR_DISCONNECTED, 1, RF_ERR_DISCONNECTED,
                    "the peer consumed nothing for RF_PEER_TIMEOUT_MS + "
                    "RF_RNR_TIMEOUT_MS");
        return 1;
    }
    lower(deadline, ep->tx_wait_since + limit);
    return 0;
}

/* True if the head transfer should wait for the application to take
 * completions (pacing, see shm.h). */
static int pace(shm_ep *ep, const rf_wr *wr, int64_t *deadline)
{
    int pace_ms = ep->fab->pace_ms;
    if (!pace_ms || wr->len < SHM_PACE_MIN || (wr->flags & RF_WR_UNSIGNALED) ||
        shm_cq_lead((shm_cq *)ep->base.send_cq) < SHM_PACE_BYTES) {
        ep->pace_since = 0;
        return 0;
    }
    int64_t now = rf_now_ms();
    if (!ep->pace_since)
        ep->pace_since = now ? now : 1;
    if (now - ep->pace_since >= pace_ms) {
        ep->pace_since = 0;
        return 0;
    }
    lower(deadline, ep->pace_since + pace_ms);
    return 1;
}

int shm_ep_progress(shm_ep *ep, int64_t *deadline)
{
    if (ep->state != SHM_EP_OK)
        return 0;
    if (ep->hs != SHM_HS_UP) {
        if (rf_deadline_passed(ep->hs_deadline))
            shm_ep_fail(ep, RF_OK, 1, RF_ERR_DISCONNECTED,
                        "the connector did not complete the handshake within "
                        "RF_SHM_HANDSHAKE_TIMEOUT_MS");
        else
            lower(deadline, ep->hs_deadline);
        return 0;
    }
    rx_process(ep, deadline);
    int budget = SHM_RUN_BUDGET;
    while (ep->sq_count > 0 && ep->state == SHM_EP_OK) {
        shm_wqe *w = &ep->sq[ep->sq_head];
        if (w->inflight) {
            if (w->pushed < w->nslots)
                push_slots(ep, w);
            if (shm_ep_take_ack(ep))
                continue;
            if (stalled(ep, deadline))
                return 0;
            break;
        }
        if (budget-- == 0)
            return 1;
        if (pace(ep, &w->wr, deadline))
            break;
        rf_status st = RF_OK;
        if (w->wr.op != RF_OP_SEND)
            st = exec_one_sided(ep, &w->wr, 1);
        if (st != RF_OK) {
            shm_ep_fail(ep, st, 1, RF_ERR_DISCONNECTED,
                        st == RF_ERR_DISCONNECTED
                            ? "the peer is gone"
                            : "remote access violation by this side");
            return 0;
        }
        if (w->wr.op == RF_OP_SEND || w->wr.op == RF_OP_WRITE_IMM) {
            w->msg = ++ep->next_msg;
            w->nslots = 1;
            if (w->wr.op == RF_OP_SEND && w->wr.len > SHM_SLOT_DATA)
                w->nslots =
                    (uint32_t)((w->wr.len + SHM_SLOT_DATA - 1) / SHM_SLOT_DATA);
            w->inflight = 1;
            continue; /* pushed at the top of the loop */
        }
        shm_ep_complete(ep, &w->wr, RF_OK);
        pop(ep);
    }
    return 0;
}
