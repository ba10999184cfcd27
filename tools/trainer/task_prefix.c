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
#include <unistd.h>

#include "report.h"

typedef struct prefix_sink {
    int fd;
    bool at_line_start;
    char prefix[72];
    size_t prefix_len;
} prefix_sink;

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    prefix_sink *s = cookie;
    size_t done = 0;
    while (done < n) {
        if (s->at_line_start && write_all(s->fd, s->prefix, s->prefix_len) != 0)
            return done ? (ssize_t)done : -1;
        const char *nl = memchr(buf + done, '\n', n - done);
        size_t len = nl ? (size_t)(nl - (buf + done)) + 1 : n - done;
        if (write_all(s->fd, buf + done, len) != 0)
            return done ? (ssize_t)done : -1;
        s->at_line_start = nl != NULL;
        done += len;
    }
    return (ssize_t)n;
}

static FILE *prefixed(int fd, const char *name)
{
    prefix_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = fd;
    s->at_line_start = true;
    snprintf(s->prefix, sizeof s->prefix, "[%s] ", name);
    s->prefix_len = strlen(s->prefix);
    cookie_io_functions_t io = {.write = sink_write};
    FILE *f = fopencookie(s, "w", io);
    if (!f) {
        free(s);
        return NULL;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    return f; /* s lives as long as the process */
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
    FILE *out = prefixed(STDOUT_FILENO, name);
    FILE *err = prefixed(STDERR_FILENO, name);
    if (out)
        stdout = out;
    if (err)
        stderr = err;
}
