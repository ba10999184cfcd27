/* fabric/verbs/verbs_cm.c: connection management with librdmacm.
 * Active side: rdma_resolve_addr -> rdma_resolve_route -> the QP (fabric's
 * PD and CQs, INIT) -> rdma_connect with private data -> CONNECT_RESPONSE
 * -> the QP to RTS -> rdma_establish (the RTU).
 * Passive side: rdma_bind_addr + rdma_listen; CONNECT_REQUEST events become
 * rf_conn_req (queued by the event thread); the QP to RTS, then
 * rdma_accept / rdma_reject with reply private data; rf_accept returns
 * once ESTABLISHED (the connector's QP is then ready to receive).
 * The QP is not attached to the cm_id: this provider makes its transitions
 * with rdma_init_qp_attr's attributes, as librdmacm would, except that a
 * gated endpoint (RF_EP_REMOTE_ACCESS_OFF) never has remote access before
 * rf_ep_enable_remote_access (librdmacm grants it as the QP leaves INIT,
 * before the reply goes out). The calling thread issues each rdma_cm
 * step and sleeps on the endpoint's condition variable until the event
 * thread (verbs_event.c) reports that step's event. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verbs/verbs_internal.h"

/* IB CM reject reasons seen by the connector (IBTA table 112). */
#define IB_REJ_INVALID_SERVICE_ID 8
#define IB_REJ_CONSUMER_DEFINED   28
#define IB_REJ_TIMEOUT            1

#define RESOLVE_STEP_MS 5000

/* --- called by the event thread (reg_lock held) -------------------------- */

void verbs_cm_dispatch_ep(vep *ep, const struct rdma_cm_event *ev)
{
    int disconnect = 0;
    pthread_mutex_lock(&ep->cm_mu);
    switch (ev->event) {
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        ep->disconnected = 1;
        verbs_ep_set_error(ep, 0);
        disconnect = ev->event == RDMA_CM_EVENT_DISCONNECTED;
        break;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
    case RDMA_CM_EVENT_REJECTED:
        ep->ev_priv_len = 0;
        ep->ev_priv_ok = verbs_priv_decode(ep->fab, ev->param.conn.private_data,
                                           ev->param.conn.private_data_len,
                                           ep->ev_priv, &ep->ev_priv_len) == 0;
        /* fall through */
    case RDMA_CM_EVENT_ADDR_RESOLVED:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        ep->ev_type = ev->event;
        ep->ev_status = ev->status;
        ep->ev_seq++;
        break;
    default: /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
        break;
    }
    pthread_cond_broadcast(&ep->cm_cv);
    pthread_mutex_unlock(&ep->cm_mu);
    /* The peer disconnected: flush our QP and answer with a DREP. */
    if (disconnect)
        verbs_ep_disconnect(ep);
}

/* The connector's address as "ip:port" (IPv4 or IPv6), for logs. */
static void describe_peer(struct rdma_cm_id *id, char *buf, size_t len)
{
    struct sockaddr *sa = rdma_get_peer_addr(id);
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa && sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)(void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        port = ntohs(in->sin_port);
    } else if (sa && sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in = (struct sockaddr_in6 *)(void *)sa;
        inet_ntop(AF_INET6, &in->sin6_addr, ip, sizeof ip);
        port = ntohs(in->sin6_port);
    }
    snprintf(buf, len, "%s:%u", ip, port);
}

int verbs_cm_dispatch_request(vlistener *l, const struct rdma_cm_event *ev)
{
    vfab *fab = l->fab;
    if (ev->id->verbs != fab->ctx) {
        RF_LOG_WARN("verbs: connection request on device %s rejected: the "
                    "fabric uses %s",
                    ev->id->verbs ? ibv_get_device_name(ev->id->verbs->device)
                                  : "?",
                    fab->devname);
        return 0;
    }
    vreq *r = calloc(1, sizeof *r);
    if (!r)
        return 0;
    if (verbs_priv_decode(fab, ev->param.conn.private_data,
                          ev->param.conn.private_data_len, r->base.priv,
                          &r->base.priv_len)) {
        RF_LOG_WARN("verbs: connection request with malformed private data "
                    "rejected");
        free(r);
        return 0;
    }
    r->base.listener = &l->base;
    r->id = ev->id;
    describe_peer(ev->id, r->base.peer, sizeof r->base.peer);
    r->peer_resp_res = ev->param.conn.responder_resources;
    r->peer_init_depth = ev->param.conn.initiator_depth;
    pthread_mutex_lock(&l->mu);
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return 1;
}

/* --- waiting for a connection step ----------------------------------------*/

/* Waits for the next connection-phase event after *seq. Returns 0 on
 * timeout, else 1 with the event (RDMA_CM_EVENT_DISCONNECTED if the
 * connection went away instead). */
static int wait_step(vep *ep, unsigned *seq, int64_t deadline, int *type,
                     int *status)
{
    int got = 0;
    pthread_mutex_lock(&ep->cm_mu);
    while (ep->ev_seq == *seq && !ep->disconnected)
        if (rf_cond_wait_until(&ep->cm_cv, &ep->cm_mu, deadline) == ETIMEDOUT)
            break;
    if (ep->ev_seq != *seq) {
        *type = ep->ev_type;
        *status = ep->ev_status;
        *seq = ep->ev_seq;
        got = 1;
    } else if (ep->disconnected) {
        *type = RDMA_CM_EVENT_DISCONNECTED;
        *status = 0;
        got = 1;
    }
    pthread_mutex_unlock(&ep->cm_mu);
    return got;
}

static unsigned current_seq(vep *ep)
{
    pthread_mutex_lock(&ep->cm_mu);
    unsigned s = ep->ev_seq;
    pthread_mutex_unlock(&ep->cm_mu);
    return s;
}

static int step_timeout(int64_t deadline)
{
    int left = rf_deadline_left_ms(deadline);
    if (left < 0 || left > RESOLVE_STEP_MS)
        return RESOLVE_STEP_MS;
    return left > 0 ? left : 1;
}

static uint8_t cap8(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Describes reject private data for the error message. */
static void describe_priv(const unsigned char *p, size_t len, char *buf,
                          size_t size)
{
    int printable = len > 0;
    for (size_t i = 0; i < len; i++)
        if (!isprint(p[i]))
            printable = 0;
    if (len == 0) {
        snprintf(buf, size, "no private data");
    } else if (printable) {
        snprintf(buf, size, "private data \"%.*s\"", (int)len, (const char *)p);
    } else {
        size_t o =
            (size_t)snprintf(buf, size, "%zu bytes of private data:", len);
        for (size_t i = 0; i < len && i < 16 && o + 4 < size; i++)
            o += (size_t)snprintf(buf + o, size - o, " %02x", p[i]);
        if (len > 16 && o + 5 < size)
            snprintf(buf + o, size - o, " ...");
    }
}

/* --- active side ----------------------------------------------------------*/

static rf_status connect_fail(vep *ep, rf_status st)
{
    verbs_unregister(ep->fab, &ep->cm);
    verbs_ep_destroy(ep);
    return st;
}

static rf_status step_error(const char *call, const char *peer, int type,
                            int status)
{
    if (type == RDMA_CM_EVENT_DISCONNECTED)
        return rf_error_set(RF_ERR_UNAVAILABLE, "%s(%s): connection lost", call,
                            peer);
    if (status < 0)
        return rf_error_set(status == -ETIMEDOUT ? RF_ERR_UNAVAILABLE
                                                 : verbs_errno_status(-status),
                            "%s(%s): %s: %s", call, peer, verbs_event_str(type),
                            strerror(-status));
    return rf_error_set(RF_ERR_UNAVAILABLE, "%s(%s): %s (status %d)", call,
                        peer, verbs_event_str(type), status);
}

/* rf_connect's "no answer" failure; the endpoint goes (connect_fail). */
static rf_status connect_timeout(vep *ep, const char *peer, int timeout_ms)
{
    return connect_fail(ep, rf_error_set(RF_ERR_TIMEOUT,
                                         "rf_connect(%s): no answer within "
                                         "%d ms",
                                         peer, timeout_ms));
}

/* rdma_resolve_addr, then rdma_resolve_route, each awaited until the
 * deadline. On failure the endpoint is gone (connect_fail). */
static rf_status resolve_route(vfab *fab, vep *ep,
                               const struct sockaddr_storage *dst,
                               const char *peer, int64_t deadline,
                               int timeout_ms, unsigned *seq)
{
    struct rdma_cm_id *id = ep->cm.id;
    int type = 0, status = 0;
    verbs_cm_lock(fab);
    int rc = rdma_resolve_addr(
        id, fab->have_src ? (struct sockaddr *)&fab->src : NULL,
        (struct sockaddr *)dst, step_timeout(deadline));
    int err = errno;
    verbs_cm_unlock(fab);
    if (rc) {
        return connect_fail(ep, rf_error_set(verbs_errno_status(err),
                                             "rdma_resolve_addr(%s): %s", peer,
                                             strerror(err)));
    }
    if (!wait_step(ep, seq, deadline, &type, &status))
        return connect_timeout(ep, peer, timeout_ms);
    if (type != RDMA_CM_EVENT_ADDR_RESOLVED)
        return connect_fail(
            ep, step_error("rdma_resolve_addr", peer, type, status));

    verbs_cm_lock(fab);
    rc = rdma_resolve_route(id, step_timeout(deadline));
    err = errno;
    verbs_cm_unlock(fab);
    if (rc) {
        return connect_fail(ep, rf_error_set(verbs_errno_status(err),
                                             "rdma_resolve_route(%s): %s", peer,
                                             strerror(err)));
    }
    if (!wait_step(ep, seq, deadline, &type, &status))
        return connect_timeout(ep, peer, timeout_ms);
    if (type != RDMA_CM_EVENT_ROUTE_RESOLVED)
        return connect_fail(
            ep, step_error("rdma_resolve_route", peer, type, status));
    return RF_OK;
}

/* rdma_connect with our private data and the device's RDMA read limits. */
static rf_status send_connect(vfab *fab, vep *ep, const void *priv,
                              size_t priv_len, const char *peer)
{
    unsigned char wire[VPRIV_WIRE_MAX];
    struct rdma_conn_param cp = {
        .private_data = wire,
        .responder_resources = cap8(fab->dev_attr.max_qp_rd_atom),
        .initiator_depth = cap8(fab->dev_attr.max_qp_init_rd_atom),
        .retry_count = fab->qp.retry_cnt,
        .rnr_retry_count = fab->qp.rnr_retry,
        .qp_num = ep->qp->qp_num,
    };
    verbs_priv_encode(fab, priv, priv_len, wire, &cp.private_data_len);
    verbs_cm_lock(fab);
    int rc = rdma_connect(ep->cm.id, &cp);
    int err = errno;
    verbs_cm_unlock(fab);
    if (rc)
        return rf_error_set(verbs_errno_status(err), "rdma_connect(%s): %s",
                            peer, strerror(err));
    return RF_OK;
}

/* The error for a REJECTED event: the peer's own reject (its private data
 * kept for rf_reject_data), no listener, or another IB CM reason. */
static rf_status connect_rejected(vep *ep, int status, const char *peer)
{
    char why[160];
    pthread_mutex_lock(&ep->cm_mu);
    describe_priv(ep->ev_priv, ep->ev_priv_len, why, sizeof why);
    if (status == IB_REJ_CONSUMER_DEFINED)
        rf_set_reject_data(ep->ev_priv, ep->ev_priv_len);
    pthread_mutex_unlock(&ep->cm_mu);
    if (status == IB_REJ_CONSUMER_DEFINED)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rdma_connect(%s): rejected by the peer (%s)", peer,
                            why);
    if (status == IB_REJ_INVALID_SERVICE_ID)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rdma_connect(%s): connection refused (no "
                            "listener on that port)",
                            peer);
    return rf_error_set(RF_ERR_UNAVAILABLE,
                        "rdma_connect(%s): rejected (IB CM reason %d)", peer,
                        status);
}

/* The accept reply's private data becomes the endpoint's peer_priv. */
static void take_accept_data(vep *ep, const char *peer)
{
    pthread_mutex_lock(&ep->cm_mu);
    int ok = ep->ev_priv_ok;
    memcpy(ep->base.peer_priv, ep->ev_priv, ep->ev_priv_len);
    ep->base.peer_priv_len = ep->ev_priv_len;
    pthread_mutex_unlock(&ep->cm_mu);
    if (!ok)
        RF_LOG_WARN("verbs: rf_connect(%s): malformed private data in the "
                    "accept reply (ignored)",
                    peer);
}

rf_status verbs_connect(rf_fabric *fabric, const char *host, uint16_t port,
                        const rf_ep_attr *attr, const void *priv,
                        size_t priv_len, int timeout_ms, rf_ep **out)
{
    vfab *fab = (vfab *)fabric;
    struct sockaddr_storage dst;
    rf_status st = verbs_resolve("rf_connect", host, port, &dst);
    if (st != RF_OK)
        return st;
    char peer[80];
    verbs_addr_str((struct sockaddr *)&dst, peer, sizeof peer);
    int64_t deadline = rf_deadline_ms(timeout_ms);

    vep *ep;
    st = verbs_ep_alloc(fab, attr, &ep);
    if (st != RF_OK)
        return st;
    verbs_cm_lock(fab);
    int rc = rdma_create_id(fab->ch, &ep->cm.id, NULL, RDMA_PS_TCP);
    int err = errno;
    verbs_cm_unlock(fab);
    if (rc) {
        verbs_ep_destroy(ep);
        return rf_error_set(verbs_errno_status(err), "rdma_create_id: %s",
                            strerror(err));
    }
    verbs_register(fab, &ep->cm);
    struct rdma_cm_id *id = ep->cm.id;
    unsigned seq = current_seq(ep);
    int type = 0, status = 0;
    st = resolve_route(fab, ep, &dst, peer, deadline, timeout_ms, &seq);
    if (st != RF_OK)
        return st; /* the endpoint is gone */

    verbs_cm_lock(fab);
    st = verbs_ep_create_qp(ep, id, "rf_connect");
    verbs_cm_unlock(fab);
    if (st != RF_OK)
        return connect_fail(ep, st);
    if ((st = send_connect(fab, ep, priv, priv_len, peer)) != RF_OK)
        return connect_fail(ep, st);
    if (!wait_step(ep, &seq, deadline, &type, &status))
        return connect_timeout(ep, peer, timeout_ms);
    if (type == RDMA_CM_EVENT_REJECTED)
        return connect_fail(ep, connect_rejected(ep, status, peer));
    if (type != RDMA_CM_EVENT_CONNECT_RESPONSE)
        return connect_fail(ep, step_error("rdma_connect", peer, type, status));
    /* The accept reply: our QP to RTS with the attributes it brings, then
     * the RTU (rdma_establish), after which the peer may send. */
    if ((st = verbs_ep_qp_ready(ep, -1, -1, "rf_connect")) != RF_OK)
        return connect_fail(ep, st);
    verbs_cm_lock(fab);
    rc = rdma_establish(id);
    err = errno;
    verbs_cm_unlock(fab);
    if (rc)
        return connect_fail(ep, rf_error_set(verbs_errno_status(err),
                                             "rdma_establish(%s): %s", peer,
                                             strerror(err)));
    take_accept_data(ep, peer);
    RF_LOG_DEBUG("verbs: connected to %s (QP %u)", peer, ep->qp->qp_num);
    *out = &ep->base;
    return RF_OK;
}

/* --- passive side ---------------------------------------------------------*/

rf_status verbs_listen(rf_fabric *fabric, const char *host, uint16_t port,
                       rf_listener **out)
{
    vfab *fab = (vfab *)fabric;
    struct sockaddr_storage addr;
    rf_status st = verbs_resolve("rf_listen", host, port, &addr);
    if (st != RF_OK)
        return st;
    char where[80];
    verbs_addr_str((struct sockaddr *)&addr, where, sizeof where);
    vlistener *l = calloc(1, sizeof *l);
    if (!l)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_listen: out of memory");
    l->base.fabric = fabric;
    l->fab = fab;
    l->cm.kind = VCM_LISTENER;
    pthread_mutex_init(&l->mu, NULL);
    rf_cond_init_monotonic(&l->cv);
    verbs_cm_lock(fab);
    int rc = rdma_create_id(fab->ch, &l->cm.id, NULL, RDMA_PS_TCP);
    int err = errno;
    if (rc == 0) {
        int one = 1;
        if (rdma_set_option(l->cm.id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
                            &one, sizeof one))
            RF_LOG_DEBUG("verbs: rdma_set_option(REUSEADDR): %s",
                         strerror(errno));
    }
    verbs_cm_unlock(fab);
    if (rc) {
        l->cm.id = NULL;
        st = rf_error_set(verbs_errno_status(err), "rdma_create_id: %s",
                          strerror(err));
        goto fail;
    }
    verbs_cm_lock(fab);
    rc = rdma_bind_addr(l->cm.id, (struct sockaddr *)&addr);
    err = errno;
    verbs_cm_unlock(fab);
    if (rc) {
        st = rf_error_set(verbs_errno_status(err), "rdma_bind_addr(%s): %s",
                          where, strerror(err));
        goto fail;
    }
    if (l->cm.id->verbs && l->cm.id->verbs != fab->ctx) {
        st = rf_error_set(RF_ERR_UNAVAILABLE,
                          "rf_listen(%s): the address is on device %s, but "
                          "the fabric was opened on %s",
                          where, ibv_get_device_name(l->cm.id->verbs->device),
                          fab->devname);
        goto fail;
    }
    verbs_register(fab, &l->cm);
    verbs_cm_lock(fab);
    rc = rdma_listen(l->cm.id, 128);
    err = errno;
    verbs_cm_unlock(fab);
    if (rc) {
        st = rf_error_set(verbs_errno_status(err), "rdma_listen(%s): %s", where,
                          strerror(err));
        verbs_unregister(fab, &l->cm);
        goto fail;
    }
    l->base.port = ntohs(rdma_get_src_port(l->cm.id));
    RF_LOG_DEBUG("verbs: listening on %s (port %u)", where, l->base.port);
    *out = &l->base;
    return RF_OK;
fail:
    if (l->cm.id)
        rdma_destroy_id(l->cm.id);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
    return st;
}

void verbs_listener_close(rf_listener *listener)
{
    vlistener *l = (vlistener *)listener;
    verbs_unregister(l->fab, &l->cm);
    rdma_destroy_id(l->cm.id);
    /* Requests nobody took: refuse them. */
    vreq *r = l->head;
    while (r) {
        vreq *next = r->next;
        verbs_cm_lock(l->fab);
        rdma_reject(r->id, NULL, 0);
        verbs_cm_unlock(l->fab);
        rdma_destroy_id(r->id);
        free(r);
        r = next;
    }
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

rf_status verbs_get_request(rf_listener *listener, int timeout_ms,
                            rf_conn_req **out)
{
    vlistener *l = (vlistener *)listener;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (!l->head && !l->broken)
        if (rf_cond_wait_until(&l->cv, &l->mu, deadline) == ETIMEDOUT)
            break;
    vreq *r = l->head;
    if (r) {
        l->head = r->next;
        if (!l->head)
            l->tail = NULL;
        r->next = NULL;
    }
    int broken = l->broken;
    pthread_mutex_unlock(&l->mu);
    if (r) {
        *out = &r->base;
        return RF_OK;
    }
    if (broken)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_listener_get_request: device removed");
    return rf_error_set(RF_ERR_TIMEOUT,
                        "rf_listener_get_request: no connection request "
                        "within %d ms",
                        timeout_ms);
}

void verbs_reject(rf_conn_req *req, const void *priv, size_t priv_len)
{
    vreq *r = (vreq *)req;
    vfab *fab = ((vlistener *)req->listener)->fab;
    unsigned char wire[VPRIV_WIRE_MAX];
    uint8_t n = 0;
    verbs_priv_encode(fab, priv, priv_len, wire, &n);
    verbs_cm_lock(fab);
    if (rdma_reject(r->id, wire, n))
        RF_LOG_INFO("verbs: rdma_reject: %s", strerror(errno));
    verbs_cm_unlock(fab);
    rdma_destroy_id(r->id);
    free(r);
}

rf_status verbs_accept(rf_conn_req *req, const rf_ep_attr *attr,
                       const void *priv, size_t priv_len, rf_ep **out)
{
    vreq *r = (vreq *)req;
    vfab *fab = ((vlistener *)req->listener)->fab;
    char peer[80];
    verbs_addr_str(rdma_get_peer_addr(r->id), peer, sizeof peer);

    vep *ep;
    rf_status st = verbs_ep_alloc(fab, attr, &ep);
    if (st != RF_OK) {
        verbs_reject(req, NULL, 0);
        return st;
    }
    ep->cm.id = r->id;
    verbs_cm_lock(fab);
    st = verbs_ep_create_qp(ep, r->id, "rf_accept");
    if (st != RF_OK)
        rdma_reject(r->id, NULL, 0);
    verbs_cm_unlock(fab);
    if (st != RF_OK) {
        verbs_ep_destroy(ep); /* destroys the cm_id */
        free(r);
        return st;
    }
    memcpy(ep->base.peer_priv, r->base.priv, r->base.priv_len);
    ep->base.peer_priv_len = r->base.priv_len;
    verbs_register(fab, &ep->cm);

    unsigned char wire[VPRIV_WIRE_MAX];
    int rd = fab->dev_attr.max_qp_rd_atom,
        init = fab->dev_attr.max_qp_init_rd_atom;
    struct rdma_conn_param cp = {
        .private_data = wire,
        .responder_resources =
            cap8(rd < r->peer_init_depth ? rd : r->peer_init_depth),
        .initiator_depth =
            cap8(init < r->peer_resp_res ? init : r->peer_resp_res),
        .rnr_retry_count = fab->qp.rnr_retry,
        .qp_num = ep->qp->qp_num,
    };
    verbs_priv_encode(fab, priv, priv_len, wire, &cp.private_data_len);
    free(r);
    unsigned seq = current_seq(ep);
    /* RTS before the reply goes out: the connector may send as soon as it
     * has it. A gated endpoint gets there with no remote access at all. */
    verbs_cm_lock(fab);
    st = verbs_ep_qp_ready(ep, cp.responder_resources, cp.initiator_depth,
                           "rf_accept");
    int rc = -1, err = 0;
    if (st != RF_OK)
        rdma_reject(ep->cm.id, NULL, 0);
    else {
        rc = rdma_accept(ep->cm.id, &cp);
        err = errno;
    }
    verbs_cm_unlock(fab);
    if (st != RF_OK)
        return connect_fail(ep, st);
    if (rc) {
        /* EINVAL: the request is no longer pending (connector gave up). */
        rf_status ast = err == ENOMEM ? RF_ERR_NO_MEMORY : RF_ERR_UNAVAILABLE;
        return connect_fail(
            ep, rf_error_set(ast, "rdma_accept(%s): %s", peer, strerror(err)));
    }
    int type = 0, status = 0;
    int64_t deadline = rf_deadline_ms(fab->qp.peer_timeout_ms);
    if (!wait_step(ep, &seq, deadline, &type, &status))
        return connect_fail(ep, rf_error_set(RF_ERR_TIMEOUT,
                                             "rf_accept(%s): connection not "
                                             "established within %d ms",
                                             peer, fab->qp.peer_timeout_ms));
    if (type == RDMA_CM_EVENT_DISCONNECTED) {
        /* A DREQ before the RTU: the connector was connected (only then
         * does it disconnect) and already left, e.g. after an error. The
         * endpoint exists, in the error state, like any that lost its
         * peer. */
        RF_LOG_INFO("verbs: rf_accept(%s): the peer disconnected as soon as "
                    "it connected",
                    peer);
        *out = &ep->base;
        return RF_OK;
    }
    if (type != RDMA_CM_EVENT_ESTABLISHED)
        return connect_fail(ep, step_error("rf_accept", peer, type, status));
    RF_LOG_DEBUG("verbs: accepted %s (QP %u)", peer, ep->qp->qp_num);
    *out = &ep->base;
    return RF_OK;
}
