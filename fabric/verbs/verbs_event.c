/* fabric/verbs/verbs_event.c: the per-fabric event thread. It waits on the
 * fabric's rdma_cm event channel, the device's async event fd and an
 * eventfd, and
 *  - dispatches rdma_cm events to the registered endpoint or listener (each
 *    event is acknowledged only after dispatch, so the cm_id cannot be
 *    destroyed, and its address reused, while it is being looked up);
 *  - turns QP fatal / access error async events into the error state;
 *  - sends the DREQ for endpoints that went into the error state
 *    (want_disconnect), so the peer learns it as RDMA_CM_EVENT_DISCONNECTED.
 * The async fd belongs to librdmacm's device context and may be shared by
 * several fabrics on one device: any of their threads may read an event,
 * and handling it needs only the QP's own endpoint. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/verbs/verbs_internal.h"

void verbs_register(vfab *fab, vcmobj *obj)
{
    pthread_mutex_lock(&fab->reg_lock);
    obj->next = fab->objs;
    fab->objs = obj;
    pthread_mutex_unlock(&fab->reg_lock);
}

void verbs_unregister(vfab *fab, vcmobj *obj)
{
    pthread_mutex_lock(&fab->reg_lock);
    for (vcmobj **pp = &fab->objs; *pp; pp = &(*pp)->next) {
        if (*pp == obj) {
            *pp = obj->next;
            break;
        }
    }
    obj->next = NULL;
    pthread_mutex_unlock(&fab->reg_lock);
}

void verbs_event_wake(vfab *fab)
{
    uint64_t one = 1;
    if (fab->wake_fd >= 0 && write(fab->wake_fd, &one, sizeof one) < 0 &&
        errno != EAGAIN)
        RF_LOG_WARN("verbs: eventfd write: %s", strerror(errno));
}

static vcmobj *find_locked(vfab *fab, const struct rdma_cm_id *id)
{
    for (vcmobj *o = fab->objs; o; o = o->next)
        if (o->id == id)
            return o;
    return NULL;
}

static void handle_cm_event(vfab *fab, struct rdma_cm_event *ev)
{
    RF_LOG_DEBUG("verbs: cm event %s (status %d) on id %p",
                 verbs_event_str(ev->event), ev->status, (void *)ev->id);
    if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        /* The request is counted against the listener's id: dispatch it
         * before the ack so the listener cannot go away meanwhile. */
        struct rdma_cm_id *child = ev->id;
        int taken = 0;
        pthread_mutex_lock(&fab->reg_lock);
        vcmobj *o = find_locked(fab, ev->listen_id);
        if (o && o->kind == VCM_LISTENER)
            taken = verbs_cm_dispatch_request(
                (vlistener *)((char *)o - offsetof(vlistener, cm)), ev);
        pthread_mutex_unlock(&fab->reg_lock);
        rdma_ack_cm_event(ev);
        if (!taken) {
            verbs_cm_lock(fab);
            rdma_reject(child, NULL, 0);
            verbs_cm_unlock(fab);
            rdma_destroy_id(child);
        }
        return;
    }
    pthread_mutex_lock(&fab->reg_lock);
    vcmobj *o = find_locked(fab, ev->id);
    if (o && o->kind == VCM_EP) {
        verbs_cm_dispatch_ep((vep *)((char *)o - offsetof(vep, cm)), ev);
    } else if (o && o->kind == VCM_LISTENER &&
               ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        vlistener *l = (vlistener *)((char *)o - offsetof(vlistener, cm));
        pthread_mutex_lock(&l->mu);
        l->broken = 1;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
    pthread_mutex_unlock(&fab->reg_lock);
    rdma_ack_cm_event(ev);
}

static void handle_async_event(struct ibv_async_event *ae)
{
    switch (ae->event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR: {
        vep *ep = ae->element.qp->qp_context;
        RF_LOG_INFO("verbs: async event %s on QP %u",
                    ibv_event_type_str(ae->event_type), ae->element.qp->qp_num);
        if (ep)
            verbs_ep_set_error(ep, 1);
        break;
    }
    case IBV_EVENT_CQ_ERR:
        RF_LOG_ERRORF("verbs: completion queue overrun (async event %s): "
                      "the CQ is smaller than the outstanding work",
                      ibv_event_type_str(ae->event_type));
        break;
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_PORT_ERR:
        RF_LOG_WARN("verbs: async event %s",
                    ibv_event_type_str(ae->event_type));
        break;
    default:
        RF_LOG_DEBUG("verbs: async event %s",
                     ibv_event_type_str(ae->event_type));
        break;
    }
}

/* Sends the DREQ (and moves the QP to the error state) for endpoints whose
 * completions or async events showed an error. */
static void process_disconnects(vfab *fab)
{
    pthread_mutex_lock(&fab->reg_lock);
    for (vcmobj *o = fab->objs; o; o = o->next) {
        if (o->kind != VCM_EP)
            continue;
        vep *ep = (vep *)((char *)o - offsetof(vep, cm));
        int pending = 1; /* 1 = requested, 2 = done: one DREQ only */
        if (atomic_compare_exchange_strong(&ep->want_disconnect, &pending, 2) &&
            o->id) {
            RF_LOG_DEBUG("verbs: disconnecting QP %u after an error",
                         ep->qp ? ep->qp->qp_num : 0);
            verbs_ep_disconnect(ep);
        }
    }
    pthread_mutex_unlock(&fab->reg_lock);
}

static void *event_thread(void *arg)
{
    vfab *fab = arg;
    struct pollfd fds[3] = {
        {.fd = fab->ch->fd, .events = POLLIN},
        {.fd = fab->ctx->async_fd, .events = POLLIN},
        {.fd = fab->wake_fd, .events = POLLIN},
    };
    while (!atomic_load(&fab->stopping)) {
        int rc = poll(fds, 3, -1);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            RF_LOG_ERRORF("verbs: event thread poll: %s", strerror(errno));
            break;
        }
        if (fds[2].revents) {
            uint64_t v;
            if (read(fab->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
                RF_LOG_WARN("verbs: eventfd read: %s", strerror(errno));
        }
        if (atomic_load(&fab->stopping))
            break;
        if (fds[0].revents) {
            struct rdma_cm_event *ev;
            for (;;) {
                verbs_cm_lock(fab);
                int got = rdma_get_cm_event(fab->ch, &ev);
                verbs_cm_unlock(fab);
                if (got)
                    break;
                handle_cm_event(fab, ev);
            }
        }
        if (fds[1].revents) {
            struct ibv_async_event ae;
            while (ibv_get_async_event(fab->ctx, &ae) == 0) {
                handle_async_event(&ae);
                ibv_ack_async_event(&ae);
            }
        }
        process_disconnects(fab);
    }
    return NULL;
}

static rf_status set_nonblock(int fd, const char *what)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return rf_error_set(RF_ERR_IO, "verbs: fcntl(%s, O_NONBLOCK): %s", what,
                            strerror(errno));
    return RF_OK;
}

rf_status verbs_event_start(vfab *fab)
{
    fab->ch = rdma_create_event_channel();
    if (!fab->ch)
        return rf_error_set(verbs_errno_status(errno),
                            "rdma_create_event_channel: %s (is rdma_ucm "
                            "loaded?)",
                            strerror(errno));
    rf_status st = set_nonblock(fab->ch->fd, "rdma_cm channel");
    if (st == RF_OK)
        st = set_nonblock(fab->ctx->async_fd, "device async fd");
    if (st != RF_OK)
        return st;
    fab->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fab->wake_fd < 0)
        return rf_error_set(RF_ERR_IO, "verbs: eventfd: %s", strerror(errno));
    int rc = pthread_create(&fab->thread, NULL, event_thread, fab);
    if (rc)
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "verbs: pthread_create(event thread): %s",
                            strerror(rc));
    fab->thread_started = 1;
    return RF_OK;
}

void verbs_event_stop(vfab *fab)
{
    if (!fab->thread_started)
        return;
    atomic_store(&fab->stopping, 1);
    verbs_event_wake(fab);
    pthread_join(fab->thread, NULL);
    fab->thread_started = 0;
}
