/* rdmaflow/metrics.h: metrics files (--metrics_out), JSON lines of a
 * task's training, written by a program's own loop or, through
 * rf_metrics_hook_create (rdmaflow/monitored_session.h), by a monitored
 * session. */
#ifndef RDMAFLOW_METRICS_H
#define RDMAFLOW_METRICS_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- metrics files (--metrics_out) ------------------------------------ */

/* A metrics file: JSON lines (one JSON object per line, written with
 * json-c), one "step" line per logged step of this task and a "summary"
 * line at the end; the README's "Metrics files" has the schema. Each line
 * is formatted whole and written with one write(2) to a file opened with
 * O_APPEND, so a task killed at any instant leaves only whole lines.
 * Usable without a monitored session (a local training loop calls
 * rf_metrics_writer_step itself); with one, rf_metrics_hook_create feeds
 * it.
 *
 *   if (rf_metrics_check_output(path) != RF_OK) ... // before training
 *   rf_metrics_options mo;
 *   rf_metrics_options_init(&mo);
 *   mo.path = path; mo.task = "worker:1"; mo.examples_per_step = batch;
 *   rf_metrics_writer *w;
 *   rf_metrics_writer_open(&mo, &w);
 *   rf_metrics_writer_start(w, global_step);
 *   ... per step: rf_metrics_writer_step(w, &(rf_metrics_step){...});
 *   rf_metrics_writer_summary(w, test_accuracy);   // NAN: not measured
 *   rf_metrics_writer_close(w); */

typedef struct rf_metrics_writer rf_metrics_writer;

typedef struct rf_metrics_options {
    const char *path; /* required */
    /* the task: "local", "worker:1", "chief:0", "ps:0" (required) */
    const char *task;
    /* a line at this task's first step, every every_n_steps of its steps
     * and its last (written by the summary); default 100 */
    int64_t every_n_steps;
    /* examples in one step of this task (its batch size) */
    int64_t examples_per_step;
    /* examples in one global step of the cluster (sync replicas: every
     * aggregated replica's batch); 0: examples_per_step */
    int64_t examples_per_global_step;
} rf_metrics_options;

RF_API void rf_metrics_options_init(rf_metrics_options *o);

/* Checks, writing nothing, that rf_metrics_writer_open could write path:
 * rf_file_check_output's checks (a directory, device, FIFO or socket, a
 * missing or unwritable directory are refused), and an existing non-empty
 * file must be a metrics file already (its first line a metrics record),
 * which is replaced; anything else is refused and never clobbered. A file
 * another writer has open (a writer holds an exclusive flock(2) on it for
 * its life) is refused too, so two tasks given one path cannot interleave.
 * RF_ERR_INVALID_ARG naming the path and why. */
RF_API rf_status rf_metrics_check_output(const char *path);

/* Checks path as above and creates (truncates) it. */
RF_API rf_status rf_metrics_writer_open(const rf_metrics_options *o,
                                        rf_metrics_writer **out);

/* Training starts now, at this global_step: the origin of elapsed, of the
 * rates and of the summary's counts (open sets it too). */
RF_API void rf_metrics_writer_start(rf_metrics_writer *w, int64_t global_step);

/* One training step of this task. */
typedef struct rf_metrics_step {
    int64_t global_step; /* after the step */
    double loss;         /* NAN: null */
    double accuracy;     /* NAN: not measured (the field is left out) */
    uint64_t bytes_read, bytes_pushed; /* this step's */
    /* stale synchronous parallel: ssp true writes "ssp_lead", this
     * worker's clock minus the slowest training worker's as the step saw
     * it (rf_session_counters.ssp_lead) */
    bool ssp;
    int64_t ssp_lead;
} rf_metrics_step;

/* Counts the step and writes its line if it is due. RF_ERR_IO naming the
 * file and errno on a failed write. */
RF_API rf_status rf_metrics_writer_step(rf_metrics_writer *w,
                                        const rf_metrics_step *step);

/* What the writer counted since start. Rates are over [start, last step]:
 * examples_per_sec this task's, global_step_per_sec the cluster's
 * global_step delta over that time (StepCounterHook's global_step/sec)
 * and cluster_examples_per_sec that times examples_per_global_step. */
typedef struct rf_metrics_totals {
    int64_t steps, examples;
    int64_t start_global_step, global_step;
    double seconds;
    double examples_per_sec, global_step_per_sec, cluster_examples_per_sec;
    double final_loss; /* NAN before a step */
    uint64_t bytes_read, bytes_pushed;
} rf_metrics_totals;
RF_API void rf_metrics_writer_totals(const rf_metrics_writer *w,
                                     rf_metrics_totals *out);

/* Writes the last step's line if it was not due, then the summary line
 * (test_accuracy NAN: not measured, left out), and fsyncs the file. Call
 * once. */
RF_API rf_status rf_metrics_writer_summary(rf_metrics_writer *w,
                                           double test_accuracy);
/* A click-through model's evaluation: its test AUC and log loss and the
 * hidden model's on the same examples (rdmaflow/ctr_data.h); NAN fields
 * are left out. */
typedef struct rf_metrics_eval {
    double auc, log_loss, hidden_auc, hidden_log_loss;
} rf_metrics_eval;
/* rf_metrics_writer_summary with eval's fields ("auc", "log_loss",
 * "hidden_auc", "hidden_log_loss") in the summary too; eval NULL is
 * rf_metrics_writer_summary. */
RF_API rf_status rf_metrics_writer_summary_eval(rf_metrics_writer *w,
                                                double test_accuracy,
                                                const rf_metrics_eval *eval);

/* Closes the file (without a summary if none was written) and frees w.
 * NULL is ignored. */
RF_API void rf_metrics_writer_close(rf_metrics_writer *w);

#ifdef __cplusplus
}
#endif
#endif
