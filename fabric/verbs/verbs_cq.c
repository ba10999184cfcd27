/* fabric/verbs/verbs_cq.c: completion queues. rf_cq_poll drains a software
 * queue (completions already taken from the device: batch overflow, work
 * completed by rf_ep_close) and then ibv_poll_cq in batches, translating
 * each CQE through the endpoint's ring of posted work (verbs_ep.c). One
 * lock per CQ (an rf_spinlock, core/spinlock.h) lets several threads poll it.
 * rf_cq_wait, after the spin fabric.c makes (RF_CQ_SPIN_US), sleeps on a
 * completion channel (RF_VERBS_CQ_MODE=event, the default: ibv_req_notify_cq +
 * poll() on its fd) or busy-polls on (RF_VERBS_CQ_MODE=poll). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verbs/verbs_internal.h"

/* Extra CQEs beyond the requested depth: internally signaled work requests
 * and drain markers also produce CQEs. */
#define CQ_SLACK 64

rf_status verbs_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out)
{
    vfab *fab = (vfab *)fabric;
    int max_cqe = fab->dev_attr.max_cqe;
    if ((int64_t)depth > max_cqe)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_cq_create: depth %u exceeds %s's max_cqe %d",
                            depth, fab->devname, max_cqe);
    uint64_t want = (uint64_t)depth + CQ_SLACK, cqe = 64;
    while (cqe < want)
        cqe <<= 1;
    if (cqe > (uint64_t)max_cqe)
        cqe = (uint64_t)max_cqe;

    vcq *cq = calloc(1, sizeof *cq);
    if (!cq)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_cq_create: out of memory");
    cq->base.fabric = fabric;
    cq->fab = fab;
    rf_spin_init(&cq->lock);
    rf_status st = RF_OK;
    if (fab->cq_event_mode) {
        cq->ch = ibv_create_comp_channel(fab->ctx);
        if (!cq->ch) {
            st = rf_error_set(verbs_errno_status(errno),
                              "ibv_create_comp_channel(%s): %s", fab->devname,
                              strerror(errno));
        } else {
            int fl = fcntl(cq->ch->fd, F_GETFL);
            if (fl < 0 || fcntl(cq->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
                st = rf_error_set(RF_ERR_IO, "fcntl(completion channel): %s",
                                  strerror(errno));
        }
    }
    if (st == RF_OK) {
        cq->cq = ibv_create_cq(fab->ctx, (int)cqe, cq, cq->ch, 0);
        if (!cq->cq)
            st = rf_error_set(verbs_errno_status(errno),
                              "ibv_create_cq(%s, %llu): %s", fab->devname,
                              (unsigned long long)cqe, strerror(errno));
    }
    if (st == RF_OK) {
        cq->sw_cap = 64;
        cq->sw = malloc(cq->sw_cap * sizeof *cq->sw);
        if (!cq->sw)
            st = rf_error_set(RF_ERR_NO_MEMORY, "rf_cq_create: out of memory");
    }
    if (st != RF_OK) {
        verbs_cq_destroy(&cq->base);
        return st;
    }
    *out = &cq->base;
    return RF_OK;
}

void verbs_cq_destroy(rf_cq *c)
{
    vcq *cq = (vcq *)c;
    if (cq->cq) {
        int rc = ibv_destroy_cq(cq->cq);
        if (rc) {
            /* Still used by a QP: leak rather than free memory the
             * device may write. */
            RF_LOG_ERRORF("verbs: ibv_destroy_cq: %s (endpoints still use "
                          "it; close them first)",
                          strerror(rc));
            return;
        }
    }
    if (cq->ch)
        ibv_destroy_comp_channel(cq->ch);
    free(cq->sw);
    free(cq);
}

void verbs_cq_push_locked(vcq *cq, const rf_completion *c)
{
    if (cq->sw_count == cq->sw_cap) {
        size_t ncap = cq->sw_cap * 2;
        rf_completion *n = malloc(ncap * sizeof *n);
        if (!n) {
            RF_LOG_ERRORF("verbs: out of memory queueing a completion; "
                          "completion of context %p lost",
                          c->context);
            return;
        }
        for (size_t i = 0; i < cq->sw_count; i++)
            n[i] = cq->sw[(cq->sw_head + i) % cq->sw_cap];
        free(cq->sw);
        cq->sw = n;
        cq->sw_cap = ncap;
        cq->sw_head = 0;
    }
    cq->sw[(cq->sw_head + cq->sw_count) % cq->sw_cap] = *c;
    cq->sw_count++;
}

/* Inlined into verbs_cq_poll: an empty poll then costs the lock, the
 * software queue check and ibv_poll_cq, without a call of its own. */
static inline __attribute__((always_inline)) void poll_device_locked(vcq *cq,
                                                                     vemit *em)
{
    struct ibv_wc wc[16];
    for (;;) {
        int want = 16;
        if (em->max > 0) {
            int room = em->max - em->n;
            if (room <= 0)
                return;
            if (room < want)
                want = room;
        }
        int k = ibv_poll_cq(cq->cq, want, wc);
        if (k < 0) {
            RF_LOG_ERRORF("verbs: ibv_poll_cq: error %d", k);
            return;
        }
        for (int i = 0; i < k; i++)
            if (!verbs_fast_send_wc(em, &wc[i]))
                verbs_ep_handle_wc(em, &wc[i]);
        if (k < want)
            return;
    }
}

void verbs_cq_progress_locked(vcq *cq)
{
    vemit em = {.cq = cq, .out = NULL, .max = 0, .n = 0};
    poll_device_locked(cq, &em);
}

/* Moves up to max queued software completions to out. */
static int drain_sw_locked(vcq *cq, rf_completion *out, int max)
{
    int n = 0;
    while (n < max && cq->sw_count) {
        out[n++] = cq->sw[cq->sw_head];
        cq->sw_head = (cq->sw_head + 1) % cq->sw_cap;
        cq->sw_count--;
    }
    return n;
}

int verbs_cq_poll(rf_cq *c, rf_completion *out, int max)
{
    vcq *cq = (vcq *)c;
    rf_spin_lock(&cq->lock);
    int n = cq->sw_count ? drain_sw_locked(cq, out, max) : 0;
    if (n < max) {
        vemit em = {.cq = cq, .out = out, .max = max, .n = n};
        poll_device_locked(cq, &em);
        n = em.n;
    }
    rf_spin_unlock(&cq->lock);
    return n;
}

static int wait_timeout(void)
{
    return rf_error_set(RF_ERR_TIMEOUT, "rf_cq_wait: no completion in time");
}

static int wait_event(vcq *cq, rf_completion *out, int max, int64_t deadline)
{
    for (;;) {
        int n = verbs_cq_poll(&cq->base, out, max);
        if (n)
            return n;
        rf_spin_lock(&cq->lock);
        int rc = ibv_req_notify_cq(cq->cq, 0);
        rf_spin_unlock(&cq->lock);
        if (rc)
            return rf_error_set(verbs_errno_status(rc), "ibv_req_notify_cq: %s",
                                strerror(rc));
        /* Completions that arrived before the CQ was armed. */
        n = verbs_cq_poll(&cq->base, out, max);
        if (n)
            return n;
        int left = rf_deadline_left_ms(deadline);
        if (left == 0)
            return wait_timeout();
        struct pollfd pfd = {.fd = cq->ch->fd, .events = POLLIN};
        rc = poll(&pfd, 1, left);
        if (rc < 0 && errno != EINTR)
            return rf_error_set(RF_ERR_IO, "rf_cq_wait: poll: %s",
                                strerror(errno));
        if (rc > 0) {
            struct ibv_cq *ev_cq;
            void *ev_ctx;
            rf_spin_lock(&cq->lock);
            while (ibv_get_cq_event(cq->ch, &ev_cq, &ev_ctx) == 0)
                ibv_ack_cq_events(ev_cq, 1);
            rf_spin_unlock(&cq->lock);
        }
    }
}

int verbs_cq_wait(rf_cq *c, rf_completion *out, int max, int timeout_ms)
{
    vcq *cq = (vcq *)c;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    if (cq->ch)
        return wait_event(cq, out, max, deadline);
    for (unsigned spins = 0;; spins++) {
        int n = verbs_cq_poll(c, out, max);
        if (n)
            return n;
        if ((spins & 63) == 63) {
            if (rf_deadline_left_ms(deadline) == 0)
                return wait_timeout();
            /* Spinning hard starves the peer when cores are scarce
             * (rxe in a small VM does its protocol work on our CPUs). */
            sched_yield();
        }
    }
}
