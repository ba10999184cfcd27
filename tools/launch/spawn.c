/* tools/launch/spawn.c: fork + exec of a task. The child reports a failure
 * before or at exec (which step, errno) through a close-on-exec pipe, so the
 * parent knows whether the program started. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "output.h"

extern char **environ;

/* environ without TF_CONFIG, plus TF_CONFIG=tf_config when given. */
static char **make_env(const char *tf_config)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TF_CONFIG=", 10) != 0)
            env[k++] = environ[i];
    if (tf_config) {
        char *s = NULL;
        if (asprintf(&s, "TF_CONFIG=%s", tf_config) < 0) {
            free(env);
            return NULL;
        }
        env[k++] = s;
    }
    env[k] = NULL;
    return env;
}

static void free_env(char **env, const char *tf_config)
{
    if (!env)
        return;
    if (tf_config) {
        size_t k = 0;
        while (env[k])
            k++;
        free(env[k - 1]);
    }
    free(env);
}

typedef struct child_error {
    int step; /* index into steps[] */
    int err;  /* errno */
} child_error;

static const char *const steps[] = {"setpgid",        "prctl(PR_SET_PDEATHSIG)",
                                    "open /dev/null", "dup2",
                                    "signal set-up",  "exec"};

static _Noreturn void child_fail(int fd, int step)
{
    child_error ce = {step, errno};
    ssize_t w = write(fd, &ce, sizeof ce);
    (void)w;
    _exit(127);
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static _Noreturn void child(const lt_task *t, char **env, pid_t parent,
                            const lt_sigstate *sig, int out_w, int err_w,
                            int report)
{
    if (setpgid(0, 0) != 0)
        child_fail(report, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        child_fail(report, 1);
    if (getppid() != parent) /* rf-launch died before prctl */
        _exit(1);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0)
        child_fail(report, 2);
    if (dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        child_fail(report, 3);
    if (sigaction(SIGPIPE, &sig->pipe, NULL) != 0 ||
        sigprocmask(SIG_SETMASK, &sig->mask, NULL) != 0)
        child_fail(report, 4);
    execvpe(t->argv[0], t->argv, env);
    child_fail(report, 5);
}

int lt_spawn(lt_task *t, const lt_sigstate *sig, char *err, size_t errlen)
{
    int out[2] = {-1, -1}, errp[2] = {-1, -1}, rep[2] = {-1, -1};
    char **env = make_env(t->tf_config);
    int rc = -1;
    if (!env) {
        snprintf(err, errlen, "%s: out of memory", t->name);
        return -1;
    }
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0 ||
        pipe2(rep, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", t->name, strerror(errno));
        goto out;
    }
    if (t->port_fd >= 0) {
        close(t->port_fd);
        t->port_fd = -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "%s: fork: %s", t->name, strerror(errno));
        goto out;
    }
    if (pid == 0)
        child(t, env, parent, sig, out[1], errp[1], rep[1]);
    setpgid(pid, pid); /* also done by the child; whichever runs first */
    close(rep[1]);
    rep[1] = -1;
    child_error ce;
    ssize_t r;
    do
        r = read(rep[0], &ce, sizeof ce);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)sizeof ce) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (ce.step == 5)
            snprintf(err, errlen, "%s: cannot run '%s': %s", t->name,
                     t->argv[0], strerror(ce.err));
        else
            snprintf(err, errlen, "%s: %s failed: %s", t->name, steps[ce.step],
                     strerror(ce.err));
        goto out;
    }
    t->pid = pid;
    t->running = true;
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    lt_lines_init(&t->out, out[0], 1, t->prefix);
    lt_lines_init(&t->err, errp[0], 2, t->prefix);
    out[0] = errp[0] = -1;
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (errp[i] >= 0)
            close(errp[i]);
        if (rep[i] >= 0)
            close(rep[i]);
    }
    free_env(env, t->tf_config);
    return rc;
}
