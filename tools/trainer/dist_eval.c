/* tools/trainer/dist_eval.c: the evaluator job, as TensorFlow's evaluator
 * task (Estimator's train_and_evaluate): not part of the training cluster
 * (no server, no connection to the ps tasks), it builds the same model in
 * this process and evaluates every new checkpoint the chief writes in
 * --checkpoint_dir on the test set, until one whose global_step reached
 * --train_steps (then exit 0). With no new checkpoint for --max_wait_secs
 * it gives up (exit 1); without --checkpoint_dir it has nothing to
 * evaluate (usage error, exit 2). The image models print the test
 * accuracy of each checkpoint (tr_report_accuracy), --model=wide_deep its
 * test AUC and log loss beside the hidden model's (tr_wd_evaluate), the
 * lines the chief prints at the end of training, and write them into an
 * event file in the eval folder of --summary_dir (else --checkpoint_dir)
 * at each checkpoint's global_step, as TensorFlow's evaluator: accuracy,
 * or auc and log_loss. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dist.h"
#include "prom.h"
#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/summary.h"
#include "report.h"
#include "wide_deep.h"

#define POLL_MS 500 /* between looks at the checkpoint directory */

/* The model evaluated: the image models' graph with the test set, or
 * wide_deep's, whose test examples come from --ctr_spec. Its tables are
 * partitioned as the workers' (--embedding_partitions, else the cluster's
 * ps count): a checkpoint holds each table whole, its parts as row ranges
 * (TF's SaveSliceInfo), and the "mod" strategy maps an id to part id % P,
 * row id / P, so an id's row in the whole depends on P. */
typedef struct eval_model {
    rf_dataset *train, *test;
    tr_session img;
    tr_wd_session wd;
    tr_session *s; /* &img or &wd.base */
} eval_model;

static int model_create(const tr_flags *f, const rf_cluster *cluster,
                        eval_model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (f->model.kind == TR_MODEL_WIDE_DEEP) {
        m->s = &m->wd.base;
        return tr_wd_session_create(
            f, NULL, tr_wd_partitions(f, rf_cluster_num_ps(cluster)), &m->wd,
            err, errlen);
    }
    double t_load;
    char why[768];
    if (tr_load_data(f, &m->train, &m->test, &t_load, why, sizeof why) != 0) {
        snprintf(err, errlen, "data: %s", why);
        return -1;
    }
    m->s = &m->img;
    if (tr_session_create(f, (int)rf_dataset_rows(m->test),
                          (int)rf_dataset_cols(m->test),
                          (int)rf_dataset_num_classes(m->test), NULL, &m->img,
                          why, sizeof why) != 0) {
        snprintf(err, errlen, "setup: %s", why);
        return -1;
    }
    return 0;
}

static void model_destroy(eval_model *m)
{
    tr_wd_session_destroy(&m->wd);
    tr_session_destroy(&m->img);
    rf_dataset_free(m->train);
    rf_dataset_free(m->test);
}

/* Prints the evaluation of the restored variables and writes it at step
 * into the eval folder's event file, as TensorFlow's evaluator (a write
 * that fails is named and evaluation goes on); -1 with err. */
static int model_evaluate(const tr_flags *f, eval_model *m,
                          rf_summary_writer *w, int64_t step, char *err,
                          size_t errlen)
{
    static const char *const wd_tags[] = {"auc", "log_loss"};
    static const char *const img_tags[] = {"accuracy"};
    float values[2];
    const char *const *tags = img_tags;
    size_t n = 1;
    if (f->model.kind == TR_MODEL_WIDE_DEEP) {
        tr_wd_eval ev;
        if (tr_wd_evaluate(f, &m->wd, &ev, err, errlen) != 0)
            return -1;
        values[0] = (float)ev.auc;
        values[1] = (float)ev.log_loss;
        tags = wd_tags;
        n = 2;
    } else {
        double accuracy;
        if (tr_report_accuracy(f, &m->img, m->test, &accuracy, err, errlen) !=
            0)
            return -1;
        values[0] = (float)accuracy;
    }
    if (rf_summary_writer_scalars(w, step, n, tags, values) != RF_OK)
        fprintf(stderr, "rf-trainer: evaluator: summary not written: %s\n",
                rf_error_message());
    return 0;
}

/* Restores the model's variables of s from ck (not the optimizer's slots:
 * evaluation does not read them); its global_step in *step. */
static int restore(tr_session *s, const rf_ckpt *ck, int64_t *step)
{
    size_t n = rf_graph_num_variables(s->g);
    for (size_t i = 0; i < n; i++) {
        rf_node *v = rf_graph_variable(s->g, i);
        if (rf_variable_slot_primary(v))
            continue;
        if (rf_ckpt_read_variable(ck, v, rf_variable_data(v)) != RF_OK) {
            tr_exit_fail(TR_EXIT_FAILED, "evaluator", rf_error_message());
            return -1;
        }
    }
    memcpy(step, rf_variable_data(s->global_step), sizeof *step);
    return 0;
}

int tr_run_evaluator(const tr_flags *f, rf_cluster *cluster)
{
    const rf_cluster_task *self = rf_cluster_self(cluster);
    if (!f->checkpoint_dir) {
        return tr_exit_fail(TR_EXIT_USAGE, "--checkpoint_dir",
                            "required for the evaluator task (it evaluates "
                            "the chief's checkpoints, as TensorFlow's "
                            "evaluator)");
    }
    char err[1024], eval_dir[4096];
    int len = snprintf(eval_dir, sizeof eval_dir, "%s/eval",
                       f->summary_dir ? f->summary_dir : f->checkpoint_dir);
    rf_summary_writer *w = NULL;
    if (len < 0 || (size_t)len >= sizeof eval_dir ||
        rf_summary_writer_open(eval_dir, &w) != RF_OK) {
        return tr_exit_fail(TR_EXIT_USAGE, "evaluator",
                            len < 0 || (size_t)len >= sizeof eval_dir
                                ? "the eval folder's path is too long"
                                : rf_error_message());
    }
    eval_model m;
    int rc = 1;
    if (model_create(f, cluster, &m, err, sizeof err) != 0) {
        tr_exit_reason("%s", err);
        fprintf(stderr, "rf-trainer: %s\n", err);
        goto out;
    }
    tr_prom_ready();
    printf("evaluator %d: not in the training cluster; evaluating the "
           "checkpoints in %s until global_step %" PRId64 ", summaries in %s\n",
           self->index, f->checkpoint_dir, f->train_steps,
           rf_summary_writer_path(w));
    fflush(stdout);
    char last[4096] = "", path[4096];
    int64_t deadline = rf_deadline_ms(f->max_wait_secs * 1000);
    for (;;) {
        rf_ckpt *ck = NULL;
        rf_status st =
            rf_ckpt_dir_open_latest(f->checkpoint_dir, &ck, path, sizeof path);
        if (st != RF_OK && st != RF_ERR_UNAVAILABLE) {
            tr_exit_fail(TR_EXIT_FAILED, "evaluator", rf_error_message());
            goto out;
        }
        if (st == RF_OK && strcmp(path, last) != 0) {
            int64_t step = 0;
            int r = restore(m.s, ck, &step);
            rf_ckpt_close(ck);
            if (r != 0)
                goto out;
            printf("evaluator %d: %s (global_step %" PRId64 ")\n", self->index,
                   rf_esc(path), step);
            if (model_evaluate(f, &m, w, step, err, sizeof err) != 0) {
                tr_exit_fail(TR_EXIT_FAILED, "evaluation", err);
                goto out;
            }
            tr_prom_evaluated(step);
            if (step >= f->train_steps) {
                printf("evaluator %d: done: global_step %" PRId64
                       " reached --train_steps\n",
                       self->index, step);
                tr_exit_reason("evaluator %d evaluated the last checkpoint, "
                               "global_step %" PRId64,
                               self->index, step);
                rc = 0;
                goto out;
            }
            snprintf(last, sizeof last, "%s", path);
            deadline = rf_deadline_ms(f->max_wait_secs * 1000);
        } else {
            rf_ckpt_close(ck);
        }
        if (rf_deadline_passed(deadline)) {
            char why[6000];
            snprintf(why, sizeof why,
                     "no new checkpoint in %s for --max_wait_secs=%" PRId64
                     " s (last evaluated: %s)",
                     f->checkpoint_dir, f->max_wait_secs,
                     *last ? last : "none");
            tr_exit_fail(TR_EXIT_FAILED, "evaluator", why);
            goto out;
        }
        rf_sleep_ms(POLL_MS);
    }
out:
    fflush(stdout);
    model_destroy(&m);
    if (rf_summary_writer_close(w) != RF_OK) {
        int r = tr_exit_fail(TR_EXIT_FAILED, "evaluator", rf_error_message());
        rc = rc ? rc : r;
    }
    return rc;
}
