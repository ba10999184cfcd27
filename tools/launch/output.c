/* tools/launch/output.c: line-prefixing of task output. Only rf-launch's
 * single thread writes to its stdout and stderr, one whole line per
 * writev, so lines stay intact whatever the tasks do. If rf-launch's own
 * output is gone (EPIPE), task output is read and dropped. */
#include "output.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static bool out_dead[3]; /* stdout / stderr failed: drop further output */

static void write_line(int fd, const char *prefix, const char *line, size_t len)
{
    if (fd >= 1 && fd <= 2 && out_dead[fd])
        return;
    struct iovec iov[3] = {
        {(void *)prefix, strlen(prefix)}, {(void *)line, len}, {"\n", 1}};
    struct iovec *v = iov;
    int cnt = 3;
    while (cnt > 0) {
        ssize_t w = writev(fd, v, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                poll(&p, 1, 1000);
                continue;
            }
            if (fd >= 1 && fd <= 2)
                out_dead[fd] = true;
            return;
        }
        while (cnt > 0 && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
}

void lt_lines_init(lt_lines *b, int in_fd, int out_fd, const char *prefix)
{
    b->in_fd = in_fd;
    b->out_fd = out_fd;
    b->prefix = prefix;
    b->len = 0;
}

/* Writes the complete lines in the buffer (and a full buffer as one line),
 * keeping a partial line. */
static void emit_lines(lt_lines *b)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(b->buf + start, '\n', b->len - start);
        if (!nl)
            break;
        size_t end = (size_t)(nl - b->buf);
        write_line(b->out_fd, b->prefix, b->buf + start, end - start);
        start = end + 1;
    }
    if (start == 0 && b->len == b->cap) {
        write_line(b->out_fd, b->prefix, b->buf, b->len);
        start = b->len;
    }
    memmove(b->buf, b->buf + start, b->len - start);
    b->len -= start;
}

/* One read. Returns bytes read, 0 at EOF, -1 when nothing is there. */
static ssize_t read_some(lt_lines *b)
{
    if (!b->buf) {
        b->buf = malloc(LT_LINE_MAX);
        if (!b->buf)
            return 0; /* cannot forward: end the stream */
        b->cap = LT_LINE_MAX;
    }
    for (;;) {
        ssize_t r = read(b->in_fd, b->buf + b->len, b->cap - b->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno != EAGAIN)
            return 0; /* a broken pipe ends the stream like EOF */
        if (r > 0) {
            b->len += (size_t)r;
            emit_lines(b);
        }
        return r;
    }
}

void lt_lines_close(lt_lines *b)
{
    if (b->in_fd < 0)
        return;
    if (b->len > 0)
        write_line(b->out_fd, b->prefix, b->buf, b->len);
    b->len = 0;
    close(b->in_fd);
    b->in_fd = -1;
}

int lt_lines_pump(lt_lines *b)
{
    if (b->in_fd < 0)
        return 1;
    for (int i = 0; i < 4; i++) {
        ssize_t r = read_some(b);
        if (r == 0) {
            lt_lines_close(b);
            return 1;
        }
        if (r < 0)
            break;
    }
    return 0;
}

void lt_lines_drain(lt_lines *b)
{
    /* Bounded: a descendant still holding the pipe could write forever. */
    for (int i = 0; i < 256 && b->in_fd >= 0; i++) {
        ssize_t r = read_some(b);
        if (r == 0)
            lt_lines_close(b);
        else if (r < 0)
            break;
    }
}
