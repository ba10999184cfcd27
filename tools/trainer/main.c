/* tools/trainer/main.c: rf-trainer, local mode. Trains a softmax, MLP or CNN
 * classifier on Fashion-MNIST in this process with the graph executor and
 * reports the test accuracy (the distributed ps/worker mode comes with the
 * distributed runtime). Exit status: 0 success, 1 runtime error, 2 usage
 * error. Deterministic for a fixed --seed and --threads. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "flags.h"
#include "rdmaflow/data.h"
#include "session.h"
#include "train.h"

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    return 1;
}

static void print_config(const tr_flags *f, const tr_session *s,
                         const rf_dataset *train, const rf_dataset *test,
                         const char *data_dir)
{
    char buf[512];
    tr_model_describe(&f->model, buf, sizeof buf);
    printf("model: %s, %zu parameters\n", buf, tr_model_num_params(s->g));
    rf_optim_format(&f->optim, buf, sizeof buf);
    printf("optimizer: %s\n", buf);
    printf("data: %s: %zu training, %zu test examples\n", data_dir,
           rf_dataset_size(train), rf_dataset_size(test));
    printf("training: batch_size %" PRId64 ", train_steps %" PRId64
           " (%.2f epochs), seed %" PRIu64 ", %d threads\n",
           f->batch_size, f->train_steps,
           (double)f->train_steps * (double)f->batch_size /
               (double)rf_dataset_size(train),
           f->seed, rf_executor_threads(s->ex));
    fflush(stdout);
}

/* Fails early, before any training, if the trace file cannot be written. */
static int check_trace_path(const char *path)
{
    FILE *fp = fopen(path, "w");
    if (!fp) {
        fprintf(stderr, "rf-trainer: --trace: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    fclose(fp);
    return 0;
}

static int run(const tr_flags *f)
{
    char err[1024];
    const char *dir = f->data_dir;
    if (!dir)
        dir = getenv("RF_FASHION_MNIST_DIR");
    if (!dir || !*dir)
        dir = RF_FASHION_MNIST_DIR;
    rf_dataset *train = NULL, *test = NULL;
    rf_trace *trace = NULL;
    tr_session s = {0};
    int rc = 1;
    if (f->trace_path && check_trace_path(f->trace_path) != 0)
        return 1;
    double t_load = tr_now();
    if (rf_dataset_load_fashion_mnist(dir, RF_DATA_TRAIN, &train) != RF_OK ||
        rf_dataset_load_fashion_mnist(dir, RF_DATA_TEST, &test) != RF_OK) {
        rc = fail("cannot load Fashion-MNIST (--data_dir)", rf_error_message());
        goto out;
    }
    t_load = tr_now() - t_load;
    if (tr_session_create(
            f, (int)rf_dataset_rows(train), (int)rf_dataset_cols(train),
            (int)rf_dataset_num_classes(train), &s, err, sizeof err) != 0) {
        rc = fail("setup", err);
        goto out;
    }
    print_config(f, &s, train, test, dir);
    if (f->trace_path && rf_trace_create(&trace) != RF_OK) {
        rc = fail("--trace", rf_error_message());
        goto out;
    }
    if (trace)
        rf_trace_set_process(trace, 0, "rf-trainer (local)");

    tr_train_result tr;
    if (tr_train(f, &s, train, trace, stdout, &tr, err, sizeof err) != 0) {
        rc = fail("training", err);
        goto out;
    }
    if (trace) {
        if (rf_trace_write_json(trace, f->trace_path) != RF_OK) {
            rc = fail("--trace", rf_error_message());
            goto out;
        }
        printf("trace: %zu events written to %s\n", rf_trace_num_events(trace),
               f->trace_path);
    }
    if (tr.steps > 0) {
        printf("final loss: %.9g (global_step %" PRId64 ")\n", tr.final_loss,
               tr.global_step);
        printf("training: %" PRId64 " steps of %" PRId64
               " in %.2f s, %.0f examples/s (data load %.2f s)\n",
               tr.steps, f->batch_size, tr.seconds,
               (double)tr.steps * (double)f->batch_size / tr.seconds, t_load);
    } else {
        printf("training: nothing to do (global_step %" PRId64
               " >= train_steps %" PRId64 ")\n",
               tr.global_step, f->train_steps);
    }
    tr_eval_result ev;
    if (tr_evaluate(f, &s, test, &ev, err, sizeof err) != 0) {
        rc = fail("evaluation", err);
        goto out;
    }
    printf("test accuracy: %.4f (%" PRId64 " of %" PRId64
           " correct, evaluated in %.2f s)\n",
           (double)ev.correct / (double)ev.total, ev.correct, ev.total,
           ev.seconds);
    rc = 0;
out:
    fflush(stdout);
    rf_trace_destroy(trace);
    tr_session_destroy(&s);
    rf_dataset_free(train);
    rf_dataset_free(test);
    return rc;
}

int main(int argc, char **argv)
{
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
    tr_blas_report(stdout);
    return run(&f);
}
