/* fabric/auto/auto.h: the auto provider's objects. An auto fabric holds one
 * fabric of each provider that works on this host (shm, verbs, sock, in
 * that order of preference) and each of its objects holds the matching
 * object of every one of them; an endpoint is carried by exactly one, the
 * provider chosen for its peer (auto_cm.c). See README.md. */
#ifndef RF_FABRIC_AUTO_H
#define RF_FABRIC_AUTO_H

#include <stdatomic.h>

#include "fabric/provider.h"

/* Sub-fabric slots, in the order connect tries them. */
enum { AUTO_SHM = 0, AUTO_VERBS, AUTO_SOCK, AUTO_N };

typedef struct auto_fabric {
    rf_fabric base;
    rf_fabric *sub[AUTO_N];    /* NULL: that provider does not work here */
    int primary;               /* the provider whose rkeys every region uses */
    char why_not[AUTO_N][320]; /* for a NULL sub: why it is not in use */
} auto_fabric;

typedef struct auto_mr {
    rf_mr base;
    rf_mr *sub[AUTO_N];
} auto_mr;

typedef struct auto_cq {
    rf_cq base;
    rf_cq *sub[AUTO_N];
    /* Endpoints ever attached per provider: only those CQs are polled. */
    atomic_uint users[AUTO_N];
    atomic_uint next; /* where the next wait slice starts */
} auto_cq;

typedef struct auto_listener {
    rf_listener base;
    rf_listener *sub[AUTO_N];
    atomic_uint next;
} auto_listener;

typedef struct auto_req {
    rf_conn_req base;
    rf_conn_req *sub;
    int which;
} auto_req;

typedef struct auto_ep {
    rf_ep base;
    rf_ep *sub;
    int which;
} auto_ep;

#define AUTO_FAB(f) ((auto_fabric *)(f))

/* Longest a wait blocks on one provider while another may have work. */
#define AUTO_CQ_SLICE_MS     1
#define AUTO_LISTEN_SLICE_MS 5

const char *auto_slot_name(int which);

/* RF_AUTO_PROVIDERS read into allowed (unset: all): a comma-separated list
 * of shm, verbs and sock that must include sock; RF_ERR_INVALID_ARG naming
 * the value otherwise. auto_fabric_open and rf_fabric_setting_check (what
 * rf-info reports) both read it here. */
rf_status rf_auto_allowed_providers(int allowed[AUTO_N]);

/* auto_fabric.c */
rf_status auto_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out);
void auto_cq_destroy(rf_cq *cq);
int auto_cq_poll(rf_cq *cq, rf_completion *out, int max);
int auto_cq_wait(rf_cq *cq, rf_completion *out, int max, int timeout_ms);

/* auto_cm.c */
/* The providers connect tries for host, in order (shm for an address of
 * this host, verbs when it opened, then sock), into order; returns how
 * many, or -1 when host does not resolve (the thread's error says why).
 * why (may be NULL) gets one clause per provider, for rf_fabric_choose. */
int auto_connect_order(const auto_fabric *fab, const char *host,
                       int order[AUTO_N], char *why, size_t why_len);
rf_status auto_listen(rf_fabric *fabric, const char *host, uint16_t port,
                      rf_listener **out);
void auto_listener_close(rf_listener *listener);
rf_status auto_get_request(rf_listener *listener, int timeout_ms,
                           rf_conn_req **out);
rf_status auto_accept(rf_conn_req *req, const rf_ep_attr *attr,
                      const void *priv, size_t priv_len, rf_ep **out);
void auto_reject(rf_conn_req *req, const void *priv, size_t priv_len);
rf_status auto_connect(rf_fabric *fabric, const char *host, uint16_t port,
                       const rf_ep_attr *attr, const void *priv,
                       size_t priv_len, int timeout_ms, rf_ep **out);

/* auto_ep.c */
rf_status auto_ep_wrap(auto_fabric *fab, int which, rf_ep *sub,
                       const rf_ep_attr *attr, rf_ep **out);
rf_ep_attr auto_sub_attr(const rf_ep_attr *attr, int which);
void auto_ep_close(rf_ep *ep);
rf_status auto_ep_state(const rf_ep *ep);
rf_status auto_ep_enable_remote_access(rf_ep *ep);
const char *auto_ep_provider(const rf_ep *ep);
rf_status auto_post(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted);
rf_status auto_post_recv(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                         void *context);

#endif
