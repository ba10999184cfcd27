/* session/hook.c: hooks of the monitored session
 * (rdmaflow/monitored_session.h): the caller's own (rf_hook_create),
 * StopAtStepHook and NanTensorHook. */
#include <math.h>
#include <stdlib.h>

#include "session/monitored_internal.h"

rf_status rf_hook_create(const rf_hook_ops *ops, void *ctx, rf_hook **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_hook_create: out NULL");
    *out = NULL;
    if (!ops || !ops->name)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_hook_create: ops with a name are required");
    rf_hook *h = calloc(1, sizeof *h);
    if (!h)
        return rf_error_set(RF_ERR_NO_MEMORY, "hook: out of memory");
    h->ops = ops;
    h->ctx = ctx;
    *out = h;
    return RF_OK;
}

void rf_hook_destroy(rf_hook *h)
{
    if (!h)
        return;
    if (h->ops->destroy)
        h->ops->destroy(h->ctx);
    free(h);
}

rf_status ms_hook_of(const rf_hook_ops *ops, void *ctx, rf_hook **out)
{
    if (!ctx)
        return rf_error_set(RF_ERR_NO_MEMORY, "hook: out of memory");
    rf_status st = rf_hook_create(ops, ctx, out);
    if (st != RF_OK)
        free(ctx);
    return st;
}

/* ---- StopAtStepHook ----------------------------------------------------- */

typedef struct stop_at_step {
    int64_t num_steps, last_step; /* last_step 0 until computed */
} stop_at_step;

static rf_status stop_after_create(void *ctx, rf_monitored_session *ms,
                                   int64_t global_step)
{
    stop_at_step *h = ctx;
    if (h->last_step == 0) /* once: recoveries do not move it */
        h->last_step = global_step + h->num_steps;
    if (global_step >= h->last_step)
        rf_monitored_session_request_stop(ms);
    return RF_OK;
}

static rf_status stop_after_run(void *ctx, rf_monitored_session *ms,
                                const rf_run_values *v)
{
    const stop_at_step *h = ctx;
    if (v->global_step >= h->last_step)
        rf_monitored_session_request_stop(ms);
    return RF_OK;
}

static const rf_hook_ops stop_at_step_ops = {
    .name = "StopAtStepHook",
    .after_create_session = stop_after_create,
    .after_run = stop_after_run,
    .destroy = free,
};

rf_status rf_stop_at_step_hook_create(int64_t num_steps, int64_t last_step,
                                      rf_hook **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_stop_at_step_hook_create: out NULL");
    *out = NULL;
    if ((num_steps > 0) == (last_step > 0) || num_steps < 0 || last_step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "StopAtStepHook: exactly one of num_steps (%lld) "
                            "and last_step (%lld) must be given (> 0)",
                            (long long)num_steps, (long long)last_step);
    stop_at_step *h = calloc(1, sizeof *h);
    if (h) {
        h->num_steps = num_steps;
        h->last_step = last_step;
    }
    return ms_hook_of(&stop_at_step_ops, h, out);
}

/* ---- NanTensorHook ------------------------------------------------------ */

typedef struct nan_tensor {
    rf_node *loss;
} nan_tensor;

static size_t nan_before_run(void *ctx, rf_monitored_session *ms,
                             rf_node **fetch, size_t max)
{
    (void)ms;
    const nan_tensor *h = ctx;
    if (max < 1)
        return 0;
    fetch[0] = h->loss;
    return 1;
}

static rf_status nan_after_run(void *ctx, rf_monitored_session *ms,
                               const rf_run_values *v)
{
    (void)ctx;
    if (v->num_results < 1 || v->results[0].dtype != RF_F32 ||
        !v->results[0].data)
        return RF_OK;
    float loss = *(const float *)v->results[0].data;
    if (!isnan(loss))
        return RF_OK;
    rf_monitored_session_request_stop(ms);
    return rf_error_set(RF_ERR_NUMERIC,
                        "NaN loss during training (global_step %lld)",
                        (long long)v->global_step);
}

static const rf_hook_ops nan_tensor_ops = {
    .name = "NanTensorHook",
    .before_run = nan_before_run,
    .after_run = nan_after_run,
    .destroy = free,
};

rf_status rf_nan_tensor_hook_create(rf_node *loss, rf_hook **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_nan_tensor_hook_create: out NULL");
    *out = NULL;
    if (!loss || rf_node_dtype(loss) != RF_F32)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "NanTensorHook: the loss must be a float32 node");
    nan_tensor *h = calloc(1, sizeof *h);
    if (h)
        h->loss = loss;
    return ms_hook_of(&nan_tensor_ops, h, out);
}
