/* fabric/verbs/verbs_internal.h: objects and helpers shared by the files of
 * the verbs provider (libibverbs RC QPs, librdmacm connection management).
 * Only files in fabric/verbs/ include <infiniband/verbs.h> or
 * <rdma/rdma_cma.h>.
 *
 * Object model: every provider object embeds its base struct from
 * fabric/provider.h as first member. Endpoints and listeners also embed a
 * vcmobj, which registers their rdma_cm_id with the fabric's event thread
 * (verbs_event.c); that thread dispatches every rdma_cm event and device
 * async event. The send/receive queue and CQ locks are rf_spinlocks (below),
 * the rest pthread mutexes. Locks, in the only order they may nest:
 *   vep.sq_lock / vep.rq_lock  ->  vcq.lock          (posting may reclaim)
 *   vfab.reg_lock              ->  vep.cm_mu / vlistener.mu
 * No lock is held across rdma_destroy_id / rdma_destroy_qp, which wait for
 * the event thread to acknowledge the object's pending events. */
#ifndef RF_FABRIC_VERBS_INTERNAL_H
#define RF_FABRIC_VERBS_INTERNAL_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/log.h"
#include "core/spinlock.h"
#include "fabric/provider.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

/* --- the data-path lock -------------------------------------------------- */

/* A queue's ring or a CQ is guarded on the post and poll paths by an
 * rf_spinlock (core/spinlock.h): uncontended one atomic exchange and one
 * store, where a glibc pthread mutex costs about 57 user-space instructions
 * per lock/unlock pair (the verbs-opcount figures in bench/README.md),
 * about as much as the rxe provider's whole poll. Held only for short
 * sections that never sleep (the longest is ibv_post_send's doorbell). */

/* --- fabric ------------------------------------------------------------ */

typedef struct vcmobj vcmobj;
enum vcm_kind { VCM_EP = 1, VCM_LISTENER = 2 };

/* Registration of an rdma_cm_id with the fabric's event thread. */
struct vcmobj {
    vcmobj *next;
    struct rdma_cm_id *id;
    int kind;
};

/* Transport parameters derived from the environment at fabric open. */
typedef struct vqp_params {
    uint8_t timeout;       /* local ACK timeout exponent: 4.096us * 2^t */
    uint8_t retry_cnt;     /* transport retries (never 7: rxe = infinite) */
    uint8_t rnr_retry;     /* RNR retries (never 7 = infinite) */
    uint8_t min_rnr_timer; /* IB encoding of the RNR NAK delay we ask for */
    int peer_timeout_ms;   /* RF_PEER_TIMEOUT_MS */
    int rnr_timeout_ms;    /* RF_RNR_TIMEOUT_MS */
} vqp_params;

typedef struct vfab {
    rf_fabric base;
    struct ibv_context **devlist; /* rdma_get_devices(): rdma_cm's contexts */
    struct ibv_context *ctx;      /* the chosen device (one of devlist) */
    struct ibv_pd *pd;
    struct ibv_device_attr dev_attr;
    char devname[IBV_SYSFS_NAME_MAX];
    int iwarp;   /* private data lengths are exact: no framing */
    int link_ib; /* the port's link layer is InfiniBand (not Ethernet) */
    uint8_t port;
    int gid_index;
    union ibv_gid gid;
    int gid_type; /* enum ibv_gid_type */
    char netdev[IF_NAMESIZE];
    struct sockaddr_storage src; /* source address for connects */
    int have_src;
    int cq_event_mode;   /* RF_VERBS_CQ_MODE=event */
    uint32_t inline_cap; /* RF_VERBS_MAX_INLINE: largest inline payload */
    vqp_params qp;

    /* rdma_cm events and device async events: one thread per fabric. */
    struct rdma_event_channel *ch;
    int wake_fd; /* eventfd: stop request or pending disconnects */
    pthread_t thread;
    int thread_started;
    _Atomic int stopping;
    pthread_mutex_t reg_lock;
    vcmobj *objs; /* registered endpoints and listeners */
    /* librdmacm hands cm_id state between the thread calling rdma_* and
     * the one in rdma_get_cm_event through the kernel (write() on the
     * channel fd), which ThreadSanitizer cannot see: cm_lock orders them.
     * Held only around non-blocking rdma_* calls, never rdma_destroy_id,
     * and never while taking reg_lock. */
    pthread_mutex_t cm_lock;
} vfab;

/* --- memory regions and completion queues -------------------------------- */

typedef struct vmr {
    rf_mr base;
    struct ibv_mr *mr;
} vmr;

typedef struct vcq {
    rf_cq base;
    vfab *fab;
    struct ibv_cq *cq;
    struct ibv_comp_channel *ch; /* event mode only */
    rf_spinlock lock;
    /* Completions already taken from the device but not yet returned:
     * overflow of a poll batch, and work drained by rf_ep_close. */
    rf_completion *sw;
    size_t sw_cap, sw_head, sw_count;
} vcq;

/* --- endpoints ----------------------------------------------------------- */

enum vslot_flags {
    VSLOT_USER_SIGNALED = 1 << 0, /* the user wants a success completion */
    VSLOT_HW_SIGNALED = 1 << 1,   /* IBV_SEND_SIGNALED: a CQE will come */
    VSLOT_MISALIGNED = 1 << 2,    /* atomic on an unaligned address */
};
#define VOP_MARKER 0xff /* drain marker posted by rf_ep_close */

/* One posted work request; wr_id is the slot's address. */
typedef struct vslot {
    struct vep *ep;
    void *context;
    uint32_t len;
    uint8_t op; /* rf_op or VOP_MARKER */
    uint8_t flags;
} vslot;

typedef struct vep {
    rf_ep base;
    vcmobj cm;
    vfab *fab;
    struct ibv_qp *qp;
    vcq *scq, *rcq;

    /* Send queue: slots [sq_tail, sq_head) are posted and not reclaimed.
     * head is written under sq_lock, tail under scq->lock. */
    rf_spinlock sq_lock;
    vslot *sq;
    uint32_t sq_mask;
    uint32_t sq_size;      /* user-visible capacity (one more is reserved) */
    uint32_t sig_interval; /* force a signaled WR at least this often */
    uint32_t unsig_run;    /* unsignaled WRs since the last signaled one */
    uint32_t max_inline;
    _Atomic uint64_t sq_head, sq_tail;
    struct ibv_send_wr *wr_scratch; /* one chain per rf_post, grown lazily */
    struct ibv_sge *sge_scratch;
    size_t scratch_cap;
    int sq_failed;  /* an error CQE was seen (under scq->lock) */
    int sq_drained; /* the close marker completed (under scq->lock) */

    /* Receive queue, same scheme; every receive completes with a CQE. */
    rf_spinlock rq_lock;
    vslot *rq;
    uint32_t rq_mask;
    uint32_t rq_size;
    _Atomic uint64_t rq_head, rq_tail;

    _Atomic int error;           /* in the error state */
    _Atomic int want_disconnect; /* 1: event thread should disconnect */
    int can_atomic;
    /* RF_EP_REMOTE_ACCESS_OFF: the QP reaches RTS with no remote access
     * flags (this provider makes the QP's transitions, not rdma_cm), and
     * remote_flags (what the connection's attributes would have set) are
     * applied by rf_ep_enable_remote_access. Under sq_lock. */
    int remote_off;
    unsigned remote_flags;

    /* Connection management, written by the event thread under cm_mu. */
    pthread_mutex_t cm_mu;
    pthread_cond_t cm_cv;
    unsigned ev_seq;
    int ev_type; /* last connection-phase event */
    int ev_status;
    int disconnected; /* DISCONNECTED or DEVICE_REMOVAL seen */
    unsigned char ev_priv[RF_MAX_PRIVATE_DATA]; /* decoded reply data */
    size_t ev_priv_len;
    int ev_priv_ok; /* reply data was well formed */
} vep;

/* --- listeners and connection requests ---------------------------------- */

typedef struct vreq {
    rf_conn_req base;
    struct vreq *next;
    struct rdma_cm_id *id;
    uint8_t peer_resp_res;   /* peer's responder_resources */
    uint8_t peer_init_depth; /* peer's initiator_depth */
} vreq;

typedef struct vlistener {
    rf_listener base;
    vcmobj cm;
    vfab *fab;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vreq *head, *tail;
    int broken; /* device removed */
} vlistener;

/* --- helpers (verbs_util.c) --------------------------------------------- */

/* rf_status for an errno value from a verbs or rdma_cm call. */
rf_status verbs_errno_status(int err);
/* "a.b.c.d:port" / "[v6]:port" for messages. */
void verbs_addr_str(const struct sockaddr *sa, char *buf, size_t len);
/* Resolves host (numeric or name) and port into *out. */
rf_status verbs_resolve(const char *what, const char *host, uint16_t port,
                        struct sockaddr_storage *out);
/* Name of an rdma_cm event for messages. */
const char *verbs_event_str(int event);

/* Private data framing (verbs_privdata.c): rdma_cm pads what it delivers,
 * so the length travels inside, in one leading byte. */
#define VPRIV_WIRE_MAX (RF_MAX_PRIVATE_DATA + 1)
void verbs_priv_encode(const vfab *fab, const void *priv, size_t len,
                       unsigned char out[VPRIV_WIRE_MAX], uint8_t *out_len);
int verbs_priv_decode(const vfab *fab, const void *data, size_t len,
                      unsigned char out[RF_MAX_PRIVATE_DATA], size_t *out_len);

/* --- device choice (verbs_device.c) ------------------------------------- */

/* Picks device, port and GID for attr (bind_addr, RF_VERBS_DEVICE,
 * RF_VERBS_PORT, RF_VERBS_GID_INDEX); fills fab->ctx .. fab->src. */
rf_status verbs_select_device(vfab *fab, const rf_fabric_attr *attr);
/* RF_OK if some device has an ACTIVE port. */
rf_status verbs_probe(void);
/* ibv_fork_init() once per process (see verbs_device.c). */
void verbs_fork_init(void);
/* verbs_info.c: rf_fabric_device_info for a verbs fabric. */
rf_status verbs_fabric_device(rf_fabric *fabric, rf_fabric_device *out);

/* --- fabric and event thread (verbs_fabric.c, verbs_event.c) ------------ */

rf_status verbs_fabric_open(const rf_fabric_attr *attr, rf_fabric **out);
void verbs_fabric_close(rf_fabric *fabric);
rf_status verbs_event_start(vfab *fab);
void verbs_event_stop(vfab *fab);
void verbs_register(vfab *fab, vcmobj *obj);
void verbs_unregister(vfab *fab, vcmobj *obj);
/* Wakes the event thread (pending disconnect requests). */
void verbs_event_wake(vfab *fab);

static inline void verbs_cm_lock(vfab *fab)
{
    pthread_mutex_lock(&fab->cm_lock);
}
static inline void verbs_cm_unlock(vfab *fab)
{
    pthread_mutex_unlock(&fab->cm_lock);
}

/* --- memory (verbs_mr.c) ------------------------------------------------ */

rf_status verbs_mr_reg(rf_fabric *fabric, void *addr, size_t len,
                       uint32_t access, rf_mr **out);
rf_status verbs_mr_dereg(rf_mr *mr);

/* --- completion queues (verbs_cq.c) ------------------------------------- */

rf_status verbs_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out);
void verbs_cq_destroy(rf_cq *cq);
int verbs_cq_poll(rf_cq *cq, rf_completion *out, int max);
int verbs_cq_wait(rf_cq *cq, rf_completion *out, int max, int timeout_ms);
/* Moves every completion the device has into the software queue. Caller
 * holds cq->lock. */
void verbs_cq_progress_locked(vcq *cq);
/* Appends a completion to the software queue. Caller holds cq->lock. */
void verbs_cq_push_locked(vcq *cq, const rf_completion *c);

/* --- endpoints (verbs_ep.c) --------------------------------------------- */

/* Allocates an endpoint (queues sized from attr) bound to cm_id; the QP is
 * created by verbs_ep_create_qp once id->verbs is known. */
rf_status verbs_ep_alloc(vfab *fab, const rf_ep_attr *attr, vep **out);
/* Creates the RC QP (not attached to the cm_id: rdma_cm makes no
 * transition of it) and moves it to INIT with no remote access. */
rf_status verbs_ep_create_qp(vep *ep, struct rdma_cm_id *id, const char *what);
/* Moves the QP to RTS with the connection's attributes, once they are
 * known (passive side: before rdma_accept; active side: at
 * CONNECT_RESPONSE, before rdma_establish). resp_res / init_depth < 0 keep
 * rdma_cm's values. Remote access is granted here unless the endpoint is
 * gated (RF_EP_REMOTE_ACCESS_OFF). */
rf_status verbs_ep_qp_ready(vep *ep, int resp_res, int init_depth,
                            const char *what);
rf_status verbs_ep_enable_remote_access(rf_ep *ep);
/* Moves the QP to the error state (flushing its work) and disconnects:
 * the DREQ, or the DREP to the peer's. */
void verbs_ep_disconnect(vep *ep);
/* Tears down an endpoint that is not (or no longer) registered. */
void verbs_ep_destroy(vep *ep);
void verbs_ep_close(rf_ep *ep);
rf_status verbs_ep_state(const rf_ep *ep);
rf_status verbs_post(rf_ep *ep, const rf_wr *wrs, size_t n, size_t *posted);
rf_status verbs_post_recv(rf_ep *ep, void *buf, size_t len, rf_mr *mr,
                          void *context);
/* Marks the endpoint in error (idempotent); request_disconnect asks the
 * event thread to send a DREQ so the peer learns it too. */
void verbs_ep_set_error(vep *ep, int request_disconnect);
/* Translates one CQE of this endpoint's send or receive queue into user
 * completions (appended to the emitter). Caller holds the CQ's lock. */
typedef struct vemit {
    vcq *cq;
    rf_completion *out;
    int max;
    int n;
} vemit;
static inline void verbs_emit(vemit *em, const rf_completion *c)
{
    if (em->n < em->max)
        em->out[em->n++] = *c;
    else
        verbs_cq_push_locked(em->cq, c);
}
void verbs_ep_handle_wc(vemit *em, const struct ibv_wc *wc);

/* The common CQE, translated in the poll loop itself: the oldest
 * outstanding request of a send queue, signaled by the user, succeeded,
 * and the caller's array has room. Returns 0 for any other CQE, which
 * verbs_ep_handle_wc then translates. Caller holds the CQ's lock. */
static inline int verbs_fast_send_wc(vemit *em, const struct ibv_wc *wc)
{
    if (wc->status != IBV_WC_SUCCESS || em->n >= em->max)
        return 0;
    vslot *slot = (vslot *)(uintptr_t)wc->wr_id;
    vep *ep = slot->ep;
    if (slot < ep->sq || slot > ep->sq + ep->sq_mask)
        return 0; /* a receive */
    /* Acquire: the slot contents were written before sq_head's release. */
    uint64_t head = atomic_load_explicit(&ep->sq_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&ep->sq_tail, memory_order_relaxed);
    if (tail >= head || slot != &ep->sq[tail & ep->sq_mask] ||
        slot->flags != (VSLOT_USER_SIGNALED | VSLOT_HW_SIGNALED))
        return 0;
    em->out[em->n++] = (rf_completion){.context = slot->context,
                                       .ep = rf_ep_public(&ep->base),
                                       .op = (rf_op)slot->op,
                                       .status = RF_OK,
                                       .len = slot->len,
                                       .imm = 0};
    atomic_store_explicit(&ep->sq_tail, tail + 1, memory_order_release);
    return 1;
}

/* --- connection management (verbs_cm.c) --------------------------------- */

rf_status verbs_listen(rf_fabric *fabric, const char *host, uint16_t port,
                       rf_listener **out);
void verbs_listener_close(rf_listener *listener);
rf_status verbs_get_request(rf_listener *listener, int timeout_ms,
                            rf_conn_req **out);
rf_status verbs_accept(rf_conn_req *req, const rf_ep_attr *attr,
                       const void *priv, size_t priv_len, rf_ep **out);
void verbs_reject(rf_conn_req *req, const void *priv, size_t priv_len);
rf_status verbs_connect(rf_fabric *fabric, const char *host, uint16_t port,
                        const rf_ep_attr *attr, const void *priv,
                        size_t priv_len, int timeout_ms, rf_ep **out);
/* Called by the event thread with reg_lock held. */
void verbs_cm_dispatch_ep(vep *ep, const struct rdma_cm_event *ev);
int verbs_cm_dispatch_request(vlistener *l, const struct rdma_cm_event *ev);

/* "IB", "RoCE v1", "RoCE v2" or "unknown" for an ibv_gid_type
 * (verbs_device.c; the banner and rf_verbs_devices use it). */
const char *verbs_gid_type_name(int type);

#endif
