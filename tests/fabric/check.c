/* tests/fabric/check.c: failure reporting behind check.h. */
#include "tests/fabric/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/fabric/proc.h"

const char *rt_who = "driver";

void rt_check_failed(const char *file, int line, const char *cond,
                     const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *em = rf_error_message();
    fprintf(stderr, "FAIL [%s %d] %s:%d: %s: %s%s%s%s\n", rt_who, (int)getpid(),
            file, line, cond, msg, *em ? " (last fabric error: " : "", em,
            *em ? ")" : "");
    fflush(stderr);
    rt_kill_children();
    _exit(1);
}

void rt_note(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s %d] %s\n", rt_who, (int)getpid(), msg);
    fflush(stderr);
}
