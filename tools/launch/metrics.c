/* tools/launch/metrics.c: rf-launch --metrics_dir and --plot (metrics.h):
 * the directories and per-task metrics files checked before the tasks
 * start, and rf-plot (found next to rf-launch's own executable) run on
 * the files at the end. */
#include "metrics.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/session.h"
#include "rdmaflow/spawn.h"

/* flag's directory: made if missing (its parent must exist), and a
 * directory this process can write into. */
static int prepare_dir(const char *flag, const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        lt_msg("%s: cannot make directory %s: %s", flag, dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        lt_msg("%s: %s is not a directory", flag, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        lt_msg("%s: directory %s is not writable: %s", flag, dir,
               strerror(errno));
        return -1;
    }
    return 0;
}

/* rf-plot next to this executable. */
static int plot_path(char *buf, size_t len)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0)
        return -1;
    self[k] = '\0';
    int w = snprintf(buf, len, "%s/rf-plot", dirname(self));
    return w > 0 && (size_t)w < len && access(buf, X_OK) == 0 ? 0 : -1;
}

/* Runs rf-plot with args; its exit status, or -1 if it could not run. */
static int run_plot(const char *path, const char *const *argv,
                    const lt_sigstate *sig)
{
    rf_spawn_opts so = {.argv = argv,
                        .path = path,
                        .sigmask = &sig->mask,
                        .sigdefault = &sig->dfl};
    rf_child c;
    if (rf_spawn(&so, &c) != RF_OK) {
        lt_msg("--plot: %s", rf_error_message());
        return -1;
    }
    int ws = 0;
    rf_status st = rf_child_wait(&c, -1, &ws);
    rf_child_close(&c);
    if (st != RF_OK)
        return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

int lt_metrics_prepare(const lt_opts *o, lt_task *t, int n,
                       const lt_sigstate *sig)
{
    if (o->metrics_dir && prepare_dir("--metrics_dir", o->metrics_dir) != 0)
        return -1;
    if (o->plot_dir && prepare_dir("--plot", o->plot_dir) != 0)
        return -1;
    const char *flag = o->metrics_dir ? "--metrics_dir" : "--plot";
    for (int i = 0; i < n; i++) {
        if (!t[i].metrics_path)
            continue;
        if (rf_metrics_check_output(t[i].metrics_path) != RF_OK) {
            lt_msg("%s: %s", flag, rf_error_message());
            return -1;
        }
        /* an old file of this task (a metrics file: checked above) must
         * not be plotted as this launch's if the task writes none */
        if (unlink(t[i].metrics_path) != 0 && errno != ENOENT) {
            lt_msg("%s: cannot remove the old %s: %s", flag, t[i].metrics_path,
                   strerror(errno));
            return -1;
        }
    }
    if (o->plot_dir) {
        char path[PATH_MAX];
        if (plot_path(path, sizeof path) != 0) {
            lt_msg("--plot: rf-plot not found next to rf-launch");
            return -1;
        }
        const char *argv[] = {"rf-plot", "--check", NULL};
        if (run_plot(path, argv, sig) != 0) {
            lt_msg("--plot: rf-plot cannot draw here (see above)");
            return -1;
        }
    }
    return 0;
}

int lt_metrics_plot(const lt_opts *o, const lt_task *t, int n,
                    const lt_sigstate *sig)
{
    if (!o->plot_dir)
        return 0;
    char path[PATH_MAX];
    const char **argv = calloc((size_t)n + 4, sizeof *argv);
    if (!argv) {
        lt_msg("--plot: out of memory");
        return -1;
    }
    int k = 0;
    argv[k++] = "rf-plot";
    argv[k++] = "--out";
    argv[k++] = o->plot_dir;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (t[i].metrics_path && stat(t[i].metrics_path, &st) == 0 &&
            st.st_size > 0)
            argv[k++] = t[i].metrics_path;
        else
            lt_msg("--plot: %s wrote no metrics", t[i].name);
    }
    int rc = 0;
    if (k == 3) {
        lt_msg("--plot: no task wrote metrics; nothing drawn");
        rc = -1;
    } else if (plot_path(path, sizeof path) != 0 ||
               run_plot(path, argv, sig) != 0) {
        lt_msg("--plot: rf-plot failed");
        rc = -1;
    }
    free(argv);
    return rc;
}
