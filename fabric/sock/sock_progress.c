/* fabric/sock/sock_progress.c: the per-fabric progress thread. Waits on the
 * epoll set, dispatches readiness to listeners, handshakes and endpoints
 * (an endpoint a direct poller holds is left to it, see below; with manual
 * progress an endpoint is watched for hang-ups and room to write, not
 * input), then
 * services kicked endpoints, runs commands (detach, stop) and checks
 * deadlines (handshakes, RNR, draining sockets) on a short tick while any
 * is pending, and the no-progress watchdog once a second. The thread asks
 * for a short scheduler slice, so that when user threads spin on every CPU
 * its wake-up for a peer's request preempts one of them at once. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"

#define TICK_MS     20
#define WATCHDOG_MS 1000
#define MAX_EVENTS  64
/* EEVDF clamps the slice to 0.1 .. 100 ms. */
#define SOCK_PROGRESS_SLICE_NS 100000u
/* Rounds an endpoint may be found held before the thread waits for it. */
#define TRYLOCK_ROUNDS 4

#define CONTAINER(ptr, type, member)                                           \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static void drain_wakefd(sock_fabric *fab)
{
    uint64_t v;
    while (read(fab->wakefd, &v, sizeof v) > 0)
        ;
}

static void run_kicks(sock_fabric *fab)
{
    pthread_mutex_lock(&fab->kick_mu);
    sock_ep *list = fab->kicks;
    fab->kicks = NULL;
    pthread_mutex_unlock(&fab->kick_mu);
    /* Endpoints are freed only after the detach command, which this thread
     * runs after the kicks, so every one of them is still alive. */
    while (list) {
        sock_ep *ep = list;
        pthread_mutex_lock(&fab->kick_mu);
        list = ep->kick_next;
        ep->kick_next = NULL;
        ep->kicked = 0; /* a new kick now goes to the next round */
        pthread_mutex_unlock(&fab->kick_mu);
        pthread_rwlock_rdlock(&fab->mr_mu);
        pthread_mutex_lock(&ep->mu);
        sock_ep_service(ep, 0);
        pthread_mutex_unlock(&ep->mu);
        pthread_rwlock_unlock(&fab->mr_mu);
    }
}

/* Returns 1 when the thread must stop. */
static int run_commands(sock_fabric *fab)
{
    int stop = 0;
    pthread_mutex_lock(&fab->mu);
    while (fab->cmds) {
        sock_cmd *cmd = fab->cmds;
        fab->cmds = cmd->next;
        switch (cmd->type) {
        case SOCK_CMD_DETACH_EP:
            sock_ep_detach(fab, cmd->obj);
            break;
        case SOCK_CMD_DETACH_LISTENER:
            sock_listener_detach(fab, cmd->obj);
            break;
        case SOCK_CMD_STOP:
            stop = 1;
            break;
        }
        cmd->done = 1;
    }
    pthread_cond_broadcast(&fab->cmd_cond);
    pthread_mutex_unlock(&fab->mu);
    return stop;
}

static void run_timers(sock_fabric *fab, int64_t now)
{
    int any = 0;
    pthread_rwlock_rdlock(&fab->mr_mu);
    pthread_mutex_lock(&fab->mu);
    for (sock_ep *ep = fab->eps; ep; ep = ep->next) {
        pthread_mutex_lock(&ep->mu);
        any |= sock_ep_timers(ep, now);
        pthread_mutex_unlock(&ep->mu);
    }
    pthread_mutex_unlock(&fab->mu);
    pthread_rwlock_unlock(&fab->mr_mu);
    any |= sock_hs_timers(fab, now);
    if (!any)
        __atomic_store_n(&fab->timers_hint, 0, __ATOMIC_RELAXED);
}

/* Asks the scheduler for a short slice (EEVDF's sched_attr.sched_runtime,
 * Linux 6.12 and later; ignored before): the thread runs in short bursts,
 * and a woken task with a shorter slice than the running one may preempt
 * it at once instead of waiting for its slice to end, so a request that
 * arrives while user threads spin on every CPU is served in microseconds.
 * The nice value is kept. */
static void short_slice(void)
{
    struct { /* struct sched_attr, first version (linux/sched/types.h) */
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
    } a = {.size = sizeof a,
           .sched_policy = SCHED_OTHER,
           .sched_runtime = SOCK_PROGRESS_SLICE_NS};
    if (sched_getscheduler(0) != SCHED_OTHER)
        return; /* batch, idle or real-time: the application's choice */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0); /* this thread's */
    if (errno != 0)
        return;
    a.sched_nice = nice;
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
        RF_LOG_DEBUG("sock: progress thread keeps the default slice");
}

void *sock_progress_main(void *arg)
{
    sock_fabric *fab = arg;
    short_slice();
    struct epoll_event evs[MAX_EVENTS];
    int64_t next_scan = rf_now_ms() + WATCHDOG_MS;
    int held_rounds = 0; /* rounds in a row that found an endpoint held */
    for (;;) {
        int64_t now = rf_now_ms();
        if (__atomic_load_n(&fab->timers_hint, __ATOMIC_RELAXED) &&
            next_scan > now + TICK_MS)
            next_scan = now + TICK_MS;
        int timeout = next_scan > now ? (int)(next_scan - now) : 0;
        int n = epoll_wait(fab->epfd, evs, MAX_EVENTS, timeout);
        if (n < 0) {
            if (errno != EINTR) {
                RF_LOG_ERRORF("sock: epoll_wait failed: %s", strerror(errno));
                rf_sleep_ms(1);
            }
            n = 0;
        }
        int woke = 0, busy = 0;
        for (int i = 0; i < n; i++) {
            sock_pollable *p = evs[i].data.ptr;
            switch (p->kind) {
            case SOCK_POLL_WAKE:
                woke = 1;
                drain_wakefd(fab);
                break;
            case SOCK_POLL_LISTENER:
                sock_listener_on_event(fab, CONTAINER(p, sock_listener, tag));
                break;
            case SOCK_POLL_HS:
                sock_hs_on_event(fab, CONTAINER(p, sock_hs, tag));
                break;
            case SOCK_POLL_EP: {
                /* A direct poller holding the endpoint reads what arrived
                 * (epoll reports it again if it leaves some): no waiting
                 * for it, no futex hand-off; after a few rounds finding it
                 * held, wait for the lock rather than spin. */
                sock_ep *ep = CONTAINER(p, sock_ep, tag);
                if (evs[i].events & EPOLLIN)
                    sock_count(&fab->n_thread_in);
                pthread_rwlock_rdlock(&fab->mr_mu);
                int got = pthread_mutex_trylock(&ep->mu) == 0;
                if (!got && held_rounds >= TRYLOCK_ROUNDS) {
                    pthread_mutex_lock(&ep->mu);
                    got = 1;
                }
                if (got) {
                    sock_ep_service(ep, evs[i].events);
                    pthread_mutex_unlock(&ep->mu);
                } else {
                    busy = 1;
                }
                pthread_rwlock_unlock(&fab->mr_mu);
                break;
            }
            }
        }
        held_rounds = busy ? held_rounds + 1 : 0;
        if (busy)
            sched_yield(); /* let the holder finish before epoll repeats */
        if (woke) {
            run_kicks(fab);
            if (run_commands(fab))
                break;
        }
        now = rf_now_ms();
        if (now >= next_scan) {
            run_timers(fab, now);
            next_scan = now + WATCHDOG_MS;
        }
    }
    return NULL;
}
