/* fabric/sock/sock_cq.c: completion queues of the sock provider. A ring of
 * `depth` completions guarded by a mutex, with a condition variable for
 * rf_cq_wait. A completion that finds the queue full is never dropped: it
 * goes to an overflow list (polled after the ring, in order), the overflow
 * is logged once per queue, and the endpoint that produced it is put in the
 * error state, like a CQ overrun in verbs. A queue destroyed while endpoints
 * still use it is freed when the last of them closes. rf_cq_poll on an
 * empty queue takes no lock (an atomic count) unless it reads its few
 * endpoints' sockets itself (sock_direct.c), as rf_cq_wait then does;
 * with manual progress both read every endpoint of the queue. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

#define CHUNK 256

struct sock_cq_chunk {
    sock_cq_chunk *next;
    uint32_t head, count;
    rf_completion c[CHUNK];
};

rf_status sock_cq_create(rf_fabric *fabric, uint32_t depth, rf_cq **out)
{
    sock_fabric *fab = SOCK_FAB(fabric);
    sock_cq *cq = calloc(1, sizeof *cq);
    if (cq)
        cq->ring = calloc(depth, sizeof *cq->ring);
    if (!cq || !cq->ring) {
        free(cq);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_cq_create: no memory for %u completions",
                            depth);
    }
    cq->base.fabric = fabric;
    cq->cap = depth;
    cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* -1: no direct wait */
    if (cq->efd < 0 && fab->manual) { /* manual waiters need it */
        int e = errno;
        free(cq->ring);
        free(cq);
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_cq_create: eventfd: %s",
                            strerror(e));
    }
    pthread_mutex_init(&cq->mu, NULL);
    rf_cond_init_monotonic(&cq->cond);

    pthread_mutex_lock(&fab->mu);
    cq->next = fab->cqs;
    if (fab->cqs)
        fab->cqs->prev = cq;
    fab->cqs = cq;
    pthread_mutex_unlock(&fab->mu);
    *out = &cq->base;
    return RF_OK;
}

void sock_cq_free(sock_cq *cq)
{
    while (cq->ovf_head) {
        sock_cq_chunk *c = cq->ovf_head;
        cq->ovf_head = c->next;
        free(c);
    }
    if (cq->efd >= 0)
        close(cq->efd);
    free(cq->direct);
    pthread_mutex_destroy(&cq->mu);
    pthread_cond_destroy(&cq->cond);
    free(cq->ring);
    free(cq);
}

static void unlink_and_free(sock_cq *cq)
{
    sock_fabric *fab = SOCK_FAB(cq->base.fabric);
    pthread_mutex_lock(&fab->mu);
    if (cq->prev)
        cq->prev->next = cq->next;
    else
        fab->cqs = cq->next;
    if (cq->next)
        cq->next->prev = cq->prev;
    pthread_mutex_unlock(&fab->mu);
    sock_cq_free(cq);
}

void sock_cq_destroy(rf_cq *base)
{
    sock_cq *cq = (sock_cq *)base;
    pthread_mutex_lock(&cq->mu);
    cq->destroyed = 1;
    int free_now = cq->refs == 0;
    int refs = cq->refs;
    pthread_mutex_unlock(&cq->mu);
    if (free_now)
        unlink_and_free(cq);
    else
        RF_LOG_WARN("rf_cq_destroy: %d endpoint(s) still use this completion "
                    "queue; it is freed when they are closed",
                    refs);
}

void sock_cq_ref(sock_cq *cq)
{
    pthread_mutex_lock(&cq->mu);
    cq->refs++;
    pthread_mutex_unlock(&cq->mu);
}

void sock_cq_unref(sock_cq *cq)
{
    pthread_mutex_lock(&cq->mu);
    int free_now = --cq->refs == 0 && cq->destroyed;
    pthread_mutex_unlock(&cq->mu);
    if (free_now)
        unlink_and_free(cq);
}

int sock_cq_push(sock_cq *cq, const rf_completion *c)
{
    int overflow = 0;
    pthread_mutex_lock(&cq->mu);
    if (cq->ovf_count == 0 && cq->count < cq->cap) {
        cq->ring[(cq->head + cq->count) % cq->cap] = *c;
        cq->count++;
    } else {
        overflow = 1;
        sock_cq_chunk *t = cq->ovf_tail;
        if (!t || t->head + t->count == CHUNK) {
            t = malloc(sizeof *t);
            if (t) {
                t->next = NULL;
                t->head = t->count = 0;
                if (cq->ovf_tail)
                    cq->ovf_tail->next = t;
                else
                    cq->ovf_head = t;
                cq->ovf_tail = t;
            }
        }
        if (t) {
            t->c[t->head + t->count++] = *c;
            cq->ovf_count++;
        } else {
            RF_LOG_ERRORF("sock: completion queue overflow and no memory: "
                          "a completion (status %s) was lost",
                          rf_status_string(c->status));
        }
        if (!cq->overflow_logged) {
            cq->overflow_logged = 1;
            RF_LOG_ERRORF("sock: completion queue of depth %u overflowed; "
                          "the endpoint goes to the error state (poll "
                          "faster or create a deeper queue)",
                          cq->cap);
        }
    }
    atomic_store_explicit(&cq->pending, cq->count + cq->ovf_count,
                          memory_order_release);
    if (cq->waiters)
        pthread_cond_broadcast(&cq->cond);
    if (cq->poll_waiters) {
        uint64_t one = 1;
        ssize_t r = write(cq->efd, &one, sizeof one);
        (void)r; /* EAGAIN: saturated, the waiter wakes anyway */
    }
    pthread_mutex_unlock(&cq->mu);
    return overflow;
}

static int take(sock_cq *cq, rf_completion *out, int max)
{
    int n = 0;
    while (n < max && cq->count > 0) {
        out[n++] = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
    }
    while (n < max && cq->ovf_count > 0) {
        sock_cq_chunk *t = cq->ovf_head;
        out[n++] = t->c[t->head++];
        t->count--;
        cq->ovf_count--;
        if (t->count == 0) {
            cq->ovf_head = t->next;
            if (!cq->ovf_head)
                cq->ovf_tail = NULL;
            free(t);
        }
    }
    atomic_store_explicit(&cq->pending, cq->count + cq->ovf_count,
                          memory_order_relaxed);
    return n;
}

int sock_cq_poll(rf_cq *base, rf_completion *out, int max)
{
    sock_cq *cq = (sock_cq *)base;
    /* nothing pushed (as of this load): read the sockets here if the
     * queue allows it, else return without a lock */
    if (atomic_load_explicit(&cq->pending, memory_order_acquire) == 0) {
        sock_direct_poll(cq);
        if (atomic_load_explicit(&cq->pending, memory_order_acquire) == 0)
            return 0;
    }
    pthread_mutex_lock(&cq->mu);
    int n = take(cq, out, max);
    pthread_mutex_unlock(&cq->mu);
    return n;
}

int sock_cq_wait(rf_cq *base, rf_completion *out, int max, int timeout_ms)
{
    sock_cq *cq = (sock_cq *)base;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    /* Direct progress: poll the sockets and the queue's eventfd (always
     * with manual progress, which has no other reader of the sockets). */
    for (;;) {
        int n = sock_cq_poll(base, out, max);
        if (n != 0)
            return n;
        if (timeout_ms == 0 || rf_deadline_passed(deadline) ||
            !sock_direct_wait(cq, deadline))
            break;
    }
    pthread_mutex_lock(&cq->mu);
    cq->waiters++;
    while (cq->count == 0 && cq->ovf_count == 0 && timeout_ms != 0)
        if (rf_cond_wait_until(&cq->cond, &cq->mu, deadline) == ETIMEDOUT)
            break;
    cq->waiters--;
    int n = take(cq, out, max);
    pthread_mutex_unlock(&cq->mu);
    if (n == 0)
        return rf_error_set(RF_ERR_TIMEOUT,
                            "rf_cq_wait: no completion within %d ms",
                            timeout_ms);
    return n;
}
