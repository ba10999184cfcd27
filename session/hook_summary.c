/* session/hook_summary.c: SummarySaverHook (rdmaflow/monitored_session.h),
 * the chief's: every N global steps or N seconds it fetches the scalar
 * summaries' nodes with the run and writes their values as one Event
 * (rdmaflow/summary.h), the first of a session after a SessionLog START,
 * as TensorFlow's hook does. A summary that cannot be written is named
 * in the log and training goes on: summaries are for looking, and a
 * full disk is no reason to lose a job (the checkpoints say when it
 * is). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/summary.h"
#include "session/monitored_internal.h"

typedef struct summary_saver {
    rf_summary_writer *w; /* the caller's */
    int64_t steps;
    double secs;
    size_t n;
    rf_node *nodes[RF_HOOK_MAX_FETCHES];
    char *tags[RF_HOOK_MAX_FETCHES];
    bool started;      /* SessionLog START written for this process */
    bool failing;      /* the last write failed (logged once) */
    bool due;          /* this run fetches the summaries */
    int64_t last_step; /* global_step of the last Event, -1: none */
    double t_last;
} summary_saver;

void ms_summary_outcome(rf_monitored_session *ms, bool *failing, rf_status st,
                        int64_t step)
{
    if (st != RF_OK && !*failing)
        ms_note(ms,
                "summaries not written from global_step %lld on: %s "
                "(training goes on; a line says when they are written "
                "again)",
                (long long)step, rf_error_message());
    else if (st == RF_OK && *failing)
        ms_note(ms, "summaries written again at global_step %lld",
                (long long)step);
    *failing = st != RF_OK;
}

/* TensorFlow's SecondOrStepTimer: this process's first run, then
 * every `steps` global steps (the next run's step predicted as the last
 * seen + 1), else every `secs` seconds. */
static size_t saver_before_run(void *ctx, rf_monitored_session *ms,
                               rf_node **fetch, size_t max)
{
    summary_saver *h = ctx;
    int64_t next = rf_monitored_session_global_step(ms) + 1;
    h->due =
        h->last_step < 0 || (h->steps > 0 ? next >= h->last_step + h->steps
                                          : rf_now_s() - h->t_last >= h->secs);
    if (!h->due)
        return 0;
    size_t n = h->n < max ? h->n : max;
    memcpy(fetch, h->nodes, n * sizeof *fetch);
    return n;
}

/* A scalar's value as a float: float32, int32 or int64 of one element. */
static bool scalar_value(const rf_tensor *t, float *out)
{
    if (!t->data || rf_shape_numel(&t->shape) != 1)
        return false;
    switch (t->dtype) {
    case RF_F32:
        *out = *(const float *)t->data;
        return true;
    case RF_I32:
        *out = (float)*(const int32_t *)t->data;
        return true;
    case RF_I64:
        *out = (float)*(const int64_t *)t->data;
        return true;
    default:
        return false;
    }
}

static rf_status saver_after_run(void *ctx, rf_monitored_session *ms,
                                 const rf_run_values *v)
{
    summary_saver *h = ctx;
    if (!h->due)
        return RF_OK;
    h->due = false;
    float values[RF_HOOK_MAX_FETCHES];
    for (size_t i = 0; i < h->n; i++)
        if (i >= v->num_results || !scalar_value(&v->results[i], &values[i]))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "SummarySaverHook: summary '%s' is not a "
                                "scalar of float32, int32 or int64",
                                h->tags[i]);
    h->last_step = v->global_step;
    h->t_last = rf_now_s();
    rf_status st = RF_OK;
    if (!h->started)
        st = rf_summary_writer_session_start(h->w, v->global_step);
    h->started = h->started || st == RF_OK;
    if (st == RF_OK)
        st = rf_summary_writer_scalars(h->w, v->global_step, h->n,
                                       (const char *const *)h->tags, values);
    ms_summary_outcome(ms, &h->failing, st, v->global_step);
    return RF_OK;
}

static rf_status saver_end(void *ctx, rf_monitored_session *ms)
{
    summary_saver *h = ctx;
    if (rf_summary_writer_flush(h->w) != RF_OK)
        ms_note(ms, "summaries not flushed: %s", rf_error_message());
    return RF_OK;
}

static void saver_destroy(void *ctx)
{
    summary_saver *h = ctx;
    for (size_t i = 0; i < h->n; i++)
        free(h->tags[i]);
    free(h);
}

static const rf_hook_ops summary_saver_ops = {
    .name = "SummarySaverHook",
    .before_run = saver_before_run,
    .after_run = saver_after_run,
    .end = saver_end,
    .destroy = saver_destroy,
};

rf_status rf_summary_saver_hook_create(rf_summary_writer *w, int64_t save_steps,
                                       double save_secs, rf_node *const *nodes,
                                       const char *const *tags, size_t n,
                                       rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_saver_hook_create: out NULL");
    *out_hook = NULL;
    if (!w)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SummarySaverHook: no summary writer");
    if (save_steps < 0 || !(save_secs >= 0) || isinf(save_secs) ||
        (save_steps == 0 && save_secs == 0))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SummarySaverHook: save_steps %lld or save_secs "
                            "%g must be > 0 (and neither negative)",
                            (long long)save_steps, save_secs);
    if (n == 0 || n > RF_HOOK_MAX_FETCHES || !nodes || !tags)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SummarySaverHook: %zu summaries (1 to %d)", n,
                            RF_HOOK_MAX_FETCHES);
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i] || !tags[i] || !*tags[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "SummarySaverHook: summary %zu has no %s", i,
                                nodes[i] ? "tag" : "node");
        for (size_t j = 0; j < i; j++)
            if (strcmp(tags[i], tags[j]) == 0)
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "SummarySaverHook: tag '%s' given twice",
                                    tags[i]);
    }
    summary_saver *h = calloc(1, sizeof *h);
    if (h) {
        h->w = w;
        h->steps = save_steps;
        h->secs = save_steps > 0 ? 0 : save_secs;
        h->last_step = -1;
        for (size_t i = 0; i < n; i++) {
            h->nodes[i] = nodes[i];
            h->tags[h->n] = strdup(tags[i]);
            if (!h->tags[h->n]) {
                saver_destroy(h);
                h = NULL;
                break;
            }
            h->n++;
        }
    }
    return ms_hook_of(&summary_saver_ops, h, out_hook);
}
