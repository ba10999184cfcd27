/* fabric/auto/auto_ep.c: the auto provider's endpoints. Each is carried by
 * one provider's endpoint; work requests are passed on with their local
 * regions replaced by that provider's registrations (arguments were
 * validated by fabric.c against the auto regions, which cover the same
 * bytes with the same access). */
#include <stdlib.h>
#include <string.h>

#include "fabric/auto/auto.h"

rf_ep_attr auto_sub_attr(const rf_ep_attr *attr, int which)
{
    rf_ep_attr s = *attr;
    s.send_cq = ((auto_cq *)attr->send_cq)->sub[which];
    s.recv_cq = attr->recv_cq ? ((auto_cq *)attr->recv_cq)->sub[which] : NULL;
    return s;
}

rf_status auto_ep_wrap(auto_fabric *fab, int which, rf_ep *sub,
                       const rf_ep_attr *attr, rf_ep **out)
{
    auto_ep *ep = calloc(1, sizeof *ep);
    if (!ep) {
        rf_ep_close(sub);
        return rf_error_set(RF_ERR_NO_MEMORY, "auto: out of memory");
    }
    ep->base.fabric = &fab->base;
    ep->base.send_cq = attr->send_cq;
    ep->base.recv_cq = attr->recv_cq ? attr->recv_cq : attr->send_cq;
    memcpy(ep->base.peer_priv, sub->peer_priv, sub->peer_priv_len);
    ep->base.peer_priv_len = sub->peer_priv_len;
    ep->sub = sub;
    ep->which = which;
    /* Before any work is posted: completions name this endpoint. */
    sub->owner = &ep->base;
    atomic_fetch_add_explicit(&((auto_cq *)ep->base.send_cq)->users[which], 1,
                              memory_order_release);
    atomic_fetch_add_explicit(&((auto_cq *)ep->base.recv_cq)->users[which], 1,
                              memory_order_release);
    *out = &ep->base;
    return RF_OK;
}

void auto_ep_close(rf_ep *base)
{
    auto_ep *ep = (auto_ep *)base;
    rf_ep_close(ep->sub);
    free(ep);
}

rf_status auto_ep_state(const rf_ep *base)
{
    return rf_ep_state(((const auto_ep *)base)->sub);
}

rf_status auto_ep_enable_remote_access(rf_ep *base)
{
    return rf_ep_enable_remote_access(((auto_ep *)base)->sub);
}

const char *auto_ep_provider(const rf_ep *base)
{
    return rf_ep_provider(((const auto_ep *)base)->sub);
}

static rf_mr *sub_mr(const auto_ep *ep, rf_mr *mr)
{
    return mr ? ((auto_mr *)mr)->sub[ep->which] : NULL;
}

#define AUTO_POST_BATCH 32
rf_status auto_post(rf_ep *base, const rf_wr *wrs, size_t n, size_t *posted)
{
    auto_ep *ep = (auto_ep *)base;
    const rf_provider_ops *ops = ep->sub->fabric->ops;
    rf_wr batch[AUTO_POST_BATCH];
    size_t done = 0;
    while (done < n) {
        size_t k = n - done < AUTO_POST_BATCH ? n - done : AUTO_POST_BATCH;
        for (size_t i = 0; i < k; i++) {
            batch[i] = wrs[done + i];
            batch[i].local_mr = sub_mr(ep, batch[i].local_mr);
        }
        size_t got = 0;
        rf_status st = ops->post(ep->sub, batch, k, &got);
        done += got;
        *posted = done;
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

rf_status auto_post_recv(rf_ep *base, void *buf, size_t len, rf_mr *mr,
                         void *context)
{
    auto_ep *ep = (auto_ep *)base;
    return ep->sub->fabric->ops->post_recv(ep->sub, buf, len, sub_mr(ep, mr),
                                           context);
}
