/* tools/trainer/train.h: the training loop (MonitoredTrainingSession with
 * StopAtStepHook(last_step), LoggingTensorHook-style progress lines and a
 * NaN check) and the test-set evaluation. */
#ifndef RF_TRAINER_TRAIN_H
#define RF_TRAINER_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "flags.h"
#include "rdmaflow/data.h"
#include "rdmaflow/session.h"
#include "train_graph.h"

typedef struct tr_train_result {
    int64_t steps;             /* steps run by this process */
    int64_t global_step;       /* global_step at the end */
    int64_t start_global_step; /* global_step when training started */
    double first_loss;         /* loss of the first step (NAN if none) */
    double final_loss;         /* loss of the last step (NAN if none) */
    double seconds;            /* wall time of the training loop */
} tr_train_result;

/* Trains on train (the caller sets its shuffling) until global_step reaches
 * f->train_steps, printing progress to out every f->log_every steps. With
 * trace non-NULL, traces the first f->trace_steps steps; with metrics
 * non-NULL, counts every step in it (loss and batch accuracy). -1 with err
 * on failure (an executor error, a non-finite loss, a failed metrics
 * write). */
int tr_train(const tr_flags *f, tr_session *s, rf_dataset *train,
             rf_trace *trace, rf_metrics_writer *metrics, FILE *out,
             tr_train_result *res, char *err, size_t errlen);

typedef struct tr_eval_result {
    int64_t correct, total;
    double seconds;
} tr_eval_result;

/* Counts correct predictions over the whole of test, in its file order,
 * f->eval_batch_size examples at a time (the last batch may be smaller). */
int tr_evaluate(const tr_flags *f, tr_session *s, rf_dataset *test,
                tr_eval_result *res, char *err, size_t errlen);

/* A training loop's progress lines: after each step (res->global_step
 * already updated), counts it in res, prints "step G, loss L, E examples/s"
 * at the first step, every f->log_every global steps and the last one, and
 * fails (-1 with err) on a non-finite loss. With cluster (the chief) the
 * line goes on with the cluster's rates since the line before, from
 * global_step's delta over that time (StepCounterHook's global_step/sec):
 * ", cluster: R global_step/sec, E examples/s" (E = R times
 * examples_per_global_step). */
/* On a terminal (out a tty) the lines become one progress line redrawn in
 * place at most every TR_PROGRESS_REDRAW_S: "step G/LAST, loss L,
 * E examples/s, ETA T" (ETA from global_step's rate since the loop
 * began), ended with a newline at the last step; elsewhere plain lines
 * as above. --log_every=0 prints neither. */
#define TR_PROGRESS_REDRAW_S 0.25
typedef struct tr_progress {
    double t_log;     /* when the last line was printed (rf_now_s) */
    int64_t step_log; /* res->steps then */
    int64_t gs_log;   /* res->global_step then */
    bool cluster;
    int64_t examples_per_global_step;
    /* the terminal line: 0 not known yet, 1 plain lines, 2 a terminal */
    int mode;
    double t_start;   /* the loop's first step (rf_now_s) */
    int64_t gs_start; /* global_step then */
    bool drawn;       /* a progress line is on the terminal, unfinished */
} tr_progress;
int tr_progress_step(const tr_flags *f, tr_progress *p, tr_train_result *res,
                     double loss, FILE *out, char *err, size_t errlen);
/* Ends an unfinished progress line (before an error is printed). */
void tr_progress_finish(tr_progress *p, FILE *out);

#endif
