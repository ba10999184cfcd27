/* fabric/verbs/verbs_ep.c: endpoints: the RC QP, posting, completion
 * translation, the error state and closing.
 *
 * Every posted work request owns a slot in a per-QP ring; wr_id is the
 * slot's address. Signaling is selective (sq_sig_all = 0): a WR is
 * signaled unless RF_WR_UNSIGNALED, and at least one WR in every
 * sig_interval (= max_send_wr / 2) is signaled internally so send-queue
 * slots can be reclaimed; the success completion of such a WR is not shown
 * to the user. RC completes in order, so a CQE for slot i also retires the
 * unsignaled slots before it: successfully, unless an error CQE was seen
 * earlier on this QP (then they are flushed work and complete with
 * RF_ERR_DISCONNECTED: error completions are always reported). The send
 * queue has one slot more than the user may fill, for the drain marker
 * that rf_ep_close posts after moving the QP to the error state. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/verbs/verbs_internal.h"

static rf_status grow_scratch(vep *ep, size_t n);

static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

rf_status verbs_ep_alloc(vfab *fab, const rf_ep_attr *attr, vep **out)
{
    vep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return rf_error_set(RF_ERR_NO_MEMORY, "verbs: out of memory");
    ep->base.fabric = &fab->base;
    ep->base.send_cq = attr->send_cq;
    ep->base.recv_cq = attr->recv_cq ? attr->recv_cq : attr->send_cq;
    ep->fab = fab;
    ep->scq = (vcq *)ep->base.send_cq;
    ep->rcq = (vcq *)ep->base.recv_cq;
    ep->cm.kind = VCM_EP;
    ep->can_atomic = fab->dev_attr.atomic_cap != IBV_ATOMIC_NONE;
    ep->remote_off = (attr->flags & RF_EP_REMOTE_ACCESS_OFF) != 0;
    rf_spin_init(&ep->sq_lock);
    rf_spin_init(&ep->rq_lock);
    pthread_mutex_init(&ep->cm_mu, NULL);
    rf_cond_init_monotonic(&ep->cm_cv);

    uint32_t max_wr =
        (uint32_t)(fab->dev_attr.max_qp_wr > 2 ? fab->dev_attr.max_qp_wr : 2);
    ep->sq_size = attr->max_send_wr ? attr->max_send_wr : 1024;
    ep->rq_size = attr->max_recv_wr ? attr->max_recv_wr : 256;
    if (ep->sq_size > max_wr - 1) {
        RF_LOG_INFO("verbs: max_send_wr %u clamped to %u (%s max_qp_wr)",
                    ep->sq_size, max_wr - 1, fab->devname);
        ep->sq_size = max_wr - 1;
    }
    if (ep->rq_size > max_wr) {
        RF_LOG_INFO("verbs: max_recv_wr %u clamped to %u (%s max_qp_wr)",
                    ep->rq_size, max_wr, fab->devname);
        ep->rq_size = max_wr;
    }
    ep->sig_interval = ep->sq_size / 2 ? ep->sq_size / 2 : 1;
    uint32_t sq_ring = pow2_at_least(ep->sq_size + 1);
    uint32_t rq_ring = pow2_at_least(ep->rq_size);
    ep->sq_mask = sq_ring - 1;
    ep->rq_mask = rq_ring - 1;
    ep->sq = calloc(sq_ring, sizeof *ep->sq);
    ep->rq = calloc(rq_ring, sizeof *ep->rq);
    if (!ep->sq || !ep->rq || grow_scratch(ep, 1) != RF_OK) {
        verbs_ep_destroy(ep);
        return rf_error_set(RF_ERR_NO_MEMORY, "verbs: out of memory");
    }
    for (uint32_t i = 0; i < sq_ring; i++)
        ep->sq[i].ep = ep;
    for (uint32_t i = 0; i < rq_ring; i++)
        ep->rq[i].ep = ep;
    /* Pollers read slot->ep under the CQ lock: publish the rings. */
    rf_spin_lock(&ep->scq->lock);
    rf_spin_unlock(&ep->scq->lock);
    rf_spin_lock(&ep->rcq->lock);
    rf_spin_unlock(&ep->rcq->lock);
    *out = ep;
    return RF_OK;
}

/* One transition with the attributes rdma_cm gives for it (the path,
 * PSNs, timeouts, the peer's QP number), for the caller to adjust. */
static rf_status qp_transition(vep *ep, enum ibv_qp_state to,
                               struct ibv_qp_attr *a, int *mask,
                               const char *what)
{
    memset(a, 0, sizeof *a);
    a->qp_state = to;
    if (rdma_init_qp_attr(ep->cm.id, a, mask)) {
        int err = errno;
        return rf_error_set(verbs_errno_status(err),
                            "%s: rdma_init_qp_attr(QP %u, state %d): %s", what,
                            ep->qp->qp_num, (int)to, strerror(err));
    }
    return RF_OK;
}

static rf_status qp_modify(vep *ep, struct ibv_qp_attr *a, int mask,
                           const char *what)
{
    int rc = ibv_modify_qp(ep->qp, a, mask);
    if (rc)
        return rf_error_set(verbs_errno_status(rc),
                            "%s: ibv_modify_qp(QP %u, state %d, mask 0x%x): %s",
                            what, ep->qp->qp_num, (int)a->qp_state, mask,
                            strerror(rc));
    return RF_OK;
}

static rf_status qp_to_init(vep *ep, const char *what)
{
    struct ibv_qp_attr a;
    int mask = 0;
    rf_status st = qp_transition(ep, IBV_QPS_INIT, &a, &mask, what);
    if (st != RF_OK)
        return st;
    /* no remote access yet: it comes with the connection's attributes */
    a.qp_access_flags = 0;
    return qp_modify(ep, &a, mask | IBV_QP_ACCESS_FLAGS, what);
}

rf_status verbs_ep_create_qp(vep *ep, struct rdma_cm_id *id, const char *what)
{
    vfab *fab = ep->fab;
    if (id->verbs != fab->ctx)
        return rf_error_set(
            RF_ERR_UNAVAILABLE,
            "%s: the connection uses device %s, but the fabric was opened "
            "on %s (set bind_addr or RF_VERBS_DEVICE to match)",
            what, id->verbs ? ibv_get_device_name(id->verbs->device) : "?",
            fab->devname);
    static const uint32_t inline_try[] = {256, 128, 64, 0};
    int err = 0;
    for (size_t i = 0; i < sizeof inline_try / sizeof inline_try[0]; i++) {
        struct ibv_qp_init_attr qa = {
            .qp_context = ep,
            .send_cq = ep->scq->cq,
            .recv_cq = ep->rcq->cq,
            .cap = {.max_send_wr = ep->sq_size + 1,
                    .max_recv_wr = ep->rq_size,
                    .max_send_sge = 1,
                    .max_recv_sge = 1,
                    .max_inline_data = inline_try[i] < fab->inline_cap
                                           ? inline_try[i]
                                           : fab->inline_cap},
            .qp_type = IBV_QPT_RC,
            .sq_sig_all = 0,
        };
        ep->qp = ibv_create_qp(fab->pd, &qa);
        if (ep->qp) {
            ep->max_inline = qa.cap.max_inline_data;
            err = 0;
            break;
        }
        err = errno;
        if (err != EINVAL && err != ENOMEM)
            break;
    }
    if (!ep->qp)
        return rf_error_set(verbs_errno_status(err),
                            "%s: ibv_create_qp(%s, send %u, recv %u): %s", what,
                            fab->devname, ep->sq_size + 1, ep->rq_size,
                            strerror(err));
    uint8_t timeout = fab->qp.timeout;
    if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
                        &timeout, sizeof timeout))
        RF_LOG_WARN("verbs: rdma_set_option(ACK_TIMEOUT %u): %s; dead-peer "
                    "detection uses the kernel's default",
                    timeout, strerror(errno));
    RF_LOG_DEBUG("verbs: QP %u: send %u recv %u inline %u", ep->qp->qp_num,
                 ep->sq_size, ep->rq_size, ep->max_inline);
    return qp_to_init(ep, what);
}

rf_status verbs_ep_qp_ready(vep *ep, int resp_res, int init_depth,
                            const char *what)
{
    vfab *fab = ep->fab;
    struct ibv_qp_attr a;
    int mask = 0;
    /* INIT -> INIT: now that the connection exists, rdma_cm's INIT
     * attributes carry its remote access flags (remote write, and read and
     * atomics when the peer may issue them). A gated endpoint keeps none;
     * they are applied by rf_ep_enable_remote_access. */
    rf_status st = qp_transition(ep, IBV_QPS_INIT, &a, &mask, what);
    if (st != RF_OK)
        return st;
    rf_spin_lock(&ep->sq_lock);
    if (ep->remote_off) {
        ep->remote_flags = a.qp_access_flags;
        a.qp_access_flags = 0;
    }
    rf_spin_unlock(&ep->sq_lock);
    if ((st = qp_modify(ep, &a, mask, what)) != RF_OK)
        return st;
    if (fab->iwarp) /* iw_cm moves an iWARP QP to RTS itself */
        return RF_OK;
    if ((st = qp_transition(ep, IBV_QPS_RTR, &a, &mask, what)) != RF_OK)
        return st;
    /* as librdmacm does: older kernels set RoCE-only mask bits on IB */
    if (fab->link_ib)
        mask &= ~0xe00000;
    if (resp_res >= 0)
        a.max_dest_rd_atomic = (uint8_t)resp_res;
    /* what this side asks a sender to wait when no receive is posted
     * (rdma_cm would leave 0, 655 ms) */
    a.min_rnr_timer = fab->qp.min_rnr_timer;
    mask |= IBV_QP_MIN_RNR_TIMER;
    if ((st = qp_modify(ep, &a, mask, what)) != RF_OK)
        return st;
    if ((st = qp_transition(ep, IBV_QPS_RTS, &a, &mask, what)) != RF_OK)
        return st;
    if (init_depth >= 0)
        a.max_rd_atomic = (uint8_t)init_depth;
    return qp_modify(ep, &a, mask, what);
}

rf_status verbs_ep_enable_remote_access(rf_ep *base)
{
    vep *ep = (vep *)base;
    rf_status st = RF_OK;
    rf_spin_lock(&ep->sq_lock);
    if (ep->remote_off) {
        unsigned flags =
            ep->remote_flags
                ? ep->remote_flags
                : IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                      (ep->can_atomic ? IBV_ACCESS_REMOTE_ATOMIC : 0);
        struct ibv_qp_attr a = {.qp_access_flags = flags};
        int rc = ibv_modify_qp(ep->qp, &a, IBV_QP_ACCESS_FLAGS);
        if (rc)
            st = rf_error_set(verbs_errno_status(rc),
                              "rf_ep_enable_remote_access: ibv_modify_qp(QP "
                              "%u, access 0x%x): %s",
                              ep->qp->qp_num, flags, strerror(rc));
        else
            ep->remote_off = 0;
    }
    rf_spin_unlock(&ep->sq_lock);
    if (st == RF_OK && atomic_load(&ep->error))
        st = rf_error_set(RF_ERR_DISCONNECTED,
                          "rf_ep_enable_remote_access: the endpoint is in "
                          "the error state");
    return st;
}

void verbs_ep_set_error(vep *ep, int request_disconnect)
{
    atomic_store(&ep->error, 1);
    int expect = 0;
    if (request_disconnect &&
        atomic_compare_exchange_strong(&ep->want_disconnect, &expect, 1))
        verbs_event_wake(ep->fab);
}

rf_status verbs_ep_state(const rf_ep *e)
{
    vep *ep = (vep *)e;
    if (atomic_load(&ep->error))
        return RF_ERR_DISCONNECTED;
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    if (ep->qp && ibv_query_qp(ep->qp, &a, IBV_QP_STATE, &ia) == 0 &&
        a.qp_state == IBV_QPS_ERR) {
        verbs_ep_set_error(ep, 1);
        return RF_ERR_DISCONNECTED;
    }
    return RF_OK;
}

/* --- completions --------------------------------------------------------- */

static rf_status send_status(enum ibv_wc_status s)
{
    switch (s) {
    case IBV_WC_SUCCESS:
        return RF_OK;
    case IBV_WC_REM_ACCESS_ERR:
        return RF_ERR_REMOTE_ACCESS;
    case IBV_WC_REM_INV_REQ_ERR: /* e.g. misaligned atomic, send too long */
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_MW_BIND_ERR:
        return RF_ERR_INVALID_ARG;
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return RF_ERR_NO_RESOURCE;
    default: /* RETRY_EXC (peer gone), WR_FLUSH, REM_OP, FATAL, ... */
        return RF_ERR_DISCONNECTED;
    }
}

static rf_status recv_status(enum ibv_wc_status s)
{
    switch (s) {
    case IBV_WC_SUCCESS:
        return RF_OK;
    case IBV_WC_LOC_LEN_ERR: /* message longer than the buffer */
    case IBV_WC_LOC_PROT_ERR:
        return RF_ERR_INVALID_ARG;
    default: /* flushed, or the connection broke (peer's error) */
        return RF_ERR_DISCONNECTED;
    }
}

static void emit_slot(vemit *em, vep *ep, const vslot *s, rf_status st,
                      uint32_t len)
{
    rf_completion c = {.context = s->context,
                       .ep = rf_ep_public(&ep->base),
                       .op = (rf_op)s->op,
                       .status = st,
                       .len = len,
                       .imm = 0};
    verbs_emit(em, &c);
}

static void note_error(vep *ep, const struct ibv_wc *wc, const char *queue)
{
    if (wc->status == IBV_WC_WR_FLUSH_ERR) {
        verbs_ep_set_error(ep, 0);
        return;
    }
    RF_LOG_INFO("verbs: QP %u %s completion error: %s (vendor 0x%x)",
                wc->qp_num, queue, ibv_wc_status_str(wc->status),
                wc->vendor_err);
    verbs_ep_set_error(ep, 1);
}

static void handle_send_wc(vemit *em, vep *ep, vslot *slot,
                           const struct ibv_wc *wc)
{
    /* Acquire: the slot contents were written before sq_head's release. */
    uint64_t head = atomic_load_explicit(&ep->sq_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&ep->sq_tail, memory_order_relaxed);
    uint64_t idx = (uint64_t)(slot - ep->sq);
    uint64_t target = tail + ((idx - tail) & ep->sq_mask);
    if (target >= head) {
        RF_LOG_ERRORF("verbs: QP %u: completion for a send slot that is not "
                      "outstanding (ignored)",
                      wc->qp_num);
        return;
    }
    for (uint64_t s = tail; s < target; s++) {
        const vslot *u = &ep->sq[s & ep->sq_mask];
        if (ep->sq_failed && u->op != VOP_MARKER)
            emit_slot(em, ep, u, RF_ERR_DISCONNECTED, 0);
    }
    if (slot->op == VOP_MARKER) {
        ep->sq_drained = 1;
    } else if (wc->status == IBV_WC_SUCCESS &&
               !(slot->flags & VSLOT_MISALIGNED)) {
        if (slot->flags & VSLOT_USER_SIGNALED)
            emit_slot(em, ep, slot, RF_OK, slot->len);
    } else {
        rf_status st = send_status(wc->status);
        if ((slot->flags & VSLOT_MISALIGNED) &&
            wc->status != IBV_WC_WR_FLUSH_ERR)
            st = RF_ERR_INVALID_ARG;
        emit_slot(em, ep, slot, st, 0);
        if (!ep->sq_failed)
            note_error(ep, wc, "send");
        ep->sq_failed = 1;
    }
    atomic_store_explicit(&ep->sq_tail, target + 1, memory_order_release);
}

static void handle_recv_wc(vemit *em, vep *ep, vslot *slot,
                           const struct ibv_wc *wc)
{
    uint64_t head = atomic_load_explicit(&ep->rq_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&ep->rq_tail, memory_order_relaxed);
    uint64_t idx = (uint64_t)(slot - ep->rq);
    uint64_t target = tail + ((idx - tail) & ep->rq_mask);
    if (target >= head) {
        RF_LOG_ERRORF("verbs: QP %u: completion for a receive slot that is "
                      "not outstanding (ignored)",
                      wc->qp_num);
        return;
    }
    /* Every receive has its own CQE; a gap means lost completions. */
    for (uint64_t s = tail; s < target; s++)
        emit_slot(em, ep, &ep->rq[s & ep->rq_mask], RF_ERR_DISCONNECTED, 0);
    rf_completion c = {.context = slot->context,
                       .ep = rf_ep_public(&ep->base),
                       .op = RF_OP_RECV,
                       .status = recv_status(wc->status),
                       .len = 0,
                       .imm = 0};
    if (wc->status == IBV_WC_SUCCESS) {
        c.len = wc->byte_len;
        if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            c.op = RF_OP_RECV_WRITE_IMM;
            c.imm = ntohl(wc->imm_data);
        }
    } else {
        note_error(ep, wc, "receive");
    }
    verbs_emit(em, &c);
    atomic_store_explicit(&ep->rq_tail, target + 1, memory_order_release);
}

void verbs_ep_handle_wc(vemit *em, const struct ibv_wc *wc)
{
    vslot *slot = (vslot *)(uintptr_t)wc->wr_id;
    vep *ep = slot->ep;
    if (slot >= ep->sq && slot <= ep->sq + ep->sq_mask)
        handle_send_wc(em, ep, slot, wc);
    else
        handle_recv_wc(em, ep, slot, wc);
}

/* --- posting ------------------------------------------------------------- */

static int is_atomic(rf_op op)
{
    return op == RF_OP_FETCH_ADD || op == RF_OP_CMP_SWAP;
}

/* The work requests of one rf_post. Allocated zeroed and never cleared:
 * build_wr writes every field the op uses, and the fields no op of ours
 * uses (qp_type, bind_mw/tso) stay zero. */
static rf_status grow_scratch(vep *ep, size_t n)
{
    if (ep->scratch_cap >= n)
        return RF_OK;
    size_t cap = ep->scratch_cap ? ep->scratch_cap : 16;
    while (cap < n)
        cap *= 2;
    struct ibv_send_wr *w = calloc(cap, sizeof *w);
    struct ibv_sge *g = calloc(cap, sizeof *g);
    if (!w || !g) {
        free(w);
        free(g);
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_post: out of memory");
    }
    free(ep->wr_scratch);
    free(ep->sge_scratch);
    ep->wr_scratch = w;
    ep->sge_scratch = g;
    ep->scratch_cap = cap;
    return RF_OK;
}

/* ibv_wr_opcode of each postable rf_op (fabric.c rejects the others). */
static const enum ibv_wr_opcode wr_opcode[] = {
    [RF_OP_READ] = IBV_WR_RDMA_READ,
    [RF_OP_WRITE] = IBV_WR_RDMA_WRITE,
    [RF_OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
    [RF_OP_FETCH_ADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
    [RF_OP_CMP_SWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
    [RF_OP_SEND] = IBV_WR_SEND,
};

/* Fills the slot and the verbs work request of r: every field the op
 * uses (w is one of the zeroed scratch requests, grow_scratch). */
static void build_wr(vep *ep, const rf_wr *r, vslot *slot,
                     struct ibv_send_wr *w, struct ibv_sge *g)
{
    unsigned flags = 0;
    if (!(r->flags & RF_WR_UNSIGNALED))
        flags = VSLOT_USER_SIGNALED | VSLOT_HW_SIGNALED;
    else if (ep->unsig_run + 1 >= ep->sig_interval)
        flags = VSLOT_HW_SIGNALED;
    int atomic = is_atomic(r->op);
    if (atomic && (r->remote_addr & 7))
        flags |= VSLOT_MISALIGNED;
    ep->unsig_run = (flags & VSLOT_HW_SIGNALED) ? 0 : ep->unsig_run + 1;
    slot->context = r->context;
    slot->len = (uint32_t)r->len;
    slot->op = (uint8_t)r->op;
    slot->flags = (uint8_t)flags;

    unsigned send_flags = (flags & VSLOT_HW_SIGNALED) ? IBV_SEND_SIGNALED : 0;
    if (r->flags & RF_WR_FENCE)
        send_flags |= IBV_SEND_FENCE;
    /* Inline data is copied at post time: a fenced WR must read its
     * source only once the earlier reads/atomics have landed in it. */
    else if (r->len && r->len <= ep->max_inline &&
             (r->op == RF_OP_SEND || r->op == RF_OP_WRITE ||
              r->op == RF_OP_WRITE_IMM))
        send_flags |= IBV_SEND_INLINE;
    *g = (struct ibv_sge){.addr = (uint64_t)(uintptr_t)r->local,
                          .length = (uint32_t)r->len,
                          .lkey =
                              r->local_mr ? ((vmr *)r->local_mr)->mr->lkey : 0};
    w->wr_id = (uint64_t)(uintptr_t)slot;
    w->sg_list = g;
    w->num_sge = r->len ? 1 : 0;
    w->opcode = wr_opcode[r->op];
    w->send_flags = send_flags;
    w->imm_data = r->op == RF_OP_WRITE_IMM ? htonl(r->imm) : 0;
    if (atomic) {
        /* An unaligned atomic must complete with an error and break the
         * connection, as on hardware that sends it (the responder NAKs it
         * as an invalid request). Providers such as rxe refuse it at post
         * time, so send it to an address no region can contain: the
         * responder rejects it with an access error and touches nothing;
         * the completion is reported as RF_ERR_INVALID_ARG. */
        w->wr.atomic.remote_addr =
            (flags & VSLOT_MISALIGNED) ? UINT64_MAX - 7 : r->remote_addr;
        w->wr.atomic.rkey = r->rkey;
        w->wr.atomic.compare_add = r->compare_add;
        w->wr.atomic.swap = r->swap;
    } else if (r->op != RF_OP_SEND) {
        w->wr.rdma.remote_addr = r->remote_addr;
        w->wr.rdma.rkey = r->rkey;
    }
}

static rf_status post_error(int rc, size_t index, size_t n)
{
    rf_status st = rc == ENOMEM ? RF_ERR_NO_RESOURCE : verbs_errno_status(rc);
    return rf_error_set(st, "ibv_post_send(wr %zu of %zu): %s", index, n,
                        strerror(rc));
}

/* rf_post of one work request with room in the send queue (the common
 * case: rf-bench's loops, the ps's reads and atomics): the list path
 * without its loop, reclaim and partial-post bookkeeping. Returns 0 if
 * the queue is full, for the list path to reclaim; -1 and *st after an
 * ibv_post_send failure; 1 when posted. Caller holds sq_lock. */
static int post_one_locked(vep *ep, const rf_wr *r, rf_status *st)
{
    uint64_t head = atomic_load_explicit(&ep->sq_head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&ep->sq_tail, memory_order_acquire);
    if (head - tail >= ep->sq_size)
        return 0;
    struct ibv_send_wr *w = ep->wr_scratch, *bad = NULL;
    build_wr(ep, r, &ep->sq[head & ep->sq_mask], w, ep->sge_scratch);
    w->next = NULL;
    atomic_store_explicit(&ep->sq_head, head + 1, memory_order_release);
    int rc = ibv_post_send(ep->qp, w, &bad);
    if (rc == 0)
        return 1;
    atomic_store_explicit(&ep->sq_head, head, memory_order_release);
    ep->unsig_run = ep->sig_interval; /* next WR signaled: stay safe */
    *st = post_error(rc, 0, 1);
    return -1;
}

rf_status verbs_post(rf_ep *e, const rf_wr *wrs, size_t n, size_t *posted)
{
    vep *ep = (vep *)e;
    *posted = 0;
    if (atomic_load(&ep->error))
        return rf_error_set(RF_ERR_DISCONNECTED,
                            "rf_post: endpoint is in the error state");
    if (!ep->can_atomic)
        for (size_t i = 0; i < n; i++)
            if (is_atomic(wrs[i].op))
                return rf_error_set(RF_ERR_UNSUPPORTED,
                                    "rf_post: wr[%zu]: device %s has no "
                                    "atomic operations (atomic_cap "
                                    "IBV_ATOMIC_NONE)",
                                    i, ep->fab->devname);

    rf_spin_lock(&ep->sq_lock);
    if (n == 1) {
        rf_status st = RF_OK;
        int done = post_one_locked(ep, wrs, &st);
        if (done) {
            rf_spin_unlock(&ep->sq_lock);
            *posted = done > 0;
            return st;
        }
    }
    uint64_t head = atomic_load_explicit(&ep->sq_head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&ep->sq_tail, memory_order_acquire);
    size_t room = ep->sq_size - (size_t)(head - tail);
    if (room < n) {
        /* Reclaim what the device has completed (completions are kept). */
        rf_spin_lock(&ep->scq->lock);
        verbs_cq_progress_locked(ep->scq);
        rf_spin_unlock(&ep->scq->lock);
        tail = atomic_load_explicit(&ep->sq_tail, memory_order_acquire);
        room = ep->sq_size - (size_t)(head - tail);
    }
    size_t k = n < room ? n : room;
    if (k == 0) {
        rf_spin_unlock(&ep->sq_lock);
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "rf_post: send queue full (%u outstanding); "
                            "poll the send completion queue",
                            ep->sq_size);
    }
    rf_status st = grow_scratch(ep, k);
    if (st != RF_OK) {
        rf_spin_unlock(&ep->sq_lock);
        return st;
    }
    struct ibv_send_wr *w = ep->wr_scratch;
    struct ibv_sge *g = ep->sge_scratch;
    for (size_t i = 0; i < k; i++) {
        build_wr(ep, &wrs[i], &ep->sq[(head + i) & ep->sq_mask], &w[i], &g[i]);
        w[i].next = i + 1 < k ? &w[i + 1] : NULL;
    }
    atomic_store_explicit(&ep->sq_head, head + k, memory_order_release);
    struct ibv_send_wr *bad = NULL;
    int rc = ibv_post_send(ep->qp, w, &bad);
    if (rc) {
        size_t j = bad ? (size_t)(bad - w) : 0;
        if (j > k)
            j = 0;
        atomic_store_explicit(&ep->sq_head, head + j, memory_order_release);
        ep->unsig_run = ep->sig_interval; /* next WR signaled: stay safe */
        rf_spin_unlock(&ep->sq_lock);
        *posted = j;
        return post_error(rc, j, n);
    }
    rf_spin_unlock(&ep->sq_lock);
    *posted = k;
    if (k < n)
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "rf_post: send queue full after %zu of %zu work "
                            "requests (%u outstanding)",
                            k, n, ep->sq_size);
    return RF_OK;
}

rf_status verbs_post_recv(rf_ep *e, void *buf, size_t len, rf_mr *mr,
                          void *context)
{
    vep *ep = (vep *)e;
    if (atomic_load(&ep->error))
        return rf_error_set(RF_ERR_DISCONNECTED,
                            "rf_post_recv: endpoint is in the error state");
    rf_spin_lock(&ep->rq_lock);
    uint64_t head = atomic_load_explicit(&ep->rq_head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&ep->rq_tail, memory_order_acquire);
    if (head - tail >= ep->rq_size) {
        rf_spin_unlock(&ep->rq_lock);
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "rf_post_recv: receive queue full (%u posted)",
                            ep->rq_size);
    }
    vslot *slot = &ep->rq[head & ep->rq_mask];
    slot->context = context;
    slot->len = (uint32_t)len;
    slot->op = RF_OP_RECV;
    slot->flags = VSLOT_HW_SIGNALED;
    struct ibv_sge g = {.addr = (uint64_t)(uintptr_t)buf,
                        .length = (uint32_t)len,
                        .lkey = mr ? ((vmr *)mr)->mr->lkey : 0};
    struct ibv_recv_wr w = {.wr_id = (uint64_t)(uintptr_t)slot,
                            .sg_list = &g,
                            .num_sge = len ? 1 : 0};
    struct ibv_recv_wr *bad = NULL;
    atomic_store_explicit(&ep->rq_head, head + 1, memory_order_release);
    int rc = ibv_post_recv(ep->qp, &w, &bad);
    if (rc) {
        atomic_store_explicit(&ep->rq_head, head, memory_order_release);
        rf_spin_unlock(&ep->rq_lock);
        return rf_error_set(rc == ENOMEM ? RF_ERR_NO_RESOURCE
                                         : verbs_errno_status(rc),
                            "ibv_post_recv: %s", strerror(rc));
    }
    rf_spin_unlock(&ep->rq_lock);
    return RF_OK;
}

/* --- closing ------------------------------------------------------------- */

/* Posts the signaled drain marker; its flush CQE retires every earlier
 * slot. Returns 0 if it could not be posted. */
static int post_marker(vep *ep)
{
    rf_spin_lock(&ep->sq_lock);
    uint64_t head = atomic_load_explicit(&ep->sq_head, memory_order_relaxed);
    vslot *slot = &ep->sq[head & ep->sq_mask];
    slot->context = NULL;
    slot->len = 0;
    slot->op = VOP_MARKER;
    slot->flags = VSLOT_HW_SIGNALED;
    struct ibv_send_wr w = {.wr_id = (uint64_t)(uintptr_t)slot,
                            .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad = NULL;
    atomic_store_explicit(&ep->sq_head, head + 1, memory_order_release);
    int rc = ibv_post_send(ep->qp, &w, &bad);
    if (rc)
        atomic_store_explicit(&ep->sq_head, head, memory_order_release);
    rf_spin_unlock(&ep->sq_lock);
    if (rc)
        RF_LOG_DEBUG("verbs: QP %u: drain marker not posted: %s",
                     ep->qp->qp_num, strerror(rc));
    return rc == 0;
}

static int drained(vep *ep, int marker)
{
    int done = 1;
    rf_spin_lock(&ep->scq->lock);
    verbs_cq_progress_locked(ep->scq);
    if (marker ? !ep->sq_drained
               : atomic_load(&ep->sq_tail) != atomic_load(&ep->sq_head))
        done = 0;
    rf_spin_unlock(&ep->scq->lock);
    rf_spin_lock(&ep->rcq->lock);
    verbs_cq_progress_locked(ep->rcq);
    if (atomic_load(&ep->rq_tail) != atomic_load(&ep->rq_head))
        done = 0;
    rf_spin_unlock(&ep->rcq->lock);
    return done;
}

/* After the QP is destroyed no CQE can come: whatever is still outstanding
 * completes here with RF_ERR_DISCONNECTED. */
static void complete_leftovers(vep *ep)
{
    rf_spin_lock(&ep->scq->lock);
    verbs_cq_progress_locked(ep->scq);
    vemit em = {.cq = ep->scq, .out = NULL, .max = 0, .n = 0};
    uint64_t head = atomic_load(&ep->sq_head);
    for (uint64_t s = atomic_load(&ep->sq_tail); s < head; s++) {
        const vslot *u = &ep->sq[s & ep->sq_mask];
        if (u->op != VOP_MARKER)
            emit_slot(&em, ep, u, RF_ERR_DISCONNECTED, 0);
    }
    atomic_store(&ep->sq_tail, head);
    rf_spin_unlock(&ep->scq->lock);

    rf_spin_lock(&ep->rcq->lock);
    verbs_cq_progress_locked(ep->rcq);
    em.cq = ep->rcq;
    head = atomic_load(&ep->rq_head);
    for (uint64_t s = atomic_load(&ep->rq_tail); s < head; s++)
        emit_slot(&em, ep, &ep->rq[s & ep->rq_mask], RF_ERR_DISCONNECTED, 0);
    atomic_store(&ep->rq_tail, head);
    rf_spin_unlock(&ep->rcq->lock);
}

void verbs_ep_disconnect(vep *ep)
{
    /* The error state flushes all outstanding work; rdma_disconnect does
     * not move a QP it does not own (this provider makes the transitions).
     * Then the DREQ (or the DREP to the peer's). */
    if (ep->qp) {
        struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
        ibv_modify_qp(ep->qp, &a, IBV_QP_STATE);
    }
    verbs_cm_lock(ep->fab);
    rdma_disconnect(ep->cm.id);
    verbs_cm_unlock(ep->fab);
}

static void destroy_qp(vep *ep)
{
    int rc = ibv_destroy_qp(ep->qp);
    if (rc)
        RF_LOG_WARN("verbs: ibv_destroy_qp(QP %u): %s", ep->qp->qp_num,
                    strerror(rc));
    ep->qp = NULL;
}

void verbs_ep_destroy(vep *ep)
{
    if (ep->qp)
        destroy_qp(ep);
    if (ep->cm.id)
        rdma_destroy_id(ep->cm.id);
    pthread_mutex_destroy(&ep->cm_mu);
    pthread_cond_destroy(&ep->cm_cv);
    free(ep->sq);
    free(ep->rq);
    free(ep->wr_scratch);
    free(ep->sge_scratch);
    free(ep);
}

void verbs_ep_close(rf_ep *e)
{
    vep *ep = (vep *)e;
    vfab *fab = ep->fab;
    /* From here on the event thread no longer touches the endpoint. */
    verbs_unregister(fab, &ep->cm);
    atomic_store(&ep->error, 1);
    if (ep->qp) {
        verbs_ep_disconnect(ep);
        int marker = post_marker(ep);
        int64_t deadline = rf_deadline_ms(
            fab->qp.peer_timeout_ms < 2000 ? fab->qp.peer_timeout_ms : 2000);
        while (!drained(ep, marker)) {
            if (rf_deadline_left_ms(deadline) == 0) {
                RF_LOG_INFO("verbs: QP %u: flush incomplete after close; "
                            "completing the rest as disconnected",
                            ep->qp->qp_num);
                break;
            }
            usleep(200);
        }
        destroy_qp(ep);
        complete_leftovers(ep);
    }
    verbs_ep_destroy(ep);
}
