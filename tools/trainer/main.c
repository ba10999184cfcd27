/* tools/trainer/main.c: rf-trainer. Trains a softmax, MLP or CNN classifier
 * on Fashion-MNIST and reports the test accuracy, either in this process
 * (local mode) or as one task of a ps/worker cluster, TensorFlow 1.x's
 * classic trainer: the same command runs once per task with --ps_hosts,
 * --worker_hosts, --job_name and --task_index (or TF_CONFIG); see dist.h.
 * Exit status (exit_status.h): 0 success, 1 a permanent failure, 2 a
 * usage or configuration error, 138 a failure a restart can cure (a peer
 * unreachable past --max_wait_secs, SIGTERM: preempt.h); a cluster task's
 * last line names its status and why. Local runs are deterministic for a
 * fixed --seed and --threads. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas_core.h"
#include "dist.h"
#include "export.h"
#include "flags.h"
#include "metrics.h"
#include "preempt.h"
#include "prom.h"
#include "rdmaflow/env.h"
#include "report.h"
#include "train.h"
#include "train_graph.h"
#include "wide_deep.h"

#include "rdmaflow/version.h"

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    return 1;
}

static int run_local(const tr_flags *f, FILE *explain)
{
    char err[1024];
    rf_dataset *train = NULL, *test = NULL;
    rf_trace *trace = NULL;
    rf_metrics_writer *metrics = NULL;
    tr_session s = {0};
    int rc = 1;
    double t_load = 0;
    if (tr_load_data(f, &train, &test, &t_load, err, sizeof err) != 0)
        return fail("data", err);
    if (tr_session_create(f, (int)rf_dataset_rows(train),
                          (int)rf_dataset_cols(train),
                          (int)rf_dataset_num_classes(train), NULL, &s, err,
                          sizeof err) != 0) {
        rc = fail("setup", err);
        goto out;
    }
    tr_print_config(f, &s, train, test, tr_data_dir(f));
    if (f->explain != TR_EXPLAIN_NONE &&
        tr_explain_local(f, &s, explain, err, sizeof err) != 0) {
        rc = fail("--explain", err);
        goto out;
    }
    if (f->trace_path && rf_trace_create(&trace) != RF_OK) {
        rc = fail("--trace", rf_error_message());
        goto out;
    }
    if (trace)
        rf_trace_set_process(trace, 0, "rf-trainer (local)");
    if (tr_metrics_open(f, "local", f->batch_size, &metrics, err, sizeof err) !=
        0) {
        rc = fail("--metrics_out", err);
        goto out;
    }

    tr_train_result tr;
    rf_dataset_set_shuffle(train, true, f->seed);
    if (tr_train(f, &s, train, trace, metrics, stdout, &tr, err, sizeof err) !=
        0) {
        rc = fail("training", err);
        goto out;
    }
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = fail("--trace", err);
        goto out;
    }
    tr_print_training(f, &tr, t_load);
    double accuracy = NAN;
    if (tr_report_accuracy(f, &s, test, &accuracy, err, sizeof err) != 0) {
        rc = fail("evaluation", err);
        goto out;
    }
    if (tr_metrics_finish(metrics, accuracy, NULL, err, sizeof err) != 0) {
        rc = fail("--metrics_out", err);
        goto out;
    }
    if (f->variables_out &&
        tr_export_variables(s.g, f->variables_out, err, sizeof err) != 0) {
        rc = fail("--variables_out", err);
        goto out;
    }
    rc = 0;
out:
    fflush(stdout);
    rf_metrics_writer_close(metrics);
    rf_trace_destroy(trace);
    tr_session_destroy(&s);
    rf_dataset_free(train);
    rf_dataset_free(test);
    return rc;
}

/* Where --explain goes: --explain_out FILE; else for JSON stdout alone
 * (every other line of this process then goes to stderr, so `rf-trainer
 * --explain=json ... > explain.json` holds the document and nothing else);
 * else stdout. NULL (said on stderr) if FILE cannot be opened. */
static FILE *open_explain(const tr_flags *f, const char *path)
{
    if (path) {
        FILE *fp = fopen(path, "w");
        if (!fp)
            fprintf(stderr,
                    "rf-trainer: --explain_out: cannot write '%s': %s\n", path,
                    strerror(errno));
        return fp;
    }
    if (f->explain != TR_EXPLAIN_JSON)
        return stdout;
    fflush(stdout);
    int fd = dup(STDOUT_FILENO);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!fp || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fprintf(stderr, "rf-trainer: --explain=json: %s\n", strerror(errno));
        if (fp)
            fclose(fp);
        else if (fd >= 0)
            close(fd);
        return NULL;
    }
    return fp;
}

static void close_explain(FILE *fp)
{
    if (fp && fp != stdout)
        fclose(fp);
}

/* Before any long work: a directory, a device node, a missing or
 * unwritable directory would throw the trained model away at the end (a
 * symbolic link is followed: its target is written). Returns 0 or
 * TR_EXIT_USAGE. */
static int check_outputs(tr_flags *f, const char *explain_path)
{
    if (tr_check_output("--variables_out", f->variables_out) != 0 ||
        tr_check_output("--trace", f->trace_path) != 0 ||
        tr_check_output("--explain_out", explain_path) != 0 ||
        tr_check_distinct_outputs("--variables_out", f->variables_out,
                                  "--trace", f->trace_path) != 0 ||
        tr_check_distinct_outputs("--explain_out", explain_path,
                                  "--variables_out", f->variables_out) != 0 ||
        tr_check_distinct_outputs("--explain_out", explain_path, "--trace",
                                  f->trace_path) != 0 ||
        tr_metrics_check(f) != 0)
        return TR_EXIT_USAGE;
    if (f->explain_only && f->explain == TR_EXPLAIN_NONE)
        f->explain = TR_EXPLAIN_TEXT;
    if (f->explain_out && f->explain == TR_EXPLAIN_NONE) {
        fprintf(stderr, "rf-trainer: --explain_out: give --explain, "
                        "--explain=json or --explain_only too\n");
        return TR_EXIT_USAGE;
    }
    return 0;
}

/* The cluster from the flags, TF_CONFIG or the launcher's rank (*out
 * NULL: none, a local run). Returns 0, or the exit status. */
static int resolve_cluster(const tr_flags *f, rf_cluster **out)
{
    rf_cluster_flags cf = {.ps_hosts = f->ps_hosts,
                           .worker_hosts = f->worker_hosts,
                           .job_name = f->job_name,
                           .task_index = f->task_index,
                           .num_ps = f->num_ps,
                           .port_base = f->port_base};
    /* --explain_only describes every task: which one this process would
     * be does not matter, so the cluster flags alone are enough */
    if (f->explain_only && (f->ps_hosts || f->worker_hosts) && !f->job_name &&
        !f->task_index) {
        cf.job_name = "worker";
        cf.task_index = "0";
    }
    *out = NULL;
    rf_status st = rf_cluster_resolve_env(&cf, NULL, out);
    if (st != RF_OK) {
        fprintf(stderr, "rf-trainer: %s\n", rf_error_message());
        return st == RF_ERR_INVALID_ARG ? TR_EXIT_USAGE : 1;
    }
    return 0;
}

/* No cluster: train (or explain) in this process. */
static int run_in_process(tr_flags *f, const char *explain_path)
{
    if (f->distributed_flag) {
        fprintf(stderr,
                "rf-trainer: --%s: only for distributed training (give "
                "--ps_hosts, --worker_hosts, --job_name and "
                "--task_index, or TF_CONFIG)\n",
                f->distributed_flag);
        return TR_EXIT_USAGE;
    }
    FILE *ex = open_explain(f, explain_path);
    if (!ex)
        return 1;
    int rc;
    if (f->model.kind == TR_MODEL_WIDE_DEEP) {
        if (!f->explain_only)
            tr_blas_report(stdout);
        rc = tr_wd_run_local(f, ex);
    } else if (f->explain_only) {
        rc = tr_explain_only(f, NULL, ex);
    } else {
        tr_blas_report(stdout);
        rc = run_local(f, ex);
    }
    close_explain(ex);
    return rc;
}

/* This task's job: ps, worker (or chief) or evaluator. */
static int run_job(tr_flags *f, rf_cluster *cluster, const char *explain_path)
{
    const rf_cluster_task *self = rf_cluster_self(cluster);
    if (!strcmp(self->job, "ps"))
        return tr_run_ps(f, cluster);
    if (strcmp(self->job, "worker") != 0 && strcmp(self->job, "chief") != 0)
        return tr_run_evaluator(f, cluster);
    FILE *ex = open_explain(f, explain_path);
    tr_blas_report(stdout);
    int rc = !ex ? 1
             : f->model.kind == TR_MODEL_WIDE_DEEP
                 ? tr_wd_run_worker(f, cluster, ex)
                 : tr_run_worker(f, cluster, ex);
    close_explain(ex);
    return rc;
}

/* One task of the cluster: ps, worker (or chief) or evaluator; or, with
 * --explain_only, every task's explanation. */
static int run_task(tr_flags *f, rf_cluster *cluster, const char *explain_path)
{
    char err[1024];
    if (tr_flags_check_cluster(f, rf_cluster_num_workers(cluster), err,
                               sizeof err) != 0) {
        fprintf(stderr, "rf-trainer: %s\n", err);
        tr_exit_reason("%s", err);
        return TR_EXIT_USAGE;
    }
    const rf_cluster_task *self = rf_cluster_self(cluster);
    if (f->explain_only) {
        FILE *ex = open_explain(f, explain_path);
        int rc = ex ? tr_explain_only(f, cluster, ex) : 1;
        close_explain(ex);
        return rc;
    }
    tr_prefix_task_output(self);
    char task[96];
    snprintf(task, sizeof task, "/job:%s/task:%d", self->job, self->index);
    tr_preempt_install(task);
    int rc = tr_prom_start(f, cluster); /* --metrics_port */
    if (rc == 0)
        rc = run_job(f, cluster, explain_path);
    tr_prom_stop();
    return rc;
}

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-trainer: %s\n", rf_error_message());
        return 2;
    }
    tr_blas_reexec(argv);
    tr_flags f;
    char err[1024];
    if (tr_flags_parse(argc, argv, &f, err, sizeof err) != 0) {
        fprintf(stderr, "rf-trainer: %s\n", err);
        return TR_EXIT_USAGE;
    }
    if (f.help) {
        tr_flags_usage(stdout, "rf-trainer");
        return 0;
    }
    if (f.version) {
        printf("rf-trainer (rdmaflow) %s\n", rf_version());
        return 0;
    }
    const char *explain_path =
        f.explain_out && strcmp(f.explain_out, "-") != 0 ? f.explain_out : NULL;
    rf_cluster *cluster = NULL;
    int rc = check_outputs(&f, explain_path);
    if (rc == 0)
        rc = resolve_cluster(&f, &cluster);
    if (rc != 0)
        return rc;
    if (!cluster)
        return run_in_process(&f, explain_path);
    rc = run_task(&f, cluster, explain_path);
    if (!f.explain_only)
        tr_exit_final_line(rc);
    rf_cluster_destroy(cluster);
    return rc;
}
