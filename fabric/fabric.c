/* fabric/fabric.c: the public transport API. Finds providers by name in one
 * fixed table (plus "auto", fabric/auto/), validates arguments once for all
 * providers, and dispatches to the provider's ops table, whose mandatory
 * slots are checked once when the provider is opened (provider.h). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/log.h"
#include "fabric/auto/auto.h"
#include "fabric/provider.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

/* The providers that carry endpoints. "auto" (fabric/auto/) is not one of
 * them: it opens several of these and chooses one per peer. */
static const rf_provider_ops *const providers[] = {
#ifdef RF_HAVE_VERBS
    &rf_verbs_provider,
#endif
    &rf_sock_provider,
    &rf_shm_provider,
};
#define PROVIDER_COUNT (sizeof providers / sizeof providers[0])

static const char *const provider_names[] = {
#ifdef RF_HAVE_VERBS
    "verbs",
#endif
    "sock",  "shm", "auto", NULL,
};
_Static_assert(sizeof provider_names / sizeof provider_names[0] ==
                   PROVIDER_COUNT + 2,
               "provider_names must list every provider, then auto");

const char *const *rf_fabric_providers(void)
{
    return provider_names;
}

static const rf_provider_ops *find_provider(const char *name)
{
    if (strcmp(name, rf_auto_provider.name) == 0)
        return &rf_auto_provider;
    for (size_t i = 0; i < PROVIDER_COUNT; i++)
        if (strcmp(providers[i]->name, name) == 0)
            return providers[i];
    return NULL;
}

/* The slots provider.h does not mark (optional): the calls below use them
 * without testing for NULL. */
typedef struct ops_slot {
    const char *name;
    bool set;
} ops_slot;

static rf_status check_mandatory_ops(const rf_provider_ops *ops)
{
#define SLOT(s) ((ops_slot){#s, ops->s != NULL})
    const ops_slot slots[] = {
        SLOT(fabric_open),
        SLOT(fabric_close),
        SLOT(mr_reg),
        SLOT(mr_dereg),
        SLOT(cq_create),
        SLOT(cq_destroy),
        SLOT(cq_poll),
        SLOT(cq_wait),
        SLOT(listen),
        SLOT(listener_close),
        SLOT(get_request),
        SLOT(accept),
        SLOT(reject),
        SLOT(connect),
        SLOT(ep_close),
        SLOT(ep_state),
        SLOT(ep_enable_remote_access),
        SLOT(post),
        SLOT(post_recv),
    };
#undef SLOT
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        if (!slots[i].set)
            return rf_error_set(RF_ERR_UNSUPPORTED,
                                "provider %s lacks the mandatory op %s",
                                ops->name, slots[i].name);
    return RF_OK;
}

rf_status rf_provider_open(const rf_provider_ops *ops,
                           const rf_fabric_attr *attr, rf_fabric **out)
{
    *out = NULL;
    rf_status cst = check_mandatory_ops(ops);
    if (cst != RF_OK)
        return cst;
    if (ops->probe) {
        rf_status pst = ops->probe();
        if (pst != RF_OK)
            return pst;
    }
    int64_t spin = 0;
    rf_status st = rf_setting_int("RF_CQ_SPIN_US", &spin);
    if (st != RF_OK)
        return st;
    if (attr && attr->progress != RF_PROGRESS_AUTO &&
        attr->progress != RF_PROGRESS_MANUAL)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_fabric_open: attr->progress %d is neither "
                            "RF_PROGRESS_AUTO nor RF_PROGRESS_MANUAL",
                            (int)attr->progress);
    rf_fabric_attr none = {0};
    st = ops->fabric_open(attr ? attr : &none, out);
    if (st == RF_OK) {
        (*out)->ops = ops;
        (*out)->cq_spin_us = (unsigned)spin;
        rf_fabric_tally_init(*out);
    }
    return st;
}

void rf_fabric_counters_get(const rf_fabric *f, rf_fabric_counters *out)
{
    if (!out)
        return;
    *out = (rf_fabric_counters){0};
    if (f)
        rf_fabric_tally_sum((rf_fabric *)f, out);
}

/* The provider called name, or RF_ERR_INVALID_ARG listing those compiled
 * in; what names it comes from for the message. */
static rf_status lookup_provider(const char *name, const char *what,
                                 const rf_provider_ops **ops)
{
    *ops = find_provider(name);
    if (*ops)
        return RF_OK;
    char list[128] = "";
    for (const char *const *p = provider_names; *p; p++) {
        if (*list)
            strncat(list, "|", sizeof list - strlen(list) - 1);
        strncat(list, *p, sizeof list - strlen(list) - 1);
    }
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "%s: unknown provider '%s' (compiled in: %s)", what,
                        RF_ECHO(name), list);
}

rf_status rf_fabric_setting_check(const rf_env_var *var)
{
    if (!var || !var->name)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_fabric_setting_check: NULL");
    const rf_provider_ops *ops;
    if (strcmp(var->name, "RF_FABRIC") == 0)
        return lookup_provider(rf_setting_str("RF_FABRIC"), "RF_FABRIC", &ops);
    if (strcmp(var->name, "RF_AUTO_PROVIDERS") == 0) {
        int allowed[AUTO_N];
        return rf_auto_allowed_providers(allowed);
    }
    return rf_setting_check(var);
}

rf_status rf_fabric_open(const char *provider, const rf_fabric_attr *attr,
                         rf_fabric **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_fabric_open: out is NULL");
    *out = NULL;
    rf_status lst = rf_log_env_check();
    if (lst != RF_OK)
        return rf_error_set(lst, "rf_fabric_open: %s", rf_error_message());
    const char *name = provider;
    if (!name || !*name || strcmp(name, "auto") == 0)
        name = rf_setting_str("RF_FABRIC");
    const rf_provider_ops *ops;
    rf_status fst = lookup_provider(
        name, name == provider ? "rf_fabric_open" : "RF_FABRIC", &ops);
    if (fst != RF_OK)
        return fst;
    rf_status st = rf_provider_open(ops, attr, out);
    if (st == RF_OK)
        RF_LOG_INFO("fabric: opened provider %s", ops->name);
    return st;
}

void rf_fabric_close(rf_fabric *fabric)
{
    if (fabric) {
        rf_fabric_tally_free(fabric);
        fabric->ops->fabric_close(fabric);
    }
}

rf_progress rf_fabric_progress(const rf_fabric *fabric)
{
    return fabric ? fabric->progress : RF_PROGRESS_AUTO;
}

const char *rf_wr_op_name(rf_op op)
{
    static const char *const names[] = {
        [RF_OP_READ] = "read",
        [RF_OP_WRITE] = "write",
        [RF_OP_WRITE_IMM] = "write_imm",
        [RF_OP_FETCH_ADD] = "fetch_add",
        [RF_OP_CMP_SWAP] = "cmp_swap",
        [RF_OP_SEND] = "send",
        [RF_OP_RECV] = "recv",
        [RF_OP_RECV_WRITE_IMM] = "recv_write_imm",
    };
    if ((unsigned)op >= sizeof names / sizeof names[0])
        return "unknown op";
    return names[op];
}

const char *rf_fabric_provider(const rf_fabric *fabric)
{
    return fabric ? fabric->ops->name : "";
}

/* --- memory regions ---------------------------------------------------- */

rf_status rf_mr_reg(rf_fabric *fabric, void *addr, size_t len, uint32_t access,
                    rf_mr **out)
{
    if (!fabric || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_mr_reg: NULL fabric or out");
    *out = NULL;
    if (!addr || len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_mr_reg: empty region (addr %p, len %zu)", addr,
                            len);
    if (access & ~(uint32_t)RF_ACCESS_ALL)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_mr_reg: unknown access bits 0x%x", access);
    if ((access & (RF_ACCESS_REMOTE_WRITE | RF_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RF_ACCESS_LOCAL_WRITE))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_mr_reg: remote write/atomic access requires "
                            "RF_ACCESS_LOCAL_WRITE (as in verbs)");
    return fabric->ops->mr_reg(fabric, addr, len, access, out);
}

rf_status rf_mr_dereg(rf_mr *mr)
{
    if (!mr)
        return RF_OK;
    return mr->fabric->ops->mr_dereg(mr);
}

void rf_mr_describe(const rf_mr *mr, rf_mr_desc *desc)
{
    desc->addr = mr->remote_addr;
    desc->len = mr->len;
    desc->rkey = mr->rkey;
}

void *rf_mr_addr(const rf_mr *mr)
{
    return mr->addr;
}
size_t rf_mr_len(const rf_mr *mr)
{
    return mr->len;
}

void rf_mr_desc_pack(const rf_mr_desc *desc,
                     unsigned char out[RF_MR_DESC_PACKED_SIZE])
{
    rf_put_le64(out, desc->addr);
    rf_put_le64(out + 8, desc->len);
    rf_put_le32(out + 16, desc->rkey);
}

void rf_mr_desc_unpack(const unsigned char in[RF_MR_DESC_PACKED_SIZE],
                       rf_mr_desc *desc)
{
    desc->addr = rf_get_le64(in);
    desc->len = rf_get_le64(in + 8);
    desc->rkey = rf_get_le32(in + 16);
}

/* --- completion queues ------------------------------------------------- */

rf_status rf_cq_create_ex(rf_fabric *fabric, const rf_cq_attr *attr,
                          rf_cq **out)
{
    if (!fabric || !attr || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_cq_create: NULL argument");
    *out = NULL;
    if (attr->depth == 0 || attr->depth > (1u << 22))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_cq_create: depth %u outside [1, 4194304]",
                            attr->depth);
    if (attr->flags & ~(uint32_t)RF_CQ_SINGLE_THREADED)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_cq_create_ex: unknown flags 0x%x",
                            attr->flags & ~(uint32_t)RF_CQ_SINGLE_THREADED);
    rf_status st = fabric->ops->cq_create(fabric, attr->depth, out);
    if (st != RF_OK)
        return st;
    (*out)->spin_us = fabric->cq_spin_us;
    (*out)->flags = attr->flags;
    atomic_init(&(*out)->spin_misses, 0);
    atomic_init(&(*out)->spin_skips, 0);
    if (attr->flags && fabric->ops->cq_set_flags)
        fabric->ops->cq_set_flags(*out, attr->flags);
    return RF_OK;
}

rf_status rf_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out)
{
    return rf_cq_create_ex(fabric, &(rf_cq_attr){.depth = depth}, out);
}

rf_status rf_cq_set_spin_us(rf_cq *cq, unsigned spin_us)
{
    if (!cq || spin_us > RF_CQ_SPIN_US_MAX)
        return rf_error_set(
            RF_ERR_INVALID_ARG, "rf_cq_set_spin_us: %s (at most %d us)",
            cq ? "spin too long" : "NULL CQ", RF_CQ_SPIN_US_MAX);
    cq->spin_us = spin_us;
    return RF_OK;
}

void rf_cq_destroy(rf_cq *cq)
{
    if (cq)
        cq->fabric->ops->cq_destroy(cq);
}

int rf_cq_poll(rf_cq *cq, rf_completion *out, int max)
{
    if (!cq || !out || max <= 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_cq_poll: bad arguments");
    return cq->fabric->ops->cq_poll(cq, out, max);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Whether this wait spins: always while the queue's recent spins found
 * something; after RF_CQ_SPIN_MISSES spins in a row found nothing, only
 * one wait in RF_CQ_SPIN_PROBE (a completion that comes sooner again
 * brings the spin back), as glibc's adaptive mutexes stop spinning on a
 * lock that is held long. A ps thread waiting milliseconds for the next
 * push then blocks at once instead of burning the spin each time. Shared
 * by the threads waiting on the queue: relaxed counters, an estimate. */
#define RF_CQ_SPIN_MISSES 4
#define RF_CQ_SPIN_PROBE  32
static bool spin_worth(rf_cq *cq)
{
    if (atomic_load_explicit(&cq->spin_misses, memory_order_relaxed) <
        RF_CQ_SPIN_MISSES)
        return true;
    return atomic_fetch_add_explicit(&cq->spin_skips, 1, memory_order_relaxed) %
               RF_CQ_SPIN_PROBE ==
           RF_CQ_SPIN_PROBE - 1;
}

int rf_cq_wait(rf_cq *cq, rf_completion *out, int max, int timeout_ms)
{
    if (!cq || !out || max <= 0 || timeout_ms < -1)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_cq_wait: bad arguments");
    /* Spin first, then block: a completion due within the spin costs no
     * sleep and wake-up, and a waiter that finds nothing soon gives the
     * CPU back (to the provider's own threads and the peer, on a small
     * host) instead of busy-polling until the timeout. */
    if (cq->spin_us && timeout_ms != 0 && spin_worth(cq)) {
        uint64_t now = rf_now_ns(), end = now + (uint64_t)cq->spin_us * 1000u;
        if (timeout_ms > 0 && end > now + (uint64_t)timeout_ms * 1000000u)
            end = now + (uint64_t)timeout_ms * 1000000u;
        for (;;) {
            int n = cq->fabric->ops->cq_poll(cq, out, max);
            if (n > 0)
                atomic_store_explicit(&cq->spin_misses, 0,
                                      memory_order_relaxed);
            if (n != 0)
                return n;
            now = rf_now_ns();
            if (now >= end)
                break;
            cpu_relax();
        }
        if (atomic_load_explicit(&cq->spin_misses, memory_order_relaxed) <
            RF_CQ_SPIN_MISSES)
            atomic_fetch_add_explicit(&cq->spin_misses, 1,
                                      memory_order_relaxed);
        if (timeout_ms > 0) {
            int64_t left = (int64_t)timeout_ms - (int64_t)(cq->spin_us / 1000u);
            timeout_ms = left > 0 ? (int)left : 0;
        }
    }
    return cq->fabric->ops->cq_wait(cq, out, max, timeout_ms);
}

/* --- connection management -------------------------------------------- */

static rf_status check_priv(const char *what, const void *priv, size_t len)
{
    if (len > RF_MAX_PRIVATE_DATA)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: private data of %zu bytes exceeds %d", what,
                            len, RF_MAX_PRIVATE_DATA);
    if (len && !priv)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL private data", what);
    return RF_OK;
}

static rf_status check_ep_attr(const char *what, rf_fabric *fabric,
                               const rf_ep_attr *attr)
{
    if (!attr || !attr->send_cq)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: attr->send_cq is required",
                            what);
    if (attr->flags & ~(uint32_t)RF_EP_REMOTE_ACCESS_OFF)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: unknown attr->flags 0x%x",
                            what, attr->flags);
    if (attr->send_cq->fabric != fabric ||
        (attr->recv_cq && attr->recv_cq->fabric != fabric))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: completion queue belongs to another fabric",
                            what);
    return RF_OK;
}

rf_status rf_listen(rf_fabric *fabric, const char *host, uint16_t port,
                    rf_listener **out)
{
    if (!fabric || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_listen: NULL argument");
    *out = NULL;
    return fabric->ops->listen(fabric, host, port, out);
}

uint16_t rf_listener_port(const rf_listener *listener)
{
    return listener->port;
}

void rf_listener_close(rf_listener *listener)
{
    if (listener)
        listener->fabric->ops->listener_close(listener);
}

rf_status rf_listener_get_request(rf_listener *listener, int timeout_ms,
                                  rf_conn_req **out)
{
    if (!listener || !out || timeout_ms < -1)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_listener_get_request: bad arguments");
    *out = NULL;
    return listener->fabric->ops->get_request(listener, timeout_ms, out);
}

const void *rf_conn_req_private_data(const rf_conn_req *req, size_t *len)
{
    if (len)
        *len = req->priv_len;
    return req->priv;
}

const char *rf_conn_req_peer(const rf_conn_req *req)
{
    return req && req->peer[0] ? req->peer : "an unknown address";
}

rf_status rf_accept(rf_conn_req *req, const rf_ep_attr *attr, const void *priv,
                    size_t priv_len, rf_ep **out)
{
    if (!req || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_accept: NULL argument");
    *out = NULL;
    rf_fabric *fabric = req->listener->fabric;
    rf_status st = check_priv("rf_accept", priv, priv_len);
    if (st == RF_OK)
        st = check_ep_attr("rf_accept", fabric, attr);
    if (st != RF_OK) {
        rf_reject(req, NULL, 0);
        return st;
    }
    return fabric->ops->accept(req, attr, priv, priv_len, out);
}

void rf_reject(rf_conn_req *req, const void *priv, size_t priv_len)
{
    if (!req)
        return;
    if (check_priv("rf_reject", priv, priv_len) != RF_OK)
        priv_len = 0;
    req->listener->fabric->ops->reject(req, priv, priv_len);
}

static _Thread_local unsigned char reject_data[RF_MAX_PRIVATE_DATA];
static _Thread_local size_t reject_len;
static _Thread_local int rejected;

int rf_connect_was_rejected(void)
{
    return rejected;
}

void rf_connect_reject_clear(void)
{
    rejected = 0;
    reject_len = 0;
}

void rf_set_reject_data(const void *priv, size_t len)
{
    rejected = 1;
    reject_len = len < RF_MAX_PRIVATE_DATA ? len : RF_MAX_PRIVATE_DATA;
    if (reject_len)
        memcpy(reject_data, priv, reject_len);
}

const void *rf_connect_reject_data(size_t *len)
{
    if (len)
        *len = reject_len;
    return reject_data;
}

rf_status rf_connect(rf_fabric *fabric, const char *host, uint16_t port,
                     const rf_ep_attr *attr, const void *priv, size_t priv_len,
                     int timeout_ms, rf_ep **out)
{
    rf_connect_reject_clear();
    if (!fabric || !out || !host || timeout_ms < -1)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_connect: bad arguments");
    *out = NULL;
    if (port == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_connect: port 0");
    rf_status st = check_priv("rf_connect", priv, priv_len);
    if (st == RF_OK)
        st = check_ep_attr("rf_connect", fabric, attr);
    if (st != RF_OK)
        return st;
    return fabric->ops->connect(fabric, host, port, attr, priv, priv_len,
                                timeout_ms, out);
}

const void *rf_ep_peer_private_data(const rf_ep *ep, size_t *len)
{
    if (len)
        *len = ep->peer_priv_len;
    return ep->peer_priv;
}

void rf_ep_close(rf_ep *ep)
{
    if (ep)
        ep->fabric->ops->ep_close(ep);
}

const char *rf_ep_provider(const rf_ep *ep)
{
    if (!ep)
        return "";
    if (ep->fabric->ops->ep_provider)
        return ep->fabric->ops->ep_provider(ep);
    return ep->fabric->ops->name;
}

rf_status rf_ep_state(const rf_ep *ep)
{
    if (!ep)
        return RF_ERR_INVALID_ARG;
    return ep->fabric->ops->ep_state(ep);
}

rf_status rf_ep_enable_remote_access(rf_ep *ep)
{
    if (!ep)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ep_enable_remote_access: NULL endpoint");
    return ep->fabric->ops->ep_enable_remote_access(ep);
}

/* --- data transfer ----------------------------------------------------- */

/* True when [p, p+len) lies inside the region. */
static int inside(const rf_mr *mr, const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)mr->addr;
    return a >= base && len <= mr->len && a - base <= mr->len - len;
}

static rf_status check_wr(const rf_ep *ep, const rf_wr *wr, size_t index)
{
    uint32_t need = 0;
    switch (wr->op) {
    case RF_OP_READ:
        need = RF_ACCESS_LOCAL_WRITE;
        break;
    case RF_OP_WRITE:
    case RF_OP_WRITE_IMM:
    case RF_OP_SEND:
        break;
    case RF_OP_FETCH_ADD:
    case RF_OP_CMP_SWAP:
        need = RF_ACCESS_LOCAL_WRITE;
        if (wr->len != 8)
            return rf_error_set(
                RF_ERR_INVALID_ARG,
                "rf_post: wr[%zu]: atomic length %zu, must be 8", index,
                wr->len);
        if ((uintptr_t)wr->local % 8)
            return rf_error_set(
                RF_ERR_INVALID_ARG,
                "rf_post: wr[%zu]: atomic result buffer %p is not "
                "8-byte aligned",
                index, wr->local);
        break;
    default:
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_post: wr[%zu]: op %d cannot be posted", index,
                            (int)wr->op);
    }
    if (wr->flags & ~(uint32_t)(RF_WR_UNSIGNALED | RF_WR_INLINE | RF_WR_FENCE))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_post: wr[%zu]: unknown flags 0x%x", index,
                            wr->flags);
    if (wr->len > UINT32_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_post: wr[%zu]: length %zu exceeds 4 GiB - 1",
                            index, wr->len);
    if (wr->len == 0)
        return RF_OK;
    if (!wr->local || !wr->local_mr)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "rf_post: wr[%zu]: %zu bytes but no local buffer or "
            "region",
            index, wr->len);
    if (wr->local_mr->fabric != ep->fabric)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_post: wr[%zu]: local region belongs to another "
                            "fabric",
                            index);
    if (!inside(wr->local_mr, wr->local, wr->len))
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "rf_post: wr[%zu]: local buffer %p+%zu is outside its "
            "region %p+%zu",
            index, wr->local, wr->len, wr->local_mr->addr, wr->local_mr->len);
    if ((wr->local_mr->access & need) != need)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_post: wr[%zu]: local region lacks "
                            "RF_ACCESS_LOCAL_WRITE",
                            index);
    return RF_OK;
}

rf_status rf_post(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted)
{
    if (posted)
        *posted = 0;
    if (!ep || (!wrs && n))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_post: NULL argument");
    if (n == 0)
        return RF_OK;
    /* Validate everything first so a bad request posts nothing. */
    for (size_t i = 0; i < n; i++) {
        rf_status st = check_wr(ep, &wrs[i], i);
        if (st != RF_OK)
            return st;
    }
    size_t dummy = 0, *done = posted ? posted : &dummy;
    rf_status st = ep->fabric->ops->post(ep, wrs, n, done);
    rf_fabric_tally_add(ep->fabric, wrs, *done < n ? *done : n);
    return st;
}

rf_status rf_post_recv(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                       void *context)
{
    if (!ep)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_post_recv: NULL endpoint");
    if (len) {
        if (!buf || !mr || mr->fabric != ep->fabric || !inside(mr, buf, len))
            return rf_error_set(
                RF_ERR_INVALID_ARG,
                "rf_post_recv: buffer %p+%zu not inside a region "
                "of this fabric",
                buf, len);
        if (!(mr->access & RF_ACCESS_LOCAL_WRITE))
            return rf_error_set(
                RF_ERR_INVALID_ARG,
                "rf_post_recv: region lacks RF_ACCESS_LOCAL_WRITE");
        if (len > UINT32_MAX)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_post_recv: length %zu exceeds 4 GiB - 1",
                                len);
    }
    return ep->fabric->ops->post_recv(ep, buf, len, mr, context);
}

static rf_status post_one(rf_ep *ep, rf_wr wr)
{
    return rf_post(ep, &wr, 1, NULL);
}

/* The request of a one-sided convenience call; the caller adds imm,
 * compare_add and swap where its op has them. */
static rf_wr one_sided(rf_op op, const void *local, size_t len, rf_mr *mr,
                       uint64_t remote_addr, uint32_t rkey, void *context)
{
    return (rf_wr){.op = op,
                   .context = context,
                   .local = (void *)local,
                   .len = len,
                   .local_mr = mr,
                   .remote_addr = remote_addr,
                   .rkey = rkey};
}

rf_status rf_read(rf_ep *ep, void *local, size_t len, rf_mr *local_mr,
                  uint64_t remote_addr, uint32_t rkey, void *context)
{
    return post_one(ep, one_sided(RF_OP_READ, local, len, local_mr, remote_addr,
                                  rkey, context));
}

rf_status rf_write(rf_ep *ep, const void *local, size_t len, rf_mr *local_mr,
                   uint64_t remote_addr, uint32_t rkey, void *context)
{
    return post_one(ep, one_sided(RF_OP_WRITE, local, len, local_mr,
                                  remote_addr, rkey, context));
}

rf_status rf_write_imm(rf_ep *ep, const void *local, size_t len,
                       rf_mr *local_mr, uint64_t remote_addr, uint32_t rkey,
                       uint32_t imm, void *context)
{
    rf_wr wr = one_sided(RF_OP_WRITE_IMM, local, len, local_mr, remote_addr,
                         rkey, context);
    wr.imm = imm;
    return post_one(ep, wr);
}

rf_status rf_fetch_add(rf_ep *ep, uint64_t *result, rf_mr *local_mr,
                       uint64_t remote_addr, uint32_t rkey, uint64_t add,
                       void *context)
{
    rf_wr wr = one_sided(RF_OP_FETCH_ADD, result, 8, local_mr, remote_addr,
                         rkey, context);
    wr.compare_add = add;
    return post_one(ep, wr);
}

rf_status rf_cmp_swap(rf_ep *ep, uint64_t *result, rf_mr *local_mr,
                      uint64_t remote_addr, uint32_t rkey, uint64_t compare,
                      uint64_t swap, void *context)
{
    rf_wr wr = one_sided(RF_OP_CMP_SWAP, result, 8, local_mr, remote_addr, rkey,
                         context);
    wr.compare_add = compare;
    wr.swap = swap;
    return post_one(ep, wr);
}

rf_status rf_send(rf_ep *ep, const void *local, size_t len, rf_mr *local_mr,
                  void *context)
{
    return post_one(ep, (rf_wr){.op = RF_OP_SEND,
                                .context = context,
                                .local = (void *)local,
                                .len = len,
                                .local_mr = local_mr});
}
