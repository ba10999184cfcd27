/* fabric/verbs/ref/verbs_ref_raw.c: rf-bench-verbs-ref's raw side: two RC
 * QPs connected to each other with librdmacm in one thread, and the posts
 * and polls of one 8-byte operation with ibv_post_send / ibv_poll_cq. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "rdmaflow/clock.h"
#include "verbs_ref.h"

/* Waits up to 10 s for the next rdma_cm event, which must be `want`. */
static int raw_event(raw *r, enum rdma_cm_event_type want,
                     struct rdma_cm_id **id)
{
    struct pollfd p = {.fd = r->ch->fd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1) {
        vref_fail("raw: no rdma_cm event (wanted %s) in 10 s",
                  rdma_event_str(want));
        return -1;
    }
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(r->ch, &ev)) {
        vref_fail("raw: rdma_get_cm_event: %s", strerror(errno));
        return -1;
    }
    int ok = ev->event == want && ev->status == 0;
    if (!ok)
        vref_fail("raw: rdma_cm event %s (status %d), wanted %s",
                  rdma_event_str(ev->event), ev->status, rdma_event_str(want));
    if (id)
        *id = ev->id;
    rdma_ack_cm_event(ev);
    return ok ? 0 : -1;
}

static int raw_qp(raw *r, struct rdma_cm_id *id, struct ibv_cq *cq)
{
    struct ibv_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = QDEPTH,
                .max_recv_wr = QDEPTH,
                .max_send_sge = 1,
                .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 0,
    };
    if (rdma_create_qp(id, r->pd, &qa)) {
        vref_fail("raw: rdma_create_qp: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int raw_post_recv(raw *r)
{
    struct ibv_recv_wr w = {.wr_id = 1, .num_sge = 0}, *bad;
    int rc = ibv_post_recv(r->srv->qp, &w, &bad);
    if (rc)
        vref_fail("raw: ibv_post_recv: %s", strerror(rc));
    return rc ? -1 : 0;
}

int vref_raw_open(raw *r, const struct sockaddr *addr)
{
    struct rdma_conn_param cp = {.responder_resources = 1,
                                 .initiator_depth = 1,
                                 .retry_count = 6,
                                 .rnr_retry_count = 6};
    struct sockaddr_storage dst;
    r->ch = rdma_create_event_channel();
    if (!r->ch) {
        vref_fail("raw: rdma_create_event_channel: %s", strerror(errno));
        return -1;
    }
    if (rdma_create_id(r->ch, &r->lid, NULL, RDMA_PS_TCP) ||
        rdma_bind_addr(r->lid, (struct sockaddr *)addr) ||
        rdma_listen(r->lid, 1) ||
        rdma_create_id(r->ch, &r->cli, NULL, RDMA_PS_TCP)) {
        vref_fail("raw: listen: %s", strerror(errno));
        return -1;
    }
    memcpy(&dst, addr, sizeof(struct sockaddr_in));
    ((struct sockaddr_in *)&dst)->sin_port = rdma_get_src_port(r->lid);
    if (rdma_resolve_addr(r->cli, NULL, (struct sockaddr *)&dst, 5000)) {
        vref_fail("raw: rdma_resolve_addr: %s", strerror(errno));
        return -1;
    }
    if (raw_event(r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL))
        return -1;
    if (rdma_resolve_route(r->cli, 5000)) {
        vref_fail("raw: rdma_resolve_route: %s", strerror(errno));
        return -1;
    }
    if (raw_event(r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL))
        return -1;
    r->pd = ibv_alloc_pd(r->cli->verbs);
    r->ccq = ibv_create_cq(r->cli->verbs, 2 * QDEPTH, NULL, NULL, 0);
    r->scq = ibv_create_cq(r->cli->verbs, 2 * QDEPTH, NULL, NULL, 0);
    if (!r->pd || !r->ccq || !r->scq) {
        vref_fail("raw: PD/CQ: %s", strerror(errno));
        return -1;
    }
    r->cmr = ibv_reg_mr(r->pd, r->cbuf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
    r->smr = ibv_reg_mr(r->pd, r->sbuf, BUF_SIZE,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    if (!r->cmr || !r->smr) {
        vref_fail("raw: ibv_reg_mr: %s", strerror(errno));
        return -1;
    }
    if (raw_qp(r, r->cli, r->ccq))
        return -1;
    if (rdma_connect(r->cli, &cp)) {
        vref_fail("raw: rdma_connect: %s", strerror(errno));
        return -1;
    }
    if (raw_event(r, RDMA_CM_EVENT_CONNECT_REQUEST, &r->srv))
        return -1;
    if (r->srv->verbs != r->cli->verbs) {
        vref_fail("raw: the connection request came in on another device");
        return -1;
    }
    if (raw_qp(r, r->srv, r->scq))
        return -1;
    for (int i = 0; i < QDEPTH; i++)
        if (raw_post_recv(r))
            return -1;
    if (rdma_accept(r->srv, &cp)) {
        vref_fail("raw: rdma_accept: %s", strerror(errno));
        return -1;
    }
    /* ESTABLISHED for both ids, in either order. */
    if (raw_event(r, RDMA_CM_EVENT_ESTABLISHED, NULL) ||
        raw_event(r, RDMA_CM_EVENT_ESTABLISHED, NULL))
        return -1;
    r->connected = 1;
    return 0;
}

void vref_raw_close(raw *r)
{
    if (r->connected) {
        /* Both ends disconnect (a DREQ each way, or the DREP to the
         * other's), so neither waits for the DREQ timeout. */
        rdma_disconnect(r->cli);
        rdma_disconnect(r->srv);
        raw_event(r, RDMA_CM_EVENT_DISCONNECTED, NULL);
        raw_event(r, RDMA_CM_EVENT_DISCONNECTED, NULL);
    }
    if (r->srv) {
        if (r->srv->qp)
            rdma_destroy_qp(r->srv);
        rdma_destroy_id(r->srv);
    }
    if (r->cli) {
        if (r->cli->qp)
            rdma_destroy_qp(r->cli);
        rdma_destroy_id(r->cli);
    }
    if (r->cmr)
        ibv_dereg_mr(r->cmr);
    if (r->smr)
        ibv_dereg_mr(r->smr);
    if (r->ccq)
        ibv_destroy_cq(r->ccq);
    if (r->scq)
        ibv_destroy_cq(r->scq);
    if (r->pd)
        ibv_dealloc_pd(r->pd);
    if (r->lid)
        rdma_destroy_id(r->lid);
    if (r->ch)
        rdma_destroy_event_channel(r->ch);
}

static struct ibv_send_wr raw_wr(raw *r, int op, struct ibv_sge *g)
{
    *g = (struct ibv_sge){.addr = (uintptr_t)(r->cbuf + LOCAL_OFF(op)),
                          .length = 8,
                          .lkey = r->cmr->lkey};
    struct ibv_send_wr w = {
        .sg_list = g, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED};
    uint64_t remote = (uintptr_t)(r->sbuf + REMOTE_OFF(op));
    switch (op) {
    case OP_READ:
        w.opcode = IBV_WR_RDMA_READ;
        break;
    case OP_WRITE:
        w.opcode = IBV_WR_RDMA_WRITE;
        break;
    case OP_WRITE_IMM:
        w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        break;
    case OP_FETCH_ADD:
        w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        w.wr.atomic.compare_add = 1;
        break;
    default:
        w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        break;
    }
    if (op == OP_FETCH_ADD || op == OP_CMP_SWAP) {
        w.wr.atomic.remote_addr = remote;
        w.wr.atomic.rkey = r->smr->rkey;
    } else {
        w.wr.rdma.remote_addr = remote;
        w.wr.rdma.rkey = r->smr->rkey;
    }
    return w;
}

/* The target side of a write_imm: its receive completion, reposted. */
static int raw_target(raw *r, int op)
{
    if (op != OP_WRITE_IMM)
        return 0;
    struct ibv_wc wc;
    int64_t deadline = rf_deadline_ms(10000);
    int n;
    while ((n = ibv_poll_cq(r->scq, 1, &wc)) == 0)
        if (rf_deadline_left_ms(deadline) == 0)
            break;
    if (n != 1 || wc.status != IBV_WC_SUCCESS ||
        wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
        vref_fail("raw: write_imm receive: %s",
                  n == 1 ? ibv_wc_status_str(wc.status)
                         : "no completion in 10 s");
        return -1;
    }
    return raw_post_recv(r);
}

/* count: 0 nothing, 1 the posts, 2 the polls. */
long vref_raw_loop(raw *r, int op, int iters, int count, uint64_t *seq)
{
    struct ibv_sge g;
    struct ibv_send_wr w = raw_wr(r, op, &g), *bad;
    long polls = 0;
    for (int i = 0; i < iters; i++, (*seq)++) {
        w.wr_id = *seq;
        w.imm_data = htonl((uint32_t)*seq);
        if (op == OP_CMP_SWAP) {
            w.wr.atomic.compare_add = *seq;
            w.wr.atomic.swap = *seq + 1;
        }
        int rc;
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        rc = ibv_post_send(r->cli->qp, &w, &bad);
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        if (rc) {
            vref_fail("raw: ibv_post_send(%s): %s", vref_op_name[op],
                      strerror(rc));
            return -1;
        }
        rf_sleep_ms(1);
        struct ibv_wc wc;
        int n;
        int64_t deadline = rf_deadline_ms(10000);
        do {
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            n = ibv_poll_cq(r->ccq, 1, &wc);
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            polls++;
        } while (n == 0 && rf_deadline_left_ms(deadline) != 0);
        if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != *seq) {
            vref_fail("raw: %s %llu: %s", vref_op_name[op],
                      (unsigned long long)*seq,
                      n == 1 ? ibv_wc_status_str(wc.status) : "no completion");
            return -1;
        }
        if (raw_target(r, op))
            return -1;
    }
    return polls;
}

long vref_raw_empty(raw *r, int iters)
{
    struct ibv_wc wc;
    long found = 0;
    for (int i = 0; i < iters; i++) {
        CALLGRIND_TOGGLE_COLLECT;
        int n = ibv_poll_cq(r->ccq, 1, &wc);
        CALLGRIND_TOGGLE_COLLECT;
        found += n;
    }
    return found;
}
