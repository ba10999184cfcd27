/* session/hook_metrics.c: MetricsHook (rdmaflow/monitored_session.h), the
 * monitored session's feed of a metrics file (metrics.c): every training run's
 * global_step, loss, accuracy and bytes (the session's counters, whose
 * deltas it takes, starting again at each recovery's new session). The
 * writer decides which runs get a line; the summary is the caller's. */
#include <math.h>
#include <stdlib.h>

#include "session/monitored_internal.h"

typedef struct metrics_hook {
    rf_metrics_writer *w;
    rf_node *fetch[2];   /* loss, accuracy (either may be absent) */
    int loss_at, acc_at; /* index in the results, or -1 */
    size_t n;
    bool started;
    rf_session_counters seen; /* of the current session */
} metrics_hook;

static rf_status metrics_after_create(void *ctx, rf_monitored_session *ms,
                                      int64_t global_step)
{
    metrics_hook *h = ctx;
    rf_session_counters_get(rf_monitored_session_session(ms), &h->seen);
    if (!h->started) /* training starts with the first session */
        rf_metrics_writer_start(h->w, global_step);
    h->started = true;
    return RF_OK;
}

static size_t metrics_before_run(void *ctx, rf_monitored_session *ms,
                                 rf_node **fetch, size_t max)
{
    (void)ms;
    const metrics_hook *h = ctx;
    size_t n = h->n < max ? h->n : max;
    for (size_t i = 0; i < n; i++)
        fetch[i] = h->fetch[i];
    return n;
}

static double scalar(const rf_run_values *v, int at)
{
    if (at < 0 || (size_t)at >= v->num_results || !v->results[at].data ||
        v->results[at].dtype != RF_F32)
        return NAN;
    return (double)*(const float *)v->results[at].data;
}

static rf_status metrics_after_run(void *ctx, rf_monitored_session *ms,
                                   const rf_run_values *v)
{
    metrics_hook *h = ctx;
    rf_session_counters now;
    rf_session_counters_get(rf_monitored_session_session(ms), &now);
    rf_metrics_step step = {
        .global_step = v->global_step,
        .loss = scalar(v, h->loss_at),
        .accuracy = scalar(v, h->acc_at),
        .bytes_read = now.bytes_read - h->seen.bytes_read,
        .bytes_pushed = now.bytes_pushed - h->seen.bytes_pushed,
        .ssp = ms->opt.session.staleness >= 0,
        .ssp_lead = now.ssp_lead,
    };
    h->seen = now;
    if (!v->train)
        return RF_OK;
    return rf_metrics_writer_step(h->w, &step);
}

static const rf_hook_ops metrics_ops = {
    .name = "MetricsHook",
    .after_create_session = metrics_after_create,
    .before_run = metrics_before_run,
    .after_run = metrics_after_run,
    .destroy = free,
};

rf_status rf_metrics_hook_create(rf_metrics_writer *w, rf_node *loss,
                                 rf_node *accuracy, rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_metrics_hook_create: out NULL");
    *out_hook = NULL;
    if (!w)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "MetricsHook: no metrics writer");
    metrics_hook *h = calloc(1, sizeof *h);
    if (h) {
        h->w = w;
        h->loss_at = h->acc_at = -1;
        if (loss) {
            h->loss_at = (int)h->n;
            h->fetch[h->n++] = loss;
        }
        if (accuracy) {
            h->acc_at = (int)h->n;
            h->fetch[h->n++] = accuracy;
        }
    }
    return ms_hook_of(&metrics_ops, h, out_hook);
}
