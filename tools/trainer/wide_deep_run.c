/* tools/trainer/wide_deep_run.c: the local run of --model=wide_deep:
 * training on shard 0 of 1 of the click-through training split (step s
 * takes rf_ctr_batch's batch s; --trace: the executor's ops of the first
 * --trace_steps steps, as the other models' local run), then AUC and log
 * loss on the first --eval_examples test examples beside the hidden
 * model's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "export.h"
#include "metrics.h"
#include "rdmaflow/clock.h"
#include "report.h"
#include "wide_deep.h"

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    return 1;
}

static void print_config(const tr_flags *f, const tr_wd_session *s, int parts)
{
    char spec[1024];
    rf_ctr_spec_format(&f->ctr_spec, spec, sizeof spec);
    printf("model: wide_deep (wide: %u categorical columns of dim 1 + %u "
           "dense; deep: embeddings of dim %" PRId64 " + dense, relu",
           s->num_cat, s->num_dense, f->embedding_dim);
    for (int i = 0; i < f->hidden.nwidths; i++)
        printf("%s%d", i ? "," : " ", f->hidden.widths[i]);
    printf("), %zu parameters\n", tr_model_num_params(s->base.g));
    printf("columns:");
    for (uint32_t c = 0; c < s->num_cat; c++)
        printf(" C%u %s %" PRId64 "%s", c + 1,
               s->hashed[c] ? "hash" : "identity", s->buckets[c],
               c + 1 < s->num_cat ? "," : "\n");
    if (f->optimizer_given)
        printf("optimizer: %s (learning rate %g), both parts\n",
               rf_optim_kind_name(f->optim.kind),
               (double)f->optim.learning_rate);
    else
        printf("optimizer: wide ftrl (learning rate %g), deep adagrad "
               "(learning rate %g)\n",
               (double)f->optim.learning_rate,
               (double)f->optim_deep.learning_rate);
    printf("data: synthetic click-through %s\n", spec);
    printf("training: %" PRId64 " steps of batch %" PRId64 ", %d compute "
           "threads, embedding tables in %" PRId64 " part%s\n",
           f->train_steps, f->batch_size, rf_executor_threads(s->base.ex),
           (int64_t)parts, parts == 1 ? "" : "s");
    fflush(stdout);
}

static int train(const tr_flags *f, tr_wd_session *s, rf_trace *trace,
                 rf_metrics_writer *metrics, tr_train_result *res, char *err,
                 size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->first_loss = res->final_loss = NAN;
    tr_wd_batch b;
    rf_plan *plan = NULL;
    int rc = -1;
    if (tr_wd_batch_init(s, (size_t)f->batch_size, &b) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    tr_wd_batch_feed(f, s, &b, 0, (size_t)f->batch_size);
    rf_node *fetch[2] = {s->base.loss, s->base.global_step};
    if (rf_plan_create(s->base.ex, s->base.g, fetch, 2, b.feed_nodes, b.nfeeds,
                       &s->base.train_op, 1, &plan) != RF_OK) {
        snprintf(err, errlen, "planning a step: %s", rf_error_message());
        goto out;
    }
    res->global_step = res->start_global_step =
        *(const int64_t *)rf_variable_data(s->base.global_step);
    tr_progress prog = {.t_log = rf_now_s()};
    double t0 = rf_now_s();
    if (trace)
        rf_executor_set_trace(s->base.ex, trace);
    while (res->global_step < f->train_steps) {
        if (trace && res->steps == f->trace_steps)
            rf_executor_set_trace(s->base.ex, NULL);
        if (rf_ctr_batch(&f->ctr_spec, RF_DATA_TRAIN, 0, 1,
                         (uint64_t)res->global_step, (size_t)f->batch_size,
                         b.raw, s->num_dense ? b.dense : NULL, b.labels,
                         NULL) != RF_OK) {
            snprintf(err, errlen, "making a batch: %s", rf_error_message());
            goto out;
        }
        tr_wd_batch_feed(f, s, &b, 0, (size_t)f->batch_size);
        rf_tensor o[2];
        if (rf_plan_run(plan, b.feeds, o) != RF_OK) {
            snprintf(err, errlen, "step %" PRId64 ": %s", res->global_step + 1,
                     rf_error_message());
            goto out;
        }
        res->global_step = *(const int64_t *)o[1].data;
        double loss = *rf_tensor_f32(&o[0]);
        if (tr_progress_step(f, &prog, res, loss, stdout, err, errlen) != 0)
            goto out;
        rf_metrics_step ms = {
            .global_step = res->global_step, .loss = loss, .accuracy = NAN};
        if (metrics && rf_metrics_writer_step(metrics, &ms) != RF_OK) {
            snprintf(err, errlen, "--metrics_out: %s", rf_error_message());
            goto out;
        }
    }
    res->seconds = rf_now_s() - t0;
    rc = 0;
out:
    tr_progress_finish(&prog, stdout);
    if (trace)
        rf_executor_set_trace(s->base.ex, NULL);
    rf_plan_destroy(plan);
    tr_wd_batch_free(&b);
    return rc;
}

/* The model's probabilities on the first eval_examples test examples (one
 * rf_ctr_batch, fed eval_batch_size at a time), their AUC and log loss
 * (eps 1e-7, as rf_ctr_hidden_auc's) and the hidden model's. */
int tr_wd_evaluate(const tr_flags *f, tr_wd_session *s, tr_wd_eval *ev,
                   char *err, size_t errlen)
{
    size_t n = (size_t)f->eval_examples, eb = (size_t)f->eval_batch_size;
    double t0 = rf_now_s();
    tr_wd_batch b;
    rf_plan *plan = NULL;
    float *probs = malloc(sizeof(float) * n);
    int rc = -1;
    if (tr_wd_batch_init(s, n, &b) != 0 || !probs) {
        snprintf(err, errlen, "out of memory");
        free(probs);
        return -1;
    }
    if (rf_ctr_batch(&f->ctr_spec, RF_DATA_TEST, 0, 1, 0, n, b.raw,
                     s->num_dense ? b.dense : NULL, b.labels, NULL) != RF_OK) {
        snprintf(err, errlen, "making the test examples: %s",
                 rf_error_message());
        goto out;
    }
    tr_wd_batch_feed(f, s, &b, 0, eb < n ? eb : n);
    /* every feed but the labels */
    if (rf_plan_create(s->base.ex, s->base.g, &s->prob, 1, b.feed_nodes,
                       b.nfeeds - 1, NULL, 0, &plan) != RF_OK) {
        snprintf(err, errlen, "planning the evaluation: %s",
                 rf_error_message());
        goto out;
    }
    for (size_t first = 0; first < n; first += eb) {
        size_t m = n - first < eb ? n - first : eb;
        tr_wd_batch_feed(f, s, &b, first, m);
        rf_tensor o;
        if (rf_plan_run(plan, b.feeds, &o) != RF_OK) {
            snprintf(err, errlen, "%s", rf_error_message());
            goto out;
        }
        memcpy(probs + first, o.data, sizeof(float) * m);
    }
    if (rf_auc(probs, b.labels, n, &ev->auc) != RF_OK ||
        rf_log_loss(probs, b.labels, n, 1e-7, &ev->log_loss) != RF_OK ||
        rf_ctr_hidden_auc(&f->ctr_spec, RF_DATA_TEST, n, &ev->hidden_auc,
                          &ev->hidden_log_loss) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        goto out;
    }
    ev->seconds = rf_now_s() - t0;
    printf("test AUC %.4f (hidden model %.4f), log loss %.4f (hidden %.4f) "
           "on %" PRId64 " examples in %.2f s\n",
           ev->auc, ev->hidden_auc, ev->log_loss, ev->hidden_log_loss,
           f->eval_examples, ev->seconds);
    fflush(stdout);
    rc = 0;
out:
    rf_plan_destroy(plan);
    tr_wd_batch_free(&b);
    free(probs);
    return rc;
}

int tr_wd_finish(const tr_flags *f, tr_wd_session *s,
                 rf_metrics_writer *metrics, const char **what, char *err,
                 size_t errlen)
{
    tr_wd_eval ev;
    *what = "evaluation";
    if (tr_wd_evaluate(f, s, &ev, err, errlen) != 0)
        return -1;
    rf_metrics_eval me = {.auc = ev.auc,
                          .log_loss = ev.log_loss,
                          .hidden_auc = ev.hidden_auc,
                          .hidden_log_loss = ev.hidden_log_loss};
    *what = "--metrics_out";
    if (tr_metrics_finish(metrics, NAN, &me, err, errlen) != 0)
        return -1;
    *what = "--variables_out";
    if (f->variables_out &&
        tr_export_variables(s->base.g, f->variables_out, err, errlen) != 0)
        return -1;
    return 0;
}

int tr_wd_run_local(const tr_flags *f, FILE *explain)
{
    char err[1024];
    tr_wd_session s;
    rf_metrics_writer *metrics = NULL;
    rf_trace *trace = NULL;
    int rc = 1;
    int parts = tr_wd_partitions(f, 1);
    if (tr_wd_session_create(f, NULL, parts, &s, err, sizeof err) != 0)
        return fail("setup", err);
    if (!f->explain_only)
        print_config(f, &s, parts);
    if (f->explain != TR_EXPLAIN_NONE &&
        tr_explain_local(f, &s.base, explain, err, sizeof err) != 0) {
        rc = fail("--explain", err);
        goto out;
    }
    if (f->explain_only) {
        rc = 0;
        goto out;
    }
    if (tr_metrics_open(f, "local", f->batch_size, &metrics, err, sizeof err) !=
        0) {
        rc = fail("--metrics_out", err);
        goto out;
    }
    if (f->trace_path && rf_trace_create(&trace) != RF_OK) {
        rc = fail("--trace", rf_error_message());
        goto out;
    }
    if (trace)
        rf_trace_set_process(trace, 0, "rf-trainer (local)");
    tr_train_result tr;
    if (train(f, &s, trace, metrics, &tr, err, sizeof err) != 0) {
        rc = fail("training", err);
        goto out;
    }
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = fail("--trace", err);
        goto out;
    }
    tr_print_training(f, &tr, 0);
    const char *what;
    if (tr_wd_finish(f, &s, metrics, &what, err, sizeof err) != 0) {
        rc = fail(what, err);
        goto out;
    }
    rc = 0;
out:
    fflush(stdout);
    rf_metrics_writer_close(metrics);
    rf_trace_destroy(trace);
    tr_wd_session_destroy(&s);
    return rc;
}
