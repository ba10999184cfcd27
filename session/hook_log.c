/* session/hook_log.c: the monitored session's logging hooks
 * (rdmaflow/monitored_session.h): LoggingTensorHook (named values every N runs
 * of this task) and StepCounterHook (the cluster's global_step/sec and
 * examples/sec every N global steps). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "session/monitored_internal.h"

/* ---- LoggingTensorHook -------------------------------------------------- */

#define LOG_SHOW_VALUES 4 /* of a non-scalar */

typedef struct logging {
    rf_node *nodes[RF_HOOK_MAX_FETCHES];
    size_t n;
    int64_t every, iter;
    double t_last;
    FILE *out;
} logging;

static bool logging_due(const logging *h)
{
    return h->iter % h->every == 0;
}

static size_t logging_before_run(void *ctx, rf_monitored_session *ms,
                                 rf_node **fetch, size_t max)
{
    (void)ms;
    const logging *h = ctx;
    if (!logging_due(h))
        return 0; /* fetched only when it will print */
    size_t n = h->n < max ? h->n : max;
    memcpy(fetch, h->nodes, n * sizeof *fetch);
    return n;
}

static void print_value(FILE *out, const rf_tensor *t)
{
    int64_t count = 1;
    for (int d = 0; d < t->shape.rank; d++)
        count *= t->shape.dims[d];
    if (!t->data) {
        fputs("?", out);
        return;
    }
    if (t->shape.rank > 0)
        fputc('[', out);
    for (int64_t i = 0; i < count && i < LOG_SHOW_VALUES; i++) {
        if (i)
            fputs(" ", out);
        if (t->dtype == RF_F32)
            fprintf(out, "%.6g", (double)((const float *)t->data)[i]);
        else if (t->dtype == RF_I64)
            fprintf(out, "%lld", (long long)((const int64_t *)t->data)[i]);
        else if (t->dtype == RF_I32)
            fprintf(out, "%d", ((const int32_t *)t->data)[i]);
        else
            fputs("?", out);
    }
    if (t->shape.rank > 0)
        fprintf(out, "%s]", count > LOG_SHOW_VALUES ? " ..." : "");
}

static rf_status logging_after_run(void *ctx, rf_monitored_session *ms,
                                   const rf_run_values *v)
{
    (void)ms;
    logging *h = ctx;
    bool due = logging_due(h);
    h->iter++;
    if (!due)
        return RF_OK;
    double now = rf_now_s();
    for (size_t i = 0; i < v->num_results && i < h->n; i++) {
        fprintf(h->out, "%s%s = ", i ? ", " : "", rf_node_name(h->nodes[i]));
        print_value(h->out, &v->results[i]);
    }
    fprintf(h->out, "%sglobal_step = %lld", v->num_results ? ", " : "",
            (long long)v->global_step);
    if (h->t_last > 0)
        fprintf(h->out, " (%.3f sec)", now - h->t_last);
    fputc('\n', h->out);
    fflush(h->out);
    h->t_last = now;
    return RF_OK;
}

static const rf_hook_ops logging_ops = {
    .name = "LoggingTensorHook",
    .before_run = logging_before_run,
    .after_run = logging_after_run,
    .destroy = free,
};

rf_status rf_logging_hook_create(rf_node *const *nodes, size_t num_nodes,
                                 int64_t every_n_iter, FILE *out,
                                 rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_logging_hook_create: out NULL");
    *out_hook = NULL;
    if (every_n_iter <= 0 || num_nodes > RF_HOOK_MAX_FETCHES ||
        (num_nodes && !nodes))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "LoggingTensorHook: every_n_iter %lld must be > 0 "
                            "and at most %d nodes (%zu given)",
                            (long long)every_n_iter, RF_HOOK_MAX_FETCHES,
                            num_nodes);
    for (size_t i = 0; i < num_nodes; i++)
        if (!nodes[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "LoggingTensorHook: node %zu is NULL", i);
    logging *h = calloc(1, sizeof *h);
    if (h) {
        memcpy(h->nodes, nodes, num_nodes * sizeof *nodes);
        h->n = num_nodes;
        h->every = every_n_iter;
        h->out = out ? out : stdout;
    }
    return ms_hook_of(&logging_ops, h, out_hook);
}

/* ---- StepCounterHook ---------------------------------------------------- */

typedef struct step_counter {
    int64_t every, examples_per_step;
    int64_t last_step; /* global_step at the last line (or the start) */
    double t_last;
    FILE *out;
    rf_summary_writer *w; /* the session's, or NULL */
    bool failing;         /* its last write failed (logged once) */
} step_counter;

static rf_status counter_after_create(void *ctx, rf_monitored_session *ms,
                                      int64_t global_step)
{
    (void)ms;
    step_counter *h = ctx;
    h->last_step = global_step; /* a recovery starts a new interval */
    h->t_last = rf_now_s();
    return RF_OK;
}

static rf_status counter_after_run(void *ctx, rf_monitored_session *ms,
                                   const rf_run_values *v)
{
    step_counter *h = ctx;
    int64_t steps = v->global_step - h->last_step;
    if (!v->train || steps < h->every)
        return RF_OK;
    double now = rf_now_s(), dt = now - h->t_last;
    if (dt > 0) {
        double rate = (double)steps / dt;
        fprintf(h->out, "global_step/sec: %.4g", rate);
        if (h->examples_per_step > 0)
            fprintf(h->out, ", examples/sec: %.4g",
                    rate * (double)h->examples_per_step);
        fprintf(h->out, " (global_step %lld)\n", (long long)v->global_step);
        fflush(h->out);
        /* TensorFlow's tags: the global step's name + "/sec", and
         * "examples/sec" (its ExamplesPerSecondHook's) */
        static const char *const tags[] = {"global_step/sec", "examples/sec"};
        const float values[] = {(float)rate,
                                (float)(rate * (double)h->examples_per_step)};
        if (h->w)
            ms_summary_outcome(
                ms, &h->failing,
                rf_summary_writer_scalars(h->w, v->global_step,
                                          h->examples_per_step > 0 ? 2 : 1,
                                          tags, values),
                v->global_step);
    }
    h->last_step = v->global_step;
    h->t_last = now;
    return RF_OK;
}

static const rf_hook_ops step_counter_ops = {
    .name = "StepCounterHook",
    .after_create_session = counter_after_create,
    .after_run = counter_after_run,
    .destroy = free,
};

rf_status rf_step_counter_hook_create(int64_t every_n_steps,
                                      int64_t examples_per_step, FILE *out,
                                      rf_summary_writer *w, rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_step_counter_hook_create: out NULL");
    *out_hook = NULL;
    if (every_n_steps <= 0 || examples_per_step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "StepCounterHook: every_n_steps %lld must be > 0 "
                            "and examples_per_step %lld >= 0",
                            (long long)every_n_steps,
                            (long long)examples_per_step);
    step_counter *h = calloc(1, sizeof *h);
    if (h) {
        h->every = every_n_steps;
        h->examples_per_step = examples_per_step;
        h->out = out ? out : stdout;
        h->w = w;
    }
    return ms_hook_of(&step_counter_ops, h, out_hook);
}
