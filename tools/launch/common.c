/* tools/launch/common.c: rf-launch's own messages (whole lines of any
 * length, one write each) and status wording. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

static void write_all(const char *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(2, p + done, n - done);
        if (w <= 0)
            return;
        done += (size_t)w;
    }
}

void lt_msg(const char *fmt, ...)
{
    static const char head[] = "rf-launch: ";
    char buf[1024], *p = buf;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    size_t n = sizeof head - 1 + (size_t)len + 1; /* with the newline */
    if (n > sizeof buf && !(p = malloc(n))) {
        p = buf; /* out of memory: the message cut to fit */
        n = sizeof buf;
        len = (int)(n - sizeof head);
    }
    memcpy(p, head, sizeof head - 1);
    va_start(ap, fmt);
    vsnprintf(p + sizeof head - 1, (size_t)len + 1, fmt, ap);
    va_end(ap);
    p[n - 1] = '\n';
    write_all(p, n);
    if (p != buf)
        free(p);
}

void lt_describe_status(int st, char *buf, size_t len)
{
    if (WIFEXITED(st)) {
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    } else if (WIFSIGNALED(st)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(st));
        snprintf(buf, len, "was killed by signal %d (SIG%s)%s", WTERMSIG(st),
                 abbrev ? abbrev : "?", WCOREDUMP(st) ? ", core dumped" : "");
    } else {
        snprintf(buf, len, "ended with wait status 0x%x", (unsigned)st);
    }
}
