/* ps/ps_client_wait.c: the ps client's one progress-and-wait engine.
 *
 * Every wait of the client (a group of one-sided ops, a control RPC's
 * reply, room in a send queue, push acknowledgements, an apply=worker
 * round, a read-set transfer, a backoff) is a cli_wait: a condition, a
 * deadline and a name. A round of it handles every completion queued,
 * without blocking, under the client's mutex, dispatching each to its
 * owner (cli_dispatch); then, the condition still false, the waiter lets
 * go of the mutex and sleeps: in rf_cq_wait if no other waiter does (it
 * alone may take completions then, so they are handled in the order they
 * arrived; it hands them to their owners once it holds the mutex again),
 * else on progress_cv, which is broadcast whenever completions were
 * handled and whenever the sleeper comes back. So no thread blocks while
 * holding the mutex, and a thread whose transfer arrived returns while
 * another's is still in flight (as UCX's ucp_worker_progress, which never
 * blocks, with the waiting done outside the progress lock).
 *
 * Public calls hold the call token for their whole length (cli_lock), so
 * the client's scratch (work-request lists, record buffers, words) stays
 * theirs while they sleep; read-set waits take the mutex alone and can run
 * while a call sleeps.
 *
 * One timeout policy: at the deadline the waiter's own work is marked
 * timed out (expire), the connections involved fail and are closed, which
 * flushes every request still posted to them, so no completion outlives
 * the caller's state; one message names what timed out. Not here: what a
 * completion means (ps_client_progress.c and the owners' handlers). */
#include <sched.h>
#include <stdio.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

/* Longest sleep of one round: bounds how long a drain or a timeout waits
 * for the sleeper to come back when nothing arrives. */
#define WAIT_SLICE_MS 10
#define REAP_BATCH    64

void cli_lock(rf_ps_client *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->call_busy)
        pthread_cond_wait(&c->call_cv, &c->mu);
    c->call_busy = true;
}

void cli_unlock(rf_ps_client *c)
{
    c->call_busy = false;
    pthread_cond_signal(&c->call_cv);
    pthread_mutex_unlock(&c->mu);
}

static rf_status cq_failed(int n)
{
    return rf_error_prefix((rf_status)n, "ps client: completion queue");
}

/* Handles every completion queued now, without blocking (none while
 * another waiter sleeps on the queue). */
static rf_status reap(rf_ps_client *c)
{
    rf_completion comps[REAP_BATCH];
    while (!c->cq_sleeper) {
        int n = rf_cq_poll(c->cq, comps, REAP_BATCH);
        if (n < 0)
            return cq_failed(n);
        if (n > 0)
            cli_dispatch(c, comps, n);
        if (n < REAP_BATCH)
            break;
    }
    return RF_OK;
}

/* Until no waiter sleeps on the queue (caller holds mu, or is alone). */
static void sleeper_back(rf_ps_client *c)
{
    while (c->cq_sleeper) {
        c->cv_sleepers++;
        pthread_cond_wait(&c->progress_cv, &c->mu);
        c->cv_sleepers--;
    }
}

void cli_drain(rf_ps_client *c)
{
    sleeper_back(c);
    (void)reap(c);
}

/* One sleep of up to ms without mu (see the top of the file). */
static rf_status sleep_round(rf_ps_client *c, int ms)
{
    if (ms <= 0) { /* a backoff shorter than a millisecond */
        pthread_mutex_unlock(&c->mu);
        sched_yield();
        pthread_mutex_lock(&c->mu);
        return RF_OK;
    }
    if (c->cq_sleeper) {
        c->cv_sleepers++;
        (void)rf_cond_wait_ms(&c->progress_cv, &c->mu, ms);
        c->cv_sleepers--;
        return RF_OK;
    }
    rf_completion comps[REAP_BATCH];
    c->cq_sleeper = true;
    pthread_mutex_unlock(&c->mu);
    int n = rf_cq_wait(c->cq, comps, REAP_BATCH, ms);
    pthread_mutex_lock(&c->mu);
    c->cq_sleeper = false;
    if (n > 0)
        cli_dispatch(c, comps, n);
    /* Another waiter may take over the queue; a drain may wait for it. */
    pthread_cond_broadcast(&c->progress_cv);
    if (n < 0 && n != RF_ERR_TIMEOUT)
        return cq_failed(n);
    return RF_OK;
}

/* A connection that went down (the ps dropped it, or died) will not
 * acknowledge: its pushes fail now, not at a timeout. */
static void close_unacked(rf_ps_client *c)
{
    for (size_t i = 0; i < c->num_ps; i++) {
        ps_cli_conn *p = &c->conns[i];
        if (!cli_conn_usable(p) && p->ep && p->pushes_inflight)
            cli_conn_close(p);
    }
}

static bool involved(const cli_wait_for *w, const ps_cli_conn *p)
{
    if (!p->ep)
        return false;
    return w->conn ? p == w->conn : p->sq_used || p->pushes_inflight;
}

/* The timeout policy (see the top of the file). */
static rf_status time_out(rf_ps_client *c, const cli_wait_for *w)
{
    if (w->expire)
        w->expire(c, w->arg);
    for (size_t i = 0; i < c->num_ps; i++) {
        ps_cli_conn *p = &c->conns[i];
        if (involved(w, p)) {
            cli_conn_fail(p, "%s: no completion within %d ms", w->what,
                          w->limit_ms);
            cli_conn_close(p);
        }
    }
    /* What the sleeper holds may be this waiter's: handle it first. */
    cli_drain(c);
    return rf_error_set(RF_ERR_TIMEOUT,
                        "%s: no completion within %d ms; the connections "
                        "involved were closed",
                        w->what, w->limit_ms);
}

rf_status cli_wait(rf_ps_client *c, const cli_wait_for *w)
{
    for (;;) {
        rf_status st = reap(c);
        if (st != RF_OK)
            return st;
        close_unacked(c);
        if (w->done(c, w->arg))
            return RF_OK;
        long long now = rf_now_ms();
        if (now >= w->deadline_ms)
            return time_out(c, w);
        long long ms = w->deadline_ms - now;
        if (ms > WAIT_SLICE_MS)
            ms = WAIT_SLICE_MS;
        if (w->wake_us) {
            long long until = (w->wake_us - (long long)rf_now_us()) / 1000;
            if (until < ms)
                ms = until < 0 ? 0 : until;
        }
        if ((st = sleep_round(c, (int)ms)) != RF_OK)
            return st;
    }
}

rf_status cli_wait_op(rf_ps_client *c,
                      bool (*done)(rf_ps_client *, const void *),
                      const void *arg, const char *what)
{
    int limit = c->opt.op_timeout_ms;
    cli_wait_for w = {.done = done,
                      .arg = arg,
                      .deadline_ms = rf_now_ms() + limit,
                      .limit_ms = limit,
                      .what = what};
    return cli_wait(c, &w);
}

static bool time_reached(rf_ps_client *c, const void *until_us)
{
    (void)c;
    return (long long)rf_now_us() >= *(const long long *)until_us;
}

rf_status cli_pause_us(rf_ps_client *c, uint32_t us, const char *what)
{
    long long until = (long long)rf_now_us() + us;
    /* The deadline is never reached first: the pause cannot time out. */
    cli_wait_for w = {.done = time_reached,
                      .arg = &until,
                      .deadline_ms = rf_now_ms() + us / 1000 + 1000,
                      .limit_ms = (int)(us / 1000) + 1000,
                      .wake_us = until,
                      .what = what};
    return cli_wait(c, &w);
}
