/* session/hook_prometheus.c: PrometheusHook (rdmaflow/monitored_session.h),
 * a worker's feed of Prometheus metrics (rdmaflow/prometheus.h): after every
 * run it stores global_step, this task's steps and examples, their rates,
 * the step's time (a summary's observation), the bytes moved to and from
 * each ps task (the session's rf_session_ps_bytes_get, whose deltas it
 * takes, starting again at each recovery's new session) and the
 * recoveries, all as atomic stores on the training thread: a scrape never
 * makes a step wait. */
#include <stdio.h>
#include <stdlib.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/prometheus.h"
#include "session/monitored_internal.h"

#define RATE_INTERVAL_S 1.0 /* the rates' interval, at least */
#define PS_LABEL_MAX    48

typedef struct prom_hook {
    rf_prom_registry *r;
    int64_t examples_per_step;
    rf_prom_metric *global_step, *steps, *examples, *steps_rate, *examples_rate,
        *global_step_rate, *step_time, *recoveries;
    /* per ps task, added at the first session's creation */
    bool ps_added;
    size_t nps;
    rf_prom_metric **ps_read, **ps_pushed;
    rf_session_ps_bytes *seen; /* the current session's, at its last run */
    rf_session_ps_bytes *now;  /* scratch */
    double t_run;              /* when the current run started */
    /* the rates: counts at the start of their interval */
    double t_mark;
    int64_t steps_total, steps_mark, gs_mark;
} prom_hook;

static rf_status add(prom_hook *h, rf_prom_type t, const char *name,
                     const char *help, rf_prom_metric **m)
{
    return rf_prom_metric_add(h->r, t, name, help, NULL, NULL, m);
}

static rf_status prom_begin(void *ctx, rf_monitored_session *ms)
{
    (void)ms;
    prom_hook *h = ctx;
    rf_status st = add(h, RF_PROM_GAUGE, "rdmaflow_global_step",
                       "The cluster's global_step as this worker last saw it.",
                       &h->global_step);
    if (st == RF_OK)
        st = add(h, RF_PROM_COUNTER, "rdmaflow_worker_steps_total",
                 "Training steps this worker ran.", &h->steps);
    if (st == RF_OK)
        st = add(h, RF_PROM_COUNTER, "rdmaflow_worker_examples_total",
                 "Examples this worker trained on (steps times its batch).",
                 &h->examples);
    if (st == RF_OK)
        st = add(h, RF_PROM_GAUGE, "rdmaflow_worker_steps_per_second",
                 "This worker's training steps per second (over about 1 s).",
                 &h->steps_rate);
    if (st == RF_OK)
        st = add(h, RF_PROM_GAUGE, "rdmaflow_worker_examples_per_second",
                 "This worker's examples per second (over about 1 s).",
                 &h->examples_rate);
    if (st == RF_OK)
        st = add(h, RF_PROM_GAUGE, "rdmaflow_global_step_per_second",
                 "The cluster's global_step/sec as this worker saw it "
                 "(over about 1 s).",
                 &h->global_step_rate);
    if (st == RF_OK)
        st = add(h, RF_PROM_SUMMARY, "rdmaflow_worker_step_seconds",
                 "Time of this worker's training steps; quantiles over its "
                 "last 1024 steps.",
                 &h->step_time);
    if (st == RF_OK)
        st = add(h, RF_PROM_COUNTER, "rdmaflow_worker_recoveries_total",
                 "Sessions this worker created again after losing a ps task.",
                 &h->recoveries);
    return st;
}

/* The per-ps metrics, once the number of ps tasks is known. */
static rf_status add_ps_metrics(prom_hook *h, size_t nps)
{
    h->ps_added = true;
    if (!nps)
        return RF_OK;
    h->ps_read = calloc(nps, sizeof *h->ps_read);
    h->ps_pushed = calloc(nps, sizeof *h->ps_pushed);
    h->seen = calloc(nps, sizeof *h->seen);
    h->now = calloc(nps, sizeof *h->now);
    if (!h->ps_read || !h->ps_pushed || !h->seen || !h->now)
        return rf_error_set(RF_ERR_NO_MEMORY, "prometheus: out of memory");
    h->nps = nps;
    for (size_t i = 0; i < nps; i++) {
        char ps[PS_LABEL_MAX];
        snprintf(ps, sizeof ps, "/job:ps/task:%zu", i);
        rf_status st = rf_prom_metric_add(
            h->r, RF_PROM_COUNTER, "rdmaflow_worker_bytes_read_total",
            "Bytes this worker read from a ps task (variables, table rows).",
            "ps", ps, &h->ps_read[i]);
        if (st == RF_OK)
            st = rf_prom_metric_add(
                h->r, RF_PROM_COUNTER, "rdmaflow_worker_bytes_pushed_total",
                "Bytes of this worker's pushes to a ps task (gradients, acks, "
                "global_step).",
                "ps", ps, &h->ps_pushed[i]);
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

static rf_status prom_after_create(void *ctx, rf_monitored_session *ms,
                                   int64_t global_step)
{
    prom_hook *h = ctx;
    rf_session *s = rf_monitored_session_session(ms);
    size_t nps = rf_session_ps_bytes_get(s, NULL, 0);
    if (!h->ps_added) {
        rf_status st = add_ps_metrics(h, nps);
        if (st != RF_OK)
            return st;
        h->t_mark = rf_now_s();
        h->gs_mark = global_step;
    }
    rf_session_ps_bytes_get(s, h->seen, h->nps); /* a new session's */
    rf_prom_set(h->global_step, (double)global_step);
    rf_prom_set(h->recoveries, (double)rf_monitored_session_recoveries(ms));
    return RF_OK;
}

static size_t prom_before_run(void *ctx, rf_monitored_session *ms,
                              rf_node **fetch, size_t max)
{
    (void)ms;
    (void)fetch;
    (void)max;
    prom_hook *h = ctx;
    h->t_run = rf_now_s();
    return 0;
}

static void count_bytes(prom_hook *h, rf_session *s)
{
    rf_session_ps_bytes_get(s, h->now, h->nps);
    for (size_t i = 0; i < h->nps; i++) {
        const rf_session_ps_bytes *now = &h->now[i], *seen = &h->seen[i];
        rf_prom_add(h->ps_read[i],
                    (double)(now->bytes_read - seen->bytes_read));
        rf_prom_add(h->ps_pushed[i],
                    (double)(now->bytes_pushed - seen->bytes_pushed));
        h->seen[i] = *now;
    }
}

static rf_status prom_after_run(void *ctx, rf_monitored_session *ms,
                                const rf_run_values *v)
{
    prom_hook *h = ctx;
    double now = rf_now_s();
    rf_prom_set(h->global_step, (double)v->global_step);
    count_bytes(h, rf_monitored_session_session(ms));
    if (!v->train)
        return RF_OK;
    rf_prom_observe(h->step_time, now - h->t_run);
    h->steps_total++;
    rf_prom_add(h->steps, 1);
    rf_prom_add(h->examples, (double)h->examples_per_step);
    double dt = now - h->t_mark;
    if (dt >= RATE_INTERVAL_S) {
        double steps = (double)(h->steps_total - h->steps_mark);
        rf_prom_set(h->steps_rate, steps / dt);
        rf_prom_set(h->examples_rate,
                    steps * (double)h->examples_per_step / dt);
        rf_prom_set(h->global_step_rate,
                    (double)(v->global_step - h->gs_mark) / dt);
        h->t_mark = now;
        h->steps_mark = h->steps_total;
        h->gs_mark = v->global_step;
    }
    return RF_OK;
}

static void prom_destroy(void *ctx)
{
    prom_hook *h = ctx;
    free(h->ps_read);
    free(h->ps_pushed);
    free(h->seen);
    free(h->now);
    free(h);
}

static const rf_hook_ops prom_ops = {
    .name = "PrometheusHook",
    .begin = prom_begin,
    .after_create_session = prom_after_create,
    .before_run = prom_before_run,
    .after_run = prom_after_run,
    .destroy = prom_destroy,
};

rf_status rf_prometheus_hook_create(rf_prom_registry *r,
                                    int64_t examples_per_step,
                                    rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_prometheus_hook_create: out NULL");
    *out_hook = NULL;
    if (!r || examples_per_step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "PrometheusHook: a registry and examples per "
                            "step >= 0 are required");
    prom_hook *h = calloc(1, sizeof *h);
    if (h) {
        h->r = r;
        h->examples_per_step = examples_per_step;
    }
    return ms_hook_of(&prom_ops, h, out_hook);
}
