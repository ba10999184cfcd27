/* tools/trainer/metrics.c: --metrics_out in rf-trainer (metrics.h): the
 * checks before work, opening the library's writer under the task's name,
 * the summary line, and the chief's cluster rates on stdout. */
#include "metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "report.h"

int tr_metrics_check(const tr_flags *f)
{
    if (!f->metrics_out)
        return 0;
    if (rf_metrics_check_output(f->metrics_out) != RF_OK) {
        fprintf(stderr, "rf-trainer: --metrics_out: %s\n", rf_error_message());
        return -1;
    }
    return tr_check_distinct_outputs("--metrics_out", f->metrics_out, "--trace",
                                     f->trace_path) ||
                   tr_check_distinct_outputs("--metrics_out", f->metrics_out,
                                             "--variables_out",
                                             f->variables_out)
               ? -1
               : 0;
}

void tr_metrics_task(const rf_cluster_task *self, char *buf, size_t len)
{
    if (!self)
        snprintf(buf, len, "local");
    else
        snprintf(buf, len, "%s:%d", self->job, self->index);
}

int tr_metrics_open(const tr_flags *f, const char *task,
                    int64_t examples_per_global_step, rf_metrics_writer **out,
                    char *err, size_t errlen)
{
    *out = NULL;
    if (!f->metrics_out)
        return 0;
    rf_metrics_options mo;
    rf_metrics_options_init(&mo);
    mo.path = f->metrics_out;
    mo.task = task;
    mo.every_n_steps = f->metrics_every_steps;
    mo.examples_per_step = f->batch_size;
    mo.examples_per_global_step = examples_per_global_step;
    if (rf_metrics_writer_open(&mo, out) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    return 0;
}

int tr_metrics_finish(rf_metrics_writer *w, double test_accuracy,
                      const rf_metrics_eval *eval, char *err, size_t errlen)
{
    if (w && rf_metrics_writer_summary_eval(w, test_accuracy, eval) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    return 0;
}

void tr_print_cluster_rate(const tr_train_result *tr,
                           int64_t examples_per_global_step)
{
    if (tr->steps <= 0 || tr->seconds <= 0)
        return;
    double rate =
        (double)(tr->global_step - tr->start_global_step) / tr->seconds;
    printf("cluster: global_step %" PRId64 " -> %" PRId64
           " in %.2f s, %.4g global_step/sec, %.0f examples/s\n",
           tr->start_global_step, tr->global_step, tr->seconds, rate,
           rate * (double)examples_per_global_step);
    fflush(stdout);
}
