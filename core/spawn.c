/* core/spawn.c: fork + exec of a child with its environment, descriptors,
 * process group, parent-death signal and signal state set up in between;
 * waiting, stopping, and reading a ready fd's port line (rdmaflow/spawn.h).
 *
 * Everything that can be prepared is prepared before fork (environment
 * array, pipes, /dev/null, the descriptor plan), so the child only makes
 * async-signal-safe calls. It reports a failure before or at exec (which
 * step, errno) on a close-on-exec pipe whose end of file tells the parent
 * that the exec worked. Not a supervisor: it knows one child at a time. */
#include "rdmaflow/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/clock.h"

extern char **environ;

/* The steps of the child before exec, as the parent names them. */
enum step { ST_SETPGID, ST_PDEATHSIG, ST_SIGNALS, ST_DUP, ST_EXEC };
static const char *const step_names[] = {"setpgid", "prctl(PR_SET_PDEATHSIG)",
                                         "signal set-up", "dup2", "exec"};

typedef struct child_report {
    int step;
    int err; /* errno */
} child_report;

typedef struct fd_move {
    int src, dst;
} fd_move;

/* What the child does, computed by the parent before fork. */
typedef struct plan {
    const rf_spawn_opts *o;
    char *const *env;
    fd_move move[3 + RF_SPAWN_MAX_FDS];
    int nmove;
    int floor; /* above every dst: where descriptors are parked */
    int report;
    pid_t parent;
    sigset_t mask; /* the child's signal mask at exec */
} plan;

static _Noreturn void child_fail(int report, int step)
{
    child_report r = {step, errno};
    ssize_t w = write(report, &r, sizeof r);
    (void)w;
    _exit(127);
}

/* Between fork and exec: async-signal-safe calls only. Every signal is
 * blocked on entry (rf_spawn blocks them around fork). */
static _Noreturn void child_main(const plan *p)
{
    const rf_spawn_opts *o = p->o;
    int report = p->report;
    if (o->new_pgroup && setpgid(0, 0) != 0)
        child_fail(report, ST_SETPGID);
    if (o->die_with_parent) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
            child_fail(report, ST_PDEATHSIG);
        if (getppid() != p->parent) /* the parent died before prctl */
            _exit(127);
    }
    /* No handler of the caller's may run in the child: set them back to
     * SIG_DFL (exec would, but a signal could arrive before it), and the
     * signals asked for. */
    for (int s = 1; s < NSIG; s++) {
        struct sigaction sa;
        if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &sa) != 0)
            continue; /* glibc's reserved signals fail the query */
        bool caught = (sa.sa_flags & SA_SIGINFO) ||
                      (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
        if (caught || (o->sigdefault && sigismember(o->sigdefault, s) == 1)) {
            struct sigaction dfl = {.sa_handler = SIG_DFL};
            if (sigaction(s, &dfl, NULL) != 0)
                child_fail(report, ST_SIGNALS);
        }
    }
    /* Descriptors: park the report pipe and every source above all the
     * targets, then put each in place (dup2 clears FD_CLOEXEC there), so
     * no target overwrites a source or the report pipe whatever the
     * numbers. The parked copies are close-on-exec. */
    if (report < p->floor) {
        int r = fcntl(report, F_DUPFD_CLOEXEC, p->floor);
        if (r < 0)
            child_fail(report, ST_DUP);
        report = r;
    }
    int parked[3 + RF_SPAWN_MAX_FDS];
    for (int i = 0; i < p->nmove; i++)
        if ((parked[i] = fcntl(p->move[i].src, F_DUPFD_CLOEXEC, p->floor)) < 0)
            child_fail(report, ST_DUP);
    for (int i = 0; i < p->nmove; i++)
        if (dup2(parked[i], p->move[i].dst) < 0)
            child_fail(report, ST_DUP);
    if (sigprocmask(SIG_SETMASK, &p->mask, NULL) != 0)
        child_fail(report, ST_SIGNALS);
    char *const *argv = (char *const *)o->argv;
    if (o->path)
        execve(o->path, argv, p->env);
    else
        execvpe(o->argv[0], argv, p->env);
    child_fail(report, ST_EXEC);
}

/* entry is "NAME=..." for the name of length len. */
static bool env_is(const char *entry, const char *name, size_t len)
{
    return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static bool env_replaced(const rf_spawn_opts *o, const char *entry)
{
    for (const char *const *u = o->env_unset; u && *u; u++)
        if (env_is(entry, *u, strlen(*u)))
            return true;
    for (const char *const *s = o->env_set; s && *s; s++)
        if (env_is(entry, *s, (size_t)(strchr(*s, '=') - *s)))
            return true;
    return false;
}

/* The child's environment: environ itself when nothing changes, else a
 * new array (of pointers into environ and o->env_set) to free. */
static char **make_env(const rf_spawn_opts *o)
{
    if (!o->env_set && !o->env_unset)
        return environ;
    size_t n = 0, nset = 0;
    while (environ && environ[n])
        n++;
    while (o->env_set && o->env_set[nset])
        nset++;
    char **env = calloc(n + nset + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!env_replaced(o, environ[i]))
            env[k++] = environ[i];
    for (size_t i = 0; i < nset; i++)
        env[k++] = (char *)o->env_set[i];
    env[k] = NULL;
    return env;
}

static rf_status check_opts(const rf_spawn_opts *o, rf_child *child)
{
    if (!o || !child)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_spawn: NULL argument");
    if (!o->argv || !o->argv[0] || (!o->path && !o->argv[0][0]) ||
        (o->path && !o->path[0]))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_spawn: no program");
    for (const char *const *s = o->env_set; s && *s; s++)
        if (!strchr(*s, '=') || **s == '=')
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_spawn: env_set entry '%s' is not "
                                "NAME=value",
                                *s);
    for (const char *const *u = o->env_unset; u && *u; u++)
        if (!**u || strchr(*u, '='))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_spawn: env_unset entry '%s' is not a "
                                "name",
                                *u);
    for (int i = 0; i < 3; i++)
        if (o->stdio[i] != RF_SPAWN_INHERIT &&
            o->stdio[i] != RF_SPAWN_DEVNULL && o->stdio[i] != RF_SPAWN_PIPE)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_spawn: stdio[%d] is not an "
                                "rf_spawn_stdio",
                                i);
    if (o->nkeep < 0 || o->nkeep > RF_SPAWN_MAX_FDS ||
        (o->nkeep > 0 && !o->keep))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_spawn: %d descriptors to keep (at most %d)",
                            o->nkeep, RF_SPAWN_MAX_FDS);
    for (int i = 0; i < o->nkeep; i++) {
        const rf_spawn_fd *k = &o->keep[i];
        if (k->child_fd < 3)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_spawn: keep[%d]: child_fd %d is not >= 3",
                                i, k->child_fd);
        if (k->fd < 0 || fcntl(k->fd, F_GETFD) < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_spawn: keep[%d]: fd %d is not open", i,
                                k->fd);
        for (int j = 0; j < i; j++)
            if (o->keep[j].child_fd == k->child_fd)
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "rf_spawn: keep[%d] and keep[%d] both "
                                    "give child_fd %d",
                                    j, i, k->child_fd);
    }
    return RF_OK;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

rf_status rf_spawn(const rf_spawn_opts *o, rf_child *child)
{
    if (child)
        *child = (rf_child){.stdio_fd = {-1, -1, -1}};
    rf_status st = check_opts(o, child);
    if (st != RF_OK)
        return st;
    const char *prog = o->path ? o->path : o->argv[0];
    plan p = {.o = o, .floor = 3, .report = -1, .parent = getpid()};
    int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    int devnull[2] = {-1, -1}, rep[2] = {-1, -1}; /* read, write */
    char **env = make_env(o);
    if (!env)
        return rf_error_set(RF_ERR_NO_MEMORY, "out of memory");
    p.env = env;

    for (int i = 0; i < 3 && st == RF_OK; i++) {
        if (o->stdio[i] == RF_SPAWN_DEVNULL) {
            int *dn = &devnull[i == 0 ? 0 : 1];
            if (*dn < 0 &&
                (*dn = open("/dev/null",
                            (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC)) < 0)
                st = rf_error_set(RF_ERR_IO, "open /dev/null: %s",
                                  strerror(errno));
            else
                p.move[p.nmove++] = (fd_move){*dn, i};
        } else if (o->stdio[i] == RF_SPAWN_PIPE) {
            if (pipe2(pipes[i], O_CLOEXEC) != 0) {
                st = rf_error_set(RF_ERR_IO, "pipe: %s", strerror(errno));
                break;
            }
            int mine = pipes[i][i == 0 ? 1 : 0];
            if (o->pipe_nonblock &&
                fcntl(mine, F_SETFL, fcntl(mine, F_GETFL) | O_NONBLOCK) != 0)
                st = rf_error_set(RF_ERR_IO, "fcntl(O_NONBLOCK): %s",
                                  strerror(errno));
            p.move[p.nmove++] = (fd_move){pipes[i][i == 0 ? 0 : 1], i};
        }
    }
    for (int i = 0; i < o->nkeep; i++) {
        p.move[p.nmove++] = (fd_move){o->keep[i].fd, o->keep[i].child_fd};
        if (o->keep[i].child_fd >= p.floor)
            p.floor = o->keep[i].child_fd + 1;
    }
    if (st == RF_OK && pipe2(rep, O_CLOEXEC) != 0)
        st = rf_error_set(RF_ERR_IO, "pipe: %s", strerror(errno));
    if (st != RF_OK)
        goto out;
    p.report = rep[1];

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    p.mask = o->sigmask ? *o->sigmask : old;
    pid_t pid = fork();
    if (pid == 0)
        child_main(&p);
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        st = rf_error_set(fork_errno == ENOMEM   ? RF_ERR_NO_MEMORY
                          : fork_errno == EAGAIN ? RF_ERR_NO_RESOURCE
                                                 : RF_ERR_IO,
                          "fork: %s", strerror(fork_errno));
        goto out;
    }
    if (o->new_pgroup)
        setpgid(pid, pid); /* also done by the child; whichever runs first */
    close_fd(&rep[1]);
    child_report r;
    ssize_t got;
    do
        got = read(rep[0], &r, sizeof r);
    while (got < 0 && errno == EINTR);
    if (got != 0) {
        int read_errno = errno;
        if (got != (ssize_t)sizeof r) /* cannot happen: kill, then reap */
            kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if (got != (ssize_t)sizeof r)
            st = rf_error_set(RF_ERR_IO,
                              "starting '%s': reading its exec "
                              "report: %s",
                              prog, got < 0 ? strerror(read_errno) : "short");
        else if (r.step == ST_EXEC)
            st = rf_error_set(RF_ERR_IO, "cannot run '%s': %s", prog,
                              strerror(r.err));
        else
            st = rf_error_set(RF_ERR_IO, "%s failed: %s", step_names[r.step],
                              strerror(r.err));
        goto out;
    }
    child->pid = pid;
    child->pgroup = o->new_pgroup;
    for (int i = 0; i < 3; i++)
        if (o->stdio[i] == RF_SPAWN_PIPE) {
            child->stdio_fd[i] = pipes[i][i == 0 ? 1 : 0];
            pipes[i][i == 0 ? 1 : 0] = -1;
        }
out:
    for (int i = 0; i < 3; i++) {
        close_fd(&pipes[i][0]);
        close_fd(&pipes[i][1]);
    }
    close_fd(&devnull[0]);
    close_fd(&devnull[1]);
    close_fd(&rep[0]);
    close_fd(&rep[1]);
    if (env != environ)
        free(env);
    return st;
}

static rf_status got_status(rf_child *c, int st, int *wstatus)
{
    c->reaped = true;
    c->wstatus = st;
    if (wstatus)
        *wstatus = st;
    return RF_OK;
}

rf_status rf_child_wait(rf_child *c, int64_t timeout_ms, int *wstatus)
{
    if (!c || c->pid <= 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_child_wait: no child");
    if (c->reaped)
        return got_status(c, c->wstatus, wstatus);
    int64_t deadline = rf_deadline_ms(timeout_ms);
    int64_t nap = 1;
    for (;;) {
        int st;
        pid_t r = waitpid(c->pid, &st, timeout_ms < 0 ? 0 : WNOHANG);
        if (r == c->pid)
            return got_status(c, st, wstatus);
        if (r < 0 && errno != EINTR)
            return rf_error_set(RF_ERR_IO, "waitpid(%d): %s", (int)c->pid,
                                strerror(errno));
        if (r == 0) {
            int left = rf_deadline_left_ms(deadline);
            if (left == 0)
                return rf_error_set(RF_ERR_TIMEOUT,
                                    "pid %d still running after %lld ms",
                                    (int)c->pid, (long long)timeout_ms);
            rf_sleep_ms(nap < left ? nap : left);
            if (nap < 10)
                nap *= 2;
        }
    }
}

rf_status rf_child_signal(rf_child *c, int sig)
{
    if (!c || c->pid <= 0 || c->reaped)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_child_signal: no running child");
    if (kill(c->pgroup ? -c->pid : c->pid, sig) != 0)
        return rf_error_set(RF_ERR_IO, "kill(%s%d, %d): %s",
                            c->pgroup ? "-" : "", (int)c->pid, sig,
                            strerror(errno));
    return RF_OK;
}

rf_status rf_child_stop(rf_child *c, int sig, int64_t grace_ms, int *wstatus,
                        bool *killed)
{
    if (killed)
        *killed = false;
    if (!c || c->pid <= 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_child_stop: no child");
    if (c->reaped)
        return got_status(c, c->wstatus, wstatus);
    if (sig)
        (void)rf_child_signal(c, sig); /* gone already: the wait says so */
    rf_status st = rf_child_wait(c, grace_ms, wstatus);
    if (st != RF_ERR_TIMEOUT)
        return st;
    (void)rf_child_signal(c, SIGKILL);
    if (killed)
        *killed = true;
    st = rf_child_wait(c, RF_SPAWN_KILL_WAIT_MS, wstatus);
    if (st == RF_ERR_TIMEOUT)
        return rf_error_set(RF_ERR_TIMEOUT,
                            "pid %d still running %d ms after SIGKILL",
                            (int)c->pid, RF_SPAWN_KILL_WAIT_MS);
    return st;
}

void rf_child_close(rf_child *c)
{
    for (int i = 0; c && i < 3; i++)
        close_fd(&c->stdio_fd[i]);
}

rf_status rf_spawn_read_port(int fd, const char *prefix, int64_t timeout_ms,
                             uint16_t *port)
{
    if (!prefix)
        prefix = "";
    char line[64];
    size_t n = 0;
    int64_t deadline = rf_deadline_ms(timeout_ms);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, rf_deadline_left_ms(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return rf_error_set(RF_ERR_IO, "ready fd %d: poll: %s", fd,
                                strerror(errno));
        if (r == 0)
            return rf_error_set(RF_ERR_TIMEOUT,
                                "ready fd %d: no port line within %lld ms", fd,
                                (long long)timeout_ms);
        char ch;
        ssize_t k = read(fd, &ch, 1);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k < 0)
            return rf_error_set(RF_ERR_IO, "ready fd %d: read: %s", fd,
                                strerror(errno));
        if (k == 0)
            return rf_error_set(RF_ERR_DISCONNECTED,
                                "ready fd %d: closed before a whole port line "
                                "(got '%.*s')",
                                fd, (int)n, line);
        if (ch == '\n')
            break;
        if (n == sizeof line - 1)
            return rf_error_set(RF_ERR_CORRUPT,
                                "ready fd %d: line longer than %zu bytes", fd,
                                sizeof line - 1);
        line[n++] = ch;
    }
    line[n] = '\0';
    size_t plen = strlen(prefix);
    const char *d = line + plen;
    unsigned long v = 0;
    size_t digits = 0;
    if (strncmp(line, prefix, plen) == 0)
        for (; d[digits] >= '0' && d[digits] <= '9' && digits < 6; digits++)
            v = v * 10 + (unsigned long)(d[digits] - '0');
    if (strncmp(line, prefix, plen) != 0 || digits == 0 || d[digits] ||
        v == 0 || v > 65535)
        return rf_error_set(RF_ERR_CORRUPT,
                            "ready fd %d: '%s' is not a port line "
                            "('%sPORT', PORT in 1..65535)",
                            fd, line, prefix);
    *port = (uint16_t)v;
    return RF_OK;
}
