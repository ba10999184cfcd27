/* tools/launch/task.c: starts one task with rf_spawn (see task.h); used for
 * the first start of every task and for each restart, so a restarted task
 * gets exactly the same argv, environment and process treatment. */
#include "task.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "rdmaflow/spawn.h"
#include "secret.h"

/* A remote task's stdin lines (remote.c's watcher): the job's secret, then
 * the job token (lt_job_token_prepare made or checked it: one line), or an
 * empty line; one write. 0, or -1 with errno. */
static int send_secret(const lt_task *t, int fd)
{
    const char *token = getenv("RF_JOB_TOKEN");
    size_t tlen = token ? strlen(token) : 0, n = t->secret->len + tlen + 1;
    char *buf = malloc(n);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(buf, t->secret->text, t->secret->len);
    if (tlen)
        memcpy(buf + t->secret->len, token, tlen);
    buf[n - 1] = '\n';
    ssize_t w = write(fd, buf, n);
    int saved = errno;
    explicit_bzero(buf, n);
    free(buf);
    if (w == (ssize_t)n)
        return 0;
    errno = w < 0 ? saved : EPIPE;
    return -1;
}

rf_status lt_task_start(lt_task *t, const lt_sigstate *sig)
{
    if (t->port_fd >= 0) {
        close(t->port_fd);
        t->port_fd = -1;
    }
    char *tf_config = NULL;
    if (t->tf_config && asprintf(&tf_config, "TF_CONFIG=%s", t->tf_config) < 0)
        return rf_error_set(RF_ERR_NO_MEMORY, "out of memory");
    /* the task's lines are prefixed here: RF_LAUNCH_TASK tells rf-trainer
     * not to prefix them itself */
    char *task_name = NULL;
    if (asprintf(&task_name, "RF_LAUNCH_TASK=%s", t->name) < 0) {
        free(tf_config);
        return rf_error_set(RF_ERR_NO_MEMORY, "out of memory");
    }
    /* the job's own secret: a local task reads the file, a remote one
     * gets its text on ssh's stdin below (remote.c) */
    char *secret_env = NULL;
    if (t->secret && !t->remote &&
        asprintf(&secret_env, "RF_CLUSTER_SECRET_FILE=%s", t->secret->path) <
            0) {
        free(tf_config);
        free(task_name);
        return rf_error_set(RF_ERR_NO_MEMORY, "out of memory");
    }
    const char *set[] = {task_name, secret_env ? secret_env : tf_config,
                         secret_env ? tf_config : NULL, NULL},
               *unset[] = {"TF_CONFIG", NULL};
    rf_spawn_opts o = {
        .argv = (const char *const *)t->argv,
        .env_set = set,
        .env_unset = tf_config ? NULL : unset,
        .new_pgroup = true,
        .die_with_parent = true,
        /* over ssh: a stdin held open, whose end stops the remote task */
        .stdio = {t->remote ? RF_SPAWN_PIPE : RF_SPAWN_DEVNULL, RF_SPAWN_PIPE,
                  RF_SPAWN_PIPE},
        .pipe_nonblock = true,
        .sigmask = &sig->mask,
        .sigdefault = &sig->dfl,
    };
    rf_child c;
    rf_status st = rf_spawn(&o, &c);
    free(tf_config);
    free(task_name);
    free(secret_env);
    if (st != RF_OK)
        return st;
    /* the secret's line and the job token's (remote.c), far below the
     * pipe's capacity: written whole at once */
    if (t->remote && t->secret && send_secret(t, c.stdio_fd[0]) != 0)
        lt_msg("%s: could not send the cluster secret to its ssh: %s", t->name,
               strerror(errno));
    t->pid = c.pid;
    t->running = true;
    if (t->stdin_fd >= 0)
        close(t->stdin_fd); /* the previous run's */
    t->stdin_fd = t->remote ? c.stdio_fd[0] : -1;
    lt_lines_init(&t->out, c.stdio_fd[1], 1, t->prefix);
    lt_lines_init(&t->err, c.stdio_fd[2], 2, t->prefix);
    return RF_OK;
}
