/* tools/trainer/report.c: what local and distributed runs share: the
 * data directory, the configuration summary, the output-path checks, and
 * loading Fashion-MNIST. */
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/file.h"
#include "report.h"

const char *tr_data_dir(const tr_flags *f)
{
    const char *dir = f->data_dir;
    if (!dir)
        dir = getenv("RF_FASHION_MNIST_DIR");
    if (!dir || !*dir)
        dir = RF_FASHION_MNIST_DIR;
    return dir;
}

int tr_load_data(const tr_flags *f, rf_dataset **train, rf_dataset **test,
                 double *seconds, char *err, size_t errlen)
{
    const char *dir = tr_data_dir(f);
    double t = rf_now_s();
    *train = *test = NULL;
    if (rf_dataset_load_fashion_mnist(dir, RF_DATA_TRAIN, train) != RF_OK ||
        rf_dataset_load_fashion_mnist(dir, RF_DATA_TEST, test) != RF_OK) {
        /* where the directory came from: the flag, the variable or the
         * default (a bad RF_FASHION_MNIST_DIR is not a --data_dir) */
        const char *env = getenv("RF_FASHION_MNIST_DIR");
        const char *from = f->data_dir   ? "--data_dir"
                           : env && *env ? "RF_FASHION_MNIST_DIR"
                                         : "the default --data_dir";
        snprintf(err, errlen, "cannot load Fashion-MNIST (%s): %s", from,
                 rf_error_message());
        rf_dataset_free(*train);
        *train = NULL;
        return -1;
    }
    *seconds = rf_now_s() - t;
    return 0;
}

void tr_print_config(const tr_flags *f, const tr_session *s,
                     const rf_dataset *train, const rf_dataset *test,
                     const char *data_dir)
{
    char buf[512];
    tr_model_describe(&f->model, buf, sizeof buf);
    printf("model: %s, %zu parameters\n", buf, tr_model_num_params(s->g));
    rf_optim_format(&f->optim, buf, sizeof buf);
    printf("optimizer: %s\n", buf);
    printf("data: %s: %zu training, %zu test examples\n", rf_esc(data_dir),
           rf_dataset_size(train), rf_dataset_size(test));
    printf("training: batch_size %" PRId64 ", train_steps %" PRId64
           " (%.2f epochs), seed %" PRIu64 ", %d threads\n",
           f->batch_size, f->train_steps,
           (double)f->train_steps * (double)f->batch_size /
               (double)rf_dataset_size(train),
           f->seed, rf_executor_threads(s->ex));
    fflush(stdout);
}

int tr_check_output(const char *flag, const char *path)
{
    if (!path || rf_file_check_output(path) == RF_OK)
        return 0;
    fprintf(stderr, "rf-trainer: %s: %s\n", flag, rf_error_message());
    return -1;
}

/* path as an absolute name: realpath of the file, or, when it does not
 * exist yet, of what a dangling symbolic link names (the writer follows
 * it) or of its directory plus its last component. false if none
 * resolves (tr_check_output has judged such a path already). */
static bool canonical(const char *path, char *out, size_t len, int depth)
{
    char buf[PATH_MAX];
    if (realpath(path, buf)) {
        snprintf(out, len, "%s", buf);
        return true;
    }
    char dir[PATH_MAX], base[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(base, sizeof base, "%s", path);
    struct stat st;
    if (depth < 8 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(path, buf, sizeof buf - 1);
        if (n <= 0)
            return false;
        buf[n] = '\0';
        char target[2 * PATH_MAX + 2];
        snprintf(target, sizeof target, "%s%s%s",
                 buf[0] == '/' ? "" : dirname(dir), buf[0] == '/' ? "" : "/",
                 buf);
        return canonical(target, out, len, depth + 1);
    }
    if (!realpath(dirname(dir), buf))
        return false;
    int n = snprintf(out, len, "%s/%s", buf, basename(base));
    return n > 0 && (size_t)n < len;
}

int tr_check_distinct_outputs(const char *flag_a, const char *a,
                              const char *flag_b, const char *b)
{
    if (!a || !b)
        return 0;
    char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
    bool same =
        !strcmp(a, b) || (canonical(a, ca, sizeof ca, 0) &&
                          canonical(b, cb, sizeof cb, 0) && !strcmp(ca, cb));
    if (!same)
        return 0;
    fprintf(stderr,
            "rf-trainer: %s and %s name the same file (%s): one would "
            "overwrite the other\n",
            flag_a, flag_b, a);
    return -1;
}

int tr_write_trace(rf_trace *trace, const char *path, char *err, size_t errlen)
{
    if (rf_trace_write_json(trace, path) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    printf("trace: %zu events written to %s\n", rf_trace_num_events(trace),
           rf_esc(path));
    return 0;
}

void tr_print_training(const tr_flags *f, const tr_train_result *tr,
                       double t_load)
{
    if (tr->steps > 0) {
        printf("final loss: %.9g (global_step %" PRId64 ")\n", tr->final_loss,
               tr->global_step);
        printf("training: %" PRId64 " steps of %" PRId64
               " in %.2f s, %.0f examples/s (data load %.2f s)\n",
               tr->steps, f->batch_size, tr->seconds,
               (double)tr->steps * (double)f->batch_size / tr->seconds, t_load);
    } else {
        printf("training: nothing to do (global_step %" PRId64
               " >= train_steps %" PRId64 ")\n",
               tr->global_step, f->train_steps);
    }
    fflush(stdout);
}

int tr_report_accuracy(const tr_flags *f, tr_session *s, rf_dataset *test,
                       double *accuracy, char *err, size_t errlen)
{
    tr_eval_result ev;
    if (tr_evaluate(f, s, test, &ev, err, errlen) != 0)
        return -1;
    if (accuracy)
        *accuracy = (double)ev.correct / (double)ev.total;
    printf("test accuracy: %.4f (%" PRId64 " of %" PRId64
           " correct, evaluated in %.2f s)\n",
           (double)ev.correct / (double)ev.total, ev.correct, ev.total,
           ev.seconds);
    fflush(stdout);
    return 0;
}
