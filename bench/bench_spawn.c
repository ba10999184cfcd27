/* bench/bench_spawn.c: start and reap --loopback's server child (see
 * bench_spawn.h). */
#include "bench_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Reads "PORT\n" from fd within timeout_ms. */
static int read_port(int fd, int timeout_ms, uint16_t *port)
{
    char buf[16];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1; /* timeout or error */
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* the child closed the pipe */
        got += (size_t)r;
        if (memchr(buf, '\n', got))
            break;
    }
    buf[got] = '\0';
    char *end = NULL;
    unsigned long v = strtoul(buf, &end, 10);
    if (end == buf || *end != '\n' || v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

int bench_spawn_server(const bench_opts *o, pid_t *pid, uint16_t *port)
{
    int fds[2];
    if (pipe(fds)) {
        fprintf(stderr, "rf-bench: pipe: %s\n", strerror(errno));
        return -1;
    }
    /* Only the write end is inherited by the child. */
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    char fdarg[16], toarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", fds[1]);
    snprintf(toarg, sizeof toarg, "%d", o->timeout_s);
    const char *argv[16];
    int n = 0;
    argv[n++] = "rf-bench";
    argv[n++] = "--serve";
    argv[n++] = "--host";
    argv[n++] = o->host;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--ready-fd";
    argv[n++] = fdarg;
    argv[n++] = "--timeout";
    argv[n++] = toarg;
    if (o->provider) {
        argv[n++] = "--provider";
        argv[n++] = o->provider;
    }
    if (o->events)
        argv[n++] = "--events";
    argv[n] = NULL;

    int err = posix_spawn(pid, "/proc/self/exe", NULL, NULL,
                          (char *const *)argv, environ);
    close(fds[1]);
    if (err) {
        fprintf(stderr, "rf-bench: cannot start the loopback server: %s\n",
                strerror(err));
        close(fds[0]);
        return -1;
    }
    int rc = read_port(fds[0], o->timeout_s * 1000, port);
    close(fds[0]);
    if (rc) {
        fprintf(stderr, "rf-bench: the loopback server did not start "
                        "listening\n");
        bench_reap_server(*pid, true, 5);
        return -1;
    }
    return 0;
}

int bench_reap_server(pid_t pid, bool terminate, int timeout_s)
{
    if (terminate)
        kill(pid, SIGTERM);
    int status = 0;
    for (int waited_ms = 0;; waited_ms += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (waited_ms >= timeout_s * 1000) {
            fprintf(stderr, "rf-bench: the loopback server did not exit; "
                            "killing it\n");
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
