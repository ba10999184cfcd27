/* fabric/shm/shm_cq.c: completion queues of the shm provider. The progress
 * thread (and rf_post, rf_ep_close) push completions; rf_cq_poll and
 * rf_cq_wait take them under the queue's mutex, rf_cq_wait blocking on a
 * condition variable after fabric.c's short spin (for which an empty queue
 * is polled without the lock). The queue counts the bytes of the transfers
 * whose completions it holds, for pacing (shm.h), and wakes the progress
 * thread when taking completions brings that below SHM_PACE_BYTES. It never
 * loses a completion: past its depth it grows (bounded by the work this
 * process posted, never by a peer) and logs a warning each time. */
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

void shm_cq_push(shm_cq *cq, const rf_completion *c)
{
    pthread_mutex_lock(&cq->mu);
    if (cq->count == cq->cap) {
        size_t ncap = cq->cap * 2;
        rf_completion *nv = malloc(ncap * sizeof *nv);
        if (!nv) {
            RF_LOG_ERRORF("shm: completion queue overflow and no memory: a "
                          "completion is lost");
            pthread_mutex_unlock(&cq->mu);
            return;
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
    cq->v[(cq->head + cq->count) % cq->cap] = *c;
    cq->count++;
    __atomic_store_n(&cq->pending, cq->count, __ATOMIC_RELEASE);
    if (c->status == RF_OK && c->op <= RF_OP_SEND)
        cq->lead += c->len;
    pthread_cond_broadcast(&cq->cv);
    pthread_mutex_unlock(&cq->mu);
}

uint64_t shm_cq_lead(shm_cq *cq)
{
    pthread_mutex_lock(&cq->mu);
    uint64_t lead = cq->lead;
    if (lead >= SHM_PACE_BYTES)
        cq->paced = 1;
    pthread_mutex_unlock(&cq->mu);
    return lead;
}

static int take_locked(shm_cq *cq, rf_completion *out, int max)
{
    int n = 0;
    while (n < max && cq->count > 0) {
        const rf_completion *c = &cq->v[cq->head];
        if (c->status == RF_OK && c->op <= RF_OP_SEND)
            cq->lead -= c->len;
        out[n++] = *c;
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
    }
    __atomic_store_n(&cq->pending, cq->count, __ATOMIC_RELEASE);
    if (n && cq->paced && cq->lead < SHM_PACE_BYTES) {
        cq->paced = 0;
        shm_fab_wake((shm_fabric *)cq->base.fabric);
    }
    return n;
}

int shm_cq_poll(rf_cq *base, rf_completion *out, int max)
{
    shm_cq *cq = (shm_cq *)base;
    /* An empty queue takes no lock: rf_cq_wait's spin (fabric.c) polls
     * here and must not contend with the progress thread's pushes. */
    if (__atomic_load_n(&cq->pending, __ATOMIC_ACQUIRE) == 0)
        return 0;
    pthread_mutex_lock(&cq->mu);
    int n = take_locked(cq, out, max);
    pthread_mutex_unlock(&cq->mu);
    return n;
}

int shm_cq_wait(rf_cq *base, rf_completion *out, int max, int timeout_ms)
{
    shm_cq *cq = (shm_cq *)base;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    pthread_mutex_lock(&cq->mu);
    while (cq->count == 0) {
        if (rf_cond_wait_until(&cq->cv, &cq->mu, deadline) == ETIMEDOUT &&
            cq->count == 0) {
            pthread_mutex_unlock(&cq->mu);
            return rf_error_set(RF_ERR_TIMEOUT,
                                "rf_cq_wait: no completion within %d ms",
                                timeout_ms);
        }
    }
    int n = take_locked(cq, out, max);
    pthread_mutex_unlock(&cq->mu);
    return n;
}
