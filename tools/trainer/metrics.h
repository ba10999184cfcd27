/* tools/trainer/metrics.h: --metrics_out in rf-trainer, on the library's
 * metrics writer (rdmaflow/session.h): the path checked before any work,
 * the writer opened under this task's name ("local", "worker:1", "ps:0"),
 * and the chief's cluster rates in its summary lines. */
#ifndef RF_TRAINER_METRICS_H
#define RF_TRAINER_METRICS_H

#include <stdint.h>

#include "flags.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/session.h"
#include "train.h"

/* Before any work: -1 with "rf-trainer: --metrics_out: why" on stderr if
 * the path cannot be written or is a file that is not a metrics file, or
 * names the same file as --trace or --variables_out; 0 otherwise (also
 * when not given). */
int tr_metrics_check(const tr_flags *f);

/* The task's name in the file: "local" (self NULL) or "JOB:INDEX". */
void tr_metrics_task(const rf_cluster_task *self, char *buf, size_t len);

/* Opens --metrics_out (NULL in *out when not given) for task, with the
 * cluster's examples per global step; -1 with err on failure. */
int tr_metrics_open(const tr_flags *f, const char *task,
                    int64_t examples_per_global_step, rf_metrics_writer **out,
                    char *err, size_t errlen);

/* The summary line (test_accuracy NAN: not measured; eval NULL: not a
 * click-through model); -1 with err. */
int tr_metrics_finish(rf_metrics_writer *w, double test_accuracy,
                      const rf_metrics_eval *eval, char *err, size_t errlen);

/* The chief's summary of the cluster's rates over its training, from
 * global_step's delta over that time (StepCounterHook's global_step/sec):
 * "cluster: global_step A -> B in S s, R global_step/sec, E examples/s". */
void tr_print_cluster_rate(const tr_train_result *tr,
                           int64_t examples_per_global_step);

#endif
