/* tools/trainer/report.h: pieces shared by the local and distributed runs
 * (data directory and loading, the configuration summary, --trace). */
#ifndef RF_TRAINER_REPORT_H
#define RF_TRAINER_REPORT_H

#include "flags.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/data.h"
#include "train.h"
#include "train_graph.h"

/* --data_dir, else $RF_FASHION_MNIST_DIR, else the Debian package's. */
const char *tr_data_dir(const tr_flags *f);
/* Loads the training and test splits; -1 with err on failure. */
int tr_load_data(const tr_flags *f, rf_dataset **train, rf_dataset **test,
                 double *seconds, char *err, size_t errlen);
/* The model, optimizer, data and training lines printed before training. */
void tr_print_config(const tr_flags *f, const tr_session *s,
                     const rf_dataset *train, const rf_dataset *test,
                     const char *data_dir);
/* Before any long work: -1 with "rf-trainer: FLAG: why" on stderr if path
 * (NULL: not given) cannot be written (rf_file_check_output: a directory,
 * device, FIFO, socket, missing or unwritable directory); 0 otherwise. */
int tr_check_output(const char *flag, const char *path);

/* Two output flags must not name the same file (through another spelling
 * or a symbolic link too): -1 after a message naming both. */
int tr_check_distinct_outputs(const char *flag_a, const char *a,
                              const char *flag_b, const char *b);
/* Writes the trace and says so; -1 with err on failure. */
int tr_write_trace(rf_trace *trace, const char *path, char *err, size_t errlen);
/* "final loss: ..." and "training: M steps of B in S s, ..." (or "nothing
 * to do"). */
void tr_print_training(const tr_flags *f, const tr_train_result *tr,
                       double t_load);
/* Evaluates on test and prints "test accuracy: ..."; *accuracy (may be
 * NULL) gets it. */
int tr_report_accuracy(const tr_flags *f, tr_session *s, rf_dataset *test,
                       double *accuracy, char *err, size_t errlen);

/* task_prefix.c: unless rf-launch started this task (RF_LAUNCH_TASK set),
 * every later line on stdout and stderr starts with "[ps0] ", "[worker1] "
 * or "[chief] ", as rf-launch's prefixes do. */
void tr_prefix_task_output(const rf_cluster_task *self);
/* The prefix of this task's lines ("[worker1] "; "" when not prefixed), for
 * a line written straight to the file descriptor (a signal handler's). */
const char *tr_task_prefix(void);

#endif
