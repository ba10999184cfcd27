/* tools/trainer/train.c: the local training loop: one plan fetching the
 * loss and the train op (whose value is global_step after the update), fed
 * with shuffled batches; stops at global_step >= train_steps as
 * StopAtStepHook(last_step) does. */
#include "train.h"

#include "rdmaflow/clock.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

int tr_train(const tr_flags *f, tr_session *s, rf_dataset *train,
             rf_trace *trace, rf_metrics_writer *metrics, FILE *out,
             tr_train_result *res, char *err, size_t errlen)
{
    res->steps = 0;
    res->first_loss = res->final_loss = NAN;
    res->seconds = 0;
    res->global_step = *(const int64_t *)rf_variable_data(s->global_step);
    res->start_global_step = res->global_step;
    if (metrics)
        rf_metrics_writer_start(metrics, res->global_step);
    if (res->global_step >= f->train_steps)
        return 0; /* StopAtStepHook: already at last_step */

    size_t bs = (size_t)f->batch_size;
    float *xb = malloc(bs * s->example_dim * sizeof *xb);
    int32_t *yb = malloc(bs * sizeof *yb);
    rf_plan *plan = NULL;
    tr_progress prog = {0};
    rf_node *fetches[] = {s->loss, s->train_op, s->accuracy};
    size_t nfetch = metrics ? 3 : 2; /* the accuracy for the metrics only */
    rf_node *feeds[] = {s->x, s->y};
    int rc = -1;
    if (!xb || !yb) {
        snprintf(err, errlen, "no memory for a batch of %zu", bs);
        goto out;
    }
    if (rf_plan_create(s->ex, s->g, fetches, nfetch, feeds, 2, NULL, 0,
                       &plan) != RF_OK) {
        snprintf(err, errlen, "creating the training plan: %s",
                 rf_error_message());
        goto out;
    }
    rf_tensor in[2] = {
        rf_tensor_make(RF_F32, RF_SHAPE((int64_t)bs, (int64_t)s->example_dim),
                       xb),
        rf_tensor_make(RF_I32, RF_SHAPE((int64_t)bs), yb),
    };
    if (trace)
        rf_executor_set_trace(s->ex, trace);
    double t0 = rf_now_s();
    prog = (tr_progress){.t_log = t0, .gs_log = res->global_step};
    while (res->global_step < f->train_steps) {
        if (trace && res->steps == f->trace_steps)
            rf_executor_set_trace(s->ex, NULL);
        if (rf_dataset_next_batch(train, bs, xb, yb) != RF_OK) {
            snprintf(err, errlen, "reading a batch: %s", rf_error_message());
            goto out;
        }
        rf_tensor o[3];
        if (rf_plan_run(plan, in, o) != RF_OK) {
            snprintf(err, errlen, "step %" PRId64 ": %s", res->global_step + 1,
                     rf_error_message());
            goto out;
        }
        res->global_step = *(const int64_t *)o[1].data;
        if (tr_progress_step(f, &prog, res, *rf_tensor_f32(&o[0]), out, err,
                             errlen) != 0)
            goto out;
        rf_metrics_step ms = {.global_step = res->global_step,
                              .loss = *rf_tensor_f32(&o[0]),
                              .accuracy = metrics ? *rf_tensor_f32(&o[2]) : 0};
        if (metrics && rf_metrics_writer_step(metrics, &ms) != RF_OK) {
            snprintf(err, errlen, "--metrics_out: %s", rf_error_message());
            goto out;
        }
    }
    res->seconds = rf_now_s() - t0;
    rc = 0;
out:
    tr_progress_finish(&prog, out);
    if (trace)
        rf_executor_set_trace(s->ex, NULL);
    rf_plan_destroy(plan);
    free(xb);
    free(yb);
    return rc;
}

/* "1h02m", "3m07s", "12s" */
static void format_eta(double secs, char *buf, size_t len)
{
    long s = secs < 0 ? 0 : secs > 359999 ? 359999 : (long)(secs + 0.5);
    if (s >= 3600)
        snprintf(buf, len, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else if (s >= 60)
        snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, len, "%lds", s);
}

/* The terminal's one progress line (see tr_progress in train.h). */
static void draw_progress(const tr_flags *f, tr_progress *p,
                          const tr_train_result *res, double loss, bool last,
                          FILE *out)
{
    double now = rf_now_s();
    if (!last && p->drawn && now - p->t_log < TR_PROGRESS_REDRAW_S)
        return;
    double dt = now - p->t_log > 0 ? now - p->t_log : 1e-9;
    double rate =
        (double)(res->steps - p->step_log) * (double)f->batch_size / dt;
    double gs_rate = (double)(res->global_step - p->gs_start) /
                     (now - p->t_start > 0 ? now - p->t_start : 1e-9);
    char eta[32];
    format_eta(
        gs_rate > 0 ? (double)(f->train_steps - res->global_step) / gs_rate : 0,
        eta, sizeof eta);
    fprintf(out,
            "\r\033[Kstep %" PRId64 "/%" PRId64 ", loss %.6f, %.0f "
            "examples/s, ETA %s",
            res->global_step, f->train_steps, loss, rate, eta);
    if (last)
        fputc('\n', out);
    fflush(out);
    p->drawn = !last;
    p->t_log = now;
    p->step_log = res->steps;
    p->gs_log = res->global_step;
}

int tr_progress_step(const tr_flags *f, tr_progress *p, tr_train_result *res,
                     double loss, FILE *out, char *err, size_t errlen)
{
    res->steps++;
    res->final_loss = loss;
    if (res->steps == 1)
        res->first_loss = loss;
    if (!isfinite(loss)) {
        tr_progress_finish(p, out);
        snprintf(err, errlen,
                 "loss is %g at global_step %" PRId64
                 " (diverged; try a smaller --learning_rate)",
                 loss, res->global_step);
        return -1;
    }
    bool last = res->global_step >= f->train_steps;
    if (p->mode == 0) {
        int fd = fileno(out);
        p->mode = fd >= 0 && isatty(fd) ? 2 : 1;
        p->t_start = rf_now_s();
        p->gs_start = res->global_step - 1;
    }
    if (p->mode == 2) {
        if (f->log_every > 0)
            draw_progress(f, p, res, loss, last, out);
        return 0;
    }
    if (f->log_every > 0 &&
        (res->steps == 1 || res->global_step % f->log_every == 0 || last)) {
        double now = rf_now_s();
        double rate = (double)(res->steps - p->step_log) *
                      (double)f->batch_size /
                      (now - p->t_log > 0 ? now - p->t_log : 1e-9);
        fprintf(out, "step %" PRId64 ", loss %.6f, %.0f examples/s",
                res->global_step, loss, rate);
        if (p->cluster) {
            double gs_rate = (double)(res->global_step - p->gs_log) /
                             (now - p->t_log > 0 ? now - p->t_log : 1e-9);
            fprintf(out, ", cluster: %.4g global_step/sec, %.0f examples/s",
                    gs_rate, gs_rate * (double)p->examples_per_global_step);
        }
        fputc('\n', out);
        fflush(out);
        p->t_log = now;
        p->step_log = res->steps;
        p->gs_log = res->global_step;
    }
    return 0;
}

void tr_progress_finish(tr_progress *p, FILE *out)
{
    if (p->drawn) {
        fputc('\n', out);
        fflush(out);
        p->drawn = false;
    }
}
