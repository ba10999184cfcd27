/* fabric/shm/shm_cq.c: completion queues of the shm provider. The progress
 * thread, rf_post (work it ran inline) and rf_ep_close push completions;
 * rf_cq_poll and rf_cq_wait take them. The ring is guarded by a spin lock
 * (core/spinlock.h: one atomic to push, one to take; an empty queue is
 * polled without it), so an inline read's completion costs two atomics
 * between rf_post and rf_cq_poll. A waiter that must block registers under
 * the ring's lock and sleeps on a condition variable with its own mutex;
 * a pusher that sees a registered waiter broadcasts under that mutex, so no
 * push costs a mutex or a broadcast while nobody sleeps. The queue counts
 * the bytes of the transfers whose completions it holds, for pacing
 * (shm.h), and wakes the progress thread when taking completions brings
 * that below SHM_PACE_BYTES. It never loses a completion: past its depth it
 * grows (bounded by the work this process posted, never by a peer) and
 * logs a warning each time.
 *
 * A queue created RF_CQ_SINGLE_THREADED (fabric.h) has a lane besides the
 * ring: the completion of a small one-sided request that rf_post ran
 * inline goes there with two plain stores when the ring is empty, and
 * rf_cq_poll takes the lane before the ring, without a lock or an atomic:
 * the application's one thread is both its producer and its consumer.
 * Order per endpoint holds: inline work runs only on an endpoint with
 * nothing queued, whose earlier completions are then in the ring already
 * (the lane is used only when the ring is empty) or in the lane before it;
 * anything the progress thread completes later was posted later. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fabric/shm/shm.h"

rf_status shm_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out)
{
    shm_cq *cq = calloc(1, sizeof *cq);
    if (!cq)
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: rf_cq_create: no memory");
    cq->v = calloc(depth, sizeof *cq->v);
    if (!cq->v) {
        free(cq);
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: rf_cq_create: no memory");
    }
    cq->cap = depth;
    rf_spin_init(&cq->lock);
    pthread_mutex_init(&cq->mu, NULL);
    rf_cond_init_monotonic(&cq->cv);
    cq->base.fabric = fabric;
    *out = &cq->base;
    return RF_OK;
}

void shm_cq_destroy(rf_cq *base)
{
    shm_cq *cq = (shm_cq *)base;
    pthread_mutex_destroy(&cq->mu);
    pthread_cond_destroy(&cq->cv);
    free(cq->v);
    free(cq);
}

/* Doubles a full ring (cq->lock held on entry and on return; dropped while
 * allocating). 0 if no memory. */
static int grow(shm_cq *cq)
{
    while (cq->count == cq->cap) {
        size_t ncap = cq->cap * 2;
        rf_spin_unlock(&cq->lock);
        rf_completion *nv = malloc(ncap * sizeof *nv);
        rf_spin_lock(&cq->lock);
        if (!nv)
            return 0;
        if (cq->count < cq->cap || ncap <= cq->cap) {
            free(nv); /* taken meanwhile, or grown by another pusher */
            continue;
        }
        for (size_t i = 0; i < cq->count; i++)
            nv[i] = cq->v[(cq->head + i) % cq->cap];
        RF_LOG_WARN("shm: completion queue of depth %zu overflowed; grown to "
                    "%zu",
                    cq->cap, ncap);
        free(cq->v);
        cq->v = nv;
        cq->cap = ncap;
        cq->head = 0;
    }
    return 1;
}

void shm_cq_push(shm_cq *cq, const rf_completion *c)
{
    rf_spin_lock(&cq->lock);
    if (cq->count == cq->cap && !grow(cq)) {
        rf_spin_unlock(&cq->lock);
        RF_LOG_ERRORF("shm: completion queue overflow and no memory: a "
                      "completion is lost");
        return;
    }
    cq->v[(cq->head + cq->count) % cq->cap] = *c;
    cq->count++;
    __atomic_store_n(&cq->pending, cq->count, __ATOMIC_RELEASE);
    if (c->status == RF_OK && c->op <= RF_OP_SEND)
        cq->lead += c->len;
    int sleepers = cq->waiters;
    rf_spin_unlock(&cq->lock);
    if (sleepers) {
        pthread_mutex_lock(&cq->mu);
        pthread_cond_broadcast(&cq->cv);
        pthread_mutex_unlock(&cq->mu);
    }
}

void shm_cq_push_inline(shm_cq *cq, const rf_completion *c)
{
    if ((cq->base.flags & RF_CQ_SINGLE_THREADED) &&
        cq->lane_count < SHM_LANE_SLOTS && c->len <= SHM_LANE_MAX_LEN &&
        __atomic_load_n(&cq->pending, __ATOMIC_ACQUIRE) == 0) {
        cq->lane[(cq->lane_head + cq->lane_count) % SHM_LANE_SLOTS] = *c;
        cq->lane_count++;
        return;
    }
    shm_cq_push(cq, c);
}

/* Takes up to max completions from the lane (the caller is the queue's
 * one thread). */
static int take_lane(shm_cq *cq, rf_completion *out, int max)
{
    int n = 0;
    while (n < max && cq->lane_count > 0) {
        out[n++] = cq->lane[cq->lane_head];
        cq->lane_head = (cq->lane_head + 1) % SHM_LANE_SLOTS;
        cq->lane_count--;
    }
    return n;
}

uint64_t shm_cq_lead(shm_cq *cq)
{
    rf_spin_lock(&cq->lock);
    uint64_t lead = cq->lead;
    if (lead >= SHM_PACE_BYTES)
        cq->paced = 1;
    rf_spin_unlock(&cq->lock);
    return lead;
}

/* Takes up to max completions (cq->lock held). *wake: the progress thread
 * waits for the queue to drain and now may go on (wake it after
 * unlocking). */
static int take_locked(shm_cq *cq, rf_completion *out, int max, int *wake)
{
    int n = 0;
    while (n < max && cq->count > 0) {
        const rf_completion *c = &cq->v[cq->head];
        if (c->status == RF_OK && c->op <= RF_OP_SEND)
            cq->lead -= c->len;
        out[n++] = *c;
        cq->head = cq->head + 1 == cq->cap ? 0 : cq->head + 1;
        cq->count--;
    }
    __atomic_store_n(&cq->pending, cq->count, __ATOMIC_RELEASE);
    if (n && cq->paced && cq->lead < SHM_PACE_BYTES) {
        cq->paced = 0;
        *wake = 1;
    }
    return n;
}

int shm_cq_poll(rf_cq *base, rf_completion *out, int max)
{
    shm_cq *cq = (shm_cq *)base;
    int got = cq->lane_count ? take_lane(cq, out, max) : 0;
    /* An empty queue takes no lock: rf_cq_wait's spin (fabric.c) polls
     * here and must not contend with the pushes. */
    if (got == max || __atomic_load_n(&cq->pending, __ATOMIC_ACQUIRE) == 0)
        return got;
    int wake = 0;
    rf_spin_lock(&cq->lock);
    int n = got + take_locked(cq, out + got, max - got, &wake);
    rf_spin_unlock(&cq->lock);
    if (wake)
        shm_fab_wake((shm_fabric *)cq->base.fabric);
    return n;
}

int shm_cq_wait(rf_cq *base, rf_completion *out, int max, int timeout_ms)
{
    shm_cq *cq = (shm_cq *)base;
    if (cq->lane_count) /* the caller's own completions, taken first */
        return shm_cq_poll(base, out, max);
    int64_t deadline = rf_deadline_ms(timeout_ms);
    int wake = 0, n = 0, timed_out = 0;
    /* cq->mu is held from each look at the ring until cond_wait releases
     * it, and a pusher broadcasts under it: a push after a look that found
     * nothing cannot slip in before the wait. */
    pthread_mutex_lock(&cq->mu);
    rf_spin_lock(&cq->lock);
    cq->waiters++;
    while ((n = take_locked(cq, out, max, &wake)) == 0 && !timed_out) {
        rf_spin_unlock(&cq->lock);
        timed_out = rf_cond_wait_until(&cq->cv, &cq->mu, deadline) == ETIMEDOUT;
        rf_spin_lock(&cq->lock);
    }
    cq->waiters--;
    rf_spin_unlock(&cq->lock);
    pthread_mutex_unlock(&cq->mu);
    if (wake)
        shm_fab_wake((shm_fabric *)cq->base.fabric);
    if (n == 0)
        return rf_error_set(RF_ERR_TIMEOUT,
                            "rf_cq_wait: no completion within %d ms",
                            timeout_ms);
    return n;
}
