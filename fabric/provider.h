/* fabric/provider.h: the contract between the generic fabric API
 * (fabric/fabric.c) and a provider. Each provider defines one constant
 * rf_provider_ops table; its objects embed the base structs below as their
 * first member, so the generic layer can find the ops and the owning fabric.
 * Arguments are validated by fabric.c before a provider op is called. */
#ifndef RF_FABRIC_PROVIDER_H
#define RF_FABRIC_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/fabric_info.h"

typedef struct rf_provider_ops rf_provider_ops;
typedef struct rf_post_tally rf_post_tally;

struct rf_fabric {
    const rf_provider_ops *ops;
    unsigned cq_spin_us; /* RF_CQ_SPIN_US: new CQs' rf_cq_wait spin */
    /* rf_fabric_progress: what the provider does (0 = RF_PROGRESS_AUTO, as
     * its calloc leaves it; a provider that honours MANUAL sets it) */
    rf_progress progress;
    /* rf_fabric_counters: work requests rf_post posted, and their bytes,
     * by op, counted per thread (fabric_tally.c); posted/posted_bytes take
     * atomic adds only from a thread whose block could not be allocated.
     * tally_id is 0 for a fabric not opened through rf_fabric_open (the
     * auto provider's sub-fabrics), which counts nothing. */
    uint64_t tally_id;
    pthread_mutex_t tally_mu;
    rf_post_tally *tallies;
    uint64_t posted[RF_FABRIC_OPS], posted_bytes[RF_FABRIC_OPS];
};

/* fabric_tally.c: rf_fabric_open/close's halves, rf_post's count and
 * rf_fabric_counters_get's sum. */
void rf_fabric_tally_init(rf_fabric *f);
void rf_fabric_tally_free(rf_fabric *f);
void rf_fabric_tally_add(rf_fabric *f, const rf_wr *wrs, size_t n);
void rf_fabric_tally_sum(rf_fabric *f, rf_fabric_counters *out);

struct rf_mr {
    rf_fabric *fabric;
    void *addr;
    size_t len;
    uint32_t access;
    uint32_t rkey;
    uint64_t
        remote_addr; /* address peers use (== addr for all providers so far) */
};

struct rf_cq {
    rf_fabric *fabric;
    unsigned spin_us; /* rf_cq_wait polls this long before it blocks */
    uint32_t flags;   /* rf_cq_flags, set before any endpoint uses it */
    /* rf_cq_wait's adaptive spin (fabric.c): consecutive spins that found
     * nothing, and waits that skipped the spin since */
    atomic_uint spin_misses, spin_skips;
};

struct rf_listener {
    rf_fabric *fabric;
    uint16_t port;
};

struct rf_conn_req {
    rf_listener *listener;
    unsigned char priv[RF_MAX_PRIVATE_DATA];
    size_t priv_len;
    char peer[64]; /* the connector's address ("ip:port"), "" if unknown */
};

struct rf_ep {
    rf_fabric *fabric;
    rf_cq *send_cq;
    rf_cq *recv_cq;
    unsigned char peer_priv[RF_MAX_PRIVATE_DATA];
    size_t peer_priv_len;
    /* The endpoint the user holds when this one carries it for another
     * provider (auto); NULL otherwise. Completions name rf_ep_public(). */
    rf_ep *owner;
};

/* The endpoint a completion of ep reports: its owner's if it has one. */
static inline rf_ep *rf_ep_public(rf_ep *ep)
{
    return ep->owner ? ep->owner : ep;
}

/* Every slot is mandatory unless marked (optional). rf_provider_open checks
 * the mandatory slots once, when the provider is opened, so the generic layer
 * calls them without testing for NULL; each optional slot's absence is
 * answered in one place, as its comment says. Every op that fails sets the
 * thread's error message (rf_error_set). */
struct rf_provider_ops {
    const char *name;
    /* (optional) RF_OK if the provider can run on this host (e.g. a device
     * exists); NULL: it always can. */
    rf_status (*probe)(void);
    rf_status (*fabric_open)(const rf_fabric_attr *attr, rf_fabric **out);
    void (*fabric_close)(rf_fabric *fabric);

    /* Registers [addr, addr+len); must fill the base fields. */
    rf_status (*mr_reg)(rf_fabric *fabric, void *addr, size_t len,
                        uint32_t access, rf_mr **out);
    /* (optional) The same with the rkey chosen by the caller (non-zero;
     * fails if that rkey is registered already). The auto provider
     * registers a region on every provider under one rkey with it; NULL:
     * RF_ERR_UNSUPPORTED there (auto_fabric.c). */
    rf_status (*mr_reg_keyed)(rf_fabric *fabric, void *addr, size_t len,
                              uint32_t access, uint32_t rkey, rf_mr **out);
    rf_status (*mr_dereg)(rf_mr *mr);

    rf_status (*cq_create)(rf_fabric *fabric, uint32_t depth, rf_cq **out);
    void (*cq_destroy)(rf_cq *cq);
    /* (optional) Called once after cq_create when the queue has flags
     * (rf_cq_create_ex): a provider whose queue wraps others' (auto)
     * passes them on. Others read cq->flags when they need them. */
    void (*cq_set_flags)(rf_cq *cq, uint32_t flags);
    int (*cq_poll)(rf_cq *cq, rf_completion *out, int max);
    int (*cq_wait)(rf_cq *cq, rf_completion *out, int max, int timeout_ms);

    rf_status (*listen)(rf_fabric *fabric, const char *host, uint16_t port,
                        rf_listener **out);
    void (*listener_close)(rf_listener *listener);
    rf_status (*get_request)(rf_listener *listener, int timeout_ms,
                             rf_conn_req **out);
    rf_status (*accept)(rf_conn_req *req, const rf_ep_attr *attr,
                        const void *priv, size_t priv_len, rf_ep **out);
    void (*reject)(rf_conn_req *req, const void *priv, size_t priv_len);
    rf_status (*connect)(rf_fabric *fabric, const char *host, uint16_t port,
                         const rf_ep_attr *attr, const void *priv,
                         size_t priv_len, int timeout_ms, rf_ep **out);
    void (*ep_close)(rf_ep *ep);
    rf_status (*ep_state)(const rf_ep *ep);
    rf_status (*ep_enable_remote_access)(rf_ep *ep);
    /* (optional) The RDMA device the fabric uses (rf_fabric_device_info);
     * NULL: RF_ERR_UNSUPPORTED, the fabric uses no device. */
    rf_status (*device_info)(rf_fabric *fabric, rf_fabric_device *out);
    /* (optional) The provider that carries ep (auto); NULL: this one. */
    const char *(*ep_provider)(const rf_ep *ep);

    /* wrs are validated: ops in range, local buffers inside local_mr with
     * the needed access, atomics with len 8 and an 8-byte local buffer. */
    rf_status (*post)(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted);
    rf_status (*post_recv)(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                           void *context);
};

/* Providers call this from connect when the listener rejected the request,
 * before returning RF_ERR_UNAVAILABLE (see rf_connect_reject_data). */
void rf_set_reject_data(const void *priv, size_t len);
/* Whether the last connect on this thread was rejected by a listener (as
 * opposed to finding none), and forgetting it before the next attempt. */
int rf_connect_was_rejected(void);
void rf_connect_reject_clear(void);

/* Opens one provider's fabric (no "auto" lookup): what rf_fabric_open does
 * once it has found the provider; checks the table first. */
rf_status rf_provider_open(const rf_provider_ops *ops,
                           const rf_fabric_attr *attr, rf_fabric **out);

/* The providers compiled in (fabric/providers.c). */
extern const rf_provider_ops rf_sock_provider;
extern const rf_provider_ops rf_shm_provider;
extern const rf_provider_ops rf_auto_provider;
#ifdef RF_HAVE_VERBS
extern const rf_provider_ops rf_verbs_provider;
#endif

#endif
