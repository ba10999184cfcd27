/* tools/launch/common.c: rf-launch's own messages and status wording. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

void lt_msg(const char *fmt, ...)
{
    char buf[1024];
    int off = snprintf(buf, sizeof buf, "rf-launch: ");
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf + off, sizeof buf - (size_t)off - 1, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    size_t n = (size_t)off + (size_t)len;
    if (n > sizeof buf - 2)
        n = sizeof buf - 2;
    buf[n++] = '\n';
    for (size_t done = 0; done < n;) {
        ssize_t w = write(2, buf + done, n - done);
        if (w <= 0)
            return;
        done += (size_t)w;
    }
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
