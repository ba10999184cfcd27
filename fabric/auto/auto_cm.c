/* fabric/auto/auto_cm.c: connection management of the auto provider. A
 * listener listens on the same port with every provider (so a peer can
 * reach it over any); a connect chooses per peer: shm when the address is
 * this host's, verbs when there is an RDMA device, sock otherwise, moving on
 * to the next when the peer has no listener of that provider (never after
 * a listener refused the request: the next would refuse it too). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fabric/auto/auto.h"
#include "fabric/local_addr.h"
#include "rdmaflow/clock.h"

/* --- listeners --------------------------------------------------------- */

void auto_listener_close(rf_listener *base)
{
    auto_listener *l = (auto_listener *)base;
    for (int i = 0; i < AUTO_N; i++)
        rf_listener_close(l->sub[i]);
    free(l);
}

/* Listens with every provider on port (sock first when port is 0, so the
 * port is one TCP has free). With a fixed port, sock comes last: a
 * connector that finds it finds the others too. verbs is skipped where no
 * RDMA device serves host. */
static rf_status listen_all(auto_fabric *fab, auto_listener *l,
                            const char *host, uint16_t port)
{
    static const int fixed[AUTO_N] = {AUTO_SHM, AUTO_VERBS, AUTO_SOCK};
    static const int any[AUTO_N] = {AUTO_SOCK, AUTO_SHM, AUTO_VERBS};
    const int *order = port ? fixed : any;
    for (int k = 0; k < AUTO_N; k++) {
        int i = order[k];
        if (!fab->sub[i])
            continue;
        rf_status st = rf_listen(fab->sub[i], host, port, &l->sub[i]);
        if (st != RF_OK && i == AUTO_VERBS) {
            RF_LOG_INFO("fabric auto: not listening with verbs on %s:%u: %s",
                        host ? host : "*", (unsigned)port, rf_error_message());
            l->sub[i] = NULL;
            continue;
        }
        if (st != RF_OK)
            return rf_error_set(st, "rf_listen (auto, with %s): %s",
                                auto_slot_name(i), rf_error_message());
        if (!port)
            port = rf_listener_port(l->sub[i]);
    }
    l->base.port = port;
    return RF_OK;
}

rf_status auto_listen(rf_fabric *fabric, const char *host, uint16_t port,
                      rf_listener **out)
{
    auto_fabric *fab = AUTO_FAB(fabric);
    /* A free TCP port may still be taken by another process's shm or
     * verbs listener: try a few. */
    for (int attempt = 0;; attempt++) {
        auto_listener *l = calloc(1, sizeof *l);
        if (!l)
            return rf_error_set(RF_ERR_NO_MEMORY, "rf_listen: out of memory");
        l->base.fabric = fabric;
        rf_status st = listen_all(fab, l, host, port);
        if (st == RF_OK) {
            *out = &l->base;
            return RF_OK;
        }
        auto_listener_close(&l->base);
        if (port || attempt == 7)
            return st;
    }
}

static rf_status wrap_request(auto_listener *l, int which, rf_conn_req *sub,
                              rf_conn_req **out)
{
    auto_req *r = calloc(1, sizeof *r);
    if (!r) {
        sub->listener->fabric->ops->reject(sub, NULL, 0);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_listener_get_request: out of memory");
    }
    r->base.listener = &l->base;
    memcpy(r->base.priv, sub->priv, sub->priv_len);
    r->base.priv_len = sub->priv_len;
    memcpy(r->base.peer, sub->peer, sizeof r->base.peer);
    r->sub = sub;
    r->which = which;
    *out = &r->base;
    return RF_OK;
}

rf_status auto_get_request(rf_listener *base, int timeout_ms, rf_conn_req **out)
{
    auto_listener *l = (auto_listener *)base;
    int act[AUTO_N], na = 0;
    for (int i = 0; i < AUTO_N; i++)
        if (l->sub[i])
            act[na++] = i;
    if (na == 1) {
        rf_conn_req *sub = NULL;
        rf_status st =
            rf_listener_get_request(l->sub[act[0]], timeout_ms, &sub);
        return st == RF_OK ? wrap_request(l, act[0], sub, out) : st;
    }
    int64_t deadline = rf_deadline_ms(timeout_ms);
    for (;;) {
        for (int k = 0; k < na; k++) {
            rf_conn_req *sub = NULL;
            rf_status st = rf_listener_get_request(l->sub[act[k]], 0, &sub);
            if (st == RF_OK)
                return wrap_request(l, act[k], sub, out);
            if (st != RF_ERR_TIMEOUT)
                return st;
        }
        int left = rf_deadline_left_ms(deadline);
        if (left == 0)
            return rf_error_set(RF_ERR_TIMEOUT,
                                "rf_listener_get_request: no connection "
                                "request within %d ms",
                                timeout_ms);
        int slice = AUTO_LISTEN_SLICE_MS;
        if (left > 0 && left < slice)
            slice = left;
        unsigned k =
            atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
        int i = act[k % (unsigned)na];
        rf_conn_req *sub = NULL;
        rf_status st = rf_listener_get_request(l->sub[i], slice, &sub);
        if (st == RF_OK)
            return wrap_request(l, i, sub, out);
        if (st != RF_ERR_TIMEOUT)
            return st;
    }
}

rf_status auto_accept(rf_conn_req *base, const rf_ep_attr *attr,
                      const void *priv, size_t priv_len, rf_ep **out)
{
    auto_req *r = (auto_req *)base;
    auto_fabric *fab = AUTO_FAB(base->listener->fabric);
    rf_ep_attr sattr = auto_sub_attr(attr, r->which);
    rf_ep *sub = NULL;
    rf_conn_req *sreq = r->sub;
    int which = r->which;
    free(r);
    rf_status st =
        sreq->listener->fabric->ops->accept(sreq, &sattr, priv, priv_len, &sub);
    if (st != RF_OK)
        return st;
    return auto_ep_wrap(fab, which, sub, attr, out);
}

void auto_reject(rf_conn_req *base, const void *priv, size_t priv_len)
{
    auto_req *r = (auto_req *)base;
    r->sub->listener->fabric->ops->reject(r->sub, priv, priv_len);
    free(r);
}

/* --- connect ----------------------------------------------------------- */

static void why_add(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void why_add(char *why, size_t len, const char *fmt, ...)
{
    if (!why || !len)
        return;
    size_t l = strlen(why);
    if (l + 3 >= len)
        return;
    if (l) {
        memcpy(why + l, "; ", 3);
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + l, len - l, fmt, ap);
    va_end(ap);
}

int auto_connect_order(const auto_fabric *fab, const char *host,
                       int order[AUTO_N], char *why, size_t why_len)
{
    if (why && why_len)
        why[0] = '\0';
    int local = rf_addr_is_local(host);
    if (local < 0)
        return -1;
    int n = 0;
    const char *h = host && *host ? host : "(no host)";
    if (local && fab->sub[AUTO_SHM]) {
        order[n++] = AUTO_SHM;
        why_add(why, why_len, "shm: %s is an address of this host", h);
    } else if (local) {
        why_add(why, why_len,
                "shm: %s is an address of this host, but shm is not in use "
                "(%s)",
                h, fab->why_not[AUTO_SHM]);
    } else {
        why_add(why, why_len, "shm: %s is not an address of this host", h);
    }
    if (fab->sub[AUTO_VERBS]) {
        order[n++] = AUTO_VERBS;
        why_add(why, why_len,
                "verbs: an RDMA device opened here%s (a peer without a "
                "verbs listener falls through to the next)",
                n > 1 ? ", tried after shm" : "");
    } else {
        why_add(why, why_len, "verbs: not in use (%s)",
                fab->why_not[AUTO_VERBS]);
    }
    order[n++] = AUTO_SOCK;
    why_add(why, why_len, "sock: reaches every peer%s",
            n > 1 ? " (the fallback)" : "");
    return n;
}

rf_status auto_connect(rf_fabric *fabric, const char *host, uint16_t port,
                       const rf_ep_attr *attr, const void *priv,
                       size_t priv_len, int timeout_ms, rf_ep **out)
{
    auto_fabric *fab = AUTO_FAB(fabric);
    int order[AUTO_N];
    int n = auto_connect_order(fab, host, order, NULL, 0);
    if (n < 0)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_connect: cannot resolve %s: %s", host,
                            rf_error_message());
    int64_t deadline = rf_deadline_ms(timeout_ms);
    char tried[192] = "";
    for (int k = 0; k < n; k++) {
        int i = order[k];
        int left = timeout_ms < 0 ? -1 : rf_deadline_left_ms(deadline);
        rf_ep_attr sattr = auto_sub_attr(attr, i);
        rf_ep *sub = NULL;
        rf_connect_reject_clear();
        rf_status st = fab->sub[i]->ops->connect(
            fab->sub[i], host, port, &sattr, priv, priv_len, left, &sub);
        if (st == RF_OK) {
            RF_LOG_INFO("fabric auto: connected to %s:%u with %s", host,
                        (unsigned)port, auto_slot_name(i));
            return auto_ep_wrap(fab, i, sub, attr, out);
        }
        if (st != RF_ERR_UNAVAILABLE || rf_connect_was_rejected())
            return st;
        size_t l = strlen(tried);
        snprintf(tried + l, sizeof tried - l, "%s%s: %s", l ? "; " : "",
                 auto_slot_name(i), rf_error_message());
        RF_LOG_DEBUG("fabric auto: %s:%u not reachable with %s: %s", host,
                     (unsigned)port, auto_slot_name(i), rf_error_message());
    }
    return rf_error_set(RF_ERR_UNAVAILABLE,
                        "rf_connect: no listener on %s:%u with any provider "
                        "(%s)",
                        host, (unsigned)port, tried);
}
