/* tests/common/proc.c: child processes (started with rdmaflow/spawn.h),
 * their tracking (so a failure kills them all) and the line protocol with
 * them (see proc.h). */
#include "tests/common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/spawn.h"
#include "tests/common/check.h"

/* Live children, read by rft_kill_all from signal handlers and failing
 * threads: lock-free atomics only. */
static _Atomic pid_t live[RFT_MAX_CHILDREN];

static void track(pid_t pid)
{
    for (int i = 0; i < RFT_MAX_CHILDREN; i++) {
        pid_t none = 0;
        if (atomic_compare_exchange_strong(&live[i], &none, pid))
            return;
    }
    kill(pid, SIGKILL);
    rft_fail(__FILE__, __LINE__, "track", "more than %d live children",
             RFT_MAX_CHILDREN);
}

static void untrack(pid_t pid)
{
    for (int i = 0; i < RFT_MAX_CHILDREN; i++) {
        pid_t p = pid;
        atomic_compare_exchange_strong(&live[i], &p, 0);
    }
}

void rft_kill_all(void)
{
    for (int i = 0; i < RFT_MAX_CHILDREN; i++) {
        pid_t p = atomic_load(&live[i]);
        if (p > 0)
            kill(p, SIGKILL);
    }
}

void rft_proc_init(bool is_child)
{
    signal(SIGPIPE, SIG_IGN);
    if (is_child) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) /* the parent died before the prctl */
            _exit(1);
    }
}

/* The path to exec for program (see rft_spawn). This program is its
 * resolved path, not "/proc/self/exe": under valgrind --trace-children the
 * latter would name valgrind's own tool binary, while readlink gives the
 * program valgrind runs. */
static void resolve(const char *program, char *path, size_t cap)
{
    if (!program) {
        ssize_t n = readlink("/proc/self/exe", path, cap - 1);
        CHECK(n > 0 && (size_t)n < cap - 1, "readlink /proc/self/exe: %s",
              n < 0 ? strerror(errno) : "too long");
        path[n] = '\0';
        return;
    }
    if (strchr(program, '/')) {
        CHECK(strlen(program) < cap, "program path too long: %s", program);
        snprintf(path, cap, "%s", program);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    CHECK(slash, "/proc/self/exe is %s", self);
    *slash = '\0';
    int len = snprintf(path, cap, "%s/%s", self, program);
    CHECK(len > 0 && (size_t)len < cap, "path of %s too long", program);
}

void rft_spawn(rft_child *c, const char *name, const char *program,
               const char *const *args, int stdin_mode)
{
    memset(c, 0, sizeof *c);
    c->to_fd = c->from_fd = -1;
    snprintf(c->name, sizeof c->name, "%s", name);
    char path[PATH_MAX];
    resolve(program, path, sizeof path);
    const char *argv[64];
    size_t n = 0;
    argv[n++] = path;
    for (size_t i = 0; args && args[i]; i++) {
        CHECK(n < 63, "too many arguments for child %s", name);
        argv[n++] = args[i];
    }
    argv[n] = NULL;

    /* rdmaflow/spawn.h: fork + exec, never a bare fork (verbs is
     * fork-unsafe); the child dies with this thread (PR_SET_PDEATHSIG). */
    rf_spawn_opts o = {
        .argv = argv,
        .path = path,
        .die_with_parent = true,
        .stdio = {stdin_mode == RFT_STDIN_PIPE ? RF_SPAWN_PIPE
                                               : RF_SPAWN_DEVNULL,
                  RF_SPAWN_PIPE, RF_SPAWN_INHERIT},
    };
    rf_child child;
    fflush(NULL);
    CHECK_OK(rf_spawn(&o, &child));
    c->pid = child.pid;
    c->to_fd = child.stdio_fd[0];
    c->from_fd = child.stdio_fd[1];
    track(c->pid);
}

void rft_send(rft_child *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    CHECK(n > 0 && (size_t)n < sizeof line - 1, "line to %s too long", c->name);
    CHECK(c->to_fd >= 0, "%s has no stdin pipe", c->name);
    line[n++] = '\n';
    for (int off = 0; off < n;) {
        ssize_t w = write(c->to_fd, line + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        CHECK(w > 0, "writing to %s (pid %d): %s", c->name, (int)c->pid,
              strerror(errno));
        off += (int)w;
    }
}

/* Reaps the child if it exits before deadline: true with its wait status
 * in *status (the child is then untracked and its pid 0), false if it is
 * still running at the deadline. */
static bool reap_by(rft_child *c, int64_t deadline, int *status)
{
    CHECK(c->pid > 0, "%s already reaped", c->name);
    for (;;) {
        pid_t r = waitpid(c->pid, status, WNOHANG);
        if (r == c->pid) {
            untrack(c->pid);
            c->pid = 0;
            return true;
        }
        CHECK(r == 0 || errno == EINTR, "waitpid(%s): %s", c->name,
              strerror(errno));
        if (rf_deadline_passed(deadline))
            return false;
        rf_sleep_ms(5);
    }
}

/* "exit status N" or "killed by signal N". */
static const char *describe_status(int st, char *out, size_t cap)
{
    snprintf(out, cap, "%s %d",
             WIFEXITED(st) ? "exit status" : "killed by signal",
             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return out;
}

/* How the child ended, after its stdout reached end of file: waits a little
 * for it to exit (it usually just did). */
static void describe_end(rft_child *c, char *out, size_t cap)
{
    int st = 0;
    if (c->pid <= 0)
        snprintf(out, cap, "already reaped");
    else if (reap_by(c, rf_deadline_ms(500), &st))
        describe_status(st, out, cap);
    else
        snprintf(out, cap, "still running");
}

/* The next line into line before deadline: false on timeout; end of file
 * and errors fail the test. */
static bool next_line(rft_child *c, char *line, size_t cap, int64_t deadline)
{
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t len = (size_t)(nl - c->buf);
            CHECK(len < cap, "line from %s too long (%zu bytes)", c->name, len);
            memcpy(line, c->buf, len);
            line[len] = '\0';
            c->len -= len + 1;
            memmove(c->buf, nl + 1, c->len);
            return true;
        }
        CHECK(c->len < sizeof c->buf, "line from %s too long", c->name);
        CHECK(c->from_fd >= 0, "%s's output is closed", c->name);
        int left = rf_deadline_left_ms(deadline);
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = c->from_fd, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r >= 0, "poll: %s", strerror(errno));
        if (r == 0)
            continue;
        ssize_t got = read(c->from_fd, c->buf + c->len, sizeof c->buf - c->len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            pid_t pid = c->pid;
            char how[64];
            describe_end(c, how, sizeof how);
            rft_fail(__FILE__, __LINE__, "end of output",
                     "%s (pid %d) closed its output before a full line (%s)",
                     c->name, (int)pid, how);
        }
        c->len += (size_t)got;
    }
}

void rft_line(rft_child *c, char *line, size_t cap, int timeout_ms)
{
    if (!next_line(c, line, cap, rf_deadline_ms(timeout_ms)))
        rft_fail(__FILE__, __LINE__, "timeout",
                 "no line from %s (pid %d) within %d ms", c->name, (int)c->pid,
                 timeout_ms);
}

void rft_expect(rft_child *c, const char *prefix, char *rest, size_t cap,
                int timeout_ms)
{
    int64_t deadline = rf_deadline_ms(timeout_ms);
    size_t plen = strlen(prefix);
    char line[2048];
    while (next_line(c, line, sizeof line, deadline)) {
        if (strncmp(line, prefix, plen) == 0) {
            CHECK(strlen(line + plen) < cap, "\"%s\" line from %s too long",
                  prefix, c->name);
            snprintf(rest, cap, "%s", line + plen);
            return;
        }
        rft_note("%s says: %s", c->name, line);
    }
    rft_fail(__FILE__, __LINE__, "timeout",
             "no \"%s\" line from %s (pid %d) within %d ms", prefix, c->name,
             (int)c->pid, timeout_ms);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void rft_close_stdin(rft_child *c)
{
    close_fd(&c->to_fd);
}

int rft_wait(rft_child *c, int timeout_ms)
{
    int status = 0;
    pid_t pid = c->pid;
    if (!reap_by(c, rf_deadline_ms(timeout_ms), &status)) {
        rft_kill(c);
        rft_fail(__FILE__, __LINE__, "timeout",
                 "%s (pid %d) did not exit within %d ms; killed", c->name,
                 (int)pid, timeout_ms);
    }
    close_fd(&c->to_fd);
    close_fd(&c->from_fd);
    return status;
}

void rft_wait_ok(rft_child *c, int timeout_ms)
{
    char name[sizeof c->name], how[64];
    memcpy(name, c->name, sizeof name);
    int st = rft_wait(c, timeout_ms);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed: %s", name,
          describe_status(st, how, sizeof how));
}

void rft_kill(rft_child *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        untrack(c->pid);
        c->pid = 0;
    }
    close_fd(&c->to_fd);
    close_fd(&c->from_fd);
}
