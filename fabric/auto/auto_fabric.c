/* fabric/auto/auto_fabric.c: the auto provider's fabric, regions and
 * completion queues, and its ops table. A region is registered on every
 * sub-fabric under one rkey (the primary's: verbs when there is a device,
 * since a NIC chooses its own keys, else sock's), so a peer holding its
 * descriptor reaches it over whichever provider carries the peer. A CQ polls
 * the sub-CQs of the providers that carry at least one of its endpoints and
 * blocks in the provider when only one does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fabric/auto/auto.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"

static const rf_provider_ops *slot_ops(int which)
{
    switch (which) {
    case AUTO_SHM:
        return &rf_shm_provider;
#ifdef RF_HAVE_VERBS
    case AUTO_VERBS:
        return &rf_verbs_provider;
#endif
    case AUTO_SOCK:
        return &rf_sock_provider;
    default:
        return NULL;
    }
}

const char *auto_slot_name(int which)
{
    static const char *const names[AUTO_N] = {"shm", "verbs", "sock"};
    return which >= 0 && which < AUTO_N ? names[which] : "?";
}

static void auto_fabric_close(rf_fabric *fabric)
{
    auto_fabric *fab = AUTO_FAB(fabric);
    for (int i = AUTO_N - 1; i >= 0; i--)
        rf_fabric_close(fab->sub[i]);
    free(fab);
}

/* RF_AUTO_PROVIDERS: the providers auto may use, a comma-separated list
 * of shm, verbs and sock (sock required); unset: all. */
rf_status rf_auto_allowed_providers(int allowed[AUTO_N])
{
    const char *v = rf_setting_str("RF_AUTO_PROVIDERS");
    for (int i = 0; i < AUTO_N; i++)
        allowed[i] = v == NULL;
    if (!v)
        return RF_OK;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int i = 0; i < AUTO_N; i++) {
            const char *name = auto_slot_name(i);
            if (n == strlen(name) && strncmp(p, name, n) == 0)
                allowed[i] = found = 1;
        }
        if (!found)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "RF_AUTO_PROVIDERS: '%.*s' in '%s' is not "
                                "one of shm, verbs, sock",
                                (int)n, p, v);
        p += n;
        if (*p == ',')
            p++;
    }
    if (!allowed[AUTO_SOCK])
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "RF_AUTO_PROVIDERS: '%s' must include sock (the "
                            "provider every peer can reach)",
                            v);
    return RF_OK;
}

static rf_status auto_fabric_open(const rf_fabric_attr *attr, rf_fabric **out)
{
    int allowed[AUTO_N];
    rf_status ast = rf_auto_allowed_providers(allowed);
    if (ast != RF_OK)
        return ast;
    auto_fabric *fab = calloc(1, sizeof *fab);
    if (!fab)
        return rf_error_set(RF_ERR_NO_MEMORY, "auto: out of memory");
    char chosen[64] = "";
    for (int i = 0; i < AUTO_N; i++) {
        const rf_provider_ops *ops = slot_ops(i);
        if (!ops) {
            snprintf(fab->why_not[i], sizeof fab->why_not[i],
                     "%s is not built in (libibverbs/librdmacm were not "
                     "found at build time)",
                     auto_slot_name(i));
            continue;
        }
        if (!allowed[i]) {
            snprintf(fab->why_not[i], sizeof fab->why_not[i],
                     "RF_AUTO_PROVIDERS=%s leaves it out",
                     RF_ECHO(rf_env_str("RF_AUTO_PROVIDERS", "")));
            continue;
        }
        rf_status st = rf_provider_open(ops, attr, &fab->sub[i]);
        if (st != RF_OK) {
            fab->sub[i] = NULL;
            snprintf(fab->why_not[i], sizeof fab->why_not[i], "%s",
                     rf_error_message());
            if (i == AUTO_SOCK) {
                rf_status e =
                    rf_error_set(st, "auto: the sock provider cannot open: %s",
                                 rf_error_message());
                auto_fabric_close(&fab->base);
                return e;
            }
            RF_LOG_INFO("fabric auto: provider %s unavailable: %s", ops->name,
                        rf_error_message());
            continue;
        }
        size_t l = 0;
        while (chosen[l])
            l++;
        snprintf(chosen + l, sizeof chosen - l, "%s%s", l ? " " : "",
                 ops->name);
    }
    fab->primary = fab->sub[AUTO_VERBS] ? AUTO_VERBS : AUTO_SOCK;
    for (int i = 0; i < AUTO_N; i++)
        if (fab->sub[i] && fab->sub[i]->progress == RF_PROGRESS_MANUAL)
            fab->base.progress = RF_PROGRESS_MANUAL;
    RF_LOG_INFO("fabric auto: providers %s (regions keyed by %s)", chosen,
                auto_slot_name(fab->primary));
    *out = &fab->base;
    return RF_OK;
}

/* --- memory regions ---------------------------------------------------- */

static void mr_free(auto_mr *mr)
{
    for (int i = AUTO_N - 1; i >= 0; i--)
        if (mr->sub[i])
            (void)rf_mr_dereg(mr->sub[i]);
    free(mr);
}

static rf_status auto_mr_reg(rf_fabric *fabric, void *addr, size_t len,
                             uint32_t access, rf_mr **out)
{
    auto_fabric *fab = AUTO_FAB(fabric);
    auto_mr *mr = calloc(1, sizeof *mr);
    if (!mr)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_mr_reg: out of memory");
    int p = fab->primary;
    rf_status st = rf_mr_reg(fab->sub[p], addr, len, access, &mr->sub[p]);
    if (st != RF_OK) {
        free(mr);
        return st;
    }
    uint32_t rkey = mr->sub[p]->rkey;
    uint64_t raddr = mr->sub[p]->remote_addr;
    for (int i = 0; i < AUTO_N && st == RF_OK; i++) {
        if (i == p || !fab->sub[i])
            continue;
        const rf_provider_ops *ops = fab->sub[i]->ops;
        st = ops->mr_reg_keyed
                 ? ops->mr_reg_keyed(fab->sub[i], addr, len, access, rkey,
                                     &mr->sub[i])
                 : rf_error_set(RF_ERR_UNSUPPORTED,
                                "provider %s cannot take a caller's rkey",
                                ops->name);
        if (st != RF_OK)
            st = rf_error_set(st,
                              "rf_mr_reg: auto registers every region on "
                              "each provider; on %s: %s (RF_FABRIC=%s avoids "
                              "it)",
                              ops->name, rf_error_message(), auto_slot_name(p));
        else if (mr->sub[i]->remote_addr != raddr)
            st = rf_error_set(RF_ERR_UNSUPPORTED,
                              "rf_mr_reg: providers %s and %s address the "
                              "region differently",
                              ops->name, auto_slot_name(p));
    }
    if (st != RF_OK) {
        mr_free(mr);
        return st;
    }
    mr->base.fabric = fabric;
    mr->base.addr = addr;
    mr->base.len = len;
    mr->base.access = access;
    mr->base.rkey = rkey;
    mr->base.remote_addr = raddr;
    *out = &mr->base;
    return RF_OK;
}

static rf_status auto_mr_dereg(rf_mr *base)
{
    mr_free((auto_mr *)base);
    return RF_OK;
}

/* --- completion queues ------------------------------------------------- */

rf_status auto_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out)
{
    auto_fabric *fab = AUTO_FAB(fabric);
    auto_cq *cq = calloc(1, sizeof *cq);
    if (!cq)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_cq_create: out of memory");
    cq->base.fabric = fabric;
    for (int i = 0; i < AUTO_N; i++) {
        if (!fab->sub[i])
            continue;
        rf_status st = rf_cq_create(fab->sub[i], depth, &cq->sub[i]);
        if (st != RF_OK) {
            auto_cq_destroy(&cq->base);
            return st;
        }
    }
    *out = &cq->base;
    return RF_OK;
}

static void auto_cq_set_flags(rf_cq *base, uint32_t flags)
{
    auto_cq *cq = (auto_cq *)base;
    for (int i = 0; i < AUTO_N; i++) {
        if (!cq->sub[i])
            continue;
        cq->sub[i]->flags = flags;
        if (cq->sub[i]->fabric->ops->cq_set_flags)
            cq->sub[i]->fabric->ops->cq_set_flags(cq->sub[i], flags);
    }
}

void auto_cq_destroy(rf_cq *base)
{
    auto_cq *cq = (auto_cq *)base;
    for (int i = AUTO_N - 1; i >= 0; i--)
        rf_cq_destroy(cq->sub[i]);
    free(cq);
}

static int active(const auto_cq *cq, int which)
{
    return cq->sub[which] &&
           atomic_load_explicit(&cq->users[which], memory_order_acquire);
}

int auto_cq_poll(rf_cq *base, rf_completion *out, int max)
{
    auto_cq *cq = (auto_cq *)base;
    unsigned start =
        atomic_fetch_add_explicit(&cq->next, 1, memory_order_relaxed);
    int got = 0;
    for (int k = 0; k < AUTO_N && got < max; k++) {
        int i = (int)((start + (unsigned)k) % AUTO_N);
        if (!active(cq, i))
            continue;
        int n =
            cq->sub[i]->fabric->ops->cq_poll(cq->sub[i], out + got, max - got);
        if (n < 0)
            return got ? got : n;
        got += n;
    }
    return got;
}

/* Waits in slices: the whole wait in the one provider that carries
 * endpoints (re-checked every AUTO_CQ_IDLE_MS, in case a peer arrives over
 * another), AUTO_CQ_SLICE_MS in each in turn when several do. */
#define AUTO_CQ_IDLE_MS 50
int auto_cq_wait(rf_cq *base, rf_completion *out, int max, int timeout_ms)
{
    auto_cq *cq = (auto_cq *)base;
    uint64_t end = timeout_ms < 0
                       ? UINT64_MAX
                       : rf_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        int n = auto_cq_poll(base, out, max);
        if (n != 0)
            return n;
        int act[AUTO_N], na = 0;
        for (int i = 0; i < AUTO_N; i++)
            if (active(cq, i))
                act[na++] = i;
        uint64_t now = rf_now_ns();
        if (now >= end)
            return RF_ERR_TIMEOUT;
        uint64_t left_ms = (end - now + 999999u) / 1000000u;
        int slice = na > 1 ? AUTO_CQ_SLICE_MS : AUTO_CQ_IDLE_MS;
        if ((uint64_t)slice > left_ms)
            slice = (int)left_ms;
        if (na == 0) {
            rf_sleep_ms((unsigned)slice);
            continue;
        }
        unsigned k =
            atomic_fetch_add_explicit(&cq->next, 1, memory_order_relaxed);
        rf_cq *sub = cq->sub[act[k % (unsigned)na]];
        n = sub->fabric->ops->cq_wait(sub, out, max, slice);
        if (n != RF_ERR_TIMEOUT)
            return n;
    }
}

static rf_status auto_device_info(rf_fabric *fabric, rf_fabric_device *out)
{
    auto_fabric *fab = AUTO_FAB(fabric);
    if (!fab->sub[AUTO_VERBS])
        return rf_error_set(RF_ERR_UNSUPPORTED,
                            "this auto fabric uses no RDMA device (verbs: %s)",
                            fab->why_not[AUTO_VERBS]);
    return rf_fabric_device_info(fab->sub[AUTO_VERBS], out);
}

const rf_provider_ops rf_auto_provider = {
    .name = "auto",
    .fabric_open = auto_fabric_open,
    .fabric_close = auto_fabric_close,
    .mr_reg = auto_mr_reg,
    .mr_dereg = auto_mr_dereg,
    .cq_create = auto_cq_create,
    .cq_set_flags = auto_cq_set_flags,
    .cq_destroy = auto_cq_destroy,
    .cq_poll = auto_cq_poll,
    .cq_wait = auto_cq_wait,
    .listen = auto_listen,
    .listener_close = auto_listener_close,
    .get_request = auto_get_request,
    .accept = auto_accept,
    .reject = auto_reject,
    .connect = auto_connect,
    .ep_close = auto_ep_close,
    .ep_state = auto_ep_state,
    .ep_enable_remote_access = auto_ep_enable_remote_access,
    .ep_provider = auto_ep_provider,
    .device_info = auto_device_info,
    .post = auto_post,
    .post_recv = auto_post_recv,
};
