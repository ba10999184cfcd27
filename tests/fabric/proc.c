/* tests/fabric/proc.c: fork + exec of child roles and the line protocol with
 * them (see proc.h). */
#include "tests/fabric/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/fabric/check.h"
#include "tests/fabric/opts.h"

#define MAX_CHILDREN 64
static volatile pid_t live[MAX_CHILDREN];

static void track(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (live[i] == 0) {
            live[i] = pid;
            return;
        }
    }
    kill(pid, SIGKILL);
    CHECK(0, "more than %d live children", MAX_CHILDREN);
}

static void untrack(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (live[i] == pid)
            live[i] = 0;
}

void rt_kill_children(void)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        pid_t p = live[i];
        if (p > 0)
            kill(p, SIGKILL);
    }
}

void rt_proc_init(int is_child)
{
    signal(SIGPIPE, SIG_IGN);
    if (is_child) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(1);
    }
}

void rt_spawn(rt_child *c, const char *name, const char *const *args)
{
    memset(c, 0, sizeof *c);
    c->to_fd = c->from_fd = -1;
    snprintf(c->name, sizeof c->name, "%s", name);
    const char *argv[64];
    size_t n = 0;
    argv[n++] = "/proc/self/exe";
    argv[n++] = "--provider";
    argv[n++] = rt_opts.provider;
    argv[n++] = "--host";
    argv[n++] = rt_opts.host;
    for (size_t i = 0; args[i]; i++) {
        CHECK(n < 63, "too many arguments for child %s", name);
        argv[n++] = args[i];
    }
    argv[n] = NULL;

    int in[2], out[2];
    CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0, "pipe2: %s",
          strerror(errno));
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* Only async-signal-safe calls until exec. */
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            _exit(127);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->to_fd = in[1];
    c->from_fd = out[0];
    track(pid);
}

void rt_child_send(rt_child *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    CHECK(n > 0 && (size_t)n < sizeof line - 1, "command too long");
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

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rt_child_line(rt_child *c, char *line, size_t cap, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->buf_len);
        if (nl) {
            size_t len = (size_t)(nl - c->buf);
            CHECK(len < cap, "line from %s too long (%zu bytes)", c->name, len);
            memcpy(line, c->buf, len);
            line[len] = '\0';
            c->buf_len -= len + 1;
            memmove(c->buf, nl + 1, c->buf_len);
            return;
        }
        CHECK(c->buf_len < sizeof c->buf, "line from %s too long", c->name);
        long long left = deadline - now_ms();
        CHECK(left > 0, "no reply from %s (pid %d) within %d ms", c->name,
              (int)c->pid, timeout_ms);
        struct pollfd p = {.fd = c->from_fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r >= 0, "poll: %s", strerror(errno));
        if (r == 0)
            continue;
        ssize_t got =
            read(c->from_fd, c->buf + c->buf_len, sizeof c->buf - c->buf_len);
        if (got < 0 && errno == EINTR)
            continue;
        CHECK(got > 0,
              "%s (pid %d) closed its output (exited?) before "
              "replying",
              c->name, (int)c->pid);
        c->buf_len += (size_t)got;
    }
}

int rt_child_wait(rt_child *c, int timeout_ms)
{
    CHECK(c->pid > 0, "%s already reaped", c->name);
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(c->pid, &status, WNOHANG);
        if (r == c->pid) {
            untrack(c->pid);
            c->pid = 0;
            rt_child_close_pipes(c);
            return status;
        }
        CHECK(r == 0 || errno == EINTR, "waitpid(%s): %s", c->name,
              strerror(errno));
        if (now_ms() >= deadline) {
            pid_t pid = c->pid;
            rt_child_kill(c);
            CHECK(0, "%s (pid %d) did not exit within %d ms; killed", c->name,
                  (int)pid, timeout_ms);
        }
        usleep(5000);
    }
}

void rt_child_wait_ok(rt_child *c, int timeout_ms)
{
    char name[sizeof c->name];
    memcpy(name, c->name, sizeof name);
    int status = rt_child_wait(c, timeout_ms);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed: %s %d",
          name, WIFEXITED(status) ? "exit status" : "killed by signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

void rt_child_kill(rt_child *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        untrack(c->pid);
        c->pid = 0;
    }
    rt_child_close_pipes(c);
}

void rt_child_close_pipes(rt_child *c)
{
    if (c->to_fd >= 0)
        close(c->to_fd);
    if (c->from_fd >= 0)
        close(c->from_fd);
    c->to_fd = c->from_fd = -1;
}
