/* tools/trainer/exit_status.c: rf_status codes to rf-trainer's exit
 * statuses (the library's table, rf_status_exit_code), and the reason the
 * final line gives. A call site that knows better than the table (the
 * chief whose workers did not finish: the job is over, 1) says so with
 * tr_exit_fail. */
#include "exit_status.h"

#include <stdarg.h>
#include <stdio.h>

int tr_exit_status(rf_status st)
{
    return rf_status_exit_code(st);
}

const char *tr_exit_kind(int code)
{
    switch (code) {
    case TR_EXIT_OK:
        return "success";
    case TR_EXIT_USAGE:
        return "usage";
    default:
        return code < 128 ? "permanent" : "retryable";
    }
}

static char reason[2048];
static int have_reason;

void tr_exit_reason(const char *fmt, ...)
{
    if (have_reason)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    have_reason = 1;
}

int tr_exit_has_reason(void)
{
    return have_reason;
}

int tr_exit_fail(int code, const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    tr_exit_reason("%s: %s", what, msg);
    return code;
}

int tr_exit_fail_status(rf_status st, const char *what, const char *msg)
{
    return tr_exit_fail(tr_exit_status(st), what, msg);
}

void tr_exit_final_line(int code)
{
    FILE *to = code == TR_EXIT_OK ? stdout : stderr;
    fflush(stdout);
    fprintf(to, "rf-trainer: exit %d (%s): %s\n", code, tr_exit_kind(code),
            have_reason ? reason : "see the lines above");
    fflush(to);
}
