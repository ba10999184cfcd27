/* tests/common/check.c: failure reporting and notes behind check.h. The one
 * place a test failure is printed and the test process ends. */
#include "tests/common/check.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/common/proc.h"

static const char *who;

void rft_set_who(const char *name)
{
    who = name;
}

const char *rft_who(void)
{
    return who ? who : program_invocation_short_name;
}

/* Flushes stdout unless another thread holds it (a thread blocked writing a
 * full pipe must not keep a failing process alive). */
static void flush_stdout(void)
{
    if (ftrylockfile(stdout) == 0) {
        fflush(stdout);
        funlockfile(stdout);
    }
}

static __attribute__((noreturn, format(printf, 4, 0))) void
report(const char *file, int line, const char *what, const char *fmt,
       va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *em = rf_error_message();
    flush_stdout();
    fprintf(stderr, "FAIL [%s %d] %s:%d: %s: %s [last error: %s]\n", rft_who(),
            (int)getpid(), file, line, what, msg, *em ? em : "none");
    fflush(stderr);
    rft_kill_all();
    _exit(1);
}

void rft_fail(const char *file, int line, const char *cond, const char *fmt,
              ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(file, line, cond, fmt, ap);
}

bool rft_near(double got, double want, double rtol, double atol)
{
    return fabs(got - want) <= atol + rtol * fabs(want);
}

void rft_fail_near(const char *file, int line, const char *expr, double got,
                   double want, double rtol, double atol, const char *fmt, ...)
{
    char what[512];
    snprintf(what, sizeof what,
             "%s = %.9g, expected %.9g (diff %.3g, allowed %.3g)", expr, got,
             want, fabs(got - want), atol + rtol * fabs(want));
    va_list ap;
    va_start(ap, fmt);
    report(file, line, what, fmt, ap);
}

void rft_note(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s %d] %s\n", rft_who(), (int)getpid(), msg);
    fflush(stderr);
}

int rft_groups_run(const rft_group *groups, size_t n, int argc, char **argv)
{
    int ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc > 1 && strcmp(argv[1], groups[i].name) != 0)
            continue;
        groups[i].fn();
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "unknown group %s\n", argv[1]);
        return 2;
    }
    printf("ok\n");
    return 0;
}
