/* session/session_ssp.c: stale synchronous parallel (rf_session_options
 * .staleness, as Petuum/Bosen's SSP): every training worker's clock is an
 * int64 word on ps task 0 (rf_ps_clock_advance, rf_ps_clocks_read), the
 * number of training steps it completed in this job. Before a training
 * step a worker whose clock is more than staleness ahead of the slowest
 * training worker's re-READs the words with a bounded backoff until it is
 * not (or staleness_wait_ms passed); after the step it adds 1 to its own
 * word. One-sided operations only: no ps thread is involved. A worker
 * that finished adds SSP_DONE to its word so it is never the slowest.
 * Not here: the step loop (session.c) and the step description
 * (session_plan.c) call these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "session/session_internal.h"

/* What a finished worker adds to its clock word: larger than any clock a
 * job reaches, so the word is never the minimum while someone trains; the
 * clock is the word modulo it. */
#define SSP_DONE        (INT64_C(1) << 62)
#define DEFAULT_WAIT_MS 600000
/* The wait's poll: back to back for SPIN_NS, then sleeps of 1 ms doubling
 * to MAX_SLEEP_MS. */
#define SPIN_NS      1000000ull
#define MAX_SLEEP_MS 16

rf_status sess_ssp_check(const rf_session_options *o)
{
    if (o->staleness < -1)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: staleness %d; want -1 (off) "
                            "or a bound >= 0",
                            o->staleness);
    if (o->staleness_wait_ms < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: staleness_wait_ms %d; want "
                            ">= 0 (0: %d ms)",
                            o->staleness_wait_ms, DEFAULT_WAIT_MS);
    if (o->staleness >= 0 && o->sync_replicas)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: staleness %d (stale "
                            "synchronous parallel) is for async training; "
                            "sync_replicas already keeps the workers in "
                            "step: use one or the other",
                            o->staleness);
    return RF_OK;
}

bool sess_ssp_on(const rf_session *s)
{
    return s->opt.staleness >= 0;
}

rf_status sess_ssp_start(rf_session *s)
{
    if (!sess_ssp_on(s))
        return RF_OK;
    s->ssp.clocks = calloc((size_t)s->task.num_workers, sizeof *s->ssp.clocks);
    if (!s->ssp.clocks)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    int64_t w = 0;
    rf_status st =
        rf_ps_clocks_read(s->client, (uint32_t)s->task.self->worker_id, 1, &w);
    if (st != RF_OK)
        return rf_error_set(st, "reading this worker's SSP clock: %s",
                            rf_error_message());
    /* a restarted worker continues from its word; one that had finished
     * stays marked */
    s->ssp.done = w >= SSP_DONE;
    s->ssp.clock = s->ssp.done ? w - SSP_DONE : w;
    snprintf(s->ssp.args, sizeof s->ssp.args, "\"bytes\":%zu,\"ps_task\":0",
             8 * (size_t)s->task.num_workers);
    return RF_OK;
}

/* The slowest training worker other than this one (-1: none, a single
 * worker, or every other one finished) and its clock, from the words just
 * read; finished workers (their word marked, or their workers-done bit
 * set in done, which may be NULL) are left out. */
static int slowest(const rf_session *s, const uint64_t *done, int64_t *clock)
{
    int who = -1;
    for (int id = 0; id < s->task.num_workers; id++) {
        if (id == s->task.self->worker_id ||
            (done && rf_ps_worker_is_done(done, (uint32_t)id)))
            continue;
        int64_t c = s->ssp.clocks[id];
        if (c >= SSP_DONE)
            continue;
        if (who < 0 || c < *clock) {
            who = id;
            *clock = c;
        }
    }
    return who;
}

/* Reads the clocks; *lead gets this worker's lead over the slowest other
 * worker (0 when it is the slowest or alone), *who and *min the
 * slowest. */
static rf_status read_lead(rf_session *s, const uint64_t *done, int64_t *lead,
                           int *who, int64_t *min)
{
    rf_status st = rf_ps_clocks_read(s->client, 0, (size_t)s->task.num_workers,
                                     s->ssp.clocks);
    if (st != RF_OK)
        return rf_error_set(st, "reading the SSP clocks: %s",
                            rf_error_message());
    *min = s->ssp.clock;
    *who = slowest(s, done, min);
    *lead = *who < 0 || *min > s->ssp.clock ? 0 : s->ssp.clock - *min;
    return RF_OK;
}

rf_status sess_ssp_wait(rf_session *s, const sess_plan *p)
{
    if (!sess_ssp_on(s))
        return RF_OK;
    int64_t k = s->opt.staleness, lead = 0, min = 0;
    int who = -1;
    uint64_t t0 = rf_now_ns();
    rf_status st = read_lead(s, NULL, &lead, &who, &min);
    if (st != RF_OK)
        return st;
    sess_span(s, p->ops[p->ssp_read_op].name, s->ssp.args, t0, 0);
    if (lead <= k) {
        s->report.counters.ssp_lead = lead;
        return RF_OK;
    }
    /* the slowest may have finished after a ps 0 restart zeroed its word:
     * the workers-done bitmap says so (the chief writes back what it saw) */
    uint64_t done[RF_PS_DONE_WORDS];
    int wait_ms = s->opt.staleness_wait_ms > 0 ? s->opt.staleness_wait_ms
                                               : DEFAULT_WAIT_MS;
    int64_t deadline = rf_deadline_ms(wait_ms);
    int64_t sleep_ms = 1;
    char name[64];
    sess_task_of_id(s, (uint32_t)who, name, sizeof name);
    RF_LOG_DEBUG_LIMITED("session: SSP: clock %lld is %lld ahead of %s's "
                         "(%lld), staleness %lld: waiting",
                         (long long)s->ssp.clock, (long long)lead, name,
                         (long long)min, (long long)k);
    while (lead > k) {
        if (rf_deadline_passed(deadline)) {
            sess_task_of_id(s, (uint32_t)who, name, sizeof name);
            st = rf_error_set(RF_ERR_TIMEOUT,
                              "stale synchronous parallel: waited %d ms for "
                              "the slowest training worker, %s at clock "
                              "%lld; this worker (/job:%s/task:%d) is at "
                              "clock %lld, more than staleness %lld ahead",
                              wait_ms, name, (long long)min, s->task.self->job,
                              s->task.self->index, (long long)s->ssp.clock,
                              (long long)k);
            break;
        }
        if (rf_now_ns() - t0 >= SPIN_NS) {
            rf_sleep_ms(sleep_ms);
            sleep_ms =
                sleep_ms * 2 < MAX_SLEEP_MS ? sleep_ms * 2 : MAX_SLEEP_MS;
        }
        st = rf_ps_workers_done_read(s->client, done);
        if (st == RF_OK)
            st = read_lead(s, done, &lead, &who, &min);
        if (st != RF_OK)
            break;
    }
    uint64_t waited = rf_now_ns() - t0;
    s->report.counters.ssp_waits++;
    s->report.counters.ssp_wait_ns += waited;
    s->report.counters.ssp_lead = lead;
    sess_span(s, "ssp_wait", s->ssp.args, t0, 0);
    return st;
}

rf_status sess_ssp_advance(rf_session *s, const sess_plan *p)
{
    if (!sess_ssp_on(s))
        return RF_OK;
    uint64_t t0 = rf_now_ns();
    int64_t old = 0;
    rf_status st = rf_ps_clock_advance(s->client, 1, &old);
    if (st != RF_OK)
        return rf_error_set(st, "advancing this worker's SSP clock: %s",
                            rf_error_message());
    sess_span(s, p->ops[p->ssp_add_op].name, "\"bytes\":8,\"ps_task\":0", t0,
              0);
    s->ssp.clock = (old >= SSP_DONE ? old - SSP_DONE : old) + 1;
    return RF_OK;
}

rf_status sess_ssp_finish(rf_session *s)
{
    if (!sess_ssp_on(s) || s->ssp.done)
        return RF_OK;
    rf_status st = rf_ps_clock_advance(s->client, SSP_DONE, NULL);
    if (st != RF_OK)
        return rf_error_set(st, "marking this worker's SSP clock finished: %s",
                            rf_error_message());
    s->ssp.done = true;
    return RF_OK;
}

void sess_ssp_free(rf_session *s)
{
    free(s->ssp.clocks);
    s->ssp.clocks = NULL;
}
