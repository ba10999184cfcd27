/* tools/trainer/task_prefix.c: the lines of a task started by hand carry
 * its name, as rf-launch's do ("[worker1] step 100, ..."), so the output
 * of several tasks sharing one terminal or one log can be told apart.
 * stdout and stderr are replaced by glibc cookie streams whose write puts
 * "[name] " at the start of every line and writes through to the same file
 * descriptors at once (nothing is held by a thread, so nothing is lost if
 * the process dies); the library's log lines, written to stderr, get it
 * too. Not done under rf-launch, which prefixes its tasks' lines itself
 * and says so with RF_LAUNCH_TASK in their environment. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "report.h"

typedef struct prefix_sink {
    int fd;
    bool at_line_start;
    char prefix[72];
    size_t prefix_len;
} prefix_sink;

/* Writes the prefix (when set) and p[0..n) with one writev, so a reader
 * that tags what each read returns (mpirun --tag-output) sees the line
 * whole; the rest of a short write is finished plainly. */
static int write_line(int fd, const char *prefix, size_t plen, const char *p,
                      size_t n)
{
    struct iovec iov[2] = {{(void *)prefix, plen}, {(void *)p, n}};
    struct iovec *v = plen ? iov : iov + 1;
    int cnt = plen ? 2 : 1;
    while (cnt > 0) {
        ssize_t w = writev(fd, v, cnt);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        size_t left = (size_t)w;
        while (cnt > 0 && left >= v->iov_len) {
            left -= v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (char *)v->iov_base + left;
            v->iov_len -= left;
        }
    }
    return 0;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    prefix_sink *s = cookie;
    size_t done = 0;
    while (done < n) {
        const char *nl = memchr(buf + done, '\n', n - done);
        size_t len = nl ? (size_t)(nl - (buf + done)) + 1 : n - done;
        if (write_line(s->fd, s->prefix, s->at_line_start ? s->prefix_len : 0,
                       buf + done, len) != 0)
            return done ? (ssize_t)done : -1;
        s->at_line_start = nl != NULL;
        done += len;
    }
    return (ssize_t)n;
}

/* stdout's and stderr's: they live as long as the process, as the
 * streams do. */
static prefix_sink sinks[2];

static FILE *prefixed(prefix_sink *s, int fd, const char *name)
{
    s->fd = fd;
    s->at_line_start = true;
    snprintf(s->prefix, sizeof s->prefix, "[%s] ", name);
    s->prefix_len = strlen(s->prefix);
    cookie_io_functions_t io = {.write = sink_write};
    FILE *f = fopencookie(s, "w", io);
    if (f)
        setvbuf(f, NULL, _IOLBF, 0);
    return f;
}

const char *tr_task_prefix(void)
{
    return sinks[1].prefix; /* "" until tr_prefix_task_output set it */
}

void tr_prefix_task_output(const rf_cluster_task *self)
{
    if (getenv("RF_LAUNCH_TASK"))
        return;
    char name[64];
    if (!strcmp(self->job, "chief"))
        snprintf(name, sizeof name, "chief");
    else
        snprintf(name, sizeof name, "%s%d", self->job, self->index);
    fflush(stdout);
    fflush(stderr);
    FILE *out = prefixed(&sinks[0], STDOUT_FILENO, name);
    FILE *err = prefixed(&sinks[1], STDERR_FILENO, name);
    if (out)
        stdout = out;
    if (err)
        stderr = err;
}
