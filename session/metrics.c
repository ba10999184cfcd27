/* session/metrics.c: metrics files (--metrics_out; rdmaflow/metrics.h,
 * "metrics files"): one JSON object per line, built with json-c, a "step"
 * line per logged step of this task and a "summary" line at the end. Each
 * line is formatted whole and written with one write(2) to a file opened
 * O_APPEND, so a killed task leaves whole lines only. An existing file is
 * replaced only if it is a metrics file already (its first line a record
 * of ours), and never while another writer holds it: a writer keeps an
 * exclusive flock(2) on its file for its life, so two tasks given the same
 * path do not interleave (the second is refused). It is not the monitored
 * session's hook (hook_metrics.c feeds it) and does not print anything. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/file.h"
#include "rdmaflow/metrics.h"

#define DEFAULT_EVERY    100
#define FIRST_LINE_MAX   65536 /* what is read of an existing file */
#define METRICS_TASK_MAX 64

struct rf_metrics_writer {
    int fd;
    char *path;
    char task[METRICS_TASK_MAX];
    int64_t every, per_step, per_global_step;
    /* since start */
    double t0;
    int64_t g0;
    int64_t steps;
    uint64_t bytes_read, bytes_pushed;
    /* the last step counted */
    rf_metrics_step last;
    double t_last, wall_last; /* when (rf_now_s, rf_wall_s) */
    /* at the last line written */
    int64_t line_steps, line_global_step;
    uint64_t line_read, line_pushed;
    double line_t;
    bool summarised;
};

void rf_metrics_options_init(rf_metrics_options *o)
{
    memset(o, 0, sizeof *o);
    o->every_n_steps = DEFAULT_EVERY;
}

/* Whether the first line of the open file fd is a record of a metrics
 * file: a JSON object with a "type" of "step" or "summary" and a "task". */
static bool first_line_is_metrics(int fd)
{
    char *buf = malloc(FIRST_LINE_MAX + 1);
    if (!buf)
        return false;
    ssize_t n = pread(fd, buf, FIRST_LINE_MAX, 0);
    bool ok = false;
    if (n > 0) {
        buf[n] = '\0';
        char *nl = strchr(buf, '\n');
        if (nl)
            *nl = '\0';
        json_object *o = json_tokener_parse(buf);
        json_object *type = NULL, *task = NULL;
        ok = o && json_object_is_type(o, json_type_object) &&
             json_object_object_get_ex(o, "type", &type) &&
             json_object_object_get_ex(o, "task", &task) &&
             json_object_is_type(type, json_type_string) &&
             json_object_is_type(task, json_type_string) &&
             (!strcmp(json_object_get_string(type), "step") ||
              !strcmp(json_object_get_string(type), "summary"));
        json_object_put(o);
    }
    free(buf);
    return ok;
}

rf_status rf_metrics_check_output(const char *path)
{
    if (!path || !path[0])
        return rf_error_set(RF_ERR_INVALID_ARG, "no metrics file given");
    if (rf_file_check_output(path) != RF_OK)
        return RF_ERR_INVALID_ARG; /* its message names the path */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return RF_OK; /* a new file (or a dangling link's target) */
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: cannot be read (%s)", path,
                            strerror(errno));
    }
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        close(fd);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s is being written by another process (give "
                            "each task a file of its own)",
                            path);
    }
    struct stat st;
    bool empty = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
    bool ours = empty || first_line_is_metrics(fd);
    close(fd);
    if (!ours)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s exists and is not a metrics file (its first "
                            "line is not a metrics record); not overwriting "
                            "it: remove it or name another file",
                            path);
    return RF_OK;
}

rf_status rf_metrics_writer_open(const rf_metrics_options *o,
                                 rf_metrics_writer **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_metrics_writer_open: out NULL");
    *out = NULL;
    if (!o || !o->task || !o->task[0] || strlen(o->task) >= METRICS_TASK_MAX ||
        o->every_n_steps < 0 || o->examples_per_step < 0 ||
        o->examples_per_global_step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "metrics: a task name (shorter than %d) and "
                            "counts >= 0 are required",
                            METRICS_TASK_MAX);
    rf_status st = rf_metrics_check_output(o->path);
    if (st != RF_OK)
        return st;
    rf_metrics_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(o->path))) {
        free(w);
        return rf_error_set(RF_ERR_NO_MEMORY, "metrics: out of memory");
    }
    /* locked before it is emptied: another writer's lines are never cut */
    w->fd = open(o->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (w->fd < 0)
        st = rf_error_set(RF_ERR_IO, "%s: cannot be created (%s)", o->path,
                          strerror(errno));
    else if (flock(w->fd, LOCK_EX | LOCK_NB) != 0)
        st = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s is being written by another process (give "
                          "each task a file of its own)",
                          o->path);
    else if (ftruncate(w->fd, 0) != 0)
        st = rf_error_set(RF_ERR_IO, "%s: cannot be emptied (%s)", o->path,
                          strerror(errno));
    if (st != RF_OK) {
        if (w->fd >= 0)
            close(w->fd);
        free(w->path);
        free(w);
        return st;
    }
    snprintf(w->task, sizeof w->task, "%s", o->task);
    w->every = o->every_n_steps > 0 ? o->every_n_steps : DEFAULT_EVERY;
    w->per_step = o->examples_per_step;
    w->per_global_step = o->examples_per_global_step > 0
                             ? o->examples_per_global_step
                             : o->examples_per_step;
    w->last.loss = w->last.accuracy = NAN;
    rf_metrics_writer_start(w, 0);
    *out = w;
    return RF_OK;
}

void rf_metrics_writer_start(rf_metrics_writer *w, int64_t global_step)
{
    w->t0 = w->t_last = w->line_t = rf_now_s();
    w->g0 = w->line_global_step = w->last.global_step = global_step;
    w->steps = w->line_steps = 0;
    w->bytes_read = w->bytes_pushed = w->line_read = w->line_pushed = 0;
}

/* A double with this many significant digits (fixed: decimals; json-c
 * would print 17); NULL (JSON null) for NaN and infinities. */
static json_object *num(double v, int digits, bool fixed)
{
    if (!isfinite(v))
        return NULL;
    char buf[400]; /* %f of DBL_MAX */
    if (fixed)
        snprintf(buf, sizeof buf, "%.*f", digits, v);
    else
        snprintf(buf, sizeof buf, "%.*g", digits, v);
    return json_object_new_double_s(v, buf);
}

static double rate(double n, double dt)
{
    return dt > 0 ? n / dt : NAN;
}

/* Writes o as one line with one write(2), then frees it. */
static rf_status put_line(rf_metrics_writer *w, json_object *o)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    rf_status st = RF_OK;
    char *line = text ? malloc(len + 1) : NULL;
    if (!line) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "metrics: out of memory");
    } else {
        memcpy(line, text, len);
        line[len] = '\n';
        ssize_t n = write(w->fd, line, len + 1);
        if (n != (ssize_t)(len + 1))
            st = rf_error_set(RF_ERR_IO, "%s: writing a metrics line: %s",
                              w->path, n < 0 ? strerror(errno) : "short write");
        free(line);
    }
    json_object_put(o);
    return st;
}

static json_object *record(const rf_metrics_writer *w, const char *type)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_add(o, "task", json_object_new_string(w->task));
    return o;
}

/* The line of the last step counted: rates and bytes per step since the
 * line before. */
static rf_status step_line(rf_metrics_writer *w)
{
    int64_t steps = w->steps - w->line_steps;
    double dt = w->t_last - w->line_t;
    double gs_rate =
        rate((double)(w->last.global_step - w->line_global_step), dt);
    json_object *o = record(w, "step");
    json_object_object_add(o, "step", json_object_new_int64(w->steps));
    json_object_object_add(o, "global_step",
                           json_object_new_int64(w->last.global_step));
    json_object_object_add(o, "loss", num(w->last.loss, 9, false));
    if (!isnan(w->last.accuracy))
        json_object_object_add(o, "accuracy", num(w->last.accuracy, 6, false));
    if (w->last.ssp)
        json_object_object_add(o, "ssp_lead",
                               json_object_new_int64(w->last.ssp_lead));
    json_object_object_add(
        o, "examples_per_sec",
        num(rate((double)(steps * w->per_step), dt), 6, false));
    json_object_object_add(o, "global_step_per_sec", num(gs_rate, 6, false));
    json_object_object_add(o, "cluster_examples_per_sec",
                           num(gs_rate * (double)w->per_global_step, 6, false));
    json_object_object_add(o, "wall_time", num(w->wall_last, 6, true));
    json_object_object_add(o, "elapsed", num(w->t_last - w->t0, 6, true));
    json_object_object_add(
        o, "bytes_read",
        json_object_new_int64(
            steps ? (int64_t)((w->bytes_read - w->line_read) / (uint64_t)steps)
                  : 0));
    json_object_object_add(
        o, "bytes_pushed",
        json_object_new_int64(
            steps ? (int64_t)((w->bytes_pushed - w->line_pushed) /
                              (uint64_t)steps)
                  : 0));
    w->line_steps = w->steps;
    w->line_global_step = w->last.global_step;
    w->line_read = w->bytes_read;
    w->line_pushed = w->bytes_pushed;
    w->line_t = w->t_last;
    return put_line(w, o);
}

rf_status rf_metrics_writer_step(rf_metrics_writer *w,
                                 const rf_metrics_step *step)
{
    if (!w || !step)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_metrics_writer_step: NULL argument");
    w->steps++;
    w->last = *step;
    w->t_last = rf_now_s();
    w->wall_last = rf_wall_s();
    w->bytes_read += step->bytes_read;
    w->bytes_pushed += step->bytes_pushed;
    if (w->steps == 1 || w->steps % w->every == 0)
        return step_line(w);
    return RF_OK;
}

void rf_metrics_writer_totals(const rf_metrics_writer *w,
                              rf_metrics_totals *out)
{
    double dt = w->t_last - w->t0;
    *out = (rf_metrics_totals){
        .steps = w->steps,
        .examples = w->steps * w->per_step,
        .start_global_step = w->g0,
        .global_step = w->last.global_step,
        .seconds = dt,
        .examples_per_sec = rate((double)(w->steps * w->per_step), dt),
        .global_step_per_sec = rate((double)(w->last.global_step - w->g0), dt),
        .final_loss = w->steps ? w->last.loss : NAN,
        .bytes_read = w->bytes_read,
        .bytes_pushed = w->bytes_pushed,
    };
    out->cluster_examples_per_sec =
        out->global_step_per_sec * (double)w->per_global_step;
}

rf_status rf_metrics_writer_summary(rf_metrics_writer *w, double test_accuracy)
{
    return rf_metrics_writer_summary_eval(w, test_accuracy, NULL);
}

rf_status rf_metrics_writer_summary_eval(rf_metrics_writer *w,
                                         double test_accuracy,
                                         const rf_metrics_eval *eval)
{
    if (!w || w->summarised)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_metrics_writer_summary: %s",
                            w ? "written already" : "NULL writer");
    w->summarised = true;
    rf_status st = RF_OK;
    if (w->steps > w->line_steps && (st = step_line(w)) != RF_OK)
        return st;
    rf_metrics_totals t;
    rf_metrics_writer_totals(w, &t);
    json_object *o = record(w, "summary");
    json_object_object_add(o, "steps", json_object_new_int64(t.steps));
    json_object_object_add(o, "examples", json_object_new_int64(t.examples));
    json_object_object_add(o, "start_global_step",
                           json_object_new_int64(t.start_global_step));
    json_object_object_add(o, "global_step",
                           json_object_new_int64(t.global_step));
    json_object_object_add(o, "seconds", num(t.seconds, 6, true));
    json_object_object_add(o, "examples_per_sec",
                           num(t.examples_per_sec, 6, false));
    json_object_object_add(o, "global_step_per_sec",
                           num(t.global_step_per_sec, 6, false));
    json_object_object_add(o, "cluster_examples_per_sec",
                           num(t.cluster_examples_per_sec, 6, false));
    json_object_object_add(o, "final_loss", num(t.final_loss, 9, false));
    if (!isnan(test_accuracy))
        json_object_object_add(o, "test_accuracy",
                               num(test_accuracy, 6, false));
    if (eval) {
        const struct {
            const char *key;
            double v;
        } ev[] = {{"auc", eval->auc},
                  {"log_loss", eval->log_loss},
                  {"hidden_auc", eval->hidden_auc},
                  {"hidden_log_loss", eval->hidden_log_loss}};
        for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
            if (!isnan(ev[i].v))
                json_object_object_add(o, ev[i].key, num(ev[i].v, 6, false));
    }
    json_object_object_add(o, "bytes_read",
                           json_object_new_int64((int64_t)t.bytes_read));
    json_object_object_add(o, "bytes_pushed",
                           json_object_new_int64((int64_t)t.bytes_pushed));
    json_object_object_add(o, "wall_time", num(rf_wall_s(), 6, true));
    json_object_object_add(o, "elapsed", num(rf_now_s() - w->t0, 6, true));
    if ((st = put_line(w, o)) != RF_OK)
        return st;
    if (fsync(w->fd) != 0)
        return rf_error_set(RF_ERR_IO, "%s: fsync: %s", w->path,
                            strerror(errno));
    return RF_OK;
}

void rf_metrics_writer_close(rf_metrics_writer *w)
{
    if (!w)
        return;
    close(w->fd);
    free(w->path);
    free(w);
}
